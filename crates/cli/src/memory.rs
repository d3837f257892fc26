//! Commands over one user's memories: search, show, list, forget, purge, and the user list.

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};
use mnemos_render as render;

use mnemos_core::{
    defaults, KindTag, MemoryFilter, MemoryId, Metadata, Page, RetrieverKind, SearchFilter,
    StateFilter, Timestamp, TurnId, UserKey,
};
use mnemos_engine::{Engine, ForgetMatching, RecallRequest, SearchRequest, ViewKind};
use mnemos_eval::cli::SearchShapeArgs;
use mnemos_inspect::{Browse, Inspect, MemorySort};
use mnemos_setup::{Config, OpenOptions};

use crate::output;
use crate::usage::usage;
use crate::UserArg;

/// The engine over the existing database (never creates one); `embed` loads the embedder.
pub fn existing_engine(config: &Config, embed: bool, preset: Option<&str>) -> Result<Engine> {
    if config.db.sqlite_path().is_some_and(|path| !path.is_file()) {
        usage!(
            "there is no database at {} (ingest turns first, or pass --db FILE)",
            config.db
        );
    }
    let options = OpenOptions::existing().embedder(embed).preset(preset);
    Ok(mnemos_setup::open(config, &options)?)
}

/// `user`, or a usage error naming the users there are.
fn known_user(engine: &Engine, user: &UserArg, config: &Config) -> Result<UserKey> {
    let key = user.key(config)?;
    if engine.has_user(&key)? {
        return Ok(key);
    }
    let users = engine.users()?;
    let names: Vec<&str> = users
        .iter()
        .filter(|u| u.tenant == key.tenant)
        .map(|u| u.user.as_str())
        .take(10)
        .collect();
    let listed = if names.is_empty() {
        "it holds no user".to_string()
    } else {
        format!("its users include {}", names.join(", "))
    };
    usage!(
        "no user '{}' (tenant '{}') in {}; {listed}",
        key.user,
        key.tenant,
        config.db
    );
}

#[derive(Args)]
pub struct SearchArgs {
    query: String,
    #[command(flatten)]
    user: UserArg,
    #[arg(long, short = 'k', default_value_t = 10)]
    top_k: usize,
    /// Token budget for the returned memories.
    #[arg(long)]
    budget: Option<usize>,
    #[arg(long, value_enum, default_value_t = RetrieverKind::Hybrid)]
    retriever: RetrieverKind,
    /// Show each hit's score breakdown.
    #[arg(long)]
    explain: bool,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// Only these kinds; repeatable.
    #[arg(long = "kind", value_enum)]
    kinds: Vec<KindTag>,
    #[command(flatten)]
    shape: SearchShapeArgs,
    /// Leave out hits whose relevance (the calibrated chance, 0..1, that the memory is
    /// evidence for the query) is below this; default: `retrieval.min_relevance` (with
    /// --preset: the default preset applies it, the research presets only when given).
    #[arg(long)]
    min_relevance: Option<f32>,
    /// Answer with this preset's recall (what it would hand a prompt, within --budget) instead
    /// of the retrieval pipeline's ranked hits.
    #[arg(long, conflicts_with_all = ["kinds", "hops", "hop_keep", "split_questions"])]
    preset: Option<String>,
    /// Also show memories a later statement superseded (after the current ones, marked).
    #[arg(long, conflicts_with = "preset")]
    include_superseded: bool,
    /// Answer about the past: what was valid then (2024-03-02 = the end of that day, or an
    /// RFC 3339 time).
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<Timestamp>,
}

pub fn search(config: &Config, args: SearchArgs) -> Result<()> {
    let engine = existing_engine(config, true, args.preset.as_deref())?;
    let user = known_user(&engine, &args.user, config)?;
    if args.preset.is_some() {
        return recall(&engine, &user, &args);
    }
    let mut request = SearchRequest::new(user, args.query);
    request.top_k = Some(args.top_k);
    request.token_budget = args.budget;
    request.retriever = args.retriever;
    request.filter = SearchFilter {
        kinds: args.kinds,
        agent: args.agent,
        session: args.session,
        ..SearchFilter::default()
    };
    request.include_superseded = args.include_superseded;
    request.as_of = args.as_of;
    args.shape.apply(&mut request);
    request.min_relevance = args.min_relevance;
    let results = engine.search(&request)?;
    output::emit(args.json, &results, || {
        render::search_results(&results, args.explain)
    })
}

/// `search --preset`: the preset's recall, with a warning when derived work is still pending
/// (its summaries or profiles are then missing from what recall can use).
fn recall(engine: &Engine, user: &UserKey, args: &SearchArgs) -> Result<()> {
    let pending = engine.pending_jobs(Some(user))?;
    if !pending.is_empty() {
        eprintln!(
            "warning: {} derived job(s) of {} have not run yet, so their memories are missing \
             from this recall; run `mnemos jobs run --user {}`",
            pending.len(),
            user.user,
            user.user
        );
    }
    let agent = args.agent.as_deref().unwrap_or(defaults::DEFAULT_AGENT);
    let budget = args.budget.unwrap_or(defaults::DEFAULT_BUDGET);
    let mut request = RecallRequest::new(args.query.clone(), budget);
    request.session = args.session.clone();
    request.as_of = args.as_of;
    request.min_relevance = args.min_relevance;
    let context = engine.recall(user, agent, &request)?;
    output::emit(args.json, &context, || {
        render::context(&context, args.explain)
    })
}

#[derive(Args)]
pub struct ShowArgs {
    /// A memory id or a turn id; or `persona`, `timeline`, `chains` (a preset's view), or
    /// `retention` (memories kept over rounds, and who forgot the rest).
    id: Option<String>,
    /// Instead of one memory: a preset's view of the user's memories.
    #[arg(
        long,
        value_enum,
        conflicts_with = "id",
        required_unless_present = "id"
    )]
    view: Option<ViewKind>,
    #[command(flatten)]
    user: UserArg,
    /// With --view: one agent only.
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

/// Memories kept over the rounds (thinned to 40 points) and who forgot the others.
fn show_retention(engine: &Engine, user: &UserKey, args: &ShowArgs) -> Result<()> {
    const POINTS: usize = 40;
    let retention = engine.retention(user, args.agent.as_deref(), POINTS)?;
    output::emit(args.json, &retention, || render::retention(&retention))
}

pub fn show(config: &Config, mut args: ShowArgs) -> Result<()> {
    // `show persona` / `show timeline` / `show chains` read as views.
    match args.id.as_deref() {
        Some("persona") => (args.id, args.view) = (None, Some(ViewKind::Persona)),
        Some("timeline") => (args.id, args.view) = (None, Some(ViewKind::Timeline)),
        Some("chains") => (args.id, args.view) = (None, Some(ViewKind::Chains)),
        _ => {}
    }
    let engine = existing_engine(config, false, None)?;
    let user = known_user(&engine, &args.user, config)?;
    if args.id.as_deref() == Some("retention") {
        return show_retention(&engine, &user, &args);
    }
    if let Some(kind) = args.view {
        let view = engine.view(&user, args.agent.as_deref(), kind)?;
        output::emit(args.json, &view, || {
            render::view(&user, args.agent.as_deref(), &view)
        })?;
        return Ok(());
    }
    let text = args.id.unwrap_or_default();
    let Ok(id) = text.parse::<MemoryId>() else {
        usage!(
            "'{text}' is neither a memory or turn id, nor persona, timeline, chains or retention"
        );
    };
    match engine.get(&user, id) {
        Ok(memory) => {
            let history = engine.history(&user, id)?;
            if args.json {
                let value = serde_json::json!({ "memory": memory, "history": history });
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print!("{}", render::memory_card(&memory, &history));
            }
        }
        // The id may name a turn rather than a memory.
        Err(err) if err.is_user_error() => {
            let turn = engine.turn(&user, TurnId(id.0)).map_err(|_| err)?;
            output::emit(args.json, &turn, || render::turn_card(&turn))?;
        }
        Err(err) => return Err(err.into()),
    }
    Ok(())
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    user: UserArg,
    #[arg(long, default_value_t = 0)]
    offset: usize,
    #[arg(long, default_value_t = defaults::DEFAULT_PAGE)]
    limit: usize,
    /// Only these kinds; repeatable.
    #[arg(long = "kind", value_enum)]
    kinds: Vec<KindTag>,
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    session: Option<String>,
    #[arg(long, value_enum, default_value_t = StateFilter::Active)]
    state: StateFilter,
    /// Metadata filter KEY=VALUE; repeatable.
    #[arg(long = "meta")]
    metadata: Vec<String>,
    /// Only memories created at or after this time (2024-05-01, or 2024-05-01T10:00:00Z).
    #[arg(long, value_parser = parse_time)]
    since: Option<Timestamp>,
    /// Only memories created before this time.
    #[arg(long, value_parser = parse_time)]
    until: Option<Timestamp>,
    /// Only memories whose text holds this, ignoring case (Chinese too).
    #[arg(long)]
    text: Option<String>,
    /// The order: oldest first, newest first, or most important first.
    #[arg(long, value_enum, default_value_t = SortArg::Oldest)]
    sort: SortArg,
    /// Only memories still current (no later statement superseded them).
    #[arg(long, conflicts_with = "as_of")]
    current: bool,
    /// Only memories valid at this moment (2024-03-02 = the end of that day, or an RFC 3339
    /// time).
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<Timestamp>,
    #[arg(long)]
    json: bool,
}

/// `--sort` of `mnemos list`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SortArg {
    Oldest,
    Newest,
    Importance,
}

impl From<SortArg> for MemorySort {
    fn from(sort: SortArg) -> Self {
        match sort {
            SortArg::Oldest => MemorySort::Oldest,
            SortArg::Newest => MemorySort::Newest,
            SortArg::Importance => MemorySort::Importance,
        }
    }
}

/// An RFC 3339 time, or a date (midnight UTC).
fn parse_as_of(text: &str) -> Result<Timestamp, String> {
    mnemos_engine::truth::parse_as_of(text).map_err(|e| e.to_string())
}

fn parse_time(text: &str) -> Result<Timestamp, String> {
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(Timestamp(time.timestamp_millis()));
    }
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| Timestamp(t.and_utc().timestamp_millis()))
        .ok_or_else(|| format!("'{text}' is not a date (2024-05-01) or an RFC 3339 time"))
}

pub fn list(config: &Config, args: ListArgs) -> Result<()> {
    let mut metadata = Metadata::new();
    for pair in &args.metadata {
        let Some((k, v)) = pair.split_once('=') else {
            usage!("--meta '{pair}' is not KEY=VALUE");
        };
        metadata.insert(k.to_string(), v.to_string());
    }
    if args.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
        usage!("--text must not be blank");
    }
    let engine = existing_engine(config, false, None)?;
    let user = known_user(&engine, &args.user, config)?;
    let filter = MemoryFilter {
        kinds: args.kinds,
        agent: args.agent,
        session: args.session,
        state: args.state,
        metadata,
        created_since: args.since,
        created_before: args.until,
        validity: match (args.as_of, args.current) {
            (Some(at), _) => mnemos_core::Validity::At(at),
            (None, true) => mnemos_core::Validity::Current,
            (None, false) => mnemos_core::Validity::Any,
        },
    };
    let page = Page {
        offset: args.offset,
        limit: args.limit,
    };
    let browse = Browse {
        filter,
        text: args.text,
        sort: args.sort.into(),
    };
    let page = engine.browse(&user, &browse, page)?;
    output::emit(args.json, &page, || render::memory_page(&page))
}

#[derive(Args)]
pub struct ForgetArgs {
    /// The memory to forget, at once. Or --query.
    #[arg(required_unless_present = "query", conflicts_with = "query")]
    id: Option<MemoryId>,
    /// What to forget, described in words ("my old address"): the memories it names are
    /// listed, and forgotten only with --yes.
    #[arg(long)]
    query: Option<String>,
    #[command(flatten)]
    user: UserArg,
    /// With --query: only this agent's memories.
    #[arg(long, requires = "query")]
    agent: Option<String>,
    /// With --query: at most this many memories, the most relevant first (1 to 100; default
    /// 10).
    #[arg(long, requires = "query")]
    limit: Option<usize>,
    /// With --query: the relevance (0..1) a memory needs to be taken for its relevance alone
    /// (default 0.025).
    #[arg(long, requires = "query")]
    min_relevance: Option<f32>,
    /// With --query: forget what is listed (without it nothing is forgotten).
    #[arg(long, requires = "query")]
    yes: bool,
    /// With --query: the selection (and what was forgotten) as JSON.
    #[arg(long, requires = "query")]
    json: bool,
    #[arg(long, default_value = "forgotten at the user's request")]
    reason: String,
}

pub fn forget(config: &Config, args: ForgetArgs) -> Result<()> {
    let (Some(id), None) = (args.id, &args.query) else {
        return forget_matching(config, args);
    };
    let engine = existing_engine(config, false, None)?;
    let user = known_user(&engine, &args.user, config)?;
    let report = engine.forget(&user, id, &args.reason)?;
    if report.already_forgotten {
        println!(
            "{} was already forgotten: {}",
            report.memory.id,
            render::state(&report.memory.state)
        );
    } else {
        println!(
            "forgot {} (version {}): {}",
            report.memory.id, report.memory.version, args.reason
        );
    }
    if report.derived > 0 {
        println!(
            "also forgot {} memory(ies) derived from it (summaries, profiles…)",
            report.derived
        );
    }
    Ok(())
}

/// `forget --query`: the memories a description names, forgotten with `--yes`.
fn forget_matching(config: &Config, args: ForgetArgs) -> Result<()> {
    let query = args.query.unwrap_or_default();
    let engine = existing_engine(config, true, None)?;
    let user = known_user(&engine, &args.user, config)?;
    let mut request = ForgetMatching::new(query.as_str(), args.reason.as_str());
    request.agent = args.agent;
    request.limit = args.limit.unwrap_or(request.limit);
    request.min_relevance = args.min_relevance;
    request.confirm = args.yes;
    let report = engine.forget_matching(&user, &request)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let count = report.candidates.len();
    if count == 0 {
        println!(
            "no memory of {} matches \"{query}\"; nothing forgotten",
            user.user
        );
        return Ok(());
    }
    let verb = if report.confirmed {
        "forgot"
    } else {
        "would forget"
    };
    println!(
        "{verb} {count} memory(ies) of {} matching \"{query}\":",
        user.user
    );
    print!("{}", render::forget_candidates(&report));
    if report.confirmed {
        println!("reason: {}", args.reason);
    } else {
        println!("nothing forgotten; re-run with --yes to forget these");
    }
    Ok(())
}

#[derive(Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    user: UserArg,
    /// Required: purging cannot be undone.
    #[arg(long)]
    yes: bool,
}

pub fn purge(config: &Config, args: PurgeArgs) -> Result<()> {
    if !args.yes {
        usage!(
            "purge erases every memory of user '{}' and cannot be undone; pass --yes",
            args.user.user
        );
    }
    let engine = existing_engine(config, false, None)?;
    let user = known_user(&engine, &args.user, config)?;
    let report = engine.purge(&user)?;
    println!(
        "purged {user}: {} turns, {} memories, {} history entries, {} vectors",
        report.turns, report.memories, report.history_entries, report.vectors
    );
    Ok(())
}

#[derive(Args)]
pub struct UsersArgs {
    /// Each user's turns, memories by kind and state, last activity and jobs.
    #[arg(long)]
    detail: bool,
    /// With --detail: as JSON.
    #[arg(long, requires = "detail")]
    json: bool,
}

pub fn users(config: &Config, args: UsersArgs) -> Result<()> {
    let engine = existing_engine(config, false, None)?;
    let users = engine.users().context("listing users")?;
    if !args.detail {
        for user in users {
            println!("{user}");
        }
        return Ok(());
    }
    let mut all = Vec::new();
    for user in &users {
        let overview = engine.overview(user)?;
        if args.json {
            all.push(serde_json::json!({ "user": user.user, "overview": overview }));
        } else {
            print!("{}", render::user_overview(user, &overview));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    }
    Ok(())
}
