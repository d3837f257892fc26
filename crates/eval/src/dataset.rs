//! The common in-memory form of a retrieval benchmark.
//!
//! Every supported dataset becomes conversations of labelled items (the units a memory engine
//! ingests, in stream order) plus questions whose gold answers are item labels. A runner ingests
//! `items[..question.after_item]`, asks the question, and scores the retrieved labels with
//! [`crate::metrics`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use mnemos_core::{Metadata, Role, Timestamp};
use serde::{Deserialize, Serialize};

/// A loaded benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalDataset {
    /// "locomo", "memdaily" or "perltqa".
    pub name: String,
    pub conversations: Vec<Conversation>,
    /// Questions left out by design (not defects), counted per reason,
    /// e.g. LoCoMo's adversarial category.
    pub excluded: BTreeMap<String, usize>,
    /// Everything odd found while loading, with what the loader did about it.
    pub defects: Vec<Defect>,
}

/// One independent memory stream: ingest its items, then ask its questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// "conv-26", "simple/roles/0", "Wang Xiaoming".
    pub id: String,
    /// In stream order; labels are unique within the conversation.
    pub items: Vec<Item>,
    pub questions: Vec<Question>,
}

/// One unit of memory input: a dialogue turn, a message, or a memory record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The dataset's own id, used as gold: LoCoMo "D1:3", MemDaily "0" (message position),
    /// PerLTQA "profile:Age", "1_0", "1_0_0", "1_0_0#0".
    pub label: String,
    pub role: Role,
    pub speaker: Option<String>,
    pub text: String,
    pub time: Option<Timestamp>,
    /// LoCoMo "session_1", MemDaily "0" (one session per trajectory), PerLTQA memory type
    /// "profile" | "relationship" | "event" | "dialogue".
    pub session: String,
    /// Dataset-specific extras (MemDaily place, LoCoMo image caption, PerLTQA event theme, …).
    pub metadata: Metadata,
}

/// Semantic (facts about people) versus episodic (things that happened) memory, as PerLTQA
/// classifies its questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryClass {
    Semantic,
    Episodic,
}

impl MemoryClass {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryClass::Semantic => "semantic",
            MemoryClass::Episodic => "episodic",
        }
    }
}

/// A question with gold item labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Unique within the dataset: "conv-26/q12", "simple/roles/0/q0",
    /// "Wang Xiaoming/events/1_0_0/2".
    pub id: String,
    pub text: String,
    pub answer: Option<String>,
    /// Labels of the items that hold the answer; never empty, no duplicates, all exist.
    pub gold: Vec<String>,
    /// LoCoMo "multi-hop" | "temporal" | "open-domain" | "single-hop"; MemDaily qa_type;
    /// PerLTQA group "profile" | "social_relationship" | "events" | "dialogues".
    pub category: String,
    /// PerLTQA only: profile and social_relationship are semantic, events and dialogues episodic.
    pub memory_type: Option<MemoryClass>,
    /// How many items (a prefix of `Conversation::items`) are observed before the question is
    /// asked. All current datasets ask after the whole stream.
    pub after_item: usize,
    /// When the question is asked, if the dataset says (MemDaily).
    pub time: Option<Timestamp>,
    /// Multiple-choice options (MemDaily), sorted by key.
    pub choices: Vec<(String, String)>,
    pub correct_choice: Option<String>,
    /// Asked about the past: the recall answers from what was valid at this moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Timestamp>,
    /// Dataset-specific extras (LoCoMo category number, MemDaily scenario).
    pub metadata: Metadata,
}

/// What a loader did about a defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefectAction {
    /// A gold reference was removed from a question that still has others.
    DroppedReference,
    /// A question was left out.
    SkippedQuestion,
    /// An item, conversation or other record was left out.
    SkippedRecord,
    /// Loaded as is; the defect is reported for transparency.
    Kept,
}

impl DefectAction {
    pub fn as_str(self) -> &'static str {
        match self {
            DefectAction::DroppedReference => "dropped_reference",
            DefectAction::SkippedQuestion => "skipped_question",
            DefectAction::SkippedRecord => "skipped_record",
            DefectAction::Kept => "kept",
        }
    }
}

/// A problem in the source data, located precisely enough to find it in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defect {
    /// E.g. "conv-26 qa[12]", "simple/roles[3] message_list[4]", "Xu Jia events/9_0_0[1]".
    pub location: String,
    pub problem: String,
    pub action: DefectAction,
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} [{}]",
            self.location,
            self.problem,
            self.action.as_str()
        )
    }
}

/// Counts describing a loaded dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSummary {
    pub name: String,
    pub conversations: usize,
    pub items: usize,
    pub questions: usize,
    /// Questions left out by design (see [`RetrievalDataset::excluded`]).
    pub excluded: usize,
    pub defects: usize,
    /// Defects per action ("kept", "skipped_question", …).
    pub defects_by_action: BTreeMap<String, usize>,
    pub questions_by_category: BTreeMap<String, usize>,
}

impl fmt::Display for DatasetSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} conversations, {} items, {} questions, {} excluded, {} defects",
            self.name, self.conversations, self.items, self.questions, self.excluded, self.defects
        )?;
        if !self.defects_by_action.is_empty() {
            let parts: Vec<String> = self
                .defects_by_action
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        let parts: Vec<String> = self
            .questions_by_category
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        write!(f, "; questions by category: {}", parts.join(", "))
    }
}

impl RetrievalDataset {
    pub(crate) fn new(name: &str) -> Self {
        RetrievalDataset {
            name: name.to_string(),
            conversations: Vec::new(),
            excluded: BTreeMap::new(),
            defects: Vec::new(),
        }
    }

    pub fn summary(&self) -> DatasetSummary {
        let mut defects_by_action = BTreeMap::new();
        for defect in &self.defects {
            *defects_by_action
                .entry(defect.action.as_str().to_string())
                .or_insert(0) += 1;
        }
        let mut questions_by_category = BTreeMap::new();
        for (_, question) in self.questions() {
            *questions_by_category
                .entry(question.category.clone())
                .or_insert(0) += 1;
        }
        DatasetSummary {
            name: self.name.clone(),
            conversations: self.conversations.len(),
            items: self.conversations.iter().map(|c| c.items.len()).sum(),
            questions: self.conversations.iter().map(|c| c.questions.len()).sum(),
            excluded: self.excluded.values().sum(),
            defects: self.defects.len(),
            defects_by_action,
            questions_by_category,
        }
    }

    /// All questions with their conversation.
    pub fn questions(&self) -> impl Iterator<Item = (&Conversation, &Question)> {
        self.conversations
            .iter()
            .flat_map(|c| c.questions.iter().map(move |q| (c, q)))
    }

    pub(crate) fn defect(
        &mut self,
        location: impl Into<String>,
        problem: impl Into<String>,
        action: DefectAction,
    ) {
        self.defects.push(Defect {
            location: location.into(),
            problem: problem.into(),
            action,
        });
    }
}

impl Conversation {
    /// Position of each label in `items`.
    pub fn label_index(&self) -> HashMap<&str, usize> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, item)| (item.label.as_str(), i))
            .collect()
    }

    pub fn item(&self, label: &str) -> Option<&Item> {
        self.items.iter().find(|item| item.label == label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(label: &str) -> Item {
        Item {
            label: label.to_string(),
            role: Role::User,
            speaker: None,
            text: format!("text {label}"),
            time: None,
            session: "s".to_string(),
            metadata: Metadata::new(),
        }
    }

    fn question(id: &str, category: &str) -> Question {
        Question {
            id: id.to_string(),
            text: "q".to_string(),
            answer: None,
            gold: vec!["a".to_string()],
            category: category.to_string(),
            memory_type: None,
            after_item: 2,
            time: None,
            choices: Vec::new(),
            correct_choice: None,
            as_of: None,
            metadata: Metadata::new(),
        }
    }

    #[test]
    fn summary_counts() {
        let mut dataset = RetrievalDataset::new("toy");
        dataset.conversations.push(Conversation {
            id: "c1".to_string(),
            items: vec![item("a"), item("b")],
            questions: vec![question("q1", "x"), question("q2", "y")],
        });
        dataset.conversations.push(Conversation {
            id: "c2".to_string(),
            items: vec![item("a")],
            questions: vec![question("q3", "x")],
        });
        dataset.excluded.insert("adversarial".to_string(), 4);
        dataset.defect("c1 qa[0]", "no evidence", DefectAction::SkippedQuestion);
        dataset.defect("c1 qa[1]", "missing id", DefectAction::DroppedReference);
        dataset.defect("c2 qa[0]", "odd", DefectAction::DroppedReference);

        let summary = dataset.summary();
        assert_eq!(summary.conversations, 2);
        assert_eq!(summary.items, 3);
        assert_eq!(summary.questions, 3);
        assert_eq!(summary.excluded, 4);
        assert_eq!(summary.defects, 3);
        assert_eq!(summary.defects_by_action.get("dropped_reference"), Some(&2));
        assert_eq!(summary.questions_by_category.get("x"), Some(&2));
        let text = summary.to_string();
        assert!(text.starts_with("toy: 2 conversations, 3 items, 3 questions, 4 excluded"));

        let c1 = &dataset.conversations[0];
        assert_eq!(c1.label_index().get("b"), Some(&1));
        assert_eq!(c1.item("a").map(|i| i.text.as_str()), Some("text a"));
        assert!(c1.item("zz").is_none());

        let json = serde_json::to_string(&dataset).expect("serializable");
        let back: RetrievalDataset = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, dataset);
    }
}
