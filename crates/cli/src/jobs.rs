//! `mnemos jobs`: derived work that waits (after a crash, or when jobs do not run inline) or
//! failed — list it, run it, retry a job that gave up.

use anyhow::Result;
use clap::{Args, Subcommand};
use mnemos_render as render;

use mnemos_core::{JobId, UserKey};
use mnemos_engine::Engine;
use mnemos_setup::{Config, OpenOptions};

use crate::memory::existing_engine;
use crate::{output, progress};

#[derive(Args)]
pub struct JobsArgs {
    #[command(subcommand)]
    command: Option<JobsCommand>,
    /// Only this user's jobs (default: every user's).
    #[arg(long, short = 'u', global = true)]
    user: Option<String>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum JobsCommand {
    /// List pending, failed and stuck jobs (the default).
    List,
    /// Run the pending jobs (oldest first; jobs stuck after repeated failures are left alone).
    Run,
    /// Run one job now, even one that gave up after repeated failures.
    Retry {
        /// The job's id (from `mnemos jobs`).
        id: JobId,
    },
}

/// The engine that runs jobs: it embeds what they derive and shows model waits.
fn running_engine(config: &Config) -> Result<Engine> {
    existing_engine(config, false, None)?;
    let options = OpenOptions::existing().embedder(true);
    let waits = progress::ModelWait::start();
    Ok(mnemos_setup::open_with(config, &options, Some(waits))?)
}

pub fn run(config: &Config, args: JobsArgs) -> Result<()> {
    let user = args
        .user
        .clone()
        .map(|name| UserKey::new(config.tenant.clone(), name))
        .transpose()?;
    match args.command.unwrap_or(JobsCommand::List) {
        JobsCommand::List => {
            let engine = existing_engine(config, false, None)?;
            let jobs = engine.pending_jobs(user.as_ref())?;
            output::emit(args.json, &jobs, || render::pending_jobs(&jobs))?;
        }
        JobsCommand::Run => {
            let engine = running_engine(config)?;
            let report = match &user {
                Some(user) => engine.run_pending(user)?,
                None => engine.run_all_pending()?,
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else if report.is_empty() {
                println!("no pending job");
            } else {
                output::print_jobs(&report);
            }
        }
        JobsCommand::Retry { id } => {
            let Some(user) = user else {
                crate::usage::usage!("jobs retry needs --user (the job's user)");
            };
            let report = running_engine(config)?.retry_job(&user, id)?;
            output::print_jobs(&report);
        }
    }
    Ok(())
}
