//! Integration tests of the PostgreSQL store against real throwaway servers: the conformance
//! suite (on Debian's PostgreSQL and on the pgvector build), purge leaving no row of the user
//! in any table, concurrent opens and writers, schema versions, and cross-handle versions.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::Arc;

use mnemos_conformance::Guarded;
use mnemos_core::{
    Conflict, Job, Memory, MemoryId, Metadata, Moment, Precondition, Role, Scope, Store,
    StoreError, StoreRead, Timestamp, Turn, TurnId, UserKey, VectorRow, WriteBatch,
};
use mnemos_store_postgres::{PostgresStore, SCHEMA_VERSION};
use mnemos_testkit::postgres::{shared_server, shared_system_server, TestPostgres};

fn system() -> &'static TestPostgres {
    shared_system_server().expect("Debian's PostgreSQL (scripts/test.sh installs it)")
}

/// A store on a fresh, empty database of `server`.
fn fresh_on(server: &TestPostgres) -> PostgresStore {
    PostgresStore::connect(&server.create_database().unwrap()).unwrap()
}

fn fresh_store() -> Guarded<PostgresStore, ()> {
    Guarded::new(fresh_on(system()), ())
}

fn fresh_pgvector_store() -> Guarded<PostgresStore, ()> {
    Guarded::new(fresh_on(shared_server().expect("the pgserver wheel")), ())
}

mod conformance {
    mnemos_conformance::conformance_tests!(super::fresh_store);
}

mod conformance_on_the_pgvector_build {
    mnemos_conformance::conformance_tests!(super::fresh_pgvector_store);
}

fn raw(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

fn scope(user: &UserKey) -> Scope {
    Scope {
        tenant: user.tenant.clone(),
        user: user.user.clone(),
        agent: "agent".into(),
        session: "s1".into(),
    }
}

fn turn(scope: &Scope, round: u64, text: &str) -> Turn {
    Turn {
        id: TurnId::new(),
        scope: scope.clone(),
        role: Role::User,
        speaker: Some("安娜".into()),
        text: text.into(),
        at: Moment {
            round,
            time: Timestamp(1_750_000_000_000 + round as i64),
        },
        metadata: Metadata::from([("mood".to_string(), "calm".to_string())]),
        key: Some(format!("key-{round}")),
    }
}

/// A user with turns, memories (updated, forgotten: history), vectors, a job and a lease.
fn fill(store: &PostgresStore, user: &UserKey, secret: &str) -> (Vec<TurnId>, Vec<MemoryId>) {
    let scope = scope(user);
    let turns: Vec<Turn> = (0..3)
        .map(|r| turn(&scope, r, &format!("{secret} turn {r}")))
        .collect();
    let memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
    let vectors = memories
        .iter()
        .map(|m| VectorRow {
            memory_id: m.id,
            model: "test".into(),
            vector: vec![0.25, -0.5, 1.0],
        })
        .collect();
    let job = Job::new(scope.clone(), "memorybank", "summary", "{}", turns[0].at);
    store
        .write(WriteBatch {
            turns: turns.clone(),
            memories: memories.clone(),
            vectors,
            jobs: vec![job],
            ..Default::default()
        })
        .unwrap();
    let later = Moment {
        round: 5,
        time: Timestamp(1_750_000_100_000),
    };
    store
        .forget(user, memories[0].id, &format!("{secret} reason"), later)
        .unwrap()
        .unwrap();
    assert!(store
        .lease_jobs(user, "server-a", std::time::Duration::from_secs(60))
        .unwrap());
    (
        turns.iter().map(|t| t.id).collect(),
        memories.iter().map(|m| m.id).collect(),
    )
}

/// Every text-like column of every table in `public`, as text, that contains `needle`.
fn rows_mentioning(url: &str, needle: &str) -> Vec<String> {
    let mut client = raw(url);
    let columns = client
        .query(
            "SELECT table_name::text, column_name::text FROM information_schema.columns \
             WHERE table_schema = 'public'",
            &[],
        )
        .unwrap();
    let mut found = Vec::new();
    for column in columns {
        let (table, name): (String, String) = (column.get(0), column.get(1));
        let sql = format!(
            "SELECT count(*) FROM \"{table}\" WHERE strpos(encode(convert_to(\"{name}\"::text, 'UTF8'), 'escape'), $1) > 0 \
             OR strpos(\"{name}\"::text, $1) > 0"
        );
        let n: i64 = client.query_one(&sql, &[&needle]).unwrap().get(0);
        if n > 0 {
            found.push(format!("{table}.{name} ({n} rows)"));
        }
    }
    found
}

#[test]
fn purge_leaves_no_row_of_the_user_in_any_table() {
    let url = system().create_database().unwrap();
    let store = PostgresStore::connect(&url).unwrap();
    let gone = UserKey::new("acme", "user-to-erase").unwrap();
    let kept = UserKey::new("acme", "user-who-stays").unwrap();
    let (turn_ids, memory_ids) = fill(&store, &gone, "zebra-secret");
    fill(&store, &kept, "otter-secret");
    assert!(!rows_mentioning(&url, "zebra-secret").is_empty());

    let report = store.purge_user(&gone).unwrap();
    assert_eq!((report.turns, report.memories), (3, 3));
    assert_eq!(
        report.vectors, 2,
        "the forgotten memory's vector was already dropped"
    );
    assert_eq!(report.history_entries, 4);
    for needle in ["zebra-secret", "user-to-erase"] {
        assert_eq!(
            rows_mentioning(&url, needle),
            Vec::<String>::new(),
            "{needle}"
        );
    }
    for id in turn_ids
        .iter()
        .map(|t| t.0)
        .chain(memory_ids.iter().map(|m| m.0))
    {
        assert_eq!(rows_mentioning(&url, &id.to_string()), Vec::<String>::new());
    }
    assert!(!rows_mentioning(&url, "otter-secret").is_empty());
    assert!(!rows_mentioning(&url, "user-who-stays").is_empty());
}

#[test]
fn concurrent_opens_migrate_once_and_agree() {
    let url = system().create_database().unwrap();
    let opened: Vec<PostgresStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| PostgresStore::connect(&url).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for store in &opened {
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    }
    let rows: i64 = raw(&url)
        .query_one("SELECT count(*) FROM mnemos_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 1);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let url = system().create_database().unwrap();
    drop(PostgresStore::connect(&url).unwrap());
    raw(&url)
        .execute("UPDATE mnemos_schema SET version = version + 1", &[])
        .unwrap();
    match PostgresStore::connect(&url) {
        Err(StoreError::SchemaTooNew { found, supported }) => {
            assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("a newer schema was accepted"),
    }
    let version: i64 = raw(&url)
        .query_one("SELECT version FROM mnemos_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, SCHEMA_VERSION + 1);
}

#[test]
fn an_unreachable_server_is_unavailable_naming_it_without_the_password() {
    let err = PostgresStore::connect("postgres://ann:hunter2@127.0.0.1:1/db")
        .err()
        .expect("nothing listens on port 1");
    let message = err.to_string();
    assert!(matches!(err, StoreError::Unavailable(_)), "{message}");
    assert!(
        message.contains("127.0.0.1:1") && !message.contains("hunter2"),
        "{message}"
    );
}

#[test]
fn another_handles_commits_change_data_version_and_own_ones_do_not() {
    let url = system().create_database().unwrap();
    let (a, b) = (
        PostgresStore::connect(&url).unwrap(),
        PostgresStore::connect(&url).unwrap(),
    );
    let user = UserKey::new("t", "u").unwrap();
    let before_a = a.data_version(&user).unwrap();
    let before_b = b.data_version(&user).unwrap();
    a.write(WriteBatch {
        turns: vec![turn(&scope(&user), 0, "first")],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        a.data_version(&user).unwrap(),
        before_a,
        "own commits leave it alone"
    );
    let seen = b.data_version(&user).unwrap();
    assert_ne!(seen, before_b, "b sees a's commit");
    assert_eq!(b.data_version(&user).unwrap(), seen, "and nothing else");
}

#[test]
fn concurrent_writers_with_last_round_preconditions_never_share_a_round() {
    let url = system().create_database().unwrap();
    let stores: Vec<Arc<PostgresStore>> = (0..3)
        .map(|_| Arc::new(PostgresStore::connect(&url).unwrap()))
        .collect();
    let user = UserKey::new("t", "racer").unwrap();
    std::thread::scope(|s| {
        for (w, store) in stores.iter().enumerate() {
            let user = user.clone();
            s.spawn(move || {
                let mut written = 0;
                while written < 10 {
                    let last = store.last_round(&user).unwrap();
                    let round = last.map_or(0, |r| r + 1);
                    let mut t = turn(&scope(&user), round, &format!("writer {w} turn {written}"));
                    t.key = None;
                    let batch = WriteBatch {
                        precondition: Precondition::LastRound(last),
                        turns: vec![t],
                        ..Default::default()
                    };
                    match store.write(batch) {
                        Ok(()) => written += 1,
                        Err(StoreError::Conflict(Conflict::LastRoundMoved { .. })) => {}
                        Err(other) => panic!("{other}"),
                    }
                }
            });
        }
    });
    let rounds: Vec<u64> = stores[0]
        .turns(&user, mnemos_core::Page::first(100))
        .unwrap()
        .items
        .iter()
        .map(|t| t.at.round)
        .collect();
    assert_eq!(rounds, (0..30).collect::<Vec<u64>>());
}

#[test]
fn nul_characters_are_invalid_writes_never_backend_errors() {
    let store = fresh_on(system());
    let user = UserKey::new("t", "u").unwrap();
    let (_, memories) = fill(&store, &user, "nul");
    let at = Moment {
        round: 9,
        time: Timestamp(1_750_000_200_000),
    };
    let err = store
        .forget(&user, memories[1], "because\0", at)
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidWrite(_)), "{err}");
    let mut t = turn(&scope(&user), 10, "fine text");
    t.metadata.insert("k".into(), "v\0".into());
    let err = store
        .write(WriteBatch {
            turns: vec![t],
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidWrite(_)), "{err}");
    // A job's error message is a diagnostic: it is kept, with the NUL replaced.
    let job = store.pending_jobs(&user, 1).unwrap().remove(0);
    let failed = store
        .record_job_failure(&user, job.id, "model said \0")
        .unwrap()
        .unwrap();
    assert_eq!(failed.last_error.as_deref(), Some("model said \u{FFFD}"));
}

#[test]
fn vectors_are_searched_in_the_database_exactly_when_pgvector_is_there() {
    let with = fresh_pgvector_store();
    let info = with.info();
    assert!(with.vector_search().is_some(), "{info:?}");
    let described = info.vector_search.unwrap();
    assert!(described.starts_with("pgvector 0.6"), "{described}");
    assert!(described.contains("HNSW"), "{described}");

    let without = fresh_store();
    let info = without.info();
    assert!(without.vector_search().is_none(), "{info:?}");
    assert!(
        info.vector_search.unwrap_err().contains("no pgvector"),
        "the reason names what is missing"
    );
}

/// An export from a store that can hold U+0000 where PostgreSQL cannot (SQLite keeps it in a
/// metadata value or a job's last error) is refused by name, and nothing of it is written.
#[test]
fn imports_with_nul_characters_are_refused_naming_the_field() {
    let source = fresh_on(system());
    let user = UserKey::new("t", "nul-import").unwrap();
    fill(&source, &user, "exported");
    let export = source.export_user(&user).unwrap();
    let target = fresh_on(system());

    let mut in_metadata = export.clone();
    let memory = &mut in_metadata.memories[0].memory;
    memory.metadata.insert("mood".into(), "calm\0".into());
    let err = target.import_user(&in_metadata).unwrap_err();
    assert!(
        matches!(&err, StoreError::InvalidWrite(m) if m.contains("mood") && m.contains("NUL")),
        "{err}"
    );
    let mut in_error = export.clone();
    in_error.jobs[0].last_error = Some("model said \0".into());
    let err = target.import_user(&in_error).unwrap_err();
    assert!(
        matches!(&err, StoreError::InvalidWrite(m) if m.contains("last error") && m.contains(&export.jobs[0].id.to_string())),
        "{err}"
    );
    assert!(target.export_user(&user).unwrap().is_empty());
    target.import_user(&export).unwrap();
    assert_eq!(target.export_user(&user).unwrap(), export);
}

/// Deterministic pseudo-random unit vectors.
fn unit_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect()
        })
        .collect()
}

#[test]
fn a_big_user_is_searched_through_the_hnsw_index_with_high_recall() {
    use mnemos_core::VectorSearch;
    const DIM: usize = 8;
    const MODEL: &str = "big-user-test";
    let store = fresh_pgvector_store();
    let search: &dyn VectorSearch = store.vector_search().unwrap();
    search.prepare(MODEL, DIM).unwrap();
    let big = UserKey::new("t", "big").unwrap();
    let small = UserKey::new("t", "small").unwrap();
    let mut all: Vec<(MemoryId, Vec<f32>)> = Vec::new();
    for (user, count, seed) in [(&big, 12_000, 1), (&small, 300, 2)] {
        let vectors = unit_vectors(seed, count, DIM);
        for (chunk_at, chunk) in vectors.chunks(2_000).enumerate() {
            let turns: Vec<Turn> = (0..chunk.len())
                .map(|i| turn(&scope(user), (chunk_at * 2_000 + i) as u64 + 1, "v"))
                .collect();
            let memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
            let rows: Vec<VectorRow> = memories
                .iter()
                .zip(chunk)
                .map(|(m, v)| VectorRow {
                    memory_id: m.id,
                    model: MODEL.into(),
                    vector: v.clone(),
                })
                .collect();
            if user == &big {
                all.extend(memories.iter().map(|m| m.id).zip(chunk.iter().cloned()));
            }
            store
                .write(WriteBatch {
                    turns,
                    memories,
                    vectors: rows,
                    ..Default::default()
                })
                .unwrap();
        }
    }
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let (mut found, mut wanted) = (0, 0);
    for query in unit_vectors(3, 20, DIM) {
        let mut exact: Vec<(MemoryId, f32)> =
            all.iter().map(|(id, v)| (*id, dot(&query, v))).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let exact: Vec<MemoryId> = exact.iter().take(10).map(|e| e.0).collect();
        let ann = search.nearest(&big, MODEL, &query, 100).unwrap();
        assert_eq!(ann.len(), 100);
        found += ann
            .iter()
            .take(10)
            .filter(|(id, _)| exact.contains(id))
            .count();
        wanted += 10;
        let known: std::collections::HashSet<MemoryId> = all.iter().map(|a| a.0).collect();
        assert!(
            ann.iter().all(|(id, _)| known.contains(id)),
            "another user's memory"
        );
    }
    let recall = found as f64 / wanted as f64;
    assert!(recall >= 0.95, "recall@10 {recall}");
    // The small user beside the big one is answered exactly, in full.
    assert_eq!(
        search
            .nearest(&small, MODEL, &[1.0; DIM], 1_000)
            .unwrap()
            .len(),
        300
    );
}
