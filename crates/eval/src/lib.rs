//! Evaluation: dataset loaders, the JSONL turn reader, retrieval and text-scoring metrics,
//! MemBench's streaming protocol and runner, and run artifacts (output directory, checksums,
//! charts).
//!
//! Datasets are read from a path given at run time (they live beside the repository, never in
//! it) and converted to one common form, [`RetrievalDataset`], so runners and metrics do not
//! care which benchmark they measure. Datasets whose supervision is not gold item labels keep a
//! type of their own: LUFY's importance annotations ([`lufy`]), ZH-4O's memory labels and
//! probes ([`zh4o`]), MemoryBank's unanswered probing questions ([`memorybank`]); they are
//! scored with [`scoring`].
//!
//! The evaluation commands are library calls too: [`experiment`] runs presets side by side
//! over the same prepared data (one engine each, one runner), and [`report`] turns each
//! command's typed settings into a report that serializes to JSON and renders as markdown.

pub mod artifacts;
#[cfg(feature = "clap")]
pub mod cli;
pub mod compression;
pub mod dataset;
pub mod demo;
pub mod embed_cache;
pub mod error;
pub mod experiment;
pub mod extraction;
pub mod forget_probes;
pub mod format;
mod json;
pub mod jsonl;
pub mod judge;
pub mod locomo;
pub mod lufy;
pub mod memdaily;
pub mod memorybank;
pub mod metrics;
pub mod perltqa;
pub mod plot;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod scoring;
pub mod search_bench;
pub mod search_profile;
pub mod source;
pub mod summary;
pub mod text;
pub mod update_probes;
pub mod zh4o;

pub use artifacts::{
    checksum_inputs, sha256_file, ArtifactError, InputChecksum, JsonlWriter, OutDir,
};
pub use dataset::{
    Conversation, DatasetSummary, Defect, DefectAction, Item, MemoryClass, Question,
    RetrievalDataset,
};
pub use error::{DatasetError, EvalError, LineError, MAX_REPORTED_LINE_ERRORS};
pub use format::{load_retrieval_dataset, sniff_bytes, sniff_format, Format, QuestionDataset};
pub use jsonl::{parse_turn_line, read_turn_file, read_turn_lines, JsonlRead, TurnRecord};
pub use locomo::{load_locomo, load_locomo_observations, LocomoObservations};
pub use memdaily::load_memdaily;
pub use memorybank::{load_memorybank, MemoryBankDataset, MemoryBankLanguage, MemoryBankProbe};
pub use metrics::{
    LatencyStats, LatencySummary, Ranking, RetrievalScores, ScoreReport, ScoreSummary,
    SessionRecall,
};
pub use perltqa::{load_perltqa, load_perltqa_dir};
pub use plot::{plot_font, write_line_chart, LineChart, PlotError, PlotOutput, Series};
pub use scoring::{
    answer_in_context, best_rouge_l_matches, extraction_score, importance_agreement,
    normalize_answer, rouge_l, rouge_n, token_f1, tokenize, ExtractionScore, Granularity,
    ImportanceAgreement, Prf,
};
pub use source::{dataset_turns, jsonl_turns, read_turns, TurnDefaults, TurnSource, LABEL_KEY};
pub use zh4o::{
    load_zh4o, Zh4oDataset, Zh4oDialogue, Zh4oInsert, Zh4oLabel, Zh4oMessage, Zh4oProbe, Zh4oQuery,
};
