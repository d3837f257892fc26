//! Memory chains read from the store: which categories a node belongs to, the chains in time
//! order, and the category registry that new categories are resolved against.
//!
//! Nothing here is stored apart from the nodes themselves: a node's categories are in its
//! metadata ([`CATEGORIES_KEY`]), a chain is the current nodes of one category ordered by the
//! moment of the dialogue they summarize, and a node's neighbours are its places in those
//! orders. So inserting a node never rewrites its neighbours, and a replayed job sees the same
//! chains.

use std::collections::BTreeMap;

use mnemos_core::embed::cosine;
use mnemos_core::{Memory, MemoryKind, Metadata};

/// Metadata key: the node's categories, one per line (the first is its kind's category).
pub const CATEGORIES_KEY: &str = "m4_categories";
/// Metadata key: the session a node was built from.
pub const SESSION_KEY: &str = "m4_session";
/// Metadata key on a stale node: the node that superseded it.
pub const SUPERSEDED_BY_KEY: &str = "m4_superseded_by";
/// Metadata key on a calibrated node: the nodes it merged (ids, comma-separated).
pub const CALIBRATED_FROM_KEY: &str = "m4_calibrated_from";

/// The categories a node belongs to, in the order it joined them.
pub fn categories_of(node: &Memory) -> Vec<String> {
    let listed: Vec<String> = node
        .metadata
        .get(CATEGORIES_KEY)
        .map(|s| {
            s.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    match &node.kind {
        MemoryKind::ChainNode { category } => vec![category.clone()],
        _ => Vec::new(),
    }
}

/// Write `categories` into a node's metadata.
pub fn set_categories(metadata: &mut Metadata, categories: &[String]) {
    metadata.insert(CATEGORIES_KEY.to_string(), categories.join("\n"));
}

/// A node still current: active and not superseded.
pub fn is_current(node: &Memory) -> bool {
    node.is_active() && node.valid_to.is_none()
}

/// The chains over a set of nodes: category → node indexes in time order.
#[derive(Debug, Default)]
pub struct Chains {
    pub nodes: Vec<Memory>,
    pub by_category: BTreeMap<String, Vec<usize>>,
}

impl Chains {
    /// Chains of the current nodes among `nodes`.
    pub fn of(nodes: Vec<Memory>) -> Chains {
        let mut nodes: Vec<Memory> = nodes.into_iter().filter(is_current).collect();
        nodes.sort_by(|a, b| {
            (a.created.time, a.created.round, a.id).cmp(&(b.created.time, b.created.round, b.id))
        });
        let mut by_category: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, node) in nodes.iter().enumerate() {
            for category in categories_of(node) {
                by_category.entry(category).or_default().push(i);
            }
        }
        Chains { nodes, by_category }
    }

    /// The position of node `index` in `category`'s chain.
    pub fn position(&self, category: &str, index: usize) -> Option<usize> {
        self.by_category
            .get(category)
            .and_then(|chain| chain.iter().position(|&i| i == index))
    }

    /// Nodes in more than one chain: where the chains form a graph.
    pub fn shared(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| categories_of(&self.nodes[i]).len() > 1)
    }
}

/// Resolve a new category against the registry: every registered label whose cosine with it is
/// at least `gamma`, most similar first; none → the new label itself (a new chain).
pub fn resolve_category(
    label: &str,
    vector: &[f32],
    registry: &[(String, Vec<f32>)],
    gamma: f32,
) -> Vec<String> {
    let mut matches: Vec<(f64, &str)> = registry
        .iter()
        .map(|(l, v)| (cosine(vector, v), l.as_str()))
        .filter(|(c, _)| *c >= f64::from(gamma))
        .collect();
    matches.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    if matches.is_empty() {
        return vec![label.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    for (_, l) in matches {
        if !out.iter().any(|o| o == l) {
            out.push(l.to_string());
        }
    }
    out
}

/// Vectors of category labels, kept across session jobs: the registry is every current node's
/// categories, and embedding all of them again at each session's close would grow with the
/// user's history. Keyed by embedder id and label; bounded, cleared whole when full (labels
/// recur, so the working set refills from the next few sessions).
#[derive(Debug, Default)]
pub struct LabelVectors {
    vectors: std::sync::Mutex<std::collections::HashMap<(String, String), Vec<f32>>>,
}

/// Labels whose vectors [`LabelVectors`] keeps at most.
pub const LABEL_VECTORS: usize = 20_000;

impl LabelVectors {
    /// The vectors of `labels` in order, embedding only those not kept yet.
    pub fn get(
        &self,
        embedder: &dyn mnemos_core::Embedder,
        labels: &[&str],
    ) -> Result<Vec<Vec<f32>>, mnemos_core::EmbedError> {
        use mnemos_core::EmbedderExt;
        let id = embedder.id().to_string();
        let missing: Vec<&str> = {
            let kept = self.lock();
            let mut missing: Vec<&str> = labels
                .iter()
                .copied()
                .filter(|l| !kept.contains_key(&(id.clone(), (*l).to_string())))
                .collect();
            missing.sort_unstable();
            missing.dedup();
            missing
        };
        let fresh = if missing.is_empty() {
            Vec::new()
        } else {
            embedder.embed_all(&missing)?
        };
        let mut kept = self.lock();
        if kept.len() + fresh.len() > LABEL_VECTORS {
            kept.clear();
        }
        for (label, vector) in missing.iter().zip(fresh) {
            kept.insert((id.clone(), (*label).to_string()), vector);
        }
        let dim = embedder.dimension();
        Ok(labels
            .iter()
            .map(|l| {
                kept.get(&(id.clone(), (*l).to_string()))
                    .cloned()
                    .unwrap_or_else(|| vec![0.0; dim])
            })
            .collect())
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<(String, String), Vec<f32>>> {
        // A poisoned lock only means another job panicked mid-insert; the map is still valid.
        self.vectors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Embeds each text as its length; counts the texts it was asked for.
    struct Counting(AtomicUsize);

    impl mnemos_core::Embedder for Counting {
        fn id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            1
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, mnemos_core::EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    #[test]
    fn label_vectors_embed_each_label_once() {
        let embedder = Counting(AtomicUsize::new(0));
        let labels = LabelVectors::default();
        let first = labels
            .get(&embedder, &["cello", "garden", "cello"])
            .unwrap();
        assert_eq!(first, vec![vec![5.0], vec![6.0], vec![5.0]]);
        assert_eq!(embedder.0.load(Ordering::SeqCst), 2);
        let second = labels
            .get(&embedder, &["garden", "cello", "travel"])
            .unwrap();
        assert_eq!(second, vec![vec![6.0], vec![5.0], vec![6.0]]);
        assert_eq!(embedder.0.load(Ordering::SeqCst), 3, "only the new label");
    }
}
