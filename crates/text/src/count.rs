//! A cheap LLM-token estimate for context budgets.
//!
//! Calibrated loosely on BPE vocabularies of current chat models: about 4/3 tokens per English
//! word, one per CJK character, one per 3 digits, one per 2 letters of other scripts, one per
//! punctuation run, one per non-ASCII symbol (emoji, CJK punctuation), one per line break run. It
//! errs slightly high, which is the safe side for a budget. No allocation, one pass over chars.

use crate::script::{is_cjk, is_digit, is_mark};

pub(crate) fn count_tokens(text: &str) -> usize {
    // Counted in thirds of a token so that 4/3 per word stays an integer.
    let mut thirds: usize = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() {
            let mut len = 1usize;
            while chars.next_if(char::is_ascii_alphabetic).is_some() {
                len += 1;
            }
            // Long words split into several pieces.
            thirds += 4 + 3 * ((len - 1) / 8);
        } else if is_digit(c) {
            let mut len = 1usize;
            while chars.next_if(|&n| is_digit(n)).is_some() {
                len += 1;
            }
            thirds += 3 * len.div_ceil(3);
        } else if c == '\n' {
            while chars.next_if(|&n| n == '\n' || n == '\r').is_some() {}
            thirds += 3;
        } else if c.is_whitespace() {
            // Spaces merge into the following token.
        } else if is_cjk(c) {
            thirds += 3;
        } else if c.is_alphanumeric() {
            let mut len = 1usize;
            while chars
                .next_if(|&n| !n.is_ascii() && !is_cjk(n) && (n.is_alphanumeric() || is_mark(n)))
                .is_some()
            {
                len += 1;
            }
            thirds += 3 * len.div_ceil(2);
        } else if c.is_ascii() {
            while chars
                .next_if(|&n| n.is_ascii_punctuation() || (n.is_ascii_control() && n != '\n'))
                .is_some()
            {}
            thirds += 3;
        } else {
            thirds += 3;
        }
    }
    thirds.div_ceil(3)
}
