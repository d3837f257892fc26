//! The ONNX Runtime path against candle's f32 reference, per sentence, on a fixed bilingual
//! set: it must match to float rounding (cosine ≥ 0.9999; the bar is 0.99).
//!
//! Needs the model files and ONNX Runtime's library (`mnemos models fetch --embedder bilingual
//! --embed-runtime onnx`, which `scripts/test.sh` runs); a missing file fails the test instead
//! of skipping it.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use mnemos_core::Embedder;
use mnemos_embed::{resolve_model_dir, EmbedRuntime, M3eEmbedder, MiniLmEmbedder, M3E_SMALL_MODEL};

/// English, Chinese and mixed utterances of the kinds mnemos stores: short replies, facts,
/// dates, names, a long paragraph (past the 256-token cap) and whitespace-only text.
fn sentences() -> Vec<String> {
    let mut s: Vec<String> = [
        "Yeah, that was amazing!",
        "I moved to Lisbon last spring and started working at a bakery.",
        "My sister Ann plays the cello in the city orchestra.",
        "What did Caroline do on 8 May 2023?",
        "ok",
        "We adopted a cat called Miso; she hates the vacuum cleaner.",
        "I'm allergic to peanuts, so please never suggest satay.",
        "The meeting moved from Tuesday 3pm to Thursday 10am.",
        "Do you remember the name of the hiking trail we talked about?",
        "I've been feeling anxious about the exam next week.",
        "我上个月搬到杭州了，现在在一家茶馆工作。",
        "我妹妹叫小雨，她在读研究生。",
        "你还记得我们上次聊的那本书吗？",
        "我对花生过敏。",
        "好的",
        "周末我们去西湖划船，天气特别好。",
        "我的猫叫团子，它很怕吸尘器。",
        "明天下午三点开会，别忘了带电脑。",
        "I started learning 中文 last year, 现在能看懂简单的新闻了。",
        "我最喜欢的乐队是 Radiohead, especially OK Computer.",
        "   ",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    s.push("The story goes on and on. ".repeat(60));
    s.push("故事很长很长，一直讲下去。".repeat(60));
    s
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(f32::MIN_POSITIVE)
}

/// Embeds the set in one batch and one text at a time (different groupings and padding) and
/// checks both against the reference; returns the lowest cosine.
fn compare(name: &str, reference: &dyn Embedder, other: &dyn Embedder, floor: f32) -> f32 {
    let texts = sentences();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want = reference.embed_batch(&refs).unwrap();
    let batched = other.embed_batch(&refs).unwrap();
    let mut lowest = f32::INFINITY;
    for (i, text) in refs.iter().enumerate() {
        let single = other.embed_batch(&[text]).unwrap().remove(0);
        for (how, got) in [("batched", &batched[i]), ("single", &single)] {
            assert_eq!(got.len(), want[i].len(), "{name} {how}: dimension");
            let c = cosine(got, &want[i]);
            assert!(
                c >= floor,
                "{name} {how}: cosine {c} < {floor} for {text:?}"
            );
            lowest = lowest.min(c);
        }
    }
    lowest
}

fn minilm(runtime: EmbedRuntime) -> MiniLmEmbedder {
    let dir = resolve_model_dir(None).unwrap_or_else(|e| panic!("MiniLM not available: {e}"));
    MiniLmEmbedder::load_with(&dir, runtime)
        .unwrap_or_else(|e| panic!("cannot load MiniLM on {runtime}: {e}"))
}

fn m3e(runtime: EmbedRuntime) -> M3eEmbedder {
    let dir = M3E_SMALL_MODEL
        .resolve(None)
        .unwrap_or_else(|e| panic!("m3e-small not available: {e}"));
    M3eEmbedder::load_with(&dir, runtime)
        .unwrap_or_else(|e| panic!("cannot load m3e-small on {runtime}: {e}"))
}

#[test]
fn minilm_runtimes_match_the_f32_reference() {
    let reference = minilm(EmbedRuntime::Candle);
    let onnx = minilm(EmbedRuntime::Onnx);
    assert_eq!(onnx.runtime(), EmbedRuntime::Onnx);
    let lowest = compare("minilm onnx", &reference, &onnx, 0.9999);
    eprintln!("minilm: lowest cosine onnx {lowest:.7}");
}

#[test]
fn m3e_runtimes_match_the_f32_reference() {
    let reference = m3e(EmbedRuntime::Candle);
    let lowest = compare("m3e onnx", &reference, &m3e(EmbedRuntime::Onnx), 0.9999);
    eprintln!("m3e-small: lowest cosine onnx {lowest:.7}");
}

#[test]
fn runtime_names_round_trip() {
    for r in EmbedRuntime::ALL {
        assert_eq!(r.as_str().parse::<EmbedRuntime>().unwrap(), r);
    }
    assert!("tensorflow".parse::<EmbedRuntime>().is_err());
}
