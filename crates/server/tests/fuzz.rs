//! Random and mutated requests against every route: no panic, no 5xx for a caller's mistake,
//! the one error shape on every error, and nothing written by a rejected request.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::sync::LazyLock;

use proptest::prelude::*;
use reqwest::Method;
use serde_json::{json, Value};

use common::Server;

/// Every `/v1` route of the document (so every route the server serves; the key routes are left
/// out: a key made by the fuzzer would turn keys on), with each path parameter but `{user}` as
/// `{id}` to fill in; then query strings, `/mcp`, a wrong method and no route at all.
static ROUTES: LazyLock<Vec<(String, String)>> =
    LazyLock::new(|| {
        let mut routes: Vec<(String, String)> = mnemos_server::openapi::routes()
            .into_iter()
            .filter(|(_, path)| path.starts_with("/v1/") && !path.starts_with("/v1/keys"))
            .map(|(method, path)| {
                let path = path.replace("{session}", "{id}").replace("{view}", "{id}");
                (method, path)
            })
            .collect();
        routes.extend(
        [
            ("POST", "/mcp"),
            ("GET", "/v1/users/{user}/memories?q={id}&sort={id}&meta={id}"),
            (
                "GET",
                "/v1/users/{user}/memories?limit={id}&cursor={id}&kind={id}&state={id}&since={id}",
            ),
            ("GET", "/v1/users/{user}/turns/{id}?around={id}"),
            ("GET", "/v1/users/{user}/stats?agent={id}"),
            ("GET", "/v1/users/{user}/retention?points={id}"),
            ("PUT", "/v1/users/{user}/turns"),
            ("GET", "/v1/{id}"),
        ]
        .map(|(method, path)| (method.to_string(), path.to_string())),
    );
        routes
    });

/// JSON values of any shape, a few levels deep, with unicode and control characters.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,30}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("turns".to_string()),
                    Just("text".to_string()),
                    Just("role".to_string()),
                    Just("query".to_string()),
                    Just("budget".to_string()),
                    Just("confirm".to_string()),
                    Just("ids".to_string()),
                    "[a-z_]{1,8}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: random JSON, a near-valid turns request with one field broken, or raw bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        json_value().prop_map(|v| v.to_string().into_bytes()),
        (
            json_value(),
            prop_oneof![Just("role"), Just("text"), Just("time"), Just("key")]
        )
            .prop_map(|(v, field)| {
                let mut turn = json!({"role": "user", "text": "a fine turn"});
                turn[field] = v;
                json!({"turns": [turn]}).to_string().into_bytes()
            }),
        prop::collection::vec(any::<u8>(), 0..64),
        // Queries over the cost limits: too long, or too many questions at once.
        (
            1usize..40,
            prop_oneof![Just("why? "), Just("ok "), Just("为什么？")]
        )
            .prop_map(|(n, piece)| json!({"query": piece.repeat(n * 60)})
                .to_string()
                .into_bytes()),
        // JSON-RPC as a plain MCP client sends it, with any method and arguments.
        (
            prop_oneof![
                Just("tools/list".to_string()),
                Just("tools/call".to_string()),
                Just("initialize".to_string()),
                "[a-z/]{0,12}"
            ],
            json_value()
        )
            .prop_map(|(method, params)| {
                json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                    .to_string()
                    .into_bytes()
            }),
    ]
}

/// Path segments: names, ids, unicode, encodings and separators.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ann".to_string()),
        Just("01a21276-a2e7-70bf-9179-fc00024c1afc".to_string()),
        "\\PC{0,20}",
        "[%./?#a-f0-9]{0,12}",
        Just("x".repeat(300)),
    ]
}

#[derive(Debug)]
struct Case {
    route: usize,
    user: String,
    id: String,
    body: Option<Vec<u8>>,
    content_type: Option<String>,
    idempotency: Option<String>,
    /// A `Host` to send instead of the one connected to (a foreign one must be refused).
    host: Option<String>,
    /// An `Origin`, as a browser sends it.
    origin: Option<String>,
}

fn host_or_origin() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        Just("evil.example.com".to_string()),
        Just("localhost".to_string()),
        Just("null".to_string()),
        Just("http://evil.example.com".to_string()),
        "[ -~]{0,24}",
    ])
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..ROUTES.len(),
        segment(),
        segment(),
        prop::option::of(body()),
        prop::option::of(prop_oneof![
            Just("application/json".to_string()),
            Just("text/plain".to_string()),
            "[ -~]{0,20}"
        ]),
        prop::option::of("[ -~]{0,40}"),
        host_or_origin(),
        host_or_origin(),
    )
        .prop_map(
            |(route, user, id, body, content_type, idempotency, host, origin)| Case {
                route,
                user,
                id,
                body,
                content_type,
                idempotency,
                host,
                origin,
            },
        )
}

/// What the stored data looks like: users, and each one's memories (with every state).
fn snapshot(server: &Server) -> Value {
    let (_, users) = server.send("GET", "/v1/users", None);
    let mut out = json!({"users": users.clone()});
    for user in users["users"].as_array().unwrap() {
        let user = user.as_str().unwrap();
        let (_, page) = server.send(
            "GET",
            &format!("/v1/users/{user}/memories?state=all&limit=1000"),
            None,
        );
        out[user] = page;
    }
    out
}

#[test]
fn no_request_breaks_the_server_or_writes_when_rejected() {
    let server = Server::start(Server::default_config());
    let (status, _) = server.send(
        "POST",
        "/v1/users/ann/turns",
        Some(json!({"turns": [{"role": "user", "text": "I keep bees on the roof."}]})),
    );
    assert!(status.is_success());
    let config = ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(case in case())| {
        let before = snapshot(&server);
        let (method, template) = &ROUTES[case.route];
        let path = template.replace("{user}", &case.user).replace("{id}", &case.id);
        let url = format!("{}{}", server.url(""), path);
        let Ok(url) = reqwest::Url::parse(&url) else {
            return Ok(()); // not a URL a client could send
        };
        let mut request = server.client.request(Method::from_bytes(method.as_bytes()).unwrap(), url);
        if let Some(content_type) = &case.content_type {
            request = request.header("content-type", content_type.as_str());
        }
        if let Some(key) = &case.idempotency {
            request = request.header("idempotency-key", key.as_str());
        }
        if let Some(host) = &case.host {
            request = request.header("host", host.as_str());
        }
        if let Some(origin) = &case.origin {
            request = request.header("origin", origin.as_str());
        }
        if let Some(body) = case.body.clone() {
            request = request.body(body);
        }
        let response = request.send().unwrap();
        let status = response.status();
        let text = response.text().unwrap();
        prop_assert!(!status.is_server_error(), "{method} {path} → {status}: {text}");
        // Any Host but this machine's, and any Origin here (none is the server's own), is refused.
        let foreign =
            case.host.as_deref().is_some_and(|h| h != "localhost") || case.origin.is_some();
        if foreign {
            prop_assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{} {}: {}", method, path, text);
        }
        if status.is_client_error() && path == "/mcp" {
            // MCP answers JSON-RPC errors; what matters is that nothing was written.
            prop_assert_eq!(snapshot(&server), before, "{} {} was rejected but wrote", method, path);
        } else if status.is_client_error() {
            let error: Value = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("{method} {path}: not JSON ({e}): {text}")))?;
            prop_assert!(error["error"]["code"].is_string(), "{text}");
            prop_assert!(error["error"]["message"].is_string(), "{text}");
            prop_assert_eq!(snapshot(&server), before, "{} {} was rejected but wrote", method, path);
        }
    });
    let (status, _) = server.send("GET", "/healthz", None);
    assert!(status.is_success(), "the server still answers");
    server.stop().unwrap();
}
