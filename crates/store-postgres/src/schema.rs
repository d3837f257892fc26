//! Versioned schema migrations, recorded in the table `mnemos_schema`.
//!
//! `MIGRATIONS[i]` upgrades a database from version `i` to `i + 1`. Every open runs the check
//! and the missing steps in one transaction under a database-wide advisory lock, so any number
//! of servers starting at once against one database apply each step exactly once (concurrent
//! `CREATE … IF NOT EXISTS` statements collide in the catalog without it). Steps are
//! append-only: never edit a released step, add a new one.

use mnemos_core::{Memory, MemoryState, StoreError, StoreResult};
use postgres::{Client, Transaction};

use crate::codec::{from_json, pg_err, to_json};

/// The advisory lock every migration holds ("mnms").
pub(crate) const MIGRATION_LOCK: i64 = 0x6d6e_6d73;

/// The tables of SQLite's schema V1–V5 in PostgreSQL types: ids are `uuid` (ordered like the
/// Rust `Uuid`), rounds and times `bigint`, structured fields exact JSON `text`, a memory's
/// metadata `jsonb` (so metadata filters run as `@>` on an index), vectors little-endian `f32`
/// in `bytea`.
const V1: &str = "
CREATE TABLE users (
    tenant  text NOT NULL,
    user_id text NOT NULL,
    PRIMARY KEY (tenant, user_id)
);

CREATE TABLE turns (
    id       uuid PRIMARY KEY,
    tenant   text NOT NULL,
    user_id  text NOT NULL,
    agent    text NOT NULL,
    session  text NOT NULL,
    role     text NOT NULL,
    speaker  text,
    text     text NOT NULL,
    round    bigint NOT NULL,
    time_ms  bigint NOT NULL,
    metadata text NOT NULL,
    key      text
);
CREATE INDEX turns_by_user_order ON turns (tenant, user_id, round, time_ms, id);
CREATE UNIQUE INDEX turns_by_user_key ON turns (tenant, user_id, key) WHERE key IS NOT NULL;

CREATE TABLE memories (
    id            uuid PRIMARY KEY,
    tenant        text NOT NULL,
    user_id       text NOT NULL,
    agent         text NOT NULL,
    session       text NOT NULL,
    kind          text NOT NULL,
    kind_json     text NOT NULL,
    text          text NOT NULL,
    provenance    text NOT NULL,
    created_round bigint NOT NULL,
    created_time  bigint NOT NULL,
    valid_from    bigint NOT NULL,
    valid_to      bigint,
    active        boolean NOT NULL,
    state         text NOT NULL,
    metrics       text NOT NULL,
    access        text NOT NULL,
    metadata      jsonb NOT NULL,
    version       bigint NOT NULL
);
CREATE INDEX memories_by_user_order ON memories (tenant, user_id, created_round, created_time, id);
CREATE INDEX memories_by_user_kind ON memories (tenant, user_id, kind);
CREATE INDEX memories_by_user_time ON memories (tenant, user_id, created_time);
CREATE INDEX memories_metadata ON memories USING gin (metadata jsonb_path_ops);

CREATE TABLE memory_history (
    memory_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    version   bigint NOT NULL,
    at_round  bigint NOT NULL,
    at_time   bigint NOT NULL,
    change    text NOT NULL,
    snapshot  text NOT NULL,
    PRIMARY KEY (memory_id, version)
);

CREATE TABLE vectors (
    memory_id uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    model     text NOT NULL,
    dim       integer NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (memory_id, model)
);

CREATE TABLE jobs (
    id            uuid PRIMARY KEY,
    tenant        text NOT NULL,
    user_id       text NOT NULL,
    agent         text NOT NULL,
    session       text NOT NULL,
    mechanism     text NOT NULL,
    kind          text NOT NULL,
    payload       text NOT NULL,
    created_round bigint NOT NULL,
    created_time  bigint NOT NULL,
    attempts      bigint NOT NULL CHECK (attempts >= 0),
    last_error    text,
    done_round    bigint,
    done_time     bigint,
    CHECK ((done_round IS NULL) = (done_time IS NULL))
);
CREATE INDEX jobs_by_user ON jobs (tenant, user_id);
CREATE INDEX jobs_pending_by_user_order ON jobs (tenant, user_id, created_round, created_time, id)
    WHERE done_round IS NULL;

CREATE TABLE job_leases (
    tenant   text NOT NULL,
    user_id  text NOT NULL,
    holder   text NOT NULL,
    until_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, user_id)
);

CREATE TABLE api_keys (
    id         uuid PRIMARY KEY,
    tenant     text NOT NULL,
    name       text NOT NULL,
    hash       text NOT NULL UNIQUE,
    prefix     text NOT NULL,
    created_ms bigint NOT NULL,
    revoked_ms bigint
);

-- Commits so far, spread over slots; data_version sums them.
CREATE TABLE mnemos_commits (
    slot integer PRIMARY KEY,
    n    bigint NOT NULL
);
INSERT INTO mnemos_commits (slot, n) SELECT s, 0 FROM generate_series(0, 63) AS s;
";

/// Per-user data versions (see `versions`) instead of V1's whole-database commit counter:
/// users that already have data get their first version here.
/// Servers built for V1 write the dropped counter and must be stopped before this runs.
const V2: &str = "
CREATE SEQUENCE mnemos_versions;

CREATE TABLE user_versions (
    tenant  text NOT NULL,
    user_id text NOT NULL,
    v       bigint NOT NULL,
    PRIMARY KEY (tenant, user_id)
);
INSERT INTO user_versions (tenant, user_id, v)
    SELECT tenant, user_id, nextval('mnemos_versions') FROM users;

-- The latest purge's version: the version of every user without a row.
CREATE TABLE mnemos_purges (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    v   bigint NOT NULL
);
INSERT INTO mnemos_purges (v) VALUES (0);

DROP TABLE mnemos_commits;
";

/// Supersession: the memory that replaced a memory no longer current (a later statement of a
/// new value for the same fact), beside its `valid_to`.
const V3: &str = "
ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_by uuid;
";

/// Forget causes: every forgotten memory's state now stores who forgot it (`cause`). No table
/// changes (states are JSON text); [`store_forget_causes`] gives the rows written before their
/// cause, once, in the migration's transaction.
const V4: &str = "-- forget causes: see store_forget_causes";

/// Facts about the database as a whole, by key: `vector_space`, the embedder id the database
/// is bound to (`BindingRead`). A database from before V5 has no binding; the engine binds it
/// on its next open. Vectors by model are counted for that check, so they get a model index.
const V5: &str = "
CREATE TABLE IF NOT EXISTS mnemos_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_by_model ON vectors (model);
";

/// Ordered migration steps; the schema version is the number of steps applied.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5];

/// Steps that rewrite data after the SQL of the step reaching the same version, in the
/// migration's transaction.
type DataStep = fn(&mut Transaction<'_>) -> StoreResult<()>;
const DATA_STEPS: &[(i64, DataStep)] = &[(4, store_forget_causes)];

/// Give every forgotten state stored without a cause (a row written before V4, in the memory
/// and in its history's snapshots) the cause its reason tells, by the rule the inspector used
/// then (`ForgetCause::from_legacy_reason`, which decoding applies to a state without one), so
/// that from now on every row holds its cause and none is read from words again.
fn store_forget_causes(tx: &mut Transaction<'_>) -> StoreResult<()> {
    let op = "store forget causes";
    let states = tx
        .query(
            "SELECT id, state FROM memories \
             WHERE NOT active AND (state::jsonb -> 'cause') IS NULL",
            &[],
        )
        .map_err(pg_err(op))?;
    for row in states {
        let id: uuid::Uuid = row.get(0);
        let state: MemoryState = from_json(&row.get::<_, String>(1), "memory state")?;
        tx.execute(
            "UPDATE memories SET state = $2 WHERE id = $1",
            &[&id, &to_json(&state, "memory state")?],
        )
        .map_err(pg_err(op))?;
    }
    let snapshots = tx
        .query(
            "SELECT memory_id, version, snapshot FROM memory_history \
             WHERE snapshot::jsonb -> 'state' ->> 'state' = 'forgotten' \
             AND (snapshot::jsonb -> 'state' -> 'cause') IS NULL",
            &[],
        )
        .map_err(pg_err(op))?;
    for row in snapshots {
        let id: uuid::Uuid = row.get(0);
        let version: i64 = row.get(1);
        let snapshot: Memory = from_json(&row.get::<_, String>(2), "memory snapshot")?;
        tx.execute(
            "UPDATE memory_history SET snapshot = $3 WHERE memory_id = $1 AND version = $2",
            &[&id, &version, &to_json(&snapshot, "memory snapshot")?],
        )
        .map_err(pg_err(op))?;
    }
    Ok(())
}

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Bring the database to [`SCHEMA_VERSION`] (or refuse a newer one, touching nothing).
pub(crate) fn migrate(client: &mut Client) -> StoreResult<()> {
    let mut tx = client.transaction().map_err(pg_err("migrate"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg_err("migrate"))?;
    let found = read_version(&mut tx)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return tx.commit().map_err(pg_err("migrate"));
    }
    if found == 0 {
        tx.batch_execute("CREATE TABLE IF NOT EXISTS mnemos_schema (version bigint NOT NULL)")
            .map_err(pg_err("migrate"))?;
    }
    for (version, step) in (1..)
        .zip(MIGRATIONS)
        .skip(usize::try_from(found).unwrap_or(0))
    {
        tx.batch_execute(step).map_err(pg_err("migrate"))?;
        for (_, data_step) in DATA_STEPS.iter().filter(|(v, _)| *v == version) {
            data_step(&mut tx)?;
        }
    }
    tx.execute("DELETE FROM mnemos_schema", &[])
        .map_err(pg_err("migrate"))?;
    tx.execute(
        "INSERT INTO mnemos_schema (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )
    .map_err(pg_err("migrate"))?;
    tx.commit().map_err(pg_err("migrate"))
}

/// The recorded schema version; 0 for a database mnemos never touched.
pub(crate) fn read_version(client: &mut impl postgres::GenericClient) -> StoreResult<i64> {
    let exists: bool = client
        .query_one("SELECT to_regclass('mnemos_schema') IS NOT NULL", &[])
        .map_err(pg_err("read schema version"))?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_opt("SELECT max(version) FROM mnemos_schema", &[])
        .map_err(pg_err("read schema version"))?;
    let version: Option<i64> = row.and_then(|r| r.get(0));
    match version {
        Some(v) if v < 0 => Err(StoreError::Corrupt(format!("negative schema version {v}"))),
        Some(v) => Ok(v),
        None => Ok(0),
    }
}
