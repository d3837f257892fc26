//! The writing half: every `Store` method, each one transaction (see the crate docs).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use mnemos_core::{
    check_finite_metrics, check_new_api_key, vector_to_le_bytes, Access, ApiKey, ApiKeyId,
    BatchErase, BatchForget, Change, Conflict, Job, JobId, Memory, MemoryId, MemoryPatch, Moment,
    PurgeReport, StoreError, StoreResult, Timestamp, Turn, TurnErase, UserExport, UserKey,
    VectorRow, WriteBatch,
};
use mnemos_core::{JobWrite, KeyWrite, MemoryWrite, VectorWrite};
use postgres::Transaction;

use crate::codec::{
    check_metadata, from_json, is_unique_violation, metadata_json, pg_err, round_to_sql, to_json,
};
use crate::read::{last_round_in, load_job, load_key, load_memory};
use crate::{PostgresStore, WriteScope};

/// Everything of a batch PostgreSQL could refuse as input, checked before the transaction:
/// rounds in range, finite metrics, metadata without U+0000.
fn precheck(batch: &WriteBatch) -> StoreResult<()> {
    for turn in &batch.turns {
        round_to_sql(turn.at.round)?;
        check_metadata(&turn.metadata, "turn")?;
    }
    for memory in &batch.memories {
        round_to_sql(memory.created.round)?;
        check_finite_metrics(&memory.metrics)?;
        check_metadata(&memory.metadata, "memory")?;
    }
    for job in &batch.jobs {
        round_to_sql(job.created.round)?;
    }
    let moments = batch
        .updates
        .iter()
        .map(|u| u.at)
        .chain(batch.forgets.iter().map(|f| f.at));
    for at in moments.chain(batch.finished_jobs.iter().map(|(_, at)| *at)) {
        round_to_sql(at.round)?;
    }
    for forget in &batch.forgets {
        check_reason(&forget.reason)?;
    }
    Ok(())
}

pub(crate) fn check_reason(reason: &str) -> StoreResult<()> {
    if reason.contains('\0') {
        return Err(StoreError::InvalidWrite(
            "a forget reason holds a NUL character, which PostgreSQL cannot store".into(),
        ));
    }
    Ok(())
}

/// A uniqueness violation as "`what` already exists" (naming the key PostgreSQL reports); any
/// other error as the operation's.
pub(crate) fn duplicate_in(
    op: &'static str,
    what: &'static str,
) -> impl FnOnce(postgres::Error) -> StoreError {
    move |e| {
        if is_unique_violation(&e) {
            let detail = e
                .as_db_error()
                .and_then(|d| d.detail())
                .unwrap_or("a row of this batch")
                .to_string();
            StoreError::InvalidWrite(format!("{what}: {detail}"))
        } else {
            pg_err(op)(e)
        }
    }
}

/// The first turn of the batch (in order) whose key the user already has.
fn check_turn_keys(tx: &mut Transaction<'_>, user: &UserKey, turns: &[Turn]) -> StoreResult<()> {
    let keys: Vec<&str> = turns.iter().filter_map(|t| t.key.as_deref()).collect();
    if keys.is_empty() {
        return Ok(());
    }
    let taken: HashSet<String> = tx
        .query(
            "SELECT key FROM turns WHERE tenant = $1 AND user_id = $2 AND key = ANY($3)",
            &[&user.tenant, &user.user, &keys],
        )
        .map_err(pg_err("write turn"))?
        .iter()
        .map(|row| row.get(0))
        .collect();
    match keys.iter().find(|k| taken.contains(**k)) {
        Some(key) => Err(Conflict::DuplicateTurnKey {
            key: (*key).to_string(),
        }
        .into()),
        None => Ok(()),
    }
}

/// All turns of the batch in one statement: a round trip per table, not per row, is what
/// keeps a large ingest batch fast over the network.
pub(crate) fn insert_turns(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    turns: &[Turn],
) -> StoreResult<()> {
    if turns.is_empty() {
        return Ok(());
    }
    check_turn_keys(tx, user, turns)?;
    let ids: Vec<uuid::Uuid> = turns.iter().map(|t| t.id.0).collect();
    let column = |f: fn(&Turn) -> &str| turns.iter().map(f).collect::<Vec<&str>>();
    let tenants = column(|t| &t.scope.tenant);
    let users = column(|t| &t.scope.user);
    let agents = column(|t| &t.scope.agent);
    let sessions = column(|t| &t.scope.session);
    let roles = column(|t| t.role.as_str());
    let texts = column(|t| &t.text);
    let speakers: Vec<Option<&str>> = turns.iter().map(|t| t.speaker.as_deref()).collect();
    let keys: Vec<Option<&str>> = turns.iter().map(|t| t.key.as_deref()).collect();
    let rounds = turns
        .iter()
        .map(|t| round_to_sql(t.at.round))
        .collect::<StoreResult<Vec<i64>>>()?;
    let times: Vec<i64> = turns.iter().map(|t| t.at.time.0).collect();
    let metadata = turns
        .iter()
        .map(|t| to_json(&t.metadata, "turn metadata"))
        .collect::<StoreResult<Vec<String>>>()?;
    tx.execute(
        "INSERT INTO turns (id, tenant, user_id, agent, session, role, speaker, text, round, time_ms, \
         metadata, key) SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], \
         $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::text[], $12::text[])",
        &[
            &ids, &tenants, &users, &agents, &sessions, &roles, &speakers, &texts, &rounds, &times,
            &metadata, &keys,
        ],
    )
    .map_err(duplicate_in("write turn", "a turn already exists"))?;
    Ok(())
}

/// All new memories in one statement, then their `Created` history entries in another.
fn insert_memories(tx: &mut Transaction<'_>, memories: &[Memory]) -> StoreResult<()> {
    if memories.is_empty() {
        return Ok(());
    }
    insert_memory_rows(tx, &memories.iter().collect::<Vec<&Memory>>())?;
    let ids: Vec<uuid::Uuid> = memories.iter().map(|m| m.id.0).collect();
    let versions: Vec<i64> = memories.iter().map(|m| i64::from(m.version)).collect();
    let rounds = memories
        .iter()
        .map(|m| round_to_sql(m.created.round))
        .collect::<StoreResult<Vec<i64>>>()?;
    let times: Vec<i64> = memories.iter().map(|m| m.created.time.0).collect();
    let snapshots = memories
        .iter()
        .map(|m| to_json(m, "memory snapshot"))
        .collect::<StoreResult<Vec<String>>>()?;
    let created = to_json(&Change::Created, "history change")?;
    tx.execute(
        "INSERT INTO memory_history (memory_id, version, at_round, at_time, change, snapshot) \
         SELECT id, version, at_round, at_time, $5, snapshot \
         FROM UNNEST($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $6::text[]) \
         AS h (id, version, at_round, at_time, snapshot)",
        &[&ids, &versions, &rounds, &times, &created, &snapshots],
    )
    .map_err(duplicate_in(
        "write history",
        "a memory version already exists",
    ))?;
    Ok(())
}

/// The memories' rows alone, in one statement, without history (a write adds `Created`, an
/// import its own).
pub(crate) fn insert_memory_rows(
    tx: &mut Transaction<'_>,
    memories: &[&Memory],
) -> StoreResult<()> {
    if memories.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = memories.iter().map(|m| m.id.0).collect();
    let column = |f: fn(&Memory) -> &str| memories.iter().map(|m| f(m)).collect::<Vec<&str>>();
    let tenants = column(|m| &m.scope.tenant);
    let users = column(|m| &m.scope.user);
    let agents = column(|m| &m.scope.agent);
    let sessions = column(|m| &m.scope.session);
    let kinds = column(|m| m.kind.tag().as_str());
    let texts = column(|m| &m.text);
    let json = |f: fn(&Memory) -> StoreResult<String>| {
        memories
            .iter()
            .map(|m| f(m))
            .collect::<StoreResult<Vec<String>>>()
    };
    let kind_json = json(|m| to_json(&m.kind, "memory kind"))?;
    let provenance = json(|m| to_json(&m.provenance, "provenance"))?;
    let states = json(|m| to_json(&m.state, "memory state"))?;
    let metrics = json(|m| to_json(&m.metrics, "metrics"))?;
    let access = json(|m| to_json(&m.access, "access log"))?;
    let metadata = memories
        .iter()
        .map(|m| metadata_json(&m.metadata, "memory"))
        .collect::<StoreResult<Vec<serde_json::Value>>>()?;
    let rounds = memories
        .iter()
        .map(|m| round_to_sql(m.created.round))
        .collect::<StoreResult<Vec<i64>>>()?;
    let times: Vec<i64> = memories.iter().map(|m| m.created.time.0).collect();
    let valid_from: Vec<i64> = memories.iter().map(|m| m.valid_from.0).collect();
    let valid_to: Vec<Option<i64>> = memories.iter().map(|m| m.valid_to.map(|t| t.0)).collect();
    let active: Vec<bool> = memories.iter().map(|m| m.is_active()).collect();
    let versions: Vec<i64> = memories.iter().map(|m| i64::from(m.version)).collect();
    let superseded_by: Vec<Option<uuid::Uuid>> = memories
        .iter()
        .map(|m| m.superseded_by.map(|id| id.0))
        .collect();
    tx.execute(
        "INSERT INTO memories (id, tenant, user_id, agent, session, kind, kind_json, text, provenance, \
         created_round, created_time, valid_from, valid_to, active, state, metrics, access, metadata, \
         version, superseded_by) SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], \
         $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], \
         $12::bigint[], $13::bigint[], $14::boolean[], $15::text[], $16::text[], $17::text[], \
         $18::jsonb[], $19::bigint[], $20::uuid[])",
        &[
            &ids, &tenants, &users, &agents, &sessions, &kinds, &kind_json, &texts, &provenance,
            &rounds, &times, &valid_from, &valid_to, &active, &states, &metrics, &access, &metadata,
            &versions, &superseded_by,
        ],
    )
    .map_err(duplicate_in("write memory", "a memory already exists"))?;
    Ok(())
}

fn insert_history(
    tx: &mut Transaction<'_>,
    at: Moment,
    change: &Change,
    memory: &Memory,
) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO memory_history (memory_id, version, at_round, at_time, change, snapshot) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &memory.id.0,
            &i64::from(memory.version),
            &round_to_sql(at.round)?,
            &at.time.0,
            &to_json(change, "history change")?,
            &to_json(memory, "memory snapshot")?,
        ],
    )
    .map_err(|e| {
        if is_unique_violation(&e) {
            StoreError::InvalidWrite(format!(
                "memory {} already has a version {}",
                memory.id, memory.version
            ))
        } else {
            pg_err("write history")(e)
        }
    })?;
    Ok(())
}

/// The first memory (in order) that vectors name and the user does not have.
fn check_vector_owners(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    in_batch: &HashSet<MemoryId>,
    vectors: &[&VectorRow],
    op: &'static str,
) -> StoreResult<()> {
    let outside: Vec<uuid::Uuid> = vectors
        .iter()
        .map(|v| v.memory_id)
        .filter(|id| !in_batch.contains(id))
        .map(|id| id.0)
        .collect();
    if outside.is_empty() {
        return Ok(());
    }
    let known: HashSet<uuid::Uuid> = tx
        .query(
            "SELECT id FROM memories WHERE id = ANY($1) AND tenant = $2 AND user_id = $3",
            &[&outside, &user.tenant, &user.user],
        )
        .map_err(pg_err(op))?
        .iter()
        .map(|row| row.get(0))
        .collect();
    match outside.iter().find(|id| !known.contains(id)) {
        Some(id) => Err(StoreError::InvalidWrite(format!(
            "vector for unknown memory {id}"
        ))),
        None => Ok(()),
    }
}

/// Store vectors of memories of `user` (new in this batch, `in_batch`, or already stored), in
/// one statement; a memory's vector in the same model given twice keeps the last one.
pub(crate) fn insert_vectors(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    in_batch: &HashSet<MemoryId>,
    vectors: &[VectorRow],
    indexed: bool,
    op: &'static str,
) -> StoreResult<()> {
    if vectors.is_empty() {
        return Ok(());
    }
    let mut last: HashMap<(MemoryId, &str), usize> = HashMap::new();
    for (i, row) in vectors.iter().enumerate() {
        last.insert((row.memory_id, row.model.as_str()), i);
    }
    let rows: Vec<&VectorRow> = vectors
        .iter()
        .enumerate()
        .filter(|(i, row)| last.get(&(row.memory_id, row.model.as_str())) == Some(i))
        .map(|(_, row)| row)
        .collect();
    check_vector_owners(tx, user, in_batch, &rows, op)?;
    let ids: Vec<uuid::Uuid> = rows.iter().map(|r| r.memory_id.0).collect();
    let models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    let dims = rows
        .iter()
        .map(|r| {
            i32::try_from(r.vector.len()).map_err(|_| {
                StoreError::InvalidWrite(format!("vector of memory {} is too long", r.memory_id))
            })
        })
        .collect::<StoreResult<Vec<i32>>>()?;
    let data: Vec<Vec<u8>> = rows.iter().map(|r| vector_to_le_bytes(&r.vector)).collect();
    tx.execute(
        "INSERT INTO vectors (memory_id, model, dim, data) \
         SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::integer[], $4::bytea[]) \
         ON CONFLICT (memory_id, model) DO UPDATE SET dim = excluded.dim, data = excluded.data",
        &[&ids, &models, &dims, &data],
    )
    .map_err(pg_err(op))?;
    if indexed {
        crate::vectors::write_windows(tx, user, &rows, op)?;
    }
    Ok(())
}

/// Overwrite the mutable columns of a memory after an update or forget.
fn rewrite_memory(tx: &mut Transaction<'_>, memory: &Memory) -> StoreResult<()> {
    check_finite_metrics(&memory.metrics)?;
    tx.execute(
        "UPDATE memories SET text = $2, valid_to = $3, active = $4, state = $5, metrics = $6, \
         metadata = $7, version = $8, superseded_by = $9, provenance = $10 WHERE id = $1",
        &[
            &memory.id.0,
            &memory.text,
            &memory.valid_to.map(|t| t.0),
            &memory.is_active(),
            &to_json(&memory.state, "memory state")?,
            &to_json(&memory.metrics, "metrics")?,
            &metadata_json(&memory.metadata, "memory")?,
            &i64::from(memory.version),
            &memory.superseded_by.map(|id| id.0),
            &to_json(&memory.provenance, "provenance")?,
        ],
    )
    .map_err(pg_err("update memory"))?;
    Ok(())
}

fn update_in_tx(
    tx: &mut Transaction<'_>,
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
    rewrite_memory(tx, &updated)?;
    insert_history(tx, entry.at, &entry.change, &updated)?;
    Ok(Some(updated))
}

/// Forget one memory of `user` (the change [`Memory::forgotten`] computes; its vectors
/// dropped), inside the caller's transaction. `Ok(None)` if the user has no such memory.
fn forget_in_tx(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    forget: &BatchForget,
) -> StoreResult<Option<Memory>> {
    let Some(memory) = load_memory(tx, user, forget.id)? else {
        return Ok(None);
    };
    let (forgotten, entry) = memory
        .forgotten(&forget.reason, forget.cause.clone(), forget.at)
        .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
    rewrite_memory(tx, &forgotten)?;
    insert_history(tx, entry.at, &entry.change, &forgotten)?;
    tx.execute("DELETE FROM vectors WHERE memory_id = $1", &[&forget.id.0])
        .map_err(pg_err("forget memory"))?;
    Ok(Some(forgotten))
}

/// Edits of existing memories (or of memories created in the batch), in batch order.
fn apply_edits(tx: &mut Transaction<'_>, user: &UserKey, batch: &WriteBatch) -> StoreResult<()> {
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
/// vectors (their windows cascade), plus an `Erased` version. The dead tuples are `VACUUM`'s,
/// as after a purge.
fn erase_in_tx(tx: &mut Transaction<'_>, user: &UserKey, erase: &BatchErase) -> StoreResult<()> {
    let Some(memory) = load_memory(tx, user, erase.id)? else {
        return Err(StoreError::InvalidWrite(format!(
            "erasure of unknown memory {}",
            erase.id
        )));
    };
    let erased = erase.apply(&memory);
    rewrite_memory(tx, &erased)?;
    let rows = tx
        .query(
            "SELECT version, snapshot FROM memory_history WHERE memory_id = $1",
            &[&erase.id.0],
        )
        .map_err(pg_err("erase history"))?;
    for row in rows {
        let version: i64 = row.try_get(0).map_err(pg_err("erase history"))?;
        let snapshot: String = row.try_get(1).map_err(pg_err("erase history"))?;
        let snapshot: Memory = from_json(&snapshot, "memory snapshot")?;
        tx.execute(
            "UPDATE memory_history SET snapshot = $3 WHERE memory_id = $1 AND version = $2",
            &[
                &erase.id.0,
                &version,
                &to_json(&erase.scrub(&snapshot), "memory snapshot")?,
            ],
        )
        .map_err(pg_err("erase history"))?;
    }
    let change = Change::Erased {
        reason: erase.reason.clone(),
    };
    insert_history(tx, erase.at, &change, &erased)?;
    tx.execute("DELETE FROM vectors WHERE memory_id = $1", &[&erase.id.0])
        .map_err(pg_err("erase memory"))?;
    Ok(())
}

/// Erase one raw turn's words (see [`TurnErase`]).
fn erase_turn_in_tx(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    erase: &TurnErase,
) -> StoreResult<()> {
    let changed = tx
        .execute(
            "UPDATE turns SET text = $4, metadata = '{}' \
             WHERE id = $1 AND tenant = $2 AND user_id = $3",
            &[&erase.id.0, &user.tenant, &user.user, &erase.placeholder],
        )
        .map_err(pg_err("erase turn"))?;
    if changed == 0 {
        return Err(StoreError::InvalidWrite(format!(
            "erasure of unknown turn {}",
            erase.id
        )));
    }
    Ok(())
}

/// Mark jobs done, before the batch's new jobs are inserted (a batch cannot finish a job it
/// enqueues). The `done_round IS NULL` guard makes a second completion change nothing, which
/// rejects the batch.
fn finish_jobs(tx: &mut Transaction<'_>, user: &UserKey, batch: &WriteBatch) -> StoreResult<()> {
    for (id, at) in &batch.finished_jobs {
        let changed = tx
            .execute(
                "UPDATE jobs SET done_round = $4, done_time = $5 \
                 WHERE id = $1 AND tenant = $2 AND user_id = $3 AND done_round IS NULL",
                &[
                    &id.0,
                    &user.tenant,
                    &user.user,
                    &round_to_sql(at.round)?,
                    &at.time.0,
                ],
            )
            .map_err(pg_err("finish job"))?;
        if changed == 0 {
            return Err(match load_job(tx, user, *id)? {
                Some(_) => StoreError::InvalidWrite(format!("job {id} is already finished")),
                None => StoreError::InvalidWrite(format!("unknown job {id}")),
            });
        }
    }
    Ok(())
}

/// All jobs in one statement (pending or, for an import, finished).
pub(crate) fn insert_jobs(tx: &mut Transaction<'_>, jobs: &[Job]) -> StoreResult<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = jobs.iter().map(|j| j.id.0).collect();
    let column = |f: fn(&Job) -> &str| jobs.iter().map(f).collect::<Vec<&str>>();
    let tenants = column(|j| &j.scope.tenant);
    let users = column(|j| &j.scope.user);
    let agents = column(|j| &j.scope.agent);
    let sessions = column(|j| &j.scope.session);
    let mechanisms = column(|j| &j.mechanism);
    let kinds = column(|j| &j.kind);
    let payloads = column(|j| &j.payload);
    let rounds = jobs
        .iter()
        .map(|j| round_to_sql(j.created.round))
        .collect::<StoreResult<Vec<i64>>>()?;
    let times: Vec<i64> = jobs.iter().map(|j| j.created.time.0).collect();
    let attempts: Vec<i64> = jobs.iter().map(|j| i64::from(j.attempts)).collect();
    let errors: Vec<Option<&str>> = jobs.iter().map(|j| j.last_error.as_deref()).collect();
    let done_rounds = jobs
        .iter()
        .map(|j| j.done.map(|at| round_to_sql(at.round)).transpose())
        .collect::<StoreResult<Vec<Option<i64>>>>()?;
    let done_times: Vec<Option<i64>> = jobs.iter().map(|j| j.done.map(|at| at.time.0)).collect();
    tx.execute(
        "INSERT INTO jobs (id, tenant, user_id, agent, session, mechanism, kind, payload, \
         created_round, created_time, attempts, last_error, done_round, done_time) \
         SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], \
         $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], \
         $12::text[], $13::bigint[], $14::bigint[])",
        &[
            &ids,
            &tenants,
            &users,
            &agents,
            &sessions,
            &mechanisms,
            &kinds,
            &payloads,
            &rounds,
            &times,
            &attempts,
            &errors,
            &done_rounds,
            &done_times,
        ],
    )
    .map_err(duplicate_in("write job", "a job already exists"))?;
    Ok(())
}

/// Append accesses to the memories' logs: each log read once, appended in call order, written
/// back once.
fn append_accesses(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    accesses: &[(MemoryId, Access)],
) -> StoreResult<()> {
    let mut logs: HashMap<MemoryId, Option<Vec<Access>>> = HashMap::new();
    let mut order = Vec::new();
    for (id, access) in accesses {
        if !logs.contains_key(id) {
            let row = tx
                .query_opt(
                    "SELECT access FROM memories WHERE id = $1 AND tenant = $2 AND user_id = $3",
                    &[&id.0, &user.tenant, &user.user],
                )
                .map_err(pg_err("record access"))?;
            let log = row
                .map(|r| {
                    let text: String = r.get(0);
                    from_json::<Vec<Access>>(&text, &format!("access log of memory {id}"))
                })
                .transpose()?;
            logs.insert(*id, log);
            order.push(*id);
        }
        if let Some(Some(log)) = logs.get_mut(id) {
            log.push(*access);
        }
    }
    for id in order {
        if let Some(Some(log)) = logs.get(&id) {
            tx.execute(
                "UPDATE memories SET access = $2 WHERE id = $1",
                &[&id.0, &to_json(log, "access log")?],
            )
            .map_err(pg_err("record access"))?;
        }
    }
    Ok(())
}

fn purge_in_tx(tx: &mut Transaction<'_>, user: &UserKey) -> StoreResult<PurgeReport> {
    let mut run = |sql: &str| -> StoreResult<usize> {
        let n = tx
            .execute(sql, &[&user.tenant, &user.user])
            .map_err(pg_err("purge user"))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    };
    let of_user = "SELECT id FROM memories WHERE tenant = $1 AND user_id = $2";
    let history_entries = run(&format!(
        "DELETE FROM memory_history WHERE memory_id IN ({of_user})"
    ))?;
    let vectors = run(&format!(
        "DELETE FROM vectors WHERE memory_id IN ({of_user})"
    ))?;
    let memories = run("DELETE FROM memories WHERE tenant = $1 AND user_id = $2")?;
    let turns = run("DELETE FROM turns WHERE tenant = $1 AND user_id = $2")?;
    run("DELETE FROM jobs WHERE tenant = $1 AND user_id = $2")?;
    run("DELETE FROM job_leases WHERE tenant = $1 AND user_id = $2")?;
    run("DELETE FROM users WHERE tenant = $1 AND user_id = $2")?;
    Ok(PurgeReport {
        turns,
        memories,
        history_entries,
        vectors,
    })
}

fn lease_millis(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
}

impl MemoryWrite for PostgresStore {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        let Some(user) = batch.validate()? else {
            return Ok(());
        };
        precheck(&batch)?;
        let in_batch: HashSet<MemoryId> = batch.memories.iter().map(|m| m.id).collect();
        let indexed = self.pgvector_available();
        self.write_tx("write", WriteScope::User(&user), |tx| {
            batch.precondition.check(last_round_in(tx, &user)?)?;
            if !(batch.turns.is_empty() && batch.memories.is_empty()) {
                tx.execute(
                    "INSERT INTO users (tenant, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&user.tenant, &user.user],
                )
                .map_err(pg_err("write user"))?;
            }
            insert_turns(tx, &user, &batch.turns)?;
            insert_memories(tx, &batch.memories)?;
            insert_vectors(
                tx,
                &user,
                &in_batch,
                &batch.vectors,
                indexed,
                "write vector",
            )?;
            apply_edits(tx, &user, &batch)?;
            finish_jobs(tx, &user, &batch)?;
            insert_jobs(tx, &batch.jobs)
        })
    }

    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        if accesses.is_empty() {
            return Ok(());
        }
        self.write_tx("record access", WriteScope::User(user), |tx| {
            append_accesses(tx, user, accesses)
        })
    }

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        self.write_tx("purge user", WriteScope::Purge(user), |tx| {
            purge_in_tx(tx, user)
        })
    }

    fn import_user(&self, export: &UserExport) -> StoreResult<()> {
        crate::export::import(self, export)
    }
}

impl JobWrite for PostgresStore {
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>> {
        // The error is a diagnostic: a NUL in it (from a model's output, say) must not stop the
        // failure from being counted.
        let error = error.replace('\0', "\u{FFFD}");
        self.write_tx("record job failure", WriteScope::User(user), |tx| {
            // A finished job is left as it is; the attempt counter saturates like a u32.
            tx.execute(
                "UPDATE jobs SET attempts = LEAST(attempts + 1, 4294967295), last_error = $4 \
                 WHERE id = $1 AND tenant = $2 AND user_id = $3 AND done_round IS NULL",
                &[&id.0, &user.tenant, &user.user, &error],
            )
            .map_err(pg_err("record job failure"))?;
            load_job(tx, user, id)
        })
    }

    fn lease_jobs(&self, user: &UserKey, holder: &str, lease: Duration) -> StoreResult<bool> {
        let millis = lease_millis(lease);
        self.write_tx("lease jobs", WriteScope::User(user), |tx| {
            // Taken when free or run out, renewed by its holder; otherwise no row changes. The
            // database's clock decides, so servers' clocks never have to agree.
            let changed = tx
                .execute(
                    "INSERT INTO job_leases (tenant, user_id, holder, until_at) \
                     VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 millisecond') \
                     ON CONFLICT (tenant, user_id) DO UPDATE \
                     SET holder = excluded.holder, until_at = excluded.until_at \
                     WHERE job_leases.holder = excluded.holder OR job_leases.until_at <= clock_timestamp()",
                    &[&user.tenant, &user.user, &holder, &millis],
                )
                .map_err(pg_err("lease jobs"))?;
            Ok(changed == 1)
        })
    }

    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()> {
        self.write_tx("release jobs", WriteScope::User(user), |tx| {
            tx.execute(
                "DELETE FROM job_leases WHERE tenant = $1 AND user_id = $2 AND holder = $3",
                &[&user.tenant, &user.user, &holder],
            )
            .map_err(pg_err("release jobs"))?;
            Ok(())
        })
    }
}

impl KeyWrite for PostgresStore {
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        self.write_tx("store API key", WriteScope::Keys, |tx| {
            let stored = crate::read::all_keys(tx)?;
            check_new_api_key(key, &stored)?;
            tx.execute(
                "INSERT INTO api_keys (id, tenant, name, hash, prefix, created_ms, revoked_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &key.id.0,
                    &key.tenant,
                    &key.name,
                    &key.hash,
                    &key.prefix,
                    &key.created_at.0,
                    &key.revoked_at.map(|t| t.0),
                ],
            )
            .map_err(duplicate_in("store API key", "an API key already exists"))?;
            Ok(())
        })
    }

    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>> {
        self.write_tx("revoke API key", WriteScope::Keys, |tx| {
            tx.execute(
                "UPDATE api_keys SET revoked_ms = $2 WHERE id = $1 AND revoked_ms IS NULL",
                &[&id.0, &at.0],
            )
            .map_err(pg_err("revoke API key"))?;
            load_key(tx, "id = $1", &id.0)
        })
    }
}

impl VectorWrite for PostgresStore {
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let indexed = self.pgvector_available();
        self.write_tx("put vectors", WriteScope::User(user), |tx| {
            insert_vectors(tx, user, &HashSet::new(), rows, indexed, "put vectors")
        })
    }

    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        self.retain_model(user, model)
    }
}
