//! The inspector's read routes: a user's overview and retention over rounds, a memory's access
//! log and what was derived from it, and a turn among its neighbours. They only read.

use mnemos_inspect::Inspect;

use crate::auth::Tenant;
use crate::dto::MemoryOut;
use crate::dto_inspect::{
    AccessLogResponse, DerivedResponse, OverviewResponse, RetentionQuery, RetentionResponse,
    TurnContextResponse, TurnQuery,
};
use crate::extract::{Params, QueryParams};
use crate::params::{blocking, from_query, memory_id, named, turn_id, within};
use crate::responses::{Errors, USER};
use crate::state::{ApiResult, Json, Shared};

/// Turns shown on each side of a turn when the request names no `around`.
const DEFAULT_AROUND: usize = 3;
/// Retention points when the request names no `points`.
const DEFAULT_POINTS: usize = 200;

/// A user's overview.
///
/// Turns, sessions and agents, memories by kind (active and forgotten; every kind with at
/// least one memory), the latest activity, and unfinished derived jobs by state.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/overview",
    operation_id = "user_overview",
    tag = "users",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    responses(
        (status = 200, description = "The overview.", body = OverviewResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn overview(
    axum::extract::State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
) -> ApiResult<OverviewResponse> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let overview = app.engine.overview(&key)?;
        Ok(Json(OverviewResponse::new(user, &overview)))
    })
    .await
}

/// A memory's access log.
///
/// Every time a search or recall retrieved the memory, newest first, with its rank there.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/memories/{id}/access",
    operation_id = "memory_access",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
    ),
    responses(
        (status = 200, description = "The retrievals, newest first.", body = AccessLogResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn access(
    axum::extract::State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
) -> ApiResult<AccessLogResponse> {
    blocking(move || {
        let memory = app.engine.get(&tenant.user(&user)?, memory_id(&id)?)?;
        Ok(Json((&memory).into()))
    })
    .await
}

/// Memories derived from a memory.
///
/// For a turn's memory: the memories of other kinds built from that turn (summaries,
/// profiles…), active and forgotten, oldest first — what forgetting the turn takes along.
/// Empty for a memory of another kind.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/memories/{id}/derived",
    operation_id = "derived_memories",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
    ),
    responses(
        (status = 200, description = "The derived memories, oldest first.", body = DerivedResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn derived(
    axum::extract::State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
) -> ApiResult<DerivedResponse> {
    blocking(move || {
        let memories = app
            .engine
            .derived_memories(&tenant.user(&user)?, memory_id(&id)?)?;
        Ok(Json(DerivedResponse {
            memories: memories.iter().map(MemoryOut::from).collect(),
        }))
    })
    .await
}

/// A turn in its dialogue.
///
/// The turn with up to `around` turns of its agent and session on each side (ordered by
/// round, time, then id), each with its own memory's id when it has one.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/turns/{id}",
    operation_id = "get_turn",
    tag = "turns",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The turn's id (from an add, or a memory's `provenance`)."),
        TurnQuery,
    ),
    responses(
        (status = 200, description = "The turn and its neighbours.", body = TurnContextResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn turn(
    axum::extract::State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
    QueryParams(query): QueryParams<TurnQuery>,
) -> ApiResult<TurnContextResponse> {
    let around = within("around", query.around, DEFAULT_AROUND, 0..=50)?;
    blocking(move || {
        let context = app
            .engine
            .turn_in_context(&tenant.user(&user)?, turn_id(&id)?, around)?;
        Ok(Json((&context).into()))
    })
    .await
}

/// Retention over rounds.
///
/// Memories created, forgotten and still active, cumulative per round: one point per round
/// where something changed, evenly thinned to at most `points` (the first and last change
/// always kept); and the forgotten ones by cause (`request`, `derived`, or the preset).
#[utoipa::path(
    get,
    path = "/v1/users/{user}/retention",
    operation_id = "user_retention",
    tag = "users",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        RetentionQuery,
    ),
    responses(
        (status = 200, description = "The series.", body = RetentionResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn retention(
    axum::extract::State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    QueryParams(query): QueryParams<RetentionQuery>,
) -> ApiResult<RetentionResponse> {
    let points = within("points", query.points, DEFAULT_POINTS, 2..=2000)?;
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let agent = from_query(named("agent", query.agent))?;
        let retention = app.engine.retention(&key, agent.as_deref(), points)?;
        Ok(Json((&retention).into()))
    })
    .await
}
