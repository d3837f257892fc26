//! Turns from input files, ready for the engine: JSONL turn files and dataset files
//! (LoCoMo, MemDaily, PerLTQA). Every turn carries an idempotency key derived from its source,
//! so ingesting the same file again (after a crash, or by mistake) adds only what is new.
//!
//! Keys: a JSONL line's own `id` when it has one; otherwise a hash of the line's scope, role,
//! speaker, time and text, with the count of identical lines before it (so a repeated "ok" in
//! one session stays two turns). A dataset item: `{dataset}:{conversation}:{label}`.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use mnemos_core::Scope;
use mnemos_engine::NewTurn;

use crate::dataset::{Conversation, Item, RetrievalDataset};
use crate::error::{DatasetError, LineError};
use crate::format::{load_retrieval_dataset, sniff_format, Format};
use crate::jsonl::{read_turn_file, JsonlRead, TurnRecord};

/// Metadata key under which a dataset item's label is kept on its turn.
pub const LABEL_KEY: &str = "label";

impl Item {
    /// The turn this item is in `scope`: its role, speaker, text, time and metadata (with its
    /// label under [`LABEL_KEY`]), no key. The one place a dataset item becomes a turn.
    pub fn new_turn(&self, scope: Scope) -> NewTurn {
        let mut metadata = self.metadata.clone();
        metadata.insert(LABEL_KEY.into(), self.label.clone());
        NewTurn {
            scope,
            role: self.role,
            speaker: self.speaker.clone(),
            text: self.text.clone(),
            time: self.time,
            round: None,
            metadata,
            key: None,
        }
    }
}

impl Conversation {
    /// The scope of this conversation's item in `session`: the conversation is the user.
    pub fn scope(&self, tenant: &str, agent: &str, session: &str) -> mnemos_core::Result<Scope> {
        Scope::new(tenant, self.id.clone(), agent, session)
    }
}

/// Where turns that do not name their own scope go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnDefaults {
    pub tenant: String,
    pub user: String,
    pub agent: String,
    pub session: String,
}

/// Turns read from one input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnSource {
    pub turns: Vec<NewTurn>,
    /// Lines left out, with why (JSONL only; a dataset is read whole or not at all).
    pub skipped: Vec<LineError>,
}

/// Read `path` in `format` (sniffed when `None`). JSONL lines that do not parse are skipped and
/// listed, unless `strict`, when any bad line rejects the whole file.
pub fn read_turns(
    path: &Path,
    format: Option<Format>,
    defaults: &TurnDefaults,
    strict: bool,
) -> Result<TurnSource, DatasetError> {
    let format = match format {
        Some(format) => format,
        None => sniff_format(path)?,
    };
    if format != Format::Jsonl {
        let dataset = load_retrieval_dataset(path, format)?;
        return dataset_turns(&dataset, &defaults.tenant, &defaults.agent)
            .map(|turns| TurnSource {
                turns,
                skipped: Vec::new(),
            })
            .map_err(|e| DatasetError::structure(path, "items", e.to_string()));
    }
    Ok(jsonl_turns(read_turn_file(path, strict)?, defaults))
}

/// The turns of JSONL lines already read (bad lines stay listed as skipped).
pub fn jsonl_turns(read: JsonlRead, defaults: &TurnDefaults) -> TurnSource {
    let mut occurrences: HashMap<String, usize> = HashMap::new();
    let mut source = TurnSource {
        turns: Vec::with_capacity(read.records.len()),
        skipped: read.errors,
    };
    for (line, record) in read.records {
        match record_turn(record, defaults, &mut occurrences) {
            Ok(turn) => source.turns.push(turn),
            Err(e) => source.skipped.push(LineError {
                line,
                message: e.to_string(),
            }),
        }
    }
    source.skipped.sort_by_key(|e| e.line);
    source
}

/// One JSONL record as a turn, keyed by its `id` or by its content and occurrence.
fn record_turn(
    record: TurnRecord,
    defaults: &TurnDefaults,
    occurrences: &mut HashMap<String, usize>,
) -> mnemos_core::Result<NewTurn> {
    let scope = Scope::new(
        defaults.tenant.clone(),
        record.user.unwrap_or_else(|| defaults.user.clone()),
        record.agent.unwrap_or_else(|| defaults.agent.clone()),
        record.session.unwrap_or_else(|| defaults.session.clone()),
    )?;
    let key = match record.id {
        Some(id) => id,
        None => {
            let digest = content_digest(
                &scope,
                &record.role,
                &record.speaker,
                &record.time,
                &record.text,
            );
            let seen = occurrences.entry(digest.clone()).or_insert(0);
            *seen += 1;
            format!("line:{digest}#{seen}")
        }
    };
    Ok(NewTurn {
        scope,
        role: record.role,
        speaker: record.speaker,
        text: record.text,
        time: record.time,
        round: None,
        metadata: record.metadata,
        key: Some(key),
    })
}

/// A short, stable digest of what a line says and where it belongs.
fn content_digest(
    scope: &Scope,
    role: &mnemos_core::Role,
    speaker: &Option<String>,
    time: &Option<mnemos_core::Timestamp>,
    text: &str,
) -> String {
    let mut hash = Sha256::new();
    for part in [
        scope.agent.as_str(),
        scope.session.as_str(),
        role.as_str(),
        speaker.as_deref().unwrap_or(""),
        &time.map(|t| t.0.to_string()).unwrap_or_default(),
        text,
    ] {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    hex::encode(&hash.finalize()[..12])
}

/// Every conversation of a dataset in its own user scope, items in stream order, each keyed
/// `{dataset}:{conversation}:{label}`.
pub fn dataset_turns(
    dataset: &RetrievalDataset,
    tenant: &str,
    agent: &str,
) -> mnemos_core::Result<Vec<NewTurn>> {
    let mut turns = Vec::new();
    for conversation in &dataset.conversations {
        for item in &conversation.items {
            let mut turn = item.new_turn(conversation.scope(tenant, agent, &item.session)?);
            turn.key = Some(format!(
                "{}:{}:{}",
                dataset.name, conversation.id, item.label
            ));
            turns.push(turn);
        }
    }
    Ok(turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn defaults() -> TurnDefaults {
        TurnDefaults {
            tenant: "t".into(),
            user: "ann".into(),
            agent: "a".into(),
            session: "s".into(),
        }
    }

    fn read(lines: &str) -> TurnSource {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(lines.as_bytes()).unwrap();
        read_turns(file.path(), Some(Format::Jsonl), &defaults(), false).unwrap()
    }

    #[test]
    fn jsonl_keys_are_stable_and_tell_repeats_apart() {
        let text =
            "{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": \"fine\", \"id\": \"m-7\"}\n";
        let first = read(text);
        let again = read(text);
        let keys: Vec<_> = first.turns.iter().map(|t| t.key.clone().unwrap()).collect();
        assert_eq!(
            keys,
            again
                .turns
                .iter()
                .map(|t| t.key.clone().unwrap())
                .collect::<Vec<_>>()
        );
        assert_ne!(keys[0], keys[1], "two identical lines are two turns");
        assert_eq!(keys[2], "m-7");
        // A line added later keeps the earlier lines' keys.
        let longer = read(&format!("{text}{{\"text\": \"ok\"}}\n"));
        assert_eq!(longer.turns[1].key, first.turns[1].key);
        assert_ne!(longer.turns[3].key, first.turns[1].key);
    }

    #[test]
    fn the_same_text_in_another_session_is_another_turn() {
        let source = read("{\"text\": \"hi\"}\n{\"text\": \"hi\", \"session\": \"s2\"}\n");
        assert_ne!(source.turns[0].key, source.turns[1].key);
        assert_eq!(source.turns[1].scope.session, "s2");
        assert_eq!(source.turns[0].scope.user, "ann");
    }

    #[test]
    fn bad_lines_are_listed_once_with_their_line_numbers() {
        let source = read("{\"text\": \"ok\"}\nnot json\n{\"txt\": \"x\"}\n");
        assert_eq!(source.turns.len(), 1);
        let lines: Vec<usize> = source.skipped.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3]);
    }
}
