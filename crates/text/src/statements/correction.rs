//! Corrections of what was said just before: "actually, change that to Seoul", "make it
//! Thursday instead", "sorry, I meant Lisbon", "不是周三，是周四", "改成周四", "我说错了，是周四".

use std::sync::OnceLock;

use regex::Regex;

use super::types::{Correction, Found};
use super::{normalize, scan};

/// A correction before it is placed in the line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Corrected {
    pub wrong: Option<String>,
    pub right: String,
}

impl Corrected {
    pub(super) fn placed(self, span: std::ops::Range<usize>) -> Correction {
        let right_key = normalize::correction_key(&self.right);
        let wrong_key = self.wrong.as_deref().map(normalize::correction_key);
        Correction {
            wrong: self.wrong,
            right: self.right,
            right_key,
            wrong_key,
            span,
        }
    }
}

fn compiled(
    cell: &'static OnceLock<Vec<Option<Regex>>>,
    sources: &[&str],
) -> &'static [Option<Regex>] {
    cell.get_or_init(|| scan::compile_all(sources))
}

/// Words that end an English corrected value ("Thursday instead, please").
const EN_VALUE_ENDS: &[&str] = &[
    "instead", "please", "then", "thanks", "thank", "not", "actually", "rather", "sorry", "ok",
    "okay", "if", "because", "since", "and", "but", "so", "is", "was", "for", "my", "bad",
];

/// Up to five words of `text` from its start, cut at punctuation or an ending word, without
/// leading articles.
fn english_value(text: &str) -> Option<String> {
    let mut words: Vec<&str> = Vec::new();
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '(' | ')'));
        let bare = word.trim_end_matches([',', '.', '!', '?', ';', ':']);
        let no_word = !bare.chars().any(char::is_alphanumeric);
        if EN_VALUE_ENDS.contains(&bare.to_lowercase().as_str()) || no_word {
            break;
        }
        if words.is_empty() && matches!(bare.to_lowercase().as_str(), "the" | "a" | "an" | "to") {
            continue;
        }
        words.push(bare);
        if bare.len() != word.len() || words.len() >= 5 {
            break;
        }
    }
    let value = scan::trim_value(&words.join(" ")).to_string();
    (!value.is_empty()).then_some(value)
}

/// The last words of an English clause before `end` (at most three).
fn english_value_before(text: &str, end: usize) -> Option<String> {
    let before = text.get(..end)?;
    let clause = before
        .rsplit([',', ';', ':', '.', '!', '?', '—', '–'])
        .next()
        .unwrap_or(before);
    let words: Vec<&str> = clause.split_whitespace().collect();
    let tail = words.get(words.len().saturating_sub(3)..)?;
    let kept: Vec<&str> = tail
        .iter()
        .copied()
        .skip_while(|w| {
            let lower = w.to_lowercase().replace('’', "'");
            matches!(
                lower.as_str(),
                "it's"
                    | "is"
                    | "it"
                    | "that's"
                    | "make"
                    | "no"
                    | "i"
                    | "live"
                    | "in"
                    | "the"
                    | "a"
                    | "an"
                    | "actually"
                    | "so"
                    | "and"
                    | "but"
                    | "we"
                    | "at"
                    | "on"
                    | "to"
                    | "be"
                    | "was"
                    | "its"
                    | "i'm"
                    | "am"
                    | "are"
                    | "my"
                    | "our"
            )
        })
        .collect();
    let value = scan::trim_value(&kept.join(" ")).to_string();
    (!value.is_empty()).then_some(value)
}

/// The correction an English sentence makes, if any; `found` are its statements (whose value
/// is the right one in "I live in Seoul, not Busan").
pub(super) fn english(sentence: &str, found: &[Found]) -> Option<Corrected> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:change|switch|update|move|set|correct)\s+(?:that|it|this|the\s+\w+(?:\s+\w+)?)\s+to\s+(?P<r>.+)",
        r"(?:^|\b(?:actually|let['’]s|please|ok|okay|no|then|so|just|can\s+you|could\s+you|wait)\W+)make\s+(?:that|it)\s+(?P<r>.+)",
        r"^(?:(?:sorry|oops|no|wait|actually|correction|err|um|ah|oh|my\s+bad|my\s+mistake)\W+)*(?:i\s+)?(?:meant|mean)(?:\s+to\s+say)?\s+(?P<r>.+)",
        r"\b(?:scratch\s+that|correction|my\s+mistake|my\s+bad|i\s+misspoke|i\s+was\s+wrong|typo|hold\s+on|whoops|i\s+mixed\s+(?:that|it|them)\s+up|i\s+got\s+(?:that|it)\s+wrong)\b[,:;.!\s]+(?:(?:it['’]s|it\s+is|make\s+it|i\s+meant|it\s+should\s+be)\s+)?(?P<r>.+)",
        r"^(?:actually|wait|no|sorry|oops)\b[,\s]+(?:it['’]s|it\s+is|its|that['’]s|it\s+should\s+be|it['’]ll\s+be|it\s+will\s+be)\s+(?P<r>.+)",
        r"^(?:(?:no|actually|sorry|wait|oops)\W+)*(?:it['’]s\s+)?not\s+(?P<w>[^,;.!?—–]+?)\s*[,;—–]\s*(?:but\s+)?(?:it['’]s\s+|rather\s+)?(?P<r>.+)",
        r"\b(?:said|wrote|typed|told\s+you|put)\s+(?P<w>[^,;.!?]+?)\s*,?\s+(?:but|when)\s+(?:i\s+|we\s+)?(?:meant|mean)\s+(?P<r>.+)",
        r"[,;]\s*not\s+(?P<w>[^,;.!?]+)",
        r"\b(?:go\s+with|let['’]s\s+do|let['’]s\s+go\s+with|let['’]s\s+say|do)\s+(?P<r>[^,;.!?]+?)\s+instead\b",
        r"\binstead\s+of\s+(?P<w>[^,;.!?]+)",
    ];
    if super::english::is_question_text(sentence) {
        return None;
    }
    let cued = correction_cue(sentence);
    if cued {
        if let Some(c) = stated_not(sentence, found) {
            return Some(c);
        }
    }
    for (index, re) in compiled(&CELL, &sources).iter().enumerate() {
        let Some(caps) = re.as_ref().and_then(|re| re.captures(sentence)) else {
            continue;
        };
        if index == 7 && !cued {
            continue;
        }
        let wrong = caps.name("w").and_then(|w| english_value(w.as_str()));
        let right = match (index, caps.name("r")) {
            (7, _) => found
                .last()
                .map(|f| f.value.clone())
                .filter(|v| !v.is_empty())
                .or_else(|| english_value_before(sentence, caps.get(0)?.start())),
            (9, _) => english_value_before(sentence, caps.get(0)?.start()),
            (_, Some(r)) => english_value(r.as_str()),
            _ => None,
        };
        if let Some(right) = right {
            let wrong = wrong.or_else(|| {
                let r = caps.name("r")?;
                let end = r.start() + r.as_str().find(right.as_str())? + right.len();
                not_after(sentence, end)
            });
            if wrong.as_deref() == Some(right.as_str()) {
                continue;
            }
            return Some(Corrected { wrong, right });
        }
    }
    None
}

/// "I'm a locksmith, not a pharmacist", "the CEO is Raj Okonkwo, not Dana Whitlock": the value
/// of a statement the sentence makes, right before the "not" that names the wrong one.
fn stated_not(sentence: &str, found: &[Found]) -> Option<Corrected> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| scan::compile(r"[,;—–]?\s*(?:and\s+|but\s+)?\bnot\s+(?P<w>[^,;.!?—–]+)"))
        .as_ref()?;
    for caps in re.captures_iter(sentence) {
        let (Some(whole), Some(w)) = (caps.get(0), caps.name("w")) else {
            continue;
        };
        let before = sentence
            .get(..whole.start())?
            .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '—' | '–'));
        let right = found
            .iter()
            .filter(|f| !f.negated && !f.value.is_empty())
            .find(|f| before.ends_with(f.value.as_str()));
        let (Some(right), Some(wrong)) = (right, english_value(w.as_str())) else {
            continue;
        };
        if wrong != right.value {
            return Some(Corrected {
                wrong: Some(wrong),
                right: right.value.clone(),
            });
        }
    }
    None
}

/// The wrong value named by a "not …" right after byte `from` ("I meant cold brew, not
/// hibiscus tea, …").
fn not_after(sentence: &str, from: usize) -> Option<String> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| scan::compile(r"^\s*[,;—–]?\s*(?:and\s+|but\s+)?not\s+(?P<w>[^,;.!?—–]+)"))
        .as_ref()?;
    let caps = re.captures(sentence.get(from..)?)?;
    english_value(caps.name("w")?.as_str())
}

/// Whether an English sentence signals a correction ("actually", "sorry", "it's X, not Y").
fn correction_cue(sentence: &str) -> bool {
    let lower = sentence.to_lowercase().replace('’', "'");
    let cue_word = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| {
            matches!(
                w,
                "actually"
                    | "sorry"
                    | "wait"
                    | "no"
                    | "meant"
                    | "correction"
                    | "oops"
                    | "rather"
                    | "mistake"
                    | "misspoke"
                    | "typo"
                    | "wrong"
                    | "misread"
                    | "misremembered"
                    | "mistyped"
                    | "mixed"
                    | "clarify"
                    | "correct"
                    | "err"
                    | "erm"
                    | "whoops"
            )
        })
        || [
            "hold on",
            "i mean ",
            "slip of the tongue",
            "let me fix",
            "to be clear",
        ]
        .iter()
        .any(|p| lower.contains(p));
    let opens = ["it's ", "it is ", "that's ", "make it ", "its "]
        .iter()
        .any(|p| lower.starts_with(p));
    cue_word || opens
}

/// Particles and phrases that end a Chinese corrected value.
const ZH_VALUE_ENDS: &[&str] = &[
    "了", "吧", "啊", "呢", "哦", "呀", "啦", "才对", "就行", "就好", "吗", "的", "哈", "嘛",
];

/// A Chinese value from the start of `text`: up to a clause mark or an ending particle.
fn chinese_value(text: &str) -> Option<String> {
    let clause_end = text
        .find(super::chinese::is_clause_mark)
        .unwrap_or(text.len());
    let mut value = text.get(..clause_end)?.trim();
    for end in ZH_VALUE_ENDS {
        if let Some(i) = value.find(end).filter(|&i| i > 0) {
            value = value.get(..i).unwrap_or(value);
        }
    }
    let value = value.trim();
    let n = value.chars().count();
    ((1..=12).contains(&n)).then(|| value.to_string())
}

/// The correction a Chinese sentence makes, if any.
pub(super) fn chinese(sentence: &str, _found: &[Found]) -> Option<Corrected> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"不是(?P<w>[^，。！？；、,.!?;\s]{1,12}?)[，,、\s]*(?:而|应该|其实)?是(?P<r>.+)",
        r"(?:^|[，,。！!：:])(?P<topic>[^，,。！!？?；;：:]{0,12}?)(?:其实|应该)?(?:是|叫|在|去)(?P<r>[^，。！？；、,.!?;\s]{1,12}?)[，,、\s]*(?:而)?不(?:是|叫|在|去)(?P<w>[^，。！？；、,.!?;\s]{1,12})",
        r"(?:^|[，,。！!：:])\s*(?:那就|那|就|还是|要不|帮我|麻烦|请|算了|不对|哦|啊|嗯|对了)?(?:改成|改为|换成|改到|改在|换到)(?P<r>.+)",
        r"(?:我说错了|说错了|搞错了|记错了|口误|更正一下|纠正一下|更正|纠正|不对|错了|我搞错了|我记错了|打错了|写错了|看错了)[，,。！!：:\s]*(?:应该|其实|实际上)?(?:是|在)(?P<r>.+)",
        r"(?:我是说|我的意思是|我指的是|我想说的是)(?P<r>.+)",
    ];
    if super::chinese::is_question(sentence) {
        return None;
    }
    for (index, re) in compiled(&CELL, &sources).iter().enumerate() {
        let Some(caps) = re.as_ref().and_then(|re| re.captures(sentence)) else {
            continue;
        };
        // "我是锁匠，不是药剂师" and "我是说…" correct only when the line says it does; "是上海，
        // 不是北京" always does.
        let topic = caps
            .name("topic")
            .is_some_and(|t| !t.as_str().trim().is_empty());
        if (topic || index == 4) && !chinese_cue(sentence) {
            continue;
        }
        let wrong = caps.name("w").and_then(|w| chinese_value(w.as_str()));
        let Some(right) = caps.name("r").and_then(|r| chinese_value(r.as_str())) else {
            continue;
        };
        let (right, wrong) = match wrong {
            Some(w) => {
                let (r, w) = trimmed_alike(&right, &w);
                (r, Some(w))
            }
            None => (right, None),
        };
        if wrong.as_deref() == Some(right.as_str()) {
            continue;
        }
        return Some(Corrected { wrong, right });
    }
    None
}

/// Words with which a Chinese line says it corrects something.
const CUES_ZH: &[&str] = &[
    "说错",
    "搞错",
    "记错",
    "打错",
    "写错",
    "看错",
    "弄错",
    "错了",
    "口误",
    "更正",
    "纠正",
    "不对",
    "等等",
    "哎呀",
    "不好意思",
    "抱歉",
    "应该是",
    "其实是",
    "失误",
];

fn chinese_cue(sentence: &str) -> bool {
    CUES_ZH.iter().any(|c| sentence.contains(c))
}

/// The right and wrong values without what only one of them carries: "去西双版纳"/"喀纳斯" →
/// "西双版纳"; "原型设计阶段"/"需求分析" → "原型设计"; "订婚状态"/"单身" → "订婚".
fn trimmed_alike(right: &str, wrong: &str) -> (String, String) {
    let mut right = right.to_string();
    let mut wrong = wrong.to_string();
    for lead in ["去", "到", "在"] {
        if right.starts_with(lead) != wrong.starts_with(lead) {
            right = right.strip_prefix(lead).unwrap_or(&right).to_string();
            wrong = wrong.strip_prefix(lead).unwrap_or(&wrong).to_string();
        }
    }
    for tail in ["阶段", "状态", "这只猫", "这只狗"] {
        if right.ends_with(tail) != wrong.ends_with(tail) {
            right = right.strip_suffix(tail).unwrap_or(&right).to_string();
            wrong = wrong.strip_suffix(tail).unwrap_or(&wrong).to_string();
        }
    }
    (right, wrong)
}

/// A sentence that only says the previous words were wrong ("我说错了。", "Sorry, my
/// mistake."), so that the next sentence's value is the right one.
pub(super) fn is_bare_marker(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let bare: String = lower
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || crate::is_cjk(*c))
        .collect();
    let bare = bare.trim();
    [
        "我说错了",
        "说错了",
        "搞错了",
        "我搞错了",
        "记错了",
        "我记错了",
        "不对",
        "更正一下",
        "口误",
        "sorry my mistake",
        "my mistake",
        "my bad",
        "correction",
        "scratch that",
        "sorry i misspoke",
        "i misspoke",
        "oops",
        "sorry wrong day",
        "wait no",
        "no wait",
    ]
    .contains(&bare)
}

/// The right value said by a sentence after a bare marker: "是周四。", "It's Thursday.",
/// "Thursday."
pub(super) fn after_marker(sentence: &str) -> Option<Corrected> {
    let trimmed = sentence.trim();
    if trimmed.chars().any(crate::is_cjk) {
        let rest = trimmed
            .trim_start_matches("应该")
            .trim_start_matches("其实")
            .trim_start_matches('是')
            .trim_start_matches('在');
        return chinese_value(rest).map(|right| Corrected { wrong: None, right });
    }
    let lower = trimmed.to_lowercase();
    let skip = [
        "it's ",
        "it’s ",
        "it is ",
        "i meant ",
        "make it ",
        "it should be ",
    ]
    .iter()
    .find(|p| lower.starts_with(*p))
    .map_or(0, |p| p.len());
    english_value(trimmed.get(skip..)?).map(|right| Corrected { wrong: None, right })
}
