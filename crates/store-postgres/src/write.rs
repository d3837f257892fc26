//! The writing half: every `Store` method, each one transaction (see the crate docs).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use mnemos_core::{
    check_new_api_key, Access, ApiKey, ApiKeyId, Change, Conflict, Job, JobId, Memory, MemoryId,
    MemoryPatch, MemoryState, Moment, PurgeReport, Store, StoreError, StoreResult, Timestamp,
    UserKey, VectorRow, WriteBatch,
};
use postgres::Transaction;

use crate::codec::{
    check_metadata, check_metrics, encode_vector, from_json, is_unique_violation, metadata_json,
    pg_err, round_to_sql, to_json,
};
use crate::read::{last_round_in, load_job, load_key, load_memory};
use crate::{PostgresStore, WriteScope};

/// A uniqueness violation as "`what` already exists"; any other error as the operation's.
fn duplicate_or(op: &'static str, what: String) -> impl FnOnce(postgres::Error) -> StoreError {
    move |e| {
        if is_unique_violation(&e) {
            StoreError::InvalidWrite(format!("{what} already exists"))
        } else {
            pg_err(op)(e)
        }
    }
}

/// Everything of a batch PostgreSQL could refuse as input, checked before the transaction:
/// rounds in range, finite metrics, metadata without U+0000.
fn precheck(batch: &WriteBatch) -> StoreResult<()> {
    for turn in &batch.turns {
        round_to_sql(turn.at.round)?;
        check_metadata(&turn.metadata, "turn")?;
    }
    for memory in &batch.memories {
        round_to_sql(memory.created.round)?;
        check_metrics(&memory.metrics)?;
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

fn check_reason(reason: &str) -> StoreResult<()> {
    if reason.contains('\0') {
        return Err(StoreError::InvalidWrite(
            "a forget reason holds a NUL character, which PostgreSQL cannot store".into(),
        ));
    }
    Ok(())
}

fn insert_turns(tx: &mut Transaction<'_>, user: &UserKey, batch: &WriteBatch) -> StoreResult<()> {
    if batch.turns.is_empty() {
        return Ok(());
    }
    let taken = tx
        .prepare("SELECT 1 FROM turns WHERE tenant = $1 AND user_id = $2 AND key = $3")
        .map_err(pg_err("write turn"))?;
    let insert = tx
        .prepare(
            "INSERT INTO turns (id, tenant, user_id, agent, session, role, speaker, text, round, time_ms, \
             metadata, key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .map_err(pg_err("write turn"))?;
    for turn in &batch.turns {
        if let Some(key) = &turn.key {
            let found = tx
                .query_opt(&taken, &[&user.tenant, &user.user, key])
                .map_err(pg_err("write turn"))?;
            if found.is_some() {
                return Err(Conflict::DuplicateTurnKey { key: key.clone() }.into());
            }
        }
        let s = &turn.scope;
        let metadata = to_json(&turn.metadata, "turn metadata")?;
        tx.execute(
            &insert,
            &[
                &turn.id.0,
                &s.tenant,
                &s.user,
                &s.agent,
                &s.session,
                &turn.role.as_str(),
                &turn.speaker,
                &turn.text,
                &round_to_sql(turn.at.round)?,
                &turn.at.time.0,
                &metadata,
                &turn.key,
            ],
        )
        .map_err(duplicate_or("write turn", format!("turn {}", turn.id)))?;
    }
    Ok(())
}

fn insert_memories(tx: &mut Transaction<'_>, memories: &[Memory]) -> StoreResult<()> {
    if memories.is_empty() {
        return Ok(());
    }
    let insert = tx
        .prepare(
            "INSERT INTO memories (id, tenant, user_id, agent, session, kind, kind_json, text, provenance, \
             created_round, created_time, valid_from, valid_to, active, state, metrics, access, metadata, \
             version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19)",
        )
        .map_err(pg_err("write memory"))?;
    for m in memories {
        let s = &m.scope;
        tx.execute(
            &insert,
            &[
                &m.id.0,
                &s.tenant,
                &s.user,
                &s.agent,
                &s.session,
                &m.kind.tag().as_str(),
                &to_json(&m.kind, "memory kind")?,
                &m.text,
                &to_json(&m.provenance, "provenance")?,
                &round_to_sql(m.created.round)?,
                &m.created.time.0,
                &m.valid_from.0,
                &m.valid_to.map(|t| t.0),
                &m.is_active(),
                &to_json(&m.state, "memory state")?,
                &to_json(&m.metrics, "metrics")?,
                &to_json(&m.access, "access log")?,
                &metadata_json(&m.metadata, "memory")?,
                &i64::from(m.version),
            ],
        )
        .map_err(duplicate_or("write memory", format!("memory {}", m.id)))?;
        insert_history(tx, m.created, &Change::Created, m)?;
    }
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

/// Store vectors of memories of `user` (new in this batch, `in_batch`, or already stored).
fn insert_vectors(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    in_batch: &HashSet<MemoryId>,
    vectors: &[VectorRow],
    op: &'static str,
) -> StoreResult<()> {
    if vectors.is_empty() {
        return Ok(());
    }
    let known = tx
        .prepare("SELECT 1 FROM memories WHERE id = $1 AND tenant = $2 AND user_id = $3")
        .map_err(pg_err(op))?;
    let upsert = tx
        .prepare(
            "INSERT INTO vectors (memory_id, model, dim, data) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (memory_id, model) DO UPDATE SET dim = excluded.dim, data = excluded.data",
        )
        .map_err(pg_err(op))?;
    for row in vectors {
        let id = row.memory_id.0;
        if !in_batch.contains(&row.memory_id)
            && tx
                .query_opt(&known, &[&id, &user.tenant, &user.user])
                .map_err(pg_err(op))?
                .is_none()
        {
            return Err(StoreError::InvalidWrite(format!(
                "vector for unknown memory {}",
                row.memory_id
            )));
        }
        let dim = i32::try_from(row.vector.len()).map_err(|_| {
            StoreError::InvalidWrite(format!("vector of memory {} is too long", row.memory_id))
        })?;
        tx.execute(
            &upsert,
            &[&id, &row.model, &dim, &encode_vector(&row.vector)],
        )
        .map_err(pg_err(op))?;
    }
    Ok(())
}

/// Overwrite the mutable columns of a memory after an update or forget.
fn rewrite_memory(tx: &mut Transaction<'_>, memory: &Memory) -> StoreResult<()> {
    check_metrics(&memory.metrics)?;
    tx.execute(
        "UPDATE memories SET text = $2, valid_to = $3, active = $4, state = $5, metrics = $6, \
         metadata = $7, version = $8 WHERE id = $1",
        &[
            &memory.id.0,
            &memory.text,
            &memory.valid_to.map(|t| t.0),
            &memory.is_active(),
            &to_json(&memory.state, "memory state")?,
            &to_json(&memory.metrics, "metrics")?,
            &metadata_json(&memory.metadata, "memory")?,
            &i64::from(memory.version),
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
    let Some(mut memory) = load_memory(tx, user, id)? else {
        return Ok(None);
    };
    patch
        .apply(&mut memory)
        .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
    rewrite_memory(tx, &memory)?;
    insert_history(tx, at, &Change::Updated, &memory)?;
    Ok(Some(memory))
}

fn forget_in_tx(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    id: MemoryId,
    reason: &str,
    at: Moment,
) -> StoreResult<Option<Memory>> {
    let Some(mut memory) = load_memory(tx, user, id)? else {
        return Ok(None);
    };
    memory.state = MemoryState::Forgotten {
        reason: reason.to_string(),
        at,
    };
    memory.version = memory
        .version
        .checked_add(1)
        .ok_or_else(|| StoreError::InvalidWrite(format!("memory {id} has too many versions")))?;
    rewrite_memory(tx, &memory)?;
    let change = Change::Forgotten {
        reason: reason.to_string(),
    };
    insert_history(tx, at, &change, &memory)?;
    tx.execute("DELETE FROM vectors WHERE memory_id = $1", &[&id.0])
        .map_err(pg_err("forget memory"))?;
    Ok(Some(memory))
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
        if forget_in_tx(tx, user, forget.id, &forget.reason, forget.at)?.is_none() {
            return Err(StoreError::InvalidWrite(format!(
                "forget of unknown memory {}",
                forget.id
            )));
        }
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

fn insert_jobs(tx: &mut Transaction<'_>, jobs: &[Job]) -> StoreResult<()> {
    for job in jobs {
        let s = &job.scope;
        let done_round = job.done.map(|at| round_to_sql(at.round)).transpose()?;
        tx.execute(
            "INSERT INTO jobs (id, tenant, user_id, agent, session, mechanism, kind, payload, \
             created_round, created_time, attempts, last_error, done_round, done_time) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            &[
                &job.id.0,
                &s.tenant,
                &s.user,
                &s.agent,
                &s.session,
                &job.mechanism,
                &job.kind,
                &job.payload,
                &round_to_sql(job.created.round)?,
                &job.created.time.0,
                &i64::from(job.attempts),
                &job.last_error,
                &done_round,
                &job.done.map(|at| at.time.0),
            ],
        )
        .map_err(duplicate_or("write job", format!("job {}", job.id)))?;
    }
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

impl Store for PostgresStore {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        let Some(user) = batch.validate()? else {
            return Ok(());
        };
        precheck(&batch)?;
        let in_batch: HashSet<MemoryId> = batch.memories.iter().map(|m| m.id).collect();
        self.write_tx("write", WriteScope::User(&user), |tx| {
            batch.precondition.check(last_round_in(tx, &user)?)?;
            if !(batch.turns.is_empty() && batch.memories.is_empty()) {
                tx.execute(
                    "INSERT INTO users (tenant, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&user.tenant, &user.user],
                )
                .map_err(pg_err("write user"))?;
            }
            insert_turns(tx, &user, &batch)?;
            insert_memories(tx, &batch.memories)?;
            insert_vectors(tx, &user, &in_batch, &batch.vectors, "write vector")?;
            apply_edits(tx, &user, &batch)?;
            finish_jobs(tx, &user, &batch)?;
            insert_jobs(tx, &batch.jobs)
        })
    }

    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.write_tx("put vectors", WriteScope::User(user), |tx| {
            insert_vectors(tx, user, &HashSet::new(), rows, "put vectors")
        })
    }

    fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        round_to_sql(at.round)?;
        if let Some(metadata) = &patch.metadata {
            check_metadata(metadata, "memory")?;
        }
        self.write_tx("update memory", WriteScope::User(user), |tx| {
            update_in_tx(tx, user, id, patch, at)
        })
    }

    fn forget(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        round_to_sql(at.round)?;
        check_reason(reason)?;
        self.write_tx("forget memory", WriteScope::User(user), |tx| {
            forget_in_tx(tx, user, id, reason, at)
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
        self.write_tx("purge user", WriteScope::User(user), |tx| {
            purge_in_tx(tx, user)
        })
    }

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
            .map_err(duplicate_or("store API key", format!("API key {}", key.id)))?;
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

/// This handle's commits so far and whether one is in flight (for `data_version`).
pub(crate) fn own_commits(store: &PostgresStore) -> (u64, bool) {
    let busy = store.committing.load(Ordering::SeqCst) > 0;
    (store.own_commits.load(Ordering::SeqCst), busy)
}
