//! Random workloads over five users through HTTP: no response ever holds another user's
//! memory, and another user's ids answer 404 like unknown ones.

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

#[test]
fn no_response_holds_another_users_memory() {
    let server = Server::start(Server::default_config());
    let mut rng = Lcg(7);
    let mut ids: Vec<Vec<String>> = vec![Vec::new(); USERS];
    for step in 0..400 {
        let user = rng.next(USERS);
        let name = format!("u{user}");
        let word = WORDS[rng.next(WORDS.len())];
        let (status, body) = match rng.next(6) {
            0 | 1 => server.send(
                "POST",
                &format!("/v1/users/{name}/turns"),
                Some(json!({"turns": [{"role": "user", "text": format!("step {step}: {word} [owner:{name}]")}]})),
            ),
            2 => server.send("POST", &format!("/v1/users/{name}/search"), Some(json!({"query": word, "top_k": 10}))),
            3 => server.send("POST", &format!("/v1/users/{name}/recall"), Some(json!({"query": word, "budget": 500}))),
            4 => server.send("GET", &format!("/v1/users/{name}/memories?limit=100"), None),
            _ => {
                let other = rng.next(USERS);
                if other == user || ids[other].is_empty() {
                    continue;
                }
                let id = ids[other][rng.next(ids[other].len())].clone();
                let (status, body) =
                    server.send("GET", &format!("/v1/users/{name}/memories/{id}"), None);
                assert_eq!(status, StatusCode::NOT_FOUND, "{name} read u{other}'s {id}: {body}");
                let (status, _) = server.send("DELETE", &format!("/v1/users/{name}/memories/{id}"), None);
                assert_eq!(status, StatusCode::NOT_FOUND, "{name} forgot u{other}'s {id}");
                (status, body)
            }
        };
        if status == StatusCode::CREATED {
            for turn in body["turns"].as_array().unwrap() {
                ids[user].extend(turn["memory_id"].as_str().map(str::to_string));
            }
        }
        let mut seen = Vec::new();
        markers(&body, &mut seen);
        for owner in seen {
            assert_eq!(
                owner, name,
                "step {step}: {name}'s response holds {owner}'s memory: {body}"
            );
        }
    }
    for (user, owned) in ids.iter().enumerate() {
        let (_, page) = server.send(
            "GET",
            &format!("/v1/users/u{user}/memories?state=all&limit=1000"),
            None,
        );
        assert_eq!(
            page["total"].as_u64().unwrap() as usize,
            owned.len(),
            "u{user} lost or gained memories"
        );
    }
    server.stop().unwrap();
}
