//! Our prompts: one system message and one user message per task, each asking for a small JSON
//! object. The system message ends with the task marker `mnemos_task=<name>` so logs, test
//! servers and proxies can tell tasks apart.

use serde::{Deserialize, Serialize};

use mnemos_core::memory_model::{Line, PersonaSchema};
use mnemos_core::Task;
use mnemos_text::{detect_language, Language};

/// The marker the system prompt ends with: `mnemos_task=<task name>`.
pub const TASK_MARKER: &str = "mnemos_task=";

/// One chat message as sent to the endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "system".into(),
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "user".into(),
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

const PREAMBLE: &str = "You are the memory component of a conversational assistant. You read \
dialogue and stored notes and answer one narrow question about them.
Rules:
- Reply with a single JSON object and nothing else: no prose around it, no code fences.
- Write every text value in the language of the input: Chinese input gets Chinese output, \
English input gets English output. Never translate; keep names, quotes, numbers and dates \
exactly as written.
- Use only what the input says. Do not invent facts.";

/// The JSON shape each task answers with (also quoted by the repair prompt).
pub fn output_format(task: &Task) -> &'static str {
    match task {
        Task::Summarize { .. } => r#"{"summary": "<text>"}"#,
        Task::PersonaSnapshot { .. } => {
            r#"{"values": [{"key": "<schema key>", "value": "<short phrase>", "line": <line number>}]}"#
        }
        Task::Categorize { .. } => {
            r#"{"categories": [{"category": "<short topic label>", "summary": "<text>", "lines": [<line numbers>]}]}"#
        }
        Task::Conflicts { .. } => r#"{"conflict": true or false}"#,
        Task::Merge { .. } | Task::Compress { .. } => r#"{"text": "<text>"}"#,
        Task::Recoverable { .. } => r#"{"recoverable": true or false}"#,
        Task::RateImportance { .. } => r#"{"importance": <integer 1-10>}"#,
        Task::Arousal { .. } => r#"{"arousal": <number 0.0-1.0>}"#,
        Task::Surprise { .. } => r#"{"surprise": <integer 1-10>}"#,
        Task::Sufficient { .. } => r#"{"sufficient": true or false}"#,
        Task::Helps { .. } => r#"{"helps": true or false}"#,
        Task::ClassifyQuery { .. } | Task::ClassifyMemory { .. } => {
            r#"{"p_semantic": <number 0.0-1.0>}"#
        }
        Task::Answer { .. } => r#"{"answer": "<text>"}"#,
        Task::Choose { .. } => r#"{"choice": <option number>}"#,
    }
}

/// What the task asks, beyond the shared rules.
fn instructions(task: &Task) -> String {
    match task {
        Task::Summarize {
            level,
            token_budget,
            ..
        } => {
            let source = if *level <= 1 {
                "The texts are consecutive pieces of a conversation."
            } else {
                "The texts are earlier summaries, oldest first; fold them into one summary of \
                 the whole period."
            };
            let words = token_budget.saturating_mul(3) / 4;
            format!(
                "Summarize the texts in their order. {source} Keep who did or said what, names, \
                 numbers, dates, decisions and feelings that matter later; drop greetings and \
                 filler. Stay within {token_budget} tokens (about {words} English words or \
                 {token_budget} Chinese characters)."
            )
        }
        Task::PersonaSnapshot { schema, .. } => format!(
            "List what the numbered dialogue lines state about the speakers themselves, under \
             these keys only:\n{}\nOne entry per fact, as a short phrase in the dialogue's \
             language, with the number of the line it comes from. Leave out guesses, questions \
             and hypotheticals. If nothing is stated, answer {{\"values\": []}}.",
            schema_lines(schema)
        ),
        Task::Categorize { .. } => "Group the numbered session lines by topic. For each topic \
             give a short label, a summary of what was said about it, and the numbers of the \
             lines it covers. Use as few topics as the session needs."
            .into(),
        Task::Conflicts { .. } => "Does NEW contradict PREVIOUS? A contradiction is the same \
             subject with a different value, number, time or place, or a negation of what was \
             said. Extra detail, a different subject or compatible facts are not contradictions."
            .into(),
        Task::Merge { .. } => "Write one text that combines PREVIOUS and NEW. Where they \
             disagree, state NEW's value as the current one and mention PREVIOUS's value as \
             the earlier one. Keep every other detail from both."
            .into(),
        Task::Compress { .. } => "Rewrite TEXT shorter. Keep names, numbers, dates, places, \
             decisions and anything needed to recover its meaning; drop filler and repetition."
            .into(),
        Task::Recoverable { .. } => "Could a reader recover the essential content of ORIGINAL \
             (who, what, when, where, numbers, decisions) from COMPRESSED alone?"
            .into(),
        Task::RateImportance { .. } => "Rate how important EXCHANGE is to remember about this \
             user in the long run, given what is already known. 1 = small talk or nothing new; \
             4 = a minor preference or routine; 7 = a significant fact, plan or feeling; 10 = a \
             life-changing event or a fact everything else depends on."
            .into(),
        Task::Arousal { .. } => "Rate the emotional arousal of TEXT: how intense the feeling is, \
             whether positive or negative. 0.0 = calm and neutral; 0.5 = clearly emotional; \
             1.0 = extreme excitement, rage, fear or elation."
            .into(),
        Task::Surprise { .. } => "Rate how surprising UTTERANCE is after the conversation so \
             far. 1 = exactly what one would expect next; 5 = a plausible but unforeseen turn; \
             10 = completely unpredictable (an abrupt topic change or startling news)."
            .into(),
        Task::Sufficient { .. } => "Do MEMORIES contain enough information to answer QUESTION \
             completely and correctly?"
            .into(),
        Task::Helps { .. } => "Would adding CANDIDATE to MEMORIES help answer QUESTION, because \
             it brings relevant information that MEMORIES lack?"
            .into(),
        Task::ClassifyQuery { .. } => "Estimate the probability that QUESTION asks about \
             semantic memory (lasting facts about people: profile, traits, preferences, \
             relationships) rather than episodic memory (particular events, experiences or \
             conversations)."
            .into(),
        Task::ClassifyMemory { .. } => "Estimate the probability that MEMORY is semantic \
             memory (a lasting fact about who someone is: profile, traits, preferences, \
             relationships) rather than episodic memory (a particular event, experience or \
             conversation)."
            .into(),
        Task::Answer { .. } => "Answer QUESTION using only MEMORIES, briefly, in the language of \
             QUESTION. If MEMORIES do not contain the answer, say briefly that it is not known."
            .into(),
        Task::Choose { .. } => "Pick the option that best answers QUESTION given MEMORIES. \
             Answer with the option's number as shown in brackets."
            .into(),
    }
}

fn schema_lines(schema: &PersonaSchema) -> String {
    schema
        .keys
        .iter()
        .map(|k| format!("- {}: {}", k.name, k.description))
        .collect::<Vec<_>>()
        .join("\n")
}

fn numbered_lines(lines: &[Line]) -> String {
    if lines.is_empty() {
        return "(none)".into();
    }
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("[{i}] {}", l.render()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn plain_lines(lines: &[Line]) -> String {
    if lines.is_empty() {
        return "(none)".into();
    }
    lines
        .iter()
        .map(Line::render)
        .collect::<Vec<_>>()
        .join("\n")
}

fn numbered(items: &[String]) -> String {
    if items.is_empty() {
        return "(none)".into();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, t)| format!("[{i}] {t}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn or_none(text: &str) -> &str {
    if text.trim().is_empty() {
        "(none)"
    } else {
        text
    }
}

/// The input part of the user message.
fn input(task: &Task) -> String {
    match task {
        Task::Summarize { texts, .. } => format!("TEXTS:\n{}", numbered(texts)),
        Task::PersonaSnapshot { window, .. } => format!("DIALOGUE:\n{}", numbered_lines(window)),
        Task::Categorize { session } => format!("SESSION:\n{}", numbered_lines(session)),
        Task::Conflicts { previous, new } | Task::Merge { previous, new } => {
            format!("PREVIOUS:\n{previous}\n\nNEW:\n{new}")
        }
        Task::Compress { text } | Task::Arousal { text } => format!("TEXT:\n{text}"),
        Task::Recoverable {
            original,
            compressed,
        } => format!("ORIGINAL:\n{original}\n\nCOMPRESSED:\n{compressed}"),
        Task::RateImportance {
            past_summary,
            exchange,
        } => format!(
            "KNOWN SO FAR:\n{}\n\nEXCHANGE:\n{}",
            or_none(past_summary),
            plain_lines(exchange)
        ),
        Task::Surprise { context, utterance } => format!(
            "CONVERSATION SO FAR:\n{}\n\nUTTERANCE:\n{utterance}",
            plain_lines(context)
        ),
        Task::Sufficient { query, memories } | Task::Answer { query, memories } => {
            format!("QUESTION:\n{query}\n\nMEMORIES:\n{}", numbered(memories))
        }
        Task::Helps {
            query,
            memories,
            candidate,
        } => format!(
            "QUESTION:\n{query}\n\nMEMORIES:\n{}\n\nCANDIDATE:\n{candidate}",
            numbered(memories)
        ),
        Task::ClassifyQuery { query } => format!("QUESTION:\n{query}"),
        Task::ClassifyMemory { text } => format!("MEMORY:\n{text}"),
        Task::Choose {
            question,
            options,
            memories,
        } => format!(
            "QUESTION:\n{question}\n\nOPTIONS:\n{}\n\nMEMORIES:\n{}",
            numbered(options),
            numbered(memories)
        ),
    }
}

/// The language text outputs must be in: the query's for question tasks, else the input's.
pub fn output_language(task: &Task) -> Language {
    match task {
        Task::Answer { query, .. } => detect_language(query),
        _ => detect_language(&task.texts().join("\n")),
    }
}

fn language_note(task: &Task) -> &'static str {
    let has_text_output = matches!(
        task,
        Task::Summarize { .. }
            | Task::PersonaSnapshot { .. }
            | Task::Categorize { .. }
            | Task::Merge { .. }
            | Task::Compress { .. }
            | Task::Answer { .. }
    );
    if !has_text_output {
        return "";
    }
    match output_language(task) {
        Language::Chinese => "\n\nThe input is Chinese: write the text values in Chinese.",
        Language::English => "\n\nThe input is English: write the text values in English.",
        Language::Other => "\n\nWrite the text values in the input's own language.",
    }
}

/// The messages sent for `task`: a system message (shared rules, the task's instructions, the
/// output format, the task marker) and a user message (the input, then a reminder of the format).
pub fn render(task: &Task) -> Vec<ChatMessage> {
    let format = output_format(task);
    let system = format!(
        "{PREAMBLE}\n\nTask: {}\n\nAnswer format: {format}\n\n{TASK_MARKER}{}",
        instructions(task),
        task.name()
    );
    let user = format!(
        "{}{}\n\nAnswer with the JSON object only: {format}",
        input(task),
        language_note(task)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// Most characters of a bad answer quoted back in a repair request.
const MAX_QUOTED_CHARS: usize = 4000;

/// The conversation of a repair request: the original messages, the unusable answer, and a
/// request to answer again with valid JSON only.
pub fn repair(
    task: &Task,
    messages: &[ChatMessage],
    bad_answer: &str,
    problem: &str,
) -> Vec<ChatMessage> {
    let quoted: String = bad_answer.chars().take(MAX_QUOTED_CHARS).collect();
    let mut out = messages.to_vec();
    out.push(ChatMessage::assistant(quoted));
    out.push(ChatMessage::user(format!(
        "That answer could not be used: {problem}. Answer again with only a valid, complete \
         JSON object in this format, nothing else, keeping it short: {}",
        output_format(task)
    )));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Role;

    #[test]
    fn every_task_carries_its_marker_and_format() {
        let task = Task::Choose {
            question: "Where does she work?".into(),
            options: vec!["a bank".into(), "a school".into()],
            memories: vec![],
        };
        let m = render(&task);
        assert_eq!(m.len(), 2);
        assert!(m[0].content.ends_with("mnemos_task=choose"));
        assert!(m[1].content.contains("[1] a school"));
        assert!(m[1].content.contains("MEMORIES:\n(none)"));
        assert!(m[1].content.ends_with(r#"{"choice": <option number>}"#));
    }

    #[test]
    fn text_tasks_name_the_input_language() {
        let zh = Task::Compress {
            text: "我下周三要去上海出差，住在外滩附近。".into(),
        };
        assert!(render(&zh)[1]
            .content
            .contains("write the text values in Chinese"));
        let en = Task::Answer {
            query: "Where is she going?".into(),
            memories: vec!["她下周去上海。".into()],
        };
        assert!(render(&en)[1].content.contains("in English"));
        let flag = Task::Conflicts {
            previous: "I live in Paris".into(),
            new: "I live in Rome".into(),
        };
        assert!(!render(&flag)[1].content.contains("text values"));
    }

    #[test]
    fn repair_quotes_the_bad_answer_within_bounds() {
        let task = Task::Arousal {
            text: "哇！".into(),
        };
        let messages = render(&task);
        let long = "x".repeat(10_000);
        let r = repair(&task, &messages, &long, "no JSON object found");
        assert_eq!(r.len(), 4);
        assert_eq!(r[2].role, "assistant");
        assert_eq!(r[2].content.chars().count(), MAX_QUOTED_CHARS);
        assert!(r[3].content.contains("no JSON object found"));
        assert!(r[3].content.contains(r#"{"arousal""#));
        let lines = [Line::new(Role::User, Some("小明"), "我养了一只猫。")];
        assert_eq!(numbered_lines(&lines), "[0] 小明: 我养了一只猫。");
    }
}
