//! One user's complete data as a value: what `MemoryRead::export_user` reads and
//! `MemoryWrite::import_user` writes, so a user can move between stores (`mnemos migrate`) exactly,
//! and a copy can be verified by comparing checksums.
//!
//! The canonical order is defined here, once, so every store exports a user the same way and
//! two exports of the same data are equal and hash alike whatever store they came from.

use std::collections::HashSet;
use std::io::Write;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::model::{HistoryEntry, Job, Memory, MemoryId, Moment, Turn, UserKey, MAX_ROUND};
use crate::store::{check_finite_metrics, StoreResult, VectorRow};

/// One memory with its whole version history (oldest version first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryExport {
    pub memory: Memory,
    pub history: Vec<HistoryEntry>,
}

/// Everything a store holds of one user, in canonical order: turns by (round, time, id);
/// memories, active and forgotten, by (created round, created time, id), each with its
/// history by version; vectors of every model (also a forgotten memory's, if a store kept
/// them) by (model, memory id); jobs, pending and finished, by (created round, created time,
/// id). Job leases are runtime state and not part of it; API keys belong to no user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserExport {
    pub user: UserKey,
    pub turns: Vec<Turn>,
    pub memories: Vec<MemoryExport>,
    pub vectors: Vec<VectorRow>,
    pub jobs: Vec<Job>,
}

/// How much an export holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportCounts {
    pub turns: usize,
    pub memories: usize,
    pub history_entries: usize,
    pub vectors: usize,
    pub jobs: usize,
}

/// The sum of two counts (totals over users).
impl std::ops::Add for ExportCounts {
    type Output = ExportCounts;

    fn add(self, other: ExportCounts) -> ExportCounts {
        ExportCounts {
            turns: self.turns + other.turns,
            memories: self.memories + other.memories,
            history_entries: self.history_entries + other.history_entries,
            vectors: self.vectors + other.vectors,
            jobs: self.jobs + other.jobs,
        }
    }
}

/// "5 turns, 12 memories, 20 history entries, 14 vectors, 3 jobs"
impl std::fmt::Display for ExportCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} turns, {} memories, {} history entries, {} vectors, {} jobs",
            self.turns, self.memories, self.history_entries, self.vectors, self.jobs
        )
    }
}

/// Hashes what serde_json writes, without building the JSON text in memory first.
struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn invalid(message: String) -> StoreError {
    StoreError::InvalidWrite(message)
}

fn check_round(at: Moment, what: &str) -> StoreResult<()> {
    if at.round > MAX_ROUND {
        return Err(invalid(format!(
            "{what}: round {} is beyond the limit of {MAX_ROUND}",
            at.round
        )));
    }
    Ok(())
}

impl UserExport {
    /// An export of `user` from rows in any order: sorts everything into the canonical order.
    pub fn new(
        user: UserKey,
        mut turns: Vec<Turn>,
        mut memories: Vec<MemoryExport>,
        mut vectors: Vec<VectorRow>,
        mut jobs: Vec<Job>,
    ) -> Self {
        turns.sort_by_key(|t| (t.at.round, t.at.time, t.id));
        memories.sort_by_key(|m| (m.memory.created.round, m.memory.created.time, m.memory.id));
        for m in &mut memories {
            m.history.sort_by_key(|h| h.version);
        }
        vectors.sort_by(|a, b| (&a.model, a.memory_id).cmp(&(&b.model, b.memory_id)));
        jobs.sort_by_key(|j| (j.created.round, j.created.time, j.id));
        UserExport {
            user,
            turns,
            memories,
            vectors,
            jobs,
        }
    }

    /// An export of a user the store holds nothing of.
    pub fn empty(user: UserKey) -> Self {
        Self::new(user, Vec::new(), Vec::new(), Vec::new(), Vec::new())
    }

    /// Holds no turn, memory or job (what an import needs of its target, and what it refuses
    /// to overwrite otherwise).
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty() && self.memories.is_empty() && self.jobs.is_empty()
    }

    pub fn counts(&self) -> ExportCounts {
        ExportCounts {
            turns: self.turns.len(),
            memories: self.memories.len(),
            history_entries: self.memories.iter().map(|m| m.history.len()).sum(),
            vectors: self.vectors.len(),
            jobs: self.jobs.len(),
        }
    }

    /// Lower-case hex SHA-256 of the export's canonical JSON (serde_json of this value, whose
    /// maps are all ordered): equal exports have equal checksums, on any machine and store.
    pub fn checksum(&self) -> String {
        let mut writer = HashWriter(Sha256::new());
        if serde_json::to_writer(&mut writer, self).is_err() {
            // Cannot happen (every map key is a string and the writer never fails); hash the
            // debug form then, which still tells different exports apart.
            writer = HashWriter(Sha256::new());
            writer.0.update(format!("{self:?}").as_bytes());
        }
        hex::encode(writer.0.finalize())
    }

    /// Every memory's id, for vectors and history to be checked against.
    fn memory_ids(&self) -> StoreResult<HashSet<MemoryId>> {
        let mut ids = HashSet::new();
        for m in &self.memories {
            if !ids.insert(m.memory.id) {
                return Err(invalid(format!(
                    "memory {} appears twice in the export",
                    m.memory.id
                )));
            }
        }
        Ok(ids)
    }

    /// The checks every store makes before an import touches its data: a valid user that owns
    /// every turn, memory and job; each item valid as a write would require; no id or turn key
    /// twice; every history entry and vector naming a memory of the export; rounds in range.
    /// What only the store can know (ids already stored, data of the user) it checks in its
    /// transaction.
    pub fn validate(&self) -> StoreResult<()> {
        let item = |e: crate::error::Error| invalid(e.to_string());
        self.user.validate().map_err(item)?;
        let foreign = |scope: &crate::model::Scope, what: String| -> StoreResult<()> {
            if scope.belongs_to(&self.user) {
                return Ok(());
            }
            Err(invalid(format!(
                "{what} belongs to {}, not to the imported user {}",
                scope.user_key(),
                self.user
            )))
        };
        let mut ids = HashSet::new();
        let mut keys = HashSet::new();
        for turn in &self.turns {
            foreign(&turn.scope, format!("turn {}", turn.id))?;
            turn.validate().map_err(item)?;
            if !ids.insert(turn.id.0) {
                return Err(invalid(format!(
                    "id {} appears twice in the export",
                    turn.id
                )));
            }
            if let Some(key) = &turn.key {
                if !keys.insert(key.as_str()) {
                    return Err(invalid(format!("turn key '{key}' appears twice")));
                }
            }
        }
        for job in &self.jobs {
            foreign(&job.scope, format!("job {}", job.id))?;
            job.validate().map_err(item)?;
            if let Some(done) = job.done {
                check_round(done, &format!("job {}", job.id))?;
            }
            if !ids.insert(job.id.0) {
                return Err(invalid(format!(
                    "id {} appears twice in the export",
                    job.id
                )));
            }
        }
        for m in &self.memories {
            foreign(&m.memory.scope, format!("memory {}", m.memory.id))?;
            if !ids.insert(m.memory.id.0) {
                return Err(invalid(format!(
                    "id {} appears twice in the export",
                    m.memory.id
                )));
            }
            self.validate_memory(m)?;
        }
        self.validate_vectors()
    }

    fn validate_memory(&self, m: &MemoryExport) -> StoreResult<()> {
        let memory = &m.memory;
        memory
            .validate()
            .map_err(|e| invalid(format!("memory {}: {e}", memory.id)))?;
        check_finite_metrics(&memory.metrics)?;
        if let crate::model::MemoryState::Forgotten { at, .. } = &memory.state {
            check_round(*at, &format!("memory {}", memory.id))?;
        }
        let mut versions = HashSet::new();
        for entry in &m.history {
            if entry.memory_id != memory.id || entry.snapshot.id != memory.id {
                return Err(invalid(format!(
                    "a history entry of memory {} names memory {}",
                    memory.id, entry.memory_id
                )));
            }
            if !versions.insert(entry.version) {
                return Err(invalid(format!(
                    "memory {} has version {} twice in its history",
                    memory.id, entry.version
                )));
            }
            check_round(entry.at, &format!("history of memory {}", memory.id))?;
            check_finite_metrics(&entry.snapshot.metrics)?;
        }
        Ok(())
    }

    fn validate_vectors(&self) -> StoreResult<()> {
        let memories = self.memory_ids()?;
        let mut seen = HashSet::new();
        for row in &self.vectors {
            if !memories.contains(&row.memory_id) {
                return Err(invalid(format!(
                    "vector for memory {}, which the export does not hold",
                    row.memory_id
                )));
            }
            if !seen.insert((row.memory_id, row.model.as_str())) {
                return Err(invalid(format!(
                    "memory {} has two vectors of model '{}'",
                    row.memory_id, row.model
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, Scope, Timestamp, TurnId};

    fn user() -> UserKey {
        UserKey::new("t", "u").unwrap()
    }

    fn turn(user: &UserKey, round: u64) -> Turn {
        Turn {
            id: TurnId::new(),
            scope: Scope::new(&user.tenant, &user.user, "a", "s").unwrap(),
            role: Role::User,
            speaker: None,
            text: format!("turn {round} 你好"),
            at: Moment {
                round,
                time: Timestamp(round as i64),
            },
            metadata: Default::default(),
            key: None,
        }
    }

    fn with_memory(user: &UserKey) -> UserExport {
        let turns = vec![turn(user, 2), turn(user, 1)];
        let memory = Memory::from_turn(&turns[0]);
        let history = vec![HistoryEntry {
            memory_id: memory.id,
            version: 1,
            at: memory.created,
            change: crate::model::Change::Created,
            snapshot: memory.clone(),
        }];
        let vectors = vec![
            VectorRow {
                memory_id: memory.id,
                model: "b".into(),
                vector: vec![1.0, -0.0],
            },
            VectorRow {
                memory_id: memory.id,
                model: "a".into(),
                vector: vec![0.5],
            },
        ];
        UserExport::new(
            user.clone(),
            turns,
            vec![MemoryExport { memory, history }],
            vectors,
            Vec::new(),
        )
    }

    #[test]
    fn rows_are_sorted_into_the_canonical_order() {
        let export = with_memory(&user());
        assert_eq!(export.turns[0].at.round, 1);
        assert_eq!(export.vectors[0].model, "a");
        assert!(export.validate().is_ok());
        assert_eq!(
            export.counts(),
            ExportCounts {
                turns: 2,
                memories: 1,
                history_entries: 1,
                vectors: 2,
                jobs: 0
            }
        );
    }

    #[test]
    fn equal_exports_hash_alike_and_any_change_shows() {
        let export = with_memory(&user());
        let copy: UserExport =
            serde_json::from_str(&serde_json::to_string(&export).unwrap()).unwrap();
        assert_eq!(copy, export);
        assert_eq!(copy.checksum(), export.checksum());
        assert_eq!(export.checksum().len(), 64);
        let mut changed = export.clone();
        changed.vectors[1].vector[1] = 0.0; // -0.0 → 0.0: one bit
        assert_ne!(changed.checksum(), export.checksum());
        assert_ne!(
            UserExport::empty(user()).checksum(),
            export.checksum(),
            "an empty export differs"
        );
    }

    #[test]
    fn foreign_or_dangling_rows_are_refused() {
        let mut export = with_memory(&user());
        export
            .turns
            .push(turn(&UserKey::new("t", "other").unwrap(), 3));
        assert!(
            matches!(export.validate(), Err(StoreError::InvalidWrite(m)) if m.contains("other"))
        );
        let mut export = with_memory(&user());
        export.vectors[0].memory_id = MemoryId::new();
        assert!(matches!(
            export.validate(),
            Err(StoreError::InvalidWrite(_))
        ));
        let mut export = with_memory(&user());
        let entry = export.memories[0].history[0].clone();
        export.memories[0].history.push(entry);
        assert!(
            matches!(export.validate(), Err(StoreError::InvalidWrite(m)) if m.contains("twice"))
        );
        let mut export = with_memory(&user());
        export.turns[0].text = "nul \0".into();
        assert!(matches!(
            export.validate(),
            Err(StoreError::InvalidWrite(_))
        ));
    }
}
