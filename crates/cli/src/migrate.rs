//! `mnemos migrate --from LOCATION --to LOCATION`: copy every user and API key from one store
//! to another, verified by checksums; a rerun skips what was copied (it resumes). And `mnemos
//! reembed`: move a database into another embedder's vector space (resumable too).

use anyhow::Result;
use clap::Args;

use mnemos_setup as setup;
use mnemos_setup::migrate::{migrated_user, migration_totals};
use mnemos_setup::{Config, StoreLocation};

use crate::output;
use crate::usage::usage;

#[derive(Args)]
pub struct MigrateArgs {
    /// The store to copy from: a SQLite file or `postgres://USER@HOST/DB`. Only read.
    #[arg(long)]
    from: String,
    /// The store to copy into (a SQLite file is created if missing).
    #[arg(long)]
    to: String,
    /// Print the report as JSON (instead of a line per user and the totals).
    #[arg(long)]
    json: bool,
}

pub fn run(config: &Config, args: MigrateArgs) -> Result<()> {
    let from: StoreLocation = args.from.parse()?;
    let to: StoreLocation = args.to.parse()?;
    if from.same_store(&to) {
        usage!("--from and --to name the same store ({from}); migrate copies between two stores");
    }
    if from.sqlite_path().is_some_and(|path| !path.is_file()) {
        usage!("there is no database at {from} to migrate from");
    }
    let at = |db: StoreLocation| Config {
        db,
        ..config.clone()
    };
    let source = setup::open_store(&at(from), false)?;
    let target = setup::open_store(&at(to), true)?;
    let json = args.json;
    let report = mnemos_setup::migrate(&*source, &*target, &mut |user| {
        if !json {
            print!("{}", migrated_user(user));
        }
    })?;
    output::emit(json, &report, || migration_totals(&report))
}

/// `mnemos reembed`, with a bar of the memories embedded on stderr.
pub fn reembed(config: &Config, args: &setup::cli::ReembedArgs) -> Result<()> {
    let bar = crate::progress::bar(0, "re-embedding");
    let report = setup::cli::reembed(config, args, &mut |step| {
        bar.set_length(step.total);
        bar.set_position(step.done);
    });
    bar.finish_and_clear();
    print!("{}", report?);
    Ok(())
}
