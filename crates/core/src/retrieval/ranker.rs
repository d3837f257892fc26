//! The learned second stage: a logistic model over features of the best fused candidates
//! (their scores and ranks on each side, what the read-time stages added, how much of the
//! query's weight and rare words they hold, and their neighbours') re-orders them by the
//! estimated chance that each is evidence for the query.
//!
//! It re-orders only queries whose best candidates are mostly turns of an exchange: it was
//! fitted on dialogue, and on records it was measured to lose recall.
//!
//! The weights are fitted by `mnemos train ranker` on the features `mnemos eval retrieval
//! --dump` writes, cross-validated by conversation; [`LearnedRanker::default`] ships the fit
//! on LoCoMo dev (docs/results/retrieval.md).

use serde::{Deserialize, Serialize};

use super::hit::RankerSignal;
use super::{keep_below, Ranked, ScopeIndex};
use crate::error::{Error, Result};

/// Number of features per candidate.
pub const RANK_FEATURES: usize = 19;

/// What each feature is, in order (also the keys of a breakdown's explanation).
pub const RANK_FEATURE_NAMES: [&str; RANK_FEATURES] = [
    "fused",              // score after the read-time stages / the best candidate's
    "fused_rank",         // 1 / (1 + position among the fused candidates)
    "lexical",            // BM25 / best BM25 of the query (0: not a lexical candidate)
    "lexical_rank",       // 1 / BM25 rank (0: not a lexical candidate)
    "dense",              // cosine to the query (0: not a dense candidate)
    "dense_gap",          // best cosine − this cosine (1: not a dense candidate)
    "dense_rank",         // 1 / dense rank (0: not a dense candidate)
    "context",            // what the neighbouring turn lent / the best candidate's score
    "speaker",            // 1 when the query names this turn's speaker
    "date",               // 1 when the query names this memory's period
    "second_hop",         // what the second hop added / the best candidate's score
    "coverage",           // IDF-weighted share of the query's terms the memory holds
    "terms",              // share of the query's distinct terms the memory holds
    "rare_terms",         // the query's rare terms (names, mostly) the memory holds
    "length",             // ln(1 + the memory's length in terms)
    "neighbour_coverage", // the better coverage of the turns just before and after
    "session_sum",        // the other re-ordered candidates' `fused` from the same session, summed
    "session_best",       // the best of them
    "session_rank",       // 1 / (1 + rank of the memory's session by its best candidate)
];

/// Default [`LearnedRanker::depth`].
pub const DEFAULT_RANKER_DEPTH: usize = 30;

/// Weights fitted on LoCoMo dev (all five conversations), features unscaled, by `mnemos train
/// ranker` on an `eval retrieval --dump` of the default configuration. The second hop was off
/// there, so its weight is 0: what a hop adds counts only through `fused`.
///
/// Kept because their settings (L2 0.001 on standardized features, all 19 features) have the
/// best out-of-fold figure found: held out by conversation R@1 / R@5 / R@10 0.429 / 0.720 /
/// 0.785 against 0.427 / 0.723 / 0.787 in sample. Features and L2 chosen by nested
/// leave-one-conversation-out selection (`mnemos train ranker --select`), on MiniLM's dump, on
/// e5's, or on both, tied on R@10 and lost R@1 (docs/results/retrieval.md).
const SHIPPED_WEIGHTS: [f32; RANK_FEATURES] = [
    2.5812, -0.0852, -0.8265, 0.8612, -0.8403, -0.5885, 0.5833, 7.3873, 1.5694, 0.7967, 0.0000,
    0.7447, 0.8659, 0.1857, 1.0159, -0.5113, -0.0393, -0.1744, 1.9439,
];
const SHIPPED_BIAS: f32 = -10.3906;

/// A logistic model that re-orders the best `depth` fused candidates (`[retrieval.ranker]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearnedRanker {
    /// How many of the best fused candidates it re-orders (0 turns it off).
    pub depth: usize,
    /// One weight per feature of [`RANK_FEATURE_NAMES`], applied to unscaled values.
    pub weights: Vec<f32>,
    pub bias: f32,
}

impl Default for LearnedRanker {
    fn default() -> Self {
        Self {
            depth: DEFAULT_RANKER_DEPTH,
            weights: SHIPPED_WEIGHTS.to_vec(),
            bias: SHIPPED_BIAS,
        }
    }
}

impl LearnedRanker {
    /// The ranker that changes nothing (depth 0).
    pub fn off() -> Self {
        Self {
            depth: 0,
            ..Self::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.depth > 1000 {
            return Err(Error::invalid(
                "retrieval.ranker.depth must be at most 1000 (0 = off)",
            ));
        }
        if self.weights.len() != RANK_FEATURES {
            return Err(Error::invalid(format!(
                "retrieval.ranker.weights needs {RANK_FEATURES} values ({}), got {}",
                RANK_FEATURE_NAMES.join(", "),
                self.weights.len()
            )));
        }
        if !self.bias.is_finite() || self.weights.iter().any(|w| !w.is_finite()) {
            return Err(Error::invalid(
                "retrieval.ranker weights and bias must be finite",
            ));
        }
        Ok(())
    }

    /// The estimated chance that a candidate with these features is evidence.
    pub fn probability(&self, features: &[f32; RANK_FEATURES]) -> f32 {
        let z: f32 = self.bias
            + self
                .weights
                .iter()
                .zip(features)
                .map(|(w, x)| w * x)
                .sum::<f32>();
        1.0 / (1.0 + (-z).exp())
    }

    /// The [`EXPLAINED_FEATURES`] largest contributions (weight × value) by magnitude.
    fn strongest(&self, features: &[f32; RANK_FEATURES]) -> Vec<(String, f32)> {
        let mut parts: Vec<(&str, f32)> = RANK_FEATURE_NAMES
            .iter()
            .zip(self.weights.iter().zip(features))
            .map(|(name, (w, x))| (*name, w * x))
            .filter(|(_, c)| *c != 0.0)
            .collect();
        parts.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        parts
            .into_iter()
            .take(EXPLAINED_FEATURES)
            .map(|(name, c)| (name.to_string(), c))
            .collect()
    }
}

/// How many features a [`RankerSignal`] names as the strongest.
pub const EXPLAINED_FEATURES: usize = 3;

/// What one query contributes to every candidate's features.
struct QueryView {
    /// (term id, IDF, rare) of the query's indexed terms.
    terms: Vec<(u32, f32, bool)>,
    idf_total: f32,
    best_score: f32,
    best_lexical: f32,
    best_dense: f32,
}

/// `x` as a share of `best` (0 when there is no best).
fn ratio(x: f32, best: f32) -> f32 {
    if best > 0.0 {
        x / best
    } else {
        0.0
    }
}

/// How much of the query one memory holds.
struct Held {
    /// IDF-weighted share of the query's terms.
    coverage: f32,
    /// Share of the query's distinct terms.
    terms: f32,
    /// The query's rare terms it holds.
    rare: f32,
}

impl ScopeIndex {
    /// Does the ranker run on `fused` (sorted, best first)? Only when it is on and most of
    /// its head is dialogue.
    pub(super) fn ranker_applies(&self, ranker: &LearnedRanker, fused: &[Ranked]) -> bool {
        let depth = ranker.depth.min(fused.len());
        depth > 0 && self.mostly_dialogue(&fused[..depth])
    }

    /// Re-order the best `ranker.depth` of `fused` (sorted, best first; see
    /// [`Self::ranker_applies`]) by the ranker's probability, which becomes their score; the
    /// rest keep their order, scaled to stay below.
    pub(super) fn apply_ranker(
        &self,
        ranker: &LearnedRanker,
        query_terms: &[String],
        fused: &mut [Ranked],
    ) {
        let depth = ranker.depth.min(fused.len());
        if depth == 0 {
            return;
        }
        let view = self.query_view(query_terms, fused);
        let sessions = self.session_features(&view, &fused[..depth]);
        for (position, (r, session)) in fused.iter_mut().zip(sessions).enumerate() {
            let features = self.features(&view, position, r, session);
            let probability = ranker.probability(&features);
            r.ranker = Some(RankerSignal {
                probability,
                features: features.to_vec(),
                strongest: ranker.strongest(&features),
            });
        }
        let (head, tail) = fused.split_at_mut(depth);
        for r in head.iter_mut() {
            if let Some(signal) = &r.ranker {
                r.score = signal.probability;
            }
        }
        self.sort_ranked(head);
        keep_below(head.last().map(|r| r.score), tail);
    }

    /// Are at least half of `head` turns of an exchange (next to another speaker's turn)?
    /// The ranker was fitted on dialogue; on records (profiles, events, notes) it was measured
    /// to lose recall, so there the fused order stands.
    fn mostly_dialogue(&self, head: &[Ranked]) -> bool {
        let in_exchange = head
            .iter()
            .filter(|r| self.dialogue.neighbours(r.slot).iter().any(Option::is_some))
            .count();
        2 * in_exchange >= head.len()
    }

    fn query_view(&self, query_terms: &[String], fused: &[Ranked]) -> QueryView {
        let rare_df = (self.bm25.live_docs() as f64).sqrt().ceil().max(2.0) as u32;
        let terms = self.bm25.query_terms(query_terms, rare_df);
        let idf_total = terms.iter().map(|t| t.1).sum();
        let best = |pick: &dyn Fn(&Ranked) -> Option<f32>| {
            fused.iter().filter_map(pick).fold(0.0f32, f32::max)
        };
        QueryView {
            terms,
            idf_total,
            best_score: fused.first().map_or(0.0, |r| r.score),
            best_lexical: best(&|r| r.lexical.map(|s| s.score)),
            best_dense: best(&|r| r.dense.map(|s| s.score)),
        }
    }

    /// How much of the query the memory in `slot` holds.
    fn held(&self, view: &QueryView, slot: u32) -> Held {
        let (mut idf, mut terms, mut rare) = (0.0f32, 0usize, 0usize);
        for &(id, term_idf, is_rare) in &view.terms {
            if self.bm25.holds(slot, id) {
                idf += term_idf;
                terms += 1;
                rare += usize::from(is_rare);
            }
        }
        Held {
            coverage: ratio(idf, view.idf_total),
            terms: terms as f32 / view.terms.len().max(1) as f32,
            rare: rare as f32,
        }
    }

    /// Per candidate of `head`: how strongly the rest of the head points at its session
    /// ([sum, best] of the others' relative scores there, and 1 / (1 + the session's rank)).
    /// A question's evidence usually sits in the session most of its candidates come from.
    fn session_features(&self, view: &QueryView, head: &[Ranked]) -> Vec<[f32; 3]> {
        let session_of = |r: &Ranked| {
            self.slots
                .get(r.slot as usize)
                .map(|s| (s.agent.as_str(), s.session.as_str()))
        };
        let keys: Vec<_> = head.iter().map(session_of).collect();
        // Sessions in order of their best candidate (head is sorted best first).
        let mut order: Vec<_> = Vec::new();
        for key in &keys {
            if !order.contains(key) {
                order.push(*key);
            }
        }
        keys.iter()
            .enumerate()
            .map(|(i, key)| {
                let others = head
                    .iter()
                    .zip(&keys)
                    .enumerate()
                    .filter(|(j, (_, k))| *j != i && *k == key)
                    .map(|(_, (r, _))| ratio(r.score, view.best_score));
                let (sum, best) = others.fold((0.0f32, 0.0f32), |(s, b), x| (s + x, b.max(x)));
                let rank = order.iter().position(|k| k == key).unwrap_or(0);
                [sum, best, 1.0 / (1.0 + rank as f32)]
            })
            .collect()
    }

    fn features(
        &self,
        view: &QueryView,
        position: usize,
        r: &Ranked,
        session: [f32; 3],
    ) -> [f32; RANK_FEATURES] {
        let share = |x: f32| ratio(x, view.best_score);
        let held = self.held(view, r.slot);
        let neighbour_coverage = self
            .dialogue
            .neighbours(r.slot)
            .into_iter()
            .flatten()
            .map(|n| self.held(view, n).coverage)
            .fold(0.0f32, f32::max);
        [
            share(r.score),
            1.0 / (1.0 + position as f32),
            r.lexical.map_or(0.0, |s| ratio(s.score, view.best_lexical)),
            r.lexical.map_or(0.0, |s| 1.0 / s.rank.max(1) as f32),
            r.dense.map_or(0.0, |s| s.score),
            r.dense.map_or(1.0, |s| view.best_dense - s.score),
            r.dense.map_or(0.0, |s| 1.0 / s.rank.max(1) as f32),
            share(r.context.map_or(0.0, |c| c.1)),
            f32::from(u8::from(r.speaker.is_some())),
            f32::from(u8::from(r.date.is_some())),
            share(r.hop.map_or(0.0, |h| h.1)),
            held.coverage,
            held.terms,
            held.rare,
            (1.0 + self.bm25.doc_len(r.slot) as f32).ln(),
            neighbour_coverage,
            session[0],
            session[1],
            session[2],
        ]
    }
}
