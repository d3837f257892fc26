//! Extractors whose rejections are [`ApiError`]s, so a malformed body, path or query gets the
//! one error shape (with the offending field) instead of axum's plain-text rejection.

use axum::extract::{FromRequest, FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::Json;

use mnemos_core::Deadline;

use crate::error::ApiError;

/// A JSON body.
#[derive(FromRequest)]
#[from_request(via(Json), rejection(ApiError))]
pub struct Body<T>(pub T);

/// Path parameters.
#[derive(FromRequestParts)]
#[from_request(via(Path), rejection(ApiError))]
pub struct Params<T>(pub T);

/// Query parameters.
#[derive(FromRequestParts)]
#[from_request(via(Query), rejection(ApiError))]
pub struct QueryParams<T>(pub T);

/// The request's time limit, put in its extensions by the server's time-limit layer (none
/// when a router is served without it). Engine calls that honour it stop when the server
/// answers `timeout`, instead of working on for nobody.
#[derive(Clone, Copy, Debug)]
pub struct RequestDeadline(pub Deadline);

impl<S: Send + Sync> FromRequestParts<S> for RequestDeadline {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(RequestDeadline(deadline_of(parts)))
    }
}

/// The deadline the time-limit layer gave a request, or none.
pub(crate) fn deadline_of(parts: &Parts) -> Deadline {
    parts
        .extensions
        .get::<Deadline>()
        .copied()
        .unwrap_or(Deadline::NONE)
}
