use super::*;
use mnemos_core::{Change, Role, Scope, StateFilter, Timestamp, UserKey};

use crate::engine::Engine;
use crate::presets::testing::{memories_of, recall, test_engine, T0};
use crate::primitives::tokens;
use crate::NewTurn;

fn scope(session: &str) -> Scope {
    Scope::new("t", "u", "bot", session).unwrap()
}

fn user() -> UserKey {
    UserKey::new("t", "u").unwrap()
}

/// A session of user lines, each answered by the bot, starting at minute `start`.
fn session(engine: &Engine, name: &str, start: i64, lines: &[&str]) {
    let mut turns = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at = T0 + (start + 2 * i as i64) * 60_000;
        turns.push(NewTurn {
            speaker: Some("Ana".into()),
            time: Some(Timestamp(at)),
            ..NewTurn::user(scope(name), *line)
        });
        turns.push(NewTurn {
            role: Role::Assistant,
            speaker: Some("Bot".into()),
            time: Some(Timestamp(at + 60_000)),
            ..NewTurn::user(scope(name), "I see, tell me more.")
        });
    }
    engine.add(turns).unwrap();
    let report = engine.end_session(&scope(name)).unwrap();
    assert_eq!(report.failed, 0, "{:?}", report.errors);
}

fn nodes(engine: &Engine, state: StateFilter) -> Vec<Memory> {
    memories_of(engine, &user(), "chain_node", state)
}

#[test]
fn a_closed_session_becomes_chain_nodes_with_categories_and_provenance() {
    let engine = test_engine(NAME, "", true);
    session(
        &engine,
        "s1",
        0,
        &[
            "I adopted a grey cat called Pixel last week.",
            "Pixel sleeps on my keyboard all day.",
        ],
    );
    let built = nodes(&engine, StateFilter::Active);
    assert!(!built.is_empty());
    for node in &built {
        assert!(!node.provenance.is_empty());
        assert!(!categories_of(node).is_empty());
        assert_eq!(
            node.metadata.get(SESSION_KEY).map(String::as_str),
            Some("s1")
        );
        assert!(matches!(node.kind, MemoryKind::ChainNode { .. }));
    }
    // Ending the session again builds nothing new: its turns are covered.
    engine.end_session(&scope("s1")).unwrap();
    assert_eq!(nodes(&engine, StateFilter::All).len(), built.len());
}

#[test]
fn a_conflicting_update_supersedes_the_stale_node_and_keeps_it_in_history() {
    // gamma 0: every category is one chain, so the two nodes meet.
    let engine = test_engine(NAME, "gamma = 0.0", true);
    session(&engine, "s1", 0, &["I live in Paris."]);
    session(&engine, "s2", 100, &["I live in Berlin."]);
    let all = nodes(&engine, StateFilter::All);
    assert_eq!(all.len(), 2, "{all:#?}");
    let stale = all
        .iter()
        .find(|n| n.valid_to.is_some())
        .expect("a stale node");
    let current = all.iter().find(|n| n.valid_to.is_none()).unwrap();
    assert!(stale.text.contains("Paris"));
    assert!(current.text.contains("Berlin"), "{}", current.text);
    assert_eq!(
        stale.metadata.get(SUPERSEDED_BY_KEY),
        Some(&current.id.to_string())
    );
    assert_eq!(
        current.metadata.get(CALIBRATED_FROM_KEY),
        Some(&stale.id.to_string())
    );
    assert!(stale
        .provenance
        .iter()
        .all(|t| current.provenance.contains(t)));
    // The stale node was changed, not overwritten: its first version is in its history.
    let history = engine.history(&user(), stale.id).unwrap();
    assert!(history.len() >= 2);
    assert!(matches!(history[0].change, Change::Created));
    assert!(history[0].snapshot.valid_to.is_none());
    // Recall never shows the superseded node.
    let context = recall(&engine, &user(), "bot", "Where do I live?", 1000);
    assert!(context.items.iter().all(|i| i.memory_id != stale.id));
    assert!(context.items.iter().any(|i| i.memory_id == current.id));
    // The chains view shows the current node and the calibration history.
    let view = engine.view(&user(), Some("bot"), ViewKind::Chains).unwrap();
    let View::Chains(chains) = &view else {
        panic!("{view:?}")
    };
    assert_eq!(chains.calibrations.len(), 1);
    assert_eq!(chains.calibrations[0].stale, stale.id);
    let shown: Vec<_> = chains
        .chains
        .iter()
        .flat_map(|c| &c.nodes)
        .map(|n| n.id)
        .collect();
    assert!(shown.contains(&current.id) && !shown.contains(&stale.id));
    let text = crate::render::view(&user(), Some("bot"), &view);
    assert!(text.contains("memory chains of t/u (agent bot)"), "{text}");
    assert!(text.contains("calibration history"), "{text}");
    assert!(text.contains("supersedes 1"), "{text}");
}

#[test]
fn without_calibration_both_statements_stay_current() {
    let engine = test_engine(NAME, "gamma = 0.0\ncalibrate = false", true);
    session(&engine, "s1", 0, &["I live in Paris."]);
    session(&engine, "s2", 100, &["I live in Berlin."]);
    let all = nodes(&engine, StateFilter::All);
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|n| n.valid_to.is_none()));
}

fn three_sessions(engine: &Engine) {
    session(
        engine,
        "s1",
        0,
        &["I started learning the cello in January."],
    );
    session(
        engine,
        "s2",
        100,
        &["My cello teacher says my bowing improved."],
    );
    session(
        engine,
        "s3",
        200,
        &["I played the cello at a recital on Sunday."],
    );
}

#[test]
fn recall_walks_a_chain_and_says_why_each_node_is_there() {
    let engine = test_engine(NAME, "gamma = 0.0", true);
    three_sessions(&engine);
    let context = recall(
        &engine,
        &user(),
        "bot",
        "How is my cello playing going?",
        1000,
    );
    assert!(!context.items.is_empty());
    let roots = context
        .items
        .iter()
        .filter(|i| i.breakdown.iter().any(|p| p.name == "root"))
        .count();
    assert_eq!(roots, 1, "one query chain, one root: {:#?}", context.items);
    for item in &context.items {
        assert!(
            item.section.starts_with("memory chain: "),
            "{}",
            item.section
        );
        let why = item
            .breakdown
            .iter()
            .find(|p| ["root", "forward", "backward", "hop"].contains(&p.name.as_str()));
        assert!(why.is_some(), "{item:?}");
    }
    // Shown in time order along the chain.
    let times: Vec<_> = context.items.iter().map(|i| i.created.time).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);
    assert!(context.tokens <= 1000);
    assert!(context
        .notes
        .iter()
        .any(|n| n.contains("self-reflective retrieval")));
}

#[test]
fn ablations_change_how_nodes_are_recalled() {
    let engine = test_engine(NAME, "gamma = 0.0\nchains = false", true);
    three_sessions(&engine);
    let context = recall(
        &engine,
        &user(),
        "bot",
        "How is my cello playing going?",
        1000,
    );
    assert!(!context.items.is_empty());
    assert!(context.items.iter().all(|i| i.section == "memory nodes"));
    let matched = |c: &crate::mechanism::Context| {
        c.items
            .iter()
            .all(|i| i.breakdown.iter().any(|p| p.name == "match"))
    };
    assert!(matched(&context), "{:#?}", context.items);

    let engine = test_engine(NAME, "gamma = 0.0\nself_reflection = false", true);
    three_sessions(&engine);
    let context = recall(
        &engine,
        &user(),
        "bot",
        "How is my cello playing going?",
        1000,
    );
    assert_eq!(
        context.items.len(),
        nodes(&engine, StateFilter::Active).len(),
        "every node of the query's chain"
    );
    assert!(matched(&context), "{:#?}", context.items);
}

#[test]
fn an_empty_memory_says_so_and_budgets_hold() {
    let engine = test_engine(NAME, "", true);
    let context = recall(&engine, &user(), "bot", "anything?", 100);
    assert!(context.items.is_empty());
    assert!(context
        .notes
        .iter()
        .any(|n| n.contains("no memory chain yet")));
    three_sessions(&engine);
    let context = recall(&engine, &user(), "bot", "cello", 12);
    assert!(context.tokens <= 12, "{}", context.tokens);
}

#[test]
fn params_are_validated() {
    let ok = M4Params::default();
    assert!(ok.validate().is_ok());
    for bad in [
        M4Params {
            gamma: 1.5,
            ..M4Params::default()
        },
        M4Params {
            gamma: f32::NAN,
            ..M4Params::default()
        },
        M4Params {
            query_categories: 0,
            ..M4Params::default()
        },
        M4Params {
            max_steps: 101,
            ..M4Params::default()
        },
        M4Params {
            compress_after_days: 0.0,
            ..M4Params::default()
        },
        M4Params {
            max_compressions: 11,
            ..M4Params::default()
        },
        M4Params {
            calibrate_checks: 51,
            ..M4Params::default()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

const DAY_MINUTES: i64 = 24 * 60;

const LONG: &[&str] = &[
    "Last weekend my brother and I drove up to the mountains with our two dogs, \
     stayed in a small wooden cabin by the lake, went fishing every morning before sunrise \
     and cooked the trout we caught over an open fire in the evenings.",
];

#[test]
fn an_unused_node_is_compressed_a_step_and_its_text_stays_in_history() {
    let engine = test_engine(NAME, "", true);
    session(&engine, "s1", 0, LONG);
    let before = nodes(&engine, StateFilter::Active);
    session(
        &engine,
        "s2",
        10 * DAY_MINUTES,
        &["I bought a new bicycle today."],
    );
    for node in &before {
        let now = engine.get(&user(), node.id).unwrap();
        let steps = now.metrics.extra.get(COMPRESSIONS_KEY).copied();
        let finished = now.metrics.extra.get(COMPRESSION_FINAL_KEY).copied();
        assert!(
            steps.is_some() ^ finished.is_some(),
            "one step: {:?}",
            now.metrics
        );
        if steps == Some(1.0) {
            assert!(tokens(&now.text) < tokens(&node.text), "{}", now.text);
            let history = engine.history(&user(), node.id).unwrap();
            assert_eq!(history[0].snapshot.text, node.text);
            assert_eq!(
                now.metrics.extra.get(ORIGINAL_TOKENS_KEY).copied(),
                Some(tokens(&node.text) as f64)
            );
        } else {
            assert_eq!(now.text, node.text);
        }
    }
    // A node is not compressed again before another unused period.
    session(&engine, "s3", 11 * DAY_MINUTES, &["The bicycle is red."]);
    for node in &before {
        let now = engine.get(&user(), node.id).unwrap();
        assert!(
            now.metrics
                .extra
                .get(COMPRESSIONS_KEY)
                .copied()
                .unwrap_or(0.0)
                <= 1.0
        );
    }
}

#[test]
fn recent_or_disabled_nodes_are_not_compressed() {
    let engine = test_engine(NAME, "compress = false", true);
    session(&engine, "s1", 0, LONG);
    session(
        &engine,
        "s2",
        10 * DAY_MINUTES,
        &["I bought a new bicycle today."],
    );
    let engine_recent = test_engine(NAME, "", true);
    session(&engine_recent, "s1", 0, LONG);
    session(
        &engine_recent,
        "s2",
        2 * DAY_MINUTES,
        &["I bought a new bicycle today."],
    );
    for e in [&engine, &engine_recent] {
        for node in nodes(e, StateFilter::Active) {
            assert!(!node.metrics.extra.contains_key(COMPRESSIONS_KEY));
            assert!(!node.metrics.extra.contains_key(COMPRESSION_FINAL_KEY));
            assert_eq!(node.version, 1);
        }
    }
}
