//! Calibration: a new node against the current nodes it may contradict.
//!
//! Two checks, both with the memory model's `conflicts` task:
//! - **node against node** (M⁴): the new node's text against the closest current nodes of its
//!   chains, at most `calibrate_checks`;
//! - **statement against statement**: node texts are summaries, and a summary of a long
//!   session rarely keeps one stated fact, so a turn of the new node that announces a change
//!   ([`mnemos_text::announces_change`]: "I moved", "… now", "换工作") is also checked against
//!   the older turns most like it (at most `statement_checks`, found by a hybrid search over
//!   turns that current nodes cover). The gate keeps the calls few: a few percent of chat turns
//!   announce a change.
//!
//! A conflict merges the stale node into the new one: the new node's text leads with the
//! model's merge of the two statements (the newer with a record of the older), then the merge
//! of the two nodes' texts; it carries both provenances and the union of the categories. The
//! stale node gets a `valid_to` and the id of the node that superseded it. The stale turns are
//! listed on the new node ([`STALE_TURNS_KEY`]) so that recall does not show them as evidence.

use std::collections::{HashMap, HashSet};

use mnemos_core::{
    BatchUpdate, Job, KindTag, Memory, MemoryId, MemoryModelExt, MemoryPatch, Moment,
    RetrieverKind, TurnId,
};

use super::chains::{self, categories_of, CALIBRATED_FROM_KEY, SUPERSEDED_BY_KEY};
use super::{M4Params, CANDIDATES};
use crate::primitives::union_provenance;
use crate::retrieval::{search_shaped, SearchShape};
use mnemos_engine::mechanism::{Derived, MechanismCtx};
use mnemos_engine::EngineResult;

/// Calibration looks for statements like the new one, not for the turns around them, and
/// among the older turns too that the engine's write path already found superseded.
const LIKENESS: SearchShape = SearchShape {
    second_hop: None,
    split_questions: false,
    memory_type: None,
    likeness_only: true,
    as_of: None,
    include_superseded: true,
    min_relevance: None,
};

/// Metadata key on a calibrated node: the turns whose statements it supersedes (ids,
/// comma-separated).
pub const STALE_TURNS_KEY: &str = "m4_stale_turns";

/// One check to make: an older node, and when the check is statement-level, the two turns.
struct Candidate<'a> {
    stale: &'a Memory,
    /// The older turn (from the search) and the new one.
    statements: Option<(Memory, &'a Memory)>,
    /// The engine's write path already found the older statement replaced by the new one.
    written: bool,
}

/// Check `node` (built from `fresh` turns) against `current` nodes; merge what conflicts.
pub(super) fn calibrate(
    ctx: &MechanismCtx,
    params: &M4Params,
    job: &Job,
    mut node: Memory,
    fresh: &[Memory],
    current: &[Memory],
    derived: &mut Derived,
) -> EngineResult<Memory> {
    if (params.calibrate_checks == 0 && params.statement_checks == 0) || current.is_empty() {
        return Ok(node);
    }
    let superseded: HashSet<_> = derived.updates.iter().map(|u| u.id).collect();
    let mut candidates = chain_candidates(ctx, params, &node, current)?;
    candidates.extend(written_candidates(ctx, &node, fresh, current)?);
    candidates.extend(statement_candidates(ctx, params, &node, fresh, current)?);
    let mut merged_from: Vec<MemoryId> = Vec::new();
    let mut stale_turns: Vec<String> = Vec::new();
    for candidate in candidates {
        let stale = candidate.stale;
        if superseded.contains(&stale.id) || merged_from.contains(&stale.id) {
            continue;
        }
        let text = match candidate.statements {
            None => {
                if !ctx.model.conflicts(&stale.text, &node.text)? {
                    continue;
                }
                ctx.model.merge(&stale.text, &node.text)?
            }
            Some((ref old, new)) => {
                if !candidate.written && !ctx.model.conflicts(&old.text, &new.text)? {
                    continue;
                }
                stale_turns.extend(old.provenance.iter().map(ToString::to_string));
                let statement = ctx.model.merge(&old.text, &new.text)?;
                format!("{statement} {}", ctx.model.merge(&stale.text, &node.text)?)
            }
        };
        node.text = text;
        node.provenance = union_provenance([stale, &node]);
        // What the stale node already held as a record stays a record.
        if let Some(inherited) = stale.metadata.get(STALE_TURNS_KEY) {
            stale_turns.extend(inherited.split(',').map(str::to_string));
        }
        let mut all = categories_of(&node);
        for c in categories_of(stale) {
            if !all.contains(&c) {
                all.push(c);
            }
        }
        chains::set_categories(&mut node.metadata, &all);
        merged_from.push(stale.id);
        derived.updates.push(supersede(stale, &node, job.created));
    }
    if !merged_from.is_empty() {
        let ids: Vec<String> = merged_from.iter().map(ToString::to_string).collect();
        node.metadata
            .insert(CALIBRATED_FROM_KEY.to_string(), ids.join(","));
    }
    if !stale_turns.is_empty() {
        stale_turns.sort_unstable();
        stale_turns.dedup();
        node.metadata
            .insert(STALE_TURNS_KEY.to_string(), stale_turns.join(","));
    }
    Ok(node)
}

/// The closest current nodes of the node's chains.
fn chain_candidates<'a>(
    ctx: &MechanismCtx,
    params: &M4Params,
    node: &Memory,
    current: &'a [Memory],
) -> EngineResult<Vec<Candidate<'a>>> {
    if params.calibrate_checks == 0 {
        return Ok(Vec::new());
    }
    let categories = categories_of(node);
    let in_chain: HashMap<_, &Memory> = current
        .iter()
        .filter(|m| categories_of(m).iter().any(|c| categories.contains(c)))
        .map(|m| (m.id, m))
        .collect();
    let hits = search_shaped(
        ctx,
        &node.text,
        &[KindTag::ChainNode],
        None,
        RetrieverKind::Hybrid,
        CANDIDATES,
        LIKENESS,
    )?;
    Ok(hits
        .iter()
        .filter_map(|h| in_chain.get(&h.memory.id).copied())
        .take(params.calibrate_checks)
        .map(|stale| Candidate {
            stale,
            statements: None,
            written: false,
        })
        .collect())
}

/// The older turns whose facts the engine's write path found replaced by the node's own turns
/// (`mnemos_engine::truth`), each with the current node that covers it: statement checks the rules
/// already answered, so calibration needs no model call to find them.
fn written_candidates<'a>(
    ctx: &MechanismCtx,
    node: &Memory,
    fresh: &'a [Memory],
    current: &'a [Memory],
) -> EngineResult<Vec<Candidate<'a>>> {
    let mine: HashSet<&TurnId> = node.provenance.iter().collect();
    let new_turns: HashMap<MemoryId, &Memory> = fresh
        .iter()
        .filter(|t| t.provenance.iter().any(|p| mine.contains(p)))
        .map(|t| (t.id, t))
        .collect();
    if new_turns.is_empty() {
        return Ok(Vec::new());
    }
    let table = ctx.facts()?;
    // (older turn, newer turn) for each fact one of the node's turns replaced.
    let mut pairs: Vec<(MemoryId, &Memory)> = Vec::new();
    for entry in table.entries().iter().filter(|e| e.agent == ctx.agent) {
        let newer = entry
            .superseded_by
            .and_then(|by| table.get(by))
            .and_then(|f| f.source);
        let (Some(old), Some(new)) = (entry.source, newer.and_then(|n| new_turns.get(&n))) else {
            continue;
        };
        if old != new.id && !pairs.iter().any(|(o, _)| *o == old) {
            pairs.push((old, new));
        }
    }
    let olds: Vec<MemoryId> = pairs.iter().map(|(o, _)| *o).collect();
    let covering: HashMap<TurnId, &Memory> = current
        .iter()
        .flat_map(|n| n.provenance.iter().map(move |t| (*t, n)))
        .collect();
    let mut out = Vec::new();
    for old in ctx.store().memories(ctx.user, &olds)? {
        let Some((_, new)) = pairs.iter().find(|(o, _)| *o == old.id) else {
            continue;
        };
        let Some(stale) = old.provenance.iter().find_map(|t| covering.get(t)) else {
            continue;
        };
        out.push(Candidate {
            stale,
            statements: Some((old, *new)),
            written: true,
        });
    }
    Ok(out)
}

/// For each of the node's turns that announces a change, the older turns most like it that a
/// current node covers.
fn statement_candidates<'a>(
    ctx: &MechanismCtx,
    params: &M4Params,
    node: &Memory,
    fresh: &'a [Memory],
    current: &'a [Memory],
) -> EngineResult<Vec<Candidate<'a>>> {
    if params.statement_checks == 0 {
        return Ok(Vec::new());
    }
    let mine: HashSet<&TurnId> = node.provenance.iter().collect();
    let analyzer = mnemos_text::Analyzer::shared();
    let announcing: Vec<&Memory> = fresh
        .iter()
        .filter(|t| t.provenance.iter().any(|p| mine.contains(p)))
        .filter(|t| mnemos_text::announces_change(analyzer, &t.text))
        .collect();
    if announcing.is_empty() {
        return Ok(Vec::new());
    }
    let covering: HashMap<TurnId, &Memory> = current
        .iter()
        .flat_map(|n| n.provenance.iter().map(move |t| (*t, n)))
        .collect();
    let mut out = Vec::new();
    for new in announcing {
        let hits = search_shaped(
            ctx,
            &new.text,
            &[KindTag::Turn],
            None,
            RetrieverKind::Hybrid,
            CANDIDATES,
            LIKENESS,
        )?;
        let older = hits
            .into_iter()
            .filter(|h| h.memory.scope.session != new.scope.session)
            .filter_map(|h| {
                let stale = h.memory.provenance.iter().find_map(|t| covering.get(t))?;
                Some(Candidate {
                    stale,
                    statements: Some((h.memory, new)),
                    written: false,
                })
            })
            .take(params.statement_checks);
        out.extend(older);
    }
    Ok(out)
}

/// The stale node's end of validity, with the node that superseded it.
fn supersede(stale: &Memory, by: &Memory, at: Moment) -> BatchUpdate {
    let mut metadata = stale.metadata.clone();
    metadata.insert(SUPERSEDED_BY_KEY.to_string(), by.id.to_string());
    BatchUpdate {
        id: stale.id,
        patch: MemoryPatch {
            metadata: Some(metadata),
            valid_to: Some(Some(by.valid_from.max(stale.valid_from))),
            superseded_by: Some(Some(by.id)),
            ..MemoryPatch::default()
        },
        at,
    }
}
