//! The runner over a real engine (in-memory store, hash embedder, offline model): time-aware
//! streaming, scoring through provenance, size samples and purge.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::sync::Arc;

use mnemos_core::{MemoryStore, Metadata, Role, Timestamp};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, PresetSpec};
use mnemos_eval::protocol::{prepare, ProtocolSpec, Scenario};
use mnemos_eval::runner::{RunOptions, Runner, StreamClock};
use mnemos_eval::{Conversation, Item, Question, RetrievalDataset};
use mnemos_offline::OfflineModel;

const DAY: i64 = 86_400_000;

fn item(label: &str, role: Role, text: &str, day: i64) -> Item {
    Item {
        label: label.into(),
        role,
        speaker: None,
        text: text.into(),
        time: Some(Timestamp(1_700_000_000_000 + day * DAY)),
        session: format!("s{}", day / 2),
        metadata: Metadata::new(),
    }
}

fn dataset() -> RetrievalDataset {
    let items = vec![
        item(
            "a",
            Role::User,
            "My sister Mia lives in Lisbon and teaches piano.",
            0,
        ),
        item(
            "b",
            Role::Assistant,
            "Lisbon sounds lovely for a piano teacher.",
            0,
        ),
        item(
            "c",
            Role::User,
            "I adopted a grey cat called Pixel last week.",
            1,
        ),
        item("d", Role::Assistant, "Pixel is a great name for a cat.", 2),
        item(
            "e",
            Role::User,
            "Work has been busy with the quarterly report.",
            3,
        ),
        item(
            "f",
            Role::User,
            "We are planning a trip to Kyoto in April.",
            4,
        ),
    ];
    let question = |id: &str, text: &str, gold: &str, answer: &str| Question {
        id: id.into(),
        text: text.into(),
        answer: Some(answer.into()),
        gold: vec![gold.into()],
        category: "single-hop".into(),
        memory_type: None,
        after_item: 6,
        time: None,
        choices: Vec::new(),
        correct_choice: None,
        as_of: None,
        metadata: Metadata::new(),
    };
    let mut d: RetrievalDataset = serde_json::from_value(serde_json::json!({
        "name": "toy", "conversations": [], "excluded": {}, "defects": []
    }))
    .unwrap();
    d.conversations.push(Conversation {
        id: "toy-1".into(),
        items,
        questions: vec![
            question("q-cat", "What is the name of my cat?", "c", "Pixel"),
            question("q-trip", "Where are we travelling in April?", "f", "Kyoto"),
        ],
    });
    d
}

fn engine(preset: &str, clock: &StreamClock) -> Engine {
    let embedder: Arc<dyn mnemos_core::Embedder> = Arc::new(HashEmbedder::new(256).unwrap());
    let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
    let config = EngineConfig {
        preset: PresetSpec::named(preset),
        ..EngineConfig::default()
    };
    Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .clock(Arc::new(clock.clone()))
        .config(config)
        .build()
        .unwrap()
}

#[test]
fn streams_in_time_scores_by_provenance_and_purges() {
    let spec = ProtocolSpec {
        scenario: Scenario::Participation,
        // 15 tokens arrive within the first few items: the cat question is asked again there.
        checkpoints: vec![30],
        ..ProtocolSpec::default()
    };
    let prepared = prepare(&dataset(), &spec, &mnemos_engine::primitives::tokens).unwrap();
    let conversation = &prepared.conversations[0];
    let clock = StreamClock::new();
    let engine = engine("full", &clock);
    let answerer = OfflineModel::new(Arc::new(HashEmbedder::new(256).unwrap()));
    let options = RunOptions {
        batch: 2,
        ..RunOptions::default()
    };
    let runner = Runner {
        preset: "full",
        engine: &engine,
        answerer: &answerer,
        clock: &clock,
        options: &options,
    };
    let run = runner.run(conversation, true, &|_| {}).unwrap();
    assert_eq!(run.turns, 6);
    let finals: Vec<_> = run.asks.iter().filter(|a| a.final_ask).collect();
    assert_eq!(finals.len(), 2);
    for ask in &finals {
        // FullMemory holds the whole short dialogue: every gold turn is in context.
        assert!(ask.evidence_in_context, "{ask:?}");
        assert_eq!(ask.recall_at[2], 1.0);
        assert_eq!(ask.answer_in_context, Some(true));
        assert!(ask.answer_f1.is_some());
    }
    // A checkpoint ask sees only what came before it: never the Kyoto trip (the last item).
    let early: Vec<_> = run.asks.iter().filter(|a| !a.final_ask).collect();
    assert!(!early.is_empty());
    for ask in early {
        assert!(ask.items_observed < 6);
        assert!(!ask.context_text.contains("Kyoto"), "{}", ask.context_text);
    }
    // The clock followed the stream, not the wall: it reads the last item's time.
    assert_eq!(
        mnemos_core::Clock::now(&clock),
        Timestamp(1_700_000_000_000 + 4 * DAY)
    );
    assert!(run.sizes.last().unwrap().memories >= 6);
    // Purged afterwards: the user has nothing left.
    let user = mnemos_core::UserKey::new("eval", "toy-1").unwrap();
    assert_eq!(engine.stats(&user, "eval").unwrap().total_memories, 0);
}

#[test]
fn observation_hides_assistant_turns_from_the_engine() {
    let spec = ProtocolSpec {
        scenario: Scenario::Observation,
        ..ProtocolSpec::default()
    };
    let prepared = prepare(&dataset(), &spec, &mnemos_engine::primitives::tokens).unwrap();
    let clock = StreamClock::new();
    let engine = engine("full", &clock);
    let answerer = OfflineModel::new(Arc::new(HashEmbedder::new(256).unwrap()));
    let options = RunOptions::default();
    let runner = Runner {
        preset: "full",
        engine: &engine,
        answerer: &answerer,
        clock: &clock,
        options: &options,
    };
    let run = runner
        .run(&prepared.conversations[0], false, &|_| {})
        .unwrap();
    assert_eq!(run.turns, 4);
    for ask in &run.asks {
        assert!(!ask.context_text.contains("great name for a cat"));
    }
}
