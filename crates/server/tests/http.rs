//! The server over real HTTP on loopback: every route, idempotent retries, the error shape and
//! statuses for bad input (nothing written by a rejected request), Chinese text, the loopback
//! rule, and a clean stop.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use common::{engine_on, Server};
use mnemos_server::ServerConfig;

fn turns(texts: &[&str]) -> Value {
    json!({
        "agent": "bot",
        "session": "s1",
        "turns": texts.iter().map(|t| json!({"role": "user", "text": t})).collect::<Vec<_>>(),
    })
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<none>")
}

fn total(server: &Server, user: &str) -> u64 {
    let (status, page) = server.send("GET", &format!("/v1/users/{user}/memories"), None);
    assert_eq!(status, StatusCode::OK, "{page}");
    page["total"].as_u64().unwrap()
}

#[test]
fn every_route_over_http() {
    let server = Server::start(Server::default_config());
    let (status, health) = server.send("GET", "/healthz", None);
    assert_eq!(
        (status, health["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );
    let (status, ready) = server.send("GET", "/readyz", None);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["store"]["kind"], "sqlite", "{ready}");
    assert_eq!(ready["store"]["vectors"], "in_process", "{ready}");
    assert_eq!(
        ready["store"]["vectors_detail"],
        "SQLite has no vector index"
    );
    // The test servers embed with the hash embedder.
    assert_eq!(ready["store"]["embedder"], "hash-v1-384", "{ready}");
    assert!(
        health.get("store").is_none(),
        "liveness says nothing of the store"
    );

    let (status, added) = server.send(
        "POST",
        "/v1/users/ann/turns",
        Some(turns(&[
            "My sister Mia visits in April and she is allergic to peanuts.",
            "I work at a bakery near the river.",
            "我养了一只叫小白的猫。",
        ])),
    );
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let added_turns = added["turns"].as_array().unwrap();
    assert_eq!(added_turns.len(), 3);
    assert!(added_turns.iter().all(|t| t["status"] == "added"));
    let rounds: Vec<u64> = added_turns
        .iter()
        .map(|t| t["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds, vec![0, 1, 2], "each user turn opens a round");

    let (status, found) = server.send(
        "POST",
        "/v1/users/ann/search",
        Some(json!({"query": "what can Mia not eat?", "top_k": 2})),
    );
    assert_eq!(status, StatusCode::OK, "{found}");
    let best = &found["hits"][0];
    assert!(best["memory"]["text"].as_str().unwrap().contains("peanuts"));
    assert!(!best["explanation"].as_array().unwrap().is_empty());
    let id = best["memory"]["id"].as_str().unwrap().to_string();

    let (status, cat) = server.send("POST", "/v1/users/ann/search", Some(json!({"query": "猫"})));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cat["hits"][0]["memory"]["text"], "我养了一只叫小白的猫。");

    let (status, context) = server.send(
        "POST",
        "/v1/users/ann/recall",
        Some(json!({"query": "Mia's allergy", "agent": "bot", "budget": 200})),
    );
    assert_eq!(status, StatusCode::OK, "{context}");
    assert!(context["tokens"].as_u64().unwrap() <= 200);
    assert!(context["text"].as_str().unwrap().contains("peanuts"));
    assert!(!context["items"][0]["provenance"]
        .as_array()
        .unwrap()
        .is_empty());

    // Paging: two pages of 2 and 1, then the end.
    let (_, first) = server.send("GET", "/v1/users/ann/memories?limit=2", None);
    assert_eq!(first["memories"].as_array().unwrap().len(), 2);
    assert_eq!(first["total"], 3);
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = server.send(
        "GET",
        &format!("/v1/users/ann/memories?limit=2&cursor={cursor}"),
        None,
    );
    assert_eq!(second["memories"].as_array().unwrap().len(), 1);
    assert!(second.get("next_cursor").is_none());
    let (_, turns_only) = server.send("GET", "/v1/users/ann/memories?kind=turn&agent=bot", None);
    assert_eq!(turns_only["total"], 3);

    let (status, memory) = server.send("GET", &format!("/v1/users/ann/memories/{id}"), None);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(memory["state"], "active");
    assert!(memory["created"]["time"].as_str().unwrap().ends_with('Z'));

    let (status, updated) = server.send(
        "PATCH",
        &format!("/v1/users/ann/memories/{id}"),
        Some(json!({"text": "Mia visits in May; she is allergic to peanuts."})),
    );
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["version"], 2);

    let (status, forgotten) = server.send(
        "DELETE",
        &format!("/v1/users/ann/memories/{id}?reason=outdated"),
        None,
    );
    assert_eq!(status, StatusCode::OK, "{forgotten}");
    assert_eq!(forgotten["already_forgotten"], false);
    assert_eq!(forgotten["memory"]["forgotten"]["reason"], "outdated");
    let (_, again) = server.send("DELETE", &format!("/v1/users/ann/memories/{id}"), None);
    assert_eq!(again["already_forgotten"], true);
    assert_eq!(again["memory"]["forgotten"]["reason"], "outdated");

    let (_, history) = server.send("GET", &format!("/v1/users/ann/memories/{id}/history"), None);
    let changes: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["change"].as_str().unwrap())
        .collect();
    assert_eq!(changes, vec!["created", "updated", "forgotten"]);
    assert_eq!(total(&server, "ann"), 2);

    let (status, stats) = server.send("GET", "/v1/users/ann/stats?agent=bot", None);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stats["preset"], "retrieval");
    let (status, jobs) = server.send("GET", "/v1/users/ann/jobs", None);
    assert_eq!(
        (status, jobs.as_array().map(Vec::len)),
        (StatusCode::OK, Some(0))
    );
    let (status, ended) = server.send("POST", "/v1/users/ann/sessions/s1/end?agent=bot", None);
    assert_eq!(status, StatusCode::OK, "{ended}");
    let (status, view) = server.send("GET", "/v1/users/ann/views/persona", None);
    assert_eq!(status, StatusCode::OK, "{view}");
    assert!(view["text"].as_str().unwrap().contains("acme/ann"));
    let (status, view) = server.send("GET", "/v1/users/ann/views/chains", None);
    assert_eq!(status, StatusCode::OK, "{view}");
    assert!(view["text"]
        .as_str()
        .unwrap()
        .contains("no memory chains for acme/ann"));
    let (_, presets) = server.send("GET", "/v1/presets", None);
    assert!(presets
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "moom"));
    let (_, users) = server.send("GET", "/v1/users", None);
    assert_eq!(users["users"], json!(["ann"]));
    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(
            "mnemos_http_requests_total{method=\"POST\",route=\"/v1/users/{user}/turns\",status=\"201\"} 1"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("mnemos_turns_added_total 3"), "{metrics}");
    assert!(
        !metrics.contains("ann"),
        "user names never become label values"
    );

    let (status, purged) = server.send("DELETE", "/v1/users/ann", None);
    assert_eq!(status, StatusCode::OK, "{purged}");
    assert_eq!(purged["turns"], 3);
    let (status, gone) = server.send("GET", "/v1/users/ann/memories", None);
    assert_eq!(
        (status, error_code(&gone)),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let (status, gone) = server.send("GET", &format!("/v1/users/ann/memories/{id}"), None);
    assert_eq!(
        (status, error_code(&gone)),
        (StatusCode::NOT_FOUND, "not_found")
    );
    server.stop().unwrap();
}

#[test]
fn a_retried_request_with_the_same_idempotency_key_adds_nothing() {
    let server = Server::start(Server::default_config());
    let post = |key: &str| {
        let response = server
            .client
            .post(server.url("/v1/users/bo/turns"))
            .header("Idempotency-Key", key)
            .json(&turns(&["I moved to Berlin.", "I like rowing."]))
            .send()
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json::<Value>().unwrap()
    };
    let first = post("req-1");
    let retry = post("req-1");
    let statuses = |v: &Value| -> Vec<String> {
        v["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(statuses(&first), vec!["added", "added"]);
    assert_eq!(statuses(&retry), vec!["duplicate", "duplicate"]);
    assert_eq!(first["turns"][0]["turn_id"], retry["turns"][0]["turn_id"]);
    // A retry learns which memories the first attempt made.
    for (made, replayed) in first["turns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(retry["turns"].as_array().unwrap())
    {
        assert!(made["memory_id"].is_string(), "{first}");
        assert_eq!(replayed["memory_id"], made["memory_id"], "{retry}");
    }
    assert_eq!(total(&server, "bo"), 2);
    post("req-2");
    assert_eq!(total(&server, "bo"), 4);
    // The same key with other turns is a client bug, not a retry: 409, nothing written.
    let reused = server
        .client
        .post(server.url("/v1/users/bo/turns"))
        .header("Idempotency-Key", "req-1")
        .json(&turns(&["Something else entirely."]))
        .send()
        .unwrap();
    assert_eq!(reused.status(), StatusCode::CONFLICT);
    assert_eq!(reused.json::<Value>().unwrap()["error"]["code"], "conflict");
    assert_eq!(total(&server, "bo"), 4);
    // The same key with the same turns plus one more, or with fewer, is another request too.
    for texts in [
        vec!["I moved to Berlin.", "I like rowing.", "And one more."],
        vec!["I moved to Berlin."],
    ] {
        let other = server
            .client
            .post(server.url("/v1/users/bo/turns"))
            .header("Idempotency-Key", "req-1")
            .json(&turns(&texts))
            .send()
            .unwrap();
        assert_eq!(other.status(), StatusCode::CONFLICT, "{texts:?}");
    }
    assert_eq!(total(&server, "bo"), 4);
    server.stop().unwrap();
}

#[test]
fn empty_agent_or_session_names_are_rejected_everywhere() {
    let server = Server::start(Server::default_config());
    let (status, _) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["hello"])));
    assert_eq!(status, StatusCode::CREATED);
    let cases = [
        (
            "POST",
            "/v1/users/cy/recall",
            Some(json!({"query": "x", "agent": ""})),
        ),
        (
            "POST",
            "/v1/users/cy/recall",
            Some(json!({"query": "x", "session": ""})),
        ),
        (
            "POST",
            "/v1/users/cy/search",
            Some(json!({"query": "x", "agent": ""})),
        ),
        (
            "POST",
            "/v1/users/cy/search",
            Some(json!({"query": "x", "session": ""})),
        ),
    ];
    for (method, path, body) in cases {
        let (status, error) = server.send(method, path, body.clone());
        assert_eq!(
            (status, error_code(&error)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
            "{method} {path} {body:?}: {error}"
        );
    }
    // In a query string, a bad name is a bad query parameter like any other: 400.
    for path in [
        "/v1/users/cy/memories?agent=",
        "/v1/users/cy/memories?session=",
        "/v1/users/cy/stats?agent=",
        "/v1/users/cy/views/persona?agent=",
        "/v1/users/cy/retention?agent=",
    ] {
        bad_request(&server, path);
    }
    server.stop().unwrap();
}

#[test]
fn every_bad_query_parameter_is_a_bad_request() {
    let server = Server::start(Server::default_config());
    let (status, added) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["hello"])));
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let turn = added["turns"][0]["turn_id"].as_str().unwrap();
    let memories = "/v1/users/cy/memories";
    let mut paths: Vec<String> = [
        "limit=0",
        "limit=10001",
        "limit=-1",
        "limit=many",
        "cursor=zzz",
        "cursor=o-1",
        "kind=gossip",
        "state=sleepy",
        "agent=",
        "session=",
        "since=yesterday",
        "until=2024-13-01",
        "meta=novalue",
        "meta=a%3D1&meta=a%3D2",
        "q=%20",
        "sort=random",
        "current=maybe",
        "as_of=soon",
        "colour=red",
    ]
    .iter()
    .map(|q| format!("{memories}?{q}"))
    .collect();
    paths.extend(
        ["around=51", "around=-1", "around=x", "colour=red"]
            .iter()
            .map(|q| format!("/v1/users/cy/turns/{turn}?{q}")),
    );
    paths.extend(
        [
            "retention?points=1",
            "retention?points=2001",
            "retention?agent=",
            "retention?colour=red",
            "stats?agent=",
            "stats?colour=red",
            "views/persona?agent=",
            "views/timeline?colour=red",
        ]
        .iter()
        .map(|q| format!("/v1/users/cy/{q}")),
    );
    for path in &paths {
        bad_request(&server, path);
    }
    for path in [
        "/v1/users/cy/sessions/s1/end?agent=",
        "/v1/users/cy/sessions/s1/end?colour=red",
    ] {
        let (status, body) = server.send("POST", path, None);
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "invalid_request"),
            "{path}: {body}"
        );
    }
    // A body's value that breaks a rule is still 422.
    let (status, error) = server.send(
        "POST",
        "/v1/users/cy/search",
        Some(json!({"query": "hello", "top_k": 0})),
    );
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
        "{error}"
    );
    assert_eq!(total(&server, "cy"), 1);
    server.stop().unwrap();
}

#[test]
fn changing_a_forgotten_memory_is_a_conflict() {
    let server = Server::start(Server::default_config());
    let (_, added) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["I keep bees."])));
    let id = added["turns"][0]["memory_id"].as_str().unwrap().to_string();
    let path = format!("/v1/users/cy/memories/{id}");
    let (status, _) = server.send("DELETE", &format!("{path}?reason=outdated"), None);
    assert_eq!(status, StatusCode::OK);
    let (status, error) = server.send("PATCH", &path, Some(json!({"text": "I keep wasps."})));
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::CONFLICT, "conflict"),
        "{error}"
    );
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("is forgotten (outdated)") && message.contains("new turn"),
        "{message}"
    );
    let (_, memory) = server.send("GET", &path, None);
    assert_eq!(memory["text"], "I keep bees.", "nothing rewritten");
    assert_eq!(memory["version"], 2, "{memory}");
    server.stop().unwrap();
}

#[test]
fn stats_without_an_agent_count_every_agents_memories() {
    let server = Server::start(Server::default_config());
    // `turns` files them under agent `bot`, not the default agent.
    let (status, _) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["a", "b"])));
    assert_eq!(status, StatusCode::CREATED);
    let (status, every) = server.send("GET", "/v1/users/cy/stats", None);
    assert_eq!(status, StatusCode::OK, "{every}");
    assert_eq!(every["memories"], json!({"turn": 2}), "{every}");
    assert_eq!(
        every["agents"],
        json!({"bot": {"preset": "retrieval", "memories": {"turn": 2}}})
    );
    assert!(every.get("preset").is_none(), "{every}");
    let (_, bot) = server.send("GET", "/v1/users/cy/stats?agent=bot", None);
    assert_eq!(bot, json!({"preset": "retrieval", "memories": {"turn": 2}}));
    let (_, other) = server.send("GET", "/v1/users/cy/stats?agent=default", None);
    assert_eq!(other["memories"], json!({}), "{other}");
    server.stop().unwrap();
}

#[test]
fn the_root_leads_to_the_inspector_and_unknown_paths_stay_json_404s() {
    let server = Server::start(Server::default_config());
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let root = client.get(server.url("/")).send().unwrap();
    assert_eq!(root.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(root.headers()["location"], "/ui/");
    let followed = server.client.get(server.url("/")).send().unwrap();
    assert_eq!(followed.status(), StatusCode::OK);
    assert!(followed.text().unwrap().contains("<html"));
    for path in ["/nope", "/ui/nope", "/v1"] {
        let (status, body) = server.send("GET", path, None);
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::NOT_FOUND, "not_found"),
            "{path}: {body}"
        );
    }
    server.stop().unwrap();
}

/// A raw HTTP/1.1 POST of `body` under `length`, written whole before anything is read; the
/// status line and the body of the answer.
fn post_whole(server: &Server, length: usize, body: &[u8]) -> (String, Value) {
    use std::io::{Read, Write};
    let addr = server.url("").trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /v1/users/cy/turns HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, json) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_string();
    (status, serde_json::from_str(json).unwrap())
}

#[test]
fn a_client_writing_a_whole_oversized_body_before_reading_gets_the_413() {
    let config = ServerConfig {
        body_limit: ServerConfig::default().body_limit,
        ..Server::default_config()
    };
    let server = Server::start(config);
    let body = vec![b'x'; 10_000_000];
    let (status, error) = post_whole(&server, body.len(), &body);
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert_eq!(error_code(&error), "payload_too_large", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("10000000 bytes"),
        "{error}"
    );
    // Declared far beyond what is worth reading: answered at once, before the body is sent.
    let (status, error) = post_whole(&server, 1 << 30, b"");
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert_eq!(error_code(&error), "payload_too_large", "{error}");
    // The server goes on serving.
    let (status, _) = server.send("GET", "/healthz", None);
    assert_eq!(status, StatusCode::OK);
    server.stop().unwrap();
}

#[test]
fn an_empty_turn_text_is_reported_with_each_prefix_once() {
    let server = Server::start(Server::default_config());
    let (status, error) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["fine", "  "])));
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
        "{error}"
    );
    assert_eq!(
        error["error"]["message"],
        "invalid input: turn 2: turn text is empty"
    );
    server.stop().unwrap();
}

#[test]
fn bad_requests_get_the_error_shape_and_write_nothing() {
    let server = Server::start(Server::default_config());
    let (status, _) = server.send("POST", "/v1/users/cy/turns", Some(turns(&["a first turn"])));
    assert_eq!(status, StatusCode::CREATED);
    let path = "/v1/users/cy/turns";
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        (
            "malformed",
            b"{\"turns\": [".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "invalid utf-8",
            b"{\"turns\":[{\"role\":\"user\",\"text\":\"\xff\xfe\"}]}".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "unknown field",
            br#"{"turns":[{"role":"user","text":"hi","colour":"red"}]}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "wrong type",
            br#"{"turns":[{"role":"user","text":42}]}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "unknown role",
            br#"{"turns":[{"role":"narrator","text":"hi"}]}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "empty text",
            br#"{"turns":[{"role":"user","text":"   "}]}"#.to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        ),
        (
            "no turns",
            br#"{"turns":[]}"#.to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        ),
        (
            "bad time",
            br#"{"turns":[{"role":"user","text":"hi","time":"yesterday"}]}"#.to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        ),
        (
            "too large",
            format!(
                r#"{{"turns":[{{"role":"user","text":"{}"}}]}}"#,
                "x".repeat(100_000)
            )
            .into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
    ];
    for (name, body, status, code) in cases {
        let (got, error) = server.raw(path, body);
        assert_eq!((got, error_code(&error)), (status, code), "{name}: {error}");
        assert!(
            !error["error"]["message"].as_str().unwrap().is_empty(),
            "{name}"
        );
    }
    let (_, wrong_type) = server.raw(path, br#"{"turns":[{"role":"user","text":42}]}"#.to_vec());
    assert!(
        wrong_type["error"]["message"]
            .as_str()
            .unwrap()
            .contains("text"),
        "the message names the field: {wrong_type}"
    );
    // A batch with one bad turn is rejected whole.
    let (status, _) = server.raw(
        path,
        br#"{"turns":[{"role":"user","text":"fine"},{"role":"user","text":""}]}"#.to_vec(),
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        total(&server, "cy"),
        1,
        "nothing written by a rejected request"
    );

    for (method, path, code) in [
        ("GET", "/v1/users/cy/memories/not-an-id", "not_found"),
        (
            "GET",
            "/v1/users/cy/memories/01a21276-a2e7-70bf-9179-fc00024c1afc",
            "not_found",
        ),
        ("GET", "/v1/users/nobody/memories", "not_found"),
        ("GET", "/v1/users/cy/views/mood", "not_found"),
        ("GET", "/v2/anything", "not_found"),
        (
            "GET",
            "/v1/users/cy/memories?state=sleepy",
            "invalid_request",
        ),
        ("GET", "/v1/users/cy/memories?limit=0", "invalid_request"),
        ("GET", "/v1/users/cy/memories?cursor=zzz", "invalid_request"),
        ("GET", "/v1/users/cy/memories?colour=red", "invalid_request"),
    ] {
        let (status, error) = server.send(method, path, None);
        assert_eq!(error_code(&error), code, "{method} {path}: {error}");
        assert!(status.is_client_error(), "{method} {path}: {status}");
    }
    let (status, error) = server.send(
        "POST",
        "/v1/users/cy/search",
        Some(json!({"query": "x", "kinds": ["gossip"]})),
    );
    assert_eq!(
        (status, error_code(&error)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input")
    );
    let (status, error) = server.send("PATCH", "/v1/users/cy/memories/x", Some(json!({})));
    assert!(status.is_client_error(), "{error}");
    assert_eq!(total(&server, "cy"), 1);
    server.stop().unwrap();
}

#[test]
fn derived_work_runs_in_the_background_and_never_holds_up_a_request() {
    let config = ServerConfig {
        jobs: Some(mnemos_server::JobWorker {
            interval: Duration::from_millis(50),
            max_backoff: Duration::from_secs(1),
        }),
        ..Server::default_config()
    };
    let server = Server::start_with(config, "memorybank", false);
    let (status, added) = server.send(
        "POST",
        "/v1/users/eve/turns",
        Some(turns(&[
            "I started learning the cello this winter.",
            "My teacher says my bowing is getting smoother.",
            "We are playing a Bach suite at the spring recital.",
        ])),
    );
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["jobs"]["ran"], 0, "nothing runs inside the request");
    let (status, ended) = server.send("POST", "/v1/users/eve/sessions/s1/end?agent=bot", None);
    assert_eq!(status, StatusCode::OK, "{ended}");
    assert_eq!(ended["ran"], 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let summaries = loop {
        let (_, jobs) = server.send("GET", "/v1/users/eve/jobs", None);
        let (_, page) = server.send("GET", "/v1/users/eve/memories?kind=summary", None);
        if jobs.as_array().unwrap().is_empty() && page["total"].as_u64().unwrap() > 0 {
            break page["total"].as_u64().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker did not run the jobs: {jobs}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(summaries >= 1);
    server.stop().unwrap();
}

#[test]
fn turns_another_process_writes_are_found_by_the_server() {
    let server = Server::start(Server::default_config());
    let (status, _) = server.send(
        "POST",
        "/v1/users/fay/turns",
        Some(turns(&["I grow tomatoes."])),
    );
    assert_eq!(status, StatusCode::CREATED);
    // The server has built fay's index; now a second process writes to the same file.
    let (_, before) = server.send(
        "POST",
        "/v1/users/fay/search",
        Some(json!({"query": "violin"})),
    );
    assert!(
        !before["hits"].to_string().contains("violin"),
        "not written yet: {before}"
    );
    let other = engine_on(&server.dir.path().join("m.db"), "retrieval", true);
    let scope = mnemos_core::Scope::new("acme", "fay", "bot", "s9").unwrap();
    other
        .add(vec![mnemos_engine::NewTurn::user(
            scope,
            "I play the violin on Sundays.",
        )])
        .unwrap();
    drop(other);
    let (_, after) = server.send(
        "POST",
        "/v1/users/fay/search",
        Some(json!({"query": "violin"})),
    );
    assert_eq!(
        after["hits"][0]["memory"]["text"], "I play the violin on Sundays.",
        "{after}"
    );
    let (status, added) = server.send(
        "POST",
        "/v1/users/fay/turns",
        Some(turns(&["And the cello."])),
    );
    assert_eq!(status, StatusCode::CREATED);
    let rounds: Vec<u64> = [&added["turns"][0]["round"]]
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect();
    assert_eq!(
        rounds,
        vec![2],
        "rounds continue after the other process's turn"
    );
    server.stop().unwrap();
}

#[test]
fn the_load_benchmark_counts_every_request_and_finds_every_acknowledged_add() {
    let dir = tempfile::tempdir().unwrap();
    let engine = common::engine_on(&dir.path().join("b.db"), "retrieval", false);
    let settings = mnemos_server::bench::BenchSettings {
        users: 3,
        memories: 40,
        clients: 4,
        duration: std::time::Duration::from_millis(600),
        search_share: 0.5,
        overhead_queries: 20,
        tenant: "acme".into(),
    };
    let engine = std::sync::Arc::new(engine);
    let first = mnemos_server::bench::run(vec![engine.clone()], settings.clone()).unwrap();
    assert_eq!(first.adds_stored, first.adds_acknowledged);
    // A second run on the same data adds new turns (its keys are its own).
    let report = mnemos_server::bench::run(vec![engine], settings).unwrap();
    assert_eq!(report.errors, 0, "{:?}", report.first_error);
    assert!(
        report.search.count > 0 && report.add.count > 0,
        "{report:?}"
    );
    assert_eq!(report.requests, report.search.count + report.add.count);
    assert_eq!(report.adds_acknowledged, report.add.count);
    assert_eq!(report.adds_stored, report.adds_acknowledged);
    assert_eq!(report.adds_missing, 0);
    assert!(report.search.p50_ms <= report.search.p99_ms);
    // Every answer carried the server's own split of its time.
    assert_eq!(report.server_search.count, report.search.count);
    assert_eq!(report.server_add.count, report.add.count);
    assert_eq!(report.sequential_server.count, 20);
    let one = &report.sequential_server;
    assert!(
        one.engine_p50_ms > 0.0 && one.engine_p50_ms <= one.total_p50_ms,
        "{one:?}"
    );
    let text = mnemos_server::bench::render(&report);
    assert!(text.contains("requests/s"), "{text}");
    assert!(text.contains("server's own split"), "{text}");
}

#[test]
fn every_answer_says_where_its_time_went() {
    let server = Server::start(Server::default_config());
    let (status, _) = server.send(
        "POST",
        "/v1/users/amy/turns",
        Some(turns(&["I play the violin on Sundays."])),
    );
    assert_eq!(status, StatusCode::CREATED);
    let client = &server.client;
    let search = client
        .post(server.url("/v1/users/amy/search"))
        .json(&json!({"query": "violin"}))
        .send()
        .unwrap();
    let timing = |response: &reqwest::blocking::Response| {
        let header = response.headers().get("server-timing").unwrap();
        mnemos_server::timing::ServerTiming::parse(header.to_str().unwrap()).unwrap()
    };
    let searched = timing(&search);
    assert!(searched.engine_ms > 0.0, "{searched:?}");
    assert!(searched.engine_ms <= searched.blocking_ms, "{searched:?}");
    assert!(searched.blocking_ms <= searched.total_ms, "{searched:?}");
    // A route without engine work is all overhead, and errors are timed too.
    let health = client.get(server.url("/healthz")).send().unwrap();
    assert_eq!(timing(&health).engine_ms, 0.0);
    let missing = client.get(server.url("/v1/nowhere")).send().unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(timing(&missing).total_ms >= 0.0);
    let metrics = client
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(
            "mnemos_http_server_overhead_seconds_count{method=\"POST\",route=\"/v1/users/{user}/search\"} 1"
        ),
        "{metrics}"
    );
    server.stop().unwrap();
}

fn get(server: &Server, path: &str) -> Value {
    let (status, body) = server.send("GET", path, None);
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn bad_request(server: &Server, path: &str) {
    let (status, body) = server.send("GET", path, None);
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_request"),
        "{path}: {body}"
    );
    assert!(body["error"]["message"].as_str().is_some(), "{body}");
}

fn texts(memories: &Value) -> Vec<String> {
    memories
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn inspector_routes_over_http() {
    let server = Server::start_with(Server::default_config(), "memorybank", true);
    let said = [
        ("I drink coffee every morning before work.", "drink", "en"),
        ("我每天早上喝咖啡。", "drink", "zh"),
        ("My sister Mia lives in Berlin.", "family", "en"),
        ("周末我们去咖啡馆看书。", "drink", "zh"),
        ("I started learning the cello.", "hobby", "en"),
    ];
    let body = json!({
        "agent": "bot",
        "session": "s1",
        "turns": said.iter().map(|(text, topic, lang)| json!({
            "role": "user", "text": text, "metadata": {"topic": topic, "lang": lang},
        })).collect::<Vec<_>>(),
    });
    let (status, added) = server.send("POST", "/v1/users/ann/turns", Some(body));
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let turn_ids: Vec<String> = added["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn_id"].as_str().unwrap().to_string())
        .collect();
    let memory_ids: Vec<String> = added["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["memory_id"].as_str().unwrap().to_string())
        .collect();
    let (status, ended) = server.send("POST", "/v1/users/ann/sessions/s1/end?agent=bot", None);
    assert_eq!(status, StatusCode::OK, "{ended}");

    // 1. Overview.
    let overview = get(&server, "/v1/users/ann/overview");
    assert_eq!(overview["user"], "ann");
    assert_eq!(
        (overview["turns"].as_u64(), overview["sessions"].as_u64()),
        (Some(5), Some(1))
    );
    assert_eq!(overview["agents"], json!(["bot"]));
    assert_eq!(
        overview["memories"]["turn"],
        json!({"active": 5, "forgotten": 0})
    );
    assert!(
        overview["memories"]["summary"]["active"].as_u64().unwrap() >= 1,
        "{overview}"
    );
    assert_eq!(
        overview["jobs"],
        json!({"pending": 0, "failed": 0, "stuck": 0})
    );
    assert!(
        overview["last_activity"]["round"].as_u64().unwrap() >= 4,
        "{overview}"
    );

    // 2. Filters, sort, paging.
    let coffee = get(
        &server,
        "/v1/users/ann/memories?kind=turn&q=%E5%92%96%E5%95%A1",
    );
    assert_eq!(coffee["total"], 2, "{coffee}");
    assert!(texts(&coffee["memories"])
        .iter()
        .all(|t| t.contains("咖啡")));
    let upper = get(&server, "/v1/users/ann/memories?kind=turn&q=COFFEE");
    assert_eq!(texts(&upper["memories"]), [said[0].0]);
    let zh_drink = get(
        &server,
        "/v1/users/ann/memories?meta=topic=drink&meta=lang%3Dzh",
    );
    assert_eq!(texts(&zh_drink["memories"]), [said[1].0, said[3].0]);
    let all_turns = get(&server, "/v1/users/ann/memories?kind=turn&sort=newest");
    let newest: Vec<String> = said.iter().rev().map(|s| s.0.to_string()).collect();
    assert_eq!(texts(&all_turns["memories"]), newest);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path =
            "/v1/users/ann/memories?kind=turn&q=%E5%92%96&sort=newest&limit=1".to_string();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page = get(&server, &path);
        assert_eq!(page["total"], 2, "{page}");
        seen.extend(texts(&page["memories"]));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [said[3].0, said[1].0],
        "every match once, newest first"
    );
    let by_importance = get(&server, "/v1/users/ann/memories?sort=importance&state=all");
    assert_eq!(
        by_importance["total"],
        get(&server, "/v1/users/ann/memories?state=all")["total"]
    );
    bad_request(&server, "/v1/users/ann/memories?sort=random");
    bad_request(&server, "/v1/users/ann/memories?meta=novalue");
    bad_request(&server, "/v1/users/ann/memories?q=%20%20");

    // 3. Memory additions.
    let first = get(
        &server,
        &format!("/v1/users/ann/memories/{}", memory_ids[0]),
    );
    assert!(
        first["valid_from"].as_str().unwrap().ends_with('Z'),
        "{first}"
    );
    assert!(first.get("valid_to").is_none());
    assert!(first["scores"]["extra"].is_object(), "{first}");

    // 7. Breakdown on hits; 4. the search lands in the access log.
    let (status, found) = server.send(
        "POST",
        "/v1/users/ann/search",
        Some(json!({"query": "咖啡 coffee", "kinds": ["turn"]})),
    );
    assert_eq!(status, StatusCode::OK, "{found}");
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    for hit in hits {
        let b = &hit["breakdown"];
        let score = hit["score"].as_f64().unwrap();
        assert_eq!(b["final"].as_f64().unwrap(), score, "{hit}");
        let deltas: f64 = b["adjustments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["delta"].as_f64().unwrap())
            .sum();
        let fused = b["fused"].as_f64().unwrap();
        assert!((fused + deltas - score).abs() < 1e-4, "{hit}");
        assert!(
            b.get("lexical").is_some() || b.get("dense").is_some(),
            "{hit}"
        );
    }
    // Searches over HTTP leave no access record; a search that keeps one (the CLI's demo does)
    // runs here in a second process on the same database.
    let other = engine_on(&server.dir.path().join("m.db"), "memorybank", true);
    let mut request = mnemos_engine::SearchRequest::new(
        mnemos_core::UserKey::new("acme", "ann").unwrap(),
        "coffee",
    );
    request.record_access = true;
    for _ in 0..2 {
        assert!(!other.search(&request).unwrap().hits.is_empty());
    }
    drop(other);
    let listed = get(&server, "/v1/users/ann/memories?limit=100");
    let retrieved = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["access_count"].as_u64().unwrap() > 0)
        .unwrap_or_else(|| panic!("a recall records its accesses: {listed}"));
    let top = retrieved["id"].as_str().unwrap();
    let log = get(&server, &format!("/v1/users/ann/memories/{top}/access"));
    assert_eq!(log["total"], retrieved["access_count"], "{log}");
    assert_eq!(
        log["accesses"].as_array().unwrap().len() as u64,
        log["total"].as_u64().unwrap()
    );
    assert!(log["accesses"][0]["rank"].as_u64().unwrap() >= 1, "{log}");
    assert_eq!(retrieved["last_access"], log["accesses"][0]["at"]);

    // 6. A turn among its neighbours.
    let context = get(
        &server,
        &format!("/v1/users/ann/turns/{}?around=1", turn_ids[2]),
    );
    assert_eq!(context["turn"]["text"], said[2].0);
    assert_eq!(context["turn"]["memory_id"], memory_ids[2].as_str());
    assert_eq!(context["turn"]["role"], "user");
    assert_eq!(context["turn"]["metadata"]["topic"], "family");
    assert_eq!(context["before"][0]["text"], said[1].0);
    assert_eq!(context["after"][0]["text"], said[3].0);
    assert_eq!(
        (
            context["before"].as_array().unwrap().len(),
            context["after"].as_array().unwrap().len()
        ),
        (1, 1)
    );
    let edge = get(&server, &format!("/v1/users/ann/turns/{}", turn_ids[0]));
    assert_eq!(
        (
            edge["before"].as_array().unwrap().len(),
            edge["after"].as_array().unwrap().len()
        ),
        (0, 3)
    );
    bad_request(
        &server,
        &format!("/v1/users/ann/turns/{}?around=51", turn_ids[0]),
    );
    bad_request(
        &server,
        &format!("/v1/users/ann/turns/{}?around=-1", turn_ids[0]),
    );
    let (status, _) = server.send("GET", "/v1/users/ann/turns/not-a-turn", None);
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server.send(
        "GET",
        &format!("/v1/users/ann/turns/{}", memory_ids[0]),
        None,
    );
    assert_eq!(status, StatusCode::NOT_FOUND, "a memory id is no turn id");

    // 5. Derived memories, then a forget by request cascading to them.
    let derived = get(
        &server,
        &format!("/v1/users/ann/memories/{}/derived", memory_ids[1]),
    );
    let derived = derived["memories"].as_array().unwrap().clone();
    assert!(
        !derived.is_empty(),
        "the session summary came from every turn"
    );
    assert!(derived.iter().all(|m| m["kind"] != "turn"));
    let summary_id = derived[0]["id"].as_str().unwrap().to_string();
    let none = get(
        &server,
        &format!("/v1/users/ann/memories/{summary_id}/derived"),
    );
    assert_eq!(none["memories"], json!([]));
    for route in ["derived", "access"] {
        let (status, body) =
            server.send("GET", &format!("/v1/users/ann/memories/nope/{route}"), None);
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::NOT_FOUND, "not_found")
        );
    }
    let (status, forgotten) = server.send(
        "DELETE",
        &format!(
            "/v1/users/ann/memories/{}?reason=no%20more%20coffee",
            memory_ids[1]
        ),
        None,
    );
    assert_eq!(status, StatusCode::OK, "{forgotten}");
    let cause = &forgotten["memory"]["forgotten"];
    assert_eq!(cause["by"], "request", "{cause}");
    assert!(
        cause.get("source").is_none() && cause.get("preset").is_none(),
        "{cause}"
    );
    let summary = get(&server, &format!("/v1/users/ann/memories/{summary_id}"));
    assert_eq!(summary["state"], "forgotten");
    assert_eq!(summary["forgotten"]["by"], "derived", "{summary}");
    assert_eq!(summary["forgotten"]["source"], memory_ids[1].as_str());
    let still = get(
        &server,
        &format!("/v1/users/ann/memories/{}/derived", memory_ids[1]),
    );
    assert_eq!(
        still["memories"].as_array().unwrap().len(),
        derived.len(),
        "forgotten ones too"
    );

    // 8. Retention.
    let retention = get(&server, "/v1/users/ann/retention?agent=bot&points=200");
    let series = retention["series"].as_array().unwrap();
    assert!(!series.is_empty());
    let mut before = (0, 0, 0);
    for point in series {
        let (round, created, gone) = (
            point["round"].as_u64().unwrap(),
            point["created"].as_u64().unwrap(),
            point["forgotten"].as_u64().unwrap(),
        );
        assert_eq!(point["active"].as_u64().unwrap(), created - gone, "{point}");
        assert!(
            round >= before.0 && created >= before.1 && gone >= before.2,
            "{retention}"
        );
        before = (round, created, gone);
    }
    assert_eq!(retention["forgotten_by"]["request"], 1, "{retention}");
    assert!(
        retention["forgotten_by"]["derived"].as_u64().unwrap() >= 1,
        "{retention}"
    );
    assert!(retention["last_round"].as_u64().unwrap() >= before.0);
    let thin = get(&server, "/v1/users/ann/retention?points=2");
    assert!(thin["series"].as_array().unwrap().len() <= 2);
    assert_eq!(thin["series"].as_array().unwrap().last(), series.last());
    bad_request(&server, "/v1/users/ann/retention?points=1");
    bad_request(&server, "/v1/users/ann/retention?points=2001");
    let (status, _) = server.send("GET", "/v1/users/nobody/retention", None);
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server.send("GET", "/v1/users/nobody/overview", None);
    assert_eq!(status, StatusCode::NOT_FOUND);
    let after = get(&server, "/v1/users/ann/overview");
    assert_eq!(
        after["memories"]["turn"],
        json!({"active": 4, "forgotten": 1})
    );

    // 9. Views as data.
    let persona = get(&server, "/v1/users/ann/views/persona");
    assert!(persona["data"].is_array(), "{persona}");
    let timeline = get(&server, "/v1/users/ann/views/timeline");
    assert!(timeline["data"].is_array(), "{timeline}");
    let chains = get(&server, "/v1/users/ann/views/chains");
    assert!(chains["data"]["chains"].is_array(), "{chains}");
    assert!(chains["data"]["calibrations"].is_array(), "{chains}");
    server.stop().unwrap();
}

/// A user turn at a given time, for the default preset's write path.
fn said_at(text: &str, time: &str) -> Value {
    json!({"agent": "bot", "session": "s1", "turns": [{"role": "user", "text": text, "time": time}]})
}

#[test]
fn what_is_true_now_over_http() {
    let server = Server::start_with(Server::default_config(), "default", true);
    let path = |route: &str| format!("/v1/users/ann/{route}");
    let (status, first) = server.send(
        "POST",
        &path("turns"),
        Some(said_at("I live in Tallinn.", "2024-01-10T09:00:00Z")),
    );
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, second) = server.send(
        "POST",
        &path("turns"),
        Some(said_at(
            "Big news: I just moved, and I live in Porto now.",
            "2024-06-01T09:00:00Z",
        )),
    );
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let kinds: Vec<&str> = second["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"superseded") && kinds.contains(&"turn_superseded"),
        "{second}"
    );

    // Now: only what holds.
    let query = |extra: Value| {
        let mut body = json!({"query": "Where do I live?"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.send("POST", &path("search"), Some(body))
    };
    let (status, now) = query(json!({}));
    assert_eq!(status, StatusCode::OK, "{now}");
    let texts = |hits: &Value| -> Vec<String> {
        hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["memory"]["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(texts(&now).iter().any(|t| t.contains("Porto")), "{now}");
    assert!(texts(&now).iter().all(|t| !t.contains("Tallinn")), "{now}");
    // Asked for, the superseded memories come after the current ones, marked.
    let (_, all) = query(json!({"include_superseded": true}));
    let hits = all["hits"].as_array().unwrap();
    let stale = hits
        .iter()
        .position(|h| h["superseded"] == true)
        .expect("a superseded hit");
    assert!(
        hits[stale..].iter().all(|h| h["superseded"] == true),
        "{all}"
    );
    assert!(hits[stale]["memory"]["superseded_by"].is_string());
    assert!(hits[stale]["memory"]["valid_to"].is_string());
    // The past, from valid time.
    let (_, then) = query(json!({"as_of": "2024-03-01"}));
    assert!(texts(&then).iter().any(|t| t.contains("Tallinn")), "{then}");
    assert!(texts(&then).iter().all(|t| !t.contains("Porto")), "{then}");
    let (status, body) = server.send("POST", &path("recall"), Some(json!({"query": "Which city did I live in?", "agent": "bot", "as_of": "2024-03-01T00:00:00Z"})));
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["text"].as_str().unwrap().contains("Tallinn"), "{body}");
    // Listings filter by valid time too.
    let listed = |q: &str| {
        let page = get(&server, &format!("{}?kind=turn{q}", path("memories")));
        let memories = page["memories"].as_array().unwrap();
        memories
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(listed("").len(), 2);
    assert!(listed("&current=true")
        .iter()
        .all(|t| !t.contains("Tallinn")));
    assert!(listed("&as_of=2024-03-01")
        .iter()
        .all(|t| t.contains("Tallinn")));

    // Bad moments are refused, naming the field; nothing is read differently.
    for body in [
        json!({"as_of": "yesterday"}),
        json!({"as_of": "2024-13-40"}),
    ] {
        let (status, error) = query(body);
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("as_of"),
            "{error}"
        );
    }
    bad_request(&server, &format!("{}?as_of=soon", path("memories")));
    let (status, error) = server.send(
        "POST",
        &path("recall"),
        Some(json!({"query": "x", "as_of": 5})),
    );
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");

    // A forget request in dialogue erases what it names and leaves a tombstone.
    server.send(
        "POST",
        &path("turns"),
        Some(said_at(
            "My passport number is X4417902.",
            "2024-07-01T09:00:00Z",
        )),
    );
    let (_, found) = server.send(
        "POST",
        &path("search"),
        Some(json!({"query": "passport number"})),
    );
    assert!(
        texts(&found).iter().any(|t| t.contains("X4417902")),
        "{found}"
    );
    server.send(
        "POST",
        &path("turns"),
        Some(said_at(
            "Please forget my passport number.",
            "2024-07-02T09:00:00Z",
        )),
    );
    for q in ["passport number", "X4417902", "What is my passport number?"] {
        let (_, hits) = server.send("POST", &path("search"), Some(json!({"query": q})));
        assert!(
            texts(&hits).iter().all(|t| !t.contains("X4417902")),
            "{q}: {hits}"
        );
    }
    let (_, context) = server.send(
        "POST",
        &path("recall"),
        Some(json!({"query": "What is my passport number?", "agent": "bot"})),
    );
    let text = context["text"].as_str().unwrap();
    assert!(
        !text.contains("X4417902") && text.contains("the user asked to forget"),
        "{text}"
    );
}

#[test]
fn an_unrelated_query_gets_nothing_and_every_hit_says_how_relevant_it_is() {
    let server = Server::start_with(Server::default_config(), "default", true);
    let path = |route: &str| format!("/v1/users/dee/{route}");
    for (i, text) in [
        "User prefers dark mode.",
        "My sister lives in Berlin.",
        "我对花生过敏。",
    ]
    .iter()
    .enumerate()
    {
        let (status, body) = server.send(
            "POST",
            &path("turns"),
            Some(said_at(text, &format!("2024-01-1{i}T09:00:00Z"))),
        );
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let search = |body: Value| server.send("POST", &path("search"), Some(body));

    let (status, found) = search(json!({"query": "Does the user like dark mode?"}));
    assert_eq!(status, StatusCode::OK, "{found}");
    let best = &found["hits"][0];
    assert_eq!(best["memory"]["text"], "User prefers dark mode.", "{found}");
    let relevance = best["relevance"].as_f64().unwrap();
    assert!(relevance > 0.003 && relevance <= 1.0, "{found}");
    assert_eq!(
        best["breakdown"]["relevance"]["probability"],
        best["relevance"]
    );
    assert!(
        best["breakdown"]["relevance"]["features"].is_array(),
        "{found}"
    );

    // Nothing the user said: nothing back, over search and recall.
    for query in ["quantum chromodynamics research papers", "怎么给自行车补胎"] {
        let (status, none) = search(json!({ "query": query }));
        assert_eq!(status, StatusCode::OK, "{none}");
        assert_eq!(none["hits"], json!([]), "{query}: {none}");
        let (status, context) = server.send(
            "POST",
            &path("recall"),
            Some(json!({"query": query, "agent": "bot"})),
        );
        assert_eq!(status, StatusCode::OK, "{context}");
        assert_eq!(context["items"], json!([]), "{query}: {context}");
    }
    // A floor of 0 keeps every hit, each with its (low) relevance.
    let (_, open) =
        search(json!({"query": "quantum chromodynamics research papers", "min_relevance": 0.0}));
    let hits = open["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{open}");
    assert!(
        hits.iter()
            .all(|h| h["relevance"].as_f64().unwrap() < 0.003),
        "{open}"
    );

    // A floor outside [0, 1], or not a number, is refused naming the field.
    for floor in [json!(-0.5), json!(1.5), json!("high")] {
        for route in ["search", "recall"] {
            let (status, error) = server.send(
                "POST",
                &path(route),
                Some(json!({"query": "dark mode", "min_relevance": floor})),
            );
            assert_eq!(status, StatusCode::BAD_REQUEST, "{route} {floor}: {error}");
            assert!(
                error["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("min_relevance"),
                "{route} {floor}: {error}"
            );
        }
    }
}

/// The memories of `user` in `state` (`active`, `forgotten`).
fn memories_in(server: &Server, user: &str, state: &str) -> Vec<Value> {
    let (status, page) = server.send(
        "GET",
        &format!("/v1/users/{user}/memories?state={state}&limit=1000"),
        None,
    );
    assert_eq!(status, StatusCode::OK, "{page}");
    page["memories"].as_array().unwrap().clone()
}

#[test]
fn forgetting_by_description_lists_first_then_forgets_what_it_listed() {
    let server = Server::start_with(Server::default_config(), "default", true);
    for (user, texts) in [
        (
            "ann",
            &[
                "I live in Tallinn.",
                "I just moved, I live in Porto now.",
                "My sister Mia is allergic to peanuts.",
            ][..],
        ),
        ("bob", &["I live in Porto too."][..]),
    ] {
        let (status, body) = server.send(
            "POST",
            &format!("/v1/users/{user}/turns"),
            Some(turns(texts)),
        );
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let forget = |body: Value| server.send("POST", "/v1/users/ann/forget", Some(body));
    let active_before = memories_in(&server, "ann", "active").len();

    // A dry run: what would go, nothing written.
    let (status, shown) = forget(json!({"query": "my old address"}));
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["confirmed"], false);
    let candidates = shown["candidates"].as_array().unwrap();
    let texts: Vec<&str> = candidates
        .iter()
        .map(|c| c["memory"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{shown}");
    assert!(texts
        .iter()
        .all(|t| t.contains("Tallinn") || t.contains("Porto")));
    assert!(
        candidates.iter().any(|c| c["superseded"] == true),
        "{shown}"
    );
    assert!(candidates
        .iter()
        .all(|c| c["memory"]["state"] == "active" && c["selected_by"].is_string()));
    assert!(
        shown["derived"].as_u64().unwrap() >= 2,
        "the facts go too: {shown}"
    );
    assert_eq!(memories_in(&server, "ann", "active").len(), active_before);

    // Confirmed with the ids it listed: those go, with what was derived from them.
    let ids: Vec<&str> = candidates
        .iter()
        .map(|c| c["memory"]["id"].as_str().unwrap())
        .collect();
    let (status, done) = forget(json!({
        "query": "my old address", "confirm": true, "ids": ids, "reason": "asked by the user",
    }));
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["confirmed"], true);
    assert_eq!(done["skipped"], json!([]));
    for candidate in done["candidates"].as_array().unwrap() {
        assert_eq!(candidate["memory"]["state"], "forgotten", "{done}");
        assert_eq!(
            candidate["memory"]["forgotten"]["reason"],
            "asked by the user"
        );
    }
    let forgotten = memories_in(&server, "ann", "forgotten");
    assert_eq!(
        forgotten.len() as u64,
        2 + done["derived"].as_u64().unwrap(),
        "{forgotten:?}"
    );
    let left: Vec<String> = memories_in(&server, "ann", "active")
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert!(left.iter().any(|t| t.contains("peanuts")), "{left:?}");
    assert!(left
        .iter()
        .all(|t| !t.contains("Porto") && !t.contains("Tallinn")));
    // Another user's memories are not touched, even the same words.
    assert!(memories_in(&server, "bob", "forgotten").is_empty());
    // Nothing left to forget; a confirmed run that selects nothing writes nothing.
    let (status, again) = forget(json!({"query": "my old address", "confirm": true}));
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (again["confirmed"].clone(), again["candidates"].clone()),
        (json!(false), json!([]))
    );

    // The caller's mistakes, named; nothing written.
    for (body, status, field) in [
        (
            json!({"query": " "}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "query",
        ),
        (
            json!({"query": "peanuts", "limit": 0}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "limit",
        ),
        (
            json!({"query": "peanuts", "limit": 101}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "limit",
        ),
        (
            json!({"query": "peanuts", "ids": ["nope"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "ids",
        ),
        (
            json!({"query": "peanuts", "ids": []}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "ids",
        ),
        (
            json!({"query": "peanuts", "confirm": "yes"}),
            StatusCode::BAD_REQUEST,
            "confirm",
        ),
        (
            json!({"query": "peanuts", "colour": 1}),
            StatusCode::BAD_REQUEST,
            "colour",
        ),
        (
            json!({"query": "peanuts", "min_relevance": 2}),
            StatusCode::BAD_REQUEST,
            "min_relevance",
        ),
    ] {
        let (got, error) = forget(body.clone());
        assert_eq!(got, status, "{body}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{body}: {message}");
    }
    assert!(memories_in(&server, "ann", "active")
        .iter()
        .any(|m| m["text"].as_str().unwrap().contains("peanuts")));
}
