//! What is true now: the write path's supersession, forget requests and credential redaction.
//!
//! - [`facts`]: the facts a user's turns state, as `Fact` memories keyed by subject, slot and
//!   qualifier, and the user's [`facts::FactTable`].
//! - [`supersede`]: a new statement reinforces, supersedes, ends or corrects the facts of its
//!   key; a raw turn whose facts are all replaced stops being current too.
//! - [`forget`]: a user's request to forget something erases what it refers to and leaves a
//!   tombstone.
//!
//! All of it is rules over the text (`mnemos_text::statements`, `mnemos_text::privacy`): no
//! model call, no network, in the same transaction as the turn, so a read right after a write
//! already sees what is current. Which agents get supersession and forget requests is their
//! preset's choice ([`WritePolicy`]); credential redaction is the engine's ([`PrivacySettings`]).

pub mod facts;
pub mod forget;
pub mod supersede;

use serde::{Deserialize, Serialize};

pub use supersede::{ChangeKind, FactChange};

/// What the write path does with an agent's turns beyond storing them (the agent's preset
/// decides; research presets keep their papers' behaviour and ask for nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WritePolicy {
    /// Extract facts from statements, and let a new value supersede the old one.
    pub supersede: bool,
    /// Honour a user's request to forget something.
    pub forget_requests: bool,
}

/// Engine-wide privacy settings (`[privacy]` in mnemos.toml).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacySettings {
    /// Replace credentials stated in dialogue (passwords, API keys, card numbers, national id
    /// numbers) by a placeholder before a turn is stored; the memory notes what was redacted
    /// (metadata `redacted`). On by default.
    pub redact_credentials: bool,
}

impl Default for PrivacySettings {
    fn default() -> Self {
        Self {
            redact_credentials: true,
        }
    }
}

/// Metadata key on a turn and its memory: the kinds of credentials redacted from it
/// (comma-separated: `password`, `api_key`, `card_number`, `national_id`).
pub const REDACTED_KEY: &str = "redacted";

/// A moment for `as_of`, as people and clients write it: a date (`2024-03-02`, meaning the end
/// of that day, UTC, so what held on that day answers) or an RFC 3339 time
/// (`2024-03-02T10:00:00Z`). Anything else is an invalid-input error naming `as_of`.
pub fn parse_as_of(text: &str) -> mnemos_core::Result<mnemos_core::Timestamp> {
    let text = text.trim();
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(mnemos_core::Timestamp(time.timestamp_millis()));
    }
    let end_of_day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|day| day.and_hms_milli_opt(23, 59, 59, 999))
        .map(|t| t.and_utc().timestamp_millis());
    end_of_day.map(mnemos_core::Timestamp).ok_or_else(|| {
        mnemos_core::Error::invalid(format!(
            "as_of: '{text}' is not a date (YYYY-MM-DD) or an RFC 3339 time"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_of_takes_a_date_or_a_time_and_names_itself_otherwise() {
        let day = parse_as_of("2024-03-02").unwrap();
        let noon = parse_as_of("2024-03-02T12:00:00Z").unwrap();
        assert!(noon < day, "a date means the end of that day");
        assert_eq!(day.0 - noon.0, 12 * 3_600_000 - 1);
        for bad in ["yesterday", "2024-13-01", "", "2024-03-02 12:00"] {
            let error = parse_as_of(bad).unwrap_err().to_string();
            assert!(error.contains("as_of"), "{bad}: {error}");
        }
    }
}
