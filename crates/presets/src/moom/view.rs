//! Read-only views of what MOOM keeps, for people and tools (`mnemos show persona|timeline`):
//! the persona sketch with each key's history, and the plot summary tree.

use mnemos_core::KindTag;
use mnemos_core::{
    Memory, MemoryFilter, MemoryState, StateFilter, StoreRead, Timestamp, TurnId, UserKey,
};

use super::nsb::{level_of, span_of};
use super::pcb::{key_of, said_round, subject_of, value_of};
use mnemos_engine::mechanism::collect_all;
use mnemos_engine::EngineResult;
use mnemos_engine::{PersonaKeyView, PersonaValueView, TimelineNode};

/// When the turn `id` was said, if it is still stored.
fn turn_time(
    store: &dyn StoreRead,
    user: &UserKey,
    id: Option<&TurnId>,
) -> EngineResult<Option<Timestamp>> {
    let Some(id) = id else {
        return Ok(None);
    };
    Ok(store.turn(user, *id)?.map(|t| t.at.time))
}

fn reason(memory: &Memory) -> Option<String> {
    match &memory.state {
        MemoryState::Forgotten { reason, .. } => Some(reason.clone()),
        _ => None,
    }
}

fn all_of(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: Option<&str>,
    kinds: &[KindTag],
) -> EngineResult<Vec<Memory>> {
    collect_all(
        store,
        user,
        &MemoryFilter {
            kinds: kinds.to_vec(),
            agent: agent.map(str::to_string),
            state: StateFilter::All,
            ..MemoryFilter::default()
        },
    )
}

/// The persona sketch of `user` (one agent, or all): per subject, in the order each subject
/// was first described, keys in the order they were first said.
pub fn persona(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: Option<&str>,
) -> EngineResult<Vec<PersonaKeyView>> {
    let mut values = all_of(store, user, agent, &[KindTag::Persona])?;
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
    store: &dyn StoreRead,
    user: &UserKey,
    agent: Option<&str>,
) -> EngineResult<Vec<TimelineNode>> {
    let mut nodes: Vec<TimelineNode> = Vec::new();
    for m in all_of(store, user, agent, &[KindTag::Exchange, KindTag::Summary])? {
        let (Some(level), Some((from_round, to_round))) = (level_of(&m), span_of(&m)) else {
            continue;
        };
        nodes.push(TimelineNode {
            id: m.id,
            level,
            from_round,
            to_round,
            from_time: turn_time(store, user, m.provenance.first())?,
            to_time: turn_time(store, user, m.provenance.last())?,
            active: m.is_active(),
            reason: reason(&m),
            turns: m.provenance.len(),
            text: m.text.clone(),
            children: Vec::new(),
        });
    }
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
