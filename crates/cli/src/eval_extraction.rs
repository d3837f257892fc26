//! `mnemos eval extraction`: MOOM's memory-extraction score (§5.2, Table 1; Appendix G for
//! LoCoMo), presets side by side.
//!
//! Each labelled dialogue (ZH-4O) or conversation (LoCoMo) is streamed through each preset's
//! engine — one engine user per dialogue, every message observed (user and bot) — and then the
//! user's active *derived* memories are the predictions and the human labels the references
//! ([`mnemos_eval::extraction`] says which memories count). For each label the best-matching
//! memory gives the label's ROUGE-L, ROUGE-2 and embedding similarity
//! ([`mnemos_eval::extraction_score`]); the numbers are averaged over all labels of all
//! dialogues, as MOOM does.
//!
//! ZH-4O has no sessions: the dialogue is cut into sessions of `--session-messages` messages
//! (default 100) and each ends with `end_session`, so presets that summarize per session
//! (MemoryBank) get to summarize. LoCoMo keeps its own sessions. ROUGE is scored on characters
//! and on jieba words for ZH-4O, on words for LoCoMo (English: characters would only be letters).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::{Embedder, Memory, UserKey};
use mnemos_eval::artifacts::{checksum_inputs, InputChecksum, OutDir};
use mnemos_eval::extraction::{cosine, derived_memories, LabelMean};
use mnemos_eval::plot::{write_line_chart, LineChart, Series};
use mnemos_eval::protocol::PreparedConversation;
use mnemos_eval::runner::{RunOptions, Runner};
use mnemos_eval::summary::PresetAccumulator;
use mnemos_eval::{best_rouge_l_matches, extraction_score, Conversation, Granularity, Prf};

use crate::eval_common::{
    active_memories, embedding_ms, engine_for, f3, ms, opt3, stream_only, turn_embedding_texts,
    warm_embedder, Cost, StoreKind,
};
use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

#[derive(Args, Clone, Serialize)]
pub struct EvalExtractionArgs {
    /// A ZH-4O directory or a LoCoMo file.
    path: PathBuf,
    /// auto (a directory is ZH-4O, a file LoCoMo), zh4o or locomo.
    #[arg(long, default_value = "auto")]
    dataset: String,
    /// Comma-separated presets to run side by side (default: every preset, unless --sweep or
    /// --variant is given).
    #[arg(long)]
    presets: Option<String>,
    /// Run a preset with one parameter swept, e.g. `moom.capacity=20,40,80`, or on top of fixed
    /// ones, `moom[forgetting=ebbinghaus].capacity=20,40,80` (repeatable); each sweep is one
    /// curve of the forgetting plot (extraction quality against memories kept).
    #[arg(long)]
    sweep: Vec<String>,
    /// Run a preset with several parameters set together, e.g. `moom:nsb=false` (repeatable).
    #[arg(long)]
    variant: Vec<String>,
    /// Score only the first N labelled dialogues (LoCoMo: conversations).
    #[arg(long)]
    dialogues: Option<usize>,
    /// ZH-4O has no sessions: end one every this many messages (0 = one session).
    #[arg(long, default_value_t = 100)]
    session_messages: usize,
    /// Turns per write (1 = turn by turn, as a live chat).
    #[arg(long, default_value_t = 20)]
    batch: usize,
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
    /// Write every extracted memory and each label's best match (ROUGE-L on words) to this
    /// JSONL file, one line per preset and dialogue, for reading the errors.
    #[arg(long)]
    dump: Option<PathBuf>,
}

/// One dialogue with its labels.
struct Labelled {
    prepared: PreparedConversation,
    labels: Vec<String>,
}

/// The dialogues to score and how to score them.
struct Loaded {
    name: &'static str,
    granularities: Vec<Granularity>,
    dialogues: Vec<Labelled>,
    defects: usize,
    /// Dialogues left out for having no labels.
    unlabelled: usize,
}

#[derive(Serialize)]
struct Report {
    mnemos: &'static str,
    dataset: DatasetInfo,
    protocol: Protocol,
    store: String,
    embedder: String,
    /// Mean time the embedding model took per text (measured while warming the cache).
    embedding_ms_per_text: Option<f64>,
    memory_model: String,
    presets: Vec<PresetRow>,
    sweeps: Vec<crate::eval_variants::Sweep>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct DatasetInfo {
    name: String,
    path: String,
    dialogues: usize,
    messages: usize,
    labels: usize,
    unlabelled_dialogues_left_out: usize,
    defects: usize,
    checksums: Vec<InputChecksum>,
}

#[derive(Serialize)]
struct Protocol {
    /// Every message of the dialogue is observed, user and bot.
    scenario: &'static str,
    /// ZH-4O only: messages per session.
    session_messages: Option<usize>,
    batch: usize,
    granularities: Vec<Granularity>,
    /// Memory kinds that count as extracted.
    derived_kinds: Vec<&'static str>,
    averaging: &'static str,
}

/// ROUGE of one granularity.
#[derive(Debug, Clone, Serialize)]
struct GranularityScore {
    granularity: Granularity,
    rouge_l: Prf,
    rouge_2: Prf,
}

#[derive(Serialize)]
struct DialogueRecord {
    dialogue: String,
    messages: usize,
    labels: usize,
    memories: usize,
    scores: Vec<GranularityScore>,
    embedding: Option<f64>,
}

#[derive(Serialize)]
struct PresetRow {
    preset: String,
    dialogues: usize,
    labels: usize,
    memories_per_dialogue: f64,
    /// Extracted memories by kind, over all dialogues.
    memories_by_kind: BTreeMap<String, usize>,
    /// Means over all labels, per granularity.
    scores: Vec<GranularityScore>,
    /// Mean best cosine per label.
    embedding: Option<f64>,
    cost: Cost,
    per_dialogue: Vec<DialogueRecord>,
}

pub fn run(config: &Config, args: EvalExtractionArgs) -> Result<()> {
    let store_kind = StoreKind::parse(&args.store)?;
    let (specs, sweeps) = crate::eval_variants::expand(
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
    let loaded = load(&args)?;
    if loaded.dialogues.is_empty() {
        bail!("{}: no labelled dialogue to score", args.path.display());
    }
    let messages: usize = loaded
        .dialogues
        .iter()
        .map(|d| d.prepared.conversation.items.len())
        .sum();
    let labels: usize = loaded.dialogues.iter().map(|d| d.labels.len()).sum();
    eprintln!(
        "{}: {} dialogues, {messages} messages, {labels} labels",
        loaded.name,
        loaded.dialogues.len()
    );
    let turn_texts = turn_embedding_texts(
        config,
        loaded
            .dialogues
            .iter()
            .flat_map(|d| &d.prepared.conversation.items),
    );
    let mut texts: Vec<&str> = turn_texts.iter().map(String::as_str).collect();
    for dialogue in &loaded.dialogues {
        texts.extend(dialogue.labels.iter().map(String::as_str));
    }
    let (embedder, cache) = warm_embedder(config, &texts)?;
    let options = RunOptions {
        batch: args.batch.max(1),
        tenant: config.tenant.clone(),
        ..RunOptions::default()
    };
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let answerer = mnemos_engine::setup::memory_model(config, &embedder)?.0;
    let mut dump = match &args.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
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
        let bar = progress_bar(messages as u64, name);
        let mut accumulator = PresetAccumulator::default();
        let mut means: Vec<LabelMean> = vec![LabelMean::default(); loaded.granularities.len()];
        let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
        let mut per_dialogue = Vec::new();
        for dialogue in &loaded.dialogues {
            let conversation = &dialogue.prepared.conversation;
            let run = runner
                .run(&dialogue.prepared, false, &|n| bar.inc(n))
                .with_context(|| format!("{name} on {}", conversation.id))?;
            accumulator.add(run);
            let user = UserKey::new(options.tenant.clone(), conversation.id.clone())?;
            let memories = active_memories(&preset.engine, &user)?;
            let derived = derived_memories(&memories);
            for memory in &derived {
                *by_kind.entry(memory.kind.tag().to_string()).or_insert(0) += 1;
            }
            let predictions: Vec<&str> = derived.iter().map(|m| m.text.as_str()).collect();
            if let Some(dump) = dump.as_mut() {
                write_dump_line(dump, name, &conversation.id, &dialogue.labels, &derived)?;
            }
            let (scores, embedding) = score_dialogue(
                embedder.as_ref(),
                &dialogue.labels,
                &predictions,
                &loaded.granularities,
                &mut means,
            )?;
            per_dialogue.push(DialogueRecord {
                dialogue: conversation.id.clone(),
                messages: conversation.items.len(),
                labels: dialogue.labels.len(),
                memories: predictions.len(),
                scores,
                embedding,
            });
            preset.engine.purge(&user)?;
        }
        bar.finish_and_clear();
        let summary = accumulator.summarize(name, 0, started.elapsed().as_secs_f64());
        let summaries: Vec<_> = means.iter().map(LabelMean::summary).collect();
        let first = summaries.first().copied().unwrap_or_default();
        eprintln!(
            "{name}: {:.1} memories per dialogue in {:.0} s",
            first.memories_per_dialogue, summary.wall_seconds
        );
        rows.push(PresetRow {
            preset: name.clone(),
            dialogues: first.dialogues,
            labels: first.labels,
            memories_per_dialogue: first.memories_per_dialogue,
            memories_by_kind: by_kind,
            scores: loaded
                .granularities
                .iter()
                .zip(&summaries)
                .map(|(granularity, s)| GranularityScore {
                    granularity: *granularity,
                    rouge_l: s.rouge_l,
                    rouge_2: s.rouge_2,
                })
                .collect(),
            embedding: first.embedding,
            cost: Cost::of(&summary),
            per_dialogue,
        });
    }
    if let Some(mut dump) = dump {
        std::io::Write::flush(&mut dump).context("cannot write the dump")?;
    }
    let zh4o = loaded.name == "zh4o";
    let report = Report {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: DatasetInfo {
            name: loaded.name.to_string(),
            path: args.path.display().to_string(),
            dialogues: loaded.dialogues.len(),
            messages,
            labels,
            unlabelled_dialogues_left_out: loaded.unlabelled,
            defects: loaded.defects,
            checksums: checksum_inputs(std::slice::from_ref(&args.path))?,
        },
        protocol: Protocol {
            scenario: "participation",
            session_messages: zh4o.then_some(args.session_messages),
            batch: options.batch,
            granularities: loaded.granularities.clone(),
            derived_kinds: DERIVED_KINDS.to_vec(),
            averaging: "mean over all labels of all dialogues",
        },
        store: store_kind.as_str().to_string(),
        embedder: embedder.id().to_string(),
        embedding_ms_per_text: embedding_ms(&cache),
        memory_model,
        notes: notes(&rows, zh4o, args.session_messages, options.batch),
        presets: rows,
        sweeps,
    };
    let markdown = render_markdown(&report);
    if let Some(dir) = &out {
        dir.write_json("report.json", &report)?;
        let mut markdown = markdown.clone();
        let charts = forgetting_charts(&report);
        if !charts.is_empty() {
            markdown.push_str("\n## Plots\n\n");
        }
        for (stem, chart) in &charts {
            let output = write_line_chart(chart, dir.plots_dir(), stem)?;
            let _ = writeln!(
                markdown,
                "- {}: ![{stem}](plots/{stem}.svg) ([PNG](plots/{stem}.png))",
                chart.title
            );
            for note in output.notes {
                eprintln!("note: {note}");
                let _ = writeln!(markdown, "\n> plot note: {note}");
            }
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

/// Forgetting curves (MOOM Fig. 3): for each sweep, extraction quality against the memories
/// each run kept per dialogue; every sweep is one line, and the runs of the same preset that
/// are not part of a sweep are single points beside them (e.g. no forgetting at all).
fn forgetting_charts(report: &Report) -> Vec<(String, LineChart)> {
    if report.sweeps.is_empty() {
        return Vec::new();
    }
    let swept: Vec<String> = report
        .sweeps
        .iter()
        .flat_map(|s| s.values.iter().map(|v| s.variant(v)))
        .collect();
    let quality = |row: &PresetRow, what: usize| -> Option<f64> {
        let score = row.scores.first()?;
        match what {
            0 => Some(score.rouge_l.f),
            1 => Some(score.rouge_2.f),
            _ => row.embedding,
        }
    };
    let granularity = report
        .protocol
        .granularities
        .first()
        .map_or("", |g| match g {
            Granularity::Char => "characters",
            Granularity::Word => "words",
        });
    let mut charts = Vec::new();
    for (what, name, stem) in [
        (
            0,
            format!("ROUGE-L F ({granularity})"),
            "forgetting-rouge-l",
        ),
        (
            1,
            format!("ROUGE-2 F ({granularity})"),
            "forgetting-rouge-2",
        ),
        (2, "embedding cosine".to_string(), "forgetting-cosine"),
    ] {
        let mut series: Vec<Series> = report
            .sweeps
            .iter()
            .map(|sweep| Series {
                name: sweep.label(),
                points: sweep
                    .values
                    .iter()
                    .filter_map(|v| {
                        let row = report
                            .presets
                            .iter()
                            .find(|r| r.preset == sweep.variant(v))?;
                        Some((row.memories_per_dialogue, quality(row, what)?))
                    })
                    .collect(),
            })
            .collect();
        for row in &report.presets {
            let same_preset = report.sweeps.iter().any(|s| {
                row.preset == s.preset || row.preset.starts_with(&format!("{}[", s.preset))
            });
            if same_preset && !swept.contains(&row.preset) {
                if let Some(y) = quality(row, what) {
                    series.push(Series {
                        name: row.preset.clone(),
                        points: vec![(row.memories_per_dialogue, y)],
                    });
                }
            }
        }
        series.retain(|s| !s.points.is_empty());
        if series.is_empty() {
            continue;
        }
        charts.push((
            stem.to_string(),
            LineChart {
                title: format!("{}: {name} vs memories kept", report.dataset.name),
                x_label: "extracted memories per dialogue at the end".into(),
                y_label: name,
                series,
                log_x: false,
                y_range: None,
            },
        ));
    }
    charts
}

/// One dump line: a dialogue's extracted memories and each label's best match among them.
fn write_dump_line(
    out: &mut impl std::io::Write,
    preset: &str,
    dialogue: &str,
    labels: &[String],
    derived: &[&Memory],
) -> Result<()> {
    let texts: Vec<&str> = derived.iter().map(|m| m.text.as_str()).collect();
    let matches = best_rouge_l_matches(labels, &texts, Granularity::Word);
    let line = serde_json::json!({
        "preset": preset,
        "dialogue": dialogue,
        "memories": derived
            .iter()
            .map(|m| serde_json::json!({ "kind": m.kind.tag(), "text": m.text }))
            .collect::<Vec<_>>(),
        "labels": labels
            .iter()
            .zip(&matches)
            .map(|(label, best)| serde_json::json!({
                "label": label,
                "best": best.map(|(i, _)| i),
                "rouge_l_words": best.map(|(_, prf)| prf),
            }))
            .collect::<Vec<_>>(),
    });
    writeln!(out, "{line}").context("cannot write the dump")?;
    Ok(())
}

/// The kinds [`mnemos_eval::extraction::is_derived`] accepts, for the report.
const DERIVED_KINDS: [&str; 6] = [
    "summary",
    "persona",
    "chain_node",
    "fact",
    "profile",
    "reflection",
];

fn load(args: &EvalExtractionArgs) -> Result<Loaded> {
    let dataset = match args.dataset.as_str() {
        "auto" if args.path.is_dir() => "zh4o",
        "auto" => "locomo",
        "zh4o" | "locomo" => args.dataset.as_str(),
        other => bail!("--dataset must be auto, zh4o or locomo, not {other:?}"),
    };
    let limit = args.dialogues.unwrap_or(usize::MAX);
    if dataset == "zh4o" {
        let zh4o = mnemos_eval::load_zh4o(&args.path)?;
        let unlabelled = zh4o
            .dialogues
            .iter()
            .filter(|d| d.labels.is_empty())
            .count();
        let dialogues = zh4o
            .dialogues
            .iter()
            .filter(|d| !d.labels.is_empty())
            .take(limit)
            .map(|d| Labelled {
                prepared: stream_only(
                    d.conversation(&format!("zh4o-{}", d.index), args.session_messages),
                ),
                labels: d.facts().map(str::to_string).collect(),
            })
            .collect();
        return Ok(Loaded {
            name: "zh4o",
            granularities: vec![Granularity::Char, Granularity::Word],
            dialogues,
            defects: zh4o.defects.len(),
            unlabelled,
        });
    }
    load_locomo(&args.path, limit)
}

fn load_locomo(path: &Path, limit: usize) -> Result<Loaded> {
    let dataset = mnemos_eval::load_locomo(path)?;
    let observations = mnemos_eval::load_locomo_observations(path)?;
    let mut unlabelled = 0;
    let mut dialogues = Vec::new();
    for conversation in dataset.conversations {
        let labels: Vec<String> = observations
            .conversations
            .iter()
            .find(|o| o.id == conversation.id)
            .map(|o| o.facts.iter().map(|f| f.text.clone()).collect())
            .unwrap_or_default();
        if labels.is_empty() {
            unlabelled += 1;
            continue;
        }
        if dialogues.len() < limit {
            dialogues.push(Labelled {
                prepared: stream_only(Conversation {
                    questions: Vec::new(),
                    ..conversation
                }),
                labels,
            });
        }
    }
    Ok(Loaded {
        name: "locomo",
        granularities: vec![Granularity::Word],
        dialogues,
        defects: dataset.defects.len() + observations.defects.len(),
        unlabelled,
    })
}

/// Score one dialogue's predictions at every granularity (adding to `means`), with the cosine
/// of the embedder's vectors as the similarity: ROUGE per granularity and the mean best cosine.
fn score_dialogue(
    embedder: &dyn Embedder,
    labels: &[String],
    predictions: &[&str],
    granularities: &[Granularity],
    means: &mut [LabelMean],
) -> Result<(Vec<GranularityScore>, Option<f64>)> {
    let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let label_vectors = embed_all(embedder, &label_refs)?;
    let memory_vectors = embed_all(embedder, predictions)?;
    let similarity = |l: usize, m: usize| cosine(&label_vectors[l], &memory_vectors[m]);
    let mut scores = Vec::with_capacity(granularities.len());
    let mut embedding = None;
    for (granularity, mean) in granularities.iter().zip(means.iter_mut()) {
        let score = extraction_score(labels, predictions, *granularity, Some(&similarity));
        mean.add(&score);
        embedding = score.embedding;
        scores.push(GranularityScore {
            granularity: *granularity,
            rouge_l: score.rouge_l,
            rouge_2: score.rouge_2,
        });
    }
    Ok((scores, embedding))
}

/// Vectors of `texts`, in the embedder's batch size.
pub(crate) fn embed_all(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(embedder.max_batch().clamp(1, 64)) {
        vectors.extend(embedder.embed_batch(chunk)?);
    }
    Ok(vectors)
}

fn notes(rows: &[PresetRow], zh4o: bool, session_messages: usize, batch: usize) -> Vec<String> {
    let mut notes = vec![
        "MOOM's extraction score (§5.2): for each human label, the best-matching extracted \
         memory (highest ROUGE-L F for ROUGE-L, highest ROUGE-2 F for ROUGE-2, highest cosine \
         for the embedding) gives the label's numbers; the memory is the prediction and the \
         label the reference, so recall is the share of a label a memory covers. Means are over \
         all labels of all dialogues (MOOM averages over labels), so a dialogue weighs by its \
         label count. MOOM's Table 1 reports ROUGE precision."
            .to_string(),
        "Only derived memories count: active memories of kind summary, persona, chain_node, \
         fact, profile or reflection. Raw turns and exchanges (a verbatim user utterance with \
         its reply) are the dialogue itself, not an extraction."
            .to_string(),
        "The embedding similarity is the cosine of the run's embedder (MOOM uses M3E, a \
         Chinese model, and BERTScore): comparable across presets here, not with MOOM's \
         numbers."
            .to_string(),
        "The score is label-centred: each label takes its best memory, and extra memories are \
         never penalized, so a preset that keeps one derived memory per exchange (scmemory's \
         exchange summaries) is credited for its sheer number; read the scores next to \
         memories per dialogue (MOOM's concern is exactly that growth)."
            .to_string(),
    ];
    let empty: Vec<&str> = rows
        .iter()
        .filter(|r| r.memories_per_dialogue == 0.0)
        .map(|r| r.preset.as_str())
        .collect();
    if !empty.is_empty() {
        notes.push(format!(
            "{} extracted nothing (they keep raw turns only, or nothing derived survived): every \
             score is 0, as expected.",
            empty.join(", ")
        ));
    }
    if zh4o {
        notes.push(format!(
            "ZH-4O has no sessions: each dialogue is one engine user, cut into sessions of \
             {session_messages} messages that end with end_session (so session summaries get \
             made); every message (user and bot) is observed, in writes of {batch}. ROUGE on \
             characters and on jieba words (MOOM scores jieba words)."
        ));
    } else {
        notes.push(format!(
            "LoCoMo: the labels are each conversation's observation facts about both speakers; \
             every turn of both speakers is observed in its own session, in writes of {batch}. \
             ROUGE on words (English)."
        ));
    }
    notes
}

fn render_markdown(report: &Report) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(md, "# mnemos eval extraction: {}\n", d.name);
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} dialogues, {} messages, {} labels ({:.1} per dialogue); {} unlabelled dialogues left out, {} loader defects",
        d.path,
        d.dialogues,
        d.messages,
        d.labels,
        d.labels as f64 / d.dialogues.max(1) as f64,
        d.unlabelled_dialogues_left_out,
        d.defects
    );
    let _ = writeln!(
        md,
        "- engine: store {}, embedder {}{}, memory model {}, writes of {} turns{}",
        report.store,
        report.embedder,
        report
            .embedding_ms_per_text
            .map_or(String::new(), |v| format!(" ({v:.2} ms per text, cached)")),
        report.memory_model,
        report.protocol.batch,
        report
            .protocol
            .session_messages
            .map_or(String::new(), |n| format!(", sessions of {n} messages"))
    );
    for (index, granularity) in report.protocol.granularities.iter().enumerate() {
        let title = match granularity {
            Granularity::Char => "ROUGE on characters",
            Granularity::Word => "ROUGE on words (jieba for Chinese)",
        };
        let _ = writeln!(md, "\n## Extraction, {title} (means over labels)\n");
        md.push_str("| preset | labels | memories / dialogue | ROUGE-L P | ROUGE-L R | ROUGE-L F | ROUGE-2 P | ROUGE-2 R | ROUGE-2 F | embedding | observe p50 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for row in &report.presets {
            let Some(score) = row.scores.get(index) else {
                continue;
            };
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.preset,
                row.labels,
                row.memories_per_dialogue,
                f3(score.rouge_l.precision),
                f3(score.rouge_l.recall),
                f3(score.rouge_l.f),
                f3(score.rouge_2.precision),
                f3(score.rouge_2.recall),
                f3(score.rouge_2.f),
                opt3(row.embedding),
                ms(&row.cost.observe, false)
            );
        }
    }
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | extracted by kind | observe p50 / p95 ms | end-session p50 ms | memories at end (all kinds) | model calls / turn | model tokens / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
    for row in &report.presets {
        let kinds: Vec<String> = row
            .memories_by_kind
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let c = &row.cost;
        let _ = writeln!(
            md,
            "| {} | {} | {} / {} | {} | {:.0} | {:.3} | {:.1} | {} | {:.0} |",
            row.preset,
            if kinds.is_empty() {
                "–".to_string()
            } else {
                kinds.join(", ")
            },
            ms(&c.observe, false),
            ms(&c.observe, true),
            ms(&c.end_session, false),
            c.final_memories,
            c.model_calls_per_turn,
            c.model_tokens_per_turn,
            c.jobs_failed,
            c.wall_seconds
        );
    }
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for row in &report.presets {
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
    use mnemos_core::EmbedError;

    /// Two-dimensional vectors: texts with "cat" point one way, others the other.
    struct Toy;

    impl Embedder for Toy {
        fn id(&self) -> &str {
            "toy"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|t| {
                    if t.contains("cat") {
                        vec![1.0, 0.0]
                    } else {
                        vec![0.0, 1.0]
                    }
                })
                .collect())
        }
    }

    #[test]
    fn dialogues_are_scored_and_averaged_over_labels() {
        let granularities = [Granularity::Char, Granularity::Word];
        let mut means = vec![LabelMean::default(); 2];
        let labels = vec!["Ann has a cat".to_string(), "Ann likes tea".to_string()];
        let (scores, embedding) = score_dialogue(
            &Toy,
            &labels,
            &["Ann has a cat", "the weather"],
            &granularities,
            &mut means,
        )
        .unwrap();
        assert_eq!(scores.len(), 2);
        // Label 0 matches memory 0 exactly; label 1's best is memory 0 again, sharing "ann"
        // (recall 1/3).
        let l = scores[0].rouge_l;
        assert!((l.recall - (1.0 + 1.0 / 3.0) / 2.0).abs() < 1e-9, "{l:?}");
        assert!(
            (l.precision - (1.0 + 1.0 / 4.0) / 2.0).abs() < 1e-9,
            "{l:?}"
        );
        // Cosine: label 0 → 1 (memory 0); label 1 → 1 (memory 1, both "not cat").
        assert_eq!(embedding, Some(1.0));
        // A second dialogue with no predictions scores 0 and weighs by its 1 label.
        let (none, none_embedding) =
            score_dialogue(&Toy, &["Bob".to_string()], &[], &granularities, &mut means).unwrap();
        assert_eq!(none[1].rouge_l, Prf::default());
        assert_eq!(none_embedding, Some(0.0));
        let summary = means[0].summary();
        assert_eq!((summary.dialogues, summary.labels), (2, 3));
        assert!((summary.rouge_l.recall - (1.0 + 1.0 / 3.0) / 3.0).abs() < 1e-9);
        assert!((summary.memories_per_dialogue - 1.0).abs() < 1e-9);
        assert!((summary.embedding.unwrap() - 2.0 / 3.0).abs() < 1e-9);
    }
}
