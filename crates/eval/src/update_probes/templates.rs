//! The shape of the update probes' templates: per slot and language, the phrasings of a first
//! statement, its updates, a correction, a negation, a repeat, three distractors, the
//! questions, and the values. `{v}` stands for the value, `{old}` for the value a correction
//! replaces. Each template belongs to one half of the set ([`Half`]): the halves never share a
//! phrasing or a value, so results on the test half measure wording the tuning never saw.

use mnemos_core::Timestamp;
use serde::{Deserialize, Serialize};

/// Which half of the templates a probe comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Half {
    /// Phrasings the engine's rules may be tuned against.
    Tuning,
    /// Phrasings reported on, written apart from the tuning half.
    Test,
}

impl Half {
    pub fn as_str(self) -> &'static str {
        match self {
            Half::Tuning => "tuning",
            Half::Test => "test",
        }
    }
}

/// One slot's texts in one language and half.
pub(crate) struct Template {
    pub slot: UpdateSlot,
    pub language: ProbeLanguage,
    pub half: Half,
    /// First statements of the value (the probe takes one by its index).
    pub statements: &'static [&'static str],
    /// Statements of a new value, one per update of a chain.
    pub updates: &'static [&'static str],
    /// A correction right after the statement: `{v}` the right value, `{old}` the wrong one.
    pub correction: &'static str,
    /// The value stops holding (`{v}` the old value); `None` where a slot has no natural one.
    pub negation: Option<&'static str>,
    /// The same value said again in other words.
    pub repeat: &'static str,
    /// Someone else's value for the same slot.
    pub other_person: &'static str,
    /// A value that does not hold ("if I ever moved to …").
    pub hypothetical: &'static str,
    /// Someone else's words quoted (`None` where the slot has no natural one).
    pub quoted: Option<&'static str>,
    /// Asks for the current value.
    pub question: &'static str,
    /// Asks for a past value; `{when}` is the moment's month and year, and the probe passes
    /// the moment itself as `as_of`.
    pub past_question: &'static str,
    /// Asks whether the value still holds (after a negation; `{v}` the old value).
    pub still_question: &'static str,
    /// Values, all different; a chain takes consecutive ones.
    pub values: &'static [&'static str],
}

/// The language of a probe (and of its host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeLanguage {
    En,
    Zh,
}

impl ProbeLanguage {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeLanguage::En => "en",
            ProbeLanguage::Zh => "zh",
        }
    }

    /// The other speaker's reply to an inserted message.
    pub(super) fn acknowledgment(self) -> &'static str {
        match self {
            ProbeLanguage::En => "Got it, thanks for telling me.",
            ProbeLanguage::Zh => "好的，我记住了。",
        }
    }

    /// A moment as a question names it: "May 8, 2023" / "2023年5月8日".
    pub(super) fn day(self, time: Timestamp) -> String {
        let Some(t) = chrono::DateTime::from_timestamp_millis(time.millis()) else {
            return String::new();
        };
        match self {
            ProbeLanguage::En => t.format("%B %-d, %Y").to_string(),
            ProbeLanguage::Zh => t.format("%Y年%-m月%-d日").to_string(),
        }
    }
}

/// What a probe's fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateSlot {
    Residence,
    Employer,
    Job,
    Relationship,
    Partner,
    Child,
    Pet,
    Preference,
    Diet,
    Plan,
    Number,
    Date,
    Status,
    Ceo,
    Headquarters,
}

impl UpdateSlot {
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateSlot::Residence => "residence",
            UpdateSlot::Employer => "employer",
            UpdateSlot::Job => "job",
            UpdateSlot::Relationship => "relationship",
            UpdateSlot::Partner => "partner",
            UpdateSlot::Child => "child",
            UpdateSlot::Pet => "pet",
            UpdateSlot::Preference => "preference",
            UpdateSlot::Diet => "diet",
            UpdateSlot::Plan => "plan",
            UpdateSlot::Number => "number",
            UpdateSlot::Date => "date",
            UpdateSlot::Status => "status",
            UpdateSlot::Ceo => "ceo",
            UpdateSlot::Headquarters => "headquarters",
        }
    }
}
