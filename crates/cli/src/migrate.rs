//! `mnemos migrate --from LOCATION --to LOCATION`: copy every user and API key from one store
//! to another (a SQLite file to PostgreSQL, or back), verified by checksums; running it again
//! skips what was copied, so an interrupted migration resumes.

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

/// Do two locations name the same store? (The same file under two paths counts.)
fn same_store(a: &StoreLocation, b: &StoreLocation) -> bool {
    match (a.sqlite_path(), b.sqlite_path()) {
        (Some(x), Some(y)) => {
            x == y || matches!((x.canonicalize(), y.canonicalize()), (Ok(x), Ok(y)) if x == y)
        }
        _ => a == b,
    }
}

pub fn run(config: &Config, args: MigrateArgs) -> Result<()> {
    let from: StoreLocation = args.from.parse()?;
    let to: StoreLocation = args.to.parse()?;
    if same_store(&from, &to) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_under_two_paths_is_one_store() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.db");
        std::fs::write(&file, b"").unwrap();
        let direct = StoreLocation::Sqlite(file.clone());
        let roundabout = StoreLocation::Sqlite(dir.path().join(".").join("m.db"));
        assert!(same_store(&direct, &roundabout));
        assert!(!same_store(
            &direct,
            &StoreLocation::Sqlite(dir.path().join("other.db"))
        ));
        let pg = StoreLocation::Postgres("postgres://u@h/d".into());
        assert!(same_store(&pg, &pg.clone()));
        assert!(!same_store(&pg, &direct));
    }
}
