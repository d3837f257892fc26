//! mnemos over HTTP. [`router`] serves every engine operation as JSON under `/v1` (see
//! `docs/server.md`), plus `/healthz`, `/readyz`, `/metrics` and `/openapi.json`; [`serve`] runs
//! it until a shutdown signal, finishing the requests in flight. The web inspector's pages are
//! served under `/ui` ([`ui`]).
//!
//! The wire types are this crate's own ([`dto`]); errors have one JSON shape and an exhaustive
//! map to HTTP statuses ([`error`]). [`openapi`] describes the API as an OpenAPI 3.1 document
//! derived from the handlers and wire types. Engine calls run off the async side
//! (`block_in_place`; see `params::blocking`), and every answer says where its time went
//! ([`timing`]).

pub mod auth;
pub mod bench;
pub mod dto;
pub mod dto_inspect;
pub mod error;
mod extract;
pub mod guard;
mod listen;
pub mod mcp;
pub mod metrics;
pub mod openapi;
mod oversized;
mod params;
mod responses;
mod routes;
mod routes_inspect;
mod state;
pub mod timing;
mod ui;
mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::{Json, Router};

use mnemos_engine::{DenseSearch, Engine};

use crate::responses::{Errors, SERVICE};

pub use error::{ApiError, ErrorCode};
pub use mcp::McpDefaults;
pub use routes::{AppState, MAX_TURNS_PER_REQUEST};
pub use worker::JobWorker;

/// How the server listens and what it accepts.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The largest request body accepted (bytes).
    pub body_limit: usize,
    /// The longest a request may take: then it is answered `timeout` (504), and the searches
    /// and recalls it started stop.
    pub request_timeout: Duration,
    /// The longest a connection may take to send a request's headers (and the longest an idle
    /// keep-alive connection stays open).
    pub header_timeout: Duration,
    /// Host names accepted besides loopback ones (`--allow-host`; see [`guard`]).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides the server's own (`--allow-origin`).
    pub allowed_origins: Vec<String>,
    /// Run derived jobs in the background (for an engine whose jobs do not run inline).
    pub jobs: Option<JobWorker>,
    /// The key that manages API keys over HTTP (`MNEMOS_ADMIN_KEY`); it reads no tenant's data.
    pub admin_key: Option<String>,
    /// The user and agent of MCP tool calls that name none (`--user`, `--agent`).
    pub mcp_defaults: McpDefaults,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(10),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            jobs: None,
            admin_key: None,
            mcp_defaults: McpDefaults::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Serving beyond this machine needs API keys.
    #[error(
        "refusing to listen on {0}: with no API key stored and no admin key set, the server only binds a loopback address (create one with `mnemos keys create --tenant T`)"
    )]
    NotLoopback(SocketAddr),
    #[error("invalid server setting: {0}")]
    Invalid(String),
    #[error("cannot read the API keys: {0}")]
    Keys(#[source] mnemos_engine::EngineError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving failed: {0}")]
    Serve(#[source] std::io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl ServerError {
    /// Whose fault it is (the CLI's exit status).
    pub fn class(&self) -> mnemos_core::ErrorClass {
        use mnemos_core::ErrorClass;
        use std::io::ErrorKind;
        match self {
            ServerError::NotLoopback(_) | ServerError::Invalid(_) => ErrorClass::InvalidInput,
            ServerError::Bind { source, .. } => match source.kind() {
                ErrorKind::AddrInUse
                | ErrorKind::AddrNotAvailable
                | ErrorKind::PermissionDenied => ErrorClass::InvalidInput,
                _ => ErrorClass::Unavailable,
            },
            ServerError::Keys(error) => error.class(),
            ServerError::Serve(_) | ServerError::Runtime(_) => ErrorClass::Internal,
        }
    }
}

/// Shortest admin key accepted: it guards every tenant's keys.
pub const MIN_ADMIN_KEY_CHARS: usize = 32;

impl ServerConfig {
    /// Whether this server may only start once an API key is stored: it listens beyond
    /// loopback, and no admin key guards it. (A database that does not exist yet holds no key,
    /// so such a server is refused before one is created.)
    pub fn needs_stored_keys(&self) -> bool {
        self.admin_key.is_none() && !self.listen.ip().is_loopback()
    }

    /// Check the settings alone (whether keys exist is checked by [`serve`]).
    pub fn validate(&self) -> Result<(), ServerError> {
        if let Some(admin) = &self.admin_key {
            if admin.chars().count() < MIN_ADMIN_KEY_CHARS || admin.chars().any(char::is_whitespace)
            {
                return Err(ServerError::Invalid(format!(
                    "the admin key must be at least {MIN_ADMIN_KEY_CHARS} characters without spaces (e.g. `openssl rand -hex 32`)"
                )));
            }
        }
        self.mcp_defaults.validate()?;
        if self.body_limit == 0 {
            return Err(ServerError::Invalid("body_limit must be positive".into()));
        }
        if self.request_timeout.is_zero() || self.header_timeout.is_zero() {
            return Err(ServerError::Invalid(
                "request_timeout and header_timeout must be positive".into(),
            ));
        }
        self.host_guard()?;
        Ok(())
    }

    /// The Host/Origin check for this listen address and the allowed names.
    pub fn host_guard(&self) -> Result<guard::HostGuard, ServerError> {
        guard::HostGuard::new(
            self.listen.ip().is_loopback(),
            &self.allowed_hosts,
            &self.allowed_origins,
        )
        .map_err(ServerError::Invalid)
    }
}

/// Every route, over `engine`, counting into `metrics`. Requests act in their key's tenant;
/// without keys (open mode, loopback only) in `tenant`. Cancelling `mcp_stop` ends the MCP
/// sessions of `/mcp` ([`mcp`]). Settings that do not validate are an error.
pub fn router(
    engine: Arc<Engine>,
    tenant: String,
    config: &ServerConfig,
    metrics: Arc<metrics::Metrics>,
    mcp_stop: tokio_util::sync::CancellationToken,
) -> Result<Router, ServerError> {
    let host_guard = Arc::new(config.host_guard()?);
    let always_required = !config.listen.ip().is_loopback();
    let state = Arc::new(AppState {
        engine,
        auth: auth::Auth::new(config.admin_key.as_deref(), tenant, always_required),
        metrics: Arc::clone(&metrics),
    });
    let (v1, _) = routes::table(true).split_for_parts();
    let (service, _) = routes::table(false).split_for_parts();
    let v1 = v1.route_layer(axum::middleware::from_fn_with_state(
        Arc::clone(&state),
        auth::authenticate,
    ));
    Ok(Router::new()
        .merge(v1)
        .merge(service)
        .merge(ui::routes())
        .merge(mcp::routes(Arc::clone(&state), config, mcp_stop))
        .route_layer(axum::middleware::from_fn_with_state(
            metrics,
            metrics::track,
        ))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(config.body_limit))
        // Inside the time limit, which bounds how long an oversized body is read.
        .layer(axum::middleware::from_fn_with_state(
            config.body_limit,
            oversized::refuse_oversized,
        ))
        .layer(axum::middleware::from_fn_with_state(
            config.request_timeout,
            time_limit,
        ))
        // A foreign Host or Origin is refused before any other work.
        .layer(axum::middleware::from_fn_with_state(
            host_guard,
            guard::guard,
        ))
        // Outermost: the server's own clock covers every layer (see `timing`).
        .layer(axum::middleware::from_fn(timing::measure))
        .with_state(state))
}

/// How requests are let in when a server starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Every `/v1` request needs a key and acts in the key's tenant; the configured tenant
    /// applies to none.
    pub keys_required: bool,
    /// The mode in one line, for the start-up log.
    pub summary: String,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary)
    }
}

/// How requests are let in; refuses a non-loopback address when nothing would guard it (no
/// active key stored, no admin key).
pub fn access(engine: &Engine, config: &ServerConfig) -> Result<Access, ServerError> {
    let active = engine
        .api_keys(None)
        .map_err(ServerError::Keys)?
        .iter()
        .filter(|k| k.is_active())
        .count();
    let admin = if config.admin_key.is_some() {
        ", admin key set"
    } else {
        ""
    };
    if active > 0 || config.admin_key.is_some() {
        return Ok(Access {
            keys_required: true,
            summary: format!("API keys required ({active} active{admin})"),
        });
    }
    if config.needs_stored_keys() {
        return Err(ServerError::NotLoopback(config.listen));
    }
    Ok(Access {
        keys_required: false,
        summary: format!(
            "no API key stored: requests without a key act in the configured tenant (loopback only; keys are required within {} s of the first `mnemos keys create`)",
            auth::REFRESH.as_secs()
        ),
    })
}

/// Liveness.
///
/// `ok` while the process runs. Needs no API key.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "service",
    responses((status = 200, description = "The process runs.", body = dto::Health)),
)]
async fn healthz() -> Json<dto::Health> {
    Json(dto::Health {
        status: "ok",
        store: None,
    })
}

/// Readiness.
///
/// `ready` when the store answers, else 503, with the kind of store and where vector search
/// runs. Needs no API key.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "service",
    responses(
        (status = 200, description = "The store answers.", body = dto::Health),
        Errors<SERVICE>,
    ),
)]
async fn readyz(State(app): State<Arc<AppState>>) -> Result<Json<dto::Health>, ApiError> {
    // Read before the check takes `app`: it is what this server was built with (no IO).
    let info = app.engine.info();
    let embedder = app.engine.embedder().id().to_string();
    tokio::task::spawn_blocking(move || app.engine.users().map(|_| ()))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(|e| ApiError::new(ErrorCode::Unavailable, e.to_string()))?;
    let (vectors, vectors_detail) = match info.dense_search {
        DenseSearch::Store { index } => ("store", index),
        DenseSearch::InProcess { why } => ("in_process", why),
    };
    Ok(Json(dto::Health {
        status: "ready",
        store: Some(dto::StoreHealth {
            kind: info.store.kind.name(),
            vectors,
            vectors_detail,
            embedder,
        }),
    }))
}

/// Prometheus metrics.
///
/// What the server did since it started, in Prometheus' text format: requests and their
/// latencies by method, route pattern and status; turns added and duplicate; derived jobs and
/// the memories they changed. User names and ids never become labels. Needs no API key.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "service",
    responses((status = 200, description = "The metrics.", body = String, content_type = "text/plain")),
)]
async fn render_metrics(State(app): State<Arc<AppState>>) -> String {
    app.metrics.render()
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not take this method (see docs/server.md)",
    )
}

/// Answer `timeout` (504) when a request takes longer than the limit. The request carries the
/// same limit as a [`mnemos_core::Deadline`], which the engine calls it started check between
/// their stages: they stop then too instead of working on for nobody.
async fn time_limit(
    State(limit): State<Duration>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    request
        .extensions_mut()
        .insert(mnemos_core::Deadline::after(limit));
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            ErrorCode::Timeout,
            format!("the request took longer than {} s", limit.as_secs_f64()),
        )
        .into_response(),
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route (the API is under /v1; see docs/server.md)")
}

/// Bind `config.listen` and serve until `shutdown` completes: requests in flight and a
/// running job round finish first. Calls `on_bound` with the bound address (port 0 picks a
/// free one).
pub async fn serve(
    engine: Arc<Engine>,
    tenant: String,
    config: &ServerConfig,
    on_bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    config.validate()?;
    access(&engine, config)?;
    // The text rules compile on first use; paying for that now keeps it off the first request.
    Engine::warm_up();
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServerError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(ServerError::Serve)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let metrics = Arc::new(metrics::Metrics::default());
    let worker = config.jobs.map(|worker| {
        let engine = Arc::clone(&engine);
        tokio::spawn(worker.run(engine, Arc::clone(&metrics), stop_rx.clone()))
    });
    on_bound(addr);
    let mut http_stop = stop_rx;
    let mcp_stop = tokio_util::sync::CancellationToken::new();
    let app = router(engine, tenant, config, metrics, mcp_stop.clone())?;
    let stopping = async move {
        tokio::select! {
            () = shutdown => {}
            _ = http_stop.wait_for(|stopped| *stopped) => {}
        }
        // Open MCP streams would keep their connections, and so the shutdown, waiting.
        mcp_stop.cancel();
    };
    listen::serve_connections(listener, app, config.header_timeout, stopping).await;
    // The HTTP side has drained; let the worker finish its round and stop.
    let _ = stop_tx.send(true);
    if let Some(worker) = worker {
        if let Err(error) = worker.await {
            eprintln!("the job worker stopped abnormally: {error}");
        }
    }
    Ok(())
}

/// [`serve`] on a runtime of its own until SIGINT or SIGTERM: what `mnemos serve` runs.
pub fn run_until_signal(
    engine: Arc<Engine>,
    tenant: String,
    config: &ServerConfig,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    runtime.block_on(serve(engine, tenant, config, on_bound, shutdown_signal()))
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        // If the handler cannot be installed, only SIGTERM stops the server.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    #[tokio::test]
    async fn a_slow_request_is_answered_with_the_timeout_error() {
        let app: Router = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    "done"
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_millis(10),
                time_limit,
            ));
        let request = Request::get("/slow")
            .body(Body::empty())
            .unwrap_or_default();
        let response = app.oneshot(request).await.unwrap_or_default();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(body["error"]["code"], "timeout");
    }
}
