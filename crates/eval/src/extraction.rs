//! What a memory system extracted and what it kept, read from its memories after a stream: the
//! predictions of MOOM's extraction score ([`derived_memories`]) and the kept set of LUFY's
//! importance agreement ([`kept_turns`]), plus the label-weighted mean MOOM reports over many
//! dialogues ([`LabelMean`]).
//!
//! # Which memories are "extracted"
//!
//! MOOM scores the memories a framework *extracts* (summaries, persona values, facts), never the
//! dialogue itself: a raw turn scored against a label would credit a system for storing the
//! conversation verbatim. So only active memories of a derived kind count — summaries, persona
//! keys, chain nodes, facts, profiles, reflections. [`MemoryKind::Turn`] is raw by definition,
//! and [`MemoryKind::Exchange`] is a verbatim user utterance with its reply, equally raw, so both
//! are left out.
//!
//! # Which turns are "kept"
//!
//! For LUFY the question is what a system still holds, raw or not: a turn is kept when some
//! active memory — its own raw-turn memory, or a summary, profile or reflection built from it —
//! names it in its provenance. [`kept_raw_turns`] is the narrower set of turns still held
//! verbatim.

use std::collections::HashSet;

use mnemos_core::{Memory, MemoryKind, TurnId};
use serde::{Deserialize, Serialize};

use crate::scoring::{ExtractionScore, Prf};

/// Whether a memory of this kind was derived from the dialogue rather than stored verbatim
/// (see the module docs: turns and exchanges are raw).
pub fn is_derived(kind: &MemoryKind) -> bool {
    !matches!(kind, MemoryKind::Turn | MemoryKind::Exchange)
}

/// The active memories of a derived kind with non-blank text, in the given order: the
/// predictions MOOM's extraction score compares with the labels.
pub fn derived_memories(memories: &[Memory]) -> Vec<&Memory> {
    memories
        .iter()
        .filter(|m| m.is_active() && is_derived(&m.kind) && !m.text.trim().is_empty())
        .collect()
}

/// Every turn named in the provenance of an active memory (raw turns included).
pub fn kept_turns(memories: &[Memory]) -> HashSet<TurnId> {
    memories
        .iter()
        .filter(|m| m.is_active())
        .flat_map(|m| m.provenance.iter().copied())
        .collect()
}

/// The turns whose own raw-turn memory is still active (what is kept verbatim, ignoring
/// summaries and other derived memories).
pub fn kept_raw_turns(memories: &[Memory]) -> HashSet<TurnId> {
    memories
        .iter()
        .filter(|m| m.is_active() && m.kind == MemoryKind::Turn)
        .flat_map(|m| m.provenance.iter().copied())
        .collect()
}

/// Cosine similarity of two vectors (the one every crate uses).
pub use mnemos_core::embed::cosine;

/// Extraction scores of many dialogues, averaged over labels as MOOM does: every label weighs
/// the same, so a dialogue with many labels counts more than one with few.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelMean {
    dialogues: usize,
    labels: usize,
    memories: usize,
    rouge_l: Prf,
    rouge_2: Prf,
    embedding: Option<f64>,
}

/// The label-weighted means of a [`LabelMean`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractionSummary {
    /// Dialogues added.
    pub dialogues: usize,
    /// Labels over all dialogues.
    pub labels: usize,
    /// Extracted memories per dialogue, on average.
    pub memories_per_dialogue: f64,
    /// ROUGE-L of each label's best memory, averaged over labels.
    pub rouge_l: Prf,
    /// ROUGE-2 of each label's best memory, averaged over labels.
    pub rouge_2: Prf,
    /// Mean best similarity per label, when every dialogue was scored with one.
    pub embedding: Option<f64>,
}

impl LabelMean {
    /// Add one dialogue's score (whose numbers are means over its own labels).
    pub fn add(&mut self, score: &ExtractionScore) {
        let weight = score.labels as f64;
        let add = |sum: &mut Prf, prf: Prf| {
            sum.precision += prf.precision * weight;
            sum.recall += prf.recall * weight;
            sum.f += prf.f * weight;
        };
        add(&mut self.rouge_l, score.rouge_l);
        add(&mut self.rouge_2, score.rouge_2);
        self.embedding = match (self.dialogues, self.embedding, score.embedding) {
            (0, _, Some(e)) => Some(e * weight),
            (_, Some(sum), Some(e)) => Some(sum + e * weight),
            _ => None,
        };
        self.dialogues += 1;
        self.labels += score.labels;
        self.memories += score.memories;
    }

    /// Means over all labels added so far (zeros before any label).
    pub fn summary(&self) -> ExtractionSummary {
        let n = self.labels.max(1) as f64;
        let mean = |sum: Prf| Prf {
            precision: sum.precision / n,
            recall: sum.recall / n,
            f: sum.f / n,
        };
        ExtractionSummary {
            dialogues: self.dialogues,
            labels: self.labels,
            memories_per_dialogue: self.memories as f64 / self.dialogues.max(1) as f64,
            rouge_l: mean(self.rouge_l),
            rouge_2: mean(self.rouge_2),
            embedding: self.embedding.map(|sum| sum / n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::{Moment, Scope, Timestamp, Turn};

    fn memory(kind: MemoryKind, text: &str, provenance: &[TurnId], active: bool) -> Memory {
        let scope = Scope::new("t", "u", "a", "s").expect("scope");
        let turn = Turn {
            id: TurnId::new(),
            scope,
            role: mnemos_core::Role::User,
            speaker: None,
            text: text.to_string(),
            at: Moment {
                time: Timestamp(1),
                round: 1,
            },
            metadata: Default::default(),
            key: None,
        };
        let mut memory = Memory::from_turn(&turn);
        memory.kind = kind;
        memory.provenance = provenance.to_vec();
        if !active {
            memory.state = mnemos_core::MemoryState::Forgotten {
                reason: "test".into(),
                at: turn.at,
                cause: mnemos_core::ForgetCause::Request,
            };
        }
        memory
    }

    #[test]
    fn only_active_derived_memories_are_extracted() {
        let t: Vec<TurnId> = (0..4).map(|_| TurnId::new()).collect();
        let memories = vec![
            memory(MemoryKind::Turn, "raw turn", &[t[1]], true),
            memory(MemoryKind::Exchange, "user and reply", &[t[1], t[2]], true),
            memory(
                MemoryKind::Summary { level: 1 },
                "a summary",
                &[t[1], t[2]],
                true,
            ),
            memory(MemoryKind::Profile, "old profile", &[t[1]], false),
            memory(MemoryKind::Profile, "  ", &[t[3]], true),
            memory(
                MemoryKind::Persona { key: "name".into() },
                "name: Ann",
                &[t[3]],
                true,
            ),
            memory(MemoryKind::Reflection, "an insight", &[t[2]], true),
        ];
        let texts: Vec<&str> = derived_memories(&memories)
            .iter()
            .map(|m| m.text.as_str())
            .collect();
        assert_eq!(texts, ["a summary", "name: Ann", "an insight"]);
        assert!(!is_derived(&MemoryKind::Turn));
        assert!(!is_derived(&MemoryKind::Exchange));
        assert!(is_derived(&MemoryKind::Fact));
        assert!(is_derived(&MemoryKind::ChainNode {
            category: "x".into()
        }));
    }

    #[test]
    fn kept_turns_follow_active_provenance() {
        let t: Vec<TurnId> = (0..6).map(|_| TurnId::new()).collect();
        let memories = vec![
            memory(MemoryKind::Turn, "raw", &[t[1]], true),
            memory(MemoryKind::Turn, "forgotten raw", &[t[2]], false),
            memory(
                MemoryKind::Summary { level: 1 },
                "covers 3 and 4",
                &[t[3], t[4]],
                true,
            ),
            memory(MemoryKind::Profile, "forgotten profile", &[t[5]], false),
        ];
        let kept = kept_turns(&memories);
        assert_eq!(kept.len(), 3);
        assert!([t[1], t[3], t[4]].iter().all(|id| kept.contains(id)));
        let raw = kept_raw_turns(&memories);
        assert_eq!(raw.len(), 1);
        assert!(raw.contains(&t[1]));
    }

    #[test]
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-12);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    fn prf(v: f64) -> Prf {
        Prf {
            precision: v,
            recall: v,
            f: v,
        }
    }

    #[test]
    fn label_mean_weighs_dialogues_by_labels() {
        let mut mean = LabelMean::default();
        assert_eq!(mean.summary().rouge_l, Prf::default());
        mean.add(&ExtractionScore {
            labels: 3,
            memories: 4,
            rouge_l: prf(0.5),
            rouge_2: prf(0.2),
            embedding: Some(0.9),
        });
        mean.add(&ExtractionScore {
            labels: 1,
            memories: 0,
            rouge_l: prf(0.1),
            rouge_2: prf(0.0),
            embedding: Some(0.1),
        });
        let summary = mean.summary();
        assert_eq!((summary.dialogues, summary.labels), (2, 4));
        assert!((summary.memories_per_dialogue - 2.0).abs() < 1e-12);
        // (3·0.5 + 1·0.1) / 4, not (0.5 + 0.1) / 2.
        assert!((summary.rouge_l.f - 0.4).abs() < 1e-12);
        assert!((summary.rouge_2.recall - 0.15).abs() < 1e-12);
        assert!((summary.embedding.expect("scored") - 0.7).abs() < 1e-12);

        // One dialogue without a similarity makes the mean undefined.
        mean.add(&ExtractionScore {
            labels: 2,
            memories: 1,
            rouge_l: prf(0.0),
            rouge_2: prf(0.0),
            embedding: None,
        });
        assert_eq!(mean.summary().embedding, None);
    }
}
