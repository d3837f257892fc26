//! Latency (p50) of the offline model's tasks on real dialogue, with a sample of their output:
//! summarize and categorize per LoCoMo session and per 30-message ZH-4O window, conflict
//! detection and merging on adjacent lines (and how many same-speaker pairs are flagged),
//! sufficient / helps / answer / choose on LoCoMo questions, and compress / recoverable on the
//! longer turns. The first LoCoMo conversation (10 sessions) and the first ZH-4O dialogue.
//!
//! ```text
//! CANDLE_NUM_THREADS=1 cargo run --release -p mnemos-offline --example task_latency -- [DATA_DIR]
//! ```
//!
//! `DATA_DIR` holds `locomo/locomo10_dev.json` and `zh4o/ZH-4O_dataset.jsonl` (default:
//! `$MNEMOS_DATA`, else `shared/data` beside the repository). MiniLM embeds when its files are
//! cached, else the hash embedder; one candle thread per worker, as the binary runs it.

// A measurement program: a failed unwrap stops the run, which is what it should do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mnemos_core::memory_model::Line;
use mnemos_core::{Embedder, Role};
use mnemos_embed::{HashEmbedder, MiniLmEmbedder};
use mnemos_offline::{categorize, compress, conflict, relevance, summarize, Ctx};

use common::p50;

fn main() -> Result<()> {
    let data = common::data_dir()?;
    let locomo_path = data.join(common::LOCOMO);
    let conversation = common::locomo_first(&locomo_path)?;
    let minilm = mnemos_embed::resolve_model_dir(None)
        .ok()
        .and_then(|dir| MiniLmEmbedder::load(&dir).ok());
    let hash = HashEmbedder::default();
    let embedder: &dyn Embedder = match &minilm {
        Some(m) => m,
        None => &hash,
    };
    println!("embedder: {}", embedder.id());
    let ctx = Ctx {
        analyzer: mnemos_text::Analyzer::shared(),
        embedder,
    };
    let sessions: Vec<Vec<Line>> = common::locomo_sessions(&conversation)
        .iter()
        .take(10)
        .map(|s| {
            s.iter()
                .map(|(who, text)| Line::new(Role::User, Some(who), text.clone()))
                .collect()
        })
        .collect();
    summaries_and_topics(&ctx, &sessions)?;
    let lines: Vec<&Line> = sessions.iter().flatten().collect();
    conflicts(&ctx, &lines)?;
    chinese_dialogue(&ctx, &data.join(common::ZH4O))?;
    relevance_tasks(&ctx, &sessions, &common::locomo_questions(&conversation))?;
    compression(&ctx, &lines)
}

/// Summarize (120 tokens) and categorize each session; the first session's output shown.
fn summaries_and_topics(ctx: &Ctx, sessions: &[Vec<Line>]) -> Result<()> {
    let mut times = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let text = vec![s.iter().map(Line::render).collect::<Vec<_>>().join("\n")];
        let t = Instant::now();
        let out = summarize::summarize(ctx, &text, 1, 120)?;
        times.push(t.elapsed());
        if i == 0 {
            println!("--- summary of session 1 ({} lines):\n{out}", s.len());
        }
    }
    println!("summarize (session, 120 tokens): p50 {:?}", p50(times));

    let mut times = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let t = Instant::now();
        let cats = categorize::categorize(ctx, s)?;
        times.push(t.elapsed());
        if i == 0 {
            for c in &cats {
                println!("--- [{}] lines {:?}\n{}", c.category, c.lines, c.summary);
            }
        }
    }
    println!("categorize (session): p50 {:?}", p50(times));
    Ok(())
}

/// Conflicts and merges of adjacent lines, then how often same-speaker pairs across the
/// conversation are flagged (a precision check: few should be).
fn conflicts(ctx: &Ctx, lines: &[&Line]) -> Result<()> {
    let (mut ct, mut mt, mut flagged) = (Vec::new(), Vec::new(), 0);
    let adjacent: Vec<(&Line, &Line)> = lines.windows(2).take(200).map(|p| (p[0], p[1])).collect();
    for (a, b) in &adjacent {
        let t = Instant::now();
        flagged += usize::from(conflict::conflicts(ctx, &a.text, &b.text)?);
        ct.push(t.elapsed());
        let t = Instant::now();
        conflict::merge(ctx, &a.text, &b.text)?;
        mt.push(t.elapsed());
    }
    println!(
        "conflicts (adjacent lines): p50 {:?} ({flagged}/{} flagged); merge: p50 {:?}",
        p50(ct),
        adjacent.len(),
        p50(mt)
    );

    let (mut flagged, mut pairs, mut shown) = (0, 0, 0);
    for (i, a) in lines.iter().enumerate().step_by(3) {
        for b in lines.iter().skip(i + 1).step_by(7).take(40) {
            if a.speaker != b.speaker {
                continue;
            }
            pairs += 1;
            if conflict::conflicts(ctx, &a.text, &b.text)? {
                flagged += 1;
                if shown < 8 {
                    shown += 1;
                    println!("    conflict: {} | {}", a.text, b.text);
                }
            }
        }
    }
    println!("conflicts on same-speaker pairs: {flagged}/{pairs} flagged");
    Ok(())
}

/// Summaries and topics of 30-message windows of the first ZH-4O dialogue, when present.
fn chinese_dialogue(ctx: &Ctx, path: &Path) -> Result<()> {
    if !path.is_file() {
        println!("ZH-4O not found at {}", path.display());
        return Ok(());
    }
    let data = common::zh4o_dialogue(path, 0)?;
    let messages: Vec<Line> = data["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some(Line::new(
                Role::User,
                Some(m["sender_name"].as_str()?),
                m["text"].as_str()?.to_string(),
            ))
        })
        .collect();
    let (mut st, mut ct) = (Vec::new(), Vec::new());
    for (w, window) in messages.chunks(30).take(8).enumerate() {
        let text = vec![window
            .iter()
            .map(Line::render)
            .collect::<Vec<_>>()
            .join("\n")];
        let t = Instant::now();
        let summary = summarize::summarize(ctx, &text, 1, 120)?;
        st.push(t.elapsed());
        let t = Instant::now();
        let cats = categorize::categorize(ctx, window)?;
        ct.push(t.elapsed());
        if w == 1 {
            println!("--- ZH summary (30 messages):\n{summary}");
            for c in &cats {
                println!("--- [{}] lines {:?}\n{}", c.category, c.lines, c.summary);
            }
        }
    }
    println!(
        "ZH-4O 30-message windows: summarize p50 {:?}, categorize p50 {:?}",
        p50(st),
        p50(ct)
    );
    Ok(())
}

/// Per-task latencies of the question tasks.
#[derive(Default)]
struct QuestionTimes {
    sufficient: Vec<Duration>,
    helps: Vec<Duration>,
    answer: Vec<Duration>,
    choose: Vec<Duration>,
}

/// The first 60 questions: memories are the evidence turn and its 9 neighbours; the options
/// are the answer and 3 other questions' answers.
fn relevance_tasks(
    ctx: &Ctx,
    sessions: &[Vec<Line>],
    questions: &[(String, String, String)],
) -> Result<()> {
    let mut times = QuestionTimes::default();
    let (mut correct, mut asked, mut enough) = (0, 0, 0);
    for (k, (question, answer, evidence)) in questions.iter().enumerate().take(60) {
        let Some((si, li)) = evidence_position(evidence) else {
            continue;
        };
        let Some(session) = sessions.get(si) else {
            continue;
        };
        let lo = li.saturating_sub(5);
        let memories: Vec<String> = session.iter().skip(lo).take(10).map(Line::render).collect();
        let Some((first, rest)) = memories.split_first() else {
            continue;
        };
        let t = Instant::now();
        enough += usize::from(relevance::sufficient(ctx, question, &memories)?);
        times.sufficient.push(t.elapsed());
        let t = Instant::now();
        relevance::helps(ctx, question, rest, first)?;
        times.helps.push(t.elapsed());
        let t = Instant::now();
        let reply = relevance::answer(ctx, question, &memories)?;
        times.answer.push(t.elapsed());
        if k < 3 {
            println!("--- Q: {question}\n    gold: {answer}\n    answer: {reply}");
        }
        let mut options: Vec<String> = (1..=3)
            .map(|d| questions[(k + d * 7) % questions.len()].1.clone())
            .collect();
        let gold = k % 4;
        options.insert(gold, answer.clone());
        let t = Instant::now();
        let pick = relevance::choose(ctx, question, &options, &memories)?;
        times.choose.push(t.elapsed());
        asked += 1;
        correct += usize::from(pick == gold);
    }
    println!(
        "sufficient: p50 {:?} ({enough}/{asked} sufficient); helps: p50 {:?}; answer: p50 {:?}",
        p50(times.sufficient),
        p50(times.helps),
        p50(times.answer)
    );
    println!(
        "choose (4 options, 10 memories): p50 {:?}; accuracy {correct}/{asked}",
        p50(times.choose)
    );
    Ok(())
}

/// "D3:7" → (session 2, line 6), 0-based.
fn evidence_position(id: &str) -> Option<(usize, usize)> {
    let (d, n) = id.trim_start_matches('D').split_once(':')?;
    Some((
        d.parse::<usize>().ok()?.checked_sub(1)?,
        n.trim().parse::<usize>().ok()?.checked_sub(1)?,
    ))
}

/// Compression of the turns of 25 words or more (shorter ones come back unchanged).
fn compression(ctx: &Ctx, lines: &[&Line]) -> Result<()> {
    let long_turns: Vec<&str> = lines
        .iter()
        .map(|l| l.text.as_str())
        .filter(|t| t.split_whitespace().count() >= 25)
        .take(100)
        .collect();
    let (mut cpt, mut rt, mut kept, mut ok) = (Vec::new(), Vec::new(), 0usize, 0usize);
    let total: usize = long_turns.iter().map(|t| t.len()).sum();
    for text in &long_turns {
        let t = Instant::now();
        let short = compress::compress(ctx, text).context("compress")?;
        cpt.push(t.elapsed());
        kept += short.len();
        let t = Instant::now();
        ok += usize::from(compress::recoverable(ctx, text, &short)?);
        rt.push(t.elapsed());
    }
    println!(
        "compress ({} turns of >= 25 words): p50 {:?}, kept {:.0}% of bytes; recoverable: p50 {:?} ({ok}/{} recoverable)",
        long_turns.len(),
        p50(cpt),
        100.0 * kept as f64 / total.max(1) as f64,
        p50(rt),
        long_turns.len()
    );
    Ok(())
}
