//! What a question asks about: the slot, subject and qualifier a statement answering it would
//! have ("Which city do I live in now?" → the speaker's residence).

use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::lexicon::{
    canonical_preference, canonical_role, canonical_species, RELATIONS, RELATIONS_ZH, SPECIES,
    SPECIES_ZH,
};
use super::types::{Slot, Subject};
use super::{normalize, scan};

/// What a question asks about: its slot, subject and qualifier.
#[derive(Clone, Debug, PartialEq)]
pub struct Asked {
    pub subject: Subject,
    pub slot: Slot,
    pub qualifier: String,
}

/// The slots a question (or request) asks about; empty when it asks about no known slot.
pub fn asked(text: &str) -> Vec<Asked> {
    let text = scan::cut_at_char(text, 4096);
    let mut out: Vec<Asked> = Vec::new();
    for (_, sentence) in scan::sentence_spans(text) {
        let confirming = super::declarative::asked_statements(sentence);
        let found = if !confirming.is_empty() && is_question_sentence(sentence) {
            confirming
                .into_iter()
                .map(|s| ask(s.subject, s.slot, s.qualifier))
                .collect()
        } else if scan::is_chinese(sentence) {
            if !super::chinese::is_question(sentence) && !is_request(sentence) {
                continue;
            }
            chinese(sentence)
        } else {
            if !super::english::is_question_text(sentence) && !is_request(sentence) {
                continue;
            }
            english(sentence)
        };
        for a in found {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

fn is_question_sentence(sentence: &str) -> bool {
    if scan::is_chinese(sentence) {
        super::chinese::is_question(sentence)
    } else {
        super::english::is_question_text(sentence)
    }
}

/// A request for a remembered fact that is not worded as a question ("Tell me where I live",
/// "提醒我一下会议是哪天").
fn is_request(sentence: &str) -> bool {
    let lower = sentence.trim_start().to_lowercase();
    let english = [
        "tell me",
        "remind me",
        "do you remember",
        "recall",
        "show me",
        "what",
        "where",
        "who",
        "which",
        "when",
        "how",
        "list",
    ]
    .iter()
    .any(|p| lower.starts_with(p));
    let chinese = ["告诉我", "提醒我", "你还记得", "记得", "说一下", "说说"]
        .iter()
        .any(|p| sentence.contains(p));
    english || chinese
}

fn compiled(
    cell: &'static OnceLock<Vec<Option<Regex>>>,
    sources: &[&str],
) -> &'static [Option<Regex>] {
    cell.get_or_init(|| scan::compile_all(sources))
}

fn first_match<'t>(
    regexes: &'static [Option<Regex>],
    text: &'t str,
) -> Option<(usize, Captures<'t>)> {
    regexes
        .iter()
        .enumerate()
        .find_map(|(i, re)| re.as_ref()?.captures(text).map(|c| (i, c)))
}

fn ask(subject: Subject, slot: Slot, qualifier: String) -> Asked {
    Asked {
        subject,
        slot,
        qualifier,
    }
}

/// An organization as written in a question: "the company" is a thing, a name is named.
fn org_subject(raw: &str) -> Option<Subject> {
    let lower = raw.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    if matches!(words.first(), Some(&("the" | "our" | "my"))) {
        return Some(Subject::Thing("company".to_string()));
    }
    let kept: Vec<&str> = raw
        .split_whitespace()
        .skip_while(|w| super::lexicon::NOT_NAMES.contains(&w.to_lowercase().as_str()))
        .collect();
    let name = kept.join(" ");
    let name = name
        .trim_end_matches(['\'', '’', 's'])
        .trim_end_matches(['\'', '’']);
    let name = if raw.trim_end().ends_with("'s") || raw.trim_end().ends_with("’s") {
        name.to_string()
    } else {
        kept.join(" ")
    };
    (!name.is_empty()).then_some(Subject::Named(name))
}

/// Questions about organizations and things, which name their own subject.
fn english_things(sentence: &str) -> Option<Asked> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\bwho(?:\s+(?:is|was)|['’]s)\s+(?:now\s+)?(?P<org>{ORG})['’]s?\s+(?:new\s+|current\s+)?(?P<role>{ROLE})\b",
        r"\bwho(?:\s+(?:is|was|will\s+be)|['’]s)\s+(?:now\s+)?the\s+(?:new\s+|current\s+)?(?P<role>{ROLE})\s+(?:of|at)\s+(?P<org>{ORG})",
        r"\bwho(?:\s+(?:now\s+)?(?:runs|heads|leads|ran|led|headed|took\s+over|is\s+running|is\s+heading|is\s+leading|is\s+in\s+charge\s+(?:of|at)|was\s+in\s+charge\s+(?:of|at))|['’]s\s+(?:running|heading|leading|in\s+charge\s+(?:of|at)))\s+(?P<org>{ORG})",
        r"\bwho\s+did\s+(?P<org>{ORG})\s+(?:name|appoint|hire|pick|choose)\s+(?:as\s+)?(?:its\s+|the\s+)?(?:new\s+)?(?P<role>{ROLE})",
        r"\bwhere(?:\s+(?:is|are|was|were)|['’]s)\s+(?P<org>{ORG})\s+(?:now\s+)?(?:headquartered|based)",
        r"\bwhere(?:\s+(?:is|are|was|were)|['’]s)\s+(?:now\s+)?(?P<org>{ORG})['’]s?\s+(?:headquarters|hq|head\s+office|main\s+office)",
        r"\bwhere\s+did\s+(?P<org>{ORG})\s+(?:move|relocate)\s+(?:its|their)\s+(?:headquarters|hq|head\s+office)",
        r"\b(?:when|what\s+(?:day|time|date))(?:\s+(?:is|was|will\s+be|did)|['’]s)\s+(?P<ev>(?:[a-z'’-]+\s+){0,3}?{EVENT})\b",
        r"\b(?:is|was)\s+(?P<ev>(?:the|my|our)\s+(?:[a-z'’-]+\s+){0,2}?{EVENT})\s+(?:still\s+)?(?:on|at|moved|rescheduled)\b",
        r"\b(?:what(?:['’]s|\s+is)\s+the\s+(?:status|state|stage|phase|progress)\s+(?:of|on)|how(?:['’]s|\s+is)|where\s+(?:is|are)\s+we\s+(?:on|with)|what\s+(?:stage|phase|state)\s+(?:is|was)|how\s+far\s+along\s+is|is)\s+(?P<np>(?:(?:the|our|my)\s+)?(?:project\s+(?-i:\p{Lu}\w*)|(?-i:\p{Lu}\w*)\s+project|(?:[a-z0-9-]+\s+){0,2}{PROJECT}))\b",
    ];
    let (index, caps) = first_match(compiled(&CELL, &sources), sentence)?;
    if let Some(org) = caps.name("org") {
        let subject = org_subject(org.as_str())?;
        let (slot, qualifier) = match caps.name("role") {
            Some(role) => (Slot::Role, canonical_role(role.as_str())),
            None if index == 2 => (Slot::Role, "ceo".to_string()),
            None => (Slot::Headquarters, String::new()),
        };
        return Some(ask(subject, slot, qualifier));
    }
    if let Some(ev) = caps.name("ev") {
        let thing = super::english::thing_name(ev.as_str())?;
        return Some(ask(Subject::Thing(thing), Slot::Date, String::new()));
    }
    let np = caps.name("np")?;
    let thing = super::english::thing_name(np.as_str())?;
    let asks_status = index == 9 && !sentence.to_lowercase().starts_with("is ");
    let lower = sentence.to_lowercase();
    let status_words = [
        "phase", "stage", "status", "done", "finished", "progress", "along",
    ];
    (asks_status || status_words.iter().any(|w| lower.contains(w)))
        .then(|| ask(Subject::Thing(thing), Slot::Status, String::new()))
}

/// The person an English question is about: "my sister" → the sister, a name, or the speaker.
fn english_person(sentence: &str, slot: Slot) -> Option<Subject> {
    let toks = scan::tokens(sentence);
    let mut someone_else = false;
    for (i, tok) in toks.iter().enumerate() {
        let w = tok.lower.trim_end_matches("'s");
        if !RELATIONS.contains(&w) {
            continue;
        }
        let mine = toks
            .get(..i)
            .and_then(|b| {
                b.iter()
                    .rev()
                    .find(|t| !super::lexicon::RELATION_MODIFIERS.contains(&t.lower.as_str()))
            })
            .is_some_and(|t| matches!(t.lower.as_str(), "my" | "our"));
        let own_kind = match slot {
            Slot::Partner => matches!(
                w,
                "girlfriend"
                    | "boyfriend"
                    | "wife"
                    | "husband"
                    | "partner"
                    | "fiancé"
                    | "fiancée"
                    | "fiance"
                    | "fiancee"
                    | "spouse"
                    | "gf"
                    | "bf"
                    | "hubby"
            ),
            Slot::Child => matches!(w, "son" | "daughter" | "kid" | "child" | "baby"),
            _ => false,
        };
        if mine && !own_kind {
            return Some(Subject::Related(w.to_string()));
        }
        someone_else |= !mine && !own_kind;
    }
    let first_person_at = toks.iter().position(|t| {
        matches!(
            t.lower.as_str(),
            "i" | "me" | "my" | "we" | "our" | "us" | "i'm" | "i've" | "we're" | "mine"
        )
    });
    let named = toks.iter().enumerate().find(|(i, t)| {
        // "Is my cat still called Biscotti?": a name after "my" is the value asked about.
        let before_first_person = first_person_at.is_none_or(|p| *i < p);
        let after_preposition = i
            .checked_sub(1)
            .and_then(|p| toks.get(p))
            .is_some_and(|p| matches!(p.lower.as_str(), "in" | "to" | "at" | "from" | "near"));
        *i > 0
            && before_first_person
            && !after_preposition
            && t.word
            && t.capital
            && !super::lexicon::NOT_NAMES.contains(&t.lower.trim_end_matches("'s"))
            && !SPECIES.contains(&t.lower.as_str())
    });
    if let Some((_, t)) = named {
        let written = sentence.get(t.start..t.end)?;
        let name = written
            .trim_end_matches("'s")
            .trim_end_matches("’s")
            .to_string();
        return Some(Subject::Named(name));
    }
    let first_person = toks.iter().any(|t| {
        matches!(
            t.lower.as_str(),
            "i" | "me" | "my" | "we" | "our" | "us" | "i'm" | "i've" | "we're" | "mine"
        )
    });
    // "What's the baby's name going to be?", "Is the trip to Patagonia still on?": the baby,
    // the pet and the trip of a line about nobody else are the speaker's, as in statements.
    let own_thing = matches!(slot, Slot::Child | Slot::Pet | Slot::Plan)
        && !someone_else
        && toks.iter().any(|t| t.lower == "the");
    (first_person || own_thing).then_some(Subject::Speaker)
}

/// English keyword rules: (slot, pattern) in priority order.
const ENGLISH_SLOTS: &[(Slot, &str)] = &[
    (
        Slot::Age,
        r"\bhow\s+old\b|\bage\b|\bbirthday\s+(?:is\s+)?(?:this|next)",
    ),
    (Slot::Quantity, r"\bhow\s+(?:many|much|far)\b"),
    (
        Slot::Pet,
        r"\b(?:{SPECIES})\b.*\b(?:name|called|named)\b|\b(?:name|call|called|named|naming|calling)\b.*\b(?:{SPECIES})\b",
    ),
    (
        Slot::Child,
        r"\b(?:son|daughter|kid|child|baby|boy|girl)['’]?s?\b.*\b(?:name|called|named)\b|\b(?:name|named|naming|call|called|calling)\b.*\b(?:son|daughter|kid|child|baby)\b",
    ),
    (
        Slot::Partner,
        r"\b(?:girlfriend|boyfriend|wife|husband|partner|fianc\w*|spouse|gf|bf|hubby)\b|\bwho\s+(?:am\s+i|are\s+we)\s+(?:dating|seeing|with|married\s+to|engaged\s+to)",
    ),
    (
        Slot::RelationshipStatus,
        r"\b(?:married|single|engaged|divorced|relationship\s+status|dating\s+anyone|seeing\s+anyone|in\s+a\s+relationship|widowed)\b",
    ),
    (
        Slot::Preference,
        r"\b(?:favou?rite|fave|go-to|preferred)\s+(?P<q>[a-z]+(?:[\s-][a-z]+)?)|\b(?P<q2>[a-z]+)\s+of\s+choice\b|\b(?:what|which)\s+(?P<q3>[a-z]+)\s+(?:do|does|did)\s+(?:i|we)\s+(?:like|love|enjoy|prefer)\s+(?:the\s+)?(?:best|most)\b",
    ),
    (
        Slot::Diet,
        r"\b(?:vegetarian|vegan|pescatarian|diet|eat\s+meat|keto|eat\s+fish|eat\s+pork)\b",
    ),
    (
        Slot::Plan,
        r"\b(?:trip|vacation|holiday|honeymoon|travel\w*|plans?|planning|heading|going|visit\w*|destination)\b",
    ),
    (
        Slot::Employer,
        r"\bwho\s+(?:do|does|did)\s+\w+\s+work\s+for\b|\bwhere\s+(?:do|does)\s+\w+(?:\s+\w+)?\s+work\b|\b(?:employer|which\s+company|what\s+company|company\s+(?:do|does))\b|\bwhere\s+(?:am|is|are)\s+\w+\s+(?:now\s+)?working\b|\bwhere\s+(?:do|does)\s+\w+(?:\s+\w+)?\s+(?:now\s+|currently\s+)work",
    ),
    (
        Slot::Job,
        r"\b(?:job|occupation|profession|career|for\s+(?:a\s+)?living|for\s+work|work\s+as|job\s+title|what\s+(?:do|does)\s+\w+(?:\s+\w+)?\s+do)\b",
    ),
    (
        Slot::Residence,
        r"\b(?:live|lives|living|reside|resides|home|address|moved|move|relocat\w*|city|town|country|based)\b",
    ),
    (
        Slot::Likes,
        r"\b(?:like|likes|enjoy|enjoys|love|loves|into)\b",
    ),
];

fn english(sentence: &str) -> Vec<Asked> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    if let Some(a) = english_things(sentence) {
        return vec![a];
    }
    let patterns: Vec<&str> = ENGLISH_SLOTS.iter().map(|(_, p)| *p).collect();
    let regexes = compiled(&CELL, &patterns);
    for ((slot, _), re) in ENGLISH_SLOTS.iter().zip(regexes) {
        let Some(caps) = re.as_ref().and_then(|re| re.captures(sentence)) else {
            continue;
        };
        let Some(subject) = english_person(sentence, *slot) else {
            return Vec::new();
        };
        let qualifier = english_qualifier(sentence, *slot, &caps);
        if *slot == Slot::Quantity && qualifier.is_empty() {
            continue;
        }
        return vec![ask(subject, *slot, qualifier)];
    }
    Vec::new()
}

/// Words a "how many/much" question carries that a quantity's qualifier does not.
#[rustfmt::skip]
const QUESTION_FILLERS: &[&str] = &[
    "how", "many", "much", "far", "do", "does", "did", "i", "my", "we", "our", "you", "your", "is",
    "are", "am", "now", "currently", "usually", "typically", "normally", "these", "days", "have",
    "has", "own", "it", "there", "that", "the", "still", "on", "average", "roughly", "about",
    "cost", "costs", "money", "nowadays", "today", "this", "doing", "make", "me",
];

fn english_qualifier(sentence: &str, slot: Slot, caps: &Captures) -> String {
    let lower = sentence.to_lowercase().replace('’', "'");
    match slot {
        Slot::Pet => SPECIES
            .iter()
            .find(|s| {
                lower
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == **s)
            })
            .map(|s| canonical_species(s))
            .unwrap_or_default(),
        Slot::Child => {
            let kind = ["son", "daughter"]
                .iter()
                .find(|k| lower.contains(*k))
                .copied()
                .unwrap_or("child");
            kind.to_string()
        }
        Slot::Preference => caps
            .name("q")
            .or_else(|| caps.name("q2"))
            .or_else(|| caps.name("q3"))
            .map(|q| {
                let words: Vec<String> = q
                    .as_str()
                    .split([' ', '-'])
                    .filter(|w| !super::english::is_phrase_end(w))
                    .map(canonical_preference)
                    .collect();
                normalize::qualifier(words.iter().map(String::as_str))
            })
            .unwrap_or_default(),
        Slot::Plan => super::english::plan_qualifier_of(sentence),
        Slot::Quantity => quantity_qualifier(&lower),
        _ => String::new(),
    }
}

/// The qualifier of "how many kilometres do I run each week?", built like a statement's.
fn quantity_qualifier(lower: &str) -> String {
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    if ["earn", "salary", "income", "paid", "earning", "wage"]
        .iter()
        .any(|w| has(w))
        || (has("make") && !words.iter().any(|w| w.ends_with('s') && *w != "does"))
    {
        return normalize::qualifier(["salary"]);
    }
    for what in ["rent", "mortgage"] {
        if has(what) {
            return normalize::qualifier([what, "month"]);
        }
    }
    if has("cost") || has("costs") || has("price") {
        let item: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| !QUESTION_FILLERS.contains(w) && !matches!(*w, "a" | "an" | "price" | "of"))
            .collect();
        let mut all = vec!["price"];
        all.extend(item);
        return normalize::qualifier(all);
    }
    let kept: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !QUESTION_FILLERS.contains(w))
        .collect();
    normalize::qualifier(kept)
}

/// Chinese questions about organizations and things.
fn chinese_things(sentence: &str) -> Option<Asked> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>[^，。！？；、,.!?\s]{1,10}?)的?(?:新任|现任|现在的|新)?(?P<role>{ROLEZH})(?:现在)?(?:是谁|叫什么|换成谁|是哪位)",
        r"谁(?:是|在当|当上了|接任了?)(?P<org>[^，。！？；、,.!?\s]{1,10}?)的?(?:新任|新)?(?P<role>{ROLEZH})",
        r"(?P<org>[^，。！？；、,.!?\s]{1,10}?)(?:现在)?(?:谁在?管|谁负责|谁说了算|谁当家)",
        r"(?P<org>[^，。！？；、,.!?\s]{1,10}?)的?总部(?:现在|目前)?(?:在哪|设在哪|位于哪|搬到哪|搬去哪|迁到哪|在什么地方)",
        r"(?P<ev>[^，。！？；、,.!?\s]{0,8}?{EVENTZH})(?:的)?(?:时间)?(?:现在|目前|改|又|定|还|是|的|在|到|成|于)*(?:什么时候|哪天|哪一天|几号|周几|星期几|礼拜几|几点|啥时候)",
        r"(?P<np>[^，。！？；、,.!?\s]{0,8}?{PROJECTZH})(?:现在|目前)?(?:到|进行到|在|处于|进展到)?(?:哪个阶段|什么阶段|哪一步|哪一阶段|进展|进度|怎么样|状态)",
    ];
    let (index, caps) = first_match(compiled(&CELL, &sources), sentence)?;
    if let Some(org) = caps.name("org") {
        let subject = chinese_org(org.as_str())?;
        let (slot, qualifier) = match caps.name("role") {
            Some(role) => (Slot::Role, canonical_role(role.as_str())),
            None if index == 2 => (Slot::Role, "ceo".to_string()),
            None => (Slot::Headquarters, String::new()),
        };
        return Some(ask(subject, slot, qualifier));
    }
    if let Some(ev) = caps.name("ev") {
        let thing = super::chinese::thing_name(ev.as_str())?;
        return Some(ask(Subject::Thing(thing), Slot::Date, String::new()));
    }
    let np = caps.name("np")?;
    let thing = super::chinese::thing_name(after_time_lead(np.as_str()))?;
    Some(ask(Subject::Thing(thing), Slot::Status, String::new()))
}

/// `text` after a time it opens with ("2024年3月3日的时候鸣鹤科技" → "鸣鹤科技"): a question
/// about a past date names its subject after the date.
fn after_time_lead(text: &str) -> &str {
    ["的时候", "时候", "那时", "当时"]
        .iter()
        .find_map(|lead| text.rfind(lead).map(|i| i + lead.len()))
        .and_then(|at| text.get(at..))
        .unwrap_or(text)
        .trim_start_matches(['，', ','])
}

fn chinese_org(raw: &str) -> Option<Subject> {
    let mut text = after_time_lead(raw.trim());
    for lead in [
        "请问",
        "你知道",
        "现在",
        "那",
        "我们的",
        "我们",
        "咱们",
        "我的",
    ] {
        text = text.strip_prefix(lead).unwrap_or(text);
    }
    let mut text = text.trim_end_matches('的');
    while let Some(rest) = ["现在", "目前", "如今", "还"]
        .iter()
        .find_map(|t| text.strip_suffix(t))
    {
        text = rest.trim_end_matches('的');
    }
    if text.is_empty() || text.starts_with(['谁', '你', '他', '她']) {
        return None;
    }
    let generic = ["公司", "单位", "集团", "企业", "团队", "学校"];
    Some(if generic.contains(&text) {
        Subject::Thing(text.to_string())
    } else {
        Subject::Named(text.to_string())
    })
}

/// The person a Chinese question is about.
fn chinese_person(sentence: &str, slot: Slot) -> Option<Subject> {
    let own_kind = |rel: &str| match slot {
        Slot::Partner => [
            "男朋友",
            "女朋友",
            "男友",
            "女友",
            "对象",
            "老公",
            "老婆",
            "丈夫",
            "妻子",
            "爱人",
            "未婚夫",
            "未婚妻",
            "媳妇",
        ]
        .contains(&rel),
        Slot::Child => ["儿子", "女儿", "孩子", "闺女"].contains(&rel),
        _ => false,
    };
    for owner in [
        "我们家",
        "我家",
        "我们的",
        "我的",
        "我们",
        "我",
        "咱家",
        "咱们",
    ] {
        for (i, _) in sentence.match_indices(owner) {
            let after = sentence.get(i + owner.len()..).unwrap_or("");
            let rel = RELATIONS_ZH
                .iter()
                .filter(|r| after.starts_with(*r))
                .max_by_key(|r| r.len());
            if let Some(rel) = rel {
                if !own_kind(rel) {
                    return Some(Subject::Related((*rel).to_string()));
                }
            }
        }
    }
    if ["我", "咱", "俺"].iter().any(|p| sentence.contains(p)) {
        return Some(Subject::Speaker);
    }
    // "宝宝的名字定的是什么？", "猫咪现在叫什么？": a child or pet nobody is said to own is the
    // speaker's, as in statements.
    let own_noun = match slot {
        Slot::Child => ["宝宝", "儿子", "女儿", "闺女", "宝贝"]
            .iter()
            .find_map(|n| sentence.find(n)),
        Slot::Pet => SPECIES_ZH.iter().find_map(|n| sentence.find(n)),
        _ => None,
    };
    if let Some(at) = own_noun {
        return super::chinese::owner_before(sentence, at);
    }
    let name = super::chinese::tags(sentence)
        .into_iter()
        .find(|(_, t)| matches!(t.as_str(), "nr" | "nrfg" | "nrt"))
        .map(|(w, _)| w);
    name.map(Subject::Named)
}

/// Chinese keyword rules: (slot, pattern) in priority order.
const CHINESE_SLOTS: &[(Slot, &str)] = &[
    (Slot::Age, r"多大了|几岁|年龄|多少岁|多大年纪"),
    (
        Slot::Quantity,
        r"多少|多远|多久|多长时间|几(?:个|本|杯|次|公里|小时|天|只|趟|圈)",
    ),
    (Slot::Pet, r"(?:{SPECIESZH}).*(?:叫什么|叫啥|名字)"),
    (
        Slot::Child,
        r"(?:儿子|女儿|孩子|闺女|宝宝).*(?:叫什么|叫啥|名字)",
    ),
    (
        Slot::Partner,
        r"(?:男朋友|女朋友|男友|女友|对象|老公|老婆|丈夫|妻子|爱人|未婚夫|未婚妻|媳妇).*(?:叫什么|叫啥|是谁|名字)|(?:和|跟|与)谁(?:在一起|谈恋爱|结婚|交往|约会)",
    ),
    (
        Slot::RelationshipStatus,
        r"单身|结婚|已婚|恋爱|对象吗|离婚|订婚|分居|同居|丧偶|(?:感情|婚姻|恋爱|情感)(?:状况|状态|生活)",
    ),
    (
        Slot::Preference,
        r"最(?:喜欢|爱)的(?P<q>\p{Han}{1,4}?)(?:是|叫)|最(?:喜欢|爱)(?P<q2>喝|吃|听|看|玩|去)",
    ),
    (Slot::Diet, r"吃素|素食|吃肉|饮食|忌口"),
    (
        Slot::Plan,
        r"打算去|计划去|准备去|要去哪|旅行|旅游|度假|蜜月|去哪(?:玩|旅)",
    ),
    (
        Slot::Employer,
        r"在哪(?:里|儿|家公司)?(?:上班|工作)|哪家公司|什么公司|单位|跳槽到了?哪|公司是",
    ),
    (
        Slot::Job,
        r"(?:做|干)什么(?:工作|的)|职业|什么工作|工作是什么|是做什么|干啥|做啥",
    ),
    (
        Slot::Residence,
        r"住(?:在)?哪|住哪|哪个城市|家在哪|搬到了?哪|搬去哪|住在什么地方|住址|哪里住|在哪住|哪儿住",
    ),
    (Slot::Likes, r"喜欢什么|喜欢吃什么|爱好"),
];

fn chinese(sentence: &str) -> Vec<Asked> {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    if let Some(a) = chinese_things(sentence) {
        return vec![a];
    }
    let patterns: Vec<&str> = CHINESE_SLOTS.iter().map(|(_, p)| *p).collect();
    let regexes = compiled(&CELL, &patterns);
    for ((slot, _), re) in CHINESE_SLOTS.iter().zip(regexes) {
        let Some(caps) = re.as_ref().and_then(|re| re.captures(sentence)) else {
            continue;
        };
        let Some(subject) = chinese_person(sentence, *slot) else {
            return Vec::new();
        };
        let qualifier = chinese_qualifier(sentence, *slot, &caps);
        if *slot == Slot::Quantity && qualifier.is_empty() {
            continue;
        }
        return vec![ask(subject, *slot, qualifier)];
    }
    Vec::new()
}

fn chinese_qualifier(sentence: &str, slot: Slot, caps: &Captures) -> String {
    match slot {
        Slot::Pet => SPECIES_ZH
            .iter()
            .filter_map(|s| sentence.find(s).map(|i| (i, *s)))
            .min_by_key(|&(i, s)| (i, std::cmp::Reverse(s.len())))
            .map(|(_, s)| canonical_species(s))
            .unwrap_or_default(),
        Slot::Child => ["儿子", "女儿"]
            .iter()
            .find(|k| sentence.contains(*k))
            .map_or("孩子", |k| *k)
            .to_string(),
        Slot::Preference => caps
            .name("q")
            .or_else(|| caps.name("q2"))
            .map(|q| canonical_preference(q.as_str().trim_end_matches('的')))
            .unwrap_or_default(),
        Slot::Plan => super::chinese::plan_qualifier_of(sentence),
        Slot::Quantity => super::chinese::quantity_qualifier_of(sentence),
        _ => String::new(),
    }
}
