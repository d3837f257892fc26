//! The turns beneath the nodes: roots found through what was said, and evidence shown under
//! each retrieved node.
//!
//! A node's text is a summary, and an offline summary of a long session keeps its central
//! sentences, not every stated fact. So the search that chooses the query's chains and roots
//! also looks at the turns: a node's rank is the reciprocal-rank fusion of its own rank among
//! the node hits and the best rank of a turn it covers among the turn hits. After the walk,
//! the best-matching turns fill the part of the budget the nodes left: each under the retrieved
//! node that covers it, or in a section of their own when none does (turns of other chains, or
//! of the session still open), never a turn that a calibration marked stale.

use std::collections::{HashMap, HashSet};

use mnemos_core::retrieval::{self, Fusion};
use mnemos_core::{Hit, MemoryKind, MemoryModelExt, TurnId};

use super::calibrate::STALE_TURNS_KEY;
use super::chains::Chains;
use mnemos_engine::mechanism::{ContextItem, MechanismCtx};
use mnemos_engine::primitives::{item_tokens, tokens};
use mnemos_engine::EngineResult;

/// The turn hits of a query, by the turn they hold, best first.
pub struct TurnHits {
    hits: Vec<Hit>,
    rank: HashMap<TurnId, usize>,
}

impl TurnHits {
    pub fn new(hits: Vec<Hit>) -> Self {
        let mut rank = HashMap::new();
        for (i, hit) in hits.iter().enumerate() {
            for turn in &hit.memory.provenance {
                rank.entry(*turn).or_insert(i);
            }
        }
        TurnHits { hits, rank }
    }
}

/// Node indexes ranked by the fusion of the node hits and the turn hits (see the module docs),
/// with the fused score.
pub fn fuse(chains: &Chains, node_hits: &[Hit], turns: &TurnHits) -> Vec<(usize, f64)> {
    let index: HashMap<_, u32> = (0u32..)
        .zip(&chains.nodes)
        .map(|(i, n)| (n.id, i))
        .collect();
    let by_node: Vec<(u32, f32)> = node_hits
        .iter()
        .filter_map(|h| index.get(&h.memory.id).map(|&i| (i, h.score)))
        .collect();
    // Each node at the rank of the best turn it covers.
    let mut by_turn: Vec<(usize, u32, f32)> = (0u32..)
        .zip(&chains.nodes)
        .filter_map(|(i, node)| {
            let best = node
                .provenance
                .iter()
                .filter_map(|t| turns.rank.get(t))
                .min()?;
            Some((*best, i, turns.hits[*best].score))
        })
        .collect();
    by_turn.sort_unstable_by_key(|&(rank, i, _)| (rank, i));
    let by_turn: Vec<(u32, f32)> = by_turn.into_iter().map(|(_, i, s)| (i, s)).collect();
    retrieval::fuse(&Fusion::rrf(), &by_node, &by_turn)
        .into_iter()
        .map(|(i, fused, _, _)| (i as usize, f64::from(fused)))
        .collect()
}

/// Section of the evidence turns that no retrieved node covers.
pub const OTHER_SECTION: &str = "other matching turns";

/// The context's items: each node followed by the matching turns it covers, then the matching
/// turns no retrieved node covers (under [`OTHER_SECTION`]). Turns are taken in the order of
/// the turn hits until `budget` tokens are spent; a turn that calibration marked stale in any
/// current node is never shown (the node that superseded it holds it as a record).
pub fn interleave(
    chains: &Chains,
    nodes: Vec<(usize, ContextItem)>,
    turns: &TurnHits,
    budget: usize,
) -> Vec<ContextItem> {
    let stale: HashSet<TurnId> = chains
        .nodes
        .iter()
        .filter_map(|n| n.metadata.get(STALE_TURNS_KEY))
        .flat_map(|s| s.split(',').filter_map(|id| id.parse().ok()))
        .collect();
    let covered: Vec<HashSet<&TurnId>> = nodes
        .iter()
        .map(|(i, _)| chains.nodes[*i].provenance.iter().collect())
        .collect();
    let mut under: Vec<Vec<ContextItem>> = vec![Vec::new(); nodes.len() + 1];
    let mut spent = 0usize;
    for (rank, hit) in turns.hits.iter().enumerate() {
        let ids = &hit.memory.provenance;
        if ids.iter().any(|t| stale.contains(t)) {
            continue;
        }
        let owner = covered
            .iter()
            .position(|c| ids.iter().all(|t| c.contains(t)))
            .unwrap_or(nodes.len());
        let section = nodes
            .get(owner)
            .map_or(OTHER_SECTION, |(_, item)| item.section.as_str());
        let item = ContextItem::from_memory(
            &hit.memory,
            section,
            f64::from(hit.score),
            tokens(&hit.memory.text),
        )
        .with_part("evidence", rank as f64);
        let cost = item_tokens(&item);
        if spent + cost > budget {
            continue;
        }
        spent += cost;
        under[owner].push(item);
    }
    let mut out = Vec::new();
    let mut groups = under.into_iter();
    for ((_, node), evidence) in nodes.into_iter().zip(groups.by_ref()) {
        out.push(node);
        out.extend(evidence);
    }
    out.extend(groups.flatten());
    out
}

/// Mark of an evidence turn that a later one in the same context contradicts, by language; the
/// turn stays in the context as a record of what was said.
const SUPERSEDED_EN: &str = "[superseded by a later statement]";
const SUPERSEDED_ZH: &str = "[已被更新]";

/// Older turns one announcing turn is checked against at read time at most.
pub const READ_CHECKS_PER_TURN: usize = 3;

/// Read-time calibration: among the evidence turns of one context (the query chose them, so
/// they are about the same thing), each turn that announces a change, best match first, is
/// checked against the older evidence turns that match the query best
/// ([`READ_CHECKS_PER_TURN`] of them at most, `budget` checks in all; `conflicts`); an older
/// turn it contradicts is marked superseded. Returns the model calls made and the turns marked.
pub fn mark_superseded(
    ctx: &MechanismCtx,
    items: &mut [ContextItem],
    budget: usize,
) -> EngineResult<(usize, usize)> {
    let analyzer = mnemos_text::Analyzer::shared();
    let is_turn = |i: &ContextItem| matches!(i.kind, MemoryKind::Turn);
    // The query chose what it is about, so the statement an update replaces is among its best
    // matches: announcing turns and older turns are both taken best match first.
    let rank = |i: &ContextItem| {
        i.breakdown
            .iter()
            .find(|p| p.name == "evidence")
            .map_or(f64::INFINITY, |p| p.value)
    };
    let by_rank = |mut ids: Vec<usize>, items: &[ContextItem]| {
        ids.sort_by(|&a, &b| rank(&items[a]).total_cmp(&rank(&items[b])));
        ids
    };
    let announcing: Vec<usize> = (0..items.len())
        .filter(|&k| is_turn(&items[k]) && mnemos_text::announces_change(analyzer, &items[k].text))
        .collect();
    let (mut calls, mut marked) = (0, HashSet::new());
    // Dialogues without timestamps have one time for every turn; the round orders them.
    let when = |i: &ContextItem| (i.created.time, i.created.round);
    for k in by_rank(announcing, items) {
        let newer = when(&items[k]);
        let older: Vec<usize> = (0..items.len())
            .filter(|&j| j != k && is_turn(&items[j]) && when(&items[j]) < newer)
            .filter(|j| !marked.contains(j))
            .collect();
        for j in by_rank(older, items).into_iter().take(READ_CHECKS_PER_TURN) {
            if calls >= budget {
                break;
            }
            calls += 1;
            if ctx.model.conflicts(&items[j].text, &items[k].text)? {
                marked.insert(j);
            }
        }
    }
    for &j in &marked {
        let item = &mut items[j];
        let mark = match mnemos_text::detect_language(&item.text) {
            mnemos_text::Language::Chinese => SUPERSEDED_ZH,
            _ => SUPERSEDED_EN,
        };
        item.text = format!("{mark} {}", item.text);
        item.tokens = tokens(&item.text);
        item.breakdown.push(mnemos_engine::mechanism::ScorePart {
            name: "superseded".to_string(),
            value: 1.0,
        });
    }
    Ok((calls, marked.len()))
}
