//! `export_user` and `import_user`: one user's rows out in one read transaction, and in, exactly
//! as exported, in one write transaction.

use std::collections::{HashMap, HashSet};

use mnemos_core::{Conflict, MemoryExport, MemoryId, StoreResult, UserExport, UserKey, VectorRow};
use rusqlite::{params, Connection};

use crate::codec::{
    blob, decode_vector, read_history, read_job, read_memory, read_turn, sql_err, to_json,
    uuid_from_blob, MemoryRow, JOB_COLUMNS, MEMORY_COLUMNS, TURN_COLUMNS,
};
use crate::{
    encode_jobs, encode_turns, encode_vectors, insert_history_row, insert_jobs, insert_memory_rows,
    insert_turns, insert_vectors, SqliteStore,
};

const OP: &str = "export user";

/// Every row `sql` (with the user's tenant and id as `?1`, `?2`) selects, decoded by `read`.
fn rows_of<T>(
    conn: &Connection,
    user: &UserKey,
    sql: &str,
    mut read: impl FnMut(&rusqlite::Row<'_>) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).map_err(sql_err(OP))?;
    let mut rows = stmt
        .query(params![user.tenant, user.user])
        .map_err(sql_err(OP))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(sql_err(OP))? {
        out.push(read(row)?);
    }
    Ok(out)
}

fn memories_with_history(conn: &Connection, user: &UserKey) -> StoreResult<Vec<MemoryExport>> {
    let memories = rows_of(
        conn,
        user,
        &format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.tenant = ?1 AND m.user_id = ?2"),
        read_memory,
    )?;
    let entries = rows_of(
        conn,
        user,
        "SELECT h.memory_id, h.version, h.at_round, h.at_time, h.change, h.snapshot \
         FROM memory_history h JOIN memories m ON m.id = h.memory_id \
         WHERE m.tenant = ?1 AND m.user_id = ?2",
        |row| {
            let id = MemoryId(uuid_from_blob(blob(row, 0, OP)?, "history")?);
            read_history(row, id, 1)
        },
    )?;
    let mut history: HashMap<MemoryId, Vec<_>> = HashMap::new();
    for entry in entries {
        history.entry(entry.memory_id).or_default().push(entry);
    }
    Ok(memories
        .into_iter()
        .map(|memory| MemoryExport {
            history: history.remove(&memory.id).unwrap_or_default(),
            memory,
        })
        .collect())
}

/// Every vector of the user's memories, of every model and whatever the memory's state.
fn all_vectors(conn: &Connection, user: &UserKey) -> StoreResult<Vec<VectorRow>> {
    rows_of(
        conn,
        user,
        "SELECT v.memory_id, v.model, v.dim, v.data FROM vectors v \
         JOIN memories m ON m.id = v.memory_id WHERE m.tenant = ?1 AND m.user_id = ?2",
        |row| {
            let id = MemoryId(uuid_from_blob(blob(row, 0, OP)?, "vector")?);
            let model: String = row.get(1).map_err(sql_err(OP))?;
            let dim: i64 = row.get(2).map_err(sql_err(OP))?;
            let vector = decode_vector(blob(row, 3, OP)?, dim, &format!("vector of memory {id}"))?;
            Ok(VectorRow {
                memory_id: id,
                model,
                vector,
            })
        },
    )
}

pub(crate) fn export(store: &SqliteStore, user: &UserKey) -> StoreResult<UserExport> {
    store.read_tx(OP, |conn| {
        let turns = rows_of(
            conn,
            user,
            &format!("SELECT {TURN_COLUMNS} FROM turns WHERE tenant = ?1 AND user_id = ?2"),
            read_turn,
        )?;
        let memories = memories_with_history(conn, user)?;
        let vectors = all_vectors(conn, user)?;
        let jobs = rows_of(
            conn,
            user,
            &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = ?1 AND user_id = ?2"),
            read_job,
        )?;
        Ok(UserExport::new(
            user.clone(),
            turns,
            memories,
            vectors,
            jobs,
        ))
    })
}

/// Does the store hold any turn, memory or job of `user`?
fn holds_user(conn: &Connection, user: &UserKey) -> StoreResult<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM turns WHERE tenant = ?1 AND user_id = ?2) \
         OR EXISTS (SELECT 1 FROM memories WHERE tenant = ?1 AND user_id = ?2) \
         OR EXISTS (SELECT 1 FROM jobs WHERE tenant = ?1 AND user_id = ?2)",
    )
    .and_then(|mut s| s.query_row(params![user.tenant, user.user], |row| row.get(0)))
    .map_err(sql_err("import user"))
}

/// A history row encoded for SQL: memory, version, moment, change JSON, snapshot JSON.
type HistoryRow = (MemoryId, u32, mnemos_core::Moment, String, String);

pub(crate) fn import(store: &SqliteStore, export: &UserExport) -> StoreResult<()> {
    export.validate()?;
    let user = &export.user;
    // Encoded before the writer lock is taken, as a write batch is.
    let turns = encode_turns(&export.turns)?;
    let memories = export
        .memories
        .iter()
        .map(|m| MemoryRow::encode(&m.memory))
        .collect::<StoreResult<Vec<_>>>()?;
    let mut history: Vec<HistoryRow> = Vec::new();
    for entry in export.memories.iter().flat_map(|m| &m.history) {
        history.push((
            entry.memory_id,
            entry.version,
            entry.at,
            to_json(&entry.change, "history change")?,
            to_json(&entry.snapshot, "memory snapshot")?,
        ));
    }
    let vectors = encode_vectors(&export.vectors);
    let jobs = encode_jobs(&export.jobs)?;
    let ids: HashSet<MemoryId> = export.memories.iter().map(|m| m.memory.id).collect();
    store.write_tx("import user", |tx| {
        if holds_user(tx, user)? {
            return Err(Conflict::UserNotEmpty { user: user.clone() }.into());
        }
        if !(turns.is_empty() && memories.is_empty()) {
            // Also lists the user, as every write of a turn or memory does.
            insert_turns(tx, user, &turns)?;
        }
        insert_memory_rows(tx, &memories)?;
        for (id, version, at, change, snapshot) in &history {
            insert_history_row(tx, *id, *version, *at, change, snapshot)?;
        }
        insert_vectors(tx, user, &ids, &vectors, "import vectors")?;
        insert_jobs(tx, &jobs)
    })
}
