//! The memory model's signals of one user utterance, computed the same way by the preset and
//! by `mnemos train lufy` (so fitted weights apply to what the preset measures).

use mnemos_core::memory_model::{Line, MAX_TASK_BYTES};
use mnemos_core::{MemoryModel, MemoryModelExt, ModelResult, Role};

use super::strength::Signals;

/// Bytes of earlier dialogue a task may carry (half a task, leaving room for the utterance).
const CONTEXT_BYTES: usize = MAX_TASK_BYTES / 2;

/// The newest lines of `lines` whose texts fit in `max_bytes`, oldest first.
fn newest_within(lines: &[Line], max_bytes: usize) -> &[Line] {
    let mut bytes = 0usize;
    let mut start = lines.len();
    for (i, line) in lines.iter().enumerate().rev() {
        bytes += line.text.len() + line.speaker.as_ref().map_or(0, String::len) + 16;
        if bytes > max_bytes {
            break;
        }
        start = i;
    }
    lines.get(start..).unwrap_or(&[])
}

/// A, P and L of the user utterance `lines[index]` (one session's lines, in order; R1 and R2
/// start at 0):
/// - A: arousal of the utterance;
/// - P: surprise of the utterance given the session so far, which the model scores after the
///   previous bot turn (the paper conditions on the bot utterance; an n-gram model also needs
///   the earlier lines to have any statistics);
/// - L: importance of the exchange (previous bot turn + the utterance) given the user's earlier
///   utterances of the session.
///
/// `None` when `index` is not a user line.
pub fn utterance_signals(
    model: &dyn MemoryModel,
    lines: &[Line],
    index: usize,
) -> ModelResult<Option<Signals>> {
    let Some(line) = lines.get(index).filter(|l| l.role == Role::User) else {
        return Ok(None);
    };
    let before = lines.get(..index).unwrap_or(&[]);
    let context = newest_within(before, CONTEXT_BYTES);
    let arousal = model.arousal(&line.text)?;
    let surprise = model.surprise(context, &line.text)?;
    let past: Vec<Line> = before
        .iter()
        .filter(|l| l.role == Role::User)
        .cloned()
        .collect();
    let past_summary = newest_within(&past, CONTEXT_BYTES)
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let mut exchange: Vec<Line> = before
        .iter()
        .rev()
        .take_while(|l| l.role != Role::User)
        .find(|l| l.role == Role::Assistant)
        .cloned()
        .into_iter()
        .collect();
    exchange.push(line.clone());
    let importance = model.rate_importance(&past_summary, &exchange)?;
    Ok(Some(Signals {
        arousal: f64::from(arousal),
        surprise: f64::from(surprise),
        importance: f64::from(importance),
        r1: 0.0,
        r2: 0.0,
    }))
}
