//! The experiment runner and the report functions over a real engine with the hash embedder
//! and the offline model (no neural model, no network): every engine over every
//! conversation, the hook before the purge, progress, and the same numbers from either store.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::cell::RefCell;
use std::sync::Arc;

use mnemos_core::{Embedder, MemoryFilter, Metadata, Role, Timestamp};
use mnemos_embed::HashEmbedder;
use mnemos_eval::experiment::{
    ignore_progress, stream_only, Experiment, Progress, SharedEmbedder, StoreKind,
};
use mnemos_eval::protocol::{prepare, ProtocolSpec, Scenario};
use mnemos_eval::report::run::{evaluate, RunSettings};
use mnemos_eval::report::{Comparison, OutputOptions};
use mnemos_eval::runner::RunOptions;
use mnemos_eval::{Conversation, EvalError, Item, Question, QuestionDataset, RetrievalDataset};
use mnemos_presets::variants::{DefaultPresets, SelectionSpec};
use mnemos_setup::{Config, EmbedderChoice};

const DAY: i64 = 86_400_000;

fn item(label: &str, role: Role, text: &str, day: i64) -> Item {
    Item {
        label: label.into(),
        role,
        speaker: Some(if role == Role::User { "Ann" } else { "Bot" }.into()),
        text: text.into(),
        time: Some(Timestamp(1_700_000_000_000 + day * DAY)),
        session: format!("s{}", day / 2),
        metadata: Metadata::new(),
    }
}

fn question(id: &str, text: &str, gold: &str, answer: &str) -> Question {
    Question {
        id: id.into(),
        text: text.into(),
        answer: Some(answer.into()),
        gold: vec![gold.into()],
        category: "single-hop".into(),
        memory_type: None,
        after_item: 4,
        time: None,
        choices: Vec::new(),
        correct_choice: None,
        as_of: None,
        metadata: Metadata::new(),
    }
}

/// Two short conversations, one question each.
fn dataset() -> RetrievalDataset {
    let mut d: RetrievalDataset = serde_json::from_value(serde_json::json!({
        "name": "toy", "conversations": [], "excluded": {}, "defects": []
    }))
    .unwrap();
    d.conversations.push(Conversation {
        id: "toy-1".into(),
        items: vec![
            item("a", Role::User, "My sister Mia lives in Lisbon.", 0),
            item("b", Role::Assistant, "Lisbon is lovely.", 0),
            item("c", Role::User, "I adopted a grey cat called Pixel.", 2),
            item("d", Role::Assistant, "Pixel is a great name.", 2),
        ],
        questions: vec![question("q1", "What is my cat called?", "c", "Pixel")],
    });
    d.conversations.push(Conversation {
        id: "toy-2".into(),
        items: vec![
            item(
                "a",
                Role::User,
                "We are planning a trip to Kyoto in April.",
                0,
            ),
            item("b", Role::Assistant, "Kyoto in spring is beautiful.", 0),
            item("c", Role::User, "Work has been busy with the report.", 2),
            item("d", Role::Assistant, "Good luck with it.", 2),
        ],
        questions: vec![question("q2", "Where is the trip?", "a", "Kyoto")],
    });
    d
}

fn hash_config() -> Config {
    let mut config = Config::default();
    config.set_embedder(EmbedderChoice::Hash).unwrap();
    config.tenant = "eval".into();
    config
}

fn hash_embedder() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(256).unwrap())
}

#[test]
fn every_engine_runs_every_conversation_and_the_hook_sees_the_memories() {
    let config = hash_config();
    let prepared = prepare(
        &dataset(),
        &ProtocolSpec::default(),
        &mnemos_engine::primitives::tokens,
    )
    .unwrap();
    let selection = SelectionSpec {
        presets: Some(vec!["full".into()]),
        sweeps: vec!["recent.window=1,2".into()],
        variants: Vec::new(),
    }
    .expand(&config.engine, DefaultPresets::Every)
    .unwrap();
    let events = RefCell::new(Vec::new());
    let progress = |event: Progress<'_>| events.borrow_mut().push(format!("{event:?}"));
    let options = RunOptions::default();
    let experiment = Experiment::new(
        &config,
        StoreKind::Memory,
        &options,
        hash_embedder(),
        &progress,
    )
    .unwrap();
    let outcomes = experiment
        .run(
            &selection.engines,
            &prepared.conversations,
            |context, run| {
                let memories = context
                    .engine
                    .reader()
                    .all(context.user, &MemoryFilter::active())?;
                Ok((
                    context.index,
                    context.preset.to_string(),
                    memories.len(),
                    run.turns,
                ))
            },
        )
        .unwrap();
    let names: Vec<&str> = outcomes.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["full", "recent[window=1]", "recent[window=2]"]);
    for outcome in &outcomes {
        assert_eq!(outcome.summary.conversations, 2);
        assert_eq!(outcome.summary.turns, 8);
        assert_eq!(outcome.summary.overall.asks, 2);
        let seen: Vec<usize> = outcome.conversations.iter().map(|c| c.0).collect();
        assert_eq!(seen, [0, 1]);
        for (_, preset, memories, turns) in &outcome.conversations {
            assert_eq!(preset, &outcome.name);
            // Each turn is a memory while the hook runs (the purge comes after).
            assert!(*memories >= 4, "{memories}");
            assert_eq!(*turns, 4);
        }
    }
    // full holds the whole dialogue: both gold turns are recalled.
    assert_eq!(outcomes[0].summary.overall.evidence_in_context, 1.0);
    let events = events.into_inner();
    let stages = events.iter().filter(|e| e.starts_with("Stage {")).count();
    assert_eq!(stages, 3);
    assert!(events
        .iter()
        .any(|e| e.contains("Note") && e.contains("recent[window=2]")));
}

#[test]
fn a_failing_hook_stops_the_experiment() {
    let config = hash_config();
    let conversations: Vec<_> = dataset()
        .conversations
        .into_iter()
        .map(stream_only)
        .collect();
    let selection = SelectionSpec {
        presets: Some(vec!["retrieval".into()]),
        ..SelectionSpec::default()
    }
    .expand(&config.engine, DefaultPresets::Every)
    .unwrap();
    let options = RunOptions::default();
    let experiment = Experiment::new(
        &config,
        StoreKind::Memory,
        &options,
        hash_embedder(),
        &ignore_progress,
    )
    .unwrap();
    let result = experiment.run(&selection.engines, &conversations, |context, _| {
        if context.index == 1 {
            return Err(EvalError::Invalid("stop".into()));
        }
        Ok(())
    });
    assert!(matches!(result, Err(EvalError::Invalid(ref m)) if m == "stop"));
}

#[test]
fn a_warm_cache_embeds_each_text_once_and_reports_its_cost() {
    let shared =
        SharedEmbedder::warm(hash_embedder(), &["a b", "c d", "a b"], &ignore_progress).unwrap();
    let cache = shared.cache.as_ref().unwrap();
    assert_eq!(cache.cost().0, 2);
    assert!(shared.ms_per_text().is_some());
}

fn write_dataset(dir: &std::path::Path) -> std::path::PathBuf {
    // A LoCoMo-shaped file the loader reads: two sessions, one question.
    let path = dir.join("locomo_toy.json");
    let conversation = serde_json::json!([{
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Pixel is a great name."}
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "We are going to Kyoto in April."},
                {"speaker": "Bob", "dia_id": "D2:2", "text": "Kyoto in spring is lovely."}
            ]
        },
        "qa": [
            {"question": "What is Ann's cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Where is Ann going in April?", "answer": "Kyoto", "evidence": ["D2:1"], "category": 4}
        ]
    }]);
    std::fs::write(&path, conversation.to_string()).unwrap();
    path
}

fn run_settings(path: std::path::PathBuf, store: StoreKind) -> RunSettings {
    RunSettings {
        path,
        dataset: QuestionDataset::Auto,
        compare: Comparison {
            engines: SelectionSpec {
                presets: Some(vec!["retrieval".into(), "recent".into()]),
                ..SelectionSpec::default()
            },
            store,
            batch: 1,
            output: OutputOptions::default(),
        },
        scenario: Scenario::Participation,
        noise_tokens: None,
        noise_from: None,
        seed: 42,
        sample_per_category: None,
        conversations: None,
        checkpoints: Vec::new(),
        budget: 1024,
        answer: true,
        choose: true,
        embed_cache: true,
        judge: false,
    }
}

#[test]
fn eval_run_gives_the_same_quality_on_either_store_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_dataset(dir.path());
    let config = hash_config();
    let memory = evaluate(
        &config,
        &run_settings(path.clone(), StoreKind::Memory),
        &ignore_progress,
    )
    .unwrap();
    let mut settings = run_settings(path, StoreKind::Sqlite);
    settings.compare.output.out = Some(dir.path().join("report"));
    let sqlite = evaluate(&config, &settings, &ignore_progress).unwrap();
    assert_eq!(memory.presets.len(), 2);
    for (a, b) in memory.presets.iter().zip(&sqlite.presets) {
        assert_eq!(a.preset, b.preset);
        assert_eq!(a.overall, b.overall);
    }
    assert_eq!(memory.dataset.questions, 2);
    let markdown = sqlite.markdown();
    assert!(markdown.contains("## Quality (final asks)"), "{markdown}");
    assert!(markdown.contains("| retrieval | 2 |"), "{markdown}");
    for file in [
        "report.json",
        "report.md",
        "asks.jsonl",
        "sizes.jsonl",
        "config.json",
    ] {
        assert!(dir.path().join("report").join(file).is_file(), "{file}");
    }
    // A second run refuses to overwrite the report.
    assert!(evaluate(&config, &settings, &ignore_progress).is_err());
}

/// A LoCoMo file with one 40-turn conversation and a ZH-4O directory with one 240-message
/// dialogue: hosts for the update probes.
fn write_update_hosts(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let turns: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            let speaker = if i % 2 == 0 { "Ann" } else { "Bob" };
            serde_json::json!({"speaker": speaker, "dia_id": format!("D1:{}", i + 1),
                "text": "We talked about the weather and the garden again."})
        })
        .collect();
    let locomo = dir.join("locomo_hosts.json");
    let file = serde_json::json!([{
        "sample_id": "conv-1",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 8 May, 2023", "session_1": turns},
        "qa": []
    }]);
    std::fs::write(&locomo, file.to_string()).unwrap();
    let zh4o = dir.join("zh4o");
    std::fs::create_dir_all(&zh4o).unwrap();
    let messages: Vec<serde_json::Value> = (0..240)
        .map(|i| {
            let (name, flag) = if i % 2 == 0 { ("小林", "U") } else { ("阿青", "G") };
            serde_json::json!({"sender_name": name, "text": "今天我们又聊了聊天气和花园。", "flag": flag})
        })
        .collect();
    let line = serde_json::json!({
        "role_meta": {"primary_bot_name": "阿青", "user_name": "小林"},
        "messages": messages
    });
    std::fs::write(zh4o.join("ZH-4O_dataset.jsonl"), format!("{line}\n")).unwrap();
    (locomo, zh4o)
}

#[test]
fn update_probes_show_a_keep_everything_preset_presenting_the_stale_value() {
    use mnemos_eval::report::updates::{evaluate_updates, UpdateSettings};
    use mnemos_eval::update_probes::Half;
    let dir = tempfile::tempdir().unwrap();
    let (locomo, zh4o) = write_update_hosts(dir.path());
    let settings = UpdateSettings {
        zh4o,
        locomo,
        compare: Comparison {
            engines: SelectionSpec {
                presets: Some(vec!["full".into(), "default".into()]),
                ..SelectionSpec::default()
            },
            store: StoreKind::Memory,
            batch: 20,
            output: OutputOptions {
                out: Some(dir.path().join("report")),
                overwrite: false,
            },
        },
        half: Half::Test,
        // The first four probes of each language: the residence updates (one to three).
        probes: Some(4),
        window: 36,
        session_messages: 100,
        budget: 50_000,
        seed: 5,
    };
    let report = evaluate_updates(&hash_config(), &settings, &ignore_progress).unwrap();
    assert_eq!(report.dataset.probes["en"], 4);
    assert_eq!(report.dataset.probes["zh"], 4);
    let full = &report.presets[0];
    assert_eq!(full.preset, "full");
    assert_eq!(full.overall.probes, 8);
    assert_eq!(full.by_slot.len(), 1);
    // The whole window fits the budget: every value is there, the stale ones unmarked.
    assert_eq!(
        full.overall.stale_as_current,
        Some(1.0),
        "{:?}",
        full.overall
    );
    assert_eq!(full.overall.updated, Some(0.0), "{:?}", full.overall);
    // The default preset supersedes: the stale values are gone or marked.
    let default = &report.presets[1];
    assert_eq!(
        default.overall.stale_as_current,
        Some(0.0),
        "{:#?}",
        default.probes
    );
    // One of the eight states the new home in words the rules do not read as a residence,
    // and the relevance floor keeps that turn (no word in common with the question) out.
    assert!(
        default.overall.updated.is_some_and(|u| u >= 0.85),
        "{:#?}",
        default.probes
    );
    let markdown = report.markdown();
    assert!(
        markdown.contains("| full | 8 | **0.000** | 1.000 |"),
        "{markdown}"
    );
    assert!(markdown.contains("| full | zh | 4 |"), "{markdown}");
    assert!(dir.path().join("report").join("report.md").is_file());
}
