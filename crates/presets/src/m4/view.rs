//! The chains view (`mnemos show chains`): every category's current nodes in time order, which
//! nodes are shared, how far each was compressed, and what calibration superseded.

use mnemos_core::{KindTag, Memory, MemoryFilter, StateFilter, StoreRead, UserKey};

use super::chains::SUPERSEDED_BY_KEY;
use super::chains::{categories_of, is_current, Chains, CALIBRATED_FROM_KEY, SESSION_KEY};
use super::compress::{COMPRESSIONS_KEY, COMPRESSION_FINAL_KEY, ORIGINAL_TOKENS_KEY};
use mnemos_engine::mechanism::collect_all;
use mnemos_engine::primitives::tokens;
use mnemos_engine::EngineResult;
use mnemos_engine::{CalibrationView, ChainNodeView, ChainView, ChainsView};

/// The chains of `user` (one agent's, or every agent's).
pub fn chains(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: Option<&str>,
) -> EngineResult<ChainsView> {
    let nodes = collect_all(
        store,
        user,
        &MemoryFilter {
            kinds: vec![KindTag::ChainNode],
            agent: agent.map(str::to_string),
            state: StateFilter::Active,
            ..MemoryFilter::default()
        },
    )?;
    let mut calibrations: Vec<CalibrationView> = nodes
        .iter()
        .filter(|n| !is_current(n))
        .map(|n| CalibrationView {
            stale: n.id,
            stale_text: n.text.clone(),
            valid_to: n.valid_to,
            superseded_by: n.metadata.get(SUPERSEDED_BY_KEY).cloned(),
            categories: categories_of(n),
        })
        .collect();
    calibrations.sort_by_key(|c| c.valid_to);
    let chains = Chains::of(nodes);
    // Categories in the order their first node appeared.
    let mut order: Vec<(&String, usize)> = chains
        .by_category
        .iter()
        .filter_map(|(c, idx)| idx.first().map(|&first| (c, first)))
        .collect();
    order.sort_by_key(|&(c, first)| (first, c.clone()));
    let views = order
        .into_iter()
        .map(|(category, _)| ChainView {
            category: category.clone(),
            nodes: chains.by_category[category]
                .iter()
                .map(|&i| node_view(&chains.nodes[i]))
                .collect(),
        })
        .collect();
    Ok(ChainsView {
        chains: views,
        calibrations,
    })
}

fn node_view(node: &Memory) -> ChainNodeView {
    let extra = |k: &str| node.metrics.extra.get(k).copied();
    ChainNodeView {
        id: node.id,
        time: node.created.time,
        session: node.metadata.get(SESSION_KEY).cloned(),
        text: node.text.clone(),
        categories: categories_of(node),
        tokens: tokens(&node.text),
        compressions: extra(COMPRESSIONS_KEY).map_or(0, |v| v as u32),
        original_tokens: extra(ORIGINAL_TOKENS_KEY).map(|v| v as usize),
        compression_final: extra(COMPRESSION_FINAL_KEY).is_some(),
        calibrated_from: node
            .metadata
            .get(CALIBRATED_FROM_KEY)
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        turns: node.provenance.len(),
    }
}
