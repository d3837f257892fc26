//! `mnemos eval classifier`: classify every PerLTQA question as semantic or episodic with the
//! query classifier (shipped weights, or a weights file) and compare with PerLTQA's memory type
//! (profile + social_relationship = semantic, events + dialogues = episodic).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use mnemos_eval::dataset::MemoryClass;
use mnemos_eval::format::{load_retrieval_dataset, Format};
use mnemos_eval::metrics::{LatencyStats, LatencySummary};
use mnemos_offline::classify::{ClassifierWeights, QueryClassifier};
use mnemos_offline::Ctx;
use mnemos_text::Analyzer;

use mnemos_engine::Config;

#[derive(Args)]
pub struct EvalClassifierArgs {
    /// The dataset format (only perltqa carries memory types).
    #[arg(long, default_value = "perltqa")]
    dataset: String,
    /// The PerLTQA directory (or either of its files).
    path: PathBuf,
    /// A weights file to evaluate instead of the shipped weights for the embedder.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write one JSON line per question (text, group, gold, predicted, P(semantic)) to FILE,
    /// for error analysis.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
}

#[derive(Serialize)]
struct DumpLine<'a> {
    question: &'a str,
    group: &'a str,
    gold: &'static str,
    predicted: &'static str,
    p_semantic: f64,
}

#[derive(Serialize, Default, Clone, Copy)]
struct ClassScores {
    precision: f64,
    recall: f64,
    f1: f64,
    support: usize,
}

#[derive(Serialize)]
struct ClassifierReport {
    dataset: String,
    path: String,
    embedder: String,
    classifier: String,
    degradation: Option<String>,
    questions: usize,
    accuracy: f64,
    semantic: ClassScores,
    episodic: ClassScores,
    macro_f1: f64,
    /// confusion[gold][predicted], order semantic, episodic.
    confusion: [[usize; 2]; 2],
    /// Accuracy per PerLTQA question group.
    by_category: BTreeMap<String, (usize, usize)>,
    latency: Option<LatencySummary>,
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

pub fn run(config: &Config, args: EvalClassifierArgs) -> Result<()> {
    let format: Format = args.dataset.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    if format != Format::PerLtqa {
        bail!("--dataset must be perltqa (the only dataset with memory-type labels)");
    }
    let dataset = load_retrieval_dataset(&args.path, format)?;
    let embedder = mnemos_engine::setup::embedder(config)?;
    let classifier = match &args.weights {
        Some(path) => {
            let json = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            QueryClassifier::from_weights(ClassifierWeights::from_json(&json)?)
        }
        None => QueryClassifier::for_embedder(embedder.id()),
    };
    let ctx = Ctx {
        analyzer: Analyzer::shared(),
        embedder: embedder.as_ref(),
    };
    let mut confusion = [[0usize; 2]; 2];
    let mut by_category: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut latency = LatencyStats::new();
    let mut dump = match &args.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    for (_, question) in dataset.questions() {
        let Some(gold) = question.memory_type else {
            continue;
        };
        let started = Instant::now();
        let class = classifier.classify(&ctx, &question.text)?;
        latency.push(started.elapsed());
        let gold_index = usize::from(gold == MemoryClass::Episodic);
        let predicted_index = usize::from(!class.is_semantic());
        confusion[gold_index][predicted_index] += 1;
        let entry = by_category.entry(question.category.clone()).or_default();
        entry.0 += usize::from(gold_index == predicted_index);
        entry.1 += 1;
        if let Some(out) = dump.as_mut() {
            let name = |index: usize| if index == 0 { "semantic" } else { "episodic" };
            let line = DumpLine {
                question: &question.text,
                group: &question.category,
                gold: name(gold_index),
                predicted: name(predicted_index),
                p_semantic: f64::from(class.semantic),
            };
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    if let Some(mut out) = dump {
        out.flush()?;
    }
    let questions: usize = confusion.iter().flatten().sum();
    if questions == 0 {
        bail!(
            "{} has no questions with a memory type",
            args.path.display()
        );
    }
    let semantic = class_scores(&confusion, 0);
    let episodic = class_scores(&confusion, 1);
    let report = ClassifierReport {
        dataset: format.as_str().to_string(),
        path: args.path.display().to_string(),
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
        by_category,
        latency: latency.summary(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

fn print_report(r: &ClassifierReport) {
    println!(
        "{} ({}): {} questions; embedder {}, classifier weights {}",
        r.dataset, r.path, r.questions, r.embedder, r.classifier
    );
    if let Some(notice) = &r.degradation {
        println!("note: {notice}");
    }
    println!("accuracy {:.4}   macro F1 {:.4}", r.accuracy, r.macro_f1);
    println!(
        "{:<10} {:>9} {:>7} {:>7} {:>8}",
        "class", "precision", "recall", "F1", "support"
    );
    for (name, s) in [("semantic", r.semantic), ("episodic", r.episodic)] {
        println!(
            "{name:<10} {:>9.4} {:>7.4} {:>7.4} {:>8}",
            s.precision, s.recall, s.f1, s.support
        );
    }
    println!("confusion (rows gold, columns predicted):");
    println!("{:<10} {:>9} {:>9}", "", "semantic", "episodic");
    println!(
        "{:<10} {:>9} {:>9}",
        "semantic", r.confusion[0][0], r.confusion[0][1]
    );
    println!(
        "{:<10} {:>9} {:>9}",
        "episodic", r.confusion[1][0], r.confusion[1][1]
    );
    println!("accuracy by question group:");
    for (category, (correct, total)) in &r.by_category {
        println!(
            "  {category:<20} {:.4} ({correct}/{total})",
            *correct as f64 / (*total).max(1) as f64
        );
    }
    if let Some(l) = &r.latency {
        println!(
            "latency per query: p50 {:.3} ms, p95 {:.3} ms, mean {:.3} ms",
            l.p50_ms, l.p95_ms, l.mean_ms
        );
    }
}
