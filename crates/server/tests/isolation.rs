//! Random workloads over two tenants × five users through HTTP, each tenant with its own API
//! key and the same user names in both: no response ever holds another user's memory, and
//! another user's (or tenant's) ids answer 404 like unknown ones.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use reqwest::StatusCode;
use serde_json::{json, Value};

use common::Server;

const USERS: usize = 5;
const TENANTS: [&str; 2] = ["acme", "globex"];
/// (tenant, user) pairs: user `i` is `u{i % 5}` of tenant `i / 5`.
const OWNERS: usize = USERS * TENANTS.len();
const WORDS: &[&str] = &[
    "bees", "garden", "violin", "Berlin", "sister", "peanuts", "猫", "杭州", "rowing", "bakery",
];

/// A small deterministic generator (the workload must replay the same on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below
    }
}

/// Every memory text a response holds, with the user marker it carries.
fn markers(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            for part in s.split("[owner:").skip(1) {
                out.push(part.split(']').next().unwrap_or_default().to_string());
            }
        }
        Value::Array(items) => items.iter().for_each(|v| markers(v, out)),
        Value::Object(map) => map.values().for_each(|v| markers(v, out)),
        _ => {}
    }
}

fn owner(i: usize) -> (usize, String) {
    (i / USERS, format!("u{}", i % USERS))
}

#[test]
fn no_response_holds_another_users_memory() {
    let config = Server::default_config();
    let (server, keys) = Server::start_keyed(config, "retrieval", true, &TENANTS);
    let mut rng = Lcg(7);
    let mut ids: Vec<Vec<String>> = vec![Vec::new(); OWNERS];
    let mut turn_ids: Vec<Vec<String>> = vec![Vec::new(); OWNERS];
    for step in 0..400 {
        let me = rng.next(OWNERS);
        let (tenant, name) = owner(me);
        let key = Some(keys[tenant].as_str());
        let marker = format!("{}/{name}", TENANTS[tenant]);
        let word = WORDS[rng.next(WORDS.len())];
        let users = format!("/v1/users/{name}");
        let (status, body) = match rng.next(8) {
            0 | 1 => server.send_as(
                key,
                "POST",
                &format!("{users}/turns"),
                Some(json!({"turns": [{"role": "user", "text": format!("step {step}: {word} [owner:{marker}]")}]})),
            ),
            2 => server.send_as(key, "POST", &format!("{users}/search"), Some(json!({"query": word, "top_k": 10}))),
            7 => server.send_as(key, "POST", &format!("{users}/forget"), Some(json!({"query": word}))),
            3 => server.send_as(key, "POST", &format!("{users}/recall"), Some(json!({"query": word, "budget": 500}))),
            4 => server.send_as(key, "GET", &format!("{users}/memories?limit=100"), None),
            5 => {
                let (status, body) = server.send_as(key, "GET", "/v1/users", None);
                let listed: Vec<&str> = body["users"].as_array().unwrap().iter().map(|u| u.as_str().unwrap()).collect();
                let mine: Vec<String> = (0..OWNERS)
                    .filter(|i| i / USERS == tenant && !ids[*i].is_empty())
                    .map(|i| owner(i).1)
                    .collect();
                assert_eq!(listed, mine, "step {step}: {} lists other tenants' users", TENANTS[tenant]);
                (status, body)
            }
            _ => {
                let other = rng.next(OWNERS);
                if other == me || ids[other].is_empty() {
                    continue;
                }
                let id = ids[other][rng.next(ids[other].len())].clone();
                let (status, body) =
                    server.send_as(key, "GET", &format!("{users}/memories/{id}"), None);
                assert_eq!(status, StatusCode::NOT_FOUND, "{marker} read {other}'s {id}: {body}");
                let (status, _) = server.send_as(key, "DELETE", &format!("{users}/memories/{id}"), None);
                assert_eq!(status, StatusCode::NOT_FOUND, "{marker} forgot {other}'s {id}");
                // Named by id in a forget by description, it is never selected.
                let (status, body) = server.send_as(
                    key,
                    "POST",
                    &format!("{users}/forget"),
                    Some(json!({"query": word, "confirm": true, "ids": [id]})),
                );
                assert_eq!(status, StatusCode::OK, "{body}");
                assert_eq!(body["skipped"], json!([id]), "{marker} forgot {other}'s {id}: {body}");
                let (other_tenant, other_name) = owner(other);
                let (_, theirs) = server.send_as(
                    Some(&keys[other_tenant]),
                    "GET",
                    &format!("/v1/users/{other_name}/memories/{id}"),
                    None,
                );
                assert_eq!(theirs["state"], "active", "{theirs}");
                for route in ["access", "derived"] {
                    let (status, body) =
                        server.send_as(key, "GET", &format!("{users}/memories/{id}/{route}"), None);
                    assert_eq!(status, StatusCode::NOT_FOUND, "{marker} read {other}'s {id}/{route}: {body}");
                }
                let turn = &turn_ids[other][rng.next(turn_ids[other].len())];
                let (status, body) =
                    server.send_as(key, "GET", &format!("{users}/turns/{turn}"), None);
                assert_eq!(status, StatusCode::NOT_FOUND, "{marker} read {other}'s turn {turn}: {body}");
                (status, body)
            }
        };
        if status == StatusCode::CREATED {
            for turn in body["turns"].as_array().unwrap() {
                ids[me].extend(turn["memory_id"].as_str().map(str::to_string));
                turn_ids[me].extend(turn["turn_id"].as_str().map(str::to_string));
            }
        }
        let mut seen = Vec::new();
        markers(&body, &mut seen);
        for owner in seen {
            assert_eq!(
                owner, marker,
                "step {step}: {marker}'s response holds {owner}'s memory: {body}"
            );
        }
    }
    for (i, owned) in ids.iter().enumerate() {
        let (tenant, name) = owner(i);
        let (_, page) = server.send_as(
            Some(&keys[tenant]),
            "GET",
            &format!("/v1/users/{name}/memories?state=all&limit=1000"),
            None,
        );
        assert_eq!(
            page["total"].as_u64().unwrap_or(0) as usize,
            owned.len(),
            "{}/{name} lost or gained memories",
            TENANTS[tenant]
        );
    }
    // The user-level inspector routes read only the caller's tenant.
    for (i, owned) in ids.iter().enumerate() {
        let (tenant, name) = owner(i);
        let key = Some(keys[tenant].as_str());
        let (status, overview) =
            server.send_as(key, "GET", &format!("/v1/users/{name}/overview"), None);
        if owned.is_empty() {
            assert_eq!(status, StatusCode::NOT_FOUND);
            continue;
        }
        assert_eq!(status, StatusCode::OK, "{overview}");
        assert_eq!(
            overview["turns"].as_u64().unwrap() as usize,
            turn_ids[i].len()
        );
        let (status, retention) =
            server.send_as(key, "GET", &format!("/v1/users/{name}/retention"), None);
        assert_eq!(status, StatusCode::OK, "{retention}");
        let last = retention["series"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["created"].as_u64().unwrap() as usize, owned.len());
        let mut seen = Vec::new();
        markers(&overview, &mut seen);
        assert!(seen.is_empty(), "an overview holds no text");
    }
    // Purging a user in one tenant leaves the same name in the other alone.
    let (status, _) = server.send_as(Some(&keys[0]), "DELETE", "/v1/users/u0", None);
    assert!(status.is_success() || ids[0].is_empty());
    let (_, page) = server.send_as(
        Some(&keys[1]),
        "GET",
        "/v1/users/u0/memories?state=all&limit=1000",
        None,
    );
    assert_eq!(
        page["total"].as_u64().unwrap_or(0) as usize,
        ids[USERS].len()
    );
    server.stop().unwrap();
}
