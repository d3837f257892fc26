//! Sentence splitting for English and Chinese.

use crate::script::{char_at, char_before};

/// Split `text` into sentences, returned as trimmed slices of `text` (never empty).
///
/// Breaks after `.` `!` `?` `…` when followed by whitespace or the end (so "3.5" and "a.b" stay
/// whole), except after common abbreviations ("Dr.", "e.g.") and initials ("J. K."); after the
/// Chinese terminators `。！？；` unconditionally; and at every line break. Closing quotes and
/// brackets right after a terminator stay with the sentence they close.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while let Some(c) = char_at(text, i) {
        let next = i + c.len_utf8();
        let cut = match c {
            '\n' | '\r' => Some((i, next)),
            '。' | '！' | '？' | '；' | '!' | '?' | '…' | '.' => {
                let end = skip_closers(text, next);
                let cjk = matches!(c, '。' | '！' | '？' | '；');
                let at_space = char_at(text, end).is_none_or(char::is_whitespace);
                if cjk || (at_space && !(c == '.' && is_abbreviation(text, i))) {
                    Some((end, end))
                } else {
                    None
                }
            }
            _ => None,
        };
        match cut {
            Some((piece_end, resume)) => {
                push_trimmed(&mut out, &text[start..piece_end]);
                start = resume;
                i = resume;
            }
            None => i = next,
        }
    }
    push_trimmed(&mut out, &text[start..]);
    out
}

fn push_trimmed<'a>(out: &mut Vec<&'a str>, piece: &'a str) {
    let piece = piece.trim();
    if !piece.is_empty() {
        out.push(piece);
    }
}

/// Position after further terminators and closing quotes/brackets starting at `pos`.
fn skip_closers(text: &str, pos: usize) -> usize {
    let mut p = pos;
    while let Some(c) = char_at(text, p) {
        let closer = matches!(
            c,
            '.' | '!'
                | '?'
                | '…'
                | '。'
                | '！'
                | '？'
                | '"'
                | '\''
                | ')'
                | ']'
                | '}'
                | '”'
                | '’'
                | '」'
                | '』'
                | '）'
                | '》'
                | '】'
        );
        if !closer {
            break;
        }
        p += c.len_utf8();
    }
    p
}

/// Whether the '.' at `dot` ends an abbreviation or an initial rather than a sentence.
fn is_abbreviation(text: &str, dot: usize) -> bool {
    const ABBREVIATIONS: [&str; 14] = [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "fig", "approx", "inc", "ltd",
        "mt",
    ];
    let before = &text[..dot];
    let word_len = before
        .bytes()
        .rev()
        .take_while(u8::is_ascii_alphabetic)
        .count();
    if word_len == 0 {
        return false;
    }
    let word_start = dot - word_len;
    let word = &before[word_start..];
    let preceded_by_dot = char_before(text, word_start) == Some('.');
    let initial =
        word_len == 1 && (word.bytes().all(|b| b.is_ascii_uppercase()) || preceded_by_dot);
    initial || ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a))
}
