//! The data model: turns, memories, scopes, ids and the logical clock.
//!
//! Everything here is plain data (serde-serializable, no IO). Store crates persist these types;
//! the server maps them to its own wire DTOs.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};

/// Longest accepted identifier segment (tenant, user, agent, session, metadata key).
pub const MAX_NAME_BYTES: usize = 256;
/// Longest accepted turn or memory text. Larger inputs are rejected, never truncated silently.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Largest round index (SQL stores keep rounds as signed 64-bit integers).
pub const MAX_ROUND: u64 = i64::MAX as u64;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered (UUIDv7) id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "({})"), self.0)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Uuid::parse_str(s.trim())
                    .map(Self)
                    .map_err(|_| Error::invalid(format!(concat!("'{}' is not a valid ", $prefix, " id (expected a UUID)"), s)))
            }
        }
    };
}

uuid_id!(
    /// Stable id of a raw dialogue turn.
    TurnId,
    "TurnId"
);
uuid_id!(
    /// Stable id of a memory (raw-turn memory or anything derived from turns).
    MemoryId,
    "MemoryId"
);

uuid_id!(
    /// Stable id of a durable job (derived work recorded in the store).
    JobId,
    "JobId"
);

uuid_id!(
    /// Stable id of an API key: listed and revoked by this id, which is not secret.
    ApiKeyId,
    "ApiKeyId"
);

/// An API key as stored. Only the SHA-256 of its secret is kept: a stolen database does not
/// give away working keys, and a lost secret cannot be shown again (a new key is made instead).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: ApiKeyId,
    /// The tenant every request made with this key acts in.
    pub tenant: String,
    /// A label for people ("support bot", "ci").
    pub name: String,
    /// Lower-case hex SHA-256 of the secret.
    pub hash: String,
    /// The secret's first characters, so people can tell their keys apart in a listing.
    pub prefix: String,
    pub created_at: Timestamp,
    /// When it stopped working; a revoked key stays listed.
    pub revoked_at: Option<Timestamp>,
}

/// Length of an [`ApiKey::hash`]: hex SHA-256.
pub const API_KEY_HASH_LEN: usize = 64;

impl ApiKey {
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }

    /// The tenant is a valid name, the label printable, the hash 64 lower-case hex digits.
    pub fn validate(&self) -> Result<()> {
        validate_name("tenant", &self.tenant)?;
        validate_name("key name", &self.name)?;
        validate_name("key prefix", &self.prefix)?;
        let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if self.hash.len() != API_KEY_HASH_LEN || !self.hash.chars().all(is_hex) {
            return Err(Error::invalid(
                "an API key hash must be 64 lower-case hex digits (SHA-256)",
            ));
        }
        Ok(())
    }
}

/// Wall-clock time in milliseconds since the Unix epoch (UTC).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_millis(ms: i64) -> Self {
        Self(ms)
    }
    pub fn millis(self) -> i64 {
        self.0
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// A point on the logical clock: the dialogue round (monotonic per user scope) plus wall time.
///
/// Rounds order events even when wall times collide or come from a dataset's own calendar.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
pub struct Moment {
    pub round: u64,
    pub time: Timestamp,
}

/// A source of wall time. Injected so tests and dataset replays control time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Timestamp(ms)
    }
}

/// A clock that always answers the same time (tests, replays).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// Check an identifier segment (tenant, user, agent, session, metadata key): not empty, at most
/// [`MAX_NAME_BYTES`], no control characters.
pub fn validate_name(what: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if value.len() > MAX_NAME_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {} bytes; the limit is {MAX_NAME_BYTES}",
            value.len()
        )));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(format!(
            "{what} must not contain control characters"
        )));
    }
    Ok(())
}

/// Check a turn or memory text: non-empty after trimming and at most [`MAX_TEXT_BYTES`].
pub fn validate_text(what: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid(format!("{what} is empty")));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {} bytes; the limit is {MAX_TEXT_BYTES}",
            text.len()
        )));
    }
    if text.contains('\0') {
        return Err(Error::invalid(format!("{what} contains a NUL character")));
    }
    Ok(())
}

/// The isolation boundary: one end user of one tenant. No call ever mixes two `UserKey`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UserKey {
    pub tenant: String,
    pub user: String,
}

impl UserKey {
    pub fn new(tenant: impl Into<String>, user: impl Into<String>) -> Result<Self> {
        let key = Self {
            tenant: tenant.into(),
            user: user.into(),
        };
        key.validate()?;
        Ok(key)
    }
    pub fn validate(&self) -> Result<()> {
        validate_name("tenant", &self.tenant)?;
        validate_name("user", &self.user)
    }
}

impl fmt::Display for UserKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant, self.user)
    }
}

/// Where a turn or memory belongs: tenant → user → agent → session.
///
/// `tenant` + `user` form the isolation boundary ([`UserKey`]); `agent` and `session` narrow a
/// user's data further (one user may talk to several agents, in many sessions).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scope {
    pub tenant: String,
    pub user: String,
    pub agent: String,
    pub session: String,
}

impl Scope {
    pub fn new(
        tenant: impl Into<String>,
        user: impl Into<String>,
        agent: impl Into<String>,
        session: impl Into<String>,
    ) -> Result<Self> {
        let scope = Self {
            tenant: tenant.into(),
            user: user.into(),
            agent: agent.into(),
            session: session.into(),
        };
        scope.validate()?;
        Ok(scope)
    }

    pub fn validate(&self) -> Result<()> {
        validate_name("tenant", &self.tenant)?;
        validate_name("user", &self.user)?;
        validate_name("agent", &self.agent)?;
        validate_name("session", &self.session)
    }

    pub fn user_key(&self) -> UserKey {
        UserKey {
            tenant: self.tenant.clone(),
            user: self.user.clone(),
        }
    }

    pub fn belongs_to(&self, user: &UserKey) -> bool {
        self.tenant == user.tenant && self.user == user.user
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.tenant, self.user, self.agent, self.session
        )
    }
}

/// Who spoke a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Other,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other => "other",
        }
    }
}

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "user" | "human" => Ok(Role::User),
            "assistant" | "bot" | "ai" | "agent" => Ok(Role::Assistant),
            "other" | "system" => Ok(Role::Other),
            _ => Err(Error::invalid(format!(
                "unknown role '{s}' (expected user, assistant or other)"
            ))),
        }
    }
}

/// String-valued metadata attached to turns and memories; filters match on exact values.
pub type Metadata = BTreeMap<String, String>;

/// One raw dialogue turn, exactly as the caller gave it. Turns are never rewritten.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub id: TurnId,
    pub scope: Scope,
    pub role: Role,
    /// Display name of the speaker, when known (e.g. "Caroline").
    pub speaker: Option<String>,
    pub text: String,
    pub at: Moment,
    pub metadata: Metadata,
    /// The caller's idempotency key: unique per user, so a turn submitted twice (a retried
    /// request, a re-run ingest) is stored once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Turn {
    pub fn validate(&self) -> Result<()> {
        self.scope.validate()?;
        validate_text("turn text", &self.text)?;
        if let Some(key) = &self.key {
            validate_name("turn key", key)?;
        }
        if self.at.round > MAX_ROUND {
            return Err(Error::invalid("turn round is out of range"));
        }
        if let Some(name) = &self.speaker {
            validate_name("speaker", name)?;
        }
        validate_metadata(&self.metadata)
    }
}

pub fn validate_metadata(metadata: &Metadata) -> Result<()> {
    for (key, value) in metadata {
        validate_name("metadata key", key)?;
        if value.len() > MAX_TEXT_BYTES {
            return Err(Error::invalid(format!(
                "metadata value for '{key}' is too large"
            )));
        }
    }
    if let Some(value) = metadata.get(MemoryType::METADATA_KEY) {
        MemoryType::parse(value)?;
    }
    Ok(())
}

/// PerLTQA's two kinds of personal memory: semantic (who someone is — profile facts,
/// relationships) and episodic (what happened — events, conversations).
///
/// A memory's type is stated by its source under the metadata key [`MemoryType::METADATA_KEY`]
/// (a dataset that knows it, a caller's JSONL metadata); otherwise a memory classifier estimates
/// it when it is needed. The value is checked wherever metadata is, so a misspelt type is an
/// error at the edge rather than a memory that silently has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    Semantic,
    Episodic,
}

impl MemoryType {
    /// The metadata key a source states a memory's type under.
    pub const METADATA_KEY: &'static str = "memory_type";
    pub const ALL: [MemoryType; 2] = [MemoryType::Semantic, MemoryType::Episodic];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Semantic => "semantic",
            MemoryType::Episodic => "episodic",
        }
    }

    /// `semantic` or `episodic`, in any case, surrounding blanks ignored.
    pub fn parse(value: &str) -> Result<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "semantic" => Ok(MemoryType::Semantic),
            "episodic" => Ok(MemoryType::Episodic),
            _ => Err(Error::invalid(format!(
                "metadata {} = '{value}': expected semantic or episodic",
                MemoryType::METADATA_KEY
            ))),
        }
    }

    /// The other type.
    pub fn other(self) -> Self {
        match self {
            MemoryType::Semantic => MemoryType::Episodic,
            MemoryType::Episodic => MemoryType::Semantic,
        }
    }
}

impl std::fmt::Display for MemoryType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a memory is. Later mechanisms add derived kinds; raw turns are `Turn`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MemoryKind {
    /// A raw turn kept verbatim.
    Turn,
    /// A user utterance with the reply to it.
    Exchange,
    /// A summary at some level of a hierarchy (1 = closest to turns).
    Summary { level: u8 },
    /// One key of a persona sketch.
    Persona { key: String },
    /// A node of a topic chain.
    ChainNode { category: String },
    /// An extracted fact.
    Fact,
    /// A profile entry (semantic memory about a person).
    Profile,
    /// A reflection or insight generated from other memories.
    Reflection,
}

impl MemoryKind {
    /// The kind's tag without its payload (used by filters and SQL).
    pub fn tag(&self) -> KindTag {
        match self {
            MemoryKind::Turn => KindTag::Turn,
            MemoryKind::Exchange => KindTag::Exchange,
            MemoryKind::Summary { .. } => KindTag::Summary,
            MemoryKind::Persona { .. } => KindTag::Persona,
            MemoryKind::ChainNode { .. } => KindTag::ChainNode,
            MemoryKind::Fact => KindTag::Fact,
            MemoryKind::Profile => KindTag::Profile,
            MemoryKind::Reflection => KindTag::Reflection,
        }
    }
}

/// A memory kind without its payload: what filters and listings name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
pub enum KindTag {
    Turn,
    Exchange,
    Summary,
    Persona,
    ChainNode,
    Fact,
    Profile,
    Reflection,
}

impl KindTag {
    /// Every tag, in display order.
    pub const ALL: [KindTag; 8] = [
        KindTag::Turn,
        KindTag::Exchange,
        KindTag::Summary,
        KindTag::Persona,
        KindTag::ChainNode,
        KindTag::Fact,
        KindTag::Profile,
        KindTag::Reflection,
    ];

    /// The tag's name (`chain_node`, …), as serialized and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            KindTag::Turn => "turn",
            KindTag::Exchange => "exchange",
            KindTag::Summary => "summary",
            KindTag::Persona => "persona",
            KindTag::ChainNode => "chain_node",
            KindTag::Fact => "fact",
            KindTag::Profile => "profile",
            KindTag::Reflection => "reflection",
        }
    }

    /// Is this a memory derived from turns (not a raw turn or a verbatim exchange)?
    pub fn is_derived(self) -> bool {
        !matches!(self, KindTag::Turn | KindTag::Exchange)
    }
}

impl fmt::Display for KindTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KindTag {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        KindTag::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = KindTag::ALL.iter().map(|k| k.as_str()).collect();
                Error::invalid(format!(
                    "unknown memory kind '{s}' (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// Is a memory live, or was it forgotten by a policy or a user request?
///
/// A forget stored before causes were has no `cause` in its stored form; reading it gives the
/// cause its reason tells ([`ForgetCause::from_legacy_reason`]), once, where it is decoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", from = "StoredState")]
pub enum MemoryState {
    Active,
    /// Soft-forgotten: kept for history and audit, never returned by retrieval.
    Forgotten {
        reason: String,
        at: Moment,
        /// Who forgot it.
        cause: ForgetCause,
    },
}

/// Who forgot a memory. It is recorded with the forget, typed, and read back exactly: the
/// reason is free text for people, so a person's reason that happens to start with a preset's
/// name is still a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ForgetCause {
    /// Someone asked (forget by id or by description, an erasure), with a reason of their own.
    Request,
    /// A preset's own policy (eviction, decay, consolidation) forgot it.
    Preset { preset: String },
    /// The engine's cascade: the memory was derived from `source`, which was forgotten.
    Derived { source: MemoryId },
}

impl ForgetCause {
    /// The presets that existed while causes were still written into the reason text
    /// (`<preset>: …`). Frozen: only a legacy reason is read against it.
    pub const LEGACY_PRESETS: [&'static str; 12] = [
        "default",
        "full",
        "recent",
        "retrieval",
        "memorybank",
        "generative",
        "memgpt",
        "scmemory",
        "lufy",
        "moom",
        "m4",
        "perltqa",
    ];

    /// How the engine's cascade worded a derived memory's reason before causes were stored:
    /// `derived from forgotten memory <id>: <the source's reason>`.
    pub const LEGACY_DERIVED_PREFIX: &'static str = "derived from forgotten memory ";

    /// A preset's forgetting.
    pub fn preset(name: &str) -> Self {
        ForgetCause::Preset {
            preset: name.to_string(),
        }
    }

    /// The cause of a forget stored before causes were (a legacy row), read from its reason the
    /// way the inspector used to: the cascade's prefix, then a `<preset>: ` prefix naming one of
    /// [`Self::LEGACY_PRESETS`], else a request. Never used for a forget that stored its cause.
    pub fn from_legacy_reason(reason: &str) -> Self {
        if let Some(rest) = reason.strip_prefix(Self::LEGACY_DERIVED_PREFIX) {
            let id = rest.split(':').next().unwrap_or_default();
            if let Ok(source) = id.trim().parse() {
                return ForgetCause::Derived { source };
            }
        }
        let named = reason.split_once(": ").map(|(head, _)| head);
        match named.and_then(|head| Self::LEGACY_PRESETS.iter().find(|p| **p == head)) {
            Some(preset) => Self::preset(preset),
            None => ForgetCause::Request,
        }
    }

    /// `request`, `derived`, or the preset's name: how retention counts it.
    pub fn key(&self) -> &str {
        match self {
            ForgetCause::Request => "request",
            ForgetCause::Preset { preset } => preset,
            ForgetCause::Derived { .. } => "derived",
        }
    }
}

/// [`MemoryState`] as stored: a forget written before causes were stored has none, and gets
/// the one its reason tells ([`ForgetCause::from_legacy_reason`]).
#[derive(Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum StoredState {
    Active,
    Forgotten {
        reason: String,
        at: Moment,
        #[serde(default)]
        cause: Option<ForgetCause>,
    },
}

impl From<StoredState> for MemoryState {
    fn from(stored: StoredState) -> Self {
        match stored {
            StoredState::Active => MemoryState::Active,
            StoredState::Forgotten { reason, at, cause } => MemoryState::Forgotten {
                cause: cause.unwrap_or_else(|| ForgetCause::from_legacy_reason(&reason)),
                reason,
                at,
            },
        }
    }
}

impl MemoryState {
    pub fn is_active(&self) -> bool {
        matches!(self, MemoryState::Active)
    }
}

/// One retrieval of a memory: when, and at which rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    pub at: Moment,
    pub rank: u32,
}

/// Numbers mechanisms attach to a memory (importance, strength, …).
///
/// Typed fields for what several mechanisms share; `extra` for mechanism-specific values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inhibition: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, f64>,
    /// How many times the memory's fact was stated (absent: once). A repeated statement
    /// reinforces the memory that holds it instead of adding an equal one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times_said: Option<u32>,
    /// When the fact was last stated (absent: when the memory became valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_said: Option<Timestamp>,
}

/// A unit of memory: a raw turn or something derived from turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: MemoryId,
    pub scope: Scope,
    pub kind: MemoryKind,
    pub text: String,
    /// The turns this memory came from. Never empty for memories built from dialogue.
    pub provenance: Vec<TurnId>,
    pub created: Moment,
    /// When the memory became true; superseded memories get `valid_to` instead of being overwritten.
    pub valid_from: Timestamp,
    pub valid_to: Option<Timestamp>,
    /// The memory that replaced this one: a later statement of a new value for the same fact
    /// (set with `valid_to`). A superseded memory stays, with its history; it is no longer
    /// current, but it still answers questions about the time it was valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<MemoryId>,
    pub state: MemoryState,
    pub metrics: Metrics,
    pub access: Vec<Access>,
    pub metadata: Metadata,
    /// Incremented by every change; each version is kept in the history.
    pub version: u32,
}

impl Memory {
    /// Metadata key under which the engine copies a turn's speaker name onto its memory.
    pub const SPEAKER_KEY: &'static str = "speaker";

    /// Metadata key under which an extracted fact names the raw-turn memory that stated it.
    pub const FACT_SOURCE_KEY: &'static str = "fact.source";

    /// The speaker the memory's turn named, if any ([`Self::SPEAKER_KEY`]).
    pub fn speaker(&self) -> Option<&str> {
        self.metadata.get(Self::SPEAKER_KEY).map(String::as_str)
    }

    /// Metadata key under which the engine copies the role of a turn that names no speaker
    /// (`user`, `assistant`…), so that a chat between a user and an assistant is still an
    /// exchange of two parties to the retrieval core.
    pub const ROLE_KEY: &'static str = "role";

    /// The role the engine copied from the memory's turn, if any ([`Self::ROLE_KEY`]).
    pub fn role(&self) -> Option<&str> {
        self.metadata.get(Self::ROLE_KEY).map(String::as_str)
    }

    /// The memory type its source stated (metadata [`MemoryType::METADATA_KEY`]), if any.
    pub fn stated_type(&self) -> Option<MemoryType> {
        self.metadata
            .get(MemoryType::METADATA_KEY)
            .and_then(|value| MemoryType::parse(value).ok())
    }

    /// The raw-turn memory for `turn`: same scope, text and time; provenance = the turn.
    pub fn from_turn(turn: &Turn) -> Self {
        Memory {
            id: MemoryId::new(),
            scope: turn.scope.clone(),
            kind: MemoryKind::Turn,
            text: turn.text.clone(),
            provenance: vec![turn.id],
            created: turn.at,
            valid_from: turn.at.time,
            valid_to: None,
            superseded_by: None,
            state: MemoryState::Active,
            metrics: Metrics::default(),
            access: Vec::new(),
            metadata: turn.metadata.clone(),
            version: 1,
        }
    }

    pub fn validate(&self) -> Result<()> {
        self.scope.validate()?;
        validate_text("memory text", &self.text)?;
        validate_metadata(&self.metadata)?;
        let m = &self.metrics;
        let finite = [m.importance, m.strength, m.inhibition]
            .iter()
            .flatten()
            .all(|x| x.is_finite())
            && m.extra.values().all(|x| x.is_finite());
        if !finite {
            return Err(Error::invalid("memory metrics must be finite numbers"));
        }
        if self.created.round > MAX_ROUND {
            return Err(Error::invalid("memory round is out of range"));
        }
        if let Some(end) = self.valid_to {
            if end < self.valid_from {
                return Err(Error::invalid("memory valid_to is before valid_from"));
            }
        }
        if self.superseded_by == Some(self.id) {
            return Err(Error::invalid("a memory cannot supersede itself"));
        }
        if self.metrics.times_said == Some(0) {
            return Err(Error::invalid("times_said must be at least 1"));
        }
        Ok(())
    }

    pub fn is_active(&self) -> bool {
        self.state.is_active()
    }

    /// Still true now: no end of validity has been recorded (superseded memories have one).
    pub fn is_current(&self) -> bool {
        self.valid_to.is_none()
    }

    /// Was it true at `at` (valid time: from `valid_from`, up to but excluding `valid_to`)?
    pub fn valid_at(&self, at: Timestamp) -> bool {
        self.valid_from <= at && self.valid_to.is_none_or(|end| at < end)
    }
}

/// What changed in one version of a memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    Created,
    Updated,
    Forgotten {
        reason: String,
    },
    Restored,
    /// The content was erased for good (a user's forget request): this version and every
    /// earlier one keep only a placeholder text.
    Erased {
        reason: String,
    },
}

impl Memory {
    /// The state change of a caller's edit, written once for every store: `patch` applied, one
    /// version more, and the `Updated` history entry holding the result. Refuses (changing
    /// nothing) a patch whose result is invalid.
    pub fn updated(&self, patch: &MemoryPatch, at: Moment) -> Result<(Memory, HistoryEntry)> {
        let mut updated = self.clone();
        patch.apply(&mut updated)?;
        let entry = HistoryEntry::of(&updated, at, Change::Updated);
        Ok((updated, entry))
    }

    /// The state change of a forget, written once for every store: forgotten with `reason` by
    /// `cause` at `at`, one version more, and the `Forgotten` history entry holding the result.
    /// (Its vectors go too; that is the store's part.)
    pub fn forgotten(
        &self,
        reason: &str,
        cause: ForgetCause,
        at: Moment,
    ) -> Result<(Memory, HistoryEntry)> {
        let mut forgotten = self.clone();
        forgotten.state = MemoryState::Forgotten {
            reason: reason.to_string(),
            at,
            cause,
        };
        forgotten.version = bumped(self.version)?;
        let change = Change::Forgotten {
            reason: reason.to_string(),
        };
        let entry = HistoryEntry::of(&forgotten, at, change);
        Ok((forgotten, entry))
    }
}

/// The next version number, refused at the end of the range.
fn bumped(version: u32) -> Result<u32> {
    version
        .checked_add(1)
        .ok_or_else(|| Error::invalid("memory version overflow"))
}

/// One entry of a memory's version history: the change and the memory as it was after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub memory_id: MemoryId,
    pub version: u32,
    pub at: Moment,
    pub change: Change,
    pub snapshot: Memory,
}

/// A caller's edit of a memory; `None` fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryPatch {
    pub text: Option<String>,
    pub metadata: Option<Metadata>,
    pub metrics: Option<Metrics>,
    pub valid_to: Option<Option<Timestamp>>,
    /// Set (or clear) the memory that replaced this one.
    pub superseded_by: Option<Option<MemoryId>>,
    /// Replace the turns the memory came from (a repeated statement adds its turn).
    pub provenance: Option<Vec<TurnId>>,
}

impl HistoryEntry {
    /// The entry recording that `memory` (as it is now, at its current version) came from
    /// `change` at `at`.
    pub fn of(memory: &Memory, at: Moment, change: Change) -> Self {
        HistoryEntry {
            memory_id: memory.id,
            version: memory.version,
            at,
            change,
            snapshot: memory.clone(),
        }
    }
}

impl MemoryPatch {
    pub fn is_empty(&self) -> bool {
        self.text.is_none()
            && self.metadata.is_none()
            && self.metrics.is_none()
            && self.valid_to.is_none()
            && self.superseded_by.is_none()
            && self.provenance.is_none()
    }

    /// Apply to `memory`, bumping its version. Validates the result.
    pub fn apply(&self, memory: &mut Memory) -> Result<()> {
        if let Some(text) = &self.text {
            memory.text = text.clone();
        }
        if let Some(metadata) = &self.metadata {
            memory.metadata = metadata.clone();
        }
        if let Some(metrics) = &self.metrics {
            memory.metrics = metrics.clone();
        }
        if let Some(valid_to) = self.valid_to {
            memory.valid_to = valid_to;
        }
        if let Some(superseded_by) = self.superseded_by {
            memory.superseded_by = superseded_by;
        }
        if let Some(provenance) = &self.provenance {
            memory.provenance = provenance.clone();
        }
        memory.version = bumped(memory.version)?;
        memory.validate()
    }
}

/// Longest accepted job payload (mechanism-defined JSON).
pub const MAX_JOB_PAYLOAD_BYTES: usize = 1024 * 1024;

/// A unit of derived work (a summary, a reflection, a persona update…) recorded in the store.
///
/// A job is enqueued in the same write as the turns that cause it, so an acknowledged turn never
/// loses its derived work; it is marked done in the same write as its results, so a crash
/// between the two replays it and never applies it twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: JobId,
    /// Whose data the job derives from (user, agent, session of the triggering turn).
    pub scope: Scope,
    /// The mechanism (preset name) that runs it.
    pub mechanism: String,
    /// What to do, in the mechanism's vocabulary (e.g. `session_summary`).
    pub kind: String,
    /// Mechanism-defined input, as JSON text.
    pub payload: String,
    pub created: Moment,
    /// Failed attempts so far.
    pub attempts: u32,
    pub last_error: Option<String>,
    /// When it finished; `None` while pending.
    pub done: Option<Moment>,
}

impl Job {
    pub fn new(
        scope: Scope,
        mechanism: impl Into<String>,
        kind: impl Into<String>,
        payload: impl Into<String>,
        created: Moment,
    ) -> Self {
        Job {
            id: JobId::new(),
            scope,
            mechanism: mechanism.into(),
            kind: kind.into(),
            payload: payload.into(),
            created,
            attempts: 0,
            last_error: None,
            done: None,
        }
    }

    pub fn is_pending(&self) -> bool {
        self.done.is_none()
    }

    pub fn validate(&self) -> Result<()> {
        self.scope.validate()?;
        validate_name("job mechanism", &self.mechanism)?;
        validate_name("job kind", &self.kind)?;
        if self.payload.len() > MAX_JOB_PAYLOAD_BYTES {
            return Err(Error::invalid(format!(
                "job payload is {} bytes; the limit is {MAX_JOB_PAYLOAD_BYTES}",
                self.payload.len()
            )));
        }
        if self.payload.contains('\0') {
            return Err(Error::invalid("job payload contains a NUL character"));
        }
        if self.created.round > MAX_ROUND {
            return Err(Error::invalid("job round is out of range"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forgotten_json(cause: Option<&str>) -> String {
        let cause = cause
            .map(|c| format!(r#","cause":{c}"#))
            .unwrap_or_default();
        format!(
            r#"{{"state":"forgotten","reason":"memgpt: evicted","at":{{"round":3,"time":7}}{cause}}}"#
        )
    }

    #[test]
    fn a_stored_cause_is_read_back_exactly() {
        let state: MemoryState =
            serde_json::from_str(&forgotten_json(Some(r#"{"by":"request"}"#))).unwrap();
        let MemoryState::Forgotten { cause, .. } = &state else {
            panic!("{state:?}")
        };
        assert_eq!(
            *cause,
            ForgetCause::Request,
            "the reason's words must not count"
        );
        let again: MemoryState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        assert_eq!(again, state);
    }

    #[test]
    fn a_legacy_forget_gets_the_cause_its_reason_told() {
        let state: MemoryState = serde_json::from_str(&forgotten_json(None)).unwrap();
        assert!(matches!(
            state,
            MemoryState::Forgotten { cause: ForgetCause::Preset { ref preset }, .. } if preset == "memgpt"
        ));
        let id = MemoryId::new();
        let derived = format!("{}{id}: moom: x", ForgetCause::LEGACY_DERIVED_PREFIX);
        assert_eq!(
            ForgetCause::from_legacy_reason(&derived),
            ForgetCause::Derived { source: id }
        );
        assert_eq!(
            ForgetCause::from_legacy_reason("outdated"),
            ForgetCause::Request
        );
        assert_eq!(
            ForgetCause::from_legacy_reason("gossip: x"),
            ForgetCause::Request
        );
        assert_eq!(ForgetCause::Derived { source: id }.key(), "derived");
        assert_eq!(ForgetCause::preset("moom").key(), "moom");
    }

    #[test]
    fn transitions_bump_the_version_and_record_the_result() {
        let turn = Turn {
            id: TurnId::new(),
            scope: Scope::new("t", "u", "a", "s").unwrap(),
            role: Role::User,
            speaker: None,
            text: "hello".into(),
            at: Moment {
                round: 1,
                time: Timestamp(5),
            },
            metadata: Metadata::new(),
            key: None,
        };
        let memory = Memory::from_turn(&turn);
        let at = Moment {
            round: 2,
            time: Timestamp(9),
        };
        let patch = MemoryPatch {
            text: Some("hi".into()),
            ..MemoryPatch::default()
        };
        let (updated, entry) = memory.updated(&patch, at).unwrap();
        assert_eq!((updated.version, updated.text.as_str()), (2, "hi"));
        assert_eq!(entry, HistoryEntry::of(&updated, at, Change::Updated));
        let (gone, entry) = updated
            .forgotten("asked", ForgetCause::Request, at)
            .unwrap();
        assert_eq!(gone.version, 3);
        assert!(!gone.is_active());
        assert_eq!(
            entry.change,
            Change::Forgotten {
                reason: "asked".into()
            }
        );
        assert_eq!(entry.snapshot, gone);
        let mut last = memory.clone();
        last.version = u32::MAX;
        assert!(last.forgotten("x", ForgetCause::Request, at).is_err());
    }

    #[test]
    fn ids_round_trip_through_text() {
        let id = MemoryId::new();
        let parsed: MemoryId = id.to_string().parse().unwrap();
        assert_eq!(id, parsed);
        assert!("not-an-id".parse::<TurnId>().is_err());
    }

    #[test]
    fn scope_rejects_empty_and_control_characters() {
        assert!(Scope::new("t", "", "a", "s").is_err());
        assert!(Scope::new("t", "u\n", "a", "s").is_err());
        assert!(Scope::new("t", "u", "a", "s").is_ok());
    }

    #[test]
    fn text_validation_rejects_empty_huge_and_nul() {
        assert!(validate_text("x", "   ").is_err());
        assert!(validate_text("x", &"a".repeat(MAX_TEXT_BYTES + 1)).is_err());
        assert!(validate_text("x", "a\0b").is_err());
        assert!(validate_text("x", "你好").is_ok());
    }

    #[test]
    fn patch_bumps_version_and_validates() {
        let scope = Scope::new("t", "u", "a", "s").unwrap();
        let turn = Turn {
            id: TurnId::new(),
            scope,
            role: Role::User,
            speaker: None,
            text: "hello".into(),
            at: Moment::default(),
            metadata: Metadata::new(),
            key: None,
        };
        let mut m = Memory::from_turn(&turn);
        MemoryPatch {
            text: Some("hi".into()),
            ..Default::default()
        }
        .apply(&mut m)
        .unwrap();
        assert_eq!(m.version, 2);
        assert!(MemoryPatch {
            text: Some(" ".into()),
            ..Default::default()
        }
        .apply(&mut m)
        .is_err());
    }
}
