//! LUFY loader (`lufy_sessions.json`) and the ROC AUC used to score importance signals on it.
//!
//! The file is a list of sessions `{system, user, session, turns: [{idx, speaker, utterance,
//! important: {annotator: 0|1}}], qa}`. A turn is the user's when its speaker is the session's
//! `user`; every other turn is the chatbot's ([`Role::Assistant`]). Annotations are kept for
//! user turns only (the study annotated user utterances; stray labels on bot turns are ignored).
//!
//! Defects follow the other loaders: a session that is not an object or has no `turns` array
//! is skipped; a turn that cannot be read is skipped; a null utterance (7 bot turns of the
//! published file) becomes an empty turn; an annotation value other than 0/1 is dropped. Each is recorded with its location (`sessions[3] (LUFY/Alexander/1) turns[5]`).

use std::collections::BTreeMap;
use std::path::Path;

use mnemos_core::{Metadata, Role};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Defect, DefectAction, Item, Question};
use crate::error::DatasetError;
use crate::json::{read_json_file, Node};

/// Annotators that must mark a turn important for the majority label ("at least 2 of 3").
pub const MAJORITY: usize = 2;

/// The loaded study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LufyDataset {
    pub sessions: Vec<LufySession>,
    pub defects: Vec<Defect>,
}

impl LufyDataset {
    /// The study as conversations for the streaming runner: one per chatbot and user (id
    /// `"<system>/<user>"`, in order of first appearance), holding that pair's sessions in
    /// session order, each a runner session named by its number. Items are labelled with
    /// [`turn_label`]; blank utterances are left out (the engine refuses empty turns). Items
    /// have no time: the file has none.
    pub fn conversations(&self) -> Vec<Conversation> {
        self.conversations_asking(false)
    }

    /// [`conversations`](Self::conversations) with every session's questions, asked after the
    /// conversation's last session (id `"<session id>/<qa id>"`, category `"session N"`). The file
    /// names no evidence turns, so a question's gold is every streamed user turn of its session:
    /// evidence metrics then only say that something of the right session was recalled, and
    /// answers are what to judge by.
    pub fn conversations_with_questions(&self) -> Vec<Conversation> {
        self.conversations_asking(true)
    }

    fn conversations_asking(&self, with_questions: bool) -> Vec<Conversation> {
        let mut order: Vec<(String, Vec<&LufySession>)> = Vec::new();
        for session in &self.sessions {
            let id = format!("{}/{}", session.system, session.user);
            match order.iter_mut().find(|(known, _)| *known == id) {
                Some((_, sessions)) => sessions.push(session),
                None => order.push((id, vec![session])),
            }
        }
        order
            .into_iter()
            .map(|(id, mut sessions)| {
                sessions.sort_by_key(|s| s.session);
                let items: Vec<Item> = sessions
                    .iter()
                    .flat_map(|session| {
                        session
                            .turns
                            .iter()
                            .filter(|t| !t.utterance.trim().is_empty())
                            .map(|turn| Item {
                                label: turn_label(session, turn),
                                role: turn.role,
                                speaker: Some(turn.speaker.clone()),
                                text: turn.utterance.clone(),
                                time: None,
                                session: session.session.to_string(),
                                metadata: Metadata::new(),
                            })
                    })
                    .collect();
                let questions = if with_questions {
                    session_questions(&sessions, items.len())
                } else {
                    Vec::new()
                };
                Conversation {
                    id,
                    items,
                    questions,
                }
            })
            .collect()
    }
}

/// The questions of `sessions`, asked after `after_item` items; sessions without a streamed
/// user turn have no gold and ask nothing.
fn session_questions(sessions: &[&LufySession], after_item: usize) -> Vec<Question> {
    let mut out = Vec::new();
    for session in sessions {
        let gold: Vec<String> = session
            .turns
            .iter()
            .filter(|t| t.role == Role::User && !t.utterance.trim().is_empty())
            .map(|t| turn_label(session, t))
            .collect();
        if gold.is_empty() {
            continue;
        }
        for qa in &session.qa {
            out.push(Question {
                id: format!("{}/{}", session.id(), qa.id),
                text: qa.question.clone(),
                answer: Some(qa.answer.clone()),
                gold: gold.clone(),
                category: format!("session {}", session.session),
                memory_type: None,
                after_item,
                time: None,
                choices: Vec::new(),
                correct_choice: None,
                as_of: None,
                metadata: Metadata::new(),
            });
        }
    }
    out
}

/// The item label of a turn in [`LufyDataset::conversations`]: `"<session id>/<idx>"`.
pub fn turn_label(session: &LufySession, turn: &LufyTurn) -> String {
    format!("{}/{}", session.id(), turn.idx)
}

/// One session of one user with one chatbot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LufySession {
    /// "LUFY", "MemoryBank" or "Naive RAG".
    pub system: String,
    pub user: String,
    pub session: u64,
    /// The session's `annotators` list, else every annotator named in its labels.
    pub annotators: Vec<String>,
    /// In conversation order.
    pub turns: Vec<LufyTurn>,
    /// The questions the user wrote about this session (3 per session in the published file).
    #[serde(default)]
    pub qa: Vec<LufyQa>,
}

/// A question a participant wrote about one of their sessions, with its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LufyQa {
    pub id: String,
    pub question: String,
    pub answer: String,
}

impl LufySession {
    /// "LUFY/Alexander/1".
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.system, self.user, self.session)
    }

    /// The majority label of a turn of this session (see [`LufyTurn::majority_important`]).
    pub fn label(&self, turn: &LufyTurn) -> Option<bool> {
        turn.majority_important(self.annotators.len())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LufyTurn {
    pub idx: i64,
    pub speaker: String,
    pub role: Role,
    pub utterance: String,
    /// Annotator → marked important (user turns only; empty for bot turns).
    pub important: BTreeMap<String, bool>,
}

impl LufyTurn {
    /// `Some(true)` when at least [`MAJORITY`] annotators marked the turn important,
    /// `Some(false)` when at least `annotators − MAJORITY + 1` did not (so it cannot reach the
    /// majority), `None` while too few annotations decide it (user turns only).
    pub fn majority_important(&self, annotators: usize) -> Option<bool> {
        if self.role != Role::User {
            return None;
        }
        let yes = self.important.values().filter(|v| **v).count();
        let no = self.important.len() - yes;
        if yes >= MAJORITY {
            Some(true)
        } else if no + MAJORITY > annotators.max(MAJORITY) {
            Some(false)
        } else {
            None
        }
    }
}

#[derive(Deserialize)]
struct RawTurn {
    idx: serde_json::Value,
    speaker: String,
    /// Required, but null in a few bot turns of the published file.
    utterance: Option<String>,
    #[serde(default)]
    important: Option<BTreeMap<String, serde_json::Value>>,
}

pub fn load_lufy(path: &Path) -> Result<LufyDataset, DatasetError> {
    let root = read_json_file(path)?;
    let sessions = root.as_array().ok_or_else(|| {
        DatasetError::structure(
            path,
            "top level",
            format!("expected an array of sessions, found {}", root.kind()),
        )
    })?;
    let mut dataset = LufyDataset {
        sessions: Vec::new(),
        defects: Vec::new(),
    };
    for (index, node) in sessions.iter().enumerate() {
        if let Some(session) = load_session(&mut dataset.defects, index, node) {
            dataset.sessions.push(session);
        }
    }
    Ok(dataset)
}

fn defect(defects: &mut Vec<Defect>, location: String, problem: String, action: DefectAction) {
    defects.push(Defect {
        location,
        problem,
        action,
    });
}

fn load_session(defects: &mut Vec<Defect>, index: usize, node: &Node) -> Option<LufySession> {
    let mut location = format!("sessions[{index}]");
    if node.as_object().is_none() {
        defect(
            defects,
            location,
            format!("expected a session object, found {}", node.kind()),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let text = |key: &str| node.get(key).and_then(Node::scalar_text);
    let (Some(system), Some(user)) = (text("system"), text("user")) else {
        defect(
            defects,
            location,
            "session without `system` or `user`".into(),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let session = text("session").and_then(|s| s.parse::<u64>().ok());
    let Some(session) = session else {
        defect(
            defects,
            location,
            "session without a numeric `session`".into(),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    location = format!("{location} ({system}/{user}/{session})");
    let Some(turn_nodes) = node.get("turns").and_then(Node::as_array) else {
        defect(
            defects,
            location,
            "missing or non-array `turns`".into(),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let mut turns = Vec::with_capacity(turn_nodes.len());
    for (turn_index, turn_node) in turn_nodes.iter().enumerate() {
        let turn_location = format!("{location} turns[{turn_index}]");
        if let Some(turn) = load_turn(defects, &turn_location, turn_node, &user) {
            turns.push(turn);
        }
    }
    let annotators = session_annotators(node, &turns);
    let qa = load_qa(defects, &location, node);
    Some(LufySession {
        system,
        user,
        session,
        annotators,
        turns,
        qa,
    })
}

/// One turn; the speaker named `user` is the user, anyone else the bot. `None` (with a
/// defect) when the turn cannot be read.
fn load_turn(
    defects: &mut Vec<Defect>,
    turn_location: &str,
    turn_node: &Node,
    user: &str,
) -> Option<LufyTurn> {
    if turn_node.as_object().is_some() && turn_node.get("utterance").is_none() {
        defect(
            defects,
            turn_location.to_string(),
            "missing field `utterance`".into(),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let raw: RawTurn = match turn_node.parse() {
        Ok(raw) => raw,
        Err(problem) => {
            defect(
                defects,
                turn_location.to_string(),
                problem,
                DefectAction::SkippedRecord,
            );
            return None;
        }
    };
    let Some(idx) = raw.idx.as_i64() else {
        defect(
            defects,
            turn_location.to_string(),
            format!("`idx` is not an integer: {}", raw.idx),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let utterance = raw.utterance.unwrap_or_else(|| {
        defect(
            defects,
            turn_location.to_string(),
            "utterance is null; kept as an empty turn".into(),
            DefectAction::Kept,
        );
        String::new()
    });
    let role = if raw.speaker == user {
        Role::User
    } else {
        Role::Assistant
    };
    // Only user turns were annotated; whatever a bot turn carries is ignored.
    let important = if role == Role::User {
        important_annotations(defects, turn_location, raw.important.unwrap_or_default())
    } else {
        BTreeMap::new()
    };
    Some(LufyTurn {
        idx,
        speaker: raw.speaker,
        role,
        utterance,
        important,
    })
}

/// The session's questions; one without a question or an answer text is skipped as a defect.
fn load_qa(defects: &mut Vec<Defect>, location: &str, node: &Node) -> Vec<LufyQa> {
    let Some(items) = node.get("qa").and_then(Node::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let text = |key: &str| {
            item.get(key)
                .and_then(Node::scalar_text)
                .filter(|t| !t.trim().is_empty())
        };
        match (text("question"), text("answer")) {
            (Some(question), Some(answer)) => out.push(LufyQa {
                id: text("id").unwrap_or_else(|| format!("Q{}", index + 1)),
                question,
                answer,
            }),
            _ => defect(
                defects,
                format!("{location} qa[{index}]"),
                "question without a `question` or an `answer` text".into(),
                DefectAction::SkippedRecord,
            ),
        }
    }
    out
}

/// Annotator → important, from the 0/1 marks of a user turn; any other mark is dropped as a
/// defect.
fn important_annotations(
    defects: &mut Vec<Defect>,
    turn_location: &str,
    marks: BTreeMap<String, serde_json::Value>,
) -> BTreeMap<String, bool> {
    let mut important = BTreeMap::new();
    for (annotator, value) in marks {
        match value.as_u64() {
            Some(0) => {
                important.insert(annotator, false);
            }
            Some(1) => {
                important.insert(annotator, true);
            }
            _ => defect(
                defects,
                format!("{turn_location} important.{annotator}"),
                format!("expected 0 or 1, found {value}; annotation dropped"),
                DefectAction::Kept,
            ),
        }
    }
    important
}

/// The session's `annotators`, or when it lists none, everyone who marked a turn (sorted).
fn session_annotators(node: &Node, turns: &[LufyTurn]) -> Vec<String> {
    let annotators: Vec<String> = node
        .get("annotators")
        .and_then(Node::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Node::scalar_text)
        .collect();
    if !annotators.is_empty() {
        return annotators;
    }
    let named: std::collections::BTreeSet<&String> =
        turns.iter().flat_map(|t| t.important.keys()).collect();
    named.into_iter().cloned().collect()
}

/// Area under the ROC curve of `scores` against `labels` (true = positive), by the rank
/// statistic (Mann–Whitney U): tied scores share their average rank, so a tie between a
/// positive and a negative counts one half. `None` without both classes or with a non-finite
/// score.
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let positives = labels.iter().filter(|l| **l).count();
    let negatives = labels.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut pairs: Vec<(f64, bool)> = scores.iter().copied().zip(labels.iter().copied()).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_positive = 0.0;
    let mut before = 0usize;
    for group in pairs.chunk_by(|a, b| a.0 == b.0) {
        // 1-based ranks before+1 ..= before+len share their mean.
        let mean_rank = (2 * before + 1 + group.len()) as f64 / 2.0;
        let tied_positives = group.iter().filter(|(_, label)| *label).count();
        rank_sum_positive += mean_rank * tied_positives as f64;
        before += group.len();
    }
    let p = positives as f64;
    let u = rank_sum_positive - p * (p + 1.0) / 2.0;
    Some(u / (p * negatives as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn sessions_become_one_conversation_per_system_and_user() {
        let turn = |idx: i64, role: Role, text: &str| LufyTurn {
            idx,
            speaker: if role == Role::User { "Ann" } else { "Bot" }.to_string(),
            role,
            utterance: text.to_string(),
            important: BTreeMap::new(),
        };
        let session = |system: &str, number: u64, turns: Vec<LufyTurn>| LufySession {
            qa: Vec::new(),
            system: system.to_string(),
            user: "Ann".to_string(),
            session: number,
            annotators: Vec::new(),
            turns,
        };
        let dataset = LufyDataset {
            sessions: vec![
                session(
                    "LUFY",
                    2,
                    vec![turn(1, Role::User, "later"), turn(2, Role::Assistant, "")],
                ),
                session("Naive RAG", 1, vec![turn(1, Role::User, "other bot")]),
                session(
                    "LUFY",
                    1,
                    vec![turn(1, Role::Assistant, "hi"), turn(2, Role::User, "hello")],
                ),
            ],
            defects: Vec::new(),
        };
        let conversations = dataset.conversations();
        let ids: Vec<&str> = conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["LUFY/Ann", "Naive RAG/Ann"]);
        let lufy = &conversations[0];
        let labels: Vec<&str> = lufy.items.iter().map(|i| i.label.as_str()).collect();
        // Session 1 first; the blank bot turn of session 2 is left out.
        assert_eq!(labels, ["LUFY/Ann/1/1", "LUFY/Ann/1/2", "LUFY/Ann/2/1"]);
        let sessions: Vec<&str> = lufy.items.iter().map(|i| i.session.as_str()).collect();
        assert_eq!(sessions, ["1", "1", "2"]);
        assert_eq!(lufy.items[1].role, Role::User);
        assert_eq!(lufy.items[1].speaker.as_deref(), Some("Ann"));
        assert_eq!(
            turn_label(&dataset.sessions[0], &dataset.sessions[0].turns[0]),
            "LUFY/Ann/2/1"
        );
    }

    #[test]
    fn auc_by_ranks_with_ties() {
        assert_eq!(
            roc_auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
            Some(0.75)
        );
        assert_eq!(roc_auc(&[1.0, 2.0], &[false, true]), Some(1.0));
        assert_eq!(roc_auc(&[1.0, 2.0], &[true, false]), Some(0.0));
        // All tied: chance.
        assert_eq!(roc_auc(&[3.0; 4], &[true, false, true, false]), Some(0.5));
        // One positive tied with one of two negatives: (1 + 0.5) / 2.
        assert_eq!(roc_auc(&[1.0, 1.0, 0.0], &[true, false, false]), Some(0.75));
        assert_eq!(roc_auc(&[1.0], &[true]), None);
        assert_eq!(roc_auc(&[f64::NAN, 1.0], &[true, false]), None);
    }

    #[test]
    fn majority_label() {
        let turn = |votes: &[(&str, bool)]| LufyTurn {
            idx: 1,
            speaker: "u".into(),
            role: Role::User,
            utterance: "x".into(),
            important: votes.iter().map(|(a, v)| (a.to_string(), *v)).collect(),
        };
        assert_eq!(
            turn(&[("a", true), ("b", true), ("c", false)]).majority_important(3),
            Some(true)
        );
        assert_eq!(
            turn(&[("a", true), ("b", false), ("c", false)]).majority_important(3),
            Some(false)
        );
        assert_eq!(
            turn(&[("a", false), ("b", false)]).majority_important(3),
            Some(false)
        );
        assert_eq!(turn(&[("a", false)]).majority_important(3), None);
        assert_eq!(turn(&[("a", true)]).majority_important(3), None);
    }

    #[test]
    fn malformed_records_are_reported_with_their_location() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        let json = r#"[
          {"system": "LUFY", "user": "Ann", "session": 1, "turns": [
            {"idx": 0, "speaker": "Bot", "utterance": "Hi Ann!", "important": {}},
            {"idx": 1, "speaker": "Ann", "utterance": "I moved to Kyoto.",
             "important": {"A0": 1, "A1": 1, "A2": "yes"}},
            {"idx": 2, "speaker": "Bot"},
            {"idx": 2, "speaker": "Bot", "utterance": null},
            {"idx": 3, "speaker": "Ann", "utterance": "ok", "important": {"A0": 0, "A1": 0, "A2": 0}}
          ]},
          {"system": "LUFY", "user": "Bob"},
          42
        ]"#;
        file.write_all(json.as_bytes()).expect("write");
        let dataset = load_lufy(file.path()).expect("load");
        assert_eq!(dataset.sessions.len(), 1);
        let session = &dataset.sessions[0];
        assert_eq!(session.id(), "LUFY/Ann/1");
        assert_eq!(session.turns.len(), 4);
        assert_eq!(session.turns[0].role, Role::Assistant);
        assert_eq!(session.annotators, ["A0", "A1", "A2"]);
        assert_eq!(session.label(&session.turns[1]), Some(true));
        assert_eq!(session.turns[2].utterance, "");
        assert_eq!(session.label(&session.turns[3]), Some(false));
        let locations: Vec<&str> = dataset
            .defects
            .iter()
            .map(|d| d.location.as_str())
            .collect();
        assert_eq!(
            locations,
            [
                "sessions[0] (LUFY/Ann/1) turns[1] important.A2",
                "sessions[0] (LUFY/Ann/1) turns[2]",
                "sessions[0] (LUFY/Ann/1) turns[3]",
                "sessions[1]",
                "sessions[2]",
            ]
        );
        assert!(
            dataset.defects[1].problem.contains("utterance"),
            "{}",
            dataset.defects[1]
        );
        assert!(load_lufy(Path::new("/nonexistent/lufy.json")).is_err());
    }

    #[test]
    fn loads_the_real_file() -> Result<(), mnemos_testkit::data::MissingData> {
        let Some(path) = mnemos_testkit::data::dataset("lufy/lufy_sessions.json")? else {
            return Ok(());
        };
        let dataset = load_lufy(&path).expect("load LUFY");
        assert_eq!(dataset.sessions.len(), 204);
        // The published file has 7 bot turns with a null utterance; nothing else is odd.
        assert_eq!(dataset.defects.len(), 7, "{:?}", dataset.defects);
        assert!(dataset
            .defects
            .iter()
            .all(|d| d.action == DefectAction::Kept && d.problem.contains("null")));
        assert!(dataset.sessions.iter().all(|s| s.annotators.len() == 3));
        let users: usize = dataset
            .sessions
            .iter()
            .flat_map(|s| &s.turns)
            .filter(|t| t.role == Role::User)
            .count();
        assert_eq!(users, 6470);
        let labelled: usize = dataset
            .sessions
            .iter()
            .map(|s| s.turns.iter().filter(|t| s.label(t).is_some()).count())
            .sum();
        assert_eq!(labelled, users);
        // Every session has its three questions, asked after the conversation.
        assert!(dataset.sessions.iter().all(|s| s.qa.len() == 3));
        let conversations = dataset.conversations_with_questions();
        let questions: Vec<&Question> = conversations.iter().flat_map(|c| &c.questions).collect();
        assert_eq!(questions.len(), 612);
        for conversation in &conversations {
            for question in &conversation.questions {
                assert_eq!(question.after_item, conversation.items.len());
                assert!(!question.gold.is_empty() && question.answer.is_some());
            }
        }
        Ok(())
    }
}
