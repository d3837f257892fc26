//! Forgetting by description (`Engine::forget_matching`): a dry run lists and writes nothing,
//! a confirmed run forgets exactly what the dry run listed with what was derived from it, and
//! the selection keeps unrelated memories and other users out.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mnemos_core::{
    Embedder, ErrorClass, KindTag, Memory, MemoryFilter, MemoryId, MemoryStore, Page, Scope,
    StateFilter, TurnId, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, ForgetMatchReport, ForgetMatching, NewTurn, FORGET_MIN_RELEVANCE};
use mnemos_offline::OfflineModel;

/// Descriptions and the facts they describe: in words of their own (an address, a salary), or
/// sharing one word with an unrelated fact (a nurse).
const DESCRIBED: &[(&str, &[&str])] = &[
    (
        "my old address",
        &[
            "I live in Tallinn.",
            "I just moved, I live in Porto now.",
            "My flat is at 12 Elm Street.",
        ],
    ),
    (
        "my sister's peanut allergy",
        &["My sister Mia is allergic to peanuts."],
    ),
    (
        "my job as a nurse",
        &["I work as a nurse at the Lyon hospital."],
    ),
    ("my cat Pixel", &["I have a grey cat called Pixel."]),
    ("my phone number", &["My phone number is 555-0172-9904."]),
    (
        "the trip to Japan",
        &["We are planning a trip to Japan in April."],
    ),
    ("我的狗", &["我养了一只狗，叫旺财。"]),
    ("我的工资", &["我的月薪是23800元。"]),
];

/// Facts no description above names.
const UNRELATED: &[&str] = &[
    "I love hiking in the Alps.",
    "My favourite colour is green.",
    "We had pizza for dinner yesterday.",
    "I am learning to play the violin.",
    "My brother Tom lives in Canada.",
    "I read a novel about a nurse in the war.",
    "我每天早上喝一杯咖啡。",
];

fn engine_with(embedder: Arc<dyn Embedder>) -> Engine {
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .build()
        .unwrap()
}

fn hash_engine() -> Engine {
    engine_with(Arc::new(HashEmbedder::default()))
}

fn user(name: &str) -> UserKey {
    UserKey::new("t", name).unwrap()
}

/// Every fixture fact said by `name` (one turn each, agent `bot`); the turn ids by text.
fn say_all(engine: &Engine, name: &str) -> HashMap<String, TurnId> {
    let scope = Scope::new("t", name, "bot", "s1").unwrap();
    let texts: Vec<&str> = DESCRIBED
        .iter()
        .flat_map(|(_, texts)| texts.iter().copied())
        .chain(UNRELATED.iter().copied())
        .collect();
    let turns = texts
        .iter()
        .map(|t| NewTurn::user(scope.clone(), *t))
        .collect();
    let added = engine.add(turns).unwrap();
    texts
        .iter()
        .zip(&added.turns)
        .map(|(text, turn)| (text.to_string(), turn.turn_id))
        .collect()
}

fn dry_run(engine: &Engine, name: &str, query: &str) -> ForgetMatchReport {
    engine
        .forget_matching(&user(name), &ForgetMatching::new(query, "asked"))
        .unwrap()
}

/// The fixture texts a memory came from.
fn sources<'a>(memory: &Memory, turns: &'a HashMap<String, TurnId>) -> Vec<&'a str> {
    turns
        .iter()
        .filter(|(_, id)| memory.provenance.contains(id))
        .map(|(text, _)| text.as_str())
        .collect()
}

/// For each description: every memory's relevance at any floor (printed with `--nocapture`),
/// and that a dry run selects exactly the described memories. Returns the lowest relevance of
/// a described memory and the highest of an unrelated one.
fn measure(engine: &Engine, turns: &HashMap<String, TurnId>) -> (f32, f32) {
    let (mut lowest, mut highest) = (1.0f32, 0.0f32);
    for (query, described) in DESCRIBED {
        let mut request = ForgetMatching::new(*query, "measuring");
        request.min_relevance = Some(0.0);
        request.limit = mnemos_engine::MAX_FORGET_LIMIT;
        let all = engine.forget_matching(&user("ann"), &request).unwrap();
        for candidate in &all.candidates {
            let relevance = candidate.relevance.unwrap_or(0.0);
            let about = sources(&candidate.memory, turns)
                .iter()
                .any(|t| described.contains(t));
            if about {
                lowest = lowest.min(relevance);
            } else {
                highest = highest.max(relevance);
            }
            let what = if about { "described" } else { "unrelated" };
            println!("{query:?}: {what} {relevance:.4} {}", candidate.memory.text);
        }
        let selected: HashSet<&str> = dry_run(engine, "ann", query)
            .candidates
            .iter()
            .flat_map(|c| sources(&c.memory, turns))
            .collect();
        let wanted: HashSet<&str> = described.iter().copied().collect();
        assert_eq!(selected, wanted, "{query:?}");
    }
    (lowest, highest)
}

/// The floor keeps every unrelated memory out with room to spare; described memories under it
/// (named in other words, or sharing a single word) are the rules' to find.
#[test]
fn a_description_selects_what_it_describes_and_nothing_else() {
    let engine = hash_engine();
    let turns = say_all(&engine, "ann");
    let (lowest, highest) = measure(&engine, &turns);
    println!("hash: described ≥ {lowest:.4}, unrelated ≤ {highest:.4}");
    assert!(highest * 3.0 < FORGET_MIN_RELEVANCE, "{highest}");
}

/// The same with MiniLM (needs the model: `mnemos models fetch`); run with `--ignored`.
#[test]
#[ignore = "needs the MiniLM model files"]
fn a_description_selects_what_it_describes_and_nothing_else_with_minilm() {
    let dir = mnemos_embed::resolve_model_dir(None).expect("the MiniLM model");
    let engine = engine_with(Arc::new(mnemos_embed::MiniLmEmbedder::load(&dir).unwrap()));
    let turns = say_all(&engine, "ann");
    let (lowest, highest) = measure(&engine, &turns);
    println!("minilm: described ≥ {lowest:.4}, unrelated ≤ {highest:.4}");
    assert!(highest * 3.0 < FORGET_MIN_RELEVANCE, "{highest}");
}

/// Every memory of `name`, in every state, with its version.
fn snapshot(engine: &Engine, name: &str) -> Vec<(MemoryId, u32, bool)> {
    let filter = MemoryFilter {
        state: StateFilter::All,
        ..MemoryFilter::default()
    };
    let page = Page {
        offset: 0,
        limit: 1000,
    };
    let listed = engine.list(&user(name), &filter, page).unwrap();
    listed
        .items
        .iter()
        .map(|m| (m.id, m.version, m.is_active()))
        .collect()
}

#[test]
fn a_dry_run_writes_nothing_and_a_confirmed_run_forgets_exactly_what_it_listed() {
    let engine = hash_engine();
    say_all(&engine, "ann");
    say_all(&engine, "bob");
    let (ann_before, bob_before) = (snapshot(&engine, "ann"), snapshot(&engine, "bob"));

    let shown = dry_run(&engine, "ann", "my old address");
    assert!(!shown.confirmed && shown.forgotten.is_empty());
    assert_eq!(shown.candidates.len(), 3, "{shown:#?}");
    assert!(shown.derived > 0, "the address facts go with their turns");
    assert_eq!(
        snapshot(&engine, "ann"),
        ann_before,
        "a dry run writes nothing"
    );
    // The old address, superseded by the new one, is selected with it.
    assert!(shown.candidates.iter().any(|c| !c.memory.is_current()));

    let mut confirm = ForgetMatching::new("my old address", "the user asked");
    confirm.confirm = true;
    let done = engine.forget_matching(&user("ann"), &confirm).unwrap();
    assert!(done.confirmed);
    assert_eq!(done.candidates, shown.candidates);
    assert_eq!(done.derived, shown.derived);
    let listed: HashSet<MemoryId> = shown.candidates.iter().map(|c| c.memory.id).collect();
    let now = snapshot(&engine, "ann");
    let gone: Vec<MemoryId> = now.iter().filter(|m| !m.2).map(|m| m.0).collect();
    assert_eq!(gone.len(), listed.len() + shown.derived);
    assert!(listed.iter().all(|id| gone.contains(id)));
    for report in &done.forgotten {
        assert!(!report.memory.is_active() && !report.already_forgotten);
        let history = engine.history(&user("ann"), report.memory.id).unwrap();
        let reason = format!("{:?}", history.last().unwrap());
        assert!(reason.contains("the user asked"), "{reason}");
    }
    // Every derived memory forgotten came from a listed turn; nothing else changed.
    for id in gone.iter().filter(|id| !listed.contains(id)) {
        let memory = engine.get(&user("ann"), *id).unwrap();
        assert_ne!(memory.kind.tag(), KindTag::Turn, "{memory:?}");
    }
    let unrelated = dry_run(&engine, "ann", "my cat Pixel");
    assert_eq!(unrelated.candidates.len(), 1, "the cat is still there");
    assert_eq!(
        snapshot(&engine, "bob"),
        bob_before,
        "another user's are untouched"
    );
    // Asked again, nothing is left to forget.
    let again = engine.forget_matching(&user("ann"), &confirm).unwrap();
    assert!(again.candidates.is_empty() && !again.confirmed);
}

#[test]
fn the_ids_a_dry_run_listed_bound_what_a_confirmed_run_forgets() {
    let engine = hash_engine();
    say_all(&engine, "ann");
    let shown = dry_run(&engine, "ann", "my old address");
    let id_of = |text: &str| {
        let found = shown.candidates.iter().find(|c| c.memory.text == text);
        found.unwrap().memory.id
    };
    let (flat, porto) = (
        id_of("My flat is at 12 Elm Street."),
        id_of("I just moved, I live in Porto now."),
    );
    let elsewhere = MemoryId::new();
    let mut confirm = ForgetMatching::new("my old address", "the user asked");
    confirm.confirm = true;
    // One listed memory, and an id the description does not select.
    confirm.ids = Some(vec![flat, elsewhere]);
    let done = engine.forget_matching(&user("ann"), &confirm).unwrap();
    assert_eq!(done.candidates.len(), 1);
    assert_eq!(done.candidates[0].memory.id, flat);
    assert_eq!(done.skipped, vec![elsewhere]);
    assert!(engine.get(&user("ann"), porto).unwrap().is_active());
    // Forgotten meanwhile: named again, it is skipped.
    confirm.ids = Some(vec![flat, porto]);
    let done = engine.forget_matching(&user("ann"), &confirm).unwrap();
    assert_eq!(done.skipped, vec![flat]);
    assert!(!engine.get(&user("ann"), porto).unwrap().is_active());
}

#[test]
fn the_limit_cuts_the_selection_and_says_so() {
    let engine = hash_engine();
    say_all(&engine, "ann");
    let mut request = ForgetMatching::new("my old address", "asked");
    request.limit = 1;
    let report = engine.forget_matching(&user("ann"), &request).unwrap();
    assert_eq!(report.candidates.len(), 1);
    assert!(report.truncated);
    assert!(!dry_run(&engine, "ann", "my old address").truncated);
}

#[test]
fn a_tombstone_is_never_selected() {
    let engine = hash_engine();
    let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
    let said = [
        "My passport number is X4417902.",
        "Please forget my passport number.",
        "I renewed my passport in May.",
    ];
    engine
        .add(
            said.iter()
                .map(|t| NewTurn::user(scope.clone(), *t))
                .collect(),
        )
        .unwrap();
    let report = dry_run(&engine, "ann", "my passport");
    let texts: Vec<&str> = report
        .candidates
        .iter()
        .map(|c| c.memory.text.as_str())
        .collect();
    assert_eq!(texts, ["I renewed my passport in May."], "{report:#?}");
}

#[test]
fn a_request_without_a_description_or_a_reason_is_refused() {
    let engine = hash_engine();
    say_all(&engine, "ann");
    let refused = |request: ForgetMatching| {
        let error = engine.forget_matching(&user("ann"), &request).unwrap_err();
        assert_eq!(error.class(), ErrorClass::InvalidInput, "{error}");
        error.to_string()
    };
    assert!(refused(ForgetMatching::new("  ", "asked")).contains("query"));
    assert!(refused(ForgetMatching::new("my cat", " ")).contains("reason"));
    let long = "my cat ".repeat(mnemos_engine::MAX_QUERY_CHARS / 7 + 1);
    assert!(refused(ForgetMatching::new(long, "asked")).contains("8000"));
    let mut request = ForgetMatching::new("my cat", "asked");
    request.limit = 101;
    assert!(refused(request.clone()).contains("limit"));
    request.limit = 10;
    request.min_relevance = Some(1.5);
    assert!(refused(request.clone()).contains("min_relevance"));
    request.min_relevance = None;
    request.ids = Some(Vec::new());
    assert!(refused(request).contains("ids"));
    // A user with nothing stored: nothing to forget, nothing written.
    let nobody = dry_run(&engine, "nobody", "my cat Pixel");
    assert!(nobody.candidates.is_empty());
}
