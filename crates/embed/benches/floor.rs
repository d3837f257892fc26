//! The machine's floor for embedding (issue 20, item 1): peak f32 and int8 arithmetic at 1 and
//! 2 threads, the `gemm` crate at the shapes MiniLM and m3e-small run, the FLOPs per token of
//! each model, and the sentences/s ceilings they imply. Prints markdown tables.
//!
//! Each measurement runs for `MNEMOS_FLOOR_SECONDS` (default 1.0). Run it on a quiet machine:
//! `cargo bench -p mnemos-embed --bench floor`. An embedder's measured sentences/s (benches
//! `embed`) divided by a ceiling here is its fraction of the floor.

use std::time::Duration;

use anyhow::Context;
use mnemos_embed::floor::{
    attention_flops_per_token, ceiling_sentences_per_sec, flops_per_sentence, flops_per_token,
    gemm_f32_gflops, peak_f32_gflops, peak_int8_gops, BertShape, M3E_SHAPE, MINILM_SHAPE,
};

/// Tokens in the typical ~20-word chat utterance the ceilings are quoted for.
const SENTENCE_TOKENS: usize = 20;
/// Rows of every projection GEMM: a batch of 16 such sentences.
const BATCH_TOKENS: usize = 16 * SENTENCE_TOKENS;
const THREADS: [usize; 2] = [1, 2];
const MODELS: [(&str, BertShape); 2] = [("MiniLM-L6", MINILM_SHAPE), ("m3e-small", M3E_SHAPE)];

/// A rate per thread count, `None` where the CPU cannot run the kernel.
type Rates = [Option<f64>; 2];

fn main() -> anyhow::Result<()> {
    let duration = measurement_duration()?;
    let load_before = load_average();
    println!(
        "## Floor of this machine ({} s per measurement, {} threads available)\n",
        duration.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let f32_peak = THREADS.map(|t| peak_f32_gflops(t, duration));
    let int8_peak = THREADS.map(|t| peak_int8_gops(t, duration));
    print_peaks(f32_peak, int8_peak);
    let mut gemm_ceilings = Vec::new();
    println!(
        "\n### gemm crate, f32, m = {BATCH_TOKENS} tokens (16 sentences × {SENTENCE_TOKENS})\n"
    );
    println!("| model | GEMM m×k×n | per layer | 1 thread GFLOP/s | % of peak | 2 threads GFLOP/s | % of peak |");
    println!("|---|---|---|---|---|---|---|");
    for (name, shape) in MODELS {
        let rates = gemm_rows(name, shape, duration, f32_peak);
        gemm_ceilings.push(gemm_ceiling(shape, &rates, f32_peak));
    }
    print_ceilings(f32_peak, int8_peak, &gemm_ceilings);
    println!(
        "\nLoad average (1, 5, 15 min) before: {load_before}; after: {}.",
        load_average()
    );
    Ok(())
}

/// The 1/5/15-minute load averages (Linux), so a reader can tell a quiet run from a busy one:
/// other work on the machine lowers every rate here, the 2-thread ones most.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_string(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// `MNEMOS_FLOOR_SECONDS` as a duration; 1 s when unset.
fn measurement_duration() -> anyhow::Result<Duration> {
    let Some(raw) = std::env::var_os("MNEMOS_FLOOR_SECONDS") else {
        return Ok(Duration::from_secs(1));
    };
    let text = raw.to_string_lossy();
    let secs: f64 = text
        .trim()
        .parse()
        .with_context(|| format!("MNEMOS_FLOOR_SECONDS={text:?} is not a number"))?;
    Duration::try_from_secs_f64(secs)
        .with_context(|| format!("MNEMOS_FLOOR_SECONDS={text:?} is not a duration"))
}

fn print_peaks(f32_peak: Rates, int8_peak: Rates) {
    println!("### Peak arithmetic (register-resident AVX2, all threads at once)\n");
    println!("| kernel | 1 thread | 2 threads | 2 threads ÷ 1 |");
    println!("|---|---|---|---|");
    for (label, rates) in [
        ("f32 `vfmadd` (GFLOP/s)", f32_peak),
        (
            "int8 `vpmaddubsw` + `vpmaddwd` + `vpaddd` (GOP/s)",
            int8_peak,
        ),
    ] {
        println!(
            "| {label} | {} | {} | {} |",
            fmt(rates[0], 1),
            fmt(rates[1], 1),
            fmt(ratio(rates[1], rates[0]), 2)
        );
    }
    println!(
        "| int8 ÷ f32 | {} | {} | |",
        fmt(ratio(int8_peak[0], f32_peak[0]), 2),
        fmt(ratio(int8_peak[1], f32_peak[1]), 2)
    );
}

/// Measures and prints one model's projection GEMMs; returns `(count per layer, k, n, rates)`.
fn gemm_rows(
    name: &str,
    shape: BertShape,
    duration: Duration,
    f32_peak: Rates,
) -> Vec<(usize, usize, usize, Rates)> {
    let labels = ["Q, K, V, out", "FFN up", "FFN down"];
    let mut rows = Vec::new();
    for (label, (count, k, n)) in labels.into_iter().zip(shape.projections()) {
        let rates = THREADS.map(|t| gemm_f32_gflops(BATCH_TOKENS, k, n, t, duration));
        println!(
            "| {name} | {BATCH_TOKENS}×{k}×{n} | {count} ({label}) | {} | {} | {} | {} |",
            fmt(rates[0], 1),
            fmt(percent(rates[0], f32_peak[0]), 0),
            fmt(rates[1], 1),
            fmt(percent(rates[1], f32_peak[1]), 0)
        );
        rows.push((count, k, n, rates));
    }
    rows
}

/// The effective GFLOP/s of a whole sentence if every projection ran at its measured GEMM
/// rate and attention (small) at the f32 peak: the ceiling of an f32 path built on `gemm`.
fn gemm_ceiling(shape: BertShape, rows: &[(usize, usize, usize, Rates)], f32_peak: Rates) -> Rates {
    [0, 1].map(|t| {
        let mut seconds_per_token =
            attention_flops_per_token(shape, SENTENCE_TOKENS) / (f32_peak[t]? * 1e9);
        for &(count, k, n, rates) in rows {
            let flops = (count * 2 * k * n * shape.layers) as f64;
            seconds_per_token += flops / (rates[t]? * 1e9);
        }
        Some(flops_per_token(shape, SENTENCE_TOKENS) / seconds_per_token / 1e9)
    })
}

fn print_ceilings(f32_peak: Rates, int8_peak: Rates, gemm_rates: &[Rates]) {
    println!(
        "\n### Work per token and the ceilings it implies ({SENTENCE_TOKENS}-token sentences)\n"
    );
    println!("| model | MFLOP/token @20 | MFLOP/token @64 | MFLOP/sentence @20 | f32 peak 1t | f32 peak 2t | int8 peak 1t | int8 peak 2t | f32 at gemm rates 1t | f32 at gemm rates 2t |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for ((name, shape), gemm) in MODELS.into_iter().zip(gemm_rates) {
        let ceilings: Vec<String> = [f32_peak, int8_peak, *gemm]
            .iter()
            .flat_map(|rates| {
                rates.map(|r| r.map(|r| ceiling_sentences_per_sec(r, shape, SENTENCE_TOKENS)))
            })
            .map(|c| fmt(c, 0))
            .collect();
        println!(
            "| {name} | {:.2} | {:.2} | {:.1} | {} |",
            flops_per_token(shape, SENTENCE_TOKENS) / 1e6,
            flops_per_token(shape, 64) / 1e6,
            flops_per_sentence(shape, SENTENCE_TOKENS) / 1e6,
            ceilings.join(" | ")
        );
    }
    println!("\nCeilings are sentences/s: rate ÷ (FLOPs/token@{SENTENCE_TOKENS} × {SENTENCE_TOKENS}); FLOPs cover the projections, feed-forward and attention products (not embeddings lookup, layer norms, softmax, GELU, pooling).");
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? / b?)
}

fn percent(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    ratio(a, b).map(|r| r * 100.0)
}

fn fmt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.decimals$}"))
}
