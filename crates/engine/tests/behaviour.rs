//! The behaviour every preset must show, run over the whole registry: observe/recall round trip,
//! budgets, forgetting invariants, scope isolation, job replay after a simulated crash, and
//! determinism with the offline model. A new preset is covered by being registered.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemos_core::{
    FixedClock, Job, Memory, MemoryFilter, MemoryId, MemoryStore, Page, Role, Scope, StateFilter,
    Store, StoreRead, Timestamp, Turn, TurnId, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{
    Context, Derived, Engine, EngineBuilder, EngineConfig, EngineResult, JobSettings, JobSpec,
    Mechanism, MechanismCtx, NewTurn, ObserveCtx, Recall, RecallRequest,
};
use mnemos_presets::{self as presets, PresetSpec};

/// Every memory of `user` matching `filter`, in creation order.
fn collect_all(
    store: &dyn StoreRead,
    user: &UserKey,
    filter: &MemoryFilter,
) -> EngineResult<Vec<Memory>> {
    Ok(store.list_all(user, filter)?)
}
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

const TENANT: &str = "t";
const AGENT: &str = "bot";
/// Start of the fixture's calendar (2024-03-01T09:00Z) and one turn every ten minutes.
const T0: i64 = 1_709_283_600_000;
const STEP: i64 = 600_000;

/// Parameters that make a preset do its derived work on a short fixture dialogue.
fn small_params(name: &str) -> toml::Table {
    let text = match name {
        "memgpt" => "buffer_tokens = 120\ncore_tokens = 120\n",
        "generative" => "reflect_threshold = 20.0\n",
        "memorybank" => "",
        "scmemory" => "",
        "moom" => "theta1 = 2\ntheta2 = 2\ntheta3 = 2\npersona_every = 3\n",
        // Keep every pair (the suite looks for facts of both sessions) and let the hash
        // embedder's low cosines through.
        "lufy" => "keep_share = 1.0\nsimilarity_threshold = -1.0\n",
        _ => "",
    };
    toml::from_str(text).unwrap_or_default()
}

fn spec(name: &str) -> PresetSpec {
    let spec = PresetSpec {
        name: name.into(),
        params: small_params(name),
    };
    if let Err(e) = presets::build(&spec) {
        panic!("test parameters of {name} are invalid: {e}");
    }
    spec
}

fn config(name: &str, inline: bool) -> EngineConfig {
    EngineConfig {
        preset: spec(name),
        agents: Default::default(),
        params: Default::default(),
        jobs: JobSettings {
            inline,
            max_attempts: 3,
            ..JobSettings::default()
        },
    }
}

fn builder_on(store: Arc<dyn Store>, name: &str, inline: bool) -> EngineBuilder {
    let embedder: Arc<dyn mnemos_core::Embedder> = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .clock(Arc::new(FixedClock(Timestamp(T0 + 1_000 * STEP))))
        .config(config(name, inline))
}

fn engine_on(store: Arc<dyn Store>, name: &str, inline: bool) -> Engine {
    builder_on(store, name, inline).build().unwrap()
}

/// The pending jobs of ann.
fn pending(engine: &Engine) -> Vec<Job> {
    engine
        .pending_jobs(Some(&user("ann")))
        .unwrap()
        .into_iter()
        .map(|p| p.job)
        .collect()
}

fn fresh_engine(name: &str) -> Engine {
    engine_on(Arc::new(MemoryStore::new()), name, true)
}

fn user(name: &str) -> UserKey {
    UserKey::new(TENANT, name).unwrap()
}

fn scope(user: &str, agent: &str, session: &str) -> Scope {
    Scope::new(TENANT, user, agent, session).unwrap()
}

/// (session, role, speaker, text). The two facts sit in the last ten turns so that even a
/// recent-window preset sees them.
const DIALOGUE: &[(&str, Role, &str, &str)] = &[
    (
        "s1",
        Role::User,
        "Ann",
        "Good morning! I just got back from a long run by the river.",
    ),
    (
        "s1",
        Role::Assistant,
        "Bot",
        "Good morning Ann! How far did you run?",
    ),
    (
        "s1",
        Role::User,
        "Ann",
        "About twelve kilometres. My knees are a bit sore now.",
    ),
    (
        "s1",
        Role::Assistant,
        "Bot",
        "Stretching after the run helps with sore knees.",
    ),
    (
        "s1",
        Role::User,
        "Ann",
        "I work as a nurse at the city hospital, so I'm on my feet all day.",
    ),
    (
        "s1",
        Role::Assistant,
        "Bot",
        "That sounds demanding. Do you work night shifts?",
    ),
    (
        "s1",
        Role::User,
        "Ann",
        "Yes, three night shifts a week. I usually sleep until noon after them.",
    ),
    (
        "s1",
        Role::Assistant,
        "Bot",
        "Sleep matters a lot with that schedule.",
    ),
    (
        "s1",
        Role::User,
        "Ann",
        "我周末喜欢去公园画画，最近在学水彩。",
    ),
    ("s1", Role::Assistant, "Bot", "水彩很有意思，你画些什么？"),
    ("s1", Role::User, "Ann", "主要画湖边的树和小船。"),
    ("s1", Role::Assistant, "Bot", "听起来很安静，很美。"),
    (
        "s2",
        Role::User,
        "Ann",
        "Busy week! The hospital is short of staff again.",
    ),
    (
        "s2",
        Role::Assistant,
        "Bot",
        "I'm sorry to hear that. Are you getting any rest?",
    ),
    (
        "s2",
        Role::User,
        "Ann",
        "A little. Good news though: my sister Clara is visiting next Saturday.",
    ),
    (
        "s2",
        Role::Assistant,
        "Bot",
        "How lovely! What are you planning to do together?",
    ),
    (
        "s2",
        Role::User,
        "Ann",
        "Clara is allergic to peanuts, so I need to find a safe restaurant.",
    ),
    (
        "s2",
        Role::Assistant,
        "Bot",
        "Many Thai places use peanuts; a Greek taverna might be safer.",
    ),
    (
        "s2",
        Role::User,
        "Ann",
        "Good idea. We might also visit the botanical garden.",
    ),
    (
        "s2",
        Role::Assistant,
        "Bot",
        "The garden is beautiful this time of year.",
    ),
    (
        "s2",
        Role::User,
        "Ann",
        "对了，我的猫叫豆豆，它今年三岁了。",
    ),
    ("s2", Role::Assistant, "Bot", "豆豆这个名字真可爱！"),
    (
        "s2",
        Role::User,
        "Ann",
        "It will be a fun weekend if the weather holds.",
    ),
    (
        "s2",
        Role::Assistant,
        "Bot",
        "I hope the sun shines for you both.",
    ),
];

const PEANUT_TURN: usize = 16;
const CAT_TURN: usize = 20;

fn dialogue_turns(user: &str, agent: &str) -> Vec<NewTurn> {
    DIALOGUE
        .iter()
        .enumerate()
        .map(|(i, (session, role, speaker, text))| NewTurn {
            scope: scope(user, agent, session),
            role: *role,
            speaker: Some(speaker.to_string()),
            text: text.to_string(),
            time: Some(Timestamp(T0 + i as i64 * STEP)),
            round: None,
            metadata: Default::default(),
            key: None,
        })
        .collect()
}

/// Feed the dialogue session by session, closing each; returns the turn ids in order.
fn feed(engine: &Engine, user: &str, agent: &str) -> Vec<TurnId> {
    let mut ids = Vec::new();
    let turns = dialogue_turns(user, agent);
    for session in ["s1", "s2"] {
        let part: Vec<NewTurn> = turns
            .iter()
            .filter(|t| t.scope.session == session)
            .cloned()
            .collect();
        // Several small writes, as a live chat would make them.
        for chunk in part.chunks(4) {
            let report = engine.add(chunk.to_vec()).unwrap();
            ids.extend(report.turns.iter().map(|t| t.turn_id));
        }
        engine.end_session(&scope(user, agent, session)).unwrap();
    }
    ids
}

fn recall(engine: &Engine, user_name: &str, query: &str, budget: usize) -> Context {
    engine
        .recall(
            &user(user_name),
            AGENT,
            &RecallRequest {
                query: query.into(),
                token_budget: budget,
                session: None,
                as_of: None,
                min_relevance: None,
                deadline: mnemos_core::Deadline::NONE,
            },
        )
        .unwrap()
}

fn mentions(context: &Context, turn: TurnId, words: &[&str]) -> bool {
    context
        .items
        .iter()
        .any(|item| item.provenance.contains(&turn) && words.iter().any(|w| item.text.contains(w)))
}

#[test]
fn every_preset_recalls_what_it_observed_in_both_languages() {
    for name in presets::names() {
        let engine = fresh_engine(name);
        let ids = feed(&engine, "ann", AGENT);
        let context = recall(&engine, "ann", "What is Clara allergic to?", 800);
        assert!(
            mentions(&context, ids[PEANUT_TURN], &["peanut"]),
            "{name}: peanut fact missing from\n{}",
            context.text
        );
        let context = recall(&engine, "ann", "我的猫叫什么名字？", 800);
        assert!(
            mentions(&context, ids[CAT_TURN], &["豆豆"]),
            "{name}: cat fact missing from\n{}",
            context.text
        );
        assert_eq!(context.mechanism, name);
        // Every item explains itself: provenance and a score.
        for item in &context.items {
            assert!(
                !item.provenance.is_empty(),
                "{name}: item without provenance"
            );
            assert!(item.score.is_finite(), "{name}: non-finite score");
            assert!(
                context.text.contains(item.text.as_str()),
                "{name}: item not rendered"
            );
        }
    }
}

#[test]
fn every_preset_fits_every_budget() {
    for name in presets::names() {
        let engine = fresh_engine(name);
        feed(&engine, "ann", AGENT);
        for budget in [0, 1, 16, 64, 256, 4096] {
            let context = recall(
                &engine,
                "ann",
                "How is Ann's week going at the hospital?",
                budget,
            );
            assert!(
                context.tokens <= budget,
                "{name}: {} tokens for a budget of {budget}",
                context.tokens
            );
            assert_eq!(
                context.tokens,
                mnemos_engine::primitives::tokens(&context.text),
                "{name}: token count does not match the text"
            );
        }
        let context = recall(
            &engine,
            "ann",
            "How is Ann's week going at the hospital?",
            4096,
        );
        assert!(
            !context.items.is_empty(),
            "{name}: nothing recalled with a large budget"
        );
    }
}

#[test]
fn deleted_and_forgotten_memories_never_come_back() {
    for name in presets::names() {
        let engine = fresh_engine(name);
        let ids = feed(&engine, "ann", AGENT);
        let ann = user("ann");
        // The raw-turn memory of the peanut turn.
        let turn_memory = collect_all(engine.reader().store(), &ann, &MemoryFilter::active())
            .unwrap()
            .into_iter()
            .find(|m| m.kind == mnemos_core::MemoryKind::Turn && m.provenance == [ids[PEANUT_TURN]])
            .unwrap();
        engine
            .forget(&ann, turn_memory.id, "the user asked to forget it")
            .unwrap();
        for query in [
            "What is Clara allergic to?",
            "peanuts restaurant Clara",
            "Clara",
        ] {
            let context = recall(&engine, "ann", query, 4096);
            for item in &context.items {
                assert!(
                    !item.provenance.contains(&ids[PEANUT_TURN]),
                    "{name}: a memory from the deleted turn came back: {}",
                    item.text
                );
                let stored = engine.get(&ann, item.memory_id).unwrap();
                assert!(stored.is_active(), "{name}: recalled a forgotten memory");
            }
        }
        // Forgetting is recorded, not erased.
        let history = engine.history(&ann, turn_memory.id).unwrap();
        assert!(history
            .iter()
            .any(|h| matches!(h.change, mnemos_core::Change::Forgotten { .. })));
        // Every forgotten memory says why.
        let forgotten = collect_all(
            engine.reader().store(),
            &ann,
            &MemoryFilter {
                state: StateFilter::Forgotten,
                ..MemoryFilter::default()
            },
        )
        .unwrap();
        for memory in forgotten {
            match memory.state {
                mnemos_core::MemoryState::Forgotten { reason, .. } => {
                    assert!(
                        !reason.trim().is_empty(),
                        "{name}: forgotten without a reason"
                    )
                }
                mnemos_core::MemoryState::Active => unreachable!(),
            }
        }
    }
}

#[test]
fn users_and_agents_never_see_each_other() {
    for name in presets::names() {
        let engine = fresh_engine(name);
        feed(&engine, "ann", AGENT);
        // Another user, and the same user under another agent, with their own facts.
        let mut other = dialogue_turns("bob", AGENT);
        other[PEANUT_TURN].text =
            "My brother Tom is allergic to shellfish and plays the cello.".into();
        engine.add(other).unwrap();
        engine.end_session(&scope("bob", AGENT, "s2")).unwrap();
        let mut other_agent = dialogue_turns("ann", "tutor");
        other_agent[PEANUT_TURN].text = "The violin exam is on Friday at the conservatory.".into();
        engine.add(other_agent).unwrap();
        engine.end_session(&scope("ann", "tutor", "s2")).unwrap();

        let ann = user("ann");
        for query in [
            "Who plays the cello?",
            "shellfish allergy",
            "violin exam conservatory",
        ] {
            let context = recall(&engine, "ann", query, 4096);
            for item in &context.items {
                let memory = engine.get(&ann, item.memory_id).unwrap_or_else(|_| {
                    panic!("{name}: recalled a memory that is not Ann's: {}", item.text)
                });
                assert_eq!(
                    memory.scope.agent, AGENT,
                    "{name}: crossed agents: {}",
                    item.text
                );
                assert!(
                    !item.text.contains("cello") && !item.text.contains("violin"),
                    "{name}: leaked {}",
                    item.text
                );
            }
        }
    }
}

/// Derived (non-turn) memories of a user, as comparable text: kind and text, sorted.
fn derived_texts(store: &dyn StoreRead, user_name: &str) -> Vec<String> {
    let mut out: Vec<String> = collect_all(
        store,
        &user(user_name),
        &MemoryFilter {
            state: StateFilter::All,
            ..MemoryFilter::default()
        },
    )
    .unwrap()
    .into_iter()
    .filter(|m| m.kind != mnemos_core::MemoryKind::Turn)
    .map(|m| format!("{} {} {}", m.kind.tag(), m.is_active(), m.text))
    .collect();
    out.sort();
    out
}

#[test]
fn jobs_replay_after_a_crash_without_loss_or_duplicates() {
    for name in presets::names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let open = || -> Arc<dyn Store> {
            Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap())
        };
        // First process: turns commit with their jobs; every job is worked on but the process
        // dies before any result is committed.
        {
            let engine = engine_on(open(), name, false);
            feed(&engine, "ann", AGENT);
            // What the write path derives commits with the turns (the default preset's facts);
            // no job's result may be there yet.
            let written = derived_texts(engine.reader().store(), "ann");
            let pending = pending(&engine);
            for job in &pending {
                engine.dry_run_job(&user("ann"), job.id).unwrap();
            }
            assert_eq!(
                derived_texts(engine.reader().store(), "ann"),
                written,
                "{name}"
            );
        }
        // Second process: the jobs are still there and run once.
        let store = open();
        let engine = engine_on(Arc::clone(&store), name, false);
        let before = pending(&engine).len();
        let report = engine.run_pending(&user("ann")).unwrap();
        assert_eq!(report.failed, 0, "{name}: {:?}", report.errors);
        assert!(report.ran >= before, "{name}");
        assert!(pending(&engine).is_empty());
        let replayed = derived_texts(store.as_ref(), "ann");
        // Running again finds nothing to do and changes nothing.
        let again = engine.run_pending(&user("ann")).unwrap();
        assert_eq!(again.ran, 0, "{name}");
        assert_eq!(derived_texts(store.as_ref(), "ann"), replayed, "{name}");
        // The same as a run on the same schedule (jobs after the dialogue) that never crashed.
        // (Inline runs may differ: a mechanism sees what earlier jobs wrote, e.g. reflections.)
        let clean = engine_on(Arc::new(MemoryStore::new()), name, false);
        feed(&clean, "ann", AGENT);
        clean.run_pending(&user("ann")).unwrap();
        assert_eq!(
            replayed,
            derived_texts(clean.reader().store(), "ann"),
            "{name}: a replayed run differs from a clean one"
        );
    }
}

#[test]
fn offline_runs_are_deterministic() {
    for name in presets::names() {
        let a = fresh_engine(name);
        let b = fresh_engine(name);
        feed(&a, "ann", AGENT);
        feed(&b, "ann", AGENT);
        for query in [
            "What is Clara allergic to?",
            "我的猫叫什么名字？",
            "night shifts",
        ] {
            let ca = recall(&a, "ann", query, 600);
            let cb = recall(&b, "ann", query, 600);
            assert_eq!(ca.text, cb.text, "{name}: {query}");
            assert_eq!(ca.notes, cb.notes, "{name}: {query}");
            let scores = |c: &Context| -> Vec<(String, String)> {
                c.items
                    .iter()
                    .map(|i| (format!("{:.9}", i.score), i.section.clone()))
                    .collect()
            };
            assert_eq!(scores(&ca), scores(&cb), "{name}: {query}");
        }
        assert_eq!(
            derived_texts(a.reader().store(), "ann"),
            derived_texts(b.reader().store(), "ann"),
            "{name}"
        );
    }
}

#[test]
fn stats_count_memories_and_jobs() {
    for name in presets::names() {
        let engine = fresh_engine(name);
        feed(&engine, "ann", AGENT);
        let stats = engine.stats(&user("ann"), AGENT).unwrap();
        assert_eq!(stats.mechanism, name);
        assert_eq!(stats.memories.get("turn"), Some(&DIALOGUE.len()), "{name}");
        assert!(stats.bytes > 0 && stats.tokens > 0);
        assert_eq!(stats.pending_jobs, 0, "{name}");
    }
}

#[test]
fn unknown_presets_and_parameters_are_config_errors_that_list_valid_names() {
    let err = presets::build(&PresetSpec::named("fullmemory"))
        .err()
        .unwrap()
        .to_string();
    for name in presets::names() {
        assert!(err.contains(name), "{err}");
    }
    for name in presets::names() {
        let mut params = toml::Table::new();
        params.insert("no_such_key".into(), toml::Value::Integer(1));
        let err = presets::build(&PresetSpec {
            name: name.into(),
            params,
        })
        .err()
        .unwrap_or_else(|| panic!("{name} accepted an unknown key"))
        .to_string();
        assert!(err.contains("no_such_key"), "{name}: {err}");
        let info = presets::registry()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap();
        for param in &info.params {
            assert!(
                err.contains(param.name),
                "{name}: {err} does not list {}",
                param.name
            );
        }
    }
}

// ---- the job machinery itself, with a mechanism written for the test -------------------------

/// Plans one job per user turn; the job writes a fact memory, failing the first `fail_first`
/// attempts (counted across the process).
struct Flaky {
    fail_first: usize,
    attempts: AtomicUsize,
}

impl Mechanism for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn observe(&self, _ctx: &ObserveCtx, turn: &Turn) -> EngineResult<Vec<JobSpec>> {
        Ok(if turn.role == Role::User {
            vec![JobSpec::new("note", serde_json::json!({ "turn": turn.id }))]
        } else {
            vec![]
        })
    }
    fn run_job(&self, ctx: &MechanismCtx, job: &Job) -> EngineResult<Derived> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) < self.fail_first {
            return Err(mnemos_engine::EngineError::Job {
                id: job.id.to_string(),
                message: "simulated model outage".into(),
            });
        }
        #[derive(serde::Deserialize)]
        struct Payload {
            turn: TurnId,
        }
        let payload: Payload = JobSpec::parse(job)?;
        let turn = ctx.turns(&[payload.turn])?.remove(0);
        let mut memory = mnemos_core::Memory::from_turn(&turn);
        memory.kind = mnemos_core::MemoryKind::Fact;
        memory.text = format!("noted: {}", turn.text);
        Ok(Derived {
            memories: vec![memory],
            ..Derived::default()
        })
    }
    fn recall(&self, _ctx: &MechanismCtx, request: &RecallRequest) -> EngineResult<Recall> {
        Ok(Recall {
            context: Context {
                mechanism: "flaky".into(),
                query: request.query.clone(),
                ..Context::default()
            },
            effects: Derived::default(),
        })
    }
}

fn flaky_engine(store: Arc<dyn Store>, fail_first: usize) -> Engine {
    builder_on(store, "full", true)
        .default_mechanism(Arc::new(Flaky {
            fail_first,
            attempts: AtomicUsize::new(0),
        }))
        .build()
        .unwrap()
}

fn count_facts(store: &dyn StoreRead) -> usize {
    collect_all(store, &user("ann"), &MemoryFilter::active())
        .unwrap()
        .iter()
        .filter(|m| m.kind == mnemos_core::MemoryKind::Fact)
        .count()
}

#[test]
fn a_failing_job_keeps_its_turn_and_is_retried() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let engine = flaky_engine(Arc::clone(&store), 1);
    let turns = dialogue_turns("ann", AGENT)[..2].to_vec();
    let report = engine.add(turns).unwrap();
    assert_eq!(
        report.turns.len(),
        2,
        "turns commit even when their job fails"
    );
    assert_eq!(report.jobs_enqueued, 1);
    assert_eq!(report.jobs.failed, 1);
    assert!(report.jobs.errors[0].1.contains("simulated model outage"));
    let pending = pending(&engine);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].attempts, 1);
    assert_eq!(count_facts(store.as_ref()), 0);
    let retry = engine.run_pending(&user("ann")).unwrap();
    assert_eq!((retry.ran, retry.failed), (1, 0));
    assert_eq!(count_facts(store.as_ref()), 1);
    assert!(engine.run_pending(&user("ann")).unwrap().ran == 0);
    assert_eq!(
        count_facts(store.as_ref()),
        1,
        "a finished job never runs twice"
    );
}

#[test]
fn a_job_that_keeps_failing_is_reported_stuck_not_retried_forever() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let engine = flaky_engine(Arc::clone(&store), usize::MAX);
    engine
        .add(dialogue_turns("ann", AGENT)[..1].to_vec())
        .unwrap();
    for _ in 0..5 {
        engine.run_pending(&user("ann")).unwrap();
    }
    let pending = pending(&engine);
    assert_eq!(pending[0].attempts, 3, "attempts stop at max_attempts");
    let report = engine.run_pending(&user("ann")).unwrap();
    assert_eq!(report.stuck.len(), 1);
    assert!(report.stuck[0].1.contains("simulated model outage"));
    assert_eq!(engine.stats(&user("ann"), AGENT).unwrap().pending_jobs, 1);
}

#[test]
fn a_job_result_commits_at_most_once_even_when_committed_twice() {
    // A second process that picked the same job up late must not write its results again.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let engine = builder_on(Arc::clone(&store), "full", false)
        .default_mechanism(Arc::new(Flaky {
            fail_first: 0,
            attempts: AtomicUsize::new(0),
        }))
        .build()
        .unwrap();
    engine
        .add(dialogue_turns("ann", AGENT)[..1].to_vec())
        .unwrap();
    let job = pending(&engine).remove(0);
    let late = engine.dry_run_job(&user("ann"), job.id).unwrap();
    engine.run_pending(&user("ann")).unwrap();
    let batch = mnemos_core::WriteBatch {
        user: Some(user("ann")),
        memories: late.memories,
        finished_jobs: vec![(job.id, job.created)],
        ..Default::default()
    };
    assert!(store.write(batch).is_err());
    assert_eq!(count_facts(store.as_ref()), 1);
}

#[test]
fn listing_is_paginated_and_filtered() {
    let engine = fresh_engine("full");
    feed(&engine, "ann", AGENT);
    let ann = user("ann");
    let mut seen: BTreeSet<MemoryId> = BTreeSet::new();
    let mut offset = 0;
    loop {
        let page = engine
            .list(&ann, &MemoryFilter::active(), Page { offset, limit: 5 })
            .unwrap();
        assert!(page.items.len() <= 5);
        seen.extend(page.items.iter().map(|m| m.id));
        match page.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(seen.len(), DIALOGUE.len());
    let s1 = engine
        .list(
            &ann,
            &MemoryFilter {
                session: Some("s1".into()),
                ..MemoryFilter::default()
            },
            Page::first(100),
        )
        .unwrap();
    assert_eq!(s1.total, 12);
}
