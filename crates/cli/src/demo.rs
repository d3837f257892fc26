//! `mnemos demo`: ingest a bundled bilingual sample dialogue, then answer a few queries with
//! their explanations — the quickest way to see what the engine does.

use std::io::Cursor;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use mnemos_core::{SearchRequest, UserKey};
use mnemos_engine::RecallRequest;
use mnemos_eval::jsonl::read_turn_lines;

use crate::ingest::{commit_turns, jsonl_turns, print_jobs, IngestArgs};
use crate::{open, output, GlobalArgs};

const SAMPLE: &str = include_str!("../data/demo_dialogue.jsonl");

const QUERIES: [(&str, &str); 6] = [
    (
        "lena",
        "When is my sister visiting, and what can't she eat?",
    ),
    ("lena", "What is my cat called?"),
    ("lena", "How is my half marathon training going?"),
    ("lena", "What helps me with seasickness on the boat?"),
    ("wei", "我女朋友是做什么工作的？"),
    ("wei", "医生让我注意什么？"),
];

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
    config.db = args
        .keep_db
        .clone()
        .unwrap_or_else(|| scratch.path().join("demo.db"));
    if args.keep_db.as_ref().is_some_and(|p| p.exists()) {
        anyhow::bail!(
            "{} already exists; the demo only writes to a new database",
            config.db.display()
        );
    }

    println!("mnemos demo — database {}", config.db.display());
    let engine = open::engine(&config, args.preset.as_deref())?;
    let memories = engine.memories();
    println!(
        "embedder: {} ({} dimensions); preset: {}; memory model: {}",
        memories.embedder().id(),
        memories.embedder().dimension(),
        engine.mechanism("demo").name(),
        engine.model().id()
    );

    let read = read_turn_lines(Cursor::new(SAMPLE.as_bytes()), true)?;
    let ingest_args = IngestArgs {
        path: PathBuf::from("demo_dialogue.jsonl"),
        format: "jsonl".into(),
        strict: true,
        user: "default".into(),
        agent: "demo".into(),
        session: "default".into(),
        batch: 64,
        preset: args.preset.clone(),
    };
    let turns = jsonl_turns(read, &config, &ingest_args)?;
    let started = std::time::Instant::now();
    let (count, jobs) = commit_turns(&engine, turns, ingest_args.batch)?;
    println!(
        "ingested {count} turns (an English and a Chinese conversation) in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    print_jobs(&jobs);
    println!();

    for (user, query) in QUERIES {
        let user_key = UserKey::new(config.tenant.clone(), user)?;
        println!("[{user}] {query}");
        if args.preset.is_some() {
            let request = RecallRequest {
                query: query.to_string(),
                token_budget: args.budget,
                session: None,
            };
            let context = engine.recall(&user_key, "demo", &request)?;
            output::print_context(&context, true);
        } else {
            let mut request = SearchRequest::new(user_key, query);
            request.top_k = Some(args.top_k);
            request.record_access = true;
            let results = memories.search(&request)?;
            output::print_results(&results, true);
        }
        println!();
    }
    if args.preset.is_some() {
        for user in ["lena", "wei"] {
            let stats = engine.stats(&UserKey::new(config.tenant.clone(), user)?, "demo")?;
            println!(
                "[{user}] {} memories ({} forgotten), {} tokens; model calls {}",
                stats.total_memories, stats.forgotten, stats.tokens, stats.model_calls
            );
        }
    }
    println!("Try it on your own data: mnemos ingest FILE.jsonl --user NAME; mnemos search \"…\" --user NAME --explain");
    Ok(())
}
