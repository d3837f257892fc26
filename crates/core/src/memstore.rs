//! The in-memory reference `Store`: the simplest correct implementation of the contract, used by
//! tests and as the oracle the conformance suite is written against. Nothing is persisted.

use std::collections::{BTreeMap, HashMap, HashSet};

use parking_lot::RwLock;

use crate::error::{Conflict, StoreError};
use crate::export::{MemoryExport, UserExport};
use crate::model::{
    Access, ApiKey, ApiKeyId, Change, HistoryEntry, Job, JobId, Memory, MemoryId, Timestamp, Turn,
    TurnId, UserKey,
};
use crate::store::{
    check_bind, check_new_api_key, sort_model_counts, BindingRead, BindingWrite, JobRead, JobWrite,
    KeyRead, KeyWrite, MemoryFilter, MemoryRead, MemoryWrite, Page, Paged, PurgeReport, StoreRead,
    StoreResult, VectorRead, VectorRow, VectorWrite, WriteBatch,
};
use crate::store_vectors::{BackendKind, StoreInfo, VectorSearch};

#[derive(Default)]
struct UserData {
    turns: HashMap<TurnId, Turn>,
    memories: HashMap<MemoryId, Memory>,
    history: HashMap<MemoryId, Vec<HistoryEntry>>,
    /// memory id → (model → vector)
    vectors: HashMap<MemoryId, BTreeMap<String, Vec<f32>>>,
    jobs: HashMap<JobId, Job>,
}

/// A `Store` kept entirely in process memory.
#[derive(Default)]
pub struct MemoryStore {
    users: RwLock<HashMap<UserKey, UserData>>,
    /// API keys in the order they were stored (which is creation order for fresh keys).
    api_keys: RwLock<Vec<ApiKey>>,
    /// Job leases: user → (holder, when the lease runs out).
    job_leases: parking_lot::Mutex<HashMap<UserKey, (String, std::time::Instant)>>,
    /// The vector space the store is bound to.
    binding: parking_lot::Mutex<Option<String>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }
}

fn memory_order(a: &Memory, b: &Memory) -> std::cmp::Ordering {
    (a.created.round, a.created.time, a.id).cmp(&(b.created.round, b.created.time, b.id))
}

type Staged = HashMap<MemoryId, (Memory, Vec<HistoryEntry>)>;

impl UserData {
    /// What only the stored data can refute: ids or turn keys already stored, vectors of
    /// unknown memories, jobs to finish that are unknown or done.
    fn check_against(&self, batch: &WriteBatch) -> StoreResult<()> {
        let invalid = StoreError::InvalidWrite;
        if let Some(turn) = batch.turns.iter().find(|t| self.turns.contains_key(&t.id)) {
            return Err(invalid(format!("turn {} already exists", turn.id)));
        }
        // One pass over the stored turns, whatever the batch's size (ingest writes many); the
        // first of the batch's keys already stored is the one reported.
        let mut keys = batch.turns.iter().filter_map(|t| t.key.as_ref()).peekable();
        if keys.peek().is_some() {
            let stored: HashSet<&str> = self
                .turns
                .values()
                .filter_map(|t| t.key.as_deref())
                .collect();
            if let Some(key) = keys.find(|key| stored.contains(key.as_str())) {
                return Err(Conflict::DuplicateTurnKey { key: key.clone() }.into());
            }
        }
        if let Some(m) = batch
            .memories
            .iter()
            .find(|m| self.memories.contains_key(&m.id))
        {
            return Err(invalid(format!("memory {} already exists", m.id)));
        }
        for row in &batch.vectors {
            let known = batch.memories.iter().any(|m| m.id == row.memory_id)
                || self.memories.contains_key(&row.memory_id);
            if !known {
                return Err(invalid(format!(
                    "vector for unknown memory {}",
                    row.memory_id
                )));
            }
        }
        if let Some(job) = batch.jobs.iter().find(|j| self.jobs.contains_key(&j.id)) {
            return Err(invalid(format!("job {} already exists", job.id)));
        }
        if let Some(erase) = batch
            .turn_erasures
            .iter()
            .find(|e| !self.turns.contains_key(&e.id) && !batch.turns.iter().any(|t| t.id == e.id))
        {
            return Err(invalid(format!("erasure of unknown turn {}", erase.id)));
        }
        for (id, _) in &batch.finished_jobs {
            match self.jobs.get(id) {
                None => return Err(invalid(format!("unknown job {id}"))),
                Some(job) if !job.is_pending() => {
                    return Err(invalid(format!("job {id} is already finished")))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn last_round(&self) -> Option<u64> {
        self.turns.values().map(|t| t.at.round).max()
    }

    /// Edits of existing (or batch) memories applied to copies, so a failing one changes
    /// nothing.
    fn stage_edits(&self, batch: &WriteBatch) -> StoreResult<Staged> {
        let mut staged: Staged = HashMap::new();
        let current = |id: &MemoryId, staged: &Staged| {
            staged
                .get(id)
                .map(|(m, _)| m.clone())
                .or_else(|| batch.memories.iter().find(|m| m.id == *id).cloned())
                .or_else(|| self.memories.get(id).cloned())
        };
        let record = |staged: &mut Staged, (memory, entry): (Memory, HistoryEntry)| {
            let slot = staged
                .entry(memory.id)
                .or_insert_with(|| (memory.clone(), Vec::new()));
            slot.0 = memory;
            slot.1.push(entry);
        };
        for update in &batch.updates {
            let Some(memory) = current(&update.id, &staged) else {
                return Err(StoreError::InvalidWrite(format!(
                    "update of unknown memory {}",
                    update.id
                )));
            };
            let change = memory
                .updated(&update.patch, update.at)
                .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
            record(&mut staged, change);
        }
        for forget in &batch.forgets {
            let Some(memory) = current(&forget.id, &staged) else {
                return Err(StoreError::InvalidWrite(format!(
                    "forget of unknown memory {}",
                    forget.id
                )));
            };
            let change = memory
                .forgotten(&forget.reason, forget.cause.clone(), forget.at)
                .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
            record(&mut staged, change);
        }
        for erase in &batch.erasures {
            let Some(memory) = current(&erase.id, &staged) else {
                return Err(StoreError::InvalidWrite(format!(
                    "erasure of unknown memory {}",
                    erase.id
                )));
            };
            let erased = erase.apply(&memory);
            let change = Change::Erased {
                reason: erase.reason.clone(),
            };
            let entry = HistoryEntry::of(&erased, erase.at, change);
            record(&mut staged, (erased, entry));
        }
        Ok(staged)
    }

    /// Apply a checked batch and its staged edits.
    fn apply(&mut self, batch: WriteBatch, staged: Staged) {
        for turn in batch.turns {
            self.turns.insert(turn.id, turn);
        }
        for memory in batch.memories {
            self.history
                .entry(memory.id)
                .or_default()
                .push(HistoryEntry {
                    memory_id: memory.id,
                    version: memory.version,
                    at: memory.created,
                    change: Change::Created,
                    snapshot: memory.clone(),
                });
            self.memories.insert(memory.id, memory);
        }
        for row in batch.vectors {
            self.vectors
                .entry(row.memory_id)
                .or_default()
                .insert(row.model, row.vector);
        }
        for (id, (memory, entries)) in staged {
            if !memory.is_active() {
                self.vectors.remove(&id);
            }
            self.history.entry(id).or_default().extend(entries);
            self.memories.insert(id, memory);
        }
        for erase in &batch.erasures {
            for entry in self.history.entry(erase.id).or_default() {
                entry.snapshot = erase.scrub(&entry.snapshot);
            }
        }
        for erase in &batch.turn_erasures {
            if let Some(turn) = self.turns.get_mut(&erase.id) {
                *turn = erase.apply(turn);
            }
        }
        for job in batch.jobs {
            self.jobs.insert(job.id, job);
        }
        for (id, at) in batch.finished_jobs {
            if let Some(job) = self.jobs.get_mut(&id) {
                job.done = Some(at);
            }
        }
    }
}

impl UserData {
    fn holds_anything(&self) -> bool {
        !(self.turns.is_empty() && self.memories.is_empty() && self.jobs.is_empty())
    }

    fn export(&self, user: &UserKey) -> UserExport {
        let memories = self
            .memories
            .values()
            .map(|m| MemoryExport {
                memory: m.clone(),
                history: self.history.get(&m.id).cloned().unwrap_or_default(),
            })
            .collect();
        let vectors = self
            .vectors
            .iter()
            .flat_map(|(id, by_model)| {
                by_model.iter().map(|(model, vector)| VectorRow {
                    memory_id: *id,
                    model: model.clone(),
                    vector: vector.clone(),
                })
            })
            .collect();
        UserExport::new(
            user.clone(),
            self.turns.values().cloned().collect(),
            memories,
            vectors,
            self.jobs.values().cloned().collect(),
        )
    }

    /// Exactly what the export holds, into an empty user.
    fn import(export: &UserExport) -> Self {
        let mut data = UserData::default();
        for turn in &export.turns {
            data.turns.insert(turn.id, turn.clone());
        }
        for m in &export.memories {
            data.memories.insert(m.memory.id, m.memory.clone());
            data.history.insert(m.memory.id, m.history.clone());
        }
        for row in &export.vectors {
            data.vectors
                .entry(row.memory_id)
                .or_default()
                .insert(row.model.clone(), row.vector.clone());
        }
        for job in &export.jobs {
            data.jobs.insert(job.id, job.clone());
        }
        data
    }
}

impl MemoryRead for MemoryStore {
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.turns.get(&id).cloned()))
    }

    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>> {
        let users = self.users.read();
        let mut all: Vec<Turn> = users
            .get(user)
            .map(|d| d.turns.values().cloned().collect())
            .unwrap_or_default();
        all.sort_by_key(|t| (t.at.round, t.at.time, t.id));
        Ok(Paged::from_sorted(all, page))
    }

    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>> {
        let users = self.users.read();
        let Some(data) = users.get(user) else {
            return Ok(Vec::new());
        };
        let keys: HashSet<&str> = keys.iter().map(String::as_str).collect();
        Ok(data
            .turns
            .values()
            .filter(|t| t.key.as_deref().is_some_and(|k| keys.contains(k)))
            .cloned()
            .collect())
    }

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.memories.get(&id).cloned()))
    }

    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>> {
        let users = self.users.read();
        let Some(data) = users.get(user) else {
            return Ok(Vec::new());
        };
        Ok(ids
            .iter()
            .filter_map(|id| data.memories.get(id).cloned())
            .collect())
    }

    fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> StoreResult<Paged<Memory>> {
        let users = self.users.read();
        let mut all: Vec<Memory> = users
            .get(user)
            .map(|d| {
                d.memories
                    .values()
                    .filter(|m| filter.matches(m))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        all.sort_by(memory_order);
        Ok(Paged::from_sorted(all, page))
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.history.get(&id).cloned())
            .unwrap_or_default())
    }

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        let mut keys: Vec<UserKey> = self.users.read().keys().cloned().collect();
        keys.sort();
        Ok(keys)
    }

    fn data_version(&self, _user: &UserKey) -> StoreResult<Option<u64>> {
        Ok(None) // nothing else can write to this process's memory
    }

    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.turns.values().map(|t| t.at.round).max()))
    }

    fn export_user(&self, user: &UserKey) -> StoreResult<UserExport> {
        Ok(match self.users.read().get(user) {
            Some(data) => data.export(user),
            None => UserExport::empty(user.clone()),
        })
    }
}

impl JobRead for MemoryStore {
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.jobs.get(&id).cloned()))
    }

    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>> {
        let users = self.users.read();
        let mut pending: Vec<Job> = users
            .get(user)
            .map(|d| {
                d.jobs
                    .values()
                    .filter(|j| j.is_pending())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        pending.sort_by_key(|j| (j.created.round, j.created.time, j.id));
        pending.truncate(limit);
        Ok(pending)
    }
}

impl KeyRead for MemoryStore {
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>> {
        Ok(self
            .api_keys
            .read()
            .iter()
            .find(|k| k.hash == hash)
            .cloned())
    }

    fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let mut keys = self.api_keys.read().clone();
        keys.sort_by_key(|k| (k.created_at, k.id));
        Ok(keys)
    }
}

impl VectorRead for MemoryStore {
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>> {
        let users = self.users.read();
        let Some(data) = users.get(user) else {
            return Ok(Vec::new());
        };
        let mut rows: Vec<(&Memory, VectorRow)> = data
            .vectors
            .iter()
            .filter_map(|(id, by_model)| {
                let memory = data.memories.get(id).filter(|m| m.is_active())?;
                let vector = by_model.get(model)?;
                Some((
                    memory,
                    VectorRow {
                        memory_id: *id,
                        model: model.to_string(),
                        vector: vector.clone(),
                    },
                ))
            })
            .collect();
        rows.sort_by(|a, b| memory_order(a.0, b.0));
        Ok(rows.into_iter().map(|(_, row)| row).collect())
    }

    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>> {
        let users = self.users.read();
        let Some(data) = users.get(user) else {
            return Ok(Vec::new());
        };
        let mut missing: Vec<&Memory> = data
            .memories
            .values()
            .filter(|m| m.is_active())
            .filter(|m| {
                data.vectors
                    .get(&m.id)
                    .is_none_or(|v| !v.contains_key(model))
            })
            .collect();
        missing.sort_by(|a, b| memory_order(a, b));
        Ok(missing.into_iter().take(limit).map(|m| m.id).collect())
    }

    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for data in self.users.read().values() {
            for model in data.vectors.values().flat_map(|by_model| by_model.keys()) {
                *counts.entry(model.clone()).or_default() += 1;
            }
        }
        Ok(sort_model_counts(counts.into_iter().collect()))
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        None
    }
}

impl StoreRead for MemoryStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            kind: BackendKind::Memory,
            location: "memory".to_string(),
            vector_search: Err("the in-memory store has no vector index".to_string()),
        }
    }
}

impl MemoryWrite for MemoryStore {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        let Some(user) = batch.validate()? else {
            return Ok(());
        };
        let mut users = self.users.write();
        let empty = UserData::default();
        let existing = users.get(&user).unwrap_or(&empty);
        batch.precondition.check(existing.last_round())?;
        existing.check_against(&batch)?;
        let staged = existing.stage_edits(&batch)?;
        users.entry(user).or_default().apply(batch, staged);
        Ok(())
    }

    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        let mut users = self.users.write();
        let Some(data) = users.get_mut(user) else {
            return Ok(());
        };
        for (id, access) in accesses {
            if let Some(memory) = data.memories.get_mut(id) {
                memory.access.push(*access);
            }
        }
        Ok(())
    }

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        self.job_leases.lock().remove(user);
        let removed = self.users.write().remove(user);
        Ok(removed
            .map(|d| PurgeReport {
                turns: d.turns.len(),
                memories: d.memories.len(),
                history_entries: d.history.values().map(Vec::len).sum(),
                vectors: d.vectors.values().map(BTreeMap::len).sum(),
            })
            .unwrap_or_default())
    }

    fn import_user(&self, export: &UserExport) -> StoreResult<()> {
        export.validate()?;
        let mut users = self.users.write();
        if users
            .get(&export.user)
            .is_some_and(UserData::holds_anything)
        {
            return Err(Conflict::UserNotEmpty {
                user: export.user.clone(),
            }
            .into());
        }
        if !export.is_empty() {
            users.insert(export.user.clone(), UserData::import(export));
        }
        Ok(())
    }
}

impl JobWrite for MemoryStore {
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>> {
        let mut users = self.users.write();
        let Some(job) = users.get_mut(user).and_then(|d| d.jobs.get_mut(&id)) else {
            return Ok(None);
        };
        if job.is_pending() {
            job.attempts = job.attempts.saturating_add(1);
            job.last_error = Some(error.to_string());
        }
        Ok(Some(job.clone()))
    }

    fn lease_jobs(
        &self,
        user: &UserKey,
        holder: &str,
        lease: std::time::Duration,
    ) -> StoreResult<bool> {
        let now = std::time::Instant::now();
        let mut leases = self.job_leases.lock();
        if let Some((current, until)) = leases.get(user) {
            if current != holder && *until > now {
                return Ok(false);
            }
        }
        leases.insert(user.clone(), (holder.to_string(), now + lease));
        Ok(true)
    }

    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()> {
        let mut leases = self.job_leases.lock();
        if leases
            .get(user)
            .is_some_and(|(current, _)| current == holder)
        {
            leases.remove(user);
        }
        Ok(())
    }
}

impl KeyWrite for MemoryStore {
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        let mut keys = self.api_keys.write();
        check_new_api_key(key, &keys)?;
        keys.push(key.clone());
        Ok(())
    }

    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>> {
        let mut keys = self.api_keys.write();
        let Some(key) = keys.iter_mut().find(|k| k.id == id) else {
            return Ok(None);
        };
        key.revoked_at.get_or_insert(at);
        Ok(Some(key.clone()))
    }
}

impl VectorWrite for MemoryStore {
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        let mut users = self.users.write();
        let Some(data) = users.get_mut(user) else {
            return match rows.first() {
                Some(row) => Err(StoreError::InvalidWrite(format!(
                    "vector for unknown memory {}",
                    row.memory_id
                ))),
                None => Ok(()),
            };
        };
        if let Some(row) = rows
            .iter()
            .find(|r| !data.memories.contains_key(&r.memory_id))
        {
            return Err(StoreError::InvalidWrite(format!(
                "vector for unknown memory {}",
                row.memory_id
            )));
        }
        for row in rows {
            data.vectors
                .entry(row.memory_id)
                .or_default()
                .insert(row.model.clone(), row.vector.clone());
        }
        Ok(())
    }

    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        let mut users = self.users.write();
        let Some(data) = users.get_mut(user) else {
            return Ok(0);
        };
        let mut deleted = 0;
        for by_model in data.vectors.values_mut() {
            let before = by_model.len();
            by_model.retain(|m, _| m == model);
            deleted += (before - by_model.len()) as u64;
        }
        data.vectors.retain(|_, by_model| !by_model.is_empty());
        Ok(deleted)
    }
}

impl BindingRead for MemoryStore {
    fn binding(&self) -> StoreResult<Option<String>> {
        Ok(self.binding.lock().clone())
    }
}

impl BindingWrite for MemoryStore {
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()> {
        let mut binding = self.binding.lock();
        check_bind(model, expected, binding.as_deref())?;
        *binding = Some(model.to_string());
        Ok(())
    }
}
