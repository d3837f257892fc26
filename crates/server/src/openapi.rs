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

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Ref, RefOr, Response};
use utoipa::{IntoResponses, Modify, OpenApi, ToResponse};

use crate::error::ErrorBody;

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

/// The error answers a route can give, as one type: `SET` is a union of the status bits below
/// (e.g. [`USER`]), and each status it holds refers to its shared answer in
/// `components/responses`. Handlers name one of the named sets in their `responses(...)`, so the
/// same 7 to 10 lines are not repeated per route.
pub struct Errors<const SET: u16>;

pub const BAD_REQUEST: u16 = 1;
pub const UNAUTHORIZED: u16 = 1 << 1;
pub const FORBIDDEN: u16 = 1 << 2;
pub const NOT_FOUND: u16 = 1 << 3;
pub const CONFLICT: u16 = 1 << 4;
pub const PAYLOAD_TOO_LARGE: u16 = 1 << 5;
pub const INVALID_INPUT: u16 = 1 << 6;
pub const INTERNAL: u16 = 1 << 7;
pub const UNAVAILABLE: u16 = 1 << 8;
pub const TIMEOUT: u16 = 1 << 9;

/// Any route that does work: it can fail, find its dependency down, or run out of time.
pub const SERVICE: u16 = INTERNAL | UNAVAILABLE | TIMEOUT;
/// A `/v1` route that takes no input.
pub const KEYED: u16 = SERVICE | UNAUTHORIZED;
/// A `/v1` route whose key must be a tenant's (or the admin's).
pub const TENANT: u16 = KEYED | FORBIDDEN;
/// With a query or path to parse.
pub const QUERY: u16 = TENANT | BAD_REQUEST;
/// Names an API key by id.
pub const KEY_ID: u16 = QUERY | NOT_FOUND;
/// Reads or acts on a stored user (or a thing of theirs) that may not exist.
pub const USER: u16 = QUERY | NOT_FOUND | INVALID_INPUT;
/// Takes a JSON body.
pub const BODY: u16 = QUERY | PAYLOAD_TOO_LARGE | INVALID_INPUT;
/// Stores turns: a key already stored with other text conflicts.
pub const ADD: u16 = BODY | CONFLICT;
/// Changes a stored memory with a body.
pub const CHANGE: u16 = USER | CONFLICT | PAYLOAD_TOO_LARGE;

/// Each status bit with its HTTP status and the name of its shared answer.
fn error_answers() -> [(u16, u16, String); 10] {
    fn name<T: for<'a> ToResponse<'a>>() -> String {
        T::response().0.to_string()
    }
    [
        (BAD_REQUEST, 400, name::<BadRequest>()),
        (UNAUTHORIZED, 401, name::<Unauthorized>()),
        (FORBIDDEN, 403, name::<Forbidden>()),
        (NOT_FOUND, 404, name::<NotFound>()),
        (CONFLICT, 409, name::<Conflict>()),
        (PAYLOAD_TOO_LARGE, 413, name::<PayloadTooLarge>()),
        (INVALID_INPUT, 422, name::<InvalidInput>()),
        (INTERNAL, 500, name::<Internal>()),
        (UNAVAILABLE, 503, name::<Unavailable>()),
        (TIMEOUT, 504, name::<Timeout>()),
    ]
}

impl<const SET: u16> IntoResponses for Errors<SET> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        error_answers()
            .into_iter()
            .filter(|(bit, _, _)| SET & bit != 0)
            .map(|(_, status, name)| {
                (
                    status.to_string(),
                    RefOr::Ref(Ref::from_response_name(name)),
                )
            })
            .collect()
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
