//! The `/v1` routes. Every handler parses its request into engine types, runs the engine call
//! off the async side (the engine embeds and does SQLite IO; see `params::blocking`), and
//! converts the result into wire types. Every request acts inside its caller's tenant
//! ([`Tenant`], from the API key; see `auth`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use mnemos_core::defaults::{DEFAULT_AGENT, DEFAULT_BUDGET, DEFAULT_SESSION};
use mnemos_core::{JobId, MemoryFilter, MemoryPatch, Page, Scope, StateFilter, UserKey};
use mnemos_engine::{
    ForgetMatching, NewTurn, RecallRequest, SearchRequest, View, ViewKind, MAX_REQUEST_KEY_LEN,
};
use mnemos_inspect::{Browse, Inspect};

use crate::auth::{Admin, Tenant};
use crate::dto::*;
use crate::error::ApiError;
use crate::extract::{Body, Params, QueryParams, RequestDeadline};
use crate::params::{
    blocking, cursor, from_query, kind_list, kinds, known_user, list_query, memory_id, memory_ids,
    metadata_pairs, named, page, sort, text_filter,
};
use crate::responses::{Errors, ADD, BODY, CHANGE, KEYED, KEY_ID, QUERY, TENANT, USER};
use crate::routes_inspect as inspect;
pub use crate::state::AppState;
pub(crate) use crate::state::{ApiResult, Json, Shared};

/// What a forget records when the request gives no reason.
pub(crate) const DEFAULT_FORGET_REASON: &str = "forgotten on request";
/// Turns one request may add (bigger imports go through several requests).
pub const MAX_TURNS_PER_REQUEST: usize = 1000;

/// The route table: every route the server serves, each named once, by its handler. A
/// handler's `#[utoipa::path]` holds its method and path, and `routes!` builds both the axum
/// route and the route's part of the OpenAPI document from it ([`crate::openapi::document`]),
/// so the two cannot drift. `/v1` routes (`versioned`) take an API key (see `auth`); the others
/// carry no user data and need none. Listing order is the document's path order.
pub(crate) fn table(versioned: bool) -> OpenApiRouter<Arc<AppState>> {
    if !versioned {
        return OpenApiRouter::new()
            .routes(routes!(crate::healthz))
            .routes(routes!(crate::readyz))
            .routes(routes!(crate::render_metrics))
            .routes(routes!(crate::openapi::serve));
    }
    OpenApiRouter::new()
        .routes(routes!(presets))
        .routes(routes!(users))
        .routes(routes!(add_turns))
        .routes(routes!(end_session))
        .routes(routes!(recall))
        .routes(routes!(search))
        .routes(routes!(list))
        .routes(routes!(get_memory, update, forget))
        .routes(routes!(forget_matching))
        .routes(routes!(history))
        .routes(routes!(inspect::access))
        .routes(routes!(inspect::derived))
        .routes(routes!(inspect::turn))
        .routes(routes!(inspect::overview))
        .routes(routes!(inspect::retention))
        .routes(routes!(purge))
        .routes(routes!(stats))
        .routes(routes!(jobs))
        .routes(routes!(retry_job))
        .routes(routes!(view))
        .routes(routes!(create_key, list_keys))
        .routes(routes!(revoke_key))
}

impl AppState {
    /// The caller's user, or 404 when nothing of theirs is stored (reads never create users).
    pub(crate) fn known_user(&self, tenant: &Tenant, user: &str) -> Result<UserKey, ApiError> {
        known_user(&self.engine, tenant.user(user)?)
    }
}

/// List the presets.
///
/// Every preset (a way of storing and recalling memory) with its parameters and their
/// defaults. An agent's preset is chosen in the server's configuration.
#[utoipa::path(
    get,
    path = "/v1/presets",
    operation_id = "list_presets",
    tag = "presets",
    responses(
        (status = 200, description = "Every preset.", body = Vec<PresetOut>),
        Errors<KEYED>,
    ),
    security(("bearer" = [])),
)]
async fn presets(State(app): Shared) -> Json<Vec<PresetOut>> {
    // The presets this server's engine can build: those of the factory it was given.
    let registry = app.engine.presets().registry();
    Json(registry.iter().map(PresetOut::from).collect())
}

/// List your users.
///
/// The users of the caller's tenant that have anything stored.
#[utoipa::path(
    get,
    path = "/v1/users",
    operation_id = "list_users",
    tag = "users",
    responses(
        (status = 200, description = "The tenant's users.", body = UsersResponse),
        Errors<TENANT>,
    ),
    security(("bearer" = [])),
)]
async fn users(State(app): Shared, tenant: Tenant) -> ApiResult<UsersResponse> {
    blocking(move || {
        let users = app.engine.users()?;
        Ok(Json(UsersResponse {
            users: users
                .into_iter()
                .filter(|u| u.tenant == tenant.0)
                .map(|u| u.user)
                .collect(),
        }))
    })
    .await
}

/// Turn keys from the request's `Idempotency-Key`: a retried request finds its turns stored.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(value) => {
            let key = value
                .to_str()
                .map_err(|_| ApiError::invalid("Idempotency-Key must be visible ASCII"))?;
            if key.is_empty() || key.len() > MAX_REQUEST_KEY_LEN {
                return Err(ApiError::invalid(format!(
                    "Idempotency-Key must be 1 to {MAX_REQUEST_KEY_LEN} characters"
                )));
            }
            Ok(Some(key.to_string()))
        }
    }
}

fn new_turns(
    tenant: &Tenant,
    user: &str,
    request: AddTurnsRequest,
) -> Result<Vec<NewTurn>, ApiError> {
    if request.turns.is_empty() {
        return Err(ApiError::invalid("turns: at least one turn is needed"));
    }
    if request.turns.len() > MAX_TURNS_PER_REQUEST {
        return Err(ApiError::invalid(format!(
            "turns: at most {MAX_TURNS_PER_REQUEST} per request, got {}",
            request.turns.len()
        )));
    }
    let agent = request.agent.as_deref().unwrap_or(DEFAULT_AGENT);
    let session = request.session.as_deref().unwrap_or(DEFAULT_SESSION);
    let scope = Scope::new(&tenant.0, user, agent, session)?;
    request
        .turns
        .into_iter()
        .enumerate()
        .map(|(i, turn)| {
            let time = turn
                .time
                .as_deref()
                .map(|t| parse_time(&format!("turns[{i}].time"), t))
                .transpose()?;
            let mut new = NewTurn::user(scope.clone(), turn.text);
            new.role = turn.role.into();
            new.speaker = turn.speaker;
            new.time = time;
            new.key = turn.key;
            new.metadata = turn.metadata;
            Ok(new)
        })
        .collect()
}

/// Store turns of a conversation.
///
/// Stores the turns in order (1 to 1000 per request) and queues the derived work they cause
/// (summaries, persona updates…), which `mnemos serve` runs in the background. A user is
/// created by their first turn. A turn with a `key` is stored once per user: sending it again
/// reports `duplicate` and writes nothing; the same key with another text is `409 conflict`.
/// A request with one bad turn is refused whole.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/turns",
    operation_id = "add_turns",
    tag = "turns",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("Idempotency-Key" = Option<String>, Header, nullable = false, description = "Makes a retried request create nothing new: turns without a `key` get `idem:<header>#<index>` (1 to 200 visible ASCII characters)."),
    ),
    request_body = AddTurnsRequest,
    responses(
        (status = 201, description = "The turns were stored; each entry says `added` or `duplicate`.", body = AddTurnsResponse),
        Errors<ADD>,
    ),
    security(("bearer" = [])),
)]
async fn add_turns(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    headers: HeaderMap,
    Body(request): Body<AddTurnsRequest>,
) -> Result<(StatusCode, Json<AddTurnsResponse>), ApiError> {
    let idempotency = idempotency_key(&headers)?;
    let engine = Arc::clone(&app.engine);
    let report = blocking(move || {
        let turns = new_turns(&tenant, &user, request)?;
        // The engine gives keyless turns the request's key and refuses a reused one (409).
        Ok(engine.add_request(turns, idempotency.as_deref())?)
    })
    .await?;
    // Wire types are built after the blocking work: its time is the engine's alone
    // (see `timing`).
    let added = report.turns.iter().filter(|t| !t.is_duplicate()).count();
    let duplicate = report.turns.len() - added;
    app.metrics.record_turns(added as u64, duplicate as u64);
    app.metrics.record_jobs(&report.jobs);
    Ok((StatusCode::CREATED, Json((&report).into())))
}

/// End a session.
///
/// Runs the work the agent's preset does when a session closes (e.g. a session summary) and
/// reports what it did.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/sessions/{session}/end",
    operation_id = "end_session",
    tag = "turns",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("session" = String, Path, description = "The session to end."),
        AgentQuery,
    ),
    responses(
        (status = 200, description = "The derived work that ran.", body = JobReportOut),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn end_session(
    State(app): Shared,
    tenant: Tenant,
    Params((user, session)): Params<(String, String)>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<JobReportOut> {
    blocking(move || {
        app.known_user(&tenant, &user)?;
        let agent = from_query(named("agent", query.agent))?;
        let agent = agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let scope = Scope::new(&tenant.0, &user, agent, &session)?;
        let report = app.engine.end_session(&scope)?;
        app.metrics.record_jobs(&report);
        Ok(Json((&report).into()))
    })
    .await
}

/// Recall context for a prompt.
///
/// The agent's preset builds the context for `query` within the token budget: `text` goes into
/// the LLM prompt; `items` say which memories it holds, with their scores and provenance. A user
/// with nothing stored gets an empty context.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/recall",
    operation_id = "recall",
    tag = "retrieval",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    request_body = RecallBody,
    responses(
        (status = 200, description = "The context.", body = RecallResponse),
        Errors<BODY>,
    ),
    security(("bearer" = [])),
)]
async fn recall(
    State(app): Shared,
    tenant: Tenant,
    RequestDeadline(deadline): RequestDeadline,
    Params(user): Params<String>,
    Body(body): Body<RecallBody>,
) -> ApiResult<RecallResponse> {
    let context = blocking(move || {
        let key = tenant.user(&user)?;
        let mut request = RecallRequest::new(body.query, body.budget.unwrap_or(DEFAULT_BUDGET));
        request.deadline = deadline;
        request.session = named("session", body.session)?;
        request.as_of = crate::params::as_of(body.as_of.as_deref())?;
        request.min_relevance = crate::params::min_relevance(body.min_relevance)?;
        let agent = named("agent", body.agent)?;
        let agent = agent.as_deref().unwrap_or(DEFAULT_AGENT);
        Ok(app.engine.recall(&key, agent, &request)?)
    })
    .await?;
    Ok(Json((&context).into()))
}

/// Search memories.
///
/// Ranked memories for `query`, each with its score and an explanation of why it ranked there
/// (lexical and dense ranks, fusion, re-rankers). A user with nothing stored gets no hits.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/search",
    operation_id = "search",
    tag = "retrieval",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    request_body = SearchBody,
    responses(
        (status = 200, description = "The hits, best first.", body = SearchResponse),
        Errors<BODY>,
    ),
    security(("bearer" = [])),
)]
async fn search(
    State(app): Shared,
    tenant: Tenant,
    RequestDeadline(deadline): RequestDeadline,
    Params(user): Params<String>,
    Body(body): Body<SearchBody>,
) -> ApiResult<SearchResponse> {
    let results = blocking(move || {
        let mut request = SearchRequest::new(tenant.user(&user)?, body.query);
        request.deadline = deadline;
        request.top_k = body.top_k;
        request.token_budget = body.budget;
        request.filter.kinds = kinds(body.kinds.iter().map(String::as_str))?;
        request.filter.agent = named("agent", body.agent)?;
        request.filter.session = named("session", body.session)?;
        request.include_superseded = body.include_superseded.unwrap_or(false);
        request.as_of = crate::params::as_of(body.as_of.as_deref())?;
        request.min_relevance = crate::params::min_relevance(body.min_relevance)?;
        Ok(app.engine.search(&request)?)
    })
    .await?;
    Ok(Json((&results).into()))
}

fn list_filter(query: &ListQuery) -> Result<MemoryFilter, ApiError> {
    let state = match query.state.as_deref() {
        None | Some("active") => StateFilter::Active,
        Some("forgotten") => StateFilter::Forgotten,
        Some("all") => StateFilter::All,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "state: '{other}' is not one of active, forgotten, all"
            )))
        }
    };
    Ok(MemoryFilter {
        kinds: kind_list(query.kind.as_deref())?,
        agent: named("agent", query.agent.clone())?,
        session: named("session", query.session.clone())?,
        state,
        metadata: metadata_pairs(&query.meta)?,
        created_since: query
            .since
            .as_deref()
            .map(|t| parse_time("since", t))
            .transpose()?,
        created_before: query
            .until
            .as_deref()
            .map(|t| parse_time("until", t))
            .transpose()?,
        validity: match (crate::params::as_of(query.as_of.as_deref())?, query.current) {
            (Some(at), _) => mnemos_core::Validity::At(at),
            (None, Some(true)) => mnemos_core::Validity::Current,
            (None, _) => mnemos_core::Validity::Any,
        },
    })
}

/// What a listing's query asks for, and which page.
fn browsing(query: &ListQuery) -> Result<(Browse, Page), ApiError> {
    let browse = Browse {
        filter: list_filter(query)?,
        text: text_filter(query.q.as_deref())?,
        sort: sort(query.sort.as_deref())?,
    };
    Ok((browse, page(query.cursor.as_deref(), query.limit)?))
}

/// List memories.
///
/// A page of the user's memories, oldest first (or `sort`ed), filtered by kind, state, agent,
/// session, creation time, metadata (`meta`, repeatable) and text (`q`). `total` counts every
/// match. Pass `next_cursor` as `cursor` for the next page.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/memories",
    operation_id = "list_memories",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ListQuery,
    ),
    responses(
        (status = 200, description = "One page.", body = MemoryPage),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn list(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<MemoryPage> {
    let query = list_query(raw.as_deref())?;
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let (browse, page) = from_query(browsing(&query))?;
        let paged = app.engine.browse(&key, &browse, page)?;
        Ok(Json(MemoryPage {
            memories: paged.items.iter().map(MemoryOut::from).collect(),
            total: paged.total,
            next_cursor: paged.next_offset.map(cursor),
        }))
    })
    .await
}

/// Get a memory.
///
/// The memory's current version. A forgotten memory is still shown, with `state` `forgotten`
/// and the reason.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/memories/{id}",
    operation_id = "get_memory",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
    ),
    responses(
        (status = 200, description = "The memory.", body = MemoryOut),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn get_memory(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
) -> ApiResult<MemoryOut> {
    blocking(move || {
        let memory = app.engine.get(&tenant.user(&user)?, memory_id(&id)?)?;
        Ok(Json((&memory).into()))
    })
    .await
}

/// Change a memory.
///
/// Replaces its text, its metadata or both; the old version stays in its history. A forgotten
/// memory is not changed: `409 conflict`.
#[utoipa::path(
    patch,
    path = "/v1/users/{user}/memories/{id}",
    operation_id = "update_memory",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
    ),
    request_body = UpdateBody,
    responses(
        (status = 200, description = "The new version.", body = MemoryOut),
        Errors<CHANGE>,
    ),
    security(("bearer" = [])),
)]
async fn update(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
    Body(body): Body<UpdateBody>,
) -> ApiResult<MemoryOut> {
    blocking(move || {
        let patch = MemoryPatch {
            text: body.text,
            metadata: body.metadata,
            ..MemoryPatch::default()
        };
        if patch.is_empty() {
            return Err(ApiError::invalid(
                "nothing to change: give text or metadata",
            ));
        }
        let memory = app
            .engine
            .update(&tenant.user(&user)?, memory_id(&id)?, &patch)?;
        Ok(Json((&memory).into()))
    })
    .await
}

/// Forget a memory.
///
/// Forgets it and the memories derived from it (summaries, profiles…), so no search or recall
/// returns them again; the history keeps the reason. Forgetting twice keeps the first reason.
#[utoipa::path(
    delete,
    path = "/v1/users/{user}/memories/{id}",
    operation_id = "forget_memory",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
        ForgetQuery,
    ),
    responses(
        (status = 200, description = "The forgotten memory.", body = ForgetResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn forget(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
    QueryParams(query): QueryParams<ForgetQuery>,
) -> ApiResult<ForgetResponse> {
    blocking(move || {
        let reason = query.reason.as_deref().unwrap_or(DEFAULT_FORGET_REASON);
        let report = app
            .engine
            .forget(&tenant.user(&user)?, memory_id(&id)?, reason)?;
        Ok(Json((&report).into()))
    })
    .await
}

/// Forget by description.
///
/// Selects the memories a description names ("my old address"): those the search finds at
/// least `min_relevance` relevant, those the rules of forget requests said in conversation
/// name (the description's words or their synonyms, the fact of the slot it names), and the
/// earlier values they replaced; at most `limit`, most relevant first. Without `confirm` it
/// only lists them and writes nothing. With `confirm` it forgets the same selection in one
/// write, each with the memories derived from it, the reason kept in their history; send the
/// `ids` the dry run listed to forget only those. The description is not stored.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/forget",
    operation_id = "forget_matching",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    request_body = ForgetMatchBody,
    responses(
        (status = 200, description = "What was selected and, confirmed, forgotten.", body = ForgetMatchResponse),
        Errors<BODY>,
    ),
    security(("bearer" = [])),
)]
async fn forget_matching(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    Body(body): Body<ForgetMatchBody>,
) -> ApiResult<ForgetMatchResponse> {
    blocking(move || {
        let reason = body.reason.as_deref().unwrap_or(DEFAULT_FORGET_REASON);
        let mut request = ForgetMatching::new(body.query, reason);
        request.confirm = body.confirm.unwrap_or(false);
        request.limit = body.limit.unwrap_or(request.limit);
        request.agent = named("agent", body.agent)?;
        request.ids = body.ids.as_deref().map(memory_ids).transpose()?;
        request.min_relevance = crate::params::min_relevance(body.min_relevance)?;
        let report = app.engine.forget_matching(&tenant.user(&user)?, &request)?;
        Ok(Json((&report).into()))
    })
    .await
}

/// A memory's history.
///
/// Every version of the memory, oldest first: created, updated, forgotten (with the reason)
/// and restored.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/memories/{id}/history",
    operation_id = "memory_history",
    tag = "memories",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The memory's id (from a listing, a search or an add)."),
    ),
    responses(
        (status = 200, description = "Every version.", body = Vec<HistoryEntryOut>),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn history(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
) -> ApiResult<Vec<HistoryEntryOut>> {
    blocking(move || {
        let entries = app.engine.history(&tenant.user(&user)?, memory_id(&id)?)?;
        Ok(Json(entries.iter().map(HistoryEntryOut::from).collect()))
    })
    .await
}

/// Purge a user.
///
/// Deletes every turn, memory, history entry, vector and job of the user, for good.
#[utoipa::path(
    delete,
    path = "/v1/users/{user}",
    operation_id = "purge_user",
    tag = "users",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    responses(
        (status = 200, description = "What was deleted.", body = PurgeResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn purge(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
) -> ApiResult<PurgeResponse> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let report = app.engine.purge(&key)?;
        Ok(Json((&report).into()))
    })
    .await
}

/// A user's stats.
///
/// With `agent`: the agent's preset and its active memories by kind. Without: the user's
/// active memories by kind over every agent, and each agent's preset and memories.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/stats",
    operation_id = "user_stats",
    tag = "users",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        AgentQuery,
    ),
    responses(
        (status = 200, description = "The stats.", body = StatsResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn stats(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<StatsResponse> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        // Without an agent, every agent's: a user's memories may sit under any agent.
        match from_query(named("agent", query.agent))? {
            Some(agent) => Ok(Json((&app.engine.stats(&key, &agent)?).into())),
            None => Ok(Json((&app.engine.stats_by_agent(&key)?).into())),
        }
    })
    .await
}

/// List unfinished jobs.
///
/// The user's derived jobs that have not succeeded: pending, failed (tried again) and stuck
/// (failed too often; only a retry runs them again).
#[utoipa::path(
    get,
    path = "/v1/users/{user}/jobs",
    operation_id = "list_jobs",
    tag = "jobs",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
    ),
    responses(
        (status = 200, description = "The jobs.", body = Vec<JobOut>),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn jobs(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
) -> ApiResult<Vec<JobOut>> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let jobs = app.engine.pending_jobs(Some(&key))?;
        Ok(Json(jobs.iter().map(JobOut::from).collect()))
    })
    .await
}

/// Retry a job.
///
/// Runs a job again now, typically a stuck one, and reports what it did.
#[utoipa::path(
    post,
    path = "/v1/users/{user}/jobs/{id}/retry",
    operation_id = "retry_job",
    tag = "jobs",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("id" = String, Path, description = "The job's id (from the job list)."),
    ),
    responses(
        (status = 200, description = "The derived work that ran.", body = JobReportOut),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn retry_job(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
) -> ApiResult<JobReportOut> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let id: JobId = id
            .parse()
            .map_err(|_| ApiError::not_found(format!("no job '{id}'")))?;
        let report = app.engine.retry_job(&key, id)?;
        Ok(Json((&report).into()))
    })
    .await
}

/// A view of a user.
///
/// What the agent's preset knows about the user, as text and as data: `persona` (who they
/// are), `timeline` (what happened when) or `chains` (memory chains per category, with what
/// calibration superseded). Other names are 404.
#[utoipa::path(
    get,
    path = "/v1/users/{user}/views/{view}",
    operation_id = "get_view",
    tag = "users",
    params(
        ("user" = String, Path, description = "The user: a name of your choosing, unique within your tenant (1 to 256 bytes, no control characters)."),
        ("view" = String, Path, description = "`persona`, `timeline` or `chains`."),
        AgentQuery,
    ),
    responses(
        (status = 200, description = "The view.", body = ViewResponse),
        Errors<USER>,
    ),
    security(("bearer" = [])),
)]
async fn view(
    State(app): Shared,
    tenant: Tenant,
    Params((user, view)): Params<(String, String)>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<ViewResponse> {
    let (kind, name) = match view.as_str() {
        "persona" => (ViewKind::Persona, "persona"),
        "timeline" => (ViewKind::Timeline, "timeline"),
        "chains" => (ViewKind::Chains, "chains"),
        other => {
            return Err(ApiError::not_found(format!(
                "no view '{other}' (persona, timeline, chains)"
            )))
        }
    };
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let agent = from_query(named("agent", query.agent))?;
        let shown: View = app.engine.view(&key, agent.as_deref(), kind)?;
        let text = mnemos_render::view(&key, agent.as_deref(), &shown);
        Ok(Json(ViewResponse {
            view: name,
            text,
            data: (&shown).into(),
        }))
    })
    .await
}

/// Create an API key (admin key only).
///
/// Makes a key that acts in `tenant`. The answer is the only place its secret is shown. Needs
/// the admin key (`MNEMOS_ADMIN_KEY`); a tenant's key is refused with 403.
#[utoipa::path(
    post,
    path = "/v1/keys",
    operation_id = "create_key",
    tag = "keys",
    request_body = CreateKeyBody,
    responses(
        (status = 201, description = "The key, with its secret.", body = CreatedKey),
        Errors<BODY>,
    ),
    security(("bearer" = [])),
)]
async fn create_key(
    State(app): Shared,
    _: Admin,
    Body(body): Body<CreateKeyBody>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    blocking(move || {
        let name = body.name.as_deref().unwrap_or("key");
        let made = app.engine.create_api_key(&body.tenant, name)?;
        // The first key turns "keys required" on: do not wait for the cache to notice.
        app.auth.forget_cached();
        Ok((
            StatusCode::CREATED,
            Json(CreatedKey {
                key: (&made.key).into(),
                secret: made.secret,
            }),
        ))
    })
    .await
}

/// List API keys (admin key only).
///
/// Every key, or one tenant's, without secrets; revoked keys have `revoked`. Needs the admin
/// key (`MNEMOS_ADMIN_KEY`); a tenant's key is refused with 403.
#[utoipa::path(
    get,
    path = "/v1/keys",
    operation_id = "list_keys",
    tag = "keys",
    params(
        KeysQuery,
    ),
    responses(
        (status = 200, description = "The keys.", body = Vec<ApiKeyOut>),
        Errors<QUERY>,
    ),
    security(("bearer" = [])),
)]
async fn list_keys(
    State(app): Shared,
    _: Admin,
    QueryParams(query): QueryParams<KeysQuery>,
) -> ApiResult<Vec<ApiKeyOut>> {
    blocking(move || {
        let tenant = from_query(named("tenant", query.tenant))?;
        let keys = app.engine.api_keys(tenant.as_deref())?;
        Ok(Json(keys.iter().map(ApiKeyOut::from).collect()))
    })
    .await
}

/// Revoke an API key (admin key only).
///
/// Requests with the key are refused from now on (by other servers on the same database
/// within 2 s). Revoking twice keeps the first time. Needs the admin key (`MNEMOS_ADMIN_KEY`);
/// a tenant's key is refused with 403.
#[utoipa::path(
    delete,
    path = "/v1/keys/{id}",
    operation_id = "revoke_key",
    tag = "keys",
    params(
        ("id" = String, Path, description = "The key's id (from the key list)."),
    ),
    responses(
        (status = 200, description = "The revoked key.", body = ApiKeyOut),
        Errors<KEY_ID>,
    ),
    security(("bearer" = [])),
)]
async fn revoke_key(
    State(app): Shared,
    _: Admin,
    Params(id): Params<String>,
) -> ApiResult<ApiKeyOut> {
    blocking(move || {
        let id = id
            .parse()
            .map_err(|_| ApiError::not_found(format!("no API key '{id}'")))?;
        let key = app.engine.revoke_api_key(id)?;
        app.auth.forget_cached();
        Ok(Json((&key).into()))
    })
    .await
}
