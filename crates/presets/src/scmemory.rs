//! SCM, the Self-Controlled Memory framework (Wang et al., 2023): a memory stream of
//! interactions with their summaries, and a memory controller that decides at each query
//! whether to use memory at all and, per retrieved memory, its full text or its summary.
//!
//! How the paper's parts map onto the store:
//! - **Memory stream**: the raw `Turn` memories, grouped into exchanges (a user turn and the
//!   turns that answer it, up to the next user turn). When an exchange is complete (the next
//!   user turn of the session arrives, or the session ends) an `exchange_summary` job writes its
//!   summary: a `Summary{level: 1}` with `metadata["scm"] = "turn_summary"`, provenance = the
//!   exchange's turns, created at its last turn. The summary is the model's `compress` of the
//!   exchange ("a shorter text keeping what matters"), cut by `summarize` to `summary_tokens`
//!   when still longer. `compress` rather than `summarize` because the offline summarizer is
//!   extractive: on a two-line exchange it keeps one whole sentence, often the reply, and loses
//!   the user's fact; offline `compress` drops the least informative words of every line and
//!   never drops names or numbers. Exchanges of at most 8 words come back unchanged (then the
//!   controller sees nothing to gain from the full turns and uses the summary).
//! - **Flash memory**: the last `recent_turns` turns always go into the context.
//! - **Memory controller** at recall:
//!   1. *Is memory needed?* The paper asks the LLM whether the query needs earlier context;
//!      here the model's `sufficient(query, recent turns)` decides: if the recent turns already
//!      cover the query, nothing is retrieved (note "memory not needed: …").
//!   2. *Retrieval*: the top turns by the retriever, grouped by exchange, ranked by
//!      `relevance + recency_weight · recency`, where relevance is the min-max normalized
//!      retrieval score of the exchange's best turn and recency is `recency_decay^Δrounds`
//!      (the paper ranks by relevance plus recency); the best `top_k` exchanges are kept.
//!   3. *Full text or summary?* The paper asks the LLM whether the summary is enough; here the
//!      model's `helps(query, [summary], full turns)`: the full turns are used when they add
//!      something the summary lacks for this query, the summary otherwise. When the chosen full
//!      turns do not fit the remaining budget, the summary is used instead. Every decision is
//!      a note of the context.
//!
//! With `use_controller = false` (ablation) memory is always retrieved and full turns are used
//! while the budget allows, summaries after that. Exchanges without a summary yet are used in
//! full. No recall side effects.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use mnemos_core::KindTag;
use mnemos_core::{
    BatchForget, ForgetCause, Hit, Job, Memory, MemoryFilter, MemoryId, MemoryKind, MemoryModelExt,
    Metadata, RetrieverKind, Role, StoreRead, Turn, TurnId, UserKey,
};

use super::memgpt::{last_turns, turn_id, walk_turns_back, Packer};
use super::retrieval::{hit_item, retriever_kind, search};
use super::PresetParams;
use crate::primitives::derived_memory;
use crate::primitives::{exponential_recency, min_max};
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, speaker_text, tokens};
use mnemos_engine::{EngineError, EngineResult};

pub const NAME: &str = "scmemory";
pub const SUMMARY: &str = "SCM (Wang et al., 2023): memory stream of exchanges with summaries; a \
     controller decides whether to recall and full text vs summary";

const EXCHANGE_SUMMARY: &str = "exchange_summary";
const TAG: &str = "scm";
const TURN_SUMMARY: &str = "turn_summary";
/// Metadata key of a summary's exchange (its first turn id).
const EXCHANGE: &str = "exchange";
/// Metadata key listing the memory ids of the exchange's turns (comma-separated).
const TURN_MEMORIES: &str = "turn_memories";
/// Longest exchange (in turns) one summary covers; a longer run of replies is cut.
const MAX_EXCHANGE_TURNS: usize = 8;
/// Retrieved turns per kept exchange before grouping.
const CANDIDATES_PER_RESULT: usize = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScmParams {
    /// Exchanges retrieved per query.
    pub top_k: usize,
    /// Latest turns always in the context (flash memory).
    pub recent_turns: usize,
    /// Most tokens of an exchange summary (longer compressions are summarized down).
    pub summary_tokens: usize,
    /// Weight of recency next to relevance in the ranking.
    pub recency_weight: f64,
    /// Recency decay per round.
    pub recency_decay: f64,
    /// dense, bm25 or hybrid.
    pub retriever: String,
    /// The memory controller; off = always retrieve, full turns while they fit.
    pub use_controller: bool,
}

impl Default for ScmParams {
    fn default() -> Self {
        Self {
            top_k: 5,
            recent_turns: 4,
            summary_tokens: 64,
            recency_weight: 1.0,
            recency_decay: 0.99,
            retriever: "dense".into(),
            use_controller: true,
        }
    }
}

impl PresetParams for ScmParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("top_k", "exchanges retrieved per query (1..=100)"),
        (
            "recent_turns",
            "latest turns always in the context, and the controller's evidence (0..=1000)",
        ),
        (
            "summary_tokens",
            "most tokens of an exchange summary (8..=4096)",
        ),
        (
            "recency_weight",
            "weight of recency next to relevance when ranking (0..=10)",
        ),
        (
            "recency_decay",
            "recency factor per round elapsed (0 < d <= 1)",
        ),
        ("retriever", "dense | bm25 | hybrid"),
        (
            "use_controller",
            "decide whether memory is needed and full text vs summary (false = ablation)",
        ),
    ];
    fn validate(&self) -> Result<(), String> {
        if !(1..=100).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=100", self.top_k));
        }
        if self.recent_turns > 1000 {
            return Err(format!(
                "recent_turns = {}: expected 0..=1000",
                self.recent_turns
            ));
        }
        if !(8..=4096).contains(&self.summary_tokens) {
            return Err(format!(
                "summary_tokens = {}: expected 8..=4096",
                self.summary_tokens
            ));
        }
        if !(0.0..=10.0).contains(&self.recency_weight) {
            return Err(format!(
                "recency_weight = {}: expected 0..=10",
                self.recency_weight
            ));
        }
        if !(self.recency_decay > 0.0 && self.recency_decay <= 1.0) {
            return Err(format!(
                "recency_decay = {}: expected 0 < d <= 1",
                self.recency_decay
            ));
        }
        retriever_kind(&self.retriever).map(|_| ())
    }
}

/// The payload of an `exchange_summary` job: the exchange's turns, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ExchangePayload {
    turns: Vec<TurnId>,
}

pub struct ScMemory {
    params: ScmParams,
    retriever: RetrieverKind,
}

impl ScMemory {
    pub fn new(params: ScmParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Dense);
        Self { params, retriever }
    }

    fn plan(&self, turns: Vec<TurnId>) -> EngineResult<Vec<JobSpec>> {
        if turns.is_empty() {
            return Ok(Vec::new());
        }
        let payload = serde_json::to_value(ExchangePayload { turns })
            .map_err(|e| EngineError::config(format!("exchange payload: {e}")))?;
        Ok(vec![JobSpec::new(EXCHANGE_SUMMARY, payload)])
    }

    fn run_summary(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: ExchangePayload = JobSpec::parse(job)?;
        let Some(first) = payload.turns.first().copied() else {
            return Ok(Derived::default());
        };
        let existing = exchange_summaries(ctx, Some(first))?;
        if existing
            .iter()
            .any(|m| payload.turns.iter().all(|t| m.provenance.contains(t)))
        {
            // Already summarized (a replay, or the session end and the next turn both asked).
            return Ok(Derived::default());
        }
        let turns = ctx.turns(&payload.turns)?;
        let Some(oldest) = turns.iter().map(|t| t.at).min() else {
            return Ok(Derived::default());
        };
        // The turns' memories: a turn its user deleted is not summarized.
        let wanted: HashSet<TurnId> = turns.iter().map(|t| t.id).collect();
        let mut memories: HashMap<TurnId, Memory> = HashMap::new();
        walk_turns_back(ctx.store(), ctx.user, ctx.agent, None, |m| {
            if m.created < oldest {
                return false;
            }
            if let Some(id) = turn_id(&m).filter(|id| wanted.contains(id)) {
                memories.insert(id, m);
            }
            memories.len() < wanted.len()
        })?;
        let kept: Vec<(&Turn, &Memory)> = turns
            .iter()
            .filter_map(|t| memories.get(&t.id).map(|m| (t, m)))
            .collect();
        let Some((last, _)) = kept.last() else {
            return Ok(Derived::default());
        };
        let full = kept
            .iter()
            .map(|(_, m)| speaker_text(m))
            .collect::<Vec<_>>()
            .join("\n");
        let full_tokens = tokens(&full);
        let mut text = ctx.model.compress(&full)?;
        if tokens(&text) > self.params.summary_tokens {
            text = ctx
                .model
                .summarize(&[text], 1, self.params.summary_tokens)?;
        }

        let mut metadata = Metadata::new();
        metadata.insert(TAG.into(), TURN_SUMMARY.into());
        metadata.insert(EXCHANGE.into(), first.to_string());
        metadata.insert(
            TURN_MEMORIES.into(),
            kept.iter()
                .map(|(_, m)| m.id.to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
        metadata.insert("full_tokens".into(), full_tokens.to_string());
        let created = last.at;
        let provenance = kept.iter().map(|(t, _)| t.id).collect();
        let summary = derived_memory(
            job,
            MemoryKind::Summary { level: 1 },
            text,
            provenance,
            created,
            metadata,
        );
        // A summary of the same exchange with fewer turns (the session ended, then a reply
        // came) is replaced.
        let forgets = existing
            .iter()
            .map(|m| BatchForget {
                id: m.id,
                reason: format!(
                    "scmemory: exchange grew to {} turns; superseded at round {}",
                    kept.len(),
                    created.round
                ),
                cause: ForgetCause::preset(NAME),
                at: job.created,
            })
            .collect();
        Ok(Derived {
            memories: vec![summary],
            forgets,
            ..Derived::default()
        })
    }
}

/// The exchange ending with the newest turn of `session` before this write's `earlier` turns
/// (those are appended after the store's): walk back to its user turn.
fn last_exchange(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: &str,
    session: &str,
    earlier: &[&Turn],
) -> EngineResult<Vec<TurnId>> {
    let mut ids = Vec::new();
    for turn in earlier.iter().rev() {
        ids.push(turn.id);
        if turn.role == Role::User || ids.len() >= MAX_EXCHANGE_TURNS {
            ids.reverse();
            return Ok(ids);
        }
    }
    let tail = last_turns(
        store,
        user,
        agent,
        Some(session),
        MAX_EXCHANGE_TURNS - ids.len(),
    )?;
    for memory in tail.iter().rev() {
        let Some(id) = turn_id(memory) else { continue };
        let Some(turn) = store.turn(user, id)? else {
            continue;
        };
        ids.push(id);
        if turn.role == Role::User {
            break;
        }
    }
    ids.reverse();
    Ok(ids)
}

/// The agent's active exchange summaries (of one exchange when `first` is given).
fn exchange_summaries(ctx: &MechanismCtx, first: Option<TurnId>) -> EngineResult<Vec<Memory>> {
    let mut metadata = Metadata::new();
    metadata.insert(TAG.into(), TURN_SUMMARY.into());
    if let Some(first) = first {
        metadata.insert(EXCHANGE.into(), first.to_string());
    }
    ctx.all(MemoryFilter {
        kinds: vec![KindTag::Summary],
        metadata,
        ..MemoryFilter::default()
    })
}

/// One retrieved exchange (or a lone turn not summarized yet).
struct Candidate<'a> {
    summary: Option<&'a Memory>,
    hits: Vec<&'a Hit>,
    relevance: f64,
    recency: f64,
    score: f64,
}

impl Candidate<'_> {
    fn round(&self) -> u64 {
        match self.summary {
            Some(s) => s.created.round,
            None => self.hits.first().map_or(0, |h| h.memory.created.round),
        }
    }

    fn scored(&self, mut item: ContextItem, weight: f64) -> ContextItem {
        item.score = self.score;
        item.with_part("relevance", self.relevance)
            .with_part("recency", self.recency)
            .with_part("recency_weight", weight)
            .with_part("score", self.score)
    }
}

impl Mechanism for ScMemory {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        if turn.role != Role::User {
            return Ok(Vec::new());
        }
        // A new user turn completes the session's previous exchange.
        let earlier: Vec<&Turn> = ctx
            .earlier
            .iter()
            .filter(|t| t.scope.session == turn.scope.session)
            .collect();
        let exchange = last_exchange(
            ctx.store,
            ctx.user,
            ctx.agent,
            &turn.scope.session,
            &earlier,
        )?;
        self.plan(exchange)
    }

    fn end_session(&self, ctx: &ObserveCtx, session: &str) -> EngineResult<Vec<JobSpec>> {
        self.plan(last_exchange(ctx.store, ctx.user, ctx.agent, session, &[])?)
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            EXCHANGE_SUMMARY => self.run_summary(ctx, job),
            other => Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let store = ctx.store();
        let session = request.session.as_deref();
        let query = &request.query;
        let mut packer = Packer::new(request.token_budget);
        let mut notes = Vec::new();

        // Flash memory: the latest turns, newest first while they fit.
        let recent = last_turns(
            store,
            ctx.user,
            ctx.agent,
            session,
            self.params.recent_turns,
        )?;
        let mut recent_items = Vec::new();
        for (age, memory) in recent.iter().rev().enumerate() {
            let text = speaker_text(memory);
            let mut item = ContextItem::from_memory(memory, "recent turns", 1.0, tokens(&text))
                .with_part("recent_position", age as f64);
            item.text = text;
            if !packer.push(&item) {
                break;
            }
            recent_items.push(item);
        }
        recent_items.reverse();
        let finish = |items: Vec<ContextItem>, notes: Vec<String>| Recall {
            context: build_context(NAME, query, items, request.token_budget, notes),
            effects: Derived::default(),
        };

        // (1) Is memory needed at all?
        let recent_texts: Vec<String> = recent.iter().map(speaker_text).collect();
        if self.params.use_controller {
            if !recent_texts.is_empty() && ctx.model.sufficient(query, &recent_texts)? {
                notes.push(format!(
                    "memory not needed: the last {} turns already cover the query",
                    recent.len()
                ));
                return Ok(finish(recent_items, notes));
            }
            notes.push(if recent.is_empty() {
                "memory needed: there are no recent turns".to_string()
            } else {
                format!(
                    "memory needed: the last {} turns do not cover the query",
                    recent.len()
                )
            });
        } else {
            notes.push(
                "controller off: memory retrieved, full turns while the budget allows".into(),
            );
        }

        // (2) Candidates by relevance + recency, grouped by exchange.
        let in_recent: HashSet<MemoryId> = recent.iter().map(|m| m.id).collect();
        let hits: Vec<Hit> = search(
            ctx,
            query,
            &[KindTag::Turn],
            session,
            self.retriever,
            (self.params.top_k * CANDIDATES_PER_RESULT + in_recent.len()).clamp(1, 10_000),
        )?
        .into_iter()
        .filter(|h| !in_recent.contains(&h.memory.id))
        .collect();
        if hits.is_empty() {
            notes.push("no earlier memories match the query".into());
            return Ok(finish(recent_items, notes));
        }
        let summaries = exchange_summaries(ctx, None)?;
        let mut summary_of: HashMap<TurnId, usize> = HashMap::new();
        for (i, s) in summaries.iter().enumerate() {
            for id in &s.provenance {
                summary_of.insert(*id, i);
            }
        }
        let now = ctx.moment()?.round;
        let mut candidates = self.group(&hits, &summaries, &summary_of, now);
        // Best first; ties go to the newer memory.
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.round().cmp(&a.round())));
        candidates.truncate(self.params.top_k);

        // (3) Per candidate: full turns or the summary.
        let retrieved = self.retrieve(ctx, query, &candidates, &mut packer, &mut notes)?;

        let mut items = retrieved;
        items.extend(recent_items);
        Ok(finish(items, notes))
    }
}

impl ScMemory {
    /// Hits grouped by the exchange summary that covers them (a hit without one stands alone),
    /// each group scored by its best relevance plus weighted recency.
    fn group<'a>(
        &self,
        hits: &'a [Hit],
        summaries: &'a [Memory],
        summary_of: &HashMap<TurnId, usize>,
        now: u64,
    ) -> Vec<Candidate<'a>> {
        let relevance = min_max(&hits.iter().map(|h| f64::from(h.score)).collect::<Vec<_>>());
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut by_key: HashMap<MemoryId, usize> = HashMap::new();
        for (hit, rel) in hits.iter().zip(relevance) {
            let summary = turn_id(&hit.memory)
                .and_then(|id| summary_of.get(&id))
                .and_then(|i| summaries.get(*i));
            let key = summary.map_or(hit.memory.id, |s| s.id);
            match by_key.get(&key) {
                Some(&i) => {
                    let c = &mut candidates[i];
                    c.hits.push(hit);
                    c.relevance = c.relevance.max(rel);
                }
                None => {
                    let created = summary.map_or(hit.memory.created, |s| s.created);
                    let elapsed = now.saturating_sub(created.round) as f64;
                    by_key.insert(key, candidates.len());
                    candidates.push(Candidate {
                        summary,
                        hits: vec![hit],
                        relevance: rel,
                        recency: exponential_recency(elapsed, self.params.recency_decay),
                        score: 0.0,
                    });
                }
            }
        }
        for c in &mut candidates {
            c.score = c.relevance + self.params.recency_weight * c.recency;
        }
        candidates
    }

    /// Per candidate, its full turns or its summary — whichever the controller prefers and the
    /// budget allows — with a note saying which and why.
    fn retrieve(
        &self,
        ctx: &MechanismCtx,
        query: &str,
        candidates: &[Candidate],
        packer: &mut Packer,
        notes: &mut Vec<String>,
    ) -> EngineResult<Vec<ContextItem>> {
        let mut retrieved = Vec::new();
        for c in candidates {
            let round = c.round();
            let full = self.full_items(ctx, c)?;
            let Some(summary) = c.summary else {
                if packer.fits_all(&full) {
                    full.iter().for_each(|i| {
                        packer.push(i);
                    });
                    retrieved.extend(full);
                    notes.push(format!("round {round}: full turn (no summary yet)"));
                } else {
                    notes.push(format!(
                        "round {round}: left out, it does not fit the budget"
                    ));
                }
                continue;
            };
            let full_text = full
                .iter()
                .map(|i| i.text.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let (want_full, why) = if !self.params.use_controller {
                (true, "controller off")
            } else if ctx
                .model
                .helps(query, std::slice::from_ref(&summary.text), &full_text)?
            {
                (true, "the full turns add details the summary lacks")
            } else {
                (false, "the full turns add nothing the summary lacks")
            };
            if want_full && packer.fits_all(&full) {
                full.iter().for_each(|i| {
                    packer.push(i);
                });
                retrieved.extend(full);
                notes.push(format!("round {round}: full turns ({why})"));
                continue;
            }
            let item = c.scored(
                ContextItem::from_memory(
                    summary,
                    "retrieved summaries",
                    c.score,
                    tokens(&summary.text),
                ),
                self.params.recency_weight,
            );
            if packer.push(&item) {
                retrieved.push(item);
                notes.push(if want_full {
                    format!(
                        "round {round}: summary (the full turns do not fit the remaining budget)"
                    )
                } else {
                    format!("round {round}: summary ({why})")
                });
            } else {
                notes.push(format!(
                    "round {round}: left out, it does not fit the budget"
                ));
            }
        }
        Ok(retrieved)
    }

    /// The candidate's full turns as context items: the exchange's turn memories when it has a
    /// summary (those still active), else the retrieved turn.
    fn full_items(&self, ctx: &MechanismCtx, c: &Candidate) -> EngineResult<Vec<ContextItem>> {
        let hit_by_id: HashMap<MemoryId, &Hit> = c.hits.iter().map(|h| (h.memory.id, *h)).collect();
        let mut memories: Vec<Memory> = Vec::new();
        if let Some(summary) = c.summary {
            let ids: Vec<MemoryId> = summary
                .metadata
                .get(TURN_MEMORIES)
                .map(|s| s.split(',').filter_map(|id| id.parse().ok()).collect())
                .unwrap_or_default();
            memories = ctx
                .store()
                .memories(ctx.user, &ids)?
                .into_iter()
                .filter(Memory::is_active)
                .collect();
        }
        if memories.is_empty() {
            memories = c.hits.iter().map(|h| h.memory.clone()).collect();
        }
        Ok(memories
            .iter()
            .map(|m| {
                let item = match hit_by_id.get(&m.id) {
                    Some(hit) => hit_item(hit, "retrieved turns"),
                    None => {
                        let text = speaker_text(m);
                        let mut item =
                            ContextItem::from_memory(m, "retrieved turns", 0.0, tokens(&text));
                        item.text = text;
                        item
                    }
                };
                c.scored(item, self.params.recency_weight)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {

    use mnemos_core::{Page, Scope, StateFilter};
    use mnemos_engine::NewTurn;

    use super::*;
    use crate::testing::{self, memories_of, test_engine};
    use mnemos_core::MemoryState;
    use mnemos_engine::{Engine, PresetSpec};

    fn engine_with(params: &str) -> Engine {
        test_engine(NAME, params, true)
    }

    fn scope() -> Scope {
        Scope::new("t", "u", "a", "s1").unwrap()
    }

    fn user() -> UserKey {
        scope().user_key()
    }

    /// User/assistant exchanges, English and Chinese, with an old fact first.
    fn converse(engine: &Engine) {
        let dialogue: &[(&str, &str)] = &[
            (
                "My sister Lena moved to Toronto last spring and she teaches piano at a music school there.",
                "That sounds lovely. Does she enjoy teaching piano in Toronto?",
            ),
            (
                "我上周去杭州看了西湖，风景特别美。",
                "听起来很不错，西湖的春天最漂亮。",
            ),
            (
                "The train to the city was late by twenty minutes this morning.",
                "Sorry to hear that, delays are annoying.",
            ),
            (
                "I cooked a big pot of vegetable soup for dinner yesterday.",
                "Soup is perfect for this rainy weather.",
            ),
            (
                "Our football team lost the match on Saturday afternoon.",
                "Better luck next time for your team.",
            ),
            (
                "I watched a documentary about deep sea creatures last night.",
                "The deep sea is full of strange animals.",
            ),
        ];
        for (u, a) in dialogue {
            let mut reply = NewTurn::user(scope(), *a);
            reply.role = Role::Assistant;
            engine.add(vec![NewTurn::user(scope(), *u), reply]).unwrap();
        }
        engine.end_session(&scope()).unwrap();
    }

    fn summaries(engine: &Engine, state: StateFilter) -> Vec<Memory> {
        memories_of(engine, &user(), "summary", state)
    }

    fn recall(engine: &Engine, query: &str, budget: usize) -> mnemos_engine::Context {
        testing::recall(engine, &user(), "a", query, budget)
    }

    #[test]
    fn params_validate_and_registry_knows_the_preset() {
        assert!(crate::names().contains(&NAME));
        assert!(ScmParams::default().validate().is_ok());
        let bad = ScmParams {
            recency_decay: 0.0,
            ..ScmParams::default()
        };
        assert!(bad.validate().unwrap_err().contains("recency_decay"));
        let spec = PresetSpec {
            name: NAME.into(),
            params: toml::from_str("controller = false").unwrap(),
        };
        assert!(crate::build(&spec).is_err());
    }

    #[test]
    fn every_exchange_gets_one_summary_with_provenance() {
        let engine = engine_with("");
        converse(&engine);
        let live = summaries(&engine, StateFilter::Active);
        assert_eq!(live.len(), 6, "one summary per exchange");
        let turns = engine
            .list(
                &user(),
                &MemoryFilter {
                    kinds: vec![KindTag::Turn],
                    ..MemoryFilter::default()
                },
                Page::first(1000),
            )
            .unwrap()
            .items;
        for (i, s) in live.iter().enumerate() {
            assert_eq!(s.kind, MemoryKind::Summary { level: 1 });
            assert_eq!(s.metadata.get(TAG).map(String::as_str), Some(TURN_SUMMARY));
            let expected: Vec<TurnId> =
                turns[2 * i..2 * i + 2].iter().filter_map(turn_id).collect();
            assert_eq!(s.provenance, expected, "exchange {i}");
            assert!(!s.text.trim().is_empty());
        }
        // Closing the session again (or replaying) adds nothing.
        engine.end_session(&scope()).unwrap();
        assert_eq!(summaries(&engine, StateFilter::Active).len(), 6);
        assert!(summaries(&engine, StateFilter::Forgotten).is_empty());
    }

    #[test]
    fn a_reply_after_the_session_end_supersedes_the_short_summary() {
        let engine = engine_with("");
        engine
            .add(vec![NewTurn::user(
                scope(),
                "I adopted a cat named Mochi today.",
            )])
            .unwrap();
        engine.end_session(&scope()).unwrap();
        let mut reply = NewTurn::user(scope(), "Mochi is a cute name for a cat!");
        reply.role = Role::Assistant;
        engine.add(vec![reply]).unwrap();
        engine.end_session(&scope()).unwrap();
        let live = summaries(&engine, StateFilter::Active);
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].provenance.len(), 2);
        let old = summaries(&engine, StateFilter::Forgotten);
        assert_eq!(old.len(), 1);
        assert!(
            matches!(&old[0].state, MemoryState::Forgotten { reason, .. } if reason.starts_with("scmemory:"))
        );
    }

    #[test]
    fn the_controller_skips_memory_when_recent_turns_answer() {
        let engine = engine_with("");
        converse(&engine);
        let ctx = recall(&engine, "What documentary did I watch last night?", 2000);
        assert!(
            ctx.notes.iter().any(|n| n.starts_with("memory not needed")),
            "{:?}",
            ctx.notes
        );
        assert!(ctx.items.iter().all(|i| i.section == "recent turns"));
        assert_eq!(ctx.items.len(), 4);
    }

    #[test]
    fn an_old_fact_is_retrieved_with_its_breakdown_and_decision() {
        let engine = engine_with("");
        converse(&engine);
        let ctx = recall(&engine, "Where does my sister Lena teach piano?", 2000);
        assert!(
            ctx.notes.iter().any(|n| n.starts_with("memory needed")),
            "{:?}",
            ctx.notes
        );
        let found = ctx
            .items
            .iter()
            .find(|i| i.section.starts_with("retrieved") && i.text.contains("Toronto"))
            .expect("the old exchange is retrieved");
        let parts: Vec<&str> = found.breakdown.iter().map(|p| p.name.as_str()).collect();
        for part in ["relevance", "recency", "score"] {
            assert!(parts.contains(&part), "{parts:?}");
        }
        // One decision note per retrieved exchange: full turns or summary.
        assert!(
            ctx.notes
                .iter()
                .any(|n| n.contains(": full turns (") || n.contains(": summary (")),
            "{:?}",
            ctx.notes
        );
        assert!(ctx.tokens <= 2000);
        // Retrieved memories come before the recent turns.
        let last_retrieved = ctx
            .items
            .iter()
            .rposition(|i| i.section.starts_with("retrieved"))
            .unwrap();
        assert!(ctx.items[last_retrieved + 1..]
            .iter()
            .all(|i| i.section == "recent turns"));
    }

    #[test]
    fn summaries_replace_full_turns_when_the_budget_is_short() {
        let engine = engine_with("use_controller = false\ntop_k = 6");
        converse(&engine);
        let wide = recall(&engine, "Lena piano Toronto soup train football", 3000);
        assert!(wide.notes.iter().any(|n| n.starts_with("controller off")));
        assert!(wide.items.iter().any(|i| i.section == "retrieved turns"));
        let tight = recall(&engine, "Lena piano Toronto soup train football", 120);
        assert!(tight.tokens <= 120);
        assert!(
            tight
                .notes
                .iter()
                .any(|n| n.contains("summary (the full turns do not fit")
                    || n.contains("left out")),
            "{:?}",
            tight.notes
        );
    }

    #[test]
    fn recall_respects_every_budget() {
        let engine = engine_with("");
        converse(&engine);
        for budget in [0, 5, 20, 50, 120, 400, 5000] {
            for query in ["Where does Lena live?", "我去哪里看了西湖？"] {
                let ctx = recall(&engine, query, budget);
                assert!(ctx.tokens <= budget, "{budget}: {}", ctx.tokens);
            }
        }
    }
}
