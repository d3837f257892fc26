//! `mnemos bench serve`: the HTTP server under concurrent load on loopback (see
//! `mnemos_server::bench`); `mnemos bench search`: search latency and index recall over one
//! user with many memories (see `mnemos_eval::search_bench`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};

use mnemos_server::bench::{self, BenchSettings};
use mnemos_setup::{Config, OpenOptions};

use crate::output;
use crate::usage::usage;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Preload users, serve on a free loopback port, and run concurrent clients (searches
    /// and adds): throughput, p50/p95/p99, errors, acknowledged adds stored (fails when one is
    /// missing), the HTTP overhead and the server's own split of a request's time.
    /// Use --db to keep the preloaded data for the next run (default: the config's database).
    Serve(ServeBenchArgs),
    /// Search latency (hybrid and dense, p50/p95/p99) over one user with many memories in the
    /// configured store, and the recall@k of the store's vector index against brute force.
    /// Use --db to keep the loaded memories for the next run.
    Search(mnemos_eval::cli::SearchBenchArgs),
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
        BenchCommand::Search(args) => crate::eval::print_report(|progress| {
            mnemos_eval::cli::bench_search(config, args, progress)
        }),
    }
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
    output::emit(args.json, &report, || bench::render(&report))?;
    // A lost acknowledged write is the one result that must never pass unnoticed.
    if report.adds_missing > 0 {
        let (lost, acknowledged) = (report.adds_missing, report.adds_acknowledged);
        anyhow::bail!("{lost} of {acknowledged} acknowledged adds are not stored");
    }
    Ok(())
}
