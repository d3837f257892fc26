//! JSONL turn files for `mnemos ingest`: one JSON object per line.
//!
//! ```json
//! {"text": "I moved to Berlin.", "role": "user", "speaker": "Ann", "time": "2024-05-01T10:00:00Z",
//!  "session": "s1", "agent": "helper", "user": "ann", "metadata": {"source": "chat"}}
//! ```
//! Only `text` is required; `role` defaults to "user"; `time` is an RFC 3339 string or integer
//! milliseconds since the Unix epoch; `id` is the turn's idempotency key (a turn whose id the
//! user already has is not stored again). Blank lines are skipped. Every other problem — bad UTF-8,
//! malformed JSON, a wrong type, an unknown field, empty or oversized text — rejects that line
//! with a message naming the line and the field, so a typo never silently drops data.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use mnemos_core::{validate_metadata, validate_text, Metadata, Role, Timestamp, MAX_NAME_BYTES};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{serde_message, DatasetError, LineError, MAX_REPORTED_LINE_ERRORS};

/// The fields a turn line may have.
pub const TURN_FIELDS: [&str; 9] = [
    "text", "role", "speaker", "time", "session", "agent", "user", "metadata", "id",
];

/// One accepted turn line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub text: String,
    pub role: Role,
    pub speaker: Option<String>,
    pub time: Option<Timestamp>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub user: Option<String>,
    pub metadata: Metadata,
    /// The turn's idempotency key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The outcome of a lenient read: good lines and bad lines, both with 1-based line numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JsonlRead {
    pub records: Vec<(usize, TurnRecord)>,
    pub errors: Vec<LineError>,
}

/// Read turn lines from `reader`.
///
/// Lenient mode returns the good records and every bad line. Strict mode accepts all or
/// nothing: any bad line makes it return [`DatasetError::InvalidLines`] listing the first
/// [`MAX_REPORTED_LINE_ERRORS`] bad lines. Only I/O failures abort a lenient read.
pub fn read_turn_lines(reader: impl BufRead, strict: bool) -> Result<JsonlRead, DatasetError> {
    read_named(reader, strict, Path::new("<input>"))
}

/// [`read_turn_lines`] on a file; errors name the file.
pub fn read_turn_file(path: &Path, strict: bool) -> Result<JsonlRead, DatasetError> {
    let file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, e))?;
    read_named(std::io::BufReader::new(file), strict, path)
}

fn read_named(
    mut reader: impl BufRead,
    strict: bool,
    path: &Path,
) -> Result<JsonlRead, DatasetError> {
    let mut read = JsonlRead::default();
    let mut buffer = Vec::new();
    let mut line_number = 0usize;
    loop {
        buffer.clear();
        let n = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|e| DatasetError::io(PathBuf::from(path), e))?;
        if n == 0 {
            break;
        }
        line_number += 1;
        let mut bytes = buffer.as_slice();
        if line_number == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = match std::str::from_utf8(bytes) {
            Ok(line) => line,
            Err(e) => {
                read.errors.push(LineError {
                    line: line_number,
                    message: format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                });
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match parse_turn_line(line) {
            Ok(record) => read.records.push((line_number, record)),
            Err(message) => read.errors.push(LineError {
                line: line_number,
                message,
            }),
        }
    }
    if strict && !read.errors.is_empty() {
        let total = read.errors.len();
        read.errors.truncate(MAX_REPORTED_LINE_ERRORS);
        return Err(DatasetError::InvalidLines {
            path: path.to_path_buf(),
            errors: read.errors,
            total,
        });
    }
    Ok(read)
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// Validate one non-blank line. The error lists every problem found on the line.
pub fn parse_turn_line(line: &str) -> Result<TurnRecord, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let column = e.column();
        format!("malformed JSON at column {column}: {}", serde_message(&e))
    })?;
    let Value::Object(mut object) = value else {
        return Err(format!("expected a JSON object, found {}", kind(&value)));
    };
    let mut problems = Vec::new();
    problems.extend(unknown_fields_problem(&object));

    // Fields are checked in this order so the problems are listed in it.
    let text = take_text(object.remove("text"), &mut problems);
    let role = take_role(object.remove("role"), &mut problems);
    let speaker = take_name(&mut object, "speaker", &mut problems);
    let session = take_name(&mut object, "session", &mut problems);
    let agent = take_name(&mut object, "agent", &mut problems);
    let user = take_name(&mut object, "user", &mut problems);
    let id = take_name(&mut object, "id", &mut problems);
    let time = take_time(object.remove("time"), &mut problems);
    let metadata = take_metadata(object.remove("metadata"), &mut problems);

    match (text, role) {
        (Some(text), Some(role)) if problems.is_empty() => Ok(TurnRecord {
            text,
            role,
            speaker,
            time,
            session,
            agent,
            user,
            metadata,
            id,
        }),
        _ => Err(problems.join("; ")),
    }
}

/// One problem naming every field outside [`TURN_FIELDS`], so a typo is reported, not dropped.
fn unknown_fields_problem(object: &Map<String, Value>) -> Option<String> {
    let unknown: Vec<String> = object
        .keys()
        .filter(|k| !TURN_FIELDS.contains(&k.as_str()))
        .map(|k| format!("`{k}`"))
        .collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "unknown field{} {} (allowed: {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", "),
            TURN_FIELDS.join(", ")
        )
    })
}

/// The required `text`; `None` (with the problem recorded) when missing or invalid.
fn take_text(value: Option<Value>, problems: &mut Vec<String>) -> Option<String> {
    match value {
        None => {
            problems.push("missing field `text`".to_string());
            None
        }
        Some(Value::String(text)) => match validate_text("text", &text) {
            Ok(()) => Some(text),
            Err(e) => {
                problems.push(core_message(&e));
                None
            }
        },
        Some(other) => {
            problems.push(format!(
                "field `text` must be a string, found {}",
                kind(&other)
            ));
            None
        }
    }
}

/// `role`, "user" when absent or null; `None` (with the problem recorded) when invalid.
fn take_role(value: Option<Value>, problems: &mut Vec<String>) -> Option<Role> {
    match value {
        None | Some(Value::Null) => Some(Role::User),
        Some(Value::String(role)) => match Role::from_str(&role) {
            Ok(role) => Some(role),
            Err(e) => {
                problems.push(format!("field `role`: {}", core_message(&e)));
                None
            }
        },
        Some(other) => {
            problems.push(format!(
                "field `role` must be a string, found {}",
                kind(&other)
            ));
            None
        }
    }
}

/// An optional identifier-like field (`speaker`, `session`, …), removed from `object`.
fn take_name(
    object: &mut Map<String, Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match object.remove(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) => match check_name(&value) {
            Ok(()) => Some(value),
            Err(problem) => {
                problems.push(format!("field `{field}` {problem}"));
                None
            }
        },
        Some(other) => {
            problems.push(format!(
                "field `{field}` must be a string, found {}",
                kind(&other)
            ));
            None
        }
    }
}

/// The optional `time`: an RFC 3339 string or integer milliseconds since the epoch.
fn take_time(value: Option<Value>, problems: &mut Vec<String>) -> Option<Timestamp> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => match chrono::DateTime::parse_from_rfc3339(text.trim()) {
            Ok(time) => Some(Timestamp(time.timestamp_millis())),
            Err(e) => {
                problems.push(format!(
                    "field `time` {text:?} is not an RFC 3339 time ({e}); \
                     use e.g. \"2024-05-01T10:00:00Z\" or integer milliseconds"
                ));
                None
            }
        },
        Some(Value::Number(n)) => match n.as_i64() {
            Some(ms) => Some(Timestamp(ms)),
            None => {
                problems.push(format!(
                    "field `time` must be whole milliseconds since the epoch, found {n}"
                ));
                None
            }
        },
        Some(other) => {
            problems.push(format!(
                "field `time` must be an RFC 3339 string or integer milliseconds, found {}",
                kind(&other)
            ));
            None
        }
    }
}

/// The optional `metadata` object of strings. Every non-string value is reported, not just
/// the first; any recorded problem rejects the whole line.
fn take_metadata(value: Option<Value>, problems: &mut Vec<String>) -> Metadata {
    match value {
        None | Some(Value::Null) => Metadata::new(),
        Some(Value::Object(map)) => {
            let mut metadata = Metadata::new();
            for (key, value) in map {
                match value {
                    Value::String(value) => {
                        metadata.insert(key, value);
                    }
                    other => problems.push(format!(
                        "metadata value `{key}` must be a string, found {}",
                        kind(&other)
                    )),
                }
            }
            if let Err(e) = validate_metadata(&metadata) {
                problems.push(format!("field `metadata`: {}", core_message(&e)));
            }
            metadata
        }
        Some(other) => {
            problems.push(format!(
                "field `metadata` must be an object of strings, found {}",
                kind(&other)
            ));
            Metadata::new()
        }
    }
}

/// Same rules as core's identifier check (non-empty, bounded, no control characters).
fn check_name(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("must not be empty".to_string());
    }
    if value.len() > MAX_NAME_BYTES {
        return Err(format!(
            "is {} bytes; the limit is {MAX_NAME_BYTES}",
            value.len()
        ));
    }
    if value.chars().any(char::is_control) {
        return Err("must not contain control characters".to_string());
    }
    Ok(())
}

fn core_message(error: &mnemos_core::Error) -> String {
    match error {
        mnemos_core::Error::InvalidInput(message) => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::MAX_TEXT_BYTES;

    fn lenient(input: &[u8]) -> JsonlRead {
        read_turn_lines(input, false).expect("lenient read never fails on content")
    }

    fn only_error(line: &str) -> String {
        parse_turn_line(line).expect_err("line must be rejected")
    }

    #[test]
    fn accepts_full_and_minimal_lines() {
        let input = concat!(
            "{\"text\": \"I moved to Berlin.\", \"role\": \"assistant\", \"speaker\": \"Ann\", ",
            "\"time\": \"2024-05-01T10:00:00+02:00\", \"session\": \"s1\", \"agent\": \"a\", ",
            "\"user\": \"u\", \"metadata\": {\"source\": \"chat\"}}\n",
            "\n   \n",
            "{\"text\": \"我搬到柏林了。\", \"time\": 1714550400000}\r\n",
            "{\"text\": \"x\", \"role\": null, \"speaker\": null}",
        );
        let read = lenient(input.as_bytes());
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        assert_eq!(read.records.len(), 3);
        let (line, first) = &read.records[0];
        assert_eq!(*line, 1);
        assert_eq!(first.role, Role::Assistant);
        assert_eq!(first.speaker.as_deref(), Some("Ann"));
        assert_eq!(first.time, Some(Timestamp(1_714_550_400_000)));
        assert_eq!(first.session.as_deref(), Some("s1"));
        assert_eq!(
            first.metadata.get("source").map(String::as_str),
            Some("chat")
        );
        let (line, second) = &read.records[1];
        assert_eq!(*line, 4);
        assert_eq!(second.role, Role::User);
        assert_eq!(second.text, "我搬到柏林了。");
        assert_eq!(second.time, Some(Timestamp(1_714_550_400_000)));
        assert_eq!(read.records[2].0, 5);
        assert_eq!(read.records[2].1.speaker, None);
    }

    #[test]
    fn rejects_bad_lines_with_clear_messages() {
        assert!(only_error("{\"text\": ").starts_with("malformed JSON at column"));
        assert_eq!(only_error("[1]"), "expected a JSON object, found an array");
        assert_eq!(
            only_error("{\"text\": 5}"),
            "field `text` must be a string, found the number 5"
        );
        assert_eq!(only_error("{\"role\": \"user\"}"), "missing field `text`");
        assert!(only_error("{\"text\": \"  \"}").contains("empty"));
        assert!(
            only_error("{\"text\": \"x\", \"role\": \"robot\"}").contains("unknown role 'robot'")
        );
        let unknown = only_error("{\"text\": \"x\", \"txet\": \"y\"}");
        assert!(unknown.starts_with("unknown field `txet`"), "{unknown}");
        assert!(only_error("{\"text\": \"x\", \"time\": \"yesterday\"}").contains("RFC 3339"));
        assert!(only_error("{\"text\": \"x\", \"time\": 1.5}").contains("whole milliseconds"));
        assert_eq!(
            only_error("{\"text\": \"x\", \"metadata\": {\"k\": 1}}"),
            "metadata value `k` must be a string, found the number 1"
        );
        assert!(only_error("{\"text\": \"x\", \"session\": \"\"}")
            .contains("`session` must not be empty"));
        let big = format!("{{\"text\": \"{}\"}}", "a".repeat(MAX_TEXT_BYTES + 1));
        assert!(only_error(&big).contains("limit"));
        // Several problems on one line are all reported.
        let both = only_error("{\"text\": 1, \"speaker\": 2}");
        assert!(
            both.contains("`text`") && both.contains("`speaker`"),
            "{both}"
        );
    }

    #[test]
    fn invalid_utf8_is_a_line_error() {
        let mut input = b"{\"text\": \"ok\"}\n".to_vec();
        input.extend_from_slice(b"{\"text\": \"\xff\xfe\"}\n");
        input.extend_from_slice(b"{\"text\": \"also ok\"}");
        let read = lenient(&input);
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.errors.len(), 1);
        assert_eq!(read.errors[0].line, 2);
        assert_eq!(
            read.errors[0].to_string(),
            "line 2: invalid UTF-8 at byte 10"
        );
    }

    #[test]
    fn strict_mode_accepts_nothing_on_error() {
        let mut input = String::new();
        for i in 0..25 {
            input.push_str(&format!("{{\"text\": {i}}}\n"));
        }
        input.push_str("{\"text\": \"fine\"}\n");
        let err = read_turn_lines(input.as_bytes(), true).expect_err("strict");
        match &err {
            DatasetError::InvalidLines { errors, total, .. } => {
                assert_eq!(*total, 25);
                assert_eq!(errors.len(), MAX_REPORTED_LINE_ERRORS);
                assert_eq!(errors[0].line, 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        let text = err.to_string();
        assert!(text.contains("25 invalid line(s)"), "{text}");
        assert!(
            text.contains("line 20:") && !text.contains("line 21:"),
            "{text}"
        );
        assert!(text.contains("and 5 more"), "{text}");

        let good = read_turn_lines("{\"text\": \"a\"}\n\n{\"text\": \"b\"}\n".as_bytes(), true)
            .expect("all lines valid");
        assert_eq!(good.records.len(), 2);
    }

    #[test]
    fn bom_and_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("turns.jsonl");
        std::fs::write(&path, b"\xEF\xBB\xBF{\"text\": \"hi\"}\nnot json\n").expect("write");
        let read = read_turn_file(&path, false).expect("reads");
        assert_eq!(read.records.len(), 1);
        assert_eq!(read.errors[0].line, 2);
        let err = read_turn_file(&path, true).expect_err("strict");
        assert!(err.to_string().contains("turns.jsonl"), "{err}");
        let err = read_turn_file(&dir.path().join("missing.jsonl"), false).expect_err("missing");
        assert!(matches!(err, DatasetError::Io { .. }));
    }
}
