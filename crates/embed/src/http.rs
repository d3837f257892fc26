//! Client for OpenAI-compatible `/v1/embeddings` endpoints (OpenAI, Azure-style proxies,
//! Ollama, vLLM, llama.cpp, text-embeddings-inference, …).
//!
//! Remote servers are outside our control, so every response is treated as untrusted: the
//! count, order, dimension and finiteness of the vectors are checked, and the vectors are
//! re-normalized, because several servers return unnormalized embeddings.

use std::time::Duration;

use mnemos_core::embed::normalize;
use mnemos_core::{EmbedError, Embedder};
use reqwest::blocking::{Client, Response};
use reqwest::StatusCode;
use serde::Deserialize;

use crate::config::BuildError;

/// Environment variable read for the API key unless configured otherwise.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Default request timeout.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default inputs per request; well under the limits of common servers (OpenAI: 2048).
pub const DEFAULT_HTTP_MAX_BATCH: usize = 64;
/// Retries after the first attempt for 429, 5xx, timeouts and connection failures.
pub const DEFAULT_HTTP_RETRIES: u32 = 3;
/// Longest wait honoured from a `Retry-After` header; longer waits are better surfaced as errors.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Settings of an [`HttpEmbedder`].
#[derive(Clone, Debug)]
pub struct HttpEmbedderOptions {
    /// API root such as `https://api.openai.com/v1` or `http://localhost:11434`; see
    /// [`endpoint_url`] for how the endpoint is derived.
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name (not value) of the environment variable holding the API key. Absent or empty
    /// variable = no `Authorization` header, for local servers.
    pub api_key_env: String,
    /// Expected vector dimension; responses of another size are rejected.
    pub dimension: usize,
    pub timeout: Duration,
    pub max_batch: usize,
    /// Retries after the first attempt (so `max_retries + 1` attempts at most).
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further retry.
    pub initial_backoff: Duration,
}

impl HttpEmbedderOptions {
    /// Options with defaults for everything but the essentials.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dimension: usize) -> Self {
        HttpEmbedderOptions {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: DEFAULT_API_KEY_ENV.to_string(),
            dimension,
            timeout: DEFAULT_HTTP_TIMEOUT,
            max_batch: DEFAULT_HTTP_MAX_BATCH,
            max_retries: DEFAULT_HTTP_RETRIES,
            initial_backoff: Duration::from_millis(500),
        }
    }
}

/// Embedder backed by an OpenAI-compatible HTTP service.
///
/// Uses reqwest's blocking client, which runs its own small runtime: call it from plain threads
/// (or `tokio::task::spawn_blocking`), never directly from async code.
pub struct HttpEmbedder {
    client: Client,
    url: String,
    model: String,
    api_key: Option<String>,
    api_key_env: String,
    dimension: usize,
    max_batch: usize,
    max_retries: u32,
    initial_backoff: Duration,
    id: String,
}

impl std::fmt::Debug for HttpEmbedder {
    // Hand-written so the API key never ends up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("api_key_set", &self.api_key.is_some())
            .field("dimension", &self.dimension)
            .field("max_batch", &self.max_batch)
            .finish()
    }
}

/// The embeddings endpoint for a configured base URL: used as is when it already ends in
/// `/embeddings`; `<base>/embeddings` when it ends in `/v1` (the OpenAI SDK convention);
/// `<base>/v1/embeddings` otherwise (a bare server root).
pub fn endpoint_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/embeddings") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    }
}

impl HttpEmbedder {
    /// Build the client; reads the API key from the environment now, so a key set later is not
    /// picked up (restart to rotate keys).
    pub fn new(opts: HttpEmbedderOptions) -> Result<Self, BuildError> {
        let HttpEmbedderOptions {
            base_url,
            model,
            api_key_env,
            dimension,
            timeout,
            max_batch,
            max_retries,
            initial_backoff,
        } = opts;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(BuildError::Invalid(format!(
                "base_url must start with http:// or https://, got {base_url:?}"
            )));
        }
        if model.trim().is_empty() {
            return Err(BuildError::Invalid("model name must not be empty".into()));
        }
        if dimension == 0 || max_batch == 0 {
            return Err(BuildError::Invalid(
                "dimension and max_batch must be positive".into(),
            ));
        }
        let client = Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| BuildError::Invalid(format!("cannot build HTTP client: {e}")))?;
        let api_key = std::env::var(&api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
        Ok(HttpEmbedder {
            client,
            url: endpoint_url(&base_url),
            id: format!("http:{model}"),
            model,
            api_key,
            api_key_env,
            dimension,
            max_batch,
            max_retries,
            initial_backoff,
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn send(&self, texts: &[&str]) -> Result<Response, Attempt> {
        let body =
            serde_json::json!({ "model": self.model, "input": texts, "encoding_format": "float" });
        let mut req = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().map_err(|e| {
            if e.is_timeout() || e.is_connect() || e.is_request() {
                Attempt::Retry(format!("request to {} failed: {e}", self.url), None)
            } else {
                Attempt::Fatal(EmbedError::failed_from(
                    format!("request to {} failed", self.url),
                    e,
                ))
            }
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
        let text = resp.text().unwrap_or_default();
        let msg = format!("{} returned {status}: {}", self.url, snippet(&text));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err(Attempt::Retry(msg, retry_after))
        } else if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let hint = if self.api_key.is_some() {
                format!("check the API key in ${}", self.api_key_env)
            } else {
                format!("no API key sent: ${} is not set", self.api_key_env)
            };
            Err(Attempt::Fatal(EmbedError::Unavailable(format!(
                "{msg} ({hint})"
            ))))
        } else {
            Err(Attempt::Fatal(EmbedError::failed(msg)))
        }
    }

    /// Check and convert a response body into vectors in input order.
    fn parse(&self, body: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let parsed: EmbeddingsResponse = serde_json::from_slice(body).map_err(|e| {
            EmbedError::failed_from(
                format!(
                    "malformed embeddings response from {}; body starts with: {}",
                    self.url,
                    snippet(&String::from_utf8_lossy(body))
                ),
                e,
            )
        })?;
        let mut data = parsed.data;
        if data.len() != expected {
            return Err(EmbedError::Count {
                expected,
                got: data.len(),
            });
        }
        // OpenAI documents `index`; order by it when every item has one, and insist it is a
        // permutation of 0..n so duplicated or skipped items cannot slip through.
        if data.iter().all(|d| d.index.is_some()) {
            data.sort_by_key(|d| d.index);
            if data.iter().enumerate().any(|(i, d)| d.index != Some(i)) {
                return Err(EmbedError::failed(format!(
                    "embeddings response from {} has indices that are not 0..{expected}",
                    self.url
                )));
            }
        }
        let mut out = Vec::with_capacity(expected);
        for item in data {
            if item.embedding.len() != self.dimension {
                return Err(EmbedError::Dimension {
                    expected: self.dimension,
                    got: item.embedding.len(),
                });
            }
            // f64 → f32 can overflow to infinity; check after the conversion.
            let mut v: Vec<f32> = item.embedding.iter().map(|&x| x as f32).collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(EmbedError::NonFinite);
            }
            normalize(&mut v);
            if v.iter().any(|x| !x.is_finite()) {
                return Err(EmbedError::NonFinite);
            }
            out.push(v);
        }
        Ok(out)
    }
}

/// Outcome of a failed attempt: worth retrying (with an optional server-requested delay) or not.
enum Attempt {
    Retry(String, Option<Duration>),
    Fatal(EmbedError),
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f64>,
    #[serde(default)]
    index: Option<usize>,
}

/// First ~300 characters of a body, for error messages.
fn snippet(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl Embedder for HttpEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        // Honour max_batch even when called directly, not only through embed_all.
        for chunk in texts.chunks(self.max_batch.max(1)) {
            out.extend(self.embed_chunk(chunk)?);
        }
        Ok(out)
    }
}

impl HttpEmbedder {
    fn embed_chunk(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            // Servers reject an empty `input`; there is nothing to ask anyway.
            return Ok(Vec::new());
        }
        let mut attempt = 0u32;
        loop {
            let failure = match self.send(texts) {
                Ok(resp) => match resp.bytes() {
                    Ok(body) => return self.parse(&body, texts.len()),
                    Err(e) if e.is_timeout() => Attempt::Retry(
                        format!("reading response from {} failed: {e}", self.url),
                        None,
                    ),
                    Err(e) => {
                        return Err(EmbedError::failed_from(
                            format!("reading response from {} failed", self.url),
                            e,
                        ))
                    }
                },
                Err(a) => a,
            };
            match failure {
                Attempt::Fatal(e) => return Err(e),
                Attempt::Retry(msg, retry_after) => {
                    if attempt >= self.max_retries {
                        return Err(EmbedError::failed(format!(
                            "{msg} (gave up after {} attempts)",
                            attempt + 1
                        )));
                    }
                    let backoff = self.initial_backoff.saturating_mul(1u32 << attempt.min(16));
                    std::thread::sleep(retry_after.unwrap_or(backoff));
                    attempt += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::EmbedderExt;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};
    use std::thread;

    /// One scripted reply: status, body, and an optional delay before answering.
    #[derive(Clone)]
    struct Reply {
        status: u16,
        body: String,
        delay: Duration,
    }

    fn reply(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// A request as the server saw it.
    #[derive(Clone, Debug)]
    struct Seen {
        headers: Vec<String>,
        body: serde_json::Value,
    }

    /// Loopback HTTP/1.1 server answering connections with `replies` in order (one request per
    /// connection, `Connection: close`); returns its base URL and the requests it received.
    fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Seen>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = Arc::clone(&seen);
        thread::spawn(move || {
            // One thread per connection, so a deliberately slow reply does not hold up the
            // client's retry on a new connection.
            for r in replies {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let seen = Arc::clone(&seen2);
                thread::spawn(move || answer(stream, r, &seen));
            }
        });
        (format!("http://{addr}"), seen)
    }

    fn answer(stream: TcpStream, r: Reply, seen: &Mutex<Vec<Seen>>) {
        let Some(req) = read_request(&stream) else {
            return;
        };
        seen.lock().unwrap().push(req);
        thread::sleep(r.delay);
        let reason = match r.status {
            200 => "OK",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "Whatever",
        };
        let mut s = stream;
        let resp = format!(
                    "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                    r.status,
                    r.body.len(),
                    r.body
                );
        let _ = s.write_all(resp.as_bytes());
        let _ = s.flush();
    }

    fn read_request(stream: &TcpStream) -> Option<Seen> {
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut headers = Vec::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end().to_string();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().ok()?;
            }
            headers.push(line);
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).ok()?;
        Some(Seen {
            headers,
            body: serde_json::from_slice(&body).ok()?,
        })
    }

    /// A well-formed response with `n` vectors of `dim` values (unnormalized on purpose).
    fn ok_body(n: usize, dim: usize) -> String {
        let data: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                let v: Vec<f64> = (0..dim).map(|j| (i * dim + j) as f64 + 1.0).collect();
                serde_json::json!({"object": "embedding", "index": i, "embedding": v})
            })
            .collect();
        serde_json::json!({"object": "list", "data": data, "model": "m"}).to_string()
    }

    fn embedder(url: &str, dim: usize) -> HttpEmbedder {
        let mut o = HttpEmbedderOptions::new(url, "test-model", dim);
        o.api_key_env = "MNEMOS_TEST_KEY_THAT_IS_NOT_SET".into();
        o.initial_backoff = Duration::from_millis(10);
        o.timeout = Duration::from_secs(5);
        HttpEmbedder::new(o).unwrap()
    }

    #[test]
    fn success_normalizes_and_sends_openai_request() {
        let (url, seen) = serve(vec![reply(200, ok_body(2, 4))]);
        let e = embedder(&url, 4);
        assert_eq!(e.id(), "http:test-model");
        let v = e.embed_batch(&["a", "b"]).unwrap();
        assert_eq!(v.len(), 2);
        for x in &v {
            let n: f32 = x.iter().map(|y| y * y).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-5);
        }
        // Order follows `index`: vector 0 is proportional to [1,2,3,4].
        assert!(v[0][0] < v[0][3]);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(
            seen[0].headers[0].starts_with("POST /v1/embeddings "),
            "{:?}",
            seen[0].headers
        );
        assert_eq!(seen[0].body["model"], "test-model");
        assert_eq!(seen[0].body["input"], serde_json::json!(["a", "b"]));
        // No key configured: no Authorization header.
        assert!(!seen[0]
            .headers
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("authorization")));
    }

    #[test]
    fn out_of_order_indices_are_reordered() {
        let body = serde_json::json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]})
        .to_string();
        let (url, _) = serve(vec![reply(200, body)]);
        let v = embedder(&url, 2).embed_batch(&["x", "y"]).unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    }

    #[test]
    fn retries_server_errors_then_succeeds() {
        let (url, seen) = serve(vec![
            reply(500, r#"{"error":"boom"}"#),
            reply(429, r#"{"error":"slow down"}"#),
            reply(200, ok_body(1, 3)),
        ]);
        let v = embedder(&url, 3).embed_one("hello").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(seen.lock().unwrap().len(), 3);
    }

    #[test]
    fn gives_up_after_max_retries() {
        let (url, seen) = serve(vec![reply(503, "down"); 6]);
        let err = embedder(&url, 3).embed_one("hello").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("503") && msg.contains("gave up after 4 attempts"),
            "{msg}"
        );
        assert_eq!(seen.lock().unwrap().len(), 4);
    }

    #[test]
    fn retries_timeouts() {
        let slow = Reply {
            delay: Duration::from_millis(1500),
            ..reply(200, ok_body(1, 3))
        };
        let (url, seen) = serve(vec![slow, reply(200, ok_body(1, 3))]);
        let mut o = HttpEmbedderOptions::new(url, "m", 3);
        o.api_key_env = "MNEMOS_TEST_KEY_THAT_IS_NOT_SET".into();
        o.initial_backoff = Duration::from_millis(10);
        o.timeout = Duration::from_millis(500);
        let e = HttpEmbedder::new(o).unwrap();
        assert_eq!(e.embed_one("x").unwrap().len(), 3);
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn client_errors_are_not_retried() {
        let (url, seen) = serve(vec![
            reply(400, r#"{"error":"bad input"}"#),
            reply(200, ok_body(1, 3)),
        ]);
        let err = embedder(&url, 3).embed_one("x").unwrap_err();
        assert!(err.to_string().contains("400"), "{err}");
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn unauthorized_names_the_key_variable() {
        let (url, _) = serve(vec![reply(401, r#"{"error":"no key"}"#)]);
        let err = embedder(&url, 3).embed_one("x").unwrap_err();
        assert!(matches!(err, EmbedError::Unavailable(_)));
        assert!(
            err.to_string().contains("MNEMOS_TEST_KEY_THAT_IS_NOT_SET"),
            "{err}"
        );
    }

    #[test]
    fn malformed_json_is_a_clear_error() {
        let (url, _) = serve(vec![reply(200, "{\"data\": [oops")]);
        let err = embedder(&url, 3).embed_one("x").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, EmbedError::Failed { .. }));
        assert!(
            msg.contains("malformed embeddings response") && msg.contains("[oops"),
            "{msg}"
        );
    }

    #[test]
    fn wrong_dimension_is_rejected() {
        let (url, _) = serve(vec![reply(200, ok_body(1, 5))]);
        let err = embedder(&url, 3).embed_one("x").unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::Dimension {
                    expected: 3,
                    got: 5
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn wrong_count_is_rejected() {
        let (url, _) = serve(vec![reply(200, ok_body(1, 3))]);
        let err = embedder(&url, 3).embed_batch(&["a", "b"]).unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::Count {
                    expected: 2,
                    got: 1
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn duplicate_indices_are_rejected() {
        let body = serde_json::json!({"data": [
            {"index": 0, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]})
        .to_string();
        let (url, _) = serve(vec![reply(200, body)]);
        let err = embedder(&url, 2).embed_batch(&["x", "y"]).unwrap_err();
        assert!(err.to_string().contains("indices"), "{err}");
    }

    #[test]
    fn overflowing_values_are_non_finite() {
        let body =
            serde_json::json!({"data": [{"index": 0, "embedding": [1e300, 1.0]}]}).to_string();
        let (url, _) = serve(vec![reply(200, body)]);
        let err = embedder(&url, 2).embed_one("x").unwrap_err();
        assert!(matches!(err, EmbedError::NonFinite), "{err}");
    }

    #[test]
    fn batches_are_split_by_max_batch() {
        let (url, seen) = serve(vec![reply(200, ok_body(2, 3)), reply(200, ok_body(1, 3))]);
        let mut o = HttpEmbedderOptions::new(url, "m", 3);
        o.api_key_env = "MNEMOS_TEST_KEY_THAT_IS_NOT_SET".into();
        o.max_batch = 2;
        let e = HttpEmbedder::new(o).unwrap();
        assert_eq!(e.embed_all(&["a", "b", "c"]).unwrap().len(), 3);
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert!(e.embed_batch(&[]).unwrap().is_empty());
    }

    #[test]
    fn endpoint_derivation() {
        assert_eq!(
            endpoint_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint_url("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(
            endpoint_url("http://localhost:11434"),
            "http://localhost:11434/v1/embeddings"
        );
        assert_eq!(
            endpoint_url("http://h/x/v1/embeddings"),
            "http://h/x/v1/embeddings"
        );
    }

    #[test]
    fn rejects_bad_options() {
        assert!(HttpEmbedder::new(HttpEmbedderOptions::new("ftp://x", "m", 3)).is_err());
        assert!(HttpEmbedder::new(HttpEmbedderOptions::new("http://x", " ", 3)).is_err());
        assert!(HttpEmbedder::new(HttpEmbedderOptions::new("http://x", "m", 0)).is_err());
    }
}
