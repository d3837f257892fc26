//! mnemos engine: the one front door. An [`Engine`] holds one store, one embedder and one
//! memory model, runs a mechanism per agent, and is the only write path: turns, derived work
//! (as durable, idempotent jobs), edits, forgets and purges all go through it. Mechanisms read
//! through read-only contexts and return their writes.
//!
//! This crate depends on `mnemos-core` and `mnemos-text` only. The named mechanisms (presets)
//! live in `mnemos-presets` and reach an engine through the [`PresetFactory`] it is given;
//! turning a `mnemos.toml` into stores, models and an engine is `mnemos-setup`'s.
//!
//! - [`Engine`] (`engine`, `forget_matching`, `jobs`, `ingest`, `idempotency`, `keys`):
//!   every operation a client needs, and the API keys a server checks.
//! - [`mechanism`]: the `Mechanism` contract and what it reads and returns.
//! - [`preset`]: how presets are named, parameterised and built ([`PresetFactory`]).
//! - [`primitives`]: budgets, rendering, decay curves shared by mechanisms.
//! - [`provenance`]: what was derived from a turn, so forgetting it takes that along.
//! - [`truth`]: the write path's facts: supersession, forget requests, privacy.

mod context;
mod engine;
mod error;
mod forget_matching;
mod idempotency;
mod ingest;
mod jobs;
mod keys;
pub mod mechanism;
mod memories;
pub mod preset;
pub mod primitives;
pub mod provenance;
pub mod truth;

pub use engine::{
    AddReport, Engine, EngineBuilder, EngineConfig, EngineInfo, ForgetReport, JobSettings, Reader,
    DEFAULT_PRESET,
};
pub use error::{EngineError, EngineResult, KeyConflict};
pub use forget_matching::{
    ForgetCandidate, ForgetMatchReport, ForgetMatching, SelectedBy, DEFAULT_FORGET_LIMIT,
    FORGET_MIN_RELEVANCE, MAX_FORGET_LIMIT,
};
pub use idempotency::{request_turn_key, MAX_REQUEST_KEY_LEN};
pub use ingest::{IngestOptions, IngestReport};
pub use jobs::{JobProgress, JobReport, JobState, PendingJob};
pub use keys::{hash_api_key, NewApiKey, API_KEY_PREFIX};
pub use mechanism::{
    Context, ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, MechanismStats, ObserveCtx,
    Recall, RecallRequest, ScorePart,
};
pub use memories::{
    question_parts, validate_query, AddedTurn, DenseSearch, EmbeddingStats, IndexStats, NewTurn,
    SearchRequest, SearchResults, SearchTimings, TurnStatus, MAX_QUERY_CHARS, MAX_QUERY_PARTS,
    SPEAKER_KEY,
};
pub use mnemos_core::views::{
    CalibrationView, ChainNodeView, ChainView, ChainsView, PersonaKeyView, PersonaValueView,
    TimelineNode, View, ViewKind,
};
pub use mnemos_core::{ReembedOptions, ReembedReport, ReembedStep, SpaceMismatch, VectorSpace};
pub use preset::{PresetFactory, PresetInfo, PresetSpec};
