//! Extractive summaries under a token budget (EN + ZH).
//!
//! The summary is made only of input sentences, so it is always in the input's language:
//! 1. Every text is split into lines; a line that starts with a short "Speaker:" label keeps the
//!    label with each of its sentences (`mnemos_text::sentences` splits the rest).
//! 2. Each sentence is scored by its cosine to the centroid of all sentence vectors (what the
//!    texts are mostly about) plus [`SALIENCE_WEIGHT`] × a lexical salience term (how common its
//!    content terms are across the sentences; sentences with fewer than
//!    [`SALIENCE_FULL_TERMS`] content terms get proportionally less, so "Hi!" never wins).
//! 3. Maximal marginal relevance with λ = [`MMR_LAMBDA`] picks sentences while they fit the budget
//!    (the rendered output is counted with `Analyzer::count_tokens`, so labels, separators and all
//!    count); near-duplicates (cosine ≥ [`DUPLICATE_COSINE`] to a chosen sentence, or the same
//!    words) are never picked.
//! 4. The chosen sentences are written in their original order, one line per speaker turn.
//!
//! When not even one sentence fits, the best one is cut at a token boundary to the budget.
//! Level > 1 inputs are summaries themselves and go through the same algorithm.

use std::collections::{HashMap, HashSet};

use mnemos_core::retrieval::dense::dot;
use mnemos_core::{EmbedderExt, ModelError, ModelResult};
use mnemos_text::{has_cjk, is_cjk, Analyzer};

use crate::Ctx;

/// Trade-off between relevance and novelty in MMR.
pub const MMR_LAMBDA: f32 = 0.7;
/// Weight of the lexical salience term next to the centroid cosine (which lies in [-1, 1]).
pub const SALIENCE_WEIGHT: f32 = 0.3;
/// Relevance factor of a question next to a statement.
pub const QUESTION_WEIGHT: f32 = 0.5;
/// Content terms a sentence needs for full salience.
pub const SALIENCE_FULL_TERMS: usize = 3;
/// Cosine at or above which two sentences count as saying the same thing.
pub const DUPLICATE_COSINE: f32 = 0.92;
/// Longest speaker label recognized in front of a line, in characters.
const MAX_LABEL_CHARS: usize = 32;
/// Most words a speaker label may have ("Dr. Anna Smith").
const MAX_LABEL_WORDS: usize = 4;

/// Summarize `texts` into at most `token_budget` tokens (see the module documentation).
pub fn summarize(
    ctx: &Ctx,
    texts: &[String],
    _level: u8,
    token_budget: usize,
) -> ModelResult<String> {
    let prepared = Prepared::new(ctx, texts)?;
    let all: Vec<usize> = (0..texts.len()).collect();
    prepared.summarize_sources(ctx, &all, token_budget)
}

/// Texts split into sentences and embedded once, so that several summaries over subsets of
/// them (one per topic of a session) share the embedding work.
pub(crate) struct Prepared<'a> {
    doc: Document<'a>,
    vectors: Vec<Vec<f32>>,
}

impl<'a> Prepared<'a> {
    pub(crate) fn new(ctx: &Ctx, texts: &'a [String]) -> ModelResult<Self> {
        let doc = Document::parse(texts);
        let plain: Vec<&str> = doc.sentences.iter().map(|s| s.text.as_str()).collect();
        let vectors = embed(ctx, &plain)?;
        Ok(Prepared { doc, vectors })
    }

    /// Unit-length mean of the sentence vectors of each text (`None` for a text without
    /// sentences or whose vectors cancel out), weighted like the summary's centroid.
    pub(crate) fn text_vectors(&self, analyzer: &Analyzer, texts: usize) -> Vec<Option<Vec<f32>>> {
        let weights = self.doc.content_weights(analyzer);
        let mut members: Vec<(Vec<Vec<f32>>, Vec<f32>)> = vec![(Vec::new(), Vec::new()); texts];
        for ((sentence, v), w) in self.doc.sentences.iter().zip(&self.vectors).zip(&weights) {
            if let Some(m) = self
                .doc
                .source_of(sentence)
                .and_then(|t| members.get_mut(t))
            {
                m.0.push(v.clone());
                m.1.push(*w);
            }
        }
        members
            .into_iter()
            .map(|(vectors, w)| weighted_centroid(&vectors, &w).or_else(|| centroid(&vectors)))
            .collect()
    }

    /// Summary of the sentences that come from the texts `sources` (indexes into the texts).
    pub(crate) fn summarize_sources(
        &self,
        ctx: &Ctx,
        sources: &[usize],
        token_budget: usize,
    ) -> ModelResult<String> {
        if token_budget == 0 {
            return Err(ModelError::bad_output(
                "summarize",
                "a budget of zero tokens leaves no room for any text",
            ));
        }
        let wanted: HashSet<usize> = sources.iter().copied().collect();
        let (sentences, vectors): (Vec<Sentence>, Vec<Vec<f32>>) = self
            .doc
            .sentences
            .iter()
            .zip(&self.vectors)
            .filter(|(s, _)| self.doc.source_of(s).is_some_and(|t| wanted.contains(&t)))
            .map(|(s, v)| (s.clone(), v.clone()))
            .unzip();
        let doc = Document {
            sentences,
            units: self.doc.units.clone(),
        };
        if doc.sentences.is_empty() {
            return Err(ModelError::bad_output(
                "summarize",
                "the texts contain no sentence",
            ));
        }
        let relevance = relevance_scores(ctx.analyzer, &doc, &vectors);
        let chosen = select_mmr(ctx.analyzer, &doc, &vectors, &relevance, token_budget);
        if !chosen.is_empty() {
            return Ok(doc.render(&chosen));
        }
        // Not one sentence fits: cut the most central one.
        let best = argmax(&relevance).unwrap_or(0);
        let cut = truncate_to_tokens(ctx.analyzer, &doc.render(&[best]), token_budget);
        if cut.trim().is_empty() {
            Err(ModelError::bad_output(
                "summarize",
                format!("nothing fits in {token_budget} tokens"),
            ))
        } else {
            Ok(cut)
        }
    }
}

/// One sentence of the input and the speaker turn (line) it belongs to.
#[derive(Clone)]
struct Sentence {
    text: String,
    unit: usize,
    /// Retold from a speaker's line in the third person ([`mnemos_text::narrate`]).
    narrated: bool,
    /// Narrated speech that names neither speaker nor addressee: shown behind its speaker.
    needs_label: bool,
    question: bool,
}

impl Sentence {
    /// The sentences of `text` as written, for line `unit`.
    fn raw(text: &str, unit: usize) -> Vec<Sentence> {
        mnemos_text::sentences(text)
            .into_iter()
            .map(|t| Sentence {
                text: t.to_string(),
                unit,
                narrated: false,
                needs_label: false,
                question: false,
            })
            .collect()
    }
}

/// A line of the input, with its speaker label when it has one ("Caroline:").
#[derive(Clone)]
struct Unit<'a> {
    label: Option<&'a str>,
    /// Index of the input text it comes from.
    source: usize,
}

struct Document<'a> {
    sentences: Vec<Sentence>,
    units: Vec<Unit<'a>>,
}

/// The name in a speaker label ("Caroline:" → "Caroline").
fn label_name(label: &str) -> &str {
    label.trim_end_matches([':', '：']).trim()
}

impl<'a> Document<'a> {
    /// Split the texts into sentences. Lines with a speaker label are retold in the third
    /// person, the addressee being the nearest other speaker (before the line, else after it,
    /// across texts); other lines (summaries, notes) are split as they are.
    fn parse(texts: &'a [String]) -> Self {
        let mut sentences = Vec::new();
        let mut units = Vec::new();
        // Every line of every text, split once; addressees are looked up over all of them
        // (a text may be a single line).
        let lines: Vec<(usize, Option<&'a str>, &'a str)> = texts
            .iter()
            .enumerate()
            .flat_map(|(source, t)| t.lines().map(move |l| (source, l)))
            .map(|(source, l)| {
                let (label, body) = split_speaker(l);
                (source, label, body)
            })
            .collect();
        let speakers: Vec<Option<&str>> = lines.iter().map(|(_, l, _)| l.map(label_name)).collect();
        let mut first_of_text = 0;
        for (at, &(source, label, body)) in lines.iter().enumerate() {
            let unit = units.len();
            let before = sentences.len();
            match speakers[at] {
                Some(speaker) => sentences.extend(
                    mnemos_text::narrate(body, speaker, mnemos_text::addressee_of(&speakers, at))
                        .into_iter()
                        .map(|n| Sentence {
                            needs_label: !n.action && !n.names_participant,
                            question: n.question,
                            text: n.text,
                            unit,
                            narrated: true,
                        }),
                ),
                None => sentences.extend(Sentence::raw(body, unit)),
            }
            if sentences.len() > before {
                units.push(Unit { label, source });
            }
            let text_ends = lines.get(at + 1).is_none_or(|next| next.0 != source);
            if !text_ends {
                continue;
            }
            // Only small talk ("ok", "哈哈"): nothing to retell, so keep the text's lines as
            // said rather than leave it without a sentence.
            if sentences.len() == first_of_text {
                for &(_, label, body) in lines.iter().filter(|l| l.0 == source) {
                    let raw = Sentence::raw(body, units.len());
                    if !raw.is_empty() {
                        units.push(Unit { label, source });
                        sentences.extend(raw);
                    }
                }
            }
            first_of_text = sentences.len();
        }
        Document { sentences, units }
    }

    fn source_of(&self, sentence: &Sentence) -> Option<usize> {
        self.units.get(sentence.unit).map(|u| u.source)
    }

    /// Content terms of every sentence: analyzer terms without chat fillers ("wow", "哈哈")
    /// and without the speakers' names (vocatives say nothing about the topic).
    fn content_terms(&self, analyzer: &Analyzer) -> Vec<HashSet<String>> {
        let names: HashSet<String> = self
            .units
            .iter()
            .filter_map(|u| u.label)
            .flat_map(|l| analyzer.terms(l.trim_end_matches([':', '：'])))
            .collect();
        self.sentences
            .iter()
            .map(|s| {
                analyzer
                    .terms(&s.text)
                    .into_iter()
                    .filter(|t| !is_filler(t) && !names.contains(t))
                    .collect()
            })
            .collect()
    }

    /// How much content each sentence has: 1 with [`SALIENCE_FULL_TERMS`] content terms or
    /// more, proportionally less below ("Wow, Caroline!" has none).
    fn content_weights(&self, analyzer: &Analyzer) -> Vec<f32> {
        self.content_terms(analyzer)
            .iter()
            .map(|t| content_weight(t.len()))
            .collect()
    }

    /// The chosen sentences (indexes into `sentences`) in original order. Narrated sentences
    /// stand alone, each ended with its punctuation (quoted speech behind its speaker's
    /// label); other sentences of one line stay together behind its label, lines separated by
    /// line breaks when any has a speaker, by the sentence joiner otherwise.
    fn render(&self, chosen: &[usize]) -> String {
        let mut order: Vec<usize> = chosen
            .iter()
            .copied()
            .filter(|&i| i < self.sentences.len())
            .collect();
        order.sort_unstable();
        order.dedup();
        let dialogue = order.iter().any(|&i| {
            self.sentences.get(i).is_some_and(|s| {
                !s.narrated && self.units.get(s.unit).is_some_and(|u| u.label.is_some())
            })
        });
        let mut out = String::new();
        let mut current_unit = None;
        for i in order {
            let Some(sentence) = self.sentences.get(i) else {
                continue;
            };
            let label = self.units.get(sentence.unit).and_then(|u| u.label);
            if sentence.narrated {
                current_unit = None;
                let mut piece = String::new();
                if let (true, Some(label)) = (sentence.needs_label, label) {
                    piece.push_str(label);
                    if label.ends_with(':') {
                        piece.push(' ');
                    }
                }
                piece.push_str(&sentence.text);
                if !sentence.question {
                    piece.push_str(if has_cjk(&sentence.text) { "。" } else { "." });
                }
                push_joined(&mut out, &piece);
                continue;
            }
            if current_unit == Some(sentence.unit) {
                push_joined(&mut out, &sentence.text);
                continue;
            }
            current_unit = Some(sentence.unit);
            if !out.is_empty() {
                if dialogue {
                    out.push('\n');
                } else {
                    out.push_str(joiner(&out, &sentence.text));
                }
            }
            if let Some(label) = label {
                out.push_str(label);
                if label.ends_with(':') {
                    out.push(' ');
                }
            }
            out.push_str(&sentence.text);
        }
        out
    }
}

/// Split "Speaker: text" into its label (with the colon) and the text. A label is short, has
/// no digits (so "10:30" is not one) and no sentence punctuation.
fn split_speaker(line: &str) -> (Option<&str>, &str) {
    let line = line.trim();
    let Some((colon, c)) = line.char_indices().find(|&(_, c)| c == ':' || c == '：') else {
        return (None, line);
    };
    let name = line[..colon].trim();
    let body = line[colon + c.len_utf8()..].trim();
    let plausible = !name.is_empty()
        && !body.is_empty()
        && name.chars().count() <= MAX_LABEL_CHARS
        && name.split_whitespace().count() <= MAX_LABEL_WORDS
        && name.chars().all(|c| {
            c.is_alphabetic() || c == ' ' || c == '.' || c == '-' || c == '_' || c == '\''
        });
    if plausible {
        (Some(&line[..colon + c.len_utf8()]), body)
    } else {
        (None, line)
    }
}

/// What goes between two sentences: nothing around Chinese text, a space otherwise.
fn joiner(before: &str, next: &str) -> &'static str {
    let cjk_end = before.chars().next_back().is_some_and(is_cjk_or_punct);
    let cjk_start = next.chars().next().is_some_and(is_cjk_or_punct);
    if cjk_end || cjk_start {
        ""
    } else {
        " "
    }
}

fn push_joined(out: &mut String, next: &str) {
    if !out.is_empty() {
        out.push_str(joiner(out, next));
    }
    out.push_str(next);
}

fn is_cjk_or_punct(c: char) -> bool {
    is_cjk(c)
        || matches!(
            c,
            '。' | '！' | '？' | '；' | '，' | '、' | '：' | '”' | '」' | '）'
        )
}

/// Lowercased words only: two sentences with the same key say the same thing.
fn normalized_key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn content_weight(terms: usize) -> f32 {
    terms.min(SALIENCE_FULL_TERMS) as f32 / SALIENCE_FULL_TERMS as f32
}

/// `content weight × (cosine to the weighted centroid + SALIENCE_WEIGHT × salience)` for every
/// sentence, where salience is the mean document frequency (relative to the most frequent
/// term) of the sentence's content terms. The centroid itself is weighted by content, so that
/// greetings and back-channel replies do not define what a dialogue is about.
fn relevance_scores(analyzer: &Analyzer, doc: &Document, vectors: &[Vec<f32>]) -> Vec<f32> {
    let terms = doc.content_terms(analyzer);
    let weights: Vec<f32> = terms.iter().map(|t| content_weight(t.len())).collect();
    let centroid = weighted_centroid(vectors, &weights).or_else(|| centroid(vectors));
    let mut df: HashMap<&str, usize> = HashMap::new();
    for set in &terms {
        for t in set {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    let max_df = df.values().copied().max().unwrap_or(1).max(1) as f32;
    vectors
        .iter()
        .zip(&terms)
        .zip(&weights)
        .zip(&doc.sentences)
        .map(|(((v, set), &weight), sentence)| {
            // A question asks what a memory should state.
            let weight = if sentence.question {
                weight * QUESTION_WEIGHT
            } else {
                weight
            };
            let central = centroid.as_ref().map_or(0.0, |c| dot(v, c)).max(0.0);
            let salience = if set.is_empty() {
                0.0
            } else {
                set.iter()
                    .map(|t| df.get(t.as_str()).copied().unwrap_or(0) as f32 / max_df)
                    .sum::<f32>()
                    / set.len() as f32
            };
            weight * (central + SALIENCE_WEIGHT * salience)
        })
        .collect()
}

/// Unit-length weighted mean of the vectors, or `None` when nothing has weight.
fn weighted_centroid(vectors: &[Vec<f32>], weights: &[f32]) -> Option<Vec<f32>> {
    let dim = vectors.first()?.len();
    let mut c = vec![0.0f32; dim];
    for (v, &w) in vectors.iter().zip(weights) {
        for (a, b) in c.iter_mut().zip(v) {
            *a += w * b;
        }
    }
    let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= f32::EPSILON || !norm.is_finite() {
        return None;
    }
    c.iter_mut().for_each(|x| *x /= norm);
    Some(c)
}

/// Chat fillers: words that are frequent in dialogue but name no topic (English Snowball
/// stems and Chinese words). Used for summary salience and topic labels.
pub(crate) fn is_filler(term: &str) -> bool {
    FILLERS.contains(&term)
}

const FILLERS: &[&str] = &[
    "hey",
    "hi",
    "hello",
    "wow",
    "yeah",
    "yes",
    "yep",
    "ok",
    "okay",
    "thank",
    "cool",
    "great",
    "good",
    "nice",
    "awesom",
    "realli",
    "total",
    "gonna",
    "wanna",
    "got",
    "get",
    "go",
    "see",
    "know",
    "think",
    "lol",
    "oh",
    "um",
    "sure",
    "glad",
    "sound",
    "look",
    "way",
    "thing",
    "lot",
    "much",
    "well",
    "sorri",
    "bye",
    "talk",
    "soon",
    "right",
    "pretti",
    "amaz",
    "agre",
    "definit",
    "absolut",
    "mean",
    "kinda",
    "stuff",
    "said",
    "say",
    "tell",
    "told",
    "also",
    "even",
    "make",
    "want",
    "need",
    "keep",
    "let",
    "anyth",
    "someth",
    "everyth",
    "thing",
    "wonder",
    "love",
    "happi",
    "excit",
    "fun",
    "hope",
    "guess",
    "feel",
    "哈哈哈",
    "嗯嗯",
    "好的",
    "谢谢",
    "真的",
    "觉得",
    "知道",
    "好吧",
    "是的",
    "对",
    "好",
    "不错",
    "可能",
    "现在",
    "时候",
    "感觉",
    "一样",
    "东西",
    "事情",
    "特别",
    "一起",
    "还有",
    "然后",
    "就是",
    "这种",
    "那种",
    "有点",
    "一点",
    "厉害",
    "太好了",
    "加油",
    "没事",
    "一定",
    "当然",
    "确实",
    "其实",
    "看看",
    "听说",
    "说",
    "想",
    "呵呵",
    "嘿嘿",
    "嘻嘻",
    "哦哦",
    "对啊",
    "是啊",
    "开心",
    "希望",
];

/// Unit-length mean of the vectors, or `None` when they cancel out (or there are none).
pub(crate) fn centroid(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let dim = vectors.first()?.len();
    let mut c = vec![0.0f32; dim];
    for v in vectors {
        for (a, b) in c.iter_mut().zip(v) {
            *a += b;
        }
    }
    let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= f32::EPSILON || !norm.is_finite() {
        return None;
    }
    c.iter_mut().for_each(|x| *x /= norm);
    Some(c)
}

/// Greedy MMR selection under the budget; returns chosen sentence indexes (selection order).
fn select_mmr(
    analyzer: &Analyzer,
    doc: &Document,
    vectors: &[Vec<f32>],
    relevance: &[f32],
    budget: usize,
) -> Vec<usize> {
    let n = doc.sentences.len();
    let (lo, hi) = relevance
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    let span = hi - lo;
    let normalized: Vec<f32> = relevance
        .iter()
        .map(|&r| if span > 1e-6 { (r - lo) / span } else { 1.0 })
        .collect();
    let costs: Vec<usize> = doc
        .sentences
        .iter()
        .map(|s| analyzer.count_tokens(&s.text))
        .collect();

    let mut open = vec![true; n];
    let mut max_sim = vec![0.0f32; n];
    let mut seen_keys = HashSet::new();
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0usize;
    loop {
        let mut best: Option<(usize, f32)> = None;
        for i in 0..n {
            if !open[i] {
                continue;
            }
            let score = MMR_LAMBDA * normalized[i] - (1.0 - MMR_LAMBDA) * max_sim[i];
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((i, score));
            }
        }
        let Some((pick, _)) = best else {
            break;
        };
        open[pick] = false;
        let duplicate = !chosen.is_empty() && max_sim[pick] >= DUPLICATE_COSINE;
        let key = doc.sentences.get(pick).map(|s| normalized_key(&s.text));
        if duplicate || key.as_ref().is_some_and(|k| seen_keys.contains(k)) {
            continue;
        }
        if costs.get(pick).copied().unwrap_or(usize::MAX) > budget.saturating_sub(used) {
            continue;
        }
        chosen.push(pick);
        let rendered = analyzer.count_tokens(&doc.render(&chosen));
        if rendered > budget {
            chosen.pop();
            continue;
        }
        used = rendered;
        if let Some(k) = key {
            seen_keys.insert(k);
        }
        if let Some(v) = vectors.get(pick) {
            for (j, w) in vectors.iter().enumerate() {
                if open[j] {
                    max_sim[j] = max_sim[j].max(dot(v, w));
                }
            }
        }
    }
    chosen
}

/// Index of the largest value (the first one on ties).
pub(crate) fn argmax(values: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in values.iter().enumerate() {
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Embed texts, turning embedder failures into model errors.
pub(crate) fn embed(ctx: &Ctx, texts: &[&str]) -> ModelResult<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    ctx.embedder
        .embed_all(texts)
        .map_err(|e| ModelError::Unavailable(format!("embedder: {e}")))
}

/// The longest prefix of `text` within `budget` tokens, cut after a whole token (a whole
/// character when the first token alone is too long), with "…" when something was cut.
pub(crate) fn truncate_to_tokens(analyzer: &Analyzer, text: &str, budget: usize) -> String {
    if analyzer.count_tokens(text) <= budget {
        return text.to_string();
    }
    // "…" costs one token; very small budgets get the bare cut.
    let (room, mark) = if budget >= 2 {
        (budget - 1, "…")
    } else {
        (budget, "")
    };
    let fits = |end: usize| {
        text.get(..end)
            .is_some_and(|p| analyzer.count_tokens(p) <= room)
    };
    let mut ends: Vec<usize> = analyzer.tokens(text).iter().map(|t| t.end).collect();
    ends.dedup();
    let mut cut = last_fitting(&ends, &fits);
    if cut.is_none() {
        let chars: Vec<usize> = text.char_indices().map(|(i, c)| i + c.len_utf8()).collect();
        cut = last_fitting(&chars, &fits);
    }
    match cut.and_then(|end| text.get(..end)) {
        Some(prefix) if !prefix.trim().is_empty() => format!("{}{mark}", prefix.trim_end()),
        _ => String::new(),
    }
}

/// The largest position in ascending `ends` for which `fits` holds (`fits` is monotone: a
/// longer prefix never has fewer tokens).
fn last_fitting(ends: &[usize], fits: &impl Fn(usize) -> bool) -> Option<usize> {
    let count = ends.partition_point(|&e| fits(e));
    count.checked_sub(1).and_then(|i| ends.get(i).copied())
}

/// Whether a text should be answered in Chinese (it has CJK and is mostly Chinese).
pub(crate) fn is_chinese(text: &str) -> bool {
    has_cjk(text)
        && matches!(
            mnemos_text::detect_language(text),
            mnemos_text::Language::Chinese
        )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mnemos_embed::HashEmbedder;
    use mnemos_testkit::data::MissingData;

    pub(crate) fn with_ctx<T>(f: impl FnOnce(&Ctx) -> T) -> T {
        let embedder = HashEmbedder::default();
        let ctx = Ctx {
            analyzer: Analyzer::shared(),
            embedder: &embedder,
        };
        f(&ctx)
    }

    fn en_texts() -> Vec<String> {
        vec![
            "I moved to Berlin last spring for a new job. The job is at a small robotics startup. \
             Berlin is cold in winter but I love the city. My robotics team builds warehouse robots. \
             I also adopted a cat named Miso. The startup might raise money next year. \
             Hello there. The robots at the startup learn to pick boxes in the warehouse."
                .to_string(),
        ]
    }

    fn zh_texts() -> Vec<String> {
        vec![
            "我去年春天搬到了上海。我在上海的一家机器人公司工作。公司做仓库机器人。\
             上海的冬天不太冷。我还养了一只猫，叫年糕。公司明年可能融资。你好。\
             仓库机器人可以自动搬箱子。"
                .to_string(),
        ]
    }

    fn position(haystack: &str, needle: &str) -> usize {
        haystack.find(needle).unwrap_or(usize::MAX)
    }

    #[test]
    fn respects_budget_keeps_order_and_language() {
        with_ctx(|ctx| {
            for (texts, budget) in [(en_texts(), 30), (zh_texts(), 25)] {
                let out = summarize(ctx, &texts, 1, budget).unwrap();
                assert!(!out.is_empty());
                assert!(ctx.analyzer.count_tokens(&out) <= budget, "{out}");
                // Output is made of input sentences, in input order.
                let source = &texts[0];
                let sentences = mnemos_text::sentences(&out);
                let mut last = 0;
                for s in sentences {
                    let at = position(source, s);
                    assert!(at != usize::MAX, "{s} not from the input");
                    assert!(at >= last, "order broken at {s}");
                    last = at;
                }
                assert_eq!(has_cjk(&out), has_cjk(source));
            }
        });
    }

    #[test]
    fn prefers_central_sentences_over_greetings() {
        with_ctx(|ctx| {
            let en = summarize(ctx, &en_texts(), 1, 30).unwrap();
            assert!(!en.contains("Hello there"), "{en}");
            assert!(en.contains("robot") || en.contains("startup"), "{en}");
            let zh = summarize(ctx, &zh_texts(), 1, 25).unwrap();
            assert!(!zh.contains("你好"), "{zh}");
            assert!(zh.contains("机器人"), "{zh}");
        });
    }

    #[test]
    fn deterministic() {
        with_ctx(|ctx| {
            let a = summarize(ctx, &en_texts(), 2, 24).unwrap();
            let b = summarize(ctx, &en_texts(), 2, 24).unwrap();
            assert_eq!(a, b);
        });
    }

    #[test]
    fn short_input_is_returned_whole_and_duplicates_dropped() {
        with_ctx(|ctx| {
            let texts = vec!["I like tea.".to_string()];
            assert_eq!(summarize(ctx, &texts, 1, 50).unwrap(), "I like tea.");
            let texts = vec![
                "I like green tea. I like green tea! We went hiking on Sunday.".to_string(),
                "我喜欢绿茶。我喜欢绿茶。".to_string(),
            ];
            let out = summarize(ctx, &texts, 1, 100).unwrap();
            assert_eq!(out.matches("green tea").count(), 1, "{out}");
            assert_eq!(out.matches("我喜欢绿茶").count(), 1, "{out}");
        });
    }

    #[test]
    fn long_sentence_is_cut_at_a_token_boundary() {
        with_ctx(|ctx| {
            let long = "The quick brown fox jumps over the lazy dog again and again while \
                        the farmer watches from the porch of his old wooden house near the river"
                .to_string();
            let out = summarize(ctx, std::slice::from_ref(&long), 1, 8).unwrap();
            assert!(!out.is_empty());
            assert!(ctx.analyzer.count_tokens(&out) <= 8, "{out}");
            assert!(out.starts_with("The quick"), "{out}");
            let zh =
                "我们今天早上一起去了城市另一边的那家非常有名的老字号餐馆吃了很多好吃的点心和面条"
                    .to_string();
            let out = summarize(ctx, std::slice::from_ref(&zh), 1, 8).unwrap();
            assert!(ctx.analyzer.count_tokens(&out) <= 8, "{out}");
            assert!(out.starts_with("我们"), "{out}");
            // A single unsplittable "word" still yields whole characters.
            let word = "字".repeat(40);
            let out = truncate_to_tokens(ctx.analyzer, &word, 5);
            assert!(out.starts_with('字') && ctx.analyzer.count_tokens(&out) <= 5);
            let emoji = "😀".repeat(30);
            let out = truncate_to_tokens(ctx.analyzer, &emoji, 3);
            assert!(ctx.analyzer.count_tokens(&out) <= 3 && out.starts_with('😀'));
        });
    }

    #[test]
    fn dialogue_is_retold_in_the_third_person() {
        with_ctx(|ctx| {
            let texts = vec![
                "Caroline: Hey Mel! I went to a support group yesterday. The support group was \
                 powerful and the group leader was kind.\n\
                 Melanie: That's great. I painted a lake at sunrise with the kids.\n\
                 Caroline: The support group helped me a lot.\n\
                 小明：我周末去爬山了，山上风景很美。"
                    .to_string(),
            ];
            let out = summarize(ctx, &texts, 1, 40).unwrap();
            assert!(ctx.analyzer.count_tokens(&out) <= 40);
            assert!(
                out.contains("Caroline went to a support group yesterday."),
                "{out}"
            );
            assert!(!out.contains("Hey Mel"), "{out}");
            // Every sentence says whose it is: by name, or behind its speaker's label.
            for sentence in mnemos_text::sentences(&out) {
                assert!(
                    ["Caroline", "Melanie", "小明"]
                        .iter()
                        .any(|n| sentence.contains(n)),
                    "{sentence}"
                );
            }
        });
    }

    #[test]
    fn odd_input_is_handled() {
        with_ctx(|ctx| {
            assert!(summarize(ctx, &["   ".to_string()], 1, 10).is_err());
            assert!(summarize(ctx, &[], 1, 10).is_err());
            assert!(summarize(ctx, &["hello".to_string()], 1, 0).is_err());
            let weird = vec!["🙂🙂🙂 ... ??? \u{200b}\u{0301} 10:30 ：：".to_string()];
            let out = summarize(ctx, &weird, 1, 8).unwrap();
            assert!(ctx.analyzer.count_tokens(&out) <= 8);
            assert_eq!(split_speaker("At 10:30 we met"), (None, "At 10:30 we met"));
        });
    }

    /// Sessions of (speaker, text) pairs.
    pub(crate) type Sessions = Vec<Vec<(String, String)>>;

    /// The sessions of the first LoCoMo conversation; `None` when the dataset is not there (the
    /// test is then skipped, and says so).
    pub(crate) fn locomo_sessions() -> Result<Option<Sessions>, MissingData> {
        let Some(path) = mnemos_testkit::data::dataset("locomo/locomo10_dev.json")? else {
            return Ok(None);
        };
        let raw = std::fs::read_to_string(&path).unwrap();
        let sessions = first_conversation(&serde_json::from_str(&raw).unwrap());
        assert!(
            sessions.is_some(),
            "{} holds no conversation",
            path.display()
        );
        Ok(sessions)
    }

    fn first_conversation(data: &serde_json::Value) -> Option<Sessions> {
        let conv = data.get(0)?.get("conversation")?.as_object()?;
        let mut sessions = Vec::new();
        for n in 1.. {
            let Some(turns) = conv.get(&format!("session_{n}")) else {
                break;
            };
            let lines = turns
                .as_array()?
                .iter()
                .filter_map(|t| {
                    Some((
                        t.get("speaker")?.as_str()?.to_string(),
                        t.get("text")?.as_str()?.to_string(),
                    ))
                })
                .collect();
            sessions.push(lines);
        }
        Some(sessions)
    }

    #[test]
    fn summarizes_real_dialogue() -> Result<(), MissingData> {
        let Some(sessions) = locomo_sessions()? else {
            return Ok(());
        };
        with_ctx(|ctx| {
            for session in sessions.iter().take(3) {
                let text = session
                    .iter()
                    .map(|(s, t)| format!("{s}: {t}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let out = summarize(ctx, std::slice::from_ref(&text), 1, 80).unwrap();
                assert!(ctx.analyzer.count_tokens(&out) <= 80);
                let sentences = mnemos_text::sentences(&out);
                assert!(sentences.len() >= 2, "{out}");
                let speakers: Vec<&str> = session.iter().map(|(s, _)| s.as_str()).collect();
                for sentence in sentences {
                    assert!(speakers.iter().any(|s| sentence.contains(s)), "{sentence}");
                    assert!(!sentence.starts_with("I "), "{sentence}");
                }
            }
        });
        Ok(())
    }
}
