use mnemos_core::{Memory, MemoryKind, Role, Scope, StateFilter, Timestamp, UserKey};
use mnemos_engine::NewTurn;

use super::forgetting::RETRIEVED_KEY;
use super::nsb::{level_of, span_of};
use super::pcb::{key_of, value_of};
use super::*;
use crate::testing::{self, memories_of, test_engine, T0};
use crate::{build, PresetSpec};
use mnemos_engine::Engine;

fn engine(params: &str) -> Engine {
    test_engine(NAME, params, true)
}

fn scope(session: &str) -> Scope {
    Scope::new("t", "u", "bot", session).unwrap()
}

fn user() -> UserKey {
    UserKey::new("t", "u").unwrap()
}

fn turn(session: &str, role: Role, text: &str, minute: i64) -> NewTurn {
    NewTurn {
        role,
        speaker: Some(if role == Role::User { "Ana" } else { "Bot" }.into()),
        time: Some(Timestamp(T0 + minute * 60_000)),
        ..NewTurn::user(scope(session), text)
    }
}

/// `rounds` rounds (user line + reply) of `session`, the user's lines from `say(round)`.
fn feed(
    engine: &Engine,
    session: &str,
    first: usize,
    rounds: usize,
    say: impl Fn(usize) -> String,
) {
    for r in first..first + rounds {
        engine
            .add(vec![
                turn(session, Role::User, &say(r), 2 * r as i64),
                turn(
                    session,
                    Role::Assistant,
                    &format!("I see, go on ({r})."),
                    2 * r as i64 + 1,
                ),
            ])
            .unwrap();
    }
}

fn all(engine: &Engine, kind: &str, state: StateFilter) -> Vec<Memory> {
    memories_of(engine, &user(), kind, state)
}

fn level(engine: &Engine, level: u8) -> Vec<Memory> {
    let kind = if level == 1 { "exchange" } else { "summary" };
    let mut nodes: Vec<Memory> = all(engine, kind, StateFilter::All)
        .into_iter()
        .filter(|m| level_of(m) == Some(level))
        .collect();
    nodes.sort_by_key(|m| span_of(m).map(|s| s.0));
    nodes
}

#[test]
fn parameters_are_validated() {
    let spec = |t: &str| PresetSpec {
        name: NAME.into(),
        params: toml::from_str(t).unwrap(),
    };
    assert!(build(&spec("")).is_ok());
    assert!(build(&spec("schema = \"zh\"\ncapacity = 50")).is_ok());
    for (bad, needle) in [
        ("theta1 = 0", "theta1"),
        ("forgetting = \"lru\"", "forgetting"),
        ("suppression = \"twice\"", "suppression"),
        ("schema = \"fr\"", "schema"),
        ("nsb = false\npcb = false", "both off"),
        ("epsilon = 0.0", "epsilon"),
        ("contradiction_similarity = 1.5", "contradiction_similarity"),
        ("colour = 1", "colour"),
        (
            "keys = [{ name = \"likes\", kind = \"contradictory\", description = \"x\" }]",
            "opposite",
        ),
    ] {
        let err = build(&spec(bad))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(needle), "{bad}: {err}");
    }
}

#[test]
fn rounds_fold_into_units_then_summaries_with_provenance_down_to_turns() {
    let engine = engine("theta1 = 3\ntheta2 = 2\ntheta3 = 2\npcb = false\nforgetting = \"none\"");
    // 13 rounds: round 12 opens after 0..=11 complete → 4 units, 2 level-2, 1 level-3.
    feed(&engine, "s1", 0, 13, |r| {
        format!("On day {r} the knight rode to castle number {r}.")
    });
    let units = level(&engine, 1);
    assert_eq!(units.len(), 4);
    let spans: Vec<(u64, u64)> = units.iter().filter_map(span_of).collect();
    assert_eq!(spans, vec![(0, 2), (3, 5), (6, 8), (9, 11)]);
    for unit in &units {
        assert_eq!(unit.kind, MemoryKind::Exchange);
        assert_eq!(unit.provenance.len(), 6, "three rounds of two turns");
        assert!(unit.text.contains("Ana: On day"), "{}", unit.text);
    }
    let second = level(&engine, 2);
    assert_eq!(second.len(), 2);
    assert_eq!(second[0].kind, MemoryKind::Summary { level: 2 });
    assert_eq!(span_of(&second[1]), Some((6, 11)));
    let third = level(&engine, 3);
    assert_eq!(third.len(), 1);
    assert_eq!(span_of(&third[0]), Some((0, 11)));
    assert_eq!(
        third[0].provenance.len(),
        24,
        "a level-3 summary reaches every turn"
    );
    // Round 12 is not packaged yet: recall still finds it as a raw turn.
    let ctx = testing::recall(&engine, &user(), "bot", "castle number 12", 400);
    assert!(
        ctx.items
            .iter()
            .any(|i| i.kind == MemoryKind::Turn && i.text.contains("castle number 12")),
        "{:#?}",
        ctx.items
    );
}

#[test]
fn closing_a_session_packages_its_tail_and_folds_what_waits() {
    let engine = engine("theta1 = 3\ntheta2 = 5\npcb = false\nforgetting = \"none\"");
    feed(&engine, "s1", 0, 5, |r| {
        format!("Chapter {r}: the dragon sleeps.")
    });
    engine.end_session(&scope("s1")).unwrap();
    let spans: Vec<(u64, u64)> = level(&engine, 1).iter().filter_map(span_of).collect();
    assert_eq!(spans, vec![(0, 2), (3, 4)]);
    let second = level(&engine, 2);
    assert_eq!(second.len(), 1, "flushed: fewer than θ2 units summarized");
    assert_eq!(span_of(&second[0]), Some((0, 4)));
    // Closing again adds nothing.
    engine.end_session(&scope("s1")).unwrap();
    assert_eq!(level(&engine, 1).len(), 2);
    assert_eq!(level(&engine, 2).len(), 1);
    // The next session resumes at the next multiple of θ1.
    feed(&engine, "s2", 5, 2, |r| {
        format!("Chapter {r}: the dragon wakes.")
    });
    let spans: Vec<(u64, u64)> = level(&engine, 1).iter().filter_map(span_of).collect();
    assert_eq!(spans, vec![(0, 2), (3, 4), (5, 5)]);
}

fn persona_values(engine: &Engine, state: StateFilter) -> Vec<(String, String)> {
    all(engine, "persona", state)
        .iter()
        .map(|m| (key_of(m).unwrap_or("").to_string(), value_of(m).to_string()))
        .collect()
}

#[test]
fn the_persona_merges_each_key_by_its_kind_and_keeps_history() {
    let engine = engine("nsb = false\npersona_every = 2\ntrajectory_keep = 2");
    let lines = [
        "My name is Ana and I love cats.",
        "I work as a nurse.",
        "I love hiking too. I live in Porto.",
        "Actually I'm a teacher now.",
        "I moved, I live in Lisbon.",
        "I live in Madrid these days.",
        "Honestly I hate cats.",
        "I love cats.",
    ];
    feed(&engine, "s1", 0, lines.len(), |r| lines[r].to_string());
    engine.end_session(&scope("s1")).unwrap();
    let active = persona_values(&engine, StateFilter::Active);
    let has = |k: &str, v: &str| active.iter().any(|(a, b)| a == k && b == v);
    assert!(has("name", "Ana"), "{active:?}");
    assert!(
        has("job", "teacher") && !has("job", "nurse"),
        "replace: {active:?}"
    );
    assert!(has("likes", "hiking"), "{active:?}");
    assert!(
        has("location", "Madrid") && has("location", "Lisbon"),
        "{active:?}"
    );
    assert!(!has("location", "Porto"), "trajectory keeps 2: {active:?}");
    // "hate cats" outdated "love cats"; then "love cats" outdated "hate cats".
    assert!(
        has("likes", "cats") && !has("dislikes", "cats"),
        "{active:?}"
    );
    let forgotten = all(&engine, "persona", StateFilter::Forgotten);
    let reasons: Vec<String> = forgotten
        .iter()
        .filter_map(|m| match &m.state {
            mnemos_core::MemoryState::Forgotten { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("replaced by 'teacher'")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("aged out")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("contradicted")),
        "{reasons:?}"
    );
    for m in all(&engine, "persona", StateFilter::All) {
        assert!(!m.provenance.is_empty());
    }
}

#[test]
fn a_chinese_schema_keeps_chinese_keys_and_values() {
    let engine = engine("nsb = false\npersona_every = 1\nschema = \"zh\"");
    feed(&engine, "s1", 0, 2, |r| {
        ["我叫小明，我喜欢爬山。", "我讨厌香菜。"][r].to_string()
    });
    engine.end_session(&scope("s1")).unwrap();
    let active = persona_values(&engine, StateFilter::Active);
    assert!(
        active.contains(&("名字".into(), "小明".into())),
        "{active:?}"
    );
    assert!(
        active.contains(&("喜欢".into(), "爬山".into())),
        "{active:?}"
    );
    let texts: Vec<String> = all(&engine, "persona", StateFilter::Active)
        .iter()
        .map(|m| m.text.clone())
        .collect();
    // Each value reads as a statement about whoever said it.
    assert!(texts.contains(&"Ana的名字是小明".to_string()), "{texts:?}");
    assert!(texts.contains(&"Ana喜欢爬山".to_string()), "{texts:?}");
    assert!(texts.contains(&"Ana不喜欢香菜".to_string()), "{texts:?}");
}

#[test]
fn the_user_and_the_character_keep_sketches_of_their_own() {
    let engine = engine("nsb = false\npersona_every = 1\nschema = \"zh\"");
    let named = |role: Role, speaker: &str, text: &str, minute: i64| NewTurn {
        speaker: Some(speaker.into()),
        ..turn("s1", role, text, minute)
    };
    engine
        .add(vec![
            named(Role::User, "赵齐", "我叫赵齐，我是一名特工。", 0),
            named(Role::Assistant, "白羽岚", "我叫白羽岚，我是一名学生。", 1),
        ])
        .unwrap();
    engine.end_session(&scope("s1")).unwrap();
    let active = all(&engine, "persona", StateFilter::Active);
    let texts: Vec<&str> = active.iter().map(|m| m.text.as_str()).collect();
    // Both names stay: a replace key replaces only its own subject's value.
    for expected in [
        "赵齐的名字是赵齐",
        "赵齐是特工",
        "白羽岚的名字是白羽岚",
        "白羽岚是学生",
    ] {
        assert!(texts.contains(&expected), "{texts:?}");
    }
    assert!(all(&engine, "persona", StateFilter::All)
        .iter()
        .all(|m| m.is_active()));
    let sketch = view::persona(engine.reader().store(), &user(), None).unwrap();
    let subjects: Vec<Option<&str>> = sketch.iter().map(|k| k.subject.as_deref()).collect();
    assert_eq!(subjects.first(), Some(&Some("赵齐")), "{sketch:?}");
    assert!(subjects.contains(&Some("白羽岚")));
}

#[test]
fn persona_values_read_as_statements_in_their_language() {
    let cases = [
        (Some("赵齐"), "job", "特工", "赵齐是特工"),
        (Some("赵齐"), "职业", "以前是老师", "赵齐以前是老师"),
        (Some("李鱼"), "likes", "女生", "李鱼喜欢女生"),
        (Some("李鱼"), "dislikes", "咖啡", "李鱼不喜欢咖啡"),
        (Some("小明"), "家人", "妈妈是医生", "小明的妈妈是医生"),
        (
            Some("小明"),
            "plans",
            "明年去日本旅游",
            "小明打算明年去日本旅游",
        ),
        (
            Some("小明"),
            "relationships",
            "白羽岚的老师",
            "小明是白羽岚的老师",
        ),
        (Some("Ann"), "job", "nurse", "Ann works as a nurse"),
        (
            Some("Ann"),
            "location",
            "formerly Paris",
            "Ann formerly lived in Paris",
        ),
        (
            Some("Ann"),
            "family",
            "sister lives in Boston",
            "Ann's sister lives in Boston",
        ),
        (
            Some("Ann"),
            "favourite_tea",
            "oolong",
            "Ann's favourite_tea: oolong",
        ),
        (Some("小明"), "口头禅", "好家伙", "小明的口头禅：好家伙"),
        (None, "likes", "hiking", "likes: hiking"),
        (None, "name", "小明", "名字：小明"),
    ];
    for (subject, key, value, expected) in cases {
        assert_eq!(pcb::render_statement(subject, key, value), expected);
    }
}

/// A stream where round r talks about topic r % 4, and one topic ("lighthouse") keeps coming
/// back in the user's lines, so its units keep being retrieved.
fn competing_stream(params: &str) -> Engine {
    let engine = engine(params);
    let topics = [
        "volcano eruption ash",
        "bakery croissant butter",
        "chess opening gambit",
        "river kayak rapids",
    ];
    feed(&engine, "s1", 0, 60, |r| {
        if r % 3 == 0 {
            "Tell me again about the lighthouse keeper and the storm.".to_string()
        } else {
            format!(
                "Story {r}: the {} and the lighthouse keeper in the storm.",
                topics[r % 4]
            )
        }
    });
    engine
}

#[test]
fn competition_keeps_the_pool_within_capacity_and_records_why() {
    let engine = competing_stream("theta1 = 2\ntheta2 = 100\npcb = false\ncapacity = 8\nk = 2");
    let units = level(&engine, 1);
    assert!(units.len() >= 25, "{}", units.len());
    let active: Vec<&Memory> = units.iter().filter(|m| m.is_active()).collect();
    assert!(active.len() <= 8, "{}", active.len());
    let forgotten: Vec<&Memory> = units.iter().filter(|m| !m.is_active()).collect();
    assert!(!forgotten.is_empty());
    for m in &forgotten {
        match &m.state {
            mnemos_core::MemoryState::Forgotten { reason, .. } => {
                assert!(reason.contains("moom: competition score"), "{reason}");
                assert!(reason.contains("capacity 8"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Reinforced memories carry the rounds they were retrieved in.
    assert!(active
        .iter()
        .any(|m| m.metadata.contains_key(RETRIEVED_KEY)));
    // Recall never returns a forgotten node, and shows the forgetting score.
    let ctx = testing::recall(&engine, &user(), "bot", "lighthouse keeper storm", 600);
    assert!(!ctx.items.is_empty());
    for item in &ctx.items {
        assert!(forgotten.iter().all(|m| m.id != item.memory_id));
        assert!(!item.provenance.is_empty());
    }
    assert!(ctx
        .items
        .iter()
        .any(|i| i.breakdown.iter().any(|p| p.name == "forgetting_score")));
}

#[test]
fn ebbinghaus_and_none_run_on_the_same_pool() {
    let ebb = competing_stream(
        "theta1 = 2\ntheta2 = 100\npcb = false\ncapacity = 8\nk = 2\nforgetting = \"ebbinghaus\"",
    );
    let units = level(&ebb, 1);
    assert!(units.iter().filter(|m| m.is_active()).count() <= 8);
    assert!(units.iter().any(|m| match &m.state {
        mnemos_core::MemoryState::Forgotten { reason, .. } => reason.contains("retention"),
        _ => false,
    }));
    let none = competing_stream(
        "theta1 = 2\ntheta2 = 100\npcb = false\ncapacity = 8\nforgetting = \"none\"",
    );
    let units = level(&none, 1);
    assert!(units.len() >= 25);
    assert!(units.iter().all(|m| m.is_active()), "none forgets nothing");
}

#[test]
fn persistent_suppression_halves_a_stored_factor() {
    let engine = competing_stream(
        "theta1 = 2\ntheta2 = 100\npcb = false\nk = 1\nsuppression = \"persistent\"",
    );
    let units = level(&engine, 1);
    let factors: Vec<f64> = units.iter().filter_map(|m| m.metrics.inhibition).collect();
    assert!(!factors.is_empty(), "someone was suppressed");
    for f in factors {
        assert!(f > 0.0 && f < 1.0);
        let halvings = (1.0 / f).log2();
        assert!((halvings - halvings.round()).abs() < 1e-9, "{f}");
    }
}

#[test]
fn recall_shows_persona_then_plot_in_timeline_order_within_budget() {
    let engine = engine("theta1 = 2\ntheta2 = 100\npersona_every = 2\ntop_k = 4");
    let lines = [
        "My name is Ana. I love sailing.",
        "We sailed past the old lighthouse at dawn.",
        "Then a storm hit the harbour.",
        "The lighthouse beam saved our boat.",
        "Later we ate fish soup.",
        "Next week I plan to sail to the lighthouse again.",
    ];
    feed(&engine, "s1", 0, lines.len(), |r| lines[r].to_string());
    engine.end_session(&scope("s1")).unwrap();
    let ctx = testing::recall(
        &engine,
        &user(),
        "bot",
        "what happened at the lighthouse?",
        500,
    );
    assert!(ctx.tokens <= 500);
    let sections: Vec<&str> = ctx.items.iter().map(|i| i.section.as_str()).collect();
    let first_plot = sections.iter().position(|s| *s == SECTION_PLOT).unwrap();
    assert!(
        sections[..first_plot].iter().all(|s| *s == SECTION_PERSONA),
        "{sections:?}"
    );
    assert!(sections[..first_plot].len() >= 2, "{sections:?}");
    let starts: Vec<u64> = ctx.items[first_plot..]
        .iter()
        .map(|i| {
            let m = engine.get(&user(), i.memory_id).unwrap();
            span_of(&m).map_or(m.created.round, |s| s.0)
        })
        .collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    assert_eq!(starts, sorted, "timeline order");
    for budget in [0, 10, 40, 120] {
        let ctx = testing::recall(&engine, &user(), "bot", "lighthouse", budget);
        assert!(ctx.tokens <= budget, "{} > {budget}", ctx.tokens);
    }
}

#[test]
fn views_show_the_sketch_with_history_and_the_summary_tree() {
    let engine =
        engine("theta1 = 2\ntheta2 = 2\ntheta3 = 2\npersona_every = 2\nforgetting = \"none\"");
    let lines = [
        "I work as a nurse.",
        "The ship left the harbour.",
        "Actually I'm a teacher now.",
        "The storm broke the mast.",
        "We reached the island.",
        "We found the cave.",
        "The treasure was gone.",
        "We sailed home.",
        "Home at last.",
    ];
    feed(&engine, "s1", 0, lines.len(), |r| lines[r].to_string());
    let persona = view::persona(engine.reader().store(), &user(), Some("bot")).unwrap();
    let job = persona.iter().find(|k| k.key == "job").unwrap();
    assert_eq!(job.current.len(), 1);
    assert_eq!(job.current[0].value, "teacher");
    assert_eq!(job.history.len(), 1);
    assert!(job.history[0]
        .reason
        .as_deref()
        .unwrap_or("")
        .contains("replaced"));

    let tree = view::timeline(engine.reader().store(), &user(), Some("bot")).unwrap();
    // Rounds 0..=7: 4 units, 2 level-2, 1 level-3 root holding everything.
    assert_eq!(tree.len(), 1, "{tree:#?}");
    assert_eq!(tree[0].level, 3);
    assert_eq!((tree[0].from_round, tree[0].to_round), (0, 7));
    assert_eq!(tree[0].children.len(), 2);
    assert!(tree[0]
        .children
        .iter()
        .all(|c| c.level == 2 && c.children.len() == 2));
    assert!(
        view::timeline(engine.reader().store(), &user(), Some("nobody"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_default_key_is_labelled_in_its_value_language() {
    assert_eq!(pcb::label_for("likes", "爬山"), "喜欢");
    assert_eq!(pcb::label_for("喜欢", "hiking"), "likes");
    assert_eq!(pcb::label_for("likes", "hiking"), "likes");
    assert_eq!(pcb::label_for("favourite_tea", "龙井"), "favourite_tea");
    assert_eq!(
        pcb::render_value(&pcb::label_for("name", "小明"), "小明"),
        "名字：小明"
    );
}

#[test]
fn a_tight_budget_keeps_the_persona_values_the_query_is_about() {
    let engine = engine("nsb = false\npersona_every = 1");
    let lines = [
        "I love hiking.",
        "I love chess.",
        "I love jazz records.",
        "I love sourdough baking.",
        "I love watercolor painting.",
        "I have a dog named Biscuit.",
    ];
    feed(&engine, "s1", 0, lines.len(), |r| lines[r].to_string());
    engine.end_session(&scope("s1")).unwrap();
    assert!(all(&engine, "persona", StateFilter::Active).len() >= 6);
    let ctx = testing::recall(
        &engine,
        &user(),
        "bot",
        "what is the dog called? Biscuit",
        40,
    );
    let texts: Vec<&str> = ctx.items.iter().map(|i| i.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("Biscuit")), "{texts:?}");
    assert!(texts.len() < 6, "{texts:?}");
    assert!(
        ctx.notes
            .iter()
            .any(|n| n.contains("persona values left out")),
        "{:?}",
        ctx.notes
    );
}
