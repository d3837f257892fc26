//! Forgetting by description: "forget my old address" without knowing any memory's id.
//!
//! [`Engine::forget_matching`] selects the memories clearly about the description (by the
//! search's relevance, with a floor stricter than the search's; by the rules of forget requests
//! said in conversation, which also know other words for a topic; and the earlier values of
//! what they select) and either lists them (a dry run, the default: nothing is written) or
//! forgets them. Both go through one selection, so a confirmed call forgets exactly what a dry
//! run with the same arguments lists; a caller that passes the ids the dry run listed forgets
//! no memory it was not shown, even when memories changed in between. Each memory is forgotten
//! as [`Engine::forget`] does it (what was derived from it follows, the reason stays in its
//! history), all in one write.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use mnemos_core::{
    BatchForget, ForgetCause, KindTag, Memory, MemoryFilter, MemoryId, Moment, TurnId, UserKey,
    WriteBatch,
};
use mnemos_text::{has_cjk, ForgetRequest};

use crate::engine::{Engine, ForgetReport};
use crate::error::EngineResult;
use crate::memories::SearchRequest;

/// How many memories one request selects unless it says otherwise.
pub const DEFAULT_FORGET_LIMIT: usize = 10;

/// The most memories one request may select (derived memories that follow are not counted).
pub const MAX_FORGET_LIMIT: usize = 100;

/// The relevance a memory needs to be selected for it alone, unless the request names its own
/// floor.
///
/// Far above the search's default (`retrieval.min_relevance`, 0.003, which only keeps a query
/// about nothing from returning something): a memory taken for its relevance must be clearly
/// about the description. Measured on the fixture of `tests/forget.rs` (personal facts, every
/// description against all of them): unrelated memories reach 0.0072 with the hash embedder
/// and 0.0081 with MiniLM (a novel about a nurse, for "my job as a nurse"), memories a
/// description names in its own words 0.060 to 0.34 and 0.063 to 0.41; the floor is about
/// three times the first and half the second. What a description names in other words ("my
/// old address" for "I live in Porto": 0.0003 to 0.0011, as low as unrelated memories) no
/// floor separates; the rules of forget requests select it.
pub const FORGET_MIN_RELEVANCE: f32 = 0.025;

/// What to forget by description.
#[derive(Clone, Debug, PartialEq)]
pub struct ForgetMatching {
    /// What to forget, in words ("my old address", "我妹妹的过敏"). Not stored anywhere.
    pub query: String,
    /// Only this agent's memories.
    pub agent: Option<String>,
    /// At most this many memories are selected, the most relevant first (1 to
    /// [`MAX_FORGET_LIMIT`]).
    pub limit: usize,
    /// The relevance (0 to 1) that selects a memory by itself; `None`:
    /// [`FORGET_MIN_RELEVANCE`]. The rules of forget requests and the replaced values select
    /// below it.
    pub min_relevance: Option<f32>,
    /// Why, recorded in each forgotten memory's history.
    pub reason: String,
    /// `false`: a dry run, which lists what would be forgotten and writes nothing.
    pub confirm: bool,
    /// Only these of the selected memories: the ids a dry run listed. A listed memory that is
    /// no longer selected (forgotten meanwhile, or no longer relevant enough) is skipped and
    /// reported; a memory that was not listed is never forgotten. `None`: every selected one.
    pub ids: Option<Vec<MemoryId>>,
}

impl ForgetMatching {
    /// A dry run for `query` with the default limit and floor.
    pub fn new(query: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            agent: None,
            limit: DEFAULT_FORGET_LIMIT,
            min_relevance: None,
            reason: reason.into(),
            confirm: false,
            ids: None,
        }
    }

    /// The request's mistakes, as invalid input.
    fn validate(&self) -> mnemos_core::Result<()> {
        // A description is a query from outside: the public search's cost limits apply (its
        // search is not split into questions).
        crate::memories::validate_query(&self.query, false)?;
        if self.reason.trim().is_empty() {
            return Err(mnemos_core::Error::invalid("forgetting needs a reason"));
        }
        if self.limit == 0 || self.limit > MAX_FORGET_LIMIT {
            return Err(mnemos_core::Error::invalid(format!(
                "limit: 1 to {MAX_FORGET_LIMIT}"
            )));
        }
        if let Some(floor) = self.min_relevance {
            mnemos_core::retrieval::validate_min_relevance("min_relevance", floor)?;
        }
        if let Some(agent) = &self.agent {
            mnemos_core::validate_name("agent", agent)?;
        }
        match self.ids.as_ref().map(Vec::len) {
            Some(0) => Err(mnemos_core::Error::invalid(
                "ids: empty; leave it out to take every memory selected",
            )),
            Some(n) if n > MAX_FORGET_LIMIT => Err(mnemos_core::Error::invalid(format!(
                "ids: at most {MAX_FORGET_LIMIT}"
            ))),
            _ => Ok(()),
        }
    }
}

/// Why a request selected a memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectedBy {
    /// The search for the description found it at least as relevant as the floor.
    Relevance,
    /// The rules that resolve a forget request said in conversation name it: the topic's
    /// words or their synonyms, the fact of the slot it names, or a value or rare word of such
    /// a memory repeated.
    Topic,
    /// A selected memory replaced it: an earlier value of the same fact (an old address goes
    /// with the new one), or the turn that stated it.
    Replaced,
}

impl SelectedBy {
    /// Every reason, for documentation and wire schemas.
    pub const ALL: [SelectedBy; 3] = [Self::Relevance, Self::Topic, Self::Replaced];

    /// The reason's name (`relevance`, `topic`, `replaced`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Relevance => "relevance",
            Self::Topic => "topic",
            Self::Replaced => "replaced",
        }
    }
}

/// One memory a request selected.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForgetCandidate {
    /// The memory as it was when selected.
    pub memory: Memory,
    /// How clearly it is about the description: the search's calibrated relevance, 0 to 1
    /// (`None`: the search did not reach it).
    pub relevance: Option<f32>,
    /// Why it was selected (the first reason that applies, in [`SelectedBy`]'s order).
    pub by: SelectedBy,
}

/// What [`Engine::forget_matching`] selected and, when confirmed, forgot.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ForgetMatchReport {
    /// The memories selected, most relevant first: in a dry run what would be forgotten,
    /// confirmed what was. A memory derived from another one here is not listed; it is
    /// counted in `derived`.
    pub candidates: Vec<ForgetCandidate>,
    /// Whether anything was written (a confirmed request that selected something).
    pub confirmed: bool,
    /// Memories derived from the candidates (summaries, facts, profiles…) that go with them:
    /// would go in a dry run, went when confirmed.
    pub derived: usize,
    /// Confirmed: one report per candidate, in the same order (its state now holds the
    /// reason). Empty in a dry run.
    pub forgotten: Vec<ForgetReport>,
    /// Ids the request named that were not selected, so not forgotten.
    pub skipped: Vec<MemoryId>,
    /// More memories were selected than the limit let through.
    pub truncated: bool,
}

/// The memories a request selects, and what it named but did not get.
struct Selection {
    candidates: Vec<ForgetCandidate>,
    skipped: Vec<MemoryId>,
    truncated: bool,
}

/// Forgets planned into one write: each memory once, what was derived from a memory following
/// it with the engine's cascade reason.
pub(crate) struct ForgetPlan {
    batch: WriteBatch,
    planned: HashSet<MemoryId>,
    at: Moment,
}

impl ForgetPlan {
    pub(crate) fn new(user: &UserKey, at: Moment) -> Self {
        Self {
            batch: WriteBatch {
                user: Some(user.clone()),
                ..WriteBatch::default()
            },
            planned: HashSet::new(),
            at,
        }
    }

    /// Forget `target`, when still active, for `reason`.
    pub(crate) fn target(&mut self, target: &Memory, reason: &str) {
        if target.is_active() {
            self.push(target.id, reason.to_string(), ForgetCause::Request);
        }
    }

    /// Forget `derived` (active memories derived from `source`) with the cascade's reason;
    /// returns how many of them this adds to the plan.
    pub(crate) fn derived(&mut self, source: MemoryId, derived: &[&Memory], reason: &str) -> usize {
        derived
            .iter()
            .filter(|m| {
                let cause = ForgetCause::Derived { source };
                self.push(
                    m.id,
                    crate::provenance::derived_reason(source, reason),
                    cause,
                )
            })
            .count()
    }

    /// Plan one forget unless planned already; whether it was new.
    fn push(&mut self, id: MemoryId, reason: String, cause: ForgetCause) -> bool {
        if !self.planned.insert(id) {
            return false;
        }
        self.batch.forgets.push(BatchForget {
            id,
            reason,
            cause,
            at: self.at,
        });
        true
    }

    /// The write, or nothing when there is nothing to forget.
    pub(crate) fn into_batch(self) -> Option<WriteBatch> {
        (!self.batch.forgets.is_empty()).then_some(self.batch)
    }
}

impl Engine {
    /// Forget `user`'s memories that a description names, after showing them: `request`
    /// unconfirmed is a dry run that returns the candidates and writes nothing; confirmed, the
    /// same selection is forgotten in one write, each with what was derived from it.
    ///
    /// A memory is selected when the search for the description finds it at least as relevant
    /// as the floor, when the rules that resolve a forget request said in conversation name it
    /// (the description read as the request's topic: "my old address" → where the user lives,
    /// also in other words), or when a selected memory replaced it (an old address goes with
    /// the new one). Never a tombstone of a forget request (it holds what was asked, not what
    /// was said); at most `limit`, most relevant first. Only `user`'s memories can be selected.
    pub fn forget_matching(
        &self,
        user: &UserKey,
        request: &ForgetMatching,
    ) -> EngineResult<ForgetMatchReport> {
        user.validate()?;
        request.validate()?;
        let active = self.store().list_all(user, &MemoryFilter::active())?;
        let selection = self.select_for_forgetting(user, request, &active)?;
        let mut report = ForgetMatchReport {
            skipped: selection.skipped,
            truncated: selection.truncated,
            ..ForgetMatchReport::default()
        };
        if selection.candidates.is_empty() {
            return Ok(report);
        }
        let mut plan = ForgetPlan::new(user, self.memories.moment(user)?);
        let derived = plan_forgetting(&mut plan, &selection.candidates, &active, &request.reason);
        report.derived = derived.iter().sum();
        if request.confirm {
            if let Some(batch) = plan.into_batch() {
                self.memories.commit(user, batch)?;
            }
            report.confirmed = true;
            for (candidate, derived) in selection.candidates.iter().zip(derived) {
                report.forgotten.push(ForgetReport {
                    memory: self.memories.get(user, candidate.memory.id)?,
                    already_forgotten: !candidate.memory.is_active(),
                    derived,
                });
            }
        }
        report.candidates = selection.candidates;
        Ok(report)
    }

    /// The memories `request` selects among `active` (see [`Engine::forget_matching`]).
    fn select_for_forgetting(
        &self,
        user: &UserKey,
        request: &ForgetMatching,
        active: &[Memory],
    ) -> EngineResult<Selection> {
        let floor = request.min_relevance.unwrap_or(FORGET_MIN_RELEVANCE);
        let hits = self.relevance_to(user, request)?;
        let relevance: HashMap<MemoryId, f32> = hits.iter().map(|(m, r)| (m.id, *r)).collect();
        let mut found: Vec<ForgetCandidate> = hits
            .into_iter()
            .filter(|(_, r)| *r >= floor)
            .map(|(memory, r)| ForgetCandidate {
                memory,
                relevance: Some(r),
                by: SelectedBy::Relevance,
            })
            .collect();
        if let Some(topic) = topic_of(&request.query) {
            let agent = request.agent.as_deref();
            let named = self.memories.memories_about(user, agent, &topic)?;
            add(&mut found, named, SelectedBy::Topic, &relevance);
        }
        found.retain(|c| !is_tombstone(&c.memory));
        loop {
            let older = replaced_by(&found, active, request.agent.as_deref());
            if older.is_empty() {
                break;
            }
            add(&mut found, older, SelectedBy::Replaced, &relevance);
        }
        without_derived(&mut found);
        Ok(Selection::of(found, request))
    }

    /// Every memory the search for the description reaches (current and superseded, by
    /// likeness alone: no second hop, no dialogue neighbours), with its relevance.
    fn relevance_to(
        &self,
        user: &UserKey,
        request: &ForgetMatching,
    ) -> EngineResult<Vec<(Memory, f32)>> {
        let mut search = SearchRequest::new(user.clone(), request.query.clone());
        search.top_k = Some(SEARCHED);
        search.filter.agent = request.agent.clone();
        search.include_superseded = true;
        search.likeness_only = true;
        search.second_hop = None;
        search.split_questions = false;
        search.min_relevance = Some(0.0);
        let hits = self.memories.search(&search)?.hits;
        Ok(hits.into_iter().map(|h| (h.memory, h.relevance)).collect())
    }
}

/// How many hits the search for a description keeps: more than any limit, since tombstones,
/// derived memories and ids not named are left out after it.
const SEARCHED: usize = 2 * MAX_FORGET_LIMIT;

/// Add the active `memories` not in `found` yet, selected `by`.
fn add(
    found: &mut Vec<ForgetCandidate>,
    memories: Vec<Memory>,
    by: SelectedBy,
    relevance: &HashMap<MemoryId, f32>,
) {
    for memory in memories {
        if memory.is_active() && found.iter().all(|c| c.memory.id != memory.id) {
            found.push(ForgetCandidate {
                relevance: relevance.get(&memory.id).copied(),
                memory,
                by,
            });
        }
    }
}

/// The memories of `active` (of `agent`, when named) not in `found` that a memory of `found`
/// (or one stated by the same turn: a selected turn's facts) replaced, with the turns that
/// stated them.
fn replaced_by(found: &[ForgetCandidate], active: &[Memory], agent: Option<&str>) -> Vec<Memory> {
    let turns: HashSet<TurnId> = found
        .iter()
        .flat_map(|c| c.memory.provenance.iter().copied())
        .collect();
    let selected: HashSet<MemoryId> = active
        .iter()
        .filter(|m| m.provenance.iter().any(|t| turns.contains(t)))
        .map(|m| m.id)
        .chain(found.iter().map(|c| c.memory.id))
        .collect();
    let older: HashSet<TurnId> = active
        .iter()
        .filter(|m| m.superseded_by.is_some_and(|by| selected.contains(&by)))
        .flat_map(|m| m.provenance.iter().copied())
        .collect();
    active
        .iter()
        .filter(|m| agent.is_none_or(|a| m.scope.agent == a))
        .filter(|m| !selected.contains(&m.id))
        .filter(|m| {
            m.superseded_by.is_some_and(|by| selected.contains(&by))
                || (m.kind.tag() == KindTag::Turn && m.provenance.iter().any(|t| older.contains(t)))
        })
        .cloned()
        .collect()
}

/// Plan forgetting `candidates` (each for `reason`) and the memories of `active` derived from
/// them (with the cascade's reason); how many of those each candidate adds.
fn plan_forgetting(
    plan: &mut ForgetPlan,
    candidates: &[ForgetCandidate],
    active: &[Memory],
    reason: &str,
) -> Vec<usize> {
    for candidate in candidates {
        plan.target(&candidate.memory, reason);
    }
    candidates
        .iter()
        .map(|c| {
            let from = crate::provenance::derived_among(active, &c.memory);
            plan.derived(c.memory.id, &from, reason)
        })
        .collect()
}

impl Selection {
    /// `found` narrowed to the ids the request names, most relevant first (memories the search
    /// did not reach last), cut to its limit.
    fn of(mut found: Vec<ForgetCandidate>, request: &ForgetMatching) -> Self {
        let named: Option<HashSet<MemoryId>> = request
            .ids
            .as_ref()
            .map(|ids| ids.iter().copied().collect());
        if let Some(ids) = &named {
            found.retain(|c| ids.contains(&c.memory.id));
        }
        // Stable: equal relevance keeps the order found (the search's, then the rules').
        found.sort_by(|a, b| {
            let key = |c: &ForgetCandidate| c.relevance.unwrap_or(-1.0);
            key(b).total_cmp(&key(a))
        });
        let truncated = found.len() > request.limit;
        found.truncate(request.limit);
        let selected: HashSet<MemoryId> = found.iter().map(|c| c.memory.id).collect();
        let mut skipped: Vec<MemoryId> = named
            .map(|ids| {
                ids.into_iter()
                    .filter(|id| !selected.contains(id))
                    .collect()
            })
            .unwrap_or_default();
        skipped.sort();
        Selection {
            candidates: found,
            skipped,
            truncated,
        }
    }
}

/// `found` without the memories derived from a raw turn among them: forgetting the turn takes
/// them along (see `derived_of`), so they are counted as derived, not listed.
fn without_derived(found: &mut Vec<ForgetCandidate>) {
    let turns: HashSet<TurnId> = found
        .iter()
        .filter(|c| c.memory.kind.tag() == KindTag::Turn)
        .flat_map(|c| c.memory.provenance.iter().copied())
        .collect();
    found.retain(|c| {
        c.memory.kind.tag() == KindTag::Turn
            || !c.memory.provenance.iter().any(|t| turns.contains(t))
    });
}

/// The description read as the topic of a request to forget it, by the rules a request said
/// in conversation follows: as it is when it is such a request ("please forget my address"),
/// else as the object of one ("my old address", "everything about Alex", "我的住址"). `None`
/// when it names nothing to resolve ("everything", "it").
fn topic_of(description: &str) -> Option<ForgetRequest> {
    let framed = || {
        let request = if has_cjk(description) {
            format!("请忘掉{description}")
        } else {
            format!("Forget {description}")
        };
        mnemos_text::forget_request(&request)
    };
    mnemos_text::forget_request(description)
        .or_else(framed)
        .filter(|r| !r.terms.is_empty())
}

/// A forget request's tombstone ("the user asked to forget: …"): it names the topic, not what
/// was said about it, and is what recall reports in its place.
fn is_tombstone(memory: &Memory) -> bool {
    memory
        .metadata
        .contains_key(crate::truth::forget::TOPIC_KEY)
}
