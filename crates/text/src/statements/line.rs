//! A line's analysis: cut into sentences, each read by the English or Chinese rules and checked
//! for a correction. Apart from the parent module because the question reader
//! (`declarative`) analyzes the statement a question confirms, and the parent re-exports that
//! reader; here the analysis imports only the rule modules, none of which reads questions.

use std::ops::Range;

use super::types::{Analysis, Found, Statement};
use super::{chinese, correction, english, normalize, scan};

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
