//! Versioned schema migrations, tracked in `PRAGMA user_version`.
//!
//! `MIGRATIONS[i]` upgrades a database from version `i` to `i + 1`. Each step runs in its own
//! `BEGIN IMMEDIATE` transaction together with the version bump, so a crash mid-migration leaves
//! the previous version intact, and two processes opening the same file cannot both apply a step.
//! Steps are append-only: never edit a released step, add a new one.

use mnemos_core::{Memory, MemoryState, StoreError, StoreResult};
use rusqlite::{params, Connection, TransactionBehavior};

use crate::codec::{from_json, sql_err, to_json};

/// Marks a file as a mnemos store (`PRAGMA application_id`, "mnms").
pub(crate) const APPLICATION_ID: i64 = 0x6d6e_6d73;

const V1: &str = "
PRAGMA application_id = 1835953523;

-- Every user with at least one turn or memory; makes users() independent of data volume.
CREATE TABLE users (
    tenant  TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (tenant, user_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE turns (
    id       BLOB PRIMARY KEY NOT NULL,
    tenant   TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    agent    TEXT NOT NULL,
    session  TEXT NOT NULL,
    role     TEXT NOT NULL,
    speaker  TEXT,
    text     TEXT NOT NULL,
    round    INTEGER NOT NULL,
    time_ms  INTEGER NOT NULL,
    metadata TEXT NOT NULL
) STRICT;
CREATE INDEX turns_by_user_order ON turns (tenant, user_id, round, time_ms, id);

CREATE TABLE memories (
    id            BLOB PRIMARY KEY NOT NULL,
    tenant        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    agent         TEXT NOT NULL,
    session       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    kind_json     TEXT NOT NULL,
    text          TEXT NOT NULL,
    provenance    TEXT NOT NULL,
    created_round INTEGER NOT NULL,
    created_time  INTEGER NOT NULL,
    valid_from    INTEGER NOT NULL,
    valid_to      INTEGER,
    active        INTEGER NOT NULL,
    state         TEXT NOT NULL,
    metrics       TEXT NOT NULL,
    access        TEXT NOT NULL,
    metadata      TEXT NOT NULL,
    version       INTEGER NOT NULL
) STRICT;
CREATE INDEX memories_by_user_order ON memories (tenant, user_id, created_round, created_time, id);
CREATE INDEX memories_by_user_kind ON memories (tenant, user_id, kind);

CREATE TABLE memory_history (
    memory_id BLOB NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    version   INTEGER NOT NULL,
    at_round  INTEGER NOT NULL,
    at_time   INTEGER NOT NULL,
    change    TEXT NOT NULL,
    snapshot  TEXT NOT NULL,
    PRIMARY KEY (memory_id, version)
) STRICT;

CREATE TABLE vectors (
    memory_id BLOB NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    dim       INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (memory_id, model)
) STRICT;
";

/// Durable jobs (derived work). A job is enqueued and finished only by `write`, in the batch's
/// transaction; `done_round`/`done_time` are both NULL while the job is pending.
const V2: &str = "
CREATE TABLE jobs (
    id            BLOB PRIMARY KEY NOT NULL,
    tenant        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    agent         TEXT NOT NULL,
    session       TEXT NOT NULL,
    mechanism     TEXT NOT NULL,
    kind          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_round INTEGER NOT NULL,
    created_time  INTEGER NOT NULL,
    attempts      INTEGER NOT NULL CHECK (attempts >= 0),
    last_error    TEXT,
    done_round    INTEGER,
    done_time     INTEGER,
    CHECK ((done_round IS NULL) = (done_time IS NULL))
) STRICT;
-- Purge and per-user lookups.
CREATE INDEX jobs_by_user ON jobs (tenant, user_id);
-- pending_jobs(): only unfinished jobs, already in listing order; finished jobs drop out.
CREATE INDEX jobs_pending_by_user_order ON jobs (tenant, user_id, created_round, created_time, id)
    WHERE done_round IS NULL;
";

/// Turn idempotency keys: unique per user, so a retried request or a re-run ingest cannot store
/// a turn twice; and creation time in listing filters.
const V3: &str = "
ALTER TABLE turns ADD COLUMN key TEXT;
CREATE UNIQUE INDEX turns_by_user_key ON turns (tenant, user_id, key) WHERE key IS NOT NULL;
CREATE INDEX memories_by_user_time ON memories (tenant, user_id, created_time);
";

/// API keys: who may call a server and in which tenant. Only the secret's SHA-256 is stored;
/// keys are never deleted (a revoked key stays listed), and they belong to no user.
const V4: &str = "
CREATE TABLE api_keys (
    id          BLOB PRIMARY KEY,
    tenant      TEXT NOT NULL,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    revoked_ms  INTEGER
) STRICT;
";

/// Job leases: which engine may run a user's pending jobs, until when (milliseconds since the
/// epoch, this machine's clock). One row per user at most; purge deletes it.
const V5: &str = "
CREATE TABLE job_leases (
    tenant   TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    holder   TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, user_id)
) STRICT, WITHOUT ROWID;
";

/// Supersession: the memory that replaced a memory no longer current (a later statement of a
/// new value for the same fact), beside its `valid_to`.
const V6: &str = "
ALTER TABLE memories ADD COLUMN superseded_by BLOB;
";

/// Forget causes: every forgotten memory's state now stores who forgot it (`cause`). No table
/// changes (states are JSON); [`store_forget_causes`] gives the rows written before their cause,
/// once, in this step's transaction.
const V7: &str = "-- forget causes: see store_forget_causes";

/// Facts about the database as a whole, by key: `vector_space`, the embedder id the database
/// is bound to (`BindingRead`). A database from before V8 has no binding; the engine binds it
/// on its next open. Vectors by model are counted for that check, so they get a model index.
const V8: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_by_model ON vectors (model);
";

/// Ordered migration steps; the schema version is the number of steps applied.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8];

/// Steps that rewrite data after the SQL of the step reaching the same version, in its
/// transaction.
type DataStep = fn(&Connection) -> StoreResult<()>;
const DATA_STEPS: &[(i64, DataStep)] = &[(7, store_forget_causes)];

/// Give every forgotten state stored without a cause (a row written before V7, in the memory
/// and in its history's snapshots) the cause its reason tells, by the rule the inspector used
/// then (`ForgetCause::from_legacy_reason`, which decoding applies to a state without one),
/// so that from now on every row holds its cause and none is read from words again.
fn store_forget_causes(conn: &Connection) -> StoreResult<()> {
    let op = "store forget causes";
    let legacy_states: Vec<(Vec<u8>, String)> = conn
        .prepare(
            "SELECT id, state FROM memories \
             WHERE active = 0 AND json_type(state, '$.cause') IS NULL",
        )
        .and_then(|mut stmt| {
            stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect()
        })
        .map_err(sql_err(op))?;
    for (id, state) in legacy_states {
        let state: MemoryState = from_json(&state, "memory state")?;
        conn.execute(
            "UPDATE memories SET state = ?2 WHERE id = ?1",
            params![id, to_json(&state, "memory state")?],
        )
        .map_err(sql_err(op))?;
    }
    let legacy_snapshots: Vec<(Vec<u8>, i64, String)> = conn
        .prepare(
            "SELECT memory_id, version, snapshot FROM memory_history \
             WHERE json_extract(snapshot, '$.state.state') = 'forgotten' \
             AND json_type(snapshot, '$.state.cause') IS NULL",
        )
        .and_then(|mut stmt| {
            stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect()
        })
        .map_err(sql_err(op))?;
    for (id, version, snapshot) in legacy_snapshots {
        let snapshot: Memory = from_json(&snapshot, "memory snapshot")?;
        conn.execute(
            "UPDATE memory_history SET snapshot = ?3 WHERE memory_id = ?1 AND version = ?2",
            params![id, version, to_json(&snapshot, "memory snapshot")?],
        )
        .map_err(sql_err(op))?;
    }
    Ok(())
}

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(crate) fn user_version(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(sql_err("read schema version"))
}

/// Bring the database to [`SCHEMA_VERSION`], one transaction per step.
pub(crate) fn migrate(conn: &mut Connection) -> StoreResult<()> {
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err("migrate"))?;
        let version = user_version(&tx)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        check_application(&tx, version)?;
        if version == SCHEMA_VERSION {
            return tx.commit().map_err(sql_err("migrate"));
        }
        let step = usize::try_from(version)
            .ok()
            .and_then(|v| MIGRATIONS.get(v))
            .ok_or_else(|| StoreError::Corrupt(format!("negative schema version {version}")))?;
        tx.execute_batch(step).map_err(sql_err("migrate"))?;
        for (_, data_step) in DATA_STEPS.iter().filter(|(v, _)| *v == version + 1) {
            data_step(&tx)?;
        }
        tx.pragma_update(None, "user_version", version + 1)
            .map_err(sql_err("migrate"))?;
        tx.commit().map_err(sql_err("migrate"))?;
    }
}

/// Refuse to adopt a SQLite file that belongs to another application.
fn check_application(conn: &Connection, version: i64) -> StoreResult<()> {
    let app_id: i64 = conn
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(sql_err("read application id"))?;
    if app_id == APPLICATION_ID {
        return Ok(());
    }
    let foreign = if version == 0 && app_id == 0 {
        let objects: i64 = conn
            .query_row("SELECT COUNT(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(sql_err("inspect schema"))?;
        objects > 0
    } else {
        true
    };
    if foreign {
        return Err(StoreError::backend_message(
            "open",
            format!("the file is a SQLite database of another application (application_id {app_id:#x}, user_version {version})"),
        ));
    }
    Ok(())
}
