//! Bodies over the limit get their `413` even when the client writes the whole body before it
//! reads. Answering early and closing the connection would not do: a socket closed with unread
//! data resets the connection, and the reset makes the client lose the answer (it sees a broken
//! pipe). So a body that declares a length over the limit, but within [`drain_cap`], is read
//! and thrown away frame by frame (never held) before the answer; a larger one is answered at
//! once. The request timeout bounds how long the reading takes.

use std::pin::Pin;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, EXPECT};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};

/// Bytes read and discarded at most, whatever the limit: enough for a client that sends a few
/// times the limit (a 10 MB upload against the default 4 MiB) to read its answer.
const MIN_DRAIN: u64 = 16 * 1024 * 1024;

/// How much of an oversized body is read before answering: four times the limit, at least
/// [`MIN_DRAIN`].
pub(crate) fn drain_cap(limit: usize) -> u64 {
    u64::try_from(limit)
        .unwrap_or(u64::MAX)
        .saturating_mul(4)
        .max(MIN_DRAIN)
}

/// Answers `413` to a request whose `Content-Length` is over `limit`, after reading the body
/// when it is within [`drain_cap`]; other requests pass on (a body without a length is held
/// to the limit by the extractors).
pub(crate) async fn refuse_oversized(
    State(limit): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let Some(length) = declared_length(request.headers()).filter(|&n| n > limit as u64) else {
        return next.run(request).await;
    };
    // A client waiting for `100 Continue` has sent nothing yet: it reads the answer instead.
    let drained = !expects_continue(request.headers())
        && length <= drain_cap(limit)
        && drain(request.into_body(), drain_cap(limit)).await;
    let mut response = ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("the body is {length} bytes; this server accepts at most {limit} (--body-limit)"),
    )
    .into_response();
    if !drained {
        // The rest of the body is still on its way: this connection cannot carry another request.
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Reads `body` to its end, dropping each frame; false when it fails or passes `cap` bytes.
async fn drain(mut body: Body, cap: u64) -> bool {
    let mut read = 0u64;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return true,
            Some(Err(_)) => return false,
            Some(Ok(frame)) => {
                let size = frame.data_ref().map_or(0, |d| d.len() as u64);
                read = read.saturating_add(size);
                if read > cap {
                    return false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_four_limits_and_never_small() {
        assert_eq!(drain_cap(64 * 1024), MIN_DRAIN);
        assert_eq!(drain_cap(8 * 1024 * 1024), 32 * 1024 * 1024);
    }

    #[test]
    fn lengths_and_expectations_are_read_from_the_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers), None);
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("10000000"));
        assert_eq!(declared_length(&headers), Some(10_000_000));
        assert!(!expects_continue(&headers));
        headers.insert(EXPECT, HeaderValue::from_static("100-Continue"));
        assert!(expects_continue(&headers));
    }
}
