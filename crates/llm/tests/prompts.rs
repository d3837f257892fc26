//! Prompt snapshots: the rendered messages of every task, for an English and a Chinese input,
//! pinned in `tests/snapshots/`. A changed prompt fails here until the snapshots are
//! regenerated on purpose: `MNEMOS_UPDATE_SNAPSHOTS=1 cargo test -p mnemos-llm --test prompts`.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod fixtures;

use std::path::PathBuf;

use mnemos_llm::prompts;

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots")
}

/// Compare `actual` with the pinned file `name`; write it instead when regenerating.
fn assert_snapshot(name: &str, actual: &str) -> Result<(), String> {
    let path = snapshot_dir().join(name);
    if std::env::var_os("MNEMOS_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(snapshot_dir()).map_err(|e| e.to_string())?;
        std::fs::write(&path, actual).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let pinned = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run with MNEMOS_UPDATE_SNAPSHOTS=1 to create it)",
            path.display()
        )
    })?;
    if pinned == actual {
        return Ok(());
    }
    let line = pinned
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| pinned.lines().count().min(actual.lines().count()));
    Err(format!(
        "{} differs from the rendered prompt at line {}:\n  pinned: {:?}\n  now:    {:?}\n\
         (regenerate with MNEMOS_UPDATE_SNAPSHOTS=1 if the change is intended)",
        path.display(),
        line + 1,
        pinned.lines().nth(line).unwrap_or("<end>"),
        actual.lines().nth(line).unwrap_or("<end>")
    ))
}

fn render(task: &mnemos_core::Task) -> String {
    let mut text =
        serde_json::to_string_pretty(&prompts::render(task)).expect("messages serialize");
    text.push('\n');
    text
}

#[test]
fn every_task_prompt_matches_its_snapshot() {
    let mut failures = Vec::new();
    for (lang, cases) in [("en", fixtures::english()), ("zh", fixtures::chinese())] {
        fixtures::check_coverage(&cases);
        for case in &cases {
            let name = format!("{}.{lang}.json", case.task.name());
            if let Err(e) = assert_snapshot(&name, &render(&case.task)) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn chinese_prompts_quote_the_input_untranslated() {
    for case in fixtures::chinese() {
        let rendered = prompts::render(&case.task);
        let user = &rendered[1].content;
        for text in case.task.texts() {
            if !text.trim().is_empty() {
                assert!(user.contains(text), "{}: {text} missing", case.task.name());
            }
        }
        assert!(rendered[0]
            .content
            .ends_with(&format!("mnemos_task={}", case.task.name())));
    }
}

#[test]
fn snapshot_compare_fails_on_a_changed_prompt() {
    if std::env::var_os("MNEMOS_UPDATE_SNAPSHOTS").is_some() {
        return;
    }
    let case = &fixtures::english()[0];
    let changed = render(&case.task).replace("Summarize", "Condense");
    let err = assert_snapshot("summarize.en.json", &changed).unwrap_err();
    assert!(err.contains("differs"), "{err}");
    assert!(assert_snapshot("no-such-task.en.json", "{}").is_err());
}
