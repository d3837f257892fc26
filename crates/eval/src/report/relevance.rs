//! `eval relevance`: is a hit's `relevance` a calibrated probability that it is evidence, the
//! same on every query, and what does the relevance floor cost and save?
//!
//! Every conversation of a LoCoMo, PerLTQA or MemDaily file is written into its own user. Each question
//! is then asked against its own conversation (the gold items are evidence, the rest are not)
//! and against `others` other conversations (where nothing is evidence: the questions a
//! model would otherwise never see unanswered). Every search keeps its best [`DEPTH`] hits with
//! no floor, so the report can apply any floor afterwards. Then queries about topics no host
//! mentions (`data/unrelated_queries.json`, English and Chinese) are asked against every host
//! of their language: the dataset's conversations, ZH-4O dialogues for Chinese (`zh4o`), and
//! tiny stores of one to five memories, whose matching queries measure what the floor costs
//! a new user. The report holds the reliability table and ECE of the relevance of own and
//! cross-conversation hits, the share of unrelated queries that return nothing at the floor,
//! recall at the floor against no floor, and a sweep of floors. `dump` writes every search's
//! hits with their relevance features, the training data of `mnemos train relevance`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use mnemos_core::retrieval::Hit;
use mnemos_core::{Scope, SystemClock, TurnId, UserKey};
use mnemos_engine::{Engine, EngineConfig, NewTurn, SearchRequest};
use mnemos_setup::Config;

use crate::artifacts::OutDir;
use crate::dataset::RetrievalDataset;
use crate::error::EvalError;
use crate::experiment::{open_engine, Progress, ProgressFn, StoreKind};
use crate::format::{load_retrieval_dataset, QuestionDataset};
use crate::metrics::Ranking;

use super::DumpFile;

/// Hits kept per search (the floor is applied to them afterwards).
pub const DEPTH: usize = 30;
/// Recall cut-offs reported.
const KS: [usize; 3] = [1, 5, 10];
/// Floors of the sweep table.
const SWEEP: [f32; 11] = [
    0.0, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2,
];
/// Bins of the reliability table.
pub const BINS: usize = 10;
/// The engine's agent for every written turn.
const AGENT: &str = "eval";
/// At most this many of the dataset's conversations host the unrelated queries (MemDaily has
/// thousands of short ones).
const DATASET_HOSTS: usize = 10;
/// Messages per session of a ZH-4O host.
const ZH4O_SESSION: usize = 100;

/// The unrelated queries and tiny stores, written for this evaluation (no dataset text).
const UNRELATED: &str = include_str!("../../data/unrelated_queries.json");

/// What `eval relevance` runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct RelevanceSettings {
    /// A LoCoMo file or a PerLTQA directory or file.
    pub path: PathBuf,
    pub dataset: QuestionDataset,
    /// A ZH-4O directory whose first `zh4o_dialogues` dialogues host the Chinese unrelated
    /// queries.
    pub zh4o: Option<PathBuf>,
    pub zh4o_dialogues: usize,
    /// Only the first N conversations.
    pub limit: Option<usize>,
    /// Other conversations each question is also asked against.
    pub others: usize,
    /// The floor the report is about (default: the configured `retrieval.min_relevance`).
    pub floor: Option<f32>,
    pub store: StoreKind,
    pub write_batch: usize,
    /// Every search's hits with their relevance features, one JSON line per search.
    pub dump: Option<PathBuf>,
    /// Write report.md and report.json here.
    pub out: Option<PathBuf>,
    pub overwrite: bool,
}

/// The query list of `data/unrelated_queries.json`.
#[derive(Debug, Deserialize)]
struct UnrelatedData {
    queries: Vec<UnrelatedQuery>,
    tiny_stores: Vec<TinyStore>,
}

#[derive(Debug, Clone, Deserialize)]
struct UnrelatedQuery {
    lang: String,
    text: String,
}

#[derive(Debug, Clone, Deserialize)]
struct TinyStore {
    lang: String,
    memories: Vec<String>,
    related: Vec<RelatedQuery>,
}

#[derive(Debug, Clone, Deserialize)]
struct RelatedQuery {
    query: String,
    memory: usize,
}

/// One row of a reliability table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bin {
    pub from: f64,
    pub to: f64,
    pub count: usize,
    pub mean_predicted: f64,
    /// The share of the bin's hits that are evidence.
    pub observed: f64,
}

/// Predicted probabilities against outcomes in [`BINS`] equal-width bins, and the expected
/// calibration error (the bins' |mean predicted − observed| weighted by their counts).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reliability {
    pub hits: usize,
    pub evidence: usize,
    pub bins: Vec<Bin>,
    pub ece: f64,
}

impl Reliability {
    /// The table of (predicted probability, is evidence) pairs.
    pub fn of(pairs: &[(f64, bool)]) -> Self {
        let mut sums = [(0usize, 0.0f64, 0usize); BINS];
        for &(p, y) in pairs {
            let bin = ((p * BINS as f64) as usize).min(BINS - 1);
            sums[bin].0 += 1;
            sums[bin].1 += p;
            sums[bin].2 += usize::from(y);
        }
        let total = pairs.len().max(1) as f64;
        let mut ece = 0.0;
        let bins = sums
            .iter()
            .enumerate()
            .map(|(i, &(count, p, y))| {
                let n = count.max(1) as f64;
                let (mean_predicted, observed) = (p / n, y as f64 / n);
                ece += count as f64 / total * (mean_predicted - observed).abs();
                Bin {
                    from: i as f64 / BINS as f64,
                    to: (i + 1) as f64 / BINS as f64,
                    count,
                    mean_predicted,
                    observed,
                }
            })
            .collect();
        Reliability {
            hits: pairs.len(),
            evidence: pairs.iter().filter(|p| p.1).count(),
            bins,
            ece,
        }
    }

    /// The table in markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| predicted | hits | mean predicted | observed evidence |\n|---|---|---|---|"
        );
        for b in &self.bins {
            let _ = writeln!(
                out,
                "| {:.1}–{:.1} | {} | {:.3} | {:.3} |",
                b.from, b.to, b.count, b.mean_predicted, b.observed
            );
        }
        let _ = writeln!(
            out,
            "\nECE {:.4} over {} hits ({} evidence)",
            self.ece, self.hits, self.evidence
        );
        out
    }
}

/// One hit as the report keeps it.
#[derive(Debug, Clone, Serialize)]
struct Judged {
    label: String,
    relevance: f32,
    evidence: bool,
}

/// One search's hits, best first (no floor applied), and what it was.
#[derive(Debug, Clone)]
struct Searched {
    hits: Vec<Judged>,
    gold: Vec<String>,
    /// Query terms found in the returned memories (for unrelated queries: what they share).
    shared: BTreeSet<String>,
}

impl Searched {
    /// The labels of the hits at or above `floor`, best first.
    fn at(&self, floor: f32) -> Vec<&str> {
        self.hits
            .iter()
            .filter(|h| h.relevance >= floor)
            .map(|h| h.label.as_str())
            .collect()
    }

    fn empty_at(&self, floor: f32) -> bool {
        self.hits.iter().all(|h| h.relevance < floor)
    }
}

/// Recall at [`KS`] of own-conversation questions under one floor.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FloorRecall {
    pub floor: f32,
    pub recall: BTreeMap<usize, f64>,
}

/// An unrelated query that shares analyzed terms with a host it was asked against.
#[derive(Debug, Clone, Serialize)]
pub struct SharedTerms {
    pub query: String,
    pub host: String,
    pub terms: Vec<String>,
}

/// One row of the floor sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub floor: f32,
    pub recall: BTreeMap<usize, f64>,
    /// Share of cross-conversation searches that return nothing.
    pub cross_empty: f64,
    /// Share of (unrelated query, host) searches that return nothing.
    pub unrelated_empty: f64,
    /// Share of unrelated queries that return nothing on every host they were asked on.
    pub unrelated_queries_empty: f64,
    /// Share of the tiny stores' matching queries whose memory is still returned.
    pub tiny_related_kept: f64,
}

/// Unrelated searches under the floor, by host kind and language.
#[derive(Debug, Clone, Serialize)]
pub struct UnrelatedGroup {
    pub hosts: String,
    pub lang: String,
    pub searches: usize,
    pub empty: usize,
}

#[derive(Debug, Serialize)]
pub struct RelevanceReport {
    pub dataset: String,
    pub path: String,
    pub embedder: String,
    pub floor: f32,
    pub conversations: usize,
    pub questions: usize,
    /// Hits of each question against its own conversation.
    pub own: Reliability,
    /// Hits of the questions asked against other conversations (nothing is evidence).
    pub cross: Reliability,
    /// Both together.
    pub all: Reliability,
    pub no_floor: FloorRecall,
    pub at_floor: FloorRecall,
    pub unrelated: Vec<UnrelatedGroup>,
    pub unrelated_queries: usize,
    pub sweep: Vec<SweepRow>,
    pub shared_terms: Vec<SharedTerms>,
    pub notes: Vec<String>,
}

/// Every search the evaluation made, by kind.
#[derive(Default)]
struct Tally {
    own: Vec<Searched>,
    cross: Vec<Searched>,
    /// (query index, host kind, host, lang, search).
    unrelated: Vec<(usize, &'static str, String, String, Searched)>,
    /// Matching queries of the tiny stores.
    related: Vec<Searched>,
}

/// A host written into the engine: its user and the label of each turn.
struct Host {
    name: String,
    kind: &'static str,
    lang: String,
    user: UserKey,
}

/// Run `eval relevance` (see the module docs).
pub fn evaluate(
    config: &Config,
    settings: &RelevanceSettings,
    progress: ProgressFn<'_>,
) -> Result<RelevanceReport, EvalError> {
    let format = settings.dataset.resolve(&settings.path)?;
    let floor = settings.floor.unwrap_or(config.retrieval.min_relevance);
    mnemos_core::retrieval::validate_min_relevance("--floor", floor)?;
    let data: UnrelatedData = serde_json::from_str(UNRELATED)
        .map_err(|e| EvalError::Invalid(format!("unrelated_queries.json: {e}")))?;
    let mut dataset = load_retrieval_dataset(&settings.path, format)?;
    if let Some(limit) = settings.limit {
        dataset.conversations.truncate(limit);
    }
    if dataset.conversations.len() < 2 && settings.others > 0 {
        return Err(EvalError::Invalid(
            "asking questions against other conversations needs at least two".into(),
        ));
    }
    let scratch = tempfile::tempdir().map_err(EvalError::io(
        "create",
        std::path::Path::new("a scratch directory"),
    ))?;
    let store = settings.store.open(scratch.path(), "relevance")?;
    let embedder = mnemos_setup::embedder(config)?;
    let (engine, _) = open_engine(
        config,
        &EngineConfig::with_preset("retrieval"),
        store,
        &embedder,
        Arc::new(SystemClock),
    )?;
    let run = Run {
        engine: &engine,
        tenant: &config.tenant,
        write_batch: settings.write_batch.max(1),
        progress,
    };
    let mut labels: HashMap<TurnId, String> = HashMap::new();
    let mut dump = DumpFile::open(settings.dump.as_deref())?;
    let mut tally = Tally::default();
    run.questions(
        &dataset,
        settings.others,
        &mut labels,
        &mut tally,
        dump.as_mut(),
    )?;
    let mut hosts = run.dataset_hosts(&dataset)?;
    if let Some(dir) = &settings.zh4o {
        hosts.extend(run.zh4o_hosts(dir, settings.zh4o_dialogues, &mut labels)?);
    }
    let tiny = run.tiny_hosts(&data.tiny_stores, &mut labels)?;
    run.unrelated(
        &data.queries,
        &hosts,
        &tiny,
        &labels,
        &mut tally,
        dump.as_mut(),
    )?;
    run.related(&data.tiny_stores, &tiny, &labels, &mut tally)?;
    if let Some(dump) = dump {
        dump.finish()?;
    }
    let report = report(
        &dataset,
        settings,
        &engine,
        floor,
        data.queries.len(),
        &tally,
    );
    if let Some(out) = &settings.out {
        let dir = OutDir::create(out, settings.overwrite)?;
        dir.write_json("report.json", &report)?;
        dir.write_text("report.md", &report.markdown())?;
    }
    Ok(report)
}

struct Run<'a> {
    engine: &'a Engine,
    tenant: &'a str,
    write_batch: usize,
    progress: ProgressFn<'a>,
}

impl Run<'_> {
    /// Write `turns` in batches; remembers each turn's label.
    fn write(
        &self,
        turns: Vec<(NewTurn, String)>,
        labels: &mut HashMap<TurnId, String>,
    ) -> Result<(), EvalError> {
        let mut turns = turns.into_iter().peekable();
        while turns.peek().is_some() {
            let (batch, names): (Vec<NewTurn>, Vec<String>) =
                turns.by_ref().take(self.write_batch).unzip();
            let added = self.engine.add(batch)?.turns;
            for (added, name) in added.into_iter().zip(names) {
                labels.insert(added.turn_id, name);
            }
        }
        Ok(())
    }

    /// Write every conversation, then ask each question against its own and `others` other
    /// conversations.
    fn questions(
        &self,
        dataset: &RetrievalDataset,
        others: usize,
        labels: &mut HashMap<TurnId, String>,
        tally: &mut Tally,
        mut dump: Option<&mut DumpFile>,
    ) -> Result<(), EvalError> {
        let conversations = &dataset.conversations;
        let questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
        (self.progress)(Progress::Stage {
            name: "write",
            total: conversations.len() as u64,
        });
        for conversation in conversations {
            let turns = conversation
                .items
                .iter()
                .map(|item| {
                    let scope = conversation.scope(self.tenant, AGENT, &item.session)?;
                    Ok((item.new_turn(scope), label(&conversation.id, &item.label)))
                })
                .collect::<Result<Vec<_>, mnemos_core::Error>>()?;
            self.write(turns, labels)?;
            (self.progress)(Progress::Step(1));
        }
        (self.progress)(Progress::StageDone);
        (self.progress)(Progress::Stage {
            name: "ask",
            total: (questions * (1 + others)) as u64,
        });
        for (at, conversation) in conversations.iter().enumerate() {
            let hosts = (0..=others).map(|o| &conversations[(at + o) % conversations.len()]);
            for (o, host) in hosts.enumerate() {
                let user = UserKey::new(self.tenant.to_string(), host.id.clone())?;
                for question in &conversation.questions {
                    let gold: Vec<String> = if o == 0 {
                        question.gold.iter().map(|g| label(&host.id, g)).collect()
                    } else {
                        Vec::new()
                    };
                    let searched = self.search(&user, &question.text, gold, labels)?;
                    let kind = if o == 0 { "own" } else { "cross" };
                    if let Some(out) = dump.as_deref_mut() {
                        out.write(&dump_line(
                            kind,
                            &conversation.id,
                            &host.id,
                            &question.text,
                            &searched,
                        ))?;
                    }
                    match o {
                        0 => tally.own.push(searched.searched),
                        _ => tally.cross.push(searched.searched),
                    }
                    (self.progress)(Progress::Step(1));
                }
            }
        }
        (self.progress)(Progress::StageDone);
        Ok(())
    }

    /// The best [`DEPTH`] hits for `query` in `user`'s memories, with no floor.
    fn search(
        &self,
        user: &UserKey,
        query: &str,
        gold: Vec<String>,
        labels: &HashMap<TurnId, String>,
    ) -> Result<SearchOutcome, EvalError> {
        let mut request = SearchRequest::new(user.clone(), query);
        request.top_k = Some(DEPTH);
        request.min_relevance = Some(0.0);
        let results = self.engine.search(&request)?;
        let label_of = |hit: &Hit| {
            let first = hit.memory.provenance.first()?;
            labels.get(first).cloned()
        };
        let mut hits = Vec::with_capacity(results.hits.len());
        let mut features = Vec::with_capacity(results.hits.len());
        let mut shared = BTreeSet::new();
        for hit in &results.hits {
            let Some(name) = label_of(hit) else {
                continue;
            };
            shared.extend(hit.breakdown.matched_terms.iter().cloned());
            let signal = hit.breakdown.relevance.as_ref();
            features.push(signal.map(|s| s.features.clone()).unwrap_or_default());
            hits.push(Judged {
                evidence: gold.contains(&name),
                label: name,
                relevance: hit.relevance,
            });
        }
        Ok(SearchOutcome {
            searched: Searched { hits, gold, shared },
            features,
        })
    }

    /// The dataset's conversations as hosts of the unrelated queries of its language
    /// (MemDaily is Chinese, LoCoMo and PerLTQA English).
    fn dataset_hosts(&self, dataset: &RetrievalDataset) -> Result<Vec<Host>, EvalError> {
        let lang = if dataset.name == "memdaily" {
            "zh"
        } else {
            "en"
        };
        dataset
            .conversations
            .iter()
            .take(DATASET_HOSTS)
            .map(|c| {
                Ok(Host {
                    name: c.id.clone(),
                    kind: "dataset",
                    lang: lang.into(),
                    user: UserKey::new(self.tenant.to_string(), c.id.clone())?,
                })
            })
            .collect()
    }

    /// The first `count` ZH-4O dialogues, written as hosts of Chinese unrelated queries.
    fn zh4o_hosts(
        &self,
        dir: &std::path::Path,
        count: usize,
        labels: &mut HashMap<TurnId, String>,
    ) -> Result<Vec<Host>, EvalError> {
        let zh4o = crate::zh4o::load_zh4o(dir)?;
        let mut hosts = Vec::new();
        for dialogue in zh4o.dialogues.iter().take(count) {
            let name = format!("zh4o-{}", dialogue.index);
            let turns = dialogue
                .messages
                .iter()
                .map(|m| {
                    let session = format!("s{}", m.index / ZH4O_SESSION);
                    let scope = Scope::new(self.tenant, name.clone(), AGENT, session)?;
                    let mut turn = NewTurn::user(scope, m.text.clone());
                    turn.role = m.role;
                    turn.speaker = Some(m.sender.clone());
                    Ok((turn, label(&name, &m.index.to_string())))
                })
                .collect::<Result<Vec<_>, mnemos_core::Error>>()?;
            self.write(turns, labels)?;
            hosts.push(Host {
                user: UserKey::new(self.tenant.to_string(), name.clone())?,
                name,
                kind: "zh4o",
                lang: "zh".into(),
            });
        }
        Ok(hosts)
    }

    /// Each tiny store written into a user of its own, its memories as the user's messages.
    fn tiny_hosts(
        &self,
        stores: &[TinyStore],
        labels: &mut HashMap<TurnId, String>,
    ) -> Result<Vec<Host>, EvalError> {
        let mut hosts = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let name = format!("tiny-{i}");
            let turns = store
                .memories
                .iter()
                .enumerate()
                .map(|(m, text)| {
                    let scope = Scope::new(self.tenant, name.clone(), AGENT, "s0")?;
                    let turn = NewTurn::user(scope, text.clone());
                    Ok((turn, label(&name, &m.to_string())))
                })
                .collect::<Result<Vec<_>, mnemos_core::Error>>()?;
            self.write(turns, labels)?;
            hosts.push(Host {
                user: UserKey::new(self.tenant.to_string(), name.clone())?,
                name,
                kind: "tiny",
                lang: store.lang.clone(),
            });
        }
        Ok(hosts)
    }

    /// Every unrelated query against every host of its language.
    fn unrelated(
        &self,
        queries: &[UnrelatedQuery],
        hosts: &[Host],
        tiny: &[Host],
        labels: &HashMap<TurnId, String>,
        tally: &mut Tally,
        mut dump: Option<&mut DumpFile>,
    ) -> Result<(), EvalError> {
        for (i, query) in queries.iter().enumerate() {
            for host in hosts.iter().chain(tiny).filter(|h| h.lang == query.lang) {
                let searched = self.search(&host.user, &query.text, Vec::new(), labels)?;
                if let Some(out) = dump.as_deref_mut() {
                    let group = format!("unrelated-{i}");
                    out.write(&dump_line(
                        "unrelated",
                        &group,
                        &host.name,
                        &query.text,
                        &searched,
                    ))?;
                }
                let entry = (
                    i,
                    host.kind,
                    host.name.clone(),
                    query.lang.clone(),
                    searched.searched,
                );
                tally.unrelated.push(entry);
            }
        }
        Ok(())
    }

    /// The tiny stores' matching queries.
    fn related(
        &self,
        stores: &[TinyStore],
        tiny: &[Host],
        labels: &HashMap<TurnId, String>,
        tally: &mut Tally,
    ) -> Result<(), EvalError> {
        for (store, host) in stores.iter().zip(tiny) {
            for related in &store.related {
                let gold = vec![label(&host.name, &related.memory.to_string())];
                let searched = self.search(&host.user, &related.query, gold, labels)?;
                tally.related.push(searched.searched);
            }
        }
        Ok(())
    }
}

/// A search's hits and each hit's relevance features (for the dump).
struct SearchOutcome {
    searched: Searched,
    features: Vec<Vec<f32>>,
}

/// A host's item label, unique across hosts.
fn label(host: &str, item: &str) -> String {
    format!("{host}/{item}")
}

/// One dump line: what was asked where, the gold labels and each hit's label, evidence,
/// relevance and features.
fn dump_line(
    kind: &str,
    group: &str,
    host: &str,
    query: &str,
    outcome: &SearchOutcome,
) -> serde_json::Value {
    let hits: Vec<serde_json::Value> = outcome
        .searched
        .hits
        .iter()
        .zip(&outcome.features)
        .map(|(h, f)| serde_json::json!([h.label, h.evidence, h.relevance, f]))
        .collect();
    serde_json::json!({
        "kind": kind,
        "group": group,
        "host": host,
        "query": query,
        "gold": outcome.searched.gold,
        "hits": hits,
    })
}

/// Recall at [`KS`] of `searches` under `floor`.
fn recall_at(searches: &[Searched], floor: f32) -> FloorRecall {
    let mut sums = [0.0f64; KS.len()];
    for s in searches {
        let ranked = s.at(floor);
        let ranking = Ranking::new(&ranked, &s.gold);
        for (sum, k) in sums.iter_mut().zip(KS) {
            *sum += ranking.recall_at(k);
        }
    }
    let n = searches.len().max(1) as f64;
    FloorRecall {
        floor,
        recall: KS.iter().zip(sums).map(|(k, s)| (*k, s / n)).collect(),
    }
}

fn pairs(searches: &[Searched]) -> Vec<(f64, bool)> {
    searches
        .iter()
        .flat_map(|s| s.hits.iter().map(|h| (f64::from(h.relevance), h.evidence)))
        .collect()
}

fn share(count: usize, total: usize) -> f64 {
    count as f64 / total.max(1) as f64
}

fn sweep_row(tally: &Tally, floor: f32, queries: usize) -> SweepRow {
    let empty = |list: &[Searched]| list.iter().filter(|s| s.empty_at(floor)).count();
    let unrelated_empty = tally
        .unrelated
        .iter()
        .filter(|u| u.4.empty_at(floor))
        .count();
    let mut found_somewhere: BTreeSet<usize> = BTreeSet::new();
    for u in tally.unrelated.iter().filter(|u| !u.4.empty_at(floor)) {
        found_somewhere.insert(u.0);
    }
    let asked: BTreeSet<usize> = tally.unrelated.iter().map(|u| u.0).collect();
    let kept = tally
        .related
        .iter()
        .filter(|s| s.hits.iter().any(|h| h.evidence && h.relevance >= floor))
        .count();
    SweepRow {
        floor,
        recall: recall_at(&tally.own, floor).recall,
        cross_empty: share(empty(&tally.cross), tally.cross.len()),
        unrelated_empty: share(unrelated_empty, tally.unrelated.len()),
        unrelated_queries_empty: share(
            asked.len() - found_somewhere.len(),
            asked.len().min(queries),
        ),
        tiny_related_kept: share(kept, tally.related.len()),
    }
}

fn report(
    dataset: &RetrievalDataset,
    settings: &RelevanceSettings,
    engine: &Engine,
    floor: f32,
    queries: usize,
    tally: &Tally,
) -> RelevanceReport {
    let mut groups: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let mut shared_terms = Vec::new();
    for (i, kind, host, lang, searched) in &tally.unrelated {
        let entry = groups.entry((kind.to_string(), lang.clone())).or_default();
        entry.0 += 1;
        entry.1 += usize::from(searched.empty_at(floor));
        if !searched.shared.is_empty() {
            shared_terms.push(SharedTerms {
                query: format!("#{i}"),
                host: host.clone(),
                terms: searched.shared.iter().cloned().collect(),
            });
        }
    }
    let mut sweep: Vec<SweepRow> = SWEEP
        .iter()
        .map(|&f| sweep_row(tally, f, queries))
        .collect();
    if !SWEEP.contains(&floor) {
        sweep.push(sweep_row(tally, floor, queries));
        sweep.sort_by(|a, b| a.floor.total_cmp(&b.floor));
    }
    let mut all = tally.own.clone();
    all.extend(tally.cross.iter().cloned());
    RelevanceReport {
        dataset: dataset.name.clone(),
        path: settings.path.display().to_string(),
        embedder: engine.embedder().id().to_string(),
        floor,
        conversations: dataset.conversations.len(),
        questions: tally.own.len(),
        own: Reliability::of(&pairs(&tally.own)),
        cross: Reliability::of(&pairs(&tally.cross)),
        all: Reliability::of(&pairs(&all)),
        no_floor: recall_at(&tally.own, 0.0),
        at_floor: recall_at(&tally.own, floor),
        unrelated: groups
            .into_iter()
            .map(|((hosts, lang), (searches, empty))| UnrelatedGroup {
                hosts,
                lang,
                searches,
                empty,
            })
            .collect(),
        unrelated_queries: queries,
        sweep,
        shared_terms,
        notes: engine.notes().to_vec(),
    }
}

impl RelevanceReport {
    /// The report in markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Relevance: {} ({})\n\nembedder {}, {} conversations, {} questions, floor {}\n",
            self.dataset, self.path, self.embedder, self.conversations, self.questions, self.floor
        );
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}\n");
        }
        for (title, table) in [
            (
                "own conversation and other conversations together",
                &self.all,
            ),
            ("own conversation", &self.own),
            ("other conversations (nothing is evidence)", &self.cross),
        ] {
            let _ = writeln!(out, "## Reliability: {title}\n\n{}", table.markdown());
        }
        let at = |r: &FloorRecall, k| r.recall.get(&k).copied().unwrap_or(0.0);
        let _ = writeln!(out, "## Recall of own-conversation questions\n");
        let _ = writeln!(out, "| floor | R@1 | R@5 | R@10 |\n|---|---|---|---|");
        for r in [&self.no_floor, &self.at_floor] {
            let _ = writeln!(
                out,
                "| {} | {:.3} | {:.3} | {:.3} |",
                r.floor,
                at(r, 1),
                at(r, 5),
                at(r, 10)
            );
        }
        self.unrelated_markdown(&mut out);
        self.sweep_markdown(&mut out);
        out
    }

    fn unrelated_markdown(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n## Unrelated queries at floor {} ({} queries)\n",
            self.floor, self.unrelated_queries
        );
        let _ = writeln!(
            out,
            "| hosts | language | searches | nothing returned |\n|---|---|---|---|"
        );
        for g in &self.unrelated {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} ({:.1}%) |",
                g.hosts,
                g.lang,
                g.searches,
                g.empty,
                100.0 * share(g.empty, g.searches)
            );
        }
        let _ = writeln!(
            out,
            "\nQuery terms an unrelated query shares with a host it was asked against \
             ({} of the searches):\n",
            self.shared_terms.len()
        );
        for s in &self.shared_terms {
            let _ = writeln!(
                out,
                "- query {} on {}: {}",
                s.query,
                s.host,
                s.terms.join(", ")
            );
        }
    }

    fn sweep_markdown(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Floors\n");
        let _ = writeln!(
            out,
            "| floor | R@1 | R@5 | R@10 | cross: nothing | unrelated searches: nothing | \
             unrelated queries: nothing anywhere | tiny stores: match kept |\n\
             |---|---|---|---|---|---|---|---|"
        );
        for row in &self.sweep {
            let at = |k| row.recall.get(&k).copied().unwrap_or(0.0);
            let _ = writeln!(
                out,
                "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                row.floor,
                at(1),
                at(5),
                at(10),
                row.cross_empty,
                row.unrelated_empty,
                row.unrelated_queries_empty,
                row.tiny_related_kept
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_list_has_enough_queries_in_both_languages() {
        let data: UnrelatedData = serde_json::from_str(UNRELATED).unwrap();
        let count = |lang: &str| data.queries.iter().filter(|q| q.lang == lang).count();
        assert!(count("en") >= 50 && count("zh") >= 50);
        assert!(data.tiny_stores.iter().all(|s| !s.memories.is_empty()
            && s.memories.len() <= 5
            && s.related.iter().all(|r| r.memory < s.memories.len())));
    }

    #[test]
    fn a_reliability_table_bins_predictions_and_weights_the_error() {
        let pairs = [(0.05, false), (0.05, false), (0.95, true), (0.95, false)];
        let table = Reliability::of(&pairs);
        assert_eq!(table.bins[0].count, 2);
        assert_eq!(table.bins[9].count, 2);
        assert!((table.bins[9].observed - 0.5).abs() < 1e-12);
        // Half the hits are off by 0.05, half by 0.45.
        assert!((table.ece - 0.25).abs() < 1e-9, "{}", table.ece);
        assert_eq!(table.evidence, 1);
    }
}
