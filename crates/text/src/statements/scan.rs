//! Text plumbing shared by both languages: sentence spans, quote masking, pattern compilation
//! and English word tokens.

use regex::Regex;

use crate::{detect_language, is_cjk, Language};

/// `text` cut to at most `max` bytes, at a char boundary.
pub(super) fn cut_at_char(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or("")
}

/// The sentences of `text` (see [`crate::sentences`]) with their byte offsets in `text`.
pub(super) fn sentence_spans(text: &str) -> Vec<(usize, &str)> {
    let base = text.as_ptr() as usize;
    crate::sentences(text)
        .into_iter()
        .map(|s| (s.as_ptr() as usize - base, s))
        .collect()
}

/// Whether a sentence goes through the Chinese rules.
pub(super) fn is_chinese(sentence: &str) -> bool {
    detect_language(sentence) == Language::Chinese
}

/// Quote marks: (open, close).
const QUOTES: &[(char, char)] = &[
    ('"', '"'),
    ('“', '”'),
    ('「', '」'),
    ('『', '』'),
    ('‘', '’'),
    ('«', '»'),
];

/// `sentence` with quoted speech blanked out (each byte of the quote, marks included, becomes a
/// space, so offsets stay valid): what someone else is quoted as saying is not the speaker's
/// fact. A short quote that is not speech (a name: 我家的猫叫“芝麻”, my cat is called "Biscotti")
/// stays.
pub(super) fn mask_quoted_speech(sentence: &str) -> String {
    let mut out = sentence.to_string();
    let mut pos = 0;
    while let Some((open_at, open, close)) = next_quote(sentence, pos) {
        let inner_start = open_at + open.len_utf8();
        let Some(inner_end) = closing_quote(sentence, inner_start, close) else {
            break;
        };
        let quote_end = inner_end + close.len_utf8();
        let inner = sentence.get(inner_start..inner_end).unwrap_or("");
        if is_speech(inner) {
            blank(&mut out, open_at, quote_end);
        }
        pos = quote_end;
    }
    out
}

fn next_quote(text: &str, from: usize) -> Option<(usize, char, char)> {
    let rest = text.get(from..)?;
    let mut previous: Option<char> = crate::script::char_before(text, from);
    for (i, c) in rest.char_indices() {
        // A plain ' opens a quote only where it cannot be an apostrophe ("don't", "Ann's").
        let opens_single = c == '\'' && !previous.is_some_and(char::is_alphanumeric);
        if opens_single {
            return Some((from + i, '\'', '\''));
        }
        if let Some(&(open, close)) = QUOTES.iter().find(|(open, _)| *open == c) {
            return Some((from + i, open, close));
        }
        previous = Some(c);
    }
    None
}

/// Where the quote opened before `start` closes: the first `close` that is not an apostrophe
/// inside a word ("‘I’m home’").
fn closing_quote(text: &str, start: usize, close: char) -> Option<usize> {
    let rest = text.get(start..)?;
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != close {
            continue;
        }
        let apostrophe_like = matches!(c, '\'' | '’');
        let inside_word =
            apostrophe_like && chars.peek().is_some_and(|&(_, n)| n.is_alphabetic()) && i > 0;
        if !inside_word {
            return Some(start + i);
        }
    }
    None
}

/// Whether quoted text reads as something said rather than a name: a first-person word, or
/// more than three words (more than six characters in Chinese).
fn is_speech(inner: &str) -> bool {
    let han = inner.chars().filter(|&c| is_cjk(c)).count();
    if han > 0 {
        return inner.contains('我') || han > 6;
    }
    let words: Vec<String> = inner
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let first_person = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "i" | "i'm" | "i’m" | "im" | "my" | "me" | "we" | "we're" | "our" | "i've" | "i'll"
        )
    });
    first_person || words.len() > 3
}

fn blank(out: &mut String, start: usize, end: usize) {
    if let Some(range) = out.get(start..end) {
        let spaces = " ".repeat(range.len());
        out.replace_range(start..end, &spaces);
    }
}

/// Compile a rule's pattern after expanding the shared `{PLACEHOLDERS}` (see
/// [`super::lexicon::placeholder`]) and making `\b` an ASCII word boundary, which the fast
/// matching engines support on any text. A pattern that fails to compile is dropped (a test
/// checks that none does).
pub(super) fn compile(pattern: &str) -> Option<Regex> {
    let expanded = expand(pattern);
    let ascii_boundaries = expanded.replace(r"\b", r"(?-u:\b)");
    regex::RegexBuilder::new(&ascii_boundaries)
        .case_insensitive(true)
        .size_limit(1 << 24)
        .build()
        .ok()
}

/// Replace each `{NAME}` by its fragment.
fn expand(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        let close = after.find('}');
        let fragment = close
            .and_then(|c| after.get(1..c))
            .and_then(super::lexicon::placeholder);
        match (close, fragment) {
            (Some(c), Some(fragment)) => {
                out.push_str(&fragment);
                rest = after.get(c + 1..).unwrap_or("");
            }
            _ => {
                // A regex repetition such as {1,3}: keep it.
                out.push('{');
                rest = after.get(1..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
    out
}

/// Compile a list of patterns once.
pub(super) fn compile_all(patterns: &[&str]) -> Vec<Option<Regex>> {
    patterns.iter().map(|p| compile(p)).collect()
}

/// One English token: a word (letters, digits, inner apostrophes and hyphens) or one
/// punctuation character.
#[derive(Clone, Debug)]
pub(super) struct Tok {
    pub start: usize,
    pub end: usize,
    /// Lower-case, with ’ folded to '.
    pub lower: String,
    pub word: bool,
    /// Starts with an upper-case letter.
    pub capital: bool,
}

/// The tokens of `text`.
pub(super) fn tokens(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if c.is_whitespace() {
            continue;
        }
        if !c.is_alphanumeric() {
            out.push(Tok {
                start: i,
                end: i + c.len_utf8(),
                lower: c.to_string(),
                word: false,
                capital: false,
            });
            continue;
        }
        let mut end = i + c.len_utf8();
        let han = is_cjk(c);
        while let Some(&(j, n)) = iter.peek() {
            let joiner = matches!(n, '\'' | '’' | '-' | '.');
            let continues = if joiner {
                text.get(j + n.len_utf8()..)
                    .and_then(|r| r.chars().next())
                    .is_some_and(|after| after.is_alphanumeric() && !is_cjk(after))
                    && !han
            } else {
                n.is_alphanumeric() && is_cjk(n) == han
            };
            if !continues {
                break;
            }
            end = j + n.len_utf8();
            iter.next();
        }
        let raw = text.get(i..end).unwrap_or("");
        out.push(Tok {
            start: i,
            end,
            lower: raw.to_lowercase().replace('’', "'"),
            word: true,
            capital: c.is_uppercase(),
        });
    }
    out
}

/// `s` without leading and trailing characters that are neither alphanumeric nor part of a
/// value ($ € £ ¥ % ' -).
pub(super) fn trim_value(s: &str) -> &str {
    s.trim_matches(|c: char| {
        !(c.is_alphanumeric() || matches!(c, '$' | '€' | '£' | '¥' | '%' | '\'' | '’' | '+'))
    })
}
