//! Provenance on the write path: which memories were derived from a turn's memory, so
//! forgetting it takes them along, and how such a cascade is worded in their reasons.

use std::collections::HashSet;

use mnemos_core::{
    KindTag, Memory, MemoryFilter, MemoryId, StateFilter, StoreRead, TurnId, UserKey,
};

use crate::engine::Engine;
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

impl Engine {
    /// Memories of other kinds built from the turn behind memory `id`, active and forgotten,
    /// oldest first (what forgetting it cascades to, in every state). Empty for a memory that
    /// is not a turn's; `NotFound` for an unknown id.
    pub fn derived_memories(&self, user: &UserKey, id: MemoryId) -> EngineResult<Vec<Memory>> {
        let memory = self.get(user, id)?;
        derived_of(self.store(), user, &memory, StateFilter::All)
    }
}
