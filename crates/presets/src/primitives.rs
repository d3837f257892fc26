//! Building blocks presets compose: derived memories, provenance unions, decay curves, score
//! normalization, dialogue lines. (Token budgets and context packing, which the engine uses
//! too, are `mnemos_engine::primitives`.)

use mnemos_core::memory_model::Line;
use mnemos_core::{
    Job, Memory, MemoryId, MemoryKind, MemoryState, Metadata, Metrics, Moment, Role, Turn, TurnId,
};

/// A new derived memory in a job's scope: active, version 1, valid from `created`.
pub fn derived_memory(
    job: &Job,
    kind: MemoryKind,
    text: String,
    provenance: Vec<TurnId>,
    created: Moment,
    metadata: Metadata,
) -> Memory {
    Memory {
        id: MemoryId::new(),
        scope: job.scope.clone(),
        kind,
        text,
        provenance,
        created,
        valid_from: created.time,
        valid_to: None,
        superseded_by: None,
        state: MemoryState::Active,
        metrics: Metrics::default(),
        access: Vec::new(),
        metadata,
        version: 1,
    }
}

/// Consecutive runs of memories whose texts together stay within `max_bytes` (a longer single
/// text is its own run; the model rejects it if it exceeds a task).
pub fn chunks_by_bytes<'m>(memories: &[&'m Memory], max_bytes: usize) -> Vec<Vec<&'m Memory>> {
    let mut out: Vec<Vec<&Memory>> = Vec::new();
    let mut current: Vec<&Memory> = Vec::new();
    let mut bytes = 0usize;
    for memory in memories {
        let size = memory.text.len() + 64;
        if !current.is_empty() && bytes + size > max_bytes {
            out.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.push(memory);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The turn ids behind `memories`, each once, in first-seen order.
pub fn union_provenance<'m>(memories: impl IntoIterator<Item = &'m Memory>) -> Vec<TurnId> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for memory in memories {
        for id in &memory.provenance {
            if seen.insert(*id) {
                out.push(*id);
            }
        }
    }
    out
}

/// Ebbinghaus retention R = exp(−Δt / (c·S)): elapsed time over strength times a time scale.
/// A stronger memory (larger S) decays more slowly. Δt ≤ 0 gives 1.
pub fn ebbinghaus_retention(elapsed: f64, strength: f64, time_scale: f64) -> f64 {
    if elapsed <= 0.0 {
        return 1.0;
    }
    let denominator = (time_scale * strength).max(f64::MIN_POSITIVE);
    (-elapsed / denominator).exp()
}

/// Exponential recency decay^Δt (GenerativeAgent uses 0.995 per hour of game time).
pub fn exponential_recency(elapsed: f64, decay: f64) -> f64 {
    decay.powf(elapsed.max(0.0))
}

/// Min-max normalize to [0, 1]; a constant list maps to all ones (no signal, no penalty).
pub fn min_max(values: &[f64]) -> Vec<f64> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(hi - lo).is_normal() {
        return vec![1.0; values.len()];
    }
    values.iter().map(|v| (v - lo) / (hi - lo)).collect()
}

/// A turn as a dialogue line for the memory model.
pub fn turn_line(turn: &Turn) -> Line {
    Line::new(turn.role, turn.speaker.as_deref(), turn.text.clone())
}

/// A raw-turn memory as a dialogue line (speaker from its metadata).
pub fn memory_line(memory: &Memory) -> Line {
    Line::new(Role::User, memory.speaker(), memory.text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_follows_the_corrected_formula() {
        // exp(-Δt / (c·S)), not exp(-(Δt/c)·S).
        let r = ebbinghaus_retention(2.0, 4.0, 1.0);
        assert!((r - (-0.5f64).exp()).abs() < 1e-12);
        assert_eq!(ebbinghaus_retention(0.0, 1.0, 1.0), 1.0);
        assert!(ebbinghaus_retention(5.0, 2.0, 1.0) > ebbinghaus_retention(5.0, 1.0, 1.0));
    }

    #[test]
    fn min_max_handles_constants() {
        assert_eq!(min_max(&[2.0, 2.0]), vec![1.0, 1.0]);
        assert_eq!(min_max(&[1.0, 3.0, 2.0]), vec![0.0, 1.0, 0.5]);
    }
}
