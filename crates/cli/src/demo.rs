//! `mnemos demo`: ingest a bundled bilingual sample dialogue, then answer a few queries with
//! their explanations — the quickest way to see what the engine does.

use mnemos_render as render;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use mnemos_core::UserKey;
use mnemos_engine::{RecallRequest, SearchRequest};
use mnemos_eval::demo::{sample_turns, AGENT, QUERIES, USERS};
use mnemos_setup::StoreLocation;

use crate::ingest::{ingest, writing_engine};
use crate::{output, GlobalArgs};

#[derive(Args)]
pub struct DemoArgs {
    /// Keep the demo database here (default: a scratch directory removed afterwards).
    #[arg(long = "keep-db")]
    keep_db: Option<PathBuf>,
    /// Results per query.
    #[arg(long, short = 'k', default_value_t = 3)]
    top_k: usize,
    /// Run this memory preset and show what its recall hands a prompt for each query
    /// (default: show the retrieval pipeline's ranked hits with explanations).
    #[arg(long)]
    preset: Option<String>,
    /// Token budget of each recalled context (with --preset).
    #[arg(long, default_value_t = 400)]
    budget: usize,
}

pub fn run(global: &GlobalArgs, args: DemoArgs) -> Result<()> {
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut config = global.config()?;
    config.db = StoreLocation::Sqlite(
        args.keep_db
            .clone()
            .unwrap_or_else(|| scratch.path().join("demo.db")),
    );
    if args.keep_db.as_ref().is_some_and(|p| p.exists()) {
        anyhow::bail!(
            "{} already exists; the demo only writes to a new database",
            config.db
        );
    }

    println!("mnemos demo — database {}", config.db);
    let engine = writing_engine(&config, args.preset.as_deref())?;
    let info = engine.info();
    println!(
        "embedder: {} ({} dimensions); preset: {}; memory model: {}",
        info.embedder,
        info.dimension,
        engine.mechanism(AGENT).name(),
        info.memory_model
    );
    let turns = sample_turns(&config.tenant)?;
    let started = std::time::Instant::now();
    let report = ingest(&engine, turns.turns, 64, None)?;
    println!(
        "ingested {} turns (an English and a Chinese conversation) in {:.0} ms",
        report.added,
        started.elapsed().as_secs_f64() * 1000.0
    );
    output::print_jobs(&report.jobs);
    println!();

    for (user, query) in QUERIES {
        let user_key = UserKey::new(config.tenant.clone(), user)?;
        println!("[{user}] {query}");
        if args.preset.is_some() {
            let request = RecallRequest::new(query, args.budget);
            let context = engine.recall(&user_key, AGENT, &request)?;
            print!("{}", render::context(&context, true));
        } else {
            let mut request = SearchRequest::new(user_key, query);
            request.top_k = Some(args.top_k);
            request.record_access = true;
            let results = engine.search(&request)?;
            print!("{}", render::search_results(&results, true));
        }
        println!();
    }
    if args.preset.is_some() {
        for user in USERS {
            let stats = engine.stats(&UserKey::new(config.tenant.clone(), user)?, AGENT)?;
            println!(
                "[{user}] {} memories ({} forgotten), {} tokens; model calls {}",
                stats.total_memories, stats.forgotten, stats.tokens, stats.model_calls
            );
        }
    }
    println!("Try it on your own data: mnemos ingest FILE.jsonl --user NAME; mnemos search \"…\" --user NAME --explain");
    Ok(())
}
