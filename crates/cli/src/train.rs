//! `mnemos train classifier`: fit the semantic/episodic query classifier on a labelled question
//! set for the configured embedder (or lexical cues only) and write its weights file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use mnemos_core::Embedder;
use mnemos_offline::classify::{parse_question_set, ClassifierWeights, FeatureSet, TrainOptions};

use mnemos_engine::Config;

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

/// L2 penalties tried for the lexical weights and, separately, for the embedding weights; the
/// pair with the best cross-validated accuracy is kept.
const L2_GRID: [f64; 5] = [1e-3, 1e-2, 1e-1, 1.0, 10.0];

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
    let examples = parse_question_set(&data)?;
    let semantic = examples.iter().filter(|e| e.label.is_semantic()).count();
    let chinese = examples.iter().filter(|e| e.lang == "zh").count();
    println!(
        "{}: {} questions ({semantic} semantic, {} episodic; {chinese} Chinese)",
        args.data.display(),
        examples.len(),
        examples.len() - semantic
    );
    let embedder = if args.lexical_only {
        None
    } else {
        Some(mnemos_engine::setup::embedder(config)?)
    };
    let embedder_ref: Option<&dyn Embedder> = embedder.as_deref();
    let started = Instant::now();
    let features = FeatureSet::build(embedder_ref, &data)?;
    println!(
        "features: {} ({} embedding dimensions + lexical cues), computed in {:.1} s",
        features.embedder_id,
        features.embedding_dim,
        started.elapsed().as_secs_f64()
    );
    let lexical_grid = penalty_grid(args.l2, "--l2")?;
    let embedding_grid = if features.embedding_dim == 0 {
        vec![None]
    } else {
        penalty_grid(args.embedding_l2, "--embedding-l2")?
            .into_iter()
            .map(Some)
            .collect()
    };
    let mut best: Option<ClassifierWeights> = None;
    for (l2, embedding_l2) in lexical_grid
        .iter()
        .flat_map(|l| embedding_grid.iter().map(move |e| (*l, *e)))
    {
        let options = TrainOptions {
            l2,
            embedding_l2,
            ..TrainOptions::default()
        };
        let weights = features.train(&options, args.folds)?;
        let embedding_l2 = embedding_l2.map_or("-".to_string(), |e| e.to_string());
        println!(
            "  l2 {l2:<6} embedding l2 {embedding_l2:<6} train accuracy {:.4}  {}-fold CV accuracy {:.4}",
            weights.training.train_accuracy, args.folds, weights.training.cv_accuracy
        );
        let better = best
            .as_ref()
            .is_none_or(|b| weights.training.cv_accuracy > b.training.cv_accuracy);
        if better {
            best = Some(weights);
        }
    }
    let Some(weights) = best else {
        bail!("no L2 penalty to train with");
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!(
            "crates/offline/data/classifier-{}.json",
            weights.embedder_id
        ))
    });
    std::fs::write(&out, weights.to_json()? + "\n")
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!(
        "kept l2 {} (embedding l2 {:?}): train accuracy {:.4}, {}-fold CV accuracy {:.4} ({} examples, {}); {:.1} s",
        weights.training.options.l2,
        weights.training.options.embedding_l2,
        weights.training.train_accuracy,
        weights.training.cv_folds,
        weights.training.cv_accuracy,
        weights.training.examples,
        weights.training.checksum,
        started.elapsed().as_secs_f64()
    );
    println!("wrote {}", out.display());
    Ok(())
}

/// The penalties to try: the one given, else the grid.
fn penalty_grid(given: Option<f64>, flag: &str) -> Result<Vec<f64>> {
    match given {
        Some(l2) if l2.is_finite() && l2 >= 0.0 => Ok(vec![l2]),
        Some(l2) => bail!("{flag} must be a finite number ≥ 0, got {l2}"),
        None => Ok(L2_GRID.to_vec()),
    }
}
