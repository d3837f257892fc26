//! Configuration of the LLM memory model: which endpoint, which model, how patient to be.

use serde::{Deserialize, Serialize};

use mnemos_core::ModelError;

/// Whether requests ask the server for a JSON object (`response_format: {"type": "json_object"}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonMode {
    /// Ask for JSON mode; if the server rejects `response_format` (HTTP 400 naming it), retry
    /// once without it and stop asking for the rest of the model's life.
    #[default]
    Auto,
    /// Always ask; a server that rejects it is an error.
    On,
    /// Never ask; the prompts alone request JSON.
    Off,
}

/// Where and how the LLM memory model calls an OpenAI-compatible chat-completions endpoint.
///
/// TOML example (see `docs/llm.md` for every provider):
/// ```toml
/// base_url = "http://localhost:11434/v1"
/// model = "qwen2.5:7b-instruct"
/// json_mode = "auto"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL up to and including `/v1` (`https://api.openai.com/v1`). A URL with no path
    /// gets `/v1` appended; a URL ending in `/chat/completions` is used as is.
    pub base_url: String,
    /// Model name as the server knows it.
    pub model: String,
    /// Name of the environment variable holding the API key (sent as `Authorization: Bearer`).
    /// `None`: no key is sent (local servers). The key itself never appears in config, logs,
    /// `Debug` output or errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub json_mode: JsonMode,
    /// Timeout of one HTTP request, in milliseconds. One `run` (all its retries, backoff
    /// waits, the repair request and waiting for a concurrency slot) never takes longer than
    /// `timeout_ms × (1 + max_retries)`.
    #[serde(default = "defaults::timeout_ms")]
    pub timeout_ms: u64,
    /// Retries of one request after a 429, a 5xx, a timeout, a connection failure or a
    /// malformed response. Other 4xx answers are not retried.
    #[serde(default = "defaults::max_retries")]
    pub max_retries: u32,
    /// First backoff wait, in milliseconds; doubles per retry (with jitter, at most 30 s).
    /// A `Retry-After` (or `retry-after-ms`) header replaces it.
    #[serde(default = "defaults::backoff_ms")]
    pub backoff_ms: u64,
    /// Most requests this model instance has open at once.
    #[serde(default = "defaults::max_concurrency")]
    pub max_concurrency: usize,
    /// Sampling temperature, 0.0–2.0. 0 makes answers as repeatable as the server allows.
    #[serde(default)]
    pub temperature: f32,
    /// Most tokens one answer may have (`max_tokens`).
    #[serde(default = "defaults::max_tokens")]
    pub max_tokens: u32,
}

mod defaults {
    pub fn timeout_ms() -> u64 {
        60_000
    }
    pub fn max_retries() -> u32 {
        2
    }
    pub fn backoff_ms() -> u64 {
        500
    }
    pub fn max_concurrency() -> usize {
        4
    }
    pub fn max_tokens() -> u32 {
        1024
    }
}

/// Highest accepted `timeout_ms` (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Highest accepted `max_retries`.
pub const MAX_RETRIES: u32 = 10;
/// Highest accepted `backoff_ms`.
pub const MAX_BACKOFF_MS: u64 = 60_000;
/// Highest accepted `max_concurrency`.
pub const MAX_CONCURRENCY: usize = 256;

impl LlmConfig {
    /// A configuration with every optional field at its default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        LlmConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            json_mode: JsonMode::Auto,
            timeout_ms: defaults::timeout_ms(),
            max_retries: defaults::max_retries(),
            backoff_ms: defaults::backoff_ms(),
            max_concurrency: defaults::max_concurrency(),
            temperature: 0.0,
            max_tokens: defaults::max_tokens(),
        }
    }

    /// OpenAI (`https://api.openai.com/v1`), key in `OPENAI_API_KEY`, JSON mode on.
    pub fn openai(model: impl Into<String>) -> Self {
        let mut c = Self::new("https://api.openai.com/v1", model);
        c.api_key_env = Some("OPENAI_API_KEY".into());
        c.json_mode = JsonMode::On;
        c
    }

    /// Ollama's OpenAI-compatible endpoint (`http://localhost:11434/v1`), no key.
    pub fn ollama(model: impl Into<String>) -> Self {
        Self::new("http://localhost:11434/v1", model)
    }

    /// vLLM's OpenAI-compatible server (`http://localhost:8000/v1`), no key.
    pub fn vllm(model: impl Into<String>) -> Self {
        Self::new("http://localhost:8000/v1", model)
    }

    /// llama.cpp's `llama-server` (`http://localhost:8080/v1`), no key. It serves whatever model
    /// it loaded; the name is informational.
    pub fn llama_cpp(model: impl Into<String>) -> Self {
        Self::new("http://localhost:8080/v1", model)
    }

    /// LM Studio's local server (`http://localhost:1234/v1`), no key. JSON mode stays `auto`:
    /// servers that only take `json_schema` formats reject `json_object`, and auto falls back.
    pub fn lm_studio(model: impl Into<String>) -> Self {
        Self::new("http://localhost:1234/v1", model)
    }

    /// A preset by provider name: `openai`, `ollama`, `vllm`, `llama_cpp` (or `llama.cpp`,
    /// `llamacpp`), `lm_studio` (or `lmstudio`).
    pub fn preset(provider: &str, model: impl Into<String>) -> Result<Self, ModelError> {
        match provider.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::openai(model)),
            "ollama" => Ok(Self::ollama(model)),
            "vllm" => Ok(Self::vllm(model)),
            "llama_cpp" | "llama.cpp" | "llamacpp" | "llama-cpp" => Ok(Self::llama_cpp(model)),
            "lm_studio" | "lmstudio" | "lm-studio" => Ok(Self::lm_studio(model)),
            other => Err(ModelError::invalid(format!(
                "unknown LLM provider preset '{other}' (expected openai, ollama, vllm, llama_cpp or lm_studio)"
            ))),
        }
    }

    /// Parse a TOML table (unknown fields are errors), then validate it.
    pub fn from_toml(text: &str) -> Result<Self, ModelError> {
        let config: LlmConfig = toml::from_str(text)
            .map_err(|e| ModelError::invalid(format!("LLM config: {}", e.message())))?;
        config.validate()?;
        Ok(config)
    }

    /// Check every field; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::invalid(format!("LLM config: {m}")));
        let url = self.base_url.trim();
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        match rest {
            None => {
                return bad(format!(
                    "base_url '{url}' must start with http:// or https://"
                ))
            }
            Some(rest) if rest.split('/').next().is_none_or(|host| host.is_empty()) => {
                return bad(format!("base_url '{url}' has no host"))
            }
            Some(rest) if rest.contains(char::is_whitespace) => {
                return bad("base_url contains whitespace".into())
            }
            Some(_) => {}
        }
        if self.model.trim().is_empty() {
            return bad("model is empty".into());
        }
        if let Some(var) = &self.api_key_env {
            if var.is_empty() || var.contains(['=', '\0']) || var.contains(char::is_whitespace) {
                return bad(format!(
                    "api_key_env '{var}' is not a valid environment variable name"
                ));
            }
        }
        if self.timeout_ms == 0 || self.timeout_ms > MAX_TIMEOUT_MS {
            return bad(format!(
                "timeout_ms must be in 1..={MAX_TIMEOUT_MS}, got {}",
                self.timeout_ms
            ));
        }
        if self.max_retries > MAX_RETRIES {
            return bad(format!(
                "max_retries must be at most {MAX_RETRIES}, got {}",
                self.max_retries
            ));
        }
        if self.backoff_ms > MAX_BACKOFF_MS {
            return bad(format!(
                "backoff_ms must be at most {MAX_BACKOFF_MS}, got {}",
                self.backoff_ms
            ));
        }
        if self.max_concurrency == 0 || self.max_concurrency > MAX_CONCURRENCY {
            return bad(format!(
                "max_concurrency must be in 1..={MAX_CONCURRENCY}, got {}",
                self.max_concurrency
            ));
        }
        if !self.temperature.is_finite() || !(0.0..=2.0).contains(&self.temperature) {
            return bad(format!(
                "temperature must be in 0.0..=2.0, got {}",
                self.temperature
            ));
        }
        if self.max_tokens == 0 {
            return bad("max_tokens must be at least 1".into());
        }
        Ok(())
    }

    /// The chat-completions URL this configuration posts to.
    pub fn endpoint(&self) -> String {
        let url = self.base_url.trim().trim_end_matches('/');
        if url.ends_with("/chat/completions") {
            return url.to_string();
        }
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        if after_scheme.contains('/') {
            format!("{url}/chat/completions")
        } else {
            format!("{url}/v1/chat/completions")
        }
    }

    /// The whole time one `run` may take: `timeout_ms × (1 + max_retries)`.
    pub fn call_budget_ms(&self) -> u64 {
        self.timeout_ms
            .saturating_mul(1 + u64::from(self.max_retries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate_and_point_at_their_servers() {
        for (name, url) in [
            ("openai", "https://api.openai.com/v1/chat/completions"),
            ("ollama", "http://localhost:11434/v1/chat/completions"),
            ("vllm", "http://localhost:8000/v1/chat/completions"),
            ("llama.cpp", "http://localhost:8080/v1/chat/completions"),
            (
                "LM Studio".replace(' ', "_").as_str(),
                "http://localhost:1234/v1/chat/completions",
            ),
        ] {
            let c = LlmConfig::preset(name, "m").unwrap();
            c.validate().unwrap();
            assert_eq!(c.endpoint(), url);
        }
        assert!(LlmConfig::preset("gpt4all", "m").is_err());
        assert_eq!(
            LlmConfig::openai("gpt-4o-mini").api_key_env.as_deref(),
            Some("OPENAI_API_KEY")
        );
    }

    #[test]
    fn endpoint_tolerates_missing_v1_and_full_paths() {
        let mut c = LlmConfig::new("http://127.0.0.1:9", "m");
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
        c.base_url = "http://127.0.0.1:9/v1/".into();
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
        c.base_url = "http://h/openai/v1/chat/completions".into();
        assert_eq!(c.endpoint(), "http://h/openai/v1/chat/completions");
    }

    #[test]
    fn toml_round_trips_with_defaults_and_rejects_unknown_fields() {
        let c = LlmConfig::from_toml(
            "base_url = \"http://localhost:11434/v1\"\nmodel = \"qwen2.5:7b\"\njson_mode = \"off\"\n",
        )
        .unwrap();
        assert_eq!(c.json_mode, JsonMode::Off);
        assert_eq!(c.timeout_ms, 60_000);
        assert_eq!(c.max_concurrency, 4);
        let text = toml::to_string(&c).unwrap();
        assert_eq!(LlmConfig::from_toml(&text).unwrap(), c);
        let err =
            LlmConfig::from_toml("base_url = \"http://x/v1\"\nmodel = \"m\"\napi_key = \"sk\"\n")
                .unwrap_err();
        assert!(err.to_string().contains("api_key"), "{err}");
        assert!(LlmConfig::from_toml("model = \"m\"\n").is_err());
    }

    #[test]
    fn validate_names_the_bad_field() {
        let ok = LlmConfig::ollama("m");
        type Breaker = fn(&mut LlmConfig);
        let cases: Vec<(Breaker, &str)> = vec![
            (|c| c.base_url = "localhost:11434".into(), "base_url"),
            (|c| c.base_url = "http:///v1".into(), "host"),
            (|c| c.model = " ".into(), "model"),
            (|c| c.api_key_env = Some("A=B".into()), "api_key_env"),
            (|c| c.timeout_ms = 0, "timeout_ms"),
            (|c| c.max_retries = 11, "max_retries"),
            (|c| c.backoff_ms = 60_001, "backoff_ms"),
            (|c| c.max_concurrency = 0, "max_concurrency"),
            (|c| c.temperature = f32::NAN, "temperature"),
            (|c| c.temperature = 2.5, "temperature"),
            (|c| c.max_tokens = 0, "max_tokens"),
        ];
        for (break_it, field) in cases {
            let mut c = ok.clone();
            break_it(&mut c);
            let err = c.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn call_budget_covers_every_retry() {
        let mut c = LlmConfig::ollama("m");
        c.timeout_ms = 300;
        c.max_retries = 2;
        assert_eq!(c.call_budget_ms(), 900);
    }
}
