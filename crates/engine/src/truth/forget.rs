//! Forget requests in dialogue: a user's turn that asks the assistant to forget something
//! ("forget my passport number", "请忘掉我的住址") is an instruction, not a memory.
//!
//! The memories it refers to — resolved within the user's scope by the topic's words, its
//! synonyms and the facts of the slot it names — are erased (text, history, vectors, the raw
//! turns' words), together with what was derived from them. The request turn keeps no secret:
//! values it states are blanked, and its memory is a tombstone, "the user asked to forget:
//! <topic>", which recall reports in place of the content. Nothing else is deleted.

use std::collections::HashSet;
use std::ops::Range;

use mnemos_text::{has_cjk, ForgetRequest};

/// Metadata key of a tombstone memory: the topic the user asked to forget.
pub const TOPIC_KEY: &str = "forget.topic";
/// Metadata key of a tombstone memory: how many memories the request erased.
pub const ERASED_KEY: &str = "forget.erased";

/// Metadata key of a tombstone memory: the words a user may ask about the topic with (its
/// synonyms and equivalents), searched with the tombstone so that "Where do I live?" finds
/// "the user asked to forget: my address".
pub const ABOUT_KEY: &str = "forget.about";

/// The words for [`ABOUT_KEY`], as written (the index analyzes them like any text).
pub fn about_words(request: &ForgetRequest) -> String {
    mnemos_text::words_asked_with(&request.topic).join(" ")
}

/// Text an erased memory and an erased turn keep in place of their words.
pub fn placeholder(chinese: bool) -> &'static str {
    if chinese {
        "[已应用户要求忘记]"
    } else {
        "[forgotten at the user's request]"
    }
}

/// The tombstone's text: that the user asked to forget `topic`, never what it was.
pub fn tombstone_text(topic: &str) -> String {
    if has_cjk(topic) {
        format!("用户要求忘掉：{topic}")
    } else {
        format!("the user asked to forget: {topic}")
    }
}

/// How the reason of every erasure by a forget request starts.
pub const ERASE_REASON: &str = "forget request in dialogue";

/// The reason recorded on each erased memory.
pub fn erase_reason(topic: &str) -> String {
    format!("{ERASE_REASON}: {topic}")
}

/// The request line as stored: the values it states blanked out.
pub fn sanitized(text: &str, stated: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in stated {
        let (Some(before), Some(_)) = (text.get(at..range.start), text.get(range.clone())) else {
            continue;
        };
        out.push_str(before);
        out.push_str("[…]");
        at = range.end;
    }
    out.push_str(text.get(at..).unwrap_or(""));
    out
}

/// Whether a memory with these analyzed terms is about the request's topic.
///
/// Every topic word is there; or a topic word and a synonym; or two synonyms ("my address" →
/// "I live at 12 Elm Street": live, street). One synonym alone ("I went home") is not enough.
/// For "everything about X" one topic word is enough (the name). A Chinese word that names the
/// same thing ("月薪" for "我的工资") is the topic itself; an English topic word is there when a
/// memory's word shares its first [`STEM_PREFIX`] letters ("diagnosis", "diagnosed").
pub fn is_about(request: &ForgetRequest, text: &str) -> bool {
    if request.terms.is_empty() {
        return request.everything;
    }
    // Chinese keys are matched in the text: the analyzer cuts "我住在…" into 住 and 在.
    if request
        .equivalents
        .iter()
        .any(|t| text.contains(t.as_str()))
    {
        return true;
    }
    let terms = &terms_of(text);
    let topic = request
        .terms
        .iter()
        .filter(|t| terms.contains(*t) || shares_stem(t, terms))
        .count();
    let synonyms = request
        .synonyms
        .iter()
        .filter(|t| terms.contains(*t))
        .count()
        .min(2);
    if request.everything {
        return topic > 0 || synonyms >= 2;
    }
    let score = topic as f64 / request.terms.len() as f64 + 0.5 * synonyms as f64;
    score >= 1.0
}

/// A word of a forgotten memory held by at most this many memories of the agent is the
/// memory's own (a name, a diagnosis), and goes where it is repeated.
pub const RARE_IN: usize = 3;

/// Whether a value is specific enough that any memory holding it repeats it: Latin with a
/// digit, an `@` or a capital (a number, an address, a name: not "single"), of at least four
/// characters; Chinese of at least three characters (not "北京").
pub fn is_specific_value(value: &str) -> bool {
    let value = value.trim();
    if has_cjk(value) {
        return value.chars().count() >= 3;
    }
    value.chars().count() >= 4
        && value
            .chars()
            .any(|c| c.is_ascii_digit() || c == '@' || c.is_uppercase())
}

/// Whether a word may mark a memory as its own when rare: Latin of at least four letters,
/// Chinese of at least two characters.
pub fn is_distinctive_word(word: &str) -> bool {
    if has_cjk(word) {
        return word.chars().count() >= 2;
    }
    word.chars().count() >= 4
}

/// Letters two English words must share from their start to count as one word: the analyzer's
/// stems keep "diagnosis" and "diagnosed" apart, and six letters rarely join unrelated words.
pub const STEM_PREFIX: usize = 6;

/// Whether some word of `terms` shares its first [`STEM_PREFIX`] letters with the Latin `term`.
fn shares_stem(term: &str, terms: &HashSet<String>) -> bool {
    let prefix = |w: &str| -> Option<String> {
        let latin = w.chars().all(|c| c.is_ascii_alphabetic());
        (latin && w.len() >= STEM_PREFIX).then(|| w[..STEM_PREFIX].to_string())
    };
    let Some(head) = prefix(term) else {
        return false;
    };
    terms.iter().any(|w| prefix(w).is_some_and(|p| p == head))
}

/// The words a memory's text holds, as the request's terms are written.
pub fn terms_of(text: &str) -> HashSet<String> {
    mnemos_text::Analyzer::shared()
        .search_terms(text)
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(terms: &[&str], synonyms: &[&str], everything: bool) -> ForgetRequest {
        ForgetRequest {
            topic: "t".into(),
            terms: terms.iter().map(|s| s.to_string()).collect(),
            synonyms: synonyms.iter().map(|s| s.to_string()).collect(),
            equivalents: Vec::new(),
            everything,
            stated_values: Vec::new(),
            span: 0..1,
        }
    }

    #[test]
    fn a_memory_is_about_the_topic_by_its_words_or_two_synonyms() {
        let passport = request(&["passport", "number"], &[], false);
        assert!(is_about(&passport, "My passport number is X4417902."));
        assert!(!is_about(&passport, "I renewed my passport last week."));
        let address = request(&["address"], &["live", "street", "home"], false);
        assert!(is_about(&address, "I live at 12 Elm Street."));
        assert!(!is_about(&address, "I went home early."));
        let diagnosis = request(&["diagnosi"], &["doctor"], false);
        assert!(is_about(&diagnosis, "I was diagnosed with celiac disease."));
        let mut salary = request(&["工资"], &[], false);
        salary.equivalents = vec!["月薪".into()];
        assert!(is_about(&salary, "我的月薪是23800元。"));
        assert!(!is_about(&salary, "我今天去上班了。"));
        let alex = request(&["alex"], &[], true);
        assert!(is_about(&alex, "Alex and I went hiking."));
        assert!(!is_about(&alex, "Sam and I went hiking."));
    }

    #[test]
    fn stated_values_are_blanked_and_the_rest_kept() {
        let text = "Forget that my PIN is 4412, please.";
        let at = text.find("4412").unwrap();
        assert_eq!(
            sanitized(text, std::slice::from_ref(&(at..at + 4))),
            "Forget that my PIN is […], please."
        );
        assert_eq!(sanitized("请忘掉我的住址", &[]), "请忘掉我的住址");
    }

    #[test]
    fn tombstones_speak_the_topic_s_language() {
        assert_eq!(
            tombstone_text("my passport number"),
            "the user asked to forget: my passport number"
        );
        assert_eq!(tombstone_text("我的住址"), "用户要求忘掉：我的住址");
    }
}
