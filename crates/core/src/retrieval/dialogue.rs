//! The order of a user's turn memories within each dialogue session, so a search can lend a
//! turn part of its neighbours' scores (see [`RetrievalConfig::context`](super::RetrievalConfig)).
//!
//! Only a change of speaker links two turns: an exchange between two people, not a run of
//! records that merely share a session (PerLTQA's profile entries, a user's own notes). A turn
//! that names no speaker speaks with its role, so a user's chat with an assistant is an
//! exchange too; a role answers only another role, and a name only another name.
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

/// Who said a turn: a named speaker, or the turn's role when it names none.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Voice {
    Named(String),
    Role(String),
}

/// Where one turn memory sits: its session, its position in it, who said it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Place {
    session: SessionKey,
    at: (Moment, MemoryId),
    voice: Option<Voice>,
}

/// One turn memory's entry in a [`DialogueOrder`].
pub(crate) struct TurnPlace<'a> {
    pub agent: &'a str,
    pub session: &'a str,
    pub at: Moment,
    pub id: MemoryId,
    pub speaker: Option<&'a str>,
    /// The turn's role (`user`, `assistant`…), which speaks for it when it names no speaker.
    pub role: Option<&'a str>,
}

/// Turn memories in dialogue order, per (agent, session); only active turns are kept.
///
/// Each turn's neighbours are kept beside it (slot-indexed) and updated on every insert and
/// removal, so a search reads them in constant time instead of walking the session's order
/// for every candidate.
#[derive(Clone, Default)]
pub(crate) struct DialogueOrder {
    sessions: HashMap<SessionKey, BTreeMap<(Moment, MemoryId), u32>>,
    /// Slot-indexed: where the slot's turn sits (`None`: no turn).
    places: Vec<Option<Place>>,
    /// Slot-indexed: the turns just before and after in the same session, whoever said them.
    adjacent: Vec<[Option<u32>; 2]>,
    /// Slot-indexed: `adjacent`, keeping only the turns that answer this one (see
    /// [`neighbours`](Self::neighbours)).
    exchange: Vec<[Option<u32>; 2]>,
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
        let voice = match (turn.speaker, turn.role) {
            (Some(name), _) => Some(Voice::Named(name.to_string())),
            (None, Some(role)) => Some(Voice::Role(role.to_string())),
            (None, None) => None,
        };
        let place = Place {
            session: (turn.agent.to_string(), turn.session.to_string()),
            at: (turn.at, turn.id),
            voice,
        };
        let order = self.sessions.entry(place.session.clone()).or_default();
        order.insert(place.at, slot);
        let before = order.range(..place.at).next_back().map(|(_, &s)| s);
        let after = order
            .range((Bound::Excluded(place.at), Bound::Unbounded))
            .next()
            .map(|(_, &s)| s);
        self.grow(slot);
        self.places[slot as usize] = Some(place);
        self.adjacent[slot as usize] = [before, after];
        if let Some(b) = before {
            self.adjacent[b as usize][1] = Some(slot);
        }
        if let Some(a) = after {
            self.adjacent[a as usize][0] = Some(slot);
        }
        for s in [Some(slot), before, after].into_iter().flatten() {
            self.refresh(s);
        }
    }

    /// `slot` no longer holds an active turn.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(place) = self.places.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        if let Some(order) = self.sessions.get_mut(&place.session) {
            order.remove(&place.at);
            if order.is_empty() {
                self.sessions.remove(&place.session);
            }
        }
        let [before, after] = std::mem::take(&mut self.adjacent[slot as usize]);
        self.exchange[slot as usize] = [None, None];
        if let Some(b) = before {
            self.adjacent[b as usize][1] = after;
        }
        if let Some(a) = after {
            self.adjacent[a as usize][0] = before;
        }
        for s in [before, after].into_iter().flatten() {
            self.refresh(s);
        }
    }

    fn grow(&mut self, slot: u32) {
        let n = slot as usize + 1;
        if self.places.len() < n {
            self.places.resize(n, None);
            self.adjacent.resize(n, [None, None]);
            self.exchange.resize(n, [None, None]);
        }
    }

    /// Recompute which of `slot`'s adjacent turns answer it.
    fn refresh(&mut self, slot: u32) {
        let place = self.places.get(slot as usize).and_then(Option::as_ref);
        let voice = place.and_then(|p| p.voice.as_ref());
        let answers = |other: Option<u32>| {
            let other = other?;
            let theirs = self.places.get(other as usize)?.as_ref()?.voice.as_ref();
            let differ = match (voice, theirs) {
                (Some(Voice::Named(a)), Some(Voice::Named(b))) => a != b,
                (Some(Voice::Role(a)), Some(Voice::Role(b))) => a != b,
                // A named turn beside an unnamed one: two sources side by side (a user's
                // messages between imported chats), not one conversation.
                _ => false,
            };
            differ.then_some(other)
        };
        let [before, after] = self.adjacent[slot as usize];
        self.exchange[slot as usize] = [answers(before), answers(after)];
    }

    /// The speaker of the turn in `slot`, if it names one.
    pub(crate) fn speaker(&self, slot: u32) -> Option<&str> {
        match &self.places.get(slot as usize)?.as_ref()?.voice {
            Some(Voice::Named(name)) => Some(name),
            _ => None,
        }
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
    /// `slot` say who spoke (a speaker, or else a role) and they differ (None otherwise, at
    /// either end of the session, or when `slot` is not a turn).
    pub(crate) fn neighbours(&self, slot: u32) -> [Option<u32>; 2] {
        self.exchange
            .get(slot as usize)
            .copied()
            .unwrap_or([None, None])
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
            role: None,
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
    fn turns_without_a_speaker_or_role_lend_nothing() {
        let mut order = DialogueOrder::default();
        order.insert(0, turn("s", 1, None));
        order.insert(1, turn("s", 2, Some("Ann")));
        order.insert(2, turn("s", 3, None));
        assert_eq!(order.neighbours(0), [None, None]);
        assert_eq!(order.neighbours(1), [None, None]);
    }

    #[test]
    fn a_user_and_an_assistant_without_names_are_an_exchange() {
        let mut order = DialogueOrder::default();
        let role = |round, role| TurnPlace {
            role: Some(role),
            ..turn("s", round, None)
        };
        order.insert(0, role(1, "user"));
        order.insert(1, role(2, "assistant"));
        order.insert(2, role(3, "assistant"));
        // A named speaker beside an unnamed turn is another source, not an answer.
        order.insert(3, turn("s", 4, Some("Bob")));
        order.insert(4, turn("s", 5, Some("Ann")));
        assert_eq!(order.neighbours(0), [None, Some(1)]);
        assert_eq!(order.neighbours(1), [Some(0), None]);
        assert_eq!(order.neighbours(2), [None, None]);
        assert_eq!(order.neighbours(3), [None, Some(4)]);
        // Roles are nobody a query can name.
        assert_eq!(order.speaker(0), None);
        assert!(order.named_speakers(&["user".to_string()]).is_empty());
    }
}
