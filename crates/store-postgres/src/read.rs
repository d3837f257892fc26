//! The reading half: every `StoreRead` method, and the row loaders writes share.

use mnemos_core::{
    ApiKey, ApiKeyId, HistoryEntry, Job, JobId, Memory, MemoryFilter, MemoryId, Page, Paged,
    StateFilter, StoreError, StoreInfo, StoreRead, StoreResult, Timestamp, Turn, TurnId, UserKey,
    Validity, VectorRow, VectorSearch,
};
use mnemos_core::{JobRead, KeyRead, MemoryRead, VectorRead};
use postgres::types::ToSql;
use postgres::GenericClient;

use crate::codec::{
    decode_vector, get, pg_err, read_history, read_job, read_memory, read_turn, round_from_sql,
    JOB_COLUMNS, MEMORY_COLUMNS, TURN_COLUMNS,
};
use crate::{versions, PostgresStore};

pub(crate) fn load_memory(
    client: &mut impl GenericClient,
    user: &UserKey,
    id: MemoryId,
) -> StoreResult<Option<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = $1 AND m.tenant = $2 AND m.user_id = $3"
    );
    client
        .query_opt(&sql, &[&id.0, &user.tenant, &user.user])
        .map_err(pg_err("read memory"))?
        .map(|row| read_memory(&row))
        .transpose()
}

pub(crate) fn load_job(
    client: &mut impl GenericClient,
    user: &UserKey,
    id: JobId,
) -> StoreResult<Option<Job>> {
    let sql =
        format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1 AND tenant = $2 AND user_id = $3");
    client
        .query_opt(&sql, &[&id.0, &user.tenant, &user.user])
        .map_err(pg_err("read job"))?
        .map(|row| read_job(&row))
        .transpose()
}

pub(crate) fn last_round_in(
    client: &mut impl GenericClient,
    user: &UserKey,
) -> StoreResult<Option<u64>> {
    let max: Option<i64> = client
        .query_one(
            "SELECT MAX(round) FROM turns WHERE tenant = $1 AND user_id = $2",
            &[&user.tenant, &user.user],
        )
        .map_err(pg_err("last round"))?
        .get(0);
    max.map(|r| round_from_sql(r, "last round")).transpose()
}

const KEY_COLUMNS: &str = "id, tenant, name, hash, prefix, created_ms, revoked_ms";

fn read_key(row: &postgres::Row) -> StoreResult<ApiKey> {
    const OP: &str = "read API key";
    Ok(ApiKey {
        id: ApiKeyId(get(row, 0, OP)?),
        tenant: get(row, 1, OP)?,
        name: get(row, 2, OP)?,
        hash: get(row, 3, OP)?,
        prefix: get(row, 4, OP)?,
        created_at: Timestamp(get(row, 5, OP)?),
        revoked_at: get::<Option<i64>>(row, 6, OP)?.map(Timestamp),
    })
}

/// One API key found by `condition` on `$1`.
pub(crate) fn load_key(
    client: &mut impl GenericClient,
    condition: &str,
    value: &(dyn ToSql + Sync),
) -> StoreResult<Option<ApiKey>> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE {condition}");
    client
        .query_opt(&sql, &[value])
        .map_err(pg_err("find API key"))?
        .map(|row| read_key(&row))
        .transpose()
}

pub(crate) fn all_keys(client: &mut impl GenericClient) -> StoreResult<Vec<ApiKey>> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_ms, id");
    client
        .query(&sql, &[])
        .map_err(pg_err("list API keys"))?
        .iter()
        .map(read_key)
        .collect()
}

type Params = Vec<Box<dyn ToSql + Sync + Send>>;

/// The SQL `FROM … WHERE` of a memory listing (table aliased `m`) and its parameters.
fn filter_sql(user: &UserKey, filter: &MemoryFilter) -> (String, Params) {
    let mut params: Params = vec![Box::new(user.tenant.clone()), Box::new(user.user.clone())];
    let mut sql = String::from("FROM memories m WHERE m.tenant = $1 AND m.user_id = $2");
    let mut add = |sql: &mut String, condition: &str, value: Box<dyn ToSql + Sync + Send>| {
        params.push(value);
        sql.push_str(&condition.replace('?', &format!("${}", params.len())));
    };
    if !filter.kinds.is_empty() {
        let kinds: Vec<String> = filter
            .kinds
            .iter()
            .map(|k| k.as_str().to_string())
            .collect();
        add(&mut sql, " AND m.kind = ANY(?)", Box::new(kinds));
    }
    if let Some(agent) = &filter.agent {
        add(&mut sql, " AND m.agent = ?", Box::new(agent.clone()));
    }
    if let Some(session) = &filter.session {
        add(&mut sql, " AND m.session = ?", Box::new(session.clone()));
    }
    match filter.state {
        StateFilter::Active => sql.push_str(" AND m.active"),
        StateFilter::Forgotten => sql.push_str(" AND NOT m.active"),
        StateFilter::All => {}
    }
    if let Some(since) = filter.created_since {
        add(&mut sql, " AND m.created_time >= ?", Box::new(since.0));
    }
    if let Some(before) = filter.created_before {
        add(&mut sql, " AND m.created_time < ?", Box::new(before.0));
    }
    match filter.validity {
        Validity::Any => {}
        Validity::Current => sql.push_str(" AND m.valid_to IS NULL"),
        Validity::At(at) => {
            add(&mut sql, " AND m.valid_from <= ?", Box::new(at.0));
            add(
                &mut sql,
                " AND (m.valid_to IS NULL OR m.valid_to > ?)",
                Box::new(at.0),
            );
        }
    }
    if !filter.metadata.is_empty() {
        let pairs = serde_json::to_value(&filter.metadata).unwrap_or_default();
        add(&mut sql, " AND m.metadata @> ?", Box::new(pairs));
    }
    (sql, params)
}

fn as_refs(params: &Params) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

fn count(value: i64, op: &str) -> StoreResult<usize> {
    usize::try_from(value).map_err(|_| StoreError::Corrupt(format!("{op}: negative count {value}")))
}

fn sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl MemoryRead for PostgresStore {
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>> {
        self.with_client(|client| {
            let sql = format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE id = $1 AND tenant = $2 AND user_id = $3"
            );
            client
                .query_opt(&sql, &[&id.0, &user.tenant, &user.user])
                .map_err(pg_err("read turn"))?
                .map(|row| read_turn(&row))
                .transpose()
        })
    }

    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>> {
        self.read_tx("list turns", |tx| {
            let total: i64 = tx
                .query_one(
                    "SELECT COUNT(*) FROM turns WHERE tenant = $1 AND user_id = $2",
                    &[&user.tenant, &user.user],
                )
                .map_err(pg_err("list turns"))?
                .get(0);
            let total = count(total, "list turns")?;
            let mut items = Vec::new();
            if page.reaches(total) {
                let sql = format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE tenant = $1 AND user_id = $2 \
                     ORDER BY round, time_ms, id LIMIT $3 OFFSET $4"
                );
                let params: [&(dyn ToSql + Sync); 4] = [
                    &user.tenant,
                    &user.user,
                    &sql_count(page.limit),
                    &sql_count(page.offset),
                ];
                for row in tx.query(&sql, &params).map_err(pg_err("list turns"))? {
                    items.push(read_turn(&row)?);
                }
            }
            Ok(Paged::from_window(items, total, page))
        })
    }

    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.with_client(|client| {
            let sql = format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE tenant = $1 AND user_id = $2 AND key = ANY($3)"
            );
            client
                .query(&sql, &[&user.tenant, &user.user, &keys])
                .map_err(pg_err("read turns by key"))?
                .iter()
                .map(read_turn)
                .collect()
        })
    }

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        self.with_client(|client| load_memory(client, user, id))
    }

    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let uuids: Vec<uuid::Uuid> = ids.iter().map(|id| id.0).collect();
        let found = self.with_client(|client| {
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m \
                 WHERE m.id = ANY($1) AND m.tenant = $2 AND m.user_id = $3"
            );
            client
                .query(&sql, &[&uuids, &user.tenant, &user.user])
                .map_err(pg_err("read memories"))?
                .iter()
                .map(read_memory)
                .collect::<StoreResult<Vec<Memory>>>()
        })?;
        // In the order asked for.
        let mut by_id: std::collections::HashMap<MemoryId, Memory> =
            found.into_iter().map(|m| (m.id, m)).collect();
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> StoreResult<Paged<Memory>> {
        let (where_sql, mut params) = filter_sql(user, filter);
        self.read_tx("list memories", |tx| {
            let total: i64 = tx
                .query_one(&format!("SELECT COUNT(*) {where_sql}"), &as_refs(&params))
                .map_err(pg_err("list memories"))?
                .get(0);
            let total = count(total, "list memories")?;
            let mut items = Vec::new();
            if page.reaches(total) {
                let n = params.len();
                let sql = format!(
                    "SELECT {MEMORY_COLUMNS} {where_sql} ORDER BY m.created_round, m.created_time, m.id \
                     LIMIT ${} OFFSET ${}",
                    n + 1,
                    n + 2
                );
                params.push(Box::new(sql_count(page.limit)));
                params.push(Box::new(sql_count(page.offset)));
                for row in tx.query(&sql, &as_refs(&params)).map_err(pg_err("list memories"))? {
                    items.push(read_memory(&row)?);
                }
            }
            Ok(Paged::from_window(items, total, page))
        })
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        let rows = self.with_client(|client| {
            client
                .query(
                    "SELECT h.version, h.at_round, h.at_time, h.change, h.snapshot FROM memory_history h \
                     JOIN memories m ON m.id = h.memory_id \
                     WHERE h.memory_id = $1 AND m.tenant = $2 AND m.user_id = $3 ORDER BY h.version",
                    &[&id.0, &user.tenant, &user.user],
                )
                .map_err(pg_err("read history"))
        })?;
        rows.iter().map(|row| read_history(row, id, 0)).collect()
    }

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        self.with_client(|client| {
            client
                .query(
                    "SELECT tenant, user_id FROM users ORDER BY tenant, user_id",
                    &[],
                )
                .map_err(pg_err("list users"))?
                .iter()
                .map(|row| {
                    Ok(UserKey {
                        tenant: get(row, 0, "list users")?,
                        user: get(row, 1, "list users")?,
                    })
                })
                .collect()
        })
    }

    /// Exact per user: the user's version in the database, or, while it is still the one our
    /// latest commit of the user left, what it was before our commits (see `versions`). Our
    /// commits in flight are waited for, so none is ever taken for someone else's (which would
    /// rebuild the user's caches for nothing).
    fn data_version(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.with_client(|client| {
            let _window = self.commit_window.write();
            let in_db = versions::read(client, user)?;
            Ok(Some(self.own_commits.shown(user, in_db)))
        })
    }

    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.with_client(|client| last_round_in(client, user))
    }

    fn export_user(&self, user: &UserKey) -> StoreResult<mnemos_core::UserExport> {
        crate::export::export(self, user)
    }
}

impl JobRead for PostgresStore {
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
        self.with_client(|client| load_job(client, user, id))
    }

    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.with_client(|client| {
            let sql = format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = $1 AND user_id = $2 AND done_round IS NULL \
                 ORDER BY created_round, created_time, id LIMIT $3"
            );
            client
                .query(&sql, &[&user.tenant, &user.user, &sql_count(limit)])
                .map_err(pg_err("list jobs"))?
                .iter()
                .map(read_job)
                .collect()
        })
    }
}

impl KeyRead for PostgresStore {
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>> {
        self.with_client(|client| load_key(client, "hash = $1", &hash))
    }

    fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.with_client(all_keys)
    }
}

impl VectorRead for PostgresStore {
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>> {
        let rows = self.with_client(|client| {
            client
                .query(
                    "SELECT v.memory_id, v.dim, v.data FROM vectors v JOIN memories m ON m.id = v.memory_id \
                     WHERE m.tenant = $1 AND m.user_id = $2 AND m.active AND v.model = $3 \
                     ORDER BY m.created_round, m.created_time, m.id",
                    &[&user.tenant, &user.user, &model],
                )
                .map_err(pg_err("read vectors"))
        })?;
        rows.iter()
            .map(|row| {
                const OP: &str = "read vectors";
                let id = MemoryId(get(row, 0, OP)?);
                let dim: i32 = get(row, 1, OP)?;
                let data: &[u8] = get(row, 2, OP)?;
                Ok(VectorRow {
                    memory_id: id,
                    model: model.to_string(),
                    vector: decode_vector(data, dim, &format!("vector of memory {id}"))?,
                })
            })
            .collect()
    }

    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>> {
        self.unembedded_ids(user, model, limit)
    }

    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>> {
        self.model_counts()
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        match self.vector_index {
            Ok(_) => Some(self),
            Err(_) => None,
        }
    }
}

impl StoreRead for PostgresStore {
    fn info(&self) -> StoreInfo {
        self.describe()
    }
}
