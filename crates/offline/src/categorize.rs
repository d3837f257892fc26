//! Session topics by clustering plus keyword labels (M⁴ categorize), EN + ZH.
//!
//! 1. Every non-blank line is split into sentences (its speaker label set apart) and the
//!    sentences are embedded once; a line's vector is the mean of its sentences' vectors, weighted
//!    by how much content each has, so that topics rather than speakers or greetings group. The
//!    same sentence vectors then feed the topic summaries. Sessions longer than [`MAX_UNITS`]
//!    lines are clustered in blocks of consecutive lines.
//! 2. Each vector is smoothed with its neighbours (weight [`NEIGHBOR_WEIGHT`]): a dialogue's topic
//!    runs over several turns, and short replies ("Wow, nice!") belong to what they answer.
//! 3. Average-linkage agglomerative clustering on cosine builds one hierarchy; every cut with
//!    k = 2..=[`MAX_TOPICS`] clusters whose clusters all have at least [`MIN_TOPIC_LINES`] lines
//!    is scored by its silhouette, and the best cut is kept when its silhouette reaches
//!    [`MIN_SILHOUETTE`]; otherwise the session is one topic. Sessions with fewer than
//!    [`MIN_LINES_TO_SPLIT`] lines are one topic. Ties go to the earlier pair / the smaller k, so
//!    the output is deterministic.
//! 4. A topic's label is its top 1–3 terms by TF-IDF within the session (lines as documents;
//!    stopwords, chat fillers, speaker names, numbers and quantities skipped; words shown as
//!    written), a term joining the first when it scores at least [`LABEL_RELATIVE_SCORE`] of it;
//!    its summary is the extractive summary of its lines within [`SUMMARY_TOKENS`] tokens.
//!    Topics are ordered by their first line.

use std::collections::HashMap;

use mnemos_core::memory_model::{CategorySummary, Line};
use mnemos_core::retrieval::dense::dot;
use mnemos_core::{ModelError, ModelResult};
use mnemos_text::TokenKind;

use crate::conflict::cjk_quantity;
use crate::summarize::{centroid, is_chinese, is_filler, Prepared};
use crate::Ctx;

/// Fewest lines (clustering units) a topic may have.
pub const MIN_TOPIC_LINES: usize = 3;
/// Sessions shorter than this are one topic.
pub const MIN_LINES_TO_SPLIT: usize = 2 * MIN_TOPIC_LINES;
/// Most topics one session is split into.
pub const MAX_TOPICS: usize = 6;
/// Silhouette a split needs to beat "one topic".
pub const MIN_SILHOUETTE: f32 = 0.1;
/// Weight of each neighbouring line in a line's smoothed vector.
pub const NEIGHBOR_WEIGHT: f32 = 0.5;
/// Most units clustered; longer sessions are grouped into blocks of consecutive lines.
pub const MAX_UNITS: usize = 240;
/// Token budget of each topic summary.
pub const SUMMARY_TOKENS: usize = 60;
/// A further label term must score at least this fraction of the best term.
pub const LABEL_RELATIVE_SCORE: f32 = 0.5;
/// Most terms in a label.
pub const MAX_LABEL_TERMS: usize = 3;

/// Group a session's lines into topics, each with a label, a summary and its line indexes.
pub fn categorize(ctx: &Ctx, session: &[Line]) -> ModelResult<Vec<CategorySummary>> {
    let lines: Vec<usize> = session
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.text.trim().is_empty())
        .map(|(i, _)| i)
        .collect();
    if lines.is_empty() {
        return Err(ModelError::invalid("categorize: the session has no text"));
    }
    let rendered: Vec<String> = lines
        .iter()
        .filter_map(|&i| session.get(i).map(Line::render))
        .collect();
    let prepared = Prepared::new(ctx, &rendered)?;
    let groups = if lines.len() < MIN_LINES_TO_SPLIT {
        vec![(0..lines.len()).collect()]
    } else {
        let vectors: Vec<Vec<f32>> = prepared
            .text_vectors(ctx.analyzer, rendered.len())
            .into_iter()
            .map(|v| v.unwrap_or_else(|| vec![0.0; ctx.embedder.dimension()]))
            .collect();
        cluster(&vectors)
    };
    let chinese = is_chinese(
        &lines
            .iter()
            .filter_map(|&i| session.get(i).map(|l| l.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let labeler = Labeler::new(ctx, session, &lines);
    let mut out = Vec::with_capacity(groups.len());
    for members in groups {
        let summary = prepared.summarize_sources(ctx, &members, SUMMARY_TOKENS)?;
        let members: Vec<usize> = members
            .iter()
            .filter_map(|&k| lines.get(k).copied())
            .collect();
        out.push(CategorySummary {
            category: labeler.label(&members, chinese),
            summary,
            lines: members,
        });
    }
    Ok(out)
}

/// Cluster line vectors; returns groups of positions, each sorted, ordered by first position.
fn cluster(vectors: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let n = vectors.len();
    // Blocks of consecutive lines when the session is long.
    let block = n.div_ceil(MAX_UNITS).max(1);
    let units: Vec<Vec<usize>> = (0..n)
        .collect::<Vec<_>>()
        .chunks(block)
        .map(<[usize]>::to_vec)
        .collect();
    let unit_vectors: Vec<Vec<f32>> = units
        .iter()
        .map(|u| {
            let members: Vec<Vec<f32>> =
                u.iter().filter_map(|&i| vectors.get(i).cloned()).collect();
            let dim = members.first().map_or(0, Vec::len);
            centroid(&members).unwrap_or_else(|| vec![0.0; dim])
        })
        .collect();
    let smoothed = smooth(&unit_vectors);
    let assignment = best_cut(&smoothed);
    let k = assignment.iter().copied().max().map_or(1, |m| m + 1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (unit, &c) in units.iter().zip(&assignment) {
        if let Some(group) = groups.get_mut(c) {
            group.extend(unit.iter().copied());
        }
    }
    groups.retain(|g| !g.is_empty());
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort_by_key(|g| g.first().copied());
    groups
}

/// Each vector plus `NEIGHBOR_WEIGHT` times its neighbours, normalized.
fn smooth(vectors: &[Vec<f32>]) -> Vec<Vec<f32>> {
    (0..vectors.len())
        .map(|i| {
            let Some(own) = vectors.get(i) else {
                return Vec::new();
            };
            let mut v = own.clone();
            for j in [i.wrapping_sub(1), i + 1] {
                if let Some(n) = vectors.get(j) {
                    for (a, b) in v.iter_mut().zip(n) {
                        *a += NEIGHBOR_WEIGHT * b;
                    }
                }
            }
            mnemos_core::embed::normalize(&mut v);
            v
        })
        .collect()
}

/// Cluster index per vector for the best silhouette cut of an average-linkage hierarchy, or all
/// zeros when no cut is good enough.
fn best_cut(vectors: &[Vec<f32>]) -> Vec<usize> {
    let n = vectors.len();
    let max_k = MAX_TOPICS.min(n / MIN_TOPIC_LINES);
    if max_k < 2 {
        return vec![0; n];
    }
    let sim: Vec<Vec<f32>> = vectors
        .iter()
        .map(|a| vectors.iter().map(|b| dot(a, b)).collect())
        .collect();
    let mut best: Option<(f32, Vec<usize>)> = None;
    for (k, assignment) in hierarchy_cuts(&sim, max_k) {
        let mut sizes = vec![0usize; k];
        for &c in &assignment {
            if let Some(x) = sizes.get_mut(c) {
                *x += 1;
            }
        }
        if k < 2 || sizes.iter().any(|&s| s < MIN_TOPIC_LINES) {
            continue;
        }
        let s = silhouette(&sim, &assignment, k);
        if best.as_ref().is_none_or(|(b, _)| s > *b + 1e-6) {
            best = Some((s, assignment));
        }
    }
    match best {
        Some((s, assignment)) if s >= MIN_SILHOUETTE => assignment,
        _ => vec![0; n],
    }
}

/// Average-linkage agglomerative clustering; returns the assignment at every cluster count
/// from `max_k` down to 1, smallest k last. Cluster ids are renumbered by first member.
fn hierarchy_cuts(sim: &[Vec<f32>], max_k: usize) -> Vec<(usize, Vec<usize>)> {
    let n = sim.len();
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut alive: Vec<bool> = vec![true; n];
    let mut link: Vec<Vec<f32>> = sim.to_vec();
    let mut cuts = Vec::new();
    let mut count = n;
    while count > 1 {
        if count <= max_k {
            cuts.push((count, assignment_of(&members, &alive, n)));
        }
        // The most similar pair of live clusters; the first pair on ties.
        let mut pair: Option<(usize, usize, f32)> = None;
        for a in 0..n {
            if !alive.get(a).copied().unwrap_or(false) {
                continue;
            }
            for b in (a + 1)..n {
                if !alive.get(b).copied().unwrap_or(false) {
                    continue;
                }
                let s = link
                    .get(a)
                    .and_then(|r| r.get(b))
                    .copied()
                    .unwrap_or(f32::MIN);
                if pair.is_none_or(|(_, _, best)| s > best) {
                    pair = Some((a, b, s));
                }
            }
        }
        let Some((a, b, _)) = pair else {
            break;
        };
        let (size_a, size_b) = (
            members.get(a).map_or(0, Vec::len) as f32,
            members.get(b).map_or(0, Vec::len) as f32,
        );
        // Lance–Williams update for average linkage.
        for c in 0..n {
            if c == a || c == b || !alive.get(c).copied().unwrap_or(false) {
                continue;
            }
            let sa = link.get(a).and_then(|r| r.get(c)).copied().unwrap_or(0.0);
            let sb = link.get(b).and_then(|r| r.get(c)).copied().unwrap_or(0.0);
            let merged = (size_a * sa + size_b * sb) / (size_a + size_b).max(1.0);
            if let Some(x) = link.get_mut(a).and_then(|r| r.get_mut(c)) {
                *x = merged;
            }
            if let Some(x) = link.get_mut(c).and_then(|r| r.get_mut(a)) {
                *x = merged;
            }
        }
        let moved = members.get_mut(b).map(std::mem::take).unwrap_or_default();
        if let Some(m) = members.get_mut(a) {
            m.extend(moved);
        }
        if let Some(x) = alive.get_mut(b) {
            *x = false;
        }
        count -= 1;
    }
    cuts.push((1, vec![0; n]));
    cuts
}

/// Cluster id per item, clusters numbered in order of their first item.
fn assignment_of(members: &[Vec<usize>], alive: &[bool], n: usize) -> Vec<usize> {
    let mut clusters: Vec<&Vec<usize>> = members
        .iter()
        .zip(alive)
        .filter(|(_, &a)| a)
        .map(|(m, _)| m)
        .collect();
    clusters.sort_by_key(|m| m.iter().min().copied());
    let mut out = vec![0; n];
    for (id, m) in clusters.iter().enumerate() {
        for &i in m.iter() {
            if let Some(x) = out.get_mut(i) {
                *x = id;
            }
        }
    }
    out
}

/// Mean silhouette with distance 1 − cosine; items alone in their cluster count 0.
fn silhouette(sim: &[Vec<f32>], assignment: &[usize], k: usize) -> f32 {
    let n = assignment.len();
    if n == 0 {
        return 0.0;
    }
    let mut sizes = vec![0usize; k];
    for &c in assignment {
        if let Some(s) = sizes.get_mut(c) {
            *s += 1;
        }
    }
    let mut total = 0.0f32;
    for i in 0..n {
        let own = assignment.get(i).copied().unwrap_or(0);
        if sizes.get(own).copied().unwrap_or(0) <= 1 {
            continue;
        }
        let mut dist = vec![0.0f32; k];
        for (j, &c) in assignment.iter().enumerate() {
            if j != i {
                let d = 1.0 - sim.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0.0);
                if let Some(x) = dist.get_mut(c) {
                    *x += d;
                }
            }
        }
        let a = dist.get(own).copied().unwrap_or(0.0)
            / (sizes.get(own).copied().unwrap_or(1) - 1).max(1) as f32;
        let b = (0..k)
            .filter(|&c| c != own && sizes.get(c).copied().unwrap_or(0) > 0)
            .map(|c| {
                dist.get(c).copied().unwrap_or(0.0)
                    / sizes.get(c).copied().unwrap_or(1).max(1) as f32
            })
            .fold(f32::INFINITY, f32::min);
        if b.is_finite() {
            let denom = a.max(b);
            if denom > 0.0 {
                total += (b - a) / denom;
            }
        }
    }
    total / n as f32
}

/// TF-IDF over the session's lines, with each term's most common written form.
struct Labeler {
    /// Per line index: (term, first position in the session) occurrences.
    terms: HashMap<usize, Vec<String>>,
    df: HashMap<String, usize>,
    /// Term → (surface form, first position in the session).
    surface: HashMap<String, (String, usize)>,
    lines: usize,
}

impl Labeler {
    fn new(ctx: &Ctx, session: &[Line], lines: &[usize]) -> Self {
        let mut terms = HashMap::new();
        let mut df: HashMap<String, usize> = HashMap::new();
        let mut forms: HashMap<String, HashMap<String, usize>> = HashMap::new();
        let mut first: HashMap<String, usize> = HashMap::new();
        let mut position = 0usize;
        let names: std::collections::HashSet<String> = lines
            .iter()
            .filter_map(|&i| session.get(i)?.speaker.as_deref())
            .flat_map(|s| ctx.analyzer.terms(s))
            .collect();
        for &i in lines {
            let Some(line) = session.get(i) else {
                continue;
            };
            let mut line_terms = Vec::new();
            for token in ctx.analyzer.tokens(&line.text) {
                let useful = matches!(token.kind, TokenKind::Word | TokenKind::Cjk)
                    && !ctx.analyzer.is_stopword(&token.term)
                    && cjk_quantity(&token.term).is_none()
                    && !is_filler(&token.term)
                    && !names.contains(&token.term)
                    // One-letter and two-letter English words are rarely topics ("tv" aside).
                    && token.term.chars().count() > if token.term.is_ascii() { 2 } else { 0 };
                if !useful {
                    continue;
                }
                let written = line
                    .text
                    .get(token.start..token.end)
                    .map(str::to_lowercase)
                    .unwrap_or_else(|| token.term.clone());
                *forms
                    .entry(token.term.clone())
                    .or_default()
                    .entry(written)
                    .or_default() += 1;
                first.entry(token.term.clone()).or_insert(position);
                position += 1;
                line_terms.push(token.term);
            }
            let mut distinct = line_terms.clone();
            distinct.sort_unstable();
            distinct.dedup();
            for t in distinct {
                *df.entry(t).or_default() += 1;
            }
            terms.insert(i, line_terms);
        }
        let surface = forms
            .into_iter()
            .filter_map(|(term, counts)| {
                // Most common written form; the shortest, then alphabetical, on ties.
                let form = counts
                    .into_iter()
                    .max_by(|a, b| {
                        a.1.cmp(&b.1)
                            .then(b.0.len().cmp(&a.0.len()))
                            .then(b.0.cmp(&a.0))
                    })
                    .map(|(f, _)| f)?;
                let at = first.get(&term).copied().unwrap_or(usize::MAX);
                Some((term, (form, at)))
            })
            .collect();
        Labeler {
            terms,
            df,
            surface,
            lines: lines.len(),
        }
    }

    fn label(&self, members: &[usize], chinese: bool) -> String {
        let mut tf: HashMap<&str, usize> = HashMap::new();
        for i in members {
            for t in self.terms.get(i).into_iter().flatten() {
                *tf.entry(t.as_str()).or_default() += 1;
            }
        }
        let n = self.lines.max(1) as f32;
        let mut scored: Vec<(&str, f32, usize)> = tf
            .into_iter()
            .map(|(t, count)| {
                let df = self.df.get(t).copied().unwrap_or(1).max(1) as f32;
                let first = self.surface.get(t).map_or(usize::MAX, |s| s.1);
                (t, count as f32 * (1.0 + n / df).ln(), first)
            })
            .collect();
        // Ties: words of several characters first (a lone Chinese character is often a verb),
        // then the earliest in the session.
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then((b.0.chars().count() > 1).cmp(&(a.0.chars().count() > 1)))
                .then(a.2.cmp(&b.2))
        });
        let top = scored.first().map_or(0.0, |s| s.1);
        let words: Vec<&str> = scored
            .iter()
            .take(MAX_LABEL_TERMS)
            .filter(|s| s.1 >= LABEL_RELATIVE_SCORE * top)
            .filter_map(|s| self.surface.get(s.0).map(|f| f.0.as_str()))
            .collect();
        match (words.is_empty(), chinese) {
            (true, true) => "闲聊".to_string(),
            (true, false) => "chat".to_string(),
            (false, true) => words.join("、"),
            (false, false) => words.join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::tests::{locomo_sessions, with_ctx};
    use mnemos_core::Role;
    use mnemos_testkit::data::MissingData;

    fn session(lines: &[(&str, &str)]) -> Vec<Line> {
        lines
            .iter()
            .enumerate()
            .map(|(i, (speaker, text))| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                Line::new(role, Some(speaker), *text)
            })
            .collect()
    }

    fn en_session() -> Vec<Line> {
        session(&[
            (
                "Anna",
                "I booked a trip to Japan, the flight to Tokyo leaves in May.",
            ),
            (
                "Ben",
                "A trip to Japan sounds great! How long is the flight to Tokyo?",
            ),
            (
                "Anna",
                "The flight to Tokyo is twelve hours, then a train trip to Kyoto.",
            ),
            ("Ben", "Kyoto by train is lovely, enjoy the trip to Japan."),
            (
                "Anna",
                "Work has been stressful, my manager wants the report by Friday.",
            ),
            (
                "Ben",
                "Is your manager still asking for the weekly report at work?",
            ),
            (
                "Anna",
                "Yes, my manager and the report deadline make work hard.",
            ),
            (
                "Ben",
                "Maybe talk to your manager about the report workload at work.",
            ),
        ])
    }

    fn zh_session() -> Vec<Line> {
        session(&[
            ("小明", "我下个月去日本旅行，先飞东京。"),
            ("小红", "日本旅行真好！东京的机票贵吗？"),
            ("小明", "东京的机票不贵，旅行还要去京都。"),
            ("小红", "京都很美，祝你日本旅行愉快。"),
            ("小明", "最近工作压力很大，老板催我交报告。"),
            ("小红", "老板又催报告了？工作太辛苦了。"),
            ("小明", "是啊，报告周五要交给老板，工作好累。"),
            ("小红", "跟老板聊聊报告的工作量吧。"),
        ])
    }

    #[test]
    fn splits_two_topics_with_labels_and_summaries() {
        with_ctx(|ctx| {
            for (lines, first_word, second_word) in [
                (en_session(), "trip", "manager"),
                (zh_session(), "旅行", "报告"),
            ] {
                let cats = categorize(ctx, &lines).unwrap();
                assert_eq!(cats.len(), 2, "{cats:#?}");
                assert_eq!(cats[0].lines, vec![0, 1, 2, 3]);
                assert_eq!(cats[1].lines, vec![4, 5, 6, 7]);
                assert!(cats[0].category.contains(first_word), "{cats:#?}");
                assert!(cats[1].category.contains(second_word), "{cats:#?}");
                for c in &cats {
                    assert!(!c.summary.is_empty());
                    assert!(ctx.analyzer.count_tokens(&c.summary) <= SUMMARY_TOKENS);
                    let terms = c.category.split([',', '、']).count();
                    assert!((1..=MAX_LABEL_TERMS).contains(&terms));
                }
            }
        });
    }

    #[test]
    fn short_sessions_are_one_topic_and_output_is_deterministic() {
        with_ctx(|ctx| {
            let lines = session(&[
                ("A", "I adopted a puppy."),
                ("B", "What is the puppy's name?"),
            ]);
            let cats = categorize(ctx, &lines).unwrap();
            assert_eq!(cats.len(), 1);
            assert_eq!(cats[0].lines, vec![0, 1]);
            assert!(cats[0].category.contains("pupp"), "{cats:#?}");
            let zh = session(&[("甲", "我养了一只小狗。")]);
            let cats = categorize(ctx, &zh).unwrap();
            assert_eq!(cats.len(), 1);
            assert!(cats[0].category.contains("小狗"), "{cats:#?}");
            assert_eq!(
                categorize(ctx, &en_session()).unwrap(),
                categorize(ctx, &en_session()).unwrap()
            );
        });
    }

    #[test]
    fn odd_sessions() {
        with_ctx(|ctx| {
            assert!(categorize(ctx, &[]).is_err());
            let blank = session(&[("A", "  "), ("B", "")]);
            assert!(categorize(ctx, &blank).is_err());
            let odd = session(&[
                ("A", "🙂"),
                ("B", "   "),
                ("A", "?!"),
                ("B", "ok"),
                ("A", "…"),
            ]);
            let cats = categorize(ctx, &odd).unwrap();
            let covered: Vec<usize> = cats.iter().flat_map(|c| c.lines.clone()).collect();
            assert_eq!(covered.len(), 4);
            assert!(!covered.contains(&1));
        });
    }

    #[test]
    fn real_session_covers_every_line_once() -> Result<(), MissingData> {
        let Some(sessions) = locomo_sessions()? else {
            return Ok(());
        };
        with_ctx(|ctx| {
            let Some(first) = sessions.first() else {
                return;
            };
            let lines: Vec<Line> = first
                .iter()
                .map(|(s, t)| Line::new(Role::User, Some(s), t.clone()))
                .collect();
            let cats = categorize(ctx, &lines).unwrap();
            let mut covered: Vec<usize> = cats.iter().flat_map(|c| c.lines.clone()).collect();
            covered.sort_unstable();
            assert_eq!(covered, (0..lines.len()).collect::<Vec<_>>());
            assert!(cats.len() <= MAX_TOPICS);
        });
        Ok(())
    }
}
