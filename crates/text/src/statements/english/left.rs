//! Who holds a fact: the walk left from a verb to its subject, and the guards that silence a
//! sentence's statements (questions, conditionals, reported speech, past-only context).

use super::super::lexicon::{NOT_NAMES, RELATIONS, RELATION_MODIFIERS};
use super::super::scan::Tok;
use super::super::types::Subject;
use super::context::Context;

/// The subject found left of a verb.
#[derive(Clone, Debug)]
pub(super) struct Holder {
    pub subject: Subject,
    /// A negation stood between subject and verb ("I don't", "I no longer", "I stopped").
    pub negated: bool,
    /// "have"/"has"/"'ve" stood between them (present perfect: "I've lived here for years").
    pub perfect: bool,
    /// Byte where the subject starts.
    pub start: usize,
}

/// Adverbs that may stand between a subject and its verb without changing the fact.
#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "now", "currently", "still", "actually", "just", "recently", "finally", "officially", "also",
    "already", "really", "basically", "literally", "even", "newly", "happily", "permanently",
    "technically", "mostly", "primarily", "only", "then", "both", "all", "proudly", "totally",
    "definitely", "honestly", "seriously", "absolutely", "truly", "full-time", "part-time",
    "fully", "completely", "strictly", "somehow", "suddenly", "eventually", "again", "very",
    "pretty", "kinda", "sorta", "legally", "secretly", "quietly", "lately", "nowadays", "today",
    "yesterday", "temporarily", "back", "ever", "officially",
];

/// Auxiliaries that keep the fact current.
const AUXILIARIES: &[&str] = &[
    "am", "is", "are", "'m", "'s", "'re", "do", "does", "did", "been", "got", "gotten", "get",
    "became",
];

/// Participles after "was" that tell of a change that still holds ("I was promoted to …").
const PASSIVE_CHANGES: &[&str] = &[
    "promoted",
    "hired",
    "appointed",
    "transferred",
    "posted",
    "relocated",
    "named",
    "made",
    "elected",
    "recruited",
    "offered",
    "moved",
    "reassigned",
];

/// Verbs that start or end a habit before a gerund ("I stopped eating meat").
const ASPECT_VERBS: &[&str] = &[
    "started", "start", "starting", "began", "begun", "stopped", "quit", "ceased", "keep",
];

/// Negations between subject and verb.
const NEGATIONS: &[&str] = &[
    "not", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "haven't", "hasn't", "ain't",
    "dont", "doesnt", "didnt", "isnt", "arent", "havent", "hasnt", "nt", "n't", "'m not",
];

/// Subject pronouns of the speaker (with their contractions that keep the fact current).
#[rustfmt::skip]
const FIRST_PERSON: &[&str] = &[
    "i", "we", "i'm", "im", "we're", "i've", "ive", "we've", "me", "myself", "ourselves",
];

/// Words that stop the walk: the fact is someone else's, unresolved, or not asserted.
#[rustfmt::skip]
const OTHER_PERSON: &[&str] = &[
    "he", "she", "they", "it", "you", "he's", "she's", "they're", "you're", "it's", "this", "that",
    "there", "who", "which", "someone", "everyone", "people", "nobody", "somebody", "everybody",
    "anyone", "one", "they've", "you've", "he'd", "she'd", "you'd",
];

/// The holder of the fact whose verb starts at byte `at`.
/// With `dropped_ok`, a clause that opens the sentence without a subject ("Moved to Porto last
/// month!") is the speaker's.
pub(super) fn holder(ctx: &Context, at: usize, dropped_ok: bool) -> Option<Holder> {
    let toks = &ctx.toks;
    let mut i = toks.iter().take_while(|t| t.start < at).count();
    if let Some(straddling) = i.checked_sub(1).and_then(|k| toks.get(k)) {
        if straddling.end > at {
            // The match starts inside a word: "I'm" when it starts at "'m", "Alex's" at "'s".
            return contracted_subject(ctx, i - 1, at);
        }
    }
    if elliptical(ctx, at) {
        return Some(Holder {
            subject: Subject::Speaker,
            negated: false,
            perfect: false,
            start: 0,
        });
    }
    let (mut negated, mut perfect) = (false, false);
    while i > 0 {
        i -= 1;
        let tok = toks.get(i)?;
        let w = tok.lower.as_str();
        if !tok.word {
            return carried_subject(ctx, i, negated, perfect, dropped_ok);
        }
        if w == "longer" && toks.get(i.wrapping_sub(1)).is_some_and(|t| t.lower == "no") {
            negated = true;
            i -= 1;
            continue;
        }
        if NEGATIONS.contains(&w) || w.ends_with("n't") {
            negated |= !matches!(w, "can't" | "won't" | "wouldn't" | "couldn't" | "shouldn't");
            if matches!(w, "can't" | "won't" | "wouldn't" | "couldn't" | "shouldn't") {
                return None;
            }
            continue;
        }
        if matches!(w, "have" | "has" | "'ve") {
            perfect = true;
            continue;
        }
        // "I was promoted to manager", "I was hired by Globex": a passive change still holds.
        let passive_change = toks
            .get(i + 1)
            .is_some_and(|n| PASSIVE_CHANGES.contains(&n.lower.as_str()));
        if matches!(w, "was" | "were") && passive_change {
            continue;
        }
        if matches!(w, "stopped" | "quit" | "ceased") {
            negated = true;
            continue;
        }
        if ADVERBS.contains(&w) || AUXILIARIES.contains(&w) || ASPECT_VERBS.contains(&w) {
            continue;
        }
        if is_clause_joiner(w) {
            return carried_subject(ctx, i, negated, perfect, dropped_ok);
        }
        let subject = subject_at(ctx, i)?;
        perfect |= w.ends_with("'ve") || w == "ive";
        return Some(Holder {
            subject: subject.0,
            negated,
            perfect,
            start: subject.1,
        });
    }
    dropped_ok.then_some(Holder {
        subject: Subject::Speaker,
        negated,
        perfect,
        start: 0,
    })
}

/// Words that open an answer whose subject is left out: "Still vegetarian, yes.", "Currently
/// living in Austin."
const ELLIPTICAL_OPENERS: &[&str] = &[
    "still",
    "currently",
    "now",
    "also",
    "nowadays",
    "lately",
    "recently",
    "happily",
    "officially",
    "finally",
];

/// Replies that may come before an elliptical answer ("Yes, still …").
const INTERJECTIONS: &[&str] = &[
    "yes", "yeah", "yep", "yup", "sure", "ok", "okay", "right", "indeed", "correct", "true",
];

/// Whether the clause of a fact at byte `at` is an answer without a subject: the sentence
/// opens (after a "yes") with one of [`ELLIPTICAL_OPENERS`] and only adverbs lie between it and
/// the fact.
fn elliptical(ctx: &Context, at: usize) -> bool {
    let mut words = ctx
        .toks
        .iter()
        .skip_while(|t| !t.word || INTERJECTIONS.contains(&t.lower.as_str()))
        .peekable();
    let Some(opener) = words.next() else {
        return false;
    };
    if opener.start > at || !ELLIPTICAL_OPENERS.contains(&opener.lower.as_str()) {
        return false;
    }
    words
        .take_while(|t| t.end <= at)
        .all(|t| t.word && ADVERBS.contains(&t.lower.as_str()))
}

/// The subject written as the part of token `i` before byte `at` ("I" of "I'm").
fn contracted_subject(ctx: &Context, i: usize, at: usize) -> Option<Holder> {
    let tok = ctx.toks.get(i)?;
    let written = ctx.text.get(tok.start..at)?;
    let lower = written.to_lowercase();
    if matches!(lower.as_str(), "i" | "we") {
        return Some(Holder {
            subject: Subject::Speaker,
            negated: false,
            perfect: false,
            start: tok.start,
        });
    }
    let name_like = tok.capital
        && !NOT_NAMES.contains(&lower.as_str())
        && !OTHER_PERSON.contains(&lower.as_str());
    if !name_like || is_common_noun(&lower) {
        return None;
    }
    let mut start = tok.start;
    let mut j = i;
    while j > 0 && i - j < 2 {
        let Some(before) = ctx.toks.get(j - 1) else {
            break;
        };
        if !before.word || !before.capital || NOT_NAMES.contains(&before.lower.as_str()) {
            break;
        }
        start = before.start;
        j -= 1;
    }
    let name = ctx.text.get(start..at)?.trim().to_string();
    Some(Holder {
        subject: Subject::Named(name),
        negated: false,
        perfect: false,
        start,
    })
}

/// Capitalized words at the start of a sentence that name kinds of people, not a person
/// ("Nurses work long hours").
pub(super) fn is_common_noun(lower: &str) -> bool {
    use super::super::lexicon::OCCUPATIONS;
    let singular = lower.strip_suffix('s').unwrap_or(lower);
    OCCUPATIONS.contains(&lower)
        || OCCUPATIONS.contains(&singular)
        || RELATIONS.contains(&singular)
        || matches!(
            lower,
            "people"
                | "folks"
                | "kids"
                | "children"
                | "women"
                | "men"
                | "everyone"
                | "nobody"
                | "someone"
                | "somebody"
                | "anyone"
                | "most"
                | "many"
                | "some"
                | "lots"
                | "city"
                | "cities"
                | "living"
                | "life"
                | "home"
                | "work"
                | "working"
        )
}

/// Words that join clauses: the subject of the clause before may carry over ("I moved last
/// year and now live in Boston").
fn is_clause_joiner(w: &str) -> bool {
    matches!(w, "and" | "but" | "then" | "so" | "plus")
}

/// The subject of a clause that has none of its own: the previous clause's, when it started
/// with one; the speaker when the clause opens the sentence (chat drops "I": "Moved to Porto
/// last month!").
fn carried_subject(
    ctx: &Context,
    boundary: usize,
    negated: bool,
    perfect: bool,
    dropped_ok: bool,
) -> Option<Holder> {
    let tok = ctx.toks.get(boundary)?;
    if is_clause_joiner(&tok.lower) || matches!(tok.lower.as_str(), "," | ";") {
        let previous_start = ctx.toks.get(..boundary)?.iter().rposition(|t| {
            !t.word && matches!(t.lower.as_str(), "," | ";" | ":" | "!" | "—" | "–")
        });
        let first = previous_start.map_or(0, |p| p + 1);
        let (subject, start) = subject_at_clause_start(ctx, first)?;
        return Some(Holder {
            subject,
            negated,
            perfect,
            start,
        });
    }
    let opens = matches!(tok.lower.as_str(), ":" | "!" | "—" | "–" | "(");
    (opens && dropped_ok).then_some(Holder {
        subject: Subject::Speaker,
        negated,
        perfect,
        start: tok.end,
    })
}

/// The subject at the start of a clause beginning at token `first`.
fn subject_at_clause_start(ctx: &Context, first: usize) -> Option<(Subject, usize)> {
    let mut end = first;
    let toks = &ctx.toks;
    // The subject is at most a few words ("my older sister", "Dana Wu").
    while end < toks.len() && end < first + 4 {
        let tok = toks.get(end)?;
        if !tok.word {
            break;
        }
        if let Some(found) = subject_at(ctx, end) {
            let next = toks.get(end + 1);
            let ends_subject = next
                .is_none_or(|n| !n.capital && !RELATIONS.contains(&n.lower.as_str()) || !n.word);
            if ends_subject {
                return Some(found);
            }
        }
        end += 1;
    }
    None
}

/// The subject ending at token `i`, with the byte where it starts.
pub(super) fn subject_at(ctx: &Context, i: usize) -> Option<(Subject, usize)> {
    let tok = ctx.toks.get(i)?;
    let w = tok.lower.as_str();
    if FIRST_PERSON.contains(&w) {
        return Some((Subject::Speaker, tok.start));
    }
    if OTHER_PERSON.contains(&w) {
        return None;
    }
    // "Our family relocated to Perth": the speaker's household is the speaker.
    let ours = i
        .checked_sub(1)
        .and_then(|p| ctx.toks.get(p))
        .is_some_and(|p| matches!(p.lower.as_str(), "my" | "our"));
    if ours && matches!(w, "family" | "household" | "whole family") {
        return Some((
            Subject::Speaker,
            ctx.toks.get(i - 1).map_or(tok.start, |p| p.start),
        ));
    }
    if RELATIONS.contains(&w) {
        return related(ctx, i);
    }
    if tok.capital || tok.lower.chars().any(crate::is_cjk) {
        return named(ctx, i);
    }
    None
}

/// "my (older) sister" → Related("sister"); "Mom" alone too.
fn related(ctx: &Context, i: usize) -> Option<(Subject, usize)> {
    let tok = ctx.toks.get(i)?;
    let mut j = i;
    while j > 0 {
        j -= 1;
        let before = ctx.toks.get(j)?;
        if RELATION_MODIFIERS.contains(&before.lower.as_str()) {
            continue;
        }
        if matches!(before.lower.as_str(), "my" | "our") {
            // "Me and my girlfriend split up": the speaker is one of them.
            let me_and = j >= 2
                && ctx.toks.get(j - 1).is_some_and(|t| t.lower == "and")
                && ctx.toks.get(j - 2).is_some_and(|t| t.lower == "me");
            if me_and {
                return Some((Subject::Speaker, ctx.toks.get(j - 2)?.start));
            }
            return Some((Subject::Related(tok.lower.clone()), before.start));
        }
        break;
    }
    let bare_parent = tok.capital && matches!(tok.lower.as_str(), "mom" | "mum" | "dad");
    bare_parent.then(|| (Subject::Related(tok.lower.clone()), tok.start))
}

/// A capitalized name ending at token `i` (up to three words; "my friend Alex" → "Alex").
fn named(ctx: &Context, i: usize) -> Option<(Subject, usize)> {
    let last = ctx.toks.get(i)?;
    if NOT_NAMES.contains(&last.lower.as_str())
        || last.lower.ends_with("'s")
        || is_common_noun(&last.lower)
    {
        return None;
    }
    let mut first = i;
    while first > 0 && i - first < 2 {
        let Some(before) = ctx.toks.get(first - 1) else {
            break;
        };
        if !before.word || !before.capital || NOT_NAMES.contains(&before.lower.as_str()) {
            break;
        }
        first -= 1;
    }
    let start = ctx.toks.get(first)?.start;
    let name = ctx.text.get(start..last.end)?.trim().to_string();
    Some((Subject::Named(name), start))
}

/// Words that make what follows them hypothetical, wished for or uncertain.
#[rustfmt::skip]
const HYPOTHETICAL: &[&str] = &[
    "if", "unless", "imagine", "imagining", "suppose", "supposing", "pretend", "pretending",
    "wish", "wishing", "whether", "hypothetically", "assuming", "dream", "dreaming", "fantasize",
    "fantasizing", "maybe", "perhaps", "possibly", "someday", "considering", "thinking",
    "wondering", "should", "could", "would", "might", "may", "let's", "lets", "hoping", "hope",
    "want", "wants", "wanted", "wanna", "gonna", "planning", "plan", "can", "will", "must",
    "shall", "i'd", "we'd", "i'll", "we'll", "once", "whenever", "unless",
];

/// Verbs that report what someone else says or thinks.
#[rustfmt::skip]
const REPORTING: &[&str] = &[
    "said", "says", "say", "saying", "told", "tells", "tell", "telling", "claims", "claimed",
    "claim", "claiming", "thinks", "thought", "believes", "believe", "believed", "heard", "hears",
    "mentioned", "mentions", "insists", "insisted", "joked", "jokes", "swears", "swore", "reckons",
    "pretends", "pretended", "announced", "announces", "wrote", "writes", "texted", "posted",
    "asked", "asks", "assumed", "assumes", "guessed", "rumored", "rumoured", "according",
    "supposedly", "apparently", "allegedly", "dreamt", "dreamed", "lied", "lies", "bragged",
    "brags", "boasted", "boasts", "complained", "complains", "explained", "explains", "replied",
    "answered", "shouted", "yelled", "whispered",
    "assume", "suspect", "suspects", "suspected", "figures", "figured", "reckon", "imagines", "imagined", "convinced", "rumor", "rumour", "gossip",
];

/// Phrases that set what follows in fiction or a dream ("In the movie, I'm a doctor").
const FICTION: &[&[&str]] = &[
    &["in", "the", "movie"],
    &["in", "the", "film"],
    &["in", "the", "play"],
    &["in", "the", "game"],
    &["in", "the", "show"],
    &["in", "the", "book"],
    &["in", "the", "story"],
    &["in", "the", "novel"],
    &["in", "my", "dream"],
    &["in", "my", "dreams"],
    &["in", "the", "dream"],
    &["in", "another", "life"],
    &["in", "a", "parallel"],
];

/// Phrases that set a sentence in the past without a change to the present.
const PAST_CONTEXT: &[&[&str]] = &[
    &["back", "when"],
    &["when", "i", "was"],
    &["when", "we", "were"],
    &["when", "i", "lived"],
    &["as", "a", "kid"],
    &["as", "a", "child"],
    &["as", "a", "teenager"],
    &["growing", "up"],
    &["in", "college"],
    &["in", "high", "school"],
    &["at", "university"],
    &["at", "uni"],
    &["back", "then"],
    &["at", "the", "time"],
    &["used", "to"],
    &["years", "ago", ","],
    &["in", "my", "twenties"],
    &["in", "my", "20s"],
    &["before", "that"],
    &["previously"],
    &["formerly"],
    &["once", "upon"],
];

/// Words after which the sentence is about the present again ("…, but now I live in Porto").
const PRESENT_AGAIN: &[&str] = &["but", "now", "nowadays", "currently", "today", "however"];

/// Whether the sentence text before byte `start` (where the statement's subject starts) makes
/// the statement not an assertion of the speaker's present.
pub(super) fn blocked_before(ctx: &Context, start: usize) -> bool {
    blocked(ctx, start, true)
}

/// As [`blocked_before`], but a past year alone does not block: "In 2023 I moved to Porto" still
/// says where the speaker lives when nothing later says otherwise.
pub(super) fn blocked_before_but_a_year(ctx: &Context, start: usize) -> bool {
    blocked(ctx, start, false)
}

fn blocked(ctx: &Context, start: usize, years: bool) -> bool {
    let before: Vec<&Tok> = ctx.toks.iter().take_while(|t| t.end <= start).collect();
    for (i, tok) in before.iter().enumerate() {
        let w = tok.lower.as_str();
        if HYPOTHETICAL.contains(&w) {
            return true;
        }
        if REPORTING.contains(&w) && !reported_by_speaker(&before, i) {
            return true;
        }
    }
    let words: Vec<&str> = before.iter().map(|t| t.lower.as_str()).collect();
    let fiction = (0..words.len()).any(|i| {
        let rest = words.get(i..).unwrap_or(&[]);
        FICTION.iter().any(|p| rest.starts_with(p))
    });
    fiction || in_past_context(&before, years)
}

/// "I told you I moved": the speaker reports their own words.
fn reported_by_speaker(before: &[&Tok], verb: usize) -> bool {
    let mut i = verb;
    while i > 0 {
        i -= 1;
        let Some(tok) = before.get(i) else {
            return false;
        };
        let w = tok.lower.as_str();
        if ADVERBS.contains(&w) || matches!(w, "have" | "'ve" | "did" | "already") {
            continue;
        }
        return matches!(w, "i" | "we" | "i've" | "we've");
    }
    false
}

fn is_year(word: &str) -> bool {
    word.len() == 4
        && word.chars().all(|c| c.is_ascii_digit())
        && (word.starts_with("19") || word.starts_with("20"))
}

fn in_past_context(before: &[&Tok], years: bool) -> bool {
    let words: Vec<&str> = before.iter().map(|t| t.lower.as_str()).collect();
    let mut past = false;
    for i in 0..words.len() {
        let rest = words.get(i..).unwrap_or(&[]);
        // "In 2015 I moved to Paris": a year named before the subject.
        let year_ago = years && matches!(rest, ["in", year, ..] if is_year(year));
        if year_ago || PAST_CONTEXT.iter().any(|p| rest.starts_with(p)) {
            past = true;
        } else if words.get(i).is_some_and(|w| PRESENT_AGAIN.contains(w)) {
            past = false;
        }
    }
    past
}
