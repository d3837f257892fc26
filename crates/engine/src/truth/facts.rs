//! Facts: what a user's turns state, one `Fact` memory per statement, keyed by subject, slot
//! and qualifier so a later statement of the same key can replace it.
//!
//! A fact memory's text is the clause that stated it, in the speaker's own words (never
//! rewritten or translated); what it means is in its metadata (`fact.*` keys), which is also
//! how the user's [`FactTable`] is rebuilt from the store.

use std::collections::{BTreeSet, HashMap};

use mnemos_core::{Memory, MemoryId, MemoryKind, MemoryState, Metadata, Metrics, Timestamp, Turn};
use mnemos_core::{Role, TurnId};
use mnemos_text::{Slot, Statement, Subject};

/// Metadata keys of a fact memory.
pub const SUBJECT_KEY: &str = "fact.subject";
pub const SLOT_KEY: &str = "fact.slot";
pub const QUALIFIER_KEY: &str = "fact.qualifier";
pub const VALUE_KEY: &str = "fact.value";
pub const VALUE_NORM_KEY: &str = "fact.value_key";
pub const NEGATED_KEY: &str = "fact.negated";
/// The raw-turn memory of the turn that stated it.
pub const SOURCE_KEY: &str = Memory::FACT_SOURCE_KEY;
/// The stating turn said nothing but its facts (so when every fact of it is replaced, the turn
/// itself is no longer current).
pub const WHOLE_TURN_KEY: &str = "fact.whole_turn";

/// The name of a slot as stored and shown.
pub fn slot_name(slot: Slot) -> &'static str {
    match slot {
        Slot::Residence => "residence",
        Slot::Employer => "employer",
        Slot::Job => "job",
        Slot::RelationshipStatus => "relationship_status",
        Slot::Partner => "partner",
        Slot::Child => "child",
        Slot::Pet => "pet",
        Slot::Preference => "preference",
        Slot::Likes => "likes",
        Slot::Diet => "diet",
        Slot::Plan => "plan",
        Slot::Quantity => "quantity",
        Slot::Age => "age",
        Slot::Date => "date",
        Slot::Status => "status",
        Slot::Role => "role",
        Slot::Headquarters => "headquarters",
    }
}

/// Keys that hold several values at once: a new value adds, it does not replace (only a
/// negation or a correction ends one). Things one likes; and children named by their relation
/// ("my son Leo", later "my son Max": two sons), while "the baby" or "our little one" (the
/// qualifier `child`, `孩子`) is one child whose name can change.
pub fn is_multi_valued(slot: &str, qualifier: &str) -> bool {
    match slot {
        "likes" => true,
        "child" => !matches!(qualifier, "" | "child" | "孩子"),
        _ => false,
    }
}

/// Who speaks a turn, for first-person statements: its speaker's name, or its role.
pub fn speaker_id(turn: &Turn) -> String {
    match &turn.speaker {
        Some(name) => name.trim().to_lowercase(),
        None => turn.role.as_str().to_string(),
    }
}

/// Whether a turn's statements are facts about anyone: lines of a named speaker, and the
/// user's own lines (an unnamed assistant's "I'm an AI" is not a fact about a person).
pub fn states_facts(turn: &Turn) -> bool {
    turn.speaker.is_some() || turn.role == Role::User
}

/// The stored key of a statement's subject, resolved against the turn's speaker: a person is
/// the same subject whether they say "I" or someone else names them.
pub fn subject_key(subject: &Subject, speaker: &str) -> String {
    match subject {
        Subject::Speaker => format!("who:{speaker}"),
        Subject::Named(name) => format!("who:{}", name.trim().to_lowercase()),
        Subject::Related(relation) => {
            format!("who:{speaker}/{}", relation.trim().to_lowercase())
        }
        Subject::Thing(thing) => format!("thing:{}", thing.trim().to_lowercase()),
    }
}

/// One fact as the table keeps it (from a fact memory's metadata).
#[derive(Clone, Debug, PartialEq)]
pub struct FactEntry {
    pub id: MemoryId,
    pub agent: String,
    /// The clause that stated it.
    pub text: String,
    /// Who said it (the stating turn's speaker name), when named.
    pub speaker: Option<String>,
    pub subject: String,
    pub slot: String,
    pub qualifier: String,
    pub value: String,
    pub value_key: String,
    pub negated: bool,
    pub source: Option<MemoryId>,
    pub whole_turn: bool,
    pub valid_from: Timestamp,
    pub valid_to: Option<Timestamp>,
    pub superseded_by: Option<MemoryId>,
    pub round: u64,
    pub provenance: Vec<TurnId>,
    pub metrics: Metrics,
}

impl FactEntry {
    /// The entry of a fact memory (`None` for other memories, or facts without a key).
    pub fn of(memory: &Memory) -> Option<FactEntry> {
        if memory.kind != MemoryKind::Fact || !memory.is_active() {
            return None;
        }
        let get = |key: &str| memory.metadata.get(key).cloned();
        Some(FactEntry {
            id: memory.id,
            agent: memory.scope.agent.clone(),
            text: memory.text.clone(),
            speaker: memory.speaker().map(str::to_string),
            subject: get(SUBJECT_KEY)?,
            slot: get(SLOT_KEY)?,
            qualifier: get(QUALIFIER_KEY).unwrap_or_default(),
            value: get(VALUE_KEY).unwrap_or_default(),
            value_key: get(VALUE_NORM_KEY).unwrap_or_default(),
            negated: get(NEGATED_KEY).is_some_and(|v| v == "true"),
            source: get(SOURCE_KEY).and_then(|v| v.parse().ok()),
            whole_turn: get(WHOLE_TURN_KEY).is_some_and(|v| v == "true"),
            valid_from: memory.valid_from,
            valid_to: memory.valid_to,
            superseded_by: memory.superseded_by,
            round: memory.created.round,
            provenance: memory.provenance.clone(),
            metrics: memory.metrics.clone(),
        })
    }

    pub fn is_current(&self) -> bool {
        self.valid_to.is_none()
    }

    /// Same subject, slot and qualifier as `other` (qualifiers and things loosely: one's words
    /// within the other's, see [`loosely_equal`]).
    pub fn same_key(&self, subject: &str, slot: &str, qualifier: &str) -> bool {
        self.slot == slot
            && subjects_match(&self.subject, subject)
            && loosely_equal(&self.qualifier, qualifier)
    }
}

/// Subjects match when equal, or for things when one's words hold the other's ("project" and
/// "project apollo").
fn subjects_match(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.strip_prefix("thing:"), b.strip_prefix("thing:")) {
        (Some(x), Some(y)) => words_within(x, y),
        _ => false,
    }
}

/// Two normalized qualifiers name the same thing: equal, both empty, or one's words all among
/// the other's ("kilometr week" and "kilometr run week"), or at least half of their words
/// shared.
pub fn loosely_equal(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.is_empty() || b.is_empty() {
        return false;
    }
    words_within(a, b) || jaccard(a, b) >= 0.5
}

fn words(text: &str) -> BTreeSet<&str> {
    text.split_whitespace().collect()
}

/// One text's words are all among the other's (either way round).
fn words_within(a: &str, b: &str) -> bool {
    let (x, y) = (words(a), words(b));
    !x.is_empty() && !y.is_empty() && (x.is_subset(&y) || y.is_subset(&x))
}

fn jaccard(a: &str, b: &str) -> f64 {
    let (x, y) = (words(a), words(b));
    let union = x.union(&y).count();
    if union == 0 {
        return 0.0;
    }
    x.intersection(&y).count() as f64 / union as f64
}

/// Two values are the same value: equal normalized forms, or one holding the other as whole
/// words ("porto" and "porto, portugal").
pub fn same_value(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a.chars().count() < 2 || b.chars().count() < 2 {
        return false;
    }
    let cjk = mnemos_text::has_cjk(a) || mnemos_text::has_cjk(b);
    if cjk {
        return a.contains(b) || b.contains(a);
    }
    words_within(a, b)
}

/// A user's facts (current and replaced) of every agent, by id, with the facts each turn
/// stated: built from the store's fact memories, kept in step by the engine's writes.
#[derive(Clone, Debug, Default)]
pub struct FactTable {
    entries: Vec<FactEntry>,
    by_id: HashMap<MemoryId, usize>,
}

impl FactTable {
    /// The table of these fact memories (others are skipped).
    pub fn of(memories: &[Memory]) -> FactTable {
        let mut table = FactTable::default();
        for memory in memories {
            table.upsert(memory);
        }
        table
    }

    /// Add or replace the entry of a fact memory; a memory that is no fact (or forgotten) drops
    /// its entry.
    pub fn upsert(&mut self, memory: &Memory) {
        match (FactEntry::of(memory), self.by_id.get(&memory.id).copied()) {
            (Some(entry), Some(at)) => self.entries[at] = entry,
            (Some(entry), None) => {
                self.by_id.insert(entry.id, self.entries.len());
                self.entries.push(entry);
            }
            (None, Some(_)) => self.remove(memory.id),
            (None, None) => {}
        }
    }

    pub fn remove(&mut self, id: MemoryId) {
        if self.by_id.remove(&id).is_some() {
            self.entries.retain(|e| e.id != id);
            self.by_id = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.id, i))
                .collect();
        }
    }

    pub fn get(&self, id: MemoryId) -> Option<&FactEntry> {
        self.by_id.get(&id).and_then(|&i| self.entries.get(i))
    }

    pub fn get_mut(&mut self, id: MemoryId) -> Option<&mut FactEntry> {
        let at = *self.by_id.get(&id)?;
        self.entries.get_mut(at)
    }

    /// Every fact, oldest first (as built and appended).
    pub fn entries(&self) -> &[FactEntry] {
        &self.entries
    }

    /// Current facts of `agent` with this key.
    pub fn current<'a>(
        &'a self,
        agent: &'a str,
        subject: &'a str,
        slot: &'a str,
        qualifier: &'a str,
    ) -> impl Iterator<Item = &'a FactEntry> + 'a {
        self.entries.iter().filter(move |e| {
            e.agent == agent && e.is_current() && e.same_key(subject, slot, qualifier)
        })
    }

    /// The facts a turn memory stated.
    pub fn stated_by(&self, source: MemoryId) -> impl Iterator<Item = &FactEntry> + '_ {
        self.entries
            .iter()
            .filter(move |e| e.source == Some(source))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A fact memory for `statement` of `turn` (whose raw-turn memory is `source`): its text is the
/// clause that stated it, its key and value are in its metadata.
pub fn fact_memory(
    turn: &Turn,
    source: &Memory,
    statement: &Statement,
    whole_turn: bool,
) -> Memory {
    let speaker = speaker_id(turn);
    let clause = turn
        .text
        .get(statement.span.clone())
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(turn.text.as_str());
    let mut metadata = Metadata::new();
    for key in [
        mnemos_core::Memory::SPEAKER_KEY,
        mnemos_core::Memory::ROLE_KEY,
    ] {
        if let Some(value) = source.metadata.get(key) {
            metadata.insert(key.to_string(), value.clone());
        }
    }
    let fields = [
        (SUBJECT_KEY, subject_key(&statement.subject, &speaker)),
        (SLOT_KEY, slot_name(statement.slot).to_string()),
        (QUALIFIER_KEY, statement.qualifier.clone()),
        (VALUE_KEY, statement.value.clone()),
        (VALUE_NORM_KEY, statement.value_key.clone()),
        (SOURCE_KEY, source.id.to_string()),
    ];
    for (key, value) in fields {
        metadata.insert(key.to_string(), value);
    }
    if statement.negated {
        metadata.insert(NEGATED_KEY.to_string(), "true".to_string());
    }
    if whole_turn {
        metadata.insert(WHOLE_TURN_KEY.to_string(), "true".to_string());
    }
    Memory {
        id: MemoryId::new(),
        scope: turn.scope.clone(),
        kind: MemoryKind::Fact,
        text: clause.to_string(),
        provenance: vec![turn.id],
        created: turn.at,
        valid_from: turn.at.time,
        valid_to: None,
        superseded_by: None,
        state: MemoryState::Active,
        metrics: Metrics::default(),
        access: Vec::new(),
        metadata,
        version: 1,
    }
}

/// A fact that corrects `target` to `right` (same subject, slot and qualifier), stated by
/// `turn` in the clause `span`: its text is that clause, the speaker's own words (the line
/// that shows it also names the value it replaced).
pub fn corrected_fact(
    turn: &Turn,
    source: &Memory,
    target: &FactEntry,
    span: std::ops::Range<usize>,
    right: (&str, &str),
) -> Memory {
    let (value, value_key) = right;
    let text = turn
        .text
        .get(span)
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(turn.text.as_str())
        .to_string();
    let mut metadata = Metadata::new();
    for key in [
        mnemos_core::Memory::SPEAKER_KEY,
        mnemos_core::Memory::ROLE_KEY,
    ] {
        if let Some(v) = source.metadata.get(key) {
            metadata.insert(key.to_string(), v.clone());
        }
    }
    let fields = [
        (SUBJECT_KEY, target.subject.clone()),
        (SLOT_KEY, target.slot.clone()),
        (QUALIFIER_KEY, target.qualifier.clone()),
        (VALUE_KEY, value.to_string()),
        (VALUE_NORM_KEY, value_key.to_string()),
        (SOURCE_KEY, source.id.to_string()),
    ];
    for (key, v) in fields {
        metadata.insert(key.to_string(), v);
    }
    Memory {
        id: MemoryId::new(),
        scope: turn.scope.clone(),
        kind: MemoryKind::Fact,
        text,
        provenance: vec![turn.id],
        created: turn.at,
        valid_from: turn.at.time,
        valid_to: None,
        superseded_by: None,
        state: MemoryState::Active,
        metrics: Metrics::default(),
        access: Vec::new(),
        metadata,
        version: 1,
    }
}

/// Whether the statements of a turn are all it says: every sentence of it holds a statement,
/// or is a short aside (a greeting, "by the way") of at most `ASIDE_TERMS` content terms.
pub fn statements_cover(text: &str, spans: &[std::ops::Range<usize>]) -> bool {
    const ASIDE_TERMS: usize = 3;
    let analyzer = mnemos_text::Analyzer::shared();
    let base = text.as_ptr() as usize;
    mnemos_text::sentences(text).into_iter().all(|sentence| {
        let start = sentence.as_ptr() as usize - base;
        let end = start + sentence.len();
        let stated = spans.iter().any(|s| s.start < end && start < s.end);
        stated || analyzer.terms(sentence).len() <= ASIDE_TERMS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_match_loosely_but_not_across_words() {
        assert!(loosely_equal("kilometr run week", "kilometr week"));
        assert!(loosely_equal("", ""));
        assert!(!loosely_equal("drink", ""));
        assert!(!loosely_equal("drink", "food"));
        assert!(loosely_equal("next spring trip", "spring trip"));
    }

    #[test]
    fn values_match_when_one_holds_the_other() {
        assert!(same_value("porto", "porto"));
        assert!(same_value("porto", "porto portugal"));
        assert!(!same_value("porto", "lisbon"));
        assert!(same_value("厦门", "厦门市"));
        assert!(!same_value("洛阳", "厦门"));
        assert!(!same_value("a", "a b"));
    }

    #[test]
    fn things_match_when_one_name_holds_the_other() {
        assert!(subjects_match("thing:project", "thing:project apollo"));
        assert!(!subjects_match(
            "thing:project apollo",
            "thing:project zeus"
        ));
        assert!(!subjects_match("who:ann", "who:bob"));
    }

    #[test]
    fn a_sentence_of_chat_beside_a_statement_keeps_the_turn_its_own() {
        let text = "By the way, I live in Tallinn. My sister just had twins and we spent the whole weekend helping with the babies.";
        let first = 0..30;
        assert!(!statements_cover(text, std::slice::from_ref(&first)));
        let stated = 4..22;
        assert!(statements_cover(
            "Hi! I live in Tallinn.",
            std::slice::from_ref(&stated)
        ));
    }
}
