//! The in-memory reference `Store`: the simplest correct implementation of the contract, used by
//! tests and as the oracle the conformance suite is written against. Nothing is persisted.

use std::collections::{BTreeMap, HashMap};

use parking_lot::RwLock;

use crate::error::StoreError;
use crate::model::{
    Access, Change, HistoryEntry, Job, JobId, Memory, MemoryId, MemoryPatch, MemoryState, Moment,
    Turn, TurnId, UserKey,
};
use crate::store::{
    MemoryFilter, Page, Paged, PurgeReport, Store, StoreResult, VectorRow, WriteBatch,
};

#[derive(Default)]
struct UserData {
    turns: HashMap<TurnId, Turn>,
    memories: HashMap<MemoryId, Memory>,
    history: HashMap<MemoryId, Vec<HistoryEntry>>,
    /// memory id → (model → vector)
    vectors: HashMap<MemoryId, BTreeMap<String, Vec<f32>>>,
    jobs: HashMap<JobId, Job>,
}

fn forgotten(memory: &Memory, reason: &str, at: Moment) -> Memory {
    let mut updated = memory.clone();
    updated.state = MemoryState::Forgotten {
        reason: reason.to_string(),
        at,
    };
    updated.version = updated.version.saturating_add(1);
    updated
}

/// A `Store` kept entirely in process memory.
#[derive(Default)]
pub struct MemoryStore {
    users: RwLock<HashMap<UserKey, UserData>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }
}

fn memory_order(a: &Memory, b: &Memory) -> std::cmp::Ordering {
    (a.created.round, a.created.time, a.id).cmp(&(b.created.round, b.created.time, b.id))
}

impl Store for MemoryStore {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        let Some(user) = batch.user()? else {
            if batch.vectors.is_empty() {
                return Ok(());
            }
            return Err(StoreError::InvalidWrite(
                "vectors without memories go through put_vectors".into(),
            ));
        };
        let mut users = self.users.write();
        // Validate everything before touching state so a failed batch changes nothing.
        {
            let existing = users.get(&user);
            for turn in &batch.turns {
                turn.validate()
                    .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
                if existing.is_some_and(|d| d.turns.contains_key(&turn.id)) {
                    return Err(StoreError::InvalidWrite(format!(
                        "turn {} already exists",
                        turn.id
                    )));
                }
            }
            let mut seen = std::collections::HashSet::new();
            for id in batch
                .turns
                .iter()
                .map(|t| t.id.0)
                .chain(batch.memories.iter().map(|m| m.id.0))
            {
                if !seen.insert(id) {
                    return Err(StoreError::InvalidWrite(format!(
                        "id {id} appears twice in one batch"
                    )));
                }
            }
            for memory in &batch.memories {
                memory
                    .validate()
                    .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
                if existing.is_some_and(|d| d.memories.contains_key(&memory.id)) {
                    return Err(StoreError::InvalidWrite(format!(
                        "memory {} already exists",
                        memory.id
                    )));
                }
            }
            for row in &batch.vectors {
                let known = batch.memories.iter().any(|m| m.id == row.memory_id)
                    || existing.is_some_and(|d| d.memories.contains_key(&row.memory_id));
                if !known {
                    return Err(StoreError::InvalidWrite(format!(
                        "vector for unknown memory {}",
                        row.memory_id
                    )));
                }
            }
            for job in &batch.jobs {
                job.validate()
                    .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
                if !seen.insert(job.id.0) || existing.is_some_and(|d| d.jobs.contains_key(&job.id))
                {
                    return Err(StoreError::InvalidWrite(format!(
                        "job {} already exists",
                        job.id
                    )));
                }
            }
            let mut finishing = std::collections::HashSet::new();
            for (id, _) in &batch.finished_jobs {
                match existing.and_then(|d| d.jobs.get(id)) {
                    None => {
                        return Err(StoreError::InvalidWrite(format!("unknown job {id}")));
                    }
                    Some(job) if !job.is_pending() || !finishing.insert(*id) => {
                        return Err(StoreError::InvalidWrite(format!(
                            "job {id} is already finished"
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
        // Stage edits of existing memories on copies so a failing one changes nothing.
        let mut staged: HashMap<MemoryId, (Memory, Vec<HistoryEntry>)> = HashMap::new();
        {
            let existing = users.get(&user);
            let current =
                |id: &MemoryId, staged: &HashMap<MemoryId, (Memory, Vec<HistoryEntry>)>| {
                    staged
                        .get(id)
                        .map(|(m, _)| m.clone())
                        .or_else(|| batch.memories.iter().find(|m| m.id == *id).cloned())
                        .or_else(|| existing.and_then(|d| d.memories.get(id).cloned()))
                };
            for update in &batch.updates {
                let Some(mut memory) = current(&update.id, &staged) else {
                    return Err(StoreError::InvalidWrite(format!(
                        "update of unknown memory {}",
                        update.id
                    )));
                };
                update
                    .patch
                    .apply(&mut memory)
                    .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
                let entry = HistoryEntry {
                    memory_id: update.id,
                    version: memory.version,
                    at: update.at,
                    change: Change::Updated,
                    snapshot: memory.clone(),
                };
                let slot = staged
                    .entry(update.id)
                    .or_insert_with(|| (memory.clone(), Vec::new()));
                slot.0 = memory;
                slot.1.push(entry);
            }
            for forget in &batch.forgets {
                let Some(memory) = current(&forget.id, &staged) else {
                    return Err(StoreError::InvalidWrite(format!(
                        "forget of unknown memory {}",
                        forget.id
                    )));
                };
                let memory = forgotten(&memory, &forget.reason, forget.at);
                let entry = HistoryEntry {
                    memory_id: forget.id,
                    version: memory.version,
                    at: forget.at,
                    change: Change::Forgotten {
                        reason: forget.reason.clone(),
                    },
                    snapshot: memory.clone(),
                };
                let slot = staged
                    .entry(forget.id)
                    .or_insert_with(|| (memory.clone(), Vec::new()));
                slot.0 = memory;
                slot.1.push(entry);
            }
        }
        let data = users.entry(user).or_default();
        for turn in batch.turns {
            data.turns.insert(turn.id, turn);
        }
        for memory in batch.memories {
            data.history
                .entry(memory.id)
                .or_default()
                .push(HistoryEntry {
                    memory_id: memory.id,
                    version: memory.version,
                    at: memory.created,
                    change: Change::Created,
                    snapshot: memory.clone(),
                });
            data.memories.insert(memory.id, memory);
        }
        for row in batch.vectors {
            data.vectors
                .entry(row.memory_id)
                .or_default()
                .insert(row.model, row.vector);
        }
        for (id, (memory, entries)) in staged {
            if !memory.is_active() {
                data.vectors.remove(&id);
            }
            data.history.entry(id).or_default().extend(entries);
            data.memories.insert(id, memory);
        }
        for job in batch.jobs {
            data.jobs.insert(job.id, job);
        }
        for (id, at) in batch.finished_jobs {
            if let Some(job) = data.jobs.get_mut(&id) {
                job.done = Some(at);
            }
        }
        Ok(())
    }

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

    fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        let mut users = self.users.write();
        let Some(data) = users.get_mut(user) else {
            return Ok(None);
        };
        let Some(current) = data.memories.get(&id) else {
            return Ok(None);
        };
        let mut updated = current.clone();
        patch
            .apply(&mut updated)
            .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
        data.history.entry(id).or_default().push(HistoryEntry {
            memory_id: id,
            version: updated.version,
            at,
            change: Change::Updated,
            snapshot: updated.clone(),
        });
        data.memories.insert(id, updated.clone());
        Ok(Some(updated))
    }

    fn forget(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        let mut users = self.users.write();
        let Some(data) = users.get_mut(user) else {
            return Ok(None);
        };
        let Some(current) = data.memories.get(&id) else {
            return Ok(None);
        };
        let updated = forgotten(current, reason, at);
        data.history.entry(id).or_default().push(HistoryEntry {
            memory_id: id,
            version: updated.version,
            at,
            change: Change::Forgotten {
                reason: reason.to_string(),
            },
            snapshot: updated.clone(),
        });
        data.memories.insert(id, updated.clone());
        data.vectors.remove(&id);
        Ok(Some(updated))
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.history.get(&id).cloned())
            .unwrap_or_default())
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

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
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

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        let mut keys: Vec<UserKey> = self.users.read().keys().cloned().collect();
        keys.sort();
        Ok(keys)
    }

    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        Ok(self
            .users
            .read()
            .get(user)
            .and_then(|d| d.turns.values().map(|t| t.at.round).max()))
    }

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
}
