//! An order-preserving JSON tree for walking dataset files record by record.
//!
//! `serde_json::Value` sorts object keys (the workspace does not enable `preserve_order`), but
//! dataset order matters: PerLTQA memories and MemDaily groups are listed in a meaningful order.
//! Loaders walk this tree, reporting each bad record with its location, and convert single
//! records to `serde_json::Value` when a typed view is convenient.

use std::fmt;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::{serde_message, DatasetError};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Node]> {
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<&[(String, Node)]> {
        match self {
            Node::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// "a string", "an object", … for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number(_) => "a number",
            Node::String(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }

    /// Strings verbatim, numbers and booleans in their JSON spelling; `None` otherwise.
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match self {
            Node::String(s) => Some(s.clone()),
            Node::Number(n) => Some(n.to_string()),
            Node::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.clone()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.clone(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }

    /// Deserialize one record into a typed view; the error text is serde's, without position.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value(self.to_value()).map_err(|e| serde_message(&e))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Number::from_f64(v).map_or(Node::Null, Node::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Node>()? {
            // Duplicate keys: the last one wins, as with serde_json::Value.
            if let Some(slot) = entries.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = value;
            } else {
                entries.push((key, value));
            }
        }
        Ok(Node::Object(entries))
    }
}

/// Read and parse a whole JSON file; syntax errors carry serde's line and column.
pub(crate) fn read_json_file(path: &Path) -> Result<Node, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    parse_json_bytes(path, &bytes)
}

pub(crate) fn parse_json_bytes(path: &Path, bytes: &[u8]) -> Result<Node, DatasetError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    serde_json::from_slice::<Node>(bytes).map_err(|e| DatasetError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: serde_message(&e),
    })
}

/// One non-blank line of a JSON Lines file: its 1-based number and the parsed value, or why it
/// could not be parsed (bad UTF-8, malformed JSON) so the caller can record a located defect.
pub(crate) struct JsonLine {
    pub(crate) number: usize,
    pub(crate) value: Result<Node, String>,
}

/// Read a JSON Lines file leniently: only I/O failures are errors; blank lines are skipped.
pub(crate) fn read_json_lines(path: &Path) -> Result<Vec<JsonLine>, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let mut lines = Vec::new();
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let value = match std::str::from_utf8(raw) {
            Err(e) => Err(format!("invalid UTF-8 at byte {}", e.valid_up_to())),
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => serde_json::from_str::<Node>(line).map_err(|e| {
                format!(
                    "malformed JSON at column {}: {}",
                    e.column(),
                    serde_message(&e)
                )
            }),
        };
        lines.push(JsonLine {
            number: index + 1,
            value,
        });
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_last_duplicate() {
        let node: Node = serde_json::from_str(r#"{"b": 1, "a": [true, null, "x"], "b": 2.5}"#)
            .expect("valid json");
        let keys: Vec<&str> = node
            .as_object()
            .expect("object")
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(
            node.get("b").and_then(Node::scalar_text).as_deref(),
            Some("2.5")
        );
        assert_eq!(
            node.get("a").and_then(Node::as_array).map(<[Node]>::len),
            Some(3)
        );
    }

    #[test]
    fn json_lines_are_read_leniently() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, b"\xEF\xBB\xBF{\"a\": 1}\r\n\n  \n{oops\n\xff\n[2]").expect("write");
        let lines = read_json_lines(&path).expect("readable");
        let numbers: Vec<usize> = lines.iter().map(|l| l.number).collect();
        assert_eq!(numbers, [1, 4, 5, 6]);
        assert_eq!(
            lines[0]
                .value
                .as_ref()
                .ok()
                .and_then(|n| n.get("a"))
                .and_then(Node::scalar_text),
            Some("1".to_string())
        );
        assert!(lines[1]
            .value
            .as_ref()
            .is_err_and(|e| e.contains("malformed JSON")));
        assert!(lines[2].value.as_ref().is_err_and(|e| e.contains("UTF-8")));
        assert!(lines[3]
            .value
            .as_ref()
            .is_ok_and(|n| n.as_array().is_some()));
        assert!(read_json_lines(&dir.path().join("missing.jsonl")).is_err());
    }

    #[test]
    fn syntax_error_has_position() {
        let err =
            parse_json_bytes(Path::new("x.json"), b"{\n  \"a\": [1,\n}").expect_err("invalid json");
        match err {
            DatasetError::Json { line, column, .. } => {
                assert_eq!(line, 3);
                assert!(column >= 1);
            }
            other => panic!("unexpected error {other:?}"),
        }
    }
}
