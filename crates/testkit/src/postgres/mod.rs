//! Throwaway PostgreSQL servers for tests: `initdb` in a temporary directory, `postgres` on a
//! free loopback port, stopped (`pg_ctl stop -m immediate`) and deleted afterwards.
//!
//! - [`TestPostgres::start`] gives a server owned by the test; dropping it stops it.
//! - [`shared_server`] / [`shared_system_server`] give one server per test process, started on
//!   first use. A `static` is never dropped, so each shared server has a watchdog process that
//!   stops it and deletes its directory once the test process is gone.
//! - PostgreSQL refuses to run as root. Under root (CI runs as root) the server runs as the
//!   `postgres` user (Debian's package creates it), else as `nobody`.
//! - Durability is off (`fsync=off`, `full_page_writes=off`, `synchronous_commit=off`): these
//!   servers hold nothing worth keeping, and tests should measure the store, not the disk.

mod install;

use std::fs;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use install::PgInstall;

/// Why a test PostgreSQL could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("PostgreSQL is not available: {0}")]
    Missing(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the test PostgreSQL did not start: {0}")]
    Start(String),
    #[error("test PostgreSQL: {0}")]
    Sql(#[from] postgres::Error),
}

impl PgError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PgError + '_ {
        move |source| PgError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The role every test server is created with (trusted, no password, loopback only).
const ROLE: &str = "mnemos";
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The account the server processes run as.
#[derive(Clone, Copy, Debug)]
struct Account {
    uid: u32,
    gid: u32,
}

/// A running throwaway server.
pub struct TestPostgres {
    install: PgInstall,
    dir: PathBuf,
    port: u16,
    account: Option<Account>,
    postmaster: Option<Child>,
    /// Shared servers leave stopping and deleting to their watchdog.
    owned: bool,
    databases: AtomicU64,
}

impl TestPostgres {
    /// Start a server from `install`; it is stopped and deleted when dropped.
    pub fn start(install: &PgInstall) -> Result<TestPostgres, PgError> {
        let account = server_account()?;
        let dir = tempfile::Builder::new()
            .prefix("mnemos-pg-")
            .tempdir()
            .map_err(PgError::io(&std::env::temp_dir()))?
            .keep();
        if let Some(a) = account {
            std::os::unix::fs::chown(&dir, Some(a.uid), Some(a.gid)).map_err(PgError::io(&dir))?;
        }
        let mut server = TestPostgres {
            install: install.clone(),
            dir,
            port: 0,
            account,
            postmaster: None,
            owned: true,
            databases: AtomicU64::new(0),
        };
        server.init_cluster()?;
        server.launch()?;
        Ok(server)
    }

    /// `postgres://mnemos@127.0.0.1:PORT/postgres`
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    pub fn url_for(&self, database: &str) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/{database}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn has_pgvector(&self) -> bool {
        self.install.pgvector
    }

    /// Which installation runs this server, for messages.
    pub fn label(&self) -> &str {
        &self.install.label
    }

    /// Create an empty database with a name unique on this server and return its URL.
    pub fn create_database(&self) -> Result<String, PgError> {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("test_{}_{n}", std::process::id());
        let mut client = postgres::Client::connect(&self.url(), postgres::NoTls)?;
        client.batch_execute(&format!("CREATE DATABASE {name}"))?;
        Ok(self.url_for(&name))
    }

    fn command(&self, program: &str) -> Command {
        let mut command = self.install.command(program);
        if let Some(a) = self.account {
            command.uid(a.uid).gid(a.gid);
        }
        command
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn init_cluster(&self) -> Result<(), PgError> {
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args([
                "-U",
                ROLE,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ])
            .output()
            .map_err(PgError::io(&self.install.bin))?;
        if !output.status.success() {
            return Err(PgError::Start(format!(
                "initdb ({}): {}",
                self.install.label,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Start `postgres` on a free port and wait until it accepts connections. A port taken
    /// between choosing and binding is retried with another.
    fn launch(&mut self) -> Result<(), PgError> {
        let mut last = String::new();
        for _ in 0..3 {
            self.port = free_port()?;
            let log_path = self.dir.join("server.log");
            let log = fs::File::create(&log_path).map_err(PgError::io(&log_path))?;
            let err = log.try_clone().map_err(PgError::io(&log_path))?;
            let child = self
                .command("postgres")
                .arg("-D")
                .arg(self.data_dir())
                .args(["-p", &self.port.to_string()])
                .args([
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "unix_socket_directories=",
                ])
                .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
                .args(["-c", "synchronous_commit=off", "-c", "max_connections=200"])
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err)
                .spawn()
                .map_err(PgError::io(&self.install.bin))?;
            self.postmaster = Some(child);
            match self.wait_ready() {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
            self.stop();
        }
        Err(PgError::Start(last))
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(Some(status)) = self
                .postmaster
                .as_mut()
                .map(|c| c.try_wait().ok().flatten())
            {
                return Err(format!(
                    "postgres exited with {status}: {}",
                    self.log_tail()
                ));
            }
            let open = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok();
            if open && postgres::Client::connect(&self.url(), postgres::NoTls).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "no connection within {START_TIMEOUT:?}: {}",
            self.log_tail()
        ))
    }

    fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let start = log.len().saturating_sub(2_000);
        log.get(start..).unwrap_or(&log).trim().to_string()
    }

    /// Stop the server now (immediate: the data is thrown away anyway).
    fn stop(&mut self) {
        let Some(mut child) = self.postmaster.take() else {
            return;
        };
        let stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["stop", "-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = child.kill();
        }
        let _ = child.wait();
    }

    /// Hand stopping and cleanup to a watchdog that outlives nothing but this process.
    fn watch_until_process_exits(&mut self) -> Result<(), PgError> {
        let script = format!(
            "while [ -d /proc/{pid} ]; do sleep 1; done; \"{pg_ctl}\" -D \"{data}\" stop -m immediate -w; rm -rf \"{dir}\"",
            pid = std::process::id(),
            pg_ctl = self.install.bin.join("pg_ctl").display(),
            data = self.data_dir().display(),
            dir = self.dir.display(),
        );
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        if let Some(libs) = &self.install.libs {
            command.env("LD_LIBRARY_PATH", libs);
        }
        if let Some(a) = self.account {
            command.uid(a.uid).gid(a.gid);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(PgError::io(Path::new("sh")))?;
        self.owned = false;
        Ok(())
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if self.owned {
            self.stop();
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// One server with pgvector (the pinned `pgserver` wheel) per test process.
pub fn shared_server() -> Result<&'static TestPostgres, PgError> {
    static SERVER: OnceLock<Result<TestPostgres, String>> = OnceLock::new();
    shared(&SERVER, PgInstall::bundled)
}

/// One server from Debian's `postgresql` package (no pgvector) per test process.
pub fn shared_system_server() -> Result<&'static TestPostgres, PgError> {
    static SERVER: OnceLock<Result<TestPostgres, String>> = OnceLock::new();
    shared(&SERVER, PgInstall::system)
}

fn shared(
    cell: &'static OnceLock<Result<TestPostgres, String>>,
    install: fn() -> Result<PgInstall, PgError>,
) -> Result<&'static TestPostgres, PgError> {
    let started = cell.get_or_init(|| start_watched(install).map_err(|e| e.to_string()));
    started.as_ref().map_err(|e| PgError::Start(e.clone()))
}

fn start_watched(install: fn() -> Result<PgInstall, PgError>) -> Result<TestPostgres, PgError> {
    let mut server = TestPostgres::start(&install()?)?;
    server.watch_until_process_exits()?;
    Ok(server)
}

/// The account the server runs as: none to switch to unless this process is root.
fn server_account() -> Result<Option<Account>, PgError> {
    let me = fs::metadata("/proc/self").map_err(PgError::io(Path::new("/proc/self")))?;
    if me.uid() != 0 {
        return Ok(None);
    }
    let passwd =
        fs::read_to_string("/etc/passwd").map_err(PgError::io(Path::new("/etc/passwd")))?;
    ["postgres", "nobody"]
        .iter()
        .find_map(|name| account_in(&passwd, name))
        .map(Some)
        .ok_or_else(|| {
            PgError::Missing(
                "running as root with no `postgres` or `nobody` user to run the server as".into(),
            )
        })
}

fn account_in(passwd: &str, name: &str) -> Option<Account> {
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3).then(|| {
            Some(Account {
                uid: fields[2].parse().ok()?,
                gid: fields[3].parse().ok()?,
            })
        })?
    })
}

fn free_port() -> Result<u16, PgError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(PgError::io(Path::new("127.0.0.1")))?;
    let port = listener
        .local_addr()
        .map_err(PgError::io(Path::new("127.0.0.1")))?
        .port();
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_read_from_passwd_lines() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\npostgres:x:105:111::/var/lib/postgresql:/bin/bash\n";
        let account = account_in(passwd, "postgres").unwrap();
        assert_eq!((account.uid, account.gid), (105, 111));
        assert!(account_in(passwd, "nobody").is_none());
        assert!(account_in("broken:x:notanumber:1::/:/bin/sh", "broken").is_none());
    }
}
