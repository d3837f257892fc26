//! What a recall hands back: a [`Context`] of [`ContextItem`]s within a token budget, each
//! with the parts of its score. Plain data, shared by the engine, every mechanism and the
//! budget helpers in `primitives`.

use serde::{Deserialize, Serialize};

use mnemos_core::{Memory, MemoryId, MemoryKind, Moment, TurnId};

/// One part of a context item's score (relevance, recency, importance, retention…).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScorePart {
    pub name: String,
    pub value: f64,
}

/// One memory handed back for a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextItem {
    pub memory_id: MemoryId,
    pub kind: MemoryKind,
    pub text: String,
    /// Where it came from: the turns behind it.
    pub provenance: Vec<TurnId>,
    pub created: Moment,
    /// The section of the prompt it belongs to (`profile`, `summaries`, `turns`, `core`…).
    pub section: String,
    pub score: f64,
    pub breakdown: Vec<ScorePart>,
    /// Approximate LLM tokens of `text`.
    pub tokens: usize,
}

impl ContextItem {
    pub fn from_memory(memory: &Memory, section: &str, score: f64, tokens: usize) -> Self {
        ContextItem {
            memory_id: memory.id,
            kind: memory.kind.clone(),
            text: memory.text.clone(),
            provenance: memory.provenance.clone(),
            created: memory.created,
            section: section.to_string(),
            score,
            breakdown: Vec::new(),
            tokens,
        }
    }

    pub fn with_part(mut self, name: &str, value: f64) -> Self {
        self.breakdown.push(ScorePart {
            name: name.to_string(),
            value,
        });
        self
    }
}

/// What a mechanism returns for a query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub mechanism: String,
    pub query: String,
    /// In the order a prompt would show them.
    pub items: Vec<ContextItem>,
    /// The text a prompt would use (sections with their items).
    pub text: String,
    /// Approximate LLM tokens of `text`.
    pub tokens: usize,
    /// Decisions and degradations worth showing (e.g. "memory not needed for this query").
    pub notes: Vec<String>,
}
