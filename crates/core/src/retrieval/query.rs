//! What a query asks and how the answers to its parts are merged: the limits a query from
//! outside must keep, its split into questions, and superseded hits put after current ones.

use std::collections::HashMap;

use super::hit::{Adjustment, Hit};
use crate::error::{Error, Result};
use crate::model::{validate_text, KindTag, Memory, MemoryId};

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

/// A fact whose words its stating turn (also a hit) holds adds nothing to that turn: drop it,
/// so one statement is not returned twice.
pub fn without_repeated_facts(hits: &mut Vec<Hit>) {
    let turns: HashMap<MemoryId, String> = hits
        .iter()
        .filter(|h| h.memory.kind.tag() == KindTag::Turn)
        .map(|h| (h.memory.id, h.memory.text.clone()))
        .collect();
    hits.retain(|h| {
        let source = h
            .memory
            .metadata
            .get(Memory::FACT_SOURCE_KEY)
            .and_then(|v| v.parse::<MemoryId>().ok());
        let repeated = source
            .and_then(|id| turns.get(&id))
            .is_some_and(|turn| turn.contains(h.memory.text.trim()));
        !(h.memory.kind.tag() == KindTag::Fact && repeated)
    });
}

/// The rows one search has read, by memory: `None` for a memory the store no longer holds
/// as active.
pub type FactRows = HashMap<MemoryId, Option<Memory>>;

/// The turn a fact was extracted from, for a fact that names it.
pub fn stating_turn(memory: &Memory) -> Option<MemoryId> {
    if memory.kind.tag() != KindTag::Fact {
        return None;
    }
    memory.metadata.get(Memory::FACT_SOURCE_KEY)?.parse().ok()
}

/// Is the candidate `id` a hit given the rows read: active, and not a fact whose stating
/// turn (read because it is a candidate too) holds its words (see [`without_repeated_facts`]).
pub fn is_hit(id: MemoryId, rows: &FactRows) -> bool {
    let Some(Some(memory)) = rows.get(&id) else {
        return false;
    };
    let turn = stating_turn(memory).and_then(|turn| rows.get(&turn)?.as_ref());
    !turn.is_some_and(|turn| {
        turn.kind.tag() == KindTag::Turn && turn.text.contains(memory.text.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MemoryKind, Metadata, Moment, Role, Scope, Turn, TurnId};

    fn turn(text: &str) -> Memory {
        Memory::from_turn(&Turn {
            id: TurnId::new(),
            scope: Scope::new("t", "u", "a", "s").unwrap(),
            role: Role::User,
            speaker: None,
            text: text.into(),
            at: Moment::default(),
            metadata: Metadata::new(),
            key: None,
        })
    }

    fn fact_of(source: &Memory, text: &str) -> Memory {
        let mut fact = turn(text);
        fact.kind = MemoryKind::Fact;
        fact.metadata
            .insert(Memory::FACT_SOURCE_KEY.to_string(), source.id.to_string());
        fact
    }

    #[test]
    fn a_fact_its_read_stating_turn_repeats_is_not_a_hit() {
        let said = turn("I moved to Lisbon in May.");
        let repeated = fact_of(&said, "moved to Lisbon");
        let new = fact_of(&said, "works at a bakery");
        let mut rows = FactRows::new();
        for m in [&repeated, &new] {
            rows.insert(m.id, Some(m.clone()));
        }
        // The turn not read (not a candidate): the fact stands.
        assert!(is_hit(repeated.id, &rows));
        rows.insert(said.id, Some(said.clone()));
        assert!(!is_hit(repeated.id, &rows));
        assert!(is_hit(new.id, &rows), "a fact the turn does not hold stays");
        assert!(is_hit(said.id, &rows));
        // Forgotten (read as inactive) or never read: not a hit.
        rows.insert(said.id, None);
        assert!(!is_hit(said.id, &rows));
        assert!(
            is_hit(repeated.id, &rows),
            "an inactive turn repeats nothing"
        );
        assert!(!is_hit(MemoryId::new(), &rows));
    }
}
