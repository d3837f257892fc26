//! `mnemos bench serve`: the HTTP server under concurrent load on loopback (see
//! `mnemos_server::bench`); `mnemos bench search`: search latency and index recall over one
//! user with many memories (see `mnemos_eval::search_bench`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};

use mnemos_core::retrieval::VectorPlacement;
use mnemos_eval::search_bench::{self, SearchBenchSettings};
use mnemos_server::bench::{self, BenchSettings};
use mnemos_setup::{Config, OpenOptions};

use crate::output;
use crate::usage::usage;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Preload users, serve on a free loopback port, and run concurrent clients (searches
    /// and adds): throughput, p50/p95/p99, errors, acknowledged adds stored, HTTP overhead.
    /// Use --db to keep the preloaded data for the next run (default: the config's database).
    Serve(ServeBenchArgs),
    /// Search latency (hybrid and dense, p50/p95/p99) over one user with many memories in the
    /// configured store, and the recall@k of the store's vector index against brute force.
    /// Use --db to keep the loaded memories for the next run.
    Search(SearchBenchArgs),
}

#[derive(Args)]
pub struct SearchBenchArgs {
    /// Memories of the searched user.
    #[arg(long, default_value_t = 10_000)]
    memories: usize,
    /// Searches per retriever.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Hits per search (and k of recall@k).
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Where dense search runs: auto (the store's index when it has one), in_process, store.
    #[arg(long)]
    vectors: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ServeBenchArgs {
    #[arg(long, default_value_t = 100)]
    users: usize,
    /// Memories per user before the load starts.
    #[arg(long, default_value_t = 10_000)]
    memories: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Share of requests that search; the rest add a turn.
    #[arg(long, default_value_t = 0.9)]
    search_share: f64,
    /// Servers over the one store (each with its own engine, caches and connections; clients
    /// spread over them): 2 shows a scale-out over PostgreSQL on one machine.
    #[arg(long, default_value_t = 1)]
    servers: usize,
    /// One-at-a-time searches for the HTTP overhead.
    #[arg(long, default_value_t = 2000)]
    overhead_queries: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(config: &Config, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Serve(args) => serve(config, args),
        BenchCommand::Search(args) => search(config, args),
    }
}

fn search(config: &Config, args: SearchBenchArgs) -> Result<()> {
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    if let Some(vectors) = &args.vectors {
        config.retrieval.vectors = match vectors.as_str() {
            "auto" => VectorPlacement::Auto,
            "in_process" => VectorPlacement::InProcess,
            "store" => VectorPlacement::Store,
            other => usage!("--vectors must be auto, in_process or store, not {other}"),
        };
    }
    let options = OpenOptions {
        create: true,
        load_embedder: true,
        preset: None,
    };
    let engine = mnemos_setup::open(&config, &options)?;
    eprintln!(
        "bench search: {} memories in {} ({})",
        args.memories,
        config.db,
        engine.info().embedder
    );
    let settings = SearchBenchSettings {
        tenant: config.tenant.clone(),
        memories: args.memories,
        queries: args.queries,
        top_k: args.top_k,
    };
    let report = search_bench::run(&engine, settings, config.retrieval.candidates)?;
    output::emit(args.json, &report, || search_bench::render(&report))
}

fn serve(config: &Config, args: ServeBenchArgs) -> Result<()> {
    if args.users == 0 || args.clients == 0 || args.seconds == 0 || args.servers == 0 {
        usage!("--users, --clients, --seconds and --servers must be positive");
    }
    if !(0.0..=1.0).contains(&args.search_share) {
        usage!("--search-share must be between 0 and 1");
    }
    // As under `mnemos serve`: derived work never runs inside a request.
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    let options = OpenOptions {
        create: true,
        load_embedder: true,
        preset: None,
    };
    let engines = (0..args.servers)
        .map(|_| mnemos_setup::open(&config, &options).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let info = engines[0].info();
    eprintln!(
        "bench serve: {} users × {} memories in {} ({}, vector search {}), {} clients on {} \
         server(s) for {} s",
        args.users,
        args.memories,
        config.db,
        info.embedder,
        info.dense_search,
        args.clients,
        args.servers,
        args.seconds
    );
    let settings = BenchSettings {
        users: args.users,
        memories: args.memories,
        clients: args.clients,
        duration: Duration::from_secs(args.seconds),
        search_share: args.search_share,
        overhead_queries: args.overhead_queries,
        tenant: config.tenant.clone(),
    };
    let report = bench::run(engines, settings)?;
    output::emit(args.json, &report, || bench::render(&report))
}
