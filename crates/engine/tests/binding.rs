//! One database, one vector space: a database is bound to the embedder it was built with, an
//! engine with another embedder refuses to open it, and `reembed` moves it (resumably) into
//! another space.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemos_core::{
    EmbedError, Embedder, ErrorClass, Memory, MemoryStore, Metadata, Moment, Role, Scope, Store,
    Timestamp, Turn, TurnId, UserKey, VectorRow, WriteBatch,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{
    Engine, EngineConfig, EngineError, EngineResult, NewTurn, ReembedOptions, SearchRequest,
    VectorSpace,
};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};
use mnemos_testkit::embedders::Recording;

fn hash(dim: usize) -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(dim).unwrap())
}

fn open(
    store: &Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    mode: VectorSpace,
) -> EngineResult<Engine> {
    let model = Arc::new(OfflineModel::new(hash(384)));
    Engine::builder(Arc::clone(store), embedder, model)
        .presets(Arc::new(mnemos_presets::Presets))
        .config(EngineConfig::with_preset("retrieval"))
        .vector_space(mode)
        .build()
}

fn engine(store: &Arc<dyn Store>, embedder: Arc<dyn Embedder>) -> Engine {
    open(store, embedder, VectorSpace::Bound).unwrap()
}

fn mismatch(result: EngineResult<Engine>) -> String {
    match result {
        Err(e @ EngineError::VectorSpace(_)) => {
            assert_eq!(e.class(), ErrorClass::InvalidInput);
            e.to_string()
        }
        Err(other) => panic!("expected a vector-space mismatch, got {other}"),
        Ok(_) => panic!("expected a vector-space mismatch, the engine opened"),
    }
}

const TEXTS: [&str; 10] = [
    "I keep bees on the roof",
    "My bicycle has a flat tyre",
    "The lighthouse keeper waved at us",
    "We adopted a grey cat called Miso",
    "My sister lives in Lisbon",
    "I am learning to play the cello",
    "The bakery on the corner closes at noon",
    "Our flight to Oslo leaves on Friday",
    "I planted tomatoes and basil this spring",
    "My favourite book is The Hobbit",
];

fn ann() -> UserKey {
    UserKey::new("t", "ann").unwrap()
}

fn fill(engine: &Engine) {
    let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
    let turns = TEXTS
        .iter()
        .map(|t| NewTurn::user(scope.clone(), *t))
        .collect();
    engine.add(turns).unwrap();
}

fn top_hit(engine: &Engine, query: &str) -> String {
    let hits = engine
        .search(&SearchRequest::new(ann(), query))
        .unwrap()
        .hits;
    hits.first()
        .map(|h| h.memory.text.clone())
        .unwrap_or_default()
}

fn sqlite(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    let path = dir.path().join("m.db");
    Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap())
}

#[test]
fn a_new_database_is_bound_to_its_first_embedder_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = sqlite(&dir);
        fill(&engine(&store, hash(384)));
        assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-384"));
    }
    // Reopened from the file: the binding outlived the process's store.
    let store = sqlite(&dir);
    let message = mismatch(open(&store, hash(256), VectorSpace::Bound));
    assert!(
        message.contains("this database's vectors are hash-v1-384")
            && message.contains("it was opened with hash-v1-256")
            && message.contains("mnemos reembed"),
        "{message}"
    );
    // Nothing was written by the refused open, and the right embedder still works.
    assert_eq!(
        store.vector_models().unwrap(),
        vec![("hash-v1-384".into(), 10)]
    );
    assert_eq!(top_hit(&engine(&store, hash(384)), "bees"), TEXTS[0]);
}

/// A raw turn of ann's and its memory, as a build before bindings stored them.
fn legacy_turn(i: u64) -> (Turn, Memory) {
    let scope = Scope::new("t", "ann", "bot", "s1").unwrap();
    let turn = Turn {
        id: TurnId::new(),
        scope,
        role: Role::User,
        speaker: None,
        text: TEXTS[i as usize].to_string(),
        at: Moment {
            round: i,
            time: Timestamp(1_700_000_000_000 + i as i64),
        },
        metadata: Metadata::new(),
        key: None,
    };
    let memory = Memory::from_turn(&turn);
    (turn, memory)
}

/// A store written before bindings: memories with vectors of `models` (each a model id and how
/// many of the memories have one), and no binding.
fn legacy_store(models: &[(&str, usize)]) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (turns, memories): (Vec<Turn>, Vec<Memory>) = (0..6).map(legacy_turn).unzip();
    let vectors = models
        .iter()
        .flat_map(|(model, n)| {
            memories.iter().take(*n).map(|m| VectorRow {
                memory_id: m.id,
                model: model.to_string(),
                vector: vec![0.5; 4],
            })
        })
        .collect();
    store
        .write(WriteBatch {
            turns,
            memories,
            vectors,
            ..WriteBatch::default()
        })
        .unwrap();
    store
}

#[test]
fn a_legacy_database_is_bound_to_the_space_most_of_its_vectors_are_in() {
    // Only another space's vectors: the mismatch names it, and nothing is bound.
    let store = legacy_store(&[("hash-v1-384", 6)]);
    let message = mismatch(open(&store, hash(256), VectorSpace::Bound));
    assert!(message.contains("vectors are hash-v1-384"), "{message}");
    assert_eq!(store.binding().unwrap(), None);
    // Most vectors in another space: named, though some are the opener's.
    let store = legacy_store(&[("hash-v1-384", 2), ("hash-v1-256", 5)]);
    let message = mismatch(open(&store, hash(384), VectorSpace::Bound));
    assert!(message.contains("vectors are hash-v1-256"), "{message}");
    // The opener's space holds the most: bound to it.
    let store = legacy_store(&[("hash-v1-384", 6), ("hash-v1-256", 5)]);
    open(&store, hash(384), VectorSpace::Bound).unwrap();
    assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-384"));
    // No vectors at all: bound to the opener.
    let store = legacy_store(&[]);
    open(&store, hash(256), VectorSpace::Bound).unwrap();
    assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-256"));
}

#[test]
fn reembed_moves_the_binding_and_search_works_in_the_new_space() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    fill(&engine(&store, hash(384)));
    let moving = open(&store, hash(256), VectorSpace::Moving).unwrap();
    let mut steps = Vec::new();
    let report = moving
        .reembed(ReembedOptions::default(), &mut |step| steps.push(step))
        .unwrap();
    assert_eq!(report.previous.as_deref(), Some("hash-v1-384"));
    assert_eq!(
        (report.embedded, report.already_present, report.users),
        (10, 0, 1)
    );
    assert_eq!(steps.last().map(|s| (s.done, s.total)), Some((10, 10)));
    assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-256"));
    assert_eq!(top_hit(&engine(&store, hash(256)), "flat tyre"), TEXTS[1]);
    let message = mismatch(open(&store, hash(384), VectorSpace::Bound));
    assert!(message.contains("vectors are hash-v1-256"), "{message}");
    // The old space's vectors stay until asked to drop them.
    assert_eq!(store.vector_models().unwrap().len(), 2);
    let options = ReembedOptions {
        drop_old: true,
        ..ReembedOptions::default()
    };
    let report = moving.reembed(options, &mut |_| {}).unwrap();
    assert_eq!(
        (report.embedded, report.already_present, report.dropped),
        (0, 10, 10)
    );
    assert_eq!(
        store.vector_models().unwrap(),
        vec![("hash-v1-256".into(), 10)]
    );
}

/// An embedder that embeds `allowed` texts and then fails, as a crash half-way would stop a run.
struct FailsAfter {
    inner: Arc<dyn Embedder>,
    allowed: usize,
    used: AtomicUsize,
}

impl Embedder for FailsAfter {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let used = self.used.fetch_add(texts.len(), Ordering::SeqCst) + texts.len();
        if used > self.allowed {
            return Err(EmbedError::Unavailable("the embedder died".into()));
        }
        self.inner.embed_batch(texts)
    }
}

#[test]
fn an_interrupted_reembed_resumes_without_duplicates_and_keeps_the_old_binding_until_done() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite(&dir);
    fill(&engine(&store, hash(384)));
    let dying = Arc::new(FailsAfter {
        inner: hash(256),
        allowed: 7,
        used: AtomicUsize::new(0),
    });
    let options = ReembedOptions {
        batch: 3,
        ..ReembedOptions::default()
    };
    let moving = open(&store, dying, VectorSpace::Moving).unwrap();
    moving.reembed(options, &mut |_| {}).unwrap_err();
    // Two batches of three were committed; the database still belongs to the old space.
    assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-384"));
    let counts = store.vector_models().unwrap();
    assert_eq!(
        counts,
        vec![("hash-v1-384".into(), 10), ("hash-v1-256".into(), 6)]
    );
    assert_eq!(top_hit(&engine(&store, hash(384)), "cello"), TEXTS[5]);
    // The rerun embeds only the rest.
    let recording = Recording::wrap(hash(256));
    let moving = open(&store, recording.clone(), VectorSpace::Moving).unwrap();
    let report = moving.reembed(options, &mut |_| {}).unwrap();
    assert_eq!((report.embedded, report.already_present), (4, 6));
    assert_eq!(recording.count(), 4);
    assert_eq!(store.binding().unwrap().as_deref(), Some("hash-v1-256"));
    let counts = store.vector_models().unwrap();
    assert_eq!(
        counts,
        vec![("hash-v1-256".into(), 10), ("hash-v1-384".into(), 10)]
    );
    assert_eq!(top_hit(&engine(&store, hash(256)), "cello"), TEXTS[5]);
}
