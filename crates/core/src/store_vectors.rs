//! What a store is, and the nearest-neighbour search a store can run itself.
//!
//! By default the engine keeps every user's vectors in process and scores them by brute force
//! (exact, and fast at the sizes one user has). A store backed by a database with a vector index
//! (PostgreSQL with pgvector) can answer nearest-neighbour queries itself instead: servers then
//! hold no vectors, and rebuilding a user's cache after another server wrote reads no vectors.

use serde::{Deserialize, Serialize};

use crate::model::{MemoryId, UserKey};
use crate::store::StoreResult;

/// Which kind of store backs an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// The in-memory reference store (nothing survives the process).
    Memory,
    /// One SQLite file.
    Sqlite,
    /// A PostgreSQL database, shareable by several servers.
    Postgres,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Memory => "memory",
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
        }
    }
}

/// A store's description for start-up reports and health checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreInfo {
    pub kind: BackendKind,
    /// Where the data lives (a path, or a URL without its password).
    pub location: String,
    /// The store's own vector search: its name when it has one, or why it has none.
    pub vector_search: Result<String, String>,
}

/// Nearest-neighbour search run by the store (see the module docs).
///
/// Contract (checked by `mnemos-conformance` for stores that offer it):
/// - A model is searchable once [`prepare`](Self::prepare) registered it with its window
///   dimension; from then on every vector of that model the store holds, stored before or
///   after, is found. A stored vector of `n × dim` floats is `n` windows of `dim`; a memory's
///   similarity is its best window's.
/// - [`nearest`](Self::nearest) returns at most `k` distinct active memories of `user` (never
///   another user's, never a forgotten one), best first, with the cosine similarity of their
///   best window. It may be approximate (an ANN index); recall is a benchmark, not a contract.
/// - [`coverage`](Self::coverage) lists, for every active memory of `user` holding a vector of
///   `model`, its length in floats, so callers can tell which memories need (re-)embedding
///   without reading the vectors.
/// - A store may defer the work of its approximate index: a write then only stores its
///   windows, and [`catch_up`](Self::catch_up) moves them into the index later: at most
///   `max_windows` one by one, or every waiting window at once when the store rebuilds its
///   index instead (faster for a big backlog). Windows not yet indexed are still found,
///   exactly, by `nearest`: deferring changes speed, never what is found. Stores that index as
///   they write report nothing to do.
pub trait VectorSearch: Send + Sync {
    /// Make `model`'s vectors, `dim` floats per window, searchable (idempotent). Registering a
    /// model again with another dimension is an `InvalidWrite`.
    fn prepare(&self, model: &str, dim: usize) -> StoreResult<()>;
    /// The `k` memories of `user` nearest to `query` in `model`'s space (see the contract).
    fn nearest(
        &self,
        user: &UserKey,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> StoreResult<Vec<(MemoryId, f32)>>;
    /// Vector lengths (in floats) of `user`'s active memories in `model`'s space.
    fn coverage(&self, user: &UserKey, model: &str) -> StoreResult<Vec<(MemoryId, usize)>>;
    /// Move up to `max_windows` of `model`'s windows written since into the approximate index,
    /// or all of them by a rebuild (see the contract), and say how many were moved and how
    /// many are left. A call that moved nothing while some are left means another client is
    /// doing the work: call again later.
    fn catch_up(&self, model: &str, max_windows: usize) -> StoreResult<CatchUp>;
}

/// What one [`VectorSearch::catch_up`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatchUp {
    /// Windows moved into the index by this call.
    pub indexed: u64,
    /// Windows still waiting (searched exactly until they are indexed).
    pub remaining: u64,
}
