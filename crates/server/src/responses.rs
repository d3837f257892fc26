//! The error answers routes share: one [`ToResponse`] per status (the one error shape, each
//! with what its code means), and [`Errors`], a route's set of them as one type. Leaf of the
//! OpenAPI document: the handlers name these sets, the document registers the answers.

use std::collections::BTreeMap;

use utoipa::openapi::{Ref, RefOr, Response};
use utoipa::{IntoResponses, ToResponse};

use crate::error::ErrorBody;

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
