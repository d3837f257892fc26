//! Chinese first-person patterns over one clause.
//!
//! Every "我" (not "我们") starts a reading: possessives ("我妈妈", "我的名字"), then modifiers
//! (fillers, past markers, negations, intensifiers, hedges), then a verb or copula that decides
//! the key. Values are slices of the clause, cut at conjunctions and trimmed of particles.

use super::lexicon::{ChineseWords, EnglishWords};
use super::{Concept, Fact};

/// The most characters a value may have.
const MAX_VALUE_CHARS: usize = 16;

/// Every fact of one clause. `following` are the sentence's later clauses; `inherits_subject`
/// says the previous clause of the sentence opened with "我".
pub(super) fn extract(
    lexicon: &ChineseWords,
    english: &EnglishWords,
    clause: &str,
    following: &[&str],
    inherits_subject: bool,
    out: &mut Vec<Fact>,
) {
    let mut x = Extractor {
        lexicon,
        english,
        following,
        out,
    };
    if !clause.contains('我') {
        // "我叫小明，今年28岁": a clause without a subject continues the previous "我" clause.
        if inherits_subject
            && !starts_any(clause, &["叫", "名叫", "名字"])
            && !clause.contains(['你', '他', '她', '它'])
        {
            x.reading("", clause);
        }
        return;
    }
    for (idx, _) in clause.match_indices('我') {
        let before = clause.get(..idx).unwrap_or("");
        let after = clause.get(idx + '我'.len_utf8()..).unwrap_or("");
        if after.starts_with('们') {
            continue;
        }
        // "叫我小明" / "大家都叫我小明": a name given to the speaker.
        if before.ends_with('叫') {
            let b = before.trim();
            const CALLERS: &[&str] = &[
                "可以",
                "都",
                "大家",
                "朋友",
                "直接",
                "就",
                "们",
                "请",
                "家里人",
                "同学",
            ];
            if b == "叫" || CALLERS.iter().any(|w| b.contains(w)) {
                x.name(after);
            }
            continue;
        }
        // "一直说我是男生", "你以为我是老师": someone else's claim about the speaker.
        if ["说", "以为", "觉得", "认为", "当成", "当作", "把", "说过"]
            .iter()
            .any(|w| before.trim_end().ends_with(w))
        {
            continue;
        }
        // "晚安，我的朋友": a form of address, not a fact.
        let addressed = after.trim_start_matches('的');
        let only_person = [&lexicon.relations, &lexicon.family].iter().any(|words| {
            strip_longest(addressed, words).is_some_and(|(_, r)| {
                r.chars()
                    .all(|c| lexicon.trailing.contains(&c) || !c.is_alphanumeric())
            })
        });
        if before.trim().is_empty() && only_person && after.starts_with('的') {
            continue;
        }
        x.reading(before, after);
    }
}

struct Extractor<'a, 'b> {
    lexicon: &'a ChineseWords,
    /// For English occupations written in a Chinese sentence ("我是engineer").
    english: &'a EnglishWords,
    following: &'a [&'a str],
    out: &'b mut Vec<Fact>,
}

/// Flags collected while skipping the words between "我" and the verb.
#[derive(Default)]
struct Mods<'a> {
    past: bool,
    negated: bool,
    /// The clause text from the first negation or hedge on (kept in trait values).
    kept_from: Option<&'a str>,
    /// The clause text from "最" on ("最喜欢的颜色是蓝色").
    most_from: Option<&'a str>,
}

/// The longest word of `words` that `s` starts with, and the rest.
fn strip_longest<'s>(s: &'s str, words: &[&'static str]) -> Option<(&'static str, &'s str)> {
    words
        .iter()
        .filter(|w| s.starts_with(**w))
        .max_by_key(|w| w.len())
        .and_then(|w| s.get(w.len()..).map(|rest| (*w, rest)))
}

/// `s` without any of `words` at its start (repeatedly).
fn trim_words<'s>(s: &'s str, words: &[&str]) -> &'s str {
    let mut rest = s;
    while let Some(r) = words.iter().find_map(|w| rest.strip_prefix(w)) {
        rest = r;
    }
    rest
}

fn starts_any(s: &str, words: &[&str]) -> bool {
    words.iter().any(|w| s.starts_with(w))
}

/// The first `n` characters of `s`.
fn take_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// A value at the start of `s`: up to punctuation, a space, a cut word, or `max` characters;
/// trailing particles removed.
fn value<'s>(lexicon: &ChineseWords, s: &'s str, max: usize) -> &'s str {
    let s = s.trim_start();
    let mut end = s.len();
    for (i, c) in s.char_indices() {
        if c.is_whitespace() || (!c.is_alphanumeric() && !matches!(c, '、' | '·' | '-' | '\'')) {
            end = i;
            break;
        }
    }
    let mut v = s.get(..end).unwrap_or("");
    for cut in &lexicon.cut_words {
        if let Some(i) = v.find(cut) {
            if i > 0 {
                v = v.get(..i).unwrap_or(v);
            }
        }
    }
    let v = take_chars(v, max);
    v.trim_end_matches(|c: char| lexicon.trailing.contains(&c) && c != '的')
}

/// Values that point at the situation instead of naming something ("这样", "那个").
fn has_deictic(s: &str) -> bool {
    [
        "这样", "那样", "这么", "那么", "这个", "那个", "这些", "那些",
    ]
    .iter()
    .any(|w| s.contains(w))
}

fn is_pronoun_start(lexicon: &ChineseWords, s: &str) -> bool {
    starts_any(s, &lexicon.pronouns)
}

/// The longest prefix of `np` that names an occupation ("老师三年" → "老师").
fn job_prefix<'s>(lexicon: &ChineseWords, np: &'s str) -> Option<&'s str> {
    let mut best = None;
    for (i, c) in np.char_indices() {
        let end = i + c.len_utf8();
        let Some(prefix) = np.get(..end) else {
            continue;
        };
        if prefix.chars().count() > 8 {
            break;
        }
        if is_job(lexicon, prefix) {
            best = Some(prefix);
        }
    }
    best
}

fn is_job(lexicon: &ChineseWords, word: &str) -> bool {
    if lexicon.jobs.contains(&word) {
        return true;
    }
    let n = word.chars().count();
    if !(2..=5).contains(&n) || lexicon.not_jobs.iter().any(|w| word.ends_with(w)) {
        return false;
    }
    // Function words never sit inside an occupation ("男生还是女生").
    if word.contains([
        '是', '的', '还', '和', '或', '了', '不', '在', '也', '跟', '我', '你',
    ]) {
        return false;
    }
    // Whole words only: the part before the suffix must itself be Chinese text.
    word.chars().all(mnemos_text::is_cjk) && lexicon.job_suffixes.iter().any(|s| word.ends_with(s))
}

/// A trait word at the start of `s` (single-character traits only before an ending).
fn trait_at(lexicon: &ChineseWords, s: &str) -> Option<&'static str> {
    let (word, rest) = strip_longest(s, &lexicon.traits)?;
    if word.chars().count() == 1 {
        let next = rest.chars().next();
        if !next.is_none_or(|c| {
            matches!(
                c,
                '了' | '的' | '啊' | '得' | '呀' | '啦' | '嘛' | '吧' | '哦'
            ) || !c.is_alphanumeric()
        }) {
            return None;
        }
    }
    Some(word)
}

/// Skip leading digits or Chinese numerals and a measure word ("两只", "3个", "一个").
fn strip_count<'s>(lexicon: &ChineseWords, s: &'s str) -> &'s str {
    if let Some((_, rest)) = strip_longest(s, &lexicon.measures) {
        return rest;
    }
    let digits = s
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || "一二两三四五六七八九十几".contains(*c))
        .last()
        .map(|(i, c)| i + c.len_utf8());
    match digits {
        Some(end) => {
            let rest = s.get(end..).unwrap_or(s);
            match rest.chars().next() {
                Some(m) if "个只条头匹位名枚".contains(m) => {
                    rest.get(m.len_utf8()..).unwrap_or(rest)
                }
                _ => s,
            }
        }
        None => s,
    }
}

/// A number followed by 岁 at the start of `s`: "28岁", "二十八岁".
fn age_at(s: &str) -> Option<&str> {
    let n_end = s
        .char_indices()
        .take_while(|(_, c)| {
            c.is_ascii_digit()
                || ('０'..='９').contains(c)
                || "零一二两三四五六七八九十百".contains(*c)
        })
        .last()
        .map(|(i, c)| i + c.len_utf8())?;
    let rest = s.get(n_end..)?;
    let unit = ["周岁", "岁"].iter().find(|u| rest.starts_with(**u))?;
    s.get(..n_end + unit.len())
}

/// Places: what comes before 人 in "我是北京人" when it is not another kind of person.
fn place_of_person<'s>(lexicon: &ChineseWords, np: &'s str) -> Option<&'s str> {
    let place = np.strip_suffix('人')?;
    let n = place.chars().count();
    if !(2..=5).contains(&n)
        || lexicon.not_places.contains(&place)
        || !place.chars().all(mnemos_text::is_cjk)
    {
        return None;
    }
    // A place is a place name to jieba ("北京" ns) or ends like one ("…省", "…村");
    // "那个天选之人" is neither.
    let named_place = mnemos_text::Analyzer::shared()
        .pos_tags(place)
        .iter()
        .any(|(_, tag)| tag == "ns")
        || place.ends_with(['省', '市', '县', '区', '镇', '村', '州', '城', '岛', '国']);
    if !named_place
        || place.contains('的')
        || trait_at(lexicon, place).is_some()
        || lexicon.intensifiers.iter().any(|w| place.starts_with(w))
    {
        return None;
    }
    Some(place)
}

/// Nouns before 的 that name an institution ("北京大学的学生").
fn is_institution(lexicon: &ChineseWords, owner: &str) -> bool {
    lexicon
        .institution_suffixes
        .iter()
        .any(|s| owner.ends_with(s))
        || (!owner.is_empty() && owner.chars().all(|c| c.is_ascii_alphanumeric() || c == ' '))
}

impl Extractor<'_, '_> {
    fn push(&mut self, concept: Concept, value: &str) {
        let mut v = value.trim();
        // "我还挺喜欢园艺的": the closing 的 is mood, not part of the thing liked.
        if matches!(concept, Concept::Likes | Concept::Dislikes) && v.chars().count() > 2 {
            v = v.strip_suffix('的').unwrap_or(v);
        }
        if !v.is_empty() {
            self.out.push(Fact::new(concept, v));
        }
    }

    /// `以前X` for past statements of current-state keys.
    fn push_dated(&mut self, concept: Concept, marker: &str, value: &str, past: bool) {
        if value.trim().is_empty() {
            return;
        }
        if past {
            self.push(concept, &format!("以前{marker}{value}"));
        } else {
            self.push(concept, value);
        }
    }

    fn name(&mut self, s: &str) {
        let lexicon = self.lexicon;
        let s = s.strip_prefix("做").unwrap_or(s);
        if s.is_empty()
            || is_pronoun_start(lexicon, s)
            || starts_any(s, &["了", "过", "醒", "住", "来", "去", "着"])
        {
            return;
        }
        // "直接叫我的名字": the word 名字, not a name.
        if s.starts_with('的') {
            return;
        }
        let mut v = value(lexicon, s, 8);
        for stop in ["就", "吧", "好了", "也", "今年", "是", "哦", "就行", "好"] {
            if let Some(i) = v.find(stop) {
                if i > 0 {
                    v = v.get(..i).unwrap_or(v);
                }
            }
        }
        if !v.is_empty() && !v.contains('我') {
            self.push(Concept::Name, v);
        }
    }

    /// One reading starting right after a "我"; `before` is the clause text in front of it.
    fn reading(&mut self, before: &str, after: &str) {
        let lexicon = self.lexicon;
        let at_start = {
            let b = before.trim();
            b.is_empty()
                || [
                    "嗯", "哦", "啊", "对", "其实", "是的", "好", "嗯嗯", "哈哈", "对了", "诶",
                    "那", "而", "但", "可是", "不过", "所以",
                ]
                .contains(&b)
        };
        // Habits and plans whose time word opens the clause: "每天早上我都跑步", "明年我要去日本".
        if let Some((freq, _)) = strip_longest(before.trim(), &lexicon.frequency) {
            if let Some(vp) = self.verb_phrase(after) {
                let lead = if before.trim().chars().count() <= 8 {
                    before.trim()
                } else {
                    freq
                };
                self.push(Concept::Habits, &format!("{lead}{vp}"));
                return;
            }
        }
        if strip_longest(before.trim(), &lexicon.future).is_some() {
            let vp = after.trim_start_matches(['也', '还', '都', '就']);
            if starts_any(vp, &["要", "想", "准备", "打算", "计划", "去"]) && !has_deictic(vp)
            {
                let v = value(lexicon, vp, MAX_VALUE_CHARS);
                if v.chars().count() > 1 {
                    self.push(Concept::Plans, &format!("{}{}", before.trim(), v));
                    return;
                }
            }
        }
        if self.possessive(after, at_start) {
            return;
        }
        let (mods, rest) = skip_modifiers(lexicon, after);
        self.verbs(rest, &mods);
    }

    /// "我(的)…": names, jobs, hobbies, family, friends and pets introduced by "my".
    /// Returns whether the reading is done.
    fn possessive(&mut self, after: &str, at_start: bool) -> bool {
        let poss = after.strip_prefix('的').unwrap_or(after);
        self.possessive_field(poss)
            || self.possessive_pet(after, poss)
            || self.possessive_person(poss, at_start)
    }

    /// "我的名字叫…", "我的爱好是…", "我的性格很…": a named field and its value.
    fn possessive_field(&mut self, poss: &str) -> bool {
        let lexicon = self.lexicon;
        let fields: &[(&[&str], Concept)] = &[
            (&["名字叫", "名字是"], Concept::Name),
            (&["工作是", "职业是"], Concept::Job),
            (&["专业是"], Concept::Job),
            (
                &["爱好是", "兴趣是", "兴趣爱好是", "爱好有"],
                Concept::Likes,
            ),
            (
                &["梦想是", "目标是", "计划是", "愿望是", "打算是"],
                Concept::Plans,
            ),
            (
                &[
                    "家乡是",
                    "家乡在",
                    "老家在",
                    "老家是",
                    "家在",
                    "家住在",
                    "家住",
                ],
                Concept::Location,
            ),
        ];
        for (words, concept) in fields {
            if let Some((_, rest)) = strip_longest(poss, words) {
                let rest = rest.trim_start_matches(['是', '叫', '在', '：', ':', ' ']);
                if *concept == Concept::Name {
                    self.name(rest);
                    return true;
                }
                let rest = trim_words(rest, &["很", "挺", "比较", "就"]);
                let v = value(lexicon, rest, MAX_VALUE_CHARS);
                if v.is_empty() || is_pronoun_start(lexicon, v) {
                    return true;
                }
                match concept {
                    Concept::Job => {
                        let v = strip_count(lexicon, v);
                        self.push(Concept::Job, v);
                    }
                    Concept::Likes => self.push_list(Concept::Likes, v, rest),
                    _ => self.push(*concept, v),
                }
                return true;
            }
        }
        if let Some(rest) = poss.strip_prefix("性格") {
            let rest = trim_words(
                rest,
                &["很", "挺", "是", "比较", "非常", "特别", "有点", "有些"],
            );
            if let Some(t) = trait_at(lexicon, rest) {
                self.push(Concept::Personality, t);
            }
            return true;
        }
        false
    }

    /// "我家有一只猫", "我的狗叫旺财": a pet, with its name when given.
    fn possessive_pet(&mut self, after: &str, poss: &str) -> bool {
        let lexicon = self.lexicon;
        // "我家有一只猫", "我家的狗叫旺财".
        if let Some(rest) = poss.strip_prefix('家') {
            let rest = rest
                .trim_start_matches(['的', '里'])
                .trim_start_matches(['有', '养'])
                .trim_start_matches('了');
            let np = strip_count(lexicon, rest);
            if strip_longest(np, &lexicon.pets).is_some() {
                self.pet(rest);
                return true;
            }
        }
        if let Some((animal, rest)) = strip_longest(poss, &lexicon.pets) {
            if animal.chars().count() > 1 || after.starts_with('的') {
                let named = rest
                    .strip_prefix("叫")
                    .or_else(|| rest.strip_prefix("名叫"));
                match named {
                    Some(name) if !value(lexicon, name, 8).is_empty() => {
                        let end = poss.len() - rest.len()
                            + (rest.len() - name.len())
                            + value(lexicon, name, 8).len();
                        self.push(Concept::Pets, poss.get(..end).unwrap_or(animal));
                    }
                    _ => self.push(Concept::Pets, animal),
                }
                return true;
            }
        }
        false
    }

    /// "我妈妈", "我男朋友是医生": a family member or relation, with what is said of them
    /// when the clause starts with it. `false` when the word is not a person ("我爱人类").
    fn possessive_person(&mut self, poss: &str, at_start: bool) -> bool {
        let lexicon = self.lexicon;
        let person = strip_longest(poss, &lexicon.family)
            .map(|(w, r)| (w, r, Concept::Family))
            .into_iter()
            .chain(
                strip_longest(poss, &lexicon.relations)
                    .map(|(w, r)| (w, r, Concept::Relationships)),
            )
            .max_by_key(|(w, _, _)| w.len());
        if let Some((word, rest, concept)) = person {
            // "我爱人" is family; "我爱人类" is not a person at all.
            if word.chars().count() == 1 && rest.chars().next().is_some_and(|c| "们人".contains(c))
            {
                return false;
            }
            // A statement about the person ("妈妈是医生") is kept whole; otherwise the word.
            const PREDICATES: &[&str] = &[
                "是", "在", "很", "叫", "住", "也是", "都是", "特别", "非常", "比较", "喜欢", "有",
                "今年", "已经", "每天", "经常", "一直", "做", "当", "开", "养", "刚", "去年",
                "最近",
            ];
            if at_start && starts_any(rest, PREDICATES) {
                let v = value(lexicon, poss, MAX_VALUE_CHARS);
                self.push(concept, if v.len() > word.len() + 3 { v } else { word });
            } else {
                self.push(concept, word);
            }
            return true;
        }
        false
    }

    /// The verb phrase after "我" in a habit ("都跑步" → "跑步"), when it is a routine.
    fn verb_phrase<'s>(&self, after: &'s str) -> Option<&'s str> {
        let lexicon = self.lexicon;
        let vp = after.trim_start_matches(['也', '还', '都', '就', '会', '要']);
        let v = value(lexicon, vp, MAX_VALUE_CHARS);
        (v.chars().count() >= 2
            && !is_pronoun_start(lexicon, v)
            && !starts_any(v, &["是", "觉得", "想", "喜欢", "很"]))
        .then_some(v)
    }

    fn push_list(&mut self, concept: Concept, v: &str, rest: &str) {
        let lexicon = self.lexicon;
        let mut v = v.to_string();
        // The value reached the clause end: a list may go on in the next clauses.
        if value(lexicon, rest, usize::MAX).len()
            == rest
                .trim_end_matches(|c: char| lexicon.trailing.contains(&c) || !c.is_alphanumeric())
                .len()
        {
            if let Some(tail) = list_tail(lexicon, self.following) {
                v.push('，');
                v.push_str(&tail);
            }
        }
        self.push(concept, &v);
    }

    fn verbs(&mut self, rest: &str, mods: &Mods) {
        let lexicon = self.lexicon;
        // Habits: "我每天跑步", "我习惯早起", "我从不喝酒".
        if let Some((freq, tail)) = strip_longest(rest, &lexicon.frequency) {
            if !mods.negated && !rest.starts_with("一般般") {
                let tail = tail.trim_start_matches(['都', '会', '也']);
                if !starts_any(tail, &["喜欢", "爱", "讨厌", "觉得", "想"]) {
                    let v = if freq.starts_with("习惯") {
                        value(lexicon, tail, MAX_VALUE_CHARS)
                    } else {
                        value(lexicon, rest, MAX_VALUE_CHARS)
                    };
                    if v.chars().count() >= 2 && !is_pronoun_start(lexicon, tail) {
                        self.push(Concept::Habits, v);
                    }
                    return;
                }
                return self.verbs(tail, mods);
            }
        }
        // Plans with a time word: "我明年要去日本".
        if let Some((_, tail)) = strip_longest(rest, &lexicon.future) {
            if !mods.negated {
                let tail = tail.trim_start_matches(['也', '还', '都', '就']);
                if starts_any(tail, &["要", "想", "准备", "打算", "计划", "去"])
                    && !has_deictic(tail)
                {
                    let v = value(lexicon, rest, MAX_VALUE_CHARS);
                    if v.chars().count() > 3 {
                        self.push(Concept::Plans, v);
                    }
                    return;
                }
            }
        }
        if let Some(tail) = rest.strip_prefix('叫') {
            if !mods.negated {
                self.name(tail);
            }
            return;
        }
        if let Some(age) = age_at(rest) {
            if !mods.negated && !mods.past {
                self.push(Concept::Age, age);
            }
            return;
        }
        if let Some(tail) = rest.strip_prefix('是') {
            if !starts_any(
                tail,
                &["不是", "的", "说", "在", "因为", "为了", "想", "觉得"],
            ) && !mods.negated
            {
                self.copula(tail, mods);
            }
            return;
        }
        if self.location(rest, mods) || self.work_place(rest, mods) || self.job_verbs(rest, mods) {
            return;
        }
        if self.have(rest, mods) {
            return;
        }
        if let Some((state, _)) = strip_longest(rest, &lexicon.relation_states) {
            if !mods.negated {
                self.push(Concept::Relationships, state);
            }
            return;
        }
        if self.likes(rest, mods) || self.plans(rest, mods) {
            return;
        }
        if let Some(t) = trait_at(lexicon, rest) {
            let from = mods.kept_from.unwrap_or(rest);
            let end = from.len() - rest.len() + t.len();
            self.push(Concept::Personality, from.get(..end).unwrap_or(t));
        }
    }

    /// "我是…": gender, age cohort, personality, job, workplace, hometown, role to the listener.
    fn copula(&mut self, tail: &str, mods: &Mods) {
        let lexicon = self.lexicon;
        let np_full = strip_count(lexicon, tail);
        // "我是你的老师": who the speaker is to the listener.
        if let Some(after_you) = np_full
            .strip_prefix('你')
            .or_else(|| np_full.strip_prefix('您'))
        {
            let head = after_you.trim_start_matches('的');
            let known = strip_longest(head, &lexicon.relations).is_some()
                || strip_longest(head, &lexicon.family).is_some()
                || job_prefix(lexicon, head).is_some();
            if known {
                self.push(
                    Concept::Relationships,
                    value(lexicon, np_full, MAX_VALUE_CHARS),
                );
            }
            return;
        }
        // "我是90后".
        let digits: String = np_full.chars().take_while(char::is_ascii_digit).collect();
        if (digits.len() == 2 || digits.len() == 4)
            && np_full
                .get(digits.len()..)
                .is_some_and(|r| r.starts_with('后'))
        {
            self.push(
                Concept::Age,
                np_full.get(..digits.len() + '后'.len_utf8()).unwrap_or(""),
            );
            return;
        }
        let np = value(lexicon, np_full, MAX_VALUE_CHARS);
        if np.is_empty() {
            return;
        }
        if !self.identity(np, mods) {
            self.occupation_or_origin(np_full, np, mods);
        }
    }

    /// After "我是": a gender, a personality type or trait, being an only child, a fandom.
    /// Whether `np` was one of them.
    fn identity(&mut self, np: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        if let Some((g, rest)) = strip_longest(np, &lexicon.gender) {
            if rest.is_empty() || rest.chars().all(|c| lexicon.trailing.contains(&c)) {
                if !mods.past {
                    self.push(Concept::Gender, g);
                }
                return true;
            }
        }
        let ascii_word: String = np.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        if ascii_word.len() == 4
            && ascii_word
                .chars()
                .nth(1)
                .is_some_and(|c| "NSns".contains(c))
            && "IEie".contains(ascii_word.chars().next().unwrap_or(' '))
            || matches!(np, "i人" | "e人" | "I人" | "E人")
        {
            self.push(
                Concept::Personality,
                if ascii_word.len() == 4 {
                    ascii_word.as_str()
                } else {
                    np
                },
            );
            return true;
        }
        // "一个很内向的人", "社恐": a trait anywhere in a short phrase.
        let trait_in = np.char_indices().find_map(|(i, _)| {
            np.get(i..)
                .and_then(|rest| trait_at(lexicon, rest))
                .map(|t| (i, t))
        });
        if let Some((i, t)) = trait_in {
            if !mods.past
                && (np.ends_with('人')
                    || np.get(i..).is_some_and(|r| r.len() == t.len())
                    || np.ends_with("的人"))
            {
                let hedge_from = np
                    .get(..i)
                    .and_then(|h| lexicon.hedges.iter().filter_map(|w| h.find(w)).min());
                let from = hedge_from.unwrap_or(i);
                self.push(Concept::Personality, np.get(from..i + t.len()).unwrap_or(t));
                return true;
            }
        }
        if np == "独生子" || np == "独生女" {
            self.push(Concept::Family, np);
            return true;
        }
        // Fans: "摄影爱好者", "猫控".
        for suffix in ["爱好者", "发烧友", "控"] {
            if let Some(thing) = np.strip_suffix(suffix) {
                if !thing.is_empty() && !mods.past {
                    self.push(Concept::Likes, thing);
                    return true;
                }
            }
        }
        false
    }

    /// After "我是": an occupation (and its workplace), else where the speaker is from.
    fn occupation_or_origin(&mut self, np_full: &str, np: &str, mods: &Mods) {
        let lexicon = self.lexicon;
        // "我是干销售的".
        if let Some(field) = np.strip_prefix('干').and_then(|t| t.strip_suffix('的')) {
            if (1..=6).contains(&field.chars().count()) && !field.contains(['嘛', '什', '啥']) {
                self.push_dated(Concept::Job, "是", field, mods.past);
            }
            return;
        }
        // "北京大学的学生", "腾讯的程序员".
        if let Some(split) = np.rfind('的') {
            let owner = np.get(..split).unwrap_or("");
            let head = np.get(split + '的'.len_utf8()..).unwrap_or("");
            if let Some(job) = job_prefix(lexicon, head) {
                if is_institution(lexicon, owner) {
                    self.push_dated(Concept::Workplace, "在", owner, mods.past);
                }
                self.push_dated(Concept::Job, "是", job, mods.past);
            }
            return;
        }
        if let Some(job) = job_prefix(lexicon, np) {
            self.push_dated(Concept::Job, "是", job, mods.past);
            return;
        }
        // ASCII occupations inside Chinese: "我是一名software engineer".
        let ascii: &str = {
            let end = np_full
                .char_indices()
                .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == ' ' || *c == '-'))
                .map_or(np_full.len(), |(i, _)| i);
            np_full.get(..end).unwrap_or("").trim()
        };
        if let Some(last) = ascii.split_whitespace().last() {
            if super::en::is_job(self.english, &last.to_lowercase()) {
                self.push_dated(Concept::Job, "是", ascii, mods.past);
                return;
            }
        }
        if let Some(place) = place_of_person(lexicon, np) {
            self.push(Concept::Location, place);
        }
    }

    /// "我住在北京", "我来自上海", "我搬到了深圳", "我以前住在北京" (past: `以前在北京`).
    fn location(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        const CURRENT: &[&str] = &[
            "住在",
            "生活在",
            "定居在",
            "定居于",
            "搬到了",
            "搬到",
            "搬去了",
            "搬去",
            "搬家到",
            "家住在",
            "家住",
            "住",
        ];
        const ORIGIN: &[&str] = &[
            "来自",
            "出生在",
            "出生于",
            "生于",
            "老家在",
            "老家是",
            "家乡在",
            "家乡是",
        ];
        if let Some((_, tail)) = strip_longest(rest, ORIGIN) {
            let v = value(lexicon, tail, 12);
            if !mods.negated && !v.is_empty() && !is_pronoun_start(lexicon, v) {
                self.push(Concept::Location, v);
            }
            return true;
        }
        if let Some((verb, tail)) = strip_longest(rest, CURRENT) {
            if verb == "住" && starts_any(tail, &["了", "院", "宿", "手", "口", "嘴", "下", "着"])
            {
                return false;
            }
            let tail = tail.trim_start_matches('在');
            let mut v = value(lexicon, tail, 12);
            for stop in [
                "附近的",
                "工作",
                "上班",
                "读书",
                "上学",
                "已经",
                "好几年",
                "很久",
                "多年",
                "快",
                "有",
            ] {
                if let Some(i) = v.find(stop) {
                    if i > 0 {
                        v = v.get(..i).unwrap_or(v);
                    }
                }
            }
            if !mods.negated && !v.is_empty() && !is_pronoun_start(lexicon, v) {
                self.push_dated(Concept::Location, "在", v, mods.past);
            }
            return true;
        }
        false
    }

    /// "我在腾讯工作", "我在医院当护士", "我在北京大学读书", "我在上海生活".
    fn work_place(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        let Some(tail) = rest.strip_prefix('在') else {
            return false;
        };
        const WORK: &[&str] = &[
            "工作",
            "上班",
            "实习",
            "任职",
            "打工",
            "教书",
            "上学",
            "读书",
            "念书",
            "读大学",
            "读研",
            "读博",
            "读高中",
            "读初中",
            "当",
            "做",
            "担任",
        ];
        const LIVE: &[&str] = &["生活", "长大", "定居", "住"];
        let window = take_chars(tail, 14);
        let mut best: Option<(usize, &str, bool)> = None;
        for (words, work) in [(WORK, true), (LIVE, false)] {
            for w in words {
                if let Some(i) = window.find(w) {
                    if i > 0 && best.is_none_or(|(b, _, _)| i < b) {
                        best = Some((i, w, work));
                    }
                }
            }
        }
        let Some((i, verb, work)) = best else {
            return false;
        };
        let place = window.get(..i).unwrap_or("");
        const NOT_PLACES: &[&str] = &[
            "我", "你", "想", "看", "玩", "等", "听", "说", "找", "换", "考虑", "准备", "打算",
            "学习", "给", "为了", "努力", "忙",
        ];
        if place.is_empty()
            || NOT_PLACES.iter().any(|w| place.contains(w))
            || place.chars().count() > 12
            || mods.negated
        {
            return true;
        }
        let after_verb = tail.get(i + verb.len()..).unwrap_or("");
        if !work {
            if verb == "长大" {
                self.push(Concept::Location, place);
            } else {
                self.push_dated(Concept::Location, "在", place, mods.past);
            }
            return true;
        }
        if matches!(verb, "当" | "做" | "担任") {
            let np = strip_count(lexicon, after_verb.trim_start_matches('了'));
            let job = if verb == "担任" {
                Some(value(lexicon, np, 10))
            } else {
                job_prefix(lexicon, value(lexicon, np, 10))
            };
            match job {
                Some(job) if !job.is_empty() => {
                    self.push_dated(Concept::Workplace, "在", place, mods.past);
                    self.push_dated(Concept::Job, "是", job, mods.past);
                }
                _ => {}
            }
            return true;
        }
        self.push_dated(Concept::Workplace, "在", place, mods.past);
        true
    }

    /// "我当老师", "我做程序员", "我从事金融行业", "我是干销售的", "我学的是计算机".
    fn job_verbs(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        if mods.negated {
            return false;
        }
        if let Some(tail) = rest.strip_prefix('当').or_else(|| rest.strip_prefix('做')) {
            if starts_any(
                tail,
                &[
                    "然",
                    "时",
                    "初",
                    "成",
                    "做",
                    "作",
                    "真",
                    "饭",
                    "梦",
                    "事",
                    "完",
                    "好",
                    "到",
                    "过",
                    "的",
                    "了什么",
                    "什么",
                ],
            ) {
                return false;
            }
            let np = strip_count(
                lexicon,
                tail.trim_start_matches('了')
                    .trim_start_matches(['一', '个', '名']),
            );
            if let Some(job) = job_prefix(lexicon, value(lexicon, np, 10)) {
                self.push_dated(Concept::Job, "是", job, mods.past);
                return true;
            }
            return false;
        }
        if let Some(tail) = rest.strip_prefix("从事") {
            let v = value(lexicon, tail, 12);
            let v = v
                .strip_suffix("工作")
                .or_else(|| v.strip_suffix("行业"))
                .unwrap_or(v);
            self.push_dated(Concept::Job, "是", v, mods.past);
            return true;
        }
        if let Some(tail) = rest.strip_prefix('干') {
            if let Some(end) = tail.find('的') {
                let v = tail.get(..end).unwrap_or("");
                if (1..=6).contains(&v.chars().count()) && !v.contains(['嘛', '什', '啥']) {
                    self.push_dated(Concept::Job, "是", v, mods.past);
                    return true;
                }
            }
            return false;
        }
        for prefix in ["学的是", "读的是", "学的", "主修"] {
            if let Some(tail) = rest.strip_prefix(prefix) {
                let v = value(lexicon, tail, 12);
                let v = v.strip_suffix("专业").unwrap_or(v);
                if !v.is_empty() && !is_pronoun_start(lexicon, v) {
                    self.push(Concept::Job, v);
                }
                return true;
            }
        }
        if let Some(tail) = rest
            .strip_prefix('读')
            .or_else(|| rest.strip_prefix("在读"))
        {
            let v = value(lexicon, tail, 12);
            if let Some(field) = v.strip_suffix("专业") {
                if !field.is_empty() {
                    self.push(Concept::Job, field);
                }
                return true;
            }
        }
        false
    }

    /// "我养了一只猫", "我有一个妹妹", "我有男朋友".
    fn have(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        let Some((verb, tail)) = strip_longest(rest, &["养了", "养着", "养", "有了", "有"])
        else {
            return false;
        };
        if mods.negated || mods.past {
            return true;
        }
        let np = strip_count(lexicon, tail);
        if verb.starts_with('养') {
            if lexicon.pets.iter().any(|p| take_chars(np, 6).contains(p)) {
                self.pet(tail);
            }
            return true;
        }
        if strip_longest(np, &lexicon.pets).is_some() {
            self.pet(tail);
            return true;
        }
        if verb.starts_with('有') {
            let person = strip_longest(np, &lexicon.family)
                .map(|(w, _)| (w, Concept::Family))
                .into_iter()
                .chain(
                    strip_longest(np, &lexicon.relations).map(|(w, _)| (w, Concept::Relationships)),
                )
                .max_by_key(|(w, _)| w.len());
            if let Some((word, concept)) = person {
                if word.chars().count() > 1 {
                    let v = value(lexicon, tail, MAX_VALUE_CHARS);
                    self.push(concept, v);
                }
                return true;
            }
        }
        false
    }

    /// A pet phrase ("一只猫叫咪咪"), joined with a name given in the next clause
    /// ("我养了一只狗，叫旺财" → "一只狗，叫旺财").
    fn pet(&mut self, tail: &str) {
        let lexicon = self.lexicon;
        let v = value(lexicon, tail, 12);
        if v.is_empty() {
            return;
        }
        let mut text = v.to_string();
        if !v.contains('叫') {
            if let Some(next) = self.following.first() {
                let n = next
                    .trim_start_matches(['它', '他', '她'])
                    .trim_start_matches('的');
                if let Some((_, name_part)) = strip_longest(n, &["名字叫", "名字是", "名叫", "叫"])
                {
                    let name_part = name_part.trim_start();
                    let name = value(lexicon, name_part, 8);
                    if !name.is_empty() {
                        // The name clause as written, from 叫 to the name's end.
                        let start = next.len() - n.len();
                        let end = next.len() - name_part.len() + name.len();
                        if let Some(said) = next.get(start..end) {
                            text.push('，');
                            text.push_str(said);
                        }
                    }
                }
            }
        }
        self.push(Concept::Pets, &text);
    }

    /// "我喜欢爬山", "我最喜欢的颜色是蓝色", "我不喜欢咖啡", "我讨厌下雨", "我对摄影很感兴趣".
    fn likes(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        const LIKE: &[&str] = &[
            "喜欢",
            "热爱",
            "喜爱",
            "钟爱",
            "偏爱",
            "迷上了",
            "迷上",
            "爱上了",
            "爱上",
            "酷爱",
            "痴迷于",
            "痴迷",
            "沉迷于",
            "沉迷",
            "爱好",
            "享受",
            "爱",
        ];
        const DISLIKE: &[&str] = &[
            "讨厌死了",
            "讨厌",
            "厌恶",
            "受不了",
            "反感",
            "嫌弃",
            "害怕",
            "最怕",
            "怕",
            "恨",
            "烦",
        ];
        if let Some((_, tail)) = strip_longest(rest, LIKE) {
            if tail.starts_with('的') {
                // "我最喜欢的颜色是蓝色": keep the phrase from 最 (or from the verb).
                if !mods.negated {
                    let from = mods.most_from.unwrap_or(rest);
                    let v = value(lexicon, from, MAX_VALUE_CHARS + 4);
                    if v.contains('是') {
                        self.push(Concept::Likes, v);
                    }
                }
                return true;
            }
            let tail = tail.trim_start_matches(['上', '了']);
            let v = value(lexicon, tail, MAX_VALUE_CHARS);
            if v.is_empty()
                || is_pronoun_start(lexicon, v)
                || v.contains(['你', '您'])
                || has_deictic(v)
            {
                return true;
            }
            let concept = if mods.negated {
                Concept::Dislikes
            } else {
                Concept::Likes
            };
            if mods.past && !mods.negated {
                return true;
            }
            self.push_list(concept, v, tail);
            return true;
        }
        if let Some((_, tail)) = strip_longest(rest, DISLIKE) {
            let v = value(lexicon, tail, MAX_VALUE_CHARS);
            if !mods.negated
                && !mods.past
                && !v.is_empty()
                && !is_pronoun_start(lexicon, v)
                && !starts_any(v, &["的是", "了", "死", "不得", "透"])
            {
                self.push_list(Concept::Dislikes, v, tail);
            }
            return true;
        }
        match rest.strip_prefix('对') {
            Some(tail) => self.interest(tail, mods),
            None => false,
        }
    }

    /// "(我对)摄影很感兴趣", "(我对)足球没兴趣": `tail` is what follows 对.
    fn interest(&mut self, tail: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        const INTEREST: &[(&str, bool)] = &[
            ("不感兴趣", false),
            ("没兴趣", false),
            ("没有兴趣", false),
            ("不太感兴趣", false),
            ("感兴趣", true),
            ("有兴趣", true),
        ];
        let window = take_chars(tail, 16);
        for (marker, positive) in INTEREST {
            if let Some(i) = window.find(marker) {
                let thing = window.get(..i).unwrap_or("");
                let mut thing = thing;
                while let Some(w) = [
                    "很", "非常", "特别", "比较", "挺", "超", "也", "都", "一直", "还", "十分",
                ]
                .iter()
                .find(|w| thing.ends_with(**w))
                {
                    thing = thing.get(..thing.len() - w.len()).unwrap_or("");
                }
                if !thing.is_empty() && !is_pronoun_start(lexicon, thing) && !mods.past {
                    let concept = if *positive && !mods.negated {
                        Concept::Likes
                    } else {
                        Concept::Dislikes
                    };
                    self.push(concept, thing);
                }
                return true;
            }
        }
        false
    }

    /// "我打算去日本", "我计划学日语", "我想当医生", "我希望明年考上研究生".
    fn plans(&mut self, rest: &str, mods: &Mods) -> bool {
        let lexicon = self.lexicon;
        const PLAN: &[&str] = &[
            "打算",
            "计划",
            "准备",
            "决定",
            "想要",
            "希望",
            "梦想",
            "立志",
            "正在考虑",
            "考虑",
            "将要",
            "要去",
        ];
        const WANT_VERBS: &[&str] = &[
            "去", "学", "当", "成为", "考", "买", "换", "搬", "找", "做", "开", "养", "回", "出国",
            "旅游", "旅行", "辞职", "结婚", "参加", "报", "读", "写", "减肥", "创业", "存钱",
        ];
        if mods.negated {
            return false;
        }
        if let Some((verb, tail)) = strip_longest(rest, PLAN) {
            let tail = tail.trim_start_matches(['着', '在']);
            let v = value(
                lexicon,
                if verb == "要去" {
                    rest.get("要".len()..).unwrap_or(tail)
                } else {
                    tail
                },
                MAX_VALUE_CHARS,
            );
            if v.chars().count() >= 2
                && !is_pronoun_start(lexicon, v)
                && !has_deictic(v)
                && !starts_any(v, &["好", "了", "一下", "怎么"])
            {
                self.push(Concept::Plans, v);
            }
            return true;
        }
        if let Some(tail) = rest.strip_prefix('想') {
            if starts_any(tail, WANT_VERBS) {
                let v = value(lexicon, tail, MAX_VALUE_CHARS);
                if v.chars().count() >= 2 {
                    self.push(Concept::Plans, v);
                }
                return true;
            }
        }
        false
    }
}

/// Skip what sits between "我" and the verb, noting past, negation, hedges and 最.
fn skip_modifiers<'s>(lexicon: &ChineseWords, s: &'s str) -> (Mods<'s>, &'s str) {
    let mut mods = Mods::default();
    let mut rest = s;
    for _ in 0..8 {
        // Frequency words ("从不", "经常") are read by the habit rule, negation included.
        if strip_longest(rest, &lexicon.frequency).is_some() && !rest.starts_with("一般般") {
            break;
        }
        if let Some((_, r)) = strip_longest(rest, &lexicon.past) {
            mods.past = true;
            rest = r;
        } else if let Some((_, r)) = strip_longest(rest, &lexicon.negations) {
            mods.negated = true;
            mods.kept_from.get_or_insert(rest);
            rest = r;
        } else if let Some((_, r)) = strip_longest(rest, &lexicon.hedges) {
            mods.kept_from.get_or_insert(rest);
            rest = r;
        } else if let Some((w, r)) = strip_longest(rest, &lexicon.intensifiers) {
            // "好奇" and "好几" are words, not "好" + something.
            if w == "好" && starts_any(r, &["奇", "几", "多", "像", "的", "了", "吧", "啊"])
            {
                break;
            }
            if w == "最" {
                mods.most_from.get_or_insert(rest);
            }
            rest = r;
        } else if let Some((_, r)) = strip_longest(rest, &lexicon.fillers) {
            rest = r;
        } else {
            break;
        }
    }
    (mods, rest)
}

/// A list that continues a like in the next clauses: "…，跳舞，还有画画".
fn list_tail(lexicon: &ChineseWords, following: &[&str]) -> Option<String> {
    let mut parts = Vec::new();
    for clause in following.iter().take(6) {
        let n = clause.chars().count();
        if n == 0
            || n > 8
            || clause.contains(['我', '你', '他', '她', '它'])
            || clause.ends_with(['？', '?', '吗'])
        {
            return None;
        }
        parts.push(value(lexicon, clause, 8).to_string());
        if starts_any(clause, &["还有", "和", "以及", "或者", "跟", "还"]) {
            return Some(parts.join("，"));
        }
    }
    None
}
