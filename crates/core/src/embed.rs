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
    /// Embed one batch of texts to store and compare (the one required method).
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Embed one batch of search queries, in the same space as `embed_batch`'s texts. Models
    /// trained with distinct query and passage inputs (e5's "query: " / "passage: " prefixes)
    /// override this; for the others a query is a text like any other. Same contract as
    /// `embed_batch`.
    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_batch(texts)
    }
}

/// Conveniences every embedder gets: chunked batching and contract checks.
pub trait EmbedderExt: Embedder {
    /// Embed any number of texts in chunks of `max_batch()`, checking count, dimension and
    /// finiteness of every vector.
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        checked_chunks(self.max_batch(), self.dimension(), texts, |c| {
            self.embed_batch(c)
        })
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        only(self.embed_all(&[text])?)
    }

    /// [`Self::embed_all`] for search queries ([`Embedder::embed_query_batch`]).
    fn embed_all_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        checked_chunks(self.max_batch(), self.dimension(), texts, |c| {
            self.embed_query_batch(c)
        })
    }

    /// One search query's vector ([`Embedder::embed_query_batch`]).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        only(self.embed_all_queries(&[text])?)
    }
}

/// `texts` through `embed` in chunks of `max_batch`, each chunk's vectors checked against the
/// contract.
fn checked_chunks(
    max_batch: usize,
    dimension: usize,
    texts: &[&str],
    embed: impl Fn(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(max_batch.max(1)) {
        let vectors = embed(chunk)?;
        check_vectors(dimension, chunk.len(), &vectors)?;
        out.extend(vectors);
    }
    Ok(out)
}

/// The one vector of a one-text call.
fn only(mut vectors: Vec<Vec<f32>>) -> Result<Vec<f32>, EmbedError> {
    vectors.pop().ok_or(EmbedError::Count {
        expected: 1,
        got: 0,
    })
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
    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_query_batch(texts)
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
    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed_query_batch(texts)
    }
}

/// An embedder that remembers the vectors of the last few single texts it embedded.
///
/// A read embeds its query, and the query classifier of the same read embeds the same text
/// again; with the same embedder behind both, the second call is a lookup instead of a model
/// run. Only one-text calls are cached (queries; writes embed in batches and rarely repeat),
/// so the cache stays small and costs nothing on the write path. A text embedded as a query
/// and as a passage are two entries: some models embed them differently.
pub struct RecentTextCache {
    inner: std::sync::Arc<dyn Embedder>,
    recent: std::sync::Mutex<std::collections::VecDeque<(TextUse, String, Vec<f32>)>>,
    capacity: usize,
}

/// How a cached text was embedded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextUse {
    Passage,
    Query,
}

impl RecentTextCache {
    pub fn new(inner: std::sync::Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            inner,
            recent: std::sync::Mutex::new(std::collections::VecDeque::with_capacity(capacity)),
            capacity: capacity.max(1),
        }
    }

    fn lookup(&self, used: TextUse, text: &str) -> Option<Vec<f32>> {
        let recent = self.recent.lock().ok()?;
        recent
            .iter()
            .find(|(u, cached, _)| *u == used && cached == text)
            .map(|(_, _, vector)| vector.clone())
    }

    fn remember(&self, used: TextUse, text: &str, vector: &[f32]) {
        // A poisoned lock only means another thread panicked mid-update: skip caching.
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() >= self.capacity {
                recent.pop_front();
            }
            recent.push_back((used, text.to_string(), vector.to_vec()));
        }
    }

    /// One text through the cache, any other batch straight to the model.
    fn cached(&self, used: TextUse, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let embed = |texts: &[&str]| match used {
            TextUse::Passage => self.inner.embed_batch(texts),
            TextUse::Query => self.inner.embed_query_batch(texts),
        };
        let [text] = texts else {
            return embed(texts);
        };
        if let Some(vector) = self.lookup(used, text) {
            return Ok(vec![vector]);
        }
        let vectors = embed(texts)?;
        if let [vector] = vectors.as_slice() {
            self.remember(used, text, vector);
        }
        Ok(vectors)
    }
}

impl Embedder for RecentTextCache {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.cached(TextUse::Passage, texts)
    }

    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.cached(TextUse::Query, texts)
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counting(AtomicUsize);

    impl Embedder for Counting {
        fn id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[test]
    fn a_repeated_single_text_is_embedded_once_and_batches_pass_through() {
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let cache = RecentTextCache::new(inner.clone(), 2);
        assert_eq!(cache.embed_one("abc").unwrap(), vec![3.0, 1.0]);
        assert_eq!(cache.embed_one("abc").unwrap(), vec![3.0, 1.0]);
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
        cache.embed_all(&["abc", "de"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
        // The oldest text leaves when the cache is full.
        cache.embed_one("x").unwrap();
        cache.embed_one("y").unwrap();
        cache.embed_one("abc").unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 6);
    }

    /// A model may embed a query unlike the same text as a passage, so the cache never answers
    /// one with the other.
    #[test]
    fn a_query_and_a_passage_of_the_same_text_are_cached_apart() {
        struct Prefixing(AtomicUsize);
        impl Embedder for Prefixing {
            fn id(&self) -> &str {
                "prefixing"
            }
            fn dimension(&self) -> usize {
                2
            }
            fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
                self.0.fetch_add(texts.len(), Ordering::SeqCst);
                Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
            }
            fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
                self.0.fetch_add(texts.len(), Ordering::SeqCst);
                Ok(texts.iter().map(|_| vec![0.0, 1.0]).collect())
            }
        }
        let inner = Arc::new(Prefixing(AtomicUsize::new(0)));
        let cache = RecentTextCache::new(inner.clone(), 4);
        assert_eq!(cache.embed_one("abc").unwrap(), vec![1.0, 0.0]);
        assert_eq!(cache.embed_query("abc").unwrap(), vec![0.0, 1.0]);
        assert_eq!(cache.embed_query("abc").unwrap(), vec![0.0, 1.0]);
        assert_eq!(cache.embed_one("abc").unwrap(), vec![1.0, 0.0]);
        assert_eq!(inner.0.load(Ordering::SeqCst), 2);
    }
}
