//! `eval probes --kind update`: the markdown report and its notes.

use std::fmt::Write as _;

use crate::report::{f3, job_failures, ms};

use super::{UpdateReport, UpdateRow, UpdateScores, UpdateSettings, SUPERSEDED_MARKERS};

pub(super) fn notes(settings: &UpdateSettings) -> Vec<String> {
    vec![
        format!(
            "Protocol (update_probes.rs): each probe is a fresh user streamed through a window \
             of {} host messages (LoCoMo for English; a ZH-4O dialogue of at least 200 messages \
             for Chinese, sessions of {} messages, one message an hour); the probe's user lines \
             are inserted into it, each followed by the other speaker's acknowledgment, and the \
             question is asked after the window (recall, budget {}). Templates: the {} half. \
             Positions are drawn from seed {}. Writes of {} messages.",
            settings.window,
            settings.session_messages,
            settings.budget,
            settings.half.as_str(),
            settings.seed,
            settings.compare.batch.max(1)
        ),
        format!(
            "updated = the current value (for a negation: the negating line) is in the context \
             and no earlier value is on a line not marked superseded ({}); then-valid = for a \
             question about the past (as_of), the value valid then is in the context; wrong \
             supersession = a distractor (another person's value, a hypothetical, a quote) gave \
             the first statement's memory an end of validity; reinforced = one current fact \
             counts both statements of a repeat.",
            SUPERSEDED_MARKERS.join(", ")
        ),
        "No value of a probe appears in its host window, so a value in the context comes from \
         the probe."
            .to_string(),
    ]
}

fn share(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), f3)
}

fn cells(s: &UpdateScores) -> String {
    format!(
        "{} | **{}** | {} | {} | {} | {} | {} | {} | {} | {:.0}",
        s.probes,
        share(s.updated),
        share(s.stale_as_current),
        share(s.then_valid),
        share(s.wrong_supersession),
        share(s.distractor_kept),
        share(s.reinforced),
        f3(s.succeeded),
        f3(s.answer_current),
        s.context_tokens
    )
}

const HEADER: &str = "probes | updated | stale as current | then-valid (as_of) | wrong supersession | distractor: fact kept in context | reinforced | all probes succeeded | answer current | context tokens";

pub(super) fn markdown(report: &UpdateReport) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(
        md,
        "# mnemos eval probes --kind update ({} half)\n",
        d.half.as_str()
    );
    let per_language: Vec<String> = d
        .probes
        .iter()
        .map(|(l, n)| format!("{n} {l} in {} hosts", d.hosts.get(l).copied().unwrap_or(0)))
        .collect();
    let kinds: Vec<String> = d.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(
        md,
        "- hosts: `{}` (en), `{}` (zh); probes: {}; by kind: {}; {:.0} messages streamed per probe on average; seed {}",
        d.locomo,
        d.zh4o,
        per_language.join(", "),
        kinds.join(", "),
        d.mean_stream_items,
        d.seed
    );
    let _ = writeln!(
        md,
        "- engine: {}, answer model {}, budget {} tokens",
        report.engine.describe(),
        report.answer_model,
        report.budget
    );
    let _ = writeln!(md, "\n## Update probes\n");
    let _ = writeln!(md, "| preset | {HEADER} |");
    let _ = writeln!(md, "|{}", "---|".repeat(11));
    for row in &report.presets {
        let _ = writeln!(md, "| {} | {} |", row.preset, cells(&row.overall));
    }
    grouped(&mut md, "By kind", &report.presets, |r| &r.by_kind);
    grouped(&mut md, "By language", &report.presets, |r| &r.by_language);
    grouped(&mut md, "By slot", &report.presets, |r| &r.by_slot);
    cost(&mut md, &report.presets);
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for row in &report.presets {
        let errors = row
            .probes
            .iter()
            .filter(|r| r.model_error.is_some())
            .count();
        if errors > 0 {
            let _ = writeln!(
                md,
                "- {}: the answer model failed on {errors} probe(s)",
                row.preset
            );
        }
        job_failures(
            &mut md,
            &row.preset,
            row.cost.jobs_failed,
            &row.cost.job_errors,
        );
    }
    md
}

fn grouped(
    md: &mut String,
    title: &str,
    rows: &[UpdateRow],
    groups: impl Fn(&UpdateRow) -> &std::collections::BTreeMap<String, UpdateScores>,
) {
    let _ = writeln!(md, "\n## {title}\n");
    let _ = writeln!(md, "| preset | group | {HEADER} |");
    let _ = writeln!(md, "|{}", "---|".repeat(12));
    for row in rows {
        for (group, scores) in groups(row) {
            let _ = writeln!(md, "| {} | {group} | {} |", row.preset, cells(scores));
        }
    }
}

fn cost(md: &mut String, rows: &[UpdateRow]) {
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | observe p50 ms | recall p50 / p95 ms | memories at the question | model calls / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|\n");
    for row in rows {
        let c = &row.cost;
        let _ = writeln!(
            md,
            "| {} | {} | {} / {} | {:.0} | {:.3} | {} | {:.0} |",
            row.preset,
            ms(&c.observe, false),
            ms(&c.recall, false),
            ms(&c.recall, true),
            c.final_memories,
            c.model_calls_per_turn,
            c.jobs_failed,
            c.wall_seconds
        );
    }
}
