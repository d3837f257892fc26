//! LUFY Table 12 from the data: agreement with the annotators per session number and overall,
//! for what a preset keeps, for keeping a random share, and between the annotators themselves.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use mnemos_core::Role;

use crate::lufy::{LufyDataset, LufySession, LufyTurn};
use crate::scoring::importance_agreement;

/// Random keeps averaged into the random row (a fixed seed: the row is reproducible).
pub const RANDOM_DRAWS: usize = 200;
const RANDOM_SEED: u64 = 0x1fe5_2024;

/// One row of the table: agreement in each session number and overall.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table12Row {
    pub row: String,
    /// In the order of [`session_numbers`]; `None` where nothing was kept.
    pub sessions: Vec<Option<f64>>,
    /// Every session pooled.
    pub overall: f64,
}

/// The session numbers of the dataset, ascending (the table's columns).
pub fn session_numbers(dataset: &LufyDataset) -> Vec<u64> {
    dataset
        .sessions
        .iter()
        .map(|s| s.session)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn streamed_user(turn: &LufyTurn) -> bool {
    turn.role == Role::User && !turn.utterance.trim().is_empty()
}

/// The mean annotator agreement of a keep rule, per session number and pooled.
pub fn row_of(
    dataset: &LufyDataset,
    row: &str,
    kept: impl Fn(&LufySession, &LufyTurn) -> bool,
) -> Table12Row {
    let sessions = session_numbers(dataset)
        .into_iter()
        .map(|n| {
            let a = importance_agreement(dataset, |s, t| s.session == n && kept(s, t));
            (a.kept > 0).then_some(a.mean)
        })
        .collect();
    Table12Row {
        row: row.to_string(),
        sessions,
        overall: importance_agreement(dataset, kept).mean,
    }
}

/// splitmix64: a small, seeded generator (the row must not depend on a crate's algorithm).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Keeping `share` of each session's user utterances (rounded, at least one) at random, as a
/// forgetting preset would keep them: the mean over [`RANDOM_DRAWS`] seeded draws.
pub fn random_row(dataset: &LufyDataset, share: f64) -> Table12Row {
    let mut rng = SplitMix(RANDOM_SEED);
    let columns = session_numbers(dataset).len();
    let mut sums = vec![(0.0, 0usize); columns];
    let mut overall = 0.0;
    for _ in 0..RANDOM_DRAWS {
        let mut kept: BTreeSet<(String, i64)> = BTreeSet::new();
        for session in &dataset.sessions {
            let users: Vec<&LufyTurn> = session.turns.iter().filter(|t| streamed_user(t)).collect();
            if users.is_empty() {
                continue;
            }
            let keep = ((users.len() as f64 * share).round() as usize).clamp(1, users.len());
            // A partial Fisher–Yates shuffle picks `keep` distinct utterances.
            let mut order: Vec<usize> = (0..users.len()).collect();
            for i in 0..keep {
                let j = i + rng.below(users.len() - i);
                order.swap(i, j);
            }
            for &i in order.iter().take(keep) {
                if let Some(turn) = users.get(i) {
                    kept.insert((session.id(), turn.idx));
                }
            }
        }
        let row = row_of(dataset, "", |s, t| kept.contains(&(s.id(), t.idx)));
        for (sum, value) in sums.iter_mut().zip(&row.sessions) {
            if let Some(v) = value {
                sum.0 += v;
                sum.1 += 1;
            }
        }
        overall += row.overall;
    }
    Table12Row {
        row: format!("(random {:.0}%)", share * 100.0),
        sessions: sums
            .into_iter()
            .map(|(sum, n)| (n > 0).then(|| sum / n as f64))
            .collect(),
        overall: overall / RANDOM_DRAWS as f64,
    }
}

/// Human–human agreement: for every ordered pair of annotators (a, b), the share of the
/// utterances a marked important that b marked too; the mean over pairs, per session number
/// and pooled.
pub fn annotators_row(dataset: &LufyDataset) -> Table12Row {
    let pairwise = |filter: &dyn Fn(&LufySession) -> bool| -> Option<f64> {
        let mut pairs: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
        for session in dataset.sessions.iter().filter(|s| filter(s)) {
            for turn in session.turns.iter().filter(|t| streamed_user(t)) {
                for (a, marked_a) in &turn.important {
                    if !marked_a {
                        continue;
                    }
                    for (b, marked_b) in turn.important.iter().filter(|(b, _)| *b != a) {
                        let entry = pairs.entry((a.as_str(), b.as_str())).or_default();
                        entry.0 += 1;
                        entry.1 += usize::from(*marked_b);
                    }
                }
            }
        }
        let shares: Vec<f64> = pairs
            .values()
            .map(|(n, both)| *both as f64 / (*n).max(1) as f64)
            .collect();
        (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64)
    };
    Table12Row {
        row: "(annotators)".into(),
        sessions: session_numbers(dataset)
            .into_iter()
            .map(|n| pairwise(&|s: &LufySession| s.session == n))
            .collect(),
        overall: pairwise(&|_: &LufySession| true).unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(idx: i64, votes: &[bool]) -> LufyTurn {
        LufyTurn {
            idx,
            speaker: "Ann".into(),
            role: Role::User,
            utterance: format!("turn {idx}"),
            important: votes
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("A{i}"), *v))
                .collect(),
        }
    }

    fn dataset() -> LufyDataset {
        let session = |number: u64, turns: Vec<LufyTurn>| LufySession {
            system: "LUFY".into(),
            user: "Ann".into(),
            session: number,
            annotators: vec!["A0".into(), "A1".into()],
            turns,
            qa: Vec::new(),
        };
        LufyDataset {
            sessions: vec![
                session(
                    1,
                    vec![
                        turn(1, &[true, true]),
                        turn(2, &[true, false]),
                        turn(3, &[false, false]),
                        turn(4, &[false, false]),
                    ],
                ),
                session(2, vec![turn(1, &[false, true]), turn(2, &[false, false])]),
            ],
            defects: Vec::new(),
        }
    }

    #[test]
    fn annotators_agree_pairwise() {
        let row = annotators_row(&dataset());
        // Session 1: A0 marked 1, 2 (A1 agrees on 1: 0.5); A1 marked 1 (A0 agrees: 1.0).
        assert_eq!(row.sessions[0], Some(0.75));
        // Session 2: only A1 marked one, A0 did not: 0.0 for (A1, A0); (A0, A1) undefined.
        assert_eq!(row.sessions[1], Some(0.0));
        // Pooled: (A0, A1) 1/2, (A1, A0) 1/2.
        assert_eq!(row.overall, 0.5);
    }

    #[test]
    fn a_keep_rule_is_scored_per_session_and_pooled() {
        let data = dataset();
        let row = row_of(&data, "first", |_, t| t.idx == 1);
        // Session 1 keeps turn 1 (both marked): 1.0; session 2 keeps turn 1 (A1 only): 0.5.
        assert_eq!(row.sessions, vec![Some(1.0), Some(0.5)]);
        assert_eq!(row.overall, 0.75);
        let none = row_of(&data, "none", |_, _| false);
        assert_eq!(none.sessions, vec![None, None]);
    }

    #[test]
    fn random_keeps_approach_the_base_rate() {
        let data = dataset();
        let random = random_row(&data, 0.5);
        let base = importance_agreement(&data, |_, _| true).mean;
        assert!((random.overall - base).abs() < 0.1, "{random:?} vs {base}");
        assert_eq!(random_row(&data, 0.5), random, "seeded");
    }
}
