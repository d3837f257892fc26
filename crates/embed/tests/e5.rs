//! multilingual-e5-small against the reference engine that ships with its file
//! (tests/fixtures/e5_reference.json, written by scripts/e5_reference.py): per sentence, English,
//! Chinese and mixed, as a query and as a passage, the vectors' cosine is at least 0.99 and the
//! token counts are equal (the tokenizer is exact; the vectors differ only because the reference
//! quantizes activations to 8 bits and mnemos computes them in f32).
//!
//! Needs the model file (and ONNX Runtime's library). It is not downloaded here and a missing
//! model fails the test: get it with `mnemos models fetch --embedder e5`, or point
//! MNEMOS_E5_DIR at a directory holding e5-small-q4.bin.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;

use mnemos_core::embed::cosine;
use mnemos_core::{Embedder, EmbedderExt};
use mnemos_embed::{
    resolve_model_dir, BilingualEmbedder, E5Embedder, EmbedRuntime, MiniLmEmbedder, E5_SMALL_MODEL,
};
use serde::Deserialize;

/// Lowest cosine to the reference allowed for any sentence.
const MIN_COSINE: f64 = 0.99;

#[derive(Deserialize)]
struct Reference {
    sentences: Vec<String>,
    query_vectors: Vec<Vec<f32>>,
    passage_vectors: Vec<Vec<f32>>,
    query_tokens: Vec<usize>,
    passage_tokens: Vec<usize>,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("fixtures/e5_reference.json")).expect("valid fixture")
}

fn e5() -> &'static E5Embedder {
    static E: OnceLock<E5Embedder> = OnceLock::new();
    E.get_or_init(|| {
        let dir = E5_SMALL_MODEL.resolve(None).unwrap_or_else(|e| {
            panic!(
                "multilingual-e5-small not available: {e}\n\nThis test needs the model file. \
                 Run `mnemos models fetch --embedder e5`, or set MNEMOS_E5_DIR."
            )
        });
        E5Embedder::load_with(&dir, EmbedRuntime::Onnx)
            .unwrap_or_else(|e| panic!("cannot load e5: {e}"))
    })
}

/// Every sentence's cosine to the reference; the worst must reach [`MIN_COSINE`].
fn check(kind: &str, got: &[Vec<f32>], want: &[Vec<f32>], sentences: &[String]) {
    let mut worst = (1.0f64, "");
    for ((g, w), s) in got.iter().zip(want).zip(sentences) {
        assert_eq!(g.len(), 384);
        let c = cosine(g, w);
        if c < worst.0 {
            worst = (c, s);
        }
    }
    eprintln!(
        "{kind}: lowest cosine to the reference {:.5} ({:?})",
        worst.0, worst.1
    );
    assert!(
        worst.0 >= MIN_COSINE,
        "{kind}: cosine {:.4} to the reference for {:?}",
        worst.0,
        worst.1
    );
}

#[test]
fn passages_match_the_reference_engine() {
    let r = reference();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let got = e5().embed_all(&texts).unwrap();
    check("passage", &got, &r.passage_vectors, &r.sentences);
}

#[test]
fn queries_match_the_reference_engine_and_differ_from_passages() {
    let r = reference();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let got = e5().embed_all_queries(&texts).unwrap();
    check("query", &got, &r.query_vectors, &r.sentences);
    let passages = e5().embed_all(&texts).unwrap();
    assert!(got
        .iter()
        .zip(&passages)
        .all(|(q, p)| cosine(q, p) < 0.9999));
}

#[test]
fn one_text_at_a_time_matches_a_batch() {
    let r = reference();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let batch = e5().embed_all(&texts).unwrap();
    for (text, b) in texts.iter().zip(&batch) {
        let one = e5().embed_one(text).unwrap();
        assert!(cosine(&one, b) > 0.99999, "{text:?}");
    }
}

#[test]
fn the_tokenizer_counts_as_the_reference_does() {
    let r = reference();
    for (i, s) in r.sentences.iter().enumerate() {
        assert_eq!(
            e5().token_count(s, true).unwrap(),
            r.query_tokens[i],
            "{s:?}"
        );
        assert_eq!(
            e5().token_count(s, false).unwrap(),
            r.passage_tokens[i],
            "{s:?}"
        );
    }
}

#[test]
fn chinese_sentences_find_their_english_paraphrase() {
    let pairs = [
        (
            "我妹妹住在上海，她是一名医生。",
            "My sister lives in Shanghai and works as a doctor.",
        ),
        (
            "我喜欢在周末去公园跑步。",
            "I like running in the park on weekends.",
        ),
    ];
    let e = e5();
    for (zh, en) in pairs {
        let q = e.embed_query(zh).unwrap();
        let right = e.embed_one(en).unwrap();
        let wrong = e
            .embed_one("The quarterly tax report is due on Friday.")
            .unwrap();
        assert!(cosine(&q, &right) > cosine(&q, &wrong) + 0.05, "{zh}");
    }
}

#[test]
fn bilingual_with_e5_embeds_both_languages_as_units() {
    let dir = resolve_model_dir(None).expect("MiniLM: run `mnemos models fetch`");
    let minilm = MiniLmEmbedder::load(&dir).unwrap();
    let dir = E5_SMALL_MODEL.resolve(None).expect("e5");
    let e5 = E5Embedder::load_with(&dir, EmbedRuntime::Onnx).unwrap();
    let bilingual = BilingualEmbedder::new(Box::new(minilm), Box::new(e5));
    assert_eq!(bilingual.id(), "bilingual:minilm-l6-v2+e5-small-q4");
    let v = bilingual
        .embed_all_queries(&["我喜欢跑步", "I like running", "我喜欢 running"])
        .unwrap();
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3);
    }
}
