//! Character classes used to split text by script before any language-specific processing.

/// Whether `c` is written without spaces between words and therefore needs dictionary
/// segmentation: Han ideographs (unified, extensions, compatibility), the ideographic marks
/// 々 / 〆 / 〇, and Japanese kana (full and half width).
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}'..='\u{3007}'       // 々 〆 〇
        | '\u{3040}'..='\u{309F}'     // Hiragana
        | '\u{30A0}'..='\u{30FF}'     // Katakana
        | '\u{31F0}'..='\u{31FF}'     // Katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}'     // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'     // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}'     // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}'     // half-width katakana
        | '\u{20000}'..='\u{2FA1F}'   // extensions B..F and compatibility supplement
        | '\u{30000}'..='\u{323AF}') // extensions G, H
}

/// Whether `text` contains any character that [`is_cjk`] accepts.
pub fn has_cjk(text: &str) -> bool {
    // ASCII can never be CJK; skipping it keeps the common English case to a byte scan.
    !text.is_ascii() && text.chars().any(is_cjk)
}

/// Decimal digits we read as numbers: ASCII and full-width (which NFKC folds to ASCII).
/// Other scripts' digits stay part of words, since nothing downstream compares them numerically.
#[inline]
pub(crate) fn digit_value(c: char) -> Option<u32> {
    match c {
        '0'..='9' => Some(c as u32 - '0' as u32),
        '\u{FF10}'..='\u{FF19}' => Some(c as u32 - 0xFF10),
        _ => None,
    }
}

#[inline]
pub(crate) fn is_digit(c: char) -> bool {
    digit_value(c).is_some()
}

/// Letters (and non-decimal numerics such as Ⅻ or ²) that start or continue a word in the
/// space-separated path.
#[inline]
pub(crate) fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        c.is_alphanumeric() && !is_cjk(c) && !is_digit(c)
    }
}

/// Combining marks continue a word so that decomposed text ("e" + U+0301) stays one word and
/// NFKC can recompose it.
#[inline]
pub(crate) fn is_mark(c: char) -> bool {
    !c.is_ascii() && unicode_normalization::char::is_combining_mark(c)
}

/// Apostrophes that may join the two halves of a word ("don't", "Caroline’s").
#[inline]
pub(crate) fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02BC}')
}

/// True when nothing alphanumeric (outside CJK) touches this position, so a number or a date
/// may end here. CJK is allowed because Chinese text glues numbers to words ("2023年的").
#[inline]
pub(crate) fn is_boundary(next: Option<char>) -> bool {
    match next {
        None => true,
        Some(c) => !(is_digit(c) || is_word_char(c)),
    }
}

/// The character starting at byte `pos`, if any. `pos` must be a char boundary.
#[inline]
pub(crate) fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..).and_then(|s| s.chars().next())
}

/// The character ending at byte `pos`, if any.
#[inline]
pub(crate) fn char_before(text: &str, pos: usize) -> Option<char> {
    text.get(..pos).and_then(|s| s.chars().next_back())
}

/// The dominant language of a text, as far as retrieval and prompting care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// Mostly ASCII Latin letters.
    English,
    /// Mostly CJK characters (Japanese kana also lands here: it takes the same segmentation path).
    Chinese,
    /// Other scripts, or nothing to judge (empty, digits, punctuation).
    Other,
}

/// Guess the dominant language by weighing characters roughly by how much meaning each carries:
/// one CJK character is worth about one English word of ~3 letters.
pub fn detect_language(text: &str) -> Language {
    let (mut cjk, mut ascii, mut other) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            ascii += 1;
        } else if is_cjk(c) {
            cjk += 1;
        } else if is_word_char(c) {
            other += 1;
        }
    }
    let cjk = cjk.saturating_mul(3);
    if cjk == 0 && ascii == 0 && other == 0 {
        Language::Other
    } else if cjk >= ascii && cjk >= other {
        Language::Chinese
    } else if ascii >= other {
        Language::English
    } else {
        Language::Other
    }
}
