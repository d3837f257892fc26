//! English slots that need more than a verb and a value: plans (qualifier from the trip and its
//! time), quantities (verb, unit and period), ages, values said before their slot ("hibiscus tea
//! is my favourite drink"), names given by context (pets, partners) and break-ups.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::super::lexicon::{canonical_preference, NOT_NAMES};
use super::super::normalize;
use super::super::scan;
use super::super::types::{Found, Slot, Subject};
use super::context::Context;
use super::left::{blocked_before, holder, Holder};
use super::rules::{possessor, species_in};
use super::values::{self, anymore_after};

mod things;

pub(super) use things::thing_name;

/// Run the special readers.
pub(super) fn apply(ctx: &Context, out: &mut Vec<Found>) {
    moved_in(ctx, out);
    home_is(ctx, out);
    baby_names(ctx, out);
    hired_me(ctx, out);
    job_at(ctx, out);
    plans(ctx, out);
    plan_changes(ctx, out);
    quantities(ctx, out);
    ages(ctx, out);
    favourite_before(ctx, out);
    names_in_context(ctx, out);
    break_ups(ctx, out);
    things::apply(ctx, out);
}

/// Compile a group of patterns once.
pub(super) fn patterns(
    cell: &'static OnceLock<Vec<Option<Regex>>>,
    sources: &[&str],
) -> &'static [Option<Regex>] {
    cell.get_or_init(|| scan::compile_all(sources))
}

/// Every capture of every pattern in `regexes` on the sentence.
pub(super) fn each_match<'t>(
    regexes: &'static [Option<Regex>],
    text: &'t str,
) -> impl Iterator<Item = (usize, Captures<'t>)> + 't {
    regexes
        .iter()
        .enumerate()
        .filter_map(|(i, re)| re.as_ref().map(|re| (i, re)))
        .flat_map(move |(i, re)| re.captures_iter(text).map(move |c| (i, c)))
}

/// A holder that is not blocked by the sentence around it.
fn asserted(ctx: &Context, holder: Option<Holder>) -> Option<Holder> {
    holder.filter(|h| !blocked_before(ctx, h.start))
}

const TRIP_NOUNS: &str = r"(?:trip|vacation|holiday|honeymoon|getaway|visit|journey|tour|break|cruise|road\s+trip|city\s+break|backpacking\s+trip)";

/// "I'm planning a trip to Patagonia next spring", "the trip is going to Tasmania".
fn plans(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        format!(r"\b(?:planning|planned|booked|booking|taking|doing|organizing|organising|arranging|have|has|['’]ve\s+got|got)\s+(?:(?:a|an|our|my|the)\s+)?(?:(?:big|little|short|long|solo|family|road|summer|winter|spring|fall|autumn|weekend|two-week|week-long|much-needed|dream|first)\s+)*(?P<trip>{TRIP_NOUNS})\s+(?:to|in)\s+"),
        r"\b(?:planning\s+(?:to|on)\s+(?:go(?:ing)?|visit(?:ing)?|travel(?:l?ing)?|fly(?:ing)?|head(?:ing)?|(?P<move>mov(?:e|ing)|relocat(?:e|ing)))\s+(?:to\s+)?|going\s+to\s+(?:go|fly|travel|head)\s+to\s+|going\s+to\s+(?P<move2>move|relocate)\s+to\s+|(?:going|heading|headed|flying|off|travel(?:l)?ing|driving|sailing|(?P<move3>moving|relocating))\s+(?:back\s+|over\s+)?to\s+|visiting\s+)".to_string(),
        format!(r"\b(?:(?:next|upcoming|big|summer|winter|spring|autumn|fall|family|road)\s+)*(?P<trip>{TRIP_NOUNS}|destination)\s+(?:plans?\s+)?(?:this\s+(?:year|summer|spring|winter|fall|autumn|month)\s+)?(?:is|['’]s|will\s+be|is\s+now)\s+(?:now\s+)?(?:(?:going|heading)\s+to|to|in|be\s+in)\s+"),
        r"\b(?:decided|chose|switched|changed\s+(?:it|the\s+(?:trip|plan|plans|destination))|rebooked)\s+(?:(?:to\s+)?(?:go|head|fly|travel)\s+)?to\s+".to_string(),
        r"\b(?:booked|booking|bought|got)\s+(?:(?:our|my|the|a|two|cheap)\s+)?(?:(?:plane|train|return|one-way)\s+)?(?:flights?|tickets?)\s+to\s+".to_string(),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (index, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        let who = if index == 2 {
            possessor(ctx, whole.start(), true)
        } else {
            holder(ctx, whole.start(), false)
        };
        let Some(holder) = asserted(ctx, who) else {
            continue;
        };
        let Some(place) = values::place(ctx, whole.end()) else {
            continue;
        };
        let moving = ["move", "move2", "move3"]
            .iter()
            .any(|g| caps.name(g).is_some());
        let trip = caps.name("trip").map(|m| m.as_str().to_lowercase());
        out.push(Found {
            subject: holder.subject,
            slot: Slot::Plan,
            qualifier: plan_qualifier(ctx, moving, trip.as_deref()),
            value: place.text,
            negated: holder.negated || anymore_after(ctx, place.end),
            at: whole.start(),
        });
    }
}

/// "Lisbon is home now", "Seoul has become our home": the place before "home".
fn home_is(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<v>{NAME})\s+(?:is|['’]s|has\s+become|became)\s+(?:(?:now|officially|finally|still|really)\s+)*(?:(?:my|our)\s+(?:new\s+)?)?home(?:\s+(?:now|these\s+days|for\s+(?:me|us)|base))*\s*(?:[.!,;]|$)",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(v)) = (caps.get(0), caps.name("v")) else {
            continue;
        };
        let place = v.as_str().trim();
        let first = place.split_whitespace().next().unwrap_or("").to_lowercase();
        if NOT_NAMES.contains(&first.as_str()) || blocked_before(ctx, v.start()) {
            continue;
        }
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Residence,
            qualifier: String::new(),
            value: place.to_string(),
            negated: false,
            at: whole.start(),
        });
    }
}

/// Words that tell a sentence is about a child on the way or just born.
const CHILD_CUES: &[&str] = &[
    "baby",
    "boy",
    "girl",
    "son",
    "daughter",
    "expecting",
    "pregnant",
    "due",
    "born",
    "twins",
    "newborn",
    "bump",
];

/// "We're expecting a boy and we'll name him Felix": a name chosen for a child on the way is
/// said in the future and is still the child's name.
fn baby_names(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:we['’]ll|we\s+will|(?:we['’]re|we\s+are)\s+(?:going\s+to|gonna)|we\s+plan\s+to|(?:we['’]ve|we\s+have)?\s*decided\s+to|we\s+want\s+to)\s+(?:name|call)\s+(?:him|her|them|the\s+baby|our\s+(?:son|daughter|baby))\s+",
    ];
    let cued = ctx
        .toks
        .iter()
        .any(|t| CHILD_CUES.contains(&t.lower.as_str()));
    if !cued || species_in(ctx).is_some() {
        return;
    }
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(name) = values::name(ctx, whole.end()) else {
            continue;
        };
        let lower = ctx.text.to_lowercase();
        let kind =
            if lower.contains("boy") || lower.contains(" son") || whole.as_str().contains("him") {
                "son"
            } else if lower.contains("girl")
                || lower.contains("daughter")
                || whole.as_str().contains("her")
            {
                "daughter"
            } else {
                "child"
            };
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Child,
            qualifier: kind.to_string(),
            value: name.text,
            negated: false,
            at: whole.start(),
        });
    }
}

/// Words that tell of a move in the same sentence ("we moved house, we're in Bergen now").
const MOVE_CUES: &[&str] = &[
    "moved",
    "move",
    "moving",
    "relocated",
    "relocation",
    "settled",
    "emigrated",
    "house",
    "flat",
    "apartment",
    "place",
];

/// "We moved house, we're in Bergen now": after a move, being somewhere is living there.
fn moved_in(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:am|['’]m|are|['’]re)\s+(?:(?:now|currently|finally|officially|all|happily|properly)\s+)*(?:settled\s+)?in\s+",
    ];
    let cued = ctx
        .toks
        .iter()
        .any(|t| MOVE_CUES.contains(&t.lower.as_str()));
    if !cued {
        return;
    }
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        let Some(holder) = asserted(ctx, holder(ctx, whole.start(), false)) else {
            continue;
        };
        let Some(place) = values::place(ctx, whole.end()) else {
            continue;
        };
        if values::temporary_after(ctx, place.end) {
            continue;
        }
        out.push(Found {
            subject: holder.subject,
            slot: Slot::Residence,
            qualifier: String::new(),
            value: place.text,
            negated: holder.negated,
            at: whole.start(),
        });
    }
}

/// "I'm a software engineer at Google": an occupation held at an employer names both.
fn job_at(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:am|['’]m|is|['’]s)\s+(?:(?:now|currently|still|also)\s+)*an?\s+(?P<job>[^,.;:!?]{2,40}?)\s+(?:at|for|with)\s+",
        r"\b(?P<as>as)\s+an?\s+(?P<job>[^,.;:!?]{2,40}?)\s+(?:at|for|with)\s+",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(job)) = (caps.get(0), caps.name("job")) else {
            continue;
        };
        if !values::is_occupation(job.as_str()) {
            continue;
        }
        let who = if caps.name("as").is_some() {
            clause_speaker(ctx, whole.start())
        } else {
            holder(ctx, whole.start(), false)
        };
        let Some(holder) = asserted(ctx, who) else {
            continue;
        };
        // "I'd love to work as a chef at Noma": what lies between the subject and "as" counts.
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(org) = values::org(ctx, whole.end()) else {
            continue;
        };
        out.push(Found {
            subject: holder.subject,
            slot: Slot::Employer,
            qualifier: String::new(),
            value: org.text,
            negated: holder.negated,
            at: whole.start(),
        });
    }
}

/// The speaker as the subject of the clause holding byte `at` ("I just started as a barista at
/// …"): the clause's first word that can be a subject is "I" or "we".
fn clause_speaker(ctx: &Context, at: usize) -> Option<Holder> {
    let before: Vec<&scan::Tok> = ctx.toks.iter().take_while(|t| t.end <= at).collect();
    let start = before.iter().rposition(|t| !t.word).map_or(0, |p| p + 1);
    let subject = before.get(start..)?.iter().find(|t| {
        !matches!(
            t.lower.as_str(),
            "so" | "and" | "but" | "just" | "recently" | "finally" | "then" | "now" | "today"
        )
    })?;
    let speaker = matches!(
        subject.lower.as_str(),
        "i" | "we" | "i've" | "we've" | "i'm" | "we're" | "i'd" | "we'd"
    );
    speaker.then_some(Holder {
        subject: Subject::Speaker,
        negated: false,
        perfect: false,
        start: subject.start,
    })
}

/// "Globex hired me", "Acme offered me a job and I took it": the speaker's employer.
fn hired_me(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"(?P<org>{ORG})\s+(?:(?:has|have|just|finally|officially)\s+)*(?:hired|employed|took\s+on|brought\s+on|recruited|signed|poached)\s+(?:me|us)\b",
        r"(?P<org>{ORG})\s+(?:is|['’]s)\s+(?:(?:now|officially|finally)\s+)*(?:my|our)\s+(?:new\s+|current\s+)?(?:employer|workplace|company)\b",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(org)) = (caps.get(0), caps.name("org")) else {
            continue;
        };
        let written: Vec<&str> = org
            .as_str()
            .split_whitespace()
            .skip_while(|w| NOT_NAMES.contains(&w.to_lowercase().as_str()))
            .collect();
        let Some(first) = written.first() else {
            continue;
        };
        let start = org.start() + org.as_str().find(first).unwrap_or(0);
        let lower_noun = org.as_str().to_lowercase();
        let unnamed = lower_noun.starts_with("the ") || lower_noun.starts_with("my ");
        if unnamed || blocked_before(ctx, start) {
            continue;
        }
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Employer,
            qualifier: String::new(),
            value: written.join(" "),
            negated: false,
            at: whole.start(),
        });
    }
}

/// Seasons and sizes before a trip noun ("the spring trip", "our big summer holiday").
const TRIP_MODIFIERS: &str = r"(?:(?:next|upcoming|big|little|short|long|solo|family|road|summer|winter|spring|fall|autumn|weekend|two-week|week-long|dream|first|annual|planned)\s+)*";

/// "We rebooked the spring trip, it's Hokkaido now", "the trip to Patagonia is cancelled":
/// a plan changed after its trip was named, or called off.
fn plan_changes(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let cancelled = r"cancelled|canceled|called\s+off|scrapped|off|postponed\s+indefinitely";
    let sources = [
        format!(r"\b(?:rebooked|re-booked|changed|moved|switched|rerouted|redirected|replanned|re-planned|updated|booked|planned|sorted|finalized|finalised)\s+(?:the|our|my)\s+{TRIP_MODIFIERS}(?P<trip>{TRIP_NOUNS})\s*[,;:—–]\s*(?:(?:so|and|now)\s+)?(?:it['’]s|it\s+is|it['’]ll\s+be|it\s+will\s+be|(?:we['’]re|we\s+are|i['’]m)\s+(?:now\s+)?(?:going|heading|off|flying)\s+to|now)\s+(?:(?:now|going\s+to|to|in)\s+)*"),
        format!(r"\b{TRIP_MODIFIERS}(?P<trip>{TRIP_NOUNS})\s*[:—–]\s*(?:(?:now|it['’]s|it\s+is)\s+)*(?:(?:to|in)\s+)?"),
        format!(r"\b{TRIP_MODIFIERS}(?P<trip>{TRIP_NOUNS})\s+to\s+(?P<place>{{NAME}})\s+(?:(?:next|this)\s+\w+\s+)?(?:is|has\s+been|was|got|['’]s)\s+(?:(?:now|officially|been|unfortunately|sadly)\s+)*(?:{cancelled})\b"),
        format!(r"\b(?:cancelled|canceled|called\s+off|scrapped|dropped)\s+(?:the|our|my)\s+{TRIP_MODIFIERS}(?P<trip>{TRIP_NOUNS})\s+to\s+(?P<place>{{NAME}})"),
        r"\b(?:plans?|destination|(?P<trip>trip|holiday|vacation|getaway))\s+for\s+(?:the\s+|next\s+|this\s+|our\s+)?(?:spring|summer|autumn|fall|winter|holidays|break|weekend|month|year|christmas|easter|honeymoon)\s+(?:is|are|['’]s|will\s+be)\s+(?:now\s+|still\s+)*(?:(?:to\s+)?(?:go\s+to|visit|see|head\s+to|fly\s+to|travel\s+to)\s+|to\s+|in\s+)?".to_string(),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (index, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        let who = match index {
            0 | 3 => holder(ctx, whole.start(), true),
            _ => possessor(ctx, whole.start(), true),
        };
        let negated_here = matches!(index, 2 | 3);
        let Some(holder) = asserted(ctx, who) else {
            continue;
        };
        let place = match caps.name("place") {
            Some(p) => Some(p.as_str().trim().to_string()),
            None => values::place(ctx, whole.end()).map(|r| r.text),
        };
        let Some(place) = place else { continue };
        let trip = caps.name("trip").map(|m| m.as_str().to_lowercase());
        out.push(Found {
            subject: holder.subject,
            slot: Slot::Plan,
            qualifier: plan_qualifier(ctx, false, trip.as_deref()),
            value: place,
            negated: negated_here || holder.negated,
            at: whole.start(),
        });
    }
}

/// Words of time a plan's qualifier keeps ("next spring" → "spring").
#[rustfmt::skip]
const PLAN_TIMES: &[&str] = &[
    "spring", "summer", "autumn", "fall", "winter", "january", "february", "march", "april", "may",
    "june", "july", "august", "september", "october", "november", "december", "weekend",
    "christmas", "easter", "thanksgiving", "honeymoon", "anniversary", "birthday",
];

/// A plan's qualifier: "trip" (or "move"), the honeymoon if it is one, and the season, month or
/// coming week/month/year the sentence names.
pub(super) fn plan_qualifier(ctx: &Context, moving: bool, trip: Option<&str>) -> String {
    let mut words: Vec<String> = vec![if moving { "move" } else { "trip" }.to_string()];
    if trip.is_some_and(|t| t.contains("honeymoon")) {
        words.push("honeymoon".to_string());
    }
    let toks = &ctx.toks;
    for (i, tok) in toks.iter().enumerate() {
        let w = tok.lower.as_str();
        // "may" is a month only when capitalized.
        let month_may = w == "may" && !tok.capital;
        if PLAN_TIMES.contains(&w) && !month_may {
            words.push(w.to_string());
        }
        let after_next = i > 0
            && toks
                .get(i - 1)
                .is_some_and(|p| matches!(p.lower.as_str(), "next" | "this" | "coming"));
        if after_next && matches!(w, "week" | "month" | "year") {
            words.push(w.to_string());
        }
    }
    normalize::qualifier(words.iter().map(String::as_str))
}

const QUANTITY_VERBS: &str = r"run|runs|running|walk|walks|walking|swim|swims|swimming|cycle|cycles|cycling|bike|bikes|biking|ride|rides|drive|drives|read|reads|reading|drink|drinks|drinking|smoke|smokes|smoking|sleep|sleeps|sleeping|work|works|working|earn|earns|earning|make|makes|making|pay|pays|paying|spend|spends|spending|save|saves|saving|weigh|weighs|eat|eats|study|studies|practice|practise|practices|practises|train|trains|training|lift|lifts|lifting|write|writes|writing|do|does|doing|take|takes|teach|teaches|commute|commutes|meditate|meditates|hike|hikes|hiking|have|has|own|owns|manage|manages|charge|charges|log|logs|average|averages|cover|covers|get|gets|play|plays|watch|watches|climb|climbs|cook|cooks|bake|bakes|sell|sells|see|sees|row|rows|need|needs|bench|squat|deadlift";

/// "I run 17 kilometres every week", "my rent is $1,200 a month", "a coffee costs $5 now".
fn quantities(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        format!(r"\b(?P<verb>{QUANTITY_VERBS})\s+(?:(?:about|around|roughly|approximately|almost|nearly|over|under|at\s+least|at\s+most|up\s+to|like|maybe|only|just|exactly|easily|a\s+solid|now)\s+)*(?P<num>{{NUM}}|once|twice|thrice)"),
        r"\b(?:(?P<period>monthly|weekly|annual|yearly|daily|hourly)\s+)?(?P<what>rent|salary|income|pay|paycheck|mortgage|budget|weight|commute|savings|bill|car\s+payment|step\s+count|screen\s+time|handicap|rate|wage|wages|allowance|tuition)\s+(?:(?:now|these\s+days|currently)\s+)?(?:is|['’]s|went\s+up\s+to|has\s+gone\s+up\s+to|goes\s+up\s+to|rose\s+to|increased\s+to|dropped\s+to|went\s+down\s+to|fell\s+to|has\s+become|became|is\s+now|comes\s+to|was\s+raised\s+to|got\s+raised\s+to|isn['’]t|is\s+no\s+longer)\s+(?:(?:now|only|just|about|around|roughly|almost|nearly|over|under|exactly|a\s+whopping)\s+)*(?P<num>{NUM})".to_string(),
        r"\b(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+(?:now\s+)?(?:costs?|is\s+priced\s+at|sells\s+for|goes\s+for)\s+(?:(?:now|only|just|about|around|like)\s+)*(?P<num>[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s*(?:dollars|euros|pounds|bucks|yuan|yen|rmb))".to_string(),
        format!(r"\b(?:(?P<period>weekly|daily|monthly|yearly|annual|nightly)\s+)?(?P<act>{ACTIVITIES})\s+(?:(?:distance|mileage|volume|total|time|goal|target|average|load|hours|count|amount|streak)\s+)?(?:(?:now|these\s+days|currently|nowadays)\s+)?(?:is|['’]s|went\s+up\s+to|has\s+gone\s+up\s+to|rose\s+to|increased\s+to|dropped\s+to|went\s+down\s+to|fell\s+to|has\s+become|became|hit|reached|has\s+reached|is\s+up\s+to|is\s+down\s+to|stands\s+at|sits\s+at|isn['’]t|is\s+no\s+longer|:)\s+(?:(?:now|only|just|about|around|roughly|almost|nearly|over|under|exactly|still|up\s+to|down\s+to|a\s+solid|at)\s+)*(?P<num>{{NUM}})"),
        r"\b(?:am|['’]m|are|['’]re)\s+(?:(?:now|currently|already|finally|still)\s+)*(?:at|up\s+to|down\s+to|averaging|hitting|clocking|logging|covering|managing)\s+(?:(?:about|around|roughly|almost|nearly|over|a\s+solid)\s+)*(?P<num>{NUM})".to_string(),
    ];
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    for (index, caps) in each_match(patterns(&CELL, &source_refs), ctx.text) {
        let found = match index {
            0 => counted(ctx, &caps),
            1 => measured(ctx, &caps),
            2 => priced(ctx, &caps),
            3 => activity_measured(ctx, &caps),
            _ => level(ctx, &caps),
        };
        out.extend(found);
    }
}

/// Periods a quantity is counted over.
fn period_word(w: &str) -> Option<&'static str> {
    Some(match w {
        "day" | "daily" | "days" => "day",
        "week" | "weekly" | "weeks" => "week",
        "month" | "monthly" | "months" => "month",
        "year" | "yearly" | "annually" | "years" => "year",
        "night" | "nightly" | "nights" => "night",
        "morning" | "mornings" => "morning",
        "weekend" | "weekends" => "weekend",
        "hour" | "hourly" => "hour",
        _ => return None,
    })
}

/// What follows a number: its unit or object words, a period, and an object after "in/on/for"
/// ("$1,200 a month in rent").
struct Measure {
    unit: Vec<String>,
    period: Option<&'static str>,
    object: Option<String>,
    /// Byte where the value (number and unit) ends.
    end: usize,
}

fn measure_after(ctx: &Context, num_end: usize) -> Measure {
    let mut m = Measure {
        unit: Vec::new(),
        period: None,
        object: None,
        end: num_end,
    };
    let toks: Vec<&scan::Tok> = ctx.toks.iter().filter(|t| t.start >= num_end).collect();
    let mut i = 0;
    while let Some(tok) = toks.get(i) {
        let w = tok.lower.as_str();
        let next = toks.get(i + 1).map(|t| t.lower.as_str());
        if matches!(w, "every" | "each" | "a" | "an" | "per" | "/" | "a-") {
            if let Some(p) = next.and_then(period_word) {
                m.period = Some(p);
                i += 2;
                continue;
            }
        }
        if let Some(p) = period_word(w).filter(|_| w.ends_with("ly")) {
            m.period = Some(p);
            i += 1;
            continue;
        }
        if matches!(w, "in" | "on" | "for") {
            if let Some(n) = next.filter(|n| OBJECTS.contains(n)) {
                m.object = Some(n.to_string());
                i += 2;
                continue;
            }
            break;
        }
        if w == "times" {
            m.unit.push(w.to_string());
            m.end = tok.end;
            i += 1;
            continue;
        }
        let content = tok.word && !super::values::is_phrase_end(w);
        if w == "of" && !m.unit.is_empty() && m.period.is_none() {
            i += 1;
            continue;
        }
        if !content || m.unit.len() >= 3 || m.period.is_some() {
            break;
        }
        m.unit.push(w.to_string());
        m.end = tok.end;
        i += 1;
    }
    m
}

/// A period named before the verb in the same sentence: "every week", "each month",
/// "weekly,".
fn period_before(ctx: &Context, at: usize) -> Option<&'static str> {
    let before: Vec<&scan::Tok> = ctx.toks.iter().take_while(|t| t.end <= at).collect();
    before.iter().enumerate().find_map(|(i, t)| {
        let next = before.get(i + 1).map(|n| n.lower.as_str());
        match t.lower.as_str() {
            "every" | "each" | "per" => next.and_then(period_word),
            w if w.ends_with("ly") => period_word(w),
            _ => None,
        }
    })
}

/// Objects of spending that name what a sum is ("in rent").
#[rustfmt::skip]
const OBJECTS: &[&str] = &[
    "rent", "groceries", "food", "coffee", "savings", "bills", "utilities", "gas", "petrol",
    "childcare", "tuition", "takeout", "clothes", "books", "travel", "mortgage",
];

fn is_money(num: &str, unit: &[String]) -> bool {
    let lower = num.to_lowercase();
    lower.starts_with(['$', '€', '£', '¥'])
        || lower.trim_end().ends_with('k')
        || unit.first().is_some_and(|u| {
            matches!(
                u.as_str(),
                "dollars" | "euros" | "pounds" | "bucks" | "grand" | "yuan" | "rmb" | "k"
            )
        })
}

/// "I run 17 kilometres every week": the verb, the unit and the period make the qualifier.
fn counted(ctx: &Context, caps: &Captures) -> Option<Found> {
    let verb_m = caps.name("verb")?;
    let num = caps.name("num")?;
    let holder = asserted(ctx, holder(ctx, verb_m.start(), false))?;
    let mut measure = measure_after(ctx, num.end());
    // "Every week I run 17 km", "Weekly, I cycle 80 km": the period may come first.
    measure.period = measure
        .period
        .or_else(|| period_before(ctx, verb_m.start()));
    let verb = verb_m.as_str().to_lowercase();
    let money = is_money(num.as_str(), &measure.unit);
    let mut words: Vec<String> = Vec::new();
    let having = matches!(
        verb.as_str(),
        "have" | "has" | "own" | "owns" | "get" | "gets" | "need" | "needs"
    );
    if matches!(
        verb.as_str(),
        "earn" | "earns" | "earning" | "make" | "makes" | "making"
    ) && money
    {
        words.push("salary".to_string());
    } else if matches!(verb.as_str(), "weigh" | "weighs") {
        // Kilos and pounds measure the same thing.
        words.push("weigh".to_string());
    } else {
        if measure.object.is_none() && !having {
            words.push(verb.clone());
        }
        if !money {
            words.extend(measure.unit.iter().cloned());
        }
        words.extend(measure.object.clone());
        words.extend(measure.period.map(str::to_string));
    }
    // A count without a period ("I read 4 books on holiday") is an event, not a standing fact,
    // unless it is owned or weighed ("I have three kids", "I weigh 70 kg") or earned.
    let standing = having || money || matches!(verb.as_str(), "weigh" | "weighs");
    if having && measure.unit.is_empty() || measure.period.is_none() && !standing {
        return None;
    }
    let value = ctx
        .text
        .get(num.start()..measure.end.max(num.end()))?
        .trim();
    Some(Found {
        subject: holder.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: value.to_string(),
        negated: holder.negated,
        at: verb_m.start(),
    })
}

/// "my rent is $1,200 a month", "my salary went up to 80k".
fn measured(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let holder = asserted(ctx, possessor(ctx, whole.start(), false))?;
    let what = caps.name("what")?.as_str().to_lowercase();
    let measure = measure_after(ctx, num.end());
    let period = caps
        .name("period")
        .and_then(|p| period_word(&p.as_str().to_lowercase()))
        .or(measure.period);
    let mut words: Vec<String> = Vec::new();
    match what.as_str() {
        "salary" | "income" | "pay" | "paycheck" | "wage" | "wages" => words.push("salary".into()),
        "rent" | "mortgage" => {
            words.push(what.clone());
            words.push(period.unwrap_or("month").to_string());
        }
        _ => {
            words.push(what.clone());
            words.extend(period.map(str::to_string));
        }
    }
    let value = ctx
        .text
        .get(num.start()..measure.end.max(num.end()))?
        .trim();
    Some(Found {
        subject: holder.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: value.to_string(),
        negated: holder.negated || super::rules::says_not(whole.as_str()),
        at: whole.start(),
    })
}

/// Activities whose amount a noun phrase names ("my weekly running distance"); the stemmed
/// noun keys like the verb ("running" = "run").
const ACTIVITIES: &str = r"running|run|runs|jogging|mileage|distance|cycling|cycle|bike|biking|riding|swimming|swim|walking|walk|hiking|rowing|reading|training|study|studying|sleep|sleeping|writing|meditation|meditating|practice|practising|practicing|commute|commuting|workout|lifting|climbing|yoga|gym";

/// "My weekly running distance is 42 kilometres": the activity, unit and period key it like
/// "I run 42 kilometres a week".
fn activity_measured(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let holder = asserted(ctx, possessor(ctx, whole.start(), false))?;
    let activity = caps.name("act")?.as_str().to_lowercase();
    let measure = measure_after(ctx, num.end());
    let period = caps
        .name("period")
        .and_then(|p| period_word(&p.as_str().to_lowercase()))
        .or(measure.period);
    let mut words: Vec<String> = vec![activity];
    words.extend(measure.unit.iter().cloned());
    words.extend(period.map(str::to_string));
    let value = ctx
        .text
        .get(num.start()..measure.end.max(num.end()))?
        .trim();
    Some(Found {
        subject: holder.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: value.to_string(),
        negated: holder.negated || super::rules::says_not(whole.as_str()),
        at: whole.start(),
    })
}

/// "I'm at 31 kilometres per week these days": a level reached, keyed by its unit and period
/// (it needs both, or "I'm at 5" would count anything).
fn level(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    let holder = asserted(ctx, holder(ctx, whole.start(), false))?;
    let measure = measure_after(ctx, num.end());
    let period = measure.period?;
    if measure.unit.is_empty() || is_money(num.as_str(), &measure.unit) {
        return None;
    }
    let mut words: Vec<String> = measure.unit.clone();
    words.push(period.to_string());
    let value = ctx.text.get(num.start()..measure.end)?.trim();
    Some(Found {
        subject: holder.subject,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words.iter().map(String::as_str)),
        value: value.to_string(),
        negated: holder.negated,
        at: whole.start(),
    })
}

/// "a latte costs $5 now": the price of the thing named.
fn priced(ctx: &Context, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    let num = caps.name("num")?;
    if blocked_before(ctx, whole.start()) {
        return None;
    }
    let what = caps.name("what")?.as_str().to_lowercase();
    let item: Vec<&str> = what
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "a" | "an" | "the" | "my" | "our" | "one" | "it" | "that" | "this"
            )
        })
        .collect();
    if item.is_empty() {
        return None;
    }
    let mut words = vec!["price"];
    words.extend(item);
    Some(Found {
        subject: Subject::Speaker,
        slot: Slot::Quantity,
        qualifier: normalize::qualifier(words),
        value: num.as_str().trim().to_string(),
        negated: false,
        at: whole.start(),
    })
}

/// "I'm 28", "I just turned 29", "my son is five".
fn ages(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:am|['’]m|is|['’]s|are|['’]re|turned|now)\s+(?:(?:now|just|finally|officially|already|only)\s+)*(?P<num>\d{1,3}|{NUM})\b",
        r"\bage\s+(?:is|['’]s)\s+(?:now\s+)?(?P<num>\d{1,3}|{NUM})\b",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(num)) = (caps.get(0), caps.name("num")) else {
            continue;
        };
        let who = if index == 0 {
            holder(ctx, whole.start(), false)
        } else {
            possessor(ctx, whole.start(), false)
        };
        let Some(holder) = asserted(ctx, who) else {
            continue;
        };
        let Some(years) = normalize::number_key(num.as_str()).and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !(1..=120).contains(&years) || !age_follows(ctx, num.end()) {
            continue;
        }
        out.push(Found {
            subject: holder.subject,
            slot: Slot::Age,
            qualifier: String::new(),
            value: num.as_str().trim().to_string(),
            negated: false,
            at: whole.start(),
        });
    }
}

/// Whether what follows a number lets it be an age: nothing, "years old", or a word that
/// does not make it a measure ("I'm 5 minutes away").
fn age_follows(ctx: &Context, end: usize) -> bool {
    let rest = values::rest_of_clause(ctx, end);
    match rest.first().copied() {
        None => true,
        Some("years" | "year" | "yrs" | "yo" | "y") => {
            rest.get(1).is_none_or(|w| matches!(*w, "old" | "o" | "/"))
        }
        Some(w) => matches!(
            w,
            "and"
                | "but"
                | "now"
                | "today"
                | "this"
                | "so"
                | "already"
                | "as"
                | "since"
                | "last"
                | "yesterday"
                | "in"
                | "on"
                | "next"
                | "soon"
                | "lol"
                | "haha"
                | "which"
                | "too"
        ),
    }
}

/// "Hibiscus tea is my favourite drink now": the value stands before the slot.
fn favourite_before(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:is|['’]s|are|['’]re|has\s+become|have\s+become|became|is\s+now|isn['’]t|aren['’]t|is\s+not|is\s+no\s+longer)\s+(?:(?:now|still|definitely|officially|easily|probably|no\s+longer|not|always|hands\s+down)\s+)*(?:my|our)\s+(?:(?:new|current|absolute|all-time|top|usual)\s+)*(?:favou?rite|fave|go-to|preferred)\s+(?P<q>[a-z]+(?:[\s-][a-z]+)?)\b",
        r"\b(?:is|['’]s|are|['’]re|has\s+become|became|is\s+now|isn['’]t|is\s+not|is\s+no\s+longer)\s+(?:(?:now|still|definitely|officially|no\s+longer|not|always)\s+)*(?:my|our)\s+(?P<q>[a-z]+)\s+of\s+choice\b",
    ];
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let (Some(whole), Some(q)) = (caps.get(0), caps.name("q")) else {
            continue;
        };
        let before = phrase_before(ctx, whole.start()).filter(|(v, _)| !is_pronoun(v));
        let Some((value, start)) = before.or_else(|| antecedent(ctx, whole.start())) else {
            continue;
        };
        if blocked_before(ctx, start) {
            continue;
        }
        let q_words: Vec<String> = q
            .as_str()
            .to_lowercase()
            .split([' ', '-'])
            .filter(|w| !values::is_phrase_end(w))
            .map(canonical_preference)
            .collect();
        out.push(Found {
            subject: Subject::Speaker,
            slot: Slot::Preference,
            qualifier: normalize::qualifier(q_words.iter().map(String::as_str)),
            value,
            negated: super::rules::says_not(whole.as_str()) || anymore_after(ctx, whole.end()),
            at: start,
        });
    }
}

fn is_pronoun(text: &str) -> bool {
    matches!(
        text.to_lowercase().as_str(),
        "it" | "that" | "this" | "which" | "they" | "those" | "these"
    )
}

/// Words that end, going left, the thing a pronoun stands for ("Nothing beats cold brew, it's
/// my favourite drink" → "cold brew").
#[rustfmt::skip]
const ANTECEDENT_STOPS: &[&str] = &[
    "beats", "beat", "tops", "love", "loves", "like", "likes", "adore", "adores", "drink",
    "drinks", "drinking", "drank", "eat", "eats", "eating", "ate", "order", "orders", "ordering",
    "ordered", "have", "having", "had", "tried", "try", "trying", "discovered", "found", "is",
    "are", "was", "'s", "with", "of", "on", "into", "for", "about", "nothing", "than", "i", "we",
    "my", "our", "the", "a", "an", "some", "really", "always", "just", "been", "get", "enough",
    "obsessed", "hooked", "addicted", "fan", "like", "prefer", "prefers", "enjoy", "enjoys",
    "make", "makes", "making", "made", "recommend", "picked", "chose", "choose", "switched", "to",
    "me", "you", "compares", "gotten", "got", "into", "mad", "crazy", "there's", "it's",
];

/// Praise before the thing a pronoun stands for ("a good negroni").
const PRAISE: &[&str] = &[
    "good", "nice", "great", "proper", "decent", "solid", "lovely", "real", "perfect",
];

/// Time words that may trail the thing a pronoun stands for ("… matcha lattes lately").
#[rustfmt::skip]
const TIME_TAIL: &[&str] = &[
    "lately", "recently", "these", "those", "days", "every", "day", "daily", "now", "today",
    "week", "month", "year", "last", "this", "morning", "mornings", "afternoon", "evening",
    "night", "at", "the", "moment", "all", "time", "again", "too", "nowadays", "honestly",
];

/// The noun phrase at the end of the clause before byte `at`, which a pronoun opening the
/// clause at `at` stands for.
fn antecedent(ctx: &Context, at: usize) -> Option<(String, usize)> {
    let before: Vec<&scan::Tok> = ctx.toks.iter().take_while(|t| t.start < at).collect();
    let boundary = before.iter().rposition(|t| {
        !t.word && matches!(t.lower.as_str(), "," | ";" | ":" | "—" | "–" | "-" | "(")
    })?;
    let clause = before.get(..boundary)?;
    let clause_start = clause.iter().rposition(|t| !t.word).map_or(0, |p| p + 1);
    let mut words: Vec<&scan::Tok> = clause.get(clause_start..)?.to_vec();
    while words
        .last()
        .is_some_and(|t| TIME_TAIL.contains(&t.lower.as_str()))
    {
        words.pop();
    }
    let kept_from = words
        .iter()
        .rposition(|t| ANTECEDENT_STOPS.contains(&t.lower.as_str()) || t.lower.ends_with("n't"))
        .map_or(0, |p| p + 1);
    let mut phrase = words.get(kept_from..)?;
    while phrase
        .first()
        .is_some_and(|t| PRAISE.contains(&t.lower.as_str()) && phrase.len() > 1)
    {
        phrase = phrase.get(1..)?;
    }
    if phrase.is_empty() || phrase.len() > 4 || kept_from == 0 {
        return None;
    }
    let start = phrase.first()?.start;
    let end = phrase.last()?.end;
    let text = scan::trim_value(ctx.text.get(start..end)?).to_string();
    (!text.is_empty()).then_some((text, start))
}

/// Openers that are not part of a value said before its slot ("Honestly, …", "these days").
#[rustfmt::skip]
const LEAD_INS: &[&str] = &[
    "honestly", "these", "days", "now", "oh", "well", "so", "actually", "i", "think", "guess",
    "btw", "anyway", "lately", "nowadays", "and", "but", "yeah", "currently",
];

/// Up to four words before byte `end` in the same clause, without lead-ins and determiners.
fn phrase_before(ctx: &Context, end: usize) -> Option<(String, usize)> {
    let before: Vec<&scan::Tok> = ctx.toks.iter().take_while(|t| t.end <= end).collect();
    let clause_start = before
        .iter()
        .rposition(|t| !t.word && !matches!(t.lower.as_str(), "-" | "'"))
        .map_or(0, |p| p + 1);
    let mut words: Vec<&scan::Tok> = before.get(clause_start..)?.to_vec();
    while words.first().is_some_and(|t| {
        LEAD_INS.contains(&t.lower.as_str()) || matches!(t.lower.as_str(), "the" | "a" | "an")
    }) {
        words.remove(0);
    }
    if words.is_empty() || words.len() > 4 {
        return None;
    }
    let start = words.first()?.start;
    let stop = words.last()?.end;
    let text = scan::trim_value(ctx.text.get(start..stop)?).to_string();
    (!text.is_empty()).then_some((text, start))
}

/// Cues that a sentence is about the speaker's love life.
#[rustfmt::skip]
const DATING_CUES: &[&str] = &[
    "seeing", "dating", "girlfriend", "boyfriend", "partner", "relationship", "crush", "fiancé",
    "fiancée", "fiance", "fiancee", "wife", "husband", "engaged", "married",
];

/// Names given through a pronoun: "she answers to Pumpernickel now" about our cat, "their name
/// is Sam" about someone the speaker is seeing.
fn names_in_context(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:(?:answers|responds|goes)\s+to\s+(?:the\s+name\s+(?:of\s+)?)?|(?:call|calling|named|renamed)\s+(?:her|him|it|them)\s+(?:now\s+)?|(?:her|his|its|their)\s+(?:new\s+)?name\s+(?:is|['’]s)\s+(?:now\s+)?)",
    ];
    if !ctx.first_person() {
        return;
    }
    for (_, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        if blocked_before(ctx, whole.start()) {
            continue;
        }
        let Some(name) = values::name(ctx, whole.end()) else {
            continue;
        };
        let species = species_in(ctx);
        let dating = ctx
            .toks
            .iter()
            .any(|t| DATING_CUES.contains(&t.lower.as_str()));
        let (slot, qualifier) = match species {
            Some(s) => (Slot::Pet, super::super::lexicon::canonical_species(&s)),
            None if dating => (Slot::Partner, String::new()),
            None => continue,
        };
        out.push(Found {
            subject: Subject::Speaker,
            slot,
            qualifier,
            value: name.text,
            negated: false,
            at: whole.start(),
        });
    }
}

/// "We broke up", "Anna and I split up", "Tom dumped me", "Anna and I got engaged".
fn break_ups(ctx: &Context, out: &mut Vec<Found>) {
    static CELL: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    let sources = [
        r"\b(?:broke\s+up|split\s+up|called\s+it\s+quits|parted\s+ways|ended\s+things|got\s+dumped|(?:are|were)\s+over|broke\s+it\s+off)\b",
        r"(?P<name>{NAME})\s+(?:dumped|left|broke\s+up\s+with|divorced)\s+me\b",
        r"(?P<name>{NAME})\s+(?:is|['’]s)\s+(?:(?:now|still|officially|finally|also)\s+)*my\s+(?:new\s+|current\s+)?(?:girlfriend|boyfriend|partner|wife|husband|fianc[ée]e?|spouse|other\s+half|significant\s+other|better\s+half)\b",
        r"(?P<name>{NAME})\s+and\s+I\s+(?:(?:are|got|have\s+been|['’]ve\s+been|just|now|still|finally|officially|happily|recently|started|are\s+back|got\s+back|back)\s+)*(?:dating|married|engaged|together|a\s+couple|going\s+out|seeing\s+each\s+other|an\s+item|living\s+together|moving\s+in\s+together)\b",
    ];
    for (index, caps) in each_match(patterns(&CELL, &sources), ctx.text) {
        let Some(whole) = caps.get(0) else { continue };
        let named = caps
            .name("name")
            .map(|n| n.as_str().trim().to_string())
            .filter(|n| !NOT_NAMES.contains(&n.to_lowercase().as_str()));
        let (subject, partner, start) = match index {
            0 => {
                let Some(h) = holder(ctx, whole.start(), true) else {
                    continue;
                };
                let partner = partner_of_break_up(ctx, whole.end(), h.start);
                (h.subject, partner, h.start)
            }
            _ => match named {
                Some(n) if !NOT_PARTNERS.contains(&n.to_lowercase().as_str()) => {
                    (Subject::Speaker, n, whole.start())
                }
                _ => continue,
            },
        };
        if blocked_before(ctx, start) {
            continue;
        }
        let ended = index < 2;
        out.push(Found {
            subject: subject.clone(),
            slot: Slot::Partner,
            qualifier: String::new(),
            value: partner,
            negated: ended,
            at: whole.start(),
        });
        if ended {
            out.push(Found {
                subject,
                slot: Slot::RelationshipStatus,
                qualifier: String::new(),
                value: "single".to_string(),
                negated: false,
                at: whole.start(),
            });
        }
    }
}

/// Capitalized words before "is my partner" that are no one's name.
const NOT_PARTNERS: &[&str] = &["she", "he", "they", "this", "that", "who", "it"];

/// Who the speaker broke up with: "… with Anna" after, or "Anna and I …" before.
fn partner_of_break_up(ctx: &Context, end: usize, subject_start: usize) -> String {
    let after = values::rest_of_clause(ctx, end);
    if after.first() == Some(&"with") {
        let with_end = ctx
            .toks
            .iter()
            .find(|t| t.start >= end && t.lower == "with")
            .map(|t| t.end);
        if let Some(read) = with_end.and_then(|e| values::name(ctx, e)) {
            return read.text;
        }
    }
    let before: Vec<&scan::Tok> = ctx
        .toks
        .iter()
        .take_while(|t| t.end <= subject_start + 1)
        .collect();
    let and_i = before.windows(2).rposition(|w| {
        matches!((w.first(), w.get(1)), (Some(a), Some(i)) if a.lower == "and" && i.lower == "i")
    });
    if let Some(p) = and_i {
        let name_end = before.get(p).map_or(0, |t| t.start);
        let name_start = before
            .get(..p)
            .and_then(|b| b.iter().rposition(|t| !t.capital || !t.word))
            .map_or(0, |q| q + 1);
        if let Some(first) = before.get(name_start) {
            let text = ctx.text.get(first.start..name_end).unwrap_or("").trim();
            if !text.is_empty() && !NOT_NAMES.contains(&text.to_lowercase().as_str()) {
                return text.to_string();
            }
        }
    }
    String::new()
}
