//! The HTTP side: one chat-completions request with retries, backoff, `Retry-After`, a deadline
//! and a concurrency limit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};
use reqwest::blocking::{Client, Response};
use reqwest::StatusCode;
use serde_json::{json, Value};

use mnemos_core::ModelError;

use crate::config::{JsonMode, LlmConfig};
use crate::prompts::ChatMessage;

/// Longest single backoff wait.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Most characters of an error body quoted in an error message.
const MAX_ERROR_SNIPPET: usize = 300;

/// An API key. Its `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(value: String) -> Self {
        Secret(value)
    }

    /// `text` with every occurrence of the key replaced, for anything that leaves the client.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A counting semaphore: at most `permits` holders at once.
#[derive(Debug)]
pub(crate) struct Semaphore {
    available: Mutex<usize>,
    freed: Condvar,
}

pub(crate) struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    pub(crate) fn new(permits: usize) -> Self {
        Semaphore {
            available: Mutex::new(permits),
            freed: Condvar::new(),
        }
    }

    /// A permit, waiting until `deadline` at most.
    pub(crate) fn acquire_until(&self, deadline: Instant) -> Option<Permit<'_>> {
        let mut available = self.available.lock();
        while *available == 0 {
            if self.freed.wait_until(&mut available, deadline).timed_out() && *available == 0 {
                return None;
            }
        }
        *available -= 1;
        Some(Permit(self))
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.available.lock() += 1;
        self.0.freed.notify_one();
    }
}

/// What one successful request returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reply {
    pub content: String,
    pub finish_reason: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Counts of one `run`, folded into the model's usage.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallStats {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Why one request failed.
enum Failure {
    /// Worth another try (429, 5xx, timeout, connection trouble, a malformed response).
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
    },
    /// The server refused `response_format`.
    JsonModeRejected(ModelError),
    /// Not worth retrying (other 4xx).
    Fatal(ModelError),
}

/// The chat-completions client of one `LlmModel`.
#[derive(Debug)]
pub(crate) struct ChatClient {
    http: Client,
    endpoint: String,
    config: LlmConfig,
    api_key: Option<Secret>,
    /// Set once a server rejected `response_format` under [`JsonMode::Auto`].
    json_mode_refused: AtomicBool,
    slots: Semaphore,
    jitter_state: AtomicU64,
}

impl ChatClient {
    pub(crate) fn new(config: LlmConfig, api_key: Option<Secret>) -> Result<Self, ModelError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let http = Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .pool_max_idle_per_host(config.max_concurrency)
            .user_agent(concat!("mnemos/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Unavailable(format!("cannot build the HTTP client: {e}")))?;
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9e37_79b9_7f4a_7c15, |d| d.as_nanos() as u64);
        Ok(ChatClient {
            http,
            endpoint: config.endpoint(),
            slots: Semaphore::new(config.max_concurrency),
            config,
            api_key,
            json_mode_refused: AtomicBool::new(false),
            jitter_state: AtomicU64::new(seed | 1),
        })
    }

    pub(crate) fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// Whether requests currently carry `response_format`.
    pub(crate) fn json_mode_active(&self) -> bool {
        match self.config.json_mode {
            JsonMode::On => true,
            JsonMode::Off => false,
            JsonMode::Auto => !self.json_mode_refused.load(Ordering::Relaxed),
        }
    }

    /// The request body for `messages`.
    pub(crate) fn body(&self, messages: &[ChatMessage], json_mode: bool) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "stream": false,
        });
        if json_mode {
            if let Some(obj) = body.as_object_mut() {
                obj.insert("response_format".into(), json!({"type": "json_object"}));
            }
        }
        body
    }

    /// One completion of `messages`, retrying as configured, finished before `deadline`.
    pub(crate) fn complete(
        &self,
        messages: &[ChatMessage],
        started: Instant,
        deadline: Instant,
        stats: &mut CallStats,
    ) -> Result<Reply, ModelError> {
        let mut retries = 0u32;
        let mut json_fallback_used = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out(started));
            }
            let json_mode = self.json_mode_active();
            let body = self.body(messages, json_mode);
            let outcome = match self.slots.acquire_until(deadline) {
                Some(_permit) => {
                    stats.requests += 1;
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    self.post(&body, remaining, json_mode, started, stats)
                }
                None => return Err(self.timed_out(started)),
            };
            match outcome {
                Ok(reply) => return Ok(reply),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::JsonModeRejected(e)) => {
                    if self.config.json_mode != JsonMode::Auto || json_fallback_used {
                        return Err(e);
                    }
                    // Once, without the format, and never again for this instance.
                    json_fallback_used = true;
                    self.json_mode_refused.store(true, Ordering::Relaxed);
                }
                Err(Failure::Retry { error, retry_after }) => {
                    if retries >= self.config.max_retries {
                        return Err(error);
                    }
                    let wait = retry_after.unwrap_or_else(|| self.backoff(retries));
                    if Instant::now() + wait >= deadline {
                        // Waiting would outlive the call's budget: the last error stands.
                        return Err(error);
                    }
                    std::thread::sleep(wait);
                    retries += 1;
                }
            }
        }
    }

    fn timed_out(&self, started: Instant) -> ModelError {
        ModelError::Timeout(started.elapsed().as_millis() as u64)
    }

    /// `backoff_ms · 2^retry`, at most 30 s, with "equal jitter": half fixed, half random.
    fn backoff(&self, retry: u32) -> Duration {
        let base = self
            .config
            .backoff_ms
            .saturating_mul(1u64 << retry.min(20))
            .min(MAX_BACKOFF.as_millis() as u64);
        let half = base / 2;
        let random = self.next_random() % (half + 1);
        Duration::from_millis(base - half + random)
    }

    /// xorshift64*: jitter only needs to differ between callers, not to be unpredictable.
    fn next_random(&self) -> u64 {
        let mut x = self.jitter_state.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.jitter_state.store(x, Ordering::Relaxed);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn redact(&self, text: String) -> String {
        match &self.api_key {
            Some(key) => key.redact(&text),
            None => text,
        }
    }

    fn post(
        &self,
        body: &Value,
        remaining: Duration,
        json_mode: bool,
        started: Instant,
        stats: &mut CallStats,
    ) -> Result<Reply, Failure> {
        let timeout = remaining.min(Duration::from_millis(self.config.timeout_ms));
        if timeout.is_zero() {
            return Err(Failure::Fatal(self.timed_out(started)));
        }
        let mut request = self.http.post(&self.endpoint).timeout(timeout).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(&key.0);
        }
        let response = request
            .send()
            .map_err(|e| self.transport_failure(&e, started))?;
        let status = response.status();
        if status.is_success() {
            return self.read_reply(response, started, stats);
        }
        let retry_after = retry_after(&response);
        let text = response.text().unwrap_or_default();
        let snippet: String = error_message(&text)
            .chars()
            .take(MAX_ERROR_SNIPPET)
            .collect();
        let error = ModelError::Unavailable(self.redact(format!(
            "{} answered HTTP {}: {snippet}",
            self.endpoint,
            status.as_u16()
        )));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Failure::Retry { error, retry_after });
        }
        if status == StatusCode::BAD_REQUEST && json_mode && text.contains("response_format") {
            return Err(Failure::JsonModeRejected(ModelError::Unavailable(self.redact(
                format!(
                    "{} rejects response_format (JSON mode); set json_mode = \"auto\" or \"off\": {snippet}",
                    self.endpoint
                ),
            ))));
        }
        let hint = match (status.as_u16(), &self.config.api_key_env) {
            (401 | 403, Some(var)) => format!(" (check the API key in ${var})"),
            (401 | 403, None) => " (no API key sent: set api_key_env)".to_string(),
            (404, _) => format!(
                " (check base_url and that model '{}' exists on the server)",
                self.config.model
            ),
            _ => String::new(),
        };
        Err(Failure::Fatal(ModelError::Unavailable(self.redact(
            format!(
                "{} answered HTTP {}: {snippet}{hint}",
                self.endpoint,
                status.as_u16()
            ),
        ))))
    }

    fn transport_failure(&self, e: &reqwest::Error, started: Instant) -> Failure {
        let error = if e.is_timeout() {
            self.timed_out(started)
        } else if e.is_connect() {
            ModelError::Unavailable(self.redact(format!(
                "cannot connect to {}: {}",
                self.endpoint,
                error_chain(e)
            )))
        } else {
            ModelError::Unavailable(self.redact(format!(
                "request to {} failed: {}",
                self.endpoint,
                error_chain(e)
            )))
        };
        Failure::Retry {
            error,
            retry_after: None,
        }
    }

    fn read_reply(
        &self,
        response: Response,
        started: Instant,
        stats: &mut CallStats,
    ) -> Result<Reply, Failure> {
        let text = response
            .text()
            .map_err(|e| self.transport_failure(&e, started))?;
        let malformed = |what: &str| Failure::Retry {
            error: ModelError::Unavailable(format!(
                "{} sent a malformed chat completion: {what}",
                self.endpoint
            )),
            retry_after: None,
        };
        let value: Value = serde_json::from_str(&text).map_err(|_| malformed("not JSON"))?;
        // Tokens count whatever else is wrong with the answer: they were spent.
        let usage = value.get("usage");
        let tokens = |name: &str| {
            usage
                .and_then(|u| u.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let (prompt_tokens, completion_tokens) =
            (tokens("prompt_tokens"), tokens("completion_tokens"));
        stats.prompt_tokens += prompt_tokens;
        stats.completion_tokens += completion_tokens;
        let choice = value
            .get("choices")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("no choices array"))?
            .first()
            .ok_or_else(|| malformed("an empty choices array"))?;
        let message = choice
            .get("message")
            .ok_or_else(|| malformed("a choice without a message"))?;
        let content = match message.get("content") {
            Some(Value::String(s)) => s.clone(),
            // No text (e.g. only a refusal or tool call): an empty answer, for the repair path.
            Some(Value::Null) => String::new(),
            _ => return Err(malformed("a message without string content")),
        };
        Ok(Reply {
            content,
            finish_reason: choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            prompt_tokens,
            completion_tokens,
        })
    }
}

/// `Retry-After` in seconds (integer or decimal), or `retry-after-ms`; HTTP dates are ignored.
fn retry_after(response: &Response) -> Option<Duration> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    header("retry-after-ms")
        .map(|ms| Duration::from_secs_f64((ms / 1000.0).min(3600.0)))
        .or_else(|| header("retry-after").map(|s| Duration::from_secs_f64(s.min(3600.0))))
}

/// The `error.message` of an OpenAI-style error body, or the body itself.
fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error").and_then(|e| {
                e.get("message")
                    .and_then(Value::as_str)
                    .or_else(|| e.as_str())
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| body.trim().to_string())
}

/// An error with its causes ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn semaphore_bounds_holders_and_times_out() {
        let sem = Arc::new(Semaphore::new(2));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (sem, inside, most) = (sem.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(5);
                    let _p = sem.acquire_until(deadline).unwrap();
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let _a = sem.acquire_until(Instant::now()).unwrap();
        let _b = sem.acquire_until(Instant::now()).unwrap();
        let started = Instant::now();
        assert!(sem
            .acquire_until(Instant::now() + Duration::from_millis(50))
            .is_none());
        assert!(started.elapsed() >= Duration::from_millis(45));
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let mut config = LlmConfig::ollama("m");
        config.backoff_ms = 100;
        let client = ChatClient::new(config, None).unwrap();
        for retry in 0..4u32 {
            let base = 100u64 << retry;
            for _ in 0..50 {
                let ms = client.backoff(retry).as_millis() as u64;
                assert!(ms >= base / 2 && ms <= base, "retry {retry}: {ms}");
            }
        }
        assert!(client.backoff(40) <= MAX_BACKOFF);
    }

    #[test]
    fn secrets_stay_out_of_debug_and_text() {
        let key = Secret::new("sk-test-0123456789".into());
        assert!(!format!("{key:?}").contains("0123456789"));
        assert_eq!(
            key.redact("bad key sk-test-0123456789 given"),
            "bad key [redacted] given"
        );
        assert_eq!(error_message(r#"{"error": {"message": "nope"}}"#), "nope");
        assert_eq!(error_message("plain"), "plain");
    }
}
