//! Layered, typed configuration: defaults → config file → environment → command-line flags.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use mnemos_core::RetrievalConfig;
use mnemos_embed::EmbedderConfig;

/// The whole `mnemos.toml`. Unknown keys are errors that list the valid names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The SQLite database file.
    pub db: PathBuf,
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
}

/// `[engine]`: the preset for every agent, per-agent overrides, per-preset parameters and how
/// derived jobs run.
///
/// ```toml
/// [engine]
/// preset = "memorybank"
/// [engine.agents]
/// companion = "memgpt"
/// [engine.params.memorybank]
/// time_scale = 50.0
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// The preset for agents without their own entry (`mnemos presets` lists them).
    pub preset: String,
    /// Agent name → preset name.
    pub agents: std::collections::BTreeMap<String, String>,
    /// Preset name → its parameters (unknown keys are errors).
    pub params: std::collections::BTreeMap<String, toml::Table>,
    pub jobs: mnemos_engine::JobSettings,
}

impl Default for EngineSection {
    fn default() -> Self {
        Self {
            preset: "retrieval".into(),
            agents: Default::default(),
            params: Default::default(),
            jobs: Default::default(),
        }
    }
}

impl EngineSection {
    fn spec(&self, name: &str) -> mnemos_engine::PresetSpec {
        mnemos_engine::PresetSpec {
            name: name.to_string(),
            params: self.params.get(name).cloned().unwrap_or_default(),
        }
    }

    /// The engine configuration, with `preset` (e.g. a `--preset` flag) replacing the default.
    pub fn engine_config(&self, preset: Option<&str>) -> mnemos_engine::EngineConfig {
        mnemos_engine::EngineConfig {
            preset: self.spec(preset.unwrap_or(&self.preset)),
            agents: self
                .agents
                .iter()
                .map(|(agent, name)| (agent.clone(), self.spec(name)))
                .collect(),
            jobs: self.jobs.clone(),
        }
    }

    /// Every named preset exists and every parameter table is valid.
    pub fn validate(&self) -> Result<()> {
        let known = mnemos_engine::presets::names();
        for name in self.params.keys() {
            if !known.contains(&name.as_str()) {
                bail!(
                    "[engine.params.{name}]: unknown preset (the presets are: {})",
                    known.join(", ")
                );
            }
        }
        let names = std::iter::once(&self.preset).chain(self.agents.values());
        for name in names.chain(self.params.keys()) {
            mnemos_engine::presets::build(&self.spec(name))?;
        }
        if self.jobs.max_attempts == 0 {
            bail!("[engine.jobs] max_attempts must be at least 1");
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            db: PathBuf::from("mnemos.db"),
            tenant: "default".into(),
            sync_full: false,
            embedder: EmbedderConfig::default(),
            retrieval: RetrievalConfig::default(),
            llm: None,
            engine: EngineSection::default(),
        }
    }
}

impl Config {
    /// Load from `explicit`, else `$MNEMOS_CONFIG`, else `./mnemos.toml` when present; then apply
    /// `MNEMOS_DB` / `MNEMOS_TENANT` / `MNEMOS_EMBEDDER` from the environment.
    pub fn load(explicit: Option<&Path>) -> Result<Self> {
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
            config.db = PathBuf::from(db);
        }
        if let Ok(tenant) = std::env::var("MNEMOS_TENANT") {
            config.tenant = tenant;
        }
        if let Ok(name) = std::env::var("MNEMOS_EMBEDDER") {
            config.set_embedder(&name)?;
        }
        config.validate()?;
        Ok(config)
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let config: Config = toml::from_str(&text)
            .with_context(|| format!("invalid config file {}", path.display()))?;
        Ok(config)
    }

    /// Pick an embedder by name, keeping the configured settings when the provider is unchanged.
    pub fn set_embedder(&mut self, name: &str) -> Result<()> {
        let current = match self.embedder {
            EmbedderConfig::Minilm { .. } => "minilm",
            EmbedderConfig::Bilingual { .. } => "bilingual",
            EmbedderConfig::Hash { .. } => "hash",
            EmbedderConfig::Openai { .. } => "openai",
        };
        if current == name {
            return Ok(());
        }
        self.embedder = match name {
            "minilm" => EmbedderConfig::Minilm { model_dir: None },
            "bilingual" => EmbedderConfig::Bilingual {
                model_dir: None,
                m3e_dir: None,
            },
            "hash" => EmbedderConfig::Hash { dim: mnemos_embed::DEFAULT_HASH_DIM },
            "openai" => bail!("the openai embedder needs base_url, model and dimension: set them in the [embedder] section of the config file"),
            other => bail!("unknown embedder '{other}' (expected minilm, bilingual, hash or openai)"),
        };
        Ok(())
    }

    pub fn validate(&self) -> Result<()> {
        if self.tenant.trim().is_empty() {
            bail!("tenant must not be empty");
        }
        self.embedder
            .validate()
            .context("invalid [embedder] config")?;
        self.retrieval
            .validate()
            .context("invalid [retrieval] config")?;
        if let Some(llm) = &self.llm {
            llm.validate().context("invalid [llm] config")?;
        }
        self.engine.validate().context("invalid [engine] config")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let err = format!("{:#}", unknown.validate().unwrap_err());
        assert!(err.contains("nope") && err.contains("retrieval"), "{err}");

        let bad_key: Config = toml::from_str("[engine.params.recent]\nwindw = 3").unwrap();
        let err = format!("{:#}", bad_key.validate().unwrap_err());
        assert!(err.contains("windw") && err.contains("window"), "{err}");

        let bad_value: Config = toml::from_str("[engine.params.recent]\nwindow = 0").unwrap();
        let err = format!("{:#}", bad_value.validate().unwrap_err());
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
}
