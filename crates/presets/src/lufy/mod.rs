//! LUFY (Sumida et al.): remember what psychology says a person remembers, forget the rest.
//!
//! How it maps to the paper:
//! - **Memory.** A user profile, one summary per closed session and utterance pairs
//!   (`MemoryKind::Exchange`: a user utterance with the bot's reply, provenance = their turns).
//!   `end_session` plans one `lufy_session` job that builds the session's pairs, summarizes
//!   the session, rebuilds the profile and forgets.
//! - **Signals** ([`signals::utterance_signals`]): per pair, arousal A of the user utterance,
//!   surprise P (perplexity of the utterance after the previous bot turn, capped at
//!   `perplexity_cap`), importance L (the model's 1–10 rating of the exchange), R1 (times
//!   retrieved first, and so used) and R2 (times retrieved second, and so not used), stored in
//!   the pair's `metrics.extra`. They are normalized to [0, 1] with fixed bounds
//!   ([`strength::Scale`]).
//! - **Importance.** S = Σ wᵢ·xᵢ with `weights = "fitted"` (fitted on LUFY's annotations by
//!   `mnemos train lufy`, shipped in `data/lufy-weights.json`) or `"paper"` (Table 2), and
//!   importance = exp(−Δt / S). Δt counts closed sessions since the pair was last accessed:
//!   the session clock is the number of sessions summarized so far, so at the end of the
//!   session that made a pair Δt = 1 — the paper's setting for fitting the weights.
//! - **Forgetting.** After each session only the top `keep_share` (10%) of the session's new
//!   pairs by importance stay (at least one, rounded to the nearest whole pair as the paper
//!   does); the others, their raw turns and the bot turns that open the session before any
//!   user utterance are forgotten with a reason naming importance, strength and rank. With
//!   `rank_over = "all"` the surviving pairs of earlier sessions compete too, under their decayed
//!   importance, for the room the kept pairs had plus the session's share. The profile and the
//!   summaries stay.
//! - **Retrieval.** Pairs whose cosine similarity to the query reaches
//!   `similarity_threshold` are scored cosine + α·importance (α = `importance_weight`, 0.1).
//!   The paper's 0.8 threshold belongs to its embedder; the default here was calibrated for
//!   the default MiniLM embedder (docs/results/lufy.md). The first hit is R1, the second R2:
//!   the recall's effects add to their counters and restart the first one's clock.
//! - **Context.** As the paper's prompt: the summary of past conversations (the profile and
//!   the `summaries` session summaries closest to the query), the `recent_turns` (5) most
//!   recent turns, and the top memories within the budget (packed first: they are what the
//!   query asked for, then the recent turns, then the summaries).
//!
//! Model calls: three per user utterance (arousal, surprise, importance) when its session
//! closes, plus the summary and the profile; recall makes none.

pub mod signals;
pub mod strength;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::{Line, MAX_TASK_BYTES};
use mnemos_core::{
    BatchForget, BatchUpdate, ForgetCause, Hit, Job, KindTag, Memory, MemoryFilter, MemoryKind,
    MemoryModelExt, MemoryPatch, Metadata, Moment, RetrieverKind, StateFilter, Turn, TurnId,
};

use super::retrieval::{hit_item, search};
use super::PresetParams;
use crate::primitives::{chunks_by_bytes, derived_memory, turn_line, union_provenance};
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, speaker_text, tokens};
use mnemos_engine::{EngineError, EngineResult};
use strength::{importance, strength, Scale, Signals, Weights, PAPER_WEIGHTS};

pub const NAME: &str = "lufy";
pub const SUMMARY: &str = "LUFY (Sumida et al.): utterance pairs weighted by arousal, surprise, \
     importance and retrieval; only the top 10% survive each session";

const JOB_SESSION: &str = "lufy_session";
const SECTION_SUMMARY: &str = "summary of past conversations";
const SECTION_RECENT: &str = "recent utterances";
const SECTION_MEMORIES: &str = "related memories";
/// Bytes of session text per summarize call (half a task, leaving room for labels).
const CHUNK_BYTES: usize = MAX_TASK_BYTES / 2;

/// `metrics.extra` keys of a pair.
pub const AROUSAL: &str = "arousal";
pub const SURPRISE: &str = "surprise";
pub const RATED_IMPORTANCE: &str = "rated_importance";
pub const R1: &str = "r1";
pub const R2: &str = "r2";
/// The session clock (closed sessions) when the pair was made or last retrieved first.
pub const LAST_ACCESS: &str = "last_access_session";

/// The fitted weights file `mnemos train lufy` writes.
pub const FITTED_WEIGHTS_JSON: &str = include_str!("../../data/lufy-weights.json");

/// Which weights S uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightSet {
    /// LUFY's Table 2.
    Paper,
    /// Fitted on LUFY's annotations with the offline model's signals (`mnemos train lufy`).
    Fitted,
}

/// Which pairs compete when a session closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankOver {
    /// The closing session's new pairs.
    Session,
    /// Every active pair, earlier sessions' survivors included.
    All,
}

/// The shipped weights file: the weights plus how they were fitted (shown by `train lufy`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FittedWeights {
    pub weights: Weights,
    #[serde(default)]
    pub scale: Option<Scale>,
    #[serde(flatten)]
    pub fit: serde_json::Map<String, serde_json::Value>,
}

/// The weights shipped with the binary.
pub fn fitted_weights() -> Result<FittedWeights, String> {
    let fitted: FittedWeights = serde_json::from_str(FITTED_WEIGHTS_JSON)
        .map_err(|e| format!("the shipped lufy-weights.json does not parse: {e}"))?;
    if !fitted.weights.is_finite() {
        return Err("the shipped lufy-weights.json has a weight that is not a number".into());
    }
    Ok(fitted)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LufyParams {
    pub weights: WeightSet,
    /// Share of a session's pairs kept when it closes.
    pub keep_share: f64,
    pub rank_over: RankOver,
    /// Perplexity above this counts as this.
    pub perplexity_cap: f64,
    /// R1 / R2 counts above this count as this.
    pub retrieval_cap: f64,
    /// Pairs less similar than this to the query are not retrieved.
    pub similarity_threshold: f64,
    /// α in score = cosine + α·importance.
    pub importance_weight: f64,
    /// Memories (pairs) in a context at most.
    pub top_k: usize,
    /// Most recent turns in a context.
    pub recent_turns: usize,
    /// Session summaries in a context, the closest to the query first.
    pub summaries: usize,
    pub summary_tokens: usize,
    pub profile_tokens: usize,
}

impl Default for LufyParams {
    fn default() -> Self {
        Self {
            weights: WeightSet::Fitted,
            keep_share: 0.1,
            rank_over: RankOver::Session,
            perplexity_cap: 160.0,
            retrieval_cap: 10.0,
            // Calibrated for MiniLM on LUFY's questions as the paper's Appendix D
            // (examples/lufy_threshold.rs, docs/results/lufy.md): F1 of answering pairs is flat
            // from 0.50 to 0.55 (0.331, 0.339) while recall falls from 0.62 to 0.47, so the
            // lower end. The paper's 0.8 belongs to its embedder: under MiniLM it admits 12 of
            // 20,022 question–pair comparisons.
            similarity_threshold: 0.5,
            importance_weight: 0.1,
            top_k: 10,
            recent_turns: 5,
            summaries: 3,
            summary_tokens: 128,
            profile_tokens: 192,
        }
    }
}

impl PresetParams for LufyParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "weights",
            "weights of A, P, L, R1, R2 in the strength: fitted (mnemos train lufy) | paper",
        ),
        (
            "keep_share",
            "share of a session's pairs kept when it closes (0 < x <= 1; the paper's 10%)",
        ),
        (
            "rank_over",
            "pairs competing when a session closes: session (its new pairs) | all",
        ),
        (
            "perplexity_cap",
            "perplexity above this counts as this when normalized (>= 2; the paper's 160)",
        ),
        (
            "retrieval_cap",
            "R1/R2 counts above this count as this when normalized (>= 1)",
        ),
        (
            "similarity_threshold",
            "minimum cosine of a retrieved pair (-1..=1; 0.8 in the paper is for its embedder)",
        ),
        (
            "importance_weight",
            "alpha in score = cosine + alpha*importance (0..=10; the paper's 0.1)",
        ),
        ("top_k", "pairs in a context at most (1..=1000)"),
        ("recent_turns", "most recent turns in a context (0..=100)"),
        (
            "summaries",
            "session summaries in a context, closest to the query first (0..=100)",
        ),
        (
            "summary_tokens",
            "token budget of each session summary (8..=4096)",
        ),
        (
            "profile_tokens",
            "token budget of the user profile (8..=4096)",
        ),
    ];

    fn validate(&self) -> Result<(), String> {
        if !(self.keep_share > 0.0 && self.keep_share <= 1.0) {
            return Err(format!(
                "keep_share = {}: expected 0 < x <= 1",
                self.keep_share
            ));
        }
        if !(self.perplexity_cap.is_finite() && self.perplexity_cap >= 2.0) {
            return Err(format!(
                "perplexity_cap = {}: expected a number >= 2",
                self.perplexity_cap
            ));
        }
        if !(self.retrieval_cap.is_finite() && self.retrieval_cap >= 1.0) {
            return Err(format!(
                "retrieval_cap = {}: expected a number >= 1",
                self.retrieval_cap
            ));
        }
        if !(-1.0..=1.0).contains(&self.similarity_threshold) {
            return Err(format!(
                "similarity_threshold = {}: expected -1..=1",
                self.similarity_threshold
            ));
        }
        if !(0.0..=10.0).contains(&self.importance_weight) {
            return Err(format!(
                "importance_weight = {}: expected 0..=10",
                self.importance_weight
            ));
        }
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        if self.summaries > 100 {
            return Err(format!("summaries = {}: expected 0..=100", self.summaries));
        }
        if self.recent_turns > 100 {
            return Err(format!(
                "recent_turns = {}: expected 0..=100",
                self.recent_turns
            ));
        }
        for (key, value) in [
            ("summary_tokens", self.summary_tokens),
            ("profile_tokens", self.profile_tokens),
        ] {
            if !(8..=4096).contains(&value) {
                return Err(format!("{key} = {value}: expected 8..=4096"));
            }
        }
        if self.weights == WeightSet::Fitted {
            fitted_weights()?;
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
struct SessionPayload {
    session: String,
}

/// A pair's place at some moment of the session clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairState {
    pub signals: Signals,
    pub strength: f64,
    /// Closed sessions since the last access.
    pub elapsed: f64,
    pub importance: f64,
}

pub struct Lufy {
    params: LufyParams,
    weights: Weights,
    scale: Scale,
}

impl Lufy {
    pub fn new(params: LufyParams) -> Self {
        let weights = match params.weights {
            WeightSet::Paper => PAPER_WEIGHTS,
            // Validation refuses a broken file, so the fallback is never used in practice.
            WeightSet::Fitted => fitted_weights().map_or(PAPER_WEIGHTS, |f| f.weights),
        };
        let scale = Scale {
            perplexity_cap: params.perplexity_cap,
            retrieval_cap: params.retrieval_cap,
        };
        Self {
            params,
            weights,
            scale,
        }
    }

    /// A pair's signals, strength and importance when the session clock reads `clock`.
    pub fn state(&self, pair: &Memory, clock: f64) -> PairState {
        let extra = &pair.metrics.extra;
        let get = |key: &str| extra.get(key).copied().unwrap_or(0.0);
        let signals = Signals {
            arousal: get(AROUSAL),
            surprise: get(SURPRISE),
            importance: extra.get(RATED_IMPORTANCE).copied().unwrap_or(1.0),
            r1: get(R1),
            r2: get(R2),
        };
        let s = strength(&self.weights, &self.scale.normalize(&signals));
        let elapsed = (clock - get(LAST_ACCESS)).max(0.0);
        PairState {
            signals,
            strength: s,
            elapsed,
            importance: importance(elapsed, s),
        }
    }
}

/// The session clock: how many sessions of this agent have been summarized (closed).
fn session_clock(ctx: &MechanismCtx) -> EngineResult<f64> {
    let sessions: HashSet<String> = ctx
        .all(MemoryFilter {
            kinds: vec![KindTag::Summary],
            state: StateFilter::All,
            ..MemoryFilter::default()
        })?
        .into_iter()
        .map(|m| m.scope.session)
        .collect();
    Ok(sessions.len() as f64)
}

/// One session's raw turns (active ones), oldest first, with their memories.
struct SessionTurns {
    turns: Vec<(Memory, Turn)>,
}

impl SessionTurns {
    fn load(ctx: &MechanismCtx, session: &str) -> EngineResult<Self> {
        let memories = ctx.all(MemoryFilter {
            kinds: vec![KindTag::Turn],
            session: Some(session.to_string()),
            ..MemoryFilter::default()
        })?;
        let mut turns = Vec::with_capacity(memories.len());
        for memory in memories {
            let Some(id) = memory.provenance.first().copied() else {
                continue;
            };
            if let Some(turn) = ctx.turns(&[id])?.into_iter().next() {
                turns.push((memory, turn));
            }
        }
        // Creation order is conversation order (rounds alone do not order a bot turn that
        // opens a session before any user turn).
        Ok(Self { turns })
    }

    fn lines(&self) -> Vec<Line> {
        self.turns.iter().map(|(_, t)| turn_line(t)).collect()
    }

    /// (index of a user turn, indexes of the bot turns answering it up to the next user turn).
    fn pairs(&self) -> Vec<(usize, Vec<usize>)> {
        let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
        for (i, (_, turn)) in self.turns.iter().enumerate() {
            if turn.role == mnemos_core::Role::User {
                out.push((i, Vec::new()));
            } else if let Some((_, replies)) = out.last_mut() {
                replies.push(i);
            }
        }
        out
    }

    /// Bot turns before the session's first user utterance (in no pair).
    fn unpaired(&self) -> Vec<usize> {
        self.turns
            .iter()
            .take_while(|(_, t)| t.role != mnemos_core::Role::User)
            .enumerate()
            .map(|(i, _)| i)
            .collect()
    }
}

impl Lufy {
    /// Build the session's new pairs, summarize it, rebuild the profile and forget.
    fn close_session(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: SessionPayload = JobSpec::parse(job)?;
        let session = SessionTurns::load(ctx, &payload.session)?;
        let paired: HashSet<TurnId> = ctx
            .all(MemoryFilter {
                kinds: vec![KindTag::Exchange, KindTag::Summary],
                session: Some(payload.session.clone()),
                state: StateFilter::All,
                ..MemoryFilter::default()
            })?
            .iter()
            .flat_map(|m| m.provenance.iter().copied())
            .collect();
        let clock = session_clock(ctx)?;
        let lines = session.lines();
        let mut derived = Derived::default();
        let mut new_pairs: Vec<Memory> = Vec::new();
        for (user, replies) in session.pairs() {
            let Some((memory, turn)) = session.turns.get(user) else {
                continue;
            };
            if paired.contains(&turn.id) {
                continue;
            }
            let Some(signals) = signals::utterance_signals(ctx.model, &lines, user)? else {
                continue;
            };
            let members: Vec<&Memory> = std::iter::once(memory)
                .chain(
                    replies
                        .iter()
                        .filter_map(|r| session.turns.get(*r).map(|p| &p.0)),
                )
                .collect();
            new_pairs.push(self.pair_memory(job, &members, &signals, clock));
        }
        let fresh: Vec<&Memory> = session
            .turns
            .iter()
            .map(|(m, _)| m)
            .filter(|m| m.provenance.iter().any(|t| !paired.contains(t)))
            .collect();
        if fresh.is_empty() {
            return Ok(derived);
        }
        self.summarize(ctx, job, &fresh, &mut derived)?;
        self.forget(ctx, job, &session, new_pairs, clock + 1.0, &mut derived)?;
        Ok(derived)
    }

    fn pair_memory(&self, job: &Job, turns: &[&Memory], s: &Signals, clock: f64) -> Memory {
        let text = turns
            .iter()
            .map(|m| speaker_text(m))
            .collect::<Vec<_>>()
            .join("\n");
        let created = turns.last().map_or(job.created, |m| m.created);
        let mut pair = derived_memory(
            job,
            MemoryKind::Exchange,
            text,
            union_provenance(turns.iter().copied()),
            created,
            Metadata::new(),
        );
        let capped = s.surprise.min(self.params.perplexity_cap);
        let extra = &mut pair.metrics.extra;
        extra.insert(AROUSAL.into(), s.arousal);
        extra.insert(SURPRISE.into(), capped);
        extra.insert(RATED_IMPORTANCE.into(), s.importance);
        extra.insert(R1.into(), 0.0);
        extra.insert(R2.into(), 0.0);
        extra.insert(LAST_ACCESS.into(), clock);
        let state = self.state(&pair, clock + 1.0);
        pair.metrics.strength = Some(state.strength);
        pair.metrics.importance = Some(state.importance);
        pair
    }

    /// One summary of the session's new turns (in chunks that each fit a task), then the
    /// profile rebuilt from the old profile and the new summaries.
    fn summarize(
        &self,
        ctx: &MechanismCtx,
        job: &Job,
        fresh: &[&Memory],
        derived: &mut Derived,
    ) -> EngineResult<()> {
        let mut summaries = Vec::new();
        for chunk in chunks_by_bytes(fresh, CHUNK_BYTES) {
            let texts: Vec<String> = chunk.iter().map(|m| speaker_text(m)).collect();
            let text = ctx.model.summarize(&texts, 1, self.params.summary_tokens)?;
            summaries.push(derived_memory(
                job,
                MemoryKind::Summary { level: 1 },
                text,
                union_provenance(chunk.iter().copied()),
                job.created,
                Metadata::new(),
            ));
        }
        let profiles = ctx.active_of(&[KindTag::Profile])?;
        let current = profiles.last();
        let mut texts: Vec<String> = current.map(|p| p.text.clone()).into_iter().collect();
        texts.extend(summaries.iter().map(|m| m.text.clone()));
        let text = ctx.model.summarize(&texts, 2, self.params.profile_tokens)?;
        let profile = derived_memory(
            job,
            MemoryKind::Profile,
            text,
            union_provenance(current.into_iter().chain(summaries.iter())),
            job.created,
            Metadata::new(),
        );
        for old in &profiles {
            derived.forgets.push(BatchForget {
                id: old.id,
                reason: format!("lufy: profile superseded by {}", profile.id),
                cause: ForgetCause::preset(NAME),
                at: job.created,
            });
        }
        derived.memories.extend(summaries);
        derived.memories.push(profile);
        Ok(())
    }

    /// Keep the top share of the competing pairs by importance at `clock`; forget the others
    /// with their raw turns, and the session's unpaired opening bot turns.
    fn forget(
        &self,
        ctx: &MechanismCtx,
        job: &Job,
        session: &SessionTurns,
        new_pairs: Vec<Memory>,
        clock: f64,
        derived: &mut Derived,
    ) -> EngineResult<()> {
        let share = self.params.keep_share;
        let mut keep = ((new_pairs.len() as f64) * share).round().max(1.0) as usize;
        let mut pool: Vec<(Memory, bool)> = new_pairs.into_iter().map(|p| (p, true)).collect();
        if self.params.rank_over == RankOver::All {
            let old = ctx.active_of(&[KindTag::Exchange])?;
            keep += old.len();
            pool.extend(old.into_iter().map(|p| (p, false)));
        }
        let mut ranked: Vec<(Memory, bool, PairState)> = pool
            .into_iter()
            .map(|(p, new)| {
                let state = self.state(&p, clock);
                (p, new, state)
            })
            .collect();
        // Importance first; equal importance (e.g. 0 for S <= 0) by strength, then by age.
        ranked.sort_by(|a, b| {
            b.2.importance
                .total_cmp(&a.2.importance)
                .then(b.2.strength.total_cmp(&a.2.strength))
                .then(a.0.created.round.cmp(&b.0.created.round))
                .then(a.0.id.cmp(&b.0.id))
        });
        let total = ranked.len();
        // The raw turns a forgotten pair takes with it: the session's, and with `all` every
        // active one (earlier survivors' turns live in earlier sessions).
        let earlier = match self.params.rank_over {
            RankOver::All => ctx.active_of(&[KindTag::Turn])?,
            RankOver::Session => Vec::new(),
        };
        let raw: HashMap<TurnId, &Memory> = session
            .turns
            .iter()
            .map(|(m, t)| (t.id, m))
            .chain(
                earlier
                    .iter()
                    .filter_map(|m| m.provenance.first().map(|t| (*t, m))),
            )
            .collect();
        for (rank, (pair, new, state)) in ranked.into_iter().enumerate() {
            if rank < keep {
                if new {
                    derived.memories.push(pair);
                }
                continue;
            }
            let reason = format!(
                "lufy: importance {:.3} (strength {:.3}, {} sessions since last access) ranks {} of {total} at session {}; only the top {} are kept",
                state.importance,
                state.strength,
                state.elapsed,
                rank + 1,
                clock,
                keep
            );
            for turn in &pair.provenance {
                if let Some(memory) = raw.get(turn) {
                    derived.forgets.push(BatchForget {
                        id: memory.id,
                        reason: format!("{reason} (a turn of forgotten pair {})", pair.id),
                        cause: ForgetCause::preset(NAME),
                        at: job.created,
                    });
                }
            }
            if new {
                // A pair made and forgotten in one job is still recorded, then forgotten.
                derived.forgets.push(BatchForget {
                    id: pair.id,
                    reason,
                    cause: ForgetCause::preset(NAME),
                    at: job.created,
                });
                derived.memories.push(pair);
            } else {
                derived.forgets.push(BatchForget {
                    id: pair.id,
                    reason,
                    cause: ForgetCause::preset(NAME),
                    at: job.created,
                });
            }
        }
        for index in session.unpaired() {
            if let Some((memory, _)) = session.turns.get(index) {
                derived.forgets.push(BatchForget {
                    id: memory.id,
                    reason: "lufy: a bot turn before the session's first user utterance belongs to no pair".into(),
                    cause: ForgetCause::preset(NAME),
                    at: job.created,
                });
            }
        }
        Ok(())
    }
}

fn section_rank(section: &str) -> usize {
    [SECTION_SUMMARY, SECTION_RECENT, SECTION_MEMORIES]
        .iter()
        .position(|s| *s == section)
        .unwrap_or(3)
}

impl Lufy {
    /// Pairs above the similarity threshold, scored cosine + α·importance, best first.
    fn memories(
        &self,
        ctx: &MechanismCtx,
        request: &RecallRequest,
        clock: f64,
    ) -> EngineResult<Vec<(Hit, ContextItem)>> {
        let wanted = (self.params.top_k * 3).min(10_000);
        let hits = search(
            ctx,
            &request.query,
            &[KindTag::Exchange],
            request.session.as_deref(),
            RetrieverKind::Dense,
            wanted,
        )?;
        let mut scored = Vec::new();
        for hit in hits {
            let Some(cosine) = hit.breakdown.dense.as_ref().map(|d| f64::from(d.score)) else {
                continue;
            };
            if cosine < self.params.similarity_threshold {
                continue;
            }
            let state = self.state(&hit.memory, clock);
            let score = cosine + self.params.importance_weight * state.importance;
            let mut item = hit_item(&hit, SECTION_MEMORIES)
                .with_part("importance", state.importance)
                .with_part("strength", state.strength)
                .with_part("sessions_since_access", state.elapsed);
            item.score = score;
            scored.push((hit, item));
        }
        scored.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then(a.1.memory_id.cmp(&b.1.memory_id))
        });
        scored.truncate(self.params.top_k);
        Ok(scored)
    }

    /// The profile and the session summaries closest to the query (the latest when none is
    /// found), then the most recent turns.
    fn surroundings(
        &self,
        ctx: &MechanismCtx,
        request: &RecallRequest,
    ) -> EngineResult<(Vec<ContextItem>, Vec<ContextItem>)> {
        let session = request.session.as_deref();
        let mut summary = Vec::new();
        if let Some(profile) = ctx.active_of(&[KindTag::Profile])?.last() {
            summary.push(
                ContextItem::from_memory(profile, SECTION_SUMMARY, 1.0, tokens(&profile.text))
                    .with_part("profile", 1.0),
            );
        }
        let in_session = |m: &Memory| session.is_none_or(|s| m.scope.session == s);
        if self.params.summaries > 0 {
            let hits = search(
                ctx,
                &request.query,
                &[KindTag::Summary],
                session,
                RetrieverKind::Dense,
                self.params.summaries,
            )?;
            if hits.is_empty() {
                let summaries = ctx.active_of(&[KindTag::Summary])?;
                if let Some(latest) = summaries.iter().rev().find(|m| in_session(m)) {
                    summary.push(
                        ContextItem::from_memory(
                            latest,
                            SECTION_SUMMARY,
                            1.0,
                            tokens(&latest.text),
                        )
                        .with_part("latest_summary", 1.0),
                    );
                }
            }
            for hit in &hits {
                let mut item = hit_item(hit, SECTION_SUMMARY);
                item.text.clone_from(&hit.memory.text);
                item.tokens = tokens(&item.text);
                summary.push(item);
            }
        }
        let mut turns = ctx.active_of(&[KindTag::Turn])?;
        turns.retain(|m| in_session(m));
        turns.sort_by_key(|m| (m.created.round, m.created.time));
        let start = turns.len().saturating_sub(self.params.recent_turns);
        let recent = turns
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let text = speaker_text(m);
                // The score of a recent turn is its position, oldest first.
                let position = (i + 1) as f64;
                let mut item = ContextItem::from_memory(m, SECTION_RECENT, position, tokens(&text))
                    .with_part("recent", position);
                item.text = text;
                item
            })
            .collect();
        Ok((summary, recent))
    }

    /// R1 + 1 (and a fresh clock) for the first pair, R2 + 1 for the second.
    fn retrieval_effects(hits: &[(Hit, ContextItem)], clock: f64, now: Moment) -> Derived {
        let mut effects = Derived::default();
        for (rank, (hit, _)) in hits.iter().take(2).enumerate() {
            let mut metrics = hit.memory.metrics.clone();
            let key = if rank == 0 { R1 } else { R2 };
            *metrics.extra.entry(key.into()).or_insert(0.0) += 1.0;
            if rank == 0 {
                metrics.extra.insert(LAST_ACCESS.into(), clock);
            }
            effects.updates.push(BatchUpdate {
                id: hit.memory.id,
                patch: MemoryPatch {
                    metrics: Some(metrics),
                    ..MemoryPatch::default()
                },
                at: now,
            });
        }
        effects
    }
}

impl Mechanism for Lufy {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, _turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        // Pairs are scored and ranked when the session closes.
        Ok(Vec::new())
    }

    fn end_session(&self, _ctx: &ObserveCtx, session: &str) -> EngineResult<Vec<JobSpec>> {
        Ok(vec![JobSpec::new(
            JOB_SESSION,
            json!({ "session": session }),
        )])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            JOB_SESSION => self.close_session(ctx, job),
            other => Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let now = ctx.moment()?;
        let clock = session_clock(ctx)?;
        let memories = self.memories(ctx, request, clock)?;
        let (summary, recent) = self.surroundings(ctx, request)?;
        let mut notes = Vec::new();
        if memories.is_empty() {
            notes.push(format!(
                "no memory reaches the similarity threshold {}",
                self.params.similarity_threshold
            ));
        }
        // Pack what the query asked for first, then the recent turns, then the summaries.
        let ranked: Vec<ContextItem> = memories
            .iter()
            .map(|(_, item)| item.clone())
            .chain(recent.into_iter().rev())
            .chain(summary)
            .collect();
        let headers: usize = [SECTION_SUMMARY, SECTION_RECENT, SECTION_MEMORIES]
            .iter()
            .map(|s| tokens(&format!("## {s}")) + 2)
            .sum();
        let mut kept = pack_within_budget(ranked, request.token_budget.saturating_sub(headers));
        // Sections in prompt order; recent turns oldest first, memories by rank.
        kept.sort_by_key(|item| {
            let rank = section_rank(&item.section);
            let order = if rank == 1 { item.score as u64 } else { 0 };
            (rank, order)
        });
        let context = build_context(NAME, &request.query, kept, request.token_budget, notes);
        let shown: HashSet<_> = context.items.iter().map(|i| i.memory_id).collect();
        let used: Vec<(Hit, ContextItem)> = memories
            .into_iter()
            .filter(|(hit, _)| shown.contains(&hit.memory.id))
            .collect();
        let effects = Self::retrieval_effects(&used, clock, now);
        Ok(Recall { context, effects })
    }
}
