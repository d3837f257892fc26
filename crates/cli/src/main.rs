//! `mnemos`: the command line over the engine. Every command parses its arguments, calls the
//! engine (or the evaluation library) and prints; the logic lives in the library crates.
//!
//! Exit status: 0 on success, 2 on a usage or user error (bad flags or input, unknown ids or
//! users, no database), 1 on a service error (storage, model or network failure).

mod bench;
mod demo;
mod eval;
mod ingest;
mod jobs;
mod keys;
mod mcp;
mod memory;
mod migrate;
mod models;
mod output;
mod progress;
mod serve;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use mnemos_core::UserKey;
use mnemos_embed::EmbedRuntime;
use mnemos_setup::{Config, EmbedderChoice, StoreLocation};

#[derive(Parser)]
#[command(
    name = "mnemos",
    version,
    about = "Long-term memory for chat agents: ingest turns, search with reasons",
    after_help = "Exit status: 0 on success, 2 on a usage or user error (bad flags or input, \
                  unknown ids or users, no database), 1 on a service error (storage, model or \
                  network failure)."
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
pub struct GlobalArgs {
    /// Config file (TOML). Default: $MNEMOS_CONFIG, else ./mnemos.toml if present.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Where the data lives: a SQLite file, or a PostgreSQL database `postgres://USER@HOST/DB`
    /// (overrides the config's `db`).
    #[arg(long, visible_alias = "store", global = true, env = "MNEMOS_DB")]
    db: Option<PathBuf>,
    /// Embedder (e5: multilingual-e5-small for every language; bilingual: MiniLM for English
    /// and e5 for Chinese; openai needs the config's [embedder] table).
    #[arg(long, global = true, value_enum)]
    embedder: Option<EmbedderChoice>,
    /// What runs the local models' forward pass: candle or onnx (ONNX Runtime; its library is
    /// fetched once from PyPI). Overrides the config and $MNEMOS_EMBED_RUNTIME.
    #[arg(long = "embed-runtime", global = true)]
    embed_runtime: Option<EmbedRuntime>,
    /// Tenant (overrides the config's `tenant`).
    #[arg(long, global = true)]
    tenant: Option<String>,
}

impl GlobalArgs {
    /// The tenant given with `--tenant`, if any.
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    pub fn config(&self) -> Result<Config> {
        let mut config = Config::load(self.config.as_deref())?;
        if let Some(db) = &self.db {
            config.db = StoreLocation::from(db.clone());
        }
        if let Some(choice) = self.embedder {
            config.set_embedder(choice)?;
        }
        if let Some(runtime) = self.embed_runtime {
            config.embedder.set_runtime(runtime)?;
        }
        if let Some(tenant) = &self.tenant {
            config.tenant = tenant.clone();
        }
        config.validate()?;
        Ok(config)
    }
}

/// `--user`, for commands about one user's memories.
#[derive(Args, Clone)]
pub struct UserArg {
    /// The user whose memories to use.
    #[arg(long, short = 'u', default_value = mnemos_core::defaults::DEFAULT_USER)]
    user: String,
}

impl UserArg {
    pub fn key(&self, config: &Config) -> Result<UserKey> {
        Ok(UserKey::new(config.tenant.clone(), self.user.clone())?)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Ingest turns from a JSONL file or a LoCoMo / MemDaily / PerLTQA dataset file. Running the
    /// same input again adds only what is new.
    Ingest(ingest::IngestArgs),
    /// Search one user's memories (ranked hits with reasons), or with --preset, what the
    /// preset's recall hands a prompt.
    Search(memory::SearchArgs),
    /// Show a memory (or turn) and its version history, or a preset's view of a user's
    /// memories: `show persona`, `show timeline`, `show chains`.
    Show(memory::ShowArgs),
    /// List a user's memories, oldest first, with paging and filters.
    List(memory::ListArgs),
    /// Forget a memory: it leaves retrieval, its history records the reason, and what was
    /// derived from it is forgotten too. With --query, what a description names: listed, and
    /// forgotten only with --yes.
    Forget(memory::ForgetArgs),
    /// Erase every turn, memory, history entry, vector and job of a user.
    Purge(memory::PurgeArgs),
    /// List the users that have data (--detail: with their memories, activity and jobs).
    Users(memory::UsersArgs),
    /// Derived work (summaries, profiles…) waiting or failed: list it, run it, retry it.
    Jobs(jobs::JobsArgs),
    /// Run one memory task (summarize, persona_snapshot, conflicts, …) on your own text.
    Model {
        #[command(subcommand)]
        command: models::ModelCommand,
    },
    /// Manage the local embedding models.
    Models {
        #[command(subcommand)]
        command: models::ModelsCommand,
    },
    /// Ingest a bundled sample dialogue into a scratch database and answer a few queries.
    Demo(demo::DemoArgs),
    /// List every memory preset with its parameters and defaults.
    Presets {
        #[arg(long)]
        json: bool,
    },
    /// Serve the engine over HTTP (JSON under /v1; see docs/server.md) until Ctrl-C.
    Serve(serve::ServeArgs),
    /// Serve the memory tools to a local assistant over stdin/stdout (MCP; see docs/mcp.md).
    Mcp(mcp::McpDefaultArgs),
    /// API keys for the server: create (the secret is printed once), list, revoke.
    Keys(keys::KeysArgs),
    /// Copy every user (turns, memories, history, vectors, jobs) and API key from one store to
    /// another, e.g. a SQLite file to PostgreSQL; verified by checksums, and a second run
    /// resumes (what was copied is skipped). The source is only read.
    Migrate(migrate::MigrateArgs),
    /// Move the database into the embedder's vector space (--embedder); a rerun resumes.
    Reembed(mnemos_setup::cli::ReembedArgs),
    /// Measure the server under load (see docs/results/server.md).
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Measure quality and speed on evaluation datasets.
    Eval {
        #[command(subcommand)]
        command: mnemos_eval::cli::EvalCommand,
    },
    /// Train the offline model's learned parts.
    Train {
        #[command(subcommand)]
        command: mnemos_train::cli::TrainCommand,
    },
}

fn run(cli: Cli) -> Result<()> {
    let global = cli.global;
    match cli.command {
        Command::Ingest(args) => ingest::run(&global.config()?, args),
        Command::Search(args) => memory::search(&global.config()?, args),
        Command::Show(args) => memory::show(&global.config()?, args),
        Command::List(args) => memory::list(&global.config()?, args),
        Command::Forget(args) => memory::forget(&global.config()?, args),
        Command::Purge(args) => memory::purge(&global.config()?, args),
        Command::Users(args) => memory::users(&global.config()?, args),
        Command::Jobs(args) => jobs::run(&global.config()?, args),
        Command::Model { command } => models::run_model(&global.config()?, command),
        Command::Models { command } => models::run_models(&global.config()?, command),
        Command::Demo(args) => demo::run(&global, args),
        Command::Presets { json } => {
            let presets = mnemos_presets::registry();
            output::emit(json, &presets, || mnemos_render::presets(&presets))
        }
        Command::Serve(args) => serve::run(&global.config()?, args),
        Command::Mcp(args) => mcp::run(&global.config()?, &args),
        Command::Keys(args) => keys::run(&global, args),
        Command::Migrate(args) => migrate::run(&global.config()?, args),
        Command::Reembed(args) => migrate::reembed(&global.config()?, &args),
        Command::Bench { command } => bench::run(&global.config()?, command),
        Command::Eval { command } => eval::run(&global, command),
        Command::Train { command } => {
            let mut print = |text: &str| println!("{text}");
            Ok(mnemos_train::cli::run(
                &global.config()?,
                command,
                &mut print,
            )?)
        }
    }
}

fn main() -> ExitCode {
    // The MiniLM embedder parallelises across sentences, one single-threaded worker per core;
    // candle's own helper threads for element-wise ops would spin against those workers.
    // Set before any other thread exists (setting the environment is not thread-safe) and
    // only when the user has not chosen a value.
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", usage::report(&err));
            ExitCode::from(usage::exit_code(&err))
        }
    }
}
