//! Compression by dropping low self-information tokens (the LLMLingua idea with an n-gram
//! model instead of an LLM), and the recoverability check.
//!
//! [`compress`]: every word gets its self-information `I(t) = −ln p(t | history)` under an
//! interpolated Kneser-Ney trigram model that reads the text itself online — each word is
//! scored before it is counted, so it is cheap when it repeats or continues what came before,
//! and expensive the first time — mixed with the built-in background prior
//! (see [`crate::ngram::mixed_prob`]) so function words are cheap from the start. The least
//! informative words are dropped until [`KEEP_RATIO`] of the words remain. Numbers, dates and
//! entity-like words (see [`classify_units`]) are never dropped. The result keeps the original
//! order and surface forms: adjacent kept words keep the original text between them
//! (punctuation, collapsed whitespace); across a gap, English words are joined with one space
//! and Chinese characters without one; a sentence whose end is crossed keeps its closing
//! punctuation. Texts of at most [`MIN_TOKENS_TO_COMPRESS`] words are returned unchanged.
//!
//! [`recoverable`]: the compressed text must stay close in meaning (embedding cosine at least
//! [`similarity_threshold`]) and keep every number and date and at least [`ENTITY_RECALL`] of
//! the entity-like words of the original.

use std::collections::HashSet;
use std::sync::OnceLock;

use mnemos_core::retrieval::dense::dot;
use mnemos_core::{EmbedderExt, ModelError, ModelResult};
use mnemos_text::{is_cjk, sentences, Analyzer, TokenKind};

use crate::ngram::{
    background_prob, mixed_prob, token_units, KneserNey, TokenUnit, OPEN_VOCABULARY, UNLISTED_PRIOR,
};
use crate::Ctx;

/// Share of the words kept by [`compress`].
pub const KEEP_RATIO: f64 = 0.5;
/// Self-information differences below this (in nats) are ties.
pub const INFORMATION_STEP: f64 = 0.25;
/// Texts with at most this many words are returned unchanged.
pub const MIN_TOKENS_TO_COMPRESS: usize = 8;
/// Share of the original's entity-like words a recoverable compression keeps.
pub const ENTITY_RECALL: f64 = 0.8;
/// Cosine threshold for neural sentence embedders (MiniLM and the like). Measured with
/// `calibrate_similarity` below: half-length English compressions score 0.72–0.90 with
/// MiniLM, unrelated English texts about 0.25. (MiniLM is an English model: unrelated Chinese
/// texts also reach ~0.8, so for Chinese the number and entity checks do the real work.)
pub const NEURAL_SIMILARITY: f32 = 0.7;
/// Cosine threshold for the hash embedder: it ignores stopwords, so compressions score
/// 0.8–1.0, while unrelated texts score below 0.1; lower than the neural threshold because
/// dropping content words removes its bigram and character features outright.
pub const HASH_SIMILARITY: f32 = 0.6;

/// The cosine a compression must keep, by embedder id (`hash-…` = the hash embedder).
pub fn similarity_threshold(embedder_id: &str) -> f32 {
    if embedder_id.starts_with("hash") {
        HASH_SIMILARITY
    } else {
        NEURAL_SIMILARITY
    }
}

/// Why a word must survive compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Salience {
    Number,
    Date,
    /// A name, place or organization by the heuristics of [`classify_units`].
    Entity,
}

/// The words of `text` (see [`token_units`]) with the sentence each belongs to and its
/// salience.
#[derive(Clone, Debug)]
pub struct ClassifiedUnit {
    pub unit: TokenUnit,
    pub sentence: usize,
    pub salience: Option<Salience>,
}

/// Openers that are capitalized only because they start a sentence.
const COMMON_OPENERS: &[&str] = &[
    "yesterday",
    "tomorrow",
    "tonight",
    "sounds",
    "cool",
    "nice",
    "awesome",
    "great",
    "sorry",
    "actually",
    "honestly",
    "anyway",
    "definitely",
    "probably",
    "absolutely",
    "exactly",
    "interesting",
    "perfect",
    "last",
    "next",
    "every",
    "recently",
    "usually",
    "sometimes",
    "however",
    "unfortunately",
    "luckily",
    "hopefully",
    "basically",
    "lately",
    "besides",
    "haha",
    "lol",
    "hmm",
    "wow",
    "yep",
    "nope",
    "nah",
    "yup",
    "totally",
    "cool",
    "fine",
    "glad",
    "happy",
    "love",
    "thank",
    "thanks",
    "let's",
    "let",
    "look",
    "listen",
    "guess",
    "sure",
    "true",
    "agreed",
    "indeed",
    "wait",
    "hey",
    "hi",
    "hello",
    "bye",
    "goodbye",
    "good",
    "bad",
    "not",
    "no",
    "yes",
    "yeah",
    "well",
    "so",
    "and",
    "but",
    "or",
    "because",
    "since",
    "after",
    "before",
    "during",
    "while",
    "although",
    "though",
    "once",
    "recently",
    "currently",
    "right",
    "maybe",
    "perhaps",
    "also",
    "really",
    "just",
    "only",
    "even",
];

const ZH_ENTITIES: &str = include_str!("lexicon/zh_entities.txt");

struct ZhEntityLists {
    surnames: HashSet<String>,
    given: HashSet<String>,
    titles: HashSet<String>,
    places: HashSet<String>,
    suffixes: Vec<String>,
    common: HashSet<String>,
}

fn zh_lists() -> &'static ZhEntityLists {
    static LISTS: OnceLock<ZhEntityLists> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut lists = ZhEntityLists {
            surnames: HashSet::new(),
            given: HashSet::new(),
            titles: HashSet::new(),
            places: HashSet::new(),
            suffixes: Vec::new(),
            common: HashSet::new(),
        };
        for (kind, word) in ZH_ENTITIES.lines().filter_map(parse_entity_line) {
            let word = word.to_string();
            match kind {
                "surname" => {
                    lists.surnames.insert(word);
                }
                "given" => {
                    lists.given.insert(word);
                }
                "title" => {
                    lists.titles.insert(word);
                }
                "place" => {
                    lists.places.insert(word);
                }
                "suffix" => lists.suffixes.push(word),
                "common" => {
                    lists.common.insert(word);
                }
                _ => {}
            }
        }
        lists
    })
}

fn parse_entity_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut parts = line.split_whitespace();
    let kind = parts.next()?;
    let word = parts.next()?;
    matches!(
        kind,
        "surname" | "given" | "title" | "place" | "suffix" | "common"
    )
    .then_some((kind, word))
}

/// Classify every word of `text`: its sentence and whether it is a number, a date or
/// entity-like.
///
/// English entity-like words start with an uppercase letter; at the start of a sentence only
/// if they are not a stopword, a background-prior word or a common opener ("Yesterday",
/// "Thanks"), since there every word is capitalized. Chinese words are entity-like when they
/// are a listed place, end in a place/organization suffix (北京市, 复旦大学; single-character
/// suffixes need three characters in all), are a 2–3 character word starting with a common
/// surname and not an everyday word (王小明, but not 高兴), are 老/小 + surname or a nickname
/// character (老王, 小明), or come right before a title (李 + 老师). Chinese numerals
/// (三岁, 二十) count as numbers.
pub fn classify_units(analyzer: &Analyzer, text: &str) -> Vec<ClassifiedUnit> {
    let units = token_units(analyzer, text);
    let sentence_of = sentence_indexes(text, &units);
    let mut out: Vec<ClassifiedUnit> = Vec::with_capacity(units.len());
    for (i, unit) in units.iter().enumerate() {
        let sentence = sentence_of.get(i).copied().unwrap_or(0);
        let first_in_sentence = i == 0 || sentence_of.get(i - 1) != Some(&sentence);
        let surface = text.get(unit.start..unit.end).unwrap_or("");
        let salience = match unit.kind {
            TokenKind::Number => Some(Salience::Number),
            TokenKind::Date => Some(Salience::Date),
            TokenKind::Word => english_entity(analyzer, unit, surface, first_in_sentence)
                .then_some(Salience::Entity),
            TokenKind::Cjk => {
                let next = units
                    .get(i + 1)
                    .filter(|n| n.start == unit.end)
                    .and_then(|n| text.get(n.start..n.end));
                if is_chinese_number(surface) {
                    Some(Salience::Number)
                } else if chinese_entity(surface, next) {
                    Some(Salience::Entity)
                } else {
                    None
                }
            }
        };
        out.push(ClassifiedUnit {
            unit: unit.clone(),
            sentence,
            salience,
        });
    }
    out
}

/// The sentence index of each unit (sentences from [`mnemos_text::sentences`]).
fn sentence_indexes(text: &str, units: &[TokenUnit]) -> Vec<usize> {
    let base = text.as_ptr() as usize;
    let ends: Vec<usize> = sentences(text)
        .iter()
        .map(|s| (s.as_ptr() as usize).saturating_sub(base) + s.len())
        .collect();
    let mut out = Vec::with_capacity(units.len());
    let mut sentence = 0;
    for unit in units {
        while ends.get(sentence).is_some_and(|&end| unit.start >= end) && sentence + 1 < ends.len()
        {
            sentence += 1;
        }
        out.push(sentence);
    }
    out
}

fn english_entity(analyzer: &Analyzer, unit: &TokenUnit, surface: &str, first: bool) -> bool {
    let Some(initial) = surface.chars().next() else {
        return false;
    };
    if !initial.is_uppercase() || surface == "I" || surface.starts_with("I'") {
        return false;
    }
    if !first {
        return true;
    }
    let lower = surface.to_lowercase();
    let shouted = surface.chars().filter(|c| c.is_alphabetic()).count() >= 2
        && surface
            .chars()
            .all(|c| !c.is_alphabetic() || c.is_uppercase());
    if shouted {
        // An acronym at sentence start is still an entity; a shouted common word is not.
        return !analyzer.is_stopword(&lower) && background_prob(&unit.term) <= UNLISTED_PRIOR;
    }
    !analyzer.is_stopword(&lower)
        && background_prob(&unit.term) <= UNLISTED_PRIOR
        && !COMMON_OPENERS.contains(&lower.as_str())
}

/// Chinese numerals, alone or with a unit (三岁, 二十, 五点); 一 alone or 一个/一下 (which are
/// filler more often than counts) are not numbers.
pub fn is_chinese_number(surface: &str) -> bool {
    const NUMERALS: &str = "零〇一二两三四五六七八九十百千万亿";
    const UNITS: &str = "年月日号岁个次天周点分元块斤里米倍层";
    let chars: Vec<char> = surface.chars().collect();
    let numeral_len = chars.iter().take_while(|c| NUMERALS.contains(**c)).count();
    if numeral_len == 0 {
        return false;
    }
    let rest = chars.get(numeral_len..).unwrap_or(&[]);
    let rest_ok = rest.is_empty() || (rest.len() == 1 && rest.iter().all(|c| UNITS.contains(*c)));
    let only_one = chars.iter().take(numeral_len).all(|&c| c == '一');
    rest_ok && !(only_one && numeral_len == 1)
}

fn chinese_entity(surface: &str, next: Option<&str>) -> bool {
    let lists = zh_lists();
    let chars: Vec<char> = surface.chars().collect();
    let n = chars.len();
    if n == 0 || !chars.iter().all(|&c| is_cjk(c)) || lists.common.contains(surface) {
        return false;
    }
    if lists.places.contains(surface) {
        return true;
    }
    for suffix in &lists.suffixes {
        let suffix_len = suffix.chars().count();
        let min_len = if suffix_len == 1 { 3 } else { suffix_len + 1 };
        if n >= min_len && surface.ends_with(suffix.as_str()) {
            return true;
        }
    }
    let title_follows = next.is_some_and(|t| lists.titles.contains(t));
    if title_follows && (1..=3).contains(&n) && !lists.titles.contains(surface) {
        return true;
    }
    let first = chars.first().map(char::to_string).unwrap_or_default();
    let second = chars.get(1).map(char::to_string).unwrap_or_default();
    if n == 2 && (first == "老" || first == "小") {
        return lists.surnames.contains(&second)
            || (first == "小" && lists.given.contains(&second));
    }
    let two: String = chars.iter().take(2).collect();
    let surname = lists.surnames.contains(&first) || lists.surnames.contains(&two);
    // A background-prior word is everyday vocabulary, not a name.
    surname && (2..=3).contains(&n) && background_prob(surface) <= UNLISTED_PRIOR
}

/// Compress `text` to about [`KEEP_RATIO`] of its words. See the module documentation.
pub fn compress(ctx: &Ctx, text: &str) -> ModelResult<String> {
    let units = classify_units(ctx.analyzer, text);
    if units.len() <= MIN_TOKENS_TO_COMPRESS {
        return Ok(text.to_string());
    }
    let information = self_information(&units);
    let target = ((units.len() as f64) * KEEP_RATIO).ceil() as usize;
    let mut droppable: Vec<usize> = (0..units.len())
        .filter(|&i| units.get(i).is_some_and(|u| u.salience.is_none()))
        .collect();
    // Least informative first. Values within INFORMATION_STEP are a tie (every new word gets
    // the same probability up to the slowly growing vocabulary); among ties, shorter words go
    // first (longer words are rarer and more specific), then later ones (earlier words set
    // the topic).
    let key = |i: usize| {
        let info = information.get(i).copied().unwrap_or(f64::INFINITY);
        let chars = units
            .get(i)
            .and_then(|u| text.get(u.unit.start..u.unit.end))
            .map_or(0, |s| s.chars().count());
        ((info / INFORMATION_STEP).floor(), chars)
    };
    droppable.sort_by(|&a, &b| {
        let (ia, ca) = key(a);
        let (ib, cb) = key(b);
        ia.total_cmp(&ib).then(ca.cmp(&cb)).then(b.cmp(&a))
    });
    let mut keep = vec![true; units.len()];
    let mut kept = units.len();
    for index in droppable {
        if kept <= target {
            break;
        }
        if let Some(slot) = keep.get_mut(index) {
            *slot = false;
            kept -= 1;
        }
    }
    let out = rebuild(text, &units, &keep);
    if out.trim().is_empty() {
        return Err(ModelError::bad_output(
            "compress",
            "compression left no text",
        ));
    }
    Ok(out)
}

/// `−ln p(word | history)` of every unit, each scored before it is observed: what [`compress`]
/// drops the lowest of.
pub fn self_information(units: &[ClassifiedUnit]) -> Vec<f64> {
    let mut model = KneserNey::default().with_unseen_slots(OPEN_VOCABULARY);
    let mut out = Vec::with_capacity(units.len());
    let mut previous: Vec<String> = Vec::new();
    for sentence in units.chunk_by(|a, b| a.sentence == b.sentence) {
        let terms: Vec<String> = sentence.iter().map(|u| u.unit.term.clone()).collect();
        let log_probs = model.observe_scored_after(&previous, &terms, mixed_prob);
        // The last value scores the sentence end, not a word.
        out.extend(log_probs.iter().take(terms.len()).map(|lp| -lp));
        previous = terms;
    }
    out
}

/// Rebuild the text from the kept units (see the module documentation).
fn rebuild(text: &str, units: &[ClassifiedUnit], keep: &[bool]) -> String {
    let mut out = String::new();
    let mut previous: Option<usize> = None;
    for (i, cu) in units.iter().enumerate() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let surface = text.get(cu.unit.start..cu.unit.end).unwrap_or("");
        if let Some(p) = previous {
            let Some(prev) = units.get(p) else {
                continue;
            };
            if p + 1 == i {
                let gap = text.get(prev.unit.end..cu.unit.start).unwrap_or("");
                push_gap(&mut out, gap, cu, text);
            } else if prev.sentence != cu.sentence {
                let tail = sentence_tail(text, units, prev.sentence);
                out.push_str(tail.trim());
                push_join(&mut out, text, cu);
            } else {
                push_join(&mut out, text, cu);
            }
        }
        out.push_str(surface);
        previous = Some(i);
    }
    if let Some(last) = previous.and_then(|p| units.get(p)) {
        out.push_str(sentence_tail(text, units, last.sentence).trim());
    }
    out
}

/// The text between two adjacent kept units, whitespace collapsed to single spaces.
fn push_gap(out: &mut String, gap: &str, next: &ClassifiedUnit, text: &str) {
    if gap.trim().is_empty() {
        if !gap.is_empty() {
            push_join(out, text, next);
        }
        return;
    }
    let mut last_space = false;
    for c in gap.chars() {
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
}

/// Separator before `next` across dropped words: nothing next to a Chinese character, one space
/// between other words.
fn push_join(out: &mut String, text: &str, next: &ClassifiedUnit) {
    let before = out.chars().next_back();
    let after = text.get(next.unit.start..).and_then(|s| s.chars().next());
    let cjk_join =
        before.is_some_and(|c| is_cjk(c) || is_cjk_punct(c)) || after.is_some_and(is_cjk);
    if !cjk_join && !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

fn is_cjk_punct(c: char) -> bool {
    matches!(
        c,
        '。' | '，' | '！' | '？' | '；' | '：' | '、' | '」' | '』' | '）'
    )
}

/// The text after the last unit of `sentence` up to the next unit (its closing punctuation).
fn sentence_tail<'t>(text: &'t str, units: &[ClassifiedUnit], sentence: usize) -> &'t str {
    let last = units.iter().rposition(|u| u.sentence == sentence);
    let Some(last) = last else {
        return "";
    };
    let start = units.get(last).map_or(text.len(), |u| u.unit.end);
    let end = units.get(last + 1).map_or(text.len(), |u| u.unit.start);
    text.get(start..end).unwrap_or("")
}

/// Can `original` be recovered from `compressed`? See the module documentation.
pub fn recoverable(ctx: &Ctx, original: &str, compressed: &str) -> ModelResult<bool> {
    if original.trim() == compressed.trim() {
        return Ok(true);
    }
    let source = classify_units(ctx.analyzer, original);
    let short = classify_units(ctx.analyzer, compressed);
    let short_numbers: HashSet<&str> = short
        .iter()
        .filter(|u| matches!(u.salience, Some(Salience::Number | Salience::Date)))
        .map(|u| u.unit.term.as_str())
        .collect();
    let numbers_kept = source
        .iter()
        .filter(|u| matches!(u.salience, Some(Salience::Number | Salience::Date)))
        .all(|u| short_numbers.contains(u.unit.term.as_str()));
    if !numbers_kept {
        return Ok(false);
    }
    let short_surfaces: HashSet<&str> = short
        .iter()
        .filter_map(|u| compressed.get(u.unit.start..u.unit.end))
        .collect();
    let entities: Vec<&str> = source
        .iter()
        .filter(|u| u.salience == Some(Salience::Entity))
        .filter_map(|u| original.get(u.unit.start..u.unit.end))
        .collect();
    if !entities.is_empty() {
        let found = entities
            .iter()
            .filter(|e| {
                // jieba may cut a Chinese name differently in the shorter context.
                short_surfaces.contains(*e) || (e.chars().any(is_cjk) && compressed.contains(*e))
            })
            .count();
        if (found as f64) < ENTITY_RECALL * entities.len() as f64 {
            return Ok(false);
        }
    }
    Ok(cosine(ctx, original, compressed)? >= similarity_threshold(ctx.embedder.id()))
}

/// Cosine of two texts' embeddings (the vectors are unit length).
pub fn cosine(ctx: &Ctx, a: &str, b: &str) -> ModelResult<f32> {
    let vectors = ctx
        .embedder
        .embed_all(&[a, b])
        .map_err(|e| ModelError::Unavailable(format!("embedder: {e}")))?;
    match vectors.as_slice() {
        [va, vb] => Ok(dot(va, vb)),
        _ => Err(ModelError::bad_output(
            "recoverable",
            "the embedder returned the wrong number of vectors",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_embed::HashEmbedder;

    fn with_ctx<T>(f: impl FnOnce(&Ctx) -> T) -> T {
        let embedder = HashEmbedder::default();
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder: &embedder,
        };
        f(&ctx)
    }

    /// Do `short`'s words occur in `long` in the same order (by surface, at increasing
    /// offsets; jieba may cut the shorter text differently, so words are not compared)?
    fn in_order(ctx: &Ctx, long: &str, short: &str) -> bool {
        let mut pos = 0;
        token_units(ctx.analyzer, short)
            .iter()
            .filter_map(|u| short.get(u.start..u.end))
            .all(|w| match long.get(pos..).and_then(|rest| rest.find(w)) {
                Some(at) => {
                    pos += at + w.len();
                    true
                }
                None => false,
            })
    }

    const EN: &str = "So yesterday I went over to the big hospital with my friend Caroline, and \
        the doctor told us that the surgery is going to cost about 3,500 dollars on 12 May 2024, \
        which is really quite a lot of money for us.";
    const ZH: &str = "昨天我和王小明一起去了北京市的协和医院，医生说手术大概要花三千五百块钱，\
        时间定在2024年5月12日，这对我们来说真的是一笔很大的开销。";

    #[test]
    fn english_keeps_numbers_names_and_order() {
        with_ctx(|ctx| {
            let short = compress(ctx, EN).expect("compress");
            let n_long = token_units(ctx.analyzer, EN).len();
            let n_short = token_units(ctx.analyzer, &short).len();
            assert!(n_short <= n_long * 6 / 10, "{n_short}/{n_long}: {short}");
            for must in ["Caroline", "3,500", "12 May 2024"] {
                assert!(short.contains(must), "{must} missing from {short}");
            }
            assert!(in_order(ctx, EN, &short), "{short}");
            assert!(!short.contains("  "));
            assert!(
                recoverable(ctx, EN, &short).expect("recoverable"),
                "{short}"
            );
        });
    }

    #[test]
    fn chinese_keeps_numbers_places_and_has_no_spaces() {
        with_ctx(|ctx| {
            let short = compress(ctx, ZH).expect("compress");
            let n_long = token_units(ctx.analyzer, ZH).len();
            let n_short = token_units(ctx.analyzer, &short).len();
            assert!(n_short < n_long, "{short}");
            for must in ["王小明", "北京市", "2024年5月12日", "三千五百"] {
                assert!(short.contains(must), "{must} missing from {short}");
            }
            assert!(!short.contains(' '), "{short}");
            assert!(in_order(ctx, ZH, &short), "{short}");
        });
    }

    #[test]
    fn short_texts_are_unchanged() {
        with_ctx(|ctx| {
            for text in [
                "I like tea.",
                "我喜欢喝茶。",
                "  ",
                "Meet me at 5 pm on Friday ok",
            ] {
                assert_eq!(compress(ctx, text).expect("compress"), text);
            }
        });
    }

    #[test]
    fn repeated_words_are_dropped_before_new_ones() {
        with_ctx(|ctx| {
            let text = "the cat sat on the mat and the cat sat on the mat and the zebra danced";
            let short = compress(ctx, text).expect("compress");
            assert!(
                short.contains("zebra") && short.contains("danced"),
                "{short}"
            );
        });
    }

    #[test]
    fn recoverable_rejects_lost_numbers_entities_and_meaning() {
        with_ctx(|ctx| {
            let original = "Caroline paid 3,500 dollars for the surgery in Boston last May.";
            assert!(!recoverable(ctx, original, "Caroline paid dollars surgery Boston").unwrap());
            assert!(!recoverable(ctx, original, "paid 3,500 dollars surgery").unwrap());
            assert!(
                !recoverable(ctx, original, "the weather was nice 3,500 Caroline Boston").unwrap()
            );
            assert!(recoverable(
                ctx,
                original,
                "Caroline paid 3,500 dollars surgery Boston May"
            )
            .unwrap());
            assert!(recoverable(ctx, "王小明花了三千块。", "王小明花了三千块。").unwrap());
            assert!(!recoverable(ctx, "王小明在北京花了三千块。", "北京花了块").unwrap());
        });
    }

    #[test]
    fn entity_heuristics() {
        let a = Analyzer::shared();
        let entities = |text: &str| -> Vec<String> {
            classify_units(a, text)
                .into_iter()
                .filter(|u| u.salience == Some(Salience::Entity))
                .filter_map(|u| text.get(u.unit.start..u.unit.end).map(str::to_string))
                .collect()
        };
        assert_eq!(
            entities("Yesterday I met Melanie at Starbucks."),
            ["Melanie", "Starbucks"]
        );
        assert_eq!(
            entities("Caroline went home. Thanks for asking."),
            ["Caroline"]
        );
        let zh = entities("我很高兴，周末和老王去了上海，见了李老师。");
        assert!(zh.contains(&"老王".to_string()), "{zh:?}");
        assert!(zh.contains(&"上海".to_string()), "{zh:?}");
        assert!(
            zh.contains(&"李".to_string()) || zh.contains(&"李老师".to_string()),
            "{zh:?}"
        );
        assert!(
            !zh.contains(&"高兴".to_string()) && !zh.contains(&"周末".to_string()),
            "{zh:?}"
        );
        assert!(is_chinese_number("三岁") && is_chinese_number("二十") && !is_chinese_number("一"));
        assert!(!is_chinese_number("一起") && !is_chinese_number("喜欢"));
        for line in ZH_ENTITIES.lines() {
            let t = line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                assert!(parse_entity_line(t).is_some(), "bad line {t:?}");
            }
        }
    }

    #[test]
    fn weird_input_does_not_panic() {
        with_ctx(|ctx| {
            for text in [
                "!!! ??? ... ,,, ;;; --- ".repeat(20),
                "🎉 ".repeat(40),
                "a\u{0}b\u{FFFF}c ".repeat(30),
                "数字１２３４５６７８９０和ＡＢＣ，".repeat(10),
            ] {
                let _ = compress(ctx, &text);
            }
        });
    }
}
