//! Nearest-neighbour search inside PostgreSQL with pgvector ([`VectorSearch`]).
//!
//! - **Source of truth.** `vectors` keeps every vector exactly (little-endian `f32` in `bytea`),
//!   as without pgvector. `vector_windows` holds the same numbers as pgvector `vector`s, one
//!   row per window, for models registered in `vector_models` with their window dimension. A
//!   window row references its `vectors` row, so a forget or purge deleting the vector deletes
//!   its windows with it; a replaced vector's windows are rewritten in the same transaction.
//! - **Index.** One HNSW index (cosine) per registered model, on the expression
//!   `embedding::vector(dim)` and restricted to the model's windows marked `indexed` (pgvector
//!   indexes need one dimension; models differ). Created by [`VectorSearch::prepare`] under the
//!   migration lock, over the windows stored so far; kept up by `ann_index`.
//! - **Deferred indexing.** A write stores its windows with `indexed = false`: they pay no HNSW
//!   insert, which costs a millisecond or more each and would make ingest many times slower.
//!   [`VectorSearch::catch_up`] moves them into the index later, a few inserts at a time or, for
//!   a big backlog, by rebuilding the index without blocking anyone (`ann_index`); the server
//!   does it between requests and `mnemos ingest` at its end. A search reads the waiting windows
//!   of the user exactly, through a partial index that holds only them, beside the HNSW answer:
//!   nothing written is ever missed.
//! - **One user among many.** pgvector 0.6 filters an HNSW scan after the fact: the index
//!   returns the `ef_search` nearest windows of everybody, and only the user's survive. So a
//!   user with fewer than `EXACT_BELOW` windows is answered exactly over their own rows (found
//!   by the `(tenant, user_id, model)` index). For bigger users the query asks the index for
//!   twice the wanted windows with `ef_search` raised to match; when fewer come back than
//!   wanted, it is answered exactly instead.
//! - **Registration races.** A write stores its `bytea` rows first, then reads the registry;
//!   `prepare` locks `vectors` against writers before it registers and backfills. So a vector
//!   is either committed before the backfill reads, or its writer sees the registration.

use std::collections::HashMap;

use mnemos_core::{CatchUp, MemoryId, StoreError, StoreResult, UserKey, VectorRow, VectorSearch};
use pgvector::Vector;
use postgres::{Client, GenericClient, Transaction};

use crate::ann_index;
use crate::codec::pg_err;
use crate::schema::MIGRATION_LOCK;
use crate::PostgresStore;

/// Tables of the index path, created once the extension is installed.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS vector_models (
    model text PRIMARY KEY,
    dim   integer NOT NULL CHECK (dim > 0)
);
CREATE TABLE IF NOT EXISTS vector_windows (
    memory_id uuid NOT NULL,
    model     text NOT NULL,
    win       integer NOT NULL,
    tenant    text NOT NULL,
    user_id   text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (memory_id, model, win),
    FOREIGN KEY (memory_id, model) REFERENCES vectors (memory_id, model) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS vector_windows_by_user ON vector_windows (tenant, user_id, model);
-- Windows written but not yet in their model's HNSW index (see the module docs). Rows from
-- before the column existed were indexed as they were written.
ALTER TABLE vector_windows ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT true;
CREATE INDEX IF NOT EXISTS vector_windows_waiting ON vector_windows (model, tenant, user_id)
    WHERE NOT indexed;
";

/// Windows asked of the index per wanted memory (a long memory has several).
const WINDOWS_PER_HIT: usize = 2;
/// pgvector's upper bound of `hnsw.ef_search`.
const MAX_EF_SEARCH: usize = 1000;
/// Users with fewer windows than this are answered exactly, without the index: their own rows
/// are quick to scan, and in a table shared with bigger users the index's post-filtered answer
/// would come up short anyway (measured: two queries per search instead of one).
const EXACT_BELOW: i64 = 2_000;
/// Rows read per round trip while backfilling a newly registered model.
const BACKFILL_CHUNK: i32 = 2_000;

/// Install pgvector in the database (if the server has it) and create the index path's
/// tables. `Ok(Err(reason))`: the path is off, and why (no extension, no privilege).
pub(crate) fn enable(client: &mut Client) -> StoreResult<Result<String, String>> {
    let available: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
            &[],
        )
        .map_err(pg_err("detect pgvector"))?
        .get(0);
    if !available {
        return Ok(Err(
            "the PostgreSQL server has no pgvector extension".to_string()
        ));
    }
    let mut tx = client.transaction().map_err(pg_err("enable pgvector"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg_err("enable pgvector"))?;
    if let Err(e) = tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector") {
        return Ok(Err(format!("cannot install pgvector: {e}")));
    }
    tx.batch_execute(SCHEMA)
        .map_err(pg_err("enable pgvector"))?;
    let version: String = tx
        .query_one(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .map_err(pg_err("enable pgvector"))?
        .get(0);
    tx.commit().map_err(pg_err("enable pgvector"))?;
    Ok(Ok(format!("pgvector {version} HNSW (cosine)")))
}

/// `model` as an SQL string literal (the index predicate and the queries must name it as a
/// constant for the planner to pick the model's partial index).
pub(crate) fn literal(model: &str) -> StoreResult<String> {
    if model.contains('\0') {
        return Err(StoreError::InvalidWrite(
            "model name contains U+0000".to_string(),
        ));
    }
    Ok(format!("'{}'", model.replace('\'', "''")))
}

fn to_i32(n: usize, what: &str) -> StoreResult<i32> {
    i32::try_from(n).map_err(|_| StoreError::InvalidWrite(format!("{what} {n} is too large")))
}

/// The registered window dimension of `model`, if any.
fn registered_dim(client: &mut impl GenericClient, model: &str) -> StoreResult<Option<usize>> {
    let row = client
        .query_opt("SELECT dim FROM vector_models WHERE model = $1", &[&model])
        .map_err(pg_err("read vector models"))?;
    Ok(row.map(|r| usize::try_from(r.get::<_, i32>(0)).unwrap_or(0)))
}

/// Write the windows of `rows` whose model is registered, replacing those they had. Runs after
/// the rows' `bytea` insert in the same transaction (see the module docs).
pub(crate) fn write_windows(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    rows: &[&VectorRow],
    op: &'static str,
) -> StoreResult<()> {
    let mut models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let dims: HashMap<String, usize> = tx
        .query(
            "SELECT model, dim FROM vector_models WHERE model = ANY($1)",
            &[&models],
        )
        .map_err(pg_err(op))?
        .into_iter()
        .map(|r| {
            let dim: i32 = r.get(1);
            (r.get::<_, String>(0), usize::try_from(dim).unwrap_or(0))
        })
        .collect();
    let indexed: Vec<(&VectorRow, usize)> = rows
        .iter()
        .filter_map(|r| dims.get(&r.model).map(|&d| (*r, d)))
        .filter(|&(_, dim)| dim > 0)
        .collect();
    if indexed.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = indexed.iter().map(|(r, _)| r.memory_id.0).collect();
    let names: Vec<&str> = indexed.iter().map(|(r, _)| r.model.as_str()).collect();
    tx.execute(
        "DELETE FROM vector_windows WHERE (memory_id, model) IN \
         (SELECT * FROM UNNEST($1::uuid[], $2::text[]))",
        &[&ids, &names],
    )
    .map_err(pg_err(op))?;
    let owned: Vec<(MemoryId, &str, &[f32], usize)> = indexed
        .iter()
        .map(|(r, dim)| (r.memory_id, r.model.as_str(), r.vector.as_slice(), *dim))
        .collect();
    insert_windows(tx, user, &owned, Indexing::Deferred, op)
}

/// Whether inserted windows enter their model's HNSW index now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Indexing {
    /// Marked indexed: for windows copied in before the index is built over them.
    Now,
    /// Left for [`VectorSearch::catch_up`] (see the module docs).
    Deferred,
}

/// Insert one row per window of each vector (vectors that are not whole windows of their
/// model's dimension are left out: they cannot be compared with a query).
fn insert_windows(
    tx: &mut Transaction<'_>,
    user: &UserKey,
    vectors: &[(MemoryId, &str, &[f32], usize)],
    indexing: Indexing,
    op: &'static str,
) -> StoreResult<()> {
    let mut ids = Vec::new();
    let mut models = Vec::new();
    let mut wins = Vec::new();
    let mut embeddings = Vec::new();
    for &(id, model, vector, dim) in vectors {
        if vector.is_empty() || vector.len() % dim != 0 {
            continue;
        }
        for (win, window) in vector.chunks_exact(dim).enumerate() {
            ids.push(id.0);
            models.push(model);
            wins.push(to_i32(win, "window")?);
            embeddings.push(Vector::from(window.to_vec()));
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    let indexed = indexing == Indexing::Now;
    tx.execute(
        "INSERT INTO vector_windows (memory_id, model, win, tenant, user_id, embedding, indexed) \
         SELECT w.memory_id, w.model, w.win, $5, $6, w.embedding, $7 \
         FROM UNNEST($1::uuid[], $2::text[], $3::integer[], $4::vector[]) \
         AS w (memory_id, model, win, embedding)",
        &[
            &ids,
            &models,
            &wins,
            &embeddings,
            &user.tenant,
            &user.user,
            &indexed,
        ],
    )
    .map_err(pg_err(op))?;
    Ok(())
}

impl PostgresStore {
    /// Register `model` with `dim`, copy its stored vectors into windows and build its index,
    /// in one transaction under the migration lock.
    fn prepare_here(&self, client: &mut Client, model: &str, dim: usize) -> StoreResult<()> {
        const OP: &str = "prepare vector index";
        let dim_sql = to_i32(dim, "vector dimension")?;
        if dim == 0 {
            return Err(StoreError::InvalidWrite(
                "vector dimension must be positive".to_string(),
            ));
        }
        literal(model)?;
        let mut tx = client.transaction().map_err(pg_err(OP))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(pg_err(OP))?;
        match registered_dim(&mut tx, model)? {
            Some(found) if found == dim => {
                ann_index::ensure(&mut tx, model, dim)?;
                return tx.commit().map_err(pg_err(OP));
            }
            Some(found) => {
                return Err(StoreError::InvalidWrite(format!(
                    "model {model} is registered with {found} dimensions, not {dim}"
                )))
            }
            None => {}
        }
        tx.batch_execute("LOCK TABLE vectors IN SHARE MODE")
            .map_err(pg_err(OP))?;
        tx.execute(
            "INSERT INTO vector_models (model, dim) VALUES ($1, $2)",
            &[&model, &dim_sql],
        )
        .map_err(pg_err(OP))?;
        backfill(&mut tx, model, dim)?;
        ann_index::ensure(&mut tx, model, dim)?;
        tx.commit().map_err(pg_err(OP))
    }

    /// The registered dimension of `model`, remembered once read (a registration never changes).
    fn model_dim(&self, client: &mut Client, model: &str) -> StoreResult<Option<usize>> {
        if let Some(&dim) = self.vector_dims.lock().get(model) {
            return Ok(Some(dim));
        }
        let found = registered_dim(client, model)?;
        if let Some(dim) = found {
            self.vector_dims.lock().insert(model.to_string(), dim);
        }
        Ok(found)
    }

    fn nearest_here(
        &self,
        client: &mut Client,
        user: &UserKey,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> StoreResult<Vec<(MemoryId, f32)>> {
        const OP: &str = "nearest vectors";
        let Some(dim) = self.model_dim(client, model)? else {
            return Err(StoreError::InvalidWrite(format!(
                "model {model} is not prepared for vector search"
            )));
        };
        if query.len() != dim {
            return Err(StoreError::InvalidWrite(format!(
                "query vector has {} dimensions, model {model} has {dim}",
                query.len()
            )));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let wanted = k.saturating_mul(WINDOWS_PER_HIT).min(MAX_EF_SEARCH);
        let ef_search = wanted.max(40);
        let model_sql = literal(model)?;
        let vector = Vector::from(query.to_vec());
        let limit = i64::try_from(wanted).unwrap_or(i64::MAX);
        let mut tx = client.transaction().map_err(pg_err(OP))?;
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef_search}"))
            .map_err(pg_err(OP))?;
        let by_index = format!(
            "SELECT memory_id, 1 - (embedding::vector({dim}) <=> $3::vector({dim})) \
             FROM vector_windows \
             WHERE tenant = $1 AND user_id = $2 AND model = {model_sql} AND indexed \
             ORDER BY embedding::vector({dim}) <=> $3::vector({dim}) LIMIT $4"
        );
        let params: [&(dyn postgres::types::ToSql + Sync); 4] =
            [&user.tenant, &user.user, &vector, &limit];
        let small = few_windows(&mut tx, user, model)?;
        let mut rows = if small {
            Vec::new()
        } else {
            tx.query(by_index.as_str(), &params).map_err(pg_err(OP))?
        };
        if rows.len() < wanted {
            // A small user, or too few of this user's windows among the index's nearest:
            // answer exactly.
            let exact = format!(
                "WITH mine AS MATERIALIZED (SELECT memory_id, embedding FROM vector_windows \
                 WHERE tenant = $1 AND user_id = $2 AND model = {model_sql}) \
                 SELECT memory_id, 1 - (embedding::vector({dim}) <=> $3::vector({dim})) AS sim \
                 FROM mine ORDER BY sim DESC, memory_id LIMIT $4"
            );
            rows = tx.query(exact.as_str(), &params).map_err(pg_err(OP))?;
        } else {
            // The index holds only windows caught up with; the rest are read exactly.
            let waiting = format!(
                "SELECT memory_id, 1 - (embedding::vector({dim}) <=> $3::vector({dim})) AS sim \
                 FROM vector_windows \
                 WHERE model = {model_sql} AND tenant = $1 AND user_id = $2 AND NOT indexed \
                 ORDER BY sim DESC, memory_id LIMIT $4"
            );
            rows.extend(tx.query(waiting.as_str(), &params).map_err(pg_err(OP))?);
        }
        tx.commit().map_err(pg_err(OP))?;
        Ok(best_per_memory(
            rows.iter()
                .map(|r| (MemoryId(r.get(0)), r.get::<_, f64>(1) as f32)),
            k,
        ))
    }
}

/// Whether `user` has fewer than [`EXACT_BELOW`] windows of `model` (counted no further).
fn few_windows(tx: &mut Transaction<'_>, user: &UserKey, model: &str) -> StoreResult<bool> {
    let bound = EXACT_BELOW;
    Ok(tx
        .query_one(
            "SELECT count(*) < $4 FROM (SELECT 1 FROM vector_windows \
             WHERE tenant = $1 AND user_id = $2 AND model = $3 LIMIT $4) AS mine",
            &[&user.tenant, &user.user, &model, &bound],
        )
        .map_err(pg_err("nearest vectors"))?
        .get(0))
}

/// Copy the stored vectors of a newly registered model into windows, a chunk at a time.
fn backfill(tx: &mut Transaction<'_>, model: &str, dim: usize) -> StoreResult<()> {
    const OP: &str = "backfill vector windows";
    let portal = tx
        .bind(
            "SELECT v.memory_id, v.dim, v.data, m.tenant, m.user_id FROM vectors v \
             JOIN memories m ON m.id = v.memory_id WHERE v.model = $1 \
             ORDER BY m.tenant, m.user_id",
            &[&model],
        )
        .map_err(pg_err(OP))?;
    loop {
        let rows = tx
            .query_portal(&portal, BACKFILL_CHUNK)
            .map_err(pg_err(OP))?;
        if rows.is_empty() {
            return Ok(());
        }
        let mut by_user: HashMap<UserKey, Vec<(MemoryId, Vec<f32>)>> = HashMap::new();
        for row in &rows {
            let floats = usize::try_from(row.get::<_, i32>(1)).unwrap_or(0);
            let data: Vec<u8> = row.get(2);
            let Some(vector) = mnemos_core::vector_from_le_bytes(&data, floats) else {
                return Err(StoreError::Corrupt(format!(
                    "vector of memory {} has the wrong length",
                    MemoryId(row.get(0))
                )));
            };
            let user = UserKey::new(row.get::<_, String>(3), row.get::<_, String>(4))
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            by_user
                .entry(user)
                .or_default()
                .push((MemoryId(row.get(0)), vector));
        }
        for (user, vectors) in &by_user {
            let rows: Vec<(MemoryId, &str, &[f32], usize)> = vectors
                .iter()
                .map(|(id, v)| (*id, model, v.as_slice(), dim))
                .collect();
            insert_windows(tx, user, &rows, Indexing::Now, OP)?;
        }
    }
}

/// Distinct memories in order of their best window, at most `k`.
fn best_per_memory(
    windows: impl Iterator<Item = (MemoryId, f32)>,
    k: usize,
) -> Vec<(MemoryId, f32)> {
    let mut best: HashMap<MemoryId, f32> = HashMap::new();
    for (id, score) in windows {
        let entry = best.entry(id).or_insert(score);
        if score > *entry {
            *entry = score;
        }
    }
    let mut ranked: Vec<(MemoryId, f32)> = best.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    ranked
}

impl VectorSearch for PostgresStore {
    fn prepare(&self, model: &str, dim: usize) -> StoreResult<()> {
        self.with_client(|client| self.prepare_here(client, model, dim))
    }

    fn nearest(
        &self,
        user: &UserKey,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> StoreResult<Vec<(MemoryId, f32)>> {
        self.with_client(|client| self.nearest_here(client, user, model, query, k))
    }

    fn coverage(&self, user: &UserKey, model: &str) -> StoreResult<Vec<(MemoryId, usize)>> {
        self.with_client(|client| {
            let rows = client
                .query(
                    "SELECT v.memory_id, v.dim FROM vectors v JOIN memories m ON m.id = v.memory_id \
                     WHERE m.tenant = $1 AND m.user_id = $2 AND m.active AND v.model = $3",
                    &[&user.tenant, &user.user, &model],
                )
                .map_err(pg_err("vector coverage"))?;
            Ok(rows
                .iter()
                .map(|r| {
                    let floats: i32 = r.get(1);
                    (MemoryId(r.get(0)), usize::try_from(floats).unwrap_or(0))
                })
                .collect())
        })
    }

    fn catch_up(&self, model: &str, max_windows: usize) -> StoreResult<CatchUp> {
        self.with_client(|client| {
            // The registration, remembered once read: idle catch-ups then cost two queries.
            let dim = self.model_dim(client, model)?;
            ann_index::catch_up(client, model, dim, max_windows)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_quoted_as_literals() {
        assert_eq!(literal("m3e").unwrap(), "'m3e'");
        assert_eq!(literal("it's").unwrap(), "'it''s'");
        assert!(literal("a\0b").is_err());
    }

    #[test]
    fn a_memory_ranks_by_its_best_window() {
        let a = MemoryId(uuid::Uuid::from_u128(1));
        let b = MemoryId(uuid::Uuid::from_u128(2));
        let c = MemoryId(uuid::Uuid::from_u128(3));
        let ranked = best_per_memory(
            [(a, 0.9), (b, 0.8), (a, 0.5), (c, 0.95), (b, 0.99)].into_iter(),
            2,
        );
        assert_eq!(ranked, vec![(b, 0.99), (c, 0.95)]);
    }
}
