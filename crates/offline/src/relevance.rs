//! Query-side tasks: sufficiency, helpfulness, extractive answers, multiple choice (EN + ZH).
//!
//! Shared vocabulary: the query's *content terms* are `Analyzer::terms` of the query (stopwords
//! and question words dropped, English stemmed, Chinese segmented by jieba). Memories are matched
//! with `Analyzer::search_terms`, which adds the dictionary sub-words of long Chinese words, so
//! a query word "北京" is covered by a memory saying "北京大学". Cosines come from the context's
//! embedder (unit vectors, so a dot product).
//!
//! Rules and thresholds:
//! - [`sufficient`]: true when the memories contain at least [`SUFFICIENT_COVERAGE`] of the
//!   query's distinct content terms, or when some memory sentence has cosine ≥
//!   [`SUFFICIENT_COSINE`] with the query. No memories → false.
//! - [`helps`]: false for a near-duplicate of a memory (cosine ≥ [`NEAR_DUPLICATE_COSINE`] or the
//!   same words); otherwise true when the candidate contains a query content term that no memory
//!   covers yet, or when its cosine with the query is ≥ [`HELPS_COSINE`].
//! - [`answer`]: every memory sentence gets `ANSWER_LEXICAL_WEIGHT · lexical + (1 −
//!   ANSWER_LEXICAL_WEIGHT) · max(cosine, 0)`, where `lexical` is the IDF-weighted share of the
//!   query's content terms the sentence contains (IDF over the memory sentences). Sentences with
//!   `lexical` ≥ [`ANSWER_MIN_LEXICAL`] or cosine ≥ [`ANSWER_MIN_COSINE`] are relevant; the best
//!   one is the answer, followed by the runner-up when it scores within [`ANSWER_RUNNER_UP`] of
//!   it, cut to [`ANSWER_MAX_TOKENS`] tokens. Nothing relevant → "I don't know." / "我不知道。"
//!   in the query's language.
//! - [`choose`]: option `i` is scored as `CHOOSE_LEXICAL_WEIGHT · lexicalᵢ + (1 −
//!   CHOOSE_LEXICAL_WEIGHT) · denseᵢ`, with `lexicalᵢ` the largest, over memory sentences, IDF-
//!   weighted share of the terms of "question + option" that the sentence contains (terms found
//!   in no memory get the highest IDF, so unsupported words dilute an option), and `denseᵢ` the
//!   largest cosine between "question + option" and a memory sentence. The highest score wins;
//!   ties (within 1e-6) go to the lower index. Without memory sentences every option scores 0
//!   and the first one is returned.

use std::collections::{BTreeSet, HashMap, HashSet};

use mnemos_core::retrieval::dense::dot;
use mnemos_core::{ModelError, ModelResult};
use mnemos_text::Analyzer;

use crate::summarize::{embed, is_chinese, truncate_to_tokens};
use crate::Ctx;

/// Share of the query's content terms the memories must contain to be sufficient.
pub const SUFFICIENT_COVERAGE: f32 = 0.6;
/// Query–memory-sentence cosine that is sufficient on its own.
pub const SUFFICIENT_COSINE: f32 = 0.75;
/// Query–candidate cosine at which a candidate helps without adding new terms.
pub const HELPS_COSINE: f32 = 0.5;
/// Cosine at which a candidate repeats an existing memory.
pub const NEAR_DUPLICATE_COSINE: f32 = 0.92;
/// Weight of the lexical part of an answer sentence's score.
pub const ANSWER_LEXICAL_WEIGHT: f32 = 0.6;
/// Lexical share that makes a sentence relevant.
pub const ANSWER_MIN_LEXICAL: f32 = 0.25;
/// Cosine that makes a sentence relevant without shared terms.
pub const ANSWER_MIN_COSINE: f32 = 0.5;
/// A second sentence joins the answer when it scores at least this fraction of the best one.
pub const ANSWER_RUNNER_UP: f32 = 0.8;
/// Longest answer, in tokens.
pub const ANSWER_MAX_TOKENS: usize = 60;
/// Weight of the lexical part of an option's score.
pub const CHOOSE_LEXICAL_WEIGHT: f32 = 0.7;

const UNKNOWN_EN: &str = "I don't know.";
const UNKNOWN_ZH: &str = "我不知道。";

/// Whether the memories cover the query well enough to stop retrieving (see module docs).
pub fn sufficient(ctx: &Ctx, query: &str, memories: &[String]) -> ModelResult<bool> {
    let memories = non_blank(memories);
    if memories.is_empty() || query.trim().is_empty() {
        return Ok(false);
    }
    let wanted = distinct_terms(ctx.analyzer, query);
    let have = memory_terms(ctx.analyzer, &memories);
    if !wanted.is_empty() && coverage(&wanted, &have) >= SUFFICIENT_COVERAGE {
        return Ok(true);
    }
    let sentences = memory_sentences(&memories);
    Ok(max_cosine(ctx, query, &sentences)? >= SUFFICIENT_COSINE)
}

/// Whether adding `candidate` to `memories` helps answer `query` (see module docs).
pub fn helps(ctx: &Ctx, query: &str, memories: &[String], candidate: &str) -> ModelResult<bool> {
    if candidate.trim().is_empty() || query.trim().is_empty() {
        return Ok(false);
    }
    let memories = non_blank(memories);
    let key = plain(candidate);
    if memories.iter().any(|m| plain(m) == key) {
        return Ok(false);
    }
    let mut texts = vec![query, candidate];
    texts.extend(memories.iter().copied());
    let vectors = embed(ctx, &texts)?;
    let (Some(q), Some(c)) = (vectors.first(), vectors.get(1)) else {
        return Ok(false);
    };
    if vectors
        .iter()
        .skip(2)
        .any(|m| dot(c, m) >= NEAR_DUPLICATE_COSINE)
    {
        return Ok(false);
    }
    let wanted = distinct_terms(ctx.analyzer, query);
    let covered = memory_terms(ctx.analyzer, &memories);
    let offered = memory_terms(ctx.analyzer, &[candidate]);
    let adds_terms = wanted
        .iter()
        .any(|t| offered.contains(t.as_str()) && !covered.contains(t.as_str()));
    Ok(adds_terms || dot(q, c) >= HELPS_COSINE)
}

/// The memory sentence(s) that best answer `query`, or "I don't know" (see module docs).
pub fn answer(ctx: &Ctx, query: &str, memories: &[String]) -> ModelResult<String> {
    let unknown = if is_chinese(query) {
        UNKNOWN_ZH
    } else {
        UNKNOWN_EN
    };
    let memories = non_blank(memories);
    let sentences = memory_sentences(&memories);
    if sentences.is_empty() || query.trim().is_empty() {
        return Ok(unknown.to_string());
    }
    let index = SentenceIndex::new(ctx.analyzer, &sentences);
    let wanted = distinct_terms(ctx.analyzer, query);
    let mut texts = vec![query];
    texts.extend(sentences.iter().copied());
    let vectors = embed(ctx, &texts)?;
    let Some((q, sentence_vectors)) = vectors.split_first() else {
        return Ok(unknown.to_string());
    };
    let mut scored: Vec<(usize, f32)> = Vec::new();
    for (i, v) in sentence_vectors.iter().enumerate() {
        let lexical = index.support(i, &wanted);
        let cosine = dot(q, v);
        if lexical >= ANSWER_MIN_LEXICAL || cosine >= ANSWER_MIN_COSINE {
            let score =
                ANSWER_LEXICAL_WEIGHT * lexical + (1.0 - ANSWER_LEXICAL_WEIGHT) * cosine.max(0.0);
            scored.push((i, score));
        }
    }
    // Best first; ties keep memory order.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let Some(&(best, best_score)) = scored.first() else {
        return Ok(unknown.to_string());
    };
    let mut out = sentences.get(best).copied().unwrap_or_default().to_string();
    if let Some(&(second, score)) = scored.get(1) {
        let text = sentences.get(second).copied().unwrap_or_default();
        let joined = join(&out, text);
        if score >= ANSWER_RUNNER_UP * best_score
            && plain(text) != plain(&out)
            && ctx.analyzer.count_tokens(&joined) <= ANSWER_MAX_TOKENS
        {
            out = joined;
        }
    }
    Ok(truncate_to_tokens(ctx.analyzer, &out, ANSWER_MAX_TOKENS))
}

/// Index of the option the memories support best (see module docs).
pub fn choose(
    ctx: &Ctx,
    question: &str,
    options: &[String],
    memories: &[String],
) -> ModelResult<usize> {
    if options.is_empty() {
        return Err(ModelError::invalid("choose: no options"));
    }
    let memories = non_blank(memories);
    let sentences = memory_sentences(&memories);
    if sentences.is_empty() || options.len() == 1 {
        return Ok(0);
    }
    let index = SentenceIndex::new(ctx.analyzer, &sentences);
    let claims: Vec<String> = options
        .iter()
        .map(|o| format!("{} {}", question.trim(), o.trim()))
        .collect();
    let mut texts: Vec<&str> = claims.iter().map(String::as_str).collect();
    texts.extend(sentences.iter().copied());
    let vectors = embed(ctx, &texts)?;
    let (claim_vectors, sentence_vectors) = vectors.split_at(claims.len().min(vectors.len()));

    let mut best: Option<(usize, f32)> = None;
    for (i, claim) in claims.iter().enumerate() {
        let terms = distinct_terms(ctx.analyzer, claim);
        let lexical = (0..sentences.len())
            .map(|s| index.support(s, &terms))
            .fold(0.0f32, f32::max);
        let dense = claim_vectors.get(i).map_or(0.0, |c| {
            sentence_vectors
                .iter()
                .map(|s| dot(c, s))
                .fold(0.0f32, f32::max)
        });
        let score = CHOOSE_LEXICAL_WEIGHT * lexical + (1.0 - CHOOSE_LEXICAL_WEIGHT) * dense;
        if best.is_none_or(|(_, b)| score > b + 1e-6) {
            best = Some((i, score));
        }
    }
    Ok(best.map_or(0, |(i, _)| i))
}

fn non_blank(memories: &[String]) -> Vec<&str> {
    memories
        .iter()
        .map(|m| m.trim())
        .filter(|m| !m.is_empty())
        .collect()
}

fn memory_sentences<'a>(memories: &[&'a str]) -> Vec<&'a str> {
    memories
        .iter()
        .flat_map(|m| mnemos_text::sentences(m))
        .collect()
}

fn distinct_terms(analyzer: &Analyzer, text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    analyzer
        .terms(text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

fn memory_terms(analyzer: &Analyzer, texts: &[&str]) -> HashSet<String> {
    texts
        .iter()
        .flat_map(|t| analyzer.search_terms(t))
        .collect()
}

fn coverage(wanted: &[String], have: &HashSet<String>) -> f32 {
    if wanted.is_empty() {
        return 0.0;
    }
    wanted.iter().filter(|t| have.contains(t.as_str())).count() as f32 / wanted.len() as f32
}

fn max_cosine(ctx: &Ctx, query: &str, sentences: &[&str]) -> ModelResult<f32> {
    let mut texts = vec![query];
    texts.extend(sentences.iter().copied());
    let vectors = embed(ctx, &texts)?;
    Ok(match vectors.split_first() {
        Some((q, rest)) => rest.iter().map(|v| dot(q, v)).fold(f32::MIN, f32::max),
        None => f32::MIN,
    })
}

/// Letters and digits only, lowercased.
fn plain(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn join(a: &str, b: &str) -> String {
    let cjk = |c: Option<char>| c.is_some_and(|c| mnemos_text::is_cjk(c) || !c.is_ascii());
    if cjk(a.chars().next_back()) || cjk(b.chars().next()) {
        format!("{a}{b}")
    } else {
        format!("{a} {b}")
    }
}

/// Term sets of the memory sentences with their IDF.
struct SentenceIndex {
    terms: Vec<BTreeSet<String>>,
    df: HashMap<String, usize>,
    count: usize,
}

impl SentenceIndex {
    fn new(analyzer: &Analyzer, sentences: &[&str]) -> Self {
        let terms: Vec<BTreeSet<String>> = sentences
            .iter()
            .map(|s| analyzer.search_terms(s).into_iter().collect())
            .collect();
        let mut df: HashMap<String, usize> = HashMap::new();
        for set in &terms {
            for t in set {
                *df.entry(t.clone()).or_default() += 1;
            }
        }
        SentenceIndex {
            count: terms.len(),
            terms,
            df,
        }
    }

    /// ln(1 + N/df); terms no sentence has get the highest value, ln(1 + N).
    fn idf(&self, term: &str) -> f32 {
        let n = self.count.max(1) as f32;
        let df = self.df.get(term).copied().unwrap_or(1).max(1) as f32;
        (1.0 + n / df).ln()
    }

    /// IDF-weighted share of `terms` that sentence `i` contains.
    fn support(&self, i: usize, terms: &[String]) -> f32 {
        let Some(set) = self.terms.get(i) else {
            return 0.0;
        };
        let (mut hit, mut total) = (0.0f32, 0.0f32);
        for t in terms {
            let w = self.idf(t);
            total += w;
            if set.contains(t) {
                hit += w;
            }
        }
        if total > 0.0 {
            hit / total
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::tests::with_ctx;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn en_memories() -> Vec<String> {
        strings(&[
            "Caroline works as a counselor at a youth center.",
            "Melanie painted a lake at sunrise last week. She loves painting.",
            "Caroline adopted a dog named Oscar in May.",
        ])
    }

    fn zh_memories() -> Vec<String> {
        strings(&[
            "小明在北京大学读书，专业是计算机。",
            "小红上周去杭州看了西湖。",
            "小明养了一只猫，名字叫年糕。",
        ])
    }

    #[test]
    fn sufficiency() {
        with_ctx(|ctx| {
            let en = en_memories();
            assert!(sufficient(ctx, "What is the name of Caroline's dog?", &en).unwrap());
            assert!(!sufficient(ctx, "Where did Melanie go skiing in January?", &en).unwrap());
            assert!(!sufficient(ctx, "What is Caroline's dog called?", &[]).unwrap());
            let zh = zh_memories();
            assert!(sufficient(ctx, "小明的猫叫什么名字？", &zh).unwrap());
            assert!(!sufficient(ctx, "小红的哥哥在哪里工作？", &zh).unwrap());
            assert!(!sufficient(ctx, "？？", &zh).unwrap());
        });
    }

    #[test]
    fn helpfulness() {
        with_ctx(|ctx| {
            let en = strings(&["Caroline adopted a dog in May."]);
            let q = "What is the name of Caroline's dog?";
            assert!(helps(ctx, q, &en, "The dog is named Oscar.").unwrap());
            assert!(!helps(ctx, q, &en, "Caroline adopted a dog in May.").unwrap());
            assert!(!helps(ctx, q, &en, "The weather was rainy on Tuesday.").unwrap());
            let zh = strings(&["小明养了一只猫。"]);
            let q = "小明的猫叫什么名字？";
            assert!(helps(ctx, q, &zh, "猫的名字叫年糕。").unwrap());
            assert!(!helps(ctx, q, &zh, "小明养了一只猫。").unwrap());
            assert!(!helps(ctx, q, &zh, "今天下雨了。").unwrap());
        });
    }

    #[test]
    fn answers_are_extractive_or_unknown() {
        with_ctx(|ctx| {
            let en = en_memories();
            let a = answer(ctx, "What is the name of Caroline's dog?", &en).unwrap();
            assert!(a.contains("Oscar"), "{a}");
            assert!(ctx.analyzer.count_tokens(&a) <= ANSWER_MAX_TOKENS);
            assert_eq!(
                answer(ctx, "Who won the chess tournament?", &en).unwrap(),
                UNKNOWN_EN
            );
            assert_eq!(
                answer(ctx, "What car does he drive?", &[]).unwrap(),
                UNKNOWN_EN
            );
            let zh = zh_memories();
            let a = answer(ctx, "小明的专业是什么？", &zh).unwrap();
            assert!(a.contains("计算机"), "{a}");
            assert_eq!(answer(ctx, "谁赢了象棋比赛？", &zh).unwrap(), UNKNOWN_ZH);
            assert_eq!(answer(ctx, "谁赢了象棋比赛？", &[]).unwrap(), UNKNOWN_ZH);
            let long = vec![format!(
                "Oscar the dog {}",
                "runs and barks loudly ".repeat(40)
            )];
            let a = answer(ctx, "What does Oscar the dog do?", &long).unwrap();
            assert!(ctx.analyzer.count_tokens(&a) <= ANSWER_MAX_TOKENS, "{a}");
        });
    }

    #[test]
    fn choose_picks_the_supported_option() {
        with_ctx(|ctx| {
            let en = en_memories();
            let options = strings(&["Max", "Oscar", "Bella"]);
            assert_eq!(
                choose(ctx, "What is the name of Caroline's dog?", &options, &en).unwrap(),
                1
            );
            let options = strings(&["a nurse", "a teacher", "a counselor at a youth center"]);
            assert_eq!(
                choose(ctx, "What does Caroline do?", &options, &en).unwrap(),
                2
            );
            let zh = zh_memories();
            let options = strings(&["杭州", "上海", "北京"]);
            assert_eq!(
                choose(ctx, "小明在哪个城市读书？", &options, &zh).unwrap(),
                2
            );
            let options = strings(&["豆豆", "年糕", "咪咪"]);
            assert_eq!(choose(ctx, "小明的猫叫什么？", &options, &zh).unwrap(), 1);
            // Nothing to go on: the first option; identical options tie to the lower index.
            assert_eq!(choose(ctx, "q?", &strings(&["x", "y"]), &[]).unwrap(), 0);
            let same = strings(&["Oscar", "Oscar"]);
            assert_eq!(choose(ctx, "Dog name?", &same, &en).unwrap(), 0);
            assert!(choose(ctx, "q?", &[], &en).is_err());
        });
    }

    #[test]
    fn deterministic() {
        with_ctx(|ctx| {
            let en = en_memories();
            let q = "What did Melanie paint?";
            assert_eq!(answer(ctx, q, &en).unwrap(), answer(ctx, q, &en).unwrap());
        });
    }
}
