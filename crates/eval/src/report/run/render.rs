//! `eval run`'s markdown report and charts.

use std::fmt::Write as _;

use crate::plot::{LineChart, Series};
use crate::summary::{PresetSummary, Quality};

use super::RunReport;
use crate::report::{f3, job_failures, ms, opt3};

pub(super) fn markdown(report: &RunReport) -> String {
    let mut md = String::new();
    header(&mut md, report);
    let _ = writeln!(md, "\n## Quality (final asks)\n");
    md.push_str(QUALITY_HEADER);
    for s in &report.presets {
        md.push_str(&quality_row(&s.preset, &s.overall));
        md.push('\n');
    }
    cost(&mut md, &report.presets);
    compression(&mut md, &report.presets);
    by_category(&mut md, &report.presets);
    capacity(&mut md, &report.presets);
    sizes(&mut md, &report.presets);
    let _ = writeln!(md, "\n## Notes\n");
    for note in &report.notes {
        let _ = writeln!(md, "- {note}");
    }
    for s in &report.presets {
        job_failures(&mut md, &s.preset, s.jobs_failed, &s.job_errors);
        if s.overall.model_errors > 0 {
            let _ = writeln!(
                md,
                "- {}: the answer model failed on {} ask(s) (counted as wrong)",
                s.preset, s.overall.model_errors
            );
        }
    }
    md
}

fn header(md: &mut String, report: &RunReport) {
    let d = &report.dataset;
    let p = &report.protocol;
    let _ = writeln!(md, "# mnemos eval: {} ({})\n", d.name, p.scenario.as_str());
    let _ = writeln!(
        md,
        "- dataset: `{}` — {} conversations, {} items ({} real, {} noise), {:.0} tokens per conversation on average, {} questions, {} asks",
        d.path, d.conversations, d.real_items + d.noise_items, d.real_items, d.noise_items, d.mean_tokens_per_conversation, d.questions, d.asks
    );
    let _ = writeln!(
        md,
        "- protocol: scenario {}, noise {}, sample {}, seed {}, checkpoints {:?}",
        p.scenario.as_str(),
        p.noise.map_or("none".to_string(), |n| format!(
            "to {} tokens from {}",
            n.target_tokens, p.noise_source
        )),
        p.sample_per_category
            .map_or("all".to_string(), |n| format!("{n} per category")),
        p.sample_seed,
        p.checkpoints
    );
    let _ = writeln!(
        md,
        "- engine: {}, answer model {}, budget {} tokens, batch {}",
        report.engine.describe(),
        report.answer_model,
        report.options.budget,
        report.options.batch
    );
    if !d.dropped.is_empty() || !d.excluded.is_empty() || d.defects > 0 {
        let _ = writeln!(
            md,
            "- left out: dropped by protocol {:?}, excluded by design {:?}, {} loader defects (see `mnemos eval retrieval --defects`)",
            d.dropped, d.excluded, d.defects
        );
    }
}

const QUALITY_HEADER: &str = "| preset | asks | R@1 | R@5 | R@10 | MRR | nDCG@10 | evidence in context | choice acc | answer in context | answer F1 | judge acc | context tokens |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

fn quality_row(name: &str, q: &Quality) -> String {
    let recall: Vec<String> = q.recall_at.iter().map(|v| f3(*v)).collect();
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
        q.asks,
        recall.join(" | "),
        f3(q.mrr),
        f3(q.ndcg_at_10),
        f3(q.evidence_in_context),
        opt3(q.choice_accuracy),
        opt3(q.answer_in_context),
        opt3(q.answer_f1),
        opt3(q.judge_accuracy),
        q.mean_context_tokens
    )
}

fn cost(md: &mut String, presets: &[PresetSummary]) {
    let _ = writeln!(md, "\n## Cost\n");
    md.push_str("| preset | observe p50 / p95 ms | end-session p50 ms | recall p50 / p95 ms | answer model p50 ms | memories at end | forgotten | memory tokens | model calls / turn | of which writing / turn | calls / recall | model tokens / turn | jobs failed | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in presets {
        let _ = writeln!(
            md,
            "| {} | {} / {} | {} | {} / {} | {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} | {:.2} | {:.1} | {} | {:.0} |",
            s.preset,
            ms(&s.observe, false),
            ms(&s.observe, true),
            ms(&s.end_session, false),
            ms(&s.recall, false),
            ms(&s.recall, true),
            ms(&s.answer_model, false),
            s.final_memories,
            s.final_forgotten,
            s.final_memory_tokens,
            s.model_calls_per_turn,
            s.write_model_calls_per_turn,
            s.model_calls_per_recall,
            s.model_tokens_per_turn,
            s.jobs_failed,
            s.wall_seconds
        );
    }
}

/// Presets that build memory chains: what compression saved and what it kept.
fn compression(md: &mut String, presets: &[PresetSummary]) {
    let rows: Vec<(&str, &crate::compression::CompressionSample)> = presets
        .iter()
        .filter_map(|s| s.compression.as_ref().map(|c| (s.preset.as_str(), c)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Compression (memory chains, summed over conversations)\n"
    );
    md.push_str("| preset | nodes | node tokens (before compression) | compressed nodes | their tokens before → after | saved, compressed nodes | saved, all nodes | steps refused as unrecoverable | answers in originals | kept by compression |\n|---|---|---|---|---|---|---|---|---|---|\n");
    let rate = |r: Option<f64>| r.map_or_else(|| "–".to_string(), |r| format!("{r:.3}"));
    for (preset, c) in rows {
        let _ = writeln!(
            md,
            "| {preset} | {} | {} ({}) | {} | {} → {} | {} | {} | {} | {} | {} |",
            c.nodes,
            c.node_tokens,
            c.node_original_tokens,
            c.compressed_nodes,
            c.compressed_original_tokens,
            c.compressed_tokens,
            rate(c.saved_of_compressed()),
            rate(c.saved_of_all()),
            c.refused_nodes,
            c.answers_in_originals,
            rate(c.answers_kept_rate()),
        );
    }
}

fn by_category(md: &mut String, presets: &[PresetSummary]) {
    let categories: Vec<&String> = presets
        .first()
        .map(|s| s.by_category.keys().collect())
        .unwrap_or_default();
    if categories.len() <= 1 {
        return;
    }
    let _ = writeln!(md, "\n## By category\n");
    for category in categories {
        let _ = writeln!(md, "### {category}\n");
        md.push_str(QUALITY_HEADER);
        for s in presets {
            if let Some(q) = s.by_category.get(category) {
                md.push_str(&quality_row(&s.preset, q));
                md.push('\n');
            }
        }
        md.push('\n');
    }
}

fn capacity(md: &mut String, presets: &[PresetSummary]) {
    if !presets.iter().any(|s| s.capacity.len() > 1) {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Capacity (the same questions asked as history grows)\n"
    );
    md.push_str("| preset | checkpoint tokens | asks | R@10 | choice acc | answer in context |\n|---|---|---|---|---|---|\n");
    for s in presets {
        for point in &s.capacity {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                s.preset,
                point
                    .checkpoint
                    .map_or("own position".to_string(), |c| c.to_string()),
                point.quality.asks,
                point
                    .quality
                    .recall_at
                    .last()
                    .map_or("–".to_string(), |v| f3(*v)),
                opt3(point.quality.choice_accuracy),
                opt3(point.quality.answer_in_context)
            );
        }
    }
}

fn sizes(md: &mut String, presets: &[PresetSummary]) {
    let _ = writeln!(
        md,
        "\n## Memory over the stream (means over conversations)\n"
    );
    md.push_str("| preset | share of stream | history tokens | memories | memory tokens | bytes |\n|---|---|---|---|---|---|\n");
    for s in presets {
        // Every fifth of the stream, and its end.
        let points = s
            .sizes
            .iter()
            .filter(|p| (p.progress * 10.0).round() as i64 % 2 == 0 || p.progress >= 1.0);
        for point in points {
            let _ = writeln!(
                md,
                "| {} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} |",
                s.preset,
                point.progress,
                point.mean_history_tokens,
                point.mean_memories,
                point.mean_memory_tokens,
                point.mean_bytes
            );
        }
    }
}

/// A variant's name as a plot legend shows it: `retrieval[retriever="hybrid" hops=2
/// split_questions=true]` becomes `retrieval[hybrid, hops=2, split_questions]` (string values
/// alone, true flags by name), so long variant names stay apart in a narrow legend.
pub fn legend_label(variant: &str) -> String {
    let Some((preset, rest)) = variant.split_once('[') else {
        return variant.to_string();
    };
    let params = rest.trim_end_matches(']');
    let parts: Vec<String> = params
        .split_whitespace()
        .map(|assignment| match assignment.split_once('=') {
            Some((name, "true")) => name.to_string(),
            Some((_, value)) if value.starts_with('"') => value.trim_matches('"').to_string(),
            _ => assignment.to_string(),
        })
        .collect();
    format!("{preset}[{}]", parts.join(", "))
}

/// Recall@10, else nothing.
fn recall_at_10(q: &Quality) -> Option<f64> {
    q.recall_at.last().copied()
}

/// Choice accuracy, else answer in context.
fn accuracy(q: &Quality) -> Option<f64> {
    q.choice_accuracy.or(q.answer_in_context)
}

/// (file stem, chart) for every plot the report draws.
pub fn charts(report: &RunReport) -> Vec<(String, LineChart)> {
    let name = &report.dataset.name;
    let mut charts = Vec::new();
    let recall = capacity_series(&report.presets, recall_at_10);
    if !recall.is_empty() {
        let title = format!("{name}: Recall@10 as history grows");
        charts.push((
            "capacity-recall".to_string(),
            capacity_chart(title, "Recall@10", recall),
        ));
    }
    let accuracy_series = capacity_series(&report.presets, accuracy);
    if !accuracy_series.is_empty() {
        let title = format!("{name}: accuracy as history grows");
        let y_label = "accuracy (choice, else answer in context)";
        charts.push((
            "capacity-accuracy".to_string(),
            capacity_chart(title, y_label, accuracy_series),
        ));
    }
    let memory: Vec<Series> = report
        .presets
        .iter()
        .map(|s| Series {
            name: legend_label(&s.preset),
            points: s
                .sizes
                .iter()
                .map(|p| (p.mean_history_tokens, p.mean_memory_tokens))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !memory.is_empty() {
        charts.push((
            "memory-growth".to_string(),
            LineChart {
                title: format!("{name}: memory kept vs history"),
                x_label: "history tokens".into(),
                y_label: "memory tokens".into(),
                series: memory,
                log_x: false,
                y_range: None,
            },
        ));
    }
    charts.extend(sweep_charts(report));
    charts
}

/// One series per preset: `pick` of the checkpoint asks against the history they saw.
fn capacity_series(presets: &[PresetSummary], pick: fn(&Quality) -> Option<f64>) -> Vec<Series> {
    presets
        .iter()
        .map(|s| Series {
            name: legend_label(&s.preset),
            points: s
                .capacity
                .iter()
                .filter(|p| p.checkpoint.is_some())
                .filter_map(|p| pick(&p.quality).map(|y| (p.mean_history_tokens.max(1.0), y)))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

fn capacity_chart(title: String, y_label: &str, series: Vec<Series>) -> LineChart {
    LineChart {
        title,
        x_label: "history tokens".into(),
        y_label: y_label.into(),
        series,
        log_x: true,
        y_range: Some((0.0, 1.0)),
    }
}

/// Forgetting curves: for each sweep, quality against the memory each of its runs kept.
fn sweep_charts(report: &RunReport) -> Vec<(String, LineChart)> {
    let mut charts = Vec::new();
    for sweep in &report.sweeps {
        let variants: Vec<&PresetSummary> = sweep
            .values
            .iter()
            .filter_map(|v| {
                let name = sweep.variant(v);
                report.presets.iter().find(|s| s.preset == name)
            })
            .collect();
        let curve = |name: &str, pick: fn(&Quality) -> Option<f64>| Series {
            name: name.to_string(),
            points: variants
                .iter()
                .filter_map(|s| pick(&s.overall).map(|y| (s.final_memory_tokens, y)))
                .collect(),
        };
        let series: Vec<Series> = [
            curve("Recall@10", recall_at_10),
            curve("accuracy", accuracy),
        ]
        .into_iter()
        .filter(|s| !s.points.is_empty())
        .collect();
        if series.is_empty() {
            continue;
        }
        charts.push((
            sweep.stem(),
            LineChart {
                title: format!(
                    "{}: quality vs memory kept ({} swept)",
                    report.dataset.name, sweep.param
                ),
                x_label: "memory tokens at the end".into(),
                y_label: "Recall@10 / accuracy (choice, else answer in context)".into(),
                series,
                log_x: false,
                y_range: Some((0.0, 1.0)),
            },
        ));
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::StoreKind;
    use crate::protocol::ProtocolSpec;
    use crate::report::run::DatasetInfo;
    use crate::report::EngineSetup;
    use crate::runner::RunOptions;
    use crate::summary::{CapacityPoint, PresetAccumulator, SizePoint};
    use mnemos_presets::variants::parse_sweep;

    fn summary(name: &str, recall: f64, memory_tokens: f64) -> PresetSummary {
        let mut s = PresetAccumulator::default().summarize(name, 3, 2.0);
        s.overall = Quality {
            asks: 4,
            recall_at: vec![recall; 3],
            mrr: 0.5,
            choice_accuracy: Some(0.75),
            ..Quality::default()
        };
        s.by_category.insert("single".into(), s.overall.clone());
        s.by_category.insert("multi".into(), Quality::default());
        s.final_memory_tokens = memory_tokens;
        if name == "full" {
            s.compression = Some(crate::compression::CompressionSample {
                nodes: 4,
                node_tokens: 150,
                node_original_tokens: 250,
                compressed_nodes: 2,
                compressed_original_tokens: 200,
                compressed_tokens: 100,
                refused_nodes: 1,
                answers_in_originals: 4,
                answers_kept: 3,
            });
        }
        s.capacity = vec![
            CapacityPoint {
                checkpoint: Some(100),
                mean_history_tokens: 100.0,
                quality: s.overall.clone(),
            },
            CapacityPoint {
                checkpoint: None,
                mean_history_tokens: 400.0,
                quality: s.overall.clone(),
            },
        ];
        s.sizes = [0.5, 1.0]
            .map(|progress| SizePoint {
                progress,
                mean_history_tokens: 400.0 * progress,
                mean_memories: 3.0,
                mean_bytes: 90.0,
                mean_memory_tokens: memory_tokens,
                samples: 1,
            })
            .to_vec();
        s
    }

    fn report() -> RunReport {
        let sweep = parse_sweep("recent.window=1,2").unwrap();
        RunReport {
            mnemos: "0",
            dataset: DatasetInfo {
                name: "toy".into(),
                path: "toy.json".into(),
                conversations: 1,
                real_items: 4,
                noise_items: 0,
                mean_tokens_per_conversation: 40.0,
                questions: 4,
                asks: 8,
                dropped: BTreeMap::new(),
                excluded: BTreeMap::new(),
                defects: 0,
                contaminated_questions: 0,
                checksums: Vec::new(),
            },
            protocol: ProtocolSpec::default(),
            options: RunOptions::default(),
            engine: EngineSetup {
                store: StoreKind::Memory,
                embedder: "hash".into(),
                embedding_ms_per_text: Some(0.5),
                memory_model: "offline".into(),
            },
            embed_cache: true,
            answer_model: "offline".into(),
            judge: None,
            presets: vec![
                summary("full", 1.0, 80.0),
                summary(&sweep.variant(&sweep.values[0]), 0.25, 10.0),
                summary(&sweep.variant(&sweep.values[1]), 0.5, 20.0),
            ],
            sweeps: vec![sweep],
            notes: vec!["a note".into()],
        }
    }

    use std::collections::BTreeMap;

    #[test]
    fn markdown_has_every_section_with_a_row_per_preset() {
        let md = report().markdown();
        assert!(
            md.starts_with("# mnemos eval: toy (participation)\n"),
            "{md}"
        );
        assert!(md.contains("store memory, embedder hash (0.50 ms per text, cached)"));
        assert!(md.contains(
            "| full | 4 | 1.000 | 1.000 | 1.000 | 0.500 | 0.000 | 0.000 | 0.750 | – | – | – | 0 |"
        ));
        for section in [
            "## Cost",
            "## By category",
            "### multi",
            "## Capacity",
            "| full | own position | 4 |",
            "## Memory over the stream",
            "| recent[window=2] | 1.0 | 400 | 3 | 20 | 90 |",
            "## Notes\n\n- a note",
            "| full | 4 | 150 (250) | 2 | 200 → 100 | 0.500 | 0.400 | 1 | 4 | 0.750 |",
        ] {
            assert!(md.contains(section), "{section}\n{md}");
        }
    }

    #[test]
    fn charts_draw_capacity_memory_growth_and_each_sweep() {
        let charts = charts(&report());
        let stems: Vec<&str> = charts.iter().map(|(stem, _)| stem.as_str()).collect();
        assert_eq!(
            stems,
            [
                "capacity-recall",
                "capacity-accuracy",
                "memory-growth",
                "forgetting-recent-window"
            ]
        );
        let sweep = &charts[3].1;
        assert_eq!(sweep.series[0].name, "Recall@10");
        assert_eq!(sweep.series[0].points, vec![(10.0, 0.25), (20.0, 0.5)]);
        assert_eq!(charts[0].1.series[1].name, "recent[window=1]");
    }

    #[test]
    fn legend_labels_are_compact() {
        assert_eq!(
            legend_label("retrieval[retriever=\"hybrid\" hops=2 split_questions=true]"),
            "retrieval[hybrid, hops=2, split_questions]"
        );
        assert_eq!(legend_label("memgpt"), "memgpt");
    }
}
