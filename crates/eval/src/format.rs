//! Recognizing input formats, so the CLI can take a path without a `--format` flag.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dataset::RetrievalDataset;
use crate::error::DatasetError;
use crate::locomo::load_locomo;
use crate::memdaily::load_memdaily;
use crate::perltqa::{find_perltqa_files, load_perltqa, load_perltqa_dir};

/// Input formats the CLI understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// One turn object per line ([`crate::jsonl`]).
    Jsonl,
    Locomo,
    #[cfg_attr(feature = "clap", value(name = "memdaily"))]
    MemDaily,
    /// A directory holding the memory and QA files, or either of the two files.
    #[cfg_attr(feature = "clap", value(name = "perltqa"))]
    PerLtqa,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Jsonl,
        Format::Locomo,
        Format::MemDaily,
        Format::PerLtqa,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Locomo => "locomo",
            Format::MemDaily => "memdaily",
            Format::PerLtqa => "perltqa",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let wanted = s.trim().to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown format '{s}' (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Which loader reads a dataset with questions; `auto` recognizes it from the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum QuestionDataset {
    Auto,
    Locomo,
    #[cfg_attr(feature = "clap", value(name = "memdaily"))]
    MemDaily,
    /// A directory holding the memory and QA files, or either of the two files.
    #[cfg_attr(feature = "clap", value(name = "perltqa"))]
    PerLtqa,
}

impl QuestionDataset {
    /// The format of the dataset at `path`: the one named, else the one recognized. A JSONL
    /// turn file is refused: it has no questions.
    pub fn resolve(self, path: &Path) -> Result<Format, DatasetError> {
        let format = match self {
            QuestionDataset::Auto => sniff_format(path)?,
            QuestionDataset::Locomo => Format::Locomo,
            QuestionDataset::MemDaily => Format::MemDaily,
            QuestionDataset::PerLtqa => Format::PerLtqa,
        };
        if format == Format::Jsonl {
            return Err(DatasetError::UnknownFormat {
                path: path.to_path_buf(),
                reason: "a JSONL turn file has no questions; give a LoCoMo, MemDaily or \
                         PerLTQA dataset"
                    .to_string(),
            });
        }
        Ok(format)
    }
}

/// How much of a file is inspected when its name does not tell.
const SNIFF_BYTES: u64 = 64 * 1024;

/// Guess the format of `path`: by directory contents, then by file name, then by content.
pub fn sniff_format(path: &Path) -> Result<Format, DatasetError> {
    let metadata = std::fs::metadata(path).map_err(|e| DatasetError::io(path, e))?;
    if metadata.is_dir() {
        return find_perltqa_files(path).map(|_| Format::PerLtqa);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        return Ok(Format::Jsonl);
    }
    if name.contains("locomo") {
        return Ok(Format::Locomo);
    }
    if name.contains("memdaily") {
        return Ok(Format::MemDaily);
    }
    if name.starts_with("perltmem") || name.starts_with("perltqa") {
        return Ok(Format::PerLtqa);
    }

    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(SNIFF_BYTES).read_to_end(&mut head))
        .map_err(|e| DatasetError::io(path, e))?;
    sniff_bytes(&head).ok_or_else(|| DatasetError::UnknownFormat {
        path: path.to_path_buf(),
        reason: format!(
            "the first {} bytes match none of {}; pass the format explicitly",
            head.len(),
            Format::ALL.map(Format::as_str).join(", ")
        ),
    })
}

/// Guess a format from the first bytes of a file.
pub fn sniff_bytes(head: &[u8]) -> Option<Format> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start();
    let contains = |needle: &str| trimmed.contains(needle);
    if trimmed.starts_with('{') {
        // A complete object on the first line, followed by more lines or nothing: JSONL.
        let first_line = trimmed.lines().next().unwrap_or_default();
        if let Ok(serde_json::Value::Object(object)) =
            serde_json::from_str::<serde_json::Value>(first_line)
        {
            if object.contains_key("text") {
                return Some(Format::Jsonl);
            }
        }
        if contains("\"message_list\"") {
            return Some(Format::MemDaily);
        }
        if contains("\"social_relationship\"") || contains("\"profile_description\"") {
            return Some(Format::PerLtqa);
        }
        return None;
    }
    if trimmed.starts_with('[') {
        if contains("\"sample_id\"") || contains("\"dia_id\"") {
            return Some(Format::Locomo);
        }
        if contains("\"Reference Memory\"") {
            return Some(Format::PerLtqa);
        }
    }
    None
}

/// Load a retrieval dataset in `format` (JSONL files are turn streams, not datasets).
///
/// For PerLTQA, `path` may be the directory or either of its two files.
pub fn load_retrieval_dataset(
    path: &Path,
    format: Format,
) -> Result<RetrievalDataset, DatasetError> {
    match format {
        Format::Locomo => load_locomo(path),
        Format::MemDaily => load_memdaily(path),
        Format::PerLtqa if path.is_dir() => load_perltqa_dir(path),
        Format::PerLtqa => {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            let (memory, qa) = find_perltqa_files(dir.unwrap_or(Path::new(".")))?;
            load_perltqa(&memory, &qa)
        }
        Format::Jsonl => Err(DatasetError::UnknownFormat {
            path: path.to_path_buf(),
            reason: "a JSONL turn file has no questions; read it with jsonl::read_turn_file"
                .to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        assert_eq!("LoCoMo".parse::<Format>(), Ok(Format::Locomo));
        assert_eq!("perltqa".parse::<Format>(), Ok(Format::PerLtqa));
        assert!("csv".parse::<Format>().is_err());
        for format in Format::ALL {
            assert_eq!(format.to_string().parse::<Format>(), Ok(format));
        }
    }

    #[test]
    fn sniffs_content() {
        assert_eq!(
            sniff_bytes(b"{\"text\": \"hi\"}\n{\"text\": \"x\"}"),
            Some(Format::Jsonl)
        );
        assert_eq!(
            sniff_bytes(b"\xEF\xBB\xBF {\"text\": \"hi\", \"role\": \"user\"}"),
            Some(Format::Jsonl)
        );
        assert_eq!(
            sniff_bytes(b"[{\"sample_id\": \"conv-1\", \"conversation\": {"),
            Some(Format::Locomo)
        );
        assert_eq!(
            sniff_bytes("{\"simple\": {\"roles\": [{\"tid\": 0, \"message_list\": [".as_bytes()),
            Some(Format::MemDaily)
        );
        assert_eq!(
            sniff_bytes(b"{\"Li Lei\": {\"profile\": {}, \"profile_description\": \"\""),
            Some(Format::PerLtqa)
        );
        assert_eq!(
            sniff_bytes(b"[{\"Li\": {\"profile\": [{\"Reference Memory\": \"Age\""),
            Some(Format::PerLtqa)
        );
        assert_eq!(sniff_bytes(b"name,text\n"), None);
        assert_eq!(sniff_bytes(b"{\"foo\": 1}"), None);
    }

    #[test]
    fn sniffs_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            path
        };
        assert_eq!(
            sniff_format(&write("a.jsonl", "")).ok(),
            Some(Format::Jsonl)
        );
        assert_eq!(
            sniff_format(&write("locomo10.json", "[]")).ok(),
            Some(Format::Locomo)
        );
        assert_eq!(
            sniff_format(&write("turns.txt", "{\"text\": \"x\"}\n")).ok(),
            Some(Format::Jsonl)
        );
        let err = sniff_format(&write("data.csv", "a,b\n")).expect_err("unknown");
        assert!(matches!(err, DatasetError::UnknownFormat { .. }), "{err}");
        // A directory without PerLTQA files is not a dataset.
        assert!(sniff_format(dir.path()).is_err());
        write("perltmem_dev.json", "{}");
        write("perltqa_dev.json", "[]");
        assert_eq!(sniff_format(dir.path()).ok(), Some(Format::PerLtqa));
        let dataset = load_retrieval_dataset(&dir.path().join("perltqa_dev.json"), Format::PerLtqa)
            .expect("empty dataset loads");
        assert_eq!(dataset.summary().conversations, 0);
    }
}
