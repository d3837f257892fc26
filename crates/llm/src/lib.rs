//! The LLM memory model: every memory task through an OpenAI-compatible chat-completions endpoint
//! (OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio…).
//!
//! [`LlmModel::run`] validates the task, renders our prompts ([`prompts::render`]: a system and
//! a user message asking for a small JSON object, in the input's language), posts them with
//! retries, backoff and a deadline ([`LlmConfig`]), and reads the answer tolerantly
//! ([`parse::parse_output`]). An unusable answer gets one repair request (the answer is sent
//! back with a request for valid JSON only); a second unusable answer is
//! [`ModelError::BadOutput`].
//!
//! Time: one HTTP request times out after `timeout_ms`; one `run` — every retry, backoff wait,
//! the repair request and any wait for a concurrency slot — ends within
//! `timeout_ms × (1 + max_retries)` ([`LlmConfig::call_budget_ms`]).
//!
//! Accounting ([`MemoryModel::usage`]), per task: `calls` (runs), `failures` (runs that ended in
//! an error), `retries` (HTTP requests beyond the first of a run: retries, the JSON-mode
//! fallback and the repair request), `prompt_tokens`/`completion_tokens` summed from the
//! responses' `usage` fields (a response without one counts 0), and wall-clock `micros`.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use mnemos_core::memory_model::{TaskUsage, UsageReport};
use mnemos_core::{MemoryModel, ModelError, ModelResult, Task, TaskOutput};

mod client;
pub mod config;
pub mod parse;
pub mod prompts;

pub mod judge;

pub use config::{JsonMode, LlmConfig};
pub use parse::{surprise_to_perplexity, SURPRISE_PERPLEXITY_CAP};
pub use prompts::ChatMessage;

use client::{CallStats, ChatClient, Secret};

/// Every memory task through an OpenAI-compatible chat endpoint. See the crate documentation.
///
/// Cheap to share: `run` takes `&self`, and concurrent runs share one connection pool and the
/// `max_concurrency` limit.
pub struct LlmModel {
    id: String,
    client: ChatClient,
    usage: Mutex<UsageReport>,
}

impl std::fmt::Debug for LlmModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client holds the key in a `Secret`, whose Debug prints only "[redacted]".
        f.debug_struct("LlmModel")
            .field("id", &self.id)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl LlmModel {
    /// A model for `config`. Validates the configuration and reads the API key from the
    /// environment variable `api_key_env` names (an error when that variable is unset or empty).
    /// No request is made.
    pub fn new(config: LlmConfig) -> ModelResult<Self> {
        config.validate()?;
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(Secret::new(key.trim().to_string())),
                _ => {
                    return Err(ModelError::invalid(format!(
                        "LLM config: api_key_env names ${var}, which is not set"
                    )))
                }
            },
        };
        Ok(LlmModel {
            id: format!("llm:{}", config.model),
            client: ChatClient::new(config, api_key)?,
            usage: Mutex::new(UsageReport::default()),
        })
    }

    pub fn config(&self) -> &LlmConfig {
        self.client.config()
    }

    /// Whether requests currently ask for JSON mode (false after an `auto` fallback).
    pub fn json_mode_active(&self) -> bool {
        self.client.json_mode_active()
    }

    /// The exact request body `run` would send first for `task` (for inspection and tests).
    pub fn request_body(&self, task: &Task) -> serde_json::Value {
        self.client
            .body(&prompts::render(task), self.client.json_mode_active())
    }

    /// One free-form completion of `messages` (no JSON parsing), with the configured retries
    /// and deadline, counted in `usage()` under `name`. For callers outside the memory tasks,
    /// such as an evaluation judge.
    pub fn chat(&self, name: &str, messages: &[ChatMessage]) -> ModelResult<String> {
        let started = Instant::now();
        let mut stats = CallStats::default();
        let deadline = started + Duration::from_millis(self.client.config().call_budget_ms());
        let result = self
            .client
            .complete(messages, started, deadline, &mut stats);
        self.usage
            .lock()
            .tasks
            .entry(name.to_string())
            .or_default()
            .add(&TaskUsage {
                calls: 1,
                failures: u64::from(result.is_err()),
                retries: stats.requests.saturating_sub(1),
                prompt_tokens: stats.prompt_tokens,
                completion_tokens: stats.completion_tokens,
                micros: started.elapsed().as_micros() as u64,
            });
        result.map(|reply| reply.content)
    }

    fn call(
        &self,
        task: &Task,
        started: Instant,
        stats: &mut CallStats,
    ) -> ModelResult<TaskOutput> {
        task.validate()?;
        let budget = Duration::from_millis(self.client.config().call_budget_ms());
        let deadline = started + budget;
        let messages = prompts::render(task);
        let reply = self.client.complete(&messages, started, deadline, stats)?;
        let problem = match parse::parse_output(task, &reply.content) {
            Ok(output) => return Ok(output),
            Err(problem) => problem,
        };
        let problem = if reply.finish_reason.as_deref() == Some("length") {
            format!("{problem} (the answer was cut off at the token limit)")
        } else {
            problem
        };
        let repair = prompts::repair(task, &messages, &reply.content, &problem);
        let second = self.client.complete(&repair, started, deadline, stats)?;
        parse::parse_output(task, &second.content).map_err(|detail| {
            ModelError::bad_output(
                task.name(),
                format!("{detail} (after one repair request; first problem: {problem})"),
            )
        })
    }
}

impl MemoryModel for LlmModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn is_language_model(&self) -> bool {
        true
    }

    fn run(&self, task: &Task) -> ModelResult<TaskOutput> {
        let started = Instant::now();
        let mut stats = CallStats::default();
        let result = self.call(task, started, &mut stats);
        let mut usage = self.usage.lock();
        usage
            .tasks
            .entry(task.name().to_string())
            .or_default()
            .add(&TaskUsage {
                calls: 1,
                failures: u64::from(result.is_err()),
                retries: stats.requests.saturating_sub(1),
                prompt_tokens: stats.prompt_tokens,
                completion_tokens: stats.completion_tokens,
                micros: started.elapsed().as_micros() as u64,
            });
        result
    }

    fn usage(&self) -> UsageReport {
        self.usage.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_validates_and_needs_the_named_key() {
        assert!(matches!(
            LlmModel::new(LlmConfig::new("ftp://x", "m")),
            Err(ModelError::InvalidInput(_))
        ));
        let mut c = LlmConfig::ollama("qwen2.5");
        c.api_key_env = Some("MNEMOS_LLM_UNIT_TEST_KEY_THAT_IS_NEVER_SET".into());
        let err = LlmModel::new(c).unwrap_err().to_string();
        assert!(
            err.contains("MNEMOS_LLM_UNIT_TEST_KEY_THAT_IS_NEVER_SET"),
            "{err}"
        );
        let model = LlmModel::new(LlmConfig::ollama("qwen2.5")).unwrap();
        assert_eq!(model.id(), "llm:qwen2.5");
        assert!(model.json_mode_active());
    }

    #[test]
    fn invalid_tasks_fail_without_a_request_and_are_counted() {
        // Nothing listens on port 9 of the loopback; an invalid task must not even try.
        let model = LlmModel::new(LlmConfig::new("http://127.0.0.1:9/v1", "m")).unwrap();
        let err = model.run(&Task::Compress { text: " ".into() }).unwrap_err();
        assert!(matches!(err, ModelError::InvalidInput(_)));
        let u = model.usage().tasks["compress"];
        assert_eq!((u.calls, u.failures, u.retries), (1, 1, 0));
    }

    #[test]
    fn request_body_carries_model_options_and_json_mode() {
        let mut c = LlmConfig::vllm("Qwen/Qwen2.5-7B-Instruct");
        c.temperature = 0.2;
        c.max_tokens = 256;
        let model = LlmModel::new(c.clone()).unwrap();
        let body = model.request_body(&Task::Arousal {
            text: "太棒了！".into(),
        });
        assert_eq!(body["model"], "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(body["max_tokens"], 256);
        assert!((body["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
        assert_eq!(body["response_format"]["type"], "json_object");
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        c.json_mode = JsonMode::Off;
        let off = LlmModel::new(c).unwrap();
        assert!(off
            .request_body(&Task::Arousal { text: "x".into() })
            .get("response_format")
            .is_none());
    }
}
