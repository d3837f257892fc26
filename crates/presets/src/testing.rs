//! Fixtures the preset unit tests share: an engine over the in-memory store, the hash
//! embedder, the offline model and a fixed clock.

use std::sync::Arc;

use mnemos_core::{
    Embedder, FixedClock, Memory, MemoryFilter, MemoryStore, StateFilter, Timestamp, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_offline::OfflineModel;

use crate::PresetSpec;
use mnemos_engine::mechanism::{collect_all, Context, RecallRequest};
use mnemos_engine::{Engine, EngineConfig, JobSettings};

/// The fixed clock's time (2023-11-14T22:13:20Z).
pub const T0: i64 = 1_700_000_000_000;

/// An engine running `preset` with `params` (TOML), jobs inline or deferred.
pub fn test_engine(preset: &str, params: &str, inline: bool) -> Engine {
    test_engine_and_store(preset, params, inline).0
}

/// [`test_engine`] and its store, for tests that write around the engine (a foreign write).
pub fn test_engine_and_store(
    preset: &str,
    params: &str,
    inline: bool,
) -> (Engine, Arc<MemoryStore>) {
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::default());
    let config = EngineConfig {
        preset: PresetSpec {
            name: preset.into(),
            params: toml::from_str(params).unwrap(),
        },
        jobs: JobSettings {
            inline,
            ..JobSettings::default()
        },
        ..EngineConfig::default()
    };
    let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::builder(store.clone(), embedder, model)
        .presets(Arc::new(crate::Presets))
        .clock(Arc::new(FixedClock(Timestamp(T0))))
        .config(config)
        .build()
        .unwrap();
    (engine, store)
}

/// Every memory of `user` of one kind tag in one state, in creation order.
pub fn memories_of(engine: &Engine, user: &UserKey, kind: &str, state: StateFilter) -> Vec<Memory> {
    collect_all(
        engine.reader().store(),
        user,
        &MemoryFilter {
            kinds: vec![kind.parse().unwrap()],
            state,
            ..MemoryFilter::default()
        },
    )
    .unwrap()
}

/// `agent`'s recall for `query` within `budget` tokens, over all sessions.
pub fn recall(engine: &Engine, user: &UserKey, agent: &str, query: &str, budget: usize) -> Context {
    engine
        .recall(
            user,
            agent,
            &RecallRequest {
                query: query.into(),
                token_budget: budget,
                session: None,
                as_of: None,
                min_relevance: None,
                deadline: mnemos_core::Deadline::NONE,
            },
        )
        .unwrap()
}
