//! `mnemos bench serve`: the HTTP server under concurrent load on loopback (see
//! `mnemos_server::bench`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};

use mnemos_engine::{Config, Engine, OpenOptions};
use mnemos_server::bench::{self, BenchSettings};

use crate::usage::usage;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Preload users, serve on a free loopback port, and run concurrent clients (searches
    /// and adds): throughput, p50/p95/p99, errors, acknowledged adds stored, HTTP overhead.
    /// Use --db to keep the preloaded data for the next run (default: the config's database).
    Serve(ServeBenchArgs),
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
    /// One-at-a-time searches for the HTTP overhead.
    #[arg(long, default_value_t = 2000)]
    overhead_queries: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(config: &Config, command: BenchCommand) -> Result<()> {
    let BenchCommand::Serve(args) = command;
    if args.users == 0 || args.clients == 0 || args.seconds == 0 {
        usage!("--users, --clients and --seconds must be positive");
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
    let engine = Engine::open(&config, &options)?;
    eprintln!(
        "bench serve: {} users × {} memories in {} ({}), {} clients for {} s",
        args.users,
        args.memories,
        config.db,
        engine.info().embedder,
        args.clients,
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
    let report = bench::run(Arc::new(engine), settings)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", bench::render(&report));
    }
    Ok(())
}
