//! Progress on the terminal: bars for long loops, and a line while derived work waits on a
//! memory model (an LLM endpoint can take seconds, or never answer).

use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;

use mnemos_core::Job;
use mnemos_engine::JobProgress;

/// A bar over `total` steps labelled `what` (hidden when stderr is not a terminal).
pub fn bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

/// How long a job may run before the first "waiting" line.
const QUIET_FOR: Duration = Duration::from_secs(3);
/// Time between "waiting" lines.
const EVERY: Duration = Duration::from_secs(10);

struct Running {
    what: String,
    model: String,
    since: Instant,
    last_said: Option<Instant>,
}

/// Prints "waiting on MODEL for JOB (N s)…" on stderr while a derived job runs longer than a
/// few seconds, so a slow or dead endpoint is never a silent hang.
pub struct ModelWait {
    running: Mutex<Option<Running>>,
}

impl ModelWait {
    /// Start the watcher thread (it ends with the process).
    pub fn start() -> Arc<Self> {
        let wait = Arc::new(ModelWait {
            running: Mutex::new(None),
        });
        let watched = Arc::clone(&wait);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            watched.tick();
        });
        wait
    }

    fn tick(&self) {
        let mut running = self.running.lock();
        let Some(job) = running.as_mut() else { return };
        let waited = job.since.elapsed();
        let due = match job.last_said {
            None => waited >= QUIET_FOR,
            Some(said) => said.elapsed() >= EVERY,
        };
        if due {
            eprintln!(
                "… waiting on the memory model {} for {} ({} s so far)",
                job.model,
                job.what,
                waited.as_secs()
            );
            job.last_said = Some(Instant::now());
        }
    }
}

impl JobProgress for ModelWait {
    fn started(&self, job: &Job, model: &str) {
        *self.running.lock() = Some(Running {
            what: format!("a {} job of {}", job.kind, job.scope.user),
            model: model.to_string(),
            since: Instant::now(),
            last_said: None,
        });
    }

    fn finished(&self, _job: &Job, _elapsed: Duration, error: Option<&str>) {
        let was = self.running.lock().take();
        if let (Some(job), Some(error)) = (was, error) {
            if job.last_said.is_some() {
                eprintln!("… {} failed: {error}", job.what);
            }
        }
    }
}
