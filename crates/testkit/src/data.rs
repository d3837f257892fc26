//! The benchmark datasets for the tests that read them. They are never copied into the
//! repository: they live in `shared/data` beside it (or wherever `MNEMOS_DATA` points). A clone
//! without them still passes its tests: each such test says it was skipped and why, unless
//! `MNEMOS_REQUIRE_DATA=1` (CI sets it), where a missing dataset fails the test, so a run can
//! never pass by silently skipping them.
//!
//! ```ignore
//! #[test]
//! fn locomo_loads() -> Result<(), MissingData> {
//!     let Some(path) = mnemos_testkit::data::dataset("locomo/locomo10_dev.json")? else {
//!         return Ok(()); // skipped, and said so
//!     };
//!     // …
//!     Ok(())
//! }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

/// Set to `1` to make a missing dataset a failure instead of a skip.
pub const REQUIRE_DATA: &str = "MNEMOS_REQUIRE_DATA";
/// Where the datasets are, when not in `shared/data` beside the repository.
pub const DATA_DIR: &str = "MNEMOS_DATA";

/// A dataset the run requires is not there.
#[derive(thiserror::Error)]
#[error(
    "dataset {} not found, and {REQUIRE_DATA}=1 requires it: clone the shared datasets into \
     shared/data beside the repository, or point {DATA_DIR} at them",
    path.display()
)]
pub struct MissingData {
    pub path: PathBuf,
}

// A test that returns this error prints it with `Debug`: the sentence says what to do.
impl std::fmt::Debug for MissingData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The datasets' directory: `MNEMOS_DATA`, else `shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    match std::env::var_os(DATA_DIR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        // This crate is `<repository>/crates/testkit`.
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// `relative` (a file or a directory) under [`data_dir`], when it is there. When it is not:
/// [`MissingData`] if the run requires the datasets, else `None` after telling the terminal
/// that the calling test is skipped and why.
pub fn dataset(relative: &str) -> Result<Option<PathBuf>, MissingData> {
    let path = data_dir().join(relative);
    let required = std::env::var(REQUIRE_DATA).is_ok_and(|v| v.trim() == "1");
    let found = decide(path.clone(), |p| p.exists(), required)?;
    if found.is_none() {
        say_skipped(&path);
    }
    Ok(found)
}

fn say_skipped(path: &Path) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    // Straight to stderr: the test harness captures `eprintln!` of passing tests, and a skip
    // must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: dataset {} not found (clone the shared datasets into shared/data beside \
         the repository, or set {DATA_DIR}; {REQUIRE_DATA}=1 makes this a failure)",
        path.display()
    );
}

/// Skip or fail: the path when it exists; otherwise an error when required, else nothing.
fn decide(
    path: PathBuf,
    exists: impl Fn(&Path) -> bool,
    required: bool,
) -> Result<Option<PathBuf>, MissingData> {
    match (exists(&path), required) {
        (true, _) => Ok(Some(path)),
        (false, true) => Err(MissingData { path }),
        (false, false) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_dataset_is_skipped_unless_required() {
        let path = PathBuf::from("locomo/x.json");
        assert_eq!(
            decide(path.clone(), |_| true, true).ok(),
            Some(Some(path.clone()))
        );
        assert_eq!(decide(path.clone(), |_| false, false).ok(), Some(None));
        let missing = decide(path, |_| false, true).err().map(|e| e.to_string());
        assert!(
            missing.is_some_and(|m| m.contains("locomo/x.json") && m.contains(REQUIRE_DATA)),
            "a required dataset fails naming itself and the switch"
        );
    }
}
