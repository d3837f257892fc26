//! What does a user's memory hold, and how did it change? Read-side views over an [`Engine`]
//! for the inspector and the CLI: an overview, listings filtered by text and sorted, a turn
//! among its neighbours, retention over rounds, and why a memory was forgotten
//! ([`ForgetCause`]). They read through the engine's public API ([`Inspect`], implemented for
//! [`Engine`]); nothing here writes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use mnemos_core::{
    Error as CoreError, KindTag, Memory, MemoryFilter, MemoryId, MemoryState, Moment, Page, Paged,
    StateFilter, StoreRead, Turn, TurnId, UserKey,
};

use mnemos_engine::{Engine, EngineResult, JobState};

/// Who forgot a memory: the typed cause every forget stores with the memory's state.
pub use mnemos_core::ForgetCause;

/// The order of a memory listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySort {
    /// Creation order (round, time, id): the store's own.
    #[default]
    Oldest,
    /// Newest first.
    Newest,
    /// Highest importance first; memories without one last; ties newest first.
    Importance,
}

impl MemorySort {
    pub const NAMES: [&'static str; 3] = ["oldest", "newest", "importance"];

    /// The sort named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "oldest" => Some(MemorySort::Oldest),
            "newest" => Some(MemorySort::Newest),
            "importance" => Some(MemorySort::Importance),
            _ => None,
        }
    }
}

/// A listing: the store's filter, an optional text filter and an order.
#[derive(Clone, Debug, Default)]
pub struct Browse {
    pub filter: MemoryFilter,
    /// Case-insensitive substring of the memory's text.
    pub text: Option<String>,
    pub sort: MemorySort,
}

/// Active and forgotten memories of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateCounts {
    pub active: usize,
    pub forgotten: usize,
}

/// Unfinished jobs by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JobCounts {
    pub pending: usize,
    pub failed: usize,
    pub stuck: usize,
}

/// One user at a glance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserOverview {
    pub turns: usize,
    /// Distinct (agent, session) pairs of the user's turns.
    pub sessions: usize,
    /// Agents of the user's turns and memories, sorted.
    pub agents: Vec<String>,
    /// Every kind that has a memory, in any state.
    pub memories: BTreeMap<KindTag, StateCounts>,
    /// The latest moment a turn was said or a memory created.
    pub last_activity: Option<Moment>,
    pub jobs: JobCounts,
}

/// A turn with its own memory, when one exists.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnEntry {
    pub turn: Turn,
    pub memory_id: Option<MemoryId>,
}

/// A turn among the turns said before and after it in its session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnContext {
    pub turn: TurnEntry,
    /// Oldest first.
    pub before: Vec<TurnEntry>,
    pub after: Vec<TurnEntry>,
}

/// Memories created and forgotten up to one round (cumulative).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionPoint {
    pub round: u64,
    pub active: usize,
    pub created: usize,
    pub forgotten: usize,
}

/// How many memories were kept over the rounds, and who forgot the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Retention {
    pub last_round: u64,
    pub series: Vec<RetentionPoint>,
    /// Forgotten memories by [`ForgetCause::key`].
    pub forgotten_by: BTreeMap<String, usize>,
}

/// Turns read per store call when all of a user's turns are needed.
const TURN_PAGE: usize = 5_000;

/// Every turn of `user`, ordered by round, time, then id.
fn all_turns(store: &dyn StoreRead, user: &UserKey) -> EngineResult<Vec<Turn>> {
    let mut out = Vec::new();
    let mut page = Page::first(TURN_PAGE);
    loop {
        let listed = store.turns(user, page)?;
        out.extend(listed.items);
        match listed.next_offset {
            Some(next) => page.offset = next,
            None => break,
        }
    }
    out.sort_by_key(|t| (t.at.round, t.at.time, t.id));
    Ok(out)
}

/// `memories` in `sort` order (they come in creation order).
fn sorted(mut memories: Vec<Memory>, sort: MemorySort) -> Vec<Memory> {
    match sort {
        MemorySort::Oldest => {}
        MemorySort::Newest => memories.reverse(),
        MemorySort::Importance => {
            memories.reverse();
            // Stable: equal importance stays newest first.
            memories.sort_by(|a, b| match (a.metrics.importance, b.metrics.importance) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
        }
    }
    memories
}

/// Does `text` hold `needle` (already lowercased), ignoring case?
fn holds(text: &str, needle: &str) -> bool {
    text.to_lowercase().contains(needle)
}

/// Evenly spaced items of `items`, at most `points` of them, first and last always kept.
fn downsample<T: Copy>(items: &[T], points: usize) -> Vec<T> {
    let n = items.len();
    if n <= points || points < 2 {
        return items.to_vec();
    }
    let mut picked: Vec<usize> = (0..points).map(|i| i * (n - 1) / (points - 1)).collect();
    picked.dedup();
    picked
        .into_iter()
        .filter_map(|i| items.get(i).copied())
        .collect()
}

/// Cumulative counts per round where something changed, from (created, forgotten) rounds.
fn retention_series(events: &[(u64, Option<u64>)]) -> Vec<RetentionPoint> {
    let mut per_round: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for &(created, forgotten) in events {
        per_round.entry(created).or_default().0 += 1;
        if let Some(at) = forgotten {
            // A forget never counts before its memory exists.
            per_round.entry(at.max(created)).or_default().1 += 1;
        }
    }
    let (mut created, mut forgotten) = (0, 0);
    per_round
        .into_iter()
        .map(|(round, (new, gone))| {
            created += new;
            forgotten += gone;
            RetentionPoint {
                round,
                active: created - forgotten,
                created,
                forgotten,
            }
        })
        .collect()
}

/// The inspector's reads, as methods on the engine (`use mnemos_inspect::Inspect`).
pub trait Inspect {
    /// A page of `user`'s memories under `browse`'s filter, text filter and order; `total`
    /// counts every match.
    fn browse(&self, user: &UserKey, browse: &Browse, page: Page) -> EngineResult<Paged<Memory>>;

    /// Counts of `user`'s turns, sessions, memories per kind and state, and unfinished jobs.
    fn overview(&self, user: &UserKey) -> EngineResult<UserOverview>;

    /// Turn `id` with up to `around` turns of its agent and session on each side (ordered by
    /// round, time, then id), each with its own memory when one exists.
    fn turn_in_context(
        &self,
        user: &UserKey,
        id: TurnId,
        around: usize,
    ) -> EngineResult<TurnContext>;

    /// Memories created and forgotten over `user`'s rounds (one agent's, or all), one point
    /// per round where something changed, evenly thinned to at most `points` (first and last
    /// kept), and the forgotten ones by cause.
    fn retention(
        &self,
        user: &UserKey,
        agent: Option<&str>,
        points: usize,
    ) -> EngineResult<Retention>;
}

impl Inspect for Engine {
    /// A page of `user`'s memories under `browse`'s filter, text filter and order; `total`
    /// counts every match.
    fn browse(&self, user: &UserKey, browse: &Browse, page: Page) -> EngineResult<Paged<Memory>> {
        let page = page.validate()?;
        let needle = browse
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_lowercase);
        if needle.is_none() && browse.sort == MemorySort::Oldest {
            return self.list(user, &browse.filter, page);
        }
        let mut all = self.reader().store().list_all(user, &browse.filter)?;
        if let Some(needle) = &needle {
            all.retain(|m| holds(&m.text, needle));
        }
        Ok(Paged::from_sorted(sorted(all, browse.sort), page))
    }

    /// Counts of `user`'s turns, sessions, memories per kind and state, and unfinished jobs.
    fn overview(&self, user: &UserKey) -> EngineResult<UserOverview> {
        let store = self.reader().store();
        let turns = all_turns(store, user)?;
        let memories = store.list_all(
            user,
            &MemoryFilter {
                state: StateFilter::All,
                ..MemoryFilter::default()
            },
        )?;
        let sessions: BTreeSet<(&str, &str)> = turns
            .iter()
            .map(|t| (t.scope.agent.as_str(), t.scope.session.as_str()))
            .collect();
        let agents: BTreeSet<&str> = turns
            .iter()
            .map(|t| t.scope.agent.as_str())
            .chain(memories.iter().map(|m| m.scope.agent.as_str()))
            .collect();
        let mut by_kind: BTreeMap<KindTag, StateCounts> = BTreeMap::new();
        for memory in &memories {
            let counts = by_kind.entry(memory.kind.tag()).or_default();
            match memory.is_active() {
                true => counts.active += 1,
                false => counts.forgotten += 1,
            }
        }
        let last_activity = turns
            .iter()
            .map(|t| t.at)
            .chain(memories.iter().map(|m| m.created))
            .max();
        Ok(UserOverview {
            turns: turns.len(),
            sessions: sessions.len(),
            agents: agents.into_iter().map(str::to_string).collect(),
            memories: by_kind,
            last_activity,
            jobs: job_counts(self, user)?,
        })
    }

    /// Turn `id` with up to `around` turns of its agent and session on each side (ordered by
    /// round, time, then id), each with its own memory when one exists.
    fn turn_in_context(
        &self,
        user: &UserKey,
        id: TurnId,
        around: usize,
    ) -> EngineResult<TurnContext> {
        let turn = self.turn(user, id)?;
        let session: Vec<Turn> = all_turns(self.reader().store(), user)?
            .into_iter()
            .filter(|t| t.scope.agent == turn.scope.agent && t.scope.session == turn.scope.session)
            .collect();
        let at = session
            .iter()
            .position(|t| t.id == id)
            .ok_or_else(|| CoreError::not_found("turn", id))?;
        let own = turn_memories(self, user, &turn)?;
        let entry = |t: &Turn| TurnEntry {
            turn: t.clone(),
            memory_id: own.get(&t.id).copied(),
        };
        let start = at.saturating_sub(around);
        let end = at
            .saturating_add(around)
            .saturating_add(1)
            .min(session.len());
        Ok(TurnContext {
            turn: entry(&turn),
            before: session[start..at].iter().map(entry).collect(),
            after: session[at + 1..end].iter().map(entry).collect(),
        })
    }

    /// Memories created and forgotten over `user`'s rounds (one agent's, or all), one point
    /// per round where something changed, evenly thinned to at most `points` (first and last
    /// kept), and the forgotten ones by cause.
    fn retention(
        &self,
        user: &UserKey,
        agent: Option<&str>,
        points: usize,
    ) -> EngineResult<Retention> {
        let filter = MemoryFilter {
            agent: agent.map(str::to_string),
            state: StateFilter::All,
            ..MemoryFilter::default()
        };
        let memories = self.reader().store().list_all(user, &filter)?;
        let mut forgotten_by: BTreeMap<String, usize> = BTreeMap::new();
        let events: Vec<(u64, Option<u64>)> = memories
            .iter()
            .map(|m| match &m.state {
                MemoryState::Active => (m.created.round, None),
                MemoryState::Forgotten { at, cause, .. } => {
                    *forgotten_by.entry(cause.key().to_string()).or_default() += 1;
                    (m.created.round, Some(at.round))
                }
            })
            .collect();
        let series = retention_series(&events);
        let last_change = series.last().map_or(0, |p| p.round);
        let last_round = self
            .reader()
            .store()
            .last_round(user)?
            .unwrap_or(0)
            .max(last_change);
        Ok(Retention {
            last_round,
            series: downsample(&series, points),
            forgotten_by,
        })
    }
}

fn job_counts(engine: &Engine, user: &UserKey) -> EngineResult<JobCounts> {
    let mut counts = JobCounts::default();
    for job in engine.pending_jobs(Some(user))? {
        match job.state {
            JobState::Pending => counts.pending += 1,
            JobState::Failed => counts.failed += 1,
            JobState::Stuck => counts.stuck += 1,
        }
    }
    Ok(counts)
}

/// The turn memories of `turn`'s agent and session, by the turn they hold.
fn turn_memories(
    engine: &Engine,
    user: &UserKey,
    turn: &Turn,
) -> EngineResult<HashMap<TurnId, MemoryId>> {
    let filter = MemoryFilter {
        kinds: vec![KindTag::Turn],
        agent: Some(turn.scope.agent.clone()),
        session: Some(turn.scope.session.clone()),
        state: StateFilter::All,
        ..MemoryFilter::default()
    };
    Ok(engine
        .reader()
        .store()
        .list_all(user, &filter)?
        .into_iter()
        .filter_map(|m| match m.provenance.as_slice() {
            [turn] => Some((*turn, m.id)),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use mnemos_core::{MemoryStore, Scope};
    use mnemos_embed::HashEmbedder;
    use mnemos_engine::{EngineConfig, NewTurn};
    use mnemos_offline::OfflineModel;

    /// An engine over the in-memory store running the `retrieval` preset, jobs inline.
    fn test_engine() -> Engine {
        let embedder = Arc::new(HashEmbedder::default());
        let model = Arc::new(OfflineModel::new(embedder.clone()));
        Engine::builder(Arc::new(MemoryStore::new()), embedder, model)
            .presets(Arc::new(mnemos_presets::Presets))
            .config(EngineConfig::with_preset("retrieval"))
            .build()
            .unwrap()
    }

    fn user() -> UserKey {
        UserKey::new("t", "u").unwrap()
    }

    fn add(engine: &Engine, session: &str, texts: &[&str]) -> Vec<MemoryId> {
        let scope = Scope::new("t", "u", "bot", session).unwrap();
        let turns = texts
            .iter()
            .map(|t| NewTurn::user(scope.clone(), *t))
            .collect();
        let report = engine.add(turns).unwrap();
        report.turns.iter().filter_map(|t| t.memory_id()).collect()
    }

    #[test]
    fn a_persons_reason_naming_a_preset_is_still_a_request() {
        // The cause is stored with the forget, not read back out of the reason's words.
        let engine = test_engine();
        let ids = add(&engine, "s", &["a", "b", "c"]);
        engine
            .forget(&user(), ids[0], "memgpt: drop this, please")
            .unwrap();
        let forgotten = engine.get(&user(), ids[0]).unwrap();
        assert!(
            matches!(
                &forgotten.state,
                MemoryState::Forgotten {
                    cause: ForgetCause::Request,
                    ..
                }
            ),
            "{:?}",
            forgotten.state
        );
        let retention = engine.retention(&user(), None, 200).unwrap();
        assert_eq!(retention.forgotten_by.get("request"), Some(&1));
        assert_eq!(retention.forgotten_by.get("memgpt"), None);
    }

    #[test]
    fn sorts_by_importance_put_unrated_last_and_ties_newest_first() {
        let engine = test_engine();
        add(&engine, "s", &["a", "b", "c"]);
        let mut all = engine
            .reader()
            .all(&user(), &MemoryFilter::active())
            .unwrap();
        all[0].metrics.importance = Some(0.5);
        all[2].metrics.importance = Some(0.5);
        let texts = |v: Vec<Memory>| v.into_iter().map(|m| m.text).collect::<Vec<_>>();
        assert_eq!(
            texts(sorted(all.clone(), MemorySort::Importance)),
            ["c", "a", "b"]
        );
        assert_eq!(texts(sorted(all, MemorySort::Newest)), ["c", "b", "a"]);
    }

    #[test]
    fn browsing_filters_text_in_any_script_and_pages_every_match_once() {
        let engine = test_engine();
        add(
            &engine,
            "s",
            &["I love Coffee", "我喜欢咖啡", "tea please", "咖啡和COFFEE"],
        );
        let browse = |text: &str, sort, offset| {
            let b = Browse {
                text: Some(text.into()),
                sort,
                ..Browse::default()
            };
            engine
                .browse(&user(), &b, Page { offset, limit: 1 })
                .unwrap()
        };
        let first = browse("coffee", MemorySort::Newest, 0);
        assert_eq!(
            (first.total, first.items[0].text.as_str()),
            (2, "咖啡和COFFEE")
        );
        let second = browse("coffee", MemorySort::Newest, first.next_offset.unwrap());
        assert_eq!(second.items[0].text, "I love Coffee");
        assert_eq!(second.next_offset, None);
        assert_eq!(browse("咖啡", MemorySort::Oldest, 0).total, 2);
    }

    #[test]
    fn neighbours_stay_in_the_session_and_carry_their_memories() {
        let engine = test_engine();
        add(&engine, "s1", &["one", "two", "three", "four"]);
        add(&engine, "s2", &["elsewhere"]);
        let turns = all_turns(engine.reader().store(), &user()).unwrap();
        let context = engine.turn_in_context(&user(), turns[1].id, 1).unwrap();
        let texts = |v: &[TurnEntry]| v.iter().map(|t| t.turn.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&context.before), ["one"]);
        assert_eq!(texts(&context.after), ["three"]);
        assert!(context.turn.memory_id.is_some());
        let last = engine.turn_in_context(&user(), turns[3].id, 50).unwrap();
        assert_eq!((last.before.len(), last.after.len()), (3, 0));
    }

    #[test]
    fn retention_is_cumulative_and_counts_causes() {
        let engine = test_engine();
        let ids = add(&engine, "s", &["a", "b", "c", "d"]);
        engine.forget(&user(), ids[0], "outdated").unwrap();
        let retention = engine.retention(&user(), None, 200).unwrap();
        let last = retention.series.last().unwrap();
        assert_eq!((last.created, last.forgotten, last.active), (4, 1, 3));
        assert_eq!(retention.forgotten_by.get("request"), Some(&1));
        assert_eq!(retention.last_round, 3);
        let thin = engine.retention(&user(), None, 2).unwrap();
        assert_eq!(thin.series.len(), 2);
        assert_eq!(thin.series[0], retention.series[0]);
        assert_eq!(thin.series[1], *last);
    }

    #[test]
    fn downsampling_keeps_the_ends() {
        let items: Vec<u32> = (0..10).collect();
        assert_eq!(downsample(&items, 3), [0, 4, 9]);
        assert_eq!(downsample(&items, 20), items);
    }

    #[test]
    fn overview_counts_kinds_states_and_sessions() {
        let engine = test_engine();
        let ids = add(&engine, "s1", &["a", "b"]);
        add(&engine, "s2", &["c"]);
        engine.forget(&user(), ids[0], "outdated").unwrap();
        let overview = engine.overview(&user()).unwrap();
        assert_eq!((overview.turns, overview.sessions), (3, 2));
        assert_eq!(overview.agents, ["bot"]);
        let turns = overview.memories[&KindTag::Turn];
        assert_eq!((turns.active, turns.forgotten), (2, 1));
        assert_eq!(overview.last_activity.map(|m| m.round), Some(2));
    }
}
