//! The evaluation commands as library calls: each module takes typed options, runs (most over
//! the one [`crate::experiment::Experiment`]), and returns a report that serializes to the
//! command's JSON and renders to its markdown or text; `--out` directories (report.json,
//! report.md, plots) are written here too.
//!
//! - [`run`]: MemBench's protocol with presets side by side (`eval run`);
//! - [`presets`]: one conversation, presets side by side, questions at the end (`eval presets`);
//! - [`extraction`]: MOOM's extraction score (`eval extraction`);
//! - [`probes`]: ZH-4O's probes (`eval probes`);
//! - [`lufy`]: LUFY's importance agreement and the offline scores' AUC (`eval lufy`);
//! - [`retrieval`]: BM25 / dense / hybrid on gold evidence (`eval retrieval`);
//! - [`relevance`]: calibration of hits' relevance and the floor's cost (`eval relevance`);
//! - [`classifier`]: the semantic/episodic query classifier (`eval classifier`).

pub mod classifier;
pub mod extraction;
pub mod forgets;
pub mod lufy;
pub mod presets;
pub mod probes;
pub mod relevance;
pub mod retrieval;
pub mod run;
pub mod updates;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use mnemos_presets::variants::{DefaultPresets, Selection, SelectionSpec};
use mnemos_setup::Config;

use crate::artifacts::OutDir;
use crate::error::EvalError;
use crate::experiment::{Progress, ProgressFn, SharedEmbedder, StoreKind};
use crate::metrics::LatencySummary;
use crate::plot::{write_line_chart, LineChart};
use crate::summary::PresetSummary;

/// What running a preset cost, from the runner's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub turns: usize,
    pub observe: Option<LatencySummary>,
    pub end_session: Option<LatencySummary>,
    pub recall: Option<LatencySummary>,
    pub answer_model: Option<LatencySummary>,
    /// Memories (all kinds) at the end of each stream, on average.
    pub final_memories: f64,
    pub final_memory_tokens: f64,
    pub model_calls_per_turn: f64,
    /// Prompt + completion tokens the preset's memory model used per observed turn.
    pub model_tokens_per_turn: f64,
    pub jobs_failed: usize,
    /// The first few job errors, verbatim.
    pub job_errors: Vec<String>,
    pub wall_seconds: f64,
}

impl Cost {
    pub fn of(summary: &PresetSummary) -> Self {
        Cost {
            turns: summary.turns,
            observe: summary.observe.clone(),
            end_session: summary.end_session.clone(),
            recall: summary.recall.clone(),
            answer_model: summary.answer_model.clone(),
            final_memories: summary.final_memories,
            final_memory_tokens: summary.final_memory_tokens,
            model_calls_per_turn: summary.model_calls_per_turn,
            model_tokens_per_turn: summary.model_tokens_per_turn,
            jobs_failed: summary.jobs_failed,
            job_errors: summary.job_errors.clone(),
            wall_seconds: summary.wall_seconds,
        }
    }
}

/// A number with three decimals.
pub(crate) fn f3(value: f64) -> String {
    format!("{value:.3}")
}

/// Three decimals, or "–" when there is no value.
pub(crate) fn opt3(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), f3)
}

/// A latency's p50 (or p95) in milliseconds, or "–".
pub(crate) fn ms(summary: &Option<LatencySummary>, p95: bool) -> String {
    summary.as_ref().map_or_else(
        || "–".to_string(),
        |s| format!("{:.2}", if p95 { s.p95_ms } else { s.p50_ms }),
    )
}

/// What every preset-comparing command (`run`, `extraction`, `probes`, `lufy --presets`)
/// compares and how: the engines side by side, where they keep memories, how many turns
/// each write carries, and where the report goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub engines: SelectionSpec,
    pub store: StoreKind,
    /// Turns per write (1 = turn by turn, as a live chat); 0 counts as 1.
    pub batch: usize,
    #[serde(skip)]
    pub output: OutputOptions,
}

impl Comparison {
    /// What a command does before any work, so that a bad preset, parameter or output
    /// directory costs nothing: build each named engine once to check it, and create the
    /// output directory.
    pub(crate) fn begin(
        &self,
        config: &Config,
        default: DefaultPresets,
    ) -> Result<(Selection, Option<OutDir>), EvalError> {
        let selection = self.engines.expand(&config.engine, default)?;
        Ok((selection, self.output.create()?))
    }
}

/// The engine side of an experiment, as every preset-comparing report states it (flattened
/// into the report's JSON).
#[derive(Debug, Clone, Serialize)]
pub struct EngineSetup {
    pub store: StoreKind,
    pub embedder: String,
    /// Mean time the embedding model took per text (measured while warming the cache).
    pub embedding_ms_per_text: Option<f64>,
    pub memory_model: String,
}

impl EngineSetup {
    pub(crate) fn of(store: StoreKind, shared: &SharedEmbedder, memory_model: String) -> Self {
        EngineSetup {
            store,
            embedder: shared.embedder.id().to_string(),
            embedding_ms_per_text: shared.ms_per_text(),
            memory_model,
        }
    }

    /// `store sqlite, embedder minilm (0.52 ms per text, cached), memory model offline`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "store {}, embedder {}, memory model {}",
            self.store.as_str(),
            embedder_cell(&self.embedder, self.embedding_ms_per_text),
            self.memory_model
        )
    }
}

/// The embedder as a report's engine line names it, with its cached cost per text.
pub(crate) fn embedder_cell(embedder: &str, ms_per_text: Option<f64>) -> String {
    match ms_per_text {
        Some(v) => format!("{embedder} ({v:.2} ms per text, cached)"),
        None => embedder.to_string(),
    }
}

/// The notes section: the report's notes, then every preset whose derived jobs failed.
pub(crate) fn notes_section<'a>(
    md: &mut String,
    notes: &[String],
    costs: impl IntoIterator<Item = (&'a str, &'a Cost)>,
) {
    let _ = writeln!(md, "\n## Notes\n");
    for note in notes {
        let _ = writeln!(md, "- {note}");
    }
    for (preset, cost) in costs {
        job_failures(md, preset, cost.jobs_failed, &cost.job_errors);
    }
}

/// A note line when a preset's derived jobs failed.
pub(crate) fn job_failures(md: &mut String, preset: &str, failed: usize, errors: &[String]) {
    if failed > 0 {
        let _ = writeln!(
            md,
            "- {preset}: {failed} job(s) failed, e.g. {:?}",
            errors.first()
        );
    }
}

/// Where a report goes besides the caller's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// Write report.json, report.md (and plots, where a report draws them) here.
    pub out: Option<PathBuf>,
    /// Replace the contents of an existing `out` directory.
    pub overwrite: bool,
}

impl OutputOptions {
    /// The output directory, created (or refused) before any work so a run never ends unable
    /// to write its report.
    pub fn create(&self) -> Result<Option<OutDir>, EvalError> {
        match &self.out {
            Some(dir) => Ok(Some(OutDir::create(dir, self.overwrite)?)),
            None => Ok(None),
        }
    }
}

/// Write report.json, the charts (under plots/) and report.md — `markdown` with a plots
/// section listing the charts and any note the plotting left.
pub(crate) fn write_report(
    dir: &OutDir,
    report: &impl Serialize,
    markdown: &str,
    charts: &[(String, LineChart)],
    progress: ProgressFn<'_>,
) -> Result<(), EvalError> {
    dir.write_json("report.json", report)?;
    let mut markdown = markdown.to_string();
    if !charts.is_empty() {
        markdown.push_str("\n## Plots\n\n");
    }
    let mut plot_notes = Vec::new();
    for (stem, chart) in charts {
        let output = write_line_chart(chart, dir.plots_dir(), stem)?;
        plot_notes.extend(output.notes);
        let _ = writeln!(
            markdown,
            "- {}: ![{stem}](plots/{stem}.svg) ([PNG](plots/{stem}.png))",
            chart.title
        );
    }
    for note in &plot_notes {
        progress(Progress::Note(&format!("note: {note}")));
        let _ = writeln!(markdown, "\n> plot note: {note}");
    }
    dir.write_text("report.md", &markdown)?;
    progress(Progress::Note(&format!(
        "report written to {}",
        dir.path().display()
    )));
    Ok(())
}

/// A JSON-lines file for reading a run's details (`--dump`).
pub(crate) struct DumpFile {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl DumpFile {
    pub(crate) fn create(path: &Path) -> Result<Self, EvalError> {
        let file = std::fs::File::create(path).map_err(EvalError::io("create", path))?;
        Ok(DumpFile {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        })
    }

    /// `create` for an optional path.
    pub(crate) fn open(path: Option<&Path>) -> Result<Option<Self>, EvalError> {
        path.map(Self::create).transpose()
    }

    pub(crate) fn write(&mut self, value: &impl Serialize) -> Result<(), EvalError> {
        serde_json::to_writer(&mut self.out, value).map_err(|source| EvalError::Json {
            path: self.path.clone(),
            source,
        })?;
        self.out
            .write_all(b"\n")
            .map_err(EvalError::io("write", &self.path))
    }

    pub(crate) fn finish(mut self) -> Result<(), EvalError> {
        self.out.flush().map_err(EvalError::io("write", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(f3(0.12345), "0.123");
        assert_eq!(opt3(None), "–");
        assert_eq!(ms(&None, false), "–");
        assert_eq!(embedder_cell("hash", None), "hash");
        assert_eq!(
            embedder_cell("minilm", Some(1.234)),
            "minilm (1.23 ms per text, cached)"
        );
    }

    #[test]
    fn notes_list_failed_jobs() {
        let cost = Cost::of(&crate::summary::PresetAccumulator::default().summarize("x", 0, 0.0));
        let failing = Cost {
            jobs_failed: 2,
            job_errors: vec!["boom".into()],
            ..cost.clone()
        };
        let mut md = String::new();
        notes_section(
            &mut md,
            &["a note".to_string()],
            [("ok", &cost), ("bad", &failing)],
        );
        assert!(md.contains("- a note\n"));
        assert!(md.contains("- bad: 2 job(s) failed, e.g. Some(\"boom\")"));
        assert!(!md.contains("- ok:"));
    }

    #[test]
    fn reports_are_written_with_their_plots_listed() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutputOptions {
            out: Some(dir.path().join("r")),
            overwrite: false,
        }
        .create()
        .unwrap()
        .unwrap();
        let chart = LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![crate::plot::Series {
                name: "s".into(),
                points: vec![(1.0, 0.5), (2.0, 0.7)],
            }],
            log_x: false,
            y_range: None,
        };
        let notes = std::cell::RefCell::new(Vec::new());
        let progress = |event: Progress<'_>| {
            if let Progress::Note(text) = event {
                notes.borrow_mut().push(text.to_string());
            }
        };
        write_report(&out, &[1, 2], "# r\n", &[("c".into(), chart)], &progress).unwrap();
        let md = std::fs::read_to_string(dir.path().join("r/report.md")).unwrap();
        assert!(
            md.starts_with("# r\n\n## Plots\n\n- t: ![c](plots/c.svg)"),
            "{md}"
        );
        assert!(dir.path().join("r/report.json").is_file());
        assert!(notes
            .borrow()
            .iter()
            .any(|n| n.starts_with("report written to")));
    }
}
