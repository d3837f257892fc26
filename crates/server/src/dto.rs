//! Wire types: what requests carry and responses hold. They are the server's own, converted
//! from and to the engine's types here, so the engine can change without changing the API.
//! Times are ISO 8601 (UTC) strings; unknown request fields are errors.
//!
//! Every type also describes itself for the OpenAPI document (`ToSchema`, `IntoParams`): the
//! document is derived from the types the handlers use, so it cannot describe other fields.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::openapi::Object;
use utoipa::{IntoParams, ToSchema};

use mnemos_core::{
    Change, HistoryEntry, Hit, KindTag, Memory, MemoryState, Moment, PurgeReport, Role, Timestamp,
};
use mnemos_engine::{
    AddReport, Context, ContextItem, ForgetMatchReport, ForgetReport, JobReport, JobState,
    MechanismStats, PendingJob, PresetInfo, SearchResults, TurnStatus,
};

pub use crate::dto_inspect::ForgottenOut;
use crate::dto_inspect::{last_access, BreakdownOut, ScoresOut, ViewData};
use crate::error::ApiError;

/// `2023-05-08T13:56:00.000Z`.
pub fn iso(time: Timestamp) -> String {
    use chrono::{Datelike, Timelike};
    let Some(t) = chrono::DateTime::from_timestamp_millis(time.millis()) else {
        return time.millis().to_string();
    };
    // A search answer holds a few dozen times: writing the fields directly costs a fraction of
    // interpreting the format string each time. Years outside four digits keep chrono's own
    // spelling (a sign and more digits).
    if !(0..=9999).contains(&t.year()) {
        return t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    }
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.timestamp_subsec_millis()
    )
}

/// An RFC 3339 time from a request.
pub fn parse_time(field: &str, text: &str) -> Result<Timestamp, ApiError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| Timestamp::from_millis(t.timestamp_millis()))
        .map_err(|e| ApiError::invalid(format!("{field}: '{text}' is not an RFC 3339 time: {e}")))
}

// ---- closed sets of names, for the document ------------------------------------------------
// Fields that hold one of a few names are `&'static str` or `String` in Rust; their schemas list
// the names, taken from the engine's own lists where it has them.

/// A string that is one of `names`. (A schema made by a function replaces the field's whole
/// schema, doc comment included, so the description comes with it.)
fn one_of(description: &str, names: impl IntoIterator<Item = &'static str>) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names))
        .description(Some(description))
        .build()
}

/// A memory kind's name (`turn`, `summary`, …).
pub(crate) fn kind_schema() -> Object {
    one_of("The memory's kind.", KindTag::ALL.map(KindTag::as_str))
}

fn kinds_schema() -> utoipa::openapi::Array {
    ArrayBuilder::new()
        .items(kind_schema())
        .description(Some("Only these kinds; empty or absent: every kind."))
        .build()
}

fn memory_state_schema() -> Object {
    one_of(
        "`forgotten` memories are kept (with their history) but never searched or recalled.",
        ["active", "forgotten"],
    )
}

fn turn_status_schema() -> Object {
    one_of(
        "`added`, or `duplicate` when a turn with its key was stored before (nothing written).",
        ["added", "duplicate"],
    )
}

fn change_schema() -> Object {
    one_of(
        "What this version did.",
        ["created", "updated", "forgotten", "restored", "erased"],
    )
}

fn job_state_schema() -> Object {
    one_of(
        "`pending`: not tried yet; `failed`: failed, tried again; `stuck`: failed too often, \
         only a retry runs it.",
        [JobState::Pending, JobState::Failed, JobState::Stuck].map(JobState::as_str),
    )
}

fn list_state_schema() -> Object {
    one_of(
        "Which memories: `active` (default), `forgotten` or `all`.",
        ["active", "forgotten", "all"],
    )
}

fn view_schema() -> Object {
    one_of("The view shown.", ["persona", "timeline", "chains"])
}

fn store_kind_schema() -> Object {
    one_of("The kind of store.", ["sqlite", "postgres", "memory"])
}

fn vectors_schema() -> Object {
    one_of(
        "Where dense search runs: `store` or `in_process`.",
        ["store", "in_process"],
    )
}

fn health_schema() -> Object {
    one_of("`ok` (`/healthz`) or `ready` (`/readyz`).", ["ok", "ready"])
}

// ---- requests ----------------------------------------------------------------------------

/// Turns of a conversation to store (`POST /v1/users/{user}/turns`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTurnsRequest {
    /// The agent the turns were said to (default `default`).
    pub agent: Option<String>,
    /// The session they belong to (default `default`).
    pub session: Option<String>,
    /// In the order they were said; 1 to 1000 per request.
    #[schema(min_items = 1, max_items = 1000)]
    pub turns: Vec<TurnIn>,
}

/// One turn of a conversation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnIn {
    pub role: WireRole,
    /// What was said (not empty).
    pub text: String,
    /// Display name of the speaker, when known (e.g. `Caroline`).
    pub speaker: Option<String>,
    /// When it was said (RFC 3339); default: when it arrives.
    #[schema(format = DateTime)]
    pub time: Option<String>,
    /// A key unique per user: a turn whose key is stored is not added again.
    pub key: Option<String>,
    /// Free-form labels kept with the turn's memory.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// Who said a turn.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WireRole {
    User,
    Assistant,
    /// Anyone else in the conversation (a narrator, a third character).
    Other,
}

impl From<Role> for WireRole {
    fn from(role: Role) -> Self {
        match role {
            Role::User => WireRole::User,
            Role::Assistant => WireRole::Assistant,
            Role::Other => WireRole::Other,
        }
    }
}

impl From<WireRole> for Role {
    fn from(role: WireRole) -> Self {
        match role {
            WireRole::User => Role::User,
            WireRole::Assistant => Role::Assistant,
            WireRole::Other => Role::Other,
        }
    }
}

/// What to recall (`POST /v1/users/{user}/recall`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    /// What the context is for: the user's message or the agent's question.
    pub query: String,
    /// The agent whose preset builds the context (default `default`).
    pub agent: Option<String>,
    /// Approximate LLM tokens the context may use (default 1024).
    pub budget: Option<usize>,
    /// Only this session's memories.
    pub session: Option<String>,
    /// Answer about the past: what was valid then (a date, `2024-03-02`, meaning the end of
    /// that day UTC, or an RFC 3339 time). Absent: what is true now.
    pub as_of: Option<String>,
    /// Leave out memories (the default preset; the research presets only when given) less likely than this to be evidence for the query (`relevance`,
    /// 0 to 1). Default: the server's `retrieval.min_relevance` (0.003), under which a query
    /// about nothing the user said gets nothing; 0 keeps every hit.
    pub min_relevance: Option<f32>,
}

/// What to search for (`POST /v1/users/{user}/search`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    pub query: String,
    /// How many hits (default: the configured top-k).
    pub top_k: Option<usize>,
    /// Approximate LLM tokens the hits may use in total.
    pub budget: Option<usize>,
    /// Only these kinds (`turn`, `summary`, `persona`, …); empty: every kind.
    #[serde(default)]
    #[schema(schema_with = kinds_schema)]
    pub kinds: Vec<String>,
    /// Only memories of this agent.
    pub agent: Option<String>,
    /// Only memories of this session.
    pub session: Option<String>,
    /// Also return memories a later statement superseded, after every current one and marked
    /// (`superseded`, `memory.valid_to`, `memory.superseded_by`). Default false: what a search
    /// returns is true now.
    pub include_superseded: Option<bool>,
    /// Only memories valid at this moment (a date, `2024-03-02`, meaning the end of that day
    /// UTC, or an RFC 3339 time), superseded or not: questions about the past.
    pub as_of: Option<String>,
    /// Leave out memories less likely than this to be evidence for the query (`relevance`,
    /// 0 to 1). Default: the server's `retrieval.min_relevance` (0.003), under which a query
    /// about nothing the user said gets nothing; 0 keeps every hit.
    pub min_relevance: Option<f32>,
}

/// `GET /v1/users/{user}/memories` query parameters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Comma-separated kinds (`turn,summary`); default: every kind.
    pub kind: Option<String>,
    /// `active` (default), `forgotten` or `all`.
    #[param(schema_with = list_state_schema)]
    pub state: Option<String>,
    /// Only memories of this agent.
    pub agent: Option<String>,
    /// Only memories of this session.
    pub session: Option<String>,
    /// Created at or after this time (RFC 3339).
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Created before this time (RFC 3339).
    #[param(format = DateTime)]
    pub until: Option<String>,
    /// Page size, 1 to 10000 (default 50).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<usize>,
    /// Where the page starts: the `next_cursor` of the page before.
    pub cursor: Option<String>,
    /// `key=value`: only memories whose metadata holds exactly this; repeat it for several
    /// pairs (all must match).
    #[serde(default)]
    pub meta: Vec<String>,
    /// Only memories whose text holds this, ignoring case (not blank).
    pub q: Option<String>,
    /// `oldest` (default), `newest` or `importance` (highest first, memories without one
    /// last, ties newest first).
    #[param(schema_with = sort_schema)]
    pub sort: Option<String>,
    /// `true`: only memories still current (no `valid_to`; a superseded memory has one).
    pub current: Option<bool>,
    /// Only memories valid at this moment (a date, meaning the end of that day UTC, or an RFC
    /// 3339 time).
    pub as_of: Option<String>,
}

fn sort_schema() -> Object {
    one_of(
        "The order: `oldest` (default), `newest` or `importance` (highest first, memories \
         without one last, ties newest first).",
        mnemos_inspect::MemorySort::NAMES,
    )
}

/// What to change in a memory (`PATCH /v1/users/{user}/memories/{id}`); at least one field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    /// The new text.
    pub text: Option<String>,
    /// The new labels (they replace the old ones).
    pub metadata: Option<BTreeMap<String, String>>,
}

/// `DELETE /v1/users/{user}/memories/{id}` query parameters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ForgetQuery {
    /// Why (recorded in the memory's history; default "forgotten on request").
    pub reason: Option<String>,
}

/// What to forget by description (`POST /v1/users/{user}/forget`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetMatchBody {
    /// What to forget, in words ("my old address", "我的工资"); it is not stored.
    pub query: String,
    /// Why (recorded in each forgotten memory's history; default "forgotten on request").
    pub reason: Option<String>,
    /// `false` (default): a dry run, which lists what would be forgotten and writes nothing;
    /// `true`: forget it.
    pub confirm: Option<bool>,
    /// At most this many memories, the most relevant first (default 10).
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// Only this agent's memories.
    pub agent: Option<String>,
    /// Only these of the memories selected: the ids a dry run listed, so that nothing else is
    /// forgotten even when memories changed since. One that is no longer selected is skipped
    /// (`skipped`).
    #[schema(max_items = 100)]
    pub ids: Option<Vec<String>>,
    /// The relevance (0 to 1) a memory needs to be selected for its relevance alone (default
    /// 0.025, far above the search's).
    pub min_relevance: Option<f32>,
}

/// Query parameters naming one agent.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AgentQuery {
    /// The agent. Without it: every agent (stats, views), or `default` (ending a session).
    pub agent: Option<String>,
}

// ---- responses ---------------------------------------------------------------------------

/// When something happened: a time and the user's conversation round at that time.
#[derive(Debug, Serialize, ToSchema)]
pub struct MomentOut {
    #[schema(format = DateTime)]
    pub time: String,
    pub round: u64,
}

impl From<Moment> for MomentOut {
    fn from(m: Moment) -> Self {
        MomentOut {
            time: iso(m.time),
            round: m.round,
        }
    }
}

/// A memory: a stored turn or something derived from turns (a summary, a persona, …).
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryOut {
    pub id: String,
    #[schema(schema_with = kind_schema)]
    pub kind: String,
    pub text: String,
    pub agent: String,
    pub session: String,
    pub created: MomentOut,
    #[schema(schema_with = memory_state_schema)]
    pub state: &'static str,
    /// Why and when it was forgotten (only when `state` is `forgotten`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub forgotten: Option<ForgottenOut>,
    /// Starts at 1; every change adds one.
    pub version: u32,
    /// The turns it came from.
    pub provenance: Vec<String>,
    pub metadata: BTreeMap<String, String>,
    /// When it became true.
    #[schema(format = DateTime)]
    pub valid_from: String,
    /// When it stopped being true (absent while it holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub valid_to: Option<String>,
    /// The memory that replaced it: a later statement of a new value (absent while current).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub superseded_by: Option<String>,
    /// How many times its fact was stated (a repeat reinforces the memory; absent: once).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub times_said: Option<u32>,
    /// When its fact was last stated (absent: when it became true).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub last_said: Option<String>,
    /// Numbers presets attach to it (importance, strength…).
    pub scores: ScoresOut,
    /// How often a search or recall retrieved it.
    pub access_count: usize,
    /// Its latest retrieval (absent when never retrieved).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_access: Option<MomentOut>,
}

impl From<&Memory> for MemoryOut {
    fn from(m: &Memory) -> Self {
        let (state, forgotten) = match &m.state {
            MemoryState::Active => ("active", None),
            MemoryState::Forgotten { reason, at, cause } => {
                ("forgotten", Some(ForgottenOut::new(reason, cause, *at)))
            }
        };
        MemoryOut {
            id: m.id.to_string(),
            kind: m.kind.tag().as_str().to_string(),
            text: m.text.clone(),
            agent: m.scope.agent.clone(),
            session: m.scope.session.clone(),
            created: m.created.into(),
            state,
            forgotten,
            version: m.version,
            provenance: m.provenance.iter().map(ToString::to_string).collect(),
            metadata: m.metadata.clone(),
            valid_from: iso(m.valid_from),
            valid_to: m.valid_to.map(iso),
            superseded_by: m.superseded_by.map(|id| id.to_string()),
            times_said: m.metrics.times_said,
            last_said: m.metrics.last_said.map(iso),
            scores: (&m.metrics).into(),
            access_count: m.access.len(),
            last_access: last_access(m),
        }
    }
}

/// What became of the turns sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct AddTurnsResponse {
    /// One entry per turn sent, in order.
    pub turns: Vec<AddedTurnOut>,
    /// Derived jobs (summaries, persona updates…) the turns caused.
    pub jobs_enqueued: usize,
    /// Derived work that ran within the request (only when the engine runs jobs inline; under
    /// `mnemos serve` a background worker runs them).
    pub jobs: JobReportOut,
    /// What the turns' statements did to earlier memories (each also in that memory's history).
    pub changes: Vec<FactChangeOut>,
}

/// One earlier memory a new turn changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct FactChangeOut {
    /// `superseded` (a new value replaced it), `ended` (a negation), `corrected`,
    /// `reinforced` (said again) or `turn_superseded` (a turn all of whose facts were replaced).
    #[schema(schema_with = change_kind_schema)]
    pub kind: &'static str,
    /// The earlier memory.
    pub memory_id: String,
    /// What replaced, ended or repeated it.
    pub by: String,
}

fn change_kind_schema() -> Object {
    one_of(
        "What the new turn did to the earlier memory.",
        [
            "superseded",
            "ended",
            "corrected",
            "reinforced",
            "turn_superseded",
        ],
    )
}

impl From<&mnemos_engine::truth::FactChange> for FactChangeOut {
    fn from(c: &mnemos_engine::truth::FactChange) -> Self {
        use mnemos_engine::truth::ChangeKind;
        FactChangeOut {
            kind: match c.kind {
                ChangeKind::Superseded => "superseded",
                ChangeKind::Ended => "ended",
                ChangeKind::Corrected => "corrected",
                ChangeKind::Reinforced => "reinforced",
                ChangeKind::TurnSuperseded => "turn_superseded",
            },
            memory_id: c.memory.to_string(),
            by: c.by.to_string(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AddedTurnOut {
    pub turn_id: String,
    pub round: u64,
    /// `added`, or `duplicate` when a turn with its key was stored before.
    #[schema(schema_with = turn_status_schema)]
    pub status: &'static str,
    /// The turn's memory: written now, or for a `duplicate` the one stored the first time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub memory_id: Option<String>,
}

impl From<&AddReport> for AddTurnsResponse {
    fn from(report: &AddReport) -> Self {
        let turns = report
            .turns
            .iter()
            .map(|t| {
                let (status, memory_id) = match t.status {
                    TurnStatus::Added { memory_id } => ("added", Some(memory_id)),
                    TurnStatus::Duplicate { memory_id } => ("duplicate", memory_id),
                };
                AddedTurnOut {
                    turn_id: t.turn_id.to_string(),
                    round: t.round,
                    status,
                    memory_id: memory_id.map(|id| id.to_string()),
                }
            })
            .collect();
        AddTurnsResponse {
            turns,
            jobs_enqueued: report.jobs_enqueued,
            jobs: (&report.jobs).into(),
            changes: report.changes.iter().map(Into::into).collect(),
        }
    }
}

/// Derived work that ran.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobReportOut {
    pub ran: usize,
    pub failed: usize,
    pub memories_created: usize,
    pub memories_updated: usize,
    pub memories_forgotten: usize,
    pub errors: Vec<JobErrorOut>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobErrorOut {
    pub job_id: String,
    pub message: String,
    /// It gave up after repeated failures (retry it explicitly).
    pub stuck: bool,
}

impl From<&JobReport> for JobReportOut {
    fn from(r: &JobReport) -> Self {
        let failed = r.errors.iter().map(|(id, e)| (id, e, false));
        let stuck = r.stuck.iter().map(|(id, e)| (id, e, true));
        JobReportOut {
            ran: r.ran,
            failed: r.failed,
            memories_created: r.memories_created,
            memories_updated: r.memories_updated,
            memories_forgotten: r.memories_forgotten,
            errors: failed
                .chain(stuck)
                .map(|(id, e, stuck)| JobErrorOut {
                    job_id: id.to_string(),
                    message: e.to_string(),
                    stuck,
                })
                .collect(),
        }
    }
}

/// Ranked hits.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    /// Best first.
    pub hits: Vec<HitOut>,
    /// The analyzed query terms the lexical (BM25) search matched against.
    pub query_terms: Vec<String>,
    /// Distinct candidates after fusion, before re-ranking and the budget.
    pub candidates: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HitOut {
    pub memory: MemoryOut,
    /// No longer current: a later statement replaced it (only with `include_superseded`, or
    /// `as_of`).
    pub superseded: bool,
    /// The estimated probability, 0 to 1, that this memory is evidence for the query:
    /// calibrated, so it means the same on every query (unlike `score`, which ranks).
    pub relevance: f32,
    pub score: f32,
    pub tokens: usize,
    /// Why it ranked here, one line per signal (the generators, fusion, re-rankers).
    pub explanation: Vec<String>,
    pub matched_terms: Vec<String>,
    /// The score as numbers: each signal, the fused score, the re-rankers' changes, and
    /// `final` (= `score`).
    pub breakdown: BreakdownOut,
}

impl From<&Hit> for HitOut {
    fn from(hit: &Hit) -> Self {
        HitOut {
            memory: (&hit.memory).into(),
            superseded: !hit.memory.is_current(),
            relevance: hit.relevance,
            score: hit.score,
            tokens: hit.tokens,
            explanation: mnemos_render::explain(hit),
            matched_terms: hit.breakdown.matched_terms.clone(),
            breakdown: BreakdownOut::new(&hit.breakdown, hit.score),
        }
    }
}

impl From<&SearchResults> for SearchResponse {
    fn from(r: &SearchResults) -> Self {
        SearchResponse {
            hits: r.hits.iter().map(HitOut::from).collect(),
            query_terms: r.query_terms.clone(),
            candidates: r.candidates,
        }
    }
}

/// Context for an LLM prompt.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecallResponse {
    /// The preset that built it.
    pub preset: String,
    /// The context as text, ready for a prompt.
    pub text: String,
    /// Approximate LLM tokens of `text`.
    pub tokens: usize,
    /// The memories in it, in the order of `text`.
    pub items: Vec<ContextItemOut>,
    /// Decisions and degradations worth showing (e.g. "memory not needed for this query").
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContextItemOut {
    pub memory_id: String,
    #[schema(schema_with = kind_schema)]
    pub kind: String,
    /// The part of the context it is in.
    pub section: String,
    pub text: String,
    pub score: f64,
    pub tokens: usize,
    pub created: MomentOut,
    pub provenance: Vec<String>,
    /// The parts its score is made of.
    pub score_parts: BTreeMap<String, f64>,
}

impl From<&ContextItem> for ContextItemOut {
    fn from(item: &ContextItem) -> Self {
        ContextItemOut {
            memory_id: item.memory_id.to_string(),
            kind: item.kind.tag().as_str().to_string(),
            section: item.section.clone(),
            text: item.text.clone(),
            score: item.score,
            tokens: item.tokens,
            created: item.created.into(),
            provenance: item.provenance.iter().map(ToString::to_string).collect(),
            score_parts: item
                .breakdown
                .iter()
                .map(|p| (p.name.clone(), p.value))
                .collect(),
        }
    }
}

impl From<&Context> for RecallResponse {
    fn from(c: &Context) -> Self {
        RecallResponse {
            preset: c.mechanism.clone(),
            text: c.text.clone(),
            tokens: c.tokens,
            items: c.items.iter().map(ContextItemOut::from).collect(),
            notes: c.notes.clone(),
        }
    }
}

/// One page of memories, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryPage {
    pub memories: Vec<MemoryOut>,
    /// How many memories match, over all pages.
    pub total: usize,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub next_cursor: Option<String>,
}

/// A forgotten memory.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForgetResponse {
    pub memory: MemoryOut,
    /// It had been forgotten before; the first reason stands.
    pub already_forgotten: bool,
    /// How many memories derived from it (summaries, profiles…) were forgotten with it.
    pub derived_forgotten: usize,
}

impl From<&ForgetReport> for ForgetResponse {
    fn from(r: &ForgetReport) -> Self {
        ForgetResponse {
            memory: (&r.memory).into(),
            already_forgotten: r.already_forgotten,
            derived_forgotten: r.derived,
        }
    }
}

/// What a forget by description selected and, confirmed, forgot.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForgetMatchResponse {
    /// Whether anything was forgotten: `false` for a dry run, or when nothing was selected.
    pub confirmed: bool,
    /// The memories selected, most relevant first: what would be forgotten (a dry run) or what
    /// was (then in their forgotten state). A memory derived from one of them is not listed.
    pub candidates: Vec<ForgetCandidateOut>,
    /// Memories derived from the candidates (summaries, facts…) that go with them.
    pub derived: usize,
    /// The `ids` sent that were not selected (forgotten meanwhile, no longer relevant enough,
    /// unknown), so not forgotten.
    pub skipped: Vec<String>,
    /// More memories were selected than `limit` let through.
    pub truncated: bool,
}

/// A memory a forget by description selected.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForgetCandidateOut {
    pub memory: MemoryOut,
    /// How clearly it is about the description (0 to 1, as a search's `relevance`); absent
    /// when the search did not reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub relevance: Option<f32>,
    /// Why it was selected.
    #[schema(schema_with = selected_by_schema)]
    pub selected_by: &'static str,
    /// No longer current: a later statement replaced it.
    pub superseded: bool,
}

fn selected_by_schema() -> Object {
    one_of(
        "Why it was selected: `relevance` (at least `min_relevance`), `topic` (the rules of \
         forget requests said in conversation name it: the description's words or their \
         synonyms, the fact of the slot it names, a value repeated) or `replaced` (a selected \
         memory replaced it: an earlier value of the same fact).",
        mnemos_engine::SelectedBy::ALL.map(mnemos_engine::SelectedBy::as_str),
    )
}

impl From<&ForgetMatchReport> for ForgetMatchResponse {
    fn from(r: &ForgetMatchReport) -> Self {
        let candidates = r
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                // Confirmed: the memory as it is now, forgotten with its reason.
                let memory = r.forgotten.get(i).map_or(&c.memory, |f| &f.memory);
                ForgetCandidateOut {
                    memory: memory.into(),
                    relevance: c.relevance,
                    selected_by: c.by.as_str(),
                    superseded: !c.memory.is_current(),
                }
            })
            .collect();
        ForgetMatchResponse {
            confirmed: r.confirmed,
            candidates,
            derived: r.derived,
            skipped: r.skipped.iter().map(ToString::to_string).collect(),
            truncated: r.truncated,
        }
    }
}

/// One version of a memory.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryEntryOut {
    pub version: u32,
    pub at: MomentOut,
    /// `created`, `updated`, `forgotten` or `restored`.
    #[schema(schema_with = change_schema)]
    pub change: &'static str,
    /// Why it was forgotten (only for `forgotten`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// The memory's text in this version.
    pub text: String,
}

impl From<&HistoryEntry> for HistoryEntryOut {
    fn from(e: &HistoryEntry) -> Self {
        let (change, reason) = match &e.change {
            Change::Created => ("created", None),
            Change::Updated => ("updated", None),
            Change::Forgotten { reason } => ("forgotten", Some(reason.clone())),
            Change::Restored => ("restored", None),
            Change::Erased { reason } => ("erased", Some(reason.clone())),
        };
        HistoryEntryOut {
            version: e.version,
            at: e.at.into(),
            change,
            reason,
            text: e.snapshot.text.clone(),
        }
    }
}

/// What a purge deleted.
#[derive(Debug, Serialize, ToSchema)]
pub struct PurgeResponse {
    pub turns: usize,
    pub memories: usize,
    pub history_entries: usize,
    pub vectors: usize,
}

impl From<&PurgeReport> for PurgeResponse {
    fn from(r: &PurgeReport) -> Self {
        PurgeResponse {
            turns: r.turns,
            memories: r.memories,
            history_entries: r.history_entries,
            vectors: r.vectors,
        }
    }
}

/// The caller's tenant's users.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsersResponse {
    pub users: Vec<String>,
}

/// What a user's memory holds: one agent's (`?agent=`), or every agent's.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatsResponse {
    /// The agent's preset (only with `agent`: without it, each agent's is in `agents`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub preset: Option<String>,
    /// Active memories by kind: the agent's, or without `agent` every agent's together.
    pub memories: BTreeMap<String, usize>,
    /// Only without `agent`: each agent holding a memory of the user, with its preset and
    /// active memories by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub agents: Option<BTreeMap<String, AgentStatsOut>>,
}

/// One agent's preset and active memories by kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentStatsOut {
    pub preset: String,
    pub memories: BTreeMap<String, usize>,
}

impl From<&MechanismStats> for AgentStatsOut {
    fn from(s: &MechanismStats) -> Self {
        AgentStatsOut {
            preset: s.mechanism.clone(),
            memories: s.memories.clone(),
        }
    }
}

impl From<&MechanismStats> for StatsResponse {
    fn from(s: &MechanismStats) -> Self {
        StatsResponse {
            preset: Some(s.mechanism.clone()),
            memories: s.memories.clone(),
            agents: None,
        }
    }
}

impl From<&BTreeMap<String, MechanismStats>> for StatsResponse {
    fn from(by_agent: &BTreeMap<String, MechanismStats>) -> Self {
        let mut memories = BTreeMap::new();
        for (kind, count) in by_agent.values().flat_map(|s| &s.memories) {
            *memories.entry(kind.clone()).or_default() += count;
        }
        StatsResponse {
            preset: None,
            memories,
            agents: Some(
                by_agent
                    .iter()
                    .map(|(a, s)| (a.clone(), s.into()))
                    .collect(),
            ),
        }
    }
}

/// A preset: a way of storing and recalling memory, with its parameters.
#[derive(Debug, Serialize, ToSchema)]
pub struct PresetOut {
    pub name: String,
    pub summary: String,
    pub params: Vec<ParamOut>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ParamOut {
    pub name: String,
    pub default: String,
    pub doc: String,
}

impl From<&PresetInfo> for PresetOut {
    fn from(p: &PresetInfo) -> Self {
        PresetOut {
            name: p.name.to_string(),
            summary: p.summary.to_string(),
            params: p
                .params
                .iter()
                .map(|q| ParamOut {
                    name: q.name.to_string(),
                    default: q.default.clone(),
                    doc: q.doc.to_string(),
                })
                .collect(),
        }
    }
}

/// A derived job that has not succeeded yet.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobOut {
    pub id: String,
    /// `pending`, `failed` or `stuck`.
    #[schema(schema_with = job_state_schema)]
    pub state: &'static str,
    /// The preset whose work it is.
    pub preset: String,
    /// What it does (e.g. a session summary).
    pub kind: String,
    pub agent: String,
    pub session: String,
    pub created: MomentOut,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_error: Option<String>,
}

impl From<&PendingJob> for JobOut {
    fn from(p: &PendingJob) -> Self {
        let job = &p.job;
        JobOut {
            id: job.id.to_string(),
            state: p.state.as_str(),
            preset: job.mechanism.clone(),
            kind: job.kind.clone(),
            agent: job.scope.agent.clone(),
            session: job.scope.session.clone(),
            created: job.created.into(),
            attempts: job.attempts,
            last_error: job.last_error.clone(),
        }
    }
}

/// A view of what the preset knows about a user.
#[derive(Debug, Serialize, ToSchema)]
pub struct ViewResponse {
    #[schema(schema_with = view_schema)]
    pub view: &'static str,
    /// The view as text (what `mnemos show persona|timeline|chains` prints).
    pub text: String,
    /// The view as data: persona keys, timeline nodes or chains, by `view`.
    #[schema(schema_with = crate::dto_inspect::view_data_schema)]
    pub data: ViewData,
}

/// The answer of the health checks.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` (`/healthz`) or `ready` (`/readyz`).
    #[schema(schema_with = health_schema)]
    pub status: &'static str,
    /// `/readyz` only: the store this server runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreHealth>,
}

/// The store behind a server, as `/readyz` reports it (its location is not shown: the
/// health checks need no API key).
#[derive(Debug, Serialize, ToSchema)]
pub struct StoreHealth {
    /// `sqlite`, `postgres` or `memory`.
    #[schema(schema_with = store_kind_schema)]
    pub kind: &'static str,
    /// Where dense (vector) search runs: `store` (the database's vector index) or
    /// `in_process` (exact brute force over vectors held by this server).
    #[schema(schema_with = vectors_schema)]
    pub vectors: &'static str,
    /// The index (e.g. `pgvector 0.6.2 HNSW (cosine)`), or why search runs in process.
    pub vectors_detail: String,
    /// The vector space this server embeds into (the embedder's id, e.g. `e5-small-q4`).
    pub embedder: String,
}

// ---- API keys (admin key only) -----------------------------------------------------------

/// A key to make (`POST /v1/keys`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyBody {
    /// The tenant the key acts in.
    pub tenant: String,
    /// A label for people (default `key`).
    pub name: Option<String>,
}

/// `GET /v1/keys` query parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct KeysQuery {
    /// Only this tenant's keys.
    pub tenant: Option<String>,
}

/// An API key as listed: never its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyOut {
    pub id: String,
    /// The tenant it acts in.
    pub tenant: String,
    pub name: String,
    /// The secret's first characters.
    pub prefix: String,
    #[schema(format = DateTime)]
    pub created: String,
    /// When it was revoked (absent while it works).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub revoked: Option<String>,
}

impl From<&mnemos_core::ApiKey> for ApiKeyOut {
    fn from(key: &mnemos_core::ApiKey) -> Self {
        ApiKeyOut {
            id: key.id.to_string(),
            tenant: key.tenant.clone(),
            name: key.name.clone(),
            prefix: key.prefix.clone(),
            created: iso(key.created_at),
            revoked: key.revoked_at.map(iso),
        }
    }
}

/// A new key: the only answer that holds its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: ApiKeyOut,
    /// The secret to send as `Authorization: Bearer <secret>`; it cannot be shown again.
    pub secret: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields written one by one spell every time exactly as the format string did.
    #[test]
    fn iso_times_read_as_chrono_writes_them() {
        let chrono_iso = |millis: i64| {
            chrono::DateTime::from_timestamp_millis(millis)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        };
        let mut millis = vec![
            0,
            -1,
            1,
            999,
            1_683_554_160_000,
            -62_167_219_200_000,
            -62_167_219_200_001,
            253_402_300_799_999,
            253_402_300_800_000,
        ];
        let mut x: i64 = 7;
        for _ in 0..2000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            millis.push(x % 400_000_000_000_000);
        }
        for m in millis {
            if let Some(expected) = chrono_iso(m) {
                assert_eq!(iso(Timestamp(m)), expected, "{m}");
            }
        }
    }
}
