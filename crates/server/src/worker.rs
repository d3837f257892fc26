//! Derived work in the background: when the engine does not run jobs inline, the server runs
//! every user's pending jobs on the blocking pool, at start (replaying what a crash or restart
//! left) and then every `interval`, backing off while jobs fail. Requests never wait for it.
//!
//! Each round also moves vectors into the store's index when the store defers indexing
//! (PostgreSQL with pgvector): a bounded slice per round, rounds back to back while a backlog
//! is left. Until then searches read those vectors exactly, so this changes speed, not results.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use mnemos_engine::Engine;

use crate::metrics::Metrics;

/// Vectors indexed per store transaction while catching up.
const CATCH_UP_BATCH: usize = 256;
/// Time spent catching up the vector index per round, at most (about).
const CATCH_UP_BUDGET: Duration = Duration::from_millis(500);
/// The wait between rounds while the vector index has a backlog.
const CATCH_UP_PAUSE: Duration = Duration::from_millis(20);

/// How often the worker looks for pending jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobWorker {
    pub interval: Duration,
    /// The longest wait after repeated failures.
    pub max_backoff: Duration,
}

impl Default for JobWorker {
    fn default() -> Self {
        JobWorker {
            interval: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl JobWorker {
    /// The wait after a round: back to the interval when nothing failed, twice the last wait
    /// (at most `max_backoff`) while jobs (or the round itself) fail.
    pub fn next_wait(&self, last: Duration, failed: bool) -> Duration {
        if failed {
            (last * 2).clamp(self.interval, self.max_backoff)
        } else {
            self.interval
        }
    }

    /// Run until `stop` turns true; a round in progress finishes first.
    pub(crate) async fn run(
        self,
        engine: Arc<Engine>,
        metrics: Arc<Metrics>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut wait = self.interval;
        loop {
            let round_engine = Arc::clone(&engine);
            let report = tokio::task::spawn_blocking(move || round_engine.run_all_pending()).await;
            match report {
                Ok(Ok(report)) => {
                    metrics.record_jobs(&report);
                    for (id, error) in &report.errors {
                        eprintln!("job {id} failed (retried later): {error}");
                    }
                    wait = self.next_wait(wait, report.failed > 0);
                }
                Ok(Err(error)) => {
                    eprintln!("running pending jobs failed (retried later): {error}");
                    wait = self.next_wait(wait, true);
                }
                Err(error) => eprintln!("the job worker's task failed: {error}"),
            }
            let index_engine = Arc::clone(&engine);
            let backlog = tokio::task::spawn_blocking(move || catch_up_vectors(&index_engine))
                .await
                .unwrap_or(false);
            let pause = if backlog {
                CATCH_UP_PAUSE.min(wait)
            } else {
                wait
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = stop.wait_for(|stopped| *stopped) => return,
            }
        }
    }
}

/// Index vectors the store has not caught up with for about [`CATCH_UP_BUDGET`]; whether a
/// backlog is left. A failure is reported and left for the next round.
fn catch_up_vectors(engine: &Engine) -> bool {
    let started = Instant::now();
    loop {
        match engine.catch_up_vectors(CATCH_UP_BATCH) {
            Ok(Some(step)) if step.remaining > 0 => {
                // Nothing moved: another server is rebuilding the index; look again later.
                if step.indexed == 0 || started.elapsed() >= CATCH_UP_BUDGET {
                    return true;
                }
            }
            Ok(_) => return false,
            Err(error) => {
                eprintln!("indexing stored vectors failed (retried later): {error}");
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_while_jobs_fail_and_reset_after() {
        let worker = JobWorker {
            interval: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        let mut wait = worker.interval;
        let mut waits = Vec::new();
        for _ in 0..4 {
            wait = worker.next_wait(wait, true);
            waits.push(wait.as_millis());
        }
        assert_eq!(waits, vec![200, 350, 350, 350]);
        assert_eq!(worker.next_wait(wait, false), worker.interval);
    }
}
