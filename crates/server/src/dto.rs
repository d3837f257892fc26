//! Wire types: what requests carry and responses hold. They are the server's own, converted
//! from and to the engine's types here, so the engine can change without changing the API.
//! Times are ISO 8601 (UTC) strings; unknown request fields are errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use mnemos_core::{
    Change, HistoryEntry, Hit, Memory, MemoryState, Moment, PurgeReport, Role, Timestamp,
};
use mnemos_engine::{
    AddReport, Context, ContextItem, ForgetReport, JobReport, MechanismStats, PendingJob,
    PresetInfo, SearchResults, TurnStatus,
};

use crate::error::ApiError;

/// `2023-05-08T13:56:00.000Z`.
pub fn iso(time: Timestamp) -> String {
    chrono::DateTime::from_timestamp_millis(time.millis())
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_else(|| time.millis().to_string())
}

/// An RFC 3339 time from a request.
pub fn parse_time(field: &str, text: &str) -> Result<Timestamp, ApiError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| Timestamp::from_millis(t.timestamp_millis()))
        .map_err(|e| ApiError::invalid(format!("{field}: '{text}' is not an RFC 3339 time: {e}")))
}

// ---- requests ----------------------------------------------------------------------------

/// `POST /v1/users/{user}/turns`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddTurnsRequest {
    /// The agent the turns were said to (default `default`).
    pub agent: Option<String>,
    /// The session they belong to (default `default`).
    pub session: Option<String>,
    pub turns: Vec<TurnIn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnIn {
    pub role: WireRole,
    pub text: String,
    pub speaker: Option<String>,
    /// When it was said (RFC 3339); default: when it arrives.
    pub time: Option<String>,
    /// A key unique per user: a turn whose key is stored is not added again.
    pub key: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WireRole {
    User,
    Assistant,
    /// Anyone else in the conversation (a narrator, a third character).
    Other,
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

/// `POST /v1/users/{user}/recall`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    pub query: String,
    pub agent: Option<String>,
    /// Approximate LLM tokens the context may use (default 1024).
    pub budget: Option<usize>,
    /// Only this session's memories.
    pub session: Option<String>,
}

/// `POST /v1/users/{user}/search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    pub query: String,
    /// How many hits (default: the configured top-k).
    pub top_k: Option<usize>,
    /// Approximate LLM tokens the hits may use in total.
    pub budget: Option<usize>,
    /// Only these kinds (`turn`, `summary`, `persona`, …).
    #[serde(default)]
    pub kinds: Vec<String>,
    pub agent: Option<String>,
    pub session: Option<String>,
}

/// `GET /v1/users/{user}/memories` query parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Comma-separated kinds.
    pub kind: Option<String>,
    /// `active` (default), `forgotten` or `all`.
    pub state: Option<String>,
    pub agent: Option<String>,
    pub session: Option<String>,
    /// Created at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Created before this time (RFC 3339).
    pub until: Option<String>,
    /// Page size (default 50).
    pub limit: Option<usize>,
    /// Where the page starts: the `next_cursor` of the page before.
    pub cursor: Option<String>,
}

/// `PATCH /v1/users/{user}/memories/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    pub text: Option<String>,
    pub metadata: Option<BTreeMap<String, String>>,
}

/// `DELETE /v1/users/{user}/memories/{id}` query parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetQuery {
    /// Why (recorded in the memory's history; default "forgotten on request").
    pub reason: Option<String>,
}

/// Query parameters naming one agent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentQuery {
    pub agent: Option<String>,
}

// ---- responses ---------------------------------------------------------------------------

#[derive(Debug, Serialize)]
pub struct MomentOut {
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

#[derive(Debug, Serialize)]
pub struct MemoryOut {
    pub id: String,
    pub kind: String,
    pub text: String,
    pub agent: String,
    pub session: String,
    pub created: MomentOut,
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<ForgottenOut>,
    pub version: u32,
    /// The turns it came from.
    pub provenance: Vec<String>,
    pub metadata: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
pub struct ForgottenOut {
    pub reason: String,
    pub at: MomentOut,
}

impl From<&Memory> for MemoryOut {
    fn from(m: &Memory) -> Self {
        let (state, forgotten) = match &m.state {
            MemoryState::Active => ("active", None),
            MemoryState::Forgotten { reason, at } => (
                "forgotten",
                Some(ForgottenOut {
                    reason: reason.clone(),
                    at: (*at).into(),
                }),
            ),
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
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AddTurnsResponse {
    pub turns: Vec<AddedTurnOut>,
    pub jobs_enqueued: usize,
    pub jobs: JobReportOut,
}

#[derive(Debug, Serialize)]
pub struct AddedTurnOut {
    pub turn_id: String,
    pub round: u64,
    /// `added`, or `duplicate` when a turn with its key was stored before.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
}

impl From<&AddReport> for AddTurnsResponse {
    fn from(report: &AddReport) -> Self {
        let turns = report
            .turns
            .iter()
            .map(|t| {
                let (status, memory_id) = match &t.status {
                    TurnStatus::Added { memory_id } => ("added", Some(memory_id.to_string())),
                    TurnStatus::Duplicate => ("duplicate", None),
                };
                AddedTurnOut {
                    turn_id: t.turn_id.to_string(),
                    round: t.round,
                    status,
                    memory_id,
                }
            })
            .collect();
        AddTurnsResponse {
            turns,
            jobs_enqueued: report.jobs_enqueued,
            jobs: (&report.jobs).into(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct JobReportOut {
    pub ran: usize,
    pub failed: usize,
    pub memories_created: usize,
    pub memories_updated: usize,
    pub memories_forgotten: usize,
    pub errors: Vec<JobErrorOut>,
}

#[derive(Debug, Serialize)]
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

#[derive(Debug, Serialize)]
pub struct SearchResponse {
    pub hits: Vec<HitOut>,
    pub query_terms: Vec<String>,
    pub candidates: usize,
}

#[derive(Debug, Serialize)]
pub struct HitOut {
    pub memory: MemoryOut,
    pub score: f32,
    pub tokens: usize,
    /// Why it ranked here, one line per signal (the generators, fusion, re-rankers).
    pub explanation: Vec<String>,
    pub matched_terms: Vec<String>,
}

impl From<&Hit> for HitOut {
    fn from(hit: &Hit) -> Self {
        HitOut {
            memory: (&hit.memory).into(),
            score: hit.score,
            tokens: hit.tokens,
            explanation: mnemos_engine::render::explain(hit),
            matched_terms: hit.breakdown.matched_terms.clone(),
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

#[derive(Debug, Serialize)]
pub struct RecallResponse {
    pub preset: String,
    /// The context as text, ready for a prompt.
    pub text: String,
    pub tokens: usize,
    pub items: Vec<ContextItemOut>,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ContextItemOut {
    pub memory_id: String,
    pub kind: String,
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

#[derive(Debug, Serialize)]
pub struct MemoryPage {
    pub memories: Vec<MemoryOut>,
    pub total: usize,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize)]
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

#[derive(Debug, Serialize)]
pub struct HistoryEntryOut {
    pub version: u32,
    pub at: MomentOut,
    /// `created`, `updated`, `forgotten` or `restored`.
    pub change: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub text: String,
}

impl From<&HistoryEntry> for HistoryEntryOut {
    fn from(e: &HistoryEntry) -> Self {
        let (change, reason) = match &e.change {
            Change::Created => ("created", None),
            Change::Updated => ("updated", None),
            Change::Forgotten { reason } => ("forgotten", Some(reason.clone())),
            Change::Restored => ("restored", None),
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

#[derive(Debug, Serialize)]
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

#[derive(Debug, Serialize)]
pub struct UsersResponse {
    pub users: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct StatsResponse {
    pub preset: String,
    /// Active memories by kind.
    pub memories: BTreeMap<String, usize>,
}

impl From<&MechanismStats> for StatsResponse {
    fn from(s: &MechanismStats) -> Self {
        StatsResponse {
            preset: s.mechanism.clone(),
            memories: s.memories.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PresetOut {
    pub name: String,
    pub summary: String,
    pub params: Vec<ParamOut>,
}

#[derive(Debug, Serialize)]
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

#[derive(Debug, Serialize)]
pub struct JobOut {
    pub id: String,
    /// `pending`, `failed` or `stuck`.
    pub state: &'static str,
    pub preset: String,
    pub kind: String,
    pub agent: String,
    pub session: String,
    pub created: MomentOut,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
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

#[derive(Debug, Serialize)]
pub struct ViewResponse {
    pub view: &'static str,
    /// The view as text (what `mnemos show persona|timeline` prints).
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct Health {
    pub status: &'static str,
}

// ---- API keys (admin key only) -----------------------------------------------------------

/// `POST /v1/keys`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyBody {
    /// The tenant the key acts in.
    pub tenant: String,
    /// A label for people (default `key`).
    pub name: Option<String>,
}

/// `GET /v1/keys`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysQuery {
    /// Only this tenant's keys.
    pub tenant: Option<String>,
}

/// An API key as listed: never its secret.
#[derive(Debug, Serialize)]
pub struct ApiKeyOut {
    pub id: String,
    pub tenant: String,
    pub name: String,
    /// The secret's first characters.
    pub prefix: String,
    pub created: String,
    /// When it was revoked (absent while it works).
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Serialize)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: ApiKeyOut,
    /// The secret to send as `Authorization: Bearer <secret>`; it cannot be shown again.
    pub secret: String,
}
