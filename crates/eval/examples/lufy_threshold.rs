//! Calibration of the lufy preset's similarity threshold on LUFY's questions, in the manner of
//! the paper's Appendix D, for the default MiniLM embedder (the hash embedder when MiniLM is
//! not cached).
//!
//! Every session's utterance pairs (a user utterance with the bot's reply, as the preset builds
//! them) are embedded; each of the session's questions is compared with every pair. A pair
//! answers a question when the normalized gold answer appears in it or at least half of the
//! answer's words do. For each threshold: precision = answering pairs among the pairs at or
//! above it, recall = questions with an answering pair at or above it among the questions that
//! have one, and their F1.
//!
//! ```text
//! CANDLE_NUM_THREADS=2 cargo run --release -p mnemos-eval --example lufy_threshold -- \
//!     ../shared/data/lufy/lufy_sessions.json
//! ```

// A measurement program: a failed unwrap stops the run, which is what it should do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::Result;
use mnemos_core::embed::cosine;
use mnemos_core::{Embedder, Role};
use mnemos_embed::{HashEmbedder, MiniLmEmbedder};
use mnemos_eval::lufy::load_lufy;
use mnemos_eval::scoring::{answer_in_context, normalize_answer};

fn answers(answer: &str, pair: &str) -> bool {
    if answer_in_context(answer, pair) {
        return true;
    }
    let words: Vec<String> = normalize_answer(answer)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let have: HashSet<String> = normalize_answer(pair)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    !words.is_empty() && words.iter().filter(|w| have.contains(*w)).count() * 2 >= words.len()
}

fn main() -> Result<()> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "../shared/data/lufy/lufy_sessions.json".into()),
    );
    let dataset = load_lufy(&path)?;
    let minilm = mnemos_embed::resolve_model_dir(None)
        .ok()
        .and_then(|dir| MiniLmEmbedder::load(&dir).ok());
    let hash = HashEmbedder::default();
    let embedder: &dyn Embedder = match &minilm {
        Some(m) => m,
        None => {
            println!("MiniLM not cached: hash embedder");
            &hash
        }
    };
    println!("embedder: {}", embedder.id());
    // (cosine, answers) of every question × pair of its session; per question, its best.
    let mut scored: Vec<(f64, bool)> = Vec::new();
    let mut best_correct: Vec<Option<f64>> = Vec::new();
    for session in &dataset.sessions {
        let mut pairs: Vec<String> = Vec::new();
        for turn in session
            .turns
            .iter()
            .filter(|t| !t.utterance.trim().is_empty())
        {
            let line = format!("{}: {}", turn.speaker, turn.utterance);
            match (turn.role, pairs.last_mut()) {
                (Role::User, _) | (_, None) => pairs.push(line),
                (_, Some(last)) => {
                    last.push('\n');
                    last.push_str(&line);
                }
            }
        }
        if pairs.is_empty() {
            continue;
        }
        let texts: Vec<&str> = pairs.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&texts)?;
        for qa in &session.qa {
            let q = embedder.embed_batch(&[qa.question.as_str()])?.remove(0);
            let mut best: Option<f64> = None;
            for (pair, v) in pairs.iter().zip(&vectors) {
                let c = cosine(&q, v);
                let ok = answers(&qa.answer, pair);
                scored.push((c, ok));
                if ok {
                    best = Some(best.map_or(c, |b: f64| b.max(c)));
                }
            }
            best_correct.push(best);
        }
    }
    let answerable = best_correct.iter().filter(|b| b.is_some()).count();
    println!(
        "{} questions, {answerable} with an answering pair; {} question-pair comparisons",
        best_correct.len(),
        scored.len()
    );
    println!("| threshold | pairs at or above | precision | recall | F1 |");
    println!("|---|---|---|---|---|");
    let mut best = (0.0, -1.0);
    for step in 0..=18 {
        let t = f64::from(step) * 0.05;
        let above: Vec<&(f64, bool)> = scored.iter().filter(|(c, _)| *c >= t).collect();
        let correct = above.iter().filter(|(_, ok)| *ok).count();
        let precision = correct as f64 / above.len().max(1) as f64;
        let found = best_correct
            .iter()
            .filter(|b| b.is_some_and(|c| c >= t))
            .count();
        let recall = found as f64 / answerable.max(1) as f64;
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        if f1 > best.1 {
            best = (t, f1);
        }
        println!(
            "| {t:.2} | {} | {precision:.3} | {recall:.3} | {f1:.3} |",
            above.len()
        );
    }
    println!("best F1 {:.3} at threshold {:.2}", best.1, best.0);
    Ok(())
}
