//! The idempotency rule is the engine's, so every caller has it, not only the HTTP and MCP
//! front ends: here the engine is called directly, as the CLI's `ingest` calls it.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use mnemos_core::{ErrorClass, Scope};
use mnemos_engine::{request_turn_key, EngineError, KeyConflict, NewTurn};

fn turn(text: &str, key: Option<&str>) -> NewTurn {
    let mut new = NewTurn::user(Scope::new("t", "ann", "default", "s").unwrap(), text);
    new.key = key.map(str::to_string);
    new
}

#[test]
fn a_key_stored_with_other_text_is_a_conflict_for_every_caller() {
    let dir = tempfile::tempdir().unwrap();
    let engine = common::engine_on(&dir.path().join("m.db"), "retrieval", true);
    engine
        .add(vec![turn("I live in Lisbon.", Some("k1"))])
        .unwrap();

    // The same key and text again: a duplicate, nothing written.
    let again = engine
        .add(vec![turn("I live in Lisbon.", Some("k1"))])
        .unwrap();
    assert!(again.turns[0].is_duplicate());

    // The same key with other text: refused whole, with the wire's message.
    let error = engine
        .add(vec![
            turn("A new line.", Some("k2")),
            turn("I live in Porto.", Some("k1")),
        ])
        .unwrap_err();
    assert!(
        matches!(&error, EngineError::KeyConflict(KeyConflict::OtherText { key }) if key == "k1"),
        "{error:?}"
    );
    assert_eq!(error.class(), ErrorClass::Conflict);
    assert!(error.to_string().starts_with(
        "key 'k1' is already stored with another text: a retry must resend the same turns"
    ));
    let fresh = engine.add(vec![turn("A new line.", Some("k2"))]).unwrap();
    assert!(!fresh.turns[0].is_duplicate(), "the refused add wrote k2");
}

#[test]
fn a_request_key_names_one_request_and_its_number_of_turns() {
    let dir = tempfile::tempdir().unwrap();
    let engine = common::engine_on(&dir.path().join("m.db"), "retrieval", true);
    let two = || vec![turn("one", None), turn("two", None)];
    let first = engine.add_request(two(), Some("r")).unwrap();
    assert_eq!(first.turns.len(), 2);
    // A retry stores nothing new.
    let retry = engine.add_request(two(), Some("r")).unwrap();
    assert!(retry.turns.iter().all(|t| t.is_duplicate()));
    // Fewer or more turns under the same key is another request.
    for turns in [vec![turn("one", None)], {
        let mut three = two();
        three.push(turn("three", None));
        three
    }] {
        let error = engine.add_request(turns, Some("r")).unwrap_err();
        assert!(
            matches!(&error, EngineError::KeyConflict(KeyConflict::OtherCount { key }) if key == "r"),
            "{error:?}"
        );
    }
    assert_eq!(request_turn_key("r", 1), "idem:r#1");
}
