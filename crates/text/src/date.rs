//! Recognition of calendar dates in English and Chinese text.
//!
//! Supported forms (all matched only at a token boundary):
//! - numeric: `2023-05-08`, `2023/5/8`, `2023.05.08`, `2023-05`, `2023/5`
//! - Chinese: `2024年4月1日` (also 号/號), `2024年4月`, `4月1日`
//! - English: `8 May 2023`, `8th May, 2023`, `8 May`, `May 8, 2023`, `May 8th 2023`, `May 8`,
//!   `May 2023`, with full or abbreviated month names (`Sept.`, `Jan`)
//!
//! Everything is validated (month 1–12, day within the month, four-digit year 1000–2999) so that
//! ordinary numbers are not mistaken for dates; anything that fails falls back to plain tokens.

use crate::script::{char_at, digit_value, is_boundary, is_digit};

/// A recognized date. Offsets are absolute byte offsets into the analyzed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DateMatch {
    pub start: usize,
    pub end: usize,
    pub month: u32,
    /// Year value and the byte span of its digits.
    pub year: Option<(u32, usize, usize)>,
    pub day: Option<u32>,
    /// Byte span of the English month name (without a trailing '.').
    pub month_word: Option<(usize, usize)>,
}

impl DateMatch {
    /// The normalized date terms, most specific first. A full date also yields its year-month and
    /// month-day so that "May 2023" and "5月8日" still match it.
    pub fn terms(&self) -> Vec<String> {
        let m = self.month;
        match (self.year, self.day) {
            (Some((y, ..)), Some(d)) => vec![
                format!("{y:04}-{m:02}-{d:02}"),
                format!("{y:04}-{m:02}"),
                format!("{m:02}-{d:02}"),
            ],
            (Some((y, ..)), None) => vec![format!("{y:04}-{m:02}")],
            (None, Some(d)) => vec![format!("{m:02}-{d:02}")],
            (None, None) => Vec::new(),
        }
    }
}

/// Try every date form that starts with a digit at `pos`.
pub(crate) fn match_at_digit(text: &str, pos: usize) -> Option<DateMatch> {
    numeric(text, pos)
        .or_else(|| chinese(text, pos))
        .or_else(|| day_first(text, pos))
}

/// Try the English forms that start with a month name at `pos`.
pub(crate) fn match_at_letter(text: &str, pos: usize) -> Option<DateMatch> {
    month_first(text, pos)
}

/// Byte position after an ordinal suffix (st/nd/rd/th) at `pos` that ends a word, else `pos`.
pub(crate) fn ordinal_end(text: &str, pos: usize) -> usize {
    let Some(suffix) = text.get(pos..pos + 2) else {
        return pos;
    };
    let is_ordinal = ["st", "nd", "rd", "th"]
        .iter()
        .any(|s| suffix.eq_ignore_ascii_case(s));
    if is_ordinal && is_boundary(char_at(text, pos + 2)) {
        pos + 2
    } else {
        pos
    }
}

struct Digits {
    value: u32,
    count: usize,
    end: usize,
}

/// A maximal run of decimal digits at `pos` (at least one).
fn read_digits(text: &str, pos: usize) -> Option<Digits> {
    let rest = text.get(pos..)?;
    let mut value: u32 = 0;
    let mut count = 0;
    let mut end = pos;
    for c in rest.chars() {
        let Some(d) = digit_value(c) else { break };
        value = value.saturating_mul(10).saturating_add(d);
        count += 1;
        end += c.len_utf8();
    }
    (count > 0).then_some(Digits { value, count, end })
}

fn is_year(d: &Digits) -> bool {
    d.count == 4 && (1000..=2999).contains(&d.value)
}

fn is_month(d: &Digits) -> bool {
    d.count <= 2 && (1..=12).contains(&d.value)
}

fn is_day(month: u32, d: &Digits) -> bool {
    const DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let max = DAYS
        .get((month as usize).wrapping_sub(1))
        .copied()
        .unwrap_or(0);
    d.count <= 2 && (1..=max).contains(&d.value)
}

/// Position after `c` if it is the character at `pos`.
fn eat(text: &str, pos: usize, c: char) -> Option<usize> {
    (char_at(text, pos) == Some(c)).then(|| pos + c.len_utf8())
}

/// Position after horizontal spaces at `pos` (dates do not span lines).
fn skip_spaces(text: &str, pos: usize) -> usize {
    let mut p = pos;
    while let Some(c) = char_at(text, p) {
        if matches!(c, ' ' | '\t' | '\u{A0}' | '\u{3000}') {
            p += c.len_utf8();
        } else {
            break;
        }
    }
    p
}

/// `2023-05-08`, `2023/5/8`, `2023.05.08`, `2023-05`, `2023/5`.
fn numeric(text: &str, pos: usize) -> Option<DateMatch> {
    let y = read_digits(text, pos)?;
    if !is_year(&y) {
        return None;
    }
    let sep = char_at(text, y.end).filter(|c| matches!(c, '-' | '/' | '.'))?;
    let m = read_digits(text, y.end + 1)?;
    if !is_month(&m) {
        return None;
    }
    let year = Some((y.value, pos, y.end));
    if char_at(text, m.end) == Some(sep) && char_at(text, m.end + 1).is_some_and(is_digit) {
        let d = read_digits(text, m.end + 1)?;
        // ISO date-times continue with 'T' and the time; the date part still counts.
        let iso_time =
            char_at(text, d.end) == Some('T') && char_at(text, d.end + 1).is_some_and(is_digit);
        if !is_day(m.value, &d) || !(is_boundary(char_at(text, d.end)) || iso_time) {
            return None;
        }
        return Some(DateMatch {
            start: pos,
            end: d.end,
            month: m.value,
            year,
            day: Some(d.value),
            month_word: None,
        });
    }
    // "2023.5" is a decimal number, not a month.
    if sep == '.' || !is_boundary(char_at(text, m.end)) {
        return None;
    }
    Some(DateMatch {
        start: pos,
        end: m.end,
        month: m.value,
        year,
        day: None,
        month_word: None,
    })
}

/// `2024年4月1日`, `2024年4月`, `4月1日`.
fn chinese(text: &str, pos: usize) -> Option<DateMatch> {
    let first = read_digits(text, pos)?;
    if let Some(after_year) = eat(text, first.end, '年') {
        if !is_year(&first) {
            return None;
        }
        let m = read_digits(text, after_year)?;
        if !is_month(&m) {
            return None;
        }
        let after_month = eat(text, m.end, '月')?;
        let year = Some((first.value, pos, first.end));
        let day = read_digits(text, after_month)
            .filter(|d| is_day(m.value, d))
            .and_then(|d| day_suffix(text, d.end).map(|end| (d.value, end)));
        let (day, end) = match day {
            Some((d, end)) => (Some(d), end),
            None => (None, after_month),
        };
        return Some(DateMatch {
            start: pos,
            end,
            month: m.value,
            year,
            day,
            month_word: None,
        });
    }
    let after_month = eat(text, first.end, '月')?;
    if !is_month(&first) {
        return None;
    }
    let d = read_digits(text, after_month)?;
    if !is_day(first.value, &d) {
        return None;
    }
    let end = day_suffix(text, d.end)?;
    Some(DateMatch {
        start: pos,
        end,
        month: first.value,
        year: None,
        day: Some(d.value),
        month_word: None,
    })
}

fn day_suffix(text: &str, pos: usize) -> Option<usize> {
    eat(text, pos, '日')
        .or_else(|| eat(text, pos, '号'))
        .or_else(|| eat(text, pos, '號'))
}

struct MonthWord {
    month: u32,
    /// End of the letters.
    word_end: usize,
    /// End including an abbreviation's '.'.
    end: usize,
    /// Lowercase "may" is usually the verb: only accept it together with a year.
    needs_year: bool,
}

/// An English month name (full or abbreviated) forming a whole word at `pos`.
fn month_word(text: &str, pos: usize) -> Option<MonthWord> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let rest = text.get(pos..)?;
    let len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    if !(3..=9).contains(&len) {
        return None;
    }
    let word_end = pos + len;
    if !is_boundary(char_at(text, word_end)) {
        return None;
    }
    let word = &rest[..len];
    let full = MONTHS.iter().position(|m| word.eq_ignore_ascii_case(m));
    let abbrev = || {
        if word.eq_ignore_ascii_case("sept") {
            return Some(8);
        }
        (len == 3)
            .then(|| {
                MONTHS
                    .iter()
                    .position(|m| m.get(..3).is_some_and(|p| word.eq_ignore_ascii_case(p)))
            })
            .flatten()
    };
    let (index, is_abbrev) = match full {
        Some(i) => (i, false),
        None => (abbrev()?, true),
    };
    let end = if is_abbrev {
        eat(text, word_end, '.').unwrap_or(word_end)
    } else {
        word_end
    };
    Some(MonthWord {
        month: index as u32 + 1,
        word_end,
        end,
        needs_year: word == "may",
    })
}

/// A year after a day: `, 2023`, `,2023` or ` 2023`.
fn year_after(text: &str, pos: usize) -> Option<(u32, usize, usize)> {
    let after_comma = eat(text, pos, ',');
    let p = after_comma.unwrap_or(pos);
    let s = skip_spaces(text, p);
    if after_comma.is_none() && s == p {
        return None;
    }
    let y = read_digits(text, s)?;
    (is_year(&y) && is_boundary(char_at(text, y.end))).then_some((y.value, s, y.end))
}

/// `8 May 2023`, `8th May, 2023`, `8 May`.
fn day_first(text: &str, pos: usize) -> Option<DateMatch> {
    let d = read_digits(text, pos)?;
    if d.count > 2 {
        return None;
    }
    let after_day = ordinal_end(text, d.end);
    if !is_boundary(char_at(text, after_day)) {
        return None;
    }
    let s = skip_spaces(text, after_day);
    if s == after_day {
        return None;
    }
    let mw = month_word(text, s)?;
    if !is_day(mw.month, &d) {
        return None;
    }
    let month_word = Some((s, mw.word_end));
    match year_after(text, mw.end) {
        Some(year) => Some(DateMatch {
            start: pos,
            end: year.2,
            month: mw.month,
            year: Some(year),
            day: Some(d.value),
            month_word,
        }),
        None if mw.needs_year => None,
        None => Some(DateMatch {
            start: pos,
            end: mw.end,
            month: mw.month,
            year: None,
            day: Some(d.value),
            month_word,
        }),
    }
}

/// `May 8, 2023`, `May 8th 2023`, `May 8`, `May 2023`.
fn month_first(text: &str, pos: usize) -> Option<DateMatch> {
    let mw = month_word(text, pos)?;
    let s = skip_spaces(text, mw.end);
    if s == mw.end {
        return None;
    }
    let n = read_digits(text, s)?;
    let month_word = Some((pos, mw.word_end));
    if n.count == 4 {
        if !is_year(&n) || !is_boundary(char_at(text, n.end)) {
            return None;
        }
        return Some(DateMatch {
            start: pos,
            end: n.end,
            month: mw.month,
            year: Some((n.value, s, n.end)),
            day: None,
            month_word,
        });
    }
    if !is_day(mw.month, &n) {
        return None;
    }
    let after_day = ordinal_end(text, n.end);
    if !is_boundary(char_at(text, after_day)) {
        return None;
    }
    match year_after(text, after_day) {
        Some(year) => Some(DateMatch {
            start: pos,
            end: year.2,
            month: mw.month,
            year: Some(year),
            day: Some(n.value),
            month_word,
        }),
        None if mw.needs_year => None,
        None => Some(DateMatch {
            start: pos,
            end: after_day,
            month: mw.month,
            year: None,
            day: Some(n.value),
            month_word,
        }),
    }
}
