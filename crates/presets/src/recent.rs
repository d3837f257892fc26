//! RecentMemory (MemBench): the last N turns, in time order. No model calls.

use serde::{Deserialize, Serialize};

use mnemos_core::Turn;

use super::full::{newest_within, turn_items, HEADER_TOKENS};
use super::PresetParams;
use mnemos_engine::mechanism::{
    JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::build_context;
use mnemos_engine::EngineResult;

pub const NAME: &str = "recent";
pub const SUMMARY: &str = "RecentMemory (MemBench): the last N turns of the dialogue";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecentParams {
    /// How many of the latest turns to hand back.
    pub window: usize,
}

impl Default for RecentParams {
    fn default() -> Self {
        Self { window: 10 }
    }
}

impl PresetParams for RecentParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[(
        "window",
        "how many of the latest turns to return (1..=10000)",
    )];
    fn validate(&self) -> Result<(), String> {
        if (1..=10_000).contains(&self.window) {
            Ok(())
        } else {
            Err(format!("window = {}: expected 1..=10000", self.window))
        }
    }
}

pub struct RecentMemory {
    params: RecentParams,
}

impl RecentMemory {
    pub fn new(params: RecentParams) -> Self {
        Self { params }
    }
}

impl Mechanism for RecentMemory {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let mut items = turn_items(ctx, request.session.as_deref())?;
        let start = items.len().saturating_sub(self.params.window);
        let recent = items.split_off(start);
        let room = request.token_budget.saturating_sub(HEADER_TOKENS);
        let kept = newest_within(recent, room);
        Ok(Recall {
            context: build_context(NAME, &request.query, kept, request.token_budget, vec![]),
            effects: Default::default(),
        })
    }
}
