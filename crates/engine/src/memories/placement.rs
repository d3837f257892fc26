//! Where dense search runs: in process over vectors held in memory, or in the store's own
//! vector index ([`mnemos_core::VectorSearch`]), as `[retrieval] vectors` and the store allow.

use mnemos_core::retrieval::VectorPlacement;
use mnemos_core::{CatchUp, Embedder, Error, Result, Store};

use super::state::{DenseSearch, Memories};

/// Decide where dense search runs for `store` under `placement`, and make the embedder's
/// vectors searchable in the store when it is there.
pub(super) fn choose(
    store: &dyn Store,
    embedder: &dyn Embedder,
    placement: VectorPlacement,
) -> Result<DenseSearch> {
    let info = store.info();
    let (search, index) = match (store.vector_search(), info.vector_search) {
        (Some(search), Ok(index)) => (search, index),
        (_, Err(reason)) if placement == VectorPlacement::Store => {
            return Err(Error::invalid(format!(
                "retrieval.vectors = \"store\" needs a store with a vector index; {} has none: \
                 {reason}",
                info.location
            )))
        }
        (_, Err(reason)) => return Ok(DenseSearch::InProcess { why: reason }),
        (None, Ok(_)) => {
            return Ok(DenseSearch::InProcess {
                why: "the store does not offer its vector index".to_string(),
            })
        }
    };
    if placement == VectorPlacement::InProcess {
        return Ok(DenseSearch::InProcess {
            why: format!("retrieval.vectors = \"in_process\" (the store offers {index})"),
        });
    }
    search.prepare(embedder.id(), embedder.dimension())?;
    Ok(DenseSearch::Store { index })
}

impl Memories {
    /// Move up to `max_windows` of this embedder's vectors into the store's index when dense
    /// search runs there and the store defers indexing (see [`VectorSearch::catch_up`]).
    /// `Ok(None)`: dense search runs in process, so there is no index to catch up.
    ///
    /// [`VectorSearch::catch_up`]: mnemos_core::VectorSearch::catch_up
    pub fn catch_up_vectors(&self, max_windows: usize) -> Result<Option<CatchUp>> {
        let Some(search) = self.store_search() else {
            return Ok(None);
        };
        Ok(Some(search.catch_up(self.embedder.id(), max_windows)?))
    }
}
