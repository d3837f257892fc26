//! The tokenized sentence every English rule reads, in a leaf module: the rule modules
//! (`left`, `rules`, `special`, `values`) all take it, and the parent runs them, so keeping it
//! apart lets both sides name it without importing each other.

use super::super::scan::{self, Tok};

/// One sentence, tokenized once for every rule.
pub(super) struct Context<'a> {
    pub text: &'a str,
    pub toks: Vec<Tok>,
    /// The sentence has no capital letter (typed casually): place names may be lower-case.
    pub all_lower: bool,
}

impl<'a> Context<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let toks = scan::tokens(text);
        let all_lower = !text.chars().any(char::is_uppercase);
        Context {
            text,
            toks,
            all_lower,
        }
    }

    /// Whether the sentence has a first-person word ("I", "my", "we", "our", "us").
    pub(super) fn first_person(&self) -> bool {
        self.toks.iter().any(|t| {
            matches!(
                t.lower.as_str(),
                "i" | "i'm" | "i've" | "my" | "we" | "we're" | "we've" | "our" | "us" | "me"
            )
        })
    }
}
