//! Emotional arousal in [0, 1] from compiled lexicons and typographic cues (EN + ZH).
//!
//! Evidence `x ≥ 0` is summed from:
//! - **emotion words** (`lexicon/arousal_{en,zh}.txt`): high-arousal words add their weight,
//!   calm words subtract; an intensifier before the word (very, so, 太, 非常, 超级…) or a
//!   degree complement after it (开心死了) multiplies it; a negator before it (not, never, 不,
//!   没…) keeps only [`NEGATED_SHARE`] of a high-arousal word and turns a calm word into a
//!   weak positive ("not calm"). English words match after stemming (one entry covers
//!   inflections); Chinese entries match as substrings, longest first, so they do not depend on
//!   how jieba cuts the sentence. The word evidence is divided by `sqrt(tokens / 12)` for longer
//!   texts: one emotional word in a long neutral paragraph is weaker than in a short line.
//! - **typography**: each `!`/`！` ([`EXCLAMATION`], at most 4 count), runs of repeated
//!   `!`/`?` ("!!!", "？？", "?!": [`REPEATED_PUNCT`] each, at most 3), ALL-CAPS words other than
//!   common acronyms ([`ALL_CAPS`], at most 3), emoji ([`EMOJI`], at most 4) and elongated
//!   words ("sooo", "哈哈哈": [`ELONGATED`], at most 2).
//!
//! The score is `1 − exp(−x)`: monotone, 0 for no evidence, saturating towards 1.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use mnemos_core::ModelResult;
use mnemos_text::{is_cjk, Analyzer, TokenKind};

use crate::ngram::{token_units, TokenUnit};
use crate::Ctx;

/// Share of a high-arousal word's weight kept when it is negated ("not angry").
pub const NEGATED_SHARE: f32 = 0.3;
/// Weight of a negated calm word ("not calm", "不平静").
pub const NEGATED_CALM: f32 = 0.15;
/// Bonus for an intensifier itself (emphasis even without a listed emotion word).
pub const INTENSIFIER_BONUS: f32 = 0.1;
pub const EXCLAMATION: f32 = 0.25;
pub const REPEATED_PUNCT: f32 = 0.4;
pub const ALL_CAPS: f32 = 0.45;
pub const EMOJI: f32 = 0.3;
pub const ELONGATED: f32 = 0.3;
/// Tokens up to which word evidence is not damped for length.
pub const UNDAMPED_TOKENS: f32 = 12.0;

/// English words within this many tokens after an intensifier are intensified.
const EN_INTENSIFIER_REACH: usize = 2;
/// English words within this many tokens after a negator are negated.
const EN_NEGATOR_REACH: usize = 3;
/// Chinese: characters before an emotion word searched for an intensifier / a negator.
const ZH_INTENSIFIER_CHARS: usize = 4;
const ZH_NEGATOR_CHARS: usize = 2;

/// Uppercase words that are names of things, not shouting.
const ACRONYMS: &[&str] = &[
    "I", "A", "OK", "TV", "AI", "US", "UK", "USA", "EU", "UN", "PC", "ID", "DJ", "CEO", "NYC",
    "LA", "PM", "AM", "BBC", "CNN", "NBA", "NFL", "GPS", "CV", "IT", "HR", "PR", "MBA", "PHD",
    "DIY", "UFO", "VR", "NY", "SF", "DC", "BTW", "FYI", "ASAP", "IMO", "LOL",
];

const AROUSAL_EN: &str = include_str!("lexicon/arousal_en.txt");
const AROUSAL_ZH: &str = include_str!("lexicon/arousal_zh.txt");
const MODIFIERS_EN: &str = include_str!("lexicon/modifiers_en.txt");
const MODIFIERS_ZH: &str = include_str!("lexicon/modifiers_zh.txt");

struct Lexicon {
    /// Stemmed English term → weight.
    en_words: HashMap<String, f32>,
    /// Lowercase English surface → factor.
    en_intensifiers: HashMap<String, f32>,
    en_negators: HashSet<String>,
    /// Chinese entries, longest first.
    zh_words: Vec<(String, f32)>,
    zh_intensifiers: Vec<(String, f32)>,
    zh_postfixes: Vec<(String, f32)>,
    zh_negators: Vec<String>,
}

/// One `kind word [factor]` modifier line.
fn parse_modifier_line(line: &str) -> Option<(&str, &str, f32)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let kind = parts.next()?;
    let word = parts.next()?;
    match kind {
        "negator" => Some((kind, word, 1.0)),
        "intensifier" | "postfix" => {
            let factor: f32 = parts.next()?.parse().ok()?;
            (factor.is_finite() && factor > 0.0).then_some((kind, word, factor))
        }
        _ => None,
    }
}

/// One `word weight` line (weights may be negative).
fn parse_weight_line(line: &str) -> Option<(&str, f32)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let word = parts.next()?;
    let weight: f32 = parts.next()?.parse().ok()?;
    (weight.is_finite() && (-1.0..=1.0).contains(&weight)).then_some((word, weight))
}

fn by_length_desc<T>(entries: &mut [(String, T)]) {
    entries.sort_by_key(|e| std::cmp::Reverse(e.0.chars().count()));
}

fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let analyzer = Analyzer::shared();
        let mut en_words: HashMap<String, f32> = HashMap::new();
        for (word, weight) in AROUSAL_EN.lines().filter_map(parse_weight_line) {
            let units = token_units(analyzer, word);
            if let [unit] = units.as_slice() {
                // Several entries can share a stem; the strongest wins.
                let entry = en_words.entry(unit.term.clone()).or_insert(weight);
                if weight.abs() > entry.abs() {
                    *entry = weight;
                }
            }
        }
        let mut en_intensifiers = HashMap::new();
        let mut en_negators = HashSet::new();
        for (kind, word, factor) in MODIFIERS_EN.lines().filter_map(parse_modifier_line) {
            match kind {
                "intensifier" => {
                    en_intensifiers.insert(word.to_lowercase(), factor);
                }
                "negator" => {
                    en_negators.insert(word.to_lowercase());
                }
                _ => {}
            }
        }
        let mut zh_words: Vec<(String, f32)> = AROUSAL_ZH
            .lines()
            .filter_map(parse_weight_line)
            .map(|(w, x)| (w.to_string(), x))
            .collect();
        by_length_desc(&mut zh_words);
        let mut zh_intensifiers = Vec::new();
        let mut zh_postfixes = Vec::new();
        let mut zh_negators = Vec::new();
        for (kind, word, factor) in MODIFIERS_ZH.lines().filter_map(parse_modifier_line) {
            match kind {
                "intensifier" => zh_intensifiers.push((word.to_string(), factor)),
                "postfix" => zh_postfixes.push((word.to_string(), factor)),
                "negator" => zh_negators.push(word.to_string()),
                _ => {}
            }
        }
        by_length_desc(&mut zh_intensifiers);
        by_length_desc(&mut zh_postfixes);
        zh_negators.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
        Lexicon {
            en_words,
            en_intensifiers,
            en_negators,
            zh_words,
            zh_intensifiers,
            zh_postfixes,
            zh_negators,
        }
    })
}

/// Arousal of `text` in [0, 1]. See the module documentation.
pub fn arousal(ctx: &Ctx, text: &str) -> ModelResult<f32> {
    let evidence = arousal_evidence(ctx.analyzer, text);
    let score = 1.0 - (-evidence).exp();
    Ok(if score.is_finite() {
        score.clamp(0.0, 1.0)
    } else {
        0.0
    })
}

/// The evidence `x` behind [`arousal`] (≥ 0).
pub fn arousal_evidence(analyzer: &Analyzer, text: &str) -> f32 {
    let lexicon = lexicon();
    let units = token_units(analyzer, text);
    let mut words =
        english_word_evidence(lexicon, text, &units) + chinese_word_evidence(lexicon, text);
    let n = units.len() as f32;
    if n > UNDAMPED_TOKENS {
        words /= (n / UNDAMPED_TOKENS).sqrt();
    }
    let mut cues = typography_evidence(text);
    let mut caps = 0usize;
    let mut elongated = 0usize;
    for unit in &units {
        let Some(surface) = text.get(unit.start..unit.end) else {
            continue;
        };
        if unit.kind == TokenKind::Word && is_shouted(surface) {
            caps += 1;
        }
        if is_elongated(surface) {
            elongated += 1;
        }
    }
    cues += ALL_CAPS * caps.min(3) as f32 + ELONGATED * elongated.min(2) as f32;
    (words + cues).max(0.0)
}

fn english_word_evidence(lexicon: &Lexicon, text: &str, units: &[TokenUnit]) -> f32 {
    let mut sum = 0.0;
    let mut intensity: Option<(f32, usize)> = None; // factor, last index it reaches
    let mut negated_until: Option<usize> = None;
    for (i, unit) in units.iter().enumerate() {
        if unit.kind != TokenKind::Word {
            continue;
        }
        let Some(surface) = text.get(unit.start..unit.end) else {
            continue;
        };
        let surface = surface
            .to_lowercase()
            .replace(['\u{2019}', '\u{02BC}'], "'");
        if let Some(&factor) = lexicon.en_intensifiers.get(&surface) {
            intensity = Some((factor, i + EN_INTENSIFIER_REACH));
            sum += INTENSIFIER_BONUS;
            continue;
        }
        if lexicon.en_negators.contains(&surface) || surface.ends_with("n't") {
            negated_until = Some(i + EN_NEGATOR_REACH);
            continue;
        }
        let Some(&weight) = lexicon.en_words.get(&unit.term) else {
            continue;
        };
        let negated = negated_until.is_some_and(|end| i <= end);
        let factor = intensity
            .filter(|&(_, end)| i <= end)
            .map_or(1.0, |(f, _)| f);
        sum += modified(weight, factor, negated);
    }
    sum
}

/// A lexicon weight after intensification and negation.
fn modified(weight: f32, factor: f32, negated: bool) -> f32 {
    match (weight > 0.0, negated) {
        (true, true) => weight * NEGATED_SHARE,
        (true, false) => weight * factor,
        (false, true) => NEGATED_CALM,
        (false, false) => weight,
    }
}

fn chinese_word_evidence(lexicon: &Lexicon, text: &str) -> f32 {
    if !text.chars().any(is_cjk) {
        return 0.0;
    }
    let mut sum = 0.0;
    let mut pos = 0;
    while pos < text.len() {
        let Some(rest) = text.get(pos..) else {
            break;
        };
        let Some(c) = rest.chars().next() else {
            break;
        };
        let found = lexicon
            .zh_words
            .iter()
            .find(|(word, _)| rest.starts_with(word.as_str()));
        let Some((word, weight)) = found else {
            pos += c.len_utf8();
            continue;
        };
        let before = chars_before(text, pos, ZH_INTENSIFIER_CHARS);
        let near = chars_before(text, pos, ZH_NEGATOR_CHARS);
        let negated = lexicon
            .zh_negators
            .iter()
            .any(|n| near.contains(n.as_str()));
        let mut factor = lexicon
            .zh_intensifiers
            .iter()
            .find(|(w, _)| before.contains(w.as_str()))
            .map_or(1.0, |(_, f)| *f);
        let after = rest.get(word.len()..).unwrap_or("");
        let mut consumed = word.len();
        if let Some((postfix, f)) = lexicon
            .zh_postfixes
            .iter()
            .find(|(w, _)| after.starts_with(w.as_str()))
        {
            factor *= f;
            // 死了 in 开心死了 is degree, not death.
            consumed += postfix.len();
        }
        // An intensifier that is part of a calm phrase (好好休息) does not make it aroused.
        if factor > 1.0 && !negated && *weight > 0.0 {
            sum += INTENSIFIER_BONUS;
        }
        sum += modified(*weight, factor, negated);
        pos += consumed;
    }
    sum
}

/// Up to `n` characters of `text` ending at byte `pos`.
fn chars_before(text: &str, pos: usize, n: usize) -> &str {
    let Some(head) = text.get(..pos) else {
        return "";
    };
    let start = head
        .char_indices()
        .rev()
        .take(n)
        .last()
        .map_or(pos, |(i, _)| i);
    head.get(start..).unwrap_or("")
}

fn typography_evidence(text: &str) -> f32 {
    let mut exclamations = 0usize;
    let mut runs = 0usize;
    let mut run_len = 0usize;
    let mut emoji = 0usize;
    for c in text.chars() {
        let punct = matches!(c, '!' | '！' | '?' | '？');
        if matches!(c, '!' | '！') {
            exclamations += 1;
        }
        if punct {
            run_len += 1;
            if run_len == 2 {
                runs += 1;
            }
        } else {
            run_len = 0;
        }
        if is_emoji(c) {
            emoji += 1;
        }
    }
    EXCLAMATION * exclamations.min(4) as f32
        + REPEATED_PUNCT * runs.min(3) as f32
        + EMOJI * emoji.min(4) as f32
}

/// Pictographic emoji blocks (faces, symbols, transport, supplemental symbols) and the
/// miscellaneous symbols / dingbats blocks (☀ ❤ ✨).
fn is_emoji(c: char) -> bool {
    matches!(u32::from(c), 0x1F300..=0x1FAFF | 0x2600..=0x27BF)
}

/// An all-uppercase word of at least two letters that is not a common acronym.
fn is_shouted(surface: &str) -> bool {
    let letters = surface.chars().filter(|c| c.is_alphabetic()).count();
    letters >= 2
        && surface
            .chars()
            .all(|c| !c.is_alphabetic() || c.is_uppercase())
        && !ACRONYMS.contains(&surface.to_uppercase().as_str())
}

/// A word with one character repeated three times in a row ("sooo", "哈哈哈").
fn is_elongated(surface: &str) -> bool {
    let mut previous = None;
    let mut run = 0;
    for c in surface.chars() {
        if Some(c) == previous {
            run += 1;
            if run >= 3 && c.is_alphabetic() {
                return true;
            }
        } else {
            previous = Some(c);
            run = 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_embed::HashEmbedder;

    fn score(text: &str) -> f32 {
        let embedder = HashEmbedder::default();
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder: &embedder,
        };
        arousal(&ctx, text).expect("arousal")
    }

    #[test]
    fn lexicon_files_parse_completely() {
        for line in AROUSAL_EN.lines().chain(AROUSAL_ZH.lines()) {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                assert!(parse_weight_line(t).is_some(), "bad lexicon line {t:?}");
            }
        }
        for line in MODIFIERS_EN.lines().chain(MODIFIERS_ZH.lines()) {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                assert!(parse_modifier_line(t).is_some(), "bad modifier line {t:?}");
            }
        }
        let lexicon = lexicon();
        assert!(lexicon.en_words.len() > 120, "{}", lexicon.en_words.len());
        assert!(lexicon.zh_words.len() > 100);
    }

    #[test]
    fn english_ordering() {
        let furious = score("I'm SO furious!!!");
        let fine = score("it is fine");
        assert!(furious > 0.8, "{furious}");
        assert!(fine < 0.1, "{fine}");
        assert!(score("I am angry") > score("I am not angry"));
        assert!(score("I am extremely excited") > score("I am excited"));
        assert!(score("We won the final!!! 🎉") > score("We won the final."));
        assert!(score("I feel calm and relaxed") < score("I feel happy"));
        assert_eq!(score("The meeting is on Tuesday at noon."), 0.0);
    }

    #[test]
    fn chinese_ordering() {
        let angry = score("我太生气了！！！");
        let calm = score("今天还好，挺平静的。");
        assert!(angry > 0.8, "{angry}");
        assert!(calm < 0.1, "{calm}");
        assert!(score("我很开心") > score("我不开心"));
        assert!(score("我开心死了") > score("我开心"));
        assert!(score("我非常害怕") > score("我害怕"));
        assert_eq!(score("明天下午三点开会。"), 0.0);
    }

    #[test]
    fn typography_counts() {
        assert!(score("really??") > score("really"));
        assert!(score("NO WAY") > score("no way"));
        assert!(score("sooo good") > score("so good"));
        assert!(score("哈哈哈哈") > 0.0);
        assert_eq!(score("I work at the BBC in the UK."), 0.0);
        // Emoji alone.
        assert!(score("😡😡") > 0.4);
    }

    #[test]
    fn weird_input_stays_in_range() {
        for text in [
            "",
            " ",
            "!!!!!!!!!!!!!!!!!!!!!!!!",
            "\u{0}\u{FFFF}",
            "🎉".repeat(500).as_str(),
        ] {
            let s = score(text);
            assert!((0.0..=1.0).contains(&s), "{text:?} {s}");
        }
        let long = "furious ".repeat(5000);
        assert!(score(&long) <= 1.0);
    }
}
