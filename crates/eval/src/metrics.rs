//! Retrieval metrics over item labels, and latency statistics.
//!
//! Definitions (binary relevance; the ranking is deduplicated first, keeping each label's first
//! occurrence, so a system cannot score twice with one item):
//!
//! * `recall@k` = |gold ∩ top-k| / |gold| — the standard fraction, so a multi-evidence question
//!   retrieving one of two gold items scores 0.5.
//! * `hit@k` = 1 if any gold label is in the top k, else 0.
//! * reciprocal rank = 1 / rank of the first gold label (0 if none retrieved).
//! * `ndcg@k` = DCG@k / IDCG@k with gain 1 for gold labels, discount 1/log2(rank + 1), and the
//!   ideal ranking placing min(|gold|, k) gold labels first.
//!
//! A question with no gold labels has no defined score; every metric is 0 for it and
//! [`RetrievalScores`] counts it apart instead of averaging it in.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A deduplicated ranking judged against a gold set.
#[derive(Debug, Clone)]
pub struct Ranking<'a> {
    ranked: Vec<&'a str>,
    gold: HashSet<&'a str>,
}

impl<'a> Ranking<'a> {
    pub fn new<R: AsRef<str>, G: AsRef<str>>(ranked: &'a [R], gold: &'a [G]) -> Self {
        let mut seen = HashSet::new();
        let ranked = ranked
            .iter()
            .map(AsRef::as_ref)
            .filter(|label| seen.insert(*label))
            .collect();
        let gold = gold.iter().map(AsRef::as_ref).collect();
        Ranking { ranked, gold }
    }

    /// The ranking after deduplication.
    pub fn ranked(&self) -> &[&'a str] {
        &self.ranked
    }

    /// Number of distinct gold labels.
    pub fn gold_len(&self) -> usize {
        self.gold.len()
    }

    fn is_gold(&self, label: &str) -> bool {
        self.gold.contains(label)
    }

    fn top(&self, k: usize) -> &[&'a str] {
        &self.ranked[..k.min(self.ranked.len())]
    }

    /// 1-based rank of the first gold label.
    pub fn first_gold_rank(&self) -> Option<usize> {
        self.ranked
            .iter()
            .position(|label| self.is_gold(label))
            .map(|i| i + 1)
    }

    pub fn recall_at(&self, k: usize) -> f64 {
        if self.gold.is_empty() {
            return 0.0;
        }
        let found = self.top(k).iter().filter(|l| self.is_gold(l)).count();
        found as f64 / self.gold.len() as f64
    }

    pub fn hit_at(&self, k: usize) -> bool {
        self.top(k).iter().any(|l| self.is_gold(l))
    }

    pub fn reciprocal_rank(&self) -> f64 {
        self.first_gold_rank().map_or(0.0, |rank| 1.0 / rank as f64)
    }

    pub fn ndcg_at(&self, k: usize) -> f64 {
        let ideal_hits = self.gold.len().min(k);
        if ideal_hits == 0 {
            return 0.0;
        }
        let discount = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
        let dcg: f64 = self
            .top(k)
            .iter()
            .enumerate()
            .filter(|(_, label)| self.is_gold(label))
            .map(|(i, _)| discount(i + 1))
            .sum();
        let idcg: f64 = (1..=ideal_hits).map(discount).sum();
        dcg / idcg
    }
}

/// Mean scores over a set of questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreSummary {
    /// Questions averaged (those with gold labels).
    pub count: usize,
    pub recall: BTreeMap<usize, f64>,
    pub hit: BTreeMap<usize, f64>,
    pub ndcg: BTreeMap<usize, f64>,
    pub mrr: f64,
}

/// Overall and per-category scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreReport {
    pub ks: Vec<usize>,
    pub overall: ScoreSummary,
    pub by_category: BTreeMap<String, ScoreSummary>,
    /// Questions without gold labels, not averaged.
    pub without_gold: usize,
}

#[derive(Debug, Clone, Default)]
struct Sums {
    count: usize,
    recall: Vec<f64>,
    hit: Vec<f64>,
    ndcg: Vec<f64>,
    rr: f64,
}

impl Sums {
    fn new(ks: usize) -> Self {
        Sums {
            count: 0,
            recall: vec![0.0; ks],
            hit: vec![0.0; ks],
            ndcg: vec![0.0; ks],
            rr: 0.0,
        }
    }

    fn add(&mut self, ks: &[usize], ranking: &Ranking<'_>) {
        self.count += 1;
        for (i, &k) in ks.iter().enumerate() {
            self.recall[i] += ranking.recall_at(k);
            self.hit[i] += if ranking.hit_at(k) { 1.0 } else { 0.0 };
            self.ndcg[i] += ranking.ndcg_at(k);
        }
        self.rr += ranking.reciprocal_rank();
    }

    fn summary(&self, ks: &[usize]) -> ScoreSummary {
        let n = self.count.max(1) as f64;
        let per_k = |sums: &[f64]| -> BTreeMap<usize, f64> {
            ks.iter().zip(sums).map(|(&k, &s)| (k, s / n)).collect()
        };
        ScoreSummary {
            count: self.count,
            recall: per_k(&self.recall),
            hit: per_k(&self.hit),
            ndcg: per_k(&self.ndcg),
            mrr: self.rr / n,
        }
    }
}

/// Averages metrics over questions, overall and per category.
#[derive(Debug, Clone)]
pub struct RetrievalScores {
    ks: Vec<usize>,
    overall: Sums,
    by_category: BTreeMap<String, Sums>,
    without_gold: usize,
}

impl RetrievalScores {
    /// `ks`: the cutoffs to report (sorted, deduplicated, zero dropped).
    pub fn new(ks: &[usize]) -> Self {
        let mut ks: Vec<usize> = ks.iter().copied().filter(|&k| k > 0).collect();
        ks.sort_unstable();
        ks.dedup();
        RetrievalScores {
            overall: Sums::new(ks.len()),
            ks,
            by_category: BTreeMap::new(),
            without_gold: 0,
        }
    }

    pub fn ks(&self) -> &[usize] {
        &self.ks
    }

    pub fn add(&mut self, category: &str, ranking: &Ranking<'_>) {
        if ranking.gold_len() == 0 {
            self.without_gold += 1;
            return;
        }
        self.overall.add(&self.ks, ranking);
        let ks = self.ks.len();
        self.by_category
            .entry(category.to_string())
            .or_insert_with(|| Sums::new(ks))
            .add(&self.ks, ranking);
    }

    /// Convenience for `add(category, &Ranking::new(ranked, gold))`.
    pub fn add_query<R: AsRef<str>, G: AsRef<str>>(
        &mut self,
        category: &str,
        ranked: &[R],
        gold: &[G],
    ) {
        self.add(category, &Ranking::new(ranked, gold));
    }

    pub fn overall(&self) -> ScoreSummary {
        self.overall.summary(&self.ks)
    }

    pub fn by_category(&self) -> BTreeMap<String, ScoreSummary> {
        self.by_category
            .iter()
            .map(|(c, sums)| (c.clone(), sums.summary(&self.ks)))
            .collect()
    }

    pub fn report(&self) -> ScoreReport {
        ScoreReport {
            ks: self.ks.clone(),
            overall: self.overall(),
            by_category: self.by_category(),
            without_gold: self.without_gold,
        }
    }
}

/// Session-level recall, the metric LoCoMo and LongMemEval results are usually published in: a
/// question scores 1 at k when one of its gold items' sessions is the session of one of the
/// top-k ranked items (ranked items, not distinct sessions: the same k as turn-level recall).
#[derive(Debug, Clone)]
pub struct SessionRecall {
    ks: Vec<usize>,
    overall: (usize, Vec<f64>),
    by_category: BTreeMap<String, (usize, Vec<f64>)>,
}

impl SessionRecall {
    /// `ks`: the cutoffs to report (sorted, deduplicated, zero dropped).
    pub fn new(ks: &[usize]) -> Self {
        let mut ks: Vec<usize> = ks.iter().copied().filter(|&k| k > 0).collect();
        ks.sort_unstable();
        ks.dedup();
        let n = ks.len();
        SessionRecall {
            ks,
            overall: (0, vec![0.0; n]),
            by_category: BTreeMap::new(),
        }
    }

    /// One question: the sessions of its ranked items, best first (repeats kept), and of its gold
    /// items. A question without gold sessions is not averaged.
    pub fn add<R: AsRef<str>, G: AsRef<str>>(&mut self, category: &str, ranked: &[R], gold: &[G]) {
        let gold: HashSet<&str> = gold.iter().map(AsRef::as_ref).collect();
        if gold.is_empty() {
            return;
        }
        let first = ranked.iter().position(|s| gold.contains(s.as_ref()));
        let n = self.ks.len();
        let by_category = self
            .by_category
            .entry(category.to_string())
            .or_insert_with(|| (0, vec![0.0; n]));
        for sums in [&mut self.overall, by_category] {
            sums.0 += 1;
            for (sum, &k) in sums.1.iter_mut().zip(&self.ks) {
                if first.is_some_and(|at| at < k) {
                    *sum += 1.0;
                }
            }
        }
    }

    fn means(&self, sums: &(usize, Vec<f64>)) -> BTreeMap<usize, f64> {
        let n = sums.0.max(1) as f64;
        self.ks
            .iter()
            .zip(&sums.1)
            .map(|(&k, &s)| (k, s / n))
            .collect()
    }

    /// Mean session recall at each k over every question with gold.
    pub fn overall(&self) -> BTreeMap<usize, f64> {
        self.means(&self.overall)
    }

    pub fn by_category(&self) -> BTreeMap<String, BTreeMap<usize, f64>> {
        self.by_category
            .iter()
            .map(|(c, sums)| (c.clone(), self.means(sums)))
            .collect()
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Collects durations and reports nearest-rank percentiles.
///
/// Nearest rank: the p-th percentile of n sorted samples is the sample at 1-based rank
/// ⌈p/100 · n⌉ (at least 1), so it is always an observed value.
#[derive(Debug, Clone, Default)]
pub struct LatencyStats {
    samples: Vec<Duration>,
}

impl LatencyStats {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, sample: Duration) {
        self.samples.push(sample);
    }

    /// Add every sample of `other`.
    pub fn extend(&mut self, other: &LatencyStats) {
        self.samples.extend_from_slice(&other.samples);
    }

    pub fn count(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    pub fn mean(&self) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        let total: u128 = self.samples.iter().map(Duration::as_nanos).sum();
        let mean = total / self.samples.len() as u128;
        Some(Duration::from_nanos(
            u64::try_from(mean).unwrap_or(u64::MAX),
        ))
    }

    /// Nearest-rank percentile, `p` in 0..=100 (values outside are clamped).
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        nearest_rank(&sorted, p)
    }

    pub fn p50(&self) -> Option<Duration> {
        self.percentile(50.0)
    }

    pub fn p95(&self) -> Option<Duration> {
        self.percentile(95.0)
    }

    pub fn max(&self) -> Option<Duration> {
        self.samples.iter().max().copied()
    }

    pub fn summary(&self) -> Option<LatencySummary> {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let ms = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Some(LatencySummary {
            count: sorted.len(),
            mean_ms: ms(Some(self.mean()?)),
            p50_ms: ms(nearest_rank(&sorted, 50.0)),
            p95_ms: ms(nearest_rank(&sorted, 95.0)),
            p99_ms: ms(nearest_rank(&sorted, 99.0)),
            max_ms: ms(sorted.last().copied()),
        })
    }
}

fn nearest_rank(sorted: &[Duration], p: f64) -> Option<Duration> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
    // Multiply before dividing so that exact products (95 · 20 / 100 = 19) stay exact.
    let rank = (p * n as f64 / 100.0).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f64 = 1e-12;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < EPS
    }

    #[test]
    fn session_recall_counts_the_sessions_of_the_top_k_items() {
        let mut s = SessionRecall::new(&[10, 1, 2, 0, 2]);
        // Sessions of the ranked items, repeats kept: the gold session comes third, so k = 2
        // misses it even though it is the second distinct session.
        s.add("a", &["s1", "s1", "s2"], &["s2", "s9"]);
        s.add("b", &["s3"], &["s3"]);
        s.add("b", &["s4"], &["s5"]);
        s.add("b", &["s4"], &[] as &[&str]); // no gold: not averaged
        let overall = s.overall();
        assert_eq!(overall.keys().copied().collect::<Vec<_>>(), [1, 2, 10]);
        assert!(close(overall[&1], 1.0 / 3.0));
        assert!(close(overall[&2], 1.0 / 3.0));
        assert!(close(overall[&10], 2.0 / 3.0));
        let by = s.by_category();
        assert!(close(by["a"][&2], 0.0));
        assert!(close(by["a"][&10], 1.0));
        assert!(close(by["b"][&10], 0.5));
    }

    #[test]
    fn ranking_metrics_by_hand() {
        // Deduplicated ranking: a, x, b, y, c ; gold {a, b, z}.
        let ranked = ["a", "x", "a", "b", "y", "x", "c"];
        let gold = ["a", "b", "z"];
        let r = Ranking::new(&ranked, &gold);
        assert_eq!(r.ranked(), ["a", "x", "b", "y", "c"]);
        assert!(close(r.recall_at(1), 1.0 / 3.0));
        assert!(close(r.recall_at(2), 1.0 / 3.0));
        assert!(close(r.recall_at(3), 2.0 / 3.0));
        assert!(close(r.recall_at(100), 2.0 / 3.0));
        assert!(close(r.recall_at(0), 0.0));
        assert!(r.hit_at(1));
        assert!(!r.hit_at(0));
        assert!(close(r.reciprocal_rank(), 1.0));
        assert_eq!(r.first_gold_rank(), Some(1));
        // ndcg@3: DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) + 1/log2(4).
        let idcg3 = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!(close(r.ndcg_at(3), 1.5 / idcg3));
        // ndcg@1: 1 / 1.
        assert!(close(r.ndcg_at(1), 1.0));
        // ndcg@2: DCG = 1; IDCG = 1 + 1/log2(3).
        assert!(close(r.ndcg_at(2), 1.0 / (1.0 + 1.0 / 3f64.log2())));
    }

    #[test]
    fn later_first_hit() {
        let ranked = ["x", "y", "g"];
        let gold = ["g"];
        let r = Ranking::new(&ranked, &gold);
        assert!(close(r.reciprocal_rank(), 1.0 / 3.0));
        assert!(!r.hit_at(2));
        assert!(r.hit_at(3));
        assert!(close(r.recall_at(2), 0.0));
        assert!(close(r.recall_at(3), 1.0));
        // One gold at rank 3: DCG = 1/log2(4) = 0.5, IDCG = 1.
        assert!(close(r.ndcg_at(3), 0.5));
        assert!(close(r.ndcg_at(10), 0.5));

        let none: [&str; 0] = [];
        let empty = Ranking::new(&none, &gold);
        assert!(close(empty.reciprocal_rank(), 0.0));
        assert!(close(empty.ndcg_at(5), 0.0));
        let no_gold = Ranking::new(&ranked, &none);
        assert!(close(no_gold.recall_at(5), 0.0));
        assert!(close(no_gold.ndcg_at(5), 0.0));
    }

    #[test]
    fn accumulates_per_category() {
        let mut scores = RetrievalScores::new(&[5, 1, 0, 5]);
        assert_eq!(scores.ks(), [1, 5]);
        // q1 (cat a): gold at rank 2 of 2 retrieved. recall@1 0, @5 1; rr 0.5.
        scores.add_query("a", &["x", "g"], &["g"]);
        // q2 (cat a): two gold, one found at rank 1. recall@1 0.5, @5 0.5; rr 1.
        scores.add_query("a", &["h", "y"], &["h", "k"]);
        // q3 (cat b): nothing found.
        scores.add_query("b", &["z"], &["g"]);
        // q4: no gold — counted apart.
        scores.add_query("b", &["z"], &[] as &[&str]);

        let report = scores.report();
        assert_eq!(report.without_gold, 1);
        assert_eq!(report.overall.count, 3);
        assert!(close(report.overall.recall[&1], 0.5 / 3.0));
        assert!(close(report.overall.recall[&5], 1.5 / 3.0));
        assert!(close(report.overall.hit[&1], 1.0 / 3.0));
        assert!(close(report.overall.hit[&5], 2.0 / 3.0));
        assert!(close(report.overall.mrr, 1.5 / 3.0));
        let a = &report.by_category["a"];
        assert_eq!(a.count, 2);
        assert!(close(a.recall[&5], 0.75));
        assert!(close(a.mrr, 0.75));
        // q1 ndcg@5 = 1/log2(3); q2 ndcg@5 = 1 / (1 + 1/log2(3)).
        let expected = (1.0 / 3f64.log2() + 1.0 / (1.0 + 1.0 / 3f64.log2())) / 2.0;
        assert!(close(a.ndcg[&5], expected));
        let b = &report.by_category["b"];
        assert_eq!(b.count, 1);
        assert!(close(b.mrr, 0.0));
        let json = serde_json::to_value(&report).expect("serializable");
        assert!(json["overall"]["recall"]["5"].is_number());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut stats = LatencyStats::new();
        assert_eq!(stats.p50(), None);
        assert!(stats.summary().is_none());
        // 1..=20 ms, pushed out of order.
        for ms in (1..=20u64).rev() {
            stats.push(Duration::from_millis(ms));
        }
        assert_eq!(stats.count(), 20);
        // p50: rank ceil(10) = 10 → 10 ms; p95: rank 19 → 19 ms; p99: rank ceil(19.8) = 20.
        assert_eq!(stats.p50(), Some(Duration::from_millis(10)));
        assert_eq!(stats.p95(), Some(Duration::from_millis(19)));
        assert_eq!(stats.percentile(99.0), Some(Duration::from_millis(20)));
        assert_eq!(stats.percentile(0.0), Some(Duration::from_millis(1)));
        assert_eq!(stats.percentile(100.0), Some(Duration::from_millis(20)));
        assert_eq!(stats.percentile(5.1), Some(Duration::from_millis(2)));
        assert_eq!(stats.mean(), Some(Duration::from_micros(10_500)));
        let summary = stats.summary().expect("non-empty");
        assert!(close(summary.mean_ms, 10.5));
        assert!(close(summary.p95_ms, 19.0));
        assert!(close(summary.max_ms, 20.0));

        let mut small = LatencyStats::new();
        for ms in [30, 10, 20] {
            small.push(Duration::from_millis(ms));
        }
        // n = 3: p50 rank ceil(1.5) = 2 → 20 ms; p95 rank ceil(2.85) = 3 → 30 ms.
        assert_eq!(small.p50(), Some(Duration::from_millis(20)));
        assert_eq!(small.p95(), Some(Duration::from_millis(30)));
        assert_eq!(small.max(), Some(Duration::from_millis(30)));
    }
}
