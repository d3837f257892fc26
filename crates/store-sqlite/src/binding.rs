//! The vector space the database is bound to (`meta`'s `vector_space` row), and the vector
//! queries a move into another space needs.

use mnemos_core::{check_bind, sort_model_counts, MemoryId, StoreResult, UserKey};
use rusqlite::{params, Connection, OptionalExtension};

use crate::codec::{sql_err, uuid_from_blob};

/// The `meta` key of the binding.
const KEY: &str = "vector_space";

pub(crate) fn read(conn: &Connection) -> StoreResult<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [KEY], |row| {
        row.get(0)
    })
    .optional()
    .map_err(sql_err("read binding"))
}

/// Compare-and-set inside the caller's write transaction.
pub(crate) fn bind(tx: &Connection, model: &str, expected: Option<&str>) -> StoreResult<()> {
    check_bind(model, expected, read(tx)?.as_deref())?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![KEY, model],
    )
    .map_err(sql_err("bind"))?;
    Ok(())
}

pub(crate) fn unembedded(
    conn: &Connection,
    user: &UserKey,
    model: &str,
    limit: usize,
) -> StoreResult<Vec<MemoryId>> {
    let op = "list memories without vectors";
    let mut stmt = conn
        .prepare_cached(
            "SELECT m.id FROM memories m WHERE m.tenant = ?1 AND m.user_id = ?2 AND m.active = 1 \
             AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id AND v.model = ?3) \
             ORDER BY m.created_round, m.created_time, m.id LIMIT ?4",
        )
        .map_err(sql_err(op))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt
        .query(params![user.tenant, user.user, model, limit])
        .map_err(sql_err(op))?;
    let mut ids = Vec::new();
    while let Some(row) = rows.next().map_err(sql_err(op))? {
        let bytes: Vec<u8> = row.get(0).map_err(sql_err(op))?;
        ids.push(MemoryId(uuid_from_blob(&bytes, "memory")?));
    }
    Ok(ids)
}

pub(crate) fn vector_models(conn: &Connection) -> StoreResult<Vec<(String, u64)>> {
    let op = "count vectors by model";
    let mut stmt = conn
        .prepare_cached("SELECT model, COUNT(*) FROM vectors GROUP BY model")
        .map_err(sql_err(op))?;
    let counts = stmt
        .query_map([], |row| {
            let n: i64 = row.get(1)?;
            Ok((row.get::<_, String>(0)?, u64::try_from(n).unwrap_or(0)))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(sql_err(op))?;
    Ok(sort_model_counts(counts))
}

/// Delete `user`'s vectors of other models inside the caller's write transaction.
pub(crate) fn retain_vectors(tx: &Connection, user: &UserKey, model: &str) -> StoreResult<u64> {
    let deleted = tx
        .execute(
            "DELETE FROM vectors WHERE model <> ?3 AND memory_id IN \
             (SELECT id FROM memories WHERE tenant = ?1 AND user_id = ?2)",
            params![user.tenant, user.user, model],
        )
        .map_err(sql_err("retain vectors"))?;
    Ok(deleted as u64)
}
