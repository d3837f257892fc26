//! `eval probes --kind forget`: forget-request probes ([`crate::forget_probes`]), presets side
//! by side, on one half of the templates (the test half unless asked otherwise).
//!
//! Each probe runs as a fresh engine user over its stream; after it the preset recalls with
//! the question about the detail and with the question about the unrelated fact, and the
//! engine is searched for the detail three ways (the probe's search words, its question, the
//! value itself), each as an agent searches (current memories, the default relevance floor)
//! and as everything the store will return (superseded memories included, no floor). Scores:
//!
//! - **requests**: *forgotten* = the value is in no recall context, no search hit and no
//!   stored memory of any state (raw turns included); *tombstone* = the recall context about
//!   the detail says the user asked to forget it; *kept* = the unrelated fact's value is in
//!   its recall context;
//! - **lines that are not requests**: *kept* = the value is in the recall context about the
//!   detail; *wrongly forgotten* = the store lost the value or holds a tombstone.

use std::collections::BTreeMap;

use serde::Serialize;

use mnemos_core::{KindTag, MemoryFilter, MemoryState, StateFilter, UserKey};
use mnemos_engine::truth::forget::{ERASE_REASON, TOPIC_KEY};
use mnemos_engine::{Engine, SearchRequest};
use mnemos_presets::variants::DefaultPresets::UnlessSwept;
use mnemos_setup::Config;

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::error::EvalError;
use crate::experiment::{Experiment, Progress, ProgressFn};
use crate::forget_probes::{forget_probes, ForgetKind, ForgetProbe};
use crate::protocol::PreparedConversation;
use crate::runner::{AskRecord, RunOptions};
use crate::scoring::answer_in_context;

use super::updates::{grouped, load_hosts, per_language, UpdateSettings};
use super::{f3, write_report, Cost, EngineSetup};

/// What a tombstone reads like in a recall context (see `mnemos_engine::truth::forget`).
const TOMBSTONE_MARKERS: [&str; 2] = ["asked to forget", "要求忘掉"];

/// Hits per search: more than an agent takes, so a leak just below the cut is seen too.
const SEARCH_TOP_K: usize = 20;

#[derive(Debug, Serialize)]
pub struct ForgetReport {
    pub mnemos: &'static str,
    pub locomo: String,
    pub zh4o: String,
    pub half: String,
    pub seed: u64,
    pub window: usize,
    /// Probes per language and kind.
    pub probes: BTreeMap<String, usize>,
    pub checksums: Vec<InputChecksum>,
    #[serde(flatten)]
    pub engine: EngineSetup,
    pub budget: usize,
    pub presets: Vec<ForgetRow>,
}

/// One probe under one preset.
#[derive(Debug, Clone, Serialize)]
pub struct ForgetRecord {
    pub probe: String,
    pub language: String,
    pub topic: String,
    pub kind: ForgetKind,
    pub value: String,
    pub last_line: String,
    pub in_recall: bool,
    /// In a search as an agent makes it (current memories, the default floor).
    pub in_search: bool,
    /// In a search for everything (superseded included, no floor).
    pub in_any_search: bool,
    /// In a stored memory of any state.
    pub in_store: bool,
    pub tombstone_reported: bool,
    pub tombstone_stored: bool,
    pub kept_fact_in_context: bool,
    /// Turns erased other than the probe's own statements of the detail: what a request took
    /// that it should not have.
    pub collateral: usize,
    pub context: String,
}

impl ForgetRecord {
    fn forgotten(&self) -> bool {
        !(self.in_recall || self.in_search || self.in_any_search || self.in_store)
    }
}

/// Shares over a group of probes; `None` where no probe of the group applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ForgetScores {
    pub requests: usize,
    pub forgotten: Option<f64>,
    pub in_recall: Option<f64>,
    pub in_search: Option<f64>,
    pub in_any_search: Option<f64>,
    pub in_store: Option<f64>,
    pub tombstone_reported: Option<f64>,
    pub kept_fact: Option<f64>,
    /// Requests: turns erased besides the detail's statements, on average.
    pub collateral: Option<f64>,
    pub not_requests: usize,
    pub not_request_kept: Option<f64>,
    pub wrongly_forgotten: Option<f64>,
}

impl ForgetScores {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a ForgetRecord>) -> ForgetScores {
        let records: Vec<&ForgetRecord> = records.into_iter().collect();
        let of_kind = |kind: ForgetKind| -> Vec<&ForgetRecord> {
            records.iter().copied().filter(|r| r.kind == kind).collect()
        };
        let share = |group: &[&ForgetRecord], hit: &dyn Fn(&ForgetRecord) -> bool| {
            (!group.is_empty())
                .then(|| group.iter().filter(|r| hit(r)).count() as f64 / group.len() as f64)
        };
        let requests = of_kind(ForgetKind::Request);
        let others = of_kind(ForgetKind::NotARequest);
        ForgetScores {
            requests: requests.len(),
            forgotten: share(&requests, &ForgetRecord::forgotten),
            in_recall: share(&requests, &|r| r.in_recall),
            in_search: share(&requests, &|r| r.in_search),
            in_any_search: share(&requests, &|r| r.in_any_search),
            in_store: share(&requests, &|r| r.in_store),
            tombstone_reported: share(&requests, &|r| r.tombstone_reported),
            kept_fact: share(&requests, &|r| r.kept_fact_in_context),
            collateral: (!requests.is_empty()).then(|| {
                requests.iter().map(|r| r.collateral as f64).sum::<f64>() / requests.len() as f64
            }),
            not_requests: others.len(),
            not_request_kept: share(&others, &|r| r.in_recall),
            wrongly_forgotten: share(&others, &|r| !r.in_store || r.tombstone_stored),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ForgetRow {
    pub preset: String,
    pub overall: ForgetScores,
    pub by_language: BTreeMap<String, ForgetScores>,
    pub by_topic: BTreeMap<String, ForgetScores>,
    pub cost: Cost,
    pub probes: Vec<ForgetRecord>,
}

/// Run `eval probes --kind forget` (see the module docs); with an output directory, write the
/// report there.
pub fn evaluate_forgets(
    config: &Config,
    settings: &UpdateSettings,
    progress: ProgressFn<'_>,
) -> Result<ForgetReport, EvalError> {
    let (selection, out) = settings.compare.begin(config, UnlessSwept)?;
    let hosts = load_hosts(settings)?;
    let probes = per_language(settings, &hosts, "forget", forget_probes)?;
    let streams: Vec<PreparedConversation> = probes.iter().map(|p| p.stream.clone()).collect();
    progress(Progress::Note(&format!(
        "forget probes ({} half): {} probes",
        settings.half.as_str(),
        probes.len()
    )));
    let shared = super::probes::shared_embedder(config, &streams, progress)?;
    let options = RunOptions {
        budget: settings.budget,
        choose: false,
        answer: false,
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
        forget_record(context.engine, context.user, probe, &run.asks)
    })?;
    let memory_model = outcomes
        .last()
        .map(|o| o.memory_model.clone())
        .unwrap_or_default();
    let presets = outcomes
        .into_iter()
        .map(|o| forget_row(&o.name, o.conversations, Cost::of(&o.summary)))
        .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for probe in &probes {
        let key = format!("{} {}", probe.language.as_str(), probe.kind.as_str());
        *counts.entry(key).or_default() += 1;
    }
    let report = ForgetReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        locomo: settings.locomo.display().to_string(),
        zh4o: settings.zh4o.display().to_string(),
        half: settings.half.as_str().to_string(),
        seed: settings.seed,
        window: settings.window,
        probes: counts,
        checksums: checksum_inputs(&[settings.locomo.clone(), settings.zh4o.clone()])?,
        engine: EngineSetup::of(settings.compare.store, &shared, memory_model),
        budget: settings.budget,
        presets,
    };
    if let Some(dir) = &out {
        write_report(dir, &report, &report.markdown(), &[], progress)?;
    }
    Ok(report)
}

/// The scores of one probe: the recall contexts the runner got, then searches and the store.
fn forget_record(
    engine: &Engine,
    user: &UserKey,
    probe: &ForgetProbe,
    asks: &[AskRecord],
) -> Result<ForgetRecord, EvalError> {
    let context_of = |question: usize| {
        let id = format!("{}/q{question}", probe.id);
        asks.iter()
            .find(|a| a.question == id)
            .map_or("", |a| a.context_text.as_str())
    };
    let (about, kept) = (context_of(0), context_of(1));
    let mut in_search = false;
    let mut in_any_search = false;
    for query in [&probe.search, &probe.question, &probe.value] {
        in_search |= search_holds(engine, user, query, &probe.value, false)?;
        in_any_search |= search_holds(engine, user, query, &probe.value, true)?;
    }
    let all = MemoryFilter {
        state: StateFilter::All,
        ..MemoryFilter::default()
    };
    let memories = engine.reader().all(user, &all)?;
    let collateral = memories
        .iter()
        .filter(|m| m.kind.tag() == KindTag::Turn && !probe.statement_times.contains(&m.valid_from))
        .filter(|m| match &m.state {
            MemoryState::Forgotten { reason, .. } => reason.starts_with(ERASE_REASON),
            _ => false,
        })
        .count();
    Ok(ForgetRecord {
        probe: probe.id.clone(),
        language: probe.language.as_str().to_string(),
        topic: probe.topic.clone(),
        kind: probe.kind,
        value: probe.value.clone(),
        last_line: probe.last_line.clone(),
        in_recall: answer_in_context(&probe.value, about),
        in_search,
        in_any_search,
        in_store: memories
            .iter()
            .any(|m| answer_in_context(&probe.value, &m.text)),
        tombstone_reported: TOMBSTONE_MARKERS.iter().any(|m| about.contains(m)),
        tombstone_stored: memories.iter().any(|m| m.metadata.contains_key(TOPIC_KEY)),
        kept_fact_in_context: answer_in_context(&probe.kept_value, kept),
        collateral,
        context: about.to_string(),
    })
}

/// Whether a search for `query` returns a memory holding `value`: as an agent searches, or
/// (`everything`) with superseded memories and no relevance floor.
fn search_holds(
    engine: &Engine,
    user: &UserKey,
    query: &str,
    value: &str,
    everything: bool,
) -> Result<bool, EvalError> {
    let mut request = SearchRequest::new(user.clone(), query);
    request.top_k = Some(SEARCH_TOP_K);
    if everything {
        request.include_superseded = true;
        request.min_relevance = Some(0.0);
    }
    let results = engine.search(&request)?;
    Ok(results
        .hits
        .iter()
        .any(|hit| answer_in_context(value, &hit.memory.text)))
}

fn forget_row(name: &str, records: Vec<ForgetRecord>, cost: Cost) -> ForgetRow {
    let group =
        |key: &dyn Fn(&ForgetRecord) -> String| grouped(&records, key, |g| ForgetScores::of(g));
    ForgetRow {
        preset: name.to_string(),
        overall: ForgetScores::of(&records),
        by_language: group(&|r| r.language.clone()),
        by_topic: group(&|r| format!("{} {}", r.language, r.topic)),
        cost,
        probes: records,
    }
}

impl ForgetReport {
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# mnemos eval probes --kind forget ({} half)\n",
            self.half
        );
        let counts: Vec<String> = self
            .probes
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            md,
            "- hosts: `{}` (en), `{}` (zh); probes: {}; windows of {} host messages; seed {}",
            self.locomo,
            self.zh4o,
            counts.join(", "),
            self.window,
            self.seed
        );
        let _ = writeln!(
            md,
            "- engine: {}, budget {} tokens",
            self.engine.describe(),
            self.budget
        );
        let _ = writeln!(md, "\n## Forget requests\n");
        table(
            &mut md,
            self.presets.iter().map(|r| (r.preset.clone(), &r.overall)),
        );
        let _ = writeln!(md, "\n## By language\n");
        table(
            &mut md,
            self.presets.iter().flat_map(|r| {
                r.by_language
                    .iter()
                    .map(move |(l, s)| (format!("{} ({l})", r.preset), s))
            }),
        );
        let _ = writeln!(md, "\n## By topic\n");
        table(
            &mut md,
            self.presets.iter().flat_map(|r| {
                r.by_topic
                    .iter()
                    .map(move |(t, s)| (format!("{} ({t})", r.preset), s))
            }),
        );
        let _ = writeln!(md, "\n## Misses\n");
        for row in &self.presets {
            for miss in row.probes.iter().filter(|r| missed(r)) {
                let _ = writeln!(
                    md,
                    "- {} {}: \"{}\" (recall {}, search {}, any search {}, store {}, tombstone {})",
                    row.preset,
                    miss.probe,
                    miss.last_line,
                    miss.in_recall,
                    miss.in_search,
                    miss.in_any_search,
                    miss.in_store,
                    miss.tombstone_reported
                );
            }
        }
        let _ = writeln!(md, "\n## Notes\n");
        let _ = writeln!(
            md,
            "- forgotten = the value is in no recall context, no search hit (the probe's search \
             words, its question and the value itself; as an agent searches and with superseded \
             memories and no floor, top {SEARCH_TOP_K}) and no stored memory of any state; \
             tombstone = the recall context about the detail says the user asked to forget it; \
             kept fact = an unrelated fact stated in the same window is in its recall context; \
             other turns erased = turns a request erased besides the detail's two statements \
             (host turns of the same speaker included), on average; \
             wrongly forgotten = a line that only speaks of forgetting left a tombstone or lost \
             the value."
        );
        md
    }
}

/// A probe the default product must get right and did not (shown for every preset).
fn missed(record: &ForgetRecord) -> bool {
    match record.kind {
        ForgetKind::Request => !record.forgotten() || !record.tombstone_reported,
        ForgetKind::NotARequest => !record.in_store || record.tombstone_stored,
    }
}

fn table<'a>(md: &mut String, rows: impl Iterator<Item = (String, &'a ForgetScores)>) {
    use std::fmt::Write as _;
    let share = |x: Option<f64>| x.map_or_else(|| "–".to_string(), f3);
    md.push_str("| preset | requests | **forgotten** | in recall | in search | in any search | in store | tombstone reported | unrelated fact kept | other turns erased | not requests | kept | wrongly forgotten |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (name, s) in rows {
        let _ = writeln!(
            md,
            "| {name} | {} | **{}** | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.requests,
            share(s.forgotten),
            share(s.in_recall),
            share(s.in_search),
            share(s.in_any_search),
            share(s.in_store),
            share(s.tombstone_reported),
            share(s.kept_fact),
            s.collateral
                .map_or_else(|| "–".to_string(), |c| format!("{c:.2}")),
            s.not_requests,
            share(s.not_request_kept),
            share(s.wrongly_forgotten)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: ForgetKind, in_store: bool, tombstone: bool) -> ForgetRecord {
        ForgetRecord {
            probe: "p".into(),
            language: "en".into(),
            topic: "passport".into(),
            kind,
            value: "X4417902".into(),
            last_line: "Please forget my passport number.".into(),
            in_recall: false,
            in_search: false,
            in_any_search: false,
            in_store,
            tombstone_reported: tombstone,
            tombstone_stored: tombstone,
            kept_fact_in_context: true,
            collateral: 0,
            context: String::new(),
        }
    }

    #[test]
    fn a_value_left_anywhere_is_not_forgotten() {
        let gone = record(ForgetKind::Request, false, true);
        assert!(gone.forgotten() && !missed(&gone));
        let stored = record(ForgetKind::Request, true, true);
        assert!(!stored.forgotten() && missed(&stored));
        let mut searched = gone.clone();
        searched.in_any_search = true;
        assert!(!searched.forgotten());
        assert!(missed(&record(ForgetKind::Request, false, false)));
    }

    #[test]
    fn scores_split_requests_from_lines_that_are_not() {
        let records = [
            record(ForgetKind::Request, false, true),
            record(ForgetKind::Request, true, false),
            record(ForgetKind::NotARequest, true, false),
            record(ForgetKind::NotARequest, true, true),
        ];
        let scores = ForgetScores::of(&records);
        assert_eq!(scores.requests, 2);
        assert_eq!(scores.forgotten, Some(0.5));
        assert_eq!(scores.tombstone_reported, Some(0.5));
        assert_eq!(scores.not_requests, 2);
        assert_eq!(scores.wrongly_forgotten, Some(0.5));
        assert_eq!(ForgetScores::of(&[]).forgotten, None);
    }
}
