//! The default preset: what an agent should get back, true now and relevant.
//!
//! - **Write path** ([`WritePolicy`]): every statement becomes a fact keyed by subject, slot
//!   and qualifier; a new value supersedes the old one (history kept), a repeat reinforces it,
//!   a negation or a correction ends it; a user's request to forget something erases it and
//!   leaves a tombstone. No model call.
//! - **Recall**: first the facts the query asks about (its slots, read by rule, and the best
//!   fact hits), each on one line with its history ("…home is Porto now (previously: Tallinn,
//!   until 2024-03-02)"); then the turns hybrid retrieval with a second hop finds, current ones
//!   only — a turn that stated only replaced facts is left out, one that still holds other
//!   news is marked where it is out of date. With `as_of`, both come from what was valid then.
//!
//! Everything is offline and reproducible; an LLM, when configured, is not needed here.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use mnemos_core::{
    BatchUpdate, Hit, Job, KindTag, MemoryId, MemoryKind, MemoryModelExt, MemoryPatch, Moment,
    RetrieverKind, SecondHop, Timestamp, Turn,
};
use mnemos_text::Asked;

use super::full::HEADER_TOKENS;
use super::retrieval::{hit_item, search_shaped, SearchShape};
use super::PresetParams;
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, tokens};
use mnemos_engine::truth::facts::SOURCE_KEY;
use mnemos_engine::truth::facts::{loosely_equal, slot_name, FactEntry, FactTable};
use mnemos_engine::truth::forget::TOPIC_KEY;
use mnemos_engine::truth::{FactChange, WritePolicy};
use mnemos_engine::EngineResult;

pub const NAME: &str = "default";

/// The job that asks a language model to confirm a supersession made by rule.
const JOB_CONFIRM: &str = "confirm_supersession";

/// What a confirmation job checks: that `by` really replaced `memory`.
#[derive(Serialize, Deserialize)]
struct Confirm {
    memory: MemoryId,
    by: MemoryId,
}
pub const SUMMARY: &str = "The default: facts kept current (a new value supersedes the old, history kept), forget requests honoured, hybrid retrieval with a second hop";

/// Section of the facts the query asks about.
const FACTS_SECTION: &str = "facts";
/// Section of the retrieved turns.
const TURNS_SECTION: &str = "memories";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DefaultParams {
    /// How many turns to retrieve.
    pub top_k: usize,
    /// 1, or 2 for a second retrieval hop from the first hop's best turns.
    pub hops: usize,
    pub hop_seeds: usize,
    pub hop_weight: f32,
    pub hop_keep: usize,
    /// Search each question of a compound query on its own.
    pub split_questions: bool,
    /// Statements become facts, and a new value supersedes the old one.
    pub supersede: bool,
    /// A user's request to forget something erases it.
    pub forget_requests: bool,
    /// How many facts the context leads with (0: none).
    pub facts: usize,
}

impl Default for DefaultParams {
    fn default() -> Self {
        let hop = SecondHop::default();
        Self {
            top_k: 10,
            hops: 2,
            hop_seeds: hop.seeds,
            hop_weight: hop.weight,
            hop_keep: hop.keep,
            split_questions: true,
            supersede: true,
            forget_requests: true,
            facts: 5,
        }
    }
}

impl DefaultParams {
    fn shape(&self, as_of: Option<Timestamp>, min_relevance: f32) -> SearchShape {
        SearchShape {
            second_hop: (self.hops == 2).then_some(SecondHop {
                seeds: self.hop_seeds,
                weight: self.hop_weight,
                keep: self.hop_keep,
            }),
            split_questions: self.split_questions,
            as_of,
            min_relevance: Some(min_relevance),
            ..SearchShape::default()
        }
    }
}

impl PresetParams for DefaultParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("top_k", "how many turns to retrieve (1..=1000)"),
        (
            "hops",
            "1, or 2 to search again from the best turns found (multi-hop questions)",
        ),
        ("hop_seeds", "second hop: how many first-hop turns seed it (1..=20)"),
        ("hop_weight", "second hop: its weight against the first hop (0, 1]"),
        (
            "hop_keep",
            "second hop: how many of the first hop's best turns keep their places (0..=100)",
        ),
        (
            "split_questions",
            "search each question of a compound query on its own",
        ),
        (
            "supersede",
            "statements become facts; a new value supersedes the old (history kept), a repeat reinforces it",
        ),
        (
            "forget_requests",
            "a user's request to forget something erases it and leaves a tombstone",
        ),
        (
            "facts",
            "how many facts the context leads with, each with its history (0..=50; 0: none)",
        ),
    ];

    fn validate(&self) -> Result<(), String> {
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        if !(1..=2).contains(&self.hops) {
            return Err(format!("hops = {}: expected 1 or 2", self.hops));
        }
        if self.facts > 50 {
            return Err(format!("facts = {}: expected 0..=50", self.facts));
        }
        SecondHop {
            seeds: self.hop_seeds,
            weight: self.hop_weight,
            keep: self.hop_keep,
        }
        .validate()
        .map_err(|e| e.to_string())
    }
}

pub struct DefaultPreset {
    params: DefaultParams,
}

impl DefaultPreset {
    pub fn new(params: DefaultParams) -> Self {
        Self { params }
    }
}

impl Mechanism for DefaultPreset {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(Vec::new())
    }

    fn answers_as_of(&self) -> bool {
        true
    }

    fn confirm_supersession(&self, change: &FactChange) -> Option<JobSpec> {
        let payload = Confirm {
            memory: change.memory,
            by: change.by,
        };
        let payload = serde_json::to_value(payload).ok()?;
        self.params
            .supersede
            .then(|| JobSpec::new(JOB_CONFIRM, payload))
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        if job.kind != JOB_CONFIRM {
            return Err(mnemos_engine::EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{}' jobs", job.kind),
            });
        }
        let confirm: Confirm = JobSpec::parse(job)?;
        confirm_or_undo(ctx, &confirm)
    }

    fn write_policy(&self) -> WritePolicy {
        WritePolicy {
            supersede: self.params.supersede,
            forget_requests: self.params.forget_requests,
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let table = ctx.facts()?;
        let floor = request
            .min_relevance
            .unwrap_or_else(|| ctx.default_min_relevance());
        let room = request.token_budget.saturating_sub(HEADER_TOKENS);
        let facts = if self.params.facts > 0 {
            self.fact_items(ctx, request, &table, floor)?
        } else {
            Vec::new()
        };
        // A turn that said nothing but a fact shown above is not shown again.
        let stated: HashSet<MemoryId> = facts.iter().filter_map(|(_, turn)| *turn).collect();
        let mut items: Vec<ContextItem> = facts.into_iter().map(|(item, _)| item).collect();
        let hits = search_shaped(
            ctx,
            &request.query,
            &[KindTag::Turn],
            request.session.as_deref(),
            RetrieverKind::Hybrid,
            self.params.top_k,
            self.params.shape(request.as_of, floor),
        )?;
        for hit in &hits {
            if stated.contains(&hit.memory.id) {
                continue;
            }
            items.push(turn_item(hit, &table, request.as_of));
        }
        let items = pack_within_budget(items, room);
        Ok(Recall {
            context: build_context(NAME, &request.query, items, request.token_budget, vec![]),
            effects: Default::default(),
        })
    }
}

impl DefaultPreset {
    /// The facts the query asks about (by its slots, then by search), valid now or at the
    /// request's `as_of`, each as a context item with its history; with each, the raw turn
    /// that stated it when that turn said nothing else (it need not be shown again).
    fn fact_items(
        &self,
        ctx: &MechanismCtx,
        request: &RecallRequest,
        table: &FactTable,
        floor: f32,
    ) -> EngineResult<Vec<(ContextItem, Option<MemoryId>)>> {
        let valid = |e: &FactEntry| match request.as_of {
            Some(at) => e.valid_from <= at && e.valid_to.is_none_or(|end| at < end),
            None => e.is_current(),
        };
        let asked = mnemos_text::asked(&request.query);
        let mut chosen: Vec<&FactEntry> = table
            .entries()
            .iter()
            .rev()
            .filter(|e| e.agent == ctx.agent && valid(e) && !e.negated)
            .filter(|e| asked.iter().any(|a| answers(a, e)))
            .collect();
        let hits = search_shaped(
            ctx,
            &request.query,
            &[KindTag::Fact],
            None,
            RetrieverKind::Hybrid,
            self.params.facts,
            SearchShape {
                as_of: request.as_of,
                min_relevance: Some(floor),
                ..SearchShape::default()
            },
        )?;
        // A fact found by search must share a word with the query: likeness alone brings
        // any fact of the speaker.
        for hit in hits
            .iter()
            .filter(|h| !h.breakdown.matched_terms.is_empty())
        {
            if let Some(entry) = table.get(hit.memory.id).filter(|e| valid(e)) {
                chosen.push(entry);
            }
        }
        // One line per fact, and per clause: two facts one clause states are shown once.
        let mut seen = HashSet::new();
        let mut said = HashSet::new();
        chosen.retain(|e| seen.insert(e.id) && said.insert((e.speaker.clone(), e.text.clone())));
        chosen.truncate(self.params.facts);
        Ok(chosen
            .into_iter()
            .map(|e| {
                let whole = e.source.filter(|_| e.whole_turn);
                (fact_item(e, table, request.as_of), whole)
            })
            .collect())
    }
}

/// A language model's second opinion on a supersession made by rule: when its `conflicts`
/// task finds the two statements compatible, the older memory is current again (and so is the
/// raw turn that went with it), each change a new version in its history.
fn confirm_or_undo(ctx: &MechanismCtx, confirm: &Confirm) -> EngineResult<Derived> {
    let store = ctx.store();
    let (Some(old), Some(new)) = (
        store.memory(ctx.user, confirm.memory)?,
        store.memory(ctx.user, confirm.by)?,
    ) else {
        return Ok(Derived::default());
    };
    // Changed since (undone, forgotten, replaced again): nothing left to confirm.
    if old.superseded_by != Some(new.id) || !old.is_active() || !new.is_active() {
        return Ok(Derived::default());
    }
    if ctx.model.conflicts(&old.text, &new.text)? {
        return Ok(Derived::default());
    }
    let at = ctx.moment()?;
    let undo = |id: MemoryId| BatchUpdate {
        id,
        patch: MemoryPatch {
            valid_to: Some(None),
            superseded_by: Some(None),
            ..MemoryPatch::default()
        },
        at,
    };
    let mut derived = Derived::default();
    derived.updates.push(undo(old.id));
    let source = |m: &mnemos_core::Memory| -> Option<MemoryId> {
        m.metadata.get(SOURCE_KEY).and_then(|v| v.parse().ok())
    };
    if let (Some(old_turn), Some(new_turn)) = (source(&old), source(&new)) {
        if let Some(turn) = store.memory(ctx.user, old_turn)? {
            if turn.superseded_by == Some(new_turn) {
                derived.updates.push(undo(turn.id));
            }
        }
    }
    Ok(derived)
}

/// Whether a fact answers what a question asks: its slot, a compatible subject (a question in
/// the first person asks about a person who speaks, never a relative or a thing) and a
/// compatible qualifier (a question that names none takes any).
fn answers(asked: &Asked, fact: &FactEntry) -> bool {
    if slot_name(asked.slot) != fact.slot {
        return false;
    }
    let person = fact.subject.starts_with("who:") && !fact.subject.contains('/');
    let subject = match &asked.subject {
        mnemos_text::Subject::Speaker => person,
        mnemos_text::Subject::Named(name) => {
            fact.subject == format!("who:{}", name.trim().to_lowercase())
        }
        mnemos_text::Subject::Related(relation) => fact
            .subject
            .ends_with(&format!("/{}", relation.trim().to_lowercase())),
        mnemos_text::Subject::Thing(thing) => loosely_equal(
            fact.subject.trim_start_matches("thing:"),
            &thing.trim().to_lowercase(),
        ),
    };
    subject && (asked.qualifier.is_empty() || loosely_equal(&asked.qualifier, &fact.qualifier))
}

/// The date part of a time, for history notes.
fn day(time: Timestamp) -> String {
    mnemos_engine::primitives::iso(time)
        .chars()
        .take(10)
        .collect()
}

/// A fact as one context line: what was said, by whom, and what it replaced (or, for a past
/// moment, from when to when it held).
fn fact_item(fact: &FactEntry, table: &FactTable, as_of: Option<Timestamp>) -> ContextItem {
    let chinese = mnemos_text::has_cjk(&fact.text);
    let said = match &fact.speaker {
        Some(speaker) => format!("{speaker}: {}", fact.text),
        None => fact.text.clone(),
    };
    let mut note = match as_of {
        Some(_) => validity_note(fact, chinese),
        None => history_note(fact, table, chinese),
    };
    // The clause may also name a value its turn stated that was replaced since.
    if let (None, Some(source)) = (as_of, fact.source) {
        note.push_str(&outdated_note(table, source, &fact.text).unwrap_or_default());
    }
    let text = format!("{said}{note}");
    let created = Moment {
        round: fact.round,
        time: fact.valid_from,
    };
    let times = f64::from(fact.metrics.times_said.unwrap_or(1));
    ContextItem {
        memory_id: fact.id,
        kind: MemoryKind::Fact,
        tokens: tokens(&text),
        text,
        provenance: fact.provenance.clone(),
        created,
        section: FACTS_SECTION.to_string(),
        score: 1.0,
        breakdown: Vec::new(),
    }
    .with_part("times_said", times)
}

/// "(previously: Tallinn, until 2024-03-02)" for the fact the current one replaced, if any.
fn history_note(fact: &FactEntry, table: &FactTable, chinese: bool) -> String {
    let previous = table
        .entries()
        .iter()
        .filter(|e| e.superseded_by == Some(fact.id) && !e.value.is_empty())
        .max_by_key(|e| e.valid_to);
    match previous {
        Some(old) => {
            let until = old.valid_to.map(day).unwrap_or_default();
            if chinese {
                format!("（之前：{}，至{until}）", old.value)
            } else {
                format!(" (previously: {}, until {until})", old.value)
            }
        }
        None => String::new(),
    }
}

/// "(valid 2023-01-05 – 2024-03-02)": when a fact held, for a question about the past.
fn validity_note(fact: &FactEntry, chinese: bool) -> String {
    let from = day(fact.valid_from);
    let to = fact.valid_to.map(day);
    match (chinese, to) {
        (true, Some(to)) => format!("（有效期：{from} 至 {to}）"),
        (true, None) => format!("（自{from}起有效）"),
        (false, Some(to)) => format!(" (valid {from} to {to})"),
        (false, None) => format!(" (valid since {from})"),
    }
}

/// A retrieved turn as a context line; a tombstone says what the user asked to forget, and a
/// current turn some of whose facts were replaced says so where it is out of date.
fn turn_item(hit: &Hit, table: &FactTable, as_of: Option<Timestamp>) -> ContextItem {
    let mut item = hit_item(hit, TURNS_SECTION);
    if hit.memory.metadata.contains_key(TOPIC_KEY) {
        item.text = hit.memory.text.clone();
        item.tokens = tokens(&item.text);
        return item.with_part("tombstone", 1.0);
    }
    if as_of.is_none() {
        if let Some(note) = outdated_note(table, hit.memory.id, &item.text) {
            item.text.push_str(&note);
            item.tokens = tokens(&item.text);
        }
    }
    item
}

/// What a still-current line stated that has since been replaced: "(superseded in part:
/// Marisol → Dmitri)" for the facts the turn `source` stated that are no longer current.
fn outdated_note(table: &FactTable, source: MemoryId, text: &str) -> Option<String> {
    let outdated: Vec<String> = table
        .stated_by(source)
        .filter(|e| !e.is_current() && !e.value.is_empty())
        .filter_map(|e| {
            let newer = table.get(e.superseded_by?)?;
            Some(if newer.value.is_empty() || newer.negated {
                e.value.clone()
            } else {
                format!("{} → {}", e.value, newer.value)
            })
        })
        .collect();
    if outdated.is_empty() {
        return None;
    }
    Some(if mnemos_text::has_cjk(text) {
        format!("（已过时：{}）", outdated.join("；"))
    } else {
        format!(" (superseded in part: {})", outdated.join("; "))
    })
}
