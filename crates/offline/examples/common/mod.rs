//! What the examples share: where the datasets are and how to read the dialogues in them.
#![allow(dead_code)] // each example uses a part

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The LoCoMo dev file, relative to the data directory.
pub const LOCOMO: &str = "locomo/locomo10_dev.json";
/// The ZH-4O dialogues (JSONL, one dialogue a line), relative to the data directory.
pub const ZH4O: &str = "zh4o/ZH-4O_dataset.jsonl";

/// The data directory: the first argument, else `$MNEMOS_DATA`, else the first `shared/data`
/// beside an ancestor of this crate.
pub fn data_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::args().nth(1) {
        return Ok(dir.into());
    }
    if let Ok(dir) = std::env::var("MNEMOS_DATA") {
        return Ok(dir.into());
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared").join("data"))
        .find(|d| d.is_dir())
        .context("no data directory: pass one as the first argument or set MNEMOS_DATA")
}

fn read_json(path: &Path) -> Result<Value> {
    let raw =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&raw).with_context(|| format!("{} is not JSON", path.display()))
}

/// The first conversation of the LoCoMo file.
pub fn locomo_first(path: &Path) -> Result<Value> {
    match read_json(path)? {
        Value::Array(mut conversations) if !conversations.is_empty() => {
            Ok(conversations.swap_remove(0))
        }
        _ => bail!("{}: no conversation", path.display()),
    }
}

/// Its sessions in order (`session_1`, `session_2`, … up to the first missing one), each as
/// (speaker, text) turns.
pub fn locomo_sessions(conversation: &Value) -> Vec<Vec<(String, String)>> {
    let mut sessions = Vec::new();
    for n in 1.. {
        let Some(turns) = conversation["conversation"]
            .get(format!("session_{n}"))
            .and_then(Value::as_array)
        else {
            break;
        };
        let session = turns
            .iter()
            .filter_map(|t| {
                Some((
                    t.get("speaker")?.as_str()?.to_string(),
                    t.get("text")?.as_str()?.to_string(),
                ))
            })
            .collect();
        sessions.push(session);
    }
    sessions
}

/// Its questions with a text answer or a number: (question, answer, first evidence id "D1:3").
pub fn locomo_questions(conversation: &Value) -> Vec<(String, String, String)> {
    let items = conversation["qa"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|q| {
            let answer = match &q["answer"] {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            let evidence = q["evidence"].as_array()?.first()?.as_str()?.to_string();
            Some((q["question"].as_str()?.to_string(), answer, evidence))
        })
        .collect()
}

/// Dialogue `index` (0-based) of the ZH-4O file.
pub fn zh4o_dialogue(path: &Path, index: usize) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(row) = text.lines().nth(index) else {
        bail!("{}: no dialogue {index}", path.display());
    };
    serde_json::from_str(row).with_context(|| format!("{}: dialogue {index}", path.display()))
}

/// The median of `times`.
pub fn p50(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default()
}
