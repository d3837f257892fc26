//! `Engine`: the one front door — one store, one embedder, one memory model, and a mechanism
//! (preset) per agent. Every write goes through it; mechanisms only read and return writes.
//!
//! Writes follow one rule: raw turns and the jobs they cause commit first, in one transaction;
//! derived work runs afterwards as durable jobs whose results commit together with the job's
//! completion. A crash at any point leaves either a pending job (replayed by the next
//! `run_pending`) or a finished one (never applied again).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::{MemoryTypeReranker, Reranker, RetrievalConfig, ScopeIndex};
use mnemos_core::{
    CatchUp, Clock, Embedder, HistoryEntry, Job, Memory, MemoryFilter, MemoryId, MemoryModel,
    MemoryPatch, Moment, Page, Paged, PurgeReport, ReembedOptions, ReembedReport, ReembedStep,
    Scope, StateFilter, Store, StoreInfo, StoreRead, SystemClock, Turn, TurnId, UserKey,
    VectorSpace, WriteBatch,
};

use crate::error::{EngineError, EngineResult};
use crate::jobs::{JobProgress, JobReport};
use crate::mechanism::{
    Context, Derived, JobSpec, Mechanism, MechanismCtx, MechanismStats, ObserveCtx, RecallRequest,
};
use crate::memories::{
    AddedTurn, DenseSearch, EmbeddingStats, IndexStats, Memories, NewTurn, SearchRequest,
    SearchResults,
};
use crate::preset::{NoPresets, PresetFactory, PresetSpec};
use crate::provenance::ForgetPlan;
use crate::truth::{ChangeKind, FactChange, PrivacySettings};
use mnemos_core::views::{View, ViewKind};

/// How derived jobs run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSettings {
    /// Run jobs right after the write that caused them (CLI, tests). A server turns this off
    /// and runs `run_pending` in the background.
    pub inline: bool,
    /// Failed attempts after which a job is left alone (reported, not retried).
    pub max_attempts: u32,
    /// How long a lease on a user's jobs lasts, in seconds, renewed before each job. Another
    /// server picks a dead server's jobs up once its lease runs out; a job that runs longer
    /// than this may be run by a second server too, whose results are then refused.
    pub lease_secs: u64,
}

impl JobSettings {
    /// [`lease_secs`](Self::lease_secs) as a duration.
    pub fn lease(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.lease_secs)
    }
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            inline: true,
            max_attempts: 3,
            lease_secs: 300,
        }
    }
}

/// Which preset runs for which agent.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// The preset for agents without their own entry.
    pub preset: PresetSpec,
    /// Per-agent presets.
    pub agents: BTreeMap<String, PresetSpec>,
    /// Parameters of presets by name, for running jobs that a preset no agent runs now
    /// planned earlier (the job names its preset).
    pub params: BTreeMap<String, toml::Table>,
    pub jobs: JobSettings,
}

/// The preset an engine runs when nothing else is configured.
pub const DEFAULT_PRESET: &str = "default";

impl Default for EngineConfig {
    fn default() -> Self {
        Self::with_preset(DEFAULT_PRESET)
    }
}

impl EngineConfig {
    pub fn with_preset(name: &str) -> Self {
        Self {
            preset: PresetSpec::named(name),
            agents: BTreeMap::new(),
            params: BTreeMap::new(),
            jobs: JobSettings::default(),
        }
    }
}

/// What `add` committed and what its jobs did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AddReport {
    /// One entry per input turn, in input order (added now, or a duplicate of a stored key).
    pub turns: Vec<AddedTurn>,
    pub jobs_enqueued: usize,
    pub jobs: JobReport,
    /// What the turns' statements did to earlier memories: superseded, ended, corrected or
    /// reinforced them (each change is also in the changed memory's history).
    pub changes: Vec<FactChange>,
}

/// What a user's forget request did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForgetReport {
    /// The memory as it is now (its state holds the reason and moment of the forget).
    pub memory: Memory,
    /// It had been forgotten before this request; the first reason stands.
    pub already_forgotten: bool,
    /// Memories derived from it (summaries, profiles…) forgotten by this request.
    pub derived: usize,
}

/// What an engine runs on, for reports and status lines.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineInfo {
    pub embedder: String,
    pub dimension: usize,
    pub memory_model: String,
    /// The preset of agents without their own.
    pub preset: String,
    /// The store behind the engine.
    pub store: StoreInfo,
    /// Where dense search runs, and why.
    pub dense_search: DenseSearch,
}

/// A durable job for `spec`, planned by `mechanism` for `scope` at `created`.
pub(crate) fn job_for(
    spec: JobSpec,
    mechanism: &str,
    scope: &Scope,
    created: Moment,
) -> EngineResult<Job> {
    let payload = serde_json::to_string(&spec.payload)
        .map_err(|e| EngineError::config(format!("job payload does not serialize: {e}")))?;
    let job = Job::new(scope.clone(), mechanism, spec.kind, payload, created);
    job.validate()?;
    Ok(job)
}

/// Builds an [`Engine`] over a store, an embedder and a memory model.
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    model: Arc<dyn MemoryModel>,
    clock: Arc<dyn Clock>,
    retrieval: RetrievalConfig,
    config: EngineConfig,
    progress: Option<Arc<dyn JobProgress>>,
    mechanisms: Vec<(Option<String>, Arc<dyn Mechanism>)>,
    presets: Arc<dyn PresetFactory>,
    rerankers: Vec<Box<dyn Reranker>>,
    notes: Vec<String>,
    privacy: PrivacySettings,
    vector_space: VectorSpace,
}

impl EngineBuilder {
    /// How the engine holds the database to its embedder's vector space (default:
    /// [`VectorSpace::Bound`], which refuses a database bound to another space).
    pub fn vector_space(mut self, mode: VectorSpace) -> Self {
        self.vector_space = mode;
        self
    }

    /// What the write path keeps out of the store (default: credentials are redacted).
    pub fn privacy(mut self, privacy: PrivacySettings) -> Self {
        self.privacy = privacy;
        self
    }

    /// The wall clock memories are stamped with (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Retrieval settings (default: [`RetrievalConfig::default`]).
    pub fn retrieval(mut self, retrieval: RetrievalConfig) -> Self {
        self.retrieval = retrieval;
        self
    }

    /// Presets per agent and job settings (default: `retrieval` for every agent).
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Told when a derived job starts and ends (progress lines while a model works).
    pub fn job_progress(mut self, progress: Arc<dyn JobProgress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Things worth telling whoever runs this engine (weaker configurations, fallbacks).
    pub fn notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }

    /// Add a re-ranking stage to every search (stages run in the order added).
    pub fn reranker(mut self, reranker: Box<dyn Reranker>) -> Self {
        self.rerankers.push(reranker);
        self
    }

    /// Where the engine gets the presets its config names (and the presets that planned old
    /// jobs): `mnemos_presets::Presets` for the named mechanisms. Default: none, so only the
    /// mechanisms handed to [`default_mechanism`](Self::default_mechanism) and
    /// [`agent_mechanism`](Self::agent_mechanism) run.
    pub fn presets(mut self, presets: Arc<dyn PresetFactory>) -> Self {
        self.presets = presets;
        self
    }

    /// Run a mechanism of your own for every agent without a per-agent one.
    pub fn default_mechanism(mut self, mechanism: Arc<dyn Mechanism>) -> Self {
        self.mechanisms.push((None, mechanism));
        self
    }

    /// Run a mechanism of your own for one agent.
    pub fn agent_mechanism(mut self, agent: &str, mechanism: Arc<dyn Mechanism>) -> Self {
        self.mechanisms.push((Some(agent.to_string()), mechanism));
        self
    }

    /// Build the engine; every preset in the config is validated here.
    pub fn build(self) -> EngineResult<Engine> {
        let config = self.config;
        if config.jobs.max_attempts == 0 {
            return Err(EngineError::config("jobs.max_attempts must be at least 1"));
        }
        let space = mnemos_core::vector_space::check_space;
        if let Some(mismatch) = space(self.store.as_ref(), self.embedder.id(), self.vector_space)? {
            return Err(mismatch.into());
        }
        let by_type = self.retrieval.memory_type;
        let mut memories = Memories::new(self.store, self.embedder, self.clock, self.retrieval)?
            .with_model(self.model.clone())
            .with_privacy(self.privacy);
        if let Some(params) = by_type {
            // The configured memory-type stage runs for every search, whatever the preset.
            let stage = MemoryTypeReranker::new(self.model.clone(), params)?;
            memories = memories.with_reranker(Box::new(stage));
        }
        for reranker in self.rerankers {
            memories = memories.with_reranker(reranker);
        }
        let (default_mechanism, agent_mechanisms) =
            mechanisms(&config, self.presets.as_ref(), self.mechanisms)?;
        let mut notes = self.notes;
        notes.extend(memories.relevance_note().map(str::to_string));
        Ok(Engine {
            memories,
            model: self.model,
            default_mechanism,
            agent_mechanisms,
            settings: config.jobs,
            preset_params: config.params,
            progress: self.progress,
            notes,
            presets: self.presets,
            holder: format!("engine-{}", uuid::Uuid::now_v7()),
        })
    }
}

type AgentMechanisms = BTreeMap<String, Arc<dyn Mechanism>>;

/// The default mechanism and the per-agent ones: the config's presets, built by `presets`,
/// replaced by the mechanisms handed to the builder. A preset replaced by a handed mechanism is
/// not built, so an engine without presets runs on handed mechanisms alone.
fn mechanisms(
    config: &EngineConfig,
    presets: &dyn PresetFactory,
    handed: Vec<(Option<String>, Arc<dyn Mechanism>)>,
) -> EngineResult<(Arc<dyn Mechanism>, AgentMechanisms)> {
    let mut default_mechanism = None;
    let mut agent_mechanisms = BTreeMap::new();
    for (agent, mechanism) in handed {
        match agent {
            Some(agent) => {
                agent_mechanisms.insert(agent, mechanism);
            }
            None => default_mechanism = Some(mechanism),
        }
    }
    for (agent, spec) in &config.agents {
        if !agent_mechanisms.contains_key(agent) {
            let mechanism = presets
                .build(spec)
                .map_err(|e| e.context(format!("agent '{agent}'")))?;
            agent_mechanisms.insert(agent.clone(), mechanism);
        }
    }
    let default_mechanism = match default_mechanism {
        Some(mechanism) => mechanism,
        None => presets.build(&config.preset)?,
    };
    Ok((default_mechanism, agent_mechanisms))
}

/// The memory engine: the API applications embed, and the only way anything is written.
///
/// ```
/// use std::sync::Arc;
/// use mnemos_core::{MemoryStore, Scope, UserKey};
/// use mnemos_embed::HashEmbedder;
/// use mnemos_engine::{Engine, NewTurn, RecallRequest, SearchRequest};
/// use mnemos_offline::OfflineModel;
/// use mnemos_presets::Presets;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // An in-memory store, a weights-free embedder and the offline memory model: no files, no
/// // network. `mnemos_setup::open(&config, …)` does the same from a `mnemos.toml`.
/// let embedder = Arc::new(HashEmbedder::default());
/// let model = Arc::new(OfflineModel::new(embedder.clone()));
/// let engine = Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
///     .presets(Arc::new(Presets))
///     .build()?;
///
/// let scope = Scope::new("acme", "ann", "assistant", "s1")?;
/// let added = engine.add(vec![
///     NewTurn::user(scope.clone(), "I just started a job at a bakery in Berlin."),
///     NewTurn::user(scope.clone(), "我养了一只猫，叫小白。"),
/// ])?;
/// let ann = UserKey::new("acme", "ann")?;
///
/// // What a prompt should carry for a new turn, within 200 tokens, each item with its reasons:
/// // the default preset leads with the facts the question asks about.
/// let context = engine.recall(&ann, "assistant", &RecallRequest::new("Where do I work?", 200))?;
/// assert!(context.text.contains("bakery"));
///
/// // Ranked memories with score breakdowns, each with its relevance: the chance, on every
/// // query's scale, that it is evidence. A query about nothing Ann said finds nothing.
/// let hits = engine.search(&SearchRequest::new(ann.clone(), "猫"))?.hits;
/// assert!(hits[0].memory.text.contains("小白"));
/// let unrelated = SearchRequest::new(ann.clone(), "quantum chromodynamics research papers");
/// assert!(engine.search(&unrelated)?.hits.is_empty());
///
/// // Forgetting follows provenance and is recorded in the memory's history.
/// let bakery = added.turns[0].memory_id().expect("added now");
/// let report = engine.forget(&ann, bakery, "the user asked")?;
/// assert!(!report.memory.is_active());
/// assert!(engine.search(&SearchRequest::new(ann.clone(), "bakery"))?
///     .hits.iter().all(|h| h.memory.id != bakery));
/// # Ok(())
/// # }
/// ```
pub struct Engine {
    pub(crate) memories: Memories,
    model: Arc<dyn MemoryModel>,
    default_mechanism: Arc<dyn Mechanism>,
    agent_mechanisms: BTreeMap<String, Arc<dyn Mechanism>>,
    pub(crate) settings: JobSettings,
    pub(crate) preset_params: BTreeMap<String, toml::Table>,
    pub(crate) progress: Option<Arc<dyn JobProgress>>,
    notes: Vec<String>,
    /// Builds the presets that planned jobs an agent's current mechanism did not.
    pub(crate) presets: Arc<dyn PresetFactory>,
    /// Who this engine is when it leases a user's jobs: unique per engine, so two servers
    /// (or two processes) over one database never share a lease.
    pub(crate) holder: String,
}

/// Vectors moved into the store's index per step of [`Engine::index_backlog`].
const CATCH_UP_STEP: usize = 1_024;

impl Engine {
    /// Start building an engine over `store`, `embedder` and `model`.
    pub fn builder(
        store: Arc<dyn Store>,
        embedder: Arc<dyn Embedder>,
        model: Arc<dyn MemoryModel>,
    ) -> EngineBuilder {
        EngineBuilder {
            store,
            embedder,
            model,
            clock: Arc::new(SystemClock),
            retrieval: RetrievalConfig::default(),
            config: EngineConfig::default(),
            progress: None,
            mechanisms: Vec::new(),
            presets: Arc::new(NoPresets),
            rerankers: Vec::new(),
            notes: Vec::new(),
            privacy: PrivacySettings::default(),
            vector_space: VectorSpace::default(),
        }
    }

    /// What the engine hands a mechanism's `run_job`, `recall` and `stats`, over this engine's
    /// memories with `model` as the memory model: for running a mechanism's read side by hand
    /// (tools, tests). Read-only like every ctx.
    pub fn mechanism_ctx<'a>(
        &'a self,
        model: &'a dyn MemoryModel,
        user: &'a UserKey,
        agent: &'a str,
    ) -> MechanismCtx<'a> {
        MechanismCtx::new(&self.memories, model, user, agent)
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.memories.store().as_ref()
    }

    /// The presets this engine can build (the factory it was given).
    pub fn presets(&self) -> &dyn PresetFactory {
        self.presets.as_ref()
    }

    /// The embedder behind retrieval.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        self.memories.embedder()
    }

    /// The memory model derived work runs on.
    pub fn model(&self) -> &Arc<dyn MemoryModel> {
        &self.model
    }

    /// What this engine does less well than it could, in words (e.g. an offline classifier
    /// that runs without its trained weights). Empty when nothing is degraded.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Index up to `max_windows` vectors that the store's vector index has not caught up with
    /// (writes only store them, and searches read them exactly until then). `Ok(None)`: dense
    /// search runs in process. Servers call this between requests, `mnemos ingest` at its end.
    pub fn catch_up_vectors(&self, max_windows: usize) -> EngineResult<Option<CatchUp>> {
        Ok(self.memories.catch_up_vectors(max_windows)?)
    }

    /// Catch the store's vector index up completely ([`Engine::catch_up_vectors`] until nothing
    /// is left), reporting each step to `progress`; the number of windows moved here. Waits a
    /// moment between steps that moved nothing (another server is rebuilding the index).
    pub fn index_backlog(&self, progress: &mut dyn FnMut(CatchUp)) -> EngineResult<u64> {
        let mut moved = 0;
        while let Some(step) = self.catch_up_vectors(CATCH_UP_STEP)? {
            moved += step.indexed;
            progress(step);
            if step.remaining == 0 {
                break;
            }
            if step.indexed == 0 {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        }
        Ok(moved)
    }

    /// Move the database into this engine's embedder space ([`mnemos_core::vector_space::reembed`],
    /// resumable; the binding moves last). Build the engine with [`VectorSpace::Moving`] to
    /// open a database bound to another space.
    pub fn reembed(
        &self,
        options: ReembedOptions,
        progress: &mut dyn FnMut(ReembedStep),
    ) -> EngineResult<ReembedReport> {
        let embed = |memories: &[Memory]| {
            let texts: Vec<String> = memories.iter().map(Memories::searchable_text).collect();
            self.memories.embed_texts(&texts)
        };
        let model = self.embedder().id();
        let report =
            mnemos_core::vector_space::reembed(self.store(), model, options, &embed, progress);
        self.memories.drop_indexes();
        Ok(report?)
    }

    pub fn info(&self) -> EngineInfo {
        EngineInfo {
            embedder: self.embedder().id().to_string(),
            dimension: self.embedder().dimension(),
            memory_model: self.model.id().to_string(),
            preset: self.default_mechanism.name().to_string(),
            store: self.store().info(),
            dense_search: self.memories.dense_search().clone(),
        }
    }

    /// The mechanism that runs for `agent`.
    pub fn mechanism(&self, agent: &str) -> &Arc<dyn Mechanism> {
        self.agent_mechanisms
            .get(agent)
            .unwrap_or(&self.default_mechanism)
    }

    /// A view of `user`'s memories (one agent's, or all agents' when `None`). The agent's
    /// mechanism draws it when it offers the view; otherwise the first preset that offers it
    /// reads what such a preset stored (a view only reads), so `show persona` works whatever
    /// preset the config names. Unknown users get an empty view.
    pub fn view(&self, user: &UserKey, agent: Option<&str>, kind: ViewKind) -> EngineResult<View> {
        user.validate()?;
        let offers = |m: &&std::sync::Arc<dyn Mechanism>| m.views().contains(&kind);
        let running = match agent {
            Some(agent) => Some(self.mechanism(agent)).filter(offers),
            None => self.mechanisms().find(offers),
        };
        let mechanism = match running {
            Some(m) => m.clone(),
            None => self.presets.offering(kind).ok_or_else(|| {
                EngineError::config(format!("no preset offers a {} view", kind.as_str()))
            })?,
        };
        let store: &dyn StoreRead = self.store();
        mechanism.view(store, user, agent, kind)
    }

    /// Memories of other kinds built from the turn behind memory `id`, active and forgotten,
    /// oldest first (what forgetting it cascades to, in every state). Empty for a memory that
    /// is not a turn's; `NotFound` for an unknown id.
    pub fn derived_memories(&self, user: &UserKey, id: MemoryId) -> EngineResult<Vec<Memory>> {
        let memory = self.get(user, id)?;
        crate::provenance::derived_of(self.store(), user, &memory, StateFilter::All)
    }

    /// Every mechanism this engine runs (the default first).
    pub(crate) fn mechanisms(&self) -> impl Iterator<Item = &Arc<dyn Mechanism>> {
        std::iter::once(&self.default_mechanism).chain(self.agent_mechanisms.values())
    }

    pub(crate) fn ctx<'a>(&'a self, user: &'a UserKey, agent: &'a str) -> MechanismCtx<'a> {
        MechanismCtx::new(&self.memories, self.model.as_ref(), user, agent)
    }

    /// A durable job for `spec`, created now (work planned outside an ingest).
    pub(crate) fn job_now(
        &self,
        spec: JobSpec,
        mechanism: &str,
        scope: &Scope,
    ) -> EngineResult<Job> {
        let created = self.memories.moment(&scope.user_key())?;
        job_for(spec, mechanism, scope, created)
    }

    /// Commit turns (with the jobs their mechanisms plan), then — when jobs run inline — run
    /// the users' pending jobs. A failing job does not fail the add: the turns are committed and
    /// the failure is in the report (the job stays pending and is retried). A turn whose key is
    /// already stored is reported as a duplicate and not added again. Callers go through
    /// [`Engine::add`], which checks the idempotency rule first (`idempotency`).
    pub(crate) fn commit_turns(&self, turns: Vec<NewTurn>) -> EngineResult<AddReport> {
        let mut users: Vec<UserKey> = Vec::new();
        for turn in &turns {
            let key = turn.scope.user_key();
            if !users.contains(&key) {
                users.push(key);
            }
        }
        let mut enqueued = 0usize;
        let mut plan = |turns: &[Turn]| -> mnemos_core::Result<Vec<Vec<Job>>> {
            let jobs = self.plan_turns(turns).map_err(|e| match e {
                // Every error keeps its class (and its one prefix): only a config error is
                // the caller's; a model or job failure is the service's.
                EngineError::Core(e) => e.context("planning derived work"),
                EngineError::Model(e) => mnemos_core::Error::Model(e),
                EngineError::Config(message) => {
                    mnemos_core::Error::invalid(format!("planning derived work: {message}"))
                }
                other => mnemos_core::StoreError::Backend {
                    op: "planning derived work",
                    source: Box::new(other),
                }
                .into(),
            })?;
            enqueued = jobs.iter().map(Vec::len).sum();
            Ok(jobs)
        };
        let policy = |agent: &str| self.mechanism(agent).write_policy();
        let mut changes = Vec::new();
        let added = self
            .memories
            .add_turns_planned(turns, &mut plan, &policy, &mut changes)?;
        let confirming = self.plan_confirmations(&changes)?;
        let mut report = AddReport {
            turns: added,
            jobs_enqueued: enqueued + confirming,
            jobs: JobReport::default(),
            changes: changes.into_iter().map(|(_, c)| c).collect(),
        };
        if self.settings.inline {
            for user in &users {
                report.jobs.absorb(self.run_pending(user)?);
            }
        }
        Ok(report)
    }

    /// When the memory model is a language model, a job per supersession the write path made
    /// by rule (for agents whose preset asks for it), so the model's `conflicts` task can
    /// confirm it or undo it; returns how many were planned. Offline, the rules decide alone.
    fn plan_confirmations(&self, changes: &[(UserKey, FactChange)]) -> EngineResult<usize> {
        if !self.model.is_language_model() {
            return Ok(0);
        }
        let mut planned = 0;
        for (user, change) in changes {
            if !matches!(change.kind, ChangeKind::Superseded | ChangeKind::Corrected) {
                continue;
            }
            let Some(newer) = self.store().memory(user, change.by)? else {
                continue;
            };
            let mechanism = self.mechanism(&newer.scope.agent);
            let Some(spec) = mechanism.confirm_supersession(change) else {
                continue;
            };
            let batch = WriteBatch {
                jobs: vec![self.job_now(spec, mechanism.name(), &newer.scope)?],
                ..WriteBatch::default()
            };
            self.memories.commit(user, batch)?;
            planned += 1;
        }
        Ok(planned)
    }

    /// The jobs each turn of one user's write causes: every turn is observed by its agent's
    /// mechanism, which sees the write's earlier turns of the same agent.
    fn plan_turns(&self, turns: &[Turn]) -> EngineResult<Vec<Vec<Job>>> {
        let mut earlier: HashMap<(UserKey, String), Vec<Turn>> = HashMap::new();
        let mut planned = Vec::with_capacity(turns.len());
        for turn in turns {
            let mechanism = self.mechanism(&turn.scope.agent);
            let key = (turn.scope.user_key(), turn.scope.agent.clone());
            let same = earlier.entry(key.clone()).or_default();
            let ctx = ObserveCtx {
                store: self.store(),
                user: &key.0,
                agent: &key.1,
                earlier: same,
            };
            let specs = mechanism.observe(&ctx, turn)?;
            same.push(turn.clone());
            let jobs = specs
                .into_iter()
                .map(|spec| job_for(spec, mechanism.name(), &turn.scope, turn.at))
                .collect::<EngineResult<Vec<Job>>>()?;
            planned.push(jobs);
        }
        Ok(planned)
    }

    /// Close a session: its mechanism plans the closing work (summaries…), which commits as
    /// jobs and, inline, runs now.
    pub fn end_session(&self, scope: &Scope) -> EngineResult<JobReport> {
        scope.validate()?;
        let user = scope.user_key();
        let mechanism = self.mechanism(&scope.agent);
        let ctx = ObserveCtx {
            store: self.store(),
            user: &user,
            agent: &scope.agent,
            earlier: &[],
        };
        let specs = mechanism.end_session(&ctx, &scope.session)?;
        if !specs.is_empty() {
            let mut batch = WriteBatch::default();
            for spec in specs {
                batch
                    .jobs
                    .push(self.job_now(spec, mechanism.name(), scope)?);
            }
            self.memories.commit(&user, batch)?;
        }
        if self.settings.inline {
            self.run_pending(&user)
        } else {
            Ok(JobReport::default())
        }
    }

    /// Commit what a mechanism derived (and, for a job, the job's completion) in one write.
    /// Returns (created, updated, forgotten) counts.
    pub(crate) fn commit_derived(
        &self,
        user: &UserKey,
        scope: &Scope,
        mechanism: &str,
        derived: Derived,
        finished: Option<mnemos_core::JobId>,
    ) -> EngineResult<(usize, usize, usize)> {
        let counts = (
            derived.memories.len(),
            derived.updates.len(),
            derived.forgets.len(),
        );
        let mut batch = WriteBatch {
            user: Some(user.clone()),
            memories: derived.memories,
            updates: derived.updates,
            forgets: derived.forgets,
            ..WriteBatch::default()
        };
        for spec in derived.jobs {
            batch.jobs.push(self.job_now(spec, mechanism, scope)?);
        }
        if let Some(id) = finished {
            batch.finished_jobs.push((id, self.memories.moment(user)?));
        }
        if batch.is_empty() {
            return Ok(counts);
        }
        self.memories.commit(user, batch)?;
        Ok(counts)
    }

    /// Build, once per process, what the first write or read would otherwise build (the text
    /// analyzer's dictionary and the statement, forget-request and credential rules: about
    /// 0.2 s). Servers call it before they listen.
    pub fn warm_up() {
        mnemos_text::warm_up();
    }

    /// What a new turn of `agent` needs from `user`'s memory, within the request's budget.
    /// Effects the mechanism asks for (strengthening recalled memories…) commit before return.
    pub fn recall(
        &self,
        user: &UserKey,
        agent: &str,
        request: &RecallRequest,
    ) -> EngineResult<Context> {
        user.validate()?;
        crate::memories::validate_query(&request.query, true)?;
        if let Some(floor) = request.min_relevance {
            mnemos_core::retrieval::validate_min_relevance("min_relevance", floor)?;
        }
        let mechanism = self.mechanism(agent);
        let ctx = self.ctx(user, agent).within(request.deadline);
        let mut recall = mechanism.recall(&ctx, request)?;
        // Past the deadline nobody waits for the answer: its effects are not committed.
        request.deadline.check()?;
        if let (Some(at), false) = (request.as_of, mechanism.answers_as_of()) {
            recall.context = self.valid_items_only(user, recall.context, at, request)?;
        }
        if recall.context.tokens > request.token_budget {
            return Err(EngineError::config(format!(
                "preset '{}' returned {} tokens for a budget of {} (contract violation)",
                mechanism.name(),
                recall.context.tokens,
                request.token_budget
            )));
        }
        if !recall.effects.is_empty() {
            let scope = Scope::new(
                &user.tenant,
                &user.user,
                agent,
                request.session.as_deref().unwrap_or("recall"),
            )?;
            self.commit_derived(user, &scope, mechanism.name(), recall.effects, None)?;
        }
        Ok(recall.context)
    }

    /// A preset's context without the items whose memories were not valid at `at` (for a
    /// preset that does not answer `as_of` itself), re-packed, with a note saying so.
    fn valid_items_only(
        &self,
        user: &UserKey,
        context: Context,
        at: mnemos_core::Timestamp,
        request: &RecallRequest,
    ) -> EngineResult<Context> {
        let ids: Vec<MemoryId> = context.items.iter().map(|i| i.memory_id).collect();
        let valid: std::collections::HashSet<MemoryId> = self
            .store()
            .memories(user, &ids)?
            .into_iter()
            .filter(|m| m.valid_at(at))
            .map(|m| m.id)
            .collect();
        let kept: Vec<_> = context
            .items
            .into_iter()
            .filter(|i| valid.contains(&i.memory_id))
            .collect();
        let mut notes = context.notes;
        notes.push(format!(
            "as_of: preset '{}' keeps no valid time of its own; items not valid at {} were left out",
            context.mechanism,
            crate::primitives::iso(at)
        ));
        Ok(crate::primitives::build_context(
            &context.mechanism,
            &context.query,
            kept,
            request.token_budget,
            notes,
        ))
    }

    /// Size and cost of `agent`'s memory.
    pub fn stats(&self, user: &UserKey, agent: &str) -> EngineResult<MechanismStats> {
        self.mechanism(agent).stats(&self.ctx(user, agent))
    }

    /// [`stats`](Self::stats) of every agent holding a memory of `user`, by agent: a user's
    /// memories may sit under any agent, each with its own preset.
    pub fn stats_by_agent(&self, user: &UserKey) -> EngineResult<BTreeMap<String, MechanismStats>> {
        let every = MemoryFilter {
            state: StateFilter::All,
            ..MemoryFilter::default()
        };
        let agents: BTreeSet<String> = self
            .store()
            .list_all(user, &every)?
            .into_iter()
            .map(|m| m.scope.agent)
            .collect();
        agents
            .into_iter()
            .map(|agent| Ok((agent.clone(), self.stats(user, &agent)?)))
            .collect()
    }

    /// Ranked memories for a query (the hybrid retrieval pipeline, no mechanism). Hits whose
    /// relevance is below the request's `min_relevance`, or, when it names none, the
    /// configured `retrieval.min_relevance`, are left out.
    pub fn search(&self, request: &SearchRequest) -> EngineResult<SearchResults> {
        crate::memories::validate_query(&request.query, request.split_questions)?;
        Ok(self.memories.search_with_default_floor(request)?)
    }

    /// One memory; `NotFound` for unknown ids and other users' ids alike.
    pub fn get(&self, user: &UserKey, id: MemoryId) -> EngineResult<Memory> {
        Ok(self.memories.get(user, id)?)
    }

    /// One raw turn; `NotFound` for unknown ids and other users' ids alike.
    pub fn turn(&self, user: &UserKey, id: TurnId) -> EngineResult<Turn> {
        Ok(self.memories.turn(user, id)?)
    }

    /// A page of memories (filter by kind, agent, session, state, metadata, creation time).
    pub fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> EngineResult<Paged<Memory>> {
        Ok(self.memories.list(user, filter, page)?)
    }

    /// Edit a memory (a new version in its history); a changed text is re-embedded. A
    /// forgotten memory is refused with [`Conflict::Forgotten`](mnemos_core::Conflict): what
    /// was forgotten is not rewritten.
    pub fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
    ) -> EngineResult<Memory> {
        Ok(self.memories.update(user, id, patch)?)
    }

    /// Forget a memory at the user's request: it leaves retrieval and recall, and its history
    /// records why. Forgetting follows provenance: when a raw turn's memory is forgotten, every
    /// active memory derived from that turn (summaries, profiles, reflections) is forgotten too,
    /// in the same transaction, so the words cannot come back through a summary. Forgetting a
    /// memory that is already forgotten changes nothing of it and says so (derived memories
    /// still active are forgotten then). `purge` erases everything of a user.
    pub fn forget(&self, user: &UserKey, id: MemoryId, reason: &str) -> EngineResult<ForgetReport> {
        if reason.trim().is_empty() {
            return Err(mnemos_core::Error::invalid("forgetting needs a reason").into());
        }
        let target = self.memories.get(user, id)?;
        let mut plan = ForgetPlan::new(user, self.memories.moment(user)?);
        plan.target(&target, reason);
        let derived = self.derived_from(user, &target)?;
        let derived = plan.derived(id, &derived.iter().collect::<Vec<_>>(), reason);
        if let Some(batch) = plan.into_batch() {
            self.memories.commit(user, batch)?;
        }
        Ok(ForgetReport {
            memory: self.memories.get(user, id)?,
            already_forgotten: !target.is_active(),
            derived,
        })
    }

    /// Active derived memories whose provenance holds the turn behind `memory` (raw-turn
    /// memories only: a summary's provenance is shared with its siblings, not owned).
    fn derived_from(&self, user: &UserKey, memory: &Memory) -> EngineResult<Vec<Memory>> {
        crate::provenance::derived_of(self.store(), user, memory, StateFilter::Active)
    }

    /// Every version of a memory, oldest first.
    pub fn history(&self, user: &UserKey, id: MemoryId) -> EngineResult<Vec<HistoryEntry>> {
        Ok(self.memories.history(user, id)?)
    }

    /// Erase every turn, memory, history entry, vector and job of a user. Irreversible.
    pub fn purge(&self, user: &UserKey) -> EngineResult<PurgeReport> {
        Ok(self.memories.purge(user)?)
    }

    /// Every user with data.
    pub fn users(&self) -> EngineResult<Vec<UserKey>> {
        Ok(self.memories.users()?)
    }

    /// Does the store hold anything of `user`?
    pub fn has_user(&self, user: &UserKey) -> EngineResult<bool> {
        Ok(self.store().users()?.contains(user))
    }

    /// Read-only access to everything else (whole listings, turns, index statistics).
    pub fn reader(&self) -> Reader<'_> {
        Reader { engine: self }
    }
}

/// Read-only access to an engine's data beyond the typed operations: nothing here writes.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    engine: &'a Engine,
}

impl<'a> Reader<'a> {
    /// The store, for reading.
    pub fn store(&self) -> &'a dyn StoreRead {
        self.engine.store()
    }

    /// Every memory of `user` matching `filter`, in creation order.
    pub fn all(&self, user: &UserKey, filter: &MemoryFilter) -> EngineResult<Vec<Memory>> {
        Ok(self.store().list_all(user, filter)?)
    }

    /// Build `user`'s retrieval index now (instead of at the first search) and describe it.
    pub fn warm(&self, user: &UserKey) -> EngineResult<IndexStats> {
        Ok(self.engine.memories.warm(user)?)
    }

    /// Read `user`'s in-process retrieval index (built first if needed): for example its
    /// approximate dense index's state (`ScopeIndex::ann_status`) or its dense nearest
    /// (`ScopeIndex::dense_nearest`). `None`: the user has no index.
    pub fn with_index<R>(
        &self,
        user: &UserKey,
        read: impl FnOnce(&ScopeIndex) -> R,
    ) -> EngineResult<Option<R>> {
        Ok(self.engine.memories.with_index(user, read)?)
    }

    /// What the most recent index build had to do.
    pub fn last_build_stats(&self) -> IndexStats {
        self.engine.memories.last_build_stats()
    }

    /// What the write path's embedding did since this engine started: inputs embedded, and
    /// inputs that took the vector of an identical input of the same write or of a text the
    /// user's index already held instead.
    pub fn embedding_stats(&self) -> EmbeddingStats {
        self.engine.memories.embedding_stats()
    }
}
