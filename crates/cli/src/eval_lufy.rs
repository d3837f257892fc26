//! `mnemos eval lufy`: how well the offline model's arousal, surprise and importance scores
//! rank the user utterances that LUFY's annotators marked important.
//!
//! For every user utterance with a majority label (important = marked by at least 2 of the 3
//! annotators): arousal of the utterance; surprise of the utterance given the session so far,
//! scored after the previous bot turn; importance of the exchange (previous bot turn + the
//! utterance) given the user's previous turns of the session as the past summary. Each score's
//! ROC AUC against the label is computed by rank statistic (ties count one half), with the
//! median latency of one call. None of the three scores uses embeddings, so the model runs over
//! the hash embedder and never loads a neural model.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::memory_model::Line;
use mnemos_core::{Embedder, MemoryModel, MemoryModelExt, Role};
use mnemos_embed::HashEmbedder;
use mnemos_eval::lufy::{load_lufy, roc_auc};
use mnemos_eval::metrics::{LatencyStats, LatencySummary};
use mnemos_offline::OfflineModel;

#[derive(Args)]
pub struct EvalLufyArgs {
    /// The LUFY sessions file (lufy_sessions.json).
    path: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Only the first N sessions (quick runs).
    #[arg(long)]
    limit: Option<usize>,
}

#[derive(Serialize)]
struct ScoreRow {
    score: &'static str,
    /// ROC AUC against the majority label; 0.5 = chance, below 0.5 = anti-correlated.
    auc: Option<f64>,
    /// Median score of important and of other utterances.
    median_important: f64,
    median_other: f64,
    latency: Option<LatencySummary>,
}

#[derive(Serialize)]
struct LufyReport {
    path: String,
    model: String,
    sessions: usize,
    user_utterances: usize,
    labelled: usize,
    important: usize,
    not_important: usize,
    /// User utterances whose annotations do not decide the majority.
    undetermined: usize,
    /// User utterances with blank text or a failed call.
    skipped: usize,
    defects: usize,
    scores: Vec<ScoreRow>,
}

/// One score's samples.
#[derive(Default)]
struct Series {
    values: Vec<f64>,
    latency: LatencyStats,
}

impl Series {
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
}

/// Run `f`, recording its duration in `series`.
fn timed<T>(series: &mut Series, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    series.latency.push(started.elapsed());
    out
}

pub fn run(args: EvalLufyArgs) -> Result<()> {
    let mut dataset = load_lufy(&args.path)?;
    if let Some(limit) = args.limit {
        dataset.sessions.truncate(limit);
    }
    if dataset.sessions.is_empty() {
        bail!("{}: no sessions to evaluate", args.path.display());
    }
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::default());
    let model = OfflineModel::new(Arc::clone(&embedder));
    let mut arousal = Series::default();
    let mut surprise = Series::default();
    let mut importance = Series::default();
    let mut labels: Vec<bool> = Vec::new();
    let (mut user_utterances, mut undetermined, mut skipped) = (0usize, 0usize, 0usize);

    for session in &dataset.sessions {
        let mut context: Vec<Line> = Vec::new();
        let mut past_user: Vec<&str> = Vec::new();
        let mut previous_bot: Option<Line> = None;
        for turn in &session.turns {
            let line = Line::new(turn.role, Some(&turn.speaker), turn.utterance.clone());
            if turn.role == Role::User {
                user_utterances += 1;
                match session.label(turn) {
                    None => undetermined += 1,
                    Some(_) if turn.utterance.trim().is_empty() => skipped += 1,
                    Some(label) => {
                        let text = turn.utterance.as_str();
                        let past_summary = past_user.join("\n");
                        let mut exchange: Vec<Line> = previous_bot.iter().cloned().collect();
                        exchange.push(line.clone());
                        let a = timed(&mut arousal, || model.arousal(text));
                        let s = timed(&mut surprise, || model.surprise(&context, text));
                        let i = timed(&mut importance, || {
                            model.rate_importance(&past_summary, &exchange)
                        });
                        match (a, s, i) {
                            (Ok(a), Ok(s), Ok(i)) => {
                                arousal.values.push(f64::from(a));
                                surprise.values.push(f64::from(s));
                                importance.values.push(f64::from(i));
                                labels.push(label);
                            }
                            (a, s, i) => {
                                skipped += 1;
                                for error in [a.err(), s.err(), i.err()].into_iter().flatten() {
                                    eprintln!("{} turn {}: {error}", session.id(), turn.idx);
                                }
                            }
                        }
                    }
                }
                past_user.push(turn.utterance.as_str());
            } else {
                previous_bot = Some(line.clone());
            }
            context.push(line);
        }
    }

    let important = labels.iter().filter(|l| **l).count();
    let report = LufyReport {
        path: args.path.display().to_string(),
        model: format!("{} (embedder {})", model.id(), embedder.id()),
        sessions: dataset.sessions.len(),
        user_utterances,
        labelled: labels.len(),
        important,
        not_important: labels.len() - important,
        undetermined,
        skipped,
        defects: dataset.defects.len(),
        scores: vec![
            arousal.row("arousal", &labels),
            surprise.row("surprise", &labels),
            importance.row("importance", &labels),
        ],
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    for defect in dataset.defects.iter().take(10) {
        eprintln!("defect: {defect}");
    }
    Ok(())
}

fn print_report(report: &LufyReport) {
    println!(
        "LUFY {}: {} sessions, {} user utterances, {} labelled ({} important by >=2 of 3, {} not); \
         {} undetermined, {} skipped, {} defects",
        report.path,
        report.sessions,
        report.user_utterances,
        report.labelled,
        report.important,
        report.not_important,
        report.undetermined,
        report.skipped,
        report.defects
    );
    println!("model: {}", report.model);
    println!();
    println!(
        "{:<11} {:>7} {:>15} {:>12} {:>9} {:>9}",
        "score", "AUC", "med. important", "median other", "p50 ms", "p95 ms"
    );
    for row in &report.scores {
        let auc = row
            .auc
            .map_or_else(|| "-".to_string(), |a| format!("{a:.3}"));
        let (p50, p95) = row
            .latency
            .as_ref()
            .map_or((0.0, 0.0), |l| (l.p50_ms, l.p95_ms));
        println!(
            "{:<11} {:>7} {:>15.3} {:>12.3} {:>9.3} {:>9.3}",
            row.score, auc, row.median_important, row.median_other, p50, p95
        );
    }
}
