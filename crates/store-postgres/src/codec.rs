//! Conversions between the core model and PostgreSQL rows, and error mapping.
//!
//! Structured fields are JSON text (exact round trips: `serde_json` with `float_roundtrip`),
//! except a memory's metadata (`jsonb`); vectors are little-endian `f32` in `bytea`. Anything
//! that does not decode is reported as `StoreError::Corrupt`.

use mnemos_core::{
    HistoryEntry, Job, JobId, Memory, MemoryId, MemoryKind, MemoryState, Metadata, Metrics, Moment,
    Role, Scope, StoreError, StoreResult, Timestamp, Turn, TurnId,
};
use postgres::error::SqlState;
use postgres::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Map a PostgreSQL error to a store error. Text PostgreSQL cannot hold (U+0000 in `text`
/// or `jsonb`) is the caller's input, so it is an invalid write, never a backend failure.
pub(crate) fn pg_err(op: &'static str) -> impl Fn(postgres::Error) -> StoreError {
    move |err| match err.code() {
        Some(code)
            if *code == SqlState::CHARACTER_NOT_IN_REPERTOIRE
                || *code == SqlState::UNTRANSLATABLE_CHARACTER =>
        {
            StoreError::InvalidWrite(format!(
                "{op}: PostgreSQL cannot store this text (it holds a NUL character, U+0000)"
            ))
        }
        _ => StoreError::backend(op, err),
    }
}

/// Is this a uniqueness violation (a duplicate id or key)?
pub(crate) fn is_unique_violation(err: &postgres::Error) -> bool {
    err.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// Should the whole transaction be tried again (a serialization failure or deadlock)?
pub(crate) fn is_retryable(err: &StoreError) -> bool {
    let StoreError::Backend { source, .. } = err else {
        return false;
    };
    source
        .downcast_ref::<postgres::Error>()
        .and_then(postgres::Error::code)
        .is_some_and(|c| {
            *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
        })
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

/// PostgreSQL integers are signed 64-bit; rounds beyond `i64::MAX` cannot be stored or ordered.
pub(crate) fn round_to_sql(round: u64) -> StoreResult<i64> {
    i64::try_from(round).map_err(|_| {
        StoreError::InvalidWrite(format!(
            "round {round} exceeds the PostgreSQL store's limit of {}",
            i64::MAX
        ))
    })
}

pub(crate) fn round_from_sql(value: i64, what: &str) -> StoreResult<u64> {
    u64::try_from(value).map_err(|_| corrupt(format_args!("{what}: negative round {value}")))
}

pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T, what: &str) -> StoreResult<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::InvalidWrite(format!("cannot encode {what}: {e}")))
}

pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| corrupt(format_args!("{what}: {e}")))
}

/// `jsonb` cannot hold U+0000 (not even escaped): refuse it by name before any SQL runs.
pub(crate) fn check_metadata(metadata: &Metadata, what: &str) -> StoreResult<()> {
    match metadata
        .iter()
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
    {
        Some((key, _)) => Err(StoreError::InvalidWrite(format!(
            "{what} metadata '{}' holds a NUL character, which PostgreSQL cannot store",
            key.replace('\0', "\\0")
        ))),
        None => Ok(()),
    }
}

pub(crate) fn metadata_json(metadata: &Metadata, what: &str) -> StoreResult<serde_json::Value> {
    check_metadata(metadata, what)?;
    serde_json::to_value(metadata)
        .map_err(|e| StoreError::InvalidWrite(format!("cannot encode {what} metadata: {e}")))
}

pub(crate) fn decode_vector(bytes: &[u8], dim: i32, what: &str) -> StoreResult<Vec<f32>> {
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

pub(crate) fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a Row,
    idx: usize,
    op: &'static str,
) -> StoreResult<T> {
    row.try_get(idx)
        .map_err(|e| corrupt(format_args!("{op}: column {idx}: {e}")))
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

/// The scope every row of turns, memories and jobs keeps in columns 1–4.
fn scope_at(row: &Row, op: &'static str) -> StoreResult<Scope> {
    Ok(Scope {
        tenant: get(row, 1, op)?,
        user: get(row, 2, op)?,
        agent: get(row, 3, op)?,
        session: get(row, 4, op)?,
    })
}

pub(crate) fn read_turn(row: &Row) -> StoreResult<Turn> {
    const OP: &str = "read turn";
    let id = TurnId(get(row, 0, OP)?);
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

pub(crate) fn read_memory(row: &Row) -> StoreResult<Memory> {
    const OP: &str = "read memory";
    let id = MemoryId(get(row, 0, OP)?);
    let what = format!("memory {id}");
    let version: i64 = get(row, 16, OP)?;
    let metadata: serde_json::Value = get(row, 15, OP)?;
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
        superseded_by: get::<Option<uuid::Uuid>>(row, 17, OP)?.map(MemoryId),
        state: from_json::<MemoryState>(&get::<String>(row, 12, OP)?, &what)?,
        metrics: from_json::<Metrics>(&get::<String>(row, 13, OP)?, &what)?,
        access: from_json(&get::<String>(row, 14, OP)?, &what)?,
        metadata: serde_json::from_value(metadata)
            .map_err(|e| corrupt(format_args!("{what}: metadata: {e}")))?,
        version: u32::try_from(version)
            .map_err(|_| corrupt(format_args!("{what}: version {version}")))?,
    })
}

/// A history entry of memory `id` from the columns version, at_round, at_time, change and
/// snapshot, starting at column `first`.
pub(crate) fn read_history(row: &Row, id: MemoryId, first: usize) -> StoreResult<HistoryEntry> {
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

pub(crate) fn read_job(row: &Row) -> StoreResult<Job> {
    const OP: &str = "read job";
    let id = JobId(get(row, 0, OP)?);
    let what = format!("job {id}");
    let attempts: i64 = get(row, 10, OP)?;
    let done_round: Option<i64> = get(row, 12, OP)?;
    let done_time: Option<i64> = get(row, 13, OP)?;
    let done = match (done_round, done_time) {
        (Some(round), Some(time)) => Some(Moment {
            round: round_from_sql(round, &what)?,
            time: Timestamp(time),
        }),
        (None, None) => None,
        _ => return Err(corrupt(format_args!("{what}: half-finished"))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_encoding_is_little_endian_and_exact() {
        let v = [1.0f32, -0.0, f32::from_bits(1), f32::MAX];
        let bytes = mnemos_core::vector_to_le_bytes(&v);
        assert_eq!(&bytes[..4], &1.0f32.to_le_bytes());
        let back = decode_vector(&bytes, 4, "test").unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert!(decode_vector(&bytes, 3, "test").is_err());
    }

    #[test]
    fn nul_in_metadata_is_refused_by_name() {
        let mut metadata = Metadata::new();
        metadata.insert("mood".into(), "calm\0".into());
        let err = check_metadata(&metadata, "turn").unwrap_err();
        assert!(
            matches!(&err, StoreError::InvalidWrite(m) if m.contains("mood")),
            "{err}"
        );
    }
}
