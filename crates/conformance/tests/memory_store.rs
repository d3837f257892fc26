//! The reference in-memory store passes the whole conformance suite.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mnemos_conformance::conformance_tests!(mnemos_core::MemoryStore::new);

#[test]
fn run_all_checks_in_one_go() {
    mnemos_conformance::run_all(&mnemos_core::MemoryStore::new);
    assert_eq!(mnemos_conformance::CHECK_NAMES.len(), 35);
}
