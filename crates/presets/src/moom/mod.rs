//! MOOM (Chen et al. 2025): memory for ultra-long role-play and companion dialogue as a story —
//! a plot timeline at several time scales (NSB, [`nsb`]), a persona sketch that updates itself
//! key by key (PCB, [`pcb`]), and competition-inhibition forgetting that bounds the plot pool
//! ([`forgetting`]).
//!
//! Each part is switchable for ablation: `nsb = false` keeps no plot tree (recall falls back to
//! raw turns), `pcb = false` keeps no persona, `forgetting = ebbinghaus | none` replaces the
//! competition, `embedding_merge` / `model_merge` turn off the embedding- and model-based
//! persona merging (MOOM Table 4).
//!
//! Per round (a user utterance opens round r, so round r − 1 is complete), `observe` plans:
//! - `package` when round r − 1 completes a unit of θ1 rounds (NSB);
//! - `persona` when it completes a window of `persona_every` rounds (PCB);
//! - `compete` with the new utterance as the query (forgetting; not under `none`).
//!
//! Recall: the persona sketch (schema order, at most half the budget), then the top-k plot
//! memories (units and level-2/3 summaries) by relevance, shown in timeline order with their
//! provenance and a breakdown (relevance parts, level, forgetting score), then the recent
//! dialogue no unit holds yet (at most about θ1 rounds, newest kept first when the budget is
//! short). Recall makes no writes: reinforcement belongs to the round's retrieval.
//!
//! Offline model: summaries are the units' most central sentences retold in the third person
//! (names for pronouns, stage directions as the speaker's actions; `mnemos_text::narrate`),
//! and the persona comes from first-person patterns, kept per speaker; an LLM model writes
//! abstractive plot summaries and richer persona values through the same tasks.

pub(crate) mod forgetting;
pub(crate) mod nsb;
pub(crate) mod pcb;
#[cfg(test)]
mod tests;
pub(crate) mod view;

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::{PersonaKey, PersonaSchema};
use mnemos_core::KindTag;
use mnemos_core::{
    BatchForget, BatchUpdate, ForgetCause, Job, Memory, MemoryFilter, MemoryPatch, RetrieverKind,
    StoreRead, Turn, UserKey,
};

use self::forgetting::{Competition, Policy, Suppression};
use self::nsb::Shape;
use self::pcb::MergeRules;
use super::retrieval::{hit_item, retriever_kind, search};
use super::PresetParams;
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, tokens};
use mnemos_engine::{EngineError, EngineResult};
use mnemos_engine::{View, ViewKind};

pub const NAME: &str = "moom";
pub const SUMMARY: &str = "MOOM (Chen et al. 2025): plot summaries at three time scales, a \
     persona sketch merged per key, competition-inhibition forgetting under a capacity";

const JOB_COMPETE: &str = "compete";
const SECTION_PERSONA: &str = "persona";
const SECTION_PLOT: &str = "plot timeline";
const SECTION_RECENT: &str = "recent dialogue";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MoomParams {
    /// Narrative Summarization Branch on/off.
    pub nsb: bool,
    /// Persona Construction Branch on/off.
    pub pcb: bool,
    /// Rounds per level-1 unit (θ1).
    pub theta1: u64,
    /// Units per level-2 summary (θ2).
    pub theta2: usize,
    /// Level-2 summaries per level-3 summary (θ3).
    pub theta3: usize,
    /// Token budget of a level-2 summary.
    pub summary_tokens: usize,
    /// Token budget of a level-3 summary.
    pub top_summary_tokens: usize,
    /// Closing a session packages its unfinished rounds and summarizes waiting units.
    pub flush_on_session_end: bool,
    /// Rounds between persona snapshots.
    pub persona_every: u64,
    /// Default persona keys: en or zh.
    pub schema: String,
    /// Custom persona keys (replace the default set when given).
    pub keys: Vec<PersonaKey>,
    /// Embedding-based merging (dedup, contradictions).
    pub embedding_merge: bool,
    /// Model-based merging of complex keys.
    pub model_merge: bool,
    pub dedup_similarity: f64,
    pub contradiction_similarity: f64,
    /// Values a trajectory key keeps.
    pub trajectory_keep: usize,
    /// competition | ebbinghaus | none.
    pub forgetting: String,
    /// Plot memories kept (0 = unbounded).
    pub capacity: usize,
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub epsilon: f64,
    /// Reinforced per round (the next k are suppressed).
    pub k: usize,
    /// round | persistent | off.
    pub suppression: String,
    /// Ebbinghaus c, in rounds.
    pub time_scale: f64,
    /// Plot memories recalled per query.
    pub top_k: usize,
    /// dense | bm25 | hybrid.
    pub retriever: String,
}

impl Default for MoomParams {
    fn default() -> Self {
        Self {
            nsb: true,
            pcb: true,
            theta1: 6,
            theta2: 5,
            theta3: 5,
            // A headline per scale: about one human-written memory note (ZH-4O labels run
            // 10–40 tokens; the narrated offline summary is one or two event sentences). The
            // units below keep the rounds verbatim, so a long summary only repeats them and
            // matches no single note (ZH-4O, 4 dialogues: 16 tokens gives ROUGE-L P/F 0.44/0.35
            // on words, 32 tokens 0.39/0.33).
            summary_tokens: 16,
            top_summary_tokens: 24,
            flush_on_session_end: true,
            persona_every: 10,
            schema: "en".into(),
            keys: Vec::new(),
            embedding_merge: true,
            model_merge: true,
            dedup_similarity: 0.9,
            contradiction_similarity: 0.8,
            trajectory_keep: 5,
            forgetting: "competition".into(),
            capacity: 0,
            alpha: 0.1,
            beta: 0.9,
            gamma: 1.0,
            epsilon: 1e-3,
            k: 9,
            suppression: "round".into(),
            time_scale: 50.0,
            top_k: 9,
            retriever: "hybrid".into(),
        }
    }
}

impl PresetParams for MoomParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("nsb", "plot timeline (narrative summaries): true | false"),
        ("pcb", "persona sketch: true | false"),
        ("theta1", "rounds per level-1 unit (1..=1000)"),
        ("theta2", "units per level-2 summary (1..=100)"),
        ("theta3", "level-2 summaries per level-3 summary (1..=100)"),
        (
            "summary_tokens",
            "token budget of a level-2 summary (8..=4096)",
        ),
        (
            "top_summary_tokens",
            "token budget of a level-3 summary (8..=4096)",
        ),
        (
            "flush_on_session_end",
            "a closed session packages its last rounds and summarizes waiting units",
        ),
        (
            "persona_every",
            "rounds between persona snapshots (1..=10000)",
        ),
        ("schema", "default persona keys: en | zh"),
        (
            "keys",
            "custom persona keys: [{name, kind, description, opposite}] (replace the default set)",
        ),
        (
            "embedding_merge",
            "embedding-based persona merging (dedup, contradictions): true | false",
        ),
        (
            "model_merge",
            "model-based merging of complex persona keys: true | false",
        ),
        (
            "dedup_similarity",
            "cosine at which a new value repeats a held one (0..=1)",
        ),
        (
            "contradiction_similarity",
            "cosine at which a value outdates its opposite key's value (0..=1)",
        ),
        ("trajectory_keep", "values a trajectory key keeps (1..=100)"),
        ("forgetting", "competition | ebbinghaus | none"),
        ("capacity", "plot memories kept; 0 = unbounded"),
        ("alpha", "eq. 3: weight of temporal decay (>= 0)"),
        ("beta", "eq. 3: weight of retrieval reinforcement (>= 0)"),
        ("gamma", "eq. 3: decay rate per round (> 0)"),
        ("epsilon", "eq. 3: small constant (0 < x < 1)"),
        (
            "k",
            "per round: top k retrieved are reinforced, the next k suppressed (1..=100)",
        ),
        (
            "suppression",
            "halving of the suppressed: round (this round's cut) | persistent | off",
        ),
        (
            "time_scale",
            "Ebbinghaus c in R = exp(-dt/(c*s)), in rounds (> 0)",
        ),
        ("top_k", "plot memories recalled per query (1..=1000)"),
        ("retriever", "dense | bm25 | hybrid"),
    ];

    fn validate(&self) -> Result<(), String> {
        let ranges: [(&str, u64, u64, u64); 8] = [
            ("theta1", self.theta1, 1, 1000),
            ("theta2", self.theta2 as u64, 1, 100),
            ("theta3", self.theta3 as u64, 1, 100),
            ("summary_tokens", self.summary_tokens as u64, 8, 4096),
            (
                "top_summary_tokens",
                self.top_summary_tokens as u64,
                8,
                4096,
            ),
            ("persona_every", self.persona_every, 1, 10_000),
            ("trajectory_keep", self.trajectory_keep as u64, 1, 100),
            ("k", self.k as u64, 1, 100),
        ];
        for (key, value, lo, hi) in ranges {
            if !(lo..=hi).contains(&value) {
                return Err(format!("{key} = {value}: expected {lo}..={hi}"));
            }
        }
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        for (key, value) in [
            ("dedup_similarity", self.dedup_similarity),
            ("contradiction_similarity", self.contradiction_similarity),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("{key} = {value}: expected 0..=1"));
            }
        }
        for (key, value) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!("{key} = {value}: expected a number >= 0"));
            }
        }
        if !(self.gamma.is_finite() && self.gamma > 0.0) {
            return Err(format!("gamma = {}: expected a number > 0", self.gamma));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(format!("epsilon = {}: expected 0 < x < 1", self.epsilon));
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return Err(format!(
                "time_scale = {}: expected a number > 0",
                self.time_scale
            ));
        }
        Policy::parse(&self.forgetting)?;
        Suppression::parse(&self.suppression)?;
        retriever_kind(&self.retriever)?;
        self.persona_schema()?
            .validate()
            .map_err(|e| format!("keys: {e}"))?;
        if !self.nsb && !self.pcb {
            return Err("nsb and pcb are both off: MOOM would keep nothing".into());
        }
        Ok(())
    }
}

impl MoomParams {
    /// The persona keys in use: `keys` when given, else the default set of `schema`.
    pub fn persona_schema(&self) -> Result<PersonaSchema, String> {
        if !self.keys.is_empty() {
            return Ok(PersonaSchema {
                keys: self.keys.clone(),
            });
        }
        match self.schema.as_str() {
            "en" => Ok(PersonaSchema::default_keys()),
            "zh" => Ok(PersonaSchema::default_keys_zh()),
            other => Err(format!("schema = '{other}': expected en or zh")),
        }
    }
}

#[derive(Debug, Deserialize)]
struct CompetePayload {
    round: u64,
    query: String,
}

pub struct Moom {
    params: MoomParams,
    shape: Shape,
    rules: MergeRules,
    policy: Policy,
    suppression: Suppression,
    competition: Competition,
    retriever: RetrieverKind,
}

impl Moom {
    pub fn new(params: MoomParams) -> Self {
        let shape = Shape {
            theta1: params.theta1.max(1),
            theta2: params.theta2.max(1),
            theta3: params.theta3.max(1),
            summary_tokens: params.summary_tokens,
            top_summary_tokens: params.top_summary_tokens,
        };
        let rules = MergeRules {
            schema: params.persona_schema().unwrap_or_default(),
            dedup_similarity: params.dedup_similarity,
            contradiction_similarity: params.contradiction_similarity,
            trajectory_keep: params.trajectory_keep.max(1),
            embedding_merge: params.embedding_merge,
            model_merge: params.model_merge,
        };
        let competition = Competition {
            alpha: params.alpha,
            beta: params.beta,
            gamma: params.gamma,
            epsilon: params.epsilon,
        };
        Self {
            shape,
            rules,
            policy: Policy::parse(&params.forgetting).unwrap_or(Policy::Competition),
            suppression: Suppression::parse(&params.suppression).unwrap_or(Suppression::Round),
            competition,
            retriever: retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Hybrid),
            params,
        }
    }

    /// The forgetting score of a plot memory at round `now` under this preset's policy
    /// (persistent suppression included); None under `none`.
    pub fn forgetting_score(&self, memory: &Memory, now: u64) -> Option<f64> {
        self.score(
            now,
            memory.created.round,
            &forgetting::retrievals(memory),
            forgetting::inhibition(memory),
        )
    }

    /// The policy's score at round `now` of a memory made at round `created`, retrieved in
    /// `rounds`, with persistent suppression factor `inhibition` (used only under
    /// `suppression = persistent`); None under `none`.
    fn score(&self, now: u64, created: u64, rounds: &[u64], inhibition: f64) -> Option<f64> {
        match self.policy {
            Policy::Competition => {
                let s = self.competition.score(now, created, rounds);
                Some(if self.suppression == Suppression::Persistent {
                    s * inhibition
                } else {
                    s
                })
            }
            Policy::Ebbinghaus => Some(forgetting::ebbinghaus(
                now,
                created,
                rounds,
                self.params.time_scale,
            )),
            Policy::None => None,
        }
    }

    /// One round of competition: reinforce the top k for the round's utterance, suppress the
    /// next k, and forget the lowest scores beyond the capacity.
    fn compete(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: CompetePayload = JobSpec::parse(job)?;
        let now = payload.round;
        let mut derived = Derived::default();
        let pool = ctx.all(MemoryFilter {
            kinds: vec![KindTag::Exchange, KindTag::Summary],
            ..MemoryFilter::default()
        })?;
        let pool: Vec<Memory> = pool
            .into_iter()
            .filter(|m| nsb::level_of(m).is_some())
            .collect();
        if pool.is_empty() || payload.query.trim().is_empty() {
            return Ok(derived);
        }
        let k = self.params.k;
        let hits = search(
            ctx,
            &payload.query,
            &[KindTag::Exchange, KindTag::Summary],
            None,
            self.retriever,
            2 * k,
        )?;
        let ranked: Vec<mnemos_core::MemoryId> = hits
            .iter()
            .filter(|h| nsb::level_of(&h.memory).is_some())
            .map(|h| h.memory.id)
            .collect();
        let reinforced: Vec<mnemos_core::MemoryId> = ranked.iter().take(k).copied().collect();
        let suppressed: Vec<mnemos_core::MemoryId> =
            ranked.iter().skip(k).take(k).copied().collect();

        let mut scored: Vec<(f64, &Memory)> = Vec::with_capacity(pool.len());
        for memory in &pool {
            let mut rounds = forgetting::retrievals(memory);
            let is_reinforced = reinforced.contains(&memory.id);
            let is_suppressed = suppressed.contains(&memory.id);
            let persistent = self.suppression == Suppression::Persistent;
            // Being reinforced lifts a persistent suppression; being suppressed halves it.
            let inhibition = match (is_reinforced, is_suppressed && persistent) {
                (true, _) => 1.0,
                (false, true) => forgetting::inhibition(memory) * 0.5,
                (false, false) => forgetting::inhibition(memory),
            };
            let mut metadata = None;
            let mut metrics = None;
            if is_reinforced {
                let text = forgetting::with_retrieval(&rounds, now);
                let mut m = memory.metadata.clone();
                m.insert(forgetting::RETRIEVED_KEY.into(), text);
                metadata = Some(m);
                if !rounds.contains(&now) {
                    rounds.push(now);
                }
                let mut x = memory.metrics.clone();
                x.strength = Some(1.0 + rounds.len() as f64);
                if persistent {
                    x.inhibition = None;
                }
                metrics = Some(x);
            } else if is_suppressed && persistent {
                let mut x = memory.metrics.clone();
                x.inhibition = Some(inhibition);
                metrics = Some(x);
            }
            let round_halving = self.policy == Policy::Competition
                && self.suppression == Suppression::Round
                && is_suppressed;
            let mut score = match self.score(now, memory.created.round, &rounds, inhibition) {
                Some(s) if round_halving => s * 0.5,
                Some(s) => s,
                None => f64::INFINITY,
            };
            if !score.is_finite() {
                score = f64::MAX;
            }
            if metadata.is_some() || metrics.is_some() {
                derived.updates.push(BatchUpdate {
                    id: memory.id,
                    patch: MemoryPatch {
                        metadata,
                        metrics,
                        ..MemoryPatch::default()
                    },
                    at: job.created,
                });
            }
            scored.push((score, memory));
        }
        let capacity = self.params.capacity;
        if capacity > 0 && self.policy != Policy::None && scored.len() > capacity {
            // Lowest score first; among equals the older goes first.
            scored.sort_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(a.1.created.round.cmp(&b.1.created.round))
            });
            let excess = scored.len() - capacity;
            let policy = match self.policy {
                Policy::Competition => "competition score",
                _ => "retention",
            };
            for (score, memory) in scored.iter().take(excess) {
                derived.updates.retain(|u| u.id != memory.id);
                derived.forgets.push(BatchForget {
                    id: memory.id,
                    reason: format!(
                        "moom: {policy} {score:.4} among the {excess} lowest of {} plot memories (capacity {capacity}) at round {now}",
                        scored.len()
                    ),
                    cause: ForgetCause::preset(NAME),
                    at: job.created,
                });
            }
        }
        Ok(derived)
    }

    /// Plot candidates for a query: units and summaries (raw turns when the NSB is off).
    fn plot_hits(
        &self,
        ctx: &MechanismCtx,
        request: &RecallRequest,
    ) -> EngineResult<Vec<mnemos_core::Hit>> {
        let wanted = (self.params.top_k * 3).min(10_000);
        if !self.params.nsb {
            return search(
                ctx,
                &request.query,
                &[KindTag::Turn],
                request.session.as_deref(),
                self.retriever,
                self.params.top_k,
            );
        }
        let mut hits = search(
            ctx,
            &request.query,
            &[KindTag::Exchange, KindTag::Summary],
            request.session.as_deref(),
            self.retriever,
            wanted,
        )?;
        hits.retain(|h| nsb::level_of(&h.memory).is_some());
        hits.truncate(self.params.top_k);
        Ok(hits)
    }

    /// The rounds no unit covers yet (at most about θ1 of them), as raw turns, oldest first:
    /// the recent dialogue MOOM's prompt carries beside its memories.
    fn tail_turns(
        &self,
        ctx: &MechanismCtx,
        now: u64,
        session: Option<&str>,
    ) -> EngineResult<Vec<Memory>> {
        if !self.params.nsb {
            return Ok(Vec::new());
        }
        let from = nsb::last_packaged_round(ctx)?.map_or(0, |p| p + 1);
        let mut tail = nsb::turns_in_rounds(ctx, from, now)?;
        if let Some(session) = session {
            tail.retain(|m| m.scope.session == session);
        }
        Ok(tail)
    }

    /// The persona sketch as context items within `budget` tokens: the values most relevant
    /// to the query first (each scored by retrieval relevance, 0 when not retrieved), then
    /// shown in schema key order and by round.
    fn persona_items(
        &self,
        ctx: &MechanismCtx,
        now: u64,
        query: &str,
        budget: usize,
    ) -> EngineResult<(Vec<ContextItem>, usize)> {
        let values = ctx.active_of(&[KindTag::Persona])?;
        if values.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let relevance: std::collections::HashMap<mnemos_core::MemoryId, f64> = search(
            ctx,
            query,
            &[KindTag::Persona],
            None,
            self.retriever,
            values.len().min(10_000),
        )?
        .into_iter()
        .map(|h| (h.memory.id, f64::from(h.score)))
        .collect();
        let mut items: Vec<(ContextItem, (usize, u64))> = values
            .iter()
            .map(|m| {
                let said = pcb::said_round(m);
                let key = pcb::key_of(m).unwrap_or("");
                let trajectory = self
                    .rules
                    .schema
                    .key(key)
                    .is_some_and(|k| k.kind == mnemos_core::memory_model::KeyKind::Trajectory);
                let rank = self
                    .rules
                    .schema
                    .keys
                    .iter()
                    .position(|k| k.name == key)
                    .unwrap_or(usize::MAX);
                let score = relevance.get(&m.id).copied().unwrap_or(0.0);
                let mut item = ContextItem::from_memory(m, SECTION_PERSONA, score, 0);
                if trajectory {
                    item.text = format!("{} ({} rounds ago)", m.text, now.saturating_sub(said));
                }
                item.tokens = tokens(&item.text);
                let item = item
                    .with_part("relevance", score)
                    .with_part("said_round", said as f64);
                (item, (rank, said))
            })
            .collect();
        let total = items.len();
        // Most relevant first (newer first among equals) for packing.
        items.sort_by(|a, b| b.0.score.total_cmp(&a.0.score).then(b.1 .1.cmp(&a.1 .1)));
        let order: std::collections::HashMap<mnemos_core::MemoryId, (usize, u64)> =
            items.iter().map(|(i, o)| (i.memory_id, *o)).collect();
        let mut kept = pack_within_budget(items.into_iter().map(|(i, _)| i).collect(), budget);
        kept.sort_by_key(|i| order.get(&i.memory_id).copied().unwrap_or((usize::MAX, 0)));
        Ok((kept, total))
    }
}

impl Mechanism for Moom {
    fn name(&self) -> &str {
        NAME
    }

    fn views(&self) -> &'static [ViewKind] {
        &[ViewKind::Persona, ViewKind::Timeline]
    }

    fn view(
        &self,
        store: &dyn StoreRead,
        user: &UserKey,
        agent: Option<&str>,
        kind: ViewKind,
    ) -> EngineResult<View> {
        Ok(match kind {
            ViewKind::Persona => View::Persona(view::persona(store, user, agent)?),
            ViewKind::Timeline => View::Timeline(view::timeline(store, user, agent)?),
            ViewKind::Chains => {
                return Err(mnemos_engine::EngineError::config(format!(
                    "preset '{NAME}' has no chains view"
                )))
            }
        })
    }

    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        if turn.role != mnemos_core::Role::User {
            return Ok(Vec::new());
        }
        let stored = ctx.store.last_round(ctx.user)?;
        let Some(latest) = ctx.earlier.iter().map(|t| t.at.round).chain(stored).max() else {
            return Ok(Vec::new());
        };
        let round = turn.at.round;
        if latest >= round {
            // Not the turn that opens its round (explicit rounds may repeat): nothing new ends.
            return Ok(Vec::new());
        }
        let mut jobs = Vec::new();
        // Round `round - 1` (and any skipped ones) just completed; a boundary m·θ crossed
        // between `latest` and `round` closes a unit / a persona window.
        let theta1 = self.shape.theta1;
        if self.params.nsb && round / theta1 > latest / theta1 {
            jobs.push(JobSpec::new(
                nsb::JOB_PACKAGE,
                json!({ "to_round": round - 1, "flush": false }),
            ));
        }
        let every = self.params.persona_every;
        if self.params.pcb && round / every > latest / every {
            jobs.push(JobSpec::new(
                pcb::JOB_PERSONA,
                json!({ "from_round": latest / every * every, "to_round": round - 1 }),
            ));
        }
        if self.params.nsb && self.policy != Policy::None {
            jobs.push(JobSpec::new(
                JOB_COMPETE,
                json!({ "round": turn.at.round, "query": turn.text }),
            ));
        }
        Ok(jobs)
    }

    fn end_session(&self, ctx: &ObserveCtx, _session: &str) -> EngineResult<Vec<JobSpec>> {
        let Some(last) = ctx.store.last_round(ctx.user)? else {
            return Ok(Vec::new());
        };
        let mut jobs = Vec::new();
        if self.params.nsb && self.params.flush_on_session_end {
            jobs.push(JobSpec::new(
                nsb::JOB_PACKAGE,
                json!({ "to_round": last, "flush": true }),
            ));
        }
        if self.params.pcb {
            // The rounds since the last periodic snapshot.
            let every = self.params.persona_every;
            jobs.push(JobSpec::new(
                pcb::JOB_PERSONA,
                json!({ "from_round": last / every * every, "to_round": last }),
            ));
        }
        Ok(jobs)
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            nsb::JOB_PACKAGE => nsb::package(ctx, job, &self.shape),
            nsb::JOB_FOLD => nsb::fold(ctx, job, &self.shape),
            pcb::JOB_PERSONA => pcb::snapshot_and_merge(ctx, job, &self.rules),
            JOB_COMPETE => self.compete(ctx, job),
            other => Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{other}' jobs"),
            }),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let now = ctx.moment()?.round;
        let mut notes = Vec::new();
        let headers = [SECTION_PERSONA, SECTION_PLOT, SECTION_RECENT]
            .iter()
            .map(|s| tokens(&format!("## {s}")) + 2)
            .sum::<usize>();
        let room = request.token_budget.saturating_sub(headers);

        // The persona sketch takes at most half the room, its most relevant values first.
        let (persona, persona_count) = if self.params.pcb {
            self.persona_items(ctx, now, &request.query, room / 2)?
        } else {
            (Vec::new(), 0)
        };
        if persona.len() < persona_count {
            notes.push(format!(
                "{} of {persona_count} persona values left out (half the budget; the least relevant)",
                persona_count - persona.len()
            ));
        }
        let mut used: usize = persona.iter().map(|i| i.tokens).sum();

        // The recent rounds no unit holds yet take at most a third of what is left, newest
        // lines first.
        let tail: Vec<ContextItem> = self
            .tail_turns(ctx, now, request.session.as_deref())?
            .iter()
            .map(|m| {
                let text = mnemos_engine::primitives::speaker_text(m);
                let mut item = ContextItem::from_memory(m, SECTION_RECENT, 0.0, tokens(&text));
                item.text = text;
                item.with_part("recent_round", m.created.round as f64)
            })
            .collect();
        let tail_count = tail.len();
        let mut tail = pack_within_budget(
            tail.into_iter().rev().collect(),
            room.saturating_sub(used) / 3,
        );
        tail.reverse();
        if tail.len() < tail_count {
            notes.push(format!(
                "{} of {tail_count} recent turns did not fit the budget",
                tail_count - tail.len()
            ));
        }
        used += tail.iter().map(|i| i.tokens).sum::<usize>();

        // The plot memories most relevant to the query fill the rest.
        let mut plot: Vec<(ContextItem, u64)> = Vec::new();
        for hit in self.plot_hits(ctx, request)? {
            let mut item = hit_item(&hit, SECTION_PLOT);
            item = item.with_part("relevance", f64::from(hit.score));
            if let Some(level) = nsb::level_of(&hit.memory) {
                item = item.with_part("level", f64::from(level));
            }
            if let Some(score) = self.forgetting_score(&hit.memory, now) {
                item = item.with_part("forgetting_score", score);
            }
            let start = nsb::span_of(&hit.memory).map_or(hit.memory.created.round, |(f, _)| f);
            plot.push((item, start));
        }
        let candidates = plot.len();
        let items: Vec<ContextItem> = plot.iter().map(|(i, _)| i.clone()).collect();
        let kept = pack_within_budget(items, room.saturating_sub(used));
        if kept.len() < candidates {
            notes.push(format!(
                "{} of {candidates} plot memories did not fit the budget",
                candidates - kept.len()
            ));
        }
        // Timeline order: by the first round each covers.
        let mut kept: Vec<(ContextItem, u64)> = kept
            .into_iter()
            .map(|item| {
                let start = plot
                    .iter()
                    .find(|(p, _)| p.memory_id == item.memory_id)
                    .map_or(0, |(_, s)| *s);
                (item, start)
            })
            .collect();
        kept.sort_by_key(|(_, start)| *start);
        let mut items = persona;
        items.extend(kept.into_iter().map(|(i, _)| i));
        items.extend(tail);
        let context = build_context(NAME, &request.query, items, request.token_budget, notes);
        Ok(Recall {
            context,
            effects: Derived::default(),
        })
    }
}
