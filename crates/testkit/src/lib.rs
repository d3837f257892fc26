//! Test support: a scripted OpenAI-compatible loopback server with injected faults,
//! [`FaultyStore`], a store wrapper that fails the n-th read or write (see its contract),
//! [`postgres`], throwaway PostgreSQL servers (Debian's package, or the pinned `pgserver` wheel
//! with pgvector), and [`data`], the benchmark datasets beside the repository (a test skips,
//! saying so, or fails without them).
//!
//! [`ScriptedLlm`] listens on `127.0.0.1:<free port>` and answers `POST /v1/chat/completions`
//! (also `/chat/completions`, so a base URL with or without `/v1` works) from a script of
//! [`Step`]s: canned replies and faults (slow answers, 429 with and without `Retry-After`, 5xx,
//! connection resets, malformed, truncated or wrongly shaped bodies, empty `choices`). Every
//! request is recorded for assertions, and the server tracks how many requests it was serving
//! at once. It stops when dropped.
//!
//! Which step answers a request:
//! 1. the next step queued for the request's task ([`ScriptedLlm::push_for`]),
//! 2. else the next step of the shared queue ([`ScriptedLlm::push`]),
//! 3. else the task's default ([`ScriptedLlm::set_default`]), repeated for every request,
//! 4. else the fallback ([`ScriptedLlm::set_fallback`]),
//! 5. else HTTP 500 "no scripted step".
//!
//! The task of a request is read from the marker `mnemos_task=<name>` in any of its message
//! contents (the LLM memory model writes it into its system prompt).
//!
//! HTTP: a deliberately small HTTP/1.1 subset — request line, headers, a `Content-Length` body
//! (no chunked requests); every response carries `Connection: close` and the socket is closed
//! after it, so clients never reuse a connection the script may have broken.

pub mod data;
pub mod embedders;
mod faulty_store;
pub mod postgres;

pub use faulty_store::{Call, CallCounts, CallFilter, CallKind, Fault, FaultMode, FaultyStore};

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Value};

/// The marker a request carries to name its task: `mnemos_task=<name>`.
pub const TASK_MARKER: &str = "mnemos_task=";

/// Largest request head (request line + headers) the server reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body the server reads.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How long a connection may stay silent before the server gives up on it.
const IDLE_LIMIT: Duration = Duration::from_secs(10);
/// Granularity of blocking waits, so shutdown is noticed promptly.
const POLL: Duration = Duration::from_millis(20);

/// Token counts a reply reports in its `usage` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One scripted answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// HTTP 200 with a chat completion whose message content is `content`.
    Reply {
        content: String,
        /// `finish_reason` of the choice ("stop", or "length" for a cut answer).
        finish_reason: String,
        /// Reported in `usage`; `None` leaves the field out.
        usage: Option<Usage>,
    },
    /// Wait `ms` milliseconds, then answer with `then`.
    Slow { ms: u64, then: Box<Step> },
    /// HTTP 429, with a `Retry-After: <secs>` header when given.
    RateLimited { retry_after_secs: Option<u64> },
    /// Any status with a JSON error body carrying `message` (500, 503, 400, 401…).
    Status { code: u16, message: String },
    /// Close the socket without answering.
    Reset,
    /// HTTP 200 whose body is not JSON.
    MalformedJson,
    /// HTTP 200 announcing a full body but sending only its first half, then closing.
    TruncatedBody,
    /// HTTP 200 with this exact JSON body (valid JSON, typically the wrong shape).
    Body(Value),
}

impl Step {
    /// A normal reply with `content`, no `usage` field.
    pub fn reply(content: impl Into<String>) -> Self {
        Step::Reply {
            content: content.into(),
            finish_reason: "stop".into(),
            usage: None,
        }
    }

    /// A reply whose content is the JSON serialization of `value`.
    pub fn reply_json(value: &Value) -> Self {
        Step::reply(value.to_string())
    }

    /// Report these token counts (only changes [`Step::Reply`] steps).
    pub fn with_usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        match self {
            Step::Reply {
                content,
                finish_reason,
                ..
            } => Step::Reply {
                content,
                finish_reason,
                usage: Some(Usage {
                    prompt_tokens,
                    completion_tokens,
                }),
            },
            other => other,
        }
    }

    /// A reply cut by the token limit: the first half (by characters) of `content`, with
    /// `finish_reason: "length"`.
    pub fn length_cut(content: &str) -> Self {
        let half = content.chars().count() / 2;
        Step::Reply {
            content: content.chars().take(half).collect(),
            finish_reason: "length".into(),
            usage: None,
        }
    }

    /// Plain prose where JSON was asked for.
    pub fn non_json(text: impl Into<String>) -> Self {
        Step::reply(text)
    }

    pub fn slow(ms: u64, then: Step) -> Self {
        Step::Slow {
            ms,
            then: Box::new(then),
        }
    }

    pub fn rate_limited() -> Self {
        Step::RateLimited {
            retry_after_secs: None,
        }
    }

    pub fn rate_limited_retry_after(secs: u64) -> Self {
        Step::RateLimited {
            retry_after_secs: Some(secs),
        }
    }

    pub fn status(code: u16, message: impl Into<String>) -> Self {
        Step::Status {
            code,
            message: message.into(),
        }
    }

    /// HTTP 500 or 503 (or any code) with a generic message.
    pub fn server_error(code: u16) -> Self {
        Step::status(code, "scripted server error")
    }

    pub fn reset() -> Self {
        Step::Reset
    }

    pub fn malformed_json() -> Self {
        Step::MalformedJson
    }

    pub fn truncated_body() -> Self {
        Step::TruncatedBody
    }

    /// A chat completion body whose choice has no message content and whose `usage` has the
    /// wrong types: valid JSON, wrong schema.
    pub fn wrong_schema() -> Self {
        Step::Body(json!({
            "id": "chatcmpl-wrong",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "text": 42}}],
            "usage": {"prompt_tokens": "many"}
        }))
    }

    /// A chat completion with an empty `choices` array.
    pub fn empty_choices() -> Self {
        Step::Body(json!({
            "id": "chatcmpl-empty",
            "object": "chat.completion",
            "choices": []
        }))
    }
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    /// The task named by the request's `mnemos_task=` marker.
    pub task: Option<String>,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request asked for JSON mode (`response_format`).
    pub fn has_response_format(&self) -> bool {
        self.json
            .as_ref()
            .and_then(|j| j.get("response_format"))
            .is_some()
    }

    /// The `messages` array of the body (empty when absent).
    pub fn messages(&self) -> Vec<Value> {
        self.json
            .as_ref()
            .and_then(|j| j.get("messages"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Script {
    queue: VecDeque<Step>,
    per_task: HashMap<String, VecDeque<Step>>,
    defaults: HashMap<String, Step>,
    fallback: Option<Step>,
    reject_response_format: bool,
    requests: Vec<RecordedRequest>,
}

impl Script {
    fn next_step(&mut self, task: Option<&str>) -> Option<Step> {
        if let Some(task) = task {
            if let Some(step) = self.per_task.get_mut(task).and_then(VecDeque::pop_front) {
                return Some(step);
            }
        }
        if let Some(step) = self.queue.pop_front() {
            return Some(step);
        }
        if let Some(step) = task.and_then(|t| self.defaults.get(t)) {
            return Some(step.clone());
        }
        self.fallback.clone()
    }
}

struct Shared {
    script: Mutex<Script>,
    shutdown: AtomicBool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    connections: Mutex<Vec<JoinHandle<()>>>,
}

/// A scripted, fault-injecting OpenAI-compatible chat server on the loopback interface.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl ScriptedLlm {
    /// Start a server on a free loopback port.
    pub fn start() -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(Script::default()),
            shutdown: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("scripted-llm-accept".into())
                .spawn(move || accept_loop(listener, shared))?
        };
        Ok(ScriptedLlm {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>/v1`, the base URL an OpenAI-compatible client is given.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:<port>`, without `/v1` (the server answers both).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue a step on the shared queue (used by requests of any task).
    pub fn push(&self, step: Step) -> &Self {
        self.shared.script.lock().queue.push_back(step);
        self
    }

    /// Queue several steps on the shared queue.
    pub fn push_all(&self, steps: impl IntoIterator<Item = Step>) -> &Self {
        self.shared.script.lock().queue.extend(steps);
        self
    }

    /// Queue a step for requests of one task only.
    pub fn push_for(&self, task: &str, step: Step) -> &Self {
        self.shared
            .script
            .lock()
            .per_task
            .entry(task.to_string())
            .or_default()
            .push_back(step);
        self
    }

    /// Answer every request of `task` with `step` once the queues are empty.
    pub fn set_default(&self, task: &str, step: Step) -> &Self {
        self.shared
            .script
            .lock()
            .defaults
            .insert(task.to_string(), step);
        self
    }

    /// Answer every request no queue or default covers with `step`.
    pub fn set_fallback(&self, step: Step) -> &Self {
        self.shared.script.lock().fallback = Some(step);
        self
    }

    /// Behave like a server without JSON mode: any request carrying `response_format` gets
    /// HTTP 400 naming `response_format`, without consuming a step.
    pub fn reject_response_format(&self, reject: bool) -> &Self {
        self.shared.script.lock().reject_response_format = reject;
        self
    }

    /// Steps still queued (shared plus per-task queues).
    pub fn pending_steps(&self) -> usize {
        let script = self.shared.script.lock();
        script.queue.len() + script.per_task.values().map(VecDeque::len).sum::<usize>()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.script.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.shared.script.lock().requests.len()
    }

    /// Requests whose marker names `task`.
    pub fn requests_for(&self, task: &str) -> Vec<RecordedRequest> {
        self.shared
            .script
            .lock()
            .requests
            .iter()
            .filter(|r| r.task.as_deref() == Some(task))
            .cloned()
            .collect()
    }

    /// Forget recorded requests (the script stays).
    pub fn clear_requests(&self) {
        self.shared.script.lock().requests.clear();
    }

    /// The most requests the server was serving at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        // Wake the acceptor blocked in `accept`.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let connections = std::mem::take(&mut *self.shared.connections.lock());
        for connection in connections {
            let _ = connection.join();
        }
    }
}

/// A loopback URL (`http://127.0.0.1:<port>/v1`) where nothing listens: the port was free a
/// moment ago and is released again.
pub fn dead_endpoint() -> io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    Ok(format!("http://{addr}/v1"))
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.shutdown.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("scripted-llm-conn".into())
                .spawn(move || serve_connection(stream, &shared))
        };
        if let Ok(handle) = worker {
            let mut connections = shared.connections.lock();
            connections.retain(|h| !h.is_finished());
            connections.push(handle);
        }
    }
}

struct RawRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn serve_connection(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(POLL));
    let _ = stream.set_nodelay(true);
    let Some(request) = read_request(&mut stream, shared) else {
        return;
    };
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let json: Option<Value> = serde_json::from_str(&body).ok();
    let task = json.as_ref().and_then(task_marker);
    let recorded = RecordedRequest {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body,
        json,
        task,
    };

    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    SERVING.with(|serving| serving.set(true));
    respond(&mut stream, shared, recorded);
    done_serving(shared);
}

thread_local! {
    /// Whether this connection's thread still counts in `in_flight` (each connection has its
    /// own thread).
    static SERVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Leave `in_flight`, once: before the response's bytes go out, since a client may send its
/// next request as soon as it has read them, before this thread runs again.
fn done_serving(shared: &Shared) {
    if SERVING.with(|serving| serving.replace(false)) {
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn respond(stream: &mut TcpStream, shared: &Shared, request: RecordedRequest) {
    let is_chat = request.method == "POST"
        && (request.path == "/v1/chat/completions" || request.path == "/chat/completions");
    let is_models =
        request.method == "GET" && (request.path == "/v1/models" || request.path == "/models");
    let model = request
        .json
        .as_ref()
        .and_then(|j| j.get("model"))
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_string();
    let wants_json_mode = request.has_response_format();
    let task = request.task.clone();

    let step = {
        let mut script = shared.script.lock();
        script.requests.push(request);
        if !is_chat {
            None
        } else if wants_json_mode && script.reject_response_format {
            Some(Step::status(
                400,
                "response_format is not supported by this server",
            ))
        } else {
            Some(
                script
                    .next_step(task.as_deref())
                    .unwrap_or_else(|| Step::status(500, "no scripted step for this request")),
            )
        }
    };

    match step {
        Some(step) => play(stream, shared, step, &model),
        None if is_models => {
            let body = json!({"object": "list", "data": [{"id": "scripted", "object": "model"}]});
            write_response(stream, shared, 200, &[], body.to_string().as_bytes(), None);
        }
        None => {
            let body = error_body("not found");
            write_response(stream, shared, 404, &[], body.as_bytes(), None);
        }
    }
}

fn play(stream: &mut TcpStream, shared: &Shared, step: Step, model: &str) {
    match step {
        Step::Reply {
            content,
            finish_reason,
            usage,
        } => {
            let mut body = json!({
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason
                }]
            });
            if let (Some(usage), Some(obj)) = (usage, body.as_object_mut()) {
                obj.insert(
                    "usage".into(),
                    json!({
                        "prompt_tokens": usage.prompt_tokens,
                        "completion_tokens": usage.completion_tokens,
                        "total_tokens": usage.prompt_tokens + usage.completion_tokens
                    }),
                );
            }
            write_response(stream, shared, 200, &[], body.to_string().as_bytes(), None);
        }
        Step::Slow { ms, then } => {
            let until = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < until {
                if shared.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
            }
            play(stream, shared, *then, model);
        }
        Step::RateLimited { retry_after_secs } => {
            let header = retry_after_secs.map(|s| ("Retry-After".to_string(), s.to_string()));
            let headers: Vec<(String, String)> = header.into_iter().collect();
            let body = error_body("rate limit reached, slow down");
            write_response(stream, shared, 429, &headers, body.as_bytes(), None);
        }
        Step::Status { code, message } => {
            let body = error_body(&message);
            write_response(stream, shared, code, &[], body.as_bytes(), None);
        }
        Step::Reset => {
            let _ = stream.shutdown(Shutdown::Both);
        }
        Step::MalformedJson => {
            let body = b"<html><body>502 upstream exploded {\"choices\": [</body></html>";
            write_response(stream, shared, 200, &[], body, None);
        }
        Step::TruncatedBody => {
            let body = json!({
                "id": "chatcmpl-cut",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": "{\"summary\": \"this body never ends\"}"}, "finish_reason": "stop"}]
            })
            .to_string();
            let half = body.len() / 2;
            write_response(stream, shared, 200, &[], body.as_bytes(), Some(half));
        }
        Step::Body(value) => {
            write_response(stream, shared, 200, &[], value.to_string().as_bytes(), None);
        }
    }
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "scripted_error"}}).to_string()
}

/// Write a response with `Connection: close`; with `cut_at`, announce the full length but send
/// only the first `cut_at` bytes of the body.
fn write_response(
    stream: &mut TcpStream,
    shared: &Shared,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    cut_at: Option<usize>,
) {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let sent = body.get(..cut_at.unwrap_or(body.len())).unwrap_or(body);
    done_serving(shared);
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(sent))
        .and_then(|()| stream.flush());
    let _ = stream.shutdown(Shutdown::Both);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Read one request; `None` when the client went away, sent garbage, or shutdown began.
fn read_request(stream: &mut TcpStream, shared: &Shared) -> Option<RawRequest> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            break end;
        }
        if buf.len() > MAX_HEAD_BYTES || !read_some(stream, &mut buf, shared) {
            return None;
        }
    };
    let head = String::from_utf8_lossy(buf.get(..head_end)?).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_BODY_BYTES {
        return None;
    }
    let mut body = buf.get(head_end + 4..)?.to_vec();
    while body.len() < length {
        if !read_some(stream, &mut body, shared) {
            return None;
        }
    }
    body.truncate(length);
    Some(RawRequest {
        method,
        path,
        headers,
        body,
    })
}

/// Append what the socket has; false on EOF, error, idleness past the limit or shutdown.
fn read_some(stream: &mut TcpStream, buf: &mut Vec<u8>, shared: &Shared) -> bool {
    let started = Instant::now();
    let mut chunk = [0u8; 8192];
    loop {
        if shared.shutdown.load(Ordering::SeqCst) {
            return false;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => {
                buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
                return true;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if started.elapsed() > IDLE_LIMIT {
                    return false;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The task named by `mnemos_task=<name>` in any message content of a chat request.
fn task_marker(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .find_map(|content| {
            let start = content.find(TASK_MARKER)? + TASK_MARKER.len();
            let name: String = content
                .get(start..)?
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(addr: SocketAddr, path: &str, body: &str) -> io::Result<String> {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    fn chat(task: &str) -> String {
        json!({"model": "m", "messages": [
            {"role": "system", "content": format!("Do the job. mnemos_task={task}")},
            {"role": "user", "content": "你好"}
        ]})
        .to_string()
    }

    #[test]
    fn per_task_queue_then_shared_queue_then_default_then_fallback() {
        let server = ScriptedLlm::start().unwrap();
        server.push_for("answer", Step::reply("A1"));
        server.push(Step::reply("shared"));
        server.set_default("answer", Step::reply("default"));
        server.set_fallback(Step::reply("fallback"));
        let got: Vec<String> = (0..3)
            .map(|_| post(server.addr(), "/v1/chat/completions", &chat("answer")).unwrap())
            .collect();
        assert!(got[0].contains("\"A1\""));
        assert!(got[1].contains("\"shared\""));
        assert!(got[2].contains("\"default\""));
        let other = post(server.addr(), "/chat/completions", &chat("merge")).unwrap();
        assert!(other.contains("\"fallback\""), "{other}");
        let recorded = server.requests();
        assert_eq!(recorded.len(), 4);
        assert_eq!(recorded[0].task.as_deref(), Some("answer"));
        assert_eq!(recorded[3].task.as_deref(), Some("merge"));
        assert_eq!(recorded[3].path, "/chat/completions");
        assert_eq!(server.requests_for("answer").len(), 3);
        assert_eq!(server.pending_steps(), 0);
    }

    #[test]
    fn faults_look_like_faults_on_the_wire() {
        let server = ScriptedLlm::start().unwrap();
        server.push_all([
            Step::rate_limited_retry_after(2),
            Step::server_error(503),
            Step::reset(),
            Step::truncated_body(),
            Step::malformed_json(),
        ]);
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        assert!(
            r.starts_with("HTTP/1.1 429") && r.contains("Retry-After: 2"),
            "{r}"
        );
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        assert!(r.starts_with("HTTP/1.1 503"));
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap_or_default();
        assert!(r.is_empty());
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        let announced: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(body.len() < announced);
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        let body = r.split_once("\r\n\r\n").unwrap().1;
        assert!(serde_json::from_str::<Value>(body).is_err());
        // Nothing scripted any more.
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        assert!(r.starts_with("HTTP/1.1 500"));
        let r = post(server.addr(), "/v1/other", "{}").unwrap();
        assert!(r.starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn rejects_json_mode_when_asked_and_reports_usage() {
        let server = ScriptedLlm::start().unwrap();
        server.reject_response_format(true);
        server.set_fallback(Step::reply("{\"ok\": true}").with_usage(12, 3));
        let mut with_format: Value = serde_json::from_str(&chat("x")).unwrap();
        with_format["response_format"] = json!({"type": "json_object"});
        let r = post(
            server.addr(),
            "/v1/chat/completions",
            &with_format.to_string(),
        )
        .unwrap();
        assert!(r.starts_with("HTTP/1.1 400") && r.contains("response_format"));
        let r = post(server.addr(), "/v1/chat/completions", &chat("x")).unwrap();
        assert!(r.contains("\"prompt_tokens\":12") && r.contains("\"completion_tokens\":3"));
        assert!(server.requests()[0].has_response_format());
    }

    #[test]
    fn slow_steps_overlap_and_drop_does_not_hang() {
        let server = ScriptedLlm::start().unwrap();
        server.set_fallback(Step::slow(150, Step::reply("late")));
        let addr = server.addr();
        let threads: Vec<_> = (0..3)
            .map(|_| std::thread::spawn(move || post(addr, "/v1/chat/completions", &chat("x"))))
            .collect();
        for t in threads {
            assert!(t.join().unwrap().unwrap().contains("late"));
        }
        assert!(server.max_in_flight() >= 2);
        server.set_fallback(Step::slow(60_000, Step::reply("never")));
        let _pending = std::thread::spawn(move || post(addr, "/v1/chat/completions", &chat("x")));
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        drop(server);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn dead_endpoint_refuses_connections() {
        let url = dead_endpoint().unwrap();
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .parse()
            .unwrap();
        assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err());
    }
}
