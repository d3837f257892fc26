//! The OpenAPI document: valid OpenAPI 3.1 by an external validator, equal to the checked-in
//! snapshot (so an API change is a visible diff), describing exactly the routes the router
//! serves, with the answers and parameters each route can give, and served at /openapi.json.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use reqwest::StatusCode;
use serde_json::Value;

use common::Server;
use mnemos_server::openapi::document;
use mnemos_server::openapi::routes;
use mnemos_server::MAX_TURNS_PER_REQUEST;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

const UPDATE: &str = "UPDATE_SNAPSHOTS=1 cargo test --release -p mnemos-server --test openapi";

fn pretty() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap();
    text.push('\n');
    text
}

fn doc() -> Value {
    serde_json::to_value(document()).unwrap()
}

/// (METHOD, path) → operation, for every operation of the document.
fn operations(doc: &Value) -> BTreeMap<(String, String), Value> {
    let mut found = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if METHODS.contains(&method.as_str()) {
                found.insert((method.to_uppercase(), path.clone()), operation.clone());
            }
        }
    }
    found
}

fn statuses(operation: &Value) -> BTreeSet<u16> {
    operation["responses"]
        .as_object()
        .unwrap()
        .keys()
        .map(|s| s.parse().unwrap())
        .collect()
}

#[test]
fn the_document_matches_its_snapshot() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/openapi.json");
    let actual = pretty();
    if std::env::var("UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nwrite it with `{UPDATE}` and commit it",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    let context = |text: &str| {
        text.lines()
            .skip(first.saturating_sub(3))
            .take(7)
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "the OpenAPI document differs from {} from line {}:\n--- snapshot\n{}\n--- now\n{}\n\
         If the API change is intended, run `{UPDATE}` and commit the file with the change.",
        path.display(),
        first + 1,
        context(&expected),
        context(&actual),
    );
}

#[test]
fn the_document_passes_an_openapi_validator() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, pretty()).unwrap();
    let output = Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run python3 ({e}); the validator needs Python 3 and \
                 `python3 -m pip install openapi-spec-validator`"
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named"),
        "the OpenAPI validator is not installed: run `python3 -m pip install \
         openapi-spec-validator`\n{stderr}"
    );
    assert!(
        output.status.success(),
        "openapi-spec-validator rejected the document ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert_eq!(doc()["openapi"], "3.1.0");
}

/// Each route is named in exactly one place in the server's source: its handler's
/// `#[utoipa::path]`, from which both the router and this document are built
/// (`routes::table`). A path written anywhere else in `src/` as a string (a second list of
/// routes, a hand-written `.route(...)`) fails here, and so does a route the table does not
/// serve: every operation of the document must own one `path = "..."` of its own.
#[test]
fn every_route_is_named_once_in_the_source() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut text = String::new();
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut per_path: BTreeMap<String, usize> = BTreeMap::new();
    for (_, path) in routes() {
        *per_path.entry(path).or_default() += 1;
    }
    for (path, operations) in per_path {
        let quoted = format!("\"{path}\"");
        let anywhere = text.matches(&quoted).count();
        let declared = text.matches(&format!("path = {quoted}")).count();
        assert_eq!(
            (anywhere, declared),
            (operations, operations),
            "{path}: {operations} operation(s) in the document, but the string appears \
             {anywhere} time(s) in src/ ({declared} as `path = ...`); a route is named once, \
             in its handler's #[utoipa::path]"
        );
    }
    let served = routes();
    let unique: BTreeSet<_> = served.iter().collect();
    assert_eq!(unique.len(), served.len(), "a route is listed twice");
}

/// Every listed route is served with its method: each answers (with whatever error an empty
/// request gets) under its own route pattern, which the metrics record.
#[test]
fn every_listed_route_is_served() {
    let server = Server::start(Server::default_config());
    for (method, path) in routes() {
        let concrete = path
            .split('/')
            .map(|part| if part.starts_with('{') { "x" } else { part })
            .collect::<Vec<_>>()
            .join("/");
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        server
            .client
            .request(method, server.url(&concrete))
            .send()
            .unwrap();
    }
    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    // mnemos_http_requests_total{method="GET",route="/v1/users",status="200"} 1
    let answered: BTreeSet<(String, String)> = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("mnemos_http_requests_total{"))
        .filter_map(|labels| {
            // Route patterns hold braces too: the labels end at the last one.
            let (labels, _) = labels.rsplit_once('}')?;
            let label = |name: &str| {
                labels
                    .split(',')
                    .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                    .map(|v| v.trim_end_matches('"').to_string())
            };
            let status = label("status")?;
            (status != "405").then_some((label("method")?, label("route")?))
        })
        .collect();
    for (method, path) in routes() {
        assert!(
            answered.contains(&(method.clone(), path.clone())),
            "{method} {path} is in the document but not served (no handler, or another \
             method):\n{metrics}"
        );
    }
    server.stop().unwrap();
}

#[test]
fn the_document_is_served_without_a_key() {
    let (server, _secrets) =
        Server::start_keyed(Server::default_config(), "retrieval", true, &["acme"]);
    let (status, _) = server.send("GET", "/v1/users", None);
    assert_eq!(status, StatusCode::UNAUTHORIZED, "keys are required here");
    let response = server
        .client
        .get(server.url("/openapi.json"))
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let served: Value = response.json().unwrap();
    assert_eq!(served, doc());
    server.stop().unwrap();
}

#[test]
fn every_operation_is_described_and_v1_needs_a_key() {
    let doc = doc();
    assert_eq!(doc["info"]["title"], "mnemos");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let scheme = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    let mut ids = BTreeSet::new();
    for ((method, path), operation) in operations(&doc) {
        let at = format!("{method} {path}");
        for field in ["summary", "description", "operationId"] {
            let text = operation[field].as_str().unwrap_or_default();
            assert!(!text.is_empty(), "{at}: no {field}");
        }
        assert!(
            !operation["summary"].as_str().unwrap().contains('\n'),
            "{at}: the summary is one line"
        );
        assert!(
            ids.insert(operation["operationId"].to_string()),
            "{at}: operationId used twice"
        );
        assert!(operation["tags"].as_array().is_some(), "{at}: no tag");
        let security = &operation["security"];
        if path.starts_with("/v1/") {
            assert_eq!(
                security,
                &serde_json::json!([{"bearer": []}]),
                "{at}: /v1 routes need the API key"
            );
        } else {
            assert!(security.is_null(), "{at} needs no key");
        }
        if path.starts_with("/v1/keys") {
            let description = operation["description"].as_str().unwrap();
            let words = description.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("the admin key"), "{at}: {description}");
        }
    }
}

#[test]
fn every_operation_lists_the_errors_it_can_answer() {
    let doc = doc();
    for ((method, path), operation) in operations(&doc) {
        let at = format!("{method} {path}");
        let statuses = statuses(&operation);
        assert!(
            statuses.iter().any(|s| (200..300).contains(s)),
            "{at}: no success answer"
        );
        let mut required: BTreeSet<u16> = BTreeSet::new();
        if path.starts_with("/v1/") {
            // The key check, a failed service, a down dependency, the time limit.
            required.extend([401, 500, 503, 504]);
        }
        if path.starts_with("/v1/users/") {
            // A path segment that is not UTF-8, a forbidden key, a name against the rules.
            required.extend([400, 403, 422]);
        }
        if !operation["requestBody"].is_null() {
            required.extend([400, 413]);
        }
        if path.contains("/{id}") || path.ends_with("/{view}") {
            required.insert(404);
        }
        let missing: Vec<_> = required.difference(&statuses).collect();
        assert!(missing.is_empty(), "{at}: no {missing:?} answer");
        for (status, response) in operation["responses"].as_object().unwrap() {
            if status.starts_with('4') || status.starts_with('5') {
                let reference = response["$ref"].as_str().unwrap_or_default();
                assert!(
                    reference.starts_with("#/components/responses/"),
                    "{at} {status}: errors use the shared error answers: {response}"
                );
            }
        }
    }
    // Every shared error answer is the one error shape, whose codes are ErrorCode's names.
    for (name, response) in doc["components"]["responses"].as_object().unwrap() {
        let schema = &response["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(schema, "#/components/schemas/ErrorBody", "{name}");
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["ErrorDetail"]["properties"]["code"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
    let codes: BTreeSet<&str> = schemas["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for code in [
        mnemos_server::ErrorCode::InvalidRequest,
        mnemos_server::ErrorCode::PayloadTooLarge,
        mnemos_server::ErrorCode::Internal,
    ] {
        let name = serde_json::to_value(code).unwrap();
        assert!(codes.contains(name.as_str().unwrap()), "{name}");
    }
}

#[test]
fn path_parameters_match_the_path_templates() {
    for ((method, path), operation) in operations(&doc()) {
        let in_template: BTreeSet<String> = path
            .split('/')
            .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
            .map(str::to_string)
            .collect();
        let documented: BTreeSet<String> = operation["parameters"]
            .as_array()
            .map(|params| {
                params
                    .iter()
                    .filter(|p| p["in"] == "path")
                    .map(|p| p["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(in_template, documented, "{method} {path}");
    }
}

#[test]
fn the_documented_limits_are_the_servers() {
    let doc = doc();
    let add = &operations(&doc)[&("POST".to_string(), "/v1/users/{user}/turns".to_string())];
    let header = add["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .expect("the Idempotency-Key header is documented");
    assert_eq!(header["in"], "header");
    assert_eq!(header["required"], false);
    assert!(statuses(add).contains(&201));
    assert!(statuses(add).contains(&409));
    let turns = &doc["components"]["schemas"]["AddTurnsRequest"]["properties"]["turns"];
    assert_eq!(turns["maxItems"], MAX_TURNS_PER_REQUEST);
    assert_eq!(turns["minItems"], 1);
    let list = &operations(&doc)[&("GET".to_string(), "/v1/users/{user}/memories".to_string())];
    let limit = list["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(limit["schema"]["maximum"], mnemos_core::Page::MAX_LIMIT);
}

/// Checks answers against the document: each status is documented for its operation, and a
/// JSON body validates against the documented schema (OpenAPI 3.1's JSON Schema dialect).
const CONFORMANCE: &str = r#"
import json, sys
from openapi_schema_validator import OAS31Validator

doc = json.load(open(sys.argv[1]))
samples = json.load(open(sys.argv[2]))
failures = []
for s in samples:
    at = f"{s['method']} {s['path']} -> {s['status']}"
    operation = doc["paths"].get(s["path"], {}).get(s["method"].lower())
    if operation is None:
        failures.append(f"{at}: no such operation")
        continue
    response = operation["responses"].get(str(s["status"]))
    if response is None:
        failures.append(f"{at}: status not documented")
        continue
    ref = response.get("$ref")
    if ref:
        response = doc["components"]["responses"][ref.split("/")[-1]]
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if s["body"] is None or schema is None:
        continue
    validator = OAS31Validator({**schema, "components": doc["components"]})
    for error in validator.iter_errors(s["body"]):
        failures.append(f"{at}: {error.message} at {list(error.absolute_path)}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(samples)} answers conform")
"#;

/// One answer: the operation (method, path template), the status and the JSON body.
struct Samples(Vec<Value>);

impl Samples {
    fn record(
        &mut self,
        server: &Server,
        key: Option<&str>,
        (method, template): (&str, &str),
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, answer) = server.send_as(key, method, path, body);
        self.0.push(serde_json::json!({
            "method": method, "path": template, "status": status.as_u16(), "body": answer,
        }));
        (status, answer)
    }
}

/// Real answers of every operation (successes and errors) match the document: a handler whose
/// `#[utoipa::path]` names the wrong body or misses a status fails here.
#[test]
fn real_answers_conform_to_the_document() {
    use serde_json::json;
    const ADMIN: &str = "an-admin-key-of-at-least-32-characters";
    let config = mnemos_server::ServerConfig {
        admin_key: Some(ADMIN.into()),
        ..Server::default_config()
    };
    let server = Server::start(config);
    let mut s = Samples(Vec::new());
    let admin = Some(ADMIN);
    let (status, made) = s.record(
        &server,
        admin,
        ("POST", "/v1/keys"),
        "/v1/keys",
        Some(json!({"tenant": "acme", "name": "app"})),
    );
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let secret = made["secret"].as_str().unwrap().to_string();
    let key_id = made["id"].as_str().unwrap().to_string();
    let key = Some(secret.as_str());
    s.record(
        &server,
        admin,
        ("GET", "/v1/keys"),
        "/v1/keys?tenant=acme",
        None,
    );
    s.record(
        &server,
        admin,
        ("POST", "/v1/keys"),
        "/v1/keys",
        Some(json!({"tenant": ""})),
    );
    s.record(&server, key, ("GET", "/v1/keys"), "/v1/keys", None);
    s.record(&server, admin, ("GET", "/v1/users"), "/v1/users", None);
    s.record(&server, None, ("GET", "/v1/users"), "/v1/users", None);
    s.record(&server, key, ("GET", "/v1/presets"), "/v1/presets", None);

    let turns = ("POST", "/v1/users/{user}/turns");
    let said = json!({"agent": "companion", "session": "s1", "turns": [
        {"role": "user", "text": "My sister Mia is allergic to peanuts.", "key": "t1",
         "time": "2024-05-01T09:30:00Z", "metadata": {"source": "chat"}},
        {"role": "assistant", "text": "I will remember that.", "speaker": "Bot", "key": "t2"},
    ]});
    let (status, added) = s.record(
        &server,
        key,
        turns,
        "/v1/users/lena/turns",
        Some(said.clone()),
    );
    assert_eq!(status, StatusCode::CREATED, "{added}");
    s.record(&server, key, turns, "/v1/users/lena/turns", Some(said));
    s.record(
        &server,
        key,
        turns,
        "/v1/users/lena/turns",
        Some(json!({"turns": [{"role": "user", "text": "other", "key": "t1"}]})),
    );
    s.record(
        &server,
        key,
        turns,
        "/v1/users/lena/turns",
        Some(json!({"turns": []})),
    );
    s.record(
        &server,
        key,
        turns,
        "/v1/users/lena/turns",
        Some(json!({"turns": [{"text": 42}]})),
    );
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/recall"),
        "/v1/users/lena/recall",
        Some(json!({"query": "What should I cook for Mia?", "agent": "companion"})),
    );
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/recall"),
        "/v1/users/lena/recall",
        Some(json!({"query": "x".repeat(70 * 1024)})),
    );
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/search"),
        "/v1/users/lena/search",
        Some(json!({"query": "peanuts", "kinds": ["turn"], "top_k": 5})),
    );
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/search"),
        "/v1/users/lena/search",
        Some(json!({"query": "peanuts", "kinds": ["nonsense"]})),
    );

    let forget = ("POST", "/v1/users/{user}/forget");
    s.record(
        &server,
        key,
        forget,
        "/v1/users/lena/forget",
        Some(json!({"query": "my sister's peanut allergy", "limit": 5})),
    );
    s.record(
        &server,
        key,
        forget,
        "/v1/users/lena/forget",
        Some(json!({"query": "peanuts", "confirm": true, "ids": ["nope"]})),
    );
    s.record(
        &server,
        key,
        forget,
        "/v1/users/lena/forget",
        Some(json!({"query": "peanuts", "confirm": 1})),
    );

    let list = ("GET", "/v1/users/{user}/memories");
    let (_, page) = s.record(&server, key, list, "/v1/users/lena/memories?limit=1", None);
    assert!(page["next_cursor"].is_string(), "{page}");
    s.record(
        &server,
        key,
        list,
        "/v1/users/lena/memories?state=all&kind=turn",
        None,
    );
    s.record(
        &server,
        key,
        list,
        "/v1/users/lena/memories?colour=red",
        None,
    );
    s.record(&server, key, list, "/v1/users/nobody/memories", None);
    let id = page["memories"][0]["id"].as_str().unwrap().to_string();
    let memory = ("GET", "/v1/users/{user}/memories/{id}");
    let one = format!("/v1/users/lena/memories/{id}");
    s.record(&server, key, memory, &one, None);
    s.record(&server, key, memory, "/v1/users/lena/memories/nope", None);
    s.record(
        &server,
        key,
        ("PATCH", "/v1/users/{user}/memories/{id}"),
        &one,
        Some(json!({"text": "Mia, my sister, is allergic to peanuts."})),
    );
    s.record(
        &server,
        key,
        ("DELETE", "/v1/users/{user}/memories/{id}"),
        &format!("{one}?reason=asked"),
        None,
    );
    s.record(&server, key, memory, &one, None);
    s.record(
        &server,
        key,
        ("GET", "/v1/users/{user}/memories/{id}/history"),
        &format!("{one}/history"),
        None,
    );
    for route in ["access", "derived"] {
        let template = format!("/v1/users/{{user}}/memories/{{id}}/{route}");
        s.record(
            &server,
            key,
            ("GET", &template),
            &format!("{one}/{route}"),
            None,
        );
        s.record(
            &server,
            key,
            ("GET", &template),
            &format!("/v1/users/lena/memories/nope/{route}"),
            None,
        );
    }
    let list_page = ("GET", "/v1/users/{user}/memories");
    s.record(
        &server,
        key,
        list_page,
        "/v1/users/lena/memories?q=Mia&sort=newest&meta=source=chat&state=all",
        None,
    );
    s.record(
        &server,
        key,
        list_page,
        "/v1/users/lena/memories?sort=sideways",
        None,
    );
    let turn = ("GET", "/v1/users/{user}/turns/{id}");
    let turn_id = added["turns"][1]["turn_id"].as_str().unwrap();
    s.record(
        &server,
        key,
        turn,
        &format!("/v1/users/lena/turns/{turn_id}?around=2"),
        None,
    );
    s.record(
        &server,
        key,
        turn,
        &format!("/v1/users/lena/turns/{turn_id}?around=99"),
        None,
    );
    s.record(&server, key, turn, "/v1/users/lena/turns/nope", None);
    let overview = ("GET", "/v1/users/{user}/overview");
    s.record(&server, key, overview, "/v1/users/lena/overview", None);
    s.record(&server, key, overview, "/v1/users/nobody/overview", None);
    let retention = ("GET", "/v1/users/{user}/retention");
    s.record(
        &server,
        key,
        retention,
        "/v1/users/lena/retention?agent=companion&points=10",
        None,
    );
    s.record(
        &server,
        key,
        retention,
        "/v1/users/lena/retention?points=0",
        None,
    );
    s.record(
        &server,
        key,
        ("GET", "/v1/users/{user}/stats"),
        "/v1/users/lena/stats?agent=companion",
        None,
    );
    s.record(
        &server,
        key,
        ("GET", "/v1/users/{user}/jobs"),
        "/v1/users/lena/jobs",
        None,
    );
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/jobs/{id}/retry"),
        "/v1/users/lena/jobs/nope/retry",
        None,
    );
    let view = ("GET", "/v1/users/{user}/views/{view}");
    s.record(&server, key, view, "/v1/users/lena/views/persona", None);
    s.record(
        &server,
        key,
        view,
        "/v1/users/lena/views/timeline?agent=companion",
        None,
    );
    s.record(&server, key, view, "/v1/users/lena/views/mood", None);
    s.record(&server, key, view, "/v1/users/lena/views/chains", None);
    s.record(
        &server,
        key,
        ("POST", "/v1/users/{user}/sessions/{session}/end"),
        "/v1/users/lena/sessions/s1/end?agent=companion",
        None,
    );
    s.record(
        &server,
        key,
        ("DELETE", "/v1/users/{user}"),
        "/v1/users/lena",
        None,
    );
    s.record(
        &server,
        key,
        ("DELETE", "/v1/users/{user}"),
        "/v1/users/lena",
        None,
    );
    s.record(
        &server,
        admin,
        ("DELETE", "/v1/keys/{id}"),
        &format!("/v1/keys/{key_id}"),
        None,
    );
    s.record(
        &server,
        admin,
        ("DELETE", "/v1/keys/{id}"),
        "/v1/keys/nope",
        None,
    );
    s.record(&server, None, ("GET", "/healthz"), "/healthz", None);
    s.record(&server, None, ("GET", "/readyz"), "/readyz", None);
    s.record(
        &server,
        None,
        ("GET", "/openapi.json"),
        "/openapi.json",
        None,
    );
    server.stop().unwrap();

    // Every operation answered at least once.
    let answered: BTreeSet<(String, String)> =
        s.0.iter()
            .map(|a| {
                (
                    a["method"].as_str().unwrap().into(),
                    a["path"].as_str().unwrap().into(),
                )
            })
            .collect();
    for (method, path) in routes() {
        if path != "/metrics" {
            let operation = (method.clone(), path.clone());
            assert!(
                answered.contains(&operation),
                "{method} {path} not exercised"
            );
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let doc_file = dir.path().join("openapi.json");
    let samples_file = dir.path().join("answers.json");
    std::fs::write(&doc_file, pretty()).unwrap();
    std::fs::write(&samples_file, serde_json::to_string(&s.0).unwrap()).unwrap();
    let output = Command::new("python3")
        .args(["-c", CONFORMANCE])
        .arg(&doc_file)
        .arg(&samples_file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e})"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named"),
        "the OpenAPI validator is not installed: run `python3 -m pip install \
         openapi-spec-validator`\n{stderr}"
    );
    assert!(
        output.status.success(),
        "answers that do not match the document:\n{stdout}\n{stderr}"
    );
}
