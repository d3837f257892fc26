//! The write path's truth maintenance inside `Memories`: credentials redacted as a turn is
//! prepared, forget requests resolved and statements read before the user's write lock,
//! supersession planned under it against the user's fact table, all of it committed in the
//! turns' own transaction (see `crate::truth`).

use std::collections::{HashMap, HashSet};

use mnemos_core::retrieval::{LearnedRanker, RetrievalConfig, RetrieverKind, ScopeIndex};
use mnemos_core::{
    BatchErase, KindTag, Memory, MemoryFilter, MemoryId, MemoryState, Metadata, Result,
    SearchFilter, StoreResult, TurnErase, TurnId, UserKey, VectorRow, WriteBatch,
};
use mnemos_text::{Analyzer, ForgetRequest};

use super::state::{Cached, Embedded, Memories, PolicyOf, Prepared, ScopeSlot};
use crate::truth::facts::{self, FactTable};
use crate::truth::forget;
use crate::truth::supersede::{self, TruthPlan, TurnFacts};
use crate::truth::REDACTED_KEY;

/// What a write's forget requests erase: stored memories and turns.
#[derive(Default)]
pub(super) struct Erasing {
    erasures: Vec<BatchErase>,
    turn_erasures: Vec<TurnErase>,
}

/// A write's supersession, with the vectors of the facts it creates.
pub(super) struct WriteTruth {
    plan: TruthPlan,
    vectors: HashMap<MemoryId, Embedded>,
}

/// How many stored memories a forget request may reach through the lexical index.
const FORGET_CANDIDATES: usize = 10_000;

impl Memories {
    /// Whether a write's turns state facts, correct one or erase anything.
    pub(super) fn changes_truth(prepared: &[Prepared], erasing: &Erasing) -> bool {
        !(erasing.erasures.is_empty() && erasing.turn_erasures.is_empty())
            || prepared
                .iter()
                .any(|p| !p.facts.is_empty() || p.analysis.correction.is_some())
    }

    /// The turn's text and metadata as they will be stored: credentials replaced by
    /// placeholders (when configured), what was redacted noted in the metadata.
    pub(super) fn redacted(&self, text: String, mut metadata: Metadata) -> (String, Metadata) {
        if !self.privacy.redact_credentials {
            return (text, metadata);
        }
        let redacted = mnemos_text::redact_credentials(&text);
        if redacted.kinds.is_empty() {
            return (text, metadata);
        }
        let kinds: Vec<&str> = redacted.kinds.iter().map(|k| k.as_str()).collect();
        metadata.insert(REDACTED_KEY.to_string(), kinds.join(","));
        (redacted.text, metadata)
    }

    /// Read the statements of the turns whose agents ask for supersession, and build a
    /// candidate fact memory per statement.
    pub(super) fn extract_facts(prepared: &mut [Prepared], policy: &PolicyOf<'_>) {
        for p in prepared.iter_mut() {
            let wanted = policy(&p.turn.scope.agent).supersede
                && p.memory.is_active()
                && facts::states_facts(&p.turn)
                && !p.memory.metadata.contains_key(forget::TOPIC_KEY);
            if !wanted {
                continue;
            }
            p.analysis = mnemos_text::analyze(&p.turn.text);
            let spans: Vec<_> = p
                .analysis
                .statements
                .iter()
                .map(|s| s.span.clone())
                .collect();
            let whole = !spans.is_empty() && facts::statements_cover(&p.turn.text, &spans);
            p.facts = p
                .analysis
                .statements
                .iter()
                .map(|statement| facts::fact_memory(&p.turn, &p.memory, statement, whole))
                .collect();
        }
    }

    /// Embed the turns' texts and their candidate facts' texts in one go (a fact stated by a
    /// whole one-sentence turn has the turn's text: embedded once); returns the turns' vectors
    /// and hands each turn its facts' vectors.
    pub(super) fn embed_turns_and_facts(
        &self,
        slot: &ScopeSlot,
        texts: &[String],
        prepared: &mut [Prepared],
    ) -> Result<Vec<Embedded>> {
        let mut all = texts.to_vec();
        for p in prepared.iter() {
            all.extend(p.facts.iter().map(Self::searchable_text));
        }
        let mut embedded = self.embed_for(slot, &all)?;
        let facts = embedded.split_off(texts.len());
        let mut facts = facts.into_iter();
        for p in prepared.iter_mut() {
            p.fact_vectors = facts.by_ref().take(p.facts.len()).collect();
        }
        Ok(embedded)
    }

    /// The user's fact table: the cached one, or loaded from the store.
    pub(super) fn fact_table(&self, user: &UserKey, cached: &Cached) -> StoreResult<FactTable> {
        if let Some(table) = &cached.facts {
            return Ok(table.clone());
        }
        let facts = self
            .store
            .list_all(user, &MemoryFilter::of_kinds(&[KindTag::Fact]))?;
        Ok(FactTable::of(&facts))
    }

    /// The user's facts (current and replaced), for reads.
    pub fn facts(&self, user: &UserKey) -> Result<FactTable> {
        let slot = self.built_slot(user)?;
        let mut guard = slot.write();
        let table = self.fact_table(user, &guard)?;
        guard.facts = Some(table.clone());
        Ok(table)
    }

    /// Supersession for the write's turns (numbered already) against `table`; facts from
    /// corrections, which no candidate foresaw, are embedded here.
    pub(super) fn plan_truth(
        &self,
        guard: &Cached,
        table: &mut FactTable,
        prepared: &[Prepared],
    ) -> Result<WriteTruth> {
        let mut vectors = HashMap::new();
        let mut turns = Vec::with_capacity(prepared.len());
        for p in prepared {
            let mut candidates = p.facts.clone();
            for (fact, vector) in candidates.iter_mut().zip(&p.fact_vectors) {
                fact.created = p.turn.at;
                vectors.insert(
                    fact.id,
                    Embedded {
                        vector: vector.vector.clone(),
                        keys: vector.keys.clone(),
                    },
                );
            }
            turns.push(TurnFacts {
                turn: &p.turn,
                memory: &p.memory,
                analysis: &p.analysis,
                candidates,
            });
        }
        let index = guard.index.as_ref();
        // Turns of this write are not indexed yet; they are current until this plan says not.
        let written: std::collections::HashSet<MemoryId> =
            prepared.iter().map(|p| p.memory.id).collect();
        let is_current = |id: MemoryId| {
            written.contains(&id)
                || index.is_some_and(|i| i.contains(id) && i.valid_to(id).is_none())
        };
        let plan = supersede::plan(table, turns, &is_current);
        let missing: Vec<&Memory> = plan
            .facts
            .iter()
            .filter(|f| plan.unembedded.contains(&f.id))
            .collect();
        if !missing.is_empty() {
            let texts: Vec<String> = missing.iter().map(|m| Self::searchable_text(m)).collect();
            let embedded = match index {
                Some(index) => self.embed_with(index, &texts)?,
                None => self.embed_planned_alone(&texts)?,
            };
            for (fact, e) in missing.iter().zip(embedded) {
                vectors.insert(fact.id, e);
            }
        }
        Ok(WriteTruth { plan, vectors })
    }

    /// Embed texts with no index to reuse from.
    fn embed_planned_alone(&self, texts: &[String]) -> Result<Vec<Embedded>> {
        self.embed_with(
            &ScopeIndex::new(&self.config, self.embedder.dimension()),
            texts,
        )
    }

    /// Resolve the forget requests among the write's user turns (for agents whose policy asks
    /// for it): the request turn becomes a tombstone with its stated values blanked, and what
    /// it refers to — stored memories, or earlier turns of this same write — is erased.
    pub(super) fn forget_requests(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        prepared: &mut [Prepared],
        policy: &PolicyOf<'_>,
    ) -> Result<Erasing> {
        let mut erasing = Erasing::default();
        for i in 0..prepared.len() {
            let p = &prepared[i];
            let asks = policy(&p.turn.scope.agent).forget_requests
                && p.turn.role == mnemos_core::Role::User
                && p.memory.is_active();
            let Some(request) = asks
                .then(|| mnemos_text::forget_request(&p.turn.text))
                .flatten()
            else {
                continue;
            };
            let agent = p.turn.scope.agent.clone();
            let earlier = &prepared[..i];
            let about = |p: &Prepared| {
                p.memory.is_active()
                    && forget::is_about(&request, &Self::searchable_text(&p.memory))
            };
            let found_here: Vec<Memory> = earlier
                .iter()
                .filter(|p| about(p))
                .map(|p| p.memory.clone())
                .collect();
            let stored = self.forget_stored(user, slot, &agent, &request, &found_here)?;
            let here: Vec<bool> = earlier
                .iter()
                .map(|p| {
                    about(p)
                        || (p.memory.is_active()
                            && stored.repeats.hold(&Self::searchable_text(&p.memory)))
                })
                .collect();
            let erased_here = Self::forget_in_write(&request, &mut prepared[..i], &here);
            let reason = forget::erase_reason(&request.topic);
            let at = prepared[i].turn.at;
            let count = erased_here + stored.memories.len();
            for memory in stored.memories {
                let metadata = Self::kept_metadata(&memory.metadata);
                let placeholder = forget::placeholder(mnemos_text::has_cjk(&memory.text));
                erasing.erasures.push(BatchErase {
                    id: memory.id,
                    reason: reason.clone(),
                    placeholder: placeholder.to_string(),
                    metadata,
                    at,
                });
            }
            for (turn, chinese) in stored.turns {
                erasing.turn_erasures.push(TurnErase {
                    id: turn,
                    placeholder: forget::placeholder(chinese).to_string(),
                });
            }
            Self::make_tombstone(&mut prepared[i], &request, count);
        }
        Ok(erasing)
    }

    /// Metadata an erased memory keeps: who said it, nothing of what.
    fn kept_metadata(metadata: &Metadata) -> Metadata {
        [
            mnemos_core::Memory::SPEAKER_KEY,
            mnemos_core::Memory::ROLE_KEY,
        ]
        .iter()
        .filter_map(|k| metadata.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect()
    }

    /// The request turn as stored: its stated values blanked; its memory the tombstone.
    fn make_tombstone(p: &mut Prepared, request: &ForgetRequest, erased: usize) {
        p.turn.text = forget::sanitized(&p.turn.text, &request.stated_values);
        p.memory.text = forget::tombstone_text(&request.topic);
        p.memory
            .metadata
            .insert(forget::TOPIC_KEY.to_string(), request.topic.clone());
        p.memory
            .metadata
            .insert(forget::ERASED_KEY.to_string(), erased.to_string());
        let about = forget::about_words(request);
        if !about.is_empty() {
            p.memory
                .metadata
                .insert(forget::ABOUT_KEY.to_string(), about);
        }
    }

    /// Earlier turns of the same write that the request refers to (`chosen`): stored already
    /// erased (their words never reach the store). Returns how many.
    fn forget_in_write(
        request: &ForgetRequest,
        earlier: &mut [Prepared],
        chosen: &[bool],
    ) -> usize {
        let mut erased = 0;
        for (p, _) in earlier
            .iter_mut()
            .zip(chosen)
            .filter(|(_, chosen)| **chosen)
        {
            let placeholder = forget::placeholder(mnemos_text::has_cjk(&p.turn.text));
            p.turn.text = placeholder.to_string();
            p.turn.metadata = Metadata::new();
            p.memory.text = placeholder.to_string();
            p.memory.metadata = Self::kept_metadata(&p.memory.metadata);
            p.memory.state = MemoryState::Forgotten {
                reason: forget::erase_reason(&request.topic),
                at: p.turn.at,
                cause: mnemos_core::ForgetCause::Request,
            };
            erased += 1;
        }
        erased
    }

    /// The stored memories a request refers to (of the agent, active; with those that repeat
    /// them or `found_here`, the write's own), with what was derived from them, and the raw
    /// turns whose words go too (with whether they are Chinese).
    fn forget_stored(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: &str,
        request: &ForgetRequest,
        found_here: &[Memory],
    ) -> Result<StoredTargets> {
        let (mut targets, repeats) =
            self.named_targets(user, slot, Some(agent), request, found_here)?;
        let mut seen: HashSet<MemoryId> = targets.iter().map(|m| m.id).collect();
        let turns: HashSet<TurnId> = targets
            .iter()
            .filter(|m| m.kind.tag() == KindTag::Turn)
            .flat_map(|m| m.provenance.iter().copied())
            .collect();
        if !turns.is_empty() {
            let derived = self.store.list_all(user, &MemoryFilter::active())?;
            for memory in derived {
                let from_target = memory.kind.tag() != KindTag::Turn
                    && memory.provenance.iter().any(|t| turns.contains(t));
                if from_target && seen.insert(memory.id) {
                    targets.push(memory);
                }
            }
        }
        let erased_turns = targets
            .iter()
            .filter(|m| m.kind.tag() == KindTag::Turn)
            .flat_map(|m| {
                let chinese = mnemos_text::has_cjk(&m.text);
                m.provenance.iter().map(move |t| (*t, chinese))
            })
            .collect();
        Ok(StoredTargets {
            memories: targets,
            turns: erased_turns,
            repeats,
        })
    }

    /// The active memories a request's topic names, of `agent` or of every agent: what a
    /// request said in conversation erases, without what was derived from them. For a request
    /// made through the API (`Engine::forget_matching`), which shows them before it forgets.
    pub(crate) fn memories_about(
        &self,
        user: &UserKey,
        agent: Option<&str>,
        request: &ForgetRequest,
    ) -> Result<Vec<Memory>> {
        let slot = self.built_slot(user)?;
        Ok(self.named_targets(user, &slot, agent, request, &[])?.0)
    }

    /// The stored memories a request names — by its words and synonyms (or every one, for
    /// "forget everything"), the facts of the slot it names, and those repeating their values
    /// or rare words (or those of `found_here`, the write's own) — and what marks a memory as
    /// repeating them.
    fn named_targets(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: Option<&str>,
        request: &ForgetRequest,
        found_here: &[Memory],
    ) -> Result<(Vec<Memory>, Repeats)> {
        let mut targets: Vec<Memory> = if request.terms.is_empty() && request.everything {
            let filter = MemoryFilter {
                agent: agent.map(str::to_string),
                ..MemoryFilter::default()
            };
            self.store.list_all(user, &filter)?
        } else {
            self.lexical_targets(user, slot, agent, request)?
        };
        targets.extend(self.slot_targets(user, slot, agent, request)?);
        let mut seen: HashSet<MemoryId> = HashSet::new();
        targets.retain(|m| seen.insert(m.id));
        let found: Vec<Memory> = targets.iter().chain(found_here).cloned().collect();
        let repeats = self.repeats(user, slot, agent, request, &found)?;
        for memory in self.repeated_targets(user, slot, agent, &repeats, &targets)? {
            if seen.insert(memory.id) {
                targets.push(memory);
            }
        }
        Ok((targets, repeats))
    }

    /// Stored memories of the agent whose words are about the request's topic (see
    /// [`forget::is_about`]), found through the lexical index.
    fn lexical_targets(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: Option<&str>,
        request: &ForgetRequest,
    ) -> Result<Vec<Memory>> {
        let mut query: Vec<String> = Vec::new();
        // Chinese words as the index cut them too: 住在 is indexed as 住.
        for word in request
            .terms
            .iter()
            .chain(&request.synonyms)
            .chain(&request.equivalents)
        {
            query.push(word.clone());
            if mnemos_text::has_cjk(word) {
                query.extend(forget::terms_of(word));
            }
        }
        let ids = self.lexical_ids(slot, agent, &query, FORGET_CANDIDATES);
        Ok(self
            .store
            .memories(user, &ids)?
            .into_iter()
            .filter(|m| m.is_active())
            .filter(|m| forget::is_about(request, &Self::searchable_text(m)))
            .collect())
    }

    /// What marks another memory as repeating the `found` ones (see [`Repeats`]).
    fn repeats(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: Option<&str>,
        request: &ForgetRequest,
        found: &[Memory],
    ) -> StoreResult<Repeats> {
        // "Forget everything" has taken every memory already.
        if found.is_empty() || request.terms.is_empty() {
            return Ok(Repeats::default());
        }
        let table = self.fact_table(user, &slot.read())?;
        let mut values: Vec<String> = Vec::new();
        for memory in found {
            values.extend(mnemos_text::stated_values(&memory.text));
            if let Some(entry) = table.get(memory.id) {
                values.push(entry.value.clone());
            }
        }
        values.retain(|v| forget::is_specific_value(v));
        values.sort();
        values.dedup();
        let topic: HashSet<String> = request
            .terms
            .iter()
            .chain(&request.synonyms)
            .chain(&request.equivalents)
            .cloned()
            .collect();
        let rare = self.rare_terms(slot, agent, found, &topic);
        Ok(Repeats {
            values,
            rare,
            topic,
        })
    }

    /// Stored memories of the agent, other than `found`, that repeat them (see [`Repeats`]).
    fn repeated_targets(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: Option<&str>,
        repeats: &Repeats,
        found: &[Memory],
    ) -> Result<Vec<Memory>> {
        let known: HashSet<MemoryId> = found.iter().map(|m| m.id).collect();
        let ids: Vec<MemoryId> = self
            .lexical_ids(slot, agent, &repeats.query(), FORGET_CANDIDATES)
            .into_iter()
            .filter(|id| !known.contains(id))
            .collect();
        Ok(self
            .store
            .memories(user, &ids)?
            .into_iter()
            .filter(|m| m.is_active() && repeats.hold(&Self::searchable_text(m)))
            .collect())
    }

    /// Words of the `found` memories that are not the topic's and that at most
    /// [`forget::RARE_IN`] memories of the agent hold.
    fn rare_terms(
        &self,
        slot: &ScopeSlot,
        agent: Option<&str>,
        found: &[Memory],
        topic: &HashSet<String>,
    ) -> HashSet<String> {
        let mut words: HashSet<String> = HashSet::new();
        for memory in found {
            words.extend(forget::terms_of(&memory.text));
        }
        words
            .into_iter()
            .filter(|w| !topic.contains(w) && forget::is_distinctive_word(w))
            .filter(|w| {
                // One more than the bound is enough to know a word is not rare.
                let holders =
                    self.lexical_ids(slot, agent, std::slice::from_ref(w), forget::RARE_IN + 1);
                holders.len() <= forget::RARE_IN
            })
            .collect()
    }

    /// Memories of the agent (of every agent: `None`) holding a word of `query` (at most
    /// `limit`, best first), through the lexical index.
    fn lexical_ids(
        &self,
        slot: &ScopeSlot,
        agent: Option<&str>,
        query: &[String],
        limit: usize,
    ) -> Vec<MemoryId> {
        if query.is_empty() {
            return Vec::new();
        }
        let config = RetrievalConfig {
            candidates: limit,
            context: 0.0,
            speaker: 0.0,
            date: 0.0,
            ranker: LearnedRanker::off(),
            ..self.config.clone()
        };
        let filter = SearchFilter {
            agent: agent.map(str::to_string),
            ..SearchFilter::default()
        };
        let guard = slot.read();
        let Some(index) = guard.index.as_ref() else {
            return Vec::new();
        };
        index
            .candidates(&config, RetrieverKind::Bm25, query, None, &filter, None)
            .into_iter()
            .map(|c| c.id)
            .collect()
    }

    /// The facts of the slot the topic names ("my address" → where the user lives), with the
    /// turns that stated them.
    fn slot_targets(
        &self,
        user: &UserKey,
        slot: &ScopeSlot,
        agent: Option<&str>,
        request: &ForgetRequest,
    ) -> Result<Vec<Memory>> {
        let asked = mnemos_text::asked(&request.topic);
        if asked.is_empty() {
            return Ok(Vec::new());
        }
        let table = self.fact_table(user, &slot.read())?;
        let mut ids: Vec<MemoryId> = Vec::new();
        for entry in table
            .entries()
            .iter()
            .filter(|e| agent.is_none_or(|a| e.agent == a))
        {
            let named = asked.iter().any(|a| {
                facts::slot_name(a.slot) == entry.slot && entry.subject.starts_with("who:")
            });
            if named {
                ids.push(entry.id);
                ids.extend(entry.source);
            }
        }
        Ok(self
            .store
            .memories(user, &ids)?
            .into_iter()
            .filter(|m| m.is_active())
            .collect())
    }
}

/// What makes a memory repeat what a forget request erases: the same value (a number, an
/// email address, a fact's value: "You can text me at 555-0172-9904", "Pickup at Ashgrove
/// Primary"), or a word that at most [`forget::RARE_IN`] memories hold ("乳糜泻") together with
/// a word of the topic ("医生说我的乳糜泻…": 医生). A user who asks to forget their phone number
/// means the number, wherever it was said.
#[derive(Default)]
struct Repeats {
    values: Vec<String>,
    rare: HashSet<String>,
    /// The request's terms, synonyms and equivalents.
    topic: HashSet<String>,
}

impl Repeats {
    /// Words to find candidates with through the lexical index.
    fn query(&self) -> Vec<String> {
        let mut query: Vec<String> = self.rare.iter().cloned().collect();
        for value in &self.values {
            query.extend(forget::terms_of(value));
        }
        query
    }

    /// Whether a memory's (searchable) text repeats what was erased.
    fn hold(&self, text: &str) -> bool {
        if self.values.is_empty() && self.rare.is_empty() {
            return false;
        }
        let lower = text.to_lowercase();
        if self
            .values
            .iter()
            .any(|v| lower.contains(&v.to_lowercase()))
        {
            return true;
        }
        let terms = forget::terms_of(text);
        self.rare.iter().any(|t| terms.contains(t))
            && (self.topic.iter().any(|t| terms.contains(t))
                || self
                    .topic
                    .iter()
                    // A Chinese topic word is matched in the text: the analyzer may cut it.
                    .any(|t| mnemos_text::has_cjk(t) && text.contains(t.as_str())))
    }
}

/// What a forget request reaches in the store.
struct StoredTargets {
    memories: Vec<Memory>,
    /// Raw turns whose words are erased, with whether they are Chinese.
    turns: Vec<(TurnId, bool)>,
    /// What marks the write's own earlier turns as repeating the erased ones.
    repeats: Repeats,
}

impl WriteTruth {
    /// What the plan changes (for the write's report).
    pub(super) fn changes(&self) -> &[crate::truth::FactChange] {
        &self.plan.changes
    }

    /// Put the plan's facts (with vectors), edits and the write's erasures into `batch`.
    pub(super) fn add_to(&self, batch: &mut WriteBatch, erasing: &Erasing, model: &str) {
        for fact in &self.plan.facts {
            if let Some(e) = self.vectors.get(&fact.id) {
                batch.vectors.push(VectorRow {
                    memory_id: fact.id,
                    model: model.to_string(),
                    vector: e.vector.clone(),
                });
            }
            batch.memories.push(fact.clone());
        }
        let erased: HashSet<MemoryId> = erasing.erasures.iter().map(|e| e.id).collect();
        batch.updates.extend(
            self.plan
                .updates
                .iter()
                .filter(|u| !erased.contains(&u.id))
                .cloned(),
        );
        batch.erasures.extend(erasing.erasures.iter().cloned());
        batch
            .turn_erasures
            .extend(erasing.turn_erasures.iter().cloned());
    }

    /// After the write: index the new facts, record the new ends of validity, drop what was
    /// erased; the fact table follows.
    pub(super) fn apply_to(
        &self,
        index: &mut ScopeIndex,
        table: &mut FactTable,
        erasing: &Erasing,
        analyzer: &Analyzer,
    ) {
        for fact in &self.plan.facts {
            if let Some(e) = self.vectors.get(&fact.id) {
                let terms = analyzer.search_terms(&Memories::searchable_text(fact));
                index.upsert_embedded(fact, &terms, &e.vector, &e.keys);
            }
        }
        for update in &self.plan.updates {
            if let Some(valid_to) = update.patch.valid_to {
                index.set_valid_to(update.id, valid_to);
            }
        }
        for erase in &erasing.erasures {
            index.remove(erase.id);
            table.remove(erase.id);
        }
    }
}
