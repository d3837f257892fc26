//! `mnemos`: ingest dialogue, search memories with explanations, inspect and forget them, fetch
//! the local embedding model, run the demo and the retrieval evaluation.

mod config;
mod demo;
mod eval_classifier;
mod eval_common;
mod eval_extraction;
mod eval_judge;
mod eval_lufy;
mod eval_presets;
mod eval_probes;
mod eval_retrieval;
mod eval_run;
mod eval_variants;
mod ingest;
mod model_try;
mod open;
mod output;
mod train;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use mnemos_core::{
    MemoryFilter, MemoryId, Page, RetrieverKind, SearchFilter, SearchRequest, StateFilter, UserKey,
};

use crate::config::Config;

#[derive(Parser)]
#[command(
    name = "mnemos",
    version,
    about = "Long-term memory for chat agents: ingest turns, search with reasons"
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
    /// SQLite database file (overrides the config's `db`).
    #[arg(long, global = true, env = "MNEMOS_DB")]
    db: Option<PathBuf>,
    /// Embedder: minilm (local neural model, default), bilingual (minilm + m3e-small for
    /// Chinese; non-commercial licence), hash (weights-free) or openai (config).
    #[arg(long, global = true)]
    embedder: Option<String>,
    /// Tenant (overrides the config's `tenant`).
    #[arg(long, global = true)]
    tenant: Option<String>,
}

impl GlobalArgs {
    fn config(&self) -> Result<Config> {
        let mut config = Config::load(self.config.as_deref())?;
        if let Some(db) = &self.db {
            config.db = db.clone();
        }
        if let Some(name) = &self.embedder {
            config.set_embedder(name)?;
        }
        if let Some(tenant) = &self.tenant {
            config.tenant = tenant.clone();
        }
        config.validate()?;
        Ok(config)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Ingest turns from a JSONL file or a LoCoMo / MemDaily / PerLTQA dataset file.
    Ingest(ingest::IngestArgs),
    /// Search one user's memories.
    Search(SearchArgs),
    /// Show a memory (or turn) and its version history; `show persona` / `show timeline` show
    /// the persona sketch (with each key's history) and the plot summary tree MOOM keeps.
    Show(ShowArgs),
    /// List a user's memories, newest last, with paging and filters.
    List(ListArgs),
    /// Soft-forget a memory: it leaves retrieval and its history records the reason.
    Forget(ForgetArgs),
    /// Erase every turn, memory, history entry and vector of a user.
    Purge(PurgeArgs),
    /// List the users that have data.
    Users,
    /// Run one memory task (summarize, persona_snapshot, conflicts, …) on your own text.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Manage the local embedding model.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Ingest a bundled sample dialogue into a scratch database and answer a few queries.
    Demo(demo::DemoArgs),
    /// List every memory preset with its parameters and defaults.
    Presets {
        #[arg(long)]
        json: bool,
    },
    /// Measure quality and speed on evaluation datasets.
    Eval {
        #[command(subcommand)]
        command: EvalCommand,
    },
    /// Train the offline model's learned parts.
    Train {
        #[command(subcommand)]
        command: TrainCommand,
    },
}

#[derive(Subcommand)]
enum TrainCommand {
    /// Fit the semantic/episodic query classifier and write its weights file.
    Classifier(train::TrainClassifierArgs),
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Download and verify all-MiniLM-L6-v2 into the cache (no-op when already there).
    Fetch,
    /// Print where the model is looked for and whether it is present.
    Status,
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Run one task and print its typed output.
    Try(model_try::ModelTryArgs),
}

#[derive(Subcommand)]
enum EvalCommand {
    /// Recall@{1,5,10}, MRR, nDCG@10 and latency of BM25 / dense / hybrid retrieval.
    Retrieval(eval_retrieval::EvalRetrievalArgs),
    /// ROC AUC of the offline arousal, surprise and importance scores against LUFY's labels;
    /// with --presets, the importance agreement of what each preset keeps (LUFY Table 12).
    Lufy(eval_lufy::EvalLufyArgs),
    /// Accuracy, per-class F1 and latency of the semantic/episodic query classifier.
    Classifier(eval_classifier::EvalClassifierArgs),
    /// Presets side by side on one dataset conversation: latency, memory size, evidence in context.
    Presets(eval_presets::EvalPresetsArgs),
    /// MemBench's protocol (streaming, scenarios, noise, checkpoints) with presets side by
    /// side: recall through provenance, choice accuracy, answers, cost; --out writes a report.
    Run(Box<eval_run::EvalRunArgs>),
    /// MOOM's memory-extraction score on ZH-4O or LoCoMo: derived memories against human
    /// labels (ROUGE-L, ROUGE-2, embedding similarity), presets side by side.
    Extraction(Box<eval_extraction::EvalExtractionArgs>),
    /// ZH-4O's probes: plant a fact, ask about it hundreds of messages later; hit rate by
    /// provenance and answer similarity, presets side by side.
    Probes(Box<eval_probes::EvalProbesArgs>),
}

#[derive(Args)]
struct UserArg {
    /// The user whose memories to use.
    #[arg(long, short = 'u', default_value = "default")]
    user: String,
}

#[derive(Args)]
struct SearchArgs {
    query: String,
    #[command(flatten)]
    user: UserArg,
    #[arg(long, short = 'k', default_value_t = 10)]
    top_k: usize,
    /// Token budget for the returned memories.
    #[arg(long)]
    budget: Option<usize>,
    #[arg(long, default_value = "hybrid")]
    retriever: RetrieverKind,
    /// Show each hit's score breakdown.
    #[arg(long)]
    explain: bool,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// Only these kinds (turn, summary, persona, …); repeatable.
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// Search again from the best hits through the rare words they add (names, places), for
    /// questions that go through an entity.
    #[arg(long)]
    second_hop: bool,
    /// Search each question of a compound query on its own and merge the rankings.
    #[arg(long)]
    split_questions: bool,
    /// Answer with this preset's recall (what it would hand a prompt, within --budget) instead
    /// of the retrieval pipeline's ranked hits.
    #[arg(long)]
    preset: Option<String>,
}

#[derive(Args)]
struct ShowArgs {
    /// Memory id (or turn id), or `persona` / `timeline`.
    id: String,
    #[command(flatten)]
    user: UserArg,
    /// For persona / timeline: one agent only.
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ListArgs {
    #[command(flatten)]
    user: UserArg,
    #[arg(long, default_value_t = 0)]
    offset: usize,
    #[arg(long, default_value_t = 20)]
    limit: usize,
    #[arg(long = "kind")]
    kinds: Vec<String>,
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// active, forgotten or all.
    #[arg(long, default_value = "active")]
    state: String,
    /// Metadata filter KEY=VALUE; repeatable.
    #[arg(long = "meta")]
    metadata: Vec<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ForgetArgs {
    id: String,
    #[command(flatten)]
    user: UserArg,
    #[arg(long, default_value = "forgotten at the user's request")]
    reason: String,
}

#[derive(Args)]
struct PurgeArgs {
    #[command(flatten)]
    user: UserArg,
    /// Required: purging cannot be undone.
    #[arg(long)]
    yes: bool,
}

fn user_key(config: &Config, user: &UserArg) -> Result<UserKey> {
    Ok(UserKey::new(config.tenant.clone(), user.user.clone())?)
}

fn validate_kinds(kinds: &[String]) -> Result<()> {
    for kind in kinds {
        if !mnemos_core::MemoryKind::TAGS.contains(&kind.as_str()) {
            bail!(
                "unknown memory kind '{kind}' (expected one of {})",
                mnemos_core::MemoryKind::TAGS.join(", ")
            );
        }
    }
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    let global = cli.global;
    match cli.command {
        Command::Ingest(args) => ingest::run(&global.config()?, args),
        Command::Search(args) if args.preset.is_some() => {
            let config = global.config()?;
            if !args.kinds.is_empty() {
                bail!("--kind filters the retrieval pipeline; a preset decides its own kinds");
            }
            if args.second_hop || args.split_questions {
                bail!(
                    "--second-hop and --split-questions shape the retrieval pipeline; a preset \
                     takes them as parameters (e.g. [engine.params.retrieval] hops = 2, \
                     split_questions = true)"
                );
            }
            let engine = open::engine(&config, args.preset.as_deref())?;
            let agent = args.agent.clone().unwrap_or_else(|| "default".to_string());
            let request = mnemos_engine::RecallRequest {
                query: args.query.clone(),
                token_budget: args.budget.unwrap_or(1024),
                session: args.session.clone(),
            };
            let context = engine.recall(&user_key(&config, &args.user)?, &agent, &request)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&context)?);
            } else {
                output::print_context(&context, args.explain);
            }
            Ok(())
        }
        Command::Search(args) => {
            let config = global.config()?;
            validate_kinds(&args.kinds)?;
            let memories = open::open(&config, true)?;
            let mut request = SearchRequest::new(user_key(&config, &args.user)?, args.query);
            request.top_k = Some(args.top_k);
            request.token_budget = args.budget;
            request.retriever = args.retriever;
            request.filter = SearchFilter {
                kinds: args.kinds,
                agent: args.agent,
                session: args.session,
            };
            request.second_hop = args.second_hop.then(mnemos_core::SecondHop::default);
            request.split_questions = args.split_questions;
            let results = memories.search(&request)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&results)?);
            } else {
                output::print_results(&results, args.explain);
            }
            Ok(())
        }
        Command::Show(args) => {
            let config = global.config()?;
            let memories = open::open(&config, false)?;
            let user = user_key(&config, &args.user)?;
            if let Some(agent) = &args.agent {
                mnemos_core::Scope::new(&user.tenant, &user.user, agent, "show")?;
            }
            let agent = args.agent.as_deref();
            match args.id.as_str() {
                "persona" => {
                    let keys = mnemos_engine::presets::moom::view::persona(
                        memories.store().as_ref(),
                        &user,
                        agent,
                    )?;
                    if args.json {
                        println!("{}", serde_json::to_string_pretty(&keys)?);
                    } else {
                        output::print_persona(&user, agent, &keys);
                    }
                    return Ok(());
                }
                "timeline" => {
                    let tree = mnemos_engine::presets::moom::view::timeline(
                        memories.store().as_ref(),
                        &user,
                        agent,
                    )?;
                    if args.json {
                        println!("{}", serde_json::to_string_pretty(&tree)?);
                    } else {
                        output::print_timeline(&user, agent, &tree);
                    }
                    return Ok(());
                }
                _ => {}
            }
            let id: MemoryId = args.id.parse().with_context(|| {
                format!("'{}' is neither a memory id, persona nor timeline", args.id)
            })?;
            match memories.get(&user, id) {
                Ok(memory) => {
                    let history = memories.history(&user, id)?;
                    if args.json {
                        let value = serde_json::json!({ "memory": memory, "history": history });
                        println!("{}", serde_json::to_string_pretty(&value)?);
                    } else {
                        output::print_memory(&memory, &history);
                    }
                    Ok(())
                }
                Err(err) if err.is_user_error() => {
                    // The id may name a turn rather than a memory.
                    let turn = memories
                        .turn(&user, mnemos_core::TurnId(id.0))
                        .map_err(|_| err)?;
                    if args.json {
                        println!("{}", serde_json::to_string_pretty(&turn)?);
                    } else {
                        output::print_turn(&turn);
                    }
                    Ok(())
                }
                Err(err) => Err(err.into()),
            }
        }
        Command::List(args) => {
            let config = global.config()?;
            validate_kinds(&args.kinds)?;
            let memories = open::open(&config, false)?;
            let user = user_key(&config, &args.user)?;
            let state = match args.state.as_str() {
                "active" => StateFilter::Active,
                "forgotten" => StateFilter::Forgotten,
                "all" => StateFilter::All,
                other => bail!("unknown state '{other}' (expected active, forgotten or all)"),
            };
            let mut metadata = mnemos_core::Metadata::new();
            for pair in &args.metadata {
                let (k, v) = pair
                    .split_once('=')
                    .with_context(|| format!("--meta '{pair}' is not KEY=VALUE"))?;
                metadata.insert(k.to_string(), v.to_string());
            }
            let filter = MemoryFilter {
                kinds: args.kinds,
                agent: args.agent,
                session: args.session,
                state,
                metadata,
            };
            let page = memories.list(
                &user,
                &filter,
                Page {
                    offset: args.offset,
                    limit: args.limit,
                },
            )?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                output::print_page(&page);
            }
            Ok(())
        }
        Command::Forget(args) => {
            let config = global.config()?;
            let engine = open::engine_for_edits(&config)?;
            let user = user_key(&config, &args.user)?;
            let (memory, derived) = engine.delete(&user, args.id.parse()?, &args.reason)?;
            println!(
                "forgot {} (version {}): {}",
                memory.id, memory.version, args.reason
            );
            if derived > 0 {
                println!(
                    "also forgot {derived} memory(ies) derived from it (summaries, profiles…)"
                );
            }
            Ok(())
        }
        Command::Purge(args) => {
            let config = global.config()?;
            if !args.yes {
                bail!(
                    "purge erases every memory of user '{}' and cannot be undone; pass --yes",
                    args.user.user
                );
            }
            let memories = open::open(&config, false)?;
            let user = user_key(&config, &args.user)?;
            let report = memories.purge(&user)?;
            println!(
                "purged {user}: {} turns, {} memories, {} history entries, {} vectors",
                report.turns, report.memories, report.history_entries, report.vectors
            );
            Ok(())
        }
        Command::Users => {
            let config = global.config()?;
            let memories = open::open(&config, false)?;
            for user in memories.users()? {
                println!("{user}");
            }
            Ok(())
        }
        Command::Models { command } => {
            let config = global.config()?;
            match command {
                ModelsCommand::Fetch => open::fetch_model(&config),
                ModelsCommand::Status => open::model_status(&config),
            }
        }
        Command::Model { command } => match command {
            ModelCommand::Try(args) => model_try::run(&global.config()?, args),
        },
        Command::Demo(args) => demo::run(&global, args),
        Command::Presets { json } => {
            let presets = mnemos_engine::presets::registry();
            if json {
                println!("{}", serde_json::to_string_pretty(&presets)?);
            } else {
                output::print_presets(&presets);
            }
            Ok(())
        }
        Command::Eval { command } => match command {
            EvalCommand::Retrieval(args) => eval_retrieval::run(&global.config()?, args),
            EvalCommand::Lufy(args) if args.presets.is_some() => {
                eval_lufy::run_presets(&global.config()?, args)
            }
            EvalCommand::Lufy(args) => eval_lufy::run(args),
            EvalCommand::Classifier(args) => eval_classifier::run(&global.config()?, args),
            EvalCommand::Presets(args) => eval_presets::run(&global.config()?, args),
            EvalCommand::Run(args) => eval_run::run(&global.config()?, *args),
            EvalCommand::Extraction(args) => eval_extraction::run(&global.config()?, *args),
            EvalCommand::Probes(args) => eval_probes::run(&global.config()?, *args),
        },
        Command::Train { command } => match command {
            TrainCommand::Classifier(args) => train::run(&global.config()?, args),
        },
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
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
