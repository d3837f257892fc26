//! The evaluation commands' flags (`mnemos eval …`) and their translation into this crate's
//! typed settings, behind the `clap` feature: the flag definitions live beside the settings
//! they fill, so the binary only parses, calls [`run`] and prints what it returns (ripgrep
//! keeps its flags in a library the same way).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;

use mnemos_core::retrieval::VectorPlacement;
use mnemos_core::SecondHop;
use mnemos_engine::SearchRequest;
use mnemos_presets::variants::SelectionSpec;
use mnemos_setup::{Config, OpenOptions};

use crate::experiment::{Progress, ProgressFn, StoreKind};
use crate::protocol::Scenario;
use crate::report::classifier::{self, ClassifierDataset, ClassifierSettings};
use crate::report::extraction::{self, ExtractionDataset, ExtractionSettings};
use crate::report::forgets;
use crate::report::lufy::{self, AgreementSettings};
use crate::report::presets::{self, PresetsSettings};
use crate::report::probes::{self, ProbeSettings};
use crate::report::relevance::{self, RelevanceSettings};
use crate::report::retrieval::{self, RetrievalSettings, RetrieverChoice, TypeChoice};
use crate::report::run::{self, RunSettings};
use crate::report::updates::{self, UpdateSettings};
use crate::report::{Comparison, OutputOptions};
use crate::search_bench::{self, SearchBenchSettings};
use crate::update_probes::Half;
use crate::zh4o::PROBE_CHUNK;
use crate::{EvalError, QuestionDataset};

#[derive(Subcommand)]
pub enum EvalCommand {
    /// Recall@{1,5,10}, MRR, nDCG@10 and latency of BM25 / dense / hybrid retrieval.
    Retrieval(RetrievalArgs),
    /// Calibration of hits' relevance (reliability table, ECE), what the relevance floor
    /// costs in recall, and how often queries about unrelated topics return nothing.
    Relevance(RelevanceArgs),
    /// ROC AUC of the offline arousal, surprise and importance scores against LUFY's labels;
    /// with --presets, the importance agreement of what each preset keeps (LUFY Table 12).
    Lufy(LufyArgs),
    /// Accuracy, per-class F1 and latency of the semantic/episodic query classifier.
    Classifier(ClassifierArgs),
    /// Presets side by side on one dataset conversation: latency, memory size, evidence in context.
    Presets(PresetsArgs),
    /// MemBench's protocol (streaming, scenarios, noise, checkpoints) with presets side by
    /// side: recall through provenance, choice accuracy, answers, cost; --out writes a report.
    Run(Box<RunArgs>),
    /// MOOM's memory-extraction score on ZH-4O or LoCoMo: derived memories against human
    /// labels (ROUGE-L, ROUGE-2, embedding similarity), presets side by side.
    Extraction(Box<ExtractionArgs>),
    /// ZH-4O's probes: plant a fact, ask about it hundreds of messages later; hit rate by
    /// provenance and answer similarity, presets side by side. With --kind update: plant a
    /// fact, later its update, then ask (EN in LoCoMo, ZH in ZH-4O).
    Probes(Box<ProbesArgs>),
}

/// Which engines run side by side.
#[derive(Args)]
pub struct EngineArgs {
    /// Comma-separated presets (default: every preset; in extraction, probes and lufy, none
    /// when --sweep or --variant is given).
    #[arg(long, value_delimiter = ',')]
    presets: Option<Vec<String>>,
    /// A preset with one parameter swept, `memorybank.forget_threshold=0,0.05,0.2`, or on top
    /// of fixed ones, `moom[forgetting=ebbinghaus].capacity=20,40` (repeatable); each sweep
    /// is one curve of the forgetting plot.
    #[arg(long)]
    sweep: Vec<String>,
    /// A preset with several parameters set together, e.g. `retrieval:retriever=hybrid,hops=2`
    /// (repeatable); variants run after --presets and --sweep.
    #[arg(long)]
    variant: Vec<String>,
}

impl EngineArgs {
    fn spec(&self) -> SelectionSpec {
        SelectionSpec {
            presets: self.presets.clone(),
            sweeps: self.sweep.clone(),
            variants: self.variant.clone(),
        }
    }

    /// These engines on `store`, writing `batch` turns at a time, reporting to `report`.
    fn compare(&self, store: StoreKind, batch: usize, report: &ReportArgs) -> Comparison {
        Comparison {
            engines: self.spec(),
            store,
            batch,
            output: report.output(),
        }
    }
}

/// Where a report goes.
#[derive(Args)]
pub struct ReportArgs {
    /// Write report.md and report.json (and what else the command writes) here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the contents of an existing --out directory.
    #[arg(long)]
    overwrite: bool,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

impl ReportArgs {
    fn output(&self) -> OutputOptions {
        OutputOptions {
            out: self.out.clone(),
            overwrite: self.overwrite,
        }
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// The dataset: a LoCoMo or MemDaily file, or a PerLTQA file or directory.
    path: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    dataset: QuestionDataset,
    #[command(flatten)]
    engines: EngineArgs,
    /// participation (user and assistant turns) or observation (user messages only).
    #[arg(long, value_enum, default_value = "participation")]
    scenario: Scenario,
    /// Pad each conversation with other conversations' items up to this many tokens.
    #[arg(long)]
    noise_tokens: Option<usize>,
    /// Draw noise from this dataset instead of the evaluated one's other conversations: a
    /// ZH-4O directory, or a LoCoMo / MemDaily / PerLTQA file (MemBench pads with unrelated text).
    #[arg(long)]
    noise_from: Option<PathBuf>,
    /// Seed of the noise placement and of the sample.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep this many conversations per question category (MemBench's uniform sampling).
    #[arg(long)]
    sample_per_category: Option<usize>,
    /// Keep at most this many conversations (after sampling).
    #[arg(long)]
    conversations: Option<usize>,
    /// Ask each question again at these history sizes (tokens), e.g. 1000,10000,50000.
    #[arg(long, value_delimiter = ',')]
    checkpoints: Vec<usize>,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// Turns per write (1 = turn by turn, as a live chat).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// A scratch SQLite database per preset (as deployed), or the in-memory store.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    /// Do not ask the answer model for open answers (no token F1).
    #[arg(long)]
    no_answer: bool,
    /// Do not ask the answer model to choose on multiple-choice questions.
    #[arg(long)]
    no_choose: bool,
    /// Embed every text as it comes instead of from a warm shared cache (slower; write
    /// latencies then include embedding).
    #[arg(long)]
    no_embed_cache: bool,
    /// Grade open answers with the configured [llm] endpoint (one fixed prompt, docs/eval.md).
    #[arg(long)]
    judge: bool,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct ExtractionArgs {
    /// A ZH-4O directory or a LoCoMo file.
    path: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    dataset: ExtractionDataset,
    #[command(flatten)]
    engines: EngineArgs,
    /// Score only the first N labelled dialogues (LoCoMo: conversations).
    #[arg(long)]
    dialogues: Option<usize>,
    /// ZH-4O has no sessions: end one every this many messages (0 = one session).
    #[arg(long, default_value_t = 100)]
    session_messages: usize,
    /// Turns per write (1 = turn by turn, as a live chat).
    #[arg(long, default_value_t = 20)]
    batch: usize,
    /// A scratch SQLite database per preset (as deployed), or the in-memory store.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    #[command(flatten)]
    report: ReportArgs,
    /// Write every extracted memory and each label's best match (ROUGE-L on words) to this
    /// JSONL file, one line per preset and dialogue, for reading the errors.
    #[arg(long)]
    dump: Option<PathBuf>,
}

/// Which half of the update probes' templates `eval probes --kind update` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HalfArg {
    /// The phrasings reported on (written apart from the tuning half).
    Test,
    /// The phrasings the rules may be tuned against.
    Tuning,
}

/// Which probes `eval probes` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProbeKind {
    /// ZH-4O's probes: a planted fact asked about later.
    Zh4o,
    /// Knowledge updates: a fact, later its update, then the question.
    Update,
    /// Forget requests: a personal detail, later a request to forget it (or a line that only
    /// speaks of forgetting), then questions and searches for it.
    Forget,
}

#[derive(Args)]
pub struct ProbesArgs {
    /// The ZH-4O directory.
    path: PathBuf,
    /// zh4o: ZH-4O's own probes; update / forget: knowledge-update or forget-request probes
    /// generated from templates (English ones in the --locomo conversations, Chinese ones in
    /// ZH-4O's dialogues).
    #[arg(long, value_enum, default_value = "zh4o")]
    kind: ProbeKind,
    /// The LoCoMo file whose conversations host the English update probes (--kind update, forget).
    #[arg(long)]
    locomo: Option<PathBuf>,
    /// Seed of the update probes' positions (--kind update, forget).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[command(flatten)]
    engines: EngineArgs,
    /// Run only the first N probes (--kind update, forget: per language, in template order).
    #[arg(long)]
    probes: Option<usize>,
    /// Which half of the update templates (--kind update, forget): `test` (reported) or `tuning`.
    #[arg(long, value_enum, default_value = "test")]
    half: HalfArg,
    /// Host messages per update probe (--kind update, forget).
    #[arg(long, default_value_t = 150)]
    window: usize,
    /// Messages per write (the protocol ingests chunks of 20).
    #[arg(long, default_value_t = PROBE_CHUNK)]
    batch: usize,
    /// End a session every this many messages of the probed stream (0 = one session).
    #[arg(long, default_value_t = 100)]
    session_messages: usize,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// A scratch SQLite database per preset (as deployed), or the in-memory store.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct LufyArgs {
    /// The LUFY sessions file (lufy_sessions.json).
    path: PathBuf,
    /// Only the first N sessions (quick runs).
    #[arg(long)]
    limit: Option<usize>,
    // With presets, sweeps or variants: their importance agreement instead of the AUC.
    #[command(flatten)]
    engines: EngineArgs,
    /// With presets: turns per write.
    #[arg(long, default_value_t = 20)]
    batch: usize,
    /// With presets: a scratch SQLite database per preset, or the in-memory store.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    /// With presets: share of each session the random row of the agreement table keeps.
    #[arg(long, default_value_t = 0.1)]
    random_share: f64,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct RetrievalArgs {
    /// The dataset file (PerLTQA: its directory or either file).
    path: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    dataset: QuestionDataset,
    /// The retrievers to compare (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    retriever: Vec<RetrieverChoice>,
    /// What each retriever does with memory types (comma-separated; one row per retriever and
    /// choice): none, rerank (classify the query, k per type, re-rank as PerLTQA; parameters
    /// from `[retrieval.memory_type]`), semantic or episodic (one type only).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    memory_type: Vec<TypeChoice>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print per-category tables too.
    #[arg(long)]
    by_category: bool,
    /// Only the first N conversations (quick runs).
    #[arg(long)]
    limit: Option<usize>,
    /// A scratch SQLite database file (the real write path), or the in-memory store.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    /// Turns per write (1 = every turn its own transaction, as a live chat writes).
    #[arg(long, default_value_t = 1)]
    write_batch: usize,
    /// Also write one JSON line per question (its text, category, gold labels and each
    /// retriever's ranked labels) to this file, for looking at individual misses.
    #[arg(long)]
    dump: Option<PathBuf>,
    #[command(flatten)]
    shape: SearchShapeArgs,
    /// Drop hits whose relevance is below this (default: the configured
    /// `retrieval.min_relevance`; 0 keeps every hit).
    #[arg(long)]
    min_relevance: Option<f32>,
    /// The preset whose write path stores the turns (default `retrieval`: stored and indexed
    /// only; `default` also keeps facts and supersedes, and a search leaves superseded turns
    /// out).
    #[arg(long)]
    preset: Option<String>,
}

#[derive(Args)]
pub struct RelevanceArgs {
    /// A LoCoMo file or a PerLTQA directory (or either of its files).
    path: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    dataset: QuestionDataset,
    /// A ZH-4O directory: its first dialogues host the Chinese unrelated queries.
    #[arg(long)]
    zh4o: Option<PathBuf>,
    /// How many ZH-4O dialogues host them.
    #[arg(long, default_value_t = 3)]
    zh4o_dialogues: usize,
    /// Only the first N conversations (quick runs).
    #[arg(long)]
    limit: Option<usize>,
    /// Other conversations each question is also asked against (where nothing is evidence).
    #[arg(long, default_value_t = 1)]
    others: usize,
    /// The floor the report is about (default: the configured `retrieval.min_relevance`).
    #[arg(long)]
    floor: Option<f32>,
    /// A scratch SQLite database file, or the in-memory store.
    #[arg(long, value_enum, default_value = "memory")]
    store: StoreKind,
    /// Turns per write.
    #[arg(long, default_value_t = 64)]
    write_batch: usize,
    /// Write every search's hits with their relevance features to this JSONL file (what
    /// `mnemos train relevance` fits on).
    #[arg(long)]
    dump: Option<PathBuf>,
    #[command(flatten)]
    report: ReportArgs,
}

#[derive(Args)]
pub struct ClassifierArgs {
    /// The PerLTQA directory (or either of its files).
    path: PathBuf,
    /// The dataset format (only PerLTQA carries memory types).
    #[arg(long, value_enum, default_value = "perltqa")]
    dataset: ClassifierDataset,
    /// A weights file to evaluate instead of the shipped weights for the embedder.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write one JSON line per question (text, group, gold, predicted, P(semantic)) to FILE,
    /// for error analysis.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
}

#[derive(Args)]
pub struct PresetsArgs {
    /// The dataset file (LoCoMo, MemDaily or PerLTQA).
    path: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    dataset: QuestionDataset,
    /// Which conversation of the dataset (0-based index).
    #[arg(long, default_value_t = 0)]
    conversation: usize,
    /// Comma-separated presets (default: every preset).
    #[arg(long, value_delimiter = ',')]
    presets: Option<Vec<String>>,
    /// Token budget of each recalled context.
    #[arg(long, default_value_t = 1024)]
    budget: usize,
    /// Ask at most this many of the conversation's questions.
    #[arg(long)]
    questions: Option<usize>,
    #[arg(long)]
    json: bool,
}

/// How a search goes beyond one query and one hop; the defaults are the engine's.
#[derive(Args)]
pub struct SearchShapeArgs {
    /// 2 (the default): search again from the best hits through the rare words they add
    /// (names, places), for questions that go through an entity; 1: one search only. The hop
    /// stands aside where the learned ranker runs (dialogue).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    hops: u8,
    /// Second hop: how many of the first hop's best hits keep their places ahead of what the
    /// hop finds (0..=100).
    #[arg(long, default_value_t = SecondHop::default().keep)]
    hop_keep: usize,
    /// Search each question of a compound query on its own and merge the rankings.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    split_questions: bool,
}

impl SearchShapeArgs {
    pub fn second_hop(&self) -> Option<SecondHop> {
        (self.hops == 2).then_some(SecondHop {
            keep: self.hop_keep,
            ..SecondHop::default()
        })
    }

    pub fn split_questions(&self) -> bool {
        self.split_questions
    }

    /// Set this shape on a search request.
    pub fn apply(&self, request: &mut SearchRequest) {
        request.second_hop = self.second_hop();
        request.split_questions = self.split_questions;
    }
}

impl EvalCommand {
    /// Whether the command reads the configuration: LUFY's score check without engines does
    /// not, so it runs without a config file or database.
    pub fn needs_config(&self) -> bool {
        !matches!(self, EvalCommand::Lufy(args) if args.engines.spec() == SelectionSpec::default())
    }

    /// What makes the command unrunnable before anything is read, if anything.
    pub fn usage_problem(&self) -> Option<&'static str> {
        match self {
            EvalCommand::Probes(args) if args.kind != ProbeKind::Zh4o && args.locomo.is_none() => {
                Some("--kind update and forget need --locomo FILE (the English hosts)")
            }
            _ => None,
        }
    }
}

/// Run an evaluation command and return what it prints on stdout: its report as JSON when
/// asked, else its markdown or text rendering. Progress goes to `progress`.
pub fn run(
    config: &Config,
    command: EvalCommand,
    progress: ProgressFn<'_>,
) -> Result<String, EvalError> {
    match command {
        EvalCommand::Retrieval(args) => {
            let settings = RetrievalSettings {
                path: args.path,
                dataset: args.dataset,
                retrievers: RetrieverChoice::expand(&args.retriever),
                memory_types: args.memory_type,
                rerank: config.retrieval.memory_type.unwrap_or_default(),
                limit: args.limit,
                store: args.store,
                write_batch: args.write_batch,
                dump: args.dump,
                second_hop: args.shape.second_hop(),
                split_questions: args.shape.split_questions(),
                min_relevance: args.min_relevance,
                preset: args.preset,
            };
            let report = retrieval::evaluate(config, &settings, progress)?;
            rendered(&report, args.json, |r| r.text(args.by_category))
        }
        EvalCommand::Relevance(args) => {
            let settings = RelevanceSettings {
                path: args.path,
                dataset: args.dataset,
                zh4o: args.zh4o,
                zh4o_dialogues: args.zh4o_dialogues,
                limit: args.limit,
                others: args.others,
                floor: args.floor,
                store: args.store,
                write_batch: args.write_batch,
                dump: args.dump,
                out: args.report.out,
                overwrite: args.report.overwrite,
            };
            let report = relevance::evaluate(config, &settings, progress)?;
            rendered(&report, args.report.json, |r| r.markdown())
        }
        EvalCommand::Lufy(args) => run_lufy(config, args, progress),
        EvalCommand::Classifier(args) => {
            let settings = ClassifierSettings {
                path: args.path,
                dataset: args.dataset,
                weights: args.weights,
                dump: args.dump,
            };
            let report = classifier::evaluate(config, &settings)?;
            rendered(&report, args.json, |r| r.text())
        }
        EvalCommand::Presets(args) => {
            let settings = PresetsSettings {
                path: args.path,
                dataset: args.dataset,
                conversation: args.conversation,
                engines: SelectionSpec {
                    presets: args.presets,
                    ..SelectionSpec::default()
                },
                budget: args.budget,
                questions: args.questions,
            };
            let report = presets::evaluate(config, &settings, progress)?;
            rendered(&report, args.json, |r| r.text())
        }
        EvalCommand::Run(args) => {
            let json = args.report.json;
            let report = run::evaluate(config, &run_settings(*args), progress)?;
            rendered(&report, json, |r| r.markdown())
        }
        EvalCommand::Extraction(args) => {
            let settings = ExtractionSettings {
                path: args.path,
                dataset: args.dataset,
                compare: args.engines.compare(args.store, args.batch, &args.report),
                dialogues: args.dialogues,
                session_messages: args.session_messages,
                dump: args.dump,
            };
            let report = extraction::evaluate(config, &settings, progress)?;
            rendered(&report, args.report.json, |r| r.markdown())
        }
        EvalCommand::Probes(args) if args.kind != ProbeKind::Zh4o => {
            generated_probes(config, *args, progress)
        }
        EvalCommand::Probes(args) => {
            let settings = ProbeSettings {
                path: args.path,
                compare: args.engines.compare(args.store, args.batch, &args.report),
                probes: args.probes,
                session_messages: args.session_messages,
                budget: args.budget,
            };
            let report = probes::evaluate(config, &settings, progress)?;
            rendered(&report, args.report.json, |r| r.markdown())
        }
    }
}

fn run_settings(args: RunArgs) -> RunSettings {
    RunSettings {
        path: args.path,
        dataset: args.dataset,
        compare: args.engines.compare(args.store, args.batch, &args.report),
        scenario: args.scenario,
        noise_tokens: args.noise_tokens,
        noise_from: args.noise_from,
        seed: args.seed,
        sample_per_category: args.sample_per_category,
        conversations: args.conversations,
        checkpoints: args.checkpoints,
        budget: args.budget,
        answer: !args.no_answer,
        choose: !args.no_choose,
        embed_cache: !args.no_embed_cache,
        judge: args.judge,
    }
}

/// The offline scores' AUC, or with engines named, their importance agreement.
fn run_lufy(
    config: &Config,
    args: LufyArgs,
    progress: ProgressFn<'_>,
) -> Result<String, EvalError> {
    if args.engines.spec() == SelectionSpec::default() {
        let report = lufy::score_auc(&args.path, args.limit, progress)?;
        return rendered(&report, args.report.json, |r| r.text());
    }
    let settings = AgreementSettings {
        path: args.path,
        limit: args.limit,
        compare: args.engines.compare(args.store, args.batch, &args.report),
        random_share: args.random_share,
    };
    let report = lufy::agreement(config, &settings, progress)?;
    rendered(&report, args.report.json, |r| r.markdown())
}

/// `eval probes --kind update` and `--kind forget`: probes generated from templates.
fn generated_probes(
    config: &Config,
    args: ProbesArgs,
    progress: ProgressFn<'_>,
) -> Result<String, EvalError> {
    let Some(locomo) = args.locomo else {
        return Err(EvalError::Invalid(
            "--kind update and forget need --locomo FILE (the English hosts)".into(),
        ));
    };
    let settings = UpdateSettings {
        zh4o: args.path,
        locomo,
        compare: args.engines.compare(args.store, args.batch, &args.report),
        half: match args.half {
            HalfArg::Test => Half::Test,
            HalfArg::Tuning => Half::Tuning,
        },
        probes: args.probes,
        window: args.window,
        session_messages: args.session_messages,
        budget: args.budget,
        seed: args.seed,
    };
    if args.kind == ProbeKind::Forget {
        let report = forgets::evaluate_forgets(config, &settings, progress)?;
        return rendered(&report, args.report.json, |r| r.markdown());
    }
    let report = updates::evaluate_updates(config, &settings, progress)?;
    rendered(&report, args.report.json, |r| r.markdown())
}

/// A report as pretty JSON (one line break after it), or as `render` makes it.
fn rendered<R: Serialize>(
    report: &R,
    json: bool,
    render: impl FnOnce(&R) -> String,
) -> Result<String, EvalError> {
    if !json {
        return Ok(render(report));
    }
    serde_json::to_string_pretty(report)
        .map(|text| text + "\n")
        .map_err(|source| EvalError::Json {
            path: PathBuf::from("standard output"),
            source,
        })
}

/// `mnemos bench search`: search latency and index recall over one user with many memories.
#[derive(Args)]
pub struct SearchBenchArgs {
    /// Memories of the searched user.
    #[arg(long, default_value_t = 10_000)]
    memories: usize,
    /// Searches per retriever.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Hits per search (and k of recall@k).
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Where dense search runs: auto (the store's index when it has one), in_process, store.
    #[arg(long)]
    vectors: Option<String>,
    /// Also profile the hybrid searches stage by stage (median and mean per stage).
    #[arg(long)]
    profile: bool,
    /// `[retrieval.ann] min_vectors` for this run: the user gets the in-process approximate
    /// index at this many vectors (0: never). When it gets one, a second engine that searches
    /// exactly is timed beside it.
    #[arg(long)]
    ann_min_vectors: Option<usize>,
    /// `[retrieval.ann] ef_search` for this run (the sweep of the report shows larger ones).
    #[arg(long)]
    ann_ef_search: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `mnemos bench search`: load one user's memories into the configured store (derived work
/// left to run later, as under a server), then measure; returns what it prints.
pub fn bench_search(
    config: &Config,
    args: SearchBenchArgs,
    progress: ProgressFn<'_>,
) -> Result<String, EvalError> {
    let mut config = config.clone();
    config.engine.jobs.inline = false;
    if let Some(vectors) = &args.vectors {
        config.retrieval.vectors = match vectors.as_str() {
            "auto" => VectorPlacement::Auto,
            "in_process" => VectorPlacement::InProcess,
            "store" => VectorPlacement::Store,
            other => {
                return Err(EvalError::Invalid(format!(
                    "--vectors must be auto, in_process or store, not {other}"
                )))
            }
        };
    }
    let options = OpenOptions {
        create: true,
        load_embedder: true,
        preset: None,
    };
    if let Some(min_vectors) = args.ann_min_vectors {
        config.retrieval.ann.min_vectors = min_vectors;
    }
    if let Some(ef_search) = args.ann_ef_search {
        config.retrieval.ann.ef_search = ef_search;
    }
    config.retrieval.validate()?;
    let engine = mnemos_setup::open(&config, &options)?;
    // The same store searched exactly, to time beside the approximate index (opened only
    // when the user may get one; it holds its own copy of the user's index).
    let exact = if config.retrieval.ann.active() && !engine.info().dense_search.in_store() {
        let mut exact_config = config.clone();
        exact_config.retrieval.ann.enabled = false;
        Some(mnemos_setup::open(&exact_config, &options)?)
    } else {
        None
    };
    progress(Progress::Note(&format!(
        "bench search: {} memories in {} ({})",
        args.memories,
        config.db,
        engine.info().embedder
    )));
    let settings = SearchBenchSettings {
        tenant: config.tenant.clone(),
        memories: args.memories,
        queries: args.queries,
        top_k: args.top_k,
        profile: args.profile,
    };
    let report = search_bench::run(
        &engine,
        exact.as_ref(),
        settings,
        config.retrieval.candidates,
    )?;
    rendered(&report, args.json, search_bench::render)
}
