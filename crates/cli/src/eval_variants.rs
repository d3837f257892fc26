//! Which engines an eval command runs side by side: `--presets a,b`, `--sweep` (one parameter
//! of a preset over several values, optionally on top of fixed ones) and `--variant` (a preset
//! with several parameters set together). Every spec is built before any work, so a misspelt
//! preset or parameter fails at once.

use anyhow::{anyhow, bail, Context as _, Result};
use serde::Serialize;

use mnemos_engine::EngineConfig;

use crate::eval_common::{preset_configs, preset_names};
use mnemos_engine::Config;

/// One swept parameter of one preset, on top of fixed `base` parameters.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(crate) struct Sweep {
    pub preset: String,
    /// Parameters set for every value (`moom[forgetting=ebbinghaus].capacity=…`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base: Vec<(String, toml::Value)>,
    pub param: String,
    pub values: Vec<toml::Value>,
}

impl Sweep {
    /// The run name of one value: `preset[base… param=value]`.
    pub fn variant(&self, value: &toml::Value) -> String {
        let mut parts: Vec<String> = self.base.iter().map(|(p, v)| format!("{p}={v}")).collect();
        parts.push(format!("{}={value}", self.param));
        format!("{}[{}]", self.preset, parts.join(" "))
    }

    /// The sweep's name as a curve: `preset[base].param`.
    pub fn label(&self) -> String {
        if self.base.is_empty() {
            format!("{}.{}", self.preset, self.param)
        } else {
            let base: Vec<String> = self.base.iter().map(|(p, v)| format!("{p}={v}")).collect();
            format!("{}[{}].{}", self.preset, base.join(" "), self.param)
        }
    }

    /// A file-name stem for the sweep's plot.
    pub fn stem(&self) -> String {
        let mut stem = format!("forgetting-{}", self.preset);
        for (p, v) in &self.base {
            stem.push_str(&format!("-{p}-{}", v.to_string().trim_matches('"')));
        }
        stem.push_str(&format!("-{}", self.param));
        stem.replace(['_', '.'], "-")
    }
}

/// A TOML scalar (number, boolean) from the command line, else a string.
pub(crate) fn scalar(v: &str) -> toml::Value {
    format!("x = {v}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("x"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
}

fn assignments(text: &str, list: &str) -> Result<Vec<(String, toml::Value)>> {
    let mut params = Vec::new();
    for assignment in list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let (param, value) = assignment
            .split_once('=')
            .ok_or_else(|| anyhow!("{text:?}: '{assignment}' is not param=value"))?;
        params.push((param.trim().to_string(), scalar(value.trim())));
    }
    Ok(params)
}

/// `preset:param=value,param=value`: a preset with several parameters set; returns the preset
/// and the (param, value) pairs in order.
pub(crate) fn parse_variant(text: &str) -> Result<(String, Vec<(String, toml::Value)>)> {
    let usage = || anyhow!("--variant {text:?}: expected preset:param=value,param=value");
    let (preset, list) = text.split_once(':').ok_or_else(usage)?;
    let params = assignments(text, list).map_err(|_| usage())?;
    if preset.trim().is_empty() || params.is_empty() {
        return Err(usage());
    }
    Ok((preset.trim().to_string(), params))
}

/// `preset.param=v1,v2,...` or `preset[p=v,q=w].param=v1,v2,...`; values are TOML scalars
/// (numbers, booleans), else strings.
pub(crate) fn parse_sweep(text: &str) -> Result<Sweep> {
    let usage = || {
        anyhow!("--sweep {text:?}: expected preset.param=v1,v2,... or preset[p=v].param=v1,v2,...")
    };
    let (target, values) = match text.find(']') {
        // The base may hold '=' and ','; the values start after "].param=".
        Some(close) => {
            let rest = &text[close + 1..];
            let eq = rest.find('=').ok_or_else(usage)?;
            (&text[..close + 1 + eq], &rest[eq + 1..])
        }
        None => text.split_once('=').ok_or_else(usage)?,
    };
    let (head, param) = target.rsplit_once('.').ok_or_else(usage)?;
    let (preset, base) = match head.split_once('[') {
        Some((preset, base)) => {
            let base = base.strip_suffix(']').ok_or_else(usage)?;
            (preset, assignments(text, base).map_err(|_| usage())?)
        }
        None => (head, Vec::new()),
    };
    let values: Vec<toml::Value> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(scalar)
        .collect();
    if values.is_empty() {
        bail!("--sweep {text:?}: no values");
    }
    if preset.trim().is_empty() || param.trim().is_empty() {
        return Err(usage());
    }
    Ok(Sweep {
        preset: preset.trim().to_string(),
        base,
        param: param.trim().to_string(),
        values,
    })
}

/// Named engine configs, in run order.
pub(crate) type Specs = Vec<(String, EngineConfig)>;

/// The engines to run: `--presets` (every preset when absent and nothing else is asked for;
/// none when absent and there are sweeps or variants), then each sweep's values, then each
/// variant, with their run names.
pub(crate) fn expand(
    config: &Config,
    presets: &Option<String>,
    sweeps: &[String],
    variants: &[String],
    every_preset_by_default: bool,
) -> Result<(Specs, Vec<Sweep>)> {
    let mut specs = if presets.is_none() && !every_preset_by_default {
        Vec::new()
    } else {
        preset_configs(config, &preset_names(presets)?)?
    };
    let mut parsed: Vec<Sweep> = Vec::new();
    for text in sweeps {
        let sweep = parse_sweep(text)?;
        for value in &sweep.values {
            let mut engine = config.engine.engine_config(Some(&sweep.preset));
            for (param, v) in &sweep.base {
                engine.preset.params.insert(param.clone(), v.clone());
            }
            engine
                .preset
                .params
                .insert(sweep.param.clone(), value.clone());
            mnemos_engine::presets::build(&engine.preset)
                .with_context(|| format!("--sweep {text}"))?;
            specs.push((sweep.variant(value), engine));
        }
        parsed.push(sweep);
    }
    for text in variants {
        let (preset, params) = parse_variant(text)?;
        let mut engine = config.engine.engine_config(Some(&preset));
        for (param, value) in &params {
            engine.preset.params.insert(param.clone(), value.clone());
        }
        mnemos_engine::presets::build(&engine.preset)
            .with_context(|| format!("--variant {text}"))?;
        let label: Vec<String> = params.iter().map(|(p, v)| format!("{p}={v}")).collect();
        specs.push((format!("{preset}[{}]", label.join(" ")), engine));
    }
    if specs.is_empty() {
        bail!("nothing to run: give --presets, --sweep or --variant");
    }
    Ok((specs, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_and_variants_parse_typed_values() {
        let sweep = parse_sweep("memorybank.forget_threshold=0, 0.05,0.2").unwrap();
        assert_eq!(sweep.preset, "memorybank");
        assert_eq!(sweep.param, "forget_threshold");
        assert!(sweep.base.is_empty());
        assert_eq!(
            sweep.values,
            vec![
                toml::Value::Integer(0),
                toml::Value::Float(0.05),
                toml::Value::Float(0.2)
            ]
        );
        let words = parse_sweep("retrieval.retriever=dense,hybrid").unwrap();
        assert_eq!(words.values[1], toml::Value::String("hybrid".into()));
        assert_eq!(
            words.variant(&words.values[1]),
            "retrieval[retriever=\"hybrid\"]"
        );
        assert!(parse_sweep("retrieval").is_err());
        let (preset, params) = parse_variant("retrieval:retriever=hybrid, hops=2").unwrap();
        assert_eq!(preset, "retrieval");
        assert_eq!(
            params,
            vec![
                (
                    "retriever".to_string(),
                    toml::Value::String("hybrid".into())
                ),
                ("hops".to_string(), toml::Value::Integer(2)),
            ]
        );
        assert!(parse_variant("retrieval").is_err());
        assert!(parse_variant("retrieval:").is_err());
        assert!(parse_variant("retrieval:hops").is_err());
        assert!(parse_sweep("retrieval=1").is_err());
        assert!(parse_sweep("retrieval.top_k=").is_err());
    }

    #[test]
    fn a_sweep_may_fix_other_parameters() {
        let sweep = parse_sweep("moom[forgetting=ebbinghaus,k=3].capacity=10,20").unwrap();
        assert_eq!(sweep.preset, "moom");
        assert_eq!(sweep.param, "capacity");
        assert_eq!(
            sweep.base,
            vec![
                (
                    "forgetting".to_string(),
                    toml::Value::String("ebbinghaus".into())
                ),
                ("k".to_string(), toml::Value::Integer(3)),
            ]
        );
        assert_eq!(
            sweep.values,
            vec![toml::Value::Integer(10), toml::Value::Integer(20)]
        );
        assert_eq!(
            sweep.variant(&sweep.values[0]),
            "moom[forgetting=\"ebbinghaus\" k=3 capacity=10]"
        );
        assert_eq!(
            sweep.label(),
            "moom[forgetting=\"ebbinghaus\" k=3].capacity"
        );
        assert_eq!(
            sweep.stem(),
            "forgetting-moom-forgetting-ebbinghaus-k-3-capacity"
        );
        assert!(parse_sweep("moom[forgetting].capacity=1").is_err());
        assert!(parse_sweep("moom[forgetting=none.capacity=1").is_err());
    }
}
