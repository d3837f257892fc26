//! A database keeps the embedder it was built with: the `mnemos` binary refuses another one
//! (exit 2, naming both and the way out), `serve` refuses to start, and `mnemos reembed` moves
//! the database. Hash embedders of two dimensions stand in for two models (no download).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

/// `mnemos --db DB ARGS`, with `config` as its config file (and nothing from the environment).
fn mnemos(db: &Path, config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .arg("--db")
        .arg(db)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .env_remove("MNEMOS_EMBEDDER")
        .output()
        .expect("run mnemos")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap()
}

const TURNS: &str = r#"{"text": "I adopted a grey cat called Pixel.", "user": "lena"}
{"text": "My sister Mia is allergic to peanuts.", "user": "lena"}
{"text": "我在杭州做后端工程师。", "user": "wei"}
"#;

#[test]
fn another_embedder_exits_2_and_reembed_switches_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let h384 = dir.path().join("h384.toml");
    std::fs::write(&h384, "[embedder]\nprovider = \"hash\"\ndim = 384\n").unwrap();
    let h256 = dir.path().join("h256.toml");
    std::fs::write(&h256, "[embedder]\nprovider = \"hash\"\ndim = 256\n").unwrap();
    let turns = dir.path().join("turns.jsonl");
    std::fs::write(&turns, TURNS).unwrap();
    let out = mnemos(&db, &h384, &["ingest", turns.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Another model: refused before it is loaded, with both ids and both ways out.
    let search = ["search", "cat", "--user", "lena"];
    let out = mnemos(
        &db,
        &h384,
        &[&["--embedder", "minilm"], &search[..]].concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let expected = "this database's vectors are hash-v1-384; it was opened with minilm-l6-v2. \
                    Use --embedder hash, or switch with: mnemos reembed --embedder minilm";
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    let out = mnemos(&db, &h256, &search);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("vectors are hash-v1-384; it was opened with hash-v1-256"),
        "{}",
        stderr(&out)
    );
    // The server refuses to start on it.
    let serve = ["serve", "--listen", "127.0.0.1:0"];
    let out = mnemos(&db, &h256, &serve);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("vectors are hash-v1-384"),
        "{}",
        stderr(&out)
    );

    // Moved: the new embedder searches, the old one is refused; a rerun has nothing to do.
    let out = mnemos(&db, &h256, &["reembed", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["model"], "hash-v1-256");
    assert_eq!(report["previous"], "hash-v1-384");
    assert_eq!(report["users"], 2);
    assert!(report["embedded"].as_u64().unwrap() >= 3, "{report}");
    assert_eq!(report["already_present"], 0);
    let out = mnemos(&db, &h256, &search);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Pixel"));
    let out = mnemos(&db, &h384, &search);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = mnemos(&db, &h256, &["reembed", "--drop-old"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("embedded 0 memories"), "{text}");
    assert!(text.contains("deleted"), "{text}");
}
