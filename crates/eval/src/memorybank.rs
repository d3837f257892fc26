//! MemoryBank (SiliconFriend) loader: `memory_bank_<lang>.json` and
//! `probing_questions_<lang>.jsonl`, English (`en`) or Chinese (`cn`).
//!
//! The memory file is `{user: {name, history: {"2023-04-27": [{query, response}]}, …}}`; each
//! user becomes one [`Conversation`] (id = the user key, trimmed) whose items are, per exchange,
//! the user's `query` ([`Role::User`], speaker = the user) and the companion's `response`
//! ([`Role::Assistant`]), labelled `<date>#<exchange>/query` and `<date>#<exchange>/response`.
//! Session = the date; time = midnight of the date (UTC), the only time the data gives.
//!
//! The probing file has one `{user: [question, …]}` object per line. The questions have no gold
//! answers and no evidence, and [`Question::gold`](crate::Question::gold) must not be empty, so
//! they are not questions of the retrieval dataset: they are returned beside it as
//! [`MemoryBankProbe`]s (asked after the user's whole history), for answer generation judged by
//! a person or a model. The retrieval dataset therefore has no questions.
//!
//! Quirks of the published files: four English user keys carry stray spaces (" Jason ") that
//! the probing file does not, so keys are trimmed (reported as kept defects); some English
//! questions are wrapped in literal double quotes, which are removed silently. Other problems
//! are located defects: `memory_bank_en.json Emily/history/2023-04-28[2].response`,
//! `probing_questions_en.jsonl:3 Lucy[4]`. A missing probing file is a defect, not an error.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use mnemos_core::{Metadata, Role};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, DefectAction, Item, RetrievalDataset};
use crate::error::DatasetError;
use crate::json::{read_json_file, read_json_lines, Node};
use crate::text::parse_iso_date;

/// Which half of the MemoryBank evaluation data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryBankLanguage {
    En,
    Cn,
}

impl MemoryBankLanguage {
    /// "en" or "cn", as in the file and folder names.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryBankLanguage::En => "en",
            MemoryBankLanguage::Cn => "cn",
        }
    }
}

impl fmt::Display for MemoryBankLanguage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MemoryBankLanguage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "en" => Ok(MemoryBankLanguage::En),
            "cn" | "zh" => Ok(MemoryBankLanguage::Cn),
            other => Err(format!(
                "unknown MemoryBank language '{other}' (expected en or cn)"
            )),
        }
    }
}

/// The chat histories as a retrieval dataset (without questions) plus the probing questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBankDataset {
    /// Named "memorybank-en" / "memorybank-cn"; all defects of both files are here.
    pub dataset: RetrievalDataset,
    /// In file order.
    pub probes: Vec<MemoryBankProbe>,
}

/// A probing question about one user's history; it has no reference answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBankProbe {
    /// `<user>/p<n>`, `n` counting the user's questions from 0.
    pub id: String,
    /// The [`Conversation::id`] of the user it is asked of.
    pub user: String,
    pub text: String,
}

/// Load one language. `dir` is either the `eval_data` folder (holding `en/` and `cn/`) or the
/// language folder itself.
pub fn load_memorybank(
    dir: &Path,
    language: MemoryBankLanguage,
) -> Result<MemoryBankDataset, DatasetError> {
    let lang = language.as_str();
    let memory_name = format!("memory_bank_{lang}.json");
    let probe_name = format!("probing_questions_{lang}.jsonl");
    let folder: PathBuf = if dir.join(&memory_name).is_file() {
        dir.to_path_buf()
    } else {
        dir.join(lang)
    };
    let memory_path = folder.join(&memory_name);

    let root = read_json_file(&memory_path)?;
    let users = root.as_object().ok_or_else(|| {
        DatasetError::structure(
            &memory_path,
            "top level",
            format!(
                "expected an object {{user: {{history: {{date: [exchange]}}}}}}, found {}",
                root.kind()
            ),
        )
    })?;
    let mut dataset = RetrievalDataset::new(&format!("memorybank-{lang}"));
    for (key, user) in users {
        let location = format!("{memory_name} {key}");
        let id = key.trim();
        if id.is_empty() {
            dataset.defect(location, "empty user key", DefectAction::SkippedRecord);
            continue;
        }
        if id != key {
            dataset.defect(
                &location,
                format!("user key {key:?} has stray spaces; trimmed to {id:?}"),
                DefectAction::Kept,
            );
        }
        if dataset.conversations.iter().any(|c| c.id == id) {
            dataset.defect(
                location,
                format!("duplicate user {id:?}"),
                DefectAction::SkippedRecord,
            );
            continue;
        }
        if let Some(conversation) = load_user(&mut dataset, &memory_name, id, user) {
            dataset.conversations.push(conversation);
        }
    }
    if dataset.conversations.is_empty() {
        return Err(DatasetError::structure(
            &memory_path,
            "all users",
            "no user with a usable history",
        ));
    }

    let probes = load_probes(&mut dataset, &folder.join(&probe_name), &probe_name)?;
    Ok(MemoryBankDataset { dataset, probes })
}

fn load_user(
    dataset: &mut RetrievalDataset,
    file: &str,
    id: &str,
    user: &Node,
) -> Option<Conversation> {
    let Some(history) = user.get("history").and_then(Node::as_object) else {
        dataset.defect(
            format!("{file} {id}"),
            "missing or non-object `history`",
            DefectAction::SkippedRecord,
        );
        return None;
    };
    let mut items = Vec::new();
    for (date, exchanges) in history {
        let location = format!("{file} {id}/history/{date}");
        let time = parse_iso_date(date);
        if time.is_none() {
            dataset.defect(
                &location,
                "date is not YYYY-MM-DD; items have no time",
                DefectAction::Kept,
            );
        }
        let Some(exchanges) = exchanges.as_array() else {
            dataset.defect(
                location,
                format!("expected an array of exchanges, found {}", exchanges.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        for (index, exchange) in exchanges.iter().enumerate() {
            for (field, role) in [("query", Role::User), ("response", Role::Assistant)] {
                let text = exchange.get(field).and_then(Node::as_str).map(str::trim);
                let Some(text) = text.filter(|t| !t.is_empty()) else {
                    dataset.defect(
                        format!("{location}[{index}].{field}"),
                        format!("missing or empty `{field}`"),
                        DefectAction::SkippedRecord,
                    );
                    continue;
                };
                items.push(Item {
                    label: format!("{}#{index}/{field}", date.trim()),
                    role,
                    speaker: (role == Role::User).then(|| id.to_string()),
                    text: text.to_string(),
                    time,
                    session: date.trim().to_string(),
                    metadata: Metadata::new(),
                });
            }
        }
    }
    if items.is_empty() {
        dataset.defect(
            format!("{file} {id}"),
            "no usable exchange",
            DefectAction::SkippedRecord,
        );
        return None;
    }
    Some(Conversation {
        id: id.to_string(),
        items,
        questions: Vec::new(),
    })
}

/// `"\"What kind of music do I like?\""` → `What kind of music do I like?`.
fn strip_wrapping_quotes(text: &str) -> &str {
    let text = text.trim();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('"') => inner.trim(),
        _ => text,
    }
}

fn load_probes(
    dataset: &mut RetrievalDataset,
    path: &Path,
    file: &str,
) -> Result<Vec<MemoryBankProbe>, DatasetError> {
    let mut probes: Vec<MemoryBankProbe> = Vec::new();
    if !path.is_file() {
        dataset.defect(file, "no probing-question file", DefectAction::Kept);
        return Ok(probes);
    }
    for line in read_json_lines(path)? {
        let location = format!("{file}:{}", line.number);
        let node = match line.value {
            Ok(node) => node,
            Err(problem) => {
                dataset.defect(location, problem, DefectAction::SkippedRecord);
                continue;
            }
        };
        let Some(entries) = node.as_object() else {
            dataset.defect(
                location,
                format!(
                    "expected an object {{user: [question]}}, found {}",
                    node.kind()
                ),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        for (key, questions) in entries {
            let user_location = format!("{location} {key}");
            let user = key.trim();
            if !dataset.conversations.iter().any(|c| c.id == user) {
                dataset.defect(
                    user_location,
                    format!("no history for user {user:?}; questions skipped"),
                    DefectAction::SkippedQuestion,
                );
                continue;
            }
            let Some(questions) = questions.as_array() else {
                dataset.defect(
                    user_location,
                    format!("expected an array of questions, found {}", questions.kind()),
                    DefectAction::SkippedQuestion,
                );
                continue;
            };
            for (index, question) in questions.iter().enumerate() {
                let text = question.as_str().map(strip_wrapping_quotes);
                let Some(text) = text.filter(|t| !t.is_empty()) else {
                    dataset.defect(
                        format!("{user_location}[{index}]"),
                        "empty or non-string question",
                        DefectAction::SkippedQuestion,
                    );
                    continue;
                };
                let number = probes.iter().filter(|p| p.user == user).count();
                probes.push(MemoryBankProbe {
                    id: format!("{user}/p{number}"),
                    user: user.to_string(),
                    text: text.to_string(),
                });
            }
        }
    }
    Ok(probes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Timestamp;

    const MEMORY: &str = r#"{
      " Ann ": {"name": "Ann", "summary": {}, "history": {
        "2023-04-27": [
          {"query": "Hello, my name is Ann.", "response": "Hello, Ann. I'm your AI companion."},
          {"query": "I like tea.", "response": ""}
        ],
        "April 28": [{"query": "I went to the park.", "response": "Which park?"}]
      }},
      "Bob": {"name": "Bob", "history": {"2023-04-27": "oops"}},
      "Cid": {"name": "Cid"}
    }"#;

    const PROBES: &str = concat!(
        "{\"Ann\": [\"What tea do I like?\", \"\\\"Which park did I visit?\\\"\", \"\", 3]}\n",
        "\n",
        "{\"Zed\": [\"Who am I?\"]}\n",
        "not json\n",
        "{\"Ann\": [\"Do you remember my name?\"]}\n",
    );

    fn write(dir: &Path, lang: &str, memory: &str, probes: &str) {
        std::fs::write(dir.join(format!("memory_bank_{lang}.json")), memory).expect("write");
        std::fs::write(dir.join(format!("probing_questions_{lang}.jsonl")), probes).expect("write");
    }

    #[test]
    fn loads_histories_and_probes() {
        let root = tempfile::tempdir().expect("temp dir");
        let folder = root.path().join("en");
        std::fs::create_dir(&folder).expect("mkdir");
        write(&folder, "en", MEMORY, PROBES);

        // Both the eval_data folder and the language folder are accepted.
        let loaded = load_memorybank(root.path(), MemoryBankLanguage::En).expect("loads");
        assert_eq!(
            load_memorybank(&folder, MemoryBankLanguage::En).expect("loads"),
            loaded
        );
        let dataset = &loaded.dataset;
        assert_eq!(dataset.name, "memorybank-en");
        assert_eq!(dataset.conversations.len(), 1);
        let ann = &dataset.conversations[0];
        assert_eq!(ann.id, "Ann");
        assert!(ann.questions.is_empty());
        let labels: Vec<&str> = ann.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "2023-04-27#0/query",
                "2023-04-27#0/response",
                "2023-04-27#1/query",
                "April 28#0/query",
                "April 28#0/response",
            ]
        );
        let first = &ann.items[0];
        assert_eq!(first.role, Role::User);
        assert_eq!(first.speaker.as_deref(), Some("Ann"));
        assert_eq!(first.session, "2023-04-27");
        // 2023-04-27T00:00:00Z.
        assert_eq!(first.time, Some(Timestamp(1_682_553_600_000)));
        assert_eq!(ann.items[1].role, Role::Assistant);
        assert_eq!(ann.items[1].speaker, None);
        assert_eq!(ann.items[3].time, None);

        let probes: Vec<(&str, &str, &str)> = loaded
            .probes
            .iter()
            .map(|p| (p.id.as_str(), p.user.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            probes,
            [
                ("Ann/p0", "Ann", "What tea do I like?"),
                ("Ann/p1", "Ann", "Which park did I visit?"),
                ("Ann/p2", "Ann", "Do you remember my name?"),
            ]
        );

        let defects: Vec<(&str, DefectAction)> = dataset
            .defects
            .iter()
            .map(|d| (d.location.as_str(), d.action))
            .collect();
        use DefectAction::{Kept, SkippedQuestion, SkippedRecord};
        assert_eq!(
            defects,
            [
                ("memory_bank_en.json  Ann ", Kept),
                (
                    "memory_bank_en.json Ann/history/2023-04-27[1].response",
                    SkippedRecord
                ),
                ("memory_bank_en.json Ann/history/April 28", Kept),
                ("memory_bank_en.json Bob/history/2023-04-27", SkippedRecord),
                ("memory_bank_en.json Bob", SkippedRecord),
                ("memory_bank_en.json Cid", SkippedRecord),
                ("probing_questions_en.jsonl:1 Ann[2]", SkippedQuestion),
                ("probing_questions_en.jsonl:1 Ann[3]", SkippedQuestion),
                ("probing_questions_en.jsonl:3 Zed", SkippedQuestion),
                ("probing_questions_en.jsonl:4", SkippedRecord),
            ]
        );
    }

    #[test]
    fn errors_and_languages() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = load_memorybank(dir.path(), MemoryBankLanguage::Cn).expect_err("missing");
        assert!(matches!(err, DatasetError::Io { .. }), "{err}");

        // Without a probing file the histories still load.
        std::fs::write(
            dir.path().join("memory_bank_cn.json"),
            r#"{"李四": {"history": {"2023-05-01": [{"query": "你好", "response": "你好！"}]}}}"#,
        )
        .expect("write");
        let loaded = load_memorybank(dir.path(), MemoryBankLanguage::Cn).expect("loads");
        assert!(loaded.probes.is_empty());
        assert_eq!(
            loaded.dataset.defects[0].location,
            "probing_questions_cn.jsonl"
        );

        write(dir.path(), "cn", "[]", "");
        let err = load_memorybank(dir.path(), MemoryBankLanguage::Cn).expect_err("wrong shape");
        assert!(err.to_string().contains("top level"), "{err}");

        write(dir.path(), "cn", r#"{"张三": {"history": {}}}"#, "");
        let err = load_memorybank(dir.path(), MemoryBankLanguage::Cn).expect_err("empty");
        assert!(err.to_string().contains("no user"), "{err}");

        write(
            dir.path(),
            "cn",
            r#"{"张三": {"history": {"2023-05-01": [{"query": "我喜欢喝茶。", "response": "好的。"}]}}}"#,
            "{\"张三\": [\"我喜欢喝什么？\"]}",
        );
        let loaded = load_memorybank(dir.path(), MemoryBankLanguage::Cn).expect("loads");
        assert_eq!(loaded.dataset.name, "memorybank-cn");
        assert_eq!(loaded.probes[0].text, "我喜欢喝什么？");
        assert!(loaded.dataset.defects.is_empty());

        assert_eq!(
            "EN".parse::<MemoryBankLanguage>(),
            Ok(MemoryBankLanguage::En)
        );
        assert_eq!(
            "zh".parse::<MemoryBankLanguage>(),
            Ok(MemoryBankLanguage::Cn)
        );
        assert!("fr".parse::<MemoryBankLanguage>().is_err());
        assert_eq!(MemoryBankLanguage::Cn.to_string(), "cn");
    }

    #[test]
    fn wrapping_quotes() {
        assert_eq!(strip_wrapping_quotes(" \"Why?\" "), "Why?");
        assert_eq!(strip_wrapping_quotes("\"A\" or \"B\""), "\"A\" or \"B\"");
        assert_eq!(strip_wrapping_quotes("\""), "\"");
    }
}
