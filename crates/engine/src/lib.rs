//! mnemos engine: the one front door. An [`Engine`] holds one store, one embedder and one
//! memory model, runs a mechanism (memory preset) per agent, and is the only write path:
//! turns, derived work (as durable, idempotent jobs), edits, forgets and purges all go
//! through it. Mechanisms read through read-only contexts and return their writes.
//!
//! - [`Engine`] (`engine`, `forget_matching`, `jobs`, `ingest`, `inspect`, `views`, `keys`):
//!   every operation a client needs, and the API keys a server checks.
//! - [`setup`]: the typed `mnemos.toml` and [`Engine::open`] from it.
//! - [`mechanism`]: the `Mechanism` contract and what it reads and returns.
//! - [`presets`]: named mechanisms with typed parameters, their registry, sweeps and variants.
//! - [`primitives`]: budgets, rendering, decay curves shared by mechanisms.
//! - [`render`]: plain-text renderings of results, memories, views and jobs for people and agents.
//! - [`migrate()`]: copy every user and API key from one store to another, verified and
//!   resumable.

mod engine;
mod error;
mod forget_matching;
mod idempotency;
mod ingest;
mod inspect;
mod jobs;
mod keys;
mod location;
pub mod mechanism;
mod memories;
pub mod migrate;
pub mod presets;
pub mod primitives;
pub mod render;
pub mod setup;
pub mod truth;
mod views;

pub use engine::{
    AddReport, Engine, EngineBuilder, EngineConfig, EngineInfo, ForgetReport, JobSettings, Reader,
    DEFAULT_PRESET,
};
pub use error::{EngineError, EngineResult};
pub use forget_matching::{
    ForgetCandidate, ForgetMatchReport, ForgetMatching, SelectedBy, DEFAULT_FORGET_LIMIT,
    FORGET_MIN_RELEVANCE, MAX_FORGET_LIMIT,
};
pub use idempotency::{request_turn_key, KeyConflict, MAX_REQUEST_KEY_LEN};
pub use ingest::{IngestOptions, IngestReport};
pub use inspect::{
    Browse, ForgetCause, JobCounts, MemorySort, Retention, RetentionPoint, StateCounts,
    TurnContext, TurnEntry, UserOverview,
};
pub use jobs::{JobProgress, JobReport, JobState, PendingJob};
pub use keys::{hash_api_key, NewApiKey, API_KEY_PREFIX};
pub use location::StoreLocation;
pub use mechanism::{
    Context, ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, MechanismStats, ObserveCtx,
    Recall, RecallRequest, ScorePart,
};
pub use memories::{
    question_parts, validate_query, AddedTurn, DenseSearch, EmbeddingStats, IndexStats, NewTurn,
    SearchRequest, SearchResults, SearchTimings, TurnStatus, MAX_QUERY_CHARS, MAX_QUERY_PARTS,
    SPEAKER_KEY,
};
pub use migrate::{
    migrate, KeyMigration, MigrationError, MigrationOutcome, MigrationReport, UserMigration,
};
pub use presets::{PresetInfo, PresetSpec};
pub use setup::{Config, EmbedderChoice, OpenOptions};
pub use views::{
    CalibrationView, ChainNodeView, ChainView, ChainsView, PersonaKeyView, PersonaValueView,
    TimelineNode, View, ViewKind,
};
