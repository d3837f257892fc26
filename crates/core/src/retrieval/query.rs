//! What a query asks and how the answers to its parts are merged: the limits a query from
//! outside must keep, its split into questions, and superseded hits put after current ones.

use super::hit::{Adjustment, Hit};
use crate::error::{Error, Result};
use crate::model::validate_text;

/// The longest query a public search or recall takes, in characters (about 2,000 tokens: a
/// long message, not a document). What a query costs grows with its length.
pub const MAX_QUERY_CHARS: usize = 8_000;

/// The most parts a query may be split into ([`question_parts`]: its questions, plus the
/// whole query when it also holds statements); each part is embedded and ranked on its own.
pub const MAX_QUERY_PARTS: usize = 16;

/// Check what a query from outside may cost: its length and, when its questions are searched
/// one by one, how many parts that makes. A broken limit is named in the error.
pub fn validate_query(query: &str, split_questions: bool) -> Result<()> {
    validate_text("query", query)?;
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Error::invalid(format!(
            "query: {chars} characters, more than the {MAX_QUERY_CHARS} one search takes"
        )));
    }
    let parts = if split_questions {
        question_parts(query).len()
    } else {
        0
    };
    if parts > MAX_QUERY_PARTS {
        return Err(Error::invalid(format!(
            "query: asks {parts} things at once, each searched on its own; at most \
             {MAX_QUERY_PARTS} per search (ask fewer questions per query)"
        )));
    }
    Ok(())
}

/// The parts of a query worth searching on their own: each sentence that asks a question (ends
/// with `?` or `？`), plus the whole query when it also holds statements. Empty when there is
/// nothing to split (one sentence, or no question among several statements).
///
/// "What is X? And who is Y?" asks two things that rarely share words, and one search lets the
/// easier one take every slot; "It rained all day, and the café was closed. Anyway — where does
/// my sister work?" wraps its question in chat that would otherwise pull in memories about rain
/// and cafés. Each part's ranking then counts equally ([`merge_by_rank`](super::merge_by_rank) merges them).
pub fn question_parts(query: &str) -> Vec<String> {
    let sentences = mnemos_text::sentences(query);
    if sentences.len() < 2 {
        return Vec::new();
    }
    let is_question = |s: &&&str| {
        s.trim_end_matches(['"', '\'', '”', '’', ')', '）', '」', '』'])
            .ends_with(['?', '？'])
    };
    let questions: Vec<String> = sentences
        .iter()
        .filter(is_question)
        .map(|s| s.to_string())
        .collect();
    if questions.is_empty() {
        return Vec::new();
    }
    let mut parts = questions;
    if parts.len() < sentences.len() {
        parts.push(query.to_string());
    }
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
}

/// Superseded hits after every current one, scaled to score below the last current hit (their
/// own order kept), each with a `superseded` adjustment saying by how much.
pub fn current_first(hits: &mut Vec<Hit>) {
    let (mut current, mut stale): (Vec<Hit>, Vec<Hit>) =
        hits.drain(..).partition(|h| h.memory.is_current());
    let floor = current.last().map(|h| h.score);
    let top = stale.iter().map(|h| h.score).fold(0.0f32, f32::max);
    if let Some(floor) = floor.filter(|&f| top >= f && top > 0.0) {
        let scale = floor / top * 0.999;
        for hit in &mut stale {
            let before = hit.score;
            hit.score *= scale;
            hit.breakdown.adjustments.push(Adjustment {
                name: "superseded".to_string(),
                value: 1.0,
                delta: hit.score - before,
            });
        }
    }
    current.append(&mut stale);
    *hits = current;
}
