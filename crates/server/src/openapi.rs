//! The API as an OpenAPI 3.1 document, served at `GET /openapi.json`. It is derived from the
//! code: each handler's `#[utoipa::path]` (method, path, parameters, body, answers) and the
//! schemas of the wire types the handlers use ([`crate::dto`], [`crate::error`]), so clients
//! can be generated from it.
//!
//! `tests/openapi.rs` keeps it honest: it must pass an OpenAPI validator, equal the checked-in
//! snapshot (an API change shows as a diff of that file), and describe exactly the routes in
//! [`crate::ROUTES`], the list the router is built from.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToResponse};

use crate::error::ErrorBody;

/// The API as an OpenAPI 3.1 document.
pub fn document() -> utoipa::openapi::OpenApi {
    Api::openapi()
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
    paths(
        crate::healthz,
        crate::readyz,
        crate::render_metrics,
        serve,
        crate::routes::presets,
        crate::routes::users,
        crate::routes::add_turns,
        crate::routes::end_session,
        crate::routes::recall,
        crate::routes::search,
        crate::routes::list,
        crate::routes::get_memory,
        crate::routes::update,
        crate::routes::forget,
        crate::routes::forget_matching,
        crate::routes::history,
        crate::routes_inspect::access,
        crate::routes_inspect::derived,
        crate::routes_inspect::turn,
        crate::routes_inspect::overview,
        crate::routes_inspect::retention,
        crate::routes::purge,
        crate::routes::stats,
        crate::routes::jobs,
        crate::routes::retry_job,
        crate::routes::view,
        crate::routes::create_key,
        crate::routes::list_keys,
        crate::routes::revoke_key,
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

// The error answers, one per status, shared by the routes (`components/responses`). Each is the
// one error shape; the code names what went wrong.

/// Malformed request: the body is not JSON (`malformed_json`), a field or path segment is
/// missing, unknown or of the wrong type, or a query parameter does not parse or breaks its
/// rule (`invalid_request`); the message names it.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "invalid_request", "message": "Failed to deserialize the JSON body into the target type: turns[0].text: invalid type: integer `42`, expected a string at line 1 column 40"}}))]
pub struct BadRequest(pub ErrorBody<'static>);

/// No API key, a malformed `Authorization` header, or an unknown or revoked key
/// (`unauthorized`).
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "unauthorized", "message": "the API key is unknown or revoked"}}))]
pub struct Unauthorized(pub ErrorBody<'static>);

/// A valid key that may not do this (`forbidden`): a tenant key on `/v1/keys`, or the admin
/// key on a tenant's data.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "forbidden", "message": "the admin key manages keys only; use a tenant's key for its data"}}))]
pub struct Forbidden(pub ErrorBody<'static>);

/// No such user, memory, job, view or key here (`not_found`). Another user's or tenant's ids,
/// and ids that do not parse, answer the same.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "not_found", "message": "no user 'lena'"}}))]
pub struct NotFound(pub ErrorBody<'static>);

/// The write collided with stored data (`conflict`): a turn key already stored with another
/// text, a change to a forgotten memory, or a concurrent write (retrying may succeed). Nothing
/// was written.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "conflict", "message": "key 'idem:msg-0001#0' is already stored with another text: a retry must resend the same turns (use a new Idempotency-Key for a new request)"}}))]
pub struct Conflict(pub ErrorBody<'static>);

/// The body is larger than the server accepts (`payload_too_large`; `--body-limit`).
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "payload_too_large", "message": "Failed to buffer the request body: length limit exceeded"}}))]
pub struct PayloadTooLarge(pub ErrorBody<'static>);

/// A body's value is well-formed but against a rule (`invalid_input`): empty text or name,
/// unknown kind, a bad time, no turns or too many. Nothing was written.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "invalid_input", "message": "turns: at least one turn is needed"}}))]
pub struct InvalidInput(pub ErrorBody<'static>);

/// The service failed (`internal`); a caller's mistake never gets this.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "internal", "message": "request task failed"}}))]
pub struct Internal(pub ErrorBody<'static>);

/// A dependency is down (`unavailable`): the embedding model, an LLM endpoint or the database.
/// Retrying later may succeed.
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "unavailable", "message": "store unavailable: database is locked"}}))]
pub struct Unavailable(pub ErrorBody<'static>);

/// The request took longer than the server allows (`timeout`; `--request-timeout`).
#[derive(ToResponse)]
#[response(example = json!({"error": {"code": "timeout", "message": "the request took longer than 30 s"}}))]
pub struct Timeout(pub ErrorBody<'static>);
