//! An embedder that remembers every vector it computed, so presets run side by side on the same
//! data embed each text once. Evaluation only: the cache grows without bound, and write
//! latencies measured through it exclude embedding (the runner reports embedding cost apart).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemos_core::{EmbedError, Embedder};
use parking_lot::Mutex;

pub struct CachingEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Mutex<HashMap<String, Vec<f32>>>,
    /// Query vectors apart: a model may embed a query unlike the same text as a passage.
    queries: Mutex<HashMap<String, Vec<f32>>>,
    /// Texts the inner model embedded, and the time it took.
    computed: Mutex<(usize, Duration)>,
}

impl CachingEmbedder {
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        CachingEmbedder {
            inner,
            cache: Mutex::new(HashMap::new()),
            queries: Mutex::new(HashMap::new()),
            computed: Mutex::new((0, Duration::ZERO)),
        }
    }

    /// Embed `texts` ahead of the run (duplicates and cached texts are skipped), calling
    /// `progress` with the number of texts done after each batch.
    pub fn warm(&self, texts: &[&str], progress: &dyn Fn(u64)) -> Result<(), EmbedError> {
        let mut missing: Vec<&str> = {
            let cache = self.cache.lock();
            texts
                .iter()
                .copied()
                .filter(|t| !cache.contains_key(*t))
                .collect()
        };
        missing.sort_unstable();
        missing.dedup();
        for chunk in missing.chunks(self.inner.max_batch().clamp(1, 64)) {
            self.embed_batch(chunk)?;
            progress(chunk.len() as u64);
        }
        Ok(())
    }

    /// Texts embedded by the inner model so far, and the mean time per text.
    pub fn cost(&self) -> (usize, Option<Duration>) {
        let (n, total) = *self.computed.lock();
        (n, (n > 0).then(|| total / n as u32))
    }
}

impl Embedder for CachingEmbedder {
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
        self.cached(&self.cache, texts, |t| self.inner.embed_batch(t))
    }

    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.cached(&self.queries, texts, |t| self.inner.embed_query_batch(t))
    }
}

impl CachingEmbedder {
    /// `texts`' vectors from `cache`, computing the missing ones with `embed`.
    fn cached(
        &self,
        cache: &Mutex<HashMap<String, Vec<f32>>>,
        texts: &[&str],
        embed: impl Fn(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let missing: Vec<&str> = {
            let cache = cache.lock();
            let mut missing: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|t| !cache.contains_key(*t))
                .collect();
            missing.sort_unstable();
            missing.dedup();
            missing
        };
        if !missing.is_empty() {
            let started = Instant::now();
            let vectors = embed(&missing)?;
            let elapsed = started.elapsed();
            {
                let mut computed = self.computed.lock();
                computed.0 += missing.len();
                computed.1 += elapsed;
            }
            let mut cache = cache.lock();
            for (text, vector) in missing.into_iter().zip(vectors) {
                cache.insert(text.to_string(), vector);
            }
        }
        let cache = cache.lock();
        texts
            .iter()
            .map(|t| {
                cache.get(*t).cloned().ok_or_else(|| {
                    EmbedError::Unavailable("the embedder returned too few vectors".into())
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_testkit::embedders::{Recording, TrigramEmbedder};

    #[test]
    fn each_text_is_embedded_once_and_order_is_kept() {
        let inner = Recording::new("counting", false);
        let cache = CachingEmbedder::new(inner.clone());
        cache.warm(&["a", "bb", "a"], &|_| {}).unwrap();
        assert_eq!(inner.count(), 2);
        let texts = ["bb", "ccc", "a", "ccc"];
        let vectors = cache.embed_batch(&texts).unwrap();
        assert_eq!(inner.count(), 3);
        assert_eq!(vectors, TrigramEmbedder.embed_batch(&texts).unwrap());
        assert_eq!(cache.cost().0, 3);
    }
}
