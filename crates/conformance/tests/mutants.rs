//! Every check can fail: each one is run against a deliberately broken store (the reference
//! store with one contract violation injected) and must panic.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mnemos_core::{
    Access, ApiKey, ApiKeyId, BatchUpdate, CatchUp, ForgetCause, HistoryEntry, Job, JobId, Memory,
    MemoryFilter, MemoryId, MemoryPatch, MemoryState, MemoryStore, Page, Paged, PurgeReport,
    StoreError, StoreInfo, StoreRead, StoreResult, Timestamp, Turn, TurnId, UserExport, UserKey,
    VectorRow, VectorSearch, WriteBatch,
};
use mnemos_core::{
    BindingRead, BindingWrite, JobRead, JobWrite, KeyRead, KeyWrite, MemoryRead, MemoryWrite,
    VectorRead, VectorWrite,
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
    IgnoresPrecondition,
    AcceptsStoredKeys,
    IgnoresTimeFilter,
    KeysInInsertOrder,
    PurgeRevokesTenantKeys,
    RevokeMovesTime,
    LeaseIgnoresHolder,
    LeaseNeverExpires,
    PurgeKeepsLease,
    UsersOnlyFromTurns,
    /// Offers a vector search that scores a memory by its first window only.
    NearestFirstWindowOnly,
    /// Offers a vector search and says in `info` that it has none.
    InfoDeniesSearch,
    /// Defers its index and never catches up.
    NeverCaughtUp,
    ImportDropsHistory,
    ImportDropsFinishedJobs,
    ImportOverwrites,
    ExportOnlyActive,
    IgnoresValidityFilter,
    DropsSupersededBy,
    /// Erases a memory's row but keeps the words in its earlier versions.
    ErasureKeepsHistory,
    ErasureKeepsTurnText,
    /// Reads a forget's cause back out of its reason's words instead of the stored cause.
    CauseFromReason,
    /// Lists every active memory as unembedded, vectors or not.
    UnembeddedIgnoresModel,
    /// Deletes nothing when asked to keep one model's vectors.
    RetainKeepsAll,
    /// Binds whatever the binding was.
    BindIgnoresExpected,
}

impl Bug {
    /// Bugs of a store that searches vectors itself (the others model stores that do not).
    fn offers_search(self) -> bool {
        matches!(
            self,
            Bug::NearestFirstWindowOnly | Bug::InfoDeniesSearch | Bug::NeverCaughtUp
        )
    }
}

struct Mutant {
    inner: MemoryStore,
    bug: Bug,
    users: Mutex<Vec<UserKey>>,
    writes: AtomicUsize,
    /// Vectors written per memory, so a buggy forget can hand them back.
    vectors: Mutex<Vec<VectorRow>>,
    /// API keys as they were put, for a listing that forgets to sort.
    keys_in_insert_order: Mutex<Vec<ApiKey>>,
    /// Who last took each user's job lease (user, holder).
    lease_holders: Mutex<Vec<(UserKey, String)>>,
    /// History entries as they were before an erasure, for a buggy history that keeps them.
    erased_history: Mutex<Vec<HistoryEntry>>,
    /// Whether it offers a (brute-force) vector search, and the models prepared for it.
    search: bool,
    search_dims: Mutex<Vec<(String, usize)>>,
}

impl Mutant {
    fn new(bug: Bug) -> Self {
        Mutant {
            inner: MemoryStore::new(),
            bug,
            users: Mutex::new(Vec::new()),
            writes: AtomicUsize::new(0),
            vectors: Mutex::new(Vec::new()),
            keys_in_insert_order: Mutex::new(Vec::new()),
            lease_holders: Mutex::new(Vec::new()),
            erased_history: Mutex::new(Vec::new()),
            search: bug.offers_search(),
            search_dims: Mutex::new(Vec::new()),
        }
    }

    /// A mutant with `bug` that also offers a correct vector search.
    fn with_search(bug: Bug) -> Self {
        Mutant {
            search: true,
            ..Mutant::new(bug)
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

impl MemoryRead for Mutant {
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

    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>> {
        self.inner.turns_by_keys(user, keys)
    }

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        let found = self.leak(user, |u| self.inner.memory(u, id))?;
        Ok(found.map(|mut m| {
            if self.bug == Bug::DropsSupersededBy {
                m.superseded_by = None;
            }
            if self.bug == Bug::CauseFromReason {
                if let MemoryState::Forgotten { reason, cause, .. } = &mut m.state {
                    *cause = ForgetCause::from_legacy_reason(reason);
                }
            }
            m
        }))
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
        if self.bug == Bug::IgnoresTimeFilter {
            filter.created_since = None;
        }
        if self.bug == Bug::IgnoresValidityFilter {
            filter.validity = mnemos_core::Validity::Any;
        }
        let mut paged = self.inner.list(user, &filter, page)?;
        if self.bug == Bug::ListReversed {
            paged.items.reverse();
        }
        Ok(paged)
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        let mut entries = self.inner.history(user, id)?;
        if self.bug == Bug::ErasureKeepsHistory {
            let kept = self.erased_history.lock();
            for entry in entries.iter_mut() {
                if let Some(old) = kept
                    .iter()
                    .find(|o| o.memory_id == id && o.version == entry.version)
                {
                    *entry = old.clone();
                }
            }
        }
        if self.bug == Bug::HidesUpdateHistory {
            entries.retain(|h| h.change != mnemos_core::Change::Updated);
        }
        Ok(entries)
    }

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        let mut users = self.inner.users()?;
        if self.bug == Bug::UsersOnlyFromTurns {
            users.retain(|u| self.inner.last_round(u).is_ok_and(|r| r.is_some()));
        }
        Ok(users)
    }

    fn data_version(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.inner.data_version(user)
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

    fn export_user(&self, user: &UserKey) -> StoreResult<UserExport> {
        let mut export = self.inner.export_user(user)?;
        if self.bug == Bug::ExportOnlyActive {
            export.memories.retain(|m| m.memory.is_active());
        }
        Ok(export)
    }
}

impl JobRead for Mutant {
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
}

impl KeyRead for Mutant {
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>> {
        self.inner.api_key_by_hash(hash)
    }

    fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        if self.bug == Bug::KeysInInsertOrder {
            return Ok(self.keys_in_insert_order.lock().clone());
        }
        self.inner.api_keys()
    }
}

impl VectorRead for Mutant {
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

    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>> {
        if self.bug == Bug::UnembeddedIgnoresModel {
            return self.inner.unembedded(user, "no such model", limit);
        }
        self.inner.unembedded(user, model, limit)
    }

    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>> {
        self.inner.vector_models()
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        self.search.then_some(self as &dyn VectorSearch)
    }
}

impl BindingRead for Mutant {
    fn binding(&self) -> StoreResult<Option<String>> {
        self.inner.binding()
    }
}

impl BindingWrite for Mutant {
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()> {
        if self.bug == Bug::BindIgnoresExpected {
            let found = self.inner.binding()?;
            return self.inner.bind(model, found.as_deref());
        }
        self.inner.bind(model, expected)
    }
}

impl StoreRead for Mutant {
    fn info(&self) -> StoreInfo {
        let mut info = self.inner.info();
        if self.search && self.bug != Bug::InfoDeniesSearch {
            info.vector_search = Ok("brute force".to_string());
        }
        info
    }
}

impl MemoryWrite for Mutant {
    fn write(&self, mut batch: WriteBatch) -> StoreResult<()> {
        if let Ok(Some(user)) = batch.user() {
            let mut users = self.users.lock();
            if !users.contains(&user) {
                users.push(user);
            }
        }
        match self.bug {
            Bug::IgnoresPrecondition => batch.precondition = mnemos_core::Precondition::None,
            Bug::AcceptsStoredKeys => {
                if let Ok(Some(user)) = batch.user() {
                    for t in &mut batch.turns {
                        let Some(key) = t.key.clone() else { continue };
                        if !self
                            .inner
                            .turns_by_keys(&user, std::slice::from_ref(&key))?
                            .is_empty()
                        {
                            t.key = Some(format!("{key}#again"));
                        }
                    }
                }
            }
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
            Bug::ErasureKeepsTurnText => batch.turn_erasures.clear(),
            Bug::ErasureKeepsHistory => {
                if let Ok(Some(user)) = batch.user() {
                    for erase in &batch.erasures {
                        let old = self.inner.history(&user, erase.id)?;
                        self.erased_history.lock().extend(old);
                    }
                }
            }
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
                        let _ = self.inner.write(WriteBatch {
                            user: Some(user.clone()),
                            updates: vec![u],
                            ..Default::default()
                        });
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

    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        self.inner.record_access(user, accesses)?;
        if self.bug == Bug::AccessBumpsVersion {
            for (id, access) in accesses {
                self.inner.write(WriteBatch {
                    user: Some(user.clone()),
                    updates: vec![BatchUpdate {
                        id: *id,
                        patch: MemoryPatch::default(),
                        at: access.at,
                    }],
                    ..Default::default()
                })?;
            }
        }
        Ok(())
    }

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        if self.bug == Bug::PurgeKeepsLease {
            // Purge everything but the lease: whoever held it holds it again.
            let holder = self
                .lease_holders
                .lock()
                .iter()
                .find(|(u, _)| u == user)
                .cloned();
            let report = self.inner.purge_user(user)?;
            if let Some((_, holder)) = holder {
                self.inner
                    .lease_jobs(user, &holder, Duration::from_secs(600))?;
            }
            return Ok(report);
        }
        self.lease_holders.lock().retain(|(u, _)| u != user);
        if self.bug == Bug::PurgeRevokesTenantKeys {
            for key in self.inner.api_keys()? {
                if key.tenant == user.tenant {
                    self.inner.revoke_api_key(key.id, Timestamp(0))?;
                }
            }
        }
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

    fn import_user(&self, export: &UserExport) -> StoreResult<()> {
        let mut export = export.clone();
        match self.bug {
            Bug::ImportDropsHistory => {
                for m in &mut export.memories {
                    m.history.truncate(1);
                }
            }
            Bug::ImportDropsFinishedJobs => export.jobs.retain(Job::is_pending),
            Bug::ImportOverwrites => {
                self.inner.purge_user(&export.user)?;
            }
            _ => {}
        }
        self.inner.import_user(&export)
    }
}

impl JobWrite for Mutant {
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

    fn lease_jobs(&self, user: &UserKey, holder: &str, lease: Duration) -> StoreResult<bool> {
        let mut holders = self.lease_holders.lock();
        let current = holders.iter().position(|(u, _)| u == user);
        let taken = match self.bug {
            Bug::LeaseIgnoresHolder => true,
            Bug::LeaseNeverExpires => current.is_none_or(|i| holders[i].1 == holder),
            _ => self.inner.lease_jobs(user, holder, lease)?,
        };
        if taken {
            if let Some(i) = current {
                holders.remove(i);
            }
            holders.push((user.clone(), holder.to_string()));
        }
        Ok(taken)
    }

    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()> {
        self.lease_holders
            .lock()
            .retain(|(u, h)| !(u == user && h == holder));
        self.inner.release_jobs(user, holder)
    }
}

impl KeyWrite for Mutant {
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        self.inner.put_api_key(key)?;
        self.keys_in_insert_order.lock().push(key.clone());
        Ok(())
    }

    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>> {
        let revoked = self.inner.revoke_api_key(id, at)?;
        if self.bug == Bug::RevokeMovesTime {
            return Ok(revoked.map(|k| ApiKey {
                revoked_at: Some(at),
                ..k
            }));
        }
        Ok(revoked)
    }
}

impl VectorWrite for Mutant {
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

    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        if self.bug == Bug::RetainKeepsAll {
            return Ok(0);
        }
        self.inner.retain_vectors(user, model)
    }
}

impl VectorSearch for Mutant {
    fn prepare(&self, model: &str, dim: usize) -> StoreResult<()> {
        let mut dims = self.search_dims.lock();
        match dims.iter().find(|(m, _)| m == model) {
            Some((_, d)) if *d == dim => Ok(()),
            Some(_) => Err(StoreError::InvalidWrite("other dimension".into())),
            None => {
                dims.push((model.to_string(), dim));
                Ok(())
            }
        }
    }

    fn nearest(
        &self,
        user: &UserKey,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> StoreResult<Vec<(MemoryId, f32)>> {
        let dims = self.search_dims.lock().clone();
        let Some(&(_, dim)) = dims.iter().find(|(m, _)| m == model) else {
            return Err(StoreError::InvalidWrite("not prepared".into()));
        };
        if query.len() != dim {
            return Err(StoreError::InvalidWrite("wrong dimension".into()));
        }
        let mut scored: Vec<(MemoryId, f32)> = self
            .inner
            .vectors(user, model)?
            .into_iter()
            .map(|row| {
                let windows = row.vector.chunks_exact(dim);
                let taken = if self.bug == Bug::NearestFirstWindowOnly {
                    1
                } else {
                    usize::MAX
                };
                let best = windows
                    .take(taken)
                    .map(|w| mnemos_core::embed::cosine(query, w) as f32)
                    .fold(f32::MIN, f32::max);
                (row.memory_id, best)
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        Ok(scored)
    }

    fn coverage(&self, user: &UserKey, model: &str) -> StoreResult<Vec<(MemoryId, usize)>> {
        Ok(self
            .inner
            .vectors(user, model)?
            .into_iter()
            .map(|row| (row.memory_id, row.vector.len()))
            .collect())
    }

    /// Exact search indexes nothing: there is never anything to catch up on.
    fn catch_up(&self, _model: &str, _max_windows: usize) -> StoreResult<CatchUp> {
        if self.bug == Bug::NeverCaughtUp {
            return Ok(CatchUp {
                indexed: 0,
                remaining: 1,
            });
        }
        Ok(CatchUp::default())
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

/// For every conformance check, the injected bugs it must catch.
const CATCHES: &[(&str, &[Bug])] = &[
    ("crud_round_trip", &[Bug::DropsSpeaker]),
    ("duplicate_ids_rejected_atomically", &[Bug::NonAtomicWrite]),
    ("memories_by_ids", &[Bug::MemoriesSorted]),
    ("pagination", &[Bug::ListReversed]),
    (
        "list_filters",
        &[Bug::IgnoresMetadataFilter, Bug::IgnoresTimeFilter],
    ),
    ("update_versions_and_history", &[Bug::HidesUpdateHistory]),
    (
        "forget_semantics",
        &[Bug::BatchForgetKeepsVectors, Bug::CauseFromReason],
    ),
    ("record_access_appends", &[Bug::AccessBumpsVersion]),
    ("history_in_order", &[Bug::HidesUpdateHistory]),
    ("purge_user_removes_only_that_user", &[Bug::PurgeMiscounts]),
    ("scope_isolation", &[Bug::LeaksAcrossUsers]),
    ("last_round", &[Bug::LastRoundCountsMemories]),
    ("last_round_precondition", &[Bug::IgnoresPrecondition]),
    ("turn_keys_unique_per_user", &[Bug::AcceptsStoredKeys]),
    ("concurrent_writers", &[Bug::LosesSomeWrites]),
    ("validation_rejects_bad_input", &[Bug::AcceptsNul]),
    ("unicode_round_trip", &[Bug::LossyUnicode]),
    ("vectors_bit_exact", &[Bug::FlushesNegativeZero]),
    (
        "unembedded_counted_and_retained",
        &[Bug::UnembeddedIgnoresModel, Bug::RetainKeepsAll],
    ),
    ("binding_compare_and_set", &[Bug::BindIgnoresExpected]),
    (
        "put_vectors_replaces_within_user",
        &[Bug::PutVectorsIgnoresUser],
    ),
    ("jobs_enqueue_in_order", &[Bug::PendingJobsReversed]),
    (
        "finishing_jobs_at_most_once",
        &[Bug::FinishingTwiceIsIgnored],
    ),
    (
        "batch_edits_match_one_by_one",
        &[Bug::BatchForgetKeepsVectors],
    ),
    (
        "batch_edits_rejected_atomically",
        &[Bug::BatchEditsNotAtomic],
    ),
    ("job_failures_counted", &[Bug::FailureCountedOnce]),
    (
        "jobs_isolated_and_purged",
        &[Bug::LeaksAcrossUsers, Bug::PurgeKeepsPendingJobs],
    ),
    (
        "api_keys_found_listed_and_kept",
        &[Bug::KeysInInsertOrder, Bug::PurgeRevokesTenantKeys],
    ),
    ("api_key_revocation", &[Bug::RevokeMovesTime]),
    (
        "job_leases_exclusive_until_expiry",
        &[
            Bug::LeaseIgnoresHolder,
            Bug::LeaseNeverExpires,
            Bug::PurgeKeepsLease,
        ],
    ),
    ("users_listed_by_memories_alone", &[Bug::UsersOnlyFromTurns]),
    (
        "supersession_and_validity",
        &[Bug::IgnoresValidityFilter, Bug::DropsSupersededBy],
    ),
    (
        "erasure_leaves_no_words",
        &[Bug::ErasureKeepsHistory, Bug::ErasureKeepsTurnText],
    ),
    (
        "vector_search_when_offered",
        &[
            Bug::NearestFirstWindowOnly,
            Bug::InfoDeniesSearch,
            Bug::NeverCaughtUp,
        ],
    ),
    (
        "export_import_round_trip",
        &[
            Bug::ImportDropsHistory,
            Bug::ImportDropsFinishedJobs,
            Bug::ImportOverwrites,
            Bug::ExportOnlyActive,
        ],
    ),
];

#[test]
fn a_correct_vector_search_passes() {
    // Guards the vector-search mutant: offered correctly, it passes the check.
    mnemos_conformance::vector_search_when_offered(&|| Mutant::with_search(Bug::DropsSpeaker));
}

#[test]
fn every_check_catches_its_bugs() {
    for (name, check) in mnemos_conformance::checks::<Mutant>() {
        let bugs = CATCHES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, bugs)| *bugs)
            .unwrap_or_default();
        for bug in bugs {
            must_fail(*bug, check);
        }
    }
}

/// A check without a mutant could pass a store that breaks exactly what it checks: every
/// check of the suite (including ones added later) must name at least one bug it catches.
#[test]
fn every_check_has_a_mutant() {
    let names: Vec<&str> = mnemos_conformance::checks::<Mutant>()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, mnemos_conformance::CHECK_NAMES);
    let uncovered: Vec<&&str> = names
        .iter()
        .filter(|name| {
            !CATCHES
                .iter()
                .any(|(n, bugs)| n == *name && !bugs.is_empty())
        })
        .collect();
    assert!(
        uncovered.is_empty(),
        "checks without a mutant: {uncovered:?}"
    );
    let unknown: Vec<&str> = CATCHES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !names.contains(n))
        .collect();
    assert!(
        unknown.is_empty(),
        "mutants for checks that do not exist: {unknown:?}"
    );
}
