//! Fitting the learned ranker (`mnemos_core::retrieval::LearnedRanker`) on the candidates
//! `mnemos eval retrieval --dump` writes: per question, its gold labels and the features of the
//! best fused candidates. A logistic regression learns which candidates are gold; it is judged
//! by the recall it gives when it re-orders questions of a conversation it never saw (one fold
//! per conversation, over every dump), beside the fused order of the same candidates.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::{LearnedRanker, RANK_FEATURES};
use mnemos_eval::metrics::Ranking;
use mnemos_offline::classify::{LogisticModel, TrainOptions};

use crate::{train_logistic, TrainError};

/// Where the fused order sits among the features (1 / (1 + position)).
pub(crate) const FUSED_RANK_FEATURE: usize = 1;

/// Recall cut-offs reported.
pub const RANKER_KS: [usize; 3] = [1, 5, 10];

/// One question of a dump: the candidates the ranker saw, in fused order.
#[derive(Clone, Debug, PartialEq)]
pub struct RankerQuestion {
    /// The dump it came from and its conversation: the cross-validation fold.
    pub group: String,
    /// The conversation alone: the fold of `--select`, which holds a conversation out of
    /// every dump at once (two dumps of one dataset share their conversations).
    pub conversation: String,
    pub gold: Vec<String>,
    /// (label, features), best fused first.
    pub candidates: Vec<(String, Vec<f64>)>,
}

/// One line of an `eval retrieval --dump` file, as far as training needs it.
#[derive(Deserialize)]
struct DumpLine {
    conversation: String,
    gold: Vec<String>,
    #[serde(default)]
    ranker_features: BTreeMap<String, Vec<(String, Vec<f64>)>>,
}

/// The questions of one dump file for one retriever row (e.g. "hybrid"), skipping questions
/// without gold or without candidates; a dump without any is an error.
pub fn read_dump(path: &Path, retriever: &str) -> Result<Vec<RankerQuestion>, TrainError> {
    let dump = read_dump_lines(path, retriever)?;
    if dump.questions.is_empty() {
        return Err(TrainError::invalid(format!(
            "{}: no question with gold labels and ranker candidates (dump with `eval retrieval --dump` and a ranker depth > 0)",
            path.display()
        )));
    }
    Ok(dump.questions)
}

/// What one dump holds to train on.
#[derive(Clone, Debug, PartialEq)]
pub struct Dump {
    pub questions: Vec<RankerQuestion>,
    /// Lines skipped for lacking gold labels or ranker candidates (a dataset the ranker is
    /// gated off for has no candidates on any line).
    pub skipped: usize,
}

/// Like [`read_dump`], but a dump without candidates is not an error: it holds no rows.
pub fn read_dump_lines(path: &Path, retriever: &str) -> Result<Dump, TrainError> {
    let text = std::fs::read_to_string(path).map_err(|source| TrainError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let source = path.display().to_string();
    let mut questions = Vec::new();
    let mut skipped = 0;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed: DumpLine =
            serde_json::from_str(line).map_err(|error| TrainError::DumpLine {
                path: source.clone(),
                line: i + 1,
                source: error,
            })?;
        let Some(mut candidates) = parsed.ranker_features.get(retriever).cloned() else {
            return Err(TrainError::invalid(format!(
                "{source} line {}: no ranker features for '{retriever}' (dump it with `eval retrieval --dump` and a ranker depth > 0)",
                i + 1
            )));
        };
        if parsed.gold.is_empty() || candidates.is_empty() {
            skipped += 1;
            continue;
        }
        if candidates.iter().any(|(_, f)| f.len() != RANK_FEATURES) {
            return Err(TrainError::invalid(format!(
                "{source} line {}: candidates need {RANK_FEATURES} features each",
                i + 1
            )));
        }
        // The dump lists the candidates as the shipped ranker ordered them; train on the order
        // fusion gave them.
        candidates.sort_by(|a, b| b.1[FUSED_RANK_FEATURE].total_cmp(&a.1[FUSED_RANK_FEATURE]));
        questions.push(RankerQuestion {
            group: format!("{source}#{}", parsed.conversation),
            conversation: parsed.conversation,
            gold: parsed.gold,
            candidates,
        });
    }
    Ok(Dump { questions, skipped })
}

/// Mean recall at each of [`RANKER_KS`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RecallAt(pub [f64; 3]);

impl RecallAt {
    pub(crate) fn of(rankings: &[(Vec<&str>, &[String])]) -> Self {
        let mut sums = [0.0; 3];
        for (ranked, gold) in rankings {
            // The same recall `eval retrieval` reports.
            let ranking = Ranking::new(ranked, gold);
            for (sum, k) in sums.iter_mut().zip(RANKER_KS) {
                *sum += ranking.recall_at(k);
            }
        }
        let n = rankings.len().max(1) as f64;
        RecallAt(sums.map(|s| s / n))
    }
}

/// Held-out figures of one dump.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceFit {
    pub source: String,
    pub questions: usize,
    /// The candidates in fused order.
    pub fused: RecallAt,
    /// Re-ordered by a ranker fitted without the question's conversation.
    pub learned: RecallAt,
}

/// A fitted ranker and how it did held out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankerFit {
    pub l2: f64,
    pub folds: usize,
    pub by_source: Vec<SourceFit>,
    /// Fitted on every question of every dump.
    pub ranker: LearnedRanker,
}

/// Fit on `sources` (name, questions): cross-validated by group, then on everything.
pub fn train_ranker(
    sources: &[(String, Vec<RankerQuestion>)],
    l2: f64,
) -> Result<RankerFit, TrainError> {
    let options = TrainOptions {
        l2,
        max_iterations: 2000,
        ..TrainOptions::default()
    };
    let all: Vec<&RankerQuestion> = sources.iter().flat_map(|(_, q)| q).collect();
    let groups: Vec<&str> = {
        let mut g: Vec<&str> = all.iter().map(|q| q.group.as_str()).collect();
        g.sort_unstable();
        g.dedup();
        g
    };
    if groups.len() < 2 {
        return Err(TrainError::invalid(
            "cross-validation by conversation needs at least two conversations",
        ));
    }
    // Held-out order of each question, by its position in `all`.
    let mut learned_order: Vec<Vec<&str>> = all.iter().map(|q| labels(q)).collect();
    for group in &groups {
        let train: Vec<&RankerQuestion> =
            all.iter().copied().filter(|q| q.group != *group).collect();
        let model = fit(&train, &options)?;
        for (i, q) in all.iter().enumerate().filter(|(_, q)| q.group == *group) {
            learned_order[i] = reorder(&model, q)?;
        }
    }
    let mut offset = 0;
    let by_source = sources
        .iter()
        .map(|(name, questions)| {
            let fused: Vec<(Vec<&str>, &[String])> = questions
                .iter()
                .map(|q| (labels(q), q.gold.as_slice()))
                .collect();
            let learned: Vec<(Vec<&str>, &[String])> = questions
                .iter()
                .zip(&learned_order[offset..])
                .map(|(q, order)| (order.clone(), q.gold.as_slice()))
                .collect();
            offset += questions.len();
            SourceFit {
                source: name.clone(),
                questions: questions.len(),
                fused: RecallAt::of(&fused),
                learned: RecallAt::of(&learned),
            }
        })
        .collect();
    let model = fit(&all, &options)?;
    Ok(RankerFit {
        l2,
        folds: groups.len(),
        by_source,
        ranker: unscaled(&model, depth(&all)),
    })
}

pub(crate) fn labels(q: &RankerQuestion) -> Vec<&str> {
    q.candidates.iter().map(|(l, _)| l.as_str()).collect()
}

/// The deepest candidate list seen: the depth the dumps were made with.
fn depth(questions: &[&RankerQuestion]) -> usize {
    questions
        .iter()
        .map(|q| q.candidates.len())
        .max()
        .unwrap_or(0)
}

fn fit(questions: &[&RankerQuestion], options: &TrainOptions) -> Result<LogisticModel, TrainError> {
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for q in questions {
        for (label, features) in &q.candidates {
            rows.push(features.clone());
            targets.push(q.gold.contains(label));
        }
    }
    train_logistic(&rows, &targets, 0, options)
}

/// The question's candidate labels ordered by the model, best first (ties keep fused order).
fn reorder<'q>(model: &LogisticModel, q: &'q RankerQuestion) -> Result<Vec<&'q str>, TrainError> {
    let mut scored = Vec::with_capacity(q.candidates.len());
    for (label, features) in &q.candidates {
        let p = model.probability(features).map_err(TrainError::Weights)?;
        scored.push((label.as_str(), p));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(scored.into_iter().map(|(l, _)| l).collect())
}

/// The model with its standardization folded into the weights, as the core applies it.
pub(crate) fn unscaled(model: &LogisticModel, depth: usize) -> LearnedRanker {
    let mut bias = model.bias;
    let weights = model
        .weights
        .iter()
        .zip(&model.means)
        .zip(&model.stds)
        .map(|((w, mean), std)| {
            bias -= w * mean / std;
            (w / std) as f32
        })
        .collect();
    LearnedRanker {
        depth,
        weights,
        bias: bias as f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Candidates whose third feature marks the gold one, which fusion ranks last.
    fn question(group: &str, n: usize) -> RankerQuestion {
        let candidates = (0..n)
            .map(|i| {
                let mut f = vec![0.0; RANK_FEATURES];
                f[FUSED_RANK_FEATURE] = 1.0 / (1.0 + i as f64);
                f[2] = if i == n - 1 {
                    1.0
                } else {
                    0.1 * (i % 3) as f64
                };
                (format!("L{i}"), f)
            })
            .collect();
        RankerQuestion {
            group: group.to_string(),
            conversation: group.to_string(),
            gold: vec![format!("L{}", n - 1)],
            candidates,
        }
    }

    #[test]
    fn a_feature_that_marks_the_evidence_is_learned_held_out() {
        let questions: Vec<RankerQuestion> = (0..12)
            .map(|i| question(&format!("c{}", i % 3), 12))
            .collect();
        let fit = train_ranker(&[("toy".to_string(), questions)], 0.001).unwrap();
        assert_eq!(fit.folds, 3);
        let toy = &fit.by_source[0];
        assert_eq!(toy.fused.0[0], 0.0, "fusion puts the evidence last");
        assert_eq!(toy.learned.0[0], 1.0, "the ranker puts it first held out");
        assert_eq!(fit.ranker.depth, 12);
        assert!(fit.ranker.validate().is_ok());
        let mut f = [0.0f32; RANK_FEATURES];
        f[2] = 1.0;
        let gold = fit.ranker.probability(&f);
        f[2] = 0.1;
        assert!(gold > fit.ranker.probability(&f));
    }

    #[test]
    fn one_conversation_cannot_be_cross_validated() {
        let questions = vec![question("only", 5), question("only", 5)];
        assert!(train_ranker(&[("toy".to_string(), questions)], 0.01).is_err());
    }

    #[test]
    fn dumps_are_read_in_fused_order_and_bad_lines_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.jsonl");
        let f = |rank: f64| {
            let mut v = vec![0.0; RANK_FEATURES];
            v[FUSED_RANK_FEATURE] = rank;
            v
        };
        let line = serde_json::json!({
            "conversation": "c1", "gold": ["b"],
            "ranker_features": {"hybrid": [["a", f(0.5)], ["b", f(1.0)]]},
        });
        let empty = serde_json::json!({
            "conversation": "c1", "gold": [], "ranker_features": {"hybrid": []},
        });
        std::fs::write(&path, format!("{line}\n{empty}\n")).unwrap();
        let questions = read_dump(&path, "hybrid").unwrap();
        assert_eq!(questions.len(), 1);
        assert_eq!(labels(&questions[0]), ["b", "a"]);
        assert!(read_dump(&path, "dense").is_err());
        // A dump made with the ranker off holds no candidates to learn from.
        std::fs::write(&path, format!("{empty}\n")).unwrap();
        let error = read_dump(&path, "hybrid").unwrap_err().to_string();
        assert!(error.contains("ranker depth > 0"), "{error}");
        std::fs::write(&path, "{not json\n").unwrap();
        assert!(matches!(
            read_dump(&path, "hybrid"),
            Err(TrainError::DumpLine { line: 1, .. })
        ));
    }
}
