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
//!
//! With `--presets`, it measures importance agreement instead (LUFY, Table 12): every session
//! is streamed through each preset's engine (user and bot turns; one engine user per chatbot
//! and LUFY user, one engine session per LUFY session, ended after its last turn), and a user
//! utterance counts as kept when some active memory's provenance holds its turn — raw turns
//! included, since the question is what the system still holds. The score is each annotator's
//! share of important utterances among the kept ones, against the base rate of keeping
//! everything ([`mnemos_eval::importance_agreement`]).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use serde::Serialize;

use mnemos_core::memory_model::Line;
use mnemos_core::{Embedder, MemoryModel, MemoryModelExt, Role, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_eval::artifacts::{checksum_inputs, InputChecksum, OutDir};
use mnemos_eval::extraction::{kept_raw_turns, kept_turns};
use mnemos_eval::lufy::{load_lufy, roc_auc, turn_label};
use mnemos_eval::metrics::{LatencyStats, LatencySummary};
use mnemos_eval::runner::{RunOptions, Runner};
use mnemos_eval::summary::PresetAccumulator;
use mnemos_eval::{importance_agreement, ImportanceAgreement};
use mnemos_offline::OfflineModel;

use crate::eval_common::{
    active_memories, embedding_ms, engine_for, f3, ms, preset_configs, preset_names, stream_only,
    turn_embedding_texts, warm_embedder, Cost, StoreKind,
};
use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

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
    /// Measure importance agreement of these presets (comma-separated) instead of the
    /// offline scores' AUC.
    #[arg(long)]
    pub(crate) presets: Option<String>,
    /// With --presets: turns per write.
    #[arg(long, default_value_t = 20)]
    batch: usize,
    /// With --presets: sqlite (a scratch database per preset) or memory.
    #[arg(long, default_value = "sqlite")]
    store: String,
    /// With --presets: write report.md and report.json here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of an existing --out directory.
    #[arg(long)]
    overwrite: bool,
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

/// One preset's importance agreement.
#[derive(Serialize)]
struct AgreementRow {
    preset: String,
    agreement: ImportanceAgreement,
    /// Share of the streamed user utterances that were kept.
    kept_share: f64,
    /// The same with only turns kept verbatim (their raw-turn memory is active).
    verbatim: ImportanceAgreement,
    verbatim_share: f64,
    /// Mean minus the base rate's mean.
    mean_over_base: f64,
    cost: Cost,
}

#[derive(Serialize)]
struct AgreementReport {
    mnemos: &'static str,
    path: String,
    sessions: usize,
    conversations: usize,
    user_utterances: usize,
    /// User utterances with text (the ones written to the engine).
    streamed_user_utterances: usize,
    defects: usize,
    batch: usize,
    store: String,
    embedder: String,
    embedding_ms_per_text: Option<f64>,
    memory_model: String,
    /// Keeping every user utterance.
    base: ImportanceAgreement,
    presets: Vec<AgreementRow>,
    notes: Vec<String>,
    checksums: Vec<InputChecksum>,
}

/// `mnemos eval lufy --presets …`: importance agreement (see the module docs).
pub fn run_presets(config: &Config, args: EvalLufyArgs) -> Result<()> {
    let store_kind = StoreKind::parse(&args.store)?;
    let specs = preset_configs(config, &preset_names(&args.presets)?)?;
    let out = match &args.out {
        Some(dir) => Some(OutDir::create(dir, args.overwrite)?),
        None => None,
    };
    let mut dataset = load_lufy(&args.path)?;
    if let Some(limit) = args.limit {
        dataset.sessions.truncate(limit);
    }
    if dataset.sessions.is_empty() {
        bail!("{}: no sessions to evaluate", args.path.display());
    }
    let conversations = dataset.conversations();
    let turns: usize = conversations.iter().map(|c| c.items.len()).sum();
    let user_utterances = dataset
        .sessions
        .iter()
        .flat_map(|s| &s.turns)
        .filter(|t| t.role == Role::User)
        .count();
    let streamed_user_utterances = conversations
        .iter()
        .flat_map(|c| &c.items)
        .filter(|i| i.role == Role::User)
        .count();
    eprintln!(
        "LUFY: {} sessions as {} conversations, {turns} turns ({streamed_user_utterances} user)",
        dataset.sessions.len(),
        conversations.len()
    );
    let turn_texts = turn_embedding_texts(config, conversations.iter().flat_map(|c| &c.items));
    let texts: Vec<&str> = turn_texts.iter().map(String::as_str).collect();
    let (embedder, cache) = warm_embedder(config, &texts)?;
    let answerer = mnemos_engine::setup::memory_model(config, &embedder)?.0;
    let options = RunOptions {
        batch: args.batch.max(1),
        tenant: config.tenant.clone(),
        ..RunOptions::default()
    };
    let prepared: Vec<_> = conversations.into_iter().map(stream_only).collect();
    let base = importance_agreement(&dataset, |_, _| true);
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut rows = Vec::new();
    let mut memory_model = String::new();
    for (name, engine_config) in &specs {
        let preset = engine_for(
            config,
            name,
            engine_config,
            store_kind,
            scratch.path(),
            &embedder,
        )?;
        memory_model = preset.model_id.clone();
        let runner = Runner {
            preset: name,
            engine: &preset.engine,
            answerer: answerer.as_ref(),
            clock: &preset.clock,
            options: &options,
        };
        let started = Instant::now();
        let bar = progress_bar(turns as u64, name);
        let mut accumulator = PresetAccumulator::default();
        let mut kept_labels: HashSet<String> = HashSet::new();
        let mut verbatim_labels: HashSet<String> = HashSet::new();
        for conversation in &prepared {
            let id = &conversation.conversation.id;
            let mut run = runner
                .run(conversation, false, &|n| bar.inc(n))
                .with_context(|| format!("{name} on {id}"))?;
            let user = UserKey::new(options.tenant.clone(), id.clone())?;
            let memories = active_memories(&preset.engine, &user)?;
            let kept = kept_turns(&memories);
            let verbatim = kept_raw_turns(&memories);
            for (turn, label) in std::mem::take(&mut run.turn_labels) {
                if verbatim.contains(&turn) {
                    verbatim_labels.insert(label.clone());
                }
                if kept.contains(&turn) {
                    kept_labels.insert(label);
                }
            }
            preset.engine.purge(&user)?;
            accumulator.add(run);
        }
        bar.finish_and_clear();
        let agreement = importance_agreement(&dataset, |session, turn| {
            kept_labels.contains(&turn_label(session, turn))
        });
        let verbatim = importance_agreement(&dataset, |session, turn| {
            verbatim_labels.contains(&turn_label(session, turn))
        });
        let summary = accumulator.summarize(name, 0, started.elapsed().as_secs_f64());
        eprintln!(
            "{name}: kept {} user utterances, mean agreement {:.3} in {:.0} s",
            agreement.kept, agreement.mean, summary.wall_seconds
        );
        rows.push(AgreementRow {
            preset: name.clone(),
            kept_share: agreement.kept as f64 / streamed_user_utterances.max(1) as f64,
            mean_over_base: agreement.mean - base.mean,
            agreement,
            verbatim_share: verbatim.kept as f64 / streamed_user_utterances.max(1) as f64,
            verbatim,
            cost: Cost::of(&summary),
        });
    }
    let report = AgreementReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        path: args.path.display().to_string(),
        sessions: dataset.sessions.len(),
        conversations: prepared.len(),
        user_utterances,
        streamed_user_utterances,
        defects: dataset.defects.len(),
        batch: options.batch,
        store: store_kind.as_str().to_string(),
        embedder: embedder.id().to_string(),
        embedding_ms_per_text: embedding_ms(&cache),
        memory_model,
        base,
        presets: rows,
        notes: agreement_notes(options.batch),
        checksums: checksum_inputs(std::slice::from_ref(&args.path))?,
    };
    let markdown = render_agreement(&report);
    if let Some(dir) = &out {
        dir.write_json("report.json", &report)?;
        dir.write_text("report.md", &markdown)?;
        eprintln!("report written to {}", dir.path().display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{markdown}");
    }
    Ok(())
}

fn agreement_notes(batch: usize) -> Vec<String> {
    vec![
        format!(
            "Every LUFY session is streamed (user and bot turns, in writes of {batch}) through \
             each preset: one engine user per chatbot and LUFY user, one engine session per \
             LUFY session, ended after its last turn. Blank utterances are not written."
        ),
        "A user utterance is kept when some active memory's provenance holds its turn, raw \
         turns included (the question is what the system still holds): a summary keeps every \
         turn it was made from, so summarizing presets keep more than their raw turns. The \
         second table counts only turns whose raw-turn memory is still active (what forgetting \
         removed shows there)."
            .to_string(),
        "Agreement (LUFY Table 12): per annotator, the share of the kept user utterances that \
         annotator marked important; mean over annotators. The base rate keeps everything; a \
         preset that forgets at random matches it on average."
            .to_string(),
    ]
}

fn agreement_cells(a: &ImportanceAgreement, annotators: &[&String]) -> String {
    annotators
        .iter()
        .map(|name| {
            a.per_annotator
                .get(*name)
                .map_or_else(|| "–".to_string(), |v| f3(*v))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn render_agreement(report: &AgreementReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# mnemos eval lufy: importance agreement\n");
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} sessions as {} conversations, {} user utterances ({} with text), {} loader defects",
        report.path,
        report.sessions,
        report.conversations,
        report.user_utterances,
        report.streamed_user_utterances,
        report.defects
    );
    let _ = writeln!(
        md,
        "- engine: store {}, embedder {}{}, memory model {}, writes of {} turns",
        report.store,
        report.embedder,
        report
            .embedding_ms_per_text
            .map_or(String::new(), |v| format!(" ({v:.2} ms per text, cached)")),
        report.memory_model,
        report.batch
    );
    let annotators: Vec<&String> = report.base.per_annotator.keys().collect();
    let _ = writeln!(md, "\n## Share of kept user utterances marked important\n");
    let header: Vec<String> = annotators.iter().map(|a| a.to_string()).collect();
    let _ = writeln!(
        md,
        "| preset | kept utterances | kept share | {} | mean | mean − base | observe p50 ms | wall s |",
        header.join(" | ")
    );
    let _ = writeln!(md, "|{}", "---|".repeat(7 + annotators.len()));
    let _ = writeln!(
        md,
        "| (keep everything) | {} | 1.000 | {} | {} | 0.000 | – | – |",
        report.base.kept,
        agreement_cells(&report.base, &annotators),
        f3(report.base.mean)
    );
    for row in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:+.3} | {} | {:.0} |",
            row.preset,
            row.agreement.kept,
            f3(row.kept_share),
            agreement_cells(&row.agreement, &annotators),
            f3(row.agreement.mean),
            row.mean_over_base,
            ms(&row.cost.observe, false),
            row.cost.wall_seconds
        );
    }
    let _ = writeln!(
        md,
        "\n## Kept verbatim only (the raw-turn memory is active; summaries ignored)\n"
    );
    let _ = writeln!(
        md,
        "| preset | kept utterances | kept share | {} | mean | mean − base |",
        header.join(" | ")
    );
    let _ = writeln!(md, "|{}", "---|".repeat(5 + annotators.len()));
    for row in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:+.3} |",
            row.preset,
            row.verbatim.kept,
            f3(row.verbatim_share),
            agreement_cells(&row.verbatim, &annotators),
            f3(row.verbatim.mean),
            row.verbatim.mean - report.base.mean
        );
    }
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for row in &report.presets {
        if row.cost.jobs_failed > 0 {
            let _ = writeln!(
                md,
                "- {}: {} job(s) failed, e.g. {:?}",
                row.preset,
                row.cost.jobs_failed,
                row.cost.job_errors.first()
            );
        }
    }
    md
}
