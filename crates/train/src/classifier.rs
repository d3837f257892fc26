//! The query classifier's training: features of a question set, one fit, and the search over
//! L2 penalties that picks the shipped weights.

use mnemos_core::{Embedder, EmbedderExt};
use mnemos_offline::classify::{
    feature_row, lexical_feature_names, ClassifierWeights, TrainOptions, TrainingProvenance,
    LEXICAL_ONLY_ID, WEIGHTS_FORMAT,
};

use crate::logistic::{accuracy, cross_validate, train_logistic};
use crate::{QuestionSet, TrainError};

/// L2 penalties tried for the lexical weights and, separately, for the embedding weights when
/// none is given; the pair with the best cross-validated accuracy is kept.
pub const L2_GRID: [f64; 5] = [1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// Feature rows of `texts`: embedded in one batch with `embedder`, or lexical only when `None`.
pub fn feature_rows(
    embedder: Option<&dyn Embedder>,
    texts: &[&str],
) -> Result<Vec<Vec<f64>>, TrainError> {
    match embedder {
        None => Ok(texts.iter().map(|t| feature_row(None, t)).collect()),
        Some(embedder) => {
            let vectors = embedder
                .embed_all_queries(texts)
                .map_err(TrainError::Embed)?;
            Ok(vectors
                .iter()
                .zip(texts)
                .map(|(v, t)| feature_row(Some(v), t))
                .collect())
        }
    }
}

/// A question set turned into feature rows for one embedder (or lexical only): built once,
/// trained as often as needed (e.g. over a grid of L2 penalties).
#[derive(Clone, Debug)]
pub struct FeatureSet {
    pub embedder_id: String,
    pub embedding_dim: usize,
    /// [`crate::training_set_checksum`] of the question set.
    pub checksum: String,
    pub rows: Vec<Vec<f64>>,
    /// `true` = semantic.
    pub labels: Vec<bool>,
}

impl FeatureSet {
    /// Every question's features, embedded with `embedder` (lexical cues only when `None`).
    pub fn build(embedder: Option<&dyn Embedder>, set: &QuestionSet) -> Result<Self, TrainError> {
        let texts: Vec<&str> = set.questions.iter().map(|q| q.text.as_str()).collect();
        Ok(FeatureSet {
            embedder_id: embedder.map_or(LEXICAL_ONLY_ID.to_string(), |e| e.id().to_string()),
            embedding_dim: embedder.map_or(0, |e| e.dimension()),
            checksum: set.checksum.clone(),
            rows: feature_rows(embedder, &texts)?,
            labels: set
                .questions
                .iter()
                .map(|q| q.label.is_semantic())
                .collect(),
        })
    }

    /// Fit on all rows, with `cv_folds`-fold cross-validated accuracy for the record.
    pub fn train(
        &self,
        options: &TrainOptions,
        cv_folds: usize,
    ) -> Result<ClassifierWeights, TrainError> {
        let cv_accuracy = cross_validate(
            &self.rows,
            &self.labels,
            self.embedding_dim,
            cv_folds,
            options,
        )?;
        let model = train_logistic(&self.rows, &self.labels, self.embedding_dim, options)?;
        let train_accuracy = accuracy(&model, &self.rows, &self.labels)?;
        let weights = ClassifierWeights {
            format: WEIGHTS_FORMAT,
            embedder_id: self.embedder_id.clone(),
            embedding_dim: self.embedding_dim,
            lexical_features: lexical_feature_names()
                .into_iter()
                .map(String::from)
                .collect(),
            model,
            training: TrainingProvenance {
                examples: self.rows.len(),
                checksum: self.checksum.clone(),
                options: *options,
                train_accuracy,
                cv_folds,
                cv_accuracy,
            },
        };
        weights.validate().map_err(TrainError::Weights)?;
        Ok(weights)
    }
}

/// Train weights on a JSONL question set in one go (see [`FeatureSet`]).
pub fn train_weights(
    embedder: Option<&dyn Embedder>,
    question_set_jsonl: &str,
    options: &TrainOptions,
    cv_folds: usize,
) -> Result<ClassifierWeights, TrainError> {
    let set = QuestionSet::parse(question_set_jsonl)?;
    FeatureSet::build(embedder, &set)?.train(options, cv_folds)
}

/// The L2 penalties [`train_best`] tries, every lexical one with every embedding one.
#[derive(Clone, Debug, PartialEq)]
pub struct PenaltyGrid {
    pub lexical: Vec<f64>,
    /// `None` = the lexical penalty (a lexical-only feature set has only this).
    pub embedding: Vec<Option<f64>>,
    pub cv_folds: usize,
}

impl PenaltyGrid {
    /// The given penalty, or [`L2_GRID`] when `None`, for each kind of weight; embedding
    /// penalties only when `features` has an embedding.
    pub fn for_features(
        features: &FeatureSet,
        lexical_l2: Option<f64>,
        embedding_l2: Option<f64>,
        cv_folds: usize,
    ) -> Result<Self, TrainError> {
        let lexical = penalties(lexical_l2, "lexical")?;
        let embedding = if features.embedding_dim == 0 {
            vec![None]
        } else {
            penalties(embedding_l2, "embedding")?
                .into_iter()
                .map(Some)
                .collect()
        };
        Ok(PenaltyGrid {
            lexical,
            embedding,
            cv_folds,
        })
    }

    /// Every (lexical, embedding) pair, lexical-major.
    fn options(&self) -> impl Iterator<Item = TrainOptions> + '_ {
        self.lexical.iter().flat_map(move |l2| {
            self.embedding.iter().map(move |embedding_l2| TrainOptions {
                l2: *l2,
                embedding_l2: *embedding_l2,
                ..TrainOptions::default()
            })
        })
    }
}

/// The one penalty given, else the grid.
fn penalties(given: Option<f64>, kind: &str) -> Result<Vec<f64>, TrainError> {
    match given {
        Some(l2) if l2.is_finite() && l2 >= 0.0 => Ok(vec![l2]),
        Some(l2) => Err(TrainError::invalid(format!(
            "the {kind} L2 penalty must be a finite number ≥ 0, got {l2}"
        ))),
        None => Ok(L2_GRID.to_vec()),
    }
}

/// Train once per penalty pair of `grid` and keep the weights with the best cross-validated
/// accuracy (the first of equals). `on_candidate` sees every candidate as it is trained.
pub fn train_best(
    features: &FeatureSet,
    grid: &PenaltyGrid,
    mut on_candidate: impl FnMut(&ClassifierWeights),
) -> Result<ClassifierWeights, TrainError> {
    let mut best: Option<ClassifierWeights> = None;
    for options in grid.options() {
        let weights = features.train(&options, grid.cv_folds)?;
        on_candidate(&weights);
        let better = best
            .as_ref()
            .is_none_or(|b| weights.training.cv_accuracy > b.training.cv_accuracy);
        if better {
            best = Some(weights);
        }
    }
    best.ok_or_else(|| TrainError::invalid("no L2 penalty to train with"))
}

#[cfg(test)]
mod tests {
    use mnemos_embed::HashEmbedder;
    use mnemos_offline::classify::{shipped_embedder_ids, shipped_weights_json};

    use super::*;
    use crate::training_set_checksum;

    /// The question set the shipped weights were trained on.
    const SHIPPED_SET: &str = include_str!("../../offline/data/query_types.jsonl");

    const TINY_SET: &str =
        "{\"text\": \"How old is Anna?\", \"label\": \"semantic\", \"lang\": \"en\"}\n\
         {\"text\": \"What did Anna say at the party?\", \"label\": \"episodic\", \"lang\": \"en\"}\n\
         {\"text\": \"安娜多大了？\", \"label\": \"semantic\", \"lang\": \"zh\"}\n\
         {\"text\": \"安娜在聚会上说了什么？\", \"label\": \"episodic\", \"lang\": \"zh\"}\n";

    #[test]
    fn weights_round_trip_through_json() {
        let embedder = HashEmbedder::default();
        let weights =
            train_weights(Some(&embedder), TINY_SET, &TrainOptions::default(), 2).unwrap();
        assert_eq!(weights.embedder_id, "hash-v1-384");
        assert_eq!(weights.embedding_dim, 384);
        assert_eq!(weights.training.checksum, training_set_checksum(TINY_SET));
        assert_eq!(weights.training.train_accuracy, 1.0);
        let back = ClassifierWeights::from_json(&weights.to_json().unwrap()).unwrap();
        // JSON keeps floats to within an ulp or so, not always bit-exact.
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * x.abs().max(1.0))
        };
        assert!(close(&back.model.weights, &weights.model.weights));
        assert!(close(&back.model.means, &weights.model.means));
        assert!(close(&back.model.stds, &weights.model.stds));
        assert!(close(&[back.model.bias], &[weights.model.bias]));
        assert_eq!(
            (
                &back.embedder_id,
                back.embedding_dim,
                &back.lexical_features,
                &back.training
            ),
            (
                &weights.embedder_id,
                weights.embedding_dim,
                &weights.lexical_features,
                &weights.training
            )
        );
        let query = "安娜说了什么？";
        let row = feature_row(Some(&embedder.embed_query(query).unwrap()), query);
        let (p, q) = (
            back.model.probability(&row).unwrap(),
            weights.model.probability(&row).unwrap(),
        );
        assert!((p - q).abs() < 1e-9);

        let mut broken = weights.clone();
        broken.model.weights.pop();
        assert!(ClassifierWeights::from_json(&broken.to_json().unwrap()).is_err());
        let mut renamed = weights;
        renamed.lexical_features[0] = "something_else".into();
        assert!(ClassifierWeights::from_json(&renamed.to_json().unwrap()).is_err());
    }

    #[test]
    fn shipped_weights_were_trained_on_the_shipped_question_set() {
        let set = QuestionSet::parse(SHIPPED_SET).unwrap();
        let ids = shipped_embedder_ids().chain([LEXICAL_ONLY_ID]);
        for id in ids {
            let json = shipped_weights_json(id).unwrap();
            let weights = ClassifierWeights::from_json(json).unwrap();
            assert_eq!(
                weights.training.checksum, set.checksum,
                "{id} is stale: retrain it"
            );
            assert_eq!(weights.training.examples, set.questions.len(), "{id}");
        }
    }

    /// The shipped lexical-only weights are what the default grid search gives today, to the
    /// last bit of their JSON.
    #[test]
    fn grid_search_reproduces_the_shipped_lexical_weights() {
        let set = QuestionSet::parse(SHIPPED_SET).unwrap();
        let features = FeatureSet::build(None, &set).unwrap();
        let grid = PenaltyGrid::for_features(&features, None, None, 5).unwrap();
        assert_eq!(grid.embedding, [None]);
        let mut candidates = 0;
        let best = train_best(&features, &grid, |_| candidates += 1).unwrap();
        assert_eq!(candidates, L2_GRID.len());
        let shipped = shipped_weights_json(LEXICAL_ONLY_ID).unwrap();
        assert_eq!(best.to_json().unwrap() + "\n", shipped);
    }

    /// Retraining with the settings recorded in the shipped hash-embedder weights gives them
    /// back to the last bit of their JSON (the embedding half of the features included).
    #[test]
    fn recorded_settings_reproduce_the_shipped_hash_weights() {
        let shipped = shipped_weights_json("hash-v1-384").unwrap();
        let recorded = ClassifierWeights::from_json(shipped).unwrap().training;
        let set = QuestionSet::parse(SHIPPED_SET).unwrap();
        let embedder = HashEmbedder::default();
        let features = FeatureSet::build(Some(&embedder), &set).unwrap();
        let weights = features
            .train(&recorded.options, recorded.cv_folds)
            .unwrap();
        assert_eq!(weights.to_json().unwrap() + "\n", shipped);
    }

    #[test]
    fn penalties_must_be_finite_and_not_negative() {
        let set = QuestionSet::parse(TINY_SET).unwrap();
        let features = FeatureSet::build(None, &set).unwrap();
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                PenaltyGrid::for_features(&features, Some(bad), None, 2),
                Err(TrainError::InvalidInput(_))
            ));
        }
        let given = PenaltyGrid::for_features(&features, Some(0.5), Some(2.0), 2).unwrap();
        // A lexical-only feature set has no embedding penalty to try.
        assert_eq!((given.lexical, given.embedding), (vec![0.5], vec![None]));
    }
}
