//! The vector space the database is bound to (`mnemos_meta`'s `vector_space` row), and the
//! vector queries a move into another space needs.

use mnemos_core::{
    check_bind, sort_model_counts, BindingRead, BindingWrite, MemoryId, StoreResult, UserKey,
};
use postgres::GenericClient;

use crate::codec::{get, pg_err};
use crate::{PostgresStore, WriteScope};

/// The `mnemos_meta` key of the binding.
const KEY: &str = "vector_space";

fn read(client: &mut impl GenericClient) -> StoreResult<Option<String>> {
    let row = client
        .query_opt("SELECT value FROM mnemos_meta WHERE key = $1", &[&KEY])
        .map_err(pg_err("read binding"))?;
    row.map(|r| get(&r, 0, "read binding")).transpose()
}

impl BindingRead for PostgresStore {
    fn binding(&self) -> StoreResult<Option<String>> {
        self.with_client(read)
    }
}

impl BindingWrite for PostgresStore {
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()> {
        // The binding's advisory lock orders binds, so the read below is still true at commit.
        self.write_tx("bind", WriteScope::Binding, |tx| {
            check_bind(model, expected, read(tx)?.as_deref())?;
            tx.execute(
                "INSERT INTO mnemos_meta (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&KEY, &model],
            )
            .map_err(pg_err("bind"))?;
            Ok(())
        })
    }
}

impl PostgresStore {
    /// See `VectorRead::unembedded`.
    pub(crate) fn unembedded_ids(
        &self,
        user: &UserKey,
        model: &str,
        limit: usize,
    ) -> StoreResult<Vec<MemoryId>> {
        const OP: &str = "list memories without vectors";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.with_client(|client| {
            client
                .query(
                    "SELECT m.id FROM memories m WHERE m.tenant = $1 AND m.user_id = $2 \
                     AND m.active AND NOT EXISTS (SELECT 1 FROM vectors v \
                     WHERE v.memory_id = m.id AND v.model = $3) \
                     ORDER BY m.created_round, m.created_time, m.id LIMIT $4",
                    &[&user.tenant, &user.user, &model, &limit],
                )
                .map_err(pg_err(OP))
        })?;
        rows.iter()
            .map(|row| Ok(MemoryId(get(row, 0, OP)?)))
            .collect()
    }

    /// See `VectorRead::vector_models`.
    pub(crate) fn model_counts(&self) -> StoreResult<Vec<(String, u64)>> {
        const OP: &str = "count vectors by model";
        let rows = self.with_client(|client| {
            client
                .query("SELECT model, count(*) FROM vectors GROUP BY model", &[])
                .map_err(pg_err(OP))
        })?;
        let counts = rows
            .iter()
            .map(|row| {
                let n: i64 = get(row, 1, OP)?;
                Ok((get(row, 0, OP)?, u64::try_from(n).unwrap_or(0)))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(sort_model_counts(counts))
    }

    /// See `VectorWrite::retain_vectors`; the windows of deleted vectors go with them.
    pub(crate) fn retain_model(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        self.write_tx("retain vectors", WriteScope::User(user), |tx| {
            tx.execute(
                "DELETE FROM vectors WHERE model <> $3 AND memory_id IN \
                 (SELECT id FROM memories WHERE tenant = $1 AND user_id = $2)",
                &[&user.tenant, &user.user, &model],
            )
            .map_err(pg_err("retain vectors"))
        })
    }
}
