//! `[engine]` of `mnemos.toml`: which preset each agent runs, with what parameters.

use mnemos_engine::{
    EngineConfig, EngineError, EngineResult, JobSettings, PresetSpec, DEFAULT_PRESET,
};
use serde::{Deserialize, Serialize};

/// `[engine]`: the preset for every agent, per-agent overrides, per-preset parameters and how
/// derived jobs run.
///
/// ```toml
/// [engine]
/// preset = "memorybank"
/// [engine.agents]
/// companion = "memgpt"
/// [engine.params.memorybank]
/// time_scale = 50.0
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// The preset for agents without their own entry (`mnemos presets` lists them).
    pub preset: String,
    /// Agent name → preset name.
    pub agents: std::collections::BTreeMap<String, String>,
    /// Preset name → its parameters (unknown keys are errors).
    pub params: std::collections::BTreeMap<String, toml::Table>,
    pub jobs: JobSettings,
}

impl Default for EngineSection {
    fn default() -> Self {
        Self {
            preset: DEFAULT_PRESET.into(),
            agents: Default::default(),
            params: Default::default(),
            jobs: Default::default(),
        }
    }
}

impl EngineSection {
    /// Preset `name` with the parameters this section sets for it.
    pub fn spec(&self, name: &str) -> PresetSpec {
        PresetSpec {
            name: name.to_string(),
            params: self.params.get(name).cloned().unwrap_or_default(),
        }
    }

    /// The engine configuration, with `preset` (e.g. a `--preset` flag) replacing the default.
    pub fn engine_config(&self, preset: Option<&str>) -> EngineConfig {
        EngineConfig {
            preset: self.spec(preset.unwrap_or(&self.preset)),
            agents: self
                .agents
                .iter()
                .map(|(agent, name)| (agent.clone(), self.spec(name)))
                .collect(),
            params: self.params.clone(),
            jobs: self.jobs.clone(),
        }
    }

    /// Every named preset exists and every parameter table is valid.
    pub fn validate(&self) -> EngineResult<()> {
        let known = crate::names();
        for name in self.params.keys() {
            if !known.contains(&name.as_str()) {
                return Err(EngineError::config(format!(
                    "[engine.params.{name}]: unknown preset (the presets are: {})",
                    known.join(", ")
                )));
            }
        }
        let names = std::iter::once(&self.preset).chain(self.agents.values());
        for name in names.chain(self.params.keys()) {
            crate::build(&self.spec(name))?;
        }
        if self.jobs.max_attempts == 0 {
            return Err(EngineError::config(
                "[engine.jobs] max_attempts must be at least 1",
            ));
        }
        if !(1..=86_400).contains(&self.jobs.lease_secs) {
            return Err(EngineError::config(
                "[engine.jobs] lease_secs must be between 1 and 86400 (a day)",
            ));
        }
        Ok(())
    }
}
