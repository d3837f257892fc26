//! The offline memory model: every [`Task`] of the `MemoryModel` contract without an LLM or a
//! network, in English and Chinese. It is mnemos's default model.
//!
//! Each task lives in its own module as a plain function over a [`Ctx`] (the shared analyzer
//! and embedder); [`OfflineModel`] validates, dispatches and keeps the usage counts.

use std::sync::Arc;
use std::time::Instant;

use mnemos_core::memory_model::{TaskUsage, UsageReport};
use mnemos_core::{Embedder, MemoryModel, ModelResult, Task, TaskOutput};
use mnemos_text::Analyzer;
use parking_lot::Mutex;

pub mod arousal;
pub mod categorize;
pub mod classify;
pub mod compress;
pub mod conflict;
pub mod importance;
pub mod memory_type;
pub mod ngram;
pub mod persona;
pub mod relevance;
pub mod summarize;
pub mod surprise;
pub mod wordlist;

pub use classify::QueryClassifier;

/// What every task function may use.
pub struct Ctx<'a> {
    pub analyzer: &'static Analyzer,
    /// The engine's embedder (MiniLM by default; the hash embedder in tests).
    pub embedder: &'a dyn Embedder,
}

/// Every memory task without an LLM. See the crate documentation.
pub struct OfflineModel {
    embedder: Arc<dyn Embedder>,
    classifier: QueryClassifier,
    usage: Mutex<UsageReport>,
}

impl OfflineModel {
    /// An offline model over `embedder`, with the query classifier shipped for that embedder
    /// (see [`QueryClassifier::for_embedder`]).
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        let classifier = QueryClassifier::for_embedder(embedder.id());
        OfflineModel {
            embedder,
            classifier,
            usage: Mutex::new(UsageReport::default()),
        }
    }

    /// Use another classifier (e.g. one just trained).
    pub fn with_classifier(mut self, classifier: QueryClassifier) -> Self {
        self.classifier = classifier;
        self
    }

    pub fn classifier(&self) -> &QueryClassifier {
        &self.classifier
    }

    /// Ways this instance is weaker than the best offline configuration, for the caller to show
    /// (e.g. a query classifier without embedding features because none was trained for this
    /// embedder). Empty when nothing is degraded.
    pub fn degradations(&self) -> Vec<String> {
        let classifier = self.classifier.degradation();
        classifier
            .into_iter()
            .chain(persona::word_list_defect())
            .collect()
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            analyzer: Analyzer::shared(),
            embedder: self.embedder.as_ref(),
        }
    }

    fn dispatch(&self, task: &Task) -> ModelResult<TaskOutput> {
        let ctx = self.ctx();
        Ok(match task {
            Task::Summarize {
                texts,
                level,
                token_budget,
            } => TaskOutput::Text(summarize::summarize(&ctx, texts, *level, *token_budget)?),
            Task::PersonaSnapshot { window, schema } => {
                TaskOutput::Persona(persona::persona_snapshot(&ctx, window, schema)?)
            }
            Task::Categorize { session } => {
                TaskOutput::Categories(categorize::categorize(&ctx, session)?)
            }
            Task::Conflicts { previous, new } => {
                TaskOutput::Flag(conflict::conflicts(&ctx, previous, new)?)
            }
            Task::Merge { previous, new } => {
                TaskOutput::Text(conflict::merge(&ctx, previous, new)?)
            }
            Task::Compress { text } => TaskOutput::Text(compress::compress(&ctx, text)?),
            Task::Recoverable {
                original,
                compressed,
            } => TaskOutput::Flag(compress::recoverable(&ctx, original, compressed)?),
            Task::RateImportance {
                past_summary,
                exchange,
            } => TaskOutput::Importance(importance::rate_importance(&ctx, past_summary, exchange)?),
            Task::Arousal { text } => TaskOutput::Score(arousal::arousal(&ctx, text)?),
            Task::Surprise { context, utterance } => {
                TaskOutput::Score(surprise::surprise(&ctx, context, utterance)?)
            }
            Task::Sufficient { query, memories } => {
                TaskOutput::Flag(relevance::sufficient(&ctx, query, memories)?)
            }
            Task::Helps {
                query,
                memories,
                candidate,
            } => TaskOutput::Flag(relevance::helps(&ctx, query, memories, candidate)?),
            Task::ClassifyQuery { query } => {
                TaskOutput::QueryClass(self.classifier.classify(&ctx, query)?)
            }
            Task::ClassifyMemory { text } => {
                TaskOutput::QueryClass(memory_type::classify_memory(text)?)
            }
            Task::Answer { query, memories } => {
                TaskOutput::Text(relevance::answer(&ctx, query, memories)?)
            }
            Task::Choose {
                question,
                options,
                memories,
            } => TaskOutput::Choice(relevance::choose(&ctx, question, options, memories)?),
        })
    }
}

impl MemoryModel for OfflineModel {
    fn id(&self) -> &str {
        "offline"
    }

    fn run(&self, task: &Task) -> ModelResult<TaskOutput> {
        let started = Instant::now();
        let result = task.validate().and_then(|()| self.dispatch(task));
        let mut usage = self.usage.lock();
        let entry = usage.tasks.entry(task.name().to_string()).or_default();
        entry.add(&TaskUsage {
            calls: 1,
            failures: u64::from(result.is_err()),
            micros: started.elapsed().as_micros() as u64,
            ..TaskUsage::default()
        });
        result
    }

    fn usage(&self) -> UsageReport {
        self.usage.lock().clone()
    }
}
