//! `eval probes --kind update`: the markdown report and its notes.

use std::fmt::Write as _;

use crate::report::{f3, job_failures, ms};

use super::{UpdateReport, UpdateRow, UpdateScores, UpdateSettings, SUPERSEDED_MARKERS};

pub(super) fn notes(settings: &UpdateSettings) -> Vec<String> {
    vec![
        format!(
            "Protocol (update_probes.rs): each probe is a fresh user; a user message stating a \
             fact goes into the first third of a host conversation (LoCoMo for English, a ZH-4O \
             dialogue of at least 200 messages for Chinese, sessions of {} messages), its update \
             into the second third, each followed by the other speaker's acknowledgment; the \
             stream stops in its last sixth and the question is asked (recall, budget {}) after \
             it. Positions are drawn from seed {}. Writes of {} messages.",
            settings.session_messages,
            settings.budget,
            settings.seed,
            settings.compare.batch.max(1)
        ),
        format!(
            "current = the current value is in the context text; stale as current = the stale \
             value is on a context line not marked superseded ({}); updated = current and not \
             stale as current (the probe's success); update hit = a context item's provenance \
             holds the update turn; answer current / stale = the answer model's reply names the \
             current / stale value.",
            SUPERSEDED_MARKERS.join(", ")
        ),
        "The update never names the stale value, and a value pair is used only in hosts whose \
         text contains neither value, so either value in the context comes from the probe."
            .to_string(),
    ]
}

fn cells(s: &UpdateScores) -> String {
    format!(
        "{} | {} | {} | **{}** | {} | {} | {} | {:.0}",
        s.probes,
        f3(s.current_in_context),
        f3(s.stale_as_current),
        f3(s.updated),
        f3(s.update_hit),
        f3(s.answer_current),
        f3(s.answer_stale),
        s.context_tokens
    )
}

const HEADER: &str = "probes | current in context | stale as current | updated | update hit | answer current | answer stale | context tokens";

pub(super) fn markdown(report: &UpdateReport) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(md, "# mnemos eval probes --kind update\n");
    let per_language: Vec<String> = d
        .probes
        .iter()
        .map(|(l, n)| format!("{n} {l} in {} hosts", d.hosts.get(l).copied().unwrap_or(0)))
        .collect();
    let _ = writeln!(
        md,
        "- hosts: `{}` (en), `{}` (zh); probes: {}; {:.0} messages streamed per probe on average; seed {}",
        d.locomo,
        d.zh4o,
        per_language.join(", "),
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
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    for row in &report.presets {
        let _ = writeln!(md, "| {} | {} |", row.preset, cells(&row.overall));
    }
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
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
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
