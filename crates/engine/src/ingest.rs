//! Bulk ingest: many turns in batches, each session closed after its last turn, different
//! users' turns on several threads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use mnemos_core::Scope;

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};
use crate::jobs::JobReport;
use crate::memories::NewTurn;

/// How [`Engine::ingest`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngestOptions {
    /// Turns per write (one transaction, one embedding batch).
    pub batch: usize,
    /// Close each session (user, agent, session) right after its last turn in the input, so
    /// its mechanism can summarize it.
    pub close_sessions: bool,
    /// Threads writing at once, each with its own users (a user's turns stay in order on one
    /// thread). More than one lets a store that writes users in parallel (PostgreSQL) work
    /// while the next batch is analysed and embedded.
    pub workers: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            batch: 256,
            close_sessions: true,
            workers: 1,
        }
    }
}

/// What an ingest did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IngestReport {
    /// Turns stored now.
    pub added: usize,
    /// Turns whose key was already stored (an earlier run of the same input).
    pub duplicates: usize,
    /// Users the input names.
    pub users: usize,
    /// Sessions closed.
    pub sessions_closed: usize,
    pub jobs: JobReport,
}

impl IngestReport {
    fn absorb(&mut self, other: IngestReport) {
        self.added += other.added;
        self.duplicates += other.duplicates;
        self.sessions_closed += other.sessions_closed;
        self.jobs.absorb(other.jobs);
    }
}

/// Split `turns` into at most `workers` groups of whole users, keeping each user's turns in
/// input order, with the users' turn counts spread evenly (largest user first to the lightest
/// group); and the number of users.
fn split_by_user(turns: Vec<NewTurn>, workers: usize) -> (Vec<Vec<NewTurn>>, usize) {
    let mut by_user: BTreeMap<(String, String), Vec<NewTurn>> = BTreeMap::new();
    for turn in turns {
        let user = (turn.scope.tenant.clone(), turn.scope.user.clone());
        by_user.entry(user).or_default().push(turn);
    }
    let user_count = by_user.len();
    let mut users: Vec<Vec<NewTurn>> = by_user.into_values().collect();
    users.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut groups: Vec<Vec<NewTurn>> = (0..workers.clamp(1, users.len().max(1)))
        .map(|_| Vec::new())
        .collect();
    for user_turns in users {
        if let Some(lightest) = groups.iter_mut().min_by_key(|g| g.len()) {
            lightest.extend(user_turns);
        }
    }
    groups.retain(|g| !g.is_empty());
    (groups, user_count)
}

impl Engine {
    /// Commit `turns` in batches of `options.batch`, calling `progress` with the number of turns
    /// done after each batch. With `close_sessions`, each session is closed right after its
    /// last turn in the input — unless none of its turns was new (a re-run of an input that was
    /// ingested before closes nothing twice). With several `workers`, users are spread over
    /// threads; each user's turns are written in input order.
    ///
    /// A failure stops the ingest (every thread, after its current batch): what was committed
    /// before stays (its turns carry keys when the caller gave them, so running the same input
    /// again adds only the rest).
    pub fn ingest(
        &self,
        turns: Vec<NewTurn>,
        options: &IngestOptions,
        progress: &mut dyn FnMut(usize),
    ) -> EngineResult<IngestReport> {
        if options.batch == 0 {
            return Err(EngineError::config("ingest batch must be at least 1"));
        }
        if options.workers == 0 {
            return Err(EngineError::config("ingest workers must be at least 1"));
        }
        let (groups, user_count) = split_by_user(turns, options.workers);
        let stop = AtomicBool::new(false);
        let (done_tx, done_rx) = mpsc::channel::<usize>();
        let results: Vec<EngineResult<IngestReport>> = std::thread::scope(|threads| {
            let handles: Vec<_> = groups
                .into_iter()
                .map(|group| {
                    let done_tx = done_tx.clone();
                    let stop = &stop;
                    threads.spawn(move || {
                        let result = self.ingest_in_order(group, options, stop, &done_tx);
                        if result.is_err() {
                            stop.store(true, Ordering::SeqCst);
                        }
                        result
                    })
                })
                .collect();
            drop(done_tx);
            let mut done = 0;
            for step in done_rx {
                done += step;
                progress(done);
            }
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(EngineError::config("an ingest thread panicked")))
                })
                .collect()
        });
        let mut report = IngestReport {
            users: user_count,
            ..IngestReport::default()
        };
        let mut failure = None;
        for result in results {
            match result {
                Ok(part) => report.absorb(part),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// One thread's share of [`Engine::ingest`]: `turns` in order, reporting each batch's turn
    /// count on `done`, stopping between batches once `stop` is set.
    fn ingest_in_order(
        &self,
        turns: Vec<NewTurn>,
        options: &IngestOptions,
        stop: &AtomicBool,
        done_tx: &mpsc::Sender<usize>,
    ) -> EngineResult<IngestReport> {
        let mut last_of: HashMap<Scope, usize> = HashMap::new();
        for (i, turn) in turns.iter().enumerate() {
            last_of.insert(turn.scope.clone(), i);
        }
        let mut report = IngestReport::default();
        let mut with_new_turns: HashSet<Scope> = HashSet::new();
        let mut done = 0usize;
        let mut pending = turns.into_iter().peekable();
        while pending.peek().is_some() && !stop.load(Ordering::SeqCst) {
            let chunk: Vec<NewTurn> = pending.by_ref().take(options.batch).collect();
            let scopes: Vec<Scope> = chunk.iter().map(|t| t.scope.clone()).collect();
            let added = self.add(chunk).map_err(|e| EngineError::Ingest {
                committed: done,
                source: Box::new(e),
            })?;
            for (scope, turn) in scopes.iter().zip(&added.turns) {
                if turn.is_duplicate() {
                    report.duplicates += 1;
                } else {
                    report.added += 1;
                    with_new_turns.insert(scope.clone());
                }
            }
            report.jobs.absorb(added.jobs);
            let first = done;
            done += scopes.len();
            // The receiver only goes away when the caller is gone; nothing to tell then.
            let _ = done_tx.send(scopes.len());
            if !options.close_sessions {
                continue;
            }
            for (i, scope) in scopes.iter().enumerate() {
                let closes = last_of.get(scope) == Some(&(first + i));
                if closes && with_new_turns.contains(scope) {
                    report.jobs.absorb(self.end_session(scope).map_err(|e| {
                        EngineError::Ingest {
                            committed: done,
                            source: Box::new(e),
                        }
                    })?);
                    report.sessions_closed += 1;
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Scope;

    fn turn(user: &str, text: &str) -> NewTurn {
        NewTurn::user(Scope::new("t", user, "a", "s").unwrap(), text)
    }

    fn texts(group: &[NewTurn]) -> Vec<(String, String)> {
        group
            .iter()
            .map(|t| (t.scope.user.clone(), t.text.clone()))
            .collect()
    }

    #[test]
    fn users_are_split_whole_in_order_and_evenly() {
        let turns = vec![
            turn("ann", "a1"),
            turn("bob", "b1"),
            turn("ann", "a2"),
            turn("cy", "c1"),
            turn("ann", "a3"),
            turn("bob", "b2"),
        ];
        let (groups, users) = split_by_user(turns, 2);
        assert_eq!(users, 3);
        assert_eq!(groups.len(), 2);
        let all: Vec<Vec<(String, String)>> = groups.iter().map(|g| texts(g)).collect();
        let ann: Vec<(String, String)> = ["a1", "a2", "a3"]
            .iter()
            .map(|t| ("ann".to_string(), t.to_string()))
            .collect();
        assert!(all.contains(&ann), "ann alone, in order: {all:?}");
        let other = all.iter().find(|g| **g != ann).cloned().unwrap_or_default();
        assert_eq!(other.len(), 3, "bob and cy together: {other:?}");
        let bobs: Vec<&str> = other
            .iter()
            .filter(|(u, _)| u == "bob")
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(bobs, vec!["b1", "b2"]);
    }

    #[test]
    fn more_workers_than_users_leaves_no_empty_group() {
        let (groups, users) = split_by_user(vec![turn("ann", "a1")], 8);
        assert_eq!((groups.len(), users), (1, 1));
        assert_eq!(split_by_user(Vec::new(), 4), (Vec::new(), 0));
    }
}
