//! Relevance through the front door: every hit carries a calibrated relevance with its
//! explanation, `Engine::search` drops hits under the configured floor unless the request names
//! its own, and bad floors are the caller's mistake.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemos_core::retrieval::{RetrievalConfig, DEFAULT_MIN_RELEVANCE, RELEVANCE_FEATURES};
use mnemos_core::{ErrorClass, MemoryStore, Scope, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, NewTurn, SearchRequest};
use mnemos_offline::OfflineModel;

fn engine(retrieval: RetrievalConfig) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .retrieval(retrieval)
        .build()
        .unwrap()
}

fn ann() -> UserKey {
    UserKey::new("t", "ann").unwrap()
}

/// An engine whose user holds `texts`, one turn each.
fn holding(retrieval: RetrievalConfig, texts: &[&str]) -> Engine {
    let engine = engine(retrieval);
    let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
    let turns = texts
        .iter()
        .map(|t| NewTurn::user(scope.clone(), *t))
        .collect();
    engine.add(turns).unwrap();
    engine
}

fn search(engine: &Engine, query: &str, floor: Option<f32>) -> Vec<(String, f32)> {
    let mut request = SearchRequest::new(ann(), query);
    request.min_relevance = floor;
    let results = engine.search(&request).unwrap();
    results
        .hits
        .into_iter()
        .map(|hit| {
            let signal = hit
                .breakdown
                .relevance
                .expect("every hit explains its relevance");
            assert_eq!(signal.features.len(), RELEVANCE_FEATURES);
            assert_eq!(signal.probability, hit.relevance);
            assert!((0.0..=1.0).contains(&hit.relevance));
            (hit.memory.text, hit.relevance)
        })
        .collect()
}

#[test]
fn an_unrelated_query_finds_nothing_and_a_matching_one_finds_the_memory() {
    let engine = holding(RetrievalConfig::default(), &["User prefers dark mode."]);
    assert!(engine.notes().is_empty(), "{:?}", engine.notes());
    assert!(search(&engine, "quantum chromodynamics research papers", None).is_empty());
    assert!(search(&engine, "量子色动力学的研究论文", None).is_empty());

    // Without a floor the memory comes back, with a relevance that says what it is worth.
    let unfloored = search(&engine, "quantum chromodynamics research papers", Some(0.0));
    assert_eq!(unfloored.len(), 1);
    assert!(unfloored[0].1 < DEFAULT_MIN_RELEVANCE, "{unfloored:?}");

    let found = search(&engine, "Does the user prefer dark mode?", None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].1 > 100.0 * unfloored[0].1,
        "{found:?} {unfloored:?}"
    );
}

#[test]
fn the_floor_drops_what_is_under_it_and_keeps_the_rest() {
    let texts = [
        "My sister lives in Berlin.",
        "I am allergic to peanuts.",
        "The quarterly report is due on Friday.",
    ];
    let engine = holding(RetrievalConfig::default(), &texts);
    let all = search(&engine, "Where does my sister live?", Some(0.0));
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].0, texts[0]);
    // A floor between the best hit's relevance and the others' keeps the best alone.
    let others = all[1..].iter().map(|h| h.1).fold(0.0f32, f32::max);
    assert!(all[0].1 > others, "{all:?}");
    let between = (all[0].1 + others) / 2.0;
    let kept = search(&engine, "Where does my sister live?", Some(between));
    assert_eq!(kept, all[..1].to_vec());
    assert!(search(&engine, "Where does my sister live?", Some(1.0)).is_empty());

    // A floor of 0 in the config keeps every hit of a public search that names none.
    let open = holding(
        RetrievalConfig {
            min_relevance: 0.0,
            ..RetrievalConfig::default()
        },
        &texts,
    );
    assert_eq!(search(&open, "quantum chromodynamics", None).len(), 3);
}

#[test]
fn invalid_floors_are_the_caller_s_mistake() {
    let engine = holding(RetrievalConfig::default(), &["User prefers dark mode."]);
    for bad in [-0.1, f32::NAN, 1.5] {
        let mut request = SearchRequest::new(ann(), "dark mode");
        request.min_relevance = Some(bad);
        let error = engine.search(&request).unwrap_err();
        assert_eq!(error.class(), ErrorClass::InvalidInput, "{error}");
        assert!(error.to_string().contains("min_relevance"), "{error}");
    }
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let built = Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .retrieval(RetrievalConfig {
            min_relevance: -1.0,
            ..RetrievalConfig::default()
        })
        .build();
    let error = built.err().expect("a negative floor is refused");
    assert!(
        error.to_string().contains("retrieval.min_relevance"),
        "{error}"
    );
}

#[test]
fn an_embedder_without_fitted_weights_is_named_in_the_notes() {
    let embedder = Arc::new(HashEmbedder::new(64).unwrap());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let engine = Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .build()
        .unwrap();
    let note = engine.notes().iter().find(|n| n.starts_with("relevance:"));
    let note = note.expect("the stand-in weights are reported");
    assert!(
        note.contains("hash-v1-64") && note.contains("hash-v1-384"),
        "{note}"
    );
}

#[test]
fn a_chinese_query_is_judged_by_the_model_for_cjk_queries() {
    use mnemos_core::retrieval::RelevanceModel;
    // A model that finds nothing relevant, for CJK queries only: English keeps its hits, a
    // Chinese query on the same store gets none.
    let nothing = RelevanceModel {
        weights: vec![0.0; RELEVANCE_FEATURES],
        bias: -50.0,
    };
    let texts = ["My sister lives in Berlin.", "我妹妹住在上海。"];
    let engine = holding(
        RetrievalConfig {
            relevance_cjk: Some(nothing),
            ..RetrievalConfig::default()
        },
        &texts,
    );
    let english = search(&engine, "Where does my sister live?", None);
    assert_eq!(english[0].0, texts[0]);
    assert!(search(&engine, "我妹妹住在哪里？", None).is_empty());
    // Without one (the hash embedder's cosine is lexical, so it has none), the Chinese query
    // finds its memory.
    let plain = holding(RetrievalConfig::default(), &texts);
    assert_eq!(search(&plain, "我妹妹住在哪里？", None)[0].0, texts[1]);

    let broken = RetrievalConfig {
        relevance_cjk: Some(RelevanceModel {
            weights: vec![1.0; 2],
            bias: 0.0,
        }),
        ..RetrievalConfig::default()
    };
    let error = broken.validate().unwrap_err().to_string();
    assert!(error.contains("retrieval.relevance_cjk"), "{error}");
}
