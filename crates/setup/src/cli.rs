//! The `mnemos reembed` command's flags and run (behind the `clap` feature), so the binary
//! only parses, draws progress and prints.

use clap::Args;

use mnemos_engine::{EngineError, EngineResult, ReembedOptions, ReembedReport, ReembedStep};

use crate::Config;

/// `mnemos reembed`: move the database into the configured embedder's vector space.
#[derive(Args, Clone, Debug)]
pub struct ReembedArgs {
    /// After the switch, delete the vectors of every other embedder.
    #[arg(long)]
    pub drop_old: bool,
    /// Memories embedded and committed at a time (what an interrupted run redoes at most).
    #[arg(long, default_value_t = ReembedOptions::default().batch)]
    pub batch: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `mnemos reembed` (see [`crate::reembed`]); the report as the text to print.
pub fn reembed(
    config: &Config,
    args: &ReembedArgs,
    progress: &mut dyn FnMut(ReembedStep),
) -> EngineResult<String> {
    let options = ReembedOptions {
        drop_old: args.drop_old,
        batch: args.batch,
    };
    let report = crate::reembed(config, options, progress)?;
    if args.json {
        return serde_json::to_string_pretty(&report)
            .map(|json| json + "\n")
            .map_err(|e| EngineError::config(format!("the report does not serialize: {e}")));
    }
    Ok(describe(&report))
}

/// The report in words: counts, and the binding before and after.
pub fn describe(report: &ReembedReport) -> String {
    let previous = report.previous.as_deref().unwrap_or("no embedder");
    let mut text = format!(
        "embedded {} memories, {} already present, over {} users\n\
         the database is bound to {} (was {previous})\n",
        report.embedded, report.already_present, report.users, report.model
    );
    if report.dropped > 0 {
        text.push_str(&format!(
            "deleted {} vectors of other embedders\n",
            report.dropped
        ));
    }
    text
}
