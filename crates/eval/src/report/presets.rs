//! `eval presets`: presets side by side on one dataset conversation, streamed turn by turn as
//! a live chat would (through the same runner as `eval run`, on the dataset's own clock), with
//! every question asked once the whole conversation is in. Reports observe / end-of-session /
//! recall latency, memory size at the end, model calls and how often the recalled context
//! holds the gold evidence.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use mnemos_presets::variants::{DefaultPresets, SelectionSpec};
use mnemos_setup::Config;

use crate::dataset::Conversation;
use crate::error::EvalError;
use crate::experiment::{Experiment, ProgressFn, SharedEmbedder, StoreKind};
use crate::format::{load_retrieval_dataset, QuestionDataset};
use crate::metrics::LatencySummary;
use crate::protocol::{Ask, PreparedConversation};
use crate::runner::RunOptions;

/// What `eval presets` runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PresetsSettings {
    /// The dataset file (LoCoMo, MemDaily or PerLTQA).
    pub path: PathBuf,
    pub dataset: QuestionDataset,
    /// Which conversation of the dataset (0-based index).
    pub conversation: usize,
    /// The engines side by side (every preset when no list is given).
    pub engines: SelectionSpec,
    pub budget: usize,
    /// Ask at most this many of the conversation's questions.
    pub questions: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct PresetRow {
    pub preset: String,
    pub turns: usize,
    pub questions: usize,
    pub observe: Option<LatencySummary>,
    pub end_session: Option<LatencySummary>,
    pub recall: Option<LatencySummary>,
    pub memories: usize,
    pub forgotten: usize,
    pub memories_by_kind: BTreeMap<String, usize>,
    pub memory_tokens: usize,
    pub mean_context_tokens: f64,
    /// Share of questions whose recalled context came (by provenance) from a gold turn.
    pub evidence_hit: f64,
    pub model_calls: u64,
    pub jobs_failed: usize,
}

#[derive(Debug, Serialize)]
pub struct PresetsReport {
    pub dataset: String,
    pub conversation: String,
    pub turns: usize,
    pub embedder: String,
    pub model: String,
    pub budget: usize,
    pub rows: Vec<PresetRow>,
}

/// Run `eval presets` (see the module docs).
pub fn evaluate(
    config: &Config,
    settings: &PresetsSettings,
    progress: ProgressFn<'_>,
) -> Result<PresetsReport, EvalError> {
    let format = settings.dataset.resolve(&settings.path)?;
    let selection = settings
        .engines
        .expand(&config.engine, DefaultPresets::Every)?;
    let mut dataset = load_retrieval_dataset(&settings.path, format)?;
    let count = dataset.conversations.len();
    if settings.conversation >= count {
        return Err(EvalError::Invalid(format!(
            "conversation {} does not exist ({} has {count})",
            settings.conversation,
            settings.path.display()
        )));
    }
    let conversation = dataset.conversations.swap_remove(settings.conversation);
    let prepared = asked_at_the_end(conversation, settings.questions);
    let options = RunOptions {
        budget: settings.budget,
        choose: false,
        answer: false,
        ..RunOptions::writes_of(1, config)
    };
    // Embedding stays in the latencies, as in a live chat.
    let shared = SharedEmbedder::uncached(config)?;
    let experiment = Experiment::new(
        config,
        StoreKind::Sqlite,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let agent = options.agent.as_str();
    let outcomes = experiment.run(
        &selection.engines,
        std::slice::from_ref(&prepared),
        |context, _| Ok(context.engine.stats(context.user, agent)?),
    )?;
    let model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let rows = outcomes
        .into_iter()
        .filter_map(|o| {
            let stats = o.conversations.into_iter().next()?;
            let s = o.summary;
            Some(PresetRow {
                preset: o.name,
                turns: s.turns,
                questions: s.overall.asks,
                observe: s.observe,
                end_session: s.end_session,
                recall: s.recall,
                memories: stats.total_memories,
                forgotten: stats.forgotten,
                memories_by_kind: stats.memories,
                memory_tokens: stats.tokens,
                mean_context_tokens: s.overall.mean_context_tokens,
                evidence_hit: s.overall.evidence_in_context,
                model_calls: stats.model_calls,
                jobs_failed: s.jobs_failed,
            })
        })
        .collect();
    Ok(PresetsReport {
        dataset: dataset.name,
        conversation: prepared.conversation.id.clone(),
        turns: prepared.conversation.items.len(),
        embedder: shared.embedder.id().to_string(),
        model,
        budget: settings.budget,
        rows,
    })
}

/// The conversation with its first `limit` questions, every one asked after the last item.
fn asked_at_the_end(conversation: Conversation, limit: Option<usize>) -> PreparedConversation {
    let mut conversation = conversation;
    conversation.questions.truncate(limit.unwrap_or(usize::MAX));
    let items = conversation.items.len();
    let tokens = conversation
        .items
        .iter()
        .map(|i| mnemos_engine::primitives::tokens(&i.text))
        .sum();
    let asks = (0..conversation.questions.len())
        .map(|question| Ask {
            question,
            after_item: items,
            history_tokens: tokens,
            final_ask: true,
            checkpoint: None,
        })
        .collect();
    PreparedConversation {
        conversation,
        asks,
        real_items: items,
        noise_items: 0,
        tokens,
        contaminated: Vec::new(),
    }
}

fn ms(summary: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64) -> String {
    summary
        .as_ref()
        .map_or_else(|| "-".to_string(), |s| format!("{:.2}", pick(s)))
}

impl PresetsReport {
    /// The report as a plain-text table.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let questions = self.rows.first().map_or(0, |r| r.questions);
        let _ = writeln!(
            out,
            "{} conversation {} ({} turns, {questions} questions); embedder {}, model {}, budget {} tokens",
            self.dataset, self.conversation, self.turns, self.embedder, self.model, self.budget
        );
        let _ = writeln!(
            out,
            "{:<11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "preset",
            "obs p50ms",
            "obs p95ms",
            "end p50ms",
            "rec p50ms",
            "rec p95ms",
            "memories",
            "forgot",
            "ctx tok",
            "evidence",
            "calls"
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{:<11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9.0} {:>9.3} {:>7}",
                row.preset,
                ms(&row.observe, |s| s.p50_ms),
                ms(&row.observe, |s| s.p95_ms),
                ms(&row.end_session, |s| s.p50_ms),
                ms(&row.recall, |s| s.p50_ms),
                ms(&row.recall, |s| s.p95_ms),
                row.memories,
                row.forgotten,
                row.mean_context_tokens,
                row.evidence_hit,
                row.model_calls
            );
            if row.jobs_failed > 0 {
                let _ = writeln!(
                    out,
                    "  {}: {} derived job(s) failed",
                    row.preset, row.jobs_failed
                );
            }
        }
        let _ = writeln!(out, "memories at the end, by kind:");
        for row in &self.rows {
            let kinds: Vec<String> = row
                .memories_by_kind
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(out, "  {:<11} {}", row.preset, kinds.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Item, Question};

    #[test]
    fn every_question_is_asked_after_the_last_item() {
        let item = |label: &str| Item {
            label: label.into(),
            role: mnemos_core::Role::User,
            speaker: None,
            text: "a few words here".into(),
            time: None,
            session: "s".into(),
            metadata: Default::default(),
        };
        let question = |id: &str| Question {
            id: id.into(),
            text: "what?".into(),
            answer: None,
            gold: vec!["a".into()],
            category: "c".into(),
            memory_type: None,
            after_item: 1,
            time: None,
            choices: Vec::new(),
            correct_choice: None,
            as_of: None,
            metadata: Default::default(),
        };
        let conversation = Conversation {
            id: "c".into(),
            items: vec![item("a"), item("b")],
            questions: vec![question("q1"), question("q2"), question("q3")],
        };
        let prepared = asked_at_the_end(conversation, Some(2));
        assert_eq!(prepared.conversation.questions.len(), 2);
        assert_eq!(prepared.asks.len(), 2);
        assert!(prepared
            .asks
            .iter()
            .all(|a| a.after_item == 2 && a.final_ask));
        assert_eq!(prepared.asks[1].question, 1);
    }
}
