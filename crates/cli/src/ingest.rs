//! `mnemos ingest`: JSONL turn files and dataset files into the store, in batches.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use mnemos_core::{NewTurn, Scope};
use mnemos_engine::{Engine, JobReport};
use mnemos_eval::dataset::RetrievalDataset;
use mnemos_eval::format::{load_retrieval_dataset, sniff_format, Format};
use mnemos_eval::jsonl::{read_turn_file, JsonlRead};

use crate::config::Config;
use crate::open;

#[derive(Args)]
pub struct IngestArgs {
    /// A JSONL turn file, or a LoCoMo / MemDaily / PerLTQA file (or PerLTQA directory).
    pub path: PathBuf,
    /// auto, jsonl, locomo, memdaily or perltqa.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Reject the whole file if any line is malformed (default: skip and count bad lines).
    #[arg(long)]
    pub strict: bool,
    /// User for JSONL lines that name none.
    #[arg(long, short = 'u', default_value = "default")]
    pub user: String,
    /// Agent for lines that name none.
    #[arg(long, default_value = "default")]
    pub agent: String,
    /// Session for lines that name none.
    #[arg(long, default_value = "default")]
    pub session: String,
    /// Turns committed per transaction (and embedded per batch).
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Memory preset to run (default: the config's `[engine] preset`; `mnemos presets` lists them).
    #[arg(long)]
    pub preset: Option<String>,
}

/// What an ingest did.
pub struct IngestReport {
    pub turns: usize,
    pub users: usize,
    pub skipped_lines: usize,
    pub seconds: f64,
    pub jobs: JobReport,
}

pub fn progress_bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

/// Commit `turns` through the engine in batches with a progress bar, closing each session
/// (user, agent, session) right after its last turn in the input so its mechanism can
/// summarize it. Returns the number of turns committed and what the derived jobs did.
pub fn commit_turns(
    engine: &Engine,
    turns: Vec<NewTurn>,
    batch: usize,
) -> Result<(usize, JobReport)> {
    let bar = progress_bar(turns.len() as u64, "ingest");
    let mut last_of: std::collections::HashMap<Scope, usize> = std::collections::HashMap::new();
    for (i, turn) in turns.iter().enumerate() {
        last_of.insert(turn.scope.clone(), i);
    }
    let mut done = 0;
    let mut jobs = JobReport::default();
    let mut pending = turns.into_iter().peekable();
    while pending.peek().is_some() {
        let chunk: Vec<NewTurn> = pending.by_ref().take(batch.max(1)).collect();
        let closing: Vec<Scope> = chunk
            .iter()
            .enumerate()
            .filter(|(i, t)| last_of.get(&t.scope) == Some(&(done + i)))
            .map(|(_, t)| t.scope.clone())
            .collect();
        let n = chunk.len();
        let report = engine
            .add(chunk)
            .with_context(|| format!("after {done} turns were committed"))?;
        jobs.absorb(report.jobs);
        done += n;
        bar.inc(n as u64);
        for scope in closing {
            jobs.absorb(
                engine
                    .end_session(&scope)
                    .with_context(|| format!("closing session {scope}"))?,
            );
        }
    }
    bar.finish_and_clear();
    Ok((done, jobs))
}

/// Print what the derived jobs did (failures and stuck jobs are never silent).
pub fn print_jobs(jobs: &JobReport) {
    if jobs.ran + jobs.failed == 0 && jobs.stuck.is_empty() {
        return;
    }
    println!(
        "derived jobs: {} ran, {} failed; memories +{} created, {} updated, {} forgotten",
        jobs.ran,
        jobs.failed,
        jobs.memories_created,
        jobs.memories_updated,
        jobs.memories_forgotten
    );
    for (id, error) in jobs.errors.iter().take(5) {
        eprintln!("job {id} failed (it stays pending and is retried): {error}");
    }
    for (id, error) in &jobs.stuck {
        eprintln!("job {id} gave up after repeated failures: {error}");
    }
}

pub fn jsonl_turns(read: JsonlRead, config: &Config, args: &IngestArgs) -> Result<Vec<NewTurn>> {
    let mut turns = Vec::with_capacity(read.records.len());
    for (line, record) in read.records {
        let scope = Scope::new(
            config.tenant.clone(),
            record.user.unwrap_or_else(|| args.user.clone()),
            record.agent.unwrap_or_else(|| args.agent.clone()),
            record.session.unwrap_or_else(|| args.session.clone()),
        )
        .with_context(|| format!("line {line}"))?;
        turns.push(NewTurn {
            scope,
            role: record.role,
            speaker: record.speaker,
            text: record.text,
            time: record.time,
            round: None,
            metadata: record.metadata,
        });
    }
    Ok(turns)
}

/// Every conversation of a dataset goes into its own user scope, items in time order.
pub fn dataset_turns(
    dataset: &RetrievalDataset,
    tenant: &str,
    agent: &str,
) -> Result<Vec<NewTurn>> {
    let mut turns = Vec::new();
    for conversation in &dataset.conversations {
        for item in &conversation.items {
            let scope = Scope::new(tenant, conversation.id.clone(), agent, item.session.clone())?;
            let mut metadata = item.metadata.clone();
            metadata.insert("label".into(), item.label.clone());
            turns.push(NewTurn {
                scope,
                role: item.role,
                speaker: item.speaker.clone(),
                text: item.text.clone(),
                time: item.time,
                round: None,
                metadata,
            });
        }
    }
    Ok(turns)
}

pub fn resolve_format(path: &std::path::Path, format: &str) -> Result<Format> {
    if format == "auto" {
        Ok(sniff_format(path)?)
    } else {
        format.parse::<Format>().map_err(|e| anyhow::anyhow!("{e}"))
    }
}

pub fn ingest_into(engine: &Engine, config: &Config, args: &IngestArgs) -> Result<IngestReport> {
    let format = resolve_format(&args.path, &args.format)?;
    let (turns, skipped) = match format {
        Format::Jsonl => {
            let read = read_turn_file(&args.path, args.strict)?;
            let errors = read.errors.clone();
            for error in errors.iter().take(20) {
                eprintln!("skipped line {}: {}", error.line, error.message);
            }
            if errors.len() > 20 {
                eprintln!("… and {} more malformed lines", errors.len() - 20);
            }
            (jsonl_turns(read, config, args)?, errors.len())
        }
        other => {
            let dataset = load_retrieval_dataset(&args.path, other)?;
            (dataset_turns(&dataset, &config.tenant, &args.agent)?, 0)
        }
    };
    let users: std::collections::BTreeSet<String> =
        turns.iter().map(|t| t.scope.user.clone()).collect();
    let started = Instant::now();
    let (committed, jobs) = commit_turns(engine, turns, args.batch)?;
    Ok(IngestReport {
        turns: committed,
        users: users.len(),
        skipped_lines: skipped,
        seconds: started.elapsed().as_secs_f64(),
        jobs,
    })
}

pub fn run(config: &Config, args: IngestArgs) -> Result<()> {
    let engine = open::engine(config, args.preset.as_deref())?;
    let report = ingest_into(&engine, config, &args)?;
    println!(
        "ingested {} turns for {} user(s) into {} in {:.2} s ({:.0} turns/s, embedder {}, preset {}, model {})",
        report.turns,
        report.users,
        config.db.display(),
        report.seconds,
        report.turns as f64 / report.seconds.max(1e-9),
        engine.memories().embedder().id(),
        engine.mechanism(&args.agent).name(),
        engine.model().id()
    );
    print_jobs(&report.jobs);
    if report.skipped_lines > 0 {
        println!(
            "skipped {} malformed line(s) (use --strict to reject the file instead)",
            report.skipped_lines
        );
    }
    Ok(())
}
