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
            EmbedderConfig::Hash { .. } => "hash",
            EmbedderConfig::Openai { .. } => "openai",
        };
        if current == name {
            return Ok(());
        }
        self.embedder = match name {
            "minilm" => EmbedderConfig::Minilm { model_dir: None },
            "hash" => EmbedderConfig::Hash { dim: mnemos_embed::DEFAULT_HASH_DIM },
            "openai" => bail!("the openai embedder needs base_url, model and dimension: set them in the [embedder] section of the config file"),
            other => bail!("unknown embedder '{other}' (expected minilm, hash or openai)"),
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
