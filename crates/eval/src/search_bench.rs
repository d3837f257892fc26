//! `mnemos bench search`: search latency over one user with many memories, on whatever store
//! and dense-search placement the engine was opened with, and the recall of the store's
//! vector index against exact brute force over the same vectors.
//!
//! The texts are synthetic (a fixed generator over a vocabulary of a few hundred English and
//! Chinese words, so no two memories are alike and the same settings load the same data), so
//! the numbers measure the store and the index, not a dataset. A user already holding the
//! memories is reused: a kept database is loaded once.

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use mnemos_core::embed::cosine;
use mnemos_core::retrieval::RetrieverKind;
use mnemos_core::{EmbedderExt, MemoryFilter, MemoryId, Page, Scope, UserKey, VectorRow};
use mnemos_engine::{Engine, NewTurn, SearchRequest};

use crate::error::EvalError;
use crate::metrics::{LatencyStats, LatencySummary};
use crate::search_profile::{self, StageProfile};

/// What to measure.
#[derive(Clone, Debug, Serialize)]
pub struct SearchBenchSettings {
    pub tenant: String,
    /// Memories of the searched user.
    pub memories: usize,
    /// Searches per retriever (and queries of the recall check).
    pub queries: usize,
    /// Hits per search, and the k of recall@k.
    pub top_k: usize,
    /// Also profile the hybrid searches stage by stage.
    pub profile: bool,
}

/// The results.
#[derive(Clone, Debug, Serialize)]
pub struct SearchBenchReport {
    pub settings: SearchBenchSettings,
    /// `sqlite`, `postgres` or `memory`.
    pub store: String,
    /// Where dense search ran (`EngineInfo::dense_search`, in words).
    pub dense_search: String,
    pub embedder: String,
    pub preload_seconds: f64,
    /// Opening the user's index (cache build) after the preload, in seconds.
    pub warm_seconds: f64,
    pub hybrid: LatencySummary,
    pub dense: LatencySummary,
    /// Recall@k of the store's vector index against exact brute force over the user's stored
    /// vectors; `None` when dense search runs in process (it is the brute force).
    pub index_recall: Option<f64>,
    /// Where a hybrid search's time goes, stage by stage (with `profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<StageProfile>,
}

/// Words the generator draws from: enough that no two memories repeat.
fn vocabulary() -> Vec<String> {
    const STEMS: &[&str] = &[
        "garden", "violin", "sister", "harbour", "peanut", "rowing", "bakery", "cello", "tea",
        "hiking", "novel", "coffee", "piano", "beach", "museum", "soup", "train", "dog", "cat",
        "painting", "river", "market", "winter", "lantern", "bicycle", "chess", "orchard",
        "library", "festival", "mountain", "杭州", "咖啡", "妹妹", "工作", "猫", "火锅", "跑步",
        "电影", "音乐", "北京", "周末", "医生", "学校", "花园", "旅行", "晚饭", "朋友", "雨天",
    ];
    const ENDINGS: &[&str] = &["", "s", "ing", "er", "house", "time", "side", "work"];
    let mut words = Vec::new();
    for stem in STEMS {
        for ending in ENDINGS {
            if stem.is_ascii() || ending.is_empty() {
                words.push(format!("{stem}{ending}"));
            }
        }
    }
    words
}

/// A small deterministic generator: the same settings load the same text.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }

    fn words(&mut self, vocabulary: &[String], n: usize) -> String {
        let words: Vec<&str> = (0..n)
            .map(|_| vocabulary[self.below(vocabulary.len())].as_str())
            .collect();
        words.join(" ")
    }
}

const BENCH_USER: &str = "search-bench";

fn invalid(error: impl std::fmt::Display) -> EvalError {
    EvalError::Invalid(format!("bench search: {error}"))
}

/// Give the bench user `settings.memories` memories (what is there already counts).
fn preload(
    engine: &Engine,
    user: &UserKey,
    settings: &SearchBenchSettings,
) -> Result<(), EvalError> {
    let vocabulary = vocabulary();
    let have = if engine.has_user(user)? {
        engine
            .list(user, &MemoryFilter::active(), Page::first(1))?
            .total
    } else {
        0
    };
    let scope = Scope::new(&user.tenant, &user.user, "default", "bench").map_err(invalid)?;
    let mut rng = Lcg(7 + have as u64);
    let mut serial = have;
    while serial < settings.memories {
        let batch = (settings.memories - serial).min(1000);
        let turns = (serial..serial + batch)
            .map(|n| {
                let text = format!("{} {}", rng.words(&vocabulary, 8), n);
                NewTurn::user(scope.clone(), text)
            })
            .collect();
        engine.add(turns)?;
        serial += batch;
    }
    // Search a caught-up index (a store may defer indexing what was just written).
    engine.index_backlog(&mut |_| {})?;
    Ok(())
}

/// Search `queries` once each with `retriever`; their latencies.
fn time_searches(
    engine: &Engine,
    user: &UserKey,
    queries: &[String],
    retriever: RetrieverKind,
    top_k: usize,
) -> Result<LatencySummary, EvalError> {
    let mut stats = LatencyStats::new();
    for query in queries {
        let mut request = SearchRequest::new(user.clone(), query.clone());
        request.retriever = retriever;
        request.top_k = Some(top_k);
        let started = Instant::now();
        engine.search(&request)?;
        stats.push(started.elapsed());
    }
    stats
        .summary()
        .ok_or_else(|| invalid("no searches were timed"))
}

/// The `k` memories whose best window is nearest to `query`, exactly.
fn exact_nearest(rows: &[VectorRow], query: &[f32], k: usize) -> Vec<MemoryId> {
    let dim = query.len();
    let mut scored: Vec<(MemoryId, f32)> = rows
        .iter()
        .map(|row| {
            let best = row
                .vector
                .chunks_exact(dim)
                .map(|w| cosine(query, w) as f32)
                .fold(f32::MIN, f32::max);
            (row.memory_id, best)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().take(k).map(|(id, _)| id).collect()
}

/// Recall@k of the store's index against brute force, asked as the engine asks it (for
/// `candidates` memories, of which the first k count).
fn index_recall(
    engine: &Engine,
    user: &UserKey,
    queries: &[String],
    settings: &SearchBenchSettings,
    candidates: usize,
) -> Result<Option<f64>, EvalError> {
    let reader = engine.reader();
    let store = reader.store();
    let Some(search) = store.vector_search() else {
        return Ok(None);
    };
    if !engine.info().dense_search.in_store() {
        return Ok(None);
    }
    let model = engine.embedder().id().to_string();
    let rows = store.vectors(user, &model)?;
    let k = settings.top_k;
    let mut found = 0usize;
    let mut wanted = 0usize;
    for query in queries {
        let vector = engine.embedder().embed_query(query)?;
        let exact: HashSet<MemoryId> = exact_nearest(&rows, &vector, k).into_iter().collect();
        let ann = search.nearest(user, &model, &vector, candidates)?;
        found += ann
            .iter()
            .take(k)
            .filter(|(id, _)| exact.contains(id))
            .count();
        wanted += exact.len();
    }
    Ok((wanted > 0).then(|| found as f64 / wanted as f64))
}

/// Load, warm, and measure (see the module docs).
pub fn run(
    engine: &Engine,
    settings: SearchBenchSettings,
    candidates: usize,
) -> Result<SearchBenchReport, EvalError> {
    if settings.memories == 0 || settings.queries == 0 || settings.top_k == 0 {
        return Err(invalid("memories, queries and top_k must be positive"));
    }
    let user = UserKey::new(settings.tenant.clone(), BENCH_USER).map_err(invalid)?;
    let started = Instant::now();
    preload(engine, &user, &settings)?;
    let preload_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    engine.reader().warm(&user)?;
    let warm_seconds = started.elapsed().as_secs_f64();

    let vocabulary = vocabulary();
    let mut rng = Lcg(99);
    let queries: Vec<String> = (0..settings.queries)
        .map(|_| rng.words(&vocabulary, 3))
        .collect();
    let hybrid = time_searches(
        engine,
        &user,
        &queries,
        RetrieverKind::Hybrid,
        settings.top_k,
    )?;
    let dense = time_searches(
        engine,
        &user,
        &queries,
        RetrieverKind::Dense,
        settings.top_k,
    )?;
    let index_recall = index_recall(engine, &user, &queries, &settings, candidates)?;
    let profile = if settings.profile {
        Some(search_profile::profile(
            engine,
            &user,
            &queries,
            settings.top_k,
        )?)
    } else {
        None
    };
    let info = engine.info();
    Ok(SearchBenchReport {
        settings,
        store: info.store.kind.name().to_string(),
        dense_search: info.dense_search.to_string(),
        embedder: info.embedder,
        preload_seconds,
        warm_seconds,
        hybrid,
        dense,
        index_recall,
        profile,
    })
}

/// The report as a few lines of text.
pub fn render(report: &SearchBenchReport) -> String {
    let row = |name: &str, l: &LatencySummary| {
        format!(
            "{name:<7} p50 {:>8.2} ms  p95 {:>8.2} ms  p99 {:>8.2} ms  ({} searches)\n",
            l.p50_ms, l.p95_ms, l.p99_ms, l.count
        )
    };
    let mut out = format!(
        "bench search: {} memories of one user, {} store, {} embedder\n\
         dense search {}\n\
         preload {:.1} s, index warm-up {:.2} s\n",
        report.settings.memories,
        report.store,
        report.embedder,
        report.dense_search,
        report.preload_seconds,
        report.warm_seconds,
    );
    out.push_str(&row("hybrid", &report.hybrid));
    out.push_str(&row("dense", &report.dense));
    match report.index_recall {
        Some(recall) => out.push_str(&format!(
            "recall@{} of the store's index against brute force: {recall:.4}\n",
            report.settings.top_k
        )),
        None => out.push_str("recall: dense search is exact (in process)\n"),
    }
    if let Some(profile) = &report.profile {
        out.push_str(&search_profile::render(profile));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_repeats_itself_and_its_words_are_many() {
        let vocabulary = vocabulary();
        assert!(vocabulary.len() > 250, "{}", vocabulary.len());
        let a = Lcg(7).words(&vocabulary, 8);
        let b = Lcg(7).words(&vocabulary, 8);
        assert_eq!(a, b);
    }

    #[test]
    fn exact_nearest_takes_a_memory_s_best_window() {
        let a = MemoryId::new();
        let b = MemoryId::new();
        let rows = vec![
            VectorRow {
                memory_id: a,
                model: "m".into(),
                vector: vec![1.0, 0.0],
            },
            VectorRow {
                memory_id: b,
                model: "m".into(),
                vector: vec![0.0, 1.0, 0.6, 0.8],
            },
        ];
        assert_eq!(exact_nearest(&rows, &[0.6, 0.8], 1), vec![b]);
        assert_eq!(exact_nearest(&rows, &[1.0, 0.0], 2), vec![a, b]);
    }
}
