//! Re-ranking by memory type (PerLTQA, eq. 3): the query's class π (semantic or episodic) comes
//! from a query classifier; the best `per_type` candidates of each memory type are kept (2k
//! candidates, so a wrong classification cannot empty the list of the other type), and each is
//! rescored
//!
//! s′ = α·P(π | m) + β·sigmoid(s)
//!
//! where P(π | m) is the probability that memory m is of type π (1 or 0 when its source stated
//! the type, a memory classifier's estimate otherwise) and s the retrieval score.
//!
//! Fused retrieval scores (RRF ≈ 0.01–0.03) put every sigmoid(s) near 0.5, which would make the
//! type term decide alone; [`ScoreInput::Standardized`] (the default) feeds the sigmoid the
//! score's z-score among the candidates instead, so a far better match of the other type can
//! still win, as the paper's re-ranking intends. [`ScoreInput::Raw`] is the paper's literal form.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::memory_model::{MemoryModel, MemoryModelExt, QueryClass};
use crate::model::{Memory, MemoryType};

use super::hit::{Adjustment, Hit, Reranker};

/// The metadata key under which a memory classifier's P(semantic | m) is kept (a decimal in
/// [0, 1]) for memories whose source stated no type.
pub const ESTIMATE_KEY: &str = "memory_type_p_semantic";

/// What the sigmoid of eq. 3 is applied to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreInput {
    /// The hit's score as retrieval produced it.
    Raw,
    /// The score's z-score among the candidates being re-ranked.
    #[default]
    Standardized,
}

/// How sure of the query's class P(π | m) is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryCertainty {
    /// π is the more probable class and taken as certain: P(π | m) is the memory's
    /// probability of that type (the paper's literal reading; a misclassified query puts
    /// every memory of the other type below every memory of its own).
    Hard,
    /// The classifier's confidence carries over: P(π | m) = Σₜ P(t | q)·P(t | m), the probability
    /// that the memory is of the query's type with the query's class as uncertain as the
    /// classifier says. A confident classification acts as `hard`; an unsure one lets
    /// retrieval decide, which limits what a misclassification costs.
    #[default]
    Soft,
}

/// The parameters of eq. 3 and the candidate draw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TypeRerank {
    /// Weight of P(π | m) (default [`DEFAULT_TYPE_ALPHA`]; the paper's 0.5 is a setting).
    pub alpha: f32,
    /// Weight of sigmoid(s).
    pub beta: f32,
    /// Candidates kept per memory type before rescoring (the paper's k).
    pub per_type: usize,
    pub score: ScoreInput,
    pub query: QueryCertainty,
    /// How far a classifier's estimate of a memory's type is trusted (0..=1): the estimate's
    /// distance from even odds is scaled by it. A type the source stated is always exact.
    pub estimate_weight: f32,
}

impl Default for TypeRerank {
    fn default() -> Self {
        Self {
            alpha: DEFAULT_TYPE_ALPHA,
            beta: 0.5,
            per_type: 10,
            score: ScoreInput::Standardized,
            query: QueryCertainty::Soft,
            estimate_weight: DEFAULT_ESTIMATE_WEIGHT,
        }
    }
}

/// Default [`TypeRerank::alpha`]. PerLTQA's α = β = 0.5 lets a confidently misclassified
/// query put its type's candidates ahead of a much better match (event questions lost R@1
/// 0.780 → 0.716); with α = 0.2 the type still lifts relationship and profile records and costs
/// events little. Chosen by leave-one-character-out cross-validation on PerLTQA dev over
/// α ∈ {0.1 … 0.5} (held-out R@1 0.532, R@5 0.906 against 0.524 / 0.867 at 0.5;
/// docs/results/perltqa.md).
pub const DEFAULT_TYPE_ALPHA: f32 = 0.2;

/// Default [`TypeRerank::estimate_weight`]: estimates are not trusted by the re-rank unless asked.
/// On LoCoMo dev, whose turns state no type, trusting them cost recall@10 at every weight
/// measured (1.0: 0.660, 0.5: 0.672, 0.25: 0.675, against 0.685 without the re-rank;
/// docs/results/perltqa.md); they still decide the one-type searches.
pub const DEFAULT_ESTIMATE_WEIGHT: f32 = 0.0;

impl TypeRerank {
    /// The paper's weights, α = β = 0.5, with the other defaults.
    pub fn paper() -> Self {
        Self {
            alpha: 0.5,
            beta: 0.5,
            ..Self::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        let weight_ok = |w: f32| w.is_finite() && (0.0..=10.0).contains(&w);
        if !weight_ok(self.alpha) || !weight_ok(self.beta) || self.alpha + self.beta <= 0.0 {
            return Err(Error::invalid(format!(
                "type re-rank weights alpha = {}, beta = {}: each must be in [0, 10] and not both 0",
                self.alpha, self.beta
            )));
        }
        if !(0.0..=1.0).contains(&self.estimate_weight) {
            return Err(Error::invalid(format!(
                "type re-rank estimate_weight = {}: expected 0..=1",
                self.estimate_weight
            )));
        }
        if !(1..=1000).contains(&self.per_type) {
            return Err(Error::invalid(format!(
                "type re-rank per_type = {}: expected 1..=1000",
                self.per_type
            )));
        }
        Ok(())
    }
}

/// What a search does with memory types.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TypeSearch {
    /// Classify the query, draw k per type, re-rank by eq. 3.
    Rerank(TypeRerank),
    /// Keep memories of this type only (more likely of it than not).
    Only(MemoryType),
}

impl TypeSearch {
    pub fn validate(&self) -> Result<()> {
        match self {
            TypeSearch::Rerank(params) => params.validate(),
            TypeSearch::Only(_) => Ok(()),
        }
    }
}

/// Whether `memory` is more likely of type `wanted` than not ([`p_semantic`]); a memory of
/// unknown type is of neither.
pub fn is_of_type(memory: &Memory, wanted: MemoryType) -> bool {
    let p = p_semantic(memory);
    match wanted {
        MemoryType::Semantic => p > 0.5,
        MemoryType::Episodic => p < 0.5,
    }
}

/// The query's class π: the more probable type.
pub fn query_type(class: &QueryClass) -> MemoryType {
    if class.is_semantic() {
        MemoryType::Semantic
    } else {
        MemoryType::Episodic
    }
}

/// P(semantic | m) as the source states it: 1 or 0, `None` when it says nothing.
pub fn stated_p_semantic(memory: &Memory) -> Option<f32> {
    memory.stated_type().map(|t| match t {
        MemoryType::Semantic => 1.0,
        MemoryType::Episodic => 0.0,
    })
}

/// P(semantic | m): the stated type, else the classifier's estimate kept in the metadata, else
/// even odds (nothing known).
pub fn p_semantic(memory: &Memory) -> f32 {
    p_semantic_trusting(memory, 1.0)
}

/// [`p_semantic`] with an estimate's distance from even odds scaled by `estimate_weight`.
pub fn p_semantic_trusting(memory: &Memory, estimate_weight: f32) -> f32 {
    if let Some(p) = stated_p_semantic(memory) {
        return p;
    }
    memory
        .metadata
        .get(ESTIMATE_KEY)
        .and_then(|v| v.trim().parse::<f32>().ok())
        .filter(|p| p.is_finite())
        .map_or(0.5, |p| 0.5 + estimate_weight * (p.clamp(0.0, 1.0) - 0.5))
}

/// The memory-type re-ranker as a [`Reranker`] stage: each query is classified by the memory
/// model's query classifier, memories typed by [`p_semantic`].
pub struct MemoryTypeReranker {
    model: Arc<dyn MemoryModel>,
    params: TypeRerank,
}

impl MemoryTypeReranker {
    pub fn new(model: Arc<dyn MemoryModel>, params: TypeRerank) -> Result<Self> {
        params.validate()?;
        Ok(Self { model, params })
    }
}

impl Reranker for MemoryTypeReranker {
    fn name(&self) -> &str {
        "memory_type"
    }

    /// A query the model cannot classify leaves the order as it was; every hit then says so in
    /// its explanation rather than silently skipping the stage.
    fn rerank(&self, query: &str, hits: &mut Vec<Hit>) {
        match self.model.classify_query(query) {
            Ok(class) => rerank_by_type(&self.params, &class, hits),
            Err(error) => {
                let name = format!("memory type skipped: query not classified ({error})");
                for hit in hits.iter_mut() {
                    hit.breakdown.adjustments.push(Adjustment {
                        name: name.clone(),
                        value: 0.0,
                        delta: 0.0,
                    });
                }
            }
        }
    }
}

/// Re-rank `hits` (best first) for a query of class `query` (see the module docs), each
/// memory's P(semantic | m) from [`p_semantic_trusting`] with the params' `estimate_weight`.
/// Every kept hit gets two adjustments,
/// `P(π|m)` (value P, delta α·P) and `sigmoid(s)` (value s as fed to the sigmoid, delta the rest
/// of the change), so its explanation shows P(π | m), s and, as its score, s′.
pub fn rerank_by_type(params: &TypeRerank, query: &QueryClass, hits: &mut Vec<Hit>) {
    let pi = query_type(query);
    let mut per_type = [0usize; 2];
    let mut kept: Vec<(Hit, f32)> = Vec::with_capacity(hits.len());
    for hit in hits.drain(..) {
        let p_sem = p_semantic_trusting(&hit.memory, params.estimate_weight);
        let slot = usize::from(p_sem < 0.5);
        if per_type[slot] < params.per_type {
            per_type[slot] += 1;
            kept.push((hit, p_sem));
        }
    }
    let inputs = sigmoid_inputs(params.score, &kept);
    for ((hit, p_sem), s) in kept.iter_mut().zip(inputs) {
        let p_pi = match (params.query, pi) {
            (QueryCertainty::Hard, MemoryType::Semantic) => *p_sem,
            (QueryCertainty::Hard, MemoryType::Episodic) => 1.0 - *p_sem,
            (QueryCertainty::Soft, _) => query.semantic * *p_sem + query.episodic * (1.0 - *p_sem),
        };
        let type_part = params.alpha * p_pi;
        let rescored = type_part + params.beta * sigmoid(s);
        hit.breakdown.adjustments.push(Adjustment {
            name: format!("P({pi}|m)"),
            value: p_pi,
            delta: type_part,
        });
        hit.breakdown.adjustments.push(Adjustment {
            name: "sigmoid(s)".into(),
            value: s,
            delta: rescored - type_part - hit.score,
        });
        hit.score = rescored;
    }
    kept.sort_by(|a, b| {
        b.0.score
            .total_cmp(&a.0.score)
            .then_with(|| a.0.memory.id.cmp(&b.0.memory.id))
    });
    hits.extend(kept.into_iter().map(|(hit, _)| hit));
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// What each kept hit's sigmoid is applied to.
fn sigmoid_inputs(input: ScoreInput, kept: &[(Hit, f32)]) -> Vec<f32> {
    let scores: Vec<f32> = kept.iter().map(|(hit, _)| hit.score).collect();
    match input {
        ScoreInput::Raw => scores,
        ScoreInput::Standardized => {
            let n = scores.len().max(1) as f32;
            let mean = scores.iter().sum::<f32>() / n;
            let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f32>() / n;
            let sd = var.sqrt();
            scores
                .iter()
                .map(|s| if sd > 0.0 { (s - mean) / sd } else { 0.0 })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Metadata, Scope, Turn};
    use crate::retrieval::ScoreBreakdown;

    fn hit(text: &str, stated: Option<MemoryType>, score: f32) -> Hit {
        let mut metadata = Metadata::new();
        if let Some(t) = stated {
            metadata.insert(MemoryType::METADATA_KEY.into(), t.as_str().into());
        }
        let turn = Turn {
            id: crate::model::TurnId::new(),
            scope: Scope::new("t", "u", "a", "s").unwrap(),
            role: crate::model::Role::User,
            speaker: None,
            text: text.into(),
            at: crate::model::Moment {
                round: 1,
                time: crate::model::Timestamp(0),
            },
            metadata,
            key: None,
        };
        Hit {
            memory: Memory::from_turn(&turn),
            score,
            relevance: 1.0,
            tokens: 5,
            breakdown: ScoreBreakdown {
                fused: score,
                ..ScoreBreakdown::default()
            },
        }
    }

    fn texts(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.memory.text.as_str()).collect()
    }

    #[test]
    fn the_query_type_lifts_its_memories_and_the_explanation_shows_the_terms() {
        let mut hits = vec![
            hit("event a", Some(MemoryType::Episodic), 0.030),
            hit("profile b", Some(MemoryType::Semantic), 0.029),
            hit("event c", Some(MemoryType::Episodic), 0.028),
        ];
        let params = TypeRerank {
            query: QueryCertainty::Hard,
            ..TypeRerank::paper()
        };
        rerank_by_type(&params, &QueryClass::from_semantic(0.9), &mut hits);
        assert_eq!(texts(&hits), ["profile b", "event a", "event c"]);
        let top = &hits[0];
        let names: Vec<&str> = top
            .breakdown
            .adjustments
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["P(semantic|m)", "sigmoid(s)"]);
        assert_eq!(top.breakdown.adjustments[0].value, 1.0);
        // The adjustments add up to the change from the fused score to s′.
        let total: f32 = top.breakdown.adjustments.iter().map(|a| a.delta).sum();
        assert!((0.029 + total - top.score).abs() < 1e-6);
        let s = top.breakdown.adjustments[1].value;
        assert!((top.score - (0.5 + 0.5 * sigmoid(s))).abs() < 1e-6);
    }

    #[test]
    fn a_much_better_match_of_the_other_type_can_still_win() {
        let mut hits = vec![hit("event", Some(MemoryType::Episodic), 1.0)];
        for i in 0..9 {
            hits.push(hit(
                &format!("profile {i}"),
                Some(MemoryType::Semantic),
                0.01,
            ));
        }
        let params = TypeRerank {
            alpha: 0.2,
            beta: 0.8,
            ..TypeRerank::paper()
        };
        rerank_by_type(&params, &QueryClass::from_semantic(0.6), &mut hits);
        assert_eq!(hits[0].memory.text, "event");
    }

    #[test]
    fn by_default_a_confidently_wrong_query_class_does_not_bury_a_clear_best_match() {
        let ranked = |params: &TypeRerank| {
            let mut hits = vec![hit("event", Some(MemoryType::Episodic), 1.0)];
            hits.push(hit("other event", Some(MemoryType::Episodic), 0.3));
            for i in 0..4 {
                hits.push(hit(
                    &format!("profile {i}"),
                    Some(MemoryType::Semantic),
                    0.4,
                ));
            }
            rerank_by_type(params, &QueryClass::from_semantic(0.9), &mut hits);
            hits[0].memory.text.clone()
        };
        assert_eq!(ranked(&TypeRerank::default()), "event");
        assert_ne!(ranked(&TypeRerank::paper()), "event");
    }

    #[test]
    fn k_candidates_are_kept_per_type() {
        let mut hits = Vec::new();
        for i in 0..5 {
            hits.push(hit(
                &format!("e{i}"),
                Some(MemoryType::Episodic),
                1.0 - i as f32 * 0.1,
            ));
        }
        hits.push(hit("s0", Some(MemoryType::Semantic), 0.1));
        let params = TypeRerank {
            per_type: 2,
            ..TypeRerank::paper()
        };
        rerank_by_type(&params, &QueryClass::from_semantic(0.0), &mut hits);
        assert_eq!(texts(&hits), ["e0", "e1", "s0"]);
    }

    #[test]
    fn raw_scores_reproduce_the_papers_form() {
        let mut hits = vec![
            hit("e", Some(MemoryType::Episodic), 2.0),
            hit("s", Some(MemoryType::Semantic), 0.0),
        ];
        let params = TypeRerank {
            score: ScoreInput::Raw,
            query: QueryCertainty::Hard,
            ..TypeRerank::paper()
        };
        rerank_by_type(&params, &QueryClass::from_semantic(1.0), &mut hits);
        assert_eq!(texts(&hits), ["s", "e"]);
        assert!((hits[0].score - (0.5 + 0.5 * 0.5)).abs() < 1e-6);
        assert!((hits[1].score - 0.5 * sigmoid(2.0)).abs() < 1e-6);
    }

    #[test]
    fn an_unsure_query_class_weighs_less_than_a_sure_one() {
        let run = |p: f32| {
            let mut hits = vec![
                hit("event", Some(MemoryType::Episodic), 0.9),
                hit("profile", Some(MemoryType::Semantic), 0.1),
            ];
            rerank_by_type(
                &TypeRerank::paper(),
                &QueryClass::from_semantic(p),
                &mut hits,
            );
            hits
        };
        let sure = run(0.99);
        assert_eq!(texts(&sure), ["profile", "event"]);
        assert!((sure[0].breakdown.adjustments[0].value - 0.99).abs() < 1e-6);
        // At 0.55 the classifier barely prefers semantic: retrieval's preference decides.
        assert_eq!(texts(&run(0.55)), ["event", "profile"]);
    }

    #[test]
    fn unknown_types_count_as_even_odds() {
        let mut hits = vec![hit("no type", None, 0.5)];
        rerank_by_type(
            &TypeRerank::paper(),
            &QueryClass::from_semantic(1.0),
            &mut hits,
        );
        assert_eq!(hits[0].breakdown.adjustments[0].value, 0.5);
    }

    #[test]
    fn estimates_are_trusted_as_far_as_asked_and_stated_types_fully() {
        let mut estimated = hit("x", None, 0.1).memory;
        estimated.metadata.insert(ESTIMATE_KEY.into(), "0.9".into());
        assert!((p_semantic_trusting(&estimated, 1.0) - 0.9).abs() < 1e-6);
        assert!((p_semantic_trusting(&estimated, 0.5) - 0.7).abs() < 1e-6);
        assert!((p_semantic_trusting(&estimated, 0.0) - 0.5).abs() < 1e-6);
        let stated = hit("y", Some(MemoryType::Episodic), 0.1).memory;
        assert_eq!(p_semantic_trusting(&stated, 0.0), 0.0);
    }

    #[test]
    fn weights_are_validated() {
        assert!(TypeRerank::default().validate().is_ok());
        for bad in [
            TypeRerank {
                alpha: -1.0,
                ..TypeRerank::default()
            },
            TypeRerank {
                alpha: 0.0,
                beta: 0.0,
                ..TypeRerank::default()
            },
            TypeRerank {
                per_type: 0,
                ..TypeRerank::default()
            },
            TypeRerank {
                estimate_weight: 1.5,
                ..TypeRerank::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_misspelt_stated_type_is_rejected_in_metadata() {
        let mut metadata = Metadata::new();
        metadata.insert(MemoryType::METADATA_KEY.into(), "Episodic ".into());
        assert!(crate::model::validate_metadata(&metadata).is_ok());
        metadata.insert(MemoryType::METADATA_KEY.into(), "episode".into());
        assert!(crate::model::validate_metadata(&metadata).is_err());
    }
}
