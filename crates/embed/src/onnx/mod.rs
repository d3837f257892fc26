//! The `onnx` embedding runtime: BERT sentence encoders run by ONNX Runtime.
//!
//! ONNX Runtime's CPU kernels (MLAS) and fused transformer operators run these small encoders
//! closer to the machine's matrix-multiply floor than candle does, and without PyTorch's
//! per-call overhead (see `docs/results/retrieval.md`). The runtime's shared library comes from
//! the pinned PyPI wheel ([`crate::fetch::ONNXRUNTIME`]) and is loaded at run time, so building
//! mnemos downloads nothing; the graph is written from the shipped weights by
//! [`graph::build`].

pub(crate) mod graph;
mod proto;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use mnemos_core::EmbedError;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights};
use ort::session::Session;
use ort::value::Tensor;

use crate::fetch::ONNXRUNTIME;
pub use graph::{EncoderShape, GraphInput, Weights};

/// The process-wide runtime: the library is loaded and its environment built once; a failure
/// is kept, so every later attempt reports the same cause instead of a confusing second one.
static RUNTIME: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// Where ONNX Runtime's library is: `MNEMOS_ONNXRUNTIME_DIR`, else the verified cache, else
/// (when `fetch` allows) downloaded into the cache from PyPI first.
pub fn runtime_library(fetch: bool, progress: bool) -> Result<PathBuf, EmbedError> {
    let dir = if fetch {
        ONNXRUNTIME.resolve_or_fetch(None, progress)?
    } else {
        ONNXRUNTIME.resolve(None)?
    };
    Ok(dir.join(ONNXRUNTIME.files[0].name))
}

/// Load ONNX Runtime from `library` (once per process; later calls return the first outcome).
fn environment(library: &Path) -> Result<&'static ort::environment::Environment, EmbedError> {
    let result = RUNTIME.get_or_init(|| {
        let builder = ort::init_from(library)
            .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", library.display()))?;
        builder
            .with_name("mnemos")
            .with_telemetry(false)
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime ({}): {e}", library.display()))
    });
    result
        .as_ref()
        .map_err(|message| EmbedError::Unavailable(message.clone()))
}

/// One encoder graph in ONNX Runtime sessions: one with every core for a single group of
/// sequences (a query's latency), and one single-threaded session per core so that several
/// groups of a large batch run side by side, as the candle workers do.
pub(crate) struct OnnxEncoder {
    name: &'static str,
    latency: Mutex<Session>,
    workers: Vec<Mutex<Session>>,
    /// The weights in the layout the kernels read (prepacked once), shared by every session:
    /// one copy in memory and in cache instead of one per session.
    _prepacked: PrepackedWeights,
}

impl OnnxEncoder {
    /// Build the graph from `weights` and open the sessions. `threads` is the number of cores
    /// to use. Each session keeps its own copy of the weights as given (ONNX Runtime copies
    /// initializers out of the graph); the copies its kernels read are shared.
    pub(crate) fn new(
        name: &'static str,
        library: &Path,
        weights: Weights,
        shape: EncoderShape,
        input: GraphInput,
        threads: usize,
    ) -> Result<Self, EmbedError> {
        let env = environment(library)?;
        let model = graph::build(&weights, shape, input)
            .map_err(|e| EmbedError::Unavailable(format!("{name}: {e}")))?;
        // The graph holds its own copy; freeing this one first lowers the peak while the
        // sessions load theirs.
        drop(weights);
        let threads = threads.max(1);
        let prepacked = PrepackedWeights::new();
        let open = |threads| open_session(env, name, &model, threads, &prepacked);
        let latency = Mutex::new(open(threads)?);
        let workers = if threads > 1 {
            (0..threads)
                .map(|_| open(1).map(Mutex::new))
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        Ok(OnnxEncoder {
            name,
            latency,
            workers,
            _prepacked: prepacked,
        })
    }

    /// Worker sessions for running groups side by side (empty with one core).
    pub(crate) fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Pooled (unnormalized) vectors of one right-padded group on the latency session
    /// (`worker = None`) or on worker session `worker`. `input` is what the graph was built to
    /// take: `[rows, len]` token ids, or `[rows, len, hidden]` embedded inputs.
    pub(crate) fn forward(
        &self,
        worker: Option<usize>,
        input: EncoderInput,
        mask: Vec<i32>,
        rows: usize,
        len: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let session = match worker {
            Some(i) => self.workers.get(i).unwrap_or(&self.latency),
            None => &self.latency,
        };
        let failed = |e: &dyn std::fmt::Display| {
            EmbedError::failed(format!("{} forward pass (ONNX Runtime): {e}", self.name))
        };
        let shape = [rows as i64, len as i64];
        let mask = Tensor::from_array((shape, mask)).map_err(|e| failed(&e))?;
        // A poisoned lock only means another call panicked mid-run; the session itself holds
        // no state between runs, so it is still usable.
        let mut session = session.lock().unwrap_or_else(|p| p.into_inner());
        let outputs = match input {
            EncoderInput::TokenIds(ids) => {
                let ids = Tensor::from_array((shape, ids)).map_err(|e| failed(&e))?;
                session.run(ort::inputs![graph::INPUT_IDS => ids, graph::ATTENTION_MASK => mask])
            }
            EncoderInput::Embedded(embedded) => {
                let hidden = embedded.len() / (rows * len).max(1);
                let shape = [rows as i64, len as i64, hidden as i64];
                let embedded = Tensor::from_array((shape, embedded)).map_err(|e| failed(&e))?;
                session
                    .run(ort::inputs![graph::EMBEDDED => embedded, graph::ATTENTION_MASK => mask])
            }
        }
        .map_err(|e| failed(&e))?;
        let (out_shape, data) = outputs[graph::POOLED]
            .try_extract_tensor::<f32>()
            .map_err(|e| failed(&e))?;
        let dim = out_shape.get(1).copied().unwrap_or(0).max(0) as usize;
        if out_shape.first().copied() != Some(rows as i64) || dim == 0 {
            return Err(failed(&format!("unexpected output shape {out_shape:?}")));
        }
        Ok(data.chunks(dim).map(<[f32]>::to_vec).collect())
    }
}

/// A group's input, in the form the graph takes ([`GraphInput`]).
pub(crate) enum EncoderInput {
    TokenIds(Vec<i32>),
    Embedded(Vec<f32>),
}

fn open_session(
    env: &ort::environment::Environment,
    name: &str,
    model: &[u8],
    threads: usize,
    prepacked: &PrepackedWeights,
) -> Result<Session, EmbedError> {
    let unavailable =
        |e: &dyn std::fmt::Display| EmbedError::Unavailable(format!("{name} (ONNX Runtime): {e}"));
    let builder = Session::builder(env).map_err(|e| unavailable(&e))?;
    // Each step's error carries the builder back (a large value), so each is mapped at once.
    let builder = builder
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| unavailable(&e))?;
    let builder = builder
        .with_intra_threads(threads)
        .map_err(|e| unavailable(&e))?;
    let builder = builder.with_inter_threads(1).map_err(|e| unavailable(&e))?;
    // Idle pool threads sleep instead of spinning: a spinning pool steals the core that
    // the other worker sessions (or the rest of the engine) need.
    let builder = builder
        .with_intra_op_spinning(false)
        .map_err(|e| unavailable(&e))?;
    let builder = builder
        .with_prepacked_weights(prepacked)
        .map_err(|e| unavailable(&e))?;
    let mut builder = builder
        .with_log_level(ort::logging::LogLevel::Error)
        .map_err(|e| unavailable(&e))?;
    builder
        .commit_from_memory(model)
        .map_err(|e| unavailable(&e))
}
