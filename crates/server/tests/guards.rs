//! What the server refuses and stops on its own: a foreign `Host` or `Origin` on any route
//! (DNS rebinding, cross-site pages), work that outlives its request's time limit, queries
//! that would cost too much, and connections that never send their headers.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use mnemos_testkit::embedders::Slow;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use common::Server;
use mnemos_core::Store;
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, JobSettings};
use mnemos_offline::OfflineModel;
use mnemos_server::ServerConfig;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

const FOREIGN_HOST: &str = "evil.example.com:18400";

/// `path` with each `{param}` filled in.
fn concrete(path: &str) -> String {
    path.replace("{user}", "u")
        .replace("{session}", "s")
        .replace("{id}", "0190a0b0-0000-7000-8000-000000000000")
        .replace("{view}", "persona")
}

fn send(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, String) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = server.client.request(method, server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().unwrap();
    let status = response.status();
    (status, response.text().unwrap())
}

fn remember(server: &Server, user: &str, text: &str) {
    let (status, body) = server.send(
        "POST",
        &format!("/v1/users/{user}/turns"),
        Some(json!({ "turns": [{ "role": "user", "text": text }] })),
    );
    assert!(status.is_success(), "{status}: {body}");
}

#[test]
fn a_keyless_loopback_server_refuses_a_foreign_host_on_every_route() {
    let server = Server::start(Server::default_config());
    remember(&server, "u", "My sister Maria lives in Lisbon.");
    let mut paths: Vec<(String, String)> = mnemos_server::openapi::routes()
        .into_iter()
        .map(|(method, path)| (method, concrete(&path)))
        .collect();
    paths.extend(
        [
            ("POST", "/mcp"),
            ("GET", "/ui/"),
            ("GET", "/"),
            ("GET", "/no/such/route"),
        ]
        .map(|(method, path)| (method.to_string(), path.to_string())),
    );
    for (method, path) in &paths {
        let body = (*method != "GET" && *method != "DELETE").then(|| json!({}));
        let (status, text) = send(&server, method, path, &[("host", FOREIGN_HOST)], body);
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {text}");
        assert!(text.contains("Host"), "{method} {path}: {text}");
    }
    // The purge a rebinding page would send changed nothing.
    let (status, _) = server.send("GET", "/v1/users/u/memories", None);
    assert_eq!(status, StatusCode::OK);
    let (status, body) = server.send("GET", "/v1/users", None);
    assert_eq!(status, StatusCode::OK);
    assert!(body.to_string().contains("\"u\""), "{body}");
    // The names of this machine still work.
    for host in ["localhost", "127.0.0.1:1", "[::1]:8080"] {
        let (status, text) = send(&server, "GET", "/v1/users", &[("host", host)], None);
        assert_eq!(status, StatusCode::OK, "{host}: {text}");
    }
}

#[test]
fn a_page_from_another_origin_is_refused_and_the_servers_own_pages_are_not() {
    let server = Server::start(Server::default_config());
    remember(&server, "u", "I keep bees on the roof.");
    let own = server.url("").trim_end_matches('/').to_string();
    for origin in ["http://evil.example.com", "null", "http://localhost:1"] {
        for (method, path) in [
            ("DELETE", "/v1/users/u"),
            ("POST", "/v1/users/u/search"),
            ("POST", "/mcp"),
            ("GET", "/healthz"),
        ] {
            let body = (method == "POST").then(|| json!({ "query": "bees" }));
            let (status, text) = send(&server, method, path, &[("origin", origin)], body);
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{origin} {method} {path}: {text}"
            );
            assert!(text.contains("origin"), "{text}");
        }
    }
    let (status, text) = send(
        &server,
        "POST",
        "/v1/users/u/search",
        &[("origin", own.as_str())],
        Some(json!({ "query": "bees" })),
    );
    assert_eq!(status, StatusCode::OK, "{own}: {text}");
    let (status, _) = server.send("GET", "/v1/users/u/memories", None);
    assert_eq!(status, StatusCode::OK, "the user was not purged");
}

#[test]
fn allowed_names_and_origins_are_let_in() {
    let config = ServerConfig {
        allowed_hosts: vec!["memory.example.com".into()],
        allowed_origins: vec!["https://app.example.com".into()],
        ..Server::default_config()
    };
    let server = Server::start(config);
    let (status, text) = send(
        &server,
        "GET",
        "/v1/users",
        &[
            ("host", "memory.example.com"),
            ("origin", "https://app.example.com"),
        ],
        None,
    );
    assert_eq!(status, StatusCode::OK, "{text}");
    // The MCP endpoint answers to the same names.
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let (status, text) = send(
        &server,
        "POST",
        "/mcp",
        &[("host", "memory.example.com")],
        Some(list),
    );
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("remember"), "{text}");
    let (status, _) = send(&server, "GET", "/v1/users", &[("host", FOREIGN_HOST)], None);
    assert_eq!(status, StatusCode::FORBIDDEN);
}

fn slow_server(per_text: Duration, timeout: Duration) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("m.db"), SqliteOptions::default()).unwrap());
    let embedder = Arc::new(Slow {
        inner: Arc::new(HashEmbedder::default()),
        per_text,
    });
    let model = Arc::new(OfflineModel::new(Arc::new(HashEmbedder::default())));
    let config = EngineConfig {
        jobs: JobSettings {
            inline: true,
            ..JobSettings::default()
        },
        ..EngineConfig::default()
    };
    let engine = Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(config)
        .build()
        .unwrap();
    let config = ServerConfig {
        request_timeout: timeout,
        ..Server::default_config()
    };
    Server::serve_engine(engine, dir, config)
}

/// CPU time this process has used (user + system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces) start at ") ".
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// A query of `n` questions, each searched on its own (and each embedded).
fn questions(n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| format!("What about {tag} number {i}?"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn work_stops_when_its_request_times_out() {
    let per_text = Duration::from_millis(60);
    let server = slow_server(per_text, Duration::from_millis(300));
    remember(&server, "u", "My brother Tom plays the cello.");
    for (route, tag) in [("search", "cello"), ("recall", "brother"), ("mcp", "Tom")] {
        // 16 questions: about a second of embedding, three times the time limit.
        let (path, body) = if route == "mcp" {
            let call = json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": "search", "arguments": { "user": "u", "query": questions(16, tag) } }
            });
            ("/mcp".to_string(), call)
        } else {
            (
                format!("/v1/users/u/{route}"),
                json!({ "query": questions(16, tag) }),
            )
        };
        let started = Instant::now();
        let (status, text) = send(&server, "POST", &path, &[], Some(body));
        let answered = started.elapsed();
        // The 504, or (MCP) the tool's own timeout error when the work stopped first.
        let tool_timeout = status == StatusCode::OK && text.contains("error (timeout)");
        assert!(
            status == StatusCode::GATEWAY_TIMEOUT || (route == "mcp" && tool_timeout),
            "{route}: {status} {text}"
        );
        assert!(
            answered < Duration::from_millis(900),
            "{route}: {answered:?}"
        );
        // Within 100 ms of the 504 the work has stopped: the next half second is idle.
        std::thread::sleep(Duration::from_millis(100));
        let before = cpu_time();
        std::thread::sleep(Duration::from_millis(500));
        let busy = cpu_time() - before;
        assert!(
            busy <= Duration::from_millis(60),
            "{route}: {busy:?} of CPU in the 500 ms after the timeout"
        );
    }
    // A query within the limit still gets its answer.
    let (status, text) = send(
        &server,
        "POST",
        "/v1/users/u/search",
        &[],
        Some(json!({ "query": "cello" })),
    );
    assert_eq!(status, StatusCode::OK, "{text}");
}

#[test]
fn a_query_that_would_cost_too_much_is_refused_naming_the_limit() {
    let server = Server::start(Server::default_config());
    remember(&server, "u", "I run on Sundays.");
    let long = "run ".repeat(2_001);
    let cases = [(questions(17, "run"), "at most 16"), (long, "8000")];
    for route in ["search", "recall"] {
        for (query, limit) in &cases {
            let (status, body) = server.send(
                "POST",
                &format!("/v1/users/u/{route}"),
                Some(json!({ "query": query })),
            );
            assert!(status.is_client_error(), "{route}: {status} {body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(limit), "{route}: {message}");
        }
        let (status, body) = server.send(
            "POST",
            &format!("/v1/users/u/{route}"),
            Some(json!({ "query": questions(16, "run") })),
        );
        assert_eq!(status, StatusCode::OK, "{route}: {body}");
    }
}

/// Connect and send `sent`, then wait for the server to close the connection; how long that
/// took, or `None` if it was still open after `patience`.
fn closed_after(server: &Server, sent: &[u8], patience: Duration) -> Option<Duration> {
    let addr = server
        .url("")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(sent).unwrap();
    stream.set_read_timeout(Some(patience)).unwrap();
    let started = Instant::now();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(started.elapsed()),
            // A "408 Request Timeout" may come first; the close follows.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(started.elapsed())
            }
            Err(_) => return None,
        }
    }
}

#[test]
fn a_connection_that_never_sends_its_headers_is_closed() {
    let config = ServerConfig {
        header_timeout: Duration::from_millis(300),
        ..Server::default_config()
    };
    let server = Server::start(config);
    let patience = Duration::from_secs(3);
    for sent in [&b""[..], b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"] {
        let closed = closed_after(&server, sent, patience);
        assert!(
            closed.is_some_and(|after| after < Duration::from_secs(2)),
            "{:?}: still open after {patience:?}",
            String::from_utf8_lossy(sent)
        );
    }
    // A whole request on a fresh connection is answered as before.
    let (status, _) = server.send("GET", "/healthz", None);
    assert_eq!(status, StatusCode::OK);
}
