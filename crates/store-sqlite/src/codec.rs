//! Conversions between the core model and SQLite rows.
//!
//! Ids are stored as 16-byte UUID blobs (their byte order is the `Uuid` order, so `ORDER BY id`
//! matches the Rust order); structured fields are JSON text; vectors are little-endian `f32`
//! blobs. Anything that does not decode is reported as `StoreError::Corrupt`.

use mnemos_core::{
    check_finite_metrics, Access, HistoryEntry, Job, JobId, Memory, MemoryId, MemoryKind,
    MemoryState, Metadata, Metrics, Moment, Role, Scope, StoreError, StoreResult, Timestamp, Turn,
    TurnId,
};
use rusqlite::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

/// Map a rusqlite error to a store error; failed column conversions mean the file holds data
/// this code never writes, so they are corruption rather than a backend failure.
pub(crate) fn sql_err(op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |err| match err {
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) => {
            StoreError::Corrupt(format!("{op}: {err}"))
        }
        other => StoreError::backend(op, other),
    }
}

/// Is this a uniqueness / primary-key violation (a duplicate id)?
pub(crate) fn is_constraint_violation(err: &rusqlite::Error) -> bool {
    matches!(err, rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

pub(crate) fn uuid_from_blob(bytes: &[u8], what: &str) -> StoreResult<Uuid> {
    Uuid::from_slice(bytes).map_err(|_| {
        corrupt(format_args!(
            "{what}: id is {} bytes, not a UUID",
            bytes.len()
        ))
    })
}

/// SQLite integers are signed 64-bit; rounds beyond `i64::MAX` cannot be stored or ordered.
pub(crate) fn round_to_sql(round: u64) -> StoreResult<i64> {
    i64::try_from(round).map_err(|_| {
        StoreError::InvalidWrite(format!(
            "round {round} exceeds the SQLite store's limit of {}",
            i64::MAX
        ))
    })
}

fn round_from_sql(value: i64, what: &str) -> StoreResult<u64> {
    u64::try_from(value).map_err(|_| corrupt(format_args!("{what}: negative round {value}")))
}

pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T, what: &str) -> StoreResult<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::InvalidWrite(format!("cannot encode {what}: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| corrupt(format_args!("{what}: {e}")))
}

pub(crate) fn decode_vector(bytes: &[u8], dim: i64, what: &str) -> StoreResult<Vec<f32>> {
    usize::try_from(dim)
        .ok()
        .and_then(|d| mnemos_core::vector_from_le_bytes(bytes, d))
        .ok_or_else(|| {
            corrupt(format_args!(
                "{what}: {} bytes for dimension {dim}",
                bytes.len()
            ))
        })
}

/// Column list of every memory read; queries alias the table as `m`.
pub(crate) const MEMORY_COLUMNS: &str = "m.id, m.tenant, m.user_id, m.agent, m.session, m.kind_json, m.text, \
     m.provenance, m.created_round, m.created_time, m.valid_from, m.valid_to, m.state, m.metrics, m.access, \
     m.metadata, m.version, m.superseded_by";

pub(crate) const TURN_COLUMNS: &str =
    "id, tenant, user_id, agent, session, role, speaker, text, round, time_ms, metadata, key";

pub(crate) const JOB_COLUMNS: &str =
    "id, tenant, user_id, agent, session, mechanism, kind, payload, \
     created_round, created_time, attempts, last_error, done_round, done_time";

fn get<T: rusqlite::types::FromSql>(row: &Row<'_>, idx: usize, op: &'static str) -> StoreResult<T> {
    row.get(idx).map_err(sql_err(op))
}

/// The scope every row of turns, memories and jobs keeps in columns 1–4.
fn scope_at(row: &Row<'_>, op: &'static str) -> StoreResult<Scope> {
    Ok(Scope {
        tenant: get(row, 1, op)?,
        user: get(row, 2, op)?,
        agent: get(row, 3, op)?,
        session: get(row, 4, op)?,
    })
}

/// Borrow a blob column without copying it (vectors are read in bulk).
pub(crate) fn blob<'r>(row: &'r Row<'_>, idx: usize, op: &'static str) -> StoreResult<&'r [u8]> {
    let value = row.get_ref(idx).map_err(sql_err(op))?;
    value
        .as_blob()
        .map_err(|e| corrupt(format_args!("{op}: column {idx}: {e}")))
}

pub(crate) fn read_turn(row: &Row<'_>) -> StoreResult<Turn> {
    const OP: &str = "read turn";
    let id = TurnId(uuid_from_blob(&get::<Vec<u8>>(row, 0, OP)?, "turn")?);
    let what = format!("turn {id}");
    let role: String = get(row, 5, OP)?;
    let role = match role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "other" => Role::Other,
        other => return Err(corrupt(format_args!("{what}: unknown role '{other}'"))),
    };
    Ok(Turn {
        id,
        scope: scope_at(row, OP)?,
        role,
        speaker: get(row, 6, OP)?,
        text: get(row, 7, OP)?,
        at: Moment {
            round: round_from_sql(get(row, 8, OP)?, &what)?,
            time: Timestamp(get(row, 9, OP)?),
        },
        metadata: from_json::<Metadata>(&get::<String>(row, 10, OP)?, &what)?,
        key: get(row, 11, OP)?,
    })
}

pub(crate) fn read_memory(row: &Row<'_>) -> StoreResult<Memory> {
    const OP: &str = "read memory";
    let id = MemoryId(uuid_from_blob(&get::<Vec<u8>>(row, 0, OP)?, "memory")?);
    let what = format!("memory {id}");
    let version: i64 = get(row, 16, OP)?;
    Ok(Memory {
        id,
        scope: scope_at(row, OP)?,
        kind: from_json::<MemoryKind>(&get::<String>(row, 5, OP)?, &what)?,
        text: get(row, 6, OP)?,
        provenance: from_json::<Vec<TurnId>>(&get::<String>(row, 7, OP)?, &what)?,
        created: Moment {
            round: round_from_sql(get(row, 8, OP)?, &what)?,
            time: Timestamp(get(row, 9, OP)?),
        },
        valid_from: Timestamp(get(row, 10, OP)?),
        valid_to: get::<Option<i64>>(row, 11, OP)?.map(Timestamp),
        superseded_by: match get::<Option<Vec<u8>>>(row, 17, OP)? {
            Some(bytes) => Some(MemoryId(uuid_from_blob(&bytes, "superseding memory")?)),
            None => None,
        },
        state: from_json::<MemoryState>(&get::<String>(row, 12, OP)?, &what)?,
        metrics: from_json::<Metrics>(&get::<String>(row, 13, OP)?, &what)?,
        access: from_json::<Vec<Access>>(&get::<String>(row, 14, OP)?, &what)?,
        metadata: from_json::<Metadata>(&get::<String>(row, 15, OP)?, &what)?,
        version: u32::try_from(version)
            .map_err(|_| corrupt(format_args!("{what}: version {version}")))?,
    })
}

/// A history entry of memory `id` from the columns version, at_round, at_time, change and
/// snapshot, starting at column `first`.
pub(crate) fn read_history(row: &Row<'_>, id: MemoryId, first: usize) -> StoreResult<HistoryEntry> {
    const OP: &str = "read history";
    let what = format!("history of memory {id}");
    let version: i64 = get(row, first, OP)?;
    Ok(HistoryEntry {
        memory_id: id,
        version: u32::try_from(version)
            .map_err(|_| corrupt(format_args!("{what}: version {version}")))?,
        at: Moment {
            round: round_from_sql(get(row, first + 1, OP)?, &what)?,
            time: Timestamp(get(row, first + 2, OP)?),
        },
        change: from_json(&get::<String>(row, first + 3, OP)?, &what)?,
        snapshot: from_json(&get::<String>(row, first + 4, OP)?, &what)?,
    })
}

pub(crate) fn read_job(row: &Row<'_>) -> StoreResult<Job> {
    const OP: &str = "read job";
    let id = JobId(uuid_from_blob(&get::<Vec<u8>>(row, 0, OP)?, "job")?);
    let what = format!("job {id}");
    let attempts: i64 = get(row, 10, OP)?;
    let done = match (
        get::<Option<i64>>(row, 12, OP)?,
        get::<Option<i64>>(row, 13, OP)?,
    ) {
        (None, None) => None,
        (Some(round), Some(time)) => Some(Moment {
            round: round_from_sql(round, &what)?,
            time: Timestamp(time),
        }),
        _ => return Err(corrupt(format_args!("{what}: half-set completion moment"))),
    };
    Ok(Job {
        id,
        scope: scope_at(row, OP)?,
        mechanism: get(row, 5, OP)?,
        kind: get(row, 6, OP)?,
        payload: get(row, 7, OP)?,
        created: Moment {
            round: round_from_sql(get(row, 8, OP)?, &what)?,
            time: Timestamp(get(row, 9, OP)?),
        },
        attempts: u32::try_from(attempts)
            .map_err(|_| corrupt(format_args!("{what}: attempts {attempts}")))?,
        last_error: get(row, 11, OP)?,
        done,
    })
}

/// A memory's columns, encoded before the writer lock is taken so the lock is held only for SQL.
pub(crate) struct MemoryRow<'a> {
    pub memory: &'a Memory,
    pub kind_json: String,
    pub provenance: String,
    pub created_round: i64,
    pub valid_to: Option<i64>,
    pub state: String,
    pub metrics: String,
    pub access: String,
    pub metadata: String,
}

impl<'a> MemoryRow<'a> {
    pub fn encode(memory: &'a Memory) -> StoreResult<Self> {
        check_finite_metrics(&memory.metrics)?;
        if let MemoryState::Forgotten { at, .. } = &memory.state {
            round_to_sql(at.round)?;
        }
        Ok(MemoryRow {
            memory,
            kind_json: to_json(&memory.kind, "memory kind")?,
            provenance: to_json(&memory.provenance, "provenance")?,
            created_round: round_to_sql(memory.created.round)?,
            valid_to: memory.valid_to.map(|t| t.0),
            state: to_json(&memory.state, "memory state")?,
            metrics: to_json(&memory.metrics, "metrics")?,
            access: to_json(&memory.access, "access log")?,
            metadata: to_json(&memory.metadata, "metadata")?,
        })
    }
}
