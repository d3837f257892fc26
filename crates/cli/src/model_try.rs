//! `mnemos model try TASK`: run one memory task on your own text with the offline model (or an
//! LLM endpoint), to see what each implementation does.

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use mnemos_core::memory_model::{Line, PersonaSchema, TASK_NAMES};
use mnemos_core::{MemoryModel, Role, Task, TaskOutput};

use crate::config::Config;
use crate::open;

#[derive(Args)]
pub struct ModelTryArgs {
    /// The task: summarize, persona_snapshot, categorize, conflicts, merge, compress,
    /// recoverable, rate_importance, arousal, surprise, sufficient, helps, classify_query,
    /// answer or choose.
    task: String,
    /// The task's texts, in the order the task reads them (see `--help`). Read from standard
    /// input, one per line, when none are given and `--input` is absent.
    ///
    /// summarize / persona_snapshot / categorize: the texts or dialogue lines ("Name: text");
    /// conflicts, merge, recoverable: PREVIOUS NEW (ORIGINAL COMPRESSED); compress, arousal,
    /// classify_query: TEXT; rate_importance: PAST_SUMMARY LINE…; surprise: CONTEXT_LINE…
    /// UTTERANCE; sufficient, answer: QUERY MEMORY…; helps: QUERY MEMORY… CANDIDATE; choose:
    /// QUESTION MEMORY… with --option for each option.
    texts: Vec<String>,
    /// The whole task as JSON instead (its fields, e.g. '{"text": "…"}'; see the `Task` type).
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
    #[arg(long = "llm-model")]
    llm_model: Option<String>,
    /// Environment variable holding the API key for `--llm URL`.
    #[arg(long = "api-key-env")]
    api_key_env: Option<String>,
}

/// The LLM configuration `--llm` asks for, if any.
fn llm_config(config: &Config, args: &ModelTryArgs) -> Result<Option<mnemos_llm::LlmConfig>> {
    let Some(target) = args.llm.as_deref() else {
        if args.llm_model.is_some() || args.api_key_env.is_some() {
            bail!("--llm-model and --api-key-env need --llm URL");
        }
        return Ok(None);
    };
    let mut llm = if target == "config" {
        let mut llm = config
            .llm
            .clone()
            .context("--llm config: the config file has no [llm] table (see docs/llm.md)")?;
        if let Some(model) = &args.llm_model {
            llm.model = model.clone();
        }
        llm
    } else {
        let model = args
            .llm_model
            .clone()
            .context("--llm URL needs --llm-model NAME (the model as the server knows it)")?;
        mnemos_llm::LlmConfig::new(target, model)
    };
    if let Some(var) = &args.api_key_env {
        llm.api_key_env = Some(var.clone());
    }
    llm.validate().context("invalid LLM settings")?;
    Ok(Some(llm))
}

/// "Name: text" → a line spoken by Name (role user); otherwise an unnamed user line.
fn parse_line(raw: &str) -> Line {
    match raw.split_once([':', '：']) {
        Some((name, text))
            if !name.trim().is_empty()
                && name.chars().count() <= 32
                && !name.trim().contains(' ')
                && !text.trim().is_empty() =>
        {
            Line::new(Role::User, Some(name.trim()), text.trim())
        }
        _ => Line::new(Role::User, None, raw.trim()),
    }
}

fn need(task: &str, texts: &[String], at_least: usize, shape: &str) -> Result<()> {
    if texts.len() < at_least {
        bail!("{task} needs {shape} ({} text(s) given)", texts.len());
    }
    Ok(())
}

/// Build the task from positional texts (see `ModelTryArgs::texts`).
fn task_from_texts(args: &ModelTryArgs, texts: Vec<String>) -> Result<Task> {
    let name = args.task.as_str();
    let lines = |t: &[String]| t.iter().map(|s| parse_line(s)).collect::<Vec<_>>();
    Ok(match name {
        "summarize" => {
            need(name, &texts, 1, "at least one text")?;
            Task::Summarize {
                texts,
                level: args.level,
                token_budget: args.budget,
            }
        }
        "persona_snapshot" => {
            need(name, &texts, 1, "at least one line")?;
            Task::PersonaSnapshot {
                window: lines(&texts),
                schema: PersonaSchema::default_keys(),
            }
        }
        "categorize" => {
            need(name, &texts, 1, "at least one line")?;
            Task::Categorize {
                session: lines(&texts),
            }
        }
        "conflicts" | "merge" | "recoverable" => {
            need(name, &texts, 2, "two texts")?;
            let (a, b) = (texts[0].clone(), texts[1].clone());
            match name {
                "conflicts" => Task::Conflicts {
                    previous: a,
                    new: b,
                },
                "merge" => Task::Merge {
                    previous: a,
                    new: b,
                },
                _ => Task::Recoverable {
                    original: a,
                    compressed: b,
                },
            }
        }
        "compress" | "arousal" | "classify_query" => {
            need(name, &texts, 1, "one text")?;
            let text = texts.join(" ");
            match name {
                "compress" => Task::Compress { text },
                "arousal" => Task::Arousal { text },
                _ => Task::ClassifyQuery { query: text },
            }
        }
        "rate_importance" => {
            need(
                name,
                &texts,
                2,
                "a past summary (may be \"\") and at least one line",
            )?;
            Task::RateImportance {
                past_summary: texts[0].clone(),
                exchange: lines(&texts[1..]),
            }
        }
        "surprise" => {
            need(name, &texts, 1, "context lines and the utterance last")?;
            let (utterance, context) = texts.split_last().context("no utterance")?;
            Task::Surprise {
                context: lines(context),
                utterance: utterance.clone(),
            }
        }
        "sufficient" | "answer" => {
            need(name, &texts, 1, "the query first, then memories")?;
            let query = texts[0].clone();
            let memories = texts[1..].to_vec();
            if name == "answer" {
                Task::Answer { query, memories }
            } else {
                Task::Sufficient { query, memories }
            }
        }
        "helps" => {
            need(
                name,
                &texts,
                2,
                "the query first, memories, and the candidate last",
            )?;
            let query = texts[0].clone();
            let candidate = texts[texts.len() - 1].clone();
            Task::Helps {
                query,
                memories: texts[1..texts.len() - 1].to_vec(),
                candidate,
            }
        }
        "choose" => {
            need(name, &texts, 1, "the question first, then memories")?;
            Task::Choose {
                question: texts[0].clone(),
                options: args.options.clone(),
                memories: texts[1..].to_vec(),
            }
        }
        other => bail!(
            "unknown task '{other}'; the tasks are: {}",
            TASK_NAMES.join(", ")
        ),
    })
}

fn build_task(args: &ModelTryArgs) -> Result<Task> {
    if !TASK_NAMES.contains(&args.task.as_str()) {
        bail!(
            "unknown task '{}'; the tasks are: {}",
            args.task,
            TASK_NAMES.join(", ")
        );
    }
    if let Some(input) = &args.input {
        let mut value: serde_json::Value =
            serde_json::from_str(input).context("--input is not valid JSON")?;
        let object = value
            .as_object_mut()
            .context("--input must be a JSON object of the task's fields")?;
        object.insert("task".into(), serde_json::Value::String(args.task.clone()));
        return serde_json::from_value(value)
            .with_context(|| format!("--input does not fit the {} task", args.task));
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
    task_from_texts(args, texts)
}

fn print_output(output: &TaskOutput) {
    match output {
        TaskOutput::Text(t) => println!("{t}"),
        TaskOutput::Persona(values) => {
            if values.is_empty() {
                println!("(no persona values found)");
            }
            for v in values {
                let line = v
                    .line
                    .map(|l| format!("  [line {}]", l + 1))
                    .unwrap_or_default();
                println!("{:<14} {}{line}", v.key, v.value);
            }
        }
        TaskOutput::Categories(categories) => {
            for c in categories {
                let lines: Vec<String> = c.lines.iter().map(|l| (l + 1).to_string()).collect();
                println!("[{}] (lines {}) {}", c.category, lines.join(","), c.summary);
            }
        }
        TaskOutput::Flag(b) => println!("{}", if *b { "yes" } else { "no" }),
        TaskOutput::Importance(i) => println!("{i} / 10"),
        TaskOutput::Score(s) => println!("{s:.4}"),
        TaskOutput::QueryClass(c) => println!(
            "{} (P(semantic) = {:.3}, P(episodic) = {:.3})",
            if c.is_semantic() {
                "semantic"
            } else {
                "episodic"
            },
            c.semantic,
            c.episodic
        ),
        TaskOutput::Choice(i) => println!("option {}", i + 1),
    }
}

pub fn run(config: &Config, args: ModelTryArgs) -> Result<()> {
    let task = build_task(&args)?;
    let embedder = open::embedder(config)?;
    let model: Box<dyn MemoryModel> = match llm_config(config, &args)? {
        Some(llm) => Box::new(mnemos_llm::LlmModel::new(llm).context("cannot set up the LLM")?),
        None => {
            let offline = mnemos_offline::OfflineModel::new(Arc::clone(&embedder));
            for note in offline.degradations() {
                eprintln!("note: {note}");
            }
            Box::new(offline)
        }
    };
    let model: &dyn MemoryModel = model.as_ref();
    let started = Instant::now();
    let output = model
        .run(&task)
        .with_context(|| format!("{} failed ({})", task.name(), model.id()))?;
    let elapsed = started.elapsed();
    if args.json {
        let report = serde_json::json!({
            "model": model.id(),
            "embedder": embedder.id(),
            "task": task.name(),
            "output": output,
            "millis": elapsed.as_secs_f64() * 1e3,
            "usage": model.usage(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_output(&output);
        eprintln!(
            "({} via {}, embedder {}, {:.1} ms)",
            task.name(),
            model.id(),
            embedder.id(),
            elapsed.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(task: &str, texts: &[&str]) -> ModelTryArgs {
        ModelTryArgs {
            task: task.into(),
            texts: texts.iter().map(|s| s.to_string()).collect(),
            input: None,
            options: vec![],
            budget: 80,
            level: 1,
            json: false,
            llm: None,
            llm_model: None,
            api_key_env: None,
        }
    }

    #[test]
    fn positional_texts_map_to_each_task_shape() {
        let t = build_task(&args("conflicts", &["I live in Paris", "I live in Berlin"])).unwrap();
        assert_eq!(
            t,
            Task::Conflicts {
                previous: "I live in Paris".into(),
                new: "I live in Berlin".into()
            }
        );
        let t = build_task(&args("helps", &["q", "m1", "m2", "cand"])).unwrap();
        assert!(matches!(t, Task::Helps { ref memories, ref candidate, .. }
            if memories.len() == 2 && candidate == "cand"));
        let t = build_task(&args("persona_snapshot", &["小明：我是护士", "plain line"])).unwrap();
        let Task::PersonaSnapshot { window, .. } = t else {
            panic!("wrong task")
        };
        assert_eq!(window[0].speaker.as_deref(), Some("小明"));
        assert_eq!(window[0].text, "我是护士");
        assert_eq!(window[1].speaker, None);
        assert!(build_task(&args("merge", &["only one"])).is_err());
        let err = build_task(&args("sumarize", &["x"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("summarize"), "{err}");
    }

    #[test]
    fn json_input_is_checked_against_the_task() {
        let mut a = args("arousal", &[]);
        a.input = Some(r#"{"text": "wow!!!"}"#.into());
        assert_eq!(
            build_task(&a).unwrap(),
            Task::Arousal {
                text: "wow!!!".into()
            }
        );
        a.input = Some(r#"{"txt": "wow"}"#.into());
        assert!(build_task(&a).is_err());
        a.input = Some("not json".into());
        assert!(build_task(&a).is_err());
    }
}
