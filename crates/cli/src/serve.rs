//! `mnemos serve`: the engine over HTTP (see docs/server.md) until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use mnemos_engine::{Config, Engine, OpenOptions};
use mnemos_server::{JobWorker, ServerConfig};

use crate::progress;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Other than loopback only when API keys exist (`mnemos keys`) or
    /// an admin key is set (environment variable MNEMOS_ADMIN_KEY).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    body_limit: usize,
    /// Longest a request may take, in seconds.
    #[arg(long, default_value_t = 30)]
    request_timeout: u64,
    /// The user and agent of `/mcp` tool calls that name none.
    #[command(flatten)]
    mcp: crate::mcp::McpDefaultArgs,
}

pub fn run(config: &Config, args: ServeArgs) -> Result<()> {
    let server = ServerConfig {
        listen: args.listen,
        body_limit: args.body_limit,
        request_timeout: Duration::from_secs(args.request_timeout),
        jobs: Some(JobWorker::default()),
        // From the environment, not a flag: a flag's value shows in every process listing.
        admin_key: std::env::var("MNEMOS_ADMIN_KEY")
            .ok()
            .filter(|k| !k.is_empty()),
        mcp_defaults: args.mcp.defaults(),
    };
    // Derived work (summaries, persona, reflections…) runs on the server's worker, so adding
    // a turn answers as soon as the turn is stored.
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    let config = &config;
    server.validate()?;
    let options = OpenOptions {
        create: true,
        load_embedder: true,
        preset: None,
    };
    let engine = Engine::open_with(config, &options, Some(progress::ModelWait::start()))?;
    for note in engine.notes() {
        eprintln!("note: {note}");
    }
    eprintln!("access: {}", mnemos_server::access(&engine, &server)?);
    let info = engine.info();
    eprintln!(
        "store: {} ({}); vector search {}",
        info.store.kind.name(),
        info.store.location,
        info.dense_search
    );
    let tenant = config.tenant.clone();
    let db = config.db.to_string();
    let defaults = crate::mcp::describe(&server.mcp_defaults);
    mnemos_server::run_until_signal(Arc::new(engine), tenant.clone(), &server, |addr| {
        eprintln!("mnemos serving {db} (tenant {tenant}) on http://{addr}/v1 — Ctrl-C stops");
        eprintln!("MCP tools: http://{addr}/mcp{defaults}");
        eprintln!("web inspector: http://{addr}/ui/");
    })?;
    eprintln!("mnemos server stopped");
    Ok(())
}
