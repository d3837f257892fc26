//! Facts that dialogue lines state, as typed (subject, slot, qualifier, value) statements, in
//! English and Chinese.
//!
//! The engine uses them to tell when a new statement replaces an older one ("I live in Tallinn"
//! … later "I just moved, home is Porto now"). Replacing a true fact by mistake is worse than
//! missing an update, so every rule is built to stay silent when in doubt:
//! - a statement needs an explicit holder found by walking left from its verb over adverbs,
//!   auxiliaries and negations only ("I've just moved to", "我现在住在"); anything else in the
//!   way ("I might move to", "I'm thinking about moving to", "我想搬到") leaves it unsaid;
//! - questions, conditionals and wishes ("If I moved…", "如果我搬到…"), reported speech ("He
//!   told me…", "他说…"), quoted speech and past-only context ("back in college…", "我以前…")
//!   yield nothing;
//! - values must look like what the slot holds (a capitalized place, an occupation noun, a name).
//!
//! Some holders are implied rather than written, because that is how people talk about their own
//! lives: an answer without a subject ("Still vegetarian, yes."), a baby, pet or trip nobody else
//! is said to own ("The cat has a new name: Octavia", "宝宝叫景行"). Updates of one fact must key
//! alike however they are worded, so qualifiers and thing names are canonical ("my weekly running
//! distance" keys like "I run … a week"; "看牙", "牙医的预约" and "牙医预约" are one event), and
//! yes/no questions are read as the statements they confirm ("Am I still a pharmacist?").
//!
//! Lines are analyzed sentence by sentence, so spans point at the sentence that states a fact.

mod asked;
mod chinese;
mod correction;
mod declarative;
mod english;
mod lexicon;
mod normalize;
mod scan;

#[cfg(test)]
mod tests;

use std::ops::Range;

pub use asked::{asked, Asked};

/// What a statement is about (its attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// Where the subject lives: "I live in X", "moved to X", "home is X now", "我住在X".
    Residence,
    /// Where the subject works: "I work at X", "I joined X", "我在X上班", "跳槽到X".
    Employer,
    /// Occupation or title: "I'm a nurse", "work as a X", "我是一名X", "现在做X".
    Job,
    /// Single / dating / engaged / married / divorced / widowed: "I got married", "我单身".
    RelationshipStatus,
    /// The partner's name: "my girlfriend Anna", "我对象叫X".
    Partner,
    /// A child's name; qualifier son/daughter/child (儿子/女儿/孩子).
    Child,
    /// A pet's name; qualifier the species ("cat", "猫").
    Pet,
    /// A favourite thing; qualifier what kind ("drink", "饮料").
    Preference,
    /// Something liked (multi-valued; mostly useful negated).
    Likes,
    /// Vegetarian, vegan, eats meat…: "I'm vegan now", "我吃素".
    Diet,
    /// A planned destination; qualifier what and when ("trip spring", "明年 春天").
    Plan,
    /// A number of something; qualifier what is counted or measured ("kilometr run week").
    Quantity,
    /// Age in years: "I'm 28", "我今年28岁".
    Age,
    /// When an event happens; the subject is the event.
    Date,
    /// The state of a project or task; the subject is the project.
    Status,
    /// A role held at an organization; subject the organization, qualifier the role, value the
    /// person.
    Role,
    /// Where an organization is based; subject the organization.
    Headquarters,
}

/// Who a statement is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    /// The speaker of the line: "I", "my", "we", "our", "我", "我们", "我家".
    Speaker,
    /// Someone the speaker names by relation ("sister", "妈妈"), lower-case.
    Related(String),
    /// A person or organization named in the text, as written.
    Named(String),
    /// A thing identified by a noun phrase, normalized ("project apollo", "会议").
    Thing(String),
}

/// One fact a line states.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub subject: Subject,
    pub slot: Slot,
    /// Narrows the slot: normalized, stemmed, sorted tokens joined by one space ("" when none).
    pub qualifier: String,
    /// The value in the line's own words ("Porto", "dental hygienist", "厦门").
    pub value: String,
    /// The value normalized for equality (lower-case, numbers as digits, weekdays canonical).
    pub value_key: String,
    /// The line says the value no longer holds.
    pub negated: bool,
    /// Byte range in the input of the sentence that states it.
    pub span: Range<usize>,
}

/// A correction of something said just before: "make it Thursday instead", "不是周三，是周四".
#[derive(Clone, Debug, PartialEq)]
pub struct Correction {
    /// The value being corrected, when the line names it.
    pub wrong: Option<String>,
    /// The value it should be, in the line's words.
    pub right: String,
    /// `right` normalized like [`Statement::value_key`].
    pub right_key: String,
    pub wrong_key: Option<String>,
    pub span: Range<usize>,
}

/// The statements and correction of one line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Analysis {
    /// Facts the line asserts (or negates), in text order.
    pub statements: Vec<Statement>,
    /// A correction of an earlier value, if the line makes one.
    pub correction: Option<Correction>,
}

/// A statement found in one sentence, before it is placed in the line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Found {
    pub subject: Subject,
    pub slot: Slot,
    pub qualifier: String,
    pub value: String,
    pub negated: bool,
    /// Where in the sentence the rule matched, for text order.
    pub at: usize,
}

impl Found {
    fn into_statement(self, span: Range<usize>) -> Statement {
        let value_key = normalize::value_key(self.slot, &self.value);
        Statement {
            subject: self.subject,
            slot: self.slot,
            qualifier: self.qualifier,
            value: self.value,
            value_key,
            negated: self.negated,
            span,
        }
    }
}

/// Lines longer than this are cut (at a char boundary) before analysis: no chat turn states
/// facts past it, and it bounds the time one call can take.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// The statements and correction of one dialogue line.
pub fn analyze(text: &str) -> Analysis {
    let text = scan::cut_at_char(text, MAX_LINE_BYTES);
    let mut analysis = Analysis::default();
    let mut after_marker = false;
    for (offset, sentence) in scan::sentence_spans(text) {
        let masked = scan::mask_quoted_speech(sentence);
        let chinese = scan::is_chinese(&masked);
        let mut found = if chinese {
            chinese::statements(&masked)
        } else {
            english::statements(&masked)
        };
        found.sort_by_key(|f| f.at);
        dedupe(&mut found);
        let span = offset..offset + sentence.len();
        if analysis.correction.is_none() {
            let correction = if after_marker {
                correction::after_marker(&masked)
            } else if chinese {
                correction::chinese(&masked, &found)
            } else {
                correction::english(&masked, &found)
            };
            analysis.correction = correction.map(|c| c.placed(span.clone()));
        }
        after_marker = correction::is_bare_marker(&masked);
        analysis
            .statements
            .extend(found.into_iter().map(|f| f.into_statement(span.clone())));
    }
    analysis
}

/// Drop repeats (two rules finding the same fact) and valueless negations that a valued one of
/// the same subject and slot makes redundant ("I quit my job at Acme").
fn dedupe(found: &mut Vec<Found>) {
    let mut kept: Vec<Found> = Vec::with_capacity(found.len());
    for f in found.drain(..) {
        let same = |k: &Found| {
            k.subject == f.subject
                && k.slot == f.slot
                && k.qualifier == f.qualifier
                && normalize::value_key(k.slot, &k.value) == normalize::value_key(f.slot, &f.value)
        };
        if let Some(k) = kept.iter_mut().find(|k| same(k)) {
            // Two rules read the same value; one of them saw it end ("… passed away").
            k.negated |= f.negated;
            continue;
        }
        kept.push(f);
    }
    let redundant = |i: usize, f: &Found| {
        f.value.is_empty()
            && f.negated
            && kept.iter().enumerate().any(|(j, k)| {
                j != i && k.subject == f.subject && k.slot == f.slot && !k.value.is_empty()
            })
    };
    let keep: Vec<bool> = kept
        .iter()
        .enumerate()
        .map(|(i, f)| !redundant(i, f))
        .collect();
    let mut flags = keep.into_iter();
    kept.retain(|_| flags.next().unwrap_or(true));
    *found = kept;
}
