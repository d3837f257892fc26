//! Choosing the learned ranker's features and L2 penalty by leave-one-conversation-out
//! cross-validation (`mnemos train ranker --select`), and measuring that choice honestly.
//!
//! A candidate setting is an L2 penalty and a set of kept features (dropped ones get weight 0,
//! so the engine's feature layout does not change). Its score is the held-out recall of the
//! conversations it never saw, `R@10 + r1_weight·R@1`, averaged over the dumps with equal
//! weight, so a large dataset (or one embedder's dump) does not outvote the others. The search
//! tunes L2 on a grid, then drops features greedily (backward elimination) while a removal
//! costs at most `tolerance` of the best score seen, re-tuning L2 after each removal.
//!
//! Choosing by cross-validation is itself fitted to the folds, so its own CV score is
//! optimistic. [`select_ranker`] therefore also runs the whole selection again for each
//! conversation on the other conversations only (nested CV) and scores that conversation with
//! what the inner selection chose: that out-of-fold figure includes the selection's optimism.
//!
//! The folds are conversations, not dump × conversation: two dumps of one dataset (e.g. one
//! per embedder) hold the same questions, and training on one's copy while scoring the
//! other's would leak.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use mnemos_core::retrieval::{LearnedRanker, RANK_FEATURES, RANK_FEATURE_NAMES};
use mnemos_offline::classify::{LogisticModel, TrainOptions};

use crate::ranker::{labels, unscaled, RankerQuestion, RecallAt};
use crate::{train_logistic, TrainError};

/// L2 penalties tried by default.
pub const SELECT_L2_GRID: [f64; 5] = [1e-4, 1e-3, 1e-2, 1e-1, 1.0];

/// Where the derived features read their inputs (indices into [`RANK_FEATURE_NAMES`]).
const LEXICAL: usize = 2;
const DENSE: usize = 4;
const COVERAGE: usize = 11;

/// Training-only features computed from the 19 the engine writes (see [`with_derived`]).
pub const DERIVED_NAMES: [&str; 5] = [
    "z_dense",
    "z_lexical",
    "z_coverage",
    "dense*coverage",
    "lexical*coverage",
];

/// How the selection searches and scores.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectOptions {
    pub l2_grid: Vec<f64>,
    /// A removal is taken while it costs at most this much of the best score seen.
    pub tolerance: f64,
    /// Weight of R@1 beside R@10 in the score.
    pub r1_weight: f64,
    /// Worker threads for the candidate settings of one step.
    pub threads: usize,
    pub max_iterations: usize,
    /// L-BFGS stops when the gradient's max-norm falls below this. Looser than the
    /// classifier's default: only the order of candidates matters here, and the nested
    /// selection runs thousands of fits.
    pub fit_tolerance: f64,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            l2_grid: SELECT_L2_GRID.to_vec(),
            tolerance: 0.002,
            r1_weight: 0.5,
            threads: 1,
            max_iterations: 2000,
            fit_tolerance: 1e-5,
        }
    }
}

/// An L2 penalty and the features kept (by position).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub l2: f64,
    pub keep: Vec<bool>,
}

impl Settings {
    fn all(width: usize, l2: f64) -> Self {
        Settings {
            l2,
            keep: vec![true; width],
        }
    }

    fn without(&self, feature: usize) -> Self {
        let mut keep = self.keep.clone();
        if let Some(k) = keep.get_mut(feature) {
            *k = false;
        }
        Settings { l2: self.l2, keep }
    }

    fn kept(&self) -> usize {
        self.keep.iter().filter(|k| **k).count()
    }

    /// Positions of the dropped features.
    pub fn dropped(&self) -> Vec<usize> {
        (0..self.keep.len()).filter(|i| !self.keep[*i]).collect()
    }
}

/// A setting with its cross-validated score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    pub settings: Settings,
    pub objective: f64,
    /// Held-out recall per dump (`None`: the dump had no questions here).
    pub by_source: Vec<Option<RecallAt>>,
}

/// One question with the dump it came from.
struct Item<'a> {
    source: usize,
    question: &'a RankerQuestion,
}

/// The selection's search context, shared by every step.
struct Search<'o> {
    options: &'o SelectOptions,
    sources: usize,
}

/// What one outer fold of the nested CV chose, on which conversations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OuterFold {
    pub conversation: String,
    /// The conversations the inner selection saw (never `conversation`).
    pub inner_conversations: Vec<String>,
    pub chosen: Scored,
}

/// Figures of one dump.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceSelect {
    pub source: String,
    pub questions: usize,
    pub fused: RecallAt,
    /// Fixed settings fitted on every question and scored on them.
    pub in_sample: RecallAt,
    /// Fixed settings, each conversation held out.
    pub fixed: RecallAt,
    /// What the nested selection chose for each held-out conversation, scored on it.
    pub nested: Option<RecallAt>,
    /// The final selection's own (optimistic) CV figure.
    pub selected_cv: RecallAt,
}

/// The outcome of `--select`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelectReport {
    pub folds: usize,
    pub fixed_l2: f64,
    pub by_source: Vec<SourceSelect>,
    pub outer: Vec<OuterFold>,
    /// The selection on every conversation.
    pub chosen: Scored,
    /// The feature names, in order (the engine's, then any derived ones).
    pub feature_names: Vec<String>,
    /// Fitted on everything with the chosen settings; `None` when it keeps a derived feature
    /// the engine cannot compute.
    pub ranker: Option<LearnedRanker>,
}

/// Select on `sources` (name, questions) and measure: fused order, in-sample and held-out
/// figures of the fixed `fixed_l2` with every feature, the nested selection (when `nested`),
/// and the selection on everything.
pub fn select_ranker(
    sources: &[(String, Vec<RankerQuestion>)],
    fixed_l2: f64,
    options: &SelectOptions,
    nested: bool,
) -> Result<SelectReport, TrainError> {
    let items = items(sources);
    let all: Vec<&Item> = items.iter().collect();
    let folds = conversations(&all).len();
    if folds < 2 {
        return Err(TrainError::invalid(
            "cross-validation by conversation needs at least two conversations",
        ));
    }
    let width = feature_width(&all)?;
    let search = Search {
        options,
        sources: sources.len(),
    };
    let fixed = Settings::all(width, fixed_l2);
    let fixed_cv = search.evaluate(&all, &fixed)?;
    let in_sample = search.in_sample(&all, &fixed)?;
    let outer = if nested {
        search.nested(&all)?
    } else {
        (Vec::new(), Vec::new())
    };
    let chosen = search.select(&all)?;
    let model = fit(&all, &chosen.settings, options)?;
    let ranker = engine_ranker(&model, &chosen.settings, &all);
    let by_source = sources
        .iter()
        .enumerate()
        .map(|(i, (name, questions))| SourceSelect {
            source: name.clone(),
            questions: questions.len(),
            fused: fused_recall(questions),
            in_sample: pick(&in_sample, i),
            fixed: pick(&fixed_cv.by_source, i),
            nested: nested.then(|| pick(&outer.1, i)),
            selected_cv: pick(&chosen.by_source, i),
        })
        .collect();
    Ok(SelectReport {
        folds,
        fixed_l2,
        by_source,
        outer: outer.0,
        chosen,
        feature_names: feature_names(width),
        ranker,
    })
}

impl Search<'_> {
    /// The best setting for `items`: L2 tuned on the grid, then features dropped greedily.
    fn select(&self, items: &[&Item]) -> Result<Scored, TrainError> {
        let width = feature_width(items)?;
        let mut current = self.tune_l2(items, &Settings::all(width, 0.0))?;
        let mut best = current.objective;
        while current.settings.kept() > 1 {
            let removals: Vec<Settings> = (0..width)
                .filter(|f| current.settings.keep[*f])
                .map(|f| current.settings.without(f))
                .collect();
            let Some(removal) = self.best_of(items, &removals)? else {
                break;
            };
            if removal.objective < best - self.options.tolerance {
                break;
            }
            current = self.tune_l2(items, &removal.settings)?;
            best = best.max(current.objective);
        }
        Ok(current)
    }

    /// `settings`' features with the grid's best L2.
    fn tune_l2(&self, items: &[&Item], settings: &Settings) -> Result<Scored, TrainError> {
        let grid: Vec<Settings> = self
            .options
            .l2_grid
            .iter()
            .map(|l2| Settings {
                l2: *l2,
                keep: settings.keep.clone(),
            })
            .collect();
        self.best_of(items, &grid)?
            .ok_or_else(|| TrainError::invalid("the L2 grid is empty"))
    }

    /// The best-scoring of `candidates` (the first on a tie), scored in parallel.
    fn best_of(
        &self,
        items: &[&Item],
        candidates: &[Settings],
    ) -> Result<Option<Scored>, TrainError> {
        let scored = par_map(candidates, self.options.threads, |s| {
            self.evaluate(items, s)
        });
        let mut best: Option<Scored> = None;
        for candidate in scored {
            let candidate = candidate?;
            if best
                .as_ref()
                .is_none_or(|b| candidate.objective > b.objective)
            {
                best = Some(candidate);
            }
        }
        Ok(best)
    }

    /// `settings` scored by leave-one-conversation-out CV on `items`.
    fn evaluate(&self, items: &[&Item], settings: &Settings) -> Result<Scored, TrainError> {
        let mut orders: Vec<Vec<&str>> = Vec::with_capacity(items.len());
        orders.resize_with(items.len(), Vec::new);
        for conversation in conversations(items) {
            let train: Vec<&Item> = items
                .iter()
                .copied()
                .filter(|i| i.question.conversation != conversation)
                .collect();
            let model = fit(&train, settings, self.options)?;
            for (order, item) in orders.iter_mut().zip(items) {
                if item.question.conversation == conversation {
                    *order = reorder(&model, &settings.keep, item.question)?;
                }
            }
        }
        let by_source = self.recall_by_source(items, &orders);
        Ok(Scored {
            settings: settings.clone(),
            objective: self.objective(&by_source),
            by_source,
        })
    }

    /// Fitted on `items` and scored on them.
    fn in_sample(
        &self,
        items: &[&Item],
        settings: &Settings,
    ) -> Result<Vec<Option<RecallAt>>, TrainError> {
        let model = fit(items, settings, self.options)?;
        let orders = items
            .iter()
            .map(|i| reorder(&model, &settings.keep, i.question))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.recall_by_source(items, &orders))
    }

    /// For each conversation, the selection on the others, fitted on them and scored on it:
    /// what each outer fold chose, and the held-out recall per dump.
    fn nested(
        &self,
        items: &[&Item],
    ) -> Result<(Vec<OuterFold>, Vec<Option<RecallAt>>), TrainError> {
        let mut orders: Vec<Vec<&str>> = Vec::with_capacity(items.len());
        orders.resize_with(items.len(), Vec::new);
        let mut outer = Vec::new();
        for conversation in conversations(items) {
            // The inner selection is handed only the other conversations' questions.
            let inner: Vec<&Item> = items
                .iter()
                .copied()
                .filter(|i| i.question.conversation != conversation)
                .collect();
            let chosen = self.select(&inner)?;
            let model = fit(&inner, &chosen.settings, self.options)?;
            for (order, item) in orders.iter_mut().zip(items) {
                if item.question.conversation == conversation {
                    *order = reorder(&model, &chosen.settings.keep, item.question)?;
                }
            }
            outer.push(OuterFold {
                conversation: conversation.to_string(),
                inner_conversations: conversations(&inner)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
                chosen,
            });
        }
        Ok((outer, self.recall_by_source(items, &orders)))
    }

    /// Recall per dump of `orders` (one per item).
    fn recall_by_source(&self, items: &[&Item], orders: &[Vec<&str>]) -> Vec<Option<RecallAt>> {
        (0..self.sources)
            .map(|source| {
                let rankings: Vec<(Vec<&str>, &[String])> = items
                    .iter()
                    .zip(orders)
                    .filter(|(i, _)| i.source == source)
                    .map(|(i, order)| (order.clone(), i.question.gold.as_slice()))
                    .collect();
                (!rankings.is_empty()).then(|| RecallAt::of(&rankings))
            })
            .collect()
    }

    /// `R@10 + r1_weight·R@1`, averaged over the dumps that have questions.
    fn objective(&self, by_source: &[Option<RecallAt>]) -> f64 {
        let scores: Vec<f64> = by_source
            .iter()
            .flatten()
            .map(|r| r.0[2] + self.options.r1_weight * r.0[0])
            .collect();
        scores.iter().sum::<f64>() / scores.len().max(1) as f64
    }
}

fn items(sources: &[(String, Vec<RankerQuestion>)]) -> Vec<Item<'_>> {
    sources
        .iter()
        .enumerate()
        .flat_map(|(source, (_, questions))| {
            questions
                .iter()
                .map(move |question| Item { source, question })
        })
        .collect()
}

/// The distinct conversations of `items`, sorted.
fn conversations<'q>(items: &[&Item<'q>]) -> Vec<&'q str> {
    let mut c: Vec<&str> = items
        .iter()
        .map(|i| i.question.conversation.as_str())
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

fn feature_width(items: &[&Item]) -> Result<usize, TrainError> {
    let width = items
        .iter()
        .flat_map(|i| &i.question.candidates)
        .map(|(_, f)| f.len())
        .next()
        .ok_or_else(|| TrainError::invalid("no candidates to select on"))?;
    let ragged = items
        .iter()
        .flat_map(|i| &i.question.candidates)
        .any(|(_, f)| f.len() != width);
    if ragged {
        return Err(TrainError::invalid("candidates differ in feature width"));
    }
    Ok(width)
}

fn feature_names(width: usize) -> Vec<String> {
    RANK_FEATURE_NAMES
        .iter()
        .chain(&DERIVED_NAMES)
        .take(width)
        .map(|n| n.to_string())
        .collect()
}

fn pick(by_source: &[Option<RecallAt>], source: usize) -> RecallAt {
    by_source.get(source).cloned().flatten().unwrap_or_default()
}

fn fused_recall(questions: &[RankerQuestion]) -> RecallAt {
    let rankings: Vec<(Vec<&str>, &[String])> = questions
        .iter()
        .map(|q| (labels(q), q.gold.as_slice()))
        .collect();
    RecallAt::of(&rankings)
}

/// The kept features of one candidate.
fn project(features: &[f64], keep: &[bool]) -> Vec<f64> {
    features
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(f, _)| *f)
        .collect()
}

fn fit(
    items: &[&Item],
    settings: &Settings,
    options: &SelectOptions,
) -> Result<LogisticModel, TrainError> {
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for item in items {
        for (label, features) in &item.question.candidates {
            rows.push(project(features, &settings.keep));
            targets.push(item.question.gold.contains(label));
        }
    }
    let train = TrainOptions {
        l2: settings.l2,
        max_iterations: options.max_iterations,
        tolerance: options.fit_tolerance,
        ..TrainOptions::default()
    };
    train_logistic(&rows, &targets, 0, &train)
}

/// The question's candidate labels ordered by the model, best first (ties keep fused order).
fn reorder<'q>(
    model: &LogisticModel,
    keep: &[bool],
    q: &'q RankerQuestion,
) -> Result<Vec<&'q str>, TrainError> {
    let mut scored = Vec::with_capacity(q.candidates.len());
    for (label, features) in &q.candidates {
        let p = model
            .probability(&project(features, keep))
            .map_err(TrainError::Weights)?;
        scored.push((label.as_str(), p));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(scored.into_iter().map(|(l, _)| l).collect())
}

/// The fit as the engine reads it: 19 weights, dropped features at 0. `None` when it keeps a
/// derived feature.
fn engine_ranker(
    model: &LogisticModel,
    settings: &Settings,
    items: &[&Item],
) -> Option<LearnedRanker> {
    if settings.keep.iter().skip(RANK_FEATURES).any(|k| *k) {
        return None;
    }
    let fitted = unscaled(model, 0);
    let mut kept = fitted.weights.into_iter();
    let weights = settings
        .keep
        .iter()
        .take(RANK_FEATURES)
        .map(|k| if *k { kept.next().unwrap_or(0.0) } else { 0.0 })
        .collect();
    let depth = items
        .iter()
        .map(|i| i.question.candidates.len())
        .max()
        .unwrap_or(0);
    Some(LearnedRanker {
        depth,
        weights,
        bias: fitted.bias,
    })
}

/// The questions with [`DERIVED_NAMES`] appended to each candidate's features: `dense`,
/// `lexical` and `coverage` standardized within the question's candidates (how a candidate
/// stands against its rivals rather than against every query), and two products.
pub fn with_derived(questions: &[RankerQuestion]) -> Vec<RankerQuestion> {
    questions
        .iter()
        .map(|q| {
            let z = [DENSE, LEXICAL, COVERAGE].map(|f| standardizer(q, f));
            let candidates = q
                .candidates
                .iter()
                .map(|(label, f)| {
                    let value = |i: usize| f.get(i).copied().unwrap_or(0.0);
                    let mut extended = f.clone();
                    for (i, (mean, std)) in [DENSE, LEXICAL, COVERAGE].into_iter().zip(z) {
                        extended.push((value(i) - mean) / std);
                    }
                    extended.push(value(DENSE) * value(COVERAGE));
                    extended.push(value(LEXICAL) * value(COVERAGE));
                    (label.clone(), extended)
                })
                .collect();
            RankerQuestion {
                candidates,
                ..q.clone()
            }
        })
        .collect()
}

/// Mean and std (1 when constant) of one feature over a question's candidates.
fn standardizer(q: &RankerQuestion, feature: usize) -> (f64, f64) {
    let values: Vec<f64> = q
        .candidates
        .iter()
        .map(|(_, f)| f.get(feature).copied().unwrap_or(0.0))
        .collect();
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (mean, if std > 1e-9 { std } else { 1.0 })
}

/// `f` over `items` on up to `threads` threads, results in order.
fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(items.len()) {
            scope.spawn(|| loop {
                // Each thread takes the next item nobody has taken yet.
                let index = next.fetch_add(1, Ordering::Relaxed);
                let (Some(item), Some(slot)) = (items.get(index), slots.get(index)) else {
                    break;
                };
                let result = f(item);
                if let Ok(mut slot) = slot.lock() {
                    *slot = Some(result);
                }
            });
        }
    });
    // A slot is empty only if its thread panicked, and the scope re-raises that panic.
    slots
        .into_iter()
        .filter_map(|slot| slot.into_inner().ok().flatten())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranker::FUSED_RANK_FEATURE;

    const REAL: usize = 2;
    const NOISE: usize = 5;

    /// A deterministic value in [0, 1) from two integers.
    fn noise(a: usize, b: usize) -> f64 {
        let h =
            (a as u64 * 2_654_435_761 + b as u64 * 40_503 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Ten candidates, the gold one somewhere in the middle of the fused order; `REAL` marks
    /// it (with some overlap), `NOISE` is noise. With `poisoned`, `NOISE` marks it instead.
    fn question(conversation: &str, seed: usize, poisoned: bool) -> RankerQuestion {
        let gold = 2 + seed % 7;
        let candidates = (0..10)
            .map(|i| {
                let mut f = vec![0.0; RANK_FEATURES];
                f[FUSED_RANK_FEATURE] = 1.0 / (1.0 + i as f64);
                let marker = if i == gold { 0.8 } else { 0.6 * noise(seed, i) };
                let random = noise(seed + 1000, i);
                (f[REAL], f[NOISE]) = if poisoned {
                    (random, marker)
                } else {
                    (marker, random)
                };
                (format!("L{i}"), f)
            })
            .collect();
        RankerQuestion {
            group: conversation.to_string(),
            conversation: conversation.to_string(),
            gold: vec![format!("L{gold}")],
            candidates,
        }
    }

    fn toy(poison: Option<&str>) -> Vec<RankerQuestion> {
        (0..15)
            .map(|i| {
                let c = format!("c{}", i % 3);
                question(&c, i, poison == Some(c.as_str()))
            })
            .collect()
    }

    fn options() -> SelectOptions {
        SelectOptions {
            l2_grid: vec![1e-3, 1e-1],
            threads: 2,
            ..SelectOptions::default()
        }
    }

    #[test]
    fn a_noise_feature_is_dropped_and_the_real_one_kept() {
        let sources = vec![("toy".to_string(), toy(None))];
        let report = select_ranker(&sources, 1e-3, &options(), false).unwrap();
        let keep = &report.chosen.settings.keep;
        assert!(keep[REAL], "{keep:?}");
        assert!(!keep[NOISE], "{keep:?}");
        assert_eq!(report.by_source[0].selected_cv.0[0], 1.0);
        let ranker = report.ranker.unwrap();
        assert_eq!(ranker.weights.len(), RANK_FEATURES);
        assert_eq!(ranker.weights[NOISE], 0.0);
        assert!(ranker.weights[REAL] > 0.0);
        assert!(ranker.validate().is_ok());
    }

    #[test]
    fn nested_selection_never_sees_the_held_out_conversation() {
        let clean = vec![("toy".to_string(), toy(None))];
        // In c0 the noise feature marks the evidence and the real one is noise: a selection
        // that saw c0 would keep the noise feature.
        let poisoned = vec![("toy".to_string(), toy(Some("c0")))];
        let clean = select_ranker(&clean, 1e-3, &options(), true).unwrap();
        let poisoned = select_ranker(&poisoned, 1e-3, &options(), true).unwrap();
        assert_eq!(poisoned.outer.len(), 3);
        for fold in &poisoned.outer {
            assert!(!fold.inner_conversations.contains(&fold.conversation));
            assert_eq!(fold.inner_conversations.len(), 2);
        }
        assert_eq!(clean.outer[0].conversation, "c0");
        assert_eq!(poisoned.outer[0].chosen, clean.outer[0].chosen);
        // Held out, c0's flipped features cost the nested figure what they must.
        let nested = |r: &SelectReport| r.by_source[0].nested.clone().unwrap().0[0];
        assert!(nested(&poisoned) < nested(&clean));
    }

    #[test]
    fn a_dump_without_questions_counts_for_nothing() {
        let one = vec![("toy".to_string(), toy(None))];
        let two = vec![
            ("toy".to_string(), toy(None)),
            ("gated".to_string(), vec![]),
        ];
        let one = select_ranker(&one, 1e-3, &options(), false).unwrap();
        let two = select_ranker(&two, 1e-3, &options(), false).unwrap();
        assert_eq!(one.chosen.objective, two.chosen.objective);
        assert_eq!(two.by_source[1].questions, 0);
        assert_eq!(two.chosen.by_source[1], None);
    }

    #[test]
    fn derived_features_extend_the_candidates() {
        let questions = with_derived(&toy(None));
        let width = RANK_FEATURES + DERIVED_NAMES.len();
        assert!(questions
            .iter()
            .flat_map(|q| &q.candidates)
            .all(|(_, f)| f.len() == width));
        // Standardized within the question: the z-scores sum to zero.
        let z_sum: f64 = questions[0]
            .candidates
            .iter()
            .map(|(_, f)| f[RANK_FEATURES + 1])
            .sum();
        assert!(z_sum.abs() < 1e-9);
        let sources = vec![("toy".to_string(), questions)];
        let report = select_ranker(&sources, 1e-3, &options(), false).unwrap();
        assert_eq!(report.feature_names.len(), width);
        let keeps_derived = report.chosen.settings.keep[RANK_FEATURES..].contains(&true);
        assert_eq!(report.ranker.is_none(), keeps_derived);
    }

    #[test]
    fn par_map_keeps_the_order() {
        let items: Vec<usize> = (0..50).collect();
        assert_eq!(
            par_map(&items, 3, |i| i * 2),
            items.iter().map(|i| i * 2).collect::<Vec<_>>()
        );
    }
}
