//! Facts about things and organizations: when an event happens, the state of a project, who
//! holds a role at an organization and where it is based.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::super::super::lexicon::canonical_role;
use super::super::super::{Found, Slot, Subject};
use super::super::left::blocked_before;
use super::super::values::{self, anymore_after};
use super::super::{Context, NOT_NAMES};
use super::{each_match, patterns};

pub(super) fn apply(ctx: &Context, out: &mut Vec<Found>) {
    dates(ctx, out);
    statuses(ctx, out);
    roles(ctx, out);
    headquarters(ctx, out);
}

/// "the dentist appointment is on Wednesday", "we moved the meeting to Friday".
fn dates(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<ev>\b(?:[a-z'’-]+\s+){0,2}?{EVENT})\s+(?:(?:is|['’]s|has\s+been|got|was|will\s+be|has|have|are)\s+)(?:(?:now|officially|been|finally|just|still|already)\s+)*(?:(?:moved|rescheduled|pushed(?:\s+back)?|changed|postponed|brought\s+forward|bumped|shifted|set|scheduled|booked|planned|confirmed|pushed\s+out|delayed|now)\s+)?(?:(?:to|for|on|at|until|till)\s+)?",
        r"\b(?:moved|rescheduled|pushed|postponed|changed|bumped|shifted|brought\s+forward|booked|scheduled|set|have|['’]ve\s+got|got|made|delayed)\s+(?:(?:my|our|the|a|an|this|that)\s+)(?P<ev>(?:[a-z'’-]+\s+){0,2}?{EVENT})\s+(?:(?:back|forward|up|out)\s+)?(?:to|for|on|until|at|till)\s+",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(ev)) = (caps.get(0), caps.name("ev")) else {
            continue;
        };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(event) = thing_name(ev.as_str()) else {
            continue;
        };
        let Some((value, end)) = date_at(ctx, whole.end()) else {
            continue;
        };
        out.push(Found {
            subject: Subject::Thing(event),
            slot: Slot::Date,
            qualifier: String::new(),
            value,
            negated: super::super::rules::says_not(whole.as_str()) || anymore_after(ctx, end),
            at: whole.start(),
        });
    }
}

/// Words dropped from the front of a thing's name.
const THING_DROPS: &[&str] = &[
    "the", "my", "our", "a", "an", "this", "that", "your", "his", "her", "their", "next",
    "upcoming", "its", "and", "so", "but", "now", "also", "then", "oh", "well", "actually",
    "moved", "have", "got", "i", "we", "is", "was", "has",
];

/// A thing's name: lower-case, determiners and possessives dropped ("the dentist
/// appointment" → "dentist appointment", "the Apollo project" → "project apollo").
pub(in crate::statements) fn thing_name(np: &str) -> Option<String> {
    let written: Vec<&str> = np.split_whitespace().collect();
    let lower = np.to_lowercase().replace('’', "'");
    let mut words: Vec<String> = Vec::new();
    for (i, w) in lower.split_whitespace().enumerate() {
        // "my doctor's appointment" keeps "doctor"; "Alex's party" drops the owner.
        let owner_named = written
            .get(i)
            .is_some_and(|o| o.starts_with(char::is_uppercase));
        let bare = w.trim_end_matches("'s");
        let bare = bare.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
        if bare.is_empty() || (w.ends_with("'s") && owner_named) {
            continue;
        }
        words.push(bare.to_string());
    }
    while words
        .first()
        .is_some_and(|w| THING_DROPS.contains(&w.as_str()))
    {
        words.remove(0);
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    if let [name, "project"] = words.as_slice() {
        if np.contains(|c: char| c.is_uppercase()) {
            return Some(format!("project {name}"));
        }
    }
    let joined = words.join(" ");
    (!joined.is_empty()).then_some(joined)
}

#[rustfmt::skip]
const WEEKDAYS: &[&str] = &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue",
    "tues", "wed", "weds", "thu", "thur", "thurs", "fri", "sat", "sun",
];
#[rustfmt::skip]
const MONTHS: &[&str] = &[
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
];

/// Whether a token anchors a date or time expression.
fn is_date_anchor(tok: &crate::statements::scan::Tok) -> bool {
    let w = tok.lower.trim_end_matches('s');
    let w_full = tok.lower.as_str();
    WEEKDAYS.contains(&w)
        || WEEKDAYS.contains(&w_full)
        || (MONTHS.contains(&w_full) && (w_full != "may" || tok.capital))
        || matches!(
            w_full,
            "tomorrow" | "today" | "tonight" | "noon" | "midnight" | "weekend"
        )
        || is_clock(w_full)
        || is_ordinal(w_full)
}

fn is_clock(w: &str) -> bool {
    let digits = w.trim_end_matches("am").trim_end_matches("pm");
    let has_suffix = digits.len() < w.len();
    let numeric = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || c == ':' || c == '.')
        && digits.starts_with(|c: char| c.is_ascii_digit());
    numeric && (has_suffix || digits.contains(':'))
}

fn is_ordinal(w: &str) -> bool {
    let digits = w
        .trim_end_matches("st")
        .trim_end_matches("nd")
        .trim_end_matches("rd")
        .trim_end_matches("th");
    digits.len() < w.len() && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Words that may join the parts of a date ("next Friday at 3pm", "the 5th of May").
fn is_date_joiner(w: &str) -> bool {
    matches!(
        w,
        "next"
            | "this"
            | "coming"
            | "the"
            | "at"
            | "on"
            | "of"
            | "in"
            | "morning"
            | "afternoon"
            | "evening"
            | "night"
            | "week"
            | "am"
            | "pm"
            | "a.m"
            | "p.m"
            | ":"
            | ","
            | "around"
            | "from"
            | "to"
            | "-"
    ) || w.chars().all(|c| c.is_ascii_digit())
}

/// A date or time expression starting at `pos`: its text and end.
pub(super) fn date_at(ctx: &Context, pos: usize) -> Option<(String, usize)> {
    let toks: Vec<&crate::statements::scan::Tok> =
        ctx.toks.iter().filter(|t| t.start >= pos).collect();
    let mut last_anchor: Option<usize> = None;
    for (i, tok) in toks.iter().enumerate() {
        if is_date_anchor(tok) || (tok.lower == "week" && i > 0 && last_anchor.is_none()) {
            last_anchor = Some(i);
            continue;
        }
        if !is_date_joiner(&tok.lower) || i > 8 {
            break;
        }
    }
    let last = last_anchor?;
    let first = toks
        .iter()
        .position(|t| !matches!(t.lower.as_str(), "the" | "at" | "on" | "," | "in"))?;
    let start = toks.get(first.min(last))?.start;
    let mut end = toks.get(last)?.end;
    // Keep a following "am"/"pm" and "morning"-like words.
    if let Some(next) = toks.get(last + 1) {
        if matches!(
            next.lower.as_str(),
            "am" | "pm" | "morning" | "afternoon" | "evening" | "night"
        ) {
            end = next.end;
        }
    }
    let text = ctx.text.get(start..end)?.trim().to_string();
    Some((text, end))
}

/// "The project is in the planning phase", "Project Apollo is now in QA testing".
fn statuses(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<np>\b(?:(?:the|our|my|this|that)\s+)?(?:project\s+(?-i:\p{Lu}[\w-]*)|(?-i:\p{Lu}[\w-]*)\s+project|(?:[a-z0-9-]+\s+){0,2}{PROJECT}))\s+(?:(?:is|['’]s|are|has|have|been|just|finally|officially|now|currently|still|already|got|went|not|no\s+longer|isn['’]t)\s+)+",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        if let Some(found) = status_of(ctx, &caps) {
            out.push(found);
        }
    }
}

/// States a project is in without a preposition.
#[rustfmt::skip]
const STATE_WORDS: &[&str] = &[
    "done", "finished", "complete", "completed", "cancelled", "canceled", "paused", "blocked",
    "delayed", "live", "launched", "shipped", "approved", "rejected", "underway", "stalled",
    "postponed", "submitted", "published", "signed", "closed", "over", "scrapped", "shelved",
    "archived", "deployed", "released", "accepted", "funded", "started", "halted",
];

/// Words that make a phrase after "in"/"at" a stage ("in QA testing", "at the review stage").
#[rustfmt::skip]
const STAGE_WORDS: &[&str] = &[
    "phase", "stage", "planning", "design", "development", "testing", "test", "qa", "review",
    "beta", "alpha", "production", "maintenance", "discovery", "research", "prototyping",
    "prototype", "implementation", "deployment", "staging", "rollout", "launch", "pilot",
    "approval", "drafting", "draft", "editing", "revision", "revisions", "final", "negotiation",
    "negotiations", "closing", "construction", "progress", "hold", "wrap-up", "kickoff", "scoping",
    "evaluation", "procurement", "hiring", "onboarding", "uat", "integration", "feedback",
    "writing", "analysis", "sprint", "mvp", "ideation", "build", "limbo",
];

fn status_of(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let np = caps.name("np")?;
    if blocked_before(ctx, whole.start()) {
        return None;
    }
    let rest = values::rest_of_clause(ctx, whole.end());
    let negated = super::super::rules::says_not(whole.as_str());
    let first = *rest.first()?;
    let value = if STATE_WORDS.contains(&first) {
        let tok = ctx.toks.iter().find(|t| t.start >= whole.end())?;
        ctx.text.get(tok.start..tok.end)?.to_string()
    } else if matches!(first, "on" | "in" | "at" | "into" | "entering" | "through")
        || rest.starts_with(&["moved", "to"])
        || rest.starts_with(&["moved", "into"])
    {
        stage_after(ctx, whole.end())?
    } else {
        return None;
    };
    let subject = thing_name(np.as_str())?;
    Some(Found {
        subject: Subject::Thing(subject),
        slot: Slot::Status,
        qualifier: String::new(),
        value,
        negated,
        at: whole.start(),
    })
}

/// The stage after "in (the)", "at", "moved to": up to four words, without "phase"/"stage".
fn stage_after(ctx: &Context, pos: usize) -> Option<String> {
    let toks: Vec<&crate::statements::scan::Tok> = ctx
        .toks
        .iter()
        .filter(|t| t.start >= pos)
        .skip_while(|t| {
            matches!(
                t.lower.as_str(),
                "on" | "in"
                    | "at"
                    | "into"
                    | "entering"
                    | "through"
                    | "moved"
                    | "to"
                    | "the"
                    | "its"
            )
        })
        .take_while(|t| {
            t.word
                && !matches!(
                    t.lower.as_str(),
                    "now"
                        | "and"
                        | "but"
                        | "since"
                        | "after"
                        | "for"
                        | "with"
                        | "so"
                        | "because"
                        | "until"
                )
        })
        .take(4)
        .collect();
    let staged = toks.iter().any(|t| STAGE_WORDS.contains(&t.lower.as_str()));
    if !staged {
        return None;
    }
    let kept: Vec<&&crate::statements::scan::Tok> = toks
        .iter()
        .filter(|t| !matches!(t.lower.as_str(), "phase" | "stage"))
        .collect();
    let start = kept.first()?.start;
    let end = kept.last()?.end;
    Some(ctx.text.get(start..end)?.trim().to_string())
}

/// "Acme's CEO is Dana Wu", "Acme named Raj Patel as its new CEO", "Dana Wu runs Acme".
fn roles(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>{ORG})(?:['’]s|['’])\s+(?:(?:new|current|interim|acting|incoming|first|founding)\s+)*(?P<role>{ROLE})\s+(?:is\s+now|is|['’]s|has\s+become|became|is\s+no\s+longer|isn['’]t)\s+(?:(?:now|officially|still)\s+)*(?P<name>{NAME})",
        r"\bthe\s+(?:(?:new|current|interim|acting|incoming)\s+)*(?P<role>{ROLE})\s+(?:of|at)\s+(?P<org>{ORG})\s+(?:is\s+now|is|['’]s|has\s+become|became)\s+(?:now\s+)?(?P<name>{NAME})",
        r"(?P<name>{NAME})\s+(?:is\s+now|is|['’]s|was\s+named|has\s+been\s+named|was\s+appointed(?:\s+as)?|has\s+been\s+appointed(?:\s+as)?|became|has\s+become|took\s+over\s+as|stepped\s+in\s+as|stepped\s+up\s+as|was\s+promoted\s+to|has\s+been\s+promoted\s+to|was\s+hired\s+as|got\s+promoted\s+to|is\s+no\s+longer|isn['’]t|was\s+elected(?:\s+as)?|now\s+serves\s+as|serves\s+as)\s+(?:the\s+)?(?:(?:new|current|interim|acting|incoming)\s+)*(?P<role>{ROLE})\s+(?:of|at)\s+(?P<org>{ORG})",
        r"(?P<name>{NAME})\s+(?:is\s+now|is|['’]s|became|has\s+become|is\s+no\s+longer)\s+(?P<org>{ORG})(?:['’]s|['’])\s+(?:(?:new|current|interim|acting)\s+)*(?P<role>{ROLE})\b",
        r"(?P<org>{ORG})\s+(?:has\s+)?(?:just\s+)?(?:named|appointed|hired|promoted|picked|chose|tapped|elected|brought\s+in|welcomed)\s+(?P<name>{NAME})\s+(?:as|to\s+be|to)?\s*(?:(?:its|their|the|our)\s+)?(?:(?:new|next|interim|acting|incoming)\s+)*(?P<role>{ROLE})\b",
        r"(?P<name>{NAME})\s+(?:now\s+)?(?P<runs>runs|heads|leads|is\s+running|is\s+heading|is\s+leading|took\s+over|has\s+taken\s+over)\s+(?P<org>{ORG})",
        r"(?P<name>{NAME})\s+(?:has\s+)?(?:just\s+)?(?P<gone>stepped\s+down|resigned|retired|was\s+fired|was\s+ousted|left|quit|departed|was\s+removed)\s+as\s+(?:the\s+)?(?P<role>{ROLE})(?:\s+(?:of|at)\s+(?P<org>{ORG}))?",
        r"\b(?:our|the)\s+(?:(?:new|current|interim|acting)\s+)*(?P<role>ceo|cto|cfo|coo|president|chairman|chair|managing\s+director|general\s+manager|founder|chief\s+executive)\s+(?:is\s+now|is|['’]s)\s+(?:now\s+)?(?P<name>{NAME})",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        if let Some(found) = role_of(ctx, &caps) {
            out.push(found);
        }
    }
}

/// A name without leading words that are not part of it ("Today Dana Wu" → "Dana Wu").
fn clean_name(raw: &str) -> Option<String> {
    let words: Vec<&str> = raw.split_whitespace().collect();
    let first = words.iter().position(|w| {
        !NOT_NAMES.contains(
            &w.to_lowercase()
                .trim_end_matches(['\'', '’', 's'])
                .to_string()
                .as_str(),
        ) && !NOT_NAMES.contains(&w.to_lowercase().as_str())
    })?;
    let kept = words.get(first..)?.join(" ");
    let trimmed = kept.trim_end_matches(['.', ',']).to_string();
    (!trimmed.is_empty()).then_some(trimmed)
}

/// The subject for an organization as written: a name, or "company" for "the company".
fn org_subject(raw: &str) -> Option<Subject> {
    let lower = raw.to_lowercase();
    let first = lower.split_whitespace().next()?;
    if matches!(first, "the" | "our" | "my") {
        let noun = lower.split_whitespace().last()?;
        let thing = if noun == "firm" || noun == "startup" || noun == "employer" {
            "company"
        } else {
            noun
        };
        return Some(Subject::Thing(thing.to_string()));
    }
    clean_name(raw).map(Subject::Named)
}

fn role_of(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let name = clean_name(caps.name("name")?.as_str())?;
    let organization = match caps.name("org") {
        Some(org) => org_subject(org.as_str())?,
        None => Subject::Thing("company".to_string()),
    };
    if let Subject::Named(org) = &organization {
        if org == &name || name.contains(org.as_str()) {
            return None;
        }
    }
    let role = match (caps.name("role"), caps.name("runs")) {
        (Some(r), _) => canonical_role(r.as_str()),
        (None, Some(_)) => "ceo".to_string(),
        _ => return None,
    };
    let name_start = caps.name("name").map_or(whole.start(), |m| m.start());
    if blocked_before(ctx, name_start.min(whole.start())) {
        return None;
    }
    let negated = caps.name("gone").is_some() || super::super::rules::says_not(whole.as_str());
    Some(Found {
        subject: organization,
        slot: Slot::Role,
        qualifier: role,
        value: name,
        negated,
        at: whole.start(),
    })
}

/// "Acme is headquartered in Austin", "Acme moved its HQ to Denver".
fn headquarters(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>{ORG})\s+(?:(?:is|['’]s|are|has\s+been|was|now|currently)\s+)*(?:headquartered|based)\s+(?:in|out\s+of)\s+",
        r"(?P<org>{ORG})(?:['’]s|['’])\s+(?:(?:new|global|main|corporate|european|us|current)\s+)*(?:headquarters|hq|head\s+office|main\s+office|home\s+base|base)\s+(?:is|are|has\s+moved|have\s+moved|moved|is\s+now|are\s+now|will\s+be|relocated)\s+(?:now\s+)?(?:(?:in|to|located\s+in)\s+)?",
        r"(?P<org>{ORG})\s+(?:has\s+)?(?:just\s+)?(?:moved|relocated|is\s+moving|shifted|transferred|moves)\s+(?:its|their|the\s+company['’]s)\s+(?:headquarters|hq|head\s+office|main\s+office|base|offices?)\s+(?:from\s+\S+(?:\s+\S+)?\s+)?to\s+",
        r"\b(?:the\s+)?(?:headquarters|hq|head\s+office)\s+of\s+(?P<org>{ORG})\s+(?:is|are|has\s+moved)\s+(?:now\s+)?(?:(?:in|to|located\s+in)\s+)?",
        r"\b(?:our|the|my)\s+(?:company['’]s\s+)?(?:headquarters|hq|head\s+office)\s+(?:is|are|has\s+moved|moved|is\s+now)\s+(?:now\s+)?(?:(?:in|to|located\s+in)\s+)?",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        let subject = match caps.name("org") {
            Some(org) => org_subject(org.as_str()),
            None => Some(Subject::Thing("company".to_string())),
        };
        let Some(subject) = subject else { continue };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(place) = values::place(ctx, whole.end()) else {
            continue;
        };
        out.push(Found {
            subject,
            slot: Slot::Headquarters,
            qualifier: String::new(),
            value: place.text,
            negated: super::super::rules::says_not(whole.as_str()),
            at: whole.start(),
        });
    }
}
