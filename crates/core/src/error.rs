//! Errors of the core layer. User errors (bad input, unknown ids) are split from service errors
//! (a failing store or embedder) so callers can map them to 4xx vs 5xx, or exit codes.

use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Error)]
pub enum Error {
    /// The caller's input is malformed (empty text, bad id, invalid config…).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// An id or scope the caller named does not exist (or belongs to another user).
    #[error("not found: {what} {id}")]
    NotFound { what: &'static str, id: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
    pub fn not_found(what: &'static str, id: impl ToString) -> Self {
        Error::NotFound {
            what,
            id: id.to_string(),
        }
    }
    /// True when the caller, not the service, is at fault.
    pub fn is_user_error(&self) -> bool {
        matches!(self, Error::InvalidInput(_) | Error::NotFound { .. })
    }
}

/// A storage backend failed. The message names the operation and the backend's own error.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store backend error during {op}: {message}")]
    Backend { op: &'static str, message: String },
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("store schema version {found} is newer than this build supports ({supported})")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("invalid write: {0}")]
    InvalidWrite(String),
}

impl StoreError {
    pub fn backend(op: &'static str, err: impl std::fmt::Display) -> Self {
        StoreError::Backend {
            op,
            message: err.to_string(),
        }
    }
}

/// An embedder failed or broke its contract.
#[derive(Debug, Error)]
pub enum EmbedError {
    #[error("embedder returned a vector of dimension {got}, expected {expected}")]
    Dimension { expected: usize, got: usize },
    #[error("embedder returned {got} vectors for {expected} inputs")]
    Count { expected: usize, got: usize },
    #[error("embedder returned a non-finite value")]
    NonFinite,
    #[error("embedding model unavailable: {0}")]
    Unavailable(String),
    #[error("embedding failed: {0}")]
    Failed(String),
}
