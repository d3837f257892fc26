//! The m4 preset's parameters, apart from the mechanism so its parts (calibration,
//! compression) read them without depending on the mechanism itself.

use serde::{Deserialize, Serialize};

use crate::PresetParams;

/// Search hits looked at to choose the query's chains and roots.
pub(crate) const CANDIDATES: usize = 30;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct M4Params {
    /// Cosine of two category labels at which they are one category (the paper's γ).
    pub gamma: f32,
    /// Order nodes into chains and walk them (false: independent nodes, best match first).
    pub chains: bool,
    /// Check each new node against its chains and merge conflicts.
    pub calibrate: bool,
    /// Let the engine's write path supersede statements as they arrive (facts by rule, no
    /// model call); calibration then takes what it found instead of asking the model again.
    pub supersede: bool,
    /// Closest current nodes of its chains a new node is checked against.
    pub calibrate_checks: usize,
    /// Older turns each new turn that announces a change is checked against.
    pub statement_checks: usize,
    /// Conflict checks among a context's evidence turns per recall (read-time calibration).
    pub read_checks: usize,
    /// Grow chains by the model's judgement (false: every node of the query's chains).
    pub self_reflection: bool,
    /// Chains the query is matched to.
    pub query_categories: usize,
    /// Model calls (helps, sufficient) one recall may make.
    pub max_steps: usize,
    /// Compress nodes left unused for `compress_after_days` of dialogue time.
    pub compress: bool,
    /// Days of dialogue time a node stays unused before each compression step (the paper: a week).
    pub compress_after_days: f64,
    /// Compression steps a node may take at most.
    pub max_compressions: u32,
    /// Choose roots through the turns the nodes cover as well as the node texts, and show each
    /// node's best-matching turns under it (false: node texts only, as in the paper).
    pub evidence: bool,
}

impl Default for M4Params {
    fn default() -> Self {
        Self {
            gamma: 0.5,
            chains: true,
            calibrate: true,
            supersede: true,
            calibrate_checks: 1,
            statement_checks: 2,
            read_checks: 8,
            self_reflection: true,
            query_categories: 2,
            max_steps: 8,
            compress: true,
            compress_after_days: 7.0,
            max_compressions: 2,
            evidence: true,
        }
    }
}

impl PresetParams for M4Params {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        (
            "gamma",
            "cosine of two category labels at which they are one category (0..=1; the paper's γ)",
        ),
        (
            "chains",
            "order nodes into category chains and walk them (false: independent nodes)",
        ),
        ("calibrate", "check new nodes against their chains and merge conflicts"),
        (
            "supersede",
            "the engine's write path supersedes statements by rule as they arrive; calibration takes what it found (false: the model alone, as in the paper)",
        ),
        (
            "calibrate_checks",
            "closest current nodes of its chains each new node is checked against (0..=50)",
        ),
        (
            "statement_checks",
            "older turns like it each new turn that announces a change is checked against (0..=50)",
        ),
        (
            "read_checks",
            "conflict checks among a context's evidence turns per recall, marking a contradicted older turn superseded (0..=100)",
        ),
        (
            "self_reflection",
            "grow chains while each node helps, stop when sufficient (false: every node of the query's chains)",
        ),
        ("query_categories", "chains a query is matched to (1..=20)"),
        (
            "max_steps",
            "model calls (helps, sufficient) per recall at most (0..=100)",
        ),
        (
            "compress",
            "compress nodes left unused, step by step while the model can still recover them",
        ),
        (
            "compress_after_days",
            "days of dialogue time unused before each compression step (> 0; the paper: 7)",
        ),
        ("max_compressions", "compression steps per node at most (0..=10)"),
        (
            "evidence",
            "find roots through the turns nodes cover too, and show each node's best turns under it (false: node texts only)",
        ),
    ];

    fn validate(&self) -> Result<(), String> {
        if !(self.gamma.is_finite() && (0.0..=1.0).contains(&self.gamma)) {
            return Err(format!("gamma = {}: expected 0..=1", self.gamma));
        }
        if self.calibrate_checks > 50 {
            return Err(format!(
                "calibrate_checks = {}: expected 0..=50",
                self.calibrate_checks
            ));
        }
        if !(1..=20).contains(&self.query_categories) {
            return Err(format!(
                "query_categories = {}: expected 1..=20",
                self.query_categories
            ));
        }
        if self.statement_checks > 50 {
            return Err(format!(
                "statement_checks = {}: expected 0..=50",
                self.statement_checks
            ));
        }
        if self.read_checks > 100 {
            return Err(format!(
                "read_checks = {}: expected 0..=100",
                self.read_checks
            ));
        }
        if self.max_steps > 100 {
            return Err(format!("max_steps = {}: expected 0..=100", self.max_steps));
        }
        if !(self.compress_after_days.is_finite() && self.compress_after_days > 0.0) {
            return Err(format!(
                "compress_after_days = {}: expected a number > 0",
                self.compress_after_days
            ));
        }
        if self.max_compressions > 10 {
            return Err(format!(
                "max_compressions = {}: expected 0..=10",
                self.max_compressions
            ));
        }
        Ok(())
    }
}
