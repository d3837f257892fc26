//! The benches over real stores: `mnemos bench search` times both retrievers on SQLite and on
//! PostgreSQL with pgvector, and measures the index's recall only where the store's index runs;
//! `mnemos bench serve --servers 2` loads two servers over one database.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::Value;

fn bench(store: &str, extra: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .args(["--store", store, "--embedder", "hash"])
        .args([
            "bench",
            "search",
            "--memories",
            "400",
            "--queries",
            "20",
            "--json",
        ])
        .args(extra)
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn sqlite_searches_in_process_with_no_index_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db");
    let report = bench(db.to_str().unwrap(), &[]);
    assert_eq!(report["store"], "sqlite");
    assert_eq!(report["hybrid"]["count"], 20);
    assert_eq!(report["dense"]["count"], 20);
    assert!(report["index_recall"].is_null(), "{report}");
}

#[test]
fn pgvector_index_recall_is_measured_against_brute_force() {
    let pg = mnemos_testkit::postgres::shared_server().unwrap();
    let url = pg.create_database().unwrap();
    let report = bench(&url, &[]);
    assert_eq!(report["store"], "postgres");
    assert!(
        report["dense_search"]
            .as_str()
            .unwrap()
            .contains("in the store: pgvector"),
        "{report}"
    );
    let recall = report["index_recall"].as_f64().unwrap();
    assert!(recall >= 0.9, "{report}");
    let in_process = bench(&url, &["--vectors", "in_process"]);
    assert!(in_process["index_recall"].is_null(), "{in_process}");
    assert!(
        in_process["dense_search"]
            .as_str()
            .unwrap()
            .contains("in process"),
        "{in_process}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .args(["--store", &url, "--embedder", "hash"])
        .args(["bench", "search", "--vectors", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

#[test]
fn bench_serve_spreads_clients_over_two_servers_on_one_database() {
    let pg = mnemos_testkit::postgres::shared_server().unwrap();
    let url = pg.create_database().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .args(["--store", &url, "--embedder", "hash", "bench", "serve"])
        .args([
            "--servers",
            "2",
            "--users",
            "2",
            "--memories",
            "50",
            "--clients",
            "4",
        ])
        .args(["--seconds", "1", "--overhead-queries", "5", "--json"])
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["servers"], 2, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(
        report["adds_acknowledged"], report["adds_stored"],
        "{report}"
    );
}
