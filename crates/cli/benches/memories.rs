//! Observe-one-turn and search-top-10 latency through the engine in scopes of 1k, 10k and 100k
//! memories, over a SQLite store, with the hashing and the MiniLM embedders.
//!
//! Corpus: real utterances from LoCoMo and MemDaily (../shared/data), cycled with a counter to
//! reach 100k. Queries: LoCoMo questions. `MNEMOS_BENCH_SIZES=1000,10000` limits the sizes;
//! MiniLM runs 1k and 10k only (100k would spend ~15 minutes embedding the setup corpus, and the
//! index work it adds over hash at 100k is the same 384-dim scan the hash rows measure).
//! `MNEMOS_BENCH_EMBEDDERS=hash` benches one embedder; `MNEMOS_BENCH_PRESET=retrieval` writes
//! with another preset than the engine's default (`default`: supersession, forget requests and
//! facts on the write path; `retrieval` stores and indexes turns only).

// Measurement code: a failed setup step ends the run with its message.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use mnemos_core::{Embedder, RetrieverKind, Scope, UserKey};
use mnemos_embed::{build_embedder, EmbedderConfig};
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn corpus() -> (Vec<String>, Vec<String>) {
    let locomo = mnemos_eval::load_locomo(&data_dir().join("locomo/locomo10_dev.json"))
        .expect("LoCoMo dev set");
    let memdaily =
        mnemos_eval::load_memdaily(&data_dir().join("memdaily/memdaily.json")).expect("MemDaily");
    let mut texts: Vec<String> = Vec::new();
    let mut queries = Vec::new();
    for c in &locomo.conversations {
        texts.extend(c.items.iter().map(|i| i.text.clone()));
        queries.extend(c.questions.iter().map(|q| q.text.clone()));
    }
    for c in &memdaily.conversations {
        texts.extend(c.items.iter().map(|i| i.text.clone()));
    }
    (texts, queries)
}

fn sizes() -> Vec<usize> {
    std::env::var("MNEMOS_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000])
}

/// The preset the engine writes with (`MNEMOS_BENCH_PRESET`, else the engine's default).
fn preset() -> String {
    std::env::var("MNEMOS_BENCH_PRESET")
        .unwrap_or_else(|_| mnemos_engine::DEFAULT_PRESET.to_string())
}

/// Whether to bench this embedder (`MNEMOS_BENCH_EMBEDDERS`, comma-separated; else all).
fn wanted(name: &str) -> bool {
    std::env::var("MNEMOS_BENCH_EMBEDDERS")
        .map(|list| list.split(',').any(|n| n.trim() == name))
        .unwrap_or(true)
}

fn build(
    embedder: Arc<dyn Embedder>,
    texts: &[String],
    size: usize,
    dir: &std::path::Path,
) -> Engine {
    // One file per embedder and size: a file another embedder filled would hold more than
    // `size` memories, and texts this one embedded while building its index.
    let file = format!("bench-{}-{size}.db", embedder.id());
    let store = SqliteStore::open(&dir.join(file), SqliteOptions::default()).expect("store");
    // Neither preset plans derived work: a write is the turn, its vector and indexes, and
    // with `default` the facts it states and what they supersede.
    let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
    let memories = Engine::builder(Arc::new(store), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset(&preset()))
        .build()
        .expect("engine");
    let scope = Scope::new("bench", "u", "a", "s").expect("scope");
    let turns: Vec<NewTurn> = (0..size)
        .map(|i| {
            let text = &texts[i % texts.len()];
            let text = if i < texts.len() {
                text.clone()
            } else {
                format!("{text} ({})", i / texts.len())
            };
            NewTurn::user(scope.clone(), text)
        })
        .collect();
    for chunk in turns.chunks(1_000) {
        memories.add(chunk.to_vec()).expect("ingest");
    }
    memories
}

fn bench(c: &mut Criterion) {
    let (texts, queries) = corpus();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut embedders: Vec<(&str, Arc<dyn Embedder>, usize)> = vec![(
        "hash",
        Arc::from(build_embedder(&EmbedderConfig::Hash { dim: 384 }, false, false).expect("hash")),
        usize::MAX,
    )];
    match build_embedder(
        &EmbedderConfig::Minilm {
            model_dir: None,
            runtime: Default::default(),
        },
        false,
        false,
    ) {
        Ok(e) => embedders.push(("minilm", Arc::from(e), 10_000)),
        Err(e) => eprintln!("MiniLM not available ({e}); run `mnemos models fetch` to bench it"),
    }
    let user = UserKey::new("bench", "u").expect("user");
    let scope = Scope::new("bench", "u", "a", "s").expect("scope");
    eprintln!("preset: {}", preset());
    for (name, embedder, max_size) in embedders.into_iter().filter(|(n, ..)| wanted(n)) {
        for size in sizes().into_iter().filter(|s| *s <= max_size) {
            let memories = build(embedder.clone(), &texts, size, dir.path());
            let mut group = c.benchmark_group(name);
            group.sample_size(if name == "minilm" { 30 } else { 100 });
            let mut qi = 0usize;
            for retriever in [RetrieverKind::Hybrid, RetrieverKind::Bm25] {
                group.bench_function(
                    BenchmarkId::new(format!("search_top10_{}", retriever.name()), size),
                    |b| {
                        b.iter(|| {
                            let mut request = SearchRequest::new(
                                user.clone(),
                                queries[qi % queries.len()].clone(),
                            );
                            request.retriever = retriever;
                            qi += 1;
                            memories.search(&request).expect("search")
                        })
                    },
                );
            }
            let mut ti = 0usize;
            group.bench_function(BenchmarkId::new("observe_one_turn", size), |b| {
                b.iter(|| {
                    ti += 1;
                    // A text of its own: the engine does not embed a text the user's index
                    // already holds, and a new turn's cost is what this measures.
                    let text = format!("{} (observed {ti})", texts[ti % texts.len()]);
                    let turn = NewTurn::user(scope.clone(), text);
                    memories.add(vec![turn]).expect("observe")
                })
            });
            group.finish();
        }
    }
}

// No plots: criterion's plotters backend is built with the workspace's `ab_glyph` text feature
// (the evaluation charts'), which only knows fonts registered at run time; criterion registers
// none, so its first chart panics with `FontUnavailable`. The numbers are all we read.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
