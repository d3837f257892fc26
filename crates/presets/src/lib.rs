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

use mnemos_engine::preset::describe;
pub use mnemos_engine::preset::{
    parse_params, ParamInfo, PresetFactory, PresetInfo, PresetParams, PresetSpec,
};
use mnemos_engine::{EngineError, EngineResult, Mechanism};

mod section;
pub use section::EngineSection;

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
pub mod primitives;
pub(crate) mod scmemory;
#[cfg(test)]
pub(crate) mod testing;
pub mod variants;

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

/// The presets of this crate, as the factory an engine is given
/// (`EngineBuilder::presets(Arc::new(Presets))`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Presets;

impl PresetFactory for Presets {
    fn registry(&self) -> Vec<PresetInfo> {
        registry()
    }

    fn build(&self, spec: &PresetSpec) -> EngineResult<Arc<dyn Mechanism>> {
        build(spec)
    }
}

/// Every preset, in display order.
pub fn registry() -> Vec<PresetInfo> {
    entries().iter().map(|e| (e.info)()).collect()
}

/// Names of every preset.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|p| p.name).collect()
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
