//! Embedders for tests: deterministic, weights-free and tiny, so a test's vectors are the same
//! on every machine and cost nothing to compute.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemos_core::{EmbedError, Embedder};
use parking_lot::Mutex;

/// Character-trigram counts hashed into 64 buckets and normalized: texts sharing words land
/// near each other, in any script.
pub struct TrigramEmbedder;

impl Embedder for TrigramEmbedder {
    fn id(&self) -> &str {
        "test-trigram-64"
    }
    fn dimension(&self) -> usize {
        64
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let chars: Vec<char> = t.to_lowercase().chars().collect();
                let mut v = vec![0.0f32; 64];
                for w in chars.windows(3) {
                    let h = w
                        .iter()
                        .fold(7u32, |h, c| h.wrapping_mul(31).wrapping_add(*c as u32));
                    v[(h % 64) as usize] += 1.0;
                }
                mnemos_core::embed::normalize(&mut v);
                v
            })
            .collect())
    }
}

/// Another embedder (the trigram one unless given) under a name of its own, recording every
/// input it is asked to embed. `flip` negates its vectors: another model, another vector space.
pub struct Recording {
    id: String,
    inner: Arc<dyn Embedder>,
    flip: bool,
    inputs: Mutex<Vec<String>>,
}

impl Recording {
    /// The trigram embedder named `id`, its vectors negated when `flip`.
    pub fn new(id: &str, flip: bool) -> Arc<Self> {
        Arc::new(Recording {
            id: id.to_string(),
            inner: Arc::new(TrigramEmbedder),
            flip,
            inputs: Mutex::new(Vec::new()),
        })
    }

    /// `inner` as it is (same id, same vectors), recording its inputs.
    pub fn wrap(inner: Arc<dyn Embedder>) -> Arc<Self> {
        Arc::new(Recording {
            id: inner.id().to_string(),
            inner,
            flip: false,
            inputs: Mutex::new(Vec::new()),
        })
    }

    /// The inputs embedded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.inputs.lock())
    }

    /// How many inputs were embedded since the last [`take`](Self::take).
    pub fn count(&self) -> usize {
        self.inputs.lock().len()
    }

    /// The vector a text split into `windows` is stored with: its windows' vectors, in order.
    pub fn vector_of(&self, windows: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed_batch(windows)?.concat())
    }
}

impl Embedder for Recording {
    fn id(&self) -> &str {
        &self.id
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = self.inner.embed_batch(texts)?;
        if self.flip {
            vectors.iter_mut().flatten().for_each(|x| *x = -*x);
        }
        self.inputs
            .lock()
            .extend(texts.iter().map(|t| t.to_string()));
        Ok(vectors)
    }
}

/// The same unit vector for every text, under `id`: a model whose cosine says nothing.
pub struct Constant {
    id: String,
    dimension: usize,
}

impl Constant {
    pub fn new(id: &str, dimension: usize) -> Self {
        Self {
            id: id.to_string(),
            dimension: dimension.max(1),
        }
    }
}

impl Embedder for Constant {
    fn id(&self) -> &str {
        &self.id
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let value = 1.0 / (self.dimension as f32).sqrt();
        Ok(texts.iter().map(|_| vec![value; self.dimension]).collect())
    }
}

/// Two dimensions: texts holding `word` point one way, all others the other way.
pub struct Keyword(pub &'static str);

impl Embedder for Keyword {
    fn id(&self) -> &str {
        "test-keyword-2"
    }
    fn dimension(&self) -> usize {
        2
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| match t.contains(self.0) {
                true => vec![1.0, 0.0],
                false => vec![0.0, 1.0],
            })
            .collect())
    }
}

/// `inner`, one text at a time, burning `per_text` of CPU on each: a stand-in for a slow model
/// (what a request's time limit must stop).
pub struct Slow {
    pub inner: Arc<dyn Embedder>,
    pub per_text: Duration,
}

impl Embedder for Slow {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn max_batch(&self) -> usize {
        1
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        for _ in texts {
            let started = Instant::now();
            let mut x = 0u64;
            while started.elapsed() < self.per_text {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        self.inner.embed_batch(texts)
    }
}
