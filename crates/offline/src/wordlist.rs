//! Named word lists kept in text files and compiled into the binary (`include_str!`).
//!
//! One file holds several lists:
//!
//! ```text
//! # A comment line.
//! [jobs]
//! # What the list is for.
//! nurse
//! people person
//! ```
//!
//! - `[name]` on a line of its own starts the list `name` (lower-case ASCII letters, digits
//!   and `_`); a name appears once per file;
//! - every other non-blank line is one entry, trimmed; an entry may hold spaces;
//! - lines starting with `#` are comments, blank lines are ignored;
//! - a list keeps its entries in file order, each entry once.
//!
//! A reader takes the lists it knows by name ([`WordLists::words`], [`WordLists::chars`],
//! [`WordLists::pairs`]) and then calls [`WordLists::finish`]. A malformed line, a missing or
//! empty list, a list nobody reads and a repeated entry are all [`WordListError`]s: nothing is
//! skipped silently, so a typo in a data file cannot quietly shrink a list.

/// Why a word-list file does not give the lists its reader expects. `file` is the file's name,
/// `line` is 1-based.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WordListError {
    #[error("{file}:{line}: entry {entry:?} comes before any [list] header")]
    EntryOutsideList {
        file: &'static str,
        line: usize,
        entry: String,
    },
    #[error("{file}:{line}: malformed list header {header:?}")]
    BadHeader {
        file: &'static str,
        line: usize,
        header: String,
    },
    #[error("{file}:{line}: list [{list}] is declared twice")]
    RepeatedList {
        file: &'static str,
        line: usize,
        list: String,
    },
    #[error("{file}:{line}: list [{list}] holds {entry:?} twice")]
    RepeatedEntry {
        file: &'static str,
        line: usize,
        list: String,
        entry: String,
    },
    #[error("{file}: list [{list}] is missing or empty")]
    MissingList {
        file: &'static str,
        list: &'static str,
    },
    #[error("{file}: list [{list}] is not read by anything (misspelled?)")]
    UnreadList { file: &'static str, list: String },
    #[error("{file}:{line}: entry {entry:?} of [{list}] is not {expected}")]
    BadEntry {
        file: &'static str,
        line: usize,
        list: &'static str,
        entry: String,
        expected: &'static str,
    },
}

/// One entry and the line it is on.
#[derive(Clone, Copy, Debug)]
struct Entry {
    line: usize,
    text: &'static str,
}

/// The lists of one file, not yet taken by their reader.
#[derive(Debug)]
pub struct WordLists {
    file: &'static str,
    lists: Vec<(&'static str, Vec<Entry>)>,
}

impl WordLists {
    /// Parse `text`, the contents of the file called `file` (named in errors).
    pub fn parse(file: &'static str, text: &'static str) -> Result<Self, WordListError> {
        let mut lists: Vec<(&'static str, Vec<Entry>)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if trimmed.starts_with('[') {
                let name = list_name(trimmed).ok_or_else(|| WordListError::BadHeader {
                    file,
                    line,
                    header: trimmed.to_string(),
                })?;
                if lists.iter().any(|(known, _)| *known == name) {
                    return Err(WordListError::RepeatedList {
                        file,
                        line,
                        list: name.to_string(),
                    });
                }
                lists.push((name, Vec::new()));
                continue;
            }
            let Some((name, entries)) = lists.last_mut() else {
                return Err(WordListError::EntryOutsideList {
                    file,
                    line,
                    entry: trimmed.to_string(),
                });
            };
            if entries.iter().any(|e| e.text == trimmed) {
                return Err(WordListError::RepeatedEntry {
                    file,
                    line,
                    list: name.to_string(),
                    entry: trimmed.to_string(),
                });
            }
            entries.push(Entry {
                line,
                text: trimmed,
            });
        }
        Ok(WordLists { file, lists })
    }

    /// Take the list `name` as words (or phrases), in file order.
    pub fn words(&mut self, name: &'static str) -> Result<Vec<&'static str>, WordListError> {
        Ok(self.take(name)?.into_iter().map(|e| e.text).collect())
    }

    /// Take the list `name`, whose entries are single characters.
    pub fn chars(&mut self, name: &'static str) -> Result<Vec<char>, WordListError> {
        let file = self.file;
        self.take(name)?
            .into_iter()
            .map(|entry| {
                let mut chars = entry.text.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(c),
                    _ => Err(bad_entry(file, name, entry, "one character")),
                }
            })
            .collect()
    }

    /// Take the list `name`, whose entries are two words ("a lot").
    pub fn pairs(
        &mut self,
        name: &'static str,
    ) -> Result<Vec<(&'static str, &'static str)>, WordListError> {
        let file = self.file;
        self.take(name)?
            .into_iter()
            .map(|entry| {
                let mut words = entry.text.split_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some(first), Some(second), None) => Ok((first, second)),
                    _ => Err(bad_entry(file, name, entry, "two words")),
                }
            })
            .collect()
    }

    /// Every list must have been taken: one left over is most likely a misspelled name.
    pub fn finish(self) -> Result<(), WordListError> {
        match self.lists.into_iter().next() {
            Some((name, _)) => Err(WordListError::UnreadList {
                file: self.file,
                list: name.to_string(),
            }),
            None => Ok(()),
        }
    }

    fn take(&mut self, name: &'static str) -> Result<Vec<Entry>, WordListError> {
        let missing = WordListError::MissingList {
            file: self.file,
            list: name,
        };
        let index = self
            .lists
            .iter()
            .position(|(known, _)| *known == name)
            .ok_or_else(|| missing.clone())?;
        let (_, entries) = self.lists.remove(index);
        if entries.is_empty() {
            return Err(missing);
        }
        Ok(entries)
    }
}

/// `name` of a `[name]` header line, if well formed.
fn list_name(header: &str) -> Option<&str> {
    let name = header.strip_prefix('[')?.strip_suffix(']')?;
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    valid.then_some(name)
}

fn bad_entry(
    file: &'static str,
    list: &'static str,
    entry: Entry,
    expected: &'static str,
) -> WordListError {
    WordListError::BadEntry {
        file,
        line: entry.line,
        list,
        entry: entry.text.to_string(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# header comment\n\n[jobs]\n# what it is\nnurse\n  people person  \n\
                          [marks]\n了\n~\n[pairs]\na lot\nso much\n";

    #[test]
    fn lists_keep_their_entries_in_order() {
        let mut lists = WordLists::parse("sample", SAMPLE).unwrap();
        assert_eq!(lists.words("jobs").unwrap(), ["nurse", "people person"]);
        assert_eq!(lists.chars("marks").unwrap(), ['了', '~']);
        assert_eq!(
            lists.pairs("pairs").unwrap(),
            [("a", "lot"), ("so", "much")]
        );
        lists.finish().unwrap();
    }

    #[test]
    fn every_defect_is_an_error_that_names_its_line() {
        let parse = |text: &'static str| WordLists::parse("f", text).unwrap_err();
        assert!(matches!(
            parse("nurse\n"),
            WordListError::EntryOutsideList { line: 1, .. }
        ));
        assert!(matches!(
            parse("[Jobs]\n"),
            WordListError::BadHeader { line: 1, .. }
        ));
        assert!(matches!(parse("[jobs\n"), WordListError::BadHeader { .. }));
        assert!(matches!(
            parse("[a]\nx\n[a]\n"),
            WordListError::RepeatedList { line: 3, .. }
        ));
        assert!(matches!(
            parse("[a]\nx\ny\nx\n"),
            WordListError::RepeatedEntry { line: 4, .. }
        ));
        let mut lists = WordLists::parse("f", "[a]\nxy\n[b]\none\n[c]\n[d]\nz\n").unwrap();
        assert!(matches!(
            lists.chars("a"),
            Err(WordListError::BadEntry { line: 2, .. })
        ));
        assert!(matches!(
            lists.pairs("b"),
            Err(WordListError::BadEntry { line: 4, .. })
        ));
        assert!(matches!(
            lists.words("c"),
            Err(WordListError::MissingList { .. })
        ));
        assert!(matches!(
            lists.words("nope"),
            Err(WordListError::MissingList { .. })
        ));
        assert!(matches!(
            lists.finish(),
            Err(WordListError::UnreadList { list, .. }) if list == "d"
        ));
    }
}
