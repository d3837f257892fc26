//! `Engine`: the library API applications embed — one store, one embedder, one memory model,
//! and a mechanism (preset) per agent.
//!
//! Writes follow one rule: raw turns and the jobs they cause commit first, in one transaction;
//! derived work runs afterwards as durable jobs whose results commit together with the job's
//! completion. A crash at any point leaves either a pending job (replayed by the next
//! `run_pending`) or a finished one (never applied again).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use mnemos_core::{
    AddedTurn, HistoryEntry, Job, JobId, Memories, Memory, MemoryFilter, MemoryId, MemoryModel,
    MemoryPatch, Moment, NewTurn, Page, Paged, PurgeReport, Scope, SearchRequest, SearchResults,
    Turn, UserKey, WriteBatch,
};

use crate::error::{EngineError, EngineResult};
use crate::mechanism::{
    collect_all, Context, Derived, JobSpec, Mechanism, MechanismCtx, MechanismStats, ObserveCtx,
    RecallRequest,
};
use crate::presets::{self, PresetSpec};

/// How derived jobs run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSettings {
    /// Run jobs right after the write that caused them (CLI, tests). A server turns this off
    /// and runs `run_pending` in the background.
    pub inline: bool,
    /// Failed attempts after which a job is left alone (reported, not retried).
    pub max_attempts: u32,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            inline: true,
            max_attempts: 3,
        }
    }
}

/// Which preset runs for which agent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineConfig {
    /// The preset for agents without their own entry.
    pub preset: PresetSpec,
    /// Per-agent presets.
    pub agents: BTreeMap<String, PresetSpec>,
    pub jobs: JobSettings,
}

impl EngineConfig {
    pub fn with_preset(name: &str) -> Self {
        Self {
            preset: PresetSpec::named(name),
            ..Self::default()
        }
    }
}

/// What a run of pending jobs did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobReport {
    pub ran: usize,
    pub failed: usize,
    pub memories_created: usize,
    pub memories_updated: usize,
    pub memories_forgotten: usize,
    /// Jobs left alone after `max_attempts` failures (id, last error).
    pub stuck: Vec<(JobId, String)>,
    /// Errors of this run's failed attempts (id, error).
    pub errors: Vec<(JobId, String)>,
}

impl JobReport {
    /// Add another report's counts to this one.
    pub fn absorb(&mut self, other: JobReport) {
        self.ran += other.ran;
        self.failed += other.failed;
        self.memories_created += other.memories_created;
        self.memories_updated += other.memories_updated;
        self.memories_forgotten += other.memories_forgotten;
        self.stuck.extend(other.stuck);
        self.errors.extend(other.errors);
    }
}

/// What `add` committed and what its jobs did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AddReport {
    pub turns: Vec<AddedTurn>,
    pub jobs_enqueued: usize,
    pub jobs: JobReport,
}

/// A durable job for `spec`, planned by `mechanism` for `scope` at `created`.
fn job_for(spec: JobSpec, mechanism: &str, scope: &Scope, created: Moment) -> EngineResult<Job> {
    let payload = serde_json::to_string(&spec.payload)
        .map_err(|e| EngineError::config(format!("job payload does not serialize: {e}")))?;
    let job = Job::new(scope.clone(), mechanism, spec.kind, payload, created);
    job.validate()?;
    Ok(job)
}

/// The memory engine.
pub struct Engine {
    memories: Arc<Memories>,
    model: Arc<dyn MemoryModel>,
    default_mechanism: Arc<dyn Mechanism>,
    agent_mechanisms: BTreeMap<String, Arc<dyn Mechanism>>,
    settings: JobSettings,
}

impl Engine {
    /// Build the engine; every preset in `config` is validated here.
    pub fn new(
        memories: Arc<Memories>,
        model: Arc<dyn MemoryModel>,
        config: &EngineConfig,
    ) -> EngineResult<Self> {
        if config.jobs.max_attempts == 0 {
            return Err(EngineError::config("jobs.max_attempts must be at least 1"));
        }
        let default_mechanism = presets::build(&config.preset)?;
        let mut agent_mechanisms = BTreeMap::new();
        for (agent, spec) in &config.agents {
            let mechanism = presets::build(spec)
                .map_err(|e| EngineError::config(format!("agent '{agent}': {e}")))?;
            agent_mechanisms.insert(agent.clone(), mechanism);
        }
        Ok(Self {
            memories,
            model,
            default_mechanism,
            agent_mechanisms,
            settings: config.jobs.clone(),
        })
    }

    /// Run a mechanism of your own for every agent without a per-agent one.
    pub fn with_default_mechanism(mut self, mechanism: Arc<dyn Mechanism>) -> Self {
        self.default_mechanism = mechanism;
        self
    }

    /// Run a mechanism of your own for one agent.
    pub fn with_agent_mechanism(mut self, agent: &str, mechanism: Arc<dyn Mechanism>) -> Self {
        self.agent_mechanisms.insert(agent.to_string(), mechanism);
        self
    }

    pub fn memories(&self) -> &Arc<Memories> {
        &self.memories
    }

    pub fn model(&self) -> &Arc<dyn MemoryModel> {
        &self.model
    }

    /// The mechanism that runs for `agent`.
    pub fn mechanism(&self, agent: &str) -> &Arc<dyn Mechanism> {
        self.agent_mechanisms
            .get(agent)
            .unwrap_or(&self.default_mechanism)
    }

    fn ctx<'a>(&'a self, user: &'a UserKey, agent: &'a str) -> MechanismCtx<'a> {
        MechanismCtx {
            memories: &self.memories,
            model: self.model.as_ref(),
            user,
            agent,
        }
    }

    /// A durable job for `spec`, created now (work planned outside an ingest).
    fn job_now(&self, spec: JobSpec, mechanism: &str, scope: &Scope) -> EngineResult<Job> {
        let created = self.memories.moment(&scope.user_key())?;
        job_for(spec, mechanism, scope, created)
    }

    /// Commit turns (with the jobs their mechanisms plan), then — when jobs run inline — run
    /// the users' pending jobs. A failing job does not fail the add: the turns are committed and
    /// the failure is in the report (the job stays pending and is retried).
    pub fn add(&self, turns: Vec<NewTurn>) -> EngineResult<AddReport> {
        let mut users: Vec<UserKey> = Vec::new();
        for turn in &turns {
            let key = turn.scope.user_key();
            if !users.contains(&key) {
                users.push(key);
            }
        }
        let store = self.memories.store().clone();
        // Turns of this write already planned, per (user, agent): mechanisms see them in
        // `ObserveCtx::earlier` because they are not in the store yet.
        let mut earlier: HashMap<(UserKey, String), Vec<Turn>> = HashMap::new();
        let mut enqueued = 0usize;
        let mut plan = |turn: &Turn| -> mnemos_core::Result<Vec<Job>> {
            let mechanism = self.mechanism(&turn.scope.agent);
            let key = (turn.scope.user_key(), turn.scope.agent.clone());
            let same = earlier.entry(key.clone()).or_default();
            let ctx = ObserveCtx {
                store: store.as_ref(),
                user: &key.0,
                agent: &key.1,
                earlier: same,
            };
            let planning =
                |e: EngineError| mnemos_core::Error::invalid(format!("planning derived work: {e}"));
            let specs = mechanism.observe(&ctx, turn).map_err(planning)?;
            same.push(turn.clone());
            let jobs = specs
                .into_iter()
                .map(|spec| job_for(spec, mechanism.name(), &turn.scope, turn.at))
                .collect::<EngineResult<Vec<Job>>>()
                .map_err(planning)?;
            enqueued += jobs.len();
            Ok(jobs)
        };
        let added = self.memories.add_turns_planned(turns, &mut plan)?;
        let mut report = AddReport {
            turns: added,
            jobs_enqueued: enqueued,
            jobs: JobReport::default(),
        };
        if self.settings.inline {
            for user in &users {
                report.jobs.absorb(self.run_pending(user)?);
            }
        }
        Ok(report)
    }

    /// Close a session: its mechanism plans the closing work (summaries…), which commits as
    /// jobs and, inline, runs now.
    pub fn end_session(&self, scope: &Scope) -> EngineResult<JobReport> {
        scope.validate()?;
        let user = scope.user_key();
        let mechanism = self.mechanism(&scope.agent);
        let ctx = ObserveCtx {
            store: self.memories.store().as_ref(),
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

    /// Pending jobs of `user` (including ones left alone after too many failures).
    pub fn pending_jobs(&self, user: &UserKey) -> EngineResult<Vec<Job>> {
        Ok(self.memories.store().pending_jobs(user, usize::MAX)?)
    }

    fn mechanism_for_job(&self, job: &Job) -> EngineResult<&Arc<dyn Mechanism>> {
        let mechanism = self.mechanism(&job.scope.agent);
        if mechanism.name() != job.mechanism {
            return Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!(
                    "planned by '{}' but agent '{}' now runs '{}'",
                    job.mechanism,
                    job.scope.agent,
                    mechanism.name()
                ),
            });
        }
        Ok(mechanism)
    }

    /// Compute a pending job's writes without committing them (inspection, crash drills).
    pub fn dry_run_job(&self, user: &UserKey, id: JobId) -> EngineResult<Derived> {
        let job = self
            .memories
            .store()
            .job(user, id)?
            .ok_or_else(|| mnemos_core::Error::not_found("job", id))?;
        let mechanism = self.mechanism_for_job(&job)?;
        mechanism.run_job(&self.ctx(user, &job.scope.agent), &job)
    }

    fn commit_derived(
        &self,
        user: &UserKey,
        scope: &Scope,
        mechanism: &str,
        derived: Derived,
        finished: Option<JobId>,
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

    /// Run `user`'s pending jobs, oldest first, until none is runnable. Each job's results commit
    /// with its completion; a failure counts an attempt and leaves the job pending.
    pub fn run_pending(&self, user: &UserKey) -> EngineResult<JobReport> {
        let mut report = JobReport::default();
        let mut tried: HashSet<JobId> = HashSet::new();
        loop {
            let pending = self.pending_jobs(user)?;
            let mut runnable = Vec::new();
            for job in pending {
                if job.attempts >= self.settings.max_attempts {
                    if tried.insert(job.id) {
                        report
                            .stuck
                            .push((job.id, job.last_error.clone().unwrap_or_default()));
                    }
                } else if !tried.contains(&job.id) {
                    runnable.push(job);
                }
            }
            if runnable.is_empty() {
                return Ok(report);
            }
            for job in runnable {
                tried.insert(job.id);
                let result = self.mechanism_for_job(&job).and_then(|m| {
                    let derived = m.run_job(&self.ctx(user, &job.scope.agent), &job)?;
                    self.commit_derived(user, &job.scope, m.name(), derived, Some(job.id))
                });
                match result {
                    Ok((created, updated, forgotten)) => {
                        report.ran += 1;
                        report.memories_created += created;
                        report.memories_updated += updated;
                        report.memories_forgotten += forgotten;
                    }
                    Err(e) => {
                        let message = e.to_string();
                        self.memories
                            .store()
                            .record_job_failure(user, job.id, &message)?;
                        report.failed += 1;
                        report.errors.push((job.id, message));
                    }
                }
            }
        }
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
        mnemos_core::validate_text("query", &request.query)?;
        let mechanism = self.mechanism(agent);
        let recall = mechanism.recall(&self.ctx(user, agent), request)?;
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

    /// Size and cost of `agent`'s memory.
    pub fn stats(&self, user: &UserKey, agent: &str) -> EngineResult<MechanismStats> {
        self.mechanism(agent).stats(&self.ctx(user, agent))
    }

    /// Ranked memories for a query (the hybrid retrieval pipeline, no mechanism).
    pub fn search(&self, request: &SearchRequest) -> EngineResult<SearchResults> {
        Ok(self.memories.search(request)?)
    }

    pub fn get(&self, user: &UserKey, id: MemoryId) -> EngineResult<Memory> {
        Ok(self.memories.get(user, id)?)
    }

    /// A page of memories (filter by kind, agent, session, state, metadata).
    pub fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> EngineResult<Paged<Memory>> {
        Ok(self.memories.list(user, filter, page)?)
    }

    pub fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
    ) -> EngineResult<Memory> {
        Ok(self.memories.update(user, id, patch)?)
    }

    /// Delete a memory at the user's request: it leaves retrieval and recall, and its history
    /// records why. Deletion follows provenance: when a raw turn's memory is deleted, every
    /// active memory derived from that turn (summaries, profiles, reflections) is forgotten too,
    /// in the same transaction, so the deleted words cannot come back through a summary.
    /// Returns the deleted memory and how many derived memories went with it.
    /// (`purge` erases everything of a user.)
    pub fn delete(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
    ) -> EngineResult<(Memory, usize)> {
        if reason.trim().is_empty() {
            return Err(mnemos_core::Error::invalid("deleting needs a reason").into());
        }
        let target = self.memories.get(user, id)?;
        let turns: HashSet<_> = target.provenance.iter().copied().collect();
        let at = self.memories.moment(user)?;
        let mut batch = WriteBatch {
            user: Some(user.clone()),
            ..WriteBatch::default()
        };
        if target.is_active() {
            batch.forgets.push(mnemos_core::BatchForget {
                id,
                reason: reason.to_string(),
                at,
            });
        }
        if target.kind == mnemos_core::MemoryKind::Turn {
            let store = self.memories.store();
            for derived in collect_all(store.as_ref(), user, &MemoryFilter::active())? {
                if derived.id != id
                    && derived.kind != mnemos_core::MemoryKind::Turn
                    && derived.provenance.iter().any(|t| turns.contains(t))
                {
                    batch.forgets.push(mnemos_core::BatchForget {
                        id: derived.id,
                        reason: format!("derived from deleted memory {id}: {reason}"),
                        at,
                    });
                }
            }
        }
        let cascaded = batch
            .forgets
            .len()
            .saturating_sub(usize::from(target.is_active()));
        if !batch.forgets.is_empty() {
            self.memories.commit(user, batch)?;
        }
        Ok((self.memories.get(user, id)?, cascaded))
    }

    pub fn history(&self, user: &UserKey, id: MemoryId) -> EngineResult<Vec<HistoryEntry>> {
        Ok(self.memories.history(user, id)?)
    }

    pub fn purge(&self, user: &UserKey) -> EngineResult<PurgeReport> {
        Ok(self.memories.purge(user)?)
    }
}
