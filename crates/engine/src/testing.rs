//! Fixtures the engine's unit tests share: an engine over the in-memory store, the hash
//! embedder, the offline model and a fixed clock, running a mechanism that keeps raw turns
//! only (the named presets live in their own crate, which depends on this one).

use std::sync::Arc;

use mnemos_core::{Embedder, FixedClock, Timestamp, Turn};
use mnemos_embed::HashEmbedder;
use mnemos_offline::OfflineModel;

use crate::engine::Engine;
use crate::error::EngineResult;
use crate::mechanism::{JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest};

/// The fixed clock's time (2023-11-14T22:13:20Z).
pub const T0: i64 = 1_700_000_000_000;

/// Keeps the raw turns the engine stores anyway, plans nothing, recalls nothing.
pub struct TurnsOnly;

impl Mechanism for TurnsOnly {
    fn name(&self) -> &str {
        "turns-only"
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn recall(&self, _ctx: &MechanismCtx, _request: &RecallRequest) -> EngineResult<Recall> {
        Ok(Recall::default())
    }
}

/// An engine running [`TurnsOnly`] with jobs inline.
pub fn test_engine() -> Engine {
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
    Engine::builder(Arc::new(mnemos_core::MemoryStore::new()), embedder, model)
        .clock(Arc::new(FixedClock(Timestamp(T0))))
        .default_mechanism(Arc::new(TurnsOnly))
        .build()
        .unwrap()
}
