//! PerLTQA: personal memory as two types, semantic (profile facts, relationships) and episodic
//! (events, dialogues). A query is classified (the memory model's query classifier), the best
//! `per_type` memories of each type are drawn, and they are re-ranked by
//! s′ = α·P(π | m) + β·sigmoid(s) ([`mnemos_core::retrieval::memory_type`]); the context is the
//! top `top_k` with each hit's P(π | m), s and s′.
//!
//! A memory's type is what its source stated (metadata `memory_type`), else the estimate a
//! classification job stored after the turn arrived (`memory_type_p_semantic`, a new version of
//! the turn's memory; the `classify_memory` task: the offline model's cue classifier or the
//! LLM), else even odds until that job has run.
//!
//! The paper's settings are values of `mode`: `none` (retrieval without classification),
//! `rerank` (classification with re-ranking, the default), `semantic` and `episodic` (retrieve
//! from one memory type only).

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::memory_type::ESTIMATE_KEY;
use mnemos_core::retrieval::{QueryCertainty, ScoreInput, TypeRerank, TypeSearch};
use mnemos_core::{
    BatchUpdate, Job, KindTag, MemoryFilter, MemoryModelExt, MemoryPatch, MemoryType,
    RetrieverKind, Turn,
};

use super::retrieval::{retrieved_turns, retriever_kind, SearchShape};
use super::PresetParams;
use mnemos_engine::mechanism::{
    Derived, JobSpec, Mechanism, MechanismCtx, ObserveCtx, Recall, RecallRequest,
};
use mnemos_engine::primitives::build_context;
use mnemos_engine::{EngineError, EngineResult};

pub const NAME: &str = "perltqa";
/// Job: estimate P(semantic | m) for the untyped turns of one session.
const JOB_CLASSIFY: &str = "classify_memory_type";

#[derive(Serialize, Deserialize)]
struct ClassifyPayload {
    session: String,
}
pub const SUMMARY: &str =
    "PerLTQA: semantic vs episodic memory; classify the query, draw k per type, re-rank";

/// Which of the paper's retrieval settings runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeMode {
    /// Retrieval alone, no classification.
    None,
    /// Classify the query, draw k per type, re-rank by eq. 3.
    #[default]
    Rerank,
    /// Retrieve semantic memories only.
    Semantic,
    /// Retrieve episodic memories only.
    Episodic,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerltqaParams {
    pub mode: TypeMode,
    pub top_k: usize,
    /// dense, bm25 or hybrid.
    pub retriever: String,
    /// α of eq. 3: weight of P(π | m).
    pub alpha: f32,
    /// β of eq. 3: weight of sigmoid(s).
    pub beta: f32,
    /// Candidates drawn per memory type before re-ranking (the paper's k).
    pub per_type: usize,
    /// What the sigmoid sees: the z-score of the retrieval score among the candidates
    /// (`standardized`) or the score itself (`raw`, the paper's literal form).
    pub score: ScoreInput,
    /// `soft`: P(π|m) carries the query classifier's confidence; `hard`: the query's class is
    /// taken as certain (the paper's literal reading).
    pub query: QueryCertainty,
    /// How far the estimated type of a memory whose source stated none is trusted (0..=1).
    pub estimate_weight: f32,
}

impl Default for PerltqaParams {
    fn default() -> Self {
        let rerank = TypeRerank::default();
        Self {
            mode: TypeMode::default(),
            top_k: 10,
            retriever: "hybrid".into(),
            alpha: rerank.alpha,
            beta: rerank.beta,
            per_type: rerank.per_type,
            score: rerank.score,
            query: rerank.query,
            estimate_weight: rerank.estimate_weight,
        }
    }
}

impl PerltqaParams {
    fn rerank(&self) -> TypeRerank {
        TypeRerank {
            alpha: self.alpha,
            beta: self.beta,
            per_type: self.per_type,
            score: self.score,
            query: self.query,
            estimate_weight: self.estimate_weight,
        }
    }
}

impl PresetParams for PerltqaParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "mode",
            "none (no classification) | rerank (classify, k per type, re-rank) | semantic | \
             episodic (one memory type only)",
        ),
        ("top_k", "memories in the context (1..=1000)"),
        ("retriever", "dense | bm25 | hybrid"),
        (
            "alpha",
            "weight of P(π|m), the memory's probability of the query's type",
        ),
        ("beta", "weight of sigmoid(s), the retrieval score"),
        (
            "per_type",
            "candidates drawn per memory type before re-ranking (k)",
        ),
        (
            "score",
            "what sigmoid(s) sees: standardized (z-score among the candidates) | raw",
        ),
        (
            "query",
            "soft (P(π|m) carries the query classifier's confidence) | hard (the query's class \
             taken as certain)",
        ),
        (
            "estimate_weight",
            "how far an estimated (not stated) memory type is trusted, 0..=1",
        ),
    ];

    fn validate(&self) -> Result<(), String> {
        if !(1..=1000).contains(&self.top_k) {
            return Err(format!("top_k = {}: expected 1..=1000", self.top_k));
        }
        retriever_kind(&self.retriever)?;
        self.rerank().validate().map_err(|e| e.to_string())
    }
}

pub struct Perltqa {
    params: PerltqaParams,
    retriever: RetrieverKind,
}

impl Perltqa {
    pub fn new(params: PerltqaParams) -> Self {
        let retriever = retriever_kind(&params.retriever).unwrap_or(RetrieverKind::Hybrid);
        Self { params, retriever }
    }

    /// What the configured mode does with memory types.
    fn memory_type(&self) -> Option<TypeSearch> {
        match self.params.mode {
            TypeMode::None => None,
            TypeMode::Rerank => Some(TypeSearch::Rerank(self.params.rerank())),
            TypeMode::Semantic => Some(TypeSearch::Only(MemoryType::Semantic)),
            TypeMode::Episodic => Some(TypeSearch::Only(MemoryType::Episodic)),
        }
    }
}

impl Mechanism for Perltqa {
    fn name(&self) -> &str {
        NAME
    }

    /// A turn whose source stated no type gets one classified: one job per session per write,
    /// which types every untyped turn of the session it finds (so a replayed or repeated job
    /// finds nothing left to do).
    fn observe(&self, ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        let untyped = |t: &Turn| !t.metadata.contains_key(MemoryType::METADATA_KEY);
        let planned_already = ctx
            .earlier
            .iter()
            .any(|t| untyped(t) && t.scope.session == turn.scope.session);
        if self.params.mode == TypeMode::None || !untyped(turn) || planned_already {
            return Ok(Vec::new());
        }
        let payload = ClassifyPayload {
            session: turn.scope.session.clone(),
        };
        Ok(vec![JobSpec::new(
            JOB_CLASSIFY,
            serde_json::to_value(payload).map_err(|e| EngineError::config(e.to_string()))?,
        )])
    }

    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        if job.kind != JOB_CLASSIFY {
            return Err(EngineError::Job {
                id: job.id.to_string(),
                message: format!("{NAME} plans no '{}' jobs", job.kind),
            });
        }
        let payload: ClassifyPayload = JobSpec::parse(job)?;
        let mut filter = MemoryFilter::of_kinds(&[KindTag::Turn]);
        filter.session = Some(payload.session);
        let mut derived = Derived::default();
        for memory in ctx.all(filter)? {
            if memory.stated_type().is_some() || memory.metadata.contains_key(ESTIMATE_KEY) {
                continue;
            }
            let class = ctx.model.classify_memory(&memory.text)?;
            let mut metadata = memory.metadata.clone();
            metadata.insert(ESTIMATE_KEY.to_string(), format!("{:.3}", class.semantic));
            derived.updates.push(BatchUpdate {
                id: memory.id,
                patch: MemoryPatch {
                    metadata: Some(metadata),
                    ..MemoryPatch::default()
                },
                at: job.created,
            });
        }
        Ok(derived)
    }

    fn recall(&self, ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        let shape = SearchShape {
            memory_type: self.memory_type(),
            ..SearchShape::default()
        };
        let kept = retrieved_turns(ctx, request, self.retriever, self.params.top_k, shape)?;
        Ok(Recall {
            context: build_context(NAME, &request.query, kept, request.token_budget, vec![]),
            effects: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, test_engine};
    use mnemos_core::{Metadata, Scope, UserKey};
    use mnemos_engine::NewTurn;

    fn user() -> UserKey {
        UserKey::new("t", "u").unwrap()
    }

    fn typed(scope: &Scope, text: &str, memory_type: MemoryType) -> NewTurn {
        let mut turn = NewTurn::user(scope.clone(), text);
        let mut metadata = Metadata::new();
        metadata.insert(MemoryType::METADATA_KEY.into(), memory_type.as_str().into());
        turn.metadata = metadata;
        turn
    }

    fn engine(params: &str) -> mnemos_engine::Engine {
        let engine = test_engine(NAME, params, true);
        let scope = Scope::new("t", "u", "bot", "s1").unwrap();
        engine
            .add(vec![
                typed(
                    &scope,
                    "Anna's occupation: violin teacher.",
                    MemoryType::Semantic,
                ),
                typed(
                    &scope,
                    "Anna played the violin at the harbour concert, where the violin string broke.",
                    MemoryType::Episodic,
                ),
                typed(&scope, "Anna's sister is Mia.", MemoryType::Semantic),
            ])
            .unwrap();
        engine
    }

    fn texts(engine: &mnemos_engine::Engine, query: &str) -> Vec<String> {
        let context = testing::recall(engine, &user(), "bot", query, 1024);
        context.items.iter().map(|i| i.text.clone()).collect()
    }

    #[test]
    fn parameters_are_validated() {
        assert!(PerltqaParams::default().validate().is_ok());
        for bad in [
            PerltqaParams {
                top_k: 0,
                ..PerltqaParams::default()
            },
            PerltqaParams {
                per_type: 0,
                ..PerltqaParams::default()
            },
            PerltqaParams {
                alpha: f32::NAN,
                ..PerltqaParams::default()
            },
            PerltqaParams {
                retriever: "vector".into(),
                ..PerltqaParams::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(crate::build(&crate::PresetSpec {
            name: NAME.into(),
            params: toml::from_str("mode = 'sometimes'").unwrap(),
        })
        .is_err());
    }

    #[test]
    fn one_type_modes_keep_only_that_type() {
        let semantic = texts(&engine("mode = 'semantic'"), "violin");
        assert!(!semantic.is_empty());
        assert!(
            semantic.iter().all(|t| !t.contains("concert")),
            "{semantic:?}"
        );
        let episodic = texts(&engine("mode = 'episodic'"), "violin");
        assert_eq!(episodic.len(), 1, "{episodic:?}");
        assert!(episodic[0].contains("concert"));
    }

    #[test]
    fn untyped_turns_get_an_estimated_type_that_the_rerank_uses() {
        // Estimates count in the re-rank only as far as `estimate_weight` says (default 0).
        let engine = test_engine(NAME, "estimate_weight = 1.0", true);
        let scope = Scope::new("t", "u", "bot", "s1").unwrap();
        engine
            .add(vec![
                NewTurn::user(scope.clone(), "My sister Mia is a violin teacher."),
                NewTurn::user(
                    scope.clone(),
                    "Yesterday Mia and I went to a violin concert at the harbour.",
                ),
                typed(&scope, "Mia's age: 31", MemoryType::Semantic),
            ])
            .unwrap();
        let turns = testing::memories_of(&engine, &user(), "turn", Default::default());
        let estimate = |text: &str| -> Option<f32> {
            let m = turns.iter().find(|m| m.text.starts_with(text)).unwrap();
            m.metadata.get(ESTIMATE_KEY).map(|p| p.parse().unwrap())
        };
        assert!(estimate("My sister").unwrap() > 0.5);
        assert!(estimate("Yesterday").unwrap() < 0.5);
        // A stated type needs no estimate.
        assert_eq!(estimate("Mia's age"), None);
        // The re-rank reads the estimates: the event's P(π|m) differs from the relationship's.
        let context = testing::recall(&engine, &user(), "bot", "Who is Mia?", 1024);
        let p_type = |text: &str| -> f64 {
            let item = context
                .items
                .iter()
                .find(|i| i.text.starts_with(text))
                .unwrap();
            item.breakdown
                .iter()
                .find(|p| p.name.starts_with("P("))
                .unwrap()
                .value
        };
        assert!(
            (p_type("My sister") - p_type("Yesterday")).abs() > 0.05,
            "{:?}",
            context.items
        );
    }

    #[test]
    fn rerank_explains_each_hit_with_the_type_terms() {
        let engine = engine("");
        let context = testing::recall(&engine, &user(), "bot", "What is Anna's occupation?", 1024);
        let first = &context.items[0];
        assert!(first.text.contains("occupation"), "{:?}", context.items);
        let parts: Vec<&str> = first.breakdown.iter().map(|p| p.name.as_str()).collect();
        assert!(
            parts
                .iter()
                .any(|p| p.starts_with("P(") && p.ends_with("|m)")),
            "{parts:?}"
        );
        assert!(parts.contains(&"sigmoid(s)"), "{parts:?}");
    }
}
