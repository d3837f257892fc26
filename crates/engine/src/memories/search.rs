//! Search: candidates from both indexes of one user, fused, re-ranked, cut to top-k under a
//! token budget, each hit explained.

use std::collections::HashSet;
use std::time::Instant;

use serde::Serialize;

use mnemos_core::retrieval::memory_type::is_of_type;
use mnemos_core::retrieval::{
    is_cjk_query, rerank_by_type, select_within_budget, validate_min_relevance, Candidate,
    CandidateQuery, Hit, LearnedRanker, RetrievalConfig, RetrieverKind, ScopeIndex, ScoreBreakdown,
    SearchFilter, SecondHop, TypeSearch,
};
use mnemos_core::{
    validate_text, Access, Deadline, Embedder, EmbedderExt, Error, Memory, MemoryId,
    MemoryModelExt, Moment, Result, Timestamp, UserKey, Validity,
};

use super::state::{Memories, ScopeSlot};

pub use mnemos_core::retrieval::SearchTimings;
use mnemos_core::retrieval::{
    current_first, is_hit, merge_by_rank, stating_turn, without_repeated_facts, FactRows as Rows,
};
pub use mnemos_core::retrieval::{
    question_parts, validate_query, MAX_QUERY_CHARS, MAX_QUERY_PARTS,
};

/// A search over one user's memories.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchRequest {
    pub user: UserKey,
    pub query: String,
    /// Defaults to the configured `top_k`.
    pub top_k: Option<usize>,
    /// Approximate LLM tokens the returned memories may use in total.
    pub token_budget: Option<usize>,
    pub retriever: RetrieverKind,
    pub filter: SearchFilter,
    /// Append this retrieval to each returned memory's access log.
    pub record_access: bool,
    /// Run a second retrieval hop from the first hop's best candidates. On by default: it
    /// never displaces the first hop's best `keep` hits, and it stands aside where the learned
    /// ranker runs (dialogue), so it only fills the rest of a list of records or notes.
    pub second_hop: Option<SecondHop>,
    /// Search each question of a compound query on its own (see [`question_parts`]). On by
    /// default: a query that asks one thing is searched whole either way.
    pub split_questions: bool,
    /// Re-rank by memory type (PerLTQA; the query classified by the engine's memory model) or
    /// keep one type only, after the engine's own re-rankers (which include the configured
    /// `retrieval.memory_type` re-rank, if any).
    pub memory_type: Option<TypeSearch>,
    /// Rank by likeness to the query alone: no dialogue context, speaker match or date match
    /// (see `RetrievalConfig::context`, `::speaker` and `::date`). For mechanisms that look for statements
    /// like a given one, where the turns around a match are not what they want.
    pub likeness_only: bool,
    /// Also return memories that are no longer current (superseded by a later statement),
    /// ranked after every current one and marked by their `valid_to` / `superseded_by`. Off by
    /// default: what a search hands back is true now.
    pub include_superseded: bool,
    /// Answer about the past: only memories valid at this moment (valid time), superseded or
    /// not. Overrides `include_superseded`.
    pub as_of: Option<Timestamp>,
    /// Drop hits whose relevance (the calibrated probability that they are evidence for the
    /// query, in [0, 1]) is below this, before `top_k`. `None`: the public search
    /// (`Engine::search`) applies the configured `retrieval.min_relevance`, a mechanism's
    /// internal search applies no floor.
    pub min_relevance: Option<f32>,
    /// When the search must give up (`Error::TimedOut`): checked between its stages, the
    /// chunks of the query's embedding and the parts of a split query.
    pub deadline: Deadline,
}

impl SearchRequest {
    pub fn new(user: UserKey, query: impl Into<String>) -> Self {
        Self {
            user,
            query: query.into(),
            top_k: None,
            token_budget: None,
            retriever: RetrieverKind::Hybrid,
            filter: SearchFilter::default(),
            record_access: false,
            second_hop: Some(SecondHop::default()),
            split_questions: true,
            memory_type: None,
            likeness_only: false,
            include_superseded: false,
            as_of: None,
            min_relevance: None,
            deadline: Deadline::NONE,
        }
    }

    /// Which memories by valid time this request reads.
    pub fn validity(&self) -> Validity {
        match (self.as_of, self.include_superseded) {
            (Some(at), _) => Validity::At(at),
            (None, true) => Validity::Any,
            (None, false) => Validity::Current,
        }
    }
}

/// `texts`' vectors, a chunk of `max_batch` at a time, stopping between chunks once
/// `deadline` passes: a long query's embedding is the costliest part of a search.
fn embed_within(
    embedder: &dyn Embedder,
    texts: &[&str],
    deadline: Deadline,
) -> Result<Vec<Vec<f32>>> {
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(embedder.max_batch().max(1)) {
        deadline.check()?;
        vectors.extend(embedder.embed_all_queries(chunk)?);
    }
    Ok(vectors)
}

/// How many more of the store's nearest memories a filtered search asks for, since the
/// filter applies after the store answers.
const FILTERED_OVERFETCH: usize = 4;

/// The store's nearest memories to one query vector, with their cosine similarities.
type Nearest = Vec<(MemoryId, f32)>;

/// Which candidates a search keeps: those whose relevance is at least `floor`, until `need`
/// of them are kept (the rest would not be returned).
#[derive(Clone, Copy, Debug)]
struct Judge {
    floor: f32,
    need: usize,
}

/// What [`Memories::rank`] ranks: the request, its parts' texts and vectors, the store's
/// nearest memories for each (empty when dense search runs in process), and the judge.
#[derive(Clone, Copy)]
struct RankQuery<'a> {
    request: &'a SearchRequest,
    texts: &'a [&'a str],
    vectors: &'a [Option<Vec<f32>>],
    nearest: &'a [Option<Nearest>],
    judge: Judge,
}

/// Nanoseconds since `started`.
fn nanos_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchResults {
    pub hits: Vec<Hit>,
    /// The analyzed query terms BM25 matched against (of every part, when the query was split).
    pub query_terms: Vec<String>,
    /// The parts the query was split into and searched separately (empty: searched whole).
    pub query_parts: Vec<String>,
    /// Distinct candidates after fusion, before re-ranking and the budget.
    pub candidates: usize,
    pub timings: SearchTimings,
}

impl Memories {
    /// Ranked memories of one user for a query, each with its score breakdown; only the
    /// request's own relevance floor applies (mechanisms' internal searches).
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResults> {
        self.search_above(request, request.min_relevance.unwrap_or(0.0))
    }

    /// [`search`](Self::search) with the configured `retrieval.min_relevance` as the floor
    /// of a request that names none (the public search).
    pub fn search_with_default_floor(&self, request: &SearchRequest) -> Result<SearchResults> {
        let floor = request.min_relevance.unwrap_or(self.config.min_relevance);
        self.search_above(request, floor)
    }

    /// The search, keeping only hits whose relevance is at least `floor`.
    fn search_above(&self, request: &SearchRequest, floor: f32) -> Result<SearchResults> {
        let top_k = self.check_search(request)?;
        let mut effective = request.clone();
        effective.filter.validity = request.validity();
        let request = &effective;
        let mut timings = SearchTimings::default();
        let started = Instant::now();
        let slot = self.built_slot(&request.user)?;
        timings.index_ns = nanos_since(started);
        let started = Instant::now();
        let parts = if request.split_questions {
            question_parts(&request.query)
        } else {
            Vec::new()
        };
        timings.analyze_ns = nanos_since(started);
        let texts: Vec<&str> = if parts.is_empty() {
            vec![request.query.as_str()]
        } else {
            parts.iter().map(String::as_str).collect()
        };

        let started = Instant::now();
        let vectors = if request.retriever.uses_dense() {
            embed_within(self.embedder.as_ref(), &texts, request.deadline)?
                .into_iter()
                .map(Some)
                .collect()
        } else {
            vec![None; texts.len()]
        };
        timings.embed_us = started.elapsed().as_micros() as u64;
        request.deadline.check()?;

        let started = Instant::now();
        let nearest = self.store_nearest(request, &vectors)?;
        let judge = Judge {
            floor,
            // A little more than top_k: a fact whose stating turn is also a hit is dropped.
            need: if self.explains_all(request) {
                usize::MAX
            } else {
                top_k + top_k / 2 + 2
            },
        };
        let query = RankQuery {
            request,
            texts: &texts,
            vectors: &vectors,
            nearest: &nearest,
            judge,
        };
        let ranked = self.rank(&slot, &query, &mut timings)?;
        let (candidates, query_terms, candidates_count) = ranked;
        timings.rank_us = started.elapsed().as_micros() as u64;
        request.deadline.check()?;

        let started = Instant::now();
        let mut hits = self.explained_hits(request, candidates, top_k, &mut timings)?;
        timings.fetch_us = started.elapsed().as_micros() as u64;
        self.rerank(request, &mut hits, &mut timings)?;
        let started = Instant::now();
        if request.as_of.is_none() && request.include_superseded {
            current_first(&mut hits);
        }
        without_repeated_facts(&mut hits);
        let hits = select_within_budget(hits, top_k, request.token_budget);
        timings.select_ns = nanos_since(started);

        if request.record_access && !hits.is_empty() {
            self.record_access(&request.user, &hits)?;
        }
        Ok(SearchResults {
            hits,
            query_terms,
            query_parts: parts,
            candidates: candidates_count,
            timings,
        })
    }

    /// The engine's re-rankers, then the memory-type stage the request asks for.
    fn rerank(
        &self,
        request: &SearchRequest,
        hits: &mut Vec<Hit>,
        timings: &mut SearchTimings,
    ) -> Result<()> {
        let started = Instant::now();
        for reranker in &self.rerankers {
            reranker.rerank(&request.query, hits);
        }
        match request.memory_type {
            Some(TypeSearch::Rerank(params)) => {
                let model = self.model.as_ref().ok_or_else(|| {
                    Error::invalid(
                        "a memory-type re-rank needs a memory model; this engine has none",
                    )
                })?;
                let classify_started = Instant::now();
                let class = model.classify_query(&request.query)?;
                timings.classify_us = classify_started.elapsed().as_micros() as u64;
                rerank_by_type(&params, &class, hits);
            }
            Some(TypeSearch::Only(wanted)) => {
                hits.retain(|hit| is_of_type(&hit.memory, wanted));
            }
            None => {}
        }
        let elapsed = started.elapsed().as_micros() as u64;
        timings.rerank_us = elapsed.saturating_sub(timings.classify_us);
        Ok(())
    }

    /// Validate a request; returns its `top_k`.
    fn check_search(&self, request: &SearchRequest) -> Result<usize> {
        request.user.validate()?;
        validate_text("query", &request.query)?;
        if let Some(hop) = &request.second_hop {
            hop.validate()?;
        }
        if let Some(memory_type) = &request.memory_type {
            memory_type.validate()?;
        }
        if let Some(floor) = request.min_relevance {
            validate_min_relevance("min_relevance", floor)?;
        }
        let top_k = request.top_k.unwrap_or(self.config.top_k);
        if top_k == 0 || top_k > 10_000 {
            return Err(Error::invalid("top_k must be between 1 and 10000"));
        }
        Ok(top_k)
    }

    /// When the store runs dense search: its nearest memories for each query vector (more of
    /// them when a filter will drop some), else nothing.
    fn store_nearest(
        &self,
        request: &SearchRequest,
        vectors: &[Option<Vec<f32>>],
    ) -> Result<Vec<Option<Nearest>>> {
        let Some(search) = self.store_search() else {
            return Ok(Vec::new());
        };
        let filter = &request.filter;
        let filtered =
            !filter.kinds.is_empty() || filter.agent.is_some() || filter.session.is_some();
        let k = if filtered {
            self.config.candidates.saturating_mul(FILTERED_OVERFETCH)
        } else {
            self.config.candidates
        };
        let model = self.embedder.id();
        vectors
            .iter()
            .map(|vector| match vector {
                Some(v) => Ok(Some(search.nearest(&request.user, model, v, k)?)),
                None => Ok(None),
            })
            .collect()
    }

    /// Fused candidates of every query part (merged by rank when there are several), each
    /// judged for relevance (see [`Judge`]), the distinct analyzed terms of all parts, and how
    /// many distinct candidates fusion gave before the judging. `nearest`, when not empty,
    /// holds the store's dense answer for each part.
    fn rank(
        &self,
        slot: &ScopeSlot,
        query: &RankQuery<'_>,
        timings: &mut SearchTimings,
    ) -> Result<(Vec<Candidate>, Vec<String>, usize)> {
        let RankQuery {
            request,
            texts,
            vectors,
            nearest,
            judge,
        } = *query;
        let mut query_terms: Vec<String> = Vec::new();
        let mut lists: Vec<Vec<Candidate>> = Vec::with_capacity(texts.len());
        // Distinct fused candidates: one list's length, or the union of the parts' lists.
        let mut fused: HashSet<MemoryId> = HashSet::new();
        let mut fused_count = 0;
        let likeness_only;
        let config = if request.likeness_only {
            likeness_only = RetrievalConfig {
                context: 0.0,
                speaker: 0.0,
                date: 0.0,
                ranker: LearnedRanker::off(),
                ..self.config.clone()
            };
            &likeness_only
        } else {
            &self.config
        };
        let guard = slot.read();
        for (i, (text, vector)) in texts.iter().zip(vectors).enumerate() {
            request.deadline.check()?;
            let started = Instant::now();
            let terms = self.analyzer.terms(text);
            for term in &terms {
                if !query_terms.contains(term) {
                    query_terms.push(term.clone());
                }
            }
            timings.analyze_ns += nanos_since(started);
            let Some(index) = guard.index.as_ref() else {
                continue;
            };
            let part = CandidateQuery {
                config,
                retriever: request.retriever,
                terms: &terms,
                filter: &request.filter,
                second_hop: request.second_hop.as_ref(),
            };
            let list = match nearest.get(i) {
                Some(found) => index.candidates_scored_timed(
                    &part,
                    found.as_deref().unwrap_or_default(),
                    &mut timings.stages,
                ),
                None => index.candidates_timed(&part, vector.as_deref(), &mut timings.stages),
            };
            if texts.len() > 1 {
                fused.extend(list.iter().map(|c| c.id));
            } else {
                fused_count = list.len();
            }
            let started = Instant::now();
            lists.push(self.judged(index, &terms, list, judge));
            timings.relevance_ns += nanos_since(started);
        }
        let mut candidates = if lists.len() > 1 {
            merge_by_rank(lists)
        } else {
            lists.pop().unwrap_or_default()
        };
        if let Some(index) = guard.index.as_ref() {
            for candidate in candidates.iter_mut().filter(|c| c.lexical.is_some()) {
                candidate.matched_terms = index.matched_terms(candidate.id, &query_terms);
            }
        }
        Ok((candidates, query_terms, fused_count.max(fused.len())))
    }

    /// Will every candidate be explained (a budget or re-rankers look past `top_k`)?
    fn explains_all(&self, request: &SearchRequest) -> bool {
        request.token_budget.is_some()
            || !self.rerankers.is_empty()
            || request.memory_type.is_some()
    }

    /// `list` (best first) judged by [`Judge`]: the candidates whose relevance reaches the
    /// floor, each with its relevance, until `need` of them are found. Relevance is computed
    /// only for the candidates looked at, so a search without a floor pays for its `top_k`.
    fn judged(
        &self,
        index: &ScopeIndex,
        terms: &[String],
        list: Vec<Candidate>,
        judge: Judge,
    ) -> Vec<Candidate> {
        let query = index.relevance_query(terms, &list);
        let model = match &self.relevance_cjk {
            Some(cjk) if is_cjk_query(terms) => cjk,
            _ => &self.relevance,
        };
        let mut kept = Vec::with_capacity(judge.need.min(list.len()));
        for mut candidate in list {
            if kept.len() >= judge.need {
                break;
            }
            // The explanation (features, strongest contributions) is built only for what is
            // kept: an unrelated query may look at every candidate.
            let features = index.relevance_features(&query, &candidate);
            if model.probability(&features) >= judge.floor {
                candidate.relevance = Some(model.explain(&features));
                kept.push(candidate);
            }
        }
        kept
    }

    /// The candidates' memories as hits with their score breakdowns (forgotten ones skipped).
    /// Without a budget, re-rankers or superseded memories to put last, only the rows of the
    /// hits returned are read (and of the turns that state a fact among them, to drop the
    /// fact as a repeat); otherwise a little more than `top_k`, or all, as the later stages
    /// look further.
    fn explained_hits(
        &self,
        request: &SearchRequest,
        mut candidates: Vec<Candidate>,
        top_k: usize,
        timings: &mut SearchTimings,
    ) -> Result<Vec<Hit>> {
        let reranked = !self.rerankers.is_empty() || request.memory_type.is_some();
        let looks_further = request.token_budget.is_some() || reranked;
        // A little more than top_k: a fact whose stating turn is also a hit is dropped later.
        let wanted = if looks_further {
            candidates.len()
        } else {
            (top_k + top_k / 2 + 2).min(candidates.len())
        };
        candidates.truncate(wanted);
        let reorders = request.as_of.is_none() && request.include_superseded;
        let started = Instant::now();
        let mut rows = Rows::new();
        let lazy = !(looks_further || reorders);
        let read = if lazy {
            self.read_first_hits(&request.user, &candidates, top_k, &mut rows)?
        } else {
            let ids: Vec<MemoryId> = candidates.iter().map(|c| c.id).collect();
            self.read_rows(&request.user, &ids, &mut rows)?;
            candidates.len()
        };
        timings.rows_ns = nanos_since(started);
        let started = Instant::now();
        let mut hits: Vec<Hit> = Vec::with_capacity(read);
        // A fact whose stating turn was read only as its source (ranked past what was read)
        // is dropped here: `without_repeated_facts` sees only the hits. Judged before any row
        // is taken out, as the turn may be a hit too.
        let keep: Vec<bool> = candidates[..read]
            .iter()
            .map(|c| !lazy || is_hit(c.id, &rows))
            .collect();
        for (candidate, keep) in candidates.into_iter().zip(keep) {
            if !keep {
                continue;
            }
            // A memory forgotten by another process since the index was built is skipped.
            let Some(Some(memory)) = rows.remove(&candidate.id) else {
                continue;
            };
            hits.push(self.hit(memory, candidate));
        }
        timings.explain_ns = nanos_since(started);
        Ok(hits)
    }

    /// Read the rows of `ids` not read yet into `rows` (`None` for a memory no longer active).
    fn read_rows(&self, user: &UserKey, ids: &[MemoryId], rows: &mut Rows) -> Result<()> {
        let missing: Vec<MemoryId> = ids
            .iter()
            .copied()
            .filter(|id| !rows.contains_key(id))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        for memory in self.store.memories(user, &missing)? {
            if memory.is_active() {
                rows.insert(memory.id, Some(memory));
            }
        }
        for id in missing {
            rows.entry(id).or_insert(None);
        }
        Ok(())
    }

    /// Read rows of `candidates` in order until `top_k` of them are hits (active, and not a
    /// fact that its stating turn, also a candidate, repeats), or all are read; returns how
    /// many candidates were read. The hits are those [`without_repeated_facts`] and the
    /// `top_k` cut would keep from all candidates' rows.
    fn read_first_hits(
        &self,
        user: &UserKey,
        candidates: &[Candidate],
        top_k: usize,
        rows: &mut Rows,
    ) -> Result<usize> {
        let listed: HashSet<MemoryId> = candidates.iter().map(|c| c.id).collect();
        let mut read = 0;
        loop {
            let kept = candidates[..read]
                .iter()
                .filter(|c| is_hit(c.id, rows))
                .count();
            if kept >= top_k || read >= candidates.len() {
                return Ok(read);
            }
            let end = (read + top_k - kept).min(candidates.len());
            let ids: Vec<MemoryId> = candidates[read..end].iter().map(|c| c.id).collect();
            self.read_rows(user, &ids, rows)?;
            let sources: Vec<MemoryId> = ids
                .iter()
                .filter_map(|id| rows.get(id)?.as_ref().and_then(stating_turn))
                .filter(|turn| listed.contains(turn))
                .collect();
            self.read_rows(user, &sources, rows)?;
            read = end;
        }
    }

    fn hit(&self, memory: Memory, candidate: Candidate) -> Hit {
        let Candidate {
            fused,
            lexical,
            dense,
            second_hop,
            context,
            speaker,
            date,
            ranker,
            relevance,
            matched_terms,
            ..
        } = candidate;
        let tokens = self.analyzer.count_tokens(&memory.text);
        Hit {
            memory,
            score: fused,
            relevance: relevance.as_ref().map_or(0.0, |r| r.probability),
            tokens,
            breakdown: ScoreBreakdown {
                lexical,
                dense,
                second_hop,
                context,
                speaker,
                date,
                ranker,
                relevance,
                fused,
                adjustments: Vec::new(),
                matched_terms,
            },
        }
    }

    /// Append this retrieval (rank 1 first) to each hit's access log.
    fn record_access(&self, user: &UserKey, hits: &[Hit]) -> Result<()> {
        let at = Moment {
            round: self.last_round(user),
            time: self.clock.now(),
        };
        let accesses: Vec<(MemoryId, Access)> = hits
            .iter()
            .enumerate()
            .map(|(rank, h)| {
                let rank = u32::try_from(rank + 1).unwrap_or(u32::MAX);
                (h.memory.id, Access { at, rank })
            })
            .collect();
        Ok(self.store.record_access(user, &accesses)?)
    }
}
