//! Aggregates of a run: per preset, overall and per category, quality on the final asks, the
//! capacity curve over checkpoint asks, memory size over the stream, latency and model cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::{LatencyStats, LatencySummary};
use crate::runner::{AskRecord, ConversationRun, SizeSample};

/// Means of the per-ask quality numbers (None where no ask had that kind of question).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    pub asks: usize,
    /// Recall@k for each k of the run.
    pub recall_at: Vec<f64>,
    pub mrr: f64,
    pub ndcg_at_10: f64,
    pub evidence_in_context: f64,
    pub mean_context_tokens: f64,
    pub choice_questions: usize,
    pub choice_accuracy: Option<f64>,
    pub open_questions: usize,
    pub answer_in_context: Option<f64>,
    pub answer_f1: Option<f64>,
    pub judged: usize,
    pub judge_accuracy: Option<f64>,
    pub model_errors: usize,
}

impl Quality {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a AskRecord>, ks: usize) -> Quality {
        let records: Vec<&AskRecord> = records.into_iter().collect();
        let n = records.len();
        let mean = |f: &dyn Fn(&AskRecord) -> f64| -> f64 {
            if n == 0 {
                0.0
            } else {
                records.iter().map(|r| f(r)).sum::<f64>() / n as f64
            }
        };
        let mean_opt = |f: &dyn Fn(&AskRecord) -> Option<f64>| -> (usize, Option<f64>) {
            let values: Vec<f64> = records.iter().filter_map(|r| f(r)).collect();
            let count = values.len();
            let mean = (count > 0).then(|| values.iter().sum::<f64>() / count as f64);
            (count, mean)
        };
        let bool_value = |b: Option<bool>| b.map(|b| if b { 1.0 } else { 0.0 });
        let (choice_questions, choice_accuracy) = mean_opt(&|r| bool_value(r.choice_correct));
        let (open_questions, answer_in_context) = mean_opt(&|r| bool_value(r.answer_in_context));
        let (_, answer_f1) = mean_opt(&|r| r.answer_f1);
        let (judged, judge_accuracy) = mean_opt(&|r| bool_value(r.judge_correct));
        Quality {
            asks: n,
            recall_at: (0..ks)
                .map(|i| mean(&|r| r.recall_at.get(i).copied().unwrap_or(0.0)))
                .collect(),
            mrr: mean(&|r| r.reciprocal_rank),
            ndcg_at_10: mean(&|r| r.ndcg_at_10),
            evidence_in_context: mean(&|r| if r.evidence_in_context { 1.0 } else { 0.0 }),
            mean_context_tokens: mean(&|r| r.context_tokens as f64),
            choice_questions,
            choice_accuracy,
            open_questions,
            answer_in_context,
            answer_f1,
            judged,
            judge_accuracy,
            model_errors: records.iter().filter(|r| r.model_error.is_some()).count(),
        }
    }
}

/// One point of the capacity curve: quality of the asks made at one history size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    /// The checkpoint (tokens of history when asked); `None` = the questions' own positions.
    pub checkpoint: Option<usize>,
    pub mean_history_tokens: f64,
    pub quality: Quality,
}

/// Memory size at one stream position, averaged over conversations that reached it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizePoint {
    /// Fraction of the stream observed (0..=1], bucketed in tenths.
    pub progress: f64,
    pub mean_history_tokens: f64,
    pub mean_memories: f64,
    pub mean_bytes: f64,
    pub mean_memory_tokens: f64,
    pub samples: usize,
}

/// Everything reported about one preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PresetSummary {
    pub preset: String,
    pub conversations: usize,
    pub turns: usize,
    pub overall: Quality,
    pub by_category: BTreeMap<String, Quality>,
    pub capacity: Vec<CapacityPoint>,
    pub sizes: Vec<SizePoint>,
    /// Memories, bytes and tokens at the end of each conversation (means).
    pub final_memories: f64,
    pub final_bytes: f64,
    pub final_memory_tokens: f64,
    pub final_forgotten: f64,
    pub observe: Option<LatencySummary>,
    pub end_session: Option<LatencySummary>,
    pub recall: Option<LatencySummary>,
    pub answer_model: Option<LatencySummary>,
    pub model_calls: u64,
    pub model_tokens: u64,
    pub model_calls_per_turn: f64,
    pub model_tokens_per_turn: f64,
    /// Model calls made while writing (observe, jobs, session ends) per turn, and while
    /// recalling per recall: the first grows with the dialogue, the second with the questions.
    #[serde(default)]
    pub write_model_calls_per_turn: f64,
    #[serde(default)]
    pub model_calls_per_recall: f64,
    pub jobs_failed: usize,
    /// The first few job errors, verbatim.
    pub job_errors: Vec<String>,
    pub wall_seconds: f64,
    /// Summed over conversations, for presets that build memory chains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<crate::compression::CompressionSample>,
}

/// Collects conversation runs of one preset.
#[derive(Debug, Default)]
pub struct PresetAccumulator {
    pub asks: Vec<AskRecord>,
    pub sizes: Vec<SizeSample>,
    observe: LatencyStats,
    end_session: LatencyStats,
    recall: LatencyStats,
    answer_model: LatencyStats,
    turns: usize,
    conversations: usize,
    model_calls: u64,
    model_tokens: u64,
    recall_model_calls: u64,
    recalls: usize,
    jobs_failed: usize,
    job_errors: Vec<String>,
    finals: Vec<SizeSample>,
    compression: Option<crate::compression::CompressionSample>,
}

impl PresetAccumulator {
    pub fn add(&mut self, run: ConversationRun) {
        self.conversations += 1;
        self.turns += run.turns;
        self.model_calls += run.model_calls;
        self.model_tokens += run.model_tokens;
        self.recall_model_calls += run.recall_model_calls;
        self.recalls += run.recalls;
        self.jobs_failed += run.jobs_failed;
        for error in run.job_errors {
            if self.job_errors.len() < 5 {
                self.job_errors.push(error);
            }
        }
        self.observe.extend(&run.observe);
        self.end_session.extend(&run.end_session);
        self.recall.extend(&run.recall);
        self.answer_model.extend(&run.answer_model);
        if let Some(last) = run.sizes.iter().max_by_key(|s| s.items_observed) {
            self.finals.push(last.clone());
        }
        if let Some(sample) = &run.compression {
            self.compression.get_or_insert_default().add(sample);
        }
        self.asks.extend(run.asks);
        self.sizes.extend(run.sizes);
    }

    pub fn summarize(&self, preset: &str, ks: usize, wall_seconds: f64) -> PresetSummary {
        let finals: Vec<&AskRecord> = self.asks.iter().filter(|r| r.final_ask).collect();
        let mut by_category: BTreeMap<String, Vec<&AskRecord>> = BTreeMap::new();
        for record in &finals {
            by_category
                .entry(record.category.clone())
                .or_default()
                .push(record);
        }
        let capacity = capacity_points(&self.asks, ks);
        let mean = |f: &dyn Fn(&SizeSample) -> f64| -> f64 {
            if self.finals.is_empty() {
                0.0
            } else {
                self.finals.iter().map(f).sum::<f64>() / self.finals.len() as f64
            }
        };
        let turns = self.turns.max(1) as f64;
        PresetSummary {
            preset: preset.to_string(),
            conversations: self.conversations,
            turns: self.turns,
            overall: Quality::of(finals.iter().copied(), ks),
            by_category: by_category
                .into_iter()
                .map(|(k, v)| (k, Quality::of(v, ks)))
                .collect(),
            capacity,
            sizes: size_points(&self.sizes),
            final_memories: mean(&|s| s.memories as f64),
            final_bytes: mean(&|s| s.bytes as f64),
            final_memory_tokens: mean(&|s| s.memory_tokens as f64),
            final_forgotten: mean(&|s| s.forgotten as f64),
            observe: self.observe.summary(),
            end_session: self.end_session.summary(),
            recall: self.recall.summary(),
            answer_model: self.answer_model.summary(),
            model_calls: self.model_calls,
            model_tokens: self.model_tokens,
            model_calls_per_turn: self.model_calls as f64 / turns,
            model_tokens_per_turn: self.model_tokens as f64 / turns,
            write_model_calls_per_turn: self.model_calls.saturating_sub(self.recall_model_calls)
                as f64
                / turns,
            model_calls_per_recall: self.recall_model_calls as f64 / self.recalls.max(1) as f64,
            jobs_failed: self.jobs_failed,
            job_errors: self.job_errors.clone(),
            wall_seconds,
            compression: self.compression.clone(),
        }
    }
}

/// Checkpoint asks grouped by the checkpoint they were asked at, plus the final asks.
fn capacity_points(asks: &[AskRecord], ks: usize) -> Vec<CapacityPoint> {
    let mut groups: BTreeMap<Option<usize>, Vec<&AskRecord>> = BTreeMap::new();
    for record in asks {
        let key = if record.final_ask {
            None
        } else {
            record.checkpoint
        };
        groups.entry(key).or_default().push(record);
    }
    groups
        .into_iter()
        .map(|(checkpoint, records)| CapacityPoint {
            checkpoint,
            mean_history_tokens: records.iter().map(|r| r.history_tokens as f64).sum::<f64>()
                / records.len().max(1) as f64,
            quality: Quality::of(records, ks),
        })
        .collect()
}

fn size_points(samples: &[SizeSample]) -> Vec<SizePoint> {
    // Position in the stream as a share of that conversation's length, in tenths.
    let mut length: BTreeMap<&str, usize> = BTreeMap::new();
    for s in samples {
        let entry = length.entry(s.conversation.as_str()).or_insert(0);
        *entry = (*entry).max(s.items_observed);
    }
    let mut buckets: BTreeMap<usize, Vec<&SizeSample>> = BTreeMap::new();
    for s in samples {
        let total = length
            .get(s.conversation.as_str())
            .copied()
            .unwrap_or(1)
            .max(1);
        let tenth = (s.items_observed * 10).div_ceil(total).clamp(1, 10);
        buckets.entry(tenth).or_default().push(s);
    }
    buckets
        .into_iter()
        .map(|(tenth, group)| {
            let n = group.len() as f64;
            let mean = |f: &dyn Fn(&SizeSample) -> f64| group.iter().map(|s| f(s)).sum::<f64>() / n;
            SizePoint {
                progress: tenth as f64 / 10.0,
                mean_history_tokens: mean(&|s| s.history_tokens as f64),
                mean_memories: mean(&|s| s.memories as f64),
                mean_bytes: mean(&|s| s.bytes as f64),
                mean_memory_tokens: mean(&|s| s.memory_tokens as f64),
                samples: group.len(),
            }
        })
        .collect()
}
