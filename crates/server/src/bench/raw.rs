//! A bare keep-alive HTTP/1.1 client for the bench: one connection, each request written as
//! bytes built in place, each answer read by its `Content-Length`. A full client (pools, body
//! streams, redirects, its own tasks) costs the machine tens of microseconds a request that the
//! server under test then lacks on a shared machine, and it adds them to every latency it
//! reports; this one costs a write, a read and a header parse.

use std::io::{Error, ErrorKind};
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::timing::{ServerTiming, SERVER_TIMING};

/// Headers read at most in an answer.
const MAX_HEADERS: usize = 32;
/// The largest answer read (searches answer a few kilobytes).
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// One answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// The server's own split of the request's time, when it sent one.
    pub timing: Option<ServerTiming>,
}

/// A client of one server, over one connection it opens on first use and again after a
/// failure or a `Connection: close`.
pub(crate) struct RawClient {
    addr: SocketAddr,
    host: String,
    connection: Option<TcpStream>,
    /// The request being written, and the answer being read (kept to reuse their memory).
    out: Vec<u8>,
    input: Vec<u8>,
}

impl RawClient {
    pub(crate) fn new(addr: SocketAddr) -> RawClient {
        RawClient {
            addr,
            host: addr.to_string(),
            connection: None,
            out: Vec::with_capacity(512),
            input: Vec::with_capacity(16 * 1024),
        }
    }

    /// `POST path` with a JSON `body` and extra `headers`; an error leaves the connection
    /// closed, so the next request opens a new one.
    pub(crate) async fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Answer, Error> {
        let result = self.exchange(path, headers, body).await;
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    async fn exchange(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Answer, Error> {
        self.write_request(path, headers, body);
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => {
                let connection = TcpStream::connect(self.addr).await?;
                connection.set_nodelay(true)?;
                connection
            }
        };
        let mut connection = connection;
        connection.write_all(&self.out).await?;
        let (answer, keep) = read_answer(&mut connection, &mut self.input).await?;
        if keep {
            self.connection = Some(connection);
        }
        Ok(answer)
    }

    fn write_request(&mut self, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        use std::io::Write as _;
        self.out.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(
            self.out,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        for (name, value) in headers {
            let _ = write!(self.out, "{name}: {value}\r\n");
        }
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(body);
    }
}

/// What the head of an answer says.
struct Head {
    status: u16,
    /// Bytes of `input` the head took.
    length: usize,
    body_length: usize,
    keep_alive: bool,
    timing: Option<ServerTiming>,
}

/// Read one answer; whether the connection may carry another request.
async fn read_answer(
    connection: &mut TcpStream,
    input: &mut Vec<u8>,
) -> Result<(Answer, bool), Error> {
    input.clear();
    let head = loop {
        if let Some(head) = parse_head(input)? {
            break head;
        }
        read_more(connection, input).await?;
    };
    let end = head.length + head.body_length;
    if end > MAX_ANSWER {
        return Err(Error::new(ErrorKind::InvalidData, "answer too large"));
    }
    while input.len() < end {
        read_more(connection, input).await?;
    }
    // One request at a time: nothing may follow the answer.
    if input.len() > end {
        return Err(Error::new(ErrorKind::InvalidData, "bytes after the answer"));
    }
    let answer = Answer {
        status: head.status,
        body: input[head.length..end].to_vec(),
        timing: head.timing,
    };
    Ok((answer, head.keep_alive))
}

async fn read_more(connection: &mut TcpStream, input: &mut Vec<u8>) -> Result<(), Error> {
    input.reserve(8 * 1024);
    if connection.read_buf(input).await? == 0 {
        return Err(Error::new(
            ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    Ok(())
}

/// The answer's head once `input` holds all of it.
fn parse_head(input: &[u8]) -> Result<Option<Head>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(input) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(Error::new(ErrorKind::InvalidData, error)),
    };
    let mut head = Head {
        status: response.code.unwrap_or(0),
        length,
        body_length: 0,
        keep_alive: true,
        timing: None,
    };
    let mut sized = false;
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            head.body_length = value
                .parse()
                .map_err(|_| Error::new(ErrorKind::InvalidData, "bad Content-Length"))?;
            sized = true;
        } else if header.name.eq_ignore_ascii_case("connection") {
            head.keep_alive = !value.eq_ignore_ascii_case("close");
        } else if header.name.eq_ignore_ascii_case(SERVER_TIMING) {
            head.timing = ServerTiming::parse(value);
        }
    }
    // The server sizes every answer it builds; an unsized one is not this server's.
    if !sized {
        return Err(Error::new(
            ErrorKind::InvalidData,
            "an answer without Content-Length",
        ));
    }
    Ok(Some(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_read_once_complete() {
        let text = b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 2\r\nserver-timing: total;dur=0.5, blocking;dur=0.4, engine;dur=0.3\r\n\r\n{}";
        assert!(parse_head(&text[..20]).ok().flatten().is_none());
        let head = parse_head(text).ok().flatten();
        let head = head.map(|h| (h.status, h.body_length, h.keep_alive, h.timing));
        let timing = ServerTiming {
            total_ms: 0.5,
            blocking_ms: 0.4,
            engine_ms: 0.3,
        };
        assert_eq!(head, Some((201, 2, true, Some(timing))));
        let without_length = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n";
        assert!(parse_head(without_length).is_err());
    }

    #[tokio::test]
    async fn requests_share_one_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            for _ in 0..2 {
                let mut buffer = vec![0; 4096];
                let n = socket.read(&mut buffer).await.unwrap();
                seen.push(String::from_utf8_lossy(&buffer[..n]).to_string());
                socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nyes")
                    .await
                    .unwrap();
            }
            seen
        });
        let mut client = RawClient::new(addr);
        for _ in 0..2 {
            let answer = client.post("/x", &[("Idempotency-Key", "k")], b"{}").await;
            let answer = answer.unwrap();
            assert_eq!((answer.status, answer.body.as_slice()), (200, &b"yes"[..]));
        }
        let seen = server.await.unwrap();
        assert!(seen[0].starts_with("POST /x HTTP/1.1\r\n"), "{}", seen[0]);
        assert!(seen[1].contains("Idempotency-Key: k\r\n"), "{}", seen[1]);
        assert!(seen[1].ends_with("\r\n\r\n{}"), "{}", seen[1]);
    }
}
