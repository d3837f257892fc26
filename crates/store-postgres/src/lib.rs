//! The shared mnemos [`Store`](mnemos_core::Store): one PostgreSQL database behind any number of servers.
//!
//! - **Durability and atomicity.** Every `write` batch, update, forget, access record, vector
//!   upload, job failure record, lease and purge is one transaction; a call that returned `Ok`
//!   is committed by PostgreSQL (durable as the server's `synchronous_commit` makes it).
//! - **Concurrency.** Each write transaction first takes a transaction-scoped advisory lock on
//!   its user, so writers of one user are serialized exactly like SQLite's single writer (the
//!   `LastRound` precondition and turn keys are checked under it), while different users write
//!   in parallel. Serialization failures and deadlocks are retried. Reads that need one
//!   snapshot (a page and its total) run in a read-only `REPEATABLE READ` transaction.
//! - **Other servers' commits** show per user in [`MemoryRead::data_version`](mnemos_core::MemoryRead::data_version): every write
//!   transaction of a user stores a new number from one global sequence as the user's version,
//!   inside the transaction (so it changes exactly when the commit becomes visible), and a
//!   purge removes it, leaving its number as the latest purge's. A handle reports its own
//!   commits as no change. The numbers never repeat, so a purged and rewritten user never
//!   shows an earlier version again; `versions` argues why no other server's commit is ever
//!   missed. Writers of different users touch different rows; only purges share one.
//! - **Purge** deletes every row of the user (turns, memories, history, vectors, jobs, lease).
//!   PostgreSQL keeps the dead tuples until `VACUUM` reclaims them and old WAL segments until
//!   they are recycled: erasing the bytes on disk is the operator's `VACUUM` (see
//!   `docs/scaling.md`), unlike SQLite's `secure_delete`.
//! - **Limits.** Rounds above `i64::MAX` and non-finite metrics are rejected, as in SQLite; so
//!   is U+0000 anywhere in a text, which PostgreSQL's `text` and `jsonb` cannot hold.

mod ann_index;
mod binding;
mod codec;
mod export;
mod read;
mod schema;
mod vectors;
mod versions;
mod write;

use std::collections::HashMap;

use mnemos_core::{BackendKind, StoreError, StoreInfo, StoreResult, UserKey};
use parking_lot::{Mutex, RwLock};
use postgres::{Client, IsolationLevel, NoTls, Transaction};

use codec::{is_retryable, pg_err};
pub use schema::SCHEMA_VERSION;

/// Idle connections kept for reuse.
const IDLE_CONNECTIONS: usize = 8;
/// Tries of a write transaction that PostgreSQL aborted as a serialization failure or deadlock.
const WRITE_ATTEMPTS: usize = 4;

/// A [`mnemos_core::Store`] on a PostgreSQL database.
pub struct PostgresStore {
    config: postgres::Config,
    /// The URL without its password, for messages.
    shown: String,
    idle: Mutex<Vec<Client>>,
    /// This handle's commits per user, so `data_version` reports only other handles' commits.
    own_commits: versions::OwnCommits,
    /// Held shared by every commit of this handle from before it is recorded in `own_commits`
    /// until it has committed, and exclusively by `data_version` while it reads: so it never
    /// sees one of our commits unrecorded (which would look like another server's).
    commit_window: RwLock<()>,
    /// The in-database vector search: its description, or why it is off.
    vector_index: Result<String, String>,
    /// Window dimensions of registered models (see `vectors`), cached once read.
    vector_dims: Mutex<HashMap<String, usize>>,
}

/// Which advisory lock a write transaction takes first.
#[derive(Clone, Copy)]
pub(crate) enum WriteScope<'a> {
    /// One user's rows.
    User(&'a UserKey),
    /// Every row of one user, deleted.
    Purge(&'a UserKey),
    /// API keys (no user).
    Keys,
    /// The database's binding to a vector space (no user).
    Binding,
}

impl WriteScope<'_> {
    /// The lock and commit-counter key: the user, or a name no user key can take (user keys
    /// hold no control characters).
    fn key(self) -> String {
        match self {
            WriteScope::User(user) | WriteScope::Purge(user) => {
                format!("{}\u{1f}{}", user.tenant, user.user)
            }
            WriteScope::Keys => "\u{1f}api-keys".to_string(),
            WriteScope::Binding => "\u{1f}binding".to_string(),
        }
    }
}

impl PostgresStore {
    /// Connect to `url` (`postgres://user[:password]@host[:port]/database`), migrate the
    /// database to [`SCHEMA_VERSION`] and see whether pgvector is installed.
    ///
    /// Fails with `StoreError::Unavailable` if the server cannot be reached, and with
    /// `StoreError::SchemaTooNew` (touching nothing) if a newer build migrated the database.
    pub fn connect(url: &str) -> StoreResult<PostgresStore> {
        off_runtime(|| Self::connect_here(url))
    }

    fn connect_here(url: &str) -> StoreResult<PostgresStore> {
        let config: postgres::Config = url.parse().map_err(|e| {
            StoreError::Unavailable(format!("not a PostgreSQL URL ({e}): {}", redact(url)))
        })?;
        let mut store = PostgresStore {
            config,
            shown: redact(url),
            idle: Mutex::new(Vec::new()),
            own_commits: versions::OwnCommits::default(),
            commit_window: RwLock::new(()),
            vector_index: Err("not checked yet".to_string()),
            vector_dims: Mutex::new(HashMap::new()),
        };
        let mut client = store.open_client()?;
        schema::migrate(&mut client)?;
        store.vector_index = vectors::enable(&mut client)?;
        store.checkin(client);
        Ok(store)
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> StoreResult<i64> {
        self.with_client(schema::read_version)
    }

    /// Whether vectors are searched in the database (pgvector is installed in it).
    pub fn pgvector_available(&self) -> bool {
        self.vector_index.is_ok()
    }

    /// What [`mnemos_core::StoreRead::info`] reports.
    pub(crate) fn describe(&self) -> StoreInfo {
        StoreInfo {
            kind: BackendKind::Postgres,
            location: self.shown.clone(),
            vector_search: self.vector_index.clone(),
        }
    }

    /// The database's URL without its password.
    pub fn location(&self) -> &str {
        &self.shown
    }

    fn open_client(&self) -> StoreResult<Client> {
        self.config
            .connect(NoTls)
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to {}: {e}", self.shown)))
    }

    fn checkin(&self, client: Client) {
        let mut idle = self.idle.lock();
        if !client.is_closed() && idle.len() < IDLE_CONNECTIONS {
            idle.push(client);
        }
    }

    /// Run `f` on a pooled connection (off any async runtime); a connection that broke is not
    /// reused.
    fn with_client<T: Send>(
        &self,
        f: impl FnOnce(&mut Client) -> StoreResult<T> + Send,
    ) -> StoreResult<T> {
        off_runtime(|| {
            let pooled = self.idle.lock().pop();
            let mut client = match pooled {
                Some(client) => client,
                None => self.open_client()?,
            };
            let result = f(&mut client);
            self.checkin(client);
            result
        })
    }

    /// Run `f` in one read-only `REPEATABLE READ` transaction: every statement sees one snapshot.
    pub(crate) fn read_tx<T: Send>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut Transaction<'_>) -> StoreResult<T> + Send,
    ) -> StoreResult<T> {
        self.with_client(|client| {
            let mut tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(pg_err(op))?;
            let value = f(&mut tx)?;
            tx.commit().map_err(pg_err(op))?;
            Ok(value)
        })
    }

    /// Run `f` in one write transaction under `scope`'s advisory lock, give its user a new data
    /// version, and commit only if `f` succeeds. Serialization failures and deadlocks are tried
    /// again.
    pub(crate) fn write_tx<T: Send>(
        &self,
        op: &'static str,
        scope: WriteScope<'_>,
        mut f: impl FnMut(&mut Transaction<'_>) -> StoreResult<T> + Send,
    ) -> StoreResult<T> {
        let key = scope.key();
        let mut attempt = 1;
        loop {
            let result = self.with_client(|client| {
                let mut tx = client.transaction().map_err(pg_err(op))?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    &[&key],
                )
                .map_err(pg_err(op))?;
                let value = f(&mut tx)?;
                let change = match scope {
                    WriteScope::User(user) => Some((user, versions::bump(&mut tx, user, false)?)),
                    WriteScope::Purge(user) => Some((user, versions::bump(&mut tx, user, true)?)),
                    WriteScope::Keys | WriteScope::Binding => None,
                };
                // Recorded under the user's lock (so in commit order), and from before the
                // commit can become visible.
                let _window = self.commit_window.read();
                if let Some((user, change)) = change {
                    self.own_commits.record(user, change);
                }
                tx.commit().map_err(pg_err(op))?;
                Ok(value)
            });
            match result {
                Err(e) if attempt < WRITE_ATTEMPTS && is_retryable(&e) => attempt += 1,
                other => return other,
            }
        }
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Closing a connection blocks too.
        let idle = std::mem::take(&mut *self.idle.lock());
        off_runtime(move || drop(idle));
    }
}

/// Run `work` where the synchronous client may block. The client drives its connection with
/// its own runtime's `block_on`, which panics on a thread that already runs async tasks (the
/// server's): there, `work` runs on a scoped thread of its own and the caller waits, as it
/// would for a SQLite call.
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|s| s.spawn(work).join()).unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// A PostgreSQL URL fit for messages and logs: `postgres://user:secret@host/db` →
/// `postgres://user:***@host/db`.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_messages() {
        assert_eq!(redact("postgres://a:b@h:5/d"), "postgres://a:***@h:5/d");
        assert_eq!(redact("postgres://a@h/d"), "postgres://a@h/d");
        assert_eq!(redact("host=h user=a"), "host=h user=a");
    }
}
