//! MemDaily loader (`memdaily.json`, `{qa_type: {scenario: [trajectory]}}`).
//!
//! Each trajectory is its own conversation ("simple/roles/0"): the user's messages, then one
//! multiple-choice question. Gold labels are message positions as strings: `target_step_id`
//! holds 0-based indices into `message_list`. In the published file `mid` always equals the
//! position, so both readings agree; where they differ the position wins (the message stream is
//! what gets ingested) and the mismatch is reported.
//!
//! Items keep the list order even though about a tenth of the trajectories have message times
//! that go backwards; such trajectories, and questions timed before some of their messages, are
//! reported as kept defects. Every question is asked after the whole trajectory.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use mnemos_core::{Metadata, Role};
use serde::Deserialize;

use crate::dataset::{Conversation, DefectAction, Item, Question, RetrievalDataset};
use crate::error::DatasetError;
use crate::json::{read_json_file, Node};
use crate::text::parse_memdaily_time;

pub fn load_memdaily(path: &Path) -> Result<RetrievalDataset, DatasetError> {
    let root = read_json_file(path)?;
    let groups = root.as_object().ok_or_else(|| {
        DatasetError::structure(
            path,
            "top level",
            format!(
                "expected an object {{qa_type: {{scenario: [trajectory]}}}}, found {}",
                root.kind()
            ),
        )
    })?;
    let mut dataset = RetrievalDataset::new("memdaily");
    let mut seen = HashSet::new();
    for (qa_type, scenarios) in groups {
        let Some(scenarios) = scenarios.as_object() else {
            dataset.defect(
                qa_type,
                format!(
                    "expected an object of scenarios, found {}",
                    scenarios.kind()
                ),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        for (scenario, trajectories) in scenarios {
            let Some(trajectories) = trajectories.as_array() else {
                dataset.defect(
                    format!("{qa_type}/{scenario}"),
                    format!(
                        "expected an array of trajectories, found {}",
                        trajectories.kind()
                    ),
                    DefectAction::SkippedRecord,
                );
                continue;
            };
            for (index, node) in trajectories.iter().enumerate() {
                let location = format!("{qa_type}/{scenario}[{index}]");
                let Some(conversation) =
                    load_trajectory(&mut dataset, &location, qa_type, scenario, index, node)
                else {
                    continue;
                };
                if seen.insert(conversation.id.clone()) {
                    dataset.conversations.push(conversation);
                } else {
                    dataset.defect(
                        location,
                        format!("duplicate trajectory id {}", conversation.id),
                        DefectAction::SkippedRecord,
                    );
                }
            }
        }
    }
    Ok(dataset)
}

#[derive(Deserialize)]
struct RawTrajectory {
    #[serde(default)]
    tid: Option<serde_json::Value>,
    message_list: Vec<RawMessage>,
    #[serde(default, rename = "QA")]
    qa: Option<RawQa>,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    mid: Option<i64>,
    message: String,
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    place: Option<String>,
}

#[derive(Deserialize)]
struct RawQa {
    #[serde(default)]
    qid: Option<serde_json::Value>,
    question: String,
    #[serde(default)]
    answer: Option<serde_json::Value>,
    #[serde(default)]
    target_step_id: Vec<i64>,
    #[serde(default)]
    choices: BTreeMap<String, String>,
    #[serde(default)]
    ground_truth: Option<String>,
    #[serde(default)]
    time: Option<String>,
}

fn id_text(value: Option<&serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn load_trajectory(
    dataset: &mut RetrievalDataset,
    location: &str,
    qa_type: &str,
    scenario: &str,
    index: usize,
    node: &Node,
) -> Option<Conversation> {
    // A bad message invalidates the whole trajectory: dropping it would shift the positions
    // that `target_step_id` refers to.
    let raw: RawTrajectory = match node.parse() {
        Ok(raw) => raw,
        Err(problem) => {
            dataset.defect(location, problem, DefectAction::SkippedRecord);
            return None;
        }
    };
    let tid = id_text(raw.tid.as_ref()).unwrap_or_else(|| {
        dataset.defect(
            location,
            format!("missing tid; using the position {index}"),
            DefectAction::Kept,
        );
        index.to_string()
    });
    let id = format!("{qa_type}/{scenario}/{tid}");
    if raw.message_list.is_empty() {
        dataset.defect(location, "empty message_list", DefectAction::SkippedRecord);
        return None;
    }

    let mut items = Vec::with_capacity(raw.message_list.len());
    let mut backwards: Option<String> = None;
    for (position, message) in raw.message_list.into_iter().enumerate() {
        let message_location = format!("{location} message_list[{position}]");
        if message
            .mid
            .is_some_and(|mid| usize::try_from(mid) != Ok(position))
        {
            dataset.defect(
                &message_location,
                format!(
                    "mid {} differs from its position; the label is the position",
                    message.mid.unwrap_or_default()
                ),
                DefectAction::Kept,
            );
        }
        if message.message.trim().is_empty() {
            dataset.defect(&message_location, "empty message", DefectAction::Kept);
        }
        let time = match message.time.as_deref() {
            Some(text) => {
                let parsed = parse_memdaily_time(text);
                if parsed.is_none() {
                    dataset.defect(
                        &message_location,
                        format!("unparseable time {text:?}"),
                        DefectAction::Kept,
                    );
                }
                parsed
            }
            None => None,
        };
        if let (Some(t), Some(previous)) = (time, items.last().and_then(|i: &Item| i.time)) {
            if t < previous && backwards.is_none() {
                backwards = Some(format!(
                    "message times go backwards at position {position}; list order kept"
                ));
            }
        }
        let mut metadata = Metadata::new();
        if let Some(place) = message.place.filter(|p| !p.trim().is_empty()) {
            metadata.insert("place".to_string(), place);
        }
        items.push(Item {
            label: position.to_string(),
            role: Role::User,
            speaker: None,
            text: message.message,
            time,
            session: "0".to_string(),
            metadata,
        });
    }
    if let Some(problem) = backwards {
        dataset.defect(location, problem, DefectAction::Kept);
    }

    let mut questions = Vec::new();
    match raw.qa {
        None => dataset.defect(location, "trajectory has no QA", DefectAction::Kept),
        Some(qa) => {
            let qa_location = format!("{location} QA");
            if let Some(question) =
                build_question(dataset, &qa_location, &id, scenario, qa_type, &items, qa)
            {
                questions.push(question);
            }
        }
    }
    Some(Conversation {
        id,
        items,
        questions,
    })
}

fn build_question(
    dataset: &mut RetrievalDataset,
    location: &str,
    conversation_id: &str,
    scenario: &str,
    qa_type: &str,
    items: &[Item],
    qa: RawQa,
) -> Option<Question> {
    let text = qa.question.trim().to_string();
    if text.is_empty() {
        dataset.defect(location, "empty question", DefectAction::SkippedQuestion);
        return None;
    }
    let mut gold = Vec::new();
    for target in &qa.target_step_id {
        match usize::try_from(*target).ok().filter(|t| *t < items.len()) {
            Some(position) => {
                let label = position.to_string();
                if !gold.contains(&label) {
                    gold.push(label);
                }
            }
            None => dataset.defect(
                location,
                format!(
                    "target_step_id {target} is outside the {} messages",
                    items.len()
                ),
                DefectAction::DroppedReference,
            ),
        }
    }
    if gold.is_empty() {
        dataset.defect(
            location,
            "no valid target_step_id",
            DefectAction::SkippedQuestion,
        );
        return None;
    }

    let time = match qa.time.as_deref() {
        Some(text) => {
            let parsed = parse_memdaily_time(text);
            if parsed.is_none() {
                dataset.defect(
                    location,
                    format!("unparseable question time {text:?}"),
                    DefectAction::Kept,
                );
            }
            parsed
        }
        None => None,
    };
    if let Some(asked) = time {
        let later: Vec<&str> = items
            .iter()
            .filter(|item| item.time.is_some_and(|t| t > asked))
            .map(|item| item.label.as_str())
            .collect();
        if !later.is_empty() {
            dataset.defect(
                location,
                format!(
                    "question time precedes message(s) {}; asked after all messages anyway",
                    later.join(", ")
                ),
                DefectAction::Kept,
            );
        }
    }

    let correct_choice = match qa.ground_truth {
        Some(key) if qa.choices.contains_key(&key) => Some(key),
        Some(key) if qa.choices.is_empty() => Some(key),
        Some(key) => {
            dataset.defect(
                location,
                format!("ground_truth {key:?} is not one of the choices"),
                DefectAction::Kept,
            );
            None
        }
        None => None,
    };
    let answer = qa.answer.as_ref().and_then(|a| match a {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    let qid = id_text(qa.qid.as_ref()).unwrap_or_else(|| "0".to_string());
    let mut metadata = Metadata::new();
    metadata.insert("scenario".to_string(), scenario.to_string());
    Some(Question {
        id: format!("{conversation_id}/q{qid}"),
        text,
        answer,
        gold,
        category: qa_type.to_string(),
        memory_type: None,
        after_item: items.len(),
        time,
        choices: qa.choices.into_iter().collect(),
        correct_choice,
        as_of: None,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse_memdaily_time;
    use std::io::Write;

    const FIXTURE: &str = r#"{
      "simple": {
        "roles": [
          {"tid": 0,
           "message_list": [
             {"mid": 0, "message": "我的上司就只有高中学历。", "time": "2024年04月01日 周一 08:39", "place": "广东深圳"},
             {"mid": 1, "message": "我表弟喜欢玩电子游戏。", "time": "2024年04月01日 周一 09:10", "place": "广东深圳"}
           ],
           "QA": {"qid": 0, "question": "那我的上司是哪个学校毕业的呢？", "answer": "高中", "target_step_id": [0, 0, 5],
                  "choices": {"B": "专科", "A": "本科", "D": "高中", "C": "硕士"}, "ground_truth": "D",
                  "time": "2024年04月05日 周五 11:59"}},
          {"tid": 1,
           "message_list": [
             {"mid": 0, "message": "我妈妈是柜员。", "time": "2024年04月02日 周二 07:43", "place": ""},
             {"mid": 1, "message": "我同事是设计师。", "time": "2024年04月02日 周二 07:12", "place": "北京"}
           ],
           "QA": {"qid": 1, "question": "同事是做什么的？", "answer": "设计师", "target_step_id": [1],
                  "choices": {"A": "设计师", "B": "柜员"}, "ground_truth": "Z",
                  "time": "2024年04月02日 周二 07:30"}},
          {"tid": 2, "message_list": [{"mid": 0, "message": 5}]},
          {"tid": 3, "message_list": [{"mid": 0, "message": "x"}],
           "QA": {"question": "q", "target_step_id": [9], "choices": {}}}
        ]
      },
      "noisy": {"items": "not an array"}
    }"#;

    fn load_fixture(json: &str) -> Result<RetrievalDataset, DatasetError> {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(json.as_bytes()).expect("write fixture");
        load_memdaily(file.path())
    }

    #[test]
    fn loads_fixture() {
        let dataset = load_fixture(FIXTURE).expect("loads");
        let ids: Vec<&str> = dataset
            .conversations
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["simple/roles/0", "simple/roles/1", "simple/roles/3"]);

        let first = &dataset.conversations[0];
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.items[1].label, "1");
        assert_eq!(first.items[0].role, Role::User);
        assert_eq!(
            first.items[0].time,
            parse_memdaily_time("2024年04月01日 周一 08:39")
        );
        assert_eq!(
            first.items[0].metadata.get("place").map(String::as_str),
            Some("广东深圳")
        );
        let q = &first.questions[0];
        assert_eq!(q.id, "simple/roles/0/q0");
        assert_eq!(q.gold, ["0"]);
        assert_eq!(q.category, "simple");
        assert_eq!(
            q.metadata.get("scenario").map(String::as_str),
            Some("roles")
        );
        assert_eq!(q.after_item, 2);
        assert_eq!(q.answer.as_deref(), Some("高中"));
        assert_eq!(q.correct_choice.as_deref(), Some("D"));
        let keys: Vec<&str> = q.choices.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["A", "B", "C", "D"]);
        assert_eq!(q.time, parse_memdaily_time("2024年04月05日 周五 11:59"));

        let second = &dataset.conversations[1];
        assert!(!second.items[0].metadata.contains_key("place"));
        assert_eq!(second.questions[0].correct_choice, None);
        assert!(dataset.conversations[2].questions.is_empty());

        let at = |location: &str| {
            dataset
                .defects
                .iter()
                .filter(|d| d.location == location)
                .map(|d| d.action)
                .collect::<Vec<_>>()
        };
        assert_eq!(at("simple/roles[0] QA"), [DefectAction::DroppedReference]);
        // Backwards times, question before message 0, ground truth not a choice.
        assert_eq!(at("simple/roles[1]"), [DefectAction::Kept]);
        assert_eq!(
            at("simple/roles[1] QA"),
            [DefectAction::Kept, DefectAction::Kept]
        );
        assert_eq!(at("simple/roles[2]"), [DefectAction::SkippedRecord]);
        assert_eq!(
            at("simple/roles[3] QA"),
            [
                DefectAction::DroppedReference,
                DefectAction::SkippedQuestion
            ]
        );
        assert_eq!(at("noisy/items"), [DefectAction::SkippedRecord]);
    }

    #[test]
    fn wrong_top_level_is_an_error() {
        let err = load_fixture("[]").expect_err("not an object");
        assert!(err.to_string().contains("top level"), "{err}");
    }
}
