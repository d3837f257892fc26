//! What a search returns and how each score came about, in a leaf module: the scope index
//! builds these, the learned ranker and the relevance model fill their parts, and re-rankers
//! (the memory-type stage) adjust them. Keeping the data apart from all of those lets each name
//! it without importing the others.

use serde::{Deserialize, Serialize};

use crate::model::{Memory, MemoryId};

/// One generator's view of a hit: its raw score and 1-based rank among that generator's candidates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    pub score: f32,
    pub rank: u32,
}

/// A named change a re-ranker made to a hit's score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adjustment {
    pub name: String,
    /// The component's value as the re-ranker saw it (e.g. importance 0.8).
    pub value: f32,
    /// How much the final score changed because of it.
    pub delta: f32,
}

/// What another memory lent a hit's score: the memory that contributed most (the second hop's
/// seed, or the neighbouring turn), and the total added.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HopSignal {
    pub via: MemoryId,
    pub added: f32,
}

/// Why a hit scored what it did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreBreakdown {
    pub lexical: Option<Signal>,
    pub dense: Option<Signal>,
    /// What a second retrieval hop added (included in `fused`), when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_hop: Option<HopSignal>,
    /// What the neighbouring turn of the same session lent this turn (included in `fused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<HopSignal>,
    /// What naming this turn's speaker in the query added (included in `fused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<f32>,
    /// What the query naming the memory's date added (included in `fused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<f32>,
    /// What the learned ranker saw and concluded, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranker: Option<RankerSignal>,
    /// Why the hit has its relevance (features and the strongest contributions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<RelevanceSignal>,
    /// Score after fusion, the read-time stages and the second hop, or the learned ranker's
    /// probability when it ran; before re-rankers.
    pub fused: f32,
    pub adjustments: Vec<Adjustment>,
    /// Query terms found in the memory (lexical explanation).
    pub matched_terms: Vec<String>,
}

/// One retrieved memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    pub memory: Memory,
    /// The rank score, relative to the other candidates of the query.
    pub score: f32,
    /// The calibrated probability, in [0, 1], that the memory is evidence for the query; the
    /// same scale for every query (see [`RelevanceSignal`]).
    pub relevance: f32,
    /// Approximate LLM tokens of the memory's text (for budgets).
    pub tokens: usize,
    pub breakdown: ScoreBreakdown,
}

/// A re-ranking stage after fusion (importance, memory type, recency… in later mechanisms).
///
/// Contract: may reorder and rescore `hits` but must record every score change as an
/// `Adjustment` in the hit's breakdown, and must not add memories from outside the list.
pub trait Reranker: Send + Sync {
    fn name(&self) -> &str;
    fn rerank(&self, query: &str, hits: &mut Vec<Hit>);
}

/// What the learned ranker saw and concluded for one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankerSignal {
    /// The estimated chance of being evidence; the candidate's score after this stage.
    pub probability: f32,
    /// The feature values, in the order of [`RANK_FEATURE_NAMES`](super::RANK_FEATURE_NAMES).
    pub features: Vec<f32>,
    /// The features that moved the estimate most (weight × value, largest magnitude first;
    /// [`EXPLAINED_FEATURES`](super::ranker::EXPLAINED_FEATURES) of them), for explanations.
    pub strongest: Vec<(String, f32)>,
}

/// Why a hit has the relevance it has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelevanceSignal {
    /// The estimated probability that the memory is evidence for the query (the hit's
    /// `relevance`).
    pub probability: f32,
    /// The feature values, in the order of [`RELEVANCE_FEATURE_NAMES`](super::RELEVANCE_FEATURE_NAMES).
    pub features: Vec<f32>,
    /// The features that moved the estimate most (weight × value, largest magnitude first;
    /// [`EXPLAINED_RELEVANCE`](super::EXPLAINED_RELEVANCE) of them), for explanations.
    pub strongest: Vec<(String, f32)>,
}
