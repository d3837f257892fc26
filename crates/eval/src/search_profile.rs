//! `mnemos bench search --profile`: where one search's time goes, stage by stage (the
//! engine's own [`SearchTimings`]), as medians over many searches, beside the whole search's
//! median and what serializing its hits costs.

use std::time::Instant;

use serde::Serialize;

use mnemos_core::retrieval::RetrieverKind;
use mnemos_core::UserKey;
use mnemos_engine::{Engine, SearchRequest, SearchTimings};

use crate::error::EvalError;

/// One stage's share of a search.
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    pub stage: &'static str,
    /// Median over the searches, in microseconds.
    pub median_us: f64,
    pub mean_us: f64,
}

/// Medians of every stage, and of the whole search.
#[derive(Clone, Debug, Serialize)]
pub struct StageProfile {
    pub searches: usize,
    pub stages: Vec<StageRow>,
    /// The whole `Engine::search` call, median, in microseconds.
    pub search_median_us: f64,
    /// Hits returned per search, on average.
    pub mean_hits: f64,
}

/// The stages of [`SearchTimings`] in pipeline order, in nanoseconds.
fn stage_nanos(t: &SearchTimings) -> [(&'static str, u64); 16] {
    let us = |x: u64| x.saturating_mul(1000);
    let s = &t.stages;
    [
        ("index check", t.index_ns),
        ("query analysis", t.analyze_ns),
        ("query embedding", us(t.embed_us)),
        ("bm25", s.bm25_ns),
        ("dense scan", s.dense_ns),
        ("fusion", s.fusion_ns),
        ("context/speaker/date", s.signals_ns),
        ("learned ranker", s.ranker_ns),
        ("second hop", s.second_hop_ns),
        ("candidates", s.assemble_ns),
        ("relevance", t.relevance_ns),
        ("rows", t.rows_ns),
        ("explanations", t.explain_ns),
        ("rerank", us(t.rerank_us)),
        ("select", t.select_ns),
        ("serialize", 0),
    ]
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Run every query once with the hybrid retriever and profile it.
pub fn profile(
    engine: &Engine,
    user: &UserKey,
    queries: &[String],
    top_k: usize,
) -> Result<StageProfile, EvalError> {
    let mut per_stage: Vec<Vec<f64>> = Vec::new();
    let mut totals = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    for query in queries {
        let mut request = SearchRequest::new(user.clone(), query.clone());
        request.retriever = RetrieverKind::Hybrid;
        request.top_k = Some(top_k);
        let started = Instant::now();
        let results = engine.search(&request)?;
        totals.push(started.elapsed().as_secs_f64() * 1e6);
        let started = Instant::now();
        let body = serde_json::to_vec(&results.hits)
            .map_err(|e| EvalError::Invalid(format!("bench search: {e}")))?;
        let serialize_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        std::hint::black_box(body);
        hits += results.hits.len();
        let mut stages = stage_nanos(&results.timings);
        if let Some(last) = stages.last_mut() {
            last.1 = serialize_ns;
        }
        per_stage.resize(stages.len(), Vec::new());
        for (column, (_, ns)) in per_stage.iter_mut().zip(stages) {
            column.push(ns as f64 / 1000.0);
        }
    }
    let names = stage_nanos(&SearchTimings::default()).map(|(name, _)| name);
    let stages = names
        .into_iter()
        .zip(per_stage.iter_mut())
        .map(|(stage, column)| StageRow {
            stage,
            mean_us: column.iter().sum::<f64>() / column.len().max(1) as f64,
            median_us: median(column),
        })
        .collect();
    Ok(StageProfile {
        searches: queries.len(),
        stages,
        search_median_us: median(&mut totals),
        mean_hits: hits as f64 / queries.len().max(1) as f64,
    })
}

/// The profile as a table.
pub fn render(profile: &StageProfile) -> String {
    let mut out = format!(
        "\nstage profile (hybrid, {} searches, {:.1} hits each)\n\
         stage                  median µs   mean µs\n",
        profile.searches, profile.mean_hits
    );
    for row in &profile.stages {
        out.push_str(&format!(
            "{:<22} {:>9.1} {:>9.1}\n",
            row.stage, row.median_us, row.mean_us
        ));
    }
    out.push_str(&format!(
        "{:<22} {:>9.1}   (the whole search; serialize not included)\n",
        "search", profile.search_median_us
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn every_stage_has_a_distinct_name() {
        let names = stage_nanos(&SearchTimings::default()).map(|(name, _)| name);
        let distinct: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
    }
}
