//! Evaluation: dataset loaders, the JSONL turn reader, retrieval metrics, and run artifacts
//! (output directory, input checksums, charts).
//!
//! Datasets are read from a path given at run time (they live beside the repository, never in
//! it) and converted to one common form, [`RetrievalDataset`], so runners and metrics do not
//! care which benchmark they measure.

pub mod artifacts;
pub mod dataset;
pub mod embed_cache;
pub mod error;
pub mod format;
mod json;
pub mod jsonl;
pub mod locomo;
pub mod lufy;
pub mod memdaily;
pub mod metrics;
pub mod protocol;
pub mod runner;
pub mod summary;
pub mod perltqa;
pub mod plot;
pub mod text;

pub use artifacts::{
    checksum_inputs, sha256_file, ArtifactError, InputChecksum, JsonlWriter, OutDir,
};
pub use dataset::{
    Conversation, DatasetSummary, Defect, DefectAction, Item, MemoryClass, Question,
    RetrievalDataset,
};
pub use error::{DatasetError, LineError, MAX_REPORTED_LINE_ERRORS};
pub use format::{load_retrieval_dataset, sniff_bytes, sniff_format, Format};
pub use jsonl::{parse_turn_line, read_turn_file, read_turn_lines, JsonlRead, TurnRecord};
pub use locomo::load_locomo;
pub use memdaily::load_memdaily;
pub use metrics::{
    LatencyStats, LatencySummary, Ranking, RetrievalScores, ScoreReport, ScoreSummary,
};
pub use perltqa::{load_perltqa, load_perltqa_dir};
pub use plot::{plot_font, write_line_chart, LineChart, PlotError, PlotOutput, Series};
