//! The approximate dense index of a user with many vectors (`[retrieval.ann]`), as the engine
//! shows it: its state, and nearest neighbours by the path searches take, for measuring its
//! recall against the exact scan.

use mnemos_core::retrieval::{AnnPhase, AnnStatus};
use mnemos_core::{MemoryId, Result, UserKey};

use super::state::Memories;

impl Memories {
    /// Where `user`'s approximate dense index stands (the user's index is built first if
    /// needed). `Off` when dense search runs in the store.
    pub fn ann_status(&self, user: &UserKey) -> Result<AnnStatus> {
        let slot = self.built_slot(user)?;
        let guard = slot.read();
        Ok(match guard.index.as_ref() {
            Some(index) if !self.dense.in_store() => index.ann_status(),
            _ => AnnStatus {
                phase: AnnPhase::Off,
                nodes: 0,
                build_seconds: None,
                searches: 0,
            },
        })
    }

    /// The `n` memories of `user` nearest to `vector` by in-process dense search: the path
    /// searches take (approximate once built), or the exact scan. Empty when dense search runs
    /// in the store.
    pub fn dense_nearest(
        &self,
        user: &UserKey,
        vector: &[f32],
        n: usize,
        exact: bool,
    ) -> Result<Vec<(MemoryId, f32)>> {
        let slot = self.built_slot(user)?;
        let guard = slot.read();
        Ok(match guard.index.as_ref() {
            Some(index) if exact => index.dense_nearest_exact(vector, n),
            Some(index) => index.dense_nearest(vector, n),
            None => Vec::new(),
        })
    }
}
