//! What every handler shares: the application state (the engine, who may call, the metrics)
//! and the shapes of a handler's state and answer.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;

use mnemos_engine::Engine;

use crate::auth::Auth;
use crate::error::ApiError;
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
