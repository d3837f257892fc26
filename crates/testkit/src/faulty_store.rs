//! [`FaultyStore`]: a [`Store`] wrapper that fails chosen calls, as a disk or a database
//! connection would, so tests can check what callers leave behind after each possible failure.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use mnemos_core::{
    CatchUp, MemoryId, Store, StoreError, StoreProxy, StoreResult, UserKey, VectorSearch,
};

/// Whether a store call only looks or may change something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// A [`StoreRead`](mnemos_core::StoreRead) method.
    Read,
    /// A [`Store`] method (`write`, `record_access`, `put_vectors`,
    /// `purge_user`, `record_job_failure`, `lease_jobs`, `release_jobs`, API keys,
    /// `import_user`).
    Write,
}

impl fmt::Display for CallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallKind::Read => "read",
            CallKind::Write => "write",
        })
    }
}

/// Which calls a fault counts when it looks for its n-th.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallFilter {
    Any,
    Reads,
    Writes,
}

impl CallFilter {
    fn counts(self, kind: CallKind) -> bool {
        match self {
            CallFilter::Any => true,
            CallFilter::Reads => kind == CallKind::Read,
            CallFilter::Writes => kind == CallKind::Write,
        }
    }
}

/// What an armed fault does to the call it hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// The call fails before it reaches the inner store: nothing is read or written.
    Fail,
    /// The call reaches the inner store and takes effect there, then fails anyway: the caller
    /// sees an error for a write that was committed (the connection died after the commit and
    /// before the answer). Callers must treat a failed write as "maybe written". On a read it
    /// only costs the answer.
    LoseAck,
}

/// A fault waiting for its call: the `nth` call (1-based) among those `filter` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub filter: CallFilter,
    pub nth: u64,
    pub mode: FaultMode,
}

/// One call the wrapper saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// Position among all calls, from 1.
    pub index: u64,
    /// Position among calls of its kind, from 1.
    pub index_of_kind: u64,
    pub kind: CallKind,
    /// The store method, e.g. `"write"`, `"list"`, `"put_vectors"`.
    pub op: &'static str,
    /// The fault injected into this call, if any.
    pub fault: Option<FaultMode>,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "call {} ({} {} of its kind: {})",
            self.index, self.kind, self.index_of_kind, self.op
        )?;
        if let Some(mode) = self.fault {
            write!(f, " [{mode:?}]")?;
        }
        Ok(())
    }
}

/// How many calls of each kind the wrapper has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    pub reads: u64,
    pub writes: u64,
}

impl CallCounts {
    pub fn total(self) -> u64 {
        self.reads + self.writes
    }

    /// Calls that `filter` counts.
    pub fn of(self, filter: CallFilter) -> u64 {
        match filter {
            CallFilter::Any => self.total(),
            CallFilter::Reads => self.reads,
            CallFilter::Writes => self.writes,
        }
    }
}

/// Something a test runs just before one call reaches the inner store (see
/// [`FaultyStore::before_next`]).
type Interlude = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    counts: CallCounts,
    armed: Vec<Fault>,
    log: Vec<Call>,
    interludes: Vec<(&'static str, Interlude)>,
}

/// A [`Store`] that delegates every call to an inner store and fails the calls it was told to.
///
/// Contract:
/// - **Counting.** Every call of a [`StoreRead`](mnemos_core::StoreRead) or [`Store`] method is one call, numbered from
///   1 in the order the wrapper receives it, overall and per [`CallKind`]. `list_all` is not
///   overridden: each page it fetches is one `list` call, as each page is one round trip to a
///   real backend. [`counts`](Self::counts) and [`calls`](Self::calls) show what a scenario did,
///   so a test can run it once cleanly and then once per call with that call failing.
/// - **Faults.** An armed [`Fault`] hits the `nth` call its filter counts (calls are counted from
///   the wrapper's creation, not from arming) and fires once; `nth = 0`, or a position already
///   passed, never fires. Several faults may be armed; when two name the same call, the first
///   armed decides its mode.
/// - **Errors.** A faulted call returns [`StoreError::Backend`] (a service error, class
///   `Internal`) whose operation is the method's name and whose message says "injected fault".
///   With [`FaultMode::Fail`] the inner store is not called; with [`FaultMode::LoseAck`] it is,
///   and its own error, if any, is returned instead of the injected one.
/// - **Otherwise transparent.** An unfaulted call returns exactly what the inner store returns,
///   so an unarmed wrapper passes the conformance suite. Calls from several threads are
///   numbered one at a time; the inner store is called outside the wrapper's lock.
pub struct FaultyStore<S: ?Sized> {
    inner: Arc<S>,
    state: Mutex<State>,
}

impl<S: Store> FaultyStore<S> {
    /// Wrap `inner`, with no fault armed.
    pub fn new(inner: S) -> Self {
        Self::over(Arc::new(inner))
    }
}

impl<S: Store + ?Sized> FaultyStore<S> {
    /// Wrap a store the test keeps a handle on too (to open a second engine on the same data).
    pub fn over(inner: Arc<S>) -> Self {
        Self {
            inner,
            state: Mutex::new(State::default()),
        }
    }

    /// The wrapped store; calls made on it directly are neither counted nor faulted.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// Arm `fault`.
    pub fn arm(&self, fault: Fault) {
        self.state.lock().armed.push(fault);
    }

    /// Run `interlude` once, when the next call of the store method `op` arrives, before that
    /// call reaches the inner store: a test places another client's work exactly between two
    /// calls of the code under test (a race made deterministic). The interlude may call this
    /// store; its calls are counted like any others.
    pub fn before_next(&self, op: &'static str, interlude: impl FnOnce() + Send + 'static) {
        self.state.lock().interludes.push((op, Box::new(interlude)));
    }

    /// Fail the `n`-th call of any kind (1-based) before it reaches the inner store.
    pub fn fail_nth_call(&self, n: u64) {
        self.arm_nth(CallFilter::Any, n, FaultMode::Fail);
    }

    /// Fail the `n`-th read (1-based).
    pub fn fail_nth_read(&self, n: u64) {
        self.arm_nth(CallFilter::Reads, n, FaultMode::Fail);
    }

    /// Fail the `n`-th write (1-based) before it reaches the inner store.
    pub fn fail_nth_write(&self, n: u64) {
        self.arm_nth(CallFilter::Writes, n, FaultMode::Fail);
    }

    /// Let the `n`-th write (1-based) take effect, then report it failed.
    pub fn lose_ack_of_nth_write(&self, n: u64) {
        self.arm_nth(CallFilter::Writes, n, FaultMode::LoseAck);
    }

    fn arm_nth(&self, filter: CallFilter, nth: u64, mode: FaultMode) {
        self.arm(Fault { filter, nth, mode });
    }

    /// Drop every armed fault that has not fired yet.
    pub fn disarm(&self) {
        self.state.lock().armed.clear();
    }

    /// Faults armed and not fired yet.
    pub fn armed(&self) -> Vec<Fault> {
        self.state.lock().armed.clone()
    }

    /// Calls seen so far, by kind.
    pub fn counts(&self) -> CallCounts {
        self.state.lock().counts
    }

    /// Every call seen so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().log.clone()
    }

    /// The calls a fault was injected into, in order.
    pub fn fired(&self) -> Vec<Call> {
        let state = self.state.lock();
        state
            .log
            .iter()
            .filter(|c| c.fault.is_some())
            .cloned()
            .collect()
    }

    /// Number the call, log it, and take the fault aimed at it, if any.
    fn enter(&self, kind: CallKind, op: &'static str) -> Call {
        let mut state = self.state.lock();
        let counts = &mut state.counts;
        let index_of_kind = match kind {
            CallKind::Read => {
                counts.reads += 1;
                counts.reads
            }
            CallKind::Write => {
                counts.writes += 1;
                counts.writes
            }
        };
        let counts = *counts;
        let hits = |fault: &Fault| {
            fault.filter.counts(kind) && fault.nth != 0 && fault.nth == counts.of(fault.filter)
        };
        let fault = state.armed.iter().position(hits).map(|position| {
            let mode = state.armed[position].mode;
            // Faults naming the same call fire together: it is one call.
            state.armed.retain(|f| !hits(f));
            mode
        });
        let call = Call {
            index: counts.total(),
            index_of_kind,
            kind,
            op,
            fault,
        };
        state.log.push(call.clone());
        call
    }

    /// Run one call of `kind` against the inner store, unless a fault says otherwise.
    fn call<T>(
        &self,
        kind: CallKind,
        op: &'static str,
        run: impl FnOnce(&S) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let interlude = {
            let mut state = self.state.lock();
            let at = state.interludes.iter().position(|(o, _)| *o == op);
            at.map(|i| state.interludes.remove(i).1)
        };
        if let Some(interlude) = interlude {
            interlude();
        }
        let call = self.enter(kind, op);
        match call.fault {
            None => run(&self.inner),
            Some(FaultMode::Fail) => Err(injected(&call)),
            Some(FaultMode::LoseAck) => {
                run(&self.inner)?;
                Err(injected(&call))
            }
        }
    }

    fn read_call<T>(
        &self,
        op: &'static str,
        run: impl FnOnce(&S) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.call(CallKind::Read, op, run)
    }

    fn write_call<T>(
        &self,
        op: &'static str,
        run: impl FnOnce(&S) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.call(CallKind::Write, op, run)
    }
}

fn injected(call: &Call) -> StoreError {
    let what = match call.fault {
        Some(FaultMode::LoseAck) => "injected fault: committed, acknowledgement lost",
        _ => "injected fault",
    };
    StoreError::backend_message(call.op, format!("{what} at {call}"))
}

/// Every capability method goes through [`FaultyStore::call`], named after the method.
impl<S: Store + ?Sized> StoreProxy for FaultyStore<S> {
    type Target = S;

    fn target(&self) -> &S {
        &self.inner
    }

    fn around_read<T>(
        &self,
        op: &'static str,
        call: impl FnOnce(&S) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read_call(op, call)
    }

    fn around_write<T>(
        &self,
        op: &'static str,
        call: impl FnOnce(&S) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write_call(op, call)
    }

    /// The wrapped store's search, through this store so its calls count and fail like reads.
    fn proxied_vector_search(&self) -> Option<&dyn VectorSearch> {
        self.inner
            .vector_search()
            .map(|_| self as &dyn VectorSearch)
    }
}

impl<S: Store + ?Sized> VectorSearch for FaultyStore<S> {
    fn prepare(&self, model: &str, dim: usize) -> StoreResult<()> {
        self.write_call("prepare_vectors", |s| inner_search(s)?.prepare(model, dim))
    }

    fn nearest(
        &self,
        user: &UserKey,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> StoreResult<Vec<(MemoryId, f32)>> {
        self.read_call("nearest", |s| {
            inner_search(s)?.nearest(user, model, query, k)
        })
    }

    fn coverage(&self, user: &UserKey, model: &str) -> StoreResult<Vec<(MemoryId, usize)>> {
        self.read_call("vector_coverage", |s| {
            inner_search(s)?.coverage(user, model)
        })
    }

    fn catch_up(&self, model: &str, max_windows: usize) -> StoreResult<CatchUp> {
        self.write_call("vector_catch_up", |s| {
            inner_search(s)?.catch_up(model, max_windows)
        })
    }
}

/// The wrapped store's vector search (present whenever this wrapper offers its own).
fn inner_search<S: Store + ?Sized>(store: &S) -> StoreResult<&dyn VectorSearch> {
    store.vector_search().ok_or_else(|| {
        StoreError::backend_message("nearest", "the wrapped store has no vector search")
    })
}

#[cfg(test)]
mod tests;
