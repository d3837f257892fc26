//! Errors of the dataset loaders and the JSONL turn reader.

use std::fmt::Write as _;
use std::path::PathBuf;

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

/// serde_json appends " at line L column C" to its messages; the position is reported separately.
pub(crate) fn serde_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_string(),
        None => text,
    }
}
