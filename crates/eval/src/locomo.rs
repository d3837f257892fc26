//! LoCoMo loader (`locomo10*.json`).
//!
//! Items are the turns of every session, sessions in numeric order. `speaker_a` is mapped to
//! [`Role::User`] and `speaker_b` to [`Role::Assistant`]: LoCoMo is a chat between two people,
//! and the memory engine needs one side to be "the user" whose memories are being kept. A turn
//! is stamped with its session's time plus its index in seconds, so times strictly increase
//! within a session. Image turns get " [image: <blip_caption>]" appended, as images themselves
//! are not in the dataset.
//!
//! Adversarial questions (category 5) have no answer in the conversation and are excluded.
//! Evidence ids are normalized ("D8:6; D9:17" → two ids, "D30:05" → "D30:5"); ids that are
//! malformed or absent from the conversation are dropped as defects, and questions left without
//! evidence are skipped.
//!
//! [`load_locomo_observations`] reads the other supervision of the file: each conversation's
//! `observation` facts (`{"session_N_observation": {speaker: [[fact, evidence], …]}}`), the
//! references of MOOM's memory-extraction score on LoCoMo (its Appendix G).

use std::collections::HashSet;
use std::path::Path;

use mnemos_core::{Metadata, Role, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Defect, DefectAction, Item, Question, RetrievalDataset};
use crate::error::DatasetError;
use crate::json::{read_json_file, Node};
use crate::text::parse_locomo_time;

/// Reason key in [`RetrievalDataset::excluded`] for category-5 questions.
pub const EXCLUDED_ADVERSARIAL: &str = "adversarial (category 5)";

/// Community names of LoCoMo's categories 1–4.
pub fn category_name(category: u64) -> Option<&'static str> {
    match category {
        1 => Some("multi-hop"),
        2 => Some("temporal"),
        3 => Some("open-domain"),
        4 => Some("single-hop"),
        _ => None,
    }
}

/// Normalize one turn id: "D30:05" → "D30:5". `None` if it is not `D<n>:<n>`.
pub fn normalize_dia_id(raw: &str) -> Option<String> {
    let rest = raw.trim().strip_prefix('D')?;
    let (session, turn) = rest.split_once(':')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(session) || !digits(turn) {
        return None;
    }
    let session: u64 = session.parse().ok()?;
    let turn: u64 = turn.parse().ok()?;
    Some(format!("D{session}:{turn}"))
}

pub fn load_locomo(path: &Path) -> Result<RetrievalDataset, DatasetError> {
    let root = read_json_file(path)?;
    let conversations = root.as_array().ok_or_else(|| {
        DatasetError::structure(
            path,
            "top level",
            format!("expected an array of conversations, found {}", root.kind()),
        )
    })?;
    let mut dataset = RetrievalDataset::new("locomo");
    let mut seen = HashSet::new();
    for (index, node) in conversations.iter().enumerate() {
        if let Some(conversation) = load_conversation(&mut dataset, index, node) {
            if seen.insert(conversation.id.clone()) {
                dataset.conversations.push(conversation);
            } else {
                let location = conversation.id.clone();
                dataset.defect(
                    location,
                    format!("duplicate sample_id at [{index}]"),
                    DefectAction::SkippedRecord,
                );
            }
        }
    }
    Ok(dataset)
}

/// One `observation` fact: what a speaker revealed in a session, with its source turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationFact {
    /// The session number N of `session_N_observation`.
    pub session: u64,
    /// Whom the fact is about (the key it was listed under).
    pub speaker: String,
    /// The fact, trimmed and non-empty.
    pub text: String,
    /// Normalized turn ids ("D1:3"); malformed ones are dropped.
    pub evidence: Vec<String>,
}

/// The observation facts of one conversation, sessions in numeric order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedConversation {
    /// The conversation's `sample_id`.
    pub id: String,
    /// In session order, speakers in file order within a session.
    pub facts: Vec<ObservationFact>,
}

/// Every conversation's observation facts, with what was odd about them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocomoObservations {
    /// In file order; a conversation without observations has no facts.
    pub conversations: Vec<ObservedConversation>,
    /// Everything odd found while reading, with what the loader did about it.
    pub defects: Vec<Defect>,
}

/// Read the `observation` facts of a LoCoMo file (see the module docs). Records that cannot be
/// read are left out with a located defect; only an unreadable file or a top level that is
/// not a list is an error.
pub fn load_locomo_observations(path: &Path) -> Result<LocomoObservations, DatasetError> {
    let root = read_json_file(path)?;
    let conversations = root.as_array().ok_or_else(|| {
        DatasetError::structure(
            path,
            "top level",
            format!("expected an array of conversations, found {}", root.kind()),
        )
    })?;
    let mut out = LocomoObservations {
        conversations: Vec::new(),
        defects: Vec::new(),
    };
    for (index, node) in conversations.iter().enumerate() {
        if let Some(conversation) = observed_conversation(&mut out.defects, index, node) {
            out.conversations.push(conversation);
        }
    }
    Ok(out)
}

fn observation_defect(
    defects: &mut Vec<Defect>,
    location: String,
    problem: String,
    action: DefectAction,
) {
    defects.push(Defect {
        location,
        problem,
        action,
    });
}

/// The facts of one conversation; `None` only without a `sample_id`, as a conversation
/// without observations is still listed (with no facts).
fn observed_conversation(
    defects: &mut Vec<Defect>,
    index: usize,
    node: &Node,
) -> Option<ObservedConversation> {
    let Some(id) = node.get("sample_id").and_then(Node::scalar_text) else {
        observation_defect(
            defects,
            format!("[{index}]"),
            "conversation without a sample_id".into(),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let Some(sessions) = node.get("observation").and_then(Node::as_object) else {
        observation_defect(
            defects,
            id.clone(),
            "missing or non-object `observation`; no facts".into(),
            DefectAction::Kept,
        );
        return Some(ObservedConversation {
            id,
            facts: Vec::new(),
        });
    };
    let mut facts = Vec::new();
    for (session, key, value) in numbered_observation_sessions(defects, &id, sessions) {
        let Some(speakers) = value.as_object() else {
            observation_defect(
                defects,
                format!("{id} observation.{key}"),
                format!("expected an object of speakers, found {}", value.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        for (speaker, entries) in speakers {
            let location = format!("{id} observation.{key}.{speaker}");
            speaker_facts(defects, &location, session, speaker, entries, &mut facts);
        }
    }
    Some(ObservedConversation { id, facts })
}

/// The `session_<N>_observation` entries in numeric order of N; other keys are defects.
fn numbered_observation_sessions<'a>(
    defects: &mut Vec<Defect>,
    id: &str,
    sessions: &'a [(String, Node)],
) -> Vec<(u64, &'a str, &'a Node)> {
    let mut numbered: Vec<(u64, &str, &Node)> = Vec::new();
    for (key, value) in sessions {
        let number = key
            .strip_prefix("session_")
            .and_then(|rest| rest.strip_suffix("_observation"))
            .and_then(|n| n.parse::<u64>().ok());
        match number {
            Some(number) => numbered.push((number, key, value)),
            None => observation_defect(
                defects,
                format!("{id} observation.{key}"),
                "not a session_<N>_observation key; ignored".into(),
                DefectAction::SkippedRecord,
            ),
        }
    }
    numbered.sort_by_key(|(number, _, _)| *number);
    numbered
}

/// Append the facts listed under one speaker of one session to `facts`; `location` names the
/// list ("conv-26 observation.session_1_observation.Caroline").
fn speaker_facts(
    defects: &mut Vec<Defect>,
    location: &str,
    session: u64,
    speaker: &str,
    entries: &Node,
    facts: &mut Vec<ObservationFact>,
) {
    let Some(entries) = entries.as_array() else {
        observation_defect(
            defects,
            location.to_string(),
            format!("expected a list of facts, found {}", entries.kind()),
            DefectAction::SkippedRecord,
        );
        return;
    };
    for (n, entry) in entries.iter().enumerate() {
        let location = format!("{location}[{n}]");
        let parts = entry.as_array().unwrap_or(&[]);
        let text = parts.first().and_then(Node::as_str).map(str::trim);
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            observation_defect(
                defects,
                location,
                "expected [fact, evidence] with a non-empty fact".into(),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        let evidence = observation_evidence(defects, &location, parts.get(1));
        facts.push(ObservationFact {
            session,
            speaker: speaker.to_string(),
            text: text.to_string(),
            evidence,
        });
    }
}

/// The normalized, deduplicated turn ids of a fact's evidence (a string or a list of them,
/// each possibly holding several ids); malformed ids are dropped as defects.
fn observation_evidence(
    defects: &mut Vec<Defect>,
    location: &str,
    evidence_node: Option<&Node>,
) -> Vec<String> {
    let mut raw_ids: Vec<String> = Vec::new();
    match evidence_node {
        Some(Node::String(ids)) => raw_ids.push(ids.clone()),
        Some(Node::Array(ids)) => {
            raw_ids.extend(ids.iter().filter_map(Node::scalar_text));
        }
        _ => {}
    }
    let mut evidence = Vec::new();
    for token in raw_ids.iter().flat_map(|ids| {
        ids.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
    }) {
        match normalize_dia_id(token) {
            Some(id) if !evidence.contains(&id) => evidence.push(id),
            Some(_) => {}
            None => observation_defect(
                defects,
                location.to_string(),
                format!("malformed evidence id {token:?}; dropped"),
                DefectAction::DroppedReference,
            ),
        }
    }
    evidence
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

#[derive(Deserialize)]
struct RawQa {
    question: String,
    #[serde(default)]
    answer: Option<serde_json::Value>,
    #[serde(default)]
    evidence: Option<serde_json::Value>,
    category: serde_json::Value,
}

fn load_conversation(
    dataset: &mut RetrievalDataset,
    index: usize,
    node: &Node,
) -> Option<Conversation> {
    let Some(id) = node.get("sample_id").and_then(Node::scalar_text) else {
        dataset.defect(
            format!("[{index}]"),
            "conversation without a sample_id",
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let Some((body_node, body)) = node
        .get("conversation")
        .and_then(|n| n.as_object().map(|entries| (n, entries)))
    else {
        dataset.defect(
            id,
            "missing or non-object `conversation`",
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let speakers = Speakers {
        a: body_node.get("speaker_a").and_then(Node::as_str),
        b: body_node.get("speaker_b").and_then(Node::as_str),
    };
    if speakers.a.is_none() || speakers.b.is_none() {
        dataset.defect(
            &id,
            "missing speaker_a or speaker_b; unknown speakers get role `other`",
            DefectAction::Kept,
        );
    }

    let mut items: Vec<Item> = Vec::new();
    let mut labels: HashSet<String> = HashSet::new();
    for (number, key, value) in numbered_sessions(body) {
        let Some(turns) = value.as_array() else {
            dataset.defect(
                format!("{id} {key}"),
                format!("session is {}, expected an array of turns", value.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        let session = SessionContext {
            conversation: &id,
            key,
            number,
            time: session_time(dataset, &id, key, body_node),
            speakers: &speakers,
        };
        for (turn_index, turn_node) in turns.iter().enumerate() {
            if let Some(item) = load_turn(dataset, &session, &mut labels, turn_index, turn_node) {
                items.push(item);
            }
        }
    }

    let questions = load_questions(dataset, &id, node, &labels, items.len());
    Some(Conversation {
        id,
        items,
        questions,
    })
}

/// The names of a conversation's two people (`speaker_a` is the user); either may be missing.
struct Speakers<'a> {
    a: Option<&'a str>,
    b: Option<&'a str>,
}

/// What the turns of one session share.
struct SessionContext<'a> {
    /// The conversation's `sample_id`.
    conversation: &'a str,
    /// "session_<N>".
    key: &'a str,
    number: u64,
    /// The session's start, when its `date_time` parses.
    time: Option<Timestamp>,
    speakers: &'a Speakers<'a>,
}

/// The `session_<N>` entries of a conversation body in numeric order of N; other keys (the
/// speakers, `session_<N>_date_time`) are not sessions.
fn numbered_sessions(body: &[(String, Node)]) -> Vec<(u64, &str, &Node)> {
    let mut sessions: Vec<(u64, &str, &Node)> = body
        .iter()
        .filter_map(|(key, value)| {
            let number = key.strip_prefix("session_")?;
            (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
                .then(|| number.parse::<u64>().ok())
                .flatten()
                .map(|n| (n, key.as_str(), value))
        })
        .collect();
    sessions.sort_by_key(|(n, _, _)| *n);
    sessions
}

/// The time of session `key` from its `<key>_date_time`; a missing or unparseable time is a
/// defect, and the session's turns get no time.
fn session_time(
    dataset: &mut RetrievalDataset,
    id: &str,
    key: &str,
    body_node: &Node,
) -> Option<Timestamp> {
    let date_key = format!("{key}_date_time");
    match body_node.get(&date_key).and_then(Node::as_str) {
        Some(text) => {
            let parsed = parse_locomo_time(text);
            if parsed.is_none() {
                dataset.defect(
                    format!("{id} {date_key}"),
                    format!("unparseable session time {text:?}; turns have no time"),
                    DefectAction::Kept,
                );
            }
            parsed
        }
        None => {
            dataset.defect(
                format!("{id} {date_key}"),
                "session has no date_time; turns have no time",
                DefectAction::Kept,
            );
            None
        }
    }
}

/// One turn as an item, its label recorded in `labels`; `None` (with a defect) when it cannot
/// be read, its dia_id is malformed or already taken, or it has no text.
fn load_turn(
    dataset: &mut RetrievalDataset,
    session: &SessionContext<'_>,
    labels: &mut HashSet<String>,
    turn_index: usize,
    turn_node: &Node,
) -> Option<Item> {
    let (id, key, number) = (session.conversation, session.key, session.number);
    let location = format!("{id} {key}[{turn_index}]");
    let turn: RawTurn = match turn_node.parse() {
        Ok(turn) => turn,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedRecord);
            return None;
        }
    };
    let Some(label) = normalize_dia_id(&turn.dia_id) else {
        dataset.defect(
            location,
            format!("malformed dia_id {:?}", turn.dia_id),
            DefectAction::SkippedRecord,
        );
        return None;
    };
    if !label.starts_with(&format!("D{number}:")) {
        dataset.defect(
            &location,
            format!("dia_id {label} does not belong to {key}"),
            DefectAction::Kept,
        );
    }
    if !labels.insert(label.clone()) {
        dataset.defect(
            location,
            format!("duplicate dia_id {label}"),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let (text, metadata) = turn_text(&turn);
    if text.is_empty() {
        dataset.defect(location, "empty turn text", DefectAction::SkippedRecord);
        return None;
    }
    let role = turn_role(dataset, &location, session.speakers, &turn.speaker);
    let offset_ms = i64::try_from(turn_index).unwrap_or(i64::MAX / 2) * 1000;
    Some(Item {
        label,
        role,
        speaker: Some(turn.speaker),
        text,
        time: session
            .time
            .map(|t| Timestamp(t.0.saturating_add(offset_ms))),
        session: key.to_string(),
        metadata,
    })
}

/// A turn's trimmed text with its image caption appended (images are not in the dataset),
/// and the caption as metadata. The text may be empty.
fn turn_text(turn: &RawTurn) -> (String, Metadata) {
    let mut text = turn.text.trim().to_string();
    let mut metadata = Metadata::new();
    if let Some(caption) = turn
        .blip_caption
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        if text.is_empty() {
            text = format!("[image: {caption}]");
        } else {
            text = format!("{text} [image: {caption}]");
        }
        metadata.insert("image_caption".to_string(), caption.to_string());
    }
    (text, metadata)
}

/// `speaker_a` is the user and `speaker_b` the assistant; anyone else is a defect with role
/// `other`.
fn turn_role(
    dataset: &mut RetrievalDataset,
    location: &str,
    speakers: &Speakers<'_>,
    speaker: &str,
) -> Role {
    if Some(speaker) == speakers.a {
        Role::User
    } else if Some(speaker) == speakers.b {
        Role::Assistant
    } else {
        dataset.defect(
            location,
            format!("speaker {speaker:?} is neither speaker_a nor speaker_b; role `other`"),
            DefectAction::Kept,
        );
        Role::Other
    }
}

fn load_questions(
    dataset: &mut RetrievalDataset,
    id: &str,
    node: &Node,
    labels: &HashSet<String>,
    item_count: usize,
) -> Vec<Question> {
    let mut questions = Vec::new();
    let Some(qa) = node.get("qa") else {
        dataset.defect(id, "conversation has no `qa`", DefectAction::Kept);
        return questions;
    };
    let Some(qa) = qa.as_array() else {
        dataset.defect(
            id,
            format!("`qa` is {}, expected an array", qa.kind()),
            DefectAction::SkippedRecord,
        );
        return questions;
    };
    for (index, qa_node) in qa.iter().enumerate() {
        let location = format!("{id} qa[{index}]");
        let raw: RawQa = match qa_node.parse() {
            Ok(raw) => raw,
            Err(problem) => {
                dataset.defect(location, problem, DefectAction::SkippedQuestion);
                continue;
            }
        };
        let category = match &raw.category {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        if category == Some(5) {
            *dataset
                .excluded
                .entry(EXCLUDED_ADVERSARIAL.to_string())
                .or_insert(0) += 1;
            continue;
        }
        let Some((category, name)) = category.and_then(|c| category_name(c).map(|n| (c, n))) else {
            dataset.defect(
                location,
                format!("unknown category {}", raw.category),
                DefectAction::SkippedQuestion,
            );
            continue;
        };
        let text = raw.question.trim().to_string();
        if text.is_empty() {
            dataset.defect(location, "empty question", DefectAction::SkippedQuestion);
            continue;
        }
        let gold = match collect_evidence(dataset, &location, raw.evidence.as_ref(), labels) {
            Some(gold) => gold,
            None => continue,
        };
        let answer = raw.answer.as_ref().and_then(|a| match a {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        });
        let mut metadata = Metadata::new();
        metadata.insert("locomo_category".to_string(), category.to_string());
        questions.push(Question {
            id: format!("{id}/q{index}"),
            text,
            answer,
            gold,
            category: name.to_string(),
            memory_type: None,
            after_item: item_count,
            time: None,
            choices: Vec::new(),
            correct_choice: None,
            as_of: None,
            metadata,
        });
    }
    questions
}

/// Gold labels from `evidence`; `None` (with a defect) when nothing valid remains.
fn collect_evidence(
    dataset: &mut RetrievalDataset,
    location: &str,
    evidence: Option<&serde_json::Value>,
    labels: &HashSet<String>,
) -> Option<Vec<String>> {
    let entries: Vec<&serde_json::Value> = match evidence {
        Some(serde_json::Value::Array(entries)) => entries.iter().collect(),
        Some(single @ serde_json::Value::String(_)) => vec![single],
        Some(serde_json::Value::Null) | None => Vec::new(),
        Some(other) => {
            dataset.defect(
                location,
                format!("evidence is {other}, expected an array of turn ids"),
                DefectAction::SkippedQuestion,
            );
            return None;
        }
    };
    if entries.is_empty() {
        dataset.defect(location, "no evidence", DefectAction::SkippedQuestion);
        return None;
    }
    let mut gold: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for entry in entries {
        let Some(entry) = entry.as_str() else {
            dataset.defect(
                location,
                format!("evidence entry {entry} is not a string"),
                DefectAction::DroppedReference,
            );
            continue;
        };
        for token in entry
            .split(|c: char| c == ';' || c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
        {
            match normalize_dia_id(token) {
                None => dataset.defect(
                    location,
                    format!("malformed evidence id {token:?}"),
                    DefectAction::DroppedReference,
                ),
                Some(label) if !labels.contains(&label) => dataset.defect(
                    location,
                    format!("evidence {label} is not a turn of the conversation"),
                    DefectAction::DroppedReference,
                ),
                Some(label) => {
                    if seen.insert(label.clone()) {
                        gold.push(label);
                    }
                }
            }
        }
    }
    if gold.is_empty() {
        dataset.defect(location, "no valid evidence", DefectAction::SkippedQuestion);
        return None;
    }
    Some(gold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::DefectAction;
    use std::io::Write;

    const FIXTURE: &str = r#"[
      {"sample_id": "conv-x",
       "conversation": {
         "speaker_a": "Ann", "speaker_b": "Bob",
         "session_2_date_time": "12:05 am on 3 June, 2023",
         "session_10_date_time": "9:00 pm on 1 July, 2023",
         "session_1_date_time": "1:56 pm on 8 May, 2023",
         "session_11_date_time": "1:00 pm on 2 July, 2023",
         "session_1": [
           {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
           {"speaker": "Bob", "dia_id": "D1:2", "text": "Look at this", "blip_caption": "a photo of a dog", "img_url": ["u"]},
           {"speaker": "Ann", "dia_id": "D1:3"}
         ],
         "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "Tenth session."}],
         "session_2": [{"speaker": "Ann", "dia_id": "D2:01", "text": "Second session."},
                       {"speaker": "Ann", "dia_id": "D2:2", "text": "More."}]
       },
       "qa": [
         {"question": "Who has a dog?", "answer": "Bob", "evidence": ["D1:2"], "category": 4},
         {"question": "How many?", "answer": 2, "evidence": ["D1:1; D02:01", "D1:1"], "category": 1},
         {"question": "Trick?", "adversarial_answer": "no", "evidence": ["D1:1"], "category": 5},
         {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
         {"question": "Missing", "answer": "x", "evidence": ["D9:9", "D", "D:1:1", "D10:1"], "category": 2},
         {"question": "Only missing", "answer": "x", "evidence": ["D9:9"], "category": 2},
         {"question": "Odd category", "answer": "x", "evidence": ["D1:1"], "category": 7},
         {"answer": "no question", "evidence": ["D1:1"], "category": 1}
       ]}
    ]"#;

    fn load_fixture(json: &str) -> Result<RetrievalDataset, DatasetError> {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(json.as_bytes()).expect("write fixture");
        load_locomo(file.path())
    }

    #[test]
    fn normalizes_ids() {
        assert_eq!(normalize_dia_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_dia_id(" D1:3 ").as_deref(), Some("D1:3"));
        assert_eq!(normalize_dia_id("D"), None);
        assert_eq!(normalize_dia_id("D:11:26"), None);
        assert_eq!(normalize_dia_id("D1:"), None);
        assert_eq!(normalize_dia_id("d1:2"), None);
    }

    #[test]
    fn loads_fixture() {
        let dataset = load_fixture(FIXTURE).expect("loads");
        assert_eq!(dataset.conversations.len(), 1);
        let conv = &dataset.conversations[0];
        assert_eq!(conv.id, "conv-x");

        let labels: Vec<&str> = conv.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["D1:1", "D1:2", "D2:1", "D2:2", "D10:1"]);
        assert_eq!(conv.items[0].role, Role::User);
        assert_eq!(conv.items[1].role, Role::Assistant);
        assert_eq!(conv.items[1].text, "Look at this [image: a photo of a dog]");
        assert_eq!(conv.items[1].speaker.as_deref(), Some("Bob"));
        assert_eq!(conv.items[2].session, "session_2");
        let t0 = parse_locomo_time("1:56 pm on 8 May, 2023").expect("time");
        assert_eq!(conv.items[0].time, Some(t0));
        assert_eq!(conv.items[1].time, Some(Timestamp(t0.0 + 1000)));
        assert_eq!(
            conv.items[2].time,
            parse_locomo_time("12:05 am on 3 June, 2023")
        );

        let ids: Vec<&str> = conv.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["conv-x/q0", "conv-x/q1", "conv-x/q4"]);
        let q1 = &conv.questions[1];
        assert_eq!(q1.answer.as_deref(), Some("2"));
        assert_eq!(q1.gold, ["D1:1", "D2:1"]);
        assert_eq!(q1.category, "multi-hop");
        assert_eq!(
            q1.metadata.get("locomo_category").map(String::as_str),
            Some("1")
        );
        assert_eq!(q1.after_item, 5);
        assert_eq!(conv.questions[2].gold, ["D10:1"]);
        assert_eq!(conv.questions[0].category, "single-hop");

        assert_eq!(dataset.excluded.get(EXCLUDED_ADVERSARIAL), Some(&1));
        let count = |action| {
            dataset
                .defects
                .iter()
                .filter(|d| d.action == action)
                .count()
        };
        // D1:3 has no text.
        assert_eq!(count(DefectAction::SkippedRecord), 1);
        // D9:9, "D", "D:1:1" in qa[4].
        assert_eq!(count(DefectAction::DroppedReference), 4);
        // qa[3] no evidence, qa[5] only missing ids, qa[6] category 7, qa[7] no question.
        assert_eq!(count(DefectAction::SkippedQuestion), 4);
        assert!(dataset
            .defects
            .iter()
            .any(|d| d.location == "conv-x qa[5]" && d.problem.contains("D9:9")));
        // session_11 has a date but no content: not a defect.
        assert_eq!(count(DefectAction::Kept), 0);

        let summary = dataset.summary();
        assert_eq!(
            (summary.items, summary.questions, summary.excluded),
            (5, 3, 1)
        );
        assert_eq!(summary.questions_by_category.get("multi-hop"), Some(&1));
    }

    #[test]
    fn loads_observation_facts() {
        let json = r#"[
          {"sample_id": "conv-x",
           "observation": {
             "session_10_observation": {"Bob": [["Bob has a dog.", "D10:1"]]},
             "session_2_observation": {
               "Ann": [["Ann moved to Paris.", "D2:01"],
                       ["Ann likes tea and cake.", ["D2:3", "D2:4; D2:3", "bad"]],
                       ["  ", "D2:5"], "not a pair"],
               "Bob": 7},
             "summary": {}
           }},
          {"sample_id": "conv-y"},
          {"no_id": true}
        ]"#;
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(json.as_bytes()).expect("write fixture");
        let loaded = load_locomo_observations(file.path()).expect("loads");
        let ids: Vec<&str> = loaded.conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["conv-x", "conv-y"]);
        let facts = &loaded.conversations[0].facts;
        let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
        // Sessions in numeric order (2 before 10).
        assert_eq!(
            texts,
            [
                "Ann moved to Paris.",
                "Ann likes tea and cake.",
                "Bob has a dog."
            ]
        );
        assert_eq!(facts[0].session, 2);
        assert_eq!(facts[0].speaker, "Ann");
        assert_eq!(facts[0].evidence, ["D2:1"]);
        assert_eq!(facts[1].evidence, ["D2:3", "D2:4"]);
        assert_eq!(facts[2].session, 10);
        assert!(loaded.conversations[1].facts.is_empty());
        let at = |location: &str| {
            loaded
                .defects
                .iter()
                .filter(|d| d.location == location)
                .map(|d| d.action)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            at("conv-x observation.session_2_observation.Ann[1]"),
            [DefectAction::DroppedReference]
        );
        assert_eq!(
            at("conv-x observation.session_2_observation.Ann[2]"),
            [DefectAction::SkippedRecord]
        );
        assert_eq!(
            at("conv-x observation.session_2_observation.Ann[3]"),
            [DefectAction::SkippedRecord]
        );
        assert_eq!(
            at("conv-x observation.session_2_observation.Bob"),
            [DefectAction::SkippedRecord]
        );
        assert_eq!(
            at("conv-x observation.summary"),
            [DefectAction::SkippedRecord]
        );
        assert_eq!(at("conv-y"), [DefectAction::Kept]);
        assert_eq!(at("[2]"), [DefectAction::SkippedRecord]);
        assert_eq!(loaded.defects.len(), 7, "{:#?}", loaded.defects);
        let err = load_locomo_observations(Path::new("/nonexistent/x.json")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/x.json"));
    }

    #[test]
    fn wrong_top_level_is_an_error() {
        let err = load_fixture(r#"{"sample_id": "conv-1"}"#).expect_err("not a list");
        assert!(matches!(err, DatasetError::Structure { .. }), "{err}");
        let err = load_fixture("[{").expect_err("bad json");
        assert!(matches!(err, DatasetError::Json { line: 1, .. }), "{err}");
        let err = load_locomo(Path::new("/nonexistent/locomo.json")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/locomo.json"));
    }

    #[test]
    fn bad_conversation_does_not_abort() {
        let json = r#"[{"sample_id": "a"}, 7,
            {"sample_id": "b", "conversation": {"speaker_a": "A", "speaker_b": "B",
              "session_1": [{"speaker": "C", "dia_id": "D1:1", "text": "hi"}]}, "qa": []}]"#;
        let dataset = load_fixture(json).expect("loads");
        assert_eq!(dataset.conversations.len(), 1);
        let conv = &dataset.conversations[0];
        assert_eq!(conv.items[0].role, Role::Other);
        assert_eq!(conv.items[0].time, None);
        // "a" lacks `conversation`, [1] is not an object, C is an unknown speaker,
        // session_1 has no date_time.
        assert_eq!(dataset.defects.len(), 4, "{:#?}", dataset.defects);
    }
}
