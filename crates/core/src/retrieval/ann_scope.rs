//! What a user's [`ScopeIndex`] shows of its approximate dense index ([`super::ann`]), apart
//! from `ann` itself so that the index's parts do not import the module that gathers them.

use super::ann::{AnnPhase, AnnStatus};
use super::ScopeIndex;
use crate::model::MemoryId;

/// The approximate index as a user's [`ScopeIndex`] shows it.
impl ScopeIndex {
    /// Where the user's approximate dense index stands.
    pub fn ann_status(&self) -> AnnStatus {
        let status = self.dense.ann_status();
        if self.external_vectors {
            return AnnStatus {
                phase: AnnPhase::Off,
                ..status
            };
        }
        status
    }

    /// Start building the approximate dense index now if the user is due one (see
    /// [`AnnConfig::min_vectors`]) rather than on the next search; whether it started.
    pub fn start_ann_build(&self) -> bool {
        self.dense.start_ann_build()
    }

    /// The `n` indexed memories nearest to `query` by the in-process dense search the
    /// searches take (approximate once built), best first by cosine, equal ones by id.
    pub fn dense_nearest(&self, query: &[f32], n: usize) -> Vec<(MemoryId, f32)> {
        self.ranked(self.dense.nearest(query, &|s| self.holds(s), n), n)
    }

    /// [`dense_nearest`](Self::dense_nearest) by the exact scan searches take below the
    /// threshold (the coded one), for comparisons.
    pub fn dense_nearest_exact(&self, query: &[f32], n: usize) -> Vec<(MemoryId, f32)> {
        let found = self
            .dense
            .top_exact(query, &|s| self.holds(s), n, |s| self.id_of(s));
        self.ranked(found, n)
    }

    fn holds(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_some_and(|s| s.live)
    }

    fn ranked(&self, found: Vec<(u32, f32)>, n: usize) -> Vec<(MemoryId, f32)> {
        let mut out: Vec<(MemoryId, f32)> = found
            .into_iter()
            .filter_map(|(slot, score)| Some((self.slots.get(slot as usize)?.id, score)))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(n);
        out
    }
}
