//! A hierarchical navigable small-world graph (Malkov & Yashunin) over unit vectors, scored by
//! dot product (= cosine), for [`super::ann`].
//!
//! Written here rather than taken from a crate because the index needs three things together:
//! a search filtered by an arbitrary predicate while it walks (removed slots, agent, session,
//! kinds, validity), insertion one vector at a time after the build, and a graph that is the same
//! for the same input (a seeded level generator, one thread), so a rebuilt cache answers as
//! before. It needs no `unsafe` and adds nothing to the build.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::simd::dot_one as dot;

/// Levels above this are never drawn (2^-16 of nodes at M = 2 would reach it).
const MAX_LEVEL: usize = 16;

/// A node and its similarity to the query, ordered by similarity, then by node (so heaps and
/// sorts are deterministic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Near {
    pub(crate) sim: f32,
    pub(crate) node: u32,
}

impl Eq for Near {}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.sim
            .total_cmp(&other.sim)
            .then_with(|| other.node.cmp(&self.node))
    }
}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Nodes seen by one walk: a stamp per node, so the builder's walks reuse one buffer.
#[derive(Default)]
struct Visited {
    stamp: u32,
    marks: Vec<u32>,
}

impl Visited {
    fn start(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
    }

    /// Mark `node`; false when it was already marked in this walk.
    fn first_visit(&mut self, node: u32) -> bool {
        match self.marks.get_mut(node as usize) {
            Some(mark) if *mark != self.stamp => {
                *mark = self.stamp;
                true
            }
            _ => false,
        }
    }
}

/// What one filtered walk of layer 0 may spend before it gives up (the caller then scans
/// exactly): a filter that rejects most nodes makes the walk visit most of the graph.
pub(crate) struct Budget {
    pub(crate) max_evaluations: usize,
}

/// The graph's parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Links per node on the upper layers (twice as many on layer 0).
    pub(crate) m: usize,
    /// Candidates kept while linking a new node.
    pub(crate) ef_construction: usize,
}

pub(crate) struct Graph {
    dim: usize,
    shape: Shape,
    /// Node-indexed, contiguous.
    vectors: Vec<f32>,
    /// `links[node][layer]`: the node's neighbours on each layer it lives on.
    links: Vec<Vec<Vec<u32>>>,
    entry: u32,
    top: usize,
    /// The level generator's state (splitmix64).
    seed: u64,
    visited: Visited,
}

impl Graph {
    pub(crate) fn new(dim: usize, shape: Shape) -> Self {
        Self {
            dim,
            shape,
            vectors: Vec::new(),
            links: Vec::new(),
            entry: 0,
            top: 0,
            seed: 0x9E37_79B9_7F4A_7C15,
            visited: Visited::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.links.len()
    }

    fn vector(&self, node: u32) -> &[f32] {
        let start = node as usize * self.dim;
        self.vectors.get(start..start + self.dim).unwrap_or(&[])
    }

    fn near(&self, query: &[f32], node: u32) -> Near {
        Near {
            sim: dot(query, self.vector(node)),
            node,
        }
    }

    fn neighbours(&self, node: u32, layer: usize) -> &[u32] {
        self.links
            .get(node as usize)
            .and_then(|layers| layers.get(layer))
            .map_or(&[], Vec::as_slice)
    }

    fn max_links(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.shape.m
        } else {
            self.shape.m
        }
    }

    /// A level drawn with P(level ≥ l) = m^-l.
    fn draw_level(&mut self) -> usize {
        self.seed = self.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // In (0, 1]: never ln(0).
        let uniform = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let level = -uniform.ln() / (self.shape.m.max(2) as f64).ln();
        (level as usize).min(MAX_LEVEL)
    }

    /// Add a unit vector of the graph's dimension as the next node; its id.
    pub(crate) fn insert(&mut self, vector: &[f32]) -> u32 {
        let node = self.len() as u32;
        self.vectors
            .extend_from_slice(&vector[..self.dim.min(vector.len())]);
        self.vectors.resize((node as usize + 1) * self.dim, 0.0);
        let level = self.draw_level();
        self.links.push(vec![Vec::new(); level + 1]);
        if node == 0 {
            self.top = level;
            return node;
        }
        let query = self.vector(node).to_vec();
        let mut entry = self.near(&query, self.entry);
        for layer in (level + 1..=self.top).rev() {
            entry = self.greedy(&query, entry, layer);
        }
        let mut entries = vec![entry];
        for layer in (0..=level.min(self.top)).rev() {
            let found = self.walk_building(&query, &entries, layer);
            let chosen = self.diverse(&found, self.shape.m);
            for near in &chosen {
                self.link(near.node, node, near.sim, layer);
            }
            if let Some(own) = self
                .links
                .get_mut(node as usize)
                .and_then(|l| l.get_mut(layer))
            {
                *own = chosen.iter().map(|n| n.node).collect();
            }
            entries = found;
        }
        if level > self.top {
            self.top = level;
            self.entry = node;
        }
        node
    }

    /// Hill-climb one upper layer towards `query`.
    fn greedy(&self, query: &[f32], mut best: Near, layer: usize) -> Near {
        loop {
            let mut moved = false;
            for &n in self.neighbours(best.node, layer) {
                let near = self.near(query, n);
                if near > best {
                    best = near;
                    moved = true;
                }
            }
            if !moved {
                return best;
            }
        }
    }

    /// The `ef_construction` nodes nearest to `query` on `layer` (best first), for linking.
    fn walk_building(&mut self, query: &[f32], entries: &[Near], layer: usize) -> Vec<Near> {
        let mut visited = std::mem::take(&mut self.visited);
        visited.start(self.len());
        let budget = Budget {
            max_evaluations: usize::MAX,
        };
        let found = self.walk(
            query,
            entries,
            self.shape.ef_construction,
            layer,
            &|_| true,
            &budget,
            &mut visited,
        );
        self.visited = visited;
        found.unwrap_or_default()
    }

    /// Best-first search of one layer from `entries`, keeping the `ef` best nodes `accept`
    /// takes; rejected nodes are still walked through, so a filter does not cut the graph.
    /// `None` when the walk spent its budget.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        query: &[f32],
        entries: &[Near],
        ef: usize,
        layer: usize,
        accept: &dyn Fn(u32) -> bool,
        budget: &Budget,
        visited: &mut Visited,
    ) -> Option<Vec<Near>> {
        let mut frontier: BinaryHeap<Near> = BinaryHeap::new();
        let mut kept: BinaryHeap<std::cmp::Reverse<Near>> = BinaryHeap::new();
        for &e in entries {
            if visited.first_visit(e.node) {
                frontier.push(e);
                if accept(e.node) {
                    kept.push(std::cmp::Reverse(e));
                }
            }
        }
        let mut evaluations = 0usize;
        while let Some(current) = frontier.pop() {
            let worst = kept.peek().map(|r| r.0.sim);
            if kept.len() >= ef && worst.is_some_and(|w| current.sim < w) {
                break;
            }
            for &n in self.neighbours(current.node, layer) {
                if !visited.first_visit(n) {
                    continue;
                }
                evaluations += 1;
                let near = self.near(query, n);
                let worst = kept.peek().map(|r| r.0.sim);
                if kept.len() < ef || worst.is_some_and(|w| near.sim > w) {
                    frontier.push(near);
                    if accept(n) {
                        kept.push(std::cmp::Reverse(near));
                        if kept.len() > ef {
                            kept.pop();
                        }
                    }
                }
            }
            if evaluations > budget.max_evaluations {
                return None;
            }
        }
        let mut out: Vec<Near> = kept.into_iter().map(|r| r.0).collect();
        out.sort_by(|a, b| b.cmp(a));
        Some(out)
    }

    /// Up to `m` of `found` (best first) that are nearer to the new node than to any already
    /// chosen (the paper's heuristic): links that reach out in different directions keep the
    /// graph navigable between clusters. Rejected ones fill up what is left, best first.
    fn diverse(&self, found: &[Near], m: usize) -> Vec<Near> {
        let mut chosen: Vec<Near> = Vec::with_capacity(m);
        let mut rejected: Vec<Near> = Vec::new();
        for &candidate in found {
            if chosen.len() >= m {
                break;
            }
            let own = self.vector(candidate.node);
            let crowded = chosen
                .iter()
                .any(|c| dot(own, self.vector(c.node)) > candidate.sim);
            if crowded {
                rejected.push(candidate);
            } else {
                chosen.push(candidate);
            }
        }
        for candidate in rejected {
            if chosen.len() >= m {
                break;
            }
            chosen.push(candidate);
        }
        chosen
    }

    /// Add `node` (at similarity `sim`) to `to`'s neighbours on `layer`; when that overflows,
    /// keep `to`'s nearest (cheaper than the heuristic on every overflow, and on layer 0 with
    /// twice the links it costs no measurable recall).
    fn link(&mut self, to: u32, node: u32, sim: f32, layer: usize) {
        let max = self.max_links(layer);
        let current: Vec<u32> = self.neighbours(to, layer).to_vec();
        let updated = if current.len() < max {
            let mut list = current;
            list.push(node);
            list
        } else {
            let own = self.vector(to).to_vec();
            let mut scored: Vec<Near> = current.iter().map(|&n| self.near(&own, n)).collect();
            scored.push(Near { sim, node });
            scored.sort_by(|a, b| b.cmp(a));
            scored.truncate(max);
            scored.into_iter().map(|n| n.node).collect()
        };
        if let Some(list) = self
            .links
            .get_mut(to as usize)
            .and_then(|l| l.get_mut(layer))
        {
            *list = updated;
        }
    }

    /// The `ef` nodes nearest to `query` that `accept` takes, best first; `None` when the walk
    /// of layer 0 would cost more than `budget` (the caller scans exactly instead).
    pub(crate) fn search(
        &self,
        query: &[f32],
        ef: usize,
        accept: &dyn Fn(u32) -> bool,
        budget: &Budget,
    ) -> Option<Vec<Near>> {
        if self.len() == 0 || query.len() != self.dim {
            return Some(Vec::new());
        }
        let mut entry = self.near(query, self.entry);
        for layer in (1..=self.top).rev() {
            entry = self.greedy(query, entry, layer);
        }
        let mut visited = Visited::default();
        visited.start(self.len());
        self.walk(query, &[entry], ef, 0, accept, budget, &mut visited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn random_unit(seed: &mut u64, dim: usize) -> Vec<f32> {
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

    #[test]
    fn finds_the_exact_nearest_on_random_vectors() {
        let dim = 32;
        let mut seed = 1;
        let data: Vec<Vec<f32>> = (0..2000).map(|_| random_unit(&mut seed, dim)).collect();
        let mut graph = Graph::new(
            dim,
            Shape {
                m: 16,
                ef_construction: 100,
            },
        );
        for v in &data {
            graph.insert(v);
        }
        let budget = Budget {
            max_evaluations: usize::MAX,
        };
        let mut found = 0;
        for _ in 0..50 {
            let q = random_unit(&mut seed, dim);
            let mut exact: Vec<Near> = (0..data.len() as u32).map(|n| graph.near(&q, n)).collect();
            exact.sort_by(|a, b| b.cmp(a));
            let got = graph.search(&q, 64, &|_| true, &budget).unwrap_or_default();
            let got: Vec<u32> = got.iter().take(10).map(|n| n.node).collect();
            found += exact[..10].iter().filter(|n| got.contains(&n.node)).count();
        }
        assert!(
            found as f64 / 500.0 >= 0.99,
            "recall {}",
            found as f64 / 500.0
        );
    }

    #[test]
    fn the_same_input_builds_the_same_graph_and_a_filter_is_respected() {
        let dim = 8;
        let mut seed = 3;
        let data: Vec<Vec<f32>> = (0..300).map(|_| random_unit(&mut seed, dim)).collect();
        let shape = Shape {
            m: 4,
            ef_construction: 20,
        };
        let build = || {
            let mut g = Graph::new(dim, shape);
            data.iter().for_each(|v| {
                g.insert(v);
            });
            g
        };
        let (a, b) = (build(), build());
        assert_eq!(a.links, b.links);
        let budget = Budget {
            max_evaluations: usize::MAX,
        };
        let even = a
            .search(&data[7], 20, &|n| n % 2 == 0, &budget)
            .unwrap_or_default();
        assert_eq!(even.len(), 20);
        assert!(even.iter().all(|n| n.node % 2 == 0));
        let tight = Budget { max_evaluations: 3 };
        assert!(a.search(&data[7], 20, &|n| n == 299, &tight).is_none());
    }
}
