//! What every handler shares: the application state (the engine, who may call, the metrics)
//! and the shapes of a handler's state and answer.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use mnemos_engine::Engine;

use crate::auth::Auth;
use crate::error::{ApiError, ErrorCode};
use crate::metrics::Metrics;

/// What every handler shares.
pub struct AppState {
    pub engine: Arc<Engine>,
    /// Who may call, and in which tenant (every handler's users come from the caller's tenant).
    pub auth: Auth,
    pub metrics: Arc<Metrics>,
}

pub(crate) type Shared = State<Arc<AppState>>;
pub(crate) type ApiResult<T> = Result<Json<T>, ApiError>;

/// Bytes an answer's buffer starts with: a search's ten hits with their explanations take about
/// 12 KiB.
const ANSWER_BUFFER: usize = 16 * 1024;

/// A JSON answer, as axum's `Json` writes it (`Content-Type: application/json`). axum starts
/// its buffer at 128 bytes and doubles it as it fills, which copies a search's answer seven
/// times over; this one starts at [`ANSWER_BUFFER`].
pub(crate) struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut buffer = Vec::with_capacity(ANSWER_BUFFER);
        if let Err(error) = serde_json::to_writer(&mut buffer, &self.0) {
            return ApiError::new(
                ErrorCode::Internal,
                format!("the answer could not be written as JSON: {error}"),
            )
            .into_response();
        }
        let mut response = Body::from(buffer).into_response();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_are_json_with_their_length() {
        let response = Json(serde_json::json!({"hits": ["a", "b"]})).into_response();
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap_or_default();
        assert_eq!(&body[..], br#"{"hits":["a","b"]}"#);
    }
}
