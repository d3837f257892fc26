//! The `Store` contract: the single source of truth for turns, memories, history and vectors.
//!
//! The contract is split by capability, each a small trait with what it guarantees written on
//! it: turns and memories ([`MemoryRead`], [`MemoryWrite`]), jobs ([`JobRead`], [`JobWrite`]),
//! API keys ([`KeyRead`], [`KeyWrite`]), vectors ([`VectorRead`], [`VectorWrite`]) and the
//! vector space the database is bound to ([`BindingRead`], [`BindingWrite`]).
//! [`StoreRead`] bundles the reads, [`Store`] everything. Every implementation (in-memory
//! reference, SQLite, PostgreSQL) passes the conformance suite in `mnemos-conformance`.
//! Retrieval indexes are caches rebuilt from what a store returns here.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Conflict, StoreError};
use crate::export::UserExport;
use crate::model::{
    Access, ApiKey, ApiKeyId, ForgetCause, HistoryEntry, Job, JobId, KindTag, Memory, MemoryId,
    MemoryPatch, Metadata, Metrics, Moment, Timestamp, Turn, TurnId, UserKey, MAX_ROUND,
};
use crate::store_vectors::{StoreInfo, VectorSearch};

pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// The dense vectors of one memory in one embedder's space: one vector of the embedder's
/// dimension, or for a long text one per window of it, concatenated (`vector.len()` is a
/// multiple of the dimension; see `retrieval::embedding_windows`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VectorRow {
    pub memory_id: MemoryId,
    /// The embedder id (`Embedder::id`) that produced it.
    pub model: String,
    pub vector: Vec<f32>,
}

/// An edit of an existing memory inside a [`WriteBatch`] (recorded as `Updated` in history).
#[derive(Clone, Debug, PartialEq)]
pub struct BatchUpdate {
    pub id: MemoryId,
    pub patch: MemoryPatch,
    pub at: Moment,
}

/// A forgetting of an existing memory inside a [`WriteBatch`] (see [`Memory::forgotten`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BatchForget {
    pub id: MemoryId,
    /// Free text for people; it says nothing the store reads.
    pub reason: String,
    /// Who forgot it, stored with the state and read back exactly.
    pub cause: ForgetCause,
    pub at: Moment,
}

/// Erasing a memory's content for good inside a [`WriteBatch`] (a user asked to forget it): the
/// memory becomes forgotten with `reason`; its text becomes `placeholder` and its metadata
/// `metadata`, in its row and in every version of its history; its vectors are deleted; an
/// `Erased` version records it. Nothing is deleted that a purge would keep, and nothing of the
/// old words stays in the store.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchErase {
    pub id: MemoryId,
    pub reason: String,
    pub placeholder: String,
    /// What metadata the memory keeps (e.g. its speaker); everything else goes.
    pub metadata: Metadata,
    pub at: Moment,
}

impl BatchErase {
    /// `memory` after this erasure: forgotten (its first forget's reason and moment stand),
    /// placeholder text, kept metadata, one version more.
    pub fn apply(&self, memory: &Memory) -> Memory {
        let mut erased = self.scrub(memory);
        if erased.is_active() {
            // An erasure is always someone's request to forget.
            erased.state = crate::model::MemoryState::Forgotten {
                reason: self.reason.clone(),
                at: self.at,
                cause: ForgetCause::Request,
            };
        }
        erased.version = erased.version.saturating_add(1);
        erased
    }

    /// A version of the memory (current or from its history) with the words erased.
    pub fn scrub(&self, snapshot: &Memory) -> Memory {
        let mut scrubbed = snapshot.clone();
        scrubbed.text = self.placeholder.clone();
        scrubbed.metadata = self.metadata.clone();
        scrubbed
    }
}

/// Erasing a raw turn's words inside a [`WriteBatch`]: its text becomes `placeholder` and its
/// metadata is cleared; id, scope, role, speaker, time and key stay.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnErase {
    pub id: TurnId,
    pub placeholder: String,
}

impl TurnErase {
    /// `turn` with its words erased.
    pub fn apply(&self, turn: &Turn) -> Turn {
        let mut erased = turn.clone();
        erased.text = self.placeholder.clone();
        erased.metadata = Metadata::new();
        erased
    }
}

/// A condition a [`WriteBatch`] holds the store to, checked inside the write's transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precondition {
    /// Write unconditionally.
    #[default]
    None,
    /// Write only if the user's highest turn round is still this (`None`: the user has no
    /// turn yet); otherwise reject the batch with [`Conflict::LastRoundMoved`]. A writer that
    /// numbered its turns from the last round it read uses this so that two writers (threads or
    /// processes) never give two turns the same round: the loser re-reads and retries.
    LastRound(Option<u64>),
}

impl Precondition {
    /// Does the user's current last round (`found`) satisfy the condition?
    pub fn check(self, found: Option<u64>) -> StoreResult<()> {
        match self {
            Precondition::None => Ok(()),
            Precondition::LastRound(expected) if expected == found => Ok(()),
            Precondition::LastRound(expected) => {
                Err(Conflict::LastRoundMoved { expected, found }.into())
            }
        }
    }
}

/// Everything one ingest or job step writes, committed atomically: all or nothing.
///
/// All items must belong to the same user; a store rejects mixed batches with
/// `StoreError::InvalidWrite`. Vectors must belong to memories of the batch or to existing
/// memories of the batch's user; vectors alone go through `VectorWrite::put_vectors`.
///
/// Updates, forgets and job completions name existing rows by id only: such a batch must set
/// `user` (or carry a turn, memory or job that fixes it). An update or forget of an unknown
/// memory, finishing an unknown job, or finishing a job that is already done rejects the whole
/// batch — the last one is what makes a replayed job apply its results at most once.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    /// The batch's user; optional when turns, memories or jobs already name it.
    pub user: Option<UserKey>,
    /// Checked inside the transaction before anything is written.
    pub precondition: Precondition,
    pub turns: Vec<Turn>,
    /// New memories (version 1); each gets a `Created` history entry.
    pub memories: Vec<Memory>,
    pub vectors: Vec<VectorRow>,
    /// Edits of existing memories, applied in order after the new memories.
    pub updates: Vec<BatchUpdate>,
    /// Memories forgotten by a policy (state change with a reason; vectors dropped).
    pub forgets: Vec<BatchForget>,
    /// Memories whose content is erased (after updates and forgets).
    pub erasures: Vec<BatchErase>,
    /// Raw turns whose words are erased.
    pub turn_erasures: Vec<TurnErase>,
    /// New pending jobs.
    pub jobs: Vec<Job>,
    /// Pending jobs this batch completes, with the moment they finished.
    pub finished_jobs: Vec<(JobId, Moment)>,
}

fn invalid(message: String) -> StoreError {
    StoreError::InvalidWrite(message)
}

impl WriteBatch {
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
            && self.memories.is_empty()
            && self.vectors.is_empty()
            && self.updates.is_empty()
            && self.forgets.is_empty()
            && self.erasures.is_empty()
            && self.turn_erasures.is_empty()
            && self.jobs.is_empty()
            && self.finished_jobs.is_empty()
    }

    /// Does the batch name existing rows by id (updates, forgets, erasures, finished jobs)?
    pub fn touches_existing(&self) -> bool {
        !(self.updates.is_empty()
            && self.forgets.is_empty()
            && self.erasures.is_empty()
            && self.turn_erasures.is_empty()
            && self.finished_jobs.is_empty())
    }

    /// Does the batch erase words (so a store that keeps old pages around, like SQLite's
    /// write-ahead log, should let go of them after the commit)?
    pub fn erases(&self) -> bool {
        !(self.erasures.is_empty() && self.turn_erasures.is_empty())
    }

    /// The single user every item belongs to, or an error if items are mixed (or if the batch
    /// edits existing rows without naming its user).
    pub fn user(&self) -> StoreResult<Option<UserKey>> {
        let mut user: Option<UserKey> = self.user.clone();
        let scopes = self
            .turns
            .iter()
            .map(|t| &t.scope)
            .chain(self.memories.iter().map(|m| &m.scope))
            .chain(self.jobs.iter().map(|j| &j.scope));
        for scope in scopes {
            match &user {
                None => user = Some(scope.user_key()),
                Some(u) if scope.belongs_to(u) => {}
                Some(u) => {
                    return Err(invalid(format!(
                        "write batch mixes users {u} and {}",
                        scope.user_key()
                    )))
                }
            }
        }
        if user.is_none() && self.touches_existing() {
            return Err(invalid(
                "a batch that updates, forgets or finishes jobs must name its user".into(),
            ));
        }
        Ok(user)
    }

    /// Every check a store makes before it touches its data, in one place: one user, every
    /// turn, memory and job valid, no id or turn key twice in the batch, every round in range,
    /// every forget with a reason, no job finished twice. Returns the batch's user (`None` for
    /// an empty batch). What only the store can know (ids or keys already stored, memories a
    /// vector or edit names, the precondition) the store checks in its transaction.
    pub fn validate(&self) -> StoreResult<Option<UserKey>> {
        let user = self.user()?;
        if user.is_none() && !self.vectors.is_empty() {
            return Err(invalid(
                "vectors without memories go through put_vectors".into(),
            ));
        }
        let invalid_item = |e: crate::error::Error| invalid(e.to_string());
        for turn in &self.turns {
            turn.validate().map_err(invalid_item)?;
        }
        for memory in &self.memories {
            memory.validate().map_err(invalid_item)?;
        }
        for job in &self.jobs {
            job.validate().map_err(invalid_item)?;
        }
        self.check_unique_ids()?;
        let moments = self
            .updates
            .iter()
            .map(|u| u.at)
            .chain(self.forgets.iter().map(|f| f.at))
            .chain(self.erasures.iter().map(|e| e.at))
            .chain(self.finished_jobs.iter().map(|(_, at)| *at));
        for at in moments {
            if at.round > MAX_ROUND {
                return Err(invalid(format!(
                    "round {} is beyond the limit of {MAX_ROUND}",
                    at.round
                )));
            }
        }
        if let Some(forget) = self.forgets.iter().find(|f| f.reason.trim().is_empty()) {
            return Err(invalid(format!("forgetting {} needs a reason", forget.id)));
        }
        self.check_erasures()?;
        Ok(user)
    }

    /// Every erasure has a reason, a valid placeholder and valid metadata; no memory or turn is
    /// erased twice in one batch.
    fn check_erasures(&self) -> StoreResult<()> {
        let invalid_item = |e: crate::error::Error| invalid(e.to_string());
        let mut seen = HashSet::new();
        for erase in &self.erasures {
            if erase.reason.trim().is_empty() {
                return Err(invalid(format!("erasing {} needs a reason", erase.id)));
            }
            crate::model::validate_text("erasure placeholder", &erase.placeholder)
                .map_err(invalid_item)?;
            crate::model::validate_metadata(&erase.metadata).map_err(invalid_item)?;
            if !seen.insert(erase.id.0) {
                return Err(invalid(format!("memory {} is erased twice", erase.id)));
            }
        }
        for erase in &self.turn_erasures {
            crate::model::validate_text("erasure placeholder", &erase.placeholder)
                .map_err(invalid_item)?;
            if !seen.insert(erase.id.0) {
                return Err(invalid(format!("turn {} is erased twice", erase.id)));
            }
        }
        Ok(())
    }

    /// No id (turn, memory, job) twice in the batch, no turn key twice, no job finished twice.
    fn check_unique_ids(&self) -> StoreResult<()> {
        let mut ids = HashSet::new();
        let all_ids = self
            .turns
            .iter()
            .map(|t| t.id.0)
            .chain(self.memories.iter().map(|m| m.id.0))
            .chain(self.jobs.iter().map(|j| j.id.0));
        for id in all_ids {
            if !ids.insert(id) {
                return Err(invalid(format!("id {id} appears twice in one batch")));
            }
        }
        let mut keys = HashSet::new();
        for key in self.turns.iter().filter_map(|t| t.key.as_deref()) {
            if !keys.insert(key) {
                return Err(invalid(format!(
                    "turn key '{key}' appears twice in one batch"
                )));
            }
        }
        let mut finishing = HashSet::new();
        for (id, _) in &self.finished_jobs {
            if !finishing.insert(*id) {
                return Err(invalid(format!("job {id} is already finished")));
            }
        }
        Ok(())
    }
}

/// Which memories a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryFilter {
    /// Kinds; empty = all kinds.
    pub kinds: Vec<KindTag>,
    pub agent: Option<String>,
    pub session: Option<String>,
    pub state: StateFilter,
    /// Every pair must match the memory's metadata exactly.
    pub metadata: Metadata,
    /// Only memories created at or after this time (`created.time`).
    pub created_since: Option<Timestamp>,
    /// Only memories created before this time.
    pub created_before: Option<Timestamp>,
    /// Which memories by valid time: all, current ones only, or those valid at a moment.
    #[serde(default)]
    pub validity: Validity,
}

/// Which memories a read takes by their valid time (`valid_from`, `valid_to`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "validity", content = "at")]
pub enum Validity {
    /// Whatever their validity.
    #[default]
    Any,
    /// Only memories still true now: no `valid_to` recorded (superseded memories have one).
    Current,
    /// Only memories true at this moment: `valid_from <= at < valid_to`.
    At(Timestamp),
}

impl Validity {
    /// Does a memory valid from `from` until `to` (exclusive; `None`: still) pass?
    pub fn matches(self, from: Timestamp, to: Option<Timestamp>) -> bool {
        match self {
            Validity::Any => true,
            Validity::Current => to.is_none(),
            Validity::At(at) => from <= at && to.is_none_or(|end| at < end),
        }
    }
}

impl MemoryFilter {
    pub fn active() -> Self {
        Self::default()
    }

    /// Active memories of these kinds.
    pub fn of_kinds(kinds: &[KindTag]) -> Self {
        Self {
            kinds: kinds.to_vec(),
            ..Self::default()
        }
    }

    /// Does `memory` pass this filter? (Stores may push filters down; this is the reference.)
    pub fn matches(&self, memory: &Memory) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&memory.kind.tag()))
            && self.agent.as_ref().is_none_or(|a| *a == memory.scope.agent)
            && self
                .session
                .as_ref()
                .is_none_or(|s| *s == memory.scope.session)
            && self.state.matches(memory.is_active())
            && self
                .metadata
                .iter()
                .all(|(k, v)| memory.metadata.get(k) == Some(v))
            && self
                .created_since
                .is_none_or(|since| memory.created.time >= since)
            && self
                .created_before
                .is_none_or(|before| memory.created.time < before)
            && self.validity.matches(memory.valid_from, memory.valid_to)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StateFilter {
    #[default]
    Active,
    Forgotten,
    All,
}

impl StateFilter {
    pub fn matches(self, active: bool) -> bool {
        match self {
            StateFilter::Active => active,
            StateFilter::Forgotten => !active,
            StateFilter::All => true,
        }
    }
}

/// Offset pagination over a stable order (creation round, time, then id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub offset: usize,
    pub limit: usize,
}

impl Page {
    pub const MAX_LIMIT: usize = 10_000;
    pub fn first(limit: usize) -> Self {
        Self { offset: 0, limit }
    }

    /// A page a caller may ask for: a limit between 1 and [`Page::MAX_LIMIT`].
    pub fn validate(self) -> crate::error::Result<Self> {
        if self.limit == 0 || self.limit > Page::MAX_LIMIT {
            return Err(crate::error::Error::invalid(format!(
                "page limit must be between 1 and {}",
                Page::MAX_LIMIT
            )));
        }
        Ok(self)
    }

    /// Does the page reach into a listing of `total` items? (Stores skip the query if not.)
    pub fn reaches(self, total: usize) -> bool {
        self.limit > 0 && self.offset < total
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paged<T> {
    pub items: Vec<T>,
    /// How many items match the filter in total.
    pub total: usize,
    /// Offset of the next page, if there is one.
    pub next_offset: Option<usize>,
}

impl<T> Paged<T> {
    /// Cut one page out of an already filtered, ordered list.
    pub fn from_sorted(all: Vec<T>, page: Page) -> Self {
        let total = all.len();
        let items: Vec<T> = all.into_iter().skip(page.offset).take(page.limit).collect();
        Self::from_window(items, total, page)
    }

    /// A page from the items a store fetched for `page` and the listing's total: the one rule
    /// for `next_offset` every store follows.
    pub fn from_window(items: Vec<T>, total: usize, page: Page) -> Self {
        let end = page.offset.saturating_add(items.len());
        let next_offset = (end < total && !items.is_empty()).then_some(end);
        Paged {
            items,
            total,
            next_offset,
        }
    }
}

/// What a purge removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    pub turns: usize,
    pub memories: usize,
    pub history_entries: usize,
    pub vectors: usize,
}

/// Check a new API key against the contract and the keys already stored (what every store's
/// `put_api_key` rejects, in one place).
pub fn check_new_api_key(key: &ApiKey, stored: &[ApiKey]) -> StoreResult<()> {
    key.validate()
        .map_err(|e| StoreError::InvalidWrite(e.to_string()))?;
    if let Some(other) = stored.iter().find(|k| k.id == key.id || k.hash == key.hash) {
        let what = if other.id == key.id { "id" } else { "hash" };
        return Err(StoreError::InvalidWrite(format!(
            "an API key with this {what} is already stored"
        )));
    }
    Ok(())
}

/// Refuse metrics a store that keeps them as JSON cannot read back: JSON has no NaN or
/// infinity, so such a metric would be written as `null` (what every JSON-backed store checks).
pub fn check_finite_metrics(metrics: &Metrics) -> StoreResult<()> {
    let named = [
        ("importance", metrics.importance),
        ("strength", metrics.strength),
        ("inhibition", metrics.inhibition),
    ];
    let extra = metrics.extra.iter().map(|(k, v)| (k.as_str(), Some(*v)));
    for (name, value) in named.into_iter().chain(extra) {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(StoreError::InvalidWrite(format!(
                "metric '{name}' is not a finite number"
            )));
        }
    }
    Ok(())
}

/// A vector as little-endian `f32` bytes, the layout every store keeps (bit-exact, `-0.0` and
/// subnormals included).
pub fn vector_to_le_bytes(vector: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(vector.len() * 4);
    for x in vector {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes
}

/// The vector [`vector_to_le_bytes`] wrote, if `bytes` holds exactly `dim` of them.
pub fn vector_from_le_bytes(bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    if dim.checked_mul(4) != Some(bytes.len()) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// Rows listed per store call when a caller pages through everything.
const LIST_ALL_PAGE: usize = 5_000;

/// Turns and memories as they are stored: everything a caller reads of one user's dialogue and
/// what was derived from it.
///
/// An implementation guarantees:
/// - **Isolation**: every call takes a `UserKey` and never returns another user's rows; asking
///   for another user's id behaves exactly like asking for an unknown id.
/// - **Order**: turns and memories are listed by (created round, created time, id), ascending.
/// - **Filters**: `list` returns exactly the memories [`MemoryFilter::matches`] accepts.
/// - **History**: `history` returns every version of a memory, oldest first; each is the memory
///   as it was after its change.
/// - **Export**: `export_user` returns all of a user's turns, memories (active and forgotten)
///   with their whole history, vectors of every model and jobs (pending and finished, with
///   attempts and errors), in the canonical order of [`UserExport`], from one consistent state.
pub trait MemoryRead: Send + Sync {
    fn turn(&self, user: &UserKey, id: TurnId) -> StoreResult<Option<Turn>>;
    fn turns(&self, user: &UserKey, page: Page) -> StoreResult<Paged<Turn>>;
    /// The user's stored turns that carry one of these idempotency keys (any order; keys with
    /// no turn are skipped).
    fn turns_by_keys(&self, user: &UserKey, keys: &[String]) -> StoreResult<Vec<Turn>>;

    fn memory(&self, user: &UserKey, id: MemoryId) -> StoreResult<Option<Memory>>;
    /// Fetch several memories of one user; unknown ids are skipped. Order follows `ids`.
    fn memories(&self, user: &UserKey, ids: &[MemoryId]) -> StoreResult<Vec<Memory>>;
    fn list(&self, user: &UserKey, filter: &MemoryFilter, page: Page)
        -> StoreResult<Paged<Memory>>;
    fn history(&self, user: &UserKey, id: MemoryId) -> StoreResult<Vec<HistoryEntry>>;

    /// Every user with at least one turn or memory.
    fn users(&self) -> StoreResult<Vec<UserKey>>;
    /// A number that changes when another handle (another process, or another store opened on
    /// the same database) has committed a write of `user` since the last call; commits through
    /// this handle leave it alone. Callers with caches of `user` rebuild them when it changes.
    ///
    /// A store may be coarser: the number may also change for other users' writes, or for
    /// nothing, but it never stays the same across another handle's commit of `user`, a purge
    /// included. `Ok(None)`: the store cannot tell right now (it is busy writing) or cannot be
    /// shared (in-memory stores).
    fn data_version(&self, user: &UserKey) -> StoreResult<Option<u64>>;
    /// The highest round index of the user's turns, if any.
    fn last_round(&self, user: &UserKey) -> StoreResult<Option<u64>>;
    /// Everything of `user` (see [`UserExport`]), read from one consistent state of the store.
    /// A user the store holds nothing of exports empty.
    fn export_user(&self, user: &UserKey) -> StoreResult<UserExport>;

    /// Every memory matching `filter`, in listing order, paging through [`list`](Self::list).
    fn list_all(&self, user: &UserKey, filter: &MemoryFilter) -> StoreResult<Vec<Memory>> {
        let mut out = Vec::new();
        let mut page = Page::first(LIST_ALL_PAGE);
        loop {
            let listed = self.list(user, filter, page)?;
            out.extend(listed.items);
            match listed.next_offset {
                Some(next) => page.offset = next,
                None => return Ok(out),
            }
        }
    }
}

/// Writing turns and memories: the one write path ([`WriteBatch`]) and what acts on a user as a
/// whole.
///
/// An implementation guarantees:
/// - **Atomicity**: `write` commits the whole batch or nothing; when it returns `Ok` the data
///   survives a process crash (`kill -9`). Concurrent writers from several threads never lose a
///   write.
/// - **Validation**: it rejects what [`WriteBatch::validate`] rejects, before it writes.
/// - **Ids** are globally unique (UUIDv7); a batch repeating an id, or reusing a stored one, is
///   rejected as a whole.
/// - **Turn keys**: a turn's idempotency key is unique per user; a batch holding a key already
///   stored for the user is rejected as a whole with [`Conflict::DuplicateTurnKey`].
/// - **Preconditions**: a batch's [`Precondition`] is checked inside the write's transaction;
///   a failed one rejects the batch with a `Conflict` and writes nothing.
/// - **History**: every memory change (create, update, forget, erase) adds a `HistoryEntry`
///   with the memory as it was after the change, as [`Memory::updated`], [`Memory::forgotten`]
///   and [`BatchErase::apply`] compute it; access records do not create versions.
/// - **Forget vs purge**: a batch's forget is a state change with a reason and a cause (the row
///   and its history stay, its vectors go); `purge_user` erases all of a user's turns,
///   memories, history, vectors, jobs and job lease so that no trace of their text remains in
///   the backing files. API keys belong to no user and stay.
/// - **Import**: `import_user` writes an export in one transaction, exactly (ids, times,
///   versions, history, access logs and job states as they are), so exporting it again gives
///   an equal export with the same checksum. It validates like `write` does
///   ([`UserExport::validate`], `InvalidWrite`), and it is refused with
///   [`Conflict::UserNotEmpty`], writing nothing, when the store holds any turn, memory or job
///   of the user already.
pub trait MemoryWrite: MemoryRead {
    /// Atomically write a batch (turns, new memories with their `Created` history, vectors,
    /// updates, forgets and erasures of existing memories, new and finished jobs).
    fn write(&self, batch: WriteBatch) -> StoreResult<()>;
    /// Append retrievals to memories' access logs (no new version).
    fn record_access(&self, user: &UserKey, accesses: &[(MemoryId, Access)]) -> StoreResult<()>;
    /// Erase everything of one user. Irreversible.
    fn purge_user(&self, user: &UserKey) -> StoreResult<PurgeReport>;
    /// Write a user's export into this store, in one transaction (see the contract above).
    fn import_user(&self, export: &UserExport) -> StoreResult<()>;
}

/// Reading the queue of derived work.
///
/// An implementation guarantees: jobs are enqueued and finished only through
/// [`MemoryWrite::write`], atomically with the rest of the batch (finishing an unknown or
/// already finished job rejects the batch); `pending_jobs` lists unfinished jobs oldest first.
pub trait JobRead: Send + Sync {
    /// One job of `user`, finished or not. `Ok(None)` if unknown.
    fn job(&self, user: &UserKey, id: JobId) -> StoreResult<Option<Job>>;
    /// Up to `limit` unfinished jobs of `user`, oldest first (created round, time, then id).
    fn pending_jobs(&self, user: &UserKey, limit: usize) -> StoreResult<Vec<Job>>;
}

/// Running the queue of derived work: failed attempts and who may run a user's jobs.
///
/// An implementation guarantees: `record_job_failure` counts each failed attempt of a pending
/// job once; `lease_jobs` gives one holder (an engine, a server) the right to run a user's
/// pending jobs for a while, so two servers never run the same user's jobs at once; a lease
/// another holder still holds is refused, an expired one is taken over (a dead server's jobs
/// are picked up), the holder renews its own, and `release_jobs` ends it. Leases run on the
/// store's own clock. Purging a user erases their jobs and ends their lease.
pub trait JobWrite: JobRead {
    /// Count a failed attempt of a pending job and keep its error. `Ok(None)` if the job is
    /// unknown; a finished job is returned unchanged.
    fn record_job_failure(
        &self,
        user: &UserKey,
        id: JobId,
        error: &str,
    ) -> StoreResult<Option<Job>>;
    /// Lease `user`'s pending jobs to `holder` for `lease` from now (the store's clock): taken
    /// when nobody holds them or the last holder's lease has run out, renewed when `holder`
    /// already holds them. `Ok(false)`: another holder's lease is still running.
    fn lease_jobs(&self, user: &UserKey, holder: &str, lease: Duration) -> StoreResult<bool>;
    /// End `holder`'s lease on `user`'s jobs; nothing happens if it holds none.
    fn release_jobs(&self, user: &UserKey, holder: &str) -> StoreResult<()>;
}

/// Finding API keys.
///
/// An implementation guarantees: keys belong to no user (`purge_user` leaves them alone), are
/// found by their hash, listed oldest first (created time, id), and never deleted.
pub trait KeyRead: Send + Sync {
    /// The API key whose secret hashes to `hash`, revoked or not. `Ok(None)` if none.
    fn api_key_by_hash(&self, hash: &str) -> StoreResult<Option<ApiKey>>;
    /// Every API key of every tenant, revoked ones included, oldest first (created time, id).
    fn api_keys(&self) -> StoreResult<Vec<ApiKey>>;
}

/// Issuing and revoking API keys.
///
/// An implementation guarantees: a key is stored once (`put_api_key` rejects a reused id or
/// hash, or an invalid key, with `InvalidWrite`, as [`check_new_api_key`] decides), and
/// `revoke_api_key` sets `revoked_at` once (revoking again returns the key as it was).
pub trait KeyWrite: KeyRead {
    /// Store a new API key (see the contract above).
    fn put_api_key(&self, key: &ApiKey) -> StoreResult<()>;
    /// Mark a key revoked at `at`. `Ok(None)` if unknown; an already revoked key is returned
    /// unchanged (the first revocation time stands).
    fn revoke_api_key(&self, id: ApiKeyId, at: Timestamp) -> StoreResult<Option<ApiKey>>;
}

/// Reading the dense vectors of memories, and the store's own nearest-neighbour search.
///
/// An implementation guarantees: vectors come back bit-exact (`-0.0` and subnormals
/// included), only for active memories, in listing order; a forgotten or erased memory has
/// none left.
pub trait VectorRead: Send + Sync {
    /// All vectors of the user's active memories in one embedder's space.
    fn vectors(&self, user: &UserKey, model: &str) -> StoreResult<Vec<VectorRow>>;
    /// Up to `limit` active memories of `user` with no vector in `model`'s space, in listing
    /// order (what a move into `model`'s space has left to embed).
    fn unembedded(&self, user: &UserKey, model: &str, limit: usize) -> StoreResult<Vec<MemoryId>>;
    /// How many vectors the store holds in each space, over every user, most first (ties by
    /// model id); spaces without vectors are not listed.
    fn vector_models(&self) -> StoreResult<Vec<(String, u64)>>;
    /// The nearest-neighbour search this store runs itself, if it has one
    /// ([`VectorSearch`]); `None`: callers score vectors in process.
    fn vector_search(&self) -> Option<&dyn VectorSearch>;
}

/// Adding vectors to memories already stored (vectors of new memories go with their batch).
///
/// An implementation guarantees: `put_vectors` replaces a memory's vector of the same model,
/// atomically for the whole call; a row naming an unknown memory, or another user's, rejects
/// the whole call with `InvalidWrite`. `retain_vectors` deletes every vector of `user` in
/// another space than `model`, atomically, and leaves `model`'s and other users' alone.
pub trait VectorWrite: VectorRead {
    /// Store (or replace) vectors of existing memories of `user`, atomically.
    fn put_vectors(&self, user: &UserKey, rows: &[VectorRow]) -> StoreResult<()>;
    /// Delete `user`'s vectors of every model but `model`; how many were deleted.
    fn retain_vectors(&self, user: &UserKey, model: &str) -> StoreResult<u64>;
}

/// Which vector space (an embedder id, `Embedder::id`) a database is bound to: the one space
/// its vectors are searched in, so an engine never mixes two (see `mnemos_engine`).
///
/// An implementation guarantees: `binding` returns what the last successful
/// [`BindingWrite::bind`] set, to every handle and after a reopen; `None` until the first.
pub trait BindingRead: Send + Sync {
    /// The embedder id the database is bound to, if any.
    fn binding(&self) -> StoreResult<Option<String>>;
}

/// Binding a database to a vector space, or moving it to another.
///
/// An implementation guarantees: `bind` is a compare-and-set. It sets the binding to `model`
/// only if the binding is `expected` at that moment (`None`: no binding yet), atomically;
/// otherwise it writes nothing and fails with [`Conflict::BindingMoved`] naming what it found,
/// so two engines binding a new database at once agree on one space. An empty `model` is an
/// `InvalidWrite`. Purging users leaves the binding alone.
pub trait BindingWrite: BindingRead {
    /// Bind the database to `model` if it is still bound to `expected` (see the contract).
    fn bind(&self, model: &str, expected: Option<&str>) -> StoreResult<()>;
}

/// Counts of vectors by model as [`VectorRead::vector_models`] lists them: most first, ties by
/// model id.
pub fn sort_model_counts(mut counts: Vec<(String, u64)>) -> Vec<(String, u64)> {
    counts.retain(|(_, n)| *n > 0);
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

/// The binding check every store's [`BindingWrite::bind`] makes, in one place: a non-empty
/// `model`, and `found` (the binding read inside the store's transaction) equal to `expected`.
pub fn check_bind(model: &str, expected: Option<&str>, found: Option<&str>) -> StoreResult<()> {
    if model.trim().is_empty() {
        return Err(StoreError::InvalidWrite(
            "a database is bound to a non-empty embedder id".into(),
        ));
    }
    if expected == found {
        return Ok(());
    }
    Err(Conflict::BindingMoved {
        expected: expected.map(str::to_string),
        found: found.map(str::to_string),
    }
    .into())
}

/// The reading half of a [`Store`]: every read capability and nothing that changes.
///
/// Mechanisms and views get a `&dyn StoreRead`, so they cannot write even by mistake; only the
/// engine holds the whole [`Store`].
pub trait StoreRead: MemoryRead + JobRead + KeyRead + VectorRead + BindingRead {
    /// What this store is and where its data lives, for start-up reports and health checks.
    fn info(&self) -> StoreInfo;
}

/// Persistent storage of turns, memories, their history, vectors, jobs and API keys: every
/// capability, read and write, bundled so the engine holds one store.
///
/// Nothing is implemented here: a type that implements [`StoreRead`] and the five write
/// capabilities is a `Store`. Every implementation (in-memory reference, SQLite, PostgreSQL)
/// passes the conformance suite in `mnemos-conformance`, one group of checks per capability.
pub trait Store:
    StoreRead + MemoryWrite + JobWrite + KeyWrite + VectorWrite + BindingWrite
{
}

impl<T> Store for T where
    T: StoreRead + MemoryWrite + JobWrite + KeyWrite + VectorWrite + BindingWrite + ?Sized
{
}
