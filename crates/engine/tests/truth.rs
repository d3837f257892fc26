//! What is true now, through the engine's front door: a new value supersedes the old one
//! (history kept), a repeat reinforces, a negation or a correction ends a fact, another
//! person's value or a hypothetical does not; reads leave superseded memories out, mark them
//! when asked, and answer `as_of`; a forget request erases what it names (gone from the
//! database file) and leaves a tombstone; credentials are redacted at write.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::path::Path;
use std::sync::Arc;

use mnemos_core::{
    KindTag, Memory, MemoryFilter, MemoryStore, Scope, StateFilter, Store, Timestamp, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, NewTurn, PresetSpec, RecallRequest, SearchRequest};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

const DAY: i64 = 86_400_000;
const T0: i64 = 1_700_000_000_000;

fn engine_on(store: Arc<dyn Store>, preset: &str) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let config = EngineConfig {
        preset: PresetSpec::named(preset),
        ..EngineConfig::default()
    };
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(config)
        .build()
        .unwrap()
}

fn engine(preset: &str) -> Engine {
    engine_on(Arc::new(MemoryStore::new()), preset)
}

fn ann() -> UserKey {
    UserKey::new("t", "ann").unwrap()
}

/// Ann's turns, one a day from `T0`, each followed by the assistant's short reply.
fn say(engine: &Engine, day: i64, lines: &[&str]) {
    let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
    let mut turns = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let time = Timestamp(T0 + (day + i as i64) * DAY);
        let mut user = NewTurn::user(scope.clone(), *line);
        user.speaker = Some("Ann".into());
        user.time = Some(time);
        let mut reply = NewTurn::user(scope.clone(), "Thanks for telling me.");
        reply.role = mnemos_core::Role::Assistant;
        reply.time = Some(Timestamp(time.0 + 1_000));
        turns.push(user);
        turns.push(reply);
    }
    engine.add(turns).unwrap();
}

fn search(engine: &Engine, query: &str) -> Vec<Memory> {
    let mut request = SearchRequest::new(ann(), query);
    request.top_k = Some(20);
    engine
        .search(&request)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.memory)
        .collect()
}

fn facts(engine: &Engine) -> Vec<Memory> {
    let filter = MemoryFilter {
        kinds: vec![KindTag::Fact],
        state: StateFilter::All,
        ..MemoryFilter::default()
    };
    engine.reader().all(&ann(), &filter).unwrap()
}

fn fact_with<'a>(facts: &'a [Memory], value: &str) -> &'a Memory {
    facts
        .iter()
        .find(|m| m.metadata.get("fact.value").is_some_and(|v| v == value))
        .unwrap_or_else(|| panic!("no fact with value {value}: {facts:#?}"))
}

fn recall(engine: &Engine, query: &str, as_of: Option<Timestamp>) -> String {
    let mut request = RecallRequest::new(query, 400);
    request.as_of = as_of;
    engine.recall(&ann(), "bot", &request).unwrap().text
}

#[test]
fn a_new_value_supersedes_the_old_one_and_history_keeps_both() {
    let engine = engine("default");
    say(&engine, 0, &["By the way, I live in Tallinn these days."]);
    say(
        &engine,
        10,
        &["Big news: I just moved, and I live in Porto now."],
    );
    let all = facts(&engine);
    let (tallinn, porto) = (fact_with(&all, "Tallinn"), fact_with(&all, "Porto"));
    assert_eq!(tallinn.superseded_by, Some(porto.id));
    assert_eq!(tallinn.valid_to, Some(porto.valid_from));
    assert!(
        porto.is_current() && tallinn.is_active(),
        "nothing is deleted"
    );
    let history = engine.history(&ann(), tallinn.id).unwrap();
    assert_eq!(history.len(), 2, "created, then superseded: {history:#?}");

    // Search: what is true now, unless the past is asked for.
    let now = search(&engine, "Where do I live?");
    assert!(now.iter().any(|m| m.text.contains("Porto")), "{now:#?}");
    assert!(now.iter().all(|m| !m.text.contains("Tallinn")), "{now:#?}");
    let mut request = SearchRequest::new(ann(), "Where do I live?");
    request.include_superseded = true;
    let hits = engine.search(&request).unwrap().hits;
    let first_stale = hits.iter().position(|h| !h.memory.is_current()).unwrap();
    assert!(hits[..first_stale]
        .iter()
        .any(|h| h.memory.text.contains("Porto")));
    assert!(
        hits[first_stale..].iter().all(|h| !h.memory.is_current()),
        "current first"
    );
    let stale_turn = hits
        .iter()
        .find(|h| h.memory.kind.tag() == KindTag::Turn && h.memory.text.contains("Tallinn"))
        .expect("the superseded turn, marked");
    assert!(stale_turn.memory.superseded_by.is_some());

    // As of day 5, Tallinn held.
    let mut past = SearchRequest::new(ann(), "Where do I live?");
    past.as_of = Some(Timestamp(T0 + 5 * DAY));
    let then = engine.search(&past).unwrap().hits;
    assert!(then.iter().any(|h| h.memory.text.contains("Tallinn")));
    assert!(then.iter().all(|h| !h.memory.text.contains("Porto")));

    // Recall: one line with the history, never the stale value unmarked.
    let context = recall(&engine, "Which city do I live in now?", None);
    assert!(context.contains("Porto"), "{context}");
    for line in context.lines().filter(|l| l.contains("Tallinn")) {
        assert!(line.contains("previously: Tallinn"), "{context}");
    }
    let context = recall(
        &engine,
        "Which city did I live in?",
        Some(Timestamp(T0 + 5 * DAY)),
    );
    assert!(
        context.contains("Tallinn") && !context.contains("Porto"),
        "{context}"
    );
}

#[test]
fn a_repeat_reinforces_instead_of_adding_an_equal_fact() {
    let engine = engine("default");
    say(&engine, 0, &["I live in Porto."]);
    say(&engine, 3, &["Like I said, I live in Porto."]);
    let all = facts(&engine);
    let porto: Vec<&Memory> = all
        .iter()
        .filter(|m| m.metadata.get("fact.value").is_some_and(|v| v == "Porto"))
        .collect();
    assert_eq!(porto.len(), 1, "{all:#?}");
    assert_eq!(porto[0].metrics.times_said, Some(2));
    assert_eq!(
        porto[0].provenance.len(),
        2,
        "both turns are its provenance"
    );
    assert_eq!(porto[0].metrics.last_said, Some(Timestamp(T0 + 3 * DAY)));
}

#[test]
fn negations_and_corrections_end_a_fact() {
    let engine = engine("default");
    say(&engine, 0, &["My dentist appointment is on Wednesday."]);
    say(&engine, 1, &["Sorry, not Wednesday, Thursday."]);
    let all = facts(&engine);
    let wednesday = all
        .iter()
        .find(|m| {
            m.metadata
                .get("fact.value")
                .is_some_and(|v| v == "Wednesday")
        })
        .expect("the first statement");
    assert!(!wednesday.is_current(), "{all:#?}");
    let newer = all
        .iter()
        .find(|m| Some(m.id) == wednesday.superseded_by)
        .unwrap();
    assert!(newer.text.contains("Thursday"), "{newer:#?}");

    say(&engine, 5, &["I eat meat every day."]);
    say(&engine, 6, &["I no longer eat meat."]);
    let all = facts(&engine);
    let meat: Vec<&Memory> = all
        .iter()
        .filter(|m| m.metadata.get("fact.slot").is_some_and(|s| s == "diet"))
        .collect();
    assert!(meat.iter().any(|m| !m.is_current()), "{meat:#?}");
    assert!(meat
        .iter()
        .any(|m| m.is_current() && m.metadata.contains_key("fact.negated")));
}

#[test]
fn another_person_s_value_or_a_hypothetical_does_not_supersede() {
    let engine = engine("default");
    say(&engine, 0, &["I live in Tallinn."]);
    say(
        &engine,
        1,
        &[
            "My brother just moved to Lisbon.",
            "If I ever moved to Paris, I'd learn to paint.",
            "My coworker told me, \"I live in Berlin now.\"",
            "Do you live in Rome?",
        ],
    );
    let all = facts(&engine);
    assert!(fact_with(&all, "Tallinn").is_current(), "{all:#?}");
    let now = search(&engine, "Where do I live?");
    assert!(now.iter().any(|m| m.text.contains("Tallinn")));
}

#[test]
fn research_presets_keep_their_own_write_path() {
    let engine = engine("retrieval");
    say(&engine, 0, &["I live in Tallinn."]);
    say(&engine, 1, &["I just moved to Porto."]);
    assert!(facts(&engine).is_empty());
    let now = search(&engine, "Tallinn Porto");
    let has = |word: &str| now.iter().any(|m| m.text.contains(word));
    assert!(
        has("Tallinn") && has("Porto"),
        "nothing superseded: {now:#?}"
    );
}

#[test]
fn chinese_updates_supersede_too() {
    let engine = engine("default");
    say(&engine, 0, &["对了，我现在住在洛阳。"]);
    say(&engine, 4, &["我刚搬完家，现在住在厦门了。"]);
    let all = facts(&engine);
    assert!(!fact_with(&all, "洛阳").is_current(), "{all:#?}");
    assert!(fact_with(&all, "厦门").is_current());
    let context = recall(&engine, "我现在住在哪个城市？", None);
    assert!(context.contains("厦门"), "{context}");
    for line in context.lines().filter(|l| l.contains("洛阳")) {
        assert!(line.contains("之前：洛阳"), "{context}");
    }
}

fn file_holds(path: &Path, needle: &str) -> bool {
    ["", "-wal", "-shm"].iter().any(|suffix| {
        let file = format!("{}{suffix}", path.display());
        std::fs::read(&file)
            .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            .unwrap_or(false)
    })
}

#[test]
fn a_forget_request_erases_what_it_names_and_leaves_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemos.db");
    let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let engine = engine_on(store, "default");
    say(
        &engine,
        0,
        &[
            "My passport number is X4417902.",
            "I love hiking in the Alps.",
        ],
    );
    assert!(
        file_holds(&path, "X4417902"),
        "fixture: the number is stored"
    );
    assert!(search(&engine, "passport number")
        .iter()
        .any(|m| m.text.contains("X4417902")));

    say(&engine, 5, &["Please forget my passport number."]);
    for query in ["passport number", "What is my passport number?", "X4417902"] {
        let hits = search(&engine, query);
        assert!(
            hits.iter().all(|m| !m.text.contains("X4417902")),
            "{query}: {hits:#?}"
        );
    }
    let context = recall(&engine, "What is my passport number?", None);
    assert!(!context.contains("X4417902"), "{context}");
    assert!(
        context.contains("the user asked to forget: my passport number"),
        "the tombstone is reported: {context}"
    );
    assert!(
        search(&engine, "hiking Alps")
            .iter()
            .any(|m| m.text.contains("Alps")),
        "the rest stays"
    );
    drop(engine);
    assert!(
        !file_holds(&path, "X4417902"),
        "gone from the database file"
    );
}

#[test]
fn a_forget_request_takes_the_value_wherever_it_was_repeated_and_answers_other_wordings() {
    let engine = engine("default");
    say(
        &engine,
        0,
        &["My phone number is 555-0148-3321 if you need me."],
    );
    say(&engine, 3, &["I adopted a cat named Miso."]);
    say(&engine, 6, &["You can text me at 555-0148-3321 anytime."]);
    say(&engine, 9, &["我去年春天被诊断出乳糜泻。"]);
    say(&engine, 12, &["医生说我的乳糜泻现在控制住了。"]);
    say(
        &engine,
        15,
        &["I'd like you to forget my phone number, please."],
    );
    say(&engine, 16, &["把我跟你说的诊断结果忘掉吧。"]);
    for query in ["phone number", "555-0148-3321", "text me", "乳糜泻", "医生"] {
        let hits = search(&engine, query);
        assert!(
            hits.iter()
                .all(|m| !m.text.contains("555-0148") && !m.text.contains("乳糜泻")),
            "{query}: {hits:#?}"
        );
    }
    let context = recall(&engine, "How can you reach me by phone?", None);
    assert!(
        context.contains("the user asked to forget: my phone number"),
        "{context}"
    );
    let context = recall(&engine, "我得了什么病？", None);
    assert!(context.contains("用户要求忘掉：诊断结果"), "{context}");
    assert!(
        search(&engine, "cat Miso")
            .iter()
            .any(|m| m.text.contains("Miso")),
        "the rest stays"
    );
}

#[test]
fn credentials_are_redacted_at_write_unless_switched_off() {
    let engine = engine("default");
    say(
        &engine,
        0,
        &["My wifi password is Tr0ub4dor&3, by the way."],
    );
    let hits = search(&engine, "wifi password");
    let turn = hits.iter().find(|m| m.text.contains("wifi")).unwrap();
    assert!(!turn.text.contains("Tr0ub4dor"), "{turn:#?}");
    assert!(turn.text.contains("[redacted password]"));
    assert_eq!(
        turn.metadata.get("redacted").map(String::as_str),
        Some("password")
    );

    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let kept = Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .privacy(mnemos_engine::truth::PrivacySettings {
            redact_credentials: false,
        })
        .build()
        .unwrap();
    say(&kept, 0, &["My wifi password is Tr0ub4dor&3, by the way."]);
    assert!(search(&kept, "wifi password")
        .iter()
        .any(|m| m.text.contains("Tr0ub4dor")));
}

#[test]
fn a_turn_whose_facts_are_all_replaced_in_the_same_write_stops_being_current() {
    let engine = engine("default");
    say(
        &engine,
        0,
        &[
            "Relationship-wise, I'm single right now.",
            "Sorry, I misspoke: I'm engaged, not single.",
        ],
    );
    let hits = search(&engine, "relationship single engaged");
    assert!(
        hits.iter()
            .all(|m| m.text != "Relationship-wise, I'm single right now."),
        "{hits:#?}"
    );
    let context = recall(&engine, "What is my relationship status now?", None);
    for line in context.lines().filter(|l| l.contains("single")) {
        assert!(
            line.contains("previously: single") || line.contains("not single"),
            "{context}"
        );
    }
}

/// An engine whose memory model is an LLM endpoint scripted to answer `conflicts`.
fn engine_with_llm(server: &mnemos_testkit::ScriptedLlm) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let mut config = mnemos_llm::LlmConfig::new(server.base_url(), "scripted-model");
    config.max_retries = 0;
    let model = Arc::new(mnemos_llm::LlmModel::new(config).unwrap());
    Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .build()
        .unwrap()
}

#[test]
fn with_a_language_model_a_supersession_is_confirmed_or_undone() {
    use mnemos_testkit::{ScriptedLlm, Step};
    // The model says the two statements do not conflict: the rules' supersession is undone.
    let server = ScriptedLlm::start().unwrap();
    server.push_for("conflicts", Step::reply(r#"{"conflict": false}"#));
    let engine = engine_with_llm(&server);
    say(&engine, 0, &["I live in Tallinn."]);
    say(&engine, 1, &["I live in Porto now."]);
    let all = facts(&engine);
    let tallinn = fact_with(&all, "Tallinn");
    assert!(tallinn.is_current(), "undone: {all:#?}");
    let history = engine.history(&ann(), tallinn.id).unwrap();
    assert_eq!(
        history.len(),
        3,
        "created, superseded, restored: {history:#?}"
    );
    assert!(search(&engine, "Tallinn")
        .iter()
        .any(|m| m.text.contains("Tallinn")));

    // The model confirms: the supersession stands.
    let server = ScriptedLlm::start().unwrap();
    server.push_for("conflicts", Step::reply(r#"{"conflict": true}"#));
    let engine = engine_with_llm(&server);
    say(&engine, 0, &["I live in Tallinn."]);
    say(&engine, 1, &["I live in Porto now."]);
    assert!(!fact_with(&facts(&engine), "Tallinn").is_current());
    assert_eq!(
        server.requests().len(),
        1,
        "one conflicts call, nothing else asked of the model"
    );
}
