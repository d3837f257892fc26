//! Store failures at every call of a scenario, and what the engine leaves behind.
//!
//! One small, deterministic scenario (two users; `memorybank` for the agent `bot`, whose
//! sessions plan summary, profile and forgetting jobs, and `retrieval` for `helper`) goes
//! through the public `Engine` API: turns in several writes (one of them spanning both users),
//! closed sessions with inline jobs, recalls (memorybank strengthens what it recalls), a search
//! that records access, an edit, a forget that follows provenance, and a final `run_all_pending`.
//!
//! A clean run counts the scenario's store calls; then, for every N, the scenario runs again over
//! a `FaultyStore` whose N-th call fails (every call), or whose N-th write commits and then
//! reports a failure (every write: a lost acknowledgement), on the in-memory store and on
//! SQLite. The client behaves as a careful one would: every turn
//! carries an idempotency key, and a step that returns an error is retried (up to twice more) —
//! the fault fires once, so the retry should go through. The scenario continues after the
//! failure so that whatever the engine kept in its caches is used by the steps that follow.
//!
//! Checked for every N:
//! - **caches agree with the store**, right after the first failure and at the end: the failing
//!   engine's searches (ids, order and scores for several queries, `top_k` large), its index
//!   statistics, `stats` and listings equal those of a fresh engine over the same inner store
//!   (which builds its caches from the store);
//! - **stored vectors fit their text**: every active memory's vector is the embedding of its
//!   current text;
//! - **nothing acknowledged is lost**: every turn whose `add` returned `Ok` is stored;
//! - **job replay converges**: a fresh engine over the same store runs `run_all_pending` twice;
//!   afterwards no job is pending and the active memories (kind, text, provenance as turn keys)
//!   are exactly those of the clean run, with no derived memory twice.
//!
//! The sweep found four ways the caches could drift from the store (B1–B4, fixed; each keeps a
//! small test of its own at the end of this file). The order of equal scores is left out of the
//! search comparison and checked on its own (B4).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use mnemos_core::retrieval::{embedding_windows, RetrievalConfig};
use mnemos_core::{
    Embedder, EmbedderExt, FixedClock, KindTag, Memory, MemoryFilter, MemoryModel, MemoryPatch,
    MemoryStore, Page, Role, Scope, StateFilter, Store, StoreRead, Timestamp, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{
    Engine, EngineConfig, EngineResult, JobSettings, NewTurn, RecallRequest, SearchRequest,
    SPEAKER_KEY,
};
use mnemos_offline::OfflineModel;
use mnemos_presets::PresetSpec;
use mnemos_store_sqlite::SqliteStore;
use mnemos_testkit::{Call, CallCounts, CallFilter, CallKind, Fault, FaultMode, FaultyStore};

const TENANT: &str = "t";
/// 2024-03-01T09:00Z, and one turn every ten minutes.
const T0: i64 = 1_709_283_600_000;
const STEP: i64 = 600_000;

/// (user, agent, session, role, text). A line's index is its turn key.
const LINES: &[(&str, &str, &str, Role, &str)] = &[
    (
        "ann",
        "bot",
        "s1",
        Role::User,
        "Good morning! I just got back from a long run by the river.",
    ),
    (
        "ann",
        "bot",
        "s1",
        Role::Assistant,
        "How far did you run today?",
    ),
    (
        "ann",
        "bot",
        "s1",
        Role::User,
        "About twelve kilometres. My knees are sore now.",
    ),
    (
        "ann",
        "bot",
        "s1",
        Role::Assistant,
        "Stretching after a run helps sore knees.",
    ),
    (
        "ann",
        "bot",
        "s1",
        Role::User,
        "I work as a nurse at the city hospital.",
    ),
    (
        "ann",
        "bot",
        "s1",
        Role::Assistant,
        "That sounds demanding. Do you work night shifts?",
    ),
    (
        "ann",
        "helper",
        "h1",
        Role::User,
        "Please remind me to buy watercolour paper.",
    ),
    (
        "ann",
        "helper",
        "h1",
        Role::Assistant,
        "Noted: watercolour paper on Thursday.",
    ),
    (
        "bob",
        "bot",
        "s1",
        Role::User,
        "My brother Tom plays the cello in an orchestra.",
    ),
    (
        "bob",
        "bot",
        "s1",
        Role::Assistant,
        "Does he perform often?",
    ),
    (
        "bob",
        "bot",
        "s1",
        Role::User,
        "Every Friday at the conservatory, I never miss it.",
    ),
    (
        "bob",
        "bot",
        "s1",
        Role::Assistant,
        "The conservatory has lovely acoustics.",
    ),
    (
        "bob",
        "bot",
        "s1",
        Role::User,
        "I am allergic to shellfish, by the way.",
    ),
    (
        "ann",
        "bot",
        "s2",
        Role::User,
        "My sister Clara is visiting next Saturday.",
    ),
    (
        "ann",
        "bot",
        "s2",
        Role::Assistant,
        "What will you do together?",
    ),
    (
        "ann",
        "bot",
        "s2",
        Role::User,
        "Clara is allergic to peanuts, so we need a safe restaurant.",
    ),
    (
        "ann",
        "bot",
        "s2",
        Role::Assistant,
        "A Thai place that cooks without peanuts could work.",
    ),
    (
        "bob",
        "bot",
        "s2",
        Role::User,
        "Tom got a new cello bow yesterday.",
    ),
    (
        "bob",
        "bot",
        "s2",
        Role::Assistant,
        "That must sound wonderful at the conservatory.",
    ),
];

/// The line whose memory the scenario edits, and the new text.
const EDITED: usize = 2;
const EDITED_TEXT: &str = "About twelve kilometres. My knees feel fine after stretching.";
/// The line whose memory the scenario forgets (session summaries and the profile follow).
const FORGOTTEN: usize = 4;

const QUERIES: &[&str] = &[
    "Where does Ann work?",
    "knees after the run",
    "allergic to peanuts or shellfish",
    "cello conservatory Friday",
    "watercolour paper",
];

#[derive(Clone, Copy, Debug)]
enum Step {
    Add(&'static [usize]),
    EndSession(&'static str, &'static str, &'static str),
    Recall(&'static str, &'static str, &'static str),
    /// A search that records access.
    Search(&'static str, &'static str),
    Update,
    Forget,
    RunPending,
}

const STEPS: &[Step] = &[
    Step::Add(&[0, 1, 2, 3]),
    Step::Add(&[8, 9, 10]),
    Step::Add(&[4, 5, 6, 7]),
    Step::EndSession("ann", "bot", "s1"),
    // One write for both users: bob's turns, then ann's.
    Step::Add(&[11, 12, 13, 14]),
    Step::EndSession("bob", "bot", "s1"),
    Step::Recall("ann", "bot", "Where does Ann work?"),
    Step::Recall("ann", "helper", "What should I buy?"),
    Step::Search("ann", "knees run river"),
    Step::Add(&[15, 16]),
    Step::Update,
    Step::Forget,
    Step::EndSession("ann", "bot", "s2"),
    Step::Add(&[17, 18]),
    Step::EndSession("bob", "bot", "s2"),
    Step::RunPending,
];

fn user(name: &str) -> UserKey {
    UserKey::new(TENANT, name).unwrap()
}

fn users() -> [UserKey; 2] {
    [user("ann"), user("bob")]
}

fn key(line: usize) -> String {
    format!("line-{line}")
}

fn new_turn(line: usize) -> NewTurn {
    let (name, agent, session, role, text) = LINES[line];
    let speaker = match role {
        Role::User => name,
        _ => "Bot",
    };
    NewTurn {
        scope: Scope::new(TENANT, name, agent, session).unwrap(),
        role,
        speaker: Some(speaker.into()),
        text: text.into(),
        time: Some(Timestamp(T0 + line as i64 * STEP)),
        round: None,
        metadata: Default::default(),
        key: Some(key(line)),
    }
}

/// What every engine of a test shares: the embedder and the memory model (both stateless).
struct Kit {
    embedder: Arc<dyn Embedder>,
    model: Arc<dyn MemoryModel>,
}

impl Kit {
    fn new() -> Self {
        let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::default());
        let model = Arc::new(OfflineModel::new(Arc::clone(&embedder)));
        Self { embedder, model }
    }

    fn engine(&self, store: Arc<dyn Store>) -> Engine {
        self.try_engine(store).unwrap()
    }

    fn try_engine(&self, store: Arc<dyn Store>) -> EngineResult<Engine> {
        let memorybank = PresetSpec {
            name: "memorybank".into(),
            params: toml::from_str("forget_every = 4").unwrap(),
        };
        let config = EngineConfig {
            preset: memorybank,
            agents: [("helper".to_string(), PresetSpec::named("retrieval"))].into(),
            params: Default::default(),
            jobs: JobSettings {
                inline: true,
                max_attempts: 3,
                ..JobSettings::default()
            },
        };
        Engine::builder(store, Arc::clone(&self.embedder), Arc::clone(&self.model))
            .presets(std::sync::Arc::new(mnemos_presets::Presets))
            .clock(Arc::new(FixedClock(Timestamp(T0 + 100 * STEP))))
            .config(config)
            .build()
    }
}

/// The raw-turn memory of `line`, in any state, found through the engine's reader.
fn turn_memory(engine: &Engine, line: usize) -> EngineResult<Memory> {
    let owner = user(LINES[line].0);
    let reader = engine.reader();
    let turns = reader.store().turns_by_keys(&owner, &[key(line)])?;
    let turn = turns.first().map(|t| t.id);
    let filter = MemoryFilter {
        kinds: vec![KindTag::Turn],
        state: StateFilter::All,
        ..MemoryFilter::default()
    };
    let memory = reader
        .all(&owner, &filter)?
        .into_iter()
        .find(|m| Some(m.provenance.as_slice()) == turn.as_ref().map(std::slice::from_ref));
    Ok(memory.unwrap_or_else(|| panic!("line {line} has no stored memory")))
}

impl Step {
    /// Run the step; turns whose add returned `Ok` go into `acked`.
    fn run(self, engine: &Engine, acked: &mut Vec<usize>) -> EngineResult<()> {
        match self {
            Step::Add(lines) => {
                engine.add(lines.iter().map(|&l| new_turn(l)).collect())?;
                acked.extend(lines);
            }
            Step::EndSession(name, agent, session) => {
                engine.end_session(&Scope::new(TENANT, name, agent, session)?)?;
            }
            Step::Recall(name, agent, query) => {
                engine.recall(&user(name), agent, &RecallRequest::new(query, 400))?;
            }
            Step::Search(name, query) => {
                let mut request = SearchRequest::new(user(name), query);
                request.record_access = true;
                engine.search(&request)?;
            }
            Step::Update => {
                let memory = turn_memory(engine, EDITED)?;
                let patch = MemoryPatch {
                    text: Some(EDITED_TEXT.into()),
                    ..MemoryPatch::default()
                };
                engine.update(&user("ann"), memory.id, &patch)?;
            }
            Step::Forget => {
                let memory = turn_memory(engine, FORGOTTEN)?;
                engine.forget(&user("ann"), memory.id, "the user asked")?;
            }
            Step::RunPending => {
                engine.run_all_pending()?;
            }
        }
        Ok(())
    }
}

/// One search hit: what is compared (id, fused score to 6 decimals) and what is shown.
#[derive(Debug)]
struct Ranked {
    id: String,
    score: String,
    text: String,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        (&self.id, &self.score) == (&other.id, &other.score)
    }
}

impl std::fmt::Display for Ranked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: String = self.text.chars().take(40).collect();
        write!(f, "{} {text:?}", self.score)
    }
}

/// Where two rankings of one query part ways: the first rank that differs, and what only one
/// of them holds.
fn ranking_difference(failing: &[Ranked], fresh: &[Ranked]) -> String {
    let rank = failing.iter().zip(fresh).position(|(a, b)| a != b);
    let shown = |r: Option<&Ranked>| r.map_or("nothing".to_string(), ToString::to_string);
    let first = rank.unwrap_or(failing.len().min(fresh.len()));
    let only = |a: &[Ranked], b: &[Ranked]| -> Vec<String> {
        a.iter()
            .filter(|x| !b.iter().any(|y| y.id == x.id))
            .map(ToString::to_string)
            .collect()
    };
    format!(
        "from rank {} the failing engine has {} where a fresh one has {}; only in the failing \
         engine: {:?}; only in the fresh one: {:?}",
        first + 1,
        shown(failing.get(first)),
        shown(fresh.get(first)),
        only(failing, fresh),
        only(fresh, failing)
    )
}

/// What an engine shows of one store through its caches and reads.
#[derive(Debug, PartialEq)]
struct View {
    /// Per user and query: the hits in rank order.
    searches: Vec<Vec<Ranked>>,
    /// Per user: memories and vectors in the index. (Not its vocabulary: removing a memory
    /// leaves its terms behind with no postings, which changes no score.)
    indexes: Vec<(usize, usize)>,
    /// Per user and agent: the store-derived stats (not the model counters).
    stats: Vec<String>,
    /// Per user: every memory id with its state.
    listings: Vec<Vec<(String, bool)>>,
}

fn view(engine: &Engine) -> View {
    let mut view = View {
        searches: Vec::new(),
        indexes: Vec::new(),
        stats: Vec::new(),
        listings: Vec::new(),
    };
    for user in users() {
        for query in QUERIES {
            let mut request = SearchRequest::new(user.clone(), *query);
            request.top_k = Some(1000);
            let hits = engine.search(&request).unwrap().hits;
            let mut ranked: Vec<Ranked> = hits
                .iter()
                .map(|h| Ranked {
                    id: h.memory.id.to_string(),
                    score: format!("{:.6}", h.score),
                    text: h.memory.text.clone(),
                })
                .collect();
            // Equal scores in id order: the order of ties is checked on its own (B4 below).
            let value = |r: &Ranked| r.score.parse::<f64>().unwrap_or(f64::NAN);
            ranked.sort_by(|a, b| value(b).total_cmp(&value(a)).then(a.id.cmp(&b.id)));
            view.searches.push(ranked);
        }
        let index = engine.reader().warm(&user).unwrap();
        view.indexes.push((index.memories, index.vectors));
        for agent in ["bot", "helper"] {
            let s = engine.stats(&user, agent).unwrap();
            view.stats.push(format!(
                "{user}/{agent}: {:?} total {} forgotten {} bytes {} tokens {} pending {}",
                s.memories, s.total_memories, s.forgotten, s.bytes, s.tokens, s.pending_jobs
            ));
        }
        let all = MemoryFilter {
            state: StateFilter::All,
            ..MemoryFilter::default()
        };
        let listing = engine.list(&user, &all, Page::first(1000)).unwrap();
        view.listings.push(
            listing
                .items
                .iter()
                .map(|m| (m.id.to_string(), m.is_active()))
                .collect(),
        );
    }
    view
}

/// Where two views differ, in words.
fn view_differences(failing: &View, fresh: &View) -> Vec<String> {
    let mut out = Vec::new();
    let labels: Vec<String> = users()
        .iter()
        .flat_map(|u| QUERIES.iter().map(move |q| format!("{u} '{q}'")))
        .collect();
    for ((label, a), b) in labels.iter().zip(&failing.searches).zip(&fresh.searches) {
        if a != b {
            out.push(format!("search {label}: {}", ranking_difference(a, b)));
        }
    }
    if failing.indexes != fresh.indexes {
        out.push(format!(
            "index (memories, vectors) per user: failing {:?}, fresh {:?}",
            failing.indexes, fresh.indexes
        ));
    }
    if failing.stats != fresh.stats {
        out.push(format!("stats: {:?} vs {:?}", failing.stats, fresh.stats));
    }
    if failing.listings != fresh.listings {
        out.push("listings differ".into());
    }
    out
}

/// Every active memory's stored vector must be the embedding of its current searchable text.
fn stale_vectors(kit: &Kit, store: &dyn StoreRead) -> Vec<String> {
    let analyzer = mnemos_text::Analyzer::shared();
    let windows = RetrievalConfig::default().window_tokens;
    let mut out = Vec::new();
    for user in users() {
        let vectors: BTreeMap<String, Vec<f32>> = store
            .vectors(&user, kit.embedder.id())
            .unwrap()
            .into_iter()
            .map(|row| (row.memory_id.to_string(), row.vector))
            .collect();
        for memory in store.list_all(&user, &MemoryFilter::active()).unwrap() {
            let text = match memory.metadata.get(SPEAKER_KEY) {
                Some(speaker) => format!("{speaker}: {}", memory.text),
                None => memory.text.clone(),
            };
            let parts = embedding_windows(analyzer, &text, windows);
            let expected: Vec<f32> = kit.embedder.embed_all(&parts).unwrap().concat();
            match vectors.get(&memory.id.to_string()) {
                Some(stored) if *stored == expected => {}
                Some(_) => out.push(format!(
                    "{user}: the stored vector of '{}' is not its text's embedding",
                    memory.text
                )),
                // A missing vector is legitimate: the next index build embeds it.
                None => {}
            }
        }
    }
    out
}

/// Lines whose add was acknowledged but whose turn is not stored.
fn lost_turns(store: &dyn StoreRead, acked: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for user in users() {
        let keys: Vec<String> = acked
            .iter()
            .filter(|&&l| LINES[l].0 == user.user)
            .map(|&l| key(l))
            .collect();
        let stored = store.turns_by_keys(&user, &keys).unwrap();
        for k in keys {
            if !stored.iter().any(|t| t.key.as_deref() == Some(k.as_str())) {
                out.push(format!("{user}: acknowledged turn {k} is not stored"));
            }
        }
    }
    out
}

/// The checks a sweep can hold a run to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// The failing engine's searches, index, stats and listings equal a fresh engine's.
    Caches,
    /// Every active memory's stored vector is its text's embedding.
    Vectors,
    /// Every turn whose add returned `Ok` is stored.
    Acknowledged,
    /// A fresh engine's replay leaves nothing pending and the clean run's memories.
    Replay,
    /// The failure a store fault causes reaches the client as the service's (internal or
    /// unavailable), never as the client's own mistake (invalid input, not found, conflict).
    Blame,
}

/// A problem a check found, with where in the run it was found.
type Problem = (Check, String);

/// What the first three checks find, labelled with `when`.
fn consistency(
    kit: &Kit,
    failing: &Engine,
    inner: &Arc<dyn Store>,
    acked: &[usize],
    when: &str,
) -> Vec<Problem> {
    let fresh = kit.engine(Arc::clone(inner));
    let found = [
        (
            Check::Caches,
            view_differences(&view(failing), &view(&fresh)),
        ),
        (Check::Vectors, stale_vectors(kit, inner.as_ref())),
        (Check::Acknowledged, lost_turns(inner.as_ref(), acked)),
    ];
    found
        .into_iter()
        .flat_map(|(check, problems)| problems.into_iter().map(move |p| (check, p)))
        .map(|(check, p)| (check, format!("{when}: {p}")))
        .collect()
}

/// Active memories of every user as (user, kind, text, provenance as turn keys), sorted: what a
/// run leaves behind, independent of ids and times.
fn final_state(store: &dyn StoreRead) -> Vec<String> {
    let mut out = Vec::new();
    for user in users() {
        for memory in store.list_all(&user, &MemoryFilter::active()).unwrap() {
            let mut keys: Vec<String> = memory
                .provenance
                .iter()
                .map(|id| store.turn(&user, *id).unwrap().and_then(|t| t.key))
                .map(|k| k.unwrap_or_else(|| "?".into()))
                .collect();
            keys.sort();
            out.push(format!(
                "{user} {:?} {:?} <- {}",
                memory.kind,
                memory.text,
                keys.join(",")
            ));
        }
    }
    out.sort();
    out
}

/// A fresh engine replays what is pending (twice: a job may plan another), then nothing may
/// be pending and the active memories must be the clean run's.
fn replay_differences(kit: &Kit, inner: &Arc<dyn Store>, clean: &[String]) -> Vec<String> {
    let engine = kit.engine(Arc::clone(inner));
    let mut out = Vec::new();
    for _ in 0..2 {
        let report = engine.run_all_pending().unwrap();
        if report.failed > 0 {
            out.push(format!("replay: jobs failed: {:?}", report.errors));
        }
    }
    let pending = engine.pending_jobs(None).unwrap();
    if !pending.is_empty() {
        let kinds: Vec<&str> = pending.iter().map(|p| p.job.kind.as_str()).collect();
        out.push(format!("replay: jobs still pending: {kinds:?}"));
    }
    let state = final_state(inner.as_ref());
    let count = |list: &[String], item: &String| list.iter().filter(|x| *x == item).count();
    for item in clean.iter().chain(&state) {
        let (want, got) = (count(clean, item), count(&state, item));
        let problem = match got.cmp(&want) {
            std::cmp::Ordering::Less => "missing",
            std::cmp::Ordering::Greater if want > 0 => "duplicated",
            std::cmp::Ordering::Greater => "not in a clean run",
            std::cmp::Ordering::Equal => continue,
        };
        let line = format!("replay: {problem} ({got} instead of {want}): {item}");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Which store a sweep runs over.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Memory,
    Sqlite,
}

impl Backend {
    fn open(self) -> Arc<dyn Store> {
        match self {
            Backend::Memory => Arc::new(MemoryStore::new()),
            Backend::Sqlite => Arc::new(SqliteStore::open_in_memory().unwrap()),
        }
    }
}

/// What one run of the scenario did.
struct Run {
    /// The store under the fault wrapper, as the run left it.
    inner: Arc<dyn Store>,
    /// Store calls made.
    calls: CallCounts,
    /// Everything found wrong, each with where.
    problems: Vec<Problem>,
    /// The faulted call and the step it hit, if a fault fired.
    fired: Option<String>,
}

/// Run every step, retrying a failed one twice; the first failure is checked before the retry.
fn run_steps(kit: &Kit, engine: &Engine, inner: &Arc<dyn Store>, run: &mut Run) -> Vec<usize> {
    let mut acked = Vec::new();
    for (i, step) in STEPS.iter().enumerate() {
        for attempt in 1..=3 {
            let Err(error) = step.run(engine, &mut acked) else {
                break;
            };
            if run.fired.is_none() {
                run.fired = Some(format!("step {i} {step:?}: {error}"));
                if error.is_user_error() {
                    let problem = format!(
                        "step {i} {step:?}: {:?} for a store fault: {error}",
                        error.class()
                    );
                    run.problems.push((Check::Blame, problem));
                }
                // The client sees the error before it retries: is what it sees consistent?
                let found = consistency(kit, engine, inner, &acked, "after the failure");
                run.problems.extend(found);
            }
            if attempt == 3 {
                let problem = format!("step {i} {step:?} still fails: {error}");
                run.problems.push((Check::Replay, problem));
            }
        }
    }
    acked
}

/// Run the scenario once with `fault` armed (or none) and check it; with the clean run's final
/// state, check the replay too.
fn run(kit: &Kit, backend: Backend, fault: Option<Fault>, clean: Option<&[String]>) -> Run {
    let inner = backend.open();
    let faulty = Arc::new(FaultyStore::over(Arc::clone(&inner)));
    if let Some(fault) = fault {
        faulty.arm(fault);
    }
    let mut run = Run {
        inner: Arc::clone(&inner),
        calls: CallCounts::default(),
        problems: Vec::new(),
        fired: None,
    };
    // Opening reads (and on a new database writes) the vector-space binding: a fault there
    // fails the open with the service's error, and opening again works.
    let engine = match kit.try_engine(faulty.clone()) {
        Ok(engine) => engine,
        Err(error) => {
            if error.is_user_error() {
                let problem = format!("open: {:?} for a store fault: {error}", error.class());
                run.problems.push((Check::Blame, problem));
            }
            run.fired = Some(format!("open: {error}"));
            kit.engine(faulty.clone())
        }
    };
    let acked = run_steps(kit, &engine, &inner, &mut run);
    run.calls = faulty.counts();
    let fired = faulty.fired();
    if fault.is_some() && fired.is_empty() {
        run.problems
            .push((Check::Replay, "the fault never fired".into()));
    }
    if run.fired.is_none() {
        run.fired = fired
            .first()
            .map(|c| format!("{c}, absorbed by the engine"));
    }
    let found = consistency(kit, &engine, &inner, &acked, "at the end");
    run.problems.extend(found);
    if let Some(clean) = clean {
        let replayed = replay_differences(kit, &inner, clean);
        run.problems
            .extend(replayed.into_iter().map(|p| (Check::Replay, p)));
    }
    run
}

/// The clean run: its final state (which a fresh engine's replay leaves as it is) and its calls.
fn clean_run(kit: &Kit, backend: Backend) -> (Vec<String>, CallCounts) {
    let clean = run(kit, backend, None, None);
    assert!(
        clean.problems.is_empty(),
        "clean run: {:#?}",
        clean.problems
    );
    let state = final_state(clean.inner.as_ref());
    let replayed = replay_differences(kit, &clean.inner, &state);
    assert!(replayed.is_empty(), "clean run: {replayed:#?}");
    (state, clean.calls)
}

/// Run the scenario once per call `filter` counts, with that call faulted by `mode`, and hold
/// every run to `checks`; panic with every problem found, by fault. Returns the runs made.
fn sweep(backend: Backend, filter: CallFilter, mode: FaultMode, checks: &[Check]) -> u64 {
    let kit = Kit::new();
    let (clean, calls) = clean_run(&kit, backend);
    let total = calls.of(filter);
    let mut report = Vec::new();
    for nth in 1..=total {
        let fault = Fault { filter, nth, mode };
        let run = run(&kit, backend, Some(fault), Some(&clean));
        let problems: Vec<&str> = run
            .problems
            .iter()
            .filter(|(check, _)| checks.contains(check))
            .map(|(_, p)| p.as_str())
            .collect();
        if !problems.is_empty() {
            let fired = run.fired.unwrap_or_default();
            report.push(format!("N = {nth} ({fired}):\n  {}", problems.join("\n  ")));
        }
    }
    assert!(
        report.is_empty(),
        "{backend:?}, {mode:?} on the N-th of {total} {filter:?} calls: {} faults break \
         {checks:?}\n{}",
        report.len(),
        report.join("\n")
    );
    total
}

#[test]
fn a_clean_run_is_consistent_and_makes_store_calls() {
    let kit = Kit::new();
    let (state, calls) = clean_run(&kit, Backend::Memory);
    assert!(calls.writes > 10 && calls.reads > 50, "{calls:?}");
    // The scenario does what it is meant to: summaries and a profile, an edit, a forget.
    let text = state.join("\n");
    assert!(
        text.contains("Summary") && text.contains("Profile"),
        "{text}"
    );
    assert!(text.contains(EDITED_TEXT), "{text}");
    assert!(!text.contains(LINES[FORGOTTEN].4), "{text}");
    let (sqlite_state, sqlite_calls) = clean_run(&kit, Backend::Sqlite);
    assert_eq!(sqlite_state, state);
    assert_eq!(sqlite_calls, calls);
}

/// What holds after any single store fault: nothing acknowledged is lost, replay converges to
/// the clean run without duplicates or leftover jobs, and the client is told the service failed.
const DURABLE: &[Check] = &[Check::Acknowledged, Check::Replay, Check::Blame];
/// And the engine's caches and the stored vectors agree with the store (what B1–B3 at the end
/// of this file broke).
const COHERENT: &[Check] = &[Check::Caches, Check::Vectors];

#[test]
fn every_failed_call_keeps_acknowledged_turns_and_replays_to_the_clean_state() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        sweep(backend, CallFilter::Any, FaultMode::Fail, DURABLE);
    }
}

#[test]
fn every_lost_acknowledgement_keeps_acknowledged_turns_and_replays_to_the_clean_state() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        sweep(backend, CallFilter::Writes, FaultMode::LoseAck, DURABLE);
    }
}

#[test]
fn every_failed_call_leaves_caches_and_vectors_in_step_with_the_store() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        sweep(backend, CallFilter::Any, FaultMode::Fail, COHERENT);
    }
}

#[test]
fn every_lost_acknowledgement_leaves_caches_and_vectors_in_step_with_the_store() {
    for backend in [Backend::Memory, Backend::Sqlite] {
        sweep(backend, CallFilter::Writes, FaultMode::LoseAck, COHERENT);
    }
}

// ---------------------------------------------------------------------------------------------
// Inconsistencies the sweep found, one small test each; what went wrong before the fix:
//
// B1 `Memories::update` wrote the new text (`Store::update`) and its vector (`put_vectors`)
//    in two calls: when the second fails, the store keeps the new text with the old text's
//    vector (a fresh engine never re-embeds it: the window count still fits) and the cache
//    keeps the old terms and vector.
// B2 `Memories::commit` read the edited memories back (`Store::memories`) after its write and
//    before it takes forgotten memories out of the index: when that read fails, the write is
//    committed, the call errs, and forgotten memories stay in the cache (a retried forget
//    finds nothing left to write, so nothing repairs it).
// B3 A write whose acknowledgement was lost (committed, then an error) left the cache as it
//    was before the write, and a retry does not repair it: a retried add finds every turn
//    stored and writes an empty batch, which the store accepts without checking the round
//    precondition, so the stale index is kept; a job's or a forget's commit is not rewritten
//    (a job whose completion committed is even reported as failed: `record_job_failure` on a
//    finished job changes nothing).
// B4 Equal scores were ranked by index slot, i.e. by the order memories entered this process's
//    cache, not by anything stored: a fresh engine over the same store can order ties
//    differently (here after a turn with an explicit earlier round; in the sweep after a job
//    that ran late).
// ---------------------------------------------------------------------------------------------

/// An engine over a counting wrapper of a fresh in-memory store.
struct Setup {
    inner: Arc<dyn Store>,
    faulty: Arc<FaultyStore<dyn Store>>,
    engine: Engine,
}

impl Setup {
    fn new(kit: &Kit) -> Self {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let faulty = Arc::new(FaultyStore::over(Arc::clone(&inner)));
        let engine = kit.engine(faulty.clone());
        Self {
            inner,
            faulty,
            engine,
        }
    }
}

/// Run `prepare` then `act` once cleanly to find the calls of `act` that `which` selects, then
/// once per selected call, on a fresh store, with that call faulted by `mode`; `check` judges
/// each faulted run from `act`'s result.
fn fault_each(
    kit: &Kit,
    prepare: fn(&Engine),
    act: fn(&Engine) -> EngineResult<()>,
    which: fn(&Call) -> bool,
    mode: FaultMode,
    check: impl Fn(&Setup, EngineResult<()>),
) {
    let probe = Setup::new(kit);
    prepare(&probe.engine);
    let start = probe.faulty.counts().total();
    act(&probe.engine).unwrap();
    let targets: Vec<u64> = probe
        .faulty
        .calls()
        .iter()
        .filter(|c| c.index > start && which(c))
        .map(|c| c.index)
        .collect();
    assert!(!targets.is_empty(), "no call to fault");
    for nth in targets {
        let setup = Setup::new(kit);
        prepare(&setup.engine);
        let filter = CallFilter::Any;
        setup.faulty.arm(Fault { filter, nth, mode });
        let result = act(&setup.engine);
        println!("fault at call {nth}: {result:?}");
        check(&setup, result);
    }
}

fn assert_consistent(kit: &Kit, setup: &Setup, acked: &[usize]) {
    setup.faulty.disarm();
    let problems = consistency(kit, &setup.engine, &setup.inner, acked, "after the fault");
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Ann's two `helper` lines (the `retrieval` preset: no jobs), indexed.
fn ann_helper_lines(engine: &Engine) {
    engine.add(vec![new_turn(6), new_turn(7)]).unwrap();
    engine.reader().warm(&user("ann")).unwrap();
}

fn is_write(call: &Call) -> bool {
    call.kind == CallKind::Write
}

#[test]
fn bug_b1_an_edits_text_and_vector_commit_together() {
    let kit = Kit::new();
    let edit = |engine: &Engine| {
        let memory = turn_memory(engine, 6)?;
        let patch = MemoryPatch {
            text: Some("Please remind me to buy oil paints and brushes.".into()),
            ..MemoryPatch::default()
        };
        engine.update(&user("ann"), memory.id, &patch).map(|_| ())
    };
    // Whichever of the edit's writes fails, or loses its acknowledgement, the store and the
    // cache must agree (today the second write, the vector, is the one that breaks them).
    for mode in [FaultMode::Fail, FaultMode::LoseAck] {
        fault_each(&kit, ann_helper_lines, edit, is_write, mode, |setup, _| {
            assert_consistent(&kit, setup, &[6, 7])
        });
    }
}

#[test]
fn bug_b2_a_committed_forget_leaves_the_index_even_when_a_later_read_fails() {
    let kit = Kit::new();
    let forget = |engine: &Engine| {
        let memory = turn_memory(engine, 6)?;
        engine
            .forget(&user("ann"), memory.id, "the user asked")
            .map(|_| ())
    };
    // Every read of the forget fails in turn (today: the read after the write breaks it); the
    // client retries, and the retry may find the memory forgotten already.
    let is_read = |call: &Call| call.kind == CallKind::Read;
    fault_each(
        &kit,
        ann_helper_lines,
        forget,
        is_read,
        FaultMode::Fail,
        |setup, _| {
            setup.faulty.disarm();
            forget(&setup.engine).unwrap();
            assert_consistent(&kit, setup, &[6, 7]);
        },
    );
}

#[test]
fn bug_b3_a_retried_add_whose_acknowledgement_was_lost_is_searchable() {
    let kit = Kit::new();
    let prepare = |engine: &Engine| {
        engine.add(vec![new_turn(6)]).unwrap();
        engine.reader().warm(&user("ann")).unwrap();
    };
    let add = |engine: &Engine| engine.add(vec![new_turn(7)]).map(|_| ());
    fault_each(
        &kit,
        prepare,
        add,
        is_write,
        FaultMode::LoseAck,
        |setup, result| {
            assert!(result.is_err(), "the add's write did not fail");
            // The client retries with the same key: the turn is reported a duplicate.
            let report = setup.engine.add(vec![new_turn(7)]).unwrap();
            assert!(report.turns[0].is_duplicate());
            assert_consistent(&kit, setup, &[6, 7]);
        },
    );
}

#[test]
fn bug_b4_equal_scores_rank_the_same_in_every_process() {
    let kit = Kit::new();
    let setup = Setup::new(&kit);
    // Two turns with the same words, the second written with an earlier round: this process
    // indexes them in write order, a fresh one in stored order.
    for (round, key) in [(5, "late"), (1, "early")] {
        let mut turn = new_turn(6);
        turn.round = Some(round);
        turn.key = Some(key.into());
        setup.engine.add(vec![turn]).unwrap();
    }
    let fresh = kit.engine(Arc::clone(&setup.inner));
    let ranked = |engine: &Engine| -> Vec<String> {
        let mut request = SearchRequest::new(user("ann"), "watercolour paper");
        // The tie under test is the first hop's: a second hop would lift the copy of the
        // first hit and then keep it below that hit, breaking the tie the same way.
        request.second_hop = None;
        let hits = engine.search(&request).unwrap().hits;
        assert_eq!(hits[0].score, hits[1].score, "not a tie");
        hits.iter().map(|h| h.memory.id.to_string()).collect()
    };
    assert_eq!(ranked(&setup.engine), ranked(&fresh));
}
