//! Text-scoring metrics: answer matching, token F1, ROUGE, MOOM's memory-extraction score and
//! LUFY's importance agreement.
//!
//! # Text normalization
//!
//! All text metrics share one scan of the text into Latin words and CJK runs
//! ([`mnemos_text::is_cjk`]: Han ideographs and kana):
//! - text is lowercased;
//! - a Latin word is a run of letters and digits (any script outside CJK), with apostrophes
//!   inside a word dropped ("don't" → "dont", "Ann’s" → "anns") and "," or "." between two
//!   digits dropped ("1,000" → "1000", "3.5" → "35", so a "5" is never found inside "3.5");
//! - everything else — whitespace, punctuation and symbols of every script (。，、“”《》…,
//!   full-width forms, emoji) — separates.
//!
//! [`normalize_answer`] then drops the English articles a/an/the and joins the pieces with one
//! space between two Latin words and none next to CJK, so "我有 3 个。" and "我有3个" normalize
//! alike ("我有3个"); Chinese text is otherwise kept as is.
//!
//! # Tokens
//!
//! [`token_f1`] counts normalized Latin words and single CJK characters (SQuAD F1 with
//! characters as Chinese tokens). ROUGE tokens come from [`tokenize`]: [`Granularity::Char`]
//! gives one token per CJK character and one per Latin word; [`Granularity::Word`] gives jieba
//! words for CJK runs — the [`mnemos_text::Analyzer`] segmentation (precise mode with HMM),
//! with stopwords kept — and the same Latin words. Neither stems nor drops stopwords or
//! articles. MOOM scores ROUGE on jieba words, so `Word` is the granularity to compare with it.
//!
//! # ROUGE
//!
//! ROUGE-N counts clipped n-gram matches (each reference n-gram matches at most as often as it
//! occurs in the reference, as in the original ROUGE script and Google's rouge-score); ROUGE-L
//! uses the longest common subsequence. Precision is relative to the prediction, recall to the
//! reference, and F is their harmonic mean (rouge-score's convention; the `rouge` Python ports
//! weight ROUGE-L's F differently, so ROUGE-L F is comparable with them only in spirit). Empty
//! input, or fewer than n tokens, scores 0 rather than NaN.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use mnemos_core::Role;
use mnemos_text::{is_cjk, Analyzer};
use serde::{Deserialize, Serialize};

use crate::lufy::{LufyDataset, LufySession, LufyTurn};

/// A run of normalized text: a lowercased Latin word or a run of CJK characters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Word(String),
    Cjk(String),
}

/// Letters and digits outside CJK: the characters of Latin words.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c)
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02BC}')
}

/// Whether the separator at `i` sits inside a word or number and is dropped instead.
fn joins(chars: &[char], i: usize) -> bool {
    let (Some(&before), Some(&after)) = (
        i.checked_sub(1).and_then(|b| chars.get(b)),
        chars.get(i + 1),
    ) else {
        return false;
    };
    match chars[i] {
        c if is_apostrophe(c) => is_word_char(before) && is_word_char(after),
        ',' | '.' => before.is_ascii_digit() && after.is_ascii_digit(),
        _ => false,
    }
}

/// The shared scan described in the module docs.
fn pieces(text: &str) -> Vec<Piece> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current: Option<Piece> = None;
    for (i, &c) in chars.iter().enumerate() {
        if is_cjk(c) {
            match &mut current {
                Some(Piece::Cjk(run)) => run.push(c),
                _ => {
                    out.extend(current.take());
                    current = Some(Piece::Cjk(c.to_string()));
                }
            }
        } else if is_word_char(c) {
            match &mut current {
                Some(Piece::Word(word)) => word.extend(c.to_lowercase()),
                _ => {
                    out.extend(current.take());
                    current = Some(Piece::Word(c.to_lowercase().collect()));
                }
            }
        } else if !joins(&chars, i) {
            out.extend(current.take());
        }
    }
    out.extend(current);
    out
}

fn is_article(word: &str) -> bool {
    matches!(word, "a" | "an" | "the")
}

/// Lowercase, drop punctuation and symbols (CJK ones included) and the articles a/an/the, and
/// collapse whitespace; see the module docs for the exact rules.
pub fn normalize_answer(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous_was_word = false;
    for piece in pieces(text) {
        match piece {
            Piece::Word(word) if is_article(&word) => {}
            Piece::Word(word) => {
                if previous_was_word {
                    out.push(' ');
                }
                out.push_str(&word);
                previous_was_word = true;
            }
            Piece::Cjk(run) => {
                out.push_str(&run);
                previous_was_word = false;
            }
        }
    }
    out
}

/// Whether `needle` occurs in `haystack` without cutting a Latin word or number in two.
fn contains_bounded(haystack: &str, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().next_back()) else {
        return false;
    };
    // Every start, not `match_indices`: its matches do not overlap, so in "ab猫b猫b" the
    // bounded "b猫b" at byte 5 would hide behind the unbounded one at byte 1.
    let starts = haystack
        .char_indices()
        .map(|(start, _)| start)
        .filter(|&start| haystack[start..].starts_with(needle));
    starts.into_iter().any(|start| {
        let before = haystack[..start].chars().next_back();
        let after = haystack[start + needle.len()..].chars().next();
        let open = !(is_word_char(first) && before.is_some_and(is_word_char));
        let close = !(is_word_char(last) && after.is_some_and(is_word_char));
        open && close
    })
}

/// The parts of a gold answer: split at commas (ASCII and full width, but not inside a number
/// such as "1,000"), at "、", and at the word "and"; each part normalized, empty parts dropped.
/// When splitting leaves nothing (the gold is only articles and "and"), the whole normalized
/// gold is the one part.
fn answer_parts(gold: &str) -> Vec<String> {
    let chars: Vec<char> = gold.chars().collect();
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let separates = match c {
            '，' | '、' => true,
            ',' => !joins(&chars, i),
            _ => false,
        };
        if separates {
            pieces.push(std::mem::take(&mut piece));
        } else {
            piece.push(c);
        }
    }
    pieces.push(piece);

    let mut parts = Vec::new();
    for piece in pieces {
        let mut words: Vec<&str> = Vec::new();
        for word in piece.split_whitespace().chain(std::iter::once("and")) {
            if word.eq_ignore_ascii_case("and") {
                let part = normalize_answer(&words.join(" "));
                if !part.is_empty() {
                    parts.push(part);
                }
                words.clear();
            } else {
                words.push(word);
            }
        }
    }
    if parts.is_empty() {
        let whole = normalize_answer(gold);
        if !whole.is_empty() {
            parts.push(whole);
        }
    }
    parts
}

/// Whether a gold answer appears in a (retrieved) context: every part of the gold (see below)
/// must occur in the normalized context as a substring that does not cut a Latin word or number
/// ("cat" is not found in "concatenate", "1" not in "10"; Chinese matches anywhere).
///
/// Multi-part golds — "Paris, London and Rome", "猫、狗" — are split at commas, "、" and the
/// word "and", and **all** parts must appear, in any order and anywhere in the context. An
/// empty gold (after normalization) never matches.
pub fn answer_in_context(gold: &str, context: &str) -> bool {
    let parts = answer_parts(gold);
    if parts.is_empty() {
        return false;
    }
    let context = normalize_answer(context);
    parts.iter().all(|part| contains_bounded(&context, part))
}

/// Tokens for [`token_f1`]: normalized Latin words and single CJK characters.
fn f1_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for piece in pieces(text) {
        match piece {
            Piece::Word(word) if is_article(&word) => {}
            Piece::Word(word) => tokens.push(word),
            Piece::Cjk(run) => tokens.extend(run.chars().map(String::from)),
        }
    }
    tokens
}

/// SQuAD-style token F1 between a prediction and a gold answer, over normalized Latin words
/// and CJK characters (punctuation and whitespace excluded). Both empty scores 1, one empty 0.
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let predicted = f1_tokens(prediction);
    let reference = f1_tokens(gold);
    if predicted.is_empty() || reference.is_empty() {
        return if predicted.is_empty() && reference.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let common = overlap(&counts(predicted.iter()), &counts(reference.iter()));
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / predicted.len() as f64;
    let recall = common as f64 / reference.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

fn counts<T: Eq + Hash>(items: impl Iterator<Item = T>) -> HashMap<T, usize> {
    let mut map = HashMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

/// Matches with clipped counts: Σ min(count in a, count in b).
fn overlap<T: Eq + Hash>(a: &HashMap<T, usize>, b: &HashMap<T, usize>) -> usize {
    a.iter()
        .map(|(key, n)| (*n).min(b.get(key).copied().unwrap_or(0)))
        .sum()
}

/// How text is cut into tokens for ROUGE (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One token per CJK character, one per Latin word.
    Char,
    /// jieba words for Chinese, Latin words otherwise.
    Word,
}

/// ROUGE tokens of `text`, lowercased, without punctuation or whitespace.
pub fn tokenize(text: &str, granularity: Granularity) -> Vec<String> {
    let mut tokens = Vec::new();
    for piece in pieces(text) {
        match (piece, granularity) {
            (Piece::Word(word), _) => tokens.push(word),
            (Piece::Cjk(run), Granularity::Char) => {
                tokens.extend(run.chars().map(String::from));
            }
            (Piece::Cjk(run), Granularity::Word) => tokens.extend(
                Analyzer::shared()
                    .tokens(&run)
                    .into_iter()
                    .map(|token| token.term),
            ),
        }
    }
    tokens
}

/// Precision, recall and F (harmonic mean), each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Prf {
    pub precision: f64,
    pub recall: f64,
    pub f: f64,
}

impl Prf {
    /// From a match count and the two lengths; 0 when a length or the matches are 0.
    fn from_counts(matches: usize, predicted: usize, reference: usize) -> Prf {
        if matches == 0 || predicted == 0 || reference == 0 {
            return Prf::default();
        }
        let precision = matches as f64 / predicted as f64;
        let recall = matches as f64 / reference as f64;
        Prf {
            precision,
            recall,
            f: 2.0 * precision * recall / (precision + recall),
        }
    }
}

/// ROUGE-N of a prediction against a reference, with clipped n-gram counts. `n == 0`, or
/// fewer than `n` tokens on either side, scores 0.
pub fn rouge_n<T: Eq + Hash>(prediction: &[T], reference: &[T], n: usize) -> Prf {
    if n == 0 || prediction.len() < n || reference.len() < n {
        return Prf::default();
    }
    let predicted = counts(prediction.windows(n));
    let referenced = counts(reference.windows(n));
    Prf::from_counts(
        overlap(&predicted, &referenced),
        prediction.len() + 1 - n,
        reference.len() + 1 - n,
    )
}

/// ROUGE-L: precision = LCS / prediction length, recall = LCS / reference length.
pub fn rouge_l<T: Eq>(prediction: &[T], reference: &[T]) -> Prf {
    Prf::from_counts(
        lcs_len(prediction, reference),
        prediction.len(),
        reference.len(),
    )
}

/// Length of the longest common subsequence, in O(|a|·|b|) time and O(|b|) memory.
fn lcs_len<T: Eq>(a: &[T], b: &[T]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// MOOM's memory-extraction score (§5.2) of one dialogue, averaged over its labels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExtractionScore {
    /// Number of labelled facts (the references).
    pub labels: usize,
    /// Number of extracted memories (the predictions).
    pub memories: usize,
    pub rouge_l: Prf,
    pub rouge_2: Prf,
    /// Mean best similarity, when a similarity was given.
    pub embedding: Option<f64>,
}

/// Each label's best memory by ROUGE-L F (the first on ties) with its ROUGE-L, as
/// [`extraction_score`] picks it; `None` for a label no memory shares a token with.
pub fn best_rouge_l_matches<L: AsRef<str>, M: AsRef<str>>(
    labels: &[L],
    memories: &[M],
    granularity: Granularity,
) -> Vec<Option<(usize, Prf)>> {
    let memory_tokens: Vec<Vec<String>> = memories
        .iter()
        .map(|m| tokenize(m.as_ref(), granularity))
        .collect();
    labels
        .iter()
        .map(|label| {
            let label_tokens = tokenize(label.as_ref(), granularity);
            memory_tokens
                .iter()
                .enumerate()
                .map(|(i, m)| (i, rouge_l(m, &label_tokens)))
                .fold(None, |best: Option<(usize, Prf)>, (i, prf)| match best {
                    Some(kept) if kept.1.f >= prf.f => Some(kept),
                    _ => Some((i, prf)),
                })
                .filter(|(_, prf)| prf.f > 0.0)
        })
        .collect()
}

/// Score extracted `memories` against labelled facts, MOOM style.
///
/// For each label, the memory with the highest ROUGE-L F is its match (the first one on ties)
/// and that memory's precision, recall and F are the label's ROUGE-L; ROUGE-2 picks its own
/// best memory the same way. This is what MOOM's `indicator_calculate.py` does: it keeps one
/// matching memory per label rather than the best precision and best recall of possibly
/// different memories, which would pair numbers no single memory achieves. The memory is the
/// prediction and the label the reference, so recall is the share of the label a memory
/// covers. `similarity(label, memory)` (indices into the slices), when given, is maximized over
/// memories per label the same way; NaN values are ignored. All per-label numbers are averaged
/// over labels. Without labels or without memories every number is 0.
pub fn extraction_score<L: AsRef<str>, M: AsRef<str>>(
    labels: &[L],
    memories: &[M],
    granularity: Granularity,
    similarity: Option<&dyn Fn(usize, usize) -> f64>,
) -> ExtractionScore {
    let mut score = ExtractionScore {
        labels: labels.len(),
        memories: memories.len(),
        rouge_l: Prf::default(),
        rouge_2: Prf::default(),
        embedding: similarity.map(|_| 0.0),
    };
    if labels.is_empty() || memories.is_empty() {
        return score;
    }
    let memory_tokens: Vec<Vec<String>> = memories
        .iter()
        .map(|m| tokenize(m.as_ref(), granularity))
        .collect();
    let best = |scores: &mut dyn Iterator<Item = Prf>| {
        scores.fold(None, |best: Option<Prf>, prf| match best {
            Some(kept) if kept.f >= prf.f => Some(kept),
            _ => Some(prf),
        })
    };
    let mut sum_l = Prf::default();
    let mut sum_2 = Prf::default();
    let mut sum_embedding = 0.0;
    for (label_index, label) in labels.iter().enumerate() {
        let label_tokens = tokenize(label.as_ref(), granularity);
        let l = best(&mut memory_tokens.iter().map(|m| rouge_l(m, &label_tokens)));
        let two = best(&mut memory_tokens.iter().map(|m| rouge_n(m, &label_tokens, 2)));
        for (sum, prf) in [(&mut sum_l, l), (&mut sum_2, two)] {
            let prf = prf.unwrap_or_default();
            sum.precision += prf.precision;
            sum.recall += prf.recall;
            sum.f += prf.f;
        }
        if let Some(similarity) = similarity {
            let top = (0..memories.len())
                .map(|memory_index| similarity(label_index, memory_index))
                .fold(f64::NEG_INFINITY, f64::max);
            if top.is_finite() {
                sum_embedding += top;
            }
        }
    }
    let n = labels.len() as f64;
    let mean = |sum: Prf| Prf {
        precision: sum.precision / n,
        recall: sum.recall / n,
        f: sum.f / n,
    };
    score.rouge_l = mean(sum_l);
    score.rouge_2 = mean(sum_2);
    score.embedding = similarity.map(|_| sum_embedding / n);
    score
}

/// How well a set of kept user utterances matches what LUFY's annotators marked important.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportanceAgreement {
    /// Annotator → share of the kept user utterances they judged that they marked important.
    /// Annotators who judged none of the kept utterances are absent.
    pub per_annotator: BTreeMap<String, f64>,
    /// Mean of `per_annotator` (0 when it is empty).
    pub mean: f64,
    /// Number of kept user utterances.
    pub kept: usize,
}

/// LUFY's importance agreement (paper, Table 12): for each annotator, the share of the kept
/// user utterances that the annotator marked important, then the mean over annotators.
///
/// `kept(session, turn)` says whether a memory system kept (did not forget) a turn; only user
/// turns count, as only they were annotated. A turn an annotator did not label is left out of
/// that annotator's share. Keeping everything gives each annotator's base rate, the level a
/// system that keeps at random reaches on average.
pub fn importance_agreement(
    dataset: &LufyDataset,
    kept: impl Fn(&LufySession, &LufyTurn) -> bool,
) -> ImportanceAgreement {
    let mut judged: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut kept_count = 0;
    for session in &dataset.sessions {
        for turn in &session.turns {
            if turn.role != Role::User || !kept(session, turn) {
                continue;
            }
            kept_count += 1;
            for (annotator, important) in &turn.important {
                let entry = judged.entry(annotator.as_str()).or_default();
                entry.0 += 1;
                entry.1 += usize::from(*important);
            }
        }
    }
    let per_annotator: BTreeMap<String, f64> = judged
        .into_iter()
        .map(|(annotator, (total, marked))| (annotator.to_string(), marked as f64 / total as f64))
        .collect();
    let mean = if per_annotator.is_empty() {
        0.0
    } else {
        per_annotator.values().sum::<f64>() / per_annotator.len() as f64
    };
    ImportanceAgreement {
        per_annotator,
        mean,
        kept: kept_count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn toks(text: &str) -> Vec<String> {
        tokenize(text, Granularity::Char)
    }

    #[test]
    fn normalization() {
        assert_eq!(
            normalize_answer("  The Cat's   hat, an  apple! "),
            "cats hat apple"
        );
        assert_eq!(normalize_answer("我有 3 个。"), "我有3个");
        assert_eq!(normalize_answer("我有3个"), "我有3个");
        assert_eq!(normalize_answer("“北京”，《大学》…"), "北京大学");
        assert_eq!(normalize_answer("I ♥ Beijing 北京!"), "i beijing北京");
        assert_eq!(normalize_answer("It cost $1,000.50"), "it cost 100050");
        assert_eq!(normalize_answer("Ｆｕｌｌ－width"), "ｆｕｌｌ width");
        assert_eq!(normalize_answer("the a an"), "");
        assert_eq!(normalize_answer("don’t"), "dont");
        assert_eq!(normalize_answer("'quoted'"), "quoted");
    }

    #[test]
    fn answers_in_context() {
        assert!(answer_in_context(
            "Sapporo classic.",
            "Try the Sapporo Classic beer!"
        ));
        assert!(!answer_in_context("cat", "I like to concatenate strings"));
        assert!(!answer_in_context("1", "I have 10 cats"));
        assert!(!answer_in_context("5", "version 3.5"));
        assert!(answer_in_context("3.5", "version 3.5"));
        // An unbounded match ("ab猫b") overlaps the bounded one that follows it.
        assert!(answer_in_context("b猫b", "ab猫 b猫b"));
        assert!(answer_in_context("高中", "我的上司就只有高中学历。"));
        assert!(answer_in_context("3个", "我有 3 个苹果"));
        // Every part of a multi-part answer, in any order.
        assert!(answer_in_context(
            "Paris, London and Rome",
            "rome; paris, then london"
        ));
        assert!(!answer_in_context(
            "Paris, London and Rome",
            "paris and london"
        ));
        assert!(answer_in_context("猫、狗", "家里有狗也有猫"));
        assert!(!answer_in_context("猫、狗", "家里有狗"));
        assert!(answer_in_context("1,000 dollars", "it was 1000 dollars"));
        assert!(answer_in_context(
            "rock and roll",
            "she loves rock and roll"
        ));
        // Nothing to find.
        assert!(!answer_in_context("", "anything"));
        assert!(!answer_in_context("?!", "anything"));
        assert!(answer_in_context("the and", "and"));
    }

    #[test]
    fn f1_over_words_and_characters() {
        assert!(close(token_f1("the cat sat", "a cat sat down"), 0.8));
        assert!(close(token_f1("Cat!", "cat"), 1.0));
        assert!(close(token_f1("我在喝酒", "喝酒"), 2.0 * 0.5 / 1.5));
        assert!(close(token_f1("cat cat", "cat"), 2.0 * 0.5 / 1.5));
        assert!(close(token_f1("dog", "cat"), 0.0));
        assert!(close(token_f1("", "the"), 1.0));
        assert!(close(token_f1("", "cat"), 0.0));
    }

    #[test]
    fn tokenization() {
        assert_eq!(
            toks("Don't stop, 我在喝酒！2023年"),
            ["dont", "stop", "我", "在", "喝", "酒", "2023", "年"]
        );
        let words = tokenize(
            "我喜欢北京大学。I like Peking University",
            Granularity::Word,
        );
        assert_eq!(
            words,
            [
                "我",
                "喜欢",
                "北京大学",
                "i",
                "like",
                "peking",
                "university"
            ]
        );
        assert!(tokenize(" ，。! ", Granularity::Word).is_empty());
    }

    #[test]
    fn rouge_by_hand() {
        let prediction = toks("the cat was found under the bed");
        let reference = toks("the cat was under the bed");
        let l = rouge_l(&prediction, &reference);
        assert!(close(l.precision, 6.0 / 7.0) && close(l.recall, 1.0));
        assert!(close(l.f, 2.0 * (6.0 / 7.0) / (6.0 / 7.0 + 1.0)));
        let two = rouge_n(&prediction, &reference, 2);
        // Shared bigrams: "the cat", "cat was", "under the", "the bed".
        assert!(close(two.precision, 4.0 / 6.0) && close(two.recall, 4.0 / 5.0));
        // Clipped counts: "the the the" against one "the".
        let one = rouge_n(&toks("the the the"), &toks("the cat"), 1);
        assert!(close(one.precision, 1.0 / 3.0) && close(one.recall, 0.5));
        assert_eq!(rouge_n(&toks("猫"), &toks("猫"), 2), Prf::default());
        assert_eq!(rouge_n(&toks("a b"), &toks("a b"), 0), Prf::default());
        assert_eq!(rouge_l::<String>(&[], &toks("a")), Prf::default());
        assert_eq!(rouge_l(&toks("x"), &toks("y")), Prf::default());
        // Chinese by character.
        let zh = rouge_l(&toks("赵齐是老师"), &toks("赵齐是白羽岚的老师"));
        assert!(close(zh.precision, 1.0) && close(zh.recall, 5.0 / 9.0));
    }

    #[test]
    fn extraction_keeps_one_memory_per_label() {
        let labels = ["赵齐是白羽岚的老师", "赵齐喜欢猫"];
        // Memory 0 is precise but short; memory 1 covers more of label 0 with more noise.
        let memories = ["赵齐是老师", "赵齐是白羽岚的老师，今天下雨"];
        let score = extraction_score(&labels, &memories, Granularity::Char, None);
        assert_eq!((score.labels, score.memories), (2, 2));
        assert_eq!(score.embedding, None);

        let by_hand = |label: &str| {
            let reference = toks(label);
            memories.iter().map(|m| rouge_l(&toks(m), &reference)).fold(
                Prf::default(),
                |best, prf| if prf.f > best.f { prf } else { best },
            )
        };
        let (first, second) = (by_hand(labels[0]), by_hand(labels[1]));
        assert!(close(score.rouge_l.f, (first.f + second.f) / 2.0));
        assert!(close(
            score.rouge_l.precision,
            (first.precision + second.precision) / 2.0
        ));
        assert!(close(
            score.rouge_l.recall,
            (first.recall + second.recall) / 2.0
        ));
        // Label 0's best match by F is memory 1 (recall 1); the best precision would be memory 0's.
        assert!(close(first.recall, 1.0) && first.precision < 1.0);

        let similarity =
            |label: usize, memory: usize| -> f64 { [[0.9, 0.5], [f64::NAN, 0.25]][label][memory] };
        let with_embedding =
            extraction_score(&labels, &memories, Granularity::Word, Some(&similarity));
        assert_eq!(with_embedding.embedding, Some((0.9 + 0.25) / 2.0));

        let empty = extraction_score(
            &labels,
            &[] as &[&str],
            Granularity::Char,
            Some(&similarity),
        );
        assert_eq!(empty.rouge_l, Prf::default());
        assert_eq!(empty.rouge_2, Prf::default());
        assert_eq!(empty.embedding, Some(0.0));
        assert_eq!(empty.memories, 0);
        let none = extraction_score(&[] as &[&str], &memories, Granularity::Char, None);
        assert_eq!(none.rouge_l, Prf::default());
        let json = serde_json::to_value(score).expect("serializable");
        assert!(json["rouge_2"]["f"].is_number());
    }

    #[test]
    fn importance_agreement_per_annotator() {
        let turn = |idx: i64, role: Role, votes: &[(&str, bool)]| LufyTurn {
            idx,
            speaker: if role == Role::User { "Ann" } else { "Bot" }.to_string(),
            role,
            utterance: format!("turn {idx}"),
            important: votes.iter().map(|(a, v)| (a.to_string(), *v)).collect(),
        };
        let session = LufySession {
            qa: Vec::new(),
            system: "LUFY".to_string(),
            user: "Ann".to_string(),
            session: 1,
            annotators: vec!["A0".to_string(), "A1".to_string()],
            turns: vec![
                turn(0, Role::Assistant, &[]),
                turn(1, Role::User, &[("A0", true), ("A1", true)]),
                turn(2, Role::User, &[("A0", false), ("A1", true)]),
                turn(3, Role::User, &[("A0", false)]),
                turn(4, Role::User, &[("A0", true), ("A1", false)]),
            ],
        };
        let dataset = LufyDataset {
            sessions: vec![session],
            defects: Vec::new(),
        };
        // Keep turns 0 (a bot turn, ignored), 1, 2, 3.
        let agreement = importance_agreement(&dataset, |_, t| t.idx <= 3);
        assert_eq!(agreement.kept, 3);
        assert!(close(agreement.per_annotator["A0"], 1.0 / 3.0));
        // A1 did not label turn 3.
        assert!(close(agreement.per_annotator["A1"], 1.0));
        assert!(close(agreement.mean, (1.0 / 3.0 + 1.0) / 2.0));

        let base = importance_agreement(&dataset, |_, _| true);
        assert_eq!(base.kept, 4);
        assert!(close(base.per_annotator["A0"], 0.5));

        let nothing = importance_agreement(&dataset, |_, _| false);
        assert_eq!(nothing.kept, 0);
        assert!(nothing.per_annotator.is_empty());
        assert_eq!(nothing.mean, 0.0);
    }

    fn in_unit(prf: Prf) -> bool {
        [prf.precision, prf.recall, prf.f]
            .iter()
            .all(|v| (0.0..=1.0).contains(v))
    }

    proptest! {
        #[test]
        fn rouge_stays_in_unit_interval(
            a in proptest::collection::vec(0u8..4, 0..12),
            b in proptest::collection::vec(0u8..4, 0..12),
            n in 1usize..4,
        ) {
            prop_assert!(in_unit(rouge_l(&a, &b)));
            prop_assert!(in_unit(rouge_n(&a, &b, n)));
        }

        #[test]
        fn identical_text_scores_one(text in "[a-c 猫狗的，,.!]{0,24}") {
            for granularity in [Granularity::Char, Granularity::Word] {
                let tokens = tokenize(&text, granularity);
                prop_assume!(!tokens.is_empty());
                let l = rouge_l(&tokens, &tokens);
                prop_assert!(close(l.precision, 1.0) && close(l.recall, 1.0) && close(l.f, 1.0));
                prop_assert!(close(rouge_n(&tokens, &tokens, 1).f, 1.0));
                if tokens.len() >= 2 {
                    prop_assert!(close(rouge_n(&tokens, &tokens, 2).f, 1.0));
                }
            }
            prop_assert!(close(token_f1(&text, &text), 1.0));
        }

        #[test]
        fn f1_is_symmetric_and_bounded(a in "[a-c 猫狗的，,]{0,16}", b in "[a-c 猫狗的，,]{0,16}") {
            let f = token_f1(&a, &b);
            prop_assert!((0.0..=1.0).contains(&f));
            prop_assert!(close(f, token_f1(&b, &a)));
        }

        #[test]
        fn normalizing_is_idempotent_and_answers_are_found_in_themselves(
            text in "[a-c 猫狗的，,.、'1-3]{0,20}",
            before in "[a-c 猫 ]{0,6}",
            after in "[a-c 狗 ]{0,6}",
        ) {
            let normalized = normalize_answer(&text);
            prop_assert_eq!(normalize_answer(&normalized), normalized.clone());
            prop_assert_eq!(answer_in_context(&text, &text), !normalized.is_empty());
            let context = format!("{before} {text} {after}");
            prop_assert_eq!(answer_in_context(&text, &context), !normalized.is_empty());
        }
    }
}
