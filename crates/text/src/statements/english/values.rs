//! Reading a value to the right of a rule's match: a place, an organization, a name, an
//! occupation or a short noun phrase, cut to the informative words.

use super::super::lexicon::NOT_NAMES;
use super::super::lexicon::{
    JUDGEMENT_ADJECTIVES, NOT_OCCUPATIONS, OCCUPATIONS, OCCUPATION_SUFFIXES,
};
use super::context::Context;

/// A value read from the sentence: its text and where it ends.
#[derive(Clone, Debug)]
pub(super) struct Read {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// Words that end a noun phrase value ("a locksmith now", "Porto, in a small flat").
#[rustfmt::skip]
const PHRASE_ENDS: &[&str] = &[
    "now", "anymore", "these", "nowadays", "today", "lately", "recently", "again", "too", "though",
    "instead", "at", "for", "in", "with", "and", "but", "because", "since", "so", "who", "which",
    "that", "when", "where", "while", "from", "by", "after", "before", "until", "as", "here",
    "there", "currently", "still", "already", "actually", "really", "ever", "anyway", "haha",
    "lol", "if", "or", "than", "full-time", "part-time", "on", "this", "last", "next", "every",
    "each", "per", "right", "any", "no", "not", "nor", "though", "although", "whereas", "yet",
    "then", "plus", "these", "those", "full", "part", "to", "is", "are", "was", "were", "it's",
    "its", "i", "we", "i'm", "we're", "my", "our", "your", "you", "since", "around", "about",
    "near", "like", "mostly", "mainly", "probably", "definitely", "over", "under", "into", "onto",
    "through", "during", "without", "within", "outside",
];

/// Whether a word ends a noun phrase value.
pub(super) fn is_phrase_end(w: &str) -> bool {
    PHRASE_ENDS.contains(&w)
}

/// Determiners skipped before a value.
const DETERMINERS: &[&str] = &["a", "an", "the", "some", "my", "our"];

/// Index of the first token starting at or after byte `pos`.
fn first_token(ctx: &Context, pos: usize) -> usize {
    ctx.toks.iter().take_while(|t| t.start < pos).count()
}

/// Lower-case connectors inside multi-word place and organization names.
const NAME_CONNECTORS: &[&str] = &[
    "de", "da", "do", "dos", "das", "del", "della", "di", "du", "des", "la", "le", "los", "las",
    "el", "upon", "on", "am", "an", "sur", "en", "y", "of", "und", "van", "von", "der", "den", "&",
    "and", "-",
];

/// A capitalized name starting at `pos` (articles skipped): "New York", "Rio de Janeiro",
/// "St. Louis", "Acme Corp", or a Han name. `max_words` bounds it.
pub(super) fn capitalized(ctx: &Context, pos: usize, max_words: usize) -> Option<Read> {
    let mut i = first_token(ctx, pos);
    while ctx
        .toks
        .get(i)
        .is_some_and(|t| matches!(t.lower.as_str(), "the" | "a" | "an"))
    {
        i += 1;
    }
    let first = ctx.toks.get(i)?;
    let han = first.lower.chars().any(crate::is_cjk);
    if han {
        return Some(Read {
            text: ctx.text.get(first.start..first.end)?.to_string(),
            start: first.start,
            end: first.end,
        });
    }
    if !first.word || !starts_name(first) || NOT_NAMES.contains(&first.lower.as_str()) {
        return None;
    }
    let (start, mut end, mut words) = (first.start, first.end, 1);
    let mut j = i + 1;
    while words < max_words {
        let Some(tok) = ctx.toks.get(j) else { break };
        let adjacent = tok.start == end;
        if tok.word && starts_name(tok) && !NOT_NAMES.contains(&tok.lower.as_str()) {
            end = tok.end;
            words += 1;
            j += 1;
            continue;
        }
        // "St. Louis": an abbreviation's dot; "Rio de Janeiro": a connector before a capital.
        let joins = (tok.lower == "." && adjacent)
            || NAME_CONNECTORS.contains(&tok.lower.as_str())
            || (tok.lower == "&");
        let next_is_name = ctx
            .toks
            .get(j + 1)
            .is_some_and(|n| n.word && starts_name(n) && !NOT_NAMES.contains(&n.lower.as_str()));
        if joins && next_is_name {
            j += 1;
            continue;
        }
        break;
    }
    Some(Read {
        text: ctx.text.get(start..end)?.trim().to_string(),
        start,
        end,
    })
}

fn starts_name(tok: &super::super::scan::Tok) -> bool {
    tok.capital || tok.lower.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// A place: a capitalized name; in a sentence typed all in lower case, the next one to three
/// words that are not function words ("i live in porto now" → "porto").
pub(super) fn place(ctx: &Context, pos: usize) -> Option<Read> {
    if let Some(read) = capitalized(ctx, pos, 5) {
        let is_place = !read.text.chars().all(|c| c.is_ascii_digit());
        return is_place.then_some(read);
    }
    if let Some(read) = place_of_dwelling(ctx, pos) {
        return Some(read);
    }
    if !ctx.all_lower {
        return None;
    }
    let read = plain_words(ctx, pos, 3)?;
    let generic = read
        .text
        .split_whitespace()
        .any(|w| NOT_PLACES.contains(&w));
    (!generic).then_some(read)
}

/// Homes that a place name may follow ("a tiny flat in Lyon").
#[rustfmt::skip]
const DWELLINGS: &[&str] = &[
    "flat", "apartment", "house", "place", "studio", "condo", "room", "home", "cottage", "village",
    "town", "suburb", "neighbourhood", "neighborhood", "loft", "bungalow", "farm", "city", "area",
    "part", "district",
];

/// The place after a home described in lower case: "a tiny flat in Lyon" → "Lyon".
fn place_of_dwelling(ctx: &Context, pos: usize) -> Option<Read> {
    let start = first_token(ctx, pos);
    let window = ctx.toks.get(start..(start + 6).min(ctx.toks.len()))?;
    let dwelling = window
        .iter()
        .position(|t| DWELLINGS.contains(&t.lower.as_str()))?;
    let lead_in_ok = window.get(..dwelling)?.iter().all(|t| {
        (t.word && !t.capital && !PHRASE_ENDS.contains(&t.lower.as_str()))
            || DETERMINERS.contains(&t.lower.as_str())
    });
    let prep = window.get(dwelling + 1)?;
    if !lead_in_ok || !matches!(prep.lower.as_str(), "in" | "near" | "outside" | "on") {
        return None;
    }
    capitalized(ctx, prep.end, 5)
}

/// Lower-case words that are never place names.
#[rustfmt::skip]
const NOT_PLACES: &[&str] = &[
    "fear", "peace", "sin", "hope", "denial", "luxury", "poverty", "city", "town", "house", "flat",
    "apartment", "place", "area", "suburbs", "countryside", "village", "neighborhood",
    "neighbourhood", "home", "dorm", "dorms", "studio", "building", "condo", "van", "car", "tent",
    "basement", "attic", "room", "bubble", "world", "moment", "past", "present", "future", "style",
    "harmony", "misery", "comfort", "shared", "small", "big", "new", "nice", "tiny", "same", "one",
    "two", "here", "there", "together", "alone", "with", "by",
];

/// Workplace nouns that make a lower-case phrase an employer ("a local bakery").
#[rustfmt::skip]
const WORKPLACES: &[&str] = &[
    "hospital", "bank", "school", "university", "college", "startup", "start-up", "company",
    "firm", "restaurant", "cafe", "café", "bakery", "clinic", "hotel", "factory", "store", "shop",
    "agency", "lab", "laboratory", "library", "museum", "airline", "nonprofit", "non-profit",
    "charity", "bookstore", "bookshop", "pharmacy", "gym", "studio", "newspaper", "magazine",
    "warehouse", "supermarket", "bar", "pub", "brewery", "winery", "farm", "garage", "salon",
    "daycare", "kindergarten", "nursery", "office", "consultancy", "ministry", "council",
    "embassy", "church", "zoo", "theater", "theatre", "publisher", "publishing", "agency",
    "foundation", "institute", "hospice", "practice", "dealership", "call centre", "call center",
    "retailer", "corporation", "conglomerate", "bistro", "diner", "vet", "tech company",
    "law firm", "accounting firm", "ngo",
];

/// An employer: a capitalized name, or a lower-case phrase headed by a workplace noun.
pub(super) fn org(ctx: &Context, pos: usize) -> Option<Read> {
    if let Some(read) = capitalized(ctx, pos, 5) {
        return Some(read);
    }
    let mut read = plain_words(ctx, pos, 4)?;
    // "a small bakery downtown" → "small bakery": cut after the workplace noun.
    let words: Vec<&str> = read.text.split_whitespace().collect();
    if let Some(at) = words
        .iter()
        .position(|w| WORKPLACES.contains(&w.to_lowercase().as_str()))
    {
        let kept = words.get(..=at).unwrap_or(&[]).join(" ");
        let end =
            read.start + ctx.text.get(read.start..)?.find(words.get(at)?)? + words.get(at)?.len();
        read = Read {
            text: kept,
            start: read.start,
            end,
        };
    }
    let head = read.text.split_whitespace().last()?.to_lowercase();
    let workplace = WORKPLACES.contains(&head.as_str());
    let unnamed_all_lower = ctx.all_lower
        && !NOT_PLACES.contains(&head.as_str())
        && read.text.split_whitespace().count() <= 2;
    (workplace || unnamed_all_lower).then_some(read)
}

/// A person's name: one to three capitalized words (or a Han name), optionally after a comma.
pub(super) fn name(ctx: &Context, pos: usize) -> Option<Read> {
    let mut i = first_token(ctx, pos);
    while ctx
        .toks
        .get(i)
        .is_some_and(|t| matches!(t.lower.as_str(), "," | "\"" | "“" | "'" | "‘" | "«"))
    {
        i += 1;
    }
    let start = ctx.toks.get(i)?.start;
    let read = capitalized(ctx, start, 3).or_else(|| named_by_cue(ctx, i))?;
    let first_word = read.text.split_whitespace().next()?.to_lowercase();
    // "Priya's brother": a name that owns what follows is not the one given.
    let possessive = read.text.ends_with("'s") || read.text.ends_with("’s");
    let plausible = !DETERMINERS.contains(&first_word.as_str())
        && !possessive
        && !read.text.chars().any(|c| c.is_ascii_digit());
    plausible.then_some(read)
}

/// Words right before a name that make it one even in lower case ("called biscotti").
const NAME_CUES: &[&[&str]] = &[
    &["called"],
    &["named"],
    &["name", "is"],
    &["name's"],
    &["by"],
    &["answers", "to"],
    &["answer", "to"],
    &["responds", "to"],
    &["renamed"],
    &["call", "her"],
    &["call", "him"],
    &["call", "it"],
    &["call", "them"],
];

/// Words a cue may come before that are not names ("called it off", "named after").
const NOT_GIVEN_NAMES: &[&str] = &[
    "it",
    "him",
    "her",
    "them",
    "me",
    "us",
    "you",
    "after",
    "something",
    "that",
    "this",
    "the",
    "a",
    "an",
    "my",
    "our",
    "his",
    "their",
    "your",
    "off",
    "out",
    "up",
    "back",
    "in",
    "on",
    "for",
    "as",
    "to",
    "by",
    "and",
    "but",
    "because",
    "so",
    "now",
    "too",
    "again",
    "later",
    "home",
    "work",
    "everyone",
    "someone",
    "anything",
    "nothing",
    "what",
    "whatever",
];

/// One lower-case word at token `i` that a cue just before marks as a name ("my cat is called
/// biscotti", "someone named tobias").
fn named_by_cue(ctx: &Context, i: usize) -> Option<Read> {
    let tok = ctx.toks.get(i)?;
    let cued = NAME_CUES.iter().any(|cue| {
        let n = cue.len();
        i >= n
            && ctx.toks.get(i - n..i).is_some_and(|before| {
                before
                    .iter()
                    .map(|t| t.lower.as_str())
                    .eq(cue.iter().copied())
            })
    });
    // "named our son theo": the verb of naming a few words before, with only words between.
    let naming_verb = (1..=4).any(|back| {
        i >= back
            && ctx.toks.get(i - back..i).is_some_and(|between| {
                between.iter().all(|t| t.word)
                    && between
                        .first()
                        .is_some_and(|t| matches!(t.lower.as_str(), "named" | "renamed" | "called"))
            })
    });
    let cued = cued || naming_verb;
    let wordlike = tok.word
        && tok.lower.len() >= 2
        && tok.lower.chars().all(char::is_alphabetic)
        && !NOT_GIVEN_NAMES.contains(&tok.lower.as_str())
        && !PHRASE_ENDS.contains(&tok.lower.as_str());
    (cued && wordlike).then(|| Read {
        text: ctx.text.get(tok.start..tok.end).unwrap_or("").to_string(),
        start: tok.start,
        end: tok.end,
    })
}

/// Up to `max` plain words from `pos`: determiners skipped, stopping at punctuation or a word
/// that ends a phrase.
pub(super) fn plain_words(ctx: &Context, pos: usize, max: usize) -> Option<Read> {
    let mut i = first_token(ctx, pos);
    while ctx
        .toks
        .get(i)
        .is_some_and(|t| DETERMINERS.contains(&t.lower.as_str()))
    {
        i += 1;
    }
    let first = ctx.toks.get(i)?;
    let (start, mut end, mut count) = (first.start, first.start, 0);
    while count < max {
        let Some(tok) = ctx.toks.get(i) else { break };
        let ends = !tok.word
            || PHRASE_ENDS.contains(&tok.lower.as_str())
            || tok.lower.ends_with("'s") && count > 0;
        if ends {
            break;
        }
        end = tok.end;
        count += 1;
        i += 1;
    }
    (count > 0).then(|| Read {
        text: ctx.text.get(start..end).unwrap_or("").trim().to_string(),
        start,
        end,
    })
}

/// A phrase that may hold "of" between words of a title ("head of product").
pub(super) fn job_phrase(ctx: &Context, pos: usize) -> Option<Read> {
    let read = plain_words(ctx, pos, 5)?;
    let after = first_token(ctx, read.end);
    let of = ctx.toks.get(after).is_some_and(|t| t.lower == "of");
    let titled = read
        .text
        .split_whitespace()
        .last()
        .is_some_and(|w| TITLE_HEADS.contains(&w.to_lowercase().as_str()));
    if of && titled {
        let rest_at = ctx.toks.get(after)?.end;
        if let Some(rest) = plain_words(ctx, rest_at, 3) {
            let text = ctx.text.get(read.start..rest.end)?.trim().to_string();
            return Some(Read {
                text,
                start: read.start,
                end: rest.end,
            });
        }
    }
    Some(read)
}

/// Titles that take "of" ("head of product", "director of sales").
#[rustfmt::skip]
const TITLE_HEADS: &[&str] = &[
    "head", "director", "vp", "vice", "president", "chief", "professor", "manager", "dean",
    "teacher", "doctor", "lecturer", "editor",
];

/// Whether a phrase reads as an occupation: its head noun is a known one or ends like one
/// ("-ist", "-er", "-smith"…), it is not a judgement ("a good cook"), a family role or a
/// nationality.
pub(super) fn is_occupation(phrase: &str) -> bool {
    let words: Vec<String> = phrase
        .split_whitespace()
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect();
    let Some(head) = words.last() else {
        return false;
    };
    let first = words.first().map_or("", String::as_str);
    // "a UX designer", "an IT consultant": an acronym leads a title; "a Londoner" is no job.
    let acronym = phrase
        .split_whitespace()
        .next()
        .is_some_and(|w| w.chars().filter(|c| c.is_uppercase()).count() >= 2);
    if JUDGEMENT_ADJECTIVES.contains(&first) || (phrase.starts_with(char::is_uppercase) && !acronym)
    {
        return OCCUPATIONS.contains(&phrase.to_lowercase().as_str());
    }
    let joined = words.join(" ");
    if OCCUPATIONS
        .iter()
        .any(|o| joined.ends_with(o) && o.contains([' ', '-']))
    {
        return true;
    }
    if NOT_OCCUPATIONS.contains(&head.as_str()) {
        return false;
    }
    OCCUPATIONS.contains(&head.as_str())
        || OCCUPATIONS.iter().any(|o| joined.ends_with(o))
        || (head.len() > 4 && OCCUPATION_SUFFIXES.iter().any(|s| head.ends_with(s)))
}

/// The words after byte `pos` up to the end of the clause, lower-case.
pub(super) fn rest_of_clause<'a>(ctx: &'a Context, pos: usize) -> Vec<&'a str> {
    ctx.toks
        .iter()
        .skip(first_token(ctx, pos))
        .take_while(|t| t.word || !matches!(t.lower.as_str(), "," | ";" | "." | "!" | "?"))
        .map(|t| t.lower.as_str())
        .collect()
}

/// Whether the clause after `pos` says the value no longer holds ("… anymore", "… no more").
pub(super) fn anymore_after(ctx: &Context, pos: usize) -> bool {
    let rest = rest_of_clause(ctx, pos);
    rest.iter().any(|w| matches!(*w, "anymore" | "anymore."))
        || rest
            .windows(2)
            .any(|p| matches!(p, ["any", "more"] | ["no", "more"] | ["no", "longer"]))
}

/// Stays that end soon: "for the weekend", "for a few days", "on holiday".
const SHORT_STAYS: &[&str] = &[
    "weekend",
    "night",
    "nights",
    "day",
    "days",
    "week",
    "weeks",
    "holiday",
    "holidays",
    "vacation",
    "trip",
    "visit",
    "conference",
    "wedding",
    "business",
];

/// Whether the clause after `pos` makes a stay temporary ("… back in Melbourne for the
/// weekend", "… in Paris on business", "… visiting family").
pub(super) fn temporary_after(ctx: &Context, pos: usize) -> bool {
    let rest = rest_of_clause(ctx, pos);
    let lead = rest.first().copied().unwrap_or("");
    let short = rest.iter().skip(1).take(4).any(|w| SHORT_STAYS.contains(w));
    (matches!(lead, "for" | "on") && short) || matches!(lead, "visiting" | "until" | "till")
}
