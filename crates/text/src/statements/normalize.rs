//! Normal forms: value keys (numbers as digits, weekdays canonical), qualifiers (stemmed,
//! sorted) and the number readers behind them.

use super::types::Slot;
use crate::Analyzer;

/// The value normalized for equality (see [`super::Statement::value_key`]).
pub(super) fn value_key(slot: Slot, value: &str) -> String {
    match slot {
        Slot::Quantity | Slot::Age => number_key(value).unwrap_or_else(|| key(value)),
        Slot::Diet => diet_key(value),
        Slot::RelationshipStatus => relationship_key(value),
        Slot::Date => date_key(value),
        Slot::Status => phase_key(value),
        _ => key(value),
    }
}

/// The general key: lower-case, leading articles gone, whitespace collapsed, English number
/// words as digits and full weekday names canonical.
pub(super) fn key(value: &str) -> String {
    let lower = super::scan::trim_value(value)
        .to_lowercase()
        .replace('’', "'");
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    while words
        .first()
        .is_some_and(|w| matches!(*w, "the" | "a" | "an"))
        && words.len() > 1
    {
        words.remove(0);
    }
    let joined = words.join(" ");
    let with_numbers = english_numbers_to_digits(&joined);
    let with_days = weekdays(&with_numbers, false);
    chinese_weekdays(&with_days)
}

/// A date or time's key: weekday names and abbreviations canonical, Chinese numerals as digits.
pub(super) fn date_key(value: &str) -> String {
    let general = key(value);
    let days = weekdays(&general, true);
    chinese_numerals_to_digits(&days)
}

/// A correction's key: like a date key, since corrections are mostly days, times and numbers.
pub(super) fn correction_key(value: &str) -> String {
    date_key(value)
}

/// A project state without "phase"/"stage"/"阶段" ("the QA phase" = "QA").
fn phase_key(value: &str) -> String {
    let general = key(value);
    let trimmed = general
        .trim_end_matches("阶段")
        .trim_end_matches(" phase")
        .trim_end_matches(" stage")
        .trim();
    if trimmed.is_empty() {
        general
    } else {
        trimmed.to_string()
    }
}

/// Canonical diets: "veggie" = "vegetarian", "eating meat" = "eat meat", "素食者" = "吃素".
fn diet_key(value: &str) -> String {
    let general = key(value);
    let canonical = match general.as_str() {
        "veggie" | "vegetarian" | "a vegetarian" => "vegetarian",
        "pescetarian" | "pescatarian" => "pescatarian",
        "plant-based" | "plant based" | "vegan" => "vegan",
        "素食者" | "素食主义者" | "素食" | "吃素" | "吃斋" | "素食主义" => "吃素",
        "纯素" | "纯素食" | "纯素食者" | "吃全素" => "纯素",
        "吃荤" | "吃肉" => "吃肉",
        "酒" | "喝酒" => "喝酒",
        "咖啡" | "喝咖啡" => "喝咖啡",
        other => {
            let words: Vec<&str> = other.split_whitespace().collect();
            return match words.as_slice() {
                ["eat" | "eating" | "eats" | "ate", rest @ ..] if !rest.is_empty() => {
                    format!("eat {}", rest.join(" "))
                }
                ["drink" | "drinking" | "drinks" | "drank", rest @ ..] if !rest.is_empty() => {
                    format!("drink {}", rest.join(" "))
                }
                [food] if is_food(food) => format!("eat {food}"),
                [drink] if is_drink(drink) => format!("drink {drink}"),
                _ => other.to_string(),
            };
        }
    };
    canonical.to_string()
}

fn is_drink(word: &str) -> bool {
    matches!(
        word,
        "coffee" | "alcohol" | "booze" | "beer" | "wine" | "caffeine" | "soda" | "milk" | "spirits"
    )
}

fn is_food(word: &str) -> bool {
    matches!(
        word,
        "meat" | "fish" | "pork" | "beef" | "dairy" | "eggs" | "chicken" | "seafood" | "gluten"
    )
}

/// Canonical relationship states ("got hitched" = "married", "结婚" = "已婚").
fn relationship_key(value: &str) -> String {
    let general = key(value);
    let canonical = match general.as_str() {
        "hitched" | "married" | "newlywed" | "a newlywed" | "newlyweds" | "tied the knot"
        | "got hitched" | "said i do" | "said we do" => "married",
        "seeing someone"
        | "seeing someone new"
        | "dating"
        | "in a relationship"
        | "in a committed relationship"
        | "taken"
        | "spoken for"
        | "off the market" => "dating",
        "widow" | "a widow" | "widower" | "a widower" | "widowed" => "widowed",
        "living together" | "cohabiting" => "living together",
        other if other.starts_with("in a ") && other.ends_with("relationship") => "dating",
        "unattached" | "single" | "back on the market" => "single",
        "结婚" | "已婚" | "成家" => "已婚",
        "恋爱" | "谈恋爱" | "脱单" | "有对象" | "有女朋友" | "有男朋友" | "在一起" | "交往" => {
            "恋爱"
        }
        "离婚" | "离异" => "离婚",
        "单身" | "分手" => "单身",
        other => other,
    };
    canonical.to_string()
}

/// Terms dropped from qualifiers: articles, quantifiers and time fillers.
const QUALIFIER_DROPS: &[&str] = &[
    "a", "an", "the", "every", "each", "per", "a", "of", "in", "on", "at", "for", "next", "this",
    "last", "my", "our", "your", "i", "we", "times", "time", "about", "around", "some", "new",
    "current", "now", "to", "and", "or", "coming", "upcoming", "than", "more", "less", "than",
    "plan", "planning", "go", "going", "每", "个", "一", "这", "下", "的", "了", "要", "能", "会",
];

/// Word forms that count as the same qualifier term.
fn canonical_term(word: &str) -> &str {
    match word {
        "km" | "kms" | "kilometer" | "kilometers" | "kilometre" | "kilometres" | "k" => "kilometre",
        "mi" | "mile" | "miles" => "mile",
        "hr" | "hrs" | "hour" | "hours" | "h" => "hour",
        "min" | "mins" | "minute" | "minutes" => "minute",
        "kg" | "kgs" | "kilo" | "kilos" | "kilogram" | "kilograms" => "kg",
        "lb" | "lbs" | "pound" | "pounds" => "pound",
        "daily" | "days" | "day" | "nightly" => "day",
        "weekly" | "week" | "weeks" | "wk" => "week",
        "monthly" | "month" | "months" | "mo" => "month",
        "yearly" | "annually" | "annual" | "year" | "years" | "yr" | "yrs" => "year",
        "children" | "child" | "kids" | "kid" => "kid",
        "autumn" | "fall" => "autumn",
        "每周" | "一周" | "周" | "星期" | "礼拜" | "每星期" | "每礼拜" => "周",
        "每天" | "每日" | "天" | "日" | "一天" => "天",
        "每月" | "月" | "一个月" => "月",
        "每年" | "年" | "一年" => "年",
        "每晚" | "晚" | "晚上" => "晚",
        "个小时" | "小时" | "钟头" => "小时",
        "公里" | "千米" => "公里",
        "块" | "块钱" | "元" => "元",
        "孩子" | "小孩" | "娃" => "孩子",
        other => other,
    }
}

/// A qualifier from its words: canonical, stemmed (English), without fillers, sorted, unique,
/// joined by one space.
pub(super) fn qualifier<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let analyzer = Analyzer::shared();
    let mut terms: Vec<String> = Vec::new();
    for word in words {
        for piece in word.split_whitespace() {
            let lower = piece.to_lowercase();
            let canonical = canonical_term(&lower);
            if canonical.is_empty() || QUALIFIER_DROPS.contains(&canonical) {
                continue;
            }
            if canonical.chars().any(crate::is_cjk) {
                terms.push(canonical.to_string());
            } else {
                terms.extend(analyzer.terms(canonical));
            }
        }
    }
    terms.sort();
    terms.dedup();
    terms.join(" ")
}

/// The first number in `value` as digits ("forty-two kilometres" → "42", "$1,200" → "1200",
/// "80k" → "80000", "四十二公里" → "42", "两万" → "20000").
pub(super) fn number_key(value: &str) -> Option<String> {
    let lower = value.to_lowercase();
    let first_digit = lower.find(|c: char| c.is_ascii_digit());
    let first_han = lower.find(is_chinese_numeral);
    let words = english_number_value(&lower);
    match (first_digit, first_han, words) {
        (Some(d), h, _) if h.is_none_or(|h| d <= h) => digits_value(&lower, d),
        (_, Some(h), _) => chinese_number_value(&lower, h),
        (None, None, Some(n)) => Some(format_number(n)),
        _ => None,
    }
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// The number written with digits from byte `start` (separators dropped, k/m/万 multiplied).
fn digits_value(text: &str, start: usize) -> Option<String> {
    let rest = text.get(start..)?;
    let mut digits = String::new();
    let mut end = 0;
    let bytes: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        let next_is_digit = bytes.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() {
            digits.push(c);
        } else if c == '.' && next_is_digit {
            digits.push('.');
        } else if !(c == ',' && next_is_digit) {
            break;
        }
        end += c.len_utf8();
        i += 1;
    }
    let value: f64 = digits.parse().ok()?;
    let after = rest.get(end..).unwrap_or("").trim_start();
    let factor = match after.chars().next() {
        Some('k')
            if after
                .get(1..)
                .is_none_or(|r| !r.starts_with(|c: char| c.is_alphabetic())) =>
        {
            1e3
        }
        Some('m')
            if after
                .get(1..)
                .is_none_or(|r| !r.starts_with(|c: char| c.is_alphabetic())) =>
        {
            1e6
        }
        Some('万') => 1e4,
        Some('千') => 1e3,
        Some('亿') => 1e8,
        _ => 1.0,
    };
    Some(format_number(value * factor))
}

fn is_chinese_numeral(c: char) -> bool {
    chinese_digit(c).is_some() || matches!(c, '十' | '百' | '千' | '万' | '亿')
}

fn chinese_digit(c: char) -> Option<u64> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

/// The Chinese numeral starting at byte `start` ("二十八" → 28, "三千五" → 3500).
fn chinese_number_value(text: &str, start: usize) -> Option<String> {
    let run: String = text
        .get(start..)?
        .chars()
        .take_while(|&c| is_chinese_numeral(c))
        .collect();
    parse_chinese_numeral(&run).map(|n| n.to_string())
}

/// Value of a Chinese numeral string.
pub(super) fn parse_chinese_numeral(run: &str) -> Option<u64> {
    if run.is_empty() {
        return None;
    }
    let (mut total, mut section, mut digit): (u64, u64, Option<u64>) = (0, 0, None);
    let mut last_unit = 1u64;
    for c in run.chars() {
        if let Some(d) = chinese_digit(c) {
            digit = Some(d);
            continue;
        }
        let unit = match c {
            '十' => 10,
            '百' => 100,
            '千' => 1000,
            '万' => 10_000,
            '亿' => 100_000_000,
            _ => return None,
        };
        if unit >= 10_000 {
            section += digit.take().unwrap_or(0);
            total += section.max(1) * unit;
            section = 0;
        } else {
            section += digit.take().unwrap_or(1) * unit;
        }
        last_unit = unit;
    }
    // A trailing digit after a unit is a shortened next place: 三千五 = 3500, 两万三 = 23000.
    if let Some(d) = digit {
        let implied = if last_unit >= 10 && run.chars().count() > 1 {
            let place = if last_unit >= 10_000 {
                last_unit / 10
            } else {
                (last_unit / 10).max(1)
            };
            let ends_with_unit_digit = run
                .chars()
                .rev()
                .nth(1)
                .is_some_and(|c| !matches!(c, '零' | '〇') && chinese_digit(c).is_none());
            if ends_with_unit_digit {
                place
            } else {
                1
            }
        } else {
            1
        };
        section += d * implied;
    }
    Some(total + section)
}

const ONES: &[(&str, u64)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("dozen", 12),
    ("once", 1),
    ("twice", 2),
    ("thrice", 3),
];

fn word_number(word: &str) -> Option<u64> {
    ONES.iter().find(|(w, _)| *w == word).map(|&(_, n)| n)
}

/// The value of the first run of English number words ("forty-two", "two hundred and five").
fn english_number_value(text: &str) -> Option<f64> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '-')
        .map(|w| w.trim_matches(|c: char| !c.is_alphabetic()))
        .collect();
    let start = words.iter().position(|w| word_number(w).is_some())?;
    let (value, _) = number_run(words.get(start..)?);
    Some(value as f64)
}

/// Value and length of the number-word run at the start of `words`.
fn number_run(words: &[&str]) -> (u64, usize) {
    let (mut total, mut current, mut used) = (0u64, 0u64, 0usize);
    for (i, w) in words.iter().enumerate() {
        if let Some(n) = word_number(w) {
            current += n;
        } else if *w == "hundred" {
            current = current.max(1) * 100;
        } else if *w == "thousand" {
            total += current.max(1) * 1000;
            current = 0;
        } else if *w == "and" && words.get(i + 1).is_some_and(|n| word_number(n).is_some()) {
        } else {
            break;
        }
        used = i + 1;
    }
    (total + current, used)
}

/// `text` with each run of English number words replaced by its digits.
pub(super) fn english_numbers_to_digits(text: &str) -> String {
    if !text.split_whitespace().any(|w| {
        w.split('-')
            .any(|p| word_number(p.trim_matches(|c: char| !c.is_alphabetic())).is_some())
    }) {
        return text.to_string();
    }
    let spaced = text.replace('-', " - ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if word_number(w).is_some() {
            let run: Vec<&str> = words
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .copied()
                .filter(|w| *w != "-")
                .collect();
            let (value, used) = number_run(&run);
            out.push(value.to_string());
            // Skip the words used, counting the hyphens between them.
            let mut consumed = 0;
            while consumed < used {
                if words.get(i).is_some_and(|w| *w != "-") {
                    consumed += 1;
                }
                i += 1;
            }
            continue;
        }
        out.push((*w).to_string());
        i += 1;
    }
    out.join(" ").replace(" - ", "-")
}

/// `text` with Chinese numeral runs as digits ("五月三号" → "5月3号").
pub(super) fn chinese_numerals_to_digits(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    for c in text.chars() {
        if is_chinese_numeral(c) {
            run.push(c);
            continue;
        }
        flush_numeral(&mut out, &mut run);
        out.push(c);
    }
    flush_numeral(&mut out, &mut run);
    out
}

fn flush_numeral(out: &mut String, run: &mut String) {
    if run.is_empty() {
        return;
    }
    match parse_chinese_numeral(run) {
        Some(n) => out.push_str(&n.to_string()),
        None => out.push_str(run),
    }
    run.clear();
}

/// English weekday names (and, with `abbreviations`, their short forms) as "weekday-N".
fn weekdays(text: &str, abbreviations: bool) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|w| {
            let bare = w.trim_matches(|c: char| !c.is_alphabetic());
            match weekday_number(bare, abbreviations) {
                Some(n) => w.replace(bare, &format!("weekday-{n}")),
                None => w.to_string(),
            }
        })
        .collect();
    words.join(" ")
}

fn weekday_number(word: &str, abbreviations: bool) -> Option<u8> {
    let full = match word {
        "monday" | "mondays" => Some(1),
        "tuesday" | "tuesdays" => Some(2),
        "wednesday" | "wednesdays" => Some(3),
        "thursday" | "thursdays" => Some(4),
        "friday" | "fridays" => Some(5),
        "saturday" | "saturdays" => Some(6),
        "sunday" | "sundays" => Some(7),
        _ => None,
    };
    if full.is_some() || !abbreviations {
        return full;
    }
    match word {
        "mon" => Some(1),
        "tue" | "tues" => Some(2),
        "wed" | "weds" => Some(3),
        "thu" | "thur" | "thurs" => Some(4),
        "fri" => Some(5),
        "sat" => Some(6),
        "sun" => Some(7),
        _ => None,
    }
}

/// Chinese weekday names (周三, 星期三, 礼拜三, 週三, 周日/星期天…) as "weekday-N", with 下/这
/// in front as "next "/"this ".
fn chinese_weekdays(text: &str) -> String {
    if !text
        .chars()
        .any(|c| matches!(c, '周' | '週' | '星' | '礼' | '禮'))
    {
        return text.to_string();
    }
    let mut out = text.to_string();
    for prefix in ["星期", "礼拜", "禮拜", "周", "週"] {
        for (day, n) in [
            ("一", 1),
            ("二", 2),
            ("三", 3),
            ("四", 4),
            ("五", 5),
            ("六", 6),
            ("日", 7),
            ("天", 7),
            ("末", 0),
        ] {
            let name = format!("{prefix}{day}");
            let canonical = if n == 0 {
                "weekend".to_string()
            } else {
                format!("weekday-{n}")
            };
            out = out
                .replace(&format!("下个{name}"), &format!("next {canonical}"))
                .replace(&format!("下{name}"), &format!("next {canonical}"))
                .replace(&format!("这个{name}"), &format!("this {canonical}"))
                .replace(&format!("这{name}"), &format!("this {canonical}"))
                .replace(&format!("本{name}"), &format!("this {canonical}"))
                .replace(&name, &canonical);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_words_digits_and_chinese() {
        for (text, want) in [
            ("42 kilometres", "42"),
            ("forty-two kilometres", "42"),
            ("$1,200", "1200"),
            ("80k", "80000"),
            ("3.5 hours", "3.5"),
            ("two hundred and five", "205"),
            ("a dozen", "12"),
            ("四十二公里", "42"),
            ("二十八岁", "28"),
            ("两万", "20000"),
            ("三千五", "3500"),
            ("十七", "17"),
            ("一百零五", "105"),
            ("2万", "20000"),
            ("1.5万", "15000"),
            ("17公里", "17"),
        ] {
            assert_eq!(number_key(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(number_key("many"), None);
    }

    #[test]
    fn weekday_keys_agree_across_languages_and_forms() {
        for text in [
            "Wednesday",
            "wednesday",
            "Wed",
            "周三",
            "星期三",
            "礼拜三",
            "週三",
        ] {
            assert_eq!(value_key(Slot::Date, text), "weekday-3", "{text}");
        }
        assert_eq!(value_key(Slot::Date, "下周四"), "next weekday-4");
        assert_eq!(value_key(Slot::Date, "next Thursday"), "next weekday-4");
    }

    #[test]
    fn general_keys() {
        assert_eq!(key("the Netherlands"), "netherlands");
        assert_eq!(key("  Porto. "), "porto");
        assert_eq!(key("forty-two"), "42");
        assert_eq!(value_key(Slot::Diet, "eating meat"), "eat meat");
        assert_eq!(value_key(Slot::Diet, "meat"), "eat meat");
        assert_eq!(value_key(Slot::Status, "QA testing phase"), "qa testing");
        assert_eq!(value_key(Slot::Status, "测试阶段"), "测试");
    }

    #[test]
    fn qualifiers_match_across_phrasings() {
        assert_eq!(
            qualifier(["run", "kilometres", "every week"]),
            qualifier(["run", "km", "a week"])
        );
        assert_eq!(
            qualifier(["每周", "跑", "公里"]),
            qualifier(["一周", "跑", "公里"])
        );
    }
}
