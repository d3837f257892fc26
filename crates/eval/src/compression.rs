//! What compression did to a user's memory chains (presets that build them, such as `m4`).
//!
//! Read from the chains view at the end of a conversation: node tokens now and before any
//! compression, how many steps the memory model refused as unrecoverable, and an independent
//! check of what compression lost — of the conversation's questions whose gold answer a
//! compressed node's original text held, the share its compressed text still holds.

use serde::{Deserialize, Serialize};

use mnemos_core::UserKey;
use mnemos_engine::{Engine, View, ViewKind};

use crate::dataset::Question;
use crate::scoring::answer_in_context;

/// Sums over the nodes of one conversation (or several, when added up).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompressionSample {
    /// Current nodes, and their tokens now and before any compression.
    pub nodes: usize,
    pub node_tokens: usize,
    pub node_original_tokens: usize,
    /// Nodes that kept at least one compression step, with their tokens before and after.
    pub compressed_nodes: usize,
    pub compressed_original_tokens: usize,
    pub compressed_tokens: usize,
    /// Nodes whose last step the model judged unrecoverable (so it was not kept).
    pub refused_nodes: usize,
    /// (question, compressed node) pairs whose original text holds the gold answer, and of
    /// those, the pairs whose compressed text still holds it.
    pub answers_in_originals: usize,
    pub answers_kept: usize,
}

impl CompressionSample {
    pub fn add(&mut self, other: &CompressionSample) {
        self.nodes += other.nodes;
        self.node_tokens += other.node_tokens;
        self.node_original_tokens += other.node_original_tokens;
        self.compressed_nodes += other.compressed_nodes;
        self.compressed_original_tokens += other.compressed_original_tokens;
        self.compressed_tokens += other.compressed_tokens;
        self.refused_nodes += other.refused_nodes;
        self.answers_in_originals += other.answers_in_originals;
        self.answers_kept += other.answers_kept;
    }

    /// Share of the compressed nodes' original tokens that compression removed.
    pub fn saved_of_compressed(&self) -> Option<f64> {
        saved(self.compressed_original_tokens, self.compressed_tokens)
    }

    /// Share of all node tokens (before compression) that compression removed.
    pub fn saved_of_all(&self) -> Option<f64> {
        saved(self.node_original_tokens, self.node_tokens)
    }

    /// Share of the answers held by compressed nodes' originals that compression kept.
    pub fn answers_kept_rate(&self) -> Option<f64> {
        (self.answers_in_originals > 0)
            .then(|| self.answers_kept as f64 / self.answers_in_originals as f64)
    }
}

fn saved(before: usize, after: usize) -> Option<f64> {
    (before > 0).then(|| 1.0 - after as f64 / before as f64)
}

/// The chains of `user` after a conversation, or `None` when it has no chain node.
pub fn sample(
    engine: &Engine,
    user: &UserKey,
    agent: &str,
    questions: &[Question],
) -> mnemos_engine::EngineResult<Option<CompressionSample>> {
    let View::Chains(view) = engine.view(user, Some(agent), ViewKind::Chains)? else {
        return Ok(None);
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = CompressionSample::default();
    for node in view.chains.iter().flat_map(|c| &c.nodes) {
        // A shared node is in several chains; count it once.
        if !seen.insert(node.id) {
            continue;
        }
        out.nodes += 1;
        out.node_tokens += node.tokens;
        out.node_original_tokens += node.original_tokens.unwrap_or(node.tokens);
        out.refused_nodes += usize::from(node.compression_final);
        if node.compressions == 0 {
            continue;
        }
        out.compressed_nodes += 1;
        out.compressed_tokens += node.tokens;
        out.compressed_original_tokens += node.original_tokens.unwrap_or(node.tokens);
        let history = engine.history(user, node.id)?;
        let original = history
            .first()
            .map_or(node.text.as_str(), |h| h.snapshot.text.as_str());
        for answer in questions.iter().filter_map(|q| q.answer.as_deref()) {
            if answer_in_context(answer, original) {
                out.answers_in_originals += 1;
                out.answers_kept += usize::from(answer_in_context(answer, &node.text));
            }
        }
    }
    Ok((out.nodes > 0).then_some(out))
}
