//! Compression of nodes left unused (M⁴ "compress").
//!
//! When a session closes, every current node unused for `compress_after_days` of dialogue time
//! (since it was created, last recalled or last compressed) takes one compression step: the
//! memory model compresses its text, and the step is kept only when the model judges the
//! node's original text recoverable from the result (`recoverable`); otherwise the node is
//! final and never compressed again. A kept step is a text edit, so the previous text stays in
//! the node's history. At most `max_compressions` steps per node. Calibrated nodes are not
//! compressed: their wording marks which statement is current.

use mnemos_core::{BatchUpdate, Memory, MemoryModelExt, MemoryPatch, Moment};

use super::chains::CALIBRATED_FROM_KEY;
use super::M4Params;
use mnemos_engine::mechanism::{Derived, MechanismCtx};
use mnemos_engine::primitives::tokens;
use mnemos_engine::EngineResult;

/// Metrics key: dialogue time (ms) a node was last recalled.
pub const LAST_USED_KEY: &str = "m4_last_used_ms";
/// Metrics key: compression steps kept.
pub const COMPRESSIONS_KEY: &str = "m4_compressions";
/// Metrics key: dialogue time (ms) of the last compression step.
const COMPRESSED_AT_KEY: &str = "m4_compressed_at_ms";
/// Metrics key: tokens of the node's text before its first compression.
pub const ORIGINAL_TOKENS_KEY: &str = "m4_original_tokens";
/// Metrics key: 1 when a step was judged unrecoverable (no more steps).
pub const COMPRESSION_FINAL_KEY: &str = "m4_compression_final";

const MS_PER_DAY: f64 = 86_400_000.0;

/// One compression step for each eligible node of `current` not already changed by this job.
pub fn sweep(
    ctx: &MechanismCtx,
    params: &M4Params,
    current: &[Memory],
    now: Moment,
    derived: &mut Derived,
) -> EngineResult<()> {
    let period = params.compress_after_days * MS_PER_DAY;
    for node in current {
        if derived.updates.iter().any(|u| u.id == node.id) || !eligible(node, params, now, period) {
            continue;
        }
        let original = original_text(ctx, node)?;
        let compressed = ctx.model.compress(&node.text)?;
        let shorter = tokens(&compressed) < tokens(&node.text) && !compressed.trim().is_empty();
        let kept = shorter && ctx.model.recoverable(&original, &compressed)?;
        derived
            .updates
            .push(step(node, kept.then_some(compressed), now));
    }
    Ok(())
}

fn extra(node: &Memory, key: &str) -> Option<f64> {
    node.metrics.extra.get(key).copied()
}

fn eligible(node: &Memory, params: &M4Params, now: Moment, period: f64) -> bool {
    // A calibrated node's wording says which statement is current and which is a record of the
    // past ("… (previously: …)"); dropping words could drop that.
    if extra(node, COMPRESSION_FINAL_KEY).is_some()
        || node.metadata.contains_key(CALIBRATED_FROM_KEY)
    {
        return false;
    }
    let steps = extra(node, COMPRESSIONS_KEY).unwrap_or(0.0);
    if steps >= f64::from(params.max_compressions) {
        return false;
    }
    let last = [LAST_USED_KEY, COMPRESSED_AT_KEY]
        .iter()
        .filter_map(|k| extra(node, k))
        .fold(node.created.time.millis() as f64, f64::max);
    now.time.millis() as f64 - last >= period
}

/// The node's text before any compression: its first version's, from its history.
fn original_text(ctx: &MechanismCtx, node: &Memory) -> EngineResult<String> {
    if extra(node, COMPRESSIONS_KEY).is_none() {
        return Ok(node.text.clone());
    }
    let history = ctx.store().history(ctx.user, node.id)?;
    Ok(history
        .first()
        .map_or_else(|| node.text.clone(), |h| h.snapshot.text.clone()))
}

/// The node after a step: the compressed text when kept, else marked final.
fn step(node: &Memory, compressed: Option<String>, now: Moment) -> BatchUpdate {
    let mut metrics = node.metrics.clone();
    let at = now.time.millis() as f64;
    let text = match compressed {
        Some(text) => {
            metrics
                .extra
                .entry(ORIGINAL_TOKENS_KEY.to_string())
                .or_insert(tokens(&node.text) as f64);
            *metrics
                .extra
                .entry(COMPRESSIONS_KEY.to_string())
                .or_insert(0.0) += 1.0;
            metrics.extra.insert(COMPRESSED_AT_KEY.to_string(), at);
            Some(text)
        }
        None => {
            metrics.extra.insert(COMPRESSION_FINAL_KEY.to_string(), 1.0);
            None
        }
    };
    BatchUpdate {
        id: node.id,
        patch: MemoryPatch {
            text,
            metrics: Some(metrics),
            ..MemoryPatch::default()
        },
        at: now,
    }
}
