//! [`StoreProxy`]: a store in front of another that sees every call.
//!
//! Wrappers that only watch or intercept calls (fault injection, a store kept alive with a
//! temporary directory) implement two hooks here instead of forwarding every capability method
//! by hand: the forwarding is written once, below.

use std::time::Duration;

use crate::export::UserExport;
use crate::model::{
    Access, ApiKey, ApiKeyId, HistoryEntry, Job, JobId, Memory, MemoryId, Timestamp, Turn, TurnId,
    UserKey,
};
use crate::store::{
    BindingRead, BindingWrite, JobRead, JobWrite, KeyRead, KeyWrite, MemoryFilter, MemoryRead,
    MemoryWrite, Page, Paged, PurgeReport, Store, StoreRead, StoreResult, VectorRead, VectorRow,
    VectorWrite, WriteBatch,
};
use crate::store_vectors::{StoreInfo, VectorSearch};

/// A store that forwards every call to the store it wraps, through [`around_read`] or
/// [`around_write`] named by the method (`"write"`, `"list"`, …), and is a [`Store`] itself.
///
/// The defaults call the wrapped store unchanged, so a proxy that overrides nothing is exactly
/// its target (it passes the conformance suite whenever the target does).
///
/// [`around_read`]: StoreProxy::around_read
/// [`around_write`]: StoreProxy::around_write
pub trait StoreProxy: Send + Sync {
    type Target: Store + ?Sized;

    /// The wrapped store.
    fn target(&self) -> &Self::Target;

    /// Run one reading call `op` of the wrapped store.
    fn around_read<T>(
        &self,
        _op: &'static str,
        call: impl FnOnce(&Self::Target) -> StoreResult<T>,
    ) -> StoreResult<T> {
        call(self.target())
    }

    /// Run one writing call `op` of the wrapped store.
    fn around_write<T>(
        &self,
        _op: &'static str,
        call: impl FnOnce(&Self::Target) -> StoreResult<T>,
    ) -> StoreResult<T> {
        call(self.target())
    }

    /// The nearest-neighbour search to offer (the wrapped store's, unless the proxy offers one
    /// that goes through it).
    fn proxied_vector_search(&self) -> Option<&dyn VectorSearch> {
        self.target().vector_search()
    }
}

impl<P: StoreProxy> MemoryRead for P {
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>> {
        self.around_read("turn", |s| s.turn(user, id))
    }

    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>> {
        self.around_read("turns", |s| s.turns(user, page))
    }

    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>> {
        self.around_read("turns_by_keys", |s| s.turns_by_keys(user, keys))
    }

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>> {
        self.around_read("memory", |s| s.memory(user, id))
    }

    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>> {
        self.around_read("memories", |s| s.memories(user, ids))
    }

    fn list(
        &self,
        user: &UserKey,
        filter: &MemoryFilter,
        page: Page,
    ) -> StoreResult<Paged<Memory>> {
        self.around_read("list", |s| s.list(user, filter, page))
    }

    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>> {
        self.around_read("history", |s| s.history(user, id))
    }

    fn users(&self) -> StoreResult<Vec<UserKey>> {
        self.around_read("users", |s| s.users())
    }

    fn data_version(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.around_read("data_version", |s| s.data_version(user))
    }

    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>> {
        self.around_read("last_round", |s| s.last_round(user))
    }

    fn export_user(&self, user: &UserKey) -> StoreResult<UserExport> {
        self.around_read("export_user", |s| s.export_user(user))
    }
}

impl<P: StoreProxy> JobRead for P {
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>> {
        self.around_read("job", |s| s.job(user, id))
    }

    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>> {
        self.around_read("pending_jobs", |s| s.pending_jobs(user, limit))
    }
}

impl<P: StoreProxy> KeyRead for P {
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>> {
        self.around_read("api_key_by_hash", |s| s.api_key_by_hash(hash))
    }

    fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.around_read("api_keys", |s| s.api_keys())
    }
}

impl<P: StoreProxy> VectorRead for P {
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>> {
        self.around_read("vectors", |s| s.vectors(user, model))
    }

    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>> {
        self.around_read("unembedded", |s| s.unembedded(user, model, limit))
    }

    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>> {
        self.around_read("vector_models", |s| s.vector_models())
    }

    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        self.proxied_vector_search()
    }
}

impl<P: StoreProxy> BindingRead for P {
    fn binding(&self) -> StoreResult<Option<String>> {
        self.around_read("binding", |s| s.binding())
    }
}

impl<P: StoreProxy> StoreRead for P {
    fn info(&self) -> StoreInfo {
        self.target().info()
    }
}

impl<P: StoreProxy> MemoryWrite for P {
    fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        self.around_write("write", |s| s.write(batch))
    }

    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()> {
        self.around_write("record_access", |s| s.record_access(user, accesses))
    }

    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport> {
        self.around_write("purge_user", |s| s.purge_user(user))
    }

    fn import_user(&self, export: &UserExport) -> StoreResult<()> {
        self.around_write("import_user", |s| s.import_user(export))
    }
}

impl<P: StoreProxy> JobWrite for P {
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>> {
        self.around_write("record_job_failure", |s| {
            s.record_job_failure(user, id, error)
        })
    }

    fn lease_jobs(&self, user: &UserKey, holder: &str, lease: Duration) -> StoreResult<bool> {
        self.around_write("lease_jobs", |s| s.lease_jobs(user, holder, lease))
    }

    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()> {
        self.around_write("release_jobs", |s| s.release_jobs(user, holder))
    }
}

impl<P: StoreProxy> KeyWrite for P {
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        self.around_write("put_api_key", |s| s.put_api_key(key))
    }

    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>> {
        self.around_write("revoke_api_key", |s| s.revoke_api_key(id, at))
    }
}

impl<P: StoreProxy> VectorWrite for P {
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()> {
        self.around_write("put_vectors", |s| s.put_vectors(user, rows))
    }

    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64> {
        self.around_write("retain_vectors", |s| s.retain_vectors(user, model))
    }
}

impl<P: StoreProxy> BindingWrite for P {
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()> {
        self.around_write("bind", |s| s.bind(model, expected))
    }
}
