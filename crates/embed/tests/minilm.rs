//! MiniLM against sentence-transformers reference vectors (tests/fixtures/minilm_reference.json,
//! written by scripts/embed_reference.py).
//!
//! Needs the model files. They are deliberately not downloaded here (tests stay offline) and a
//! missing model fails the test instead of skipping it, so CI cannot pass without checking the
//! numbers. Get the model with `mnemos models fetch`, or
//! `cargo run --release -p mnemos-embed --example fetch_model`, or point MNEMOS_MODEL_DIR at a
//! directory holding model.safetensors, tokenizer.json and config.json.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::OnceLock;

use mnemos_core::{Embedder, EmbedderExt};
use mnemos_embed::{resolve_model_dir, MiniLmEmbedder};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;

#[derive(Deserialize)]
struct Reference {
    model: String,
    sentences: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let text = include_str!("fixtures/minilm_reference.json");
    serde_json::from_str(text).expect("fixture is valid JSON")
}

fn embedder() -> &'static MiniLmEmbedder {
    static E: OnceLock<MiniLmEmbedder> = OnceLock::new();
    E.get_or_init(|| {
        let dir = resolve_model_dir(None).unwrap_or_else(|e| {
            panic!(
                "MiniLM model not available: {e}\n\nThis test needs the model files. Run \
                 `mnemos models fetch` or `cargo run --release -p mnemos-embed --example \
                 fetch_model`, or set MNEMOS_MODEL_DIR."
            )
        });
        MiniLmEmbedder::load(&dir)
            .unwrap_or_else(|e| panic!("cannot load MiniLM from {}: {e}", dir.display()))
    })
}

fn assert_close(what: &str, sentence: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: dimension for {sentence:?}");
    let (idx, diff) = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .enumerate()
        .fold(
            (0, 0.0f32),
            |acc, (i, d)| if d > acc.1 { (i, d) } else { acc },
        );
    if std::env::var_os("MNEMOS_SHOW_DIFFS").is_some() {
        eprintln!(
            "{what}: max |diff| {diff:e} for {:?}",
            sentence.chars().take(30).collect::<String>()
        );
    }
    assert!(
        diff <= TOLERANCE,
        "{what}: component {idx} differs by {diff:e} for {:?}",
        sentence.chars().take(60).collect::<String>()
    );
}

#[test]
fn fixture_is_sane() {
    let r = reference();
    assert_eq!(r.model, "all-MiniLM-L6-v2");
    assert_eq!(r.sentences.len(), r.vectors.len());
    assert!(r.sentences.len() >= 12);
    assert!(r.vectors.iter().all(|v| v.len() == 384));
}

#[test]
fn matches_reference_one_by_one() {
    let r = reference();
    let e = embedder();
    assert_eq!(e.id(), "minilm-l6-v2");
    assert_eq!(e.dimension(), 384);
    for (s, want) in r.sentences.iter().zip(&r.vectors) {
        let got = e.embed_one(s).unwrap();
        assert_close("one-by-one", s, &got, want);
    }
}

#[test]
fn matches_reference_batched() {
    let r = reference();
    let e = embedder();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    // Whole batch (length-sorted internally, with padding) and a shuffled order, which must
    // come back in input order.
    let got = e.embed_all(&texts).unwrap();
    for ((s, g), w) in r.sentences.iter().zip(&got).zip(&r.vectors) {
        assert_close("batched", s, g, w);
    }
    let mut idx: Vec<usize> = (0..texts.len()).collect();
    idx.reverse();
    idx.rotate_left(3);
    let shuffled: Vec<&str> = idx.iter().map(|&i| texts[i]).collect();
    let got = e.embed_batch(&shuffled).unwrap();
    for (k, &i) in idx.iter().enumerate() {
        assert_close("shuffled batch", texts[i], &got[k], &r.vectors[i]);
    }
}

#[test]
fn large_batch_spread_over_workers_keeps_input_order() {
    let r = reference();
    let e = embedder();
    // 65 inputs: several length groups, more than one per worker, an odd one out at the end.
    let idx: Vec<usize> = (0..65).map(|k| (k * 7) % r.sentences.len()).collect();
    let texts: Vec<&str> = idx.iter().map(|&i| r.sentences[i].as_str()).collect();
    let got = e.embed_batch(&texts).unwrap();
    assert_eq!(got.len(), texts.len());
    for (k, &i) in idx.iter().enumerate() {
        assert_close("large batch", texts[k], &got[k], &r.vectors[i]);
    }
}

#[test]
fn deterministic_and_thread_safe() {
    let r = reference();
    let e = embedder();
    let texts: Vec<&str> = r.sentences.iter().take(6).map(String::as_str).collect();
    let first = e.embed_batch(&texts).unwrap();
    let results: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| s.spawn(|| e.embed_batch(&texts).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        assert_eq!(r, first);
    }
}
