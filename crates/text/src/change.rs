//! Words that announce a change of a personal fact ("I moved", "I'm a teacher now", "不再",
//! "换工作"), EN + ZH.
//!
//! A cheap gate, not a judgement: it says which statements are worth checking against older
//! ones for a contradiction, so that the expensive check runs on a few turns instead of every
//! pair. It over-accepts on purpose ("now" is common); whatever it lets through is still judged
//! by a conflict check.

use crate::{Analyzer, TokenKind};

/// English cue terms as [`Analyzer::tokens`] emits them (Snowball stems; stopwords unstemmed).
const ENGLISH_CUES: &[&str] = &[
    "now", "anymor", "move", "chang", "switch", "instead", "becam", "becom", "replac",
];

/// Chinese words that are cues on their own.
const CHINESE_CUES: &[&str] = &["现在", "如今", "不再", "再也不", "已经不", "改成", "变成"];

/// Chinese verbs of change: a segmented word that starts with one ("换工作", "搬家", "改了").
const CHINESE_CHANGE_VERBS: &[char] = &['换', '搬', '改', '变'];

/// Whether `text` has a word that announces a change (see the module documentation).
pub fn announces_change(analyzer: &Analyzer, text: &str) -> bool {
    let mut previous_no = false;
    for token in analyzer.tokens(text) {
        let term = token.term.as_str();
        let cue = match token.kind {
            TokenKind::Word => is_change_term(term) || (previous_no && term == "longer"),
            TokenKind::Cjk => is_change_term(term),
            TokenKind::Number | TokenKind::Date => false,
        };
        if cue {
            return true;
        }
        previous_no = token.kind == TokenKind::Word && term == "no";
    }
    false
}

/// Whether one analyzer term ([`Analyzer::tokens`]' form: a Snowball stem, a jieba word) is a
/// word of change on its own.
pub fn is_change_term(term: &str) -> bool {
    ENGLISH_CUES.contains(&term)
        || CHINESE_CUES.contains(&term)
        || term
            .chars()
            .next()
            .is_some_and(|c| CHINESE_CHANGE_VERBS.contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_cues_in_english_and_chinese() {
        let a = Analyzer::shared();
        for text in [
            "I just moved, and home is Porto now.",
            "I changed careers last month.",
            "She switched to decaf.",
            "I don't smoke anymore.",
            "I no longer eat meat.",
            "我刚搬完家。",
            "我上个月换工作了。",
            "我不再喝咖啡了。",
            "我们给猫改了名字。",
        ] {
            assert!(announces_change(a, text), "{text}");
        }
        for text in [
            "I live in Tallinn, in a small flat near the river.",
            "My cat is called Mochi.",
            "There is no longest river here.",
            "我住在杭州。",
            "我家的猫叫咪咪。",
            "",
        ] {
            assert!(!announces_change(a, text), "{text}");
        }
    }
}
