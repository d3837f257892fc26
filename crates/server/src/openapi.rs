//! The API as an OpenAPI 3.1 document, served at `GET /openapi.json`. It is derived from the
//! code: each handler's `#[utoipa::path]` (method, path, parameters, body, answers) and the
//! schemas of the wire types the handlers use ([`crate::dto`], [`crate::error`]), so clients
//! can be generated from it.
//!
//! The document and the router come from one table ([`crate::routes::table`]): a route's method
//! and path are written once, in its handler's `#[utoipa::path]`, so a route cannot be served
//! without being documented, nor documented without being served. The error answers a route can
//! give are one type, [`Errors`], over a named set of statuses.
//!
//! `tests/openapi.rs` keeps it honest: it must pass an OpenAPI validator and equal the
//! checked-in snapshot (an API change shows as a diff of that file).

use std::sync::LazyLock;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorBody;
pub use crate::responses::*;

/// The API as an OpenAPI 3.1 document: the shared parts ([`Api`]) and every route of the
/// table.
pub fn document() -> utoipa::openapi::OpenApi {
    DOCUMENT.clone()
}

/// Built once: it is the same for the life of the process.
static DOCUMENT: LazyLock<utoipa::openapi::OpenApi> = LazyLock::new(|| {
    utoipa_axum::router::OpenApiRouter::with_openapi(Api::openapi())
        .merge(crate::routes::table(false))
        .merge(crate::routes::table(true))
        .into_openapi()
});

/// Every (METHOD, path) the server serves, from the document (and so from the route table):
/// what tests send requests to.
pub fn routes() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (path, item) in &DOCUMENT.paths.paths {
        let methods = [
            ("GET", item.get.is_some()),
            ("PUT", item.put.is_some()),
            ("POST", item.post.is_some()),
            ("DELETE", item.delete.is_some()),
            ("OPTIONS", item.options.is_some()),
            ("HEAD", item.head.is_some()),
            ("PATCH", item.patch.is_some()),
            ("TRACE", item.trace.is_some()),
        ];
        for (method, present) in methods {
            if present {
                found.push((method.to_string(), path.clone()));
            }
        }
    }
    found
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mnemos",
        version = env!("CARGO_PKG_VERSION"),
        description = "Long-term memory for LLM agents. Store the turns of your users' \
            conversations; recall a token-budgeted context for the next prompt, or search, \
            list, change and forget memories. Summaries, personas and other derived memories \
            are made in the background.\n\n\
            Every `/v1` request sends an API key (`Authorization: Bearer mnk_…`) and acts in \
            that key's tenant: user names are per tenant, and another tenant's ids answer 404. \
            Errors have one shape, `{\"error\": {\"code\", \"message\"}}`, where `code` names \
            the error and decides the status. Times are RFC 3339 / ISO 8601 UTC strings; ids \
            are opaque strings; unknown fields in request bodies and queries are refused."
    ),
    components(
        // The error schema is named by the shared error answers alone, which do not register it.
        schemas(ErrorBody<'static>),
        // A view's `data` names these by reference only (`dto_inspect::view_data_schema`).
        schemas(
            crate::dto_inspect::PersonaKeyOut,
            crate::dto_inspect::TimelineNodeOut,
            crate::dto_inspect::ChainsOut,
        ),
        responses(
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        InvalidInput,
        Internal,
        Unavailable,
        Timeout,
    )),
    modifiers(&BearerKeys),
    tags(
        (name = "turns", description = "Store conversations and close sessions."),
        (name = "retrieval", description = "Context for prompts, and ranked search."),
        (name = "memories", description = "List, read, change and forget memories."),
        (name = "users", description = "A tenant's users: list, stats, views, purge."),
        (name = "jobs", description = "Derived work (summaries, personas…) that has not succeeded yet."),
        (name = "presets", description = "The ways of storing and recalling memory."),
        (name = "keys", description = "API keys; these routes take the admin key only."),
        (name = "service", description = "Health, readiness, metrics and this document; no API key needed."),
    )
)]
struct Api;

/// The name of the security scheme every `/v1` route requires.
pub const BEARER: &str = "bearer";

/// Declares [`BEARER`]: the `/v1` routes name it in their `security(...)`.
struct BearerKeys;

impl Modify for BearerKeys {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("mnemos API key")
            .description(Some(
                "An API key: `Authorization: Bearer mnk_…` (made with `mnemos keys create \
                 --tenant T` or `POST /v1/keys`); requests act in its tenant. The `/v1/keys` \
                 routes take the admin key (`MNEMOS_ADMIN_KEY`) instead. A server with no key \
                 stored and no admin key (a fresh local install, loopback only) also serves \
                 requests without one.",
            ))
            .build();
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(BEARER, SecurityScheme::Http(scheme));
    }
}

/// The OpenAPI document.
///
/// This document, as JSON: generate a client from it. Needs no API key.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    tag = "service",
    responses((status = 200, description = "The OpenAPI 3.1 document.", body = Object)),
)]
pub(crate) async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
