//! `eval retrieval`: stream each conversation into its own user scope in time order, ask every
//! question when its time comes, and score BM25 / dense / hybrid side by side in one run
//! (Recall@{1,2,3,5,10} — PerLTQA's K —, MRR and nDCG@10 of the gold items, read and write
//! latency). Each retriever can also run with memory-type handling (`--memory-type`: PerLTQA's
//! re-rank, or one type only), as extra rows. Where questions carry memory anchors (PerLTQA),
//! the anchor MAP of the retrieved memories is reported: an anchor counts only if it resolves
//! (appears in the text of one of the question's gold memories; the dataset's offsets refer to
//! the Chinese original, so English anchors are matched by text), and a question's score is the
//! share of its resolving anchors found in its top 10 retrieved memories (PerLTQA eq. 5, with the
//! retrieved context in place of a generated answer).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use mnemos_core::retrieval::{TypeRerank, TypeSearch};
use mnemos_core::{MemoryType, RetrieverKind, SecondHop, SystemClock, TurnId, UserKey};
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_setup::Config;

use crate::dataset::{Conversation, Question, RetrievalDataset};
use crate::error::EvalError;
use crate::experiment::{open_engine, Progress, ProgressFn, StoreKind};
use crate::format::{load_retrieval_dataset, QuestionDataset};
use crate::metrics::{LatencyStats, LatencySummary, RetrievalScores, ScoreReport, SessionRecall};

use super::DumpFile;

const KS: [usize; 5] = [1, 2, 3, 5, 10];
/// Cutoffs of session-level recall (as LoCoMo and LongMemEval results are published).
const SESSION_KS: [usize; 2] = [5, 10];

/// The deepest rank scored.
const TOP_K: usize = 10;
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

/// What a retriever does with memory types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TypeChoice {
    /// Nothing: retrieval alone.
    None,
    /// Classify the query, draw k per type, re-rank (PerLTQA eq. 3).
    Rerank,
    /// Semantic memories only.
    Semantic,
    /// Episodic memories only.
    Episodic,
}

impl TypeChoice {
    fn search(self, rerank: TypeRerank) -> Option<TypeSearch> {
        match self {
            TypeChoice::None => None,
            TypeChoice::Rerank => Some(TypeSearch::Rerank(rerank)),
            TypeChoice::Semantic => Some(TypeSearch::Only(MemoryType::Semantic)),
            TypeChoice::Episodic => Some(TypeSearch::Only(MemoryType::Episodic)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            TypeChoice::None => "",
            TypeChoice::Rerank => "+rerank",
            TypeChoice::Semantic => "+semantic",
            TypeChoice::Episodic => "+episodic",
        }
    }
}

/// One row of the report: a retriever and what it does with memory types.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    retriever: RetrieverKind,
    memory_type: Option<TypeSearch>,
    name_suffix: &'static str,
}

impl Row {
    fn name(&self) -> String {
        format!("{}{}", self.retriever.name(), self.name_suffix)
    }
}

/// What `eval retrieval` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalSettings {
    /// The dataset file (PerLTQA: its directory or either file).
    pub path: PathBuf,
    pub dataset: QuestionDataset,
    pub retrievers: Vec<RetrieverKind>,
    /// What each retriever does with memory types; one row per retriever and choice.
    pub memory_types: Vec<TypeChoice>,
    /// The re-rank's parameters for [`TypeChoice::Rerank`].
    pub rerank: TypeRerank,
    /// Only the first N conversations.
    pub limit: Option<usize>,
    pub store: StoreKind,
    /// Turns per write (1 = every turn its own transaction, as a live chat writes).
    pub write_batch: usize,
    /// One JSON line per question (its text, category, gold labels and each retriever's
    /// ranked labels), for looking at individual misses.
    pub dump: Option<PathBuf>,
    /// The second retrieval hop every search runs, if any.
    pub second_hop: Option<SecondHop>,
    /// Search each question of a compound query on its own.
    pub split_questions: bool,
    /// The relevance floor of every search (None: the configured `retrieval.min_relevance`).
    pub min_relevance: Option<f32>,
    /// The preset whose write path stores the turns (None: `retrieval`, which only stores and
    /// indexes them; `default` also keeps facts and marks superseded turns, which a search
    /// then leaves out). Rows with memory types always write with `perltqa`.
    pub preset: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RetrieverReport {
    /// The retriever, with `+rerank`, `+semantic` or `+episodic` when it handles memory types.
    pub retriever: String,
    pub scores: ScoreReport,
    pub read_latency: Option<LatencySummary>,
    /// Query classification per search (memory-type re-rank only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classify_latency: Option<LatencySummary>,
    /// The re-ranking stages per search, classification excluded (memory-type rows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_latency: Option<LatencySummary>,
    /// Mean share of each question's resolving anchors found in its top 10 (questions with
    /// at least one resolving anchor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_map: Option<f64>,
    /// Session-level recall at 5 and 10 (see [`SessionRecall`]): overall, and per category.
    pub session_recall: BTreeMap<usize, f64>,
    pub session_recall_by_category: BTreeMap<String, BTreeMap<usize, f64>>,
}

/// How the dataset's memory anchors resolve in its memories' text.
#[derive(Debug, Default, Serialize)]
pub struct AnchorCoverage {
    pub anchors: usize,
    /// Anchors found in the text of one of their question's gold memories.
    pub resolved: usize,
    pub questions_with_anchors: usize,
    /// Questions with at least one resolving anchor (the anchor MAP's denominator).
    pub questions_scored: usize,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchors: Option<AnchorCoverage>,
    pub peak_memory_mb: Option<f64>,
}

/// Per row: scores and latencies gathered while streaming.
struct RowTally {
    scores: RetrievalScores,
    sessions: SessionRecall,
    reads: LatencyStats,
    classify: LatencyStats,
    rerank: LatencyStats,
    anchor_sum: f64,
}

/// Scores and latencies gathered while streaming.
struct Tally {
    rows: Vec<RowTally>,
    anchors: AnchorCoverage,
    writes: LatencyStats,
    ingest_seconds: f64,
}

/// One engine, the rows it is searched with, and where the misses go.
struct Streamer<'a> {
    engine: &'a Engine,
    tenant: &'a str,
    rows: &'a [Row],
    write_batch: usize,
    /// Hits asked for per search: the top 10 scored, and when dumping, every candidate the
    /// learned ranker saw, with its features (the training data of `mnemos train ranker`).
    search_depth: usize,
    second_hop: Option<SecondHop>,
    split_questions: bool,
    min_relevance: Option<f32>,
    progress: ProgressFn<'a>,
}

/// One row's answer to a question: the ranked labels, and each hit's ranker features.
struct RowRanking<'l> {
    labels: Vec<&'l str>,
    features: Vec<(&'l str, Vec<f32>)>,
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
    settings.rerank.validate()?;
    if let Some(hop) = &settings.second_hop {
        hop.validate()?;
    }
    let rows = rows(settings);
    // The rows decide where the memory-type re-rank runs; a configured engine-wide stage would
    // re-rank every row, so it only lends its parameters (through `settings.rerank`).
    let mut config = config.clone();
    config.retrieval.memory_type = None;
    let config = &config;
    let mut dataset = load_retrieval_dataset(&settings.path, format)?;
    if let Some(limit) = settings.limit {
        dataset.conversations.truncate(limit);
    }
    let scratch = tempfile::tempdir().map_err(EvalError::io(
        "create",
        std::path::Path::new("a scratch directory"),
    ))?;
    let store = settings.store.open(scratch.path(), "eval")?;
    let embedder = mnemos_setup::embedder(config)?;
    // The retrieval preset plans no derived work: the engine only stores and indexes turns.
    // Rows that use memory types need every memory typed: the perltqa preset's only derived
    // work is estimating the type of memories their source did not type (run inline).
    let uses_types = rows.iter().any(|row| row.memory_type.is_some());
    let preset = match (&settings.preset, uses_types) {
        (_, true) => "perltqa",
        (Some(preset), false) => preset.as_str(),
        (None, false) => "retrieval",
    };
    let (engine, _) = open_engine(
        config,
        &EngineConfig::with_preset(preset),
        store,
        &embedder,
        Arc::new(SystemClock),
    )?;
    let streamer = Streamer {
        engine: &engine,
        tenant: &config.tenant,
        rows: &rows,
        write_batch: settings.write_batch.max(1),
        search_depth: match settings.dump {
            Some(_) => config.retrieval.ranker.depth.max(TOP_K),
            None => TOP_K,
        },
        second_hop: settings.second_hop,
        split_questions: settings.split_questions,
        min_relevance: settings.min_relevance,
        progress,
    };
    let mut dump = DumpFile::open(settings.dump.as_deref())?;
    let tally = streamer.stream(&dataset, dump.as_mut())?;
    if let Some(dump) = dump {
        dump.finish()?;
    }
    Ok(report(config, settings, &dataset, &engine, &rows, tally))
}

/// One row per retriever and memory-type choice (no choice: retrieval alone), in order.
fn rows(settings: &RetrievalSettings) -> Vec<Row> {
    let choices: &[TypeChoice] = if settings.memory_types.is_empty() {
        &[TypeChoice::None]
    } else {
        &settings.memory_types
    };
    let mut rows: Vec<Row> = Vec::new();
    for &retriever in &settings.retrievers {
        for &choice in choices {
            let row = Row {
                retriever,
                memory_type: choice.search(settings.rerank),
                name_suffix: choice.name(),
            };
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
    }
    rows
}

fn report(
    config: &Config,
    settings: &RetrievalSettings,
    dataset: &RetrievalDataset,
    engine: &Engine,
    rows: &[Row],
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
        retrievers: rows
            .iter()
            .zip(tally.rows)
            .map(|(row, t)| RetrieverReport {
                retriever: row.name(),
                scores: t.scores.report(),
                read_latency: t.reads.summary(),
                classify_latency: t.classify.summary().filter(|_| row.memory_type.is_some()),
                rerank_latency: t.rerank.summary().filter(|_| row.memory_type.is_some()),
                anchor_map: (tally.anchors.questions_scored > 0)
                    .then(|| t.anchor_sum / tally.anchors.questions_scored as f64),
                session_recall: t.sessions.overall(),
                session_recall_by_category: t.sessions.by_category(),
            })
            .collect(),
        anchors: (tally.anchors.anchors > 0).then_some(tally.anchors),
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
            rows: self
                .rows
                .iter()
                .map(|_| RowTally {
                    scores: RetrievalScores::new(&KS),
                    sessions: SessionRecall::new(&SESSION_KS),
                    reads: LatencyStats::new(),
                    classify: LatencyStats::new(),
                    rerank: LatencyStats::new(),
                    anchor_sum: 0.0,
                })
                .collect(),
            anchors: AnchorCoverage::default(),
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
        let sessions: HashMap<&str, &str> = conversation
            .items
            .iter()
            .map(|item| (item.label.as_str(), item.session.as_str()))
            .collect();
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
            let ranked = self.ask(&user, question, &labels, &sessions, tally)?;
            score_anchors(conversation, question, &ranked, tally);
            if let Some(out) = dump.as_deref_mut() {
                let names = || self.rows.iter().map(Row::name);
                let labels: BTreeMap<String, &Vec<&str>> =
                    names().zip(ranked.iter().map(|r| &r.labels)).collect();
                let features: BTreeMap<String, &Vec<(&str, Vec<f32>)>> =
                    names().zip(ranked.iter().map(|r| &r.features)).collect();
                out.write(&serde_json::json!({
                    "conversation": conversation.id,
                    "question": question.text,
                    "category": question.category,
                    "gold": question.gold,
                    "ranked": labels,
                    "ranker_features": features,
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
        sessions: &HashMap<&str, &str>,
        tally: &mut Tally,
    ) -> Result<Vec<RowRanking<'l>>, EvalError> {
        let session_of = |labels: &[&str]| -> Vec<&str> {
            labels
                .iter()
                .filter_map(|label| sessions.get(label).copied())
                .collect()
        };
        let gold: Vec<&str> = question.gold.iter().map(String::as_str).collect();
        let gold_sessions = session_of(&gold);
        let mut rankings = Vec::with_capacity(self.rows.len());
        for (i, row) in self.rows.iter().enumerate() {
            let mut request = SearchRequest::new(user.clone(), question.text.clone());
            request.top_k = Some(self.search_depth);
            request.retriever = row.retriever;
            request.memory_type = row.memory_type;
            request.second_hop = self.second_hop;
            request.split_questions = self.split_questions;
            request.min_relevance = self.min_relevance;
            let started = Instant::now();
            let results = self.engine.search(&request)?;
            let row_tally = &mut tally.rows[i];
            row_tally.reads.push(started.elapsed());
            let micros = |us: u64| std::time::Duration::from_micros(us);
            row_tally.classify.push(micros(results.timings.classify_us));
            row_tally.rerank.push(micros(results.timings.rerank_us));
            let label_of = |hit: &mnemos_core::retrieval::Hit| {
                let first = hit.memory.provenance.first()?;
                labels.get(first).map(String::as_str)
            };
            let features: Vec<(&str, Vec<f32>)> = results
                .hits
                .iter()
                .filter_map(|hit| Some((label_of(hit)?, hit.breakdown.ranker.clone()?.features)))
                .collect();
            let ranked: Vec<&str> = results
                .hits
                .iter()
                .take(TOP_K)
                .flat_map(|hit| &hit.memory.provenance)
                .filter_map(|turn| labels.get(turn).map(String::as_str))
                .collect();
            row_tally
                .scores
                .add_query(&question.category, &ranked, &question.gold);
            row_tally
                .sessions
                .add(&question.category, &session_of(&ranked), &gold_sessions);
            rankings.push(RowRanking {
                labels: ranked,
                features,
            });
        }
        Ok(rankings)
    }
}

/// Count the question's anchors and credit each row with the share of its resolving anchors
/// found in the text of the memories it ranked (see the module docs).
fn score_anchors(
    conversation: &Conversation,
    question: &Question,
    ranked: &[RowRanking<'_>],
    tally: &mut Tally,
) {
    let anchors = crate::perltqa::question_anchors(question);
    if anchors.is_empty() {
        return;
    }
    let text_of = |label: &str| {
        conversation
            .items
            .iter()
            .find(|item| item.label == label)
            .map(|item| item.text.to_lowercase())
    };
    let gold_texts: Vec<String> = question.gold.iter().filter_map(|g| text_of(g)).collect();
    let resolving: Vec<String> = anchors
        .iter()
        .map(|a| a.to_lowercase())
        .filter(|a| gold_texts.iter().any(|t| t.contains(a.as_str())))
        .collect();
    let coverage = &mut tally.anchors;
    coverage.anchors += anchors.len();
    coverage.resolved += resolving.len();
    coverage.questions_with_anchors += 1;
    if resolving.is_empty() {
        return;
    }
    coverage.questions_scored += 1;
    for (row, ranking) in tally.rows.iter_mut().zip(ranked) {
        let texts: Vec<String> = ranking.labels.iter().filter_map(|l| text_of(l)).collect();
        let found = resolving
            .iter()
            .filter(|a| texts.iter().any(|t| t.contains(a.as_str())))
            .count();
        row.anchor_sum += found as f64 / resolving.len() as f64;
    }
}

/// Peak resident memory of this process (Linux), in MB.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// A median in milliseconds with three decimals (re-ranking is sub-millisecond).
/// Session recall at `k` (0 when not measured).
fn session(recall: &BTreeMap<usize, f64>, k: usize) -> f64 {
    recall.get(&k).copied().unwrap_or(0.0)
}

fn ms3(summary: &Option<LatencySummary>) -> String {
    summary
        .as_ref()
        .map_or("-".into(), |s| format!("{:.3}", s.p50_ms))
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
            "{:<17} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6} {:>6} {:>10} {:>10} {:>11} {:>11}",
            "retriever",
            "R@1",
            "R@2",
            "R@3",
            "R@5",
            "R@10",
            "MRR",
            "nDCG@10",
            "S@5",
            "S@10",
            "anchorMAP",
            "rerank p50",
            "read p50ms",
            "read p95ms"
        );
        for r in &self.retrievers {
            let o = &r.scores.overall;
            let at = |k| o.recall.get(&k).copied().unwrap_or(0.0);
            let _ = writeln!(
                out,
                "{:<17} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>8.3} {:>6.3} {:>6.3} {:>10} {:>10} {:>11} {:>11}",
                r.retriever,
                at(1),
                at(2),
                at(3),
                at(5),
                at(10),
                o.mrr,
                o.ndcg.get(&10).copied().unwrap_or(0.0),
                session(&r.session_recall, 5),
                session(&r.session_recall, 10),
                r.anchor_map.map_or("-".into(), |m| format!("{m:.3}")),
                ms3(&r.rerank_latency),
                ms(&r.read_latency, |s| s.p50_ms),
                ms(&r.read_latency, |s| s.p95_ms),
            );
        }
        let _ = writeln!(
            out,
            "(S@k: session recall, a question scores when a gold item's session holds one of \
             the top-k items)"
        );
        if self.retrievers.len() > 1 {
            let _ = writeln!(
                out,
                "(the embedder keeps the vectors of recent single texts: rows after the first reuse \
                 the query's vector, so their read time leaves out embedding it)"
            );
        }
        if let Some(a) = &self.anchors {
            let _ = writeln!(
                out,
                "\nmemory anchors: {} of {} resolve in their gold memory's text; anchor MAP over \
                 {} of {} questions with anchors",
                a.resolved, a.anchors, a.questions_scored, a.questions_with_anchors
            );
        }
        for r in self
            .retrievers
            .iter()
            .filter(|r| r.classify_latency.is_some())
        {
            if let Some(c) = r.classify_latency.as_ref().filter(|c| c.p50_ms > 0.0) {
                let _ = writeln!(
                    out,
                    "{}: query classification p50 {:.3} ms, p95 {:.3} ms per search",
                    r.retriever, c.p50_ms, c.p95_ms
                );
            }
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
                "{:<22} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
                "category", "n", "R@1", "R@2", "R@3", "R@5", "R@10", "MRR", "S@5", "S@10"
            );
            for (category, s) in &r.scores.by_category {
                let at = |k| s.recall.get(&k).copied().unwrap_or(0.0);
                let sessions = r.session_recall_by_category.get(category);
                let _ = writeln!(
                    out,
                    "{:<22} {:>5} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3}",
                    category,
                    s.count,
                    at(1),
                    at(2),
                    at(3),
                    at(5),
                    at(10),
                    s.mrr,
                    sessions.map_or(0.0, |m| session(m, 5)),
                    sessions.map_or(0.0, |m| session(m, 10)),
                );
            }
        }
    }
}
