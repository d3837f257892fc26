//! mnemos core: the data model, the traits every layer composes through (`Store`, `Embedder`,
//! `MemoryModel`, `Clock`), the in-memory reference store, and the hybrid retrieval pipeline.
//!
//! Core does no IO: no files, no network, no SQL. Store and embedder crates implement the traits.

pub mod embed;
pub mod error;
pub mod memory_model;
pub mod memstore;
pub mod model;
pub mod store;

pub use embed::{Embedder, EmbedderExt};
pub use error::{EmbedError, Error, Result, StoreError};
pub use memory_model::{MemoryModel, MemoryModelExt, ModelError, ModelResult, Task, TaskOutput};
pub use memstore::MemoryStore;
pub use model::*;
pub use store::*;
pub mod memories;
pub mod retrieval;

pub use memories::{
    AddedTurn, IndexStats, Memories, NewTurn, SearchRequest, SearchResults, SearchTimings,
};
pub use retrieval::{
    Fusion, Hit, HopSignal, Quantization, RetrievalConfig, RetrieverKind, ScoreBreakdown,
    SearchFilter, SecondHop,
};
