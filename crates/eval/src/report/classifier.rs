//! `eval classifier`: classify every PerLTQA question as semantic or episodic with the query
//! classifier (shipped weights, or a weights file) and compare with PerLTQA's memory type
//! (profile + social_relationship = semantic, events + dialogues = episodic). The memory
//! classifier (`classify_memory`, which types memories whose source states no type) is scored
//! the same way on PerLTQA's memory records, whose type the loader states.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use mnemos_offline::classify::{ClassifierWeights, QueryClassifier};
use mnemos_offline::Ctx;
use mnemos_setup::Config;
use mnemos_text::Analyzer;

use crate::dataset::MemoryClass;
use crate::error::EvalError;
use crate::format::{load_retrieval_dataset, Format};
use crate::metrics::{LatencyStats, LatencySummary};

use super::DumpFile;

/// The datasets whose questions carry a memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ClassifierDataset {
    /// PerLTQA: profile and relationships are semantic, events and dialogues episodic.
    Perltqa,
}

impl ClassifierDataset {
    fn format(self) -> Format {
        match self {
            ClassifierDataset::Perltqa => Format::PerLtqa,
        }
    }
}

/// What `eval classifier` measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifierSettings {
    /// The PerLTQA directory (or either of its files).
    pub path: PathBuf,
    pub dataset: ClassifierDataset,
    /// A weights file to evaluate instead of the shipped weights for the embedder.
    pub weights: Option<PathBuf>,
    /// One JSON line per question (text, group, gold, predicted, P(semantic)).
    pub dump: Option<PathBuf>,
}

#[derive(Serialize)]
struct DumpLine<'a> {
    question: &'a str,
    group: &'a str,
    gold: &'static str,
    predicted: &'static str,
    p_semantic: f64,
}

#[derive(Debug, Serialize, Default, Clone, Copy, PartialEq)]
pub struct ClassScores {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub support: usize,
}

#[derive(Debug, Serialize)]
pub struct ClassifierReport {
    pub dataset: String,
    pub path: String,
    pub embedder: String,
    pub classifier: String,
    pub degradation: Option<String>,
    pub questions: usize,
    pub accuracy: f64,
    pub semantic: ClassScores,
    pub episodic: ClassScores,
    pub macro_f1: f64,
    /// confusion[gold][predicted], order semantic, episodic.
    pub confusion: [[usize; 2]; 2],
    /// Correct and total per PerLTQA question group.
    pub by_category: BTreeMap<String, (usize, usize)>,
    pub latency: Option<LatencySummary>,
    /// The offline memory classifier on the dataset's typed memory records.
    pub memories: MemoryClassifierScores,
}

/// The offline memory classifier against the memory types the dataset states.
#[derive(Debug, Serialize, Default)]
pub struct MemoryClassifierScores {
    pub memories: usize,
    pub accuracy: f64,
    /// Correct and total per kind of record (profile, relationship, event, dialogue).
    pub by_kind: BTreeMap<String, (usize, usize)>,
    pub latency: Option<LatencySummary>,
}

/// Classify every typed memory record of `dataset` with the offline memory classifier.
fn score_memories(
    dataset: &crate::dataset::RetrievalDataset,
) -> Result<MemoryClassifierScores, EvalError> {
    let mut scores = MemoryClassifierScores::default();
    let mut latency = LatencyStats::new();
    let mut correct = 0usize;
    for item in dataset.conversations.iter().flat_map(|c| &c.items) {
        let Some(stated) = item
            .metadata
            .get(mnemos_core::MemoryType::METADATA_KEY)
            .and_then(|v| mnemos_core::MemoryType::parse(v).ok())
        else {
            continue;
        };
        let started = Instant::now();
        let class = mnemos_offline::memory_type::classify_memory(&item.text)?;
        latency.push(started.elapsed());
        let right = class.is_semantic() == (stated == mnemos_core::MemoryType::Semantic);
        correct += usize::from(right);
        scores.memories += 1;
        let entry = scores.by_kind.entry(item.session.clone()).or_default();
        entry.0 += usize::from(right);
        entry.1 += 1;
    }
    scores.accuracy = correct as f64 / scores.memories.max(1) as f64;
    scores.latency = latency.summary();
    Ok(scores)
}

fn class_scores(confusion: &[[usize; 2]; 2], class: usize) -> ClassScores {
    let other = 1 - class;
    let tp = confusion[class][class] as f64;
    let fp = confusion[other][class] as f64;
    let fn_ = confusion[class][other] as f64;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let precision = ratio(tp, tp + fp);
    let recall = ratio(tp, tp + fn_);
    ClassScores {
        precision,
        recall,
        f1: ratio(2.0 * precision * recall, precision + recall),
        support: confusion[class][0] + confusion[class][1],
    }
}

/// Counts gathered over the questions.
#[derive(Default)]
struct Tally {
    confusion: [[usize; 2]; 2],
    by_category: BTreeMap<String, (usize, usize)>,
    latency: LatencyStats,
}

fn class_name(index: usize) -> &'static str {
    if index == 0 {
        "semantic"
    } else {
        "episodic"
    }
}

/// Run `eval classifier` (see the module docs).
pub fn evaluate(
    config: &Config,
    settings: &ClassifierSettings,
) -> Result<ClassifierReport, EvalError> {
    let format = settings.dataset.format();
    let dataset = load_retrieval_dataset(&settings.path, format)?;
    let embedder = mnemos_setup::embedder(config)?;
    let classifier = match &settings.weights {
        Some(path) => {
            let json = std::fs::read_to_string(path).map_err(EvalError::io("read", path))?;
            QueryClassifier::from_weights(ClassifierWeights::from_json(&json)?)
        }
        None => QueryClassifier::for_embedder(embedder.id()),
    };
    let ctx = Ctx {
        analyzer: Analyzer::shared(),
        embedder: embedder.as_ref(),
    };
    let mut tally = Tally::default();
    let mut dump = DumpFile::open(settings.dump.as_deref())?;
    for (_, question) in dataset.questions() {
        let Some(gold) = question.memory_type else {
            continue;
        };
        let started = Instant::now();
        let class = classifier.classify(&ctx, &question.text)?;
        tally.latency.push(started.elapsed());
        let gold_index = usize::from(gold == MemoryClass::Episodic);
        let predicted_index = usize::from(!class.is_semantic());
        tally.confusion[gold_index][predicted_index] += 1;
        let entry = tally
            .by_category
            .entry(question.category.clone())
            .or_default();
        entry.0 += usize::from(gold_index == predicted_index);
        entry.1 += 1;
        if let Some(out) = dump.as_mut() {
            out.write(&DumpLine {
                question: &question.text,
                group: &question.category,
                gold: class_name(gold_index),
                predicted: class_name(predicted_index),
                p_semantic: f64::from(class.semantic),
            })?;
        }
    }
    if let Some(dump) = dump {
        dump.finish()?;
    }
    let confusion = tally.confusion;
    let questions: usize = confusion.iter().flatten().sum();
    if questions == 0 {
        return Err(EvalError::Invalid(format!(
            "{} has no questions with a memory type",
            settings.path.display()
        )));
    }
    let semantic = class_scores(&confusion, 0);
    let episodic = class_scores(&confusion, 1);
    Ok(ClassifierReport {
        dataset: format.as_str().to_string(),
        path: settings.path.display().to_string(),
        embedder: embedder.id().to_string(),
        classifier: classifier
            .weights()
            .map_or_else(|| "none".to_string(), |w| w.embedder_id.clone()),
        degradation: classifier.degradation(),
        questions,
        accuracy: (confusion[0][0] + confusion[1][1]) as f64 / questions as f64,
        semantic,
        episodic,
        macro_f1: (semantic.f1 + episodic.f1) / 2.0,
        confusion,
        by_category: tally.by_category,
        latency: tally.latency.summary(),
        memories: score_memories(&dataset)?,
    })
}

impl ClassifierReport {
    /// The report as plain text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} ({}): {} questions; embedder {}, classifier weights {}",
            self.dataset, self.path, self.questions, self.embedder, self.classifier
        );
        if let Some(notice) = &self.degradation {
            let _ = writeln!(out, "note: {notice}");
        }
        let _ = writeln!(
            out,
            "accuracy {:.4}   macro F1 {:.4}",
            self.accuracy, self.macro_f1
        );
        let _ = writeln!(
            out,
            "{:<10} {:>9} {:>7} {:>7} {:>8}",
            "class", "precision", "recall", "F1", "support"
        );
        for (name, s) in [("semantic", self.semantic), ("episodic", self.episodic)] {
            let _ = writeln!(
                out,
                "{name:<10} {:>9.4} {:>7.4} {:>7.4} {:>8}",
                s.precision, s.recall, s.f1, s.support
            );
        }
        let _ = writeln!(out, "confusion (rows gold, columns predicted):");
        let _ = writeln!(out, "{:<10} {:>9} {:>9}", "", "semantic", "episodic");
        for (index, row) in self.confusion.iter().enumerate() {
            let _ = writeln!(out, "{:<10} {:>9} {:>9}", class_name(index), row[0], row[1]);
        }
        let _ = writeln!(out, "accuracy by question group:");
        for (category, (correct, total)) in &self.by_category {
            let _ = writeln!(
                out,
                "  {category:<20} {:.4} ({correct}/{total})",
                *correct as f64 / (*total).max(1) as f64
            );
        }
        if let Some(l) = &self.latency {
            let _ = writeln!(
                out,
                "latency per query: p50 {:.3} ms, p95 {:.3} ms, mean {:.3} ms",
                l.p50_ms, l.p95_ms, l.mean_ms
            );
        }
        let m = &self.memories;
        let _ = writeln!(
            out,
            "\nmemory classifier (offline, classify_memory) on {} typed memory records: accuracy {:.4}",
            m.memories, m.accuracy
        );
        for (kind, (correct, total)) in &m.by_kind {
            let _ = writeln!(
                out,
                "  {kind:<20} {:.4} ({correct}/{total})",
                *correct as f64 / (*total).max(1) as f64
            );
        }
        if let Some(l) = &m.latency {
            let _ = writeln!(out, "latency per memory: p50 {:.3} ms", l.p50_ms);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_scores_from_a_confusion_matrix() {
        // 8 semantic (6 right), 4 episodic (3 right).
        let confusion = [[6, 2], [1, 3]];
        let semantic = class_scores(&confusion, 0);
        assert!((semantic.precision - 6.0 / 7.0).abs() < 1e-12);
        assert!((semantic.recall - 0.75).abs() < 1e-12);
        assert_eq!(semantic.support, 8);
        let episodic = class_scores(&confusion, 1);
        assert!((episodic.precision - 0.6).abs() < 1e-12);
        assert_eq!(episodic.support, 4);
        assert_eq!(class_scores(&[[0, 0], [0, 0]], 0), ClassScores::default());
    }
}
