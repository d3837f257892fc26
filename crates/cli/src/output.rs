//! Printing what the engine returns: its text renderings ([`mnemos_engine::render`]) on
//! stdout, job problems on stderr.

use mnemos_engine::JobReport;
use mnemos_render as render;

/// What derived jobs did: the summary on stdout, failures and stuck jobs on stderr.
pub fn print_jobs(jobs: &JobReport) {
    let (summary, problems) = render::job_report(jobs);
    print!("{summary}");
    eprint!("{problems}");
}
