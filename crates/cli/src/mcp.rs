//! `mnemos mcp`: the memory tools for a local assistant over stdin/stdout (MCP; see
//! docs/mcp.md). Stdout carries only MCP messages; everything else goes to stderr.

use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use mnemos_server::{JobWorker, McpDefaults};
use mnemos_setup::Config;

/// The user and agent of tool calls that name none. Desktop assistants and generic MCP clients
/// never send a `user`; without `--user`, such a call fails saying how to fix it.
#[derive(Args, Clone, Default)]
pub struct McpDefaultArgs {
    /// The user of MCP tool calls that name none (e.g. the person this assistant serves).
    #[arg(long)]
    user: Option<String>,
    /// The agent of MCP tool calls that name none (default `default`).
    #[arg(long)]
    agent: Option<String>,
}

impl McpDefaultArgs {
    pub fn defaults(&self) -> McpDefaults {
        McpDefaults {
            user: self.user.clone(),
            agent: self.agent.clone(),
        }
    }
}

pub fn run(config: &Config, args: &McpDefaultArgs) -> Result<()> {
    let defaults = args.defaults();
    // Checked before the engine opens (which may fetch a model): a bad name fails at once.
    defaults.validate()?;
    // Derived work (summaries, persona, reflections…) runs on a background worker, as under
    // `mnemos serve`: `remember` answers as soon as the turns are stored.
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    let engine = crate::ingest::writing_engine(&config, None)?;
    eprintln!(
        "mnemos MCP server on stdio: {} (tenant {}{})",
        config.db,
        config.tenant,
        describe(&defaults)
    );
    mnemos_server::mcp::run_stdio(
        Arc::new(engine),
        config.tenant.clone(),
        defaults,
        Some(JobWorker::default()),
    )?;
    Ok(())
}

/// The defaults for a start-up line: `, default user ann, default agent desktop`.
pub fn describe(defaults: &McpDefaults) -> String {
    let mut text = String::new();
    if let Some(user) = &defaults.user {
        text.push_str(&format!(", default user {user}"));
    }
    if let Some(agent) = &defaults.agent {
        text.push_str(&format!(", default agent {agent}"));
    }
    text
}
