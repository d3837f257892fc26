//! `eval extraction`'s markdown report, forgetting charts and fixed notes.

use std::fmt::Write as _;

use crate::plot::{LineChart, Series};
use crate::report::{f3, ms, notes_section, opt3};
use crate::scoring::Granularity;

use super::{ExtractionReport, PresetRow};

/// The notes every extraction report carries.
pub(super) const FIXED_NOTES: [&str; 4] = [
    "MOOM's extraction score (§5.2): for each human label, the best-matching extracted \
     memory (highest ROUGE-L F for ROUGE-L, highest ROUGE-2 F for ROUGE-2, highest cosine \
     for the embedding) gives the label's numbers; the memory is the prediction and the \
     label the reference, so recall is the share of a label a memory covers. Means are over \
     all labels of all dialogues (MOOM averages over labels), so a dialogue weighs by its \
     label count. MOOM's Table 1 reports ROUGE precision.",
    "Only derived memories count: active memories of kind summary, persona, chain_node, \
     fact, profile or reflection. Raw turns and exchanges (a verbatim user utterance with \
     its reply) are the dialogue itself, not an extraction.",
    "The embedding similarity is the cosine of the run's embedder (MOOM uses M3E, a \
     Chinese model, and BERTScore): comparable across presets here, not with MOOM's \
     numbers.",
    "The score is label-centred: each label takes its best memory, and extra memories are \
     never penalized, so a preset that keeps one derived memory per exchange (scmemory's \
     exchange summaries) is credited for its sheer number; read the scores next to \
     memories per dialogue (MOOM's concern is exactly that growth).",
];

pub(super) fn markdown(report: &ExtractionReport) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(md, "# mnemos eval extraction: {}\n", d.name);
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} dialogues, {} messages, {} labels ({:.1} per dialogue); {} unlabelled dialogues left out, {} loader defects",
        d.path,
        d.dialogues,
        d.messages,
        d.labels,
        d.labels as f64 / d.dialogues.max(1) as f64,
        d.unlabelled_dialogues_left_out,
        d.defects
    );
    let _ = writeln!(
        md,
        "- engine: {}, writes of {} turns{}",
        report.engine.describe(),
        report.protocol.batch,
        report
            .protocol
            .session_messages
            .map_or(String::new(), |n| format!(", sessions of {n} messages"))
    );
    for (index, granularity) in report.protocol.granularities.iter().enumerate() {
        scores_table(&mut md, &report.presets, index, *granularity);
    }
    cost(&mut md, &report.presets);
    notes_section(
        &mut md,
        &report.notes,
        report.presets.iter().map(|r| (r.preset.as_str(), &r.cost)),
    );
    md
}

fn scores_table(md: &mut String, rows: &[PresetRow], index: usize, granularity: Granularity) {
    let title = match granularity {
        Granularity::Char => "ROUGE on characters",
        Granularity::Word => "ROUGE on words (jieba for Chinese)",
    };
    let _ = writeln!(md, "\n## Extraction, {title} (means over labels)\n");
    md.push_str("| preset | labels | memories / dialogue | ROUGE-L P | ROUGE-L R | ROUGE-L F | ROUGE-2 P | ROUGE-2 R | ROUGE-2 F | embedding | observe p50 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        let Some(score) = row.scores.get(index) else {
            continue;
        };
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.preset,
            row.labels,
            row.memories_per_dialogue,
            f3(score.rouge_l.precision),
            f3(score.rouge_l.recall),
            f3(score.rouge_l.f),
            f3(score.rouge_2.precision),
            f3(score.rouge_2.recall),
            f3(score.rouge_2.f),
            opt3(row.embedding),
            ms(&row.cost.observe, false)
        );
    }
}

fn cost(md: &mut String, rows: &[PresetRow]) {
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | extracted by kind | observe p50 / p95 ms | end-session p50 ms | memories at end (all kinds) | model calls / turn | model tokens / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        let kinds: Vec<String> = row
            .memories_by_kind
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let c = &row.cost;
        let _ = writeln!(
            md,
            "| {} | {} | {} / {} | {} | {:.0} | {:.3} | {:.1} | {} | {:.0} |",
            row.preset,
            if kinds.is_empty() {
                "–".to_string()
            } else {
                kinds.join(", ")
            },
            ms(&c.observe, false),
            ms(&c.observe, true),
            ms(&c.end_session, false),
            c.final_memories,
            c.model_calls_per_turn,
            c.model_tokens_per_turn,
            c.jobs_failed,
            c.wall_seconds
        );
    }
}

/// The quality a forgetting chart plots.
#[derive(Clone, Copy)]
enum Measure {
    RougeL,
    Rouge2,
    Cosine,
}

impl Measure {
    /// The row's value on the first granularity.
    fn of(self, row: &PresetRow) -> Option<f64> {
        let score = row.scores.first()?;
        match self {
            Measure::RougeL => Some(score.rouge_l.f),
            Measure::Rouge2 => Some(score.rouge_2.f),
            Measure::Cosine => row.embedding,
        }
    }
}

/// Forgetting curves (MOOM Fig. 3): for each sweep, extraction quality against the memories
/// each run kept per dialogue; every sweep is one line, and the runs of the same preset that
/// are not part of a sweep are single points beside them (e.g. no forgetting at all).
pub(super) fn forgetting_charts(report: &ExtractionReport) -> Vec<(String, LineChart)> {
    if report.sweeps.is_empty() {
        return Vec::new();
    }
    let granularity = report
        .protocol
        .granularities
        .first()
        .map_or("", |g| match g {
            Granularity::Char => "characters",
            Granularity::Word => "words",
        });
    let measures = [
        (
            Measure::RougeL,
            format!("ROUGE-L F ({granularity})"),
            "forgetting-rouge-l",
        ),
        (
            Measure::Rouge2,
            format!("ROUGE-2 F ({granularity})"),
            "forgetting-rouge-2",
        ),
        (
            Measure::Cosine,
            "embedding cosine".to_string(),
            "forgetting-cosine",
        ),
    ];
    let mut charts = Vec::new();
    for (measure, name, stem) in measures {
        let series = forgetting_series(report, measure);
        if series.is_empty() {
            continue;
        }
        charts.push((
            stem.to_string(),
            LineChart {
                title: format!("{}: {name} vs memories kept", report.dataset.name),
                x_label: "extracted memories per dialogue at the end".into(),
                y_label: name,
                series,
                log_x: false,
                y_range: None,
            },
        ));
    }
    charts
}

/// One line per sweep, then a point for every other run of a swept preset.
fn forgetting_series(report: &ExtractionReport, measure: Measure) -> Vec<Series> {
    let swept: Vec<String> = report
        .sweeps
        .iter()
        .flat_map(|s| s.values.iter().map(|v| s.variant(v)))
        .collect();
    let mut series: Vec<Series> = report
        .sweeps
        .iter()
        .map(|sweep| Series {
            name: sweep.label(),
            points: sweep
                .values
                .iter()
                .filter_map(|v| {
                    let row = report
                        .presets
                        .iter()
                        .find(|r| r.preset == sweep.variant(v))?;
                    Some((row.memories_per_dialogue, measure.of(row)?))
                })
                .collect(),
        })
        .collect();
    for row in &report.presets {
        let same_preset = report
            .sweeps
            .iter()
            .any(|s| row.preset == s.preset || row.preset.starts_with(&format!("{}[", s.preset)));
        if same_preset && !swept.contains(&row.preset) {
            if let Some(y) = measure.of(row) {
                series.push(Series {
                    name: row.preset.clone(),
                    points: vec![(row.memories_per_dialogue, y)],
                });
            }
        }
    }
    series.retain(|s| !s.points.is_empty());
    series
}
