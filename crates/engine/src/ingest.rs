//! Bulk ingest: many turns in batches, each session closed after its last turn.

use std::collections::{BTreeSet, HashMap, HashSet};

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
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            batch: 256,
            close_sessions: true,
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

impl Engine {
    /// Commit `turns` in batches of `options.batch`, calling `progress` with the number of turns
    /// done after each batch. With `close_sessions`, each session is closed right after its
    /// last turn in the input — unless none of its turns was new (a re-run of an input that was
    /// ingested before closes nothing twice).
    ///
    /// A failure stops the ingest: what was committed before stays (its turns carry keys when
    /// the caller gave them, so running the same input again adds only the rest).
    pub fn ingest(
        &self,
        turns: Vec<NewTurn>,
        options: &IngestOptions,
        progress: &mut dyn FnMut(usize),
    ) -> EngineResult<IngestReport> {
        if options.batch == 0 {
            return Err(EngineError::config("ingest batch must be at least 1"));
        }
        let mut last_of: HashMap<Scope, usize> = HashMap::new();
        for (i, turn) in turns.iter().enumerate() {
            last_of.insert(turn.scope.clone(), i);
        }
        let users: BTreeSet<(String, String)> = turns
            .iter()
            .map(|t| (t.scope.tenant.clone(), t.scope.user.clone()))
            .collect();
        let mut report = IngestReport {
            users: users.len(),
            ..IngestReport::default()
        };
        let mut with_new_turns: HashSet<Scope> = HashSet::new();
        let mut done = 0usize;
        let mut pending = turns.into_iter().peekable();
        while pending.peek().is_some() {
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
            progress(done);
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
