//! mnemos core: the data model, the traits every layer composes through (`Store`, `Embedder`,
//! `MemoryModel`, `Clock`), the in-memory reference store, and the hybrid retrieval pipeline.
//!
//! Core does no IO: no files, no network, no SQL. Store and embedder crates implement the traits.

pub mod deadline;
pub mod defaults;
pub mod embed;
pub mod error;
pub mod export;
pub mod memory_model;
pub mod memstore;
pub mod model;
pub mod store;
pub mod store_proxy;
pub mod store_vectors;
pub mod task_text;
pub mod vector_space;

pub use deadline::Deadline;
pub use embed::{Embedder, EmbedderExt, RecentTextCache};
pub use error::{Conflict, EmbedError, Error, ErrorClass, Result, StoreError};
pub use export::{ExportCounts, MemoryExport, UserExport};
pub use memory_model::{MemoryModel, MemoryModelExt, ModelError, ModelResult, Task, TaskOutput};
pub use memstore::MemoryStore;
pub use model::*;
pub use store::*;
pub use store_proxy::StoreProxy;
pub use store_vectors::{BackendKind, CatchUp, StoreInfo, VectorSearch};
pub use task_text::{TaskName, TaskTextOptions};
pub use vector_space::{ReembedOptions, ReembedReport, ReembedStep, SpaceMismatch, VectorSpace};
pub mod retrieval;
pub mod views;

pub use retrieval::{
    Fusion, Hit, HopSignal, Quantization, RetrievalConfig, RetrieverKind, ScoreBreakdown,
    SearchFilter, SecondHop, VectorPlacement,
};
