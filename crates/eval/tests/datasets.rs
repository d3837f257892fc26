//! Loads the real benchmark files from `shared/data` beside the repository and checks their
//! counts. The datasets are never copied into the repository; CI provides them there (and sets
//! `MNEMOS_REQUIRE_DATA=1`, so a missing one fails); elsewhere a test without them says it was
//! skipped (`mnemos_testkit::data`).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::HashSet;

use mnemos_core::Role;
use mnemos_testkit::data::{self, MissingData};

use mnemos_eval::{
    load_locomo, load_memdaily, load_perltqa_dir, sniff_format, DefectAction, Format, MemoryClass,
    RetrievalDataset,
};

fn defects(dataset: &RetrievalDataset, action: DefectAction) -> usize {
    dataset
        .defects
        .iter()
        .filter(|d| d.action == action)
        .count()
}

/// Invariants every loader guarantees.
fn check_invariants(dataset: &RetrievalDataset) {
    let mut question_ids = HashSet::new();
    for conversation in &dataset.conversations {
        let labels: HashSet<&str> = conversation
            .items
            .iter()
            .map(|i| i.label.as_str())
            .collect();
        assert_eq!(
            labels.len(),
            conversation.items.len(),
            "{}: duplicate labels",
            conversation.id
        );
        for item in &conversation.items {
            assert!(
                !item.text.trim().is_empty(),
                "{} {}",
                conversation.id,
                item.label
            );
        }
        for question in &conversation.questions {
            assert!(question_ids.insert(question.id.clone()), "{}", question.id);
            assert!(!question.gold.is_empty(), "{}", question.id);
            assert!(question.after_item <= conversation.items.len());
            for gold in &question.gold {
                assert!(labels.contains(gold.as_str()), "{}: {gold}", question.id);
            }
            let unique: HashSet<&String> = question.gold.iter().collect();
            assert_eq!(unique.len(), question.gold.len(), "{}", question.id);
        }
    }
}

#[test]
fn locomo_counts() -> Result<(), MissingData> {
    let Some(path) = data::dataset("locomo/locomo10_dev.json")? else {
        return Ok(());
    };
    assert_eq!(sniff_format(&path).ok(), Some(Format::Locomo));
    let dataset = load_locomo(&path).expect("LoCoMo loads");
    let summary = dataset.summary();
    println!("{summary}");
    for defect in &dataset.defects {
        println!("  {defect}");
    }
    check_invariants(&dataset);

    let ids: Vec<&str> = dataset
        .conversations
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]);
    assert_eq!(summary.items, 2760);
    // 999 questions: 237 adversarial excluded, 2 without evidence skipped.
    assert_eq!(summary.excluded, 237);
    assert_eq!(summary.questions, 760);
    assert_eq!(defects(&dataset, DefectAction::SkippedQuestion), 2);
    // "D10:19" (no such turn), "D" and "D:11:26" (malformed).
    assert_eq!(defects(&dataset, DefectAction::DroppedReference), 3);
    assert_eq!(summary.defects, 5);
    assert_eq!(summary.questions_by_category.get("single-hop"), Some(&418));
    assert_eq!(summary.questions_by_category.get("multi-hop"), Some(&142));
    assert_eq!(summary.questions_by_category.get("temporal"), Some(&156));
    assert_eq!(summary.questions_by_category.get("open-domain"), Some(&44));

    let conv26 = &dataset.conversations[0];
    assert_eq!(conv26.items[0].label, "D1:1");
    assert_eq!(conv26.items[0].role, Role::User);
    assert!(conv26.items.iter().all(|i| i.time.is_some()));
    assert!(conv26.items.windows(2).all(|w| w[0].time < w[1].time));
    let d1_5 = conv26.item("D1:5").expect("D1:5 exists");
    assert!(d1_5
        .text
        .ends_with("[image: a photo of a dog walking past a wall with a painting of a woman]"));
    // "D8:6; D9:17" is split into two gold ids.
    let q37 = conv26
        .questions
        .iter()
        .find(|q| q.id == "conv-26/q37")
        .expect("q37 kept");
    assert_eq!(q37.gold, ["D8:6", "D9:17"]);
    Ok(())
}

#[test]
fn memdaily_counts() -> Result<(), MissingData> {
    let Some(path) = data::dataset("memdaily/memdaily.json")? else {
        return Ok(());
    };
    assert_eq!(sniff_format(&path).ok(), Some(Format::MemDaily));
    let dataset = load_memdaily(&path).expect("MemDaily loads");
    let summary = dataset.summary();
    println!("{summary}");
    for defect in dataset.defects.iter().take(5) {
        println!("  {defect}");
    }
    check_invariants(&dataset);

    assert_eq!(summary.conversations, 2954);
    assert_eq!(summary.items, 26003);
    assert_eq!(summary.questions, 2954);
    assert_eq!(summary.excluded, 0);
    // Every target id is valid; the only defects are kept time anomalies:
    // 188 trajectories whose message times go backwards, 20 questions timed before a message.
    assert_eq!(defects(&dataset, DefectAction::Kept), 208);
    assert_eq!(summary.defects, 208);
    for (qa_type, count) in [
        ("simple", 500),
        ("conditional", 500),
        ("comparative", 492),
        ("aggregative", 462),
        ("post_processing", 500),
        ("noisy", 500),
    ] {
        assert_eq!(
            summary.questions_by_category.get(qa_type),
            Some(&count),
            "{qa_type}"
        );
    }
    let first = &dataset.conversations[0];
    assert_eq!(first.id, "simple/roles/0");
    let question = &first.questions[0];
    assert_eq!(question.after_item, first.items.len());
    assert_eq!(question.choices.len(), 4);
    assert!(question.correct_choice.is_some());
    assert!(dataset
        .questions()
        .all(|(_, q)| q.correct_choice.is_some() && q.time.is_some()));
    Ok(())
}

#[test]
fn perltqa_counts() -> Result<(), MissingData> {
    let Some(dir) = data::dataset("perltqa")? else {
        return Ok(());
    };
    assert_eq!(sniff_format(&dir).ok(), Some(Format::PerLtqa));
    let dataset = load_perltqa_dir(&dir).expect("PerLTQA loads");
    let summary = dataset.summary();
    println!("{summary}");
    for defect in &dataset.defects {
        println!("  {defect}");
    }
    check_invariants(&dataset);

    let ids: Vec<&str> = dataset
        .conversations
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["Wang Xiaoming", "Zhang Xiaohong", "Xu Jia"]);
    // 42 profile fields (Xu Jia's Title is empty), 27 relationships, 70 events, 64 dialogues.
    assert_eq!(summary.items, 203);
    assert_eq!(summary.questions, 649);
    assert_eq!(summary.defects, 0);
    let count = |session: &str| {
        dataset
            .conversations
            .iter()
            .flat_map(|c| &c.items)
            .filter(|i| i.session == session)
            .count()
    };
    assert_eq!(
        (
            count("profile"),
            count("relationship"),
            count("event"),
            count("dialogue")
        ),
        (42, 27, 70, 64)
    );
    for (group, questions) in [
        ("profile", 38),
        ("social_relationship", 54),
        ("events", 282),
        ("dialogues", 275),
    ] {
        assert_eq!(
            summary.questions_by_category.get(group),
            Some(&questions),
            "{group}"
        );
    }
    let semantic = dataset
        .questions()
        .filter(|(_, q)| q.memory_type == Some(MemoryClass::Semantic))
        .count();
    assert_eq!(semantic, 38 + 54);
    // HTML entities are decoded everywhere.
    for (conversation, question) in dataset.questions() {
        for text in [Some(&question.text), question.answer.as_ref()]
            .into_iter()
            .flatten()
        {
            assert!(
                !text.contains("&#39;") && !text.contains("&quot;"),
                "{}",
                question.id
            );
        }
        for item in &conversation.items {
            assert!(!item.text.contains("&#39;") && !item.text.contains("&quot;"));
        }
    }
    Ok(())
}
