//! The embedded mnemos [`Store`](mnemos_core::Store): one SQLite file.
//!
//! - **Durability.** WAL journal with `synchronous=NORMAL` by default: a `write` that returned
//!   `Ok` survives a crash of the process (`kill -9`), because its WAL frames are already in the
//!   operating system's cache; an OS crash or power loss may roll back the last commits (never
//!   corrupt the file). Set [`SqliteOptions::synchronous_full`] to fsync the WAL on every commit
//!   when acknowledged writes must also survive power loss.
//! - **Atomicity.** Every `write` batch, access record, job failure record and purge is one `BEGIN IMMEDIATE` transaction on the single writer connection. A batch's edits,
//!   forgets, new jobs and job completions share the transaction of its turns and memories, so a
//!   job is enqueued with the turns that cause it and marked done with its results.
//! - **Concurrency.** One writer connection behind a mutex, plus a small pool of reader
//!   connections: in WAL mode readers see the last committed state and never wait for a long
//!   write. An in-memory database has a single connection for both.
//! - **Purge leaves nothing behind.** Turns, memories, history, vectors and jobs of the user are
//!   deleted; `secure_delete=ON` zeroes deleted rows and freed pages, and
//!   `purge_user` ends with `wal_checkpoint(TRUNCATE)` so no copy of the user's text stays in the
//!   write-ahead log.
//! - **Filters** (kind, agent, session, state, creation time and metadata pairs) run in SQL; metadata pairs use
//!   `json_each` over the metadata column.
//! - **Limits.** Rounds are stored as SQLite integers, so rounds above `i64::MAX` are rejected;
//!   metrics must be finite (JSON cannot hold NaN or infinity).

mod binding;
mod codec;
mod export;
mod keys;
mod schema;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mnemos_core::{
    check_finite_metrics, vector_to_le_bytes, Access, ApiKey, ApiKeyId, BackendKind, BatchErase,
    BatchForget, Change, Conflict, HistoryEntry, Job, JobId, Memory, MemoryFilter, MemoryId,
    MemoryPatch, Moment, Page, Paged, PurgeReport, StateFilter, StoreError, StoreInfo, StoreRead,
    StoreResult, Timestamp, Turn, TurnErase, TurnId, UserExport, UserKey, Validity, VectorRow,
    VectorSearch, WriteBatch,
};
use mnemos_core::{
    BindingRead, BindingWrite, JobRead, JobWrite, KeyRead, KeyWrite, MemoryRead, MemoryWrite,
    VectorRead, VectorWrite,
};
use parking_lot::Mutex;
use rusqlite::types::Value;
use rusqlite::{
    params, params_from_iter, Connection, OpenFlags, OptionalExtension, TransactionBehavior,
};

use codec::{
    blob, decode_vector, from_json, is_constraint_violation, read_history, read_job, read_memory,
    read_turn, round_to_sql, sql_err, to_json, uuid_from_blob, MemoryRow, JOB_COLUMNS,
    MEMORY_COLUMNS, TURN_COLUMNS,
};
pub use schema::SCHEMA_VERSION;

/// How a [`SqliteStore`] opens its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `synchronous=FULL`: fsync the WAL at every commit, so acknowledged writes survive power
    /// loss and OS crashes too. `false` (the default) uses `NORMAL`: durable against a process
    /// crash, several times faster per small write.
    pub synchronous_full: bool,
    /// How long a connection waits for a lock held by another connection (or process) before
    /// giving up with a busy error.
    pub busy_timeout_ms: u64,
    /// Idle reader connections kept open. `0` sends reads through the writer connection.
    pub read_connections: usize,
    /// Page cache of each connection, in KiB.
    pub cache_size_kib: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous_full: false,
            busy_timeout_ms: 5_000,
            read_connections: 4,
            cache_size_kib: 8 * 1024,
        }
    }
}

/// Largest WAL kept on disk between checkpoints, so one big ingest does not leave a huge file.
const JOURNAL_SIZE_LIMIT_BYTES: i64 = 64 * 1024 * 1024;
const STATEMENT_CACHE: usize = 64;
const PAGE_SIZE: i64 = 8192;

/// Reader connections to a file database; opened on demand, kept while idle.
struct ReaderPool {
    path: PathBuf,
    options: SqliteOptions,
    idle: Mutex<Vec<Connection>>,
}

impl ReaderPool {
    fn checkout(&self) -> StoreResult<Connection> {
        if let Some(conn) = self.idle.lock().pop() {
            return Ok(conn);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(open_err(&self.path))?;
        configure(&conn, &self.options).map_err(open_err(&self.path))?;
        // Readers never write; a bug that tries fails loudly instead of bypassing the writer lock.
        conn.pragma_update(None, "query_only", true)
            .map_err(open_err(&self.path))?;
        Ok(conn)
    }

    fn checkin(&self, conn: Connection) {
        let mut idle = self.idle.lock();
        if idle.len() < self.options.read_connections {
            idle.push(conn);
        }
    }
}

/// A [`Store`](mnemos_core::Store) on one SQLite file (or in memory, for tests).
pub struct SqliteStore {
    writer: Mutex<Connection>,
    /// `None` for in-memory databases, which cannot be shared between connections.
    readers: Option<ReaderPool>,
    path: Option<PathBuf>,
}

fn open_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |err| {
        let not_a_db = matches!(&err, rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::NotADatabase);
        if not_a_db {
            StoreError::backend_message(
                "open",
                format!("{} is not a SQLite database ({err})", path.display()),
            )
        } else {
            StoreError::backend_message("open", format!("{}: {err}", path.display()))
        }
    }
}

/// Per-connection settings shared by the writer and the readers.
fn configure(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_millis(options.busy_timeout_ms))?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "secure_delete", true)?;
    // Sorts and temporary indexes stay in memory: no temporary file ever holds user text.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -i64::from(options.cache_size_kib))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

impl SqliteStore {
    /// Open (creating if needed) the store at `path` and migrate it to [`SCHEMA_VERSION`].
    ///
    /// Fails with `StoreError::SchemaTooNew` if the file was written by a newer build, and with a
    /// backend error naming the path if it is not a SQLite database or belongs to another
    /// application.
    pub fn open(path: &Path, options: SqliteOptions) -> StoreResult<SqliteStore> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags).map_err(open_err(path))?;
        // Before the first statement, so opening while another process writes waits instead of
        // failing with "database is locked".
        conn.busy_timeout(Duration::from_millis(options.busy_timeout_ms))
            .map_err(open_err(path))?;
        // Only takes effect when the file is created. 8 KiB pages fit five 384-dim vectors where
        // 4 KiB pages fit two, which cuts bulk-ingest I/O by about a quarter.
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(open_err(path))?;
        // The first statement that reads the header: this is where a non-database file fails.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(open_err(path))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::backend_message(
                "open",
                format!(
                    "{}: cannot enable WAL (journal mode {mode})",
                    path.display()
                ),
            ));
        }
        configure(&conn, &options).map_err(open_err(path))?;
        let synchronous = if options.synchronous_full {
            "FULL"
        } else {
            "NORMAL"
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(open_err(path))?;
        conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT_BYTES)
            .map_err(open_err(path))?;
        schema::migrate(&mut conn)?;
        Ok(SqliteStore {
            writer: Mutex::new(conn),
            readers: Some(ReaderPool {
                path: path.to_path_buf(),
                options,
                idle: Mutex::new(Vec::new()),
            }),
            path: Some(path.to_path_buf()),
        })
    }

    /// Open the store at `path` only if the file exists: commands that only read or edit must
    /// not leave an empty database behind a mistyped path.
    pub fn open_existing(path: &Path, options: SqliteOptions) -> StoreResult<SqliteStore> {
        if !path.is_file() {
            return Err(StoreError::Unavailable(format!(
                "there is no database at {} (ingest turns first, or pass --db)",
                path.display()
            )));
        }
        Self::open(path, options)
    }

    /// A private in-memory database (tests, scratch work). Nothing is persisted.
    pub fn open_in_memory() -> StoreResult<SqliteStore> {
        let mut conn = Connection::open_in_memory().map_err(sql_err("open"))?;
        configure(&conn, &SqliteOptions::default()).map_err(sql_err("open"))?;
        schema::migrate(&mut conn)?;
        Ok(SqliteStore {
            writer: Mutex::new(conn),
            readers: None,
            path: None,
        })
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The schema version recorded in the file.
    pub fn schema_version(&self) -> StoreResult<i64> {
        self.read(schema::user_version)
    }

    /// Run SQLite's `PRAGMA integrity_check`; an empty list means the file is sound.
    pub fn integrity_check(&self) -> StoreResult<Vec<String>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare("PRAGMA integrity_check")
                .map_err(sql_err("integrity check"))?;
            let rows = stmt
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(sql_err("integrity check"))?;
            let problems: Vec<String> = rows
                .collect::<Result<_, _>>()
                .map_err(sql_err("integrity check"))?;
            Ok(problems.into_iter().filter(|p| p != "ok").collect())
        })
    }

    /// Run `f` on a reader connection (or the writer, in memory).
    fn read<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        match &self.readers {
            None => f(&self.writer.lock()),
            Some(pool) => {
                let conn = pool.checkout()?;
                let result = f(&conn);
                pool.checkin(conn);
                result
            }
        }
    }

    /// Run `f` in one read transaction, so every statement sees the same snapshot.
    fn read_tx<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read(|conn| {
            let tx = conn.unchecked_transaction().map_err(sql_err(op))?;
            let result = f(&tx);
            drop(tx);
            result
        })
    }

    /// Run `f` in one `BEGIN IMMEDIATE` transaction on the writer; commit only if it succeeds.
    fn write_tx<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut conn = self.writer.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err(op))?;
        let value = f(&tx)?;
        tx.commit().map_err(sql_err(op))?;
        Ok(value)
    }

    /// Copy the whole WAL into the main file and truncate it to zero bytes.
    fn checkpoint_truncate(&self) -> StoreResult<()> {
        if self.path.is_none() {
            return Ok(());
        }
        let conn = self.writer.lock();
        let (busy, log, done): (i64, i64, i64) = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .map_err(sql_err("checkpoint"))?;
        if busy != 0 {
            return Err(StoreError::backend_message(
                "checkpoint",
                format!(
                    "the write-ahead log could not be truncated ({done} of {log} frames copied; a reader is active); \
                     the data is deleted but old copies may remain in the WAL until the next successful checkpoint"
                ),
            ));
        }
        Ok(())
    }
}

/// This machine's clock in milliseconds since the epoch (job leases).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn id_bytes(id: &uuid::Uuid) -> &[u8] {
    id.as_bytes()
}

fn load_memory(conn: &Connection, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
    let sql = format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = ?1 AND m.tenant = ?2 AND m.user_id = ?3");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("read memory"))?;
    let mut rows = stmt
        .query(params![id_bytes(&id.0), user.tenant, user.user])
        .map_err(sql_err("read memory"))?;
    match rows.next().map_err(sql_err("read memory"))? {
        Some(row) => read_memory(row).map(Some),
        None => Ok(None),
    }
}

/// Overwrite the mutable columns of a memory after an update or forget.
fn rewrite_memory(conn: &Connection, memory: &Memory) -> StoreResult<()> {
    check_finite_metrics(&memory.metrics)?;
    let mut stmt = conn
        .prepare_cached(
            "UPDATE memories SET text = ?2, valid_to = ?3, active = ?4, state = ?5, metrics = ?6, metadata = ?7, \
             version = ?8, superseded_by = ?9, provenance = ?10 WHERE id = ?1",
        )
        .map_err(sql_err("update memory"))?;
    stmt.execute(params![
        id_bytes(&memory.id.0),
        memory.text,
        memory.valid_to.map(|t| t.0),
        memory.is_active(),
        to_json(&memory.state, "memory state")?,
        to_json(&memory.metrics, "metrics")?,
        to_json(&memory.metadata, "metadata")?,
        i64::from(memory.version),
        memory.superseded_by.map(|id| id.0.as_bytes().to_vec()),
        to_json(&memory.provenance, "provenance")?,
    ])
    .map_err(sql_err("update memory"))?;
    Ok(())
}

fn insert_history(
    conn: &Connection,
    at: Moment,
    change: &Change,
    snapshot: &str,
    memory: &Memory,
) -> StoreResult<()> {
    insert_history_row(
        conn,
        memory.id,
        memory.version,
        at,
        &to_json(change, "history change")?,
        snapshot,
    )
}

/// One history row, its change and snapshot already JSON.
fn insert_history_row(
    conn: &Connection,
    id: MemoryId,
    version: u32,
    at: Moment,
    change: &str,
    snapshot: &str,
) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO memory_history (memory_id, version, at_round, at_time, change, snapshot) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql_err("write history"))?;
    stmt.execute(params![
        id_bytes(&id.0),
        i64::from(version),
        round_to_sql(at.round)?,
        at.time.0,
        change,
        snapshot,
    ])
    .map_err(|e| {
        if is_constraint_violation(&e) {
            StoreError::InvalidWrite(format!("memory {id} already has a version {version}"))
        } else {
            sql_err("write history")(e)
        }
    })?;
    Ok(())
}

/// Patch one memory of `user` (the change [`Memory::updated`] computes), inside the caller's
/// transaction. `Ok(None)` if the user has no such memory.
fn update_in_tx(
    tx: &Connection,
    user: &UserKey,
    id: MemoryId,
    patch: &MemoryPatch,
    at: Moment,
) -> StoreResult<Option<Memory>> {
    let Some(memory) = load_memory(tx, user, id)? else {
        return Ok(None);
    };
    let (updated, entry) = memory
        .updated(patch, at)
        .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
    store_change(tx, &updated, &entry)?;
    Ok(Some(updated))
}

/// Forget one memory of `user` (the change [`Memory::forgotten`] computes; its vectors
/// dropped), inside the caller's transaction. `Ok(None)` if the user has no such memory.
fn forget_in_tx(
    tx: &Connection,
    user: &UserKey,
    forget: &BatchForget,
) -> StoreResult<Option<Memory>> {
    let Some(memory) = load_memory(tx, user, forget.id)? else {
        return Ok(None);
    };
    let (forgotten, entry) = memory
        .forgotten(&forget.reason, forget.cause.clone(), forget.at)
        .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
    store_change(tx, &forgotten, &entry)?;
    tx.prepare_cached("DELETE FROM vectors WHERE memory_id = ?1")
        .and_then(|mut s| s.execute(params![id_bytes(&forget.id.0)]))
        .map_err(sql_err("forget memory"))?;
    Ok(Some(forgotten))
}

/// Write a memory's new state and the history entry recording it.
fn store_change(tx: &Connection, memory: &Memory, entry: &HistoryEntry) -> StoreResult<()> {
    rewrite_memory(tx, memory)?;
    insert_history(
        tx,
        entry.at,
        &entry.change,
        &to_json(&entry.snapshot, "memory snapshot")?,
        memory,
    )
}

/// One job of `user`, finished or not.
fn load_job(conn: &Connection, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
    let sql =
        format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1 AND tenant = ?2 AND user_id = ?3");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("read job"))?;
    let mut rows = stmt
        .query(params![id_bytes(&id.0), user.tenant, user.user])
        .map_err(sql_err("read job"))?;
    match rows.next().map_err(sql_err("read job"))? {
        Some(row) => read_job(row).map(Some),
        None => Ok(None),
    }
}

/// The SQL `WHERE` clause and parameters of a memory listing (table aliased `m`).
fn filter_sql(user: &UserKey, filter: &MemoryFilter) -> (String, Vec<Value>) {
    let mut sql = String::from("FROM memories m WHERE m.tenant = ? AND m.user_id = ?");
    let mut params = vec![
        Value::Text(user.tenant.clone()),
        Value::Text(user.user.clone()),
    ];
    if !filter.kinds.is_empty() {
        let marks = vec!["?"; filter.kinds.len()].join(", ");
        sql.push_str(&format!(" AND m.kind IN ({marks})"));
        params.extend(
            filter
                .kinds
                .iter()
                .map(|k| Value::Text(k.as_str().to_string())),
        );
    }
    if let Some(agent) = &filter.agent {
        sql.push_str(" AND m.agent = ?");
        params.push(Value::Text(agent.clone()));
    }
    if let Some(session) = &filter.session {
        sql.push_str(" AND m.session = ?");
        params.push(Value::Text(session.clone()));
    }
    match filter.state {
        StateFilter::Active => sql.push_str(" AND m.active = 1"),
        StateFilter::Forgotten => sql.push_str(" AND m.active = 0"),
        StateFilter::All => {}
    }
    if let Some(since) = filter.created_since {
        sql.push_str(" AND m.created_time >= ?");
        params.push(Value::Integer(since.0));
    }
    if let Some(before) = filter.created_before {
        sql.push_str(" AND m.created_time < ?");
        params.push(Value::Integer(before.0));
    }
    match filter.validity {
        Validity::Any => {}
        Validity::Current => sql.push_str(" AND m.valid_to IS NULL"),
        Validity::At(at) => {
            sql.push_str(" AND m.valid_from <= ? AND (m.valid_to IS NULL OR m.valid_to > ?)");
            params.push(Value::Integer(at.0));
            params.push(Value::Integer(at.0));
        }
    }
    for (key, value) in &filter.metadata {
        sql.push_str(
            " AND EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type = 'text' AND j.value = ?)",
        );
        params.push(Value::Text(key.clone()));
        params.push(Value::Text(value.clone()));
    }
    (sql, params)
}

fn to_sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count_to_usize(n: i64, op: &str) -> StoreResult<usize> {
    usize::try_from(n).map_err(|_| StoreError::Corrupt(format!("{op}: negative count {n}")))
}

/// A turn with its round and metadata JSON, ready for SQL.
type TurnRow<'b> = (&'b Turn, i64, String);
/// A job with its created round and (round, time) when done, ready for SQL.
type JobRow<'b> = (&'b Job, i64, Option<(i64, i64)>);

/// A batch's rows encoded for SQL, before the transaction starts.
struct Encoded<'b> {
    turns: Vec<TurnRow<'b>>,
    /// (row, snapshot JSON)
    memories: Vec<(MemoryRow<'b>, String)>,
    vectors: Vec<(&'b VectorRow, Vec<u8>)>,
    jobs: Vec<JobRow<'b>>,
}

impl<'b> Encoded<'b> {
    fn encode(batch: &'b WriteBatch) -> StoreResult<Self> {
        let mut memories = Vec::with_capacity(batch.memories.len());
        for memory in &batch.memories {
            memories.push((
                MemoryRow::encode(memory)?,
                to_json(memory, "memory snapshot")?,
            ));
        }
        Ok(Encoded {
            turns: encode_turns(&batch.turns)?,
            memories,
            vectors: encode_vectors(&batch.vectors),
            jobs: encode_jobs(&batch.jobs)?,
        })
    }
}

fn encode_turns(turns: &[Turn]) -> StoreResult<Vec<TurnRow<'_>>> {
    turns
        .iter()
        .map(|turn| {
            let metadata = to_json(&turn.metadata, "turn metadata")?;
            Ok((turn, round_to_sql(turn.at.round)?, metadata))
        })
        .collect()
}

fn encode_vectors(vectors: &[VectorRow]) -> Vec<(&VectorRow, Vec<u8>)> {
    vectors
        .iter()
        .map(|v| (v, vector_to_le_bytes(&v.vector)))
        .collect()
}

fn encode_jobs(jobs: &[Job]) -> StoreResult<Vec<JobRow<'_>>> {
    jobs.iter()
        .map(|job| {
            let done = match job.done {
                Some(at) => Some((round_to_sql(at.round)?, at.time.0)),
                None => None,
            };
            Ok((job, round_to_sql(job.created.round)?, done))
        })
        .collect()
}

/// A uniqueness violation as "`what` already exists"; any other error as a backend error.
fn duplicate_or(op: &'static str, what: String) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |e| {
        if is_constraint_violation(&e) {
            StoreError::InvalidWrite(format!("{what} already exists"))
        } else {
            sql_err(op)(e)
        }
    }
}

fn last_round_in(conn: &Connection, user: &UserKey) -> StoreResult<Option<u64>> {
    let max: Option<i64> = conn
        .prepare_cached("SELECT MAX(round) FROM turns WHERE tenant = ?1 AND user_id = ?2")
        .and_then(|mut s| s.query_row(params![user.tenant, user.user], |row| row.get(0)))
        .map_err(sql_err("last round"))?;
    max.map(|r| u64::try_from(r).map_err(|_| StoreError::Corrupt(format!("negative round {r}"))))
        .transpose()
}

fn insert_turns(tx: &Connection, user: &UserKey, turns: &[TurnRow<'_>]) -> StoreResult<()> {
    tx.prepare_cached("INSERT OR IGNORE INTO users (tenant, user_id) VALUES (?1, ?2)")
        .and_then(|mut s| s.execute(params![user.tenant, user.user]))
        .map_err(sql_err("write user"))?;
    let mut key_taken = tx
        .prepare_cached("SELECT 1 FROM turns WHERE tenant = ?1 AND user_id = ?2 AND key = ?3")
        .map_err(sql_err("write turn"))?;
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO turns (id, tenant, user_id, agent, session, role, speaker, text, round, time_ms, \
             metadata, key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )
        .map_err(sql_err("write turn"))?;
    for (turn, round, metadata) in turns {
        if let Some(key) = &turn.key {
            let taken = key_taken
                .exists(params![user.tenant, user.user, key])
                .map_err(sql_err("write turn"))?;
            if taken {
                return Err(Conflict::DuplicateTurnKey { key: key.clone() }.into());
            }
        }
        let s = &turn.scope;
        stmt.execute(params![
            id_bytes(&turn.id.0),
            s.tenant,
            s.user,
            s.agent,
            s.session,
            turn.role.as_str(),
            turn.speaker,
            turn.text,
            round,
            turn.at.time.0,
            metadata,
            turn.key,
        ])
        .map_err(duplicate_or("write turn", format!("turn {}", turn.id)))?;
    }
    Ok(())
}

fn insert_memories(tx: &Connection, memories: &[(MemoryRow<'_>, String)]) -> StoreResult<()> {
    insert_memory_rows(tx, memories.iter().map(|(row, _)| row))?;
    for (row, snapshot) in memories {
        insert_history(
            tx,
            row.memory.created,
            &Change::Created,
            snapshot,
            row.memory,
        )?;
    }
    Ok(())
}

/// The memories' rows alone, without history (a write adds `Created`, an import its own).
fn insert_memory_rows<'r, 'm: 'r>(
    tx: &Connection,
    rows: impl IntoIterator<Item = &'r MemoryRow<'m>>,
) -> StoreResult<()> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO memories (id, tenant, user_id, agent, session, kind, kind_json, text, provenance, \
             created_round, created_time, valid_from, valid_to, active, state, metrics, access, metadata, \
             version, superseded_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, \
             ?15, ?16, ?17, ?18, ?19, ?20)",
        )
        .map_err(sql_err("write memory"))?;
    for row in rows {
        let m = row.memory;
        let s = &m.scope;
        stmt.execute(params![
            id_bytes(&m.id.0),
            s.tenant,
            s.user,
            s.agent,
            s.session,
            m.kind.tag().as_str(),
            row.kind_json,
            m.text,
            row.provenance,
            row.created_round,
            m.created.time.0,
            m.valid_from.0,
            row.valid_to,
            m.is_active(),
            row.state,
            row.metrics,
            row.access,
            row.metadata,
            i64::from(m.version),
            m.superseded_by.map(|id| id.0.as_bytes().to_vec()),
        ])
        .map_err(duplicate_or("write memory", format!("memory {}", m.id)))?;
    }
    Ok(())
}

/// Store vectors of memories of `user` (new in this batch, `in_batch`, or already stored).
fn insert_vectors(
    tx: &Connection,
    user: &UserKey,
    in_batch: &HashSet<MemoryId>,
    vectors: &[(&VectorRow, Vec<u8>)],
    op: &'static str,
) -> StoreResult<()> {
    if vectors.is_empty() {
        return Ok(());
    }
    let mut known = tx
        .prepare_cached("SELECT 1 FROM memories WHERE id = ?1 AND tenant = ?2 AND user_id = ?3")
        .map_err(sql_err(op))?;
    let mut insert = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO vectors (memory_id, model, dim, data) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sql_err(op))?;
    for (row, data) in vectors {
        let id = id_bytes(&row.memory_id.0);
        if !in_batch.contains(&row.memory_id)
            && !known
                .exists(params![id, user.tenant, user.user])
                .map_err(sql_err(op))?
        {
            return Err(StoreError::InvalidWrite(format!(
                "vector for unknown memory {}",
                row.memory_id
            )));
        }
        insert
            .execute(params![id, row.model, to_sql_count(row.vector.len()), data])
            .map_err(sql_err(op))?;
    }
    Ok(())
}

/// Edits of existing memories (or of memories created in the batch), in batch order, through
/// one memory at a time.
fn apply_edits(tx: &Connection, user: &UserKey, batch: &WriteBatch) -> StoreResult<()> {
    for update in &batch.updates {
        if update_in_tx(tx, user, update.id, &update.patch, update.at)?.is_none() {
            return Err(StoreError::InvalidWrite(format!(
                "update of unknown memory {}",
                update.id
            )));
        }
    }
    for forget in &batch.forgets {
        if forget_in_tx(tx, user, forget)?.is_none() {
            return Err(StoreError::InvalidWrite(format!(
                "forget of unknown memory {}",
                forget.id
            )));
        }
    }
    for erase in &batch.erasures {
        erase_in_tx(tx, user, erase)?;
    }
    for erase in &batch.turn_erasures {
        erase_turn_in_tx(tx, user, erase)?;
    }
    Ok(())
}

/// Erase one memory's words (see [`BatchErase`]): the row, every history snapshot and the
/// vectors, plus an `Erased` version. With `secure_delete` on, the old bytes are zeroed where
/// they were; the write's caller checkpoints the WAL afterwards.
fn erase_in_tx(tx: &Connection, user: &UserKey, erase: &BatchErase) -> StoreResult<()> {
    let Some(memory) = load_memory(tx, user, erase.id)? else {
        return Err(StoreError::InvalidWrite(format!(
            "erasure of unknown memory {}",
            erase.id
        )));
    };
    let erased = erase.apply(&memory);
    rewrite_memory(tx, &erased)?;
    let history = read_history_rows(tx, erase.id)?;
    let mut rewrite = tx
        .prepare_cached(
            "UPDATE memory_history SET snapshot = ?3 WHERE memory_id = ?1 AND version = ?2",
        )
        .map_err(sql_err("erase history"))?;
    for entry in history {
        let snapshot = to_json(&erase.scrub(&entry.snapshot), "memory snapshot")?;
        rewrite
            .execute(params![
                id_bytes(&erase.id.0),
                i64::from(entry.version),
                snapshot
            ])
            .map_err(sql_err("erase history"))?;
    }
    let change = Change::Erased {
        reason: erase.reason.clone(),
    };
    insert_history(
        tx,
        erase.at,
        &change,
        &to_json(&erased, "memory snapshot")?,
        &erased,
    )?;
    tx.prepare_cached("DELETE FROM vectors WHERE memory_id = ?1")
        .and_then(|mut s| s.execute(params![id_bytes(&erase.id.0)]))
        .map_err(sql_err("erase memory"))?;
    Ok(())
}

/// Every history entry of one memory (whose user the caller has checked), oldest first.
fn read_history_rows(conn: &Connection, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT version, at_round, at_time, change, snapshot FROM memory_history \
             WHERE memory_id = ?1 ORDER BY version",
        )
        .map_err(sql_err("read history"))?;
    let mut rows = stmt
        .query(params![id_bytes(&id.0)])
        .map_err(sql_err("read history"))?;
    let mut entries = Vec::new();
    while let Some(row) = rows.next().map_err(sql_err("read history"))? {
        entries.push(read_history(row, id, 0)?);
    }
    Ok(entries)
}

/// Erase one raw turn's words (see [`TurnErase`]).
fn erase_turn_in_tx(tx: &Connection, user: &UserKey, erase: &TurnErase) -> StoreResult<()> {
    let changed = tx
        .prepare_cached(
            "UPDATE turns SET text = ?4, metadata = '{}' WHERE id = ?1 AND tenant = ?2 AND user_id = ?3",
        )
        .and_then(|mut s| {
            s.execute(params![
                id_bytes(&erase.id.0),
                user.tenant,
                user.user,
                erase.placeholder
            ])
        })
        .map_err(sql_err("erase turn"))?;
    if changed == 0 {
        return Err(StoreError::InvalidWrite(format!(
            "erasure of unknown turn {}",
            erase.id
        )));
    }
    Ok(())
}

/// Mark jobs done. Run before the batch's new jobs are inserted: a batch cannot finish a job
/// it enqueues. The `done_round IS NULL` guard makes a second completion (a replayed job)
/// change nothing, which rejects the batch.
fn finish_jobs(tx: &Connection, user: &UserKey, finished: &[(JobId, Moment)]) -> StoreResult<()> {
    if finished.is_empty() {
        return Ok(());
    }
    let mut finish = tx
        .prepare_cached(
            "UPDATE jobs SET done_round = ?4, done_time = ?5 \
             WHERE id = ?1 AND tenant = ?2 AND user_id = ?3 AND done_round IS NULL",
        )
        .map_err(sql_err("finish job"))?;
    for (id, at) in finished {
        let changed = finish
            .execute(params![
                id_bytes(&id.0),
                user.tenant,
                user.user,
                round_to_sql(at.round)?,
                at.time.0
            ])
            .map_err(sql_err("finish job"))?;
        if changed == 0 {
            return Err(match load_job(tx, user, *id)? {
                Some(_) => StoreError::InvalidWrite(format!("job {id} is already finished")),
                None => StoreError::InvalidWrite(format!("unknown job {id}")),
            });
        }
    }
    Ok(())
}

fn insert_jobs(tx: &Connection, jobs: &[JobRow<'_>]) -> StoreResult<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO jobs (id, tenant, user_id, agent, session, mechanism, kind, payload, \
             created_round, created_time, attempts, last_error, done_round, done_time) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )
        .map_err(sql_err("write job"))?;
    for (job, created_round, done) in jobs {
        let s = &job.scope;
        insert
            .execute(params![
                id_bytes(&job.id.0),
                s.tenant,
                s.user,
                s.agent,
                s.session,
                job.mechanism,
                job.kind,
                job.payload,
                created_round,
                job.created.time.0,
                i64::from(job.attempts),
                job.last_error,
                done.map(|(round, _)| round),
                done.map(|(_, time)| time),
            ])
            .map_err(duplicate_or("write job", format!("job {}", job.id)))?;
    }
    Ok(())
}

impl MemoryRead for SqliteStore {
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>> {
        self.read(|conn| {
            let sql = format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE id = ?1 AND tenant = ?2 AND user_id = ?3"
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("read turn"))?;
            let mut rows = stmt
                .query(params![id_bytes(&id.0), user.tenant, user.user])
                .map_err(sql_err("read turn"))?;
            match rows.next().map_err(sql_err("read turn"))? {
                Some(row) => read_turn(row).map(Some),
                None => Ok(None),
            }
        })
    }

    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>> {
        self.read_tx("list turns", |conn| {
            let total: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM turns WHERE tenant = ?1 AND user_id = ?2")
                .and_then(|mut s| s.query_row(params![user.tenant, user.user], |row| row.get(0)))
                .map_err(sql_err("list turns"))?;
            let total = count_to_usize(total, "list turns")?;
            let mut items = Vec::new();
            if page.reaches(total) {
                let sql = format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE tenant = ?1 AND user_id = ?2 \
                     ORDER BY round, time_ms, id LIMIT ?3 OFFSET ?4"
                );
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("list turns"))?;
                let mut rows = stmt
                    .query(params![
                        user.tenant,
                        user.user,
                        to_sql_count(page.limit),
                        to_sql_count(page.offset)
                    ])
                    .map_err(sql_err("list turns"))?;
                while let Some(row) = rows.next().map_err(sql_err("list turns"))? {
                    items.push(read_turn(row)?);
                }
            }
            Ok(Paged::from_window(items, total, page))
        })
    }

    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.read_tx("read turns by key", |conn| {
            let sql = format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE tenant = ?1 AND user_id = ?2 AND key = ?3"
            );
            let mut stmt = conn
                .prepare_cached(&sql)
                .map_err(sql_err("read turns by key"))?;
            let mut found = Vec::new();
            for key in keys {
                let mut rows = stmt
                    .query(params![user.tenant, user.user, key])
                    .map_err(sql_err("read turns by key"))?;
                if let Some(row) = rows.next().map_err(sql_err("read turns by key"))? {
                    found.push(read_turn(row)?);
                }
            }
            Ok(found)
        })
    }

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        self.read(|conn| load_memory(conn, user, id))
    }

    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read_tx("read memories", |conn| {
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(memory) = load_memory(conn, user, *id)? {
                    found.push(memory);
                }
            }
            Ok(found)
        })
    }

    fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> StoreResult<Paged<Memory>> {
        let (where_sql, mut params) = filter_sql(user, filter);
        self.read_tx("list memories", |conn| {
            let total: i64 = conn
                .prepare_cached(&format!("SELECT COUNT(*) {where_sql}"))
                .and_then(|mut s| s.query_row(params_from_iter(params.iter()), |row| row.get(0)))
                .map_err(sql_err("list memories"))?;
            let total = count_to_usize(total, "list memories")?;
            let mut items = Vec::new();
            if page.reaches(total) {
                let sql = format!(
                    "SELECT {MEMORY_COLUMNS} {where_sql} ORDER BY m.created_round, m.created_time, m.id LIMIT ? OFFSET ?"
                );
                params.push(Value::Integer(to_sql_count(page.limit)));
                params.push(Value::Integer(to_sql_count(page.offset)));
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("list memories"))?;
                let mut rows = stmt.query(params_from_iter(params.iter())).map_err(sql_err("list memories"))?;
                while let Some(row) = rows.next().map_err(sql_err("list memories"))? {
                    items.push(read_memory(row)?);
                }
            }
            Ok(Paged::from_window(items, total, page))
        })
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT h.version, h.at_round, h.at_time, h.change, h.snapshot FROM memory_history h \
                     JOIN memories m ON m.id = h.memory_id \
                     WHERE h.memory_id = ?1 AND m.tenant = ?2 AND m.user_id = ?3 ORDER BY h.version",
                )
                .map_err(sql_err("read history"))?;
            let mut rows = stmt.query(params![id_bytes(&id.0), user.tenant, user.user]).map_err(sql_err("read history"))?;
            let mut entries = Vec::new();
            while let Some(row) = rows.next().map_err(sql_err("read history"))? {
                entries.push(read_history(row, id, 0)?);
            }
            Ok(entries)
        })
    }

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT tenant, user_id FROM users ORDER BY tenant, user_id")
                .map_err(sql_err("list users"))?;
            let rows = stmt
                .query_map([], |row| {
                    Ok(UserKey {
                        tenant: row.get(0)?,
                        user: row.get(1)?,
                    })
                })
                .map_err(sql_err("list users"))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(sql_err("list users"))
        })
    }

    /// Coarser than the contract asks: one number for the whole file, so it moves when another
    /// handle commits a write of any user, not only of `user`.
    fn data_version(&self, _user: &UserKey) -> StoreResult<Option<u64>> {
        // SQLite's data_version changes, per connection, when *other* connections commit. The
        // writer is the only connection this store commits through, so asking it tells exactly
        // whether someone else wrote. While our own write holds it, say "can't tell" rather
        // than make a read wait for a write; the caller asks again on its next read.
        let Some(conn) = self.writer.try_lock() else {
            return Ok(None);
        };
        let version: i64 = conn
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .map_err(sql_err("read data_version"))?;
        Ok(Some(version as u64))
    }

    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.read(|conn| last_round_in(conn, user))
    }

    fn export_user(&self, user: &UserKey) -> StoreResult<UserExport> {
        export::export(self, user)
    }
}

impl JobRead for SqliteStore {
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
        self.read(|conn| load_job(conn, user, id))
    }

    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let sql = format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = ?1 AND user_id = ?2 AND done_round IS NULL \
                 ORDER BY created_round, created_time, id LIMIT ?3"
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err("list jobs"))?;
            let mut rows = stmt
                .query(params![user.tenant, user.user, to_sql_count(limit)])
                .map_err(sql_err("list jobs"))?;
            let mut jobs = Vec::new();
            while let Some(row) = rows.next().map_err(sql_err("list jobs"))? {
                jobs.push(read_job(row)?);
            }
            Ok(jobs)
        })
    }
}

impl KeyRead for SqliteStore {
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>> {
        self.read(|conn| keys::by_hash(conn, hash))
    }

    fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.read(keys::all)
    }
}

impl VectorRead for SqliteStore {
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT v.memory_id, v.dim, v.data FROM vectors v JOIN memories m ON m.id = v.memory_id \
                     WHERE m.tenant = ?1 AND m.user_id = ?2 AND m.active = 1 AND v.model = ?3 \
                     ORDER BY m.created_round, m.created_time, m.id",
                )
                .map_err(sql_err("read vectors"))?;
            let mut rows = stmt.query(params![user.tenant, user.user, model]).map_err(sql_err("read vectors"))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(sql_err("read vectors"))? {
                let id = MemoryId(uuid_from_blob(blob(row, 0, "read vectors")?, "vector")?);
                let dim: i64 = row.get(1).map_err(sql_err("read vectors"))?;
                let data = blob(row, 2, "read vectors")?;
                let vector = decode_vector(data, dim, &format!("vector of memory {id}"))?;
                out.push(VectorRow { memory_id: id, model: model.to_string(), vector });
            }
            Ok(out)
        })
    }

    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>> {
        self.read(|conn| binding::unembedded(conn, user, model, limit))
    }

    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>> {
        self.read(binding::vector_models)
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        None
    }
}

impl BindingRead for SqliteStore {
    fn binding(&self) -> StoreResult<Option<String>> {
        self.read(binding::read)
    }
}

impl BindingWrite for SqliteStore {
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()> {
        self.write_tx("bind", |tx| binding::bind(tx, model, expected))
    }
}

impl StoreRead for SqliteStore {
    fn info(&self) -> StoreInfo {
        let location = self.path().map_or_else(
            || "SQLite in memory".to_string(),
            |p| p.display().to_string(),
        );
        StoreInfo {
            kind: BackendKind::Sqlite,
            location,
            vector_search: Err("SQLite has no vector index".to_string()),
        }
    }
}

impl MemoryWrite for SqliteStore {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        let Some(user) = batch.validate()? else {
            return Ok(());
        };
        // Encode everything before taking the writer lock.
        let encoded = Encoded::encode(&batch)?;
        let in_batch: HashSet<MemoryId> = batch.memories.iter().map(|m| m.id).collect();
        self.write_tx("write", |tx| {
            batch.precondition.check(last_round_in(tx, &user)?)?;
            insert_turns(tx, &user, &encoded.turns)?;
            insert_memories(tx, &encoded.memories)?;
            insert_vectors(tx, &user, &in_batch, &encoded.vectors, "write vector")?;
            apply_edits(tx, &user, &batch)?;
            finish_jobs(tx, &user, &batch.finished_jobs)?;
            insert_jobs(tx, &encoded.jobs)
        })?;
        if batch.erases() {
            // The erased words may still sit in WAL frames: copy the WAL into the main file
            // (where secure_delete zeroed them) and truncate it, as purge does.
            self.checkpoint_truncate()?;
        }
        Ok(())
    }

    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        if accesses.is_empty() {
            return Ok(());
        }
        self.write_tx("record access", |tx| {
            // Load each log once, append in call order, write each back once.
            let mut logs: HashMap<MemoryId, Option<Vec<Access>>> = HashMap::new();
            let mut order = Vec::new();
            let mut select = tx
                .prepare_cached(
                    "SELECT access FROM memories WHERE id = ?1 AND tenant = ?2 AND user_id = ?3",
                )
                .map_err(sql_err("record access"))?;
            for (id, access) in accesses {
                if !logs.contains_key(id) {
                    let text: Option<String> = select
                        .query_row(params![id_bytes(&id.0), user.tenant, user.user], |row| {
                            row.get(0)
                        })
                        .optional()
                        .map_err(sql_err("record access"))?;
                    let log = text
                        .map(|t| {
                            from_json::<Vec<Access>>(&t, &format!("access log of memory {id}"))
                        })
                        .transpose()?;
                    logs.insert(*id, log);
                    order.push(*id);
                }
                if let Some(Some(log)) = logs.get_mut(id) {
                    log.push(*access);
                }
            }
            let mut update = tx
                .prepare_cached("UPDATE memories SET access = ?2 WHERE id = ?1")
                .map_err(sql_err("record access"))?;
            for id in order {
                if let Some(Some(log)) = logs.get(&id) {
                    update
                        .execute(params![id_bytes(&id.0), to_json(log, "access log")?])
                        .map_err(sql_err("record access"))?;
                }
            }
            Ok(())
        })
    }

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        let report = self.write_tx("purge user", |tx| {
            let run = |sql: &str| -> StoreResult<usize> {
                tx.prepare_cached(sql)
                    .and_then(|mut s| s.execute(params![user.tenant, user.user]))
                    .map_err(sql_err("purge user"))
            };
            let of_user = "SELECT id FROM memories WHERE tenant = ?1 AND user_id = ?2";
            let history_entries = run(&format!(
                "DELETE FROM memory_history WHERE memory_id IN ({of_user})"
            ))?;
            let vectors = run(&format!(
                "DELETE FROM vectors WHERE memory_id IN ({of_user})"
            ))?;
            let memories = run("DELETE FROM memories WHERE tenant = ?1 AND user_id = ?2")?;
            let turns = run("DELETE FROM turns WHERE tenant = ?1 AND user_id = ?2")?;
            run("DELETE FROM jobs WHERE tenant = ?1 AND user_id = ?2")?;
            run("DELETE FROM job_leases WHERE tenant = ?1 AND user_id = ?2")?;
            run("DELETE FROM users WHERE tenant = ?1 AND user_id = ?2")?;
            Ok(PurgeReport {
                turns,
                memories,
                history_entries,
                vectors,
            })
        })?;
        self.checkpoint_truncate()?;
        Ok(report)
    }

    fn import_user(&self, export: &UserExport) -> StoreResult<()> {
        export::import(self, export)
    }
}

impl JobWrite for SqliteStore {
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>> {
        self.write_tx("record job failure", |tx| {
            // A finished job is left as it is; the attempt counter saturates like a u32.
            tx.prepare_cached(
                "UPDATE jobs SET attempts = MIN(attempts + 1, 4294967295), last_error = ?4 \
                 WHERE id = ?1 AND tenant = ?2 AND user_id = ?3 AND done_round IS NULL",
            )
            .and_then(|mut s| s.execute(params![id_bytes(&id.0), user.tenant, user.user, error]))
            .map_err(sql_err("record job failure"))?;
            load_job(tx, user, id)
        })
    }

    fn lease_jobs(&self, user: &UserKey, holder: &str, lease: Duration) -> StoreResult<bool> {
        let now = now_ms();
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        self.write_tx("lease jobs", |tx| {
            // Taken when free or expired, renewed by its holder; otherwise the row is left alone
            // and no row changes.
            let changed = tx
                .prepare_cached(
                    "INSERT INTO job_leases (tenant, user_id, holder, until_ms) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (tenant, user_id) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms \
                     WHERE job_leases.holder = excluded.holder OR job_leases.until_ms <= ?5",
                )
                .and_then(|mut s| s.execute(params![user.tenant, user.user, holder, until, now]))
                .map_err(sql_err("lease jobs"))?;
            Ok(changed == 1)
        })
    }

    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()> {
        self.write_tx("release jobs", |tx| {
            tx.prepare_cached(
                "DELETE FROM job_leases WHERE tenant = ?1 AND user_id = ?2 AND holder = ?3",
            )
            .and_then(|mut s| s.execute(params![user.tenant, user.user, holder]))
            .map_err(sql_err("release jobs"))?;
            Ok(())
        })
    }
}

impl KeyWrite for SqliteStore {
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        self.write_tx("store API key", |tx| keys::put(tx, key))
    }

    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>> {
        self.write_tx("revoke API key", |tx| keys::revoke(tx, id, at))
    }
}

impl VectorWrite for SqliteStore {
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let encoded: Vec<(&VectorRow, Vec<u8>)> = rows
            .iter()
            .map(|v| (v, vector_to_le_bytes(&v.vector)))
            .collect();
        self.write_tx("put vectors", |tx| {
            insert_vectors(tx, user, &HashSet::new(), &encoded, "put vectors")
        })
    }

    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        self.write_tx("retain vectors", |tx| {
            binding::retain_vectors(tx, user, model)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::{ForgetCause, MemoryState};

    #[test]
    fn application_id_in_migration_matches_constant() {
        assert!(
            schema::MIGRATIONS[0].contains(&format!("application_id = {}", schema::APPLICATION_ID))
        );
    }

    /// A file written by a version-1 build (no jobs table) opens, upgrades in place, keeps its
    /// data and takes jobs.
    #[test]
    fn a_version_1_file_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let user = UserKey {
            tenant: "t".into(),
            user: "u".into(),
        };
        let scope = mnemos_core::Scope {
            tenant: "t".into(),
            user: "u".into(),
            agent: "a".into(),
            session: "s".into(),
        };
        let turn_id = TurnId::new();
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute("INSERT INTO users (tenant, user_id) VALUES ('t', 'u')", [])
                .unwrap();
            conn.execute(
                "INSERT INTO turns (id, tenant, user_id, agent, session, role, speaker, text, round, time_ms, \
                 metadata) VALUES (?1, 't', 'u', 'a', 's', 'user', NULL, 'written by v1', 3, 42, '{}')",
                params![id_bytes(&turn_id.0)],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let turn = store.turn(&user, turn_id).unwrap().unwrap();
        assert_eq!(turn.text, "written by v1");
        let job = mnemos_core::Job::new(scope, "m", "summary", "{}", turn.at);
        store
            .write(WriteBatch {
                jobs: vec![job.clone()],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(store.pending_jobs(&user, 10).unwrap(), vec![job]);
        drop(store);
        let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        assert_eq!(reopened.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(reopened.pending_jobs(&user, 10).unwrap().len(), 1);
        assert!(reopened.integrity_check().unwrap().is_empty());
    }

    /// Forgets stored before causes were (schema 6) get the cause their reason told, once, when
    /// the file is upgraded; forgets that stored theirs keep it, whatever their reason says.
    #[test]
    fn forgets_stored_before_causes_get_theirs_at_the_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        let user = UserKey::new("t", "u").unwrap();
        let turn = Turn {
            id: TurnId::new(),
            scope: mnemos_core::Scope::new("t", "u", "a", "s").unwrap(),
            role: mnemos_core::Role::User,
            speaker: None,
            text: "hello".into(),
            at: Moment {
                round: 1,
                time: Timestamp(5),
            },
            metadata: mnemos_core::Metadata::new(),
            key: None,
        };
        let (kept, legacy) = (Memory::from_turn(&turn), Memory::from_turn(&turn));
        let forget = |id: MemoryId| BatchForget {
            id,
            reason: "memgpt: evicted".into(),
            cause: ForgetCause::Request,
            at: turn.at,
        };
        {
            let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
            store
                .write(WriteBatch {
                    turns: vec![turn.clone()],
                    memories: vec![kept.clone(), legacy.clone()],
                    forgets: vec![forget(kept.id), forget(legacy.id)],
                    ..Default::default()
                })
                .unwrap();
        }
        {
            // What a schema-6 build wrote: no cause in the state or its snapshots.
            let conn = Connection::open(&path).unwrap();
            let id = id_bytes(&legacy.id.0);
            conn.execute(
                "UPDATE memories SET state = json_remove(state, '$.cause') WHERE id = ?1",
                params![id],
            )
            .unwrap();
            conn.execute(
                "UPDATE memory_history SET snapshot = json_remove(snapshot, '$.state.cause') \
                 WHERE memory_id = ?1",
                params![id],
            )
            .unwrap();
            conn.pragma_update(None, "user_version", 6).unwrap();
        }
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let cause_of = |m: &Memory| match &m.state {
            MemoryState::Forgotten { cause, .. } => cause.clone(),
            MemoryState::Active => panic!("{m:?} is active"),
        };
        let memgpt = ForgetCause::preset("memgpt");
        let got = store.memory(&user, legacy.id).unwrap().unwrap();
        assert_eq!(cause_of(&got), memgpt);
        let history = store.history(&user, legacy.id).unwrap();
        assert_eq!(cause_of(&history[1].snapshot), memgpt);
        let got = store.memory(&user, kept.id).unwrap().unwrap();
        assert_eq!(cause_of(&got), ForgetCause::Request);
        // Stored now, not derived at each read.
        let conn = Connection::open(&path).unwrap();
        let stored: String = conn
            .query_row(
                "SELECT json_extract(state, '$.cause.preset') FROM memories WHERE id = ?1",
                params![id_bytes(&legacy.id.0)],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(stored, "memgpt");
    }

    #[test]
    fn vector_encoding_is_little_endian_and_exact() {
        let v = [1.0f32, -0.0, f32::from_bits(1), f32::MAX];
        let bytes = vector_to_le_bytes(&v);
        assert_eq!(&bytes[..4], &1.0f32.to_le_bytes());
        let back = decode_vector(&bytes, 4, "test").unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert!(decode_vector(&bytes, 3, "test").is_err());
    }
}
