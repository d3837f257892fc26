//! The state `Memories` keeps and its parts share: the facade's fields, a user's cached index
//! and fact table, a turn being written, the embedding counters and where dense search runs.
//! Plain data with no behaviour of the facade's, so every part of `memories` reads it without
//! reaching into another part.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::Serialize;

use mnemos_core::retrieval::{RelevanceModel, Reranker, RetrievalConfig, ScopeIndex, TextKey};
use mnemos_core::{Clock, Embedder, Job, Memory, MemoryModel, Result, Store, Turn, UserKey};
use mnemos_text::Analyzer;

use crate::truth::facts::FactTable;
use crate::truth::{PrivacySettings, WritePolicy};

/// Plans the jobs a write's turns cause: called with the turns of one user, in order, once
/// they have ids and rounds; returns one job list per turn. It may be called again for the
/// same write (after a conflict, with new rounds), so it must not keep state between calls.
pub(crate) type TurnPlanner<'a> = dyn FnMut(&[Turn]) -> Result<Vec<Vec<Job>>> + 'a;

/// The write policy of an agent (by name): what its preset wants done with its turns.
pub(crate) type PolicyOf<'a> = dyn Fn(&str) -> WritePolicy + 'a;

/// One input turn on its way into the store.
pub(super) struct Prepared {
    pub(super) turn: Turn,
    pub(super) memory: Memory,
    /// The caller gave the round (a dataset replay); it is not renumbered.
    pub(super) explicit_round: bool,
    /// What the turn states (empty unless its agent's write policy asks for supersession).
    pub(super) analysis: mnemos_text::Analysis,
    /// A fact memory per statement, not yet decided on (see `truth::supersede`).
    pub(super) facts: Vec<Memory>,
    /// Their vectors, once embedded (same order).
    pub(super) fact_vectors: Vec<Embedded>,
}

/// Numbers about one user's derived index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexStats {
    pub memories: usize,
    pub vectors: usize,
    pub vocabulary: usize,
    /// Vectors computed while (re)building because the store had none for this embedder.
    pub embedded_on_build: usize,
    /// Index builds (of any user) this engine has finished so far.
    pub builds: u64,
}

/// One user's cache: the index, once built, and the store's data version of the user read
/// before the build read anything (`None`: the store could not tell yet).
#[derive(Default)]
pub(super) struct Cached {
    pub(super) index: Option<ScopeIndex>,
    pub(super) version: Option<u64>,
    /// The user's facts, loaded from the store when first needed after a (re)build.
    pub(super) facts: Option<FactTable>,
}

impl Cached {
    /// Built, and as far as the store can tell (`version`, read now) not written by another
    /// handle since.
    pub(super) fn is_current(&self, version: Option<u64>) -> bool {
        self.index.is_some() && (version.is_none() || version == self.version)
    }
}

pub(super) type ScopeSlot = Arc<RwLock<Cached>>;

/// The memory base: store + embedder + per-user retrieval caches.
pub struct Memories {
    pub(super) store: Arc<dyn Store>,
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) analyzer: &'static Analyzer,
    pub(super) config: RetrievalConfig,
    pub(super) rerankers: Vec<Box<dyn Reranker>>,
    /// Classifies queries for requests that re-rank by memory type.
    pub(super) model: Option<Arc<dyn MemoryModel>>,
    pub(super) indexes: Mutex<HashMap<UserKey, ScopeSlot>>,
    pub(super) last_build: Mutex<IndexStats>,
    /// Index builds finished so far.
    pub(super) builds: AtomicU64,
    /// What the write path's embedding did and saved.
    pub(super) embedding: EmbeddingCounters,
    /// Where dense search runs (chosen once, at construction).
    pub(super) dense: DenseSearch,
    /// What the write path redacts.
    pub(super) privacy: PrivacySettings,
    /// How relevant a hit is (the configured model, or the shipped fit for the embedder).
    pub(super) relevance: RelevanceModel,
    /// How relevant a hit of a query written mostly in CJK is, when that takes another model
    /// (see [`ShippedRelevance::cjk`](mnemos_core::retrieval::ShippedRelevance::cjk)).
    pub(super) relevance_cjk: Option<RelevanceModel>,
    /// Why the relevance model is not one fitted for this embedder, if it is not.
    pub(super) relevance_note: Option<String>,
}

/// What the write path's embedding did since the engine started: each count is of embedder
/// inputs (a short text is one input, a long one one per window).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EmbeddingStats {
    /// Inputs sent to the embedder.
    pub embedded: u64,
    /// Inputs identical to an earlier input of the same write: that input's vector was used.
    pub repeated: u64,
    /// Inputs the user's index already held a vector for: that vector was used.
    pub reused: u64,
}

impl EmbeddingStats {
    /// Inputs that needed a vector, embedded or not.
    pub fn inputs(&self) -> u64 {
        self.embedded + self.repeated + self.reused
    }
}

/// [`EmbeddingStats`] as the engine counts them, from any thread.
#[derive(Default)]
pub(super) struct EmbeddingCounters {
    embedded: AtomicU64,
    repeated: AtomicU64,
    reused: AtomicU64,
}

impl EmbeddingCounters {
    pub(super) fn snapshot(&self) -> EmbeddingStats {
        EmbeddingStats {
            embedded: self.embedded.load(Ordering::Relaxed),
            repeated: self.repeated.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }

    pub(super) fn add(&self, stats: EmbeddingStats) {
        self.embedded.fetch_add(stats.embedded, Ordering::Relaxed);
        self.repeated.fetch_add(stats.repeated, Ordering::Relaxed);
        self.reused.fetch_add(stats.reused, Ordering::Relaxed);
    }
}

/// One searchable text's vectors (one per window, concatenated) and its windows' content keys,
/// which the index keeps so that later writes can reuse them.
pub(super) struct Embedded {
    pub(super) vector: Vec<f32>,
    pub(super) keys: Vec<TextKey>,
}

/// Where this engine's dense search runs, and why: reported at start-up and by health checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum DenseSearch {
    /// Exact brute force over each user's vectors, held in this process.
    InProcess { why: String },
    /// The store's index answers nearest-neighbour queries; this process holds no vectors.
    Store { index: String },
}

impl DenseSearch {
    pub fn in_store(&self) -> bool {
        matches!(self, DenseSearch::Store { .. })
    }
}

impl fmt::Display for DenseSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenseSearch::InProcess { why } => write!(f, "in process (exact brute force): {why}"),
            DenseSearch::Store { index } => write!(f, "in the store: {index}"),
        }
    }
}
