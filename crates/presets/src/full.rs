//! FullMemory (MemBench): every turn goes into the context, cut to the token budget.
//!
//! MemBench hands the whole history to the model and truncates it to the context window. Here
//! the newest turns win when the budget is short (the end of a conversation is what a reply
//! needs first); `keep = "oldest"` keeps the beginning instead. No model calls.

use serde::{Deserialize, Serialize};

use mnemos_core::{KindTag, MemoryFilter, Turn};

use super::PresetParams;
use mnemos_engine::mechanism::{
    ContextItem, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, tokens};
use mnemos_engine::EngineResult;

pub const NAME: &str = "full";
pub const SUMMARY: &str =
    "FullMemory (MemBench): the whole dialogue in time order, truncated to the budget";

/// Room left for section headers when packing.
pub(crate) const HEADER_TOKENS: usize = 8;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FullParams {
    /// Which end survives truncation: "newest" or "oldest".
    pub keep: String,
}

impl Default for FullParams {
    fn default() -> Self {
        Self {
            keep: "newest".into(),
        }
    }
}

impl PresetParams for FullParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[(
        "keep",
        "which end of the dialogue survives truncation: newest | oldest",
    )];
    fn validate(&self) -> Result<(), String> {
        match self.keep.as_str() {
            "newest" | "oldest" => Ok(()),
            other => Err(format!("keep = '{other}': expected newest or oldest")),
        }
    }
}

pub struct FullMemory {
    params: FullParams,
}

impl FullMemory {
    pub fn new(params: FullParams) -> Self {
        Self { params }
    }
}

/// The agent's raw-turn memories (optionally one session), as context items in time order.
pub(crate) fn turn_items(
    ctx: &MechanismCtx,
    session: Option<&str>,
) -> EngineResult<Vec<ContextItem>> {
    let memories = ctx.all(MemoryFilter {
        kinds: vec![KindTag::Turn],
        session: session.map(str::to_string),
        ..MemoryFilter::default()
    })?;
    Ok(memories
        .iter()
        .map(|m| {
            let text = mnemos_engine::primitives::speaker_text(m);
            let mut item = ContextItem::from_memory(m, "dialogue", 1.0, tokens(&text));
            item.text = text;
            item
        })
        .collect())
}

/// Keep the newest items that fit, returned in time order.
pub(crate) fn newest_within(items: Vec<ContextItem>, budget: usize) -> Vec<ContextItem> {
    let mut newest_first = items;
    newest_first.reverse();
    let mut kept = pack_within_budget(newest_first, budget);
    kept.reverse();
    kept
}

impl Mechanism for FullMemory {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let items = turn_items(ctx, request.session.as_deref())?;
        let room = request.token_budget.saturating_sub(HEADER_TOKENS);
        let kept = if self.params.keep == "oldest" {
            pack_within_budget(items, room)
        } else {
            newest_within(items, room)
        };
        Ok(Recall {
            context: build_context(NAME, &request.query, kept, request.token_budget, vec![]),
            effects: Default::default(),
        })
    }
}
