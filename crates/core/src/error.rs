//! Errors of the core layer. Every error has an [`ErrorClass`] (whose fault it is, and whether
//! retrying can help), decided by an exhaustive `match`, so a new variant cannot silently fall
//! into the wrong class: the server maps classes to HTTP statuses, the CLI to exit codes.

use thiserror::Error;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whose fault an error is, and what a caller can do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The caller's input is malformed or breaks a rule (fix the request).
    InvalidInput,
    /// The caller named something that does not exist, or belongs to another user.
    NotFound,
    /// The request collided with another write (retrying may succeed).
    Conflict,
    /// A dependency (embedding model, LLM endpoint, database file) is missing or down.
    Unavailable,
    /// The service itself failed (storage error, corrupt data, broken contract).
    Internal,
    /// The request's time limit passed and its work stopped (retrying with less work, or a
    /// longer limit, may succeed).
    TimedOut,
}

impl ErrorClass {
    /// Is the caller, not the service, at fault?
    pub fn is_user_error(self) -> bool {
        match self {
            ErrorClass::InvalidInput | ErrorClass::NotFound | ErrorClass::Conflict => true,
            ErrorClass::Unavailable | ErrorClass::Internal | ErrorClass::TimedOut => false,
        }
    }
}

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
    /// The memory model failed a task a read needed (classifying a query for a re-rank).
    #[error("memory model: {0}")]
    Model(#[from] crate::memory_model::ModelError),
    /// The request's [`Deadline`](crate::Deadline) passed; its work stopped there.
    #[error("stopped after the request's time limit of {} s", limit.as_secs_f64())]
    TimedOut { limit: std::time::Duration },
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

    /// The error with `context` (`turn 2`) in front of what was wrong. An input error keeps
    /// its one `invalid input:` prefix rather than wrapping its own text in another; other
    /// errors name what failed themselves and stay as they are.
    #[must_use]
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            Error::InvalidInput(message) => Error::InvalidInput(format!("{context}: {message}")),
            other => other,
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            Error::InvalidInput(_) => ErrorClass::InvalidInput,
            Error::NotFound { .. } => ErrorClass::NotFound,
            Error::Store(e) => e.class(),
            Error::Embed(e) => e.class(),
            Error::Model(e) => e.class(),
            Error::TimedOut { .. } => ErrorClass::TimedOut,
        }
    }

    /// True when the caller, not the service, is at fault.
    pub fn is_user_error(&self) -> bool {
        self.class().is_user_error()
    }
}

/// An error and its causes in one line, `outer: cause: root cause`, leaving out a cause whose
/// text the line already holds (an error that prints its source inline is not repeated).
pub fn report(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// A plain message used as the source of an error that has no error value of its own.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Message(pub String);

/// Why a write collided with the store's current state.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Conflict {
    /// The batch expected the user's last round to be `expected`; another writer moved it.
    #[error("the user's last round is {found:?}, not {expected:?} as the write assumed")]
    LastRoundMoved {
        expected: Option<u64>,
        found: Option<u64>,
    },
    /// A turn with this idempotency key is already stored for the user.
    #[error("a turn with key '{key}' is already stored")]
    DuplicateTurnKey { key: String },
    /// Another engine (another server) holds the lease on the user's jobs right now.
    #[error("another server is running this user's jobs; try again once it is done")]
    JobsLeased,
    /// The memory to change is forgotten: its text stays what was forgotten (no search or
    /// recall shows it, so a change would go nowhere), and nothing restores a forgotten memory.
    #[error(
        "memory {id} is forgotten ({reason}) and cannot be changed; a forgotten memory is never \
         restored: to remember it again, add its text as a new turn"
    )]
    Forgotten {
        id: crate::model::MemoryId,
        reason: String,
    },
    /// An import found data of its user in the store: it only fills a user the store holds no
    /// turn, memory or job of, and never overwrites one.
    #[error("the store already holds data of user {user}; an import only fills an empty user")]
    UserNotEmpty { user: crate::model::UserKey },
    /// A `bind` expected the database bound to `expected` and found `found` (another engine
    /// bound or moved it first).
    #[error("the database is bound to {found:?}, not {expected:?} as the binding assumed")]
    BindingMoved {
        expected: Option<String>,
        found: Option<String>,
    },
}

/// A storage backend failed. The message names the operation; the backend's own error is the
/// source.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store backend error during {op}: {source}")]
    Backend {
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("store schema version {found} is newer than this build supports ({supported})")]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("invalid write: {0}")]
    InvalidWrite(String),
    #[error("write conflict: {0}")]
    Conflict(#[from] Conflict),
    /// The store's file or server is not there (and was not to be created).
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

impl StoreError {
    /// A backend failure during `op`, keeping the backend's error as the source.
    pub fn backend(op: &'static str, err: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend {
            op,
            source: Box::new(err),
        }
    }

    /// A backend failure during `op` that only has a message.
    pub fn backend_message(op: &'static str, message: impl Into<String>) -> Self {
        Self::backend(op, Message(message.into()))
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            StoreError::Backend { .. } | StoreError::Corrupt(_) => ErrorClass::Internal,
            StoreError::SchemaTooNew { .. } | StoreError::Unavailable(_) => ErrorClass::Unavailable,
            StoreError::InvalidWrite(_) => ErrorClass::InvalidInput,
            StoreError::Conflict(_) => ErrorClass::Conflict,
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
    #[error("embedding failed: {message}")]
    Failed {
        message: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl EmbedError {
    /// A failure with only a message.
    pub fn failed(message: impl Into<String>) -> Self {
        EmbedError::Failed {
            message: message.into(),
            source: None,
        }
    }

    /// A failure caused by `source`.
    pub fn failed_from(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        EmbedError::Failed {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            EmbedError::Unavailable(_) => ErrorClass::Unavailable,
            EmbedError::Dimension { .. }
            | EmbedError::Count { .. }
            | EmbedError::NonFinite
            | EmbedError::Failed { .. } => ErrorClass::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_split_user_from_service_errors() {
        assert!(Error::invalid("x").is_user_error());
        assert!(Error::not_found("memory", 1).is_user_error());
        assert!(Error::from(StoreError::from(Conflict::DuplicateTurnKey {
            key: "k".into()
        }))
        .is_user_error());
        assert!(!Error::from(StoreError::backend_message("write", "disk full")).is_user_error());
        assert_eq!(
            Error::from(EmbedError::Unavailable("no model".into())).class(),
            ErrorClass::Unavailable
        );
    }

    #[test]
    fn reports_name_each_cause_once() {
        let io = std::io::Error::other("disk full");
        let err = StoreError::backend("write", io);
        assert_eq!(report(&err), "store backend error during write: disk full");
        let wrapped = Error::from(StoreError::backend_message("open", "no such file"));
        assert_eq!(
            report(&wrapped),
            "store backend error during open: no such file"
        );
    }

    #[test]
    fn context_goes_inside_the_one_prefix() {
        let err = Error::invalid("turn text is empty").context("turn 1");
        assert_eq!(err.to_string(), "invalid input: turn 1: turn text is empty");
        let missing = Error::not_found("memory", 7).context("turn 1");
        assert_eq!(missing.to_string(), "not found: memory 7");
    }

    #[test]
    fn backend_errors_keep_their_source() {
        let io = std::io::Error::other("disk full");
        let err = StoreError::backend("write", io);
        let source = std::error::Error::source(&err).map(|s| s.to_string());
        assert_eq!(source.as_deref(), Some("disk full"));
    }
}
