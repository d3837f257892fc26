//! A user past `[retrieval.ann] min_vectors` is searched exactly until the approximate index
//! is built in the background, then through it, with the exact path's scores, and writes made
//! after the build are found.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use mnemos_core::retrieval::{AnnConfig, AnnPhase, RetrievalConfig, RetrieverKind, ScopeIndex};
use mnemos_core::{EmbedderExt, Hit, MemoryStore, Scope, Store, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_offline::OfflineModel;

const WORDS: &[&str] = &[
    "garden", "violin", "sister", "harbour", "peanut", "rowing", "bakery", "cello", "tea",
    "hiking", "novel", "coffee", "piano", "beach", "museum", "soup", "train", "dog", "cat",
    "painting", "river", "market", "winter", "lantern", "bicycle", "chess", "orchard",
];

fn engine(store: Arc<dyn Store>, ann: AnnConfig) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    Engine::builder(store, embedder, model)
        .presets(Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset("retrieval"))
        .retrieval(RetrievalConfig {
            ann,
            ..RetrievalConfig::default()
        })
        .build()
        .unwrap()
}

fn text(n: usize) -> String {
    let mut state = n as u64 * 2654435761 + 17;
    let words: Vec<&str> = (0..6)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[(state >> 33) as usize % WORDS.len()]
        })
        .collect();
    format!("{} {n}", words.join(" "))
}

fn search(engine: &Engine, query: &str) -> Vec<Hit> {
    let mut request = SearchRequest::new(UserKey::new("t", "u").unwrap(), query);
    request.retriever = RetrieverKind::Dense;
    request.top_k = Some(10);
    request.min_relevance = Some(0.0);
    engine.search(&request).unwrap().hits
}

fn ids_and_scores(hits: &[Hit]) -> Vec<(String, f32)> {
    hits.iter()
        .map(|h| (h.memory.id.to_string(), h.score))
        .collect()
}

#[test]
fn searched_exactly_until_built_then_through_the_approximate_index() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let ann = AnnConfig {
        min_vectors: 400,
        ..AnnConfig::default()
    };
    let fast = engine(store.clone(), ann);
    let exact = engine(store, AnnConfig::off());
    let scope = Scope::new("t", "u", "bot", "s1").unwrap();
    let turns = (0..500)
        .map(|n| NewTurn::user(scope.clone(), text(n)))
        .collect();
    fast.add(turns).unwrap();
    let user = UserKey::new("t", "u").unwrap();
    let reader = fast.reader();
    assert_eq!(
        reader
            .with_index(&user, ScopeIndex::ann_status)
            .unwrap()
            .unwrap()
            .phase,
        AnnPhase::Exact
    );
    assert_eq!(
        exact
            .reader()
            .with_index(&user, ScopeIndex::ann_status)
            .unwrap()
            .unwrap()
            .phase,
        AnnPhase::Off
    );

    // The first search past the threshold starts the build and is answered exactly.
    let query = "violin harbour tea";
    assert_eq!(
        ids_and_scores(&search(&fast, query)),
        ids_and_scores(&search(&exact, query))
    );
    let mut status = reader
        .with_index(&user, ScopeIndex::ann_status)
        .unwrap()
        .unwrap();
    for _ in 0..6000 {
        if status.phase == AnnPhase::Ready {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        status = reader
            .with_index(&user, ScopeIndex::ann_status)
            .unwrap()
            .unwrap();
    }
    assert_eq!(status.phase, AnnPhase::Ready);
    assert_eq!(status.nodes, 500);
    assert_eq!(status.searches, 0);

    // Built: searches walk the graph, and rank as the exact scan does on this small set.
    for query in [
        "violin harbour tea",
        "cat river chess",
        "coffee piano beach",
    ] {
        assert_eq!(
            ids_and_scores(&search(&fast, query)),
            ids_and_scores(&search(&exact, query)),
            "{query}"
        );
    }
    assert!(
        reader
            .with_index(&user, ScopeIndex::ann_status)
            .unwrap()
            .unwrap()
            .searches
            >= 3
    );

    // A write after the build is in the graph at once.
    let late = "lantern orchard bicycle painting winter 9999";
    fast.add(vec![NewTurn::user(scope, late)]).unwrap();
    assert_eq!(
        reader
            .with_index(&user, ScopeIndex::ann_status)
            .unwrap()
            .unwrap()
            .nodes,
        501
    );
    let vector = fast.embedder().embed_query(late).unwrap();
    let nearest = reader
        .with_index(&user, |i| i.dense_nearest(&vector, 10))
        .unwrap()
        .unwrap();
    let exactly = reader
        .with_index(&user, |i| i.dense_nearest_exact(&vector, 10))
        .unwrap()
        .unwrap();
    assert_eq!(nearest, exactly);
    assert_eq!(search(&fast, late)[0].memory.text, late);
}
