//! The `MemoryModel` contract: the small, typed language jobs mechanisms need (summarize, extract
//! a persona, detect a conflict, rate importance, classify a query, answer…).
//!
//! Mechanisms never build prompts or parse model text: they build a [`Task`], hand it to a
//! model, and get a typed [`TaskOutput`] back. Implementations: the offline model (rules,
//! n-gram statistics and small trained classifiers; the default, no network) and the LLM model
//! (any OpenAI-compatible chat endpoint). One required method, [`MemoryModel::run`]; the typed
//! conveniences live in [`MemoryModelExt`].
//!
//! Contract every implementation keeps:
//! - Language-preserving: text outputs are in the language of the input (Chinese in, Chinese
//!   out); user memories are never translated.
//! - `run` validates its input first ([`Task::validate`]) and answers an invalid task with
//!   [`ModelError::InvalidInput`], never with a guess.
//! - Any output, however malformed, becomes a typed `Ok` of the task's output kind
//!   ([`Task::output_kind`]) or a typed error — never a panic, never a silently empty result
//!   where the task promises content (an empty summary of non-empty texts is an error).
//! - `usage` reports calls, failures, retries and tokens per task name since creation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Role, MAX_TEXT_BYTES};

/// Upper bound on the total text of one task (all its strings together). Larger inputs are
/// rejected with [`ModelError::InvalidInput`]; callers chunk (e.g. summarize in levels).
pub const MAX_TASK_BYTES: usize = 4 * MAX_TEXT_BYTES;

/// One line of dialogue as tasks see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub role: Role,
    /// Display name ("Caroline", "小明"), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    pub text: String,
}

impl Line {
    pub fn new(role: Role, speaker: Option<&str>, text: impl Into<String>) -> Self {
        Line {
            role,
            speaker: speaker.map(str::to_string),
            text: text.into(),
        }
    }

    /// "Speaker: text" (or the role when no name is known): how lines are shown to a model.
    pub fn render(&self) -> String {
        match &self.speaker {
            Some(s) => format!("{s}: {}", self.text),
            None => format!("{}: {}", self.role.as_str(), self.text),
        }
    }
}

/// How a persona key's values combine over time (MOOM Appendix B).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyKind {
    /// One current value; a new one replaces it (name, age, job).
    Replace,
    /// A growing, deduplicated set (hobbies, pets).
    Append,
    /// Values with the round they were said; older ones age (mood, plans).
    Trajectory,
    /// Has an opposite key (likes vs dislikes); a value moving to the opposite removes the old.
    Contradictory,
    /// Free text merged by the model's `merge` task (relationships, personality).
    Complex,
}

/// One key of a persona schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonaKey {
    /// Stable identifier, e.g. "job", "likes".
    pub name: String,
    pub kind: KeyKind,
    /// What belongs under the key, for models and people ("the person's occupation").
    pub description: String,
    /// For `Contradictory` keys: the opposite key's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opposite: Option<String>,
}

impl PersonaKey {
    pub fn new(name: &str, kind: KeyKind, description: &str) -> Self {
        PersonaKey {
            name: name.into(),
            kind,
            description: description.into(),
            opposite: None,
        }
    }

    pub fn opposed_to(mut self, opposite: &str) -> Self {
        self.opposite = Some(opposite.into());
        self
    }
}

/// The keys a persona snapshot may fill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonaSchema {
    pub keys: Vec<PersonaKey>,
}

impl PersonaSchema {
    /// The common keys: name, age, gender, job, workplace, location, family, pets, likes,
    /// dislikes, habits, plans, relationships, personality.
    pub fn default_keys() -> Self {
        use KeyKind::*;
        PersonaSchema {
            keys: vec![
                PersonaKey::new("name", Replace, "the person's name or what they are called"),
                PersonaKey::new("age", Replace, "the person's age"),
                PersonaKey::new("gender", Replace, "the person's gender"),
                PersonaKey::new("job", Replace, "the person's occupation or field of study"),
                PersonaKey::new("workplace", Replace, "where the person works or studies"),
                PersonaKey::new("location", Trajectory, "where the person lives or is from"),
                PersonaKey::new("family", Append, "family members and facts about them"),
                PersonaKey::new("pets", Append, "the person's pets"),
                PersonaKey::new("likes", Contradictory, "things the person likes or enjoys")
                    .opposed_to("dislikes"),
                PersonaKey::new("dislikes", Contradictory, "things the person dislikes")
                    .opposed_to("likes"),
                PersonaKey::new("habits", Append, "routines and habits"),
                PersonaKey::new("plans", Trajectory, "plans, goals and intentions"),
                PersonaKey::new("relationships", Complex, "friends, partners, colleagues"),
                PersonaKey::new("personality", Complex, "character traits and temperament"),
            ],
        }
    }

    /// The same keys, named and described in Chinese (for Chinese dialogue, so the sketch
    /// reads in the user's language): 名字, 年龄, 性别, 职业, 工作地点, 居住地, 家人, 宠物,
    /// 喜欢 ↔ 讨厌, 习惯, 计划, 人际关系, 性格. Each key has the merge kind of its English twin.
    pub fn default_keys_zh() -> Self {
        use KeyKind::*;
        PersonaSchema {
            keys: vec![
                PersonaKey::new("名字", Replace, "这个人的名字或称呼"),
                PersonaKey::new("年龄", Replace, "这个人的年龄"),
                PersonaKey::new("性别", Replace, "这个人的性别"),
                PersonaKey::new("职业", Replace, "这个人的职业或专业"),
                PersonaKey::new("工作地点", Replace, "这个人工作或上学的单位"),
                PersonaKey::new("居住地", Trajectory, "这个人住在哪里或来自哪里"),
                PersonaKey::new("家人", Append, "家人以及关于他们的事"),
                PersonaKey::new("宠物", Append, "这个人的宠物"),
                PersonaKey::new("喜欢", Contradictory, "这个人喜欢的事物").opposed_to("讨厌"),
                PersonaKey::new("讨厌", Contradictory, "这个人讨厌的事物").opposed_to("喜欢"),
                PersonaKey::new("习惯", Append, "日常习惯"),
                PersonaKey::new("计划", Trajectory, "计划、目标和打算"),
                PersonaKey::new("人际关系", Complex, "朋友、恋人、同事等关系"),
                PersonaKey::new("性格", Complex, "性格特点和脾气"),
            ],
        }
    }

    pub fn key(&self, name: &str) -> Option<&PersonaKey> {
        self.keys.iter().find(|k| k.name == name)
    }

    pub fn validate(&self) -> Result<(), ModelError> {
        if self.keys.is_empty() {
            return Err(ModelError::invalid("the persona schema has no keys"));
        }
        let mut seen = std::collections::HashSet::new();
        for key in &self.keys {
            if key.name.trim().is_empty() {
                return Err(ModelError::invalid("a persona key has an empty name"));
            }
            if !seen.insert(key.name.as_str()) {
                return Err(ModelError::invalid(format!(
                    "persona key '{}' appears twice",
                    key.name
                )));
            }
        }
        for key in &self.keys {
            match (&key.kind, &key.opposite) {
                (KeyKind::Contradictory, Some(o)) if self.key(o).is_some() && o != &key.name => {}
                (KeyKind::Contradictory, _) => {
                    return Err(ModelError::invalid(format!(
                    "contradictory key '{}' needs an `opposite` naming another key of the schema",
                    key.name
                )))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Default for PersonaSchema {
    fn default() -> Self {
        Self::default_keys()
    }
}

/// One value a persona snapshot found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersonaValue {
    /// A key of the schema.
    pub key: String,
    pub value: String,
    /// Index of the window line it came from, when known (provenance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// One topic of a session with its summary (M⁴ categorization).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategorySummary {
    /// Short label in the session's language ("travel", "工作").
    pub category: String,
    pub summary: String,
    /// Indexes of the session lines it covers.
    #[serde(default)]
    pub lines: Vec<usize>,
}

/// P(semantic) and P(episodic) of a query (PerLTQA memory types): semantic = facts about people
/// (profile, relationships), episodic = events and conversations. The two sum to 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryClass {
    pub semantic: f32,
    pub episodic: f32,
}

impl QueryClass {
    pub fn from_semantic(p: f32) -> Self {
        let p = if p.is_finite() {
            p.clamp(0.0, 1.0)
        } else {
            0.5
        };
        QueryClass {
            semantic: p,
            episodic: 1.0 - p,
        }
    }

    pub fn is_semantic(&self) -> bool {
        self.semantic >= self.episodic
    }
}

/// A typed memory task. Serialized with a `task` tag, so a task can be written as JSON
/// (`{"task": "arousal", "text": "…"}`), e.g. for `mnemos model try`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case", deny_unknown_fields)]
pub enum Task {
    /// Summarize `texts` (in order) within `token_budget` tokens. `level` 1 summarizes raw
    /// dialogue, higher levels summarize summaries.
    Summarize {
        texts: Vec<String>,
        level: u8,
        token_budget: usize,
    },
    /// Values for the schema's keys stated (about the speakers) in the window.
    PersonaSnapshot {
        window: Vec<Line>,
        #[serde(default)]
        schema: PersonaSchema,
    },
    /// Topics of a session, each with a summary.
    Categorize { session: Vec<Line> },
    /// Does `new` contradict `previous` (same subject, different value, number or negation)?
    Conflicts { previous: String, new: String },
    /// One text that keeps the newer value and records the older one.
    Merge { previous: String, new: String },
    /// A shorter text keeping what matters.
    Compress { text: String },
    /// Can `original`'s content be recovered from `compressed`?
    Recoverable {
        original: String,
        compressed: String,
    },
    /// Importance 1..=10 of an exchange given what is known so far.
    RateImportance {
        past_summary: String,
        exchange: Vec<Line>,
    },
    /// Emotional arousal of a text in [0, 1].
    Arousal { text: String },
    /// Perplexity of `utterance` given the conversation so far (higher = more surprising).
    Surprise {
        context: Vec<Line>,
        utterance: String,
    },
    /// Do `memories` suffice to answer `query`?
    Sufficient {
        query: String,
        memories: Vec<String>,
    },
    /// Would adding `candidate` to `memories` help answer `query`?
    Helps {
        query: String,
        memories: Vec<String>,
        candidate: String,
    },
    /// Semantic vs episodic memory type of a question.
    ClassifyQuery { query: String },
    /// Semantic vs episodic type of a memory (PerLTQA): a fact about who someone is (profile,
    /// preference, relationship) or something that happened (an event, a conversation).
    /// Answered with the same two probabilities as a question's class.
    ClassifyMemory { text: String },
    /// Answer `query` from `memories` (in the query's language).
    Answer {
        query: String,
        memories: Vec<String>,
    },
    /// Pick one of `options` for `question` given `memories`.
    Choose {
        question: String,
        options: Vec<String>,
        memories: Vec<String>,
    },
}

/// The kind of output each task produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    Text,
    Persona,
    Categories,
    Flag,
    Importance,
    Score,
    QueryClass,
    Choice,
}

/// A task's typed result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum TaskOutput {
    Text(String),
    Persona(Vec<PersonaValue>),
    Categories(Vec<CategorySummary>),
    Flag(bool),
    /// 1..=10.
    Importance(u8),
    /// Arousal in [0, 1] or surprise (perplexity ≥ 1).
    Score(f32),
    QueryClass(QueryClass),
    /// Index into the task's options.
    Choice(usize),
}

impl TaskOutput {
    pub fn kind(&self) -> OutputKind {
        match self {
            TaskOutput::Text(_) => OutputKind::Text,
            TaskOutput::Persona(_) => OutputKind::Persona,
            TaskOutput::Categories(_) => OutputKind::Categories,
            TaskOutput::Flag(_) => OutputKind::Flag,
            TaskOutput::Importance(_) => OutputKind::Importance,
            TaskOutput::Score(_) => OutputKind::Score,
            TaskOutput::QueryClass(_) => OutputKind::QueryClass,
            TaskOutput::Choice(_) => OutputKind::Choice,
        }
    }
}

/// Every task name, in the order of the [`Task`] enum.
pub const TASK_NAMES: [&str; 16] = [
    "summarize",
    "persona_snapshot",
    "categorize",
    "conflicts",
    "merge",
    "compress",
    "recoverable",
    "rate_importance",
    "arousal",
    "surprise",
    "sufficient",
    "helps",
    "classify_query",
    "classify_memory",
    "answer",
    "choose",
];

impl Task {
    /// The task's name (its `task` tag), used for accounting and on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Task::Summarize { .. } => "summarize",
            Task::PersonaSnapshot { .. } => "persona_snapshot",
            Task::Categorize { .. } => "categorize",
            Task::Conflicts { .. } => "conflicts",
            Task::Merge { .. } => "merge",
            Task::Compress { .. } => "compress",
            Task::Recoverable { .. } => "recoverable",
            Task::RateImportance { .. } => "rate_importance",
            Task::Arousal { .. } => "arousal",
            Task::Surprise { .. } => "surprise",
            Task::Sufficient { .. } => "sufficient",
            Task::Helps { .. } => "helps",
            Task::ClassifyQuery { .. } => "classify_query",
            Task::ClassifyMemory { .. } => "classify_memory",
            Task::Answer { .. } => "answer",
            Task::Choose { .. } => "choose",
        }
    }

    pub fn output_kind(&self) -> OutputKind {
        match self {
            Task::Summarize { .. }
            | Task::Merge { .. }
            | Task::Compress { .. }
            | Task::Answer { .. } => OutputKind::Text,
            Task::PersonaSnapshot { .. } => OutputKind::Persona,
            Task::Categorize { .. } => OutputKind::Categories,
            Task::Conflicts { .. }
            | Task::Recoverable { .. }
            | Task::Sufficient { .. }
            | Task::Helps { .. } => OutputKind::Flag,
            Task::RateImportance { .. } => OutputKind::Importance,
            Task::Arousal { .. } | Task::Surprise { .. } => OutputKind::Score,
            Task::ClassifyQuery { .. } | Task::ClassifyMemory { .. } => OutputKind::QueryClass,
            Task::Choose { .. } => OutputKind::Choice,
        }
    }

    /// Every string of the task, for size checks and language detection.
    pub fn texts(&self) -> Vec<&str> {
        fn lines(l: &[Line]) -> Vec<&str> {
            l.iter().map(|l| l.text.as_str()).collect()
        }
        fn strs(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        match self {
            Task::Summarize { texts, .. } => strs(texts),
            Task::PersonaSnapshot { window, .. } => lines(window),
            Task::Categorize { session } => lines(session),
            Task::Conflicts { previous, new } | Task::Merge { previous, new } => {
                vec![previous, new]
            }
            Task::Compress { text } | Task::Arousal { text } => vec![text],
            Task::Recoverable {
                original,
                compressed,
            } => vec![original, compressed],
            Task::RateImportance {
                past_summary,
                exchange,
            } => {
                let mut v = vec![past_summary.as_str()];
                v.extend(lines(exchange));
                v
            }
            Task::Surprise { context, utterance } => {
                let mut v = lines(context);
                v.push(utterance);
                v
            }
            Task::Sufficient { query, memories } | Task::Answer { query, memories } => {
                let mut v = vec![query.as_str()];
                v.extend(strs(memories));
                v
            }
            Task::Helps {
                query,
                memories,
                candidate,
            } => {
                let mut v = vec![query.as_str(), candidate.as_str()];
                v.extend(strs(memories));
                v
            }
            Task::ClassifyQuery { query } => vec![query],
            Task::ClassifyMemory { text } => vec![text],
            Task::Choose {
                question,
                options,
                memories,
            } => {
                let mut v = vec![question.as_str()];
                v.extend(strs(options));
                v.extend(strs(memories));
                v
            }
        }
    }

    /// Reject tasks no implementation can answer meaningfully: empty required text, too much
    /// text, zero budgets, fewer than two options, an invalid schema.
    pub fn validate(&self) -> Result<(), ModelError> {
        let total: usize = self.texts().iter().map(|t| t.len()).sum();
        if total > MAX_TASK_BYTES {
            return Err(ModelError::invalid(format!(
                "{}: {total} bytes of text, more than the {MAX_TASK_BYTES} one task takes; split it",
                self.name()
            )));
        }
        let blank = |what: &str, s: &str| -> Result<(), ModelError> {
            if s.trim().is_empty() {
                Err(ModelError::invalid(format!(
                    "{}: {what} is empty",
                    self.name()
                )))
            } else {
                Ok(())
            }
        };
        let some_text = |what: &str, v: Vec<&str>| {
            if v.iter().any(|t| !t.trim().is_empty()) {
                Ok(())
            } else {
                Err(ModelError::invalid(format!(
                    "{}: {what} has no text",
                    self.name()
                )))
            }
        };
        match self {
            Task::Summarize {
                texts,
                level,
                token_budget,
            } => {
                some_text("texts", texts.iter().map(String::as_str).collect())?;
                if *level == 0 {
                    return Err(ModelError::invalid("summarize: level starts at 1"));
                }
                if *token_budget < 8 {
                    return Err(ModelError::invalid(
                        "summarize: token_budget must be at least 8",
                    ));
                }
            }
            Task::PersonaSnapshot { window, schema } => {
                some_text("window", window.iter().map(|l| l.text.as_str()).collect())?;
                schema.validate()?;
            }
            Task::Categorize { session } => {
                some_text("session", session.iter().map(|l| l.text.as_str()).collect())?;
            }
            Task::Conflicts { previous, new } | Task::Merge { previous, new } => {
                blank("previous", previous)?;
                blank("new", new)?;
            }
            Task::Compress { text } | Task::Arousal { text } => blank("text", text)?,
            Task::Recoverable {
                original,
                compressed,
            } => {
                blank("original", original)?;
                blank("compressed", compressed)?;
            }
            Task::RateImportance { exchange, .. } => {
                some_text(
                    "exchange",
                    exchange.iter().map(|l| l.text.as_str()).collect(),
                )?;
            }
            Task::Surprise { utterance, .. } => blank("utterance", utterance)?,
            Task::Sufficient { query, .. } | Task::Answer { query, .. } => blank("query", query)?,
            Task::Helps {
                query, candidate, ..
            } => {
                blank("query", query)?;
                blank("candidate", candidate)?;
            }
            Task::ClassifyQuery { query } => blank("query", query)?,
            Task::ClassifyMemory { text } => blank("text", text)?,
            Task::Choose {
                question, options, ..
            } => {
                blank("question", question)?;
                if options.len() < 2 {
                    return Err(ModelError::invalid("choose: needs at least two options"));
                }
            }
        }
        Ok(())
    }
}

/// What went wrong in a task. `InvalidInput` is the caller's fault and is never retried;
/// the others are the model's or the endpoint's.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ModelError {
    #[error("invalid task input: {0}")]
    InvalidInput(String),
    /// The endpoint could not be reached or kept failing (after retries).
    #[error("model unavailable: {0}")]
    Unavailable(String),
    #[error("model call timed out after {0} ms")]
    Timeout(u64),
    /// The model answered, but not in a usable shape (after the repair retry).
    #[error("{task}: unusable model output: {detail}")]
    BadOutput { task: String, detail: String },
    /// An implementation returned an output of the wrong kind for the task.
    #[error("{task}: expected a {expected:?} output, got {got:?}")]
    WrongOutput {
        task: String,
        expected: OutputKind,
        got: OutputKind,
    },
}

impl ModelError {
    /// Whose fault the failure is: bad task input is the caller's; an endpoint that is down,
    /// slow or answers nonsense is an unavailable dependency; a wrong output kind is a bug.
    pub fn class(&self) -> crate::error::ErrorClass {
        use crate::error::ErrorClass;
        match self {
            ModelError::InvalidInput(_) => ErrorClass::InvalidInput,
            ModelError::Unavailable(_) | ModelError::Timeout(_) | ModelError::BadOutput { .. } => {
                ErrorClass::Unavailable
            }
            ModelError::WrongOutput { .. } => ErrorClass::Internal,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ModelError::InvalidInput(message.into())
    }

    pub fn bad_output(task: &str, detail: impl Into<String>) -> Self {
        ModelError::BadOutput {
            task: task.to_string(),
            detail: detail.into(),
        }
    }
}

pub type ModelResult<T> = std::result::Result<T, ModelError>;

/// Calls and costs of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUsage {
    /// `run` calls.
    pub calls: u64,
    /// Calls that ended in an error.
    pub failures: u64,
    /// Extra requests (retries and repair attempts) beyond one per call.
    pub retries: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Wall time spent in calls, in microseconds.
    pub micros: u64,
}

impl TaskUsage {
    pub fn add(&mut self, other: &TaskUsage) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.retries += other.retries;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.micros += other.micros;
    }
}

/// Usage per task name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    pub tasks: BTreeMap<String, TaskUsage>,
}

impl UsageReport {
    pub fn total(&self) -> TaskUsage {
        let mut t = TaskUsage::default();
        for u in self.tasks.values() {
            t.add(u);
        }
        t
    }
}

/// Runs memory tasks. See the module documentation for the contract.
pub trait MemoryModel: Send + Sync {
    /// Identity for reports: "offline" or "llm:<model>".
    fn id(&self) -> &str;

    /// Run one task. The output's kind must be `task.output_kind()`.
    fn run(&self, task: &Task) -> ModelResult<TaskOutput>;

    /// Calls and tokens per task since creation.
    fn usage(&self) -> UsageReport {
        UsageReport::default()
    }

    /// Whether answers come from a language model (an LLM endpoint) rather than rules and
    /// small statistics. What rules decided on the write path is worth a language model's
    /// second opinion; asking the rules again is not.
    fn is_language_model(&self) -> bool {
        false
    }
}

fn expect<T>(
    task: &Task,
    out: TaskOutput,
    pick: impl FnOnce(TaskOutput) -> Option<T>,
) -> ModelResult<T> {
    let got = out.kind();
    pick(out).ok_or_else(|| ModelError::WrongOutput {
        task: task.name().to_string(),
        expected: task.output_kind(),
        got,
    })
}

/// Typed calls for every task, built on [`MemoryModel::run`].
pub trait MemoryModelExt: MemoryModel {
    fn summarize(&self, texts: &[String], level: u8, token_budget: usize) -> ModelResult<String> {
        let task = Task::Summarize {
            texts: texts.to_vec(),
            level,
            token_budget,
        };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Text(t) => Some(t),
            _ => None,
        })
    }

    fn persona_snapshot(
        &self,
        window: &[Line],
        schema: &PersonaSchema,
    ) -> ModelResult<Vec<PersonaValue>> {
        let task = Task::PersonaSnapshot {
            window: window.to_vec(),
            schema: schema.clone(),
        };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Persona(v) => Some(v),
            _ => None,
        })
    }

    fn categorize(&self, session: &[Line]) -> ModelResult<Vec<CategorySummary>> {
        let task = Task::Categorize {
            session: session.to_vec(),
        };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Categories(v) => Some(v),
            _ => None,
        })
    }

    fn conflicts(&self, previous: &str, new: &str) -> ModelResult<bool> {
        self.flag(Task::Conflicts {
            previous: previous.into(),
            new: new.into(),
        })
    }

    fn merge(&self, previous: &str, new: &str) -> ModelResult<String> {
        self.text(Task::Merge {
            previous: previous.into(),
            new: new.into(),
        })
    }

    fn compress(&self, text: &str) -> ModelResult<String> {
        self.text(Task::Compress { text: text.into() })
    }

    fn recoverable(&self, original: &str, compressed: &str) -> ModelResult<bool> {
        self.flag(Task::Recoverable {
            original: original.into(),
            compressed: compressed.into(),
        })
    }

    fn rate_importance(&self, past_summary: &str, exchange: &[Line]) -> ModelResult<u8> {
        let task = Task::RateImportance {
            past_summary: past_summary.into(),
            exchange: exchange.to_vec(),
        };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Importance(v) if (1..=10).contains(&v) => Some(v),
            _ => None,
        })
    }

    fn arousal(&self, text: &str) -> ModelResult<f32> {
        self.score(Task::Arousal { text: text.into() })
    }

    fn surprise(&self, context: &[Line], utterance: &str) -> ModelResult<f32> {
        self.score(Task::Surprise {
            context: context.to_vec(),
            utterance: utterance.into(),
        })
    }

    fn sufficient(&self, query: &str, memories: &[String]) -> ModelResult<bool> {
        self.flag(Task::Sufficient {
            query: query.into(),
            memories: memories.to_vec(),
        })
    }

    fn helps(&self, query: &str, memories: &[String], candidate: &str) -> ModelResult<bool> {
        self.flag(Task::Helps {
            query: query.into(),
            memories: memories.to_vec(),
            candidate: candidate.into(),
        })
    }

    fn classify_query(&self, query: &str) -> ModelResult<QueryClass> {
        let task = Task::ClassifyQuery {
            query: query.into(),
        };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::QueryClass(c) => Some(c),
            _ => None,
        })
    }

    /// P(semantic) and P(episodic) of a memory's text.
    fn classify_memory(&self, text: &str) -> ModelResult<QueryClass> {
        let task = Task::ClassifyMemory { text: text.into() };
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::QueryClass(c) => Some(c),
            _ => None,
        })
    }

    fn answer(&self, query: &str, memories: &[String]) -> ModelResult<String> {
        self.text(Task::Answer {
            query: query.into(),
            memories: memories.to_vec(),
        })
    }

    fn choose(
        &self,
        question: &str,
        options: &[String],
        memories: &[String],
    ) -> ModelResult<usize> {
        let task = Task::Choose {
            question: question.into(),
            options: options.to_vec(),
            memories: memories.to_vec(),
        };
        let n = options.len();
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Choice(i) if i < n => Some(i),
            _ => None,
        })
    }

    #[doc(hidden)]
    fn text(&self, task: Task) -> ModelResult<String> {
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Text(t) => Some(t),
            _ => None,
        })
    }

    #[doc(hidden)]
    fn flag(&self, task: Task) -> ModelResult<bool> {
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Flag(b) => Some(b),
            _ => None,
        })
    }

    #[doc(hidden)]
    fn score(&self, task: Task) -> ModelResult<f32> {
        let out = self.run(&task)?;
        expect(&task, out, |o| match o {
            TaskOutput::Score(s) if s.is_finite() => Some(s),
            _ => None,
        })
    }
}

impl<M: MemoryModel + ?Sized> MemoryModelExt for M {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_round_trip_as_tagged_json_and_names_match() {
        let task = Task::Arousal {
            text: "我太开心了！".into(),
        };
        let json = serde_json::to_string(&task).unwrap();
        assert_eq!(json, r#"{"task":"arousal","text":"我太开心了！"}"#);
        assert_eq!(serde_json::from_str::<Task>(&json).unwrap(), task);
        let snapshot: Task = serde_json::from_str(
            r#"{"task":"persona_snapshot","window":[{"role":"user","text":"I'm a nurse"}]}"#,
        )
        .unwrap();
        assert_eq!(snapshot.name(), "persona_snapshot");
        assert!(
            serde_json::from_str::<Task>(r#"{"task":"arousal","txt":"x"}"#)
                .unwrap_err()
                .is_data()
        );
        for name in TASK_NAMES {
            assert!(TASK_NAMES.iter().filter(|n| **n == name).count() == 1);
        }
    }

    #[test]
    fn validation_rejects_what_no_model_can_answer() {
        let empty = Task::Compress { text: "  ".into() };
        assert!(matches!(empty.validate(), Err(ModelError::InvalidInput(_))));
        let one_option = Task::Choose {
            question: "q".into(),
            options: vec!["a".into()],
            memories: vec![],
        };
        assert!(one_option.validate().is_err());
        let huge = Task::Arousal {
            text: "x".repeat(MAX_TASK_BYTES + 1),
        };
        assert!(huge.validate().unwrap_err().to_string().contains("split"));
        let mut schema = PersonaSchema::default_keys();
        assert!(schema.validate().is_ok());
        schema.keys[8].opposite = Some("nothing".into());
        assert!(schema.validate().is_err());
    }

    struct Wrong;
    impl MemoryModel for Wrong {
        fn id(&self) -> &str {
            "wrong"
        }
        fn run(&self, _task: &Task) -> ModelResult<TaskOutput> {
            Ok(TaskOutput::Importance(11))
        }
    }

    #[test]
    fn typed_calls_turn_wrong_outputs_into_errors() {
        assert!(matches!(
            Wrong.arousal("x"),
            Err(ModelError::WrongOutput { .. })
        ));
        // Importance outside 1..=10 is not accepted either.
        assert!(Wrong
            .rate_importance("", &[Line::new(Role::User, None, "hi")])
            .is_err());
    }
}
