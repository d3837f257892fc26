//! Logistic regression by L-BFGS, with per-weight L2 penalties and k-fold cross-validation.

use mnemos_offline::classify::{sigmoid, LogisticModel, TrainOptions};

use crate::TrainError;

/// Standard deviations below this are treated as constant features (scale 1).
const MIN_STD: f64 = 1e-9;

/// log(1 + e^z) without overflow.
fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Per-column mean and std (population), with constant columns scaled by 1.
fn standardization(rows: &[Vec<f64>], width: usize) -> (Vec<f64>, Vec<f64>) {
    let n = rows.len().max(1) as f64;
    let mut means = vec![0.0; width];
    for row in rows {
        for (m, x) in means.iter_mut().zip(row) {
            *m += x / n;
        }
    }
    let mut vars = vec![0.0; width];
    for row in rows {
        for ((v, x), m) in vars.iter_mut().zip(row).zip(&means) {
            *v += (x - m) * (x - m) / n;
        }
    }
    let stds = vars
        .into_iter()
        .map(|v| {
            let s = v.sqrt();
            if s > MIN_STD {
                s
            } else {
                1.0
            }
        })
        .collect();
    (means, stds)
}

/// Mean logistic loss + L2 penalty (one strength per weight) and its gradient; `params` =
/// weights then the bias.
fn loss_and_gradient(
    x: &[Vec<f64>],
    y: &[f64],
    params: &[f64],
    penalties: &[f64],
    gradient: &mut [f64],
) -> f64 {
    let width = params.len() - 1;
    let (weights, bias) = params.split_at(width);
    let bias = bias.first().copied().unwrap_or(0.0);
    let n = x.len().max(1) as f64;
    gradient.iter_mut().for_each(|g| *g = 0.0);
    let mut loss = 0.0;
    for (row, target) in x.iter().zip(y) {
        let z = bias + dot(weights, row);
        loss += softplus(z) - target * z;
        let residual = (sigmoid(z) - target) / n;
        for (g, v) in gradient.iter_mut().zip(row) {
            *g += residual * v;
        }
        if let Some(g) = gradient.get_mut(width) {
            *g += residual;
        }
    }
    loss /= n;
    let mut penalty = 0.0;
    for ((g, w), l2) in gradient.iter_mut().zip(weights).zip(penalties) {
        *g += l2 * w;
        penalty += 0.5 * l2 * w * w;
    }
    loss + penalty
}

/// Fit a logistic regression (`labels[i]` = row i is in the positive class) by L-BFGS with
/// Armijo backtracking, on features standardized with the training rows' means and stds. The
/// first `embedding_dim` features are the embedding (penalized by `options.embedding_l2`).
pub fn train_logistic(
    rows: &[Vec<f64>],
    labels: &[bool],
    embedding_dim: usize,
    options: &TrainOptions,
) -> Result<LogisticModel, TrainError> {
    if rows.is_empty() {
        return Err(TrainError::invalid("cannot train on zero examples"));
    }
    if rows.len() != labels.len() {
        return Err(TrainError::invalid(format!(
            "{} feature rows but {} labels",
            rows.len(),
            labels.len()
        )));
    }
    let width = rows.first().map_or(0, Vec::len);
    if rows.iter().any(|r| r.len() != width) {
        return Err(TrainError::invalid("feature rows differ in width"));
    }
    if rows.iter().flatten().any(|v| !v.is_finite()) {
        return Err(TrainError::invalid("a feature value is not finite"));
    }
    let embedding_l2 = options.embedding_l2.unwrap_or(options.l2);
    if !(options.l2.is_finite()
        && options.l2 >= 0.0
        && embedding_l2.is_finite()
        && embedding_l2 >= 0.0)
    {
        return Err(TrainError::invalid(
            "the L2 penalties must be finite and ≥ 0",
        ));
    }
    if embedding_dim > width {
        return Err(TrainError::invalid(format!(
            "embedding width {embedding_dim} exceeds the feature width {width}"
        )));
    }
    let penalties: Vec<f64> = (0..width)
        .map(|i| {
            if i < embedding_dim {
                embedding_l2
            } else {
                options.l2
            }
        })
        .collect();
    let (means, stds) = standardization(rows, width);
    let x: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(means.iter().zip(&stds))
                .map(|(v, (m, s))| (v - m) / s)
                .collect()
        })
        .collect();
    let y: Vec<f64> = labels.iter().map(|l| f64::from(u8::from(*l))).collect();

    let params = lbfgs(&x, &y, &penalties, options);
    let (weights, bias) = params.split_at(width);
    let model = LogisticModel {
        weights: weights.to_vec(),
        bias: bias.first().copied().unwrap_or(0.0),
        means,
        stds,
    };
    model.validate().map_err(TrainError::Weights)?;
    Ok(model)
}

/// Limited-memory BFGS (history [`HISTORY`]) from zero.
fn lbfgs(x: &[Vec<f64>], y: &[f64], penalties: &[f64], options: &TrainOptions) -> Vec<f64> {
    let size = penalties.len() + 1;
    let mut params = vec![0.0; size];
    let mut gradient = vec![0.0; size];
    let mut loss = loss_and_gradient(x, y, &params, penalties, &mut gradient);
    let mut history = Curvature::default();
    let mut next_gradient = vec![0.0; size];
    for _ in 0..options.max_iterations {
        if gradient.iter().fold(0.0f64, |m, g| m.max(g.abs())) < options.tolerance {
            break;
        }
        let mut direction = history.direction(&gradient);
        let mut slope = dot(&direction, &gradient);
        // Not a descent direction (numerical trouble, NaN included): restart from steepest
        // descent.
        if slope.is_nan() || slope >= 0.0 {
            history.clear();
            direction = gradient.iter().map(|g| -g).collect();
            slope = dot(&direction, &gradient);
        }
        // Armijo backtracking; the first step of a fresh history is scaled to unit length.
        let first_step = if history.is_empty() {
            1.0 / dot(&direction, &direction).sqrt().max(1.0)
        } else {
            1.0
        };
        let objective = |candidate: &[f64], gradient: &mut [f64]| {
            loss_and_gradient(x, y, candidate, penalties, gradient)
        };
        let line = LineSearch {
            params: &params,
            direction: &direction,
            loss,
            slope,
            first_step,
        };
        let Some((candidate, candidate_loss)) = line.run(objective, &mut next_gradient) else {
            break;
        };
        let s: Vec<f64> = candidate.iter().zip(&params).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = next_gradient
            .iter()
            .zip(&gradient)
            .map(|(a, b)| a - b)
            .collect();
        params = candidate;
        let improvement = loss - candidate_loss;
        loss = candidate_loss;
        std::mem::swap(&mut gradient, &mut next_gradient);
        history.push(s, yv);
        if improvement.abs() < 1e-14 {
            break;
        }
    }
    params
}

/// Curvature pairs L-BFGS keeps.
const HISTORY: usize = 10;

/// The last [`HISTORY`] steps `s` and gradient changes `y` of L-BFGS.
#[derive(Default)]
struct Curvature {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
}

impl Curvature {
    fn is_empty(&self) -> bool {
        self.s.is_empty()
    }

    fn clear(&mut self) {
        self.s.clear();
        self.y.clear();
    }

    /// Keep a pair only when its curvature is positive (the inverse Hessian stays positive
    /// definite); drop the oldest beyond [`HISTORY`].
    fn push(&mut self, s: Vec<f64>, y: Vec<f64>) {
        if dot(&s, &y) > 1e-12 {
            if self.s.len() == HISTORY {
                self.s.remove(0);
                self.y.remove(0);
            }
            self.s.push(s);
            self.y.push(y);
        }
    }

    /// Two-loop recursion: direction = −H·g.
    fn direction(&self, gradient: &[f64]) -> Vec<f64> {
        let mut q = gradient.to_vec();
        let mut alphas = Vec::with_capacity(self.s.len());
        for (s, yv) in self.s.iter().zip(&self.y).rev() {
            let rho = 1.0 / dot(yv, s);
            let alpha = rho * dot(s, &q);
            q.iter_mut().zip(yv).for_each(|(qi, yi)| *qi -= alpha * yi);
            alphas.push((alpha, rho));
        }
        if let (Some(s), Some(yv)) = (self.s.last(), self.y.last()) {
            let gamma = dot(s, yv) / dot(yv, yv);
            q.iter_mut().for_each(|qi| *qi *= gamma);
        }
        for ((s, yv), (alpha, rho)) in self.s.iter().zip(&self.y).zip(alphas.iter().rev()) {
            let beta = rho * dot(yv, &q);
            q.iter_mut()
                .zip(s)
                .for_each(|(qi, si)| *qi += si * (alpha - beta));
        }
        q.iter().map(|v| -v).collect()
    }
}

/// One Armijo backtracking search along `direction` from `params`.
struct LineSearch<'a> {
    params: &'a [f64],
    direction: &'a [f64],
    loss: f64,
    /// Directional derivative of the loss along `direction` (negative).
    slope: f64,
    first_step: f64,
}

impl LineSearch<'_> {
    /// Halve the step (at most 40 times) until the loss decreases enough; the accepted point
    /// and its loss, its gradient left in `gradient`. `None` when no step is accepted.
    fn run(
        &self,
        objective: impl Fn(&[f64], &mut [f64]) -> f64,
        gradient: &mut [f64],
    ) -> Option<(Vec<f64>, f64)> {
        let mut step = self.first_step;
        for _ in 0..40 {
            let candidate: Vec<f64> = self
                .params
                .iter()
                .zip(self.direction)
                .map(|(p, d)| p + step * d)
                .collect();
            let candidate_loss = objective(&candidate, gradient);
            if candidate_loss.is_finite() && candidate_loss <= self.loss + 1e-4 * step * self.slope
            {
                return Some((candidate, candidate_loss));
            }
            step *= 0.5;
        }
        None
    }
}

/// Share of rows the model puts on the right side of 0.5.
pub fn accuracy(
    model: &LogisticModel,
    rows: &[Vec<f64>],
    labels: &[bool],
) -> Result<f64, TrainError> {
    if rows.is_empty() {
        return Err(TrainError::invalid("accuracy of zero examples"));
    }
    let mut correct = 0usize;
    for (row, label) in rows.iter().zip(labels) {
        correct += usize::from(predicts(model, row, *label)?);
    }
    Ok(correct as f64 / rows.len() as f64)
}

/// k-fold cross-validated accuracy; row i goes to fold i mod k (shuffle the set beforehand).
pub fn cross_validate(
    rows: &[Vec<f64>],
    labels: &[bool],
    embedding_dim: usize,
    folds: usize,
    options: &TrainOptions,
) -> Result<f64, TrainError> {
    if folds < 2 || folds > rows.len() {
        return Err(TrainError::invalid(format!(
            "cannot cross-validate {} examples in {folds} folds",
            rows.len()
        )));
    }
    let mut correct = 0usize;
    for fold in 0..folds {
        let (mut train_x, mut train_y, mut test_x, mut test_y) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, (row, label)) in rows.iter().zip(labels).enumerate() {
            if i % folds == fold {
                test_x.push(row.clone());
                test_y.push(*label);
            } else {
                train_x.push(row.clone());
                train_y.push(*label);
            }
        }
        let model = train_logistic(&train_x, &train_y, embedding_dim, options)?;
        for (row, label) in test_x.iter().zip(&test_y) {
            correct += usize::from(predicts(&model, row, *label)?);
        }
    }
    Ok(correct as f64 / rows.len() as f64)
}

/// Whether the model puts `row` on the side of 0.5 that `label` says.
fn predicts(model: &LogisticModel, row: &[f64], label: bool) -> Result<bool, TrainError> {
    let p = model.probability(row).map_err(TrainError::Weights)?;
    Ok((p >= 0.5) == label)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two clusters in 3-d that a plane separates, with a constant column.
    fn separable() -> (Vec<Vec<f64>>, Vec<bool>) {
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for i in 0..20 {
            let t = f64::from(i) / 10.0;
            rows.push(vec![2.0 + t, 1.0 - t, 5.0]);
            labels.push(true);
            rows.push(vec![-2.0 - t, 0.5 + t, 5.0]);
            labels.push(false);
        }
        (rows, labels)
    }

    #[test]
    fn separable_set_is_learned_exactly() {
        let (rows, labels) = separable();
        let model = train_logistic(&rows, &labels, 0, &TrainOptions::default()).unwrap();
        assert_eq!(accuracy(&model, &rows, &labels).unwrap(), 1.0);
        assert_eq!(
            cross_validate(&rows, &labels, 0, 5, &TrainOptions::default()).unwrap(),
            1.0
        );
        // The constant column gets scale 1 and cannot move the prediction.
        assert_eq!(model.stds[2], 1.0);
        assert!(model.probability(&[10.0, 0.0, 5.0]).unwrap() > 0.9);
        assert!(model.probability(&[-10.0, 0.0, 5.0]).unwrap() < 0.1);
    }

    #[test]
    fn stronger_l2_shrinks_weights() {
        let (rows, labels) = separable();
        let with_l2 = |l2| {
            let options = TrainOptions {
                l2,
                ..Default::default()
            };
            train_logistic(&rows, &labels, 0, &options).unwrap()
        };
        let norm = |m: &LogisticModel| dot(&m.weights, &m.weights);
        assert!(norm(&with_l2(1.0)) < norm(&with_l2(1e-3)));
    }

    #[test]
    fn bad_training_input_is_a_typed_error() {
        let opts = TrainOptions::default();
        let invalid =
            |r: Result<LogisticModel, TrainError>| matches!(r, Err(TrainError::InvalidInput(_)));
        assert!(invalid(train_logistic(&[], &[], 0, &opts)));
        assert!(invalid(train_logistic(
            &[vec![1.0]],
            &[true, false],
            0,
            &opts
        )));
        assert!(invalid(train_logistic(
            &[vec![1.0], vec![1.0, 2.0]],
            &[true, false],
            0,
            &opts
        )));
        assert!(invalid(train_logistic(
            &[vec![f64::NAN]],
            &[true],
            0,
            &opts
        )));
        assert!(invalid(train_logistic(&[vec![1.0]], &[true], 2, &opts)));
        let negative = TrainOptions { l2: -1.0, ..opts };
        assert!(invalid(train_logistic(&[vec![1.0]], &[true], 0, &negative)));
        let (rows, labels) = separable();
        assert!(matches!(
            cross_validate(&rows, &labels, 0, 1, &opts),
            Err(TrainError::InvalidInput(_))
        ));
    }
}
