//! `eval run`: MemBench's protocol on a dataset with questions, presets side by side in one
//! process on the same prepared data, with a report directory (markdown, JSON, raw per-ask
//! records, plots, the exact config and dataset checksums).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use mnemos_presets::variants::DefaultPresets::Every;
use mnemos_presets::variants::{NamedEngine, Sweep};
use mnemos_setup::Config;

use crate::artifacts::{checksum_inputs, InputChecksum, JsonlWriter, OutDir};
use crate::dataset::{Conversation, RetrievalDataset};
use crate::error::EvalError;
use crate::experiment::{ConversationContext, Experiment, Progress, ProgressFn, SharedEmbedder};
use crate::format::{load_retrieval_dataset, QuestionDataset};
use crate::judge::{Judge, Verdict};
use crate::protocol::{prepare_with_pool, NoiseSpec, PreparedDataset, ProtocolSpec, Scenario};
use crate::runner::{ConversationRun, RunOptions};
use crate::summary::PresetSummary;

use super::{write_report, Comparison, EngineSetup};

mod render;

pub use render::{charts, legend_label};

/// What `eval run` measures and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSettings {
    /// A LoCoMo or MemDaily file, or a PerLTQA file or directory.
    pub path: PathBuf,
    /// The engines side by side, their store, write size and report directory.
    #[serde(flatten)]
    pub compare: Comparison,
    pub dataset: QuestionDataset,
    pub scenario: Scenario,
    /// Pad each conversation with noise up to this many tokens.
    pub noise_tokens: Option<usize>,
    /// Draw noise from this dataset (a ZH-4O directory, or a LoCoMo / MemDaily / PerLTQA
    /// file) instead of the evaluated one's other conversations.
    pub noise_from: Option<PathBuf>,
    /// Seed of the noise placement and of the sample.
    pub seed: u64,
    pub sample_per_category: Option<usize>,
    pub conversations: Option<usize>,
    /// Ask each question again at these history sizes (tokens).
    pub checkpoints: Vec<usize>,
    pub budget: usize,
    /// Ask the answer model for open answers (token F1).
    pub answer: bool,
    /// Ask the answer model to choose on multiple-choice questions.
    pub choose: bool,
    /// Embed from a cache warmed before the run (write latencies then exclude embedding).
    pub embed_cache: bool,
    /// Grade open answers with the configured `[llm]` endpoint.
    pub judge: bool,
}

/// The whole report, as report.json holds it.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub mnemos: &'static str,
    pub dataset: DatasetInfo,
    pub protocol: ProtocolSpec,
    pub options: RunOptions,
    #[serde(flatten)]
    pub engine: EngineSetup,
    pub embed_cache: bool,
    pub answer_model: String,
    pub judge: Option<String>,
    pub presets: Vec<PresetSummary>,
    pub sweeps: Vec<Sweep>,
    pub notes: Vec<String>,
}

impl RunReport {
    /// The report as markdown tables (report.md without its plots section).
    pub fn markdown(&self) -> String {
        render::markdown(self)
    }
}

#[derive(Debug, Serialize)]
pub struct DatasetInfo {
    pub name: String,
    pub path: String,
    pub conversations: usize,
    pub real_items: usize,
    pub noise_items: usize,
    pub mean_tokens_per_conversation: f64,
    pub questions: usize,
    pub asks: usize,
    pub dropped: BTreeMap<String, usize>,
    pub excluded: BTreeMap<String, usize>,
    pub defects: usize,
    pub contaminated_questions: usize,
    pub checksums: Vec<InputChecksum>,
}

/// Run `eval run` (see the module docs); with an output directory, write the report there.
pub fn evaluate(
    config: &Config,
    settings: &RunSettings,
    progress: ProgressFn<'_>,
) -> Result<RunReport, EvalError> {
    if settings.judge && config.llm.is_none() {
        return Err(EvalError::Invalid(
            "the judge needs an [llm] endpoint in the config".into(),
        ));
    }
    let format = settings.dataset.resolve(&settings.path)?;
    let (selection, out) = settings.compare.begin(config, Every)?;
    let dataset = load_retrieval_dataset(&settings.path, format)?;
    progress(Progress::Note(&dataset.summary().to_string()));
    let prepared = prepare(settings, &dataset)?;
    let options = RunOptions {
        budget: settings.budget,
        choose: settings.choose,
        answer: settings.answer,
        ..RunOptions::writes_of(settings.compare.batch, config)
    };
    let shared = shared_embedder(config, settings, &prepared, progress)?;
    let experiment = Experiment::new(
        config,
        settings.compare.store,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let judge = match (&config.llm, settings.judge) {
        (Some(llm), true) => Some(Judge::new(llm.clone())?),
        _ => None,
    };
    let (presets, memory_model) = stream(
        &experiment,
        &selection.engines,
        &prepared,
        judge.as_ref(),
        out.as_ref(),
        progress,
    )?;
    let report = RunReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: dataset_info(&dataset, &prepared, &settings.path)?,
        protocol: prepared.spec.clone(),
        options: options.clone(),
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        embed_cache: shared.cache.is_some(),
        answer_model: experiment.answerer().id().to_string(),
        judge: judge.as_ref().map(|j| j.id().to_string()),
        presets,
        sweeps: selection.sweeps,
        notes: notes(&prepared, shared.cache.is_some()),
    };
    if let Some(dir) = &out {
        write_run_dir(dir, config, settings, &selection.engines, &report, progress)?;
    }
    Ok(report)
}

/// The dataset under the protocol the settings ask for, noise drawn from another dataset
/// when one is named.
fn prepare(
    settings: &RunSettings,
    dataset: &RetrievalDataset,
) -> Result<PreparedDataset, EvalError> {
    let mut protocol = ProtocolSpec {
        scenario: settings.scenario,
        noise: settings.noise_tokens.map(|target_tokens| NoiseSpec {
            target_tokens,
            seed: settings.seed,
        }),
        sample_per_category: settings.sample_per_category,
        max_conversations: settings.conversations,
        sample_seed: settings.seed,
        checkpoints: settings.checkpoints.clone(),
        ..ProtocolSpec::default()
    };
    let pool = match &settings.noise_from {
        Some(path) => {
            let (name, pool) = load_noise_pool(path)?;
            protocol.noise_source = name;
            Some(pool)
        }
        None => None,
    };
    Ok(prepare_with_pool(
        dataset,
        &protocol,
        pool.as_deref(),
        &mnemos_engine::primitives::tokens,
    )?)
}

/// Conversations of another dataset to cut noise from, and the pool's name for the report.
fn load_noise_pool(path: &Path) -> Result<(String, Vec<Conversation>), EvalError> {
    if path.join(crate::zh4o::DATASET_FILE).is_file() {
        let zh4o = crate::load_zh4o(path)?;
        let conversations = zh4o
            .dialogues
            .iter()
            .map(|d| d.conversation(&format!("zh4o-{}", d.index), 0))
            .collect();
        return Ok((format!("zh4o ({})", path.display()), conversations));
    }
    let format = QuestionDataset::Auto.resolve(path)?;
    let dataset = load_retrieval_dataset(path, format)?;
    Ok((
        format!("{} ({})", dataset.name, path.display()),
        dataset.conversations,
    ))
}

/// The shared embedder: warmed with every turn and question when caching, else the
/// configured embedder as is.
fn shared_embedder(
    config: &Config,
    settings: &RunSettings,
    prepared: &PreparedDataset,
    progress: ProgressFn<'_>,
) -> Result<SharedEmbedder, EvalError> {
    if !settings.embed_cache {
        return SharedEmbedder::uncached(config);
    }
    let conversations = prepared.conversations.iter().map(|c| &c.conversation);
    let items = conversations.clone().flat_map(|c| &c.items);
    let questions = conversations.flat_map(|c| c.questions.iter().map(|q| q.text.as_str()));
    SharedEmbedder::warmed_for_turns(config, items, questions, progress)
}

/// Every engine over the prepared conversations: asks graded by the judge when there is one,
/// raw records streamed to asks.jsonl and sizes.jsonl; returns the summaries and the memory
/// model's id.
fn stream(
    experiment: &Experiment<'_>,
    engines: &[NamedEngine],
    prepared: &PreparedDataset,
    judge: Option<&Judge>,
    out: Option<&OutDir>,
    progress: ProgressFn<'_>,
) -> Result<(Vec<PresetSummary>, String), EvalError> {
    let mut asks_out = out.map(|dir| dir.jsonl_writer("asks.jsonl")).transpose()?;
    let mut sizes_out = out.map(|dir| dir.jsonl_writer("sizes.jsonl")).transpose()?;
    let outcomes = experiment.run(
        engines,
        &prepared.conversations,
        |_: &ConversationContext<'_>, run: &mut ConversationRun| {
            if let Some(judge) = judge {
                grade(judge, run, progress)?;
            }
            write_all(asks_out.as_mut(), &run.asks)?;
            write_all(sizes_out.as_mut(), &run.sizes)?;
            // Raw records are on disk; keep only what the summary needs.
            run.asks.iter_mut().for_each(|r| r.context_text.clear());
            Ok(())
        },
    )?;
    for writer in [asks_out, sizes_out].into_iter().flatten() {
        writer.finish()?;
    }
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    Ok((
        outcomes.into_iter().map(|o| o.summary).collect(),
        memory_model,
    ))
}

/// The judge's grade on every ask of a run; unclear replies are told, never guessed.
fn grade(
    judge: &Judge,
    run: &mut ConversationRun,
    progress: ProgressFn<'_>,
) -> Result<(), EvalError> {
    for record in &mut run.asks {
        let verdict = judge.grade(record)?;
        if let Verdict::Unclear(reply) = &verdict {
            progress(Progress::Note(&format!(
                "note: the judge's reply on {} was neither CORRECT nor WRONG: {reply:?}",
                record.question
            )));
        }
        record.judge_correct = verdict.correct();
    }
    Ok(())
}

fn write_all<T: Serialize>(
    writer: Option<&mut JsonlWriter>,
    records: &[T],
) -> Result<(), EvalError> {
    if let Some(writer) = writer {
        for record in records {
            writer.write(record)?;
        }
    }
    Ok(())
}

/// report.json, report.md with plots, config.json (the settings and every engine's preset
/// parameters) and checksums.json.
fn write_run_dir(
    dir: &OutDir,
    config: &Config,
    settings: &RunSettings,
    engines: &[NamedEngine],
    report: &RunReport,
    progress: ProgressFn<'_>,
) -> Result<(), EvalError> {
    let presets: BTreeMap<&str, serde_json::Value> = engines
        .iter()
        .map(|e| {
            let params = toml::to_string(&e.config.preset.params).unwrap_or_default();
            let preset = serde_json::json!({"name": e.config.preset.name, "params": params});
            (e.name.as_str(), preset)
        })
        .collect();
    let llm = config
        .llm
        .as_ref()
        .map(|l| serde_json::json!({"base_url": l.base_url, "model": l.model}));
    dir.write_json(
        "config.json",
        &serde_json::json!({
            "args": settings,
            "engines": presets,
            "retrieval": format!("{:?}", config.retrieval),
            "llm": llm,
        }),
    )?;
    dir.write_json("checksums.json", &report.dataset.checksums)?;
    write_report(dir, report, &report.markdown(), &charts(report), progress)
}

fn dataset_info(
    dataset: &RetrievalDataset,
    prepared: &PreparedDataset,
    path: &Path,
) -> Result<DatasetInfo, EvalError> {
    let conversations = &prepared.conversations;
    let n = conversations.len().max(1) as f64;
    Ok(DatasetInfo {
        name: dataset.name.clone(),
        path: path.display().to_string(),
        conversations: conversations.len(),
        real_items: conversations.iter().map(|c| c.real_items).sum(),
        noise_items: conversations.iter().map(|c| c.noise_items).sum(),
        mean_tokens_per_conversation: conversations.iter().map(|c| c.tokens as f64).sum::<f64>()
            / n,
        questions: prepared.questions(),
        asks: prepared.asks(),
        dropped: prepared.dropped.clone(),
        excluded: dataset.excluded.clone(),
        defects: dataset.defects.len(),
        contaminated_questions: conversations.iter().map(|c| c.contaminated.len()).sum(),
        checksums: checksum_inputs(&[path.to_path_buf()])?,
    })
}

fn notes(prepared: &PreparedDataset, cached: bool) -> Vec<String> {
    let mut notes = vec![
        "Retrieval metrics count a context item as relevant when its provenance holds a gold \
         turn: summaries and profiles built from many turns (memgpt, memorybank) are credited \
         for every turn they cover. Choice accuracy, answer-in-context and F1 are the fair \
         comparison for summarizing presets."
            .to_string(),
    ];
    if cached {
        notes.push(
            "Embeddings come from a shared cache warmed before the run, so observe and recall \
             latencies exclude the embedding model; its cost per text is reported apart."
                .to_string(),
        );
    }
    if prepared.spec.noise.is_some() && prepared.spec.noise_source == "same dataset" {
        let contaminated: usize = prepared
            .conversations
            .iter()
            .map(|c| c.contaminated.len())
            .sum();
        notes.push(format!(
            "Noise is other conversations of the same dataset; {contaminated} question(s) have \
             their answer text in some noise item (possible contradictions)."
        ));
    }
    notes
}
