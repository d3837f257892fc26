//! Dialogue lines retold in the third person, so that a sentence kept as memory says who did
//! what without the line around it.
//!
//! A chat line means something only next to who said it and to whom: "我喜欢上女生了" said by
//! 李鱼 is the memory "李鱼喜欢上女生了"; the stage direction "(打断你，语气坚定)" written by
//! 叶安宁 is "叶安宁打断李鱼，语气坚定"; "Oh, I love painting!" said by Melanie is "Melanie
//! loves painting". [`narrate`] rewrites one line that way, by rule, in Chinese and English:
//! - **Stage directions** — text in parentheses (half or full width; an unclosed one runs to
//!   the end of the line) or between asterisks — are the speaker's actions. Each becomes its own
//!   sentence, with the speaker as subject when it opens with a verb, adverb, preposition or
//!   adjective (jieba's part of speech; in English, when it opens with a lowercase word).
//! - **Pronouns** of the first and second person become names: 我 / I / me → the speaker,
//!   你 / 您 / you → the addressee, 我们 / 咱们 / we / us → "speaker和addressee" ("speaker and
//!   addressee"). English possessives follow ("my" → "Ann's") and so does the verb after a
//!   replaced "I" ("I am" → "Ann is", "I love" → "Ann loves", "I went" stays). Without an
//!   addressee, second-person and plural pronouns are left as they are.
//! - **Fillers and forms of address** go: interjection clauses ("嗯，", "哈哈", "Oh,", "Well,"),
//!   a clause that only calls the addressee ("小白，", "师父", ", Mel"), and Chinese
//!   sentence-final particles (吧, 呢, 啊, 呀…). A sentence with nothing left is dropped.
//! - The language of the line is kept: nothing is translated.
//!
//! Each sentence says whether it is an action, a question and whether it names a participant,
//! so a caller can prefer statements of fact and label quoted speech with its speaker.

use crate::{is_cjk, Analyzer};

/// One sentence of a line, retold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NarratedSentence {
    /// The sentence without its final punctuation (a question keeps its question mark).
    pub text: String,
    /// A stage direction (what the speaker does), not speech.
    pub action: bool,
    /// The speaker asks something.
    pub question: bool,
    /// The text names the speaker or the addressee (after pronouns were replaced).
    pub names_participant: bool,
}

/// Retell `line`, said by `speaker` to `addressee`, as third-person sentences (see the module
/// documentation). Sentences come in the line's order.
pub fn narrate(line: &str, speaker: &str, addressee: Option<&str>) -> Vec<NarratedSentence> {
    let people = People::new(speaker, addressee);
    let mut out = Vec::new();
    for segment in segments(line) {
        let (text, action) = match segment {
            Segment::Action(t) => (t, true),
            Segment::Speech(t) => (t, false),
        };
        for sentence in crate::sentences(text) {
            if let Some(narrated) = narrate_sentence(sentence, action, &people) {
                out.push(narrated);
            }
        }
    }
    out
}

/// `text` with only its first- and second-person pronouns replaced by names (see
/// [`narrate`]): for a phrase taken out of `speaker`'s line, e.g. a persona value ("你的老师"
/// → "白羽岚的老师"). Nothing else changes.
pub fn third_person(text: &str, speaker: &str, addressee: Option<&str>) -> String {
    let people = People::new(speaker, addressee);
    if people.speaker.is_empty() {
        return text.to_string();
    }
    if text.chars().any(is_cjk) {
        chinese_pronouns(text, &people)
    } else {
        english_pronouns(text, &people)
    }
}

/// Whom the line at `at` speaks to, given every line's speaker in order (`None` for a line
/// without one): the nearest other speaker before it, else the nearest after it.
pub fn addressee_of<'a>(speakers: &[Option<&'a str>], at: usize) -> Option<&'a str> {
    let speaker = speakers.get(at).copied().flatten()?.trim();
    let other =
        |n: &&Option<&'a str>| n.is_some_and(|n| !n.trim().is_empty() && n.trim() != speaker);
    speakers
        .get(..at)?
        .iter()
        .rev()
        .find(other)
        .or_else(|| {
            speakers
                .get(at + 1..)
                .and_then(|rest| rest.iter().find(other))
        })
        .copied()
        .flatten()
        .map(str::trim)
}

struct People<'a> {
    speaker: &'a str,
    addressee: Option<&'a str>,
}

impl<'a> People<'a> {
    /// Trimmed names; an empty addressee, or one that is the speaker, is none.
    fn new(speaker: &'a str, addressee: Option<&'a str>) -> Self {
        let speaker = speaker.trim();
        let addressee = addressee
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != speaker);
        People { speaker, addressee }
    }

    fn pair(&self, chinese: bool) -> Option<String> {
        let a = self.addressee?;
        Some(if chinese {
            format!("{}和{a}", self.speaker)
        } else {
            format!("{} and {a}", self.speaker)
        })
    }

    fn named_in(&self, text: &str) -> bool {
        (!self.speaker.is_empty() && text.contains(self.speaker))
            || self.addressee.is_some_and(|a| text.contains(a))
    }
}

enum Segment<'a> {
    Action(&'a str),
    Speech(&'a str),
}

/// Split a line into stage directions and speech, in order.
fn segments(line: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut speech_start = 0;
    let mut i = 0;
    let bytes_len = line.len();
    while i < bytes_len {
        let Some(c) = line[i..].chars().next() else {
            break;
        };
        let close = match c {
            '(' => Some(')'),
            '（' => Some('）'),
            '*' => Some('*'),
            _ => None,
        };
        let Some(close) = close else {
            i += c.len_utf8();
            continue;
        };
        let inner_start = i + c.len_utf8();
        let (inner_end, resume) = match line[inner_start..].find(close) {
            Some(at) => (inner_start + at, inner_start + at + close.len_utf8()),
            // An asterisk without its twin is just a character; an open parenthesis runs on.
            None if c == '*' => {
                i = inner_start;
                continue;
            }
            None => (bytes_len, bytes_len),
        };
        push_segment(&mut out, Segment::Speech(&line[speech_start..i]));
        push_segment(&mut out, Segment::Action(&line[inner_start..inner_end]));
        speech_start = resume;
        i = resume;
    }
    push_segment(
        &mut out,
        Segment::Speech(&line[speech_start.min(bytes_len)..]),
    );
    out
}

fn push_segment<'a>(out: &mut Vec<Segment<'a>>, segment: Segment<'a>) {
    let text = match &segment {
        Segment::Action(t) | Segment::Speech(t) => t,
    };
    if text.chars().any(char::is_alphanumeric) {
        out.push(segment);
    }
}

/// Sentence-final punctuation that ends a sentence (removed from the narrated text).
const FINAL_PUNCT: &[char] = &[
    '。', '！', '？', '；', '!', '?', ';', '.', '…', '~', '～', '，', ',', '、', '：', ':', '"',
    '“', '”', '「', '」', ' ',
];

/// Chinese sentence-final particles (mood, not content).
const ZH_PARTICLES: &[char] = &[
    '吧', '呢', '啊', '呀', '哦', '嘛', '啦', '哈', '哟', '噢', '喔', '呐', '咯', '哒', '捏', '嘞',
];

/// Chinese clauses that carry no content on their own.
const ZH_FILLERS: &[&str] = &[
    "嗯",
    "嗯嗯",
    "嗯呢",
    "啊",
    "哦",
    "哦哦",
    "噢",
    "喔",
    "唉",
    "哎",
    "哎呀",
    "哎哟",
    "诶",
    "欸",
    "嘿",
    "嘿嘿",
    "哈",
    "哈哈",
    "呵呵",
    "嘻嘻",
    "呃",
    "额",
    "好",
    "好的",
    "好吧",
    "行",
    "行吧",
    "是的",
    "是啊",
    "是呀",
    "对",
    "对啊",
    "对呀",
    "对的",
    "没事",
    "哇",
    "哇哦",
    "喂",
    "天哪",
    "天啊",
    "那个",
    "这个",
    "然后",
    "所以",
    "其实",
    "真的",
    "当然",
    "嗯好",
    "好啊",
    "好呀",
    "可以",
    "ok",
    "OK",
    "你好",
    "您好",
    "早",
    "早安",
    "晚安",
    "早上好",
    "晚上好",
    "谢谢",
    "再见",
    "拜拜",
    "明白",
    "明白了",
    "知道了",
    "收到",
    "好嘞",
    "不是",
    "不",
    "没有",
    "是吗",
    "真的吗",
    "什么",
    "为什么",
    "怎么了",
];

/// English words that open a sentence without adding to it ("Oh, …", "Well, …").
const EN_FILLERS: &[&str] = &[
    "oh", "well", "wow", "yeah", "yes", "yep", "yup", "hey", "hi", "hello", "um", "uh", "hmm",
    "haha", "hahaha", "lol", "ok", "okay", "so", "aw", "aww", "ah", "omg", "gosh", "sure", "right",
    "alright", "thanks", "nah", "no", "oops", "whoa", "wait", "look", "listen", "dude", "man",
    "honey", "dear", "babe", "sweetie",
];

fn narrate_sentence(sentence: &str, action: bool, people: &People) -> Option<NarratedSentence> {
    let trimmed = sentence.trim();
    let chinese = trimmed.chars().any(is_cjk);
    let question = is_question(trimmed, chinese);
    let core = trimmed.trim_end_matches(FINAL_PUNCT).trim();
    let cleaned = if chinese {
        clean_chinese(core, people)
    } else {
        clean_english(core, people)
    };
    if !cleaned.chars().any(char::is_alphanumeric) {
        return None;
    }
    let mut text = if chinese {
        chinese_pronouns(&cleaned, people)
    } else {
        english_pronouns(&cleaned, people)
    };
    if action && !people.speaker.is_empty() && needs_subject(&text, chinese, people) {
        text = if chinese {
            format!("{}{text}", people.speaker)
        } else {
            format!("{} {text}", people.speaker)
        };
    }
    // "李鱼…" / "Mel!": a name called out says nothing.
    let mut rest = text.clone();
    for name in [Some(people.speaker), people.addressee]
        .into_iter()
        .flatten()
    {
        if !name.is_empty() {
            rest = rest.replace(name, "");
        }
    }
    if !rest.chars().any(char::is_alphanumeric) {
        return None;
    }
    if !chinese {
        text = capitalize_first(&text);
    }
    if question {
        text.push(if chinese { '？' } else { '?' });
    }
    let names_participant = people.named_in(&text);
    Some(NarratedSentence {
        text,
        action,
        question,
        names_participant,
    })
}

fn is_question(sentence: &str, chinese: bool) -> bool {
    let core = sentence.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '?' && c != '？');
    if core.ends_with('?') || core.ends_with('？') {
        return true;
    }
    chinese && {
        let bare = core.trim_end_matches(|c: char| !c.is_alphanumeric());
        bare.ends_with('吗') || bare.ends_with("么样")
    }
}

/// The clauses of a Chinese sentence without filler and address clauses at either end, and
/// without final particles.
fn clean_chinese(core: &str, people: &People) -> String {
    let clauses: Vec<&str> = core
        .split(['，', ',', '、'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let droppable = |clause: &str| is_zh_filler(clause) || is_zh_address(clause, people);
    let first = clauses.iter().position(|c| !droppable(c));
    let last = clauses.iter().rposition(|c| !droppable(c));
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let mut kept: Vec<String> = clauses[first..=last]
        .iter()
        .map(|c| strip_leading_interjection(c).to_string())
        .collect();
    if let Some(end) = kept.last_mut() {
        *end = strip_final_particles(end.trim_end_matches(FINAL_PUNCT));
    }
    kept.retain(|c| !c.is_empty());
    kept.join("，")
}

/// Drop mood particles that jieba splits off as words of their own ("走吧" → "走", while
/// "酒吧" stays).
fn strip_final_particles(clause: &str) -> String {
    let mut words = Analyzer::shared().pos_tags(clause);
    while let Some((word, _)) = words.last() {
        let mut chars = word.chars();
        let particle = matches!((chars.next(), chars.next()), (Some(c), None) if ZH_PARTICLES.contains(&c))
            || word.chars().all(|c| FINAL_PUNCT.contains(&c));
        if !particle {
            break;
        }
        words.pop();
    }
    words.into_iter().map(|(w, _)| w).collect()
}

fn bare(clause: &str) -> &str {
    clause
        .trim_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches(ZH_PARTICLES)
}

fn is_zh_filler(clause: &str) -> bool {
    let b = bare(clause);
    b.is_empty()
        || ZH_FILLERS.contains(&b)
        || b.chars().all(|c| {
            matches!(
                c,
                '哈' | '嗯' | '啊' | '哦' | '呵' | '嘿' | '嘻' | '呜' | '唔'
            )
        })
}

/// A clause that only calls someone: the addressee's name, or one or two nouns ("师父",
/// "老师", "小白", "亲爱的") of at most four characters.
fn is_zh_address(clause: &str, people: &People) -> bool {
    let b = bare(clause);
    if b.is_empty() {
        return false;
    }
    if people.addressee == Some(b) || b == "亲爱的" {
        return true;
    }
    if b.chars().count() > 4 || !b.chars().all(is_cjk) {
        return false;
    }
    let tags = Analyzer::shared().pos_tags(b);
    tags.len() <= 2
        && tags
            .iter()
            .all(|(_, tag)| matches!(tag.as_str(), "n" | "nr" | "nrt" | "nrfg" | "nz"))
}

/// "嗯明天去" → "明天去": an interjection glued to the clause.
fn strip_leading_interjection(clause: &str) -> &str {
    clause.trim_start_matches(['嗯', '哦', '噢', '唉', '哎', '呃', '额', '诶'])
}

/// 我们/咱们 → the pair, 我 → the speaker, 你/您 → the addressee (你们 stays).
fn chinese_pronouns(text: &str, people: &People) -> String {
    let pair = people.pair(true);
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let replaced = |prefix: &str| rest.starts_with(prefix);
        let (with, len): (Option<&str>, usize) =
            if ["我们", "咱们", "咱俩", "我俩"].iter().any(|p| replaced(p)) {
                (pair.as_deref(), "我们".len())
            } else if replaced("你们") {
                (None, "你们".len())
            } else if c == '你' || c == '您' {
                (people.addressee, c.len_utf8())
            } else if c == '我' {
                (Some(people.speaker), c.len_utf8())
            } else if c == '咱' {
                (pair.as_deref(), c.len_utf8())
            } else {
                (None, c.len_utf8())
            };
        match with {
            Some(name) if !name.is_empty() => out.push_str(name),
            _ => out.push_str(&rest[..len]),
        }
        rest = &rest[len..];
    }
    out
}

/// Does an action need its speaker in front? Only when it does not open with someone's name
/// and opens like a predicate.
fn needs_subject(text: &str, chinese: bool, people: &People) -> bool {
    let opens_with = |name: &str| !name.is_empty() && text.starts_with(name);
    if opens_with(people.speaker) || people.addressee.is_some_and(opens_with) {
        return false;
    }
    if chinese {
        let tags = Analyzer::shared().pos_tags(text);
        let Some((word, tag)) = tags.first() else {
            return false;
        };
        if word.chars().all(|c| !is_cjk(c)) {
            return false;
        }
        let t = tag.as_str();
        t.starts_with('v')
            || t.starts_with('d')
            || t.starts_with('a')
            || t == "p"
            || t == "c"
            || ZH_BODY_WORDS.iter().any(|w| word.starts_with(w))
    } else {
        text.chars().next().is_some_and(char::is_lowercase)
    }
}

/// Nouns that open a description of the speaker's own face, voice or body ("眼神依旧冷淡",
/// "头也没抬"): such a stage direction is about the speaker.
const ZH_BODY_WORDS: &[&str] = &[
    "眼神", "眼睛", "眼眶", "眼泪", "目光", "视线", "脸", "脸颊", "嘴角", "嘴", "眉头", "眉", "头",
    "手", "手指", "心", "心里", "声音", "语气", "表情", "神情", "身体", "耳朵", "尾巴",
];

// ---- English ----

fn clean_english(core: &str, people: &People) -> String {
    let clauses: Vec<&str> = core.split(',').map(str::trim).collect();
    let is_address = |clause: &str| {
        let words: Vec<String> = clause
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            return true;
        }
        let name_words: Vec<String> = people
            .addressee
            .map(|a| a.split_whitespace().map(str::to_lowercase).collect())
            .unwrap_or_default();
        // "Hey Mel": a greeting and a capitalized name.
        let greeting_and_name = {
            let raw: Vec<&str> = clause.split_whitespace().collect();
            raw.len() <= 3
                && words
                    .first()
                    .is_some_and(|w| EN_FILLERS.contains(&w.as_str()))
                && raw
                    .iter()
                    .skip(1)
                    .all(|w| w.chars().next().is_some_and(char::is_uppercase))
        };
        greeting_and_name
            || words.len() <= 4
                && words
                    .iter()
                    .all(|w| EN_FILLERS.contains(&w.as_str()) || name_words.contains(w))
    };
    let first = clauses.iter().position(|c| !is_address(c));
    let last = clauses.iter().rposition(|c| !is_address(c));
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let mut text = clauses[first..=last].join(", ");
    // "Oh I love it": a filler word glued to the start.
    while let Some(word) = text.split_whitespace().next().map(str::to_string) {
        let bare_word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        let glued = EN_FILLERS.contains(&bare_word.as_str())
            && text.split_whitespace().count() > 3
            && !matches!(bare_word.as_str(), "so" | "well" | "right" | "look" | "man");
        if !glued {
            break;
        }
        text = text
            .trim_start()
            .get(word.len()..)
            .unwrap_or("")
            .trim_start()
            .to_string();
    }
    text
}

fn capitalize_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if c.is_lowercase() => c.to_uppercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// Adverbs that may sit between a subject and its verb ("I really love").
const EN_ADVERBS: &[&str] = &[
    "really",
    "just",
    "also",
    "always",
    "never",
    "still",
    "actually",
    "often",
    "usually",
    "even",
    "totally",
    "definitely",
    "recently",
    "finally",
    "sometimes",
    "already",
    "only",
    "truly",
    "kinda",
    "mostly",
    "absolutely",
    "honestly",
    "literally",
    "simply",
    "certainly",
    "seriously",
    "currently",
    "personally",
    "probably",
    "generally",
    "especially",
    "sort",
    "kind",
    "of",
];

/// Verb forms that do not take a third-person -s.
const EN_INVARIANT: &[&str] = &[
    "can",
    "could",
    "will",
    "would",
    "should",
    "might",
    "must",
    "may",
    "shall",
    "can't",
    "couldn't",
    "won't",
    "wouldn't",
    "shouldn't",
    "didn't",
    "wasn't",
    "did",
    "had",
    "was",
    "went",
    "got",
    "made",
    "saw",
    "took",
    "came",
    "felt",
    "found",
    "gave",
    "told",
    "thought",
    "bought",
    "brought",
    "left",
    "met",
    "ran",
    "began",
    "wrote",
    "spent",
    "kept",
    "knew",
    "heard",
    "said",
    "lost",
    "won",
    "sold",
    "built",
    "sent",
    "taught",
    "caught",
    "fell",
    "led",
    "paid",
    "became",
    "chose",
    "drove",
    "ate",
    "drank",
    "swam",
    "sang",
    "flew",
    "grew",
    "slept",
    "stood",
    "understood",
    "held",
    "sat",
    "let",
    "put",
    "set",
    "cut",
    "hit",
    "hurt",
    "read",
    "quit",
    "forgot",
    "gotta",
    "gonna",
    "wanna",
    "used",
    "need",
    "'m",
    "am",
    "is",
];

/// Third-person singular of a verb after a replaced "I".
fn third_person_verb(verb: &str) -> Option<String> {
    let lower = verb.to_lowercase();
    let special = match lower.as_str() {
        "am" | "'m" => Some("is"),
        "have" | "'ve" => Some("has"),
        "do" => Some("does"),
        "don't" | "don’t" => Some("doesn't"),
        "haven't" | "haven’t" => Some("hasn't"),
        "go" => Some("goes"),
        "were" => Some("was"),
        "aren't" => Some("isn't"),
        _ => None,
    };
    if let Some(s) = special {
        return Some(s.to_string());
    }
    if EN_INVARIANT.contains(&lower.as_str())
        || !lower.chars().all(|c| c.is_ascii_lowercase())
        || lower.len() < 2
        || lower.ends_with("ed")
        || lower.ends_with("ing")
    {
        return None;
    }
    let consonant_y =
        lower.ends_with('y') && !lower[..lower.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    Some(if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "sh", "ch", "x", "z", "o"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    })
}

/// One word of an English sentence with what surrounds it.
struct EnWord<'a> {
    lead: &'a str,
    word: &'a str,
    trail: &'a str,
}

fn split_word(token: &str) -> EnWord<'_> {
    let start = token
        .find(|c: char| c.is_alphanumeric())
        .unwrap_or(token.len());
    let end = token
        .rfind(|c: char| c.is_alphanumeric())
        .map_or(start, |i| {
            i + token[i..].chars().next().map_or(1, char::len_utf8)
        });
    EnWord {
        lead: &token[..start],
        word: &token[start..end.max(start)],
        trail: &token[end.max(start)..],
    }
}

fn english_pronouns(text: &str, people: &People) -> String {
    let s = people.speaker;
    let pair = people.pair(false);
    let possessive = |name: &str| format!("{name}'s");
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::with_capacity(tokens.len() + 4);
    // After a replaced singular subject, the next verb (past adverbs) agrees.
    let mut agree = false;
    for token in tokens {
        let EnWord { lead, word, trail } = split_word(token);
        let lower = word.to_lowercase().replace('’', "'");
        let a = people.addressee;
        let replaced: Option<(String, bool)> = match lower.as_str() {
            "i" => Some((s.to_string(), true)),
            "i'm" => Some((format!("{s} is"), false)),
            "i've" => Some((format!("{s} has"), false)),
            "i'll" => Some((format!("{s} will"), false)),
            "i'd" => Some((format!("{s} would"), false)),
            "me" | "myself" => Some((s.to_string(), false)),
            "my" | "mine" => Some((possessive(s), false)),
            "you" | "yourself" => a.map(|a| (a.to_string(), false)),
            "you're" => a.map(|a| (format!("{a} is"), false)),
            "you've" => a.map(|a| (format!("{a} has"), false)),
            "you'll" => a.map(|a| (format!("{a} will"), false)),
            "you'd" => a.map(|a| (format!("{a} would"), false)),
            "your" | "yours" => a.map(|a| (possessive(a), false)),
            "we" | "us" | "ourselves" => pair.clone().map(|p| (p, false)),
            "we're" => pair.clone().map(|p| (format!("{p} are"), false)),
            "we've" => pair.clone().map(|p| (format!("{p} have"), false)),
            "we'll" => pair.clone().map(|p| (format!("{p} will"), false)),
            "we'd" => pair.clone().map(|p| (format!("{p} would"), false)),
            "our" | "ours" => pair.clone().map(|p| (possessive(&p), false)),
            _ => None,
        };
        if let Some((name, subject)) = replaced {
            out.push(format!("{lead}{name}{trail}"));
            agree = subject && trail.is_empty();
            continue;
        }
        if agree {
            if EN_ADVERBS.contains(&lower.as_str()) && trail.is_empty() {
                out.push(token.to_string());
                continue;
            }
            agree = false;
            if let Some(verb) = third_person_verb(&lower) {
                out.push(format!("{lead}{verb}{trail}"));
                continue;
            }
        }
        // "you are" / "you were" after a replaced second person: singular.
        if let Some(last) = out.last() {
            let addressee_subject = people.addressee.is_some_and(|a| last.ends_with(a));
            if addressee_subject {
                let agreed = match lower.as_str() {
                    "are" => Some("is"),
                    "were" => Some("was"),
                    "have" => Some("has"),
                    "don't" => Some("doesn't"),
                    "haven't" => Some("hasn't"),
                    "aren't" => Some("isn't"),
                    _ => None,
                };
                if let Some(verb) = agreed {
                    out.push(format!("{lead}{verb}{trail}"));
                    continue;
                }
            }
        }
        out.push(token.to_string());
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str, speaker: &str, addressee: Option<&str>) -> Vec<String> {
        narrate(line, speaker, addressee)
            .into_iter()
            .map(|s| s.text)
            .collect()
    }

    #[test]
    fn chinese_first_and_second_person_become_names() {
        assert_eq!(
            texts("我喜欢上女生了", "李鱼", Some("叶安宁")),
            ["李鱼喜欢上女生了"]
        );
        assert_eq!(
            texts(
                "(轻叹一声)你总是这样，时常忘记重要的事情。",
                "叶安宁",
                Some("李鱼")
            ),
            ["叶安宁轻叹一声", "李鱼总是这样，时常忘记重要的事情"]
        );
        assert_eq!(
            texts("嗯，明天上午咱们去种树", "赵齐", Some("白羽岚")),
            ["明天上午赵齐和白羽岚去种树"]
        );
        // 你们 is not one person.
        assert_eq!(texts("你们先走", "赵齐", Some("白羽岚")), ["你们先走"]);
    }

    #[test]
    fn stage_directions_are_the_speakers_actions() {
        let n = narrate("（去酒吧）", "李鱼", Some("叶安宁"));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].text, "李鱼去酒吧");
        assert!(n[0].action && n[0].names_participant);
        assert_eq!(
            texts("(打断你，语气坚定)你只需做自己。", "叶安宁", Some("李鱼")),
            ["叶安宁打断李鱼，语气坚定", "李鱼只需做自己"]
        );
        // A scene, not a deed: no subject is forced on it.
        assert_eq!(texts("（两天后）", "赵齐", Some("白羽岚")), ["两天后"]);
        assert_eq!(
            texts("（沙子越来越多）", "赵齐", Some("白羽岚")),
            ["沙子越来越多"]
        );
        // The speaker's own face or voice is the speaker's.
        assert_eq!(
            texts("(眼神依旧冷淡)", "白羽岚", Some("赵齐")),
            ["白羽岚眼神依旧冷淡"]
        );
        // An unclosed parenthesis runs to the end of the line.
        assert_eq!(
            texts("（找到一个鬼鬼祟祟的人", "赵齐", Some("白羽岚")),
            ["赵齐找到一个鬼鬼祟祟的人"]
        );
        assert_eq!(
            texts(
                "*smiles warmly* I painted a lake",
                "Melanie",
                Some("Caroline")
            ),
            ["Melanie smiles warmly", "Melanie painted a lake"]
        );
    }

    #[test]
    fn fillers_addresses_and_particles_go() {
        assert!(texts("好的，师父。", "白羽岚", Some("赵齐")).is_empty());
        assert!(texts("哈哈哈", "赵齐", None).is_empty());
        assert!(texts("你……", "叶安宁", Some("李鱼")).is_empty());
        assert_eq!(
            texts("小白，我们走吧！", "赵齐", Some("小白")),
            ["赵齐和小白走"]
        );
        assert_eq!(texts("我是女生哦", "李鱼", Some("叶安宁")), ["李鱼是女生"]);
        assert!(texts("Hey Mel!", "Caroline", Some("Mel")).is_empty());
        assert!(texts("Hey Mel!", "Caroline", None).is_empty());
    }

    #[test]
    fn questions_are_marked() {
        let n = narrate("你吃饭了吗？", "赵齐", Some("白羽岚"));
        assert!(n[0].question);
        assert_eq!(n[0].text, "白羽岚吃饭了吗？");
        let n = narrate("Did you go?", "Ann", Some("Bo"));
        assert!(n[0].question);
        assert_eq!(n[0].text, "Did Bo go?");
    }

    #[test]
    fn english_verbs_agree_with_the_new_subject() {
        assert_eq!(
            texts("Oh, I love painting!", "Melanie", Some("Caroline")),
            ["Melanie loves painting"]
        );
        assert_eq!(
            texts(
                "I'm a nurse and my sister lives in Boston.",
                "Ann",
                Some("Bo")
            ),
            ["Ann is a nurse and Ann's sister lives in Boston"]
        );
        assert_eq!(
            texts(
                "I really enjoy it. I went to a support group.",
                "Caroline",
                Some("Mel")
            ),
            [
                "Caroline really enjoys it",
                "Caroline went to a support group"
            ]
        );
        assert_eq!(
            texts(
                "You are so brave, we should go together",
                "Mel",
                Some("Caroline")
            ),
            ["Caroline is so brave, Mel and Caroline should go together"]
        );
        assert_eq!(
            texts("I study and I watch", "Ann", None),
            ["Ann studies and Ann watches"]
        );
    }

    #[test]
    fn without_an_addressee_second_person_stays() {
        assert_eq!(texts("你是谁", "赵齐", None), ["你是谁"]);
        assert_eq!(texts("I like you", "Ann", None), ["Ann likes you"]);
    }

    #[test]
    fn phrases_get_names_and_nothing_else() {
        assert_eq!(
            third_person("你的老师", "赵齐", Some("白羽岚")),
            "白羽岚的老师"
        );
        assert_eq!(third_person("我的星星，吧", "微符", None), "微符的星星，吧");
        assert_eq!(
            third_person("your teacher", "Ann", Some("Bo")),
            "Bo's teacher"
        );
        assert_eq!(third_person("你的老师", "", Some("白羽岚")), "你的老师");
    }

    #[test]
    fn the_addressee_is_the_nearest_other_speaker() {
        let speakers = [Some("甲"), None, Some("甲"), Some("乙"), Some("丙")];
        assert_eq!(addressee_of(&speakers, 0), Some("乙"));
        assert_eq!(addressee_of(&speakers, 3), Some("甲"));
        assert_eq!(addressee_of(&speakers, 4), Some("乙"));
        assert_eq!(addressee_of(&speakers, 1), None);
        assert_eq!(addressee_of(&[Some("甲")], 0), None);
        assert_eq!(addressee_of(&speakers, 9), None);
    }

    #[test]
    fn odd_input_never_panics() {
        for line in [
            "",
            "(",
            "（",
            "*",
            "**",
            "()",
            "I",
            "我",
            "，，，",
            "(你)(我)",
            "…",
        ] {
            let _ = narrate(line, "甲", Some("乙"));
            let _ = narrate(line, "", None);
        }
    }
}
