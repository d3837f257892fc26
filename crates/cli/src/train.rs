//! `mnemos train classifier`: fit the semantic/episodic query classifier on a labelled question
//! set for the configured embedder (or lexical cues only) and write its weights file. The
//! training itself is `mnemos_train`'s; this parses the arguments and prints.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use mnemos_core::Embedder;
use mnemos_engine::Config;
use mnemos_train::{train_best, ClassifierWeights, FeatureSet, PenaltyGrid, QuestionSet};

#[derive(clap::Subcommand)]
pub enum TrainCommand {
    /// Fit the semantic/episodic query classifier and write its weights file.
    Classifier(TrainClassifierArgs),
}

pub fn run(config: &Config, command: TrainCommand) -> Result<()> {
    match command {
        TrainCommand::Classifier(args) => train_classifier(config, args),
    }
}

#[derive(Args)]
pub struct TrainClassifierArgs {
    /// The labelled question set (JSONL: text, label semantic|episodic, lang).
    #[arg(long, default_value = "crates/offline/data/query_types.jsonl")]
    data: PathBuf,
    /// Train on lexical cues only (the fallback for embedders without trained weights).
    #[arg(long)]
    lexical_only: bool,
    /// L2 penalty of the lexical weights; default: the best of a small grid by
    /// cross-validated accuracy.
    #[arg(long)]
    l2: Option<f64>,
    /// L2 penalty of the embedding weights; default: the best of the same grid.
    #[arg(long)]
    embedding_l2: Option<f64>,
    /// Cross-validation folds.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Output weights file. Default: crates/offline/data/classifier-<embedder id>.json.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn train_classifier(config: &Config, args: TrainClassifierArgs) -> Result<()> {
    let data = std::fs::read_to_string(&args.data)
        .with_context(|| format!("cannot read {}", args.data.display()))?;
    let set = QuestionSet::parse(&data)?;
    let (total, semantic) = (set.questions.len(), set.semantic_count());
    println!(
        "{}: {total} questions ({semantic} semantic, {} episodic; {} Chinese)",
        args.data.display(),
        total - semantic,
        set.count_in("zh")
    );
    let embedder = if args.lexical_only {
        None
    } else {
        Some(mnemos_engine::setup::embedder(config)?)
    };
    let embedder_ref: Option<&dyn Embedder> = embedder.as_deref();
    let started = Instant::now();
    let features = FeatureSet::build(embedder_ref, &set)?;
    println!(
        "features: {} ({} embedding dimensions + lexical cues), computed in {:.1} s",
        features.embedder_id,
        features.embedding_dim,
        started.elapsed().as_secs_f64()
    );
    let grid = PenaltyGrid::for_features(&features, args.l2, args.embedding_l2, args.folds)?;
    let weights = train_best(&features, &grid, print_candidate)?;
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!(
            "crates/offline/data/classifier-{}.json",
            weights.embedder_id
        ))
    });
    std::fs::write(&out, weights.to_json()? + "\n")
        .with_context(|| format!("cannot write {}", out.display()))?;
    let training = &weights.training;
    println!(
        "kept l2 {} (embedding l2 {:?}): train accuracy {:.4}, {}-fold CV accuracy {:.4} ({} examples, {}); {:.1} s",
        training.options.l2,
        training.options.embedding_l2,
        training.train_accuracy,
        training.cv_folds,
        training.cv_accuracy,
        training.examples,
        training.checksum,
        started.elapsed().as_secs_f64()
    );
    println!("wrote {}", out.display());
    Ok(())
}

/// One line per penalty pair tried.
fn print_candidate(weights: &ClassifierWeights) {
    let training = &weights.training;
    let embedding_l2 = training
        .options
        .embedding_l2
        .map_or("-".to_string(), |e| e.to_string());
    println!(
        "  l2 {:<6} embedding l2 {embedding_l2:<6} train accuracy {:.4}  {}-fold CV accuracy {:.4}",
        training.options.l2, training.train_accuracy, training.cv_folds, training.cv_accuracy
    );
}
