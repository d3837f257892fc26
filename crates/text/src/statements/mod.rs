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
mod line;
mod normalize;
mod scan;
mod types;

#[cfg(test)]
mod tests;

pub use asked::{asked, Asked};
pub use line::analyze;
pub use types::{Analysis, Correction, Slot, Statement, Subject};
