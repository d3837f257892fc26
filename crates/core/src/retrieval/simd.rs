//! The dense scan's inner loop: the dot product of a query with every row of a contiguous
//! block of vectors, with AVX2 and FMA when the CPU has them (detected at run time, so one
//! binary runs everywhere), else the portable loop the compiler vectorizes for the baseline
//! target.
//!
//! The AVX2 kernel sums in another order than the portable one (four 8-lane accumulators,
//! fused multiply-adds), so scores differ from it in the last bits: by less than 1e-6 for unit
//! vectors of a few hundred dimensions.

/// Dot product with 8 independent accumulators so the loop vectorizes without `unsafe`.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let chunks = n / 8;
    for i in 0..chunks {
        let (x, y) = (&a[i * 8..i * 8 + 8], &b[i * 8..i * 8 + 8]);
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for i in chunks * 8..n {
        sum += a[i] * b[i];
    }
    sum
}

/// `dot(query, row)` for every `dim`-wide row of `rows` for which `wanted(row index)` holds,
/// passed to `found(row index, score)` in row order.
pub(crate) fn scan_rows(
    query: &[f32],
    rows: &[f32],
    dim: usize,
    mut wanted: impl FnMut(usize) -> bool,
    mut found: impl FnMut(usize, f32),
) {
    if dim == 0 || query.len() != dim {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = x86::Avx2Fma::detect() {
        kernel.scan_rows(query, rows, dim, &mut wanted, &mut found);
        return;
    }
    for (i, row) in rows.chunks_exact(dim).enumerate() {
        if wanted(i) {
            found(i, dot(query, row));
        }
    }
}

/// The integer dot product of `query` with every `dim`-wide row of int8 `rows` for which
/// `wanted(row index)` holds, passed to `found(row index, dot)` in row order. Exact in any
/// order (integer sums), so both kernels agree to the bit.
pub(crate) fn scan_codes(
    query: &[i8],
    rows: &[i8],
    dim: usize,
    mut wanted: impl FnMut(usize) -> bool,
    mut found: impl FnMut(usize, i32),
) {
    if dim == 0 || query.len() != dim {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = x86::Avx2Fma::detect() {
        kernel.scan_codes(query, rows, dim, &mut wanted, &mut found);
        return;
    }
    for (i, row) in rows.chunks_exact(dim).enumerate() {
        if wanted(i) {
            found(i, dot_codes(query, row));
        }
    }
}

/// Integer dot product of two code rows (the portable kernel).
fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

/// `dot(a, b)` with the scan's kernel (so a score computed alone equals the scan's).
pub(crate) fn dot_one(a: &[f32], b: &[f32]) -> f32 {
    let mut score = 0.0;
    let n = a.len().min(b.len());
    scan_rows(&a[..n], &b[..n], n, |_| true, |_, s| score = s);
    score
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use std::arch::x86_64::{
        __m256, __m256i, _mm256_add_epi32, _mm256_add_ps, _mm256_castps256_ps128,
        _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_ps,
        _mm256_setzero_si256, _mm256_sign_epi8, _mm256_storeu_si256, _mm_add_ps, _mm_add_ss,
        _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps,
    };

    /// Proof that the running CPU has AVX2 and FMA: only [`Avx2Fma::detect`] makes one, so
    /// holding one makes calling the `target_feature` functions below sound.
    #[derive(Clone, Copy)]
    pub(super) struct Avx2Fma(());

    impl Avx2Fma {
        pub(super) fn detect() -> Option<Self> {
            // The standard library caches the answer: this is an atomic load after the first.
            (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
                .then_some(Self(()))
        }

        pub(super) fn scan_rows(
            self,
            query: &[f32],
            rows: &[f32],
            dim: usize,
            wanted: impl FnMut(usize) -> bool,
            found: impl FnMut(usize, f32),
        ) {
            // SAFETY: `self` exists only when the CPU supports AVX2 and FMA (see `detect`),
            // the only requirement of the `target_feature` function.
            unsafe { scan_rows(query, rows, dim, wanted, found) }
        }
    }

    impl Avx2Fma {
        pub(super) fn scan_codes(
            self,
            query: &[i8],
            rows: &[i8],
            dim: usize,
            wanted: impl FnMut(usize) -> bool,
            found: impl FnMut(usize, i32),
        ) {
            // SAFETY: as for `scan_rows`; this kernel needs only AVX2.
            unsafe { scan_codes(query, rows, dim, wanted, found) }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn scan_codes(
        query: &[i8],
        rows: &[i8],
        dim: usize,
        mut wanted: impl FnMut(usize) -> bool,
        mut found: impl FnMut(usize, i32),
    ) {
        for (i, row) in rows.chunks_exact(dim).enumerate() {
            if wanted(i) {
                found(i, dot_codes(query, row));
            }
        }
    }

    /// Integer dot product, 32 codes per step: `vpsignb` moves the row's signs onto the
    /// query so that `vpmaddubsw` can take the row's magnitudes as unsigned, then `vpmaddwd`
    /// with ones widens to i32. Codes lie in [-127, 127], so a pair of products is at most
    /// 2 × 127 × 127 = 32258 and never saturates the i16 sum.
    #[target_feature(enable = "avx2")]
    fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let ones = _mm256_set1_epi16(1);
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n`, within both slices; unaligned loads.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(a.as_ptr().add(i).cast::<__m256i>()),
                    _mm256_loadu_si256(b.as_ptr().add(i).cast::<__m256i>()),
                )
            };
            let magnitudes = _mm256_sign_epi8(y, y);
            let signed = _mm256_sign_epi8(x, y);
            let pairs = _mm256_maddubs_epi16(magnitudes, signed);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
            i += 32;
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` is 32 bytes, the store's width; unaligned store.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), acc) };
        let mut total: i32 = lanes.iter().sum();
        for j in i..n {
            total += i32::from(a[j]) * i32::from(b[j]);
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn scan_rows(
        query: &[f32],
        rows: &[f32],
        dim: usize,
        mut wanted: impl FnMut(usize) -> bool,
        mut found: impl FnMut(usize, f32),
    ) {
        for (i, row) in rows.chunks_exact(dim).enumerate() {
            if wanted(i) {
                found(i, dot(query, row));
            }
        }
    }

    /// Dot product with four 8-lane FMA accumulators (32 floats per step), then the tail.
    #[target_feature(enable = "avx2,fma")]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (k, lane) in acc.iter_mut().enumerate() {
                let at = i + 8 * k;
                // SAFETY: `at + 8 <= i + 32 <= n`, within both slices; unaligned loads.
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(a.as_ptr().add(at)),
                        _mm256_loadu_ps(b.as_ptr().add(at)),
                    )
                };
                *lane = _mm256_fmadd_ps(x, y, *lane);
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n`, within both slices.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(a.as_ptr().add(i)),
                    _mm256_loadu_ps(b.as_ptr().add(i)),
                )
            };
            acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
            i += 8;
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut total = horizontal_sum(sum);
        for j in i..n {
            total += a[j] * b[j];
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn horizontal_sum(v: __m256) -> f32 {
        let low = _mm256_castps256_ps128(v);
        let high = _mm256_extractf128_ps::<1>(v);
        let quad = _mm_add_ps(low, high);
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        let one = _mm_add_ss(pair, _mm_shuffle_ps::<0b01>(pair, pair));
        _mm_cvtss_f32(one)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn the_scan_agrees_with_the_portable_dot_for_every_length() {
        for dim in [1, 7, 8, 31, 32, 33, 384, 385, 768] {
            let query = pseudo_random(dim, 1);
            let rows = pseudo_random(dim * 5, 2);
            let mut scores = Vec::new();
            scan_rows(&query, &rows, dim, |i| i != 3, |i, s| scores.push((i, s)));
            assert_eq!(scores.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 4]);
            for (i, score) in scores {
                let expected = dot(&query, &rows[i * dim..(i + 1) * dim]);
                assert!(
                    (score - expected).abs() <= 1e-5 * (1.0 + expected.abs()),
                    "dim {dim} row {i}: {score} vs {expected}"
                );
                assert_eq!(dot_one(&query, &rows[i * dim..(i + 1) * dim]), score);
            }
        }
    }

    #[test]
    fn the_code_scan_is_exact_for_every_length() {
        for dim in [1, 31, 32, 33, 64, 384, 385] {
            let codes = |seed: u32, n: usize| -> Vec<i8> {
                let mut x = seed;
                (0..n)
                    .map(|_| {
                        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        ((x >> 16) % 255) as i32 - 127
                    })
                    .map(|c| c as i8)
                    .collect()
            };
            let mut query = codes(3, dim);
            query[0] = -127;
            let mut rows = codes(4, dim * 3);
            rows[0] = -127;
            rows[dim..2 * dim].fill(127);
            let mut got = Vec::new();
            scan_codes(&query, &rows, dim, |_| true, |i, d| got.push((i, d)));
            for (i, dot) in got {
                assert_eq!(
                    dot,
                    dot_codes(&query, &rows[i * dim..(i + 1) * dim]),
                    "dim {dim}"
                );
            }
        }
    }

    #[test]
    fn a_query_of_another_width_scores_nothing() {
        let mut called = false;
        scan_rows(&[1.0; 3], &[1.0; 8], 4, |_| true, |_, _| called = true);
        assert!(!called);
    }
}
