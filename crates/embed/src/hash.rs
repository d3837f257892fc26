//! A weights-free embedder based on feature hashing.
//!
//! It exists for deployments that cannot (or do not want to) run a neural model: it needs no
//! files, starts instantly and embeds tens of thousands of sentences per second on one core.
//! Its vectors capture lexical overlap (shared words, word pairs and word fragments), not
//! meaning, so it is a deliberate configuration choice and never a silent fallback for a missing
//! model: the two produce incomparable vector spaces, which their different [`Embedder::id`]s
//! make explicit.

use mnemos_core::embed::normalize;
use mnemos_core::{EmbedError, Embedder};
use mnemos_text::Analyzer;

use crate::config::BuildError;

/// Default output dimension; matches MiniLM so storage layouts can be shared.
pub const DEFAULT_HASH_DIM: usize = 384;
/// Smallest accepted dimension: below this, collisions drown the signal.
pub const MIN_HASH_DIM: usize = 16;
/// Largest accepted dimension: beyond this, vectors cost memory without improving recall.
pub const MAX_HASH_DIM: usize = 8192;

/// Weight of a whole-word feature: the strongest lexical evidence.
const W_UNIGRAM: f32 = 1.0;
/// Weight of an adjacent word pair: rewards matching phrases, but phrases are sparse.
const W_BIGRAM: f32 = 0.6;
/// Weight of a character n-gram: a word yields several of them, so each one counts less; they
/// give partial credit for inflections, typos and Chinese words segmented differently.
const W_CHARGRAM: f32 = 0.35;

/// Distinct tags hashed in front of each feature so that, e.g., the word "the" and the
/// character trigram "the" are different features.
const TAG_UNIGRAM: u8 = 1;
const TAG_BIGRAM: u8 = 2;
const TAG_CHARGRAM: u8 = 3;

/// Feature-hashing embedder over words, word bigrams and character n-grams.
///
/// Features:
/// - every term from [`Analyzer::terms`] (English stemmed, Chinese segmented by jieba);
/// - every pair of adjacent terms;
/// - for Latin-script terms, character 3-grams of `<term>` (with boundary markers, so prefixes
///   and suffixes are distinguishable); for terms containing CJK characters, character unigrams
///   and bigrams (a Chinese character carries meaning on its own).
///
/// Each distinct feature is hashed with FNV-1a 64 plus a murmur3 finalizer (fixed, so vectors are
/// identical across runs, processes and platforms), weighted by `1 + ln(tf)` times its kind
/// weight, and added with a hash-derived sign into one of `dim` buckets; signed hashing makes
/// collisions cancel out on average instead of accumulating. The result is L2-normalized; a text
/// without features maps to the zero vector.
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dim: usize,
    id: String,
}

impl HashEmbedder {
    /// An embedder producing `dim`-dimensional vectors; `dim` must be in 16..=8192.
    pub fn new(dim: usize) -> Result<Self, BuildError> {
        if !(MIN_HASH_DIM..=MAX_HASH_DIM).contains(&dim) {
            return Err(BuildError::Invalid(format!(
                "hash embedder dimension must be in {MIN_HASH_DIM}..={MAX_HASH_DIM}, got {dim}"
            )));
        }
        Ok(HashEmbedder {
            dim,
            id: format!("hash-v1-{dim}"),
        })
    }

    /// Embed one text (never fails; exposed for callers that want to skip batching).
    pub fn embed_text(&self, text: &str) -> Vec<f32> {
        let terms = Analyzer::shared().terms(text);
        let mut features = Vec::with_capacity(terms.len() * 8);
        collect_features(&terms, &mut features);
        self.project(&mut features)
    }

    /// Turn `(hash, weight)` features into a normalized vector. Identical features are merged
    /// first so that their count goes through the sublinear `1 + ln(tf)` transform.
    fn project(&self, features: &mut [(u64, f32)]) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dim];
        // Sorting by hash groups duplicates; every feature kind has a fixed weight and its tag is
        // part of the hash, so equal hashes carry equal weights.
        features.sort_unstable_by_key(|f| f.0);
        let mut i = 0;
        while i < features.len() {
            let (h, w) = features[i];
            let mut j = i + 1;
            while j < features.len() && features[j].0 == h {
                j += 1;
            }
            let tf = (j - i) as f32;
            let weight = w * (1.0 + tf.ln());
            let bucket = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign * weight;
            i = j;
        }
        normalize(&mut v);
        v
    }
}

impl Default for HashEmbedder {
    fn default() -> Self {
        HashEmbedder {
            dim: DEFAULT_HASH_DIM,
            id: format!("hash-v1-{DEFAULT_HASH_DIM}"),
        }
    }
}

impl Embedder for HashEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    /// Hashing is cheap and memory-light, so callers may hand over large batches.
    fn max_batch(&self) -> usize {
        1024
    }

    /// Sequential on purpose: one text takes microseconds, so threads would cost more than
    /// they save, and callers that want parallelism can embed batches concurrently.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Independent per text; large batches (bulk ingest) use every core.
        if texts.len() >= 64 {
            use rayon::prelude::*;
            Ok(texts.par_iter().map(|t| self.embed_text(t)).collect())
        } else {
            Ok(texts.iter().map(|t| self.embed_text(t)).collect())
        }
    }
}

/// Append the `(hash, weight)` of every feature occurrence of `terms` to `out`.
fn collect_features(terms: &[String], out: &mut Vec<(u64, f32)>) {
    let mut prev: Option<&str> = None;
    for term in terms {
        if term.is_empty() {
            continue;
        }
        out.push((
            Fnv::new(TAG_UNIGRAM).bytes(term.as_bytes()).finish(),
            W_UNIGRAM,
        ));
        if let Some(p) = prev {
            // The 0xFF separator cannot occur in UTF-8, so ("ab","c") and ("a","bc") differ.
            let h = Fnv::new(TAG_BIGRAM)
                .bytes(p.as_bytes())
                .byte(0xFF)
                .bytes(term.as_bytes());
            out.push((h.finish(), W_BIGRAM));
        }
        prev = Some(term);
        char_ngrams(term, out);
    }
}

/// Character n-gram features of one term.
fn char_ngrams(term: &str, out: &mut Vec<(u64, f32)>) {
    if term.chars().any(is_cjk) {
        let mut last: Option<char> = None;
        for c in term.chars() {
            out.push((Fnv::new(TAG_CHARGRAM).char(c).finish(), W_CHARGRAM));
            if let Some(p) = last {
                out.push((Fnv::new(TAG_CHARGRAM).char(p).char(c).finish(), W_CHARGRAM));
            }
            last = Some(c);
        }
        return;
    }
    // Trigrams over '<' term '>' without allocating the padded string: a sliding window of
    // three characters where the markers are injected at both ends.
    let mut window: [char; 3] = ['\0'; 3];
    let mut filled = 0usize;
    let padded = std::iter::once('<')
        .chain(term.chars())
        .chain(std::iter::once('>'));
    for c in padded {
        window = [window[1], window[2], c];
        filled += 1;
        if filled >= 3 {
            let h = Fnv::new(TAG_CHARGRAM)
                .char(window[0])
                .char(window[1])
                .char(window[2]);
            out.push((h.finish(), W_CHARGRAM));
        }
    }
}

/// Whether `c` belongs to a script written without spaces between words, where single
/// characters and character pairs are the useful sub-word units.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF       // Hiragana, Katakana
        | 0x3400..=0x4DBF     // CJK Extension A
        | 0x4E00..=0x9FFF     // CJK Unified Ideographs
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // CJK Compatibility Ideographs
        | 0x20000..=0x2EBEF   // CJK Extensions B–F
    )
}

/// FNV-1a 64 with a murmur3 `fmix64` finalizer.
///
/// FNV-1a is fixed by specification (unlike std's randomly seeded hasher), so feature buckets
/// never change between runs or builds; the finalizer spreads FNV's weak high bits, which matter
/// because bit 63 is the sign and the bucket is taken modulo a non-power-of-two dimension.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new(tag: u8) -> Self {
        Fnv(Self::OFFSET).byte(tag)
    }

    #[inline]
    fn byte(self, b: u8) -> Self {
        Fnv((self.0 ^ u64::from(b)).wrapping_mul(Self::PRIME))
    }

    #[inline]
    fn bytes(self, bs: &[u8]) -> Self {
        bs.iter().fold(self, |h, &b| h.byte(b))
    }

    #[inline]
    fn char(self, c: char) -> Self {
        let mut buf = [0u8; 4];
        self.bytes(c.encode_utf8(&mut buf).as_bytes())
    }

    fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::EmbedderExt;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn fnv_matches_reference_values() {
        // Plain FNV-1a 64 test vectors, before the finalizer.
        let raw = |s: &str| Fnv(Fnv::OFFSET).bytes(s.as_bytes()).0;
        assert_eq!(raw(""), 0xcbf29ce484222325);
        assert_eq!(raw("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(raw("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn vectors_are_stable_across_runs() {
        // Pinned so that a change of hashing (which would silently invalidate stored vectors)
        // fails here; bump the id ("hash-v1") when changing the scheme on purpose.
        assert_eq!(
            Fnv::new(TAG_UNIGRAM).bytes(b"coffee").finish(),
            0xad44_4c17_5a18_16ed
        );
        // Fed with terms directly: the analyzer's normalization is versioned separately.
        let mut features = Vec::new();
        collect_features(&["coffee".to_string(), "shop".to_string()], &mut features);
        let v = HashEmbedder::new(16).unwrap().project(&mut features);
        let rounded: Vec<i32> = v.iter().map(|x| (x * 1000.0).round() as i32).collect();
        assert_eq!(
            rounded,
            [-815, 168, 0, 0, 0, 120, 0, 168, 168, -168, 0, 0, -335, -311, 0, 0]
        );
    }

    #[test]
    fn id_dimension_and_norm() {
        let e = HashEmbedder::default();
        assert_eq!(e.id(), "hash-v1-384");
        assert_eq!(e.dimension(), 384);
        let v = e
            .embed_one("I adopted a golden retriever named Max last spring")
            .unwrap();
        assert_eq!(v.len(), 384);
        let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-5, "norm {n}");
        assert_eq!(HashEmbedder::new(100).unwrap().id(), "hash-v1-100");
    }

    #[test]
    fn empty_text_is_zero_vector() {
        let e = HashEmbedder::default();
        let v = e.embed_one("").unwrap();
        assert!(v.iter().all(|&x| x == 0.0));
        let v = e.embed_one("   ").unwrap();
        assert!(v.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn rejects_bad_dimensions() {
        assert!(HashEmbedder::new(0).is_err());
        assert!(HashEmbedder::new(15).is_err());
        assert!(HashEmbedder::new(8193).is_err());
        assert!(HashEmbedder::new(16).is_ok());
        assert!(HashEmbedder::new(8192).is_ok());
    }

    #[test]
    fn lexical_similarity_orders_sensibly() {
        let e = HashEmbedder::default();
        let v = e
            .embed_all(&[
                "my sister lives in seattle",
                "my sister moved to seattle last year",
                "the quarterly report is due on friday",
                "我喜欢喝咖啡",
                "我每天早上喝咖啡",
                "明天会下雨",
            ])
            .unwrap();
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.1);
        assert!(cos(&v[3], &v[4]) > cos(&v[3], &v[5]) + 0.1);
    }

    #[test]
    fn deterministic_and_batch_independent() {
        let e = HashEmbedder::default();
        let texts: Vec<String> = (0..200)
            .map(|i| format!("sentence number {i} about topic {}", i % 7))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = e.embed_batch(&refs).unwrap();
        for (t, v) in refs.iter().zip(&batch) {
            assert_eq!(&e.embed_text(t), v);
        }
        assert_eq!(batch, e.embed_batch(&refs).unwrap());
    }

    #[test]
    fn char_ngrams_cover_latin_and_cjk() {
        let mut out = Vec::new();
        char_ngrams("cat", &mut out);
        // <ca, cat, at>
        assert_eq!(out.len(), 3);
        out.clear();
        char_ngrams("a", &mut out);
        // <a>
        assert_eq!(out.len(), 1);
        out.clear();
        char_ngrams("咖啡店", &mut out);
        // 3 unigrams + 2 bigrams
        assert_eq!(out.len(), 5);
    }
}
