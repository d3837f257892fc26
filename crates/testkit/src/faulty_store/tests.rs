use mnemos_core::{
    ErrorClass, Memory, MemoryStore, Metadata, Moment, Page, Role, Scope, StoreRead, Timestamp,
    Turn, TurnId, UserKey, WriteBatch,
};
use mnemos_core::{MemoryRead, MemoryWrite};

use super::*;

fn user() -> UserKey {
    UserKey::new("t", "ann").unwrap()
}

/// A batch of one turn with its raw-turn memory, at `round`.
fn turn_batch(round: u64, text: &str) -> WriteBatch {
    let turn = Turn {
        id: TurnId::new(),
        scope: Scope::new("t", "ann", "bot", "s1").unwrap(),
        role: Role::User,
        speaker: None,
        text: text.into(),
        at: Moment {
            round,
            time: Timestamp(1_750_000_000_000 + round as i64),
        },
        metadata: Metadata::new(),
        key: None,
    };
    let memory = Memory::from_turn(&turn);
    WriteBatch {
        turns: vec![turn],
        memories: vec![memory],
        ..WriteBatch::default()
    }
}

fn turn_count(store: &dyn StoreRead) -> usize {
    store.turns(&user(), Page::first(100)).unwrap().total
}

fn assert_injected<T: fmt::Debug>(result: StoreResult<T>, op: &str) {
    match result {
        Err(e @ StoreError::Backend { .. }) => {
            assert_eq!(e.class(), ErrorClass::Internal);
            let text = mnemos_core::error::report(&e);
            assert!(text.contains("injected fault"), "{text}");
            assert!(text.contains(op), "{text}");
        }
        other => panic!("expected an injected backend error from {op}, got {other:?}"),
    }
}

mod conformance_unarmed {
    mnemos_conformance::conformance_tests!(|| super::FaultyStore::new(super::MemoryStore::new()));
}

#[test]
fn the_nth_write_fails_and_writes_nothing() {
    let store = FaultyStore::new(MemoryStore::new());
    store.fail_nth_write(2);
    store.write(turn_batch(0, "first")).unwrap();
    assert_injected(store.write(turn_batch(1, "second")), "write");
    store.write(turn_batch(1, "third")).unwrap();
    assert_eq!(turn_count(store.inner().as_ref()), 2);
    assert_eq!(
        store.counts(),
        CallCounts {
            reads: 0,
            writes: 3
        }
    );
    let fired = store.fired();
    assert_eq!(fired.len(), 1);
    assert_eq!((fired[0].index, fired[0].op), (2, "write"));
    assert!(store.armed().is_empty());
}

#[test]
fn the_nth_read_fails_and_reads_are_counted_apart_from_writes() {
    let store = FaultyStore::new(MemoryStore::new());
    store.write(turn_batch(0, "first")).unwrap();
    store.fail_nth_read(2);
    assert_eq!(store.last_round(&user()).unwrap(), Some(0));
    assert_injected(store.users(), "users");
    assert_eq!(store.users().unwrap(), vec![user()]);
    assert_eq!(
        store.counts(),
        CallCounts {
            reads: 3,
            writes: 1
        }
    );
    let ops: Vec<(&str, u64, u64)> = store
        .calls()
        .iter()
        .map(|c| (c.op, c.index, c.index_of_kind))
        .collect();
    assert_eq!(
        ops,
        [
            ("write", 1, 1),
            ("last_round", 2, 1),
            ("users", 3, 2),
            ("users", 4, 3)
        ]
    );
}

#[test]
fn one_counter_over_all_calls() {
    let store = FaultyStore::new(MemoryStore::new());
    store.fail_nth_call(2);
    assert_eq!(store.users().unwrap(), Vec::<UserKey>::new());
    assert_injected(store.write(turn_batch(0, "lost")), "write");
    assert_eq!(turn_count(store.inner().as_ref()), 0);
}

#[test]
fn a_lost_acknowledgement_commits_and_still_fails() {
    let store = FaultyStore::new(MemoryStore::new());
    store.lose_ack_of_nth_write(1);
    assert_injected(store.write(turn_batch(0, "kept")), "write");
    assert_eq!(turn_count(store.inner().as_ref()), 1);
    assert_eq!(store.fired()[0].fault, Some(FaultMode::LoseAck));
}

#[test]
fn a_lost_acknowledgement_reports_the_inner_error_when_the_write_was_rejected() {
    let store = FaultyStore::new(MemoryStore::new());
    store.lose_ack_of_nth_write(1);
    let mut batch = turn_batch(0, "twice");
    batch.turns.push(batch.turns[0].clone());
    match store.write(batch) {
        Err(StoreError::InvalidWrite(_)) => {}
        other => panic!("expected the inner store's rejection, got {other:?}"),
    }
}

#[test]
fn counts_start_at_creation_and_passed_or_zero_positions_never_fire() {
    let store = FaultyStore::new(MemoryStore::new());
    store.users().unwrap();
    store.fail_nth_read(1);
    store.fail_nth_call(0);
    store.users().unwrap();
    assert!(store.fired().is_empty());
    assert_eq!(store.armed().len(), 2);
    store.disarm();
    assert!(store.armed().is_empty());
}

#[test]
fn faults_naming_the_same_call_fire_once_with_the_first_mode() {
    let store = FaultyStore::new(MemoryStore::new());
    store.lose_ack_of_nth_write(1);
    store.fail_nth_call(1);
    assert_injected(store.write(turn_batch(0, "kept")), "write");
    assert_eq!(turn_count(store.inner().as_ref()), 1);
    assert!(store.armed().is_empty());
    assert_eq!(store.fired().len(), 1);
}

#[test]
fn a_shared_inner_store_sees_what_the_wrapper_wrote_uncounted() {
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let store = FaultyStore::over(Arc::clone(&inner));
    store.write(turn_batch(0, "shared")).unwrap();
    assert_eq!(turn_count(inner.as_ref()), 1);
    assert_eq!(store.counts().total(), 1);
}
