//! Chinese forget requests: "请忘掉我的住址", "把我的电话号码删掉", "关于我前男友的一切都忘了吧".
//!
//! Three word orders carry a request in Chinese:
//! - **verb first**: [frame] verb topic [particles] — "请忘掉我的住址好吗", "别记我的生日了";
//! - **把**: [frame] 把 topic [都] verb [particles] — "把我的电话号码删掉";
//! - **topic first**: topic [你][都] verb particles — "关于我前男友的一切都忘了吧"; only when the
//!   topic is a noun phrase (holds 的, 关于, 一切…) and no subject pronoun stands before the verb
//!   ("那些事我都忘了" is the user's own forgetting), and the line ends like a request (吧, 好吗)
//!   or asks politely (请, 可以, 能).
//!
//! Chinese drops subjects, so "忘了带钥匙" or "忘了你的生日" is "(I) forgot…": a perfective verb
//! (忘了, 删了) only makes a request with a polite frame or a request ending (吧, 好吗), a question
//! ("你忘了我的生日吗？") only with a modal (能, 可以), and a verb followed by another verb
//! ("忘了跟你说", "忘了带钥匙") never.

use std::ops::Range;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::forget::{
    floor_boundary, settle, trim_space, Found, Frame, FRAME_WINDOW, MAX_TOPIC, MAX_VERBS,
};
use crate::Analyzer;

/// Every Chinese pattern, compiled once.
struct Chinese {
    trigger: Regex,
    negated: Regex,
    frame: Regex,
    ba: Regex,
    fronted: Regex,
    particles_only: Regex,
    trailing_particles: Regex,
    told: Regex,
    about: Regex,
    thing: Regex,
    bare_all: Regex,
    no_topic: Regex,
    subject_end: Regex,
    polite: Regex,
    request_ending: Regex,
    question: Regex,
    memory: Regex,
    personal: Regex,
}

fn patterns() -> Option<&'static Chinese> {
    static PATTERNS: OnceLock<Option<Chinese>> = OnceLock::new();
    PATTERNS.get_or_init(compile).as_ref()
}

const INTERJECTION: &str = r"好吧|好的|好啦|好|嗯|那么|那|另外|还有|对了|然后|所以|现在|以后|从现在起|从现在开始|从今以后|今后|拜托了?|求你了?|求求你|唉|哎|诶|嘿|喂|小助手|助手|老实说|说真的|其实|总之|反正|行|(?i:ok)";
const REQUEST: &str = r"请你?|麻烦你?|拜托你|您(?:可以|能)?|你(?:可以|能|能不能|能否|可不可以|就|帮我|给我|替我|最好|得|要|必须|应该|赶紧|直接|还是)?|可以|能不能|可不可以|能否|可否|是否可以|能|帮我|替我|给我|我(?:希望|想让|想请|要|需要|请|求|让|请求)你(?:能|可以|能够|就)?|希望你(?:能|可以|能够)?|想请你|让你";
const OWN: &str =
    r"我们?(?:真|也|好|很|就|还)?(?:想|要|想要|希望|打算|准备|得|需要|该)|(?:怎么|如何)(?:才能)?";
const ADVERB: &str = r"都|全|全部|统统|通通|就|也|再|直接|赶紧|马上|立刻|立即|彻底|永久|永远|完全|一并|一起|干脆|还是|快|帮我|给我|请|都给我|从(?:你的?)?(?:记忆|脑子|数据库|记录)(?:里|中|当中|里面)?";
const PARTICLES: &str = r"掉|了|吧|啦|哦|噢|啊|呀|嘛|吗|么|好吗|好不好|行吗|行不行|可以吗|可以不|成吗|好么|谢谢你?|拜托了?|就好|就行了?|就可以了?|好了|罢了|哈|[~～…\s]|(?:从|在)你的?(?:记忆|脑子|数据库|记录|资料库)(?:里|中|当中|里面)?";

fn compile() -> Option<Chinese> {
    let trigger = r"(?P<forget>忘掉|忘记|忘了|忘却|(?:别|不要|不用|不必|不需要|无需|用不着|不许|请勿|勿)(?:再|继续|帮我|给我|替我)?(?:记住|记得|记着|记录|记)|不再记(?:住|得|着)?|停止记(?:住|忆|录)?|我?(?:不想|不希望|不愿意)(?:让|要)?你再?(?:记住|记得|记着|记))|(?P<delete>删掉|删除|删了|删去|清除|清掉|清空|抹掉|抹去|抹除|擦掉|去掉|移除|销毁|(?:别|不要|不用|不必|无需|请勿|勿)(?:再|继续|帮我|给我)?(?:保存|保留|存储|存着|存|留着)|停止(?:保存|存储))";
    let opening = format!(
        r"^\s*(?:(?:{INTERJECTION})[\s，,！!]*)*(?:(?P<req>{REQUEST})\s*|(?P<own>{OWN})\s*)?(?:(?:{ADVERB})\s*)*"
    );
    let frame = format!("{opening}$");
    let ba = format!(
        r"{opening}把(?P<topic>.+?)(?:\s*(?:都|全|全部|统统|通通|给我|给|也|就|一并|彻底|完全|永远|赶紧|直接|从(?:你的?)?(?:记忆|脑子|数据库|记录)(?:里|中|当中|里面)?))*$"
    );
    let fronted = r"^(?P<topic>.+?)\s*(?:你|您)?(?:\s*(?:都|全|全部|统统|通通|就|也|给我|一并|彻底|完全|永远|赶紧|直接|请|可以|能|帮我))*$";
    let particles_only = format!(r"^(?:{PARTICLES}|[。！!？?，,])*$");
    let trailing_particles = format!(r"(?:{PARTICLES})+$");
    let told = r"^(?:(?:我|我们)?(?:之前|以前|刚才|刚刚|曾经|上次|那天)?(?:(?:跟|和|对|给|同|向)你(?:说|讲|提|聊|透露|分享|讲述|倾诉)|告诉(?:过|了)?你|说|讲|提到|提)(?:过|了)?的|你所?(?:知道|记得|记住|存|保存|掌握|了解)了?的)";
    let about = r"^(?:你的?)?(?:所有|全部|一切|任何)?(?:(?:关于|有关)(?P<x1>.+?)的|(?:跟|和|与|同)(?P<x2>.+?)(?:有关|相关)的)(?:一切|所有|全部)?(?:事情?|信息|内容|记忆|记录|东西|资料|细节|话|部分|情况)?$|^(?P<x3>.+?)的(?:一切|所有(?:事情?|信息|内容|记忆|记录|东西|资料|细节)?|全部(?:信息|内容|资料)?)$";
    let thing = r"(?:这件事|那件事|这些事|那些事|这事|那事|这个事情?|那个事情?|的事情?|这一点|这个信息|这条信息)$";
    let bare_all = r"^(?:一切|所有|全部|所有的?事情?|一切事情|所有的?东西|所有的?信息|全部的?信息|所有的?记忆|全部的?内容)$";
    let no_topic = r"^(?:它|这|那|这个|那个|这些|那些|这事|这件事|那件事|刚才的|刚才说的|我说的|我刚才说的|我刚说的|他|她|话|那句话|这句话|刚才那句话?|上一条|上一句|事|事情|东西|掉|那些话|这些话|那些事|这些事)$";
    let subject_end = r"(?:我|他|她|它|我们|他们|她们|你们|大家|咱们)$";
    let polite = r"请|麻烦|可以|能|希望|想让|要你|需要你|让你|帮我|替我|拜托|求";
    let request_ending = r"(?:吧|好吗|好不好|行吗|行不行|可以吗|好么|成吗)[\s。！!？?~～…]*$";
    let question = r"[吗么？?][\s。！!？?~～…]*$";
    let memory = r"记住|记得|记着|记忆|你知道的|告诉(?:过|了)?你|(?:跟|和|对|给|同|向)你(?:说|讲|提|聊)|你(?:存|保存|记)|的一切|所有(?:关于|有关)|(?:所有|全部)的?(?:信息|资料)|数据库";
    let personal = r"地址|住址|住在|家在|电话|手机|号码|邮箱|生日|出生|年龄|岁|工资|薪水|收入|月薪|年薪|密码|护照|身份证|证件|银行卡|信用卡|卡号|账号|位置|行踪|定位|名字|姓名|前男友|前女友|前任|前夫|前妻|男朋友|女朋友|男友|女友|老公|老婆|丈夫|妻子|病|诊断|健康|体重|信仰|宗教|单位|家人|孩子|父母|隐私|个人信息|资料";
    Some(Chinese {
        trigger: Regex::new(trigger).ok()?,
        negated: Regex::new(r"(?:别|不要|不能|不会|不该|不应该|没|没有|难以|难|永远不|千万别|可别|不许|不可以|怎么能|怎么会|会不会|是不是|还没)\s*$").ok()?,
        frame: Regex::new(&frame).ok()?,
        ba: Regex::new(&ba).ok()?,
        fronted: Regex::new(fronted).ok()?,
        particles_only: Regex::new(&particles_only).ok()?,
        trailing_particles: Regex::new(&trailing_particles).ok()?,
        told: Regex::new(told).ok()?,
        about: Regex::new(about).ok()?,
        thing: Regex::new(thing).ok()?,
        bare_all: Regex::new(bare_all).ok()?,
        no_topic: Regex::new(no_topic).ok()?,
        subject_end: Regex::new(subject_end).ok()?,
        polite: Regex::new(polite).ok()?,
        request_ending: Regex::new(request_ending).ok()?,
        question: Regex::new(question).ok()?,
        memory: Regex::new(memory).ok()?,
        personal: Regex::new(personal).ok()?,
    })
}

/// How the verb's clause is built around it.
struct Shape {
    /// Where the clause starts.
    start: usize,
    /// The topic before any trimming.
    topic: Range<usize>,
    frame: Frame,
    /// Whether the opening asks politely or with a modal (请, 麻烦, 可以, 能, 希望你…).
    polite: bool,
}

/// The first Chinese forget request in sentence `s`.
pub(super) fn chinese(s: &str) -> Option<Found> {
    let p = patterns()?;
    for caps in p.trigger.captures_iter(s).take(MAX_VERBS) {
        let Some(verb) = caps.get(0) else {
            continue;
        };
        if caps.name("forget").is_some()
            && verb.as_str().starts_with('忘')
            && negated(p, s, &verb.range())
        {
            continue;
        }
        let Some(shape) = shape(p, s, verb.range()) else {
            continue;
        };
        if let Some(found) = request(p, s, &caps, shape) {
            return Some(found);
        }
    }
    None
}

/// "别忘了", "忘不了", "没忘记", "忘在家里", "忘光了": reminders, negations and past forgetting.
fn negated(p: &Chinese, s: &str, verb: &Range<usize>) -> bool {
    let near = floor_boundary(s, verb.start.saturating_sub(16));
    let before = s.get(near..verb.start).unwrap_or("");
    let after = s.get(verb.end..).unwrap_or("");
    // "能不能忘掉…" asks; "不能忘" refuses.
    let asks = before.trim_end().ends_with("能不能");
    (p.negated.is_match(before) && !asks) || after.starts_with(['不', '在', '得', '光', '完'])
}

/// Where the clause starts: after the last clause punctuation before `at`.
fn clause_start(s: &str, at: usize) -> usize {
    s.get(..at)
        .and_then(|before| {
            before
                .char_indices()
                .rfind(|(_, c)| matches!(c, '，' | ',' | '；' | ';' | '：' | ':'))
                .map(|(i, c)| i + c.len_utf8())
        })
        .unwrap_or(0)
}

/// Where the clause that continues at `at` ends.
fn clause_end(s: &str, at: usize) -> usize {
    s.get(at..)
        .and_then(|rest| {
            rest.find(['，', ',', '；', ';', '：', ':', '。', '！', '？', '!', '?'])
                .map(|i| at + i)
        })
        .unwrap_or(s.len())
}

/// The word order around the verb at `verb` (verb first, 把, or topic first), or `None` when the
/// words around it do not make a request.
fn shape(p: &Chinese, s: &str, verb: Range<usize>) -> Option<Shape> {
    let start = clause_start(s, verb.start);
    if verb.start - start > FRAME_WINDOW {
        return None;
    }
    let end = clause_end(s, verb.end);
    let prefix = s.get(start..verb.start)?;
    let after = s.get(verb.end..end)?;
    let frame_of = |c: &Captures<'_>| {
        let polite = c.name("req").is_some_and(|r| p.polite.is_match(r.as_str()));
        let frame = if c.name("own").is_some() {
            Frame::Own
        } else {
            Frame::Addressed
        };
        (frame, polite)
    };
    if let Some(c) = p.frame.captures(prefix) {
        let (frame, polite) = frame_of(&c);
        return Some(Shape {
            start,
            topic: verb.end..end,
            frame,
            polite,
        });
    }
    if !p.particles_only.is_match(after) {
        return None;
    }
    if let Some(c) = p.ba.captures(prefix) {
        let (frame, polite) = frame_of(&c);
        let t = c.name("topic")?;
        return Some(Shape {
            start,
            topic: start + t.start()..start + t.end(),
            frame,
            polite,
        });
    }
    let c = p.fronted.captures(prefix)?;
    let t = c.name("topic")?;
    let topic = t.as_str();
    let noun_phrase = ["的", "关于", "有关", "一切", "所有", "全部"]
        .iter()
        .any(|w| topic.contains(w))
        && !topic.contains('把');
    let polite = p.polite.is_match(prefix);
    let asks = polite || p.request_ending.is_match(s) || imperative(s.get(verb)?);
    (noun_phrase && asks && !p.subject_end.is_match(topic)).then_some(Shape {
        start,
        topic: start + t.start()..start + t.end(),
        frame: Frame::Addressed,
        polite,
    })
}

/// The request the verb in `caps` makes in the clause `shape` describes, if any.
fn request(p: &Chinese, s: &str, caps: &Captures<'_>, shape: Shape) -> Option<Found> {
    let verb = caps.get(0)?;
    let perfective = verb.as_str().ends_with('了') || s.get(verb.end()..)?.starts_with('了');
    let asks = shape.polite || p.request_ending.is_match(s) || imperative(verb.as_str());
    if perfective && !asks {
        return None;
    }
    if p.question.is_match(s) && !asks {
        return None;
    }
    // "你忘记我的生日了": a past event, not an instruction.
    if verb.as_str() == "忘记"
        && !asks
        && s.trim_end_matches(['。', '！', '!', ' ']).ends_with('了')
    {
        return None;
    }
    let (topic, mut everything, copula) = topic(p, s, shape.topic.clone())?;
    if topic.is_empty() || topic.len() > MAX_TOPIC {
        return None;
    }
    let clause = trim_space(s, shape.start..s.len());
    let (topic, values) = settle(s, &clause, topic, copula);
    let text = s.get(topic.clone())?;
    // A topic opening with a verb is something the user forgot to do ("带钥匙"), unless it
    // names a personal fact ("诊断结果": 诊断 is tagged a verb).
    // "我用哪家银行", "我开什么车": the user's own fact asked about, not an errand.
    let own_question = text.starts_with('我')
        && ["哪", "什么", "谁", "多少", "几"]
            .iter()
            .any(|w| text.contains(w));
    let errand = starts_with_verb(text) && !p.personal.is_match(text) && !own_question;
    if text.is_empty() || p.no_topic.is_match(text) || errand {
        return None;
    }
    if matches!(text, "我" | "我们") {
        everything = true;
    }
    let memory = p.memory.is_match(s);
    let accepted = match shape.frame {
        Frame::Own => memory,
        Frame::Addressed => {
            // "把我的名字从名单里删掉" is an errand elsewhere.
            let elsewhere = text.contains('从');
            caps.name("delete").is_none() || memory || (p.personal.is_match(text) && !elsewhere)
        }
    };
    accepted.then_some(Found {
        clause,
        topic,
        everything,
        values,
    })
}

/// Whether the verb is itself a prohibition addressed to the listener ("别记", "不要保存",
/// "停止记录"): "关于小林的事情都别记了" asks without 请 or 吧, where "都忘了" would not.
fn imperative(verb: &str) -> bool {
    [
        "别",
        "不要",
        "不用",
        "不必",
        "不需要",
        "无需",
        "用不着",
        "不许",
        "请勿",
        "勿",
        "停止",
    ]
    .iter()
    .any(|w| verb.starts_with(w))
}

/// Whether a topic opens with a verb or preposition and holds no 的: "带钥匙", "跟你说" are what
/// the user forgot to do, not something to forget.
fn starts_with_verb(topic: &str) -> bool {
    if topic.contains('的') {
        return false;
    }
    Analyzer::shared()
        .pos_tags(topic)
        .first()
        // A verbal noun ("诊断结果", "体检报告") names a thing.
        .is_some_and(|(_, tag)| {
            (tag.starts_with('v') && tag != "vn") || tag == "p" || tag == "c" || tag == "d"
        })
}

/// The topic inside `raw`: trailing particles and framing words removed, "关于X的一切" cut to X
/// (and marked as everything), "我的密码是abc123" split into topic and stated value.
fn topic(
    p: &Chinese,
    s: &str,
    raw: Range<usize>,
) -> Option<(Range<usize>, bool, Option<Range<usize>>)> {
    let mut r = trim_space(s, raw);
    if let Some(m) = s.get(r.clone()).and_then(|t| p.trailing_particles.find(t)) {
        r.end = r.start + m.start();
    }
    let mut told = false;
    if let Some(m) = s.get(r.clone()).and_then(|t| p.told.find(t)) {
        r.start += m.end();
        told = true;
    }
    let mut everything = false;
    if let Some(c) = s.get(r.clone()).and_then(|t| p.about.captures(t)) {
        let x = c.name("x1").or(c.name("x2")).or(c.name("x3"))?;
        r = r.start + x.start()..r.start + x.end();
        everything = true;
    } else if let Some(m) = s.get(r.clone()).and_then(|t| p.thing.find(t)) {
        let cut = r.start + m.start();
        if cut > r.start {
            r.end = cut;
        } else if told {
            return None;
        }
    }
    r = trim_space(s, r);
    let text = s.get(r.clone())?;
    if told && text.is_empty() {
        return None;
    }
    if p.bare_all.is_match(text) {
        everything = true;
    }
    let (r, copula) = split_copula(s, r);
    Some((r, everything, copula))
}

/// "我的密码是abc123" → ("我的密码", "abc123"); "我前男友叫张伟" → ("我前男友", "张伟"). Only when
/// the left side is a noun phrase of the user's (holds 的, or the verb is 叫) or the right side
/// is not Chinese, so "我是同性恋" stays whole.
fn split_copula(s: &str, r: Range<usize>) -> (Range<usize>, Option<Range<usize>>) {
    let Some(text) = s.get(r.clone()) else {
        return (r, None);
    };
    let Some((i, c)) = text.char_indices().find(|(_, c)| matches!(c, '是' | '叫')) else {
        return (r, None);
    };
    let left = text.get(..i).unwrap_or("").trim();
    let right = text.get(i + c.len_utf8()..).unwrap_or("").trim();
    let noun = left.contains('的') || c == '叫';
    let pronoun = matches!(left, "我" | "他" | "她" | "我们" | "");
    let foreign = !right.is_empty() && !crate::has_cjk(right);
    if right.is_empty() || pronoun || !(noun || foreign) {
        return (r, None);
    }
    let value = trim_space(s, r.start + i + c.len_utf8()..r.end);
    (trim_space(s, r.start..r.start + i), Some(value))
}
