//! What the statement rules produce, in a leaf module: every rule module (English, Chinese,
//! corrections, questions) builds these types and the parent hands them out, so keeping them
//! apart from the rules lets both name them without importing each other.

use std::ops::Range;

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
