//! Engine errors: what a caller can act on.

use mnemos_core::{Error as CoreError, ModelError, StoreError};

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
}
