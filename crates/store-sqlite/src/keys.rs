//! The `api_keys` table: reading and writing [`ApiKey`] rows.

use mnemos_core::{check_new_api_key, ApiKey, ApiKeyId, StoreResult, Timestamp};
use rusqlite::{params, Connection, Row};

use crate::codec::{sql_err, uuid_from_blob};

const COLUMNS: &str = "id, tenant, name, hash, prefix, created_ms, revoked_ms";

fn read_key(row: &Row<'_>) -> StoreResult<ApiKey> {
    const OP: &str = "read API key";
    let id: Vec<u8> = row.get(0).map_err(sql_err(OP))?;
    Ok(ApiKey {
        id: ApiKeyId(uuid_from_blob(&id, "API key")?),
        tenant: row.get(1).map_err(sql_err(OP))?,
        name: row.get(2).map_err(sql_err(OP))?,
        hash: row.get(3).map_err(sql_err(OP))?,
        prefix: row.get(4).map_err(sql_err(OP))?,
        created_at: Timestamp(row.get(5).map_err(sql_err(OP))?),
        revoked_at: row
            .get::<_, Option<i64>>(6)
            .map_err(sql_err(OP))?
            .map(Timestamp),
    })
}

fn one(
    conn: &Connection,
    condition: &str,
    value: &dyn rusqlite::ToSql,
) -> StoreResult<Option<ApiKey>> {
    const OP: &str = "find API key";
    let sql = format!("SELECT {COLUMNS} FROM api_keys WHERE {condition}");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err(OP))?;
    let mut rows = stmt.query([value]).map_err(sql_err(OP))?;
    match rows.next().map_err(sql_err(OP))? {
        Some(row) => read_key(row).map(Some),
        None => Ok(None),
    }
}

pub(crate) fn by_hash(conn: &Connection, hash: &str) -> StoreResult<Option<ApiKey>> {
    one(conn, "hash = ?1", &hash)
}

pub(crate) fn all(conn: &Connection) -> StoreResult<Vec<ApiKey>> {
    const OP: &str = "list API keys";
    let sql = format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_ms, id");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err(OP))?;
    let mut rows = stmt.query([]).map_err(sql_err(OP))?;
    let mut keys = Vec::new();
    while let Some(row) = rows.next().map_err(sql_err(OP))? {
        keys.push(read_key(row)?);
    }
    Ok(keys)
}

/// Insert a key inside the caller's write transaction, after the shared checks.
pub(crate) fn put(conn: &Connection, key: &ApiKey) -> StoreResult<()> {
    const OP: &str = "store API key";
    let clashing: Vec<ApiKey> = [
        one(conn, "id = ?1", &key.id.0.as_bytes().as_slice())?,
        by_hash(conn, &key.hash)?,
    ]
    .into_iter()
    .flatten()
    .collect();
    check_new_api_key(key, &clashing)?;
    let sql = format!("INSERT INTO api_keys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    conn.prepare_cached(&sql)
        .and_then(|mut stmt| {
            stmt.execute(params![
                key.id.0.as_bytes().as_slice(),
                key.tenant,
                key.name,
                key.hash,
                key.prefix,
                key.created_at.0,
                key.revoked_at.map(|t| t.0),
            ])
        })
        .map_err(sql_err(OP))?;
    Ok(())
}

/// Set `revoked_ms` unless it is set; the key as it is afterwards.
pub(crate) fn revoke(
    conn: &Connection,
    id: ApiKeyId,
    at: Timestamp,
) -> StoreResult<Option<ApiKey>> {
    const OP: &str = "revoke API key";
    let id_blob = id.0.as_bytes().as_slice();
    conn.prepare_cached("UPDATE api_keys SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL")
        .and_then(|mut stmt| stmt.execute(params![id_blob, at.0]))
        .map_err(sql_err(OP))?;
    one(conn, "id = ?1", &id_blob)
}
