//! Training of the offline model's learned parts, kept out of the crates that run them.
//!
//! Today that is the semantic/episodic query classifier of `mnemos_offline::classify`: a
//! [`QuestionSet`] (labelled questions, JSONL) becomes a [`FeatureSet`] (one feature row per
//! question, for one embedder or lexical cues only), which a logistic regression
//! ([`train_logistic`], L-BFGS) fits; [`train_best`] tries a grid of L2 penalties
//! ([`PenaltyGrid`]) and keeps the best by cross-validated accuracy. The result is a
//! [`ClassifierWeights`] file that `mnemos_offline` loads; `mnemos train classifier` drives it.
//!
//! [`lufy`] fits the lufy preset's strength weights on LUFY's annotations (Levenberg–Marquardt,
//! cross-validated by user); `mnemos train lufy` drives it.
//!
//! [`ranker`] fits the retrieval core's learned ranker on the candidates `mnemos eval
//! retrieval --dump` writes, cross-validated by conversation; `mnemos train ranker` drives it.
//!
//! Training is deterministic: the same question set, embedder and options give bit-identical
//! weights.

mod classifier;
#[cfg(feature = "clap")]
pub mod cli;
mod logistic;
pub mod lufy;
mod question_set;
pub mod ranker;
pub mod relevance;
pub mod select;

pub use classifier::{feature_rows, train_best, train_weights, FeatureSet, PenaltyGrid, L2_GRID};
pub use logistic::{accuracy, cross_validate, train_logistic};
pub use mnemos_offline::classify::{ClassifierWeights, LogisticModel, TrainOptions};
pub use question_set::{training_set_checksum, LabelledQuery, QueryLabel, QuestionSet};

use mnemos_core::{EmbedError, ModelError};

/// Why training could not produce weights.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("question set line {line}: not a labelled question")]
    QuestionLine {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("question set line {line}: empty text")]
    EmptyQuestion { line: usize },
    #[error("the question set is empty")]
    EmptyQuestionSet,
    #[error("cannot embed the questions")]
    Embed(#[source] EmbedError),
    /// Training data or options that cannot be trained on (no rows, ragged rows, non-finite
    /// values, bad penalties or folds).
    #[error("cannot train: {0}")]
    InvalidInput(String),
    /// The fitted model does not pass the checks the offline model applies when loading it.
    #[error("the trained weights do not validate")]
    Weights(#[source] ModelError),
    /// The memory model failed on a training example.
    #[error("the memory model failed")]
    Model(#[source] ModelError),
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A fit that cannot be written as its file's format.
    #[error("cannot write the fit as {format}")]
    Serialize {
        format: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The configured embedder (or engine setup) the training needs is unavailable.
    #[error("{0}")]
    Setup(#[from] mnemos_engine::EngineError),
    #[error("{path} line {line}: not a line of an `eval retrieval --dump` file")]
    DumpLine {
        path: String,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

impl TrainError {
    fn invalid(message: impl Into<String>) -> Self {
        TrainError::InvalidInput(message.into())
    }
}
