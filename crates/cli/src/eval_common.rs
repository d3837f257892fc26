//! What the preset-comparing eval commands share: the `--presets` list, one engine per preset
//! over a scratch store with a stream clock, the shared embedding cache, reading a user's
//! memories back, and the cost columns of a report.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use serde::Serialize;

use mnemos_core::{Embedder, Memory, MemoryFilter, Store, UserKey};
use mnemos_engine::{Engine, EngineConfig};
use mnemos_eval::embed_cache::CachingEmbedder;
use mnemos_eval::protocol::PreparedConversation;
use mnemos_eval::runner::StreamClock;
use mnemos_eval::summary::PresetSummary;
use mnemos_eval::{Conversation, Item, LatencySummary};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

use crate::progress::bar as progress_bar;
use mnemos_engine::Config;

/// The format of `path`: the one given, else recognized from the file.
pub(crate) fn resolve_format(path: &Path, format: &str) -> Result<mnemos_eval::format::Format> {
    if format == "auto" {
        Ok(mnemos_eval::format::sniff_format(path)?)
    } else {
        format.parse().map_err(|e: String| anyhow::anyhow!("{e}"))
    }
}

/// The presets named by `--presets a,b,c`, or every preset.
pub(crate) fn preset_names(list: &Option<String>) -> Result<Vec<String>> {
    let names: Vec<String> = match list {
        Some(list) => list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None => mnemos_engine::presets::names()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    if names.is_empty() {
        bail!("--presets lists no preset");
    }
    Ok(names)
}

/// Each named preset's engine config (with the config file's parameters), checked before any
/// work so a misspelt preset or parameter fails at once.
pub(crate) fn preset_configs(
    config: &Config,
    names: &[String],
) -> Result<Vec<(String, EngineConfig)>> {
    let specs: Vec<(String, EngineConfig)> = names
        .iter()
        .map(|name| (name.clone(), config.engine.engine_config(Some(name))))
        .collect();
    for (_, spec) in &specs {
        mnemos_engine::presets::build(&spec.preset)?;
    }
    Ok(specs)
}

/// Where an evaluated engine keeps its memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKind {
    /// A scratch SQLite database per preset, as deployed.
    Sqlite,
    /// The in-memory store.
    Memory,
}

impl StoreKind {
    /// `sqlite` or `memory` (the `--store` flag).
    pub(crate) fn parse(name: &str) -> Result<Self> {
        match name {
            "sqlite" => Ok(StoreKind::Sqlite),
            "memory" => Ok(StoreKind::Memory),
            other => bail!("--store must be sqlite or memory, not {other:?}"),
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Memory => "memory",
        }
    }
}

/// One preset's engine with the clock the runner moves.
pub(crate) struct PresetEngine {
    pub(crate) engine: Engine,
    pub(crate) clock: StreamClock,
    /// The memory model's id, for the report.
    pub(crate) model_id: String,
}

/// The engine of preset `name` over a fresh store (`<scratch>/<name>.db` for SQLite), the given
/// embedder, a stream clock and the configured memory model (its own instance, so call counts
/// are the preset's own).
pub(crate) fn engine_for(
    config: &Config,
    name: &str,
    engine_config: &EngineConfig,
    store: StoreKind,
    scratch: &Path,
    embedder: &Arc<dyn Embedder>,
) -> Result<PresetEngine> {
    let clock = StreamClock::new();
    let store: Arc<dyn Store> = match store {
        StoreKind::Memory => Arc::new(mnemos_core::MemoryStore::new()),
        StoreKind::Sqlite => Arc::new(SqliteStore::open(
            // Sweep variants have names like `recent[window=4]`: keep file names plain.
            &scratch.join(format!(
                "{}.db",
                name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            )),
            SqliteOptions::default(),
        )?),
    };
    let model = mnemos_engine::setup::memory_model(config, embedder)?.0;
    let model_id = model.id().to_string();
    let engine = Engine::builder(store, Arc::clone(embedder), model)
        .clock(Arc::new(clock.clone()))
        .retrieval(config.retrieval.clone())
        .config(engine_config.clone())
        .build()?;
    Ok(PresetEngine {
        engine,
        clock,
        model_id,
    })
}

/// The configured embedder behind a cache warmed with `texts` (a progress bar while it
/// embeds), shared by every preset so each text is embedded once.
pub(crate) fn warm_embedder(
    config: &Config,
    texts: &[&str],
) -> Result<(Arc<dyn Embedder>, Arc<CachingEmbedder>)> {
    let cache = Arc::new(CachingEmbedder::new(mnemos_engine::setup::embedder(
        config,
    )?));
    let bar = progress_bar(texts.len() as u64, "embedding");
    cache.warm(texts, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    Ok((Arc::clone(&cache) as Arc<dyn Embedder>, cache))
}

/// The texts the memory base embeds when `items` are written as turns: the speaker's name
/// before the text, cut into windows, as `Memories` does. Warming the cache with these (not
/// the bare texts) keeps embedding out of every preset's write latencies, the first one's
/// included.
pub(crate) fn turn_embedding_texts<'a>(
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

/// Mean time the embedding model took per text, in milliseconds, if it embedded anything.
pub(crate) fn embedding_ms(cache: &CachingEmbedder) -> Option<f64> {
    cache.cost().1.map(|d| d.as_secs_f64() * 1000.0)
}

/// A conversation streamed without questions (nothing is asked; memories are read after).
pub(crate) fn stream_only(conversation: Conversation) -> PreparedConversation {
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

/// Every active memory of `user`, all kinds and agents.
pub(crate) fn active_memories(engine: &Engine, user: &UserKey) -> Result<Vec<Memory>> {
    Ok(engine.reader().all(user, &MemoryFilter::active())?)
}

/// What running a preset cost, from the runner's summary.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cost {
    pub(crate) turns: usize,
    pub(crate) observe: Option<LatencySummary>,
    pub(crate) end_session: Option<LatencySummary>,
    pub(crate) recall: Option<LatencySummary>,
    pub(crate) answer_model: Option<LatencySummary>,
    /// Memories (all kinds) at the end of each stream, on average.
    pub(crate) final_memories: f64,
    pub(crate) final_memory_tokens: f64,
    pub(crate) model_calls_per_turn: f64,
    /// Prompt + completion tokens the preset's memory model used per observed turn.
    pub(crate) model_tokens_per_turn: f64,
    pub(crate) jobs_failed: usize,
    /// The first few job errors, verbatim.
    pub(crate) job_errors: Vec<String>,
    pub(crate) wall_seconds: f64,
}

impl Cost {
    pub(crate) fn of(summary: &PresetSummary) -> Self {
        Cost {
            turns: summary.turns,
            observe: summary.observe.clone(),
            end_session: summary.end_session.clone(),
            recall: summary.recall.clone(),
            answer_model: summary.answer_model.clone(),
            final_memories: summary.final_memories,
            final_memory_tokens: summary.final_memory_tokens,
            model_calls_per_turn: summary.model_calls_per_turn,
            model_tokens_per_turn: summary.model_tokens_per_turn,
            jobs_failed: summary.jobs_failed,
            job_errors: summary.job_errors.clone(),
            wall_seconds: summary.wall_seconds,
        }
    }
}

/// A number with three decimals.
pub(crate) fn f3(value: f64) -> String {
    format!("{value:.3}")
}

/// Three decimals, or "–" when there is no value.
pub(crate) fn opt3(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), f3)
}

/// A latency's p50 (or p95) in milliseconds, or "–".
pub(crate) fn ms(summary: &Option<LatencySummary>, p95: bool) -> String {
    summary.as_ref().map_or_else(
        || "–".to_string(),
        |s| format!("{:.2}", if p95 { s.p95_ms } else { s.p50_ms }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_lists() {
        let picked = preset_names(&Some(" memorybank, ,full ".to_string())).unwrap();
        assert_eq!(picked, ["memorybank", "full"]);
        let all = preset_names(&None).unwrap();
        assert_eq!(all.len(), mnemos_engine::presets::names().len());
        assert!(preset_names(&Some(" , ".to_string())).is_err());
    }

    #[test]
    fn store_kinds() {
        assert_eq!(StoreKind::parse("sqlite").unwrap(), StoreKind::Sqlite);
        assert_eq!(StoreKind::parse("memory").unwrap().as_str(), "memory");
        assert!(StoreKind::parse("disk").is_err());
    }

    #[test]
    fn turns_are_warmed_as_the_memory_base_embeds_them() {
        let config = Config::default();
        let item = |speaker: Option<&str>, text: &str| Item {
            label: "0".into(),
            role: mnemos_core::Role::User,
            speaker: speaker.map(str::to_string),
            text: text.into(),
            time: None,
            session: "0".into(),
            metadata: Default::default(),
        };
        let texts = turn_embedding_texts(
            &config,
            &[item(Some("Ann"), "I like tea."), item(None, "Hi.")],
        );
        assert_eq!(texts, ["Ann: I like tea.", "Hi."]);
        let long = "One sentence here. ".repeat(400);
        let windows = turn_embedding_texts(&config, &[item(None, long.trim())]);
        assert!(windows.len() > 1, "{}", windows.len());
    }

    #[test]
    fn formatting() {
        assert_eq!(f3(0.12345), "0.123");
        assert_eq!(opt3(None), "–");
        assert_eq!(ms(&None, false), "–");
    }
}
