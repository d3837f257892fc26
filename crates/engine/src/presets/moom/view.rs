//! Read-only views of what MOOM keeps, for people and tools (`mnemos show persona|timeline`):
//! the persona sketch with each key's history, and the plot summary tree.

use serde::Serialize;

use mnemos_core::{Memory, MemoryFilter, MemoryId, MemoryState, StateFilter, Store, UserKey};

use super::nsb::{level_of, span_of};
use super::pcb::{key_of, said_round, subject_of, value_of};
use crate::error::EngineResult;
use crate::mechanism::collect_all;

/// One value a persona key holds or held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PersonaValueView {
    pub id: MemoryId,
    pub value: String,
    /// The round it was said.
    pub said_round: u64,
    pub active: bool,
    /// Why it left the sketch (replaced, contradicted, aged out, merged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Turns behind it.
    pub turns: usize,
}

/// One key of one subject's sketch: its current values and everything it held before.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PersonaKeyView {
    /// Whom the values are about (a speaker's name), when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub key: String,
    pub current: Vec<PersonaValueView>,
    pub history: Vec<PersonaValueView>,
}

/// One node of the plot tree with the nodes it summarizes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineNode {
    pub id: MemoryId,
    /// 1 = unit of raw rounds, 2 and 3 = summaries.
    pub level: u8,
    pub from_round: u64,
    pub to_round: u64,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub turns: usize,
    pub text: String,
    pub children: Vec<TimelineNode>,
}

fn reason(memory: &Memory) -> Option<String> {
    match &memory.state {
        MemoryState::Forgotten { reason, .. } => Some(reason.clone()),
        _ => None,
    }
}

fn all_of(
    store: &dyn Store,
    user: &UserKey,
    agent: Option<&str>,
    kinds: &[&str],
) -> EngineResult<Vec<Memory>> {
    collect_all(
        store,
        user,
        &MemoryFilter {
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            agent: agent.map(str::to_string),
            state: StateFilter::All,
            ..MemoryFilter::default()
        },
    )
}

/// The persona sketch of `user` (one agent, or all): per subject, in the order each subject
/// was first described, keys in the order they were first said.
pub fn persona(
    store: &dyn Store,
    user: &UserKey,
    agent: Option<&str>,
) -> EngineResult<Vec<PersonaKeyView>> {
    let mut values = all_of(store, user, agent, &["persona"])?;
    values.sort_by_key(|m| (said_round(m), m.created));
    let mut keys: Vec<PersonaKeyView> = Vec::new();
    for memory in &values {
        let Some(key) = key_of(memory) else { continue };
        let view = PersonaValueView {
            id: memory.id,
            value: value_of(memory).to_string(),
            said_round: said_round(memory),
            active: memory.is_active(),
            reason: reason(memory),
            turns: memory.provenance.len(),
        };
        let subject = subject_of(memory).map(str::to_string);
        let at = match keys
            .iter()
            .position(|k| k.key == key && k.subject == subject)
        {
            Some(at) => at,
            None => {
                keys.push(PersonaKeyView {
                    subject,
                    key: key.to_string(),
                    current: Vec::new(),
                    history: Vec::new(),
                });
                keys.len() - 1
            }
        };
        if view.active {
            keys[at].current.push(view);
        } else {
            keys[at].history.push(view);
        }
    }
    // Group by subject (stable: first-described subject first, keys in first-said order).
    let mut subjects: Vec<Option<String>> = Vec::new();
    for k in &keys {
        if !subjects.contains(&k.subject) {
            subjects.push(k.subject.clone());
        }
    }
    keys.sort_by_key(|k| subjects.iter().position(|s| *s == k.subject));
    Ok(keys)
}

/// The plot tree of `user` (one agent, or all): top-level nodes in timeline order, each with
/// the nodes of the level below that its span contains. Nodes no higher node covers are roots.
pub fn timeline(
    store: &dyn Store,
    user: &UserKey,
    agent: Option<&str>,
) -> EngineResult<Vec<TimelineNode>> {
    let mut nodes: Vec<TimelineNode> = all_of(store, user, agent, &["exchange", "summary"])?
        .iter()
        .filter_map(|m| {
            let level = level_of(m)?;
            let (from_round, to_round) = span_of(m)?;
            Some(TimelineNode {
                id: m.id,
                level,
                from_round,
                to_round,
                active: m.is_active(),
                reason: reason(m),
                turns: m.provenance.len(),
                text: m.text.clone(),
                children: Vec::new(),
            })
        })
        .collect();
    nodes.sort_by_key(|n| (n.from_round, std::cmp::Reverse(n.level)));
    let top = nodes.iter().map(|n| n.level).max().unwrap_or(0);
    // Attach each level to the one above, lowest first.
    for level in 1..top {
        let (lower, rest): (Vec<TimelineNode>, Vec<TimelineNode>) =
            nodes.into_iter().partition(|n| n.level == level);
        nodes = rest;
        for node in lower {
            let parent = nodes.iter_mut().find(|p| {
                p.level == level + 1
                    && p.from_round <= node.from_round
                    && node.to_round <= p.to_round
            });
            match parent {
                Some(parent) => parent.children.push(node),
                None => nodes.push(node),
            }
        }
        nodes.sort_by_key(|n| (n.from_round, std::cmp::Reverse(n.level)));
    }
    Ok(nodes)
}
