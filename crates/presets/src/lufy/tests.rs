use super::*;
use mnemos_core::{Change, MemoryState, Role, Scope, Timestamp, UserKey};

use crate::testing::{self, memories_of, test_engine, T0};
use crate::PresetSpec;
use mnemos_engine::Engine;
use mnemos_engine::NewTurn;

fn scope(session: &str) -> Scope {
    Scope::new("t", "u", "bot", session).unwrap()
}

fn user() -> UserKey {
    UserKey::new("t", "u").unwrap()
}

fn turn(session: &str, i: i64, role: Role, text: &str) -> NewTurn {
    NewTurn {
        role,
        speaker: Some(if role == Role::User { "Ana" } else { "Bot" }.into()),
        time: Some(Timestamp(T0 + i * 60_000)),
        ..NewTurn::user(scope(session), text)
    }
}

/// A session of `n` user utterances, each answered by the bot, opened by a bot greeting.
fn session(session: &str, n: usize) -> Vec<NewTurn> {
    let facts = [
        "I adopted a golden retriever puppy named Max last week!",
        "My sister moved to Lisbon for her new job.",
        "The weather is mild today.",
        "I am so terrified of my thesis defense on Friday!!!",
        "I had toast for breakfast.",
        "My grandmother turns ninety in May and we are throwing a huge party.",
        "Nothing much happened.",
        "I work as a nurse at the city hospital.",
        "I watched some TV.",
        "We finally bought our first house near the lake, I cried with joy.",
    ];
    let mut out = vec![turn(session, 0, Role::Assistant, "Hi Ana, how are you?")];
    for i in 0..n {
        let text = format!("{} ({i})", facts[i % facts.len()]);
        out.push(turn(session, 2 * i as i64 + 1, Role::User, &text));
        out.push(turn(
            session,
            2 * i as i64 + 2,
            Role::Assistant,
            &format!("Tell me more about that ({i})."),
        ));
    }
    out
}

fn all(engine: &Engine, kind: &str, state: StateFilter) -> Vec<Memory> {
    memories_of(engine, &user(), kind, state)
}

#[test]
fn only_the_top_share_of_pairs_survive_a_session_with_reasons_in_history() {
    let engine = test_engine(NAME, "weights = 'paper'", true);
    engine.add(session("s1", 20)).unwrap();
    let report = engine.end_session(&scope("s1")).unwrap();
    assert_eq!(report.failed, 0, "{:?}", report.errors);

    let pairs = all(&engine, "exchange", StateFilter::All);
    assert_eq!(pairs.len(), 20);
    let kept: Vec<&Memory> = pairs.iter().filter(|m| m.is_active()).collect();
    assert_eq!(kept.len(), 2, "10% of 20 pairs");
    // Every pair holds a user utterance and its reply, with the signals that ranked it.
    for pair in &pairs {
        assert_eq!(pair.provenance.len(), 2);
        for key in [AROUSAL, SURPRISE, RATED_IMPORTANCE, R1, R2, LAST_ACCESS] {
            assert!(pair.metrics.extra.contains_key(key), "{key}");
        }
    }
    // The survivors are the most important ones.
    let lufy = Lufy::new(LufyParams {
        weights: WeightSet::Paper,
        ..LufyParams::default()
    });
    let least_kept = kept
        .iter()
        .map(|m| lufy.state(m, 1.0).importance)
        .fold(f64::INFINITY, f64::min);
    for pair in pairs.iter().filter(|m| !m.is_active()) {
        assert!(lufy.state(pair, 1.0).importance <= least_kept);
        let history = engine.history(&user(), pair.id).unwrap();
        let reason = history
            .iter()
            .find_map(|h| match &h.change {
                Change::Forgotten { reason } => Some(reason.clone()),
                _ => None,
            })
            .expect("forgotten in history");
        assert!(reason.starts_with("lufy: importance"), "{reason}");
        assert!(reason.contains("only the top 2 are kept"), "{reason}");
    }
    // Raw turns go with their pairs; the opening greeting belongs to no pair.
    let turns = all(&engine, "turn", StateFilter::All);
    let active: Vec<&Memory> = turns.iter().filter(|m| m.is_active()).collect();
    assert_eq!(active.len(), 4, "two pairs of two turns");
    let greeting = turns.iter().find(|m| m.text.starts_with("Hi Ana")).unwrap();
    match &greeting.state {
        MemoryState::Forgotten { reason, .. } => assert!(reason.contains("no pair"), "{reason}"),
        MemoryState::Active => panic!("the greeting should be forgotten"),
    }
    // Summary and profile stay.
    assert_eq!(all(&engine, "summary", StateFilter::Active).len(), 1);
    assert_eq!(all(&engine, "profile", StateFilter::Active).len(), 1);
    // Ending the session again changes nothing.
    engine.end_session(&scope("s1")).unwrap();
    assert_eq!(all(&engine, "exchange", StateFilter::All).len(), 20);
    assert_eq!(all(&engine, "summary", StateFilter::All).len(), 1);
}

#[test]
fn a_stronger_pair_keeps_more_importance_as_sessions_pass() {
    let lufy = Lufy::new(LufyParams {
        weights: WeightSet::Paper,
        ..LufyParams::default()
    });
    let t = Turn {
        id: TurnId::new(),
        scope: scope("s"),
        role: Role::User,
        speaker: None,
        text: "hi".into(),
        at: Moment::default(),
        metadata: Metadata::new(),
        key: None,
    };
    let mut calm = Memory::from_turn(&t);
    calm.metrics.extra.insert(AROUSAL.into(), 0.2);
    calm.metrics.extra.insert(RATED_IMPORTANCE.into(), 5.0);
    let mut excited = calm.clone();
    excited.metrics.extra.insert(AROUSAL.into(), 0.9);
    let mut recalled = calm.clone();
    recalled.metrics.extra.insert(R1.into(), 3.0);
    for clock in [1.0, 2.0, 5.0] {
        let base = lufy.state(&calm, clock);
        assert!(lufy.state(&excited, clock).importance > base.importance);
        assert!(lufy.state(&recalled, clock).importance > base.importance);
        assert_eq!(base.elapsed, clock);
        assert!(lufy.state(&calm, clock + 1.0).importance < base.importance);
    }
}

#[test]
fn recall_counts_first_and_second_hits_and_builds_the_papers_context() {
    let engine = test_engine(
        NAME,
        "weights = 'paper'\nkeep_share = 1.0\nsimilarity_threshold = -1.0",
        true,
    );
    engine.add(session("s1", 6)).unwrap();
    engine.end_session(&scope("s1")).unwrap();
    engine
        .add(vec![turn("s2", 100, Role::User, "Do you remember my dog?")])
        .unwrap();
    let ctx = testing::recall(&engine, &user(), "bot", "golden retriever puppy Max", 600);
    let memories: Vec<&ContextItem> = ctx
        .items
        .iter()
        .filter(|i| i.section == SECTION_MEMORIES)
        .collect();
    assert!(memories.len() >= 2, "{}", ctx.text);
    assert!(
        memories[0].text.contains("golden retriever"),
        "{}",
        ctx.text
    );
    let parts: Vec<&str> = memories[0]
        .breakdown
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert!(parts.contains(&"cosine") && parts.contains(&"importance"));
    // Sections in the paper's order: summary, recent utterances, memories.
    let sections: Vec<usize> = ctx.items.iter().map(|i| section_rank(&i.section)).collect();
    assert!(sections.windows(2).all(|w| w[0] <= w[1]), "{sections:?}");
    assert!(ctx.items.iter().any(|i| i.section == SECTION_SUMMARY));
    let recent: Vec<&ContextItem> = ctx
        .items
        .iter()
        .filter(|i| i.section == SECTION_RECENT)
        .collect();
    assert_eq!(recent.len(), 5);
    assert!(recent[4].text.contains("Do you remember my dog?"));

    let pairs = all(&engine, "exchange", StateFilter::Active);
    let first = pairs
        .iter()
        .find(|m| m.id == memories[0].memory_id)
        .unwrap();
    let second = pairs
        .iter()
        .find(|m| m.id == memories[1].memory_id)
        .unwrap();
    assert_eq!(first.metrics.extra.get(R1), Some(&1.0));
    assert_eq!(first.metrics.extra.get(R2), Some(&0.0));
    assert_eq!(second.metrics.extra.get(R2), Some(&1.0));
    assert_eq!(first.metrics.extra.get(LAST_ACCESS), Some(&1.0));
    for budget in [0, 5, 40, 120] {
        let ctx = testing::recall(&engine, &user(), "bot", "sister Lisbon", budget);
        assert!(ctx.tokens <= budget);
    }
}

#[test]
fn the_similarity_threshold_keeps_unrelated_pairs_out() {
    let engine = test_engine(
        NAME,
        "weights = 'paper'\nkeep_share = 1.0\nsimilarity_threshold = 0.99",
        true,
    );
    engine.add(session("s1", 4)).unwrap();
    engine.end_session(&scope("s1")).unwrap();
    let ctx = testing::recall(&engine, &user(), "bot", "quantum chromodynamics", 600);
    assert!(ctx.items.iter().all(|i| i.section != SECTION_MEMORIES));
    assert!(ctx.notes.iter().any(|n| n.contains("similarity threshold")));
}

#[test]
fn params_are_validated_and_the_fitted_weights_ship() {
    for bad in [
        "keep_share = 0.0",
        "keep_share = 1.5",
        "perplexity_cap = 1.0",
        "retrieval_cap = 0.5",
        "similarity_threshold = 2.0",
        "importance_weight = -1.0",
        "top_k = 0",
        "recent_turns = 1000",
        "summaries = 101",
        "summary_tokens = 4",
        "weights = 'guessed'",
        "rank_over = 'nothing'",
        "nonsense = 1",
    ] {
        let spec = PresetSpec {
            name: NAME.into(),
            params: toml::from_str(bad).unwrap(),
        };
        assert!(crate::build(&spec).is_err(), "{bad}");
    }
    assert!(LufyParams::default().validate().is_ok());
    let info = crate::registry()
        .into_iter()
        .find(|p| p.name == NAME)
        .expect("registered");
    assert_eq!(info.params.len(), LufyParams::DOCS.len());
    assert!(info.params.iter().all(|p| p.default != "(none)"));
    let fitted = fitted_weights().unwrap();
    assert!(fitted.weights.is_finite());
}

#[test]
fn rank_over_all_lets_earlier_survivors_compete() {
    let engine = test_engine(NAME, "weights = 'paper'\nrank_over = 'all'", true);
    engine.add(session("s1", 10)).unwrap();
    engine.end_session(&scope("s1")).unwrap();
    assert_eq!(all(&engine, "exchange", StateFilter::Active).len(), 1);
    let mut s2 = session("s2", 10);
    for t in &mut s2 {
        t.time = t.time.map(|x| Timestamp(x.0 + 3_600_000));
    }
    engine.add(s2).unwrap();
    engine.end_session(&scope("s2")).unwrap();
    // One survivor from before plus one for the new session, and their turns only.
    let pairs = all(&engine, "exchange", StateFilter::Active);
    assert_eq!(pairs.len(), 2);
    assert_eq!(all(&engine, "exchange", StateFilter::All).len(), 20);
    let mut kept_turns: Vec<TurnId> = pairs.iter().flat_map(|p| p.provenance.clone()).collect();
    let mut active_turns: Vec<TurnId> = all(&engine, "turn", StateFilter::Active)
        .iter()
        .flat_map(|m| m.provenance.clone())
        .collect();
    kept_turns.sort();
    active_turns.sort();
    assert_eq!(kept_turns, active_turns);
}
