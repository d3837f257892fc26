//! Persona extraction on real dialogue: the values found per key, the first 40 with the line
//! they came from, and the latency per window of 10 lines, on the first LoCoMo conversation
//! (its first speaker as the user) and on ZH-4O dialogue 3 (the one with the most first-person
//! statements by the user).
//!
//! ```text
//! cargo run --release -p mnemos-offline --example persona_measure -- [DATA_DIR]
//! ```
//!
//! `DATA_DIR` holds `locomo/locomo10_dev.json` and `zh4o/ZH-4O_dataset.jsonl` (default:
//! `$MNEMOS_DATA`, else `shared/data` beside the repository); a missing file is skipped.

// A measurement program: a failed unwrap stops the run, which is what it should do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;
use mnemos_core::memory_model::{Line, PersonaSchema};
use mnemos_core::Role;
use mnemos_embed::HashEmbedder;
use mnemos_offline::persona::persona_snapshot;
use mnemos_offline::Ctx;
use mnemos_text::Analyzer;
use serde_json::Value;

fn main() -> Result<()> {
    let data = common::data_dir()?;
    let locomo_path = data.join(common::LOCOMO);
    if locomo_path.is_file() {
        let conversation = common::locomo_first(&locomo_path)?;
        let lines = locomo_lines(&conversation);
        measure(&format!("LoCoMo {}", conversation["sample_id"]), &lines)?;
    } else {
        println!("{} missing: LoCoMo skipped", locomo_path.display());
    }
    let zh_path = data.join(common::ZH4O);
    if zh_path.is_file() {
        let dialogue = common::zh4o_dialogue(&zh_path, 3)?;
        let lines = zh4o_lines(&dialogue);
        measure(
            &format!("ZH-4O dialogue 3 ({})", dialogue["role_meta"]),
            &lines,
        )?;
    } else {
        println!("{} missing: ZH-4O skipped", zh_path.display());
    }
    Ok(())
}

/// Every turn of every session (gaps in the session numbers tolerated up to 40), the first
/// speaker as the user.
fn locomo_lines(conversation: &Value) -> Vec<Line> {
    let conv = &conversation["conversation"];
    let speaker_a = conv["speaker_a"].as_str().unwrap_or("A").to_string();
    let mut lines = Vec::new();
    for n in 1.. {
        let Some(session) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
            if n > 40 {
                break;
            }
            continue;
        };
        for turn in session {
            let speaker = turn["speaker"].as_str().unwrap_or("");
            let role = if speaker == speaker_a {
                Role::User
            } else {
                Role::Other
            };
            lines.push(Line::new(
                role,
                Some(speaker),
                turn["text"].as_str().unwrap_or(""),
            ));
        }
    }
    lines
}

/// The dialogue's messages: flag `U` is the user, `G…` the assistant, anything else other.
fn zh4o_lines(dialogue: &Value) -> Vec<Line> {
    let mut lines = Vec::new();
    for m in dialogue["messages"].as_array().into_iter().flatten() {
        let role = match m["flag"].as_str().unwrap_or("") {
            "U" => Role::User,
            f if f.starts_with('G') => Role::Assistant,
            _ => Role::Other,
        };
        let speaker = m["sender_name"].as_str();
        lines.push(Line::new(role, speaker, m["text"].as_str().unwrap_or("")));
    }
    lines
}

fn measure(name: &str, lines: &[Line]) -> Result<()> {
    let embedder = HashEmbedder::default();
    let ctx = Ctx {
        analyzer: Analyzer::shared(),
        embedder: &embedder,
    };
    let schema = PersonaSchema::default_keys();
    let mut micros = Vec::new();
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut shown = 0;
    println!("== {name}: {} lines, windows of 10", lines.len());
    for (w, window) in lines.chunks(10).enumerate() {
        let started = Instant::now();
        let values = persona_snapshot(&ctx, window, &schema)?;
        micros.push(started.elapsed().as_secs_f64() * 1e6);
        for v in values {
            *per_key.entry(v.key.clone()).or_default() += 1;
            if shown < 40 {
                let line = v.line.and_then(|i| window.get(i));
                let who = line.and_then(|l| l.speaker.clone()).unwrap_or_default();
                let text: String = line
                    .map(|l| l.text.chars().take(70).collect())
                    .unwrap_or_default();
                println!(
                    "  [{:>4}] {who}: {:<14} = {:<32} <- {text}",
                    w * 10 + v.line.unwrap_or(0),
                    v.key,
                    v.value
                );
                shown += 1;
            }
        }
    }
    micros.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        micros
            .get(((micros.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!("  values per key: {per_key:?}");
    println!(
        "  {} windows; latency per window of 10 lines: p50 {:.1} µs, p95 {:.1} µs, max {:.1} µs",
        micros.len(),
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );
    Ok(())
}
