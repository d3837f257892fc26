//! API keys over HTTP: who gets in (401 otherwise), what the admin key may do (403 otherwise),
//! revocation, keys made while the server runs, and the loopback-only rule without keys.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use common::{engine_on, Server};
use mnemos_server::{ServerConfig, ServerError};

const ADMIN: &str = "admin-0123456789abcdef0123456789abcdef";

fn add(server: &Server, key: Option<&str>, user: &str, text: &str) -> (StatusCode, Value) {
    server.send_as(
        key,
        "POST",
        &format!("/v1/users/{user}/turns"),
        Some(json!({"turns": [{"role": "user", "text": text}]})),
    )
}

fn assert_error(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], code, "{}", answer.1);
}

#[test]
fn requests_need_a_valid_key_once_keys_exist() {
    let config = Server::default_config();
    let (server, keys) = Server::start_keyed(config, "retrieval", true, &["acme"]);
    let key = keys[0].as_str();
    assert_eq!(
        add(&server, Some(key), "ann", "I play the cello").0,
        StatusCode::CREATED
    );

    assert_error(
        &add(&server, None, "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let unknown = format!("mnk_{}", "0".repeat(64));
    assert_error(
        &add(&server, Some(&unknown), "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_error(
        &add(&server, Some("not-a-key"), "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // Another scheme than Bearer.
    let response = server
        .client
        .get(server.url("/v1/users"))
        .header("authorization", format!("Basic {key}"))
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // Nothing was written by a refused request.
    let (_, page) = server.send_as(Some(key), "GET", "/v1/users/ann/memories", None);
    assert_eq!(page["total"], 1, "{page}");
    // Health checks stay open for load balancers.
    assert_eq!(server.send("GET", "/healthz", None).0, StatusCode::OK);
    server.stop().unwrap();
}

#[test]
fn without_keys_a_local_server_is_open_until_the_first_key_is_made() {
    let server = Server::start(Server::default_config());
    assert_eq!(add(&server, None, "ann", "hello").0, StatusCode::CREATED);
    // Another process makes a key in the same database.
    let other = engine_on(&server.dir.path().join("m.db"), "retrieval", true);
    let secret = other.create_api_key("acme", "late").unwrap().secret;
    std::thread::sleep(mnemos_server::auth::REFRESH + Duration::from_millis(300));
    assert_error(
        &add(&server, None, "ann", "again"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // The server's open-mode tenant is "acme" in the harness: the new key sees the same data.
    let (status, page) = server.send_as(Some(&secret), "GET", "/v1/users/ann/memories", None);
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["total"], 1);
    server.stop().unwrap();
}

#[test]
fn a_revoked_key_stops_working() {
    let config = Server::default_config();
    let (server, keys) = Server::start_keyed(config, "retrieval", true, &["acme", "acme"]);
    assert_eq!(
        add(&server, Some(&keys[0]), "ann", "hi").0,
        StatusCode::CREATED
    );
    let other = engine_on(&server.dir.path().join("m.db"), "retrieval", true);
    let first = other.api_keys(Some("acme")).unwrap()[0].clone();
    other.revoke_api_key(first.id).unwrap();
    std::thread::sleep(mnemos_server::auth::REFRESH + Duration::from_millis(300));
    assert_error(
        &add(&server, Some(&keys[0]), "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_eq!(
        add(&server, Some(&keys[1]), "ann", "still").0,
        StatusCode::CREATED
    );
    server.stop().unwrap();
}

#[test]
fn the_admin_key_manages_keys_and_reads_no_data() {
    let config = ServerConfig {
        admin_key: Some(ADMIN.into()),
        ..Server::default_config()
    };
    let server = Server::start(config);
    // Keys are required as soon as an admin key is set.
    assert_error(
        &add(&server, None, "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );

    let made = server.send_as(
        Some(ADMIN),
        "POST",
        "/v1/keys",
        Some(json!({"tenant": "globex", "name": "bot"})),
    );
    assert_eq!(made.0, StatusCode::CREATED, "{}", made.1);
    let secret = made.1["secret"].as_str().unwrap().to_string();
    let id = made.1["id"].as_str().unwrap().to_string();
    assert!(secret.starts_with("mnk_"));
    assert_eq!(made.1["tenant"], "globex");

    assert_eq!(
        add(&server, Some(&secret), "ann", "I live in Oslo").0,
        StatusCode::CREATED
    );
    assert_error(
        &server.send_as(Some(ADMIN), "GET", "/v1/users", None),
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &server.send_as(Some(&secret), "GET", "/v1/keys", None),
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &server.send_as(
            Some(&secret),
            "POST",
            "/v1/keys",
            Some(json!({"tenant": "acme"})),
        ),
        StatusCode::FORBIDDEN,
        "forbidden",
    );

    let (status, listed) = server.send_as(Some(ADMIN), "GET", "/v1/keys?tenant=globex", None);
    assert_eq!(status, StatusCode::OK);
    let text = listed.to_string();
    assert!(!text.contains(&secret), "a listing shows a secret: {text}");
    assert!(!text.contains("hash"), "a listing shows a hash: {text}");
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_error(
        &server.send_as(Some(ADMIN), "POST", "/v1/keys", Some(json!({"tenant": ""}))),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_input",
    );
    assert_error(
        &server.send_as(
            Some(ADMIN),
            "POST",
            "/v1/keys",
            Some(json!({"tenant": "a", "role": "x"})),
        ),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    );

    let revoked = server.send_as(Some(ADMIN), "DELETE", &format!("/v1/keys/{id}"), None);
    assert_eq!(revoked.0, StatusCode::OK, "{}", revoked.1);
    assert!(revoked.1["revoked"].is_string());
    // Revoked through this server: refused at once.
    assert_error(
        &add(&server, Some(&secret), "ann", "x"),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_error(
        &server.send_as(Some(ADMIN), "DELETE", "/v1/keys/not-an-id", None),
        StatusCode::NOT_FOUND,
        "not_found",
    );
    server.stop().unwrap();
}

fn serve_once(config: ServerConfig, db: &std::path::Path) -> Result<(), ServerError> {
    let engine = Arc::new(engine_on(db, "retrieval", true));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(mnemos_server::serve(
        engine,
        "acme".into(),
        &config,
        |_| {},
        async {},
    ))
}

#[test]
fn only_loopback_without_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let everywhere = ServerConfig {
        listen: SocketAddr::from(([0, 0, 0, 0], 0)),
        ..ServerConfig::default()
    };
    let ipv6_loopback = ServerConfig {
        listen: "[::1]:0".parse().unwrap(),
        ..ServerConfig::default()
    };
    assert!(ipv6_loopback.validate().is_ok());
    let refused = serve_once(everywhere.clone(), &db);
    assert!(
        matches!(refused, Err(ServerError::NotLoopback(_))),
        "{refused:?}"
    );
    // With a stored key the same address is served (and every request needs a key).
    engine_on(&db, "retrieval", true)
        .create_api_key("acme", "k")
        .unwrap();
    serve_once(everywhere.clone(), &db).unwrap();
    // A short admin key is refused.
    let weak = ServerConfig {
        admin_key: Some("short".into()),
        ..everywhere
    };
    assert!(matches!(
        serve_once(weak, &db),
        Err(ServerError::Invalid(_))
    ));
}
