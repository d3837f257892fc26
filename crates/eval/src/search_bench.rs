//! `mnemos bench search`: search latency over one user with many memories, on whatever store
//! and dense-search placement the engine was opened with, and the recall of the store's
//! vector index against exact brute force over the same vectors.
//!
//! The texts are synthetic (a fixed generator over a vocabulary of a few hundred English and
//! Chinese words, so no two memories are alike and the same settings load the same data), so
//! the numbers measure the store and the index, not a dataset. A user already holding the
//! memories is reused: a kept database is loaded once.
//!
//! When the engine gives the user an approximate dense index (`[retrieval.ann]`), the bench
//! waits for its background build, times every search on it and on a second engine over the
//! same store that searches exactly, query by query in turn (so both see the same machine), and
//! measures the approximate index's recall against the exact scan over the same vectors.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::Serialize;

use mnemos_core::embed::cosine;
use mnemos_core::retrieval::{AnnPhase, AnnStatus, RetrieverKind, ScopeIndex};
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
    /// The in-process approximate index, when the user has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ann: Option<AnnBench>,
}

/// The approximate dense index against the exact scan (see the module docs).
#[derive(Clone, Debug, Serialize)]
pub struct AnnBench {
    /// Where it stood when the searches ran (`ready`: searches walked the graph).
    pub phase: AnnPhase,
    /// Nodes of its graph (vectors, windows included).
    pub nodes: usize,
    /// Its build, from the rows' copy to its installation, in seconds.
    pub build_seconds: Option<f64>,
    /// Timed searches the graph answered (the rest fell back to the exact scan).
    pub graph_searches: u64,
    /// Recall@k (`top_k`) of its dense nearest against the exact scan's.
    pub recall_at_k: f64,
    /// Recall@`candidates` (what feeds fusion) against the exact scan's.
    pub recall_at_candidates: f64,
    /// Recall@k counting a hit found when its cosine equals the exact k-th best's or more:
    /// synthetic texts share words, and equal cosines are common.
    pub recall_at_k_ties: f64,
    pub candidates: usize,
    /// The same searches on the engine that searches exactly, interleaved with the timed ones.
    pub exact_hybrid: LatencySummary,
    pub exact_dense: LatencySummary,
    /// Recall and the dense lookup's own latency when the walk keeps `ef` nodes (asking for
    /// `ef` nearest makes the walk keep that many), for choosing `ef_search`.
    pub sweep: Vec<EfPoint>,
}

/// One `ef` of [`AnnBench::sweep`].
#[derive(Clone, Debug, Serialize)]
pub struct EfPoint {
    pub ef: usize,
    pub recall_at_k: f64,
    pub recall_at_candidates: f64,
    /// p50 of the approximate dense lookup alone (no fusion, no rows), in ms.
    pub p50_ms: f64,
    /// The same for the exact scan.
    pub exact_p50_ms: f64,
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

/// Search `queries` once each with `retriever` on `engine` (and on `exact`, when given, in
/// turn, the first of the two alternating); their latencies.
fn time_searches(
    engine: &Engine,
    exact: Option<&Engine>,
    user: &UserKey,
    queries: &[String],
    retriever: RetrieverKind,
    top_k: usize,
) -> Result<(LatencySummary, Option<LatencySummary>), EvalError> {
    let mut stats = LatencyStats::new();
    let mut exact_stats = LatencyStats::new();
    let timed = |engine: &Engine, query: &String| -> Result<Duration, EvalError> {
        let mut request = SearchRequest::new(user.clone(), query.clone());
        request.retriever = retriever;
        request.top_k = Some(top_k);
        let started = Instant::now();
        engine.search(&request)?;
        Ok(started.elapsed())
    };
    for (i, query) in queries.iter().enumerate() {
        match exact {
            Some(exact) if i % 2 == 0 => {
                exact_stats.push(timed(exact, query)?);
                stats.push(timed(engine, query)?);
            }
            Some(exact) => {
                stats.push(timed(engine, query)?);
                exact_stats.push(timed(exact, query)?);
            }
            None => stats.push(timed(engine, query)?),
        }
    }
    let summary = stats
        .summary()
        .ok_or_else(|| invalid("no searches were timed"))?;
    Ok((summary, exact_stats.summary()))
}

/// Where `user`'s approximate dense index stands.
fn ann_status(engine: &Engine, user: &UserKey) -> Result<AnnStatus, EvalError> {
    engine
        .reader()
        .with_index(user, ScopeIndex::ann_status)?
        .ok_or_else(|| invalid("the user has no index"))
}

/// The `n` memories nearest to `vector` by in-process dense search, as searches take it or
/// exactly.
fn nearest(
    engine: &Engine,
    user: &UserKey,
    vector: &[f32],
    n: usize,
    exact: bool,
) -> Result<Vec<(MemoryId, f32)>, EvalError> {
    let found = engine.reader().with_index(user, |index| match exact {
        true => index.dense_nearest_exact(vector, n),
        false => index.dense_nearest(vector, n),
    })?;
    Ok(found.unwrap_or_default())
}

/// Wait for `user`'s approximate index to be built (it builds in the background).
fn wait_for_ann(engine: &Engine, user: &UserKey) -> Result<AnnPhase, EvalError> {
    let started = Instant::now();
    loop {
        let phase = ann_status(engine, user)?.phase;
        if phase != AnnPhase::Building || started.elapsed() > Duration::from_secs(3600) {
            return Ok(phase);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Recall of the approximate index's dense nearest (asked for `ef` of them, so the walk keeps
/// at least `ef`) against the exact scan's: at `k`, at `candidates`, and at `k` with equal
/// cosines counted as found; with the p50 of both lookups.
fn ann_recall(
    engine: &Engine,
    user: &UserKey,
    queries: &[String],
    (k, candidates, ef): (usize, usize, usize),
) -> Result<((f64, f64, f64), EfPoint), EvalError> {
    let (mut at_k, mut at_c, mut ties, mut wanted_k, mut wanted_c) = (0, 0, 0, 0, 0);
    let (mut approx_time, mut exact_time) = (LatencyStats::new(), LatencyStats::new());
    for query in queries {
        let vector = engine.embedder().embed_query(query)?;
        let started = Instant::now();
        let exact = nearest(engine, user, &vector, candidates, true)?;
        exact_time.push(started.elapsed());
        let started = Instant::now();
        let mut found = nearest(engine, user, &vector, ef.max(candidates), false)?;
        approx_time.push(started.elapsed());
        found.truncate(candidates);
        let overlap = |n: usize| {
            let truth: HashSet<MemoryId> = exact.iter().take(n).map(|h| h.0).collect();
            found
                .iter()
                .take(n)
                .filter(|h| truth.contains(&h.0))
                .count()
        };
        at_k += overlap(k);
        at_c += overlap(candidates);
        wanted_k += exact.len().min(k);
        wanted_c += exact.len().min(candidates);
        if let Some(kth) = exact.get(k.min(exact.len()).saturating_sub(1)) {
            ties += found.iter().take(k).filter(|h| h.1 >= kth.1).count();
        }
    }
    let share = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let p50 = |stats: &LatencyStats| stats.summary().map_or(f64::NAN, |s| s.p50_ms);
    let point = EfPoint {
        ef,
        recall_at_k: share(at_k, wanted_k),
        recall_at_candidates: share(at_c, wanted_c),
        p50_ms: p50(&approx_time),
        exact_p50_ms: p50(&exact_time),
    };
    Ok((
        (
            share(at_k, wanted_k),
            share(at_c, wanted_c),
            share(ties, wanted_k),
        ),
        point,
    ))
}

/// `ef` values the bench sweeps (those below `candidates` are the same as `candidates`).
const SWEEP: &[usize] = &[100, 200, 300, 400, 600, 800];

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

/// Load, warm, and measure (see the module docs). `exact`: an engine over the same store
/// that searches exactly, to compare with when `engine` gives the user an approximate index.
pub fn run(
    engine: &Engine,
    exact: Option<&Engine>,
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
    let phase = wait_for_ann(engine, &user)?;
    // Compare only when there is an approximate index to compare with.
    let exact = exact.filter(|_| phase == AnnPhase::Ready);
    if let Some(exact) = exact {
        exact.reader().warm(&user)?;
    }

    let vocabulary = vocabulary();
    let mut rng = Lcg(99);
    let queries: Vec<String> = (0..settings.queries)
        .map(|_| rng.words(&vocabulary, 3))
        .collect();
    let k = settings.top_k;
    let (hybrid, exact_hybrid) =
        time_searches(engine, exact, &user, &queries, RetrieverKind::Hybrid, k)?;
    let (dense, exact_dense) =
        time_searches(engine, exact, &user, &queries, RetrieverKind::Dense, k)?;
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
    let ann = match (exact_hybrid, exact_dense) {
        (Some(exact_hybrid), Some(exact_dense)) => {
            let status = ann_status(engine, &user)?;
            let ((recall_at_k, recall_at_candidates, recall_at_k_ties), _) =
                ann_recall(engine, &user, &queries, (k, candidates, 0))?;
            let sweep = SWEEP
                .iter()
                .map(|&ef| Ok(ann_recall(engine, &user, &queries, (k, candidates, ef))?.1))
                .collect::<Result<Vec<_>, EvalError>>()?;
            Some(AnnBench {
                phase: status.phase,
                nodes: status.nodes,
                build_seconds: status.build_seconds,
                graph_searches: status.searches,
                recall_at_k,
                recall_at_candidates,
                recall_at_k_ties,
                candidates,
                exact_hybrid,
                exact_dense,
                sweep,
            })
        }
        _ => None,
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
        ann,
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
        None if report.ann.is_none() => {
            out.push_str("recall: dense search is exact (in process)\n")
        }
        None => {}
    }
    if let Some(ann) = &report.ann {
        out.push_str(&render_ann(ann, report.settings.top_k, &row));
    }
    if let Some(profile) = &report.profile {
        out.push_str(&search_profile::render(profile));
    }
    out
}

fn render_ann(ann: &AnnBench, k: usize, row: &dyn Fn(&str, &LatencySummary) -> String) -> String {
    format!(
        "approximate index: {:?}, {} nodes, built in {:.1} s, {} timed searches answered by it\n\
         {}{}\
         recall against the exact scan: @{k} {:.4} (equal cosines counted {:.4}), @{} {:.4}\n",
        ann.phase,
        ann.nodes,
        ann.build_seconds.unwrap_or(f64::NAN),
        ann.graph_searches,
        row("exact h", &ann.exact_hybrid),
        row("exact d", &ann.exact_dense),
        ann.recall_at_k,
        ann.recall_at_k_ties,
        ann.candidates,
        ann.recall_at_candidates,
    ) + &ann
        .sweep
        .iter()
        .map(|p| {
            format!(
                "  ef {:>4}: recall @{k} {:.4} @{} {:.4}, lookup p50 {:.2} ms (exact {:.2} ms)\n",
                p.ef,
                p.recall_at_k,
                ann.candidates,
                p.recall_at_candidates,
                p.p50_ms,
                p.exact_p50_ms
            )
        })
        .collect::<String>()
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
