//! `mnemos eval probes`: ZH-4O's probe table (MOOM, Appendix), presets side by side.
//!
//! Every probe plants a fact in dialogue [`PROBE_DIALOGUE`] and asks about it much later
//! ([`mnemos_eval::zh4o`] describes the protocol; [`Zh4oProbe::prepared`] builds the stream).
//! Each probe runs as a fresh engine user: the probed stream is observed in writes of `--batch`
//! messages (the protocol's chunks of [`PROBE_CHUNK`]) in sessions of `--session-messages`,
//! and at each query the preset recalls with the query text within `--budget` tokens. Scores:
//!
//! - **hit**: some context item's provenance holds the inserted probe turn (a summary made
//!   from it counts);
//! - **probe in context**: the probe's text appears in the context text (normalized);
//! - **answer similarity**: cosine, under the run's embedder, between the answer model's reply
//!   to the query over the context items and the reference reply. The same model answering
//!   with no memory at all gives the baseline row.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::{Embedder, MemoryModel, MemoryModelExt};
use mnemos_eval::artifacts::{checksum_inputs, InputChecksum, OutDir};
use mnemos_eval::extraction::cosine;
use mnemos_eval::protocol::PreparedConversation;
use mnemos_eval::runner::{AskRecord, RunOptions, Runner};
use mnemos_eval::summary::PresetAccumulator;
use mnemos_eval::zh4o::{PROBE_ACKNOWLEDGMENTS, PROBE_CHUNK, PROBE_DIALOGUE};
use mnemos_eval::{answer_in_context, Zh4oProbe};

use crate::eval_common::{
    embedding_ms, engine_for, f3, ms, turn_embedding_texts, warm_embedder, Cost, StoreKind,
};
use crate::eval_extraction::embed_all;
use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

#[derive(Args, Clone, Serialize)]
pub struct EvalProbesArgs {
    /// The ZH-4O directory.
    path: PathBuf,
    /// Comma-separated presets to run side by side (default: every preset, unless --sweep or
    /// --variant is given).
    #[arg(long)]
    presets: Option<String>,
    /// Run a preset with one parameter swept, e.g. `moom.capacity=20,40` or
    /// `moom[forgetting=ebbinghaus].capacity=20,40` (repeatable).
    #[arg(long)]
    sweep: Vec<String>,
    /// Run a preset with several parameters set together, e.g. `moom:nsb=false` (repeatable).
    #[arg(long)]
    variant: Vec<String>,
    /// Run only the first N probes.
    #[arg(long)]
    probes: Option<usize>,
    /// Messages per write (the protocol ingests chunks of 20).
    #[arg(long, default_value_t = PROBE_CHUNK)]
    batch: usize,
    /// End a session every this many messages of the probed stream (0 = one session).
    #[arg(long, default_value_t = 100)]
    session_messages: usize,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// sqlite (a scratch database per preset, as deployed) or memory (the in-memory store).
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// Write report.md and report.json here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of an existing --out directory.
    #[arg(long)]
    overwrite: bool,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    mnemos: &'static str,
    dataset: DatasetInfo,
    protocol: Protocol,
    store: String,
    embedder: String,
    embedding_ms_per_text: Option<f64>,
    memory_model: String,
    answer_model: String,
    /// The answer model with an empty context.
    baseline: Scores,
    presets: Vec<PresetRow>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct DatasetInfo {
    path: String,
    dialogue: usize,
    dialogue_messages: usize,
    probes: usize,
    queries: usize,
    /// Mean messages streamed before a query.
    mean_stream_messages: f64,
    defects: usize,
    checksums: Vec<InputChecksum>,
}

#[derive(Serialize)]
struct Protocol {
    batch: usize,
    session_messages: usize,
    budget: usize,
    acknowledgments: [&'static str; 3],
}

/// One query of one probe under one preset.
#[derive(Debug, Clone, Serialize)]
struct ProbeRecord {
    probe: String,
    difficulty: String,
    query: String,
    reference: String,
    answer: Option<String>,
    hit: bool,
    probe_in_context: bool,
    answer_similarity: f64,
    answer_f1: Option<f64>,
    items_observed: usize,
    context_items: usize,
    context_tokens: usize,
    recall_ms: f64,
    model_error: Option<String>,
}

/// Means over a group of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
struct Scores {
    queries: usize,
    hit_rate: f64,
    probe_in_context: f64,
    answer_similarity: f64,
    answer_f1: f64,
}

impl Scores {
    fn of<'a>(records: impl IntoIterator<Item = &'a ProbeRecord>) -> Scores {
        let records: Vec<&ProbeRecord> = records.into_iter().collect();
        if records.is_empty() {
            return Scores::default();
        }
        let n = records.len() as f64;
        let mean = |f: &dyn Fn(&ProbeRecord) -> f64| records.iter().map(|r| f(r)).sum::<f64>() / n;
        Scores {
            queries: records.len(),
            hit_rate: mean(&|r| f64::from(u8::from(r.hit))),
            probe_in_context: mean(&|r| f64::from(u8::from(r.probe_in_context))),
            answer_similarity: mean(&|r| r.answer_similarity),
            answer_f1: mean(&|r| r.answer_f1.unwrap_or(0.0)),
        }
    }
}

#[derive(Serialize)]
struct PresetRow {
    preset: String,
    overall: Scores,
    by_difficulty: BTreeMap<String, Scores>,
    cost: Cost,
    queries: Vec<ProbeRecord>,
}

pub fn run(config: &Config, args: EvalProbesArgs) -> Result<()> {
    let store_kind = StoreKind::parse(&args.store)?;
    let (specs, _) = crate::eval_variants::expand(
        config,
        &args.presets,
        &args.sweep,
        &args.variant,
        args.sweep.is_empty() && args.variant.is_empty(),
    )?;
    let out = match &args.out {
        Some(dir) => Some(OutDir::create(dir, args.overwrite)?),
        None => None,
    };
    let dataset = mnemos_eval::load_zh4o(&args.path)?;
    let Some(dialogue) = dataset.dialogue(PROBE_DIALOGUE) else {
        bail!(
            "{}: dialogue {PROBE_DIALOGUE}, which the probes run against, is missing",
            args.path.display()
        );
    };
    let probes: Vec<&Zh4oProbe> = dataset
        .probes
        .iter()
        .filter(|p| p.dialogue.is_some())
        .take(args.probes.unwrap_or(usize::MAX))
        .collect();
    if probes.is_empty() {
        bail!("{}: no probe to run", args.path.display());
    }
    let streams: Vec<(&Zh4oProbe, PreparedConversation)> = probes
        .iter()
        .map(|p| (*p, p.prepared(dialogue, args.session_messages)))
        .collect();
    let items: usize = streams
        .iter()
        .map(|(_, s)| s.conversation.items.len())
        .sum();
    let queries: usize = streams.iter().map(|(_, s)| s.asks.len()).sum();
    eprintln!(
        "zh4o probes: {} probes, {queries} queries, {items} messages to stream per preset",
        probes.len()
    );
    let turn_texts = turn_embedding_texts(
        config,
        streams.iter().flat_map(|(_, s)| &s.conversation.items),
    );
    let mut texts: Vec<&str> = turn_texts.iter().map(String::as_str).collect();
    for (_, stream) in &streams {
        for question in &stream.conversation.questions {
            texts.push(question.text.as_str());
            texts.extend(question.answer.as_deref());
        }
    }
    let (embedder, cache) = warm_embedder(config, &texts)?;
    let answerer = mnemos_engine::setup::memory_model(config, &embedder)?.0;
    let options = RunOptions {
        budget: args.budget,
        choose: false,
        answer: true,
        batch: args.batch.max(1),
        tenant: config.tenant.clone(),
        ..RunOptions::default()
    };
    let baseline = baseline(answerer.as_ref(), embedder.as_ref(), &streams)?;
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut rows = Vec::new();
    let mut memory_model = String::new();
    for (name, engine_config) in &specs {
        let preset = engine_for(
            config,
            name,
            engine_config,
            store_kind,
            scratch.path(),
            &embedder,
        )?;
        memory_model = preset.model_id.clone();
        let runner = Runner {
            preset: name,
            engine: &preset.engine,
            answerer: answerer.as_ref(),
            clock: &preset.clock,
            options: &options,
        };
        let started = Instant::now();
        let bar = progress_bar(items as u64, name);
        let mut accumulator = PresetAccumulator::default();
        let mut records = Vec::new();
        for (probe, stream) in &streams {
            let mut run = runner
                .run(stream, true, &|n| bar.inc(n))
                .with_context(|| format!("{name} on {}", stream.conversation.id))?;
            for ask in &mut run.asks {
                let query = stream
                    .conversation
                    .questions
                    .iter()
                    .find(|q| q.id == ask.question)
                    .map_or_else(String::new, |q| q.text.clone());
                records.push(probe_record(embedder.as_ref(), probe, query, ask)?);
                // Only the scores above need the context text.
                ask.context_text.clear();
            }
            accumulator.add(run);
        }
        bar.finish_and_clear();
        let summary =
            accumulator.summarize(name, options.ks.len(), started.elapsed().as_secs_f64());
        let row = preset_row(name, records, Cost::of(&summary));
        eprintln!(
            "{name}: hit rate {:.3} over {} queries in {:.0} s",
            row.overall.hit_rate, row.overall.queries, summary.wall_seconds
        );
        rows.push(row);
    }
    let report = Report {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: DatasetInfo {
            path: args.path.display().to_string(),
            dialogue: PROBE_DIALOGUE,
            dialogue_messages: dialogue.messages.len(),
            probes: probes.len(),
            queries,
            mean_stream_messages: items as f64 / streams.len().max(1) as f64,
            defects: dataset.defects.len(),
            checksums: checksum_inputs(std::slice::from_ref(&args.path))?,
        },
        protocol: Protocol {
            batch: options.batch,
            session_messages: args.session_messages,
            budget: args.budget,
            acknowledgments: PROBE_ACKNOWLEDGMENTS,
        },
        store: store_kind.as_str().to_string(),
        embedder: embedder.id().to_string(),
        embedding_ms_per_text: embedding_ms(&cache),
        memory_model,
        answer_model: answerer.id().to_string(),
        baseline,
        presets: rows,
        notes: notes(&args),
    };
    let markdown = render_markdown(&report);
    if let Some(dir) = &out {
        dir.write_json("report.json", &report)?;
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

/// Cosine between two texts' vectors under `embedder`.
fn text_similarity(embedder: &dyn Embedder, a: &str, b: &str) -> Result<f64> {
    let vectors = embed_all(embedder, &[a, b])?;
    Ok(cosine(&vectors[0], &vectors[1]))
}

/// The scores of one ask: the runner's hit and answer, plus the probe's text in the context
/// and the answer's similarity to the reference.
fn probe_record(
    embedder: &dyn Embedder,
    probe: &Zh4oProbe,
    query: String,
    ask: &AskRecord,
) -> Result<ProbeRecord> {
    let reference = ask.gold_answer.clone().unwrap_or_default();
    let answer_similarity = match ask.answer.as_deref() {
        Some(answer) if !answer.trim().is_empty() && !reference.is_empty() => {
            text_similarity(embedder, answer, &reference)?
        }
        _ => 0.0,
    };
    Ok(ProbeRecord {
        probe: ask.conversation.clone(),
        difficulty: probe.difficulty.clone(),
        query,
        reference,
        answer: ask.answer.clone(),
        hit: ask.evidence_in_context,
        probe_in_context: probe_in_context(probe, &ask.context_text),
        answer_similarity,
        answer_f1: ask.answer_f1,
        items_observed: ask.items_observed,
        context_items: ask.context_items,
        context_tokens: ask.context_tokens,
        recall_ms: ask.recall_ms,
        model_error: ask.model_error.clone(),
    })
}

/// Whether every inserted text of the probe appears in the context.
fn probe_in_context(probe: &Zh4oProbe, context: &str) -> bool {
    !probe.inserts.is_empty()
        && probe
            .inserts
            .iter()
            .all(|insert| answer_in_context(&insert.text, context))
}

fn preset_row(name: &str, records: Vec<ProbeRecord>, cost: Cost) -> PresetRow {
    let mut groups: BTreeMap<String, Vec<&ProbeRecord>> = BTreeMap::new();
    for record in &records {
        groups
            .entry(record.difficulty.clone())
            .or_default()
            .push(record);
    }
    PresetRow {
        preset: name.to_string(),
        overall: Scores::of(&records),
        by_difficulty: groups
            .into_iter()
            .map(|(difficulty, group)| (difficulty, Scores::of(group)))
            .collect(),
        cost,
        queries: records,
    }
}

/// The answer model replying to each query with no memory: what a preset must beat.
fn baseline(
    answerer: &dyn MemoryModel,
    embedder: &dyn Embedder,
    streams: &[(&Zh4oProbe, PreparedConversation)],
) -> Result<Scores> {
    let mut records = Vec::new();
    for (probe, stream) in streams {
        for question in &stream.conversation.questions {
            let reference = question.answer.clone().unwrap_or_default();
            let (answer, model_error) = match answerer.answer(&question.text, &[]) {
                Ok(answer) => (Some(answer), None),
                Err(err) => (None, Some(err.to_string())),
            };
            let answer_similarity = match answer.as_deref() {
                Some(a) if !a.trim().is_empty() => text_similarity(embedder, a, &reference)?,
                _ => 0.0,
            };
            records.push(ProbeRecord {
                probe: stream.conversation.id.clone(),
                difficulty: probe.difficulty.clone(),
                query: question.text.clone(),
                answer_f1: answer
                    .as_deref()
                    .map(|a| mnemos_eval::token_f1(a, &reference)),
                reference,
                answer,
                hit: false,
                probe_in_context: false,
                answer_similarity,
                items_observed: 0,
                context_items: 0,
                context_tokens: 0,
                recall_ms: 0.0,
                model_error,
            });
        }
    }
    Ok(Scores::of(&records))
}

fn notes(args: &EvalProbesArgs) -> Vec<String> {
    vec![
        format!(
            "Protocol (zh4o.rs): each probe is a fresh user; its text goes in as a user message \
             at its position of dialogue {PROBE_DIALOGUE}, followed by a bot acknowledgment \
             ({} by probe id, not at random); the stream is written in batches of {} messages \
             in sessions of {}, and each query is asked (recall with the query text, budget {}) \
             after the chunk of {PROBE_CHUNK} stream messages holding its position. Nothing \
             after the last query is streamed.",
            PROBE_ACKNOWLEDGMENTS.join(" / "),
            args.batch.max(1),
            args.session_messages,
            args.budget
        ),
        "hit = some context item's provenance holds the inserted probe turn (a summary made \
         from it counts); probe in context = the probe's text appears in the context text; \
         answer similarity = cosine between the answer model's reply over the context items and \
         the reference reply, under the run's embedder; answer F1 = token F1 against the \
         reference (characters for Chinese)."
            .to_string(),
        "The baseline row is the same answer model with an empty context: the similarity a \
         reply gets without any memory."
            .to_string(),
        "A hit by provenance credits a summary or profile for every turn it was built from: a \
         profile rebuilt from every session summary (memorybank) and recalled first names the \
         probe turn whatever it says, so its hit rate says little; probe in context is the \
         comparison that reads the text."
            .to_string(),
    ]
}

fn scores_cells(s: &Scores) -> String {
    format!(
        "{} | {} | {} | {} | {}",
        s.queries,
        f3(s.hit_rate),
        f3(s.probe_in_context),
        f3(s.answer_similarity),
        f3(s.answer_f1)
    )
}

fn render_markdown(report: &Report) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(md, "# mnemos eval probes: zh4o\n");
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} probes ({} queries) on dialogue {} ({} messages); {:.0} messages streamed per probe on average",
        d.path, d.probes, d.queries, d.dialogue, d.dialogue_messages, d.mean_stream_messages
    );
    let _ = writeln!(
        md,
        "- engine: store {}, embedder {}{}, memory model {}, answer model {}, budget {} tokens, writes of {}, sessions of {} messages",
        report.store,
        report.embedder,
        report
            .embedding_ms_per_text
            .map_or(String::new(), |v| format!(" ({v:.2} ms per text, cached)")),
        report.memory_model,
        report.answer_model,
        report.protocol.budget,
        report.protocol.batch,
        report.protocol.session_messages
    );
    let difficulties: Vec<&String> = report
        .presets
        .iter()
        .flat_map(|r| r.by_difficulty.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = writeln!(md, "\n## Probes\n");
    md.push_str("| preset | queries | hit rate | probe in context | answer similarity | answer F1 | recall p50 ms | observe p50 ms |\n|---|---|---|---|---|---|---|---|\n");
    let _ = writeln!(
        md,
        "| (no memory) | {} | – | – |",
        scores_cells(&report.baseline)
    );
    for row in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            row.preset,
            scores_cells(&row.overall),
            ms(&row.cost.recall, false),
            ms(&row.cost.observe, false)
        );
    }
    if !difficulties.is_empty() {
        let _ = writeln!(md, "\n## By difficulty\n");
        md.push_str("| preset | difficulty | queries | hit rate | probe in context | answer similarity | answer F1 |\n|---|---|---|---|---|---|---|\n");
        for row in &report.presets {
            for difficulty in &difficulties {
                if let Some(s) = row.by_difficulty.get(*difficulty) {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} |",
                        row.preset,
                        difficulty,
                        scores_cells(s)
                    );
                }
            }
        }
    }
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | observe p50 / p95 ms | end-session p50 ms | recall p50 / p95 ms | answer model p50 ms | memories at the query | model calls / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
    for row in &report.presets {
        let c = &row.cost;
        let _ = writeln!(
            md,
            "| {} | {} / {} | {} | {} / {} | {} | {:.0} | {:.3} | {} | {:.0} |",
            row.preset,
            ms(&c.observe, false),
            ms(&c.observe, true),
            ms(&c.end_session, false),
            ms(&c.recall, false),
            ms(&c.recall, true),
            ms(&c.answer_model, false),
            c.final_memories,
            c.model_calls_per_turn,
            c.jobs_failed,
            c.wall_seconds
        );
    }
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for row in &report.presets {
        let errors = row
            .queries
            .iter()
            .filter(|r| r.model_error.is_some())
            .count();
        if errors > 0 {
            let _ = writeln!(
                md,
                "- {}: the answer model failed on {errors} query(ies) (similarity 0)",
                row.preset
            );
        }
        if row.cost.jobs_failed > 0 {
            let _ = writeln!(
                md,
                "- {}: {} job(s) failed, e.g. {:?}",
                row.preset,
                row.cost.jobs_failed,
                row.cost.job_errors.first()
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_eval::{Zh4oInsert, Zh4oQuery};

    fn record(difficulty: &str, hit: bool, similarity: f64) -> ProbeRecord {
        ProbeRecord {
            probe: "p".into(),
            difficulty: difficulty.into(),
            query: "q".into(),
            reference: "r".into(),
            answer: Some("a".into()),
            hit,
            probe_in_context: hit,
            answer_similarity: similarity,
            answer_f1: None,
            items_observed: 0,
            context_items: 0,
            context_tokens: 0,
            recall_ms: 0.0,
            model_error: None,
        }
    }

    #[test]
    fn rows_split_by_difficulty() {
        let records = vec![
            record("easy", true, 0.5),
            record("easy", false, 0.3),
            record("difficult", true, 1.0),
        ];
        let cost = Cost::of(&PresetAccumulator::default().summarize("x", 0, 0.0));
        let row = preset_row("x", records, cost);
        assert_eq!(row.overall.queries, 3);
        assert!((row.overall.hit_rate - 2.0 / 3.0).abs() < 1e-12);
        assert!((row.overall.answer_similarity - 0.6).abs() < 1e-12);
        assert_eq!(row.by_difficulty["easy"].queries, 2);
        assert!((row.by_difficulty["easy"].hit_rate - 0.5).abs() < 1e-12);
        assert!((row.by_difficulty["difficult"].probe_in_context - 1.0).abs() < 1e-12);
        assert_eq!(Scores::of(&[]), Scores::default());
    }

    #[test]
    fn probe_text_is_found_in_the_context() {
        let probe = Zh4oProbe {
            id: 0,
            difficulty: "easy".into(),
            dialogue: Some(PROBE_DIALOGUE),
            inserts: vec![Zh4oInsert {
                position: 2,
                text: "我酒量特别差".into(),
            }],
            queries: vec![Zh4oQuery {
                position: 30,
                text: "你在喝什么？".into(),
                answer: "酒".into(),
            }],
        };
        assert!(probe_in_context(&probe, "相关对话：\n赵齐：我酒量特别差！"));
        assert!(!probe_in_context(&probe, "赵齐：我酒量很好"));
        let none = Zh4oProbe {
            inserts: Vec::new(),
            ..probe
        };
        assert!(!probe_in_context(&none, "anything"));
    }
}
