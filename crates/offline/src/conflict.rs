//! Conflict detection and merging of two statements (EN + ZH).
//!
//! A statement is read as a sequence of analyzer tokens, each classified as a pronoun (by person),
//! a negation cue, a value (number, date, Chinese numeral + measure word), a content term or
//! another function word. Two statements conflict when they are about the same subject and
//! disagree in one of three ways:
//! - **negation**: opposite polarity (odd vs even count of cues such as not / n't / never /
//!   stopped, 不 / 没 / 没有 / 别 / 不再 / 再也不, or an antonym of "like" such as hate / 讨厌)
//!   over nearly the same content terms (overlap coefficient ≥ [`NEGATION_OVERLAP`], Jaccard
//!   ≥ [`NEGATION_JACCARD`], or a high cosine, below);
//! - **numbers**: the same content terms around the values (overlap ≥ [`NUMBER_OVERLAP`]) and
//!   each side has a value the other lacks ("2 cats" vs "3 cats", "两只猫" vs "三只猫");
//! - **different value for a single-valued key**: both use the same key word of a single-valued
//!   attribute (live, work, name, 住, 叫, 工作…) or the same copula frame ("my favorite color
//!   is", "I'm a", "我是"), with the same subject before it, and each side has content the
//!   other lacks ("Paris" vs "Berlin") in the clause after the key, a short value (at most
//!   [`MAX_KEY_VALUE_TERMS`] / [`MAX_COPULA_VALUE_TERMS`] content terms).
//!
//! - **an announced update**: the newer statement announces a change ("I moved", "… now",
//!   "换工作", see [`mnemos_text::announces_change`]), the persons of the two statements' pronouns
//!   agree (or one has none), and both speak of the same single-valued attribute under any of
//!   its names (an [`ATTRIBUTE_FAMILIES`] word on each side: "I live in Tallinn" / "home is Porto
//!   now"), or both give values for the same content terms ("I run 10 km" / "I now run 25 km");
//!   and each side says something the other does not, besides those words. Only statements
//!   of at most [`MAX_UPDATE_TERMS`] content terms: in a long text the cues turn up by chance.
//!
//! "Same subject" means: the person of the pronouns and the content words before the anchor
//! (the key, the copula, the cue or the first value) agree, or one side leaves the subject out.
//! The embedding decides the one case the words leave open: a negation whose content terms are
//! contained in the other statement's but make up less than [`NEGATION_JACCARD`] of the union
//! ("I don't drink coffee" vs "I drink a big cup of coffee every morning") conflicts only when
//! the two statements' cosine is at least [`NEGATION_COSINE`]. Unrelated statements share too
//! few words for any rule, and paraphrases or identical statements have no disagreement, so
//! neither conflicts.

use std::collections::BTreeSet;

use mnemos_core::retrieval::dense::dot;
use mnemos_core::ModelResult;
use mnemos_text::{Analyzer, TokenKind};

use crate::summarize::{embed, is_chinese};
use crate::Ctx;

/// Overlap coefficient of content terms needed for a negation conflict.
pub const NEGATION_OVERLAP: f32 = 0.67;
/// Jaccard similarity of content terms needed for a negation conflict.
pub const NEGATION_JACCARD: f32 = 0.5;
/// Overlap coefficient of the non-value content terms needed for a number conflict.
pub const NUMBER_OVERLAP: f32 = 0.6;
/// Most content terms in the value after a single-valued key ("in Paris with my wife": 2).
pub const MAX_KEY_VALUE_TERMS: usize = 4;
/// Most content terms in a copula's complement ("a nurse": 1); longer ones are descriptions
/// ("I'm excited to see where pottery takes me"), not values.
pub const MAX_COPULA_VALUE_TERMS: usize = 3;
/// Cosine at which a negation with a lower Jaccard similarity still conflicts.
pub const NEGATION_COSINE: f32 = 0.55;
/// Most content terms either side of an announced update may have: the rule reads single
/// statements; in a longer text (a summary of many) some word of change and some attribute name
/// turn up by chance.
pub const MAX_UPDATE_TERMS: usize = 15;

/// Whether `new` contradicts `previous` (see the module documentation).
pub fn conflicts(ctx: &Ctx, previous: &str, new: &str) -> ModelResult<bool> {
    let a = Statement::parse(ctx.analyzer, previous);
    let b = Statement::parse(ctx.analyzer, new);
    if a.tokens.is_empty() || b.tokens.is_empty() {
        return Ok(false);
    }
    if number_conflict(&a, &b) || key_frame(&a, &b) || copula_frame(&a, &b) {
        return Ok(true);
    }
    if mnemos_text::announces_change(ctx.analyzer, new) && announced_update(&a, &b) {
        return Ok(true);
    }
    Ok(match negation(&a, &b) {
        Negation::None => false,
        Negation::Clear => true,
        Negation::Borderline => {
            let v = embed(ctx, &[previous, new])?;
            matches!(v.as_slice(), [x, y] if dot(x, y) >= NEGATION_COSINE)
        }
    })
}

/// One text holding the newer statement and a record of the older one, in the input's language.
pub fn merge(ctx: &Ctx, previous: &str, new: &str) -> ModelResult<String> {
    let (previous, new) = (previous.trim(), new.trim());
    // Follow the newer text's language; when it has none (digits, emoji), the older one's.
    let chinese = match mnemos_text::detect_language(new) {
        mnemos_text::Language::Other => is_chinese(previous),
        _ => is_chinese(new),
    };
    if previous.is_empty() {
        return Ok(new.to_string());
    }
    if new.is_empty() {
        return Ok(previous.to_string());
    }
    if conflicts(ctx, previous, new)? {
        return Ok(if chinese {
            format!("{new}（之前：{previous}）")
        } else {
            format!("{new} (previously: {previous})")
        });
    }
    // One says everything the other does: keep the more complete one (the newer on a tie).
    let (pa, pb) = (plain(previous), plain(new));
    if pb.contains(&pa) {
        return Ok(new.to_string());
    }
    if pa.contains(&pb) {
        return Ok(previous.to_string());
    }
    let (sa, sb) = (
        Statement::parse(ctx.analyzer, previous),
        Statement::parse(ctx.analyzer, new),
    );
    let (a, b) = (sa.all_terms(), sb.all_terms());
    if a.is_subset(&b) {
        return Ok(new.to_string());
    }
    if b.is_subset(&a) {
        return Ok(previous.to_string());
    }
    let head = previous.trim_end_matches(['.', '。', ';', '；', ' ']);
    Ok(if chinese {
        format!("{head}；{new}")
    } else {
        format!("{head}; {new}")
    })
}

/// Letters and digits only, lowercased: for containment checks that ignore punctuation.
fn plain(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Grammatical person of a pronoun.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Person {
    First,
    FirstPlural,
    Second,
    ThirdMale,
    ThirdFemale,
    ThirdPlural,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Pronoun(Person),
    /// A negation cue.
    Cue,
    /// A number or date, normalized.
    Value,
    Content,
    /// A copula ("is", "am", "是"); contracted forms carry their person ("I'm").
    Copula(Option<Person>),
    /// Any other function word.
    Other,
}

#[derive(Clone, Debug)]
struct Tok {
    term: String,
    kind: Kind,
    /// Index of the clause (text between , . ; ! ? and their Chinese forms) it is in.
    clause: usize,
}

struct Statement {
    tokens: Vec<Tok>,
}

impl Statement {
    fn parse(analyzer: &Analyzer, text: &str) -> Self {
        let mut tokens = Vec::new();
        let (mut clause, mut last_end) = (0, 0);
        for t in analyzer.tokens(text) {
            let gap = text.get(last_end..t.start).unwrap_or("");
            if gap.contains(CLAUSE_BREAKS) {
                clause += 1;
            }
            last_end = last_end.max(t.end);
            let first_new = tokens.len();
            classify(analyzer, t.term, t.kind, &mut tokens);
            for tok in tokens.iter_mut().skip(first_new) {
                tok.clause = clause;
            }
        }
        Statement { tokens }
    }

    fn terms_of(&self, pick: impl Fn(&Kind) -> bool) -> BTreeSet<&str> {
        self.tokens
            .iter()
            .filter(|t| pick(&t.kind))
            .map(|t| t.term.as_str())
            .collect()
    }

    fn content(&self) -> BTreeSet<&str> {
        self.terms_of(|k| *k == Kind::Content)
    }

    fn values(&self) -> BTreeSet<&str> {
        self.terms_of(|k| *k == Kind::Value)
    }

    fn all_terms(&self) -> BTreeSet<&str> {
        self.terms_of(|k| matches!(k, Kind::Content | Kind::Value | Kind::Cue))
    }

    /// Odd number of negation cues.
    fn negated(&self) -> bool {
        self.tokens.iter().filter(|t| t.kind == Kind::Cue).count() % 2 == 1
    }

    fn position(&self, pick: impl Fn(&Tok) -> bool) -> Option<usize> {
        self.tokens.iter().position(pick)
    }

    /// The subject before token `anchor`: the persons of its pronouns and its content terms.
    /// The anchor's own person counts (a contracted copula such as "I'm").
    fn subject(&self, anchor: usize) -> (BTreeSet<Person>, BTreeSet<&str>) {
        let mut persons = BTreeSet::new();
        let mut terms = BTreeSet::new();
        for t in self.tokens.iter().take(anchor + 1) {
            match &t.kind {
                Kind::Pronoun(p) | Kind::Copula(Some(p)) => {
                    persons.insert(*p);
                }
                Kind::Content => {
                    terms.insert(t.term.as_str());
                }
                _ => {}
            }
        }
        // The anchor itself is the key, not part of the subject.
        if let Some(t) = self.tokens.get(anchor) {
            if t.kind == Kind::Content {
                terms.remove(t.term.as_str());
            }
        }
        (persons, terms)
    }
}

/// Subjects agree when they are equal or one of them is left out ("住在上海").
fn same_subject(a: &Statement, a_at: usize, b: &Statement, b_at: usize) -> bool {
    let (pa, ta) = a.subject(a_at);
    let (pb, tb) = b.subject(b_at);
    let empty = |p: &BTreeSet<Person>, t: &BTreeSet<&str>| p.is_empty() && t.is_empty();
    empty(&pa, &ta) || empty(&pb, &tb) || (pa == pb && ta == tb)
}

fn overlap_coefficient(a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> f32 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / smaller as f32
}

fn jaccard(a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

/// Each side has something the other lacks.
fn both_differ<T: Ord>(a: &BTreeSet<T>, b: &BTreeSet<T>) -> bool {
    a.difference(b).next().is_some() && b.difference(a).next().is_some()
}

/// How strongly two statements look like one negating the other.
enum Negation {
    None,
    /// Opposite polarity over nearly the same words.
    Clear,
    /// Opposite polarity, one side's words inside the other's, but many extra words.
    Borderline,
}

fn negation(a: &Statement, b: &Statement) -> Negation {
    if a.negated() == b.negated() {
        return Negation::None;
    }
    let (ca, cb) = (a.content(), b.content());
    if ca.is_empty()
        || cb.is_empty()
        || overlap_coefficient(&ca, &cb) < NEGATION_OVERLAP
        || both_differ(&a.values(), &b.values())
    {
        return Negation::None;
    }
    let (neg, pos) = if a.negated() { (a, b) } else { (b, a) };
    let Some(cue) = neg.position(|t| t.kind == Kind::Cue) else {
        return Negation::None;
    };
    // Anchor the positive statement at the first content word the negation applies to.
    let target = neg
        .tokens
        .iter()
        .skip(cue + 1)
        .find(|t| t.kind == Kind::Content)
        .map(|t| t.term.as_str());
    let pos_at = target
        .and_then(|w| pos.position(|t| t.kind == Kind::Content && t.term == w))
        .or_else(|| pos.position(|t| t.kind == Kind::Content));
    // The subject is what comes before the cue in one and before the negated word in the other.
    if !pos_at.is_some_and(|p| subject_before(neg, cue, pos, p)) {
        return Negation::None;
    }
    if jaccard(&ca, &cb) >= NEGATION_JACCARD {
        Negation::Clear
    } else {
        Negation::Borderline
    }
}

fn number_conflict(a: &Statement, b: &Statement) -> bool {
    let (va, vb) = (a.values(), b.values());
    if !both_differ(&va, &vb) {
        return false;
    }
    let (ca, cb) = (a.content(), b.content());
    if overlap_coefficient(&ca, &cb) < NUMBER_OVERLAP {
        return false;
    }
    match (
        a.position(|t| t.kind == Kind::Value),
        b.position(|t| t.kind == Kind::Value),
    ) {
        (Some(x), Some(y)) => subject_before(a, x, b, y),
        _ => false,
    }
}

/// Subjects strictly before positions `x` and `y`.
fn subject_before(a: &Statement, x: usize, b: &Statement, y: usize) -> bool {
    match (x.checked_sub(1), y.checked_sub(1)) {
        (Some(x), Some(y)) => same_subject(a, x, b, y),
        // Nothing before the anchor on one side: its subject is left out.
        _ => true,
    }
}

/// Same single-valued key word in both, same subject before it, and each side has a value the
/// other lacks.
fn key_frame(a: &Statement, b: &Statement) -> bool {
    if a.negated() != b.negated() {
        return false;
    }
    for (i, tok) in a.tokens.iter().enumerate() {
        if tok.kind != Kind::Content || !is_single_valued_key(&tok.term) {
            continue;
        }
        let Some(j) = b.position(|t| t.kind == Kind::Content && t.term == tok.term) else {
            continue;
        };
        if !same_subject(a, i, b, j) {
            continue;
        }
        if different_values(&tail(a, i), &tail(b, j), MAX_KEY_VALUE_TERMS) {
            return true;
        }
    }
    false
}

/// "X is A" vs "X is B" with the same X: each side has a complement the other lacks.
fn copula_frame(a: &Statement, b: &Statement) -> bool {
    if a.negated() != b.negated() {
        return false;
    }
    let copula = |s: &Statement| s.position(|t| matches!(t.kind, Kind::Copula(_)));
    let (Some(i), Some(j)) = (copula(a), copula(b)) else {
        return false;
    };
    if !same_subject(a, i, b, j) {
        return false;
    }
    // Both subjects must be stated for a copula frame: "is nice" alone says too little.
    let (pa, ta) = a.subject(i);
    let (pb, tb) = b.subject(j);
    if (pa.is_empty() && ta.is_empty()) || (pb.is_empty() && tb.is_empty()) {
        return false;
    }
    different_values(&tail(a, i), &tail(b, j), MAX_COPULA_VALUE_TERMS)
}

/// Names of one single-valued personal attribute (analyzer terms: Snowball stems, jieba words).
/// Two statements that use words of one family speak of the same attribute, whichever words.
pub const ATTRIBUTE_FAMILIES: &[&[&str]] = &[
    // where one lives
    &[
        "live", "move", "reloc", "home", "flat", "apart", "hous", "resid", "address", "hometown",
        "住", "住在", "搬到", "搬去", "搬家", "搬", "家", "住址",
    ],
    // what one does for a living
    &[
        "work", "job", "career", "occup", "profess", "employ", "salari", "工作", "上班", "职业",
    ],
    // whom one is with
    &[
        "partner",
        "boyfriend",
        "girlfriend",
        "husband",
        "wife",
        "spous",
        "date",
        "对象",
        "男朋友",
        "女朋友",
        "老公",
        "老婆",
    ],
    // what someone or something is called
    &["name", "call", "renam", "名字", "叫", "叫做"],
    // what one likes best
    &["favorit", "favourit", "prefer", "最", "最爱", "最喜欢"],
    // where one is going
    &[
        "plan", "trip", "travel", "visit", "vacat", "holiday", "计划", "打算", "旅行", "旅游",
    ],
    // what and where one studies
    &[
        "studi", "major", "school", "univers", "colleg", "学校", "专业", "就读",
    ],
];

/// The newer statement updates the older one (its change cue is checked by the caller): same
/// persons, same attribute, and each side has something the other lacks.
fn announced_update(a: &Statement, b: &Statement) -> bool {
    if persons_clash(
        &speaker_persons(a.tokens.iter()),
        &speaker_persons(b.tokens.iter()),
    ) {
        return false;
    }
    let (ca, cb) = (a.content(), b.content());
    if ca.len() > MAX_UPDATE_TERMS || cb.len() > MAX_UPDATE_TERMS {
        return false;
    }
    let family = ATTRIBUTE_FAMILIES
        .iter()
        .find(|f| ca.iter().any(|t| f.contains(t)) && cb.iter().any(|t| f.contains(t)));
    match family {
        None => {
            let same_measure =
                both_differ(&a.values(), &b.values()) && ca.intersection(&cb).next().is_some();
            if !same_measure {
                return false;
            }
        }
        Some(f) => {
            let key = |s: &Statement| {
                s.position(|t| t.kind == Kind::Content && f.contains(&t.term.as_str()))
            };
            let (Some(i), Some(j)) = (key(a), key(b)) else {
                return false;
            };
            // The older statement gives the attribute a value ("I live in Tallinn", not "a
            // loving home"), and the two speak of the same owner's ("his name" is not "their
            // name").
            let value = tail(a, i);
            if value.is_empty()
                || value.len() > MAX_KEY_VALUE_TERMS
                || persons_clash(&clause_persons(a, i), &clause_persons(b, j))
            {
                return false;
            }
        }
    }
    let (sa, sb) = (said_besides(a, family), said_besides(b, family));
    both_differ(&sa, &sb)
}

/// What a statement says besides the attribute's names and the words of change.
fn said_besides<'s>(s: &'s Statement, family: Option<&&[&str]>) -> BTreeSet<&'s str> {
    s.terms_of(|k| matches!(k, Kind::Content | Kind::Value))
        .into_iter()
        .filter(|t| !family.is_some_and(|f| f.contains(t)) && !mnemos_text::is_change_term(t))
        .collect()
}

/// Both sides name whose statement it is, and not the same person.
fn persons_clash(a: &BTreeSet<Person>, b: &BTreeSet<Person>) -> bool {
    !a.is_empty() && !b.is_empty() && a.is_disjoint(b)
}

/// Persons of the pronouns in `tokens`, "we" folded into "I" (they speak of the same
/// household: "my cat" / "our cat") and "you" left out (it addresses the listener, "guess what,
/// you know…", and says nothing of whose fact it is).
fn speaker_persons<'t>(tokens: impl Iterator<Item = &'t Tok>) -> BTreeSet<Person> {
    tokens
        .filter_map(|t| match t.kind {
            Kind::Pronoun(p) | Kind::Copula(Some(p)) if p != Person::Second => Some(p),
            _ => None,
        })
        .map(|p| match p {
            Person::FirstPlural => Person::First,
            p => p,
        })
        .collect()
}

/// [`speaker_persons`] of the pronouns before token `at` in its clause: whose attribute it is.
fn clause_persons(s: &Statement, at: usize) -> BTreeSet<Person> {
    let clause = s.tokens.get(at).map_or(0, |t| t.clause);
    speaker_persons(s.tokens.iter().take(at + 1).filter(|t| t.clause == clause))
}

/// Content terms and values after token `at` in its clause: what a key or copula says.
fn tail(s: &Statement, at: usize) -> BTreeSet<&str> {
    let clause = s.tokens.get(at).map_or(0, |t| t.clause);
    s.tokens
        .iter()
        .skip(at + 1)
        .take_while(|t| t.clause == clause)
        .filter(|t| matches!(t.kind, Kind::Content | Kind::Value))
        .map(|t| t.term.as_str())
        .collect()
}

/// Both tails differ and each is short enough to be a value rather than a new statement.
fn different_values(a: &BTreeSet<&str>, b: &BTreeSet<&str>, max_terms: usize) -> bool {
    a.len() <= max_terms && b.len() <= max_terms && both_differ(a, b)
}

/// Characters that end a clause.
const CLAUSE_BREAKS: &[char] = &[
    ',', '.', ';', ':', '!', '?', '，', '。', '；', '：', '！', '？', '、', '\n',
];

/// Classify one analyzer token, pushing one or two tokens ("不喜欢" → cue + "喜欢").
fn classify(analyzer: &Analyzer, term: String, kind: TokenKind, out: &mut Vec<Tok>) {
    let push = |out: &mut Vec<Tok>, term: &str, kind: Kind| {
        out.push(Tok {
            term: term.to_string(),
            kind,
            clause: 0,
        })
    };
    match kind {
        TokenKind::Number => {
            let value = term.parse::<f64>().map(|v| v.to_string()).unwrap_or(term);
            push(out, &value, Kind::Value);
            return;
        }
        TokenKind::Date => {
            push(out, &term, Kind::Value);
            return;
        }
        TokenKind::Word | TokenKind::Cjk => {}
    }
    let t = term.as_str();
    if let Some(p) = pronoun(t) {
        push(out, t, Kind::Pronoun(p));
    } else if let Some(p) = copula(t) {
        push(out, t, Kind::Copula(p));
    } else if NEGATION_CUES.contains(&t) {
        push(out, t, Kind::Cue);
    } else if let Some(liked) = LIKE_SYNONYMS.iter().find(|(w, _)| *w == t).map(|p| p.1) {
        push(out, liked, Kind::Content);
    } else if let Some(liked) = LIKE_ANTONYMS.iter().find(|(w, _)| *w == t).map(|p| p.1) {
        push(out, "", Kind::Cue);
        push(out, liked, Kind::Content);
    } else if let Some(rest) = negated_cjk_word(t) {
        push(out, "", Kind::Cue);
        // The rest of the word is classified like a word of its own ("不喜欢" → "喜欢").
        classify(analyzer, rest.to_string(), TokenKind::Cjk, out);
    } else if let Some(value) = cjk_quantity(t) {
        push(out, &value.to_string(), Kind::Value);
    } else if ADVERBS.contains(&t) || analyzer.is_stopword(t) {
        push(out, t, Kind::Other);
    } else {
        push(out, t, Kind::Content);
    }
}

fn pronoun(t: &str) -> Option<Person> {
    use Person::*;
    Some(match t {
        "i" | "me" | "my" | "mine" | "myself" | "i've" | "i'd" | "i'll" | "ive" | "我" | "我的" => {
            First
        }
        "we" | "us" | "our" | "ours" | "ourselves" | "we've" | "we'd" | "we'll" | "我们"
        | "咱们" | "咱" => FirstPlural,
        "you" | "your" | "yours" | "yourself" | "you've" | "you'd" | "you'll" | "youve" | "你"
        | "您" | "你们" => Second,
        "he" | "him" | "his" | "himself" | "he'd" | "he'll" | "他" => ThirdMale,
        "she" | "her" | "hers" | "herself" | "she'd" | "she'll" | "她" => ThirdFemale,
        "they" | "them" | "their" | "theirs" | "they've" | "they'd" | "they'll" | "他们"
        | "她们" => ThirdPlural,
        _ => return None,
    })
}

/// Copulas, with the person a contraction carries.
fn copula(t: &str) -> Option<Option<Person>> {
    use Person::*;
    Some(match t {
        "is" | "am" | "are" | "was" | "were" | "是" => None,
        "i'm" | "im" => Some(First),
        "we're" => Some(FirstPlural),
        "you're" | "youre" => Some(Second),
        "he's" => Some(ThirdMale),
        "she's" => Some(ThirdFemale),
        "they're" | "theyre" => Some(ThirdPlural),
        _ => return None,
    })
}

const NEGATION_CUES: &[&str] = &[
    "not",
    "no",
    "never",
    "nor",
    "don't",
    "doesn't",
    "didn't",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "won't",
    "wouldn't",
    "can't",
    "cannot",
    "couldn't",
    "haven't",
    "hasn't",
    "hadn't",
    "shouldn't",
    "mustn't",
    "dont",
    "doesnt",
    "didnt",
    "isnt",
    "arent",
    "wasnt",
    "werent",
    "cant",
    "havent",
    "hasnt",
    "stop",
    "quit",
    "不",
    "没",
    "没有",
    "别",
    "不再",
    "再也不",
    "未",
    "从不",
    "从没",
    "从未",
    "从来不",
    "从来没有",
    "绝不",
    "并不",
    "并没有",
    "不要",
    "不会",
    "不想",
    "不能",
    "戒",
    "戒掉",
    "不是",
];

/// Words meaning "like" (Snowball stems and Chinese), folded onto one term.
const LIKE_SYNONYMS: &[(&str, &str)] = &[
    ("love", "like"),
    ("enjoy", "like"),
    ("喜爱", "喜欢"),
    ("爱", "喜欢"),
    ("热爱", "喜欢"),
];

/// Words meaning "not like": a cue plus the folded "like" term.
const LIKE_ANTONYMS: &[(&str, &str)] = &[
    ("hate", "like"),
    ("dislik", "like"),
    ("detest", "like"),
    ("讨厌", "喜欢"),
    ("厌恶", "喜欢"),
    ("恨", "喜欢"),
];

/// Temporal and degree adverbs that neither change a statement's subject nor its value.
const ADVERBS: &[&str] = &[
    "current", "still", "also", "realli", "actual", "recent", "usual", "alway", "often", "sometim",
    "anymor", "longer", "again", "today", "lately", "现在", "目前", "最近", "一直", "每天", "天天",
    "今天", "昨天", "明天", "今年", "去年", "明年", "平常", "每周", "已经", "其实", "真的", "还是",
    "平时", "经常", "总是", "常常", "依然", "仍然", "再也", "了",
];

/// Words starting with a negation character that are not negations.
const NOT_NEGATIONS: &[&str] = &[
    "不错",
    "不过",
    "不同",
    "不但",
    "不仅",
    "不少",
    "不久",
    "不断",
    "不管",
    "不如",
    "不然",
    "不得不",
    "不好意思",
    "不用谢",
    "没错",
    "没事",
    "别人",
    "别的",
    "别处",
    "别墅",
    "未来",
    "未必",
    "不禁",
    "不止",
];

/// "不喜欢" → Some("喜欢"): a jieba word made of a negation character and another word.
fn negated_cjk_word(t: &str) -> Option<&str> {
    if NOT_NEGATIONS.contains(&t) {
        return None;
    }
    for prefix in [
        "再也不",
        "从来不",
        "从来没有",
        "不再",
        "没有",
        "从不",
        "从没",
        "不",
        "没",
        "别",
        "未",
    ] {
        if let Some(rest) = t.strip_prefix(prefix) {
            if !rest.is_empty() && rest.chars().all(mnemos_text::is_cjk) {
                return Some(rest);
            }
        }
    }
    None
}

/// Measure words that make a leading Chinese numeral a quantity ("两只" = 2).
const MEASURE_WORDS: &[char] = &[
    '个', '只', '条', '本', '次', '年', '岁', '天', '位', '件', '张', '台', '辆', '家', '口', '元',
    '块', '斤', '米', '周', '月', '头', '匹', '棵', '套', '间', '层', '篇', '首', '部', '双', '对',
    '名', '所', '份',
];

/// Value of a Chinese numeral + measure word ("三只" → 3, "二十岁" → 20, "两个" → 2).
pub(crate) fn cjk_quantity(t: &str) -> Option<u64> {
    let digits: String = t.chars().take_while(|&c| cjk_digit(c).is_some()).collect();
    if digits.is_empty() {
        return None;
    }
    let rest = &t[digits.len()..];
    let mut rest_chars = rest.chars();
    let measured = match (rest_chars.next(), rest_chars.next()) {
        (None, _) => digits.chars().count() > 1 || digits != "一",
        (Some(c), None) => MEASURE_WORDS.contains(&c),
        _ => false,
    };
    if !measured {
        return None;
    }
    parse_cjk_number(&digits)
}

fn cjk_digit(c: char) -> Option<u64> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        '十' => 10,
        '百' => 100,
        '千' => 1000,
        '万' => 10_000,
        _ => return None,
    })
}

/// Parse numerals up to the ten-thousands ("二十三" = 23, "十五" = 15, "三百零五" = 305).
fn parse_cjk_number(s: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut section: u64 = 0;
    let mut digit: Option<u64> = None;
    for c in s.chars() {
        let v = cjk_digit(c)?;
        match v {
            0..=9 => digit = Some(v),
            10 | 100 | 1000 => {
                section = section.checked_add(digit.unwrap_or(1).checked_mul(v)?)?;
                digit = None;
            }
            _ => {
                let part = section.checked_add(digit.unwrap_or(0))?;
                total = total.checked_add(part.max(1).checked_mul(v)?)?;
                section = 0;
                digit = None;
            }
        }
    }
    total.checked_add(section.checked_add(digit.unwrap_or(0))?)
}

/// Key words of attributes a person has one value of at a time (Snowball stems for English).
fn is_single_valued_key(term: &str) -> bool {
    const KEYS: &[&str] = &[
        "live",
        "move",
        "reloc",
        "work",
        "job",
        "name",
        "call",
        "age",
        "born",
        "marri",
        "studi",
        "major",
        "favorit",
        "hometown",
        "occup",
        "profess",
        "birthday",
        "salari",
        "address",
        "phone",
        "drive",
        "住",
        "住在",
        "搬到",
        "搬去",
        "搬家",
        "工作",
        "上班",
        "叫",
        "名字",
        "岁",
        "来自",
        "老家",
        "家乡",
        "职业",
        "专业",
        "最",
        "最喜欢",
        "生日",
        "结婚",
        "就读",
        "开车",
        "住址",
        "电话",
    ];
    KEYS.contains(&term)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::tests::with_ctx;

    fn check(pairs: &[(&str, &str, bool)]) {
        with_ctx(|ctx| {
            let wrong: Vec<String> = pairs
                .iter()
                .filter(|(a, b, want)| conflicts(ctx, a, b).unwrap() != *want)
                .map(|(a, b, want)| format!("{a} / {b}: expected {want}"))
                .collect();
            assert!(wrong.is_empty(), "{wrong:#?}");
        });
    }

    #[test]
    fn long_texts_are_not_read_as_announced_updates() {
        let summary =
            "Ana talked about her home, her garden and her sister; she named the new puppy, \
                       planned a trip to the coast with friends, and said work at the clinic keeps \
                       her busy these weeks while the kids start school";
        let later = "Now Ana says the puppy sleeps all day, the trip moved to autumn, her sister \
                     changed schools, the clinic hired two nurses and the garden finally blooms \
                     after weeks of rain";
        check(&[(summary, later, false)]);
    }

    /// The update-probe templates' pairs (`mnemos-eval`'s `update_probes`) are the phrasings
    /// the announced-update rule was written against.
    #[test]
    fn announced_updates_in_the_probe_phrasings() {
        check(&[
            (
                "By the way, I live in Tallinn these days, in a small flat near the river.",
                "Big news: I just moved, and home is Porto now.",
                true,
            ),
            (
                "I work as a nurse at the moment, and the hours are long.",
                "I changed careers last month; I'm a teacher now.",
                true,
            ),
            // Missed: "seeing someone" names no partner word, and jieba cuts "猫叫" as one word
            // so the cat's name has no key ("叫") on the older side.
            (
                "My partner Alex and I have been together for two years.",
                "I'm seeing someone new now; their name is Sam.",
                false,
            ),
            (
                "My cat is called Mochi; she sleeps on my keyboard.",
                "We gave our cat a new name after the vet visit; she answers to Luna now.",
                true,
            ),
            (
                "My favourite drink is green tea; I have one every afternoon.",
                "My taste has changed: these days my favourite drink is coffee.",
                true,
            ),
            (
                "I'm planning a trip to Japan next spring.",
                "Change of plans for next spring: the trip is going to Peru.",
                true,
            ),
            (
                "I run 10 kilometres every week to stay fit.",
                "I've stepped up my training: I now run 25 kilometres a week.",
                true,
            ),
            (
                "对了，我现在住在杭州，房子离江边不远。",
                "告诉你个消息，我刚搬完家，现在住在成都了。",
                true,
            ),
            (
                "我目前的工作是护士，每天都挺忙的。",
                "我上个月换工作了，现在是一名老师。",
                true,
            ),
            (
                "我和对象小李已经在一起两年了。",
                "我现在有了新的对象，名字叫小王。",
                true,
            ),
            (
                "我家的猫叫咪咪，总爱趴在我的键盘上睡觉。",
                "我们给猫改了名字，现在叫它球球。",
                false,
            ),
            (
                "我最喜欢喝绿茶，每天下午都要来一杯。",
                "我的口味变了，现在最喜欢喝咖啡。",
                true,
            ),
            (
                "我打算明年春天去日本旅行。",
                "明年春天的计划变了，我要去秘鲁。",
                true,
            ),
            (
                "为了保持身材，我每周跑10公里。",
                "我加大了训练量，现在每周跑25公里。",
                true,
            ),
        ]);
    }

    /// Phrasings written apart from the rule, to see how far it carries. Found: 7 of 14; missed
    /// are updates without an attribute word on one side ("based in Oslo", "now I'm with
    /// Jordan"), an attribute word with no value after it ("在一家银行上班"), number words ("two
    /// kids", "三杯"), swapped preferences and jieba's "狗叫". False alarms: 3 of 10 (moving a
    /// desk, another favourite, a sister's job). The counts are floors.
    #[test]
    fn announced_updates_on_held_out_phrasings() {
        let updates = [
            (
                "I'm based in Oslo, close to the harbour.",
                "We relocated last week; our new address is in Bergen.",
            ),
            (
                "My job is at a bakery, I bake bread every morning.",
                "I quit the bakery and now I work in a bank.",
            ),
            (
                "I've been dating Chris since last year.",
                "Chris and I split up, and now I'm with Jordan.",
            ),
            (
                "Our dog's name is Rex.",
                "We renamed the dog, he is Buddy now.",
            ),
            (
                "I prefer tea over coffee.",
                "Lately I prefer coffee instead of tea.",
            ),
            (
                "This summer I plan to visit Rome.",
                "My summer plans changed, I will visit Athens instead.",
            ),
            (
                "I have two kids.",
                "We now have three kids after the baby arrived.",
            ),
            ("我住在北京的海淀区。", "我已经搬到上海了。"),
            ("我在一家银行上班。", "我换了工作，现在在学校当老师。"),
            ("我的男朋友叫阿强。", "我和阿强分手了，现在的男朋友叫小刚。"),
            ("我养的狗叫旺财。", "狗的名字改成了豆豆。"),
            ("我最爱吃川菜。", "现在我最爱吃粤菜了。"),
            ("国庆节我打算去西安。", "国庆的计划改了，改去厦门。"),
            ("我每天喝三杯咖啡。", "现在我每天只喝一杯咖啡。"),
        ];
        let unrelated = [
            (
                "I went hiking with my family last weekend.",
                "Now I'm planning to go hiking again with friends.",
            ),
            ("I live in Paris.", "I just moved my desk to the window."),
            (
                "My favourite colour is blue.",
                "Now my favourite food is pasta.",
            ),
            (
                "My sister works as a nurse.",
                "I changed jobs, I'm a teacher now.",
            ),
            (
                "I painted a sunset last week.",
                "Now I'm painting a portrait of my dog.",
            ),
            (
                "We adopted a cat last year.",
                "Now we also have a dog named Max.",
            ),
            ("我上周和家人去爬山了。", "现在我打算和朋友再去爬一次山。"),
            ("我妹妹是护士。", "我换工作了，现在是老师。"),
            // From LoCoMo: an attribute word without a value, another owner's name.
            (
                "Thanks! I'll do my best to make sure these kids have a safe and loving home.",
                "Big news: I just moved, and home is Porto now.",
            ),
            (
                "Our one-year-old is so cute, his name is Kyle!",
                "I'm seeing someone new now; their name is Sam.",
            ),
        ];
        with_ctx(|ctx| {
            let hits: Vec<bool> = updates
                .iter()
                .map(|(a, b)| conflicts(ctx, a, b).unwrap())
                .collect();
            let false_alarms: Vec<bool> = unrelated
                .iter()
                .map(|(a, b)| conflicts(ctx, a, b).unwrap())
                .collect();
            assert!(hits.iter().filter(|&&h| h).count() >= 7, "{hits:?}");
            assert!(
                false_alarms.iter().filter(|&&h| h).count() <= 3,
                "{false_alarms:?}"
            );
        });
    }

    #[test]
    fn english_conflicts() {
        check(&[
            ("I live in Paris.", "I live in Berlin.", true),
            ("I have 2 cats.", "I have 3 cats.", true),
            ("I like coffee.", "I don't like coffee.", true),
            ("I love coffee", "I hate coffee", true),
            ("My name is Anna.", "My name is Maria.", true),
            ("I'm a nurse.", "I am a teacher.", true),
            ("I work at Google.", "I currently work at Microsoft.", true),
            (
                "I drink coffee every morning.",
                "I stopped drinking coffee.",
                true,
            ),
            (
                "My favorite color is blue.",
                "My favorite color is green.",
                true,
            ),
            ("I am 30 years old.", "I am 31 years old.", true),
        ]);
    }

    #[test]
    fn english_non_conflicts() {
        check(&[
            ("I live in Paris.", "I like coffee.", false),
            ("I live in Paris.", "I live in Paris.", false),
            ("I live in Paris.", "I live in Paris with my wife.", false),
            ("I like coffee.", "I like tea.", false),
            ("I have 2 cats.", "I have 2 cats and 3 dogs.", false),
            ("I live in Paris.", "My brother lives in Berlin.", false),
            ("I don't like coffee.", "My sister likes tea.", false),
            ("I live in Paris.", "I reside in Paris.", false),
            (
                "Thanks! I'm excited to see where pottery takes me.",
                "Thanks! I'm really lucky to have my family; they bring so much joy.",
                false,
            ),
            ("We went hiking on Sunday.", "The museum opens at 9.", false),
            // Negation inside a much longer, different statement: the embedding says no.
            (
                "I don't like coffee.",
                "I like the coffee shops in Rome and the old bridges with my friends.",
                false,
            ),
        ]);
    }

    #[test]
    fn chinese_conflicts() {
        check(&[
            ("我住在北京", "我住在上海", true),
            ("我喜欢咖啡", "我不喜欢咖啡", true),
            ("我有两只猫", "我有三只猫", true),
            ("我叫小明", "我叫小红", true),
            ("我是老师", "我是医生", true),
            ("我每天喝咖啡", "我再也不喝咖啡了", true),
            ("我今年25岁", "我今年26岁", true),
        ]);
    }

    #[test]
    fn chinese_non_conflicts() {
        check(&[
            ("我住在北京", "我喜欢咖啡", false),
            ("我住在北京", "我住在北京", false),
            ("我喜欢咖啡", "我喜欢喝茶", false),
            ("我住在北京", "我哥哥住在上海", false),
            ("这家店的菜不错", "这家店的菜很好吃", false),
        ]);
    }

    #[test]
    fn chinese_numerals_parse() {
        assert_eq!(parse_cjk_number("二十三"), Some(23));
        assert_eq!(parse_cjk_number("十五"), Some(15));
        assert_eq!(parse_cjk_number("三百零五"), Some(305));
        assert_eq!(parse_cjk_number("两万"), Some(20_000));
        assert_eq!(cjk_quantity("两只"), Some(2));
        assert_eq!(cjk_quantity("一起"), None);
        assert_eq!(cjk_quantity("一"), None);
    }

    #[test]
    fn merge_keeps_newer_and_language() {
        with_ctx(|ctx| {
            assert_eq!(
                merge(ctx, "I live in Paris.", "I live in Berlin.").unwrap(),
                "I live in Berlin. (previously: I live in Paris.)"
            );
            assert_eq!(
                merge(ctx, "我住在北京。", "我住在上海。").unwrap(),
                "我住在上海。（之前：我住在北京。）"
            );
            assert_eq!(
                merge(ctx, "I live in Paris", "I live in Paris with my wife").unwrap(),
                "I live in Paris with my wife"
            );
            assert_eq!(
                merge(ctx, "I live in Paris with my wife.", "I live in Paris.").unwrap(),
                "I live in Paris with my wife."
            );
            assert_eq!(
                merge(ctx, "I live in Paris.", "I like coffee.").unwrap(),
                "I live in Paris; I like coffee."
            );
            assert_eq!(
                merge(ctx, "我住在北京。", "我喜欢咖啡。").unwrap(),
                "我住在北京；我喜欢咖啡。"
            );
        });
    }

    #[test]
    fn odd_input() {
        with_ctx(|ctx| {
            assert!(!conflicts(ctx, "", "").unwrap());
            assert!(!conflicts(ctx, "🙂", "?!").unwrap());
            assert!(!conflicts(ctx, "不不不", "没没").unwrap());
            assert_eq!(merge(ctx, " ", "hi").unwrap(), "hi");
            let long = "我".repeat(5000);
            assert!(!conflicts(ctx, &long, "I live in Paris").unwrap());
        });
    }
}
