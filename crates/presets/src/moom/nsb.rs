//! Narrative Summarization Branch (MOOM §3.1): the plot timeline at three time scales.
//!
//! Our reading of §3.1 and eq. 1–2:
//! - **Level 1 — units.** Every θ1 completed rounds (a round = a user utterance and the replies
//!   to it) are packaged verbatim into one unit I⁽¹⁾ (`MemoryKind::Exchange`, the rounds'
//!   lines in order). A unit is not a summary: it is the finest plot scale, kept for recall and
//!   competing under forgetting, but it counts as raw text, not as an extracted memory.
//! - **Level 2.** Every θ2 units are summarized into one S⁽²⁾ (`Summary { level: 2 }`).
//! - **Level 3.** Every θ3 level-2 summaries are summarized into one S⁽³⁾
//!   (`Summary { level: 3 }`). The paper runs exactly two summarization stages; so do we.
//! - **Boundaries.** Units are aligned to multiples of θ1 rounds. With `flush_on_session_end`,
//!   closing a session packages its unfinished rounds into a shorter unit and summarizes the
//!   units that no level-2 summary covers yet (as MOOM treats each LoCoMo session as a unit,
//!   Appendix G); the next unit then resumes at the following multiple of θ1.
//! - **Provenance.** Every node lists the turns below it (a level-3 summary lists every turn of
//!   its 150 rounds), and records the rounds it spans (`moom.from_round`, `moom.to_round`).
//! - **Jobs.** Packaging and each summarization are durable jobs: the round that completes a
//!   unit plans a `package` job; a package that completes θ2 units plans a `fold` job for
//!   level 2, which in turn may plan level 3. Ingest never waits for a summary.
//! - Nodes forgotten by the forgetting policy still bound the timeline (what they covered is
//!   not packaged again) and still feed the summaries above them.

use mnemos_core::{
    Job, KindTag, Memory, MemoryFilter, MemoryKind, MemoryModelExt, Metadata, Page, StateFilter,
};

use crate::primitives::{derived_memory, union_provenance};
use mnemos_engine::mechanism::{Derived, JobSpec, MechanismCtx};
use mnemos_engine::primitives::speaker_text;
use mnemos_engine::EngineResult;

/// Metadata key: which tree level a plot node is on ("1", "2", "3").
pub const LEVEL_KEY: &str = "moom.level";
/// Metadata keys: the first and last round a plot node covers.
pub const FROM_ROUND_KEY: &str = "moom.from_round";
pub const TO_ROUND_KEY: &str = "moom.to_round";

pub const JOB_PACKAGE: &str = "package";
pub const JOB_FOLD: &str = "fold";

/// Payload of a `package` job.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PackagePayload {
    /// The last round to package.
    pub to_round: u64,
    /// Package even a short tail, and fold what is left (session end).
    #[serde(default)]
    pub flush: bool,
}

/// Payload of a `fold` job.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FoldPayload {
    /// The level to build (2 or 3).
    pub level: u8,
    #[serde(default)]
    pub flush: bool,
}

/// The tree's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub theta1: u64,
    pub theta2: usize,
    pub theta3: usize,
    pub summary_tokens: usize,
    pub top_summary_tokens: usize,
}

impl Shape {
    /// How many nodes of `level − 1` one node of `level` gathers.
    fn fan_in(&self, level: u8) -> usize {
        if level == 2 {
            self.theta2
        } else {
            self.theta3
        }
    }

    fn tokens(&self, level: u8) -> usize {
        if level == 2 {
            self.summary_tokens
        } else {
            self.top_summary_tokens
        }
    }
}

/// The level a plot node is on (1 = unit), from its metadata.
pub fn level_of(memory: &Memory) -> Option<u8> {
    memory.metadata.get(LEVEL_KEY)?.parse().ok()
}

/// The (first, last) rounds a plot node covers.
pub fn span_of(memory: &Memory) -> Option<(u64, u64)> {
    let from = memory.metadata.get(FROM_ROUND_KEY)?.parse().ok()?;
    let to = memory.metadata.get(TO_ROUND_KEY)?.parse().ok()?;
    Some((from, to))
}

/// This agent's plot nodes of one level, in any state.
fn level_filter(ctx: &MechanismCtx, level: u8) -> MemoryFilter {
    let kind = if level == 1 {
        KindTag::Exchange
    } else {
        KindTag::Summary
    };
    let mut metadata = Metadata::new();
    metadata.insert(LEVEL_KEY.into(), level.to_string());
    MemoryFilter {
        kinds: vec![kind],
        agent: Some(ctx.agent.to_string()),
        state: StateFilter::All,
        metadata,
        ..MemoryFilter::default()
    }
}

/// Every plot node of one level (any state), in timeline order.
pub fn nodes(ctx: &MechanismCtx, level: u8) -> EngineResult<Vec<Memory>> {
    let mut all = ctx.all(level_filter(ctx, level))?;
    all.sort_by_key(|m| span_of(m).map_or(m.created.round, |(from, _)| from));
    Ok(all)
}

/// The last round the nodes of one level cover (None before the first). Nodes of a level are
/// made in timeline order, so the newest few hold it: only the end of the list is read.
pub fn last_covered(ctx: &MechanismCtx, level: u8) -> EngineResult<Option<u64>> {
    const TAIL: usize = 16;
    let store = ctx.store();
    let filter = level_filter(ctx, level);
    let total = store
        .list(
            ctx.user,
            &filter,
            Page {
                offset: 0,
                limit: 1,
            },
        )?
        .total;
    let offset = total.saturating_sub(TAIL);
    let page = store.list(
        ctx.user,
        &filter,
        Page {
            offset,
            limit: TAIL,
        },
    )?;
    Ok(page
        .items
        .iter()
        .filter_map(|m| span_of(m).map(|(_, to)| to))
        .max())
}

/// The last round any unit covers (None before the first unit).
pub fn last_packaged_round(ctx: &MechanismCtx) -> EngineResult<Option<u64>> {
    last_covered(ctx, 1)
}

/// The nodes of `below` that start after `covered` (what no node of the level above holds yet).
fn not_covered(below: &[Memory], covered: Option<u64>) -> Vec<&Memory> {
    below
        .iter()
        .filter(|m| match (span_of(m), covered) {
            (Some((from, _)), Some(c)) => from > c,
            (Some(_), None) => true,
            (None, _) => false,
        })
        .collect()
}

/// This agent's active raw-turn memories of rounds `from..=to`, oldest first. Reads the turn
/// list backwards from its end, so the cost follows the range, not the history.
pub fn turns_in_rounds(ctx: &MechanismCtx, from: u64, to: u64) -> EngineResult<Vec<Memory>> {
    const PAGE: usize = 64;
    let store = ctx.store();
    let filter = MemoryFilter {
        kinds: vec![KindTag::Turn],
        agent: Some(ctx.agent.to_string()),
        ..MemoryFilter::default()
    };
    let total = store
        .list(
            ctx.user,
            &filter,
            Page {
                offset: 0,
                limit: 1,
            },
        )?
        .total;
    let mut out = Vec::new();
    let mut end = total;
    while end > 0 {
        let start = end.saturating_sub(PAGE);
        let page = store.list(
            ctx.user,
            &filter,
            Page {
                offset: start,
                limit: end - start,
            },
        )?;
        let mut before_range = false;
        for memory in page.items.into_iter().rev() {
            if memory.created.round < from {
                before_range = true;
                break;
            }
            if memory.created.round <= to {
                out.push(memory);
            }
        }
        if before_range {
            break;
        }
        end = start;
    }
    out.reverse();
    Ok(out)
}

/// Package the rounds after the last unit up to `to_round` into a unit; plan level 2 when θ2
/// units wait for it (or, flushing, when any does).
pub fn package(ctx: &MechanismCtx, job: &Job, shape: &Shape) -> EngineResult<Derived> {
    let payload: PackagePayload = JobSpec::parse(job)?;
    let from = last_packaged_round(ctx)?.map_or(0, |to| to + 1);
    let mut derived = Derived::default();
    if from > payload.to_round {
        return Ok(derived);
    }
    let turns = turns_in_rounds(ctx, from, payload.to_round)?;
    let mut waiting = not_covered(&nodes(ctx, 1)?, last_covered(ctx, 2)?).len();
    if !turns.is_empty() {
        let text = turns
            .iter()
            .map(speaker_text)
            .collect::<Vec<_>>()
            .join("\n");
        let unit = derived_memory(
            job,
            MemoryKind::Exchange,
            text,
            union_provenance(turns.iter()),
            job.created,
            node_metadata(1, from, payload.to_round),
        );
        derived.memories.push(unit);
        waiting += 1;
    }
    if waiting >= shape.theta2 || (payload.flush && waiting > 0) {
        derived.jobs.push(JobSpec::new(
            JOB_FOLD,
            serde_json::json!({ "level": 2, "flush": payload.flush }),
        ));
    }
    Ok(derived)
}

/// Summarize the first fan-in nodes of `level − 1` that no `level` node covers (all of them
/// when flushing); plan the next level when it has enough waiting.
pub fn fold(ctx: &MechanismCtx, job: &Job, shape: &Shape) -> EngineResult<Derived> {
    let payload: FoldPayload = JobSpec::parse(job)?;
    let level = payload.level;
    let mut derived = Derived::default();
    if !(2..=3).contains(&level) {
        return Err(mnemos_engine::EngineError::Job {
            id: job.id.to_string(),
            message: format!("fold level {level}: expected 2 or 3"),
        });
    }
    let below = nodes(ctx, level - 1)?;
    let waiting = not_covered(&below, last_covered(ctx, level)?);
    let fan_in = shape.fan_in(level);
    let take = if waiting.len() >= fan_in {
        fan_in
    } else if payload.flush && !waiting.is_empty() {
        waiting.len()
    } else {
        return Ok(derived);
    };
    let group = &waiting[..take];
    let texts: Vec<String> = group.iter().map(|m| m.text.clone()).collect();
    let text = ctx.model.summarize(&texts, level, shape.tokens(level))?;
    let (Some((from, _)), Some((_, to))) = (
        group.first().and_then(|m| span_of(m)),
        group.last().and_then(|m| span_of(m)),
    ) else {
        return Ok(derived);
    };
    let summary = derived_memory(
        job,
        MemoryKind::Summary { level },
        text,
        union_provenance(group.iter().copied()),
        job.created,
        node_metadata(level, from, to),
    );
    derived.memories.push(summary);
    if level < 3 {
        let above = nodes(ctx, level)?;
        let above_waiting = not_covered(&above, last_covered(ctx, level + 1)?).len() + 1;
        // Flushing closes level 2 only: a level-3 summary always gathers θ3 level-2 ones.
        if above_waiting >= shape.theta3 {
            derived.jobs.push(JobSpec::new(
                JOB_FOLD,
                serde_json::json!({ "level": level + 1, "flush": false }),
            ));
        }
    }
    // More than one group may be waiting (e.g. after a retry): fold again.
    if waiting.len() - take >= fan_in {
        derived.jobs.push(JobSpec::new(
            JOB_FOLD,
            serde_json::json!({ "level": level, "flush": payload.flush }),
        ));
    }
    Ok(derived)
}

fn node_metadata(level: u8, from: u64, to: u64) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert(LEVEL_KEY.into(), level.to_string());
    metadata.insert(FROM_ROUND_KEY.into(), from.to_string());
    metadata.insert(TO_ROUND_KEY.into(), to.to_string());
    metadata
}
