//! `eval probes`' markdown report and notes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::report::{f3, job_failures, ms};
use crate::zh4o::{PROBE_ACKNOWLEDGMENTS, PROBE_CHUNK, PROBE_DIALOGUE};

use super::{PresetRow, ProbeReport, ProbeSettings, Scores};

pub(super) fn notes(settings: &ProbeSettings) -> Vec<String> {
    vec![
        format!(
            "Protocol (zh4o.rs): each probe is a fresh user; its text goes in as a user message \
             at its position of dialogue {PROBE_DIALOGUE}, followed by a bot acknowledgment \
             ({} by probe id, not at random); the stream is written in batches of {} messages \
             in sessions of {}, and each query is asked (recall with the query text, budget {}) \
             after the chunk of {PROBE_CHUNK} stream messages holding its position. Nothing \
             after the last query is streamed.",
            PROBE_ACKNOWLEDGMENTS.join(" / "),
            settings.compare.batch.max(1),
            settings.session_messages,
            settings.budget
        ),
        "hit = some context item's provenance holds the inserted probe turn (a summary made \
         from it counts); probe in context = the probe's text appears in the context text; \
         answer similarity = cosine between the answer model's reply over the context items and \
         the reference reply, under the run's embedder; answer F1 = token F1 against the \
         reference (characters for Chinese)."
            .to_string(),
        "The baseline row is the same answer model with an empty context: the similarity a \
         reply gets without any memory."
            .to_string(),
        "A hit by provenance credits a summary or profile for every turn it was built from: a \
         profile rebuilt from every session summary (memorybank) and recalled first names the \
         probe turn whatever it says, so its hit rate says little; probe in context is the \
         comparison that reads the text."
            .to_string(),
    ]
}

fn scores_cells(s: &Scores) -> String {
    format!(
        "{} | {} | {} | {} | {}",
        s.queries,
        f3(s.hit_rate),
        f3(s.probe_in_context),
        f3(s.answer_similarity),
        f3(s.answer_f1)
    )
}

pub(super) fn markdown(report: &ProbeReport) -> String {
    let mut md = String::new();
    let d = &report.dataset;
    let _ = writeln!(md, "# mnemos eval probes: zh4o\n");
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} probes ({} queries) on dialogue {} ({} messages); {:.0} messages streamed per probe on average",
        d.path, d.probes, d.queries, d.dialogue, d.dialogue_messages, d.mean_stream_messages
    );
    let _ = writeln!(
        md,
        "- engine: {}, answer model {}, budget {} tokens, writes of {}, sessions of {} messages",
        report.engine.describe(),
        report.answer_model,
        report.protocol.budget,
        report.protocol.batch,
        report.protocol.session_messages
    );
    let _ = writeln!(md, "\n## Probes\n");
    md.push_str("| preset | queries | hit rate | probe in context | answer similarity | answer F1 | recall p50 ms | observe p50 ms |\n|---|---|---|---|---|---|---|---|\n");
    let _ = writeln!(
        md,
        "| (no memory) | {} | – | – |",
        scores_cells(&report.baseline)
    );
    for row in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            row.preset,
            scores_cells(&row.overall),
            ms(&row.cost.recall, false),
            ms(&row.cost.observe, false)
        );
    }
    by_difficulty(&mut md, &report.presets);
    cost(&mut md, &report.presets);
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for row in &report.presets {
        let errors = row
            .queries
            .iter()
            .filter(|r| r.model_error.is_some())
            .count();
        if errors > 0 {
            let _ = writeln!(
                md,
                "- {}: the answer model failed on {errors} query(ies) (similarity 0)",
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

fn by_difficulty(md: &mut String, rows: &[PresetRow]) {
    let difficulties: BTreeSet<&String> =
        rows.iter().flat_map(|r| r.by_difficulty.keys()).collect();
    if difficulties.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## By difficulty\n");
    md.push_str("| preset | difficulty | queries | hit rate | probe in context | answer similarity | answer F1 |\n|---|---|---|---|---|---|---|\n");
    for row in rows {
        for difficulty in &difficulties {
            if let Some(s) = row.by_difficulty.get(*difficulty) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} |",
                    row.preset,
                    difficulty,
                    scores_cells(s)
                );
            }
        }
    }
}

fn cost(md: &mut String, rows: &[PresetRow]) {
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | observe p50 / p95 ms | end-session p50 ms | recall p50 / p95 ms | answer model p50 ms | memories at the query | model calls / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        let c = &row.cost;
        let _ = writeln!(
            md,
            "| {} | {} / {} | {} | {} / {} | {} | {:.0} | {:.3} | {} | {:.0} |",
            row.preset,
            ms(&c.observe, false),
            ms(&c.observe, true),
            ms(&c.end_session, false),
            ms(&c.recall, false),
            ms(&c.recall, true),
            ms(&c.answer_model, false),
            c.final_memories,
            c.model_calls_per_turn,
            c.jobs_failed,
            c.wall_seconds
        );
    }
}
