//! `m4`: M⁴ meta-memory (category chains, calibration, self-reflective retrieval).
//!
//! When a session closes, its turns not yet in any node are categorized by the memory model
//! (`categorize`: {category, summary} items). Each category is resolved against the user's
//! category registry — the categories of the current nodes — by the cosine of the labels'
//! embeddings: every registered category at or above `gamma` is the same category, so a new
//! item can join several chains (a shared node, where the chains form a graph); none → a new
//! chain. Each item becomes one `ChainNode` memory whose provenance is the turns it covers and
//! whose place in time is its session's last turn ([`chains`]).
//!
//! **Calibrate.** Each new node is checked against the closest current nodes of its chains
//! (`conflicts`, at most `calibrate_checks` of them). A conflict merges the two into one node
//! (`merge`: the newer statement with a record of the older one) carrying both provenances; the
//! stale node gets a `valid_to` and the id of the node that superseded it, and stays in the
//! store and its history. Nothing is overwritten.
//!
//! **Recall** is M⁴'s self-reflective retrieval ([`reflect`]): root at the best match of each
//! query chain, grow forward and backward while each next node helps, stop when the nodes are
//! sufficient, hop through shared nodes; every item says why it is there. The items are shown
//! chain by chain in time order. Superseded nodes are never recalled.
//!
//! Ablations are parameters: `chains = false` (the nodes as independent memories, best match
//! first), `calibrate = false`, `self_reflection = false` (every node of the query's chains).

mod chains;
mod compress;
mod reflect;
#[cfg(test)]
mod tests;
mod view;

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::{CategorySummary, MAX_TASK_BYTES};
use mnemos_core::{
    BatchUpdate, EmbedderExt, Job, KindTag, Memory, MemoryFilter, MemoryKind, MemoryModelExt,
    MemoryPatch, Metadata, Moment, RetrieverKind, StateFilter, StoreRead, TurnId, UserKey,
};

use super::retrieval::search;
use super::PresetParams;
use crate::error::{EngineError, EngineResult};
use crate::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use crate::primitives::{
    build_context, chunks_by_bytes, derived_memory, memory_line, pack_within_budget, tokens,
    union_provenance,
};
use crate::views::{View, ViewKind};

pub use chains::{
    categories_of, Chains, CALIBRATED_FROM_KEY, CATEGORIES_KEY, SESSION_KEY, SUPERSEDED_BY_KEY,
};
pub use compress::{COMPRESSIONS_KEY, COMPRESSION_FINAL_KEY, LAST_USED_KEY, ORIGINAL_TOKENS_KEY};
pub use reflect::Step;

pub const NAME: &str = "m4";
pub const SUMMARY: &str = "M⁴ (meta-memory): per-session {category, summary} nodes in category \
                           chains; new nodes calibrated against their chains; self-reflective \
                           retrieval along the chains";

const JOB_SESSION: &str = "m4_session";
const CHUNK_BYTES: usize = MAX_TASK_BYTES / 2;
/// Search hits looked at to choose the query's chains and roots.
const CANDIDATES: usize = 30;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct M4Params {
    /// Cosine of two category labels at which they are one category (the paper's γ).
    pub gamma: f32,
    /// Order nodes into chains and walk them (false: independent nodes, best match first).
    pub chains: bool,
    /// Check each new node against its chains and merge conflicts.
    pub calibrate: bool,
    /// Closest current nodes of its chains a new node is checked against.
    pub calibrate_checks: usize,
    /// Grow chains by the model's judgement (false: every node of the query's chains).
    pub self_reflection: bool,
    /// Chains the query is matched to.
    pub query_categories: usize,
    /// Model calls (helps, sufficient) one recall may make.
    pub max_steps: usize,
    /// Compress nodes left unused for `compress_after_days` of dialogue time.
    pub compress: bool,
    /// Days of dialogue time a node stays unused before each compression step (the paper: a week).
    pub compress_after_days: f64,
    /// Compression steps a node may take at most.
    pub max_compressions: u32,
}

impl Default for M4Params {
    fn default() -> Self {
        Self {
            gamma: 0.5,
            chains: true,
            calibrate: true,
            calibrate_checks: 3,
            self_reflection: true,
            query_categories: 2,
            max_steps: 8,
            compress: true,
            compress_after_days: 7.0,
            max_compressions: 2,
        }
    }
}

impl PresetParams for M4Params {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "gamma",
            "cosine of two category labels at which they are one category (0..=1; the paper's γ)",
        ),
        (
            "chains",
            "order nodes into category chains and walk them (false: independent nodes)",
        ),
        ("calibrate", "check new nodes against their chains and merge conflicts"),
        (
            "calibrate_checks",
            "closest current nodes of its chains each new node is checked against (0..=50)",
        ),
        (
            "self_reflection",
            "grow chains while each node helps, stop when sufficient (false: every node of the query's chains)",
        ),
        ("query_categories", "chains a query is matched to (1..=20)"),
        (
            "max_steps",
            "model calls (helps, sufficient) per recall at most (0..=100)",
        ),
        (
            "compress",
            "compress nodes left unused, step by step while the model can still recover them",
        ),
        (
            "compress_after_days",
            "days of dialogue time unused before each compression step (> 0; the paper: 7)",
        ),
        ("max_compressions", "compression steps per node at most (0..=10)"),
    ];

    fn validate(&self) -> Result<(), String> {
        if !(self.gamma.is_finite() && (0.0..=1.0).contains(&self.gamma)) {
            return Err(format!("gamma = {}: expected 0..=1", self.gamma));
        }
        if self.calibrate_checks > 50 {
            return Err(format!(
                "calibrate_checks = {}: expected 0..=50",
                self.calibrate_checks
            ));
        }
        if !(1..=20).contains(&self.query_categories) {
            return Err(format!(
                "query_categories = {}: expected 1..=20",
                self.query_categories
            ));
        }
        if self.max_steps > 100 {
            return Err(format!("max_steps = {}: expected 0..=100", self.max_steps));
        }
        if !(self.compress_after_days.is_finite() && self.compress_after_days > 0.0) {
            return Err(format!(
                "compress_after_days = {}: expected a number > 0",
                self.compress_after_days
            ));
        }
        if self.max_compressions > 10 {
            return Err(format!(
                "max_compressions = {}: expected 0..=10",
                self.max_compressions
            ));
        }
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct SessionPayload {
    session: String,
}

pub struct M4 {
    params: M4Params,
}

impl M4 {
    pub fn new(params: M4Params) -> Self {
        Self { params }
    }

    /// Build the nodes of a closed session and calibrate them (see the module docs).
    fn build_session(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: SessionPayload = JobSpec::parse(job)?;
        let fresh = uncovered_turns(ctx, &payload.session)?;
        let mut derived = Derived::default();
        if fresh.is_empty() {
            return Ok(derived);
        }
        let fresh_refs: Vec<&Memory> = fresh.iter().collect();
        let mut items: Vec<(CategorySummary, Vec<TurnId>, Moment)> = Vec::new();
        for chunk in chunks_by_bytes(&fresh_refs, CHUNK_BYTES) {
            let lines: Vec<_> = chunk.iter().map(|m| memory_line(m)).collect();
            let when = chunk
                .iter()
                .map(|m| m.created)
                .max_by_key(|m| (m.time, m.round));
            let when = when.unwrap_or(job.created);
            for item in ctx.model.categorize(&lines)? {
                let covered: Vec<&Memory> = if item.lines.is_empty() {
                    chunk.clone()
                } else {
                    item.lines
                        .iter()
                        .filter_map(|&i| chunk.get(i).copied())
                        .collect()
                };
                items.push((item, union_provenance(covered), when));
            }
        }
        let existing = ctx.all(MemoryFilter::of_kinds(&[KindTag::ChainNode]))?;
        let resolved = self.resolve(ctx, &existing, &items)?;
        let current: Vec<Memory> = existing.into_iter().filter(chains::is_current).collect();
        let now = items
            .iter()
            .map(|(_, _, when)| *when)
            .max_by_key(|m| (m.time, m.round))
            .unwrap_or(job.created);
        for ((item, provenance, when), categories) in items.into_iter().zip(resolved) {
            let node = new_node(job, &payload.session, &item, provenance, when, categories);
            let node = if self.params.calibrate {
                self.calibrate(ctx, job, node, &current, &mut derived)?
            } else {
                node
            };
            derived.memories.push(node);
        }
        if self.params.compress {
            compress::sweep(ctx, &self.params, &current, now, &mut derived)?;
        }
        Ok(derived)
    }

    /// Each item's categories: registered ones within `gamma` of its label (the registry
    /// grows with the labels of this job as they are resolved).
    fn resolve(
        &self,
        ctx: &MechanismCtx,
        existing: &[Memory],
        items: &[(CategorySummary, Vec<TurnId>, Moment)],
    ) -> EngineResult<Vec<Vec<String>>> {
        let mut labels: Vec<String> = Vec::new();
        for node in existing.iter().filter(|n| chains::is_current(n)) {
            for c in categories_of(node) {
                if !labels.contains(&c) {
                    labels.push(c);
                }
            }
        }
        let new_labels: Vec<&str> = items.iter().map(|(i, _, _)| i.category.as_str()).collect();
        let mut texts: Vec<&str> = labels.iter().map(String::as_str).collect();
        texts.extend(new_labels.iter().copied());
        let vectors = ctx
            .embedder()
            .embed_all(&texts)
            .map_err(mnemos_core::Error::from)?;
        let (old, new) = vectors.split_at(labels.len());
        let mut registry: Vec<(String, Vec<f32>)> = labels.into_iter().zip(old.to_vec()).collect();
        let mut out = Vec::with_capacity(items.len());
        for (label, vector) in new_labels.iter().zip(new) {
            let categories = chains::resolve_category(label, vector, &registry, self.params.gamma);
            if !registry.iter().any(|(l, _)| l == label) && categories == [label.to_string()] {
                registry.push((label.to_string(), vector.clone()));
            }
            out.push(categories);
        }
        Ok(out)
    }

    /// Check `node` against the closest current nodes of its chains; each conflict merges the
    /// stale node into it and marks the stale one superseded.
    fn calibrate(
        &self,
        ctx: &MechanismCtx,
        job: &Job,
        mut node: Memory,
        current: &[Memory],
        derived: &mut Derived,
    ) -> EngineResult<Memory> {
        if self.params.calibrate_checks == 0 || current.is_empty() {
            return Ok(node);
        }
        let categories = categories_of(&node);
        let in_chain: HashSet<_> = current
            .iter()
            .filter(|m| categories_of(m).iter().any(|c| categories.contains(c)))
            .map(|m| m.id)
            .collect();
        let superseded: HashSet<_> = derived.updates.iter().map(|u| u.id).collect();
        let hits = search(
            ctx,
            &node.text,
            &[KindTag::ChainNode],
            None,
            RetrieverKind::Hybrid,
            CANDIDATES,
        )?;
        let candidates = hits
            .iter()
            .map(|h| &h.memory)
            .filter(|m| in_chain.contains(&m.id) && !superseded.contains(&m.id))
            .take(self.params.calibrate_checks);
        let mut merged_from: Vec<String> = Vec::new();
        for stale in candidates.cloned().collect::<Vec<_>>() {
            if !ctx.model.conflicts(&stale.text, &node.text)? {
                continue;
            }
            node.text = ctx.model.merge(&stale.text, &node.text)?;
            node.provenance = union_provenance([&stale, &node]);
            let mut all = categories_of(&node);
            for c in categories_of(&stale) {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
            chains::set_categories(&mut node.metadata, &all);
            merged_from.push(stale.id.to_string());
            derived.updates.push(supersede(&stale, &node, job.created));
        }
        if !merged_from.is_empty() {
            node.metadata
                .insert(CALIBRATED_FROM_KEY.to_string(), merged_from.join(","));
        }
        Ok(node)
    }

    /// The nodes to show for `query`, in the order the context shows them.
    fn retrieve(
        &self,
        ctx: &MechanismCtx,
        chains: &Chains,
        request: &RecallRequest,
    ) -> EngineResult<(Vec<ContextItem>, Vec<String>)> {
        let hits = search(
            ctx,
            &request.query,
            &[KindTag::ChainNode],
            request.session.as_deref(),
            RetrieverKind::Hybrid,
            CANDIDATES,
        )?;
        let index: BTreeMap<_, usize> = chains
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id, i))
            .collect();
        let ranked: Vec<(usize, f64)> = hits
            .iter()
            .filter_map(|h| index.get(&h.memory.id).map(|&i| (i, f64::from(h.score))))
            .collect();
        let mut notes = Vec::new();
        if !self.params.chains {
            let items = ranked
                .iter()
                .map(|&(i, score)| node_item(chains, i, "memory nodes", Step::Match, score))
                .collect();
            return Ok((items, notes));
        }
        let limits = reflect::Limits {
            query_categories: self.params.query_categories,
            max_steps: self.params.max_steps,
            tokens: request.token_budget,
            reflect: self.params.self_reflection,
        };
        let retrieval = reflect::retrieve(ctx, chains, &request.query, &ranked, &limits)?;
        if self.params.self_reflection {
            notes.push(format!(
                "self-reflective retrieval: {} node(s), {} model call(s), {}",
                retrieval.nodes.len(),
                retrieval.model_calls,
                if retrieval.sufficient {
                    "sufficient"
                } else {
                    "not judged sufficient"
                }
            ));
        }
        let mut retrieved = retrieval.nodes;
        // Chain by chain (in the order the chains were reached), each in time order.
        let chain_rank: Vec<String> =
            retrieved
                .iter()
                .map(|r| r.category.clone())
                .fold(Vec::new(), |mut acc, c| {
                    if !acc.contains(&c) {
                        acc.push(c);
                    }
                    acc
                });
        retrieved.sort_by_key(|r| {
            let rank = chain_rank.iter().position(|c| *c == r.category);
            (rank, chains.position(&r.category, r.node))
        });
        let items = retrieved
            .iter()
            .map(|r| {
                let section = format!("memory chain: {}", r.category);
                node_item(chains, r.node, &section, r.step, r.score)
            })
            .collect();
        Ok((items, notes))
    }
}

/// The session's raw turns that no node (current, superseded or forgotten) covers yet.
fn uncovered_turns(ctx: &MechanismCtx, session: &str) -> EngineResult<Vec<Memory>> {
    let turns = ctx.all(MemoryFilter {
        kinds: vec![KindTag::Turn],
        session: Some(session.to_string()),
        ..MemoryFilter::default()
    })?;
    let covered: HashSet<TurnId> = ctx
        .all(MemoryFilter {
            kinds: vec![KindTag::ChainNode],
            session: Some(session.to_string()),
            state: StateFilter::All,
            ..MemoryFilter::default()
        })?
        .iter()
        .flat_map(|m| m.provenance.iter().copied())
        .collect();
    Ok(turns
        .into_iter()
        .filter(|m| m.provenance.iter().any(|t| !covered.contains(t)))
        .collect())
}

fn new_node(
    job: &Job,
    session: &str,
    item: &CategorySummary,
    provenance: Vec<TurnId>,
    when: Moment,
    categories: Vec<String>,
) -> Memory {
    let mut metadata = Metadata::new();
    chains::set_categories(&mut metadata, &categories);
    metadata.insert(SESSION_KEY.to_string(), session.to_string());
    let primary = categories
        .first()
        .cloned()
        .unwrap_or_else(|| item.category.clone());
    derived_memory(
        job,
        MemoryKind::ChainNode { category: primary },
        item.summary.clone(),
        provenance,
        when,
        metadata,
    )
}

/// The stale node's end of validity, with the node that superseded it.
fn supersede(stale: &Memory, by: &Memory, at: Moment) -> BatchUpdate {
    let mut metadata = stale.metadata.clone();
    metadata.insert(SUPERSEDED_BY_KEY.to_string(), by.id.to_string());
    BatchUpdate {
        id: stale.id,
        patch: MemoryPatch {
            metadata: Some(metadata),
            valid_to: Some(Some(by.valid_from.max(stale.valid_from))),
            ..MemoryPatch::default()
        },
        at,
    }
}

/// Recalled nodes are used now: their compression clock restarts.
fn used(chains: &Chains, context: &crate::mechanism::Context, now: Moment) -> Vec<BatchUpdate> {
    context
        .items
        .iter()
        .filter_map(|item| chains.nodes.iter().find(|n| n.id == item.memory_id))
        .map(|node| {
            let mut metrics = node.metrics.clone();
            metrics
                .extra
                .insert(LAST_USED_KEY.to_string(), node_time(now));
            BatchUpdate {
                id: node.id,
                patch: MemoryPatch {
                    metrics: Some(metrics),
                    ..MemoryPatch::default()
                },
                at: now,
            }
        })
        .collect()
}

fn node_time(moment: Moment) -> f64 {
    moment.time.millis() as f64
}

fn node_item(chains: &Chains, index: usize, section: &str, step: Step, score: f64) -> ContextItem {
    let node = &chains.nodes[index];
    ContextItem::from_memory(node, section, score, tokens(&node.text))
        .with_part(step.name(), step.distance() as f64)
        .with_part("relevance", score)
}

impl Mechanism for M4 {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &mnemos_core::Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn end_session(&self, _ctx: &ObserveCtx, session: &str) -> EngineResult<Vec<JobSpec>> {
        Ok(vec![JobSpec::new(
            JOB_SESSION,
            json!({ "session": session }),
        )])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            JOB_SESSION => self.build_session(ctx, job),
            other => Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn views(&self) -> &'static [ViewKind] {
        &[ViewKind::Chains]
    }

    fn view(
        &self,
        store: &dyn StoreRead,
        user: &UserKey,
        agent: Option<&str>,
        kind: ViewKind,
    ) -> EngineResult<View> {
        match kind {
            ViewKind::Chains => Ok(View::Chains(view::chains(store, user, agent)?)),
            other => Err(EngineError::config(format!(
                "preset '{NAME}' has no {} view",
                other.as_str()
            ))),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let chains = Chains::of(ctx.active_of(&[KindTag::ChainNode])?);
        let mut notes = Vec::new();
        let items = if chains.nodes.is_empty() {
            notes.push("no memory chain yet: nodes are built when a session closes".to_string());
            Vec::new()
        } else {
            let (items, more) = self.retrieve(ctx, &chains, request)?;
            notes.extend(more);
            items
        };
        let kept = pack_within_budget(items, request.token_budget);
        let context = build_context(NAME, &request.query, kept, request.token_budget, notes);
        let effects = Derived {
            updates: used(&chains, &context, ctx.moment()?),
            ..Derived::default()
        };
        Ok(Recall { context, effects })
    }
}
