//! Embedders for tests: deterministic, weights-free and tiny, so a test's vectors are the same
//! on every machine and cost nothing to compute.

use std::sync::Arc;

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

/// The trigram embedder under a name of its own, recording every input it is asked to embed.
/// `flip` negates its vectors: another model, another vector space.
pub struct Recording {
    id: &'static str,
    flip: bool,
    inputs: Mutex<Vec<String>>,
}

impl Recording {
    pub fn new(id: &'static str, flip: bool) -> Arc<Self> {
        Arc::new(Recording {
            id,
            flip,
            inputs: Mutex::new(Vec::new()),
        })
    }

    /// The inputs embedded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.inputs.lock())
    }

    pub fn vector_of(&self, windows: &[&str]) -> Vec<f32> {
        self.embed_batch(windows).unwrap().concat()
    }
}

impl Embedder for Recording {
    fn id(&self) -> &str {
        self.id
    }
    fn dimension(&self) -> usize {
        64
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = TrigramEmbedder.embed_batch(texts)?;
        if self.flip {
            vectors.iter_mut().flatten().for_each(|x| *x = -*x);
        }
        self.inputs
            .lock()
            .extend(texts.iter().map(|t| t.to_string()));
        Ok(vectors)
    }
}
