//! Yes/no questions read as the statements they ask to confirm: "Am I still a pharmacist?" asks
//! about what "I am still a pharmacist" would state, "我还住在洛阳吗？" about "我还住在洛阳", so a
//! question and the statement answering it get the same subject, slot and qualifier.

use super::line::analyze;
use super::scan;
use super::types::Statement;

/// Adverbs before which the verb of an "Is X still …?" question goes back ("Is Project Heron
/// still in QA?" → "Project Heron is still in QA").
const VERB_GOES_BEFORE: &[&str] = &[
    "still",
    "now",
    "currently",
    "already",
    "really",
    "actually",
    "always",
    "also",
    "officially",
    "no",
    "not",
];

/// Copulas that open a yes/no question and move after its subject.
const COPULAS: &[&str] = &["is", "are", "was", "were", "am"];

/// Auxiliaries that open a yes/no question and drop out of the statement ("Do I still live in
/// Tallinn?" → "I still live in Tallinn").
const DO: &[&str] = &["do", "does", "did"];

/// The statements a yes/no question asks to confirm; empty when it is not one or states
/// nothing.
pub(super) fn asked_statements(question: &str) -> Vec<Statement> {
    let chinese = scan::is_chinese(question);
    let candidates = if chinese {
        chinese_statement(question).into_iter().collect()
    } else {
        english_statements(question)
    };
    for candidate in candidates {
        let said = analyze(&candidate).statements;
        if !said.is_empty() {
            return said;
        }
    }
    Vec::new()
}

/// The question without its final "?" and spaces.
fn stripped(question: &str) -> &str {
    question.trim().trim_end_matches(['?', '？', ' ', '!'])
}

/// Statements an English yes/no question may stand for, most likely first.
fn english_statements(question: &str) -> Vec<String> {
    let text = stripped(question);
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((first, rest)) = words.split_first() else {
        return Vec::new();
    };
    let opener = first.to_lowercase();
    if rest.is_empty() {
        return Vec::new();
    }
    if DO.contains(&opener.as_str()) {
        return vec![format!("{}.", rest.join(" "))];
    }
    if !COPULAS.contains(&opener.as_str()) {
        return Vec::new();
    }
    // The verb goes back before the first adverb, else after one to five words of subject.
    let adverb = rest
        .iter()
        .position(|w| VERB_GOES_BEFORE.contains(&w.to_lowercase().as_str()))
        .filter(|&i| i > 0);
    let splits: Vec<usize> = match adverb {
        Some(i) => vec![i],
        None => (1..rest.len().min(6)).collect(),
    };
    splits
        .into_iter()
        .filter_map(|i| {
            let (subject, predicate) = rest.split_at_checked(i)?;
            Some(format!(
                "{} {opener} {}.",
                subject.join(" "),
                predicate.join(" ")
            ))
        })
        .collect()
}

/// The statement a Chinese yes/no question (ending in 吗) stands for.
fn chinese_statement(question: &str) -> Option<String> {
    let text = stripped(question);
    let bare = text
        .strip_suffix('吗')
        .or_else(|| text.strip_suffix('么'))?;
    let alternative = ["是不是", "有没有", "要不要", "会不会", "能不能"]
        .iter()
        .any(|a| bare.contains(a));
    (!alternative && !bare.is_empty()).then(|| format!("{bare}。"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_become_statements() {
        assert_eq!(
            english_statements("Do I still live in Tallinn?"),
            vec!["I still live in Tallinn.".to_string()]
        );
        assert_eq!(
            english_statements("Is Project Heron still in QA?"),
            vec!["Project Heron is still in QA.".to_string()]
        );
        assert_eq!(
            chinese_statement("我还住在洛阳吗？").as_deref(),
            Some("我还住在洛阳。")
        );
        assert!(english_statements("Where do I live?").is_empty());
        assert!(chinese_statement("你是不是住在上海吗").is_none());
    }
}
