//! Relevance: a calibrated estimate, in [0, 1], that a hit is evidence for its query, which
//! means the same for every query.
//!
//! A hit's `score` is relative to the other candidates of its query (BM25 over the best BM25,
//! cosine min-max over the dense candidates, the ranker's features against the best
//! candidate), so a lone unrelated memory scores as if it were the answer. Relevance is a
//! logistic model over features that depend on the query and the memory alone: the raw cosine
//! of the memory's best window, the IDF-weighted share of the query's terms it holds (terms no
//! memory of the user holds count at the highest IDF), how much of the query the user's
//! memories know at all, the query's rare terms it holds, BM25 against what the query's terms
//! could score, and what the read-time stages found (a neighbouring turn that matches, the
//! speaker or the period the query names). The learned ranker's probability is not among
//! them: its features are shares of the best candidate's, so it rates the best hit of a query
//! about nothing the user said 0.4–0.6, and with it fewer such queries came back empty at
//! equal recall (docs/results/relevance.md).
//!
//! The weights are fitted offline (`mnemos train relevance` on `mnemos eval relevance
//! --dump`) on LoCoMo and PerLTQA questions, each asked against its own conversation and
//! against another one, where no memory is evidence; they depend on the embedder's cosine
//! scale, so they ship per embedder ([`RelevanceModel::shipped`]).

use serde::{Deserialize, Serialize};

use super::hit::RelevanceSignal;
use super::{Candidate, ScopeIndex};
use crate::error::{Error, Result};

/// Number of relevance features per hit.
pub const RELEVANCE_FEATURES: usize = 11;

/// What each feature is, in order (also the keys of a breakdown's explanation).
pub const RELEVANCE_FEATURE_NAMES: [&str; RELEVANCE_FEATURES] = [
    "cosine",             // cosine of the memory's best window to the query
    "coverage",           // IDF-weighted share of the query's terms the memory holds
    "known",              // IDF-weighted share of the query's terms any memory of the user holds
    "rare_terms",         // the query's rare terms (names, mostly) the memory holds, at most 3
    "query_terms",        // ln(1 + the query's distinct terms)
    "bm25",               // BM25 / the sum of the query's IDFs (0: not a lexical candidate)
    "neighbour_coverage", // the better coverage of the turns just before and after
    "speaker",            // 1 when the query names this turn's speaker
    "date",               // 1 when the query names this memory's period
    "second_hop",         // 1 when the second hop reached this memory
    "length",             // ln(1 + the memory's length in terms)
];

/// How many features a [`RelevanceSignal`] names as the strongest.
pub const EXPLAINED_RELEVANCE: usize = 3;

/// The default floor ([`super::RetrievalConfig::min_relevance`]), chosen by `mnemos eval
/// relevance` as the lowest floor at which every English query about something no memory
/// mentions returns nothing, on every LoCoMo dev conversation and every tiny store, with the
/// default embedder. Relevance is the chance of being evidence, and much evidence beyond a
/// question's first hit has a low one, so the floor is low and kept as low as that allows:
/// LoCoMo dev hybrid recall@10 falls by 0.003 (docs/results/relevance.md).
pub const DEFAULT_MIN_RELEVANCE: f32 = 0.003;

/// A logistic model from [`RELEVANCE_FEATURE_NAMES`] to the probability that a memory is
/// evidence for the query (`[retrieval.relevance]`; the shipped fit for the embedder when
/// absent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelevanceModel {
    /// One weight per feature of [`RELEVANCE_FEATURE_NAMES`], applied to unscaled values.
    pub weights: Vec<f32>,
    pub bias: f32,
}

/// Weights fitted by `mnemos train relevance` for one embedder.
struct Shipped {
    /// The embedder id they were fitted with.
    embedder: &'static str,
    weights: [f32; RELEVANCE_FEATURES],
    bias: f32,
}

/// all-MiniLM-L6-v2, the default embedder: `mnemos train relevance` (l2 0.001) on the `mnemos
/// eval relevance --dump` of LoCoMo dev and PerLTQA dev, each question asked against its own
/// conversation and one other.
const MINILM: Shipped = Shipped {
    embedder: "minilm-l6-v2",
    weights: [
        6.06118, 1.772, -0.547576, 0.795523, -0.549749, 1.01355, 1.08229, 1.4611, 1.91425,
        -0.501106, 0.369827,
    ],
    bias: -8.97252,
};

/// The weights-free hash embedder (tests, tiny devices), fitted on the same searches.
// The speaker weight, 1.57075, is a fitted value that happens to be close to π/2.
#[allow(clippy::approx_constant)]
const HASH: Shipped = Shipped {
    embedder: "hash-v1-384",
    weights: [
        4.51051, 1.43849, -0.427897, 0.841934, -0.206746, 1.46473, 1.11729, 1.57075, 1.94301,
        -0.3058, 0.398457,
    ],
    bias: -8.36478,
};

/// MiniLM for English text beside m3e-small for Chinese text. Its fit on the same searches
/// is MiniLM's to the last digit (they are English, which it embeds with MiniLM alone); no
/// Chinese question set with honest negatives has been fitted on, so on Chinese text its
/// relevance is not calibrated (docs/results/relevance.md).
const BILINGUAL: Shipped = Shipped {
    embedder: "bilingual:minilm-l6-v2+m3e-small",
    weights: MINILM.weights,
    bias: MINILM.bias,
};

/// multilingual-e5-small (4-bit), fitted as MiniLM was: `mnemos train relevance` (l2 0.001) on
/// `mnemos eval relevance --dump` of LoCoMo dev and PerLTQA dev with `--embedder e5`. Its
/// cosines crowd into a narrow band (unrelated texts still score about 0.7), hence the steep
/// cosine weight. Held out, ECE 0.0023 on LoCoMo and 0.0024 on PerLTQA
/// (docs/results/retrieval.md).
const E5: Shipped = Shipped {
    embedder: "e5-small-q4",
    weights: [
        28.7322, 1.78604, -0.669065, 0.769083, -0.611493, 0.756117, 0.832473, 1.27697, 2.08,
        -0.504065, 0.282021,
    ],
    bias: -29.2226,
};

/// MiniLM for English text beside multilingual-e5-small for Chinese text: on the English
/// searches it was fitted on, the pair is MiniLM alone, so MiniLM's fit is its own; Chinese
/// queries use the lexical fit, as for every neural embedder.
const BILINGUAL_E5: Shipped = Shipped {
    embedder: "bilingual:minilm-l6-v2+e5-small-q4",
    weights: MINILM.weights,
    bias: MINILM.bias,
};

impl Shipped {
    fn model(&self) -> RelevanceModel {
        RelevanceModel {
            weights: self.weights.to_vec(),
            bias: self.bias,
        }
    }
}

/// The embedders with a fit of their own.
const FITTED: [&Shipped; 5] = [&MINILM, &HASH, &BILINGUAL, &E5, &BILINGUAL_E5];

/// The lexical fit: MiniLM's searches fitted without the cosine (`mnemos train relevance
/// --without cosine`, l2 0.001), for queries written in Chinese or Japanese when the embedder's
/// cosine was fitted on English alone. MiniLM cannot read Chinese (the best hits of unrelated
/// Chinese queries have cosines of 0.57–0.70), so with its English fit nearly every Chinese
/// query looked relevant; the bilingual pair's m3e-small reads Chinese, but its cosine scale was
/// never fitted. Held out, this fit's ECE is 0.0025 on LoCoMo and 0.0035 on PerLTQA (MiniLM's
/// own: 0.0014 and 0.0022); docs/results/relevance.md.
const LEXICAL: Shipped = Shipped {
    embedder: "lexical (no cosine)",
    weights: [
        0.0, 1.13254, -0.0178505, 0.810813, 0.108061, 2.69181, 0.881383, 1.52245, 1.86227,
        -0.511444, 0.31172,
    ],
    bias: -7.84083,
};

/// Whether a query's terms are mostly CJK (more than half hold a CJK character): such a query
/// is judged by the fit for CJK queries ([`ShippedRelevance::cjk`]) when there is one.
pub fn is_cjk_query(terms: &[String]) -> bool {
    let cjk = terms.iter().filter(|t| mnemos_text::has_cjk(t)).count();
    cjk * 2 > terms.len()
}

/// The relevance model an engine uses, and whether its weights were fitted for the engine's
/// embedder.
#[derive(Clone, Debug, PartialEq)]
pub struct ShippedRelevance {
    pub model: RelevanceModel,
    /// The model for queries written mostly in CJK, when the embedder's cosine on such text
    /// was never fitted (every neural embedder shipped today; the hash embedder's cosine is
    /// lexical and its fit holds for Chinese): [`LEXICAL`].
    pub cjk: Option<RelevanceModel>,
    /// The embedder the weights were fitted with.
    pub fitted_for: &'static str,
    /// Fitted for exactly this embedder (else the closest fit stands in).
    pub exact: bool,
}

impl RelevanceModel {
    /// The shipped weights for the embedder `embedder_id`, or, for an embedder without a fit
    /// of its own, the closest one: the hash fit for hash embedders of other sizes, the
    /// MiniLM fit for anything else.
    pub fn shipped(embedder_id: &str) -> ShippedRelevance {
        let exact = FITTED.into_iter().find(|s| s.embedder == embedder_id);
        // Hash embedders of other sizes share the hash fit's lexical cosine scale; every
        // neural embedder gets the MiniLM fit (bilingual pairs use MiniLM for English).
        let closest = if embedder_id.starts_with("hash-") {
            &HASH
        } else {
            &MINILM
        };
        let chosen = exact.unwrap_or(closest);
        let lexical_cosine = chosen.embedder == HASH.embedder;
        ShippedRelevance {
            model: chosen.model(),
            cjk: (!lexical_cosine).then(|| LEXICAL.model()),
            fitted_for: chosen.embedder,
            exact: exact.is_some(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        self.validate_as("retrieval.relevance")
    }

    /// [`validate`](Self::validate), naming the config table `what` in the error.
    pub fn validate_as(&self, what: &str) -> Result<()> {
        if self.weights.len() != RELEVANCE_FEATURES {
            return Err(Error::invalid(format!(
                "{what}.weights needs {RELEVANCE_FEATURES} values ({}), got {}",
                RELEVANCE_FEATURE_NAMES.join(", "),
                self.weights.len()
            )));
        }
        if !self.bias.is_finite() || self.weights.iter().any(|w| !w.is_finite()) {
            return Err(Error::invalid(format!(
                "{what} weights and bias must be finite"
            )));
        }
        Ok(())
    }

    /// The estimated probability that a memory with these features is evidence.
    pub fn probability(&self, features: &[f32; RELEVANCE_FEATURES]) -> f32 {
        let z: f32 = self.bias
            + self
                .weights
                .iter()
                .zip(features)
                .map(|(w, x)| w * x)
                .sum::<f32>();
        if z.is_nan() {
            // Only weights far beyond any fit (inf − inf) get here: no evidence either way.
            return 0.5;
        }
        // exp of a large |z| saturates to 0 or inf, both of which give a probability in [0, 1].
        (1.0 / (1.0 + (-z).exp())).clamp(0.0, 1.0)
    }

    /// The relevance of a memory with these features, explained.
    pub fn explain(&self, features: &[f32; RELEVANCE_FEATURES]) -> RelevanceSignal {
        RelevanceSignal {
            probability: self.probability(features),
            features: features.to_vec(),
            strongest: self.strongest(features),
        }
    }

    /// The [`EXPLAINED_RELEVANCE`] largest contributions (weight × value) by magnitude.
    fn strongest(&self, features: &[f32; RELEVANCE_FEATURES]) -> Vec<(String, f32)> {
        let mut parts: Vec<(&str, f32)> = RELEVANCE_FEATURE_NAMES
            .iter()
            .zip(self.weights.iter().zip(features))
            .map(|(name, (w, x))| (*name, w * x))
            .filter(|(_, c)| *c != 0.0)
            .collect();
        parts.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        parts
            .into_iter()
            .take(EXPLAINED_RELEVANCE)
            .map(|(name, c)| (name.to_string(), c))
            .collect()
    }
}

/// Check a relevance floor: a number in [0, 1] (`what` names it in the error).
pub fn validate_min_relevance(what: &str, floor: f32) -> Result<()> {
    if floor.is_nan() || !(0.0..=1.0).contains(&floor) {
        return Err(Error::invalid(format!(
            "{what} must be between 0 and 1, got {floor}"
        )));
    }
    Ok(())
}

/// What one query contributes to every hit's relevance features; built once per query (or
/// query part) by [`ScopeIndex::relevance_query`].
#[derive(Clone, Debug)]
pub struct RelevanceQuery {
    /// (term id, IDF, rare) of the query's indexed terms.
    terms: Vec<(u32, f32, bool)>,
    /// IDF of every distinct query term, the ones no memory holds at the highest IDF.
    idf_total: f32,
    known: f32,
    query_terms: f32,
    /// The lowest cosine among the dense candidates: at most what a memory that was not a
    /// dense candidate scores (None: dense search did not run).
    dense_floor: Option<f32>,
}

impl ScopeIndex {
    /// What the query contributes to relevance: its terms against this user's memories, and
    /// the lowest cosine among `candidates` (its fused candidates) that came from dense search.
    pub fn relevance_query(
        &self,
        query_terms: &[String],
        candidates: &[Candidate],
    ) -> RelevanceQuery {
        let rare_df = (self.bm25.live_docs() as f64).sqrt().ceil().max(2.0) as u32;
        let terms = self.bm25.query_terms(query_terms, rare_df);
        let known_idf: f32 = terms.iter().map(|t| t.1).sum();
        let mut distinct: Vec<&str> = query_terms.iter().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let unknown = distinct.len().saturating_sub(terms.len());
        let idf_total = known_idf + unknown as f32 * self.bm25.unseen_idf();
        let dense_floor = candidates
            .iter()
            .filter_map(|c| c.dense.map(|s| s.score))
            .reduce(f32::min);
        RelevanceQuery {
            terms,
            idf_total,
            known: share(known_idf, idf_total),
            query_terms: (1.0 + distinct.len() as f32).ln(),
            dense_floor,
        }
    }

    /// The relevance features of one candidate of the query (see [`RELEVANCE_FEATURE_NAMES`]).
    pub fn relevance_features(
        &self,
        query: &RelevanceQuery,
        candidate: &Candidate,
    ) -> [f32; RELEVANCE_FEATURES] {
        let slot = self.by_id.get(&candidate.id).copied();
        let held = |slot: u32| {
            let (mut idf, mut rare) = (0.0f32, 0usize);
            for &(id, term_idf, is_rare) in &query.terms {
                if self.bm25.holds(slot, id) {
                    idf += term_idf;
                    rare += usize::from(is_rare);
                }
            }
            (share(idf, query.idf_total), rare.min(3) as f32)
        };
        let (coverage, rare) = slot.map_or((0.0, 0.0), held);
        let neighbour_coverage = slot.map_or(0.0, |s| {
            self.dialogue
                .neighbours(s)
                .into_iter()
                .flatten()
                .map(|n| held(n).0)
                .fold(0.0f32, f32::max)
        });
        let cosine = candidate
            .dense
            .map(|s| s.score)
            .or(query.dense_floor)
            .unwrap_or(0.0);
        let flag = |on: bool| f32::from(u8::from(on));
        [
            cosine,
            coverage,
            query.known,
            rare,
            query.query_terms,
            candidate
                .lexical
                .map_or(0.0, |s| share(s.score, query.idf_total)),
            neighbour_coverage,
            flag(candidate.speaker.is_some()),
            flag(candidate.date.is_some()),
            flag(candidate.second_hop.is_some()),
            slot.map_or(0.0, |s| (1.0 + self.bm25.doc_len(s) as f32).ln()),
        ]
    }

    /// The candidate's relevance under `model`, explained.
    pub fn relevance(
        &self,
        model: &RelevanceModel,
        query: &RelevanceQuery,
        candidate: &Candidate,
    ) -> RelevanceSignal {
        model.explain(&self.relevance_features(query, candidate))
    }
}

/// `x` as a share of `total` (0 when there is no total).
fn share(x: f32, total: f32) -> f32 {
    if total > 0.0 {
        x / total
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::{RetrievalConfig, RetrieverKind, SearchFilter};

    /// A store of one memory, "User prefers dark mode.", whose vector is (1, 0).
    fn lone_memory() -> ScopeIndex {
        let config = RetrievalConfig::default();
        let mut index = ScopeIndex::new(&config, 2);
        let scope = crate::model::Scope::new("t", "u", "a", "s").unwrap();
        let memory = crate::model::Memory::from_turn(&crate::model::Turn {
            id: crate::model::TurnId::new(),
            scope,
            role: crate::model::Role::User,
            speaker: None,
            text: "User prefers dark mode.".into(),
            at: crate::model::Moment::default(),
            metadata: crate::model::Metadata::new(),
            key: None,
        });
        let terms = mnemos_text::Analyzer::shared().search_terms(&memory.text);
        index.upsert(&memory, &terms, Some(&[1.0, 0.0]));
        index
    }

    /// The relevance of the store's best hit for `query` whose vector has cosine `cosine`
    /// with the memory's, under the shipped MiniLM weights.
    fn relevance_of(index: &ScopeIndex, query: &str, cosine: f32) -> RelevanceSignal {
        let terms = mnemos_text::Analyzer::shared().terms(query);
        let vector = [cosine, (1.0 - cosine * cosine).sqrt()];
        let config = RetrievalConfig::default();
        let found = index.candidates(
            &config,
            RetrieverKind::Hybrid,
            &terms,
            Some(&vector),
            &SearchFilter::default(),
            None,
        );
        assert_eq!(found.len(), 1);
        let query = index.relevance_query(&terms, &found);
        let model = RelevanceModel::shipped("minilm-l6-v2").model;
        index.relevance(&model, &query, &found[0])
    }

    #[test]
    fn a_lone_unrelated_memory_is_not_relevant_and_a_matching_one_is() {
        let index = lone_memory();
        // MiniLM's cosine for this pair is about 0.075; the fused score is the dense weight.
        let unrelated = relevance_of(&index, "quantum chromodynamics research papers", 0.075);
        assert!(
            unrelated.probability < DEFAULT_MIN_RELEVANCE,
            "{unrelated:?}"
        );
        let coverage = RELEVANCE_FEATURE_NAMES
            .iter()
            .position(|n| *n == "coverage");
        assert_eq!(coverage.map(|i| unrelated.features[i]), Some(0.0));
        let known = RELEVANCE_FEATURE_NAMES.iter().position(|n| *n == "known");
        assert_eq!(known.map(|i| unrelated.features[i]), Some(0.0));

        let matching = relevance_of(&index, "Does the user prefer dark mode?", 0.75);
        assert!(matching.probability > 0.3, "{matching:?}");
        assert_eq!(coverage.map(|i| matching.features[i]), Some(1.0));
        assert!(matching.probability > 100.0 * unrelated.probability);
        assert_eq!(matching.features.len(), RELEVANCE_FEATURES);
        assert_eq!(matching.strongest[0].0, "cosine");
    }

    #[test]
    fn relevance_stays_a_probability_whatever_the_weights() {
        let features = [
            [0.0; RELEVANCE_FEATURES],
            [1e30; RELEVANCE_FEATURES],
            [-5.0; RELEVANCE_FEATURES],
        ];
        for weights in [
            vec![f32::MAX; RELEVANCE_FEATURES],
            vec![-1e30; RELEVANCE_FEATURES],
        ] {
            let mut mixed = weights.clone();
            mixed[0] = -mixed[0];
            for weights in [weights, mixed] {
                let model = RelevanceModel { weights, bias: 0.0 };
                for f in &features {
                    let p = model.probability(f);
                    assert!((0.0..=1.0).contains(&p), "{p}");
                }
            }
        }
    }

    #[test]
    fn floors_and_models_are_validated() {
        for bad in [-0.1, f32::NAN, 1.5, f32::INFINITY] {
            let error = validate_min_relevance("min_relevance", bad).unwrap_err();
            assert!(error.to_string().contains("min_relevance"), "{error}");
            let config = RetrievalConfig {
                min_relevance: bad,
                ..RetrievalConfig::default()
            };
            let error = config.validate().unwrap_err().to_string();
            assert!(error.contains("retrieval.min_relevance"), "{error}");
        }
        for good in [0.0, DEFAULT_MIN_RELEVANCE, 1.0] {
            assert!(validate_min_relevance("min_relevance", good).is_ok());
        }
        let short = RetrievalConfig {
            relevance: Some(RelevanceModel {
                weights: vec![1.0; 3],
                bias: 0.0,
            }),
            ..RetrievalConfig::default()
        };
        assert!(short.validate().is_err());
    }

    #[test]
    fn an_embedder_without_a_fit_gets_the_closest_one_and_is_told_so() {
        assert!(RelevanceModel::shipped("minilm-l6-v2").exact);
        assert!(RelevanceModel::shipped("hash-v1-384").exact);
        let small_hash = RelevanceModel::shipped("hash-v1-64");
        assert!(!small_hash.exact);
        assert_eq!(small_hash.fitted_for, "hash-v1-384");
        assert!(RelevanceModel::shipped("bilingual:minilm-l6-v2+m3e-small").exact);
        assert!(RelevanceModel::shipped("bilingual:minilm-l6-v2+e5-small-q4").exact);
        assert!(RelevanceModel::shipped("e5-small-q4").exact);
        let remote = RelevanceModel::shipped("text-embedding-3-small");
        assert!(!remote.exact);
        assert_eq!(remote.fitted_for, "minilm-l6-v2");
        for shipped in [small_hash, remote] {
            assert!(shipped.model.validate().is_ok());
        }
    }

    #[test]
    fn chinese_queries_get_the_lexical_fit_unless_the_cosine_is_lexical() {
        let terms = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(is_cjk_query(&terms(&["妹妹", "住"])));
        assert!(is_cjk_query(&terms(&["linux", "内核", "编译"])));
        assert!(!is_cjk_query(&terms(&["sister", "live"])));
        assert!(!is_cjk_query(&terms(&["sql", "python", "函数"])));
        assert!(!is_cjk_query(&[]));
        for neural in [
            "minilm-l6-v2",
            "bilingual:minilm-l6-v2+m3e-small",
            "remote-x",
        ] {
            let cjk = RelevanceModel::shipped(neural)
                .cjk
                .expect("a fit for CJK queries");
            assert_eq!(cjk.weights[0], 0.0, "the lexical fit has no cosine");
            assert!(cjk.validate().is_ok());
        }
        assert_eq!(RelevanceModel::shipped("hash-v1-384").cjk, None);
        assert_eq!(RelevanceModel::shipped("hash-v1-64").cjk, None);
    }
}
