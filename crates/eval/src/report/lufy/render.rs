//! `eval lufy`'s text table (AUC) and markdown report (agreement).

use std::fmt::Write as _;

use crate::report::{f3, ms, notes_section};
use crate::scoring::ImportanceAgreement;

use super::{AgreementReport, AucReport, Table12Row};

pub(super) fn auc_text(report: &AucReport) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
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
    let _ = writeln!(text, "model: {}\n", report.model);
    let _ = writeln!(
        text,
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
        let _ = writeln!(
            text,
            "{:<11} {:>7} {:>15.3} {:>12.3} {:>9.3} {:>9.3}",
            row.score, auc, row.median_important, row.median_other, p50, p95
        );
    }
    text
}

pub(super) fn agreement_notes(batch: usize) -> Vec<String> {
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
         preset that forgets at random matches it on average. The per-session table counts \
         verbatim keeps; its random row keeps the same share of every session at random (mean \
         of 200 seeded draws); its annotators row is, for every ordered pair of annotators, the \
         share of one's important utterances the other marked too, averaged over pairs."
            .to_string(),
        "Questions: every session's questions are asked after the conversation's last session \
         closed. Answer in context: the normalized gold answer appears in the recalled context; \
         token F1: the memory model's answer from the context against the gold answer. Evidence \
         in context is weak here: the file names no evidence turns, so any turn of the \
         question's session counts."
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

pub(super) fn agreement_markdown(report: &AgreementReport) -> String {
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
        "- engine: {}, writes of {} turns",
        report.engine.describe(),
        report.batch
    );
    let annotators: Vec<&String> = report.base.per_annotator.keys().collect();
    table12(&mut md, report);
    qa_table(&mut md, report);
    kept_table(&mut md, report, &annotators);
    verbatim_table(&mut md, report, &annotators);
    notes_section(
        &mut md,
        &report.notes,
        report.presets.iter().map(|r| (r.preset.as_str(), &r.cost)),
    );
    md
}

fn kept_table(md: &mut String, report: &AgreementReport, annotators: &[&String]) {
    let header: Vec<&str> = annotators.iter().map(|a| a.as_str()).collect();
    let _ = writeln!(md, "\n## Share of kept user utterances marked important\n");
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
        agreement_cells(&report.base, annotators),
        f3(report.base.mean)
    );
    for row in &report.presets {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:+.3} | {} | {:.0} |",
            row.preset,
            row.agreement.kept,
            f3(row.kept_share),
            agreement_cells(&row.agreement, annotators),
            f3(row.agreement.mean),
            row.mean_over_base,
            ms(&row.cost.observe, false),
            row.cost.wall_seconds
        );
    }
}

fn verbatim_table(md: &mut String, report: &AgreementReport, annotators: &[&String]) {
    let header: Vec<&str> = annotators.iter().map(|a| a.as_str()).collect();
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
            agreement_cells(&row.verbatim, annotators),
            f3(row.verbatim.mean),
            row.verbatim.mean - report.base.mean
        );
    }
}

fn table12_line(md: &mut String, row: &Table12Row) {
    let cells: Vec<String> = row
        .sessions
        .iter()
        .map(|v| v.map_or_else(|| "–".to_string(), f3))
        .collect();
    let _ = writeln!(
        md,
        "| {} | {} | {} |",
        row.row,
        cells.join(" | "),
        f3(row.overall)
    );
}

/// LUFY Table 12: agreement per session number and overall.
fn table12(md: &mut String, report: &AgreementReport) {
    let columns: Vec<String> = report
        .session_numbers
        .iter()
        .map(|n| format!("S{n}"))
        .collect();
    let _ = writeln!(
        md,
        "\n## Agreement with the annotators per session (LUFY Table 12; verbatim keeps)\n"
    );
    let _ = writeln!(md, "| row | {} | overall |", columns.join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(2 + columns.len()));
    for row in &report.presets {
        table12_line(md, &row.table12);
    }
    table12_line(md, &report.random);
    table12_line(md, &report.annotators);
}

/// The session questions, asked after each conversation.
fn qa_table(md: &mut String, report: &AgreementReport) {
    let _ = writeln!(
        md,
        "\n## LUFY questions ({} asked after each conversation's last session)\n",
        report.questions
    );
    let _ = writeln!(
        md,
        "| preset | asks | answer in context | answer token F1 | evidence in context | context tokens | model calls / turn |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let opt = |v: Option<f64>| v.map_or_else(|| "–".to_string(), f3);
    for row in &report.presets {
        let q = &row.qa;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.0} | {:.2} |",
            row.preset,
            q.asks,
            opt(q.answer_in_context),
            opt(q.answer_f1),
            f3(q.evidence_in_context),
            q.mean_context_tokens,
            row.cost.model_calls_per_turn
        );
    }
}
