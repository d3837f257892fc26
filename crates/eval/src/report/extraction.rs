//! `eval extraction`: MOOM's memory-extraction score (§5.2, Table 1; Appendix G for LoCoMo),
//! presets side by side.
//!
//! Each labelled dialogue (ZH-4O) or conversation (LoCoMo) is streamed through each preset's
//! engine — one engine user per dialogue, every message observed (user and bot) — and then the
//! user's active *derived* memories are the predictions and the human labels the references
//! ([`crate::extraction`] says which memories count). For each label the best-matching memory
//! gives the label's ROUGE-L, ROUGE-2 and embedding similarity
//! ([`crate::extraction_score`]); the numbers are averaged over all labels of all dialogues,
//! as MOOM does.
//!
//! ZH-4O has no sessions: the dialogue is cut into sessions of `session_messages` messages
//! (default 100) and each ends with `end_session`, so presets that summarize per session
//! (MemoryBank) get to summarize. LoCoMo keeps its own sessions. ROUGE is scored on characters
//! and on jieba words for ZH-4O, on words for LoCoMo (English: characters would only be letters).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use mnemos_core::{Embedder, Memory, MemoryFilter};
use mnemos_presets::variants::DefaultPresets::UnlessSwept;
use mnemos_presets::variants::Sweep;
use mnemos_setup::Config;

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::dataset::Conversation;
use crate::error::EvalError;
use crate::experiment::{
    stream_only, ConversationContext, Experiment, PresetOutcome, Progress, ProgressFn,
    SharedEmbedder,
};
use crate::extraction::{cosine, derived_memories, LabelMean};
use crate::protocol::PreparedConversation;
use crate::runner::RunOptions;
use crate::scoring::{best_rouge_l_matches, extraction_score, ExtractionScore, Granularity, Prf};

use super::{write_report, Comparison, Cost, DumpFile, EngineSetup};

mod render;

/// Which labelled dataset a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ExtractionDataset {
    /// A directory is ZH-4O, a file LoCoMo.
    Auto,
    Zh4o,
    Locomo,
}

/// What `eval extraction` scores and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionSettings {
    /// A ZH-4O directory or a LoCoMo file.
    pub path: PathBuf,
    /// The engines side by side, their store, write size and report directory.
    pub compare: Comparison,
    pub dataset: ExtractionDataset,
    /// Score only the first N labelled dialogues.
    pub dialogues: Option<usize>,
    /// ZH-4O: end a session every this many messages (0 = one session).
    pub session_messages: usize,
    /// Every extracted memory and each label's best match, one JSON line per preset and
    /// dialogue, for reading the errors.
    pub dump: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct ExtractionReport {
    pub mnemos: &'static str,
    pub dataset: DatasetInfo,
    pub protocol: Protocol,
    #[serde(flatten)]
    pub engine: EngineSetup,
    pub presets: Vec<PresetRow>,
    pub sweeps: Vec<Sweep>,
    pub notes: Vec<String>,
}

impl ExtractionReport {
    /// The report as markdown tables (report.md without its plots section).
    pub fn markdown(&self) -> String {
        render::markdown(self)
    }
}

#[derive(Debug, Serialize)]
pub struct DatasetInfo {
    pub name: String,
    pub path: String,
    pub dialogues: usize,
    pub messages: usize,
    pub labels: usize,
    pub unlabelled_dialogues_left_out: usize,
    pub defects: usize,
    pub checksums: Vec<InputChecksum>,
}

#[derive(Debug, Serialize)]
pub struct Protocol {
    /// Every message of the dialogue is observed, user and bot.
    pub scenario: &'static str,
    /// ZH-4O only: messages per session.
    pub session_messages: Option<usize>,
    pub batch: usize,
    pub granularities: Vec<Granularity>,
    /// Memory kinds that count as extracted.
    pub derived_kinds: Vec<&'static str>,
    pub averaging: &'static str,
}

/// ROUGE of one granularity.
#[derive(Debug, Clone, Serialize)]
pub struct GranularityScore {
    pub granularity: Granularity,
    pub rouge_l: Prf,
    pub rouge_2: Prf,
}

#[derive(Debug, Serialize)]
pub struct DialogueRecord {
    pub dialogue: String,
    pub messages: usize,
    pub labels: usize,
    pub memories: usize,
    pub scores: Vec<GranularityScore>,
    pub embedding: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct PresetRow {
    pub preset: String,
    pub dialogues: usize,
    pub labels: usize,
    pub memories_per_dialogue: f64,
    /// Extracted memories by kind, over all dialogues.
    pub memories_by_kind: BTreeMap<String, usize>,
    /// Means over all labels, per granularity.
    pub scores: Vec<GranularityScore>,
    /// Mean best cosine per label.
    pub embedding: Option<f64>,
    pub cost: Cost,
    pub per_dialogue: Vec<DialogueRecord>,
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

/// The kinds [`crate::extraction::is_derived`] accepts, for the report.
const DERIVED_KINDS: [&str; 6] = [
    "summary",
    "persona",
    "chain_node",
    "fact",
    "profile",
    "reflection",
];

/// What one dialogue gave one preset.
struct DialogueOutcome {
    record: DialogueRecord,
    /// The dialogue's score per granularity, for the label-weighted means.
    scores: Vec<ExtractionScore>,
    /// The kind of every extracted memory.
    kinds: Vec<String>,
}

/// Run `eval extraction` (see the module docs); with an output directory, write the report
/// there.
pub fn evaluate(
    config: &Config,
    settings: &ExtractionSettings,
    progress: ProgressFn<'_>,
) -> Result<ExtractionReport, EvalError> {
    let (selection, out) = settings.compare.begin(config, UnlessSwept)?;
    let loaded = load(settings)?;
    if loaded.dialogues.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no labelled dialogue to score",
            settings.path.display()
        )));
    }
    let dataset = dataset_info(&loaded, &settings.path)?;
    progress(Progress::Note(&format!(
        "{}: {} dialogues, {} messages, {} labels",
        dataset.name, dataset.dialogues, dataset.messages, dataset.labels
    )));
    let shared = shared_embedder(config, &loaded, progress)?;
    let options = RunOptions::writes_of(settings.compare.batch, config);
    let experiment = Experiment::new(
        config,
        settings.compare.store,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let prepared: Vec<PreparedConversation> = loaded
        .dialogues
        .iter()
        .map(|d| d.prepared.clone())
        .collect();
    let mut dump = DumpFile::open(settings.dump.as_deref())?;
    let outcomes = experiment.run(&selection.engines, &prepared, |context, _| {
        score_conversation(context, &loaded, shared.embedder.as_ref(), dump.as_mut())
    })?;
    if let Some(dump) = dump {
        dump.finish()?;
    }
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let rows: Vec<PresetRow> = outcomes
        .into_iter()
        .map(|o| preset_row(o, &loaded.granularities))
        .collect();
    let zh4o = loaded.name == "zh4o";
    let report = ExtractionReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset,
        protocol: Protocol {
            scenario: "participation",
            session_messages: zh4o.then_some(settings.session_messages),
            batch: options.batch,
            granularities: loaded.granularities.clone(),
            derived_kinds: DERIVED_KINDS.to_vec(),
            averaging: "mean over all labels of all dialogues",
        },
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        notes: notes(&rows, zh4o, settings.session_messages, options.batch),
        presets: rows,
        sweeps: selection.sweeps,
    };
    if let Some(dir) = &out {
        let charts = render::forgetting_charts(&report);
        write_report(dir, &report, &report.markdown(), &charts, progress)?;
    }
    Ok(report)
}

fn dataset_info(loaded: &Loaded, path: &Path) -> Result<DatasetInfo, EvalError> {
    Ok(DatasetInfo {
        name: loaded.name.to_string(),
        path: path.display().to_string(),
        dialogues: loaded.dialogues.len(),
        messages: loaded
            .dialogues
            .iter()
            .map(|d| d.prepared.conversation.items.len())
            .sum(),
        labels: loaded.dialogues.iter().map(|d| d.labels.len()).sum(),
        unlabelled_dialogues_left_out: loaded.unlabelled,
        defects: loaded.defects,
        checksums: checksum_inputs(&[path.to_path_buf()])?,
    })
}

/// The configured embedder behind a cache warmed with every turn and every label.
fn shared_embedder(
    config: &Config,
    loaded: &Loaded,
    progress: ProgressFn<'_>,
) -> Result<SharedEmbedder, EvalError> {
    let items = loaded
        .dialogues
        .iter()
        .flat_map(|d| &d.prepared.conversation.items);
    let labels = loaded
        .dialogues
        .iter()
        .flat_map(|d| d.labels.iter().map(String::as_str));
    SharedEmbedder::warmed_for_turns(config, items, labels, progress)
}

/// One dialogue's extracted memories scored against its labels (and dumped, when asked).
fn score_conversation(
    context: &ConversationContext<'_>,
    loaded: &Loaded,
    embedder: &dyn Embedder,
    dump: Option<&mut DumpFile>,
) -> Result<DialogueOutcome, EvalError> {
    let labels = &loaded.dialogues[context.index].labels;
    let conversation = &context.conversation.conversation;
    let memories = context
        .engine
        .reader()
        .all(context.user, &MemoryFilter::active())?;
    let derived = derived_memories(&memories);
    let predictions: Vec<&str> = derived.iter().map(|m| m.text.as_str()).collect();
    if let Some(dump) = dump {
        dump.write(&dump_line(
            context.preset,
            &conversation.id,
            labels,
            &derived,
        ))?;
    }
    let scores = score_dialogue(embedder, labels, &predictions, &loaded.granularities)?;
    Ok(DialogueOutcome {
        record: DialogueRecord {
            dialogue: conversation.id.clone(),
            messages: conversation.items.len(),
            labels: labels.len(),
            memories: predictions.len(),
            scores: loaded
                .granularities
                .iter()
                .zip(&scores)
                .map(|(granularity, score)| GranularityScore {
                    granularity: *granularity,
                    rouge_l: score.rouge_l,
                    rouge_2: score.rouge_2,
                })
                .collect(),
            embedding: scores.last().and_then(|s| s.embedding),
        },
        scores,
        kinds: derived.iter().map(|m| m.kind.tag().to_string()).collect(),
    })
}

/// One preset's row: label-weighted means over its dialogues, in the order they ran.
fn preset_row(outcome: PresetOutcome<DialogueOutcome>, granularities: &[Granularity]) -> PresetRow {
    let mut means: Vec<LabelMean> = vec![LabelMean::default(); granularities.len()];
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_dialogue = Vec::with_capacity(outcome.conversations.len());
    for dialogue in outcome.conversations {
        for kind in dialogue.kinds {
            *by_kind.entry(kind).or_insert(0) += 1;
        }
        for (mean, score) in means.iter_mut().zip(&dialogue.scores) {
            mean.add(score);
        }
        per_dialogue.push(dialogue.record);
    }
    let summaries: Vec<_> = means.iter().map(LabelMean::summary).collect();
    let first = summaries.first().copied().unwrap_or_default();
    PresetRow {
        preset: outcome.name,
        dialogues: first.dialogues,
        labels: first.labels,
        memories_per_dialogue: first.memories_per_dialogue,
        memories_by_kind: by_kind,
        scores: granularities
            .iter()
            .zip(&summaries)
            .map(|(granularity, s)| GranularityScore {
                granularity: *granularity,
                rouge_l: s.rouge_l,
                rouge_2: s.rouge_2,
            })
            .collect(),
        embedding: first.embedding,
        cost: Cost::of(&outcome.summary),
        per_dialogue,
    }
}

/// One dump line: a dialogue's extracted memories and each label's best match among them.
fn dump_line(
    preset: &str,
    dialogue: &str,
    labels: &[String],
    derived: &[&Memory],
) -> serde_json::Value {
    let texts: Vec<&str> = derived.iter().map(|m| m.text.as_str()).collect();
    let matches = best_rouge_l_matches(labels, &texts, Granularity::Word);
    serde_json::json!({
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
    })
}

fn load(settings: &ExtractionSettings) -> Result<Loaded, EvalError> {
    let limit = settings.dialogues.unwrap_or(usize::MAX);
    let zh4o = match settings.dataset {
        ExtractionDataset::Auto => settings.path.is_dir(),
        ExtractionDataset::Zh4o => true,
        ExtractionDataset::Locomo => false,
    };
    if zh4o {
        load_zh4o(&settings.path, limit, settings.session_messages)
    } else {
        load_locomo(&settings.path, limit)
    }
}

fn load_zh4o(path: &Path, limit: usize, session_messages: usize) -> Result<Loaded, EvalError> {
    let zh4o = crate::load_zh4o(path)?;
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
            prepared: stream_only(d.conversation(&format!("zh4o-{}", d.index), session_messages)),
            labels: d.facts().map(str::to_string).collect(),
        })
        .collect();
    Ok(Loaded {
        name: "zh4o",
        granularities: vec![Granularity::Char, Granularity::Word],
        dialogues,
        defects: zh4o.defects.len(),
        unlabelled,
    })
}

fn load_locomo(path: &Path, limit: usize) -> Result<Loaded, EvalError> {
    let dataset = crate::load_locomo(path)?;
    let observations = crate::load_locomo_observations(path)?;
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

/// Score one dialogue's predictions at every granularity, with the cosine of the embedder's
/// vectors as the similarity.
fn score_dialogue(
    embedder: &dyn Embedder,
    labels: &[String],
    predictions: &[&str],
    granularities: &[Granularity],
) -> Result<Vec<ExtractionScore>, EvalError> {
    let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let label_vectors = embed_all(embedder, &label_refs)?;
    let memory_vectors = embed_all(embedder, predictions)?;
    let similarity = |l: usize, m: usize| cosine(&label_vectors[l], &memory_vectors[m]);
    Ok(granularities
        .iter()
        .map(|granularity| extraction_score(labels, predictions, *granularity, Some(&similarity)))
        .collect())
}

/// Vectors of `texts`, in the embedder's batch size.
pub(crate) fn embed_all(
    embedder: &dyn Embedder,
    texts: &[&str],
) -> Result<Vec<Vec<f32>>, EvalError> {
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(embedder.max_batch().clamp(1, 64)) {
        vectors.extend(embedder.embed_batch(chunk)?);
    }
    Ok(vectors)
}

fn notes(rows: &[PresetRow], zh4o: bool, session_messages: usize, batch: usize) -> Vec<String> {
    let mut notes: Vec<String> = render::FIXED_NOTES.iter().map(|n| n.to_string()).collect();
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
    notes.push(if zh4o {
        format!(
            "ZH-4O has no sessions: each dialogue is one engine user, cut into sessions of \
             {session_messages} messages that end with end_session (so session summaries get \
             made); every message (user and bot) is observed, in writes of {batch}. ROUGE on \
             characters and on jieba words (MOOM scores jieba words)."
        )
    } else {
        format!(
            "LoCoMo: the labels are each conversation's observation facts about both speakers; \
             every turn of both speakers is observed in its own session, in writes of {batch}. \
             ROUGE on words (English)."
        )
    });
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::StoreKind;
    use crate::summary::PresetAccumulator;
    use mnemos_presets::variants::parse_sweep;
    use mnemos_testkit::embedders::Keyword;

    #[test]
    fn dialogues_are_scored_and_averaged_over_labels() {
        let granularities = [Granularity::Char, Granularity::Word];
        let mut means = vec![LabelMean::default(); 2];
        let labels = vec!["Ann has a cat".to_string(), "Ann likes tea".to_string()];
        let scores = score_dialogue(
            &Keyword("cat"),
            &labels,
            &["Ann has a cat", "the weather"],
            &granularities,
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
        assert_eq!(scores[0].embedding, Some(1.0));
        means.iter_mut().zip(&scores).for_each(|(m, s)| m.add(s));
        // A second dialogue with no predictions scores 0 and weighs by its 1 label.
        let none =
            score_dialogue(&Keyword("cat"), &["Bob".to_string()], &[], &granularities).unwrap();
        assert_eq!(none[1].rouge_l, Prf::default());
        assert_eq!(none[1].embedding, Some(0.0));
        means.iter_mut().zip(&none).for_each(|(m, s)| m.add(s));
        let summary = means[0].summary();
        assert_eq!((summary.dialogues, summary.labels), (2, 3));
        assert!((summary.rouge_l.recall - (1.0 + 1.0 / 3.0) / 3.0).abs() < 1e-9);
        assert!((summary.memories_per_dialogue - 1.0).abs() < 1e-9);
        assert!((summary.embedding.unwrap() - 2.0 / 3.0).abs() < 1e-9);
    }

    fn row(preset: &str, memories: f64, f: f64) -> PresetRow {
        let prf = Prf {
            precision: f,
            recall: f,
            f,
        };
        PresetRow {
            preset: preset.into(),
            dialogues: 2,
            labels: 6,
            memories_per_dialogue: memories,
            memories_by_kind: [("summary".to_string(), 3)].into_iter().collect(),
            scores: vec![GranularityScore {
                granularity: Granularity::Word,
                rouge_l: prf,
                rouge_2: prf,
            }],
            embedding: Some(f),
            cost: Cost::of(&PresetAccumulator::default().summarize(preset, 0, 1.0)),
            per_dialogue: Vec::new(),
        }
    }

    fn report() -> ExtractionReport {
        let sweep = parse_sweep("moom.capacity=10,20").unwrap();
        let presets = vec![
            row("full", 0.0, 0.0),
            row("moom", 30.0, 0.5),
            row(&sweep.variant(&sweep.values[0]), 10.0, 0.2),
            row(&sweep.variant(&sweep.values[1]), 20.0, 0.4),
        ];
        ExtractionReport {
            mnemos: "0",
            dataset: DatasetInfo {
                name: "locomo".into(),
                path: "l.json".into(),
                dialogues: 2,
                messages: 40,
                labels: 6,
                unlabelled_dialogues_left_out: 1,
                defects: 0,
                checksums: Vec::new(),
            },
            protocol: Protocol {
                scenario: "participation",
                session_messages: None,
                batch: 20,
                granularities: vec![Granularity::Word],
                derived_kinds: DERIVED_KINDS.to_vec(),
                averaging: "mean over all labels of all dialogues",
            },
            engine: EngineSetup {
                store: StoreKind::Sqlite,
                embedder: "hash".into(),
                embedding_ms_per_text: None,
                memory_model: "offline".into(),
            },
            notes: notes(&presets, false, 100, 20),
            presets,
            sweeps: vec![sweep],
        }
    }

    #[test]
    fn markdown_has_a_table_per_granularity_and_the_notes() {
        let md = report().markdown();
        assert!(md.starts_with("# mnemos eval extraction: locomo\n"), "{md}");
        assert!(md.contains("6 labels (3.0 per dialogue); 1 unlabelled dialogues left out"));
        assert!(md.contains("## Extraction, ROUGE on words (jieba for Chinese)"));
        assert!(
            md.contains("| moom | 6 | 30.0 | 0.500 | 0.500 | 0.500 |"),
            "{md}"
        );
        assert!(md.contains("| moom | summary 3 |"), "{md}");
        assert!(md.contains("- full extracted nothing"), "{md}");
        assert!(md.contains("- LoCoMo: the labels are"), "{md}");
    }

    #[test]
    fn forgetting_charts_draw_each_sweep_and_lone_runs_of_its_preset() {
        let charts = render::forgetting_charts(&report());
        let stems: Vec<&str> = charts.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            stems,
            [
                "forgetting-rouge-l",
                "forgetting-rouge-2",
                "forgetting-cosine"
            ]
        );
        let series = &charts[0].1.series;
        assert_eq!(series[0].name, "moom.capacity");
        assert_eq!(series[0].points, vec![(10.0, 0.2), (20.0, 0.4)]);
        // moom without a capacity is one point beside the curve; full is another preset.
        assert_eq!(series.len(), 2);
        assert_eq!(series[1].points, vec![(30.0, 0.5)]);
    }
}
