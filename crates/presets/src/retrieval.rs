//! RetrievalMemory (after MemBench's strongest baseline): every turn is embedded; a query gets
//! the top-k turns. By default the retriever is hybrid (BM25 and dense, fused), a second hop
//! seeded by the first hop's best turns (pseudo-relevance feedback, [`SecondHop`]) reaches
//! turns that share only an entity with them ("the person who likes chess — where is he
//! from?") without displacing the first hop's best, and `split_questions` searches each
//! question of a compound query on its own ([`mnemos_core::memories::question_parts`]).
//! MemBench's own configuration is `retriever = "dense"`, `hops = 1`,
//! `split_questions = false`. No model calls.

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::TypeSearch;
use mnemos_core::KindTag;
use mnemos_core::{Hit, RetrieverKind, SearchFilter, SecondHop, Turn};

use mnemos_engine::SearchRequest;

use super::full::HEADER_TOKENS;
use super::PresetParams;
use mnemos_engine::mechanism::{
    ContextItem, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, speaker_text, tokens};
use mnemos_engine::EngineResult;

pub const NAME: &str = "retrieval";
pub const SUMMARY: &str =
    "RetrievalMemory (MemBench): top-k turns by hybrid similarity to the query, with a second hop";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalParams {
    pub top_k: usize,
    /// hybrid (the default), dense (MemBench's) or bm25.
    pub retriever: String,
    /// Order of the returned turns: relevance or time.
    pub order: String,
    /// 1, or 2 for a second retrieval hop from the first hop's best turns.
    pub hops: usize,
    /// Second hop: how many first-hop turns seed it.
    pub hop_seeds: usize,
    /// Second hop: its weight against the first hop.
    pub hop_weight: f32,
    /// Second hop: how many of the first hop's best turns keep their places.
    pub hop_keep: usize,
    /// Search each question of a compound query on its own and merge the rankings.
    pub split_questions: bool,
}

impl Default for RetrievalParams {
    fn default() -> Self {
        let hop = SecondHop::default();
        Self {
            top_k: 10,
            retriever: "hybrid".into(),
            order: "relevance".into(),
            hops: 2,
            hop_seeds: hop.seeds,
            hop_weight: hop.weight,
            hop_keep: hop.keep,
            split_questions: true,
        }
    }
}

impl RetrievalParams {
    /// The second hop these parameters ask for, if any.
    pub(crate) fn second_hop(&self) -> Option<SecondHop> {
        (self.hops == 2).then_some(self.hop())
    }

    fn hop(&self) -> SecondHop {
        SecondHop {
            seeds: self.hop_seeds,
            weight: self.hop_weight,
            keep: self.hop_keep,
        }
    }
}

impl PresetParams for RetrievalParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("top_k", "how many turns to retrieve (1..=1000)"),
        ("retriever", "dense | bm25 | hybrid"),
        ("order", "order of the returned turns: relevance | time"),
        (
            "hops",
            "1, or 2 to search again from the best turns found (multi-hop questions)",
        ),
        (
            "hop_seeds",
            "second hop: how many of the first hop's best turns seed it (1..=20)",
        ),
        (
            "hop_weight",
            "second hop: weight of what it finds against the first hop (0, 1]",
        ),
        (
            "hop_keep",
            "second hop: how many of the first hop's best turns keep their places (0..=100)",
        ),
    ];
    fn validate(&self) -> Result<(), String> {
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        retriever_kind(&self.retriever)?;
        if !(1..=2).contains(&self.hops) {
            return Err(format!("hops = {}: expected 1 or 2", self.hops));
        }
        self.hop().validate().map_err(|e| e.to_string())?;
        match self.order.as_str() {
            "relevance" | "time" => Ok(()),
            other => Err(format!("order = '{other}': expected relevance or time")),
        }
    }
}

pub(crate) fn retriever_kind(name: &str) -> Result<RetrieverKind, String> {
    match name {
        "dense" => Ok(RetrieverKind::Dense),
        "bm25" => Ok(RetrieverKind::Bm25),
        "hybrid" => Ok(RetrieverKind::Hybrid),
        other => Err(format!(
            "retriever = '{other}': expected dense, bm25 or hybrid"
        )),
    }
}

/// A search hit as a context item, its score breakdown carried over.
pub(crate) fn hit_item(hit: &Hit, section: &str) -> ContextItem {
    let text = speaker_text(&hit.memory);
    let mut item =
        ContextItem::from_memory(&hit.memory, section, f64::from(hit.score), tokens(&text));
    item.text = text;
    let b = &hit.breakdown;
    if let Some(l) = &b.lexical {
        item = item.with_part("bm25", f64::from(l.score));
    }
    if let Some(d) = &b.dense {
        item = item.with_part("cosine", f64::from(d.score));
    }
    if let Some(h) = &b.second_hop {
        item = item.with_part("second_hop", f64::from(h.added));
    }
    if let Some(c) = &b.context {
        item = item.with_part("dialogue_context", f64::from(c.added));
    }
    if let Some(added) = b.speaker {
        item = item.with_part("speaker_named", f64::from(added));
    }
    if let Some(added) = b.date {
        item = item.with_part("date_named", f64::from(added));
    }
    if let Some(ranker) = &b.ranker {
        item = item.with_part("ranker", f64::from(ranker.probability));
    }
    item = item.with_part("fused", f64::from(b.fused));
    // A re-ranker's part is what it saw (e.g. P(π|m), s); the item's score is the result.
    for adjustment in &b.adjustments {
        item = item.with_part(&adjustment.name, f64::from(adjustment.value));
    }
    item
}

/// Search this agent's memories of the given kinds.
pub(crate) fn search(
    ctx: &MechanismCtx,
    query: &str,
    kinds: &[KindTag],
    session: Option<&str>,
    retriever: RetrieverKind,
    top_k: usize,
) -> EngineResult<Vec<Hit>> {
    search_shaped(
        ctx,
        query,
        kinds,
        session,
        retriever,
        top_k,
        SearchShape::default(),
    )
}

/// How a search goes beyond one query and one hop.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SearchShape {
    pub second_hop: Option<SecondHop>,
    pub split_questions: bool,
    /// Re-rank by memory type, or keep one type only.
    pub memory_type: Option<TypeSearch>,
    /// Rank by likeness to the query alone (see [`SearchRequest::likeness_only`]).
    pub likeness_only: bool,
    /// What was valid at this moment instead of what is current (see [`SearchRequest::as_of`]).
    pub as_of: Option<mnemos_core::Timestamp>,
    /// Also memories a later statement superseded (see [`SearchRequest::include_superseded`]).
    pub include_superseded: bool,
    /// Leave out hits less relevant than this (see [`SearchRequest::min_relevance`]).
    pub min_relevance: Option<f32>,
}

/// [`search`] with an optional second retrieval hop, question splitting and memory types.
pub(crate) fn search_shaped(
    ctx: &MechanismCtx,
    query: &str,
    kinds: &[KindTag],
    session: Option<&str>,
    retriever: RetrieverKind,
    top_k: usize,
    shape: SearchShape,
) -> EngineResult<Vec<Hit>> {
    let mut request = SearchRequest::new(ctx.user.clone(), query);
    request.top_k = Some(top_k);
    request.retriever = retriever;
    request.second_hop = shape.second_hop;
    request.split_questions = shape.split_questions;
    request.memory_type = shape.memory_type;
    request.likeness_only = shape.likeness_only;
    request.as_of = shape.as_of;
    request.include_superseded = shape.include_superseded;
    request.min_relevance = shape.min_relevance;
    request.filter = SearchFilter {
        kinds: kinds.to_vec(),
        agent: Some(ctx.agent.to_string()),
        session: session.map(str::to_string),
        ..SearchFilter::default()
    };
    Ok(ctx.search(&request)?.hits)
}

/// The request's top turns as context items, packed into its budget (best first): the context
/// of the presets that hand back retrieved turns as they are.
pub(crate) fn retrieved_turns(
    ctx: &MechanismCtx,
    request: &RecallRequest,
    retriever: RetrieverKind,
    top_k: usize,
    shape: SearchShape,
) -> EngineResult<Vec<ContextItem>> {
    let shape = SearchShape {
        min_relevance: shape.min_relevance.or(request.min_relevance),
        ..shape
    };
    let hits = search_shaped(
        ctx,
        &request.query,
        &[KindTag::Turn],
        request.session.as_deref(),
        retriever,
        top_k,
        shape,
    )?;
    let items: Vec<ContextItem> = hits.iter().map(|h| hit_item(h, "retrieved")).collect();
    let room = request.token_budget.saturating_sub(HEADER_TOKENS);
    Ok(pack_within_budget(items, room))
}

pub struct RetrievalMemory {
    params: RetrievalParams,
    retriever: RetrieverKind,
}

impl RetrievalMemory {
    pub fn new(params: RetrievalParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Hybrid);
        Self { params, retriever }
    }
}

impl Mechanism for RetrievalMemory {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let shape = SearchShape {
            second_hop: self.params.second_hop(),
            split_questions: self.params.split_questions,
            ..SearchShape::default()
        };
        let mut kept = retrieved_turns(ctx, request, self.retriever, self.params.top_k, shape)?;
        if self.params.order == "time" {
            kept.sort_by_key(|i| (i.created.round, i.created.time));
        }
        Ok(Recall {
            context: build_context(NAME, &request.query, kept, request.token_budget, vec![]),
            effects: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, test_engine};
    use mnemos_core::{Scope, UserKey};
    use mnemos_engine::NewTurn;

    fn user() -> UserKey {
        UserKey::new("t", "u").unwrap()
    }

    fn engine(params: &str) -> mnemos_engine::Engine {
        let engine = test_engine(NAME, params, true);
        let scope = Scope::new("t", "u", "bot", "s1").unwrap();
        let mut turns = vec![
            NewTurn::user(
                scope.clone(),
                "The Harbour Jazz Night takes place in Lisbon.",
            ),
            NewTurn::user(
                scope.clone(),
                "Harbour Jazz Night starts next Friday at seven.",
            ),
            NewTurn::user(
                scope.clone(),
                "The dentist appointment is on Monday morning.",
            ),
        ];
        for i in 0..30 {
            let text = format!("Filler line {i} about gardening, tea and the weather.");
            turns.push(NewTurn::user(scope.clone(), text));
        }
        engine.add(turns).unwrap();
        engine
    }

    fn texts(engine: &mnemos_engine::Engine, query: &str) -> Vec<String> {
        let context = testing::recall(engine, &user(), "bot", query, 1024);
        context.items.iter().map(|i| i.text.clone()).collect()
    }

    #[test]
    fn parameters_are_validated() {
        let ok = RetrievalParams {
            hops: 2,
            split_questions: true,
            ..RetrievalParams::default()
        };
        assert!(ok.validate().is_ok());
        for bad in [
            RetrievalParams {
                hops: 3,
                ..RetrievalParams::default()
            },
            RetrievalParams {
                hop_seeds: 0,
                ..RetrievalParams::default()
            },
            RetrievalParams {
                hop_weight: 1.5,
                ..RetrievalParams::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_second_hop_reaches_the_answer_through_the_entity() {
        let query = "The event in Lisbon: at what hour?";
        let one = engine("retriever = 'bm25'\ntop_k = 2\nhops = 1");
        assert!(!texts(&one, query).iter().any(|t| t.contains("Friday")));
        let two = engine("retriever = 'bm25'\ntop_k = 2\nhops = 2");
        let found = texts(&two, query);
        assert!(found[0].contains("Lisbon"), "{found:?}");
        assert!(found.iter().any(|t| t.contains("Friday")), "{found:?}");
        let context = testing::recall(&two, &user(), "bot", query, 1024);
        let reached = context
            .items
            .iter()
            .find(|i| i.text.contains("Friday"))
            .unwrap();
        assert!(reached.breakdown.iter().any(|p| p.name == "second_hop"));
    }

    #[test]
    fn split_questions_give_each_question_a_place() {
        let query = "Where is the Harbour Jazz Night in Lisbon, and when? When is the dentist?";
        let whole = engine("retriever = 'bm25'\ntop_k = 2\nsplit_questions = false");
        assert!(!texts(&whole, query).iter().any(|t| t.contains("dentist")));
        let split = engine("retriever = 'bm25'\ntop_k = 2\nsplit_questions = true");
        assert!(texts(&split, query).iter().any(|t| t.contains("dentist")));
    }
}
