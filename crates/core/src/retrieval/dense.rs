//! Brute-force cosine search over one user's vectors: contiguous storage, chunked dot products the
//! compiler vectorizes, f32 by default and int8 (per-vector scale) as a 4× smaller option.
//!
//! Exact search reads every vector, so past `[retrieval.ann] min_vectors` a user's searches go
//! through an approximate index built beside it (`super::ann`; the methods at the end of this
//! file), which falls back to the scan here whenever it cannot answer.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ann::{AnnConfig, AnnIndex, AnnStatus};
use super::simd;

/// How vectors are held in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantization {
    #[default]
    F32,
    /// Symmetric int8 with one scale per vector; ~1e-2 cosine error, 4× less memory.
    Int8,
}

pub use super::simd::dot;

#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; 16];
    let chunks = n / 16;
    for i in 0..chunks {
        let (x, y) = (&a[i * 16..i * 16 + 16], &b[i * 16..i * 16 + 16]);
        for j in 0..16 {
            acc[j] += i32::from(x[j]) * i32::from(y[j]);
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for i in chunks * 16..n {
        sum += i32::from(a[i]) * i32::from(b[i]);
    }
    sum
}

fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        out.iter_mut().for_each(|q| *q = 0);
        return 0.0;
    }
    let scale = max / 127.0;
    for (q, x) in out.iter_mut().zip(v) {
        *q = (x / scale).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Vectors of one user in one embedding space, addressed by slot.
///
/// A slot holds one vector, or for a long text one per window of it. A slot's score is its best vector's, so a question about one passage of a long
/// memory is not lost to the model's truncation or to averaging over the rest.
#[derive(Clone)]
pub struct DenseIndex {
    dim: usize,
    quantization: Quantization,
    /// First vector of every slot, slot-indexed (the common, single-vector case scans this).
    f32_data: Vec<f32>,
    i8_data: Vec<i8>,
    scales: Vec<f32>,
    present: Vec<bool>,
    count: usize,
    /// Further window vectors of long texts, with the slot each belongs to.
    extra: Rows,
    /// Slot-indexed: whether the slot has rows in `extra` (so single-vector inserts and
    /// removals never scan it).
    has_extra: Vec<bool>,
    /// An f32 index's first rows again as int8 codes, a quarter of the bytes: a search scans
    /// these, and computes exact scores only for the slots the codes' error bound cannot rule
    /// out of the top (see [`DenseIndex::top`]).
    codes: Codes,
    /// The approximate index over every row, for users with many vectors (`[retrieval.ann]`).
    ann: AnnIndex,
}

/// Slot-indexed int8 codes of an f32 index's first rows: `data` (dim per slot), the scale of
/// each row (a code times it is the value, within half of it), and each row's L1 norm as coded
/// (`scale` × Σ|code|), which bounds the error of a coded dot product.
#[derive(Clone, Default)]
struct Codes {
    data: Vec<i8>,
    scale: Vec<f32>,
    l1: Vec<f32>,
}

impl Codes {
    fn grow(&mut self, slots: usize, dim: usize) {
        self.data.resize(slots * dim, 0);
        self.scale.resize(slots, 0.0);
        self.l1.resize(slots, 0.0);
    }

    fn set(&mut self, slot: usize, dim: usize, row: &[f32]) {
        let codes = &mut self.data[slot * dim..(slot + 1) * dim];
        let scale = quantize(row, codes);
        self.scale[slot] = scale;
        self.l1[slot] = scale * codes.iter().map(|&c| f32::from(c).abs()).sum::<f32>();
    }
}

/// How far a coded dot product may be from the exact one beyond the coding error itself:
/// float rounding of both (the exact score is itself a float sum of a few hundred products).
const CODED_SLACK: f32 = 1e-4;

/// Below this many accepted slots the exact scan is as cheap as the coded one.
const CODED_MIN_SLOTS: usize = 2_048;

/// Vectors in insertion order with their owning slot (the extra windows of long texts).
#[derive(Clone, Default)]
struct Rows {
    owner: Vec<u32>,
    f32_data: Vec<f32>,
    i8_data: Vec<i8>,
    scales: Vec<f32>,
}

impl Rows {
    fn remove_owner(&mut self, slot: u32, dim: usize) {
        let keep: Vec<bool> = self.owner.iter().map(|&o| o != slot).collect();
        retain_rows(&mut self.owner, 1, &keep);
        // Only the buffers of the index's quantization are filled; the other stays empty.
        if !self.f32_data.is_empty() {
            retain_rows(&mut self.f32_data, dim, &keep);
        }
        if !self.i8_data.is_empty() {
            retain_rows(&mut self.i8_data, dim, &keep);
            retain_rows(&mut self.scales, 1, &keep);
        }
    }
}

fn retain_rows<T: Copy>(data: &mut Vec<T>, dim: usize, keep: &[bool]) {
    let mut write = 0;
    for (row, &k) in keep.iter().enumerate() {
        if k {
            data.copy_within(row * dim..(row + 1) * dim, write * dim);
            write += 1;
        }
    }
    data.truncate(write * dim);
}

impl DenseIndex {
    pub fn new(dim: usize, quantization: Quantization) -> Self {
        Self {
            dim,
            quantization,
            f32_data: Vec::new(),
            i8_data: Vec::new(),
            scales: Vec::new(),
            present: Vec::new(),
            count: 0,
            extra: Rows::default(),
            has_extra: Vec::new(),
            codes: Codes::default(),
            ann: AnnIndex::new(AnnConfig::off(), dim),
        }
    }

    pub fn dimension(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn contains(&self, slot: u32) -> bool {
        self.present.get(slot as usize).copied().unwrap_or(false)
    }

    fn grow(&mut self, slot: usize) {
        if self.present.len() <= slot {
            let n = slot + 1;
            self.present.resize(n, false);
            self.has_extra.resize(n, false);
            match self.quantization {
                Quantization::F32 => {
                    self.f32_data.resize(n * self.dim, 0.0);
                    self.codes.grow(n, self.dim);
                }
                Quantization::Int8 => {
                    self.i8_data.resize(n * self.dim, 0);
                    self.scales.resize(n, 0.0);
                }
            }
        }
    }

    /// Store `vectors` (one or more unit-length vectors of the index's dimension, concatenated)
    /// in `slot`, replacing what it held. Input that is empty or not a whole number of vectors
    /// is ignored and reported as `false`; callers check dimensions before they get here.
    pub fn insert(&mut self, slot: u32, vectors: &[f32]) -> bool {
        if vectors.is_empty() || !vectors.len().is_multiple_of(self.dim) {
            return false;
        }
        let (first, rest) = vectors.split_at(self.dim);
        let s = slot as usize;
        self.grow(s);
        let range = s * self.dim..(s + 1) * self.dim;
        match self.quantization {
            Quantization::F32 => {
                self.f32_data[range].copy_from_slice(first);
                self.codes.set(s, self.dim, first);
            }
            Quantization::Int8 => self.scales[s] = quantize(first, &mut self.i8_data[range]),
        }
        if !self.present[s] {
            self.present[s] = true;
            self.count += 1;
        }
        if self.has_extra[s] {
            self.extra.remove_owner(slot, self.dim);
        }
        self.has_extra[s] = !rest.is_empty();
        for window in rest.chunks_exact(self.dim) {
            self.extra.owner.push(slot);
            match self.quantization {
                Quantization::F32 => self.extra.f32_data.extend_from_slice(window),
                Quantization::Int8 => {
                    let start = self.extra.i8_data.len();
                    self.extra.i8_data.resize(start + self.dim, 0);
                    let scale = quantize(window, &mut self.extra.i8_data[start..]);
                    self.extra.scales.push(scale);
                }
            }
        }
        self.ann.inserted(slot, vectors);
        true
    }

    pub fn remove(&mut self, slot: u32) {
        if let Some(p) = self.present.get_mut(slot as usize) {
            if *p {
                *p = false;
                self.count -= 1;
            }
        }
        if let Some(flag) = self.has_extra.get_mut(slot as usize) {
            if *flag {
                *flag = false;
                self.extra.remove_owner(slot, self.dim);
            }
        }
        self.ann.removed(slot);
    }

    /// Does the index keep every vector exactly as inserted (f32)? An int8 index keeps only a
    /// quantized copy.
    pub fn keeps_exact(&self) -> bool {
        self.quantization == Quantization::F32
    }

    /// The `window`-th vector of `slot` (0: the first), exactly as inserted; `None` when the
    /// slot holds no such window or the index is int8 (its copy is not the embedder's vector).
    pub fn exact_window(&self, slot: u32, window: usize) -> Option<&[f32]> {
        if !self.keeps_exact() || !self.contains(slot) {
            return None;
        }
        let s = slot as usize;
        if window == 0 {
            return self.f32_data.get(s * self.dim..(s + 1) * self.dim);
        }
        if !self.has_extra.get(s).copied().unwrap_or(false) {
            return None;
        }
        // A slot's extra windows sit in window order (inserted together, removed together).
        let row = self
            .extra
            .owner
            .iter()
            .enumerate()
            .filter(|&(_, &owner)| owner == slot)
            .nth(window - 1)?
            .0;
        self.extra
            .f32_data
            .get(row * self.dim..(row + 1) * self.dim)
    }

    /// Vectors held beyond the first of each slot (windows of long texts).
    pub fn extra_vectors(&self) -> usize {
        self.extra.owner.len()
    }

    /// Cosine similarity of `query` with every present, accepted slot (its best vector's).
    /// Unsorted.
    pub fn score(&self, query: &[f32], accept: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        let mut out = Vec::new();
        self.score_into(query, accept, &mut out);
        out
    }

    /// The best `n` of [`score`](Self::score), best first, ties broken on `tie(slot)`
    /// ascending: the same slots and the same scores.
    ///
    /// An f32 index scans its int8 codes first, with a bound on how far each coded score can
    /// be from the exact one; the `n`-th best lower bound then rules out every slot whose upper
    /// bound is below it, and only the rest are scored exactly. The answer is the exact
    /// scan's, for a quarter of the bytes read (a user's vectors outgrow the CPU's caches at a
    /// few thousand memories, and the scan is then bound by memory bandwidth).
    ///
    /// Past `[retrieval.ann] min_vectors`, once the approximate index is built, the answer is
    /// its (see [`nearest`](Self::nearest)): exact cosines, recall below 1.
    pub fn top<K: Ord>(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
        n: usize,
        tie: impl Fn(u32) -> K,
    ) -> Vec<(u32, f32)> {
        if let Some(mut found) = self.approximate(query, accept, n) {
            keep_top(&mut found, n, &tie);
            return found;
        }
        self.top_exact(query, accept, n, tie)
    }

    /// [`top`](Self::top) by the exact (coded) scan, whatever the approximate index holds.
    pub fn top_exact<K: Ord>(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
        n: usize,
        tie: impl Fn(u32) -> K,
    ) -> Vec<(u32, f32)> {
        thread_local! {
            static SCORES: std::cell::RefCell<Vec<(u32, f32)>> =
                const { std::cell::RefCell::new(Vec::new()) };
            static BOUNDS: std::cell::RefCell<Vec<(u32, f32, f32)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        let coded = self.quantization == Quantization::F32
            && self.count >= CODED_MIN_SLOTS
            && n > 0
            && query.len() == self.dim;
        let select = |scores: &mut Vec<(u32, f32)>, bounds: &mut Vec<(u32, f32, f32)>| {
            scores.clear();
            if coded {
                bounds.clear();
                self.coded_bounds(query, accept, bounds);
                self.rescore(query, n, bounds, scores);
            } else {
                self.score_into(query, accept, scores);
            }
            keep_top(scores, n, &tie);
            scores.to_vec()
        };
        SCORES.with(|scores| {
            BOUNDS.with(
                |bounds| match (scores.try_borrow_mut(), bounds.try_borrow_mut()) {
                    (Ok(mut scores), Ok(mut bounds)) => select(&mut scores, &mut bounds),
                    _ => select(&mut Vec::new(), &mut Vec::new()),
                },
            )
        })
    }

    /// For every present, accepted slot: (slot, lower, upper) bounds on its exact score from
    /// its int8 codes. A slot with window rows is scored exactly (its bounds are equal).
    fn coded_bounds(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
        out: &mut Vec<(u32, f32, f32)>,
    ) {
        let dim = self.dim;
        let mut q_codes = vec![0i8; dim];
        let q_scale = quantize(query, &mut q_codes);
        let q_l1 = q_scale * q_codes.iter().map(|&c| f32::from(c).abs()).sum::<f32>();
        let windows = self.best_windows(query, accept);
        let wanted = |s: usize| self.present[s] && accept(s as u32);
        simd::scan_codes(&q_codes, &self.codes.data, dim, wanted, |s, dot| {
            let slot = s as u32;
            if let Some(&window) = windows.get(&slot) {
                let exact = self.exact_first(query, slot).max(window);
                out.push((slot, exact, exact));
                return;
            }
            let d_scale = self.codes.scale[s];
            let coded = q_scale * d_scale * dot as f32;
            let error = 0.5 * d_scale * q_l1
                + 0.5 * q_scale * self.codes.l1[s]
                + 0.25 * dim as f32 * q_scale * d_scale
                + CODED_SLACK;
            out.push((slot, coded - error, coded + error));
        });
    }

    /// The exact scores of the slots in `bounds` that may be among the best `n`: those whose
    /// upper bound reaches the `n`-th best lower bound.
    fn rescore(
        &self,
        query: &[f32],
        n: usize,
        bounds: &mut [(u32, f32, f32)],
        out: &mut Vec<(u32, f32)>,
    ) {
        let threshold = if bounds.len() > n {
            let (_, nth, _) = bounds.select_nth_unstable_by(n - 1, |a, b| b.1.total_cmp(&a.1));
            nth.1
        } else {
            f32::NEG_INFINITY
        };
        for &(slot, lower, upper) in bounds.iter() {
            if upper < threshold {
                continue;
            }
            let exact = if lower == upper {
                lower
            } else {
                self.exact_first(query, slot)
            };
            out.push((slot, exact));
        }
    }

    /// The exact score of `slot`'s first row (present, f32), as the scan computes it.
    fn exact_first(&self, query: &[f32], slot: u32) -> f32 {
        let s = slot as usize;
        simd::dot_one(query, &self.f32_data[s * self.dim..(s + 1) * self.dim])
    }

    /// The best exact score of each accepted slot's window rows (an f32 index's; one pass
    /// over them).
    fn best_windows(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
    ) -> std::collections::HashMap<u32, f32> {
        let mut best = std::collections::HashMap::new();
        for (row, &owner) in self.extra.owner.iter().enumerate() {
            if !self.present.get(owner as usize).copied().unwrap_or(false) || !accept(owner) {
                continue;
            }
            let range = row * self.dim..(row + 1) * self.dim;
            let score = simd::dot_one(query, &self.extra.f32_data[range]);
            let entry = best.entry(owner).or_insert(score);
            if score > *entry {
                *entry = score;
            }
        }
        best
    }

    /// [`score`](Self::score) into `out` (appended).
    fn score_into(&self, query: &[f32], accept: &dyn Fn(u32) -> bool, out: &mut Vec<(u32, f32)>) {
        if query.len() != self.dim || self.count == 0 {
            return;
        }
        out.reserve(self.count);
        let start = out.len();
        let mut q8 = Vec::new();
        let mut q_scale = 0.0;
        match self.quantization {
            Quantization::F32 => {
                let wanted = |s: usize| self.present[s] && accept(s as u32);
                simd::scan_rows(query, &self.f32_data, self.dim, wanted, |s, score| {
                    out.push((s as u32, score))
                });
            }
            Quantization::Int8 => {
                q8 = vec![0i8; self.dim];
                q_scale = quantize(query, &mut q8);
                for (s, row) in self.i8_data.chunks_exact(self.dim).enumerate() {
                    if self.present[s] && accept(s as u32) {
                        out.push((s as u32, dot_i8(&q8, row) as f32 * q_scale * self.scales[s]));
                    }
                }
            }
        }
        if self.extra.owner.is_empty() {
            return;
        }
        // This call's entries are in slot order, so an owner's entry is found by binary search.
        let scored = &mut out[start..];
        for (row, &owner) in self.extra.owner.iter().enumerate() {
            let Ok(at) = scored.binary_search_by_key(&owner, |&(s, _)| s) else {
                continue; // not accepted
            };
            let range = row * self.dim..(row + 1) * self.dim;
            let score = match self.quantization {
                Quantization::F32 => simd::dot_one(query, &self.extra.f32_data[range]),
                Quantization::Int8 => {
                    dot_i8(&q8, &self.extra.i8_data[range]) as f32
                        * q_scale
                        * self.extra.scales[row]
                }
            };
            if score > scored[at].1 {
                scored[at].1 = score;
            }
        }
    }
}

/// The approximate path (`[retrieval.ann]`, see [`super::ann`]): kept apart from the exact scan
/// above, which it falls back to whenever it cannot answer.
impl DenseIndex {
    /// This index with an approximate index built past `config.min_vectors` vectors (f32 only).
    pub fn with_ann(mut self, config: AnnConfig) -> Self {
        self.ann = AnnIndex::new(config, self.dim);
        self
    }

    /// The `wanted` accepted slots nearest to `query` or more, as (slot, cosine of its best
    /// vector): from the approximate index once it is built, else every accepted slot exactly
    /// as [`score`](Self::score). The cosines are exact either way. Unsorted.
    pub fn nearest(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
        wanted: usize,
    ) -> Vec<(u32, f32)> {
        match self.approximate(query, accept, wanted) {
            Some(found) => found,
            None => self.score(query, accept),
        }
    }

    /// Where the approximate index stands.
    pub fn ann_status(&self) -> AnnStatus {
        self.ann.status(!self.keeps_exact())
    }

    fn approximate(
        &self,
        query: &[f32],
        accept: &dyn Fn(u32) -> bool,
        wanted: usize,
    ) -> Option<Vec<(u32, f32)>> {
        if !self.keeps_exact() || query.len() != self.dim {
            return None;
        }
        if self.start_ann_build() {
            return None;
        }
        let found = self.ann.search(query, wanted, accept)?;
        Some(self.exact_scores(query, found.into_iter().map(|(slot, _)| slot)))
    }

    /// Start building the approximate index in the background if this index is due one (enough
    /// vectors, none built or building); whether it started.
    pub fn start_ann_build(&self) -> bool {
        if !self.keeps_exact() || !self.ann.wants_build(self.count) || !self.ann.claim_build() {
            return false;
        }
        let (owner, rows) = self.rows_snapshot();
        self.ann.start_build(owner, rows);
        true
    }

    /// Every vector with the slot it belongs to, for a build.
    fn rows_snapshot(&self) -> (Vec<u32>, Vec<f32>) {
        let rows = self.count + self.extra.owner.len();
        let mut owner = Vec::with_capacity(rows);
        let mut data = Vec::with_capacity(rows * self.dim);
        for (s, row) in self.f32_data.chunks_exact(self.dim).enumerate() {
            if self.present[s] {
                owner.push(s as u32);
                data.extend_from_slice(row);
            }
        }
        owner.extend_from_slice(&self.extra.owner);
        data.extend_from_slice(&self.extra.f32_data);
        (owner, data)
    }

    /// Each slot's cosine with `query` as [`score`](Self::score) computes it (its best vector),
    /// so the approximate path returns the scores the exact one would.
    fn exact_scores(&self, query: &[f32], slots: impl Iterator<Item = u32>) -> Vec<(u32, f32)> {
        let mut out: Vec<(u32, f32)> = slots
            .filter_map(|s| {
                let row = self
                    .f32_data
                    .get(s as usize * self.dim..(s as usize + 1) * self.dim)?;
                Some((s, simd::dot_one(query, row)))
            })
            .collect();
        let with_extra: HashMap<u32, usize> = out
            .iter()
            .enumerate()
            .filter(|(_, &(s, _))| self.has_extra.get(s as usize).copied().unwrap_or(false))
            .map(|(i, &(s, _))| (s, i))
            .collect();
        if with_extra.is_empty() {
            return out;
        }
        for (row, owner) in self.extra.owner.iter().enumerate() {
            let Some(&at) = with_extra.get(owner) else {
                continue;
            };
            let range = row * self.dim..(row + 1) * self.dim;
            let score = simd::dot_one(query, &self.extra.f32_data[range]);
            if score > out[at].1 {
                out[at].1 = score;
            }
        }
        out
    }
}

/// Cut `scored` to its best `n`, sorted best first (ties broken on `tie(slot)`, ascending).
pub(crate) fn keep_top<K: Ord>(scored: &mut Vec<(u32, f32)>, n: usize, tie: &impl Fn(u32) -> K) {
    let order =
        |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then_with(|| tie(a.0).cmp(&tie(b.0)));
    if scored.len() > n && n > 0 {
        scored.select_nth_unstable_by(n - 1, order);
        scored.truncate(n);
    }
    if n == 0 {
        scored.clear();
    }
    scored.sort_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::top_n_by;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// Unit vectors around a few centres (near neighbours and near ties are common).
    fn clustered(count: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..8).map(|_| (0..dim).map(|_| next()).collect()).collect();
        (0..count)
            .map(|i| {
                let centre = &centres[i % centres.len()];
                let spread = if i % 3 == 0 { 0.05 } else { 0.6 };
                unit(
                    &centre
                        .iter()
                        .map(|c| c + spread * next())
                        .collect::<Vec<_>>(),
                )
            })
            .collect()
    }

    #[test]
    fn the_coded_top_is_the_exact_top() {
        let dim = 64;
        let rows = clustered(3_000, dim, 5);
        let mut index = DenseIndex::new(dim, Quantization::F32);
        for (slot, row) in rows.iter().enumerate() {
            let mut vectors = row.clone();
            if slot % 97 == 0 {
                // A long text: two more windows.
                vectors.extend(&rows[(slot + 1) % rows.len()]);
                vectors.extend(&rows[(slot + 7) % rows.len()]);
            }
            index.insert(slot as u32, &vectors);
        }
        for slot in (0..3_000).step_by(13) {
            index.remove(slot);
        }
        // Rewritten slots keep nothing of their old vectors.
        index.insert(5, &rows[6]);
        assert!(index.len() >= CODED_MIN_SLOTS);
        let queries = clustered(40, dim, 9);
        for (i, query) in queries.iter().enumerate() {
            let accept = |slot: u32| !i.is_multiple_of(4) || slot.is_multiple_of(2);
            for n in [1, 10, 100, 500] {
                let exact = top_n_by(index.score(query, &accept), n, |s| s);
                let coded = index.top(query, &accept, n, |s| s);
                assert_eq!(coded, exact, "query {i}, n {n}");
            }
        }
        // And the codes did rule most slots out.
        let mut bounds = Vec::new();
        index.coded_bounds(&queries[1], &|_| true, &mut bounds);
        let mut rescored = Vec::new();
        index.rescore(&queries[1], 100, &mut bounds, &mut rescored);
        assert!(
            rescored.len() < index.len() / 4,
            "{} rescored",
            rescored.len()
        );
    }

    #[test]
    fn dot_matches_naive_for_odd_lengths() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.1).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.05).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }

    #[test]
    fn int8_scores_close_to_f32() {
        let vecs: Vec<Vec<f32>> = (0..20)
            .map(|i| {
                unit(
                    &(0..64)
                        .map(|j| ((i * 7 + j * 13) % 17) as f32 - 8.0)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let mut f = DenseIndex::new(64, Quantization::F32);
        let mut q = DenseIndex::new(64, Quantization::Int8);
        for (i, v) in vecs.iter().enumerate() {
            assert!(f.insert(i as u32, v));
            assert!(q.insert(i as u32, v));
        }
        let all = |_: u32| true;
        let mut a = f.score(&vecs[3], &all);
        let mut b = q.score(&vecs[3], &all);
        a.sort_by_key(|x| x.0);
        b.sort_by_key(|x| x.0);
        for (x, y) in a.iter().zip(&b) {
            assert!((x.1 - y.1).abs() < 0.02, "{x:?} vs {y:?}");
        }
        assert!((a[3].1 - 1.0).abs() < 1e-5);
    }

    #[test]
    fn a_slot_scores_as_its_best_window_in_both_quantizations() {
        for quantization in [Quantization::F32, Quantization::Int8] {
            let mut f = DenseIndex::new(4, quantization);
            // Slot 1: one window points along x, another along y.
            assert!(f.insert(1, &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]));
            assert!(f.insert(2, &[0.6, 0.8, 0.0, 0.0]));
            assert!(!f.insert(3, &[1.0, 0.0, 0.0, 0.0, 1.0]));
            assert_eq!(f.extra_vectors(), 1);
            let mut hits = f.score(&[0.0, 1.0, 0.0, 0.0], &|_| true);
            hits.sort_by_key(|h| h.0);
            assert_eq!(hits.len(), 2);
            assert!((hits[0].1 - 1.0).abs() < 0.02, "{quantization:?} {hits:?}");
            assert!((hits[1].1 - 0.8).abs() < 0.02);
            // Not accepted: its windows do not appear either.
            let hits = f.score(&[0.0, 1.0, 0.0, 0.0], &|s| s != 1);
            assert_eq!(hits.len(), 1);
            // Replacing the slot drops its old windows; removing it drops the new ones.
            assert!(f.insert(1, &[1.0, 0.0, 0.0, 0.0]));
            assert_eq!(f.extra_vectors(), 0);
            assert!(f.insert(
                2,
                &[0.6, 0.8, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
            ));
            assert_eq!(f.extra_vectors(), 2);
            let hits = f.score(&[0.0, 0.0, 0.0, 1.0], &|_| true);
            assert!(hits.iter().any(|h| h.0 == 2 && (h.1 - 1.0).abs() < 0.02));
            f.remove(2);
            assert_eq!(f.extra_vectors(), 0);
            assert_eq!(f.len(), 1);
        }
    }

    #[test]
    fn exact_windows_come_back_as_inserted_in_f32_only() {
        let mut f = DenseIndex::new(2, Quantization::F32);
        assert!(f.insert(0, &[1.0, 0.0, 0.0, 1.0, 0.6, 0.8]));
        assert!(f.insert(1, &[0.8, 0.6, 0.0, -1.0]));
        assert!(f.insert(0, &[0.0, 1.0, 0.6, 0.8])); // replaced: its old windows go
        assert_eq!(f.exact_window(0, 0), Some(&[0.0, 1.0][..]));
        assert_eq!(f.exact_window(0, 1), Some(&[0.6, 0.8][..]));
        assert_eq!(f.exact_window(0, 2), None);
        assert_eq!(f.exact_window(1, 1), Some(&[0.0, -1.0][..]));
        assert_eq!(f.exact_window(7, 0), None);
        f.remove(1);
        assert_eq!(f.exact_window(1, 0), None);
        let mut q = DenseIndex::new(2, Quantization::Int8);
        assert!(q.insert(0, &[1.0, 0.0]));
        assert!(!q.keeps_exact());
        assert_eq!(q.exact_window(0, 0), None);
    }

    #[test]
    fn remove_and_wrong_dimension() {
        let mut f = DenseIndex::new(4, Quantization::F32);
        assert!(!f.insert(0, &[1.0, 0.0]));
        assert!(f.insert(0, &[1.0, 0.0, 0.0, 0.0]));
        assert!(f.insert(5, &[0.0, 1.0, 0.0, 0.0]));
        assert_eq!(f.len(), 2);
        f.remove(0);
        let hits = f.score(&[1.0, 0.0, 0.0, 0.0], &|_| true);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 5);
    }
}
