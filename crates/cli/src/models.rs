//! `mnemos models fetch|status` (the local embedding models) and `mnemos model try` (one memory
//! task on your own text, offline or through an LLM endpoint).

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use mnemos_core::{MemoryModel, Task, TaskName, TaskTextOptions};
use mnemos_setup::Config;

use crate::usage::usage;

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// Download and verify the configured embedder's models into the cache (no-op when there).
    Fetch,
    /// Print where each model is looked for and whether it is present.
    Status,
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Run one task and print its typed output.
    Try(ModelTryArgs),
}

#[derive(Args)]
pub struct ModelTryArgs {
    #[arg(value_enum)]
    task: TaskName,
    /// The task's texts, in the order the task reads them; read from standard input, one per
    /// line, when none are given and `--input` is absent. summarize / persona_snapshot /
    /// categorize: texts or "Name: text" lines; conflicts, merge: PREVIOUS NEW; recoverable:
    /// ORIGINAL COMPRESSED; compress, arousal, classify_query, classify_memory: TEXT; rate_importance:
    /// PAST_SUMMARY LINE…; surprise: CONTEXT_LINE… UTTERANCE; sufficient, answer: QUERY
    /// MEMORY…; helps: QUERY MEMORY… CANDIDATE; choose: QUESTION MEMORY… with --option each.
    texts: Vec<String>,
    /// The whole task as JSON instead (its fields, e.g. '{"text": "…"}').
    #[arg(long)]
    input: Option<String>,
    /// An option for `choose` (repeat).
    #[arg(long = "option")]
    options: Vec<String>,
    /// Token budget for `summarize`.
    #[arg(long, default_value_t = 80)]
    budget: usize,
    /// Summary level for `summarize` (1 = raw dialogue).
    #[arg(long, default_value_t = 1)]
    level: u8,
    /// Print the output and usage as JSON.
    #[arg(long)]
    json: bool,
    /// Run the task through an OpenAI-compatible endpoint instead of the offline model: its base
    /// URL (e.g. http://localhost:11434/v1), or `config` for the config file's `[llm]` table.
    #[arg(long)]
    llm: Option<String>,
    /// Model name for `--llm URL`.
    #[arg(long = "llm-model", requires = "llm")]
    llm_model: Option<String>,
    /// Environment variable holding the API key for `--llm URL`.
    #[arg(long = "api-key-env", requires = "llm")]
    api_key_env: Option<String>,
    /// Seconds one request to the endpoint may take (each retry gets as long again).
    #[arg(long = "llm-timeout", requires = "llm")]
    llm_timeout: Option<f64>,
}

pub fn run_models(config: &Config, command: ModelsCommand) -> Result<()> {
    match command {
        ModelsCommand::Fetch => {
            for (name, dir) in config.fetch_local_models()? {
                println!("{name} ready in {}", dir.display());
            }
        }
        ModelsCommand::Status => {
            for model in config.local_model_status() {
                match model.found {
                    Ok(dir) => println!("{}: present in {}", model.name, dir.display()),
                    Err(err) => println!(
                        "{}: not available ({err}); run `{}`",
                        model.name, model.fetch
                    ),
                }
            }
        }
    }
    Ok(())
}

/// The LLM configuration `--llm` asks for, if any.
fn llm_config(config: &Config, args: &ModelTryArgs) -> Result<Option<mnemos_llm::LlmConfig>> {
    let Some(target) = args.llm.as_deref() else {
        return Ok(None);
    };
    let mut llm = if target == "config" {
        let Some(mut llm) = config.llm.clone() else {
            usage!("--llm config: the config file has no [llm] table (see docs/llm.md)");
        };
        if let Some(model) = &args.llm_model {
            llm.model = model.clone();
        }
        llm
    } else {
        let Some(model) = args.llm_model.clone() else {
            usage!("--llm URL needs --llm-model NAME (the model as the server knows it)");
        };
        mnemos_llm::LlmConfig::new(target, model)
    };
    if let Some(var) = &args.api_key_env {
        llm.api_key_env = Some(var.clone());
    }
    if let Some(seconds) = args.llm_timeout {
        if !(seconds > 0.0 && seconds.is_finite()) {
            usage!("--llm-timeout must be a positive number of seconds");
        }
        llm.timeout_ms = (seconds * 1000.0).round() as u64;
    }
    llm.validate().context("invalid LLM settings")?;
    Ok(Some(llm))
}

fn build_task(args: &ModelTryArgs) -> Result<Task> {
    if let Some(input) = &args.input {
        return Ok(args.task.task_from_json(input)?);
    }
    let texts = if args.texts.is_empty() {
        let mut raw = String::new();
        std::io::stdin()
            .read_to_string(&mut raw)
            .context("cannot read texts from standard input")?;
        raw.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        args.texts.clone()
    };
    let options = TaskTextOptions {
        options: args.options.clone(),
        budget: args.budget,
        level: args.level,
    };
    Ok(args.task.task(texts, &options)?)
}

pub fn run_model(config: &Config, command: ModelCommand) -> Result<()> {
    let ModelCommand::Try(args) = command;
    let task = build_task(&args)?;
    let embedder = mnemos_setup::embedder(config)?;
    let (model, notes): (Arc<dyn MemoryModel>, _) = match llm_config(config, &args)? {
        Some(llm) => {
            eprintln!(
                "asking {} at {} (up to {:.0} s per request, {} retries)…",
                llm.model,
                llm.base_url,
                llm.timeout_ms as f64 / 1000.0,
                llm.max_retries
            );
            let model = mnemos_llm::LlmModel::new(llm).context("cannot set up the LLM")?;
            (Arc::new(model), Vec::new())
        }
        // The offline model, as the engine would run it, whatever the config's `[llm]`.
        None => {
            let offline = Config {
                llm: None,
                ..config.clone()
            };
            mnemos_setup::memory_model(&offline, &embedder)?
        }
    };
    for note in notes {
        eprintln!("note: {note}");
    }
    let started = Instant::now();
    let output = model
        .run(&task)
        .with_context(|| format!("{} failed ({})", task.name(), model.id()))?;
    let millis = started.elapsed().as_secs_f64() * 1e3;
    if args.json {
        let report = serde_json::json!({
            "model": model.id(),
            "embedder": embedder.id(),
            "task": task.name(),
            "output": output,
            "millis": millis,
            "usage": model.usage(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{output}");
        eprintln!(
            "({} via {}, embedder {}, {millis:.1} ms)",
            task.name(),
            model.id(),
            embedder.id()
        );
    }
    Ok(())
}
