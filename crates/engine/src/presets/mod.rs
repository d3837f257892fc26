//! Presets: named mechanisms with typed, validated parameters.
//!
//! A preset is chosen by name; its parameters come from a TOML table whose unknown keys are
//! errors listing the valid ones. `registry()` describes every preset (for `mnemos presets`).
//!
//! - `default`: the product — facts kept current on the write path (supersession, forget
//!   requests), hybrid retrieval with a second hop, facts with their history first.
//! - `full`, `recent`, `retrieval`: MemBench's baselines (whole history, last N turns, top-k).
//! - `memorybank`: MemoryBank — session summaries, a user profile, Ebbinghaus forgetting that
//!   recall strengthens.
//! - `generative`: GenerativeAgent — importance-rated memory stream ranked by recency +
//!   importance + relevance, with reflections.
//! - `moom`: MOOM — plot summaries at three time scales, a persona sketch merged per key,
//!   competition-inhibition forgetting under a capacity.
//! - `perltqa`: PerLTQA — semantic vs episodic memory; the query is classified and the
//!   candidates of each type re-ranked by the type's probability.
//! - `lufy`: LUFY — utterance pairs weighted by arousal, surprise, importance and retrieval
//!   counts; only the most important 10% survive each session.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{EngineError, EngineResult};
use crate::mechanism::Mechanism;

pub(crate) mod default_preset;
pub(crate) mod full;
pub(crate) mod recent;
pub(crate) mod retrieval;

pub(crate) mod generative;
pub mod lufy;
pub mod m4;
pub(crate) mod memgpt;
pub(crate) mod memorybank;
pub(crate) mod moom;
pub(crate) mod perltqa;
pub(crate) mod scmemory;
#[cfg(test)]
pub(crate) mod testing;
pub mod variants;

/// Parameters of one preset: defaults, validation and one line of documentation per key.
pub trait PresetParams: Default + Serialize + DeserializeOwned {
    /// (key, what it means) for every parameter, in display order.
    const DOCS: &'static [(&'static str, &'static str)];
    /// Check value ranges; the message names the key and the accepted range.
    fn validate(&self) -> Result<(), String>;
}

/// Parse and validate a preset's parameter table.
pub fn parse_params<P: PresetParams>(preset: &str, table: &toml::Table) -> EngineResult<P> {
    let params: P =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                EngineError::config(format!("preset '{preset}': {}", e.message()))
            })?;
    params
        .validate()
        .map_err(|e| EngineError::config(format!("preset '{preset}': {e}")))?;
    Ok(params)
}

/// A preset by name with its parameter table (empty = defaults).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PresetSpec {
    pub name: String,
    pub params: toml::Table,
}

impl PresetSpec {
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            params: toml::Table::new(),
        }
    }
}

/// One parameter as `mnemos presets` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: String,
    pub doc: &'static str,
}

/// One preset as `mnemos presets` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct PresetInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamInfo>,
}

/// A default as a user reads it: an `f32` parameter widened to the table's `f64` shows as
/// 0.9, not 0.8999999761581421.
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::Float(f) => {
            let short = format!("{}", *f as f32);
            // Still a float in TOML: `50.0`, not `50`.
            if short.chars().all(|c| c.is_ascii_digit() || c == '-') {
                format!("{short}.0")
            } else {
                short
            }
        }
        other => other.to_string(),
    }
}

fn describe<P: PresetParams>(name: &'static str, summary: &'static str) -> PresetInfo {
    let defaults = toml::Value::try_from(P::default())
        .ok()
        .and_then(|v| v.as_table().cloned())
        .unwrap_or_default();
    PresetInfo {
        name,
        summary,
        params: P::DOCS
            .iter()
            .map(|(key, doc)| ParamInfo {
                name: key,
                default: defaults
                    .get(*key)
                    .map_or_else(|| "(none)".to_string(), shown),
                doc,
            })
            .collect(),
    }
}

type Builder = fn(&toml::Table) -> EngineResult<Arc<dyn Mechanism>>;

struct Entry {
    info: fn() -> PresetInfo,
    build: Builder,
}

fn entries() -> Vec<Entry> {
    vec![
        Entry {
            info: || {
                describe::<default_preset::DefaultParams>(
                    default_preset::NAME,
                    default_preset::SUMMARY,
                )
            },
            build: |t| {
                Ok(Arc::new(default_preset::DefaultPreset::new(parse_params(
                    default_preset::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<full::FullParams>(full::NAME, full::SUMMARY),
            build: |t| {
                Ok(Arc::new(full::FullMemory::new(parse_params(
                    full::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<recent::RecentParams>(recent::NAME, recent::SUMMARY),
            build: |t| {
                Ok(Arc::new(recent::RecentMemory::new(parse_params(
                    recent::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<retrieval::RetrievalParams>(retrieval::NAME, retrieval::SUMMARY),
            build: |t| {
                Ok(Arc::new(retrieval::RetrievalMemory::new(parse_params(
                    retrieval::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || {
                describe::<memorybank::MemoryBankParams>(memorybank::NAME, memorybank::SUMMARY)
            },
            build: |t| {
                Ok(Arc::new(memorybank::MemoryBank::new(parse_params(
                    memorybank::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || {
                describe::<generative::GenerativeParams>(generative::NAME, generative::SUMMARY)
            },
            build: |t| {
                Ok(Arc::new(generative::GenerativeAgent::new(parse_params(
                    generative::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<memgpt::MemGptParams>(memgpt::NAME, memgpt::SUMMARY),
            build: |t| {
                Ok(Arc::new(memgpt::MemGpt::new(parse_params(
                    memgpt::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<scmemory::ScmParams>(scmemory::NAME, scmemory::SUMMARY),
            build: |t| {
                Ok(Arc::new(scmemory::ScMemory::new(parse_params(
                    scmemory::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<moom::MoomParams>(moom::NAME, moom::SUMMARY),
            build: |t| Ok(Arc::new(moom::Moom::new(parse_params(moom::NAME, t)?))),
        },
        Entry {
            info: || describe::<perltqa::PerltqaParams>(perltqa::NAME, perltqa::SUMMARY),
            build: |t| {
                Ok(Arc::new(perltqa::Perltqa::new(parse_params(
                    perltqa::NAME,
                    t,
                )?)))
            },
        },
        Entry {
            info: || describe::<lufy::LufyParams>(lufy::NAME, lufy::SUMMARY),
            build: |t| Ok(Arc::new(lufy::Lufy::new(parse_params(lufy::NAME, t)?))),
        },
        Entry {
            info: || describe::<m4::M4Params>(m4::NAME, m4::SUMMARY),
            build: |t| Ok(Arc::new(m4::M4::new(parse_params(m4::NAME, t)?))),
        },
    ]
}

/// Every preset, in display order.
pub fn registry() -> Vec<PresetInfo> {
    entries().iter().map(|e| (e.info)()).collect()
}

/// Names of every preset.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|p| p.name).collect()
}

/// A preset (with its default parameters) that offers the view `kind`.
pub(crate) fn offering(kind: crate::views::ViewKind) -> Option<Arc<dyn Mechanism>> {
    entries()
        .iter()
        .filter_map(|entry| (entry.build)(&toml::Table::new()).ok())
        .find(|mechanism| mechanism.views().contains(&kind))
}

/// Build the mechanism a spec names, validating its parameters.
pub fn build(spec: &PresetSpec) -> EngineResult<Arc<dyn Mechanism>> {
    for entry in entries() {
        if (entry.info)().name == spec.name {
            return (entry.build)(&spec.params);
        }
    }
    Err(EngineError::config(format!(
        "unknown preset '{}'; the presets are: {}",
        spec.name,
        names().join(", ")
    )))
}
