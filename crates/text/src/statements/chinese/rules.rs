//! The Chinese rule table: a verb (or noun) pattern per phrasing, who holds the fact and what
//! kind of value follows.

use std::sync::OnceLock;

use regex::{Captures, Regex, RegexSet, RegexSetBuilder};

use super::super::lexicon::canonical_species;
use super::super::scan;
use super::super::types::{Found, Slot, Subject};
use super::clause::{self, blocked_before, holder, Holder};
use super::values::{self, Read};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    /// The subject before the verb; a dropped one is the speaker or the previous clause's.
    Actor,
    /// The speaker: the pattern itself holds 我/我家.
    Speaker,
    /// The owner of the noun the match starts with, the speaker when none is written ("宝宝叫…",
    /// "猫咪有了新名字…"); see [`clause::owner_before`].
    Owned,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    Place,
    /// A place after a verb that takes one: any short noun phrase that is not an employer.
    PlaceAfterVerb,
    Org,
    /// An employer after a verb of joining: anything short that is not a place (跳槽到字节跳动).
    OrgLoose,
    /// An occupation, whatever the noun (成为了一名…).
    JobOpen,
    /// An occupation by its ending (是一名护士).
    JobWeak,
    /// A name given after 叫.
    GivenName,
    /// A person's name (after 是, 和).
    Person,
    Phrase,
    /// The `v` group, as a place.
    GroupPlace,
    /// The `v` group, as an organization.
    GroupOrg,
    /// The `v` group, as an organization by its ending, in a sentence about work ("我换了工作，
    /// 现在在云杉咨询").
    GroupOrgStrict,
    /// The `v` group, as a person's name.
    GroupPerson,
    /// The `v` group as written.
    Group,
    /// A place the speaker is in, in a sentence that tells of a move ("我现在人在深圳，已经搬过来了").
    PlaceIfMoved,
    /// An employer after 是 (我的单位是…): not a verb phrase, a place or a clause.
    OrgAfterIs,
    /// A pet's name right after its species (我家猫芝麻糊…): a noun, not an adverb or verb.
    NameAfterNoun,
    Empty,
}

struct Rule {
    slot: Slot,
    who: Who,
    val: Val,
    negates: bool,
    pattern: &'static str,
}

const fn rule(slot: Slot, who: Who, val: Val, negates: bool, pattern: &'static str) -> Rule {
    Rule {
        slot,
        who,
        val,
        negates,
        pattern,
    }
}

use Slot::*;
use Val::*;
use Who::*;

/// Characters of a value inside a pattern.
macro_rules! run {
    () => {
        r"[^，。！？；、,.!?;\s]"
    };
}

#[rustfmt::skip]
const RULES: &[Rule] = &[
    // Residence.
    rule(Residence, Actor, PlaceAfterVerb, false, r"(?:住在|住到|定居在|定居于|定居|安家在|安家于|居住在|居住于|生活在|落户在|落户|落脚在|扎根在|长住在)(?:了)?"),
    rule(Residence, Actor, Place, false, r"住(?:了)?"),
    rule(Residence, Actor, PlaceAfterVerb, false, r"(?:搬到|搬去|搬回到|搬回|搬进|搬来|搬至|迁到|迁居到|迁居|迁往|移居到|移居|移民到|移民|定居到|搬家到|搬家去)(?:了)?"),
    rule(Residence, Speaker, Place, false, r"(?:我们家|咱们家|我家|咱家)(?:现在|目前|已经|也|就)*(?:在|住在|搬到了?|搬去了?)"),
    rule(Residence, Actor, Place, true, r"(?:搬离了?|搬出了?|离开了?)"),
    rule(Residence, Speaker, PlaceAfterVerb, false, r"(?:我|我们)(?:现在|目前)?住的地方(?:现在|目前|已经|也)*(?:换成了?|变成了?|改成了?|搬到了?)"),
    rule(Residence, Actor, PlaceAfterVerb, false, r"家(?:现在|目前|已经|也|就|还)*(?:在|安在|安到了?)"),
    rule(Residence, Actor, PlaceIfMoved, false, r"人(?:现在|目前|已经|也|就|还)*在"),
    rule(Residence, Actor, GroupPlace, false, concat!(r"在(?P<v>[^在，。！？；、,.!?;\s]", run!(), r"{1,9}?)(?:住|生活|定居|安家)(?P<past>过)?(?:了|着|呢|啦)?")),
    // Employer.
    rule(Employer, Actor, GroupOrg, false, concat!(r"在(?P<v>[^在，。！？；、,.!?;\s]", run!(), r"{0,15}?)(?:找到了?(?:一份)?|找了(?:一)?份|谋了(?:一)?份)?(?:上班|工作|任职|实习|打工|供职|就职)(?P<past>过)?")),
    rule(Employer, Actor, OrgLoose, false, r"(?:入职了?|加入了?|加盟了?|跳槽到了?|跳槽去了?|跳槽进了?|跳到了?|签约了?|就职于|任职于|供职于|受雇于|效力于|服务于)"),
    rule(Employer, Actor, GroupOrg, false, concat!(r"被(?P<v>[^被，。！？；、,.!?;\s]", run!(), r"{1,11}?)(?:正式)?(?:录用|录取|聘用|雇用|聘请|招进去|招进来|招聘|签下)(?:了)?")),
    rule(Employer, Actor, Org, false, r"(?:转到了?|换到了?)"),
    rule(Employer, Actor, GroupOrg, false, concat!(r"给(?P<v>[^给，。！？；、,.!?;\s]", run!(), r"{1,12}?)(?:打工|干活|工作|做事|效力)")),
    rule(Employer, Speaker, GroupOrg, false, concat!(r"(?P<v>[^，。！？；、,.!?;\s是]", run!(), r"{1,11}?)(?:现在|已经|就)?(?:是|成了|成为了)我(?:的)?(?:新|现在的|目前的)?(?:东家|单位|公司|雇主)")),
    rule(Employer, Actor, GroupOrgStrict, false, r"在(?P<v>[^在，。！？；、,.!?;\s]{2,10}?)(?:了|呢|啦)?(?:[，。！!,.;；]|$)"),
    rule(Employer, Speaker, OrgAfterIs, false, r"(?:我的|我)(?:现在的?|目前的?|新的?|如今的?)?(?:单位|公司|东家|雇主|工作单位|新东家)(?:现在|目前|已经)?(?:是|换成了?|变成了?|改成了?)"),
    rule(Employer, Actor, GroupOrg, false, concat!(r"(?:去|到)了?(?P<v>[^去到了，。！？；、,.!?;\s]", run!(), r"{1,12}?)(?:上班|工作|任职|报到|入职|实习)")),
    rule(Employer, Actor, GroupOrg, true, concat!(r"从(?P<v>", run!(), r"{2,12}?)(?:离职|辞职|退休|跳槽|出来)")),
    rule(Employer, Actor, Org, true, r"(?:离开了?|辞去了?|辞掉了?|退出了?)"),
    rule(Employer, Actor, Empty, true, r"(?:辞职|离职|失业|被裁员?|被开除|被辞退|丢了工作|丢掉了工作|没工作|把工作辞了|下岗)"),
    // Job.
    rule(Job, Actor, JobWeak, false, r"是(?:一[名位个])?"),
    rule(Job, Actor, JobOpen, false, r"(?:当上了?|成为了?|变成了?|转行做了?|转行当了?|转行成为了?|转行成了?|改行做了?|改行当了?|升职为|升职成了?|升为|升任|晋升为|被提拔为|提拔为|担任|干起了?|做起了?|从事|转型为|转型做|转型成了?)(?:一[名位个])?"),
    rule(Job, Actor, JobWeak, false, r"(?:当|做|干|成了)(?:一[名位个])?"),
    rule(Job, Actor, Group, false, r"是(?:做|干|搞)(?P<v>[^，。！？；、,.!?;\s的]{1,8})的"),
    rule(Job, Speaker, JobOpen, false, r"(?:我的|我)(?:现在|目前|如今)?的?(?:职业|工作|职位|岗位|身份|本职工作|本职)(?:现在|目前)?(?:是|为)(?:一[名位个])?"),
    rule(Job, Actor, Group, false, r"(?P<v>退休)(?:了|啦)"),
    // Relationship status.
    rule(RelationshipStatus, Actor, Group, false, r"(?P<v>单身|已婚|离异|丧偶|结婚|订婚|离婚|复婚|谈恋爱|恋爱了|脱单|分居|同居|领证|在一起)(?:状态|中)?"),
    rule(RelationshipStatus, Actor, Group, false, r"有(?P<v>对象|女朋友|男朋友|男友|女友)了"),
    // Partner.
    rule(Partner, Speaker, GivenName, false, r"(?:我|我的)(?:现任|新)?(?:男朋友|女朋友|男友|女友|对象|老公|老婆|丈夫|妻子|爱人|未婚夫|未婚妻|媳妇|另一半|男票|女票)(?:的名字|名字)?(?:叫做?|名叫)"),
    rule(Partner, Speaker, Person, false, r"(?:我|我的)(?:现任|新)?(?:男朋友|女朋友|男友|女友|对象|老公|老婆|丈夫|妻子|爱人|未婚夫|未婚妻|媳妇|另一半)(?:是|，)"),
    rule(Partner, Actor, GroupPerson, false, concat!(r"(?:和|跟|与)(?:我的?)?(?:对象|男朋友|女朋友|男友|女友|老公|老婆|爱人|未婚夫|未婚妻|另一半)?(?P<v>", run!(), r"{1,6}?)(?:已经|还|一直|正式|现在|终于|又|早就|都|仍然|依然)*(?:在一起了|在一起|谈恋爱了?|恋爱了|结婚了|订婚了|在交往|交往了|确定关系了|领证了|约会|同居了?)")),
    rule(Partner, Actor, GroupPerson, true, concat!(r"(?:和|跟|与)(?:我的?)?(?:对象|男朋友|女朋友|男友|女友|老公|老婆|爱人|未婚夫|未婚妻|另一半)?(?P<v>", run!(), r"{1,6}?)(?:已经|正式|终于|也)*(?:分手了?|离婚了?|分开了?|吹了|分居了?)")),
    rule(Partner, Actor, Group, false, r"(?:和|跟|与)一(?:个|位)叫(?P<v>\p{Han}{1,4}?|[A-Za-z]+)的(?:人|男生|女生|男孩|女孩|姑娘|小伙子?|男人|女人|男的|女的)(?:在)?(?:一起|谈恋爱|交往|约会|恋爱)"),
    rule(Partner, Actor, Person, false, r"(?:嫁给了?|娶了)"),
    rule(Partner, Speaker, GroupPerson, false, r"(?P<v>\p{Han}{2,4}?|[A-Z][a-z]+)(?:现在|已经|就|正式)?(?:是|成了|成为了)我(?:的)?(?:现任|新)?(?:男朋友|女朋友|男友|女友|对象|老公|老婆|未婚夫|未婚妻|爱人|另一半)"),
    rule(Partner, Actor, Empty, true, r"(?:分手|分开了|吹了)"),
    // Child.
    rule(Child, Speaker, GivenName, false, r"(?:我|我们|我家|咱家)(?:的)?(?:大|小|二|老大|老二)?(?P<q>儿子|女儿|孩子|宝宝|闺女|小孩)(?:的)?(?:名字|小名|大名)?(?:叫做?|名叫|取名叫?)"),
    rule(Child, Actor, GivenName, false, r"给(?:我们的?|我的?)?(?:大|小)?(?P<q>儿子|女儿|孩子|宝宝)(?:取|起|改)(?:好|了)*(?:名字?)(?:了)?(?:，|,)?(?:就|现在)?(?:叫做?|为|是)?"),
    rule(Child, Owned, GivenName, false, r"(?:大|小|二|老大|老二)?(?P<q>儿子|女儿|宝宝|闺女|宝贝)(?:的?(?:名字|小名|大名)(?:已经|就|又|还是|也|最后|最终|现在|正式|还)*(?:叫做?|名叫|定为|定成|定了叫?|改成了?|改为|改叫|取为|是)|(?:已经|就|又|还是|也|最后|最终|现在|正式|还)*(?:叫做?|名叫|取名叫?|改叫|改名叫))"),
    rule(Child, Owned, GivenName, false, r"(?P<q>宝宝|儿子|女儿|孩子|闺女|宝贝)(?:已经|终于|平安|顺利)*(?:出生了|生了|降生了|来了|出世了)(?:，|,)(?:取名|名字)?叫做?"),
    rule(Child, Owned, GivenName, false, r"(?:大|小|二|老大|老二)?(?P<q>儿子|女儿|孩子|宝宝|闺女)的?(?:名字|小名|大名)(?:我们|我)?(?:又|已经|也|最后|终于)*(?:改|换|定|取)(?:了|好了|下来了)(?:，|,)(?:现在|就|最后)?(?:叫做?|是|为)"),
    // Pet.
    rule(Pet, Actor, Group, false, r"养了?(?:一|两|三)?(?:只|条|个)叫(?P<v>[^，。！？；、,.!?;\s的]{1,6})的(?P<q>{SPECIESZH})"),
    rule(Pet, Speaker, GivenName, false, r"(?:我家的?|我们家的?|我的|我们的|我养的|我们养的|咱家的?)(?:那只|这只|那条|这条)?(?:新|新养的|新来的)?(?P<q>{SPECIESZH})(?:的)?(?:名字|名)?(?:叫做?|名叫|取名叫?|是)"),
    rule(Pet, Actor, GivenName, false, r"养了?(?:一|两|三)?(?:只|条|个)(?P<q>{SPECIESZH})(?:，|,)?(?:叫做?|名叫|取名叫?)"),
    rule(Pet, Actor, Empty, false, r"养(?:了)?(?:一只|一条)?(?P<q>{SPECIESZH})"),
    rule(Pet, Actor, GivenName, false, r"给(?:我们的?|我的?|我家的?|我们家的?)?(?:那只|这只|那条|这条)?(?P<q>{SPECIESZH})(?:取|起|改)(?:了|好了?)?(?:个|一个)?(?:新)?(?:名字?)(?:了)?(?:，|,)?(?:就|现在)?(?:叫做?|为|是)?"),
    rule(Pet, Actor, Group, false, r"(?:(?P<neg>没有|没养|没)|有|养着?|养了)(?P<v>[^，。！？；、,.!?;\s这那]{1,6}?)(?:这|那)(?:只|条|个|头)(?P<q>{SPECIESZH})"),
    rule(Pet, Speaker, NameAfterNoun, false, r"(?:我家的?|我们家的?|我的|我们的|咱家的?|我养的)(?:那只|这只|那条|这条)?(?P<q>{SPECIESZH})"),
    rule(Pet, Speaker, Empty, true, r"(?:我家的?|我们家的?|我的|我们的|我养的)(?:那只|这只)?(?P<q>{SPECIESZH})(?:死了|去世了|走了|丢了|送人了|跑丢了|没了)"),
    // Likes.
    rule(Likes, Actor, Phrase, false, r"(?:喜欢上了?|爱上了?|迷上了?|喜欢|热爱|喜爱|爱|痴迷于?|沉迷于?|着迷于?|(?P<neg>讨厌|不喜欢|受不了|厌倦了?|烦透了))"),
    // Diet.
    rule(Diet, Actor, Group, false, r"(?:吃|坚持|改吃|开始吃|又开始吃|采用|遵循|实行|执行|奉行|保持|选择|转向|改成|换成|改为|尝试)(?:了|着)?(?P<v>{DIETZH})"),
    rule(Diet, Actor, Group, false, r"(?:是|开始|改吃|又开始)?(?P<v>吃素|吃全素|吃斋|素食主义者|素食者|纯素食者|纯素|生酮饮食|吃清真|吃肉|吃荤|吃海鲜|吃猪肉|吃牛肉)"),
    rule(Diet, Actor, Group, true, r"戒(?:掉了?)?(?P<v>肉|荤|糖|碳水|海鲜|{DRINKSZH})(?:了)?"),
    rule(Diet, Actor, Group, false, r"喝(?P<v>{DRINKSZH})"),
];

struct Compiled {
    set: Option<RegexSet>,
    regexes: Vec<Option<Regex>>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let regexes: Vec<Option<Regex>> = RULES.iter().map(|r| scan::compile(r.pattern)).collect();
        let set = RegexSetBuilder::new(
            regexes
                .iter()
                .map(|r| r.as_ref().map_or("[^\\s\\S]", |r| r.as_str())),
        )
        .case_insensitive(true)
        .size_limit(1 << 26)
        .dfa_size_limit(1 << 24)
        .build()
        .ok();
        Compiled { set, regexes }
    })
}

#[cfg(test)]
pub(super) fn patterns() -> Vec<&'static str> {
    RULES.iter().map(|r| r.pattern).collect()
}

/// Run every rule on the sentence.
pub(super) fn apply(sentence: &str, out: &mut Vec<Found>) {
    let compiled = compiled();
    let Some(set) = &compiled.set else {
        return;
    };
    for index in set.matches(sentence).iter() {
        let (Some(rule), Some(Some(re))) = (RULES.get(index), compiled.regexes.get(index)) else {
            continue;
        };
        for caps in re.captures_iter(sentence) {
            if let Some(found) = apply_one(sentence, rule, &caps) {
                let matched = caps.get(0).map_or("", |m| m.as_str());
                out.extend(status_after(&found, matched));
                out.push(found);
            }
        }
    }
}

fn apply_one(sentence: &str, rule: &Rule, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let holder = match rule.who {
        Actor => holder(sentence, whole.start(), false)?,
        Speaker => Holder {
            subject: Subject::Speaker,
            negated: false,
            dropped: false,
        },
        Owned => Holder {
            subject: clause::owner_before(sentence, whole.start())?,
            negated: false,
            dropped: false,
        },
    };
    if caps.name("past").is_some() || blocked_before(sentence, whole.start(), false) {
        return None;
    }
    let read = read_value(sentence, rule.val, caps, whole.end())?;
    if holder.dropped && !values::quiet_tail(sentence, read.end.max(whole.end())) {
        return None;
    }
    if after_experiential(sentence, whole.end())
        || names_something_else(sentence, rule.slot, whole.end())
    {
        return None;
    }
    let negated = rule.negates || holder.negated || caps.name("neg").is_some();
    let (slot, value) = retarget(rule.slot, read.text, negated)?;
    if value.is_empty() && !negated {
        return None;
    }
    let qualifier = match (slot, caps.name("q")) {
        (Pet, Some(q)) => canonical_species(q.as_str()),
        (Child, Some(q)) => child_kind(q.as_str()).to_string(),
        _ => String::new(),
    };
    Some(Found {
        subject: holder.subject,
        slot,
        qualifier,
        value,
        negated,
        at: whole.start(),
    })
}

/// The status a break-up leaves: "我和小红分手了" → 单身, "离婚了" → 离婚.
fn status_after(found: &Found, matched: &str) -> Option<Found> {
    if found.slot != Partner || !found.negated {
        return None;
    }
    let status = if matched.contains("离婚") {
        "离婚"
    } else if ["分手", "分开", "吹了"].iter().any(|w| matched.contains(w)) {
        "单身"
    } else {
        return None;
    };
    Some(Found {
        slot: RelationshipStatus,
        qualifier: String::new(),
        value: status.to_string(),
        negated: false,
        ..found.clone()
    })
}

/// "结婚纪念日", "结婚照": the status word is part of another noun.
fn names_something_else(sentence: &str, slot: Slot, end: usize) -> bool {
    let next = sentence.get(end..).and_then(|r| r.chars().next());
    slot == RelationshipStatus
        && next.is_some_and(|c| {
            matches!(
                c,
                '纪' | '照'
                    | '典'
                    | '证'
                    | '戒'
                    | '礼'
                    | '对'
                    | '的'
                    | '前'
                    | '时'
                    | '后'
                    | '宴'
                    | '酒'
            )
        })
}

/// "住过", "做过": the experiential aspect says it was so once, not now.
fn after_experiential(sentence: &str, end: usize) -> bool {
    sentence.get(end..).is_some_and(|r| r.starts_with('过'))
}

fn read_value(sentence: &str, val: Val, caps: &Captures, end: usize) -> Option<Read> {
    let group = || {
        caps.name("v").map(|m| Read {
            text: m.as_str().trim().to_string(),
            end: m.end(),
        })
    };
    match val {
        Place => values::place(sentence, end),
        PlaceAfterVerb => values::place_after_verb(sentence, end),
        PlaceIfMoved => ["搬", "定居", "落户", "安家", "移居"]
            .iter()
            .any(|w| sentence.contains(w))
            .then(|| values::place_after_verb(sentence, end))
            .flatten(),
        Org => values::org(sentence, end),
        OrgLoose => values::org_loose(sentence, end),
        JobOpen => values::job(sentence, end, false),
        JobWeak => values::job(sentence, end, true),
        GivenName => values::given_name(sentence, end),
        Person => {
            let read = values::span(sentence, end, &[], false)?;
            values::person_name(&read.text).map(|text| Read { text, ..read })
        }
        Phrase => values::phrase(sentence, end),
        GroupPlace => group().filter(|r| values::is_place_after_verb(&r.text)),
        GroupOrg => group().and_then(|r| {
            let text = strip_measure(&r.text);
            values::is_org_between(&text).then_some(Read { text, end: r.end })
        }),
        GroupOrgStrict => group().filter(|r| {
            values::is_org(&r.text)
                && values::is_org_between(&r.text)
                && !values::is_place(&r.text)
                && [
                    "工作", "跳槽", "入职", "上班", "公司", "单位", "离职", "offer", "职位",
                ]
                .iter()
                .any(|w| sentence.contains(w))
        }),
        GroupPerson => {
            group().and_then(|r| values::person_name(&r.text).map(|text| Read { text, end: r.end }))
        }
        Group => group(),
        OrgAfterIs => values::span(sentence, end, &["工作", "上班"], false)
            .filter(|r| values::is_org_between(&r.text)),
        NameAfterNoun => values::name_after_noun(sentence, end),
        Empty => Some(Read {
            text: String::new(),
            end,
        }),
    }
}

/// "一家银行" → "银行".
fn strip_measure(text: &str) -> String {
    let mut t = text;
    for lead in ["一家", "一个", "一所", "一间", "这家", "那家"] {
        if let Some(rest) = t.strip_prefix(lead) {
            t = rest;
        }
    }
    t.to_string()
}

/// Values that belong to another slot or another form: "我是单身" is a status, "戒肉" means
/// not eating meat, "在一起" is dating.
fn retarget(slot: Slot, value: String, negated: bool) -> Option<(Slot, String)> {
    match slot {
        Diet => {
            let canonical = match value.as_str() {
                "肉" | "荤" => "吃肉".to_string(),
                "糖" | "碳水" | "海鲜" => format!("吃{value}"),
                v if DRINKS_ZH.contains(&v) => format!("喝{value}"),
                _ => value,
            };
            // "我喝咖啡" tells a habit worth keeping only when it ends ("我已经不喝咖啡了").
            if canonical.starts_with('喝') && !negated {
                return None;
            }
            Some((Diet, canonical))
        }
        RelationshipStatus => {
            let canonical = match value.as_str() {
                "在一起" | "领证" if negated => return None,
                "在一起" => "恋爱".to_string(),
                "领证" => "结婚".to_string(),
                "恋爱了" => "恋爱".to_string(),
                "对象" | "女朋友" | "男朋友" | "男友" | "女友" => "恋爱".to_string(),
                _ => value,
            };
            Some((RelationshipStatus, canonical))
        }
        _ => Some((slot, value)),
    }
}

/// Drinks whose habit a line may end ("戒酒", "不喝咖啡了").
const DRINKS_ZH: &[&str] = &[
    "咖啡",
    "酒",
    "白酒",
    "啤酒",
    "红酒",
    "奶茶",
    "可乐",
    "碳酸饮料",
    "含糖饮料",
    "饮料",
    "牛奶",
];

/// 儿子/女儿/孩子 from the noun used.
fn child_kind(q: &str) -> &'static str {
    match q {
        "儿子" => "儿子",
        "女儿" | "闺女" => "女儿",
        _ => "孩子",
    }
}
