//! Chinese slots that need more than a verb and a value: plans, quantities, ages, dates,
//! project states, roles, headquarters, favourites, names given by context and "在X当Y".

use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::super::lexicon::{canonical_preference, canonical_role, canonical_species, SPECIES_ZH};
use super::super::normalize;
use super::super::scan;
use super::super::types::{Found, Slot, Subject};
use super::clause::{self, blocked_before, holder, is_clause_mark, tags, Holder};
use super::values::{self, Read};

pub(super) fn apply(sentence: &str, out: &mut Vec<Found>) {
    plans(sentence, out);
    cancelled_plans(sentence, out);
    quantities(sentence, out);
    ages(sentence, out);
    dates(sentence, out);
    statuses(sentence, out);
    roles(sentence, out);
    headquarters(sentence, out);
    favourites(sentence, out);
    pet_names(sentence, out);
    partner_names(sentence, out);
    employer_and_job(sentence, out);
}

fn patterns(
    cell: &'static OnceLock<Vec<Option<Regex>>>,
    sources: &[&str],
) -> &'static [Option<Regex>] {
    cell.get_or_init(|| scan::compile_all(sources))
}

fn each_match<'t>(
    regexes: &'static [Option<Regex>],
    text: &'t str,
) -> impl Iterator<Item = (usize, Captures<'t>)> + 't {
    regexes
        .iter()
        .enumerate()
        .filter_map(|(i, re)| re.as_ref().map(|re| (i, re)))
        .flat_map(move |(i, re)| re.captures_iter(text).map(move |c| (i, c)))
}

/// The holder at `at`, if the sentence asserts it; a dropped subject needs a quiet tail after
/// `value_end`.
fn asserted(sentence: &str, at: usize, plan: bool, value_end: usize) -> Option<Holder> {
    let h = holder(sentence, at, plan)?;
    if blocked_before(sentence, at, plan) {
        return None;
    }
    if h.dropped && !values::quiet_tail(sentence, value_end) {
        return None;
    }
    Some(h)
}

/// The holder of a possessed noun at `at` ("我的房租" → the speaker).
fn owner(sentence: &str, at: usize) -> Option<Holder> {
    let before = sentence.get(..at)?;
    let without_de = before.strip_suffix('的').unwrap_or(before);
    holder(sentence, without_de.len(), false)
}

/// Time words a plan's qualifier keeps.
#[rustfmt::skip]
const PLAN_TIME_WORDS: &[&str] = &[
    "明年", "今年", "下个月", "下周", "下星期", "下礼拜", "年底", "月底", "暑假", "寒假", "国庆", "春节", "五一", "十一", "周末",
    "春天", "夏天", "秋天", "冬天", "圣诞节", "元旦", "蜜月", "年初", "下半年", "上半年", "假期", "长假", "中秋", "端午", "清明",
];

pub(super) fn plan_qualifier(sentence: &str, moving: bool) -> String {
    let mut words: Vec<String> = vec![if moving { "搬家" } else { "旅行" }.to_string()];
    for (word, tag) in tags(sentence) {
        let month = word.ends_with('月') && word.chars().count() <= 3 && tag == "m";
        if PLAN_TIME_WORDS.contains(&word.as_str()) || month {
            words.push(word);
        } else if tag == "t" {
            // Split compound time words jieba keeps whole ("明年春天").
            for t in PLAN_TIME_WORDS {
                if word.contains(t) {
                    words.push((*t).to_string());
                }
            }
        }
    }
    normalize::qualifier(words.iter().map(String::as_str))
}

/// "我打算明年去新疆", "明年春天的旅行改去云南了", "我下个月要搬到上海".
fn plans(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?:打算|计划|准备|将要|要|预计|决定|安排|想好了|定了)(?P<when>[^，。！？；、,.!?\s]{0,8}?)(?:去|到|前往|飞去|飞往|飞到)(?:一趟)?",
        r"(?:打算|计划|准备|将要|要|快要|决定)(?:[^，。！？；、,.!?\s]{0,6}?)(?:搬到|搬去|搬家到|移居到?|移民到?)(?:了)?",
        r"(?:旅行|旅游|度假|蜜月|行程|目的地|出游)(?:的目的地)?(?:现在|已经|也)?(?:改成了?去?|改去了?|换成了?去?|定在了?|是|改为|变成了?|去|改到了?)",
        r"(?:改去|改成去|换成去|改为去)",
        r"(?:明年|今年|年底|年初|暑假|寒假|国庆|春节|五一|十一|春天|夏天|秋天|冬天|圣诞节|元旦|假期|长假|下个月|下半年|上半年|中秋|端午|清明|蜜月)[^，。！？；、,.!?\s]{0,6}?(?:还是|还|也|就|都|照样|照旧)?(?P<go>去|飞去|前往|飞往|飞到)",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let Some(whole) = caps.get(0) else { continue };
        let moving_words = caps
            .name("when")
            .is_some_and(|w| w.as_str().contains(['搬', '移']));
        if index == 0 && moving_words {
            continue;
        }
        // "我要去…" is a plan only with a trip or a time of year around it ("明年春天的计划变了，
        // 我要去稻城亚丁"), not "我要去超市".
        let bare_want =
            index == 0 && whole.as_str().starts_with(['要', '将']) && !trip_context(sentence);
        let place = if bare_want {
            values::place(sentence, whole.end())
        } else {
            values::place_after_verb(sentence, whole.end())
        };
        let Some(place) = place else {
            continue;
        };
        let h = if index == 4 {
            let go = caps.name("go").map_or(whole.start(), |g| g.start());
            asserted(sentence, go, true, place.end)
        } else if index == 2 {
            let third = holder(sentence, whole.start(), true)
                .is_some_and(|h| h.subject != Subject::Speaker && !h.dropped);
            if third || blocked_before(sentence, whole.start(), true) {
                continue;
            }
            Some(Holder {
                subject: Subject::Speaker,
                negated: false,
                dropped: false,
            })
        } else {
            asserted(sentence, whole.start(), true, place.end)
        };
        let Some(h) = h else { continue };
        out.push(Found {
            subject: h.subject,
            slot: Slot::Plan,
            qualifier: plan_qualifier(sentence, index == 1),
            value: place.text,
            negated: h.negated,
            at: whole.start(),
        });
    }
}

/// Words that make "要去X" a trip ("旅行", "计划", a time of year).
fn trip_context(sentence: &str) -> bool {
    [
        "旅行", "旅游", "度假", "行程", "计划", "出游", "蜜月", "假期",
    ]
    .iter()
    .chain(PLAN_TIME_WORDS)
    .any(|w| sentence.contains(w))
}

/// "去喀纳斯的旅行取消了", "取消了去大理的行程": a trip called off.
fn cancelled_plans(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?:去|到)(?P<v>[^，。！？；、,.!?\s的]{1,8}?)的(?:旅行|旅游|行程|计划|度假|蜜月|出游)(?:已经|也|被|我们|我)*(?:取消|泡汤|黄|作废|搁浅|不去)了",
        r"(?:取消了?|推掉了?|放弃了?)(?:去|到)(?P<v>[^，。！？；、,.!?\s的]{1,8}?)的(?:旅行|旅游|行程|计划|度假|蜜月|出游)",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(v)) = (caps.get(0), caps.name("v")) else {
            continue;
        };
        if !values::is_place_after_verb(v.as_str()) || blocked_before(sentence, whole.start(), true)
        {
            continue;
        }
        let Some(h) = holder(sentence, whole.start(), true) else {
            continue;
        };
        out.push(Found {
            subject: h.subject,
            slot: Slot::Plan,
            qualifier: plan_qualifier(sentence, false),
            value: v.as_str().to_string(),
            negated: true,
            at: whole.start(),
        });
    }
}

/// "我每周跑17公里", "我月薪两万", "我有两个孩子", "一杯咖啡要30块".
fn quantities(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<per>每(?:个)?(?:天|日|周|星期|礼拜|月|年|晚)|一(?:个)?(?:天|周|星期|礼拜|月|年))?(?:都|要|能|会|大概|差不多|至少|基本上|平均|只)*(?P<verb>跑步|跑|走路|步行|走|游泳|游|骑车|骑|开车|读|看|喝|抽|睡|工作|上班|赚|挣|花|存|吃|学习|学|练习|练|写|健身|锻炼|加班|背)(?:了|到了?)?(?:大概|差不多|至少|将近|快|近|约|超过)?(?P<num>{NUMZH})(?P<unit>个小时|小时|公里|千米|英里|米|分钟|本书|本|杯咖啡|杯|根烟|根|支|包|次|天|元|块钱|块|万|千|斤|公斤|页|篇|首|部|集|个|瓶|趟|步|圈|节课|节|道|顿)",
        r"(?P<what>房租|月租|租金|月薪|年薪|工资|薪水|收入|体重|身高|房贷|预算|存款|月收入|年收入)(?:现在|目前|已经|也)?(?:涨到了?|降到了?|涨了|变成了?|是|有|为|每个?月|一个月|大概|差不多|才|只有|不到|超过|达到了?)*(?P<num>{NUMZH})(?P<unit>万|千|元|块钱?|公斤|斤|kg|厘米|cm|米)?",
        r"有(?P<num>{NUMZH})(?:个|只|条|位|名|套|辆)(?P<what>孩子|儿子|女儿|猫|狗|房子|车|兄弟姐妹|哥哥|姐姐|弟弟|妹妹|宠物|小孩)",
        r"(?P<what>[^，。！？；、,.!?\s]{1,8}?)(?:现在|已经)?(?:要|卖|涨到了?|涨价到|降到了?|降价到)(?P<num>{NUMZH})(?:块钱?|元|美元|欧元|刀)",
        r"(?P<per>每(?:个)?(?:天|日|周|星期|礼拜|月|年)|一(?:个)?(?:周|星期|月|年))?的?(?P<what>跑量|跑步量|跑步里程|骑行量|骑行里程|骑车里程|游泳量|步行量|步数|阅读量|训练量|运动量)(?:现在|目前|已经|也)*(?:是|有|达到了?|在|涨到了?|增加到了?|提高到了?|降到了?|变成了?|为)(?:大概|差不多|将近|约)?(?P<num>{NUMZH})(?P<unit>公里|千米|英里|米|本书|本|页|个小时|小时|分钟|步|次)",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let found = match index {
            0 => counted(sentence, &caps),
            1 => measured(sentence, &caps),
            2 => owned(sentence, &caps),
            3 => priced(sentence, &caps),
            _ => activity_amount(sentence, &caps),
        };
        out.extend(found);
    }
}

/// A period as a qualifier term: "每个月", "一个月", "每月" → "月"; "一周", "每星期" → "周".
fn canonical_period(per: &str) -> String {
    let bare = per
        .trim_start_matches(['每', '一'])
        .trim_start_matches('个');
    match bare {
        "星期" | "礼拜" => "周".to_string(),
        "日" => "天".to_string(),
        other => other.to_string(),
    }
}

/// The period a clause counts over when it is not next to the verb ("每个星期我都跑…").
fn period_in(sentence: &str, at: usize) -> Option<&'static str> {
    let before = sentence.get(..at)?.trim_end_matches(is_clause_mark);
    let clause = before.rsplit(is_clause_mark).next().unwrap_or(before);
    for (marker, period) in [
        ("每天", "天"),
        ("每日", "天"),
        ("每周", "周"),
        ("每个星期", "周"),
        ("每星期", "周"),
        ("每礼拜", "周"),
        ("每个月", "月"),
        ("每月", "月"),
        ("每年", "年"),
        ("每晚", "晚"),
        ("一周", "周"),
        ("一个月", "月"),
        ("一年", "年"),
        ("一天", "天"),
    ] {
        if clause.contains(marker) {
            return Some(period);
        }
    }
    None
}

fn canonical_verb(verb: &str) -> &str {
    match verb {
        "跑步" => "跑",
        "游泳" => "游",
        "骑车" => "骑",
        "走路" | "步行" => "走",
        "练习" => "练",
        "学习" => "学",
        other => other,
    }
}

fn unit_words(unit: &str) -> Vec<&str> {
    match unit {
        "本书" => vec!["本", "书"],
        "杯咖啡" => vec!["杯", "咖啡"],
        "根烟" => vec!["根", "烟"],
        "节课" => vec!["节", "课"],
        "块钱" | "块" | "元" | "万" | "千" => vec!["元"],
        other => vec![other],
    }
}

/// Verbs a counted quantity is done with.
const COUNT_VERBS: &[&str] = &[
    "跑步", "跑", "走路", "步行", "走", "游泳", "游", "骑车", "骑", "开车", "读", "看", "喝", "抽",
    "睡", "工作", "上班", "赚", "挣", "花", "存", "吃", "学习", "学", "练习", "练", "写", "健身",
    "锻炼", "加班", "背",
];

/// Units a counted quantity is measured in, longest first.
#[rustfmt::skip]
const COUNT_UNITS: &[&str] = &[
    "个小时", "小时", "公里", "千米", "英里", "分钟", "本书", "杯咖啡", "根烟", "节课", "块钱", "公斤", "米", "本", "杯", "根",
    "支", "包", "次", "天", "元", "块", "斤", "页", "篇", "首", "部", "集", "个", "瓶", "趟", "步", "圈", "节", "道",
    "顿",
];

/// The qualifier a quantity statement answering a question would get ("我每周跑多少公里？"
/// → the verb, the unit after 多少 and the period).
pub(super) fn quantity_qualifier(sentence: &str) -> String {
    for (what, words) in [
        ("月薪", vec!["工资", "月"]),
        ("月收入", vec!["工资", "月"]),
        ("年薪", vec!["工资", "年"]),
        ("年收入", vec!["工资", "年"]),
        ("工资", vec!["工资"]),
        ("薪水", vec!["工资"]),
        ("收入", vec!["工资"]),
        ("房租", vec!["房租", "月"]),
        ("月租", vec!["房租", "月"]),
        ("租金", vec!["房租", "月"]),
        ("房贷", vec!["房贷", "月"]),
        ("体重", vec!["体重"]),
        ("身高", vec!["身高"]),
    ] {
        if sentence.contains(what) {
            return normalize::qualifier(words);
        }
    }
    let mut words: Vec<String> = Vec::new();
    let asked_at = sentence.find("多少").or_else(|| sentence.find('几'));
    let verb = COUNT_VERBS
        .iter()
        .filter_map(|v| sentence.find(v).map(|i| (i, *v)))
        .min_by_key(|&(i, v)| (i, std::cmp::Reverse(v.len())));
    match verb.map(|(_, v)| canonical_verb(v)) {
        Some("赚" | "挣") => words.push("工资".to_string()),
        Some(v) => words.push(v.to_string()),
        None => {}
    }
    if let Some(at) = asked_at {
        let after = sentence.get(at..).unwrap_or("");
        let after = after.trim_start_matches("多少").trim_start_matches('几');
        if let Some(unit) = COUNT_UNITS.iter().find(|u| after.starts_with(*u)) {
            if words.first().is_none_or(|w| w != "工资") {
                words.extend(unit_words(unit).into_iter().map(str::to_string));
            }
        }
        for what in ["孩子", "儿子", "女儿", "猫", "狗", "房子", "车", "宠物"] {
            if after.contains(what) {
                words.push(what.to_string());
            }
        }
    }
    words.extend(period_in(sentence, sentence.len()).map(str::to_string));
    normalize::qualifier(words.iter().map(String::as_str))
}

fn counted(sentence: &str, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let unit = caps.name("unit")?;
    let h = asserted(sentence, whole.start(), false, unit.end())?;
    let verb = canonical_verb(caps.name("verb")?.as_str());
    // A count without a period ("我看了一本书") is an event, not a standing fact.
    let per = caps
        .name("per")
        .map(|p| canonical_period(p.as_str()))
        .or_else(|| period_in(sentence, whole.start()).map(str::to_string))?;
    let mut words: Vec<String> = Vec::new();
    if matches!(verb, "赚" | "挣") {
        words.push("工资".to_string());
    } else {
        words.push(verb.to_string());
        words.extend(unit_words(unit.as_str()).into_iter().map(str::to_string));
    }
    words.push(per);
    Some(Found {
        subject: h.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: sentence.get(num.start()..unit.end())?.to_string(),
        negated: h.negated,
        at: whole.start(),
    })
}

/// "我每周的跑量是42公里": the activity's verb, unit and period key it like "我每周跑42公里".
fn activity_amount(sentence: &str, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let unit = caps.name("unit")?;
    let h = owner(sentence, whole.start())?;
    if blocked_before(sentence, whole.start(), false) {
        return None;
    }
    let verb = match caps.name("what")?.as_str() {
        "跑量" | "跑步量" | "跑步里程" => "跑",
        "骑行量" | "骑行里程" | "骑车里程" => "骑",
        "游泳量" => "游",
        "步行量" | "步数" => "走",
        "阅读量" => "读",
        _ => "练",
    };
    let per = caps
        .name("per")
        .map(|p| canonical_period(p.as_str()))
        .or_else(|| period_in(sentence, whole.start()).map(str::to_string))?;
    let mut words: Vec<String> = vec![verb.to_string()];
    words.extend(unit_words(unit.as_str()).into_iter().map(str::to_string));
    words.push(per);
    Some(Found {
        subject: h.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: sentence.get(num.start()..unit.end())?.to_string(),
        negated: h.negated,
        at: whole.start(),
    })
}

fn measured(sentence: &str, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let end = caps.name("unit").map_or(num.end(), |u| u.end());
    let h = owner(sentence, whole.start())?;
    if blocked_before(sentence, whole.start(), false)
        || (h.dropped && !values::quiet_tail(sentence, end))
    {
        return None;
    }
    let what = caps.name("what")?.as_str();
    let period = period_in(sentence, whole.start()).or_else(|| period_in(sentence, end));
    let words: Vec<&str> = match what {
        "月薪" | "月收入" => vec!["工资", "月"],
        "年薪" | "年收入" => vec!["工资", "年"],
        "工资" | "薪水" | "收入" => vec!["工资", period.unwrap_or("")],
        "房租" | "月租" | "租金" => vec!["房租", "月"],
        "房贷" => vec!["房贷", "月"],
        other => vec![other],
    };
    Some(Found {
        subject: h.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words),
        value: sentence.get(num.start()..end)?.to_string(),
        negated: h.negated,
        at: whole.start(),
    })
}

fn owned(sentence: &str, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let what = caps.name("what")?;
    let h = asserted(sentence, whole.start(), false, what.end())?;
    Some(Found {
        subject: h.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier([what.as_str()]),
        value: sentence.get(num.start()..what.end())?.to_string(),
        negated: h.negated,
        at: whole.start(),
    })
}

fn priced(sentence: &str, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    if blocked_before(sentence, whole.start(), false) {
        return None;
    }
    let what = caps.name("what")?.as_str();
    let item = tags(what)
        .into_iter()
        .rev()
        .find(|(_, t)| t.starts_with('n'))
        .map(|(w, _)| w)?;
    Some(Found {
        subject: Subject::Speaker,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(["价格", item.as_str()]),
        value: sentence.get(num.start()..whole.end())?.to_string(),
        negated: false,
        at: whole.start(),
    })
}

/// "我今年28岁", "我儿子五岁了".
fn ages(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?:今年|现在|已经|刚|刚刚|都|也)*(?:满)?(?P<num>{NUMZH})(?:周)?岁(?:了|啦)?",
        r"今年(?:满)?(?P<num>{NUMZH})(?:了|啦)?(?:[，。！,.!]|$)",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(num)) = (caps.get(0), caps.name("num")) else {
            continue;
        };
        let next = sentence.get(whole.end()..).and_then(|r| r.chars().next());
        if next.is_some_and(|c| matches!(c, '的' | '时' | '那' | '以' | '前' | '生' | '之'))
        {
            continue;
        }
        let Some(h) = asserted(sentence, whole.start(), false, whole.end()) else {
            continue;
        };
        let years = normalize::number_key(num.as_str()).and_then(|n| n.parse::<u32>().ok());
        if !years.is_some_and(|y| (1..=120).contains(&y)) {
            continue;
        }
        let value_end = sentence
            .get(num.end()..)
            .and_then(|r| r.find('岁').map(|i| num.end() + i + '岁'.len_utf8()))
            .filter(|&e| e <= whole.end())
            .unwrap_or(num.end());
        let Some(value) = sentence.get(num.start()..value_end) else {
            continue;
        };
        out.push(Found {
            subject: h.subject,
            slot: Slot::Age,
            qualifier: String::new(),
            value: value.to_string(),
            negated: false,
            at: whole.start(),
        });
    }
}

/// Words dropped from the front of a thing's name.
#[rustfmt::skip]
const THING_LEADS: &[&str] = &[
    "我们的", "我们", "我的", "我", "咱们的", "咱们", "那个", "这个", "这次", "下次", "原定的", "把", "的", "现在", "目前",
    "明天的", "明天", "今天的", "今天", "公司的", "你的", "大家的", "那场", "这场", "下周的", "本周的", "原来的",
];

/// A thing's name without possessives and determiners ("我的牙医预约" → "牙医预约").
pub(super) fn thing_name(np: &str) -> Option<String> {
    let mut text = clause::without_lead_ins(np);
    let mut owner = None;
    if let Some(i) = text.rfind('的') {
        let after = text.get(i + '的'.len_utf8()..).unwrap_or("");
        if after.chars().count() >= 2 {
            owner = other_owner(text.get(..i).unwrap_or(""));
            text = after;
        }
    }
    loop {
        let lead = THING_LEADS
            .iter()
            .filter(|l| text.starts_with(*l) && text.len() > l.len())
            .max_by_key(|l| l.len());
        match lead {
            Some(l) => text = text.get(l.len()..).unwrap_or(""),
            None => break,
        }
    }
    if text.is_empty() {
        return None;
    }
    let event = canonical_event(text);
    Some(match owner {
        // "我姐的牙医预约": someone else's event is another thing than the speaker's.
        Some(owner) => format!("{owner}的{event}"),
        None => event,
    })
}

/// The owner before 的 when it is someone other than the speaker ("我姐" → "姐", "小王").
fn other_owner(before: &str) -> Option<String> {
    let trimmed = clause::strip_openers(before.trim());
    let bare = ["我们", "我", "咱们", "咱"]
        .iter()
        .find_map(|p| trimmed.strip_prefix(p))
        .unwrap_or(trimmed);
    let pronoun = ["他", "她", "他们", "她们", "你", "你们", "您"].contains(&bare);
    let relation = pronoun || super::super::lexicon::RELATIONS_ZH.contains(&bare);
    let dated = date_at(bare, 0).is_some();
    (relation || (!dated && values::person_name(bare).is_some())).then(|| bare.to_string())
}

/// Providers an appointment is named after: "看牙", "牙科预约", "牙医的预约" are all "牙医预约".
const PROVIDERS_ZH: &[(&str, &str)] = &[
    ("牙医", "牙医"),
    ("牙科", "牙医"),
    ("看牙", "牙医"),
    ("洗牙", "牙医"),
    ("医生", "医生"),
    ("看病", "医生"),
    ("中医", "中医"),
    ("眼科", "眼科"),
    ("皮肤科", "皮肤科"),
    ("兽医", "兽医"),
    ("理发", "理发"),
    ("心理医生", "心理医生"),
    ("心理咨询", "心理咨询"),
];

/// An event's canonical name: an appointment with a provider is "<provider>预约" whichever
/// words name it ("看牙", "牙科预约", "看牙的时间").
fn canonical_event(name: &str) -> String {
    let core = name
        .trim_end_matches("的时间")
        .trim_end_matches("时间")
        .trim_end_matches("的日子")
        .trim_end_matches("日期")
        .trim_end_matches("的预约")
        .trim_end_matches("预约");
    let core = core
        .strip_prefix('看')
        .filter(|c| !c.is_empty())
        .unwrap_or(core);
    let provider = PROVIDERS_ZH
        .iter()
        .find(|(word, _)| core == *word || core == word.trim_start_matches('看'))
        .map(|(_, p)| *p);
    match provider {
        Some(p) => format!("{p}预约"),
        None => name.to_string(),
    }
}

/// The provider named before an appointment in the sentence ("牙医把我的预约改到…").
fn provider_in(text: &str) -> Option<&'static str> {
    PROVIDERS_ZH
        .iter()
        .find(|(word, _)| text.contains(word))
        .map(|(_, p)| *p)
}

/// "会议改到周四了", "面试定在下周一上午十点", "我约了4月2日看牙".
fn dates(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<ev>[^，。！？；、,.!?\s：:]{0,8}?{EVENTZH})(?:的)?(?:时间|日期|日子)?(?:现在|已经|也|被|还|仍然|依然|仍)*(?:改到了?|改成了?|改为|改在了?|调整到了?|调整为|调到了?|推迟到了?|延期到了?|延后到了?|推到了?|提前到了?|挪到了?|换到了?|定在了?|定于|安排在了?|约在了?|放在了?|在|是)",
        r"(?:约了|约在了?|预约了|预约在|订了|定了|安排了|挂了|挂号了?|约好了?)",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let Some(whole) = caps.get(0) else { continue };
        if blocked_before(sentence, whole.start(), false) {
            continue;
        }
        let Some(date) = date_at(sentence, whole.end()) else {
            continue;
        };
        let event = match (index, caps.name("ev")) {
            (0, Some(ev)) => thing_name(ev.as_str()).map(|e| named_for_provider(e, ev.as_str())),
            _ => event_after(sentence, date.end),
        };
        let Some(event) = event else { continue };
        out.push(Found {
            subject: Subject::Thing(event),
            slot: Slot::Date,
            qualifier: String::new(),
            value: date.text,
            negated: whole.as_str().contains('不'),
            at: whole.start(),
        });
    }
    cancelled_dates(sentence, out);
}

/// A bare "预约" named after the provider the words around it name ("牙医把我的预约…").
fn named_for_provider(event: String, words: &str) -> String {
    match provider_in(words) {
        Some(p) if event == "预约" => format!("{p}预约"),
        _ => event,
    }
}

/// The event named right after a date ("约了4月2日看牙" → 牙医预约).
fn event_after(sentence: &str, pos: usize) -> Option<String> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| scan::compile(r"^的?(?P<ev>看\p{Han}{1,2}|{EVENTZH})"))
        .as_ref()?;
    let caps = re.captures(sentence.get(pos..)?)?;
    let ev = caps.name("ev")?.as_str();
    Some(named_for_provider(thing_name(ev)?, ev))
}

/// "3月14日的牙医预约我取消了", "明天的会议取消了": the event no longer happens then.
fn cancelled_dates(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<ev>[^，。！？；、,.!?\s：:]{0,12}?{EVENTZH})(?:我|我们)?(?:已经|也|被|给|都)*(?:取消|推掉|退掉|黄|泡汤|不去)了",
        r"(?:取消了?|推掉了?|退掉了?)(?P<ev>[^，。！？；、,.!?\s：:]{0,12}?{EVENTZH})",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(ev)) = (caps.get(0), caps.name("ev")) else {
            continue;
        };
        if blocked_before(sentence, ev.end(), false) {
            continue;
        }
        let Some(event) = thing_name(ev.as_str()).map(|e| named_for_provider(e, ev.as_str()))
        else {
            continue;
        };
        let value = date_at(sentence, ev.start())
            .map(|d| d.text)
            .unwrap_or_default();
        out.push(Found {
            subject: Subject::Thing(event),
            slot: Slot::Date,
            qualifier: String::new(),
            value,
            negated: true,
            at: whole.start(),
        });
    }
}

/// A Chinese day or time at byte `pos` ("周四", "下周一上午十点", "5月3号").
pub(super) fn date_at(sentence: &str, pos: usize) -> Option<Read> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| {
            Regex::new(r"^(?:(?:(?:下下?个?|这个?|本|上个?)?(?:周|星期|礼拜|週)[一二三四五六日天末1-7]|大后天|明天|后天|今天|今晚|明晚|月底|月初|下个?月|下周|(?:\d{4}年)?(?:\d{1,2}|[一二三四五六七八九十]+)月(?:\d{1,2}|[一二三四五六七八九十]+)[日号]|(?:\d{1,2}|[一二三四五六七八九十]+)[日号])(?:(?:上午|下午|晚上|早上|中午|傍晚|凌晨)?(?:\d{1,2}|[一二三四五六七八九十]+)点(?:半|\d{1,2}分|[一二三四五六七八九十]+分|钟)?)?|(?:上午|下午|晚上|早上|中午|傍晚|凌晨)?(?:\d{1,2}|[一二三四五六七八九十]+)点(?:半|\d{1,2}分|[一二三四五六七八九十]+分|钟)?)").ok()
        })
        .as_ref()?;
    let rest = sentence.get(pos..)?;
    let m = re.find(rest)?;
    (!m.as_str().is_empty()).then(|| Read {
        text: m.as_str().to_string(),
        end: pos + m.end(),
    })
}

/// "项目现在进入了测试阶段", "项目已经上线了".
fn statuses(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<np>[^，。！？；、,.!?\s：:]{0,8}?{PROJECTZH})(?:现在|目前|已经|已|正式|刚刚?|终于|也|还|仍然|依然)*(?:在|处于|进入了?|到了|转入了?|进行到了?|推进到了?|来到了?|进到了?|到|迈入了?|走到了?|是)(?P<v>[^，。！？；、,.!?\s]{1,8}?(?:阶段|期))",
        r"(?P<np>[^，。！？；、,.!?\s：:]{0,8}?{PROJECTZH})(?:现在|目前|已经|正|还|仍然)*(?:在做|正在做|在进行|正在进行|在搞|忙着做?|进行)(?P<v>[^，。！？；、,.!?\s的了]{2,8})",
        r"(?P<np>[^，。！？；、,.!?\s：:]{0,8}?{PROJECTZH})(?:现在|目前|已经|正式|刚刚?|终于|也|还|都)*(?P<neg>没有?|还没)?(?P<v>完成|结束|完工|上线|暂停|取消|延期|搁置|停了|交付|发布|启动|黄了|收尾|验收|结项|立项|叫停|终止|停工|开工)(?:了|啦)?(?:[，。！？；、,.!?;\s]|$)",
        r"[，,]\s*(?:现在|目前|已经|已|正式|也|又|随后|接着|然后|并)*(?:进入了?|到了|转入了?|迈入了?|处于|来到了?)(?P<v>[^，。！？；、,.!?\s]{1,8}?(?:阶段|期))",
        r"(?P<np>[^，。！？；、,.!?\s：:]{0,8}?{PROJECTZH})的?(?:最新)?(?:进展|进度|状态|情况)(?:是|[：:，,])\s*(?:现在|目前|已经)?(?:是|在|处于|到了|进入了?)?(?P<v>[^，。！？；、,.!?\s]{1,8}?(?:阶段|期))",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(v)) = (caps.get(0), caps.name("v")) else {
            continue;
        };
        // "苍鹭项目完成了需求分析，进入设计阶段": a clause without a subject goes on about the
        // project the clause before named.
        let Some((np_start, np)) = caps
            .name("np")
            .map(|m| (m.start(), m.as_str()))
            .or_else(|| project_before(sentence, whole.start()))
        else {
            continue;
        };
        let Some(subject) = thing_name(np) else {
            continue;
        };
        // "要是苍鹭项目…", "听说苍鹭项目…": the words before the project's own name may block it.
        let named_at = np_start + np.find(subject.as_str()).unwrap_or(0);
        if blocked_before(sentence, named_at, false) || clause::opens_hypothetically(np) {
            continue;
        }
        // "需求分析阶段" is the phase "需求分析", as "the QA phase" is "QA".
        let phase = v.as_str();
        let phase = phase
            .strip_suffix("阶段")
            .filter(|p| !p.is_empty())
            .unwrap_or(phase);
        out.push(Found {
            subject: Subject::Thing(subject),
            slot: Slot::Status,
            qualifier: String::new(),
            value: phase.to_string(),
            negated: caps.name("neg").is_some(),
            at: whole.start(),
        });
    }
}

/// The project the clause before byte `at` opens with, and where it starts.
fn project_before(sentence: &str, at: usize) -> Option<(usize, &str)> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| scan::compile(r"(?P<np>[^，。！？；、,.!?\s：:]{0,8}?{PROJECTZH})"))
        .as_ref()?;
    let before = sentence.get(..at)?.trim_end_matches(clause::is_clause_mark);
    let clause_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| clause::is_clause_mark(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let clause = before.get(clause_start..)?;
    let m = re.captures(clause)?.name("np")?;
    Some((clause_start + m.start(), m.as_str()))
}

/// The subject for an organization written in Chinese: 公司 and the like are things, a name
/// is named.
fn org_subject(raw: &str) -> Option<Subject> {
    let mut text = clause::without_lead_ins(raw);
    for lead in ["我们的", "我们", "我的", "咱们的", "咱们", "本", "我"] {
        if let Some(rest) = text.strip_prefix(lead) {
            text = rest;
            break;
        }
    }
    let mut text = text.trim_end_matches('的');
    // "海川船舶现在总部在…": time words after the name are not part of it.
    while let Some(rest) = [
        "现在", "目前", "如今", "已经", "已", "也", "还", "仍然", "依然", "把", "将", "宣布",
        "表示", "正式",
    ]
    .iter()
    .find_map(|t| text.strip_suffix(t))
    {
        text = rest.trim_end_matches('的');
    }
    if text.is_empty()
        || ["他", "她", "你", "它", "这", "那"]
            .iter()
            .any(|p| text.starts_with(p))
    {
        return None;
    }
    let generic = [
        "公司", "单位", "集团", "企业", "工厂", "学校", "团队", "部门", "医院",
    ];
    Some(if generic.contains(&text) {
        Subject::Thing(text.to_string())
    } else {
        Subject::Named(text.to_string())
    })
}

/// "腾讯的CEO是张伟", "张伟接任公司总经理", "公司任命王芳为新的CTO".
fn roles(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)的?(?:新上任的?|刚上任的?|新任的?|新一任的?|新的?|现任的?|现在的)?(?P<role>{ROLEZH})(?:现在|目前|已经|还|仍然|依然)?(?:是|换成了?|变成了?|成了)",
        r"(?P<name>\p{Han}{2,4}|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:已经|正式|刚刚?|近日|还|仍然|依然|仍|也|一直)*(?:成为了?|出任了?|担任了?|接任了?|当上了?|升任了?|被任命为|被提拔为|升为|是|当选为?)(?P<org>[^，。！？；、,.!?\s]{1,10}?)的?(?:新任|新|新一任|现任)?(?P<role>{ROLEZH})",
        r"(?P<org>[^，。！？；、,.!?\s]{1,10}?)(?:已经|正式|近日)?(?:任命|聘请|提拔|选举|宣布|请来)(?:了)?(?P<name>\p{Han}{2,4}?|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:为|担任|出任|做)(?:公司的?)?(?:新任|新的|新一任)?(?P<role>{ROLEZH})",
        r"(?P<name>\p{Han}{2,4}|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:已经|正式)?(?P<gone>卸任|辞去|离任|辞职|被免去|被解雇|下台)(?:了)?(?P<org>[^，。！？；、,.!?\s]{0,10}?)的?(?P<role>{ROLEZH})",
        r"(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)(?:现在|目前|已经|正式)?由(?P<name>\p{Han}{2,4}?|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:来)?(?:担任|出任|接任|执掌|领导|掌舵|负责)(?P<role>{ROLEZH})?",
        r"(?P<name>\p{Han}{2,4}?|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:已经|已|正式|近日)*(?:接替|取代|替代|顶替)了?(?:\p{Han}{2,4}?|[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)?)(?:成为了?|出任了?|担任了?|任)(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)的?(?:新任|新一任|新)?(?P<role>{ROLEZH})",
        r"(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)(?:已经|正式|最近)?(?:换了|有了|迎来了?|来了|任命了|请来了|选出了)(?:一位|一个|一名)?(?:新的?|新任)(?P<role>{ROLEZH})(?:[，,：:]\s*)(?:是|叫|由)?",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let Some(whole) = caps.get(0) else { continue };
        let name = match caps.name("name") {
            Some(n) => role_holder_name(n.as_str()),
            None => values::span(sentence, whole.end(), &["担任", "接任", "出任"], true)
                .and_then(|r| values::person_name(&r.text)),
        };
        // "陆承泽接替唐明远成为…": the one replaced is no holder.
        let replaced = caps.name("name").is_some_and(|n| {
            let held = name.as_deref().unwrap_or("");
            let at = n.start() + n.as_str().find(held).unwrap_or(0);
            let before = sentence.get(..at).unwrap_or("");
            ["接替", "取代", "接任", "替代", "代替", "顶替"]
                .iter()
                .any(|w| before.ends_with(w) || before.ends_with(&format!("{w}了")))
        });
        if replaced {
            continue;
        }
        // "要是许嘉禾当上…": the name's run may hold what blocks it, so the line is read up to
        // where the name itself starts.
        let named_at = caps.name("name").map_or(whole.start(), |n| {
            let held = name.as_deref().unwrap_or("");
            n.as_str()
                .find(held)
                .filter(|_| !held.is_empty())
                .map_or(n.start(), |i| n.start() + i)
        });
        let org_hypothetical = caps
            .name("org")
            .is_some_and(|o| clause::opens_hypothetically(o.as_str()));
        if blocked_before(sentence, named_at, false) || org_hypothetical {
            continue;
        }
        let org = caps.name("org").map_or("", |m| m.as_str());
        let organization = if org.is_empty() && index == 3 {
            Some(Subject::Thing("公司".to_string()))
        } else {
            org_subject(org)
        };
        // "鸣鹤科技由陆承泽执掌": whoever runs an organization is its CEO.
        let role = caps
            .name("role")
            .map_or_else(|| "ceo".to_string(), |r| canonical_role(r.as_str()));
        let (Some(name), Some(organization)) = (name, organization) else {
            continue;
        };
        out.push(Found {
            subject: organization,
            slot: Slot::Role,
            qualifier: role,
            value: name,
            negated: caps.name("gone").is_some(),
            at: whole.start(),
        });
    }
}

/// The name in a run that may start or end with time words ("昨天张伟" → "张伟", "张总现在"
/// → "张总").
fn role_holder_name(raw: &str) -> Option<String> {
    let mut raw = raw;
    for time in [
        "现在", "目前", "已经", "正式", "刚刚", "刚", "近日", "如今", "还", "仍然", "依然", "仍",
        "也", "一直",
    ] {
        raw = raw.strip_suffix(time).unwrap_or(raw);
    }
    if let Some(name) = values::person_name(raw) {
        return Some(name);
    }
    let chars: Vec<char> = raw.chars().collect();
    (2..=3).rev().find_map(|n| {
        let start = chars.len().checked_sub(n)?;
        let tail: String = chars.get(start..)?.iter().collect();
        values::person_name(&tail)
    })
}

/// "公司总部搬到了深圳", "腾讯总部在深圳".
fn headquarters(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)的?总部(?:现在|目前|已经|也|还|仍然|依然)*(?:设在了?|设于|位于|在|搬到了?|搬去了?|迁到了?|迁至|迁往|搬迁到了?|迁移到了?|落户在?|落户于)",
        r"(?P<org>[^，。！？；、,.!?\s：:]{1,10}?)(?:已经|已|正式)?(?:把|将)总部(?:搬到了?|迁到了?|迁至|迁往|设在了?|搬迁到了?)",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(org)) = (caps.get(0), caps.name("org")) else {
            continue;
        };
        let named_at = org_subject(org.as_str())
            .and_then(|s| match s {
                Subject::Named(n) | Subject::Thing(n) => org.as_str().find(n.as_str()),
                _ => None,
            })
            .map_or(org.start(), |i| org.start() + i);
        if blocked_before(sentence, named_at, false) || clause::opens_hypothetically(org.as_str()) {
            continue;
        }
        let (Some(subject), Some(place)) = (
            org_subject(org.as_str()),
            values::place(sentence, whole.end()),
        ) else {
            continue;
        };
        out.push(Found {
            subject,
            slot: Slot::Headquarters,
            qualifier: String::new(),
            value: place.text,
            negated: false,
            at: whole.start(),
        });
    }
}

/// "我最喜欢的饮料是X", "我最喜欢喝X", "X是我最喜欢的饮料".
fn favourites(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"最(?:喜欢|爱)的(?P<q>\p{Han}{1,4}?)(?:现在|目前)?(?:是|变成了?|换成了?|成了|就是|改成了?)",
        r"最(?:喜欢|爱)(?P<q>喝|吃|听|看|玩|去|穿|用|读)(?:的(?:是|就是)?)?",
        r"(?P<v>[^，。！？；、,.!?\s]{1,10}?)(?:现在|目前|已经)?(?P<neg>不再|已经不|不)?(?:是|成了|成为了?)(?:我|我们)(?:现在|目前)?最(?:喜欢|爱)(?:的(?P<q>\p{Han}{1,4})|(?P<qv>喝|吃|听|看|玩|穿|用|读)的)",
        r"(?:不再|不那么|没那么|不太|不怎么|不再那么|没有那么)(?:最)?(?:喜欢|爱)(?P<q>喝|吃|听|看|玩|去|穿|用|读)",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(q)) = (caps.get(0), caps.name("q").or_else(|| caps.name("qv")))
        else {
            continue;
        };
        let (value, h) = if index == 2 {
            let Some(v) = caps.name("v") else { continue };
            let mut text = clause::strip_openers(v.as_str()).to_string();
            if ["这", "这个", "它", "那", "那个", "这款", "这种", "这家"].contains(&text.as_str())
            {
                // "我现在只喝燕麦拿铁，这是我最喜欢的饮料": 这 stands for the drink just named.
                match drunk_before(sentence, v.start()) {
                    Some(named) => text = named,
                    None => continue,
                }
            }
            if blocked_before(sentence, whole.start(), false) || text.is_empty() {
                continue;
            }
            let h = Holder {
                subject: Subject::Speaker,
                negated: caps.name("neg").is_some(),
                dropped: false,
            };
            (text, h)
        } else {
            let Some(read) = values::phrase(sentence, whole.end()) else {
                continue;
            };
            let Some(h) = asserted(sentence, whole.start(), false, read.end) else {
                continue;
            };
            (read.text, h)
        };
        // "我已经不那么喜欢喝桂花乌龙了": no longer the favourite.
        let no_longer = index == 3;
        out.push(Found {
            subject: h.subject,
            slot: Slot::Preference,
            qualifier: canonical_preference(q.as_str().trim_end_matches('的')),
            value,
            negated: h.negated || no_longer,
            at: whole.start(),
        });
    }
}

/// What the clause before byte `at` says is drunk, eaten, heard or used ("只喝燕麦拿铁").
fn drunk_before(sentence: &str, at: usize) -> Option<String> {
    let before = sentence.get(..at)?.trim_end_matches(clause::is_clause_mark);
    let clause_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| clause::is_clause_mark(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let clause = before.get(clause_start..)?;
    let verb_end = [
        "喝",
        "吃",
        "听",
        "看",
        "玩",
        "用",
        "穿",
        "读",
        "迷上了",
        "爱上了",
        "喜欢上了",
    ]
    .iter()
    .filter_map(|v| clause.rfind(v).map(|i| i + v.len()))
    .max()?;
    values::phrase(sentence, clause_start + verb_end).map(|r| r.text)
}

/// "我们给猫改了名字，现在叫它小橘灯": a name given to the pet the sentence is about.
fn pet_names(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?:现在叫|叫它|叫他|叫她|它叫|她叫|他叫|它的名字是|名字叫|改名叫|改叫|改名为|改成了?|改为|新名字(?:是|叫|[：:])|名字[：:])",
    ];
    let species = SPECIES_ZH
        .iter()
        .filter_map(|s| sentence.find(s).map(|i| (i, *s)))
        .min_by_key(|&(i, s)| (i, std::cmp::Reverse(s.len())));
    let Some((species_at, species)) = species else {
        return;
    };
    // "猫咪有了新名字：月饼": a pet nobody is said to own is the speaker's; "我朋友家的猫" is not.
    if clause::owner_before(sentence, species_at) != Some(Subject::Speaker) {
        return;
    }
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let Some(whole) = caps.get(0) else { continue };
        if blocked_before(sentence, whole.start(), false) {
            continue;
        }
        let Some(name) = values::given_name(sentence, whole.end()) else {
            continue;
        };
        if SPECIES_ZH.contains(&name.text.as_str()) {
            continue;
        }
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Pet,
            qualifier: canonical_species(species),
            value: name.text,
            negated: false,
            at: whole.start(),
        });
    }
}

/// Cues that a sentence is about the speaker's love life.
const DATING_CUES_ZH: &[&str] = &[
    "对象",
    "男朋友",
    "女朋友",
    "男友",
    "女友",
    "恋爱",
    "约会",
    "在一起",
    "交往",
    "新欢",
    "另一半",
    "老公",
    "老婆",
    "相亲",
    "脱单",
];

/// "我现在有了新的对象，名字叫邵晓棠": a partner named in a sentence about the speaker's love
/// life.
fn partner_names(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [r"(?:名字叫做?|名叫|名字是|名字[：:]|叫做)"];
    let dating = DATING_CUES_ZH.iter().any(|c| sentence.contains(c));
    let pet = SPECIES_ZH.iter().any(|s| sentence.contains(s));
    if !dating || pet || !sentence.contains('我') {
        return;
    }
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let Some(whole) = caps.get(0) else { continue };
        // "我叫小明": the speaker's own name.
        let own_name = sentence
            .get(..whole.start())
            .is_some_and(|b| b.ends_with('我') || b.ends_with("我的"));
        if own_name || blocked_before(sentence, whole.start(), false) {
            continue;
        }
        let Some(name) = values::given_name(sentence, whole.end()) else {
            continue;
        };
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Partner,
            qualifier: String::new(),
            value: name.text,
            negated: false,
            at: whole.start(),
        });
    }
}

/// "我在医院当护士": an employer and a job at once.
fn employer_and_job(sentence: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"在(?P<org>[^在，。！？；、,.!?\s][^，。！？；、,.!?\s]{1,11}?)(?:当|做|担任|任)(?:一[名位个])?",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), sentence) {
        let (Some(whole), Some(org)) = (caps.get(0), caps.name("org")) else {
            continue;
        };
        let org_text = org.as_str().trim_start_matches("一家");
        if !values::is_org_between(org_text) {
            continue;
        }
        let Some(job) = values::job(sentence, whole.end(), true) else {
            continue;
        };
        let Some(h) = asserted(sentence, whole.start(), false, job.end) else {
            continue;
        };
        for (slot, value) in [
            (Slot::Employer, org_text.to_string()),
            (Slot::Job, job.text.clone()),
        ] {
            out.push(Found {
                subject: h.subject.clone(),
                slot,
                qualifier: String::new(),
                value,
                negated: h.negated,
                at: whole.start(),
            });
        }
    }
}
