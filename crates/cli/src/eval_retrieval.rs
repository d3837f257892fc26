//! `mnemos eval retrieval`: stream each conversation into its own user scope in time order, ask
//! every question when its time comes, and score BM25 / dense / hybrid side by side in one run.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::{MemoryStore, RetrieverKind, Scope, Store, SystemClock, TurnId, UserKey};
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_eval::dataset::RetrievalDataset;
use mnemos_eval::format::{load_retrieval_dataset, Format};
use mnemos_eval::metrics::{LatencyStats, LatencySummary, RetrievalScores, ScoreReport};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

const KS: [usize; 3] = [1, 5, 10];

#[derive(Args)]
pub struct EvalRetrievalArgs {
    /// locomo, memdaily or perltqa.
    #[arg(long)]
    dataset: String,
    /// The dataset file (PerLTQA: its directory or either file).
    path: PathBuf,
    /// bm25, dense, hybrid or all.
    #[arg(long, default_value = "all")]
    retriever: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print per-category tables too.
    #[arg(long)]
    by_category: bool,
    /// Only the first N conversations (quick runs).
    #[arg(long)]
    limit: Option<usize>,
    /// sqlite (a scratch database file, the real write path) or memory.
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// Turns per write (1 = every turn its own transaction, as a live chat writes).
    #[arg(long, default_value_t = 1)]
    write_batch: usize,
    /// Also write one JSON line per question (its text, category, gold labels and each
    /// retriever's ranked labels) to this file, for looking at individual misses.
    #[arg(long)]
    dump: Option<PathBuf>,
}

#[derive(Serialize)]
struct RetrieverReport {
    retriever: &'static str,
    scores: ScoreReport,
    read_latency: Option<LatencySummary>,
}

#[derive(Serialize)]
struct EvalReport {
    dataset: String,
    path: String,
    conversations: usize,
    turns: usize,
    questions: usize,
    excluded_questions: usize,
    defects: usize,
    embedder: String,
    store: String,
    fusion: mnemos_core::Fusion,
    write_latency_per_turn: Option<LatencySummary>,
    ingest_turns_per_second: f64,
    retrievers: Vec<RetrieverReport>,
    peak_memory_mb: Option<f64>,
}

fn parse_retrievers(spec: &str) -> Result<Vec<RetrieverKind>> {
    if spec == "all" {
        return Ok(RetrieverKind::ALL.to_vec());
    }
    spec.split(',')
        .map(|s| s.trim().parse::<RetrieverKind>().map_err(Into::into))
        .collect()
}

/// Peak resident memory of this process (Linux), in MB.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run(config: &Config, args: EvalRetrievalArgs) -> Result<()> {
    let format: Format = args.dataset.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    if format == Format::Jsonl {
        bail!("--dataset must be locomo, memdaily or perltqa");
    }
    let retrievers = parse_retrievers(&args.retriever)?;
    let mut dataset = load_retrieval_dataset(&args.path, format)?;
    if let Some(limit) = args.limit {
        dataset.conversations.truncate(limit);
    }
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let store: Arc<dyn Store> = match args.store.as_str() {
        "sqlite" => Arc::new(SqliteStore::open(
            &scratch.path().join("eval.db"),
            SqliteOptions::default(),
        )?),
        "memory" => Arc::new(MemoryStore::new()),
        other => bail!("unknown store '{other}' (expected sqlite or memory)"),
    };
    let embedder = mnemos_engine::setup::embedder(config)?;
    let model = mnemos_engine::setup::memory_model(config, &embedder)?.0;
    // The retrieval preset plans no derived work: the engine only stores and indexes turns.
    let memories = Engine::builder(store, embedder, model)
        .clock(Arc::new(SystemClock))
        .retrieval(config.retrieval.clone())
        .config(EngineConfig::with_preset("retrieval"))
        .build()?;
    let report = evaluate(&memories, config, &dataset, &retrievers, &args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, args.by_category);
    }
    Ok(())
}

fn evaluate(
    memories: &Engine,
    config: &Config,
    dataset: &RetrievalDataset,
    retrievers: &[RetrieverKind],
    args: &EvalRetrievalArgs,
) -> Result<EvalReport> {
    let summary = dataset.summary();
    let total_items: usize = dataset.conversations.iter().map(|c| c.items.len()).sum();
    let total_questions: usize = dataset
        .conversations
        .iter()
        .map(|c| c.questions.len())
        .sum();
    let mut scores: Vec<RetrievalScores> = retrievers
        .iter()
        .map(|_| RetrievalScores::new(&KS))
        .collect();
    let mut reads: Vec<LatencyStats> = retrievers.iter().map(|_| LatencyStats::new()).collect();
    let mut writes = LatencyStats::new();
    let mut ingest_seconds = 0.0;
    let top_k = *KS.iter().max().unwrap_or(&10);

    let mut dump = match &args.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    let bar = progress_bar((total_items + total_questions) as u64, "eval");
    for conversation in &dataset.conversations {
        let user = UserKey::new(config.tenant.clone(), conversation.id.clone())?;
        let mut labels: HashMap<TurnId, String> = HashMap::with_capacity(conversation.items.len());
        let mut questions: Vec<_> = conversation.questions.iter().collect();
        questions.sort_by_key(|q| q.after_item);
        let mut next_item = 0usize;
        let mut pending = questions.into_iter().peekable();
        loop {
            // Observe everything that happened before the next question (or all that is left).
            let until = pending.peek().map_or(conversation.items.len(), |q| {
                q.after_item.min(conversation.items.len())
            });
            while next_item < until {
                let end = (next_item + args.write_batch.max(1)).min(until);
                let batch: Vec<NewTurn> = conversation.items[next_item..end]
                    .iter()
                    .map(|item| -> Result<NewTurn> {
                        Ok(item.new_turn(Scope::new(
                            config.tenant.clone(),
                            conversation.id.clone(),
                            "eval",
                            item.session.clone(),
                        )?))
                    })
                    .collect::<Result<_>>()?;
                let n = batch.len();
                let started = Instant::now();
                let added = memories.add(batch)?.turns;
                let elapsed = started.elapsed();
                ingest_seconds += elapsed.as_secs_f64();
                writes.push(elapsed / n as u32);
                for (item, added) in conversation.items[next_item..end].iter().zip(added) {
                    labels.insert(added.turn_id, item.label.clone());
                }
                next_item = end;
                bar.inc(n as u64);
            }
            let Some(question) = pending.next() else {
                break;
            };
            let mut dumped = serde_json::Map::new();
            for (i, retriever) in retrievers.iter().enumerate() {
                let mut request = SearchRequest::new(user.clone(), question.text.clone());
                request.top_k = Some(top_k);
                request.retriever = *retriever;
                let started = Instant::now();
                let results = memories.search(&request)?;
                reads[i].push(started.elapsed());
                let mut ranked: Vec<&str> = Vec::new();
                for hit in &results.hits {
                    for turn in &hit.memory.provenance {
                        if let Some(label) = labels.get(turn) {
                            ranked.push(label.as_str());
                        }
                    }
                }
                scores[i].add_query(&question.category, &ranked, &question.gold);
                if dump.is_some() {
                    dumped.insert(retriever.name().to_string(), serde_json::json!(ranked));
                }
            }
            if let Some(out) = dump.as_mut() {
                let line = serde_json::json!({
                    "conversation": conversation.id,
                    "question": question.text,
                    "category": question.category,
                    "gold": question.gold,
                    "ranked": dumped,
                });
                writeln!(out, "{line}")?;
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if let Some(mut out) = dump {
        out.flush()?;
    }

    Ok(EvalReport {
        dataset: dataset.name.clone(),
        path: args.path.display().to_string(),
        conversations: dataset.conversations.len(),
        turns: total_items,
        questions: total_questions,
        excluded_questions: summary.excluded,
        defects: summary.defects,
        embedder: memories.embedder().id().to_string(),
        store: args.store.clone(),
        fusion: config.retrieval.fusion.clone(),
        write_latency_per_turn: writes.summary(),
        ingest_turns_per_second: total_items as f64 / ingest_seconds.max(1e-9),
        retrievers: retrievers
            .iter()
            .zip(scores)
            .zip(reads)
            .map(|((r, s), l)| RetrieverReport {
                retriever: r.name(),
                scores: s.report(),
                read_latency: l.summary(),
            })
            .collect(),
        peak_memory_mb: peak_memory_mb(),
    })
}

fn ms(summary: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64) -> String {
    summary
        .as_ref()
        .map_or("-".into(), |s| format!("{:.2}", pick(s)))
}

fn print_report(report: &EvalReport, by_category: bool) {
    println!(
        "{} ({}): {} conversations, {} turns, {} questions ({} excluded, {} data defects)",
        report.dataset,
        report.path,
        report.conversations,
        report.turns,
        report.questions,
        report.excluded_questions,
        report.defects
    );
    println!(
        "embedder {}, store {}, fusion {:?}",
        report.embedder, report.store, report.fusion
    );
    println!();
    println!(
        "{:<8} {:>6} {:>6} {:>6} {:>6} {:>8} {:>11} {:>11}",
        "retriever", "R@1", "R@5", "R@10", "MRR", "nDCG@10", "read p50ms", "read p95ms"
    );
    for r in &report.retrievers {
        let o = &r.scores.overall;
        let at = |m: &std::collections::BTreeMap<usize, f64>, k| m.get(&k).copied().unwrap_or(0.0);
        println!(
            "{:<9} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8.3} {:>11} {:>11}",
            r.retriever,
            at(&o.recall, 1),
            at(&o.recall, 5),
            at(&o.recall, 10),
            o.mrr,
            at(&o.ndcg, 10),
            ms(&r.read_latency, |s| s.p50_ms),
            ms(&r.read_latency, |s| s.p95_ms),
        );
    }
    println!();
    println!(
        "write per turn: p50 {} ms, p95 {} ms; ingest {:.0} turns/s; peak memory {}",
        ms(&report.write_latency_per_turn, |s| s.p50_ms),
        ms(&report.write_latency_per_turn, |s| s.p95_ms),
        report.ingest_turns_per_second,
        report
            .peak_memory_mb
            .map_or("-".into(), |m| format!("{m:.0} MB"))
    );
    if by_category {
        for r in &report.retrievers {
            println!("\n{} by category:", r.retriever);
            println!(
                "{:<22} {:>5} {:>6} {:>6} {:>6} {:>6}",
                "category", "n", "R@1", "R@5", "R@10", "MRR"
            );
            for (category, s) in &r.scores.by_category {
                let at = |k| s.recall.get(&k).copied().unwrap_or(0.0);
                println!(
                    "{:<22} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3}",
                    category,
                    s.count,
                    at(1),
                    at(5),
                    at(10),
                    s.mrr
                );
            }
        }
    }
}
