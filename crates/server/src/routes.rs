//! The `/v1` routes. Every handler parses its request into engine types, runs the engine call
//! on the blocking pool (the engine embeds and does SQLite IO; the async workers stay free),
//! and converts the result into wire types. Every request acts inside its caller's tenant
//! ([`Tenant`], from the API key; see `auth`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{delete, get, post};
use axum::{Json, Router};

use mnemos_core::{
    JobId, KindTag, MemoryFilter, MemoryId, MemoryPatch, Page, Scope, StateFilter, UserKey,
};
use mnemos_engine::{Engine, NewTurn, RecallRequest, SearchRequest, View, ViewKind};

use crate::auth::{Admin, Auth, Tenant};
use crate::dto::*;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{Body, Params, QueryParams};
use crate::metrics::Metrics;

/// What every handler shares.
pub struct AppState {
    pub engine: Arc<Engine>,
    /// Who may call, and in which tenant (every handler's users come from the caller's tenant).
    pub auth: Auth,
    pub metrics: Arc<Metrics>,
}

type Shared = State<Arc<AppState>>;
type ApiResult<T> = Result<Json<T>, ApiError>;

const DEFAULT_AGENT: &str = "default";
const DEFAULT_SESSION: &str = "default";
const DEFAULT_BUDGET: usize = 1024;
const DEFAULT_PAGE: usize = 50;
/// Turns one request may add (bigger imports go through several requests).
pub const MAX_TURNS_PER_REQUEST: usize = 1000;

pub fn v1() -> Router<Arc<AppState>> {
    Router::new()
        .route("/presets", get(presets))
        .route("/users", get(users))
        .route("/users/{user}", delete(purge))
        .route("/users/{user}/turns", post(add_turns))
        .route("/users/{user}/sessions/{session}/end", post(end_session))
        .route("/users/{user}/recall", post(recall))
        .route("/users/{user}/search", post(search))
        .route("/users/{user}/memories", get(list))
        .route(
            "/users/{user}/memories/{id}",
            get(get_memory).patch(update).delete(forget),
        )
        .route("/users/{user}/memories/{id}/history", get(history))
        .route("/users/{user}/stats", get(stats))
        .route("/users/{user}/jobs", get(jobs))
        .route("/users/{user}/jobs/{id}/retry", post(retry_job))
        .route("/users/{user}/views/{view}", get(view))
        .route("/keys", get(list_keys).post(create_key))
        .route("/keys/{id}", delete(revoke_key))
}

/// Run an engine call on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("request task failed: {e}")))?
}

impl AppState {
    /// The caller's user, or 404 when nothing of theirs is stored (reads never create users).
    fn known_user(&self, tenant: &Tenant, user: &str) -> Result<UserKey, ApiError> {
        let key = tenant.user(user)?;
        if self.engine.has_user(&key)? {
            Ok(key)
        } else {
            Err(ApiError::not_found(format!("no user '{user}'")))
        }
    }
}

/// An optional agent or session name from a request, checked like stored names are (an empty
/// name would silently match nothing).
fn named(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    if let Some(name) = &value {
        mnemos_core::validate_name(field, name)?;
    }
    Ok(value)
}

fn memory_id(text: &str) -> Result<MemoryId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::not_found(format!("no memory '{text}'")))
}

async fn presets() -> Json<Vec<PresetOut>> {
    Json(
        mnemos_engine::presets::registry()
            .iter()
            .map(PresetOut::from)
            .collect(),
    )
}

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
            if key.is_empty() || key.len() > 200 {
                return Err(ApiError::invalid(
                    "Idempotency-Key must be 1 to 200 characters",
                ));
            }
            Ok(Some(key.to_string()))
        }
    }
}

fn new_turns(
    tenant: &Tenant,
    user: &str,
    request: AddTurnsRequest,
    idempotency: Option<String>,
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
            let key = turn
                .key
                .or_else(|| idempotency.as_ref().map(|k| format!("idem:{k}#{i}")));
            let mut new = NewTurn::user(scope.clone(), turn.text);
            new.role = turn.role.into();
            new.speaker = turn.speaker;
            new.time = time;
            new.key = key;
            new.metadata = turn.metadata;
            Ok(new)
        })
        .collect()
}

/// A key names one turn: sending it again with other text is a mistake (a reused
/// `Idempotency-Key`, a key scheme that collides), answered with 409 instead of silently
/// keeping the first text.
fn reject_reused_keys(engine: &Engine, user: &UserKey, turns: &[NewTurn]) -> Result<(), ApiError> {
    let keys: Vec<String> = turns.iter().filter_map(|t| t.key.clone()).collect();
    if keys.is_empty() {
        return Ok(());
    }
    let stored = engine
        .reader()
        .store()
        .turns_by_keys(user, &keys)
        .map_err(mnemos_core::Error::from)?;
    for turn in turns {
        let Some(key) = &turn.key else { continue };
        if stored
            .iter()
            .any(|s| s.key.as_ref() == Some(key) && s.text != turn.text)
        {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("key '{key}' is already stored with another text: a retry must resend the same turns (use a new Idempotency-Key for a new request)"),
            ));
        }
    }
    Ok(())
}

async fn add_turns(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    headers: HeaderMap,
    Body(request): Body<AddTurnsRequest>,
) -> Result<(StatusCode, Json<AddTurnsResponse>), ApiError> {
    let idempotency = idempotency_key(&headers)?;
    blocking(move || {
        let turns = new_turns(&tenant, &user, request, idempotency)?;
        reject_reused_keys(&app.engine, &tenant.user(&user)?, &turns)?;
        let report = app.engine.add(turns)?;
        let added = report
            .turns
            .iter()
            .filter(|t| t.memory_id().is_some())
            .count();
        let duplicate = report.turns.len() - added;
        app.metrics.record_turns(added as u64, duplicate as u64);
        app.metrics.record_jobs(&report.jobs);
        Ok((StatusCode::CREATED, Json((&report).into())))
    })
    .await
}

async fn end_session(
    State(app): Shared,
    tenant: Tenant,
    Params((user, session)): Params<(String, String)>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<JobReportOut> {
    blocking(move || {
        app.known_user(&tenant, &user)?;
        let agent = query.agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let scope = Scope::new(&tenant.0, &user, agent, &session)?;
        let report = app.engine.end_session(&scope)?;
        app.metrics.record_jobs(&report);
        Ok(Json((&report).into()))
    })
    .await
}

async fn recall(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    Body(body): Body<RecallBody>,
) -> ApiResult<RecallResponse> {
    blocking(move || {
        let key = tenant.user(&user)?;
        let mut request = RecallRequest::new(body.query, body.budget.unwrap_or(DEFAULT_BUDGET));
        request.session = named("session", body.session)?;
        let agent = named("agent", body.agent)?;
        let agent = agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let context = app.engine.recall(&key, agent, &request)?;
        Ok(Json((&context).into()))
    })
    .await
}

fn kinds(names: &[String]) -> Result<Vec<KindTag>, ApiError> {
    names
        .iter()
        .map(|k| k.trim().parse::<KindTag>().map_err(ApiError::from))
        .collect()
}

async fn search(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    Body(body): Body<SearchBody>,
) -> ApiResult<SearchResponse> {
    blocking(move || {
        let mut request = SearchRequest::new(tenant.user(&user)?, body.query);
        request.top_k = body.top_k;
        request.token_budget = body.budget;
        request.filter.kinds = kinds(&body.kinds)?;
        request.filter.agent = named("agent", body.agent)?;
        request.filter.session = named("session", body.session)?;
        let results = app.engine.search(&request)?;
        Ok(Json((&results).into()))
    })
    .await
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
    let kind_names: Vec<String> = query
        .kind
        .as_deref()
        .map(|k| k.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    Ok(MemoryFilter {
        kinds: kinds(&kind_names)?,
        agent: named("agent", query.agent.clone())?,
        session: named("session", query.session.clone())?,
        state,
        metadata: BTreeMap::new(),
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
    })
}

/// Cursors are opaque to clients; today they hold the next offset.
fn page(query: &ListQuery) -> Result<Page, ApiError> {
    let offset = match query.cursor.as_deref() {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("o")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| ApiError::invalid(format!("cursor: '{cursor}' is not a cursor")))?,
    };
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > Page::MAX_LIMIT {
        return Err(ApiError::invalid(format!(
            "limit: must be 1 to {}",
            Page::MAX_LIMIT
        )));
    }
    Ok(Page { offset, limit })
}

async fn list(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> ApiResult<MemoryPage> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let filter = list_filter(&query)?;
        let paged = app.engine.list(&key, &filter, page(&query)?)?;
        Ok(Json(MemoryPage {
            memories: paged.items.iter().map(MemoryOut::from).collect(),
            total: paged.total,
            next_cursor: paged.next_offset.map(|n| format!("o{n}")),
        }))
    })
    .await
}

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

async fn forget(
    State(app): Shared,
    tenant: Tenant,
    Params((user, id)): Params<(String, String)>,
    QueryParams(query): QueryParams<ForgetQuery>,
) -> ApiResult<ForgetResponse> {
    blocking(move || {
        let reason = query.reason.as_deref().unwrap_or("forgotten on request");
        let report = app
            .engine
            .forget(&tenant.user(&user)?, memory_id(&id)?, reason)?;
        Ok(Json((&report).into()))
    })
    .await
}

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

async fn stats(
    State(app): Shared,
    tenant: Tenant,
    Params(user): Params<String>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<StatsResponse> {
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let agent = named("agent", query.agent)?;
        let stats = app
            .engine
            .stats(&key, agent.as_deref().unwrap_or(DEFAULT_AGENT))?;
        Ok(Json((&stats).into()))
    })
    .await
}

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

async fn view(
    State(app): Shared,
    tenant: Tenant,
    Params((user, view)): Params<(String, String)>,
    QueryParams(query): QueryParams<AgentQuery>,
) -> ApiResult<ViewResponse> {
    let (kind, name) = match view.as_str() {
        "persona" => (ViewKind::Persona, "persona"),
        "timeline" => (ViewKind::Timeline, "timeline"),
        other => {
            return Err(ApiError::not_found(format!(
                "no view '{other}' (persona, timeline)"
            )))
        }
    };
    blocking(move || {
        let key = app.known_user(&tenant, &user)?;
        let agent = named("agent", query.agent)?;
        let shown: View = app.engine.view(&key, agent.as_deref(), kind)?;
        let text = mnemos_engine::render::view(&key, agent.as_deref(), &shown);
        Ok(Json(ViewResponse { view: name, text }))
    })
    .await
}

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

async fn list_keys(
    State(app): Shared,
    _: Admin,
    QueryParams(query): QueryParams<KeysQuery>,
) -> ApiResult<Vec<ApiKeyOut>> {
    blocking(move || {
        let keys = app.engine.api_keys(query.tenant.as_deref())?;
        Ok(Json(keys.iter().map(ApiKeyOut::from).collect()))
    })
    .await
}

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
