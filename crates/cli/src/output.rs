//! Printing what the engine returns: its text renderings ([`mnemos_render`]) on
//! stdout, job problems on stderr.

use mnemos_engine::JobReport;
use mnemos_render as render;

/// What derived jobs did: the summary on stdout, failures and stuck jobs on stderr.
pub fn print_jobs(jobs: &JobReport) {
    let (summary, problems) = render::job_report(jobs);
    print!("{summary}");
    eprint!("{problems}");
}

/// A command's result as pretty JSON (`--json`), or as its text rendering: one rule for every
/// command, so `--json` always means the same thing.
pub fn emit<T: serde::Serialize + ?Sized>(
    json: bool,
    value: &T,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", text());
    }
    Ok(())
}
