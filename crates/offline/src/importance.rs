//! Importance 1..=10 of an exchange from self-disclosure, entities, numbers, dates and novelty.
//!
//! The features are read from the exchange's user lines (what the user disclosed; the
//! assistant's words are not memories about the user), or from all lines when there is no user
//! line:
//! - `first_person` ∈ {0, 1}: the user speaks about themself (I, me, my, I'm…; 我, 我的, 俺…).
//! - `topic`: the summed weights (0..1 each) of distinct personal-topic words from
//!   `lexicon/importance_{en,zh}.txt` — family, health, work/study, feelings, life events,
//!   preferences — capped at [`TOPIC_CAP`]. It counts fully with first person and half without
//!   (a diagnosis of "my mother" is a disclosure; one in the news is not).
//! - `entities`, `numbers`: entity-like words and numbers/dates (the heuristics of
//!   [`crate::compress::classify_units`]), each capped at 3.
//! - `novelty`: the share of content words (analyzer terms that are not background-prior
//!   words) absent from `past_summary`, scaled by `min(content words, 8) / 8` so that a
//!   one-word reply is not "all new".
//!
//! `raw = 0.75·first_person + 1.5·topic·(1 or 0.5) + 0.8·entities + 0.6·numbers + 2.0·novelty`
//! and `importance = 1 + round(9 · (1 − exp(−raw / 3.5)))`: "ok" rates 1, a bare preference
//! around 4, a personal life event 7–9.

use std::collections::HashSet;
use std::sync::OnceLock;

use mnemos_core::memory_model::Line;
use mnemos_core::{ModelResult, Role};
use mnemos_text::{Analyzer, TokenKind};

use crate::compress::{classify_units, Salience};
use crate::ngram::{background_prob, token_units, UNLISTED_PRIOR};
use crate::Ctx;

pub const W_FIRST_PERSON: f64 = 0.75;
pub const W_TOPIC: f64 = 1.5;
/// Share of the topic weight without first person.
pub const TOPIC_SHARE_WITHOUT_FIRST_PERSON: f64 = 0.5;
pub const TOPIC_CAP: f64 = 2.5;
pub const W_ENTITY: f64 = 0.8;
pub const W_NUMBER: f64 = 0.6;
pub const W_NOVELTY: f64 = 2.0;
/// Content words at which novelty counts fully.
pub const NOVELTY_FULL_AT: f64 = 8.0;
/// Raw score at which importance is 1 + 9·(1 − 1/e) ≈ 6.7.
pub const SCALE: f64 = 3.5;

/// English first-person forms (lowercase surfaces).
const FIRST_PERSON_EN: &[&str] = &[
    "i", "me", "my", "mine", "myself", "i'm", "i've", "i'll", "i'd", "im", "ive",
];
/// Chinese first-person forms, matched as substrings.
const FIRST_PERSON_ZH: &[&str] = &["我", "俺", "本人", "咱"];

const IMPORTANCE_EN: &str = include_str!("lexicon/importance_en.txt");
const IMPORTANCE_ZH: &str = include_str!("lexicon/importance_zh.txt");

struct TopicLexicon {
    /// Stemmed English term → weight.
    en: std::collections::HashMap<String, f64>,
    /// Chinese entries, longest first.
    zh: Vec<(String, f64)>,
}

fn parse_topic_line(line: &str) -> Option<(&str, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let _category = parts.next()?;
    let word = parts.next()?;
    let weight: f64 = parts.next()?.parse().ok()?;
    (weight.is_finite() && (0.0..=1.0).contains(&weight)).then_some((word, weight))
}

fn topics() -> &'static TopicLexicon {
    static TOPICS: OnceLock<TopicLexicon> = OnceLock::new();
    TOPICS.get_or_init(|| {
        let analyzer = Analyzer::shared();
        let mut en = std::collections::HashMap::new();
        for (word, weight) in IMPORTANCE_EN.lines().filter_map(parse_topic_line) {
            if let [unit] = token_units(analyzer, word).as_slice() {
                let entry = en.entry(unit.term.clone()).or_insert(weight);
                *entry = f64::max(*entry, weight);
            }
        }
        let mut zh: Vec<(String, f64)> = IMPORTANCE_ZH
            .lines()
            .filter_map(parse_topic_line)
            .map(|(w, x)| (w.to_string(), x))
            .collect();
        zh.sort_by_key(|e| std::cmp::Reverse(e.0.chars().count()));
        TopicLexicon { en, zh }
    })
}

/// The features behind [`rate_importance`], for inspection and tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportanceFeatures {
    pub first_person: bool,
    pub topic: f64,
    pub entities: usize,
    pub numbers: usize,
    pub novelty: f64,
    pub raw: f64,
}

/// Importance 1..=10 of `exchange` given `past_summary`. See the module documentation.
pub fn rate_importance(ctx: &Ctx, past_summary: &str, exchange: &[Line]) -> ModelResult<u8> {
    let features = importance_features(ctx.analyzer, past_summary, exchange);
    Ok(importance_from_raw(features.raw))
}

/// Map a raw score to 1..=10.
pub fn importance_from_raw(raw: f64) -> u8 {
    let raw = if raw.is_finite() { raw.max(0.0) } else { 0.0 };
    let level = 1.0 + (9.0 * (1.0 - (-raw / SCALE).exp())).round();
    level.clamp(1.0, 10.0) as u8
}

pub fn importance_features(
    analyzer: &Analyzer,
    past_summary: &str,
    exchange: &[Line],
) -> ImportanceFeatures {
    let user: Vec<&str> = exchange
        .iter()
        .filter(|l| l.role == Role::User)
        .map(|l| l.text.as_str())
        .collect();
    let texts: Vec<&str> = if user.is_empty() {
        exchange.iter().map(|l| l.text.as_str()).collect()
    } else {
        user
    };
    let lexicon = topics();
    let mut first_person = false;
    let mut topic_words: HashSet<String> = HashSet::new();
    let mut topic = 0.0;
    let mut entities = 0usize;
    let mut numbers = 0usize;
    let mut content: Vec<String> = Vec::new();
    for text in &texts {
        for cu in classify_units(analyzer, text) {
            let surface = text.get(cu.unit.start..cu.unit.end).unwrap_or("");
            match cu.salience {
                Some(Salience::Entity) => entities += 1,
                Some(Salience::Number | Salience::Date) => numbers += 1,
                None => {}
            }
            if cu.unit.kind == TokenKind::Word {
                let lower = surface.to_lowercase().replace('\u{2019}', "'");
                if FIRST_PERSON_EN.contains(&lower.as_str()) {
                    first_person = true;
                }
                if let Some(&w) = lexicon.en.get(&cu.unit.term) {
                    if topic_words.insert(cu.unit.term.clone()) {
                        topic += w;
                    }
                }
            }
        }
        if FIRST_PERSON_ZH.iter().any(|p| text.contains(p)) {
            first_person = true;
        }
        topic += chinese_topics(&lexicon.zh, text, &mut topic_words);
        content.extend(
            analyzer
                .terms(text)
                .into_iter()
                .filter(|t| background_prob(t) <= UNLISTED_PRIOR),
        );
    }
    let known: HashSet<String> = analyzer.terms(past_summary).into_iter().collect();
    let distinct: HashSet<&String> = content.iter().collect();
    let novelty = if distinct.is_empty() {
        0.0
    } else {
        let new = distinct
            .iter()
            .filter(|t| !known.contains(t.as_str()))
            .count();
        let share = new as f64 / distinct.len() as f64;
        share * (distinct.len() as f64).min(NOVELTY_FULL_AT) / NOVELTY_FULL_AT
    };
    let topic = topic.min(TOPIC_CAP);
    let topic_share = if first_person {
        1.0
    } else {
        TOPIC_SHARE_WITHOUT_FIRST_PERSON
    };
    let raw = W_FIRST_PERSON * f64::from(u8::from(first_person))
        + W_TOPIC * topic * topic_share
        + W_ENTITY * entities.min(3) as f64
        + W_NUMBER * numbers.min(3) as f64
        + W_NOVELTY * novelty;
    ImportanceFeatures {
        first_person,
        topic,
        entities,
        numbers,
        novelty,
        raw,
    }
}

/// Weights of distinct Chinese topic words in `text` (longest match first, non-overlapping).
fn chinese_topics(entries: &[(String, f64)], text: &str, seen: &mut HashSet<String>) -> f64 {
    if !mnemos_text::has_cjk(text) {
        return 0.0;
    }
    let mut sum = 0.0;
    let mut pos = 0;
    while let Some(rest) = text.get(pos..) {
        let Some(c) = rest.chars().next() else {
            break;
        };
        match entries.iter().find(|(w, _)| rest.starts_with(w.as_str())) {
            Some((word, weight)) => {
                if seen.insert(word.clone()) {
                    sum += weight;
                }
                pos += word.len();
            }
            None => pos += c.len_utf8(),
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_embed::HashEmbedder;

    fn rate(past: &str, lines: &[Line]) -> u8 {
        let embedder = HashEmbedder::default();
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder: &embedder,
        };
        rate_importance(&ctx, past, lines).expect("importance")
    }

    fn user(t: &str) -> Line {
        Line::new(Role::User, None, t)
    }

    #[test]
    fn lexicons_parse() {
        for line in IMPORTANCE_EN.lines().chain(IMPORTANCE_ZH.lines()) {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                assert!(parse_topic_line(t).is_some(), "bad line {t:?}");
            }
        }
        assert!(topics().en.len() > 100 && topics().zh.len() > 100);
    }

    #[test]
    fn english_disclosure_outranks_filler() {
        let cancer = rate("", &[user("My mother was diagnosed with cancer last week")]);
        let ok = rate("", &[user("ok")]);
        assert!(cancer >= 7, "{cancer}");
        assert_eq!(ok, 1);
        let name = rate(
            "",
            &[user("Hello, I am Alexander, 23 years old, from Japan.")],
        );
        let small_talk = rate("", &[user("That sounds nice.")]);
        assert!(name > small_talk, "{name} vs {small_talk}");
    }

    #[test]
    fn chinese_disclosure_outranks_filler() {
        let hospital = rate("", &[user("我妈妈上周被确诊了癌症，现在在北京住院。")]);
        let ok = rate("", &[user("好的")]);
        assert!(hospital >= 7, "{hospital}");
        assert_eq!(ok, 1);
        assert!(rate("", &[user("我最喜欢的运动是打篮球")]) > rate("", &[user("嗯嗯，是的")]));
    }

    #[test]
    fn repeated_information_is_less_important() {
        let line = [user(
            "I started a new job as a nurse at St Mary's Hospital.",
        )];
        let fresh = importance_features(Analyzer::shared(), "", &line);
        let known = importance_features(
            Analyzer::shared(),
            "The user started a new job as a nurse at St Mary's Hospital.",
            &line,
        );
        assert!(fresh.novelty > known.novelty);
        assert!(rate("", &line) >= rate("started new job nurse St Mary's Hospital", &line));
    }

    #[test]
    fn only_user_lines_count_when_present() {
        let bot = Line::new(
            Role::Assistant,
            None,
            "Did you visit Paris, London and Rome in 2019?",
        );
        let with_bot = rate("", &[bot.clone(), user("yes")]);
        assert!(with_bot <= 2, "{with_bot}");
        // Without a user line the assistant's text is what there is.
        assert!(rate("", &[bot]) > with_bot);
    }

    #[test]
    fn range_holds() {
        assert_eq!(importance_from_raw(f64::NAN), 1);
        assert_eq!(importance_from_raw(-3.0), 1);
        assert_eq!(importance_from_raw(1e9), 10);
        let huge =
            "My mother Anna in Paris had surgery on 3 May 2021 and 4 June 2022. ".repeat(200);
        let r = rate("", &[user(&huge)]);
        assert!((1..=10).contains(&r));
        assert!(rate("", &[user("")]) >= 1);
    }
}
