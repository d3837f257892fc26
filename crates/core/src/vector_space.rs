//! One database, one vector space: the rules, written once over the store capabilities. A
//! database is bound to the embedder id its vectors were made with; an engine opened with
//! another embedder refuses to start instead of searching vectors of another space (cosines
//! across two models mean nothing) or silently re-embedding everything. [`reembed`] is the one
//! way to move a database into another space: it embeds what the new space lacks in batches
//! committed as it goes (a rerun resumes), and moves the binding only once every memory has
//! its vector, so the old embedder keeps working until then. The engine runs both (it is the
//! only write path) and supplies the embedding.

use std::collections::HashSet;

use serde::Serialize;

use crate::error::{Conflict, Error, Result, StoreError};
use crate::model::{Memory, MemoryId, UserKey};
use crate::store::{MemoryFilter, Page, Store, StoreResult, VectorRow};

/// How an engine holds its database to one vector space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VectorSpace {
    /// The database must be in the embedder's space; one without a binding is bound to it when
    /// the engine is built (unless it holds more vectors of another space: then that space is
    /// its space). The default.
    #[default]
    Bound,
    /// Opened to move the database into the embedder's space ([`reembed`]): it may be bound to
    /// another space, and its binding moves only when the move is complete.
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
    /// `bound` opened with `opened`, with a way out in general words.
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

/// Hold `store` to `opened`'s space as `mode` says (see [`VectorSpace`]): `Ok(Some(_))` when it
/// is another space's. A database without a binding is bound to `opened` here.
pub fn check_space(
    store: &dyn Store,
    opened: &str,
    mode: VectorSpace,
) -> StoreResult<Option<SpaceMismatch>> {
    if mode != VectorSpace::Bound {
        return Ok(None);
    }
    let mut last = None;
    for _ in 0..BIND_ATTEMPTS {
        let bound = match store.binding()? {
            Some(bound) => bound,
            None => match legacy_space(store, opened)? {
                Some(other) => other,
                None => match store.bind(opened, None) {
                    Ok(()) => return Ok(None),
                    // Another engine bound it first: read what it chose.
                    Err(e @ StoreError::Conflict(Conflict::BindingMoved { .. })) => {
                        last = Some(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            },
        };
        return Ok((bound != opened).then(|| SpaceMismatch::new(&bound, opened)));
    }
    Err(last.unwrap_or_else(|| StoreError::Unavailable("the binding kept changing".into())))
}

/// The space an unbound database (new, or written before bindings) is in when it is not
/// `opened`'s: the space with the most vectors, if `opened` has fewer. `None`: bind it to
/// `opened` (no vectors, or most of them are `opened`'s).
fn legacy_space(store: &dyn Store, opened: &str) -> StoreResult<Option<String>> {
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

/// How [`reembed`] goes about it.
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

/// What [`reembed`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReembedReport {
    /// The space the database is now bound to.
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

/// The vectors of some memories in the new space, one per memory, in order.
pub type EmbedMemories<'a> = &'a dyn Fn(&[Memory]) -> Result<Vec<Vec<f32>>>;

/// Move `store` into `model`'s space: `embed` every active memory of every user that has no
/// vector there, committing each batch as it goes (a rerun after a crash skips what was
/// committed, and writes nothing twice), then bind the store to `model`. The binding moves
/// only when every memory has its vector; with `drop_old`, other spaces' vectors are deleted
/// after. `progress` hears after each batch.
///
/// Engines of the old space may keep writing meanwhile: what they write after its user was
/// moved gets its vector in the new space when an engine of that space first builds the user's
/// index. They keep their old space until restarted (the binding is checked when an engine is
/// built), so restart them after the move.
pub fn reembed(
    store: &dyn Store,
    model: &str,
    options: ReembedOptions,
    embed: EmbedMemories<'_>,
    progress: &mut dyn FnMut(ReembedStep),
) -> Result<ReembedReport> {
    if options.batch == 0 {
        return Err(Error::invalid("a reembed batch holds at least one memory"));
    }
    let previous = store.binding()?;
    let users = store.users()?;
    let mut report = ReembedReport {
        model: model.to_string(),
        previous: previous.clone(),
        users: users.len(),
        ..ReembedReport::default()
    };
    let mut step = ReembedStep { done: 0, total: 0 };
    for user in &users {
        let missing = store.unembedded(user, model, usize::MAX)?.len() as u64;
        step.total += missing;
        let active = store
            .list(user, &MemoryFilter::active(), Page::first(1))?
            .total;
        report.already_present += (active as u64).saturating_sub(missing);
    }
    progress(step);
    for user in &users {
        reembed_user(
            store,
            user,
            model,
            options.batch,
            embed,
            &mut step,
            progress,
        )?;
    }
    report.embedded = step.done;
    store.bind(model, previous.as_deref())?;
    if options.drop_old {
        for user in &users {
            report.dropped += store.retain_vectors(user, model)?;
        }
    }
    Ok(report)
}

/// Embed `user`'s memories without a vector in `model`'s space, a batch at a time.
fn reembed_user(
    store: &dyn Store,
    user: &UserKey,
    model: &str,
    batch: usize,
    embed: EmbedMemories<'_>,
    step: &mut ReembedStep,
    progress: &mut dyn FnMut(ReembedStep),
) -> Result<()> {
    let mut embedded: HashSet<MemoryId> = HashSet::new();
    loop {
        let ids = store.unembedded(user, model, batch)?;
        if ids.is_empty() {
            return Ok(());
        }
        // A store that lists a memory it was just given a vector for would loop forever.
        if let Some(id) = ids.iter().find(|id| embedded.contains(id)) {
            let message = format!("memory {id} still has no {model} vector after it was stored");
            return Err(StoreError::Corrupt(message).into());
        }
        let memories: Vec<Memory> = store
            .memories(user, &ids)?
            .into_iter()
            .filter(Memory::is_active)
            .collect();
        let rows: Vec<VectorRow> = memories
            .iter()
            .zip(embed(&memories)?)
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
