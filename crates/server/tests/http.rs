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

    let (status, cat) = server.send(
        "POST",
        "/v1/users/ann/search",
        Some(json!({"query": "小白"})),
    );
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
        ("GET", "/v1/users/cy/memories?agent=", None),
        ("GET", "/v1/users/cy/memories?session=", None),
        ("GET", "/v1/users/cy/stats?agent=", None),
        ("GET", "/v1/users/cy/views/persona?agent=", None),
    ];
    for (method, path, body) in cases {
        let (status, error) = server.send(method, path, body.clone());
        assert_eq!(
            (status, error_code(&error)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
            "{method} {path} {body:?}: {error}"
        );
    }
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
        ("GET", "/v1/users/cy/memories?state=sleepy", "invalid_input"),
        ("GET", "/v1/users/cy/memories?limit=0", "invalid_input"),
        ("GET", "/v1/users/cy/memories?cursor=zzz", "invalid_input"),
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
    assert!(report.search.p50_ms <= report.search.p99_ms);
    let text = mnemos_server::bench::render(&report);
    assert!(text.contains("requests/s"), "{text}");
}
