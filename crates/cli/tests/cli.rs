//! The `mnemos` binary end to end, with the weights-free hash embedder (no model download).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::path::Path;
use std::process::{Command, Output};

fn mnemos(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .arg("--db")
        .arg(db)
        .args(["--embedder", "hash"])
        .args(args)
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .output()
        .expect("run mnemos")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const GOOD: &str = r#"{"text": "I adopted a grey cat called Pixel.", "speaker": "Lena", "user": "lena"}
{"text": "My sister Mia is allergic to peanuts.", "user": "lena", "session": "s2"}
{"text": "我在杭州做后端工程师。", "user": "wei"}
"#;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn forget_by_description_lists_first_and_forgets_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let said = r#"{"text": "I live in Tallinn.", "user": "ann"}
{"text": "I just moved, I live in Porto now.", "user": "ann"}
{"text": "My sister Mia is allergic to peanuts.", "user": "ann"}
{"text": "I live in Porto too.", "user": "bob"}
"#;
    let file = write(dir.path(), "turns.jsonl", said);
    let out = mnemos(&db, &["ingest", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let forgotten = |user: &str| {
        let out = mnemos(
            &db,
            &["list", "--user", user, "--state", "forgotten", "--json"],
        );
        let page: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        page["total"].as_u64().unwrap()
    };

    let asked = ["forget", "--query", "my old address", "--user", "ann"];
    let out = mnemos(&db, &asked);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("would forget 2 memory(ies) of ann"),
        "{text}"
    );
    assert!(text.contains("Porto") && text.contains("Tallinn"), "{text}");
    assert!(
        text.contains("nothing forgotten; re-run with --yes"),
        "{text}"
    );
    assert_eq!(forgotten("ann"), 0, "a dry run forgets nothing");

    let out = mnemos(
        &db,
        &[&asked[..], &["--yes", "--reason", "moved away"]].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("forgot 2 memory(ies) of ann"), "{text}");
    assert!(text.contains("reason: moved away"), "{text}");
    assert!(forgotten("ann") >= 2);
    assert_eq!(forgotten("bob"), 0, "another user's memories stay");
    let out = mnemos(&db, &["search", "peanuts", "--user", "ann"]);
    assert!(stdout(&out).contains("peanuts"), "{}", stdout(&out));
    let out = mnemos(&db, &asked);
    assert!(
        stdout(&out).contains("nothing forgotten"),
        "{}",
        stdout(&out)
    );

    // --yes belongs to --query; an id or a query, not both; a bad limit is the caller's.
    let out = mnemos(&db, &["forget", "--yes", "--user", "ann"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let both = [
        "forget",
        "01a21276-a2e7-70bf-9179-fc00024c1afc",
        "--query",
        "x",
    ];
    assert_eq!(code(&mnemos(&db, &both)), 2);
    let out = mnemos(&db, &[&asked[..], &["--limit", "0"]].concat());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("limit"), "{}", stderr(&out));
}

#[test]
fn ingest_search_show_forget_purge() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = write(dir.path(), "turns.jsonl", GOOD);
    let out = mnemos(&db, &["ingest", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ingested 3 new turn(s) for 2 user(s)"),
        "{}",
        stdout(&out)
    );

    let out = mnemos(
        &db,
        &[
            "search",
            "what is my cat called",
            "--user",
            "lena",
            "--explain",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().next().unwrap().contains("Pixel"), "{text}");
    assert!(
        text.contains("bm25") && text.contains("matched [") && text.contains("dense"),
        "{text}"
    );

    let out = mnemos(&db, &["search", "杭州 工程师", "--user", "wei", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let hit = &json["hits"][0];
    assert!(hit["memory"]["text"].as_str().unwrap().contains("杭州"));
    let id = hit["memory"]["id"].as_str().unwrap().to_string();
    assert!(hit["breakdown"]["lexical"]["rank"].as_u64().is_some());

    // Isolation: lena cannot see wei's memory by id.
    let out = mnemos(&db, &["show", &id, "--user", "lena"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("not found"), "{}", stderr(&out));

    let out = mnemos(
        &db,
        &["forget", &id, "--user", "wei", "--reason", "user asked"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("forgot "), "{}", stdout(&out));
    // A second forget says so instead of reporting success again.
    let out = mnemos(&db, &["forget", &id, "--user", "wei", "--reason", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("was already forgotten") && stdout(&out).contains("user asked"),
        "{}",
        stdout(&out)
    );
    let out = mnemos(&db, &["show", &id, "--user", "wei"]);
    let text = stdout(&out);
    assert!(
        text.contains("forgotten") && text.contains("user asked") && text.contains("v2"),
        "{text}"
    );
    assert!(
        !text.contains("v3"),
        "a repeated forget makes no new version: {text}"
    );
    let out = mnemos(&db, &["search", "杭州 工程师", "--user", "wei", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(json["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["memory"]["id"] != id.as_str()));

    let out = mnemos(&db, &["list", "--user", "lena", "--session", "s2"]);
    assert!(
        stdout(&out).contains("peanuts") && !stdout(&out).contains("Pixel"),
        "{}",
        stdout(&out)
    );

    let out = mnemos(&db, &["purge", "--user", "lena"]);
    assert_eq!(code(&out), 2, "purge without --yes must refuse");
    let out = mnemos(&db, &["purge", "--user", "lena", "--yes"]);
    assert!(stdout(&out).contains("2 turns"), "{}", stdout(&out));
    let out = mnemos(&db, &["users"]);
    assert!(
        !stdout(&out).contains("lena") && stdout(&out).contains("wei"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn times_are_iso_dates_and_list_filters_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = write(
        dir.path(),
        "dated.jsonl",
        "{\"text\": \"I moved to Berlin.\", \"time\": \"2024-05-01T10:00:00Z\"}\n\
         {\"text\": \"I started at the bakery.\", \"time\": \"2024-06-03T08:30:00Z\"}\n",
    );
    assert!(mnemos(&db, &["ingest", file.to_str().unwrap()])
        .status
        .success());
    let out = mnemos(&db, &["list"]);
    let text = stdout(&out);
    assert!(
        text.contains("2024-05-01T10:00:00Z") && text.contains("2024-06-03T08:30:00Z"),
        "{text}"
    );
    let out = mnemos(&db, &["list", "--since", "2024-06-01"]);
    assert!(
        stdout(&out).contains("bakery") && !stdout(&out).contains("Berlin"),
        "{}",
        stdout(&out)
    );
    let out = mnemos(&db, &["list", "--until", "2024-06-01T00:00:00Z"]);
    assert!(stdout(&out).contains("Berlin") && !stdout(&out).contains("bakery"));
    let out = mnemos(&db, &["list", "--since", "last tuesday"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = mnemos(&db, &["search", "bakery", "--explain"]);
    assert!(
        stdout(&out).contains("2024-06-03T08:30:00Z"),
        "{}",
        stdout(&out)
    );
    let id = stdout(&mnemos(&db, &["list", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&id).unwrap();
    let id = json["items"][0]["id"].as_str().unwrap().to_string();
    let out = mnemos(&db, &["show", &id]);
    assert!(
        stdout(&out).contains("created  2024-05-01T10:00:00Z (round 0)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn list_filters_by_text_and_sorts_users_show_details_and_retention_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = write(
        dir.path(),
        "coffee.jsonl",
        "{\"text\": \"I drink coffee every morning.\", \"user\": \"lena\", \"time\": \"2024-05-01T10:00:00Z\"}\n\
         {\"text\": \"我每天早上都喝一杯咖啡。\", \"user\": \"lena\", \"time\": \"2024-05-02T10:00:00Z\"}\n\
         {\"text\": \"I also like COFFEE cake.\", \"user\": \"lena\", \"time\": \"2024-05-03T10:00:00Z\"}\n\
         {\"text\": \"The weather is nice.\", \"user\": \"wei\"}\n",
    );
    assert!(mnemos(&db, &["ingest", file.to_str().unwrap()])
        .status
        .success());
    let listed = |args: &[&str]| -> Vec<String> {
        // Turns only: a preference stated in a turn is also kept as a fact of its own.
        let out = mnemos(
            &db,
            &[
                &["list", "--user", "lena", "--kind", "turn", "--json"],
                args,
            ]
            .concat(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let page: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        listed(&["--text", "coffee", "--sort", "newest"]),
        ["I also like COFFEE cake.", "I drink coffee every morning."]
    );
    assert_eq!(listed(&["--text", "咖啡"]), ["我每天早上都喝一杯咖啡。"]);
    let out = mnemos(&db, &["list", "--user", "lena", "--text", " "]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = mnemos(&db, &["list", "--user", "lena", "--sort", "sideways"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));

    let out = mnemos(&db, &["users", "--detail"]);
    let text = stdout(&out);
    assert!(text.contains("lena  3 turns in 1 sessions"), "{text}");
    assert!(text.contains("wei  1 turns"), "{text}");
    let out = mnemos(&db, &["users", "--detail", "--json"]);
    let users: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(users[0]["overview"]["turns"], 3);

    let id = stdout(&mnemos(
        &db,
        &["list", "--user", "lena", "--json", "--limit", "1"],
    ));
    let id: serde_json::Value = serde_json::from_str(&id).unwrap();
    let id = id["items"][0]["id"].as_str().unwrap().to_string();
    assert!(
        mnemos(&db, &["forget", &id, "--user", "lena", "--reason", "wrong"])
            .status
            .success()
    );
    let out = mnemos(&db, &["show", "retention", "--user", "lena"]);
    let text = stdout(&out);
    assert!(text.contains("forgotten by: request 1"), "{text}");
    let out = mnemos(&db, &["show", "retention", "--user", "lena", "--json"]);
    let retention: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let last = retention["series"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    // Three turns and the fact "I also like COFFEE cake." states.
    assert_eq!(
        (last["created"].clone(), last["forgotten"].clone()),
        (4.into(), 1.into())
    );
}

#[test]
fn running_an_ingest_again_adds_only_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = write(dir.path(), "turns.jsonl", GOOD);
    assert!(mnemos(&db, &["ingest", file.to_str().unwrap()])
        .status
        .success());
    // The same file again (a crash re-run), then with one more line appended.
    let out = mnemos(&db, &["ingest", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ingested 0 new turn(s)")
            && stdout(&out).contains("3 turn(s) were already stored"),
        "{}",
        stdout(&out)
    );
    let more = format!("{GOOD}{{\"text\": \"I also play the cello.\", \"user\": \"lena\"}}\n");
    std::fs::write(&file, more).unwrap();
    let out = mnemos(&db, &["ingest", file.to_str().unwrap()]);
    assert!(
        stdout(&out).contains("ingested 1 new turn(s)"),
        "{}",
        stdout(&out)
    );
    let out = mnemos(&db, &["list", "--user", "lena", "--kind", "turn", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        json["total"], 3,
        "lena has her two turns and the new one, once each"
    );
}

#[test]
fn two_processes_adding_turns_for_one_user_never_share_a_round() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // Create the database first so both processes open the same schema.
    let seed = write(
        dir.path(),
        "seed.jsonl",
        "{\"text\": \"hello\", \"user\": \"ann\"}\n",
    );
    assert!(mnemos(&db, &["ingest", seed.to_str().unwrap()])
        .status
        .success());
    let files: Vec<_> = (0..2)
        .map(|p| {
            let lines: String = (0..150)
                .map(|i| {
                    format!("{{\"text\": \"process {p} says line {i}\", \"user\": \"ann\"}}\n")
                })
                .collect();
            write(dir.path(), &format!("p{p}.jsonl"), &lines)
        })
        .collect();
    let children: Vec<_> = files
        .iter()
        .map(|file| {
            Command::new(env!("CARGO_BIN_EXE_mnemos"))
                .arg("--db")
                .arg(&db)
                .args([
                    "--embedder",
                    "hash",
                    "ingest",
                    file.to_str().unwrap(),
                    "--batch",
                    "1",
                ])
                .env_remove("MNEMOS_CONFIG")
                .env_remove("MNEMOS_DB")
                .output_spawned()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = mnemos(&db, &["list", "--user", "ann", "--limit", "1000", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rounds: std::collections::BTreeSet<u64> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["created"]["round"].as_u64().unwrap())
        .collect();
    assert_eq!(json["total"], 301);
    assert_eq!(rounds.len(), 301, "every user turn opens its own round");
}

trait SpawnOutput {
    fn output_spawned(&mut self) -> std::process::Child;
}

impl SpawnOutput for Command {
    fn output_spawned(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn mnemos")
    }
}

#[test]
fn pending_jobs_are_listed_run_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // Jobs that do not run inline stay pending, as after a crash.
    let config = write(dir.path(), "c.toml", "[engine.jobs]\ninline = false\n");
    let file = write(dir.path(), "turns.jsonl", GOOD);
    let with_config = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        mnemos(&db, &all)
    };
    let out = with_config(&["ingest", file.to_str().unwrap(), "--preset", "memorybank"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = mnemos(&db, &["jobs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("memorybank") && stdout(&out).contains("pending"),
        "{}",
        stdout(&out)
    );
    let out = mnemos(
        &db,
        &["search", "cat", "--user", "lena", "--preset", "memorybank"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("have not run yet"),
        "{}",
        stderr(&out)
    );
    let out = mnemos(&db, &["jobs", "run", "--user", "lena"]);
    assert!(
        stdout(&out).contains("ran") && stdout(&out).contains("0 failed"),
        "{}",
        stdout(&out)
    );
    let out = mnemos(&db, &["jobs", "--user", "lena"]);
    assert!(stdout(&out).contains("no pending job"), "{}", stdout(&out));
    let out = mnemos(
        &db,
        &["search", "cat", "--user", "lena", "--preset", "memorybank"],
    );
    assert!(
        !stderr(&out).contains("have not run yet"),
        "{}",
        stderr(&out)
    );
    let out = mnemos(&db, &["jobs", "run"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn malformed_lines_are_reported_skipped_or_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = dir.path().join("bad.jsonl");
    let mut bytes = b"{\"text\": \"fine line\"}\n{\"text\": 5}\nnot json\n{\"txet\": \"typo\"}\n{\"text\": \"  \"}\n".to_vec();
    bytes.extend_from_slice(b"{\"text\": \"bad \xff utf8\"}\n{\"text\": \"another fine line\"}\n");
    std::fs::write(&file, &bytes).unwrap();

    let out = mnemos(&db, &["ingest", file.to_str().unwrap(), "--strict"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    for line in ["line 2", "line 3", "line 4", "line 5", "line 6"] {
        assert!(err.contains(line), "strict error should name {line}: {err}");
    }
    assert!(!db.exists(), "strict mode must write nothing");

    // By default the good lines go in, the bad ones are listed, and the exit status says so.
    let out = mnemos(&db, &["ingest", file.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ingested 2 new turn(s)"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("5 malformed line(s) were skipped"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("line 6") && stderr(&out).contains("UTF-8"),
        "{}",
        stderr(&out)
    );
    // Asked to tolerate them: exit 0, and the good lines are not added twice.
    let out = mnemos(&db, &["ingest", file.to_str().unwrap(), "--skip-bad"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ingested 0 new turn(s)"),
        "{}",
        stdout(&out)
    );

    // Every line bad: an error, said once.
    let all_bad = write(dir.path(), "all_bad.jsonl", "nope\n{\"text\": 1}\n");
    let out = mnemos(&db, &["ingest", all_bad.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no turn to ingest"),
        "{}",
        stderr(&out)
    );
    let missing = dir.path().join("missing.jsonl");
    let out = mnemos(&db, &["ingest", missing.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.matches("No such file").count(), 1, "said once: {err}");
}

#[test]
fn read_only_commands_need_a_database_and_a_known_user() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("absent.db");
    for args in [
        vec!["list"],
        vec!["users"],
        vec!["search", "cat"],
        vec!["show", "persona"],
        vec!["jobs"],
        vec!["purge", "--yes"],
    ] {
        let out = mnemos(&db, &args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no database"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!db.exists(), "{args:?} created the database");
    }
    let db = dir.path().join("m.db");
    let file = write(dir.path(), "turns.jsonl", GOOD);
    assert!(mnemos(&db, &["ingest", file.to_str().unwrap()])
        .status
        .success());
    let out = mnemos(&db, &["list", "--user", "lenna"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no user 'lenna'") && stderr(&out).contains("lena"),
        "{}",
        stderr(&out)
    );
    let out = mnemos(&db, &["search", "cat", "--user", "nobody"]);
    assert!(
        stderr(&out).contains("no user 'nobody'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_arguments_get_clear_errors_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let file = write(dir.path(), "turns.jsonl", GOOD);
    assert!(mnemos(&db, &["ingest", file.to_str().unwrap()])
        .status
        .success());
    let out = mnemos(&db, &["show", "not-a-uuid", "--user", "lena"]);
    assert!(stderr(&out).contains("not-a-uuid"), "{}", stderr(&out));
    assert_eq!(code(&out), 2);
    let out = mnemos(&db, &["search", "   ", "--user", "lena"]);
    assert!(stderr(&out).contains("query is empty"), "{}", stderr(&out));
    assert_eq!(code(&out), 2);
    // Closed choices list their values.
    let out = mnemos(&db, &["search", "x", "--kind", "nonsense"]);
    assert!(
        stderr(&out).contains("possible values") && stderr(&out).contains("chain_node"),
        "{}",
        stderr(&out)
    );
    assert_eq!(code(&out), 2);
    let help = mnemos(&db, &["list", "--help"]);
    assert!(stdout(&help).contains("forgotten") && stdout(&help).contains("reflection"));
    let config = write(dir.path(), "bad.toml", "[retrieval]\ncandidatez = 3\n");
    let out = mnemos(&db, &["--config", config.to_str().unwrap(), "users"]);
    assert!(stderr(&out).contains("candidates"), "{}", stderr(&out));
    assert_eq!(code(&out), 2);
    let not_db = write(dir.path(), "text.db", "this is not a database");
    let out = mnemos(&not_db, &["users"]);
    assert_eq!(code(&out), 1, "a broken database is a service error");
    assert!(stderr(&out).contains("database"), "{}", stderr(&out));
}

#[test]
fn demo_runs_with_the_hash_embedder() {
    let dir = tempfile::tempdir().unwrap();
    let out = mnemos(&dir.path().join("unused.db"), &["demo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("ingested 33 turns"), "{text}");
    assert!(text.contains("Pixel") && text.contains("护士"), "{text}");
    // The move is current, the forgotten number is gone, the new job answers.
    let answer = |query: &str| {
        let start = text
            .find(query)
            .unwrap_or_else(|| panic!("{query}: {text}"));
        let rest = &text[start + query.len()..];
        rest[..rest.find("\n[").unwrap_or(rest.len())].to_string()
    };
    assert!(
        answer("Which city do I live in now?").contains("Porto"),
        "{text}"
    );
    let passport = answer("What is my passport number?");
    assert!(!text.contains("X4417902"), "{text}");
    assert!(passport.contains("the user asked to forget"), "{passport}");
    assert!(
        answer("我现在做什么工作？").contains("数据分析师"),
        "{text}"
    );
}

#[test]
fn eval_retrieval_scores_a_small_locomo_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("locomo_small.json");
    let data = serde_json::json!([{
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I started pottery classes on Tuesdays."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice! I am learning to play the cello."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "My dog Rufus chewed my new shoes."}
            ]
        },
        "qa": [
            {"question": "What instrument is Bo learning?", "answer": "cello", "evidence": ["D1:2"], "category": 4},
            {"question": "What is the name of Ann's dog?", "answer": "Rufus", "evidence": ["D1:3"], "category": 4}
        ]
    }]);
    std::fs::write(&file, data.to_string()).unwrap();
    let out = mnemos(
        &dir.path().join("x.db"),
        &[
            "eval",
            "retrieval",
            "--dataset",
            "locomo",
            file.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["questions"], 2);
    let retrievers = report["retrievers"].as_array().unwrap();
    assert_eq!(retrievers.len(), 3);
    let bm25 = &retrievers[0];
    assert_eq!(bm25["retriever"], "bm25");
    assert_eq!(bm25["scores"]["overall"]["recall"]["1"], 1.0);
}

fn small_locomo(dir: &Path, conversations: usize) -> std::path::PathBuf {
    let file = dir.join("locomo_small.json");
    let data: Vec<serde_json::Value> = (0..conversations)
        .map(|n| {
            serde_json::json!({
                "sample_id": format!("conv-{n}"),
                "conversation": {
                    "speaker_a": "Ann", "speaker_b": "Bo",
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": [
                        {"speaker": "Ann", "dia_id": "D1:1", "text": format!("I started pottery classes on Tuesdays, week {n}.")},
                        {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice! I am learning to play the cello."}
                    ],
                    "session_2_date_time": "2:00 pm on 9 May, 2023",
                    "session_2": [
                        {"speaker": "Ann", "dia_id": "D2:1", "text": "My dog Rufus chewed my new shoes."},
                        {"speaker": "Bo", "dia_id": "D2:2", "text": "Oh no, poor shoes! Rufus is a rascal."}
                    ]
                },
                "qa": [
                    {"question": "What instrument is Bo learning?", "answer": "cello", "evidence": ["D1:2"], "category": 4},
                    {"question": "What is the name of Ann's dog?", "answer": "Rufus", "evidence": ["D2:1"], "category": 4},
                    {"question": "When did Ann start pottery?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2}
                ]
            })
        })
        .collect();
    std::fs::write(&file, serde_json::Value::Array(data).to_string()).unwrap();
    file
}

#[test]
fn a_ranker_is_trained_on_retrieval_dumps_and_loads_as_config() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_locomo(dir.path(), 3);
    let dump = dir.path().join("dump.jsonl");
    let db = dir.path().join("x.db");
    let out = mnemos(
        &db,
        &[
            "eval",
            "retrieval",
            file.to_str().unwrap(),
            "--retriever",
            "hybrid",
            "--dump",
            dump.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&dump)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let candidates = first["ranker_features"]["hybrid"].as_array().unwrap();
    assert!(!candidates.is_empty(), "{first}");
    assert_eq!(candidates[0][1].as_array().unwrap().len(), 19);

    let weights = dir.path().join("ranker.toml");
    let out = mnemos(
        &db,
        &[
            "train",
            "ranker",
            dump.to_str().unwrap(),
            "--out",
            weights.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("3 folds") && text.contains("| learned |"),
        "{text}"
    );
    let config = std::fs::read_to_string(&weights).unwrap();
    assert!(config.contains("[retrieval.ranker]"), "{config}");
    // The written file is a config the engine accepts.
    let turns = write(dir.path(), "turns.jsonl", GOOD);
    let with = |args: &[&str]| {
        let mut all = vec!["--config", weights.to_str().unwrap()];
        all.extend_from_slice(args);
        mnemos(&db, &all)
    };
    assert!(with(&["ingest", turns.to_str().unwrap()]).status.success());
    let out = with(&["search", "grey cat", "--user", "lena"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Pixel"), "{}", stdout(&out));
    let short = write(
        dir.path(),
        "short.toml",
        "[retrieval.ranker]\nweights = [1.0]\n",
    );
    let out = mnemos(&db, &["--config", short.to_str().unwrap(), "users"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("19 values"), "{}", stderr(&out));

    // A dump of another shape is refused with its line number.
    let bad = write(dir.path(), "bad.jsonl", "{\"conversation\": 3}\n");
    let out = mnemos(&db, &["train", "ranker", bad.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("line 1"), "{}", stderr(&out));
}

#[test]
fn eval_run_writes_a_full_report_for_presets_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_locomo(dir.path(), 3);
    let out_dir = dir.path().join("report");
    let out = mnemos(
        &dir.path().join("x.db"),
        &[
            "eval",
            "run",
            file.to_str().unwrap(),
            "--presets",
            "retrieval,recent",
            "--sweep",
            "recent.window=1,4",
            "--noise-tokens",
            "60",
            "--checkpoints",
            "30",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for name in [
        "report.md",
        "report.json",
        "asks.jsonl",
        "sizes.jsonl",
        "config.json",
        "checksums.json",
        "plots/memory-growth.svg",
        "plots/memory-growth.png",
        "plots/forgetting-recent-window.svg",
    ] {
        assert!(out_dir.join(name).is_file(), "{name} missing");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let presets = report["presets"].as_array().unwrap();
    let names: Vec<&str> = presets
        .iter()
        .map(|p| p["preset"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "retrieval",
            "recent",
            "recent[window=1]",
            "recent[window=4]"
        ]
    );
    assert_eq!(report["dataset"]["questions"], 9);
    assert!(report["dataset"]["noise_items"].as_u64().unwrap() > 0);
    assert_eq!(report["protocol"]["noise"]["seed"], 42);
    let retrieval = &presets[0]["overall"];
    assert_eq!(retrieval["asks"], 9);
    // Each gold turn is one of a few short turns: retrieval finds it within ten.
    assert!(
        retrieval["recall_at"][2].as_f64().unwrap() >= 0.6,
        "{retrieval}"
    );
    // A window of one turn cannot hold evidence from the first session.
    assert!(
        presets[2]["overall"]["evidence_in_context"]
            .as_f64()
            .unwrap()
            < 0.5
    );
    let asks = std::fs::read_to_string(out_dir.join("asks.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(asks.lines().next().unwrap()).unwrap();
    assert!(first["context_text"].is_string() && first["gold"].is_array());
    let checksums: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("checksums.json")).unwrap())
            .unwrap();
    assert_eq!(checksums[0]["sha256"].as_str().unwrap().len(), 64);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("## Quality (final asks)") && md.contains("plots/memory-growth.svg"));

    // Refuses to overwrite a report unless asked; bad protocol options are clear errors.
    let again = mnemos(
        &dir.path().join("x.db"),
        &[
            "eval",
            "run",
            file.to_str().unwrap(),
            "--presets",
            "recent",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(!again.status.success());
    for (flag, value) in [
        ("--scenario", "watching"),
        ("--presets", "nosuch"),
        ("--sweep", "recent"),
    ] {
        let bad = mnemos(
            &dir.path().join("x.db"),
            &["eval", "run", file.to_str().unwrap(), flag, value],
        );
        assert!(!bad.status.success(), "{flag} {value}");
    }
}

#[test]
fn model_try_runs_a_task_offline_and_through_an_llm_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // Unknown tasks list the valid ones.
    let out = mnemos(&db, &["model", "try", "sumarize", "x"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("persona_snapshot"),
        "{}",
        stderr(&out)
    );

    // The same task through a loopback OpenAI-compatible server.
    let server = mnemos_testkit::ScriptedLlm::start().unwrap();
    server.set_default(
        "classify_query",
        mnemos_testkit::Step::reply_json(&serde_json::json!({"p_semantic": 0.9})),
    );
    let url = server.base_url();
    let out = mnemos(
        &db,
        &[
            "model",
            "try",
            "classify_query",
            "How old is Mia?",
            "--llm",
            &url,
            "--llm-model",
            "tiny",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["model"], "llm:tiny");
    assert!((report["output"]["value"]["semantic"].as_f64().unwrap() - 0.9).abs() < 1e-6);
    assert_eq!(report["usage"]["tasks"]["classify_query"]["calls"], 1);
    assert_eq!(server.requests_for("classify_query").len(), 1);

    // --llm URL without a model name is a clear error, before any request.
    let out = mnemos(&db, &["model", "try", "arousal", "wow", "--llm", &url]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--llm-model"), "{}", stderr(&out));
}

#[test]
fn model_try_against_a_silent_endpoint_says_it_waits_and_gives_up() {
    // A loopback server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = mnemos(
        &dir.path().join("m.db"),
        &[
            "model",
            "try",
            "arousal",
            "wow",
            "--llm",
            &url,
            "--llm-model",
            "m",
            "--llm-timeout",
            "0.5",
        ],
    );
    assert_eq!(
        code(&out),
        1,
        "a dead endpoint is a service error: {}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(err.contains("asking m at"), "{err}");
    assert!(err.contains("arousal failed"), "{err}");
    // Three tries of half a second plus backoff, not the default minutes.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// A ZH-4O-shaped directory: two labelled dialogues of ten messages.
fn write_zh4o_fixture(dir: &Path) {
    let meta = serde_json::json!({"primary_bot_name": "白羽岚", "user_name": "赵齐"});
    let message = |i: usize, text: &str| {
        let (sender, flag) = if i.is_multiple_of(2) {
            ("白羽岚", "G")
        } else {
            ("赵齐", "U")
        };
        serde_json::json!({"sender_name": sender, "text": text, "flag": flag})
    };
    let dialogues = [
        (
            [
                "早上好，今天想做什么？",
                "我想去公园散步，我最喜欢春天的公园。",
                "好啊，公园里的花都开了。",
                "我是一名中学老师，平时工作很忙。",
                "老师辛苦了，周末要好好休息。",
                "我养了一只叫小白的猫。",
                "小白一定很可爱。",
                "我不喜欢吃辣的东西。",
                "那我们去吃粤菜吧。",
                "好的，谢谢你。",
            ],
            serde_json::json!({"1": ["赵齐最喜欢春天的公园"], "3": ["赵齐是一名中学老师"],
                               "5": ["赵齐养了一只叫小白的猫"], "7": ["赵齐不喜欢吃辣"]}),
        ),
        (
            [
                "你回来了！",
                "我今天去医院看了牙医。",
                "牙还疼吗？",
                "不疼了，医生说我要少吃糖。",
                "那以后我给你做无糖蛋糕。",
                "我妹妹下个月要结婚了。",
                "恭喜你妹妹！",
                "我要给她准备一份礼物。",
                "我陪你去挑礼物。",
                "太好了。",
            ],
            serde_json::json!({"1": ["赵齐今天去看了牙医"], "5": ["赵齐的妹妹下个月结婚"]}),
        ),
    ];
    std::fs::create_dir_all(dir.join("label")).unwrap();
    let mut lines = String::new();
    for (index, (texts, labels)) in dialogues.iter().enumerate() {
        let messages: Vec<_> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| message(i, t))
            .collect();
        let line = serde_json::json!({"role_meta": meta, "messages": messages});
        lines.push_str(&line.to_string());
        lines.push('\n');
        let labelled = serde_json::json!({"role_meta": meta, "messages": messages,
                                          "memory_human_label": labels});
        std::fs::write(
            dir.join("label").join(format!("ZH-4O_label_{index}.jsonl")),
            labelled.to_string(),
        )
        .unwrap();
    }
    std::fs::write(dir.join("ZH-4O_dataset.jsonl"), lines).unwrap();
}

#[test]
fn eval_extraction_scores_derived_memories_of_a_small_zh4o_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("zh4o");
    write_zh4o_fixture(&data);
    let out_dir = dir.path().join("report");
    let out = mnemos(
        &dir.path().join("x.db"),
        &[
            "eval",
            "extraction",
            data.to_str().unwrap(),
            "--presets",
            "memorybank,full",
            "--session-messages",
            "5",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("# mnemos eval extraction: zh4o"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert!(out_dir.join("report.md").is_file());
    assert_eq!(report["dataset"]["name"], "zh4o");
    assert_eq!(report["dataset"]["dialogues"], 2);
    assert_eq!(report["dataset"]["labels"], 6);
    assert_eq!(report["protocol"]["session_messages"], 5);
    let presets = report["presets"].as_array().unwrap();
    assert_eq!(presets.len(), 2);
    let memorybank = &presets[0];
    assert_eq!(memorybank["preset"], "memorybank");
    assert_eq!(memorybank["labels"], 6);
    // Two sessions per dialogue: a summary each, plus the profile.
    assert!(memorybank["memories_per_dialogue"].as_f64().unwrap() >= 2.0);
    assert!(memorybank["memories_by_kind"]["summary"].as_u64().unwrap() >= 4);
    let scores = memorybank["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 2);
    assert_eq!(scores[0]["granularity"], "char");
    assert_eq!(scores[1]["granularity"], "word");
    // Extractive summaries hold the labelled sentences almost verbatim.
    assert!(scores[0]["rouge_l"]["recall"].as_f64().unwrap() > 0.5);
    assert!(scores[0]["rouge_l"]["precision"].as_f64().unwrap() > 0.0);
    assert!(memorybank["embedding"].as_f64().unwrap() > 0.0);
    assert_eq!(memorybank["per_dialogue"].as_array().unwrap().len(), 2);
    // full keeps raw turns only: nothing extracted, every score 0.
    let full = &presets[1];
    assert_eq!(full["preset"], "full");
    assert_eq!(full["memories_per_dialogue"], 0.0);
    assert_eq!(full["scores"][0]["rouge_l"]["f"], 0.0);
    assert_eq!(full["embedding"], 0.0);
    assert!(full["cost"]["final_memories"].as_f64().unwrap() >= 10.0);
}

/// One ZH-4O-shaped dialogue of `rounds` rounds (user line + bot reply), labelled once.
fn write_long_zh4o_fixture(dir: &Path, rounds: usize) {
    let meta = serde_json::json!({"primary_bot_name": "白羽岚", "user_name": "赵齐"});
    let mut messages = Vec::new();
    for r in 0..rounds {
        messages.push(serde_json::json!({"sender_name": "赵齐", "flag": "U",
            "text": format!("第{r}天，我喜欢在公园里散步，今天看到了{r}只鸽子。")}));
        messages.push(serde_json::json!({"sender_name": "白羽岚", "flag": "G",
            "text": format!("真好，第{r}天的公园一定很安静。")}));
    }
    std::fs::create_dir_all(dir.join("label")).unwrap();
    let labelled = serde_json::json!({"role_meta": meta, "messages": messages,
                                      "memory_human_label": {"1": ["赵齐喜欢在公园散步"]}});
    std::fs::write(
        dir.join("label").join("ZH-4O_label_0.jsonl"),
        labelled.to_string(),
    )
    .unwrap();
    let line = serde_json::json!({"role_meta": meta, "messages": messages});
    std::fs::write(dir.join("ZH-4O_dataset.jsonl"), format!("{line}\n")).unwrap();
}

/// MOOM through an LLM endpoint: the jobs' schedule decides the calls, whatever the model —
/// 60 rounds in one session are 10 units → 2 level-2 summaries, and a persona snapshot every
/// 10 rounds plus one when the session closes. Each preset's calls are counted by the server.
#[test]
fn moom_calls_an_llm_on_its_schedule_and_reports_calls_and_tokens_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("zh4o");
    write_long_zh4o_fixture(&data, 60);
    let mut calls = std::collections::BTreeMap::new();
    for preset in ["moom", "memorybank"] {
        let server = mnemos_testkit::ScriptedLlm::start().unwrap();
        server.set_default(
            "summarize",
            mnemos_testkit::Step::reply_json(
                &serde_json::json!({"summary": "赵齐每天去公园散步。"}),
            )
            .with_usage(300, 20),
        );
        server.set_default(
            "persona_snapshot",
            mnemos_testkit::Step::reply_json(&serde_json::json!({"values": [
                {"key": "likes", "value": "在公园散步", "line": 0}
            ]}))
            .with_usage(400, 30),
        );
        let config = dir.path().join(format!("{preset}.toml"));
        std::fs::write(
            &config,
            format!(
                "[llm]\nbase_url = \"{}\"\nmodel = \"tiny\"\nmax_retries = 0\n",
                server.base_url()
            ),
        )
        .unwrap();
        let out = mnemos(
            &dir.path().join(format!("{preset}.db")),
            &[
                "--config",
                config.to_str().unwrap(),
                "eval",
                "extraction",
                data.to_str().unwrap(),
                "--presets",
                preset,
                "--session-messages",
                "0",
                "--json",
            ],
        );
        assert!(out.status.success(), "{preset}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let row = &report["presets"][0];
        assert_eq!(row["cost"]["jobs_failed"], 0, "{row}");
        let summaries = server.requests_for("summarize").len();
        let snapshots = server.requests_for("persona_snapshot").len();
        let per_turn = row["cost"]["model_calls_per_turn"].as_f64().unwrap();
        let tokens = row["cost"]["model_tokens_per_turn"].as_f64().unwrap();
        assert!(
            (per_turn * 120.0 - (summaries + snapshots) as f64).abs() < 1e-6,
            "{preset}: {per_turn} per turn vs {summaries} + {snapshots} requests"
        );
        assert!(tokens > 0.0);
        calls.insert(preset, (summaries, snapshots));
    }
    assert_eq!(calls["moom"], (2, 6), "{calls:?}");
    // MemoryBank summarizes the closed session and rebuilds its profile: two calls.
    assert_eq!(calls["memorybank"], (2, 0), "{calls:?}");
}

#[test]
fn serve_answers_over_http_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let refused = mnemos(&db, &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("loopback"),
        "{}",
        stderr(&refused)
    );
    assert!(!db.exists(), "a refused start leaves no database behind");
    // The MCP tools' default user follows the rules of every user name.
    for command in ["serve", "mcp"] {
        let refused = mnemos(&db, &[command, "--user", "", "--agent", "desk"]);
        assert_eq!(code(&refused), 2, "{}", stderr(&refused));
        assert!(
            stderr(&refused).contains("default user must not be empty"),
            "{}",
            stderr(&refused)
        );
    }

    let (mut child, url, start) = spawn_serve(&db, &[]);
    let serving = start.last().unwrap();
    assert!(
        serving.contains("requests without a key in tenant default"),
        "{serving}"
    );
    let client = reqwest::blocking::Client::new();
    let added = client
        .post(format!("{url}/users/lena/turns"))
        .json(&serde_json::json!({"turns": [{"role": "user", "text": "我在杭州做后端工程师。"}]}))
        .send()
        .unwrap();
    assert_eq!(added.status().as_u16(), 201);
    let found: serde_json::Value = client
        .post(format!("{url}/users/lena/search"))
        .json(&serde_json::json!({"query": "杭州"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(found["hits"][0]["memory"]["text"], "我在杭州做后端工程师。");

    assert_eq!(
        sigterm(&mut child),
        Some(0),
        "SIGTERM stops the server cleanly"
    );
    let listed = mnemos(&db, &["list", "--user", "lena"]);
    assert!(stdout(&listed).contains("杭州"), "{}", stdout(&listed));
}

/// `mnemos serve` on a free loopback port: the child, its `/v1` URL and its start-up lines.
fn spawn_serve(db: &Path, env: &[(&str, &str)]) -> (std::process::Child, String, Vec<String>) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemos"))
        .arg("--db")
        .arg(db)
        .args(["--embedder", "hash", "serve", "--listen", "127.0.0.1:0"])
        .env_remove("MNEMOS_CONFIG")
        .env_remove("MNEMOS_DB")
        .env_remove("MNEMOS_ADMIN_KEY")
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let url = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        seen.push(line.clone());
        if let Some(at) = line.find("http://") {
            break line[at..].split_whitespace().next().unwrap().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, url, seen)
}

fn sigterm(child: &mut std::process::Child) -> Option<i32> {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap().code()
}

#[test]
fn keys_are_made_once_listed_without_secrets_revoked_and_required_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let untenanted = mnemos(&db, &["keys", "create"]);
    assert_eq!(code(&untenanted), 2, "{}", stderr(&untenanted));
    let made = mnemos(
        &db,
        &["--tenant", "acme", "keys", "create", "--name", "bot"],
    );
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let secret = stdout(&made).trim().to_string();
    assert!(secret.starts_with("mnk_") && secret.len() == 68, "{secret}");
    assert!(
        stderr(&made).contains("shown only now"),
        "{}",
        stderr(&made)
    );

    let listed = mnemos(&db, &["keys", "list"]);
    assert!(stdout(&listed).contains("acme") && stdout(&listed).contains(&secret[..12]));
    assert!(
        !stdout(&listed).contains(&secret),
        "a listing shows the secret"
    );
    let as_json = mnemos(&db, &["keys", "list", "--json"]);
    assert!(!stdout(&as_json).contains(&secret));
    let keys: serde_json::Value = serde_json::from_str(&stdout(&as_json)).unwrap();
    let id = keys[0]["id"].as_str().unwrap().to_string();

    let (mut child, url, start) = spawn_serve(&db, &[]);
    assert!(
        start.iter().any(|l| l.contains("API keys required")),
        "{start:?}"
    );
    // No default tenant applies when every request needs a key.
    let serving = start.last().unwrap();
    assert!(
        serving.contains("each request in its API key's tenant") && !serving.contains("default"),
        "{serving}"
    );
    let client = reqwest::blocking::Client::new();
    let add = |key: Option<&str>| {
        let mut request = client
            .post(format!("{url}/users/lena/turns"))
            .json(&serde_json::json!({"turns": [{"role": "user", "text": "I keep bees."}]}));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send().unwrap().status().as_u16()
    };
    assert_eq!(add(None), 401);
    assert_eq!(add(Some(&secret)), 201);

    let revoked = mnemos(&db, &["keys", "revoke", &id]);
    assert!(stdout(&revoked).contains("revoked"), "{}", stdout(&revoked));
    std::thread::sleep(std::time::Duration::from_millis(2300));
    assert_eq!(
        add(Some(&secret)),
        401,
        "a revoked key is refused within 2 s"
    );
    assert_eq!(sigterm(&mut child), Some(0));
    let unknown = mnemos(
        &db,
        &["keys", "revoke", "01a2135f-a5d3-7701-aa16-ee52d0349700"],
    );
    assert_eq!(code(&unknown), 2, "{}", stderr(&unknown));
    // Data stays in the key's tenant.
    let theirs = mnemos(&db, &["--tenant", "acme", "list", "--user", "lena"]);
    assert!(stdout(&theirs).contains("bees"), "{}", stdout(&theirs));
}

/// One add of a stream: its key, its text and the answer (`None`: no answer, the server died).
fn add_one(
    client: &reqwest::blocking::Client,
    url: &str,
    n: usize,
) -> Option<(u16, serde_json::Value)> {
    let response = client
        .post(format!("{url}/users/lena/turns"))
        .header("Idempotency-Key", format!("add-{n}"))
        .json(&serde_json::json!({"turns": [{"role": "user", "text": format!("note number {n}")}]}))
        .send()
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().ok()?))
}

fn stored_texts(client: &reqwest::blocking::Client, url: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut cursor = String::new();
    loop {
        let page: serde_json::Value = client
            .get(format!("{url}/users/lena/memories?limit=500{cursor}"))
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

#[test]
fn kill_9_during_a_stream_of_adds_loses_no_acknowledged_add() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap();
    let mut acknowledged: Vec<usize> = Vec::new();
    let mut next = 0;
    for run in 0..3u64 {
        let (mut child, url, _) = spawn_serve(&db, &[]);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (client, url, stop) = (client.clone(), url.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let mut n = next;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    match add_one(&client, &url, n) {
                        Some((201, _)) => acked.push(n),
                        _ => break,
                    }
                    n += 1;
                }
                (acked, n)
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(150 + 120 * run));
        child.kill().unwrap(); // SIGKILL: no shutdown, no flush
        child.wait().unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (acked, in_flight) = writer.join().unwrap();
        assert!(
            !acked.is_empty(),
            "run {run}: no add was acknowledged before the kill"
        );
        acknowledged.extend(acked);
        next = in_flight + 1;

        let (mut child, url, _) = spawn_serve(&db, &[]);
        let texts = stored_texts(&client, &url);
        for n in &acknowledged {
            assert!(
                texts.contains(&format!("note number {n}")),
                "run {run}: acknowledged add {n} is lost"
            );
        }
        // The client retries the add it got no answer for, and one it did: neither is stored
        // twice.
        let (status, retried) = add_one(&client, &url, in_flight).unwrap();
        assert_eq!(status, 201, "{retried}");
        let last = *acknowledged.last().unwrap();
        let (_, again) = add_one(&client, &url, last).unwrap();
        assert_eq!(again["turns"][0]["status"], "duplicate", "{again}");
        let after = stored_texts(&client, &url);
        let mut unique = after.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            after.len(),
            "run {run}: a retry stored a turn twice"
        );
        assert!(after.contains(&format!("note number {in_flight}")));
        acknowledged.push(in_flight);
        assert_eq!(sigterm(&mut child), Some(0));
    }
}

#[test]
fn mcp_serves_the_memory_tools_over_stdio() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::ServiceExt;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemos")).configure(|c| {
            c.arg("--db")
                .arg(&db)
                .args([
                    "--embedder",
                    "hash",
                    "mcp",
                    "--user",
                    "wei",
                    "--agent",
                    "desk",
                ])
                .env_remove("MNEMOS_CONFIG")
                .env_remove("MNEMOS_DB");
        });
        let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
        let info = client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "mnemos");
        let mut names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["forget", "list", "recall", "remember", "search", "show"]
        );
        let call = |tool: &'static str, args: serde_json::Value| {
            let args = args.as_object().unwrap().clone();
            client.call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        };
        let text = |result: &rmcp::model::CallToolResult| -> String {
            result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect()
        };
        // Desktop clients name no user: the one given with `--user` is meant.
        let stored = call(
            "remember",
            serde_json::json!({"text": "我在杭州做后端工程师。"}),
        )
        .await
        .unwrap();
        assert_ne!(stored.is_error, Some(true), "{}", text(&stored));
        assert!(
            text(&stored).contains("1 turn(s) added"),
            "{}",
            text(&stored)
        );
        let recalled = call("recall", serde_json::json!({"query": "他在哪里工作？杭州"}))
            .await
            .unwrap();
        assert_ne!(recalled.is_error, Some(true), "{}", text(&recalled));
        assert!(
            text(&recalled).contains("我在杭州做后端工程师"),
            "{}",
            text(&recalled)
        );
        let missing = call(
            "forget",
            serde_json::json!({"user": "wei", "id": "nope", "reason": "test"}),
        )
        .await
        .unwrap();
        assert_eq!(missing.is_error, Some(true));
        client.cancel().await.unwrap();
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    let out = mnemos(&db, &["list", "--user", "wei", "--agent", "desk"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("我在杭州做后端工程师。"),
        "{}",
        stdout(&out)
    );
}

/// The texts of a search's hits, in rank order.
fn hit_texts(db: &Path, user: &str, query: &str) -> Vec<String> {
    let out = mnemos(db, &["search", query, "--user", user, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let found: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["memory"]["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ingest_into_pgvector_indexes_what_it_wrote_unless_told_to_defer() {
    let dir = tempfile::tempdir().unwrap();
    let turns = write(
        dir.path(),
        "turns.jsonl",
        r#"{"text": "I adopted a grey cat called Pixel.", "user": "lena"}
{"text": "My sister Mia is allergic to peanuts.", "user": "lena", "session": "s2"}
{"text": "We are flying to Lisbon in June.", "user": "lena", "session": "s2"}
{"text": "我在杭州做后端工程师。", "user": "wei"}
{"text": "周末我喜欢去西湖边跑步。", "user": "wei"}
"#,
    );
    let file = turns.to_str().unwrap();
    let pg = mnemos_testkit::postgres::shared_server().unwrap();
    let indexed = pg.create_database().unwrap();
    let deferred = pg.create_database().unwrap();
    let sqlite = dir.path().join("same.db");

    let out = mnemos(Path::new(&indexed), &["ingest", file, "--workers", "2"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ingested 5 new turn(s) for 2 user(s)"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("vector window(s) indexed in"),
        "the index caught up before exit: {}",
        stdout(&out)
    );
    let out = mnemos(Path::new(&deferred), &["ingest", file, "--defer-index"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("indexed in"), "{}", stdout(&out));
    let out = mnemos(&sqlite, &["ingest", file, "--workers", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // Indexed, waiting for the index, or in process: the same memories, in the same order.
    for (user, query) in [("lena", "who has a peanut allergy"), ("wei", "西湖跑步")] {
        let expected = hit_texts(&sqlite, user, query);
        assert!(!expected.is_empty(), "{user}: {query}");
        assert_eq!(hit_texts(Path::new(&indexed), user, query), expected);
        assert_eq!(hit_texts(Path::new(&deferred), user, query), expected);
    }
}

#[test]
fn ingest_refuses_zero_workers_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let file = write(dir.path(), "t.jsonl", GOOD);
    let out = mnemos(&db, &["ingest", file.to_str().unwrap(), "--workers", "0"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("workers must be at least 1"),
        "{}",
        stderr(&out)
    );
    let users = mnemos(&db, &["users"]);
    assert!(!stdout(&users).contains("lena"), "{}", stdout(&users));
}
