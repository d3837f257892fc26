//! Dense search in the store's vector index (PostgreSQL with pgvector) ranks like the exact
//! in-process search over the same turns, follows writes and forgets made through another
//! engine on the same database, and is chosen, refused or reported as configured.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::Arc;

use mnemos_core::retrieval::{RetrievalConfig, RetrieverKind, VectorPlacement};
use mnemos_core::{Hit, MemoryStore, Scope, Store, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{DenseSearch, Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_offline::OfflineModel;
use mnemos_store_postgres::PostgresStore;
use mnemos_testkit::postgres::shared_server;

const TEXTS: &[&str] = &[
    "I adopted a grey cat named Pixel last spring.",
    "My sister teaches chemistry at a school in Lyon.",
    "We hiked the ridge above the lake at dawn on Saturday.",
    "我周末在杭州西湖边骑自行车。",
    "妈妈做的红烧肉是我最喜欢的菜。",
    "The violin lessons start again in September, on Tuesdays.",
    "Tomorrow I fly to Osaka for a conference on robotics.",
    "我的车钥匙又找不到了，可能忘在办公室。",
    "Long notes get several windows. The first window talks about gardening and tomatoes. \
     The second window is about a harbour town where fishing boats leave before sunrise. \
     The third window describes an old library with a spiral staircase and dusty atlases. \
     The fourth window mentions a jazz trio that plays on Thursday evenings near the station.",
];

const QUERIES: &[&str] = &[
    "what is the cat called",
    "where does my sister work",
    "西湖骑车",
    "spiral staircase library",
    "when are violin lessons",
];

fn engine(store: Arc<dyn Store>, vectors: VectorPlacement) -> Result<Engine, String> {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset("retrieval"))
        .retrieval(RetrievalConfig {
            vectors,
            ..RetrievalConfig::default()
        })
        .build()
        .map_err(|e| e.to_string())
}

fn pgvector_store() -> Arc<dyn Store> {
    let url = shared_server().unwrap().create_database().unwrap();
    Arc::new(PostgresStore::connect(&url).unwrap())
}

fn add_all(engine: &Engine, user: &str) {
    let scope = Scope::new("t", user, "bot", "s1").unwrap();
    let turns = TEXTS
        .iter()
        .map(|text| NewTurn::user(scope.clone(), *text))
        .collect();
    engine.add(turns).unwrap();
}

fn search(engine: &Engine, user: &str, query: &str, retriever: RetrieverKind) -> Vec<Hit> {
    let mut request = SearchRequest::new(UserKey::new("t", user).unwrap(), query);
    request.retriever = retriever;
    request.top_k = Some(5);
    engine.search(&request).unwrap().hits
}

/// Hits as (text, dense score rounded to 1e-4), in rank order.
fn texts_and_dense(hits: &[Hit]) -> Vec<(String, Option<i64>)> {
    hits.iter()
        .map(|h| {
            let dense = h
                .breakdown
                .dense
                .map(|d| (d.score * 10_000.0).round() as i64);
            (h.memory.text.clone(), dense)
        })
        .collect()
}

#[test]
fn the_store_index_ranks_like_exact_in_process_search() {
    let in_store = engine(pgvector_store(), VectorPlacement::Auto).unwrap();
    assert!(
        matches!(in_store.info().dense_search, DenseSearch::Store { ref index } if index.contains("pgvector")),
        "{:?}",
        in_store.info().dense_search
    );
    let in_process = engine(Arc::new(MemoryStore::new()), VectorPlacement::Auto).unwrap();
    assert!(!in_process.info().dense_search.in_store());
    for e in [&in_store, &in_process] {
        add_all(e, "ann");
        add_all(e, "bob");
    }
    for query in QUERIES {
        for retriever in [RetrieverKind::Dense, RetrieverKind::Hybrid] {
            let there = search(&in_store, "ann", query, retriever);
            let here = search(&in_process, "ann", query, retriever);
            assert_eq!(
                texts_and_dense(&there),
                texts_and_dense(&here),
                "{query} ({retriever:?})"
            );
            assert!(there.iter().all(|h| h.memory.scope.user == "ann"));
        }
    }
}

#[test]
fn another_engine_on_the_database_sees_writes_and_forgets_at_once() {
    let store = pgvector_store();
    let writer = engine(store.clone(), VectorPlacement::Auto).unwrap();
    let other = engine(store, VectorPlacement::Auto).unwrap();
    add_all(&writer, "ann");
    let found = search(
        &other,
        "ann",
        "spiral staircase library",
        RetrieverKind::Dense,
    );
    assert!(
        found[0].memory.text.contains("spiral staircase"),
        "{found:?}"
    );
    let user = UserKey::new("t", "ann").unwrap();
    writer.forget(&user, found[0].memory.id, "test").unwrap();
    let after = search(
        &other,
        "ann",
        "spiral staircase library",
        RetrieverKind::Dense,
    );
    assert!(
        after.iter().all(|h| h.memory.id != found[0].memory.id),
        "a forgotten memory was found: {after:?}"
    );
}

#[test]
fn placement_is_configurable_and_reported() {
    let forced = engine(pgvector_store(), VectorPlacement::InProcess).unwrap();
    match forced.info().dense_search {
        DenseSearch::InProcess { why } => assert!(why.contains("in_process"), "{why}"),
        other => panic!("{other:?}"),
    }
    add_all(&forced, "ann");
    let hits = search(
        &forced,
        "ann",
        "what is the cat called",
        RetrieverKind::Dense,
    );
    assert!(hits[0].memory.text.contains("Pixel"), "{hits:?}");

    let Err(error) = engine(Arc::new(MemoryStore::new()), VectorPlacement::Store) else {
        panic!("a store without a vector index was accepted for retrieval.vectors = store");
    };
    assert!(error.contains("retrieval.vectors"), "{error}");
    assert!(error.contains("no vector index"), "{error}");
}
