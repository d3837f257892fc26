//! Tasks built from plain texts, as a person types them (`mnemos model try TASK TEXT…`), or
//! from a JSON object of the task's fields.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::memory_model::{Line, ModelError, PersonaSchema, Task, TaskOutput};
use crate::model::Role;

/// The name of a [`Task`], as chosen on a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
pub enum TaskName {
    Summarize,
    PersonaSnapshot,
    Categorize,
    Conflicts,
    Merge,
    Compress,
    Recoverable,
    RateImportance,
    Arousal,
    Surprise,
    Sufficient,
    Helps,
    ClassifyQuery,
    ClassifyMemory,
    Answer,
    Choose,
}

/// What a task built from texts needs besides the texts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskTextOptions {
    /// The options of `choose`.
    pub options: Vec<String>,
    /// Token budget of `summarize`.
    pub budget: usize,
    /// Summary level of `summarize` (1 = raw dialogue).
    pub level: u8,
}

impl TaskName {
    /// The task's tag (`persona_snapshot`…), as [`Task::name`] gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskName::Summarize => "summarize",
            TaskName::PersonaSnapshot => "persona_snapshot",
            TaskName::Categorize => "categorize",
            TaskName::Conflicts => "conflicts",
            TaskName::Merge => "merge",
            TaskName::Compress => "compress",
            TaskName::Recoverable => "recoverable",
            TaskName::RateImportance => "rate_importance",
            TaskName::Arousal => "arousal",
            TaskName::Surprise => "surprise",
            TaskName::Sufficient => "sufficient",
            TaskName::Helps => "helps",
            TaskName::ClassifyQuery => "classify_query",
            TaskName::ClassifyMemory => "classify_memory",
            TaskName::Answer => "answer",
            TaskName::Choose => "choose",
        }
    }

    /// The shape of the texts the task reads, for help and errors.
    pub fn shape(self) -> &'static str {
        match self {
            TaskName::Summarize | TaskName::PersonaSnapshot | TaskName::Categorize => {
                "texts or dialogue lines (\"Name: text\")"
            }
            TaskName::Conflicts | TaskName::Merge => "PREVIOUS NEW",
            TaskName::Recoverable => "ORIGINAL COMPRESSED",
            TaskName::Compress
            | TaskName::Arousal
            | TaskName::ClassifyQuery
            | TaskName::ClassifyMemory => "TEXT",
            TaskName::RateImportance => "PAST_SUMMARY (may be \"\") LINE…",
            TaskName::Surprise => "CONTEXT_LINE… UTTERANCE",
            TaskName::Sufficient | TaskName::Answer => "QUERY MEMORY…",
            TaskName::Helps => "QUERY MEMORY… CANDIDATE",
            TaskName::Choose => "QUESTION MEMORY… (and an option per --option)",
        }
    }

    fn fewest_texts(self) -> usize {
        match self {
            TaskName::Conflicts
            | TaskName::Merge
            | TaskName::Recoverable
            | TaskName::RateImportance
            | TaskName::Helps => 2,
            _ => 1,
        }
    }

    /// The task from positional texts (see [`shape`](Self::shape)).
    pub fn task(self, texts: Vec<String>, options: &TaskTextOptions) -> Result<Task, ModelError> {
        if texts.len() < self.fewest_texts() {
            return Err(ModelError::invalid(format!(
                "{} reads {} ({} text(s) given)",
                self.as_str(),
                self.shape(),
                texts.len()
            )));
        }
        let lines = |t: &[String]| t.iter().map(|s| Line::parse(s)).collect::<Vec<_>>();
        let pair = || (texts[0].clone(), texts[1].clone());
        Ok(match self {
            TaskName::Summarize => Task::Summarize {
                texts,
                level: options.level,
                token_budget: options.budget,
            },
            TaskName::PersonaSnapshot => Task::PersonaSnapshot {
                window: lines(&texts),
                schema: PersonaSchema::default_keys(),
            },
            TaskName::Categorize => Task::Categorize {
                session: lines(&texts),
            },
            TaskName::Conflicts => {
                let (previous, new) = pair();
                Task::Conflicts { previous, new }
            }
            TaskName::Merge => {
                let (previous, new) = pair();
                Task::Merge { previous, new }
            }
            TaskName::Recoverable => {
                let (original, compressed) = pair();
                Task::Recoverable {
                    original,
                    compressed,
                }
            }
            TaskName::Compress => Task::Compress {
                text: texts.join(" "),
            },
            TaskName::Arousal => Task::Arousal {
                text: texts.join(" "),
            },
            TaskName::ClassifyQuery => Task::ClassifyQuery {
                query: texts.join(" "),
            },
            TaskName::ClassifyMemory => Task::ClassifyMemory {
                text: texts.join(" "),
            },
            TaskName::RateImportance => Task::RateImportance {
                past_summary: texts[0].clone(),
                exchange: lines(&texts[1..]),
            },
            TaskName::Surprise => Task::Surprise {
                context: lines(&texts[..texts.len() - 1]),
                utterance: texts[texts.len() - 1].clone(),
            },
            TaskName::Sufficient => Task::Sufficient {
                query: texts[0].clone(),
                memories: texts[1..].to_vec(),
            },
            TaskName::Answer => Task::Answer {
                query: texts[0].clone(),
                memories: texts[1..].to_vec(),
            },
            TaskName::Helps => Task::Helps {
                query: texts[0].clone(),
                memories: texts[1..texts.len() - 1].to_vec(),
                candidate: texts[texts.len() - 1].clone(),
            },
            TaskName::Choose => Task::Choose {
                question: texts[0].clone(),
                options: options.options.clone(),
                memories: texts[1..].to_vec(),
            },
        })
    }

    /// The task from a JSON object of its fields (e.g. `{"text": "…"}`).
    pub fn task_from_json(self, json: &str) -> Result<Task, ModelError> {
        let mut value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| ModelError::invalid(format!("the task input is not valid JSON: {e}")))?;
        let object = value.as_object_mut().ok_or_else(|| {
            ModelError::invalid("the task input must be a JSON object of the task's fields")
        })?;
        object.insert(
            "task".into(),
            serde_json::Value::String(self.as_str().into()),
        );
        serde_json::from_value(value).map_err(|e| {
            ModelError::invalid(format!(
                "the input does not fit the {} task: {e}",
                self.as_str()
            ))
        })
    }
}

impl Line {
    /// "Name: text" → a line spoken by Name (role user); otherwise an unnamed user line.
    pub fn parse(raw: &str) -> Line {
        match raw.split_once([':', '：']) {
            Some((name, text))
                if !name.trim().is_empty()
                    && name.chars().count() <= 32
                    && !name.trim().contains(' ')
                    && !text.trim().is_empty() =>
            {
                Line::new(Role::User, Some(name.trim()), text.trim())
            }
            _ => Line::new(Role::User, None, raw.trim()),
        }
    }
}

/// A task's output as a person reads it: the text, the persona values one per line, each
/// category with its lines, yes/no, a score, the query class with its probabilities, the option.
impl fmt::Display for TaskOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskOutput::Text(t) => f.write_str(t),
            TaskOutput::Persona(values) if values.is_empty() => {
                f.write_str("(no persona values found)")
            }
            TaskOutput::Persona(values) => {
                let lines: Vec<String> = values
                    .iter()
                    .map(|v| {
                        let line = v.line.map(|l| format!("  [line {}]", l + 1));
                        format!("{:<14} {}{}", v.key, v.value, line.unwrap_or_default())
                    })
                    .collect();
                f.write_str(&lines.join("\n"))
            }
            TaskOutput::Categories(categories) => {
                let lines: Vec<String> = categories
                    .iter()
                    .map(|c| {
                        let at: Vec<String> = c.lines.iter().map(|l| (l + 1).to_string()).collect();
                        format!("[{}] (lines {}) {}", c.category, at.join(","), c.summary)
                    })
                    .collect();
                f.write_str(&lines.join("\n"))
            }
            TaskOutput::Flag(b) => f.write_str(if *b { "yes" } else { "no" }),
            TaskOutput::Importance(i) => write!(f, "{i} / 10"),
            TaskOutput::Score(s) => write!(f, "{s:.4}"),
            TaskOutput::QueryClass(c) => write!(
                f,
                "{} (P(semantic) = {:.3}, P(episodic) = {:.3})",
                if c.is_semantic() {
                    "semantic"
                } else {
                    "episodic"
                },
                c.semantic,
                c.episodic
            ),
            TaskOutput::Choice(i) => write!(f, "option {}", i + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_follow_the_task_enum() {
        let task = TaskName::Arousal
            .task(texts(&["wow"]), &TaskTextOptions::default())
            .unwrap();
        assert_eq!(task.name(), TaskName::Arousal.as_str());
        assert_eq!(TaskName::Choose.as_str(), "choose");
        assert_eq!(TaskName::PersonaSnapshot.as_str(), "persona_snapshot");
    }

    #[test]
    fn positional_texts_map_to_each_task_shape() {
        let options = TaskTextOptions::default();
        let t = TaskName::Conflicts
            .task(texts(&["I live in Paris", "I live in Berlin"]), &options)
            .unwrap();
        assert_eq!(
            t,
            Task::Conflicts {
                previous: "I live in Paris".into(),
                new: "I live in Berlin".into()
            }
        );
        let t = TaskName::Helps
            .task(texts(&["q", "m1", "m2", "cand"]), &options)
            .unwrap();
        assert!(matches!(t, Task::Helps { ref memories, ref candidate, .. }
            if memories.len() == 2 && candidate == "cand"));
        let t = TaskName::PersonaSnapshot
            .task(texts(&["小明：我是护士", "plain line"]), &options)
            .unwrap();
        let Task::PersonaSnapshot { window, .. } = t else {
            panic!("wrong task")
        };
        assert_eq!(window[0].speaker.as_deref(), Some("小明"));
        assert_eq!(window[0].text, "我是护士");
        assert_eq!(window[1].speaker, None);
        let err = TaskName::Merge
            .task(texts(&["only one"]), &options)
            .unwrap_err();
        assert!(err.to_string().contains("PREVIOUS NEW"), "{err}");
    }

    #[test]
    fn outputs_read_as_text() {
        use crate::memory_model::PersonaValue;
        let persona = TaskOutput::Persona(vec![PersonaValue {
            key: "job".into(),
            value: "护士".into(),
            line: Some(0),
        }]);
        assert_eq!(persona.to_string(), "job            护士  [line 1]");
        assert_eq!(TaskOutput::Flag(true).to_string(), "yes");
        assert_eq!(TaskOutput::Choice(1).to_string(), "option 2");
        assert_eq!(
            TaskOutput::Persona(vec![]).to_string(),
            "(no persona values found)"
        );
    }

    #[test]
    fn json_input_is_checked_against_the_task() {
        assert_eq!(
            TaskName::Arousal
                .task_from_json(r#"{"text": "wow!!!"}"#)
                .unwrap(),
            Task::Arousal {
                text: "wow!!!".into()
            }
        );
        assert!(TaskName::Arousal
            .task_from_json(r#"{"txt": "wow"}"#)
            .is_err());
        assert!(TaskName::Arousal.task_from_json("not json").is_err());
    }
}
