//! The engine's client operations: idempotent ingest with the session-closing rule, forgetting
//! twice, views, pending jobs, and two engines (two processes) writing one user's turns.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::Arc;

use mnemos_core::{KindTag, MemoryFilter, MemoryStore, Scope, StateFilter, Store, UserKey};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{
    Engine, EngineConfig, IngestOptions, JobSettings, JobState, NewTurn, PresetSpec, SearchRequest,
    View, ViewKind,
};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};
use mnemos_testkit::FaultyStore;

fn engine(store: Arc<dyn Store>, preset: &str, inline: bool) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let config = EngineConfig {
        preset: PresetSpec::named(preset),
        jobs: JobSettings {
            inline,
            ..JobSettings::default()
        },
        ..EngineConfig::default()
    };
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(config)
        .build()
        .unwrap()
}

fn ann() -> UserKey {
    UserKey::new("t", "ann").unwrap()
}

/// Two sessions of keyed turns.
fn keyed_turns() -> Vec<NewTurn> {
    let texts = [
        ("s1", "I moved to Berlin last spring."),
        ("s1", "I work at a bakery near the river."),
        ("s2", "我养了一只叫小白的猫。"),
        ("s2", "My sister Mia visits in April."),
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, (session, text))| {
            let mut turn = NewTurn::user(Scope::new("t", "ann", "bot", *session).unwrap(), *text);
            turn.key = Some(format!("line-{i}"));
            turn
        })
        .collect()
}

fn count(engine: &Engine, kind: KindTag, state: StateFilter) -> usize {
    let filter = MemoryFilter {
        kinds: vec![kind],
        state,
        ..MemoryFilter::default()
    };
    engine.reader().all(&ann(), &filter).unwrap().len()
}

#[test]
fn ingesting_the_same_turns_again_adds_and_summarizes_nothing_twice() {
    let engine = engine(Arc::new(MemoryStore::new()), "memorybank", true);
    let options = IngestOptions {
        batch: 3,
        close_sessions: true,
        workers: 2,
    };
    let first = engine.ingest(keyed_turns(), &options, &mut |_| {}).unwrap();
    assert_eq!((first.added, first.duplicates), (4, 0));
    assert_eq!(first.sessions_closed, 2);
    let summaries = count(&engine, KindTag::Summary, StateFilter::All);
    assert!(summaries >= 2, "each closed session is summarized");

    let mut progress = Vec::new();
    let again = engine
        .ingest(keyed_turns(), &options, &mut |done| progress.push(done))
        .unwrap();
    assert_eq!((again.added, again.duplicates), (0, 4));
    assert_eq!(again.sessions_closed, 0, "no session got a new turn");
    assert_eq!(progress, [3, 4]);
    assert_eq!(count(&engine, KindTag::Turn, StateFilter::All), 4);
    assert_eq!(
        count(&engine, KindTag::Summary, StateFilter::All),
        summaries
    );

    // One new turn in s2: only s2 closes again.
    let mut more = keyed_turns();
    let mut extra = NewTurn::user(
        Scope::new("t", "ann", "bot", "s2").unwrap(),
        "Mia is a nurse.",
    );
    extra.key = Some("line-4".into());
    more.push(extra);
    let third = engine.ingest(more, &options, &mut |_| {}).unwrap();
    assert_eq!(
        (third.added, third.duplicates, third.sessions_closed),
        (1, 4, 1)
    );
}

#[test]
fn ingest_on_several_threads_keeps_each_users_turns_in_order() {
    let engine = engine(Arc::new(MemoryStore::new()), "retrieval", true);
    let users = ["ann", "bob", "cy"];
    let mut turns = Vec::new();
    for i in 0..30 {
        for user in users {
            let scope = Scope::new("t", user, "bot", "s").unwrap();
            turns.push(NewTurn::user(scope, format!("{user} says line {i}")));
        }
    }
    let options = IngestOptions {
        batch: 4,
        close_sessions: true,
        workers: 3,
    };
    let mut progress = Vec::new();
    let report = engine
        .ingest(turns, &options, &mut |done| progress.push(done))
        .unwrap();
    assert_eq!(
        (report.added, report.users, report.sessions_closed),
        (90, 3, 3)
    );
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.last(), Some(&90));
    for user in users {
        let key = UserKey::new("t", user).unwrap();
        let filter = MemoryFilter {
            kinds: vec![KindTag::Turn],
            ..MemoryFilter::default()
        };
        let texts: Vec<String> = engine
            .reader()
            .all(&key, &filter)
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        let expected: Vec<String> = (0..30).map(|i| format!("{user} says line {i}")).collect();
        assert_eq!(texts, expected, "{user}'s turns in input order");
    }
    let none = IngestOptions {
        workers: 0,
        ..options
    };
    assert!(engine.ingest(Vec::new(), &none, &mut |_| {}).is_err());
}

#[test]
fn a_duplicate_reports_the_memory_its_turn_got_the_first_time() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("d.db"), SqliteOptions::default()).unwrap());
    for store in [Arc::new(MemoryStore::new()) as Arc<dyn Store>, sqlite] {
        let engine = engine(store, "retrieval", true);
        let first = engine.add(keyed_turns()).unwrap();
        let again = engine.add(keyed_turns()).unwrap();
        assert!(again.turns.iter().all(|t| t.is_duplicate()));
        let ids = |report: &mnemos_engine::AddReport| -> Vec<_> {
            report.turns.iter().map(|t| t.memory_id()).collect()
        };
        assert!(ids(&first).iter().all(Option::is_some));
        assert_eq!(ids(&again), ids(&first));
        // Forgotten since, it is still the turn's memory.
        let forgotten = first.turns[0].memory_id().unwrap();
        engine.forget(&ann(), forgotten, "asked").unwrap();
        let third = engine.add(keyed_turns()).unwrap();
        assert_eq!(third.turns[0].memory_id(), Some(forgotten));
    }
}

#[test]
fn a_forgotten_memory_is_not_rewritten() {
    let engine = engine(Arc::new(MemoryStore::new()), "retrieval", true);
    let added = engine.add(keyed_turns()).unwrap();
    let id = added.turns[0].memory_id().unwrap();
    engine.forget(&ann(), id, "asked").unwrap();
    let patch = mnemos_core::MemoryPatch {
        text: Some("rewritten".into()),
        ..mnemos_core::MemoryPatch::default()
    };
    let err = engine.update(&ann(), id, &patch).unwrap_err();
    assert_eq!(err.class(), mnemos_core::ErrorClass::Conflict, "{err}");
    assert!(err.to_string().contains("is forgotten (asked)"), "{err}");
    let kept = engine.get(&ann(), id).unwrap();
    assert_eq!(kept.text, "I moved to Berlin last spring.");
    assert_eq!(
        engine.history(&ann(), id).unwrap().len(),
        2,
        "no new version"
    );
}

#[test]
fn a_key_twice_in_one_write_is_an_input_error() {
    let engine = engine(Arc::new(MemoryStore::new()), "retrieval", true);
    let mut turns = keyed_turns();
    turns[1].key = turns[0].key.clone();
    let err = engine.add(turns).unwrap_err();
    assert!(err.is_user_error(), "{err}");
    assert!(engine.users().unwrap().is_empty(), "nothing was written");
}

#[test]
fn forgetting_twice_says_so_and_follows_provenance_once() {
    let engine = engine(Arc::new(MemoryStore::new()), "memorybank", true);
    engine
        .ingest(keyed_turns(), &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let turn = engine
        .reader()
        .all(&ann(), &MemoryFilter::of_kinds(&[KindTag::Turn]))
        .unwrap()
        .remove(0);
    let first = engine.forget(&ann(), turn.id, "asked").unwrap();
    assert!(!first.already_forgotten && !first.memory.is_active());
    assert!(first.derived >= 1, "the session summary goes with its turn");
    let second = engine.forget(&ann(), turn.id, "asked again").unwrap();
    assert!(second.already_forgotten);
    assert_eq!(second.derived, 0);
    assert_eq!(
        second.memory.version, first.memory.version,
        "no new version"
    );
    assert!(engine.forget(&ann(), turn.id, "  ").is_err());
}

#[test]
fn views_come_from_the_preset_that_keeps_them() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let moom = engine(Arc::clone(&store), "moom", true);
    let turns: Vec<NewTurn> = (0..14)
        .map(|i| {
            let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
            let mut turn =
                NewTurn::user(scope, format!("I love painting, day {i}. I live in Lyon."));
            turn.speaker = Some("Ann".into());
            turn
        })
        .collect();
    moom.ingest(turns, &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let View::Timeline(tree) = moom.view(&ann(), Some("bot"), ViewKind::Timeline).unwrap() else {
        panic!("a timeline view")
    };
    assert!(!tree.is_empty());
    // An engine whose configured preset draws no views still shows what moom stored.
    let other = engine(store, "retrieval", true);
    let View::Persona(keys) = other.view(&ann(), None, ViewKind::Persona).unwrap() else {
        panic!("a persona view")
    };
    assert!(!keys.is_empty());
    let nobody = UserKey::new("t", "nobody").unwrap();
    assert_eq!(
        other.view(&nobody, None, ViewKind::Persona).unwrap(),
        View::Persona(Vec::new())
    );
}

#[test]
fn pending_jobs_are_listed_and_run_for_every_user() {
    let engine = engine(Arc::new(MemoryStore::new()), "memorybank", false);
    engine
        .ingest(keyed_turns(), &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let pending = engine.pending_jobs(None).unwrap();
    assert!(!pending.is_empty());
    assert!(pending
        .iter()
        .all(|p| p.state == JobState::Pending && p.user == ann()));
    let report = engine.run_all_pending().unwrap();
    assert_eq!(report.ran, pending.len());
    assert!(engine.pending_jobs(None).unwrap().is_empty());
    let job = pending[0].job.id;
    assert!(engine.retry_job(&ann(), job).unwrap_err().is_user_error());
}

#[test]
fn two_engines_on_one_database_number_rounds_apart_and_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let open = || -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(&dir.path().join("m.db"), SqliteOptions::default()).unwrap())
    };
    // Two processes, each with its own caches, over one file.
    let a = engine(open(), "retrieval", true);
    let b = engine(open(), "retrieval", true);
    let scope = Scope::new("t", "ann", "bot", "s").unwrap();
    let mut rounds = Vec::new();
    for i in 0..10 {
        let writer = if i % 2 == 0 { &a } else { &b };
        let turn = NewTurn::user(scope.clone(), format!("turn number {i} about topic{i}"));
        rounds.push(writer.add(vec![turn]).unwrap().turns[0].round);
    }
    assert_eq!(
        rounds,
        (0..10).collect::<Vec<u64>>(),
        "one round per user turn"
    );
    // a's next write finds the last round moved by b, reloads the user, and numbers after it.
    let turn = NewTurn::user(scope.clone(), "turn number 10".to_string());
    assert_eq!(a.add(vec![turn]).unwrap().turns[0].round, 10);
    let hits = a.search(&SearchRequest::new(ann(), "topic9")).unwrap().hits;
    assert!(hits.iter().any(|h| h.memory.text.contains("number 9")));
}

#[test]
fn two_engines_never_run_one_users_jobs_at_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = engine(Arc::clone(&store), "memorybank", false);
    let b = engine(Arc::clone(&store), "memorybank", false);
    a.ingest(keyed_turns(), &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let pending = a.pending_jobs(None).unwrap();
    assert!(!pending.is_empty());
    // Another server holds the lease on ann's jobs: neither engine runs them meanwhile.
    assert!(store
        .lease_jobs(
            &ann(),
            "server-elsewhere",
            std::time::Duration::from_secs(600)
        )
        .unwrap());
    assert!(a.run_all_pending().unwrap().is_empty());
    let refused = b.retry_job(&ann(), pending[0].job.id).unwrap_err();
    assert!(refused.is_user_error(), "{refused}");
    assert_eq!(a.pending_jobs(None).unwrap().len(), pending.len());
    // Once it is released (or runs out), one engine runs them all and releases the lease.
    store.release_jobs(&ann(), "server-elsewhere").unwrap();
    assert_eq!(b.run_all_pending().unwrap().ran, pending.len());
    assert!(a.pending_jobs(None).unwrap().is_empty());
    assert!(store
        .lease_jobs(
            &ann(),
            "server-elsewhere",
            std::time::Duration::from_secs(1)
        )
        .unwrap());
}

#[test]
fn jobs_finished_elsewhere_before_the_lease_was_taken_do_not_run_again() {
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let watched = Arc::new(FaultyStore::over(Arc::clone(&inner)));
    let a = Arc::new(engine(Arc::clone(&inner), "memorybank", false));
    let b = engine(Arc::clone(&watched) as Arc<dyn Store>, "memorybank", false);
    a.ingest(keyed_turns(), &IngestOptions::default(), &mut |_| {})
        .unwrap();
    assert!(!a.pending_jobs(None).unwrap().is_empty());
    // b lists ann's pending jobs; just before it takes the lease, a runs them all and lets go.
    let first = Arc::clone(&a);
    watched.before_next("lease_jobs", move || {
        assert!(first.run_all_pending().unwrap().ran > 0);
    });
    let report = b.run_all_pending().unwrap();
    assert_eq!(
        (report.ran, report.failed),
        (0, 0),
        "b ran jobs a had finished: {report:?}"
    );
    assert!(a.pending_jobs(None).unwrap().is_empty());
}

/// Ann and Bob talk in one session, Ann alone keeps notes in another.
fn exchange() -> Vec<NewTurn> {
    let said = |session: &str, speaker: &str, text: &str| {
        let mut turn = NewTurn::user(Scope::new("t", "ann", "bot", session).unwrap(), text);
        turn.speaker = Some(speaker.to_string());
        turn
    };
    vec![
        said(
            "chat",
            "Bob",
            "Congrats on the show! What's your favourite dish from it?",
        ),
        said("chat", "Ann", "Coconut milk ice cream, smooth and creamy."),
        said(
            "chat",
            "Bob",
            "Ann, your cello playing at the show was lovely.",
        ),
        said("chat", "Ann", "Thanks! I practise the cello every evening."),
    ]
}

#[test]
fn a_search_ranks_an_answer_beside_its_question_and_prefers_the_named_speaker() {
    let engine = engine(Arc::new(MemoryStore::new()), "retrieval", true);
    engine.add(exchange()).unwrap();
    let search = |query: &str| {
        let mut request = SearchRequest::new(ann(), query);
        request.top_k = Some(4);
        // The ranking stages are what this checks. The answer below shares no word with the
        // query, and with the hash embedder its relevance (about 0.0006) is under the default
        // floor: answers found only through their question are a measured cost of the floor
        // (docs/results/relevance.md).
        request.min_relevance = Some(0.0);
        engine.search(&request).unwrap().hits
    };
    let texts = |hits: &[mnemos_core::Hit]| {
        hits.iter()
            .map(|h| h.memory.text.clone())
            .collect::<Vec<_>>()
    };

    // The answer shares no word with the query; its question does.
    let hits = search("favourite dish from the show");
    let answer = hits
        .iter()
        .position(|h| h.memory.text.starts_with("Coconut"))
        .expect("the answer is found through its question");
    let lent = hits[answer]
        .breakdown
        .context
        .expect("the loan is explained");
    assert!(hits[..answer].iter().any(|h| h.memory.id == lent.via));
    let lines = mnemos_render::explain(&hits[answer]).join("\n");
    assert!(lines.contains("next to memory"), "{lines}");
    // The learned ranker re-ordered this dialogue: its estimate is the score, explained.
    for hit in &hits {
        let ranker = hit
            .breakdown
            .ranker
            .as_ref()
            .expect("dialogue is re-ranked");
        assert_eq!(hit.score, ranker.probability);
        assert!(!ranker.strongest.is_empty());
    }
    assert!(lines.contains("chance of evidence"), "{lines}");

    // Both cello turns name Ann (Bob's in its text, Ann's as its speaker); Ann's own comes first.
    let hits = search("Ann cello");
    assert!(
        texts(&hits)[0].starts_with("Thanks! I practise"),
        "{:?}",
        texts(&hits)
    );
    assert!(hits[0].breakdown.speaker.is_some());

    // Mechanisms that look for similar statements rank by likeness alone.
    let mut request = SearchRequest::new(ann(), "favourite dish from the show");
    request.likeness_only = true;
    let hits = engine.search(&request).unwrap().hits;
    assert!(hits.iter().all(|h| h.breakdown.context.is_none()
        && h.breakdown.speaker.is_none()
        && h.breakdown.date.is_none()
        && h.breakdown.ranker.is_none()));
}
