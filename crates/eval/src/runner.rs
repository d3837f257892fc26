//! Runs one engine (one preset) over a prepared dataset under the streaming protocol and records
//! every ask, every memory-size sample and every latency.
//!
//! Per conversation: items are observed in order (in batches of [`RunOptions::batch`], never
//! across an ask or a session boundary; a session ends when the next item belongs to another
//! one, and the last session ends after the last item); at each [`Ask`] the stream clock is set
//! to the question's time (or the last observed item's) and the engine recalls within the
//! budget. The recalled context is scored three ways:
//!
//! - **Retrieval through provenance.** Context items are ranked by score; an item covers a gold
//!   item when its provenance holds the gold turn (a summary made from the gold turn counts).
//!   Recall@k = share of gold items covered by the first k context items; MRR = 1 / rank of the
//!   first covering item; nDCG@10 uses gain 1 for an item that covers a gold item no earlier
//!   item covered (so a summary of fifty turns cannot score more than one relevant hit).
//! - **Multiple choice** (when the question has choices): the answer model's `choose` over the
//!   context items' texts, compared with the correct key.
//! - **Open answers** (when the question has a text answer): answer-in-context (the normalized
//!   gold answer appears in the context text) and token F1 of the answer model's `answer`.
//!
//! The answer model is separate from the engine's, so a preset's model-call counts are its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mnemos_core::{
    Clock, MemoryModel, MemoryModelExt, Scope, SystemClock, Timestamp, TurnId, UserKey,
};
use mnemos_engine::{Context, Engine, RecallRequest};
use serde::{Deserialize, Serialize};

use crate::metrics::LatencyStats;
use crate::protocol::{Ask, PreparedConversation};
use crate::scoring::{answer_in_context, token_f1};

/// A clock the runner moves along the stream, so "now" is the time of what is being observed
/// or asked, not the wall clock of the run. Before the first `set` it reads the system clock.
#[derive(Debug, Clone, Default)]
pub struct StreamClock {
    millis: Arc<AtomicI64>,
}

impl StreamClock {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&self, time: Timestamp) {
        self.millis.store(time.0, Ordering::SeqCst);
    }
}

impl Clock for StreamClock {
    fn now(&self) -> Timestamp {
        match self.millis.load(Ordering::SeqCst) {
            0 => SystemClock.now(),
            ms => Timestamp(ms),
        }
    }
}

/// How a run asks and scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Token budget of each recalled context.
    pub budget: usize,
    /// Cut-offs of Recall@k (nDCG is always at 10).
    pub ks: Vec<usize>,
    /// Ask the answer model to choose on multiple-choice questions.
    pub choose: bool,
    /// Ask the answer model for an answer on open questions (token F1).
    pub answer: bool,
    /// Turns per `Engine::add` (1 = turn by turn, as a live chat).
    pub batch: usize,
    pub tenant: String,
    pub agent: String,
    /// Memory-size samples per conversation (besides the one at each final ask and the end).
    pub size_samples: usize,
}

impl RunOptions {
    /// The defaults for writes of `batch` turns (at least one) under the configured tenant.
    pub fn writes_of(batch: usize, config: &mnemos_setup::Config) -> Self {
        RunOptions {
            batch: batch.max(1),
            tenant: config.tenant.clone(),
            ..RunOptions::default()
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            budget: 1024,
            ks: vec![1, 5, 10],
            choose: true,
            answer: true,
            batch: 1,
            tenant: "eval".into(),
            agent: "eval".into(),
            size_samples: 8,
        }
    }
}

/// A run that could not go on (an engine or model failure that is not the data's fault).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("engine: {0}")]
    Engine(#[from] mnemos_engine::EngineError),
    #[error("{0}")]
    Core(#[from] mnemos_core::Error),
}

impl RunError {
    /// Whether the caller, not the service, is at fault.
    pub fn class(&self) -> mnemos_core::ErrorClass {
        match self {
            RunError::Engine(e) => e.class(),
            RunError::Core(e) => e.class(),
        }
    }
}

/// One ask and everything measured about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRecord {
    pub preset: String,
    pub conversation: String,
    pub question: String,
    pub question_text: String,
    pub category: String,
    pub final_ask: bool,
    /// The capacity checkpoint this ask was made at (None = the question's own position).
    pub checkpoint: Option<usize>,
    pub items_observed: usize,
    pub history_tokens: usize,
    pub gold: Vec<String>,
    /// Gold labels covered by each context item, in score order (empty = not relevant).
    pub covered: Vec<Vec<String>>,
    /// Recall@k for each of `RunOptions::ks`.
    pub recall_at: Vec<f64>,
    pub reciprocal_rank: f64,
    pub ndcg_at_10: f64,
    /// Some context item came from a gold item.
    pub evidence_in_context: bool,
    pub context_items: usize,
    pub context_tokens: usize,
    pub recall_ms: f64,
    pub notes: Vec<String>,
    /// Multiple choice: the chosen key, the correct key, and whether they match.
    pub chosen: Option<String>,
    pub correct_choice: Option<String>,
    pub choice_correct: Option<bool>,
    /// Open answer: the gold answer, whether it appears in the context, the answer model's
    /// answer and its token F1.
    pub gold_answer: Option<String>,
    pub answer_in_context: Option<bool>,
    pub answer: Option<String>,
    pub answer_f1: Option<f64>,
    /// The answer model failed on this ask (the ask still counts, as wrong).
    pub model_error: Option<String>,
    /// Filled by an LLM judge, when one runs.
    pub judge_correct: Option<bool>,
    pub context_text: String,
}

/// Memory size at one point of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeSample {
    pub preset: String,
    pub conversation: String,
    pub items_observed: usize,
    pub history_tokens: usize,
    pub memories: usize,
    pub forgotten: usize,
    pub bytes: usize,
    pub memory_tokens: usize,
    pub model_calls: u64,
    pub model_tokens: u64,
}

/// Everything one conversation produced.
#[derive(Debug, Default)]
pub struct ConversationRun {
    pub asks: Vec<AskRecord>,
    pub sizes: Vec<SizeSample>,
    /// Per observed turn (a batch's time divided by its turns).
    pub observe: LatencyStats,
    pub end_session: LatencyStats,
    pub recall: LatencyStats,
    /// The answer model's choose / answer calls.
    pub answer_model: LatencyStats,
    pub turns: usize,
    pub jobs_failed: usize,
    pub job_errors: Vec<String>,
    /// The engine's model calls and tokens spent on this conversation.
    pub model_calls: u64,
    /// The part of `model_calls` made while recalling (the rest is the write path's).
    pub recall_model_calls: u64,
    /// Recalls made.
    pub recalls: usize,
    pub model_tokens: u64,
    /// The item label of every turn written, by the id the engine gave it (to map memories'
    /// provenance back to the dataset).
    pub turn_labels: HashMap<TurnId, String>,
    /// What compression did to the user's memory chains, when the preset builds them.
    pub compression: Option<crate::compression::CompressionSample>,
}

/// Runs conversations of a prepared dataset through one engine.
pub struct Runner<'a> {
    pub preset: &'a str,
    pub engine: &'a Engine,
    pub answerer: &'a dyn MemoryModel,
    pub clock: &'a StreamClock,
    pub options: &'a RunOptions,
}

impl Runner<'_> {
    /// Stream `prepared`, answer its asks, and (when `purge`) erase the conversation's user
    /// afterwards so long runs stay bounded.
    pub fn run(
        &self,
        prepared: &PreparedConversation,
        purge: bool,
        progress: &dyn Fn(u64),
    ) -> Result<ConversationRun, RunError> {
        let conversation = &prepared.conversation;
        let user = UserKey::new(self.options.tenant.clone(), conversation.id.clone())?;
        let mut run = ConversationRun::default();
        let before = self.engine.stats(&user, &self.options.agent)?;
        let mut turn_label: HashMap<TurnId, String> = HashMap::new();
        let items = &conversation.items;
        let sample_every = (items.len() / self.options.size_samples.max(1)).max(1);
        let mut observed = 0usize;
        let mut history_tokens = 0usize;
        let mut asks = prepared.asks.iter().peekable();
        let mut last_sample = 0usize;
        loop {
            while let Some(ask) = asks.next_if(|a| a.after_item <= observed) {
                let record = self.ask(prepared, ask, &user, &turn_label, &mut run)?;
                if ask.final_ask {
                    self.sample(
                        &user,
                        conversation.id.as_str(),
                        observed,
                        ask.history_tokens,
                        &mut run,
                    )?;
                }
                run.asks.push(record);
                progress(0);
            }
            if observed >= items.len() {
                break;
            }
            // The next batch stops at an ask, a session boundary or the batch size.
            let stop = asks
                .peek()
                .map_or(items.len(), |a| a.after_item)
                .min(observed + self.options.batch.max(1))
                .min(items.len());
            let session = &items[observed].session;
            let end = (observed..stop)
                .find(|&i| items[i].session != *session)
                .unwrap_or(stop)
                .max(observed + 1);
            let scope = Scope::new(
                self.options.tenant.clone(),
                conversation.id.clone(),
                self.options.agent.clone(),
                session.clone(),
            )?;
            let mut batch = Vec::with_capacity(end - observed);
            for item in &items[observed..end] {
                batch.push(item.new_turn(scope.clone()));
                history_tokens += mnemos_engine::primitives::tokens(&item.text);
            }
            if let Some(time) = items[end - 1].time {
                self.clock.set(time);
            }
            let started = Instant::now();
            let report = self.engine.add(batch)?;
            let per_turn = started.elapsed() / (end - observed) as u32;
            for _ in observed..end {
                run.observe.push(per_turn);
            }
            run.jobs_failed += report.jobs.failed;
            run.job_errors
                .extend(report.jobs.errors.iter().map(|(_, e)| e.clone()));
            for (added, item) in report.turns.iter().zip(&items[observed..end]) {
                turn_label.insert(added.turn_id, item.label.clone());
            }
            run.turns += end - observed;
            progress((end - observed) as u64);
            observed = end;
            let session_ends = items
                .get(observed)
                .is_none_or(|next| next.session != *session);
            if session_ends {
                let started = Instant::now();
                let report = self.engine.end_session(&scope)?;
                run.end_session.push(started.elapsed());
                run.jobs_failed += report.failed;
                run.job_errors
                    .extend(report.errors.iter().map(|(_, e)| e.clone()));
            }
            if observed - last_sample >= sample_every || observed == items.len() {
                last_sample = observed;
                self.sample(&user, &conversation.id, observed, history_tokens, &mut run)?;
            }
        }
        let after = self.engine.stats(&user, &self.options.agent)?;
        run.model_calls = after.model_calls.saturating_sub(before.model_calls);
        run.model_tokens = after.model_tokens.saturating_sub(before.model_tokens);
        run.compression = crate::compression::sample(
            self.engine,
            &user,
            &self.options.agent,
            &conversation.questions,
        )?;
        if purge {
            self.engine.purge(&user)?;
        }
        run.turn_labels = turn_label;
        Ok(run)
    }

    fn sample(
        &self,
        user: &UserKey,
        conversation: &str,
        items_observed: usize,
        history_tokens: usize,
        run: &mut ConversationRun,
    ) -> Result<(), RunError> {
        let stats = self.engine.stats(user, &self.options.agent)?;
        run.sizes.push(SizeSample {
            preset: self.preset.to_string(),
            conversation: conversation.to_string(),
            items_observed,
            history_tokens,
            memories: stats.total_memories,
            forgotten: stats.forgotten,
            bytes: stats.bytes,
            memory_tokens: stats.tokens,
            model_calls: stats.model_calls,
            model_tokens: stats.model_tokens,
        });
        Ok(())
    }

    fn ask(
        &self,
        prepared: &PreparedConversation,
        ask: &Ask,
        user: &UserKey,
        turn_label: &HashMap<TurnId, String>,
        run: &mut ConversationRun,
    ) -> Result<AskRecord, RunError> {
        let conversation = &prepared.conversation;
        let question = &conversation.questions[ask.question];
        let asked_at = question.time.filter(|_| ask.final_ask).or_else(|| {
            ask.after_item
                .checked_sub(1)
                .and_then(|i| conversation.items[i].time)
        });
        if let Some(time) = asked_at {
            self.clock.set(time);
        }
        let request = RecallRequest {
            query: question.text.clone(),
            token_budget: self.options.budget,
            session: None,
            as_of: question.as_of,
            min_relevance: None,
            deadline: mnemos_core::Deadline::NONE,
        };
        let calls_before = self.engine.model().usage().total().calls;
        let started = Instant::now();
        let context = self.engine.recall(user, &self.options.agent, &request)?;
        let elapsed = started.elapsed();
        run.recall.push(elapsed);
        run.recalls += 1;
        run.recall_model_calls += self
            .engine
            .model()
            .usage()
            .total()
            .calls
            .saturating_sub(calls_before);
        let covered = covered_gold(&context, turn_label, &question.gold);
        let scores = provenance_scores(&covered, question.gold.len(), &self.options.ks);
        let memories: Vec<String> = context.items.iter().map(|i| i.text.clone()).collect();
        let mut record = AskRecord {
            preset: self.preset.to_string(),
            conversation: conversation.id.clone(),
            question: question.id.clone(),
            question_text: question.text.clone(),
            category: question.category.clone(),
            final_ask: ask.final_ask,
            checkpoint: ask.checkpoint,
            items_observed: ask.after_item,
            history_tokens: ask.history_tokens,
            gold: question.gold.clone(),
            evidence_in_context: covered.iter().any(|c| !c.is_empty()),
            covered,
            recall_at: scores.recall_at,
            reciprocal_rank: scores.reciprocal_rank,
            ndcg_at_10: scores.ndcg_at_10,
            context_items: context.items.len(),
            context_tokens: context.tokens,
            recall_ms: elapsed.as_secs_f64() * 1000.0,
            notes: context.notes.clone(),
            chosen: None,
            correct_choice: question.correct_choice.clone(),
            choice_correct: None,
            gold_answer: question.answer.clone(),
            answer_in_context: None,
            answer: None,
            answer_f1: None,
            model_error: None,
            judge_correct: None,
            context_text: context.text.clone(),
        };
        if self.options.choose && !question.choices.is_empty() {
            let options: Vec<String> = question.choices.iter().map(|(_, t)| t.clone()).collect();
            let started = Instant::now();
            let chosen = self.answerer.choose(&question.text, &options, &memories);
            run.answer_model.push(started.elapsed());
            match chosen {
                Ok(index) => {
                    let key = question.choices.get(index).map(|(k, _)| k.clone());
                    record.choice_correct = Some(key.is_some() && key == question.correct_choice);
                    record.chosen = key;
                }
                Err(err) => {
                    record.choice_correct = Some(false);
                    record.model_error = Some(err.to_string());
                }
            }
        }
        if let Some(gold) = question.answer.as_deref().filter(|a| !a.trim().is_empty()) {
            record.answer_in_context = Some(answer_in_context(gold, &context.text));
            if self.options.answer && question.choices.is_empty() {
                let started = Instant::now();
                let answer = self.answerer.answer(&question.text, &memories);
                run.answer_model.push(started.elapsed());
                match answer {
                    Ok(answer) => {
                        record.answer_f1 = Some(token_f1(&answer, gold));
                        record.answer = Some(answer);
                    }
                    Err(err) => {
                        record.answer_f1 = Some(0.0);
                        record.model_error = Some(err.to_string());
                    }
                }
            }
        }
        Ok(record)
    }
}

/// For each context item in score order (stable on ties), the gold labels its provenance holds.
pub fn covered_gold(
    context: &Context,
    turn_label: &HashMap<TurnId, String>,
    gold: &[String],
) -> Vec<Vec<String>> {
    let mut order: Vec<usize> = (0..context.items.len()).collect();
    order.sort_by(|&a, &b| {
        context.items[b]
            .score
            .partial_cmp(&context.items[a].score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    order
        .into_iter()
        .map(|i| {
            let mut labels: Vec<String> = context.items[i]
                .provenance
                .iter()
                .filter_map(|t| turn_label.get(t))
                .filter(|label| gold.contains(label))
                .cloned()
                .collect();
            labels.sort();
            labels.dedup();
            labels
        })
        .collect()
}

/// Rank metrics of one ask over context items.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvenanceScores {
    pub recall_at: Vec<f64>,
    pub reciprocal_rank: f64,
    pub ndcg_at_10: f64,
}

/// Recall@k, reciprocal rank and nDCG@10 of items that cover gold labels (see the module doc).
pub fn provenance_scores(covered: &[Vec<String>], gold: usize, ks: &[usize]) -> ProvenanceScores {
    if gold == 0 {
        return ProvenanceScores {
            recall_at: vec![0.0; ks.len()],
            reciprocal_rank: 0.0,
            ndcg_at_10: 0.0,
        };
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut new_at: Vec<usize> = Vec::with_capacity(covered.len());
    for labels in covered {
        let before = seen.len();
        for label in labels {
            if !seen.contains(&label.as_str()) {
                seen.push(label);
            }
        }
        new_at.push(seen.len() - before);
    }
    let recall_at = ks
        .iter()
        .map(|&k| new_at.iter().take(k).sum::<usize>() as f64 / gold as f64)
        .collect();
    let reciprocal_rank = covered
        .iter()
        .position(|c| !c.is_empty())
        .map_or(0.0, |p| 1.0 / (p + 1) as f64);
    let dcg: f64 = new_at
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        // An empty float sum is -0.0; reports should read 0.
        .fold(0.0, |a, b| a + b);
    let ideal: f64 = (0..gold.min(10))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    ProvenanceScores {
        recall_at,
        reciprocal_rank,
        ndcg_at_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(list: &[&[&str]]) -> Vec<Vec<String>> {
        list.iter()
            .map(|l| l.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn provenance_scores_count_each_gold_once() {
        // A summary covering both golds at rank 2.
        let covered = labels(&[&[], &["a", "b"], &["a"]]);
        let s = provenance_scores(&covered, 2, &[1, 5, 10]);
        assert_eq!(s.recall_at, vec![0.0, 1.0, 1.0]);
        assert!((s.reciprocal_rank - 0.5).abs() < 1e-12);
        // One new-coverage gain at rank 2 against an ideal of two hits at ranks 1-2.
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((s.ndcg_at_10 - (1.0 / 3f64.log2()) / ideal).abs() < 1e-12);
        assert!(s.ndcg_at_10 <= 1.0);
    }

    #[test]
    fn provenance_scores_edge_cases() {
        let none = provenance_scores(&labels(&[&[], &[]]), 1, &[1, 10]);
        assert_eq!(none.recall_at, vec![0.0, 0.0]);
        assert_eq!(none.reciprocal_rank, 0.0);
        assert_eq!(none.ndcg_at_10, 0.0);
        let perfect = provenance_scores(&labels(&[&["a"]]), 1, &[1]);
        assert_eq!(perfect.recall_at, vec![1.0]);
        assert!((perfect.ndcg_at_10 - 1.0).abs() < 1e-12);
        let empty = provenance_scores(&[], 0, &[1]);
        assert_eq!(empty.recall_at, vec![0.0]);
    }

    #[test]
    fn stream_clock_reads_what_was_set() {
        let clock = StreamClock::new();
        assert!(clock.now().0 > 1_600_000_000_000);
        clock.set(Timestamp(42));
        assert_eq!(clock.now(), Timestamp(42));
        let shared = clock.clone();
        shared.set(Timestamp(7));
        assert_eq!(clock.now(), Timestamp(7));
    }
}
