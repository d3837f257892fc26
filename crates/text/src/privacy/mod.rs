//! Two privacy rules applied to every dialogue turn before it is stored.
//!
//! - [`credentials`] / [`redact_credentials`]: secrets stated in dialogue (passwords and PINs,
//!   API keys and tokens, payment card numbers, national id numbers) are found and replaced by a
//!   placeholder, so a memory built from the turn never holds them.
//! - [`forget_request`]: a user line that asks the assistant to forget something ("forget my
//!   passport number", "请忘掉我的住址") is recognized and its topic extracted, so the engine can
//!   find and erase the memories it names; ordinary uses of "forget" ("I forgot my keys",
//!   "别忘了明天开会") are not requests.
//!
//! Both are rules, not models: cheap enough for every turn, predictable, and tested against
//! tables of positive and negative lines in English and Chinese.

mod checksum;
mod credentials;
mod forget;
mod forget_zh;
mod topic;
mod types;

use crate::script::detect_language;

pub use credentials::credentials;
pub use forget::forget_request;
pub use topic::words_asked_with;
pub use types::{Credential, CredentialKind, ForgetRequest, Redacted};

/// The values `text` states that a forget request must take wherever they are repeated: email
/// addresses and tokens holding at least three digits (a phone, passport or account number,
/// "E1234567"), as written.
pub fn stated_values(text: &str) -> Vec<String> {
    topic::value_tokens(text, 0..text.len())
        .into_iter()
        .filter_map(|r| text.get(r).map(str::to_string))
        .collect()
}

/// `text` with each credential replaced by a placeholder in the text's language
/// ("[redacted password]", "[redacted card number]" / "[已隐去密码]", "[已隐去卡号]"…), and the
/// kinds replaced.
pub fn redact_credentials(text: &str) -> Redacted {
    let found = credentials(text);
    if found.is_empty() {
        return Redacted {
            text: text.to_string(),
            kinds: Vec::new(),
        };
    }
    let language = detect_language(text);
    let mut out = String::with_capacity(text.len());
    let mut kinds = Vec::new();
    let mut last = 0;
    for c in found {
        out.push_str(text.get(last..c.span.start).unwrap_or(""));
        out.push_str(c.kind.placeholder(language));
        if !kinds.contains(&c.kind) {
            kinds.push(c.kind);
        }
        last = c.span.end;
    }
    out.push_str(text.get(last..).unwrap_or(""));
    Redacted { text: out, kinds }
}

#[cfg(test)]
mod tests;
