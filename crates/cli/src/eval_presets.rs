//! `mnemos eval presets`: run presets side by side on one dataset conversation, turn by turn
//! as a live chat would, and report observe / end-of-session / recall latency, memory size at
//! the end, model calls and how often the recalled context holds the gold evidence.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::{Scope, SystemClock, TurnId, UserKey};
use mnemos_engine::{Engine, RecallRequest};
use mnemos_eval::format::{load_retrieval_dataset, Format};
use mnemos_eval::metrics::{LatencyStats, LatencySummary};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

#[derive(Args)]
pub struct EvalPresetsArgs {
    /// The dataset file (LoCoMo, MemDaily or PerLTQA).
    path: PathBuf,
    /// auto, locomo, memdaily or perltqa.
    #[arg(long, default_value = "auto")]
    dataset: String,
    /// Which conversation of the dataset (0-based index).
    #[arg(long, default_value_t = 0)]
    conversation: usize,
    /// Comma-separated presets (default: every preset).
    #[arg(long)]
    presets: Option<String>,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// Ask at most this many of the conversation's questions.
    #[arg(long)]
    questions: Option<usize>,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct PresetRow {
    preset: String,
    turns: usize,
    questions: usize,
    observe: Option<LatencySummary>,
    end_session: Option<LatencySummary>,
    recall: Option<LatencySummary>,
    memories: usize,
    forgotten: usize,
    memories_by_kind: std::collections::BTreeMap<String, usize>,
    memory_tokens: usize,
    mean_context_tokens: f64,
    /// Share of questions whose recalled context came (by provenance) from a gold turn.
    evidence_hit: f64,
    model_calls: u64,
    jobs_failed: usize,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    conversation: String,
    embedder: String,
    model: String,
    budget: usize,
    rows: Vec<PresetRow>,
}

fn ms(summary: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64) -> String {
    summary
        .as_ref()
        .map_or_else(|| "-".to_string(), |s| format!("{:.2}", pick(s)))
}

pub fn run(config: &Config, args: EvalPresetsArgs) -> Result<()> {
    let format = crate::eval_common::resolve_format(&args.path, &args.dataset)?;
    if format == Format::Jsonl {
        bail!("eval presets needs a dataset with questions (LoCoMo, MemDaily or PerLTQA)");
    }
    let dataset = load_retrieval_dataset(&args.path, format)?;
    let Some(conversation) = dataset.conversations.get(args.conversation) else {
        bail!(
            "conversation {} does not exist ({} has {})",
            args.conversation,
            args.path.display(),
            dataset.conversations.len()
        );
    };
    let names: Vec<String> = match &args.presets {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None => mnemos_engine::presets::names()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    for name in &names {
        // Fail before any work on a misspelt preset.
        mnemos_engine::presets::build(&config.engine.engine_config(Some(name)).preset)?;
    }
    let embedder = mnemos_engine::setup::embedder(config)?;
    let questions: Vec<_> = conversation
        .questions
        .iter()
        .take(args.questions.unwrap_or(usize::MAX))
        .collect();
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut rows = Vec::new();
    let mut model_id = String::new();
    for name in &names {
        // Each preset gets its own database and model (so call counts are its own).
        let store = Arc::new(SqliteStore::open(
            &scratch.path().join(format!("{name}.db")),
            SqliteOptions::default(),
        )?);
        let model = mnemos_engine::setup::memory_model(config, &embedder)?.0;
        model_id = model.id().to_string();
        let engine = Engine::builder(store, Arc::clone(&embedder), model)
            .clock(Arc::new(SystemClock))
            .retrieval(config.retrieval.clone())
            .config(config.engine.engine_config(Some(name)))
            .build()?;
        rows.push(run_preset(
            &engine,
            config,
            name,
            conversation,
            &questions,
            args.budget,
        )?);
    }
    let report = Report {
        dataset: dataset.name.clone(),
        conversation: conversation.id.clone(),
        embedder: embedder.id().to_string(),
        model: model_id,
        budget: args.budget,
        rows,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} conversation {} ({} turns, {} questions); embedder {}, model {}, budget {} tokens",
        report.dataset,
        report.conversation,
        conversation.items.len(),
        questions.len(),
        report.embedder,
        report.model,
        report.budget
    );
    println!(
        "{:<11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "preset",
        "obs p50ms",
        "obs p95ms",
        "end p50ms",
        "rec p50ms",
        "rec p95ms",
        "memories",
        "forgot",
        "ctx tok",
        "evidence",
        "calls"
    );
    for row in &report.rows {
        println!(
            "{:<11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9.0} {:>9.3} {:>7}",
            row.preset,
            ms(&row.observe, |s| s.p50_ms),
            ms(&row.observe, |s| s.p95_ms),
            ms(&row.end_session, |s| s.p50_ms),
            ms(&row.recall, |s| s.p50_ms),
            ms(&row.recall, |s| s.p95_ms),
            row.memories,
            row.forgotten,
            row.mean_context_tokens,
            row.evidence_hit,
            row.model_calls
        );
        if row.jobs_failed > 0 {
            println!(
                "  {}: {} derived job(s) failed",
                row.preset, row.jobs_failed
            );
        }
    }
    println!("memories at the end, by kind:");
    for row in &report.rows {
        let kinds: Vec<String> = row
            .memories_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!("  {:<11} {}", row.preset, kinds.join(", "));
    }
    Ok(())
}

fn run_preset(
    engine: &Engine,
    config: &Config,
    name: &str,
    conversation: &mnemos_eval::dataset::Conversation,
    questions: &[&mnemos_eval::dataset::Question],
    budget: usize,
) -> Result<PresetRow> {
    const AGENT: &str = "eval";
    let user = UserKey::new(config.tenant.clone(), conversation.id.clone())?;
    let mut observe = LatencyStats::new();
    let mut end_session = LatencyStats::new();
    let mut turn_of: HashMap<&str, TurnId> = HashMap::new();
    let mut jobs_failed = 0usize;
    let bar = progress_bar(conversation.items.len() as u64, name);
    for (i, item) in conversation.items.iter().enumerate() {
        let scope = Scope::new(
            config.tenant.clone(),
            conversation.id.clone(),
            AGENT,
            item.session.clone(),
        )?;
        let turn = item.new_turn(scope.clone());
        let started = Instant::now();
        let report = engine.add(vec![turn])?;
        observe.push(started.elapsed());
        jobs_failed += report.jobs.failed;
        if let Some(added) = report.turns.first() {
            turn_of.insert(item.label.as_str(), added.turn_id);
        }
        let last_of_session = conversation
            .items
            .get(i + 1)
            .is_none_or(|next| next.session != item.session);
        if last_of_session {
            let started = Instant::now();
            jobs_failed += engine.end_session(&scope)?.failed;
            end_session.push(started.elapsed());
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut recall = LatencyStats::new();
    let (mut hits, mut context_tokens) = (0usize, 0usize);
    for question in questions {
        let gold: Vec<TurnId> = question
            .gold
            .iter()
            .filter_map(|label| turn_of.get(label.as_str()).copied())
            .collect();
        let request = RecallRequest {
            query: question.text.clone(),
            token_budget: budget,
            session: None,
        };
        let started = Instant::now();
        let context = engine.recall(&user, AGENT, &request)?;
        recall.push(started.elapsed());
        context_tokens += context.tokens;
        let hit = context
            .items
            .iter()
            .any(|item| item.provenance.iter().any(|t| gold.contains(t)));
        hits += usize::from(hit);
    }
    let stats = engine.stats(&user, AGENT)?;
    let asked = questions.len().max(1) as f64;
    Ok(PresetRow {
        preset: name.to_string(),
        turns: conversation.items.len(),
        questions: questions.len(),
        observe: observe.summary(),
        end_session: end_session.summary(),
        recall: recall.summary(),
        memories: stats.total_memories,
        forgotten: stats.forgotten,
        memories_by_kind: stats.memories,
        memory_tokens: stats.tokens,
        mean_context_tokens: context_tokens as f64 / asked,
        evidence_hit: hits as f64 / asked,
        model_calls: stats.model_calls,
        jobs_failed,
    })
}
