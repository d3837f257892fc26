//! The approximate dense index of a user with many vectors (`[retrieval.ann]`): an HNSW graph
//! ([`super::hnsw`]) over every vector of the user's [`DenseIndex`](super::DenseIndex), built in
//! the background once the user holds `min_vectors` of them.
//!
//! Until the graph is installed every search is exact, so nothing waits for a build. The first
//! search past the threshold copies the rows and hands them to a builder thread (one build at a
//! time per process); writes made meanwhile are logged with their vectors, and the builder adds
//! them before it installs the graph. After that, every write inserts into the graph at once and
//! a replaced or removed slot's nodes are only marked dead: the walk still passes through them
//! but never returns them. When dead nodes outnumber live ones the graph is dropped and built
//! again. A clone of the index starts without a graph (exact) and builds its own.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::hnsw::{Budget, Graph, Shape};
use crate::error::{Error, Result};

/// Default [`AnnConfig::min_vectors`]: below it an exact scan is as fast (measured in
/// docs/results/retrieval.md, "An approximate index past N memories").
pub const DEFAULT_ANN_MIN_VECTORS: usize = 150_000;

/// `[retrieval.ann]`: when and how a user's dense search goes approximate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnnConfig {
    /// `false` keeps every dense search exact.
    pub enabled: bool,
    /// Users with at least this many memories with a vector get the approximate index; 0 turns
    /// it off.
    pub min_vectors: usize,
    /// Links per node of the graph (twice as many on its bottom layer).
    pub m: usize,
    /// Candidates weighed while a node is linked: higher builds slower and finds more.
    pub ef_construction: usize,
    /// Candidates kept while searching (at least the candidates asked for): higher is slower
    /// and finds more.
    pub ef_search: usize,
}

impl Default for AnnConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_vectors: DEFAULT_ANN_MIN_VECTORS,
            m: 16,
            ef_construction: 100,
            // Recall@10 0.996 and @100 0.98 at 100k hash-embedder memories (300: 0.992 and
            // 0.967, and recall falls as users grow).
            ef_search: 400,
        }
    }
}

impl AnnConfig {
    /// Never approximate.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Does any user ever get the approximate index?
    pub fn active(&self) -> bool {
        self.enabled && self.min_vectors > 0
    }

    pub fn validate(&self) -> Result<()> {
        if !(2..=128).contains(&self.m) {
            return Err(Error::invalid("retrieval.ann.m must be between 2 and 128"));
        }
        if !(self.m..=5_000).contains(&self.ef_construction) {
            return Err(Error::invalid(
                "retrieval.ann.ef_construction must be between m and 5000",
            ));
        }
        if !(1..=100_000).contains(&self.ef_search) {
            return Err(Error::invalid(
                "retrieval.ann.ef_search must be between 1 and 100000",
            ));
        }
        Ok(())
    }

    fn shape(&self) -> Shape {
        Shape {
            m: self.m,
            ef_construction: self.ef_construction,
        }
    }
}

/// Where a user's approximate index stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnPhase {
    /// Turned off (or the index keeps int8 vectors, which it does not cover).
    Off,
    /// Fewer vectors than `min_vectors`, or not searched since it got them: exact.
    Exact,
    /// Being built; searches are exact until it is installed.
    Building,
    /// Installed: searches walk the graph.
    Ready,
}

/// [`AnnPhase`] with the graph's size and how long its build took.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AnnStatus {
    pub phase: AnnPhase,
    /// Nodes in the graph (one per vector, windows included; dead ones too).
    pub nodes: usize,
    /// Seconds from the build's start (rows copied) to its installation.
    pub build_seconds: Option<f64>,
    /// Searches the graph answered (not those that fell back to the exact scan).
    pub searches: u64,
}

/// One build at a time per process: a build keeps a core busy for seconds, and many users
/// crossing the threshold together must not take every core from the searches.
static BUILD_TURN: Mutex<()> = Mutex::new(());

/// Rows the builder adds outside the lock before it installs; the rest it adds under it.
const CATCH_UP_UNLOCKED: usize = 64;

/// Which slot each node holds and whether it is still that slot's vector.
#[derive(Default)]
struct NodeLog {
    owner: Vec<u32>,
    live: Vec<bool>,
    of_slot: HashMap<u32, Vec<u32>>,
    dead: usize,
}

impl NodeLog {
    fn from_owners(owner: Vec<u32>) -> Self {
        let mut of_slot: HashMap<u32, Vec<u32>> = HashMap::new();
        for (node, &slot) in owner.iter().enumerate() {
            of_slot.entry(slot).or_default().push(node as u32);
        }
        Self {
            live: vec![true; owner.len()],
            owner,
            of_slot,
            dead: 0,
        }
    }

    fn push(&mut self, slot: u32) {
        let node = self.owner.len() as u32;
        self.owner.push(slot);
        self.live.push(true);
        self.of_slot.entry(slot).or_default().push(node);
    }

    fn retire(&mut self, slot: u32) {
        for node in self.of_slot.remove(&slot).unwrap_or_default() {
            if let Some(live) = self.live.get_mut(node as usize) {
                *live = false;
                self.dead += 1;
            }
        }
    }

    fn takes(&self, node: u32) -> Option<u32> {
        let n = node as usize;
        self.live
            .get(n)
            .copied()
            .unwrap_or(false)
            .then(|| self.owner.get(n).copied())
            .flatten()
    }
}

#[derive(Default)]
struct Shared {
    graph: Option<Graph>,
    building: bool,
    /// Bumped whenever the graph is dropped: a build started before belongs to nothing.
    generation: u64,
    log: NodeLog,
    /// Vectors of the nodes logged while building, from node `tail_from` on.
    tail: Vec<f32>,
    tail_from: usize,
    build_seconds: Option<f64>,
}

impl Shared {
    /// Are writes logged (a graph is installed or being built)?
    fn tracking(&self) -> bool {
        self.graph.is_some() || self.building
    }

    fn reset(&mut self) {
        *self = Self {
            generation: self.generation + 1,
            ..Self::default()
        };
    }
}

/// The approximate index beside a [`DenseIndex`](super::DenseIndex).
pub(crate) struct AnnIndex {
    config: AnnConfig,
    dim: usize,
    shared: Arc<RwLock<Shared>>,
    searches: AtomicU64,
}

impl Clone for AnnIndex {
    /// A clone starts without a graph: sharing one would let two indexes write into it.
    fn clone(&self) -> Self {
        Self::new(self.config, self.dim)
    }
}

impl AnnIndex {
    pub(crate) fn new(config: AnnConfig, dim: usize) -> Self {
        Self {
            config,
            dim,
            shared: Arc::default(),
            searches: AtomicU64::new(0),
        }
    }

    /// Should a search over `vectors` slots start a build now?
    pub(crate) fn wants_build(&self, vectors: usize) -> bool {
        if !self.config.active() || vectors < self.config.min_vectors {
            return false;
        }
        let shared = self.shared.read();
        if shared.graph.is_some() && shared.log.dead > shared.log.owner.len() / 2 {
            drop(shared);
            self.shared.write().reset();
            return true;
        }
        !shared.tracking()
    }

    /// Claim the build, so that of searches arriving together only one copies the rows;
    /// `false` when a graph is built or being built already.
    pub(crate) fn claim_build(&self) -> bool {
        let mut shared = self.shared.write();
        if shared.tracking() {
            return false;
        }
        shared.building = true;
        true
    }

    /// Build a graph over `vectors` (one row per node, `owner[i]` the slot of row `i`) on a
    /// background thread and install it when done; after [`claim_build`](Self::claim_build),
    /// with no write between the two. Searches stay exact meanwhile.
    pub(crate) fn start_build(&self, owner: Vec<u32>, vectors: Vec<f32>) {
        let generation = {
            let mut shared = self.shared.write();
            shared.tail_from = owner.len();
            shared.log = NodeLog::from_owners(owner);
            shared.tail = Vec::new();
            shared.building = true;
            shared.generation
        };
        let job = BuildJob {
            shared: Arc::downgrade(&self.shared),
            generation,
            dim: self.dim,
            shape: self.config.shape(),
            started: Instant::now(),
        };
        let spawned = std::thread::Builder::new()
            .name("mnemos-ann-build".into())
            .spawn(move || job.run(vectors));
        if spawned.is_err() {
            // No thread to build on: stay exact, and try again on a later search.
            self.shared.write().reset();
        }
    }

    /// Record that `slot` now holds `vectors` (one or more rows of the index's dimension).
    pub(crate) fn inserted(&self, slot: u32, vectors: &[f32]) {
        if !self.config.active() {
            return;
        }
        let mut guard = self.shared.write();
        let shared = &mut *guard;
        if !shared.tracking() {
            return;
        }
        shared.log.retire(slot);
        for row in vectors.chunks_exact(self.dim) {
            shared.log.push(slot);
            match shared.graph.as_mut() {
                Some(graph) => {
                    graph.insert(row);
                }
                None => shared.tail.extend_from_slice(row),
            }
        }
    }

    /// Record that `slot` holds no vector any more.
    pub(crate) fn removed(&self, slot: u32) {
        if !self.config.active() {
            return;
        }
        let mut shared = self.shared.write();
        if shared.tracking() {
            shared.log.retire(slot);
        }
    }

    /// The slots nearest to `query` that `accept` takes, each once at its best node's
    /// similarity, best first, from a search keeping `max(ef_search, wanted)` nodes. `None`:
    /// no graph is installed, or the filter rejects so much that an exact scan is cheaper.
    pub(crate) fn search(
        &self,
        query: &[f32],
        wanted: usize,
        accept: &dyn Fn(u32) -> bool,
    ) -> Option<Vec<(u32, f32)>> {
        let shared = self.shared.read();
        let graph = shared.graph.as_ref()?;
        let log = &shared.log;
        let take = |node: u32| log.takes(node).is_some_and(accept);
        let ef = self.config.ef_search.max(wanted);
        // Past a quarter of the graph's nodes, the walk (random reads, a heap) costs about what
        // the scan does; an unfiltered walk evaluates about ef × 2m nodes, so small graphs get
        // that much.
        let budget = Budget {
            max_evaluations: (graph.len() / 4).max(4 * ef * self.config.m),
        };
        let found = graph.search(query, ef, &take, &budget)?;
        self.searches.fetch_add(1, Ordering::Relaxed);
        let mut seen = HashSet::with_capacity(found.len());
        Some(
            found
                .into_iter()
                .filter_map(|near| {
                    let slot = log.takes(near.node)?;
                    seen.insert(slot).then_some((slot, near.sim))
                })
                .collect(),
        )
    }

    pub(crate) fn status(&self, exact_only: bool) -> AnnStatus {
        let shared = self.shared.read();
        let phase = if exact_only || !self.config.active() {
            AnnPhase::Off
        } else if shared.graph.is_some() {
            AnnPhase::Ready
        } else if shared.building {
            AnnPhase::Building
        } else {
            AnnPhase::Exact
        };
        AnnStatus {
            phase,
            nodes: shared.graph.as_ref().map_or(0, Graph::len),
            build_seconds: shared.build_seconds,
            searches: self.searches.load(Ordering::Relaxed),
        }
    }
}

/// A build handed to a background thread.
struct BuildJob {
    shared: Weak<RwLock<Shared>>,
    generation: u64,
    dim: usize,
    shape: Shape,
    started: Instant,
}

impl BuildJob {
    fn run(self, vectors: Vec<f32>) {
        let _turn = BUILD_TURN.lock();
        let mut graph = Graph::new(self.dim, self.shape);
        for (i, row) in vectors.chunks_exact(self.dim).enumerate() {
            // The index was dropped (a rebuild, a purge): stop building for nothing.
            if i % 1024 == 0 && self.shared.strong_count() == 0 {
                return;
            }
            graph.insert(row);
        }
        drop(vectors);
        self.catch_up_and_install(graph);
    }

    /// Add the rows written during the build (most of them without holding the lock, so
    /// searches go on), then install the graph.
    fn catch_up_and_install(self, mut graph: Graph) {
        loop {
            let Some(shared) = self.shared.upgrade() else {
                return;
            };
            let pending = {
                let s = shared.read();
                if s.generation != self.generation {
                    return;
                }
                self.pending(&s, graph.len()).to_vec()
            };
            if pending.len() / self.dim.max(1) <= CATCH_UP_UNLOCKED {
                let mut s = shared.write();
                if s.generation != self.generation {
                    return;
                }
                let rest = self.pending(&s, graph.len()).to_vec();
                for row in rest.chunks_exact(self.dim) {
                    graph.insert(row);
                }
                s.graph = Some(graph);
                s.building = false;
                s.tail = Vec::new();
                s.build_seconds = Some(self.started.elapsed().as_secs_f64());
                return;
            }
            for row in pending.chunks_exact(self.dim) {
                graph.insert(row);
            }
        }
    }

    /// The logged rows the graph (of `built` nodes) does not hold yet.
    fn pending<'s>(&self, shared: &'s Shared, built: usize) -> &'s [f32] {
        let from = built.saturating_sub(shared.tail_from) * self.dim;
        shared.tail.get(from..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::retrieval::{DenseIndex, Quantization};
    use std::time::Duration;

    fn random_unit(seed: &mut u64, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((*seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn config(min_vectors: usize) -> AnnConfig {
        AnnConfig {
            min_vectors,
            ef_search: 64,
            ..AnnConfig::default()
        }
    }

    fn wait_ready(index: &DenseIndex) {
        for _ in 0..6000 {
            if index.ann_status().phase == AnnPhase::Ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the approximate index was not built within a minute");
    }

    fn top(mut found: Vec<(u32, f32)>, k: usize) -> Vec<(u32, f32)> {
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(k);
        found
    }

    fn filled(n: usize, dim: usize, seed: &mut u64, min_vectors: usize) -> DenseIndex {
        let mut index = DenseIndex::new(dim, Quantization::F32).with_ann(config(min_vectors));
        for slot in 0..n as u32 {
            assert!(index.insert(slot, &random_unit(seed, dim)));
        }
        index
    }

    #[test]
    fn exact_until_built_then_approximate_with_exact_scores_and_high_recall() {
        let (dim, mut seed) = (32, 11);
        let index = filled(3000, dim, &mut seed, 1000);
        assert_eq!(index.ann_status().phase, AnnPhase::Exact);
        let q = random_unit(&mut seed, dim);
        // The first search starts the build and is answered exactly.
        assert_eq!(index.nearest(&q, &|_| true, 10).len(), 3000);
        wait_ready(&index);
        assert_eq!(index.ann_status().nodes, 3000);
        assert!(index.ann_status().build_seconds.is_some());
        let (mut found, mut wanted) = (0, 0);
        for _ in 0..100 {
            let q = random_unit(&mut seed, dim);
            let exact = top(index.score(&q, &|_| true), 10);
            let approx = index.nearest(&q, &|_| true, 10);
            assert!(approx.len() < 3000, "not approximate");
            let approx = top(approx, 10);
            found += approx.iter().filter(|a| exact.contains(a)).count();
            wanted += exact.len();
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.99, "recall@10 {recall}");
    }

    #[test]
    fn removed_replaced_and_filtered_slots_never_come_back() {
        let (dim, mut seed) = (16, 5);
        let mut index = filled(1500, dim, &mut seed, 1000);
        assert!(index.start_ann_build());
        wait_ready(&index);
        let probe = random_unit(&mut seed, dim);
        assert!(index.insert(7, &probe));
        let hits = top(index.nearest(&probe, &|_| true, 10), 1);
        assert_eq!(hits[0].0, 7);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        // Replaced: the old vector no longer answers for the slot.
        assert!(index.insert(7, &random_unit(&mut seed, dim)));
        let hits = top(index.nearest(&probe, &|_| true, 10), 1);
        assert!(hits[0].1 < 0.99, "{hits:?}");
        index.remove(7);
        let odd = |s: u32| s % 2 == 1;
        for _ in 0..20 {
            let q = random_unit(&mut seed, dim);
            let hits = index.nearest(&q, &odd, 10);
            assert!(!hits.is_empty());
            assert!(hits.iter().all(|h| h.0 % 2 == 1 && h.0 != 7));
            let exact = top(index.score(&q, &odd), 1);
            assert_eq!(top(hits, 1), exact);
        }
        // A filter that takes almost nothing falls back to the exact scan.
        let hits = index.nearest(&probe, &|s| s == 3, 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 3);
    }

    #[test]
    fn a_slot_scores_as_its_best_window() {
        let (dim, mut seed) = (16, 9);
        let mut index = filled(1200, dim, &mut seed, 1000);
        let (a, b) = (random_unit(&mut seed, dim), random_unit(&mut seed, dim));
        assert!(index.insert(5000, &[a.clone(), b.clone()].concat()));
        assert!(index.start_ann_build());
        wait_ready(&index);
        for q in [&a, &b] {
            let hits = top(index.nearest(q, &|_| true, 10), 1);
            assert_eq!(hits[0].0, 5000);
            assert!((hits[0].1 - 1.0).abs() < 1e-5);
        }
        // Each slot appears once, at its best window's cosine.
        let hits = index.nearest(&a, &|_| true, 50);
        assert_eq!(hits.iter().filter(|h| h.0 == 5000).count(), 1);
    }

    #[test]
    fn rows_written_during_the_build_are_in_the_installed_graph() {
        let (dim, mut seed) = (16, 21);
        let mut index = filled(1100, dim, &mut seed, 1000);
        assert!(index.start_ann_build());
        assert!(!index.start_ann_build(), "one build at a time");
        let late: Vec<Vec<f32>> = (0..200).map(|_| random_unit(&mut seed, dim)).collect();
        for (i, v) in late.iter().enumerate() {
            assert!(index.insert(2000 + i as u32, v));
        }
        wait_ready(&index);
        assert_eq!(index.ann_status().nodes, 1300);
        for (i, v) in late.iter().enumerate() {
            let hits = top(index.nearest(v, &|_| true, 10), 1);
            assert_eq!(hits[0].0, 2000 + i as u32);
        }
        // A clone starts exact and builds its own.
        let copy = index.clone();
        assert_eq!(copy.ann_status().phase, AnnPhase::Exact);
    }

    #[test]
    fn int8_and_small_or_disabled_indexes_stay_exact() {
        let mut seed = 2;
        let mut int8 = DenseIndex::new(8, Quantization::Int8).with_ann(config(1));
        assert!(int8.insert(0, &random_unit(&mut seed, 8)));
        assert!(!int8.start_ann_build());
        assert_eq!(int8.ann_status().phase, AnnPhase::Off);
        let small = filled(10, 8, &mut seed, 1000);
        assert!(!small.start_ann_build());
        let mut off = DenseIndex::new(8, Quantization::F32).with_ann(AnnConfig::off());
        assert!(off.insert(0, &random_unit(&mut seed, 8)));
        assert!(!off.start_ann_build());
        assert_eq!(off.ann_status().phase, AnnPhase::Off);
    }

    #[test]
    fn config_validation() {
        assert!(AnnConfig::default().validate().is_ok());
        assert!(AnnConfig::default().active());
        assert!(!AnnConfig::off().active());
        let zero = AnnConfig {
            min_vectors: 0,
            ..AnnConfig::default()
        };
        assert!(!zero.active());
        for bad in [
            AnnConfig {
                m: 1,
                ..AnnConfig::default()
            },
            AnnConfig {
                ef_construction: 8,
                ..AnnConfig::default()
            },
            AnnConfig {
                ef_search: 0,
                ..AnnConfig::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn node_log_retires_a_slot_s_rows() {
        let mut log = NodeLog::from_owners(vec![0, 1, 1]);
        log.push(2);
        log.retire(1);
        assert_eq!(log.takes(0), Some(0));
        assert_eq!(log.takes(1), None);
        assert_eq!(log.takes(2), None);
        assert_eq!(log.takes(3), Some(2));
        assert_eq!(log.takes(9), None);
        assert_eq!(log.dead, 2);
    }
}
