//! The `Embedder` contract: text in, fixed-dimension unit vectors out.

use crate::error::EmbedError;

/// Turns texts into dense vectors.
///
/// Contract:
/// - `embed_batch` returns exactly one vector per input, in input order, each of length
///   `dimension()`, finite, L2-normalized (norm 1 ± 1e-3; the all-zero vector is allowed for
///   texts with no features).
/// - `id()` names the model *and* its output space; vectors of different ids are never compared.
/// - Implementations are deterministic for the same input and thread-safe.
pub trait Embedder: Send + Sync {
    /// Stable identity of the vector space, e.g. `minilm-l6-v2` or `hash-v1-384`.
    fn id(&self) -> &str;
    fn dimension(&self) -> usize;
    /// Largest batch the implementation wants at once; `embed_all` splits larger inputs.
    fn max_batch(&self) -> usize {
        32
    }
    /// Embed one batch (the one required method).
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Conveniences every embedder gets: chunked batching and contract checks.
pub trait EmbedderExt: Embedder {
    /// Embed any number of texts in chunks of `max_batch()`, checking count, dimension and
    /// finiteness of every vector.
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.max_batch().max(1)) {
            let vectors = self.embed_batch(chunk)?;
            check_vectors(self.dimension(), chunk.len(), &vectors)?;
            out.extend(vectors);
        }
        Ok(out)
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed_all(&[text])?;
        v.pop().ok_or(EmbedError::Count {
            expected: 1,
            got: 0,
        })
    }
}

impl<E: Embedder + ?Sized> EmbedderExt for E {}

/// Verify an embedder's output against its contract.
pub fn check_vectors(
    dimension: usize,
    expected: usize,
    vectors: &[Vec<f32>],
) -> Result<(), EmbedError> {
    if vectors.len() != expected {
        return Err(EmbedError::Count {
            expected,
            got: vectors.len(),
        });
    }
    for v in vectors {
        if v.len() != dimension {
            return Err(EmbedError::Dimension {
                expected: dimension,
                got: v.len(),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::NonFinite);
        }
    }
    Ok(())
}

/// Cosine similarity of two vectors; 0 when either is all zeros or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        dot / (aa.sqrt() * bb.sqrt())
    }
}

/// L2-normalize in place; leaves the zero vector as is.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

impl<E: Embedder + ?Sized> Embedder for std::sync::Arc<E> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
    fn max_batch(&self) -> usize {
        (**self).max_batch()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_batch(texts)
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
    fn max_batch(&self) -> usize {
        (**self).max_batch()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_batch(texts)
    }
}
