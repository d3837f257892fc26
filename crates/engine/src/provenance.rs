//! Provenance on the write path: which memories were derived from a turn's memory, so
//! forgetting it takes them along, and how such a cascade is worded in their reasons.

use std::collections::HashSet;

use mnemos_core::{
    BatchForget, ForgetCause, KindTag, Memory, MemoryFilter, MemoryId, Moment, StateFilter,
    StoreRead, TurnId, UserKey, WriteBatch,
};

use crate::error::EngineResult;

/// How the engine's cascade words the reason of a memory forgotten with its source:
/// `derived from forgotten memory <id>: <the source's reason>`.
pub const DERIVED_PREFIX: &str = "derived from forgotten memory ";

/// The reason the engine records on a memory forgotten because `source` was.
pub fn derived_reason(source: MemoryId, reason: &str) -> String {
    format!("{DERIVED_PREFIX}{source}: {reason}")
}

/// Memories of other kinds whose provenance holds the turn behind `memory` (raw-turn memories
/// only: a summary's provenance is shared with its siblings, not owned), in listing order.
pub(crate) fn derived_of(
    store: &dyn StoreRead,
    user: &UserKey,
    memory: &Memory,
    state: StateFilter,
) -> EngineResult<Vec<Memory>> {
    if memory.kind.tag() != KindTag::Turn {
        return Ok(Vec::new());
    }
    let filter = MemoryFilter {
        state,
        ..MemoryFilter::default()
    };
    let all = store.list_all(user, &filter)?;
    Ok(derived_among(&all, memory).into_iter().cloned().collect())
}

/// The memories of `all` derived from `memory` by [`derived_of`]'s rule, for callers that
/// read the user's memories once for several sources.
pub(crate) fn derived_among<'a>(all: &'a [Memory], memory: &Memory) -> Vec<&'a Memory> {
    if memory.kind.tag() != KindTag::Turn {
        return Vec::new();
    }
    let turns: HashSet<TurnId> = memory.provenance.iter().copied().collect();
    all.iter()
        .filter(|m| {
            m.id != memory.id
                && m.kind.tag() != KindTag::Turn
                && m.provenance.iter().any(|t| turns.contains(t))
        })
        .collect()
}

/// Forgets planned into one write: each memory once, what was derived from a memory following
/// it with the engine's cascade reason.
pub(crate) struct ForgetPlan {
    batch: WriteBatch,
    planned: HashSet<MemoryId>,
    at: Moment,
}

impl ForgetPlan {
    pub(crate) fn new(user: &UserKey, at: Moment) -> Self {
        Self {
            batch: WriteBatch {
                user: Some(user.clone()),
                ..WriteBatch::default()
            },
            planned: HashSet::new(),
            at,
        }
    }

    /// Forget `target`, when still active, for `reason`.
    pub(crate) fn target(&mut self, target: &Memory, reason: &str) {
        if target.is_active() {
            self.push(target.id, reason.to_string(), ForgetCause::Request);
        }
    }

    /// Forget `derived` (active memories derived from `source`) with the cascade's reason;
    /// returns how many of them this adds to the plan.
    pub(crate) fn derived(&mut self, source: MemoryId, derived: &[&Memory], reason: &str) -> usize {
        derived
            .iter()
            .filter(|m| {
                let cause = ForgetCause::Derived { source };
                self.push(m.id, derived_reason(source, reason), cause)
            })
            .count()
    }

    /// Plan one forget unless planned already; whether it was new.
    fn push(&mut self, id: MemoryId, reason: String, cause: ForgetCause) -> bool {
        if !self.planned.insert(id) {
            return false;
        }
        self.batch.forgets.push(BatchForget {
            id,
            reason,
            cause,
            at: self.at,
        });
        true
    }

    /// The write, or nothing when there is nothing to forget.
    pub(crate) fn into_batch(self) -> Option<WriteBatch> {
        (!self.batch.forgets.is_empty()).then_some(self.batch)
    }
}
