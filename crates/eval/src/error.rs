//! Errors of the dataset loaders and the JSONL turn reader, and of the evaluations built on
//! them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mnemos_core::ErrorClass;

use crate::artifacts::ArtifactError;

use serde::{Deserialize, Serialize};

/// How many bad lines a strict JSONL read lists in its error.
pub const MAX_REPORTED_LINE_ERRORS: usize = 20;

/// One rejected line of a JSONL turn file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A dataset or turn file could not be used at all.
///
/// Problems confined to single records are not errors: loaders record them as
/// [`crate::Defect`]s and keep going, so one bad record never hides the rest of a file.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: invalid JSON at line {line}, column {column}: {message}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file is valid JSON but its overall shape is not the expected dataset.
    #[error("{}: {location}: {problem}", path.display())]
    Structure {
        path: PathBuf,
        location: String,
        problem: String,
    },
    /// Strict JSONL reading found bad lines; nothing was accepted.
    #[error("{}", render_invalid_lines(path, errors, *total))]
    InvalidLines {
        path: PathBuf,
        /// The first [`MAX_REPORTED_LINE_ERRORS`] bad lines.
        errors: Vec<LineError>,
        /// Number of bad lines in the whole input.
        total: usize,
    },
    #[error("{}: cannot tell the format: {reason}", path.display())]
    UnknownFormat { path: PathBuf, reason: String },
}

impl DatasetError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DatasetError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn structure(
        path: impl Into<PathBuf>,
        location: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        DatasetError::Structure {
            path: path.into(),
            location: location.into(),
            problem: problem.into(),
        }
    }
}

fn render_invalid_lines(path: &std::path::Path, errors: &[LineError], total: usize) -> String {
    let mut out = format!(
        "{}: {total} invalid line(s); nothing was accepted",
        path.display()
    );
    for error in errors {
        let _ = write!(out, "\n  {error}");
    }
    if total > errors.len() {
        let _ = write!(out, "\n  ... and {} more", total - errors.len());
    }
    out
}

/// An evaluation that could not run or finish.
///
/// Wrapped errors are kept as the source (not flattened into text), so a caller can still find
/// the typed cause — a dataset defect, an engine config error, a store failure — and class it.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The request cannot be met by its input (no labelled dialogue, a missing conversation,
    /// an option the dataset does not support).
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Dataset(#[from] DatasetError),
    #[error("{0}")]
    Protocol(#[from] crate::protocol::ProtocolError),
    #[error("{0}")]
    Selection(#[from] mnemos_presets::variants::VariantError),
    #[error("{0}")]
    Engine(#[from] mnemos_engine::EngineError),
    #[error("{0}")]
    Core(#[from] mnemos_core::Error),
    #[error("{0}")]
    Store(#[from] mnemos_core::StoreError),
    #[error("{0}")]
    Embed(#[from] mnemos_core::EmbedError),
    #[error("{0}")]
    Model(#[from] mnemos_core::ModelError),
    #[error("{0}")]
    Artifact(#[from] crate::artifacts::ArtifactError),
    #[error("{0}")]
    Plot(#[from] crate::plot::PlotError),
    /// One preset failed on one conversation.
    #[error("{preset} on {conversation}")]
    Run {
        preset: String,
        conversation: String,
        #[source]
        source: crate::runner::RunError,
    },
    /// The LLM judge failed on one question.
    #[error("judge on {question}")]
    Judge {
        question: String,
        #[source]
        source: mnemos_core::ModelError,
    },
    /// A file the evaluation reads or writes (a dump, a weights file, scratch space).
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write JSON to {}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl EvalError {
    pub(crate) fn io<'a>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| EvalError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the caller, not the service, is at fault.
    pub fn class(&self) -> ErrorClass {
        match self {
            EvalError::Invalid(_)
            | EvalError::Dataset(_)
            | EvalError::Protocol(_)
            | EvalError::Selection(_) => ErrorClass::InvalidInput,
            EvalError::Artifact(
                ArtifactError::NotEmpty { .. }
                | ArtifactError::NotADirectory { .. }
                | ArtifactError::InvalidName { .. },
            ) => ErrorClass::InvalidInput,
            EvalError::Engine(e) => e.class(),
            EvalError::Core(e) => e.class(),
            EvalError::Store(e) => e.class(),
            EvalError::Model(e) | EvalError::Judge { source: e, .. } => e.class(),
            EvalError::Run { source, .. } => source.class(),
            EvalError::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    ErrorClass::InvalidInput
                }
                _ => ErrorClass::Internal,
            },
            EvalError::Embed(_)
            | EvalError::Artifact(_)
            | EvalError::Plot(_)
            | EvalError::Json { .. } => ErrorClass::Internal,
        }
    }
}

/// serde_json appends " at line L column C" to its messages; the position is reported separately.
pub(crate) fn serde_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_string(),
        None => text,
    }
}
