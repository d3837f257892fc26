//! ZH-4O loader: the MOOM paper's Chinese role-play dialogues with human memory labels and
//! probe questions (`cows21/MOOM-RolePlay`: `data/`, `label/`, `probe/`).
//!
//! The directory holds:
//! - `ZH-4O_dataset.jsonl`: one dialogue per line, `{role_meta: {primary_bot_name, user_name},
//!   messages: [{sender_name, text, flag}], prompt, model, …}`. A dialogue's
//!   [`Zh4oDialogue::index`] is its 0-based line number.
//! - `label/ZH-4O_label_<N>.jsonl`: one JSON object, a copy of dialogue `N` (0-based line `N`;
//!   the files are numbered from 1 because line 0 has no labels) plus `memory_human_label:
//!   {"<message index>": [fact, …]}` whose keys are 0-based positions in `messages` (the keys are
//!   not always in order; labels are sorted). The copies are not identical to the dataset lines:
//!   a few message texts were edited, and one copy (22) renames both characters and its labels
//!   use the new names. So a labelled dialogue's messages and names are taken from its label
//!   file, the text the annotators labelled, and the differences are reported as a kept defect;
//!   a copy with a different number of messages is not used.
//! - `probe/probe_test.json`: `[{difficulty_level, probe: [{position, content}],
//!   query: [{position, content, answer}]}]`.
//!
//! Roles follow the `flag`: `U` is [`Role::User`]; `G`, `GC`, `GCC` are the bot,
//! [`Role::Assistant`]. `L` is described upstream as a third speaker, but every `L` message of
//! the published file is sent under the user's name and sits in the user's slot between two bot
//! replies, so it is loaded as [`Role::User`] (the flag is kept for callers that want to tell
//! them apart). An unknown flag takes the role of its sender (user or bot name) or
//! [`Role::Other`], with a defect.
//!
//! Probes name no dialogue. The authors' probe script (`probe_indicator.py`) runs every probe
//! against dataset line 1 ([`PROBE_DIALOGUE`]), so that is the dialogue each probe is
//! attached to. Its protocol: the probe text is inserted as a user message at `position` of the
//! original messages, followed by a bot acknowledgment (one of 哦 / 好的 / 我知道了, picked at
//! random), and the stream is ingested in chunks of [`PROBE_CHUNK`] messages; a query's
//! `position` counts messages of that probed stream, and the query is asked right after the
//! chunk containing it ([`Zh4oQuery::observed_messages`]). Every published probe has one insert
//! and one query.
//!
//! # Streams for the runner
//!
//! ZH-4O has neither sessions nor times. [`Zh4oDialogue::conversation`] and
//! [`Zh4oProbe::prepared`] turn a dialogue into a [`Conversation`] cut into sessions of a fixed
//! number of messages, so presets that summarize per session (MemoryBank's daily summaries)
//! have sessions to close; items have no time. Items are labelled with the message's index in
//! the dialogue (inserted messages `probe-<k>` and `ack-<k>`), and empty messages are left out
//! (the engine refuses empty turns) without shifting anyone's position. The bot's
//! acknowledgment of an insert is [`PROBE_ACKNOWLEDGMENTS`]`[probe id % 3]` instead of a random
//! pick, so runs repeat.
//!
//! Records that cannot be used are left out with a located defect (`ZH-4O_dataset.jsonl:3
//! messages[7]`, `label/ZH-4O_label_2.jsonl:1 memory_human_label["15"]`,
//! `probe/probe_test.json[4] query[0]`). A message with a missing text is kept as an empty
//! message, because labels and probes refer to message positions. Only a missing or unreadable
//! dataset file, or one without any usable dialogue, is an error.

use std::path::Path;

use mnemos_core::{Metadata, Role};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Defect, DefectAction, Item, Question};
use crate::error::DatasetError;
use crate::json::{read_json_file, read_json_lines, Node};
use crate::protocol::{Ask, PreparedConversation};

/// The dialogue file inside a ZH-4O directory.
pub const DATASET_FILE: &str = "ZH-4O_dataset.jsonl";
/// The folder of label files (`ZH-4O_label_<N>.jsonl`).
pub const LABEL_DIR: &str = "label";
/// The probe file, relative to the directory.
pub const PROBE_FILE: &str = "probe/probe_test.json";
/// Dataset line that every probe is run against (see the module docs).
pub const PROBE_DIALOGUE: usize = 1;
/// Messages per ingestion chunk in the probe protocol.
pub const PROBE_CHUNK: usize = 20;
/// The bot's replies to an inserted probe message (the authors' script picks one at random).
pub const PROBE_ACKNOWLEDGMENTS: [&str; 3] = ["哦", "好的", "我知道了"];

const LABEL_PREFIX: &str = "ZH-4O_label_";
const LABEL_SUFFIX: &str = ".jsonl";

/// The loaded dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oDataset {
    /// In file order.
    pub dialogues: Vec<Zh4oDialogue>,
    /// In file order.
    pub probes: Vec<Zh4oProbe>,
    /// Everything odd found while loading, with what the loader did about it.
    pub defects: Vec<Defect>,
}

impl Zh4oDataset {
    /// The dialogue of dataset line `index` (0-based), if it was loaded.
    pub fn dialogue(&self, index: usize) -> Option<&Zh4oDialogue> {
        self.dialogues.iter().find(|d| d.index == index)
    }
}

/// One role-play dialogue between the user and a bot character.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oDialogue {
    /// 0-based line of `ZH-4O_dataset.jsonl`; label file `N` belongs to index `N`.
    pub index: usize,
    pub bot_name: String,
    pub user_name: String,
    /// All messages in order; `messages[i].index == i`.
    pub messages: Vec<Zh4oMessage>,
    /// Human memory labels sorted by message; empty when the dialogue has no label file.
    pub labels: Vec<Zh4oLabel>,
}

impl Zh4oDialogue {
    /// Every labelled fact in message order: the reference set of MOOM's extraction scores.
    pub fn facts(&self) -> impl Iterator<Item = &str> {
        self.labels
            .iter()
            .flat_map(|label| label.facts.iter().map(String::as_str))
    }

    /// The dialogue as conversation `id` for the streaming runner, in sessions of
    /// `session_messages` messages (see the module docs; 0 is taken as one session).
    pub fn conversation(&self, id: &str, session_messages: usize) -> Conversation {
        let stream: Vec<StreamMessage> = self
            .messages
            .iter()
            .map(|m| StreamMessage {
                label: m.index.to_string(),
                role: m.role,
                sender: &m.sender,
                text: &m.text,
            })
            .collect();
        Conversation {
            id: id.to_string(),
            items: stream_items(&stream, session_messages).0,
            questions: Vec::new(),
        }
    }
}

/// One message of a stream before it becomes an [`Item`].
struct StreamMessage<'a> {
    label: String,
    role: Role,
    sender: &'a str,
    text: &'a str,
}

/// Items of a stream (empty messages left out) and, for every stream position `p`, how many
/// items come before it; `before[stream.len()]` is the item count.
fn stream_items(stream: &[StreamMessage], session_messages: usize) -> (Vec<Item>, Vec<usize>) {
    let per_session = if session_messages == 0 {
        usize::MAX
    } else {
        session_messages
    };
    let mut items = Vec::with_capacity(stream.len());
    let mut before = Vec::with_capacity(stream.len() + 1);
    for (position, message) in stream.iter().enumerate() {
        before.push(items.len());
        if message.text.trim().is_empty() {
            continue;
        }
        items.push(Item {
            label: message.label.clone(),
            role: message.role,
            speaker: (!message.sender.is_empty()).then(|| message.sender.to_string()),
            text: message.text.to_string(),
            time: None,
            session: (position / per_session).to_string(),
            metadata: Metadata::new(),
        });
    }
    before.push(items.len());
    (items, before)
}

/// Label of a probe's `k`-th inserted user message in its stream.
pub fn insert_label(k: usize) -> String {
    format!("probe-{k}")
}

impl Zh4oProbe {
    /// The probed stream of `dialogue` with this probe's queries as asks, ready for the runner
    /// (conversation id `zh4o-probe-<id>`): each insert goes in as a user message before the
    /// original message at its position, followed by the bot's acknowledgment; each query is
    /// a question asked after [`Zh4oQuery::observed_messages`] of the stream, whose gold items
    /// are the inserted messages and whose answer is the reference reply. The stream stops
    /// after the last ask (nothing later is measured). Sessions and labels as
    /// [`Zh4oDialogue::conversation`].
    pub fn prepared(
        &self,
        dialogue: &Zh4oDialogue,
        session_messages: usize,
    ) -> PreparedConversation {
        let acknowledgment = PROBE_ACKNOWLEDGMENTS[self.id % PROBE_ACKNOWLEDGMENTS.len()];
        let mut inserts: Vec<(usize, &Zh4oInsert)> = self.inserts.iter().enumerate().collect();
        inserts.sort_by_key(|(k, insert)| (insert.position, *k));
        let mut pending = inserts.into_iter().peekable();
        let mut stream: Vec<StreamMessage> = Vec::with_capacity(dialogue.messages.len() + 2);
        for message in dialogue
            .messages
            .iter()
            .map(Some)
            .chain(std::iter::once(None))
        {
            // Inserts before this message (at the end: every insert not placed yet).
            while let Some((k, insert)) =
                pending.next_if(|(_, insert)| message.is_none_or(|m| insert.position <= m.index))
            {
                stream.push(StreamMessage {
                    label: insert_label(k),
                    role: Role::User,
                    sender: &dialogue.user_name,
                    text: &insert.text,
                });
                stream.push(StreamMessage {
                    label: format!("ack-{k}"),
                    role: Role::Assistant,
                    sender: &dialogue.bot_name,
                    text: acknowledgment,
                });
            }
            if let Some(m) = message {
                stream.push(StreamMessage {
                    label: m.index.to_string(),
                    role: m.role,
                    sender: &m.sender,
                    text: &m.text,
                });
            }
        }
        let (mut items, before) = stream_items(&stream, session_messages);
        let gold: Vec<String> = (0..self.inserts.len()).map(insert_label).collect();
        let questions: Vec<Question> = self
            .queries
            .iter()
            .enumerate()
            .map(|(j, query)| Question {
                id: format!("zh4o-probe-{}/q{j}", self.id),
                text: query.text.clone(),
                answer: Some(query.answer.clone()),
                gold: gold.clone(),
                category: self.difficulty.clone(),
                memory_type: None,
                after_item: before[query.observed_messages(stream.len())],
                time: None,
                choices: Vec::new(),
                correct_choice: None,
                as_of: None,
                metadata: Metadata::new(),
            })
            .collect();
        let last = questions.iter().map(|q| q.after_item).max().unwrap_or(0);
        items.truncate(last);
        let mut token_prefix = Vec::with_capacity(items.len() + 1);
        let mut tokens = 0usize;
        token_prefix.push(0);
        for item in &items {
            tokens += mnemos_engine::primitives::tokens(&item.text);
            token_prefix.push(tokens);
        }
        let mut asks: Vec<Ask> = questions
            .iter()
            .enumerate()
            .map(|(question, q)| Ask {
                question,
                after_item: q.after_item,
                history_tokens: token_prefix[q.after_item],
                final_ask: true,
                checkpoint: None,
            })
            .collect();
        asks.sort_by_key(|a| (a.after_item, a.question));
        PreparedConversation {
            real_items: items.len(),
            conversation: Conversation {
                id: format!("zh4o-probe-{}", self.id),
                items,
                questions,
            },
            asks,
            noise_items: 0,
            tokens,
            contaminated: Vec::new(),
        }
    }
}

/// One message of a dialogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oMessage {
    /// 0-based position in the dialogue.
    pub index: usize,
    /// `sender_name` as written.
    pub sender: String,
    pub text: String,
    /// The dataset's flag: "U", "L", "G", "GC", "GCC".
    pub flag: String,
    pub role: Role,
}

/// The facts annotators attached to one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oLabel {
    pub message_index: usize,
    /// Non-empty, trimmed.
    pub facts: Vec<String>,
}

/// A fact planted in a dialogue and queried later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oProbe {
    /// Position in `probe_test.json`.
    pub id: usize,
    /// "easy" or "difficult".
    pub difficulty: String,
    /// The dialogue the probe runs against ([`PROBE_DIALOGUE`]); `None` when that dialogue
    /// was not loaded.
    pub dialogue: Option<usize>,
    pub inserts: Vec<Zh4oInsert>,
    pub queries: Vec<Zh4oQuery>,
}

/// A user message inserted into the dialogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oInsert {
    /// Index of the original message before which the user message is inserted.
    pub position: usize,
    pub text: String,
}

/// A user message asked after the insert, with the reference reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zh4oQuery {
    /// Position in the probed stream (original messages plus inserted ones).
    pub position: usize,
    pub text: String,
    /// The reference bot reply, which shows the planted fact was remembered.
    pub answer: String,
}

impl Zh4oQuery {
    /// How many messages of the probed stream (of `stream_len`) are ingested before the query
    /// is asked: everything up to the end of the [`PROBE_CHUNK`]-message chunk holding
    /// `position`.
    pub fn observed_messages(&self, stream_len: usize) -> usize {
        ((self.position / PROBE_CHUNK + 1) * PROBE_CHUNK).min(stream_len)
    }
}

/// The role a flag stands for (see the module docs); `None` for an unknown flag.
pub fn role_for_flag(flag: &str) -> Option<Role> {
    match flag {
        "U" | "L" => Some(Role::User),
        "G" | "GC" | "GCC" => Some(Role::Assistant),
        _ => None,
    }
}

/// Load a ZH-4O directory (see the module docs for its layout). A missing label folder or
/// probe file is a defect, not an error.
pub fn load_zh4o(dir: &Path) -> Result<Zh4oDataset, DatasetError> {
    let path = dir.join(DATASET_FILE);
    let mut defects = Vec::new();
    let mut dialogues = Vec::new();
    for line in read_json_lines(&path)? {
        let location = format!("{DATASET_FILE}:{}", line.number);
        match line.value {
            Ok(node) => {
                if let Some(dialogue) =
                    load_dialogue(&mut defects, &location, line.number - 1, &node)
                {
                    dialogues.push(dialogue);
                }
            }
            Err(problem) => defect(&mut defects, location, problem, DefectAction::SkippedRecord),
        }
    }
    if dialogues.is_empty() {
        return Err(DatasetError::structure(
            &path,
            "all lines",
            "no usable dialogue",
        ));
    }
    attach_labels(&mut defects, &dir.join(LABEL_DIR), &mut dialogues)?;
    let probes = load_probes(&mut defects, &dir.join(PROBE_FILE), &dialogues);
    Ok(Zh4oDataset {
        dialogues,
        probes,
        defects,
    })
}

fn defect(
    defects: &mut Vec<Defect>,
    location: impl Into<String>,
    problem: impl Into<String>,
    action: DefectAction,
) {
    defects.push(Defect {
        location: location.into(),
        problem: problem.into(),
        action,
    });
}

fn text_of<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.get(key).and_then(Node::as_str)
}

fn load_dialogue(
    defects: &mut Vec<Defect>,
    location: &str,
    index: usize,
    node: &Node,
) -> Option<Zh4oDialogue> {
    if node.as_object().is_none() {
        defect(
            defects,
            location,
            format!("expected a dialogue object, found {}", node.kind()),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let Some(message_nodes) = node.get("messages").and_then(Node::as_array) else {
        defect(
            defects,
            location,
            "missing or non-array `messages`",
            DefectAction::SkippedRecord,
        );
        return None;
    };
    if message_nodes.is_empty() {
        defect(
            defects,
            location,
            "no messages",
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let meta = node.get("role_meta");
    let name = |key: &str| meta.and_then(|m| text_of(m, key)).map(str::to_string);
    let (bot_name, user_name) = match (name("primary_bot_name"), name("user_name")) {
        (Some(bot), Some(user)) => (bot, user),
        (bot, user) => {
            defect(
                defects,
                location,
                "role_meta lacks primary_bot_name or user_name; roles come from flags only",
                DefectAction::Kept,
            );
            (bot.unwrap_or_default(), user.unwrap_or_default())
        }
    };

    let messages = parse_messages(defects, location, message_nodes, &bot_name, &user_name);
    Some(Zh4oDialogue {
        index,
        bot_name,
        user_name,
        messages,
        labels: Vec::new(),
    })
}

/// Read a dialogue's messages; a bad message is kept (empty) so later positions stay valid.
fn parse_messages(
    defects: &mut Vec<Defect>,
    location: &str,
    message_nodes: &[Node],
    bot_name: &str,
    user_name: &str,
) -> Vec<Zh4oMessage> {
    let mut messages = Vec::with_capacity(message_nodes.len());
    for (position, message) in message_nodes.iter().enumerate() {
        let message_location = format!("{location} messages[{position}]");
        let sender = text_of(message, "sender_name")
            .unwrap_or_default()
            .to_string();
        let text = match text_of(message, "text") {
            Some(text) => {
                if text.trim().is_empty() {
                    defect(defects, &message_location, "empty text", DefectAction::Kept);
                }
                text.to_string()
            }
            None => {
                defect(
                    defects,
                    &message_location,
                    "missing or non-string `text`; kept as an empty message so positions hold",
                    DefectAction::Kept,
                );
                String::new()
            }
        };
        let flag = text_of(message, "flag").unwrap_or_default().to_string();
        let role = role_for_flag(&flag).unwrap_or_else(|| {
            let role = if !sender.is_empty() && sender == user_name {
                Role::User
            } else if !sender.is_empty() && sender == bot_name {
                Role::Assistant
            } else {
                Role::Other
            };
            defect(
                defects,
                &message_location,
                format!(
                    "unknown flag {flag:?}; role {} taken from the sender",
                    role.as_str()
                ),
                DefectAction::Kept,
            );
            role
        });
        messages.push(Zh4oMessage {
            index: position,
            sender,
            text,
            flag,
            role,
        });
    }
    messages
}

/// `ZH-4O_label_12.jsonl` → 12.
fn label_file_number(name: &str) -> Option<usize> {
    let digits = name
        .strip_prefix(LABEL_PREFIX)?
        .strip_suffix(LABEL_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn attach_labels(
    defects: &mut Vec<Defect>,
    label_dir: &Path,
    dialogues: &mut [Zh4oDialogue],
) -> Result<(), DatasetError> {
    let entries = match std::fs::read_dir(label_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            defect(
                defects,
                format!("{LABEL_DIR}/"),
                "no label folder; no dialogue has labels",
                DefectAction::Kept,
            );
            return Ok(());
        }
        Err(e) => return Err(DatasetError::io(label_dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DatasetError::io(label_dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    // Defects come out in the same order whatever order the file system lists files in.
    names.sort();
    let mut files = Vec::new();
    for name in names {
        match label_file_number(&name) {
            Some(number) => files.push((number, name)),
            None => defect(
                defects,
                format!("{LABEL_DIR}/{name}"),
                format!("not a label file name ({LABEL_PREFIX}<N>{LABEL_SUFFIX}); ignored"),
                DefectAction::SkippedRecord,
            ),
        }
    }
    // Numeric order (label_2 before label_10); of two spellings of one number ("_01", "_1")
    // the first in name order wins.
    files.sort();
    files.dedup_by(|later, kept| {
        let duplicate = later.0 == kept.0;
        if duplicate {
            defect(
                defects,
                format!("{LABEL_DIR}/{}", later.1),
                format!(
                    "second label file for dialogue {} (also {}); ignored",
                    kept.0, kept.1
                ),
                DefectAction::SkippedRecord,
            );
        }
        duplicate
    });
    for (number, name) in files {
        let location = format!("{LABEL_DIR}/{name}");
        let Some(dialogue) = dialogues.iter_mut().find(|d| d.index == number) else {
            defect(
                defects,
                location,
                format!("no dialogue on line {number} (0-based) of {DATASET_FILE}"),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        let mut object = None;
        for line in read_json_lines(&label_dir.join(&name))? {
            let line_location = format!("{location}:{}", line.number);
            match line.value {
                Ok(node) if object.is_none() => object = Some((line_location, node)),
                Ok(_) => defect(
                    defects,
                    line_location,
                    "extra line after the label object; ignored",
                    DefectAction::SkippedRecord,
                ),
                Err(problem) => {
                    defect(defects, line_location, problem, DefectAction::SkippedRecord)
                }
            }
        }
        match object {
            Some((line_location, node)) => load_labels(defects, &line_location, &node, dialogue),
            None => defect(
                defects,
                location,
                "no label object in the file",
                DefectAction::SkippedRecord,
            ),
        }
    }
    Ok(())
}

fn load_labels(
    defects: &mut Vec<Defect>,
    location: &str,
    node: &Node,
    dialogue: &mut Zh4oDialogue,
) {
    let Some(entries) = node.get("memory_human_label").and_then(Node::as_object) else {
        defect(
            defects,
            location,
            "missing or non-object `memory_human_label`",
            DefectAction::SkippedRecord,
        );
        return;
    };
    adopt_copy(defects, location, node, dialogue);

    let mut labels = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let label_location = format!("{location} memory_human_label[{key:?}]");
        let Some(message_index) = key.trim().parse::<usize>().ok() else {
            defect(
                defects,
                label_location,
                "key is not a message index",
                DefectAction::SkippedRecord,
            );
            continue;
        };
        if message_index >= dialogue.messages.len() {
            defect(
                defects,
                label_location,
                format!(
                    "message index {message_index} is outside the dialogue's {} messages",
                    dialogue.messages.len()
                ),
                DefectAction::SkippedRecord,
            );
            continue;
        }
        let Some(items) = value.as_array() else {
            defect(
                defects,
                label_location,
                format!("expected an array of facts, found {}", value.kind()),
                DefectAction::SkippedRecord,
            );
            continue;
        };
        let mut facts = Vec::with_capacity(items.len());
        for (fact_index, item) in items.iter().enumerate() {
            match item.as_str().map(str::trim) {
                Some(fact) if !fact.is_empty() => facts.push(fact.to_string()),
                Some(_) => defect(
                    defects,
                    format!("{label_location}[{fact_index}]"),
                    "empty fact; dropped",
                    DefectAction::SkippedRecord,
                ),
                None => defect(
                    defects,
                    format!("{label_location}[{fact_index}]"),
                    format!("expected a string fact, found {}; dropped", item.kind()),
                    DefectAction::SkippedRecord,
                ),
            }
        }
        if facts.is_empty() {
            defect(
                defects,
                label_location,
                "no facts",
                DefectAction::SkippedRecord,
            );
            continue;
        }
        labels.push(Zh4oLabel {
            message_index,
            facts,
        });
    }
    labels.sort_by_key(|label| label.message_index);
    dialogue.labels = labels;
}

/// Replace the dataset line's messages with the label file's copy, the text the annotators
/// labelled, and report how the two differ. A copy that is missing or has a different number
/// of messages is not used.
fn adopt_copy(defects: &mut Vec<Defect>, location: &str, node: &Node, dialogue: &mut Zh4oDialogue) {
    let Some(copy) = node.get("messages").and_then(Node::as_array) else {
        defect(
            defects,
            location,
            "no copy of the dialogue; labels refer to the dataset line",
            DefectAction::Kept,
        );
        return;
    };
    if copy.len() != dialogue.messages.len() {
        defect(
            defects,
            location,
            format!(
                "the copy has {} messages, the dataset line {}; the dataset line is used",
                copy.len(),
                dialogue.messages.len()
            ),
            DefectAction::Kept,
        );
        return;
    }
    let meta = node.get("role_meta");
    let name = |key: &str| meta.and_then(|m| text_of(m, key)).map(str::to_string);
    let bot_name = name("primary_bot_name").unwrap_or_else(|| dialogue.bot_name.clone());
    let user_name = name("user_name").unwrap_or_else(|| dialogue.user_name.clone());
    let messages = parse_messages(defects, location, copy, &bot_name, &user_name);

    let mut differences = Vec::new();
    if bot_name != dialogue.bot_name || user_name != dialogue.user_name {
        differences.push(format!(
            "characters named {bot_name}/{user_name} instead of {}/{}",
            dialogue.bot_name, dialogue.user_name
        ));
    }
    let differing: Vec<usize> = messages
        .iter()
        .zip(&dialogue.messages)
        .filter(|(copied, original)| copied.text != original.text)
        .map(|(copied, _)| copied.index)
        .collect();
    if let Some(first) = differing.first() {
        differences.push(format!(
            "{} message text(s) differ, first messages[{first}]",
            differing.len()
        ));
    }
    if !differences.is_empty() {
        defect(
            defects,
            location,
            format!(
                "the labelled copy differs from the dataset line ({}); the copy is used",
                differences.join("; ")
            ),
            DefectAction::Kept,
        );
    }
    dialogue.bot_name = bot_name;
    dialogue.user_name = user_name;
    dialogue.messages = messages;
}

fn position_of(node: &Node) -> Option<usize> {
    node.get("position")
        .and_then(Node::scalar_text)
        .and_then(|p| p.parse::<usize>().ok())
}

fn load_probes(
    defects: &mut Vec<Defect>,
    path: &Path,
    dialogues: &[Zh4oDialogue],
) -> Vec<Zh4oProbe> {
    let root = match read_json_file(path) {
        Ok(root) => root,
        Err(e) => {
            defect(
                defects,
                PROBE_FILE,
                format!("{e}; no probes loaded"),
                DefectAction::SkippedRecord,
            );
            return Vec::new();
        }
    };
    let Some(records) = root.as_array() else {
        defect(
            defects,
            PROBE_FILE,
            format!("expected an array of probes, found {}", root.kind()),
            DefectAction::SkippedRecord,
        );
        return Vec::new();
    };
    let target = dialogues.iter().find(|d| d.index == PROBE_DIALOGUE);
    if target.is_none() {
        defect(
            defects,
            PROBE_FILE,
            format!("dialogue {PROBE_DIALOGUE}, which the probes run against, was not loaded"),
            DefectAction::Kept,
        );
    }
    let mut probes = Vec::with_capacity(records.len());
    for (id, record) in records.iter().enumerate() {
        let location = format!("{PROBE_FILE}[{id}]");
        if let Some(probe) = load_probe(defects, &location, id, record, target) {
            probes.push(probe);
        }
    }
    probes
}

fn load_probe(
    defects: &mut Vec<Defect>,
    location: &str,
    id: usize,
    record: &Node,
    target: Option<&Zh4oDialogue>,
) -> Option<Zh4oProbe> {
    if record.as_object().is_none() {
        defect(
            defects,
            location,
            format!("expected a probe object, found {}", record.kind()),
            DefectAction::SkippedRecord,
        );
        return None;
    }
    let difficulty = text_of(record, "difficulty_level").unwrap_or_else(|| {
        defect(
            defects,
            location,
            "missing difficulty_level",
            DefectAction::Kept,
        );
        ""
    });
    let inserts = probe_inserts(defects, location, record);
    let queries = probe_queries(defects, location, record);
    if inserts.is_empty() || queries.is_empty() {
        defect(
            defects,
            location,
            "probe without a usable insert or query",
            DefectAction::SkippedRecord,
        );
        return None;
    }
    check_queries_follow_inserts(defects, location, &inserts, &queries);
    let dialogue =
        target.map(|dialogue| check_probe_fits(defects, location, dialogue, &inserts, &queries));
    Some(Zh4oProbe {
        id,
        difficulty: difficulty.to_string(),
        dialogue,
        inserts: inserts.into_iter().map(|(_, insert)| insert).collect(),
        queries: queries.into_iter().map(|(_, query)| query).collect(),
    })
}

/// The usable inserts of a probe record, each with its index in the record's `probe` list
/// (for defect locations); unusable ones are defects.
fn probe_inserts(
    defects: &mut Vec<Defect>,
    location: &str,
    record: &Node,
) -> Vec<(usize, Zh4oInsert)> {
    let mut inserts = Vec::new();
    let insert_nodes = record.get("probe").and_then(Node::as_array).unwrap_or(&[]);
    for (index, node) in insert_nodes.iter().enumerate() {
        let insert_location = format!("{location} probe[{index}]");
        let text = text_of(node, "content").map(str::trim).unwrap_or_default();
        match position_of(node) {
            Some(position) if !text.is_empty() => inserts.push((
                index,
                Zh4oInsert {
                    position,
                    text: text.to_string(),
                },
            )),
            _ => defect(
                defects,
                insert_location,
                "needs a non-negative integer `position` and a non-empty `content`",
                DefectAction::SkippedRecord,
            ),
        }
    }
    inserts
}

/// The usable queries of a probe record, each with its index in the record's `query` list
/// (for defect locations); unusable ones are defects.
fn probe_queries(
    defects: &mut Vec<Defect>,
    location: &str,
    record: &Node,
) -> Vec<(usize, Zh4oQuery)> {
    let mut queries = Vec::new();
    let query_nodes = record.get("query").and_then(Node::as_array).unwrap_or(&[]);
    for (index, node) in query_nodes.iter().enumerate() {
        let query_location = format!("{location} query[{index}]");
        let text = text_of(node, "content").map(str::trim).unwrap_or_default();
        let answer = text_of(node, "answer").map(str::trim).unwrap_or_default();
        match position_of(node) {
            Some(position) if !text.is_empty() && !answer.is_empty() => queries.push((
                index,
                Zh4oQuery {
                    position,
                    text: text.to_string(),
                    answer: answer.to_string(),
                },
            )),
            _ => defect(
                defects,
                query_location,
                "needs a non-negative integer `position`, a non-empty `content` and `answer`",
                DefectAction::SkippedRecord,
            ),
        }
    }
    queries
}

/// A query should come after the last insert, or it asks before the fact was planted; one
/// that does not is kept with a defect.
fn check_queries_follow_inserts(
    defects: &mut Vec<Defect>,
    location: &str,
    inserts: &[(usize, Zh4oInsert)],
    queries: &[(usize, Zh4oQuery)],
) {
    let last_insert = inserts
        .iter()
        .map(|(_, i)| i.position)
        .max()
        .unwrap_or_default();
    for (index, query) in queries {
        if query.position <= last_insert {
            defect(
                defects,
                format!("{location} query[{index}]"),
                format!(
                    "query position {} is not after the insert at {last_insert}",
                    query.position
                ),
                DefectAction::Kept,
            );
        }
    }
}

/// Report inserts past the end of `dialogue` and queries past the end of the probed stream
/// (kept either way); returns the dialogue's index.
fn check_probe_fits(
    defects: &mut Vec<Defect>,
    location: &str,
    dialogue: &Zh4oDialogue,
    inserts: &[(usize, Zh4oInsert)],
    queries: &[(usize, Zh4oQuery)],
) -> usize {
    let original = dialogue.messages.len();
    // Each insert adds the user message and the bot's acknowledgment.
    let stream = original + 2 * inserts.len();
    for (index, insert) in inserts {
        if insert.position > original {
            defect(
                defects,
                format!("{location} probe[{index}]"),
                format!(
                    "position {} is past the end of dialogue {} ({original} messages)",
                    insert.position, dialogue.index
                ),
                DefectAction::Kept,
            );
        }
    }
    for (index, query) in queries {
        if query.position >= stream {
            defect(
                defects,
                format!("{location} query[{index}]"),
                format!(
                    "position {} is past the end of the probed stream ({stream} messages)",
                    query.position
                ),
                DefectAction::Kept,
            );
        }
    }
    dialogue.index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(sender: &str, text: &str, flag: &str) -> String {
        format!(r#"{{"sender_name": "{sender}", "text": "{text}", "flag": "{flag}"}}"#)
    }

    /// Line 0: a short dialogue without labels; line 1: the probe dialogue; line 2: broken;
    /// line 3: odd messages.
    fn write_fixture(dir: &Path) {
        let meta = r#""role_meta": {"primary_bot_name": "白羽岚", "user_name": "赵齐"}"#;
        let line0 = format!(
            r#"{{{meta}, "messages": [{}, {}]}}"#,
            message("白羽岚", "早上好", "G"),
            message("赵齐", "早", "U")
        );
        let line1 = format!(
            r#"{{{meta}, "prompt": {{}}, "messages": [{}, {}, {}, {}, {}]}}"#,
            message("白羽岚", "你好", "G"),
            message("赵齐", "叫我小赵", "U"),
            message("白羽岚", "好的小赵", "GC"),
            message("赵齐", "我是老师", "L"),
            message("白羽岚", "老师好", "GCC"),
        );
        let line3 = format!(
            r#"{{"messages": [{}, {{"sender_name": "赵齐", "flag": "U"}}, {}]}}"#,
            message("白羽岚", "  ", "G"),
            message("路人", "借过", "X"),
        );
        let dataset = format!("{line0}\n{line1}\n{{\"messages\": 5\n{line3}\n\n");
        std::fs::write(dir.join(DATASET_FILE), dataset).expect("write dataset");

        std::fs::create_dir(dir.join(LABEL_DIR)).expect("label dir");
        // Dialogue 1's copy edits one text and renames the bot.
        let copy = format!(
            r#""role_meta": {{"primary_bot_name": "白羽", "user_name": "赵齐"}}, "messages": [{}, {}, {}, {}, {}]"#,
            message("白羽", "你好", "G"),
            message("赵齐", "叫我小齐", "U"),
            message("白羽", "好的小赵", "GC"),
            message("赵齐", "我是老师", "L"),
            message("白羽", "老师好", "GCC"),
        );
        let labels = format!(
            r#"{{{copy}, "memory_human_label": {{"3": ["赵齐是白羽岚的老师", " "], "1": [" 赵齐希望被称为“小赵” "], "9": ["越界"], "x": ["坏键"], "4": []}}}}"#
        );
        std::fs::write(dir.join(LABEL_DIR).join("ZH-4O_label_1.jsonl"), labels).expect("write");
        std::fs::write(
            dir.join(LABEL_DIR).join("ZH-4O_label_7.jsonl"),
            r#"{"memory_human_label": {"0": ["无此对话"]}}"#,
        )
        .expect("write");
        std::fs::write(dir.join(LABEL_DIR).join("notes.txt"), "x").expect("write");
        // A copy of dialogue 3 with a message missing: not used, the labels still are.
        let short_copy = format!(
            r#"{{"messages": [{}], "memory_human_label": {{"2": ["有路人经过"]}}}}"#,
            message("白羽岚", "  ", "G")
        );
        std::fs::write(dir.join(LABEL_DIR).join("ZH-4O_label_3.jsonl"), short_copy).expect("write");

        std::fs::create_dir(dir.join("probe")).expect("probe dir");
        let probes = r#"[
          {"difficulty_level": "easy", "probe": [{"position": 2, "content": "我酒量特别差"}],
           "query": [{"position": 6, "content": "你在喝什么？", "answer": "我在喝酒，你别靠太近。"}]},
          {"difficulty_level": "difficult", "probe": [{"position": 4, "content": "我讨厌虫子"}],
           "query": [{"position": 3, "content": "去公园吧", "answer": ""},
                     {"position": 40, "content": "去公园吧", "answer": "带上防虫喷雾。"}]},
          {"difficulty_level": "easy", "probe": [], "query": []},
          "nonsense"
        ]"#;
        std::fs::write(dir.join(PROBE_FILE), probes).expect("write probes");
    }

    fn actions_at<'a>(dataset: &'a Zh4oDataset, location: &str) -> Vec<(DefectAction, &'a str)> {
        dataset
            .defects
            .iter()
            .filter(|d| d.location == location)
            .map(|d| (d.action, d.problem.as_str()))
            .collect()
    }

    #[test]
    fn loads_dialogues_labels_and_probes() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_fixture(dir.path());
        let dataset = load_zh4o(dir.path()).expect("loads");

        let indices: Vec<usize> = dataset.dialogues.iter().map(|d| d.index).collect();
        assert_eq!(indices, [0, 1, 3]);
        assert!(dataset.dialogue(0).expect("line 0").labels.is_empty());

        let probe_dialogue = dataset.dialogue(1).expect("line 1");
        // The labelled copy replaces the dataset line.
        assert_eq!(probe_dialogue.bot_name, "白羽");
        assert_eq!(probe_dialogue.user_name, "赵齐");
        let roles: Vec<Role> = probe_dialogue.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant
            ]
        );
        assert_eq!(probe_dialogue.messages[3].flag, "L");
        assert_eq!(probe_dialogue.messages[4].index, 4);
        assert_eq!(probe_dialogue.messages[1].text, "叫我小齐");
        assert_eq!(probe_dialogue.messages[2].sender, "白羽");
        assert_eq!(
            probe_dialogue.labels,
            [
                Zh4oLabel {
                    message_index: 1,
                    facts: vec!["赵齐希望被称为“小赵”".to_string()],
                },
                Zh4oLabel {
                    message_index: 3,
                    facts: vec!["赵齐是白羽岚的老师".to_string()],
                },
            ]
        );
        let facts: Vec<&str> = probe_dialogue.facts().collect();
        assert_eq!(facts, ["赵齐希望被称为“小赵”", "赵齐是白羽岚的老师"]);

        let odd = dataset.dialogue(3).expect("line 3");
        assert_eq!(odd.messages.len(), 3);
        assert_eq!(odd.messages[1].text, "");
        // Unknown flag, sender matches neither name (role_meta is missing).
        assert_eq!(odd.messages[2].role, Role::Other);
        assert_eq!(odd.messages[2].text, "借过");
        assert_eq!(odd.labels.len(), 1);
        assert_eq!(odd.labels[0].message_index, 2);

        assert_eq!(dataset.probes.len(), 2);
        let first = &dataset.probes[0];
        assert_eq!(first.id, 0);
        assert_eq!(first.difficulty, "easy");
        assert_eq!(first.dialogue, Some(PROBE_DIALOGUE));
        assert_eq!(
            first.inserts,
            [Zh4oInsert {
                position: 2,
                text: "我酒量特别差".to_string()
            }]
        );
        assert_eq!(first.queries[0].position, 6);
        assert_eq!(first.queries[0].answer, "我在喝酒，你别靠太近。");
        assert_eq!(first.queries[0].observed_messages(7), 7);
        let second = &dataset.probes[1];
        assert_eq!(second.id, 1);
        assert_eq!(second.queries.len(), 1);
        assert_eq!(second.queries[0].observed_messages(100), 60);
    }

    #[test]
    fn defects_are_located() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_fixture(dir.path());
        let dataset = load_zh4o(dir.path()).expect("loads");
        use DefectAction::{Kept, SkippedRecord};

        let only = |location: &str| -> Vec<DefectAction> {
            actions_at(&dataset, location)
                .into_iter()
                .map(|(action, _)| action)
                .collect()
        };
        assert_eq!(only("ZH-4O_dataset.jsonl:3"), [SkippedRecord]);
        assert_eq!(only("ZH-4O_dataset.jsonl:4"), [Kept]);
        assert_eq!(only("ZH-4O_dataset.jsonl:4 messages[0]"), [Kept]);
        assert_eq!(only("ZH-4O_dataset.jsonl:4 messages[1]"), [Kept]);
        assert_eq!(only("ZH-4O_dataset.jsonl:4 messages[2]"), [Kept]);

        let label = "label/ZH-4O_label_1.jsonl:1";
        let copy = actions_at(&dataset, label);
        assert_eq!(copy.len(), 1, "{copy:?}");
        assert_eq!(
            copy[0].1,
            "the labelled copy differs from the dataset line (characters named 白羽/赵齐 \
             instead of 白羽岚/赵齐; 1 message text(s) differ, first messages[1]); the copy is used"
        );
        assert_eq!(
            only(&format!("{label} memory_human_label[\"3\"][1]")),
            [SkippedRecord]
        );
        assert_eq!(
            only(&format!("{label} memory_human_label[\"9\"]")),
            [SkippedRecord]
        );
        assert_eq!(
            only(&format!("{label} memory_human_label[\"x\"]")),
            [SkippedRecord]
        );
        assert_eq!(
            only(&format!("{label} memory_human_label[\"4\"]")),
            [SkippedRecord]
        );
        assert_eq!(only("label/ZH-4O_label_3.jsonl:1"), [Kept]);
        assert_eq!(only("label/ZH-4O_label_7.jsonl"), [SkippedRecord]);
        assert_eq!(only("label/notes.txt"), [SkippedRecord]);

        assert_eq!(only("probe/probe_test.json[1] query[0]"), [SkippedRecord]);
        assert_eq!(only("probe/probe_test.json[1] query[1]"), [Kept]);
        assert_eq!(only("probe/probe_test.json[2]"), [SkippedRecord]);
        assert_eq!(only("probe/probe_test.json[3]"), [SkippedRecord]);
        assert_eq!(dataset.defects.len(), 17, "{:#?}", dataset.defects);
    }

    #[test]
    fn missing_parts() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(matches!(
            load_zh4o(dir.path()),
            Err(DatasetError::Io { .. })
        ));

        std::fs::write(dir.path().join(DATASET_FILE), "{\"messages\": []}\n[1]\n").expect("write");
        let err = load_zh4o(dir.path()).expect_err("nothing usable");
        assert!(err.to_string().contains("no usable dialogue"), "{err}");

        // Only line 0: no labels, no probes, and the probe dialogue is absent.
        std::fs::write(
            dir.path().join(DATASET_FILE),
            format!("{{\"messages\": [{}]}}\n", message("a", "hi", "U")),
        )
        .expect("write");
        let dataset = load_zh4o(dir.path()).expect("loads");
        assert_eq!(dataset.dialogues.len(), 1);
        assert!(dataset.probes.is_empty());
        let locations: Vec<&str> = dataset
            .defects
            .iter()
            .map(|d| d.location.as_str())
            .collect();
        assert_eq!(
            locations,
            ["ZH-4O_dataset.jsonl:1", "label/", "probe/probe_test.json"]
        );
    }

    fn long_dialogue(messages: usize, empty: usize) -> Zh4oDialogue {
        Zh4oDialogue {
            index: PROBE_DIALOGUE,
            bot_name: "白羽岚".into(),
            user_name: "赵齐".into(),
            messages: (0..messages)
                .map(|index| {
                    let role = if index % 2 == 0 {
                        Role::Assistant
                    } else {
                        Role::User
                    };
                    Zh4oMessage {
                        index,
                        sender: if role == Role::User {
                            "赵齐"
                        } else {
                            "白羽岚"
                        }
                        .into(),
                        text: if index == empty {
                            " ".into()
                        } else {
                            format!("m{index}")
                        },
                        flag: if role == Role::User { "U" } else { "G" }.into(),
                        role,
                    }
                })
                .collect(),
            labels: Vec::new(),
        }
    }

    #[test]
    fn dialogue_streams_in_fixed_sessions() {
        let dialogue = long_dialogue(25, 3);
        let conversation = dialogue.conversation("zh4o-1", 10);
        assert_eq!(conversation.id, "zh4o-1");
        // Message 3 is empty: left out, the others keep their index as label.
        assert_eq!(conversation.items.len(), 24);
        assert_eq!(conversation.items[3].label, "4");
        assert_eq!(conversation.items[3].text, "m4");
        let sessions: Vec<&str> = conversation
            .items
            .iter()
            .map(|i| i.session.as_str())
            .collect();
        assert_eq!(sessions.iter().filter(|s| **s == "0").count(), 9);
        assert_eq!(conversation.items[9].label, "10");
        assert_eq!(conversation.items[9].session, "1");
        assert_eq!(conversation.items[23].session, "2");
        assert_eq!(conversation.items[0].role, Role::Assistant);
        assert_eq!(conversation.items[0].speaker.as_deref(), Some("白羽岚"));
        assert!(conversation.items.iter().all(|i| i.time.is_none()));
        let one = dialogue.conversation("x", 0);
        assert!(one.items.iter().all(|i| i.session == "0"));
    }

    #[test]
    fn probe_stream_inserts_acknowledges_and_asks_after_the_chunk() {
        let dialogue = long_dialogue(60, 3);
        let probe = Zh4oProbe {
            id: 4,
            difficulty: "easy".into(),
            dialogue: Some(PROBE_DIALOGUE),
            inserts: vec![Zh4oInsert {
                position: 2,
                text: "我酒量特别差".into(),
            }],
            queries: vec![Zh4oQuery {
                position: 22,
                text: "你在喝什么？".into(),
                answer: "我在喝酒。".into(),
            }],
        };
        let prepared = probe.prepared(&dialogue, 10);
        let conversation = &prepared.conversation;
        assert_eq!(conversation.id, "zh4o-probe-4");
        let labels: Vec<&str> = conversation.items[..6]
            .iter()
            .map(|i| i.label.as_str())
            .collect();
        // Stream: m0 m1 probe ack m2 (m3 is empty) m4 …
        assert_eq!(labels, ["0", "1", "probe-0", "ack-0", "2", "4"]);
        assert_eq!(conversation.items[2].role, Role::User);
        assert_eq!(conversation.items[2].speaker.as_deref(), Some("赵齐"));
        assert_eq!(conversation.items[2].text, "我酒量特别差");
        assert_eq!(conversation.items[3].role, Role::Assistant);
        // Probe 4 gets acknowledgment 4 % 3.
        assert_eq!(conversation.items[3].text, "好的");
        // Query at stream position 22 → asked after the 40-message chunk; one of those 40
        // stream messages is empty, so 39 items, and nothing after them is streamed.
        assert_eq!(prepared.asks.len(), 1);
        assert_eq!(prepared.asks[0].after_item, 39);
        assert!(prepared.asks[0].final_ask);
        assert_eq!(conversation.items.len(), 39);
        assert_eq!(prepared.real_items, 39);
        assert_eq!(conversation.items[38].label, "37");
        // Stream position 10 (message 8) opens session 1.
        let m8 = conversation
            .items
            .iter()
            .find(|i| i.label == "8")
            .expect("message 8");
        assert_eq!(m8.session, "1");
        assert_eq!(conversation.items[2].session, "0");
        let question = &conversation.questions[0];
        assert_eq!(question.gold, [insert_label(0)]);
        assert_eq!(question.answer.as_deref(), Some("我在喝酒。"));
        assert_eq!(question.category, "easy");
        assert_eq!(question.after_item, 39);
        let tokens: usize = conversation
            .items
            .iter()
            .map(|i| mnemos_engine::primitives::tokens(&i.text))
            .sum();
        assert_eq!(prepared.asks[0].history_tokens, tokens);
        assert_eq!(prepared.tokens, tokens);

        // An insert past the end goes after the last message.
        let mut late = probe.clone();
        late.inserts[0].position = 99;
        late.queries[0].position = 61;
        let prepared = late.prepared(&dialogue, 10);
        let last = prepared.conversation.items.len();
        assert_eq!(prepared.conversation.items[last - 2].label, "probe-0");
        assert_eq!(prepared.conversation.items[last - 1].label, "ack-0");
        assert_eq!(prepared.asks[0].after_item, last);
    }

    #[test]
    fn flags_and_file_names() {
        assert_eq!(role_for_flag("U"), Some(Role::User));
        assert_eq!(role_for_flag("L"), Some(Role::User));
        assert_eq!(role_for_flag("GCC"), Some(Role::Assistant));
        assert_eq!(role_for_flag("PROBE"), None);
        assert_eq!(label_file_number("ZH-4O_label_12.jsonl"), Some(12));
        assert_eq!(label_file_number("ZH-4O_label_.jsonl"), None);
        assert_eq!(label_file_number("ZH-4O_label_1.json"), None);
        assert_eq!(label_file_number("ZH-4O_label_-1.jsonl"), None);
    }
}
