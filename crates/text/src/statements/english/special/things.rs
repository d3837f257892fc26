//! Facts about things and organizations: when an event happens, the state of a project, who
//! holds a role at an organization and where it is based.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::super::super::lexicon::{canonical_role, APPOINTMENTS, NOT_NAMES, PROVIDERS};
use super::super::super::types::{Found, Slot, Subject};
use super::super::context::Context;
use super::super::left::blocked_before;
use super::super::values::{self, anymore_after};
use super::{each_match, patterns};

pub(super) fn apply(ctx: &Context, out: &mut Vec<Found>) {
    dates(ctx, out);
    statuses(ctx, out);
    roles(ctx, out);
    headquarters(ctx, out);
}

/// Verbs that set or change when an event happens.
const RESCHEDULED: &str = r"moved|rescheduled|re-scheduled|pushed(?:\s+back)?|postponed|changed|bumped|shifted|brought\s+forward|delayed|switched|swapped|rebooked|re-booked|updated|pulled\s+forward|put\s+back|moving|rescheduling|pushing|postponing|changing|bumping|shifting|bringing\s+forward|delaying|switching|rebooking";

/// Verbs that call an event off.
const CANCELLED: &str =
    r"cancelled|canceled|called\s+off|scrapped|skipped|dropped|cancel|cancelling|canceling";

/// "the dentist appointment is on Wednesday", "we moved the meeting to Friday", "Dentist
/// appointment rescheduled: it's on June 27 now", "I cancelled the meeting on Friday".
fn dates(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let with = r"(?:\s+with\s+(?:(?:the|my|our|a|an)\s+(?P<with>[a-z]+)|(?P<who>(?-i:\p{Lu})[\w'’-]*\.?(?:\s+(?-i:\p{Lu})[\w'’-]*)?)))?";
    let sources = [
        format!(
            r"(?P<ev>\b(?:[a-z'’-]+\s+){{0,2}}?{{EVENT}}){with}(?:\s+(?:is|['’]s|has\s+been|got|was|will\s+be|has|have|are)|['’]s(?:\s+been)?)\s+(?:(?:now|officially|been|finally|just|still|already)\s+)*(?:(?:{RESCHEDULED}|set|scheduled|booked|planned|confirmed|pushed\s+out|now)\s+(?:(?:up|back|forward|out)\s+)?)?(?:(?:to|for|on|at|until|till)\s+)?"
        ),
        format!(
            r"\b(?:{RESCHEDULED}|booked|scheduled|set|have|['’]ve\s+got|got|made|arranged|fixed|put|slotted|pencilled|penciled|locked\s+in|planned|organised|organized)\s+(?:(?:my|our|the|a|an|this|that)\s+)(?P<ev>(?:[a-z'’-]+\s+){{0,2}}?{{EVENT}}){with}\s+(?:(?:back|forward|up|out|in)\s+)?(?:to|for|on|until|at|till)\s+"
        ),
        format!(
            r"(?P<ev>\b(?:[a-z'’-]+\s+){{0,2}}?{{EVENT}}){with}\s+(?:(?:has\s+been|have\s+been|was|got|is|now|just|officially)\s+)*(?:{RESCHEDULED}|confirmed|booked|set)\s*(?:[:—–,;]|\s-)\s*(?:(?:it['’]s|it\s+is|it['’]ll\s+be|it\s+will\s+be|now|new\s+date|new\s+time|the\s+new\s+date\s+is)\s*:?\s*)*(?:(?:on|to|for|at)\s+)?"
        ),
        format!(
            r"(?P<ev>\b(?:[a-z'’-]+\s+){{0,2}}?{{EVENT}}){with}\s+(?:(?:just|now|officially|has|have|got|been)\s+)*(?:{RESCHEDULED})\s+(?:(?:back|forward|out)\s+)?(?:to|until|till|for)\s+"
        ),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (_, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
        let (Some(whole), Some(ev)) = (caps.get(0), caps.name("ev")) else {
            continue;
        };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(mut event) = event_name(ctx, ev.as_str(), caps.name("with"), whole.start()) else {
            continue;
        };
        if let Some(who) = caps.name("who") {
            // "Dinner with Sarah" is another event than dinner with Tom.
            event = format!("{event} with {}", who.as_str().to_lowercase());
        }
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
    cancellations(ctx, out);
}

/// "I cancelled the dentist appointment on March 14", "tomorrow's meeting is called off": the
/// event no longer happens then (the value is its date when the line gives one).
fn cancellations(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let with = r"(?:\s+with\s+(?:the|my|our|a|an)\s+(?P<with>[a-z]+))?";
    let sources = [
        format!(
            r"\b(?:{CANCELLED})\s+(?:(?:my|our|the|this|that|a|an)\s+)(?P<ev>(?:[a-z'’-]+\s+){{0,2}}{{EVENT}}){with}\b"
        ),
        format!(
            r"(?P<ev>\b(?:[a-z'’-]+\s+){{0,2}}?{{EVENT}}){with}(?P<mid>(?:\s+(?:on|for|at|this|next|tomorrow|today|tonight)\b[^.!?;,]{{0,25}}?)?)\s+(?:is|has\s+been|was|got|['’]s|have\s+been|are|were)\s+(?:(?:now|officially|been|just|unfortunately|sadly)\s+)*(?:{CANCELLED}|off)\b"
        ),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (_, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
        let (Some(whole), Some(ev)) = (caps.get(0), caps.name("ev")) else {
            continue;
        };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(event) = event_name(ctx, ev.as_str(), caps.name("with"), whole.start()) else {
            continue;
        };
        let date_from = caps.name("mid").filter(|m| !m.as_str().is_empty());
        let value = date_at(ctx, date_from.map_or(whole.end(), |m| m.start()))
            .filter(|(_, end)| date_from.is_some() || *end <= clause_end(ctx, whole.end()))
            .map(|(v, _)| v)
            .or_else(|| day_in(ctx, ev.start(), ev.end()))
            .unwrap_or_default();
        out.push(Found {
            subject: Subject::Thing(event),
            slot: Slot::Date,
            qualifier: String::new(),
            value,
            negated: true,
            at: whole.start(),
        });
    }
}

/// A day named inside an event's words ("Tomorrow's meeting" → "Tomorrow").
fn day_in(ctx: &Context, start: usize, end: usize) -> Option<String> {
    let tok = ctx
        .toks
        .iter()
        .filter(|t| t.start >= start && t.end <= end)
        .find(|t| is_day_word(t.lower.trim_end_matches("'s")))?;
    let written = ctx.text.get(tok.start..tok.end)?;
    Some(
        written
            .trim_end_matches("'s")
            .trim_end_matches("’s")
            .to_string(),
    )
}

/// Where the clause holding byte `pos` ends.
fn clause_end(ctx: &Context, pos: usize) -> usize {
    ctx.toks
        .iter()
        .find(|t| {
            t.start >= pos && !t.word && matches!(t.lower.as_str(), "," | ";" | "." | "!" | "?")
        })
        .map_or(ctx.text.len(), |t| t.start)
}

/// An event's name; an appointment with someone is named after them ("the dentist moved my
/// appointment", "my appointment with the vet" → "dentist appointment", "vet appointment").
fn event_name(
    ctx: &Context,
    written: &str,
    with: Option<regex::Match>,
    clause_at: usize,
) -> Option<String> {
    let name = thing_name(written)?;
    if !APPOINTMENTS.contains(&name.as_str()) {
        return Some(name);
    }
    let provider = with
        .map(|w| w.as_str().to_lowercase())
        .filter(|w| PROVIDERS.contains(&w.as_str()))
        .or_else(|| provider_before(ctx, clause_at));
    Some(match provider {
        Some(p) => format!("{p} {name}"),
        None => name,
    })
}

/// A provider that is the subject of the clause before byte `at` ("The dentist moved …").
fn provider_before(ctx: &Context, at: usize) -> Option<String> {
    let before: Vec<&crate::statements::scan::Tok> =
        ctx.toks.iter().take_while(|t| t.end <= at).collect();
    before
        .iter()
        .rev()
        .take_while(|t| t.word)
        .take(4)
        .map(|t| t.lower.trim_end_matches("'s"))
        .find(|w| PROVIDERS.contains(w))
        .map(str::to_string)
}

/// Words dropped from the front of a thing's name; someone else's ("her dentist appointment")
/// stays another thing than the speaker's.
const THING_DROPS: &[&str] = &[
    "the",
    "my",
    "our",
    "a",
    "an",
    "this",
    "that",
    "next",
    "upcoming",
    "its",
    "and",
    "so",
    "but",
    "now",
    "also",
    "then",
    "oh",
    "well",
    "actually",
    "moved",
    "have",
    "got",
    "i",
    "we",
    "is",
    "was",
    "has",
    "on",
    "about",
    "for",
    "re",
    "regarding",
    "with",
    "of",
    "to",
    "in",
    "at",
    "from",
    "update",
    "news",
];

/// A thing's name: lower-case, determiners and possessives dropped ("the dentist
/// appointment" → "dentist appointment", "the Apollo project" → "project apollo").
pub(crate) fn thing_name(np: &str) -> Option<String> {
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
        // "tomorrow's meeting", "the Friday standup": the day is the event's date, not its name.
        let dated = is_day_word(bare);
        if bare.is_empty() || (w.ends_with("'s") && owner_named) || dated {
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
        // "the Apollo project" is "project apollo"; "our migration project" keeps its order.
        let capitalized = written
            .iter()
            .any(|w| w.to_lowercase() == *name && w.starts_with(char::is_uppercase));
        if capitalized {
            return Some(format!("project {name}"));
        }
    }
    if let [.., last] = words.as_slice() {
        if PROVIDERS.contains(last) {
            // "I booked the dentist": an appointment with the dentist.
            return Some(format!("{} appointment", words.join(" ")));
        }
    }
    if let [.., provider, kind] = words.as_slice() {
        // "dentist checkup", "dental cleaning", "vet visit": all the appointment with them.
        let provider = if *provider == "dental" {
            "dentist"
        } else {
            provider
        };
        if PROVIDERS.contains(&provider) && APPOINTMENTS.contains(kind) {
            let owner = words.get(..words.len() - 2).unwrap_or(&[]);
            let mut name: Vec<&str> = owner.to_vec();
            name.extend([provider, "appointment"]);
            return Some(name.join(" "));
        }
    }
    let joined = words.join(" ");
    (!joined.is_empty()).then_some(joined)
}

/// Days that may stand in an event's name ("tomorrow's meeting", "the Friday call").
fn is_day_word(w: &str) -> bool {
    matches!(w, "tomorrow" | "today" | "tonight" | "yesterday")
        || (WEEKDAYS.contains(&w) && w.len() > 3)
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

fn is_month(tok: &crate::statements::scan::Tok) -> bool {
    let w = tok.lower.as_str();
    MONTHS.contains(&w) && (w != "may" || tok.capital)
}

/// A day of the month written in digits ("14", "14th").
fn is_day_number(w: &str) -> bool {
    let digits = w.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h']);
    digits.len() <= 2
        && digits.parse::<u8>().is_ok_and(|d| (1..=31).contains(&d))
        && (digits.len() == w.len() || is_ordinal(w))
}

fn is_day_or_year(w: &str) -> bool {
    is_day_number(w) || (w.len() == 4 && w.starts_with("20") && w.parse::<u16>().is_ok())
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
        // "March 14", "14 March", "March 14, 2024": a day or a year next to a month.
        let after_month = i > 0 && last_anchor.is_some() && is_day_or_year(&tok.lower);
        let before_month = is_day_number(&tok.lower)
            && toks
                .get(i + 1)
                .is_some_and(|n| is_month(n) || n.lower == "of");
        if is_date_anchor(tok)
            || after_month
            || before_month
            || (tok.lower == "week" && i > 0 && last_anchor.is_none())
        {
            last_anchor = Some(i);
            continue;
        }
        if !is_date_joiner(&tok.lower) || i > 8 {
            break;
        }
    }
    let last = last_anchor?;
    // "from June 3 to June 10": the date it is now is the one after "to".
    let moved_from = toks.get(..last).and_then(|before| {
        let from = before.iter().position(|t| t.lower == "from")?;
        let to = before.iter().rposition(|t| t.lower == "to")?;
        (to > from).then_some(to + 1)
    });
    let toks = match moved_from {
        Some(after) => toks.get(after..).unwrap_or(&[]).to_vec(),
        None => toks,
    };
    let last = last - moved_from.unwrap_or(0);
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

/// A project named by a noun phrase ("Project Heron", "the Apollo project", "our website
/// redesign").
const PROJECT_NP: &str = r"\b(?:(?:the|our|my|this|that)\s+)?(?:project\s+(?-i:\p{Lu}[\w-]*)|(?-i:\p{Lu}[\w-]*)\s+project|(?:[a-z0-9-]+\s+){0,2}{PROJECT})";

/// "The project is in the planning phase", "Project Apollo is now in QA testing", "Project
/// Heron just moved to code freeze", "Update on Project Heron: it's in QA testing now".
fn statuses(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let aux = r"(?:is|['’]s|are|has|have|been|just|finally|officially|now|currently|still|already|got|went|not|no\s+longer|isn['’]t)";
    let sources = [
        format!(r"(?P<np>{PROJECT_NP})(?P<poss>['’]s)?\s+(?P<aux>(?:{aux}\s+)*)"),
        format!(
            r"(?P<np>{PROJECT_NP})(?:['’]s)?\s+(?:status|phase|stage|state)\s+(?:is|['’]s|has\s+changed\s+to|changed\s+to|moved\s+to)\s+(?:(?:now|currently|officially)\s+)*(?P<label>)"
        ),
        format!(
            r"\b(?:we['’]re|we\s+are|i['’]m|i\s+am)\s+(?:(?:now|currently|still|already|finally|officially)\s+)*(?:in|at)\s+(?:the\s+)?(?P<stage>(?:[\w-]+\s+){{1,3}}?)(?:phase|stage)\s+(?:on|of|for|with)\s+(?P<np>{PROJECT_NP})"
        ),
        format!(
            r"(?P<np>{PROJECT_NP})\s*[,:—–]\s*(?:(?:so|now|well|and)\s*,?\s+)?(?:it|we)(?P<aux>(?:['’]s|['’]re|\s+is|\s+are|\s+has|\s+have|['’]ve|\s+just|\s+finally|\s+now|\s+officially|\s+already|\s+currently|\s+still)+)\s+"
        ),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (_, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
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
    "archived", "deployed", "released", "accepted", "funded", "started", "halted", "frozen",
    "on-hold", "wrapped", "greenlit", "sunset", "sunsetted", "discontinued", "abandoned",
];

/// Verbs of progress: what follows them is a stage, whatever its words ("moved to code
/// freeze", "has reached user acceptance testing").
const PROGRESS: &[&[&str]] = &[
    &["moved", "to"],
    &["moved", "into"],
    &["moved", "on", "to"],
    &["reached"],
    &["entered"],
    &["advanced", "to"],
    &["advanced", "into"],
    &["progressed", "to"],
    &["progressed", "into"],
    &["transitioned", "to"],
    &["transitioned", "into"],
    &["went", "into"],
    &["gone", "into"],
    &["got", "to"],
    &["made", "it", "to"],
    &["heading", "into"],
    &["headed", "into"],
    &["slipped", "into"],
    &["passed", "into"],
    &["graduated", "to"],
    &["entering"],
    &["moving", "into"],
    &["moving", "to"],
    &["switched", "to"],
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
    "writing", "analysis", "sprint", "mvp", "ideation", "build", "limbo", "freeze", "requirements",
    "gathering", "acceptance", "sign-off", "signoff", "handover", "go-live", "release",
    "hardening", "stabilization", "stabilisation", "polish", "polishing", "retrospective",
    "closeout", "post-launch", "pre-production", "preproduction", "post-production", "ramp-up",
    "audit", "certification", "validation", "verification", "specification", "spec", "specs",
    "estimation", "backlog", "refinement", "grooming", "triage", "bugfixing", "bug-fixing",
    "debugging", "rc", "candidate", "soft", "tendering", "bidding", "permitting", "fundraising",
    "brainstorming", "wireframing", "mockups", "mock-up", "proofreading", "copyediting",
    "typesetting", "printing", "peer", "submission", "fieldwork", "recruitment", "data",
    "collection", "trials", "trial", "preview", "early", "access", "ga",
];

fn status_of(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let np = caps.name("np")?;
    if blocked_before(ctx, whole.start()) {
        return None;
    }
    if let Some(stage) = caps.name("stage") {
        // "We're in the code freeze phase on Project Heron".
        return Some(Found {
            subject: Subject::Thing(thing_name(np.as_str())?),
            slot: Slot::Status,
            qualifier: String::new(),
            value: stage.as_str().trim().to_string(),
            negated: false,
            at: whole.start(),
        });
    }
    if caps.name("label").is_some() {
        // "Project Heron's status is now \"code complete\"".
        let quoted = ctx
            .text
            .get(whole.end()..)?
            .trim_start_matches(['"', '“', '\'', '‘']);
        let at = ctx.text.len() - quoted.len();
        return Some(Found {
            subject: Subject::Thing(thing_name(np.as_str())?),
            slot: Slot::Status,
            qualifier: String::new(),
            value: stage_after(ctx, at, false)?,
            negated: false,
            at: whole.start(),
        });
    }
    let rest = values::rest_of_clause(ctx, whole.end());
    let has_aux = caps
        .name("aux")
        .is_some_and(|a| !a.as_str().trim().is_empty())
        || caps.name("poss").is_some();
    let negated = super::super::rules::says_not(whole.as_str());
    let first = *rest.first()?;
    let progress = PROGRESS
        .iter()
        .find(|p| rest.starts_with(p))
        .filter(|_| has_aux || opens_clause(ctx, np.start()));
    let value = if STATE_WORDS.contains(&first) && has_aux {
        let tok = ctx.toks.iter().find(|t| t.start >= whole.end())?;
        ctx.text.get(tok.start..tok.end)?.to_string()
    } else if let Some(verb) = progress {
        let after = ctx
            .toks
            .iter()
            .filter(|t| t.start >= whole.end())
            .nth(verb.len() - 1)?;
        stage_after(ctx, after.end, false)?
    } else if has_aux && matches!(first, "on" | "in" | "at" | "entering" | "through") {
        stage_after(ctx, whole.end(), true)?
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

/// Whether a noun phrase at byte `at` opens its clause, so it is the subject of the verb after
/// it ("Project Heron reached …", not "I moved the book into …").
fn opens_clause(ctx: &Context, at: usize) -> bool {
    ctx.toks
        .iter()
        .take_while(|t| t.end <= at)
        .last()
        .is_none_or(|t| !t.word || matches!(t.lower.as_str(), "and" | "but" | "so" | "now"))
}

/// Words that end a stage's phrase.
const STAGE_ENDS: &[&str] = &[
    "now",
    "and",
    "but",
    "since",
    "after",
    "for",
    "with",
    "so",
    "because",
    "until",
    "already",
    "today",
    "yesterday",
    "this",
    "last",
    "as",
    "at",
    "on",
    "by",
    "which",
    "though",
    "finally",
    "officially",
    "again",
    "too",
    "yet",
    "ahead",
    "early",
    "earlier",
    "soon",
    "recently",
];

/// The stage after "in (the)", "at", "moved to": up to four words, without "phase"/"stage".
/// With `need_stage_word` (after a bare "in"/"at"), a stage word or a process noun must be
/// among them ("in QA testing", not "in London" or "in good hands").
fn stage_after(ctx: &Context, pos: usize, need_stage_word: bool) -> Option<String> {
    let toks: Vec<&crate::statements::scan::Tok> = ctx
        .toks
        .iter()
        .filter(|t| t.start >= pos)
        .skip_while(|t| {
            matches!(
                t.lower.as_str(),
                "on" | "in" | "at" | "into" | "entering" | "through" | "the" | "its" | "a" | "an"
            )
        })
        .take_while(|t| t.word && !STAGE_ENDS.contains(&t.lower.as_str()))
        .take(4)
        .collect();
    let staged = toks.iter().any(|t| {
        let w = t.lower.as_str();
        STAGE_WORDS.contains(&w)
            || (t.lower.len() > 5 && (w.ends_with("ing") || w.ends_with("tion")) && !t.capital)
    });
    let names_a_day = toks.iter().any(|t| is_date_anchor(t));
    let pronoun = toks.first().is_some_and(|t| {
        matches!(
            t.lower.as_str(),
            "it" | "me" | "us" | "them" | "you" | "him" | "her" | "my" | "our" | "your"
        ) || t.lower.starts_with(|c: char| c.is_ascii_digit())
    });
    if (need_stage_word && !staged) || names_a_day || pronoun {
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
        r"(?P<name>{NAME})\s+(?:(?:is|['’]s)(?:\s+(?:now|still|currently|officially|also))*|was\s+named|has\s+been\s+named|was\s+appointed(?:\s+as)?|has\s+been\s+appointed(?:\s+as)?|became|has\s+become|took\s+over\s+as|stepped\s+in\s+as|stepped\s+up\s+as|was\s+promoted\s+to|has\s+been\s+promoted\s+to|was\s+hired\s+as|got\s+promoted\s+to|is\s+no\s+longer|isn['’]t|was\s+elected(?:\s+as)?|now\s+serves\s+as|serves\s+as)\s+(?:the\s+)?(?:(?:new|current|interim|acting|incoming)\s+)*(?P<role>{ROLE})\s+(?:of|at)\s+(?P<org>{ORG})",
        r"(?P<name>{NAME})\s+(?:(?:is|['’]s)(?:\s+(?:now|still|currently|officially|also))*|became|has\s+become|is\s+no\s+longer)\s+(?P<org>{ORG})(?:['’]s|['’])\s+(?:(?:new|current|interim|acting)\s+)*(?P<role>{ROLE})\b",
        r"(?P<org>{ORG})\s+(?:has\s+)?(?:just\s+)?(?:named|appointed|hired|promoted|picked|chose|tapped|elected|brought\s+in|welcomed)\s+(?P<name>{NAME})\s+(?:as|to\s+be|to)?\s*(?:(?:its|their|the|our)\s+)?(?:(?:new|next|interim|acting|incoming)\s+)*(?P<role>{ROLE})\b",
        r"(?P<name>{NAME})\s+(?:now\s+)?(?P<runs>runs|heads|leads|is\s+running|is\s+heading|is\s+leading|took\s+over|has\s+taken\s+over)\s+(?P<org>{ORG})",
        r"(?P<org>{ORG})\s+(?:is|['’]s|has\s+been)\s+(?:(?:now|still|currently|officially)\s+)*(?P<runs>led|run|headed|managed|helmed)\s+by\s+(?P<name>{NAME})",
        r"\b(?:made|named|appointed|elected|picked|chose)\s+(?P<name>{NAME})\s+(?:as\s+)?(?:the\s+|its\s+)?(?:(?:new|next|interim|acting)\s+)*(?P<role>{ROLE})\s+(?:of|at)\s+(?P<org>{ORG})",
        r"(?P<org>{ORG})\s+(?:has\s+)?(?:just\s+)?replaced\s+(?:its|their|the)\s+(?P<role>{ROLE})\s+with\s+(?P<name>{NAME})",
        r"(?P<name>{NAME})\s+(?:has\s+)?(?:just\s+)?(?:replaced|succeeded|took\s+over\s+from|is\s+replacing|is\s+succeeding)\s+(?:{NAME})\s+as\s+(?:the\s+)?(?:(?:new|next|interim|acting)\s+)*(?P<role>{ROLE})(?:\s+(?:of|at)\s+(?P<org>{ORG}))?",
        r"(?:{NAME})\s+(?:was|has\s+been|got|is\s+being)\s+(?:replaced|succeeded)\s+by\s+(?P<name>{NAME})\s+as\s+(?:the\s+)?(?:(?:new|next|interim|acting)\s+)*(?P<role>{ROLE})(?:\s+(?:of|at)\s+(?P<org>{ORG}))?",
        r"(?P<name>{NAME})\s+(?:has\s+)?(?:just\s+)?(?P<gone>stepped\s+down|resigned|retired|was\s+fired|was\s+ousted|left|quit|departed|was\s+removed)\s+as\s+(?:the\s+)?(?P<role>{ROLE})(?:\s+(?:of|at)\s+(?P<org>{ORG}))?",
        r"(?P<org>{ORG})\s+(?:(?:has|have|just|now|finally|officially)\s+)*(?:got|gets|welcomed|announced|hired|named|appointed|picked|chose|has|have|brought\s+in)\s+(?:a|an|its|their)\s+(?:(?:new|next|interim|acting)\s+)*(?P<role>{ROLE})\s*(?:[:—–,]|\s-)\s*(?:(?:it['’]s|namely|called|named)\s+)?(?P<name>{NAME})",
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

/// The first byte at or after `at` that starts a word of a name: a capitalized match may
/// begin with the "If" that blocks it ("If Ngozi Lindqvist became CEO").
fn content_start(ctx: &Context, at: usize) -> usize {
    ctx.toks
        .iter()
        .filter(|t| t.start >= at)
        .find(|t| !NOT_NAMES.contains(&t.lower.as_str()))
        .map_or(at, |t| t.start)
}

/// The subject for an organization as written: a name, or "company" for "the company".
fn org_subject(raw: &str) -> Option<Subject> {
    let raw = raw
        .trim_end_matches("'s")
        .trim_end_matches("’s")
        .trim_end_matches(['\'', '’']);
    let lower = raw.to_lowercase();
    let first = lower.split_whitespace().next()?;
    let named_after_article = raw
        .split_whitespace()
        .skip(1)
        .all(|w| w.starts_with(|c: char| c.is_uppercase()))
        && raw.split_whitespace().count() > 1;
    if matches!(first, "the" | "our" | "my") && !named_after_article {
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
    if blocked_before(ctx, content_start(ctx, whole.start())) {
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
        r"(?P<org>{ORG})\s+(?:(?:is|['’]s|are|has\s+been|was|now|currently|still|also|officially)\s+)*(?:headquartered|based)\s+(?:in|out\s+of)\s+",
        r"(?P<org>{ORG})\s+(?:(?:now|still|currently|mainly)\s+)*(?:operates|runs|works|is\s+run)\s+(?:out\s+of|from)\s+",
        r"(?P<org>{ORG})\s+(?:(?:now|still|also)\s+)?(?:has|keeps|maintains|had)\s+(?:its|their)\s+(?:(?:new|global|main|corporate)\s+)*(?:headquarters|hq|head\s+office|main\s+office|home\s+base)\s+in\s+",
        r"(?P<org>{ORG})\s+(?:(?:new|global|main|corporate|current)\s+)*(?:headquarters|hq|head\s+office|main\s+office)\s+(?:(?:has|have|just|now|officially)\s+)*(?:moved|relocated|is\s+moving|moves|is|are|is\s+now|are\s+now|will\s+be)\s+(?:now\s+)?(?:(?:in|to|located\s+in)\s+)?",
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
        if blocked_before(ctx, content_start(ctx, whole.start())) {
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
