//! The conformance suite every [`Store`] implementation must pass.
//!
//! Each check is a public function taking a factory that returns a fresh, empty store; a check
//! panics (like a test assertion) when the store breaks the contract written on the capability
//! traits [`Store`] bundles. The checks are grouped by capability ([`CHECK_GROUPS`]): turns and
//! memories, jobs, API keys, vectors, the vector-space binding.
//! `run_all` runs every check; [`conformance_tests!`] expands to one `#[test]` per check so a
//! store crate reports each failure by name:
//!
//! ```
//! // In a store crate's integration test (e.g. `tests/conformance.rs`):
//! mod memory_store {
//!     mnemos_conformance::conformance_tests!(mnemos_core::MemoryStore::new);
//! }
//! // Or everything in one test:
//! mnemos_conformance::run_all(&mnemos_core::MemoryStore::new);
//! ```
//!
//! A factory for a store that needs a temporary directory wraps both in [`Guarded`], so the
//! directory lives exactly as long as the store.
//!
//! The suite is written against `mnemos_core::MemoryStore` (the reference) and keeps every check
//! small so a persistent store runs the whole suite in well under two seconds.

// The suite is test code: a check fails like an assertion does, by panicking with what broke.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines
)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;

use mnemos_core::StoreProxy;
use mnemos_core::{
    Access, ApiKey, ApiKeyId, BatchForget, BatchUpdate, Change, Conflict, ForgetCause,
    HistoryEntry, Job, JobId, KindTag, Memory, MemoryFilter, MemoryId, MemoryKind, MemoryPatch,
    MemoryState, Metadata, Metrics, Moment, Page, Paged, Precondition, PurgeReport, Role, Scope,
    StateFilter, Store, StoreError, StoreResult, Timestamp, Turn, TurnId, UserExport, UserKey,
    Validity, VectorRow, VectorSearch, WriteBatch, MAX_JOB_PAYLOAD_BYTES, MAX_TEXT_BYTES,
};

/// Defines the suite once: `CHECK_NAMES`, `run_all` and the exported `conformance_tests!` macro
/// all come from this single list so they cannot drift apart. `$d` is a literal `$` token, the
/// stable way to write the inner macro's own metavariables.
macro_rules! define_suite {
    ($d:tt $($group:ident: [$($name:ident),+ $(,)?]),+ $(,)?) => {
        /// Names of every check, in the order `run_all` runs them.
        pub const CHECK_NAMES: &[&str] = &[$($(stringify!($name)),+),+];

        /// The checks of each capability of the contract, in the order `run_all` runs them:
        /// `memories` ([`MemoryRead`](mnemos_core::MemoryRead),
        /// [`MemoryWrite`](mnemos_core::MemoryWrite)), `jobs`
        /// ([`JobRead`](mnemos_core::JobRead), [`JobWrite`](mnemos_core::JobWrite)), `keys`
        /// ([`KeyRead`](mnemos_core::KeyRead), [`KeyWrite`](mnemos_core::KeyWrite)), `vectors`
        /// ([`VectorRead`](mnemos_core::VectorRead), [`VectorWrite`](mnemos_core::VectorWrite)),
        /// `binding` ([`BindingRead`](mnemos_core::BindingRead),
        /// [`BindingWrite`](mnemos_core::BindingWrite)).
        pub const CHECK_GROUPS: &[(&str, &[&str])] =
            &[$((stringify!($group), &[$(stringify!($name)),+])),+];

        /// Run every check against fresh stores from `make`.
        pub fn run_all<S: Store>(make: &dyn Fn() -> S) {
            $($( $name(make); )+)+
        }

        /// Every check with its name, in the order `run_all` runs them.
        pub fn checks<S: Store>() -> Vec<(&'static str, fn(&dyn Fn() -> S))> {
            vec![$($((stringify!($name), $name::<S> as fn(&dyn Fn() -> S))),+),+]
        }

        /// Expand to one `#[test]` per conformance check.
        ///
        /// The argument is a factory (anything callable as `Fn() -> S` where `S: Store`) that
        /// returns a fresh, empty store each call, e.g. `MemoryStore::new` or
        /// `|| SqliteStore::open_in_memory().unwrap()`. Invoke it inside its own module: the
        /// generated test functions are named after the checks.
        #[macro_export]
        macro_rules! conformance_tests {
            ($d factory:expr) => {
                $($(
                    #[test]
                    fn $name() {
                        $crate::$name(&$d factory);
                    }
                )+)+
            };
        }
    };
}

define_suite!($
    memories: [
        crud_round_trip,
        duplicate_ids_rejected_atomically,
        memories_by_ids,
        pagination,
        list_filters,
        update_versions_and_history,
        forget_semantics,
        record_access_appends,
        history_in_order,
        purge_user_removes_only_that_user,
        scope_isolation,
        last_round,
        last_round_precondition,
        turn_keys_unique_per_user,
        concurrent_writers,
        validation_rejects_bad_input,
        unicode_round_trip,
        batch_edits_match_one_by_one,
        batch_edits_rejected_atomically,
        users_listed_by_memories_alone,
        supersession_and_validity,
        erasure_leaves_no_words,
        export_import_round_trip,
    ],
    jobs: [
        jobs_enqueue_in_order,
        finishing_jobs_at_most_once,
        job_failures_counted,
        jobs_isolated_and_purged,
        job_leases_exclusive_until_expiry,
    ],
    keys: [api_keys_found_listed_and_kept, api_key_revocation],
    vectors: [
        vectors_bit_exact,
        put_vectors_replaces_within_user,
        vector_search_when_offered,
        unembedded_counted_and_retained,
    ],
    binding: [binding_compare_and_set],
);

/// A store that keeps something alive for exactly as long as the store (a temporary directory,
/// a scratch database). The store is dropped first, then the guard.
pub struct Guarded<S, G> {
    store: S,
    _guard: G,
}

impl<S, G> Guarded<S, G> {
    pub fn new(store: S, guard: G) -> Self {
        Self {
            store,
            _guard: guard,
        }
    }
    pub fn store(&self) -> &S {
        &self.store
    }
}

/// Exactly the guarded store.
impl<S: Store, G: Send + Sync> StoreProxy for Guarded<S, G> {
    type Target = S;

    fn target(&self) -> &S {
        &self.store
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Wall time of round 0 in every fixture (a fixed date keeps runs reproducible).
/// One caller's edit or forget of one memory, written the only way the contract offers: as a
/// [`WriteBatch`] of its own. Checks written against edits read the memory back afterwards.
trait EditsOne {
    /// Patch one memory in a batch of its own; the memory as stored afterwards.
    fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
        at: Moment,
    ) -> StoreResult<Option<Memory>>;
    /// Forget one memory in a batch of its own, as someone's request; the memory as stored
    /// afterwards.
    fn forget(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
        at: Moment,
    ) -> StoreResult<Option<Memory>>;
}

impl<S: Store + ?Sized> EditsOne for S {
    fn update(
        &self,
        user: &UserKey,
        id: MemoryId,
        patch: &MemoryPatch,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        self.write(WriteBatch {
            user: Some(user.clone()),
            updates: vec![BatchUpdate {
                id,
                patch: patch.clone(),
                at,
            }],
            ..WriteBatch::default()
        })?;
        self.memory(user, id)
    }

    fn forget(
        &self,
        user: &UserKey,
        id: MemoryId,
        reason: &str,
        at: Moment,
    ) -> StoreResult<Option<Memory>> {
        self.write(WriteBatch {
            user: Some(user.clone()),
            forgets: vec![BatchForget {
                id,
                reason: reason.to_string(),
                cause: ForgetCause::Request,
                at,
            }],
            ..WriteBatch::default()
        })?;
        self.memory(user, id)
    }
}

const T0: i64 = 1_750_000_000_000;
const MODEL_A: &str = "conformance-a";
const MODEL_B: &str = "conformance-b";

fn unwrap_ok<T>(result: StoreResult<T>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(err) => panic!("{what}: unexpected store error: {err}"),
    }
}

fn assert_invalid_write<T: Debug>(result: StoreResult<T>, what: &str) {
    match result {
        Err(StoreError::InvalidWrite(_)) => {}
        Err(other) => panic!("{what}: expected StoreError::InvalidWrite, got {other:?}"),
        Ok(value) => panic!("{what}: expected StoreError::InvalidWrite, got Ok({value:?})"),
    }
}

fn key(tenant: &str, user: &str) -> UserKey {
    UserKey {
        tenant: tenant.into(),
        user: user.into(),
    }
}

fn scope_of(user: &UserKey, agent: &str, session: &str) -> Scope {
    Scope {
        tenant: user.tenant.clone(),
        user: user.user.clone(),
        agent: agent.into(),
        session: session.into(),
    }
}

fn moment(round: u64) -> Moment {
    Moment {
        round,
        time: Timestamp(T0 + round as i64 * 1_000),
    }
}

fn turn(scope: &Scope, round: u64, text: &str) -> Turn {
    Turn {
        id: TurnId::new(),
        scope: scope.clone(),
        role: if round.is_multiple_of(2) {
            Role::User
        } else {
            Role::Assistant
        },
        speaker: None,
        text: text.into(),
        at: moment(round),
        metadata: Metadata::new(),
        key: None,
    }
}

fn memory(
    scope: &Scope,
    kind: MemoryKind,
    created: Moment,
    text: &str,
    provenance: Vec<TurnId>,
) -> Memory {
    Memory {
        id: MemoryId::new(),
        scope: scope.clone(),
        kind,
        text: text.into(),
        provenance,
        created,
        valid_from: created.time,
        valid_to: None,
        superseded_by: None,
        state: MemoryState::Active,
        metrics: Metrics::default(),
        access: Vec::new(),
        metadata: Metadata::new(),
        version: 1,
    }
}

/// `n` facts "fact 0", "fact 1", … in `scope`, fact i from round i.
fn facts(scope: &Scope, n: u64) -> Vec<Memory> {
    (0..n)
        .map(|i| {
            memory(
                scope,
                MemoryKind::Fact,
                moment(i),
                &format!("fact {i}"),
                vec![],
            )
        })
        .collect()
}

fn meta(pairs: &[(&str, &str)]) -> Metadata {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Deterministic xorshift generator: fixtures are varied but every run is the same.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
    /// A finite f32 from random bits (NaN and infinities are not valid embeddings).
    fn finite_f32(&mut self) -> f32 {
        loop {
            let value = f32::from_bits(self.next() as u32);
            if value.is_finite() {
                return value;
            }
        }
    }
}

fn vector(memory_id: MemoryId, model: &str, dim: usize, rng: &mut Rng) -> VectorRow {
    VectorRow {
        memory_id,
        model: model.into(),
        vector: (0..dim).map(|_| rng.finite_f32()).collect(),
    }
}

fn memory_order_key(m: &Memory) -> (u64, Timestamp, MemoryId) {
    (m.created.round, m.created.time, m.id)
}

fn sorted_memories(mut memories: Vec<Memory>) -> Vec<Memory> {
    memories.sort_by_key(memory_order_key);
    memories
}

fn all_page() -> Page {
    Page::first(Page::MAX_LIMIT)
}

fn list_all<S: Store>(store: &S, user: &UserKey, filter: &MemoryFilter) -> Paged<Memory> {
    unwrap_ok(store.list(user, filter, all_page()), "list")
}

fn any_state() -> MemoryFilter {
    MemoryFilter {
        state: StateFilter::All,
        ..MemoryFilter::default()
    }
}

fn assert_vectors_bit_exact(got: &[VectorRow], want: &[VectorRow], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: number of vector rows");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            g.memory_id, w.memory_id,
            "{what}: vector rows out of order or wrong memory"
        );
        assert_eq!(
            g.model, w.model,
            "{what}: model of vector for {}",
            w.memory_id
        );
        let gb: Vec<u32> = g.vector.iter().map(|x| x.to_bits()).collect();
        let wb: Vec<u32> = w.vector.iter().map(|x| x.to_bits()).collect();
        assert!(
            gb == wb,
            "{what}: vector of {} ({}) is not bit-exact",
            w.memory_id,
            w.model
        );
    }
}

/// The rows `vectors(user, model)` must return: active memories' vectors in memory order.
fn expected_vectors(memories: &[Memory], vectors: &[VectorRow], model: &str) -> Vec<VectorRow> {
    sorted_memories(memories.iter().filter(|m| m.is_active()).cloned().collect())
        .iter()
        .filter_map(|m| {
            vectors
                .iter()
                .find(|v| v.memory_id == m.id && v.model == model)
                .cloned()
        })
        .collect()
}

fn created_entry(memory: &Memory) -> HistoryEntry {
    HistoryEntry {
        memory_id: memory.id,
        version: memory.version,
        at: memory.created,
        change: Change::Created,
        snapshot: memory.clone(),
    }
}

/// Everything readable about one user, to prove that an operation left it untouched.
#[derive(Debug, PartialEq)]
struct UserSnapshot {
    turns: Paged<Turn>,
    memories: Paged<Memory>,
    histories: Vec<Vec<HistoryEntry>>,
    vectors_a: Vec<VectorRow>,
    vectors_b: Vec<VectorRow>,
    last_round: Option<u64>,
}

fn snapshot_user<S: Store>(store: &S, user: &UserKey) -> UserSnapshot {
    let memories = list_all(store, user, &any_state());
    let histories = memories
        .items
        .iter()
        .map(|m| unwrap_ok(store.history(user, m.id), "history"))
        .collect();
    UserSnapshot {
        turns: unwrap_ok(store.turns(user, all_page()), "turns"),
        histories,
        memories,
        vectors_a: unwrap_ok(store.vectors(user, MODEL_A), "vectors"),
        vectors_b: unwrap_ok(store.vectors(user, MODEL_B), "vectors"),
        last_round: unwrap_ok(store.last_round(user), "last_round"),
    }
}

fn assert_user_empty<S: Store>(store: &S, user: &UserKey, what: &str) {
    let turns = unwrap_ok(store.turns(user, all_page()), "turns");
    assert!(
        turns.items.is_empty() && turns.total == 0,
        "{what}: user {user} still has turns"
    );
    let memories = list_all(store, user, &any_state());
    assert!(
        memories.items.is_empty() && memories.total == 0,
        "{what}: user {user} still has memories"
    );
    assert_eq!(
        unwrap_ok(store.last_round(user), "last_round"),
        None,
        "{what}: last_round of {user}"
    );
    assert!(
        unwrap_ok(store.vectors(user, MODEL_A), "vectors").is_empty(),
        "{what}: vectors of {user}"
    );
}

/// A small but complete dataset for one user: turns, memories of every kind, vectors.
struct Dataset {
    turns: Vec<Turn>,
    memories: Vec<Memory>,
    vectors: Vec<VectorRow>,
}

impl Dataset {
    fn new(user: &UserKey, seed: u64) -> Self {
        let mut rng = Rng(seed | 1);
        let scope = scope_of(user, "companion", "session-1");
        let mut turns: Vec<Turn> = (0..4)
            .map(|r| turn(&scope, r + 1, &format!("turn {r} of {user}")))
            .collect();
        turns[0].speaker = Some("Caroline".into());
        turns[0].metadata = meta(&[("source", "chat"), ("mood", "happy")]);
        turns[1].role = Role::Other;
        let mut memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
        let ids: Vec<TurnId> = turns.iter().map(|t| t.id).collect();
        let derived = [
            MemoryKind::Exchange,
            MemoryKind::Summary { level: 2 },
            MemoryKind::Persona {
                key: "occupation".into(),
            },
            MemoryKind::ChainNode {
                category: "travel".into(),
            },
            MemoryKind::Fact,
            MemoryKind::Profile,
            MemoryKind::Reflection,
        ];
        for (i, kind) in derived.into_iter().enumerate() {
            let mut m = memory(
                &scope,
                kind,
                moment(5 + i as u64),
                &format!("derived {i} of {user}"),
                ids.clone(),
            );
            m.metrics = Metrics {
                importance: Some(0.1 + 0.2),
                strength: Some(std::f64::consts::PI * (i as f64 + 1.0)),
                inhibition: (i % 2 == 0).then_some(1e-300),
                extra: [
                    ("arousal".to_string(), 2.76),
                    ("surprise".to_string(), -0.123_456_789_012_345_67),
                    // Misread by one ulp by JSON parsers without exact float parsing.
                    ("tiny".to_string(), 1.071_566_039_146_582_6e-75),
                    ("tinier".to_string(), -1.819_967_304_027_17e-179),
                ]
                .into_iter()
                .collect(),
                times_said: (i % 2 == 1).then_some(i as u32 + 2),
                last_said: (i % 2 == 1).then_some(Timestamp(T0 + 77 * i as i64)),
            };
            m.metadata = meta(&[("topic", "travel"), ("index", &i.to_string())]);
            m.access = vec![Access {
                at: moment(3),
                rank: i as u32,
            }];
            if i == 1 {
                m.valid_to = Some(Timestamp(m.valid_from.0 + 86_400_000));
                m.superseded_by = memories.first().map(|first: &Memory| first.id);
            }
            memories.push(m);
        }
        let mut vectors: Vec<VectorRow> = memories
            .iter()
            .map(|m| vector(m.id, MODEL_A, 16, &mut rng))
            .collect();
        vectors.push(vector(memories[0].id, MODEL_B, 3, &mut rng));
        vectors.push(vector(memories[5].id, MODEL_B, 3, &mut rng));
        Dataset {
            turns,
            memories,
            vectors,
        }
    }

    fn batch(&self) -> WriteBatch {
        WriteBatch {
            turns: self.turns.clone(),
            memories: self.memories.clone(),
            vectors: self.vectors.clone(),
            ..Default::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// A written batch reads back equal: turns, memories (every kind and field), the `Created`
/// history entry of each memory, and vectors per model.
pub fn crud_round_trip<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let mut data = Dataset::new(&user, 11);
    // A memory written already forgotten keeps that state and is excluded from `vectors()`.
    let last = data.memories.len() - 1;
    data.memories[last].state = MemoryState::Forgotten {
        reason: "imported as forgotten".into(),
        at: moment(9),
        cause: ForgetCause::Derived {
            source: data.memories[0].id,
        },
    };
    unwrap_ok(store.write(data.batch()), "write");

    for t in &data.turns {
        assert_eq!(
            unwrap_ok(store.turn(&user, t.id), "turn").as_ref(),
            Some(t),
            "turn {} round trip",
            t.id
        );
    }
    let turns = unwrap_ok(store.turns(&user, all_page()), "turns");
    assert_eq!(
        turns.items, data.turns,
        "turns() returns every turn in (round, time, id) order"
    );
    assert_eq!(turns.total, data.turns.len());
    for m in &data.memories {
        assert_eq!(
            unwrap_ok(store.memory(&user, m.id), "memory").as_ref(),
            Some(m),
            "memory {} round trip",
            m.id
        );
        assert_eq!(
            unwrap_ok(store.history(&user, m.id), "history"),
            vec![created_entry(m)],
            "Created entry of {}",
            m.id
        );
    }
    let listed = list_all(&store, &user, &any_state());
    assert_eq!(
        listed.items,
        sorted_memories(data.memories.clone()),
        "list(All) returns every memory"
    );
    for model in [MODEL_A, MODEL_B] {
        let got = unwrap_ok(store.vectors(&user, model), "vectors");
        assert_vectors_bit_exact(
            &got,
            &expected_vectors(&data.memories, &data.vectors, model),
            model,
        );
    }
    assert!(
        unwrap_ok(store.vectors(&user, "no-such-model"), "vectors").is_empty(),
        "unknown model has no vectors"
    );
    assert_eq!(
        unwrap_ok(store.turn(&user, TurnId::new()), "turn"),
        None,
        "unknown turn id"
    );
    assert_eq!(
        unwrap_ok(store.memory(&user, MemoryId::new()), "memory"),
        None,
        "unknown memory id"
    );
    assert!(
        unwrap_ok(store.history(&user, MemoryId::new()), "history").is_empty(),
        "history of unknown id"
    );
    assert_eq!(
        unwrap_ok(store.users(), "users"),
        vec![user.clone()],
        "users() after one user's write"
    );
    // An empty batch is a no-op.
    unwrap_ok(store.write(WriteBatch::default()), "empty write");
    assert_eq!(
        unwrap_ok(store.turns(&user, all_page()), "turns").total,
        data.turns.len()
    );
}

/// A batch reusing an existing turn or memory id, or naming a vector's unknown memory, is
/// rejected with `InvalidWrite` and none of its other items are persisted.
pub fn duplicate_ids_rejected_atomically<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "agent", "s1");
    let mut rng = Rng(7);
    let t1 = turn(&scope, 1, "first turn");
    let m1 = Memory::from_turn(&t1);
    let v1 = vector(m1.id, MODEL_A, 8, &mut rng);
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t1.clone()],
            memories: vec![m1.clone()],
            vectors: vec![v1.clone()],
            ..Default::default()
        }),
        "first write",
    );
    let before = snapshot_user(&store, &user);

    let t2 = turn(&scope, 2, "second turn");
    let m2 = Memory::from_turn(&t2);
    let v2 = vector(m2.id, MODEL_A, 8, &mut rng);
    let mut t1_again = t1.clone();
    t1_again.text = "a different text under the same id".into();
    // The duplicate comes last so a store that writes item by item has already written the rest.
    let dup_turn = WriteBatch {
        turns: vec![t2.clone(), t1_again],
        memories: vec![m2.clone()],
        vectors: vec![v2.clone()],
        ..Default::default()
    };
    assert_invalid_write(store.write(dup_turn), "batch with an existing turn id");
    assert_eq!(
        snapshot_user(&store, &user),
        before,
        "nothing of the failed batch is persisted"
    );
    assert_eq!(unwrap_ok(store.memory(&user, m2.id), "memory"), None);

    let mut m1_again = m1.clone();
    m1_again.text = "replaced?".into();
    let t3 = turn(&scope, 3, "third turn");
    let dup_memory = WriteBatch {
        turns: vec![t3.clone()],
        memories: vec![m2.clone(), m1_again],
        vectors: vec![],
        ..Default::default()
    };
    assert_invalid_write(store.write(dup_memory), "batch with an existing memory id");
    assert_eq!(
        snapshot_user(&store, &user),
        before,
        "nothing of the failed batch is persisted"
    );
    assert_eq!(unwrap_ok(store.turn(&user, t3.id), "turn"), None);

    let orphan = WriteBatch {
        turns: vec![t3.clone()],
        memories: vec![m2.clone()],
        vectors: vec![v2.clone(), vector(MemoryId::new(), MODEL_A, 8, &mut rng)],
        ..Default::default()
    };
    assert_invalid_write(
        store.write(orphan),
        "batch with a vector of an unknown memory",
    );
    assert_eq!(
        snapshot_user(&store, &user),
        before,
        "nothing of the failed batch is persisted"
    );

    // The store keeps working after rejected batches.
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t2.clone(), t3.clone()],
            memories: vec![m2.clone()],
            vectors: vec![v2],
            ..Default::default()
        }),
        "write after rejected batches",
    );
    assert_eq!(
        unwrap_ok(store.turns(&user, all_page()), "turns").items,
        vec![t1, t2, t3]
    );
    assert_eq!(list_all(&store, &user, &any_state()).items, vec![m1, m2]);
}

/// `memories(ids)` follows the order of `ids` and skips unknown ids.
pub fn memories_by_ids<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "agent", "s1");
    let ms: Vec<Memory> = facts(&scope, 5);
    unwrap_ok(
        store.write(WriteBatch {
            memories: ms.clone(),
            ..WriteBatch::default()
        }),
        "write",
    );
    let ids = [
        ms[3].id,
        MemoryId::new(),
        ms[0].id,
        ms[4].id,
        MemoryId::new(),
    ];
    let got = unwrap_ok(store.memories(&user, &ids), "memories");
    assert_eq!(
        got,
        vec![ms[3].clone(), ms[0].clone(), ms[4].clone()],
        "order follows ids, unknown skipped"
    );
    let reversed: Vec<MemoryId> = ms.iter().rev().map(|m| m.id).collect();
    let got = unwrap_ok(store.memories(&user, &reversed), "memories");
    assert_eq!(
        got,
        ms.iter().rev().cloned().collect::<Vec<_>>(),
        "reverse order"
    );
    assert!(
        unwrap_ok(store.memories(&user, &[]), "memories").is_empty(),
        "no ids, no memories"
    );
    assert!(
        unwrap_ok(store.memories(&user, &[MemoryId::new()]), "memories").is_empty(),
        "only unknown ids"
    );
}

fn check_pages<T: Clone + PartialEq + Debug>(
    expected: &[T],
    fetch: &dyn Fn(Page) -> Paged<T>,
    limit: usize,
    what: &str,
) {
    let mut offset = 0;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = fetch(Page { offset, limit });
        assert_eq!(
            page.total,
            expected.len(),
            "{what}: total at offset {offset}"
        );
        let end = (offset + limit).min(expected.len());
        assert_eq!(
            page.items,
            expected[offset..end].to_vec(),
            "{what}: page at offset {offset}"
        );
        seen.extend(page.items);
        pages += 1;
        match page.next_offset {
            Some(next) => {
                assert_eq!(next, end, "{what}: next_offset after offset {offset}");
                offset = next;
            }
            None => {
                assert_eq!(
                    end,
                    expected.len(),
                    "{what}: next_offset missing before the end"
                );
                break;
            }
        }
        assert!(
            pages <= expected.len() + 1,
            "{what}: pagination does not terminate"
        );
    }
    assert_eq!(
        seen, expected,
        "{what}: pages concatenate to the full ordered list"
    );
    for (offset, limit) in [
        (expected.len(), 5),
        (expected.len() + 100, 5),
        (0, 0),
        (3, 0),
    ] {
        let page = fetch(Page { offset, limit });
        assert!(
            page.items.is_empty(),
            "{what}: page {offset}/{limit} must be empty"
        );
        assert_eq!(
            page.total,
            expected.len(),
            "{what}: total of page {offset}/{limit}"
        );
        assert_eq!(
            page.next_offset, None,
            "{what}: next_offset of empty page {offset}/{limit}"
        );
    }
    let tail = fetch(Page {
        offset: expected.len() - 2,
        limit: 10,
    });
    assert_eq!(
        tail.items,
        expected[expected.len() - 2..].to_vec(),
        "{what}: last partial page"
    );
    assert_eq!(
        tail.next_offset, None,
        "{what}: last page has no next_offset"
    );
}

/// Listing turns and memories pages through a stable (round, time, id) order with a correct
/// `total` and `next_offset`, whatever order items were written in.
pub fn pagination<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let mut rng = Rng(42);
    let scope = scope_of(&user, "agent", "s1");
    // Several memories share a round, and some share round and time, so the id decides.
    let mut memories: Vec<Memory> = (0..23u64)
        .map(|i| {
            let created = Moment {
                round: i / 4,
                time: Timestamp(T0 + (i % 3 / 2) as i64 * 500),
            };
            memory(
                &scope,
                MemoryKind::Fact,
                created,
                &format!("memory {i}"),
                vec![],
            )
        })
        .collect();
    let mut turns: Vec<Turn> = (0..17u64)
        .map(|i| {
            let mut t = turn(&scope, i / 3, &format!("turn {i}"));
            t.at.time = Timestamp(T0 - (i % 2) as i64 * 10);
            t
        })
        .collect();
    rng.shuffle(&mut memories);
    rng.shuffle(&mut turns);
    for (ms, ts) in memories.chunks(8).zip(turns.chunks(6)) {
        unwrap_ok(
            store.write(WriteBatch {
                turns: ts.to_vec(),
                memories: ms.to_vec(),
                vectors: vec![],
                ..Default::default()
            }),
            "write",
        );
    }
    let expected_memories = sorted_memories(memories);
    turns.sort_by_key(|t| (t.at.round, t.at.time, t.id));
    let filter = MemoryFilter::active();
    for limit in [1, 5, 7, 23, 50] {
        check_pages(
            &expected_memories,
            &|page| unwrap_ok(store.list(&user, &filter, page), "list"),
            limit,
            "list",
        );
        check_pages(
            &turns,
            &|page| unwrap_ok(store.turns(&user, page), "turns"),
            limit,
            "turns",
        );
    }
}

const PATH_LIKE_KEY: &str = "$.a[0] \"b\".c' --";

/// Filters by kind, agent, session, state, creation time and metadata pairs select exactly what
/// `MemoryFilter::matches` selects, in order, with the right total.
pub fn list_filters<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let kinds = [
        MemoryKind::Turn,
        MemoryKind::Summary { level: 1 },
        MemoryKind::Persona {
            key: "hobby".into(),
        },
        MemoryKind::Fact,
    ];
    let mut all = Vec::new();
    for i in 0..24u64 {
        let scope = scope_of(
            &user,
            ["a1", "a2"][(i % 2) as usize],
            ["s1", "s2", "s3"][(i % 3) as usize],
        );
        let mut m = memory(
            &scope,
            kinds[(i / 2 % 4) as usize].clone(),
            moment(i),
            &format!("memory {i}"),
            vec![],
        );
        m.metadata = meta(&[
            ("topic", ["food", "travel"][(i / 3 % 2) as usize]),
            ("lang", ["zh", "en"][(i / 5 % 2) as usize]),
        ]);
        if i % 7 == 0 {
            m.metadata.insert("pinned".into(), "yes".into());
        }
        if i == 5 {
            // Characters that break stores building JSON paths or SQL from keys.
            m.metadata
                .insert(PATH_LIKE_KEY.into(), "it's \"quoted\"".into());
        }
        all.push(m);
    }
    unwrap_ok(
        store.write(WriteBatch {
            memories: all.clone(),
            ..WriteBatch::default()
        }),
        "write",
    );
    for i in [2usize, 9, 13, 20] {
        let forgotten = unwrap_ok(store.forget(&user, all[i].id, "test", moment(30)), "forget");
        all[i] = forgotten.unwrap_or_else(|| panic!("forget of a known memory returned None"));
    }

    let filters = vec![
        ("default (active)", MemoryFilter::default(), 20),
        (
            "kind fact",
            MemoryFilter {
                kinds: vec![KindTag::Fact],
                ..Default::default()
            },
            6,
        ),
        (
            "kinds summary+persona",
            MemoryFilter {
                kinds: vec![KindTag::Summary, KindTag::Persona],
                ..Default::default()
            },
            9,
        ),
        (
            "created since",
            MemoryFilter {
                created_since: Some(moment(10).time),
                ..Default::default()
            },
            12,
        ),
        (
            "created before",
            MemoryFilter {
                created_before: Some(moment(5).time),
                ..Default::default()
            },
            4,
        ),
        (
            "created in a window, any state",
            MemoryFilter {
                created_since: Some(moment(3).time),
                created_before: Some(moment(10).time),
                state: StateFilter::All,
                ..Default::default()
            },
            7,
        ),
        (
            "agent a2",
            MemoryFilter {
                agent: Some("a2".into()),
                ..Default::default()
            },
            10,
        ),
        (
            "session s3",
            MemoryFilter {
                session: Some("s3".into()),
                ..Default::default()
            },
            6,
        ),
        (
            "agent+session",
            MemoryFilter {
                agent: Some("a1".into()),
                session: Some("s2".into()),
                ..Default::default()
            },
            4,
        ),
        (
            "unknown agent",
            MemoryFilter {
                agent: Some("nobody".into()),
                ..Default::default()
            },
            0,
        ),
        (
            "forgotten",
            MemoryFilter {
                state: StateFilter::Forgotten,
                ..Default::default()
            },
            4,
        ),
        (
            "all states",
            MemoryFilter {
                state: StateFilter::All,
                ..Default::default()
            },
            24,
        ),
        (
            "metadata topic",
            MemoryFilter {
                metadata: meta(&[("topic", "food")]),
                ..Default::default()
            },
            9,
        ),
        (
            "metadata two pairs",
            MemoryFilter {
                metadata: meta(&[("topic", "food"), ("lang", "en")]),
                ..Default::default()
            },
            5,
        ),
        (
            "metadata present key",
            MemoryFilter {
                metadata: meta(&[("pinned", "yes")]),
                state: StateFilter::All,
                ..Default::default()
            },
            4,
        ),
        (
            "metadata wrong value",
            MemoryFilter {
                metadata: meta(&[("topic", "Food")]),
                ..Default::default()
            },
            0,
        ),
        (
            "metadata key with path characters",
            MemoryFilter {
                metadata: meta(&[(PATH_LIKE_KEY, "it's \"quoted\"")]),
                ..Default::default()
            },
            1,
        ),
        (
            "metadata absent key",
            MemoryFilter {
                metadata: meta(&[("absent", "x")]),
                ..Default::default()
            },
            0,
        ),
        (
            "everything combined",
            MemoryFilter {
                kinds: vec![KindTag::Turn, KindTag::Fact, KindTag::Persona],
                agent: Some("a1".into()),
                session: None,
                state: StateFilter::All,
                metadata: meta(&[("topic", "travel")]),
                created_since: Some(moment(1).time),
                created_before: None,
                validity: Validity::Any,
            },
            3,
        ),
    ];
    for (what, filter, count) in filters {
        let expected = sorted_memories(all.iter().filter(|m| filter.matches(m)).cloned().collect());
        assert_eq!(expected.len(), count, "fixture: {what}");
        let got = list_all(&store, &user, &filter);
        assert_eq!(got.total, count, "filter {what}: total");
        assert_eq!(got.items, expected, "filter {what}: items");
        if count > 2 {
            check_pages(
                &expected,
                &|page| unwrap_ok(store.list(&user, &filter, page), "list"),
                2,
                what,
            );
        }
    }
}

/// `update` bumps the version, stores the patched memory, and appends an `Updated` history entry
/// with the new snapshot; invalid patches change nothing; unknown ids give `None`.
pub fn update_versions_and_history<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let data = Dataset::new(&user, 3);
    unwrap_ok(store.write(data.batch()), "write");
    let original = data.memories[5].clone();

    let patch = MemoryPatch {
        text: Some("the user moved to Lisbon".into()),
        metadata: Some(meta(&[("topic", "home")])),
        metrics: Some(Metrics {
            importance: Some(0.75),
            ..Metrics::default()
        }),
        valid_to: Some(Some(Timestamp(original.valid_from.0 + 5))),
        superseded_by: Some(Some(data.memories[6].id)),
        provenance: Some(vec![TurnId::new(), TurnId::new()]),
    };
    let mut expected = original.clone();
    if let Err(e) = patch.apply(&mut expected) {
        panic!("fixture patch is invalid: {e}");
    }
    let updated = unwrap_ok(
        store.update(&user, original.id, &patch, moment(40)),
        "update",
    );
    assert_eq!(
        updated.as_ref(),
        Some(&expected),
        "update returns the patched memory"
    );
    assert_eq!(expected.version, original.version + 1);
    assert_eq!(
        unwrap_ok(store.memory(&user, original.id), "memory").as_ref(),
        Some(&expected),
        "stored"
    );
    let history = unwrap_ok(store.history(&user, original.id), "history");
    assert_eq!(history.len(), 2, "one entry per version");
    assert_eq!(
        history[1],
        HistoryEntry {
            memory_id: original.id,
            version: 2,
            at: moment(40),
            change: Change::Updated,
            snapshot: expected.clone()
        }
    );
    assert_eq!(
        history[0],
        created_entry(&original),
        "the Created entry is kept unchanged"
    );

    // Clearing valid_to and a text-only patch.
    let patch2 = MemoryPatch {
        valid_to: Some(None),
        text: Some("back in Porto".into()),
        ..Default::default()
    };
    let mut expected2 = expected.clone();
    if let Err(e) = patch2.apply(&mut expected2) {
        panic!("fixture patch is invalid: {e}");
    }
    let updated2 = unwrap_ok(
        store.update(&user, original.id, &patch2, moment(41)),
        "update",
    );
    assert_eq!(updated2.as_ref(), Some(&expected2));
    assert_eq!(expected2.valid_to, None);
    assert_eq!(expected2.version, 3);

    // Invalid patches are rejected and change nothing.
    let before = snapshot_user(&store, &user);
    let bad_patches = [
        MemoryPatch {
            text: Some("   ".into()),
            ..Default::default()
        },
        MemoryPatch {
            text: Some("nul\0inside".into()),
            ..Default::default()
        },
        MemoryPatch {
            text: Some("x".repeat(MAX_TEXT_BYTES + 1)),
            ..Default::default()
        },
        MemoryPatch {
            valid_to: Some(Some(Timestamp(original.valid_from.0 - 1))),
            ..Default::default()
        },
        MemoryPatch {
            metadata: Some(meta(&[("", "empty key")])),
            ..Default::default()
        },
    ];
    for (i, bad) in bad_patches.iter().enumerate() {
        assert_invalid_write(
            store.update(&user, original.id, bad, moment(42)),
            &format!("invalid patch {i}"),
        );
    }
    assert_eq!(
        snapshot_user(&store, &user),
        before,
        "invalid patches change nothing"
    );
    assert_invalid_write(
        store.update(&user, MemoryId::new(), &patch, moment(43)),
        "update of an unknown id",
    );
    assert_eq!(
        snapshot_user(&store, &user),
        before,
        "updating an unknown id changes nothing"
    );
}

/// `forget` sets `Forgotten{reason, at}`, bumps the version, records a `Forgotten{reason}` entry,
/// drops the memory's vectors in every model, and keeps the memory readable by id.
pub fn forget_semantics<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let data = Dataset::new(&user, 5);
    unwrap_ok(store.write(data.batch()), "write");
    let target = data.memories[0].clone();
    assert!(
        data.vectors
            .iter()
            .filter(|v| v.memory_id == target.id)
            .count()
            == 2,
        "fixture: two models"
    );

    // Worded like a preset's reason, but a request: the cause is read back as stored, never
    // from the reason's words.
    let reason = "memgpt: evicted by capacity policy at round 12";
    let forgotten = unwrap_ok(store.forget(&user, target.id, reason, moment(12)), "forget");
    let mut expected = target.clone();
    expected.state = MemoryState::Forgotten {
        reason: reason.into(),
        at: moment(12),
        cause: ForgetCause::Request,
    };
    expected.version = 2;
    assert_eq!(
        forgotten.as_ref(),
        Some(&expected),
        "forget returns the forgotten memory"
    );
    assert_eq!(
        unwrap_ok(store.memory(&user, target.id), "memory").as_ref(),
        Some(&expected),
        "still readable"
    );
    assert_eq!(
        unwrap_ok(store.memories(&user, &[target.id]), "memories"),
        vec![expected.clone()]
    );
    let history = unwrap_ok(store.history(&user, target.id), "history");
    assert_eq!(history.len(), 2);
    assert_eq!(
        history[1],
        HistoryEntry {
            memory_id: target.id,
            version: 2,
            at: moment(12),
            change: Change::Forgotten {
                reason: reason.into()
            },
            snapshot: expected.clone()
        }
    );
    let mut now = data.memories.clone();
    now[0] = expected.clone();
    for model in [MODEL_A, MODEL_B] {
        let got = unwrap_ok(store.vectors(&user, model), "vectors");
        assert!(
            got.iter().all(|v| v.memory_id != target.id),
            "forgotten memory still has {model} vectors"
        );
        assert_vectors_bit_exact(&got, &expected_vectors(&now, &data.vectors, model), model);
    }
    let active = list_all(&store, &user, &MemoryFilter::active());
    assert!(
        active.items.iter().all(|m| m.id != target.id),
        "forgotten memory listed as active"
    );
    let forgotten_list = list_all(
        &store,
        &user,
        &MemoryFilter {
            state: StateFilter::Forgotten,
            ..Default::default()
        },
    );
    assert_eq!(forgotten_list.items, vec![expected.clone()]);
    assert_invalid_write(
        store.forget(&user, MemoryId::new(), reason, moment(13)),
        "forget of an unknown id",
    );

    // The vectors are dropped, not only hidden: a purge finds none of them.
    let report = unwrap_ok(store.purge_user(&user), "purge");
    let remaining_vectors = data
        .vectors
        .iter()
        .filter(|v| v.memory_id != target.id)
        .count();
    assert_eq!(
        report.vectors, remaining_vectors,
        "forget must delete the memory's vectors"
    );
    assert_eq!(report.memories, data.memories.len());
    assert_eq!(report.history_entries, data.memories.len() + 1);
}

/// `record_access` appends to each memory's access log, in call order, without a new version or
/// history entry; unknown ids are ignored.
pub fn record_access_appends<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let data = Dataset::new(&user, 9);
    unwrap_ok(store.write(data.batch()), "write");
    let m1 = data.memories[5].clone(); // has one access from the fixture
    let m2 = data.memories[0].clone(); // has none
    assert_eq!(m1.access.len(), 1);
    let a = |round: u64, rank: u32| Access {
        at: moment(round),
        rank,
    };
    let accesses = [
        (m1.id, a(20, 0)),
        (m2.id, a(20, 3)),
        (MemoryId::new(), a(20, 1)),
        (m1.id, a(21, 7)),
    ];
    unwrap_ok(store.record_access(&user, &accesses), "record_access");
    unwrap_ok(
        store.record_access(&user, &[]),
        "record_access with nothing",
    );
    unwrap_ok(
        store.record_access(&user, &[(m2.id, a(22, 0))]),
        "record_access",
    );

    let got1 = unwrap_ok(store.memory(&user, m1.id), "memory")
        .unwrap_or_else(|| panic!("memory disappeared"));
    assert_eq!(
        got1.access,
        vec![m1.access[0], a(20, 0), a(21, 7)],
        "appended in order after the existing log"
    );
    assert_eq!(got1.version, m1.version, "access does not create a version");
    let got2 = unwrap_ok(store.memory(&user, m2.id), "memory")
        .unwrap_or_else(|| panic!("memory disappeared"));
    assert_eq!(got2.access, vec![a(20, 3), a(22, 0)]);
    assert_eq!(got2.version, m2.version);
    for m in [&m1, &m2] {
        assert_eq!(
            unwrap_ok(store.history(&user, m.id), "history").len(),
            1,
            "access adds no history entry"
        );
    }
    let mut expected = got1.clone();
    expected.text = "reinforced".into();
    expected.version += 1;
    let updated = unwrap_ok(
        store.update(
            &user,
            m1.id,
            &MemoryPatch {
                text: Some("reinforced".into()),
                ..Default::default()
            },
            moment(23),
        ),
        "update",
    );
    assert_eq!(
        updated,
        Some(expected.clone()),
        "later versions carry the access log"
    );
    let listed = list_all(&store, &user, &MemoryFilter::active());
    assert!(
        listed.items.contains(&expected),
        "listing shows the access log"
    );
}

/// Every change (create, updates, forget, update after forget) is in the history, in order, with
/// consecutive versions and the right snapshots; histories of two memories never mix.
pub fn history_in_order<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "agent", "s1");
    let t = turn(&scope, 1, "I love hiking");
    let m = Memory::from_turn(&t);
    let other = memory(
        &scope,
        MemoryKind::Fact,
        moment(1),
        "likes hiking",
        vec![t.id],
    );
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t],
            memories: vec![m.clone(), other.clone()],
            vectors: vec![],
            ..Default::default()
        }),
        "write",
    );

    let mut expected = vec![created_entry(&m)];
    let mut current = m.clone();
    let steps: Vec<(u64, Option<MemoryPatch>)> = vec![
        (
            2,
            Some(MemoryPatch {
                text: Some("I love hiking in the Alps".into()),
                ..Default::default()
            }),
        ),
        (
            3,
            Some(MemoryPatch {
                metadata: Some(meta(&[("topic", "outdoors")])),
                ..Default::default()
            }),
        ),
        (4, None),
        (
            5,
            Some(MemoryPatch {
                metrics: Some(Metrics {
                    strength: Some(2.5),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        ),
    ];
    for (round, step) in steps {
        match step {
            Some(patch) => {
                unwrap_ok(store.update(&user, m.id, &patch, moment(round)), "update");
                unwrap_ok(
                    store.update(&user, other.id, &patch, moment(round)),
                    "update other",
                );
                if let Err(e) = patch.apply(&mut current) {
                    panic!("fixture patch is invalid: {e}");
                }
                expected.push(HistoryEntry {
                    memory_id: m.id,
                    version: current.version,
                    at: moment(round),
                    change: Change::Updated,
                    snapshot: current.clone(),
                });
            }
            None => {
                let reason = format!("superseded at round {round}");
                unwrap_ok(store.forget(&user, m.id, &reason, moment(round)), "forget");
                current.state = MemoryState::Forgotten {
                    reason: reason.clone(),
                    at: moment(round),
                    cause: ForgetCause::Request,
                };
                current.version += 1;
                expected.push(HistoryEntry {
                    memory_id: m.id,
                    version: current.version,
                    at: moment(round),
                    change: Change::Forgotten { reason },
                    snapshot: current.clone(),
                });
            }
        }
    }
    let history = unwrap_ok(store.history(&user, m.id), "history");
    assert_eq!(history, expected, "every change, in order");
    let versions: Vec<u32> = history.iter().map(|h| h.version).collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 5]);
    assert!(history
        .iter()
        .all(|h| h.snapshot.version == h.version && h.memory_id == m.id));
    assert_eq!(
        unwrap_ok(store.memory(&user, m.id), "memory"),
        Some(current),
        "the memory equals its last snapshot"
    );
    let other_history = unwrap_ok(store.history(&user, other.id), "history");
    assert_eq!(
        other_history.len(),
        4,
        "the other memory has its own four entries"
    );
    assert!(other_history
        .iter()
        .all(|h| h.memory_id == other.id && h.snapshot.id == other.id));
}

/// `purge_user` removes every turn, memory, history entry and vector of one user, reports the
/// counts, and leaves every other user (same tenant or same user name in another tenant) intact.
pub fn purge_user_removes_only_that_user<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let alice2 = key("tenant-2", "alice");
    let data: Vec<Dataset> = [&alice, &bob, &alice2]
        .iter()
        .enumerate()
        .map(|(i, u)| Dataset::new(u, i as u64 + 20))
        .collect();
    for d in &data {
        unwrap_ok(store.write(d.batch()), "write");
    }
    let a = &data[0];
    unwrap_ok(
        store.update(
            &alice,
            a.memories[4].id,
            &MemoryPatch {
                text: Some("edited".into()),
                ..Default::default()
            },
            moment(30),
        ),
        "update",
    );
    unwrap_ok(
        store.forget(&alice, a.memories[0].id, "gone", moment(31)),
        "forget",
    );
    let dropped = a
        .vectors
        .iter()
        .filter(|v| v.memory_id == a.memories[0].id)
        .count();
    let expected = PurgeReport {
        turns: a.turns.len(),
        memories: a.memories.len(),
        history_entries: a.memories.len() + 2,
        vectors: a.vectors.len() - dropped,
    };
    let bob_before = snapshot_user(&store, &bob);
    let alice2_before = snapshot_user(&store, &alice2);

    let report = unwrap_ok(store.purge_user(&alice), "purge");
    assert_eq!(report, expected, "purge report counts");
    assert_user_empty(&store, &alice, "after purge");
    for t in &a.turns {
        assert_eq!(
            unwrap_ok(store.turn(&alice, t.id), "turn"),
            None,
            "purged turn readable"
        );
    }
    for m in &a.memories {
        assert_eq!(
            unwrap_ok(store.memory(&alice, m.id), "memory"),
            None,
            "purged memory readable"
        );
        assert!(
            unwrap_ok(store.history(&alice, m.id), "history").is_empty(),
            "purged history readable"
        );
    }
    assert!(unwrap_ok(store.vectors(&alice, MODEL_B), "vectors").is_empty());
    assert_eq!(
        snapshot_user(&store, &bob),
        bob_before,
        "another user of the same tenant is untouched"
    );
    assert_eq!(
        snapshot_user(&store, &alice2),
        alice2_before,
        "the same user name in another tenant is untouched"
    );
    let users: BTreeSet<UserKey> = unwrap_ok(store.users(), "users").into_iter().collect();
    assert_eq!(
        users,
        [bob.clone(), alice2.clone()].into_iter().collect(),
        "users() after purge"
    );

    assert_eq!(
        unwrap_ok(store.purge_user(&alice), "purge again"),
        PurgeReport::default(),
        "second purge is empty"
    );
    assert_eq!(
        unwrap_ok(store.purge_user(&key("tenant-1", "nobody")), "purge"),
        PurgeReport::default()
    );
    // The user can start over.
    let fresh = Dataset::new(&alice, 99);
    unwrap_ok(store.write(fresh.batch()), "write after purge");
    assert_eq!(
        unwrap_ok(store.turns(&alice, all_page()), "turns").items,
        fresh.turns
    );
}

/// Reads with another user's key never see a user's rows; writes with another user's key cannot
/// change them; batches mixing users (or attaching vectors to another user's memory) are rejected.
pub fn scope_isolation<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let other_tenant = key("tenant-2", "alice");
    let data = Dataset::new(&alice, 31);
    unwrap_ok(store.write(data.batch()), "write");
    let alice_before = snapshot_user(&store, &alice);

    for intruder in [&bob, &other_tenant] {
        for t in &data.turns {
            assert_eq!(
                unwrap_ok(store.turn(intruder, t.id), "turn"),
                None,
                "{intruder} reads a turn of {alice}"
            );
        }
        for m in &data.memories {
            assert_eq!(
                unwrap_ok(store.memory(intruder, m.id), "memory"),
                None,
                "{intruder} reads a memory"
            );
            assert!(
                unwrap_ok(store.history(intruder, m.id), "history").is_empty(),
                "{intruder} reads history"
            );
            let patch = MemoryPatch {
                text: Some("hijacked".into()),
                ..Default::default()
            };
            assert_invalid_write(
                store.update(intruder, m.id, &patch, moment(50)),
                &format!("{intruder} updates"),
            );
            assert_invalid_write(
                store.forget(intruder, m.id, "hijacked", moment(50)),
                &format!("{intruder} forgets"),
            );
        }
        let ids: Vec<MemoryId> = data.memories.iter().map(|m| m.id).collect();
        assert!(
            unwrap_ok(store.memories(intruder, &ids), "memories").is_empty(),
            "{intruder} batch-reads memories"
        );
        let accesses: Vec<(MemoryId, Access)> = ids
            .iter()
            .map(|id| {
                (
                    *id,
                    Access {
                        at: moment(50),
                        rank: 0,
                    },
                )
            })
            .collect();
        unwrap_ok(store.record_access(intruder, &accesses), "record_access");
        assert_user_empty(&store, intruder, "intruder's own view");
        assert!(unwrap_ok(store.vectors(intruder, MODEL_B), "vectors").is_empty());
        assert_eq!(
            unwrap_ok(store.purge_user(intruder), "purge"),
            PurgeReport::default(),
            "{intruder} purges"
        );
        assert_eq!(
            snapshot_user(&store, &alice),
            alice_before,
            "{intruder} changed {alice}'s data"
        );
    }

    // Mixed batches are rejected as a whole.
    let alice_scope = scope_of(&alice, "agent", "s1");
    let bob_scope = scope_of(&bob, "agent", "s1");
    let other_scope = scope_of(&other_tenant, "agent", "s1");
    let bob_turn = turn(&bob_scope, 1, "bob's turn");
    let mixed = [
        WriteBatch {
            turns: vec![turn(&alice_scope, 9, "alice"), bob_turn.clone()],
            ..Default::default()
        },
        WriteBatch {
            turns: vec![bob_turn.clone()],
            memories: vec![Memory::from_turn(&turn(&alice_scope, 9, "alice"))],
            vectors: vec![],
            ..Default::default()
        },
        WriteBatch {
            turns: vec![
                turn(&alice_scope, 9, "alice"),
                turn(&other_scope, 9, "other tenant"),
            ],
            ..Default::default()
        },
    ];
    for (i, batch) in mixed.into_iter().enumerate() {
        assert_invalid_write(store.write(batch), &format!("mixed-user batch {i}"));
    }
    // A vector for another user's memory, smuggled into an otherwise valid batch.
    let mut rng = Rng(77);
    let smuggled = WriteBatch {
        turns: vec![bob_turn.clone()],
        memories: vec![],
        vectors: vec![vector(data.memories[1].id, MODEL_A, 16, &mut rng)],
        ..Default::default()
    };
    assert_invalid_write(store.write(smuggled), "vector for another user's memory");
    assert_user_empty(&store, &bob, "after rejected batches");
    assert_user_empty(&store, &other_tenant, "after rejected batches");
    assert_eq!(
        snapshot_user(&store, &alice),
        alice_before,
        "rejected batches changed alice's data"
    );

    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![bob_turn.clone()],
            ..Default::default()
        }),
        "bob's write",
    );
    let users = unwrap_ok(store.users(), "users");
    let unique: BTreeSet<UserKey> = users.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        users.len(),
        "users() has duplicates: {users:?}"
    );
    assert_eq!(
        unique,
        [alice.clone(), bob.clone()].into_iter().collect(),
        "users() lists exactly both users"
    );
    assert_eq!(
        unwrap_ok(store.turn(&alice, bob_turn.id), "turn"),
        None,
        "alice reads bob's turn"
    );
    assert_eq!(
        unwrap_ok(store.turns(&bob, all_page()), "turns").items,
        vec![bob_turn]
    );
    assert_eq!(snapshot_user(&store, &alice), alice_before);
}

/// `last_round` is the highest round of the user's turns (memories do not count), per user.
pub fn last_round<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let scope = scope_of(&alice, "agent", "s1");
    assert_eq!(
        unwrap_ok(store.last_round(&alice), "last_round"),
        None,
        "no turns yet"
    );
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&scope, 3, "r3"), turn(&scope, 7, "r7")],
            ..Default::default()
        }),
        "write",
    );
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&scope, 5, "r5")],
            ..Default::default()
        }),
        "write",
    );
    assert_eq!(unwrap_ok(store.last_round(&alice), "last_round"), Some(7));
    let late = memory(
        &scope,
        MemoryKind::Summary { level: 1 },
        moment(500),
        "summary",
        vec![],
    );
    unwrap_ok(
        store.write(WriteBatch {
            memories: vec![late],
            ..Default::default()
        }),
        "write",
    );
    assert_eq!(
        unwrap_ok(store.last_round(&alice), "last_round"),
        Some(7),
        "memories do not move last_round"
    );
    let huge = 1u64 << 40;
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&scope, huge, "far future")],
            ..Default::default()
        }),
        "write",
    );
    assert_eq!(
        unwrap_ok(store.last_round(&alice), "last_round"),
        Some(huge),
        "large rounds"
    );
    assert_eq!(
        unwrap_ok(store.last_round(&bob), "last_round"),
        None,
        "another user"
    );
    let bob_scope = scope_of(&bob, "agent", "s1");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&bob_scope, 0, "r0")],
            ..Default::default()
        }),
        "write",
    );
    assert_eq!(
        unwrap_ok(store.last_round(&bob), "last_round"),
        Some(0),
        "round 0 is a round"
    );
    assert_eq!(
        unwrap_ok(store.last_round(&alice), "last_round"),
        Some(huge)
    );
    unwrap_ok(store.purge_user(&alice), "purge");
    assert_eq!(
        unwrap_ok(store.last_round(&alice), "last_round"),
        None,
        "after purge"
    );
}

fn assert_conflict<T: Debug>(result: StoreResult<T>, what: &str) -> Conflict {
    match result {
        Err(StoreError::Conflict(conflict)) => conflict,
        other => panic!("{what}: expected a write conflict, got {other:?}"),
    }
}

/// A batch guarded by `Precondition::LastRound` commits only while the user's last turn round
/// is what it names; otherwise it is rejected whole with `Conflict::LastRoundMoved`. Threads
/// that number turns from the last round they read and retry on conflict never reuse a round.
pub fn last_round_precondition<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let scope = scope_of(&alice, "agent", "s1");
    let guarded = |expected: Option<u64>, round: u64| {
        let t = turn(&scope, round, &format!("turn at round {round}"));
        WriteBatch {
            precondition: Precondition::LastRound(expected),
            memories: vec![Memory::from_turn(&t)],
            turns: vec![t],
            ..Default::default()
        }
    };
    unwrap_ok(store.write(guarded(None, 0)), "first turn, no turn yet");
    unwrap_ok(
        store.write(guarded(Some(0), 1)),
        "second turn after round 0",
    );
    let stale = guarded(Some(0), 1);
    let conflict = assert_conflict(store.write(stale), "stale last round");
    assert_eq!(
        conflict,
        Conflict::LastRoundMoved {
            expected: Some(0),
            found: Some(1)
        }
    );
    assert_conflict(store.write(guarded(None, 5)), "expects no turn yet");
    assert_eq!(
        unwrap_ok(store.turns(&alice, all_page()), "turns").total,
        2,
        "a rejected batch writes nothing"
    );
    assert_eq!(list_all(&store, &alice, &MemoryFilter::default()).total, 2);
    // Another user's rounds are their own.
    let bob = key("tenant-1", "bob");
    let bob_turn = turn(&scope_of(&bob, "agent", "s1"), 0, "bob");
    unwrap_ok(
        store.write(WriteBatch {
            precondition: Precondition::LastRound(None),
            turns: vec![bob_turn],
            ..Default::default()
        }),
        "bob's first turn",
    );

    const THREADS: usize = 4;
    const PER_THREAD: usize = 40;
    let carol = key("tenant-1", "carol");
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let store = &store;
            let carol = &carol;
            s.spawn(move || {
                let scope = scope_of(carol, &format!("agent-{thread}"), "s1");
                for i in 0..PER_THREAD {
                    loop {
                        let last = unwrap_ok(store.last_round(carol), "last_round");
                        let t = turn(&scope, last.map_or(0, |r| r + 1), &format!("{thread}/{i}"));
                        let batch = WriteBatch {
                            precondition: Precondition::LastRound(last),
                            turns: vec![t],
                            ..Default::default()
                        };
                        match store.write(batch) {
                            Ok(()) => break,
                            Err(StoreError::Conflict(_)) => continue,
                            Err(e) => panic!("concurrent guarded write: {e}"),
                        }
                    }
                }
            });
        }
    });
    let turns = unwrap_ok(store.turns(&carol, all_page()), "turns");
    let rounds: BTreeSet<u64> = turns.items.iter().map(|t| t.at.round).collect();
    assert_eq!(turns.total, THREADS * PER_THREAD, "no guarded write lost");
    assert_eq!(
        rounds.len(),
        THREADS * PER_THREAD,
        "every guarded turn got a round of its own"
    );
}

fn keyed_turn(scope: &Scope, round: u64, key: &str) -> Turn {
    let mut t = turn(scope, round, &format!("turn keyed {key}"));
    t.key = Some(key.to_string());
    t
}

/// A turn's idempotency key is unique per user: a batch holding a stored key is rejected whole
/// with `Conflict::DuplicateTurnKey`, a key twice in one batch is invalid, another user may use
/// the same key, and `turns_by_keys` finds stored turns by key within the user only.
pub fn turn_keys_unique_per_user<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let a = scope_of(&alice, "agent", "s1");
    let first = keyed_turn(&a, 0, "line-1");
    let unkeyed = turn(&a, 1, "no key");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![first.clone(), unkeyed.clone(), turn(&a, 1, "no key either")],
            ..Default::default()
        }),
        "keyed and unkeyed turns",
    );
    let again = WriteBatch {
        turns: vec![keyed_turn(&a, 2, "line-2"), keyed_turn(&a, 3, "line-1")],
        ..Default::default()
    };
    let conflict = assert_conflict(store.write(again), "a stored key");
    assert_eq!(
        conflict,
        Conflict::DuplicateTurnKey {
            key: "line-1".into()
        }
    );
    let found = unwrap_ok(
        store.turns_by_keys(&alice, &["line-1".into(), "line-2".into(), "x".into()]),
        "turns_by_keys",
    );
    assert_eq!(
        found,
        vec![first.clone()],
        "the rejected batch wrote nothing"
    );
    assert_invalid_write(
        store.write(WriteBatch {
            turns: vec![keyed_turn(&a, 4, "twice"), keyed_turn(&a, 5, "twice")],
            ..Default::default()
        }),
        "a key twice in one batch",
    );
    let b = scope_of(&bob, "agent", "s1");
    let bobs = keyed_turn(&b, 0, "line-1");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![bobs.clone()],
            ..Default::default()
        }),
        "another user's key",
    );
    assert_eq!(
        unwrap_ok(store.turns_by_keys(&bob, &["line-1".into()]), "bob's keys"),
        vec![bobs]
    );
    assert_eq!(
        unwrap_ok(
            store.turns_by_keys(&alice, &["line-1".into()]),
            "alice's keys"
        ),
        vec![first]
    );
    assert!(unwrap_ok(store.turns_by_keys(&alice, &[]), "no keys").is_empty());
    unwrap_ok(store.purge_user(&alice), "purge");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![keyed_turn(&a, 0, "line-1")],
            ..Default::default()
        }),
        "a purged user's keys are free again",
    );
}

/// Eight threads writing 200 single-turn batches each into one shared store lose nothing.
pub fn concurrent_writers<S: Store>(make: &dyn Fn() -> S) {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 200;
    let store = make();
    let user = key("tenant-1", "alice");
    let written: Vec<Vec<TurnId>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let store = &store;
                let scope = scope_of(&user, &format!("agent-{thread}"), "s1");
                s.spawn(move || {
                    let mut ids = Vec::with_capacity(PER_THREAD);
                    for i in 0..PER_THREAD {
                        let t = turn(
                            &scope,
                            (i * THREADS + thread) as u64,
                            &format!("thread {thread} turn {i}"),
                        );
                        ids.push(t.id);
                        let batch = WriteBatch {
                            memories: vec![Memory::from_turn(&t)],
                            turns: vec![t],
                            vectors: vec![],
                            ..Default::default()
                        };
                        unwrap_ok(store.write(batch), "concurrent write");
                    }
                    ids
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| panic!("writer thread panicked"))
            })
            .collect()
    });
    let turns = unwrap_ok(store.turns(&user, all_page()), "turns");
    assert_eq!(
        turns.total,
        THREADS * PER_THREAD,
        "every concurrent write is present"
    );
    let stored: HashSet<TurnId> = turns.items.iter().map(|t| t.id).collect();
    for id in written.iter().flatten() {
        assert!(stored.contains(id), "turn {id} was lost");
    }
    assert_eq!(
        list_all(&store, &user, &MemoryFilter::active()).total,
        THREADS * PER_THREAD,
        "every memory present"
    );
    assert_eq!(
        unwrap_ok(store.last_round(&user), "last_round"),
        Some((THREADS * PER_THREAD - 1) as u64)
    );
}

/// Empty, whitespace-only, NUL-containing and oversized texts, bad names and bad metadata are
/// rejected with `InvalidWrite` and nothing of the batch is written; text at the limit is fine.
pub fn validation_rejects_bad_input<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "agent", "s1");
    let good = || turn(&scope, 1, "a perfectly fine turn");
    let with_turn = |edit: &dyn Fn(&mut Turn)| {
        let mut t = turn(&scope, 2, "will be broken");
        edit(&mut t);
        WriteBatch {
            turns: vec![good(), t],
            ..Default::default()
        }
    };
    let with_memory = |edit: &dyn Fn(&mut Memory)| {
        let t = good();
        let mut m = Memory::from_turn(&t);
        edit(&mut m);
        WriteBatch {
            turns: vec![t],
            memories: vec![m],
            vectors: vec![],
            ..Default::default()
        }
    };
    let too_long = "a".repeat(MAX_TEXT_BYTES + 1);
    let bad: Vec<(&str, WriteBatch)> = vec![
        ("empty turn text", with_turn(&|t| t.text = String::new())),
        (
            "whitespace turn text",
            with_turn(&|t| t.text = " \n\t ".into()),
        ),
        (
            "NUL in turn text",
            with_turn(&|t| t.text = "before\0after".into()),
        ),
        (
            "oversized turn text",
            with_turn(&|t| t.text = too_long.clone()),
        ),
        ("empty agent", with_turn(&|t| t.scope.agent = String::new())),
        (
            "control character in session",
            with_turn(&|t| t.scope.session = "s\n1".into()),
        ),
        (
            "control character in speaker",
            with_turn(&|t| t.speaker = Some("Bob\u{7}".into())),
        ),
        (
            "empty metadata key",
            with_turn(&|t| t.metadata = meta(&[("", "v")])),
        ),
        (
            "oversized metadata value",
            with_turn(&|t| {
                t.metadata.insert("k".into(), too_long.clone());
            }),
        ),
        (
            "empty memory text",
            with_memory(&|m| m.text = String::new()),
        ),
        ("NUL in memory text", with_memory(&|m| m.text = "\0".into())),
        (
            "oversized memory text",
            with_memory(&|m| m.text = too_long.clone()),
        ),
        (
            "valid_to before valid_from",
            with_memory(&|m| m.valid_to = Some(Timestamp(m.valid_from.0 - 1))),
        ),
        (
            "empty tenant in memory",
            with_memory(&|m| m.scope.tenant = String::new()),
        ),
    ];
    for (what, batch) in bad {
        assert_invalid_write(store.write(batch), what);
        assert!(
            unwrap_ok(store.users(), "users").is_empty(),
            "{what}: a rejected batch created a user"
        );
        assert_user_empty(&store, &user, what);
    }
    // Exactly at the limit, in multi-byte characters, is accepted and kept intact.
    let at_limit = "记".repeat(MAX_TEXT_BYTES / 3) + &"x".repeat(MAX_TEXT_BYTES % 3);
    assert_eq!(at_limit.len(), MAX_TEXT_BYTES);
    let t = turn(&scope, 3, &at_limit);
    let m = Memory::from_turn(&t);
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t.clone()],
            memories: vec![m.clone()],
            vectors: vec![],
            ..Default::default()
        }),
        "write at the limit",
    );
    assert_eq!(unwrap_ok(store.turn(&user, t.id), "turn"), Some(t));
    assert_eq!(unwrap_ok(store.memory(&user, m.id), "memory"), Some(m));
}

/// Chinese, emoji (with ZWJ sequences and flags), combining marks and right-to-left text survive
/// a round trip in texts, names, metadata, kinds and history, and work as filter values.
pub fn unicode_round_trip<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("租户·一", "用户🙂");
    let scope = scope_of(&user, "助手 Ava", "会话-①");
    let texts = [
        "我昨天去了杭州西湖，天气很好。",
        "家里有两只猫 🐈🐈‍⬛，一只叫「年糕」。",
        "👩‍👩‍👧‍👦 family, 🇨🇳🇬🇧 flags, 🏳️‍🌈",
        "e\u{301} vs é, ﬁ ligature, \u{200B}zero\u{200D}width",
        "مرحبا بالعالم — שלום",
        "𝄞 𠜎 𩸽 supplementary planes",
        "東京タワーに行きたい！日本語もOK",
    ];
    let mut turns: Vec<Turn> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| turn(&scope, i as u64, text))
        .collect();
    turns[0].speaker = Some("小明".into());
    turns[1].metadata = meta(&[("话题", "宠物🐾"), ("emoji", "✈️")]);
    let mut memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
    let ids: Vec<TurnId> = turns.iter().map(|t| t.id).collect();
    let mut persona = memory(
        &scope,
        MemoryKind::Persona {
            key: "喜欢的食物".into(),
        },
        moment(9),
        "喜欢吃火锅🍲",
        ids.clone(),
    );
    persona.metadata = meta(&[("话题", "饮食")]);
    memories.push(persona.clone());
    memories.push(memory(
        &scope,
        MemoryKind::ChainNode {
            category: "旅行✈️".into(),
        },
        moment(10),
        "去了西湖",
        ids,
    ));
    unwrap_ok(
        store.write(WriteBatch {
            turns: turns.clone(),
            memories: memories.clone(),
            vectors: vec![],
            ..Default::default()
        }),
        "write",
    );

    assert_eq!(
        unwrap_ok(store.turns(&user, all_page()), "turns").items,
        turns,
        "turns round trip"
    );
    for m in &memories {
        assert_eq!(
            unwrap_ok(store.memory(&user, m.id), "memory").as_ref(),
            Some(m),
            "memory round trip"
        );
    }
    let by_meta = list_all(
        &store,
        &user,
        &MemoryFilter {
            metadata: meta(&[("话题", "饮食")]),
            ..Default::default()
        },
    );
    assert_eq!(
        by_meta.items,
        vec![persona.clone()],
        "unicode metadata filter"
    );
    let by_agent = list_all(
        &store,
        &user,
        &MemoryFilter {
            agent: Some("助手 Ava".into()),
            session: Some("会话-①".into()),
            ..Default::default()
        },
    );
    assert_eq!(
        by_agent.total,
        memories.len(),
        "unicode agent/session filter"
    );
    let patch = MemoryPatch {
        text: Some("改成喜欢吃寿司🍣 (sushi)".into()),
        ..Default::default()
    };
    let updated = unwrap_ok(
        store.update(&user, persona.id, &patch, moment(11)),
        "update",
    )
    .unwrap_or_else(|| panic!("update of a known memory returned None"));
    assert_eq!(updated.text, "改成喜欢吃寿司🍣 (sushi)");
    let history = unwrap_ok(store.history(&user, persona.id), "history");
    assert_eq!(
        history.last().map(|h| &h.snapshot),
        Some(&updated),
        "unicode history snapshot"
    );
    assert_eq!(
        unwrap_ok(store.users(), "users"),
        vec![user.clone()],
        "unicode user key"
    );
    // A user key differing only by Unicode normalization is a different user.
    let nfd_user = key("租户·一", "用户🙂\u{301}");
    assert_user_empty(&store, &nfd_user, "similar-looking key");
}

/// Vectors come back bit-exact (signed zero, subnormals, extremes, arbitrary bit patterns),
/// per model, in memory order, at embedding sizes from 1 to 1536.
pub fn vectors_bit_exact<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "agent", "s1");
    let mut rng = Rng(0x5eed);
    let dims = [1usize, 7, 384, 1536];
    let mut memories: Vec<Memory> = (0..dims.len() as u64 * 2)
        .map(|i| {
            memory(
                &scope,
                MemoryKind::Fact,
                moment(10 - i),
                &format!("fact {i}"),
                vec![],
            )
        })
        .collect();
    rng.shuffle(&mut memories);
    let special = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        0.1,
        1.0 / 3.0,
        std::f32::consts::PI,
    ];
    let mut vectors = Vec::new();
    for (i, m) in memories.iter().enumerate() {
        let dim = dims[i % dims.len()];
        let mut row = vector(m.id, MODEL_A, dim, &mut rng);
        for (slot, value) in row.vector.iter_mut().zip(special.iter().cycle().skip(i)) {
            if rng.below(2) == 0 {
                *slot = *value;
            }
        }
        vectors.push(row);
        vectors.push(vector(m.id, MODEL_B, 4, &mut rng));
    }
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![],
            memories: memories.clone(),
            vectors: vectors.clone(),
            ..Default::default()
        }),
        "write",
    );
    for model in [MODEL_A, MODEL_B] {
        let got = unwrap_ok(store.vectors(&user, model), "vectors");
        assert_vectors_bit_exact(&got, &expected_vectors(&memories, &vectors, model), model);
    }
    // Distinct-but-equal floats must not be normalized: -0.0 stays negative.
    let got = unwrap_ok(store.vectors(&user, MODEL_A), "vectors");
    let by_memory: BTreeMap<MemoryId, &VectorRow> = got.iter().map(|r| (r.memory_id, r)).collect();
    for want in vectors.iter().filter(|v| v.model == MODEL_A) {
        let have = by_memory
            .get(&want.memory_id)
            .unwrap_or_else(|| panic!("vector of {} missing", want.memory_id));
        assert_eq!(
            have.vector.len(),
            want.vector.len(),
            "dimension of {}",
            want.memory_id
        );
    }
}

/// `put_vectors` adds or replaces vectors of existing memories of one user, atomically, and
/// rejects rows naming unknown memories or another user's.
pub fn put_vectors_replaces_within_user<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let mut rng = Rng(0xbeef);
    let a = memory(
        &scope_of(&alice, "agent", "s1"),
        MemoryKind::Fact,
        moment(1),
        "alice fact",
        vec![],
    );
    let b = memory(
        &scope_of(&bob, "agent", "s1"),
        MemoryKind::Fact,
        moment(1),
        "bob fact",
        vec![],
    );
    for m in [&a, &b] {
        unwrap_ok(
            store.write(WriteBatch {
                turns: vec![],
                memories: vec![m.clone()],
                vectors: vec![],
                ..Default::default()
            }),
            "write",
        );
    }
    let first = vector(a.id, MODEL_A, 8, &mut rng);
    unwrap_ok(
        store.put_vectors(&alice, std::slice::from_ref(&first)),
        "put vectors",
    );
    assert_vectors_bit_exact(
        &unwrap_ok(store.vectors(&alice, MODEL_A), "vectors"),
        std::slice::from_ref(&first),
        "added",
    );
    let second = vector(a.id, MODEL_A, 8, &mut rng);
    unwrap_ok(
        store.put_vectors(&alice, std::slice::from_ref(&second)),
        "replace vectors",
    );
    assert_vectors_bit_exact(
        &unwrap_ok(store.vectors(&alice, MODEL_A), "vectors"),
        std::slice::from_ref(&second),
        "replaced",
    );
    // Another user's memory, or an unknown one, rejects the whole call.
    let theirs = vector(b.id, MODEL_A, 8, &mut rng);
    let third = vector(a.id, MODEL_A, 8, &mut rng);
    assert_invalid_write(
        store.put_vectors(&alice, &[third, theirs]),
        "put a vector on another user's memory",
    );
    assert_vectors_bit_exact(
        &unwrap_ok(store.vectors(&alice, MODEL_A), "vectors"),
        std::slice::from_ref(&second),
        "unchanged after rejection",
    );
    assert!(
        unwrap_ok(store.vectors(&bob, MODEL_A), "vectors").is_empty(),
        "bob got a vector through alice"
    );
    let unknown = vector(MemoryId::new(), MODEL_A, 8, &mut rng);
    assert_invalid_write(
        store.put_vectors(&alice, &[unknown]),
        "put a vector on an unknown memory",
    );
    unwrap_ok(store.put_vectors(&alice, &[]), "put no vectors");
}

/// `unembedded` lists exactly the active memories of the user without a vector of the model,
/// in listing order and up to the limit; `vector_models` counts vectors by model, most first;
/// `retain_vectors` deletes the user's other models' vectors only.
pub fn unembedded_counted_and_retained<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let mut rng = Rng(0xb1d);
    let scope = scope_of(&alice, "agent", "s1");
    let mems: Vec<Memory> = facts(&scope, 4);
    let theirs = memory(
        &scope_of(&bob, "agent", "s1"),
        MemoryKind::Fact,
        moment(0),
        "b",
        vec![],
    );
    // Memory 0 has both models, 1 only B, 2 only A, 3 none; bob's has A and B.
    let vectors = vec![
        vector(mems[0].id, MODEL_A, 4, &mut rng),
        vector(mems[0].id, MODEL_B, 4, &mut rng),
        vector(mems[1].id, MODEL_B, 4, &mut rng),
        vector(mems[2].id, MODEL_A, 4, &mut rng),
    ];
    let batch = WriteBatch {
        memories: mems.clone(),
        vectors,
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "write alice");
    let batch = WriteBatch {
        memories: vec![theirs.clone()],
        vectors: vec![
            vector(theirs.id, MODEL_A, 4, &mut rng),
            vector(theirs.id, MODEL_B, 4, &mut rng),
        ],
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "write bob");
    let missing_a = unwrap_ok(store.unembedded(&alice, MODEL_A, 10), "unembedded");
    assert_eq!(
        missing_a,
        vec![mems[1].id, mems[3].id],
        "memories without A"
    );
    let first = unwrap_ok(store.unembedded(&alice, MODEL_A, 1), "unembedded, limit 1");
    assert_eq!(
        first,
        vec![mems[1].id],
        "the limit takes the first in listing order"
    );
    let none_of_c = unwrap_ok(store.unembedded(&alice, "conformance-c", 10), "unembedded");
    assert_eq!(
        none_of_c,
        mems.iter().map(|m| m.id).collect::<Vec<_>>(),
        "no C at all"
    );
    unwrap_ok(
        store.forget(&alice, mems[3].id, "gone", moment(9)),
        "forget",
    );
    let missing_a = unwrap_ok(store.unembedded(&alice, MODEL_A, 10), "unembedded");
    assert_eq!(
        missing_a,
        vec![mems[1].id],
        "a forgotten memory needs no vector"
    );
    let counts = unwrap_ok(store.vector_models(), "vector models");
    let expected = vec![(MODEL_A.to_string(), 3), (MODEL_B.to_string(), 3)];
    assert_eq!(counts, expected, "vectors by model, ties by id");
    unwrap_ok(
        store.put_vectors(&alice, &[vector(mems[1].id, MODEL_A, 4, &mut rng)]),
        "put",
    );
    let counts = unwrap_ok(store.vector_models(), "vector models");
    assert_eq!(counts[0], (MODEL_A.to_string(), 4), "most vectors first");
    assert_eq!(
        unwrap_ok(store.retain_vectors(&alice, MODEL_A), "retain"),
        2
    );
    assert!(
        unwrap_ok(store.vectors(&alice, MODEL_B), "vectors").is_empty(),
        "B dropped"
    );
    assert_eq!(
        unwrap_ok(store.vectors(&alice, MODEL_A), "vectors").len(),
        3,
        "A kept"
    );
    assert_eq!(
        unwrap_ok(store.vectors(&bob, MODEL_B), "vectors").len(),
        1,
        "bob's B kept"
    );
    let counts = unwrap_ok(store.vector_models(), "vector models");
    assert_eq!(
        counts,
        vec![(MODEL_A.to_string(), 4), (MODEL_B.to_string(), 1)]
    );
}

/// `bind` is a compare-and-set that a purge leaves alone; an empty model is refused.
pub fn binding_compare_and_set<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    assert_eq!(
        unwrap_ok(store.binding(), "binding"),
        None,
        "a new store is unbound"
    );
    let moved = |result: StoreResult<()>, found: Option<&str>, what: &str| match result {
        Err(StoreError::Conflict(Conflict::BindingMoved { found: f, .. })) => {
            assert_eq!(f.as_deref(), found, "{what}: what the conflict found");
        }
        other => panic!("{what}: expected Conflict::BindingMoved, got {other:?}"),
    };
    moved(
        store.bind(MODEL_A, Some(MODEL_B)),
        None,
        "bind expecting another",
    );
    assert_eq!(
        unwrap_ok(store.binding(), "binding"),
        None,
        "a refused bind writes nothing"
    );
    assert_invalid_write(store.bind(" ", None), "bind to an empty model");
    unwrap_ok(store.bind(MODEL_A, None), "bind");
    assert_eq!(
        unwrap_ok(store.binding(), "binding").as_deref(),
        Some(MODEL_A)
    );
    moved(
        store.bind(MODEL_B, None),
        Some(MODEL_A),
        "a second first bind",
    );
    unwrap_ok(store.bind(MODEL_A, Some(MODEL_A)), "bind again to the same");
    let alice = key("tenant-1", "alice");
    let m = memory(
        &scope_of(&alice, "a", "s"),
        MemoryKind::Fact,
        moment(0),
        "x",
        vec![],
    );
    let batch = WriteBatch {
        memories: vec![m],
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "write");
    unwrap_ok(store.purge_user(&alice), "purge");
    assert_eq!(
        unwrap_ok(store.binding(), "binding").as_deref(),
        Some(MODEL_A),
        "purge keeps it"
    );
    unwrap_ok(store.bind(MODEL_B, Some(MODEL_A)), "move");
    assert_eq!(
        unwrap_ok(store.binding(), "binding").as_deref(),
        Some(MODEL_B),
        "moved"
    );
}

// ---------------------------------------------------------------------------------------------
// Jobs, and edits inside a write batch
// ---------------------------------------------------------------------------------------------

const JOB_MECHANISM: &str = "conformance";

fn new_job(scope: &Scope, created: Moment, kind: &str) -> Job {
    let payload = format!(
        r#"{{"kind":"{kind}","note":"für Zoë — 总结 🧠","round":{}}}"#,
        created.round
    );
    Job::new(scope.clone(), JOB_MECHANISM, kind, payload, created)
}

fn sorted_jobs(mut jobs: Vec<Job>) -> Vec<Job> {
    jobs.sort_by_key(|j| (j.created.round, j.created.time, j.id));
    jobs
}

fn finished(job: &Job, at: Moment) -> Job {
    Job {
        done: Some(at),
        ..job.clone()
    }
}

fn stored_job<S: Store>(store: &S, user: &UserKey, id: JobId) -> Option<Job> {
    unwrap_ok(store.job(user, id), "job")
}

fn pending<S: Store>(store: &S, user: &UserKey) -> Vec<Job> {
    unwrap_ok(store.pending_jobs(user, 1_000), "pending_jobs")
}

/// A batch that only names its user (for edits and job completions).
fn batch_of(user: &UserKey) -> WriteBatch {
    WriteBatch {
        user: Some(user.clone()),
        ..Default::default()
    }
}

/// Jobs enqueued with a batch read back equal and are listed by `pending_jobs` oldest first
/// (created round, time, then id), cut at `limit`. Invalid jobs and reused job ids reject the
/// whole batch.
pub fn jobs_enqueue_in_order<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "companion", "s1");
    let mut rng = Rng(43);
    // Three rounds × two times, each (round, time) twice, so the order needs all three keys;
    // a later round has an earlier time, so time never outranks the round.
    let mut jobs: Vec<Job> = (0..12u64)
        .map(|i| {
            let created = Moment {
                round: 1 + i % 3,
                time: Timestamp(T0 - (i % 3) as i64 * 10_000 + (i % 2) as i64),
            };
            new_job(&scope, created, &format!("kind_{i}"))
        })
        .collect();
    rng.shuffle(&mut jobs);
    let expected = sorted_jobs(jobs.clone());

    // With the turns that cause them, alone, and with an explicit user.
    let t1 = turn(&scope, 1, "let's plan the trip to Kyoto");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t1.clone()],
            jobs: jobs[..4].to_vec(),
            ..Default::default()
        }),
        "write turn with jobs",
    );
    unwrap_ok(
        store.write(WriteBatch {
            jobs: jobs[4..8].to_vec(),
            ..Default::default()
        }),
        "write jobs alone",
    );
    unwrap_ok(
        store.write(WriteBatch {
            jobs: jobs[8..].to_vec(),
            ..batch_of(&user)
        }),
        "write jobs with an explicit user",
    );
    assert_eq!(
        unwrap_ok(store.turn(&user, t1.id), "turn"),
        Some(t1),
        "the turn of the batch"
    );
    for job in &jobs {
        assert_eq!(
            stored_job(&store, &user, job.id).as_ref(),
            Some(job),
            "job {} round trip",
            job.id
        );
    }
    assert_eq!(
        pending(&store, &user),
        expected,
        "pending_jobs lists every job, oldest first by (round, time, id)"
    );
    for limit in [0, 1, 5, 12, 13] {
        assert_eq!(
            unwrap_ok(store.pending_jobs(&user, limit), "pending_jobs"),
            expected[..limit.min(expected.len())].to_vec(),
            "pending_jobs with limit {limit}"
        );
    }
    assert_eq!(stored_job(&store, &user, JobId::new()), None, "unknown job");

    // Rejected batches write nothing: not their turn, not their valid jobs.
    let before = snapshot_user(&store, &user);
    let valid = new_job(&scope, moment(5), "session_summary");
    let mut reused = new_job(&scope, moment(5), "reflection");
    reused.id = jobs[3].id;
    let bad_jobs = vec![
        ("an empty mechanism", {
            let mut j = new_job(&scope, moment(5), "summary");
            j.mechanism = String::new();
            j
        }),
        (
            "a control character in the kind",
            new_job(&scope, moment(5), "sum\nmary"),
        ),
        ("a NUL in the payload", {
            let mut j = new_job(&scope, moment(5), "summary");
            j.payload = "{\"a\":\"\0\"}".into();
            j
        }),
        ("an oversized payload", {
            let mut j = new_job(&scope, moment(5), "summary");
            j.payload = "x".repeat(MAX_JOB_PAYLOAD_BYTES + 1);
            j
        }),
        (
            "a round out of range",
            new_job(
                &scope,
                Moment {
                    round: u64::MAX,
                    time: Timestamp(T0),
                },
                "summary",
            ),
        ),
        ("a stored job id", reused),
        ("a job id twice", valid.clone()),
    ];
    for (what, bad) in bad_jobs {
        let t = turn(&scope, 5, "this turn must not be written");
        let result = store.write(WriteBatch {
            turns: vec![t.clone()],
            jobs: vec![valid.clone(), bad],
            ..Default::default()
        });
        assert_invalid_write(result, &format!("a job with {what}"));
        assert_eq!(unwrap_ok(store.turn(&user, t.id), "turn"), None, "{what}");
        assert_eq!(
            stored_job(&store, &user, valid.id),
            None,
            "{what}: the valid job of the rejected batch"
        );
    }
    assert_eq!(snapshot_user(&store, &user), before, "rejected job batches");
    assert_eq!(
        stored_job(&store, &user, jobs[3].id).as_ref(),
        Some(&jobs[3]),
        "a rejected reuse of its id leaves the stored job as it was"
    );
    assert_eq!(pending(&store, &user), expected, "rejected job batches");
}

/// Finishing a job marks it done (with its moment) and drops it from `pending_jobs`, atomically
/// with the results in the same batch. Finishing it again, finishing an unknown job, another
/// user's job, or the same job twice in one batch rejects the whole batch.
pub fn finishing_jobs_at_most_once<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let scope = scope_of(&alice, "companion", "s1");
    let t1 = turn(&scope, 1, "I adopted a cat named Miso");
    let summary_job = new_job(&scope, moment(1), "session_summary");
    let reflection_job = new_job(&scope, moment(1), "reflection");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![t1.clone()],
            jobs: vec![summary_job.clone(), reflection_job.clone()],
            ..Default::default()
        }),
        "enqueue",
    );
    let bob_job = new_job(
        &scope_of(&bob, "companion", "s1"),
        moment(1),
        "session_summary",
    );
    unwrap_ok(
        store.write(WriteBatch {
            jobs: vec![bob_job.clone()],
            ..Default::default()
        }),
        "enqueue bob's job",
    );

    // The job's results and its completion commit together.
    let summary = memory(
        &scope,
        MemoryKind::Summary { level: 1 },
        moment(2),
        "Alice adopted a cat named Miso",
        vec![t1.id],
    );
    unwrap_ok(
        store.write(WriteBatch {
            memories: vec![summary.clone()],
            finished_jobs: vec![(summary_job.id, moment(2))],
            ..Default::default()
        }),
        "finish with results",
    );
    let summary_done = finished(&summary_job, moment(2));
    assert_eq!(
        stored_job(&store, &alice, summary_job.id).as_ref(),
        Some(&summary_done),
        "a finished job shows when it finished"
    );
    assert_eq!(
        pending(&store, &alice),
        vec![reflection_job.clone()],
        "a finished job leaves pending_jobs"
    );
    assert_eq!(
        unwrap_ok(store.memory(&alice, summary.id), "memory"),
        Some(summary.clone())
    );

    let before = snapshot_user(&store, &alice);
    let bob_before = snapshot_user(&store, &bob);
    let rejected = |what: &str, finished_jobs: Vec<(JobId, Moment)>| {
        // Each rejected batch also carries results, a follow-up job and a turn.
        let result = memory(
            &scope,
            MemoryKind::Summary { level: 1 },
            moment(3),
            "Alice adopted a cat named Miso (replayed)",
            vec![t1.id],
        );
        let follow_up = new_job(&scope, moment(3), "persona_update");
        let t = turn(&scope, 3, "this turn must not be written");
        assert_invalid_write(
            store.write(WriteBatch {
                turns: vec![t.clone()],
                memories: vec![result.clone()],
                jobs: vec![follow_up.clone()],
                finished_jobs,
                ..Default::default()
            }),
            what,
        );
        assert_eq!(
            unwrap_ok(store.memory(&alice, result.id), "memory"),
            None,
            "{what}: the batch's memory was written"
        );
        assert_eq!(
            unwrap_ok(store.turn(&alice, t.id), "turn"),
            None,
            "{what}: the batch's turn was written"
        );
        assert_eq!(
            stored_job(&store, &alice, follow_up.id),
            None,
            "{what}: the batch's new job was written"
        );
        assert_eq!(snapshot_user(&store, &alice), before, "{what}");
        assert_eq!(
            stored_job(&store, &alice, summary_job.id).as_ref(),
            Some(&summary_done),
            "{what}: the finished job"
        );
        assert_eq!(
            pending(&store, &alice),
            vec![reflection_job.clone()],
            "{what}: the pending job"
        );
    };
    rejected(
        "finishing a finished job (a replay)",
        vec![(summary_job.id, moment(3))],
    );
    rejected("finishing an unknown job", vec![(JobId::new(), moment(3))]);
    rejected(
        "finishing another user's job",
        vec![(bob_job.id, moment(3))],
    );
    rejected(
        "finishing the same job twice in one batch",
        vec![
            (reflection_job.id, moment(3)),
            (reflection_job.id, moment(3)),
        ],
    );
    rejected(
        "finishing a pending job and then an unknown one",
        vec![(reflection_job.id, moment(3)), (JobId::new(), moment(3))],
    );
    assert_eq!(
        snapshot_user(&store, &bob),
        bob_before,
        "bob after alice's rejected batches"
    );
    assert_eq!(
        pending(&store, &bob),
        vec![bob_job.clone()],
        "bob's job stays pending"
    );

    // A batch naming only its user can finish a job.
    unwrap_ok(
        store.write(WriteBatch {
            finished_jobs: vec![(reflection_job.id, moment(4))],
            ..batch_of(&alice)
        }),
        "finish with no results",
    );
    assert_eq!(
        stored_job(&store, &alice, reflection_job.id),
        Some(finished(&reflection_job, moment(4)))
    );
    assert!(pending(&store, &alice).is_empty(), "every job finished");
    assert_invalid_write(
        store.write(WriteBatch {
            finished_jobs: vec![(reflection_job.id, moment(5))],
            ..batch_of(&alice)
        }),
        "finishing it again",
    );
    assert_eq!(
        stored_job(&store, &alice, reflection_job.id),
        Some(finished(&reflection_job, moment(4))),
        "the first completion stands"
    );
}

/// Updates and forgets inside one batch leave exactly the state, history and vectors that the
/// same edits written one batch each would: updates apply in order after the batch's new
/// memories (so they can edit them), then forgets, which drop the memory's vectors.
pub fn batch_edits_match_one_by_one<S: Store>(make: &dyn Fn() -> S) {
    let batched = make();
    let called = make();
    let user = key("tenant-1", "alice");
    let data = Dataset::new(&user, 17);
    let scope = scope_of(&user, "companion", "session-1");
    let mut rng = Rng(19);
    let t = turn(&scope, 20, "I switched jobs: I am a nurse now");
    let fresh = memory(
        &scope,
        MemoryKind::Fact,
        moment(20),
        "Alice works as a nurse",
        vec![t.id],
    );
    let fresh_vector = vector(fresh.id, MODEL_A, 16, &mut rng);
    let job = new_job(&scope, moment(20), "persona_update");
    let edited = data.memories[5].clone();
    let gone = data.memories[0].clone();
    assert_eq!(
        data.vectors
            .iter()
            .filter(|v| v.memory_id == gone.id)
            .count(),
        2,
        "fixture: the forgotten memory has vectors in two models"
    );
    let updates = vec![
        BatchUpdate {
            id: edited.id,
            patch: MemoryPatch {
                text: Some("the user moved to Lisbon".into()),
                metrics: Some(Metrics {
                    importance: Some(0.9),
                    ..Metrics::default()
                }),
                ..Default::default()
            },
            at: moment(21),
        },
        BatchUpdate {
            id: edited.id,
            patch: MemoryPatch {
                metadata: Some(meta(&[("topic", "home")])),
                valid_to: Some(Some(Timestamp(edited.valid_from.0 + 7))),
                ..Default::default()
            },
            at: moment(22),
        },
        BatchUpdate {
            id: fresh.id,
            patch: MemoryPatch {
                text: Some("Alice works as a night-shift nurse".into()),
                ..Default::default()
            },
            at: moment(23),
        },
    ];
    let forgets = vec![
        BatchForget {
            id: gone.id,
            reason: "superseded by the new job".into(),
            cause: ForgetCause::preset("conformance"),
            at: moment(24),
        },
        BatchForget {
            id: fresh.id,
            reason: "contradicted at round 25".into(),
            cause: ForgetCause::Derived { source: gone.id },
            at: moment(25),
        },
    ];
    for store in [&batched, &called] {
        unwrap_ok(store.write(data.batch()), "write");
    }
    unwrap_ok(
        batched.write(WriteBatch {
            turns: vec![t.clone()],
            memories: vec![fresh.clone()],
            vectors: vec![fresh_vector.clone()],
            updates: updates.clone(),
            forgets: forgets.clone(),
            jobs: vec![job.clone()],
            ..Default::default()
        }),
        "batch with edits",
    );
    unwrap_ok(
        called.write(WriteBatch {
            turns: vec![t.clone()],
            memories: vec![fresh.clone()],
            vectors: vec![fresh_vector],
            jobs: vec![job.clone()],
            ..Default::default()
        }),
        "batch without edits",
    );
    for u in &updates {
        unwrap_ok(called.update(&user, u.id, &u.patch, u.at), "update");
    }
    for f in &forgets {
        unwrap_ok(
            called.write(WriteBatch {
                forgets: vec![f.clone()],
                ..batch_of(&user)
            }),
            "forget",
        );
    }
    // An edit-only batch that names its user.
    let solo = BatchUpdate {
        id: data.memories[3].id,
        patch: MemoryPatch {
            text: Some("edited alone".into()),
            ..Default::default()
        },
        at: moment(26),
    };
    unwrap_ok(
        batched.write(WriteBatch {
            updates: vec![solo.clone()],
            ..batch_of(&user)
        }),
        "edit-only batch",
    );
    unwrap_ok(
        called.update(&user, solo.id, &solo.patch, solo.at),
        "update",
    );

    let got = snapshot_user(&batched, &user);
    assert_eq!(
        got,
        snapshot_user(&called, &user),
        "batch edits differ from the same edits one batch each"
    );
    // Spelled out, so a failure says what is wrong.
    let history = unwrap_ok(batched.history(&user, edited.id), "history");
    let changes: Vec<(u32, Change, Moment)> = history
        .iter()
        .map(|h| (h.version, h.change.clone(), h.at))
        .collect();
    assert_eq!(
        changes,
        vec![
            (1, Change::Created, edited.created),
            (2, Change::Updated, moment(21)),
            (3, Change::Updated, moment(22)),
        ],
        "history of a memory updated twice in one batch"
    );
    let fresh_history = unwrap_ok(batched.history(&user, fresh.id), "history");
    let changes: Vec<(u32, Change)> = fresh_history
        .iter()
        .map(|h| (h.version, h.change.clone()))
        .collect();
    assert_eq!(
        changes,
        vec![
            (1, Change::Created),
            (2, Change::Updated),
            (
                3,
                Change::Forgotten {
                    reason: "contradicted at round 25".into()
                }
            ),
        ],
        "a memory created, updated and forgotten in one batch"
    );
    let forgotten = unwrap_ok(batched.memory(&user, gone.id), "memory");
    assert_eq!(
        forgotten.as_ref().map(|m| (&m.state, m.version)),
        Some((
            &MemoryState::Forgotten {
                reason: "superseded by the new job".into(),
                at: moment(24),
                cause: ForgetCause::preset("conformance"),
            },
            2
        )),
        "state of a memory forgotten in a batch"
    );
    for (model, rows) in [(MODEL_A, &got.vectors_a), (MODEL_B, &got.vectors_b)] {
        assert!(
            rows.iter()
                .all(|v| v.memory_id != gone.id && v.memory_id != fresh.id),
            "a memory forgotten in a batch still has {model} vectors"
        );
    }
    // The vectors are deleted, not hidden: the purges count the same rows.
    let report = unwrap_ok(batched.purge_user(&user), "purge");
    assert_eq!(
        report,
        unwrap_ok(called.purge_user(&user), "purge"),
        "purge after batch edits vs. after single calls"
    );
    assert_eq!(
        report.vectors,
        data.vectors.len() - 2,
        "a batch forget must delete the memory's vectors (also those written in the same batch)"
    );
}

/// An update or forget of an unknown memory (or another user's), an invalid patch, or edits in a
/// batch that does not name its user reject the whole batch: none of its turns, memories, jobs or
/// earlier edits are written.
pub fn batch_edits_rejected_atomically<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let data = Dataset::new(&alice, 23);
    let bob_data = Dataset::new(&bob, 29);
    unwrap_ok(store.write(data.batch()), "write");
    unwrap_ok(store.write(bob_data.batch()), "write bob");
    let before = snapshot_user(&store, &alice);
    let bob_before = snapshot_user(&store, &bob);
    let scope = scope_of(&alice, "companion", "session-1");
    let valid = BatchUpdate {
        id: data.memories[4].id,
        patch: MemoryPatch {
            text: Some("a valid edit".into()),
            ..Default::default()
        },
        at: moment(30),
    };
    let valid_forget = BatchForget {
        id: data.memories[2].id,
        reason: "a valid forget".into(),
        cause: ForgetCause::Request,
        at: moment(30),
    };
    let update_of = |id: MemoryId, text: &str| BatchUpdate {
        id,
        patch: MemoryPatch {
            text: Some(text.into()),
            ..Default::default()
        },
        at: moment(31),
    };
    let forget_of = |id: MemoryId| BatchForget {
        id,
        reason: "must not stick".into(),
        cause: ForgetCause::Request,
        at: moment(31),
    };
    let cases: Vec<(&str, Vec<BatchUpdate>, Vec<BatchForget>)> = vec![
        (
            "an update of an unknown memory",
            vec![valid.clone(), update_of(MemoryId::new(), "ghost")],
            vec![valid_forget.clone()],
        ),
        (
            "a forget of an unknown memory",
            vec![valid.clone()],
            vec![valid_forget.clone(), forget_of(MemoryId::new())],
        ),
        (
            "an update of another user's memory",
            vec![
                valid.clone(),
                update_of(bob_data.memories[1].id, "hijacked"),
            ],
            vec![],
        ),
        (
            "a forget of another user's memory",
            vec![valid.clone()],
            vec![forget_of(bob_data.memories[1].id)],
        ),
        (
            "an invalid patch",
            vec![valid.clone(), update_of(data.memories[5].id, "   ")],
            vec![valid_forget.clone()],
        ),
    ];
    for (what, updates, forgets) in cases {
        let t = turn(&scope, 31, "this turn must not be written");
        let m = memory(
            &scope,
            MemoryKind::Fact,
            moment(31),
            "must not be written",
            vec![],
        );
        let job = new_job(&scope, moment(31), "session_summary");
        assert_invalid_write(
            store.write(WriteBatch {
                turns: vec![t.clone()],
                memories: vec![m.clone()],
                jobs: vec![job.clone()],
                updates,
                forgets,
                ..Default::default()
            }),
            what,
        );
        assert_eq!(unwrap_ok(store.turn(&alice, t.id), "turn"), None, "{what}");
        assert_eq!(
            unwrap_ok(store.memory(&alice, m.id), "memory"),
            None,
            "{what}"
        );
        assert_eq!(stored_job(&store, &alice, job.id), None, "{what}");
        assert_eq!(snapshot_user(&store, &alice), before, "{what}");
        assert_eq!(snapshot_user(&store, &bob), bob_before, "{what}: bob");
    }

    // Edits name rows by id only: without a user the batch cannot be checked.
    let anonymous = [
        (
            "updates without a user",
            WriteBatch {
                updates: vec![valid.clone()],
                ..Default::default()
            },
        ),
        (
            "forgets without a user",
            WriteBatch {
                forgets: vec![valid_forget.clone()],
                ..Default::default()
            },
        ),
        (
            "job completions without a user",
            WriteBatch {
                finished_jobs: vec![(JobId::new(), moment(31))],
                ..Default::default()
            },
        ),
        (
            "a user that differs from the batch's turns",
            WriteBatch {
                turns: vec![turn(&scope, 31, "alice's turn")],
                updates: vec![valid.clone()],
                ..batch_of(&bob)
            },
        ),
    ];
    for (what, batch) in anonymous {
        assert_invalid_write(store.write(batch), what);
        assert_eq!(snapshot_user(&store, &alice), before, "{what}");
        assert_eq!(snapshot_user(&store, &bob), bob_before, "{what}: bob");
    }

    // The store keeps working: the valid edits alone apply.
    unwrap_ok(
        store.write(WriteBatch {
            updates: vec![valid.clone()],
            forgets: vec![valid_forget.clone()],
            ..batch_of(&alice)
        }),
        "valid edits",
    );
    let edited = unwrap_ok(store.memory(&alice, valid.id), "memory");
    assert_eq!(
        edited.as_ref().map(|m| (m.text.as_str(), m.version)),
        Some(("a valid edit", 2))
    );
    let forgotten = unwrap_ok(store.memory(&alice, valid_forget.id), "memory");
    assert!(
        forgotten.is_some_and(|m| !m.is_active() && m.version == 2),
        "the valid forget applies"
    );
}

/// `record_job_failure` counts each failed attempt of a pending job and keeps the last error; a
/// finished job is returned unchanged; an unknown (or another user's) job is `None`.
pub fn job_failures_counted<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let scope = scope_of(&alice, "companion", "s1");
    let flaky = new_job(&scope, moment(1), "session_summary");
    let later = new_job(&scope, moment(2), "reflection");
    let done = new_job(&scope, moment(0), "persona_update");
    unwrap_ok(
        store.write(WriteBatch {
            jobs: vec![flaky.clone(), later.clone(), done.clone()],
            ..Default::default()
        }),
        "enqueue",
    );
    unwrap_ok(
        store.write(WriteBatch {
            finished_jobs: vec![(done.id, moment(1))],
            ..batch_of(&alice)
        }),
        "finish",
    );

    let first = unwrap_ok(
        store.record_job_failure(&alice, flaky.id, "model timed out"),
        "record failure",
    );
    let mut expected = flaky.clone();
    expected.attempts = 1;
    expected.last_error = Some("model timed out".into());
    assert_eq!(first.as_ref(), Some(&expected), "after one failure");
    let error = "the model answered in the wrong format: «résumé» 总结 🧠";
    let second = unwrap_ok(
        store.record_job_failure(&alice, flaky.id, error),
        "record failure",
    );
    expected.attempts = 2;
    expected.last_error = Some(error.into());
    assert_eq!(second.as_ref(), Some(&expected), "after two failures");
    assert_eq!(
        stored_job(&store, &alice, flaky.id).as_ref(),
        Some(&expected),
        "job() shows the attempts and the last error"
    );
    assert_eq!(
        pending(&store, &alice),
        vec![expected.clone(), later.clone()],
        "a failed job stays pending, in its place"
    );

    let done_job = finished(&done, moment(1));
    assert_eq!(
        unwrap_ok(
            store.record_job_failure(&alice, done.id, "late failure"),
            "record failure"
        ),
        Some(done_job.clone()),
        "a finished job is returned unchanged"
    );
    assert_eq!(stored_job(&store, &alice, done.id), Some(done_job));
    assert_eq!(
        unwrap_ok(
            store.record_job_failure(&alice, JobId::new(), "nothing"),
            "record failure"
        ),
        None,
        "unknown job"
    );
    assert_eq!(
        unwrap_ok(
            store.record_job_failure(&bob, flaky.id, "not yours"),
            "record failure"
        ),
        None,
        "another user's job"
    );
    assert_eq!(
        stored_job(&store, &alice, flaky.id),
        Some(expected),
        "another user's failure report changed the job"
    );
}

/// Jobs are invisible to every other user (same user name in another tenant included), and
/// `purge_user` erases the user's jobs, finished or not, and nobody else's.
pub fn jobs_isolated_and_purged<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let alice2 = key("tenant-2", "alice");
    let mut all: Vec<(UserKey, Job, Job)> = Vec::new();
    for user in [&alice, &bob, &alice2] {
        let scope = scope_of(user, "companion", "s1");
        let open = new_job(&scope, moment(1), "session_summary");
        let closed = new_job(&scope, moment(1), "reflection");
        unwrap_ok(
            store.write(WriteBatch {
                turns: vec![turn(&scope, 1, &format!("hello from {user}"))],
                jobs: vec![open.clone(), closed.clone()],
                ..Default::default()
            }),
            "enqueue",
        );
        unwrap_ok(
            store.write(WriteBatch {
                finished_jobs: vec![(closed.id, moment(2))],
                ..batch_of(user)
            }),
            "finish",
        );
        all.push((user.clone(), open, finished(&closed, moment(2))));
    }
    for (owner, open, closed) in &all {
        for (other, _, _) in &all {
            if other == owner {
                continue;
            }
            for job in [open, closed] {
                assert_eq!(
                    stored_job(&store, other, job.id),
                    None,
                    "{other} reads a job of {owner}"
                );
            }
        }
        assert_eq!(
            pending(&store, owner),
            vec![open.clone()],
            "pending_jobs of {owner} lists only their own jobs"
        );
    }

    unwrap_ok(store.purge_user(&alice), "purge");
    let (_, open, closed) = &all[0];
    for job in [open, closed] {
        assert_eq!(
            stored_job(&store, &alice, job.id),
            None,
            "a purged user's job is still readable"
        );
    }
    assert!(pending(&store, &alice).is_empty(), "purged pending jobs");
    for (owner, open, closed) in &all[1..] {
        assert_eq!(stored_job(&store, owner, open.id).as_ref(), Some(open));
        assert_eq!(stored_job(&store, owner, closed.id).as_ref(), Some(closed));
        assert_eq!(
            pending(&store, owner),
            vec![open.clone()],
            "{owner} after the purge"
        );
    }
    // Nothing of the purged jobs can be finished or failed any more.
    assert_invalid_write(
        store.write(WriteBatch {
            finished_jobs: vec![(open.id, moment(3))],
            ..batch_of(&alice)
        }),
        "finishing a purged job",
    );
    assert_eq!(
        unwrap_ok(
            store.record_job_failure(&alice, open.id, "gone"),
            "record failure"
        ),
        None,
        "a purged job's failure"
    );
}

// ---------------------------------------------------------------------------------------------
// API keys
// ---------------------------------------------------------------------------------------------

/// A key whose "secret" is `seed` (the hash is a fixture, not a real SHA-256: stores only
/// compare hashes).
fn api_key(tenant: &str, seed: char, created: i64) -> ApiKey {
    ApiKey {
        id: ApiKeyId::new(),
        tenant: tenant.into(),
        name: format!("key {seed}"),
        hash: seed.to_string().repeat(mnemos_core::API_KEY_HASH_LEN),
        prefix: format!("mnk_{seed}"),
        created_at: Timestamp(T0 + created),
        revoked_at: None,
    }
}

/// Keys are found by hash (revoked or not, unknown → none), listed oldest first whatever the
/// insertion order, stored once (a reused id or hash, or an invalid key, is rejected and
/// changes nothing), and survive purging a user of their tenant.
pub fn api_keys_found_listed_and_kept<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let late = api_key("acme", 'a', 30);
    let early = api_key("acme", 'b', 10);
    let other = api_key("globex", 'c', 20);
    for key in [&late, &early, &other] {
        unwrap_ok(store.put_api_key(key), "put key");
    }
    for key in [&late, &early, &other] {
        let found = unwrap_ok(store.api_key_by_hash(&key.hash), "find key");
        assert_eq!(found.as_ref(), Some(key), "key found by its hash");
    }
    let unknown = "d".repeat(mnemos_core::API_KEY_HASH_LEN);
    assert_eq!(unwrap_ok(store.api_key_by_hash(&unknown), "unknown"), None);
    let listed = vec![early.clone(), other.clone(), late.clone()];
    assert_eq!(unwrap_ok(store.api_keys(), "list"), listed, "oldest first");

    let same_id = ApiKey {
        id: late.id,
        ..api_key("acme", 'e', 40)
    };
    let same_hash = api_key("globex", 'a', 50);
    let bad_hash = ApiKey {
        hash: "not hex".into(),
        ..api_key("acme", 'f', 60)
    };
    let bad_tenant = api_key("", 'f', 60);
    for (bad, what) in [
        (&same_id, "a reused id"),
        (&same_hash, "a reused hash"),
        (&bad_hash, "an invalid hash"),
        (&bad_tenant, "an empty tenant"),
    ] {
        assert_invalid_write(store.put_api_key(bad), what);
    }
    assert_eq!(unwrap_ok(store.api_keys(), "list"), listed, "after rejects");

    let scope = scope_of(&key("acme", "alice"), "companion", "s1");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&scope, 1, "hello")],
            ..Default::default()
        }),
        "write turn",
    );
    unwrap_ok(store.purge_user(&key("acme", "alice")), "purge");
    assert_eq!(
        unwrap_ok(store.api_keys(), "list"),
        listed,
        "purging a user keeps their tenant's keys"
    );
}

/// Revoking sets `revoked_at` once (the first time stands), keeps the key listed and findable
/// by hash, touches no other key, and answers `None` for an unknown id.
pub fn api_key_revocation<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let kept = api_key("acme", 'a', 1);
    let revoked = api_key("acme", 'b', 2);
    for key in [&kept, &revoked] {
        unwrap_ok(store.put_api_key(key), "put key");
    }
    let first = Timestamp(T0 + 100);
    let expected = ApiKey {
        revoked_at: Some(first),
        ..revoked.clone()
    };
    let answer = unwrap_ok(store.revoke_api_key(revoked.id, first), "revoke");
    assert_eq!(answer.as_ref(), Some(&expected), "the revoked key");
    let again = unwrap_ok(
        store.revoke_api_key(revoked.id, Timestamp(T0 + 200)),
        "again",
    );
    assert_eq!(
        again.as_ref(),
        Some(&expected),
        "revoking again keeps the first time"
    );
    assert_eq!(
        unwrap_ok(store.api_key_by_hash(&revoked.hash), "find revoked"),
        Some(expected.clone()),
        "a revoked key is still found (and seen to be revoked)"
    );
    assert_eq!(
        unwrap_ok(store.api_keys(), "list"),
        vec![kept.clone(), expected],
        "revocation touches only that key"
    );
    assert_eq!(
        unwrap_ok(store.revoke_api_key(ApiKeyId::new(), first), "unknown"),
        None,
        "revoking an unknown key"
    );
}

/// A lease on a user's jobs belongs to one holder until it runs out or is released: another
/// holder is refused meanwhile, the holder renews it, an expired lease is taken over, leases of
/// different users are independent, releasing someone else's lease does nothing, and purging
/// the user ends it.
pub fn job_leases_exclusive_until_expiry<S: Store>(make: &dyn Fn() -> S) {
    use std::time::Duration;
    let store = make();
    let long = Duration::from_secs(600);
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let lease = |user: &UserKey, holder: &str, for_: Duration| {
        unwrap_ok(store.lease_jobs(user, holder, for_), "lease jobs")
    };
    assert!(lease(&alice, "server-a", long), "a free lease is taken");
    assert!(
        !lease(&alice, "server-b", long),
        "a running lease is refused to another holder"
    );
    assert!(
        lease(&alice, "server-a", long),
        "the holder renews its own lease"
    );
    assert!(
        lease(&bob, "server-b", long),
        "another user's lease is independent"
    );
    unwrap_ok(
        store.release_jobs(&alice, "server-b"),
        "release by a non-holder",
    );
    assert!(
        !lease(&alice, "server-b", long),
        "a non-holder's release ended the lease"
    );
    unwrap_ok(store.release_jobs(&alice, "server-a"), "release");
    assert!(lease(&alice, "server-b", long), "a released lease is free");

    let carol = key("tenant-1", "carol");
    // A second of lease: long enough to still hold on a loaded machine, short for the suite.
    assert!(lease(&carol, "server-a", Duration::from_secs(1)));
    assert!(
        !lease(&carol, "server-b", long),
        "the short lease has not run out yet"
    );
    std::thread::sleep(Duration::from_millis(1_300));
    assert!(
        lease(&carol, "server-b", long),
        "an expired lease is taken over"
    );
    assert!(!lease(&carol, "server-a", long), "the old holder lost it");

    let scope = scope_of(&bob, "agent", "s1");
    unwrap_ok(
        store.write(WriteBatch {
            turns: vec![turn(&scope, 1, "bob was here")],
            ..Default::default()
        }),
        "write",
    );
    unwrap_ok(store.purge_user(&bob), "purge");
    assert!(
        lease(&bob, "server-a", long),
        "purging a user ends their lease"
    );
    assert!(
        !lease(&bob, "server-b", long),
        "the lease after a purge is an ordinary lease"
    );
}

/// Supersession fields round-trip (`superseded_by`, `times_said`, `last_said`, a patched
/// provenance), and listings filter by valid time exactly as [`Validity::matches`] does:
/// current memories only, or the memories valid at a moment.
pub fn supersession_and_validity<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let scope = scope_of(&user, "a1", "s1");
    let turns: Vec<Turn> = (0..3)
        .map(|r| turn(&scope, r * 2, &format!("turn {r}")))
        .collect();
    let at = |round: u64| moment(round).time;
    // Tallinn (rounds 0–2), then Porto (2–4), then Lisbon (4–).
    let mut tallinn = memory(
        &scope,
        MemoryKind::Fact,
        moment(0),
        "lives in Tallinn",
        vec![turns[0].id],
    );
    let mut porto = memory(
        &scope,
        MemoryKind::Fact,
        moment(2),
        "lives in Porto",
        vec![turns[1].id],
    );
    let lisbon = memory(
        &scope,
        MemoryKind::Fact,
        moment(4),
        "lives in Lisbon",
        vec![turns[2].id],
    );
    tallinn.valid_to = Some(at(2));
    tallinn.superseded_by = Some(porto.id);
    porto.metrics.times_said = Some(3);
    porto.metrics.last_said = Some(at(3));
    let batch = WriteBatch {
        turns: turns.clone(),
        memories: vec![tallinn.clone(), porto.clone(), lisbon.clone()],
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "write");
    let read = |id| unwrap_ok(store.memory(&user, id), "read").expect("stored");
    assert_eq!(
        read(tallinn.id),
        tallinn,
        "superseded_by and valid_to round-trip"
    );
    assert_eq!(read(porto.id), porto, "times_said and last_said round-trip");

    // Supersede Porto by Lisbon in a batch edit, adding a turn to its provenance.
    let patch = MemoryPatch {
        valid_to: Some(Some(at(4))),
        superseded_by: Some(Some(lisbon.id)),
        provenance: Some(vec![turns[1].id, turns[2].id]),
        ..Default::default()
    };
    let mut expected = porto.clone();
    patch.apply(&mut expected).expect("valid patch");
    let batch = WriteBatch {
        user: Some(user.clone()),
        updates: vec![BatchUpdate {
            id: porto.id,
            patch,
            at: moment(4),
        }],
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "supersede");
    assert_eq!(
        read(porto.id),
        expected,
        "a patch sets superseded_by, valid_to, provenance"
    );
    let history = unwrap_ok(store.history(&user, porto.id), "history");
    assert_eq!(
        history.last().map(|h| &h.snapshot),
        Some(&expected),
        "versioned"
    );

    let all = [read(tallinn.id), read(porto.id), read(lisbon.id)];
    let cases = [
        ("any", Validity::Any, 3),
        ("current", Validity::Current, 1),
        ("at round 1", Validity::At(at(1)), 1),
        (
            "at round 2 (Tallinn ended, Porto began)",
            Validity::At(at(2)),
            1,
        ),
        ("at round 5", Validity::At(at(5)), 1),
        ("before anything", Validity::At(Timestamp(at(0).0 - 1)), 0),
    ];
    for (what, validity, count) in cases {
        let filter = MemoryFilter {
            validity,
            ..Default::default()
        };
        let expected = sorted_memories(all.iter().filter(|m| filter.matches(m)).cloned().collect());
        assert_eq!(expected.len(), count, "fixture: {what}");
        let got = list_all(&store, &user, &filter);
        assert_eq!(got.total, count, "validity {what}: total");
        assert_eq!(got.items, expected, "validity {what}: items");
    }
}

/// Erasing a memory leaves none of its words anywhere a read can reach: the row (placeholder
/// text, kept metadata only, forgotten), every version of its history, its vectors; an erased
/// turn keeps only its placeholder. Other memories and turns are untouched, and an erasure
/// naming an unknown memory or turn rejects the whole batch.
pub fn erasure_leaves_no_words<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "alice");
    let data = Dataset::new(&user, 5);
    unwrap_ok(store.write(data.batch()), "write");
    let target = data.memories[0].clone();
    let kept = data.memories[1].clone();
    let secret = "X4417902";
    // An edit puts the secret into a second version, so history holds it twice.
    let edit = MemoryPatch {
        text: Some(format!("my passport number is {secret}")),
        metadata: Some(meta(&[("note", secret), ("speaker", "Ann")])),
        ..Default::default()
    };
    unwrap_ok(store.update(&user, target.id, &edit, moment(20)), "edit");
    let erase = mnemos_core::BatchErase {
        id: target.id,
        reason: "the user asked to forget: passport number".into(),
        placeholder: "[forgotten at the user's request]".into(),
        metadata: meta(&[("speaker", "Ann")]),
        at: moment(21),
    };
    let turn_id = target.provenance[0];
    let turn_erase = mnemos_core::TurnErase {
        id: turn_id,
        placeholder: "[forgotten at the user's request]".into(),
    };
    // Unknown ids reject the batch, writing nothing.
    for (what, batch) in [
        (
            "unknown memory",
            WriteBatch {
                user: Some(user.clone()),
                erasures: vec![
                    erase.clone(),
                    mnemos_core::BatchErase {
                        id: MemoryId::new(),
                        ..erase.clone()
                    },
                ],
                ..Default::default()
            },
        ),
        (
            "unknown turn",
            WriteBatch {
                user: Some(user.clone()),
                erasures: vec![erase.clone()],
                turn_erasures: vec![mnemos_core::TurnErase {
                    id: TurnId::new(),
                    ..turn_erase.clone()
                }],
                ..Default::default()
            },
        ),
    ] {
        assert_invalid_write(store.write(batch), what);
        let still = unwrap_ok(store.memory(&user, target.id), "read").expect("stored");
        assert!(still.text.contains(secret), "{what}: nothing erased");
    }
    let batch = WriteBatch {
        user: Some(user.clone()),
        erasures: vec![erase.clone()],
        turn_erasures: vec![turn_erase.clone()],
        ..Default::default()
    };
    unwrap_ok(store.write(batch), "erase");
    let erased = unwrap_ok(store.memory(&user, target.id), "read").expect("stored");
    assert_eq!(erased.text, erase.placeholder);
    assert_eq!(erased.metadata, erase.metadata);
    assert!(!erased.is_active(), "an erased memory is forgotten");
    let history = unwrap_ok(store.history(&user, target.id), "history");
    assert!(
        matches!(
            history.last().map(|h| &h.change),
            Some(Change::Erased { .. })
        ),
        "{history:?}"
    );
    assert_eq!(history.last().map(|h| h.version), Some(erased.version));
    for entry in &history {
        assert_eq!(
            entry.snapshot.text, erase.placeholder,
            "v{} keeps words",
            entry.version
        );
        assert!(
            !format!("{:?}", entry.snapshot).contains(secret),
            "v{} keeps the secret",
            entry.version
        );
    }
    for model in [MODEL_A, MODEL_B] {
        let rows = unwrap_ok(store.vectors(&user, model), "vectors");
        assert!(
            rows.iter().all(|r| r.memory_id != target.id),
            "vectors of an erased memory"
        );
    }
    let export = unwrap_ok(store.export_user(&user), "export");
    assert!(
        !format!("{export:?}").contains(secret),
        "the export holds the secret"
    );
    assert!(export.vectors.iter().all(|r| r.memory_id != target.id));
    let turn = unwrap_ok(store.turn(&user, turn_id), "turn").expect("stored");
    assert_eq!(turn.text, turn_erase.placeholder);
    assert!(turn.metadata.is_empty());
    // Everything else is as it was.
    assert_eq!(
        unwrap_ok(store.memory(&user, kept.id), "read"),
        Some(kept.clone())
    );
    let other_turn = data
        .turns
        .iter()
        .find(|t| t.id != turn_id)
        .expect("fixture");
    assert_eq!(
        unwrap_ok(store.turn(&user, other_turn.id), "turn"),
        Some(other_turn.clone())
    );
}

/// `users` lists a user as soon as they have a memory, even one written without any turn.
pub fn users_listed_by_memories_alone<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let user = key("tenant-1", "only-memories");
    let scope = scope_of(&user, "agent", "s1");
    let memory = Memory::from_turn(&turn(&scope, 1, "a note kept without its turn"));
    unwrap_ok(
        store.write(WriteBatch {
            memories: vec![memory],
            ..Default::default()
        }),
        "write a memory alone",
    );
    assert_eq!(unwrap_ok(store.users(), "users"), vec![user]);
}

// ---------------------------------------------------------------------------------------------
// Vector search run by the store
// ---------------------------------------------------------------------------------------------

const ANN_MODEL: &str = "conformance-ann";

/// A unit vector along axis `i` of four.
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; 4];
    v[i] = 1.0;
    v
}

fn fact_with_vector<S: Store>(store: &S, user: &UserKey, text: &str, vector: Vec<f32>) -> MemoryId {
    let m = memory(
        &scope_of(user, "agent", "s1"),
        MemoryKind::Fact,
        moment(1),
        text,
        vec![],
    );
    let id = m.id;
    unwrap_ok(
        store.write(WriteBatch {
            memories: vec![m],
            vectors: vec![VectorRow {
                memory_id: id,
                model: ANN_MODEL.to_string(),
                vector,
            }],
            ..Default::default()
        }),
        "write a memory with its vector",
    );
    id
}

fn nearest_ids(
    search: &dyn VectorSearch,
    user: &UserKey,
    query: &[f32],
    k: usize,
) -> Vec<MemoryId> {
    unwrap_ok(search.nearest(user, ANN_MODEL, query, k), "nearest")
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// A store reports in `info` whether it searches vectors itself; when it does
/// ([`VectorSearch`]), it finds a user's own active memories by their best window, including
/// vectors stored before the model was prepared, and follows replacements, forgets and purges.
pub fn vector_search_when_offered<S: Store>(make: &dyn Fn() -> S) {
    let store = make();
    let info = store.info();
    let Some(search) = store.vector_search() else {
        assert!(
            info.vector_search.is_err(),
            "info claims a vector search the store does not offer: {info:?}"
        );
        return;
    };
    assert!(
        info.vector_search.is_ok(),
        "the store offers a vector search that info denies: {info:?}"
    );
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    // Stored before the model is prepared: found all the same.
    let early = fact_with_vector(&store, &alice, "early", axis(0));
    unwrap_ok(search.prepare(ANN_MODEL, 4), "prepare");
    unwrap_ok(search.prepare(ANN_MODEL, 4), "prepare again");
    assert_invalid_write(
        search.prepare(ANN_MODEL, 5),
        "prepare with another dimension",
    );
    let two_windows = fact_with_vector(&store, &alice, "long", [axis(3), axis(1)].concat());
    let third = fact_with_vector(&store, &alice, "third", axis(2));
    let doomed = fact_with_vector(&store, &alice, "doomed", axis(1));
    let bobs = fact_with_vector(&store, &bob, "bob's", axis(1));

    let hits = unwrap_ok(search.nearest(&alice, ANN_MODEL, &axis(1), 10), "nearest");
    let ids: Vec<MemoryId> = hits.iter().map(|h| h.0).collect();
    assert_eq!(
        ids.len(),
        4,
        "alice has four memories with vectors: {hits:?}"
    );
    assert!(
        !ids.contains(&bobs),
        "bob's memory found for alice: {hits:?}"
    );
    let mut best = vec![two_windows, doomed];
    best.sort();
    let mut top: Vec<MemoryId> = ids[..2].to_vec();
    top.sort();
    assert_eq!(top, best, "a memory scores as its best window: {hits:?}");
    assert!(
        (hits[0].1 - 1.0).abs() < 1e-4,
        "cosine of equal vectors: {hits:?}"
    );
    assert!(
        hits[3].1.abs() < 1e-4,
        "cosine of orthogonal vectors: {hits:?}"
    );
    assert!(ids.contains(&early) && ids.contains(&third));
    assert_eq!(
        nearest_ids(search, &alice, &axis(2), 1),
        vec![third],
        "k = 1"
    );
    let mut before = ids.clone();
    before.sort();
    catch_up_fully(search);
    let mut after = nearest_ids(search, &alice, &axis(1), 10);
    after.sort();
    assert_eq!(after, before, "catching up the index changes what is found");

    unwrap_ok(store.forget(&alice, doomed, "test", moment(2)), "forget");
    assert!(
        !nearest_ids(search, &alice, &axis(1), 10).contains(&doomed),
        "forgotten memory found"
    );
    let replaced = VectorRow {
        memory_id: early,
        model: ANN_MODEL.to_string(),
        vector: axis(1),
    };
    unwrap_ok(store.put_vectors(&alice, &[replaced]), "replace a vector");
    let mut top = nearest_ids(search, &alice, &axis(1), 2);
    top.sort();
    let mut expected = vec![early, two_windows];
    expected.sort();
    assert_eq!(top, expected, "a replaced vector is searched as replaced");

    let mut coverage = unwrap_ok(search.coverage(&alice, ANN_MODEL), "coverage");
    coverage.sort();
    let mut expected = vec![(early, 4), (two_windows, 8), (third, 4)];
    expected.sort();
    assert_eq!(
        coverage, expected,
        "coverage lists active memories' vector lengths"
    );
    assert!(
        search.nearest(&alice, ANN_MODEL, &[1.0, 0.0], 3).is_err(),
        "a query of the wrong dimension is an error"
    );

    catch_up_fully(search);
    let mut top = nearest_ids(search, &alice, &axis(1), 2);
    top.sort();
    let mut expected = vec![early, two_windows];
    expected.sort();
    assert_eq!(
        top, expected,
        "a replaced vector is searched as replaced once indexed"
    );
    unwrap_ok(store.purge_user(&alice), "purge");
    assert!(
        nearest_ids(search, &alice, &axis(1), 10).is_empty(),
        "purged user found"
    );
    assert_eq!(nearest_ids(search, &bob, &axis(1), 10), vec![bobs]);
}

/// Call [`VectorSearch::catch_up`] a few windows at a time until nothing is left; it must get
/// there, and each call must move no more than it was allowed to.
fn catch_up_fully(search: &dyn VectorSearch) {
    for _ in 0..1_000 {
        let step = unwrap_ok(search.catch_up(ANN_MODEL, 2), "catch up the vector index");
        assert!(
            step.indexed <= 2 || step.remaining == 0,
            "catch_up moved more than allowed without catching up: {step:?}"
        );
        if step.remaining == 0 {
            return;
        }
    }
    panic!("the vector index never caught up");
}

// Export and import
// ---------------------------------------------------------------------------------------------

/// A model whose vectors hold several windows each (a long text): three of dimension 4.
const MODEL_LONG: &str = "conformance-long";

/// The jobs of [`rich_user`]: pending, failed twice (still pending), and finished.
struct RichJobs {
    pending: Job,
    failed: Job,
    done: Job,
}

/// A user with everything an export must carry: turns (keys, speakers, Chinese text),
/// memories updated, forgotten (one already when written, with its vector) and accessed,
/// vectors of three models (one of several windows, with -0.0 and a subnormal), and jobs
/// pending, failed and finished.
fn rich_user<S: Store>(store: &S, user: &UserKey, seed: u64) -> RichJobs {
    let mut data = Dataset::new(user, seed);
    let scope = scope_of(user, "companion", "session-1");
    let mut zh = turn(&scope, 20, "我在杭州做后端工程师，周末去西湖跑步。🏃");
    zh.key = Some("zh-1".into());
    zh.speaker = Some("安娜".into());
    data.memories.push(Memory::from_turn(&zh));
    data.turns.push(zh);
    let last = data.memories.len() - 1;
    data.memories[last - 1].state = MemoryState::Forgotten {
        reason: "lufy: imported as forgotten".into(),
        at: moment(12),
        cause: ForgetCause::preset("moom"),
    };
    let jobs = RichJobs {
        pending: new_job(&scope, moment(2), "session_summary"),
        failed: new_job(&scope, moment(3), "reflection"),
        done: new_job(&scope, moment(1), "persona_update"),
    };
    let mut batch = data.batch();
    batch.jobs = vec![jobs.pending.clone(), jobs.failed.clone(), jobs.done.clone()];
    unwrap_ok(store.write(batch), "write the rich user");
    let (m, at) = (&data.memories, moment(30));
    let patch = MemoryPatch {
        text: Some("更新后的摘要 — updated summary".into()),
        ..MemoryPatch::default()
    };
    unwrap_ok(store.update(user, m[5].id, &patch, at), "update");
    unwrap_ok(store.forget(user, m[6].id, "user asked", at), "forget");
    let edits = WriteBatch {
        updates: vec![BatchUpdate {
            id: m[7].id,
            patch: MemoryPatch {
                metadata: Some(meta(&[("topic", "旅行")])),
                ..MemoryPatch::default()
            },
            at: moment(31),
        }],
        finished_jobs: vec![(jobs.done.id, moment(31))],
        ..batch_of(user)
    };
    unwrap_ok(store.write(edits), "batch edit and finish");
    let seen = Access {
        at: moment(32),
        rank: 2,
    };
    unwrap_ok(
        store.record_access(user, &[(m[0].id, seen), (m[5].id, seen), (m[0].id, seen)]),
        "record access",
    );
    let mut long = vector(m[0].id, MODEL_LONG, 12, &mut Rng(seed | 1));
    long.vector[1] = -0.0;
    long.vector[2] = f32::from_bits(1);
    unwrap_ok(store.put_vectors(user, &[long]), "put a long vector");
    for error in ["model timed out", "模型超时"] {
        unwrap_ok(
            store.record_job_failure(user, jobs.failed.id, error),
            "record failure",
        );
    }
    jobs
}

/// The export holds exactly what the store's reads return for the user, and nothing else.
fn assert_export_matches_reads<S: Store>(store: &S, export: &UserExport, what: &str) {
    let user = &export.user;
    assert_eq!(
        export.turns,
        unwrap_ok(store.turns(user, all_page()), "turns").items,
        "{what}: turns"
    );
    let memories: Vec<Memory> = export.memories.iter().map(|m| m.memory.clone()).collect();
    assert_eq!(
        memories,
        list_all(store, user, &any_state()).items,
        "{what}: memories, active and forgotten, in listing order"
    );
    for m in &export.memories {
        assert_eq!(
            m.history,
            unwrap_ok(store.history(user, m.memory.id), "history"),
            "{what}: history of {}",
            m.memory.id
        );
    }
    for model in [MODEL_A, MODEL_B, MODEL_LONG] {
        let exported: Vec<VectorRow> = export
            .memories
            .iter()
            .filter(|m| m.memory.is_active())
            .filter_map(|m| {
                export
                    .vectors
                    .iter()
                    .find(|v| v.memory_id == m.memory.id && v.model == model)
                    .cloned()
            })
            .collect();
        let read = unwrap_ok(store.vectors(user, model), "vectors");
        assert_vectors_bit_exact(&exported, &read, &format!("{what}: vectors of {model}"));
    }
    let unfinished: Vec<Job> = export
        .jobs
        .iter()
        .filter(|j| j.is_pending())
        .cloned()
        .collect();
    assert_eq!(unfinished, pending(store, user), "{what}: pending jobs");
    for job in &export.jobs {
        assert_eq!(
            stored_job(store, user, job.id).as_ref(),
            Some(job),
            "{what}: job {}",
            job.id
        );
    }
}

fn export_of<S: Store>(store: &S, user: &UserKey) -> UserExport {
    unwrap_ok(store.export_user(user), "export_user")
}

/// `export_user` returns everything of one user — turns, memories active and forgotten with
/// their whole history, vectors of every model, jobs pending and finished — and `import_user`
/// writes it into another store exactly: exporting again gives an equal export with the same
/// checksum, and every read agrees. An import is refused with `Conflict::UserNotEmpty`,
/// writing nothing, when the store holds any turn, memory or job of the user, and rejected
/// with `InvalidWrite` when the export holds another user's rows.
pub fn export_import_round_trip<S: Store>(make: &dyn Fn() -> S) {
    let source = make();
    let alice = key("tenant-1", "alice");
    let bob = key("tenant-1", "bob");
    let jobs = rich_user(&source, &alice, 21);
    rich_user(&source, &bob, 22);
    let export = export_of(&source, &alice);
    assert_eq!(export.user, alice);
    assert_export_matches_reads(&source, &export, "source");
    let counts = export.counts();
    assert_eq!((counts.turns, counts.memories, counts.jobs), (5, 12, 3));
    assert!(
        export.memories.iter().all(|m| !m.history.is_empty()),
        "every memory has its history"
    );
    assert_eq!(
        stored_job(&source, &alice, jobs.failed.id).map(|j| j.attempts),
        Some(2)
    );
    assert_eq!(export_of(&source, &alice), export, "export is repeatable");

    let target = make();
    unwrap_ok(target.import_user(&export), "import into a fresh store");
    let again = export_of(&target, &alice);
    assert_eq!(again, export, "the import is exact");
    assert_eq!(again.checksum(), export.checksum());
    assert_export_matches_reads(&target, &export, "target");
    assert_eq!(unwrap_ok(target.users(), "users"), vec![alice.clone()]);
    assert_eq!(
        unwrap_ok(target.last_round(&alice), "last_round"),
        unwrap_ok(source.last_round(&alice), "last_round")
    );
    let keyed = unwrap_ok(target.turns_by_keys(&alice, &["zh-1".into()]), "by key");
    assert_eq!(keyed.len(), 1, "turn keys are imported");
    assert!(
        export_of(&target, &bob).turns.is_empty(),
        "nothing of another user"
    );

    // A second import of the user is refused and changes nothing.
    match target.import_user(&export) {
        Err(StoreError::Conflict(Conflict::UserNotEmpty { user })) => assert_eq!(user, alice),
        other => panic!("a second import: expected Conflict::UserNotEmpty, got {other:?}"),
    }
    assert_eq!(
        export_of(&target, &alice),
        export,
        "a refused import writes nothing"
    );
    refused_when_only_a_job_is_there(make, &export);

    // Beside another user, who stays as they were.
    let shared = make();
    let bob_export = export_of(&source, &bob);
    unwrap_ok(shared.import_user(&bob_export), "import bob");
    unwrap_ok(shared.import_user(&export), "import alice beside bob");
    assert_eq!(export_of(&shared, &bob), bob_export);
    assert_eq!(export_of(&shared, &alice).checksum(), export.checksum());

    import_validates(make, &export, &bob);
}

/// A user with nothing but a job is a user with data: the import is refused.
fn refused_when_only_a_job_is_there<S: Store>(make: &dyn Fn() -> S, export: &UserExport) {
    let store = make();
    let job = new_job(&scope_of(&export.user, "a", "s"), moment(1), "summary");
    unwrap_ok(
        store.write(WriteBatch {
            jobs: vec![job.clone()],
            ..Default::default()
        }),
        "enqueue",
    );
    let refused = store.import_user(export);
    assert!(
        matches!(
            refused,
            Err(StoreError::Conflict(Conflict::UserNotEmpty { .. }))
        ),
        "import over a user with a job: {refused:?}"
    );
    assert_eq!(export_of(&store, &export.user).jobs, vec![job]);
}

/// Empty exports, foreign rows and dangling vectors.
fn import_validates<S: Store>(make: &dyn Fn() -> S, export: &UserExport, other: &UserKey) {
    let store = make();
    let nobody = key("tenant-1", "nobody");
    assert_eq!(
        export_of(&store, &nobody),
        UserExport::empty(nobody.clone())
    );
    unwrap_ok(
        store.import_user(&UserExport::empty(nobody)),
        "empty import",
    );
    assert!(unwrap_ok(store.users(), "users").is_empty());

    let mut foreign = export.clone();
    foreign.user = other.clone();
    assert_invalid_write(
        store.import_user(&foreign),
        "an export of another user's rows",
    );
    let mut dangling = export.clone();
    dangling.vectors[0].memory_id = MemoryId::new();
    assert_invalid_write(store.import_user(&dangling), "a vector of no memory");
    assert!(
        export_of(&store, &export.user).is_empty() && export_of(&store, other).is_empty(),
        "a rejected import writes nothing"
    );
}
