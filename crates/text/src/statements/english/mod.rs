//! English rules: a table of verb patterns read with the shared subject walk and value
//! readers, plus the slots that need their own reading (numbers, dates, roles, plans).

mod context;
mod left;
mod rules;
mod special;
mod values;

use super::types::Found;
use context::Context;

/// The statements of one English sentence (quoted speech already masked).
pub(super) fn statements(sentence: &str) -> Vec<Found> {
    let ctx = Context::new(sentence);
    if is_question(&ctx) {
        return Vec::new();
    }
    let mut out = Vec::new();
    rules::apply(&ctx, &mut out);
    special::apply(&ctx, &mut out);
    out
}

/// A thing's name as statements normalize it ("the dentist appointment" → "dentist appointment").
pub(super) fn thing_name(np: &str) -> Option<String> {
    special::thing_name(np)
}

/// Whether a word ends a noun phrase value.
pub(super) fn is_phrase_end(w: &str) -> bool {
    values::is_phrase_end(w)
}

/// The plan qualifier a statement in this sentence would get (for questions about plans).
pub(super) fn plan_qualifier_of(sentence: &str) -> String {
    let lower = sentence.to_lowercase();
    let moving = lower.contains("move") || lower.contains("moving") || lower.contains("relocat");
    let trip = lower.contains("honeymoon").then_some("honeymoon");
    special::plan_qualifier(&Context::new(sentence), moving, trip)
}

/// Whether an English sentence asks rather than tells (see [`is_question`]).
pub(super) fn is_question_text(sentence: &str) -> bool {
    is_question(&Context::new(sentence))
}

/// Auxiliaries that open a yes/no question ("Do you live…", "Are you still…").
const QUESTION_OPENERS: &[&str] = &[
    "do", "does", "did", "are", "is", "am", "was", "were", "have", "has", "had", "can", "could",
    "would", "will", "should", "shall", "may", "might", "must", "what", "where", "which", "who",
    "whom", "whose", "why", "how", "when", "isn't", "aren't", "don't", "doesn't", "didn't",
];

/// A sentence that asks rather than tells: it ends with "?", or opens like a question.
fn is_question(ctx: &Context) -> bool {
    let ends_with_question = ctx
        .text
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | '”'))
        .ends_with(['?', '？']);
    if ends_with_question {
        return true;
    }
    let mut words = ctx.toks.iter().filter(|t| t.word);
    let first = words.next().map(|t| t.lower.as_str());
    let second = words.next().map(|t| t.lower.as_str());
    let opener = first.is_some_and(|w| QUESTION_OPENERS.contains(&w));
    let then_subject = second.is_some_and(|w| {
        matches!(
            w,
            "you" | "i" | "we" | "they" | "he" | "she" | "it" | "your" | "my" | "there" | "u"
        )
    });
    opener && then_subject
}

#[cfg(test)]
pub(super) fn debug_patterns() -> Vec<&'static str> {
    rules::patterns()
}
