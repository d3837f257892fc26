//! Hybrid retrieval: BM25 and dense candidates → fusion (RRF or weighted) → re-rankers → top-k
//! under a token budget, every hit with its score breakdown.
//!
//! `ScopeIndex` is a per-user cache derived from the store; it is rebuilt on open and updated on
//! every write, and never consulted for anything the store does not also hold.

pub mod ann;
mod ann_scope;
pub mod bm25;
mod dates;
pub mod dense;
mod dialogue;
mod hit;
mod hnsw;
pub mod memory_type;
mod query;
mod ranker;
mod relevance;
mod simd;
mod texts;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{KindTag, Memory, MemoryId, Timestamp};
use crate::store::Validity;
pub use ann::{AnnConfig, AnnPhase, AnnStatus, DEFAULT_ANN_MIN_VECTORS};
pub use bm25::{Bm25Index, Bm25Params};
pub use dense::{DenseIndex, Quantization};
use dialogue::{DialogueOrder, TurnPlace};
pub use hit::{
    Adjustment, Hit, HopSignal, RankerSignal, RelevanceSignal, Reranker, ScoreBreakdown, Signal,
};
pub use memory_type::{
    rerank_by_type, MemoryTypeReranker, QueryCertainty, ScoreInput, TypeRerank, TypeSearch,
};
pub use query::{
    current_first, is_hit, question_parts, stating_turn, validate_query, without_repeated_facts,
    FactRows, MAX_QUERY_CHARS, MAX_QUERY_PARTS,
};
pub use ranker::{LearnedRanker, DEFAULT_RANKER_DEPTH, RANK_FEATURES, RANK_FEATURE_NAMES};
pub use relevance::{
    is_cjk_query, validate_min_relevance, RelevanceModel, RelevanceQuery, ShippedRelevance,
    DEFAULT_MIN_RELEVANCE, EXPLAINED_RELEVANCE, RELEVANCE_FEATURES, RELEVANCE_FEATURE_NAMES,
};
use texts::EmbeddedTexts;
pub use texts::TextKey;

/// How lexical and dense candidate lists are combined.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "lowercase", deny_unknown_fields)]
pub enum Fusion {
    /// Reciprocal rank fusion: Σ wᵢ / (k + rankᵢ), rank starting at 1.
    Rrf {
        #[serde(default = "default_rrf_k")]
        k: f32,
        #[serde(default = "one")]
        lexical_weight: f32,
        #[serde(default = "one")]
        dense_weight: f32,
    },
    /// Convex combination of normalized scores (a missing side counts 0): BM25 divided by the
    /// best BM25 score (min-max would zero the last of two near-equal lexical matches), cosine
    /// min-max normalized over the dense candidates.
    Weighted {
        #[serde(default = "half")]
        lexical_weight: f32,
        #[serde(default = "half")]
        dense_weight: f32,
    },
}

fn default_rrf_k() -> f32 {
    60.0
}
fn one() -> f32 {
    1.0
}
fn half() -> f32 {
    0.5
}

impl Fusion {
    /// Plain reciprocal rank fusion with k = 60 and equal weights.
    pub fn rrf() -> Self {
        Fusion::Rrf {
            k: default_rrf_k(),
            lexical_weight: 1.0,
            dense_weight: 1.0,
        }
    }
}

impl Default for Fusion {
    /// Weighted 0.6 lexical / 0.4 dense: on LoCoMo and PerLTQA dev this beats equal-weight RRF,
    /// which lets the weaker dense list pull good lexical hits down (docs/results/retrieval.md).
    fn default() -> Self {
        Fusion::Weighted {
            lexical_weight: 0.6,
            dense_weight: 0.4,
        }
    }
}

/// Which candidate generators a search uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RetrieverKind {
    Bm25,
    Dense,
    #[default]
    Hybrid,
}

impl RetrieverKind {
    pub const ALL: [RetrieverKind; 3] = [
        RetrieverKind::Bm25,
        RetrieverKind::Dense,
        RetrieverKind::Hybrid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RetrieverKind::Bm25 => "bm25",
            RetrieverKind::Dense => "dense",
            RetrieverKind::Hybrid => "hybrid",
        }
    }

    pub fn uses_dense(self) -> bool {
        !matches!(self, RetrieverKind::Bm25)
    }
}

impl std::str::FromStr for RetrieverKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bm25" | "lexical" => Ok(RetrieverKind::Bm25),
            "dense" => Ok(RetrieverKind::Dense),
            "hybrid" => Ok(RetrieverKind::Hybrid),
            other => Err(Error::invalid(format!(
                "unknown retriever '{other}' (expected bm25, dense or hybrid)"
            ))),
        }
    }
}

/// Typed retrieval settings (`[retrieval]` in the config file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    pub fusion: Fusion,
    /// Candidates taken from each generator before fusion.
    pub candidates: usize,
    pub bm25: Bm25Params,
    pub quantization: Quantization,
    /// Where dense search runs: in process over each user's vectors, or in the store when it
    /// has a vector index (`auto`, the default, takes the store's when there is one).
    pub vectors: VectorPlacement,
    pub top_k: usize,
    /// Texts longer than this many tokens get one vector per window of about this size (whole
    /// sentences) instead of one for the whole text, and score as their best window: embedding
    /// models truncate long input (MiniLM at 256 word pieces) and a single vector blurs a long
    /// text's details. 0 turns windows off.
    pub window_tokens: usize,
    /// Dialogue context: a turn memory gains this share of the better fused score of the turns
    /// just before and after it in its session, when someone else said them, so an answer
    /// ranks beside the question it answers (0 turns it off; at most 1).
    pub context: f32,
    /// Speaker match: when a query names people who speak in the user's dialogues, their own
    /// turns (those next to another speaker's turn) gain this share of their score, so "what
    /// does Ann play?" prefers what Ann said over what others said to Ann (0 turns it off; at
    /// most 1).
    pub speaker: f32,
    /// Date match: when a query names a day or a month of a year ("on 25 May, 2022", "in July
    /// 2023"), memories from then (to a week after) gain this share of their score (0 turns it
    /// off; at most 1).
    pub date: f32,
    /// The learned second stage over the best fused candidates (`[retrieval.ranker]`; depth 0
    /// turns it off).
    pub ranker: LearnedRanker,
    /// Re-rank every search by memory type (PerLTQA; `[retrieval.memory_type]`), whatever the
    /// preset; a request can also ask for it on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<TypeRerank>,
    /// The default relevance floor of the public search (`Engine::search`): hits whose
    /// relevance (the calibrated probability that they are evidence for the query) is below it
    /// are dropped before `top_k`, so a query about nothing the user said returns nothing. A
    /// request's own `min_relevance` wins; mechanisms' internal searches apply only their own.
    /// In [0, 1]; 0 keeps everything.
    pub min_relevance: f32,
    /// The relevance model (`[retrieval.relevance]`, from `mnemos train relevance`); absent,
    /// the shipped fit for the engine's embedder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<RelevanceModel>,
    /// The relevance model for queries written mostly in CJK (`[retrieval.relevance_cjk]`,
    /// `mnemos train relevance --cjk`); absent, the shipped one for the engine's embedder (a
    /// lexical fit unless the embedder's cosine is itself lexical).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance_cjk: Option<RelevanceModel>,
    /// The approximate dense index of users with many vectors (`[retrieval.ann]`).
    pub ann: AnnConfig,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            fusion: Fusion::default(),
            candidates: 100,
            bm25: Bm25Params::default(),
            quantization: Quantization::F32,
            vectors: VectorPlacement::Auto,
            top_k: 10,
            window_tokens: DEFAULT_WINDOW_TOKENS,
            context: DEFAULT_CONTEXT,
            speaker: DEFAULT_SPEAKER,
            date: DEFAULT_DATE,
            ranker: LearnedRanker::default(),
            memory_type: None,
            min_relevance: DEFAULT_MIN_RELEVANCE,
            relevance: None,
            relevance_cjk: None,
            ann: AnnConfig::default(),
        }
    }
}

/// Where dense search runs ([`RetrievalConfig::vectors`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorPlacement {
    /// The store's vector index when it has one ([`crate::VectorSearch`]), else in process.
    #[default]
    Auto,
    /// Always in process: exact brute force over the user's vectors held in memory.
    InProcess,
    /// Always the store's index; a store without one is a configuration error.
    Store,
}

/// Default [`RetrievalConfig::context`].
pub const DEFAULT_CONTEXT: f32 = 0.3;

/// Default [`RetrievalConfig::speaker`].
pub const DEFAULT_SPEAKER: f32 = 0.5;

/// Default [`RetrievalConfig::date`].
pub const DEFAULT_DATE: f32 = 1.0;

/// Default [`RetrievalConfig::window_tokens`].
pub const DEFAULT_WINDOW_TOKENS: usize = 64;

/// The texts to embed for one memory's text: the text itself, or, when it is longer than
/// `window_tokens`, consecutive runs of whole sentences of at most about `window_tokens` tokens
/// each (a single longer sentence is its own window). Windows are slices of `text`.
///
/// A whole-text vector beside the windows was measured too: LoCoMo dev hybrid R@10 0.691 vs
/// 0.685 without, for ~25% more embedding work on ingest and twice the PerLTQA ingest time at
/// equal PerLTQA recall; windows alone are the default.
pub fn embedding_windows<'t>(
    analyzer: &mnemos_text::Analyzer,
    text: &'t str,
    window_tokens: usize,
) -> Vec<&'t str> {
    if window_tokens == 0 || analyzer.count_tokens(text) <= window_tokens {
        return vec![text];
    }
    let mut out = Vec::new();
    let offset = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut tokens = 0;
    for sentence in mnemos_text::sentences(text) {
        let n = analyzer.count_tokens(sentence);
        if let Some(s) = start {
            if tokens + n > window_tokens {
                out.push(&text[s..end]);
                start = None;
                tokens = 0;
            }
        }
        if start.is_none() {
            start = Some(offset(sentence));
        }
        end = offset(sentence) + sentence.len();
        tokens += n;
    }
    if let Some(s) = start {
        out.push(&text[s..end]);
    }
    out
}

impl RetrievalConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=100_000).contains(&self.candidates) {
            return Err(Error::invalid(
                "retrieval.candidates must be between 1 and 100000",
            ));
        }
        if !(1..=10_000).contains(&self.top_k) {
            return Err(Error::invalid(
                "retrieval.top_k must be between 1 and 10000",
            ));
        }
        if let Some(memory_type) = &self.memory_type {
            memory_type.validate()?;
        }
        if self.window_tokens > 100_000 {
            return Err(Error::invalid(
                "retrieval.window_tokens must be at most 100000 (0 = no windows)",
            ));
        }
        if !(0.0..=1.0).contains(&self.context) {
            return Err(Error::invalid("retrieval.context must be between 0 and 1"));
        }
        if !(0.0..=1.0).contains(&self.speaker) {
            return Err(Error::invalid("retrieval.speaker must be between 0 and 1"));
        }
        if !(0.0..=1.0).contains(&self.date) {
            return Err(Error::invalid("retrieval.date must be between 0 and 1"));
        }
        self.ranker.validate()?;
        self.ann.validate()?;
        validate_min_relevance("retrieval.min_relevance", self.min_relevance)?;
        if let Some(relevance) = &self.relevance {
            relevance.validate_as("retrieval.relevance")?;
        }
        if let Some(relevance) = &self.relevance_cjk {
            relevance.validate_as("retrieval.relevance_cjk")?;
        }
        let Bm25Params { k1, b } = self.bm25;
        if !k1.is_finite() || k1 < 0.0 || !(0.0..=1.0).contains(&b) {
            return Err(Error::invalid(
                "retrieval.bm25 needs k1 >= 0 and 0 <= b <= 1",
            ));
        }
        let (l, d) = match self.fusion {
            Fusion::Rrf {
                k,
                lexical_weight,
                dense_weight,
            } => {
                if !k.is_finite() || k <= 0.0 {
                    return Err(Error::invalid("retrieval.fusion.k must be > 0"));
                }
                (lexical_weight, dense_weight)
            }
            Fusion::Weighted {
                lexical_weight,
                dense_weight,
            } => (lexical_weight, dense_weight),
        };
        if !l.is_finite() || !d.is_finite() || l < 0.0 || d < 0.0 || l + d <= 0.0 {
            return Err(Error::invalid(
                "retrieval.fusion weights must be >= 0 and not both 0",
            ));
        }
        Ok(())
    }
}

/// A second retrieval hop seeded by the first hop's best candidates (pseudo-relevance
/// feedback through entities): each seed's terms that the query does not already have — the
/// new information it brings, typically a name — are searched with BM25, and every memory found
/// inherits part of the seed's score in proportion to how much of that new information it
/// shares.
///
/// This reaches memories that share nothing with the question but an entity with a memory
/// that does ("the event in Shanghai — when is it?" finds "X is in Shanghai", whose "X" then
/// finds "X starts Monday"). Only rare words bridge — those in at most √N of the user's N
/// memories, as names are and a frequent speaker's name or a common word is not — so a seed
/// that is itself a false hit spreads little. A memory found from seed `s` gains
/// `weight × fused(s) × min(1, bm25_new(m) / bm25_new(s))` from its strongest seed `s`, where
/// `bm25_new` scores against the seed's new terms and `bm25_new(s)` is the seed's own score:
/// a memory that carries all of the seed's new terms ranks just below the seed. Gains do not add
/// up over seeds: the seeds often come from one story (an event and its dialogue), and summing
/// let that story's other records outvote a direct hit the first hop ranked just below them.
///
/// A bridged memory is a guess about what the question goes through; a direct hit is not.
/// So the first hop's best `keep` candidates keep their places, and what the hop finds ranks
/// after them: the hop fills the rest of the list instead of displacing the direct answers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecondHop {
    /// How many of the first hop's best candidates seed the second hop (1..=20).
    pub seeds: usize,
    /// Weight of the second hop relative to the first (0, 1].
    pub weight: f32,
    /// How many of the first hop's best candidates keep their places ahead of everything the
    /// hop adds (0..=100; 0 lets the hop reorder the whole list).
    #[serde(default = "default_hop_keep")]
    pub keep: usize,
}

/// Keeping one place was best on MemDaily and PerLTQA alike (docs/results/retrieval.md).
fn default_hop_keep() -> usize {
    1
}

impl Default for SecondHop {
    fn default() -> Self {
        Self {
            seeds: 3,
            weight: 0.9,
            keep: default_hop_keep(),
        }
    }
}

impl SecondHop {
    pub fn validate(&self) -> Result<()> {
        if !(1..=20).contains(&self.seeds) {
            return Err(Error::invalid("second hop seeds must be between 1 and 20"));
        }
        if !self.weight.is_finite() || self.weight <= 0.0 || self.weight > 1.0 {
            return Err(Error::invalid("second hop weight must be in (0, 1]"));
        }
        if self.keep > 100 {
            return Err(Error::invalid("second hop keep must be between 0 and 100"));
        }
        Ok(())
    }
}

/// Fuse lexical and dense candidate lists into (slot, fused score, lexical, dense), best first.
///
/// Ties break on slot so results are deterministic; [`fuse_by`] breaks them on a key of your own.
pub fn fuse(
    fusion: &Fusion,
    lexical: &[(u32, f32)],
    dense: &[(u32, f32)],
) -> Vec<(u32, f32, Option<Signal>, Option<Signal>)> {
    fuse_by(fusion, lexical, dense, |slot| slot)
}

/// [`fuse`], with ties broken on `tie(slot)`, ascending.
pub fn fuse_by<K: Ord>(
    fusion: &Fusion,
    lexical: &[(u32, f32)],
    dense: &[(u32, f32)],
    tie: impl Fn(u32) -> K,
) -> Vec<(u32, f32, Option<Signal>, Option<Signal>)> {
    let mut by_slot: HashMap<u32, (Option<Signal>, Option<Signal>)> = HashMap::new();
    for (i, &(slot, score)) in lexical.iter().enumerate() {
        by_slot.entry(slot).or_default().0 = Some(Signal {
            score,
            rank: i as u32 + 1,
        });
    }
    for (i, &(slot, score)) in dense.iter().enumerate() {
        by_slot.entry(slot).or_default().1 = Some(Signal {
            score,
            rank: i as u32 + 1,
        });
    }
    let min_max = |list: &[(u32, f32)]| {
        let lo = list.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
        let hi = list.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
        (lo, hi)
    };
    let (_, l_hi) = min_max(lexical);
    let (d_lo, d_hi) = min_max(dense);
    let norm = |s: f32, lo: f32, hi: f32| if hi > lo { (s - lo) / (hi - lo) } else { 1.0 };
    let mut out: Vec<(u32, f32, Option<Signal>, Option<Signal>)> = by_slot
        .into_iter()
        .map(|(slot, (l, d))| {
            let fused = match *fusion {
                Fusion::Rrf {
                    k,
                    lexical_weight,
                    dense_weight,
                } => {
                    l.map_or(0.0, |s| lexical_weight / (k + s.rank as f32))
                        + d.map_or(0.0, |s| dense_weight / (k + s.rank as f32))
                }
                Fusion::Weighted {
                    lexical_weight,
                    dense_weight,
                } => {
                    l.map_or(0.0, |s| {
                        lexical_weight * if l_hi > 0.0 { s.score / l_hi } else { 1.0 }
                    }) + d.map_or(0.0, |s| dense_weight * norm(s.score, d_lo, d_hi))
                }
            };
            (slot, fused, l, d)
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| tie(a.0).cmp(&tie(b.0))));
    out
}

/// Reciprocal-rank constant for the merged score of a split query's parts (as RRF's usual 60).
const PART_RRF_K: f32 = 60.0;

/// Merge the candidate lists of a split query's parts by taking turns: every part's first
/// candidate, then every part's second, and so on (within a round, the one its own search
/// scored higher first), skipping memories already taken. Each part thus gets an equal share
/// of the top places, whatever its wording. Summing reciprocal ranks instead would favour
/// memories that are mediocre for every part over the best answer to one. A memory's score
/// becomes 1 / (60 + its best rank), and it keeps the signals of the part that ranked it best.
pub fn merge_by_rank(lists: Vec<Vec<Candidate>>) -> Vec<Candidate> {
    let mut best: HashMap<MemoryId, (usize, Candidate)> = HashMap::new();
    for list in lists {
        for (rank, candidate) in list.into_iter().enumerate() {
            match best.get(&candidate.id) {
                Some((r, c)) if *r < rank || (*r == rank && c.fused >= candidate.fused) => {}
                _ => {
                    best.insert(candidate.id, (rank, candidate));
                }
            }
        }
    }
    let mut merged: Vec<(usize, Candidate)> = best.into_values().collect();
    merged.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.fused.total_cmp(&a.1.fused))
            .then(a.1.id.cmp(&b.1.id))
    });
    merged
        .into_iter()
        .map(|(rank, mut candidate)| {
            candidate.fused = 1.0 / (PART_RRF_K + rank as f32 + 1.0);
            candidate
        })
        .collect()
}

/// Keep the best `n` of unsorted (slot, score) pairs, sorted best first (ties: lower slot first).
pub fn top_n(scored: Vec<(u32, f32)>, n: usize) -> Vec<(u32, f32)> {
    top_n_by(scored, n, |slot| slot)
}

/// [`top_n`], with ties broken on `tie(slot)`, ascending.
pub fn top_n_by<K: Ord>(
    mut scored: Vec<(u32, f32)>,
    n: usize,
    tie: impl Fn(u32) -> K,
) -> Vec<(u32, f32)> {
    dense::keep_top(&mut scored, n, &tie);
    scored
}

/// Take hits in rank order while they fit in `budget` tokens (skipping any single hit that does
/// not fit), at most `top_k`.
pub fn select_within_budget(hits: Vec<Hit>, top_k: usize, budget: Option<usize>) -> Vec<Hit> {
    let mut used = 0usize;
    let mut out = Vec::new();
    for hit in hits {
        if out.len() >= top_k {
            break;
        }
        if let Some(limit) = budget {
            if used + hit.tokens > limit {
                continue;
            }
        }
        used += hit.tokens;
        out.push(hit);
    }
    out
}

/// What a search may return (beyond the user boundary, which is always enforced).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchFilter {
    /// Kinds; empty = all.
    pub kinds: Vec<KindTag>,
    pub agent: Option<String>,
    pub session: Option<String>,
    /// Which memories by valid time (all, current only, or valid at a moment).
    #[serde(default)]
    pub validity: Validity,
}

#[derive(Clone)]
struct Slot {
    id: MemoryId,
    kind: KindTag,
    agent: String,
    session: String,
    /// When the memory became true (a turn: when it was said).
    time: Timestamp,
    /// When it stopped being true (superseded), if it has.
    valid_to: Option<Timestamp>,
    live: bool,
}

/// One fused candidate of a search, best first in [`ScopeIndex::candidates`]' output.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub id: MemoryId,
    pub fused: f32,
    pub lexical: Option<Signal>,
    pub dense: Option<Signal>,
    pub second_hop: Option<HopSignal>,
    pub context: Option<HopSignal>,
    pub speaker: Option<f32>,
    pub date: Option<f32>,
    pub ranker: Option<RankerSignal>,
    /// Set by the caller that explains the candidate ([`ScopeIndex::relevance`]); candidate
    /// generation leaves it empty.
    pub relevance: Option<RelevanceSignal>,
    /// The query terms a lexical candidate holds, set by the caller that explains it
    /// ([`ScopeIndex::matched_terms`]); candidate generation leaves it empty.
    pub matched_terms: Vec<String>,
}

/// Where one candidate generation ([`ScopeIndex::candidates_timed`]) spent its time, stage by
/// stage, in nanoseconds. The profile bench (`mnemos bench search --profile`) reports these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StageTimes {
    /// BM25 scoring over the inverted index and its top candidates.
    pub bm25_ns: u64,
    /// Dense scoring (the vector scan, or the store's answer mapped to slots) and its top
    /// candidates.
    pub dense_ns: u64,
    /// Fusing the two lists.
    pub fusion_ns: u64,
    /// Dialogue context, speaker and date signals, and the sort after them.
    pub signals_ns: u64,
    /// The learned ranker.
    pub ranker_ns: u64,
    /// The second hop.
    pub second_hop_ns: u64,
    /// Turning ranked slots into candidates.
    pub assemble_ns: u64,
}

impl StageTimes {
    /// Every stage's time added to this one's.
    pub fn add(&mut self, other: &StageTimes) {
        self.bm25_ns += other.bm25_ns;
        self.dense_ns += other.dense_ns;
        self.fusion_ns += other.fusion_ns;
        self.signals_ns += other.signals_ns;
        self.ranker_ns += other.ranker_ns;
        self.second_hop_ns += other.second_hop_ns;
        self.assemble_ns += other.assemble_ns;
    }
}

/// Where a search spent its time, in microseconds; `stages` and the `_ns` fields break the
/// same time down further, in nanoseconds (`mnemos bench search --profile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SearchTimings {
    pub embed_us: u64,
    pub rank_us: u64,
    pub fetch_us: u64,
    /// Classifying the query for a memory-type re-rank.
    pub classify_us: u64,
    /// Every re-ranking stage, query classification excluded.
    pub rerank_us: u64,
    /// Checking the user's index is current (and building it when it is not).
    pub index_ns: u64,
    /// Splitting the query into questions and analyzing its terms.
    pub analyze_ns: u64,
    /// Candidate generation, stage by stage (part of `rank_us`).
    pub stages: StageTimes,
    /// Judging candidates' relevance against the floor (part of `rank_us`).
    pub relevance_ns: u64,
    /// Reading the returned memories from the store (part of `fetch_us`).
    pub rows_ns: u64,
    /// Building hits and their explanations (part of `fetch_us`).
    pub explain_ns: u64,
    /// Dropping repeated facts and cutting to `top_k` under the budget.
    pub select_ns: u64,
}

/// Nanoseconds between successive laps.
struct Lap(std::time::Instant);

impl Lap {
    fn start() -> Self {
        Lap(std::time::Instant::now())
    }

    /// Nanoseconds since the previous lap (or the start).
    fn lap(&mut self) -> u64 {
        let now = std::time::Instant::now();
        let ns = now.duration_since(self.0).as_nanos();
        self.0 = now;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// What one candidate generation searches for: the settings, the retriever, the query's
/// analyzed terms, the filter and the second hop, if any.
#[derive(Clone, Copy)]
pub struct CandidateQuery<'a> {
    pub config: &'a RetrievalConfig,
    pub retriever: RetrieverKind,
    pub terms: &'a [String],
    pub filter: &'a SearchFilter,
    pub second_hop: Option<&'a SecondHop>,
}

/// Scale `tail` (in any order) so that its best score stays below `floor`, the lowest score
/// of the candidates ranked ahead of it; order within the tail is kept. A tail that only ties
/// the floor is left as it is: equal scores already rank by memory id.
fn keep_below(floor: Option<f32>, tail: &mut [Ranked]) {
    let Some(floor) = floor else {
        return;
    };
    let top = tail.iter().map(|r| r.score).fold(0.0f32, f32::max);
    if top > 0.0 && top > floor {
        let scale = floor / top * 0.999;
        tail.iter_mut().for_each(|r| r.score *= scale);
    }
}

/// A loan one candidate makes another: (the lender's slot, the amount).
type Loan = (u32, f32);

/// Record `loan` for `receiver` unless it already holds a larger one: a receiver keeps its
/// best lender only, so loans never add up.
fn keep_larger(loans: &mut HashMap<u32, Loan>, receiver: u32, loan: Loan) {
    let entry = loans.entry(receiver).or_insert((loan.0, 0.0));
    if loan.1 > entry.1 {
        *entry = loan;
    }
}

/// Add each receiver's loan to its score and note it with `mark`; receivers that were not
/// candidates join at the end, unsorted.
fn add_loans(fused: &mut Vec<Ranked>, loans: HashMap<u32, Loan>, mark: fn(&mut Ranked, Loan)) {
    let position: HashMap<u32, usize> =
        fused.iter().enumerate().map(|(i, c)| (c.slot, i)).collect();
    for (receiver, loan) in loans {
        let at = match position.get(&receiver) {
            Some(&at) => at,
            None => {
                fused.push(Ranked::new(receiver));
                fused.len() - 1
            }
        };
        fused[at].score += loan.1;
        mark(&mut fused[at], loan);
    }
}

/// Raise `score` by `weight` × itself; returns what was added (for the breakdown).
fn boost(score: &mut f32, weight: f32) -> f32 {
    let added = weight * *score;
    *score += added;
    added
}

/// A candidate by slot while a search ranks it; `hop` is (the seed slot that bridged to it,
/// what the second hop added), `context` (the neighbouring turn, what it lent).
struct Ranked {
    slot: u32,
    score: f32,
    lexical: Option<Signal>,
    dense: Option<Signal>,
    hop: Option<(u32, f32)>,
    context: Option<(u32, f32)>,
    speaker: Option<f32>,
    date: Option<f32>,
    ranker: Option<RankerSignal>,
}

impl Ranked {
    fn new(slot: u32) -> Self {
        Ranked {
            slot,
            score: 0.0,
            lexical: None,
            dense: None,
            hop: None,
            context: None,
            speaker: None,
            date: None,
            ranker: None,
        }
    }
}

/// Derived per-user search state: slot table, BM25 index and vectors of the active memories.
#[derive(Clone)]
pub struct ScopeIndex {
    slots: Vec<Slot>,
    by_id: HashMap<MemoryId, u32>,
    pub(crate) bm25: Bm25Index,
    pub(crate) dense: DenseIndex,
    /// The texts whose vectors `dense` holds exactly (f32 only), for reuse by later writes.
    texts: EmbeddedTexts,
    /// Turn memories in session order, for [`RetrievalConfig::context`].
    dialogue: DialogueOrder,
    /// Highest round seen in this user's turns (drives the logical clock).
    pub last_round: Option<u64>,
    /// Vectors live in the store, which scores them ([`Self::candidates_scored`]): `dense`
    /// stays empty.
    external_vectors: bool,
    /// With external vectors: the slots whose memory has one in the store.
    stored_vectors: HashSet<u32>,
}

impl ScopeIndex {
    /// An index whose dense scores come from the store's vector search: upserts keep no
    /// vectors, and searches pass the store's nearest memories to
    /// [`candidates_scored`](Self::candidates_scored).
    pub fn with_external_vectors(config: &RetrievalConfig, dim: usize) -> Self {
        Self {
            external_vectors: true,
            ..Self::new(config, dim)
        }
    }

    pub fn new(config: &RetrievalConfig, dim: usize) -> Self {
        Self {
            slots: Vec::new(),
            by_id: HashMap::new(),
            bm25: Bm25Index::new(config.bm25),
            dense: DenseIndex::new(dim, config.quantization).with_ann(config.ann),
            texts: EmbeddedTexts::default(),
            dialogue: DialogueOrder::default(),
            last_round: None,
            external_vectors: false,
            stored_vectors: HashSet::new(),
        }
    }

    /// Memories with a vector (in the dense index, or in the store for external vectors).
    pub fn vector_count(&self) -> usize {
        self.dense.len() + self.stored_vectors.len()
    }

    /// Distinct terms in the lexical index.
    pub fn vocabulary(&self) -> usize {
        self.bm25.vocabulary()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn contains(&self, id: MemoryId) -> bool {
        self.by_id.contains_key(&id)
    }

    /// Index an active memory with its analyzed terms and (optionally) its vector.
    pub fn upsert(&mut self, memory: &Memory, terms: &[String], vector: Option<&[f32]>) {
        if !memory.is_active() {
            self.remove(memory.id);
            return;
        }
        let slot = match self.by_id.get(&memory.id) {
            Some(&s) => s,
            None => {
                let s = self.slots.len() as u32;
                self.slots.push(Slot {
                    id: memory.id,
                    kind: memory.kind.tag(),
                    agent: memory.scope.agent.clone(),
                    session: memory.scope.session.clone(),
                    time: memory.valid_from,
                    valid_to: memory.valid_to,
                    live: true,
                });
                self.by_id.insert(memory.id, s);
                s
            }
        };
        let entry = &mut self.slots[slot as usize];
        entry.kind = memory.kind.tag();
        entry.time = memory.valid_from;
        entry.valid_to = memory.valid_to;
        entry.live = true;
        if entry.kind == KindTag::Turn {
            let scope = &memory.scope;
            let place = TurnPlace {
                agent: &scope.agent,
                session: &scope.session,
                at: memory.created,
                id: memory.id,
                speaker: memory.speaker(),
                role: memory.role(),
            };
            self.dialogue.insert(slot, place);
        } else {
            self.dialogue.remove(slot);
        }
        self.bm25.insert(slot, terms);
        // Whatever texts the old vectors answered for, these may not.
        self.texts.drop_slot(slot);
        self.stored_vectors.remove(&slot);
        match vector {
            Some(_) if self.external_vectors => {
                self.stored_vectors.insert(slot);
            }
            Some(v) => {
                self.dense.insert(slot, v);
            }
            None => self.dense.remove(slot),
        }
    }

    /// [`upsert`](Self::upsert) with the content keys of the texts `vector`'s windows were
    /// embedded from, one per window in order, so that a later write of the same text takes
    /// the vector from [`embedded`](Self::embedded) instead of embedding it again. Keys that do
    /// not match the vector's window count, and every key of an int8 index, are not kept.
    pub fn upsert_embedded(
        &mut self,
        memory: &Memory,
        terms: &[String],
        vector: &[f32],
        keys: &[TextKey],
    ) {
        self.upsert(memory, terms, Some(vector));
        let Some(&slot) = self.by_id.get(&memory.id) else {
            return; // not active: removed
        };
        let windows_match = !keys.is_empty() && keys.len() * self.dense.dimension() == vector.len();
        if windows_match && self.dense.keeps_exact() && self.dense.contains(slot) {
            self.texts.record(slot, keys);
        }
    }

    /// The vector of the text with content key `key`, exactly as it was embedded, if an active
    /// memory of this index holds it (as its text or one of its windows).
    pub fn embedded(&self, key: &TextKey) -> Option<&[f32]> {
        let (slot, window) = self.texts.find(key)?;
        self.dense.exact_window(slot, window as usize)
    }

    /// Distinct texts [`embedded`](Self::embedded) can answer for.
    pub fn embedded_texts(&self) -> usize {
        self.texts.len()
    }

    /// Does this index keep exact vectors, so that [`embedded`](Self::embedded) can answer?
    pub fn keeps_exact_vectors(&self) -> bool {
        self.dense.keeps_exact()
    }

    pub fn remove(&mut self, id: MemoryId) {
        if let Some(slot) = self.by_id.remove(&id) {
            self.stored_vectors.remove(&slot);
            self.bm25.remove(slot);
            self.dense.remove(slot);
            self.texts.drop_slot(slot);
            self.dialogue.remove(slot);
            if let Some(s) = self.slots.get_mut(slot as usize) {
                s.live = false;
            }
        }
    }

    pub fn has_vector(&self, id: MemoryId) -> bool {
        self.by_id
            .get(&id)
            .is_some_and(|&s| self.dense.contains(s) || self.stored_vectors.contains(&s))
    }

    fn accepts(&self, slot: u32, filter: &SearchFilter) -> bool {
        let Some(s) = self.slots.get(slot as usize) else {
            return false;
        };
        s.live
            && (filter.kinds.is_empty() || filter.kinds.contains(&s.kind))
            && filter.agent.as_ref().is_none_or(|a| *a == s.agent)
            && filter.session.as_ref().is_none_or(|x| *x == s.session)
            && filter.validity.matches(s.time, s.valid_to)
    }

    /// The terms of `query_terms` (in their order, each once) that the memory `id` holds as
    /// indexed: what a lexical hit matched, read from the index instead of analyzing the
    /// memory's text again.
    pub fn matched_terms(&self, id: MemoryId, query_terms: &[String]) -> Vec<String> {
        let Some(&slot) = self.by_id.get(&id) else {
            return Vec::new();
        };
        let mut matched: Vec<String> = Vec::new();
        for term in query_terms {
            let held = self
                .bm25
                .term_id(term)
                .is_some_and(|t| self.bm25.holds(slot, t));
            if held && !matched.contains(term) {
                matched.push(term.clone());
            }
        }
        matched
    }

    /// Record that the memory `id` stopped being true at `valid_to` (or is true again, for
    /// `None`): a supersession changes no text, so nothing else of the index moves.
    pub fn set_valid_to(&mut self, id: MemoryId, valid_to: Option<Timestamp>) {
        if let Some(&slot) = self.by_id.get(&id) {
            if let Some(entry) = self.slots.get_mut(slot as usize) {
                entry.valid_to = valid_to;
            }
        }
    }

    /// When the memory `id` stopped being true, as indexed (`None`: unknown or still true).
    pub fn valid_to(&self, id: MemoryId) -> Option<Timestamp> {
        let slot = *self.by_id.get(&id)?;
        self.slots.get(slot as usize)?.valid_to
    }

    /// Candidate generation and fusion, with an optional second hop; best first.
    pub fn candidates(
        &self,
        config: &RetrievalConfig,
        retriever: RetrieverKind,
        query_terms: &[String],
        query_vector: Option<&[f32]>,
        filter: &SearchFilter,
        second_hop: Option<&SecondHop>,
    ) -> Vec<Candidate> {
        let query = CandidateQuery {
            config,
            retriever,
            terms: query_terms,
            filter,
            second_hop,
        };
        self.candidates_timed(&query, query_vector, &mut StageTimes::default())
    }

    /// [`candidates`](Self::candidates), adding each stage's time to `times`.
    pub fn candidates_timed(
        &self,
        query: &CandidateQuery<'_>,
        query_vector: Option<&[f32]>,
        times: &mut StageTimes,
    ) -> Vec<Candidate> {
        let mut lap = Lap::start();
        let accept = |slot: u32| self.accepts(slot, query.filter);
        let tie = |slot: u32| self.id_of(slot);
        let dense = match (query.retriever.uses_dense(), query_vector) {
            (true, Some(q)) => self.dense.top(q, &accept, query.config.candidates, tie),
            _ => Vec::new(),
        };
        times.dense_ns += lap.lap();
        self.candidates_from(query, dense, times)
    }

    /// [`candidates`](Self::candidates) with the dense scores given: the store's nearest
    /// memories and their cosine similarities (see [`with_external_vectors`]
    /// (Self::with_external_vectors)). Memories this index does not hold, or the filter
    /// rejects, are skipped.
    pub fn candidates_scored(
        &self,
        config: &RetrievalConfig,
        retriever: RetrieverKind,
        query_terms: &[String],
        nearest: &[(MemoryId, f32)],
        filter: &SearchFilter,
        second_hop: Option<&SecondHop>,
    ) -> Vec<Candidate> {
        let query = CandidateQuery {
            config,
            retriever,
            terms: query_terms,
            filter,
            second_hop,
        };
        self.candidates_scored_timed(&query, nearest, &mut StageTimes::default())
    }

    /// [`candidates_scored`](Self::candidates_scored), adding each stage's time to `times`.
    pub fn candidates_scored_timed(
        &self,
        query: &CandidateQuery<'_>,
        nearest: &[(MemoryId, f32)],
        times: &mut StageTimes,
    ) -> Vec<Candidate> {
        let mut lap = Lap::start();
        let dense = if query.retriever.uses_dense() {
            let scored = nearest
                .iter()
                .filter_map(|(id, score)| self.by_id.get(id).map(|&slot| (slot, *score)))
                .filter(|&(slot, _)| self.accepts(slot, query.filter))
                .collect();
            top_n_by(scored, query.config.candidates, |slot| self.id_of(slot))
        } else {
            Vec::new()
        };
        times.dense_ns += lap.lap();
        self.candidates_from(query, dense, times)
    }

    /// The rest of candidate generation, given the dense side's best candidates (sorted).
    fn candidates_from(
        &self,
        query: &CandidateQuery<'_>,
        dense: Vec<(u32, f32)>,
        times: &mut StageTimes,
    ) -> Vec<Candidate> {
        let CandidateQuery {
            config,
            retriever,
            terms: query_terms,
            filter,
            second_hop,
        } = *query;
        let mut lap = Lap::start();
        let accept = |slot: u32| self.accepts(slot, filter);
        // Equal scores rank by memory id, not by when this process indexed the memory, so
        // every process ranks the same data the same way.
        let tie = |slot: u32| self.id_of(slot);
        let lexical = if retriever != RetrieverKind::Dense {
            top_n_by(
                self.bm25.score(query_terms, &accept),
                config.candidates,
                tie,
            )
        } else {
            Vec::new()
        };
        times.bm25_ns += lap.lap();
        let mut fused: Vec<Ranked> = fuse_by(&config.fusion, &lexical, &dense, tie)
            .into_iter()
            .map(|(slot, score, lexical, dense)| Ranked {
                score,
                lexical,
                dense,
                ..Ranked::new(slot)
            })
            .collect();
        times.fusion_ns += lap.lap();
        self.add_context(config.context, &accept, &mut fused);
        self.favour_named_speakers(config.speaker, query_terms, &mut fused);
        self.favour_named_dates(config.date, query_terms, &mut fused);
        // The second hop seeds from the best candidates, so it needs them in order.
        self.sort_ranked(&mut fused);
        times.signals_ns += lap.lap();
        // Where the learned ranker runs (dialogue), its session and neighbour features already
        // reach what the hop would bridge to, and the hop measured as a loss there, refitted
        // or not; so the hop is for the records and notes the ranker leaves alone.
        if self.ranker_applies(&config.ranker, &fused) {
            self.apply_ranker(&config.ranker, query_terms, &mut fused);
            times.ranker_ns += lap.lap();
        } else if let Some(hop) = second_hop {
            times.ranker_ns += lap.lap();
            self.add_second_hop(query_terms, hop, &accept, &mut fused);
            times.second_hop_ns += lap.lap();
        }
        let candidates = self.assemble(fused);
        times.assemble_ns += lap.lap();
        candidates
    }

    /// Ranked slots as candidates, in order.
    fn assemble(&self, fused: Vec<Ranked>) -> Vec<Candidate> {
        fused
            .into_iter()
            .filter_map(|r| {
                let id = self.slots.get(r.slot as usize)?.id;
                let signal = |(via, added): (u32, f32)| {
                    let via = self.slots.get(via as usize)?.id;
                    Some(HopSignal { via, added })
                };
                Some(Candidate {
                    id,
                    fused: r.score,
                    lexical: r.lexical,
                    dense: r.dense,
                    second_hop: r.hop.and_then(signal),
                    context: r.context.and_then(signal),
                    speaker: r.speaker,
                    date: r.date,
                    ranker: r.ranker,
                    relevance: None,
                    matched_terms: Vec::new(),
                })
            })
            .collect()
    }

    /// Query again from the best first-hop candidates and add what they find (see
    /// [`SecondHop`]); re-sorts `fused`.
    fn add_second_hop(
        &self,
        query_terms: &[String],
        hop: &SecondHop,
        accept: &dyn Fn(u32) -> bool,
        fused: &mut Vec<Ranked>,
    ) {
        let seeds: Vec<(u32, f32)> = fused
            .iter()
            .take(hop.seeds)
            .filter(|c| c.score > 0.0)
            .map(|c| (c.slot, c.score))
            .collect();
        // Only direct hits keep their places; a zero-score candidate matched nothing.
        let kept = fused
            .iter()
            .take(hop.keep)
            .take_while(|c| c.score > 0.0)
            .count();
        let kept_slots: HashSet<u32> = fused[..kept].iter().map(|r| r.slot).collect();
        let is_kept = |slot: u32| kept_slots.contains(&slot);
        let gains = self.hop_gains(&seeds, query_terms, hop.weight, accept, &is_kept);
        add_loans(fused, gains, |r, gain| r.hop = Some(gain));
        let (head, tail) = fused.split_at_mut(kept);
        keep_below(head.last().map(|r| r.score), tail);
        self.sort_ranked(tail);
    }

    /// What the second hop adds to each memory it reaches, by slot: (the seed that bridges to
    /// it best, that bridge's gain). Memories `is_kept` reports are left out.
    fn hop_gains(
        &self,
        seeds: &[(u32, f32)],
        query_terms: &[String],
        weight: f32,
        accept: &dyn Fn(u32) -> bool,
        is_kept: &dyn Fn(u32) -> bool,
    ) -> HashMap<u32, Loan> {
        let max_df = (self.bm25.live_docs() as f64).sqrt().ceil().max(2.0) as u32;
        let mut strongest: HashMap<u32, Loan> = HashMap::new();
        for &(seed, seed_score) in seeds {
            let Some((own, found)) = self.bm25.score_like(seed, query_terms, max_df, accept) else {
                continue;
            };
            if own <= 0.0 {
                continue;
            }
            for (slot, score) in found {
                let added = weight * seed_score * (score / own).min(1.0);
                if added <= 0.0 || is_kept(slot) {
                    continue;
                }
                keep_larger(&mut strongest, slot, (seed, added));
            }
        }
        strongest
    }

    /// Every candidate turn lends each neighbouring turn `weight` × its fused score; a turn
    /// takes the larger of its two loans (see [`RetrievalConfig::context`]). Neighbours that
    /// were not candidates join (unsorted, at the end). Loans come from fusion scores alone, so
    /// nothing compounds along a session.
    fn add_context(&self, weight: f32, accept: &dyn Fn(u32) -> bool, fused: &mut Vec<Ranked>) {
        if weight <= 0.0 {
            return;
        }
        // receiver slot → (lender slot, amount): the best neighbour only.
        let mut lent: HashMap<u32, Loan> = HashMap::new();
        for lender in fused.iter().filter(|r| r.score > 0.0) {
            for receiver in self.dialogue.neighbours(lender.slot).into_iter().flatten() {
                if !accept(receiver) {
                    continue;
                }
                keep_larger(&mut lent, receiver, (lender.slot, weight * lender.score));
            }
        }
        add_loans(fused, lent, |r, loan| r.context = Some(loan));
    }

    /// Turns said by a speaker the query names gain `weight` × their score (see
    /// [`RetrievalConfig::speaker`]). Leaves `fused` unsorted.
    fn favour_named_speakers(&self, weight: f32, query_terms: &[String], fused: &mut [Ranked]) {
        if weight <= 0.0 {
            return;
        }
        let named = self.dialogue.named_speakers(query_terms);
        if named.is_empty() {
            return;
        }
        for r in fused.iter_mut() {
            // Only turns of an exchange: a run of one person's records (a profile) is not
            // what this separates.
            let in_exchange = self.dialogue.neighbours(r.slot).iter().any(Option::is_some);
            let said_by_named = || {
                let speaker = self.dialogue.speaker(r.slot);
                speaker.is_some_and(|s| named.contains(&s))
            };
            if in_exchange && said_by_named() {
                r.speaker = Some(boost(&mut r.score, weight));
            }
        }
    }

    /// Memories from a period the query names gain `weight` × their score (see
    /// [`RetrievalConfig::date`]). Leaves `fused` unsorted.
    fn favour_named_dates(&self, weight: f32, query_terms: &[String], fused: &mut [Ranked]) {
        if weight <= 0.0 {
            return;
        }
        let periods = dates::named_periods(query_terms);
        if periods.is_empty() {
            return;
        }
        for r in fused.iter_mut() {
            let Some(slot) = self.slots.get(r.slot as usize) else {
                continue;
            };
            if periods.iter().any(|p| p.contains(slot.time)) {
                r.date = Some(boost(&mut r.score, weight));
            }
        }
    }

    /// Best first; equal scores by memory id.
    fn sort_ranked(&self, ranked: &mut [Ranked]) {
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.id_of(a.slot).cmp(&self.id_of(b.slot)))
        });
    }

    /// The memory in `slot` (None past the table, which no caller asks for).
    fn id_of(&self, slot: u32) -> Option<MemoryId> {
        self.slots.get(slot as usize).map(|s| s.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(text: &str) -> Memory {
        let scope = crate::model::Scope::new("t", "u", "a", "s").unwrap();
        Memory::from_turn(&crate::model::Turn {
            id: crate::model::TurnId::new(),
            scope,
            role: crate::model::Role::User,
            speaker: None,
            text: text.into(),
            at: crate::model::Moment::default(),
            metadata: crate::model::Metadata::new(),
            key: None,
        })
    }

    /// A turn of session "s" said by `speaker` in `round`, indexed with its analyzed terms.
    fn said(index: &mut ScopeIndex, speaker: &str, round: u64, text: &str) -> MemoryId {
        let mut m = memory(text);
        m.created.round = round;
        m.metadata
            .insert(Memory::SPEAKER_KEY.to_string(), speaker.to_string());
        // As the engine indexes a turn: its speaker's name before the text.
        let terms = mnemos_text::Analyzer::shared().search_terms(&format!("{speaker}: {text}"));
        index.upsert(&m, &terms, None);
        m.id
    }

    #[test]
    fn an_answer_ranks_beside_the_question_it_answers() {
        // The stage's own arithmetic, without the learned ranker's re-scoring.
        let config = RetrievalConfig {
            ranker: LearnedRanker::off(),
            ..RetrievalConfig::default()
        };
        let mut index = ScopeIndex::new(&config, 2);
        let question = said(
            &mut index,
            "Ann",
            1,
            "What is your favourite dish from the show?",
        );
        let answer = said(&mut index, "Bob", 2, "Coconut milk ice cream, so creamy.");
        let aside = said(&mut index, "Bob", 3, "Anyway, the weather is nice.");
        let other = said(&mut index, "Ann", 4, "I cooked a dish of pasta.");
        let terms = mnemos_text::Analyzer::shared().search_terms("favourite dish show");
        let search = |config: &RetrievalConfig, filter: &SearchFilter| {
            index.candidates(config, RetrieverKind::Bm25, &terms, None, filter, None)
        };
        let ids = |c: &[Candidate]| c.iter().map(|c| c.id).collect::<Vec<_>>();

        let off = RetrievalConfig {
            context: 0.0,
            ..config.clone()
        };
        assert_eq!(
            ids(&search(&off, &SearchFilter::default())),
            [question, other]
        );

        let found = search(&config, &SearchFilter::default());
        // The answer follows the question; the aside follows Bob's own turn and the pasta turn
        // is Ann's, so only a change of speaker lends (Bob's aside gets the pasta turn's loan).
        assert_eq!(ids(&found)[..2], [question, answer]);
        let lent = found[1].context.expect("the answer's loan is explained");
        assert_eq!(lent.via, question);
        assert!((lent.added - config.context * found[0].fused).abs() < 1e-6);
        assert!(found[1].lexical.is_none());
        let aside_hit = found.iter().find(|c| c.id == aside).map(|c| c.context);
        assert_eq!(aside_hit.flatten().map(|l| l.via), Some(other));
    }

    #[test]
    fn a_named_speaker_s_own_turns_come_first() {
        let config = RetrievalConfig {
            context: 0.0,
            ranker: LearnedRanker::off(),
            ..RetrievalConfig::default()
        };
        let mut index = ScopeIndex::new(&config, 2);
        // Bob tells Ann about her cello; Ann says she plays it. Same words, one speaker named.
        let bobs = said(&mut index, "Bob", 1, "Ann, you play the cello so well!");
        let anns = said(&mut index, "Ann", 2, "I play the cello every evening.");
        // A profile-like run of Ann's records with no exchange gains nothing.
        let mut profile = memory("Ann plays the cello.");
        profile.scope.session = "profile".into();
        profile
            .metadata
            .insert(Memory::SPEAKER_KEY.into(), "Ann".into());
        let terms = |t: &str| mnemos_text::Analyzer::shared().search_terms(t);
        index.upsert(&profile, &terms(&profile.text), None);
        let query = terms("What does Ann play? cello");
        let search = |config: &RetrievalConfig| {
            index.candidates(
                config,
                RetrieverKind::Bm25,
                &query,
                None,
                &SearchFilter::default(),
                None,
            )
        };
        let off = RetrievalConfig {
            speaker: 0.0,
            ..config.clone()
        };
        let without = search(&off);
        assert!(without.iter().all(|c| c.speaker.is_none()));
        let position = |found: &[Candidate], id| found.iter().position(|c| c.id == id);
        assert!(
            position(&without, bobs) < position(&without, anns),
            "{without:?}"
        );
        let with = search(&config);
        let anns_hit = with.iter().find(|c| c.id == anns).expect("found");
        let added = anns_hit.speaker.expect("explained");
        assert!((added - config.speaker * (anns_hit.fused - added)).abs() < 1e-6);
        assert!(position(&with, anns) < position(&with, bobs));
        let profile_hit = with.iter().find(|c| c.id == profile.id).expect("found");
        assert_eq!(profile_hit.speaker, None);
        // A query that names nobody changes nothing.
        let nobody = terms("who plays the cello");
        let plain = index.candidates(
            &config,
            RetrieverKind::Bm25,
            &nobody,
            None,
            &SearchFilter::default(),
            None,
        );
        assert!(plain.iter().all(|c| c.speaker.is_none()));
    }

    #[test]
    fn memories_from_the_period_a_query_names_come_first() {
        let config = RetrievalConfig::default();
        let mut index = ScopeIndex::new(&config, 2);
        let analyzer = mnemos_text::Analyzer::shared();
        let mut at = |day: &str, text: &str| {
            let mut m = memory(text);
            let date = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").unwrap();
            m.valid_from = Timestamp(
                date.and_hms_opt(20, 0, 0)
                    .unwrap()
                    .and_utc()
                    .timestamp_millis(),
            );
            index.upsert(&m, &analyzer.search_terms(text), None);
            m.id
        };
        let march = at("2023-03-02", "We went camping by the lake, it was cold.");
        let july = at("2023-07-09", "Camping again!");
        let search = |query: &str| {
            let terms = analyzer.search_terms(query);
            index.candidates(
                &config,
                RetrieverKind::Bm25,
                &terms,
                None,
                &SearchFilter::default(),
                None,
            )
        };
        let plain = search("camping lake");
        assert_eq!(plain[0].id, march);
        assert!(plain.iter().all(|c| c.date.is_none()));
        let dated = search("Where did they go camping in July 2023?");
        assert_eq!(dated[0].id, july, "{dated:?}");
        let added = dated[0].date.expect("explained");
        assert!((added - config.date * (dated[0].fused - added)).abs() < 1e-6);
        assert_eq!(dated[1].date, None);
    }

    #[test]
    fn a_forgotten_turn_neither_lends_nor_borrows() {
        let config = RetrievalConfig::default();
        let mut index = ScopeIndex::new(&config, 2);
        let question = said(&mut index, "Ann", 1, "Which city should I visit?");
        let answer = said(&mut index, "Bob", 2, "Barcelona, for the food.");
        let terms = mnemos_text::Analyzer::shared().search_terms("city visit");
        let filter = SearchFilter::default();
        let search = |index: &ScopeIndex| {
            let found = index.candidates(&config, RetrieverKind::Bm25, &terms, None, &filter, None);
            found.iter().map(|c| c.id).collect::<Vec<_>>()
        };
        assert_eq!(search(&index), [question, answer]);
        index.remove(answer);
        assert_eq!(search(&index), [question]);
    }

    #[test]
    fn an_embedded_text_is_found_while_an_active_memory_holds_its_vector() {
        let config = RetrievalConfig::default();
        let (short, first, second) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let mut index = ScopeIndex::new(&config, 2);
        let a = memory("a");
        let b = memory("b");
        index.upsert_embedded(&a, &[], &[1.0, 0.0], &[short]);
        index.upsert_embedded(&b, &[], &[0.0, 1.0, 0.6, 0.8], &[first, second]);
        assert_eq!(index.embedded(&short), Some(&[1.0, 0.0][..]));
        assert_eq!(index.embedded(&second), Some(&[0.6, 0.8][..]), "a window");
        assert_eq!(index.embedded_texts(), 3);
        // A vector replaced without keys (an edit) no longer answers for the old text.
        index.upsert(&a, &[], Some(&[0.0, 1.0]));
        assert_eq!(index.embedded(&short), None);
        // Nor does a removed (forgotten) memory; keys that do not match the windows are dropped.
        index.remove(b.id);
        assert_eq!(index.embedded(&first), None);
        index.upsert_embedded(&b, &[], &[0.0, 1.0, 0.6, 0.8], &[first]);
        assert_eq!(index.embedded_texts(), 0);
        // An int8 index holds no exact vector to hand back.
        let int8 = RetrievalConfig {
            quantization: Quantization::Int8,
            ..RetrievalConfig::default()
        };
        let mut index = ScopeIndex::new(&int8, 2);
        index.upsert_embedded(&a, &[], &[1.0, 0.0], &[short]);
        assert!(!index.keeps_exact_vectors());
        assert_eq!(index.embedded(&short), None);
    }

    #[test]
    fn store_scored_candidates_rank_like_in_process_scores() {
        let config = RetrievalConfig::default();
        let mut local = ScopeIndex::new(&config, 2);
        let mut external = ScopeIndex::with_external_vectors(&config, 2);
        let query = [0.8f32, 0.6];
        let mut nearest = Vec::new();
        for (text, vector) in [
            ("apples in the orchard", vec![1.0, 0.0]),
            ("a quiet harbour", vec![0.0, 1.0, 0.6, 0.8]),
            ("night trains", vec![0.0, 1.0]),
        ] {
            let m = memory(text);
            let terms = mnemos_text::Analyzer::shared().search_terms(text);
            local.upsert_embedded(&m, &terms, &vector, &[]);
            external.upsert_embedded(&m, &terms, &vector, &[]);
            let best = vector
                .chunks_exact(2)
                .map(|w| dense::dot(&query, w))
                .fold(f32::MIN, f32::max);
            nearest.push((m.id, best));
        }
        // The store answers unknown memories too (written since this index was built).
        nearest.push((MemoryId::new(), 0.99));
        assert_eq!(external.dense.len(), 0, "vectors stay in the store");
        assert_eq!(external.vector_count(), 3);
        let terms = mnemos_text::Analyzer::shared().terms("harbour trains");
        let filter = SearchFilter::default();
        let in_process = local.candidates(
            &config,
            RetrieverKind::Hybrid,
            &terms,
            Some(&query),
            &filter,
            None,
        );
        let scored = external.candidates_scored(
            &config,
            RetrieverKind::Hybrid,
            &terms,
            &nearest,
            &filter,
            None,
        );
        assert_eq!(scored, in_process);
    }

    #[test]
    fn short_texts_get_one_vector_and_long_ones_windows_of_whole_sentences() {
        let analyzer = mnemos_text::Analyzer::shared();
        let short = "I adopted a grey cat named Pixel.";
        assert_eq!(embedding_windows(analyzer, short, 64), vec![short]);
        let long: String = (0..30)
            .map(|i| format!("Sentence number {i} talks about topic {i} at some length. "))
            .collect();
        let long = long.trim_end();
        let windows = embedding_windows(analyzer, long, 40);
        assert!(windows.len() > 3);
        // Windows cover the text in order, start and end on sentence boundaries, respect the
        // budget, and together hold every sentence exactly once.
        let joined = windows.join(" ");
        assert_eq!(joined, long);
        for w in &windows {
            assert!(w.starts_with("Sentence") && w.ends_with('.'), "{w:?}");
            assert!(analyzer.count_tokens(w) <= 40, "{w:?}");
        }
        assert_eq!(embedding_windows(analyzer, long, 0), vec![long], "0 = off");
        // A single sentence over the budget is its own window; Chinese splits at 。
        let zh = "我们周末去了长城，天气很好，人也不多，大家都玩得很开心。".repeat(6);
        let windows = embedding_windows(analyzer, &zh, 20);
        assert!(windows.len() >= 3, "{windows:?}");
        assert_eq!(windows.concat(), zh);
    }

    #[test]
    fn rrf_prefers_items_both_lists_agree_on() {
        let lexical = vec![(1, 9.0), (2, 5.0), (3, 1.0)];
        let dense = vec![(2, 0.9), (4, 0.8), (1, 0.1)];
        let fused = fuse(&Fusion::rrf(), &lexical, &dense);
        assert_eq!(fused[0].0, 2); // ranks 2 and 1
        assert_eq!(fused[1].0, 1); // ranks 1 and 3
        assert!(fused.iter().all(|f| f.1 > 0.0));
        let weighted = fuse(
            &Fusion::Weighted {
                lexical_weight: 1.0,
                dense_weight: 0.0,
            },
            &lexical,
            &dense,
        );
        assert_eq!(weighted[0].0, 1);
    }

    #[test]
    fn top_n_is_sorted_and_deterministic() {
        let v = vec![(5, 1.0), (2, 3.0), (9, 3.0), (1, 0.5)];
        assert_eq!(top_n(v.clone(), 2), vec![(2, 3.0), (9, 3.0)]);
        assert_eq!(top_n(v.clone(), 10).len(), 4);
        assert!(top_n(v, 0).is_empty());
    }

    #[test]
    fn config_validation_names_the_problem() {
        let mut c = RetrievalConfig::default();
        assert!(c.validate().is_ok());
        c.fusion = Fusion::Weighted {
            lexical_weight: 0.0,
            dense_weight: 0.0,
        };
        assert!(c.validate().unwrap_err().to_string().contains("weights"));
        for bad in [-0.1, 1.5, f32::NAN] {
            let c = RetrievalConfig {
                context: bad,
                ..RetrievalConfig::default()
            };
            assert!(c.validate().unwrap_err().to_string().contains("context"));
            let c = RetrievalConfig {
                speaker: bad,
                ..RetrievalConfig::default()
            };
            assert!(c.validate().unwrap_err().to_string().contains("speaker"));
            let c = RetrievalConfig {
                date: bad,
                ..RetrievalConfig::default()
            };
            assert!(c.validate().unwrap_err().to_string().contains("date"));
        }
        let parsed: std::result::Result<RetrievalConfig, _> =
            serde_json::from_str(r#"{"fusion":{"method":"rrf","kk":1}}"#);
        assert!(parsed.is_err());
    }

    /// A ranker that only looks at one feature (`weight` on it, nothing else).
    fn ranker_on(feature: &str, weight: f32, depth: usize) -> LearnedRanker {
        let mut weights = vec![0.0; RANK_FEATURES];
        let at = RANK_FEATURE_NAMES
            .iter()
            .position(|n| *n == feature)
            .unwrap();
        weights[at] = weight;
        LearnedRanker {
            depth,
            weights,
            bias: 0.0,
        }
    }

    #[test]
    fn the_ranker_reorders_dialogue_by_its_estimate_and_explains_it() {
        let mut index = ScopeIndex::new(&RetrievalConfig::default(), 2);
        let short = said(&mut index, "Ann", 1, "Cello tonight.");
        let long = said(
            &mut index,
            "Bob",
            2,
            "The cello concert was long, with a quartet, a choir and a long encore after it.",
        );
        let other = said(&mut index, "Ann", 3, "The cello was great.");
        let terms = mnemos_text::Analyzer::shared().search_terms("cello tonight");
        let search = |ranker: LearnedRanker| {
            let config = RetrievalConfig {
                ranker,
                ..RetrievalConfig::default()
            };
            index.candidates(
                &config,
                RetrieverKind::Bm25,
                &terms,
                None,
                &SearchFilter::default(),
                None,
            )
        };
        let off = search(LearnedRanker::off());
        assert_eq!(off[0].id, short, "{off:?}");
        assert!(off.iter().all(|c| c.ranker.is_none()));

        // Longer turns first: the estimate orders them and becomes the score.
        let by_length = search(ranker_on("length", 1.0, 30));
        assert_eq!(by_length[0].id, long, "{by_length:?}");
        let signal = by_length[0].ranker.clone().expect("explained");
        assert_eq!(signal.features.len(), RANK_FEATURES);
        assert!((by_length[0].fused - signal.probability).abs() < 1e-6);
        assert_eq!(signal.strongest[0].0, "length");
        assert!(by_length.windows(2).all(|w| w[0].fused >= w[1].fused));

        // Only the best `depth` are re-ordered; the rest stay below them, in fused order.
        let shallow = search(ranker_on("length", -1.0, 1));
        assert_eq!(shallow[0].id, off[0].id);
        assert!(shallow[1..].iter().all(|c| c.ranker.is_none()));
        assert!(shallow[0].fused > shallow[1].fused);
        let rest = |c: &[Candidate]| c[1..].iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(rest(&shallow), rest(&off));
        assert!(off.iter().any(|c| c.id == other));
    }

    #[test]
    fn records_keep_their_fused_order() {
        let mut index = ScopeIndex::new(&RetrievalConfig::default(), 2);
        // Notes without a speaker are no exchange: the ranker, fitted on dialogue, stays out.
        for text in [
            "Cello tonight.",
            "The cello concert was long, very long indeed.",
        ] {
            let m = memory(text);
            let terms = mnemos_text::Analyzer::shared().search_terms(text);
            index.upsert(&m, &terms, None);
        }
        let config = RetrievalConfig {
            ranker: ranker_on("length", 5.0, 30),
            ..RetrievalConfig::default()
        };
        let terms = mnemos_text::Analyzer::shared().search_terms("cello tonight");
        let found = index.candidates(
            &config,
            RetrieverKind::Bm25,
            &terms,
            None,
            &SearchFilter::default(),
            None,
        );
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|c| c.ranker.is_none()), "{found:?}");
    }

    /// BM25 candidates for `query` under `config`, with `hop` if given.
    fn bm25_candidates(
        index: &ScopeIndex,
        config: &RetrievalConfig,
        query: &str,
        hop: Option<&SecondHop>,
    ) -> Vec<Candidate> {
        let terms = mnemos_text::Analyzer::shared().search_terms(query);
        let filter = SearchFilter::default();
        index.candidates(config, RetrieverKind::Bm25, &terms, None, &filter, hop)
    }

    /// Records (no exchange): two direct hits on "lisbon", one turn that only the first hit's
    /// event name reaches, and filler that makes the event name rare.
    fn lisbon_records() -> (ScopeIndex, [MemoryId; 3]) {
        let mut index = ScopeIndex::new(&RetrievalConfig::default(), 2);
        let mut add = |text: &str| {
            let m = memory(text);
            index.upsert(
                &m,
                &mnemos_text::Analyzer::shared().search_terms(text),
                None,
            );
            m.id
        };
        let event = add("The Harbour Jazz Night is an event in Lisbon.");
        let trams = add(
            "We talked for hours about trams, buses, bridges, ferries, old streets and Lisbon.",
        );
        let start = add("Harbour Jazz Night starts next Friday at seven.");
        for i in 0..30 {
            add(&format!(
                "Filler line {i} about gardening, tea and the weather."
            ));
        }
        (index, [event, trams, start])
    }

    #[test]
    fn the_second_hop_fills_the_list_behind_the_hits_it_keeps() {
        let (index, [_, _, start]) = lisbon_records();
        let search = |hop: Option<SecondHop>| {
            let config = RetrievalConfig::default();
            bm25_candidates(&index, &config, "the event in Lisbon, when?", hop.as_ref())
        };
        let ids = |c: &[Candidate]| c.iter().map(|c| c.id).collect::<Vec<_>>();
        let one = search(None);
        assert_eq!(one.len(), 2, "only the direct hits: {one:?}");
        for keep in [0, 1, 2, 5] {
            let two = search(Some(SecondHop {
                keep,
                ..SecondHop::default()
            }));
            let at = ids(&two).iter().position(|id| *id == start);
            let at = at.expect("the hop reaches the start time through the event's name");
            assert!(two[at].second_hop.is_some());
            let kept = keep.min(one.len());
            assert_eq!(ids(&two)[..kept], ids(&one)[..kept], "keep {keep}");
            assert!(at >= kept, "keep {keep}: {two:?}");
            assert!(two.windows(2).all(|w| w[0].fused >= w[1].fused), "{two:?}");
            if keep < 2 {
                assert_eq!(at, 1, "the bridged turn outranks the weaker direct hit");
            }
        }
    }

    #[test]
    fn a_memory_two_seeds_reach_gains_from_the_stronger_bridge_only() {
        let mut index = ScopeIndex::new(&RetrievalConfig::default(), 2);
        let mut add = |text: &str| {
            let m = memory(text);
            let terms = mnemos_text::Analyzer::shared().search_terms(text);
            index.upsert(&m, &terms, None);
            m.id
        };
        // Both direct hits bring the same new word; the third memory carries only that word.
        add("Marisol Lisbon.");
        add("Lisbon, Marisol!");
        let puppy = add("Marisol, puppy.");
        for i in 0..30 {
            add(&format!("Filler line {i} about gardening and tea."));
        }
        let config = RetrievalConfig::default();
        let search = |hop: Option<&SecondHop>| bm25_candidates(&index, &config, "Lisbon", hop);
        let one = search(None);
        assert_eq!(one.len(), 2, "{one:?}");
        let hop = SecondHop {
            keep: 0,
            ..SecondHop::default()
        };
        let two = search(Some(&hop));
        let reached = two
            .iter()
            .find(|c| c.id == puppy)
            .expect("bridged by the name");
        let added = reached.second_hop.as_ref().expect("a hop signal").added;
        assert!((reached.fused - added).abs() < 1e-6, "{reached:?}");
        let strongest_seed = one.iter().map(|c| c.fused).fold(0.0, f32::max);
        assert!(
            added <= hop.weight * strongest_seed + 1e-6,
            "two bridges must not add up: {added} from seeds {one:?}"
        );
    }

    #[test]
    fn the_second_hop_stands_aside_where_the_ranker_runs() {
        let mut index = ScopeIndex::new(&RetrievalConfig::default(), 2);
        said(
            &mut index,
            "Ann",
            1,
            "The Harbour Jazz Night takes place in Lisbon.",
        );
        said(
            &mut index,
            "Bob",
            2,
            "Harbour Jazz Night starts next Friday at seven.",
        );
        for i in 0..30 {
            let speaker = if i % 2 == 0 { "Ann" } else { "Bob" };
            said(
                &mut index,
                speaker,
                3 + i,
                &format!("Filler {i} about tea."),
            );
        }
        let hop = SecondHop::default();
        let search = |ranker: LearnedRanker| {
            let config = RetrievalConfig {
                ranker,
                context: 0.0,
                ..RetrievalConfig::default()
            };
            bm25_candidates(&index, &config, "the event in Lisbon, when?", Some(&hop))
        };
        let ranked = search(LearnedRanker::default());
        assert!(ranked.iter().all(|c| c.second_hop.is_none()), "{ranked:?}");
        assert!(ranked[0].ranker.is_some());
        let hopped = search(LearnedRanker::off());
        assert!(hopped.iter().any(|c| c.second_hop.is_some()), "{hopped:?}");
    }

    #[test]
    fn a_second_hop_read_without_keep_keeps_the_default() {
        let hop: SecondHop = serde_json::from_str(r#"{"seeds":3,"weight":0.9}"#).unwrap();
        assert_eq!(hop, SecondHop::default());
        assert!(SecondHop { keep: 101, ..hop }.validate().is_err());
    }

    #[test]
    fn ranker_settings_are_validated() {
        assert!(LearnedRanker::default().validate().is_ok());
        assert!(LearnedRanker::off().validate().is_ok());
        let short = LearnedRanker {
            weights: vec![1.0; 3],
            ..LearnedRanker::default()
        };
        assert!(short.validate().is_err());
        let mut nan = LearnedRanker::default();
        nan.weights[0] = f32::NAN;
        assert!(nan.validate().is_err());
        let deep = LearnedRanker {
            depth: 5000,
            ..LearnedRanker::default()
        };
        assert!(deep.validate().is_err());
        let config: RetrievalConfig = serde_json::from_str(r#"{"ranker":{"depth":0}}"#)
            .expect("a depth alone keeps the weights");
        assert_eq!(config.ranker.weights, LearnedRanker::default().weights);
        assert_eq!(config.ranker.depth, 0);
    }
}
