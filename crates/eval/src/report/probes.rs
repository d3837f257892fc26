//! `eval probes`: ZH-4O's probe table (MOOM, Appendix), presets side by side.
//!
//! Every probe plants a fact in dialogue [`PROBE_DIALOGUE`] and asks about it much later
//! ([`crate::zh4o`] describes the protocol; [`Zh4oProbe::prepared`] builds the stream). Each
//! probe runs as a fresh engine user: the probed stream is observed in writes of `batch`
//! messages (the protocol's chunks of [`crate::zh4o::PROBE_CHUNK`]) in sessions of `session_messages`, and
//! at each query the preset recalls with the query text within `budget` tokens. Scores:
//!
//! - **hit**: some context item's provenance holds the inserted probe turn (a summary made
//!   from it counts);
//! - **probe in context**: the probe's text appears in the context text (normalized);
//! - **answer similarity**: cosine, under the run's embedder, between the answer model's reply
//!   to the query over the context items and the reference reply. The same model answering
//!   with no memory at all gives the baseline row.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use mnemos_core::{Embedder, MemoryModel, MemoryModelExt};
use mnemos_presets::variants::DefaultPresets::UnlessSwept;

use mnemos_setup::Config;

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::error::EvalError;
use crate::experiment::{Experiment, Progress, ProgressFn, SharedEmbedder};
use crate::extraction::cosine;
use crate::protocol::PreparedConversation;
use crate::runner::{AskRecord, RunOptions};
use crate::scoring::{answer_in_context, token_f1};
use crate::zh4o::{Zh4oDataset, Zh4oProbe, PROBE_ACKNOWLEDGMENTS, PROBE_DIALOGUE};

use super::extraction::embed_all;
use super::{write_report, Comparison, Cost, EngineSetup};

mod render;

/// What `eval probes` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSettings {
    /// The ZH-4O directory.
    pub path: PathBuf,
    /// The engines side by side, their store, write size and report directory.
    pub compare: Comparison,
    /// Run only the first N probes.
    pub probes: Option<usize>,
    /// End a session every this many messages of the probed stream (0 = one session).
    pub session_messages: usize,
    pub budget: usize,
}

#[derive(Debug, Serialize)]
pub struct ProbeReport {
    pub mnemos: &'static str,
    pub dataset: DatasetInfo,
    pub protocol: Protocol,
    #[serde(flatten)]
    pub engine: EngineSetup,
    pub answer_model: String,
    /// The answer model with an empty context.
    pub baseline: Scores,
    pub presets: Vec<PresetRow>,
    pub notes: Vec<String>,
}

impl ProbeReport {
    pub fn markdown(&self) -> String {
        render::markdown(self)
    }
}

#[derive(Debug, Serialize)]
pub struct DatasetInfo {
    pub path: String,
    pub dialogue: usize,
    pub dialogue_messages: usize,
    pub probes: usize,
    pub queries: usize,
    /// Mean messages streamed before a query.
    pub mean_stream_messages: f64,
    pub defects: usize,
    pub checksums: Vec<InputChecksum>,
}

#[derive(Debug, Serialize)]
pub struct Protocol {
    pub batch: usize,
    pub session_messages: usize,
    pub budget: usize,
    pub acknowledgments: [&'static str; 3],
}

/// One query of one probe under one preset.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeRecord {
    pub probe: String,
    pub difficulty: String,
    pub query: String,
    pub reference: String,
    pub answer: Option<String>,
    pub hit: bool,
    pub probe_in_context: bool,
    pub answer_similarity: f64,
    pub answer_f1: Option<f64>,
    pub items_observed: usize,
    pub context_items: usize,
    pub context_tokens: usize,
    pub recall_ms: f64,
    pub model_error: Option<String>,
}

/// Means over a group of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Scores {
    pub queries: usize,
    pub hit_rate: f64,
    pub probe_in_context: f64,
    pub answer_similarity: f64,
    pub answer_f1: f64,
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

#[derive(Debug, Serialize)]
pub struct PresetRow {
    pub preset: String,
    pub overall: Scores,
    pub by_difficulty: BTreeMap<String, Scores>,
    pub cost: Cost,
    pub queries: Vec<ProbeRecord>,
}

/// The probes to run, each with the stream it is asked over.
struct ProbeStreams<'a> {
    probes: Vec<&'a Zh4oProbe>,
    streams: Vec<PreparedConversation>,
}

/// Run `eval probes` (see the module docs); with an output directory, write the report there.
pub fn evaluate(
    config: &Config,
    settings: &ProbeSettings,
    progress: ProgressFn<'_>,
) -> Result<ProbeReport, EvalError> {
    let (selection, out) = settings.compare.begin(config, UnlessSwept)?;
    let dataset = crate::load_zh4o(&settings.path)?;
    let planned = probe_streams(&dataset, settings)?;
    let items: usize = planned
        .streams
        .iter()
        .map(|s| s.conversation.items.len())
        .sum();
    let queries: usize = planned.streams.iter().map(|s| s.asks.len()).sum();
    progress(Progress::Note(&format!(
        "zh4o probes: {} probes, {queries} queries, {items} messages to stream per preset",
        planned.probes.len()
    )));
    let shared = shared_embedder(config, &planned.streams, progress)?;
    let options = RunOptions {
        budget: settings.budget,
        choose: false,
        answer: true,
        ..RunOptions::writes_of(settings.compare.batch, config)
    };
    let experiment = Experiment::new(
        config,
        settings.compare.store,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let embedder = shared.embedder.as_ref();
    let baseline = baseline(experiment.answerer(), embedder, &planned)?;
    let outcomes = experiment.run(&selection.engines, &planned.streams, |context, run| {
        let probe = planned.probes[context.index];
        let stream = &context.conversation.conversation;
        let mut records = Vec::with_capacity(run.asks.len());
        for ask in &mut run.asks {
            let query = stream
                .questions
                .iter()
                .find(|q| q.id == ask.question)
                .map_or_else(String::new, |q| q.text.clone());
            records.push(probe_record(embedder, probe, query, ask)?);
            // Only the scores above need the context text.
            ask.context_text.clear();
        }
        Ok(records)
    })?;
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let presets = outcomes
        .into_iter()
        .map(|o| preset_row(&o.name, o.conversations.concat(), Cost::of(&o.summary)))
        .collect();
    let report = ProbeReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: DatasetInfo {
            path: settings.path.display().to_string(),
            dialogue: PROBE_DIALOGUE,
            dialogue_messages: dataset
                .dialogue(PROBE_DIALOGUE)
                .map_or(0, |d| d.messages.len()),
            probes: planned.probes.len(),
            queries,
            mean_stream_messages: items as f64 / planned.streams.len().max(1) as f64,
            defects: dataset.defects.len(),
            checksums: checksum_inputs(std::slice::from_ref(&settings.path))?,
        },
        protocol: Protocol {
            batch: options.batch,
            session_messages: settings.session_messages,
            budget: settings.budget,
            acknowledgments: PROBE_ACKNOWLEDGMENTS,
        },
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        answer_model: experiment.answerer().id().to_string(),
        baseline,
        presets,
        notes: render::notes(settings),
    };
    if let Some(dir) = &out {
        write_report(dir, &report, &report.markdown(), &[], progress)?;
    }
    Ok(report)
}

/// The probes that name a dialogue (at most `settings.probes`), each with its stream.
fn probe_streams<'a>(
    dataset: &'a Zh4oDataset,
    settings: &ProbeSettings,
) -> Result<ProbeStreams<'a>, EvalError> {
    let path = settings.path.display();
    let Some(dialogue) = dataset.dialogue(PROBE_DIALOGUE) else {
        return Err(EvalError::Invalid(format!(
            "{path}: dialogue {PROBE_DIALOGUE}, which the probes run against, is missing"
        )));
    };
    let probes: Vec<&Zh4oProbe> = dataset
        .probes
        .iter()
        .filter(|p| p.dialogue.is_some())
        .take(settings.probes.unwrap_or(usize::MAX))
        .collect();
    if probes.is_empty() {
        return Err(EvalError::Invalid(format!("{path}: no probe to run")));
    }
    let streams = probes
        .iter()
        .map(|p| p.prepared(dialogue, settings.session_messages))
        .collect();
    Ok(ProbeStreams { probes, streams })
}

/// The configured embedder behind a cache warmed with every turn, query and reference reply.
pub(super) fn shared_embedder(
    config: &Config,
    streams: &[PreparedConversation],
    progress: ProgressFn<'_>,
) -> Result<SharedEmbedder, EvalError> {
    let items = streams.iter().flat_map(|s| &s.conversation.items);
    let asked = streams
        .iter()
        .flat_map(|s| &s.conversation.questions)
        .flat_map(|q| std::iter::once(q.text.as_str()).chain(q.answer.as_deref()));
    SharedEmbedder::warmed_for_turns(config, items, asked, progress)
}

/// Cosine between two texts' vectors under `embedder`.
fn text_similarity(embedder: &dyn Embedder, a: &str, b: &str) -> Result<f64, EvalError> {
    let vectors = embed_all(embedder, &[a, b])?;
    Ok(match vectors.as_slice() {
        [first, second] => cosine(first, second),
        _ => 0.0,
    })
}

/// The scores of one ask: the runner's hit and answer, plus the probe's text in the context
/// and the answer's similarity to the reference.
fn probe_record(
    embedder: &dyn Embedder,
    probe: &Zh4oProbe,
    query: String,
    ask: &AskRecord,
) -> Result<ProbeRecord, EvalError> {
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
    planned: &ProbeStreams<'_>,
) -> Result<Scores, EvalError> {
    let mut records = Vec::new();
    for (probe, stream) in planned.probes.iter().zip(&planned.streams) {
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
                answer_f1: answer.as_deref().map(|a| token_f1(a, &reference)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::StoreKind;
    use crate::report::OutputOptions;
    use crate::summary::PresetAccumulator;
    use crate::{Zh4oInsert, Zh4oQuery};
    use mnemos_presets::variants::SelectionSpec;

    pub(super) fn record(difficulty: &str, hit: bool, similarity: f64) -> ProbeRecord {
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
    fn markdown_has_the_baseline_and_a_row_per_preset_and_difficulty() {
        let cost = Cost::of(&PresetAccumulator::default().summarize("x", 0, 0.0));
        let mut failing = record("easy", false, 0.0);
        failing.model_error = Some("timeout".into());
        let row = preset_row("recent", vec![record("easy", true, 0.5), failing], cost);
        let settings = ProbeSettings {
            path: "zh4o".into(),
            compare: Comparison {
                engines: SelectionSpec::default(),
                store: StoreKind::Memory,
                batch: 20,
                output: OutputOptions::default(),
            },
            probes: None,
            session_messages: 100,
            budget: 1024,
        };
        let report = ProbeReport {
            mnemos: "0",
            dataset: DatasetInfo {
                path: "zh4o".into(),
                dialogue: PROBE_DIALOGUE,
                dialogue_messages: 300,
                probes: 2,
                queries: 2,
                mean_stream_messages: 150.0,
                defects: 0,
                checksums: Vec::new(),
            },
            protocol: Protocol {
                batch: 20,
                session_messages: 100,
                budget: 1024,
                acknowledgments: PROBE_ACKNOWLEDGMENTS,
            },
            engine: EngineSetup {
                store: StoreKind::Memory,
                embedder: "hash".into(),
                embedding_ms_per_text: None,
                memory_model: "offline".into(),
            },
            answer_model: "offline".into(),
            baseline: Scores::of(&[record("easy", false, 0.1)]),
            presets: vec![row],
            notes: render::notes(&settings),
        };
        let md = report.markdown();
        assert!(
            md.contains("| (no memory) | 1 | 0.000 | 0.000 | 0.100 | 0.000 | – | – |"),
            "{md}"
        );
        assert!(
            md.contains("| recent | 2 | 0.500 | 0.500 | 0.250 | 0.000 | – | – |"),
            "{md}"
        );
        assert!(md.contains("| recent | easy | 2 | 0.500 |"), "{md}");
        assert!(
            md.contains("- recent: the answer model failed on 1 query(ies)"),
            "{md}"
        );
        assert!(
            md.contains("written in batches of 20 messages in sessions of 100"),
            "{md}"
        );
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
