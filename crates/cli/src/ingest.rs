//! `mnemos ingest`: a JSONL turn file or a dataset file into the engine.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use mnemos_core::defaults;
use mnemos_engine::{Engine, IngestOptions, IngestReport};
use mnemos_eval::{read_turns, Format, TurnDefaults};
use mnemos_setup::{Config, OpenOptions};

use crate::usage::usage;
use crate::{output, progress};

#[derive(Args)]
pub struct IngestArgs {
    /// A JSONL turn file, or a LoCoMo / MemDaily / PerLTQA file (or PerLTQA directory).
    pub path: PathBuf,
    /// The input's format (default: recognized from the file).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Reject the whole file if any line is malformed.
    #[arg(long, conflicts_with = "skip_bad")]
    pub strict: bool,
    /// Ingest the good lines of a file with malformed ones and exit 0 (by default the good lines
    /// are ingested, the bad ones listed, and the exit status is 2).
    #[arg(long)]
    pub skip_bad: bool,
    /// User for JSONL lines that name none.
    #[arg(long, short = 'u', default_value = defaults::DEFAULT_USER)]
    pub user: String,
    /// Agent for lines that name none.
    #[arg(long, default_value = defaults::DEFAULT_AGENT)]
    pub agent: String,
    /// Session for lines that name none.
    #[arg(long, default_value = defaults::DEFAULT_SESSION)]
    pub session: String,
    /// Turns committed per transaction (and embedded per batch).
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Threads writing at once, each with its own users (default: the number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Leave new vectors for a server to move into the store's vector index, instead of
    /// indexing them before exiting (PostgreSQL with pgvector; searches find them either way).
    #[arg(long)]
    pub defer_index: bool,
    /// Memory preset to run (default: the config's `[engine] preset`; `mnemos presets` lists them).
    #[arg(long)]
    pub preset: Option<String>,
}

/// The engine ingest and demo write through: creates the database, loads the embedder, and
/// says when derived work waits on a model.
pub fn writing_engine(config: &Config, preset: Option<&str>) -> Result<Engine> {
    let options = OpenOptions::writing().preset(preset);
    let engine = mnemos_setup::open_with(config, &options, Some(progress::ModelWait::start()))?;
    for note in engine.notes() {
        eprintln!("note: {note}");
    }
    Ok(engine)
}

/// Ingest `turns` with a progress bar, on `workers` threads (default: one per core).
pub fn ingest(
    engine: &Engine,
    turns: Vec<mnemos_engine::NewTurn>,
    batch: usize,
    workers: Option<usize>,
) -> Result<IngestReport> {
    let bar = progress::bar(turns.len() as u64, "ingest");
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let options = IngestOptions {
        batch: batch.max(1),
        close_sessions: true,
        workers: workers.unwrap_or(cores),
    };
    let report = engine.ingest(turns, &options, &mut |done| bar.set_position(done as u64));
    bar.finish_and_clear();
    Ok(report?)
}

/// Move what this ingest wrote into the store's vector index (when the store defers it), and
/// say how long that took: it is not part of the turns/s above.
fn catch_up_index(engine: &Engine) -> Result<()> {
    let started = Instant::now();
    let mut bar = None;
    let mut done = 0;
    let indexed = engine.index_backlog(&mut |step| {
        done += step.indexed;
        if step.remaining > 0 {
            let bar =
                bar.get_or_insert_with(|| progress::bar(done + step.remaining, "vector index"));
            bar.set_position(done);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if indexed > 0 {
        println!(
            "vector index: {indexed} vector window(s) indexed in {:.2} s (searches read them \
             exactly until then)",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

pub fn run(config: &Config, args: IngestArgs) -> Result<()> {
    let defaults = TurnDefaults {
        tenant: config.tenant.clone(),
        user: args.user.clone(),
        agent: args.agent.clone(),
        session: args.session.clone(),
    };
    let source = read_turns(&args.path, args.format, &defaults, args.strict)?;
    for error in source.skipped.iter().take(20) {
        eprintln!("skipped line {}: {}", error.line, error.message);
    }
    if source.skipped.len() > 20 {
        eprintln!("… and {} more malformed lines", source.skipped.len() - 20);
    }
    if source.turns.is_empty() {
        usage!(
            "{}: no turn to ingest ({} line(s) rejected)",
            args.path.display(),
            source.skipped.len()
        );
    }
    let engine = writing_engine(config, args.preset.as_deref())?;
    let started = Instant::now();
    let report = ingest(&engine, source.turns, args.batch, args.workers)?;
    let seconds = started.elapsed().as_secs_f64();
    let info = engine.info();
    println!(
        "ingested {} new turn(s) for {} user(s) into {} in {seconds:.2} s ({:.0} turns/s, \
         embedder {}, preset {}, model {})",
        report.added,
        report.users,
        config.db,
        report.added as f64 / seconds.max(1e-9),
        info.embedder,
        engine.mechanism(&args.agent).name(),
        info.memory_model
    );
    if report.duplicates > 0 {
        println!(
            "{} turn(s) were already stored (same key) and were not added again",
            report.duplicates
        );
    }
    output::print_jobs(&report.jobs);
    if !args.defer_index {
        catch_up_index(&engine)?;
    }
    if !source.skipped.is_empty() && !args.skip_bad {
        usage!(
            "{} malformed line(s) were skipped (see above); fix them and ingest again (only new \
             turns are added), or pass --skip-bad to accept the rest",
            source.skipped.len()
        );
    }
    Ok(())
}
