//! Behaviour of the `Memories` facade over the in-memory reference store.

use std::sync::Arc;

use mnemos_core::*;

use super::*;
use mnemos_testkit::embedders::{Constant, Recording, TrigramEmbedder};

/// Forget one memory through a committed batch (the engine's only way to forget).
fn forget(m: &Memories, user: &UserKey, id: MemoryId, reason: &str) -> Result<Vec<Memory>> {
    let at = m.moment(user)?;
    m.commit(
        user,
        WriteBatch {
            forgets: vec![BatchForget {
                id,
                reason: reason.to_string(),
                cause: mnemos_core::ForgetCause::Request,
                at,
            }],
            ..WriteBatch::default()
        },
    )
}

fn scope(user: &str) -> Scope {
    Scope::new("t", user, "agent", "s1").unwrap()
}

fn open(store: Arc<dyn Store>) -> Memories {
    Memories::new(
        store,
        Arc::new(TrigramEmbedder),
        Arc::new(FixedClock(Timestamp(1_000))),
        RetrievalConfig::default(),
    )
    .unwrap()
}

fn add(m: &Memories, user: &str, texts: &[&str]) -> Vec<AddedTurn> {
    m.add_turns(
        texts
            .iter()
            .map(|t| NewTurn::user(scope(user), *t))
            .collect(),
    )
    .unwrap()
}

fn search(m: &Memories, user: &str, q: &str) -> SearchResults {
    m.search(&SearchRequest::new(UserKey::new("t", user).unwrap(), q))
        .unwrap()
}

#[test]
fn search_finds_the_relevant_turn_with_an_explanation() {
    let m = open(Arc::new(MemoryStore::new()));
    add(
        &m,
        "ann",
        &[
            "I adopted a grey cat named Pixel",
            "The weather is rainy today",
            "我喜欢周末去爬山",
        ],
    );
    let results = search(&m, "ann", "what is the name of my cat?");
    let top = &results.hits[0];
    assert!(top.memory.text.contains("Pixel"));
    assert!(top.breakdown.lexical.is_some());
    assert!(top.breakdown.matched_terms.contains(&"cat".to_string()));
    let zh = search(&m, "ann", "周末爬山");
    assert!(zh.hits[0].memory.text.contains("爬山"));
}

#[test]
fn a_second_hop_reaches_a_memory_through_the_entity_of_the_first() {
    let m = open(Arc::new(MemoryStore::new()));
    let mut texts = vec![
        "The Harbour Jazz Night takes place in Lisbon.",
        "Harbour Jazz Night starts next Friday at seven.",
    ];
    let filler: Vec<String> = (0..40)
        .map(|i| format!("Filler line {i} about gardening, tea and the weather."))
        .collect();
    texts.extend(filler.iter().map(String::as_str));
    add(&m, "ann", &texts);
    let user = UserKey::new("t", "ann").unwrap();
    let question = "The event in Lisbon: at what hour?";
    let mut request = SearchRequest::new(user.clone(), question);
    assert_eq!(
        request.second_hop,
        Some(SecondHop::default()),
        "on by default"
    );
    request.retriever = RetrieverKind::Bm25;
    request.top_k = Some(3);
    request.second_hop = None;
    let one_hop = m.search(&request).unwrap();
    let found = |r: &SearchResults| r.hits.iter().any(|h| h.memory.text.contains("Friday"));
    assert!(one_hop.hits[0].memory.text.contains("Lisbon"));
    assert!(
        !found(&one_hop),
        "nothing in the question names the start time's memory"
    );

    request.second_hop = Some(SecondHop::default());
    let two_hops = m.search(&request).unwrap();
    assert!(
        two_hops.hits[0].memory.text.contains("Lisbon"),
        "the first hop still leads"
    );
    let reached = two_hops
        .hits
        .iter()
        .find(|h| h.memory.text.contains("Friday"))
        .expect("the second hop finds the start time through 'Harbour Jazz Night'");
    let hop = reached
        .breakdown
        .second_hop
        .expect("explained as a second hop");
    assert_eq!(hop.via, two_hops.hits[0].memory.id);
    assert!(hop.added > 0.0 && hop.added <= reached.breakdown.fused);
    assert!(one_hop
        .hits
        .iter()
        .all(|h| h.breakdown.second_hop.is_none()));

    // Invalid settings are errors, not silently clamped.
    request.second_hop = Some(SecondHop {
        seeds: 0,
        weight: 0.5,
        keep: 0,
    });
    assert!(m.search(&request).is_err());
    request.second_hop = Some(SecondHop {
        seeds: 3,
        weight: f32::NAN,
        keep: 0,
    });
    assert!(m.search(&request).is_err());
    request.second_hop = Some(SecondHop {
        keep: 101,
        ..SecondHop::default()
    });
    assert!(m.search(&request).is_err());
}

#[test]
fn compound_questions_split_into_their_questions() {
    assert!(question_parts("Where does Ann work?").is_empty());
    assert!(question_parts("Ann moved. She likes it.").is_empty());
    assert_eq!(
        question_parts("Where does Ann work? And who is her boss?"),
        vec!["Where does Ann work?", "And who is her boss?"]
    );
    // A question wrapped in chat: the question alone, and the whole query for its context.
    let wrapped = "It rained all day. Anyway, where does my sister work?";
    assert_eq!(
        question_parts(wrapped),
        vec!["Anyway, where does my sister work?", wrapped]
    );
    assert_eq!(
        question_parts("我婶婶的生日是什么时候？另外，我参观的医院叫什么名字？"),
        vec!["我婶婶的生日是什么时候？", "另外，我参观的医院叫什么名字？"]
    );
}

#[test]
fn each_question_of_a_compound_query_gets_its_share_of_the_results() {
    let m = open(Arc::new(MemoryStore::new()));
    let mut texts: Vec<String> = (0..8)
        .map(|i| format!("Ann's cousin number {i} works at the harbour office."))
        .collect();
    texts.push("The dentist appointment is on Friday morning.".into());
    texts.extend((0..30).map(|i| format!("Filler line {i} about gardening, tea and the weather.")));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    add(&m, "ann", &refs);
    let user = UserKey::new("t", "ann").unwrap();
    let query = "Where do Ann's cousins work at the harbour office? When is the dentist?";
    let mut request = SearchRequest::new(user, query);
    request.retriever = RetrieverKind::Bm25;
    request.top_k = Some(3);
    assert!(request.split_questions, "on by default");
    request.split_questions = false;
    let whole = m.search(&request).unwrap();
    let dentist = |r: &SearchResults| r.hits.iter().any(|h| h.memory.text.contains("dentist"));
    assert!(!dentist(&whole), "the wordier question takes every slot");
    assert!(whole.query_parts.is_empty());

    request.split_questions = true;
    let split = m.search(&request).unwrap();
    assert_eq!(split.query_parts.len(), 2);
    assert!(dentist(&split), "each question gets its own top places");
    assert!(split.hits[0].score >= split.hits[split.hits.len() - 1].score);
}

#[test]
fn a_detail_deep_inside_a_long_memory_is_found_by_its_window() {
    let m = open(Arc::new(MemoryStore::new()));
    let filler: String = (0..40)
        .map(|i| format!("We talked about the weather and the traffic on day {i}. "))
        .collect();
    let long = format!("{filler}Then Ann said her grandmother's violin is kept in Lisbon.");
    add(
        &m,
        "ann",
        &[
            &long,
            "Bob likes trains",
            "Carol plays the piano on Sundays",
        ],
    );
    let mut request = SearchRequest::new(
        UserKey::new("t", "ann").unwrap(),
        "where is the grandmother's violin kept",
    );
    request.retriever = RetrieverKind::Dense;
    let hits = m.search(&request).unwrap().hits;
    assert!(
        hits[0].memory.text.contains("Lisbon"),
        "{:?}",
        hits[0].memory.text
    );
    // Without windows the long memory is one blurred vector and loses to a short one.
    let plain = Memories::new(
        Arc::new(MemoryStore::new()),
        Arc::new(TrigramEmbedder),
        Arc::new(FixedClock(Timestamp(1_000))),
        RetrievalConfig {
            window_tokens: 0,
            ..RetrievalConfig::default()
        },
    )
    .unwrap();
    add(
        &plain,
        "ann",
        &[
            &long,
            "Bob likes trains",
            "Carol plays the piano on Sundays",
        ],
    );
    let windowed_score = hits[0].breakdown.dense.map(|d| d.score).unwrap_or(0.0);
    let plain_hits = plain.search(&request).unwrap().hits;
    let plain_score = plain_hits
        .iter()
        .find(|h| h.memory.text.contains("Lisbon"))
        .and_then(|h| h.breakdown.dense.map(|d| d.score))
        .unwrap_or(0.0);
    assert!(
        windowed_score > plain_score + 0.1,
        "{windowed_score} vs {plain_score}"
    );
}

#[test]
fn users_never_see_each_other() {
    let m = open(Arc::new(MemoryStore::new()));
    let added = add(&m, "ann", &["secret plan about the surprise party"]);
    add(&m, "bob", &["bob likes football"]);
    let results = search(&m, "bob", "secret surprise party");
    assert!(results.hits.iter().all(|h| h.memory.scope.user == "bob"));
    let bob = UserKey::new("t", "bob").unwrap();
    assert!(matches!(
        m.get(&bob, added[0].memory_id().unwrap()),
        Err(Error::NotFound { .. })
    ));
    assert!(forget(&m, &bob, added[0].memory_id().unwrap(), "x").is_err());
}

#[test]
fn forget_removes_from_search_and_records_history() {
    let m = open(Arc::new(MemoryStore::new()));
    let added = add(&m, "ann", &["my locker code is 4417", "I like tea"]);
    let ann = UserKey::new("t", "ann").unwrap();
    forget(&m, &ann, added[0].memory_id().unwrap(), "user asked").unwrap();
    assert!(search(&m, "ann", "locker code")
        .hits
        .iter()
        .all(|h| h.memory.id != added[0].memory_id().unwrap()));
    let history = m.history(&ann, added[0].memory_id().unwrap()).unwrap();
    assert_eq!(history.len(), 2);
    assert!(matches!(&history[1].change, Change::Forgotten { reason } if reason == "user asked"));
    assert!(forget(&m, &ann, added[0].memory_id().unwrap(), " ").is_err());
}

#[test]
fn update_reindexes_the_new_text() {
    let m = open(Arc::new(MemoryStore::new()));
    let added = add(&m, "ann", &["I work at the bakery"]);
    let ann = UserKey::new("t", "ann").unwrap();
    let patch = MemoryPatch {
        text: Some("I work at the hospital".into()),
        ..Default::default()
    };
    let updated = m
        .update(&ann, added[0].memory_id().unwrap(), &patch)
        .unwrap();
    assert_eq!(updated.version, 2);
    assert_eq!(
        search(&m, "ann", "hospital").hits[0].memory.id,
        added[0].memory_id().unwrap()
    );
    assert!(search(&m, "ann", "bakery")
        .hits
        .iter()
        .all(|h| h.breakdown.lexical.is_none()));
}

#[test]
fn edits_outside_the_text_keep_the_memory_searchable() {
    let m = open(Arc::new(MemoryStore::new()));
    let added = add(
        &m,
        "ann",
        &["the violin lessons start in June", "unrelated note"],
    );
    let ann = UserKey::new("t", "ann").unwrap();
    let metrics = Metrics {
        importance: Some(0.9),
        ..Default::default()
    };
    m.update(
        &ann,
        added[0].memory_id().unwrap(),
        &MemoryPatch {
            metrics: Some(metrics),
            ..Default::default()
        },
    )
    .unwrap();
    let mut request = SearchRequest::new(ann.clone(), "violin lessons");
    request.retriever = RetrieverKind::Dense;
    assert_eq!(
        m.search(&request).unwrap().hits[0].memory.id,
        added[0].memory_id().unwrap()
    );
    // A new speaker is part of the searchable text.
    let mut metadata = Metadata::new();
    metadata.insert("speaker".into(), "Zoltan".into());
    m.update(
        &ann,
        added[1].memory_id().unwrap(),
        &MemoryPatch {
            metadata: Some(metadata),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        search(&m, "ann", "zoltan").hits[0].memory.id,
        added[1].memory_id().unwrap()
    );
}

#[test]
fn new_metadata_keeps_the_turns_speaker_unless_it_names_one() {
    let m = open(Arc::new(MemoryStore::new()));
    let mut turn = NewTurn::user(scope("ann"), "the cello lesson moved to Friday");
    turn.speaker = Some("Lena".into());
    let id = m.add_turns(vec![turn]).unwrap()[0].memory_id().unwrap();
    let ann = UserKey::new("t", "ann").unwrap();
    let mut metadata = Metadata::new();
    metadata.insert("source".into(), "import".into());
    let patch = MemoryPatch {
        metadata: Some(metadata),
        ..Default::default()
    };
    let updated = m.update(&ann, id, &patch).unwrap();
    assert_eq!(
        updated.metadata.get("source").map(String::as_str),
        Some("import")
    );
    assert_eq!(
        updated.metadata.get(SPEAKER_KEY).map(String::as_str),
        Some("Lena")
    );
    assert_eq!(search(&m, "ann", "lena").hits[0].memory.id, id);
}

#[test]
fn indexes_rebuild_from_the_store_and_purge_erases() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first = open(store.clone());
    add(
        &first,
        "ann",
        &["the red bicycle is in the garage", "dinner at eight"],
    );
    let before: Vec<MemoryId> = search(&first, "ann", "bicycle garage")
        .hits
        .iter()
        .map(|h| h.memory.id)
        .collect();
    drop(first);
    let second = open(store.clone());
    let after: Vec<MemoryId> = search(&second, "ann", "bicycle garage")
        .hits
        .iter()
        .map(|h| h.memory.id)
        .collect();
    assert_eq!(before, after);
    let report = second.purge(&UserKey::new("t", "ann").unwrap()).unwrap();
    assert_eq!(report.turns, 2);
    assert!(search(&second, "ann", "bicycle").hits.is_empty());
}

#[test]
fn rounds_follow_user_turns() {
    let m = open(Arc::new(MemoryStore::new()));
    let mut reply = NewTurn::user(scope("ann"), "hello there");
    reply.role = Role::Assistant;
    let added = m
        .add_turns(vec![
            NewTurn::user(scope("ann"), "hi"),
            reply,
            NewTurn::user(scope("ann"), "how are you"),
        ])
        .unwrap();
    assert_eq!(
        added.iter().map(|a| a.round).collect::<Vec<_>>(),
        vec![0, 0, 1]
    );
}

#[test]
fn bad_input_is_rejected_with_clear_errors_and_nothing_written() {
    let m = open(Arc::new(MemoryStore::new()));
    let err = m
        .add_turns(vec![
            NewTurn::user(scope("ann"), "ok"),
            NewTurn::user(scope("ann"), "  "),
        ])
        .unwrap_err();
    assert!(err.to_string().contains("turn 2"), "{err}");
    let huge = "x".repeat(MAX_TEXT_BYTES + 1);
    assert!(m
        .add_turns(vec![NewTurn::user(scope("ann"), huge)])
        .is_err());
    assert!(m.users().unwrap().is_empty());
    let ann = UserKey::new("t", "ann").unwrap();
    assert!(m.search(&SearchRequest::new(ann.clone(), "")).is_err());
    let mut request = SearchRequest::new(ann, "x");
    request.top_k = Some(0);
    assert!(m.search(&request).is_err());
}

#[test]
fn token_budget_and_filters_apply() {
    let m = open(Arc::new(MemoryStore::new()));
    add(
        &m,
        "ann",
        &[
            "coffee in the morning",
            "coffee beans from Kenya are my favourite coffee",
            "coffee",
        ],
    );
    let mut request = SearchRequest::new(UserKey::new("t", "ann").unwrap(), "coffee");
    request.token_budget = Some(6);
    let results = m.search(&request).unwrap();
    assert!(results.hits.iter().map(|h| h.tokens).sum::<usize>() <= 6);
    assert!(!results.hits.is_empty());
    request.token_budget = None;
    request.filter.session = Some("other".into());
    assert!(m.search(&request).unwrap().hits.is_empty());
}

#[test]
fn vectors_missing_for_the_current_embedder_are_computed_on_build() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = Memories::new(
        store.clone(),
        Arc::new(Constant::new("other-8", 8)),
        Arc::new(SystemClock),
        RetrievalConfig::default(),
    )
    .unwrap();
    add(&m, "ann", &["alpha beta", "gamma delta"]);
    let m2 = open(store.clone());
    let stats = m2.warm(&UserKey::new("t", "ann").unwrap()).unwrap();
    assert_eq!(stats.vectors, 2);
    assert_eq!(m2.last_build_stats().embedded_on_build, 2);
    assert_eq!(
        store
            .vectors(&UserKey::new("t", "ann").unwrap(), "test-trigram-64")
            .unwrap()
            .len(),
        2
    );
}

fn open_recording(
    store: Arc<dyn Store>,
    embedder: &Arc<Recording>,
    quantization: Quantization,
) -> Memories {
    let config = RetrievalConfig {
        quantization,
        ..RetrievalConfig::default()
    };
    Memories::new(
        store,
        embedder.clone(),
        Arc::new(FixedClock(Timestamp(1_000))),
        config,
    )
    .unwrap()
}

fn user(name: &str) -> UserKey {
    UserKey::new("t", name).unwrap()
}

/// The stored vector of each memory, by id.
fn stored_vectors(
    store: &Arc<dyn Store>,
    user: &UserKey,
    model: &str,
) -> HashMap<MemoryId, Vec<f32>> {
    store
        .vectors(user, model)
        .unwrap()
        .into_iter()
        .map(|row| (row.memory_id, row.vector))
        .collect()
}

fn ids(added: &[AddedTurn]) -> Vec<MemoryId> {
    added.iter().filter_map(AddedTurn::memory_id).collect()
}

#[test]
fn identical_texts_of_one_write_are_embedded_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::F32);
    let texts = ["I like tea", "I like tea", "I like coffee", "I like tea"];
    let added = ids(&add(&m, "ann", &texts));
    assert_eq!(embedder.take(), vec!["I like tea", "I like coffee"]);
    let stats = m.embedding_stats();
    assert_eq!((stats.embedded, stats.repeated, stats.reused), (2, 2, 0));
    // Every occurrence got the vector, bit for bit, in the store and in the index.
    let stored = stored_vectors(&store, &user("ann"), "rec");
    let tea = embedder.vector_of(&["I like tea"]).unwrap();
    embedder.take();
    for (id, text) in added.iter().zip(texts) {
        assert_eq!(stored[id], embedder.vector_of(&[text]).unwrap(), "{text}");
    }
    assert_eq!(stored[&added[3]], tea);
    let results = search(&m, "ann", "tea");
    assert_eq!(results.hits.len(), 4);
}

#[test]
fn a_text_embedded_for_the_user_before_is_not_embedded_again_but_for_another_user_it_is() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::F32);
    let first = ids(&add(&m, "ann", &["I like tea"]));
    assert_eq!(embedder.take(), vec!["I like tea"]);
    let second = ids(&add(&m, "ann", &["I like tea", "A new line"]));
    assert_eq!(embedder.take(), vec!["A new line"], "tea is reused");
    let stored = stored_vectors(&store, &user("ann"), "rec");
    assert_eq!(stored[&second[0]], stored[&first[0]]);
    // Users are isolation boundaries: bob's identical text is embedded for bob.
    add(&m, "bob", &["I like tea"]);
    assert_eq!(embedder.take(), vec!["I like tea"]);
    let stats = m.embedding_stats();
    assert_eq!((stats.embedded, stats.repeated, stats.reused), (3, 0, 1));
    // A second process over the same store builds ann's index from the stored vectors and
    // reuses them too.
    let again = open_recording(store.clone(), &embedder, Quantization::F32);
    add(&again, "ann", &["I like tea", "A new line"]);
    assert!(embedder.take().is_empty());
    assert_eq!(again.embedding_stats().reused, 2);
}

#[test]
fn a_long_text_reuses_the_windows_it_shares_with_earlier_texts() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::F32);
    let analyzer = Analyzer::shared();
    let window_tokens = RetrievalConfig::default().window_tokens;
    let long: String = (0..24)
        .map(|i| format!("Sentence {i} tells the story of garden number {i} at some length. "))
        .collect();
    let longer = format!("{long}And one more sentence closes the longer story for good.");
    let (long, longer) = (long.trim_end(), longer.as_str());
    let windows = embedding_windows(analyzer, long, window_tokens);
    let longer_windows = embedding_windows(analyzer, longer, window_tokens);
    assert!(windows.len() >= 3, "{windows:?}");
    let first = ids(&add(&m, "ann", &[long]));
    assert_eq!(embedder.take(), windows);
    // Only the windows the earlier text does not hold are embedded.
    let new_windows: Vec<&str> = longer_windows
        .iter()
        .copied()
        .filter(|w| !windows.contains(w))
        .collect();
    assert!(!new_windows.is_empty() && new_windows.len() < longer_windows.len());
    let second = ids(&add(&m, "ann", &[longer, long]));
    assert_eq!(embedder.take(), new_windows);
    // Each memory's vector is its windows' vectors in order, as if embedded afresh.
    let stored = stored_vectors(&store, &user("ann"), "rec");
    assert_eq!(
        stored[&second[0]],
        embedder.vector_of(&longer_windows).unwrap()
    );
    assert_eq!(stored[&second[1]], stored[&first[0]]);
    // A window of a long text also serves a short text with exactly its words.
    embedder.take();
    add(&m, "ann", &[windows[1]]);
    assert!(embedder.take().is_empty());
}

#[test]
fn forgotten_and_edited_texts_are_no_longer_reused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::F32);
    let ann = user("ann");
    let added = ids(&add(
        &m,
        "ann",
        &["I like tea", "I like coffee", "I like juice"],
    ));
    embedder.take();
    // Forgotten: the store dropped its vector, so the text is embedded again.
    forget(&m, &ann, added[0], "test").unwrap();
    add(&m, "ann", &["I like tea"]);
    assert_eq!(embedder.take(), vec!["I like tea"]);
    // Edited to a text another memory holds: that vector is reused; the old text is gone.
    let patch = MemoryPatch {
        text: Some("I like juice".into()),
        ..MemoryPatch::default()
    };
    m.update(&ann, added[1], &patch).unwrap();
    assert!(embedder.take().is_empty());
    let stored = stored_vectors(&store, &ann, "rec");
    assert_eq!(stored[&added[1]], stored[&added[2]]);
    add(&m, "ann", &["I like coffee"]);
    assert_eq!(embedder.take(), vec!["I like coffee"]);
}

#[test]
fn a_derived_memory_reuses_the_vector_of_a_turn_with_the_same_text() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::F32);
    let ann = user("ann");
    let added = add(&m, "ann", &["Ann moved to Lisbon in May"]);
    embedder.take();
    let turn_memory = m.get(&ann, added[0].memory_id().unwrap()).unwrap();
    let fact = Memory {
        id: MemoryId::new(),
        kind: MemoryKind::Fact,
        provenance: vec![added[0].turn_id],
        ..turn_memory.clone()
    };
    let written = m
        .commit(
            &ann,
            WriteBatch {
                memories: vec![
                    fact.clone(),
                    Memory {
                        id: MemoryId::new(),
                        text: "Ann lives in Lisbon".into(),
                        ..fact
                    },
                ],
                ..WriteBatch::default()
            },
        )
        .unwrap();
    assert_eq!(embedder.take(), vec!["Ann lives in Lisbon"]);
    let stored = stored_vectors(&store, &ann, "rec");
    assert_eq!(stored[&written[0].id], stored[&turn_memory.id]);
}

#[test]
fn another_embedder_identity_reuses_nothing() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = Recording::new("rec-a", false);
    let b = Recording::new("rec-b", true);
    let ann = user("ann");
    add(
        &open_recording(store.clone(), &a, Quantization::F32),
        "ann",
        &["I like tea"],
    );
    let m = open_recording(store.clone(), &b, Quantization::F32);
    let added = ids(&add(&m, "ann", &["I like tea"]));
    // b embeds the text itself (once: the stored memory while building, whose vector the new
    // turn then shares); what it stores is its own vector, never a's.
    assert_eq!(b.take(), vec!["I like tea"]);
    let stored = stored_vectors(&store, &ann, "rec-b");
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[&added[0]], b.vector_of(&["I like tea"]).unwrap());
    assert_ne!(stored[&added[0]], a.vector_of(&["I like tea"]).unwrap());
}

#[test]
fn an_int8_index_shares_vectors_within_a_write_only() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let embedder = Recording::new("rec", false);
    let m = open_recording(store.clone(), &embedder, Quantization::Int8);
    add(&m, "ann", &["I like tea", "I like tea"]);
    assert_eq!(embedder.take(), vec!["I like tea"]);
    // Its index holds quantized copies only: no exact vector to reuse, so it is embedded.
    add(&m, "ann", &["I like tea"]);
    assert_eq!(embedder.take(), vec!["I like tea"]);
}

#[test]
fn internal_searches_apply_only_the_floor_they_ask_for() {
    let m = open(Arc::new(MemoryStore::new()));
    add(&m, "ann", &["User prefers dark mode."]);
    let user = UserKey::new("t", "ann").unwrap();
    let mut request = SearchRequest::new(user, "quantum chromodynamics research papers");
    // A mechanism's search (no floor named) keeps the lone memory, with its low relevance.
    let internal = m.search(&request).unwrap();
    assert_eq!(internal.hits.len(), 1);
    assert!(internal.hits[0].relevance < m.config.min_relevance);
    // The public search applies the configured floor.
    assert!(m
        .search_with_default_floor(&request)
        .unwrap()
        .hits
        .is_empty());
    // A floor the request names applies to both.
    request.min_relevance = Some(0.0);
    assert_eq!(m.search_with_default_floor(&request).unwrap().hits.len(), 1);
    request.min_relevance = Some(0.9);
    assert!(m.search(&request).unwrap().hits.is_empty());
    assert_eq!(internal.candidates, 1);
}

#[test]
fn a_search_past_its_deadline_stops_with_a_timeout_and_a_costly_query_is_refused() {
    let m = open(Arc::new(MemoryStore::new()));
    add(&m, "ann", &["Ann's cousin works at the harbour office."]);
    let user = UserKey::new("t", "ann").unwrap();
    let mut request = SearchRequest::new(user, "Where does the cousin work?");
    request.deadline = mnemos_core::Deadline::after(std::time::Duration::ZERO);
    let error = m.search(&request).err();
    assert!(
        matches!(error, Some(mnemos_core::Error::TimedOut { .. })),
        "{error:?}"
    );
    request.deadline = mnemos_core::Deadline::after(std::time::Duration::from_secs(60));
    assert_eq!(m.search(&request).unwrap().hits.len(), 1);

    let many: Vec<String> = (0..=super::MAX_QUERY_PARTS)
        .map(|i| format!("Who is cousin {i}?"))
        .collect();
    let refused = super::validate_query(&many.join(" "), true).unwrap_err();
    assert!(refused.to_string().contains("at most 16"), "{refused}");
    assert!(super::validate_query(&many.join(" "), false).is_ok());
    assert!(super::validate_query(&many[..16].join(" "), true).is_ok());
    let long = "a".repeat(super::MAX_QUERY_CHARS + 1);
    let refused = super::validate_query(&long, false).unwrap_err();
    assert!(refused.to_string().contains("8000"), "{refused}");
    assert!(super::validate_query(&"字".repeat(super::MAX_QUERY_CHARS), false).is_ok());
}
