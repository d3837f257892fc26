//! m3e-small against sentence-transformers reference vectors (tests/fixtures/m3e_reference.json,
//! written by scripts/m3e_reference.py), and the bilingual embedder built from it and MiniLM.
//!
//! Needs both models' files. As for MiniLM, they are not downloaded here and a missing model
//! fails the test: get them with `mnemos models fetch --embedder bilingual`, or point
//! MNEMOS_M3E_DIR / MNEMOS_MODEL_DIR at directories holding them.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::OnceLock;

use mnemos_core::{Embedder, EmbedderExt};
use mnemos_embed::{
    resolve_model_dir, BilingualEmbedder, M3eEmbedder, MiniLmEmbedder, M3E_SMALL_MODEL,
};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;

#[derive(Deserialize)]
struct Reference {
    model: String,
    sentences: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn reference(text: &str) -> Reference {
    serde_json::from_str(text).expect("fixture is valid JSON")
}

fn m3e_reference() -> Reference {
    reference(include_str!("fixtures/m3e_reference.json"))
}

fn load_m3e() -> M3eEmbedder {
    let dir = M3E_SMALL_MODEL.resolve(None).unwrap_or_else(|e| {
        panic!(
            "m3e-small not available: {e}\n\nThis test needs the model files. Run \
             `mnemos models fetch --embedder bilingual`, or set MNEMOS_M3E_DIR."
        )
    });
    M3eEmbedder::load(&dir).unwrap_or_else(|e| panic!("cannot load m3e-small: {e}"))
}

fn m3e() -> &'static M3eEmbedder {
    static E: OnceLock<M3eEmbedder> = OnceLock::new();
    E.get_or_init(load_m3e)
}

fn bilingual() -> &'static BilingualEmbedder {
    static E: OnceLock<BilingualEmbedder> = OnceLock::new();
    E.get_or_init(|| {
        let dir = resolve_model_dir(None)
            .unwrap_or_else(|e| panic!("MiniLM not available: {e}; run `mnemos models fetch`"));
        let minilm = MiniLmEmbedder::load(&dir).unwrap();
        BilingualEmbedder::new(Box::new(minilm), Box::new(load_m3e()))
    })
}

fn max_diff(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max)
}

#[test]
fn fixture_is_sane() {
    let r = m3e_reference();
    assert_eq!(r.model, "m3e-small");
    assert_eq!(r.sentences.len(), r.vectors.len());
    assert!(r.vectors.iter().all(|v| v.len() == 512));
}

#[test]
fn m3e_matches_reference_one_by_one_and_batched() {
    let r = m3e_reference();
    let e = m3e();
    assert_eq!(e.id(), "m3e-small");
    assert_eq!(e.dimension(), 512);
    for (s, want) in r.sentences.iter().zip(&r.vectors) {
        let got = e.embed_one(s).unwrap();
        let diff = max_diff(&got, want);
        assert!(diff <= TOLERANCE, "one-by-one: {diff:e} for {s:?}");
    }
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let got = e.embed_all(&texts).unwrap();
    for ((s, g), w) in texts.iter().zip(&got).zip(&r.vectors) {
        let diff = max_diff(g, w);
        assert!(diff <= TOLERANCE, "batched: {diff:e} for {s:?}");
    }
}

#[test]
fn m3e_ranks_a_paraphrase_above_unrelated_chat() {
    let e = m3e();
    let v = e
        .embed_all(&[
            "我家的这些电器怎么样啊？",
            "我家里用的是美的的电饭煲，煮的米饭特别香。",
            "（好奇地问）所以这事情你是在哪里察觉的呢？",
        ])
        .unwrap();
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]));
}

#[test]
fn bilingual_halves_are_the_models_own_vectors() {
    let e = bilingual();
    assert_eq!(e.id(), "bilingual:minilm-l6-v2+m3e-small");
    assert_eq!(e.dimension(), 384 + 512);
    let minilm = reference(include_str!("fixtures/minilm_reference.json"));
    let english = &minilm.sentences[0];
    let zh = m3e_reference();
    let chinese = &zh.sentences[0];
    let got = e
        .embed_batch(&[english.as_str(), chinese.as_str()])
        .unwrap();
    // A pure English text is MiniLM's vector with an empty Chinese half, and the reverse.
    assert!(max_diff(&got[0][..384], &minilm.vectors[0]) <= TOLERANCE);
    assert!(got[0][384..].iter().all(|&x| x == 0.0));
    assert!(got[1][..384].iter().all(|&x| x == 0.0));
    assert!(max_diff(&got[1][384..], &zh.vectors[0]) <= TOLERANCE);
}
