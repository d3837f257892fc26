use super::*;
use mnemos_core::{Change, Role, Scope, StateFilter, Timestamp, UserKey};

use crate::testing::{memories_of, recall, test_engine, T0};
use mnemos_engine::primitives::tokens;
use mnemos_engine::Engine;
use mnemos_engine::NewTurn;

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
    let text = mnemos_render::view(&user(), Some("bot"), &view);
    assert!(text.contains("memory chains of t/u (agent bot)"), "{text}");
    assert!(text.contains("calibration history"), "{text}");
    assert!(text.contains("supersedes 1"), "{text}");
}

/// The paper's calibration alone: the model finds every conflict (the engine's write path
/// supersedes nothing first).
const MODEL_ONLY: &str = "supersede = false";

/// Unrelated chat around one stated fact, as in a long session.
const CHAT: &[&str] = &[
    "The weather has been lovely for walks lately.",
    "I finished a long novel about sailors last night.",
    "My sister sent me photos of her garden.",
    "We tried a new pasta recipe on Friday.",
];

#[test]
fn an_announced_update_inside_a_summary_supersedes_the_node_that_holds_the_old_statement() {
    let engine = test_engine(NAME, MODEL_ONLY, true);
    let mut first = CHAT.to_vec();
    // The test embedder hashes words, so the two statements share one ("home") to be found.
    first.insert(
        2,
        "By the way, my home is in Tallinn these days, a small flat near the river.",
    );
    session(&engine, "s1", 0, &first);
    let mut second: Vec<&str> = CHAT.iter().rev().copied().collect();
    second.insert(1, "Big news: I just moved, and home is Porto now.");
    session(&engine, "s2", 100, &second);
    let all = nodes(&engine, StateFilter::All);
    let stale: Vec<_> = all.iter().filter(|n| n.valid_to.is_some()).collect();
    assert!(!stale.is_empty(), "{all:#?}");
    let merged = all
        .iter()
        .find(|n| n.metadata.contains_key(STALE_TURNS_KEY))
        .expect("a node that records the stale statement");
    assert!(
        merged.text.contains("Porto now. (previously:"),
        "{}",
        merged.text
    );
    // Recall shows the update, and the old statement only as a record of the past.
    let context = recall(
        &engine,
        &user(),
        "bot",
        "Which city do I live in now?",
        1000,
    );
    assert!(context.text.contains("Porto"), "{}", context.text);
    for line in context.text.lines().filter(|l| l.contains("Tallinn")) {
        assert!(line.contains("(previously:"), "{line}");
    }
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
    let is_node = |i: &ContextItem| matches!(i.kind, MemoryKind::ChainNode { .. });
    for (k, item) in context.items.iter().enumerate() {
        let names = ["root", "forward", "backward", "hop"];
        if is_node(item) {
            assert!(item.section.starts_with("memory chain: "), "{item:?}");
            let why = item
                .breakdown
                .iter()
                .find(|p| names.contains(&p.name.as_str()));
            assert!(why.is_some(), "{item:?}");
        } else {
            // An evidence turn: under a node of its section that covers it, or in its own
            // section when no retrieved node does.
            assert!(
                item.breakdown.iter().any(|p| p.name == "evidence"),
                "{item:?}"
            );
            if item.section == evidence::OTHER_SECTION {
                continue;
            }
            let node = context.items[..k]
                .iter()
                .rev()
                .find(|i| is_node(i))
                .unwrap();
            assert_eq!(node.section, item.section);
            assert!(item.provenance.iter().all(|t| node.provenance.contains(t)));
        }
    }
    assert!(
        context.items.iter().any(|i| !is_node(i)),
        "evidence is shown"
    );
    // Nodes are shown in time order along the chain.
    let times: Vec<_> = context
        .items
        .iter()
        .filter(|i| is_node(i))
        .map(|i| i.created.time)
        .collect();
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
    let matched = |c: &mnemos_engine::mechanism::Context| {
        c.items
            .iter()
            .filter(|i| matches!(i.kind, MemoryKind::ChainNode { .. }))
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
    let shown = context
        .items
        .iter()
        .filter(|i| matches!(i.kind, MemoryKind::ChainNode { .. }))
        .count();
    assert_eq!(
        shown,
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

#[test]
fn a_calibrated_node_keeps_its_wording_and_its_record_of_stale_turns() {
    let engine = test_engine(NAME, MODEL_ONLY, true);
    let mut first = CHAT.to_vec();
    first.insert(1, "My home is in Tallinn, a small flat near the river.");
    session(&engine, "s1", 0, &first);
    let mut second = CHAT.to_vec();
    second.insert(2, "Big news: I just moved, and home is Porto now.");
    session(&engine, "s2", 100, &second);
    let merged = nodes(&engine, StateFilter::Active)
        .into_iter()
        .find(|n| n.metadata.contains_key(STALE_TURNS_KEY) && n.valid_to.is_none())
        .expect("a calibrated node");
    // Weeks later, unused: other nodes may take a compression step, the calibrated one not.
    session(
        &engine,
        "s3",
        30 * DAY_MINUTES,
        &["I bought a new bicycle today."],
    );
    let now = engine.get(&user(), merged.id).unwrap();
    assert_eq!(now.text, merged.text);
    assert!(!now.metrics.extra.contains_key(COMPRESSIONS_KEY));
    // A later merge of the calibrated node keeps its record of stale turns.
    let stale: Vec<&str> = merged.metadata[STALE_TURNS_KEY].split(',').collect();
    let mut third = CHAT.to_vec();
    third.push("Big news again: we moved, and home is Lisbon now.");
    session(&engine, "s4", 40 * DAY_MINUTES, &third);
    let superseded = engine.get(&user(), merged.id).unwrap();
    assert!(superseded.valid_to.is_some(), "the Porto node is stale now");
    for node in nodes(&engine, StateFilter::Active)
        .iter()
        .filter(|n| n.valid_to.is_none())
    {
        if node
            .provenance
            .iter()
            .any(|t| stale.contains(&t.to_string().as_str()))
        {
            let kept = node.metadata.get(STALE_TURNS_KEY).expect("record kept");
            assert!(stale.iter().all(|t| kept.contains(t)), "{kept}");
        }
    }
}

#[test]
fn an_update_still_in_the_open_session_marks_the_older_statement_in_the_context() {
    let engine = test_engine(NAME, MODEL_ONLY, true);
    let mut first = CHAT.to_vec();
    first.insert(1, "My home is in Tallinn, a small flat near the river.");
    session(&engine, "s1", 0, &first);
    // The second session is not closed: no node covers the update yet.
    engine
        .add(vec![NewTurn {
            speaker: Some("Ana".into()),
            time: Some(Timestamp(T0 + 200 * 60_000)),
            ..NewTurn::user(
                scope("s2"),
                "Big news: I just moved, and home is Porto now.",
            )
        }])
        .unwrap();
    let context = recall(&engine, &user(), "bot", "Where is my home now?", 1000);
    // The turns themselves (the node's summary above them may quote the old statement too).
    let turn = |needle: &str| {
        context
            .items
            .iter()
            .find(|i| matches!(i.kind, MemoryKind::Turn) && i.text.contains(needle))
            .unwrap_or_else(|| panic!("{needle} in {}", context.text))
            .text
            .clone()
    };
    assert!(!turn("Porto").contains("superseded"));
    assert!(turn("Tallinn").starts_with("[superseded by a later statement]"));
    assert!(context
        .notes
        .iter()
        .any(|n| n.contains("read-time calibration")));
    let stale = context
        .items
        .iter()
        .find(|i| matches!(i.kind, MemoryKind::Turn) && i.text.contains("Tallinn"))
        .unwrap();
    assert!(
        stale.breakdown.iter().any(|p| p.name == "superseded"),
        "{stale:?}"
    );

    // Without calibration the context shows both as they were said.
    let plain = test_engine(NAME, "calibrate = false", true);
    session(&plain, "s1", 0, &first);
    plain
        .add(vec![NewTurn::user(
            scope("s2"),
            "Big news: I just moved, and home is Porto now.",
        )])
        .unwrap();
    let context = recall(&plain, &user(), "bot", "Where is my home now?", 1000);
    assert!(!context.text.contains("superseded"), "{}", context.text);
}

#[test]
fn a_chinese_statement_is_marked_in_chinese() {
    let engine = test_engine(NAME, "", true);
    session(
        &engine,
        "s1",
        0,
        &["我的家在杭州，房子离江边不远。", "最近天气很好。"],
    );
    engine
        .add(vec![NewTurn {
            speaker: Some("Ana".into()),
            time: Some(Timestamp(T0 + 200 * 60_000)),
            ..NewTurn::user(scope("s2"), "我搬家了，现在我的家在成都。")
        }])
        .unwrap();
    let context = recall(&engine, &user(), "bot", "我的家现在在哪里？", 1000);
    let stale = context
        .items
        .iter()
        .find(|i| matches!(i.kind, MemoryKind::Turn) && i.text.contains("杭州"))
        .unwrap_or_else(|| panic!("{}", context.text));
    assert!(stale.text.starts_with("[已被更新]"), "{}", context.text);
}

#[test]
fn turns_without_timestamps_are_ordered_by_round_for_read_time_calibration() {
    // The test clock is fixed: every turn gets the same time, as in a dialogue without dates.
    let engine = test_engine(NAME, MODEL_ONLY, true);
    let mut turns: Vec<NewTurn> = CHAT
        .iter()
        .map(|line| NewTurn::user(scope("s1"), *line))
        .collect();
    turns.insert(
        1,
        NewTurn::user(
            scope("s1"),
            "My home is in Tallinn, a small flat near the river.",
        ),
    );
    turns.push(NewTurn::user(
        scope("s1"),
        "Big news: I just moved, and home is Porto now.",
    ));
    engine.add(turns).unwrap();
    let context = recall(&engine, &user(), "bot", "Where is my home now?", 1000);
    let stale = context
        .items
        .iter()
        .find(|i| matches!(i.kind, MemoryKind::Turn) && i.text.contains("Tallinn"))
        .unwrap_or_else(|| panic!("{}", context.text));
    assert!(
        stale.text.starts_with("[superseded by a later statement]"),
        "{}",
        context.text
    );
}

#[test]
fn calibration_takes_what_the_write_path_superseded_without_asking_the_model() {
    let engine = test_engine(NAME, "", true);
    let mut first = CHAT.to_vec();
    first.insert(2, "By the way, I live in Tallinn these days.");
    session(&engine, "s1", 0, &first);
    let calls_before = engine.model().usage().total().calls;
    let mut second: Vec<&str> = CHAT.iter().rev().copied().collect();
    second.insert(1, "Big news: I just moved, and I live in Porto now.");
    session(&engine, "s2", 100, &second);
    // The old statement left the current turns at write time.
    let hits = engine
        .search(&mnemos_engine::SearchRequest::new(user(), "Tallinn"))
        .unwrap()
        .hits;
    assert!(
        hits.iter()
            .all(|h| h.memory.kind != MemoryKind::Turn || !h.memory.text.contains("Tallinn")),
        "{hits:#?}"
    );
    // The node holding it was calibrated: superseded by the node that says Porto, which keeps
    // the old statement as a record.
    let all = nodes(&engine, StateFilter::All);
    let stale = all
        .iter()
        .find(|n| n.text.contains("Tallinn") && !n.text.contains("Porto"))
        .expect("the first session's node");
    let newer = all
        .iter()
        .find(|n| Some(n.id) == stale.superseded_by)
        .expect("its successor");
    assert!(stale.valid_to.is_some());
    assert!(
        newer.text.contains("Porto now. (previously:"),
        "{}",
        newer.text
    );
    assert!(engine.model().usage().total().calls > calls_before);
}
