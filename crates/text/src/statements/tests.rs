use super::*;

#[test]
fn every_english_rule_compiles() {
    for (i, p) in english::debug_patterns().iter().enumerate() {
        let expanded = scan::compile(p);
        assert!(expanded.is_some(), "rule {i} does not compile: {p}");
    }
}

