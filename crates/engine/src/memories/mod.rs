//! `Memories`: one store, one embedder and the derived per-user indexes, kept in step.
//!
//! Writes go to the store first (one transaction per batch) and only then into the caches, so a
//! crash can lose an index (rebuilt on next use) but never an acknowledged turn.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rayon::prelude::*;
use serde::Serialize;

use mnemos_text::Analyzer;

use mnemos_core::retrieval::{
    embedding_windows, RelevanceModel, Reranker, RetrievalConfig, ScopeIndex, TextKey,
};

use crate::truth::{FactChange, PrivacySettings};
use mnemos_core::{
    validate_text, Clock, Conflict, Embedder, Error, HistoryEntry, KindTag, Memory, MemoryFilter,
    MemoryId, MemoryModel, MemoryPatch, MemoryState, Metadata, Moment, Page, Paged, Precondition,
    PurgeReport, Result, Role, Scope, StateFilter, Store, StoreError, Timestamp, Turn, TurnId,
    UserKey, VectorRow, VectorSearch, WriteBatch,
};

/// Metadata key under which a turn's speaker name is copied onto its memory.
pub const SPEAKER_KEY: &str = Memory::SPEAKER_KEY;

/// A turn as a caller submits it; the engine assigns id, round and (if absent) time.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTurn {
    pub scope: Scope,
    pub role: Role,
    pub speaker: Option<String>,
    pub text: String,
    pub time: Option<Timestamp>,
    /// Explicit round index (dataset replays); otherwise each user turn opens a new round.
    pub round: Option<u64>,
    pub metadata: Metadata,
    /// Idempotency key, unique per user: a turn whose key is already stored is not added
    /// again (its add reports it as a duplicate). Retried requests and re-run ingests set it.
    pub key: Option<String>,
}

impl NewTurn {
    pub fn user(scope: Scope, text: impl Into<String>) -> Self {
        Self {
            scope,
            role: Role::User,
            speaker: None,
            text: text.into(),
            time: None,
            round: None,
            metadata: Metadata::new(),
            key: None,
        }
    }
}

/// Whether an input turn was stored now or was already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TurnStatus {
    /// Stored now, with its raw-turn memory.
    Added { memory_id: MemoryId },
    /// A turn with the same key was stored before; nothing was written. `memory_id` is the
    /// raw-turn memory stored then, so a retry learns what the first attempt made (`None` only
    /// when that memory is no longer in the store).
    Duplicate {
        #[serde(skip_serializing_if = "Option::is_none")]
        memory_id: Option<MemoryId>,
    },
}

/// What `add` did with one input turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AddedTurn {
    pub turn_id: TurnId,
    pub round: u64,
    #[serde(flatten)]
    pub status: TurnStatus,
}

impl AddedTurn {
    /// The turn's raw-turn memory: written now, or for a duplicate the one stored the first
    /// time.
    pub fn memory_id(&self) -> Option<MemoryId> {
        match self.status {
            TurnStatus::Added { memory_id } => Some(memory_id),
            TurnStatus::Duplicate { memory_id } => memory_id,
        }
    }

    pub fn is_duplicate(&self) -> bool {
        matches!(self.status, TurnStatus::Duplicate { .. })
    }
}

/// Attempts of a write that keeps colliding with other writers before it gives up.
const WRITE_ATTEMPTS: usize = 8;

mod embedding;
mod placement;
mod search;
mod state;
mod truth_write;

use truth_write::Erasing;

use embedding::text_key;
pub use search::{
    question_parts, validate_query, SearchRequest, SearchResults, SearchTimings, MAX_QUERY_CHARS,
    MAX_QUERY_PARTS,
};
pub use state::Memories;
use state::{Cached, Embedded, EmbeddingCounters, Prepared, ScopeSlot};
pub use state::{DenseSearch, EmbeddingStats, IndexStats};
pub(crate) use state::{PolicyOf, TurnPlanner};

/// The items at `positions` (ascending) of `items`.
fn keep_positions<T>(items: Vec<T>, positions: &[usize]) -> Vec<T> {
    let mut wanted = positions.iter().peekable();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| wanted.next_if(|&&p| p == i).map(|_| item))
        .collect()
}

impl Memories {
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Arc<dyn Embedder>,
        clock: Arc<dyn Clock>,
        config: RetrievalConfig,
    ) -> Result<Self> {
        config.validate()?;
        let dense = placement::choose(store.as_ref(), embedder.as_ref(), config.vectors)?;
        let (relevance, relevance_cjk, relevance_note) = relevance_model(&config, embedder.id());
        Ok(Self {
            store,
            embedder,
            clock,
            analyzer: Analyzer::shared(),
            config,
            rerankers: Vec::new(),
            model: None,
            indexes: Mutex::new(HashMap::new()),
            last_build: Mutex::new(IndexStats::default()),
            builds: AtomicU64::new(0),
            embedding: EmbeddingCounters::default(),
            dense,
            privacy: PrivacySettings::default(),
            relevance,
            relevance_cjk,
            relevance_note,
        })
    }

    /// What the write path redacts (default: credentials).
    pub fn with_privacy(mut self, privacy: PrivacySettings) -> Self {
        self.privacy = privacy;
        self
    }

    /// The relevance floor of the public search (`retrieval.min_relevance`).
    pub fn default_min_relevance(&self) -> f32 {
        self.config.min_relevance
    }

    /// Why hits' relevance is estimated with weights fitted for another embedder, if it is.
    pub fn relevance_note(&self) -> Option<&str> {
        self.relevance_note.as_deref()
    }

    /// Where dense search runs, and why.
    pub fn dense_search(&self) -> &DenseSearch {
        &self.dense
    }

    /// The store's vector search, when dense search runs there.
    fn store_search(&self) -> Option<&dyn VectorSearch> {
        if self.dense.in_store() {
            self.store.vector_search()
        } else {
            None
        }
    }

    /// Add a re-ranking stage; stages run in the order added.
    pub fn with_reranker(mut self, reranker: Box<dyn Reranker>) -> Self {
        self.rerankers.push(reranker);
        self
    }

    /// The memory model that classifies queries for memory-type re-ranking.
    pub fn with_model(mut self, model: Arc<dyn MemoryModel>) -> Self {
        self.model = Some(model);
        self
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The text that indexes and embeddings see: the speaker's name (when known) before the text,
    /// so "what did Caroline say about…" matches her turns.
    pub fn searchable_text(memory: &Memory) -> String {
        let text = crate::primitives::speaker_text(memory);
        // A tombstone is found by the words its topic is asked about with, too.
        match memory.metadata.get(crate::truth::forget::ABOUT_KEY) {
            Some(about) => format!("{text} ({about})"),
            None => text,
        }
    }

    fn slot(&self, user: &UserKey) -> ScopeSlot {
        self.indexes.lock().entry(user.clone()).or_default().clone()
    }

    /// The user's cache slot with its index built, and rebuilt when another process (or store
    /// handle) has written the user since, so what it wrote is searchable here. Other users'
    /// caches are left alone.
    fn built_slot(&self, user: &UserKey) -> Result<ScopeSlot> {
        // Read before any data the build reads: a commit after this is never taken as built in.
        let version = self.store.data_version(user)?;
        let slot = self.slot(user);
        if slot.read().is_current(version) {
            return Ok(slot);
        }
        {
            let mut guard = slot.write();
            if !guard.is_current(version) {
                self.rebuild(user, &mut guard, version)?;
            }
        }
        Ok(slot)
    }

    /// Build `user`'s index from the store into `cached`; `version` is the store's data
    /// version, read before this was called.
    fn rebuild(&self, user: &UserKey, cached: &mut Cached, version: Option<u64>) -> Result<()> {
        cached.index = None;
        cached.facts = None;
        cached.index = Some(self.build_index(user)?);
        // "Cannot tell" keeps the version read before the previous build: older still, so safe.
        cached.version = version.or(cached.version);
        Ok(())
    }

    fn build_index(&self, user: &UserKey) -> Result<ScopeIndex> {
        let dim = self.embedder.dimension();
        let model = self.embedder.id().to_string();
        let (mut index, mut vectors, mut in_store) = match self.store_search() {
            Some(search) => (
                ScopeIndex::with_external_vectors(&self.config, dim),
                HashMap::new(),
                search.coverage(user, &model)?.into_iter().collect(),
            ),
            None => (
                ScopeIndex::new(&self.config, dim),
                self.load_vectors(user, &model)?,
                HashMap::new(),
            ),
        };
        let mut missing: Vec<Memory> = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.store.list(
                user,
                &MemoryFilter::active(),
                Page {
                    offset,
                    limit: 5_000,
                },
            )?;
            for memory in page.items {
                let searchable = Self::searchable_text(&memory);
                let windows =
                    embedding_windows(self.analyzer, &searchable, self.config.window_tokens);
                // A stored vector fits if it holds as many windows as the current window size
                // gives this text; otherwise (other embedder, other window setting) it is redone.
                let expected = windows.len() * dim;
                if in_store.remove(&memory.id) == Some(expected) {
                    // The store holds a fitting vector and scores it: the index only notes
                    // that there is one.
                    let terms = self.analyzer.search_terms(&searchable);
                    index.upsert(&memory, &terms, Some(&[]));
                    continue;
                }
                match vectors.remove(&memory.id) {
                    Some(vector) if vector.len() == expected => {
                        let terms = self.analyzer.search_terms(&searchable);
                        // Its windows' texts, so later writes of them reuse these vectors (an
                        // int8 index keeps no exact vector to reuse: no keys to compute).
                        let keys: Vec<TextKey> = if index.keeps_exact_vectors() {
                            windows.iter().map(|w| text_key(w)).collect()
                        } else {
                            Vec::new()
                        };
                        index.upsert_embedded(&memory, &terms, &vector, &keys);
                    }
                    // Indexed below, once its vector exists.
                    _ => missing.push(memory),
                }
            }
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        // Memories without a fitting vector in the bound space (written before the window
        // setting changed, or by a writer that stored none) get one now, persisted so this is
        // paid once. Another space's vectors never get here: the database is bound to one
        // space, and the engine refuses to open with another (`binding`).
        for chunk in missing.chunks(256) {
            let texts: Vec<String> = chunk.iter().map(Self::searchable_text).collect();
            let embedded = self.embed_with(&index, &texts)?;
            let rows: Vec<VectorRow> = chunk
                .iter()
                .zip(&embedded)
                .map(|(m, e)| VectorRow {
                    memory_id: m.id,
                    model: model.clone(),
                    vector: e.vector.clone(),
                })
                .collect();
            for ((memory, text), e) in chunk.iter().zip(&texts).zip(&embedded) {
                let terms = self.analyzer.search_terms(text);
                index.upsert_embedded(memory, &terms, &e.vector, &e.keys);
            }
            self.store.put_vectors(user, &rows)?;
        }
        index.last_round = self.store.last_round(user)?;
        *self.last_build.lock() = IndexStats {
            memories: index.len(),
            vectors: index.vector_count(),
            vocabulary: index.vocabulary(),
            embedded_on_build: missing.len(),
            builds: self.builds.fetch_add(1, Ordering::Relaxed) + 1,
        };
        Ok(index)
    }

    /// The user's stored vectors in the embedder's space, by memory.
    fn load_vectors(&self, user: &UserKey, model: &str) -> Result<HashMap<MemoryId, Vec<f32>>> {
        Ok(self
            .store
            .vectors(user, model)?
            .into_iter()
            .map(|row| (row.memory_id, row.vector))
            .collect())
    }

    /// Forget every user's cache (their vectors changed space): each is rebuilt on next use.
    pub(crate) fn drop_indexes(&self) {
        self.indexes.lock().clear();
    }

    /// Statistics of the most recent index build (what `open` had to do).
    pub fn last_build_stats(&self) -> IndexStats {
        *self.last_build.lock()
    }

    /// Build (or return) a user's index now instead of on first search.
    pub fn warm(&self, user: &UserKey) -> Result<IndexStats> {
        let slot = self.built_slot(user)?;
        let guard = slot.read();
        // A user past `[retrieval.ann] min_vectors` gets the approximate index from now on.
        if let Some(index) = &guard.index {
            index.start_ann_build();
        }
        Ok(guard
            .index
            .as_ref()
            .map(|i| IndexStats {
                memories: i.len(),
                vectors: i.vector_count(),
                vocabulary: i.vocabulary(),
                embedded_on_build: 0,
                builds: self.builds.load(Ordering::Relaxed),
            })
            .unwrap_or_default())
    }

    /// Read `user`'s index, built first if needed (`None`: the store could not build it).
    pub fn with_index<R>(
        &self,
        user: &UserKey,
        read: impl FnOnce(&ScopeIndex) -> R,
    ) -> Result<Option<R>> {
        let slot = self.built_slot(user)?;
        let guard = slot.read();
        Ok(guard.index.as_ref().map(read))
    }

    /// Commit turns (and their raw-turn memories and vectors), then index them.
    ///
    /// Turns of one user are written in one transaction; a batch spanning several users is split
    /// per user, in order. On error nothing of the failing user's group is written.
    #[cfg(test)]
    pub(crate) fn add_turns(&self, turns: Vec<NewTurn>) -> Result<Vec<AddedTurn>> {
        let mut changes = Vec::new();
        self.add_turns_planned(
            turns,
            &mut |turns| Ok(vec![Vec::new(); turns.len()]),
            &|_| crate::truth::WritePolicy::default(),
            &mut changes,
        )
    }

    /// [`add_turns`](Self::add_turns), asking `plan` which jobs the turns cause; those jobs
    /// commit in the same transaction as the turns, so derived work is never lost between the
    /// two. `plan` must not call back into this `Memories`.
    ///
    /// Rounds are numbered from the user's last round and checked inside the write's
    /// transaction ([`Precondition::LastRound`]): when another writer (another process) moved
    /// it, this one reloads the user from the store and numbers again. Turns whose key is
    /// already stored are reported as duplicates and not written.
    pub(crate) fn add_turns_planned(
        &self,
        turns: Vec<NewTurn>,
        plan: &mut TurnPlanner<'_>,
        policy: &PolicyOf<'_>,
        changes: &mut Vec<(UserKey, FactChange)>,
    ) -> Result<Vec<AddedTurn>> {
        for (i, turn) in turns.iter().enumerate() {
            let at = |e: Error| e.context(format!("turn {}", i + 1));
            turn.scope.validate().map_err(at)?;
            validate_text("turn text", &turn.text).map_err(at)?;
        }
        let mut out = Vec::with_capacity(turns.len());
        let mut groups: Vec<(UserKey, Vec<NewTurn>)> = Vec::new();
        for turn in turns {
            let key = turn.scope.user_key();
            match groups.last_mut() {
                Some((k, group)) if *k == key => group.push(turn),
                _ => groups.push((key, vec![turn])),
            }
        }
        for (user, group) in groups {
            let mut made = Vec::new();
            out.extend(self.add_user_turns(&user, group, plan, policy, &mut made)?);
            changes.extend(made.into_iter().map(|c| (user.clone(), c)));
        }
        Ok(out)
    }

    /// Turns of `group` whose key is already stored for `user`, by position.
    fn stored_keys(&self, user: &UserKey, group: &[Prepared]) -> Result<HashMap<usize, Turn>> {
        let keys: Vec<String> = group.iter().filter_map(|p| p.turn.key.clone()).collect();
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let stored: HashMap<String, Turn> = self
            .store
            .turns_by_keys(user, &keys)?
            .into_iter()
            .filter_map(|t| t.key.clone().map(|k| (k, t)))
            .collect();
        Ok(group
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let key = p.turn.key.as_ref()?;
                stored.get(key).map(|t| (i, t.clone()))
            })
            .collect())
    }

    /// Each new turn as it will be stored (id, time; round still open), with its raw memory.
    fn prepare(&self, group: Vec<NewTurn>) -> Result<Vec<Prepared>> {
        let now = self.clock.now();
        let mut keys = std::collections::HashSet::new();
        let mut prepared = Vec::with_capacity(group.len());
        for new in group {
            if let Some(key) = &new.key {
                if !keys.insert(key.clone()) {
                    return Err(Error::invalid(format!(
                        "turn key '{key}' appears twice in one write"
                    )));
                }
            }
            let (text, metadata) = self.redacted(new.text, new.metadata);
            let turn = Turn {
                id: TurnId::new(),
                scope: new.scope,
                role: new.role,
                speaker: new.speaker,
                text,
                at: Moment {
                    round: new.round.unwrap_or(0),
                    time: new.time.unwrap_or(now),
                },
                metadata,
                key: new.key,
            };
            turn.validate()?;
            let mut memory = Memory::from_turn(&turn);
            match &turn.speaker {
                Some(speaker) => {
                    memory
                        .metadata
                        .insert(SPEAKER_KEY.to_string(), speaker.clone());
                }
                // Who spoke, for the dialogue stages of retrieval; the turn's own metadata wins.
                None => {
                    memory
                        .metadata
                        .entry(Memory::ROLE_KEY.to_string())
                        .or_insert_with(|| turn.role.as_str().to_string());
                }
            }
            prepared.push(Prepared {
                explicit_round: new.round.is_some(),
                turn,
                memory,
                analysis: mnemos_text::Analysis::default(),
                facts: Vec::new(),
                fact_vectors: Vec::new(),
            });
        }
        Ok(prepared)
    }

    fn add_user_turns(
        &self,
        user: &UserKey,
        group: Vec<NewTurn>,
        plan: &mut TurnPlanner<'_>,
        policy: &PolicyOf<'_>,
        changes: &mut Vec<FactChange>,
    ) -> Result<Vec<AddedTurn>> {
        let slot = self.built_slot(user)?;
        let mut prepared = self.prepare(group)?;
        let mut outcomes: Vec<Option<AddedTurn>> = vec![None; prepared.len()];
        self.mark_duplicates(user, &mut prepared, &mut outcomes)?;
        // Forget requests and statements are read from the texts as stored, before embedding.
        let erasing = self.forget_requests(user, &slot, &mut prepared, policy)?;
        Self::extract_facts(&mut prepared, policy);
        // Embedding is the slow part: do it before taking the user's write lock (texts the
        // user's index already holds are not embedded again).
        let texts: Vec<String> = prepared
            .iter()
            .map(|p| Self::searchable_text(&p.memory))
            .collect();
        let mut vectors = self.embed_turns_and_facts(&slot, &texts, &mut prepared)?;
        let mut terms = self.analyze(&texts);
        let mut last_conflict = None;
        for _ in 0..WRITE_ATTEMPTS {
            let mut guard = slot.write();
            let written = self.try_write(
                user,
                &mut guard,
                &mut prepared,
                (&vectors, &terms),
                plan,
                &erasing,
            );
            match written {
                Ok(made) => {
                    changes.extend(made);
                    return Ok(Self::outcomes(outcomes, &prepared));
                }
                Err(Error::Store(StoreError::Conflict(conflict))) => {
                    if let Conflict::DuplicateTurnKey { .. } = conflict {
                        drop(guard);
                        let kept = self.mark_duplicates(user, &mut prepared, &mut outcomes)?;
                        vectors = keep_positions(vectors, &kept);
                        terms = keep_positions(terms, &kept);
                    } else {
                        // Another writer added turns for this user: take in what it wrote.
                        let version = self.store.data_version(user)?;
                        self.rebuild(user, &mut guard, version)?;
                    }
                    last_conflict = Some(conflict);
                }
                Err(other) => {
                    // The write may have committed (a lost acknowledgement): rebuild from the
                    // store on next use rather than trust the index.
                    guard.index = None;
                    guard.facts = None;
                    return Err(other);
                }
            }
        }
        let conflict = last_conflict
            .ok_or_else(|| StoreError::backend_message("write turns", "no write was attempted"))?;
        Err(StoreError::Conflict(conflict).into())
    }

    /// One attempt at writing a user's turns under their write lock: number them, plan their
    /// jobs and what their statements and forget requests change, write it all in one
    /// transaction, then bring the index and the fact table in step.
    fn try_write(
        &self,
        user: &UserKey,
        guard: &mut Cached,
        prepared: &mut [Prepared],
        (vectors, terms): (&[Embedded], &[Vec<String>]),
        plan: &mut TurnPlanner<'_>,
        erasing: &Erasing,
    ) -> Result<Vec<FactChange>> {
        let last_round = match guard.index.as_ref() {
            Some(index) => index.last_round,
            None => {
                // Not the caller's doing: another call on this user failed mid-write.
                return Err(StoreError::backend_message(
                    "write turns",
                    format!("the index of {user} was dropped during the write; retry"),
                )
                .into());
            }
        };
        // Planning errors keep their class: a store read that fails while planning is the
        // store's failure, not the caller's input.
        let mut batch = self.number_and_plan(last_round, prepared, vectors, plan)?;
        // Only writes with statements, corrections or forget requests read the fact table.
        let truth = if Self::changes_truth(prepared, erasing) {
            let mut table = self.fact_table(user, guard)?;
            let truth = self.plan_truth(guard, &mut table, prepared)?;
            truth.add_to(&mut batch, erasing, self.embedder.id());
            Some((truth, table))
        } else {
            None
        };
        let last = batch.turns.iter().map(|t| t.at.round).max();
        self.store.write(batch)?;
        let changes = truth
            .as_ref()
            .map(|(t, _)| t.changes().to_vec())
            .unwrap_or_default();
        let Some(index) = guard.index.as_mut() else {
            return Ok(changes);
        };
        for ((p, terms), e) in prepared.iter().zip(terms).zip(vectors) {
            index.upsert_embedded(&p.memory, terms, &e.vector, &e.keys);
        }
        index.last_round = last.max(index.last_round);
        if let Some((truth, mut table)) = truth {
            truth.apply_to(index, &mut table, erasing, self.analyzer);
            guard.facts = Some(table);
        }
        Ok(changes)
    }

    fn analyze(&self, texts: &[String]) -> Vec<Vec<String>> {
        // Analysis is independent per turn; bulk ingests use both cores.
        if texts.len() >= 64 {
            texts
                .par_iter()
                .map(|t| self.analyzer.search_terms(t))
                .collect()
        } else {
            texts
                .iter()
                .map(|t| self.analyzer.search_terms(t))
                .collect()
        }
    }

    /// Move turns whose key is already stored out of `prepared` into `outcomes` (as
    /// duplicates); returns the positions kept.
    fn mark_duplicates(
        &self,
        user: &UserKey,
        prepared: &mut Vec<Prepared>,
        outcomes: &mut [Option<AddedTurn>],
    ) -> Result<Vec<usize>> {
        let stored = self.stored_keys(user, prepared)?;
        let memories = self.turn_memories(user, stored.values())?;
        let open: Vec<usize> = (0..outcomes.len())
            .filter(|&i| outcomes[i].is_none())
            .collect();
        let mut kept = Vec::with_capacity(prepared.len());
        let mut remaining = Vec::with_capacity(prepared.len());
        for (position, (slot, p)) in open.iter().zip(prepared.drain(..)).enumerate() {
            match stored.get(&position) {
                Some(turn) => {
                    outcomes[*slot] = Some(AddedTurn {
                        turn_id: turn.id,
                        round: turn.at.round,
                        status: TurnStatus::Duplicate {
                            memory_id: memories.get(&turn.id).copied(),
                        },
                    })
                }
                None => {
                    kept.push(position);
                    remaining.push(p);
                }
            }
        }
        *prepared = remaining;
        Ok(kept)
    }

    /// The raw-turn memories of stored `turns`, by turn. A turn's memory is created at the
    /// turn's moment, so one read over the turns' times finds them (store indexes serve it),
    /// however many memories the user has.
    fn turn_memories<'t>(
        &self,
        user: &UserKey,
        turns: impl Iterator<Item = &'t Turn> + Clone,
    ) -> Result<HashMap<TurnId, MemoryId>> {
        let times = turns.clone().map(|t| t.at.time);
        let (Some(first), Some(last)) = (times.clone().min(), times.max()) else {
            return Ok(HashMap::new());
        };
        let wanted: HashSet<TurnId> = turns.map(|t| t.id).collect();
        let filter = MemoryFilter {
            kinds: vec![KindTag::Turn],
            state: StateFilter::All,
            created_since: Some(first),
            created_before: Some(Timestamp::from_millis(last.millis().saturating_add(1))),
            ..MemoryFilter::default()
        };
        let mut found = HashMap::new();
        for memory in self.store.list_all(user, &filter)? {
            if let [turn] = memory.provenance.as_slice() {
                if wanted.contains(turn) {
                    found.entry(*turn).or_insert(memory.id);
                }
            }
        }
        Ok(found)
    }

    /// Number the turns' rounds after `last` (explicit rounds stay), ask `plan` for their jobs,
    /// and build the write: turns, memories, vectors, jobs, guarded by `last`.
    fn number_and_plan(
        &self,
        mut last: Option<u64>,
        prepared: &mut [Prepared],
        vectors: &[Embedded],
        plan: &mut TurnPlanner<'_>,
    ) -> Result<WriteBatch> {
        let mut batch = WriteBatch {
            precondition: Precondition::LastRound(last),
            ..WriteBatch::default()
        };
        for p in prepared.iter_mut() {
            if !p.explicit_round {
                p.turn.at.round = match (p.turn.role, last) {
                    (_, None) => 0,
                    (Role::User, Some(r)) => r + 1,
                    (_, Some(r)) => r,
                };
            }
            last = Some(last.map_or(p.turn.at.round, |r| r.max(p.turn.at.round)));
            p.memory.created = p.turn.at;
        }
        let turns: Vec<Turn> = prepared.iter().map(|p| p.turn.clone()).collect();
        let jobs = plan(&turns)?;
        batch.jobs = jobs.into_iter().flatten().collect();
        batch.turns = turns;
        batch.memories = prepared.iter().map(|p| p.memory.clone()).collect();
        let model = self.embedder.id().to_string();
        batch.vectors = batch
            .memories
            .iter()
            .zip(vectors)
            .map(|(m, e)| VectorRow {
                memory_id: m.id,
                model: model.clone(),
                vector: e.vector.clone(),
            })
            .collect();
        Ok(batch)
    }

    /// Every input turn's outcome, in input order: duplicates as marked, the rest as written.
    fn outcomes(outcomes: Vec<Option<AddedTurn>>, written: &[Prepared]) -> Vec<AddedTurn> {
        let mut written = written.iter();
        outcomes
            .into_iter()
            .filter_map(|outcome| {
                outcome.or_else(|| {
                    written.next().map(|p| AddedTurn {
                        turn_id: p.turn.id,
                        round: p.turn.at.round,
                        status: TurnStatus::Added {
                            memory_id: p.memory.id,
                        },
                    })
                })
            })
            .collect()
    }

    fn last_round(&self, user: &UserKey) -> u64 {
        let slot = self.slot(user);
        let guard = slot.read();
        guard.index.as_ref().and_then(|i| i.last_round).unwrap_or(0)
    }

    fn now(&self, user: &UserKey) -> Moment {
        Moment {
            round: self.last_round(user),
            time: self.clock.now(),
        }
    }

    /// The clock's time now.
    pub(crate) fn wall_time(&self) -> mnemos_core::Timestamp {
        self.clock.now()
    }

    /// The user's current moment: their latest round and the clock's time.
    pub fn moment(&self, user: &UserKey) -> Result<Moment> {
        let cached = self.slot(user).read().index.as_ref().map(|i| i.last_round);
        let round = match cached {
            Some(round) => round,
            // No index in this process yet: ask the store rather than build one.
            None => self.store.last_round(user)?,
        };
        Ok(Moment {
            round: round.unwrap_or(0),
            time: self.clock.now(),
        })
    }

    /// Commit derived work for `user` in one transaction and keep the index in step: new
    /// memories (embedded here), edits (re-embedded when their text changes), policy forgets,
    /// new jobs and finished jobs. Turns go through [`add_turns`](Self::add_turns) instead.
    /// Returns the new memories as written.
    pub fn commit(&self, user: &UserKey, mut batch: WriteBatch) -> Result<Vec<Memory>> {
        user.validate()?;
        if !batch.turns.is_empty() {
            return Err(Error::invalid("turns are added with add_turns, not commit"));
        }
        if !batch.vectors.is_empty() {
            return Err(Error::invalid("commit computes vectors itself"));
        }
        if let Some(other) = batch.user.as_ref().filter(|u| *u != user) {
            return Err(Error::invalid(format!(
                "batch for {other} committed as {user}"
            )));
        }
        batch.user = Some(user.clone());
        if batch.user()?.as_ref() != Some(user) {
            return Err(Error::invalid(format!(
                "batch items do not belong to {user}"
            )));
        }
        for memory in &batch.memories {
            memory.validate()?;
        }
        for forget in &batch.forgets {
            if forget.reason.trim().is_empty() {
                return Err(Error::invalid("forgetting needs a reason"));
            }
        }
        // An index not built in this process is left alone: it is built from the store later.
        let slot = self.slot(user);
        // Texts to (re-)embed: new memories, and edits that change a text.
        let mut searchable: Vec<String> =
            batch.memories.iter().map(Self::searchable_text).collect();
        let mut edited: Vec<MemoryId> = Vec::new();
        for update in &batch.updates {
            if update.patch.text.is_none() && update.patch.metadata.is_none() {
                continue;
            }
            let mut current = match batch.memories.iter().find(|m| m.id == update.id) {
                Some(m) => m.clone(),
                None => self.get(user, update.id)?,
            };
            update.patch.apply(&mut current)?;
            // A forgotten memory has no vector and is not searchable: nothing to embed.
            if !current.is_active() || batch.forgets.iter().any(|f| f.id == update.id) {
                continue;
            }
            edited.push(update.id);
            searchable.push(Self::searchable_text(&current));
        }
        // Texts the user's index holds already (when built here) are not embedded again.
        let vectors = if searchable.is_empty() {
            Vec::new()
        } else {
            self.embed_for(&slot, &searchable)?
        };
        let model = self.embedder.id().to_string();
        let ids = batch
            .memories
            .iter()
            .map(|m| m.id)
            .chain(edited.iter().copied());
        batch.vectors = ids
            .zip(&vectors)
            .map(|(memory_id, e)| VectorRow {
                memory_id,
                model: model.clone(),
                vector: e.vector.clone(),
            })
            .collect();
        let written = batch.memories.clone();
        let forgotten: Vec<MemoryId> = batch
            .forgets
            .iter()
            .map(|f| f.id)
            .chain(batch.erasures.iter().map(|e| e.id))
            .collect();
        let validity: Vec<(MemoryId, Option<mnemos_core::Timestamp>)> = batch
            .updates
            .iter()
            .filter_map(|u| u.patch.valid_to.map(|v| (u.id, v)))
            .collect();
        let touches_facts = written
            .iter()
            .any(|m| m.kind.tag() == mnemos_core::KindTag::Fact)
            || batch.touches_existing();
        if let Err(e) = self.store.write(batch) {
            // The write may have committed (a lost acknowledgement): rebuild on next use.
            let mut guard = slot.write();
            guard.index = None;
            guard.facts = None;
            return Err(e.into());
        }

        let mut guard = slot.write();
        if touches_facts {
            // Facts are few and rarely edited outside the write path: reload them when next
            // needed rather than follow every edit here.
            guard.facts = None;
        }
        if let Some(index) = guard.index.as_mut() {
            for id in &forgotten {
                index.remove(*id);
            }
            for (id, valid_to) in &validity {
                index.set_valid_to(*id, *valid_to);
            }
            for (memory, e) in written.iter().zip(&vectors) {
                if memory.is_active() {
                    let terms = self.analyzer.search_terms(&Self::searchable_text(memory));
                    index.upsert_embedded(memory, &terms, &e.vector, &e.keys);
                }
            }
            let edited_vectors = vectors.iter().skip(written.len());
            match self.store.memories(user, &edited) {
                Ok(fresh) => {
                    for (memory, e) in fresh.iter().zip(edited_vectors) {
                        if memory.is_active() {
                            let terms = self.analyzer.search_terms(&Self::searchable_text(memory));
                            index.upsert_embedded(memory, &terms, &e.vector, &e.keys);
                        }
                    }
                }
                // The write is committed; only the index could not follow: rebuild it later.
                Err(_) => guard.index = None,
            }
        }
        Ok(written)
    }

    /// One memory by id; `NotFound` for unknown ids and for other users' ids alike.
    pub fn get(&self, user: &UserKey, id: MemoryId) -> Result<Memory> {
        self.store
            .memory(user, id)?
            .ok_or_else(|| Error::not_found("memory", id))
    }

    pub fn turn(&self, user: &UserKey, id: TurnId) -> Result<Turn> {
        self.store
            .turn(user, id)?
            .ok_or_else(|| Error::not_found("turn", id))
    }

    pub fn list(&self, user: &UserKey, filter: &MemoryFilter, page: Page) -> Result<Paged<Memory>> {
        if page.limit == 0 || page.limit > Page::MAX_LIMIT {
            return Err(Error::invalid(format!(
                "page limit must be between 1 and {}",
                Page::MAX_LIMIT
            )));
        }
        Ok(self.store.list(user, filter, page)?)
    }

    pub fn history(&self, user: &UserKey, id: MemoryId) -> Result<Vec<HistoryEntry>> {
        let history = self.store.history(user, id)?;
        if history.is_empty() {
            return Err(Error::not_found("memory", id));
        }
        Ok(history)
    }

    /// Edit an active memory; a changed text is re-embedded and re-indexed, in the same write.
    pub fn update(&self, user: &UserKey, id: MemoryId, patch: &MemoryPatch) -> Result<Memory> {
        if patch.is_empty() {
            return Err(Error::invalid("the update changes nothing"));
        }
        if let Some(text) = &patch.text {
            validate_text("memory text", text)?;
        }
        self.built_slot(user)?;
        let current = self.get(user, id)?;
        if let MemoryState::Forgotten { reason, .. } = current.state {
            return Err(StoreError::from(Conflict::Forgotten { id, reason }).into());
        }
        let mut patch = patch.clone();
        // The speaker comes from the turn and is part of the searchable text: new metadata
        // that does not name one keeps it (naming one replaces it).
        // Likewise the role a turn without a speaker speaks with.
        for key in [SPEAKER_KEY, Memory::ROLE_KEY] {
            if let (Some(metadata), Some(value)) = (&mut patch.metadata, current.metadata.get(key))
            {
                metadata
                    .entry(key.to_string())
                    .or_insert_with(|| value.clone());
            }
        }
        let batch = WriteBatch {
            user: Some(user.clone()),
            updates: vec![mnemos_core::BatchUpdate {
                id,
                patch,
                at: self.now(user),
            }],
            ..WriteBatch::default()
        };
        self.commit(user, batch)?;
        self.get(user, id)
    }

    /// Erase everything of one user (turns, memories, history, vectors, caches).
    pub fn purge(&self, user: &UserKey) -> Result<PurgeReport> {
        user.validate()?;
        let report = self.store.purge_user(user)?;
        self.indexes.lock().remove(user);
        Ok(report)
    }

    pub fn users(&self) -> Result<Vec<UserKey>> {
        Ok(self.store.users()?)
    }
}

#[cfg(test)]
mod tests;

/// The relevance models of an engine, for every query and for queries written mostly in CJK:
/// the configured ones, else the shipped fits for the embedder; with a note when the general
/// fit was made for another embedder (its cosine scale differs, so relevance is less well
/// calibrated).
fn relevance_model(
    config: &RetrievalConfig,
    embedder: &str,
) -> (RelevanceModel, Option<RelevanceModel>, Option<String>) {
    let shipped = RelevanceModel::shipped(embedder);
    let cjk = config.relevance_cjk.clone().or(shipped.cjk);
    if let Some(model) = &config.relevance {
        return (model.clone(), cjk, None);
    }
    let note = (!shipped.exact).then(|| {
        format!(
            "relevance: no weights fitted for embedder {embedder}; using those fitted for {} \
             (hit relevance and the min_relevance floor are less well calibrated; fit them \
             with `mnemos eval relevance --dump` and `mnemos train relevance`)",
            shipped.fitted_for
        )
    });
    (shipped.model, cjk, note)
}
