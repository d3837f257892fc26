//! One database, one vector space. A database is bound to the embedder id its vectors were
//! made with; an engine opened with another embedder refuses to start instead of searching
//! vectors of another space (cosines across two models mean nothing) or silently re-embedding
//! everything. [`Engine::reembed`] is the one way to move a database into another space: it
//! embeds what the new space lacks in batches committed as it goes (a rerun resumes), and
//! moves the binding only once every memory has its vector, so the old embedder keeps working
//! until then.

use std::collections::HashSet;

use serde::Serialize;

use mnemos_core::{Conflict, MemoryFilter, MemoryId, Page, Store, StoreError, UserKey, VectorRow};

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};
use crate::memories::Memories;

/// How an engine holds its database to one vector space ([`EngineBuilder::vector_space`]).
///
/// [`EngineBuilder::vector_space`]: crate::EngineBuilder::vector_space
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VectorSpace {
    /// The database must be in the embedder's space; one without a binding is bound to it when
    /// the engine is built (unless it holds more vectors of another space: then that space is
    /// its space). The default.
    #[default]
    Bound,
    /// Opened to move the database into the embedder's space with [`Engine::reembed`]: it may
    /// be bound to another space, and its binding moves only when the move is complete.
    Moving,
    /// The embedder is a stand-in that refuses to embed (a tool that never searches): the
    /// binding is neither checked nor written. Never use it with a real embedder.
    Unchecked,
}

/// A database bound to one vector space, opened with an embedder of another.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("this database's vectors are {bound}; it was opened with {opened}. {way_out}")]
pub struct SpaceMismatch {
    /// The embedder id the database's vectors were made with.
    pub bound: String,
    /// The embedder id it was opened with.
    pub opened: String,
    /// What to do about it, in the words of whoever opened it (a command, a config key).
    pub way_out: String,
}

impl SpaceMismatch {
    /// `bound` opened with `opened`, with the way out in the engine's words.
    pub fn new(bound: &str, opened: &str) -> Self {
        SpaceMismatch {
            bound: bound.to_string(),
            opened: opened.to_string(),
            way_out: format!(
                "Open it with the {bound} embedder, or move it to {opened} with: mnemos reembed"
            ),
        }
    }
}

/// Binds a database still unbound at most this often before giving up on a racing engine.
const BIND_ATTEMPTS: usize = 3;

/// Hold `store` to `opened`'s space as `mode` says (see [`VectorSpace`]).
pub(crate) fn check(store: &dyn Store, opened: &str, mode: VectorSpace) -> EngineResult<()> {
    if mode != VectorSpace::Bound {
        return Ok(());
    }
    for _ in 0..BIND_ATTEMPTS {
        let bound = match store.binding()? {
            Some(bound) => bound,
            None => match legacy_space(store, opened)? {
                Some(other) => other,
                None => match store.bind(opened, None) {
                    Ok(()) => return Ok(()),
                    // Another engine bound it first: read what it chose.
                    Err(StoreError::Conflict(Conflict::BindingMoved { .. })) => continue,
                    Err(e) => return Err(e.into()),
                },
            },
        };
        if bound == opened {
            return Ok(());
        }
        return Err(SpaceMismatch::new(&bound, opened).into());
    }
    Err(EngineError::config(
        "the database's binding kept changing while this engine opened it",
    ))
}

/// The space an unbound database (new, or written before bindings) is in when it is not
/// `opened`'s: the space with the most vectors, if `opened` has fewer. `None`: bind it to
/// `opened` (no vectors, or most of them are `opened`'s).
fn legacy_space(store: &dyn Store, opened: &str) -> EngineResult<Option<String>> {
    let counts = store.vector_models()?;
    let ours = counts
        .iter()
        .find(|(model, _)| model == opened)
        .map_or(0, |(_, n)| *n);
    Ok(counts
        .into_iter()
        .next()
        .filter(|(model, n)| model != opened && *n > ours)
        .map(|(model, _)| model))
}

/// How [`Engine::reembed`] goes about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReembedOptions {
    /// Once the binding has moved, delete every vector of other spaces.
    pub drop_old: bool,
    /// Memories embedded and committed at a time: what a crash can cost a rerun at most.
    pub batch: usize,
}

impl Default for ReembedOptions {
    fn default() -> Self {
        Self {
            drop_old: false,
            batch: 128,
        }
    }
}

/// How far a move into another space is (for a progress bar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReembedStep {
    /// Memories embedded so far by this run.
    pub done: u64,
    /// Memories this run has to embed (more may arrive while it runs).
    pub total: u64,
}

/// What [`Engine::reembed`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReembedReport {
    /// The space the database is now bound to (the engine's embedder).
    pub model: String,
    /// The space it was bound to before (`None`: it had no binding).
    pub previous: Option<String>,
    /// Users whose memories were looked at.
    pub users: usize,
    /// Memories embedded by this run.
    pub embedded: u64,
    /// Memories that had a vector in the space already (from an interrupted run, or written
    /// since by this embedder).
    pub already_present: u64,
    /// Vectors of other spaces deleted (`drop_old`).
    pub dropped: u64,
}

impl Engine {
    /// Move the database into this engine's embedder space: embed every active memory of every
    /// user that has no vector there, committing each batch as it goes (a rerun after a crash
    /// skips what was committed, and writes nothing twice), then bind the database to the
    /// embedder. The binding moves only when every memory has its vector; with
    /// `drop_old`, other spaces' vectors are deleted after. `progress` hears after each batch.
    ///
    /// Build the engine with [`VectorSpace::Moving`] to open a database bound to another space.
    /// Engines of the old space may keep writing meanwhile: what they write after its user was
    /// moved gets its vector in the new space when an engine of that space first builds the
    /// user's index. They keep their old space until restarted (the binding is checked when an
    /// engine is built), so restart them after the move.
    pub fn reembed(
        &self,
        options: ReembedOptions,
        progress: &mut dyn FnMut(ReembedStep),
    ) -> EngineResult<ReembedReport> {
        if options.batch == 0 {
            return Err(EngineError::config(
                "a reembed batch holds at least one memory",
            ));
        }
        let store = self.store();
        let model = self.embedder().id().to_string();
        let previous = store.binding()?;
        let users = store.users()?;
        let mut report = ReembedReport {
            model: model.clone(),
            previous: previous.clone(),
            users: users.len(),
            ..ReembedReport::default()
        };
        let mut step = ReembedStep { done: 0, total: 0 };
        for user in &users {
            let missing = store.unembedded(user, &model, usize::MAX)?.len() as u64;
            step.total += missing;
            report.already_present += active_count(store, user)?.saturating_sub(missing);
        }
        progress(step);
        for user in &users {
            self.reembed_user(user, options.batch, &mut step, progress)?;
        }
        report.embedded = step.done;
        store.bind(&model, previous.as_deref())?;
        if options.drop_old {
            for user in &users {
                report.dropped += store.retain_vectors(user, &model)?;
            }
        }
        self.memories.drop_indexes();
        Ok(report)
    }

    /// Embed `user`'s memories without a vector in the embedder's space, a batch at a time.
    fn reembed_user(
        &self,
        user: &UserKey,
        batch: usize,
        step: &mut ReembedStep,
        progress: &mut dyn FnMut(ReembedStep),
    ) -> EngineResult<()> {
        let store = self.store();
        let model = self.embedder().id();
        let mut embedded: HashSet<MemoryId> = HashSet::new();
        loop {
            let ids = store.unembedded(user, model, batch)?;
            if ids.is_empty() {
                return Ok(());
            }
            // A store that lists a memory it was just given a vector for would loop forever.
            if let Some(id) = ids.iter().find(|id| embedded.contains(id)) {
                return Err(StoreError::Corrupt(format!(
                    "memory {id} still has no {model} vector after it was stored"
                ))
                .into());
            }
            let memories: Vec<_> = store
                .memories(user, &ids)?
                .into_iter()
                .filter(|m| m.is_active())
                .collect();
            let texts: Vec<String> = memories.iter().map(Memories::searchable_text).collect();
            let vectors = self.memories.embed_texts(&texts)?;
            let rows: Vec<VectorRow> = memories
                .iter()
                .zip(vectors)
                .map(|(m, vector)| VectorRow {
                    memory_id: m.id,
                    model: model.to_string(),
                    vector,
                })
                .collect();
            store.put_vectors(user, &rows)?;
            embedded.extend(ids);
            step.done += rows.len() as u64;
            step.total = step.total.max(step.done);
            progress(*step);
        }
    }
}

/// How many active memories `user` has.
fn active_count(store: &dyn Store, user: &UserKey) -> EngineResult<u64> {
    let page = store.list(user, &MemoryFilter::active(), Page::first(1))?;
    Ok(page.total as u64)
}
