//! Which engines an evaluation runs side by side: a list of presets, sweeps (one parameter of a
//! preset over several values, optionally on top of fixed ones) and variants (a preset with
//! several parameters set together), each expanded into a named [`EngineConfig`].
//!
//! The grammar, as the command line writes it:
//!
//! - a sweep: `preset.param=v1,v2,...` or `preset[p=v,q=w].param=v1,v2,...`;
//! - a variant: `preset:param=value,param=value`.
//!
//! Values are TOML scalars (numbers, booleans), else strings. A run is named after what it
//! sets, `recent[window=4]` or `moom[forgetting="ebbinghaus" capacity=20]`, so reports and
//! plots tell the runs apart. Every expanded config is built once here, so a misspelt preset
//! or parameter fails before any work.

use serde::Serialize;

use crate as presets;
use crate::EngineSection;
use mnemos_engine::EngineConfig;
use mnemos_engine::EngineError;

/// A preset list, sweep or variant that cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// The text does not follow the grammar.
    #[error("{what} {text:?}: expected {expected}")]
    Syntax {
        what: &'static str,
        text: String,
        expected: &'static str,
    },
    #[error("sweep {0:?}: no values")]
    NoValues(String),
    #[error("the preset list names no preset")]
    NoPresets,
    #[error("nothing to run: name presets, a sweep or a variant")]
    NothingToRun,
    /// The expanded config does not build (unknown preset, parameter or value).
    #[error("{run}")]
    Invalid {
        run: String,
        #[source]
        source: EngineError,
    },
}

const SWEEP_GRAMMAR: &str = "preset.param=v1,v2,... or preset[p=v].param=v1,v2,...";
const VARIANT_GRAMMAR: &str = "preset:param=value,param=value";

/// One parameter assignment, `param = value`.
pub type Assignment = (String, toml::Value);

/// One swept parameter of one preset, on top of fixed `base` parameters.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Sweep {
    pub preset: String,
    /// Parameters set for every value (`moom[forgetting=ebbinghaus].capacity=…`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base: Vec<Assignment>,
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

/// A preset with several parameters set together.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Variant {
    pub preset: String,
    pub params: Vec<Assignment>,
}

impl Variant {
    /// The run name: `preset[p=v q=w]`.
    pub fn name(&self) -> String {
        let label: Vec<String> = self
            .params
            .iter()
            .map(|(p, v)| format!("{p}={v}"))
            .collect();
        format!("{}[{}]", self.preset, label.join(" "))
    }
}

/// An engine config with the name its run is reported under.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedEngine {
    pub name: String,
    pub config: EngineConfig,
}

/// What to run side by side: plain presets, then each sweep's values, then each variant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    pub engines: Vec<NamedEngine>,
    /// The sweeps the engines came from (a report draws each as a curve).
    pub sweeps: Vec<Sweep>,
}

/// Which presets run when no preset list is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultPresets {
    /// Every preset, then the sweeps and variants.
    Every,
    /// Every preset only when there is no sweep or variant either.
    UnlessSwept,
}

/// What a caller asked to run, as text: preset names, sweeps and variants.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SelectionSpec {
    /// Preset names (blank entries are ignored); `None` = see [`DefaultPresets`].
    pub presets: Option<Vec<String>>,
    pub sweeps: Vec<String>,
    pub variants: Vec<String>,
}

impl SelectionSpec {
    /// The named engines, each with the parameters `section` sets for its preset under the
    /// ones the run sets, built once to check them.
    pub fn expand(
        &self,
        section: &EngineSection,
        default: DefaultPresets,
    ) -> Result<Selection, VariantError> {
        let mut selection = Selection::default();
        let every = default == DefaultPresets::Every
            || (self.sweeps.is_empty() && self.variants.is_empty());
        if self.presets.is_some() || every {
            for name in preset_names(self.presets.as_deref())? {
                selection
                    .engines
                    .push(checked(section, &name, &[], name.clone())?);
            }
        }
        for text in &self.sweeps {
            let sweep = parse_sweep(text)?;
            for value in &sweep.values {
                let mut params = sweep.base.clone();
                params.push((sweep.param.clone(), value.clone()));
                let engine = checked(section, &sweep.preset, &params, sweep.variant(value))?;
                selection.engines.push(engine);
            }
            selection.sweeps.push(sweep);
        }
        for text in &self.variants {
            let variant = parse_variant(text)?;
            let engine = checked(section, &variant.preset, &variant.params, variant.name())?;
            selection.engines.push(engine);
        }
        if selection.engines.is_empty() {
            return Err(VariantError::NothingToRun);
        }
        Ok(selection)
    }
}

/// The presets of a list (trimmed, blanks dropped), or every preset when there is no list.
pub fn preset_names(list: Option<&[String]>) -> Result<Vec<String>, VariantError> {
    let names: Vec<String> = match list {
        Some(list) => list
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None => presets::names().into_iter().map(str::to_string).collect(),
    };
    if names.is_empty() {
        return Err(VariantError::NoPresets);
    }
    Ok(names)
}

/// `preset` with `params` set over the section's own, named `name`, once it builds.
fn checked(
    section: &EngineSection,
    preset: &str,
    params: &[Assignment],
    name: String,
) -> Result<NamedEngine, VariantError> {
    let mut config = section.engine_config(Some(preset));
    for (param, value) in params {
        config.preset.params.insert(param.clone(), value.clone());
    }
    match presets::build(&config.preset) {
        Ok(_) => Ok(NamedEngine { name, config }),
        Err(source) => Err(VariantError::Invalid { run: name, source }),
    }
}

/// A TOML scalar (number, boolean) from the command line, else a string.
pub fn scalar(text: &str) -> toml::Value {
    format!("x = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("x"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// `p=v,q=w` as assignments, or `None` when some part is not `param=value`.
fn assignments(list: &str) -> Option<Vec<Assignment>> {
    list.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|assignment| {
            let (param, value) = assignment.split_once('=')?;
            Some((param.trim().to_string(), scalar(value.trim())))
        })
        .collect()
}

/// `preset:param=value,param=value`: a preset with several parameters set, in order.
pub fn parse_variant(text: &str) -> Result<Variant, VariantError> {
    let syntax = || VariantError::Syntax {
        what: "variant",
        text: text.to_string(),
        expected: VARIANT_GRAMMAR,
    };
    let (preset, list) = text.split_once(':').ok_or_else(syntax)?;
    let params = assignments(list).ok_or_else(syntax)?;
    if preset.trim().is_empty() || params.is_empty() {
        return Err(syntax());
    }
    Ok(Variant {
        preset: preset.trim().to_string(),
        params,
    })
}

/// `preset.param=v1,v2,...` or `preset[p=v,q=w].param=v1,v2,...`.
pub fn parse_sweep(text: &str) -> Result<Sweep, VariantError> {
    let syntax = || VariantError::Syntax {
        what: "sweep",
        text: text.to_string(),
        expected: SWEEP_GRAMMAR,
    };
    let (target, values) = match text.find(']') {
        // The base may hold '=' and ','; the values start after "].param=".
        Some(close) => {
            let rest = &text[close + 1..];
            let eq = rest.find('=').ok_or_else(syntax)?;
            (&text[..close + 1 + eq], &rest[eq + 1..])
        }
        None => text.split_once('=').ok_or_else(syntax)?,
    };
    let (head, param) = target.rsplit_once('.').ok_or_else(syntax)?;
    let (preset, base) = match head.split_once('[') {
        Some((preset, base)) => {
            let base = base.strip_suffix(']').ok_or_else(syntax)?;
            (preset, assignments(base).ok_or_else(syntax)?)
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
        return Err(VariantError::NoValues(text.to_string()));
    }
    if preset.trim().is_empty() || param.trim().is_empty() {
        return Err(syntax());
    }
    Ok(Sweep {
        preset: preset.trim().to_string(),
        base,
        param: param.trim().to_string(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(presets: Option<&str>, sweeps: &[&str], variants: &[&str]) -> SelectionSpec {
        SelectionSpec {
            presets: presets.map(|p| p.split(',').map(str::to_string).collect()),
            sweeps: sweeps.iter().map(|s| s.to_string()).collect(),
            variants: variants.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn preset_lists() {
        let names = |list: &str| {
            let list: Vec<String> = list.split(',').map(str::to_string).collect();
            preset_names(Some(&list))
        };
        assert_eq!(
            names(" memorybank, ,full ").unwrap(),
            ["memorybank", "full"]
        );
        assert_eq!(preset_names(None).unwrap().len(), presets::names().len());
        assert!(matches!(names(" , "), Err(VariantError::NoPresets)));
    }

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
        let variant = parse_variant("retrieval:retriever=hybrid, hops=2").unwrap();
        assert_eq!(variant.preset, "retrieval");
        assert_eq!(
            variant.params,
            vec![
                (
                    "retriever".to_string(),
                    toml::Value::String("hybrid".into())
                ),
                ("hops".to_string(), toml::Value::Integer(2)),
            ]
        );
        assert_eq!(variant.name(), "retrieval[retriever=\"hybrid\" hops=2]");
        assert!(parse_variant("retrieval").is_err());
        assert!(parse_variant("retrieval:").is_err());
        assert!(parse_variant("retrieval:hops").is_err());
        assert!(parse_sweep("retrieval=1").is_err());
        assert!(matches!(
            parse_sweep("retrieval.top_k="),
            Err(VariantError::NoValues(_))
        ));
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

    #[test]
    fn selections_expand_in_run_order_with_the_section_parameters() {
        let mut section = EngineSection::default();
        section
            .params
            .insert("recent".into(), toml::toml! { window = 7 });
        let selection = spec(Some("full"), &["recent.window=2,4"], &["retrieval:top_k=3"])
            .expand(&section, DefaultPresets::Every)
            .unwrap();
        let names: Vec<&str> = selection.engines.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "full",
                "recent[window=2]",
                "recent[window=4]",
                "retrieval[top_k=3]"
            ]
        );
        assert_eq!(
            selection.engines[1].config.preset.params["window"],
            toml::Value::Integer(2)
        );
        assert_eq!(selection.sweeps.len(), 1);

        let swept = spec(None, &["recent.window=2"], &[]);
        let only = swept.expand(&section, DefaultPresets::UnlessSwept).unwrap();
        assert_eq!(only.engines.len(), 1);
        let all = swept.expand(&section, DefaultPresets::Every).unwrap();
        assert_eq!(all.engines.len(), presets::names().len() + 1);
        let plain = spec(None, &[], &[]).expand(&section, DefaultPresets::UnlessSwept);
        assert_eq!(plain.unwrap().engines.len(), presets::names().len());
    }

    #[test]
    fn unknown_presets_and_parameters_fail_before_any_work() {
        let section = EngineSection::default();
        let err = spec(Some("nosuch"), &[], &[])
            .expand(&section, DefaultPresets::Every)
            .unwrap_err();
        assert!(matches!(err, VariantError::Invalid { ref run, .. } if run == "nosuch"));
        let err = spec(None, &["recent.nosuch=1"], &[])
            .expand(&section, DefaultPresets::UnlessSwept)
            .unwrap_err();
        assert!(matches!(err, VariantError::Invalid { .. }), "{err}");
    }
}
