//! Chinese rules: patterns over characters (jieba's segmentation glues words such as 猫叫 or
//! 我刚 that the rules must see apart), a subject walk that strips adverbs, time words and
//! negations from the end of the clause before a verb, and jieba's parts of speech only to tell
//! a place from an organization or a name from a word.

mod clause;
mod rules;
mod special;
mod values;

use super::types::Found;

pub(super) use clause::{is_clause_mark, owner_before, tags};

/// The statements of one Chinese sentence (quoted speech already masked).
pub(super) fn statements(sentence: &str) -> Vec<Found> {
    if is_question(sentence) {
        return Vec::new();
    }
    let mut out = Vec::new();
    rules::apply(sentence, &mut out);
    special::apply(sentence, &mut out);
    out
}

/// A thing's name as statements normalize it ("我的牙医预约" → "牙医预约").
pub(super) fn thing_name(np: &str) -> Option<String> {
    special::thing_name(np)
}

/// The plan qualifier a statement in this sentence would get.
pub(super) fn plan_qualifier_of(sentence: &str) -> String {
    special::plan_qualifier(sentence, sentence.contains('搬'))
}

/// The quantity qualifier a statement answering this question would get.
pub(super) fn quantity_qualifier_of(sentence: &str) -> String {
    special::quantity_qualifier(sentence)
}

/// Markers of a question anywhere in the sentence.
#[rustfmt::skip]
const QUESTION_MARKERS: &[&str] = &[
    "是不是", "有没有", "是否", "要不要", "会不会", "能不能", "对不对", "好不好", "难道", "吗，", "吗,", "哪", "什么", "谁", "几岁",
    "多少", "怎么", "为什么", "啥", "多大", "咋", "几点", "几号", "星期几", "周几", "几月",
];

/// A sentence that asks: it ends with a question mark or 吗/么, or holds a question word.
pub(super) fn is_question(sentence: &str) -> bool {
    let trimmed = sentence.trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, '"' | '”' | '」' | '）' | ')' | '~' | '～')
    });
    if trimmed.ends_with(['？', '?']) {
        return true;
    }
    let bare = trimmed.trim_end_matches(|c: char| !c.is_alphanumeric());
    bare.ends_with(['吗', '么', '嘛']) || QUESTION_MARKERS.iter().any(|m| sentence.contains(m))
}

#[cfg(test)]
pub(super) fn debug_patterns() -> Vec<&'static str> {
    rules::patterns()
}
