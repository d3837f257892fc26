//! `eval probes --kind update`: knowledge-update probes ([`crate::update_probes`]), presets
//! side by side, on one half of the templates (the test half unless asked otherwise).
//!
//! Each probe runs as a fresh engine user over its stream; after it the preset recalls with the
//! question (and, for a question about the past, its `as_of`) within `budget` tokens. Scores
//! come from the context text the agent would read, and — for what only the store can tell —
//! from the user's memories right after the question:
//!
//! - **updated** (update, correction, negation probes): the current value is in the context
//!   (for a negation: the line that ends the fact) and no earlier value is presented as
//!   current, i.e. on a line without a [`SUPERSEDED_MARKERS`] word (the negating line itself
//!   excepted);
//! - **stale as current**: an earlier value is presented as current;
//! - **then-valid** (`as_of` probes): the value valid at the asked moment is in the context;
//! - **wrong supersession** (distractor probes): a memory of the first statement was
//!   superseded (it got a `valid_to`) by another person's value, a hypothetical or a quote;
//! - **reinforced** (repeat probes): one current fact memory holds both statements' turns and
//!   counts them (`times_said` ≥ 2) — only a preset that keeps facts can;
//! - **answer current / stale**: the answer model's reply names the expected / a stale value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use mnemos_core::{KindTag, Memory, MemoryFilter, StateFilter, UserKey};
use mnemos_engine::Engine;
use mnemos_presets::variants::DefaultPresets::UnlessSwept;
use mnemos_setup::Config;

use crate::artifacts::{checksum_inputs, InputChecksum};
use crate::dataset::Conversation;
use crate::error::EvalError;
use crate::experiment::{Experiment, Progress, ProgressFn};
use crate::protocol::PreparedConversation;
use crate::runner::{AskRecord, RunOptions};
use crate::scoring::answer_in_context;
use crate::update_probes::{
    update_probes, Half, ProbeKind, ProbeLanguage, ProbeSettings, UpdateProbe,
};

use super::{write_report, Comparison, Cost, EngineSetup};

mod render;

/// Words that mark a context line as no longer current. A preset that keeps a superseded
/// value in the context must say so on its line with one of these for the stale value not to
/// count as presented as current. `(previously:` and `（之前：` are how a fact's line records
/// the value it replaced; `[superseded`, `已被更新` how a preset marks a stale turn.
pub const SUPERSEDED_MARKERS: [&str; 7] = [
    "superseded",
    "no longer current",
    "(previously:",
    "已过时",
    "已被更新",
    "（之前：",
    "（已过时",
];

/// ZH-4O dialogues shorter than this are not used as hosts.
const MIN_HOST_MESSAGES: usize = 200;

/// What `eval probes --kind update` (and `--kind forget`, the same hosts and settings) runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateSettings {
    /// The ZH-4O directory (Chinese hosts).
    pub zh4o: PathBuf,
    /// The LoCoMo file (English hosts).
    pub locomo: PathBuf,
    pub compare: Comparison,
    /// Which half of the templates (reports are made on the test half).
    pub half: Half,
    /// At most this many probes per language (in template order).
    pub probes: Option<usize>,
    /// Host items per probe.
    pub window: usize,
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
    pub half: Half,
    pub seed: u64,
    pub window: usize,
    /// Probes per language.
    pub probes: BTreeMap<String, usize>,
    /// Probes per kind.
    pub kinds: BTreeMap<String, usize>,
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
    pub kind: ProbeKind,
    pub host: String,
    pub expected: String,
    pub stale: Vec<String>,
    pub distractor: Option<String>,
    /// The probe's user lines, in order.
    pub lines: Vec<String>,
    /// The expected value (for a negation: the negating line) is in the context.
    pub current_in_context: bool,
    /// An earlier value is on a line not marked as superseded.
    pub stale_as_current: bool,
    /// Distractor probes: the first statement's memory was superseded.
    pub wrong_supersession: Option<bool>,
    /// Repeat probes: one current fact counts both statements.
    pub reinforced: Option<bool>,
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
    /// The probe's success, by its kind (see the module docs).
    pub fn succeeded(&self) -> bool {
        match self.kind {
            ProbeKind::Update | ProbeKind::Correction | ProbeKind::Negation => {
                self.current_in_context && !self.stale_as_current
            }
            ProbeKind::AsOf => self.current_in_context,
            ProbeKind::Repeat => self.current_in_context && self.reinforced == Some(true),
            ProbeKind::OtherPerson | ProbeKind::Hypothetical | ProbeKind::Quoted => {
                self.current_in_context && self.wrong_supersession != Some(true)
            }
        }
    }
}

/// Shares over a group of probes; each share is over the probes it applies to (`None`: none).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UpdateScores {
    pub probes: usize,
    /// Update, correction and negation probes: updated.
    pub updated: Option<f64>,
    /// Update, correction and negation probes: an earlier value presented as current.
    pub stale_as_current: Option<f64>,
    /// `as_of` probes: the value valid then is in the context.
    pub then_valid: Option<f64>,
    /// Distractor probes: the fact was wrongly superseded.
    pub wrong_supersession: Option<f64>,
    /// Distractor probes: the fact's value is in the context.
    pub distractor_kept: Option<f64>,
    /// Repeat probes: reinforced.
    pub reinforced: Option<f64>,
    /// Every probe: succeeded.
    pub succeeded: f64,
    pub update_hit: f64,
    pub answer_current: f64,
    pub answer_stale: f64,
    pub context_tokens: f64,
}

impl UpdateScores {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a UpdateRecord>) -> UpdateScores {
        let records: Vec<&UpdateRecord> = records.into_iter().collect();
        if records.is_empty() {
            return UpdateScores::default();
        }
        let share = |of: &dyn Fn(&UpdateRecord) -> bool, hit: &dyn Fn(&UpdateRecord) -> bool| {
            let group: Vec<&&UpdateRecord> = records.iter().filter(|r| of(r)).collect();
            (!group.is_empty())
                .then(|| group.iter().filter(|r| hit(r)).count() as f64 / group.len() as f64)
        };
        let all = |_: &UpdateRecord| true;
        let changes = |r: &UpdateRecord| r.kind.changes_the_fact();
        let distractors = |r: &UpdateRecord| r.kind.is_distractor();
        UpdateScores {
            probes: records.len(),
            updated: share(&changes, &UpdateRecord::succeeded),
            stale_as_current: share(&changes, &|r| r.stale_as_current),
            then_valid: share(&|r| r.kind == ProbeKind::AsOf, &|r| r.current_in_context),
            wrong_supersession: share(&distractors, &|r| r.wrong_supersession == Some(true)),
            distractor_kept: share(&distractors, &|r| r.current_in_context),
            reinforced: share(&|r| r.kind == ProbeKind::Repeat, &|r| {
                r.reinforced == Some(true)
            }),
            succeeded: share(&all, &UpdateRecord::succeeded).unwrap_or(0.0),
            update_hit: share(&all, &|r| r.update_hit).unwrap_or(0.0),
            answer_current: share(&all, &|r| r.answer_current).unwrap_or(0.0),
            answer_stale: share(&all, &|r| r.answer_stale).unwrap_or(0.0),
            context_tokens: records.iter().map(|r| r.context_tokens as f64).sum::<f64>()
                / records.len() as f64,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct UpdateRow {
    pub preset: String,
    pub overall: UpdateScores,
    pub by_kind: BTreeMap<String, UpdateScores>,
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
    let probes = per_language(settings, &hosts, "update", update_probes)?;
    let streams: Vec<PreparedConversation> = probes.iter().map(|p| p.stream.clone()).collect();
    let items: usize = streams.iter().map(|s| s.conversation.items.len()).sum();
    progress(Progress::Note(&format!(
        "update probes ({} half): {} probes, {items} messages to stream per preset",
        settings.half.as_str(),
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
        let stored = StoredFacts::read(context.engine, context.user, probe)?;
        let records = run.asks.iter_mut().map(|ask| {
            let record = update_record(probe, ask, &stored);
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
    let report = UpdateReport {
        mnemos: env!("CARGO_PKG_VERSION"),
        dataset: dataset(settings, &hosts, &probes, items)?,
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

/// A generator of probes (`update_probes`, `forget_probes`): one language's settings and a
/// token counter in, its probes out.
pub(super) type ProbeMaker<P> = fn(&ProbeSettings<'_>, &dyn Fn(&str) -> usize) -> Vec<P>;

/// Every probe `make` gives for the settings' half, in both languages (at most `probes` per
/// language); an error naming `what` when none could be placed.
pub(super) fn per_language<P>(
    settings: &UpdateSettings,
    hosts: &[(ProbeLanguage, Vec<Conversation>)],
    what: &str,
    make: ProbeMaker<P>,
) -> Result<Vec<P>, EvalError> {
    let count_tokens = |text: &str| mnemos_engine::primitives::tokens(text);
    let mut probes: Vec<P> = Vec::new();
    for (language, hosts) in hosts {
        let made = ProbeSettings {
            half: settings.half,
            language: *language,
            hosts,
            seed: settings.seed,
            window: settings.window,
        };
        let mut generated = make(&made, &count_tokens);
        generated.truncate(settings.probes.unwrap_or(usize::MAX));
        probes.extend(generated);
    }
    if probes.is_empty() {
        return Err(EvalError::Invalid(format!(
            "no {what} probe could be placed in the hosts"
        )));
    }
    Ok(probes)
}

fn dataset(
    settings: &UpdateSettings,
    hosts: &[(ProbeLanguage, Vec<Conversation>)],
    probes: &[UpdateProbe],
    items: usize,
) -> Result<UpdateDataset, EvalError> {
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for probe in probes {
        *kinds.entry(probe.kind.as_str().to_string()).or_default() += 1;
    }
    let count = |language: ProbeLanguage| probes.iter().filter(|p| p.language == language).count();
    Ok(UpdateDataset {
        locomo: settings.locomo.display().to_string(),
        zh4o: settings.zh4o.display().to_string(),
        half: settings.half,
        seed: settings.seed,
        window: settings.window,
        probes: hosts
            .iter()
            .map(|(l, _)| (l.as_str().to_string(), count(*l)))
            .collect(),
        kinds,
        hosts: hosts
            .iter()
            .map(|(l, h)| (l.as_str().to_string(), h.len()))
            .collect(),
        mean_stream_items: items as f64 / probes.len().max(1) as f64,
        checksums: checksum_inputs(&[settings.locomo.clone(), settings.zh4o.clone()])?,
    })
}

/// The host conversations per language: LoCoMo's for English, ZH-4O's long dialogues for
/// Chinese.
pub(super) fn load_hosts(
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

/// What the store says of a probe's statement right after the question.
#[derive(Default)]
struct StoredFacts {
    /// A memory whose provenance holds the first statement's turn has an end of validity.
    statement_superseded: bool,
    /// A current fact memory holds both statements' turns and counts them.
    reinforced: bool,
}

impl StoredFacts {
    fn read(
        engine: &Engine,
        user: &UserKey,
        probe: &UpdateProbe,
    ) -> Result<StoredFacts, EvalError> {
        let filter = MemoryFilter {
            state: StateFilter::All,
            ..MemoryFilter::default()
        };
        let memories = engine.reader().all(user, &filter)?;
        let turn_of = |text: &str| {
            memories
                .iter()
                .find(|m| m.kind.tag() == KindTag::Turn && m.text == text)
                .and_then(|m| m.provenance.first().copied())
        };
        let Some(statement) = turn_of(probe.statement()) else {
            return Ok(StoredFacts::default());
        };
        let holds = |m: &&Memory| m.provenance.contains(&statement);
        // Superseded by the distractor's line itself: a memory of its turn replaced it (host
        // lines of the same speaker may state the same slot for real, and are not counted).
        let distractor = probe
            .distractor
            .as_ref()
            .and_then(|_| probe.lines.get(1))
            .and_then(|t| turn_of(t));
        let from_distractor = |id: mnemos_core::MemoryId| {
            memories
                .iter()
                .find(|m| m.id == id)
                .is_some_and(|m| distractor.is_some_and(|d| m.provenance.contains(&d)))
        };
        // A preset that ends a memory without naming its successor is judged by the time.
        let distractor_time = probe
            .lines
            .get(1)
            .filter(|_| probe.distractor.is_some())
            .and_then(|text| {
                memories
                    .iter()
                    .find(|m| m.kind.tag() == KindTag::Turn && &m.text == text)
            })
            .map(|m| m.valid_from);
        let statement_superseded = memories
            .iter()
            .filter(holds)
            .any(|m| match m.superseded_by {
                Some(by) => from_distractor(by),
                None => m.valid_to.is_some() && m.valid_to == distractor_time,
            });
        let repeat = probe.lines.get(1).and_then(|text| turn_of(text));
        let reinforced = probe.kind == ProbeKind::Repeat
            && repeat.is_some_and(|repeat| {
                memories.iter().filter(holds).any(|m| {
                    m.kind.tag() == KindTag::Fact
                        && m.is_active()
                        && m.is_current()
                        && m.provenance.contains(&repeat)
                        && m.metrics.times_said.unwrap_or(1) >= 2
                })
            });
        Ok(StoredFacts {
            statement_superseded,
            reinforced,
        })
    }
}

/// The scores of one ask.
fn update_record(probe: &UpdateProbe, ask: &AskRecord, stored: &StoredFacts) -> UpdateRecord {
    let context = ask.context_text.as_str();
    let answer = ask.answer.as_deref().unwrap_or("");
    let current_in_context = match probe.negation() {
        Some(negation) => states(context, negation),
        None => answer_in_context(&probe.expected, context),
    };
    // The probe's own later lines (a correction "…, not Tallinn", a negation) name the stale
    // value without presenting it as current.
    let later: Vec<&str> = probe.lines.iter().skip(1).map(String::as_str).collect();
    let stale_as_current = probe
        .stale
        .iter()
        .any(|stale| stale_as_current_except(stale, context, &later));
    UpdateRecord {
        probe: probe.id.clone(),
        language: probe.language.as_str().to_string(),
        slot: probe.slot.as_str().to_string(),
        kind: probe.kind,
        host: probe.host.clone(),
        expected: probe.expected.clone(),
        stale: probe.stale.clone(),
        distractor: probe.distractor.clone(),
        lines: probe.lines.clone(),
        current_in_context,
        stale_as_current,
        wrong_supersession: probe
            .kind
            .is_distractor()
            .then_some(stored.statement_superseded),
        reinforced: (probe.kind == ProbeKind::Repeat).then_some(stored.reinforced),
        update_hit: ask.evidence_in_context,
        answer: ask.answer.clone(),
        answer_current: answer_in_context(&probe.expected, answer),
        answer_stale: probe.stale.iter().any(|s| answer_in_context(s, answer)),
        context_items: ask.context_items,
        context_tokens: ask.context_tokens,
        recall_ms: ask.recall_ms,
        model_error: ask.model_error.clone(),
        question: ask.question_text.clone(),
        context_text: ask.context_text.clone(),
    }
}

/// A context line's words without its item prefix (`- [round 12] `) and speaker (`Ann: `).
fn said(line: &str) -> &str {
    let line = line.trim_start_matches("- ");
    let line = match line.strip_prefix('[') {
        Some(rest) => rest.split_once("] ").map_or(rest, |(_, said)| said),
        None => line,
    };
    match line.split_once(": ") {
        Some((speaker, said)) if speaker.chars().count() <= 40 && !speaker.contains(' ') => said,
        _ => line,
    }
}

/// Whether some line of `context` says `text` (the line within the text or the text within the
/// line: a fact's line holds the clause that stated it).
fn states(context: &str, text: &str) -> bool {
    let text = text.trim();
    context.lines().any(|line| {
        let said = said(line).trim();
        !said.is_empty()
            && (said.contains(text) || (said.chars().count() >= 8 && text.contains(said)))
    })
}

/// Whether `stale` appears on a line of `context` that no [`SUPERSEDED_MARKERS`] word marks.
pub fn stale_as_current(stale: &str, context: &str) -> bool {
    stale_as_current_except(stale, context, &[])
}

/// [`stale_as_current`], not counting lines that state one of `later` (the lines that end or
/// correct the fact name the value they replace).
fn stale_as_current_except(stale: &str, context: &str, later: &[&str]) -> bool {
    context.lines().any(|line| {
        let lower = line.to_lowercase();
        let replacing = later.iter().any(|l| states(line, l));
        answer_in_context(stale, line)
            && !replacing
            && !SUPERSEDED_MARKERS.iter().any(|m| lower.contains(m))
    })
}

/// `records` grouped by `key`, each group scored by `score`.
pub(super) fn grouped<R, S>(
    records: &[R],
    key: impl Fn(&R) -> String,
    score: impl Fn(Vec<&R>) -> S,
) -> BTreeMap<String, S> {
    let mut groups: BTreeMap<String, Vec<&R>> = BTreeMap::new();
    for record in records {
        groups.entry(key(record)).or_default().push(record);
    }
    groups.into_iter().map(|(k, g)| (k, score(g))).collect()
}

fn update_row(name: &str, records: Vec<UpdateRecord>, cost: Cost) -> UpdateRow {
    let group =
        |key: &dyn Fn(&UpdateRecord) -> String| grouped(&records, key, |g| UpdateScores::of(g));
    UpdateRow {
        preset: name.to_string(),
        overall: UpdateScores::of(&records),
        by_kind: group(&|r| r.kind.as_str().to_string()),
        by_language: group(&|r| r.language.clone()),
        by_slot: group(&|r| r.slot.clone()),
        cost,
        probes: records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::PresetAccumulator;

    fn record(kind: ProbeKind, current: bool, stale: bool) -> UpdateRecord {
        UpdateRecord {
            probe: "p".into(),
            language: "en".into(),
            slot: "residence".into(),
            kind,
            host: "h".into(),
            expected: "Porto".into(),
            stale: vec!["Tallinn".into()],
            distractor: None,
            lines: Vec::new(),
            current_in_context: current,
            stale_as_current: stale,
            wrong_supersession: kind.is_distractor().then_some(false),
            reinforced: None,
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
        let context = "- [round 3] Ann: I live in Porto now.\n- [round 1] Ann: I live in Tallinn (superseded).";
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
            "- [round 9] Ann: home is Porto now (previously: Tallinn, until 2023-05-01)"
        ));
        assert!(!stale_as_current(
            "洛阳",
            "我现在住在厦门（之前：洛阳，至2024-03-02）"
        ));
    }

    #[test]
    fn the_line_that_ends_a_fact_does_not_present_it_as_current() {
        let negation = "I don't live in Tallinn anymore.";
        let context = "## facts\n- [round 5] Ann: I don't live in Tallinn anymore.\n";
        assert!(states(context, negation));
        assert!(!stale_as_current_except("Tallinn", context, &[negation]));
        let both = "- [round 1] Ann: By the way, I live in Tallinn these days.\n- [round 5] Ann: I don't live in Tallinn anymore.";
        assert!(stale_as_current_except("Tallinn", both, &[negation]));
    }

    #[test]
    fn success_depends_on_the_kind() {
        assert!(record(ProbeKind::Update, true, false).succeeded());
        assert!(!record(ProbeKind::Update, true, true).succeeded());
        assert!(!record(ProbeKind::Update, false, false).succeeded());
        assert!(record(ProbeKind::AsOf, true, true).succeeded());
        let mut wrong = record(ProbeKind::OtherPerson, true, false);
        assert!(wrong.succeeded());
        wrong.wrong_supersession = Some(true);
        assert!(!wrong.succeeded());
    }

    #[test]
    fn rows_split_by_kind_language_and_slot() {
        let cost = Cost::of(&PresetAccumulator::default().summarize("x", 0, 0.0));
        let row = update_row(
            "x",
            vec![
                record(ProbeKind::Update, true, false),
                record(ProbeKind::Correction, true, true),
                record(ProbeKind::OtherPerson, true, false),
            ],
            cost,
        );
        assert_eq!(row.overall.probes, 3);
        assert_eq!(row.overall.updated, Some(0.5));
        assert_eq!(row.overall.stale_as_current, Some(0.5));
        assert_eq!(row.overall.wrong_supersession, Some(0.0));
        assert_eq!(row.overall.then_valid, None);
        assert_eq!(row.by_kind["update"].probes, 1);
        assert_eq!(UpdateScores::of(&[]), UpdateScores::default());
    }
}
