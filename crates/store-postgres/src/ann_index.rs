//! Upkeep of each model's HNSW index (see `vectors` for what it indexes and how it is searched).
//!
//! - **Created** with the model's registration, over the windows stored so far
//!   ([`ensure`], under the migration lock).
//! - **Caught up** with windows written since ([`catch_up`]): a few at a time, each an HNSW
//!   insert (about a millisecond, more in a big graph); or, for a backlog of at least
//!   [`REBUILD_BACKLOG`] windows that is at least as big as the index, all at once by building
//!   the index again, which pgvector does several times faster than as many inserts.
//! - **A rebuild blocks nobody.** It drops the index and creates it again `CONCURRENTLY`, so
//!   reads and writes go on; meanwhile a big user is searched exactly (the index is gone, the
//!   query still reads only that user's rows). One server rebuilds at a time (a session
//!   advisory lock); `ensure` leaves a missing index to a rebuild in progress, and a rebuild
//!   that died halfway (the index missing, or left invalid) is redone by the next catch-up.

use mnemos_core::{CatchUp, StoreResult};
use postgres::{Client, Transaction};

use crate::codec::pg_err;
use crate::vectors::literal;

/// A backlog from which a catch-up rebuilds the index instead of inserting into it.
const REBUILD_BACKLOG: u64 = 10_000;
/// Held (session level) by the one connection rebuilding an index; `ensure` tries it too.
const REBUILD_LOCK: i64 = 0x6d6e_6d73_7269;

/// The HNSW index of one model as the catalog sees it.
struct IndexState {
    /// The index's name (from the model's name, so every server agrees on it).
    name: String,
    /// The name an index covering every window had before indexing was deferred.
    earlier: String,
    /// Present and usable by queries.
    valid: bool,
    /// Present at all (a failed concurrent build leaves an invalid index behind).
    exists: bool,
    /// The rows it holds, as PostgreSQL estimates them (0 when unknown).
    rows: f64,
}

fn index_state(client: &mut impl postgres::GenericClient, model: &str) -> StoreResult<IndexState> {
    let row = client
        .query_one(
            "SELECT n.name, 'vector_windows_hnsw_' || substr(md5($1), 1, 16), \
             i.indexrelid IS NOT NULL, COALESCE(i.indisvalid, false), \
             GREATEST(COALESCE(c.reltuples, 0), 0)::float8 \
             FROM (SELECT 'vector_windows_ann_' || substr(md5($1), 1, 16) AS name) AS n \
             LEFT JOIN pg_class c ON c.oid = to_regclass(n.name) \
             LEFT JOIN pg_index i ON i.indexrelid = c.oid",
            &[&model],
        )
        .map_err(pg_err("read the vector index's state"))?;
    Ok(IndexState {
        name: row.get(0),
        earlier: row.get(1),
        exists: row.get(2),
        valid: row.get(3),
        rows: row.get(4),
    })
}

/// The HNSW build parameter (pgvector's default is 64). Measured on 100k windows of one user:
/// recall@10 against brute force 0.989 at 64 and 0.995 at 128, for about twice the build time
/// and no change in search time.
const EF_CONSTRUCTION: u32 = 128;

fn create_sql(state: &IndexState, model_sql: &str, dim: usize, concurrently: bool) -> String {
    let how = if concurrently { "CONCURRENTLY " } else { "" };
    format!(
        "CREATE INDEX {how}{} ON vector_windows \
         USING hnsw ((embedding::vector({dim})) vector_cosine_ops) \
         WITH (ef_construction = {EF_CONSTRUCTION}) WHERE model = {model_sql} AND indexed",
        state.name
    )
}

/// Create `model`'s HNSW index over its indexed windows unless it is there and valid (in the
/// caller's transaction), and drop the index of the earlier layout. Left alone while a
/// rebuild runs: the rebuild creates it.
pub(crate) fn ensure(tx: &mut Transaction<'_>, model: &str, dim: usize) -> StoreResult<()> {
    const OP: &str = "prepare vector index";
    let state = index_state(tx, model)?;
    if state.valid {
        return Ok(());
    }
    let free: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&REBUILD_LOCK])
        .map_err(pg_err(OP))?
        .get(0);
    if !free {
        return Ok(());
    }
    let model_sql = literal(model)?;
    let mut sql = format!("DROP INDEX IF EXISTS {}; ", state.earlier);
    if state.exists {
        sql.push_str(&format!("DROP INDEX {}; ", state.name));
    }
    sql.push_str(&create_sql(&state, &model_sql, dim, false));
    tx.batch_execute(&sql).map_err(pg_err(OP))
}

/// Move waiting windows of `model` into its index (see the module docs): up to `max_windows`
/// inserts, or a rebuild for a big backlog or a missing or invalid index (even with nothing
/// waiting). `dim`: the model's registered window dimension (`None`: not registered, so there
/// is no index). Says what is left.
pub(crate) fn catch_up(
    client: &mut Client,
    model: &str,
    dim: Option<usize>,
    max_windows: usize,
) -> StoreResult<CatchUp> {
    let model_sql = literal(model)?;
    let waiting = count_waiting(client, &model_sql)?;
    let nothing = CatchUp {
        indexed: 0,
        remaining: waiting,
    };
    if max_windows == 0 {
        return Ok(nothing);
    }
    let Some(dim) = dim else {
        return Ok(nothing);
    };
    let state = index_state(client, model)?;
    if state.valid && waiting == 0 {
        return Ok(nothing);
    }
    let big = waiting >= REBUILD_BACKLOG && waiting as f64 >= state.rows;
    let indexed = if big || !state.valid {
        rebuild(client, &state, &model_sql, dim)?.unwrap_or(0)
    } else {
        insert_some(client, &model_sql, max_windows)?
    };
    Ok(CatchUp {
        indexed,
        remaining: count_waiting(client, &model_sql)?,
    })
}

fn count_waiting(client: &mut Client, model_sql: &str) -> StoreResult<u64> {
    let waiting: i64 = client
        .query_one(
            &format!(
                "SELECT count(*) FROM vector_windows WHERE model = {model_sql} AND NOT indexed"
            ),
            &[],
        )
        .map_err(pg_err("count windows waiting for the index"))?
        .get(0);
    Ok(u64::try_from(waiting).unwrap_or(0))
}

/// Mark up to `max_windows` waiting windows indexed (each an HNSW insert), taking rows no
/// other server is marking.
fn insert_some(client: &mut Client, model_sql: &str, max_windows: usize) -> StoreResult<u64> {
    let limit = i64::try_from(max_windows).unwrap_or(i64::MAX);
    client
        .execute(
            &format!(
                "UPDATE vector_windows SET indexed = true WHERE ctid = ANY (ARRAY( \
                 SELECT ctid FROM vector_windows WHERE model = {model_sql} AND NOT indexed \
                 LIMIT $1 FOR UPDATE SKIP LOCKED))"
            ),
            &[&limit],
        )
        .map_err(pg_err("catch up the vector index"))
}

/// Drop the index, mark every waiting window indexed, and build the index again, each step
/// its own statement so that none blocks readers or writers. `Ok(None)`: another connection
/// is rebuilding. Windows written meanwhile wait for the next catch-up.
fn rebuild(
    client: &mut Client,
    state: &IndexState,
    model_sql: &str,
    dim: usize,
) -> StoreResult<Option<u64>> {
    const OP: &str = "rebuild the vector index";
    let locked: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&REBUILD_LOCK])
        .map_err(pg_err(OP))?
        .get(0);
    if !locked {
        return Ok(None);
    }
    let rebuilt = rebuild_locked(client, state, model_sql, dim);
    let unlocked = client
        .execute("SELECT pg_advisory_unlock($1)", &[&REBUILD_LOCK])
        .map_err(pg_err(OP));
    let moved = rebuilt?;
    unlocked?;
    Ok(Some(moved))
}

fn rebuild_locked(
    client: &mut Client,
    state: &IndexState,
    model_sql: &str,
    dim: usize,
) -> StoreResult<u64> {
    const OP: &str = "rebuild the vector index";
    // One statement per call: a concurrent index operation cannot run in a transaction block,
    // which several statements in one simple query would make.
    for drop in [&state.name, &state.earlier] {
        client
            .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {drop}"))
            .map_err(pg_err(OP))?;
    }
    let moved = client
        .execute(
            &format!("UPDATE vector_windows SET indexed = true WHERE model = {model_sql} AND NOT indexed"),
            &[],
        )
        .map_err(pg_err(OP))?;
    // Reclaim the old row versions now, while there is no HNSW index to vacuum: left to
    // autovacuum, they would make it scan the new graph, slowing searches for a minute.
    client
        .batch_execute("VACUUM (ANALYZE) vector_windows")
        .map_err(pg_err(OP))?;
    client
        .batch_execute(&create_sql(state, model_sql, dim, true))
        .map_err(pg_err(OP))?;
    Ok(moved)
}
