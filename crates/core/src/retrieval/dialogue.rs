//! The order of a user's turn memories within each dialogue session, so a search can lend a
//! turn part of its neighbours' scores (see [`RetrievalConfig::context`](super::RetrievalConfig)).
//!
//! Only a change of speaker links two turns: an exchange between two people, not a run of
//! records that merely share a session (PerLTQA's profile entries, a user's own notes).
//!
//! Many turns answer the one before them ("Coconut milk ice cream is at the top of my list"
//! after "What's your favourite dish from the show?"): the question carries the words a later
//! query uses, the answer carries the fact. Ranking the answer beside the question it answers
//! costs nothing at write time and one ordered-map lookup per candidate at read time.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use crate::model::{MemoryId, Moment};

/// A dialogue session: (agent, session).
type SessionKey = (String, String);

/// Where one turn memory sits: its session, its position in it, its speaker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Place {
    session: SessionKey,
    at: (Moment, MemoryId),
    speaker: Option<String>,
}

/// One turn memory's entry in a [`DialogueOrder`].
pub(crate) struct TurnPlace<'a> {
    pub agent: &'a str,
    pub session: &'a str,
    pub at: Moment,
    pub id: MemoryId,
    pub speaker: Option<&'a str>,
}

/// Turn memories in dialogue order, per (agent, session); only active turns are kept.
#[derive(Clone, Default)]
pub(crate) struct DialogueOrder {
    sessions: HashMap<SessionKey, BTreeMap<(Moment, MemoryId), u32>>,
    places: HashMap<u32, Place>,
    /// Every speaker name seen, with its analyzed terms (how a query names the speaker).
    speakers: HashMap<String, Vec<String>>,
}

impl DialogueOrder {
    /// `slot` holds the turn at `turn` (replacing its old place).
    pub(crate) fn insert(&mut self, slot: u32, turn: TurnPlace<'_>) {
        self.remove(slot);
        if let Some(name) = turn.speaker {
            if !self.speakers.contains_key(name) {
                let terms = mnemos_text::Analyzer::shared().search_terms(name);
                self.speakers.insert(name.to_string(), terms);
            }
        }
        let place = Place {
            session: (turn.agent.to_string(), turn.session.to_string()),
            at: (turn.at, turn.id),
            speaker: turn.speaker.map(str::to_string),
        };
        self.sessions
            .entry(place.session.clone())
            .or_default()
            .insert(place.at, slot);
        self.places.insert(slot, place);
    }

    /// `slot` no longer holds an active turn.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(place) = self.places.remove(&slot) else {
            return;
        };
        if let Some(order) = self.sessions.get_mut(&place.session) {
            order.remove(&place.at);
            if order.is_empty() {
                self.sessions.remove(&place.session);
            }
        }
    }

    /// The speaker of the turn in `slot`, if it names one.
    pub(crate) fn speaker(&self, slot: u32) -> Option<&str> {
        self.places.get(&slot)?.speaker.as_deref()
    }

    /// The speakers a query names: those whose analyzed name terms are all among `query_terms`.
    pub(crate) fn named_speakers(&self, query_terms: &[String]) -> Vec<&str> {
        self.speakers
            .iter()
            .filter(|(_, terms)| !terms.is_empty() && terms.iter().all(|t| query_terms.contains(t)))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The turns just before and just after `slot` in its session, each only when both it and
    /// `slot` name their speakers and the speakers differ (None otherwise, at either end of the
    /// session, or when `slot` is not a turn).
    pub(crate) fn neighbours(&self, slot: u32) -> [Option<u32>; 2] {
        let Some(place) = self.places.get(&slot) else {
            return [None, None];
        };
        let Some(order) = self.sessions.get(&place.session) else {
            return [None, None];
        };
        let answers = |other: u32| {
            let theirs = self.places.get(&other).and_then(|p| p.speaker.as_deref());
            matches!((place.speaker.as_deref(), theirs), (Some(a), Some(b)) if a != b)
        };
        let before = order.range(..place.at).next_back().map(|(_, &s)| s);
        let after = order
            .range((Bound::Excluded(place.at), Bound::Unbounded))
            .next()
            .map(|(_, &s)| s);
        [
            before.filter(|&s| answers(s)),
            after.filter(|&s| answers(s)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamp;

    fn turn<'a>(session: &'a str, round: u64, speaker: Option<&'a str>) -> TurnPlace<'a> {
        TurnPlace {
            agent: "a",
            session,
            at: Moment {
                round,
                time: Timestamp(0),
            },
            id: MemoryId::new(),
            speaker,
        }
    }

    #[test]
    fn neighbours_follow_dialogue_order_within_a_session() {
        let mut order = DialogueOrder::default();
        // Inserted out of order, and one turn in another session.
        order.insert(2, turn("s1", 3, Some("Ann")));
        order.insert(0, turn("s1", 1, Some("Ann")));
        order.insert(1, turn("s1", 2, Some("Bob")));
        order.insert(9, turn("s2", 2, Some("Bob")));
        assert_eq!(order.neighbours(0), [None, Some(1)]);
        assert_eq!(order.neighbours(1), [Some(0), Some(2)]);
        assert_eq!(order.neighbours(2), [Some(1), None]);
        assert_eq!(order.neighbours(9), [None, None]);
        assert_eq!(order.neighbours(5), [None, None]);

        order.remove(1);
        // Ann follows Ann: no exchange.
        assert_eq!(order.neighbours(0), [None, None]);
        assert_eq!(order.neighbours(1), [None, None]);
        // Moving a turn to another session takes it out of the first.
        order.insert(2, turn("s2", 3, Some("Ann")));
        assert_eq!(order.neighbours(9), [None, Some(2)]);
        assert_eq!(order.neighbours(2), [Some(9), None]);
    }

    #[test]
    fn turns_without_a_speaker_lend_nothing() {
        let mut order = DialogueOrder::default();
        order.insert(0, turn("s", 1, None));
        order.insert(1, turn("s", 2, Some("Ann")));
        order.insert(2, turn("s", 3, None));
        assert_eq!(order.neighbours(0), [None, None]);
        assert_eq!(order.neighbours(1), [None, None]);
    }
}
