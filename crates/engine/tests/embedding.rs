//! No wasted embedding through the front door: identical texts of one write are embedded once,
//! a text already embedded for the user (same embedder) is never embedded again — also by a
//! second process over the same database — and nothing is shared across users or embedders
//! (a move into another embedder's space embeds every text again).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::path::Path;
use std::sync::Arc;

use mnemos_testkit::embedders::Recording;

use mnemos_core::{Embedder, Scope, Store};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{
    EmbeddingStats, Engine, EngineBuilder, EngineConfig, IngestOptions, NewTurn, ReembedOptions,
    VectorSpace,
};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

/// An engine over the SQLite file at `path` (a new one is another process's view of it).
fn engine(path: &Path, embedder: &Arc<Recording>) -> Engine {
    builder(path, embedder).build().unwrap()
}

fn builder(path: &Path, embedder: &Arc<Recording>) -> EngineBuilder {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(path, SqliteOptions::default()).unwrap());
    let model = Arc::new(OfflineModel::new(Arc::new(HashEmbedder::default())));
    Engine::builder(store, embedder.clone(), model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset("retrieval"))
}

fn turns(user: &str, texts: &[&str]) -> Vec<NewTurn> {
    let scope = Scope::new("t", user, "bot", "s1").unwrap();
    texts
        .iter()
        .map(|text| NewTurn::user(scope.clone(), *text))
        .collect()
}

fn stats(engine: &Engine) -> (u64, u64, u64) {
    let EmbeddingStats {
        embedded,
        repeated,
        reused,
    } = engine.reader().embedding_stats();
    (embedded, repeated, reused)
}

#[test]
fn each_text_is_embedded_once_per_user_and_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let embedder = Recording::wrap(Arc::new(HashEmbedder::default()));
    let first = engine(&path, &embedder);
    let options = IngestOptions {
        batch: 8,
        close_sessions: false,
        workers: 1,
    };
    let texts = ["I like tea", "I like tea", "I like coffee", "I like tea"];
    first
        .ingest(turns("ann", &texts), &options, &mut |_| {})
        .unwrap();
    assert_eq!(embedder.take(), vec!["I like tea", "I like coffee"]);
    assert_eq!(stats(&first), (2, 2, 0));

    // A later write of the same text for the same user embeds nothing.
    first.add(turns("ann", &["I like tea"])).unwrap();
    assert!(embedder.take().is_empty());
    assert_eq!(stats(&first), (2, 2, 1));

    // Nor does another process over the same database (its index comes from stored vectors).
    let second = engine(&path, &embedder);
    second
        .add(turns("ann", &["I like coffee", "I like milk"]))
        .unwrap();
    assert_eq!(embedder.take(), vec!["I like milk"]);
    assert_eq!(stats(&second), (1, 0, 1));

    // Another user's identical text is embedded for them.
    second.add(turns("bob", &["I like tea"])).unwrap();
    assert_eq!(embedder.take(), vec!["I like tea"]);

    // Another embedder reuses none of these vectors: a move into its space (the database is
    // bound to one) embeds each user's distinct stored texts itself, once, and its engine then
    // reuses its own.
    let other = Recording::wrap(Arc::new(HashEmbedder::new(128).unwrap()));
    assert_ne!(other.id(), embedder.id());
    let moving = builder(&path, &other)
        .vector_space(VectorSpace::Moving)
        .build()
        .unwrap();
    moving
        .reembed(ReembedOptions::default(), &mut |_| {})
        .unwrap();
    let mut embedded = other.take();
    embedded.sort();
    assert_eq!(
        embedded,
        vec!["I like coffee", "I like milk", "I like tea", "I like tea"]
    );
    let third = engine(&path, &other);
    third.add(turns("ann", &["I like tea"])).unwrap();
    assert!(other.take().is_empty());
    let hits = third
        .search(&mnemos_engine::SearchRequest::new(
            mnemos_core::UserKey::new("t", "ann").unwrap(),
            "coffee",
        ))
        .unwrap()
        .hits;
    assert!(hits[0].memory.text.contains("coffee"));
}
