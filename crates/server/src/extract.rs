//! Extractors whose rejections are [`ApiError`]s, so a malformed body, path or query gets the
//! one error shape (with the offending field) instead of axum's plain-text rejection.

use axum::extract::{FromRequest, FromRequestParts, Path, Query};
use axum::Json;

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
