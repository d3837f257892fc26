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

use mnemos_core::{JobRead, JobWrite, KeyWrite, MemoryRead, MemoryWrite, VectorRead};
use std::sync::Arc;

use mnemos_conformance::Guarded;
use mnemos_core::{
    BatchForget, Conflict, ForgetCause, Job, Memory, MemoryId, MemoryState, Metadata, Moment,
    Precondition, Role, Scope, StoreError, StoreRead, Timestamp, Turn, TurnId, UserKey, VectorRow,
    WriteBatch,
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
        .write(WriteBatch {
            user: Some(user.clone()),
            forgets: vec![BatchForget {
                id: memories[0].id,
                reason: format!("{secret} reason"),
                cause: mnemos_core::ForgetCause::Request,
                at: later,
            }],
            ..Default::default()
        })
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

/// Two handles on one fresh database, as two servers would hold them.
fn two_handles() -> (String, PostgresStore, PostgresStore) {
    let url = system().create_database().unwrap();
    let (a, b) = (
        PostgresStore::connect(&url).unwrap(),
        PostgresStore::connect(&url).unwrap(),
    );
    (url, a, b)
}

/// One turn of `user` at `round`, written through `store`.
fn write_turn(store: &PostgresStore, user: &UserKey, round: u64) {
    let mut turn = turn(&scope(user), round, &format!("turn {round}"));
    turn.key = None;
    store
        .write(WriteBatch {
            turns: vec![turn],
            ..Default::default()
        })
        .unwrap();
}

fn version(store: &PostgresStore, user: &UserKey) -> u64 {
    store
        .data_version(user)
        .unwrap()
        .expect("a PostgreSQL store can tell")
}

#[test]
fn another_handles_commits_change_data_version_and_own_ones_do_not() {
    let (_url, a, b) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    let bob = UserKey::new("t", "bob").unwrap();
    let never = UserKey::new("t", "never-written").unwrap();
    write_turn(&b, &bob, 0);
    let (a_ann, b_ann, b_bob, b_never) = (
        version(&a, &ann),
        version(&b, &ann),
        version(&b, &bob),
        version(&b, &never),
    );
    write_turn(&a, &ann, 0);
    write_turn(&a, &ann, 1);
    assert_eq!(version(&a, &ann), a_ann, "own commits leave it alone");
    let seen = version(&b, &ann);
    assert_ne!(seen, b_ann, "b sees a's commits of ann");
    assert_eq!(version(&b, &ann), seen, "and nothing else");
    assert_eq!(
        version(&b, &bob),
        b_bob,
        "another user's commits leave bob alone"
    );
    assert_eq!(version(&b, &never), b_never, "and a user with no data");
    assert_eq!(version(&a, &bob), version(&a, &bob), "stable");
    // API keys belong to no user.
    let key = mnemos_core::ApiKey {
        id: mnemos_core::ApiKeyId::new(),
        tenant: "t".into(),
        name: "ci".into(),
        hash: "ab".repeat(32),
        prefix: "mk_1234".into(),
        created_at: Timestamp(1),
        revoked_at: None,
    };
    a.put_api_key(&key).unwrap();
    assert_eq!(version(&b, &ann), seen, "an API key is nobody's write");
}

#[test]
fn a_purge_elsewhere_changes_the_version_even_when_the_user_is_rewritten() {
    let (_url, a, b) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    let bob = UserKey::new("t", "bob").unwrap();
    write_turn(&a, &ann, 0);
    write_turn(&a, &bob, 0);
    let mut seen = vec![version(&b, &ann)];
    let bob_before = version(&b, &bob);
    a.purge_user(&ann).unwrap();
    let after_purge = version(&b, &ann);
    assert!(!seen.contains(&after_purge), "a purge is a change");
    seen.push(after_purge);
    assert_eq!(
        version(&b, &bob),
        bob_before,
        "a user with data ignores others' purges"
    );
    // Rewritten as often as before the purge: still not a number seen before.
    write_turn(&a, &ann, 0);
    let rewritten = version(&b, &ann);
    assert!(!seen.contains(&rewritten), "{rewritten} in {seen:?}");
    seen.push(rewritten);
    a.purge_user(&ann).unwrap();
    write_turn(&a, &ann, 0);
    let again = version(&b, &ann);
    assert!(!seen.contains(&again), "{again} in {seen:?}");
}

#[test]
fn a_purge_elsewhere_after_own_writes_is_seen() {
    let (_url, a, b) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    // b saw ann empty, wrote her (its caches would hold that write), then a purged her: the
    // data is empty again, but b's caches are not.
    let empty = version(&b, &ann);
    write_turn(&b, &ann, 0);
    assert_eq!(version(&b, &ann), empty, "own commit");
    a.purge_user(&ann).unwrap();
    assert_ne!(version(&b, &ann), empty, "a purged what b had written");
}

#[test]
fn own_purges_leave_the_version_alone() {
    let (_url, a, b) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    write_turn(&a, &ann, 0);
    let before = version(&b, &ann);
    b.purge_user(&ann).unwrap();
    assert_eq!(version(&b, &ann), before, "own purge");
    write_turn(&b, &ann, 0);
    assert_eq!(version(&b, &ann), before, "own write after own purge");
    let seen_by_a = version(&a, &ann);
    write_turn(&b, &ann, 1);
    assert_ne!(version(&a, &ann), seen_by_a, "a sees b's writes");
}

#[test]
fn a_foreign_commit_between_two_own_commits_is_seen() {
    let (_url, a, b) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    // Read first, then own, foreign, own.
    let start = version(&b, &ann);
    write_turn(&b, &ann, 0);
    write_turn(&a, &ann, 1);
    write_turn(&b, &ann, 2);
    let after = version(&b, &ann);
    assert_ne!(after, start, "read before all three");
    // Read between: own (read), foreign, own.
    write_turn(&b, &ann, 3);
    let between = version(&b, &ann);
    assert_eq!(between, after, "own commit");
    write_turn(&a, &ann, 4);
    write_turn(&b, &ann, 5);
    assert_ne!(version(&b, &ann), between, "read between own commits");
}

#[test]
fn concurrent_own_commits_never_look_foreign_and_foreign_ones_are_seen() {
    let (_url, a, b) = two_handles();
    let users: Vec<UserKey> = (0..4)
        .map(|i| UserKey::new("t", format!("u{i}")).unwrap())
        .collect();
    let before: Vec<u64> = users.iter().map(|u| version(&b, u)).collect();
    std::thread::scope(|s| {
        for user in &users {
            let b = &b;
            s.spawn(move || {
                for round in 0..10 {
                    write_turn(b, user, round);
                    b.record_access(user, &[]).unwrap();
                }
            });
        }
        // Reads race the writes and must never see them.
        for _ in 0..20 {
            for (user, start) in users.iter().zip(&before) {
                assert_eq!(version(&b, user), *start);
            }
        }
    });
    let after: Vec<u64> = users.iter().map(|u| version(&b, u)).collect();
    assert_eq!(after, before, "own commits from many threads");
    write_turn(&a, &users[2], 10);
    for (i, user) in users.iter().enumerate() {
        assert_eq!(version(&b, user) != before[i], i == 2, "user {i}");
    }
}

/// Forgets stored before causes were (schema 3) get the cause their reason told, once, when the
/// database is upgraded; forgets that stored theirs keep it, whatever their reason says.
#[test]
fn forgets_stored_before_causes_get_theirs_at_the_upgrade() {
    let url = system().create_database().unwrap();
    let store = PostgresStore::connect(&url).unwrap();
    let user = UserKey::new("t", "ann").unwrap();
    let t = turn(&scope(&user), 0, "hello");
    let (kept, legacy) = (Memory::from_turn(&t), Memory::from_turn(&t));
    let forget = |id: MemoryId| BatchForget {
        id,
        reason: "memgpt: evicted".into(),
        cause: ForgetCause::Request,
        at: t.at,
    };
    store
        .write(WriteBatch {
            turns: vec![t.clone()],
            memories: vec![kept.clone(), legacy.clone()],
            forgets: vec![forget(kept.id), forget(legacy.id)],
            ..Default::default()
        })
        .unwrap();
    drop(store);
    // What a schema-3 build wrote: no cause in the state or its snapshots.
    let mut conn = raw(&url);
    conn.execute(
        "UPDATE memories SET state = (state::jsonb - 'cause')::text WHERE id = $1",
        &[&legacy.id.0],
    )
    .unwrap();
    conn.execute(
        "UPDATE memory_history SET snapshot = (snapshot::jsonb #- '{state,cause}')::text \
         WHERE memory_id = $1",
        &[&legacy.id.0],
    )
    .unwrap();
    conn.batch_execute("UPDATE mnemos_schema SET version = 3")
        .unwrap();
    let store = PostgresStore::connect(&url).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let cause_of = |m: &Memory| match &m.state {
        MemoryState::Forgotten { cause, .. } => cause.clone(),
        MemoryState::Active => panic!("{m:?} is active"),
    };
    let memgpt = ForgetCause::preset("memgpt");
    let got = store.memory(&user, legacy.id).unwrap().unwrap();
    assert_eq!(cause_of(&got), memgpt);
    let history = store.history(&user, legacy.id).unwrap();
    assert_eq!(cause_of(&history[1].snapshot), memgpt);
    let got = store.memory(&user, kept.id).unwrap().unwrap();
    assert_eq!(cause_of(&got), ForgetCause::Request);
    let stored: String = conn
        .query_one(
            "SELECT state::jsonb -> 'cause' ->> 'preset' FROM memories WHERE id = $1",
            &[&legacy.id.0],
        )
        .unwrap()
        .get(0);
    assert_eq!(stored, "memgpt", "stored now, not derived at each read");
}

#[test]
fn migrating_from_the_commit_counter_gives_existing_users_versions() {
    let (url, a, _) = two_handles();
    let ann = UserKey::new("t", "ann").unwrap();
    write_turn(&a, &ann, 0);
    drop(a);
    // Back to schema 1: the global commit counter, no per-user versions.
    raw(&url)
        .batch_execute(
            "DROP TABLE user_versions; DROP TABLE mnemos_purges; DROP SEQUENCE mnemos_versions; \
             CREATE TABLE mnemos_commits (slot integer PRIMARY KEY, n bigint NOT NULL); \
             UPDATE mnemos_schema SET version = 1;",
        )
        .unwrap();
    let (a, b) = (
        PostgresStore::connect(&url).unwrap(),
        PostgresStore::connect(&url).unwrap(),
    );
    assert_eq!(a.schema_version().unwrap(), SCHEMA_VERSION);
    let counter: bool = raw(&url)
        .query_one("SELECT to_regclass('mnemos_commits') IS NULL", &[])
        .unwrap()
        .get(0);
    assert!(counter, "the commit counter is dropped");
    let before = version(&b, &ann);
    assert_ne!(before, 0, "ann has data, so a version");
    write_turn(&a, &ann, 1);
    assert_ne!(version(&b, &ann), before);
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
        .write(WriteBatch {
            user: Some(user.clone()),
            forgets: vec![BatchForget {
                id: memories[1],
                reason: "because\0".into(),
                cause: mnemos_core::ForgetCause::Request,
                at,
            }],
            ..Default::default()
        })
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

/// Write one memory of `user` with a vector of `dim` ones; its id and vector.
fn store_write_one(
    store: &PostgresStore,
    user: &UserKey,
    model: &str,
    dim: usize,
) -> (MemoryId, Vec<f32>) {
    let turn = turn(&scope(user), 50_000, "one more");
    let memory = Memory::from_turn(&turn);
    let vector = vec![1.0 / (dim as f32).sqrt(); dim];
    let row = VectorRow {
        memory_id: memory.id,
        model: model.into(),
        vector: vector.clone(),
    };
    let id = memory.id;
    store
        .write(WriteBatch {
            turns: vec![turn],
            memories: vec![memory],
            vectors: vec![row],
            ..Default::default()
        })
        .unwrap();
    (id, vector)
}

#[test]
fn a_big_user_is_searched_through_the_hnsw_index_with_high_recall() {
    use mnemos_core::VectorSearch;
    const DIM: usize = 8;
    const MODEL: &str = "big-user-test";
    let url = shared_server().unwrap().create_database().unwrap();
    let store = PostgresStore::connect(&url).unwrap();
    let search: &dyn VectorSearch = store.vector_search().unwrap();
    search.prepare(MODEL, DIM).unwrap();
    let big = UserKey::new("t", "big").unwrap();
    let small = UserKey::new("t", "small").unwrap();
    let mut all: Vec<(MemoryId, Vec<f32>)> = Vec::new();
    for (user, count, seed) in [(&big, 12_000, 1), (&small, 300, 2)] {
        let vectors = unit_vectors(seed, count, DIM);
        for (chunk_at, chunk) in vectors.chunks(2_000).enumerate() {
            if user == &big && chunk_at == 5 {
                // The first 10,000 windows are a backlog big enough to rebuild the index over
                // in one step; the last 2,000 wait.
                let step = search.catch_up(MODEL, 4_000).unwrap();
                assert_eq!(
                    (step.indexed, step.remaining),
                    (10_000, 0),
                    "rebuilt at once"
                );
            }
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
    let waiting: i64 = raw(&url)
        .query_one(
            "SELECT count(*) FROM vector_windows WHERE NOT indexed AND user_id = 'big'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(waiting, 2_000, "windows written since the catch-up wait");
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
    // A window still waiting for the index is found as surely as an indexed one.
    for (id, vector) in [&all[42], &all[11_500]] {
        let top = search.nearest(&big, MODEL, vector, 1).unwrap();
        assert_eq!(top[0].0, *id, "a memory is its own nearest");
    }
    // A small backlog goes in one insert at a time, as many as asked for.
    let step = search.catch_up(MODEL, 2_000).unwrap();
    assert_eq!((step.indexed, step.remaining), (2_000, 300));
    let step = search.catch_up(MODEL, 2_000).unwrap();
    assert_eq!((step.indexed, step.remaining), (300, 0));

    // An index lost halfway through a rebuild (dropped, or left invalid) is built again by the
    // next catch-up, and searches stay right meanwhile.
    let mut sql = raw(&url);
    let name: String = sql
        .query_one(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'vector_windows_ann_%'",
            &[],
        )
        .unwrap()
        .get(0);
    sql.batch_execute(&format!("DROP INDEX {name}")).unwrap();
    let (id, vector) = &all[7];
    assert_eq!(search.nearest(&big, MODEL, vector, 1).unwrap()[0].0, *id);
    let step = search.catch_up(MODEL, 10).unwrap();
    assert_eq!(
        (step.indexed, step.remaining),
        (0, 0),
        "nothing was waiting"
    );
    let valid: bool = sql
        .query_one(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&name],
        )
        .unwrap()
        .get(0);
    assert!(valid, "the index is back, though nothing was waiting");
    let fresh = store_write_one(&store, &big, MODEL, DIM);
    let step = search.catch_up(MODEL, 10).unwrap();
    assert_eq!((step.indexed, step.remaining), (1, 0));
    assert_eq!(
        search.nearest(&big, MODEL, &fresh.1, 1).unwrap()[0].0,
        fresh.0
    );
    // The small user beside the big one is answered exactly, in full.
    assert_eq!(
        search
            .nearest(&small, MODEL, &[1.0; DIM], 1_000)
            .unwrap()
            .len(),
        300
    );
}
