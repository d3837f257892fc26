//! One experiment runner for every evaluation that compares presets: each named engine runs
//! over the same prepared conversations in one process, on its own scratch store and memory
//! model, sharing one embedder (usually a warmed [`CachingEmbedder`], so every text is embedded
//! once and write latencies exclude embedding).
//!
//! Per engine: build it once (scratch SQLite file or in-memory store, a [`StreamClock`], the
//! configured memory model), stream every conversation through [`Runner`], hand the finished
//! conversation to the caller's hook while the user's memories still exist (extraction
//! scoring, probes and LUFY agreement read them there), erase the user, and accumulate the run
//! into a [`PresetSummary`]. The library never prints: what a person would want to watch goes
//! to the caller's [`Progress`] callback.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use mnemos_core::{Clock, Embedder, MemoryModel, Store, UserKey};
use mnemos_engine::{Engine, EngineConfig};
use mnemos_presets::variants::NamedEngine;
use mnemos_setup::{Config, StoreLocation};

use crate::dataset::{Conversation, Item};
use crate::embed_cache::CachingEmbedder;
use crate::error::EvalError;
use crate::protocol::PreparedConversation;
use crate::runner::{ConversationRun, RunOptions, Runner, StreamClock};
use crate::summary::{PresetAccumulator, PresetSummary};

/// Where an evaluated engine keeps its memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StoreKind {
    /// A scratch SQLite database per preset, as deployed.
    Sqlite,
    /// The in-memory store.
    Memory,
}

impl StoreKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Memory => "memory",
        }
    }

    /// A fresh store of this kind; SQLite files go in `scratch`, named after the run. A SQLite
    /// store opens as a deployment's does (`mnemos_setup::open_store`, default options), so
    /// what is measured is the deployed write path.
    pub fn open(self, scratch: &Path, name: &str) -> Result<Arc<dyn Store>, EvalError> {
        Ok(match self {
            StoreKind::Memory => Arc::new(mnemos_core::MemoryStore::new()),
            StoreKind::Sqlite => {
                // Sweep runs have names like `recent[window=4]`: keep file names plain.
                let file = name.replace(|c: char| !c.is_ascii_alphanumeric(), "_") + ".db";
                let config = Config {
                    db: StoreLocation::Sqlite(scratch.join(file)),
                    ..Config::default()
                };
                mnemos_setup::open_store(&config, true)?
            }
        })
    }
}

/// What a long evaluation reports while it runs; the caller shows it (a progress bar, a log).
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A stage of `total` steps begins: embedding, or one preset's streams.
    Stage { name: &'a str, total: u64 },
    /// `n` more steps of the current stage are done.
    Step(u64),
    /// The current stage is over.
    StageDone,
    /// A line for the person running the evaluation (a summary, a note, a warning).
    Note(&'a str),
}

/// Where progress goes; [`ignore_progress`] drops it.
pub type ProgressFn<'a> = &'a dyn Fn(Progress<'_>);

/// A progress callback that drops everything (tests, quiet runs).
pub fn ignore_progress(_: Progress<'_>) {}

/// The embedder every preset of an experiment shares, and the cache in front of it if any.
pub struct SharedEmbedder {
    pub embedder: Arc<dyn Embedder>,
    pub cache: Option<Arc<CachingEmbedder>>,
}

impl SharedEmbedder {
    /// The configured embedder with no cache: every text is embedded as it comes.
    pub fn uncached(config: &Config) -> Result<Self, EvalError> {
        Ok(SharedEmbedder {
            embedder: mnemos_setup::embedder(config)?,
            cache: None,
        })
    }

    /// The configured embedder behind a cache warmed with `texts`.
    pub fn warmed(
        config: &Config,
        texts: &[&str],
        progress: ProgressFn<'_>,
    ) -> Result<Self, EvalError> {
        Self::warm(mnemos_setup::embedder(config)?, texts, progress)
    }

    /// The configured embedder behind a cache warmed with the texts the memory base embeds
    /// for `items` ([`turn_embedding_texts`]), then `extra` (questions, labels, references),
    /// in that order.
    pub fn warmed_for_turns<'t>(
        config: &Config,
        items: impl IntoIterator<Item = &'t Item>,
        extra: impl IntoIterator<Item = &'t str>,
        progress: ProgressFn<'_>,
    ) -> Result<Self, EvalError> {
        let turn_texts = turn_embedding_texts(config, items);
        let mut texts: Vec<&str> = turn_texts.iter().map(String::as_str).collect();
        for text in extra {
            texts.push(text);
        }
        Self::warmed(config, &texts, progress)
    }

    /// `inner` behind a cache warmed with `texts`.
    pub fn warm(
        inner: Arc<dyn Embedder>,
        texts: &[&str],
        progress: ProgressFn<'_>,
    ) -> Result<Self, EvalError> {
        let cache = Arc::new(CachingEmbedder::new(inner));
        progress(Progress::Stage {
            name: "embedding",
            total: texts.len() as u64,
        });
        cache.warm(texts, &|n| progress(Progress::Step(n)))?;
        progress(Progress::StageDone);
        Ok(SharedEmbedder {
            embedder: Arc::clone(&cache) as Arc<dyn Embedder>,
            cache: Some(cache),
        })
    }

    /// Mean time the embedding model took per text, in milliseconds, if it embedded anything
    /// through the cache.
    pub fn ms_per_text(&self) -> Option<f64> {
        let cache = self.cache.as_ref()?;
        cache.cost().1.map(|d| d.as_secs_f64() * 1000.0)
    }
}

/// The texts the memory base embeds when `items` are written as turns: the speaker's name
/// before the text, cut into windows, as `Memories` does. Warming the cache with these (not
/// the bare texts) keeps embedding out of every preset's write latencies, the first one's
/// included.
pub fn turn_embedding_texts<'a>(
    config: &Config,
    items: impl IntoIterator<Item = &'a Item>,
) -> Vec<String> {
    let mut texts = Vec::new();
    for item in items {
        let searchable = match &item.speaker {
            Some(speaker) => format!("{speaker}: {}", item.text),
            None => item.text.clone(),
        };
        texts.extend(
            mnemos_core::retrieval::embedding_windows(
                mnemos_text::Analyzer::shared(),
                &searchable,
                config.retrieval.window_tokens,
            )
            .into_iter()
            .map(str::to_string),
        );
    }
    texts
}

/// A conversation streamed without questions (nothing is asked; memories are read after).
pub fn stream_only(conversation: Conversation) -> PreparedConversation {
    let tokens = conversation
        .items
        .iter()
        .map(|i| mnemos_engine::primitives::tokens(&i.text))
        .sum();
    PreparedConversation {
        real_items: conversation.items.len(),
        conversation: Conversation {
            questions: Vec::new(),
            ..conversation
        },
        asks: Vec::new(),
        noise_items: 0,
        tokens,
        contaminated: Vec::new(),
    }
}

/// An engine over `store` and `embedder` with its own instance of the configured memory model
/// (so its call counts are its own), and that model's id.
pub fn open_engine(
    config: &Config,
    engine_config: &EngineConfig,
    store: Arc<dyn Store>,
    embedder: &Arc<dyn Embedder>,
    clock: Arc<dyn Clock>,
) -> Result<(Engine, String), EvalError> {
    let model = mnemos_setup::memory_model(config, embedder)?.0;
    let model_id = model.id().to_string();
    let engine = Engine::builder(store, Arc::clone(embedder), model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .clock(clock)
        .retrieval(config.retrieval.clone())
        .privacy(config.privacy.clone())
        .config(engine_config.clone())
        .build()?;
    Ok((engine, model_id))
}

/// What the per-conversation hook sees: the engine still holding the conversation's memories.
pub struct ConversationContext<'a> {
    /// The run name of the engine.
    pub preset: &'a str,
    pub engine: &'a Engine,
    /// The engine user the conversation was streamed as.
    pub user: &'a UserKey,
    pub conversation: &'a PreparedConversation,
    /// The conversation's position in the experiment's dataset.
    pub index: usize,
}

/// One engine's results: the runner's summary and what the hook returned per conversation.
#[derive(Debug)]
pub struct PresetOutcome<T> {
    pub name: String,
    pub summary: PresetSummary,
    /// The id of the engine's memory model.
    pub memory_model: String,
    pub conversations: Vec<T>,
}

/// Presets side by side over the same prepared conversations (see the module docs).
pub struct Experiment<'a> {
    config: &'a Config,
    store: StoreKind,
    options: &'a RunOptions,
    embedder: Arc<dyn Embedder>,
    answerer: Arc<dyn MemoryModel>,
    progress: ProgressFn<'a>,
    scratch: tempfile::TempDir,
}

impl<'a> Experiment<'a> {
    /// An experiment over `embedder`, with an answer model of the engine's kind but its own
    /// instance, so presets' call counts stay their own.
    pub fn new(
        config: &'a Config,
        store: StoreKind,
        options: &'a RunOptions,
        embedder: Arc<dyn Embedder>,
        progress: ProgressFn<'a>,
    ) -> Result<Self, EvalError> {
        let answerer = mnemos_setup::memory_model(config, &embedder)?.0;
        let scratch = tempfile::tempdir()
            .map_err(EvalError::io("create", Path::new("a scratch directory")))?;
        Ok(Experiment {
            config,
            store,
            options,
            embedder,
            answerer,
            progress,
            scratch,
        })
    }

    /// The model that chooses and answers from recalled contexts.
    pub fn answerer(&self) -> &dyn MemoryModel {
        self.answerer.as_ref()
    }

    /// Run every engine over `dataset`, calling `hook` after each conversation (before its
    /// user is erased); engines in order, conversations in order.
    pub fn run<T>(
        &self,
        engines: &[NamedEngine],
        dataset: &[PreparedConversation],
        mut hook: impl FnMut(&ConversationContext<'_>, &mut ConversationRun) -> Result<T, EvalError>,
    ) -> Result<Vec<PresetOutcome<T>>, EvalError> {
        engines
            .iter()
            .map(|engine| self.run_engine(engine, dataset, &mut hook))
            .collect()
    }

    fn run_engine<T>(
        &self,
        named: &NamedEngine,
        dataset: &[PreparedConversation],
        hook: &mut impl FnMut(&ConversationContext<'_>, &mut ConversationRun) -> Result<T, EvalError>,
    ) -> Result<PresetOutcome<T>, EvalError> {
        let name = named.name.as_str();
        let clock = StreamClock::new();
        let store = self.store.open(self.scratch.path(), name)?;
        let (engine, memory_model) = open_engine(
            self.config,
            &named.config,
            store,
            &self.embedder,
            Arc::new(clock.clone()),
        )?;
        let runner = Runner {
            preset: name,
            engine: &engine,
            answerer: self.answerer.as_ref(),
            clock: &clock,
            options: self.options,
        };
        let started = Instant::now();
        let items: usize = dataset.iter().map(|c| c.conversation.items.len()).sum();
        let progress = self.progress;
        progress(Progress::Stage {
            name,
            total: items as u64,
        });
        let mut accumulator = PresetAccumulator::default();
        let mut conversations = Vec::with_capacity(dataset.len());
        for (index, conversation) in dataset.iter().enumerate() {
            let id = &conversation.conversation.id;
            let mut run = runner
                .run(conversation, false, &|n| progress(Progress::Step(n)))
                .map_err(|source| EvalError::Run {
                    preset: name.to_string(),
                    conversation: id.clone(),
                    source,
                })?;
            let user = UserKey::new(self.options.tenant.clone(), id.clone())?;
            let context = ConversationContext {
                preset: name,
                engine: &engine,
                user: &user,
                conversation,
                index,
            };
            conversations.push(hook(&context, &mut run)?);
            // Long runs stay bounded: the conversation's memories are not needed any more.
            engine.purge(&user)?;
            accumulator.add(run);
        }
        progress(Progress::StageDone);
        let summary =
            accumulator.summarize(name, self.options.ks.len(), started.elapsed().as_secs_f64());
        progress(Progress::Note(&format!(
            "{name}: {} turns, {} asks in {:.0} s",
            summary.turns, summary.overall.asks, summary.wall_seconds
        )));
        Ok(PresetOutcome {
            name: name.to_string(),
            summary,
            memory_model,
            conversations,
        })
    }
}
