//! `eval lufy`: LUFY's importance annotations against what mnemos scores and keeps.
//!
//! [`score_auc`]: how well the offline model's arousal, surprise and importance scores rank the
//! user utterances LUFY's annotators marked important. For every user utterance with a
//! majority label (important = marked by at least 2 of the 3 annotators): arousal of the
//! utterance; surprise of the utterance given the session so far, scored after the previous
//! bot turn; importance of the exchange (previous bot turn + the utterance) given the user's
//! previous turns of the session as the past summary. Each score's ROC AUC against the label is
//! computed by rank statistic (ties count one half), with the median latency of one call. None
//! of the three scores uses embeddings, so the model runs over the hash embedder and never
//! loads a neural model.
//!
//! [`agreement`]: importance agreement (LUFY, Table 12). Every session is streamed through each
//! preset's engine (user and bot turns; one engine user per chatbot and LUFY user, one engine
//! session per LUFY session, ended after its last turn), and a user utterance counts as kept
//! when some active memory's provenance holds its turn — raw turns included, since the question
//! is what the system still holds. The score is each annotator's share of important utterances
//! among the kept ones, against the base rate of keeping everything
//! ([`crate::importance_agreement`]). LUFY's Table 12 ([`table12`]) is drawn per session
//! number and overall from what each preset keeps verbatim (its raw-turn memory is active, so
//! a summary covering a turn does not count as keeping it), beside keeping the same share at
//! random and the annotators' pairwise agreement, all computed from the same file.
//!
//! The same run asks every session's questions (the file's 3 per session) after each
//! conversation's last session has closed, so what a preset forgot is gone when it is asked:
//! answer-in-context (the gold answer appears in the recalled context) and token F1 of the
//! memory model's answer. The file names no evidence turns; a question's gold is every user
//! turn of its session, so evidence-in-context only says something of that session came back.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use mnemos_core::memory_model::Line;
use mnemos_core::{Embedder, MemoryFilter, MemoryModel, MemoryModelExt, Role};
use mnemos_presets::variants::DefaultPresets::Every;

use mnemos_setup::{Config, EmbedderChoice};

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::error::EvalError;
use crate::experiment::{
    stream_only, ConversationContext, Experiment, Progress, ProgressFn, SharedEmbedder,
};
use crate::extraction::{kept_raw_turns, kept_turns};
use crate::lufy::{load_lufy, roc_auc, turn_label, LufyDataset, LufySession};
use crate::metrics::{LatencyStats, LatencySummary};
use crate::protocol::{Ask, PreparedConversation};
use crate::runner::{ConversationRun, RunOptions};
use crate::scoring::{importance_agreement, ImportanceAgreement};

use super::{write_report, Comparison, Cost, EngineSetup};

mod render;
pub mod table12;

pub use table12::Table12Row;

/// The offline scores' AUC against LUFY's labels.
#[derive(Debug, Serialize)]
pub struct AucReport {
    pub path: String,
    pub model: String,
    pub sessions: usize,
    pub user_utterances: usize,
    pub labelled: usize,
    pub important: usize,
    pub not_important: usize,
    /// User utterances whose annotations do not decide the majority.
    pub undetermined: usize,
    /// User utterances with blank text or a failed call.
    pub skipped: usize,
    pub defects: usize,
    pub scores: Vec<ScoreRow>,
}

impl AucReport {
    /// The report as a plain-text table.
    pub fn text(&self) -> String {
        render::auc_text(self)
    }
}

#[derive(Debug, Serialize)]
pub struct ScoreRow {
    pub score: &'static str,
    /// ROC AUC against the majority label; 0.5 = chance, below 0.5 = anti-correlated.
    pub auc: Option<f64>,
    /// Median score of important and of other utterances.
    pub median_important: f64,
    pub median_other: f64,
    pub latency: Option<LatencySummary>,
}

/// One score's samples.
#[derive(Default)]
struct ScoreSeries {
    values: Vec<f64>,
    latency: LatencyStats,
}

impl ScoreSeries {
    fn row(&self, score: &'static str, labels: &[bool]) -> ScoreRow {
        let median = |want: bool| {
            let mut picked: Vec<f64> = self
                .values
                .iter()
                .zip(labels)
                .filter(|(_, l)| **l == want)
                .map(|(v, _)| *v)
                .collect();
            picked.sort_by(f64::total_cmp);
            picked.get(picked.len() / 2).copied().unwrap_or(0.0)
        };
        ScoreRow {
            score,
            auc: roc_auc(&self.values, labels),
            median_important: median(true),
            median_other: median(false),
            latency: self.latency.summary(),
        }
    }

    /// Run `f`, recording its duration.
    fn timed<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.latency.push(started.elapsed());
        out
    }
}

/// The three scores of every labelled user utterance, with the counts the report shows.
#[derive(Default)]
struct AucSamples {
    arousal: ScoreSeries,
    surprise: ScoreSeries,
    importance: ScoreSeries,
    labels: Vec<bool>,
    user_utterances: usize,
    undetermined: usize,
    skipped: usize,
}

/// The sessions of the LUFY file at `path`, the first `limit` when given; none is an error.
fn load_sessions(path: &Path, limit: Option<usize>) -> Result<LufyDataset, EvalError> {
    let mut dataset = load_lufy(path)?;
    if let Some(limit) = limit {
        dataset.sessions.truncate(limit);
    }
    if dataset.sessions.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no sessions to evaluate",
            path.display()
        )));
    }
    Ok(dataset)
}

/// The offline scores' ROC AUC (see the module docs), over the first `limit` sessions.
pub fn score_auc(
    path: &Path,
    limit: Option<usize>,
    progress: ProgressFn<'_>,
) -> Result<AucReport, EvalError> {
    let dataset = load_sessions(path, limit)?;
    // The offline model on the hash embedder, whatever the configured ones: the scores are the
    // offline model's, and they must not depend on which model files are present.
    let mut config = Config::default();
    config.set_embedder(EmbedderChoice::Hash)?;
    let embedder = mnemos_setup::embedder(&config)?;
    let (model, _) = mnemos_setup::memory_model(&config, &embedder)?;
    let mut samples = AucSamples::default();
    for session in &dataset.sessions {
        score_session(model.as_ref(), session, &mut samples, progress);
    }
    for defect in dataset.defects.iter().take(10) {
        progress(Progress::Note(&format!("defect: {defect}")));
    }
    let labels = &samples.labels;
    let important = labels.iter().filter(|l| **l).count();
    Ok(AucReport {
        path: path.display().to_string(),
        model: format!("{} (embedder {})", model.id(), embedder.id()),
        sessions: dataset.sessions.len(),
        user_utterances: samples.user_utterances,
        labelled: labels.len(),
        important,
        not_important: labels.len() - important,
        undetermined: samples.undetermined,
        skipped: samples.skipped,
        defects: dataset.defects.len(),
        scores: vec![
            samples.arousal.row("arousal", labels),
            samples.surprise.row("surprise", labels),
            samples.importance.row("importance", labels),
        ],
    })
}

/// Score every labelled user utterance of one session, in order.
fn score_session(
    model: &dyn MemoryModel,
    session: &LufySession,
    samples: &mut AucSamples,
    progress: ProgressFn<'_>,
) {
    let mut context: Vec<Line> = Vec::new();
    let mut past_user: Vec<&str> = Vec::new();
    let mut previous_bot: Option<Line> = None;
    for turn in &session.turns {
        let line = Line::new(turn.role, Some(&turn.speaker), turn.utterance.clone());
        if turn.role != Role::User {
            previous_bot = Some(line.clone());
            context.push(line);
            continue;
        }
        samples.user_utterances += 1;
        match session.label(turn) {
            None => samples.undetermined += 1,
            Some(_) if turn.utterance.trim().is_empty() => samples.skipped += 1,
            Some(label) => {
                let text = turn.utterance.as_str();
                let past_summary = past_user.join("\n");
                let mut exchange: Vec<Line> = previous_bot.iter().cloned().collect();
                exchange.push(line.clone());
                let a = samples.arousal.timed(|| model.arousal(text));
                let s = samples.surprise.timed(|| model.surprise(&context, text));
                let i = samples
                    .importance
                    .timed(|| model.rate_importance(&past_summary, &exchange));
                match (a, s, i) {
                    (Ok(a), Ok(s), Ok(i)) => {
                        samples.arousal.values.push(f64::from(a));
                        samples.surprise.values.push(f64::from(s));
                        samples.importance.values.push(f64::from(i));
                        samples.labels.push(label);
                    }
                    (a, s, i) => {
                        samples.skipped += 1;
                        for error in [a.err(), s.err(), i.err()].into_iter().flatten() {
                            let note = format!("{} turn {}: {error}", session.id(), turn.idx);
                            progress(Progress::Note(&note));
                        }
                    }
                }
            }
        }
        past_user.push(turn.utterance.as_str());
        context.push(line);
    }
}

/// What `eval lufy --presets` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementSettings {
    /// The LUFY sessions file.
    pub path: PathBuf,
    /// The engines side by side, their store, write size and report directory.
    pub compare: Comparison,
    /// Only the first N sessions.
    pub limit: Option<usize>,
    /// Share of each session the random row keeps (the lufy preset's 10%).
    pub random_share: f64,
}

/// One preset's importance agreement.
#[derive(Debug, Serialize)]
pub struct AgreementRow {
    pub preset: String,
    pub agreement: ImportanceAgreement,
    /// Share of the streamed user utterances that were kept.
    pub kept_share: f64,
    /// The same with only turns kept verbatim (their raw-turn memory is active).
    pub verbatim: ImportanceAgreement,
    pub verbatim_share: f64,
    /// Mean minus the base rate's mean.
    pub mean_over_base: f64,
    /// LUFY Table 12 from the verbatim keeps.
    pub table12: Table12Row,
    /// The session questions, asked after the conversation.
    pub qa: QaCells,
    pub cost: Cost,
}

/// How a preset's recalled contexts answer LUFY's questions.
#[derive(Debug, Clone, Serialize)]
pub struct QaCells {
    pub asks: usize,
    pub answer_in_context: Option<f64>,
    /// Token F1 of the memory model's answer from the context.
    pub answer_f1: Option<f64>,
    pub evidence_in_context: f64,
    pub mean_context_tokens: f64,
}

impl QaCells {
    fn of(quality: &crate::summary::Quality) -> Self {
        QaCells {
            asks: quality.asks,
            answer_in_context: quality.answer_in_context,
            answer_f1: quality.answer_f1,
            evidence_in_context: quality.evidence_in_context,
            mean_context_tokens: quality.mean_context_tokens,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AgreementReport {
    pub mnemos: &'static str,
    pub path: String,
    pub sessions: usize,
    pub conversations: usize,
    pub user_utterances: usize,
    /// User utterances with text (the ones written to the engine).
    pub streamed_user_utterances: usize,
    pub defects: usize,
    pub batch: usize,
    #[serde(flatten)]
    pub engine: EngineSetup,
    /// Keeping every user utterance.
    pub base: ImportanceAgreement,
    pub presets: Vec<AgreementRow>,
    /// The columns of the Table 12 rows.
    pub session_numbers: Vec<u64>,
    /// Keeping `random_share` of each session at random, and the annotators among themselves.
    pub random: Table12Row,
    pub annotators: Table12Row,
    pub questions: usize,
    pub notes: Vec<String>,
    pub checksums: Vec<InputChecksum>,
}

impl AgreementReport {
    pub fn markdown(&self) -> String {
        render::agreement_markdown(self)
    }
}

/// The item labels of the user utterances a preset kept in one conversation.
#[derive(Default)]
struct KeptLabels {
    /// Named in some active memory's provenance.
    kept: Vec<String>,
    /// Held by their own raw-turn memory.
    verbatim: Vec<String>,
}

/// Importance agreement of each preset (see the module docs); with an output directory,
/// write the report there.
pub fn agreement(
    config: &Config,
    settings: &AgreementSettings,
    progress: ProgressFn<'_>,
) -> Result<AgreementReport, EvalError> {
    let (selection, out) = settings.compare.begin(config, Every)?;
    let dataset = load_sessions(&settings.path, settings.limit)?;
    if !(settings.random_share > 0.0 && settings.random_share <= 1.0) {
        return Err(EvalError::Invalid(format!(
            "random share {}: expected 0 < x <= 1",
            settings.random_share
        )));
    }
    let conversations = dataset.conversations_with_questions();
    let questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let turns: usize = conversations.iter().map(|c| c.items.len()).sum();
    let user_utterances = dataset
        .sessions
        .iter()
        .flat_map(|s| &s.turns)
        .filter(|t| t.role == Role::User)
        .count();
    let streamed = conversations
        .iter()
        .flat_map(|c| &c.items)
        .filter(|i| i.role == Role::User)
        .count();
    progress(Progress::Note(&format!(
        "LUFY: {} sessions as {} conversations, {turns} turns ({streamed} user)",
        dataset.sessions.len(),
        conversations.len()
    )));
    let items = conversations.iter().flat_map(|c| &c.items);
    let shared = SharedEmbedder::warmed_for_turns(config, items, [], progress)?;
    let options = RunOptions::writes_of(settings.compare.batch, config);
    let experiment = Experiment::new(
        config,
        settings.compare.store,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let prepared: Vec<_> = conversations.into_iter().map(asked_at_the_end).collect();
    let base = importance_agreement(&dataset, |_, _| true);
    let outcomes = experiment.run(&selection.engines, &prepared, kept_labels)?;
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let presets = outcomes
        .into_iter()
        .map(|o| {
            agreement_row(
                &dataset,
                &base,
                streamed,
                &o.name,
                o.conversations,
                &o.summary,
            )
        })
        .collect();
    let report = AgreementReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        path: settings.path.display().to_string(),
        sessions: dataset.sessions.len(),
        conversations: prepared.len(),
        user_utterances,
        streamed_user_utterances: streamed,
        defects: dataset.defects.len(),
        batch: options.batch,
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        base,
        presets,
        session_numbers: table12::session_numbers(&dataset),
        random: table12::random_row(&dataset, settings.random_share),
        annotators: table12::annotators_row(&dataset),
        questions,
        notes: render::agreement_notes(options.batch),
        checksums: checksum_inputs(std::slice::from_ref(&settings.path))?,
    };
    if let Some(dir) = &out {
        write_report(dir, &report, &report.markdown(), &[], progress)?;
    }
    Ok(report)
}

/// A conversation whose questions are all asked once, after its last item (so after its last
/// session has closed).
fn asked_at_the_end(conversation: crate::dataset::Conversation) -> PreparedConversation {
    let mut prepared = stream_only(conversation.clone());
    let end = conversation.items.len();
    prepared.asks = (0..conversation.questions.len())
        .map(|question| Ask {
            question,
            after_item: end,
            history_tokens: prepared.tokens,
            final_ask: true,
            checkpoint: None,
        })
        .collect();
    prepared.conversation = conversation;
    prepared
}

/// The labels of the streamed turns the preset still holds, after one conversation.
fn kept_labels(
    context: &ConversationContext<'_>,
    run: &mut ConversationRun,
) -> Result<KeptLabels, EvalError> {
    let memories = context
        .engine
        .reader()
        .all(context.user, &MemoryFilter::active())?;
    let kept = kept_turns(&memories);
    let verbatim = kept_raw_turns(&memories);
    let mut labels = KeptLabels::default();
    for (turn, label) in std::mem::take(&mut run.turn_labels) {
        if verbatim.contains(&turn) {
            labels.verbatim.push(label.clone());
        }
        if kept.contains(&turn) {
            labels.kept.push(label);
        }
    }
    Ok(labels)
}

fn agreement_row(
    dataset: &LufyDataset,
    base: &ImportanceAgreement,
    streamed: usize,
    name: &str,
    conversations: Vec<KeptLabels>,
    summary: &crate::summary::PresetSummary,
) -> AgreementRow {
    let mut kept: HashSet<String> = HashSet::new();
    let mut verbatim: HashSet<String> = HashSet::new();
    for labels in conversations {
        kept.extend(labels.kept);
        verbatim.extend(labels.verbatim);
    }
    let agreement = importance_agreement(dataset, |session, turn| {
        kept.contains(&turn_label(session, turn))
    });
    let verbatim_labels = verbatim;
    let verbatim = importance_agreement(dataset, |session, turn| {
        verbatim_labels.contains(&turn_label(session, turn))
    });
    let table12 = table12::row_of(dataset, name, |session, turn| {
        verbatim_labels.contains(&turn_label(session, turn))
    });
    let streamed = streamed.max(1) as f64;
    AgreementRow {
        preset: name.to_string(),
        kept_share: agreement.kept as f64 / streamed,
        mean_over_base: agreement.mean - base.mean,
        agreement,
        verbatim_share: verbatim.kept as f64 / streamed,
        verbatim,
        table12,
        qa: QaCells::of(&summary.overall),
        cost: Cost::of(summary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::StoreKind;
    use crate::summary::PresetAccumulator;

    fn row(name: &str, sessions: Vec<Option<f64>>, overall: f64) -> Table12Row {
        Table12Row {
            row: name.into(),
            sessions,
            overall,
        }
    }

    fn agreement(kept: usize, a: f64, b: f64) -> ImportanceAgreement {
        ImportanceAgreement {
            kept,
            per_annotator: [("a1".to_string(), a), ("a2".to_string(), b)]
                .into_iter()
                .collect(),
            mean: (a + b) / 2.0,
        }
    }

    #[test]
    fn agreement_markdown_has_both_tables_against_the_base_rate() {
        let base = agreement(10, 0.2, 0.4);
        let report = AgreementReport {
            mnemos: "0",
            path: "lufy.json".into(),
            sessions: 3,
            conversations: 2,
            user_utterances: 12,
            streamed_user_utterances: 10,
            defects: 0,
            batch: 20,
            engine: EngineSetup {
                store: StoreKind::Memory,
                embedder: "hash".into(),
                embedding_ms_per_text: None,
                memory_model: "offline".into(),
            },
            presets: vec![AgreementRow {
                preset: "full".into(),
                agreement: agreement(5, 0.4, 0.4),
                kept_share: 0.5,
                verbatim: agreement(4, 0.25, 0.25),
                verbatim_share: 0.4,
                mean_over_base: 0.1,
                table12: row("full", vec![Some(0.25), None], 0.25),
                qa: QaCells {
                    asks: 6,
                    answer_in_context: Some(0.5),
                    answer_f1: Some(0.125),
                    evidence_in_context: 1.0,
                    mean_context_tokens: 300.0,
                },
                cost: Cost::of(&PresetAccumulator::default().summarize("full", 0, 1.0)),
            }],
            base,
            session_numbers: vec![1, 2],
            random: row("(random 10%)", vec![Some(0.2), Some(0.1)], 0.15),
            annotators: row("(annotators)", vec![Some(0.3), Some(0.2)], 0.25),
            questions: 6,
            notes: render::agreement_notes(20),
            checksums: Vec::new(),
        };
        let md = report.markdown();
        assert!(md.contains("| preset | kept utterances | kept share | a1 | a2 | mean |"));
        assert!(
            md.contains("|---|---|---|---|---|---|---|---|---|\n"),
            "{md}"
        );
        assert!(md.contains("| (keep everything) | 10 | 1.000 | 0.200 | 0.400 | 0.300 |"));
        assert!(
            md.contains("| full | 5 | 0.500 | 0.400 | 0.400 | 0.400 | +0.100 |"),
            "{md}"
        );
        assert!(
            md.contains("| full | 4 | 0.400 | 0.250 | 0.250 | 0.250 | -0.050 |"),
            "{md}"
        );
        assert!(md.contains("| row | S1 | S2 | overall |"), "{md}");
        assert!(md.contains("| full | 0.250 | – | 0.250 |"), "{md}");
        assert!(
            md.contains("| (random 10%) | 0.200 | 0.100 | 0.150 |"),
            "{md}"
        );
        assert!(
            md.contains("| (annotators) | 0.300 | 0.200 | 0.250 |"),
            "{md}"
        );
        assert!(
            md.contains("| full | 6 | 0.500 | 0.125 | 1.000 | 300 |"),
            "{md}"
        );
    }

    #[test]
    fn auc_text_lists_each_score() {
        let report = AucReport {
            path: "lufy.json".into(),
            model: "offline".into(),
            sessions: 1,
            user_utterances: 3,
            labelled: 2,
            important: 1,
            not_important: 1,
            undetermined: 1,
            skipped: 0,
            defects: 0,
            scores: vec![ScoreRow {
                score: "arousal",
                auc: Some(0.75),
                median_important: 0.5,
                median_other: 0.25,
                latency: None,
            }],
        };
        let text = report.text();
        assert!(text.contains("2 labelled (1 important by >=2 of 3, 1 not)"));
        assert!(text.contains("model: offline\n\n"));
        assert!(text.contains("arousal       0.750"), "{text}");
    }
}
