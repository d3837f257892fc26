//! One bilingual tokenizer shared by everything in mnemos (BM25 indexing, query analysis, token
//! budgets, offline language models).
//!
//! Text is first split by script. CJK runs (Han ideographs, kana) are segmented with jieba;
//! everything else goes through the space-separated path: Unicode word splitting, NFKC folding
//! (full-width Ｌｅｔｔｅｒｓ and ３ become ASCII), Unicode lowercasing and Snowball English
//! stemming of ASCII words. Numbers and dates are recognized before either path sees them.
//!
//! Design choices:
//! - **Jieba precise mode with HMM** for [`Analyzer::tokens`] and [`Analyzer::terms`]: tokens
//!   must be a non-overlapping segmentation in text order (highlighting, n-gram models), and
//!   `terms` is exactly `tokens` minus stopwords. The HMM lets unseen names ("卡罗琳") come out as
//!   one word instead of single characters. [`Analyzer::search_terms`] additionally emits the
//!   dictionary sub-words of long words (jieba search mode) for recall-oriented indexing.
//! - **Stopwords** are kept by `tokens` and dropped by `terms` (see [`Analyzer::is_stopword`]).
//!   English stopwords are emitted unstemmed, so the list is checked against exactly what
//!   `tokens` produces. Chinese pronouns are stopwords: almost every chat line has 我/你.
//! - **Dates** become [`TokenKind::Date`] terms in ISO form ("2023-05-08", "2023-05", "05-08");
//!   a full date also yields its year-month and month-day forms so that coarser queries match,
//!   plus the year as a [`TokenKind::Number`] and the English month name as a
//!   [`TokenKind::Word`], all in text order.

mod change;
mod count;
mod date;
pub mod narrate;
pub mod privacy;
mod script;
mod sentences;
pub mod statements;
mod stopwords;

use std::borrow::Cow;
use std::collections::HashSet;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

pub use change::{announces_change, is_change_term};
pub use narrate::{addressee_of, narrate, third_person, NarratedSentence};
pub use privacy::{
    credentials, forget_request, redact_credentials, stated_values, words_asked_with, Credential,
    CredentialKind, ForgetRequest, Redacted,
};
pub use script::{detect_language, has_cjk, is_cjk, Language};
pub use sentences::sentences;
pub use statements::{analyze, asked, Analysis, Asked, Correction, Slot, Statement, Subject};

use script::{
    char_at, char_before, digit_value, is_apostrophe, is_boundary, is_digit, is_mark, is_word_char,
};

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// A Latin/Cyrillic/… word (lowercased, stemmed when it is English).
    Word,
    /// A Chinese (or other CJK) word from segmentation.
    Cjk,
    /// A number, kept as written ("3.5", "2023").
    Number,
    /// A date or time expression normalized to a canonical form ("2023-05-08").
    Date,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The normalized term used for matching.
    pub term: String,
    pub kind: TokenKind,
    /// Byte offsets into the original text.
    pub start: usize,
    pub end: usize,
}

/// The analyzer. Construction loads the Chinese dictionary (tens of ms): share one instance via
/// [`Analyzer::shared`].
pub struct Analyzer {
    jieba: Jieba,
    stemmer: Stemmer,
    stopwords: HashSet<&'static str>,
}

/// How CJK runs are segmented.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CjkMode {
    /// Non-overlapping words.
    Precise,
    /// Words plus their dictionary sub-words.
    Search,
}

impl Analyzer {
    pub fn new() -> Self {
        let stopwords = stopwords::ENGLISH
            .iter()
            .chain(stopwords::CHINESE)
            .copied()
            .collect();
        Analyzer {
            jieba: Jieba::new(),
            stemmer: Stemmer::create(Algorithm::English),
            stopwords,
        }
    }

    /// The process-wide analyzer.
    pub fn shared() -> &'static Analyzer {
        static SHARED: std::sync::OnceLock<Analyzer> = std::sync::OnceLock::new();
        SHARED.get_or_init(Analyzer::new)
    }

    /// All tokens, stopwords included, in text order (by `start`; a date's normalized forms share
    /// its span and precede its year/month components).
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.analyze(text, CjkMode::Precise, &mut |term, kind, start, end| {
            out.push(Token {
                term,
                kind,
                start,
                end,
            });
        });
        out
    }

    /// Index/query terms: `tokens` without stopwords and punctuation.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.terms_into(text, &mut out);
        out
    }

    /// Like [`Analyzer::terms`], appending to `out` so callers can reuse one buffer.
    pub fn terms_into(&self, text: &str, out: &mut Vec<String>) {
        self.analyze(text, CjkMode::Precise, &mut |term, _, _, _| {
            if !self.is_stopword(&term) {
                out.push(term);
            }
        });
    }

    /// Recall-oriented terms: [`Analyzer::terms`] plus the dictionary sub-words of long Chinese
    /// words ("北京大学" also gives "北京", "大学"), not in text order. Meant for indexing
    /// documents so that shorter query words still hit; queries should use `terms` so a long
    /// query word does not count several times.
    pub fn search_terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.analyze(text, CjkMode::Search, &mut |term, _, _, _| {
            if !self.is_stopword(&term) {
                out.push(term);
            }
        });
        out
    }

    /// Whether a term (as produced by `tokens`) is a stopword, English or Chinese.
    pub fn is_stopword(&self, term: &str) -> bool {
        self.stopwords.contains(term)
    }

    /// jieba's words of a Chinese text with their part-of-speech tags ("v", "n", "nr", "d"…),
    /// in order (HMM on, so unseen names come out whole).
    pub fn pos_tags(&self, text: &str) -> Vec<(String, String)> {
        self.jieba
            .tag(text, true)
            .into_iter()
            .map(|t| (t.word.to_string(), t.tag.to_string()))
            .collect()
    }

    /// Approximate LLM token count used for budgets (fast; no allocation per token).
    pub fn count_tokens(&self, text: &str) -> usize {
        count::count_tokens(text)
    }

    /// The single pass behind every public entry point: calls `emit(term, kind, start, end)` for
    /// each token.
    fn analyze<F: FnMut(String, TokenKind, usize, usize)>(
        &self,
        text: &str,
        mode: CjkMode,
        emit: &mut F,
    ) {
        let mut pos = 0;
        while let Some(c) = char_at(text, pos) {
            if is_cjk(c) {
                let end = run_end(text, pos, is_cjk);
                self.segment_cjk(text, pos, end, mode, emit);
                pos = end;
            } else if is_digit(c) {
                let at_start = is_boundary(char_before(text, pos));
                let date = if at_start {
                    date::match_at_digit(text, pos)
                } else {
                    None
                };
                pos = match date {
                    Some(m) => self.emit_date(text, &m, emit),
                    None => number(text, pos, emit),
                };
            } else if is_word_char(c) {
                let at_start = c.is_ascii_alphabetic() && is_boundary(char_before(text, pos));
                let date = if at_start {
                    date::match_at_letter(text, pos)
                } else {
                    None
                };
                pos = match date {
                    Some(m) => self.emit_date(text, &m, emit),
                    None => self.word(text, pos, emit),
                };
            } else {
                pos += c.len_utf8();
            }
        }
    }

    /// Segment the CJK run `text[start..end]` with jieba.
    fn segment_cjk<F: FnMut(String, TokenKind, usize, usize)>(
        &self,
        text: &str,
        start: usize,
        end: usize,
        mode: CjkMode,
        emit: &mut F,
    ) {
        let Some(run) = text.get(start..end) else {
            return;
        };
        let words = match mode {
            CjkMode::Precise => self.jieba.cut(run, true),
            CjkMode::Search => self.jieba.cut_for_search(run, true),
        };
        for w in words {
            let (s, e) = (w.byte_start, w.byte_end);
            let valid =
                s < e && e <= run.len() && run.is_char_boundary(s) && run.is_char_boundary(e);
            // The run holds only CJK characters, but stay defensive about what comes back.
            if !valid || !w.word.chars().any(|c| is_cjk(c) || c.is_alphanumeric()) {
                continue;
            }
            emit(
                nfkc(w.word).into_owned(),
                TokenKind::Cjk,
                start + s,
                start + e,
            );
        }
    }

    /// Emit a word starting at `start`; returns where it ends.
    fn word<F: FnMut(String, TokenKind, usize, usize)>(
        &self,
        text: &str,
        start: usize,
        emit: &mut F,
    ) -> usize {
        let mut end = start;
        let mut chars = text[start..].chars().peekable();
        while let Some(c) = chars.next() {
            let joins = is_word_char(c)
                || (end > start && is_mark(c))
                || (end > start
                    && is_apostrophe(c)
                    && chars.peek().is_some_and(|&n| is_word_char(n)));
            if !joins {
                break;
            }
            end += c.len_utf8();
        }
        if end == start {
            // Unreachable for callers that checked `is_word_char`, but always make progress.
            return start + char_at(text, start).map_or(1, char::len_utf8);
        }
        if let Some(term) = self.word_term(&text[start..end]) {
            emit(term, TokenKind::Word, start, end);
        }
        end
    }

    /// Normalize a raw word: NFKC, lowercase, fold apostrophes; unless it is a stopword, drop a
    /// possessive "'s" and other apostrophes, then stem if it is plain ASCII.
    fn word_term(&self, raw: &str) -> Option<String> {
        let mut term = if raw.is_ascii() {
            raw.to_ascii_lowercase()
        } else {
            let lower = nfkc(raw).to_lowercase();
            if lower.contains(['\u{2019}', '\u{02BC}']) {
                lower.replace(['\u{2019}', '\u{02BC}'], "'")
            } else {
                lower
            }
        };
        if self.is_stopword(&term) {
            return Some(term);
        }
        if term.contains('\'') {
            if term.ends_with("'s") {
                term.truncate(term.len() - 2);
            }
            term.retain(|c| c != '\'');
        }
        if term.is_empty() {
            return None;
        }
        if term.bytes().all(|b| b.is_ascii_lowercase()) {
            let kept = match self.stemmer.stem(&term) {
                Cow::Borrowed(b) if term.starts_with(b) => Ok(b.len()),
                other => Err(other.into_owned()),
            };
            match kept {
                Ok(len) => term.truncate(len),
                Err(stemmed) => term = stemmed,
            }
        }
        (!term.is_empty()).then_some(term)
    }

    /// Emit a date's normalized terms and its components; returns where the date ends.
    fn emit_date<F: FnMut(String, TokenKind, usize, usize)>(
        &self,
        text: &str,
        m: &date::DateMatch,
        emit: &mut F,
    ) -> usize {
        for term in m.terms() {
            emit(term, TokenKind::Date, m.start, m.end);
        }
        let month = m.month_word.and_then(|(s, e)| {
            let term = self.word_term(text.get(s..e)?)?;
            Some((term, TokenKind::Word, s, e))
        });
        let year = m
            .year
            .and_then(|(_, s, e)| Some((ascii_digits(text.get(s..e)?), TokenKind::Number, s, e)));
        let (first, second) = match (&month, &year) {
            (Some(mw), Some(y)) if y.2 < mw.2 => (year, month),
            _ => (month, year),
        };
        for (term, kind, s, e) in first.into_iter().chain(second) {
            emit(term, kind, s, e);
        }
        m.end
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

/// End of the run of characters satisfying `pred` starting at `start`.
fn run_end(text: &str, start: usize, pred: impl Fn(char) -> bool) -> usize {
    let rest = &text[start..];
    let len = rest.find(|c: char| !pred(c)).unwrap_or(rest.len());
    start + len
}

/// NFKC-normalize, borrowing when the text is already normalized (the common case).
fn nfkc(s: &str) -> Cow<'_, str> {
    if is_nfkc_quick(s.chars()) == IsNormalized::Yes {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.nfkc().collect())
    }
}

/// ASCII form of a string of (possibly full-width) digits.
fn ascii_digits(s: &str) -> String {
    s.chars()
        .filter_map(digit_value)
        .filter_map(|d| char::from_digit(d, 10))
        .collect()
}

/// Emit the number starting at `start` ("3.5", "1,000" → "1000", "5th" → "5"); returns its end.
fn number<F: FnMut(String, TokenKind, usize, usize)>(
    text: &str,
    start: usize,
    emit: &mut F,
) -> usize {
    let mut term = String::new();
    let mut pos = start;
    while let Some(c) = char_at(text, pos) {
        if let Some(d) = digit_value(c).and_then(|d| char::from_digit(d, 10)) {
            term.push(d);
            pos += c.len_utf8();
        } else if c == '.' && char_at(text, pos + 1).is_some_and(is_digit) && !term.is_empty() {
            term.push('.');
            pos += 1;
        } else if c == ',' && is_thousands_group(text, pos + 1) {
            pos += 1;
        } else {
            break;
        }
    }
    if term.is_empty() {
        return start + char_at(text, start).map_or(1, char::len_utf8);
    }
    let end = date::ordinal_end(text, pos);
    emit(term, TokenKind::Number, start, end);
    end
}

/// Whether exactly three digits start at `pos` (a thousands group after a comma).
fn is_thousands_group(text: &str, pos: usize) -> bool {
    let mut count = 0;
    let mut p = pos;
    while let Some(c) = char_at(text, p) {
        if !is_digit(c) {
            break;
        }
        count += 1;
        if count > 3 {
            return false;
        }
        p += c.len_utf8();
    }
    count == 3
}

/// Build what the first analysis would otherwise build: the shared analyzer's dictionary and
/// every rule's compiled patterns (about 0.2 s, once per process). A server calls it before it
/// listens, so its first request does not pay for it.
pub fn warm_up() {
    for text in [
        "I moved to Porto; my password is hunter2. Please forget my address. Where do I live?",
        "我搬到了上海，不是周三，是周四。请忘掉我的住址。我住在哪里？",
    ] {
        let analyzer = Analyzer::shared();
        let _ = analyzer.terms(text);
        let _ = analyzer.search_terms(text);
        let _ = analyze(text);
        let _ = asked(text);
        let _ = privacy::redact_credentials(text);
        let _ = privacy::forget_request(text);
    }
}

#[cfg(test)]
mod tests;
