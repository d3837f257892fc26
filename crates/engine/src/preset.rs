//! The contract between the engine and the presets it runs: a preset is named by a
//! [`PresetSpec`] (name + TOML parameters) and built into a [`Mechanism`] by the
//! [`PresetFactory`] the engine was given. The engine itself knows no preset: the named
//! mechanisms live in their own crate (`mnemos-presets`), so the front door does not depend on
//! every preset and a new preset never touches the engine.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{EngineError, EngineResult};
use crate::mechanism::Mechanism;
use mnemos_core::views::ViewKind;

/// Every preset an engine can run, by name. Implementations must be pure: the same spec
/// always builds an equivalent mechanism, and `registry` never changes while a process runs
/// (the engine builds job mechanisms from specs long after a turn planned them).
pub trait PresetFactory: Send + Sync {
    /// Every preset, in display order.
    fn registry(&self) -> Vec<PresetInfo>;

    /// The mechanism `spec` names, its parameters validated. An unknown name or parameter is a
    /// configuration error naming the valid ones.
    fn build(&self, spec: &PresetSpec) -> EngineResult<Arc<dyn Mechanism>>;

    /// A preset (with its default parameters) that offers the view `kind`.
    fn offering(&self, kind: ViewKind) -> Option<Arc<dyn Mechanism>> {
        self.registry()
            .iter()
            .filter_map(|info| self.build(&PresetSpec::named(info.name)).ok())
            .find(|mechanism| mechanism.views().contains(&kind))
    }
}

/// The factory of an engine built without one: it knows no preset, so only mechanisms handed
/// to the builder run. Asking it for a preset says how to get them.
pub(crate) struct NoPresets;

impl PresetFactory for NoPresets {
    fn registry(&self) -> Vec<PresetInfo> {
        Vec::new()
    }

    fn build(&self, spec: &PresetSpec) -> EngineResult<Arc<dyn Mechanism>> {
        Err(EngineError::config(format!(
            "preset '{}': this engine was built without presets (give EngineBuilder::presets \
             a factory such as mnemos_presets::Presets, or a mechanism of your own)",
            spec.name
        )))
    }
}

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

pub fn describe<P: PresetParams>(name: &'static str, summary: &'static str) -> PresetInfo {
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
