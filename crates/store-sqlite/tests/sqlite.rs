//! Integration tests of the SQLite store: the conformance suite on a file and in memory, purge
//! leaving no bytes behind, crash safety under SIGKILL, migrations and bad files.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use mnemos_core::{JobRead, JobWrite, MemoryRead, MemoryWrite, VectorRead};
use std::path::{Path, PathBuf};

use mnemos_conformance::Guarded;
use mnemos_core::{
    BatchForget, BatchUpdate, Job, Memory, MemoryId, MemoryKind, MemoryPatch, Metadata, Metrics,
    Moment, Page, Role, Scope, Store, StoreError, Timestamp, Turn, TurnId, UserKey, VectorRow,
    WriteBatch,
};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION};
use tempfile::TempDir;

fn temp_path() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mnemos.db");
    (dir, path)
}

fn temp_store() -> Guarded<SqliteStore, TempDir> {
    let (dir, path) = temp_path();
    let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open temp store");
    Guarded::new(store, dir)
}

fn memory_store() -> SqliteStore {
    SqliteStore::open_in_memory().expect("open in-memory store")
}

fn scope(user: &UserKey, session: &str) -> Scope {
    Scope {
        tenant: user.tenant.clone(),
        user: user.user.clone(),
        agent: "agent".into(),
        session: session.into(),
    }
}

fn turn(scope: &Scope, round: u64, text: String) -> Turn {
    Turn {
        id: TurnId::new(),
        scope: scope.clone(),
        role: Role::User,
        speaker: None,
        text,
        at: Moment {
            round,
            time: Timestamp(1_750_000_000_000 + round as i64),
        },
        metadata: Metadata::new(),
        key: None,
    }
}

fn unit_vector(id: MemoryId, dim: usize, seed: usize) -> VectorRow {
    let vector = (0..dim)
        .map(|i| ((i * 31 + seed * 17) % 97) as f32 / 97.0)
        .collect();
    VectorRow {
        memory_id: id,
        model: "test-model".into(),
        vector,
    }
}

fn all_turns(store: &dyn Store, user: &UserKey) -> Vec<Turn> {
    let mut out = Vec::new();
    let mut page = Page::first(5_000);
    loop {
        let got = store.turns(user, page).expect("turns");
        out.extend(got.items);
        match got.next_offset {
            Some(next) => page.offset = next,
            None => return out,
        }
    }
}

mod conformance_file {
    mnemos_conformance::conformance_tests!(super::temp_store);
}

mod conformance_in_memory {
    mnemos_conformance::conformance_tests!(super::memory_store);
}

mod conformance_reads_on_writer {
    /// Reads through the writer connection instead of the reader pool: the same contract holds.
    fn store() -> mnemos_conformance::Guarded<mnemos_store_sqlite::SqliteStore, tempfile::TempDir> {
        let (dir, path) = super::temp_path();
        let options = mnemos_store_sqlite::SqliteOptions {
            read_connections: 0,
            ..Default::default()
        };
        let store = mnemos_store_sqlite::SqliteStore::open(&path, options).expect("open");
        mnemos_conformance::Guarded::new(store, dir)
    }

    #[test]
    fn whole_suite() {
        mnemos_conformance::run_all(&store);
    }
}

mod purge {
    use super::*;

    const GONE: &str = "ZEBRA-MARKER-7f3a9c";
    const KEPT: &str = "OKAPI-MARKER-2b8e1d";

    fn contains(haystack: &[u8], needle: &str) -> bool {
        haystack
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    }

    /// Bytes of the database file and its WAL and shared-memory files, by file name.
    fn files(path: &Path) -> Vec<(String, Vec<u8>)> {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| {
                let file = PathBuf::from(format!("{}{suffix}", path.display()));
                std::fs::read(&file)
                    .ok()
                    .map(|bytes| (file.display().to_string(), bytes))
            })
            .collect()
    }

    fn assert_no_marker(path: &Path, when: &str) {
        for (name, bytes) in files(path) {
            assert!(
                !contains(&bytes, GONE),
                "{when}: {name} ({} bytes) still contains the purged marker",
                bytes.len()
            );
        }
    }

    fn assert_kept_marker_on_disk(path: &Path, when: &str) {
        assert!(
            files(path).iter().any(|(_, bytes)| contains(bytes, KEPT)),
            "{when}: the other user's marker is not on disk, so the search proves nothing"
        );
    }

    /// One user's data, with `marker` in every place user text can live.
    fn write_user(
        store: &SqliteStore,
        user: &UserKey,
        marker: &str,
        rounds: std::ops::Range<u64>,
    ) -> Vec<MemoryId> {
        let sc = scope(user, &format!("session {marker}"));
        let mut ids = Vec::new();
        for round in rounds {
            // Every fifth text is large enough to spill into overflow pages.
            let filler = if round % 5 == 0 {
                "long text ".repeat(2_000)
            } else {
                String::new()
            };
            let mut t = turn(
                &sc,
                round,
                format!("round {round}: my secret is {marker} {filler}"),
            );
            t.speaker = Some(format!("speaker {marker}"));
            t.metadata
                .insert("note".into(), format!("metadata {marker}"));
            let mut m = Memory::from_turn(&t);
            m.kind = if round % 3 == 0 {
                MemoryKind::Persona {
                    key: format!("key {marker}"),
                }
            } else {
                MemoryKind::Turn
            };
            let v = unit_vector(m.id, 384, round as usize);
            // Derived work whose payload quotes the user.
            let jobs = if round % 4 == 0 {
                vec![Job::new(
                    sc.clone(),
                    "test",
                    "summary",
                    format!(r#"{{"quote":"{marker} said something"}}"#),
                    t.at,
                )]
            } else {
                Vec::new()
            };
            ids.push(m.id);
            store
                .write(WriteBatch {
                    turns: vec![t],
                    memories: vec![m],
                    vectors: vec![v],
                    jobs,
                    ..Default::default()
                })
                .expect("write");
        }
        ids
    }

    /// Erasure (a user's forget request) leaves no trace of the erased words in the file or
    /// its WAL, while the same user's other memories stay, as purge does for a whole user.
    #[test]
    fn erasure_leaves_no_trace_in_database_or_wal() {
        let (_dir, path) = temp_path();
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
        let user = UserKey {
            tenant: "tenant".into(),
            user: "alice".into(),
        };
        let sc = scope(&user, "s1");
        let mut erased = Vec::new();
        for round in 0..40u64 {
            let marker = if round % 4 == 0 { GONE } else { KEPT };
            let filler = if round % 8 == 0 {
                "long text ".repeat(2_000)
            } else {
                String::new()
            };
            let mut t = turn(
                &sc,
                round,
                format!("round {round}: my passport is {marker} {filler}"),
            );
            t.metadata
                .insert("note".into(), format!("metadata {marker}"));
            let mut m = Memory::from_turn(&t);
            m.metadata.insert("speaker".into(), "Ann".into());
            let v = unit_vector(m.id, 384, round as usize);
            if marker == GONE {
                erased.push((m.id, t.id));
            }
            store
                .write(WriteBatch {
                    turns: vec![t],
                    memories: vec![m],
                    vectors: vec![v],
                    ..Default::default()
                })
                .expect("write");
        }
        // A second version carrying the marker again.
        for (id, _) in &erased {
            let patch = MemoryPatch {
                text: Some(format!("edited: {GONE}")),
                ..Default::default()
            };
            store
                .write(WriteBatch {
                    user: Some(user.clone()),
                    updates: vec![BatchUpdate {
                        id: *id,
                        patch: patch.clone(),
                        at: Moment {
                            round: 50,
                            time: Timestamp(0),
                        },
                    }],
                    ..Default::default()
                })
                .expect("update");
        }
        assert!(
            files(&path).iter().any(|(_, b)| contains(b, GONE)),
            "fixture: the marker must be on disk before the erasure"
        );
        let at = Moment {
            round: 60,
            time: Timestamp(0),
        };
        let batch = WriteBatch {
            user: Some(user.clone()),
            erasures: erased
                .iter()
                .map(|(id, _)| mnemos_core::BatchErase {
                    id: *id,
                    reason: "the user asked to forget: passport".into(),
                    placeholder: "[forgotten at the user's request]".into(),
                    metadata: [("speaker".to_string(), "Ann".to_string())]
                        .into_iter()
                        .collect(),
                    at,
                })
                .collect(),
            turn_erasures: erased
                .iter()
                .map(|(_, turn)| mnemos_core::TurnErase {
                    id: *turn,
                    placeholder: "[forgotten at the user's request]".into(),
                })
                .collect(),
            ..Default::default()
        };
        store.write(batch).expect("erase");
        assert_no_marker(&path, "right after the erasure (store open)");
        assert_kept_marker_on_disk(&path, "right after the erasure");
        assert_eq!(all_turns(&store, &user).len(), 40, "no turn is deleted");
        assert!(store.integrity_check().expect("integrity").is_empty());
        drop(store);
        assert_no_marker(&path, "after close");
    }

    #[test]
    fn purge_leaves_no_trace_in_database_or_wal() {
        let (_dir, path) = temp_path();
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
        let gone_user = UserKey {
            tenant: "tenant".into(),
            user: format!("alice {GONE}"),
        };
        let kept_user = UserKey {
            tenant: "tenant".into(),
            user: "bob".into(),
        };
        // Interleave the two users so their rows share pages.
        let mut gone_ids = Vec::new();
        let mut kept_ids = Vec::new();
        for chunk in 0..6u64 {
            gone_ids.extend(write_user(
                &store,
                &gone_user,
                GONE,
                chunk * 20..chunk * 20 + 20,
            ));
            kept_ids.extend(write_user(
                &store,
                &kept_user,
                KEPT,
                chunk * 20..chunk * 20 + 20,
            ));
        }
        // History entries and access logs carrying the marker.
        for (i, id) in gone_ids.iter().enumerate().take(30) {
            let patch = MemoryPatch {
                text: Some(format!("updated {GONE} #{i}")),
                ..Default::default()
            };
            store
                .write(WriteBatch {
                    user: Some(gone_user.clone()),
                    updates: vec![BatchUpdate {
                        id: *id,
                        patch: patch.clone(),
                        at: Moment {
                            round: 500,
                            time: Timestamp(0),
                        },
                    }],
                    ..Default::default()
                })
                .expect("update");
            if i % 3 == 0 {
                store
                    .write(WriteBatch {
                        user: Some(gone_user.clone()),
                        forgets: vec![BatchForget {
                            id: *id,
                            reason: format!("reason {GONE}"),
                            cause: mnemos_core::ForgetCause::Request,
                            at: Moment {
                                round: 501,
                                time: Timestamp(0),
                            },
                        }],
                        ..Default::default()
                    })
                    .expect("forget");
            }
        }
        let accesses: Vec<_> = gone_ids
            .iter()
            .map(|id| {
                (
                    *id,
                    mnemos_core::Access {
                        at: Moment::default(),
                        rank: 1,
                    },
                )
            })
            .collect();
        store
            .record_access(&gone_user, &accesses)
            .expect("record access");
        // Jobs: some finished, some failed with an error that quotes the user.
        let gone_jobs = store.pending_jobs(&gone_user, 1_000).expect("pending jobs");
        assert_eq!(gone_jobs.len(), 30);
        let finished_jobs = gone_jobs
            .iter()
            .step_by(2)
            .map(|j| (j.id, Moment::default()))
            .collect();
        store
            .write(WriteBatch {
                user: Some(gone_user.clone()),
                finished_jobs,
                ..Default::default()
            })
            .expect("finish jobs");
        for job in gone_jobs.iter().skip(1).step_by(2) {
            store
                .record_job_failure(&gone_user, job.id, &format!("error {GONE}"))
                .expect("record job failure");
        }
        let kept_jobs = store.pending_jobs(&kept_user, 1_000).expect("pending jobs");
        assert_eq!(kept_jobs.len(), 30);
        let before = all_turns(&store, &kept_user);
        assert!(
            files(&path).iter().any(|(_, b)| contains(b, GONE)),
            "fixture: the marker must be on disk before the purge"
        );

        let report = store.purge_user(&gone_user).expect("purge");
        assert_eq!(report.turns, 120);
        assert_eq!(report.memories, 120);
        assert_eq!(report.history_entries, 120 + 30 + 10);
        assert_eq!(report.vectors, 120 - 10);

        // The store is still open: the realistic case.
        assert_no_marker(&path, "right after purge (store open)");
        assert_kept_marker_on_disk(&path, "right after purge");
        let after = all_turns(&store, &kept_user);
        assert_eq!(after, before, "the other user's turns are intact");
        assert!(after.iter().all(|t| t.text.contains(KEPT)));
        let kept_memories = store.memories(&kept_user, &kept_ids).expect("memories");
        assert_eq!(kept_memories.len(), kept_ids.len());
        assert!(store
            .turns(&gone_user, Page::first(10))
            .expect("turns")
            .items
            .is_empty());
        assert_eq!(store.users().expect("users"), vec![kept_user.clone()]);
        for job in &gone_jobs {
            assert_eq!(store.job(&gone_user, job.id).expect("job"), None);
        }
        assert_eq!(
            store.pending_jobs(&kept_user, 1_000).expect("pending jobs"),
            kept_jobs,
            "the other user's jobs are intact"
        );

        // Later writes and a clean close bring nothing back.
        write_user(&store, &kept_user, KEPT, 1_000..1_040);
        assert_no_marker(&path, "after more writes");
        assert!(store.integrity_check().expect("integrity").is_empty());
        drop(store);
        assert_no_marker(&path, "after close");
        assert_kept_marker_on_disk(&path, "after close");
        let reopened = SqliteStore::open(&path, SqliteOptions::default()).expect("reopen");
        assert_eq!(all_turns(&reopened, &kept_user).len(), 160);
        assert!(reopened
            .users()
            .expect("users")
            .iter()
            .all(|u| u != &gone_user));
    }
}

mod crash {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const CHILD_ENV: &str = "MNEMOS_CRASH_CHILD";
    const BATCH_ENV: &str = "MNEMOS_CRASH_BATCH";
    const MIN_ACKS: u64 = 200;

    fn crash_user() -> UserKey {
        UserKey {
            tenant: "crash".into(),
            user: "writer".into(),
        }
    }

    fn text_of(round: u64) -> String {
        format!("crash-test turn {round}")
    }

    /// The child half: only active when re-run by `kill_and_verify`. Continues after the last
    /// stored round, writes batches forever and prints `ACK <highest round>` after each `write`
    /// returned `Ok`.
    #[test]
    fn child() {
        let Ok(path) = std::env::var(CHILD_ENV) else {
            return;
        };
        let per_batch: u64 = std::env::var(BATCH_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let store =
            SqliteStore::open(Path::new(&path), SqliteOptions::default()).expect("child open");
        let user = crash_user();
        let sc = scope(&user, "s");
        let mut next = store
            .last_round(&user)
            .expect("last round")
            .map_or(0, |r| r + 1);
        let mut out = std::io::stdout().lock();
        // A safety stop in case the parent died without killing us.
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let turns: Vec<Turn> = (next..next + per_batch)
                .map(|r| turn(&sc, r, text_of(r)))
                .collect();
            let memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
            let vectors = memories
                .iter()
                .map(|m| unit_vector(m.id, 32, next as usize))
                .collect();
            store
                .write(WriteBatch {
                    turns,
                    memories,
                    vectors,
                    ..Default::default()
                })
                .expect("child write");
            next += per_batch;
            writeln!(out, "ACK {}", next - 1).expect("stdout");
            out.flush().expect("stdout");
        }
    }

    fn parse_ack(line: &str) -> Option<u64> {
        line.strip_prefix("ACK ")
            .and_then(|n| n.trim().parse().ok())
    }

    /// Run the child until it acknowledged `MIN_ACKS` batches, SIGKILL it, and return the
    /// highest acknowledged round.
    fn run_and_kill(path: &Path, per_batch: u64) -> u64 {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "crash::child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, path)
            .env(BATCH_ENV, per_batch.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut acks = 0u64;
        let mut highest = None;
        for line in lines.by_ref() {
            if let Some(round) = parse_ack(&line.expect("read child")) {
                acks += 1;
                highest = Some(round);
                if acks >= MIN_ACKS {
                    break;
                }
            }
        }
        // SIGKILL while the child is in the middle of its next writes.
        child.kill().expect("kill child");
        let status = child.wait().expect("wait child");
        // Acks printed before the kill landed are acknowledgements too.
        for line in lines {
            let Ok(line) = line else { break };
            if let Some(round) = parse_ack(&line) {
                acks += 1;
                highest = Some(round);
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                status.signal(),
                Some(9),
                "the child must die by SIGKILL, not exit ({status})"
            );
        }
        assert!(acks >= MIN_ACKS, "child acknowledged only {acks} batches");
        highest.unwrap_or_else(|| panic!("no acknowledgement"))
    }

    fn kill_and_verify(per_batch: u64) {
        const CYCLES: usize = 3;
        let (_dir, path) = temp_path();
        let user = crash_user();
        for cycle in 0..CYCLES {
            let acked_round = run_and_kill(&path, per_batch);
            let store =
                SqliteStore::open(&path, SqliteOptions::default()).expect("reopen after crash");
            assert_eq!(
                store.integrity_check().expect("integrity check"),
                Vec::<String>::new(),
                "integrity_check"
            );
            let turns = all_turns(&store, &user);
            let acked_turns = acked_round + 1;
            assert!(
                turns.len() as u64 >= acked_turns,
                "cycle {cycle}: {} turns survived, {acked_turns} acknowledged",
                turns.len()
            );
            // A batch is all or nothing, so the survivors are whole batches.
            assert_eq!(
                turns.len() as u64 % per_batch,
                0,
                "cycle {cycle}: a partially written batch survived"
            );
            for (round, t) in turns.iter().enumerate() {
                assert_eq!(
                    t.at.round, round as u64,
                    "cycle {cycle}: round {round} is missing"
                );
                assert_eq!(t.text, text_of(round as u64));
            }
            let memories = store
                .list(&user, &Default::default(), Page::first(1))
                .expect("list");
            assert_eq!(
                memories.total,
                turns.len(),
                "every surviving turn has its memory"
            );
            assert_eq!(
                store.vectors(&user, "test-model").expect("vectors").len(),
                turns.len()
            );
        }
    }

    #[test]
    fn sigkill_during_single_turn_writes_loses_no_acknowledged_turn() {
        kill_and_verify(1);
    }

    #[test]
    fn sigkill_during_bulk_ingest_loses_no_acknowledged_batch() {
        kill_and_verify(50);
    }
}

mod migrations {
    use super::*;
    use rusqlite::Connection;

    fn tables(path: &Path) -> Vec<String> {
        let conn = Connection::open(path).expect("raw open");
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    fn raw_user_version(path: &Path) -> i64 {
        Connection::open(path)
            .expect("raw open")
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("pragma")
    }

    /// The binding lives in the file: another handle and a reopen read it; a file from before
    /// V8 upgrades with none.
    #[test]
    fn the_binding_survives_reopening_and_a_v7_file_has_none() {
        use mnemos_core::{BindingRead, BindingWrite};
        let (_dir, path) = temp_path();
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
        store.bind("hash-v1-384", None).expect("bind");
        let other = SqliteStore::open(&path, SqliteOptions::default()).expect("second handle");
        assert_eq!(
            other.binding().expect("read").as_deref(),
            Some("hash-v1-384")
        );
        drop((store, other));
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("reopen");
        assert_eq!(
            store.binding().expect("read").as_deref(),
            Some("hash-v1-384")
        );
        drop(store);
        let conn = Connection::open(&path).expect("raw open");
        conn.execute_batch("DROP TABLE meta; PRAGMA user_version = 7;")
            .expect("back to V7");
        drop(conn);
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("upgrade");
        assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
        assert_eq!(store.binding().expect("read"), None);
    }

    #[test]
    fn open_creates_the_latest_schema_in_wal_mode() {
        let (_dir, path) = temp_path();
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
        assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
        assert_eq!(store.path(), Some(path.as_path()));
        drop(store);
        assert_eq!(raw_user_version(&path), SCHEMA_VERSION);
        assert_eq!(
            tables(&path),
            vec![
                "api_keys",
                "job_leases",
                "jobs",
                "memories",
                "memory_history",
                "meta",
                "turns",
                "users",
                "vectors"
            ]
        );
        let conn = Connection::open(&path).expect("raw open");
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("journal mode");
        assert_eq!(mode, "wal");
    }

    #[test]
    fn reopening_is_a_no_op_and_keeps_data() {
        let (_dir, path) = temp_path();
        let user = UserKey {
            tenant: "t".into(),
            user: "u".into(),
        };
        let t = turn(&scope(&user, "s"), 1, "persisted".into());
        {
            let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
            store
                .write(WriteBatch {
                    turns: vec![t.clone()],
                    ..Default::default()
                })
                .expect("write");
        }
        let schema_before = tables(&path);
        for _ in 0..2 {
            let store = SqliteStore::open(&path, SqliteOptions::default()).expect("reopen");
            assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
            assert_eq!(store.turn(&user, t.id).expect("turn"), Some(t.clone()));
        }
        assert_eq!(tables(&path), schema_before);
        assert_eq!(raw_user_version(&path), SCHEMA_VERSION);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let (_dir, path) = temp_path();
        drop(SqliteStore::open(&path, SqliteOptions::default()).expect("open"));
        Connection::open(&path)
            .expect("raw open")
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .expect("bump");
        match SqliteStore::open(&path, SqliteOptions::default()) {
            Err(StoreError::SchemaTooNew { found, supported }) => {
                assert_eq!(found, SCHEMA_VERSION + 1);
                assert_eq!(supported, SCHEMA_VERSION);
            }
            Err(other) => panic!("expected SchemaTooNew, got {other}"),
            Ok(_) => panic!("expected SchemaTooNew, the store opened"),
        }
        // The refused file is untouched.
        assert_eq!(raw_user_version(&path), SCHEMA_VERSION + 1);
    }

    #[test]
    fn another_applications_database_is_refused() {
        let (_dir, path) = temp_path();
        Connection::open(&path)
            .expect("raw open")
            .execute_batch("CREATE TABLE invoices (id INTEGER)")
            .expect("create");
        let err = SqliteStore::open(&path, SqliteOptions::default())
            .err()
            .expect("must refuse");
        assert!(err.to_string().contains("another application"), "{err}");
        assert_eq!(
            tables(&path),
            vec!["invoices"],
            "nothing was added to the foreign database"
        );
    }

    #[test]
    fn a_file_that_is_not_sqlite_gives_a_clear_error() {
        let (_dir, path) = temp_path();
        std::fs::write(
            &path,
            b"this is a plain text file, not a database at all; ".repeat(100),
        )
        .expect("write file");
        match SqliteStore::open(&path, SqliteOptions::default()) {
            Err(err @ StoreError::Backend { .. }) => {
                let msg = err.to_string();
                assert!(msg.contains("not a SQLite database"), "{msg}");
                assert!(msg.contains(&path.display().to_string()), "{msg}");
            }
            Err(other) => panic!("unexpected error kind: {other}"),
            Ok(_) => panic!("opened a text file as a database"),
        }
        let missing_dir = path.with_file_name("no-such-dir").join("x.db");
        let err = SqliteStore::open(&missing_dir, SqliteOptions::default())
            .err()
            .expect("must fail");
        assert!(
            matches!(err, StoreError::Backend { op: "open", .. }),
            "{err}"
        );
    }
}

mod limits {
    use super::*;

    fn user() -> UserKey {
        UserKey {
            tenant: "t".into(),
            user: "u".into(),
        }
    }

    #[test]
    fn synchronous_full_round_trips() {
        let (_dir, path) = temp_path();
        let options = SqliteOptions {
            synchronous_full: true,
            ..Default::default()
        };
        let store = SqliteStore::open(&path, options).expect("open");
        let t = turn(&scope(&user(), "s"), 1, "fsynced".into());
        store
            .write(WriteBatch {
                turns: vec![t.clone()],
                ..Default::default()
            })
            .expect("write");
        drop(store);
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("reopen");
        assert_eq!(store.turn(&user(), t.id).expect("turn"), Some(t));
    }

    #[test]
    fn rounds_beyond_i64_and_non_finite_metrics_are_rejected() {
        let store = memory_store();
        let t = turn(&scope(&user(), "s"), u64::MAX, "too late".into());
        let err = store
            .write(WriteBatch {
                turns: vec![t],
                ..Default::default()
            })
            .err();
        assert!(matches!(err, Some(StoreError::InvalidWrite(_))), "{err:?}");
        let mut m = Memory::from_turn(&turn(&scope(&user(), "s"), 1, "metric".into()));
        m.metrics = Metrics {
            importance: Some(f64::NAN),
            ..Default::default()
        };
        let err = store
            .write(WriteBatch {
                memories: vec![m],
                ..Default::default()
            })
            .err();
        assert!(matches!(err, Some(StoreError::InvalidWrite(_))), "{err:?}");
        assert!(store.users().expect("users").is_empty());
    }

    #[test]
    fn duplicate_ids_inside_one_batch_are_rejected() {
        let store = memory_store();
        let t = turn(&scope(&user(), "s"), 1, "twice".into());
        let err = store
            .write(WriteBatch {
                turns: vec![t.clone(), t.clone()],
                ..Default::default()
            })
            .err();
        assert!(matches!(err, Some(StoreError::InvalidWrite(_))), "{err:?}");
        let m = Memory::from_turn(&t);
        let err = store
            .write(WriteBatch {
                turns: vec![t],
                memories: vec![m.clone(), m],
                vectors: vec![],
                ..Default::default()
            })
            .err();
        assert!(matches!(err, Some(StoreError::InvalidWrite(_))), "{err:?}");
        assert!(store.users().expect("users").is_empty());
    }

    #[test]
    fn readers_run_alongside_writers() {
        let (_dir, path) = temp_path();
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open");
        let u = user();
        std::thread::scope(|s| {
            for w in 0..2u64 {
                let (store, u) = (&store, &u);
                s.spawn(move || {
                    let sc = scope(u, &format!("w{w}"));
                    for i in 0..200 {
                        let turns = (0..5)
                            .map(|j| turn(&sc, w * 10_000 + i * 5 + j, format!("t{i}-{j}")))
                            .collect();
                        store
                            .write(WriteBatch {
                                turns,
                                ..Default::default()
                            })
                            .expect("write");
                    }
                });
            }
            for _ in 0..2 {
                let (store, u) = (&store, &u);
                s.spawn(move || {
                    let mut last = 0;
                    for _ in 0..200 {
                        let total = store.turns(u, Page::first(3)).expect("turns").total;
                        assert!(
                            total >= last,
                            "a reader saw the total go back from {last} to {total}"
                        );
                        assert_eq!(total % 5, 0, "a reader saw half a batch");
                        last = total;
                    }
                });
            }
        });
        assert_eq!(store.turns(&u, Page::first(1)).expect("turns").total, 2_000);
    }
}

#[test]
fn data_version_moves_only_for_other_handles_commits() {
    let (_dir, path) = temp_path();
    let here = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let there = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let user = UserKey::new("t", "u").unwrap();
    let other = UserKey::new("t", "other").unwrap();
    let write = |store: &SqliteStore, user: &UserKey, round: u64| {
        store
            .write(WriteBatch {
                turns: vec![turn(&scope(user, "s"), round, format!("turn {round}"))],
                ..Default::default()
            })
            .unwrap();
    };
    let start = here
        .data_version(&user)
        .unwrap()
        .expect("a file store can tell");
    write(&here, &user, 1);
    assert_eq!(
        here.data_version(&user).unwrap(),
        Some(start),
        "own commits"
    );
    write(&there, &user, 2);
    let after = here.data_version(&user).unwrap().unwrap();
    assert_ne!(after, start, "another handle committed the user");
    assert_eq!(
        here.data_version(&user).unwrap(),
        Some(after),
        "stable until the next one"
    );
    // One number for the whole file: coarser than per user, as the contract allows.
    write(&there, &other, 1);
    assert_ne!(here.data_version(&user).unwrap(), Some(after));
    let purged = here.data_version(&user).unwrap();
    there.purge_user(&user).unwrap();
    assert_ne!(
        here.data_version(&user).unwrap(),
        purged,
        "a purge elsewhere"
    );
}
