//! Engine errors: what a caller can act on. [`EngineError::class`] sorts every variant into an
//! [`ErrorClass`] with an exhaustive `match` (the server's HTTP status, the CLI's exit code).

use mnemos_core::{Error as CoreError, ErrorClass, ModelError, SpaceMismatch, StoreError};

pub type EngineResult<T> = std::result::Result<T, EngineError>;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Storage, embedding or input validation failed (see the core error).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The memory model failed a task (a derived job fails and is retried later).
    #[error("memory model: {0}")]
    Model(#[from] ModelError),
    /// A preset name, parameter or value is wrong; the message lists what is valid.
    #[error("config: {0}")]
    Config(String),
    /// A job's payload does not parse, or it names a mechanism this engine does not run.
    #[error("job {id}: {message}")]
    Job { id: String, message: String },
    /// An ingest stopped after `committed` turns were stored (they stay).
    #[error("ingest stopped after {committed} turns were committed: {source}")]
    Ingest {
        committed: usize,
        #[source]
        source: Box<EngineError>,
    },
    /// An add would reuse a turn key or request key for something else (409 over HTTP).
    #[error(transparent)]
    KeyConflict(#[from] KeyConflict),
    /// The database is bound to another vector space than the embedder's.
    #[error(transparent)]
    VectorSpace(#[from] SpaceMismatch),
    /// A setup step (opening the database, loading a model, reading the config) failed.
    #[error("{what}: {source}")]
    Setup {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
        class: ErrorClass,
    },
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        EngineError::Core(CoreError::Store(e))
    }
}

impl EngineError {
    pub fn config(msg: impl Into<String>) -> Self {
        EngineError::Config(msg.into())
    }

    /// A failed setup step, classed by the caller (a missing file is the user's to fix).
    pub fn setup(
        what: impl Into<String>,
        class: ErrorClass,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        EngineError::Setup {
            what: what.into(),
            source: Box::new(source),
            class,
        }
    }

    /// The error with `context` (`agent 'coach'`) in front of what was wrong, inside the
    /// error's own prefix (`config: agent 'coach': …`, not `config: agent 'coach': config: …`).
    /// Errors that are not the caller's input or config name what failed and stay as they are.
    #[must_use]
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            EngineError::Config(message) => EngineError::Config(format!("{context}: {message}")),
            EngineError::Core(e) => EngineError::Core(e.context(context)),
            other => other,
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            EngineError::Core(e) => e.class(),
            EngineError::Model(e) => e.class(),
            EngineError::Config(_) | EngineError::VectorSpace(_) => ErrorClass::InvalidInput,
            EngineError::Job { .. } => ErrorClass::Internal,
            EngineError::KeyConflict(_) => ErrorClass::Conflict,
            EngineError::Ingest { source, .. } => source.class(),
            EngineError::Setup { class, .. } => *class,
        }
    }

    /// True when the caller, not the service, is at fault.
    pub fn is_user_error(&self) -> bool {
        self.class().is_user_error()
    }
}

/// Why an add was refused: it would reuse a key for something else. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyConflict {
    /// A turn's key is already stored with another text.
    #[error("key '{key}' is already stored with another text: {RETRY}")]
    OtherText { key: String },
    /// The request key was used for a request with another number of turns.
    #[error(
        "Idempotency-Key '{key}' was used for a request with another number of turns: {RETRY}"
    )]
    OtherCount { key: String },
}

/// What the caller should do instead (the wire message has always said so).
const RETRY: &str =
    "a retry must resend the same turns (use a new Idempotency-Key for a new request)";
