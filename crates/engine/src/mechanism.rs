//! The `Mechanism` contract: what to keep, how to organize it, what to forget and what to hand
//! back for a query.
//!
//! A mechanism never writes to the store itself. It *plans* derived work when a turn arrives
//! (`observe`, `end_session` → [`JobSpec`]s, committed with the turn), *does* that work later
//! (`run_job` → [`Derived`] writes, committed together with the job's completion), and *answers*
//! queries (`recall` → [`Context`], plus optional [`Derived`] effects such as strengthening a
//! recalled memory). The engine owns every write, so crashes replay jobs instead of losing or
//! duplicating memories.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use mnemos_core::memory_model::UsageReport;
use mnemos_core::{
    BatchForget, BatchUpdate, Deadline, Embedder, Job, KindTag, Memory, MemoryFilter, MemoryId,
    MemoryKind, MemoryModel, Moment, StoreRead, Turn, TurnId, UserKey,
};

use crate::error::{EngineError, EngineResult};
use crate::memories::{Memories, SearchRequest, SearchResults};
use crate::views::{View, ViewKind};

/// What `observe` and `end_session` may look at: the store (read only) and the turns of the
/// same write that were observed before this one (they are not in the store yet).
pub struct ObserveCtx<'a> {
    pub store: &'a dyn StoreRead,
    pub user: &'a UserKey,
    pub agent: &'a str,
    /// Earlier turns of the write being planned, oldest first.
    pub earlier: &'a [Turn],
}

/// What `run_job`, `recall` and `stats` may use: retrieval over the user's memories, the store
/// (read only) and the memory model. A mechanism cannot write through it: its writes are the
/// [`Derived`] it returns, which the engine commits.
pub struct MechanismCtx<'a> {
    memories: &'a Memories,
    pub model: &'a dyn MemoryModel,
    pub user: &'a UserKey,
    pub agent: &'a str,
    /// When the request this work answers must stop; every search through this ctx stops
    /// then too.
    pub deadline: Deadline,
}

impl<'a> MechanismCtx<'a> {
    pub(crate) fn new(
        memories: &'a Memories,
        model: &'a dyn MemoryModel,
        user: &'a UserKey,
        agent: &'a str,
    ) -> Self {
        Self {
            memories,
            model,
            user,
            agent,
            deadline: Deadline::NONE,
        }
    }

    /// The same ctx, stopping its searches at `deadline`.
    pub(crate) fn within(mut self, deadline: Deadline) -> Self {
        self.deadline = deadline;
        self
    }

    /// The store, for reading.
    pub fn store(&self) -> &'a dyn StoreRead {
        self.memories.store().as_ref()
    }

    /// The embedder behind retrieval (for similarity between texts).
    pub fn embedder(&self) -> &'a dyn Embedder {
        self.memories.embedder().as_ref()
    }

    /// Ranked memories of this ctx's user (the retrieval pipeline); a request for another user
    /// is refused.
    pub fn search(&self, request: &SearchRequest) -> EngineResult<SearchResults> {
        if request.user != *self.user {
            return Err(EngineError::config(format!(
                "a mechanism running for {} searched {}",
                self.user, request.user
            )));
        }
        if self.deadline == Deadline::NONE {
            return Ok(self.memories.search(request)?);
        }
        let mut bounded = request.clone();
        bounded.deadline = request.deadline.min(self.deadline);
        Ok(self.memories.search(&bounded)?)
    }

    /// The relevance floor of the public search (`retrieval.min_relevance`), for a preset whose
    /// recall applies it when the request names none.
    pub fn default_min_relevance(&self) -> f32 {
        self.memories.default_min_relevance()
    }

    /// The user's facts (current and replaced, of every agent) as the write path keeps them.
    pub fn facts(&self) -> EngineResult<crate::truth::facts::FactTable> {
        Ok(self.memories.facts(self.user)?)
    }

    /// The user's current moment (latest round, clock time).
    pub fn moment(&self) -> EngineResult<Moment> {
        Ok(self.memories.moment(self.user)?)
    }

    /// A filter for this agent's memories (active ones unless changed).
    pub fn filter(&self) -> MemoryFilter {
        MemoryFilter {
            agent: Some(self.agent.to_string()),
            ..MemoryFilter::default()
        }
    }

    /// Every memory of this agent matching `filter` (agent forced), in creation order.
    pub fn all(&self, mut filter: MemoryFilter) -> EngineResult<Vec<Memory>> {
        filter.agent = Some(self.agent.to_string());
        collect_all(self.store(), self.user, &filter)
    }

    /// This agent's active memories of the given kinds, in creation order.
    pub fn active_of(&self, kinds: &[KindTag]) -> EngineResult<Vec<Memory>> {
        self.all(MemoryFilter::of_kinds(kinds))
    }

    /// The turns (raw) with these ids, in the given order; unknown ids are skipped.
    pub fn turns(&self, ids: &[TurnId]) -> EngineResult<Vec<Turn>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(turn) = self.store().turn(self.user, *id)? {
                out.push(turn);
            }
        }
        Ok(out)
    }
}

/// Every memory matching `filter`, in listing order.
pub fn collect_all(
    store: &dyn StoreRead,
    user: &UserKey,
    filter: &MemoryFilter,
) -> EngineResult<Vec<Memory>> {
    Ok(store.list_all(user, filter)?)
}

/// Derived work a mechanism asks for; the engine turns it into a durable [`Job`].
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// Mechanism-defined kind (`session_summary`, `reflect`…).
    pub kind: String,
    /// Mechanism-defined input.
    pub payload: serde_json::Value,
}

impl JobSpec {
    pub fn new(kind: impl Into<String>, payload: serde_json::Value) -> Self {
        Self {
            kind: kind.into(),
            payload,
        }
    }

    /// Parse a job's payload into the mechanism's own type, as a typed error when it does not fit.
    pub fn parse<T: serde::de::DeserializeOwned>(job: &Job) -> EngineResult<T> {
        serde_json::from_str(&job.payload).map_err(|e| EngineError::Job {
            id: job.id.to_string(),
            message: format!("payload of a '{}' job does not parse: {e}", job.kind),
        })
    }
}

/// Writes a mechanism wants made, committed atomically by the engine.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// New memories (derived ones must carry provenance).
    pub memories: Vec<Memory>,
    pub updates: Vec<BatchUpdate>,
    pub forgets: Vec<BatchForget>,
    /// Follow-up work.
    pub jobs: Vec<JobSpec>,
}

impl Derived {
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty()
            && self.updates.is_empty()
            && self.forgets.is_empty()
            && self.jobs.is_empty()
    }
}

/// One part of a context item's score (relevance, recency, importance, retention…).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScorePart {
    pub name: String,
    pub value: f64,
}

/// One memory handed back for a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextItem {
    pub memory_id: MemoryId,
    pub kind: MemoryKind,
    pub text: String,
    /// Where it came from: the turns behind it.
    pub provenance: Vec<TurnId>,
    pub created: Moment,
    /// The section of the prompt it belongs to (`profile`, `summaries`, `turns`, `core`…).
    pub section: String,
    pub score: f64,
    pub breakdown: Vec<ScorePart>,
    /// Approximate LLM tokens of `text`.
    pub tokens: usize,
}

impl ContextItem {
    pub fn from_memory(memory: &Memory, section: &str, score: f64, tokens: usize) -> Self {
        ContextItem {
            memory_id: memory.id,
            kind: memory.kind.clone(),
            text: memory.text.clone(),
            provenance: memory.provenance.clone(),
            created: memory.created,
            section: section.to_string(),
            score,
            breakdown: Vec::new(),
            tokens,
        }
    }

    pub fn with_part(mut self, name: &str, value: f64) -> Self {
        self.breakdown.push(ScorePart {
            name: name.to_string(),
            value,
        });
        self
    }
}

/// What a mechanism returns for a query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub mechanism: String,
    pub query: String,
    /// In the order a prompt would show them.
    pub items: Vec<ContextItem>,
    /// The text a prompt would use (sections with their items).
    pub text: String,
    /// Approximate LLM tokens of `text`.
    pub tokens: usize,
    /// Decisions and degradations worth showing (e.g. "memory not needed for this query").
    pub notes: Vec<String>,
}

/// A recall request.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallRequest {
    pub query: String,
    /// Approximate LLM tokens the context may use.
    pub token_budget: usize,
    /// Restrict to one session (None = all of the agent's sessions).
    pub session: Option<String>,
    /// Answer about the past: what was valid at this moment (valid time) instead of what is
    /// true now. Presets that keep no validity answer from what they hold, with a note.
    pub as_of: Option<mnemos_core::Timestamp>,
    /// Leave out what is less likely than this to be evidence for the query (hit relevance,
    /// in [0, 1]). `None`: the default preset applies `retrieval.min_relevance`; the research
    /// presets apply no floor, as their papers did.
    pub min_relevance: Option<f32>,
    /// When the recall must give up (`TimedOut`); the preset's searches stop then too.
    pub deadline: Deadline,
}

impl RecallRequest {
    /// A recall over all of the agent's sessions.
    pub fn new(query: impl Into<String>, token_budget: usize) -> Self {
        Self {
            query: query.into(),
            token_budget,
            session: None,
            as_of: None,
            min_relevance: None,
            deadline: Deadline::NONE,
        }
    }
}

/// A recall's answer plus the writes it causes (access strengthening, etc.).
#[derive(Clone, Debug, Default)]
pub struct Recall {
    pub context: Context,
    pub effects: Derived,
}

/// Size and cost of one agent's memory under a mechanism.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MechanismStats {
    pub mechanism: String,
    /// Active memories by kind tag.
    pub memories: BTreeMap<String, usize>,
    pub total_memories: usize,
    pub forgotten: usize,
    /// Bytes of active memory text.
    pub bytes: usize,
    /// Approximate LLM tokens of active memory text.
    pub tokens: usize,
    pub pending_jobs: usize,
    /// Memory-model calls and tokens since the engine started.
    pub model_calls: u64,
    pub model_tokens: u64,
    pub usage: UsageReport,
}

/// A memory mechanism. Implementations are stateless between calls: everything they need is
/// in the store (so any process, after any crash, continues where the last one stopped).
///
/// Contract:
/// - `observe` and `end_session` only plan: no model calls, no writes. They are called inside
///   the ingest of the turn, and what they return commits with it.
/// - `run_job` is deterministic given the store's contents and the model; it returns writes and
///   does not make them. If it fails, the job stays pending and is retried.
/// - `recall` respects the token budget: the context's `tokens` never exceed it (an item that
///   alone is larger is cut, never returned whole). Forgotten memories are never returned.
/// - Every derived memory carries the provenance of the turns it came from.
pub trait Mechanism: Send + Sync {
    /// The preset name (`retrieval`, `memorybank`…).
    fn name(&self) -> &str;
    /// Plan the derived work a new turn causes.
    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>>;
    /// Plan the work that closes a session.
    fn end_session(&self, ctx: &ObserveCtx, session: &str) -> EngineResult<Vec<JobSpec>> {
        let _ = (ctx, session);
        Ok(Vec::new())
    }
    /// Do one planned job.
    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let _ = ctx;
        Err(EngineError::Job {
            id: job.id.to_string(),
            message: format!("{} plans no '{}' jobs", self.name(), job.kind),
        })
    }
    /// What a new turn needs from memory, within the budget.
    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall>;
    /// Size and cost of this agent's memory. The default counts the agent's memories by kind
    /// and state, their bytes and tokens, its pending jobs and the model's calls; a mechanism
    /// with structure of its own may add to it.
    fn stats(&self, ctx: &MechanismCtx) -> EngineResult<MechanismStats> {
        base_stats(self.name(), ctx)
    }
    /// What the write path does with this agent's turns beyond storing them: supersession
    /// and forget requests (neither by default, so a preset's behaviour is its own).
    fn write_policy(&self) -> crate::truth::WritePolicy {
        crate::truth::WritePolicy::default()
    }
    /// The job that asks a language model to confirm a supersession the write path made by
    /// rule (`None`: the rules' decision stands). Only asked when the engine's memory model is
    /// a language model.
    fn confirm_supersession(&self, change: &crate::truth::FactChange) -> Option<JobSpec> {
        let _ = change;
        None
    }
    /// Whether `recall` answers `RecallRequest::as_of` itself (from valid time). When it does
    /// not, the engine drops the items that were not valid then from its context, and says so.
    fn answers_as_of(&self) -> bool {
        false
    }
    /// The views of its memories this mechanism can draw (none by default).
    fn views(&self) -> &'static [ViewKind] {
        &[]
    }
    /// Draw one of [`views`](Self::views) from the store: `user`'s memories of one agent, or of
    /// every agent when `agent` is `None`.
    fn view(
        &self,
        store: &dyn StoreRead,
        user: &UserKey,
        agent: Option<&str>,
        kind: ViewKind,
    ) -> EngineResult<View> {
        let _ = (store, user, agent);
        Err(EngineError::config(format!(
            "preset '{}' has no {} view",
            self.name(),
            kind.as_str()
        )))
    }
}

/// The counts every mechanism's `stats` starts from.
pub fn base_stats(mechanism: &str, ctx: &MechanismCtx) -> EngineResult<MechanismStats> {
    let store = ctx.store();
    let filter = MemoryFilter {
        agent: Some(ctx.agent.to_string()),
        state: mnemos_core::StateFilter::All,
        ..MemoryFilter::default()
    };
    let mut stats = MechanismStats {
        mechanism: mechanism.to_string(),
        ..MechanismStats::default()
    };
    for memory in collect_all(store, ctx.user, &filter)? {
        if memory.is_active() {
            *stats
                .memories
                .entry(memory.kind.tag().as_str().to_string())
                .or_default() += 1;
            stats.total_memories += 1;
            stats.bytes += memory.text.len();
            stats.tokens += crate::primitives::tokens(&memory.text);
        } else {
            stats.forgotten += 1;
        }
    }
    stats.pending_jobs = store
        .pending_jobs(ctx.user, usize::MAX)?
        .iter()
        .filter(|j| j.scope.agent == ctx.agent)
        .count();
    let usage = ctx.model.usage();
    let total = usage.total();
    stats.model_calls = total.calls;
    stats.model_tokens = total.prompt_tokens + total.completion_tokens;
    stats.usage = usage;
    Ok(stats)
}
