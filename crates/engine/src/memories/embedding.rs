//! The write path's embedding: every text a write stores a vector for is split into windows
//! (`embedding_windows`), and each distinct window is embedded at most once — a window repeated
//! in the write is embedded once, and a window the user's index already holds a vector for (an
//! active memory with the same text, embedded by the same embedder) is not embedded at all.
//!
//! Windows are keyed by the SHA-256 of their exact text. The user's index only ever holds the
//! vectors of this engine's embedder (built from the store's rows of its id, or embedded by it),
//! so a key found there means "same model, same text"; users never share an index.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

use mnemos_core::retrieval::{embedding_windows, ScopeIndex, TextKey};
use mnemos_core::{EmbedError, EmbedderExt, Error, Result};

use super::state::{Embedded, EmbeddingStats, Memories, ScopeSlot};

/// The content key of one embedder input.
pub(super) fn text_key(text: &str) -> TextKey {
    Sha256::digest(text.as_bytes()).into()
}

/// A write's texts as windows, with the vectors already known and the windows still to embed.
struct Plan<'t> {
    /// Per text, its windows' keys in order.
    keys: Vec<Vec<TextKey>>,
    /// Vectors by key: found in the user's index now, embedded ones added later.
    known: HashMap<TextKey, Vec<f32>>,
    /// Distinct windows nobody has a vector for, in first-seen order.
    missing: Vec<(TextKey, &'t str)>,
    stats: EmbeddingStats,
}

impl Memories {
    /// The vectors of `texts` for a write of `slot`'s user, reusing what the user's index holds
    /// (when it is built) and embedding each distinct remaining window once. The index is read
    /// only while looking up, never while the embedder runs.
    pub(super) fn embed_for(&self, slot: &ScopeSlot, texts: &[String]) -> Result<Vec<Embedded>> {
        let plan = {
            let guard = slot.read();
            self.plan(texts, guard.index.as_ref())
        };
        self.embed_planned(plan)
    }

    /// [`embed_for`](Self::embed_for) against an index being built (not yet in its slot).
    pub(super) fn embed_with(&self, index: &ScopeIndex, texts: &[String]) -> Result<Vec<Embedded>> {
        self.embed_planned(self.plan(texts, Some(index)))
    }

    /// The vectors of `texts` (each distinct window embedded once), reusing no index: for a
    /// move into this embedder's space, which no index holds vectors of yet.
    pub(crate) fn embed_texts(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let embedded = self.embed_planned(self.plan(texts, None))?;
        Ok(embedded.into_iter().map(|e| e.vector).collect())
    }

    /// What the write path's embedding did since this engine started.
    pub fn embedding_stats(&self) -> EmbeddingStats {
        self.embedding.snapshot()
    }

    fn plan<'t>(&self, texts: &'t [String], index: Option<&ScopeIndex>) -> Plan<'t> {
        let mut plan = Plan {
            keys: Vec::with_capacity(texts.len()),
            known: HashMap::new(),
            missing: Vec::new(),
            stats: EmbeddingStats::default(),
        };
        let mut seen: HashSet<TextKey> = HashSet::new();
        for text in texts {
            let windows = embedding_windows(self.analyzer, text, self.config.window_tokens);
            let mut keys = Vec::with_capacity(windows.len());
            for window in windows {
                let key = text_key(window);
                keys.push(key);
                if !seen.insert(key) {
                    plan.stats.repeated += 1;
                } else if let Some(vector) = index.and_then(|i| i.embedded(&key)) {
                    plan.known.insert(key, vector.to_vec());
                    plan.stats.reused += 1;
                } else {
                    plan.missing.push((key, window));
                }
            }
            plan.keys.push(keys);
        }
        plan.stats.embedded = plan.missing.len() as u64;
        plan
    }

    /// Embed the plan's missing windows (one embedder call for all, so batching and length
    /// sorting see every window) and assemble each text's vectors.
    fn embed_planned(&self, mut plan: Plan<'_>) -> Result<Vec<Embedded>> {
        if !plan.missing.is_empty() {
            let inputs: Vec<&str> = plan.missing.iter().map(|&(_, text)| text).collect();
            let vectors = self.embedder.embed_all(&inputs)?;
            for (&(key, _), vector) in plan.missing.iter().zip(vectors) {
                plan.known.insert(key, vector);
            }
        }
        self.embedding.add(plan.stats);
        let dimension = self.embedder.dimension();
        plan.keys
            .into_iter()
            .map(|keys| {
                let mut vector = Vec::with_capacity(keys.len() * dimension);
                for key in &keys {
                    // `embed_all` checked one vector per input, so every key has one.
                    let window = plan.known.get(key).ok_or_else(|| {
                        Error::from(EmbedError::failed("no vector for a window of the write"))
                    })?;
                    vector.extend_from_slice(window);
                }
                Ok(Embedded { vector, keys })
            })
            .collect()
    }
}
