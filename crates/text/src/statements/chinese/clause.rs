//! The Chinese subject walk and the clause tests it rests on, in a leaf module: every rule
//! module (`rules`, `special`, `values`) walks left from its verb with these, and the parent
//! runs those modules, so keeping the walk apart lets both sides use it without importing each
//! other.

use std::sync::OnceLock;

use regex::Regex;

use super::super::lexicon::RELATIONS_ZH;
use super::super::types::Subject;
use super::values;
use crate::Analyzer;

/// Characters that end a clause.
pub(crate) fn is_clause_mark(c: char) -> bool {
    matches!(
        c,
        '，' | ','
            | '。'
            | '！'
            | '!'
            | '？'
            | '?'
            | '；'
            | ';'
            | '：'
            | ':'
            | '、'
            | '\n'
            | '“'
            | '”'
            | '"'
            | '（'
            | '）'
            | '('
            | ')'
            | '…'
            | '~'
            | '～'
    )
}

/// Adverbs, time words, copulas and measure phrases that may stand between a subject and its
/// verb ("我现在", "我上个月", "我们一家人").
#[rustfmt::skip]
const SKIPPED: &[&str] = &[
    "现在", "目前", "如今", "已经", "已", "还", "仍然", "依然", "仍", "一直", "刚刚", "刚", "也", "都", "就", "终于", "总算",
    "正式", "正在", "又", "才", "早就", "早已", "暂时", "从此", "这回", "这次", "其实", "真的", "确实", "最终", "后来", "重新",
    "开始", "全家", "一家人", "一家", "一起", "俩", "两个", "最近", "近来", "这几天", "这阵子", "前几天", "前不久", "前段时间", "刚才",
    "今年", "去年", "前年", "上个月", "上月", "这个月", "上周", "上星期", "上礼拜", "这周", "本周", "年初", "年底", "月初", "月底",
    "去年底", "今天", "昨天", "前天", "很", "挺", "特别", "非常", "超", "超级", "好", "蛮", "真", "比较", "更", "主要", "平时",
    "一般", "通常", "基本上", "基本", "差不多", "大概", "在", "是", "总是", "常常", "经常", "倒是", "反正", "当然", "居然", "竟然",
    "果然", "于是", "正", "真心", "确实", "早", "已然", "改", "还是", "依旧", "照样", "同样", "一样", "每天", "每周", "每个月",
    "每月", "每年", "每个星期", "每星期", "一周", "一个月", "一年", "一天", "每晚", "平常", "日常", "差不多", "大约", "上半年",
    "这两年", "这些年", "近几年", "这几年", "上个星期", "这半年", "从", "自从", "起", "新",
];

/// Negations between subject and verb.
#[rustfmt::skip]
const NEGATIONS: &[&str] = &[
    "不再", "已经不", "再也不", "早就不", "不", "没有", "没", "并不", "从不", "从来不", "再不", "已不", "也不",
];

/// Words that make the verb after them not a present fact: future, modal, wish.
#[rustfmt::skip]
const BLOCKERS: &[&str] = &[
    "要", "会", "将", "将要", "准备", "打算", "计划", "想", "想要", "可能", "也许", "或许", "快", "快要", "即将", "应该", "得",
    "该", "能", "可以", "希望", "争取", "考虑", "下个月", "明年", "下周", "明天", "后天", "下星期", "将来", "以后", "未来",
    "过几天", "很快", "马上", "迟早", "早晚", "下半年", "愿意", "一定要", "必须", "不会", "别", "宁愿", "还想", "想着", "梦想",
    "曾经", "曾", "以前", "之前", "原来", "原先", "当时", "那时", "小时候",
];

/// Words of future time a plan may carry ("我明年打算…").
#[rustfmt::skip]
const PLAN_TIMES: &[&str] = &[
    "下个月", "明年", "下周", "明天", "后天", "下星期", "下半年", "过几天", "年底", "今年", "这个月", "月底", "暑假", "寒假", "国庆",
    "春节", "五一", "十一", "周末", "春天", "夏天", "秋天", "冬天", "圣诞节", "元旦", "下下周", "下礼拜", "这周末", "今年夏天",
    "明年春天",
];

/// Discourse openers before a subject ("对了，", "其实我…").
#[rustfmt::skip]
const OPENERS: &[&str] = &[
    "对了", "其实", "所以", "然后", "而且", "不过", "但是", "可是", "另外", "顺便说一下", "跟你说", "告诉你", "说起来", "好消息",
    "大新闻", "哈哈", "嗯", "诶", "哦", "啊", "最近", "话说", "顺便", "还有", "因为", "结果", "总之", "反正", "对", "是的",
    "嗯嗯", "哈哈哈", "老实说", "说实话", "说真的", "现在", "目前", "如今", "今年", "去年", "上个月", "而", "但", "那", "那么",
];

/// Words in front of 我 that make it an object ("给我", "跟我").
const OBJECT_MARKERS: &[char] = &[
    '给', '跟', '和', '对', '让', '帮', '叫', '请', '被', '把', '同', '与', '替', '陪', '带', '比',
    '诉', '问', '找', '像', '向',
];

/// The holder of a fact whose verb starts at byte `at`.
#[derive(Clone, Debug)]
pub(super) struct Holder {
    pub subject: Subject,
    pub negated: bool,
    /// No subject was written: Chinese drops it when it is the speaker or the one before.
    pub dropped: bool,
}

/// Walk left from byte `at` to the verb's subject. `plan` lets future time words pass.
pub(super) fn holder(sentence: &str, at: usize, plan: bool) -> Option<Holder> {
    let before = sentence.get(..at)?;
    let clause_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| is_clause_mark(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let mut prefix = before.get(clause_start..)?.trim_end();
    let mut negated = false;
    loop {
        if let Some(rest) = strip_end(prefix, NEGATIONS) {
            negated = true;
            prefix = rest.trim_end();
            continue;
        }
        if let Some(rest) = strip_end(prefix, BLOCKERS) {
            let time_word = PLAN_TIMES.iter().any(|t| prefix.ends_with(t));
            if !(plan && time_word) {
                return None;
            }
            prefix = rest.trim_end();
            continue;
        }
        if let Some(rest) = strip_end(prefix, SKIPPED).or_else(|| strip_duration(prefix)) {
            prefix = rest.trim_end();
            continue;
        }
        if plan {
            if let Some(rest) = strip_end(prefix, PLAN_TIMES) {
                prefix = rest.trim_end();
                continue;
            }
        }
        break;
    }
    let prefix = strip_openers(prefix.trim());
    if prefix.is_empty() {
        let subject = dropped_subject(sentence, clause_start)?;
        return Some(Holder {
            subject,
            negated,
            dropped: true,
        });
    }
    let subject = subject_of(prefix)?;
    Some(Holder {
        subject,
        negated,
        dropped: false,
    })
}

/// `text` without a word of `words` at its end, the longest that fits.
fn strip_end<'a>(text: &'a str, words: &[&str]) -> Option<&'a str> {
    words
        .iter()
        .filter(|w| text.ends_with(*w))
        .max_by_key(|w| w.len())
        .and_then(|w| text.get(..text.len() - w.len()))
}

/// `text` without a trailing "三年前" / "两个月前" / "2019年", or "从成都" (where a move set
/// out from: "我们已经从成都搬到重庆了").
fn strip_duration(text: &str) -> Option<&str> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| {
            Regex::new(r"(?:(?:\d+|[一二两三四五六七八九十几半]+)(?:个)?(?:年|月|周|星期|礼拜|天)(?:前|以前|之前|多前)|\d{4}年|[一二三四五六七八九十]+月份?|\d{1,2}月份?|(?:从|自)[^，。！？从自]{1,6}?(?:开始|起)|从[^，。！？从自的在]{1,8})$").ok()
        })
        .as_ref()?;
    let m = re.find(text)?;
    text.get(..m.start())
}

/// `text` without discourse openers at its start.
pub(super) fn strip_openers(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_start_matches(|c: char| c.is_whitespace() || is_clause_mark(c));
        let opener = OPENERS
            .iter()
            .filter(|o| trimmed.starts_with(*o) && trimmed.len() > o.len())
            .max_by_key(|o| o.len());
        match opener {
            // Keep "现在" etc. when nothing but a subject-less verb would remain.
            Some(o) => text = trimmed.get(o.len()..).unwrap_or(""),
            None => return trimmed,
        }
    }
}

/// The subject written as `prefix` (adverbs already stripped).
pub(super) fn subject_of(prefix: &str) -> Option<Subject> {
    #[rustfmt::skip]
    const SPEAKER: &[&str] = &[
        "我们家", "咱们家", "我家", "咱家", "我们俩", "我们", "咱们", "我", "咱", "俺", "本人",
    ];
    const OTHERS: &[&str] = &[
        "他", "她", "它", "他们", "她们", "它们", "你", "您", "你们", "人家", "大家", "别人",
        "有人", "谁", "他俩", "她俩",
    ];
    if let Some(rest) = strip_end(prefix, SPEAKER) {
        let object = rest
            .chars()
            .last()
            .is_some_and(|c| OBJECT_MARKERS.contains(&c));
        return (!object).then_some(Subject::Speaker);
    }
    // "我和老婆" = we.
    if let Some(pos) = prefix.find(['和', '跟']) {
        let (left, right) = prefix.split_at(pos);
        if matches!(left, "我" | "我们") && right.chars().count() <= 5 {
            return Some(Subject::Speaker);
        }
    }
    if let Some(rel) = relation_at_end(prefix) {
        return rel;
    }
    if OTHERS.iter().any(|o| prefix.ends_with(o)) {
        return None;
    }
    values::person_name(prefix).map(Subject::Named)
}

/// The owner of a noun at byte `at` that the line may leave unsaid: "宝宝叫…", "猫咪有了新名字"
/// are the speaker's; "我姐的宝宝", "邻居家的猫", "他家猫" are someone else's.
pub(crate) fn owner_before(sentence: &str, at: usize) -> Option<Subject> {
    let before = sentence.get(..at)?;
    let clause_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| is_clause_mark(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let prefix = before.get(clause_start..)?.trim();
    let owned = prefix.strip_suffix('的');
    let owner = owned.unwrap_or(prefix);
    let owner = owner.strip_suffix('家').unwrap_or(owner);
    const SPEAKER: &[&str] = &["我们", "咱们", "我", "咱", "俺"];
    if SPEAKER.iter().any(|s| owner.ends_with(s)) {
        return Some(Subject::Speaker);
    }
    if let Some(rel) = relation_at_end(owner) {
        return rel;
    }
    let others = [
        "他", "她", "你", "他们", "她们", "你们", "别人", "人家", "朋友", "邻居",
    ];
    if others.iter().any(|o| owner.ends_with(o)) {
        return None;
    }
    match owned {
        // "小王的猫": a named owner.
        Some(named) if !named.is_empty() => values::person_name(named).map(Subject::Named),
        _ => Some(Subject::Speaker),
    }
}

/// "我哥" → Related("哥"), "妈妈" → Related("妈妈"); `Some(None)` when the relative is someone
/// else's ("他哥").
fn relation_at_end(prefix: &str) -> Option<Option<Subject>> {
    let rel = RELATIONS_ZH
        .iter()
        .filter(|r| prefix.ends_with(*r))
        .max_by_key(|r| r.len())?;
    let owner = prefix
        .get(..prefix.len() - rel.len())?
        .trim_end_matches('的');
    let owner = strip_openers(owner);
    let mine = owner.is_empty()
        || ["我", "我们", "我家", "咱", "咱们", "俺", "我们家", "咱家"].contains(&owner);
    Some(mine.then(|| Subject::Related((*rel).to_string())))
}

/// The subject a clause without one inherits: the previous clause's when it opened with one,
/// else the speaker.
fn dropped_subject(sentence: &str, clause_start: usize) -> Option<Subject> {
    let before = sentence.get(..clause_start)?;
    let previous = before
        .trim_end_matches(is_clause_mark)
        .rsplit(is_clause_mark)
        .next()
        .unwrap_or("");
    let opened = strip_openers(previous.trim());
    if opened.is_empty() {
        return Some(Subject::Speaker);
    }
    for (written, subject) in [
        ("我们", Subject::Speaker),
        ("咱们", Subject::Speaker),
        ("我家", Subject::Speaker),
        ("我", Subject::Speaker),
    ] {
        if let Some(rest) = opened.strip_prefix(written) {
            let rest = rest.trim_start_matches('的');
            let rel = RELATIONS_ZH
                .iter()
                .filter(|r| rest.starts_with(*r))
                .max_by_key(|r| r.len());
            return Some(match rel {
                Some(r) if written != "我们" || !rest.starts_with('们') => {
                    Subject::Related((*r).to_string())
                }
                _ => subject,
            });
        }
    }
    let third = ["他", "她", "它"].iter().any(|p| opened.starts_with(p));
    (!third).then_some(Subject::Speaker)
}

/// Words that make what follows hypothetical, wished for or uncertain.
#[rustfmt::skip]
const HYPOTHETICAL: &[&str] = &[
    "如果", "假如", "假设", "要是", "万一", "倘若", "若是", "想象", "幻想", "梦想", "希望", "但愿", "也许", "或许", "可能",
    "说不定", "考虑", "想着", "要不要", "该不该", "是否", "的话", "要不", "还是说", "假若", "设想", "憧憬", "做梦", "梦见", "梦到",
    "如若", "若", "想想", "打算", "计划", "准备", "建议", "不如", "应该", "最好", "等我", "等我们",
    "等到", "一旦", "待我",
];

/// Words that report someone's words or thoughts.
#[rustfmt::skip]
const REPORTING: &[&str] = &[
    "听说", "据说", "说", "告诉", "觉得", "认为", "以为", "声称", "表示", "提到", "称", "问", "吹嘘", "骗", "开玩笑", "传言",
    "传闻", "据", "坚称", "宣称", "透露", "提起",
];

/// Words with 说 or 告诉 in them that do not report ("说实话", "小说").
#[rustfmt::skip]
const NOT_REPORTING: &[&str] = &[
    "说实话", "说真的", "说起来", "说到", "小说", "说明", "说不定", "说白了", "话说", "听说过", "说好", "说法", "所以说", "虽说",
    "换句话说", "怎么说", "说来", "说错", "说漏", "我是说", "我说的是", "说个事", "说件事",
    "说一下", "说一声",
];

/// Phrases that set what follows in the past.
#[rustfmt::skip]
const PAST_CONTEXT: &[&str] = &[
    "以前", "之前", "过去", "曾经", "原来", "原先", "小时候", "那时候", "那时", "当时", "上学的时候", "大学的时候", "读书的时候",
    "年轻的时候", "本来", "早年", "当年", "从前", "那会儿", "那几年", "上大学时",
];

/// Words after which the sentence is about the present again.
const PRESENT_AGAIN: &[&str] = &[
    "现在", "如今", "目前", "后来", "但是", "可是", "不过", "但", "而",
];

/// Whether the sentence before byte `start` makes a statement there not the speaker's present
/// assertion: hypothetical, reported by someone else, or in the past.
pub(super) fn blocked_before(sentence: &str, start: usize, plan: bool) -> bool {
    let Some(before) = sentence.get(..start) else {
        return true;
    };
    let hypothetical = HYPOTHETICAL
        .iter()
        .filter(|h| !(plan && ["打算", "计划", "准备"].contains(h)))
        .any(|h| {
            before
                .match_indices(h)
                .any(|(i, _)| !noun_use(before, i + h.len()))
        });
    hypothetical || reported(before) || in_past(before)
}

/// `text` without the openers, hearsay and conditions a pattern may have taken in front of a
/// name ("听说苍鹭项目" → "苍鹭项目", "要是海川船舶" → "海川船舶").
pub(super) fn without_lead_ins(text: &str) -> &str {
    let mut text = strip_openers(text.trim());
    // "他们说苍鹭项目…": a report before the name, up to its verb.
    let reported_up_to = REPORTING
        .iter()
        .flat_map(|r| text.match_indices(r).map(move |(i, _)| (i, i + r.len())))
        .filter(|&(start, end)| {
            let by = text.get(..start).unwrap_or("");
            let someone = subject_of(by).is_some()
                || ["他", "她", "他们", "她们", "你", "你们"]
                    .iter()
                    .any(|p| by.ends_with(p));
            // A one-character verb (说, 问) may be part of a name (顾问公司) unless someone says it.
            let long = text.get(start..end).is_some_and(|w| w.chars().count() >= 2);
            end < text.len() && (someone || (long && text.get(..end).is_some_and(reported)))
        })
        .map(|(_, end)| end)
        .max();
    if let Some(end) = reported_up_to {
        text = strip_openers(text.get(end..).unwrap_or(""));
    }
    loop {
        let lead = HYPOTHETICAL
            .iter()
            .chain(REPORTING)
            .filter(|w| w.chars().count() >= 2 && text.starts_with(*w) && text.len() > w.len())
            .max_by_key(|w| w.len());
        match lead {
            Some(w) => text = strip_openers(text.get(w.len()..).unwrap_or("")),
            None => return text,
        }
    }
}

/// Whether a run of characters a pattern took as a name starts with a word that makes it
/// hypothetical ("要是苍鹭项目…", "如果海川船舶…"): a name may hold 若 (沈若曦), so only words of
/// two or more characters count.
pub(super) fn opens_hypothetically(text: &str) -> bool {
    let text = strip_openers(text.trim());
    HYPOTHETICAL
        .iter()
        .filter(|h| h.chars().count() >= 2)
        .any(|h| text.starts_with(h))
}

/// Whether 计划/打算/准备 ending at byte `end` is a noun ("新计划，…", "春天的计划变了"),
/// which makes nothing after it hypothetical.
fn noun_use(text: &str, end: usize) -> bool {
    let word = text.get(..end).unwrap_or("");
    if !["计划", "打算", "准备"].iter().any(|w| word.ends_with(w)) {
        return false;
    }
    let next = text.get(end..).and_then(|r| r.chars().next());
    let before = word
        .trim_end_matches(['计', '划', '打', '算', '准', '备'])
        .chars()
        .last();
    next.is_none_or(|c| is_clause_mark(c) || matches!(c, '变' | '有' | '是' | '了' | '改' | '取'))
        || before.is_some_and(|c| matches!(c, '的' | '新' | '个'))
}

/// Whether someone other than the speaker reports what follows.
fn reported(before: &str) -> bool {
    let mut cleaned = before.to_string();
    for not in NOT_REPORTING {
        cleaned = cleaned.replace(not, "");
    }
    REPORTING.iter().any(|r| {
        cleaned.match_indices(r).any(|(i, _)| {
            let reporter = cleaned.get(..i).unwrap_or("");
            let after = cleaned.get(i + r.len()..).unwrap_or("");
            let to_you = ["跟你", "和你", "对你", "给你"]
                .iter()
                .any(|y| reporter.ends_with(y))
                || after.starts_with('你');
            let reporter = strip_end(
                reporter,
                &[
                    "跟你", "和你", "对你", "也", "都", "已经", "早就", "刚", "跟他", "跟她",
                    "给你",
                ],
            )
            .unwrap_or(reporter);
            // "告诉你个消息", "跟你说个事": the speaker telling the listener, not a report.
            let speaker_to_you = to_you && strip_openers(reporter).is_empty();
            !(reporter.ends_with('我') || reporter.ends_with("我们") || speaker_to_you)
        })
    })
}

/// Whether a past-context phrase governs the end of `before`, not reset by a word of the
/// present after it.
fn in_past(before: &str) -> bool {
    let last_past = PAST_CONTEXT
        .iter()
        .filter_map(|p| before.rfind(p).map(|i| i + p.len()))
        .max();
    let Some(past_end) = last_past else {
        return false;
    };
    let after = before.get(past_end..).unwrap_or("");
    !PRESENT_AGAIN.iter().any(|p| after.contains(p))
}

/// jieba's part-of-speech tags of a short text.
pub(crate) fn tags(text: &str) -> Vec<(String, String)> {
    Analyzer::shared().pos_tags(text)
}
