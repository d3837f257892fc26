//! What a request falls back to when it names no user, agent, session, token budget or page
//! size. Every front end (the REST routes, the MCP tools, the CLI) takes these, so the same
//! request means the same thing whichever way it comes in.

/// The user of a request that names none (the CLI's `--user`).
pub const DEFAULT_USER: &str = "default";
/// The agent of a request that names none.
pub const DEFAULT_AGENT: &str = "default";
/// The session of turns stored without one.
pub const DEFAULT_SESSION: &str = "default";
/// A recall's token budget when the request gives none.
pub const DEFAULT_BUDGET: usize = 1024;
/// Memories per page of a listing that names no limit (at most [`crate::Page::MAX_LIMIT`]).
pub const DEFAULT_PAGE: usize = 50;
