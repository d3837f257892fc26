//! Facts that dialogue lines state, as typed (subject, slot, qualifier, value) statements, in
//! English and Chinese.
//!
//! The engine uses them to tell when a new statement replaces an older one ("I live in Tallinn"
//! … later "I just moved, home is Porto now"). Replacing a true fact by mistake is worse than
//! missing an update, so every rule is built to stay silent when in doubt:
//! - a statement needs an explicit holder found by walking left from its verb over adverbs,
//!   auxiliaries and negations only ("I've just moved to", "我现在住在"); anything else in the
//!   way ("I might move to", "I'm thinking about moving to", "我想搬到") leaves it unsaid;
//! - questions, conditionals and wishes ("If I moved…", "如果我搬到…"), reported speech ("He
//!   told me…", "他说…"), quoted speech and past-only context ("back in college…", "我以前…")
//!   yield nothing;
//! - values must look like what the slot holds (a capitalized place, an occupation noun, a name).
//!
//! Some holders are implied rather than written, because that is how people talk about their own
//! lives: an answer without a subject ("Still vegetarian, yes."), a baby, pet or trip nobody else
//! is said to own ("The cat has a new name: Octavia", "宝宝叫景行"). Updates of one fact must key
//! alike however they are worded, so qualifiers and thing names are canonical ("my weekly running
//! distance" keys like "I run … a week"; "看牙", "牙医的预约" and "牙医预约" are one event), and
//! yes/no questions are read as the statements they confirm ("Am I still a pharmacist?").
//!
//! Lines are analyzed sentence by sentence, so spans point at the sentence that states a fact.

mod asked;
mod chinese;
mod correction;
mod declarative;
mod english;
mod lexicon;
mod normalize;
mod scan;
mod types;

#[cfg(test)]
mod tests;

use std::ops::Range;

pub use asked::{asked, Asked};
pub(crate) use types::Found;
pub use types::{Analysis, Correction, Slot, Statement, Subject};

impl Found {
    fn into_statement(self, span: Range<usize>) -> Statement {
        let value_key = normalize::value_key(self.slot, &self.value);
        Statement {
            subject: self.subject,
            slot: self.slot,
            qualifier: self.qualifier,
            value: self.value,
            value_key,
            negated: self.negated,
            span,
        }
    }
}

/// Lines longer than this are cut (at a char boundary) before analysis: no chat turn states
/// facts past it, and it bounds the time one call can take.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// The statements and correction of one dialogue line.
pub fn analyze(text: &str) -> Analysis {
    let text = scan::cut_at_char(text, MAX_LINE_BYTES);
    let mut analysis = Analysis::default();
    let mut after_marker = false;
    for (offset, sentence) in scan::sentence_spans(text) {
        let masked = scan::mask_quoted_speech(sentence);
        let chinese = scan::is_chinese(&masked);
        let mut found = if chinese {
            chinese::statements(&masked)
        } else {
            english::statements(&masked)
        };
        found.sort_by_key(|f| f.at);
        dedupe(&mut found);
        let span = offset..offset + sentence.len();
        if analysis.correction.is_none() {
            let correction = if after_marker {
                correction::after_marker(&masked)
            } else if chinese {
                correction::chinese(&masked, &found)
            } else {
                correction::english(&masked, &found)
            };
            analysis.correction = correction.map(|c| c.placed(span.clone()));
        }
        after_marker = correction::is_bare_marker(&masked);
        analysis
            .statements
            .extend(found.into_iter().map(|f| f.into_statement(span.clone())));
    }
    analysis
}

/// Drop repeats (two rules finding the same fact) and valueless negations that a valued one of
/// the same subject and slot makes redundant ("I quit my job at Acme").
fn dedupe(found: &mut Vec<Found>) {
    let mut kept: Vec<Found> = Vec::with_capacity(found.len());
    for f in found.drain(..) {
        let same = |k: &Found| {
            k.subject == f.subject
                && k.slot == f.slot
                && k.qualifier == f.qualifier
                && normalize::value_key(k.slot, &k.value) == normalize::value_key(f.slot, &f.value)
        };
        if let Some(k) = kept.iter_mut().find(|k| same(k)) {
            // Two rules read the same value; one of them saw it end ("… passed away").
            k.negated |= f.negated;
            continue;
        }
        kept.push(f);
    }
    let redundant = |i: usize, f: &Found| {
        f.value.is_empty()
            && f.negated
            && kept.iter().enumerate().any(|(j, k)| {
                j != i && k.subject == f.subject && k.slot == f.slot && !k.value.is_empty()
            })
    };
    let keep: Vec<bool> = kept
        .iter()
        .enumerate()
        .map(|(i, f)| !redundant(i, f))
        .collect();
    let mut flags = keep.into_iter();
    kept.retain(|_| flags.next().unwrap_or(true));
    *found = kept;
}
