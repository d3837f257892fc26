//! Inspectable views of what a mechanism keeps (the persona sketch, the plot timeline…), for
//! people and tools. A mechanism says which views it offers ([`Mechanism::views`]); callers ask
//! the engine ([`Engine::view`]) and never name a preset's module.
//!
//! [`Mechanism::views`]: crate::Mechanism::views

use serde::Serialize;

use mnemos_core::{MemoryId, StoreRead, Timestamp, UserKey};

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};
use crate::mechanism::Mechanism;

/// Which view to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ViewKind {
    /// The persona sketch per subject, with what each key held before and why it changed.
    Persona,
    /// The plot summary tree, newest rounds last.
    Timeline,
    /// The memory chains per category, their shared nodes and the calibration history (M⁴).
    Chains,
}

impl ViewKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ViewKind::Persona => "persona",
            ViewKind::Timeline => "timeline",
            ViewKind::Chains => "chains",
        }
    }
}

/// A mechanism's view of one user's memories.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "view", content = "items", rename_all = "snake_case")]
pub enum View {
    Persona(Vec<PersonaKeyView>),
    Timeline(Vec<TimelineNode>),
    Chains(ChainsView),
}

/// The memory chains of one user.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChainsView {
    /// One per category, in the order the categories first appeared.
    pub chains: Vec<ChainView>,
    /// Nodes that were superseded by calibration, oldest first.
    pub calibrations: Vec<CalibrationView>,
}

/// One category's chain: its current nodes in time order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChainView {
    pub category: String,
    pub nodes: Vec<ChainNodeView>,
}

/// One current node of a chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChainNodeView {
    pub id: MemoryId,
    /// When the dialogue it summarizes ended.
    pub time: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub text: String,
    /// Every chain it is in (more than one: a shared node).
    pub categories: Vec<String>,
    pub tokens: usize,
    /// Compression steps kept, and the tokens before the first.
    pub compressions: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_tokens: Option<usize>,
    /// A compression step was judged unrecoverable: the node is compressed no further.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub compression_final: bool,
    /// Nodes it superseded when it was calibrated.
    pub calibrated_from: Vec<String>,
    pub turns: usize,
}

/// A node superseded by a newer one of its chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationView {
    pub stale: MemoryId,
    pub stale_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    pub categories: Vec<String>,
}

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
    /// When the first and the last turn it covers were said (absent once they are purged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_time: Option<Timestamp>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub turns: usize,
    pub text: String,
    pub children: Vec<TimelineNode>,
}

impl Engine {
    /// A view of `user`'s memories (one agent's, or all agents' when `None`). The agent's
    /// mechanism draws it when it offers the view; otherwise the first preset that offers it
    /// reads what such a preset stored (a view only reads), so `show persona` works whatever
    /// preset the config names. Unknown users get an empty view.
    pub fn view(&self, user: &UserKey, agent: Option<&str>, kind: ViewKind) -> EngineResult<View> {
        user.validate()?;
        let offers = |m: &&std::sync::Arc<dyn Mechanism>| m.views().contains(&kind);
        let running = match agent {
            Some(agent) => Some(self.mechanism(agent)).filter(offers),
            None => self.mechanisms().find(offers),
        };
        let mechanism = match running {
            Some(m) => m.clone(),
            None => self.presets.offering(kind).ok_or_else(|| {
                EngineError::config(format!("no preset offers a {} view", kind.as_str()))
            })?,
        };
        let store: &dyn StoreRead = self.store();
        mechanism.view(store, user, agent, kind)
    }
}
