//! `eval probes --kind update`: knowledge-update probes ([`crate::update_probes`]), presets
//! side by side.
//!
//! Each probe runs as a fresh engine user over its stream (a LoCoMo conversation for English,
//! a ZH-4O dialogue for Chinese, with a fact and its later update inserted); after the stream
//! the preset recalls with the question within `budget` tokens. Scores, from the context text
//! the agent would read:
//!
//! - **current in context**: the current value appears in it;
//! - **stale as current**: the stale value appears on a line that is not marked superseded
//!   ([`SUPERSEDED_MARKERS`]);
//! - **updated**: the current value is there and the stale value is not presented as current
//!   (the probe's success);
//! - **update hit**: some context item's provenance holds the update turn;
//! - **answer current / answer stale**: the answer model's reply names the current / the stale
//!   value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use mnemos_engine::presets::variants::DefaultPresets::UnlessSwept;
use mnemos_engine::Config;

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::dataset::Conversation;
use crate::error::EvalError;
use crate::experiment::{Experiment, Progress, ProgressFn};
use crate::protocol::PreparedConversation;
use crate::runner::{AskRecord, RunOptions};
use crate::scoring::answer_in_context;
use crate::update_probes::{update_probes, ProbeLanguage, UpdateProbe};

use super::{write_report, Comparison, Cost, EngineSetup};

mod render;

/// Words that mark a context line as no longer current. A preset that keeps a superseded
/// value in the context must say so on its line with one of these for the stale value not to
/// count as presented as current. `(previously:` and `（之前：` are how the `merge` task records
/// the older statement inside the newer one.
pub const SUPERSEDED_MARKERS: [&str; 6] = [
    "superseded",
    "no longer current",
    "(previously:",
    "已过时",
    "已被更新",
    "（之前：",
];

/// ZH-4O dialogues shorter than this are not used as hosts.
const MIN_HOST_MESSAGES: usize = 200;

/// What `eval probes --kind update` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateSettings {
    /// The ZH-4O directory (Chinese hosts).
    pub zh4o: PathBuf,
    /// The LoCoMo file (English hosts).
    pub locomo: PathBuf,
    pub compare: Comparison,
    /// At most this many probes per language (the first cover every slot once).
    pub probes: Option<usize>,
    /// Sessions of this many messages for the ZH-4O hosts, which have none (0 = one session).
    pub session_messages: usize,
    pub budget: usize,
    pub seed: u64,
}

#[derive(Debug, Serialize)]
pub struct UpdateReport {
    pub mnemos: &'static str,
    pub dataset: UpdateDataset,
    pub budget: usize,
    pub batch: usize,
    pub session_messages: usize,
    #[serde(flatten)]
    pub engine: EngineSetup,
    pub answer_model: String,
    pub presets: Vec<UpdateRow>,
    pub notes: Vec<String>,
}

impl UpdateReport {
    pub fn markdown(&self) -> String {
        render::markdown(self)
    }
}

#[derive(Debug, Serialize)]
pub struct UpdateDataset {
    pub locomo: String,
    pub zh4o: String,
    pub seed: u64,
    /// Probes per language.
    pub probes: BTreeMap<String, usize>,
    /// Host conversations per language.
    pub hosts: BTreeMap<String, usize>,
    pub mean_stream_items: f64,
    pub checksums: Vec<InputChecksum>,
}

/// One probe under one preset.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateRecord {
    pub probe: String,
    pub language: String,
    pub slot: String,
    pub host: String,
    pub stale: String,
    pub current: String,
    pub current_in_context: bool,
    pub stale_in_context: bool,
    pub stale_as_current: bool,
    pub update_hit: bool,
    pub answer: Option<String>,
    pub answer_current: bool,
    pub answer_stale: bool,
    pub context_items: usize,
    pub context_tokens: usize,
    pub recall_ms: f64,
    pub model_error: Option<String>,
    /// The question and the context the agent got, to see why a probe failed.
    pub question: String,
    pub context_text: String,
}

impl UpdateRecord {
    /// The current value is in the context and the stale one is not presented as current.
    pub fn updated(&self) -> bool {
        self.current_in_context && !self.stale_as_current
    }
}

/// Shares over a group of probes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UpdateScores {
    pub probes: usize,
    pub current_in_context: f64,
    pub stale_as_current: f64,
    pub updated: f64,
    pub update_hit: f64,
    pub answer_current: f64,
    pub answer_stale: f64,
    pub context_tokens: f64,
}

impl UpdateScores {
    fn of<'a>(records: impl IntoIterator<Item = &'a UpdateRecord>) -> UpdateScores {
        let records: Vec<&UpdateRecord> = records.into_iter().collect();
        if records.is_empty() {
            return UpdateScores::default();
        }
        let n = records.len() as f64;
        let share =
            |f: &dyn Fn(&UpdateRecord) -> bool| records.iter().filter(|r| f(r)).count() as f64 / n;
        UpdateScores {
            probes: records.len(),
            current_in_context: share(&|r| r.current_in_context),
            stale_as_current: share(&|r| r.stale_as_current),
            updated: share(&UpdateRecord::updated),
            update_hit: share(&|r| r.update_hit),
            answer_current: share(&|r| r.answer_current),
            answer_stale: share(&|r| r.answer_stale),
            context_tokens: records.iter().map(|r| r.context_tokens as f64).sum::<f64>() / n,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct UpdateRow {
    pub preset: String,
    pub overall: UpdateScores,
    pub by_language: BTreeMap<String, UpdateScores>,
    pub by_slot: BTreeMap<String, UpdateScores>,
    pub cost: Cost,
    pub probes: Vec<UpdateRecord>,
}

/// Run `eval probes --kind update` (see the module docs); with an output directory, write the
/// report there.
pub fn evaluate_updates(
    config: &Config,
    settings: &UpdateSettings,
    progress: ProgressFn<'_>,
) -> Result<UpdateReport, EvalError> {
    let (selection, out) = settings.compare.begin(config, UnlessSwept)?;
    let hosts = load_hosts(settings)?;
    let count_tokens = |text: &str| mnemos_engine::primitives::tokens(text);
    let mut probes: Vec<UpdateProbe> = Vec::new();
    for (language, hosts) in &hosts {
        let mut generated = update_probes(*language, hosts, settings.seed, &count_tokens);
        generated.truncate(settings.probes.unwrap_or(usize::MAX));
        probes.extend(generated);
    }
    if probes.is_empty() {
        return Err(EvalError::Invalid(
            "no update probe could be placed in the hosts".into(),
        ));
    }
    let streams: Vec<PreparedConversation> = probes.iter().map(|p| p.stream.clone()).collect();
    let items: usize = streams.iter().map(|s| s.conversation.items.len()).sum();
    progress(Progress::Note(&format!(
        "update probes: {} probes, {items} messages to stream per preset",
        probes.len()
    )));
    let shared = super::probes::shared_embedder(config, &streams, progress)?;
    let options = RunOptions {
        budget: settings.budget,
        choose: false,
        answer: true,
        ..RunOptions::writes_of(settings.compare.batch, config)
    };
    let experiment = Experiment::new(
        config,
        settings.compare.store,
        &options,
        shared.embedder.clone(),
        progress,
    )?;
    let outcomes = experiment.run(&selection.engines, &streams, |context, run| {
        let probe = &probes[context.index];
        let records = run.asks.iter_mut().map(|ask| {
            let record = update_record(probe, ask);
            ask.context_text.clear();
            record
        });
        Ok(records.collect::<Vec<_>>())
    })?;
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let presets = outcomes
        .into_iter()
        .map(|o| update_row(&o.name, o.conversations.concat(), Cost::of(&o.summary)))
        .collect();
    let count = |language: ProbeLanguage| probes.iter().filter(|p| p.language == language).count();
    let report = UpdateReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: UpdateDataset {
            locomo: settings.locomo.display().to_string(),
            zh4o: settings.zh4o.display().to_string(),
            seed: settings.seed,
            probes: hosts
                .iter()
                .map(|(l, _)| (l.as_str().to_string(), count(*l)))
                .collect(),
            hosts: hosts
                .iter()
                .map(|(l, h)| (l.as_str().to_string(), h.len()))
                .collect(),
            mean_stream_items: items as f64 / streams.len() as f64,
            checksums: checksum_inputs(&[settings.locomo.clone(), settings.zh4o.clone()])?,
        },
        budget: settings.budget,
        batch: options.batch,
        session_messages: settings.session_messages,
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        answer_model: experiment.answerer().id().to_string(),
        presets,
        notes: render::notes(settings),
    };
    if let Some(dir) = &out {
        write_report(dir, &report, &report.markdown(), &[], progress)?;
    }
    Ok(report)
}

/// The host conversations per language: LoCoMo's for English, ZH-4O's long dialogues for
/// Chinese.
fn load_hosts(
    settings: &UpdateSettings,
) -> Result<Vec<(ProbeLanguage, Vec<Conversation>)>, EvalError> {
    let locomo = crate::load_locomo(&settings.locomo)?;
    let zh4o = crate::load_zh4o(&settings.zh4o)?;
    let chinese: Vec<Conversation> = zh4o
        .dialogues
        .iter()
        .filter(|d| d.messages.len() >= MIN_HOST_MESSAGES)
        .map(|d| d.conversation(&format!("zh4o-{}", d.index), settings.session_messages))
        .collect();
    Ok(vec![
        (ProbeLanguage::En, locomo.conversations),
        (ProbeLanguage::Zh, chinese),
    ])
}

/// The scores of one ask.
fn update_record(probe: &UpdateProbe, ask: &AskRecord) -> UpdateRecord {
    let context = ask.context_text.as_str();
    let answer = ask.answer.as_deref().unwrap_or("");
    UpdateRecord {
        probe: probe.id.clone(),
        language: probe.language.as_str().to_string(),
        slot: probe.slot.as_str().to_string(),
        host: probe.host.clone(),
        stale: probe.stale.clone(),
        current: probe.current.clone(),
        current_in_context: answer_in_context(&probe.current, context),
        stale_in_context: answer_in_context(&probe.stale, context),
        stale_as_current: stale_as_current(&probe.stale, context),
        update_hit: ask.evidence_in_context,
        answer: ask.answer.clone(),
        answer_current: answer_in_context(&probe.current, answer),
        answer_stale: answer_in_context(&probe.stale, answer),
        context_items: ask.context_items,
        context_tokens: ask.context_tokens,
        recall_ms: ask.recall_ms,
        model_error: ask.model_error.clone(),
        question: ask.question_text.clone(),
        context_text: ask.context_text.clone(),
    }
}

/// Whether `stale` appears on a line of `context` that no [`SUPERSEDED_MARKERS`] word marks.
pub fn stale_as_current(stale: &str, context: &str) -> bool {
    context.lines().any(|line| {
        let lower = line.to_lowercase();
        answer_in_context(stale, line) && !SUPERSEDED_MARKERS.iter().any(|m| lower.contains(m))
    })
}

fn update_row(name: &str, records: Vec<UpdateRecord>, cost: Cost) -> UpdateRow {
    let group = |key: &dyn Fn(&UpdateRecord) -> &str| {
        let mut groups: BTreeMap<String, Vec<&UpdateRecord>> = BTreeMap::new();
        for record in &records {
            groups
                .entry(key(record).to_string())
                .or_default()
                .push(record);
        }
        groups
            .into_iter()
            .map(|(k, g)| (k, UpdateScores::of(g)))
            .collect()
    };
    UpdateRow {
        preset: name.to_string(),
        overall: UpdateScores::of(&records),
        by_language: group(&|r| r.language.as_str()),
        by_slot: group(&|r| r.slot.as_str()),
        cost,
        probes: records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::PresetAccumulator;

    fn record(language: &str, slot: &str, current: bool, stale: bool) -> UpdateRecord {
        UpdateRecord {
            probe: "p".into(),
            language: language.into(),
            slot: slot.into(),
            host: "h".into(),
            stale: "Tallinn".into(),
            current: "Porto".into(),
            current_in_context: current,
            stale_in_context: stale,
            stale_as_current: stale,
            update_hit: current,
            answer: None,
            answer_current: false,
            answer_stale: false,
            context_items: 3,
            context_tokens: 30,
            recall_ms: 1.0,
            model_error: None,
            question: "Which city do I live in now?".into(),
            context_text: String::new(),
        }
    }

    #[test]
    fn a_stale_value_on_a_marked_line_is_not_presented_as_current() {
        let context = "Ann: I live in Porto now.\nAnn: I live in Tallinn (superseded).";
        assert!(!stale_as_current("Tallinn", context));
        assert!(stale_as_current("Tallinn", "Ann: I live in Tallinn."));
        assert!(!stale_as_current("Tallinn", "Ann: I live in Porto."));
        assert!(stale_as_current("洛阳", "我现在住在洛阳"));
        assert!(!stale_as_current(
            "洛阳",
            "我住在洛阳（已过时）\n我现在住在厦门"
        ));
        assert!(!stale_as_current(
            "Tallinn",
            "Home is Porto now (previously: I live in Tallinn)."
        ));
        assert!(!stale_as_current(
            "洛阳",
            "我现在住在厦门（之前：我住在洛阳）"
        ));
    }

    #[test]
    fn a_probe_is_updated_only_with_the_current_value_and_no_stale_one() {
        assert!(record("en", "job", true, false).updated());
        assert!(!record("en", "job", true, true).updated());
        assert!(!record("en", "job", false, false).updated());
    }

    #[test]
    fn rows_split_by_language_and_slot() {
        let cost = Cost::of(&PresetAccumulator::default().summarize("x", 0, 0.0));
        let row = update_row(
            "x",
            vec![
                record("en", "job", true, false),
                record("en", "pet", true, true),
                record("zh", "job", false, false),
            ],
            cost,
        );
        assert_eq!(row.overall.probes, 3);
        assert!((row.overall.updated - 1.0 / 3.0).abs() < 1e-12);
        assert!((row.overall.current_in_context - 2.0 / 3.0).abs() < 1e-12);
        assert!((row.by_language["en"].stale_as_current - 0.5).abs() < 1e-12);
        assert_eq!(row.by_slot["job"].probes, 2);
        assert!((row.by_slot["job"].updated - 0.5).abs() < 1e-12);
        assert_eq!(UpdateScores::of(&[]), UpdateScores::default());
    }
}
