//! MCP (Model Context Protocol): the engine as six tools an assistant calls — `remember`,
//! `recall`, `search`, `forget`, `list` and `show` — over stdio ([`serve_stdio`], what
//! `mnemos mcp` runs) or streamable HTTP (`/mcp`, mounted by [`crate::router`] behind the same
//! API-key check as `/v1`; sessions for the SDKs and plain JSON-RPC for everyone else, see
//! `http`). See `docs/mcp.md`.
//!
//! Tenancy: over stdio the tools act in the tenant given at start; over HTTP every request acts
//! in its key's tenant (the [`Caller`] the auth middleware put in the request), and the admin
//! key reads no tenant's data. No tool argument names a tenant. A call naming no `user` (or
//! `agent`) acts for the [`McpDefaults`] the server was started with.
//!
//! A caller's mistake (a missing, mistyped or unknown argument, an unknown id or user, empty
//! text, a bad cursor) is a tool result with `is_error` and a message starting with its code,
//! never a protocol error: the tools read their own arguments ([`Arguments`]). Engine calls run
//! off the async side (`params::blocking`).

use std::future::Future;
use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::handler::server::common::{schema_for_input, schema_for_type, FromContextPart};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResult, ContentBlock, Extensions, Implementation, JsonObject, ServerCapabilities,
    ServerConfig as McpInfo,
};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use mnemos_core::defaults::{DEFAULT_AGENT, DEFAULT_BUDGET, DEFAULT_PAGE, DEFAULT_SESSION};
use mnemos_core::{Deadline, Hit, Memory, MemoryFilter, Paged, Role, Scope, StateFilter, UserKey};
use mnemos_engine::{
    Engine, ForgetMatchReport, ForgetMatching, NewTurn, RecallRequest, SearchRequest, ViewKind,
    MAX_REQUEST_KEY_LEN,
};
use mnemos_render as render;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorCode};
use crate::params::{blocking, cursor, kind_list, known_user, memory_id, memory_ids, named, page};
use crate::{JobWorker, ServerError};

mod http;
pub(crate) use http::routes;

const DEFAULT_TOP_K: usize = 10;
const MAX_TOP_K: usize = 100;
/// Turns one `remember` call may store.
const MAX_TURNS: usize = crate::MAX_TURNS_PER_REQUEST;

const INSTRUCTIONS: &str = "mnemos is long-term memory about the people you talk with. \
Before answering a question that may depend on what a user said in earlier conversations, call \
`recall` and use its text. When a user tells you something worth keeping (facts about \
themselves, people they know, preferences, plans, events), call `remember` with their words. \
`search` shows ranked memories with their ids; `forget` takes such an id, or a description of \
what to forget, listed first and forgotten when called again with `confirm`. `list` pages through \
everything stored; `show` gives the user's persona or timeline.";

/// Which tenant the tools act in.
#[derive(Clone, Debug)]
enum Tenancy {
    /// Every call (stdio: one local user of the machine, the configured tenant).
    Fixed(String),
    /// The tenant of the API key on each HTTP request.
    Caller,
}

/// The MCP server: the memory tools over one engine.
#[derive(Clone)]
pub struct MemoryTools {
    engine: Arc<Engine>,
    tenancy: Tenancy,
    defaults: McpDefaults,
    tool_router: ToolRouter<Self>,
}

/// Who said a turn.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnRole {
    /// The person.
    #[default]
    User,
    /// You, the assistant.
    Assistant,
    /// Anyone else in the conversation.
    Other,
}

impl From<TurnRole> for Role {
    fn from(role: TurnRole) -> Self {
        match role {
            TurnRole::User => Role::User,
            TurnRole::Assistant => Role::Assistant,
            TurnRole::Other => Role::Other,
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnArg {
    /// Who said it: `user` (default), `assistant` or `other`.
    #[serde(default)]
    pub role: TurnRole,
    /// What was said, in the speaker's words and language.
    pub text: String,
    /// The speaker's name, when it helps (e.g. in a group conversation).
    pub speaker: Option<String>,
}

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The person the memory is about: a stable name or id of your choosing (may be left
    /// out when the server has a default user).
    pub user: Option<String>,
    /// The turns to store, in order. Alternatively give `text` (and `role`) for one turn.
    pub turns: Option<Vec<TurnArg>>,
    /// One turn's text (instead of `turns`).
    pub text: Option<String>,
    /// The role of `text`: `user` (default), `assistant` or `other`.
    pub role: Option<TurnRole>,
    /// Which assistant or app remembers (default: the server's default agent, else `default`);
    /// each agent has its own memory.
    pub agent: Option<String>,
    /// The conversation the turns belong to (default `default`).
    pub session: Option<String>,
    /// An idempotency key: calling again with the same key and turns stores nothing twice.
    pub key: Option<String>,
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The person whose memory to draw on (may be left out when the server has a default
    /// user).
    pub user: Option<String>,
    /// What you are about to answer: the user's question or message.
    pub query: String,
    /// Approximate tokens the context may use (default 1024).
    pub budget: Option<usize>,
    /// The agent whose memory to use (default: the server's default agent, else `default`).
    pub agent: Option<String>,
    /// Only this conversation (default: all of them).
    pub session: Option<String>,
    /// Answer about the past: what was true then, a date (`2024-03-02`) or an RFC 3339
    /// time. Leave it out for what is true now.
    pub as_of: Option<String>,
    /// Leave out memories less likely than this (0 to 1) to be relevant; default: the
    /// server's floor, under which an unrelated question gets nothing.
    pub min_relevance: Option<f32>,
    /// The HTTP request's time limit (not an argument: the server sets it).
    #[serde(skip)]
    #[schemars(skip)]
    pub deadline: Deadline,
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The person whose memories to search (may be left out when the server has a default
    /// user).
    pub user: Option<String>,
    /// What to look for, in words.
    pub query: String,
    /// How many memories at most (default 10, at most 100).
    pub top_k: Option<usize>,
    /// Only these kinds, comma-separated (e.g. `turn`, `summary`).
    pub kind: Option<String>,
    /// Only this agent's memories.
    pub agent: Option<String>,
    /// Also return memories a later statement replaced, after the current ones and marked
    /// `superseded` (default false).
    pub include_superseded: Option<bool>,
    /// Only memories true at this moment: a date (`2024-03-02`) or an RFC 3339 time.
    pub as_of: Option<String>,
    /// Leave out memories less likely than this (0 to 1) to be relevant; default: the
    /// server's floor, under which an unrelated question gets nothing.
    pub min_relevance: Option<f32>,
    /// The HTTP request's time limit (not an argument: the server sets it).
    #[serde(skip)]
    #[schemars(skip)]
    pub deadline: Deadline,
}

/// Arguments of `forget`: an `id`, or a `query` that describes what to forget.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// The person the memory belongs to (may be left out when the server has a default
    /// user).
    pub user: Option<String>,
    /// The memory's id, from `search` or `list`: forgotten at once. Or give `query`.
    pub id: Option<String>,
    /// What to forget, in words ("my old address"), instead of an id. Without `confirm` the
    /// answer only lists what would be forgotten.
    pub query: Option<String>,
    /// With `query`: `true` forgets what the list showed (default false: nothing is written).
    pub confirm: Option<bool>,
    /// With `query` and `confirm`: the ids the list showed, so nothing else is forgotten.
    pub ids: Option<Vec<String>>,
    /// With `query`: at most this many memories (default 10, at most 100).
    pub limit: Option<usize>,
    /// With `query`: only this agent's memories.
    pub agent: Option<String>,
    /// Why it is forgotten (kept in the memory's history), e.g. "the user asked to forget it".
    pub reason: String,
}

/// Arguments of `list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// The person whose memories to list (may be left out when the server has a default
    /// user).
    pub user: Option<String>,
    /// Memories per page (default 50).
    pub limit: Option<usize>,
    /// Where to continue: the `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Only these kinds, comma-separated (e.g. `turn`, `summary`).
    pub kind: Option<String>,
}

/// Which view `show` draws.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ViewArg {
    /// Who the user is: what they said about themselves, with the times it was said.
    Persona,
    /// What happened when.
    Timeline,
    /// The memory chains per category, shared nodes and what calibration superseded (m4).
    Chains,
}

/// Arguments of `show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowArgs {
    /// The person to show (may be left out when the server has a default user).
    pub user: Option<String>,
    /// `persona` or `timeline`.
    pub view: ViewArg,
    /// The agent whose memory to show (default: the server's default agent, else `default`).
    pub agent: Option<String>,
}

type Outcome = Result<(String, Value), ApiError>;

/// Who a tool call is about when it names no one. Desktop assistants and generic clients never
/// send a `user`, so a server set up for one person (`--user`, `--agent`) fills them in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpDefaults {
    /// The user of a call without `user`; none: such a call fails, saying how to fix it.
    pub user: Option<String>,
    /// The agent of a call without `agent` where it picks whose memory is used (`remember`,
    /// `recall`, `show`; `search` without `agent` still searches every agent's); none:
    /// `default`.
    pub agent: Option<String>,
}

impl McpDefaults {
    /// Check the names by the rules a call's `user` and `agent` follow.
    pub fn validate(&self) -> Result<(), ServerError> {
        for (what, name) in [("default user", &self.user), ("default agent", &self.agent)] {
            if let Some(name) = name {
                mnemos_core::validate_name(what, name)
                    .map_err(|e| ServerError::Invalid(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// The server's instructions, naming the defaults a client may rely on.
    fn instructions(&self) -> String {
        let mut text = INSTRUCTIONS.to_string();
        match &self.user {
            Some(user) => text.push_str(&format!(
                " `user` may be left out: it defaults to '{user}', the person this server is set \
                 up for; pass it only to speak of someone else."
            )),
            None => text.push_str(" `user` is the person's stable name or id, chosen by you."),
        }
        if let Some(agent) = &self.agent {
            text.push_str(&format!(
                " Memories are kept and recalled for agent '{agent}' unless a call names another."
            ));
        }
        text
    }
}

/// The answer to a tool call: text for the model, the same as JSON in `structuredContent`; a
/// failure is a tool error naming its code.
fn answer(outcome: Outcome) -> Result<CallToolResult, ErrorData> {
    Ok(match outcome {
        Ok((text, structured)) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            result
        }
        Err(error) => {
            let code = serde_json::to_value(error.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "error".into());
            CallToolResult::error(vec![ContentBlock::text(format!(
                "error ({code}): {}",
                error.message
            ))])
        }
    })
}

/// The input schema a tool taking `T` publishes: what schemars derives from `T`, as rmcp
/// derives it for its own argument wrapper.
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // Only a schema whose root is not an object fails; every argument type is a struct.
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_type::<T>())
}

/// A tool's arguments, read by the tool rather than by rmcp: a missing, mistyped or unknown
/// argument is then a tool error the model can read and correct, not a protocol error that
/// most clients show as a failure of the server.
struct Arguments<T>(Result<T, ApiError>);

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Arguments<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        Ok(Arguments(parse_arguments(arguments)))
    }
}

/// `arguments` as `T`, or an `invalid_request` naming the argument at fault.
fn parse_arguments<T: DeserializeOwned>(arguments: JsonObject) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|error| {
        let path = error.path().to_string();
        let message = error.into_inner().to_string();
        // The root's path is "."; an unknown field's message already names it.
        let message = if path == "." || message.contains(&format!("`{path}`")) {
            message
        } else {
            format!("{path}: {message}")
        };
        ApiError::new(ErrorCode::InvalidRequest, message)
    })
}

/// The arguments every tool shares, which the server's defaults fill in.
trait ToolArgs: Send + 'static {
    /// Take the `user` argument.
    fn take_user(&mut self) -> Option<String>;
    /// The `agent` argument where it picks whose memory is used (not where it filters).
    fn own_agent(&mut self) -> Option<&mut Option<String>> {
        None
    }
    /// Hand the call the HTTP request's time limit, where its work checks one.
    fn set_deadline(&mut self, _deadline: Deadline) {}
}

impl ToolArgs for RememberArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
    fn own_agent(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.agent)
    }
}

impl ToolArgs for RecallArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
    fn set_deadline(&mut self, deadline: Deadline) {
        self.deadline = deadline;
    }
    fn own_agent(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.agent)
    }
}

impl ToolArgs for ShowArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
    fn own_agent(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.agent)
    }
}

impl ToolArgs for SearchArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
    fn set_deadline(&mut self, deadline: Deadline) {
        self.deadline = deadline;
    }
}

impl ToolArgs for ForgetArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
}

impl ToolArgs for ListArgs {
    fn take_user(&mut self) -> Option<String> {
        self.user.take()
    }
}

impl MemoryTools {
    /// Tools acting in `tenant` (stdio: a local assistant of the configured tenant).
    pub fn in_tenant(engine: Arc<Engine>, tenant: String, defaults: McpDefaults) -> Self {
        Self::with_tenancy(engine, Tenancy::Fixed(tenant), defaults)
    }

    /// Tools acting in the tenant of each HTTP request's API key.
    pub fn per_caller(engine: Arc<Engine>, defaults: McpDefaults) -> Self {
        Self::with_tenancy(engine, Tenancy::Caller, defaults)
    }

    fn with_tenancy(engine: Arc<Engine>, tenancy: Tenancy, defaults: McpDefaults) -> Self {
        MemoryTools {
            engine,
            tenancy,
            defaults,
            tool_router: Self::tool_router(),
        }
    }

    /// The tenant this call acts in.
    fn tenant(&self, extensions: &Extensions) -> Result<String, ApiError> {
        match &self.tenancy {
            Tenancy::Fixed(tenant) => Ok(tenant.clone()),
            Tenancy::Caller => match extensions
                .get::<Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
            {
                Some(Caller::Tenant(tenant)) => Ok(tenant.clone()),
                Some(Caller::Admin) => Err(ApiError::new(
                    ErrorCode::Forbidden,
                    "the admin key manages keys only; use a tenant's key for its memories",
                )),
                None => Err(ApiError::new(
                    ErrorCode::Unauthorized,
                    "this request carries no authenticated caller",
                )),
            },
        }
    }

    /// The caller's user: the one the call names, else the server's default user.
    fn user(&self, extensions: &Extensions, named: Option<String>) -> Result<UserKey, ApiError> {
        let tenant = self.tenant(extensions)?;
        let name = named
            .or_else(|| self.defaults.user.clone())
            .ok_or_else(|| {
                ApiError::invalid("no user given: pass `user`, or start the server with --user")
            })?;
        Ok(UserKey::new(tenant, name)?)
    }

    /// Check a call's arguments, fill in the defaults, run `work` with the engine off the
    /// async side and answer with its outcome.
    async fn call<A: ToolArgs>(
        &self,
        args: Result<A, ApiError>,
        extensions: &Extensions,
        work: fn(&Engine, UserKey, A) -> Outcome,
    ) -> Result<CallToolResult, ErrorData> {
        let prepared = args.and_then(|mut args| {
            let user = self.user(extensions, args.take_user())?;
            // Over HTTP the time-limit layer put the request's deadline in its parts.
            if let Some(parts) = extensions.get::<Parts>() {
                args.set_deadline(crate::extract::deadline_of(parts));
            }
            if let Some(agent) = args.own_agent() {
                if agent.is_none() {
                    agent.clone_from(&self.defaults.agent);
                }
            }
            Ok((user, args))
        });
        let (user, args) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return answer(Err(error)),
        };
        let engine = Arc::clone(&self.engine);
        answer(blocking(move || work(&engine, user, args)).await)
    }
}

#[tool_router]
impl MemoryTools {
    /// Store what was said in a conversation, so later conversations can draw on it. Call it
    /// when the user shares something worth keeping: facts about themselves or people they
    /// know, preferences, plans, events, decisions. Pass their own words (any language), as
    /// `turns` or as one `text`. Summaries and a persona are derived in the background.
    #[tool(
        input_schema = input_schema::<RememberArgs>(),
        annotations(title = "Remember", read_only_hint = false, destructive_hint = false)
    )]
    async fn remember(
        &self,
        Arguments(args): Arguments<RememberArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, remember).await
    }

    /// Get what you should know to answer the user: the memory context for a query, within a
    /// token budget. Call it before answering anything that may depend on earlier
    /// conversations, and put the returned text in your reasoning. Each source line names the
    /// memory it came from. A user with nothing stored gets an empty context.
    #[tool(
        input_schema = input_schema::<RecallArgs>(),
        annotations(title = "Recall", read_only_hint = true)
    )]
    async fn recall(
        &self,
        Arguments(args): Arguments<RecallArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, recall).await
    }

    /// Find specific memories: ranked matches for a query, each with its full text, id, score
    /// and a one-line reason (matched words, meaning similarity). Use it to look something up
    /// or to find the id of a memory to forget; to answer the user, prefer `recall`.
    #[tool(
        input_schema = input_schema::<SearchArgs>(),
        annotations(title = "Search memories", read_only_hint = true)
    )]
    async fn search(
        &self,
        Arguments(args): Arguments<SearchArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, search).await
    }

    /// Forget memories when the user asks you to, or when they are wrong: they leave search
    /// and recall for good, with the reason kept in their history, and what was derived from
    /// them (summaries, persona entries) goes too. Give the memory's `id` (from `search` or
    /// `list`) to forget it at once, or a `query` describing what to forget ("my old address"):
    /// the answer lists what would go and forgets nothing; call again with `confirm: true` and
    /// the listed `ids` to forget them.
    #[tool(
        input_schema = input_schema::<ForgetArgs>(),
        annotations(
            title = "Forget memories",
            destructive_hint = true,
            idempotent_hint = true
        )
    )]
    async fn forget(
        &self,
        Arguments(args): Arguments<ForgetArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, forget).await
    }

    /// List a user's memories, oldest first, a page at a time (pass `next_cursor` as `cursor`
    /// for the next page), optionally of some kinds only. Each line starts with the memory's
    /// id and ends with its full text. Use it to review everything stored, e.g. when the user
    /// asks what you remember.
    #[tool(
        input_schema = input_schema::<ListArgs>(),
        annotations(title = "List memories", read_only_hint = true)
    )]
    async fn list(
        &self,
        Arguments(args): Arguments<ListArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, list).await
    }

    /// Show an overview of a user as text: `persona` (who they are: what they said about
    /// themselves, with when) or `timeline` (what happened when).
    #[tool(
        input_schema = input_schema::<ShowArgs>(),
        annotations(title = "Show persona or timeline", read_only_hint = true)
    )]
    async fn show(
        &self,
        Arguments(args): Arguments<ShowArgs>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(args, &extensions, show).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryTools {
    fn get_info(&self) -> McpInfo {
        McpInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemos", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.defaults.instructions())
    }
}

/// The turns of a `remember` call, checked.
fn new_turns(user: &UserKey, args: RememberArgs) -> Result<Vec<NewTurn>, ApiError> {
    let turns = match (args.turns, args.text) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid("give either `turns` or `text`, not both"))
        }
        (Some(turns), None) => turns,
        (None, Some(text)) => vec![TurnArg {
            role: args.role.unwrap_or_default(),
            text,
            speaker: None,
        }],
        (None, None) => {
            return Err(ApiError::invalid(
                "nothing to remember: give `turns` or `text`",
            ))
        }
    };
    if turns.is_empty() || turns.len() > MAX_TURNS {
        return Err(ApiError::invalid(format!(
            "turns: 1 to {MAX_TURNS} per call, got {}",
            turns.len()
        )));
    }
    let agent = named("agent", args.agent)?;
    let session = named("session", args.session)?;
    let scope = Scope::new(
        &user.tenant,
        &user.user,
        agent.as_deref().unwrap_or(DEFAULT_AGENT),
        session.as_deref().unwrap_or(DEFAULT_SESSION),
    )?;
    if let Some(key) = &args.key {
        if key.trim().is_empty() || key.len() > MAX_REQUEST_KEY_LEN {
            return Err(ApiError::invalid(format!(
                "key: 1 to {MAX_REQUEST_KEY_LEN} characters"
            )));
        }
    }
    Ok(turns
        .into_iter()
        .map(|turn| {
            let mut new = NewTurn::user(scope.clone(), turn.text);
            new.role = turn.role.into();
            new.speaker = turn.speaker;
            new
        })
        .collect())
}

fn remember(engine: &Engine, user: UserKey, args: RememberArgs) -> Outcome {
    let key = args.key.clone();
    let turns = new_turns(&user, args)?;
    let scope = turns
        .first()
        .map(|t| t.scope.clone())
        .ok_or_else(|| ApiError::invalid("nothing to remember"))?;
    // The engine gives the turns the call's key and refuses a reused one.
    let report = engine.add_request(turns, key.as_deref())?;
    let added = report.turns.iter().filter(|t| !t.is_duplicate()).count();
    let duplicate = report.turns.len() - added;
    let mut text = format!(
        "Stored for user '{}' (agent {}, session {}): {added} turn(s) added",
        user.user, scope.agent, scope.session
    );
    if duplicate > 0 {
        text.push_str(&format!(
            ", {duplicate} already stored (same key; nothing written)"
        ));
    }
    text.push_str(".\n");
    let mut turns = Vec::new();
    for turn in &report.turns {
        match (turn.is_duplicate(), turn.memory_id()) {
            (false, Some(id)) => text.push_str(&format!("- memory {id} (round {})\n", turn.round)),
            (true, Some(id)) => text.push_str(&format!(
                "- turn {} already stored (memory {id})\n",
                turn.turn_id
            )),
            (_, None) => text.push_str(&format!("- turn {} already stored\n", turn.turn_id)),
        }
        turns.push(json!({
            "turn_id": turn.turn_id.to_string(),
            "round": turn.round,
            "status": if turn.is_duplicate() { "duplicate" } else { "added" },
            "memory_id": turn.memory_id().map(|id| id.to_string()),
        }));
    }
    let changes: Vec<Value> = report
        .changes
        .iter()
        .map(|c| {
            let change = crate::dto::FactChangeOut::from(c);
            json!({ "kind": change.kind, "memory_id": change.memory_id, "by": change.by })
        })
        .collect();
    for change in &changes {
        text.push_str(&format!(
            "- earlier memory {} {} by {}\n",
            change["memory_id"].as_str().unwrap_or(""),
            change["kind"].as_str().unwrap_or("").replace('_', " "),
            change["by"].as_str().unwrap_or("")
        ));
    }
    Ok((
        text,
        json!({ "added": added, "duplicate": duplicate, "turns": turns, "changes": changes }),
    ))
}

fn recall(engine: &Engine, user: UserKey, args: RecallArgs) -> Outcome {
    let budget = args.budget.unwrap_or(DEFAULT_BUDGET);
    if budget == 0 {
        return Err(ApiError::invalid("budget: must be positive"));
    }
    let mut request = RecallRequest::new(args.query, budget);
    request.deadline = args.deadline;
    request.session = named("session", args.session)?;
    request.as_of = crate::params::as_of(args.as_of.as_deref())?;
    request.min_relevance = crate::params::min_relevance(args.min_relevance)?;
    let agent = named("agent", args.agent)?;
    let context = engine.recall(&user, agent.as_deref().unwrap_or(DEFAULT_AGENT), &request)?;
    let mut text = if context.items.is_empty() {
        format!(
            "(nothing remembered about user '{}' is relevant to this query)\n",
            user.user
        )
    } else {
        let mut text = context.text.trim_end().to_string();
        text.push_str("\n\nsources:\n");
        for item in &context.items {
            text.push_str(&format!(
                "- {} {} ({}, from {} turn(s))\n",
                item.kind.tag(),
                item.memory_id,
                render::iso(item.created.time),
                item.provenance.len()
            ));
        }
        text
    };
    for note in &context.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    let items: Vec<Value> = context
        .items
        .iter()
        .map(|item| {
            json!({
                "memory_id": item.memory_id.to_string(),
                "kind": item.kind.tag().as_str(),
                "section": item.section,
                "score": item.score,
                "created": render::iso(item.created.time),
                "provenance": item.provenance.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        })
        .collect();
    let structured = json!({
        "text": context.text,
        "tokens": context.tokens,
        "preset": context.mechanism,
        "items": items,
        "notes": context.notes,
    });
    Ok((text, structured))
}

/// Why a hit ranked: matched words, meaning similarity, what moved its score; one line.
fn reason(hit: &Hit) -> String {
    let b = &hit.breakdown;
    let mut parts = Vec::new();
    if let Some(lexical) = b.lexical {
        if b.matched_terms.is_empty() {
            parts.push(format!("words rank {}", lexical.rank));
        } else {
            parts.push(format!(
                "matched [{}] (words rank {})",
                b.matched_terms.join(", "),
                lexical.rank
            ));
        }
    }
    if let Some(dense) = b.dense {
        parts.push(format!("meaning {:.2} (rank {})", dense.score, dense.rank));
    }
    if let Some(hop) = &b.second_hop {
        parts.push(format!("linked via {}", hop.via));
    }
    if let Some(context) = &b.context {
        parts.push(format!("next to {}", context.via));
    }
    if b.speaker.is_some() {
        parts.push("its speaker is named".into());
    }
    if b.date.is_some() {
        parts.push("from the date asked about".into());
    }
    if let Some(ranker) = &b.ranker {
        let strongest: Vec<&str> = ranker.strongest.iter().map(|(n, _)| n.as_str()).collect();
        parts.push(format!(
            "ranker {:.2} (mostly {})",
            ranker.probability,
            strongest.join(", ")
        ));
    }
    for adjustment in &b.adjustments {
        parts.push(format!("{} {:+.3}", adjustment.name, adjustment.delta));
    }
    if parts.is_empty() {
        "ranked by fusion".into()
    } else {
        parts.join("; ")
    }
}

fn search(engine: &Engine, user: UserKey, args: SearchArgs) -> Outcome {
    let top_k = args.top_k.unwrap_or(DEFAULT_TOP_K);
    if top_k == 0 || top_k > MAX_TOP_K {
        return Err(ApiError::invalid(format!("top_k: 1 to {MAX_TOP_K}")));
    }
    let name = user.user.clone();
    let mut request = SearchRequest::new(user, args.query);
    request.deadline = args.deadline;
    request.top_k = Some(top_k);
    request.filter.kinds = kind_list(args.kind.as_deref())?;
    request.filter.agent = named("agent", args.agent)?;
    request.include_superseded = args.include_superseded.unwrap_or(false);
    request.as_of = crate::params::as_of(args.as_of.as_deref())?;
    request.min_relevance = crate::params::min_relevance(args.min_relevance)?;
    let results = engine.search(&request)?;
    let mut text = String::new();
    if results.hits.is_empty() {
        text.push_str(&format!("no memories of user '{name}' matched\n"));
    }
    let mut hits = Vec::new();
    for (i, hit) in results.hits.iter().enumerate() {
        let why = reason(hit);
        let superseded = match hit.memory.valid_to {
            Some(until) => format!(" · superseded (until {})", render::iso(until)),
            None => String::new(),
        };
        text.push_str(&format!(
            "{}. [{:.4}] {}\n   id {} · {} · {} · relevance {:.3}{superseded} · {why}\n",
            i + 1,
            hit.score,
            full_text(&hit.memory),
            hit.memory.id,
            hit.memory.kind.tag(),
            render::iso(hit.memory.created.time),
            hit.relevance,
        ));
        hits.push(json!({
            "id": hit.memory.id.to_string(),
            "kind": hit.memory.kind.tag().as_str(),
            "text": hit.memory.text,
            "score": hit.score,
            "relevance": hit.relevance,
            "reason": why,
            "created": render::iso(hit.memory.created.time),
            "superseded": !hit.memory.is_current(),
            "superseded_by": hit.memory.superseded_by.map(|id| id.to_string()),
            "valid_to": hit.memory.valid_to.map(render::iso),
        }));
    }
    Ok((text, json!({ "hits": hits })))
}

fn forget(engine: &Engine, user: UserKey, args: ForgetArgs) -> Outcome {
    match (&args.id, &args.query) {
        (Some(id), None) => forget_id(engine, &user, id, &args),
        (None, Some(query)) => forget_query(engine, &user, query, &args),
        (Some(_), Some(_)) => Err(ApiError::invalid("give `id` or `query`, not both")),
        (None, None) => Err(ApiError::invalid(
            "give the memory's `id`, or a `query` describing what to forget",
        )),
    }
}

fn forget_id(engine: &Engine, user: &UserKey, id: &str, args: &ForgetArgs) -> Outcome {
    let query_only = args.confirm.is_some()
        || args.ids.is_some()
        || args.limit.is_some()
        || args.agent.is_some();
    if query_only {
        return Err(ApiError::invalid(
            "an `id` is forgotten at once; `confirm`, `ids`, `limit` and `agent` go with `query`",
        ));
    }
    let id = memory_id(id)?;
    let report = engine.forget(user, id, &args.reason)?;
    let mut text = if report.already_forgotten {
        format!(
            "Memory {id} was already forgotten ({}); nothing changed.\n",
            render::state(&report.memory.state)
        )
    } else {
        format!(
            "Forgot memory {id}: \"{}\" (reason: {}).\n",
            render::one_line(&report.memory.text, 120),
            args.reason.trim()
        )
    };
    if report.derived > 0 {
        text.push_str(&format!(
            "Also forgot {} memory(ies) derived from it.\n",
            report.derived
        ));
    }
    let structured = json!({
        "id": id.to_string(),
        "already_forgotten": report.already_forgotten,
        "derived_forgotten": report.derived,
    });
    Ok((text, structured))
}

/// `forget` by description: the list of what would go, or, confirmed, what went.
fn forget_query(engine: &Engine, user: &UserKey, query: &str, args: &ForgetArgs) -> Outcome {
    let mut request = ForgetMatching::new(query, args.reason.as_str());
    request.confirm = args.confirm.unwrap_or(false);
    request.limit = args.limit.unwrap_or(request.limit);
    request.agent = named("agent", args.agent.clone())?;
    request.ids = args.ids.as_deref().map(memory_ids).transpose()?;
    let report = engine.forget_matching(user, &request)?;
    let text = forget_query_text(user, query, &report);
    let candidates: Vec<Value> = report
        .candidates
        .iter()
        .map(|c| {
            json!({
                "id": c.memory.id.to_string(),
                "kind": c.memory.kind.tag().as_str(),
                "text": c.memory.text,
                "relevance": c.relevance,
                "selected_by": c.by.as_str(),
                "superseded": !c.memory.is_current(),
                "created": render::iso(c.memory.created.time),
            })
        })
        .collect();
    let structured = json!({
        "confirmed": report.confirmed,
        "candidates": candidates,
        "derived": report.derived,
        "skipped": report.skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "truncated": report.truncated,
    });
    Ok((text, structured))
}

/// What a forget by description selected, one memory a line, and what to do next.
fn forget_query_text(user: &UserKey, query: &str, report: &ForgetMatchReport) -> String {
    let count = report.candidates.len();
    if count == 0 {
        return format!(
            "No memory of user '{}' matches \"{query}\"; nothing forgotten.\n",
            user.user
        );
    }
    let verb = if report.confirmed {
        "Forgot"
    } else {
        "Would forget"
    };
    let mut text = format!(
        "{verb} {count} memory(ies) of user '{}' matching \"{query}\":\n",
        user.user
    );
    text.push_str(&render::forget_candidates(report));
    if !report.confirmed {
        text.push_str(
            "Nothing forgotten yet: call again with confirm: true to forget these (with their \
             ids, to forget exactly these).\n",
        );
    }
    text
}

fn list(engine: &Engine, user: UserKey, args: ListArgs) -> Outcome {
    let user = known_user(engine, user)?;
    let filter = MemoryFilter {
        kinds: kind_list(args.kind.as_deref())?,
        state: StateFilter::Active,
        ..MemoryFilter::default()
    };
    let paged = engine.list(
        &user,
        &filter,
        page(
            args.cursor.as_deref(),
            Some(args.limit.unwrap_or(DEFAULT_PAGE)),
        )?,
    )?;
    let next_cursor = paged.next_offset.map(cursor);
    let memories: Vec<Value> = paged
        .items
        .iter()
        .map(|m| {
            json!({
                "id": m.id.to_string(),
                "kind": m.kind.tag().as_str(),
                "text": m.text,
                "created": render::iso(m.created.time),
                "round": m.created.round,
            })
        })
        .collect();
    let total = paged.total;
    let mut text = memory_page(&paged);
    if let Some(cursor) = &next_cursor {
        text.push_str(&format!("next_cursor: {cursor}\n"));
    }
    let structured = json!({ "memories": memories, "total": total, "next_cursor": next_cursor });
    Ok((text, structured))
}

/// A memory's whole text on one line, after its speaker's name: most clients give the model
/// only the text content, so a cut text would hide what the memory says.
fn full_text(memory: &Memory) -> String {
    let text = render::one_line(&memory.text, usize::MAX);
    match memory.speaker() {
        Some(speaker) => format!("{speaker}: {text}"),
        None => text,
    }
}

/// A page of memories one line each, as the CLI lists them but with each whole text, and
/// without the CLI's `--offset` (the tool continues with `next_cursor`).
fn memory_page(page: &Paged<Memory>) -> String {
    let mut text = String::new();
    for memory in &page.items {
        text.push_str(&format!(
            "{}  {} r{:<5} {:<9} {}\n",
            memory.id,
            render::iso(memory.created.time),
            memory.created.round,
            memory.kind.tag().as_str(),
            full_text(memory)
        ));
    }
    text.push_str(&format!("({} of {})\n", page.items.len(), page.total));
    text
}

fn show(engine: &Engine, user: UserKey, args: ShowArgs) -> Outcome {
    let user = known_user(engine, user)?;
    let agent = named("agent", args.agent)?;
    let (kind, name) = match args.view {
        ViewArg::Persona => (ViewKind::Persona, "persona"),
        ViewArg::Timeline => (ViewKind::Timeline, "timeline"),
        ViewArg::Chains => (ViewKind::Chains, "chains"),
    };
    let view = engine.view(&user, agent.as_deref(), kind)?;
    let text = render::view(&user, agent.as_deref(), &view);
    let structured = json!({ "view": name, "text": text });
    Ok((text, structured))
}

/// The tools over stdin/stdout in `tenant` (with `defaults` for calls naming no user or
/// agent) until the client closes stdin or `shutdown` completes, with `jobs` running derived
/// work in the background (none: the engine runs it inline). Nothing but MCP messages goes to
/// stdout.
pub async fn serve_stdio(
    engine: Arc<Engine>,
    tenant: String,
    defaults: McpDefaults,
    jobs: Option<JobWorker>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    mnemos_core::validate_name("tenant", &tenant)
        .map_err(|e| ServerError::Invalid(e.to_string()))?;
    defaults.validate()?;
    // The text rules compile on first use; paying for that now keeps it off the first call.
    Engine::warm_up();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let worker = jobs.map(|worker| {
        let metrics = Arc::new(crate::metrics::Metrics::default());
        tokio::spawn(worker.run(Arc::clone(&engine), metrics, stop_rx))
    });
    let served = async {
        let running = MemoryTools::in_tenant(engine, tenant, defaults)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServerError::Serve(std::io::Error::other(e.to_string())))?;
        let token = running.cancellation_token();
        tokio::select! {
            quit = running.waiting() => {
                quit.map_err(|e| ServerError::Serve(std::io::Error::other(e.to_string())))?;
            }
            () = shutdown => token.cancel(),
        }
        Ok(())
    }
    .await;
    let _ = stop_tx.send(true);
    if let Some(worker) = worker {
        if let Err(error) = worker.await {
            eprintln!("the job worker stopped abnormally: {error}");
        }
    }
    served
}

/// [`serve_stdio`] on a runtime of its own until stdin closes, SIGINT or SIGTERM: what
/// `mnemos mcp` runs.
pub fn run_stdio(
    engine: Arc<Engine>,
    tenant: String,
    defaults: McpDefaults,
    jobs: Option<JobWorker>,
) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let shutdown = crate::shutdown_signal();
    let served = runtime.block_on(serve_stdio(engine, tenant, defaults, jobs, shutdown));
    // A read of stdin in progress cannot be cancelled; do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    served
}
