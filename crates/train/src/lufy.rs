//! `mnemos train lufy`: fit the lufy preset's strength weights on LUFY's annotations, as the
//! paper fits its Table 2.
//!
//! Data: every user utterance of `lufy_sessions.json` whose three annotations decide a
//! majority (important = marked by at least 2 of 3) is one sample; its features are the
//! normalized A, P and L the preset computes ([`utterance_signals`], [`Scale::normalize`]),
//! over the offline model. The paper's model at the annotation lag (Δt = 1) is
//! importance = exp(−1 / S) with S = w_A·A + w_P·P + w_L·L; the weights minimize
//! Σ (exp(−1/S) − y)² + λ·|w|² (an L2-regularized squared loss) by Levenberg–Marquardt from
//! [1, 1, 1], as the paper does. R1 and R2 cannot be fitted here (the study logged no
//! retrievals), so the paper's w_R1 and w_R2 are kept beside the fitted three.
//!
//! λ is chosen by cross-validation by user: the users are split into folds (a user's sessions
//! with every chatbot stay in one fold), each fold is predicted by weights fitted on the others,
//! and the λ whose held-out top-10% choice agrees best with the annotators wins (what the
//! preset does with S; the held-out squared error breaks ties); the weights shipped are then
//! fitted on every sample with it. The fit starts from [1, 1, 1] as the paper's and also from
//! smaller starts ([`LUFY_STARTS`]), keeping the lowest loss. Held-out figures are reported for the fitted and the paper's
//! weights: squared error, ROC AUC of S against the label, and the agreement of the top
//! `keep_share` of each session by S with each annotator (LUFY Table 12's measure).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::storage::Owned;
use nalgebra::{DVector, Dyn, OMatrix, Vector3, U3};
use serde::Serialize;

use mnemos_core::memory_model::Line;
use mnemos_core::{Embedder, MemoryModel, Role};
use mnemos_embed::HashEmbedder;
use mnemos_eval::lufy::{load_lufy, roc_auc};
use mnemos_offline::OfflineModel;
use mnemos_presets::lufy::signals::utterance_signals;
use mnemos_presets::lufy::strength::{Scale, Weights, PAPER_WEIGHTS};

use crate::TrainError;

/// The penalties cross-validation chooses from (per sample: λ·n multiplies |w|²).
pub const LUFY_L2_GRID: [f64; 6] = [0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];

/// One labelled user utterance.
#[derive(Clone, Debug, PartialEq)]
pub struct LufySample {
    /// The LUFY user (the cross-validation group).
    pub user: String,
    /// "system/user/session".
    pub session: String,
    /// Normalized A, P, L.
    pub x: [f64; 3],
    /// The majority label.
    pub y: bool,
    /// Each annotator's mark.
    pub votes: BTreeMap<String, bool>,
}

/// The samples of a LUFY file, with what was left out.
#[derive(Clone, Debug, Default)]
pub struct LufySamples {
    pub samples: Vec<LufySample>,
    /// User utterances without a majority label.
    pub undetermined: usize,
    /// Blank user utterances.
    pub blank: usize,
    pub model: String,
}

/// Build the samples of the LUFY file at `path` with the offline model (its A, P and L use no
/// embeddings, so it runs over the hash embedder).
pub fn lufy_samples(path: &Path, scale: &Scale) -> Result<LufySamples, TrainError> {
    let dataset = load_lufy(path).map_err(|e| TrainError::invalid(e.to_string()))?;
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::default());
    let model = OfflineModel::new(embedder);
    let mut out = LufySamples {
        model: model.id().to_string(),
        ..LufySamples::default()
    };
    for session in &dataset.sessions {
        // The lines the preset sees: blank utterances never reach the engine.
        let turns: Vec<_> = session
            .turns
            .iter()
            .filter(|t| {
                let blank = t.utterance.trim().is_empty();
                out.blank += usize::from(blank && t.role == Role::User);
                !blank
            })
            .collect();
        let lines: Vec<Line> = turns
            .iter()
            .map(|t| Line::new(t.role, Some(&t.speaker), t.utterance.clone()))
            .collect();
        for (index, turn) in turns.iter().enumerate() {
            if turn.role != Role::User {
                continue;
            }
            let Some(label) = session.label(turn) else {
                out.undetermined += 1;
                continue;
            };
            let signals = utterance_signals(&model, &lines, index).map_err(TrainError::Model)?;
            let Some(signals) = signals else { continue };
            let x = scale.normalize(&signals);
            out.samples.push(LufySample {
                user: session.user.clone(),
                session: session.id(),
                x: [x[0], x[1], x[2]],
                y: label,
                votes: turn.important.clone(),
            });
        }
    }
    Ok(out)
}

/// exp(−1/S) and its derivative; 0 for S ≤ 0.
fn curve(s: f64) -> (f64, f64) {
    if s > 0.0 && s.is_finite() {
        let f = (-1.0 / s).exp();
        (f, f / (s * s))
    } else {
        (0.0, 0.0)
    }
}

fn dot(w: &[f64; 3], x: &[f64; 3]) -> f64 {
    w[0] * x[0] + w[1] * x[1] + w[2] * x[2]
}

/// The least-squares problem: one residual per sample plus one per weight for the penalty.
struct Problem<'a> {
    samples: &'a [&'a LufySample],
    root_penalty: f64,
    w: Vector3<f64>,
}

impl Problem<'_> {
    fn weights(&self) -> [f64; 3] {
        [self.w[0], self.w[1], self.w[2]]
    }
}

impl LeastSquaresProblem<f64, Dyn, U3> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, U3>;
    type ParameterStorage = Owned<f64, U3>;

    fn set_params(&mut self, w: &Vector3<f64>) {
        self.w.copy_from(w);
    }

    fn params(&self) -> Vector3<f64> {
        self.w
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let w = self.weights();
        let n = self.samples.len();
        let mut r = DVector::zeros(n + 3);
        for (i, sample) in self.samples.iter().enumerate() {
            r[i] = curve(dot(&w, &sample.x)).0 - f64::from(u8::from(sample.y));
        }
        for j in 0..3 {
            r[n + j] = self.root_penalty * w[j];
        }
        Some(r)
    }

    fn jacobian(&self) -> Option<OMatrix<f64, Dyn, U3>> {
        let w = self.weights();
        let n = self.samples.len();
        let mut jac = OMatrix::<f64, Dyn, U3>::zeros(n + 3);
        for (i, sample) in self.samples.iter().enumerate() {
            let slope = curve(dot(&w, &sample.x)).1;
            for j in 0..3 {
                jac[(i, j)] = slope * sample.x[j];
            }
        }
        for j in 0..3 {
            jac[(n + j, j)] = self.root_penalty;
        }
        Some(jac)
    }
}

/// Starting points: the paper's [1, 1, 1], then the same direction scaled down. From [1, 1, 1]
/// the squared loss of rare labels (about 5% important) can pull every strength below zero,
/// where each prediction is 0 and the loss is flat — a local minimum at the base rate; a
/// smaller start reaches the region where S ≈ 1/ln(1/base rate) first.
pub const LUFY_STARTS: [f64; 3] = [1.0, 0.3, 0.1];

/// Fit w_A, w_P, w_L on `samples` with penalty λ·n·|w|² (λ per sample, so a fold and the whole
/// set are penalized alike) by Levenberg–Marquardt from each of [`LUFY_STARTS`]; the fit with
/// the lowest penalized loss wins.
pub fn fit_lufy(samples: &[&LufySample], lambda: f64) -> Result<[f64; 3], TrainError> {
    if samples.is_empty() {
        return Err(TrainError::invalid("no samples to fit"));
    }
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(TrainError::invalid(format!("penalty {lambda} is not >= 0")));
    }
    let root_penalty = (lambda * samples.len() as f64).sqrt();
    let mut best: Option<([f64; 3], f64)> = None;
    let mut failures = Vec::new();
    for start in LUFY_STARTS {
        let problem = Problem {
            samples,
            root_penalty,
            w: Vector3::new(start, start, start),
        };
        let (fitted, report) = LevenbergMarquardt::new().minimize(problem);
        let w = fitted.weights();
        if !report.termination.was_successful() || !w.iter().all(|v| v.is_finite()) {
            failures.push(format!("{:?}", report.termination));
            continue;
        }
        let cost = fitted
            .residuals()
            .map_or(f64::INFINITY, |r| r.norm_squared());
        if best.is_none_or(|(_, c)| cost < c) {
            best = Some((w, cost));
        }
    }
    best.map(|(w, _)| w).ok_or_else(|| {
        TrainError::invalid(format!(
            "Levenberg-Marquardt did not converge from any start: {}",
            failures.join(", ")
        ))
    })
}

/// How weights do on samples they were not fitted on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HeldOut {
    /// Mean of (exp(−1/S) − y)².
    pub mse: f64,
    /// ROC AUC of S against the majority label.
    pub auc: Option<f64>,
    /// Mean over annotators of the share they marked important among the top `keep_share` of
    /// each session by S.
    pub agreement: f64,
}

/// Held-out figures of predictions `s` (one strength per sample).
fn held_out(samples: &[&LufySample], s: &[f64], keep_share: f64) -> HeldOut {
    let n = samples.len().max(1) as f64;
    let mse = samples
        .iter()
        .zip(s)
        .map(|(x, s)| (curve(*s).0 - f64::from(u8::from(x.y))).powi(2))
        .sum::<f64>()
        / n;
    let labels: Vec<bool> = samples.iter().map(|x| x.y).collect();
    HeldOut {
        mse,
        auc: roc_auc(s, &labels),
        agreement: top_share_agreement(samples, s, keep_share),
    }
}

/// Keep the top share of each session by score; each annotator's precision, averaged.
pub fn top_share_agreement(samples: &[&LufySample], s: &[f64], keep_share: f64) -> f64 {
    let mut sessions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, sample) in samples.iter().enumerate() {
        sessions.entry(sample.session.as_str()).or_default().push(i);
    }
    let mut marks: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for indexes in sessions.values() {
        let mut ranked = indexes.clone();
        ranked.sort_by(|a, b| {
            let (sa, sb) = (s.get(*a).copied(), s.get(*b).copied());
            sb.unwrap_or(0.0)
                .total_cmp(&sa.unwrap_or(0.0))
                .then(a.cmp(b))
        });
        let keep = ((ranked.len() as f64 * keep_share).round() as usize).max(1);
        for i in ranked.into_iter().take(keep) {
            let Some(sample) = samples.get(i) else {
                continue;
            };
            for (annotator, marked) in &sample.votes {
                let entry = marks.entry(annotator.as_str()).or_default();
                entry.0 += 1;
                entry.1 += usize::from(*marked);
            }
        }
    }
    let shares: Vec<f64> = marks
        .values()
        .map(|(n, yes)| *yes as f64 / (*n).max(1) as f64)
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

/// One penalty's cross-validated figures.
#[derive(Clone, Debug, Serialize)]
pub struct PenaltyResult {
    pub lambda: f64,
    pub held_out: HeldOut,
}

/// The outcome of `mnemos train lufy`.
#[derive(Clone, Debug, Serialize)]
pub struct LufyFit {
    /// Fitted w_A, w_P, w_L with the paper's w_R1, w_R2.
    pub weights: Weights,
    pub scale: Scale,
    pub lambda: f64,
    pub samples: usize,
    pub important: usize,
    pub users: usize,
    pub folds: usize,
    pub keep_share: f64,
    pub model: String,
    /// Held-out figures per penalty.
    pub penalties: Vec<PenaltyResult>,
    /// The paper's weights on the same samples (nothing fitted, so all of them are held out).
    pub paper: HeldOut,
}

/// Cross-validate the penalties by user, then fit on every sample with the best one.
pub fn train_lufy(
    data: &LufySamples,
    scale: Scale,
    folds: usize,
    keep_share: f64,
) -> Result<LufyFit, TrainError> {
    let users: Vec<&str> = data
        .samples
        .iter()
        .map(|s| s.user.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if users.len() < 2 || folds < 2 {
        return Err(TrainError::invalid(format!(
            "cross-validation by user needs 2 or more folds and users ({} users, {folds} folds)",
            users.len()
        )));
    }
    let folds = folds.min(users.len());
    let fold_of = |user: &str| {
        users
            .iter()
            .position(|u| *u == user)
            .map_or(0, |i| i % folds)
    };
    let all: Vec<&LufySample> = data.samples.iter().collect();
    let mut penalties = Vec::new();
    for lambda in LUFY_L2_GRID {
        let mut predicted = vec![0.0; all.len()];
        for fold in 0..folds {
            let train: Vec<&LufySample> = all
                .iter()
                .copied()
                .filter(|s| fold_of(&s.user) != fold)
                .collect();
            let w = fit_lufy(&train, lambda)?;
            for (i, sample) in all.iter().enumerate() {
                if fold_of(&sample.user) == fold {
                    predicted[i] = dot(&w, &sample.x);
                }
            }
        }
        penalties.push(PenaltyResult {
            lambda,
            held_out: held_out(&all, &predicted, keep_share),
        });
    }
    // The preset keeps the top share of each session by S, so the penalty is chosen by the
    // held-out agreement of that choice; the lower held-out loss breaks ties.
    let best = penalties
        .iter()
        .max_by(|a, b| {
            a.held_out
                .agreement
                .total_cmp(&b.held_out.agreement)
                .then(b.held_out.mse.total_cmp(&a.held_out.mse))
        })
        .map_or(0.0, |p| p.lambda);
    let w = fit_lufy(&all, best)?;
    let paper = [
        PAPER_WEIGHTS.arousal,
        PAPER_WEIGHTS.surprise,
        PAPER_WEIGHTS.importance,
    ];
    let paper_s: Vec<f64> = all.iter().map(|s| dot(&paper, &s.x)).collect();
    Ok(LufyFit {
        weights: Weights {
            arousal: w[0],
            surprise: w[1],
            importance: w[2],
            r1: PAPER_WEIGHTS.r1,
            r2: PAPER_WEIGHTS.r2,
        },
        scale,
        lambda: best,
        samples: all.len(),
        important: all.iter().filter(|s| s.y).count(),
        users: users.len(),
        folds,
        keep_share,
        model: data.model.clone(),
        penalties,
        paper: held_out(&all, &paper_s, keep_share),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(user: &str, session: &str, x: [f64; 3], y: bool) -> LufySample {
        LufySample {
            user: user.into(),
            session: session.into(),
            x,
            y,
            votes: [("a".to_string(), y)].into_iter().collect(),
        }
    }

    /// Labels drawn from the model itself: the fit finds weights that rank like the truth.
    fn synthetic() -> Vec<LufySample> {
        let truth = [3.0, -0.5, 0.8];
        let mut out = Vec::new();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for i in 0..600 {
            let x = [next(), next(), next()];
            let p = curve(dot(&truth, &x)).0;
            let y = next() < p;
            let user = format!("u{}", i % 6);
            out.push(sample(&user, &format!("{user}/{}", i % 3), x, y));
        }
        out
    }

    #[test]
    fn levenberg_marquardt_recovers_the_direction_of_the_weights() {
        let data = synthetic();
        let refs: Vec<&LufySample> = data.iter().collect();
        let w = fit_lufy(&refs, 0.0).unwrap();
        assert!(w[0] > 0.0 && w[2] > 0.0, "{w:?}");
        assert!(w[0] > w[2], "{w:?}");
        // A penalty shrinks the weights.
        let shrunk = fit_lufy(&refs, 1.0).unwrap();
        let norm = |w: &[f64; 3]| w.iter().map(|v| v * v).sum::<f64>();
        assert!(norm(&shrunk) < norm(&w), "{shrunk:?} vs {w:?}");
    }

    #[test]
    fn cross_validation_by_user_chooses_a_penalty_and_reports_held_out_figures() {
        let data = LufySamples {
            samples: synthetic(),
            model: "test".into(),
            ..LufySamples::default()
        };
        let fit = train_lufy(&data, Scale::default(), 3, 0.1).unwrap();
        assert_eq!(fit.penalties.len(), LUFY_L2_GRID.len());
        assert_eq!((fit.users, fit.folds, fit.samples), (6, 3, 600));
        assert!(LUFY_L2_GRID.contains(&fit.lambda));
        let best = fit
            .penalties
            .iter()
            .find(|p| p.lambda == fit.lambda)
            .unwrap();
        assert!(best.held_out.auc.unwrap() > 0.6, "{best:?}");
        assert_eq!(fit.weights.r1, PAPER_WEIGHTS.r1);
        assert!(train_lufy(&data, Scale::default(), 1, 0.1).is_err());
    }

    #[test]
    fn top_share_agreement_is_each_annotators_precision() {
        let a = sample("u", "s", [0.0; 3], true);
        let b = sample("u", "s", [0.0; 3], false);
        let refs = vec![&a, &b, &b, &b];
        // Top 25% of 4 = 1 utterance.
        assert_eq!(top_share_agreement(&refs, &[1.0, 0.0, 0.0, 0.0], 0.25), 1.0);
        assert_eq!(top_share_agreement(&refs, &[0.0, 1.0, 0.0, 0.0], 0.25), 0.0);
        assert_eq!(top_share_agreement(&refs, &[1.0, 1.0, 0.0, 0.0], 0.5), 0.5);
    }
}
