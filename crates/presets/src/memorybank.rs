//! MemoryBank (Zhong et al., AAAI 2024): raw turns, per-session summaries and a global user
//! profile, with Ebbinghaus forgetting that recall slows down.
//!
//! How it maps to the paper:
//! - **Memory storage.** The paper keeps the dialogue records, a daily event summary and a
//!   global user portrait. Here: the raw turns (`MemoryKind::Turn`, stored by the engine), one
//!   `Summary { level: 1 }` per closed session (provenance = the session's turns), and one
//!   active `Profile`. Sessions play the part of the paper's days.
//! - **Summaries and profile.** `end_session` plans a `session_summary` job. It summarizes the
//!   session's turns not yet covered by a summary (so ending a session twice adds nothing, and a
//!   continued session gets a second summary for its new turns only; a very long session is
//!   summarized in chunks that each fit one model task), then rebuilds the profile from the old
//!   profile plus the new summaries with the model's `summarize` at level 2 — the paper's "global
//!   portrait from the daily portraits", made incrementally. `summarize` rather than
//!   `persona_snapshot` because it works on summaries (the session's raw lines are no longer
//!   needed) and an LLM summarizer yields a portrait in prose as in the paper. The profile is
//!   superseded, not edited: a new `Profile` memory (provenance = old profile's ∪ the new
//!   summaries') is created and the old one is forgotten with the reason
//!   "memorybank: profile superseded by …", so each version stays in history with its sources.
//!   If the rebuilt text equals the current profile, nothing changes.
//! - **Forgetting.** Retention R = exp(−Δt / (c·S)) ([`ebbinghaus_retention`]): Δt is the time
//!   since the memory was created or last recalled, in rounds (default) or days (`time_unit`),
//!   c is `time_scale`, S is `metrics.strength` (absent = 1). Every recall of a memory adds 1 to
//!   S and restarts its clock (`metrics.extra["last_recall_round"]` and `["last_recall_ms"]`),
//!   written through the recall's effects, so the state lives in the store. The paper's public
//!   code computes `math.exp(-t / 5*S)`, which Python reads as exp(−(t/5)·S): a memory recalled
//!   more often would decay *faster*, the opposite of the paper's text. This preset uses the
//!   intended precedence, so stronger memories decay more slowly (property-tested below).
//! - **When forgetting runs.** `observe` plans a `forget` sweep whenever a turn opens a round that
//!   crosses a multiple of `forget_every`, and `end_session` plans one after the summary (the
//!   paper forgets between days). A sweep evaluates R at the job's own moment (so a replay
//!   decides the same) and forgets every raw turn (and, with `forget_summaries`, every summary)
//!   whose R is below `forget_threshold`, with a reason like
//!   "memorybank: retention 0.041 < 0.05 at round 412 (strength 1, 160.0 rounds since last
//!   recall)". The paper forgets with probability 1 − R; a threshold keeps runs reproducible.
//!   The profile never decays. Recall also skips memories already below the threshold that the
//!   next sweep will forget, so recalling cannot revive what the curve has lost.
//! - **Recall.** The profile first, then the most relevant session summaries and turns from
//!   retrieval (dense by default, as the paper's FAISS index), ranked by relevance, optionally
//!   weighted by retention (`retention_weight`); each item's breakdown shows relevance,
//!   retention, strength and elapsed time. Items are packed by rank within the budget, then
//!   shown as "user profile", "session summaries", "related dialogue turns".
//!
//! Offline model: `summarize` is extractive (sentences chosen by centroid similarity and MMR), so
//! summaries and the profile are the sessions' most central sentences, in their language; an LLM
//! model writes abstractive summaries and a portrait instead. Recall makes no model calls.
//!
//! Known limit: two recalls of the same memory racing in two processes may both read S and
//! write S+1 (one strengthening is lost); a single process commits them in turn.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::MAX_TASK_BYTES;
use mnemos_core::KindTag;
use mnemos_core::{
    BatchForget, BatchUpdate, ForgetCause, Hit, Job, Memory, MemoryFilter, MemoryId, MemoryKind,
    MemoryModelExt, MemoryPatch, Metadata, Moment, RetrieverKind, StateFilter, Turn, TurnId,
};

use super::retrieval::{hit_item, retriever_kind, search};
use super::PresetParams;
use crate::primitives::ebbinghaus_retention;
use crate::primitives::{chunks_by_bytes, derived_memory, union_provenance};
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, speaker_text, tokens};
use mnemos_engine::EngineResult;

pub const NAME: &str = "memorybank";
pub const SUMMARY: &str = "MemoryBank (Zhong et al. 2024): turns, session summaries and a user \
     profile; Ebbinghaus forgetting that recall strengthens";

/// `metrics.extra` key: the round of the last recall (absent = the creation round).
pub const LAST_RECALL_ROUND: &str = "last_recall_round";
/// `metrics.extra` key: the wall time (ms) of the last recall (absent = the creation time).
pub const LAST_RECALL_MS: &str = "last_recall_ms";

const JOB_SUMMARY: &str = "session_summary";
const JOB_FORGET: &str = "forget";
const SECTION_PROFILE: &str = "user profile";
const SECTION_SUMMARIES: &str = "session summaries";
const SECTION_TURNS: &str = "related dialogue turns";
const MS_PER_DAY: f64 = 86_400_000.0;
/// Bytes of turn text per summarize call (half a task, leaving room for labels).
const CHUNK_BYTES: usize = MAX_TASK_BYTES / 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryBankParams {
    /// Summaries and turns retrieved per query (the profile comes on top).
    pub top_k: usize,
    /// dense (the paper's embedding index), bm25 or hybrid.
    pub retriever: String,
    /// Unit of Δt: rounds or days.
    pub time_unit: String,
    /// c in R = exp(−Δt / (c·S)), in `time_unit`s.
    pub time_scale: f64,
    /// Memories whose retention falls below this are forgotten (0 = never forget).
    pub forget_threshold: f64,
    /// A forgetting sweep runs each time the round crosses a multiple of this.
    pub forget_every: u64,
    /// Let session summaries decay too (the paper's code forgets dialogue records only).
    pub forget_summaries: bool,
    /// Weight w of retention in the ranking: score = relevance · ((1 − w) + w·R).
    pub retention_weight: f64,
    /// Token budget of each session summary.
    pub summary_tokens: usize,
    /// Token budget of the user profile.
    pub profile_tokens: usize,
}

impl Default for MemoryBankParams {
    fn default() -> Self {
        Self {
            top_k: 10,
            retriever: "dense".into(),
            time_unit: "rounds".into(),
            // With S = 1 a memory is forgotten after c·ln(1/θ) ≈ 150 rounds; each recall adds
            // another ~150 rounds of life.
            time_scale: 50.0,
            forget_threshold: 0.05,
            forget_every: 10,
            forget_summaries: false,
            retention_weight: 0.0,
            summary_tokens: 128,
            profile_tokens: 192,
        }
    }
}

/// Unit of elapsed time in the forgetting curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Rounds,
    Days,
}

impl TimeUnit {
    fn parse(name: &str) -> Result<Self, String> {
        match name {
            "rounds" => Ok(TimeUnit::Rounds),
            "days" => Ok(TimeUnit::Days),
            other => Err(format!("time_unit = '{other}': expected rounds or days")),
        }
    }

    fn label(self) -> &'static str {
        match self {
            TimeUnit::Rounds => "rounds",
            TimeUnit::Days => "days",
        }
    }
}

impl PresetParams for MemoryBankParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "top_k",
            "summaries and turns retrieved per query, besides the profile (1..=1000)",
        ),
        ("retriever", "dense | bm25 | hybrid"),
        (
            "time_unit",
            "unit of elapsed time in the forgetting curve: rounds | days",
        ),
        (
            "time_scale",
            "c in R = exp(-dt/(c*S)), in time_units (> 0; the paper's code uses 5 days)",
        ),
        (
            "forget_threshold",
            "forget memories whose retention is below this (0..1; 0 = never forget)",
        ),
        (
            "forget_every",
            "run a forgetting sweep every this many rounds (1..=1000000)",
        ),
        (
            "forget_summaries",
            "let session summaries decay too: true | false",
        ),
        (
            "retention_weight",
            "weight of retention in the ranking, score = relevance*((1-w)+w*R) (0..=1)",
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
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        retriever_kind(&self.retriever)?;
        TimeUnit::parse(&self.time_unit)?;
        if !(self.time_scale.is_finite() && self.time_scale > 0.0 && self.time_scale <= 1e9) {
            return Err(format!(
                "time_scale = {}: expected a number above 0 (at most 1e9)",
                self.time_scale
            ));
        }
        if !(0.0..1.0).contains(&self.forget_threshold) {
            return Err(format!(
                "forget_threshold = {}: expected 0 <= x < 1",
                self.forget_threshold
            ));
        }
        if !(1..=1_000_000).contains(&self.forget_every) {
            return Err(format!(
                "forget_every = {}: expected 1..=1000000",
                self.forget_every
            ));
        }
        if !(0.0..=1.0).contains(&self.retention_weight) {
            return Err(format!(
                "retention_weight = {}: expected 0..=1",
                self.retention_weight
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
        Ok(())
    }
}

/// A memory's place on its forgetting curve at some moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retention {
    /// R in (0, 1].
    pub value: f64,
    /// Δt since creation or the last recall, in the preset's time unit.
    pub elapsed: f64,
    /// S (≥ 1 once recalled; 1 when never set).
    pub strength: f64,
}

#[derive(Debug, Deserialize)]
struct SummaryPayload {
    session: String,
}

pub struct MemoryBank {
    params: MemoryBankParams,
    retriever: RetrieverKind,
    unit: TimeUnit,
}

impl MemoryBank {
    pub fn new(params: MemoryBankParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Dense);
        let unit = TimeUnit::parse(&params.time_unit).unwrap_or(TimeUnit::Rounds);
        Self {
            params,
            retriever,
            unit,
        }
    }

    /// R = exp(−Δt / (c·S)) with this preset's time scale.
    pub fn curve(&self, elapsed: f64, strength: f64) -> f64 {
        ebbinghaus_retention(elapsed, strength, self.params.time_scale)
    }

    /// Where `memory` stands on its curve at `now` (strength and last recall from its metrics).
    pub fn retention(&self, memory: &Memory, now: Moment) -> Retention {
        let strength = memory
            .metrics
            .strength
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(1.0);
        let extra = &memory.metrics.extra;
        let elapsed = match self.unit {
            TimeUnit::Rounds => {
                let since = extra
                    .get(LAST_RECALL_ROUND)
                    .copied()
                    .unwrap_or(0.0)
                    .max(memory.created.round as f64);
                now.round as f64 - since
            }
            TimeUnit::Days => {
                let since = extra
                    .get(LAST_RECALL_MS)
                    .copied()
                    .unwrap_or(f64::MIN)
                    .max(memory.created.time.millis() as f64);
                (now.time.millis() as f64 - since) / MS_PER_DAY
            }
        }
        .max(0.0);
        Retention {
            value: self.curve(elapsed, strength),
            elapsed,
            strength,
        }
    }

    fn decays(&self, kind: &MemoryKind) -> bool {
        match kind {
            MemoryKind::Turn => true,
            MemoryKind::Summary { .. } => self.params.forget_summaries,
            _ => false,
        }
    }

    fn lost(&self, retention: &Retention) -> bool {
        retention.value < self.params.forget_threshold
    }

    /// Forget every decaying memory whose retention at the job's moment is below the threshold.
    fn forget_sweep(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let mut derived = Derived::default();
        if self.params.forget_threshold <= 0.0 {
            return Ok(derived);
        }
        let kinds: &[KindTag] = if self.params.forget_summaries {
            &[KindTag::Turn, KindTag::Summary]
        } else {
            &[KindTag::Turn]
        };
        let now = job.created;
        for memory in ctx.active_of(kinds)? {
            let r = self.retention(&memory, now);
            if self.lost(&r) {
                derived.forgets.push(BatchForget {
                    id: memory.id,
                    reason: format!(
                        "memorybank: retention {:.3} < {} at round {} (strength {}, {:.1} {} since last recall)",
                        r.value,
                        self.params.forget_threshold,
                        now.round,
                        r.strength,
                        r.elapsed,
                        self.unit.label()
                    ),
                    cause: ForgetCause::preset(NAME),
                    at: now,
                });
            }
        }
        Ok(derived)
    }

    /// Summarize the session's turns that no summary covers yet, then rebuild the profile.
    fn summarize_session(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: SummaryPayload = JobSpec::parse(job)?;
        let turns = ctx.all(MemoryFilter {
            kinds: vec![KindTag::Turn],
            session: Some(payload.session.clone()),
            ..MemoryFilter::default()
        })?;
        // Forgotten summaries still count as covering their turns: no re-summarizing.
        let covered: HashSet<TurnId> = ctx
            .all(MemoryFilter {
                kinds: vec![KindTag::Summary],
                session: Some(payload.session.clone()),
                state: StateFilter::All,
                ..MemoryFilter::default()
            })?
            .iter()
            .flat_map(|m| m.provenance.iter().copied())
            .collect();
        let fresh: Vec<&Memory> = turns
            .iter()
            .filter(|m| m.provenance.iter().any(|t| !covered.contains(t)))
            .collect();
        let mut derived = Derived::default();
        if fresh.is_empty() {
            return Ok(derived);
        }
        for chunk in chunks_by_bytes(&fresh, CHUNK_BYTES) {
            let texts: Vec<String> = chunk.iter().map(|m| speaker_text(m)).collect();
            let text = ctx.model.summarize(&texts, 1, self.params.summary_tokens)?;
            let provenance = union_provenance(chunk.iter().copied());
            let mut summary = derived_memory(
                job,
                MemoryKind::Summary { level: 1 },
                text,
                provenance,
                job.created,
                Metadata::new(),
            );
            summary.metrics.strength = Some(1.0);
            derived.memories.push(summary);
        }
        self.update_profile(ctx, job, &mut derived)?;
        Ok(derived)
    }

    /// New profile = summarize(current profile + the new summaries); the old one is forgotten.
    fn update_profile(
        &self,
        ctx: &MechanismCtx,
        job: &Job,
        derived: &mut Derived,
    ) -> EngineResult<()> {
        let profiles = ctx.active_of(&[KindTag::Profile])?;
        let current = profiles.last();
        let mut texts: Vec<String> = current.map(|p| p.text.clone()).into_iter().collect();
        texts.extend(derived.memories.iter().map(|m| m.text.clone()));
        let text = ctx.model.summarize(&texts, 2, self.params.profile_tokens)?;
        if profiles.len() == 1 && current.is_some_and(|p| p.text == text) {
            return Ok(());
        }
        let provenance = union_provenance(current.into_iter().chain(derived.memories.iter()));
        let profile = derived_memory(
            job,
            MemoryKind::Profile,
            text,
            provenance,
            job.created,
            Metadata::new(),
        );
        for old in &profiles {
            derived.forgets.push(BatchForget {
                id: old.id,
                reason: format!(
                    "memorybank: profile superseded by {} at round {}",
                    profile.id, job.created.round
                ),
                cause: ForgetCause::preset(NAME),
                at: job.created,
            });
        }
        derived.memories.push(profile);
        Ok(())
    }

    /// A recalled memory gets S + 1 and its clock restarts now.
    fn strengthen(memory: &Memory, strength: f64, now: Moment) -> BatchUpdate {
        let mut metrics = memory.metrics.clone();
        metrics.strength = Some(strength + 1.0);
        metrics
            .extra
            .insert(LAST_RECALL_ROUND.into(), now.round as f64);
        metrics
            .extra
            .insert(LAST_RECALL_MS.into(), now.time.millis() as f64);
        BatchUpdate {
            id: memory.id,
            patch: MemoryPatch {
                metrics: Some(metrics),
                ..MemoryPatch::default()
            },
            at: now,
        }
    }
}

/// Tokens the rendered section headers may take.
fn header_tokens(sections: &[&str]) -> usize {
    sections
        .iter()
        .map(|s| tokens(&format!("## {s}")) + 2)
        .sum()
}

fn section_of(kind: &MemoryKind) -> &'static str {
    match kind {
        MemoryKind::Profile => SECTION_PROFILE,
        MemoryKind::Summary { .. } => SECTION_SUMMARIES,
        _ => SECTION_TURNS,
    }
}

fn section_rank(section: &str) -> usize {
    [SECTION_PROFILE, SECTION_SUMMARIES, SECTION_TURNS]
        .iter()
        .position(|s| *s == section)
        .unwrap_or(3)
}

/// Does a turn cross a multiple of `every` relative to the previous round (and is it the
/// first turn seen in its round)?
fn crosses_period(previous: Option<u64>, round: u64, every: u64) -> bool {
    match previous {
        Some(prev) if round > prev => round / every > prev / every,
        _ => false,
    }
}

impl Mechanism for MemoryBank {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        let stored = ctx.store.last_round(ctx.user)?;
        let previous = ctx.earlier.iter().map(|t| t.at.round).chain(stored).max();
        if crosses_period(previous, turn.at.round, self.params.forget_every) {
            return Ok(vec![JobSpec::new(JOB_FORGET, json!({}))]);
        }
        Ok(Vec::new())
    }

    fn end_session(&self, _ctx: &ObserveCtx, session: &str) -> EngineResult<Vec<JobSpec>> {
        Ok(vec![
            JobSpec::new(JOB_SUMMARY, json!({ "session": session })),
            JobSpec::new(JOB_FORGET, json!({})),
        ])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            JOB_SUMMARY => self.summarize_session(ctx, job),
            JOB_FORGET => self.forget_sweep(ctx, job),
            other => Err(mnemos_engine::EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let now = ctx.moment()?;
        let mut notes = Vec::new();
        let mut ranked: Vec<ContextItem> = Vec::new();
        if let Some(profile) = ctx.active_of(&[KindTag::Profile])?.last() {
            let item =
                ContextItem::from_memory(profile, SECTION_PROFILE, 1.0, tokens(&profile.text))
                    .with_part("profile", 1.0);
            ranked.push(item);
        }
        // Look past top_k: low-retention hits are dropped and retention may reorder the rest.
        let wanted = (self.params.top_k * 3).min(10_000);
        let hits: Vec<Hit> = search(
            ctx,
            &request.query,
            &[KindTag::Summary, KindTag::Turn],
            request.session.as_deref(),
            self.retriever,
            wanted,
        )?;
        let w = self.params.retention_weight;
        let mut scored: Vec<(ContextItem, Retention)> = Vec::new();
        let mut fading = 0usize;
        for hit in &hits {
            let r = self.retention(&hit.memory, now);
            if self.decays(&hit.memory.kind) && self.lost(&r) {
                fading += 1;
                continue;
            }
            let relevance = f64::from(hit.score);
            let score = relevance * ((1.0 - w) + w * r.value);
            let mut item = hit_item(hit, section_of(&hit.memory.kind))
                .with_part("relevance", relevance)
                .with_part("retention", r.value)
                .with_part("strength", r.strength)
                .with_part("elapsed", r.elapsed);
            item.score = score;
            scored.push((item, r));
        }
        if fading > 0 {
            notes.push(format!(
                "{fading} retrieved memories are below the retention threshold and were left out"
            ));
        }
        scored.sort_by(|a, b| b.0.score.total_cmp(&a.0.score));
        scored.truncate(self.params.top_k);
        let strengths: std::collections::HashMap<MemoryId, f64> = scored
            .iter()
            .map(|(item, r)| (item.memory_id, r.strength))
            .collect();
        ranked.extend(scored.into_iter().map(|(item, _)| item));

        let room = request.token_budget.saturating_sub(header_tokens(&[
            SECTION_PROFILE,
            SECTION_SUMMARIES,
            SECTION_TURNS,
        ]));
        // Pack by rank, then show in section order (rank order within a section).
        let mut kept = pack_within_budget(ranked, room);
        kept.sort_by_key(|item| section_rank(&item.section));
        let context = build_context(NAME, &request.query, kept, request.token_budget, notes);

        let mut effects = Derived::default();
        for item in &context.items {
            let Some(strength) = strengths.get(&item.memory_id) else {
                continue; // the profile does not decay
            };
            if let Some(hit) = hits.iter().find(|h| h.memory.id == item.memory_id) {
                effects
                    .updates
                    .push(Self::strengthen(&hit.memory, *strength, now));
            }
        }
        Ok(Recall { context, effects })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::MemoryState;

    use mnemos_core::{Role, Scope, Timestamp, UserKey};
    use mnemos_engine::NewTurn;

    use proptest::prelude::*;

    use crate::PresetSpec;
    use mnemos_engine::Engine;

    use crate::testing::{self, memories_of, test_engine, T0};

    fn engine(params: &str) -> Engine {
        test_engine(NAME, params, true)
    }

    fn scope(session: &str) -> Scope {
        Scope::new("t", "u", "bot", session).unwrap()
    }

    fn user() -> UserKey {
        UserKey::new("t", "u").unwrap()
    }

    fn turn(session: &str, round: u64, role: Role, text: &str) -> NewTurn {
        NewTurn {
            role,
            speaker: Some(if role == Role::User { "Ana" } else { "Bot" }.into()),
            time: Some(Timestamp(T0 + round as i64 * 60_000)),
            round: Some(round),
            ..NewTurn::user(scope(session), text)
        }
    }

    fn all_of(engine: &Engine, kind: &str, state: StateFilter) -> Vec<Memory> {
        memories_of(engine, &user(), kind, state)
    }

    fn recall(engine: &Engine, query: &str, budget: usize) -> mnemos_engine::mechanism::Context {
        testing::recall(engine, &user(), "bot", query, budget)
    }

    proptest! {
        /// A stronger memory decays more slowly; every memory fades with time.
        #[test]
        fn stronger_memories_decay_slower(
            dt in 0.001f64..1000.0,
            c in 0.1f64..100.0,
            s1 in 0.1f64..50.0,
            extra in 0.01f64..50.0,
            later in 0.001f64..1000.0,
        ) {
            let s2 = s1 + extra;
            // Stay where exp() does not underflow to 0, so strict inequalities are meaningful.
            prop_assume!((dt + later) / (c * s1) < 700.0);
            let bank = MemoryBank::new(MemoryBankParams { time_scale: c, ..Default::default() });
            let (r1, r2) = (bank.curve(dt, s1), bank.curve(dt, s2));
            prop_assert!(r2 >= r1);
            prop_assert!(r2 > r1, "R(dt, S2) = {r2} should exceed R(dt, S1) = {r1}");
            prop_assert!(bank.curve(dt + later, s1) < r1);
            prop_assert!(bank.curve(dt + later, s2) < r2);
            prop_assert!(r1 > 0.0 && r2 <= 1.0);
            prop_assert_eq!(bank.curve(0.0, s1), 1.0);
        }
    }

    #[test]
    fn the_published_precedence_would_make_strong_memories_fade_faster() {
        // Python's `exp(-t / 5*S)` is exp(-(t/5)·S): decreasing in S.
        let paper_code = |t: f64, s: f64| (-(t / 5.0) * s).exp();
        assert!(paper_code(3.0, 2.0) < paper_code(3.0, 1.0));
        let bank = MemoryBank::new(MemoryBankParams {
            time_scale: 5.0,
            ..Default::default()
        });
        assert!(bank.curve(3.0, 2.0) > bank.curve(3.0, 1.0));
        assert!((bank.curve(3.0, 2.0) - (-0.3f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn elapsed_time_counts_from_the_last_recall_in_rounds_or_days() {
        let rounds = MemoryBank::new(MemoryBankParams::default());
        let days = MemoryBank::new(MemoryBankParams {
            time_unit: "days".into(),
            time_scale: 5.0,
            ..Default::default()
        });
        let s = scope("s");
        let t = Turn {
            id: TurnId::new(),
            scope: s,
            role: Role::User,
            speaker: None,
            text: "hi".into(),
            at: Moment {
                round: 3,
                time: Timestamp(T0),
            },
            metadata: Metadata::new(),
            key: None,
        };
        let mut m = Memory::from_turn(&t);
        let now = Moment {
            round: 13,
            time: Timestamp(T0 + 2 * 86_400_000),
        };
        let r = rounds.retention(&m, now);
        assert_eq!((r.elapsed, r.strength), (10.0, 1.0));
        assert!((r.value - (-10.0f64 / 50.0).exp()).abs() < 1e-12);
        assert_eq!(days.retention(&m, now).elapsed, 2.0);
        m.metrics.strength = Some(3.0);
        m.metrics.extra.insert(LAST_RECALL_ROUND.into(), 9.0);
        m.metrics
            .extra
            .insert(LAST_RECALL_MS.into(), (T0 + 86_400_000) as f64);
        let r = rounds.retention(&m, now);
        assert_eq!((r.elapsed, r.strength), (4.0, 3.0));
        assert_eq!(days.retention(&m, now).elapsed, 1.0);
    }

    #[test]
    fn recall_strengthens_and_unrecalled_old_memories_are_forgotten() {
        // S = 1 lives 4·ln 5 ≈ 6.4 rounds, S = 2 twice as long; a sweep every round.
        let engine =
            engine("time_scale = 4.0\nforget_threshold = 0.2\nforget_every = 1\ntop_k = 1");
        let dog = "I adopted a golden retriever puppy named Max";
        let sister = "My sister moved to Lisbon for her new job";
        engine
            .add(vec![
                turn("s1", 0, Role::User, dog),
                turn("s1", 0, Role::Assistant, "Congratulations!"),
                turn("s1", 1, Role::User, sister),
                turn("s1", 2, Role::User, "The weather is mild today"),
            ])
            .unwrap();
        let ctx = recall(&engine, "golden retriever puppy Max", 200);
        assert_eq!(ctx.items.len(), 1);
        assert_eq!(ctx.items[0].text, format!("Ana: {dog}"));
        let parts: Vec<&str> = ctx.items[0]
            .breakdown
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert!(
            parts.contains(&"retention") && parts.contains(&"strength"),
            "{parts:?}"
        );

        let turns = all_of(&engine, "turn", StateFilter::All);
        let max = turns.iter().find(|m| m.text == dog).unwrap();
        assert_eq!(max.metrics.strength, Some(2.0));
        assert_eq!(max.metrics.extra.get(LAST_RECALL_ROUND), Some(&2.0));
        // The clock restarted: Δt is 0 right after the recall.
        let bank = MemoryBank::new(MemoryBankParams::default());
        let now = Moment {
            round: 2,
            time: Timestamp(T0),
        };
        assert_eq!(bank.retention(max, now).elapsed, 0.0);

        for round in 3..=9 {
            engine
                .add(vec![turn(
                    "s1",
                    round,
                    Role::User,
                    &format!("Filler line number {round}"),
                )])
                .unwrap();
        }
        let turns = all_of(&engine, "turn", StateFilter::All);
        let max = turns.iter().find(|m| m.text == dog).unwrap();
        let lisbon = turns.iter().find(|m| m.text == sister).unwrap();
        assert!(
            max.is_active(),
            "recalled memory must survive: {:?}",
            max.state
        );
        match &lisbon.state {
            MemoryState::Forgotten { reason, .. } => {
                assert!(reason.starts_with("memorybank: retention"), "{reason}");
                assert!(reason.contains("< 0.2"), "{reason}");
            }
            other => panic!("never-recalled memory should be forgotten: {other:?}"),
        }
        let history = engine.history(&user(), lisbon.id).unwrap();
        assert!(history
            .iter()
            .any(|h| matches!(&h.change, mnemos_core::Change::Forgotten { reason } if reason.contains("retention"))));
        // The recent filler turns are still there.
        assert!(turns
            .iter()
            .filter(|m| m.created.round >= 8)
            .all(Memory::is_active));
        // A forgotten memory never comes back.
        let ctx = recall(&engine, "sister Lisbon new job", 500);
        assert!(ctx.items.iter().all(|i| i.memory_id != lisbon.id));
    }

    #[test]
    fn sessions_get_summaries_and_one_profile_that_is_superseded() {
        let engine = engine("");
        engine
            .add(vec![
                turn(
                    "s1",
                    0,
                    Role::User,
                    "I work as a nurse at the city hospital.",
                ),
                turn(
                    "s1",
                    0,
                    Role::Assistant,
                    "That sounds demanding. Do you like it?",
                ),
                turn(
                    "s1",
                    1,
                    Role::User,
                    "Yes, I love helping patients, and I run every morning.",
                ),
            ])
            .unwrap();
        let report = engine.end_session(&scope("s1")).unwrap();
        assert_eq!(report.failed, 0, "{:?}", report.errors);
        let summaries = all_of(&engine, "summary", StateFilter::Active);
        assert_eq!(summaries.len(), 1);
        let s1_turns: Vec<TurnId> = all_of(&engine, "turn", StateFilter::Active)
            .iter()
            .flat_map(|m| m.provenance.clone())
            .collect();
        assert_eq!(summaries[0].provenance, s1_turns);
        assert_eq!(summaries[0].kind, MemoryKind::Summary { level: 1 });
        let first_profile = all_of(&engine, "profile", StateFilter::Active);
        assert_eq!(first_profile.len(), 1);

        // Ending it again adds nothing.
        engine.end_session(&scope("s1")).unwrap();
        assert_eq!(all_of(&engine, "summary", StateFilter::All).len(), 1);

        engine
            .add(vec![
                turn(
                    "s2",
                    2,
                    Role::User,
                    "我上个月在杭州买了一套新房子，离西湖很近。",
                ),
                turn("s2", 2, Role::Assistant, "恭喜你！搬家顺利吗？"),
                turn("s2", 3, Role::User, "很顺利，我的猫也很喜欢新家的阳台。"),
            ])
            .unwrap();
        engine.end_session(&scope("s2")).unwrap();
        let summaries = all_of(&engine, "summary", StateFilter::Active);
        assert_eq!(summaries.len(), 2);
        assert!(summaries[1].text.contains("杭州") || summaries[1].text.contains("猫"));
        let profiles = all_of(&engine, "profile", StateFilter::All);
        let active: Vec<&Memory> = profiles.iter().filter(|m| m.is_active()).collect();
        assert_eq!(active.len(), 1);
        assert_ne!(active[0].id, first_profile[0].id);
        // The profile's sources are both sessions' turns.
        assert_eq!(
            active[0].provenance.len(),
            all_of(&engine, "turn", StateFilter::Active).len()
        );
        let old = profiles
            .iter()
            .find(|m| m.id == first_profile[0].id)
            .unwrap();
        match &old.state {
            MemoryState::Forgotten { reason, .. } => {
                assert!(reason.contains("superseded"), "{reason}")
            }
            other => panic!("old profile should be superseded: {other:?}"),
        }

        // Recall: profile first, then summaries, then turns; within budget.
        let ctx = recall(&engine, "杭州的新房子", 400);
        assert_eq!(ctx.items[0].section, SECTION_PROFILE);
        let ranks: Vec<usize> = ctx.items.iter().map(|i| section_rank(&i.section)).collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
        assert!(ctx.items.iter().any(|i| i.text.contains("杭州")));
        for budget in [0, 10, 30, 80] {
            let ctx = recall(&engine, "nurse hospital", budget);
            assert!(ctx.tokens <= budget, "{budget}: {}", ctx.tokens);
        }
    }

    #[test]
    fn params_are_validated() {
        let bad = [
            "time_scale = 0.0",
            "forget_threshold = 1.0",
            "forget_every = 0",
            "time_unit = 'weeks'",
            "retention_weight = 2.0",
            "summary_tokens = 4",
            "retriever = 'magic'",
            "top_k = 0",
            "nonsense = 1",
        ];
        for params in bad {
            let spec = PresetSpec {
                name: NAME.into(),
                params: toml::from_str(params).unwrap(),
            };
            assert!(crate::build(&spec).is_err(), "{params}");
        }
        assert!(MemoryBankParams::default().validate().is_ok());
        let info = crate::registry()
            .into_iter()
            .find(|p| p.name == NAME)
            .expect("registered");
        assert_eq!(info.params.len(), MemoryBankParams::DOCS.len());
        assert!(
            info.params.iter().all(|p| p.default != "(none)"),
            "{:?}",
            info.params
        );
        assert!(crate::build(&PresetSpec::named(NAME)).is_ok());
    }

    #[test]
    fn a_sweep_replayed_at_the_same_moment_decides_the_same() {
        let engine = engine("time_scale = 1.0\nforget_threshold = 0.5\nforget_every = 100");
        engine
            .add(vec![
                turn("s1", 0, Role::User, "I collect vintage stamps"),
                turn("s1", 5, Role::User, "I also play chess on weekends"),
            ])
            .unwrap();
        let bank = MemoryBank::new(parse(
            &"time_scale = 1.0\nforget_threshold = 0.5\nforget_every = 100"
                .parse()
                .unwrap(),
        ));
        let job = Job::new(
            scope("s1"),
            NAME,
            JOB_FORGET,
            "{}",
            Moment {
                round: 5,
                time: Timestamp(T0),
            },
        );
        let owner = user();
        let ctx = engine.mechanism_ctx(engine.model().as_ref(), &owner, "bot");
        let first = bank.run_job(&ctx, &job).unwrap();
        let second = bank.run_job(&ctx, &job).unwrap();
        assert_eq!(first.forgets.len(), 1);
        assert_eq!(
            first.forgets.iter().map(|f| f.id).collect::<Vec<_>>(),
            second.forgets.iter().map(|f| f.id).collect::<Vec<_>>()
        );
    }

    fn parse(table: &toml::Table) -> MemoryBankParams {
        crate::parse_params(NAME, table).unwrap()
    }

    #[test]
    fn sweeps_are_planned_when_a_round_crosses_the_period() {
        assert!(!crosses_period(None, 0, 10));
        assert!(!crosses_period(Some(5), 5, 10));
        assert!(crosses_period(Some(9), 10, 10));
        assert!(crosses_period(Some(8), 23, 10));
        assert!(!crosses_period(Some(10), 11, 10));
    }
}
