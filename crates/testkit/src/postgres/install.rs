//! Where the PostgreSQL binaries come from: Debian's `postgresql` package, or the PostgreSQL
//! (with pgvector) that the PyPI wheel `pgserver` bundles, fetched once with pip, checked
//! against its pinned SHA-256 and unpacked into the temporary directory.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::PgError;

/// The pinned wheel: PostgreSQL 16.2 and pgvector 0.6.2, built for manylinux2014 x86_64.
const WHEEL_SPEC: &str = "pgserver==0.1.4";
const WHEEL_FILE: &str =
    "pgserver-0.1.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
const WHEEL_SHA256: &str = "1a5d07c61d51f2abfef4ef61e2ef5cd014b994f7e09de8d3c140d2cf370e84a8";
/// Unpacked under the temporary directory; the name carries the version so a new pin never
/// reuses an old tree.
const UNPACKED_DIR: &str = "mnemos-pgserver-0.1.4";
/// The wheel's PostgreSQL prefix (bin, lib, share) and its relocated shared libraries.
const PREFIX_IN_WHEEL: &str = "pgserver/pginstall/";
const LIBS_IN_WHEEL: &str = "pgserver.libs/";
/// Debian installs each major version under this directory.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// A PostgreSQL installation the tests can start servers from.
#[derive(Clone, Debug)]
pub struct PgInstall {
    /// Directory holding `initdb`, `postgres`, `pg_ctl`.
    pub bin: PathBuf,
    /// Extra shared-library directory the binaries need (`LD_LIBRARY_PATH`), if any.
    pub libs: Option<PathBuf>,
    /// Whether the pgvector extension is installed alongside.
    pub pgvector: bool,
    /// What this is, for messages: "Debian PostgreSQL 15", "pgserver 0.1.4 (PostgreSQL 16.2)".
    pub label: String,
}

impl PgInstall {
    /// PostgreSQL with pgvector: `$MNEMOS_PG_DIR` (a prefix with `bin/` and, for a relocated
    /// build, `../pgserver.libs`) when set, otherwise the pinned `pgserver` wheel.
    pub fn bundled() -> Result<PgInstall, PgError> {
        if let Some(dir) = std::env::var_os("MNEMOS_PG_DIR") {
            return Self::from_prefix(Path::new(&dir), "PostgreSQL from $MNEMOS_PG_DIR");
        }
        let root = std::env::temp_dir().join(UNPACKED_DIR);
        if !root.join("ready").is_file() {
            unpack_wheel(&root)?;
        }
        check_trusted(&root)?;
        Self::from_prefix(
            &root.join(PREFIX_IN_WHEEL),
            "pgserver 0.1.4 (PostgreSQL 16.2)",
        )
    }

    /// Debian's `postgresql` package (the highest major version installed). It has no pgvector.
    pub fn system() -> Result<PgInstall, PgError> {
        let newest = fs::read_dir(DEBIAN_ROOT)
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|major| Path::new(DEBIAN_ROOT).join(major.to_string()).join("bin/initdb").is_file())
            .max()
            .ok_or_else(|| {
                PgError::Missing(format!(
                    "no PostgreSQL server under {DEBIAN_ROOT} (install Debian's `postgresql` package; `.ci/run` does)"
                ))
            })?;
        let prefix = Path::new(DEBIAN_ROOT).join(newest.to_string());
        let mut install = Self::from_prefix(&prefix, &format!("Debian PostgreSQL {newest}"))?;
        install.pgvector = has_pgvector(&prefix) || debian_share_has_pgvector(newest);
        Ok(install)
    }

    fn from_prefix(prefix: &Path, label: &str) -> Result<PgInstall, PgError> {
        let bin = prefix.join("bin");
        for tool in ["initdb", "postgres", "pg_ctl"] {
            if !bin.join(tool).is_file() {
                return Err(PgError::Missing(format!(
                    "{label}: no {tool} in {}",
                    bin.display()
                )));
            }
        }
        let libs = prefix
            .parent()
            .map(|p| p.join("pgserver.libs"))
            .filter(|p| p.is_dir());
        Ok(PgInstall {
            bin,
            libs,
            pgvector: has_pgvector(prefix),
            label: label.to_string(),
        })
    }

    /// A command for one of the installation's programs, with its library path set.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some(libs) = &self.libs {
            command.env("LD_LIBRARY_PATH", libs);
        }
        command
    }
}

fn has_pgvector(prefix: &Path) -> bool {
    prefix.join("share/extension/vector.control").is_file()
        || prefix
            .join("share/postgresql/extension/vector.control")
            .is_file()
}

fn debian_share_has_pgvector(major: u32) -> bool {
    Path::new(&format!(
        "/usr/share/postgresql/{major}/extension/vector.control"
    ))
    .is_file()
}

/// Refuse a tree another user could have planted or can still change: the tests run its
/// binaries.
fn check_trusted(root: &Path) -> Result<(), PgError> {
    let meta = fs::metadata(root).map_err(PgError::io(root))?;
    let me = fs::metadata("/proc/self").map_err(PgError::io(Path::new("/proc/self")))?;
    if meta.uid() != me.uid() || meta.mode() & 0o022 != 0 {
        return Err(PgError::Missing(format!(
            "{} belongs to another user or others can write it; remove it and run again",
            root.display()
        )));
    }
    Ok(())
}

/// Download the pinned wheel with pip, verify it, and unpack its PostgreSQL into `root`
/// (through a staging directory renamed into place, so a crash never leaves half a tree).
fn unpack_wheel(root: &Path) -> Result<(), PgError> {
    let parent = root.parent().unwrap_or(Path::new("/tmp"));
    let download = tempfile::tempdir_in(parent).map_err(PgError::io(parent))?;
    let wheel = pip_download(download.path())?;
    let bytes = fs::read(&wheel).map_err(PgError::io(&wheel))?;
    let digest = hex(&Sha256::digest(&bytes));
    if digest != WHEEL_SHA256 {
        return Err(PgError::Missing(format!(
            "{WHEEL_FILE}: SHA-256 {digest}, expected {WHEEL_SHA256}"
        )));
    }
    let staging = tempfile::tempdir_in(parent).map_err(PgError::io(parent))?;
    extract(&bytes, staging.path())?;
    fs::write(staging.path().join("ready"), WHEEL_SHA256).map_err(PgError::io(staging.path()))?;
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o755))
        .map_err(PgError::io(staging.path()))?;
    let staged = staging.keep();
    if let Err(e) = fs::rename(&staged, root) {
        // Another test process unpacked it first: theirs is as good as ours.
        let _ = fs::remove_dir_all(&staged);
        if !root.join("ready").is_file() {
            return Err(PgError::io(root)(e));
        }
    }
    Ok(())
}

fn pip_download(dir: &Path) -> Result<PathBuf, PgError> {
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args(["--only-binary=:all:", "--platform", "manylinux2014_x86_64"])
        .args(["--python-version", "3.12", "--dest"])
        .arg(dir)
        .arg(WHEEL_SPEC)
        .output()
        .map_err(|e| PgError::Missing(format!("cannot run python3 -m pip: {e}")))?;
    let wheel = dir.join(WHEEL_FILE);
    if !output.status.success() || !wheel.is_file() {
        return Err(PgError::Missing(format!(
            "pip download {WHEEL_SPEC} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(wheel)
}

/// Unpack the wheel's PostgreSQL prefix and its libraries, keeping the executable bits.
fn extract(wheel: &[u8], into: &Path) -> Result<(), PgError> {
    let bad = |e: zip::result::ZipError| PgError::Missing(format!("{WHEEL_FILE}: {e}"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(bad)?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(bad)?;
        let Some(relative) = entry.enclosed_name() else {
            continue;
        };
        let wanted = relative.starts_with(PREFIX_IN_WHEEL) || relative.starts_with(LIBS_IN_WHEEL);
        if !wanted || entry.is_dir() {
            continue;
        }
        let target = into.join(&relative);
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(PgError::io(dir))?;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry
            .read_to_end(&mut bytes)
            .map_err(PgError::io(&target))?;
        fs::write(&target, &bytes).map_err(PgError::io(&target))?;
        let mode = entry.unix_mode().unwrap_or(0o644) & 0o755;
        fs::set_permissions(&target, fs::Permissions::from_mode(mode | 0o444))
            .map_err(PgError::io(&target))?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
