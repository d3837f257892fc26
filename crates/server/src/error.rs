//! The one error shape on the wire, `{"error": {"code": "...", "message": "..."}}`, and the
//! exhaustive map from what failed to an HTTP status: a caller's mistake is never a 500.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use mnemos_core::ErrorClass;
use mnemos_engine::EngineError;

/// What went wrong, as a client can branch on it (each code has one HTTP status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The body is not JSON (or not UTF-8).
    MalformedJson,
    /// The JSON has the wrong shape (a missing, unknown or mistyped field), or a query
    /// parameter does not parse or breaks its rule.
    InvalidRequest,
    /// A body is well-formed but one of its values breaks a rule (empty text, unknown kind…).
    InvalidInput,
    /// No API key, or one that is unknown or revoked.
    Unauthorized,
    /// A valid key that may not do this (a tenant key managing keys, the admin key reading
    /// a tenant's data).
    Forbidden,
    /// No such user, memory, turn or job here (another tenant's ids look the same).
    NotFound,
    /// The request collided with another write; retrying may succeed.
    Conflict,
    /// The route exists but not with this method.
    MethodNotAllowed,
    /// The body is larger than the server accepts.
    PayloadTooLarge,
    /// A dependency (embedding model, LLM endpoint, database) is missing or down.
    Unavailable,
    /// The request took longer than the server allows.
    Timeout,
    /// The service failed.
    Internal,
}

impl ErrorCode {
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::MalformedJson | ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorCode::InvalidInput => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<ErrorClass> for ErrorCode {
    fn from(class: ErrorClass) -> Self {
        match class {
            ErrorClass::InvalidInput => ErrorCode::InvalidInput,
            ErrorClass::NotFound => ErrorCode::NotFound,
            ErrorClass::Conflict => ErrorCode::Conflict,
            ErrorClass::Unavailable => ErrorCode::Unavailable,
            ErrorClass::Internal => ErrorCode::Internal,
            ErrorClass::TimedOut => ErrorCode::Timeout,
        }
    }
}

/// An error response.
#[derive(Debug, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }
}

// The OpenAPI document's error schema is derived from this type, the one every error answer is
// serialized from, so the two cannot differ.
/// Every error answer: `{"error": {"code", "message"}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail<'a> {
    code: ErrorCode,
    /// For people: what was wrong, naming the field or id at fault.
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
            },
        };
        (self.code.status(), Json(body)).into_response()
    }
}

impl From<EngineError> for ApiError {
    fn from(err: EngineError) -> Self {
        // The whole chain: the outer message alone often hides which input was wrong.
        ApiError::new(err.class().into(), mnemos_core::error::report(&err))
    }
}

impl From<mnemos_core::Error> for ApiError {
    fn from(err: mnemos_core::Error) -> Self {
        ApiError::new(err.class().into(), mnemos_core::error::report(&err))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let code = match &rejection {
            JsonRejection::JsonSyntaxError(_) => ErrorCode::MalformedJson,
            JsonRejection::BytesRejection(_) => ErrorCode::PayloadTooLarge,
            JsonRejection::JsonDataError(_) | JsonRejection::MissingJsonContentType(_) => {
                ErrorCode::InvalidRequest
            }
            _ => ErrorCode::InvalidRequest,
        };
        // axum's body text names the offending field and position (serde's path).
        ApiError::new(code, rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::new(ErrorCode::InvalidRequest, rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::new(ErrorCode::InvalidRequest, rejection.body_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_error_is_never_a_server_error() {
        for class in [
            ErrorClass::InvalidInput,
            ErrorClass::NotFound,
            ErrorClass::Conflict,
            ErrorClass::Unavailable,
            ErrorClass::Internal,
            ErrorClass::TimedOut,
        ] {
            let status = ErrorCode::from(class).status();
            assert_eq!(
                class.is_user_error(),
                status.is_client_error(),
                "{class:?} → {status}"
            );
        }
    }

    #[test]
    fn the_body_has_one_shape() {
        let body = ErrorBody {
            error: ErrorDetail {
                code: ErrorCode::NotFound,
                message: "no memory 1",
            },
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap_or_default(),
            r#"{"error":{"code":"not_found","message":"no memory 1"}}"#
        );
    }
}
