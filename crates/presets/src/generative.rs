//! GenerativeAgent (Park et al., UIST 2023): a memory stream scored by recency, importance and
//! relevance, with reflections once enough important things have happened.
//!
//! How it maps to the paper:
//! - **Memory stream.** Every raw turn is an observation. `observe` plans one `importance` job
//!   per turn; the job asks the model's `rate_importance` (1..=10, the paper's "poignancy"
//!   prompt) with the session's few preceding turns as what is known so far, and writes it to
//!   `metrics.importance` with a `BatchUpdate` that keeps the memory's other metrics.
//! - **Retrieval.** score = α_recency·recency + α_importance·importance + α_relevance·relevance,
//!   each min-max normalized over the candidates ([`min_max`]), all α = 1 by default. Recency =
//!   decay^(rounds since the memory was created or last retrieved), decay 0.995 — the paper
//!   decays per game hour; a dialogue has no game clock, so one round stands for one hour.
//!   Relevance is the retriever's score (cosine with the default dense retriever, as in the
//!   paper); `candidate_factor × top_k` candidates come from retrieval and are rescored. A
//!   memory not yet rated (its job still pending) counts as importance 5. The breakdown shows
//!   each part raw and normalized.
//! - **Access.** The paper refreshes a memory's last-access time when it is retrieved. `Derived`
//!   has no access-log channel, so recall writes `metrics.extra["last_access_round"]` (and
//!   `["last_access_ms"]`) of every returned memory through its effects; a memory already
//!   accessed in the current round is not rewritten, so repeated queries do not pile up versions.
//! - **Reflection.** When the importance of the turns since the last reflection sums to
//!   `reflect_threshold` (paper: 150), the importance job that crosses it adds a `reflect` job.
//!   "Since the last reflection" is read from the store: each reflection records in its metadata
//!   (`generative.through`) the last turn of the span it covers, as the store's order key
//!   `round/time/memory-id`. The reflect job recomputes the first crossing after the newest
//!   reflection and skips when it is not due, so duplicate or replayed jobs cannot reflect twice
//!   on one span; after reflecting it plans the next due span, if any (a bulk add rated many
//!   turns at once). The reflection reads the most recent `reflect_window` (paper: 100)
//!   memories of the stream up to the span's end (turns and earlier reflections), and stands in
//!   for the paper's two prompts: the model's `categorize` finds the window's topics (the paper's
//!   "most salient questions"), the `reflections_per_run` (paper: 3) topics whose turns *of this
//!   span* carry the most importance are kept, and for each, those new turns at least as
//!   important as the window's mean (at most `reflect_sources`, most important first) go to
//!   `summarize` (level 2) to state the insight. Each becomes a `MemoryKind::Reflection` with
//!   provenance = the union of its sources' provenance and an importance from
//!   `rate_importance`, retrievable like any other memory. An insight that repeats an existing
//!   reflection is not written again; when every insight does, that reflection's
//!   `generative.through` moves to the new span's end, so the span still counts as reflected
//!   (otherwise the same span would come due forever).
//!
//! Offline model: `rate_importance` scores self-disclosure, personal topics, entities, numbers
//! and novelty against the preceding turns; `categorize` clusters the lines by embedding;
//! `summarize` is extractive, so an offline "insight" is the most central sentences of a topic's
//! most important memories rather than an inference. An LLM model answers the same tasks with
//! written insights.
//!
//! Cost: each importance job lists the agent's turn memories once (to find the turn and sum the
//! importance since the last reflection), so ingest is O(n) per turn.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::json;

use mnemos_core::memory_model::{CategorySummary, Line, MAX_TASK_BYTES};
use mnemos_core::KindTag;
use mnemos_core::{
    BatchUpdate, Hit, Job, Memory, MemoryFilter, MemoryId, MemoryKind, MemoryModelExt, MemoryPatch,
    Moment, RetrieverKind, Role, StateFilter, Turn, TurnId,
};

use super::retrieval::{hit_item, retriever_kind, search};
use super::PresetParams;
use crate::primitives::{derived_memory, union_provenance};
use crate::primitives::{exponential_recency, memory_line, min_max, turn_line};
use mnemos_engine::mechanism::{
    ContextItem, Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::{build_context, pack_within_budget, speaker_text, tokens};
use mnemos_engine::{EngineError, EngineResult};

pub const NAME: &str = "generative";
pub const SUMMARY: &str = "GenerativeAgent (Park et al. 2023): memory stream ranked by recency + \
     importance + relevance, with reflections";

/// `metrics.extra` key: the round a memory was last retrieved.
pub const LAST_ACCESS_ROUND: &str = "last_access_round";
/// `metrics.extra` key: the wall time (ms) a memory was last retrieved.
pub const LAST_ACCESS_MS: &str = "last_access_ms";
/// Reflection metadata: the order key of the last turn of the span it reflects on.
pub const THROUGH_KEY: &str = "generative.through";
/// Reflection metadata: the topic it came from.
pub const TOPIC_KEY: &str = "generative.topic";

const JOB_IMPORTANCE: &str = "importance";
const JOB_REFLECT: &str = "reflect";
const SECTION: &str = "memory stream (recency + importance + relevance)";
/// Importance of a memory whose rating job has not run yet (the scale's middle).
const UNRATED_IMPORTANCE: f64 = 5.0;
/// Bytes of text one categorize or importance task may carry (half a task, for labels).
const TASK_BYTES: usize = MAX_TASK_BYTES / 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerativeParams {
    /// Memories handed back per query.
    pub top_k: usize,
    /// Candidates from retrieval = candidate_factor × top_k, rescored.
    pub candidate_factor: usize,
    /// dense (the paper's embedding cosine), bm25 or hybrid.
    pub retriever: String,
    /// Recency decay per round since the last access.
    pub recency_decay: f64,
    pub alpha_recency: f64,
    pub alpha_importance: f64,
    pub alpha_relevance: f64,
    /// Summed importance of new turns that triggers a reflection.
    pub reflect_threshold: f64,
    /// Most recent memories a reflection looks at.
    pub reflect_window: usize,
    /// Most reflections one run writes.
    pub reflections_per_run: usize,
    /// Most important memories of a topic given to the insight summary.
    pub reflect_sources: usize,
    /// Token budget of one reflection.
    pub reflection_tokens: usize,
    /// Preceding turns of the session shown when rating a turn's importance.
    pub importance_context: usize,
}

impl Default for GenerativeParams {
    fn default() -> Self {
        Self {
            top_k: 10,
            candidate_factor: 5,
            retriever: "dense".into(),
            recency_decay: 0.995,
            alpha_recency: 1.0,
            alpha_importance: 1.0,
            alpha_relevance: 1.0,
            reflect_threshold: 150.0,
            reflect_window: 100,
            reflections_per_run: 3,
            reflect_sources: 10,
            reflection_tokens: 64,
            importance_context: 4,
        }
    }
}

impl PresetParams for GenerativeParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("top_k", "memories returned per query (1..=1000)"),
        (
            "candidate_factor",
            "retrieval candidates = candidate_factor * top_k, rescored (1..=100)",
        ),
        ("retriever", "dense | bm25 | hybrid"),
        (
            "recency_decay",
            "recency = decay^(rounds since last access) (0 < x <= 1)",
        ),
        ("alpha_recency", "weight of normalized recency (>= 0)"),
        ("alpha_importance", "weight of normalized importance (>= 0)"),
        ("alpha_relevance", "weight of normalized relevance (>= 0)"),
        (
            "reflect_threshold",
            "summed importance of new turns that triggers a reflection (1..=1000000)",
        ),
        (
            "reflect_window",
            "most recent memories a reflection reads (1..=1000)",
        ),
        (
            "reflections_per_run",
            "most reflections per trigger (1..=10)",
        ),
        (
            "reflect_sources",
            "most important memories per topic summarized into an insight (1..=100)",
        ),
        (
            "reflection_tokens",
            "token budget of one reflection (8..=1024)",
        ),
        (
            "importance_context",
            "preceding turns of the session shown when rating importance (0..=50)",
        ),
    ];

    fn validate(&self) -> Result<(), String> {
        let ranges: [(&str, usize, usize, usize); 7] = [
            ("top_k", self.top_k, 1, 1000),
            ("candidate_factor", self.candidate_factor, 1, 100),
            ("reflect_window", self.reflect_window, 1, 1000),
            ("reflections_per_run", self.reflections_per_run, 1, 10),
            ("reflect_sources", self.reflect_sources, 1, 100),
            ("reflection_tokens", self.reflection_tokens, 8, 1024),
            ("importance_context", self.importance_context, 0, 50),
        ];
        for (key, value, lo, hi) in ranges {
            if !(lo..=hi).contains(&value) {
                return Err(format!("{key} = {value}: expected {lo}..={hi}"));
            }
        }
        retriever_kind(&self.retriever)?;
        if !(self.recency_decay > 0.0 && self.recency_decay <= 1.0) {
            return Err(format!(
                "recency_decay = {}: expected 0 < x <= 1",
                self.recency_decay
            ));
        }
        let alphas = [
            ("alpha_recency", self.alpha_recency),
            ("alpha_importance", self.alpha_importance),
            ("alpha_relevance", self.alpha_relevance),
        ];
        for (key, value) in alphas {
            if !(value.is_finite() && (0.0..=1000.0).contains(&value)) {
                return Err(format!("{key} = {value}: expected 0..=1000"));
            }
        }
        if alphas.iter().all(|(_, v)| *v == 0.0) {
            return Err("alpha_recency, alpha_importance and alpha_relevance are all 0".into());
        }
        if !(1.0..=1e6).contains(&self.reflect_threshold) {
            return Err(format!(
                "reflect_threshold = {}: expected 1..=1000000",
                self.reflect_threshold
            ));
        }
        Ok(())
    }
}

/// A memory's place in the store's order (created round, created time, id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamKey {
    round: u64,
    time: i64,
    id: MemoryId,
}

impl StreamKey {
    pub fn of(memory: &Memory) -> Self {
        StreamKey {
            round: memory.created.round,
            time: memory.created.time.millis(),
            id: memory.id,
        }
    }
}

impl fmt::Display for StreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.round, self.time, self.id)
    }
}

impl FromStr for StreamKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(3, '/');
        let bad = || format!("'{s}' is not a stream key (round/time/memory-id)");
        let round = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let time = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let id = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        Ok(StreamKey { round, time, id })
    }
}

#[derive(Debug, Deserialize)]
struct ImportancePayload {
    turn_id: TurnId,
}

#[derive(Debug, Deserialize)]
struct ReflectPayload {
    through: String,
}

pub struct GenerativeAgent {
    params: GenerativeParams,
    retriever: RetrieverKind,
}

impl GenerativeAgent {
    pub fn new(params: GenerativeParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Dense);
        Self { params, retriever }
    }

    fn job_error(job: &Job, message: String) -> EngineError {
        EngineError::Job {
            id: job.id.to_string(),
            message,
        }
    }

    /// Rate one turn's importance; if that makes a reflection due, plan it.
    fn rate(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: ImportancePayload = JobSpec::parse(job)?;
        let mut derived = Derived::default();
        let turns = ctx.active_of(&[KindTag::Turn])?;
        // A turn forgotten (or deleted) before its job ran needs no rating.
        let Some(pos) = turns
            .iter()
            .position(|m| m.provenance.first() == Some(&payload.turn_id))
        else {
            return Ok(derived);
        };
        let target = &turns[pos];
        if target.metrics.importance.is_some() {
            return Ok(derived);
        }
        let past = self.preceding(&turns[..pos], &target.scope.session);
        let line = match ctx.turns(&[payload.turn_id])?.first() {
            Some(turn) => turn_line(turn),
            None => memory_line(target),
        };
        let importance = f64::from(ctx.model.rate_importance(&past, &[line])?);
        let mut metrics = target.metrics.clone();
        metrics.importance = Some(importance);
        derived.updates.push(BatchUpdate {
            id: target.id,
            patch: MemoryPatch {
                metrics: Some(metrics),
                ..MemoryPatch::default()
            },
            at: job.created,
        });

        if !self.reflect_pending(ctx)? {
            let last = last_reflected(ctx)?;
            let rated = (target.id, importance);
            if let Some(through) = self.crossing(&turns, last, Some(rated)) {
                derived.jobs.push(reflect_job(through));
            }
        }
        Ok(derived)
    }

    /// The session's last `importance_context` turns before the rated one, as one text.
    fn preceding(&self, before: &[Memory], session: &str) -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut bytes = 0usize;
        for memory in before.iter().rev().filter(|m| m.scope.session == session) {
            if lines.len() >= self.params.importance_context {
                break;
            }
            let text = speaker_text(memory);
            bytes += text.len() + 1;
            if bytes > TASK_BYTES {
                break;
            }
            lines.push(text);
        }
        lines.reverse();
        lines.join("\n")
    }

    /// Is a reflect job of this agent already waiting (and not failing)? Then it covers the
    /// current span, and will plan the next one itself.
    fn reflect_pending(&self, ctx: &MechanismCtx) -> EngineResult<bool> {
        Ok(ctx
            .store()
            .pending_jobs(ctx.user, usize::MAX)?
            .iter()
            .any(|j| {
                j.kind == JOB_REFLECT
                    && j.mechanism == NAME
                    && j.scope.agent == ctx.agent
                    && j.attempts == 0
            }))
    }

    /// The first turn after `last` at which the summed importance reaches the threshold.
    /// `rated` supplies an importance not yet in the store.
    fn crossing(
        &self,
        turns: &[Memory],
        last: Option<StreamKey>,
        rated: Option<(MemoryId, f64)>,
    ) -> Option<StreamKey> {
        let mut sum = 0.0;
        for memory in turns {
            let key = StreamKey::of(memory);
            if last.is_some_and(|l| key <= l) {
                continue;
            }
            let importance = match rated {
                Some((id, value)) if id == memory.id => Some(value),
                _ => memory.metrics.importance,
            };
            sum += importance.unwrap_or(0.0);
            if sum >= self.params.reflect_threshold {
                return Some(key);
            }
        }
        None
    }

    /// Topics by the importance of their new turns (a topic without line references takes
    /// every line), best first, at most `reflections_per_run`; topics with nothing new are not
    /// reflected on again (when none has, the whole window is one topic).
    fn rank_topics(
        &self,
        topics: Vec<CategorySummary>,
        recent: &[&Memory],
        fresh: &[bool],
    ) -> Vec<(f64, String, Vec<usize>)> {
        let all: Vec<usize> = (0..recent.len()).collect();
        let mut ranked: Vec<(f64, String, Vec<usize>)> = topics
            .into_iter()
            .map(|t| {
                let mut members: Vec<usize> =
                    t.lines.into_iter().filter(|&i| i < recent.len()).collect();
                members.sort_unstable();
                members.dedup();
                if members.is_empty() {
                    members = all.clone();
                }
                let weight = members
                    .iter()
                    .filter(|&&i| fresh[i])
                    .map(|&i| importance_of(recent[i]))
                    .sum();
                (weight, t.category, members)
            })
            .filter(|(weight, _, _)| *weight > 0.0)
            .collect();
        if ranked.is_empty() {
            ranked.push((0.0, String::new(), all));
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        ranked.truncate(self.params.reflections_per_run);
        ranked
    }

    /// Reflect on the span that is due, if it is the one this job was planned for (or earlier).
    fn reflect(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        let payload: ReflectPayload = JobSpec::parse(job)?;
        let planned: StreamKey = payload
            .through
            .parse()
            .map_err(|e| Self::job_error(job, e))?;
        let mut derived = Derived::default();
        let turns = ctx.active_of(&[KindTag::Turn])?;
        let last = last_reflected(ctx)?;
        let Some(through) = self.crossing(&turns, last, None) else {
            return Ok(derived); // a reflection already took this span
        };
        if through > planned {
            return Ok(derived);
        }

        let stream = ctx.active_of(&[KindTag::Turn, KindTag::Reflection])?;
        let upto: Vec<&Memory> = stream
            .iter()
            .filter(|m| StreamKey::of(m) <= through)
            .collect();
        let mut recent: Vec<&Memory> = upto
            .iter()
            .rev()
            .take(self.params.reflect_window)
            .copied()
            .collect();
        recent.reverse();
        trim_to_bytes(&mut recent, TASK_BYTES);
        if recent.is_empty() {
            return Ok(derived);
        }
        let lines: Vec<Line> = recent.iter().map(|m| memory_line(m)).collect();
        let topics = ctx.model.categorize(&lines)?;

        // The span's own turns are what is new; older memories in the window give context.
        let fresh: Vec<bool> = recent
            .iter()
            .map(|m| m.kind == MemoryKind::Turn && last.is_none_or(|l| StreamKey::of(m) > l))
            .collect();
        let floor = recent.iter().map(|m| importance_of(m)).sum::<f64>() / recent.len() as f64;
        let ranked = self.rank_topics(topics, &recent, &fresh);

        let existing = ctx.active_of(&[KindTag::Reflection])?;
        let mut written: Vec<String> = Vec::new();
        let mut restated: Option<&Memory> = None;
        for (_, topic, members) in ranked {
            let sources = self.sources(&recent, &fresh, &members, floor);
            let texts: Vec<String> = sources.iter().map(|m| speaker_text(m)).collect();
            let text = ctx
                .model
                .summarize(&texts, 2, self.params.reflection_tokens)?;
            if written.contains(&text) {
                continue;
            }
            if let Some(old) = existing.iter().find(|m| m.text == text) {
                restated = restated.or(Some(old));
                continue;
            }
            let provenance = union_provenance(sources.iter().copied());
            if provenance.is_empty() {
                continue;
            }
            let rating = ctx
                .model
                .rate_importance("", &[Line::new(Role::User, None, text.clone())])?;
            let mut memory = derived_memory(
                job,
                MemoryKind::Reflection,
                text.clone(),
                provenance,
                job.created,
                mnemos_core::Metadata::new(),
            );
            memory.metrics.importance = Some(f64::from(rating));
            memory
                .metadata
                .insert(THROUGH_KEY.into(), through.to_string());
            if !topic.trim().is_empty() {
                memory.metadata.insert(TOPIC_KEY.into(), topic);
            }
            derived.memories.push(memory);
            written.push(text);
        }
        // Every insight was already stated: that reflection now covers this span too, so the
        // span is marked done and the next one can become due.
        if let (true, Some(old)) = (derived.memories.is_empty(), restated) {
            let mut metadata = old.metadata.clone();
            metadata.insert(THROUGH_KEY.into(), through.to_string());
            derived.updates.push(BatchUpdate {
                id: old.id,
                patch: MemoryPatch {
                    metadata: Some(metadata),
                    ..MemoryPatch::default()
                },
                at: job.created,
            });
        }
        if derived.memories.is_empty() && derived.updates.is_empty() {
            return Ok(derived);
        }
        if let Some(next) = self.crossing(&turns, Some(through), None) {
            derived.jobs.push(reflect_job(next));
        }
        Ok(derived)
    }

    /// A topic's memories worth an insight: its new turns of the span at least as important as
    /// the window's mean (the most important one if none is), most important first, at most
    /// `reflect_sources`, each text once, returned in stream order. A topic with no new turn
    /// (only when the model gave no line references) uses all its members the same way.
    fn sources<'m>(
        &self,
        recent: &[&'m Memory],
        fresh: &[bool],
        members: &[usize],
        floor: f64,
    ) -> Vec<&'m Memory> {
        let mut order: Vec<usize> = members.iter().copied().filter(|&i| fresh[i]).collect();
        if order.is_empty() {
            order = members.to_vec();
        }
        order.sort_by(|&a, &b| {
            importance_of(recent[b])
                .total_cmp(&importance_of(recent[a]))
                .then_with(|| b.cmp(&a))
        });
        let mut chosen: Vec<usize> = Vec::new();
        for i in order {
            if chosen.len() >= self.params.reflect_sources {
                break;
            }
            let text = &recent[i].text;
            let repeated = chosen.iter().any(|&c| recent[c].text == *text);
            if (importance_of(recent[i]) >= floor || chosen.is_empty()) && !repeated {
                chosen.push(i);
            }
        }
        chosen.sort_unstable();
        chosen.into_iter().map(|i| recent[i]).collect()
    }

    /// Rounds since the memory was created or last retrieved.
    fn rounds_since_access(memory: &Memory, now: Moment) -> f64 {
        let since = memory
            .metrics
            .extra
            .get(LAST_ACCESS_ROUND)
            .copied()
            .unwrap_or(0.0)
            .max(memory.created.round as f64);
        (now.round as f64 - since).max(0.0)
    }

    fn touch(memory: &Memory, now: Moment) -> Option<BatchUpdate> {
        if memory.metrics.extra.get(LAST_ACCESS_ROUND) == Some(&(now.round as f64)) {
            return None;
        }
        let mut metrics = memory.metrics.clone();
        metrics
            .extra
            .insert(LAST_ACCESS_ROUND.into(), now.round as f64);
        metrics
            .extra
            .insert(LAST_ACCESS_MS.into(), now.time.millis() as f64);
        Some(BatchUpdate {
            id: memory.id,
            patch: MemoryPatch {
                metrics: Some(metrics),
                ..MemoryPatch::default()
            },
            at: now,
        })
    }
}

fn reflect_job(through: StreamKey) -> JobSpec {
    JobSpec::new(JOB_REFLECT, json!({ "through": through.to_string() }))
}

fn importance_of(memory: &Memory) -> f64 {
    memory.metrics.importance.unwrap_or(UNRATED_IMPORTANCE)
}

/// The end of the newest reflected span (forgotten reflections count: their span was done).
fn last_reflected(ctx: &MechanismCtx) -> EngineResult<Option<StreamKey>> {
    Ok(ctx
        .all(MemoryFilter {
            kinds: vec![KindTag::Reflection],
            state: StateFilter::All,
            ..MemoryFilter::default()
        })?
        .iter()
        .filter_map(|m| m.metadata.get(THROUGH_KEY)?.parse::<StreamKey>().ok())
        .max())
}

/// Drop the oldest memories until the texts fit `max_bytes`.
fn trim_to_bytes(memories: &mut Vec<&Memory>, max_bytes: usize) {
    let mut total: usize = memories.iter().map(|m| m.text.len() + 64).sum();
    while total > max_bytes && !memories.is_empty() {
        total -= memories[0].text.len() + 64;
        memories.remove(0);
    }
}

impl Mechanism for GenerativeAgent {
    fn name(&self) -> &str {
        NAME
    }

    fn observe(&self, _ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(vec![JobSpec::new(
            JOB_IMPORTANCE,
            json!({ "turn_id": turn.id }),
        )])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        match job.kind.as_str() {
            JOB_IMPORTANCE => self.rate(ctx, job),
            JOB_REFLECT => self.reflect(ctx, job),
            other => Err(Self::job_error(
                job,
                format!("{NAME} plans no '{other}' jobs"),
            )),
        }
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let now = ctx.moment()?;
        let wanted = (self.params.top_k * self.params.candidate_factor).min(10_000);
        let hits: Vec<Hit> = search(
            ctx,
            &request.query,
            &[KindTag::Turn, KindTag::Reflection],
            request.session.as_deref(),
            self.retriever,
            wanted,
        )?;
        let p = &self.params;
        let recency: Vec<f64> = hits
            .iter()
            .map(|h| {
                exponential_recency(Self::rounds_since_access(&h.memory, now), p.recency_decay)
            })
            .collect();
        let importance: Vec<f64> = hits.iter().map(|h| importance_of(&h.memory)).collect();
        let relevance: Vec<f64> = hits.iter().map(|h| f64::from(h.score)).collect();
        let (rec_n, imp_n, rel_n) = (min_max(&recency), min_max(&importance), min_max(&relevance));

        let mut items: Vec<ContextItem> = Vec::with_capacity(hits.len());
        for (i, hit) in hits.iter().enumerate() {
            let score = p.alpha_recency * rec_n[i]
                + p.alpha_importance * imp_n[i]
                + p.alpha_relevance * rel_n[i];
            let mut item = hit_item(hit, SECTION)
                .with_part("recency", recency[i])
                .with_part("recency_norm", rec_n[i])
                .with_part("importance", importance[i])
                .with_part("importance_norm", imp_n[i])
                .with_part("relevance", relevance[i])
                .with_part("relevance_norm", rel_n[i]);
            item.score = score;
            items.push(item);
        }
        // Ties go to relevance, then to the newer memory.
        items.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| part(b, "relevance").total_cmp(&part(a, "relevance")))
                .then_with(|| b.created.cmp(&a.created))
        });
        items.truncate(p.top_k);
        let room = request
            .token_budget
            .saturating_sub(tokens(&format!("## {SECTION}")) + 2);
        let kept = pack_within_budget(items, room);
        let context = build_context(NAME, &request.query, kept, request.token_budget, vec![]);

        let by_id: HashMap<MemoryId, &Memory> =
            hits.iter().map(|h| (h.memory.id, &h.memory)).collect();
        let mut effects = Derived::default();
        for item in &context.items {
            if let Some(update) = by_id.get(&item.memory_id).and_then(|m| Self::touch(m, now)) {
                effects.updates.push(update);
            }
        }
        Ok(Recall { context, effects })
    }
}

fn part(item: &ContextItem, name: &str) -> f64 {
    item.breakdown
        .iter()
        .find(|p| p.name == name)
        .map_or(0.0, |p| p.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    use mnemos_core::{Metrics, Scope, Timestamp, UserKey};
    use mnemos_engine::NewTurn;

    use crate::PresetSpec;
    use mnemos_engine::Engine;

    use crate::testing::{memories_of, test_engine, T0};

    fn engine_with(params: &str, inline: bool) -> Engine {
        test_engine(NAME, params, inline)
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

    fn all_of(engine: &Engine, kind: &str) -> Vec<Memory> {
        memories_of(engine, &user(), kind, StateFilter::All)
    }

    fn ctx<'a>(engine: &'a Engine, user: &'a UserKey) -> MechanismCtx<'a> {
        engine.mechanism_ctx(engine.model().as_ref(), user, "bot")
    }

    const LIFE: [&str; 12] = [
        "My mother was diagnosed with diabetes last month and I am worried about her.",
        "I started a new job as a software engineer at a startup in Berlin.",
        "My girlfriend and I got engaged on March 3rd in Paris!",
        "I have been training for the Boston marathon since January.",
        "My grandfather passed away last week, he was 92.",
        "We are adopting a rescue dog named Biscuit next Saturday.",
        "I failed my driving test for the second time yesterday.",
        "My brother is moving to Tokyo to study robotics at the university.",
        "I was promoted to team lead after the product launch in May.",
        "My doctor told me my blood pressure is too high.",
        "I am saving money to buy a small apartment near the river.",
        "My best friend Laura is getting married in Lisbon in October.",
    ];

    #[test]
    fn importance_is_stored_and_other_metrics_are_kept() {
        let engine = engine_with("", false);
        let added = engine
            .add(vec![
                turn("s1", 0, Role::User, LIFE[0]),
                turn("s1", 0, Role::Assistant, "I'm sorry to hear that."),
                turn("s1", 1, Role::User, "ok"),
            ])
            .unwrap();
        assert_eq!(added.jobs_enqueued, 3);
        // Another mechanism's value on the same memory must survive the patch.
        let first = added.turns[0].memory_id().unwrap();
        let mut extra = std::collections::BTreeMap::new();
        extra.insert("other".to_string(), 7.0);
        engine
            .update(
                &user(),
                first,
                &MemoryPatch {
                    metrics: Some(Metrics {
                        strength: Some(3.0),
                        extra,
                        ..Metrics::default()
                    }),
                    ..MemoryPatch::default()
                },
            )
            .unwrap();
        let report = engine.run_pending(&user()).unwrap();
        assert_eq!((report.ran, report.failed), (3, 0), "{:?}", report.errors);
        let turns = all_of(&engine, "turn");
        for m in &turns {
            let i = m.metrics.importance.expect("rated");
            assert!((1.0..=10.0).contains(&i));
        }
        let diagnosis = turns.iter().find(|m| m.id == first).unwrap();
        assert_eq!(diagnosis.metrics.strength, Some(3.0));
        assert_eq!(diagnosis.metrics.extra.get("other"), Some(&7.0));
        let ok = turns.iter().find(|m| m.text == "ok").unwrap();
        assert!(diagnosis.metrics.importance > ok.metrics.importance);
    }

    /// Expected reflection span ends: walk the rated turns, a span closes where its sum
    /// reaches the threshold.
    fn expected_spans(turns: &[Memory], threshold: f64) -> Vec<String> {
        let mut out = Vec::new();
        let mut sum = 0.0;
        for m in turns.iter().filter(|m| m.is_active()) {
            sum += m.metrics.importance.unwrap_or(0.0);
            if sum >= threshold {
                out.push(StreamKey::of(m).to_string());
                sum = 0.0;
            }
        }
        out
    }

    #[test]
    fn reflections_appear_once_per_span_with_their_sources_provenance() {
        let engine = engine_with("reflect_threshold = 30.0", true);
        for (round, text) in (0u64..).zip(LIFE) {
            engine
                .add(vec![
                    turn("s1", round, Role::User, text),
                    turn("s1", round, Role::Assistant, "Tell me more about that."),
                ])
                .unwrap();
        }
        let turns = all_of(&engine, "turn");
        assert!(turns.iter().all(|m| m.metrics.importance.is_some()));
        let reflections = all_of(&engine, "reflection");
        assert!(!reflections.is_empty(), "expected at least one reflection");
        let expected = expected_spans(&turns, 30.0);
        // Every span a reflection covered, including ones an unchanged insight was extended over.
        let mut spans: Vec<String> = reflections
            .iter()
            .flat_map(|r| engine.history(&user(), r.id).unwrap())
            .map(|h| h.snapshot.metadata[THROUGH_KEY].clone())
            .collect();
        spans.sort_by_key(|k| k.parse::<StreamKey>().unwrap());
        spans.dedup();
        assert_eq!(spans, expected);
        for r in &reflections {
            let i = r.metrics.importance.unwrap();
            assert!((1.0..=10.0).contains(&i));
            assert!(!r.provenance.is_empty());
            let through: StreamKey = r.metadata[THROUGH_KEY].parse().unwrap();
            // Provenance = turns of the stream up to the span's end.
            for id in &r.provenance {
                let source = turns.iter().find(|t| t.provenance == vec![*id]).unwrap();
                assert!(StreamKey::of(source) <= through);
            }
        }

        // A replayed or duplicate reflect job for a span already reflected adds nothing.
        let user = user();
        let mechanism = engine.mechanism("bot").clone();
        for span in &spans {
            let job = Job::new(
                scope("s1"),
                NAME,
                JOB_REFLECT,
                json!({ "through": span }).to_string(),
                Moment::default(),
            );
            let derived = mechanism.run_job(&ctx(&engine, &user), &job).unwrap();
            assert!(derived.is_empty(), "{span}: {derived:?}");
        }
        // The reflections are retrievable.
        let ctx = engine
            .recall(
                &user,
                "bot",
                &RecallRequest {
                    query: reflections[0].text.clone(),
                    token_budget: 2000,
                    session: None,
                    as_of: None,
                    min_relevance: None,
                    deadline: mnemos_core::Deadline::NONE,
                },
            )
            .unwrap();
        assert!(ctx.items.iter().any(|i| i.kind == MemoryKind::Reflection));
    }

    #[test]
    fn an_insight_already_stated_extends_that_reflection_over_the_new_span() {
        // Rate everything without reflecting, then reflect with a separate instance.
        let (engine, store) =
            crate::testing::test_engine_and_store(NAME, "reflect_threshold = 1000000.0", true);
        for (round, text) in LIFE.iter().enumerate() {
            engine
                .add(vec![turn("s1", round as u64, Role::User, text)])
                .unwrap();
        }
        let agent = GenerativeAgent::new(GenerativeParams {
            reflect_threshold: 20.0,
            reflections_per_run: 1,
            ..GenerativeParams::default()
        });
        let user = user();
        let turns = all_of(&engine, "turn");
        let through = agent.crossing(&turns, None, None).unwrap();
        let job = Job::new(
            scope("s1"),
            NAME,
            JOB_REFLECT,
            json!({ "through": through.to_string() }).to_string(),
            Moment::default(),
        );
        let first = agent.run_job(&ctx(&engine, &user), &job).unwrap();
        assert_eq!(first.memories.len(), 1);
        // An older reflection (its span ends before every turn) already says the same.
        let mut older = first.memories[0].clone();
        older.id = MemoryId::new();
        // Created after the span, so it is not itself one of the span's sources.
        older.created = Moment {
            round: 1000,
            time: Timestamp(T0),
        };
        older.metadata.insert(
            THROUGH_KEY.into(),
            "0/0/00000000-0000-0000-0000-000000000000".into(),
        );
        mnemos_core::MemoryWrite::write(
            store.as_ref(),
            mnemos_core::WriteBatch {
                user: Some(user.clone()),
                memories: vec![older.clone()],
                ..Default::default()
            },
        )
        .unwrap();
        let again = agent.run_job(&ctx(&engine, &user), &job).unwrap();
        assert!(again.memories.is_empty());
        assert_eq!(again.updates.len(), 1);
        assert_eq!(again.updates[0].id, older.id);
        let metadata = again.updates[0].patch.metadata.as_ref().unwrap();
        assert_eq!(metadata[THROUGH_KEY], through.to_string());
    }

    #[test]
    fn recall_ranks_by_the_combined_score_and_records_access() {
        let engine = engine_with("top_k = 5", true);
        let mut round = 0;
        for text in LIFE
            .iter()
            .chain(["我上周在上海参加了姐姐的婚礼，非常感动。"].iter())
        {
            engine
                .add(vec![turn("s1", round, Role::User, text)])
                .unwrap();
            round += 1;
        }
        let request = RecallRequest {
            query: "my family and health news".into(),
            token_budget: 1000,
            session: None,
            as_of: None,
            min_relevance: None,
            deadline: mnemos_core::Deadline::NONE,
        };
        let ctx = engine.recall(&user(), "bot", &request).unwrap();
        assert!(!ctx.items.is_empty() && ctx.items.len() <= 5);
        for item in &ctx.items {
            let expected = part(item, "recency_norm")
                + part(item, "importance_norm")
                + part(item, "relevance_norm");
            assert!((item.score - expected).abs() < 1e-9, "{item:?}");
            for name in ["recency", "importance", "relevance"] {
                assert!(item.breakdown.iter().any(|p| p.name == name), "{name}");
            }
        }
        assert!(ctx.items.windows(2).all(|w| w[0].score >= w[1].score));
        // Access is recorded in the store (the next recall sees recency reset).
        let stored = engine.get(&user(), ctx.items[0].memory_id).unwrap();
        assert_eq!(
            stored.metrics.extra.get(LAST_ACCESS_ROUND),
            Some(&((round - 1) as f64))
        );
        assert!(stored.metrics.importance.is_some());
        // A second recall in the same round does not write new versions.
        let version = stored.version;
        engine.recall(&user(), "bot", &request).unwrap();
        assert_eq!(engine.get(&user(), stored.id).unwrap().version, version);

        // Chinese queries work.
        let zh = engine
            .recall(
                &user(),
                "bot",
                &RecallRequest {
                    query: "姐姐的婚礼".into(),
                    token_budget: 300,
                    session: None,
                    as_of: None,
                    min_relevance: None,
                    deadline: mnemos_core::Deadline::NONE,
                },
            )
            .unwrap();
        assert!(zh.items.iter().any(|i| i.text.contains("婚礼")));

        for budget in [0, 5, 20, 60, 150] {
            let ctx = engine
                .recall(
                    &user(),
                    "bot",
                    &RecallRequest {
                        token_budget: budget,
                        ..request.clone()
                    },
                )
                .unwrap();
            assert!(ctx.tokens <= budget, "{budget}: {}", ctx.tokens);
        }
    }

    #[test]
    fn recency_favours_the_recently_accessed() {
        let mut old = Memory::from_turn(&Turn {
            id: TurnId::new(),
            scope: scope("s"),
            role: Role::User,
            speaker: None,
            text: "x".into(),
            at: Moment {
                round: 10,
                time: Timestamp(T0),
            },
            metadata: Default::default(),
            key: None,
        });
        let now = Moment {
            round: 110,
            time: Timestamp(T0),
        };
        assert_eq!(GenerativeAgent::rounds_since_access(&old, now), 100.0);
        old.metrics.extra.insert(LAST_ACCESS_ROUND.into(), 100.0);
        assert_eq!(GenerativeAgent::rounds_since_access(&old, now), 10.0);
        assert!(GenerativeAgent::touch(&old, now).is_some());
        old.metrics.extra.insert(LAST_ACCESS_ROUND.into(), 110.0);
        assert!(GenerativeAgent::touch(&old, now).is_none());
    }

    #[test]
    fn stream_keys_round_trip_and_order_like_the_store() {
        let a = StreamKey {
            round: 2,
            time: T0,
            id: MemoryId::new(),
        };
        let b = StreamKey {
            round: 10,
            time: T0 - 5,
            id: MemoryId::new(),
        };
        assert!(a < b);
        assert_eq!(a.to_string().parse::<StreamKey>().unwrap(), a);
        assert!("1/2".parse::<StreamKey>().is_err());
    }

    #[test]
    fn params_are_validated() {
        for params in [
            "recency_decay = 0.0",
            "recency_decay = 1.5",
            "alpha_recency = 0.0\nalpha_importance = 0.0\nalpha_relevance = 0.0",
            "alpha_importance = -1.0",
            "reflect_threshold = 0.0",
            "top_k = 0",
            "candidate_factor = 0",
            "retriever = 'x'",
            "unknown = 1",
        ] {
            let spec = PresetSpec {
                name: NAME.into(),
                params: toml::from_str(params).unwrap(),
            };
            assert!(crate::build(&spec).is_err(), "{params}");
        }
        assert!(GenerativeParams::default().validate().is_ok());
        let info = crate::registry()
            .into_iter()
            .find(|p| p.name == NAME)
            .expect("registered");
        assert_eq!(info.params.len(), GenerativeParams::DOCS.len());
        assert!(
            info.params.iter().all(|p| p.default != "(none)"),
            "{:?}",
            info.params
        );
        assert!(crate::build(&PresetSpec::named(NAME)).is_ok());
    }
}
