//! What a forget request's topic gives the engine to match memories with: content terms,
//! synonyms for common personal facts, and the values the request itself states.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use crate::{has_cjk, Analyzer};

/// Words that only frame a topic ("everything", "the info", "这件事") and would match any memory.
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    // English, as the analyzer emits them (Snowball stems).
    "thing", "stuff", "info", "inform", "detail", "fact", "everyth", "anyth", "someth", "whatev",
    "record", "memori", "mention", "trace", "part", "bit", "note", "use", "which", "what",
    // Chinese.
    "事", "事情", "信息", "东西", "一切", "所有", "关于", "有关", "内容", "记录", "相关", "全部",
    "部分", "情况", "细节", "记忆", "说", "说过", "件", "这件", "那件", "这事", "那事", "号",
    "结果", "资料", "哪家", "哪个", "什么", "用",
];

/// Common personal facts: when a topic mentions one of the keys, the synonyms are words the user
/// may have used when stating the fact. English words go through the analyzer (so they compare
/// as stems); Chinese keys match as substrings of the topic.
#[rustfmt::skip]
const SYNONYMS: &[(&[&str], &[&str])] = &[
    (&["address", "live", "living", "home", "apartment", "flat"],
        &["address", "live", "street", "road", "avenue", "lane", "boulevard", "home", "apartment", "flat", "zip", "postcode", "neighborhood", "moved"]),
    (&["phone", "mobile", "cell", "cellphone", "telephone"],
        &["phone", "mobile", "cell", "telephone", "number", "call", "text"]),
    (&["email", "mail"], &["email", "mail", "inbox", "gmail", "address"]),
    (&["birthday", "birthdate", "born", "bday"], &["birthday", "born", "birth", "bday"]),
    (&["age"], &["age", "old", "years", "born"]),
    (&["salary", "income", "wage", "wages", "pay", "paycheck", "earn", "earnings"],
        &["salary", "income", "earn", "pay", "paid", "wage", "raise", "bonus"]),
    (&["password", "passcode", "pin", "passphrase"], &["password", "pin", "passcode", "login", "code"]),
    (&["passport"], &["passport", "travel", "document"]),
    (&["id", "identity", "ssn"], &["id", "identity", "ssn", "social", "security", "national"]),
    (&["ex", "boyfriend", "girlfriend"],
        &["ex", "boyfriend", "girlfriend", "breakup", "relationship"]),
    (&["health", "diagnosis", "diagnosed", "condition", "illness", "disease", "sick", "medical"],
        &["health", "diagnosis", "diagnosed", "condition", "illness", "disease", "doctor", "medication", "treatment", "sick"]),
    (&["medication", "meds", "pills", "prescription"], &["medication", "meds", "pills", "prescription", "doctor"]),
    (&["therapy", "therapist"], &["therapy", "therapist", "counseling", "counselor"]),
    (&["weight"], &["weight", "weigh", "kg", "pounds", "lbs"]),
    (&["name"], &["name", "called", "named"]),
    (&["job", "work", "employer", "workplace", "company"], &["job", "work", "employer", "company", "office", "boss", "colleague"]),
    (&["bank", "account"], &["bank", "account", "balance", "savings", "deposit", "deposits", "credit", "union", "paycheck", "checking"]),
    (&["card", "credit"], &["card", "credit", "debit", "visa", "mastercard"]),
    (&["kids", "children", "son", "daughter"], &["kid", "child", "son", "daughter"]),
    (&["religion", "faith"], &["religion", "church", "faith", "believe", "chapel", "services", "worship", "pray", "prayer", "mass", "temple", "mosque", "synagogue", "parish", "congregation"]),
    (&["debt", "loan", "mortgage"], &["debt", "loan", "owe", "mortgage"]),
    (&["住址", "地址", "住在", "家在", "住哪"], &["地址", "住址", "住在", "家", "小区", "街道"]),
    (&["电话", "手机", "号码"], &["手机", "电话", "号码", "手机号"]),
    (&["邮箱", "邮件"], &["邮箱", "邮件", "电子邮箱"]),
    (&["生日", "出生"], &["生日", "出生", "岁"]),
    (&["年龄", "岁"], &["年龄", "岁", "出生"]),
    (&["工资", "薪水", "收入", "月薪", "年薪", "薪资"], &["工资", "薪水", "收入", "月薪", "年薪", "赚"]),
    (&["密码", "口令"], &["密码", "口令"]),
    (&["护照"], &["护照", "证件"]),
    (&["身份证", "证件"], &["身份证", "证件", "身份证号"]),
    (&["前男友", "前女友", "前任", "前夫", "前妻"], &["前任", "前男友", "前女友", "分手", "男朋友", "女朋友", "恋爱"]),
    (&["病", "诊断", "健康", "身体", "体检"], &["病", "诊断", "医生", "健康", "身体", "吃药", "治疗"]),
    (&["名字", "姓名"], &["名字", "姓名", "叫"]),
    (&["工作", "公司", "单位", "上班"], &["工作", "公司", "单位", "上班", "老板", "同事"]),
    (&["银行卡", "卡号", "信用卡"], &["银行卡", "卡号", "信用卡"]),
    (&["银行", "存款", "工资卡", "储蓄"], &["银行", "存款", "信用社", "储蓄", "工资卡", "账户"]),
    (&["信仰", "宗教", "教会", "礼拜"], &["信仰", "宗教", "教会", "礼拜", "教堂", "祷告", "弟兄姊妹", "寺庙"]),
    (&["体重"], &["体重", "公斤", "斤"]),
    (&["孩子", "儿子", "女儿"], &["孩子", "儿子", "女儿"]),
];

/// One synonym entry with its English words in analyzer form.
struct Entry {
    english_keys: Vec<String>,
    chinese_keys: Vec<&'static str>,
    synonyms: Vec<String>,
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let a = Analyzer::shared();
        let analyzed = |w: &&str| -> Option<String> {
            if has_cjk(w) {
                Some((*w).to_string())
            } else {
                a.terms(w).into_iter().next()
            }
        };
        SYNONYMS
            .iter()
            .map(|(keys, synonyms)| Entry {
                english_keys: keys
                    .iter()
                    .filter(|k| !has_cjk(k))
                    .filter_map(analyzed)
                    .collect(),
                chinese_keys: keys.iter().copied().filter(|k| has_cjk(k)).collect(),
                synonyms: synonyms.iter().filter_map(analyzed).collect(),
            })
            .collect()
    })
}

/// The content terms of `topic` and the synonyms of the personal facts it mentions (none
/// repeating a term).
pub(super) fn terms_and_synonyms(topic: &str) -> (Vec<String>, Vec<String>) {
    // "what I do for a living" is about a job, not a home.
    let lower = topic.to_lowercase();
    let source = if lower.contains("for a living") {
        lower.replace("for a living", "job")
    } else {
        topic.to_string()
    };
    let mut terms: Vec<String> = Vec::new();
    for t in Analyzer::shared().search_terms(&source) {
        if !GENERIC.contains(&t.as_str()) && !terms.contains(&t) {
            terms.push(t);
        }
    }
    let mut synonyms: Vec<String> = Vec::new();
    for e in entries() {
        let hit = e.english_keys.iter().any(|k| terms.contains(k))
            || e.chinese_keys.iter().any(|k| topic.contains(k));
        if !hit {
            continue;
        }
        for s in &e.synonyms {
            if !terms.contains(s) && !synonyms.contains(s) {
                synonyms.push(s.clone());
            }
        }
    }
    (terms, synonyms)
}

/// The words, as written, that a user may ask about `topic` with: the synonyms and keys of
/// the personal facts it mentions ("my address" → live, street, home…; "我的住址" → 住在, 家…).
pub fn words_asked_with(topic: &str) -> Vec<&'static str> {
    let terms = Analyzer::shared().search_terms(topic);
    let mut out: Vec<&'static str> = Vec::new();
    for (e, (keys, synonyms)) in entries().iter().zip(SYNONYMS) {
        let hit = e.english_keys.iter().any(|k| terms.contains(k))
            || e.chinese_keys.iter().any(|k| topic.contains(k));
        if hit {
            for word in keys.iter().chain(synonyms.iter()) {
                if !out.contains(word) {
                    out.push(word);
                }
            }
        }
    }
    out
}

/// The other Chinese keys of the one personal fact every term of a Chinese topic names ("我的
/// 工资" → 薪水, 收入, 月薪…; see [`crate::ForgetRequest::equivalents`]); none when the terms name
/// more than that fact ("我的护照号码" is not a phone number).
pub(super) fn equivalents(topic: &str, terms: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if !has_cjk(topic) || terms.is_empty() {
        return out;
    }
    for e in entries() {
        if !terms.iter().all(|t| e.chinese_keys.contains(&t.as_str())) {
            continue;
        }
        for key in &e.chinese_keys {
            let key = key.to_string();
            if !terms.contains(&key) && !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

/// Tokens a request states that are values rather than words, in `text[within]`: email
/// addresses, and tokens of letters, digits and joiners that hold at least three digits (a
/// phone number, a PIN, a passport number, "E1234567"). Numbers written in groups ("138 1234
/// 5678") come back as one range.
pub(super) fn value_tokens(text: &str, within: Range<usize>) -> Vec<Range<usize>> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}|\+?[A-Za-z0-9]+(?:[-.][A-Za-z0-9]+)*").ok()
    });
    let (Some(pattern), Some(region)) = (pattern.as_ref(), text.get(within.clone())) else {
        return Vec::new();
    };
    let numeric = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.'))
    };
    let mut out: Vec<(Range<usize>, bool)> = Vec::new();
    for m in pattern.find_iter(region) {
        let token = m.as_str();
        let span = within.start + m.start()..within.start + m.end();
        let is_numeric = numeric(token);
        match out.last_mut() {
            // "138 1234 5678": digit groups one space apart are one number.
            Some((last, true))
                if is_numeric
                    && last.end + 1 == span.start
                    && text.as_bytes().get(last.end) == Some(&b' ') =>
            {
                last.end = span.end
            }
            _ => out.push((span, is_numeric)),
        }
    }
    out.into_iter()
        .map(|(r, _)| r)
        .filter(|r| {
            let token = text.get(r.clone()).unwrap_or("");
            token.contains('@') || token.bytes().filter(u8::is_ascii_digit).count() >= 3
        })
        .collect()
}

/// Sort and merge overlapping or touching ranges.
pub(super) fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}
