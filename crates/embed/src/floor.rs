//! The machine's floor: how fast this CPU can multiply matrices, and how much multiplying each
//! shipped model needs per token.
//!
//! An embedder's sentences/s means little on its own: it is only "slow" or "fast" against what
//! the hardware allows. This module measures that allowance three ways and counts the work:
//!
//! - [`peak_f32_gflops`]: register-resident AVX2 FMAs, the f32 arithmetic ceiling no kernel
//!   can beat;
//! - [`peak_int8_gops`]: the AVX2 int8 dot-product sequence (`vpmaddubsw`, `vpmaddwd`,
//!   `vpaddd`) that int8 GEMM kernels use on CPUs without VNNI, the int8 ceiling;
//! - [`gemm_f32_gflops`]: the `gemm` crate (candle's CPU matmul) at the shapes the models run,
//!   what a good f32 kernel actually reaches once memory traffic and packing are paid;
//! - [`flops_per_token`]: the arithmetic of one token through a BERT encoder.
//!
//! Dividing a peak by the FLOPs of a sentence gives a ceiling in sentences/s; an embedder's
//! measured throughput as a fraction of that ceiling says how much a faster path could gain.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// The arithmetic-relevant shape of a BERT encoder (read from the model's `config.json`).
///
/// The vocabulary size is absent on purpose: the embedding lookup is a copy, not arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BertShape {
    /// `num_hidden_layers`.
    pub layers: usize,
    /// `hidden_size`: width of the residual stream and of every attention projection.
    pub hidden: usize,
    /// `num_attention_heads`; the heads split `hidden`, so they do not change the FLOP count.
    pub heads: usize,
    /// `intermediate_size`: width of the feed-forward layer.
    pub intermediate: usize,
}

/// sentence-transformers/all-MiniLM-L6-v2 (`nreimers/MiniLM-L6-H384-uncased`): 6 layers,
/// hidden 384, 12 heads, intermediate 1536.
pub const MINILM_SHAPE: BertShape = BertShape {
    layers: 6,
    hidden: 384,
    heads: 12,
    intermediate: 1536,
};

/// moka-ai/m3e-small, from its `config.json` (`_name_or_path: uer/chinese_roberta_L-4_H-512`):
/// `num_hidden_layers` 4, `hidden_size` 512, `num_attention_heads` 8, `intermediate_size` 2048
/// (vocabulary 21128, not needed here).
pub const M3E_SHAPE: BertShape = BertShape {
    layers: 4,
    hidden: 512,
    heads: 8,
    intermediate: 2048,
};

impl BertShape {
    /// Width of one attention head.
    pub const fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// The `(k, n)` shapes of the weight matrices every token is multiplied by, with how many
    /// of each a layer has: Q, K, V and the attention output (`hidden × hidden`, 4 of them),
    /// the feed-forward up (`hidden × intermediate`) and down (`intermediate × hidden`)
    /// projections. A batch of `m` tokens makes each an `m × k × n` GEMM.
    pub const fn projections(&self) -> [(usize, usize, usize); 3] {
        [
            (4, self.hidden, self.hidden),
            (1, self.hidden, self.intermediate),
            (1, self.intermediate, self.hidden),
        ]
    }
}

/// FLOPs of the weight projections for one token (independent of the sequence length):
/// per layer `2 · (4·h² + 2·h·i)`.
pub fn projection_flops_per_token(shape: BertShape) -> f64 {
    let per_layer: usize = shape
        .projections()
        .iter()
        .map(|&(count, k, n)| count * 2 * k * n)
        .sum();
    (per_layer * shape.layers) as f64
}

/// FLOPs of attention itself for one token attending over `seq_len` tokens: the scores
/// `q·kᵀ` and the weighted sum of values, each `2 · seq_len · head_dim` per head, so
/// `4 · seq_len · hidden` per layer. The only term that grows with the sequence.
pub fn attention_flops_per_token(shape: BertShape, seq_len: usize) -> f64 {
    let per_layer = 2 * 2 * seq_len * shape.head_dim() * shape.heads;
    (per_layer * shape.layers) as f64
}

/// Multiply-add FLOPs (a multiply-add counts 2) of one token through the encoder in a sequence
/// of `seq_len` tokens: the Q/K/V/output projections, both feed-forward matrices, and the
/// attention scores and weighted sum.
///
/// Excluded, because they are O(hidden) per token rather than O(hidden²) and together add
/// about 1% or less: the embedding lookup (a copy), bias additions, layer norms, softmax,
/// GELU, the residual additions and the final pooling/normalisation.
pub fn flops_per_token(shape: BertShape, seq_len: usize) -> f64 {
    projection_flops_per_token(shape) + attention_flops_per_token(shape, seq_len)
}

/// FLOPs of one sentence of `tokens` tokens (every token attends over the whole sentence).
pub fn flops_per_sentence(shape: BertShape, tokens: usize) -> f64 {
    flops_per_token(shape, tokens) * tokens as f64
}

/// The most sentences of `tokens` tokens per second a machine doing `giga_ops_per_sec` could
/// embed if every operation ran at that rate: the ceiling an embedder is compared against.
pub fn ceiling_sentences_per_sec(giga_ops_per_sec: f64, shape: BertShape, tokens: usize) -> f64 {
    giga_ops_per_sec * 1e9 / flops_per_sentence(shape, tokens)
}

/// Peak f32 throughput in GFLOP/s of `threads` OS threads running independent AVX2 FMAs at
/// once, for about `duration` in all (the best of 5 equal slices: other load can only lower a rate).
///
/// Twelve independent accumulators per thread hide the FMA latency, and every operand stays
/// in a register, so this is the arithmetic ceiling rather than anything a GEMM reaches.
/// `None` without AVX2 + FMA (or off x86_64), or when `threads` is 0.
pub fn peak_f32_gflops(threads: usize, duration: Duration) -> Option<f64> {
    let cpu = kernels::Avx2Fma::detect()?;
    let chunk = || {
        black_box(cpu.fma_rounds(black_box(kernels::CHUNK_ROUNDS)));
        kernels::F32_FLOPS_PER_ROUND * kernels::CHUNK_ROUNDS as f64
    };
    let ops = best_of_slices(duration, |slice| run_on_threads(threads, slice, chunk))?;
    Some(ops / 1e9)
}

/// Peak int8 throughput in GOP/s of `threads` threads running the AVX2 int8 dot-product
/// sequence: `vpmaddubsw` (u8 × i8, adjacent pairs summed to i16), `vpmaddwd` with ones
/// (i16 pairs to i32) and `vpaddd` into the accumulator, as AVX2 int8 GEMM kernels do.
///
/// Counts 2 ops per u8 × i8 multiply-add, 64 per `vpmaddubsw`, so the figure is comparable
/// with f32 FLOPs; the widening `vpmaddwd` and `vpaddd` are overhead the count ignores.
/// `None` without AVX2 + FMA (or off x86_64), or when `threads` is 0.
pub fn peak_int8_gops(threads: usize, duration: Duration) -> Option<f64> {
    let cpu = kernels::Avx2Fma::detect()?;
    let chunk = || {
        black_box(cpu.int8_rounds(black_box(kernels::CHUNK_ROUNDS)));
        kernels::INT8_OPS_PER_ROUND * kernels::CHUNK_ROUNDS as f64
    };
    let ops = best_of_slices(duration, |slice| run_on_threads(threads, slice, chunk))?;
    Some(ops / 1e9)
}

/// How many slices a measurement's duration is cut into; the best slice is reported.
const SLICES: u32 = 5;

/// Runs `measure` on [`SLICES`] equal slices of `duration` and returns the highest rate.
///
/// The best rather than the mean, because other work on the machine (and the first slice's
/// warm-up: page faults, clock ramp-up) can only lower a rate, never raise it above what the
/// hardware does. `None` if any slice fails.
fn best_of_slices(
    duration: Duration,
    mut measure: impl FnMut(Duration) -> Option<f64>,
) -> Option<f64> {
    let slice = duration / SLICES;
    (0..SLICES).try_fold(0.0f64, |best, _| Some(best.max(measure(slice)?)))
}

/// Runs `chunk` (which does some work and returns how many operations it did) repeatedly on
/// `threads` threads started together, each until `duration` has passed; returns the total
/// operations per second of wall time. `None` when `threads` is 0 or a thread panicked.
fn run_on_threads(
    threads: usize,
    duration: Duration,
    chunk: impl Fn() -> f64 + Sync,
) -> Option<f64> {
    if threads == 0 {
        return None;
    }
    let barrier = Barrier::new(threads);
    let results: Vec<Option<(f64, Duration)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| run_for(&barrier, duration, &chunk)))
            .collect();
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    let mut ops = 0.0;
    let mut longest = Duration::ZERO;
    for (thread_ops, elapsed) in results.into_iter().collect::<Option<Vec<_>>>()? {
        ops += thread_ops;
        longest = longest.max(elapsed);
    }
    rate(ops, longest)
}

/// One thread's share of [`run_on_threads`]: waits for the others, then runs `chunk` until
/// `duration` has passed; returns the operations done and the time taken.
fn run_for(barrier: &Barrier, duration: Duration, chunk: &impl Fn() -> f64) -> (f64, Duration) {
    barrier.wait();
    let start = Instant::now();
    let mut ops = 0.0;
    loop {
        ops += chunk();
        let elapsed = start.elapsed();
        if elapsed >= duration {
            return (ops, elapsed);
        }
    }
}

/// Operations per second, `None` for an empty interval.
fn rate(ops: f64, elapsed: Duration) -> Option<f64> {
    let secs = elapsed.as_secs_f64();
    (secs > 0.0).then(|| ops / secs)
}

/// Achieved f32 GFLOP/s of the `gemm` crate multiplying an `m × k` activation matrix by a
/// `k × n` weight, repeated for about `duration` after one warm-up call (the best
/// of 5 equal slices).
///
/// The operands are laid out as candle's `Linear` hands them over (activations row-major,
/// the weight stored `n × k` row-major and used transposed), so the figure is what the f32
/// embedding path can reach at that shape. One thread uses `Parallelism::None`; more use
/// `Parallelism::Rayon(threads)`, which runs on rayon's global pool (so no more threads than
/// that pool has, `RAYON_NUM_THREADS`). `None` when a dimension or `threads` is 0.
pub fn gemm_f32_gflops(
    m: usize,
    k: usize,
    n: usize,
    threads: usize,
    duration: Duration,
) -> Option<f64> {
    if threads == 0 || m == 0 || k == 0 || n == 0 {
        return None;
    }
    let lhs: Vec<f32> = (0..m * k).map(|i| ((i % 7) as f32 - 3.0) * 0.1).collect();
    let weight: Vec<f32> = (0..n * k).map(|i| ((i % 5) as f32 - 2.0) * 0.1).collect();
    let mut dst = vec![0.0f32; m * n];
    let parallelism = if threads == 1 {
        gemm::Parallelism::None
    } else {
        gemm::Parallelism::Rayon(threads)
    };
    let shape = GemmShape { m, k, n };
    matmul_weight_t(shape, &lhs, &weight, &mut dst, parallelism)?;
    let flops = 2.0 * (m * k * n) as f64;
    let calls_per_sec = best_of_slices(duration, |slice| {
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed() < slice || calls == 0 {
            let (lhs, weight) = (black_box(&lhs), black_box(&weight));
            matmul_weight_t(shape, lhs, weight, &mut dst, parallelism)?;
            black_box(&mut dst);
            calls += 1;
        }
        rate(calls as f64, start.elapsed())
    })?;
    Some(calls_per_sec * flops / 1e9)
}

/// Dimensions of `dst (m × n) = lhs (m × k) · weightᵀ`, with the weight stored `n × k`.
#[derive(Debug, Clone, Copy)]
struct GemmShape {
    m: usize,
    k: usize,
    n: usize,
}

/// `dst = lhs · weightᵀ` through `gemm::gemm` with every buffer row-major (`lhs` is `m × k`,
/// `weight` is `n × k`, `dst` is `m × n`). `None`, without touching `dst`, when a buffer's
/// length does not match the shape or a stride does not fit an `isize`.
fn matmul_weight_t(
    shape: GemmShape,
    lhs: &[f32],
    weight: &[f32],
    dst: &mut [f32],
    parallelism: gemm::Parallelism,
) -> Option<()> {
    let GemmShape { m, k, n } = shape;
    let lengths_match = lhs.len() == m.checked_mul(k)?
        && weight.len() == n.checked_mul(k)?
        && dst.len() == m.checked_mul(n)?;
    if !lengths_match {
        return None;
    }
    let (k_stride, n_stride) = (isize::try_from(k).ok()?, isize::try_from(n).ok()?);
    // SAFETY: the lengths were checked against the shape above, so with these strides every
    // element gemm reads, lhs[i·k + p], weight[j·k + p], and writes, dst[i·n + j], for
    // i < m, j < n, p < k, lies inside its slice; `dst` is borrowed mutably and so cannot
    // alias the inputs; `read_dst` is false, so the uninitialised-read rules do not apply
    // (the buffer is initialised anyway).
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n_stride,
            false,
            lhs.as_ptr(),
            1,
            k_stride,
            weight.as_ptr(),
            k_stride,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
    Some(())
}

/// The register-resident AVX2 kernels behind the peak measurements.
#[cfg(target_arch = "x86_64")]
mod kernels {
    use std::arch::x86_64::{
        __m256, __m256i, _mm256_add_epi32, _mm256_add_epi8, _mm256_add_ps, _mm256_castps256_ps128,
        _mm256_castsi256_si128, _mm256_fmadd_ps, _mm256_madd_epi16, _mm256_maddubs_epi16,
        _mm256_set1_epi16, _mm256_set1_epi8, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_setzero_si256, _mm_cvtsi128_si32, _mm_cvtss_f32,
    };

    /// Rounds per call between clock checks: tens of microseconds of work, so timing costs nothing
    /// and a short duration is still met closely.
    pub(super) const CHUNK_ROUNDS: u64 = 1 << 14;
    /// Independent FMA chains: more than latency × issue width (4–5 cycles × 2 FMA pipes on
    /// current x86), leaving registers for the two operands.
    const F32_CHAINS: usize = 12;
    /// FLOPs per round of [`Avx2Fma::fma_rounds`]: 12 FMAs × 8 lanes × 2.
    pub(super) const F32_FLOPS_PER_ROUND: f64 = (F32_CHAINS * 8 * 2) as f64;
    /// Activation rows × weight columns of the int8 micro-kernel: 2 × 3 accumulators, each
    /// a short chain, and every register still fits in the 16 AVX2 has.
    const INT8_ROWS: usize = 2;
    const INT8_COLS: usize = 3;
    /// Ops per round of [`Avx2Fma::int8_rounds`]: 6 `vpmaddubsw` × 32 multiply-adds × 2.
    pub(super) const INT8_OPS_PER_ROUND: f64 = (INT8_ROWS * INT8_COLS * 32 * 2) as f64;

    /// Proof that this CPU has AVX2 and FMA: only [`Avx2Fma::detect`] makes one, so holding
    /// one makes calling the `target_feature` kernels sound.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Avx2Fma(());

    impl Avx2Fma {
        /// `Some` when the running CPU supports AVX2 and FMA.
        pub(super) fn detect() -> Option<Self> {
            (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
                .then_some(Self(()))
        }

        /// `rounds` rounds of 12 independent FMAs; returns a value that depends on all of them.
        pub(super) fn fma_rounds(self, rounds: u64) -> f32 {
            // SAFETY: `self` exists only if the CPU supports AVX2 and FMA (see `detect`),
            // the only requirement of the `target_feature` function.
            #[allow(unsafe_code)]
            unsafe {
                fma_rounds(rounds)
            }
        }

        /// `rounds` rounds of the 2 × 3 int8 micro-kernel; returns a value depending on all.
        pub(super) fn int8_rounds(self, rounds: u64) -> i32 {
            // SAFETY: as for `fma_rounds`; this kernel needs only AVX2.
            #[allow(unsafe_code)]
            unsafe {
                int8_rounds(rounds)
            }
        }
    }

    /// `acc = acc · a + b` on 12 independent accumulators. With `a` just below 1 the values
    /// converge to `b / (1 − a)` instead of overflowing or going subnormal (which would slow
    /// the FMAs down and measure the wrong thing).
    #[target_feature(enable = "avx2,fma")]
    fn fma_rounds(rounds: u64) -> f32 {
        let a = _mm256_set1_ps(std::hint::black_box(0.999));
        let b = _mm256_set1_ps(std::hint::black_box(1e-3));
        let mut acc = [_mm256_setzero_ps(); F32_CHAINS];
        for _ in 0..rounds {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        let sum: __m256 = acc
            .into_iter()
            .fold(_mm256_setzero_ps(), |s, x| _mm256_add_ps(s, x));
        _mm_cvtss_f32(_mm256_castps256_ps128(sum))
    }

    /// An int8 micro-kernel over 2 activation vectors × 3 weight vectors: each pair goes
    /// through `vpmaddubsw`, `vpmaddwd` with ones and `vpaddd`. The activations change every
    /// round (one cheap `vpaddb` each) so the compiler cannot hoist the products out of the
    /// loop; saturation and wrap-around are harmless, only the instruction count matters.
    #[target_feature(enable = "avx2")]
    fn int8_rounds(rounds: u64) -> i32 {
        let ones = _mm256_set1_epi16(1);
        let step = _mm256_set1_epi8(std::hint::black_box(3));
        let weights: [__m256i; INT8_COLS] =
            [5, -7, 11].map(|w| _mm256_set1_epi8(std::hint::black_box(w)));
        let mut acts: [__m256i; INT8_ROWS] =
            [1, 2].map(|a| _mm256_set1_epi8(std::hint::black_box(a)));
        let mut acc = [[_mm256_setzero_si256(); INT8_COLS]; INT8_ROWS];
        for _ in 0..rounds {
            for (row, act) in acc.iter_mut().zip(&mut acts) {
                *act = _mm256_add_epi8(*act, step);
                for (cell, w) in row.iter_mut().zip(&weights) {
                    let pairs = _mm256_maddubs_epi16(*act, *w);
                    *cell = _mm256_add_epi32(*cell, _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        let sum = acc
            .into_iter()
            .flatten()
            .fold(_mm256_setzero_si256(), |s, x| _mm256_add_epi32(s, x));
        _mm_cvtsi128_si32(_mm256_castsi256_si128(sum))
    }
}

/// Stand-in off x86_64: there are no AVX2 kernels, so the proof type cannot be built and the
/// peaks are `None`.
#[cfg(not(target_arch = "x86_64"))]
mod kernels {
    pub(super) const CHUNK_ROUNDS: u64 = 0;
    pub(super) const F32_FLOPS_PER_ROUND: f64 = 0.0;
    pub(super) const INT8_OPS_PER_ROUND: f64 = 0.0;

    /// Uninhabited: no value exists, so the methods can never run.
    #[derive(Debug, Clone, Copy)]
    pub(super) enum Avx2Fma {}

    impl Avx2Fma {
        pub(super) fn detect() -> Option<Self> {
            None
        }
        pub(super) fn fma_rounds(self, _rounds: u64) -> f32 {
            match self {}
        }
        pub(super) fn int8_rounds(self, _rounds: u64) -> i32 {
            match self {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(30);

    #[test]
    fn minilm_flops_per_token_at_one_token_by_hand() {
        // Per layer, h = 384, i = 1536:
        //   Q, K, V, output: 4 · 2·384·384 = 1_179_648
        //   feed-forward:    2·384·1536 + 2·1536·384 = 2_359_296
        //   attention over 1 token: scores 2·1·384 + weighted sum 2·1·384 = 1_536
        //   = 3_540_480; × 6 layers = 21_242_880.
        assert_eq!(flops_per_token(MINILM_SHAPE, 1), 21_242_880.0);
    }

    #[test]
    fn m3e_projection_flops_by_hand() {
        // h = 512, i = 2048: (4·2·512·512 + 2·2·512·2048) · 4 layers = 6_291_456 · 4.
        assert_eq!(projection_flops_per_token(M3E_SHAPE), 25_165_824.0);
    }

    #[test]
    fn attention_term_grows_linearly_with_sequence_length() {
        for shape in [MINILM_SHAPE, M3E_SHAPE] {
            let one = attention_flops_per_token(shape, 1);
            assert!(one > 0.0);
            for len in [2, 20, 64, 512] {
                assert_eq!(attention_flops_per_token(shape, len), one * len as f64);
                let growth = flops_per_token(shape, len) - flops_per_token(shape, 1);
                assert_eq!(growth, one * (len - 1) as f64);
            }
        }
    }

    #[test]
    fn ceiling_divides_the_rate_by_a_sentence() {
        let flops = flops_per_sentence(MINILM_SHAPE, 20);
        assert_eq!(flops, flops_per_token(MINILM_SHAPE, 20) * 20.0);
        let ceiling = ceiling_sentences_per_sec(100.0, MINILM_SHAPE, 20);
        assert!((ceiling * flops - 100e9).abs() < 1.0);
    }

    fn assert_rate(rate: Option<f64>, what: &str) {
        let avx2 = kernels::Avx2Fma::detect().is_some();
        match rate {
            Some(r) => assert!(r.is_finite() && r > 0.0, "{what}: {r}"),
            None => assert!(!avx2, "{what}: None on a CPU with AVX2 + FMA"),
        }
    }

    #[test]
    fn peaks_are_positive_and_finite() {
        for threads in [1, 2] {
            assert_rate(peak_f32_gflops(threads, SHORT), "f32 peak");
            assert_rate(peak_int8_gops(threads, SHORT), "int8 peak");
        }
        assert_eq!(peak_f32_gflops(0, SHORT), None);
    }

    #[test]
    fn gemm_rate_is_positive_and_finite() {
        for threads in [1, 2] {
            let r = gemm_f32_gflops(32, 64, 48, threads, SHORT);
            assert!(r.is_some_and(|r| r.is_finite() && r > 0.0), "{r:?}");
        }
        assert_eq!(gemm_f32_gflops(0, 64, 48, 1, SHORT), None);
    }

    #[test]
    fn gemm_layout_matches_a_naive_product() {
        let shape = GemmShape { m: 3, k: 4, n: 5 };
        let lhs: Vec<f32> = (0..12).map(|i| i as f32 - 5.0).collect();
        let weight: Vec<f32> = (0..20).map(|i| (i % 7) as f32 * 0.5).collect();
        let mut dst = vec![f32::NAN; 15];
        matmul_weight_t(shape, &lhs, &weight, &mut dst, gemm::Parallelism::None).unwrap();
        for i in 0..3 {
            for j in 0..5 {
                let want: f32 = (0..4).map(|p| lhs[i * 4 + p] * weight[j * 4 + p]).sum();
                assert!((dst[i * 5 + j] - want).abs() < 1e-4, "({i},{j})");
            }
        }
        let mut short = vec![0.0; 14];
        assert!(
            matmul_weight_t(shape, &lhs, &weight, &mut short, gemm::Parallelism::None).is_none()
        );
    }
}
