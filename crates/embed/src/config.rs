//! Embedder configuration (the `[embedder]` section of the mnemos config) and construction.

use std::path::PathBuf;
use std::time::Duration;

use mnemos_core::{EmbedError, Embedder};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bert::{
    E5Embedder, EmbedRuntime, M3eEmbedder, MiniLmEmbedder, E5_ID, M3E_ID, MINILM_ID,
};
use crate::bilingual::BilingualEmbedder;
use crate::fetch::{E5_SMALL_MODEL, M3E_SMALL_MODEL};
use crate::hash::{HashEmbedder, DEFAULT_HASH_DIM, MAX_HASH_DIM, MIN_HASH_DIM};
use crate::http::{HttpEmbedder, HttpEmbedderOptions, DEFAULT_API_KEY_ENV, DEFAULT_HTTP_MAX_BATCH};
use crate::resolve_model_dir;

/// Why an embedder could not be built: the configuration is wrong (a user error) or the
/// embedder is unavailable (missing model, failed download…).
#[derive(Debug, Error)]
pub enum BuildError {
    #[error("invalid embedder configuration: {0}")]
    Invalid(String),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl From<crate::ModelError> for BuildError {
    fn from(e: crate::ModelError) -> Self {
        BuildError::Embed(e.into())
    }
}

impl From<BuildError> for mnemos_core::Error {
    fn from(e: BuildError) -> Self {
        match e {
            BuildError::Invalid(msg) => mnemos_core::Error::InvalidInput(msg),
            BuildError::Embed(e) => mnemos_core::Error::Embed(e),
        }
    }
}

/// Which embedder to use. Serialized with a `provider` tag, e.g. in TOML:
///
/// ```toml
/// [embedder]
/// provider = "openai"
/// base_url = "http://localhost:11434/v1"
/// model = "nomic-embed-text"
/// dimension = 768
/// ```
///
/// Unknown fields are rejected so that typos (`modeldir`) fail loudly instead of being ignored.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "provider", rename_all = "lowercase", deny_unknown_fields)]
pub enum EmbedderConfig {
    /// all-MiniLM-L6-v2 run locally (English); `model_dir` overrides where the files are looked
    /// up.
    Minilm {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_dir: Option<PathBuf>,
        /// What computes the forward pass (`candle` or `onnx`).
        #[serde(default, skip_serializing_if = "is_default_runtime")]
        runtime: EmbedRuntime,
    },
    /// The default: MiniLM for English plus a Chinese-capable model in one vector space (see
    /// [`BilingualEmbedder`]): multilingual-e5-small (MIT, the default) or m3e-small (research
    /// and non-commercial use only, never a default). `model_dir`, `e5_dir` and `m3e_dir`
    /// override where the files are looked up.
    Bilingual {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_dir: Option<PathBuf>,
        /// The model for Chinese.
        #[serde(default, skip_serializing_if = "is_default_chinese")]
        chinese: ChineseModel,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        e5_dir: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        m3e_dir: Option<PathBuf>,
        /// What computes MiniLM's and m3e's forward passes (e5 runs on onnx in any case).
        #[serde(default, skip_serializing_if = "is_default_runtime")]
        runtime: EmbedRuntime,
    },
    /// multilingual-e5-small run locally on ONNX Runtime (about 100 languages in one space);
    /// `model_dir` overrides where `e5-small-q4.bin` is looked up.
    E5 {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_dir: Option<PathBuf>,
    },
    /// The weights-free hashing embedder.
    Hash {
        #[serde(default = "default_hash_dim")]
        dim: usize,
    },
    /// An OpenAI-compatible `/v1/embeddings` service.
    Openai {
        base_url: String,
        model: String,
        /// Name of the environment variable holding the API key (the key itself never goes
        /// into config files).
        #[serde(default = "default_api_key_env")]
        api_key_env: String,
        /// Dimension the model produces; checked on every response.
        dimension: usize,
        #[serde(default = "default_timeout_secs")]
        timeout_secs: u64,
        #[serde(default = "default_http_max_batch")]
        max_batch: usize,
    },
}

fn is_default_runtime(r: &EmbedRuntime) -> bool {
    *r == EmbedRuntime::default()
}

/// The Chinese half of the bilingual embedder.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChineseModel {
    /// multilingual-e5-small (MIT).
    #[default]
    E5,
    /// moka-ai/m3e-small (research and non-commercial use only).
    M3e,
}

fn is_default_chinese(c: &ChineseModel) -> bool {
    *c == ChineseModel::default()
}

/// An explicit model directory must name something.
fn check_dir(field: &str, dir: &Option<PathBuf>) -> Result<(), BuildError> {
    if dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
        return Err(BuildError::Invalid(format!(
            "{field} must not be empty (omit it to use the cache)"
        )));
    }
    Ok(())
}

fn default_hash_dim() -> usize {
    DEFAULT_HASH_DIM
}
fn default_api_key_env() -> String {
    DEFAULT_API_KEY_ENV.to_string()
}
fn default_timeout_secs() -> u64 {
    30
}
fn default_http_max_batch() -> usize {
    DEFAULT_HTTP_MAX_BATCH
}

impl Default for EmbedderConfig {
    /// The local neural models, both under permissive licences: MiniLM for English and
    /// multilingual-e5-small for Chinese. English text embeds exactly as under MiniLM alone
    /// (e5 is not even run for it), which on English retrieval beat e5 alone in hybrid search
    /// (docs/results/retrieval.md); Chinese text gets a model that reads it.
    fn default() -> Self {
        EmbedderConfig::Bilingual {
            model_dir: None,
            chinese: ChineseModel::default(),
            e5_dir: None,
            m3e_dir: None,
            runtime: Default::default(),
        }
    }
}

impl EmbedderConfig {
    /// Check values that serde cannot: ranges, URL scheme, names.
    pub fn validate(&self) -> Result<(), BuildError> {
        let invalid = |msg: String| Err(BuildError::Invalid(msg));
        match self {
            EmbedderConfig::Minilm { model_dir, .. } => check_dir("minilm.model_dir", model_dir)?,
            EmbedderConfig::E5 { model_dir } => check_dir("e5.model_dir", model_dir)?,
            EmbedderConfig::Bilingual {
                model_dir,
                e5_dir,
                m3e_dir,
                ..
            } => {
                check_dir("bilingual.model_dir", model_dir)?;
                check_dir("bilingual.e5_dir", e5_dir)?;
                check_dir("bilingual.m3e_dir", m3e_dir)?;
            }
            EmbedderConfig::Hash { dim } => {
                if !(MIN_HASH_DIM..=MAX_HASH_DIM).contains(dim) {
                    return invalid(format!(
                        "hash.dim must be in {MIN_HASH_DIM}..={MAX_HASH_DIM}, got {dim}"
                    ));
                }
            }
            EmbedderConfig::Openai {
                base_url,
                model,
                api_key_env,
                dimension,
                timeout_secs,
                max_batch,
            } => {
                let rest = base_url
                    .strip_prefix("https://")
                    .or_else(|| base_url.strip_prefix("http://"));
                match rest {
                    None => {
                        return invalid(format!(
                            "openai.base_url must start with http:// or https://, got {base_url:?}"
                        ))
                    }
                    Some(r) if r.split('/').next().unwrap_or("").is_empty() => {
                        return invalid(format!("openai.base_url has no host: {base_url:?}"))
                    }
                    Some(r) if r.chars().any(char::is_whitespace) => {
                        return invalid(format!(
                            "openai.base_url contains whitespace: {base_url:?}"
                        ))
                    }
                    Some(_) => {}
                }
                if model.trim().is_empty() {
                    return invalid("openai.model must not be empty".into());
                }
                let valid_env_name = !api_key_env.is_empty()
                    && !api_key_env.starts_with(|c: char| c.is_ascii_digit())
                    && api_key_env
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid_env_name {
                    return invalid(format!(
                        "openai.api_key_env must be an environment variable name (the key itself \
                         does not belong in the config), got {api_key_env:?}"
                    ));
                }
                if !(MIN_HASH_DIM..=MAX_HASH_DIM).contains(dimension) {
                    return invalid(format!("openai.dimension must be in {MIN_HASH_DIM}..={MAX_HASH_DIM}, got {dimension}"));
                }
                if !(1..=600).contains(timeout_secs) {
                    return invalid(format!(
                        "openai.timeout_secs must be in 1..=600, got {timeout_secs}"
                    ));
                }
                if !(1..=2048).contains(max_batch) {
                    return invalid(format!(
                        "openai.max_batch must be in 1..=2048, got {max_batch}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The runtime of a local model's forward pass (`None` for the hash and HTTP embedders).
    pub fn runtime(&self) -> Option<EmbedRuntime> {
        match self {
            EmbedderConfig::Minilm { runtime, .. } | EmbedderConfig::Bilingual { runtime, .. } => {
                Some(*runtime)
            }
            EmbedderConfig::E5 { .. } => Some(EmbedRuntime::Onnx),
            EmbedderConfig::Hash { .. } | EmbedderConfig::Openai { .. } => None,
        }
    }

    /// Choose the runtime of a local model; an error for embedders that have none.
    pub fn set_runtime(&mut self, choice: EmbedRuntime) -> Result<(), BuildError> {
        match self {
            EmbedderConfig::Minilm { runtime, .. } | EmbedderConfig::Bilingual { runtime, .. } => {
                *runtime = choice;
                Ok(())
            }
            EmbedderConfig::E5 { .. } if choice == EmbedRuntime::Onnx => Ok(()),
            EmbedderConfig::E5 { .. } => Err(BuildError::Invalid(format!(
                "the e5 embedder runs on the onnx runtime only, not on {choice}"
            ))),
            EmbedderConfig::Hash { .. } | EmbedderConfig::Openai { .. } => {
                Err(BuildError::Invalid(format!(
                    "runtime {choice} applies to the local models (minilm, bilingual), not to \
                     the {} embedder",
                    self.embedder_id()
                )))
            }
        }
    }

    /// The [`Embedder::id`] the configured embedder will report, known without building it
    /// (e.g. to check stored vectors against the configuration before loading a model).
    pub fn embedder_id(&self) -> String {
        match self {
            EmbedderConfig::Minilm { .. } => MINILM_ID.to_string(),
            EmbedderConfig::Bilingual { chinese, .. } => {
                let half = match chinese {
                    ChineseModel::E5 => E5_ID,
                    ChineseModel::M3e => M3E_ID,
                };
                format!("bilingual:{MINILM_ID}+{half}")
            }
            EmbedderConfig::E5 { .. } => E5_ID.to_string(),
            EmbedderConfig::Hash { dim } => format!("hash-v1-{dim}"),
            EmbedderConfig::Openai { model, .. } => format!("http:{model}"),
        }
    }
}

/// Validate `cfg` and build the embedder it describes.
///
/// For the local models, `fetch_if_missing` allows downloading the model into the cache when it is found
/// nowhere (see [`MiniLmEmbedder::from_cache_or_fetch`]); otherwise a missing model is an
/// [`EmbedError::Unavailable`] explaining how to get it. `progress` draws download progress on
/// stderr.
pub fn build_embedder(
    cfg: &EmbedderConfig,
    fetch_if_missing: bool,
    progress: bool,
) -> Result<Box<dyn Embedder>, BuildError> {
    cfg.validate()?;
    Ok(match cfg {
        EmbedderConfig::Minilm { model_dir, runtime } => {
            let explicit = model_dir.as_deref();
            let embedder = if fetch_if_missing {
                MiniLmEmbedder::from_cache_or_fetch(explicit, progress, *runtime)?
            } else {
                MiniLmEmbedder::load_with(&resolve_model_dir(explicit)?, *runtime)?
            };
            Box::new(embedder)
        }
        EmbedderConfig::Bilingual {
            model_dir,
            chinese,
            e5_dir,
            m3e_dir,
            runtime,
        } => {
            let explicit = model_dir.as_deref();
            let english = if fetch_if_missing {
                MiniLmEmbedder::from_cache_or_fetch(explicit, progress, *runtime)?
            } else {
                MiniLmEmbedder::load_with(&resolve_model_dir(explicit)?, *runtime)?
            };
            let chinese: Box<dyn Embedder> = match chinese {
                ChineseModel::E5 => Box::new(load_e5(e5_dir, fetch_if_missing, progress)?),
                ChineseModel::M3e => {
                    let explicit_m3e = m3e_dir.as_deref();
                    Box::new(if fetch_if_missing {
                        M3eEmbedder::from_cache_or_fetch(explicit_m3e, progress, *runtime)?
                    } else {
                        M3eEmbedder::load_with(&M3E_SMALL_MODEL.resolve(explicit_m3e)?, *runtime)?
                    })
                }
            };
            Box::new(BilingualEmbedder::new(Box::new(english), chinese))
        }
        EmbedderConfig::E5 { model_dir } => {
            Box::new(load_e5(model_dir, fetch_if_missing, progress)?)
        }
        EmbedderConfig::Hash { dim } => Box::new(HashEmbedder::new(*dim)?),
        EmbedderConfig::Openai {
            base_url,
            model,
            api_key_env,
            dimension,
            timeout_secs,
            max_batch,
        } => {
            let mut opts = HttpEmbedderOptions::new(base_url.clone(), model.clone(), *dimension);
            opts.api_key_env = api_key_env.clone();
            opts.timeout = Duration::from_secs(*timeout_secs);
            opts.max_batch = *max_batch;
            Box::new(HttpEmbedder::new(opts)?)
        }
    })
}

/// e5 from `dir`, else its resolution order, fetching into the cache when allowed.
fn load_e5(
    dir: &Option<PathBuf>,
    fetch_if_missing: bool,
    progress: bool,
) -> Result<E5Embedder, BuildError> {
    let explicit = dir.as_deref();
    Ok(if fetch_if_missing {
        E5Embedder::from_cache_or_fetch(explicit, progress, EmbedRuntime::Onnx)?
    } else {
        E5Embedder::load_with(&E5_SMALL_MODEL.resolve(explicit)?, EmbedRuntime::Onnx)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<EmbedderConfig, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn defaults_and_round_trip() {
        assert_eq!(
            parse(r#"{"provider":"bilingual"}"#).unwrap(),
            EmbedderConfig::default()
        );
        assert_eq!(
            parse(r#"{"provider":"minilm"}"#).unwrap(),
            EmbedderConfig::Minilm {
                model_dir: None,
                runtime: Default::default()
            }
        );
        assert_eq!(
            parse(r#"{"provider":"hash"}"#).unwrap(),
            EmbedderConfig::Hash { dim: 384 }
        );
        let c = parse(r#"{"provider":"openai","base_url":"http://localhost:8080","model":"m","dimension":768}"#).unwrap();
        assert_eq!(
            c,
            EmbedderConfig::Openai {
                base_url: "http://localhost:8080".into(),
                model: "m".into(),
                api_key_env: "OPENAI_API_KEY".into(),
                dimension: 768,
                timeout_secs: 30,
                max_batch: 64,
            }
        );
        for cfg in [
            c,
            EmbedderConfig::default(),
            EmbedderConfig::Hash { dim: 64 },
        ] {
            let s = serde_json::to_string(&cfg).unwrap();
            assert_eq!(parse(&s).unwrap(), cfg, "{s}");
        }
        assert_eq!(
            serde_json::to_string(&EmbedderConfig::default()).unwrap(),
            r#"{"provider":"bilingual"}"#
        );
    }

    #[test]
    fn runtime_is_parsed_and_applies_to_local_models_only() {
        let cfg = parse(r#"{"provider":"minilm","runtime":"candle"}"#).unwrap();
        assert_eq!(cfg.runtime(), Some(EmbedRuntime::Candle));
        let s = serde_json::to_string(&cfg).unwrap();
        assert_eq!(parse(&s).unwrap(), cfg, "{s}");
        assert_eq!(
            parse(r#"{"provider":"bilingual","runtime":"onnx"}"#)
                .unwrap()
                .runtime(),
            Some(EmbedRuntime::Onnx)
        );
        assert!(parse(r#"{"provider":"minilm","runtime":"tensorflow"}"#).is_err());
        let mut hash = EmbedderConfig::Hash { dim: 64 };
        assert_eq!(hash.runtime(), None);
        assert!(matches!(
            hash.set_runtime(EmbedRuntime::Onnx),
            Err(BuildError::Invalid(_))
        ));
        let mut minilm = parse(r#"{"provider":"minilm"}"#).unwrap();
        minilm.set_runtime(EmbedRuntime::Candle).unwrap();
        assert_eq!(minilm.runtime(), Some(EmbedRuntime::Candle));
        let mut e5 = parse(r#"{"provider":"e5"}"#).unwrap();
        assert_eq!(e5.runtime(), Some(EmbedRuntime::Onnx));
        assert!(e5.set_runtime(EmbedRuntime::Onnx).is_ok());
        assert!(matches!(
            e5.set_runtime(EmbedRuntime::Candle),
            Err(BuildError::Invalid(_))
        ));
    }

    #[test]
    fn unknown_fields_and_providers_are_rejected() {
        assert!(parse(r#"{"provider":"minilm","modeldir":"/x"}"#).is_err());
        assert!(parse(r#"{"provider":"hash","dim":64,"dims":3}"#).is_err());
        assert!(parse(r#"{"provider":"cohere"}"#).is_err());
        assert!(parse(r#"{"provider":"openai","model":"m","dimension":3}"#).is_err());
    }

    #[test]
    fn validation() {
        let openai = |base_url: &str, env: &str, dimension: usize| EmbedderConfig::Openai {
            base_url: base_url.into(),
            model: "m".into(),
            api_key_env: env.into(),
            dimension,
            timeout_secs: 30,
            max_batch: 64,
        };
        assert!(EmbedderConfig::Hash { dim: 384 }.validate().is_ok());
        assert!(EmbedderConfig::Hash { dim: 8 }.validate().is_err());
        assert!(EmbedderConfig::Hash { dim: 9000 }.validate().is_err());
        assert!(EmbedderConfig::Minilm {
            model_dir: Some(PathBuf::new()),
            runtime: EmbedRuntime::Candle,
        }
        .validate()
        .is_err());
        assert!(openai("https://api.openai.com/v1", "OPENAI_API_KEY", 1536)
            .validate()
            .is_ok());
        assert!(openai("localhost:8080", "OPENAI_API_KEY", 768)
            .validate()
            .is_err());
        assert!(openai("http:///v1", "OPENAI_API_KEY", 768)
            .validate()
            .is_err());
        assert!(openai("http://h", "sk-abc123", 768).validate().is_err());
        assert!(openai("http://h", "MY_KEY", 4).validate().is_err());
    }

    #[test]
    fn ids_match_built_embedders() {
        let cfg = EmbedderConfig::Hash { dim: 128 };
        let e = build_embedder(&cfg, false, false).unwrap();
        assert_eq!(e.id(), cfg.embedder_id());
        assert_eq!(e.dimension(), 128);
        let cfg = EmbedderConfig::Openai {
            base_url: "http://127.0.0.1:9".into(),
            model: "nomic".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            dimension: 768,
            timeout_secs: 1,
            max_batch: 8,
        };
        let e = build_embedder(&cfg, false, false).unwrap();
        assert_eq!(e.id(), cfg.embedder_id());
        assert_eq!(e.max_batch(), 8);
        assert_eq!(
            EmbedderConfig::default().embedder_id(),
            "bilingual:minilm-l6-v2+e5-small-q4"
        );
        assert_eq!(
            parse(r#"{"provider":"minilm"}"#).unwrap().embedder_id(),
            "minilm-l6-v2"
        );
        assert_eq!(
            parse(r#"{"provider":"e5"}"#).unwrap().embedder_id(),
            "e5-small-q4"
        );
        assert_eq!(
            parse(r#"{"provider":"bilingual"}"#).unwrap().embedder_id(),
            "bilingual:minilm-l6-v2+e5-small-q4"
        );
        assert_eq!(
            parse(r#"{"provider":"bilingual","chinese":"m3e"}"#)
                .unwrap()
                .embedder_id(),
            "bilingual:minilm-l6-v2+m3e-small"
        );
    }

    #[test]
    fn invalid_config_is_a_user_error() {
        let err = build_embedder(&EmbedderConfig::Hash { dim: 1 }, false, false)
            .err()
            .unwrap();
        assert!(matches!(err, BuildError::Invalid(_)));
        assert!(mnemos_core::Error::from(err).is_user_error());
    }

    #[test]
    fn missing_explicit_model_dir_is_unavailable_not_fetched() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = EmbedderConfig::Minilm {
            model_dir: Some(tmp.path().to_path_buf()),
            runtime: EmbedRuntime::Candle,
        };
        let err = build_embedder(&cfg, true, false).err().unwrap();
        let msg = err.to_string();
        assert!(
            matches!(err, BuildError::Embed(EmbedError::Unavailable(_))),
            "{msg}"
        );
        assert!(
            msg.contains("model.safetensors") && msg.contains(&tmp.path().display().to_string()),
            "{msg}"
        );
    }
}
