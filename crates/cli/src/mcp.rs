//! `mnemos mcp`: the memory tools for a local assistant over stdin/stdout (MCP; see
//! docs/mcp.md). Stdout carries only MCP messages; everything else goes to stderr.

use std::sync::Arc;

use anyhow::Result;

use mnemos_engine::{Config, Engine, OpenOptions};
use mnemos_server::JobWorker;

use crate::progress;

pub fn run(config: &Config) -> Result<()> {
    // Derived work (summaries, persona, reflections…) runs on a background worker, as under
    // `mnemos serve`: `remember` answers as soon as the turns are stored.
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    let options = OpenOptions {
        create: true,
        load_embedder: true,
        preset: None,
    };
    let engine = Engine::open_with(&config, &options, Some(progress::ModelWait::start()))?;
    for note in engine.notes() {
        eprintln!("note: {note}");
    }
    eprintln!(
        "mnemos MCP server on stdio: {} (tenant {})",
        config.db, config.tenant
    );
    mnemos_server::mcp::run_stdio(
        Arc::new(engine),
        config.tenant.clone(),
        Some(JobWorker::default()),
    )?;
    Ok(())
}
