//! Every check can fail: each one is run against a deliberately broken store (the reference
//! store with one contract violation injected) and must panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use mnemos_core::{
    Access, HistoryEntry, Job, JobId, Memory, MemoryFilter, MemoryId, MemoryPatch, MemoryStore,
    Moment, Page, Paged, PurgeReport, Store, StoreResult, Turn, TurnId, UserKey, VectorRow,
    WriteBatch,
};
use parking_lot::Mutex;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    DropsSpeaker,
    NonAtomicWrite,
    MemoriesSorted,
    ListReversed,
    IgnoresMetadataFilter,
    HidesUpdateHistory,
    ForgetKeepsVectors,
    AccessBumpsVersion,
    PurgeMiscounts,
    LeaksAcrossUsers,
    LastRoundCountsMemories,
    LosesSomeWrites,
    AcceptsNul,
    LossyUnicode,
    FlushesNegativeZero,
    PutVectorsIgnoresUser,
    PendingJobsReversed,
    FinishingTwiceIsIgnored,
    BatchForgetKeepsVectors,
    BatchEditsNotAtomic,
    FailureCountedOnce,
    PurgeKeepsPendingJobs,
}

struct Mutant {
    inner: MemoryStore,
    bug: Bug,
    users: Mutex<Vec<UserKey>>,
    writes: AtomicUsize,
    /// Vectors written per memory, so a buggy forget can hand them back.
    vectors: Mutex<Vec<VectorRow>>,
}

impl Mutant {
    fn new(bug: Bug) -> Self {
        Mutant {
            inner: MemoryStore::new(),
            bug,
            users: Mutex::new(Vec::new()),
            writes: AtomicUsize::new(0),
            vectors: Mutex::new(Vec::new()),
        }
    }

    fn leak<T>(
        &self,
        user: &UserKey,
        mut read: impl FnMut(&UserKey) -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<T>> {
        if let Some(found) = read(user)? {
            return Ok(Some(found));
        }
        if self.bug == Bug::LeaksAcrossUsers {
            for other in self.users.lock().clone() {
                if let Some(found) = read(&other)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }
}

impl Store for Mutant {
    fn write(&self, mut batch: WriteBatch) -> StoreResult<()> {
        if let Ok(Some(user)) = batch.user() {
            let mut users = self.users.lock();
            if !users.contains(&user) {
                users.push(user);
            }
        }
        match self.bug {
            Bug::NonAtomicWrite if batch.turns.len() > 1 => {
                for t in batch.turns.drain(..) {
                    self.inner.write(WriteBatch {
                        turns: vec![t],
                        ..Default::default()
                    })?;
                }
                return self.inner.write(batch);
            }
            Bug::LosesSomeWrites if self.writes.fetch_add(1, Ordering::SeqCst) % 500 == 499 => {
                return Ok(())
            }
            Bug::AcceptsNul => {
                for t in &mut batch.turns {
                    t.text = t.text.replace('\0', " ");
                }
                for m in &mut batch.memories {
                    m.text = m.text.replace('\0', " ");
                }
            }
            Bug::ForgetKeepsVectors => self.vectors.lock().extend(batch.vectors.iter().cloned()),
            Bug::FinishingTwiceIsIgnored => {
                if let Ok(Some(user)) = batch.user() {
                    batch.finished_jobs.retain(|(id, _)| {
                        !matches!(self.inner.job(&user, *id), Ok(Some(j)) if !j.is_pending())
                    });
                }
            }
            Bug::BatchEditsNotAtomic => {
                if let Ok(Some(user)) = batch.user() {
                    for u in batch.updates.drain(..) {
                        let _ = self.inner.update(&user, u.id, &u.patch, u.at);
                    }
                }
            }
            Bug::BatchForgetKeepsVectors => {
                self.vectors.lock().extend(batch.vectors.iter().cloned());
                let forgotten: Vec<MemoryId> = batch.forgets.iter().map(|f| f.id).collect();
                let user = batch.user();
                self.inner.write(batch)?;
                if let Ok(Some(user)) = user {
                    let kept: Vec<VectorRow> = self
                        .vectors
                        .lock()
                        .iter()
                        .filter(|v| forgotten.contains(&v.memory_id))
                        .cloned()
                        .collect();
                    self.inner.put_vectors(&user, &kept)?;
                }
                return Ok(());
            }
            _ => {}
        }
        self.inner.write(batch)
    }
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>> {
        let found = self.leak(user, |u| self.inner.turn(u, id))?;
        Ok(found.map(|mut t| {
            if self.bug == Bug::DropsSpeaker {
                t.speaker = None;
            }
            t
        }))
    }
    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>> {
        let mut paged = self.inner.turns(user, page)?;
        if self.bug == Bug::LossyUnicode {
            for t in &mut paged.items {
                t.text = t
                    .text
                    .chars()
                    .map(|c| if c.len_utf8() == 4 { '\u{FFFD}' } else { c })
                    .collect();
            }
        }
        Ok(paged)
    }
    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        self.leak(user, |u| self.inner.memory(u, id))
    }
    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>> {
        let mut found = self.inner.memories(user, ids)?;
        if self.bug == Bug::MemoriesSorted {
            found.sort_by_key(|m| m.id);
        }
        Ok(found)
    }
    fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> StoreResult<Paged<Memory>> {
        let mut filter = filter.clone();
        if self.bug == Bug::IgnoresMetadataFilter {
            filter.metadata.clear();
        }
        let mut paged = self.inner.list(user, &filter, page)?;
        if self.bug == Bug::ListReversed {
            paged.items.reverse();
        }
        Ok(paged)
    }
    fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        self.inner.update(user, id, patch, at)
    }
    fn forget(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        let forgotten = self.inner.forget(user, id, reason, at)?;
        if self.bug == Bug::ForgetKeepsVectors && forgotten.is_some() {
            // Re-attach the dropped vectors through a batch carrying an unrelated memory.
            let kept: Vec<VectorRow> = self
                .vectors
                .lock()
                .iter()
                .filter(|v| v.memory_id == id)
                .cloned()
                .collect();
            if let Some(mut carrier) = self
                .inner
                .list(user, &MemoryFilter::active(), Page::first(1))?
                .items
                .pop()
            {
                carrier.id = MemoryId::new();
                carrier.text = "carrier".into();
                self.inner.write(WriteBatch {
                    turns: vec![],
                    memories: vec![carrier],
                    vectors: kept,
                    ..Default::default()
                })?;
            }
        }
        Ok(forgotten)
    }
    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        let mut entries = self.inner.history(user, id)?;
        if self.bug == Bug::HidesUpdateHistory {
            entries.retain(|h| h.change != mnemos_core::Change::Updated);
        }
        Ok(entries)
    }
    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        self.inner.record_access(user, accesses)?;
        if self.bug == Bug::AccessBumpsVersion {
            for (id, access) in accesses {
                self.inner
                    .update(user, *id, &MemoryPatch::default(), access.at)?;
            }
        }
        Ok(())
    }
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        if self.bug == Bug::PutVectorsIgnoresUser {
            // Writes each row to whichever user owns the memory.
            for other in self.users.lock().clone() {
                for row in rows {
                    let _ = self.inner.put_vectors(&other, std::slice::from_ref(row));
                }
            }
            return Ok(());
        }
        self.inner.put_vectors(user, rows)
    }
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>> {
        let mut rows = self.inner.vectors(user, model)?;
        if self.bug == Bug::FlushesNegativeZero {
            for row in &mut rows {
                for x in &mut row.vector {
                    if *x == 0.0 {
                        *x = 0.0;
                    }
                }
            }
        }
        Ok(rows)
    }
    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        if self.bug == Bug::PurgeKeepsPendingJobs {
            let jobs = self.inner.pending_jobs(user, usize::MAX)?;
            let report = self.inner.purge_user(user)?;
            self.inner.write(WriteBatch {
                jobs,
                ..Default::default()
            })?;
            return Ok(report);
        }
        let mut report = self.inner.purge_user(user)?;
        if self.bug == Bug::PurgeMiscounts {
            report.history_entries = report.memories;
        }
        Ok(report)
    }
    fn users(&self) -> StoreResult<Vec<UserKey>> {
        self.inner.users()
    }
    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        let turns = self.inner.last_round(user)?;
        if self.bug != Bug::LastRoundCountsMemories {
            return Ok(turns);
        }
        let all = MemoryFilter {
            state: mnemos_core::StateFilter::All,
            ..Default::default()
        };
        let memories = self.inner.list(user, &all, Page::first(Page::MAX_LIMIT))?;
        Ok(memories
            .items
            .iter()
            .map(|m| m.created.round)
            .chain(turns)
            .max())
    }
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
        self.leak(user, |u| self.inner.job(u, id))
    }
    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>> {
        let mut jobs = self.inner.pending_jobs(user, limit)?;
        if self.bug == Bug::PendingJobsReversed {
            jobs.reverse();
        }
        Ok(jobs)
    }
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>> {
        if self.bug == Bug::FailureCountedOnce {
            if let Some(job) = self.inner.job(user, id)?.filter(|j| j.attempts > 0) {
                return Ok(Some(job));
            }
        }
        self.inner.record_job_failure(user, id, error)
    }
}

fn must_fail(bug: Bug, check: fn(&dyn Fn() -> Mutant)) {
    let result = catch_unwind(AssertUnwindSafe(|| check(&|| Mutant::new(bug))));
    assert!(result.is_err(), "the check passed a store with bug {bug:?}");
}

#[test]
fn a_correct_wrapper_passes() {
    // Guards the mutants themselves: with a bug that no check exercises, everything passes.
    mnemos_conformance::run_all(&|| mnemos_conformance::Guarded::new(MemoryStore::new(), ()));
}

#[test]
fn every_check_catches_its_bug() {
    use mnemos_conformance as c;
    must_fail(Bug::DropsSpeaker, c::crud_round_trip);
    must_fail(Bug::NonAtomicWrite, c::duplicate_ids_rejected_atomically);
    must_fail(Bug::MemoriesSorted, c::memories_by_ids);
    must_fail(Bug::ListReversed, c::pagination);
    must_fail(Bug::IgnoresMetadataFilter, c::list_filters);
    must_fail(Bug::HidesUpdateHistory, c::update_versions_and_history);
    must_fail(Bug::ForgetKeepsVectors, c::forget_semantics);
    must_fail(Bug::AccessBumpsVersion, c::record_access_appends);
    must_fail(Bug::HidesUpdateHistory, c::history_in_order);
    must_fail(Bug::PurgeMiscounts, c::purge_user_removes_only_that_user);
    must_fail(Bug::LeaksAcrossUsers, c::scope_isolation);
    must_fail(Bug::LastRoundCountsMemories, c::last_round);
    must_fail(Bug::LosesSomeWrites, c::concurrent_writers);
    must_fail(Bug::AcceptsNul, c::validation_rejects_bad_input);
    must_fail(Bug::LossyUnicode, c::unicode_round_trip);
    must_fail(Bug::FlushesNegativeZero, c::vectors_bit_exact);
    must_fail(
        Bug::PutVectorsIgnoresUser,
        c::put_vectors_replaces_within_user,
    );
    must_fail(Bug::PendingJobsReversed, c::jobs_enqueue_in_order);
    must_fail(Bug::FinishingTwiceIsIgnored, c::finishing_jobs_at_most_once);
    must_fail(
        Bug::BatchForgetKeepsVectors,
        c::batch_edits_match_update_and_forget,
    );
    must_fail(Bug::BatchEditsNotAtomic, c::batch_edits_rejected_atomically);
    must_fail(Bug::FailureCountedOnce, c::job_failures_counted);
    must_fail(Bug::LeaksAcrossUsers, c::jobs_isolated_and_purged);
    must_fail(Bug::PurgeKeepsPendingJobs, c::jobs_isolated_and_purged);
}
