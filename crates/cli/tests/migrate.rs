//! `mnemos migrate` end to end: a SQLite file with English and Chinese turns, finished and
//! pending jobs and API keys moves to a throwaway PostgreSQL database and back with the same
//! checksums, a second run skips everything, searches through either store find the same hits,
//! a partly migrated target resumes, and a target with other data of a user is refused.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn mnemos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .args(["--embedder", "hash"])
        .args(args)
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .output()
        .expect("run mnemos")
}

/// `mnemos --db store …`, which must succeed; its stdout.
fn on(store: &str, args: &[&str]) -> String {
    let mut all = vec!["--db", store];
    all.extend_from_slice(args);
    let out = mnemos(&all);
    assert!(
        out.status.success(),
        "mnemos {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn migrate(from: &str, to: &str, extra: &[&str]) -> Output {
    let mut args = vec!["migrate", "--from", from, "--to", to];
    args.extend_from_slice(extra);
    mnemos(&args)
}

/// The JSON report of a migration that must succeed.
fn migrate_json(from: &str, to: &str) -> Value {
    let out = migrate(from, to, &["--json"]);
    assert!(
        out.status.success(),
        "migrate {from} → {to}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// user → (outcome, checksum) of a report.
fn outcomes(report: &Value) -> BTreeMap<String, (String, String)> {
    report["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["user"]["user"].as_str().unwrap().to_string(),
                (
                    u["outcome"].as_str().unwrap().to_string(),
                    u["checksum"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn checksums(report: &Value) -> BTreeMap<String, String> {
    outcomes(report)
        .into_iter()
        .map(|(user, (_, sum))| (user, sum))
        .collect()
}

const FINISHED: &str = r#"{"text": "I adopted a grey cat called Pixel.", "speaker": "Lena", "user": "lena"}
{"text": "My sister Mia is allergic to peanuts.", "user": "lena", "session": "s2"}
{"text": "We are flying to Lisbon in June.", "user": "lena", "session": "s2"}
{"text": "我在杭州做后端工程师。", "user": "wei"}
{"text": "周末我喜欢去西湖边跑步。", "user": "wei"}
"#;

const PENDING: &str = r#"{"text": "Remind me to water the basil every Monday.", "user": "mia"}
{"text": "我下个月要搬到上海。", "user": "mia", "session": "s9"}
"#;

/// A SQLite file with three users: lena and wei with finished jobs, mia with pending ones
/// (ingested with inline jobs off), and two API keys, one of them revoked.
fn seed(dir: &Path) -> String {
    let db = dir.join("source.db").to_str().unwrap().to_string();
    let finished = dir.join("finished.jsonl");
    std::fs::write(&finished, FINISHED).unwrap();
    let pending = dir.join("pending.jsonl");
    std::fs::write(&pending, PENDING).unwrap();
    let lazy = dir.join("lazy.toml");
    std::fs::write(&lazy, "[engine.jobs]\ninline = false\n").unwrap();
    let memorybank = ["--preset", "memorybank"];
    on(
        &db,
        &[&["ingest", finished.to_str().unwrap()][..], &memorybank].concat(),
    );
    on(
        &db,
        &[
            &["--config", lazy.to_str().unwrap(), "ingest"][..],
            &[pending.to_str().unwrap()],
            &memorybank,
        ]
        .concat(),
    );
    on(
        &db,
        &["--tenant", "default", "keys", "create", "--name", "bot"],
    );
    on(
        &db,
        &["--tenant", "acme", "keys", "create", "--name", "old"],
    );
    let keys: Value = serde_json::from_str(&on(&db, &["keys", "list", "--json"])).unwrap();
    let old = keys[1]["id"].as_str().unwrap();
    on(&db, &["keys", "revoke", old]);
    db
}

fn keys(store: &str) -> Value {
    serde_json::from_str(&on(store, &["keys", "list", "--json"])).unwrap()
}

/// The ids and texts of a search's hits, in rank order.
fn hits(store: &str, user: &str, query: &str) -> Vec<(String, String)> {
    let found: Value =
        serde_json::from_str(&on(store, &["search", query, "--user", user, "--json"])).unwrap();
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let memory = &h["memory"];
            (
                memory["id"].as_str().unwrap().to_string(),
                memory["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn sqlite_to_postgres_and_back_is_exact_and_a_second_run_skips_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = seed(dir.path());
    let pg = mnemos_testkit::postgres::shared_system_server().unwrap();
    let url = pg.create_database().unwrap();

    // One line per user (outcome, counts, checksum) and the totals.
    let out = migrate(&db, &url, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    for (line, user) in lines.iter().zip(["lena", "mia", "wei"]) {
        assert!(
            line.starts_with("copied") && line.contains(&format!("default/{user} ")),
            "{line}"
        );
        let sum = line.rsplit(' ').next().unwrap();
        assert!(
            sum.len() == 12 && sum.chars().all(|c| c.is_ascii_hexdigit()),
            "{line}"
        );
    }
    assert!(
        lines[3].starts_with("3 users (3 copied, 0 skipped)")
            && lines[3].contains("API keys: 2 copied"),
        "{text}"
    );

    // Again: everything is there already; the checksums are the source's and the target's.
    let again = migrate_json(&db, &url);
    let forward = outcomes(&again);
    assert!(forward.values().all(|(o, _)| o == "skipped"), "{forward:?}");
    assert_eq!(again["keys"]["present"], 2);
    let users = again["users"].as_array().unwrap();
    let mia = users.iter().find(|u| u["user"]["user"] == "mia").unwrap();
    assert!(mia["counts"]["jobs"].as_u64().unwrap() > 0, "{mia}");
    assert!(users
        .iter()
        .all(|u| u["counts"]["turns"].as_u64().unwrap() >= 2));
    assert!(users
        .iter()
        .all(|u| u["counts"]["vectors"].as_u64().unwrap() > 0));

    // And back into a new SQLite file: the same checksums on every side.
    let back = dir.path().join("back.db").to_str().unwrap().to_string();
    let returned = migrate_json(&url, &back);
    assert!(outcomes(&returned).values().all(|(o, _)| o == "copied"));
    assert_eq!(checksums(&returned), checksums(&again));

    assert_eq!(keys(&url), keys(&db));
    assert_eq!(keys(&back), keys(&db));
    assert!(on(&url, &["jobs", "--user", "mia"]).contains("pending"));

    for (user, query) in [
        ("lena", "what is my cat called"),
        ("lena", "who is allergic to peanuts"),
        ("wei", "杭州 工程师"),
        ("mia", "搬到哪里"),
    ] {
        let there = hits(&url, user, query);
        assert!(!there.is_empty(), "{user}: {query}");
        assert_eq!(there, hits(&db, user, query), "{user}: {query}");
    }
}

#[test]
fn a_partly_migrated_target_resumes_and_a_conflicting_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = seed(dir.path());
    let pg = mnemos_testkit::postgres::shared_system_server().unwrap();
    let url = pg.create_database().unwrap();
    let first = checksums(&migrate_json(&db, &url));

    // One user gone from the target, as if the run had stopped before it: only it is copied.
    on(&url, &["purge", "--user", "wei", "--yes"]);
    let resumed = outcomes(&migrate_json(&db, &url));
    assert_eq!(resumed["wei"].0, "copied");
    assert_eq!(resumed["lena"].0, "skipped");
    assert_eq!(resumed["mia"].0, "skipped");
    assert_eq!(
        resumed
            .into_iter()
            .map(|(u, (_, s))| (u, s))
            .collect::<BTreeMap<_, _>>(),
        first
    );

    // A target with other data of wei: refused, naming wei; nothing of it is overwritten.
    let other = pg.create_database().unwrap();
    let stray = dir.path().join("stray.jsonl");
    std::fs::write(
        &stray,
        r#"{"text": "A different wei lives here.", "user": "wei"}"#,
    )
    .unwrap();
    on(&other, &["ingest", stray.to_str().unwrap()]);
    let out = migrate(&db, &other, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("default/wei") && err.contains("different data"),
        "{err}"
    );
    let listed = on(&other, &["list", "--user", "wei"]);
    assert!(
        listed.contains("A different wei") && !listed.contains("杭州"),
        "{listed}"
    );

    // The same store on both sides is refused before anything is opened.
    let out = migrate(&db, &db, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("same store"));

    // The source was only read: its users still hash as they did.
    let fresh = pg.create_database().unwrap();
    assert_eq!(checksums(&migrate_json(&db, &fresh)), first);
}
