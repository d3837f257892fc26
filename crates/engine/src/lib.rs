//! mnemos engine: mechanisms (memory presets) over one store, one embedder and one memory
//! model, with derived work as durable, idempotent jobs.
//!
//! - [`mechanism`]: the `Mechanism` contract and what it reads and returns.
//! - [`engine`]: `Engine`, the API applications embed (add, recall, search, CRUD, jobs).
//! - [`presets`]: named mechanisms with typed parameters, and their registry.
//! - [`primitives`]: budgets, rendering, decay curves shared by mechanisms.

pub mod engine;
pub mod error;
pub mod mechanism;
pub mod presets;
pub mod primitives;

pub use engine::{AddReport, Engine, EngineConfig, JobReport, JobSettings};
pub use error::{EngineError, EngineResult};
pub use mechanism::{
    Context, ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, MechanismStats, ObserveCtx,
    Recall, RecallRequest, ScorePart,
};
pub use presets::{PresetInfo, PresetSpec};
