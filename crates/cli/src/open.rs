//! Opening the configured store, embedder and memory base.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use mnemos_core::{EmbedError, Embedder, Memories, SystemClock};
use mnemos_embed::{build_embedder, EmbedderConfig};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

use crate::config::Config;

/// Stands in for the embedding model in commands that never embed (show, list, forget, purge),
/// so they neither load nor download it. Any attempt to embed is an explicit error.
struct NotLoaded {
    id: String,
    dimension: usize,
}

impl Embedder for NotLoaded {
    fn id(&self) -> &str {
        &self.id
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed_batch(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Unavailable(
            "this command does not load the embedding model".into(),
        ))
    }
}

pub fn open_store(config: &Config) -> Result<Arc<SqliteStore>> {
    let options = SqliteOptions {
        synchronous_full: config.sync_full,
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open(&config.db, options)
        .with_context(|| format!("cannot open database {}", config.db.display()))?;
    Ok(Arc::new(store))
}

pub fn embedder(config: &Config) -> Result<Arc<dyn Embedder>> {
    let embedder =
        build_embedder(&config.embedder, true, true).context("cannot load the embedder")?;
    Ok(Arc::from(embedder))
}

/// Open the memory base; `with_model` loads the embedder (needed to search or ingest).
pub fn open(config: &Config, with_model: bool) -> Result<Memories> {
    let store = open_store(config)?;
    let embedder: Arc<dyn Embedder> = if with_model {
        embedder(config)?
    } else {
        Arc::new(NotLoaded {
            id: "not-loaded".into(),
            dimension: 1,
        })
    };
    Ok(Memories::new(
        store,
        embedder,
        Arc::new(SystemClock),
        config.retrieval.clone(),
    )?)
}

/// The local models the configured embedder needs, each with its configured directory.
fn local_models(config: &Config) -> Vec<(&'static mnemos_embed::WheelModel, Option<PathBuf>)> {
    match &config.embedder {
        EmbedderConfig::Minilm { model_dir } => {
            vec![(&mnemos_embed::MINILM_MODEL, model_dir.clone())]
        }
        EmbedderConfig::Bilingual { model_dir, m3e_dir } => vec![
            (&mnemos_embed::MINILM_MODEL, model_dir.clone()),
            (&mnemos_embed::M3E_SMALL_MODEL, m3e_dir.clone()),
        ],
        // The offline memory model's shipped classifier weights are MiniLM's, so MiniLM is
        // what `models fetch` gets whatever the embedder.
        _ => vec![(&mnemos_embed::MINILM_MODEL, None)],
    }
}

pub fn fetch_model(config: &Config) -> Result<()> {
    for (model, explicit) in local_models(config) {
        let dir = match model.resolve(explicit.as_deref()) {
            Ok(dir) => dir,
            Err(_) => model.fetch(&mnemos_embed::default_cache_root()?, true)?,
        };
        println!("{} ready in {}", model.name, dir.display());
    }
    Ok(())
}

pub fn model_status(config: &Config) -> Result<()> {
    for (model, explicit) in local_models(config) {
        match model.resolve(explicit.as_deref()) {
            Ok(dir) => println!("{}: present in {}", model.name, dir.display()),
            Err(err) => {
                let fetch = match model.name {
                    "m3e-small" => "mnemos models fetch --embedder bilingual",
                    _ => "mnemos models fetch",
                };
                println!("{}: not available ({err}); run `{fetch}`", model.name)
            }
        }
    }
    Ok(())
}

/// The memory model the config asks for: the `[llm]` endpoint when set, else the offline model.
/// Offline degradations are printed once so nothing weaker runs silently.
pub fn memory_model(
    config: &Config,
    embedder: &Arc<dyn Embedder>,
) -> Result<Arc<dyn mnemos_core::MemoryModel>> {
    Ok(match &config.llm {
        Some(llm) => Arc::new(
            mnemos_llm::LlmModel::new(llm.clone()).context("cannot set up the [llm] endpoint")?,
        ),
        None => {
            let offline = mnemos_offline::OfflineModel::new(Arc::clone(embedder));
            for note in offline.degradations() {
                eprintln!("note: {note}");
            }
            Arc::new(offline)
        }
    })
}

/// The engine over the configured store, embedder and memory model; `preset` overrides the
/// config's default preset (e.g. from `--preset`).
pub fn engine(config: &Config, preset: Option<&str>) -> Result<mnemos_engine::Engine> {
    let memories = Arc::new(open(config, true)?);
    let model = memory_model(config, memories.embedder())?;
    let engine_config = config.engine.engine_config(preset);
    mnemos_engine::Engine::new(memories, model, &engine_config).context("cannot set up the engine")
}

/// The engine for commands that only read and forget (no embedding model is loaded; the
/// offline model is never asked to run a task). Any attempt to embed is an explicit error.
pub fn engine_for_edits(config: &Config) -> Result<mnemos_engine::Engine> {
    let memories = Arc::new(open(config, false)?);
    let model: Arc<dyn mnemos_core::MemoryModel> = Arc::new(mnemos_offline::OfflineModel::new(
        Arc::clone(memories.embedder()),
    ));
    let engine_config = config.engine.engine_config(None);
    mnemos_engine::Engine::new(memories, model, &engine_config).context("cannot set up the engine")
}
