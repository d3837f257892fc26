//! Setting an engine up from configuration: the typed `mnemos.toml` ([`Config`], layered
//! defaults → file → environment → the caller's overrides) and [`open`], which builds the
//! configured store (SQLite or PostgreSQL), embedder, memory model (offline or an LLM
//! endpoint) and hands the engine the named presets. Also where data lives
//! ([`StoreLocation`]) and [`migrate()`] between stores. The CLI, the server and the
//! evaluations open engines here, so all read the same file the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::RetrievalConfig;
use mnemos_core::{EmbedError, Embedder, ErrorClass, MemoryModel, Store};
use mnemos_embed::{build_embedder, ChineseModel, EmbedRuntime, EmbedderConfig, WheelModel};
use mnemos_store_postgres::PostgresStore;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

use mnemos_engine::{
    Engine, EngineBuilder, EngineError, EngineResult, JobProgress, ReembedOptions, ReembedReport,
    ReembedStep, SpaceMismatch, VectorSpace,
};
use mnemos_presets::{EngineSection, Presets};

#[cfg(feature = "clap")]
pub mod cli;
mod location;
pub mod migrate;

pub use location::StoreLocation;
pub use migrate::{
    migrate, KeyMigration, MigrationError, MigrationOutcome, MigrationReport, UserMigration,
};

/// The whole `mnemos.toml`. Unknown keys are errors that list the valid names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the data lives: a SQLite file, or a PostgreSQL database (`postgres://…`).
    pub db: StoreLocation,
    /// Tenant used when a command does not name one.
    pub tenant: String,
    /// Power-loss durability (fsync every commit) instead of crash durability.
    pub sync_full: bool,
    pub embedder: EmbedderConfig,
    pub retrieval: RetrievalConfig,
    /// An OpenAI-compatible endpoint for the memory tasks (`[llm]`, see docs/llm.md). Absent:
    /// the offline model does every task.
    pub llm: Option<mnemos_llm::LlmConfig>,
    /// Which memory mechanism (preset) runs, with its parameters (`[engine]`).
    pub engine: EngineSection,
    /// What the write path keeps out of the store (`[privacy]`).
    pub privacy: mnemos_engine::truth::PrivacySettings,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            db: StoreLocation::Sqlite(PathBuf::from("mnemos.db")),
            tenant: "default".into(),
            sync_full: false,
            embedder: EmbedderConfig::default(),
            retrieval: RetrievalConfig::default(),
            llm: None,
            engine: EngineSection::default(),
            privacy: Default::default(),
        }
    }
}

/// The embedders a config can name on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EmbedderChoice {
    /// all-MiniLM-L6-v2, local (English).
    Minilm,
    /// MiniLM for English plus multilingual-e5-small for Chinese (the default).
    Bilingual,
    /// multilingual-e5-small, local, for every language.
    E5,
    /// Weights-free feature hashing.
    Hash,
    /// An OpenAI-compatible embeddings endpoint (set in the config's `[embedder]`).
    Openai,
}

fn config_error(
    what: String,
    source: impl std::error::Error + Send + Sync + 'static,
) -> EngineError {
    EngineError::setup(what, ErrorClass::InvalidInput, source)
}

impl Config {
    /// Load from `explicit`, else `$MNEMOS_CONFIG`, else `./mnemos.toml` when present; then apply
    /// `MNEMOS_DB` / `MNEMOS_TENANT` / `MNEMOS_EMBEDDER` / `MNEMOS_EMBED_RUNTIME` from the
    /// environment.
    pub fn load(explicit: Option<&Path>) -> EngineResult<Self> {
        let from_env = std::env::var_os("MNEMOS_CONFIG").map(PathBuf::from);
        let path = explicit.map(Path::to_path_buf).or(from_env).or_else(|| {
            let local = PathBuf::from("mnemos.toml");
            local.exists().then_some(local)
        });
        let mut config = match &path {
            Some(p) => Self::from_file(p)?,
            None => Self::default(),
        };
        if let Ok(db) = std::env::var("MNEMOS_DB") {
            config.db = StoreLocation::from(PathBuf::from(db));
        }
        if let Ok(tenant) = std::env::var("MNEMOS_TENANT") {
            config.tenant = tenant;
        }
        if let Ok(name) = std::env::var("MNEMOS_EMBEDDER") {
            let choice = match name.as_str() {
                "minilm" => EmbedderChoice::Minilm,
                "bilingual" => EmbedderChoice::Bilingual,
                "e5" => EmbedderChoice::E5,
                "hash" => EmbedderChoice::Hash,
                "openai" => EmbedderChoice::Openai,
                other => {
                    return Err(EngineError::config(format!(
                        "MNEMOS_EMBEDDER={other}: expected minilm, bilingual, e5, hash or openai"
                    )))
                }
            };
            config.set_embedder(choice)?;
        }
        if let Ok(name) = std::env::var("MNEMOS_EMBED_RUNTIME") {
            let runtime: EmbedRuntime = name
                .parse()
                .map_err(|e: String| EngineError::config(format!("MNEMOS_EMBED_RUNTIME: {e}")))?;
            config
                .embedder
                .set_runtime(runtime)
                .map_err(|e| config_error("MNEMOS_EMBED_RUNTIME".into(), e))?;
        }
        config.validate()?;
        Ok(config)
    }

    pub fn from_file(path: &Path) -> EngineResult<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| config_error(format!("cannot read config file {}", path.display()), e))?;
        toml::from_str(&text)
            .map_err(|e| config_error(format!("invalid config file {}", path.display()), e))
    }

    /// Pick an embedder, keeping the configured settings when the provider is unchanged.
    pub fn set_embedder(&mut self, choice: EmbedderChoice) -> EngineResult<()> {
        let current = match self.embedder {
            EmbedderConfig::Minilm { .. } => EmbedderChoice::Minilm,
            EmbedderConfig::Bilingual { .. } => EmbedderChoice::Bilingual,
            EmbedderConfig::E5 { .. } => EmbedderChoice::E5,
            EmbedderConfig::Hash { .. } => EmbedderChoice::Hash,
            EmbedderConfig::Openai { .. } => EmbedderChoice::Openai,
        };
        if current == choice {
            return Ok(());
        }
        self.embedder = match choice {
            EmbedderChoice::Minilm => EmbedderConfig::Minilm {
                model_dir: None,
                runtime: self.embedder.runtime().unwrap_or_default(),
            },
            EmbedderChoice::Bilingual => EmbedderConfig::Bilingual {
                model_dir: None,
                chinese: Default::default(),
                e5_dir: None,
                m3e_dir: None,
                runtime: self.embedder.runtime().unwrap_or_default(),
            },
            EmbedderChoice::E5 => EmbedderConfig::E5 { model_dir: None },
            EmbedderChoice::Hash => EmbedderConfig::Hash {
                dim: mnemos_embed::DEFAULT_HASH_DIM,
            },
            EmbedderChoice::Openai => {
                return Err(EngineError::config(
                    "the openai embedder needs base_url, model and dimension: set them in the \
                     [embedder] section of the config file",
                ))
            }
        };
        Ok(())
    }

    pub fn validate(&self) -> EngineResult<()> {
        if self.tenant.trim().is_empty() {
            return Err(EngineError::config("tenant must not be empty"));
        }
        self.embedder
            .validate()
            .map_err(|e| config_error("invalid [embedder] config".into(), e))?;
        self.retrieval
            .validate()
            .map_err(|e| config_error("invalid [retrieval] config".into(), e))?;
        if let Some(llm) = &self.llm {
            llm.validate()
                .map_err(|e| config_error("invalid [llm] config".into(), e))?;
        }
        self.engine.validate()
    }

    /// The local models the configured embedder needs, each with its configured directory
    /// (`models fetch` with the hash or an HTTP embedder gets MiniLM, the English model).
    pub fn local_models(&self) -> Vec<(&'static WheelModel, Option<PathBuf>)> {
        let mut models = match &self.embedder {
            EmbedderConfig::Minilm { model_dir, .. } => {
                vec![(&mnemos_embed::MINILM_MODEL, model_dir.clone())]
            }
            EmbedderConfig::Bilingual {
                model_dir,
                chinese,
                e5_dir,
                m3e_dir,
                ..
            } => vec![
                (&mnemos_embed::MINILM_MODEL, model_dir.clone()),
                match chinese {
                    ChineseModel::E5 => (&mnemos_embed::E5_SMALL_MODEL, e5_dir.clone()),
                    ChineseModel::M3e => (&mnemos_embed::M3E_SMALL_MODEL, m3e_dir.clone()),
                },
            ],
            EmbedderConfig::E5 { model_dir } => {
                vec![(&mnemos_embed::E5_SMALL_MODEL, model_dir.clone())]
            }
            _ => vec![(&mnemos_embed::MINILM_MODEL, None)],
        };
        let e5 = models
            .iter()
            .any(|(m, _)| m.name == mnemos_embed::E5_SMALL_MODEL.name);
        if self.embedder.runtime() == Some(EmbedRuntime::Onnx) || e5 {
            models.push((&mnemos_embed::ONNXRUNTIME, None));
        }
        models
    }
}

/// Where one local model the configured embedder needs is (or why it is not there).
#[derive(Clone, Debug)]
pub struct LocalModel {
    pub name: &'static str,
    pub found: Result<PathBuf, String>,
    /// The command that downloads it.
    pub fetch: &'static str,
}

impl Config {
    /// Each local model the configured embedder needs, found or not.
    pub fn local_model_status(&self) -> Vec<LocalModel> {
        self.local_models()
            .into_iter()
            .map(|(model, explicit)| LocalModel {
                name: model.name,
                found: model
                    .resolve(explicit.as_deref())
                    .map_err(|e| e.to_string()),
                fetch: if model.name == mnemos_embed::M3E_SMALL_MODEL.name {
                    "mnemos models fetch (with [embedder] provider = \"bilingual\", chinese = \"m3e\")"
                } else if model.name == mnemos_embed::E5_SMALL_MODEL.name {
                    "mnemos models fetch --embedder e5"
                } else if model.name == mnemos_embed::ONNXRUNTIME.name {
                    "mnemos models fetch --embed-runtime onnx"
                } else {
                    "mnemos models fetch"
                },
            })
            .collect()
    }

    /// Download (and verify) every local model the configured embedder needs that is not
    /// there yet; returns each model's directory.
    pub fn fetch_local_models(&self) -> EngineResult<Vec<(&'static str, PathBuf)>> {
        let unavailable =
            |e| EngineError::setup("cannot fetch a model", ErrorClass::Unavailable, e);
        let mut ready = Vec::new();
        for (model, explicit) in self.local_models() {
            let dir = match model.resolve(explicit.as_deref()) {
                Ok(dir) => dir,
                Err(_) => {
                    let cache = mnemos_embed::default_cache_root().map_err(unavailable)?;
                    model.fetch(&cache, true).map_err(unavailable)?
                }
            };
            ready.push((model.name, dir));
        }
        Ok(ready)
    }
}

/// How [`open`] opens the configured database.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Create the database when it does not exist (commands that write turns). Otherwise a
    /// missing file is an error that says so, and nothing is created.
    pub create: bool,
    /// Load the embedding model (needed to add turns, search or recall). Without it, anything
    /// that would embed fails with an explicit error, and nothing is loaded or downloaded.
    pub load_embedder: bool,
    /// The preset for agents without their own, instead of the config's.
    pub preset: Option<String>,
}

impl OpenOptions {
    /// An existing database (a missing one is an error), without the embedding model.
    pub fn existing() -> Self {
        Self::default()
    }

    /// For commands that write turns: the database is created when missing, and the embedding
    /// model is loaded.
    pub fn writing() -> Self {
        Self {
            create: true,
            load_embedder: true,
            preset: None,
        }
    }

    /// Load the embedding model (`true`) or stand in for it.
    #[must_use]
    pub fn embedder(mut self, load: bool) -> Self {
        self.load_embedder = load;
        self
    }

    /// The preset for agents without their own (`None`: the config's).
    #[must_use]
    pub fn preset(mut self, preset: Option<&str>) -> Self {
        self.preset = preset.map(str::to_string);
        self
    }
}

/// Stands in for the embedding model where nothing is embedded (show, list, forget, purge),
/// so those never load or download it. Any attempt to embed is an explicit error.
struct NotLoaded;

impl Embedder for NotLoaded {
    fn id(&self) -> &str {
        "not-loaded"
    }
    fn dimension(&self) -> usize {
        1
    }
    fn embed_batch(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Unavailable(
            "this operation was opened without the embedding model".into(),
        ))
    }
}

/// The configured store: a SQLite file or a PostgreSQL database. Without `create`, a missing
/// SQLite file is an error (a PostgreSQL database is never created here: its server owns it).
pub fn open_store(config: &Config, create: bool) -> EngineResult<Arc<dyn Store>> {
    match &config.db {
        StoreLocation::Sqlite(path) => {
            let options = SqliteOptions {
                synchronous_full: config.sync_full,
                ..SqliteOptions::default()
            };
            let store = if create {
                SqliteStore::open(path, options)
            } else {
                SqliteStore::open_existing(path, options)
            };
            Ok(Arc::new(store?))
        }
        StoreLocation::Postgres(url) => Ok(Arc::new(PostgresStore::connect(url)?)),
    }
}

/// Single texts (queries) whose vectors the configured embedder keeps.
const RECENT_QUERIES: usize = 64;

/// The configured embedder (downloading a local model once when it is missing).
pub fn embedder(config: &Config) -> EngineResult<Arc<dyn Embedder>> {
    let embedder = build_embedder(&config.embedder, true, true)
        .map_err(|e| EngineError::setup("cannot load the embedder", ErrorClass::Unavailable, e))?;
    // The memory model shares this embedder: a query classified after a search is not
    // embedded twice.
    Ok(Arc::new(mnemos_core::RecentTextCache::new(
        Arc::from(embedder),
        RECENT_QUERIES,
    )))
}

/// The memory model the config asks for: the `[llm]` endpoint when set, else the offline
/// model. Returns what the offline model does less well than it could (never silent).
pub fn memory_model(
    config: &Config,
    embedder: &Arc<dyn Embedder>,
) -> EngineResult<(Arc<dyn MemoryModel>, Vec<String>)> {
    Ok(match &config.llm {
        Some(llm) => {
            let model = mnemos_llm::LlmModel::new(llm.clone()).map_err(|e| {
                EngineError::setup(
                    "cannot set up the [llm] endpoint",
                    ErrorClass::InvalidInput,
                    e,
                )
            })?;
            (Arc::new(model), Vec::new())
        }
        None => {
            let offline = mnemos_offline::OfflineModel::new(Arc::clone(embedder));
            let notes = offline.degradations();
            (Arc::new(offline), notes)
        }
    })
}

/// The engine a config describes: its database, embedder, memory model and the named presets.
/// Degradations of the offline model are in [`Engine::notes`].
pub fn open(config: &Config, options: &OpenOptions) -> EngineResult<Engine> {
    open_with(config, options, None)
}

/// [`open`], telling `progress` about derived jobs as they run.
pub fn open_with(
    config: &Config,
    options: &OpenOptions,
    progress: Option<Arc<dyn JobProgress>>,
) -> EngineResult<Engine> {
    let space = if options.load_embedder {
        VectorSpace::Bound
    } else {
        // The stand-in never embeds, so it can neither mix spaces nor bind a database.
        VectorSpace::Unchecked
    };
    let builder = engine_builder(config, options, progress, space)?;
    builder.build().map_err(|e| with_way_out(e, config))
}

/// Move the configured database into the configured embedder's vector space
/// (`mnemos reembed`): every active memory without a vector there is embedded, in batches
/// committed as they go (a rerun resumes), then the database is bound to the embedder (see
/// [`Engine::reembed`]). `progress` hears after each batch.
pub fn reembed(
    config: &Config,
    options: ReembedOptions,
    progress: &mut dyn FnMut(ReembedStep),
) -> EngineResult<ReembedReport> {
    let open = OpenOptions::existing().embedder(true);
    let engine = engine_builder(config, &open, None, VectorSpace::Moving)?.build()?;
    engine.reembed(options, progress)
}

/// The engine's builder for `config`: store, embedder (or the stand-in), memory model, presets.
fn engine_builder(
    config: &Config,
    options: &OpenOptions,
    progress: Option<Arc<dyn JobProgress>>,
    space: VectorSpace,
) -> EngineResult<EngineBuilder> {
    let store = open_store(config, options.create)?;
    let embedder: Arc<dyn Embedder> = if options.load_embedder {
        refuse_other_space(store.as_ref(), config, space)?;
        embedder(config)?
    } else {
        Arc::new(NotLoaded)
    };
    let (model, notes) = memory_model(config, &embedder)?;
    let mut builder = Engine::builder(store, embedder, model)
        .presets(Arc::new(Presets))
        .retrieval(config.retrieval.clone())
        .privacy(config.privacy.clone())
        .config(config.engine.engine_config(options.preset.as_deref()))
        .notes(notes)
        .vector_space(space);
    if let Some(progress) = progress {
        builder = builder.job_progress(progress);
    }
    Ok(builder)
}

/// Refuse a database bound to another space before the embedder is loaded (a local model may
/// have to be downloaded first); the engine checks again, and binds a new database.
fn refuse_other_space(store: &dyn Store, config: &Config, space: VectorSpace) -> EngineResult<()> {
    if space != VectorSpace::Bound {
        return Ok(());
    }
    let opened = config.embedder.embedder_id();
    match store.binding()? {
        Some(bound) if bound != opened => {
            let mismatch = SpaceMismatch::new(&bound, &opened);
            Err(with_way_out(mismatch.into(), config))
        }
        _ => Ok(()),
    }
}

/// A vector-space mismatch with the way out in the CLI's words: the `--embedder` that opens
/// the database, and the `mnemos reembed` that moves it to the configured embedder.
fn with_way_out(error: EngineError, config: &Config) -> EngineError {
    let EngineError::VectorSpace(mut mismatch) = error else {
        return error;
    };
    let keep = match choice_for(config, &mismatch.bound) {
        Some(name) => format!("Use --embedder {name}"),
        // The bilingual pair's Chinese half was m3e-small before e5 took its place.
        None if mismatch.bound == M3E_BILINGUAL_ID => "Open it with [embedder] provider = \
             \"bilingual\" and chinese = \"m3e\" in the config"
            .to_string(),
        None => format!(
            "Open it with the embedder that made them ({})",
            mismatch.bound
        ),
    };
    let switch = match choice_for(config, &mismatch.opened) {
        Some(name) => format!("mnemos reembed --embedder {name}"),
        None => "mnemos reembed".to_string(),
    };
    mismatch.way_out = format!("{keep}, or switch with: {switch}");
    EngineError::VectorSpace(mismatch)
}

/// The vector space of the bilingual pair with m3e-small as its Chinese half.
const M3E_BILINGUAL_ID: &str = "bilingual:minilm-l6-v2+m3e-small";

/// The `--embedder` value that gives `config` an embedder of vector space `id`, if any does.
fn choice_for(config: &Config, id: &str) -> Option<&'static str> {
    let choices = [
        (EmbedderChoice::Minilm, "minilm"),
        (EmbedderChoice::Bilingual, "bilingual"),
        (EmbedderChoice::E5, "e5"),
        (EmbedderChoice::Hash, "hash"),
        (EmbedderChoice::Openai, "openai"),
    ];
    choices.into_iter().find_map(|(choice, name)| {
        let mut other = config.clone();
        let fits = other.set_embedder(choice).is_ok() && other.embedder.embedder_id() == id;
        fits.then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_names_the_embedder_flags_that_open_or_move_the_database() {
        let config = Config::default();
        assert_eq!(choice_for(&config, "minilm-l6-v2"), Some("minilm"));
        assert_eq!(choice_for(&config, "hash-v1-384"), Some("hash"));
        let bilingual = "bilingual:minilm-l6-v2+e5-small-q4";
        assert_eq!(choice_for(&config, bilingual), Some("bilingual"));
        assert_eq!(choice_for(&config, "e5-small-q4"), Some("e5"));
        assert_eq!(choice_for(&config, M3E_BILINGUAL_ID), None);
        assert_eq!(choice_for(&config, "e5-small"), None);
        let mismatch = SpaceMismatch::new("hash-v1-384", "minilm-l6-v2");
        let worded = with_way_out(mismatch.into(), &config).to_string();
        assert_eq!(
            worded,
            "this database's vectors are hash-v1-384; it was opened with minilm-l6-v2. Use \
             --embedder hash, or switch with: mnemos reembed --embedder minilm"
        );
        let mismatch = SpaceMismatch::new("e5-small", "minilm-l6-v2");
        let worded = with_way_out(mismatch.into(), &config).to_string();
        assert!(
            worded.ends_with(
                "Open it with the embedder that made them (e5-small), or switch with: mnemos \
                 reembed --embedder minilm"
            ),
            "{worded}"
        );
        let mismatch = SpaceMismatch::new(M3E_BILINGUAL_ID, bilingual);
        let worded = with_way_out(mismatch.into(), &config).to_string();
        assert!(
            worded.ends_with(
                "Open it with [embedder] provider = \"bilingual\" and chinese = \"m3e\" in \
                 the config, or switch with: mnemos reembed --embedder bilingual"
            ),
            "{worded}"
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_valid_ones() {
        let err = toml::from_str::<Config>("dbb = 'x'")
            .unwrap_err()
            .to_string();
        assert!(err.contains("dbb") && err.contains("db"), "{err}");
        let err = toml::from_str::<Config>("[retrieval]\ncandidatez = 5")
            .unwrap_err()
            .to_string();
        assert!(err.contains("candidates"), "{err}");
    }

    #[test]
    fn engine_presets_and_params_are_validated() {
        let ok: Config = toml::from_str(
            "[engine]\npreset = 'recent'\n[engine.agents]\nbot = 'full'\n[engine.params.recent]\nwindow = 4",
        )
        .unwrap();
        ok.validate().unwrap();
        let spec = ok.engine.engine_config(None);
        assert_eq!(spec.preset.name, "recent");
        assert_eq!(spec.agents["bot"].name, "full");
        assert_eq!(ok.engine.engine_config(Some("full")).preset.name, "full");

        let unknown: Config = toml::from_str("[engine]\npreset = 'nope'").unwrap();
        let err = unknown.validate().unwrap_err().to_string();
        assert!(err.contains("nope") && err.contains("retrieval"), "{err}");

        let bad_key: Config = toml::from_str("[engine.params.recent]\nwindw = 3").unwrap();
        let err = bad_key.validate().unwrap_err().to_string();
        assert!(err.contains("windw") && err.contains("window"), "{err}");

        let bad_value: Config = toml::from_str("[engine.params.recent]\nwindow = 0").unwrap();
        let err = bad_value.validate().unwrap_err().to_string();
        assert!(err.contains("window"), "{err}");
    }

    #[test]
    fn a_full_config_parses_and_validates() {
        let config: Config = toml::from_str(
            r#"
            db = "x.db"
            [embedder]
            provider = "hash"
            dim = 256
            [retrieval]
            candidates = 50
            fusion = { method = "weighted", lexical_weight = 0.3, dense_weight = 0.7 }
            "#,
        )
        .unwrap();
        config.validate().unwrap();
        assert_eq!(config.retrieval.candidates, 50);
    }

    #[test]
    fn the_approximate_index_is_configured_and_checked_under_retrieval_ann() {
        let config: Config =
            toml::from_str("[retrieval.ann]\nmin_vectors = 0\nef_search = 300").unwrap();
        config.validate().unwrap();
        assert!(!config.retrieval.ann.active());
        assert_eq!(config.retrieval.ann.ef_search, 300);
        let bad: Config = toml::from_str("[retrieval.ann]\nm = 1").unwrap();
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("retrieval.ann.m"), "{err}");
        assert!(toml::from_str::<Config>("[retrieval.ann]\nef = 5").is_err());
    }

    #[test]
    fn opening_a_missing_database_without_create_makes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            db: StoreLocation::Sqlite(dir.path().join("absent.db")),
            ..Config::default()
        };
        let err = open(&config, &OpenOptions::default())
            .err()
            .expect("no database");
        assert!(err.to_string().contains("absent.db"), "{err}");
        assert!(!dir.path().join("absent.db").exists());
    }
}
