//! Rule- and pattern-based persona extraction (EN + ZH).
//!
//! [`persona_snapshot`] reads what speakers say about themselves in the first person ("I'm a
//! nurse", "my sister lives in Boston", "我叫小明", "我养了一只猫") and returns one
//! [`PersonaValue`] per fact, for the keys of the given schema.
//!
//! What it does, and on purpose does not:
//! - **Whose lines.** User-role lines always. Assistant and other lines only when the line names
//!   its speaker (`Line::speaker`), which is how a role-play character talks about itself; their
//!   values are not prefixed with the name — the value's `line` points at the line, so the
//!   caller knows who said it. Unnamed assistant lines ("I'm an AI assistant") give nothing.
//! - **Statements, not questions.** A clause ending in "?" / "？" / "吗", an English clause
//!   opening with an auxiliary and a pronoun ("do you …", "are you …"), a Chinese A-not-A
//!   question ("是不是", "喜不喜欢") and conditional clauses ("if I …", "如果我…") give nothing.
//! - **First person only.** Facts need an explicit "I"/"my"/"我"; dropped subjects ("今年28岁")
//!   are not guessed, except that an English clause may open with "gonna/planning to …".
//! - **Negation.** "I don't like X" / "我不喜欢X" / "我讨厌X" go to `dislikes`; a negated
//!   dislike ("我不讨厌") gives nothing; "I'm not a nurse" / "我不是老师" gives nothing;
//!   a negated trait keeps its negation ("not very patient", "不太外向").
//! - **Past.** Past statements of where one lives, works or what one does are kept with a
//!   marker in the line's language: "I used to live in Paris" → location `formerly Paris`,
//!   "I was a teacher" → job `formerly teacher`, "我以前住在北京" → location `以前在北京`,
//!   "我以前是老师" → job `以前是老师`. Where one grew up or was born is plain (`is from`).
//!   Past likes, pets and habits ("I used to love …") are dropped: they are not the persona now.
//! - **Names, not pronouns.** When the lines name their speakers, a first- or second-person
//!   word left in a value becomes a name: "我是你的老师" said by 赵齐 to 白羽岚 gives
//!   relationships `白羽岚的老师` (the addressee is the nearest other speaker of the window).
//! - **Values** are the user's own words (never translated), cut to the informative phrase:
//!   `nurse`, `hiking in the mountains`, `a dog named Max`, `28`, `28岁`, `妈妈是医生`.
//!   Stage directions in parentheses ("(smiles)", "（开心地跳起来）") are ignored.
//! - **Schema.** Only keys of the schema are produced. A key is understood by its name or,
//!   failing that, by its description (see [`Concept::of_key`]): "occupation", "hobbies",
//!   "hometown", "职业", "爱好" map to the known concepts; a key matching nothing gets nothing.
//!   When two keys map to the same concept, both receive its values.
//! - **Order.** By line, then by the schema's key order, then by position in the line;
//!   identical (key, value) pairs are kept once (the first). Deterministic.

mod en;
mod lexicon;
mod zh;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use mnemos_core::memory_model::{Line, PersonaKey, PersonaSchema, PersonaValue};
use mnemos_core::{ModelError, ModelResult, Role};

use crate::Ctx;
use lexicon::PersonaLexicon;

/// What a persona key is about, independent of how a schema names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Concept {
    Name,
    Age,
    Gender,
    Job,
    Workplace,
    Location,
    Family,
    Pets,
    Likes,
    Dislikes,
    Habits,
    Plans,
    Relationships,
    Personality,
}

/// Words (EN lower case, ZH) that name each concept, tried against a key's name and then its
/// description. Order matters: earlier concepts win when a description mentions several.
const CONCEPT_WORDS: &[(Concept, &[&str])] = &[
    (
        Concept::Name,
        &["name", "nickname", "called", "名字", "姓名", "称呼", "昵称"],
    ),
    (
        Concept::Age,
        &["age", "years old", "birthday", "年龄", "岁数", "年纪"],
    ),
    (Concept::Gender, &["gender", "sex", "性别"]),
    (
        Concept::Workplace,
        &[
            "workplace",
            "employer",
            "company",
            "school",
            "university",
            "where the person works",
            "works or studies",
            "单位",
            "公司",
            "学校",
            "工作地点",
        ],
    ),
    (
        Concept::Job,
        &[
            "job",
            "occupation",
            "profession",
            "career",
            "work",
            "field of study",
            "major",
            "职业",
            "工作",
            "专业",
        ],
    ),
    (
        Concept::Location,
        &[
            "location",
            "city",
            "hometown",
            "home town",
            "residence",
            "address",
            "lives",
            "country",
            "where the person",
            "住址",
            "所在地",
            "城市",
            "家乡",
            "居住",
            "住在",
        ],
    ),
    (Concept::Pets, &["pet", "animal", "宠物"]),
    (
        Concept::Dislikes,
        &[
            "dislike",
            "hate",
            "aversion",
            "avoid",
            "讨厌",
            "不喜欢",
            "厌恶",
        ],
    ),
    (
        Concept::Likes,
        &[
            "like",
            "hobby",
            "hobbies",
            "interest",
            "preference",
            "favorite",
            "favourite",
            "enjoy",
            "love",
            "喜欢",
            "爱好",
            "兴趣",
            "偏好",
        ],
    ),
    (Concept::Habits, &["habit", "routine", "习惯", "日常"]),
    (
        Concept::Plans,
        &[
            "plan",
            "goal",
            "intention",
            "wish",
            "dream",
            "计划",
            "打算",
            "目标",
            "梦想",
        ],
    ),
    (
        Concept::Family,
        &[
            "family", "relative", "parent", "sibling", "children", "家人", "家庭", "亲人",
        ],
    ),
    (
        Concept::Relationships,
        &[
            "relationship",
            "friend",
            "partner",
            "colleague",
            "social",
            "romance",
            "关系",
            "朋友",
            "恋人",
            "社交",
        ],
    ),
    (
        Concept::Personality,
        &[
            "personality",
            "trait",
            "character",
            "temperament",
            "性格",
            "个性",
            "脾气",
        ],
    ),
];

impl Concept {
    /// The concept a schema key stands for: its name first (exact default names, then words
    /// of [`CONCEPT_WORDS`] inside the name), then its description; `None` when nothing matches.
    pub fn of_key(key: &PersonaKey) -> Option<Concept> {
        let name = key.name.trim().to_lowercase();
        let exact = match name.as_str() {
            "name" => Some(Concept::Name),
            "age" => Some(Concept::Age),
            "gender" => Some(Concept::Gender),
            "job" => Some(Concept::Job),
            "workplace" => Some(Concept::Workplace),
            "location" => Some(Concept::Location),
            "family" => Some(Concept::Family),
            "pets" => Some(Concept::Pets),
            "likes" => Some(Concept::Likes),
            "dislikes" => Some(Concept::Dislikes),
            "habits" => Some(Concept::Habits),
            "plans" => Some(Concept::Plans),
            "relationships" => Some(Concept::Relationships),
            "personality" => Some(Concept::Personality),
            _ => None,
        };
        exact
            .or_else(|| Self::mentioned_in(&name.replace(['_', '-'], " ")))
            .or_else(|| Self::mentioned_in(&key.description.to_lowercase()))
    }

    /// The concept whose word occurs first in `text` (ties: the earlier concept of the table).
    fn mentioned_in(text: &str) -> Option<Concept> {
        let mut best: Option<(usize, usize, Concept)> = None;
        for (rank, (concept, words)) in CONCEPT_WORDS.iter().enumerate() {
            for word in words.iter() {
                if let Some(at) = find_word(text, word) {
                    if best.is_none_or(|(b_at, b_rank, _)| (at, rank) < (b_at, b_rank)) {
                        best = Some((at, rank, *concept));
                    }
                }
            }
        }
        best.map(|(_, _, c)| c)
    }
}

/// Position of `word` in `text`, at word boundaries for ASCII words ("age" not in "manage");
/// "like" also matches "likes", and "hobby" "hobbies", through a short plural tail.
fn find_word(text: &str, word: &str) -> Option<usize> {
    if !word.is_ascii() {
        return text.find(word);
    }
    let mut from = 0;
    while let Some(rel) = text.get(from..).and_then(|t| t.find(word)) {
        let at = from + rel;
        let end = at + word.len();
        let before_ok = text
            .get(..at)
            .and_then(|b| b.chars().next_back())
            .is_none_or(|c| !c.is_alphanumeric());
        let tail: String = text
            .get(end..)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        if before_ok && matches!(tail.as_str(), "" | "s" | "es" | "d" | "ies") {
            return Some(at);
        }
        from = end;
    }
    None
}

/// One fact found in a clause, before it is mapped to schema keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fact {
    pub concept: Concept,
    pub value: String,
}

impl Fact {
    pub fn new(concept: Concept, value: impl Into<String>) -> Self {
        Fact {
            concept,
            value: value.into(),
        }
    }
}

/// Values for the schema's keys stated by the window's speakers about themselves. See the
/// module documentation for what counts. Never fails on odd input; an empty window or a schema
/// with no known key gives an empty list. Fails only if the compiled-in word lists do not load
/// ([`ModelError::Unavailable`]), which the unit tests rule out.
pub fn persona_snapshot(
    _ctx: &Ctx,
    window: &[Line],
    schema: &PersonaSchema,
) -> ModelResult<Vec<PersonaValue>> {
    let targets: Vec<(&str, Concept)> = schema
        .keys
        .iter()
        .filter_map(|k| Concept::of_key(k).map(|c| (k.name.as_str(), c)))
        .collect();
    let mut out = Vec::new();
    if targets.is_empty() {
        return Ok(out);
    }
    let lexicon = PersonaLexicon::shared()
        .map_err(|e| ModelError::Unavailable(format!("persona word lists: {e}")))?;
    let mut seen: HashSet<(Option<&str>, &str, String)> = HashSet::new();
    let speakers: Vec<Option<&str>> = window.iter().map(|l| l.speaker.as_deref()).collect();
    for (index, line) in window.iter().enumerate() {
        if !speaks_for_itself(line) {
            continue;
        }
        let speaker = line
            .speaker
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let addressee = mnemos_text::addressee_of(&speakers, index);
        let facts = facts_of_text(lexicon, &line.text);
        for (key, concept) in &targets {
            for fact in facts.iter().filter(|f| f.concept == *concept) {
                let value = match speaker {
                    Some(s) => mnemos_text::third_person(&fact.value, s, addressee),
                    None => fact.value.clone(),
                };
                if seen.insert((speaker, key, value.clone())) {
                    out.push(PersonaValue {
                        key: (*key).to_string(),
                        value,
                        line: Some(index),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Why the persona word lists do not load, if they do not: then every persona task fails, and
/// [`crate::OfflineModel::degradations`] says so up front.
pub fn word_list_defect() -> Option<String> {
    PersonaLexicon::shared()
        .err()
        .map(|e| format!("persona extraction is unavailable: its word lists do not load ({e})"))
}

/// Whether a line's first person is someone whose persona we keep (see the module docs).
fn speaks_for_itself(line: &Line) -> bool {
    match line.role {
        Role::User => true,
        Role::Assistant | Role::Other => line
            .speaker
            .as_deref()
            .is_some_and(|s| !s.trim().is_empty()),
    }
}

/// Every fact of one line's text, in order of appearance, without duplicates.
fn facts_of_text(lexicon: &PersonaLexicon, text: &str) -> Vec<Fact> {
    let cleaned = strip_stage_directions(text);
    let mut facts: Vec<Fact> = Vec::new();
    for sentence in mnemos_text::sentences(&cleaned) {
        let clauses = split_clauses(sentence);
        for (i, clause) in clauses.iter().enumerate() {
            if is_question(lexicon, clause) || is_conditional(lexicon, clause) {
                continue;
            }
            let following = clauses.get(i + 1..).unwrap_or(&[]);
            let inherits_subject = i > 0
                && clauses
                    .get(i - 1)
                    .is_some_and(|prev| prev.starts_with('我') && !prev.starts_with("我们"));
            let mut found = Vec::new();
            en::extract(&lexicon.en, clause, following, &mut found);
            zh::extract(
                &lexicon.zh,
                &lexicon.en,
                clause,
                following,
                inherits_subject,
                &mut found,
            );
            for mut fact in found {
                fact.value = tidy(&lexicon.zh, &fact.value);
                if fact.value.chars().any(char::is_alphanumeric) && !facts.contains(&fact) {
                    facts.push(fact);
                }
            }
        }
    }
    facts
}

/// Drop parenthesised asides: role-play stage directions "(smiles)", "（开心地跳起来）".
/// An unclosed bracket is kept as text.
fn strip_stage_directions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(['(', '（']) {
        let (head, tail) = rest.split_at(open);
        let Some(close) = tail.find([')', '）']) else {
            break;
        };
        out.push_str(head);
        out.push(' ');
        rest = tail.get(close..).map_or("", |t| {
            let mut chars = t.chars();
            chars.next();
            chars.as_str()
        });
    }
    out.push_str(rest);
    out
}

/// Split a sentence into clauses at commas, semicolons, colons, dashes, quotes, ellipses and
/// at spaces between two Chinese characters (chat often uses a space as a comma).
fn split_clauses(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    let mut iter = sentence.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let next = iter.peek().map(|&(_, n)| n);
        let cut = match c {
            ',' | '，' | ';' | '；' | ':' | '：' | '"' | '“' | '”' | '…' | '—' | '–' | '~'
            | '～' | '「' | '」' | '『' | '』' | '\t' => true,
            '-' => prev == Some(' ') && next == Some(' '),
            ' ' | '\u{3000}' => {
                prev.is_some_and(mnemos_text::is_cjk) && next.is_some_and(mnemos_text::is_cjk)
            }
            _ => false,
        };
        if cut {
            push_clause(&mut out, sentence.get(start..i).unwrap_or(""));
            start = i + c.len_utf8();
        }
        prev = Some(c);
    }
    push_clause(&mut out, sentence.get(start..).unwrap_or(""));
    out
}

fn push_clause<'a>(out: &mut Vec<&'a str>, clause: &'a str) {
    let clause = clause.trim();
    if clause.chars().any(char::is_alphanumeric) {
        out.push(clause);
    }
}

/// Whether a clause asks rather than states.
fn is_question(lexicon: &PersonaLexicon, clause: &str) -> bool {
    let end = clause.trim_end_matches(|c: char| {
        c.is_whitespace() || lexicon.zh.trailing.contains(&c) && c != '吗' || is_symbol(c)
    });
    if end.ends_with(['?', '？', '吗', '么']) {
        return true;
    }
    // Chinese alternative questions: "我是男生还是女生".
    if let Some(is_at) = clause.find('是') {
        if clause
            .get(is_at + '是'.len_utf8()..)
            .and_then(|r| r.find("还是"))
            .is_some_and(|i| i > 0)
        {
            return true;
        }
    }
    // Chinese A-not-A: 是不是, 有没有, 喜不喜欢.
    let chars: Vec<char> = clause.chars().collect();
    if chars
        .windows(3)
        .any(|w| matches!(w, [a, '不' | '没', b] if a == b && mnemos_text::is_cjk(*a)))
    {
        return true;
    }
    en::opens_question(&lexicon.en, clause)
}

/// Clauses that state a condition or a wish rather than a fact.
fn is_conditional(lexicon: &PersonaLexicon, clause: &str) -> bool {
    const ZH: &[&str] = &[
        "如果", "要是", "假如", "假设", "万一", "以为", "好像", "除非",
    ];
    ZH.iter().any(|w| clause.starts_with(w)) || en::opens_conditional(&lexicon.en, clause)
}

/// Emoji and other symbols that are neither letters, digits nor punctuation we read.
fn is_symbol(c: char) -> bool {
    !c.is_alphanumeric()
        && !c.is_ascii()
        && !mnemos_text::is_cjk(c)
        && !"，。？！；：、".contains(c)
}

/// Final clean-up of a value: no surrounding spaces, punctuation, symbols or particles.
fn tidy(words: &lexicon::ChineseWords, value: &str) -> String {
    let trimmed = value.trim_matches(|c: char| {
        c.is_whitespace()
            || (c.is_ascii_punctuation() && !matches!(c, '#' | '+' | '%' | '$'))
            || is_symbol(c)
            || "，。？！；：、".contains(c)
    });
    let trimmed = trimmed.trim_end_matches(|c: char| words.trailing.contains(&c) && c != '的');
    let trimmed = trimmed.trim_end_matches(|c: char| {
        c.is_whitespace() || c.is_ascii_punctuation() || "，。？！；：、".contains(c)
    });
    trimmed.split_whitespace().collect::<Vec<_>>().join(" ")
}
