//! `eval retrieval`: stream each conversation into its own user scope in time order, ask every
//! question when its time comes, and score BM25 / dense / hybrid side by side in one run
//! (Recall@{1,5,10}, MRR and nDCG@10 of the gold items, read and write latency).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use mnemos_core::{RetrieverKind, SystemClock, TurnId, UserKey};
use mnemos_engine::{Config, Engine, EngineConfig, NewTurn, SearchRequest};

use crate::dataset::{Conversation, Question, RetrievalDataset};
use crate::error::EvalError;
use crate::experiment::{open_engine, Progress, ProgressFn, StoreKind};
use crate::format::{load_retrieval_dataset, QuestionDataset};
use crate::metrics::{LatencyStats, LatencySummary, RetrievalScores, ScoreReport};

use super::DumpFile;

const KS: [usize; 3] = [1, 5, 10];
/// The engine's agent for every streamed turn.
const AGENT: &str = "eval";

/// Which retrievers to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RetrieverChoice {
    Bm25,
    Dense,
    Hybrid,
    /// BM25, dense and hybrid side by side.
    All,
}

impl RetrieverChoice {
    /// The retrievers `choices` name, in the order given, each once.
    pub fn expand(choices: &[RetrieverChoice]) -> Vec<RetrieverKind> {
        let mut kinds: Vec<RetrieverKind> = Vec::new();
        for choice in choices {
            let named: &[RetrieverKind] = match choice {
                RetrieverChoice::Bm25 => &[RetrieverKind::Bm25],
                RetrieverChoice::Dense => &[RetrieverKind::Dense],
                RetrieverChoice::Hybrid => &[RetrieverKind::Hybrid],
                RetrieverChoice::All => &RetrieverKind::ALL,
            };
            for kind in named {
                if !kinds.contains(kind) {
                    kinds.push(*kind);
                }
            }
        }
        kinds
    }
}

/// What `eval retrieval` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalSettings {
    /// The dataset file (PerLTQA: its directory or either file).
    pub path: PathBuf,
    pub dataset: QuestionDataset,
    pub retrievers: Vec<RetrieverKind>,
    /// Only the first N conversations.
    pub limit: Option<usize>,
    pub store: StoreKind,
    /// Turns per write (1 = every turn its own transaction, as a live chat writes).
    pub write_batch: usize,
    /// One JSON line per question (its text, category, gold labels and each retriever's
    /// ranked labels), for looking at individual misses.
    pub dump: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct RetrieverReport {
    pub retriever: &'static str,
    pub scores: ScoreReport,
    pub read_latency: Option<LatencySummary>,
}

#[derive(Debug, Serialize)]
pub struct RetrievalReport {
    pub dataset: String,
    pub path: String,
    pub conversations: usize,
    pub turns: usize,
    pub questions: usize,
    pub excluded_questions: usize,
    pub defects: usize,
    pub embedder: String,
    pub store: StoreKind,
    pub fusion: mnemos_core::Fusion,
    pub write_latency_per_turn: Option<LatencySummary>,
    pub ingest_turns_per_second: f64,
    pub retrievers: Vec<RetrieverReport>,
    pub peak_memory_mb: Option<f64>,
}

/// Scores and latencies gathered while streaming.
struct Tally {
    scores: Vec<RetrievalScores>,
    reads: Vec<LatencyStats>,
    writes: LatencyStats,
    ingest_seconds: f64,
}

/// One engine, the retrievers it is searched with, and where the misses go.
struct Streamer<'a> {
    engine: &'a Engine,
    tenant: &'a str,
    retrievers: &'a [RetrieverKind],
    write_batch: usize,
    progress: ProgressFn<'a>,
}

/// Run `eval retrieval` (see the module docs).
pub fn evaluate(
    config: &Config,
    settings: &RetrievalSettings,
    progress: ProgressFn<'_>,
) -> Result<RetrievalReport, EvalError> {
    let format = settings.dataset.resolve(&settings.path)?;
    if settings.retrievers.is_empty() {
        return Err(EvalError::Invalid("no retriever to evaluate".into()));
    }
    let mut dataset = load_retrieval_dataset(&settings.path, format)?;
    if let Some(limit) = settings.limit {
        dataset.conversations.truncate(limit);
    }
    let scratch = tempfile::tempdir().map_err(EvalError::io(
        "create",
        std::path::Path::new("a scratch directory"),
    ))?;
    let store = settings.store.open(scratch.path(), "eval")?;
    let embedder = mnemos_engine::setup::embedder(config)?;
    // The retrieval preset plans no derived work: the engine only stores and indexes turns.
    let (engine, _) = open_engine(
        config,
        &EngineConfig::with_preset("retrieval"),
        store,
        &embedder,
        Arc::new(SystemClock),
    )?;
    let streamer = Streamer {
        engine: &engine,
        tenant: &config.tenant,
        retrievers: &settings.retrievers,
        write_batch: settings.write_batch.max(1),
        progress,
    };
    let mut dump = DumpFile::open(settings.dump.as_deref())?;
    let tally = streamer.stream(&dataset, dump.as_mut())?;
    if let Some(dump) = dump {
        dump.finish()?;
    }
    Ok(report(config, settings, &dataset, &engine, tally))
}

fn report(
    config: &Config,
    settings: &RetrievalSettings,
    dataset: &RetrievalDataset,
    engine: &Engine,
    tally: Tally,
) -> RetrievalReport {
    let summary = dataset.summary();
    let turns: usize = dataset.conversations.iter().map(|c| c.items.len()).sum();
    RetrievalReport {
        dataset: dataset.name.clone(),
        path: settings.path.display().to_string(),
        conversations: dataset.conversations.len(),
        turns,
        questions: dataset
            .conversations
            .iter()
            .map(|c| c.questions.len())
            .sum(),
        excluded_questions: summary.excluded,
        defects: summary.defects,
        embedder: engine.embedder().id().to_string(),
        store: settings.store,
        fusion: config.retrieval.fusion.clone(),
        write_latency_per_turn: tally.writes.summary(),
        ingest_turns_per_second: turns as f64 / tally.ingest_seconds.max(1e-9),
        retrievers: settings
            .retrievers
            .iter()
            .zip(tally.scores)
            .zip(tally.reads)
            .map(|((r, s), l)| RetrieverReport {
                retriever: r.name(),
                scores: s.report(),
                read_latency: l.summary(),
            })
            .collect(),
        peak_memory_mb: peak_memory_mb(),
    }
}

impl Streamer<'_> {
    fn stream(
        &self,
        dataset: &RetrievalDataset,
        mut dump: Option<&mut DumpFile>,
    ) -> Result<Tally, EvalError> {
        let mut tally = Tally {
            scores: self
                .retrievers
                .iter()
                .map(|_| RetrievalScores::new(&KS))
                .collect(),
            reads: self
                .retrievers
                .iter()
                .map(|_| LatencyStats::new())
                .collect(),
            writes: LatencyStats::new(),
            ingest_seconds: 0.0,
        };
        let steps: usize = dataset
            .conversations
            .iter()
            .map(|c| c.items.len() + c.questions.len())
            .sum();
        (self.progress)(Progress::Stage {
            name: "eval",
            total: steps as u64,
        });
        for conversation in &dataset.conversations {
            self.conversation(conversation, &mut tally, dump.as_deref_mut())?;
        }
        (self.progress)(Progress::StageDone);
        Ok(tally)
    }

    /// Stream one conversation, asking each question once everything before it is written.
    fn conversation(
        &self,
        conversation: &Conversation,
        tally: &mut Tally,
        mut dump: Option<&mut DumpFile>,
    ) -> Result<(), EvalError> {
        let user = UserKey::new(self.tenant.to_string(), conversation.id.clone())?;
        let mut labels: HashMap<TurnId, String> = HashMap::with_capacity(conversation.items.len());
        let mut questions: Vec<&Question> = conversation.questions.iter().collect();
        questions.sort_by_key(|q| q.after_item);
        let mut next_item = 0usize;
        let mut pending = questions.into_iter().peekable();
        loop {
            // Observe everything that happened before the next question (or all that is left).
            let until = pending.peek().map_or(conversation.items.len(), |q| {
                q.after_item.min(conversation.items.len())
            });
            next_item = self.write(conversation, next_item, until, &mut labels, tally)?;
            let Some(question) = pending.next() else {
                break;
            };
            let ranked = self.ask(&user, question, &labels, tally)?;
            if let Some(out) = dump.as_deref_mut() {
                let ranked: BTreeMap<&str, &Vec<&str>> = self
                    .retrievers
                    .iter()
                    .map(|r| r.name())
                    .zip(&ranked)
                    .collect();
                out.write(&serde_json::json!({
                    "conversation": conversation.id,
                    "question": question.text,
                    "category": question.category,
                    "gold": question.gold,
                    "ranked": ranked,
                }))?;
            }
            (self.progress)(Progress::Step(1));
        }
        Ok(())
    }

    /// Write items `from..until` in batches, remembering each turn's item label; returns
    /// the next item to write.
    fn write(
        &self,
        conversation: &Conversation,
        from: usize,
        until: usize,
        labels: &mut HashMap<TurnId, String>,
        tally: &mut Tally,
    ) -> Result<usize, EvalError> {
        let mut next_item = from;
        while next_item < until {
            let end = (next_item + self.write_batch).min(until);
            let items = &conversation.items[next_item..end];
            let batch: Vec<NewTurn> = items
                .iter()
                .map(|item| {
                    let scope = conversation.scope(self.tenant, AGENT, &item.session)?;
                    Ok(item.new_turn(scope))
                })
                .collect::<Result<_, mnemos_core::Error>>()?;
            let started = Instant::now();
            let added = self.engine.add(batch)?.turns;
            let elapsed = started.elapsed();
            tally.ingest_seconds += elapsed.as_secs_f64();
            tally.writes.push(elapsed / items.len() as u32);
            for (item, added) in items.iter().zip(added) {
                labels.insert(added.turn_id, item.label.clone());
            }
            next_item = end;
            (self.progress)(Progress::Step(items.len() as u64));
        }
        Ok(next_item)
    }

    /// Search with every retriever; each one's ranking as item labels (through provenance).
    fn ask<'l>(
        &self,
        user: &UserKey,
        question: &Question,
        labels: &'l HashMap<TurnId, String>,
        tally: &mut Tally,
    ) -> Result<Vec<Vec<&'l str>>, EvalError> {
        let top_k = KS.iter().max().copied().unwrap_or(10);
        let mut rankings = Vec::with_capacity(self.retrievers.len());
        for (i, retriever) in self.retrievers.iter().enumerate() {
            let mut request = SearchRequest::new(user.clone(), question.text.clone());
            request.top_k = Some(top_k);
            request.retriever = *retriever;
            let started = Instant::now();
            let results = self.engine.search(&request)?;
            tally.reads[i].push(started.elapsed());
            let ranked: Vec<&str> = results
                .hits
                .iter()
                .flat_map(|hit| &hit.memory.provenance)
                .filter_map(|turn| labels.get(turn).map(String::as_str))
                .collect();
            tally.scores[i].add_query(&question.category, &ranked, &question.gold);
            rankings.push(ranked);
        }
        Ok(rankings)
    }
}

/// Peak resident memory of this process (Linux), in MB.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn ms(summary: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64) -> String {
    summary
        .as_ref()
        .map_or("-".into(), |s| format!("{:.2}", pick(s)))
}

impl RetrievalReport {
    /// The report as plain-text tables; `by_category` adds one table per retriever.
    pub fn text(&self, by_category: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} ({}): {} conversations, {} turns, {} questions ({} excluded, {} data defects)",
            self.dataset,
            self.path,
            self.conversations,
            self.turns,
            self.questions,
            self.excluded_questions,
            self.defects
        );
        let _ = writeln!(
            out,
            "embedder {}, store {}, fusion {:?}\n",
            self.embedder,
            self.store.as_str(),
            self.fusion
        );
        let _ = writeln!(
            out,
            "{:<8} {:>6} {:>6} {:>6} {:>6} {:>8} {:>11} {:>11}",
            "retriever", "R@1", "R@5", "R@10", "MRR", "nDCG@10", "read p50ms", "read p95ms"
        );
        for r in &self.retrievers {
            let o = &r.scores.overall;
            let at = |m: &BTreeMap<usize, f64>, k| m.get(&k).copied().unwrap_or(0.0);
            let _ = writeln!(
                out,
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
        let _ = writeln!(
            out,
            "\nwrite per turn: p50 {} ms, p95 {} ms; ingest {:.0} turns/s; peak memory {}",
            ms(&self.write_latency_per_turn, |s| s.p50_ms),
            ms(&self.write_latency_per_turn, |s| s.p95_ms),
            self.ingest_turns_per_second,
            self.peak_memory_mb
                .map_or("-".into(), |m| format!("{m:.0} MB"))
        );
        if by_category {
            self.category_tables(&mut out);
        }
        out
    }

    fn category_tables(&self, out: &mut String) {
        for r in &self.retrievers {
            let _ = writeln!(out, "\n{} by category:", r.retriever);
            let _ = writeln!(
                out,
                "{:<22} {:>5} {:>6} {:>6} {:>6} {:>6}",
                "category", "n", "R@1", "R@5", "R@10", "MRR"
            );
            for (category, s) in &r.scores.by_category {
                let at = |k| s.recall.get(&k).copied().unwrap_or(0.0);
                let _ = writeln!(
                    out,
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
