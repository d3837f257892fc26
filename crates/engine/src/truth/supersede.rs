//! Supersession on the write path: what the new turns' statements do to the user's facts.
//!
//! For each new statement, in order, against the facts current for its agent:
//! - the same value again **reinforces** the fact that holds it (times said, last said, the
//!   turn added to its provenance) instead of adding an equal one;
//! - a new value for a single-valued key (residence, job, partner…) **supersedes** the current
//!   fact: it gets `valid_to` (the new turn's time) and `superseded_by` (the new fact);
//! - a negation ("I no longer eat meat") ends the facts it names and is kept as a fact itself;
//! - a correction with no statement of its own ("actually, make it Seoul", "不是周三，是周四")
//!   replaces the fact it names (`wrong`), or else the latest fact the speaker stated within
//!   [`CORRECTION_WINDOW`] rounds.
//!
//! A raw turn whose facts are all superseded, and that said nothing else, is superseded too
//! (by the turn that replaced its last fact), so reads that want what is true now leave it out.
//! Nothing is deleted: every change is an edit, in history.

use std::collections::HashSet;

use mnemos_core::{BatchUpdate, Memory, MemoryId, MemoryPatch, Metrics, Moment, Timestamp, Turn};
use mnemos_text::{Analysis, Correction};
use serde::{Deserialize, Serialize};

use super::facts::{corrected_fact, is_multi_valued, same_value, speaker_id, FactEntry, FactTable};

/// How many rounds back a correction that names no value looks for the fact it corrects.
pub const CORRECTION_WINDOW: u64 = 6;

/// What happened to one fact (or turn) on the write path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A new value replaced it.
    Superseded,
    /// A negation ended it.
    Ended,
    /// A correction replaced it.
    Corrected,
    /// It was said again.
    Reinforced,
    /// A turn whose facts were all replaced.
    TurnSuperseded,
}

/// One change the write path made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactChange {
    pub kind: ChangeKind,
    /// The memory changed (the older fact or turn).
    pub memory: MemoryId,
    /// What replaced, ended or repeated it.
    pub by: MemoryId,
}

/// One new turn with what it states: its raw-turn memory and the fact memories built from
/// its statements (in statement order; not yet kept).
pub struct TurnFacts<'a> {
    pub turn: &'a Turn,
    pub memory: &'a Memory,
    pub analysis: &'a Analysis,
    pub candidates: Vec<Memory>,
}

/// What the write path adds to the turns' batch.
#[derive(Default)]
pub struct TruthPlan {
    /// Fact memories to create (candidates kept, corrections).
    pub facts: Vec<Memory>,
    /// Fact memories created here that had no candidate vector (corrections): embed them.
    pub unembedded: HashSet<MemoryId>,
    pub updates: Vec<BatchUpdate>,
    pub changes: Vec<FactChange>,
    /// Raw-turn memories that stop being current, with when.
    pub ended_turns: Vec<(MemoryId, Timestamp)>,
}

/// Plans supersession for `turns` (of one user, in order) against `table`, which is updated as
/// it goes (so later turns of the write see earlier ones). `turn_is_current` tells whether a
/// stored raw-turn memory is still current.
pub fn plan(
    table: &mut FactTable,
    turns: Vec<TurnFacts<'_>>,
    turn_is_current: &dyn Fn(MemoryId) -> bool,
) -> TruthPlan {
    let mut plan = TruthPlan::default();
    let mut ended: HashSet<MemoryId> = HashSet::new();
    for mut turn in turns {
        let at = turn.turn.at;
        let mut touched: Vec<FactEntry> = Vec::new();
        for candidate in std::mem::take(&mut turn.candidates) {
            let Some(entry) = FactEntry::of(&candidate) else {
                continue;
            };
            touched.extend(apply_statement(table, &mut plan, entry, candidate, at));
        }
        let no_statements = turn.analysis.statements.is_empty();
        if let (Some(correction), true) = (&turn.analysis.correction, no_statements) {
            touched.extend(apply_correction(table, &mut plan, &turn, correction));
        }
        end_whole_turns(
            table,
            &mut plan,
            &touched,
            &turn,
            turn_is_current,
            &mut ended,
        );
    }
    plan
}

/// Keep, reinforce or supersede for one statement's candidate fact; returns the facts it
/// superseded.
fn apply_statement(
    table: &mut FactTable,
    plan: &mut TruthPlan,
    entry: FactEntry,
    candidate: Memory,
    at: Moment,
) -> Vec<FactEntry> {
    let current: Vec<FactEntry> = matching(table, &entry).cloned().collect();
    if !entry.negated {
        let repeat = current
            .iter()
            .find(|e| !e.negated && same_value(&e.value_key, &entry.value_key));
        if let Some(repeated) = repeat {
            let by = (entry.source, candidate.provenance.first().copied());
            reinforce(table, plan, repeated.id, by, at);
            return Vec::new();
        }
    }
    let replaced: Vec<FactEntry> = current
        .into_iter()
        .filter(|e| replaces(&entry, e))
        .collect();
    let kind = if entry.negated {
        ChangeKind::Ended
    } else {
        ChangeKind::Superseded
    };
    for old in &replaced {
        supersede(table, plan, old, candidate.id, at, kind);
    }
    table.upsert(&candidate);
    plan.facts.push(candidate);
    replaced
}

/// The current facts a statement's entry speaks to: the same key (a negation that names no
/// qualifier reaches every qualifier of its slot: "we have no pets any more").
fn matching<'t>(table: &'t FactTable, entry: &'t FactEntry) -> impl Iterator<Item = &'t FactEntry> {
    table.entries().iter().filter(move |e| {
        e.agent == entry.agent
            && e.is_current()
            && if entry.negated && entry.qualifier.is_empty() {
                e.same_key(&entry.subject, &entry.slot, &e.qualifier)
            } else {
                e.same_key(&entry.subject, &entry.slot, &entry.qualifier)
            }
    })
}

/// Does the new entry end `old`? A negation ends the asserted facts it names (all of the key
/// when it names no value); an assertion ends a single-valued key's other values, and any
/// earlier negation of its own value.
fn replaces(new: &FactEntry, old: &FactEntry) -> bool {
    if new.negated {
        return !old.negated
            && (new.value_key.is_empty() || same_value(&old.value_key, &new.value_key));
    }
    if old.negated {
        return old.value_key.is_empty() || same_value(&old.value_key, &new.value_key);
    }
    !is_multi_valued(&new.slot, &new.qualifier)
}

/// End `old` at `at` (never before it began), naming `by`; the table follows.
fn supersede(
    table: &mut FactTable,
    plan: &mut TruthPlan,
    old: &FactEntry,
    by: MemoryId,
    at: Moment,
    kind: ChangeKind,
) {
    let end = at.time.max(old.valid_from);
    plan.updates.push(BatchUpdate {
        id: old.id,
        patch: MemoryPatch {
            valid_to: Some(Some(end)),
            superseded_by: Some(Some(by)),
            ..MemoryPatch::default()
        },
        at,
    });
    if let Some(entry) = table.get_mut(old.id) {
        entry.valid_to = Some(end);
        entry.superseded_by = Some(by);
    }
    plan.changes.push(FactChange {
        kind,
        memory: old.id,
        by,
    });
}

/// Count one more statement of the fact `id`, by a turn (its raw-turn memory, its id).
fn reinforce(
    table: &mut FactTable,
    plan: &mut TruthPlan,
    id: MemoryId,
    by: (Option<MemoryId>, Option<mnemos_core::TurnId>),
    at: Moment,
) {
    let (by_memory, turn) = by;
    let Some(entry) = table.get_mut(id) else {
        return;
    };
    let metrics = Metrics {
        times_said: Some(entry.metrics.times_said.unwrap_or(1).saturating_add(1)),
        last_said: Some(at.time.max(entry.valid_from)),
        ..entry.metrics.clone()
    };
    let mut provenance = entry.provenance.clone();
    if let Some(turn) = turn.filter(|t| !provenance.contains(t)) {
        provenance.push(turn);
    }
    entry.metrics = metrics.clone();
    entry.provenance = provenance.clone();
    plan.updates.push(BatchUpdate {
        id,
        patch: MemoryPatch {
            metrics: Some(metrics),
            provenance: Some(provenance),
            ..MemoryPatch::default()
        },
        at,
    });
    plan.changes.push(FactChange {
        kind: ChangeKind::Reinforced,
        memory: id,
        by: by_memory.unwrap_or(id),
    });
}

/// A correction that states no fact of its own: replace the fact it names, or the speaker's
/// latest recent fact, with the corrected value.
fn apply_correction(
    table: &mut FactTable,
    plan: &mut TruthPlan,
    turn: &TurnFacts<'_>,
    correction: &Correction,
) -> Vec<FactEntry> {
    let Some(target) = correction_target(table, turn, correction) else {
        return Vec::new();
    };
    if same_value(&target.value_key, &correction.right_key) {
        return Vec::new();
    }
    let fact = corrected_fact(
        turn.turn,
        turn.memory,
        &target,
        correction.span.clone(),
        (&correction.right, &correction.right_key),
    );
    supersede(
        table,
        plan,
        &target,
        fact.id,
        turn.turn.at,
        ChangeKind::Corrected,
    );
    table.upsert(&fact);
    plan.unembedded.insert(fact.id);
    plan.facts.push(fact);
    vec![target]
}

/// The fact a correction speaks to: the latest current fact of the agent holding the wrong
/// value when the correction names it; else the latest one the same speaker stated within
/// [`CORRECTION_WINDOW`] rounds.
fn correction_target(
    table: &FactTable,
    turn: &TurnFacts<'_>,
    correction: &Correction,
) -> Option<FactEntry> {
    let agent = &turn.turn.scope.agent;
    let round = turn.turn.at.round;
    let speaker = format!("who:{}", speaker_id(turn.turn));
    let recent = table
        .entries()
        .iter()
        .filter(|e| &e.agent == agent && e.is_current() && !e.negated)
        .filter(|e| e.round + CORRECTION_WINDOW >= round);
    let latest = |candidates: Vec<&FactEntry>| {
        candidates
            .into_iter()
            .max_by_key(|e| (e.round, e.valid_from))
            .cloned()
    };
    match &correction.wrong_key {
        Some(wrong) => latest(recent.filter(|e| same_value(&e.value_key, wrong)).collect()),
        None => latest(
            recent
                .filter(|e| {
                    e.subject == speaker
                        || e.subject.starts_with(&format!("{speaker}/"))
                        || e.subject.starts_with("thing:")
                })
                .collect(),
        ),
    }
}

/// Supersede the raw turns whose facts were all replaced just now, when each said nothing else.
fn end_whole_turns(
    table: &FactTable,
    plan: &mut TruthPlan,
    replaced: &[FactEntry],
    turn: &TurnFacts<'_>,
    turn_is_current: &dyn Fn(MemoryId) -> bool,
    ended: &mut HashSet<MemoryId>,
) {
    let at = turn.turn.at;
    for old in replaced {
        let Some(source) = old.source.filter(|_| old.whole_turn) else {
            continue;
        };
        if source == turn.memory.id || ended.contains(&source) || !turn_is_current(source) {
            continue;
        }
        if table.stated_by(source).any(FactEntry::is_current) {
            continue;
        }
        let end = at.time.max(old.valid_from);
        plan.updates.push(BatchUpdate {
            id: source,
            patch: MemoryPatch {
                valid_to: Some(Some(end)),
                superseded_by: Some(Some(turn.memory.id)),
                ..MemoryPatch::default()
            },
            at,
        });
        plan.ended_turns.push((source, end));
        plan.changes.push(FactChange {
            kind: ChangeKind::TurnSuperseded,
            memory: source,
            by: turn.memory.id,
        });
        ended.insert(source);
    }
}
