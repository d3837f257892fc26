//! Wire types of the inspector routes (user overview, access log, derived memories, a turn in
//! its dialogue, retention, structured views) and the parts they add to older answers (a
//! memory's scores and access, a forget's cause, a hit's score breakdown).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::Object;
use utoipa::openapi::Ref;
use utoipa::{IntoParams, ToSchema};

use mnemos_core::retrieval::{Adjustment, HopSignal, RankerSignal, Signal};
use mnemos_core::{Access, Memory, Metrics, ScoreBreakdown};
use mnemos_engine::{
    CalibrationView, ChainNodeView, ChainsView, PersonaKeyView, PersonaValueView, TimelineNode,
    View,
};
use mnemos_inspect::{ForgetCause, Retention, TurnContext, TurnEntry, UserOverview};

use crate::dto::{iso, MemoryOut, MomentOut};

fn forget_by_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["request", "preset", "derived"]))
        .description(Some(
            "Who forgot it: `request` (a caller), `preset` (the preset's policy, named in \
             `preset`) or `derived` (forgotten with the memory it was derived from, `source`).",
        ))
        .build()
}

/// Why and when a memory was forgotten, and by whom.
#[derive(Debug, Serialize, ToSchema)]
pub struct ForgottenOut {
    pub reason: String,
    pub at: MomentOut,
    /// `request`, `preset` or `derived`.
    #[schema(schema_with = forget_by_schema)]
    pub by: &'static str,
    /// The preset whose policy forgot it (only when `by` is `preset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub preset: Option<String>,
    /// The memory it was derived from, whose forgetting took it along (only when `by` is
    /// `derived`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub source: Option<String>,
}

impl ForgottenOut {
    pub(crate) fn new(reason: &str, cause: &ForgetCause, at: mnemos_core::Moment) -> Self {
        let (by, preset, source) = match cause {
            ForgetCause::Request => ("request", None, None),
            ForgetCause::Preset { preset } => ("preset", Some(preset.clone()), None),
            ForgetCause::Derived { source } => ("derived", None, Some(source.to_string())),
        };
        ForgottenOut {
            reason: reason.to_string(),
            at: at.into(),
            by,
            preset,
            source,
        }
    }
}

/// Numbers presets attach to a memory.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoresOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub importance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub strength: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub inhibition: Option<f64>,
    /// A preset's own numbers, by name.
    pub extra: BTreeMap<String, f64>,
}

impl From<&Metrics> for ScoresOut {
    fn from(m: &Metrics) -> Self {
        ScoresOut {
            importance: m.importance,
            strength: m.strength,
            inhibition: m.inhibition,
            extra: m.extra.clone(),
        }
    }
}

/// The most recent of a memory's retrievals.
pub(crate) fn last_access(memory: &Memory) -> Option<MomentOut> {
    memory.access.iter().map(|a| a.at).max().map(Into::into)
}

// ---- overview ------------------------------------------------------------------------------

#[derive(Debug, Serialize, ToSchema)]
pub struct StateCountsOut {
    pub active: usize,
    pub forgotten: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobCountsOut {
    pub pending: usize,
    pub failed: usize,
    pub stuck: usize,
}

/// One user at a glance.
#[derive(Debug, Serialize, ToSchema)]
pub struct OverviewResponse {
    pub user: String,
    pub turns: usize,
    /// Distinct (agent, session) pairs of the user's turns.
    pub sessions: usize,
    /// Agents of the user's turns and memories, sorted.
    pub agents: Vec<String>,
    /// Memories by kind (every kind with at least one memory, in any state).
    pub memories: BTreeMap<String, StateCountsOut>,
    /// The latest moment a turn was said or a memory made (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_activity: Option<MomentOut>,
    /// Unfinished derived jobs by state.
    pub jobs: JobCountsOut,
}

impl OverviewResponse {
    pub(crate) fn new(user: String, o: &UserOverview) -> Self {
        OverviewResponse {
            user,
            turns: o.turns,
            sessions: o.sessions,
            agents: o.agents.clone(),
            memories: o
                .memories
                .iter()
                .map(|(kind, c)| {
                    let counts = StateCountsOut {
                        active: c.active,
                        forgotten: c.forgotten,
                    };
                    (kind.as_str().to_string(), counts)
                })
                .collect(),
            last_activity: o.last_activity.map(Into::into),
            jobs: JobCountsOut {
                pending: o.jobs.pending,
                failed: o.jobs.failed,
                stuck: o.jobs.stuck,
            },
        }
    }
}

// ---- access log, derived memories ----------------------------------------------------------

#[derive(Debug, Serialize, ToSchema)]
pub struct AccessOut {
    pub at: MomentOut,
    /// Its rank in the results that retrieved it (1 = first).
    pub rank: u32,
}

/// When a memory was retrieved, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccessLogResponse {
    pub accesses: Vec<AccessOut>,
    pub total: usize,
}

impl From<&Memory> for AccessLogResponse {
    fn from(memory: &Memory) -> Self {
        let mut log: Vec<Access> = memory.access.clone();
        log.sort_by_key(|a| std::cmp::Reverse(a.at));
        AccessLogResponse {
            total: log.len(),
            accesses: log
                .into_iter()
                .map(|a| AccessOut {
                    at: a.at.into(),
                    rank: a.rank,
                })
                .collect(),
        }
    }
}

/// Memories built from a turn (summaries, profiles…), active and forgotten, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DerivedResponse {
    pub memories: Vec<MemoryOut>,
}

// ---- a turn in its dialogue ------------------------------------------------------------------

/// `GET /v1/users/{user}/turns/{id}` query parameters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TurnQuery {
    /// Turns shown on each side, 0 to 50 (default 3).
    #[param(minimum = 0, maximum = 50)]
    pub around: Option<usize>,
}

/// A stored turn.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnOut {
    pub id: String,
    pub agent: String,
    pub session: String,
    pub role: crate::dto::WireRole,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub speaker: Option<String>,
    pub text: String,
    pub at: MomentOut,
    pub metadata: BTreeMap<String, String>,
    /// The turn's own memory, when one exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub memory_id: Option<String>,
}

impl From<&TurnEntry> for TurnOut {
    fn from(entry: &TurnEntry) -> Self {
        let t = &entry.turn;
        TurnOut {
            id: t.id.to_string(),
            agent: t.scope.agent.clone(),
            session: t.scope.session.clone(),
            role: t.role.into(),
            speaker: t.speaker.clone(),
            text: t.text.clone(),
            at: t.at.into(),
            metadata: t.metadata.clone(),
            memory_id: entry.memory_id.map(|id| id.to_string()),
        }
    }
}

/// A turn with the turns of its session said just before and after it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnContextResponse {
    pub turn: TurnOut,
    /// Oldest first.
    pub before: Vec<TurnOut>,
    /// Oldest first.
    pub after: Vec<TurnOut>,
}

impl From<&TurnContext> for TurnContextResponse {
    fn from(c: &TurnContext) -> Self {
        TurnContextResponse {
            turn: (&c.turn).into(),
            before: c.before.iter().map(TurnOut::from).collect(),
            after: c.after.iter().map(TurnOut::from).collect(),
        }
    }
}

// ---- score breakdown -----------------------------------------------------------------------

/// A generator's score and rank.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignalOut {
    pub score: f32,
    /// 1 = its best.
    pub rank: u32,
}

impl From<Signal> for SignalOut {
    fn from(s: Signal) -> Self {
        SignalOut {
            score: s.score,
            rank: s.rank,
        }
    }
}

/// What another memory lent the hit's score.
#[derive(Debug, Serialize, ToSchema)]
pub struct HopOut {
    /// The memory that lent most.
    pub via: String,
    pub added: f32,
}

impl From<HopSignal> for HopOut {
    fn from(h: HopSignal) -> Self {
        HopOut {
            via: h.via.to_string(),
            added: h.added,
        }
    }
}

/// A feature that moved the learned ranker's estimate.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeatureOut {
    pub name: String,
    /// Weight × value.
    pub contribution: f32,
}

/// What the learned ranker saw and concluded.
#[derive(Debug, Serialize, ToSchema)]
pub struct RankerOut {
    /// The estimated chance of being evidence (the score after this stage).
    pub probability: f32,
    /// The feature values, in the ranker's feature order.
    pub features: Vec<f32>,
    /// The features that moved the estimate most, largest first.
    pub strongest: Vec<FeatureOut>,
}

impl From<&RankerSignal> for RankerOut {
    fn from(r: &RankerSignal) -> Self {
        RankerOut {
            probability: r.probability,
            features: r.features.clone(),
            strongest: r
                .strongest
                .iter()
                .map(|(name, c)| FeatureOut {
                    name: name.clone(),
                    contribution: *c,
                })
                .collect(),
        }
    }
}

/// A re-ranker's change to the score.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdjustmentOut {
    pub name: String,
    /// The value the re-ranker used (e.g. importance 0.8).
    pub value: f32,
    /// How much the score changed.
    pub delta: f32,
}

impl From<&Adjustment> for AdjustmentOut {
    fn from(a: &Adjustment) -> Self {
        AdjustmentOut {
            name: a.name.clone(),
            value: a.value,
            delta: a.delta,
        }
    }
}

/// Why a hit scored what it did, as numbers.
#[derive(Debug, Serialize, ToSchema)]
pub struct BreakdownOut {
    /// BM25 score and rank (absent: no query term in common).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub lexical: Option<SignalOut>,
    /// Cosine and rank (absent: not among the nearest vectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub dense: Option<SignalOut>,
    /// What the second retrieval hop added (included in `fused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub second_hop: Option<HopOut>,
    /// What a neighbouring turn lent (included in `fused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub context: Option<HopOut>,
    /// What naming the speaker added (included in `fused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub speaker: Option<f32>,
    /// What naming the memory's date added (included in `fused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub ranker: Option<RankerOut>,
    /// Why the hit has its `relevance`: the features of the relevance model and the ones that
    /// moved it most.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub relevance: Option<RankerOut>,
    /// The score before re-rankers.
    pub fused: f32,
    pub adjustments: Vec<AdjustmentOut>,
    /// The hit's score: `fused` plus the adjustments' deltas.
    #[serde(rename = "final")]
    #[schema(rename = "final")]
    pub final_score: f32,
}

impl BreakdownOut {
    pub(crate) fn new(b: &ScoreBreakdown, score: f32) -> Self {
        BreakdownOut {
            lexical: b.lexical.map(Into::into),
            dense: b.dense.map(Into::into),
            second_hop: b.second_hop.map(Into::into),
            context: b.context.map(Into::into),
            speaker: b.speaker,
            date: b.date,
            ranker: b.ranker.as_ref().map(Into::into),
            relevance: b.relevance.as_ref().map(|r| RankerOut {
                probability: r.probability,
                features: r.features.clone(),
                strongest: r
                    .strongest
                    .iter()
                    .map(|(name, c)| FeatureOut {
                        name: name.clone(),
                        contribution: *c,
                    })
                    .collect(),
            }),
            fused: b.fused,
            adjustments: b.adjustments.iter().map(Into::into).collect(),
            final_score: score,
        }
    }
}

// ---- retention -----------------------------------------------------------------------------

/// `GET /v1/users/{user}/retention` query parameters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RetentionQuery {
    /// Only this agent's memories (default: every agent's).
    pub agent: Option<String>,
    /// At most this many points, 2 to 2000 (default 200).
    #[param(minimum = 2, maximum = 2000)]
    pub points: Option<usize>,
}

/// Memories up to one round, cumulative.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetentionPointOut {
    pub round: u64,
    /// `created - forgotten`.
    pub active: usize,
    /// Created at or before the round.
    pub created: usize,
    /// Of those, forgotten at or before the round.
    pub forgotten: usize,
}

/// How many memories were kept over the rounds.
#[derive(Debug, Serialize, ToSchema)]
pub struct RetentionResponse {
    pub last_round: u64,
    /// One point per round where something changed, evenly thinned to at most `points` (the
    /// first and last change always kept).
    pub series: Vec<RetentionPointOut>,
    /// Forgotten memories by cause: `request`, `derived`, or the preset that forgot them.
    pub forgotten_by: BTreeMap<String, usize>,
}

impl From<&Retention> for RetentionResponse {
    fn from(r: &Retention) -> Self {
        RetentionResponse {
            last_round: r.last_round,
            series: r
                .series
                .iter()
                .map(|p| RetentionPointOut {
                    round: p.round,
                    active: p.active,
                    created: p.created,
                    forgotten: p.forgotten,
                })
                .collect(),
            forgotten_by: r.forgotten_by.clone(),
        }
    }
}

// ---- structured views ----------------------------------------------------------------------

/// One value a persona key holds or held.
#[derive(Debug, Serialize, ToSchema)]
pub struct PersonaValueOut {
    pub id: String,
    pub value: String,
    /// The round it was said.
    pub said_round: u64,
    pub active: bool,
    /// Why it left the sketch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// Turns behind it.
    pub turns: usize,
}

impl From<&PersonaValueView> for PersonaValueOut {
    fn from(v: &PersonaValueView) -> Self {
        PersonaValueOut {
            id: v.id.to_string(),
            value: v.value.clone(),
            said_round: v.said_round,
            active: v.active,
            reason: v.reason.clone(),
            turns: v.turns,
        }
    }
}

/// One key of one subject's persona sketch.
#[derive(Debug, Serialize, ToSchema)]
pub struct PersonaKeyOut {
    /// Whom the values are about, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub subject: Option<String>,
    pub key: String,
    pub current: Vec<PersonaValueOut>,
    pub history: Vec<PersonaValueOut>,
}

impl From<&PersonaKeyView> for PersonaKeyOut {
    fn from(k: &PersonaKeyView) -> Self {
        PersonaKeyOut {
            subject: k.subject.clone(),
            key: k.key.clone(),
            current: k.current.iter().map(Into::into).collect(),
            history: k.history.iter().map(Into::into).collect(),
        }
    }
}

/// One node of the plot timeline with the nodes it summarizes.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineNodeOut {
    pub id: String,
    /// 1 = unit of raw rounds, 2 and 3 = summaries.
    pub level: u8,
    pub from_round: u64,
    pub to_round: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub from_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub to_time: Option<String>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reason: Option<String>,
    pub turns: usize,
    pub text: String,
    #[schema(no_recursion)]
    pub children: Vec<TimelineNodeOut>,
}

impl From<&TimelineNode> for TimelineNodeOut {
    fn from(n: &TimelineNode) -> Self {
        TimelineNodeOut {
            id: n.id.to_string(),
            level: n.level,
            from_round: n.from_round,
            to_round: n.to_round,
            from_time: n.from_time.map(iso),
            to_time: n.to_time.map(iso),
            active: n.active,
            reason: n.reason.clone(),
            turns: n.turns,
            text: n.text.clone(),
            children: n.children.iter().map(Into::into).collect(),
        }
    }
}

/// One current node of a memory chain.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainNodeOut {
    pub id: String,
    /// When the dialogue it summarizes ended.
    #[schema(format = DateTime)]
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session: Option<String>,
    pub text: String,
    /// Every chain it is in.
    pub categories: Vec<String>,
    pub tokens: usize,
    pub compressions: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub original_tokens: Option<usize>,
    pub compression_final: bool,
    /// Nodes it superseded when it was calibrated.
    pub calibrated_from: Vec<String>,
    pub turns: usize,
}

impl From<&ChainNodeView> for ChainNodeOut {
    fn from(n: &ChainNodeView) -> Self {
        ChainNodeOut {
            id: n.id.to_string(),
            time: iso(n.time),
            session: n.session.clone(),
            text: n.text.clone(),
            categories: n.categories.clone(),
            tokens: n.tokens,
            compressions: n.compressions,
            original_tokens: n.original_tokens,
            compression_final: n.compression_final,
            calibrated_from: n.calibrated_from.clone(),
            turns: n.turns,
        }
    }
}

/// One category's chain.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainOut {
    pub category: String,
    pub nodes: Vec<ChainNodeOut>,
}

/// A node superseded by a newer one of its chain.
#[derive(Debug, Serialize, ToSchema)]
pub struct CalibrationOut {
    pub stale: String,
    pub stale_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub valid_to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub superseded_by: Option<String>,
    pub categories: Vec<String>,
}

impl From<&CalibrationView> for CalibrationOut {
    fn from(c: &CalibrationView) -> Self {
        CalibrationOut {
            stale: c.stale.to_string(),
            stale_text: c.stale_text.clone(),
            valid_to: c.valid_to.map(iso),
            superseded_by: c.superseded_by.clone(),
            categories: c.categories.clone(),
        }
    }
}

/// The memory chains of a user.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChainsOut {
    pub chains: Vec<ChainOut>,
    pub calibrations: Vec<CalibrationOut>,
}

impl From<&ChainsView> for ChainsOut {
    fn from(c: &ChainsView) -> Self {
        ChainsOut {
            chains: c
                .chains
                .iter()
                .map(|chain| ChainOut {
                    category: chain.category.clone(),
                    nodes: chain.nodes.iter().map(Into::into).collect(),
                })
                .collect(),
            calibrations: c.calibrations.iter().map(Into::into).collect(),
        }
    }
}

/// A view as data: persona keys, timeline nodes, or chains, by the view asked for.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ViewData {
    /// `persona`: one entry per subject and key.
    Persona(Vec<PersonaKeyOut>),
    /// `timeline`: the top nodes, each with its children.
    Timeline(Vec<TimelineNodeOut>),
    /// `chains`.
    Chains(ChainsOut),
}

/// `ViewData`'s schema: `anyOf`, since an empty persona and an empty timeline look alike (their
/// item schemas are registered in `openapi`).
pub(crate) fn view_data_schema() -> Schema {
    let list = |name: &str, description: &str| {
        ArrayBuilder::new()
            .items(Ref::from_schema_name(name))
            .description(Some(description))
            .build()
    };
    AnyOfBuilder::new()
        .item(list(
            "PersonaKeyOut",
            "`persona`: one entry per subject and key.",
        ))
        .item(list(
            "TimelineNodeOut",
            "`timeline`: the top nodes, each with its children.",
        ))
        .item(Ref::from_schema_name("ChainsOut"))
        .description(Some(
            "The view as data, by `view`: persona keys, timeline nodes, or chains.",
        ))
        .build()
        .into()
}

impl From<&View> for ViewData {
    fn from(view: &View) -> Self {
        match view {
            View::Persona(keys) => ViewData::Persona(keys.iter().map(Into::into).collect()),
            View::Timeline(nodes) => ViewData::Timeline(nodes.iter().map(Into::into).collect()),
            View::Chains(chains) => ViewData::Chains(chains.into()),
        }
    }
}
