//! The labelled question set the classifier is trained on (JSONL, one question a line).

use serde::{Deserialize, Serialize};

use crate::TrainError;

/// The memory type a question asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryLabel {
    Semantic,
    Episodic,
}

impl QueryLabel {
    pub fn is_semantic(self) -> bool {
        self == QueryLabel::Semantic
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QueryLabel::Semantic => "semantic",
            QueryLabel::Episodic => "episodic",
        }
    }
}

/// One line of the question set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledQuery {
    pub text: String,
    pub label: QueryLabel,
    /// "en" or "zh".
    pub lang: String,
}

/// A parsed question set and the checksum that identifies it in the weights trained on it.
#[derive(Clone, Debug, PartialEq)]
pub struct QuestionSet {
    pub questions: Vec<LabelledQuery>,
    /// [`training_set_checksum`] of the file's bytes.
    pub checksum: String,
}

impl QuestionSet {
    /// Parse a JSONL question set (blank lines allowed). Errors name the offending line.
    pub fn parse(jsonl: &str) -> Result<Self, TrainError> {
        let mut questions = Vec::new();
        for (index, line) in jsonl.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let query: LabelledQuery =
                serde_json::from_str(line).map_err(|source| TrainError::QuestionLine {
                    line: index + 1,
                    source,
                })?;
            if query.text.trim().is_empty() {
                return Err(TrainError::EmptyQuestion { line: index + 1 });
            }
            questions.push(query);
        }
        if questions.is_empty() {
            return Err(TrainError::EmptyQuestionSet);
        }
        Ok(QuestionSet {
            questions,
            checksum: training_set_checksum(jsonl),
        })
    }

    pub fn semantic_count(&self) -> usize {
        self.questions
            .iter()
            .filter(|q| q.label.is_semantic())
            .count()
    }

    /// Questions with `lang` = `lang` ("en", "zh").
    pub fn count_in(&self, lang: &str) -> usize {
        self.questions.iter().filter(|q| q.lang == lang).count()
    }
}

/// FNV-1a (64 bit) of the question set's bytes: identifies which set weights were trained on.
pub fn training_set_checksum(jsonl: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in jsonl.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The question set the shipped weights were trained on.
    const SHIPPED_SET: &str = include_str!("../../offline/data/query_types.jsonl");

    #[test]
    fn malformed_sets_are_typed_errors_naming_the_line() {
        assert!(matches!(
            QuestionSet::parse(""),
            Err(TrainError::EmptyQuestionSet)
        ));
        assert!(matches!(
            QuestionSet::parse("\n{\"text\": \"x\", \"label\": \"other\", \"lang\": \"en\"}"),
            Err(TrainError::QuestionLine { line: 2, .. })
        ));
        assert!(matches!(
            QuestionSet::parse("{\"text\": \" \", \"label\": \"semantic\", \"lang\": \"en\"}"),
            Err(TrainError::EmptyQuestion { line: 1 })
        ));
    }

    #[test]
    fn shipped_set_is_balanced_and_bilingual() {
        let set = QuestionSet::parse(SHIPPED_SET).unwrap();
        assert!(set.questions.len() >= 400);
        assert!(set.count_in("zh") >= 150);
        assert!(set
            .questions
            .iter()
            .all(|q| (q.lang == "zh") == mnemos_text::has_cjk(&q.text)));
        // Neither class may dominate: the questions about things (episodic) tilt it a little.
        let share = set.semantic_count() as f64 / set.questions.len() as f64;
        assert!((0.35..=0.65).contains(&share), "{share}");
    }
}
