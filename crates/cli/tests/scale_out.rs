//! Two `mnemos serve` processes over one PostgreSQL database, as behind a load balancer:
//! under concurrent mixed load no acknowledged add is lost, no job runs twice, idempotency keys
//! hold across servers, and an add acknowledged by one server is found by the very next search
//! on the other (the stated bound: the engine checks the user's data version in the store
//! before every use of the user's cache, so the next request after the acknowledgement sees
//! it).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::{json, Value};

/// `mnemos serve` on `store` with a free loopback port: the child, its `/v1` URL and what it
/// printed before it listened.
/// What a server printed after its address, kept for failure messages.
type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

fn spawn_serve(store: &str, config: &std::path::Path) -> (Child, String, Vec<String>, Log) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .arg("--config")
        .arg(config)
        .args(["--store", store, "--embedder", "hash"])
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .env_remove("MNEMOS_ADMIN_KEY")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let url = loop {
        let Some(line) = lines.next() else {
            panic!("serve exited before printing its address: {seen:#?}");
        };
        let line = line.unwrap();
        seen.push(line.clone());
        if let Some(at) = line.find("http://") {
            break line[at..].split_whitespace().next().unwrap().to_string();
        }
    };
    let log = Log::default();
    let kept = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    (child, url, seen, log)
}

/// Both servers report the store and where vector search runs, at start-up and in `/readyz`.
fn check_reports(printed: &[String], url: &str, vectors: &str) {
    let line = printed
        .iter()
        .find(|l| l.starts_with("store: postgres (postgres://"))
        .unwrap_or_else(|| panic!("no store line: {printed:#?}"));
    let expected = if vectors == "store" {
        "vector search in the store: pgvector"
    } else {
        "vector search in process (exact brute force): the PostgreSQL server has no pgvector"
    };
    assert!(line.contains(expected), "{line}");
    let base = url.trim_end_matches("/v1");
    let ready: Value = client()
        .get(format!("{base}/readyz"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["store"]["kind"], "postgres", "{ready}");
    assert_eq!(ready["store"]["vectors"], vectors, "{ready}");
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Add one keyed turn; the answer's status and body.
fn add(client: &Client, url: &str, user: &str, key: &str, text: &str) -> (u16, Value) {
    let response = client
        .post(format!("{url}/users/{user}/turns"))
        .header("Idempotency-Key", key)
        .json(&json!({"session": "s1", "turns": [{"role": "user", "text": text}]}))
        .send()
        .unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

fn search_finds(client: &Client, url: &str, user: &str, token: &str) -> bool {
    let found: Value = client
        .post(format!("{url}/users/{user}/search"))
        .json(&json!({"query": token, "top_k": 5}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["memory"]["text"].as_str().unwrap().contains(token))
}

fn stored_texts(client: &Client, url: &str, user: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut cursor = String::new();
    loop {
        let page: Value = client
            .get(format!(
                "{url}/users/{user}/memories?limit=500&kind=turn&state=all{cursor}"
            ))
            .send()
            .unwrap()
            .json()
            .unwrap();
        for memory in page["memories"].as_array().unwrap() {
            texts.push(memory["text"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return texts,
        }
    }
}

fn metric(client: &Client, url: &str, name: &str) -> f64 {
    let base = url.trim_end_matches("/v1");
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

fn pending_jobs(client: &Client, url: &str, user: &str) -> usize {
    let jobs: Value = client
        .get(format!("{url}/users/{user}/jobs"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    jobs.as_array().expect("a list of jobs").len()
}

/// The text of `user`'s `n`-th add: a unique token, and Chinese.
fn note(user: &str, n: usize) -> String {
    format!("note {n} of {user}: {user}tok{n}x 记录")
}

/// A server process, killed when the test ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One writer: adds keyed turns for `user`, each to the server `n` picks, then searches the
/// other server for it at once. Returns the acknowledged texts and the reads that missed.
fn writer(urls: [String; 2], user: String, adds: usize) -> (Vec<String>, Vec<String>) {
    let client = client();
    let mut acked = Vec::new();
    let mut missed = Vec::new();
    for n in 0..adds {
        let (to, other) = (&urls[n % 2], &urls[(n + 1) % 2]);
        let text = note(&user, n);
        let token = format!("{user}tok{n}x");
        let (status, body) = add(&client, to, &user, &format!("{user}-{n}"), &text);
        assert_eq!(status, 201, "{body}");
        acked.push(text);
        if !search_finds(&client, other, &user, &token) {
            missed.push(token);
        }
        if n % 7 == 6 {
            // Close the session on the other server: it plans derived jobs for the workers.
            let ended = client
                .post(format!("{other}/users/{user}/sessions/s1/end"))
                .send()
                .unwrap();
            assert!(ended.status().is_success(), "{}", ended.status());
        }
    }
    (acked, missed)
}

#[test]
fn two_servers_over_one_postgres_lose_nothing_and_run_no_job_twice() {
    let pg = mnemos_testkit::postgres::shared_system_server().unwrap();
    two_servers_over(pg, "in_process");
}

#[test]
fn two_servers_searching_pgvector_lose_nothing_and_run_no_job_twice() {
    let pg = mnemos_testkit::postgres::shared_server().unwrap();
    two_servers_over(pg, "store");
}

/// The two-server load on a fresh database of `pg`, whose servers search vectors where
/// `vectors` says.
fn two_servers_over(pg: &mnemos_testkit::postgres::TestPostgres, vectors: &str) {
    let store = pg.create_database().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mnemos.toml");
    std::fs::write(&config, "[engine]\npreset = \"memorybank\"\n").unwrap();
    let (a, url_a, printed_a, log_a) = spawn_serve(&store, &config);
    let (b, url_b, printed_b, log_b) = spawn_serve(&store, &config);
    let _servers = (Server(a), Server(b));
    check_reports(&printed_a, &url_a, vectors);
    check_reports(&printed_b, &url_b, vectors);
    let users: Vec<String> = (0..4).map(|i| format!("user{i}")).collect();

    let writers: Vec<_> = users
        .iter()
        .map(|user| {
            let urls = [url_a.clone(), url_b.clone()];
            let user = user.clone();
            std::thread::spawn(move || writer(urls, user, 30))
        })
        .collect();
    let results: Vec<(Vec<String>, Vec<String>)> =
        writers.into_iter().map(|w| w.join().unwrap()).collect();
    let missed: Vec<&String> = results.iter().flat_map(|(_, m)| m).collect();
    assert!(
        missed.is_empty(),
        "reads on the other server missed {missed:?}"
    );

    // Replays of acknowledged adds through the other server are duplicates, not new turns.
    let client = client();
    for user in &users {
        let (status, body) = add(&client, &url_b, user, &format!("{user}-0"), &note(user, 0));
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["turns"][0]["status"], "duplicate", "{body}");
    }

    // Both workers drain every job; none ran twice (a second run's commit would be refused
    // and counted as a failure).
    let deadline = Instant::now() + Duration::from_secs(120);
    while users.iter().any(|u| pending_jobs(&client, &url_a, u) > 0) {
        assert!(Instant::now() < deadline, "jobs still pending after 120 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    let ran = metric(&client, &url_a, "mnemos_jobs_ran_total")
        + metric(&client, &url_b, "mnemos_jobs_ran_total");
    let failed = metric(&client, &url_a, "mnemos_jobs_failed_total")
        + metric(&client, &url_b, "mnemos_jobs_failed_total");
    eprintln!(
        "jobs ran: {ran} (a: {}, b: {}), failed: {failed}",
        metric(&client, &url_a, "mnemos_jobs_ran_total"),
        metric(&client, &url_b, "mnemos_jobs_ran_total")
    );
    assert!(ran > 0.0, "no job ran");
    assert_eq!(
        failed,
        0.0,
        "a job failed (or ran twice); server a said {:#?}, server b said {:#?}",
        log_a.lock().unwrap(),
        log_b.lock().unwrap()
    );

    // Every acknowledged add is stored exactly once, seen from either server.
    for (user, (acked, _)) in users.iter().zip(&results) {
        for url in [&url_a, &url_b] {
            let stored = stored_texts(&client, url, user);
            let unique: BTreeSet<&String> = stored.iter().collect();
            assert_eq!(unique.len(), stored.len(), "a turn stored twice for {user}");
            for text in acked {
                assert!(
                    stored.contains(text),
                    "{user}: acknowledged '{text}' is missing"
                );
            }
            assert_eq!(stored.len(), acked.len(), "{user}: {stored:?}");
        }
    }
}
