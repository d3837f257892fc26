//! Competition-inhibition forgetting (MOOM §3.3, eq. 3) and the Ebbinghaus curve it is
//! compared with, over the same pool of plot memories and the same retrieval events.
//!
//! Every round r_c, the new user utterance retrieves the top 2k plot memories by relevance. The
//! first k are *reinforced*: r_c joins their retrieval rounds R_c. The next k are *suppressed*:
//! their score is halved. The rest are untouched. Each memory's score is
//!
//! S = α / (exp(γ(r_c − b)) + (1 − ε)) + β · Σ_{r ∈ R_c} 1 / (r_c − r + ε)
//!
//! (b = the round it was made). Under a capacity C, the lowest scores beyond C are forgotten,
//! each as a recorded state change with its score in the reason.
//!
//! How the halving is read (`suppression`):
//! - `round` (default, the paper's wording): the halved score decides this round's cut only; the
//!   next round recomputes S from eq. 3. A memory that keeps being suppressed keeps losing its
//!   cuts while it is suppressed.
//! - `persistent`: a suppression factor is kept in `metrics.inhibition` (absent = 1), halved by
//!   each suppression and multiplied into every later score; being reinforced restores it to 1
//!   (the memory proved relevant again).
//! - `off`: reinforcement only.
//!
//! The Ebbinghaus policy scores R = exp(−Δ / (c·s)) with Δ the rounds since the last retrieval
//! (or creation) and s = 1 + the number of retrievals, the same events strengthening it; it has
//! no suppression. Under `none` nothing is forgotten.

use mnemos_core::Memory;

/// Metadata key: the rounds in which a memory was among the top k (comma-separated, newest
/// last, at most [`RETRIEVALS_KEPT`]).
pub const RETRIEVED_KEY: &str = "moom.retrieved";
/// Older retrieval rounds add at most β/64 each to S; they are dropped to keep metadata small.
pub const RETRIEVALS_KEPT: usize = 64;

/// Which forgetting policy runs on the plot pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Competition,
    Ebbinghaus,
    None,
}

impl Policy {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "competition" => Ok(Policy::Competition),
            "ebbinghaus" => Ok(Policy::Ebbinghaus),
            "none" => Ok(Policy::None),
            other => Err(format!(
                "forgetting = '{other}': expected competition, ebbinghaus or none"
            )),
        }
    }
}

/// How the suppressed half of the top 2k is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suppression {
    Round,
    Persistent,
    Off,
}

impl Suppression {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "round" => Ok(Suppression::Round),
            "persistent" => Ok(Suppression::Persistent),
            "off" => Ok(Suppression::Off),
            other => Err(format!(
                "suppression = '{other}': expected round, persistent or off"
            )),
        }
    }
}

/// The constants of eq. 3.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Competition {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub epsilon: f64,
}

impl Competition {
    /// S at round `now` of a memory made at round `created` and retrieved in `retrievals`
    /// (rounds after `now` are ignored: a replay at an earlier moment decides the same).
    pub fn score(&self, now: u64, created: u64, retrievals: &[u64]) -> f64 {
        let age = now.saturating_sub(created) as f64;
        // exp overflows to +inf for very old memories: the decay term is then exactly 0.
        let decay = self.alpha / ((self.gamma * age).exp() + (1.0 - self.epsilon));
        let reinforcement: f64 = retrievals
            .iter()
            .filter(|r| **r <= now)
            .map(|r| 1.0 / ((now - r) as f64 + self.epsilon))
            .sum();
        decay + self.beta * reinforcement
    }
}

/// Ebbinghaus retention over rounds, strengthened by retrievals.
pub fn ebbinghaus(now: u64, created: u64, retrievals: &[u64], time_scale: f64) -> f64 {
    let seen: Vec<u64> = retrievals.iter().copied().filter(|r| *r <= now).collect();
    let last = seen.iter().copied().max().unwrap_or(created).max(created);
    let strength = 1.0 + seen.len() as f64;
    let elapsed = now.saturating_sub(last) as f64;
    crate::primitives::ebbinghaus_retention(elapsed, strength, time_scale)
}

/// The retrieval rounds recorded on a memory (malformed entries are skipped).
pub fn retrievals(memory: &Memory) -> Vec<u64> {
    memory
        .metadata
        .get(RETRIEVED_KEY)
        .map(|s| {
            s.split(',')
                .filter_map(|r| r.trim().parse::<u64>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `rounds` plus `round`, newest last, at most [`RETRIEVALS_KEPT`], as metadata text.
pub fn with_retrieval(rounds: &[u64], round: u64) -> String {
    let mut all: Vec<u64> = rounds.to_vec();
    if !all.contains(&round) {
        all.push(round);
    }
    all.sort_unstable();
    let skip = all.len().saturating_sub(RETRIEVALS_KEPT);
    all[skip..]
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The persistent suppression factor of a memory (1 when never suppressed).
pub fn inhibition(memory: &Memory) -> f64 {
    memory
        .metrics
        .inhibition
        .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1.0)
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PAPER: Competition = Competition {
        alpha: 0.1,
        beta: 0.9,
        gamma: 1.0,
        epsilon: 1e-3,
    };

    #[test]
    fn a_fresh_memory_scores_about_alpha_over_two() {
        let s = PAPER.score(10, 10, &[]);
        assert!((s - 0.1 / (2.0 - 1e-3)).abs() < 1e-12, "{s}");
        assert_eq!(PAPER.score(5000, 0, &[]), 0.0);
    }

    #[test]
    fn retrieval_rounds_round_trip_and_stay_bounded() {
        let mut rounds: Vec<u64> = Vec::new();
        for r in 0..100u64 {
            let text = with_retrieval(&rounds, r);
            let mut memory = Memory::from_turn(&mnemos_core::Turn {
                id: mnemos_core::TurnId::new(),
                scope: mnemos_core::Scope::new("t", "u", "a", "s").unwrap(),
                role: mnemos_core::Role::User,
                speaker: None,
                text: "x".into(),
                at: mnemos_core::Moment::default(),
                metadata: Default::default(),
                key: None,
            });
            memory.metadata.insert(RETRIEVED_KEY.into(), text);
            rounds = retrievals(&memory);
        }
        assert_eq!(rounds.len(), RETRIEVALS_KEPT);
        assert_eq!(rounds.last(), Some(&99));
        assert_eq!(with_retrieval(&[3, 5], 5), "3,5");
    }

    proptest! {
        /// Time only lowers a memory's score; a retrieval only raises it; a recent retrieval
        /// counts more than an old one.
        #[test]
        fn competition_scores_behave(
            created in 0u64..1000,
            age in 0u64..1000,
            later in 1u64..1000,
            mut past in proptest::collection::vec(0u64..1000, 0..8),
            alpha in 0.01f64..1.0,
            gamma in 0.01f64..3.0,
        ) {
            let c = Competition { alpha, beta: 1.0 - alpha, gamma, epsilon: 1e-3 };
            let now = created + age;
            past.retain(|r| *r >= created && *r <= now);
            let s = c.score(now, created, &past);
            prop_assert!(s.is_finite() && s >= 0.0);
            prop_assert!(c.score(now + later, created, &past) <= s);
            let mut more = past.clone();
            more.push(now);
            prop_assert!(c.score(now, created, &more) > s);
            if now > created {
                let recent = c.score(now, created, &[now]);
                let old = c.score(now, created, &[created]);
                prop_assert!(recent > old);
            }
        }

        /// Ebbinghaus retention is in (0, 1], falls with time, and retrievals slow it down.
        #[test]
        fn ebbinghaus_scores_behave(
            created in 0u64..1000,
            age in 0u64..500,
            later in 1u64..500,
            c in 1.0f64..200.0,
        ) {
            let now = created + age;
            let r = ebbinghaus(now, created, &[], c);
            prop_assert!(r > 0.0 && r <= 1.0);
            prop_assert!(ebbinghaus(now + later, created, &[], c) < r || r == 0.0);
            let strengthened = ebbinghaus(now + later, created, &[now], c);
            prop_assert!(strengthened >= ebbinghaus(now + later, created, &[], c));
        }
    }
}
