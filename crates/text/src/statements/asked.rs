//! Questions.
use super::{Slot, Subject};
#[derive(Clone, Debug, PartialEq)]
pub struct Asked { pub subject: Subject, pub slot: Slot, pub qualifier: String }
pub fn asked(_text: &str) -> Vec<Asked> { Vec::new() }
