//! `mnemos eval run`: MemBench's protocol on a dataset with questions, presets side by side in
//! one process on the same prepared data, with a report directory (markdown, JSON, raw
//! per-ask records, plots, the exact config and dataset checksums).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::Embedder;
use mnemos_engine::PresetSpec;
use mnemos_eval::artifacts::{checksum_inputs, InputChecksum, OutDir};
use mnemos_eval::embed_cache::CachingEmbedder;
use mnemos_eval::format::{load_retrieval_dataset, Format};
use mnemos_eval::plot::{write_line_chart, LineChart, Series};
use mnemos_eval::protocol::{
    prepare_with_pool, NoiseSpec, PreparedDataset, ProtocolSpec, Scenario,
};
use mnemos_eval::runner::{RunOptions, Runner};
use mnemos_eval::summary::{PresetAccumulator, PresetSummary, Quality};

use crate::eval_common::{engine_for, f3, ms, opt3, turn_embedding_texts, StoreKind};
use crate::eval_judge::Judge;
use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

#[derive(Args, Clone, Serialize)]
pub struct EvalRunArgs {
    /// The dataset: a LoCoMo or MemDaily file, or a PerLTQA file or directory.
    path: PathBuf,
    /// auto, locomo, memdaily or perltqa.
    #[arg(long, default_value = "auto")]
    dataset: String,
    /// Comma-separated presets to run side by side (default: every preset).
    #[arg(long)]
    presets: Option<String>,
    /// participation (user and assistant turns) or observation (user messages only).
    #[arg(long, default_value = "participation")]
    scenario: String,
    /// Pad each conversation with other conversations' items up to this many tokens.
    #[arg(long)]
    noise_tokens: Option<usize>,
    /// Draw noise from this dataset instead of the evaluated one's other conversations: a
    /// ZH-4O directory, or a LoCoMo / MemDaily / PerLTQA file (MemBench pads with unrelated text).
    #[arg(long)]
    noise_from: Option<PathBuf>,
    /// Seed of the noise placement and of the sample.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep this many conversations per question category (MemBench's uniform sampling).
    #[arg(long)]
    sample_per_category: Option<usize>,
    /// Keep at most this many conversations (after sampling).
    #[arg(long)]
    conversations: Option<usize>,
    /// Ask each question again at these history sizes (tokens), e.g. 1000,10000,50000.
    #[arg(long, value_delimiter = ',')]
    checkpoints: Vec<usize>,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// Turns per write (1 = turn by turn, as a live chat).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// sqlite (a scratch database per preset, as deployed) or memory (the in-memory store).
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// Do not ask the answer model for open answers (no token F1).
    #[arg(long)]
    no_answer: bool,
    /// Do not ask the answer model to choose on multiple-choice questions.
    #[arg(long)]
    no_choose: bool,
    /// Embed every text as it comes instead of from a warm shared cache (slower; write
    /// latencies then include embedding).
    #[arg(long)]
    no_embed_cache: bool,
    /// Grade open answers with the configured [llm] endpoint (one fixed prompt, docs/eval.md).
    #[arg(long)]
    judge: bool,
    /// Run variants of a preset with one parameter swept, e.g.
    /// `memorybank.forget_threshold=0,0.05,0.2` (repeatable); they run after --presets and
    /// draw the forgetting curve (quality against memory kept).
    #[arg(long)]
    sweep: Vec<String>,
    /// Run a variant of a preset with several parameters set together, e.g.
    /// `retrieval:retriever=hybrid,hops=2` (repeatable); it runs after --presets and --sweep.
    #[arg(long)]
    variant: Vec<String>,
    /// Write report.md, report.json, asks.jsonl, sizes.jsonl, plots, config and checksums here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of an existing --out directory.
    #[arg(long)]
    overwrite: bool,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// The whole report, as report.json holds it.
#[derive(Serialize)]
struct Report {
    mnemos: &'static str,
    dataset: DatasetInfo,
    protocol: ProtocolSpec,
    options: RunOptions,
    store: String,
    embedder: String,
    /// Mean time the embedding model took per text (measured while warming the cache).
    embedding_ms_per_text: Option<f64>,
    embed_cache: bool,
    memory_model: String,
    answer_model: String,
    judge: Option<String>,
    presets: Vec<PresetSummary>,
    sweeps: Vec<crate::eval_variants::Sweep>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct DatasetInfo {
    name: String,
    path: String,
    conversations: usize,
    real_items: usize,
    noise_items: usize,
    mean_tokens_per_conversation: f64,
    questions: usize,
    asks: usize,
    dropped: BTreeMap<String, usize>,
    excluded: BTreeMap<String, usize>,
    defects: usize,
    contaminated_questions: usize,
    checksums: Vec<InputChecksum>,
}

pub fn run(config: &Config, args: EvalRunArgs) -> Result<()> {
    let format = crate::eval_common::resolve_format(&args.path, &args.dataset)?;
    if format == Format::Jsonl {
        bail!("eval run needs a dataset with questions (LoCoMo, MemDaily or PerLTQA)");
    }
    if args.judge && config.llm.is_none() {
        bail!("--judge needs an [llm] endpoint in the config");
    }
    let store_kind = StoreKind::parse(&args.store)?;
    let (specs, sweeps) =
        crate::eval_variants::expand(config, &args.presets, &args.sweep, &args.variant, true)?;
    let out = match &args.out {
        Some(dir) => Some(OutDir::create(dir, args.overwrite)?),
        None => None,
    };
    let dataset = load_retrieval_dataset(&args.path, format)?;
    eprintln!("{}", dataset.summary());
    let protocol = ProtocolSpec {
        scenario: Scenario::parse(&args.scenario)?,
        noise: args.noise_tokens.map(|target_tokens| NoiseSpec {
            target_tokens,
            seed: args.seed,
        }),
        sample_per_category: args.sample_per_category,
        max_conversations: args.conversations,
        sample_seed: args.seed,
        checkpoints: args.checkpoints.clone(),
        ..ProtocolSpec::default()
    };
    let mut protocol = protocol;
    let pool = match &args.noise_from {
        Some(path) => {
            let (name, pool) = load_noise_pool(path)?;
            protocol.noise_source = name;
            Some(pool)
        }
        None => None,
    };
    let prepared = prepare_with_pool(
        &dataset,
        &protocol,
        pool.as_deref(),
        &mnemos_engine::primitives::tokens,
    )?;
    let options = RunOptions {
        budget: args.budget,
        choose: !args.no_choose,
        answer: !args.no_answer,
        batch: args.batch.max(1),
        tenant: config.tenant.clone(),
        ..RunOptions::default()
    };
    let base_embedder = mnemos_engine::setup::embedder(config)?;
    let cache =
        (!args.no_embed_cache).then(|| Arc::new(CachingEmbedder::new(Arc::clone(&base_embedder))));
    let embedder: Arc<dyn Embedder> = match &cache {
        Some(cache) => {
            let turn_texts = turn_embedding_texts(
                config,
                prepared
                    .conversations
                    .iter()
                    .flat_map(|c| &c.conversation.items),
            );
            let mut texts: Vec<&str> = turn_texts.iter().map(String::as_str).collect();
            for c in &prepared.conversations {
                texts.extend(c.conversation.questions.iter().map(|q| q.text.as_str()));
            }
            let bar = progress_bar(texts.len() as u64, "embedding");
            cache.warm(&texts, &|n| bar.inc(n))?;
            bar.finish_and_clear();
            Arc::clone(cache) as Arc<dyn Embedder>
        }
        None => base_embedder,
    };
    // The answer model is the engine's kind of model but its own instance, so presets' call
    // counts stay their own.
    let answerer = mnemos_engine::setup::memory_model(config, &embedder)?.0;
    let judge = if args.judge {
        match &config.llm {
            Some(llm) => Some(Judge::new(llm.clone())?),
            None => None,
        }
    } else {
        None
    };
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut summaries = Vec::new();
    let mut memory_model_id = String::new();
    let mut asks_out = match &out {
        Some(dir) => Some(dir.jsonl_writer("asks.jsonl")?),
        None => None,
    };
    let mut sizes_out = match &out {
        Some(dir) => Some(dir.jsonl_writer("sizes.jsonl")?),
        None => None,
    };
    for (name, engine_config) in &specs {
        let preset = engine_for(
            config,
            name,
            engine_config,
            store_kind,
            scratch.path(),
            &embedder,
        )?;
        memory_model_id = preset.model_id.clone();
        let runner = Runner {
            preset: name,
            engine: &preset.engine,
            answerer: answerer.as_ref(),
            clock: &preset.clock,
            options: &options,
        };
        let started = Instant::now();
        let bar = progress_bar(prepared.items() as u64, name);
        let mut accumulator = PresetAccumulator::default();
        for conversation in &prepared.conversations {
            let mut run = runner
                .run(conversation, true, &|n| bar.inc(n))
                .with_context(|| format!("{name} on {}", conversation.conversation.id))?;
            if let Some(judge) = &judge {
                for record in &mut run.asks {
                    record.judge_correct = judge.grade(record)?;
                }
            }
            for record in &run.asks {
                if let Some(writer) = asks_out.as_mut() {
                    writer.write(record)?;
                }
            }
            for sample in &run.sizes {
                if let Some(writer) = sizes_out.as_mut() {
                    writer.write(sample)?;
                }
            }
            accumulator.add(run);
            // Raw records are on disk; keep only what the summary needs.
            accumulator
                .asks
                .iter_mut()
                .for_each(|r| r.context_text.clear());
        }
        bar.finish_and_clear();
        let summary =
            accumulator.summarize(name, options.ks.len(), started.elapsed().as_secs_f64());
        eprintln!(
            "{name}: {} asks in {:.0} s",
            summary.overall.asks, summary.wall_seconds
        );
        summaries.push(summary);
    }
    if let Some(writer) = asks_out {
        writer.finish()?;
    }
    if let Some(writer) = sizes_out {
        writer.finish()?;
    }
    let checksums = checksum_inputs(std::slice::from_ref(&args.path))?;
    let report = Report {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: dataset_info(&dataset, &prepared, &args.path, checksums),
        protocol,
        options,
        store: args.store.clone(),
        embedder: embedder.id().to_string(),
        embedding_ms_per_text: cache
            .as_ref()
            .and_then(|c| c.cost().1)
            .map(|d| d.as_secs_f64() * 1000.0),
        embed_cache: cache.is_some(),
        memory_model: memory_model_id,
        answer_model: answerer.id().to_string(),
        judge: judge.as_ref().map(|j| j.id().to_string()),
        presets: summaries,
        sweeps,
        notes: notes(&prepared, cache.is_some()),
    };
    let markdown = render_markdown(&report);
    if let Some(dir) = &out {
        dir.write_json("report.json", &report)?;
        dir.write_json(
            "config.json",
            &serde_json::json!({
                "args": args,
                "engines": specs
                    .iter()
                    .map(|(name, c)| (name.clone(), preset_json(&c.preset)))
                    .collect::<BTreeMap<_, _>>(),
                "retrieval": format!("{:?}", config.retrieval),
                "llm": config.llm.as_ref().map(|l| serde_json::json!({"base_url": l.base_url, "model": l.model})),
            }),
        )?;
        dir.write_json("checksums.json", &report.dataset.checksums)?;
        let mut plot_notes = Vec::new();
        for chart in charts(&report) {
            let output = write_line_chart(&chart.1, dir.plots_dir(), &chart.0)?;
            plot_notes.extend(output.notes);
        }
        let mut markdown = markdown.clone();
        markdown.push_str(&plots_section(&report));
        for note in &plot_notes {
            eprintln!("note: {note}");
            let _ = writeln!(markdown, "\n> plot note: {note}");
        }
        dir.write_text("report.md", &markdown)?;
        eprintln!("report written to {}", dir.path().display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{markdown}");
    }
    Ok(())
}

/// Conversations of another dataset to cut noise from, and the pool's name for the report.
fn load_noise_pool(path: &Path) -> Result<(String, Vec<mnemos_eval::Conversation>)> {
    if path.join(mnemos_eval::zh4o::DATASET_FILE).is_file() {
        let zh4o = mnemos_eval::load_zh4o(path)?;
        let conversations = zh4o
            .dialogues
            .iter()
            .map(|d| d.conversation(&format!("zh4o-{}", d.index), 0))
            .collect();
        return Ok((format!("zh4o ({})", path.display()), conversations));
    }
    let format = crate::eval_common::resolve_format(path, "auto")?;
    let dataset = load_retrieval_dataset(path, format)?;
    Ok((
        format!("{} ({})", dataset.name, path.display()),
        dataset.conversations,
    ))
}

fn preset_json(spec: &PresetSpec) -> serde_json::Value {
    serde_json::json!({"name": spec.name, "params": toml::to_string(&spec.params).unwrap_or_default()})
}

fn dataset_info(
    dataset: &mnemos_eval::RetrievalDataset,
    prepared: &PreparedDataset,
    path: &Path,
    checksums: Vec<InputChecksum>,
) -> DatasetInfo {
    let n = prepared.conversations.len().max(1) as f64;
    DatasetInfo {
        name: dataset.name.clone(),
        path: path.display().to_string(),
        conversations: prepared.conversations.len(),
        real_items: prepared.conversations.iter().map(|c| c.real_items).sum(),
        noise_items: prepared.conversations.iter().map(|c| c.noise_items).sum(),
        mean_tokens_per_conversation: prepared
            .conversations
            .iter()
            .map(|c| c.tokens as f64)
            .sum::<f64>()
            / n,
        questions: prepared.questions(),
        asks: prepared.asks(),
        dropped: prepared.dropped.clone(),
        excluded: dataset.excluded.clone(),
        defects: dataset.defects.len(),
        contaminated_questions: prepared
            .conversations
            .iter()
            .map(|c| c.contaminated.len())
            .sum(),
        checksums,
    }
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

fn quality_row(name: &str, q: &Quality) -> String {
    let recall: Vec<String> = q.recall_at.iter().map(|v| f3(*v)).collect();
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
        q.asks,
        recall.join(" | "),
        f3(q.mrr),
        f3(q.ndcg_at_10),
        f3(q.evidence_in_context),
        opt3(q.choice_accuracy),
        opt3(q.answer_in_context),
        opt3(q.answer_f1),
        opt3(q.judge_accuracy),
        q.mean_context_tokens
    )
}

const QUALITY_HEADER: &str = "| preset | asks | R@1 | R@5 | R@10 | MRR | nDCG@10 | evidence in context | choice acc | answer in context | answer F1 | judge acc | context tokens |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

fn render_markdown(report: &Report) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let p = &report.protocol;
    let _ = writeln!(md, "# mnemos eval: {} ({})\n", d.name, p.scenario.as_str());
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} conversations, {} items ({} real, {} noise), {:.0} tokens per conversation on average, {} questions, {} asks",
        d.path, d.conversations, d.real_items + d.noise_items, d.real_items, d.noise_items, d.mean_tokens_per_conversation, d.questions, d.asks
    );
    let _ = writeln!(
        md,
        "- protocol: scenario {}, noise {}, sample {}, seed {}, checkpoints {:?}",
        p.scenario.as_str(),
        p.noise.map_or("none".to_string(), |n| format!(
            "to {} tokens from {}",
            n.target_tokens, p.noise_source
        )),
        p.sample_per_category
            .map_or("all".to_string(), |n| format!("{n} per category")),
        p.sample_seed,
        p.checkpoints
    );
    let _ = writeln!(
        md,
        "- engine: store {}, embedder {}{}, memory model {}, answer model {}, budget {} tokens, batch {}",
        report.store,
        report.embedder,
        report.embedding_ms_per_text.map_or(String::new(), |v| format!(" ({v:.2} ms per text, cached)")),
        report.memory_model,
        report.answer_model,
        report.options.budget,
        report.options.batch
    );
    if !d.dropped.is_empty() || !d.excluded.is_empty() || d.defects > 0 {
        let _ = writeln!(
            md,
            "- left out: dropped by protocol {:?}, excluded by design {:?}, {} loader defects (see `mnemos eval retrieval --defects`)",
            d.dropped, d.excluded, d.defects
        );
    }
    let _ = writeln!(md, "\n## Quality (final asks)\n");
    md.push_str(QUALITY_HEADER);
    for s in &report.presets {
        md.push_str(&quality_row(&s.preset, &s.overall));
        md.push('\n');
    }
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | observe p50 / p95 ms | end-session p50 ms | recall p50 / p95 ms | answer model p50 ms | memories at end | forgotten | memory tokens | model calls / turn | model tokens / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} / {} | {} | {} / {} | {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.1} | {} | {:.0} |",
            s.preset,
            ms(&s.observe, false),
            ms(&s.observe, true),
            ms(&s.end_session, false),
            ms(&s.recall, false),
            ms(&s.recall, true),
            ms(&s.answer_model, false),
            s.final_memories,
            s.final_forgotten,
            s.final_memory_tokens,
            s.model_calls_per_turn,
            s.model_tokens_per_turn,
            s.jobs_failed,
            s.wall_seconds
        );
    }
    let categories: Vec<&String> = report
        .presets
        .first()
        .map(|s| s.by_category.keys().collect())
        .unwrap_or_default();
    if categories.len() > 1 {
        let _ = writeln!(md, "\n## By category\n");
        for category in categories {
            let _ = writeln!(md, "### {category}\n");
            md.push_str(QUALITY_HEADER);
            for s in &report.presets {
                if let Some(q) = s.by_category.get(category) {
                    md.push_str(&quality_row(&s.preset, q));
                    md.push('\n');
                }
            }
            md.push('\n');
        }
    }
    if report.presets.iter().any(|s| s.capacity.len() > 1) {
        let _ = writeln!(
            md,
            "\n## Capacity (the same questions asked as history grows)\n"
        );
        md.push_str("| preset | checkpoint tokens | asks | R@10 | choice acc | answer in context |\n|---|---|---|---|---|---|\n");
        for s in &report.presets {
            for point in &s.capacity {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} |",
                    s.preset,
                    point
                        .checkpoint
                        .map_or("own position".to_string(), |c| c.to_string()),
                    point.quality.asks,
                    point
                        .quality
                        .recall_at
                        .last()
                        .map_or("–".to_string(), |v| f3(*v)),
                    opt3(point.quality.choice_accuracy),
                    opt3(point.quality.answer_in_context)
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\n## Memory over the stream (means over conversations)\n"
    );
    md.push_str("| preset | share of stream | history tokens | memories | memory tokens | bytes |\n|---|---|---|---|---|---|\n");
    for s in &report.presets {
        for point in s
            .sizes
            .iter()
            .filter(|p| (p.progress * 10.0).round() as i64 % 2 == 0 || p.progress >= 1.0)
        {
            let _ = writeln!(
                md,
                "| {} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} |",
                s.preset,
                point.progress,
                point.mean_history_tokens,
                point.mean_memories,
                point.mean_memory_tokens,
                point.mean_bytes
            );
        }
    }
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for s in &report.presets {
        if s.jobs_failed > 0 {
            let _ = writeln!(
                md,
                "- {}: {} job(s) failed, e.g. {:?}",
                s.preset,
                s.jobs_failed,
                s.job_errors.first()
            );
        }
        if s.overall.model_errors > 0 {
            let _ = writeln!(
                md,
                "- {}: the answer model failed on {} ask(s) (counted as wrong)",
                s.preset, s.overall.model_errors
            );
        }
    }
    md
}

/// A variant's name as a plot legend shows it: `retrieval[retriever="hybrid" hops=2
/// split_questions=true]` becomes `retrieval[hybrid, hops=2, split_questions]` (string values
/// alone, true flags by name), so long variant names stay apart in a narrow legend.
fn legend_label(variant: &str) -> String {
    let Some((preset, rest)) = variant.split_once('[') else {
        return variant.to_string();
    };
    let params = rest.trim_end_matches(']');
    let parts: Vec<String> = params
        .split_whitespace()
        .map(|assignment| match assignment.split_once('=') {
            Some((name, "true")) => name.to_string(),
            Some((_, value)) if value.starts_with('"') => value.trim_matches('"').to_string(),
            _ => assignment.to_string(),
        })
        .collect();
    format!("{preset}[{}]", parts.join(", "))
}

/// (file stem, chart) for every plot the report draws.
fn charts(report: &Report) -> Vec<(String, LineChart)> {
    let mut charts = Vec::new();
    let capacity = |pick: &dyn Fn(&Quality) -> Option<f64>| -> Vec<Series> {
        report
            .presets
            .iter()
            .map(|s| Series {
                name: legend_label(&s.preset),
                points: s
                    .capacity
                    .iter()
                    .filter(|p| p.checkpoint.is_some())
                    .filter_map(|p| pick(&p.quality).map(|y| (p.mean_history_tokens.max(1.0), y)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let recall = capacity(&|q| q.recall_at.last().copied());
    if !recall.is_empty() {
        charts.push((
            "capacity-recall".to_string(),
            LineChart {
                title: format!("{}: Recall@10 as history grows", report.dataset.name),
                x_label: "history tokens".into(),
                y_label: "Recall@10".into(),
                series: recall,
                log_x: true,
                y_range: Some((0.0, 1.0)),
            },
        ));
    }
    let accuracy = capacity(&|q| q.choice_accuracy.or(q.answer_in_context));
    if !accuracy.is_empty() {
        charts.push((
            "capacity-accuracy".to_string(),
            LineChart {
                title: format!("{}: accuracy as history grows", report.dataset.name),
                x_label: "history tokens".into(),
                y_label: "accuracy (choice, else answer in context)".into(),
                series: accuracy,
                log_x: true,
                y_range: Some((0.0, 1.0)),
            },
        ));
    }
    let memory: Vec<Series> = report
        .presets
        .iter()
        .map(|s| Series {
            name: legend_label(&s.preset),
            points: s
                .sizes
                .iter()
                .map(|p| (p.mean_history_tokens, p.mean_memory_tokens))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !memory.is_empty() {
        charts.push((
            "memory-growth".to_string(),
            LineChart {
                title: format!("{}: memory kept vs history", report.dataset.name),
                x_label: "history tokens".into(),
                y_label: "memory tokens".into(),
                series: memory,
                log_x: false,
                y_range: None,
            },
        ));
    }
    for sweep in &report.sweeps {
        let variants: Vec<&PresetSummary> = sweep
            .values
            .iter()
            .filter_map(|v| {
                let name = sweep.variant(v);
                report.presets.iter().find(|s| s.preset == name)
            })
            .collect();
        let curve = |pick: &dyn Fn(&Quality) -> Option<f64>| Series {
            name: sweep.label(),
            points: variants
                .iter()
                .filter_map(|s| pick(&s.overall).map(|y| (s.final_memory_tokens, y)))
                .collect(),
        };
        let stem = sweep.stem();
        let recall = curve(&|q| q.recall_at.last().copied());
        let accuracy = curve(&|q| q.choice_accuracy.or(q.answer_in_context));
        let series: Vec<Series> = [recall, accuracy]
            .into_iter()
            .zip(["Recall@10", "accuracy"])
            .filter(|(s, _)| !s.points.is_empty())
            .map(|(mut s, label)| {
                s.name = label.to_string();
                s
            })
            .collect();
        if !series.is_empty() {
            charts.push((
                stem,
                LineChart {
                    title: format!(
                        "{}: quality vs memory kept ({} swept)",
                        report.dataset.name, sweep.param
                    ),
                    x_label: "memory tokens at the end".into(),
                    y_label: "Recall@10 / accuracy (choice, else answer in context)".into(),
                    series,
                    log_x: false,
                    y_range: Some((0.0, 1.0)),
                },
            ));
        }
    }
    charts
}

fn plots_section(report: &Report) -> String {
    let mut md = String::from("\n## Plots\n\n");
    for (stem, chart) in charts(report) {
        let _ = writeln!(
            md,
            "- {}: ![{stem}](plots/{stem}.svg) ([PNG](plots/{stem}.png))",
            chart.title
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_labels_are_compact() {
        assert_eq!(
            legend_label("retrieval[retriever=\"hybrid\" hops=2 split_questions=true]"),
            "retrieval[hybrid, hops=2, split_questions]"
        );
        assert_eq!(legend_label("memgpt"), "memgpt");
    }
}
