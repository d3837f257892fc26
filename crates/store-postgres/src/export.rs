//! `export_user` and `import_user`: one user's rows out in one snapshot, and in, exactly as
//! exported, in one write transaction under the user's advisory lock — one statement per table.

use std::collections::{HashMap, HashSet};

use mnemos_core::{
    Conflict, HistoryEntry, Memory, MemoryExport, MemoryId, StoreError, StoreResult, UserExport,
    UserKey, VectorRow,
};
use postgres::{GenericClient, Row, Transaction};

use crate::codec::{
    check_metadata, decode_vector, get, pg_err, read_history, read_job, read_memory, read_turn,
    round_to_sql, to_json, JOB_COLUMNS, MEMORY_COLUMNS, TURN_COLUMNS,
};
use crate::write::{duplicate_in, insert_jobs, insert_memory_rows, insert_turns, insert_vectors};
use crate::{PostgresStore, WriteScope};

const OP: &str = "export user";

/// Every row `sql` (with the user's tenant and id as `$1`, `$2`) selects, decoded by `read`.
fn rows_of<T>(
    client: &mut impl GenericClient,
    user: &UserKey,
    sql: &str,
    read: impl FnMut(&Row) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    client
        .query(sql, &[&user.tenant, &user.user])
        .map_err(pg_err(OP))?
        .iter()
        .map(read)
        .collect()
}

fn memories_with_history(
    tx: &mut Transaction<'_>,
    user: &UserKey,
) -> StoreResult<Vec<MemoryExport>> {
    let memories = rows_of(
        tx,
        user,
        &format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.tenant = $1 AND m.user_id = $2"),
        read_memory,
    )?;
    let entries = rows_of(
        tx,
        user,
        "SELECT h.memory_id, h.version, h.at_round, h.at_time, h.change, h.snapshot \
         FROM memory_history h JOIN memories m ON m.id = h.memory_id \
         WHERE m.tenant = $1 AND m.user_id = $2",
        |row| read_history(row, MemoryId(get(row, 0, OP)?), 1),
    )?;
    let mut history: HashMap<MemoryId, Vec<HistoryEntry>> = HashMap::new();
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
fn all_vectors(tx: &mut Transaction<'_>, user: &UserKey) -> StoreResult<Vec<VectorRow>> {
    rows_of(
        tx,
        user,
        "SELECT v.memory_id, v.model, v.dim, v.data FROM vectors v \
         JOIN memories m ON m.id = v.memory_id WHERE m.tenant = $1 AND m.user_id = $2",
        |row| {
            let id = MemoryId(get(row, 0, OP)?);
            let dim: i32 = get(row, 2, OP)?;
            let data: &[u8] = get(row, 3, OP)?;
            Ok(VectorRow {
                memory_id: id,
                model: get(row, 1, OP)?,
                vector: decode_vector(data, dim, &format!("vector of memory {id}"))?,
            })
        },
    )
}

pub(crate) fn export(store: &PostgresStore, user: &UserKey) -> StoreResult<UserExport> {
    store.read_tx(OP, |tx| {
        let turns = rows_of(
            tx,
            user,
            &format!("SELECT {TURN_COLUMNS} FROM turns WHERE tenant = $1 AND user_id = $2"),
            read_turn,
        )?;
        let memories = memories_with_history(tx, user)?;
        let vectors = all_vectors(tx, user)?;
        let jobs = rows_of(
            tx,
            user,
            &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = $1 AND user_id = $2"),
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

fn nul_in(what: String) -> StoreError {
    StoreError::InvalidWrite(format!(
        "{what} holds a NUL character, which PostgreSQL cannot store"
    ))
}

/// What PostgreSQL could refuse as input, named before the transaction (the core checks ran
/// already): metadata (`jsonb`), and the plain `text` columns the core does not check for
/// U+0000 (a vector's model, a job's last error). Everything else with free text is JSON text,
/// where U+0000 is escaped.
fn precheck(export: &UserExport) -> StoreResult<()> {
    for turn in &export.turns {
        check_metadata(&turn.metadata, &format!("turn {}", turn.id))?;
    }
    for m in &export.memories {
        check_metadata(&m.memory.metadata, &format!("memory {}", m.memory.id))?;
    }
    if let Some(row) = export.vectors.iter().find(|v| v.model.contains('\0')) {
        return Err(nul_in(format!(
            "the model name of a vector of memory {}",
            row.memory_id
        )));
    }
    let failed = export
        .jobs
        .iter()
        .find(|j| j.last_error.as_deref().is_some_and(|e| e.contains('\0')));
    if let Some(job) = failed {
        return Err(nul_in(format!("the last error of job {}", job.id)));
    }
    Ok(())
}

/// Does the database hold any turn, memory or job of `user`?
fn holds_user(tx: &mut Transaction<'_>, user: &UserKey) -> StoreResult<bool> {
    Ok(tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM turns WHERE tenant = $1 AND user_id = $2) \
             OR EXISTS (SELECT 1 FROM memories WHERE tenant = $1 AND user_id = $2) \
             OR EXISTS (SELECT 1 FROM jobs WHERE tenant = $1 AND user_id = $2)",
            &[&user.tenant, &user.user],
        )
        .map_err(pg_err("import user"))?
        .get(0))
}

/// Every history entry of the export, in one statement.
fn insert_history(tx: &mut Transaction<'_>, export: &UserExport) -> StoreResult<()> {
    let entries: Vec<&HistoryEntry> = export.memories.iter().flat_map(|m| &m.history).collect();
    if entries.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = entries.iter().map(|h| h.memory_id.0).collect();
    let versions: Vec<i64> = entries.iter().map(|h| i64::from(h.version)).collect();
    let rounds = entries
        .iter()
        .map(|h| round_to_sql(h.at.round))
        .collect::<StoreResult<Vec<i64>>>()?;
    let times: Vec<i64> = entries.iter().map(|h| h.at.time.0).collect();
    let changes = entries
        .iter()
        .map(|h| to_json(&h.change, "history change"))
        .collect::<StoreResult<Vec<String>>>()?;
    let snapshots = entries
        .iter()
        .map(|h| to_json(&h.snapshot, "memory snapshot"))
        .collect::<StoreResult<Vec<String>>>()?;
    tx.execute(
        "INSERT INTO memory_history (memory_id, version, at_round, at_time, change, snapshot) \
         SELECT * FROM UNNEST($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], \
         $6::text[])",
        &[&ids, &versions, &rounds, &times, &changes, &snapshots],
    )
    .map_err(duplicate_in(
        "import history",
        "a memory version already exists",
    ))?;
    Ok(())
}

pub(crate) fn import(store: &PostgresStore, export: &UserExport) -> StoreResult<()> {
    export.validate()?;
    precheck(export)?;
    let user = &export.user;
    let memories: Vec<&Memory> = export.memories.iter().map(|m| &m.memory).collect();
    let ids: HashSet<MemoryId> = memories.iter().map(|m| m.id).collect();
    let indexed = store.pgvector_available();
    store.write_tx("import user", WriteScope::User(user), |tx| {
        if holds_user(tx, user)? {
            return Err(Conflict::UserNotEmpty { user: user.clone() }.into());
        }
        if !(export.turns.is_empty() && memories.is_empty()) {
            tx.execute(
                "INSERT INTO users (tenant, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&user.tenant, &user.user],
            )
            .map_err(pg_err("import user"))?;
        }
        insert_turns(tx, user, &export.turns)?;
        insert_memory_rows(tx, &memories)?;
        insert_history(tx, export)?;
        insert_vectors(tx, user, &ids, &export.vectors, indexed, "import vectors")?;
        insert_jobs(tx, &export.jobs)
    })
}
