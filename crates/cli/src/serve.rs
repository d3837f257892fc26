//! `mnemos serve`: the engine over HTTP (see docs/server.md) until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use mnemos_server::{JobWorker, ServerConfig, ServerError};
use mnemos_setup::{Config, StoreLocation};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Other than loopback only when API keys exist (`mnemos keys`) or
    /// an admin key is set (environment variable MNEMOS_ADMIN_KEY).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    body_limit: usize,
    /// Longest a request may take, in seconds; then it is answered 504 and its search or
    /// recall stops.
    #[arg(long, default_value_t = 30)]
    request_timeout: u64,
    /// Longest a connection may take to send a request's headers, in seconds (also how long
    /// an idle connection stays open).
    #[arg(long, default_value_t = 10)]
    header_timeout: u64,
    /// A host name this server also answers to (repeatable), e.g. the name a reverse proxy
    /// forwards. On loopback, only localhost, 127.0.0.1 and [::1] are accepted otherwise: a
    /// web page cannot reach the server by DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// A web origin whose pages may call this server (repeatable), e.g.
    /// `https://app.example.com`. Otherwise only the server's own pages (the inspector) may.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// The user and agent of `/mcp` tool calls that name none.
    #[command(flatten)]
    mcp: crate::mcp::McpDefaultArgs,
}

pub fn run(config: &Config, args: ServeArgs) -> Result<()> {
    let server = ServerConfig {
        listen: args.listen,
        body_limit: args.body_limit,
        request_timeout: Duration::from_secs(args.request_timeout),
        header_timeout: Duration::from_secs(args.header_timeout),
        allowed_hosts: args.allow_hosts,
        allowed_origins: args.allow_origins,
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
    refuse_before_creating(config, &server)?;
    let engine = crate::ingest::writing_engine(config, None)?;
    let access = mnemos_server::access(&engine, &server)?;
    eprintln!("access: {access}");
    let info = engine.info();
    eprintln!(
        "store: {} ({}); vector search {}",
        info.store.kind.name(),
        info.store.location,
        info.dense_search
    );
    let tenant = config.tenant.clone();
    let db = config.db.to_string();
    // With keys required the configured tenant applies to no request: each acts in its key's.
    let callers = if access.keys_required {
        "each request in its API key's tenant".to_string()
    } else {
        format!("requests without a key in tenant {tenant}")
    };
    let defaults = crate::mcp::describe(&server.mcp_defaults);
    mnemos_server::run_until_signal(Arc::new(engine), tenant, &server, |addr| {
        eprintln!("mnemos serving {db} ({callers}) on http://{addr}/v1 — Ctrl-C stops");
        eprintln!("MCP tools: http://{addr}/mcp{defaults}");
        eprintln!("web inspector: http://{addr}/ui/");
    })?;
    eprintln!("mnemos server stopped");
    Ok(())
}

/// A database that does not exist holds no API key, so a server that needs one is refused
/// before the file is made: a refused start leaves nothing behind.
fn refuse_before_creating(config: &Config, server: &ServerConfig) -> Result<(), ServerError> {
    let missing = matches!(&config.db, StoreLocation::Sqlite(path) if !path.exists());
    if missing && server.needs_stored_keys() {
        return Err(ServerError::NotLoopback(server.listen));
    }
    Ok(())
}
