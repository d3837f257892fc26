//! The training commands' flags (`mnemos train …`) and their runs, behind the `clap`
//! feature: `classifier` fits the semantic/episodic query classifier on a labelled question
//! set for the configured embedder (or lexical cues only) and writes its weights file; `lufy`
//! fits the lufy preset's strength weights on LUFY's annotations and writes the weights file
//! the preset ships; `ranker` fits the learned ranker on retrieval dumps and writes it as a
//! config file; `relevance` fits the relevance model on relevance dumps, reports its held-out
//! calibration, and writes it as a config file. The flags live beside the training they drive,
//! so the binary only parses, calls [`run`] and prints what it is handed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use mnemos_core::Embedder;
use mnemos_setup::Config;

use crate::{train_best, ClassifierWeights, FeatureSet, PenaltyGrid, QuestionSet, TrainError};

/// Where a training run's report goes, one line (or block of lines) at a time.
pub type Out<'a> = &'a mut dyn FnMut(&str);

/// Hand `out` one formatted line.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        $out(&format!($($arg)*))
    };
}

#[derive(clap::Subcommand)]
pub enum TrainCommand {
    /// Fit the semantic/episodic query classifier and write its weights file.
    Classifier(TrainClassifierArgs),
    /// Fit the lufy preset's strength weights (A, P, L) on LUFY's annotations and write them.
    Lufy(TrainLufyArgs),
    /// Fit the retrieval core's learned ranker on `eval retrieval --dump` files,
    /// cross-validated by conversation, and write it as a `[retrieval.ranker]` config.
    Ranker(TrainRankerArgs),
    /// Fit the relevance model (the calibrated chance that a hit is evidence) on `eval
    /// relevance --dump` files, report its calibration held out by conversation, and write it
    /// as a `[retrieval.relevance]` config.
    Relevance(TrainRelevanceArgs),
}

/// Run a training command; what a person would read goes to `out`, a line at a time.
pub fn run(config: &Config, command: TrainCommand, out: Out<'_>) -> Result<(), TrainError> {
    match command {
        TrainCommand::Classifier(args) => train_classifier(config, args, out),
        TrainCommand::Lufy(args) => train_lufy(args, out),
        TrainCommand::Ranker(args) => train_ranker(args, out),
        TrainCommand::Relevance(args) => train_relevance(args, out),
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

fn train_classifier(
    config: &Config,
    args: TrainClassifierArgs,
    out: Out<'_>,
) -> Result<(), TrainError> {
    let data = std::fs::read_to_string(&args.data).map_err(|source| TrainError::Read {
        path: args.data.display().to_string(),
        source,
    })?;
    let set = QuestionSet::parse(&data)?;
    let (total, semantic) = (set.questions.len(), set.semantic_count());
    say!(
        out,
        "{}: {total} questions ({semantic} semantic, {} episodic; {} Chinese)",
        args.data.display(),
        total - semantic,
        set.count_in("zh")
    );
    let embedder = if args.lexical_only {
        None
    } else {
        Some(mnemos_setup::embedder(config)?)
    };
    let embedder_ref: Option<&dyn Embedder> = embedder.as_deref();
    let started = Instant::now();
    let features = FeatureSet::build(embedder_ref, &set)?;
    say!(
        out,
        "features: {} ({} embedding dimensions + lexical cues), computed in {:.1} s",
        features.embedder_id,
        features.embedding_dim,
        started.elapsed().as_secs_f64()
    );
    let grid = PenaltyGrid::for_features(&features, args.l2, args.embedding_l2, args.folds)?;
    let weights = train_best(&features, &grid, |w| print_candidate(w, out))?;
    let path = args.out.unwrap_or_else(|| {
        PathBuf::from(format!(
            "crates/offline/data/classifier-{}.json",
            weights.embedder_id
        ))
    });
    let json = weights.to_json().map_err(|e| serialize("JSON", e))?;
    write(&path, json + "\n")?;
    let training = &weights.training;
    say!(
        out,
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
    say!(out, "wrote {}", path.display());
    Ok(())
}

/// One line per penalty pair tried.
fn print_candidate(weights: &ClassifierWeights, out: Out<'_>) {
    let training = &weights.training;
    let embedding_l2 = training
        .options
        .embedding_l2
        .map_or("-".to_string(), |e| e.to_string());
    say!(
        out,
        "  l2 {:<6} embedding l2 {embedding_l2:<6} train accuracy {:.4}  {}-fold CV accuracy {:.4}",
        training.options.l2,
        training.train_accuracy,
        training.cv_folds,
        training.cv_accuracy
    );
}

#[derive(Args)]
pub struct TrainLufyArgs {
    /// The LUFY sessions file (lufy_sessions.json).
    path: PathBuf,
    /// Cross-validation folds (users are split into them; at most one per user).
    #[arg(long, default_value_t = 17)]
    folds: usize,
    /// Share of each session's utterances kept when scoring held-out agreement.
    #[arg(long, default_value_t = 0.1)]
    keep_share: f64,
    /// Output weights file (the one the lufy preset ships).
    #[arg(long, default_value = "crates/presets/data/lufy-weights.json")]
    out: PathBuf,
}

fn train_lufy(args: TrainLufyArgs, out: Out<'_>) -> Result<(), TrainError> {
    use mnemos_presets::lufy::strength::{Scale, PAPER_WEIGHTS};
    let started = Instant::now();
    let scale = Scale::default();
    let data = crate::lufy::lufy_samples(&args.path, &scale)?;
    let important = data.samples.iter().filter(|s| s.y).count();
    say!(
        out,
        "{}: {} labelled user utterances ({important} important by >=2 of 3), {} undetermined, {} blank; signals by {} in {:.1} s",
        args.path.display(),
        data.samples.len(),
        data.undetermined,
        data.blank,
        data.model,
        started.elapsed().as_secs_f64()
    );
    let fit = crate::lufy::train_lufy(&data, scale, args.folds, args.keep_share)?;
    say!(
        out,
        "\ncross-validated by user ({} users, {} folds), held out:",
        fit.users,
        fit.folds
    );
    say!(
        out,
        "| weights | lambda | MSE | AUC of S | top-{:.0}% agreement |",
        100.0 * fit.keep_share
    );
    say!(out, "|---|---|---|---|---|");
    let auc = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{a:.3}"));
    for p in &fit.penalties {
        let h = &p.held_out;
        say!(
            out,
            "| fitted | {} | {:.4} | {} | {:.3} |",
            p.lambda,
            h.mse,
            auc(h.auc),
            h.agreement
        );
    }
    let h = &fit.paper;
    say!(
        out,
        "| paper (Table 2) | - | {:.4} | {} | {:.3} |",
        h.mse,
        auc(h.auc),
        h.agreement
    );
    say!(
        out,
        "\nweights (lambda {}, fitted on all {} samples):",
        fit.lambda,
        fit.samples
    );
    say!(out, "| signal | fitted | paper |");
    say!(out, "|---|---|---|");
    let w = fit.weights;
    for (name, fitted, paper) in [
        ("A (arousal)", w.arousal, PAPER_WEIGHTS.arousal),
        ("P (perplexity)", w.surprise, PAPER_WEIGHTS.surprise),
        ("L (importance)", w.importance, PAPER_WEIGHTS.importance),
        ("R1 (not fitted: kept)", w.r1, PAPER_WEIGHTS.r1),
        ("R2 (not fitted: kept)", w.r2, PAPER_WEIGHTS.r2),
    ] {
        say!(out, "| {name} | {fitted:.3} | {paper} |");
    }
    let json = serde_json::to_string_pretty(&fit).map_err(|e| serialize("JSON", e))?;
    write(&args.out, json + "\n")?;
    say!(
        out,
        "\nwrote {} in {:.1} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(Args)]
pub struct TrainRankerArgs {
    /// `eval retrieval --dump` files (one per dataset); each conversation is one fold.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// The retriever row of the dumps to learn from.
    #[arg(long, default_value = "hybrid")]
    retriever: String,
    /// L2 penalty of the (standardized) weights.
    #[arg(long, default_value_t = 0.001)]
    l2: f64,
    /// Output config file holding the fitted `[retrieval.ranker]`.
    #[arg(long, default_value = "ranker.toml")]
    out: PathBuf,
    /// Choose the features and L2 penalty by leave-one-conversation-out CV, report the
    /// choice's honest (nested) held-out figure, and write the chosen ranker.
    #[arg(long)]
    select: bool,
    /// `--select`: the L2 penalties tried.
    #[arg(long, value_delimiter = ',', default_values_t = crate::select::SELECT_L2_GRID)]
    l2_grid: Vec<f64>,
    /// `--select`: drop a feature while that costs at most this much of the best score
    /// (R@10 + r1-weight·R@1) seen.
    #[arg(long, default_value_t = 0.002)]
    tolerance: f64,
    /// `--select`: the weight of R@1 beside R@10 in the score.
    #[arg(long, default_value_t = 0.5)]
    r1_weight: f64,
    /// `--select`: skip the nested CV (the honest figure of the selection), which repeats
    /// the selection once per conversation.
    #[arg(long)]
    no_nested: bool,
    /// `--select`: also offer training-only derived features (per-query z-scores of dense,
    /// lexical and coverage; dense·coverage, lexical·coverage). The engine cannot compute
    /// them, so a selection that keeps one is reported but not written.
    #[arg(long)]
    derived: bool,
    /// `--select`: worker threads (default: every core).
    #[arg(long)]
    threads: Option<usize>,
}

/// The dumps that hold candidates, telling `out` about those that hold none.
fn ranker_sources(
    args: &TrainRankerArgs,
    out: Out<'_>,
) -> Result<Vec<(String, Vec<crate::ranker::RankerQuestion>)>, TrainError> {
    let mut sources = Vec::new();
    for path in &args.dumps {
        let dump = crate::ranker::read_dump_lines(path, &args.retriever)?;
        if dump.questions.is_empty() {
            say!(
                out,
                "{}: no question with gold and ranker candidates ({} lines; the ranker was off or gated off, e.g. records): no training rows, not scored",
                path.display(),
                dump.skipped
            );
            continue;
        }
        sources.push((path.display().to_string(), dump.questions));
    }
    if sources.is_empty() {
        return Err(TrainError::invalid(
            "no dump holds ranker candidates (dump with `eval retrieval --dump` and a ranker depth > 0)",
        ));
    }
    Ok(sources)
}

/// One row of a recall table: the dump, its questions, the order and its recall at each k.
fn recall_row(
    out: Out<'_>,
    source: &str,
    questions: usize,
    order: &str,
    recall: &crate::ranker::RecallAt,
) {
    let cells: Vec<String> = recall.0.iter().map(|r| format!("{r:.3}")).collect();
    say!(
        out,
        "| {source} | {questions} | {order} | {} |",
        cells.join(" | ")
    );
}

fn train_ranker(args: TrainRankerArgs, out: Out<'_>) -> Result<(), TrainError> {
    use crate::ranker::{train_ranker, RANKER_KS};
    use mnemos_core::retrieval::RANK_FEATURE_NAMES;
    let sources = ranker_sources(&args, out)?;
    if args.select {
        return select_ranker(&args, sources, out);
    }
    let fit = train_ranker(&sources, args.l2)?;
    say!(
        out,
        "cross-validated by conversation ({} folds), l2 {}, recall of the held-out questions:",
        fit.folds,
        fit.l2
    );
    let ks: Vec<String> = RANKER_KS.iter().map(|k| format!("R@{k}")).collect();
    say!(out, "| dump | questions | order | {} |", ks.join(" | "));
    say!(out, "|---|---|---|{}", "---|".repeat(ks.len()));
    for source in &fit.by_source {
        for (order, recall) in [("fused", &source.fused), ("learned", &source.learned)] {
            recall_row(out, &source.source, source.questions, order, recall);
        }
    }
    say!(
        out,
        "\nfitted on every question (depth {}):",
        fit.ranker.depth
    );
    for (name, weight) in RANK_FEATURE_NAMES.iter().zip(&fit.ranker.weights) {
        say!(out, "  {name:<20} {weight:>9.4}");
    }
    say!(out, "  {:<20} {:>9.4}", "bias", fit.ranker.bias);
    write_ranker(&args.out, &fit.ranker)?;
    say!(out, "\nwrote {}", args.out.display());
    Ok(())
}

/// `ranker` as a config file holding `[retrieval.ranker]`.
fn write_ranker(
    path: &Path,
    ranker: &mnemos_core::retrieval::LearnedRanker,
) -> Result<(), TrainError> {
    let mut table = toml::Table::new();
    let ranker = toml::Value::try_from(ranker).map_err(|e| serialize("TOML", e))?;
    let mut retrieval = toml::Table::new();
    retrieval.insert("ranker".into(), ranker);
    table.insert("retrieval".into(), toml::Value::Table(retrieval));
    write(
        path,
        toml::to_string(&table).map_err(|e| serialize("TOML", e))?,
    )
}

/// `train ranker --select`: the selection, its honest figure, and the chosen ranker.
fn select_ranker(
    args: &TrainRankerArgs,
    sources: Vec<(String, Vec<crate::ranker::RankerQuestion>)>,
    out: Out<'_>,
) -> Result<(), TrainError> {
    use crate::select::{select_ranker, with_derived, SelectOptions};
    let started = Instant::now();
    let sources: Vec<_> = if args.derived {
        sources
            .into_iter()
            .map(|(name, questions)| (name, with_derived(&questions)))
            .collect()
    } else {
        sources
    };
    let options = SelectOptions {
        l2_grid: args.l2_grid.clone(),
        tolerance: args.tolerance,
        r1_weight: args.r1_weight,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        ..SelectOptions::default()
    };
    let report = select_ranker(&sources, args.l2, &options, !args.no_nested)?;
    report_selection(&report, &options, out);
    if let Some(ranker) = &report.ranker {
        write_ranker(&args.out, ranker)?;
        say!(out, "\nwrote {}", args.out.display());
    } else {
        say!(
            out,
            "\nnot written: the selection keeps a derived feature the engine does not compute"
        );
    }
    say!(out, "took {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn report_selection(
    report: &crate::select::SelectReport,
    options: &crate::select::SelectOptions,
    out: Out<'_>,
) {
    use crate::ranker::RecallAt;
    say!(
        out,
        "leave-one-conversation-out ({} folds, each conversation held out of every dump); score R@10 + {}·R@1, dumps weighted equally; L2 grid {:?}, tolerance {}",
        report.folds,
        options.r1_weight,
        options.l2_grid,
        options.tolerance
    );
    say!(out, "| dump | questions | order | R@1 | R@5 | R@10 |");
    say!(out, "|---|---|---|---|---|---|");
    let fixed = format!("l2 {}, all features", report.fixed_l2);
    for source in &report.by_source {
        let rows: [(String, Option<&RecallAt>); 5] = [
            ("fused".into(), Some(&source.fused)),
            (format!("in-sample ({fixed})"), Some(&source.in_sample)),
            (format!("held out ({fixed})"), Some(&source.fixed)),
            ("held out, nested selection".into(), source.nested.as_ref()),
            (
                "CV of the final selection (optimistic)".into(),
                Some(&source.selected_cv),
            ),
        ];
        for (order, recall) in rows {
            if let Some(recall) = recall {
                recall_row(out, &source.source, source.questions, &order, recall);
            }
        }
    }
    report_outer_folds(report, out);
    report_final_selection(report, out);
}

/// What each outer fold of the nested CV chose.
fn report_outer_folds(report: &crate::select::SelectReport, out: Out<'_>) {
    if !report.outer.is_empty() {
        say!(
            out,
            "\nnested: what the selection on the other conversations chose"
        );
        say!(out, "| held out | l2 | features | inner score | dropped |");
        say!(out, "|---|---|---|---|---|");
        for fold in &report.outer {
            say!(
                out,
                "| {} | {} | {} | {:.4} | {} |",
                fold.conversation,
                fold.chosen.settings.l2,
                fold.chosen.settings.keep.iter().filter(|k| **k).count(),
                fold.chosen.objective,
                dropped_names(&fold.chosen.settings, &report.feature_names)
            );
        }
    }
}

/// The selection on every conversation and its weights.
fn report_final_selection(report: &crate::select::SelectReport, out: Out<'_>) {
    let chosen = &report.chosen;
    say!(
        out,
        "\nfinal selection on all {} conversations: l2 {}, {} of {} features, CV score {:.4}",
        report.folds,
        chosen.settings.l2,
        chosen.settings.keep.iter().filter(|k| **k).count(),
        chosen.settings.keep.len(),
        chosen.objective
    );
    say!(
        out,
        "dropped: {}",
        dropped_names(&chosen.settings, &report.feature_names)
    );
    if let Some(ranker) = &report.ranker {
        say!(out, "\nfitted on every question (depth {}):", ranker.depth);
        for (name, weight) in report.feature_names.iter().zip(&ranker.weights) {
            say!(out, "  {name:<20} {weight:>9.4}");
        }
        say!(out, "  {:<20} {:>9.4}", "bias", ranker.bias);
    }
}

fn dropped_names(settings: &crate::select::Settings, names: &[String]) -> String {
    let dropped: Vec<&str> = settings
        .dropped()
        .into_iter()
        .filter_map(|i| names.get(i).map(String::as_str))
        .collect();
    if dropped.is_empty() {
        "none".into()
    } else {
        dropped.join(", ")
    }
}

#[derive(Args)]
pub struct TrainRelevanceArgs {
    /// `eval relevance --dump` files (one per dataset, same embedder); each conversation or
    /// character is one fold.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// L2 penalty of the (standardized) weights.
    #[arg(long, default_value_t = 0.001)]
    l2: f64,
    /// Features to fit without (comma-separated names; they get weight 0), for features that
    /// do not carry over from these dumps to where the model runs.
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Write the fit as `[retrieval.relevance_cjk]`, the model for queries written mostly in
    /// Chinese or Japanese (fit it `--without cosine` unless the embedder's cosine was
    /// measured on such text).
    #[arg(long)]
    cjk: bool,
    /// Output config file holding the fitted `[retrieval.relevance]`.
    #[arg(long, default_value = "relevance.toml")]
    out: PathBuf,
}

fn train_relevance(args: TrainRelevanceArgs, out: Out<'_>) -> Result<(), TrainError> {
    use crate::relevance::{drop_features, read_relevance_dump, train_relevance};
    use mnemos_core::retrieval::RELEVANCE_FEATURE_NAMES;
    let mut sources = Vec::new();
    for path in &args.dumps {
        let searches = read_relevance_dump(path)?;
        sources.push((path.display().to_string(), searches));
    }
    drop_features(&mut sources, &args.without)?;
    let fit = train_relevance(&sources, args.l2)?;
    say!(
        out,
        "cross-validated by conversation ({} folds), l2 {}: calibration of held-out hits",
        fit.folds,
        fit.l2
    );
    for source in &fit.by_source {
        say!(
            out,
            "\n## {} ({} searches), own and other conversations\n\n{}",
            source.source,
            source.searches,
            source.all.markdown()
        );
        say!(
            out,
            "own conversation only: ECE {:.4} over {} hits",
            source.own.ece,
            source.own.hits
        );
    }
    say!(out, "\nfitted on every search:");
    for (name, weight) in RELEVANCE_FEATURE_NAMES.iter().zip(&fit.model.weights) {
        say!(out, "  {name:<20} {weight:>9.4}");
    }
    say!(out, "  {:<20} {:>9.4}", "bias", fit.model.bias);
    let mut retrieval = toml::Table::new();
    let key = if args.cjk {
        "relevance_cjk"
    } else {
        "relevance"
    };
    let model = toml::Value::try_from(&fit.model).map_err(|e| serialize("TOML", e))?;
    retrieval.insert(key.into(), model);
    let mut table = toml::Table::new();
    table.insert("retrieval".into(), toml::Value::Table(retrieval));
    write(
        &args.out,
        toml::to_string(&table).map_err(|e| serialize("TOML", e))?,
    )?;
    say!(out, "\nwrote {}", args.out.display());
    Ok(())
}

/// Write a fitted model's file.
fn write(path: &Path, contents: String) -> Result<(), TrainError> {
    std::fs::write(path, contents).map_err(|source| TrainError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn serialize(
    format: &'static str,
    err: impl std::error::Error + Send + Sync + 'static,
) -> TrainError {
    TrainError::Serialize {
        format,
        source: Box::new(err),
    }
}
