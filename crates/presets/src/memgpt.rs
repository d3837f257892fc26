//! MemGPT (Packer et al., 2023): an LLM as an operating system that pages memory between a
//! bounded main context and external storage.
//!
//! How the paper's parts map onto the store (the mechanism itself keeps no state):
//! - **Core memory**: two bounded blocks, `human` (about the user) and `persona` (about the
//!   agent), each one `Profile` memory with `metadata["block"]`. The block text is lines
//!   `key: value`; edits are `BatchUpdate`s, so the history keeps every version. When a block
//!   exceeds `core_tokens` its oldest lines are dropped (a replaced value moves to the end, as
//!   the newest line).
//! - **FIFO queue**: the agent's turns not yet covered by the recursive summary. When it exceeds
//!   `buffer_tokens` (or `buffer_turns`), `observe` plans an `evict` job for its oldest turns,
//!   enough to bring it back to half of the limits (MemGPT's queue flush).
//! - **Recursive summary**: the `evict` job writes `summarize(previous summary + evicted
//!   turns)` as a `Summary{level: 1}` with `metadata["memgpt"] = "recursive_summary"`; its
//!   provenance is every turn covered so far, and that provenance *is* the queue boundary: the
//!   queue is the turns after the last covered one. The previous summary is forgotten with a
//!   reason (its history stays). Deleting the summary restarts it from the oldest turn.
//! - **Archival memory**: the evicted turns themselves (raw `Turn` memories, never forgotten).
//!   Recall runs MemGPT's `archival_memory_search(query, page)` over turns outside the queue,
//!   fetching pages of `page_size` results while they fit the budget, up to `max_pages`.
//!
//! In place of the LLM's function calls (`core_memory_append` / `core_memory_replace` after
//! MemGPT's memory-pressure warning), the `evict` job runs `persona_snapshot` with the default
//! schema over the turns it evicts, just before they leave the queue: user lines edit `human`,
//! assistant lines `persona` (the offline extractor only reads assistant lines whose speaker is
//! named, i.e. a role-played character). A value for a new key is appended; a new value of a
//! single-valued key (name, age, job, workplace, location, plans) replaces the old line;
//! multi-valued keys (likes, pets, family…) append distinct values, and a like moving to
//! dislikes (or back) removes the opposite line. Each turn is read exactly once, at eviction, so
//! edits apply in dialogue order. The offline summarizer is extractive; an LLM model writes
//! abstractive summaries through the same task.
//!
//! Idempotency: an `evict` payload names its span of turns; a replay whose span the current
//! summary already covers returns no writes. `observe` counts pending `evict` jobs (and the
//! evictions its own write plans) as done, so one overflow plans one job.
//!
//! Recall priority (prompt order differs): core memory, recursive summary, recent messages
//! (newest first), archival pages. Prompt order: core memory, recursive summary, archival,
//! recent messages. `RecallRequest::session` narrows recent messages and archival search; core
//! memory and the summary are the agent's.

use std::collections::{BTreeMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use mnemos_core::memory_model::{KeyKind, Line, PersonaSchema, PersonaValue};
use mnemos_core::KindTag;
use mnemos_core::{
    BatchForget, BatchUpdate, ForgetCause, Job, Memory, MemoryFilter, MemoryId, MemoryKind,
    MemoryModelExt, MemoryPatch, Metadata, Page, RetrieverKind, Role, StoreRead, Turn, TurnId,
    UserKey,
};

use super::full::HEADER_TOKENS;
use super::retrieval::{hit_item, retriever_kind, search};
use super::PresetParams;
use crate::primitives::derived_memory;
use crate::primitives::turn_line;
use mnemos_engine::mechanism::{
    collect_all, ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall,
    RecallRequest,
};
use mnemos_engine::primitives::{
    build_context, item_tokens, speaker_text, tokens, truncate_to_tokens,
};
use mnemos_engine::{EngineError, EngineResult};

pub const NAME: &str = "memgpt";
pub const SUMMARY: &str = "MemGPT (Packer et al., 2023): core memory blocks, a FIFO message queue \
     evicted into a recursive summary, paged archival search";

const EVICT: &str = "evict";
const TAG: &str = "memgpt";
const RECURSIVE_SUMMARY: &str = "recursive_summary";
const CORE: &str = "core";
const BLOCK: &str = "block";
const HUMAN: &str = "human";
const PERSONA: &str = "persona";
/// Largest slice of text handed to one model task; longer evictions are folded in chunks
/// (well under `MAX_TASK_BYTES`, which also counts the previous summary).
const CHUNK_BYTES: usize = 32 * 1024;
/// Page size when walking the store's turn listing backwards.
const WALK_PAGE: usize = 256;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemGptParams {
    /// Token limit of each core memory block.
    pub core_tokens: usize,
    /// Token limit of the FIFO message queue.
    pub buffer_tokens: usize,
    /// Turn limit of the queue (0 = tokens only).
    pub buffer_turns: usize,
    /// Token budget of the recursive summary.
    pub summary_tokens: usize,
    /// Results per archival search page.
    pub page_size: usize,
    /// Most archival pages one recall fetches.
    pub max_pages: usize,
    /// Archival retriever: dense (MemGPT's vector store), bm25 or hybrid.
    pub retriever: String,
}

impl Default for MemGptParams {
    fn default() -> Self {
        Self {
            core_tokens: 256,
            buffer_tokens: 1024,
            buffer_turns: 0,
            summary_tokens: 256,
            page_size: 5,
            max_pages: 3,
            retriever: "dense".into(),
        }
    }
}

impl PresetParams for MemGptParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "core_tokens",
            "token limit of each core memory block (human, persona); oldest lines drop (16..=8192)",
        ),
        (
            "buffer_tokens",
            "token limit of the FIFO message queue; overflow evicts its oldest half (32..=1000000)",
        ),
        (
            "buffer_turns",
            "turn limit of the queue, 0 = token limit only (0..=100000)",
        ),
        (
            "summary_tokens",
            "token budget of the recursive summary (8..=8192)",
        ),
        ("page_size", "results per archival search page (1..=100)"),
        (
            "max_pages",
            "most archival pages one recall fetches (1..=100)",
        ),
        ("retriever", "archival search: dense | bm25 | hybrid"),
    ];
    fn validate(&self) -> Result<(), String> {
        let ranges: [(&str, usize, usize, usize); 6] = [
            ("core_tokens", self.core_tokens, 16, 8192),
            ("buffer_tokens", self.buffer_tokens, 32, 1_000_000),
            ("buffer_turns", self.buffer_turns, 0, 100_000),
            ("summary_tokens", self.summary_tokens, 8, 8192),
            ("page_size", self.page_size, 1, 100),
            ("max_pages", self.max_pages, 1, 100),
        ];
        for (key, value, lo, hi) in ranges {
            if !(lo..=hi).contains(&value) {
                return Err(format!("{key} = {value}: expected {lo}..={hi}"));
            }
        }
        retriever_kind(&self.retriever).map(|_| ())
    }
}

/// The payload of an `evict` job: the turns it moves out of the queue, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct EvictPayload {
    turns: Vec<TurnId>,
}

pub struct MemGpt {
    params: MemGptParams,
    retriever: RetrieverKind,
}

impl MemGpt {
    pub fn new(params: MemGptParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Dense);
        Self { params, retriever }
    }

    /// If the queue overflows, pop the turns a flush evicts (oldest first, until the rest is at
    /// most half of each limit; the newest turn always stays).
    fn flush(&self, queue: &mut VecDeque<(TurnId, usize)>) -> Option<Vec<TurnId>> {
        let limit_turns = match self.params.buffer_turns {
            0 => usize::MAX,
            n => n,
        };
        let mut total: usize = queue.iter().map(|(_, t)| t).sum();
        if total <= self.params.buffer_tokens && queue.len() <= limit_turns {
            return None;
        }
        let keep_tokens = self.params.buffer_tokens / 2;
        let keep_turns = limit_turns / 2;
        let mut span = Vec::new();
        while queue.len() > 1 && (total > keep_tokens || queue.len() > keep_turns) {
            if let Some((id, t)) = queue.pop_front() {
                span.push(id);
                total -= t;
            }
        }
        (!span.is_empty()).then_some(span)
    }

    /// Core memory edits from `turns`: `persona_snapshot` values turned into appends and
    /// replacements of the block lines. Returns new blocks and updates of existing ones.
    fn core_edits(
        &self,
        ctx: &MechanismCtx,
        job: &Job,
        turns: &[Turn],
    ) -> EngineResult<(Vec<Memory>, Vec<BatchUpdate>)> {
        let schema = PersonaSchema::default_keys();
        // (block, value, source turn) in snapshot order.
        let mut found: Vec<(&'static str, PersonaValue, TurnId)> = Vec::new();
        for chunk in chunks(turns, |t| t.text.len()) {
            let lines: Vec<Line> = chunk.iter().map(turn_line).collect();
            for value in ctx.model.persona_snapshot(&lines, &schema)? {
                let source = match value.line.and_then(|i| chunk.get(i)) {
                    Some(turn) => turn,
                    // A value without a line is taken as the user's, from the window's end.
                    None => match chunk.iter().rev().find(|t| t.role == Role::User) {
                        Some(turn) => turn,
                        None => continue,
                    },
                };
                let block = match source.role {
                    Role::User => HUMAN,
                    Role::Assistant => PERSONA,
                    Role::Other => continue,
                };
                found.push((block, value, source.id));
            }
        }
        let blocks = core_blocks(ctx)?;
        let mut created = Vec::new();
        let mut updates = Vec::new();
        for block in [HUMAN, PERSONA] {
            let mine: Vec<&(&str, PersonaValue, TurnId)> =
                found.iter().filter(|(b, _, _)| *b == block).collect();
            if mine.is_empty() {
                continue;
            }
            let existing = blocks.get(block);
            let mut lines = existing.map_or_else(Vec::new, |m| parse_block(&m.text));
            let mut changed = false;
            for (_, value, _) in &mine {
                changed |= apply_edit(&mut lines, &schema, &value.key, &value.value);
            }
            if !changed {
                continue;
            }
            let text = fit_block(&mut lines, self.params.core_tokens);
            if text.trim().is_empty() {
                continue;
            }
            match existing {
                Some(memory) if memory.text == text => {}
                Some(memory) => {
                    let mut metadata = memory.metadata.clone();
                    let edits = metadata
                        .get("edits")
                        .and_then(|e| e.parse::<u64>().ok())
                        .unwrap_or(1);
                    metadata.insert("edits".into(), (edits + 1).to_string());
                    metadata.insert("last_edit_round".into(), job.created.round.to_string());
                    updates.push(BatchUpdate {
                        id: memory.id,
                        patch: MemoryPatch {
                            text: Some(text),
                            metadata: Some(metadata),
                            ..MemoryPatch::default()
                        },
                        at: job.created,
                    });
                }
                None => {
                    let mut provenance: Vec<TurnId> = Vec::new();
                    for (_, _, turn) in &mine {
                        if !provenance.contains(turn) {
                            provenance.push(*turn);
                        }
                    }
                    let mut metadata = Metadata::new();
                    metadata.insert(TAG.into(), CORE.into());
                    metadata.insert(BLOCK.into(), block.into());
                    metadata.insert("edits".into(), "1".into());
                    metadata.insert("last_edit_round".into(), job.created.round.to_string());
                    created.push(derived_memory(
                        job,
                        MemoryKind::Profile,
                        text,
                        provenance,
                        job.created,
                        metadata,
                    ));
                }
            }
        }
        Ok((created, updates))
    }

    fn run_evict(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: EvictPayload = JobSpec::parse(job)?;
        let span: HashSet<TurnId> = payload.turns.iter().copied().collect();
        let summaries = recursive_summaries(ctx.store(), ctx.user, ctx.agent)?;
        let covered = covered_by(&summaries);
        let queue = queue_tail(ctx.store(), ctx.user, ctx.agent, &covered)?;
        // Everything up to the span's newest turn still in the queue (a later job subsumes
        // an earlier one that never ran). Nothing of the span left: already done.
        let Some(last) = queue
            .iter()
            .rposition(|m| turn_id(m).is_some_and(|id| span.contains(&id)))
        else {
            return Ok(Derived::default());
        };
        let evicted_ids: Vec<TurnId> = queue[..=last].iter().filter_map(turn_id).collect();
        let turns = ctx.turns(&evicted_ids)?;
        if turns.is_empty() {
            return Ok(Derived::default());
        }
        let previous = summaries.last().map(|m| m.text.clone());
        let text = self.recursive_summary(ctx, previous, &turns)?;

        let mut provenance: Vec<TurnId> = Vec::new();
        let mut seen: HashSet<TurnId> = HashSet::new();
        for id in summaries
            .iter()
            .flat_map(|m| m.provenance.iter())
            .chain(evicted_ids.iter())
        {
            if seen.insert(*id) {
                provenance.push(*id);
            }
        }
        let through = turns.last().map_or(job.created, |t| t.at);
        let mut metadata = Metadata::new();
        metadata.insert(TAG.into(), RECURSIVE_SUMMARY.into());
        metadata.insert("covered_turns".into(), provenance.len().to_string());
        metadata.insert("evicted_turns".into(), evicted_ids.len().to_string());
        metadata.insert("through_round".into(), through.round.to_string());
        let covered_count = provenance.len();
        let summary = derived_memory(
            job,
            MemoryKind::Summary { level: 1 },
            text,
            provenance,
            job.created,
            metadata,
        );
        let forgets = summaries
            .iter()
            .map(|m| BatchForget {
                id: m.id,
                reason: format!(
                    "memgpt: superseded by the recursive summary covering {covered_count} turns \
                     (evicted through round {})",
                    through.round
                ),
                cause: ForgetCause::preset(NAME),
                at: job.created,
            })
            .collect();
        let (core, updates) = self.core_edits(ctx, job, &turns)?;
        let mut memories = vec![summary];
        memories.extend(core);
        Ok(Derived {
            memories,
            updates,
            forgets,
            jobs: Vec::new(),
        })
    }

    /// `summarize(previous summary + evicted lines)`, folded over chunks when the eviction is
    /// too large for one task.
    fn recursive_summary(
        &self,
        ctx: &MechanismCtx,
        previous: Option<String>,
        turns: &[Turn],
    ) -> EngineResult<String> {
        let mut summary = previous;
        for chunk in chunks(turns, |t| t.text.len()) {
            let mut texts: Vec<String> = summary.take().into_iter().collect();
            texts.extend(chunk.iter().map(|t| turn_line(t).render()));
            summary = Some(ctx.model.summarize(&texts, 1, self.params.summary_tokens)?);
        }
        Ok(summary.unwrap_or_default())
    }
}

/// Split `items` into consecutive runs of at most [`CHUNK_BYTES`] (a single larger item is a
/// run of its own).
fn chunks<T>(items: &[T], size: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0usize, 0usize);
    for (i, item) in items.iter().enumerate() {
        let n = size(item);
        if i > start && bytes + n > CHUNK_BYTES {
            out.push(&items[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += n;
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// The turn a raw-turn memory stands for.
pub(crate) fn turn_id(memory: &Memory) -> Option<TurnId> {
    memory.provenance.first().copied()
}

/// Walk the agent's active raw-turn memories (optionally one session) from the newest back,
/// handing each to `visit` until it returns false. Pages from the end, so a walk that stops
/// early reads only the tail of a long history.
pub(crate) fn walk_turns_back(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: &str,
    session: Option<&str>,
    mut visit: impl FnMut(Memory) -> bool,
) -> EngineResult<()> {
    let filter = MemoryFilter {
        kinds: vec![KindTag::Turn],
        agent: Some(agent.to_string()),
        session: session.map(str::to_string),
        ..MemoryFilter::default()
    };
    let mut end = store
        .list(
            user,
            &filter,
            Page {
                offset: 0,
                limit: 0,
            },
        )?
        .total;
    while end > 0 {
        let start = end.saturating_sub(WALK_PAGE);
        let page = store.list(
            user,
            &filter,
            Page {
                offset: start,
                limit: end - start,
            },
        )?;
        for memory in page.items.into_iter().rev() {
            if !visit(memory) {
                return Ok(());
            }
        }
        end = start;
    }
    Ok(())
}

/// The newest `n` raw-turn memories of the agent (optionally one session), oldest first.
pub(crate) fn last_turns(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: &str,
    session: Option<&str>,
    n: usize,
) -> EngineResult<Vec<Memory>> {
    let mut out = Vec::new();
    if n > 0 {
        walk_turns_back(store, user, agent, session, |m| {
            out.push(m);
            out.len() < n
        })?;
    }
    out.reverse();
    Ok(out)
}

/// The agent's active recursive summaries, oldest first (normally one).
fn recursive_summaries(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: &str,
) -> EngineResult<Vec<Memory>> {
    let mut metadata = Metadata::new();
    metadata.insert(TAG.into(), RECURSIVE_SUMMARY.into());
    collect_all(
        store,
        user,
        &MemoryFilter {
            kinds: vec![KindTag::Summary],
            agent: Some(agent.to_string()),
            metadata,
            ..MemoryFilter::default()
        },
    )
}

fn covered_by(summaries: &[Memory]) -> HashSet<TurnId> {
    summaries
        .iter()
        .flat_map(|m| m.provenance.iter().copied())
        .collect()
}

/// The FIFO queue: the agent's turns after the newest one in `covered`, oldest first.
fn queue_tail(
    store: &dyn StoreRead,
    user: &UserKey,
    agent: &str,
    covered: &HashSet<TurnId>,
) -> EngineResult<Vec<Memory>> {
    let mut out = Vec::new();
    walk_turns_back(store, user, agent, None, |m| {
        if turn_id(&m).is_some_and(|id| covered.contains(&id)) {
            return false;
        }
        out.push(m);
        true
    })?;
    out.reverse();
    Ok(out)
}

/// The active core memory blocks by block name (the newest when several exist).
fn core_blocks(ctx: &MechanismCtx) -> EngineResult<BTreeMap<String, Memory>> {
    let mut metadata = Metadata::new();
    metadata.insert(TAG.into(), CORE.into());
    let mut out = BTreeMap::new();
    for memory in ctx.all(MemoryFilter {
        kinds: vec![KindTag::Profile],
        metadata,
        ..MemoryFilter::default()
    })? {
        if let Some(block) = memory.metadata.get(BLOCK).cloned() {
            out.insert(block, memory);
        }
    }
    Ok(out)
}

/// Block text as (key, value) lines; a line without "key: " (e.g. edited by hand) keeps an
/// empty key and is carried along unchanged.
fn parse_block(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(": ") {
            Some((k, v)) if !k.is_empty() && !k.contains(' ') => (k.to_string(), v.to_string()),
            _ => (String::new(), l.to_string()),
        })
        .collect()
}

fn render_block(lines: &[(String, String)]) -> String {
    lines
        .iter()
        .map(|(k, v)| {
            if k.is_empty() {
                v.clone()
            } else {
                format!("{k}: {v}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Apply one snapshot value as `core_memory_append` (new key or another value of a
/// multi-valued key) or `core_memory_replace` (a new value of a single-valued key). Returns
/// whether the block changed.
fn apply_edit(
    lines: &mut Vec<(String, String)>,
    schema: &PersonaSchema,
    key: &str,
    value: &str,
) -> bool {
    let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
    if key.trim().is_empty() || value.is_empty() {
        return false;
    }
    let spec = schema.key(key);
    match spec.map(|k| k.kind) {
        Some(KeyKind::Replace | KeyKind::Trajectory) => {
            let current: Vec<&String> = lines
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v)
                .collect();
            if current.len() == 1 && *current[0] == value {
                return false;
            }
            lines.retain(|(k, _)| k != key);
            lines.push((key.to_string(), value));
            true
        }
        kind => {
            if lines.iter().any(|(k, v)| k == key && *v == value) {
                return false;
            }
            if kind == Some(KeyKind::Contradictory) {
                if let Some(opposite) = spec.and_then(|k| k.opposite.as_deref()) {
                    lines.retain(|(k, v)| !(k == opposite && *v == value));
                }
            }
            lines.push((key.to_string(), value));
            true
        }
    }
}

/// Drop the oldest lines until the block fits `limit` tokens; a single line still too long is
/// cut.
fn fit_block(lines: &mut Vec<(String, String)>, limit: usize) -> String {
    while lines.len() > 1 && tokens(&render_block(lines)) > limit {
        lines.remove(0);
    }
    let text = render_block(lines);
    if tokens(&text) > limit {
        truncate_to_tokens(&text, limit)
    } else {
        text
    }
}

/// Greedy packing against a token budget that also pays for each section's header.
pub(crate) struct Packer {
    room: usize,
    used: usize,
    sections: Vec<String>,
}

impl Packer {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            room: budget,
            used: 0,
            sections: Vec::new(),
        }
    }

    fn header(&self, section: &str) -> usize {
        if self.sections.iter().any(|s| s == section) {
            0
        } else {
            HEADER_TOKENS
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.room.saturating_sub(self.used)
    }

    /// Do all `items` (one section) fit together?
    pub(crate) fn fits_all(&self, items: &[ContextItem]) -> bool {
        let Some(first) = items.first() else {
            return true;
        };
        let cost: usize =
            self.header(&first.section) + items.iter().map(item_tokens).sum::<usize>();
        cost <= self.remaining()
    }

    /// Take `item` if it fits.
    pub(crate) fn push(&mut self, item: &ContextItem) -> bool {
        let cost = self.header(&item.section) + item_tokens(item);
        if cost > self.remaining() {
            return false;
        }
        self.used += cost;
        if !self.sections.contains(&item.section) {
            self.sections.push(item.section.clone());
        }
        true
    }

    /// Take `item`, cut to the room left when it does not fit whole; `None` if nothing fits.
    pub(crate) fn push_cut(&mut self, mut item: ContextItem) -> Option<ContextItem> {
        if self.push(&item) {
            return Some(item);
        }
        let overhead = self.header(&item.section) + item_tokens(&item).saturating_sub(item.tokens);
        let cut = truncate_to_tokens(&item.text, self.remaining().saturating_sub(overhead + 1));
        if cut.is_empty() {
            return None;
        }
        item.text = cut;
        item.tokens = tokens(&item.text);
        self.push(&item).then_some(item)
    }
}

impl Mechanism for MemGpt {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        let summaries = recursive_summaries(ctx.store, ctx.user, ctx.agent)?;
        // Turns already summarized, or named by an eviction that is planned but not run yet.
        let mut gone = covered_by(&summaries);
        for job in ctx.store.pending_jobs(ctx.user, usize::MAX)? {
            if job.mechanism == NAME && job.kind == EVICT && job.scope.agent == ctx.agent {
                if let Ok(payload) = JobSpec::parse::<EvictPayload>(&job) {
                    gone.extend(payload.turns);
                }
            }
        }
        let mut queue: VecDeque<(TurnId, usize)> =
            queue_tail(ctx.store, ctx.user, ctx.agent, &gone)?
                .iter()
                .filter_map(|m| Some((turn_id(m)?, tokens(&m.text))))
                .collect();
        // Replay this write's earlier turns: their own `observe` planned evictions the store
        // does not show yet.
        let mut planned = None;
        for t in ctx.earlier.iter().chain(std::iter::once(turn)) {
            queue.push_back((t.id, tokens(&t.text)));
            planned = self.flush(&mut queue);
        }
        let Some(turns) = planned else {
            return Ok(Vec::new());
        };
        let payload = serde_json::to_value(EvictPayload { turns })
            .map_err(|e| EngineError::config(format!("evict payload: {e}")))?;
        Ok(vec![JobSpec::new(EVICT, payload)])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            EVICT => self.run_evict(ctx, job),
            other => Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let store = ctx.store();
        let session = request.session.as_deref();
        let mut packer = Packer::new(request.token_budget);
        let mut notes = Vec::new();

        let mut core = Vec::new();
        let blocks = core_blocks(ctx)?;
        for block in [HUMAN, PERSONA] {
            let Some(memory) = blocks.get(block) else {
                continue;
            };
            let item = ContextItem::from_memory(memory, "core memory", 1.0, tokens(&memory.text))
                .with_part("block_tokens", tokens(&memory.text) as f64)
                .with_part("block_limit", self.params.core_tokens as f64);
            match packer.push_cut(item) {
                Some(item) => core.push(item),
                None => notes.push(format!(
                    "core memory block '{block}' does not fit the budget"
                )),
            }
        }

        let summaries = recursive_summaries(store, ctx.user, ctx.agent)?;
        let mut summary_items = Vec::new();
        if let Some(summary) = summaries.last() {
            let item =
                ContextItem::from_memory(summary, "recursive summary", 1.0, tokens(&summary.text))
                    .with_part("covered_turns", summary.provenance.len() as f64);
            match packer.push_cut(item) {
                Some(item) => summary_items.push(item),
                None => notes.push("the recursive summary does not fit the budget".into()),
            }
        }

        // The FIFO queue, newest first while it fits.
        let queue = queue_tail(store, ctx.user, ctx.agent, &covered_by(&summaries))?;
        let in_queue: HashSet<MemoryId> = queue.iter().map(|m| m.id).collect();
        let mut recent = Vec::new();
        let shown: Vec<&Memory> = queue
            .iter()
            .filter(|m| session.is_none_or(|s| m.scope.session == s))
            .collect();
        for (age, memory) in shown.iter().rev().enumerate() {
            let text = speaker_text(memory);
            let mut item = ContextItem::from_memory(memory, "recent messages", 1.0, tokens(&text))
                .with_part("queue_position", age as f64);
            item.text = text;
            if !packer.push(&item) {
                notes.push(format!(
                    "recent messages: {} of {} queued turns fit the budget",
                    recent.len(),
                    shown.len()
                ));
                break;
            }
            recent.push(item);
        }
        recent.reverse();

        // archival_memory_search(query, page) over turns outside the queue.
        let wanted = self.params.page_size * self.params.max_pages;
        let hits = search(
            ctx,
            &request.query,
            &[KindTag::Turn],
            session,
            self.retriever,
            (wanted + in_queue.len()).clamp(1, 10_000),
        )?;
        let archival_hits: Vec<_> = hits
            .iter()
            .filter(|h| !in_queue.contains(&h.memory.id))
            .take(wanted)
            .collect();
        let mut archival = Vec::new();
        if archival_hits.is_empty() {
            notes.push("archival_memory_search: no results".into());
        }
        for (page, results) in archival_hits.chunks(self.params.page_size).enumerate() {
            let before = archival.len();
            for (i, hit) in results.iter().enumerate() {
                let rank = page * self.params.page_size + i + 1;
                let item = hit_item(hit, "archival")
                    .with_part("page", (page + 1) as f64)
                    .with_part("rank", rank as f64);
                if !packer.push(&item) {
                    break;
                }
                archival.push(item);
            }
            let taken = archival.len() - before;
            notes.push(format!(
                "archival_memory_search(page {}): {taken} of {} results",
                page + 1,
                results.len()
            ));
            if taken < results.len() {
                notes.push("archival paging stopped: the budget is used up".into());
                break;
            }
        }

        let mut items = core;
        items.extend(summary_items);
        items.extend(archival);
        items.extend(recent);
        Ok(Recall {
            context: build_context(NAME, &request.query, items, request.token_budget, notes),
            effects: Derived::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mnemos_core::{Scope, StateFilter};
    use mnemos_embed::HashEmbedder;
    use mnemos_engine::NewTurn;
    use mnemos_offline::OfflineModel;

    use super::*;
    use crate::testing::{memories_of, test_engine};
    use mnemos_core::MemoryState;
    use mnemos_engine::{Engine, PresetSpec};

    fn engine_with(params: &str, inline: bool) -> Engine {
        test_engine(NAME, params, inline)
    }

    fn scope() -> Scope {
        Scope::new("t", "u", "a", "s1").unwrap()
    }

    fn user() -> UserKey {
        scope().user_key()
    }

    fn say(engine: &Engine, role: Role, text: &str) {
        let mut turn = NewTurn::user(scope(), text);
        turn.role = role;
        engine.add(vec![turn]).unwrap();
    }

    fn list(engine: &Engine, kind: &str, state: StateFilter) -> Vec<Memory> {
        memories_of(engine, &user(), kind, state)
    }

    fn active_summaries(engine: &Engine) -> Vec<Memory> {
        list(engine, "summary", StateFilter::Active)
    }

    const FILLER: &[&str] = &[
        "We talked about the weather being rainy again this week.",
        "The train to the city was late by twenty minutes this morning.",
        "I cooked a big pot of vegetable soup for dinner yesterday.",
        "My neighbour is painting his fence a bright shade of green.",
        "There is a new bakery near the station selling sourdough bread.",
        "The library extended its opening hours on weekends.",
        "I watched a documentary about deep sea creatures last night.",
        "Our football team lost the match on Saturday afternoon.",
    ];

    #[test]
    fn params_validate_and_registry_knows_the_preset() {
        assert!(crate::names().contains(&NAME));
        assert!(MemGptParams::default().validate().is_ok());
        let bad = MemGptParams {
            page_size: 0,
            ..MemGptParams::default()
        };
        assert!(bad.validate().unwrap_err().contains("page_size"));
        let spec = PresetSpec {
            name: NAME.into(),
            params: toml::from_str("buffer_size = 3").unwrap(),
        };
        assert!(crate::build(&spec).is_err());
    }

    #[test]
    fn overflow_evicts_into_a_recursive_summary_covering_the_evicted_turns() {
        let engine = engine_with("buffer_tokens = 60", true);
        say(
            &engine,
            Role::User,
            "My sister Lena lives in Toronto and teaches piano.",
        );
        for line in FILLER {
            say(&engine, Role::User, line);
        }
        let summaries = active_summaries(&engine);
        assert_eq!(summaries.len(), 1, "one live recursive summary");
        let summary = &summaries[0];
        assert_eq!(summary.kind, MemoryKind::Summary { level: 1 });
        assert_eq!(
            summary.metadata.get(TAG).map(String::as_str),
            Some(RECURSIVE_SUMMARY)
        );
        let turns = list(&engine, "turn", StateFilter::Active);
        assert_eq!(
            turns.len(),
            1 + FILLER.len(),
            "evicted turns stay as archival memory"
        );
        // The provenance is a prefix of the dialogue, starting with the first turn.
        let first = turn_id(&turns[0]).unwrap();
        assert_eq!(summary.provenance.first(), Some(&first));
        let covered: HashSet<TurnId> = summary.provenance.iter().copied().collect();
        let n = covered.len();
        assert!(n >= 2 && n < turns.len(), "covered {n} of {}", turns.len());
        for (i, t) in turns.iter().enumerate() {
            assert_eq!(covered.contains(&turn_id(t).unwrap()), i < n);
        }
        // Every eviction superseded the previous summary with a reason.
        let forgotten = list(&engine, "summary", StateFilter::Forgotten);
        for old in &forgotten {
            let MemoryState::Forgotten { reason, .. } = &old.state else {
                panic!("not forgotten")
            };
            assert!(reason.starts_with("memgpt: superseded"), "{reason}");
            assert!(old.provenance.iter().all(|id| covered.contains(id)));
        }
        // The queue left is within the limit.
        let queue_tokens: usize = turns[n..].iter().map(|m| tokens(&m.text)).sum();
        assert!(queue_tokens <= 60, "{queue_tokens}");
    }

    #[test]
    fn replaying_an_eviction_creates_no_second_summary() {
        let engine = engine_with("buffer_tokens = 40", false);
        for line in &FILLER[..4] {
            say(&engine, Role::User, line);
        }
        let pending = engine
            .pending_jobs(Some(&user()))
            .map(|jobs| jobs.into_iter().map(|p| p.job).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(pending.len(), 1, "one overflow plans one eviction");
        let job = pending[0].clone();
        assert_eq!(job.kind, EVICT);
        let before = engine.dry_run_job(&user(), job.id).unwrap();
        assert_eq!(before.memories.len(), 1);
        let report = engine.run_pending(&user()).unwrap();
        assert_eq!(report.ran, 1);
        assert_eq!(active_summaries(&engine).len(), 1);
        // The same payload again (a replay after a crash, or a dry run): nothing to write.
        let again = engine.dry_run_job(&user(), job.id).unwrap();
        assert!(again.is_empty(), "{again:?}");
        let mechanism = MemGpt::new(MemGptParams {
            buffer_tokens: 40,
            ..MemGptParams::default()
        });
        let model = OfflineModel::new(Arc::new(HashEmbedder::default()));
        let owner = user();
        let ctx = engine.mechanism_ctx(&model, &owner, "a");
        assert!(mechanism.run_job(&ctx, &job).unwrap().is_empty());
        assert_eq!(active_summaries(&engine).len(), 1);
    }

    #[test]
    fn one_write_of_many_turns_plans_disjoint_evictions() {
        let engine = engine_with("buffer_tokens = 40", false);
        let turns: Vec<NewTurn> = FILLER.iter().map(|l| NewTurn::user(scope(), *l)).collect();
        engine.add(turns).unwrap();
        let pending = engine
            .pending_jobs(Some(&user()))
            .map(|jobs| jobs.into_iter().map(|p| p.job).collect::<Vec<_>>())
            .unwrap();
        assert!(pending.len() >= 2, "{}", pending.len());
        let mut seen = HashSet::new();
        for job in &pending {
            let payload: EvictPayload = JobSpec::parse(job).unwrap();
            for id in payload.turns {
                assert!(seen.insert(id), "a turn evicted twice");
            }
        }
        engine.run_pending(&user()).unwrap();
        let summaries = active_summaries(&engine);
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0].provenance.len(), seen.len());
    }

    #[test]
    fn core_memory_learns_from_english_and_chinese_lines() {
        let engine = engine_with("buffer_tokens = 32", true);
        say(
            &engine,
            Role::User,
            "My name is Anna and I work as a nurse.",
        );
        say(&engine, Role::Assistant, "Nice to meet you, Anna.");
        say(&engine, Role::User, "我叫小明，我是一名医生。");
        for line in FILLER {
            say(&engine, Role::User, line);
        }
        let core = list(&engine, "profile", StateFilter::Active);
        let human: Vec<&Memory> = core
            .iter()
            .filter(|m| m.metadata.get(BLOCK).map(String::as_str) == Some(HUMAN))
            .collect();
        assert_eq!(human.len(), 1, "one human block");
        let text = &human[0].text;
        // Name and job are single-valued: the Chinese lines replaced the English ones.
        assert!(text.contains("name: 小明"), "{text}");
        assert!(text.contains("job: 医生"), "{text}");
        assert!(!text.contains("Anna") && !text.contains("nurse"), "{text}");
        assert!(tokens(text) <= 256);
        // Every version is in the history, the English one first.
        let history = engine.history(&user(), human[0].id).unwrap();
        assert!(history.len() >= 2);
        assert_eq!(history[0].snapshot.text, "name: Anna\njob: nurse");
        // The provenance points at the turn the block came from; the assistant's unnamed
        // line gave no persona block.
        let turns = list(&engine, "turn", StateFilter::Active);
        assert_eq!(human[0].provenance, vec![turn_id(&turns[0]).unwrap()]);
        assert!(core
            .iter()
            .all(|m| m.metadata.get(BLOCK).map(String::as_str) == Some(HUMAN)));
    }

    #[test]
    fn core_block_stays_under_its_token_limit() {
        let mut lines = Vec::new();
        let schema = PersonaSchema::default_keys();
        for i in 0..40 {
            apply_edit(&mut lines, &schema, "likes", &format!("hobby number {i}"));
        }
        apply_edit(&mut lines, &schema, "name", "Anna");
        let text = fit_block(&mut lines, 32);
        assert!(tokens(&text) <= 32, "{text}");
        assert!(
            text.ends_with("name: Anna"),
            "the newest line survives: {text}"
        );
        assert!(!text.contains("hobby number 0"));
        // Replace vs append vs contradictory.
        let mut lines = Vec::new();
        assert!(apply_edit(&mut lines, &schema, "job", "nurse"));
        assert!(!apply_edit(&mut lines, &schema, "job", "nurse"));
        assert!(apply_edit(&mut lines, &schema, "job", "doctor"));
        assert!(apply_edit(&mut lines, &schema, "likes", "jazz"));
        assert!(apply_edit(&mut lines, &schema, "dislikes", "jazz"));
        assert_eq!(render_block(&lines), "job: doctor\ndislikes: jazz");

        let engine = engine_with("buffer_tokens = 32\ncore_tokens = 24", true);
        for i in 0..12 {
            say(
                &engine,
                Role::User,
                &format!("I love hiking trail number {i} near the lake."),
            );
        }
        for m in list(&engine, "profile", StateFilter::Active) {
            assert!(tokens(&m.text) <= 24, "{}", m.text);
        }
    }

    #[test]
    fn recall_pages_archival_hits_for_facts_out_of_the_queue() {
        let engine = engine_with("buffer_tokens = 60\npage_size = 2", true);
        say(
            &engine,
            Role::User,
            "My sister Lena lives in Toronto and teaches piano.",
        );
        for line in FILLER {
            say(&engine, Role::User, line);
        }
        let request = RecallRequest {
            query: "Where does my sister Lena live?".into(),
            token_budget: 600,
            session: None,
            as_of: None,
            min_relevance: None,
            deadline: mnemos_core::Deadline::NONE,
        };
        let ctx = engine.recall(&user(), "a", &request).unwrap();
        assert!(ctx.tokens <= 600);
        let archival: Vec<&ContextItem> = ctx
            .items
            .iter()
            .filter(|i| i.section == "archival")
            .collect();
        let lena = archival
            .iter()
            .find(|i| i.text.contains("Toronto"))
            .expect("the old fact comes from archival search");
        let parts: Vec<&str> = lena.breakdown.iter().map(|p| p.name.as_str()).collect();
        assert!(
            parts.contains(&"cosine") && parts.contains(&"page"),
            "{parts:?}"
        );
        assert!(archival.len() <= 2 * 3);
        // Archival never repeats what the queue shows.
        let recent: HashSet<MemoryId> = ctx
            .items
            .iter()
            .filter(|i| i.section == "recent messages")
            .map(|i| i.memory_id)
            .collect();
        assert!(!recent.is_empty());
        assert!(archival.iter().all(|i| !recent.contains(&i.memory_id)));
        assert!(ctx.items.iter().any(|i| i.section == "recursive summary"));
        assert!(ctx
            .notes
            .iter()
            .any(|n| n.starts_with("archival_memory_search(page 1)")));
        // Prompt order: summary, archival, recent.
        let sections: Vec<&str> = ctx.items.iter().map(|i| i.section.as_str()).collect();
        let first_recent = sections
            .iter()
            .position(|s| *s == "recent messages")
            .unwrap();
        assert!(sections[..first_recent].contains(&"archival"));
    }

    #[test]
    fn recall_respects_every_budget() {
        let engine = engine_with("buffer_tokens = 60", true);
        say(
            &engine,
            Role::User,
            "My name is Anna and I work as a nurse.",
        );
        for line in FILLER {
            say(&engine, Role::User, line);
        }
        for budget in [0, 5, 20, 50, 120, 400, 5000] {
            let ctx = engine
                .recall(
                    &user(),
                    "a",
                    &RecallRequest {
                        query: "What is my job?".into(),
                        token_budget: budget,
                        session: None,
                        as_of: None,
                        min_relevance: None,
                        deadline: mnemos_core::Deadline::NONE,
                    },
                )
                .unwrap();
            assert!(ctx.tokens <= budget, "{budget}: {}", ctx.tokens);
        }
    }
}
