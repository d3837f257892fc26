//! `/mcp` for every client. Two of rmcp's streamable-HTTP services answer it: one with sessions,
//! for the SDK clients that open one (an `initialize` accepting `text/event-stream`, then every
//! request naming its `Mcp-Session-Id`), and a stateless one answering plain JSON-RPC in
//! `application/json` (no `initialize`, no session, nothing that expires). [`dispatch`] picks one
//! per request, answers an unreadable body with a JSON-RPC error, and binds each session to the
//! key that opened it, so another key cannot use it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use parking_lot::Mutex;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use mnemos_engine::Engine;

use super::MemoryTools;
use crate::auth::key_digest;
use crate::routes::AppState;
use crate::ServerConfig;

const SESSION_HEADER: &str = "mcp-session-id";
/// Sessions whose key is remembered at most; past it the oldest session is ended.
const MAX_SESSIONS: usize = 10_000;
/// JSON-RPC's "the body is not JSON".
const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's "the JSON is not a request".
const INVALID_REQUEST: i32 = -32600;

/// The digest of the key a request presented (none: no key, in open mode).
type KeyDigest = Option<[u8; 32]>;

/// `/mcp`: the tools over streamable HTTP, behind the API-key check of `/v1`; each request
/// acts in its key's tenant. Cancelling `stop` ends every MCP session and open stream, which a
/// graceful shutdown would otherwise wait for.
pub(crate) fn routes(
    state: Arc<AppState>,
    config: &ServerConfig,
    stop: CancellationToken,
) -> axum::Router<Arc<AppState>> {
    let mcp = Arc::new(McpHttp::new(&state.engine, config, stop));
    axum::Router::new()
        .route(
            "/mcp",
            axum::routing::any(move |request: Request| dispatch(Arc::clone(&mcp), request)),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::auth::authenticate,
        ))
}

/// The two services and the key each open session belongs to.
struct McpHttp {
    sessions: StreamableHttpService<MemoryTools, LocalSessionManager>,
    stateless: StreamableHttpService<MemoryTools, NeverSessionManager>,
    manager: Arc<LocalSessionManager>,
    owners: Owners,
}

impl McpHttp {
    fn new(engine: &Arc<Engine>, config: &ServerConfig, stop: CancellationToken) -> Self {
        // `Host` and `Origin` are checked for every route, this one included, by the router's
        // outermost layer (`crate::guard`), which also knows the names allowed with
        // `--allow-host`; rmcp's own list of loopback names would refuse those.
        let http = StreamableHttpServerConfig::default()
            .with_cancellation_token(stop)
            .with_max_request_body_bytes(config.body_limit)
            .disable_allowed_hosts();
        let engine = Arc::clone(engine);
        let defaults = config.mcp_defaults.clone();
        let tools = move || {
            Ok(MemoryTools::per_caller(
                Arc::clone(&engine),
                defaults.clone(),
            ))
        };
        let manager = Arc::new(LocalSessionManager::default());
        let stateless = http
            .clone()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        McpHttp {
            sessions: StreamableHttpService::new(tools.clone(), Arc::clone(&manager), http),
            stateless: StreamableHttpService::new(
                tools,
                Arc::new(NeverSessionManager::default()),
                stateless,
            ),
            manager,
            owners: Owners::default(),
        }
    }

    /// A request naming a session: the session service answers it if the session is this
    /// key's. A session another key opened is answered as an unknown one (404), so a client
    /// whose key changed starts a new session, as the protocol has it do for an expired one.
    async fn in_session(&self, session: &str, key: KeyDigest, request: Request) -> Response {
        if !self.owners.owned_by(session, key) {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        let delete = request.method() == Method::DELETE;
        let request = if request.method() == Method::POST {
            match read_message(request).await {
                Ok((request, _)) => request,
                Err(refused) => return refused.into_response(),
            }
        } else {
            request
        };
        let mut response = self.sessions.handle(request).await.map(Body::new);
        if response.status() == StatusCode::NOT_FOUND {
            self.owners.forget(session);
        }
        if delete && response.status().is_success() {
            self.owners.forget(session);
            // rmcp answers 202; some SDKs count only 200 and 204 as a successful termination.
            *response.status_mut() = StatusCode::OK;
        }
        response
    }

    /// A POST naming no session: an SDK's `initialize` opens one; anything else is answered
    /// statelessly, in JSON.
    async fn without_session(&self, key: KeyDigest, request: Request) -> Response {
        let (request, message) = match read_message(request).await {
            Ok(read) => read,
            Err(refused) => return refused.into_response(),
        };
        if is_initialize(&message) && accepts_event_stream(request.headers()) {
            let response = self.sessions.handle(request).await.map(Body::new);
            if let Some(session) = session_id(response.headers()) {
                self.owners.bind(session, key, &self.manager).await;
            }
            return response;
        }
        let (mut parts, body) = request.into_parts();
        // Plain JSON-RPC clients accept JSON only, or say nothing; the stateless service
        // answers them in JSON (`json_response`) but refuses a request not naming both types.
        parts.headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let request = Request::from_parts(parts, body);
        self.stateless.handle(request).await.map(Body::new)
    }
}

/// Route one `/mcp` request (see the module's documentation).
async fn dispatch(mcp: Arc<McpHttp>, request: Request) -> Response {
    let key = key_digest(request.headers());
    match session_id(request.headers()) {
        Some(session) => mcp.in_session(&session, key, request).await,
        None if request.method() == Method::POST => mcp.without_session(key, request).await,
        // A stream (GET) or its end (DELETE) needs a session; rmcp says what is missing.
        None => mcp.sessions.handle(request).await.map(Body::new),
    }
}

/// The key each open session was opened with, bounded: a session rmcp ended (idle, or by
/// DELETE) is forgotten when it is next named or when the map fills; then the oldest session
/// is ended. A session whose key is not here is answered as unknown.
#[derive(Default)]
struct Owners {
    map: Mutex<HashMap<String, (KeyDigest, Instant)>>,
}

impl Owners {
    fn owned_by(&self, session: &str, key: KeyDigest) -> bool {
        self.map
            .lock()
            .get(session)
            .is_some_and(|(owner, _)| *owner == key)
    }

    fn forget(&self, session: &str) {
        self.map.lock().remove(session);
    }

    async fn bind(&self, session: String, key: KeyDigest, manager: &LocalSessionManager) {
        if self.map.lock().len() >= MAX_SESSIONS {
            let live: HashSet<SessionId> = manager.sessions.read().await.keys().cloned().collect();
            self.map.lock().retain(|id, _| live.contains(id.as_str()));
        }
        let oldest = {
            let mut map = self.map.lock();
            map.insert(session, (key, Instant::now()));
            let oldest = (map.len() > MAX_SESSIONS)
                .then(|| {
                    map.iter()
                        .min_by_key(|(_, (_, at))| *at)
                        .map(|(id, _)| id.clone())
                })
                .flatten();
            if let Some(id) = &oldest {
                map.remove(id);
            }
            oldest
        };
        if let Some(id) = oldest {
            // A session nobody may use any more should not hold its worker until it idles out.
            let _ = manager.close_session(&SessionId::from(id)).await;
        }
    }
}

/// Why a POST's body is refused: an HTTP status and JSON-RPC's error.
struct Refusal {
    status: StatusCode,
    code: i32,
    message: String,
    /// The request's id, when it has a usable one.
    id: Value,
}

impl Refusal {
    fn new(status: StatusCode, code: i32, message: impl Into<String>) -> Self {
        Refusal {
            status,
            code,
            message: message.into(),
            id: Value::Null,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        });
        (self.status, Json(body)).into_response()
    }
}

/// A POST's body, read within the server's body limit and checked to be one JSON-RPC message,
/// with the request rebuilt around it; or why it is refused.
async fn read_message(request: Request) -> Result<(Request, ClientJsonRpcMessage), Refusal> {
    if !is_json(request.headers()) {
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "the Content-Type header must be application/json",
        ));
    }
    let (parts, body) = request.into_parts();
    // `Bytes` honours the router's body limit (it is in the request's extensions).
    let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), &())
        .await
        .map_err(|rejection| {
            Refusal::new(rejection.status(), INVALID_REQUEST, rejection.body_text())
        })?;
    let message = parse_message(&bytes)?;
    Ok((Request::from_parts(parts, Body::from(bytes)), message))
}

/// One JSON-RPC message, or a 400 with JSON-RPC's error for what is wrong. A batch (an array)
/// is refused: the protocol's current version has none, and no client sends one.
fn parse_message(body: &[u8]) -> Result<ClientJsonRpcMessage, Refusal> {
    let bad = StatusCode::BAD_REQUEST;
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| Refusal::new(bad, PARSE_ERROR, format!("Parse error: {error}")))?;
    if value.is_array() {
        return Err(Refusal::new(
            bad,
            INVALID_REQUEST,
            "Invalid Request: batches are not supported; send one JSON-RPC message per request",
        ));
    }
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    serde_json::from_value(value).map_err(|error| Refusal {
        id,
        ..Refusal::new(bad, INVALID_REQUEST, format!("Invalid Request: {error}"))
    })
}

fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_))
    )
}

/// The media types of a header (`type/subtype`, parameters dropped).
fn media_types(headers: &HeaderMap, name: header::HeaderName) -> Vec<&str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|entry| entry.split(';').next())
        .map(str::trim)
        .collect()
}

fn accepts_event_stream(headers: &HeaderMap) -> bool {
    media_types(headers, header::ACCEPT)
        .iter()
        .any(|media| media.eq_ignore_ascii_case("text/event-stream"))
}

fn is_json(headers: &HeaderMap) -> bool {
    media_types(headers, header::CONTENT_TYPE)
        .first()
        .is_some_and(|media| media.eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_is_not_json_is_a_parse_error_and_a_batch_is_refused() {
        let status = |body: &[u8]| parse_message(body).err().map(|r| r.status);
        assert_eq!(status(b"{\"jsonrpc\": "), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(b"[]"), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(b"{\"id\": 1}"), Some(StatusCode::BAD_REQUEST));
        let ping = br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;
        assert_eq!(status(ping), None);
    }

    #[test]
    fn media_types_ignore_parameters_and_case() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=1, Text/Event-Stream"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/JSON; charset=utf-8"),
        );
        assert!(accepts_event_stream(&headers));
        assert!(is_json(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(!accepts_event_stream(&headers));
    }
}
