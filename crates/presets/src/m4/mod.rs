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
//! **Calibrate** ([`calibrate`]). Each new node is checked against the closest current nodes of
//! its chains (`conflicts`, at most `calibrate_checks` of them), and so is each of its turns
//! that announces a change against the older turns most like it (`statement_checks`). A
//! conflict merges the two into one node (`merge`: the newer statement with a record of the
//! older one) carrying both provenances; the stale node gets a `valid_to` and the id of the
//! node that superseded it, and stays in the store and its history. Nothing is overwritten.
//!
//! **Recall** is M⁴'s self-reflective retrieval ([`reflect`]): root at the best match of each
//! query chain, grow forward and backward while each next node helps, stop when the nodes are
//! sufficient, hop through shared nodes; every item says why it is there. The items are shown
//! chain by chain in time order. Superseded nodes are never recalled. With `evidence` on
//! ([`evidence`]), roots are ranked through the turns the nodes cover as well, and the matching
//! turns fill the budget the nodes leave, each under its node.
//!
//! Ablations are parameters: `chains = false` (the nodes as independent memories, best match
//! first), `calibrate = false`, `self_reflection = false` (every node of the query's chains),
//! `compress = false`, `evidence = false` (node texts only, as in the paper).

mod calibrate;
mod chains;
mod compress;
mod evidence;
mod reflect;
#[cfg(test)]
mod tests;
mod view;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::{CategorySummary, MAX_TASK_BYTES};
use mnemos_core::{
    BatchUpdate, Job, KindTag, Memory, MemoryFilter, MemoryKind, MemoryModelExt, MemoryPatch,
    Metadata, Moment, RetrieverKind, StateFilter, StoreRead, TurnId, UserKey,
};

use super::retrieval::search;
use super::PresetParams;
use crate::primitives::{chunks_by_bytes, derived_memory, memory_line, union_provenance};
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, item_tokens, pack_within_budget, tokens};
use mnemos_engine::{EngineError, EngineResult};
use mnemos_engine::{View, ViewKind};

pub use calibrate::STALE_TURNS_KEY;
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
/// A retrieved node's index in the chains and its context item.
type NodeItem = (usize, ContextItem);

/// Turn hits looked at for roots and evidence.
const TURN_CANDIDATES: usize = 50;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct M4Params {
    /// Cosine of two category labels at which they are one category (the paper's γ).
    pub gamma: f32,
    /// Order nodes into chains and walk them (false: independent nodes, best match first).
    pub chains: bool,
    /// Check each new node against its chains and merge conflicts.
    pub calibrate: bool,
    /// Let the engine's write path supersede statements as they arrive (facts by rule, no
    /// model call); calibration then takes what it found instead of asking the model again.
    pub supersede: bool,
    /// Closest current nodes of its chains a new node is checked against.
    pub calibrate_checks: usize,
    /// Older turns each new turn that announces a change is checked against.
    pub statement_checks: usize,
    /// Conflict checks among a context's evidence turns per recall (read-time calibration).
    pub read_checks: usize,
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
    /// Choose roots through the turns the nodes cover as well as the node texts, and show each
    /// node's best-matching turns under it (false: node texts only, as in the paper).
    pub evidence: bool,
}

impl Default for M4Params {
    fn default() -> Self {
        Self {
            gamma: 0.5,
            chains: true,
            calibrate: true,
            supersede: true,
            calibrate_checks: 1,
            statement_checks: 2,
            read_checks: 8,
            self_reflection: true,
            query_categories: 2,
            max_steps: 8,
            compress: true,
            compress_after_days: 7.0,
            max_compressions: 2,
            evidence: true,
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
            "supersede",
            "the engine's write path supersedes statements by rule as they arrive; calibration takes what it found (false: the model alone, as in the paper)",
        ),
        (
            "calibrate_checks",
            "closest current nodes of its chains each new node is checked against (0..=50)",
        ),
        (
            "statement_checks",
            "older turns like it each new turn that announces a change is checked against (0..=50)",
        ),
        (
            "read_checks",
            "conflict checks among a context's evidence turns per recall, marking a contradicted older turn superseded (0..=100)",
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
        (
            "evidence",
            "find roots through the turns nodes cover too, and show each node's best turns under it (false: node texts only)",
        ),
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
        if self.statement_checks > 50 {
            return Err(format!(
                "statement_checks = {}: expected 0..=50",
                self.statement_checks
            ));
        }
        if self.read_checks > 100 {
            return Err(format!(
                "read_checks = {}: expected 0..=100",
                self.read_checks
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
    labels: chains::LabelVectors,
}

impl M4 {
    pub fn new(params: M4Params) -> Self {
        Self {
            params,
            labels: chains::LabelVectors::default(),
        }
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
                calibrate::calibrate(ctx, &self.params, job, node, &fresh, &current, &mut derived)?
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
        let vectors = self
            .labels
            .get(ctx.embedder(), &texts)
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

    /// The nodes to show for `query`, in the order the context shows them, each followed by
    /// its evidence turns when `evidence` is on.
    fn retrieve(
        &self,
        ctx: &MechanismCtx,
        chains: &Chains,
        request: &RecallRequest,
    ) -> EngineResult<(Vec<ContextItem>, Vec<String>)> {
        let session = request.session.as_deref();
        let node_hits = search(
            ctx,
            &request.query,
            &[KindTag::ChainNode],
            session,
            RetrieverKind::Hybrid,
            CANDIDATES,
        )?;
        let turns = evidence::TurnHits::new(if self.params.evidence {
            search(
                ctx,
                &request.query,
                &[KindTag::Turn],
                session,
                RetrieverKind::Hybrid,
                TURN_CANDIDATES,
            )?
        } else {
            Vec::new()
        });
        let ranked = evidence::fuse(chains, &node_hits, &turns);
        // With evidence, the nodes get half the budget and their turns the rest.
        let node_budget = if self.params.evidence {
            request.token_budget / 2
        } else {
            request.token_budget
        };
        let (nodes, mut notes) = self.walk(ctx, chains, &request.query, &ranked, node_budget)?;
        let items = if self.params.evidence {
            let spent: usize = nodes.iter().map(|(_, item)| item_tokens(item)).sum();
            let room = request.token_budget.saturating_sub(spent);
            let mut items = evidence::interleave(chains, nodes, &turns, room);
            if self.params.calibrate && self.params.read_checks > 0 {
                let (calls, marked) =
                    evidence::mark_superseded(ctx, &mut items, self.params.read_checks)?;
                if calls > 0 {
                    notes.push(format!(
                        "read-time calibration: {calls} check(s), {marked} turn(s) marked superseded"
                    ));
                }
            }
            items
        } else {
            nodes.into_iter().map(|(_, item)| item).collect()
        };
        Ok((items, notes))
    }

    /// The nodes a walk of the chains (or, without chains, the ranking) retrieves, in the
    /// order the context shows them, with their node indexes.
    fn walk(
        &self,
        ctx: &MechanismCtx,
        chains: &Chains,
        query: &str,
        ranked: &[(usize, f64)],
        tokens: usize,
    ) -> EngineResult<(Vec<NodeItem>, Vec<String>)> {
        let mut notes = Vec::new();
        if !self.params.chains {
            let mut spent = 0;
            let mut items = Vec::new();
            for &(i, score) in ranked {
                let item = node_item(chains, i, "memory nodes", Step::Match, score);
                spent += item_tokens(&item);
                if spent > tokens {
                    break;
                }
                items.push((i, item));
            }
            return Ok((items, notes));
        }
        let limits = reflect::Limits {
            query_categories: self.params.query_categories,
            max_steps: self.params.max_steps,
            tokens,
            reflect: self.params.self_reflection,
        };
        let retrieval = reflect::retrieve(ctx, chains, query, ranked, &limits)?;
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
                (r.node, node_item(chains, r.node, &section, r.step, r.score))
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

/// Recalled nodes are used now: their compression clock restarts.
fn used(
    chains: &Chains,
    context: &mnemos_engine::mechanism::Context,
    now: Moment,
) -> Vec<BatchUpdate> {
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

    /// Calibration builds on the engine's supersession: a statement the write path already
    /// found replaced needs no model call to be found stale again.
    fn write_policy(&self) -> mnemos_engine::truth::WritePolicy {
        mnemos_engine::truth::WritePolicy {
            supersede: self.params.calibrate && self.params.supersede,
            forget_requests: false,
        }
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
        if chains.nodes.is_empty() {
            notes.push("no memory chain yet: nodes are built when a session closes".to_string());
        }
        // Without nodes there is nothing to walk, but the turns can still be evidence.
        let items = if chains.nodes.is_empty() && !self.params.evidence {
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
