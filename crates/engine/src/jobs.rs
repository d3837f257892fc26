//! Durable derived work: running pending jobs, retrying failed ones, and listing what waits.
//!
//! A job's results commit with its completion, and finishing a finished job is rejected by the
//! store, so a job that crashed half-way is simply run again and never applies twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use mnemos_core::{Conflict, Job, JobId, UserKey};

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};
use crate::mechanism::{Derived, Mechanism};
use crate::preset::PresetSpec;

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

    /// Did anything run, fail or stay stuck?
    pub fn is_empty(&self) -> bool {
        self.ran + self.failed == 0 && self.stuck.is_empty()
    }
}

/// Where a pending job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Not tried yet.
    Pending,
    /// Failed at least once; it is tried again.
    Failed,
    /// Failed `max_attempts` times; only an explicit retry runs it again.
    Stuck,
}

impl JobState {
    /// `pending`, `failed` or `stuck`, as reports and the wire name it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Failed => "failed",
            JobState::Stuck => "stuck",
        }
    }
}

/// A pending job with its user and state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingJob {
    pub user: UserKey,
    pub state: JobState,
    pub job: Job,
}

/// Told when derived work starts and ends, e.g. to show progress while a model works.
pub trait JobProgress: Send + Sync {
    /// `job` is about to run on `model`.
    fn started(&self, job: &Job, model: &str);
    /// `job` ended after `elapsed`; `error` is its failure, if it failed.
    fn finished(&self, job: &Job, elapsed: Duration, error: Option<&str>);
}

impl Engine {
    fn job_state(&self, job: &Job) -> JobState {
        match job.attempts {
            0 => JobState::Pending,
            n if n >= self.settings.max_attempts => JobState::Stuck,
            _ => JobState::Failed,
        }
    }

    /// Pending jobs of `user`, or of every user when `None`, oldest first per user.
    pub fn pending_jobs(&self, user: Option<&UserKey>) -> EngineResult<Vec<PendingJob>> {
        let users = match user {
            Some(user) => vec![user.clone()],
            None => self.store().users()?,
        };
        let mut out = Vec::new();
        for user in users {
            for job in self.store().pending_jobs(&user, usize::MAX)? {
                out.push(PendingJob {
                    user: user.clone(),
                    state: self.job_state(&job),
                    job,
                });
            }
        }
        Ok(out)
    }

    /// The mechanism that planned `job`: the agent's, or the registered preset of that name
    /// (with the configured parameters) when the agent runs another preset now.
    fn mechanism_for_job(&self, job: &Job) -> EngineResult<Arc<dyn Mechanism>> {
        let running = self.mechanism(&job.scope.agent);
        if running.name() == job.mechanism {
            return Ok(Arc::clone(running));
        }
        let spec = PresetSpec {
            name: job.mechanism.clone(),
            params: self
                .preset_params
                .get(&job.mechanism)
                .cloned()
                .unwrap_or_default(),
        };
        self.presets.build(&spec).map_err(|e| EngineError::Job {
            id: job.id.to_string(),
            message: format!(
                "planned by '{}', which agent '{}' no longer runs and which cannot be built: {e}",
                job.mechanism, job.scope.agent
            ),
        })
    }

    fn stored_job(&self, user: &UserKey, id: JobId) -> EngineResult<Job> {
        self.store()
            .job(user, id)?
            .ok_or_else(|| mnemos_core::Error::not_found("job", id).into())
    }

    /// Compute a pending job's writes without committing them (inspection, crash drills).
    pub fn dry_run_job(&self, user: &UserKey, id: JobId) -> EngineResult<Derived> {
        let job = self.stored_job(user, id)?;
        let mechanism = self.mechanism_for_job(&job)?;
        mechanism.run_job(&self.ctx(user, &job.scope.agent), &job)
    }

    /// Run one job and commit its results with its completion; a failure counts an attempt.
    fn run_one(&self, user: &UserKey, job: &Job, report: &mut JobReport) -> EngineResult<()> {
        if let Some(progress) = &self.progress {
            progress.started(job, self.model().id());
        }
        let started = std::time::Instant::now();
        let result = self.mechanism_for_job(job).and_then(|m| {
            let derived = m.run_job(&self.ctx(user, &job.scope.agent), job)?;
            self.commit_derived(user, &job.scope, m.name(), derived, Some(job.id))
        });
        let error = result.as_ref().err().map(ToString::to_string);
        if let Some(progress) = &self.progress {
            progress.finished(job, started.elapsed(), error.as_deref());
        }
        match result {
            Ok((created, updated, forgotten)) => {
                report.ran += 1;
                report.memories_created += created;
                report.memories_updated += updated;
                report.memories_forgotten += forgotten;
            }
            Err(e) => {
                let message = e.to_string();
                self.store().record_job_failure(user, job.id, &message)?;
                report.failed += 1;
                report.errors.push((job.id, message));
            }
        }
        Ok(())
    }

    /// Run `user`'s pending jobs, oldest first, until none is runnable. Each job's results commit
    /// with its completion; a failure counts an attempt and leaves the job pending. Jobs that
    /// failed `max_attempts` times are reported as stuck and left alone.
    ///
    /// The jobs run under this engine's lease on the user's jobs (see `Store::lease_jobs`), so
    /// two engines over one database (two servers) never run one user's jobs at once, and jobs
    /// keep their order. When another engine holds the lease, nothing runs here: that engine
    /// runs them, or they are picked up once its lease runs out.
    pub fn run_pending(&self, user: &UserKey) -> EngineResult<JobReport> {
        let mut report = JobReport::default();
        let mut tried: HashSet<JobId> = HashSet::new();
        let mut leased = false;
        let result = loop {
            let runnable = match self.runnable_jobs(user, &mut tried, &mut report) {
                Ok(runnable) => runnable,
                Err(e) => break Err(e),
            };
            if runnable.is_empty() {
                break Ok(());
            }
            match self.renew_lease(user) {
                Ok(true) => leased = true,
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
            // Read the list again under the lease: the engine that held it before may have
            // finished some of these jobs between the first read and the lease.
            let runnable = match self.runnable_jobs(user, &mut tried, &mut report) {
                Ok(runnable) if runnable.is_empty() => break Ok(()),
                Ok(runnable) => runnable,
                Err(e) => break Err(e),
            };
            if let Err(e) = self.run_batch(user, runnable, &mut tried, &mut report) {
                break Err(e);
            }
        };
        let released = if leased {
            self.store().release_jobs(user, &self.holder)
        } else {
            Ok(())
        };
        result?;
        released?;
        Ok(report)
    }

    /// Pending jobs not tried yet in this run; jobs past `max_attempts` go to the report as
    /// stuck (once).
    fn runnable_jobs(
        &self,
        user: &UserKey,
        tried: &mut HashSet<JobId>,
        report: &mut JobReport,
    ) -> EngineResult<Vec<Job>> {
        let mut runnable = Vec::new();
        for job in self.store().pending_jobs(user, usize::MAX)? {
            if job.attempts >= self.settings.max_attempts {
                if tried.insert(job.id) {
                    let error = job.last_error.clone().unwrap_or_default();
                    report.stuck.push((job.id, error));
                }
            } else if !tried.contains(&job.id) {
                runnable.push(job);
            }
        }
        Ok(runnable)
    }

    /// Take or renew this engine's lease on `user`'s jobs; `false` if another engine holds it.
    fn renew_lease(&self, user: &UserKey) -> EngineResult<bool> {
        Ok(self
            .store()
            .lease_jobs(user, &self.holder, self.settings.lease())?)
    }

    /// Run `jobs` in order, renewing the lease before each one after the first; stops early
    /// (leaving the rest pending) if the lease was lost meanwhile.
    fn run_batch(
        &self,
        user: &UserKey,
        jobs: Vec<Job>,
        tried: &mut HashSet<JobId>,
        report: &mut JobReport,
    ) -> EngineResult<()> {
        for (i, job) in jobs.into_iter().enumerate() {
            if i > 0 && !self.renew_lease(user)? {
                return Ok(());
            }
            tried.insert(job.id);
            self.run_one(user, &job, report)?;
        }
        Ok(())
    }

    /// Run the pending jobs of every user (after a crash, or when jobs do not run inline).
    pub fn run_all_pending(&self) -> EngineResult<JobReport> {
        let mut report = JobReport::default();
        for user in self.store().users()? {
            report.absorb(self.run_pending(&user)?);
        }
        Ok(report)
    }

    /// Run one pending job now, even one that is stuck after repeated failures. Refused with a
    /// conflict while another engine holds the lease on the user's jobs.
    pub fn retry_job(&self, user: &UserKey, id: JobId) -> EngineResult<JobReport> {
        let job = self.stored_job(user, id)?;
        if !job.is_pending() {
            return Err(
                mnemos_core::Error::invalid(format!("job {id} has already finished")).into(),
            );
        }
        if !self.renew_lease(user)? {
            return Err(mnemos_core::StoreError::from(Conflict::JobsLeased).into());
        }
        let mut report = JobReport::default();
        let result = self.run_one(user, &job, &mut report);
        let released = self.store().release_jobs(user, &self.holder);
        result?;
        released?;
        Ok(report)
    }
}
