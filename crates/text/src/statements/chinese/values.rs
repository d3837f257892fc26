//! Reading a Chinese value after a rule's match: the run of characters up to the clause's end
//! or a word that ends values (的, 了, 已经…), checked with jieba's parts of speech when the kind
//! of value matters (a place, an organization, a name).

use super::super::lexicon::{NOT_OCCUPATIONS_ZH, OCCUPATION_SUFFIXES_ZH};
use super::clause::{is_clause_mark, tags};

/// A value: its text and where it ends in the sentence.
#[derive(Clone, Debug)]
pub(super) struct Read {
    pub text: String,
    pub end: usize,
}

/// Words that end a value ("上海的…", "厦门了", "北京已经三年了").
#[rustfmt::skip]
const VALUE_ENDS: &[&str] = &[
    "的", "了", "呢", "吧", "啊", "啦", "呀", "哦", "嘛", "喔", "哈", "咯", "哟", "已经", "都", "也", "还", "就", "里",
    "上班", "工作", "住", "生活", "附近", "一带", "这边", "那边", "呗", "现在", "目前", "如今", "以后", "之后", "快", "差不多",
    "大概", "将近", "整整", "才", "又", "和", "跟", "与", "或", "而", "但", "不过", "所以", "因为", "并且", "而且", "以及",
    "然后", "今年", "去年", "每天", "每周", "这个", "那个", "这里", "那里", "一起", "很", "挺", "非常", "特别", "真", "超",
    "好", "了吗", "过",
];

/// Parts of speech that end a value: particles, adverbs, prepositions, conjunctions, pronouns,
/// punctuation (and verbs, for places and organizations).
fn ends_value(tag: &str, cut_verbs: bool) -> bool {
    matches!(
        tag,
        "uj" | "ul" | "uz" | "ug" | "ud" | "uv" | "y" | "d" | "p" | "c" | "x" | "r" | "e" | "o"
    ) || (cut_verbs && matches!(tag, "v" | "vn" | "vd" | "t"))
}

/// Leading words dropped from a value ("一名护士" → "护士").
const VALUE_LEADS: &[&str] = &[
    "一名",
    "一位",
    "一个",
    "一家",
    "一间",
    "一所",
    "这家",
    "那家",
    "了",
    "一家叫",
    "一个叫",
    "一所叫",
    "一间叫",
    "家叫",
    "叫做",
];

/// The value at byte `pos`: the run up to a clause mark, without leading measure words, cut
/// at the first jieba word that ends values (see [`VALUE_ENDS`] and [`ends_value`]).
pub(super) fn span(
    sentence: &str,
    pos: usize,
    extra_ends: &[&str],
    cut_verbs: bool,
) -> Option<Read> {
    let rest = sentence.get(pos..)?;
    let clause_end = rest.find(is_clause_mark).unwrap_or(rest.len());
    let clause = rest.get(..clause_end)?;
    let mut offset = clause.len() - clause.trim_start().len();
    let mut text = clause.trim();
    while let Some(lead) = VALUE_LEADS
        .iter()
        .filter(|l| text.starts_with(*l) && text.len() > l.len())
        .max_by_key(|l| l.len())
    {
        text = text.get(lead.len()..).unwrap_or("");
        offset += lead.len();
    }
    let mut cut = 0;
    for (i, (word, tag)) in tags(text).iter().enumerate() {
        let ends = VALUE_ENDS.contains(&word.as_str())
            || extra_ends.contains(&word.as_str())
            || ends_value(tag, cut_verbs);
        if ends && i > 0 {
            break;
        }
        cut += word.len();
    }
    let value = super::super::scan::trim_value(text.get(..cut.min(text.len()))?.trim());
    if value.is_empty() {
        return None;
    }
    Some(Read {
        text: value.to_string(),
        end: pos + offset + cut,
    })
}

/// Words that are never places or employers.
#[rustfmt::skip]
const NOT_VALUES: &[&str] = &[
    "这里", "那里", "这儿", "那儿", "家", "家里", "哪", "哪里", "哪儿", "一起", "附近", "这边", "那边", "外面", "外地", "老家",
    "自己", "公司", "单位", "学校里", "市区", "郊区", "国外", "国内", "城里", "乡下", "农村", "宿舍", "楼上", "楼下", "隔壁",
    "对面", "这", "那", "他", "她", "它", "你", "我", "我们", "他们",
];

/// Endings that make a phrase a place ("杭州市", "浦东新区").
const PLACE_SUFFIXES: &[&str] = &[
    "市", "省", "区", "县", "镇", "村", "州", "城", "国", "岛", "乡", "街", "路", "小区", "湾",
    "港", "山", "道", "府", "郡", "洲",
];

/// A place at `pos`: a name jieba tags as a place, a phrase with a place ending, or a Latin
/// name.
pub(super) fn place(sentence: &str, pos: usize) -> Option<Read> {
    let ends = [
        "工作", "上班", "读书", "上学", "旅行", "旅游", "玩", "度假", "出差", "定居", "发展",
    ];
    let read = span(sentence, pos, &ends, true)?;
    let text = read.text.as_str();
    let preposition = text.starts_with(['在', '到', '过', '院']);
    if NOT_VALUES.contains(&text) || text.chars().count() > 12 || preposition {
        return None;
    }
    is_place(text).then_some(read)
}

/// Whether a phrase after a verb that takes a place (住在, 搬到, 定居在) can be that place:
/// jieba does not know every town (大理 is a plain noun to it), so anything short that is not
/// a verb, a pronoun, a word that is never a place or an organization will do.
pub(super) fn is_place_after_verb(text: &str) -> bool {
    let n = text.chars().count();
    if !(2..=12).contains(&n) || NOT_VALUES.contains(&text) {
        return false;
    }
    if is_place(text) {
        return true;
    }
    let tagged = tags(text);
    let first_tag = tagged.first().map_or("", |(_, t)| t.as_str());
    let verb_or_function = matches!(
        first_tag,
        "v" | "vn" | "d" | "r" | "p" | "m" | "c" | "u" | "a" | "ad" | "t" | "q"
    );
    !verb_or_function && !ORG_SUFFIXES.iter().any(|s| text.ends_with(s))
}

/// A place after a verb that takes one (see [`is_place_after_verb`]).
pub(super) fn place_after_verb(sentence: &str, pos: usize) -> Option<Read> {
    let ends = [
        "工作", "上班", "读书", "上学", "旅行", "旅游", "玩", "度假", "出差", "定居", "发展",
    ];
    let mut read = span(sentence, pos, &ends, true)?;
    // jieba keeps some place-and-purpose pairs whole ("云南旅游"): the purpose is not the place.
    if let Some(cut) = ends
        .iter()
        .find_map(|e| read.text.strip_suffix(e).filter(|p| p.chars().count() >= 2))
    {
        read.end -= read.text.len() - cut.len();
        read.text = cut.to_string();
    }
    is_place_after_verb(&read.text).then_some(read)
}

/// An employer written between 在 and 上班/工作: anything that is not a place or a word that
/// is never an employer (jieba tags 华为 as a name and 百度 as a plain noun).
pub(super) fn is_org_between(text: &str) -> bool {
    let n = text.chars().count();
    let tagged = tags(text);
    let starts_like_a_verb = tagged
        .first()
        .is_some_and(|(_, t)| matches!(t.as_str(), "v" | "vn" | "d" | "p" | "r" | "m" | "c" | "t"));
    (2..=14).contains(&n)
        && !text.contains('的')
        && !starts_like_a_verb
        && !NOT_VALUES.contains(&text)
        && (is_org(text) || !is_place(text))
        && !["他", "她", "你", "我", "这", "那"]
            .iter()
            .any(|p| text.starts_with(p))
}

/// Whether a phrase names a place.
pub(super) fn is_place(text: &str) -> bool {
    if text.chars().all(|c| c.is_ascii_alphabetic() || c == ' ') {
        return text.starts_with(|c: char| c.is_ascii_uppercase());
    }
    // "超市", "青禾食品": an organization's ending outweighs a place's ("市").
    if ORG_SUFFIXES
        .iter()
        .any(|s| s.chars().count() >= 2 && text.ends_with(s))
    {
        return false;
    }
    if PLACE_SUFFIXES.iter().any(|s| text.ends_with(s)) && text.chars().count() >= 2 {
        return true;
    }
    let tagged = tags(text);
    tagged.first().is_some_and(|(_, t)| t == "ns")
        || (tagged.len() == 1 && tagged.iter().all(|(_, t)| t.starts_with("ns") || t == "nz"))
}

/// Endings and words that make a phrase an employer.
#[rustfmt::skip]
const ORG_SUFFIXES: &[&str] = &[
    "公司", "集团", "银行", "医院", "学校", "大学", "中学", "小学", "学院", "研究所", "研究院", "事务所", "工作室", "餐厅", "饭店",
    "酒店", "工厂", "厂", "局", "部", "院", "所", "中心", "科技", "网络", "传媒", "报社", "电视台", "出版社", "基金会", "协会",
    "幼儿园", "诊所", "药店", "超市", "商场", "书店", "咖啡馆", "咖啡店", "面包店", "律所", "机构", "实验室", "政府", "大厂", "外企",
    "国企", "央企", "创业公司", "初创公司", "门店", "分店", "店",
    // Industries a company is named after ("青禾食品", "海川船舶", "松岭数据").
    "食品", "物流", "船舶", "数据", "通信", "通讯", "制药", "药业", "医药", "生物", "电子", "能源",
    "汽车", "地产", "置业", "证券", "保险", "基金", "资本", "投资", "咨询", "教育", "文化", "广告",
    "航空", "物业", "餐饮", "服饰", "家居", "化工", "钢铁", "建设", "建筑", "工程", "电力", "软件",
    "信息", "互联网", "游戏", "影视", "控股", "实业", "贸易", "商贸", "快递", "运输", "航运", "海运",
    "智能", "机器人", "半导体", "芯片", "光电", "新能源", "乳业", "酒业", "纺织", "印刷", "家电",
    "电器", "股份", "数码", "动漫", "体育", "环保", "材料", "机械", "重工", "矿业", "农业", "水务",
    "燃气", "租赁", "支付", "金融", "安防", "云计算", "医疗", "健康", "美妆", "日化", "零售", "电商",
];

/// An employer at `pos` (see [`is_org`]).
pub(super) fn org(sentence: &str, pos: usize) -> Option<Read> {
    let ends = ["工作", "上班", "任职", "实习", "打工", "当", "做", "担任"];
    let read = span(sentence, pos, &ends, true)?;
    is_org(&read.text).then_some(read)
}

/// An employer after a verb of joining: up to a particle, not a place, at most ten
/// characters ("字节跳动", "一家创业公司").
pub(super) fn org_loose(sentence: &str, pos: usize) -> Option<Read> {
    let read = span(
        sentence,
        pos,
        &["工作", "上班", "任职", "实习", "当", "做", "担任"],
        false,
    )?;
    let text = read.text.as_str();
    let n = text.chars().count();
    let ok =
        (2..=10).contains(&n) && !NOT_VALUES.contains(&text) && (is_org(text) || !is_place(text));
    ok.then_some(read)
}

/// Whether a phrase names an organization: an organization ending, jieba's organization or
/// brand tags, or a Latin name — and not a place.
pub(super) fn is_org(text: &str) -> bool {
    if NOT_VALUES.contains(&text) || text.chars().count() > 16 {
        return false;
    }
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '&' | '-' | '.'))
    {
        return text.starts_with(|c: char| c.is_ascii_uppercase() || c.is_ascii_digit());
    }
    if ORG_SUFFIXES.iter().any(|s| text.ends_with(s))
        || super::super::lexicon::KNOWN_ORGS_ZH.contains(&text)
    {
        return true;
    }
    let tagged = tags(text);
    let place = tagged.iter().all(|(_, t)| t.starts_with("ns"));
    !place
        && tagged
            .iter()
            .any(|(_, t)| matches!(t.as_str(), "nt" | "nz" | "nrt" | "eng" | "j"))
}

/// An occupation at `pos`; `strict` asks for an occupation ending ("锁匠", "护士").
pub(super) fn job(sentence: &str, pos: usize, strict: bool) -> Option<Read> {
    let mut read = span(sentence, pos, &["工作", "了"], false)?;
    // "我的工作是做翻译": the occupation is what is done.
    if let Some(rest) = ["做", "当", "干"]
        .iter()
        .find_map(|v| read.text.strip_prefix(v))
        .filter(|r| r.chars().count() >= 2)
    {
        read.text = rest.to_string();
    }
    let text = read.text.as_str();
    // "成为了小米的新CEO": the phrase owns what follows, it is not the job.
    if sentence
        .get(read.end..)
        .is_some_and(|r| r.starts_with('的'))
    {
        return None;
    }
    let n = text.chars().count();
    if n > 12 || NOT_OCCUPATIONS_ZH.contains(&text) || is_family(text) {
        return None;
    }
    if strict && !is_occupation(text) {
        return None;
    }
    let pronoun = ["他", "她", "它", "你", "我", "这", "那", "什么", "谁"]
        .iter()
        .any(|p| text.starts_with(p));
    (!pronoun).then_some(read)
}

fn is_family(text: &str) -> bool {
    [
        "妈妈", "爸爸", "母亲", "父亲", "妻子", "丈夫", "老婆", "老公", "奶奶", "爷爷", "孩子",
    ]
    .contains(&text)
}

/// Whether a phrase ends like an occupation.
pub(super) fn is_occupation(text: &str) -> bool {
    !NOT_OCCUPATIONS_ZH.contains(&text)
        && !text.ends_with('人')
        && OCCUPATION_SUFFIXES_ZH.iter().any(|s| text.ends_with(s))
}

/// Common one-character surnames, for names jieba does not know.
const SURNAMES: &str = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤";

/// A person's name as written: a Latin name, or two to four Han characters that jieba tags as
/// a name or that start with a surname or 小/老/阿.
pub(super) fn person_name(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text
        .chars()
        .all(|c| c.is_alphabetic() && !crate::is_cjk(c) || c == ' ')
    {
        let capital = text.starts_with(|c: char| c.is_uppercase());
        return capital.then(|| text.to_string());
    }
    let n = text.chars().count();
    if !(2..=4).contains(&n)
        || !text.chars().all(crate::is_cjk)
        || super::super::lexicon::RELATIONS_ZH.contains(&text)
    {
        return None;
    }
    let first = text.chars().next()?;
    let prefixed = matches!(first, '小' | '老' | '阿') && n <= 3;
    let surname = SURNAMES.contains(first) && n <= 3;
    let tagged = tags(text);
    let jieba_name = tagged.len() == 1
        && tagged
            .first()
            .is_some_and(|(_, t)| matches!(t.as_str(), "nr" | "nrt" | "nrfg" | "nz"));
    (prefixed || surname || jieba_name).then(|| text.to_string())
}

/// A name given after 叫 (any short run of characters: 芝麻糊, 小橘灯, Mochi).
pub(super) fn given_name(sentence: &str, pos: usize) -> Option<Read> {
    let rest = sentence.get(pos..)?;
    let trimmed = rest.trim_start_matches(['它', '他', '她', '做', '作', '“', '「', '"', ' ']);
    let offset = rest.len() - trimmed.len();
    let ends = [
        "现在", "今年", "很", "非常", "特别", "可", "超", "是", "”", "」", "\"",
    ];
    let read = span(sentence, pos + offset, &ends, false)?;
    let n = read.text.chars().count();
    let refused =
        ["什么", "啥", "它", "他", "她", "你", "这个", "那个"].contains(&read.text.as_str());
    ((1..=8).contains(&n) && !refused).then_some(read)
}

/// A name written right after the noun it names ("我家猫芝麻糊挺好的" → 芝麻糊): a noun that is
/// not an adverb, a verb, a time or a measure, up to the words that end values.
pub(super) fn name_after_noun(sentence: &str, pos: usize) -> Option<Read> {
    let rest = sentence.get(pos..)?;
    if rest.starts_with([
        '叫', '是', '的', '也', '都', '还', '又', '就', '在', '很', '最', '咪', '猫', '狗',
    ]) {
        return None;
    }
    let ends = [
        "挺", "很", "非常", "特别", "今年", "现在", "最近", "已经", "还", "也", "都", "是", "叫",
        "真", "太", "好", "可",
    ];
    let read = span(sentence, pos, &ends, true)?;
    let first_tag = tags(&read.text)
        .first()
        .map(|(_, t)| t.clone())
        .unwrap_or_default();
    let not_a_name = matches!(
        first_tag.as_str(),
        "d" | "v" | "vn" | "a" | "ad" | "p" | "u" | "r" | "c" | "t" | "m" | "q" | "y" | "e" | "f"
    );
    let n = read.text.chars().count();
    ((1..=6).contains(&n) && !not_a_name).then_some(read)
}

/// A short phrase (a favourite, something liked).
pub(super) fn phrase(sentence: &str, pos: usize) -> Option<Read> {
    let read = span(sentence, pos, &[], false)?;
    let n = read.text.chars().count();
    let pronoun = [
        "你", "他", "她", "它", "这", "那", "什么", "自己", "谁", "哪",
    ]
    .iter()
    .any(|p| read.text.starts_with(p));
    ((1..=12).contains(&n) && !pronoun).then_some(read)
}

/// Whether what follows a value is quiet: only particles and a duration ("了", "已经三年了"),
/// so a clause without a written subject still reads as the speaker's statement.
pub(super) fn quiet_tail(sentence: &str, end: usize) -> bool {
    let rest = sentence.get(end..).unwrap_or("");
    let clause_end = rest.find(is_clause_mark).unwrap_or(rest.len());
    let tail = rest.get(..clause_end).unwrap_or("");
    tail.chars().all(|c| {
        matches!(
            c,
            '了' | '啦'
                | '呢'
                | '啊'
                | '呀'
                | '哦'
                | '吧'
                | '嘛'
                | '哈'
                | '咯'
                | '已'
                | '经'
                | '快'
                | '差'
                | '不'
                | '多'
                | '个'
                | '年'
                | '月'
                | '周'
                | '天'
                | '星'
                | '期'
                | '半'
                | '几'
                | '一'
                | '二'
                | '两'
                | '三'
                | '四'
                | '五'
                | '六'
                | '七'
                | '八'
                | '九'
                | '十'
                | ' '
        ) || c.is_ascii_digit()
    })
}
