//! PerLTQA loader (`perltmem*.json` memories + `perltqa*.json` questions).
//!
//! One conversation per character. PerLTQA holds memory records rather than a dialogue, so the
//! items are the records themselves, labelled so that `Reference Memory` maps onto them:
//!
//! | memory | label | text |
//! |---|---|---|
//! | profile field | `profile:<Key>` | "<Name>'s <Key>: <value>" |
//! | social relationship | `1_0` | "Relationship with <who>: <relationship>. <description>" |
//! | event | `1_0_0` | the event content |
//! | dialogue session | `1_0_0#0` | the utterances, one per line |
//!
//! The `profile:` prefix keeps profile keys apart from record ids; profile questions name the
//! bare key, which the loader prefixes. Items follow the memory file: profile, relationships,
//! then each event directly followed by its dialogue sessions. All items are [`Role::User`]
//! (they are memories of the character, who plays the user). Only profile items carry the
//! character as speaker (their text is "<name>'s <key>: <value>"); relationship and event records
//! have no speaker, because a speaker name is indexed as part of the memory and would add the
//! character's name to every record, pulling them above the dialogues that mention it once.
//! HTML entities are decoded in all text. Every item states its memory type in its metadata
//! (`memory_type`: profile and relationships semantic, events and dialogues episodic).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use mnemos_core::{MemoryType, Metadata, Role};
use serde::Deserialize;

use crate::dataset::{Conversation, DefectAction, Item, MemoryClass, Question, RetrievalDataset};
use crate::error::DatasetError;
use crate::json::{read_json_file, Node};
use crate::text::{decode_html_entities, parse_perltqa_dialogue_time, parse_perltqa_event_time};

/// Default file names inside a PerLTQA directory.
pub const MEMORY_FILE: &str = "perltmem_dev.json";
pub const QA_FILE: &str = "perltqa_dev.json";

/// PerLTQA's question groups with their memory class, in report order.
pub const GROUPS: [(&str, MemoryClass); 4] = [
    ("profile", MemoryClass::Semantic),
    ("social_relationship", MemoryClass::Semantic),
    ("events", MemoryClass::Episodic),
    ("dialogues", MemoryClass::Episodic),
];

/// Label of a profile field item.
pub fn profile_label(key: &str) -> String {
    format!("profile:{key}")
}

/// Find the memory and QA files in `dir`: the default names, else the single
/// `perltmem*.json` / `perltqa*.json`.
pub fn find_perltqa_files(dir: &Path) -> Result<(PathBuf, PathBuf), DatasetError> {
    let memory = dir.join(MEMORY_FILE);
    let qa = dir.join(QA_FILE);
    if memory.is_file() && qa.is_file() {
        return Ok((memory, qa));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut memories = Vec::new();
    let mut qas = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DatasetError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
        if !name.ends_with(".json") {
            continue;
        }
        if name.starts_with("perltmem") {
            memories.push(entry.path());
        } else if name.starts_with("perltqa") {
            qas.push(entry.path());
        }
    }
    match (memories.as_slice(), qas.as_slice()) {
        ([memory], [qa]) => Ok((memory.clone(), qa.clone())),
        _ => Err(DatasetError::UnknownFormat {
            path: dir.to_path_buf(),
            reason: format!(
                "expected {MEMORY_FILE} and {QA_FILE} (or exactly one perltmem*.json and one \
                 perltqa*.json); found {} memory and {} QA files",
                memories.len(),
                qas.len()
            ),
        }),
    }
}

pub fn load_perltqa_dir(dir: &Path) -> Result<RetrievalDataset, DatasetError> {
    let (memory, qa) = find_perltqa_files(dir)?;
    load_perltqa(&memory, &qa)
}

pub fn load_perltqa(memory_path: &Path, qa_path: &Path) -> Result<RetrievalDataset, DatasetError> {
    let memory_root = read_json_file(memory_path)?;
    let qa_root = read_json_file(qa_path)?;
    let characters = memory_root.as_object().ok_or_else(|| {
        DatasetError::structure(
            memory_path,
            "top level",
            format!(
                "expected an object {{character name: memories}}, found {}",
                memory_root.kind()
            ),
        )
    })?;
    let qa_entries = qa_root.as_array().ok_or_else(|| {
        DatasetError::structure(
            qa_path,
            "top level",
            format!(
                "expected an array of {{character name: question groups}}, found {}",
                qa_root.kind()
            ),
        )
    })?;

    let mut dataset = RetrievalDataset::new("perltqa");
    for (name, memories) in characters {
        if let Some(conversation) = load_character(&mut dataset, name, memories) {
            dataset.conversations.push(conversation);
        }
    }

    let positions: HashMap<String, usize> = dataset
        .conversations
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    for (index, entry) in qa_entries.iter().enumerate() {
        let Some(groups_by_name) = entry.as_object() else {
            dataset.defect(
                format!("qa[{index}]"),
                format!("expected an object, found {}", entry.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        for (name, groups) in groups_by_name {
            let Some(&position) = positions.get(name) else {
                dataset.defect(
                    format!("qa[{index}] {name}"),
                    "questions for a character without memories",
                    DefectAction::SkippedRecord,
                );
                continue;
            };
            let mut conversation = std::mem::replace(
                &mut dataset.conversations[position],
                Conversation {
                    id: String::new(),
                    items: Vec::new(),
                    questions: Vec::new(),
                },
            );
            load_questions(&mut dataset, &mut conversation, groups);
            dataset.conversations[position] = conversation;
        }
    }
    Ok(dataset)
}

fn decoded(node: Option<&Node>) -> Option<String> {
    let text = node?.scalar_text()?;
    let text = decode_html_entities(text.trim());
    (!text.is_empty()).then_some(text)
}

/// Profile values: strings, numbers, or lists of them; empty values are not items.
fn profile_value(node: &Node) -> Result<Option<String>, String> {
    match node {
        Node::Null => Ok(None),
        Node::Array(values) => {
            let mut parts = Vec::new();
            for value in values {
                match profile_value(value)? {
                    Some(part) => parts.push(part),
                    None => continue,
                }
            }
            Ok((!parts.is_empty()).then(|| parts.join(", ")))
        }
        Node::Object(_) => Err("profile value is an object".to_string()),
        scalar => Ok(decoded(Some(scalar))),
    }
}

#[derive(Deserialize)]
struct RawRelationship {
    #[serde(default, rename = "Supporting Characters")]
    supporting: Option<String>,
    #[serde(default, rename = "Relationship")]
    relationship: Option<String>,
    #[serde(default, rename = "Description")]
    description: Option<String>,
}

#[derive(Deserialize)]
struct RawEvent {
    content: String,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default, rename = "Theme")]
    theme: Option<String>,
    #[serde(default, rename = "Creation Time")]
    creation_time: Option<String>,
}

#[derive(Deserialize)]
struct RawDialogue {
    #[serde(default)]
    events: Option<String>,
}

fn clean(text: Option<&str>) -> Option<String> {
    let text = decode_html_entities(text?.trim());
    (!text.is_empty()).then_some(text)
}

fn load_character(
    dataset: &mut RetrievalDataset,
    name: &str,
    memories: &Node,
) -> Option<Conversation> {
    if memories.as_object().is_none() {
        dataset.defect(
            name,
            format!("expected an object of memories, found {}", memories.kind()),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let speaker = decode_html_entities(name);
    let mut character = CharacterItems::default();

    for (key, value) in section(dataset, name, memories, "profile") {
        let location = format!("{name} profile/{key}");
        match profile_value(&value) {
            Ok(Some(value)) => character.push(
                dataset,
                &location,
                Item {
                    label: profile_label(&key),
                    role: Role::User,
                    speaker: Some(speaker.clone()),
                    text: format!("{speaker}'s {key}: {value}"),
                    time: None,
                    session: "profile".to_string(),
                    metadata: typed(Metadata::new(), MemoryType::Semantic),
                },
            ),
            Ok(None) => {}
            Err(problem) => dataset.defect(location, problem, DefectAction::SkippedRecord),
        }
    }

    for (id, value) in section(dataset, name, memories, "social_relationship") {
        let location = format!("{name} social_relationship/{id}");
        if let Some(item) = relationship_item(dataset, &location, id, &value) {
            character.push(dataset, &location, item);
        }
    }

    // Dialogue sessions are read before the events so each event can be followed by its own.
    let mut dialogues = group_dialogues(dataset, name, memories);
    for (id, value) in section(dataset, name, memories, "events") {
        let location = format!("{name} events/{id}");
        let Some(item) = event_item(dataset, &location, &id, &value) else {
            continue;
        };
        character.push(dataset, &location, item);
        for dialogue in dialogues.by_event.remove(&id).unwrap_or_default() {
            let location = format!("{name} dialogues/{}", dialogue.label);
            character.push(dataset, &location, dialogue);
        }
    }
    dialogues.push_leftovers(dataset, name, &mut character);

    Some(Conversation {
        id: name.to_string(),
        items: character.items,
        questions: Vec::new(),
    })
}

/// A character's items so far, in order, with their labels: a label seen before is a
/// duplicate, reported and left out.
#[derive(Default)]
struct CharacterItems {
    items: Vec<Item>,
    labels: HashSet<String>,
}

impl CharacterItems {
    fn push(&mut self, dataset: &mut RetrievalDataset, location: &str, item: Item) {
        if self.labels.insert(item.label.clone()) {
            self.items.push(item);
        } else {
            dataset.defect(
                location,
                format!("duplicate memory id {}", item.label),
                DefectAction::SkippedRecord,
            );
        }
    }
}

/// The entries of one memory section (`profile`, `events`, …) of character `name`; a section
/// that is not an object is a defect and reads as empty, as does a missing one.
fn section(
    dataset: &mut RetrievalDataset,
    name: &str,
    memories: &Node,
    key: &str,
) -> Vec<(String, Node)> {
    match memories.get(key) {
        None => Vec::new(),
        Some(node) => match node.as_object() {
            Some(entries) => entries.to_vec(),
            None => {
                dataset.defect(
                    format!("{name} {key}"),
                    format!("expected an object, found {}", node.kind()),
                    DefectAction::SkippedRecord,
                );
                Vec::new()
            }
        },
    }
}

/// One social relationship record as an item labelled `id`; `None` (with a defect) when it
/// cannot be read or says nothing.
fn relationship_item(
    dataset: &mut RetrievalDataset,
    location: &str,
    id: String,
    value: &Node,
) -> Option<Item> {
    let raw: RawRelationship = match value.parse() {
        Ok(raw) => raw,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedRecord);
            return None;
        }
    };
    let who = clean(raw.supporting.as_deref());
    let relationship = clean(raw.relationship.as_deref());
    let description = clean(raw.description.as_deref());
    let mut text = match (&who, &relationship) {
        (Some(who), Some(rel)) => format!("Relationship with {who}: {rel}."),
        (Some(who), None) => format!("Relationship with {who}."),
        (None, Some(rel)) => format!("Relationship: {rel}."),
        (None, None) => String::new(),
    };
    if let Some(description) = &description {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(description);
    }
    if text.is_empty() {
        dataset.defect(location, "empty relationship", DefectAction::SkippedRecord);
        return None;
    }
    let mut metadata = Metadata::new();
    if let Some(who) = who {
        metadata.insert("supporting_character".to_string(), who);
    }
    if let Some(relationship) = relationship {
        metadata.insert("relationship".to_string(), relationship);
    }
    Some(Item {
        label: id,
        role: Role::User,
        // Nobody says a relationship record; naming the character as speaker would give
        // every record the character's name as a matching term (see the module docs).
        speaker: None,
        text,
        time: None,
        session: "relationship".to_string(),
        metadata: typed(metadata, MemoryType::Semantic),
    })
}

/// One event record as an item labelled `id`; `None` (with a defect) when it cannot be read
/// or has no content.
fn event_item(
    dataset: &mut RetrievalDataset,
    location: &str,
    id: &str,
    value: &Node,
) -> Option<Item> {
    let raw: RawEvent = match value.parse() {
        Ok(raw) => raw,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedRecord);
            return None;
        }
    };
    let Some(text) = clean(Some(&raw.content)) else {
        dataset.defect(location, "empty event content", DefectAction::SkippedRecord);
        return None;
    };
    let mut metadata = Metadata::new();
    let creation = clean(raw.creation_time.as_deref());
    let time = creation.as_deref().and_then(parse_perltqa_event_time);
    for (key, value) in [
        ("summary", clean(raw.summary.as_deref())),
        ("theme", clean(raw.theme.as_deref())),
        ("creation_time", creation),
    ] {
        if let Some(value) = value {
            metadata.insert(key.to_string(), value);
        }
    }
    Some(Item {
        label: id.to_string(),
        role: Role::User,
        speaker: None,
        text,
        time,
        session: "event".to_string(),
        metadata: typed(metadata, MemoryType::Episodic),
    })
}

/// A character's dialogue sessions, grouped under the event they belong to until that event
/// is placed.
struct DialogueGroups {
    by_event: HashMap<String, Vec<Item>>,
    /// Dialogues that name no event, with their locations.
    orphans: Vec<(String, Item)>,
    /// The events named by dialogues, in first-seen order.
    order: Vec<String>,
}

/// Read the `dialogues` section of character `name`: the event of a dialogue is its `events`
/// field, else the part of its id before '#'.
fn group_dialogues(dataset: &mut RetrievalDataset, name: &str, memories: &Node) -> DialogueGroups {
    let mut groups = DialogueGroups {
        by_event: HashMap::new(),
        orphans: Vec::new(),
        order: Vec::new(),
    };
    for (id, value) in section(dataset, name, memories, "dialogues") {
        let location = format!("{name} dialogues/{id}");
        let Some(item) = dialogue_item(dataset, &location, &id, &value) else {
            continue;
        };
        let raw: RawDialogue = value.parse().unwrap_or(RawDialogue { events: None });
        let event = raw
            .events
            .or_else(|| id.split_once('#').map(|(event, _)| event.to_string()));
        match event {
            Some(event) => {
                if !groups.order.contains(&event) {
                    groups.order.push(event.clone());
                }
                groups.by_event.entry(event).or_default().push(item);
            }
            None => groups.orphans.push((location, item)),
        }
    }
    groups
}

impl DialogueGroups {
    /// Append the dialogues no event claimed, each with a defect: those of missing events in
    /// the order the events were first named, then those naming no event.
    fn push_leftovers(
        mut self,
        dataset: &mut RetrievalDataset,
        name: &str,
        character: &mut CharacterItems,
    ) {
        for event in self.order {
            for dialogue in self.by_event.remove(&event).unwrap_or_default() {
                let location = format!("{name} dialogues/{}", dialogue.label);
                dataset.defect(
                    &location,
                    format!("dialogue of missing event {event}; appended at the end"),
                    DefectAction::Kept,
                );
                character.push(dataset, &location, dialogue);
            }
        }
        for (location, dialogue) in self.orphans {
            dataset.defect(
                &location,
                "dialogue names no event; appended at the end",
                DefectAction::Kept,
            );
            character.push(dataset, &location, dialogue);
        }
    }
}

fn dialogue_item(
    dataset: &mut RetrievalDataset,
    location: &str,
    id: &str,
    value: &Node,
) -> Option<Item> {
    let Some(contents) = value.get("contents").and_then(Node::as_object) else {
        dataset.defect(
            location,
            "missing or non-object `contents`",
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let mut lines = Vec::new();
    let mut time = None;
    let mut time_text = None;
    for (when, utterances) in contents {
        if time_text.is_none() {
            time_text = Some(when.clone());
            time = parse_perltqa_dialogue_time(when);
            if time.is_none() {
                dataset.defect(
                    location,
                    format!("unparseable dialogue time {when:?}"),
                    DefectAction::Kept,
                );
            }
        }
        match utterances {
            Node::Array(utterances) => {
                for utterance in utterances {
                    match clean(utterance.as_str()) {
                        Some(line) => lines.push(line),
                        None if utterance.as_str().is_some() => {}
                        None => dataset.defect(
                            location,
                            format!("utterance is {}, expected a string", utterance.kind()),
                            DefectAction::DroppedReference,
                        ),
                    }
                }
            }
            other => dataset.defect(
                location,
                format!("contents[{when:?}] is {}, expected an array", other.kind()),
                DefectAction::SkippedRecord,
            ),
        }
    }
    if lines.is_empty() {
        dataset.defect(
            location,
            "dialogue without utterances",
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let mut metadata = Metadata::new();
    if let Some(when) = time_text {
        metadata.insert("time_text".to_string(), when);
    }
    Some(Item {
        label: id.to_string(),
        role: Role::User,
        speaker: None,
        text: lines.join("\n"),
        time,
        session: "dialogue".to_string(),
        metadata: typed(metadata, MemoryType::Episodic),
    })
}

/// `metadata` stating the memory type PerLTQA files the record under (profile and relationships
/// are semantic memory, events and dialogues episodic), so type-aware presets need no classifier.
fn typed(mut metadata: Metadata, memory_type: MemoryType) -> Metadata {
    metadata.insert(
        MemoryType::METADATA_KEY.to_string(),
        memory_type.as_str().to_string(),
    );
    metadata
}

#[derive(Deserialize)]
struct RawQa {
    #[serde(rename = "Question")]
    question: String,
    #[serde(default, rename = "Answer")]
    answer: Option<serde_json::Value>,
    #[serde(rename = "Reference Memory")]
    reference: serde_json::Value,
    /// `[{"anchor text": [start, end]}, …]`; the offsets refer to the Chinese original.
    #[serde(default, rename = "Memory Anchors")]
    anchors: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// Question metadata key: the memory anchors' texts, a JSON array of strings.
pub const ANCHORS_KEY: &str = "anchors";

/// The anchors a question's metadata holds ([`ANCHORS_KEY`]).
pub fn question_anchors(question: &Question) -> Vec<String> {
    question
        .metadata
        .get(ANCHORS_KEY)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default()
}

/// `Reference Memory` as ids: a JSON list, a stringified Python list (`"['1_0_0#0']"`), or one
/// bare id.
pub fn parse_reference(value: &serde_json::Value) -> Result<Vec<String>, String> {
    match value {
        serde_json::Value::String(text) => {
            let text = text.trim();
            match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                Some(inner) => Ok(inner
                    .split(',')
                    .map(|part| part.trim().trim_matches(|c| c == '\'' || c == '"').trim())
                    .filter(|part| !part.is_empty())
                    .map(str::to_string)
                    .collect()),
                None if text.is_empty() => Ok(Vec::new()),
                None => Ok(vec![text.to_string()]),
            }
        }
        serde_json::Value::Array(values) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(|s| s.trim().to_string())
                    .ok_or_else(|| format!("reference {v} is not a string"))
            })
            .collect(),
        other => Err(format!(
            "Reference Memory is {other}, expected a string or a list"
        )),
    }
}

fn load_questions(dataset: &mut RetrievalDataset, conversation: &mut Conversation, groups: &Node) {
    let name = conversation.id.clone();
    let Some(groups) = groups.as_object() else {
        dataset.defect(
            format!("{name} qa"),
            format!(
                "expected an object of question groups, found {}",
                groups.kind()
            ),
            DefectAction::SkippedRecord,
        );
        return;
    };
    let labels: HashSet<String> = conversation.items.iter().map(|i| i.label.clone()).collect();
    for (group, node) in groups {
        let Some(class) = GROUPS.iter().find(|(g, _)| g == group).map(|(_, c)| *c) else {
            dataset.defect(
                format!("{name} {group}"),
                "unknown question group",
                DefectAction::SkippedRecord,
            );
            continue;
        };
        let scope = QuestionScope {
            group,
            class,
            labels: &labels,
            item_count: conversation.items.len(),
        };
        let Some(entries) = node.as_array() else {
            dataset.defect(
                format!("{name} {group}"),
                format!("expected an array, found {}", node.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        if group == "profile" {
            for (index, qa) in entries.iter().enumerate() {
                let id = format!("{name}/profile/{index}");
                let location = format!("{name} profile[{index}]");
                if let Some(q) = build_question(dataset, &location, id, &scope, qa) {
                    conversation.questions.push(q);
                }
            }
            continue;
        }
        for (entry_index, entry) in entries.iter().enumerate() {
            let Some(by_memory) = entry.as_object() else {
                dataset.defect(
                    format!("{name} {group}[{entry_index}]"),
                    format!(
                        "expected an object {{memory id: [QA]}}, found {}",
                        entry.kind()
                    ),
                    DefectAction::SkippedRecord,
                );
                continue;
            };
            for (memory_id, qas) in by_memory {
                let Some(qas) = qas.as_array() else {
                    dataset.defect(
                        format!("{name} {group}/{memory_id}"),
                        format!("expected an array of QA, found {}", qas.kind()),
                        DefectAction::SkippedRecord,
                    );
                    continue;
                };
                for (index, qa) in qas.iter().enumerate() {
                    let id = format!("{name}/{group}/{memory_id}/{index}");
                    let location = format!("{name} {group}/{memory_id}[{index}]");
                    if let Some(q) = build_question(dataset, &location, id, &scope, qa) {
                        conversation.questions.push(q);
                    }
                }
            }
        }
    }
}

/// What a question is checked against: its group and the character's memories.
struct QuestionScope<'a> {
    group: &'a str,
    class: MemoryClass,
    labels: &'a HashSet<String>,
    item_count: usize,
}

fn build_question(
    dataset: &mut RetrievalDataset,
    location: &str,
    id: String,
    scope: &QuestionScope<'_>,
    node: &Node,
) -> Option<Question> {
    let QuestionScope {
        group,
        class,
        labels,
        item_count,
    } = *scope;
    let raw: RawQa = match node.parse() {
        Ok(raw) => raw,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedQuestion);
            return None;
        }
    };
    let text = decode_html_entities(raw.question.trim());
    if text.is_empty() {
        dataset.defect(location, "empty question", DefectAction::SkippedQuestion);
        return None;
    }
    let references = match parse_reference(&raw.reference) {
        Ok(references) => references,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedQuestion);
            return None;
        }
    };
    let mut gold: Vec<String> = Vec::new();
    for reference in references {
        let label = if group == "profile" {
            profile_label(&reference)
        } else {
            reference
        };
        if !labels.contains(&label) {
            dataset.defect(
                location,
                format!("reference {label} is not a memory of the character"),
                DefectAction::DroppedReference,
            );
        } else if !gold.contains(&label) {
            gold.push(label);
        }
    }
    if gold.is_empty() {
        dataset.defect(
            location,
            "no valid reference",
            DefectAction::SkippedQuestion,
        );
        return None;
    }
    let answer = raw.answer.as_ref().and_then(|a| match a {
        serde_json::Value::String(s) => Some(decode_html_entities(s.trim())),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    Some(Question {
        id,
        text,
        answer,
        gold,
        category: group.to_string(),
        memory_type: Some(class),
        after_item: item_count,
        time: None,
        choices: Vec::new(),
        correct_choice: None,
        as_of: None,
        metadata: anchors_metadata(&raw.anchors),
    })
}

/// The anchors' texts (entities decoded, blanks dropped) as question metadata.
fn anchors_metadata(anchors: &[serde_json::Map<String, serde_json::Value>]) -> Metadata {
    let texts: Vec<String> = anchors
        .iter()
        .flat_map(|anchor| anchor.keys())
        .map(|text| decode_html_entities(text.trim()))
        .filter(|text| !text.is_empty())
        .collect();
    let mut metadata = Metadata::new();
    if !texts.is_empty() {
        if let Ok(json) = serde_json::to_string(&texts) {
            metadata.insert(ANCHORS_KEY.to_string(), json);
        }
    }
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMORY: &str = r#"{
      "Li Lei": {
        "profile": {"Protagonist": "Li Lei", "Gender": "male", "Age": 30, "Title": "",
                    "Hobbies": ["chess", "go"]},
        "profile_description": "never an item",
        "social_relationship": {
          "2_0": {"Supporting Characters": "Han Meimei", "Relationship": "friend",
                  "Description": "They met at school &amp; stayed close."}
        },
        "events": {
          "2_0_0": {"content": "Li Lei and Han Meimei went hiking.", "summary": "Hiking",
                    "Characters": ["2_0"], "Creation Time": "May 12, 2022", "Theme": "Outdoors"},
          "2_0_1": {"content": "They watched &quot;Up&quot;.", "Creation Time": "in recent years"}
        },
        "dialogues": {
          "2_0_1#1": {"events": "2_0_1", "contents": {"2022-06-01 20:00": ["Li Lei: Great movie!", "Han Meimei: It&#39;s lovely."]}},
          "2_0_0#0": {"events": "2_0_0", "contents": {"2022-05-12 10:00": ["Li Lei: Nice view.", "Han Meimei: Yes!"]}},
          "2_9_9#2": {"events": "2_9_9", "contents": {"2022-07-01 09:00": ["Li Lei: Hm."]}}
        }
      }
    }"#;

    const QA: &str = r#"[
      {"Li Lei": {
        "profile": [
          {"Question": "What is Li Lei&#39;s gender?", "Answer": "Male.", "Reference Memory": "Gender", "Memory Anchors": []},
          {"Question": "What is his title?", "Answer": "None.", "Reference Memory": "Title", "Memory Anchors": []}
        ],
        "social_relationship": [{"2_0": [
          {"Question": "Who is Han Meimei?", "Answer": "A friend.", "Reference Memory": "['2_0']", "Memory Anchors": []}
        ]}],
        "events": [{"2_0_0": [
          {"Question": "Where did they go?", "Answer": "Hiking.", "Reference Memory": "['2_0_0', '2_7_7']", "Memory Anchors": []},
          {"Question": "Broken?", "Answer": "x"}
        ]}],
        "dialogues": [{"2_0_0#0": [
          {"Question": "What did Li Lei say?", "Answer": "Nice view.", "Reference Memory": ["2_0_0#0"], "Memory Anchors": []}
        ]}]
      }},
      {"Nobody": {"profile": []}}
    ]"#;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).expect("write fixture");
    }

    #[test]
    fn parses_references() {
        let parse = |v: serde_json::Value| parse_reference(&v).expect("parses");
        assert_eq!(parse(serde_json::json!("['1_0_0#0']")), ["1_0_0#0"]);
        assert_eq!(parse(serde_json::json!("['1_0', \"1_1\"]")), ["1_0", "1_1"]);
        assert_eq!(parse(serde_json::json!("Gender")), ["Gender"]);
        assert_eq!(parse(serde_json::json!(["1_0"])), ["1_0"]);
        assert!(parse(serde_json::json!("[]")).is_empty());
        assert!(parse_reference(&serde_json::json!(3)).is_err());
    }

    #[test]
    fn loads_fixture() {
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), MEMORY_FILE, MEMORY);
        write(dir.path(), QA_FILE, QA);
        let dataset = load_perltqa_dir(dir.path()).expect("loads");
        assert_eq!(dataset.conversations.len(), 1);
        let conv = &dataset.conversations[0];
        assert_eq!(conv.id, "Li Lei");
        let labels: Vec<&str> = conv.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "profile:Protagonist",
                "profile:Gender",
                "profile:Age",
                "profile:Hobbies",
                "2_0",
                "2_0_0",
                "2_0_0#0",
                "2_0_1",
                "2_0_1#1",
                "2_9_9#2"
            ]
        );
        let item = |label: &str| conv.item(label).expect("item exists");
        assert_eq!(item("profile:Age").text, "Li Lei's Age: 30");
        assert_eq!(item("profile:Hobbies").text, "Li Lei's Hobbies: chess, go");
        assert_eq!(
            item("2_0").text,
            "Relationship with Han Meimei: friend. They met at school & stayed close."
        );
        assert_eq!(item("2_0_1").text, "They watched \"Up\".");
        assert_eq!(item("2_0_1").time, None);
        assert!(item("2_0_0").time.is_some());
        assert_eq!(item("2_0_0").session, "event");
        assert_eq!(
            item("2_0_1#1").text,
            "Li Lei: Great movie!\nHan Meimei: It's lovely."
        );
        assert_eq!(
            item("2_0_1#1").time,
            crate::text::parse_perltqa_dialogue_time("2022-06-01 20:00")
        );
        assert_eq!(item("2_0_1#1").session, "dialogue");
        assert_eq!(item("2_0").role, Role::User);

        let ids: Vec<&str> = conv.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "Li Lei/profile/0",
                "Li Lei/social_relationship/2_0/0",
                "Li Lei/events/2_0_0/0",
                "Li Lei/dialogues/2_0_0#0/0"
            ]
        );
        let q = &conv.questions[0];
        assert_eq!(q.text, "What is Li Lei's gender?");
        assert_eq!(q.gold, ["profile:Gender"]);
        assert_eq!(q.memory_type, Some(MemoryClass::Semantic));
        assert_eq!(q.after_item, 10);
        assert_eq!(conv.questions[2].gold, ["2_0_0"]);
        assert_eq!(conv.questions[2].memory_type, Some(MemoryClass::Episodic));
        assert_eq!(conv.questions[3].category, "dialogues");

        let count = |action| {
            dataset
                .defects
                .iter()
                .filter(|d| d.action == action)
                .count()
        };
        // Title is empty (no item) → profile[1] skipped; events[1] has no reference.
        assert_eq!(
            count(DefectAction::SkippedQuestion),
            2,
            "{:#?}",
            dataset.defects
        );
        // 2_7_7 and profile:Title.
        assert_eq!(count(DefectAction::DroppedReference), 2);
        // "Nobody" has questions but no memories.
        assert_eq!(count(DefectAction::SkippedRecord), 1);
        // 2_9_9#2 belongs to a missing event.
        assert_eq!(count(DefectAction::Kept), 1);
    }

    #[test]
    fn missing_files_are_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = load_perltqa_dir(dir.path()).expect_err("no files");
        assert!(err.to_string().contains(MEMORY_FILE), "{err}");
        write(dir.path(), "perltmem_en.json", MEMORY);
        write(dir.path(), "perltqa_en.json", "{}");
        let err = load_perltqa_dir(dir.path()).expect_err("qa not a list");
        assert!(matches!(err, DatasetError::Structure { .. }), "{err}");
    }
}
