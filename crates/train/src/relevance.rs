//! Fitting the relevance model (`mnemos_core::retrieval::RelevanceModel`) on the searches
//! `mnemos eval relevance --dump` writes: each question asked against its own conversation
//! (its gold items are evidence) and against other conversations (nothing is), each hit with
//! its relevance features. A logistic regression learns which hits are evidence; since its
//! output is read as a probability on every query's scale, it is judged by calibration on
//! conversations it never saw (one fold per conversation or character, over every dump): a
//! reliability table and the expected calibration error per dump. Unrelated queries in a dump
//! are never trained on: they are what the floor is tested with.

use std::path::Path;

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::{RelevanceModel, RELEVANCE_FEATURES, RELEVANCE_FEATURE_NAMES};
use mnemos_eval::report::relevance::Reliability;
use mnemos_offline::classify::{LogisticModel, TrainOptions};

use crate::{train_logistic, TrainError};

/// One search of a dump: its fold and its hits as (is evidence, features).
#[derive(Clone, Debug, PartialEq)]
pub struct RelevanceSearch {
    /// The dump it came from and the question's conversation: the cross-validation fold.
    pub group: String,
    /// Asked against its own conversation (else another one, where nothing is evidence).
    pub own: bool,
    pub hits: Vec<(bool, Vec<f64>)>,
}

/// One line of an `eval relevance --dump` file, as far as training needs it.
#[derive(Deserialize)]
struct DumpLine {
    kind: String,
    group: String,
    /// [label, evidence, relevance, features]
    hits: Vec<(String, bool, f64, Vec<f64>)>,
}

/// The own- and other-conversation searches of one dump file (unrelated queries are left
/// out).
pub fn read_relevance_dump(path: &Path) -> Result<Vec<RelevanceSearch>, TrainError> {
    let text = std::fs::read_to_string(path).map_err(|source| TrainError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let source = path.display().to_string();
    let mut searches = Vec::new();
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
        if parsed.kind != "own" && parsed.kind != "cross" {
            continue;
        }
        if parsed.hits.iter().any(|h| h.3.len() != RELEVANCE_FEATURES) {
            return Err(TrainError::invalid(format!(
                "{source} line {}: hits need {RELEVANCE_FEATURES} relevance features each",
                i + 1
            )));
        }
        searches.push(RelevanceSearch {
            group: format!("{source}#{}", parsed.group),
            own: parsed.kind == "own",
            hits: parsed.hits.into_iter().map(|h| (h.1, h.3)).collect(),
        });
    }
    if searches.is_empty() {
        return Err(TrainError::invalid(format!(
            "{source}: no search to learn from (write it with `mnemos eval relevance --dump`)"
        )));
    }
    Ok(searches)
}

/// Held-out calibration of one dump.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceCalibration {
    pub source: String,
    pub searches: usize,
    /// Every hit, own and other conversations.
    pub all: Reliability,
    /// Hits of questions asked against their own conversation.
    pub own: Reliability,
}

/// A fitted relevance model and how well calibrated it was held out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RelevanceFit {
    pub l2: f64,
    pub folds: usize,
    pub by_source: Vec<SourceCalibration>,
    /// Fitted on every search of every dump.
    pub model: RelevanceModel,
}

/// Set the features named in `without` to 0 in every hit, so a fit gives them no weight
/// (a feature that does not carry over from the training data to where the model runs).
pub fn drop_features(
    sources: &mut [(String, Vec<RelevanceSearch>)],
    without: &[String],
) -> Result<(), TrainError> {
    let mut columns = Vec::with_capacity(without.len());
    for name in without {
        let at = RELEVANCE_FEATURE_NAMES.iter().position(|n| n == name);
        columns.push(at.ok_or_else(|| {
            TrainError::invalid(format!(
                "no relevance feature '{name}' (the features: {})",
                RELEVANCE_FEATURE_NAMES.join(", ")
            ))
        })?);
    }
    let hits = sources
        .iter_mut()
        .flat_map(|(_, s)| s.iter_mut())
        .flat_map(|s| s.hits.iter_mut());
    for (_, features) in hits {
        for &c in &columns {
            features[c] = 0.0;
        }
    }
    Ok(())
}

/// Fit on `sources` (name, searches): cross-validated by group, then on everything.
pub fn train_relevance(
    sources: &[(String, Vec<RelevanceSearch>)],
    l2: f64,
) -> Result<RelevanceFit, TrainError> {
    let options = TrainOptions {
        l2,
        max_iterations: 2000,
        ..TrainOptions::default()
    };
    let all: Vec<&RelevanceSearch> = sources.iter().flat_map(|(_, s)| s).collect();
    let mut groups: Vec<&str> = all.iter().map(|s| s.group.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() < 2 {
        return Err(TrainError::invalid(
            "cross-validation by conversation needs at least two conversations",
        ));
    }
    // Held-out probability of each hit, by the search's position in `all`.
    let mut held_out: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    for group in &groups {
        let train: Vec<&RelevanceSearch> =
            all.iter().copied().filter(|s| s.group != *group).collect();
        let model = fit(&train, &options)?;
        for (i, search) in all.iter().enumerate().filter(|(_, s)| s.group == *group) {
            held_out[i] = probabilities(&model, search)?;
        }
    }
    let mut offset = 0;
    let mut by_source = Vec::with_capacity(sources.len());
    for (name, searches) in sources {
        let predicted = &held_out[offset..offset + searches.len()];
        offset += searches.len();
        let pairs = |own_only: bool| -> Vec<(f64, bool)> {
            searches
                .iter()
                .zip(predicted)
                .filter(|(s, _)| s.own || !own_only)
                .flat_map(|(s, p)| p.iter().zip(&s.hits).map(|(p, h)| (*p, h.0)))
                .collect()
        };
        by_source.push(SourceCalibration {
            source: name.clone(),
            searches: searches.len(),
            all: Reliability::of(&pairs(false)),
            own: Reliability::of(&pairs(true)),
        });
    }
    let model = fit(&all, &options)?;
    Ok(RelevanceFit {
        l2,
        folds: groups.len(),
        by_source,
        model: unscaled(&model),
    })
}

fn fit(searches: &[&RelevanceSearch], options: &TrainOptions) -> Result<LogisticModel, TrainError> {
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for search in searches {
        for (evidence, features) in &search.hits {
            rows.push(features.clone());
            targets.push(*evidence);
        }
    }
    train_logistic(&rows, &targets, 0, options)
}

fn probabilities(model: &LogisticModel, search: &RelevanceSearch) -> Result<Vec<f64>, TrainError> {
    search
        .hits
        .iter()
        .map(|(_, f)| model.probability(f).map_err(TrainError::Weights))
        .collect()
}

/// The model with its standardization folded into the weights, as the core applies it.
fn unscaled(model: &LogisticModel) -> RelevanceModel {
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
    RelevanceModel {
        weights,
        bias: bias as f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search whose first feature is high exactly on its evidence hits.
    fn search(group: &str, own: bool, seed: usize) -> RelevanceSearch {
        let hits = (0..10)
            .map(|i| {
                let evidence = own && i == seed % 10;
                let mut f = vec![0.0; RELEVANCE_FEATURES];
                f[0] = if evidence {
                    0.8
                } else {
                    0.1 + 0.03 * (i % 5) as f64
                };
                f[1] = ((seed * 7 + i) % 11) as f64 / 11.0;
                (evidence, f)
            })
            .collect();
        RelevanceSearch {
            group: group.to_string(),
            own,
            hits,
        }
    }

    #[test]
    fn a_feature_that_marks_the_evidence_is_learned_and_calibrated_held_out() {
        let searches: Vec<RelevanceSearch> = (0..60)
            .map(|i| search(&format!("c{}", i % 3), i % 2 == 0, i))
            .collect();
        let fit = train_relevance(&[("toy".to_string(), searches)], 0.001).unwrap();
        assert_eq!(fit.folds, 3);
        assert!(fit.model.validate().is_ok());
        let source = &fit.by_source[0];
        assert_eq!(source.all.hits, 600);
        assert!(source.all.ece < 0.1, "{}", source.all.ece);
        let mut f = [0.0f32; RELEVANCE_FEATURES];
        f[0] = 0.8;
        let evidence = fit.model.probability(&f);
        f[0] = 0.1;
        assert!(evidence > 0.5 && fit.model.probability(&f) < 0.1);
    }

    #[test]
    fn dropped_features_get_no_weight() {
        let mut sources = vec![(
            "toy".to_string(),
            (0..30)
                .map(|i| search(&format!("c{}", i % 3), true, i))
                .collect(),
        )];
        drop_features(&mut sources, &["coverage".to_string()]).unwrap();
        let fit = train_relevance(&sources, 0.001).unwrap();
        assert_eq!(fit.model.weights[1], 0.0);
        assert!(fit.model.weights[0] > 0.0);
        assert!(drop_features(&mut sources, &["nonsense".to_string()]).is_err());
    }

    #[test]
    fn dumps_skip_unrelated_queries_and_bad_lines_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.jsonl");
        let f = vec![0.5; RELEVANCE_FEATURES];
        let line = |kind: &str| {
            serde_json::json!({
                "kind": kind, "group": "c1", "host": "c1", "query": "q", "gold": ["c1/a"],
                "hits": [["c1/a", true, 0.5, f], ["c1/b", false, 0.1, f]],
            })
        };
        std::fs::write(&path, format!("{}\n{}\n", line("own"), line("unrelated"))).unwrap();
        let searches = read_relevance_dump(&path).unwrap();
        assert_eq!(searches.len(), 1);
        assert!(searches[0].own);
        assert!(searches[0].hits[0].0);
        std::fs::write(&path, format!("{}\n", line("unrelated"))).unwrap();
        assert!(read_relevance_dump(&path).is_err());
        std::fs::write(&path, "{not json\n").unwrap();
        assert!(matches!(
            read_relevance_dump(&path),
            Err(TrainError::DumpLine { line: 1, .. })
        ));
    }
}
