//! LUFY's memory strength and importance, as pure functions (shared by the preset and by
//! `mnemos train lufy`, so the weights are fitted on exactly what the preset computes).
//!
//! Every signal is put on one scale, [0, 1] with fixed bounds, before it is weighted:
//! arousal is already in [0, 1]; perplexity is capped (160 by default, the paper's cap) and
//! divided by the cap; the 1–10 importance rating maps to (L − 1) / 9; the retrieval counters
//! are divided by a cap (10 by default) and saturate there. Fixed bounds rather than the
//! paper's statistics of one calibration set keep a memory's score independent of the
//! other memories of the run, so a job replayed later decides the same.
//!
//! Strength S = Σ wᵢ·xᵢ over the five normalized signals and importance = exp(−Δt / S).
//! A strength at or below zero has no memory left: its importance is 0 (the limit of
//! exp(−Δt / S) as S falls to 0 from above), never the exploding value the formula would give
//! for a negative S.

use serde::{Deserialize, Serialize};

/// The paper's weights (LUFY, Table 2).
pub const PAPER_WEIGHTS: Weights = Weights {
    arousal: 2.76,
    surprise: -0.28,
    importance: 0.44,
    r1: 1.02,
    r2: -0.012,
};

/// Weights of the five signals in S = Σ wᵢ·xᵢ (signed: a negative weight lowers strength).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub arousal: f64,
    pub surprise: f64,
    pub importance: f64,
    pub r1: f64,
    pub r2: f64,
}

impl Weights {
    /// The weights in signal order (A, P, L, R1, R2).
    pub fn as_array(&self) -> [f64; 5] {
        [
            self.arousal,
            self.surprise,
            self.importance,
            self.r1,
            self.r2,
        ]
    }

    /// Every weight is a finite number.
    pub fn is_finite(&self) -> bool {
        self.as_array().iter().all(|w| w.is_finite())
    }
}

/// The raw signals of one utterance pair, as the memory model and the recall counters give
/// them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Arousal A of the user utterance, in [0, 1].
    pub arousal: f64,
    /// Surprise P: perplexity of the user utterance after the previous bot turn (≥ 1).
    pub surprise: f64,
    /// Importance L of the exchange, 1..=10.
    pub importance: f64,
    /// R1: times retrieved first (and used).
    pub r1: f64,
    /// R2: times retrieved second (and not used).
    pub r2: f64,
}

/// The bounds that put every signal on [0, 1].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// Perplexity above this counts as this (the paper's 160).
    pub perplexity_cap: f64,
    /// Retrieval counts above this count as this.
    pub retrieval_cap: f64,
}

impl Default for Scale {
    fn default() -> Self {
        Self {
            perplexity_cap: 160.0,
            retrieval_cap: 10.0,
        }
    }
}

fn unit(value: f64) -> f64 {
    if value.is_finite() {
        value.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl Scale {
    /// The signals on [0, 1], in signal order (A, P, L, R1, R2).
    pub fn normalize(&self, s: &Signals) -> [f64; 5] {
        let cap = self.perplexity_cap.max(1.0);
        let rcap = self.retrieval_cap.max(1.0);
        [
            unit(s.arousal),
            unit(s.surprise.min(cap) / cap),
            unit((s.importance - 1.0) / 9.0),
            unit(s.r1 / rcap),
            unit(s.r2 / rcap),
        ]
    }
}

/// S = Σ wᵢ·xᵢ over normalized signals.
pub fn strength(weights: &Weights, normalized: &[f64; 5]) -> f64 {
    weights
        .as_array()
        .iter()
        .zip(normalized)
        .map(|(w, x)| w * x)
        .sum()
}

/// exp(−Δt / S), 0 when S ≤ 0, 1 when Δt ≤ 0 and S > 0.
pub fn importance(elapsed: f64, strength: f64) -> f64 {
    if !(strength.is_finite() && strength > 0.0) {
        return 0.0;
    }
    if elapsed <= 0.0 {
        return 1.0;
    }
    (-elapsed / strength).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A stronger memory keeps more importance at every age, and every memory fades.
        #[test]
        fn a_stronger_memory_decays_slower(
            dt in 0.01f64..100.0,
            s in 0.01f64..10.0,
            extra in 0.01f64..10.0,
            later in 0.01f64..100.0,
        ) {
            prop_assume!((dt + later) / s < 700.0);
            let (weak, strong) = (importance(dt, s), importance(dt, s + extra));
            prop_assert!(strong > weak);
            prop_assert!(importance(dt + later, s) < weak);
            prop_assert!(importance(dt + later, s + extra) < strong);
            prop_assert!(weak > 0.0 && strong < 1.0);
        }

        /// Normalized signals stay in [0, 1] whatever the raw values.
        #[test]
        fn normalized_signals_are_on_one_scale(
            a in -5.0f64..5.0, p in -10.0f64..1e6, l in -3.0f64..30.0,
            r1 in 0.0f64..100.0, r2 in 0.0f64..100.0,
        ) {
            let x = Scale::default().normalize(&Signals { arousal: a, surprise: p, importance: l, r1, r2 });
            prop_assert!(x.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }

    #[test]
    fn no_strength_means_no_importance() {
        assert_eq!(importance(1.0, 0.0), 0.0);
        assert_eq!(importance(1.0, -2.0), 0.0);
        assert_eq!(importance(1.0, f64::NAN), 0.0);
        assert_eq!(importance(0.0, 0.5), 1.0);
        assert!((importance(1.0, 2.0) - (-0.5f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn perplexity_is_capped_and_ratings_map_to_the_unit_interval() {
        let scale = Scale::default();
        let x = scale.normalize(&Signals {
            arousal: 0.5,
            surprise: 400.0,
            importance: 10.0,
            r1: 5.0,
            r2: 20.0,
        });
        assert_eq!(x, [0.5, 1.0, 1.0, 0.5, 1.0]);
        let x = scale.normalize(&Signals {
            surprise: 80.0,
            importance: 1.0,
            ..Signals::default()
        });
        assert_eq!(x[1], 0.5);
        assert_eq!(x[2], 0.0);
        // The paper's weights: arousal raises strength, perplexity lowers it, R1 raises it.
        let base = strength(&PAPER_WEIGHTS, &[0.5, 0.5, 0.5, 0.0, 0.0]);
        assert!(strength(&PAPER_WEIGHTS, &[0.9, 0.5, 0.5, 0.0, 0.0]) > base);
        assert!(strength(&PAPER_WEIGHTS, &[0.5, 0.9, 0.5, 0.0, 0.0]) < base);
        assert!(strength(&PAPER_WEIGHTS, &[0.5, 0.5, 0.5, 0.3, 0.0]) > base);
        assert!(strength(&PAPER_WEIGHTS, &[0.5, 0.5, 0.5, 0.0, 0.3]) < base);
    }
}
