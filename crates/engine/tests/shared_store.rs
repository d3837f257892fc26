//! Two engines over one store, as two processes or servers would share it: a write through one
//! is found through the other by the next search, and (on PostgreSQL, whose data versions are
//! per user) only the written user's index is rebuilt.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemos_core::Scope;
use mnemos_core::{Store, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_offline::OfflineModel;
use mnemos_store_postgres::PostgresStore;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};
use mnemos_testkit::postgres::shared_system_server;

fn engine(store: Arc<dyn Store>) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset("retrieval"))
        .build()
        .unwrap()
}

fn add(engine: &Engine, user: &str, text: &str) {
    let scope = Scope::new("t", user, "bot", "s1").unwrap();
    engine.add(vec![NewTurn::user(scope, text)]).unwrap();
}

fn found(engine: &Engine, user: &str, query: &str) -> Vec<String> {
    let request = SearchRequest::new(UserKey::new("t", user).unwrap(), query);
    let hits = engine.search(&request).unwrap().hits;
    hits.into_iter().map(|h| h.memory.text).collect()
}

fn builds(engine: &Engine) -> u64 {
    engine.reader().last_build_stats().builds
}

/// Both engines know ann and bob; then `writer` adds to ann and `reader` must find it at once.
fn a_write_through_one_is_found_through_the_other(writer: &Engine, reader: &Engine) {
    add(writer, "ann", "I keep bees on the roof");
    add(writer, "bob", "My bicycle has a flat tyre");
    assert_eq!(found(reader, "ann", "bees")[0], "I keep bees on the roof");
    assert_eq!(
        found(reader, "bob", "bicycle")[0],
        "My bicycle has a flat tyre"
    );
    add(writer, "ann", "The lighthouse keeper waved at us");
    let hits = found(reader, "ann", "lighthouse keeper");
    assert!(
        hits.first().is_some_and(|t| t.contains("lighthouse")),
        "{hits:?}"
    );
}

#[test]
fn engines_sharing_a_sqlite_file_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let open = || -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap())
    };
    let (writer, reader) = (engine(open()), engine(open()));
    a_write_through_one_is_found_through_the_other(&writer, &reader);
}

#[test]
fn engines_sharing_postgres_rebuild_only_the_written_user() {
    let url = shared_system_server()
        .expect("Debian's PostgreSQL (scripts/test.sh installs it)")
        .create_database()
        .unwrap();
    let open = || -> Arc<dyn Store> { Arc::new(PostgresStore::connect(&url).unwrap()) };
    let (writer, reader) = (engine(open()), engine(open()));
    a_write_through_one_is_found_through_the_other(&writer, &reader);
    // Ann was rebuilt for the search above; bob's index is as it was.
    let before = builds(&reader);
    assert_eq!(
        found(&reader, "bob", "bicycle")[0],
        "My bicycle has a flat tyre"
    );
    assert_eq!(
        builds(&reader),
        before,
        "bob's index was rebuilt for ann's write"
    );
    // The reader's own writes are applied in place: nobody is rebuilt.
    add(&reader, "bob", "The tyre is fixed now");
    assert_eq!(
        found(&reader, "bob", "tyre fixed")[0],
        "The tyre is fixed now"
    );
    assert_eq!(found(&reader, "ann", "bees")[0], "I keep bees on the roof");
    assert_eq!(builds(&reader), before, "own writes rebuilt an index");
    // The writer sees the reader's write of bob, and rebuilds bob alone.
    let writer_before = builds(&writer);
    assert_eq!(
        found(&writer, "bob", "tyre fixed")[0],
        "The tyre is fixed now"
    );
    assert_eq!(found(&writer, "ann", "bees")[0], "I keep bees on the roof");
    assert_eq!(builds(&writer), writer_before + 1);
    // A purge through one engine empties the other's index of that user.
    writer.purge(&UserKey::new("t", "bob").unwrap()).unwrap();
    assert!(found(&reader, "bob", "tyre").is_empty());
}
