//! Self-reflective retrieval over the memory chains (M⁴ Algorithm 1).
//!
//! 1. The query's categories: the chains of the best-matching current nodes (search over the
//!    nodes), at most `query_categories` of them, best first.
//! 2. For each, the root is that chain's best-matching node.
//! 3. From the root the chain grows one node at a time, forward and backward in turn; a step
//!    adopts the next node when the memory model says it helps answer the query, else that
//!    direction stops. After each adoption the model is asked whether the retrieved nodes are
//!    sufficient; if so, retrieval stops.
//! 4. When every query chain is spent and the nodes are not sufficient, retrieval hops through
//!    the shared nodes it holds into their other chains and grows there the same way.
//!
//! Model calls and tokens are bounded by `max_steps` and the budget. Each retrieved node
//! records why it is there ([`Step`]).

use std::collections::{BTreeSet, HashMap};

use mnemos_core::{MemoryId, MemoryModelExt};

use super::chains::Chains;
use mnemos_engine::mechanism::MechanismCtx;
use mnemos_engine::primitives::tokens;
use mnemos_engine::EngineResult;

/// Why a node is in the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The chain's best match for the query.
    Root,
    /// Adopted going forward in time from the root, `n` nodes away.
    Forward(usize),
    /// Adopted going backward in time from the root, `n` nodes away.
    Backward(usize),
    /// Reached through a node shared with another chain.
    Hop,
    /// Taken for its match with the query alone, without walking a chain (the ablations
    /// `chains = false` and `self_reflection = false`).
    Match,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Root => "root",
            Step::Forward(_) => "forward",
            Step::Backward(_) => "backward",
            Step::Hop => "hop",
            Step::Match => "match",
        }
    }

    /// Distance from the root (0 for the root and a hop's entry).
    pub fn distance(self) -> usize {
        match self {
            Step::Forward(n) | Step::Backward(n) => n,
            Step::Root | Step::Hop | Step::Match => 0,
        }
    }
}

/// One retrieved node: its index in the chains, the chain it was reached in and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Retrieved {
    pub node: usize,
    pub category: String,
    pub step: Step,
    /// The search score of the node for the query (0 when it was not among the hits).
    pub score: f64,
}

/// The limits of one retrieval.
pub struct Limits {
    pub query_categories: usize,
    /// Model calls (helps + sufficient) at most.
    pub max_steps: usize,
    /// Tokens of node text at most.
    pub tokens: usize,
    /// Grow chains with the model's judgement (false: take every node of the query's chains,
    /// best match first, as M⁴'s "w/o self-reflection").
    pub reflect: bool,
}

/// The outcome: nodes in the order they were retrieved, and whether the model found them
/// sufficient.
#[derive(Debug, Default)]
pub struct Retrieval {
    pub nodes: Vec<Retrieved>,
    pub sufficient: bool,
    pub model_calls: usize,
}

struct Walk<'a> {
    ctx: &'a MechanismCtx<'a>,
    chains: &'a Chains,
    query: &'a str,
    scores: &'a HashMap<MemoryId, f64>,
    limits: &'a Limits,
    out: Retrieval,
    taken: BTreeSet<usize>,
    spent_tokens: usize,
}

/// Run the retrieval for `query` over `chains`, given the search scores of its nodes.
pub fn retrieve(
    ctx: &MechanismCtx,
    chains: &Chains,
    query: &str,
    ranked: &[(usize, f64)],
    limits: &Limits,
) -> EngineResult<Retrieval> {
    let scores: HashMap<MemoryId, f64> = ranked
        .iter()
        .map(|&(i, s)| (chains.nodes[i].id, s))
        .collect();
    let mut walk = Walk {
        ctx,
        chains,
        query,
        scores: &scores,
        limits,
        out: Retrieval::default(),
        taken: BTreeSet::new(),
        spent_tokens: 0,
    };
    let categories = query_categories(chains, ranked, limits.query_categories);
    for category in &categories {
        let Some(root) = best_in(chains, ranked, category) else {
            continue;
        };
        let first = if limits.reflect {
            Step::Root
        } else {
            Step::Match
        };
        if !walk.take(root, category, first) {
            break;
        }
        if limits.reflect {
            if walk.grow(category, root)? {
                return Ok(walk.out);
            }
        } else {
            walk.take_all(category, ranked);
        }
    }
    if limits.reflect {
        walk.hop(&categories)?;
    }
    Ok(walk.out)
}

/// The chains of the best-ranked nodes, best first, at most `n`.
fn query_categories(chains: &Chains, ranked: &[(usize, f64)], n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for &(i, _) in ranked {
        for category in super::chains::categories_of(&chains.nodes[i]) {
            if out.len() >= n {
                return out;
            }
            if !out.contains(&category) {
                out.push(category);
            }
        }
    }
    out
}

/// The best-ranked node of `category`'s chain.
fn best_in(chains: &Chains, ranked: &[(usize, f64)], category: &str) -> Option<usize> {
    let chain = chains.by_category.get(category)?;
    ranked.iter().map(|&(i, _)| i).find(|i| chain.contains(i))
}

impl Walk<'_> {
    /// Add a node if the token limit allows; false when it does not (retrieval is full).
    fn take(&mut self, node: usize, category: &str, step: Step) -> bool {
        if self.taken.contains(&node) {
            return true;
        }
        let cost = tokens(&self.chains.nodes[node].text);
        if self.spent_tokens + cost > self.limits.tokens && !self.out.nodes.is_empty() {
            return false;
        }
        self.spent_tokens += cost;
        self.taken.insert(node);
        let score = self
            .scores
            .get(&self.chains.nodes[node].id)
            .copied()
            .unwrap_or(0.0);
        self.out.nodes.push(Retrieved {
            node,
            category: category.to_string(),
            step,
            score,
        });
        true
    }

    fn texts(&self) -> Vec<String> {
        self.out
            .nodes
            .iter()
            .map(|r| self.chains.nodes[r.node].text.clone())
            .collect()
    }

    fn calls_left(&self) -> bool {
        self.out.model_calls < self.limits.max_steps
    }

    /// Grow `category`'s chain from `root`, forward and backward in turn. True when the nodes
    /// became sufficient (retrieval ends).
    fn grow(&mut self, category: &str, root: usize) -> EngineResult<bool> {
        let Some(chain) = self.chains.by_category.get(category) else {
            return Ok(false);
        };
        let Some(at) = chain.iter().position(|&i| i == root) else {
            return Ok(false);
        };
        let (mut forward, mut backward) = (Some(1usize), Some(1usize));
        while forward.is_some() || backward.is_some() {
            for direction in [true, false] {
                let distance = if direction {
                    &mut forward
                } else {
                    &mut backward
                };
                let Some(d) = *distance else { continue };
                let next = if direction {
                    chain.get(at + d).copied()
                } else {
                    at.checked_sub(d).and_then(|p| chain.get(p).copied())
                };
                let Some(node) = next else {
                    *distance = None;
                    continue;
                };
                if !self.calls_left() {
                    return Ok(false);
                }
                self.out.model_calls += 1;
                let candidate = self.chains.nodes[node].text.clone();
                let helps = self
                    .ctx
                    .model
                    .helps(self.query, &self.texts(), &candidate)?;
                let step = if direction {
                    Step::Forward(d)
                } else {
                    Step::Backward(d)
                };
                if !helps || !self.take(node, category, step) {
                    *distance = None;
                    continue;
                }
                *distance = Some(d + 1);
                if self.is_sufficient()? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn is_sufficient(&mut self) -> EngineResult<bool> {
        if !self.calls_left() {
            return Ok(false);
        }
        self.out.model_calls += 1;
        let sufficient = self.ctx.model.sufficient(self.query, &self.texts())?;
        self.out.sufficient = sufficient;
        Ok(sufficient)
    }

    /// Without self-reflection: every node of the chain, best-ranked first, then the rest in
    /// chain order, while tokens last.
    fn take_all(&mut self, category: &str, ranked: &[(usize, f64)]) {
        let Some(chain) = self.chains.by_category.get(category) else {
            return;
        };
        let mut order: Vec<usize> = ranked
            .iter()
            .map(|&(i, _)| i)
            .filter(|i| chain.contains(i))
            .collect();
        let rest: Vec<usize> = chain
            .iter()
            .copied()
            .filter(|i| !order.contains(i))
            .collect();
        order.extend(rest);
        for node in order {
            if !self.take(node, category, Step::Match) {
                return;
            }
        }
    }

    /// Hop through retrieved nodes shared with chains not visited yet, and grow there.
    fn hop(&mut self, visited: &[String]) -> EngineResult<()> {
        let mut seen: BTreeSet<String> = visited.iter().cloned().collect();
        let mut i = 0;
        while i < self.out.nodes.len() && !self.out.sufficient {
            let node = self.out.nodes[i].node;
            i += 1;
            for category in super::chains::categories_of(&self.chains.nodes[node]) {
                if !seen.insert(category.clone()) {
                    continue;
                }
                // The shared node is already held; the hop opens its other chain.
                if self.grow_hop(&category, node)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Grow `category` from a shared node; adopted nodes are recorded as hops.
    fn grow_hop(&mut self, category: &str, shared: usize) -> EngineResult<bool> {
        let before = self.out.nodes.len();
        let done = self.grow(category, shared)?;
        for r in &mut self.out.nodes[before..] {
            r.step = Step::Hop;
        }
        Ok(done)
    }
}
