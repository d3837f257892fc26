//! An in-process BM25 inverted index over one user's memories.
//!
//! Documents are dense slot numbers owned by the caller (`ScopeIndex`). Removal is exact: document
//! frequencies and collection length are updated, postings of removed slots are skipped at query
//! time and dropped when a posting list is next compacted.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// BM25 parameters (Okapi with Lucene's non-negative idf).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    /// b = 0.3 rather than the textbook 0.75: dialogue memories range from one-word turns to whole
    /// sessions, and strong length normalization buries the long ones (measured on LoCoMo and
    /// PerLTQA dev, see docs/results).
    fn default() -> Self {
        Self { k1: 1.2, b: 0.3 }
    }
}

#[derive(Default, Clone)]
struct Postings {
    /// (slot, term frequency), slots ascending.
    entries: Vec<(u32, u32)>,
    /// Live documents containing the term.
    df: u32,
    /// Entries whose slot was removed (compacted when they dominate).
    dead: u32,
}

/// Inverted index with exact incremental add/remove.
#[derive(Default, Clone)]
pub struct Bm25Index {
    params: Bm25Params,
    term_ids: HashMap<String, u32>,
    postings: Vec<Postings>,
    /// Per slot: distinct term ids (to undo on removal) and length in terms; `None` = no document.
    docs: Vec<Option<(Box<[u32]>, u32)>>,
    /// Per slot: length in terms (0: no document), apart from `docs` so that scoring reads
    /// four bytes per posting.
    lengths: Vec<u32>,
    live_docs: u32,
    total_len: u64,
}

impl Bm25Index {
    pub fn new(params: Bm25Params) -> Self {
        Self {
            params,
            ..Default::default()
        }
    }

    pub fn live_docs(&self) -> usize {
        self.live_docs as usize
    }

    pub fn vocabulary(&self) -> usize {
        self.term_ids.len()
    }

    /// Index `terms` under `slot` (replacing whatever the slot held).
    pub fn insert(&mut self, slot: u32, terms: &[String]) {
        self.remove(slot);
        let mut counts: HashMap<u32, u32> = HashMap::with_capacity(terms.len());
        for term in terms {
            let next = self.term_ids.len() as u32;
            let id = *self.term_ids.entry(term.clone()).or_insert(next);
            if id as usize == self.postings.len() {
                self.postings.push(Postings::default());
            }
            *counts.entry(id).or_insert(0) += 1;
        }
        let mut distinct: Vec<u32> = counts.keys().copied().collect();
        distinct.sort_unstable();
        for &id in &distinct {
            let list = &mut self.postings[id as usize];
            let tf = counts.get(&id).copied().unwrap_or(1);
            // Slots usually arrive in increasing order; keep the list sorted either way, and
            // overwrite a stale posting this slot left behind when it was last removed.
            match list.entries.last() {
                Some(&(last, _)) if last >= slot => {
                    let at = list.entries.partition_point(|&(s, _)| s < slot);
                    if list.entries.get(at).is_some_and(|&(s, _)| s == slot) {
                        list.entries[at].1 = tf;
                        list.dead = list.dead.saturating_sub(1);
                    } else {
                        list.entries.insert(at, (slot, tf));
                    }
                }
                _ => list.entries.push((slot, tf)),
            }
            list.df += 1;
        }
        let len = terms.len() as u32;
        let idx = slot as usize;
        if self.docs.len() <= idx {
            self.docs.resize(idx + 1, None);
            self.lengths.resize(idx + 1, 0);
        }
        self.docs[idx] = Some((distinct.into_boxed_slice(), len));
        self.lengths[idx] = len;
        self.live_docs += 1;
        self.total_len += u64::from(len);
    }

    /// Remove the document in `slot`, if any.
    pub fn remove(&mut self, slot: u32) {
        let Some(entry) = self.docs.get_mut(slot as usize) else {
            return;
        };
        let Some((distinct, len)) = entry.take() else {
            return;
        };
        if let Some(length) = self.lengths.get_mut(slot as usize) {
            *length = 0;
        }
        for &id in distinct.iter() {
            let list = &mut self.postings[id as usize];
            list.df = list.df.saturating_sub(1);
            list.dead += 1;
            if list.dead as usize * 2 > list.entries.len() {
                // Compact: drop postings whose slot no longer holds this term.
                let docs = &self.docs;
                list.entries.retain(|&(s, _)| {
                    docs.get(s as usize)
                        .and_then(|d| d.as_ref())
                        .is_some_and(|(terms, _)| terms.binary_search(&id).is_ok())
                });
                list.dead = 0;
            }
        }
        self.live_docs = self.live_docs.saturating_sub(1);
        self.total_len = self.total_len.saturating_sub(u64::from(len));
    }

    fn idf(&self, df: u32) -> f32 {
        let n = self.live_docs as f32;
        let df = df as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// The IDF of a term no live document holds: the highest any term can have.
    pub fn unseen_idf(&self) -> f32 {
        self.idf(0)
    }

    /// Score every live document matching at least one query term; `accept` filters slots.
    /// Returns (slot, score) pairs, unsorted. Repeated query terms count once.
    pub fn score(&self, query_terms: &[String], accept: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        let ids: Vec<u32> = query_terms
            .iter()
            .filter_map(|t| self.term_ids.get(t).copied())
            .collect();
        self.score_term_ids(ids, accept)
    }

    /// Score every live document against the terms of the document in `slot` that are not
    /// among `exclude` and occur in at most `max_df` documents ("more like this" through its
    /// rare words, minus what the query already asked for). Returns the slot's own score
    /// against those terms (the most any document can share with it, up to length
    /// normalization) and the other documents' unsorted (slot, score) pairs; `None` when the
    /// slot holds no document or no term is left.
    pub fn score_like(
        &self,
        slot: u32,
        exclude: &[String],
        max_df: u32,
        accept: &dyn Fn(u32) -> bool,
    ) -> Option<(f32, Vec<(u32, f32)>)> {
        let Some(Some((terms, _))) = self.docs.get(slot as usize) else {
            return None;
        };
        let excluded: Vec<u32> = exclude
            .iter()
            .filter_map(|t| self.term_ids.get(t).copied())
            .collect();
        let ids: Vec<u32> = terms
            .iter()
            .copied()
            .filter(|id| !excluded.contains(id) && self.postings[*id as usize].df <= max_df)
            .collect();
        if ids.is_empty() {
            return None;
        }
        let scores = self.score_term_ids(ids, &|s| s == slot || accept(s));
        let own = scores.iter().find(|(s, _)| *s == slot)?.1;
        let others = scores
            .into_iter()
            .filter(|(s, _)| *s != slot && accept(*s))
            .collect();
        Some((own, others))
    }

    /// The query's distinct indexed terms as (term id, IDF, rare), where rare means in at
    /// most `rare_df` live documents; terms no document holds are left out.
    pub fn query_terms(&self, query_terms: &[String], rare_df: u32) -> Vec<(u32, f32, bool)> {
        let mut out: Vec<(u32, f32, bool)> = Vec::with_capacity(query_terms.len());
        for term in query_terms {
            let Some(&id) = self.term_ids.get(term) else {
                continue;
            };
            let df = self.postings[id as usize].df;
            if df == 0 || out.iter().any(|(seen, _, _)| *seen == id) {
                continue;
            }
            out.push((id, self.idf(df), df <= rare_df));
        }
        out
    }

    /// The id of `term`, if any document ever held it.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        self.term_ids.get(term).copied()
    }

    /// Does the document in `slot` hold the term with id `term`?
    pub fn holds(&self, slot: u32, term: u32) -> bool {
        match self.docs.get(slot as usize) {
            Some(Some((terms, _))) => terms.binary_search(&term).is_ok(),
            _ => false,
        }
    }

    /// The length in terms of the document in `slot` (0 when there is none).
    pub fn doc_len(&self, slot: u32) -> u32 {
        match self.docs.get(slot as usize) {
            Some(Some((_, len))) => *len,
            _ => 0,
        }
    }

    fn score_term_ids(&self, mut ids: Vec<u32>, accept: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        if self.live_docs == 0 {
            return Vec::new();
        }
        ids.sort_unstable();
        ids.dedup();
        let avg_len = (self.total_len as f32 / self.live_docs as f32).max(1.0);
        let Bm25Params { k1, b } = self.params;
        with_scratch(self.docs.len(), |scratch| {
            for &id in &ids {
                let list = &self.postings[id as usize];
                if list.df == 0 {
                    continue;
                }
                let idf = self.idf(list.df);
                for &(slot, tf) in &list.entries {
                    // A removed document's postings stay until the list is compacted.
                    if list.dead > 0 && !self.holds(slot, id) {
                        continue;
                    }
                    let len = self.lengths.get(slot as usize).copied().unwrap_or(0);
                    let tf = tf as f32;
                    let norm = k1 * (1.0 - b + b * (len as f32) / avg_len);
                    scratch.add(slot, idf * tf * (k1 + 1.0) / (tf + norm));
                }
            }
            // The filter runs once per matching document, not once per posting.
            scratch.drain(accept)
        })
    }
}

/// Per-slot score sums of one query, reused from query to query on the same thread so that a
/// search allocates nothing in proportion to the user's memories.
#[derive(Default)]
struct Scratch {
    /// Slot-indexed sums; 0 where nothing was added (every addition is positive).
    sums: Vec<f32>,
    /// The slots with a sum, in first-touched order.
    touched: Vec<u32>,
}

impl Scratch {
    fn add(&mut self, slot: u32, score: f32) {
        let sum = &mut self.sums[slot as usize];
        if *sum == 0.0 {
            self.touched.push(slot);
        }
        *sum += score;
    }

    /// The (slot, sum) pairs of the slots `accept` takes, leaving the scratch empty for the
    /// next query.
    fn drain(&mut self, accept: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        let sums = &mut self.sums;
        self.touched
            .drain(..)
            .map(|slot| (slot, std::mem::take(&mut sums[slot as usize])))
            .filter(|&(slot, _)| accept(slot))
            .collect()
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Run `score` with this thread's scratch, sized for `slots` slots (a fresh one if the
/// thread's is in use).
fn with_scratch<T>(slots: usize, score: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            if scratch.sums.len() < slots {
                scratch.sums.resize(slots, 0.0);
            }
            score(&mut scratch)
        }
        Err(_) => score(&mut Scratch {
            sums: vec![0.0; slots],
            touched: Vec::new(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn more_like_this_scores_by_the_documents_own_terms() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.insert(0, &terms("acme summit venue shanghai"));
        idx.insert(1, &terms("acme summit starts monday"));
        idx.insert(2, &terms("the venue was nice"));
        idx.insert(3, &terms("unrelated words here"));
        let all = |_: u32| true;
        let (own, mut hits) = idx.score_like(0, &[], 10, &all).unwrap();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1));
        let order: Vec<u32> = hits.iter().map(|h| h.0).collect();
        assert_eq!(
            order,
            vec![1, 2],
            "two shared terms, then one; never itself"
        );
        assert!(hits.iter().all(|h| h.1 < own));
        // Terms the query already has are left out: only "acme summit" (and "shanghai") remain.
        let (_, hits) = idx.score_like(0, &terms("venue"), 10, &all).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1]);
        assert!(idx
            .score_like(0, &terms("acme summit venue shanghai"), 10, &all)
            .is_none());
        // Words in more than max_df documents do not bridge: "venue" (2) is left out at 1.
        let (_, hits) = idx
            .score_like(0, &terms("acme summit shanghai"), 1, &all)
            .map_or((0.0, vec![]), |x| x);
        assert!(hits.is_empty());
        assert!(idx.score_like(9, &[], 10, &all).is_none());
        idx.remove(1);
        assert!(idx.score_like(1, &[], 10, &all).is_none());
    }

    #[test]
    fn rarer_terms_score_higher_and_removal_is_exact() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.insert(0, &terms("cat sat mat"));
        idx.insert(1, &terms("dog sat log"));
        idx.insert(2, &terms("cat cat dog"));
        let all = |_: u32| true;
        let mut hits = idx.score(&terms("cat"), &all);
        hits.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 0]);

        idx.remove(2);
        let hits = idx.score(&terms("cat"), &all);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 0);
        // Removing and re-adding restores the same scores.
        let before = idx.score(&terms("dog sat"), &all);
        idx.insert(2, &terms("cat cat dog"));
        idx.remove(2);
        let mut after = idx.score(&terms("dog sat"), &all);
        let mut before = before;
        before.sort_by_key(|h| h.0);
        after.sort_by_key(|h| h.0);
        assert_eq!(before, after);
    }

    #[test]
    fn filter_excludes_slots() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.insert(0, &terms("apple"));
        idx.insert(1, &terms("apple"));
        let hits = idx.score(&terms("apple"), &|s| s == 1);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 1);
    }
}
