//! Recognizing a user's request to forget something, and what it names.
//!
//! A line is a request when a forgetting verb (forget, delete, erase, stop remembering, don't
//! keep…; 忘掉, 删掉, 别记…) is addressed to the assistant and has a topic:
//! - **addressed**: the verb opens its clause, after nothing but politeness and fillers ("OK,
//!   please just forget…"), or follows a request frame ("can you", "I want you to", "you can",
//!   "请", "麻烦你", "我希望你"). Negated or past uses never qualify ("don't forget to…", "did you
//!   forget…", "I forgot…", "别忘了…", "我忘了…"). A frame about the user's own wish ("I want
//!   to forget that day", "我想忘掉那天") counts only when the sentence speaks of the assistant's
//!   memory ("…from your memory", "what I told you", "记住").
//! - **delete-like verbs** (delete, erase, remove, wipe, clear, drop, don't keep/store/save;
//!   删, 清除, 抹掉, 别存…) also run errands on other things ("delete the email from my boss",
//!   "删掉这张照片"), so they count only when the topic is a personal fact of the user's ("my
//!   address", "我的电话号码") or the sentence speaks of the assistant's memory.
//! - **a topic**: a request that only points back ("forget it", "never mind, forget that",
//!   "算了，忘了吧") has nothing to resolve and is not returned.

use std::ops::Range;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::types::ForgetRequest;
use super::{credentials, forget_zh, topic};
use crate::script::{char_at, char_before};
use crate::{has_cjk, sentences};

/// How many forgetting verbs of one sentence are examined: a real request has one or two, and
/// the bound keeps a pathological line ("forget, forget, forget…") linear.
pub(super) const MAX_VERBS: usize = 16;

/// How far before its verb a request's opening may start, in bytes ("I would appreciate it if
/// you could please just" is well inside).
pub(super) const FRAME_WINDOW: usize = 160;

/// The longest topic taken, in bytes: a noun phrase, not a paragraph.
pub(super) const MAX_TOPIC: usize = 300;

/// A request found in one sentence, in the sentence's byte offsets.
pub(super) struct Found {
    /// From where the request starts to the end of the sentence.
    pub(super) clause: Range<usize>,
    pub(super) topic: Range<usize>,
    pub(super) everything: bool,
    pub(super) values: Vec<Range<usize>>,
}

/// How the words before the verb address it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Frame {
    /// An imperative or a request to the assistant.
    Addressed,
    /// The user's own wish or question ("I want to…", "how do I…").
    Own,
}

/// The forget request a user line makes, if any (see the module documentation): the first one,
/// sentence by sentence.
pub fn forget_request(text: &str) -> Option<ForgetRequest> {
    for sentence in sentences(text) {
        let Some(base) = (sentence.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
            continue;
        };
        let found = english(sentence).or_else(|| {
            if has_cjk(sentence) {
                forget_zh::chinese(sentence)
            } else {
                None
            }
        });
        if let Some(found) = found {
            return Some(request(sentence, base, found));
        }
    }
    None
}

/// The public form of a finding: topic text, its terms and synonyms, ranges in the input.
fn request(sentence: &str, base: usize, found: Found) -> ForgetRequest {
    let topic = sentence.get(found.topic.clone()).unwrap_or("").to_string();
    let (terms, synonyms) = topic::terms_and_synonyms(&topic);
    let equivalents = topic::equivalents(&topic, &terms);
    let shift = |r: &Range<usize>| base + r.start..base + r.end;
    ForgetRequest {
        topic,
        terms,
        synonyms,
        equivalents,
        everything: found.everything,
        stated_values: found.values.iter().map(shift).collect(),
        span: shift(&found.clause),
    }
}

/// The values a request states in `s[clause]` (value tokens, credentials, and `copula`, the
/// predicate of "that my PIN is 4412"), merged; and the topic cut before a value that ends it
/// ("my phone number 13812345678" → "my phone number", while "my 2019 trip" stays whole).
pub(super) fn settle(
    s: &str,
    clause: &Range<usize>,
    topic: Range<usize>,
    copula: Option<Range<usize>>,
) -> (Range<usize>, Vec<Range<usize>>) {
    let mut values = topic::value_tokens(s, clause.clone());
    values.extend(copula);
    if let Some(region) = s.get(clause.clone()) {
        values.extend(
            credentials(region)
                .into_iter()
                .map(|c| clause.start + c.span.start..clause.start + c.span.end),
        );
    }
    let values = topic::merge(values);
    let mut cut = topic.clone();
    if let Some(v) = values
        .iter()
        .find(|v| v.start > topic.start && v.start < topic.end && v.end >= topic.end)
    {
        cut.end = v.start;
        cut = trim_connectors(s, cut);
    }
    let topic = if cut.is_empty() { topic } else { cut };
    (topic, values)
}

/// `r` without surrounding spaces and punctuation, and without a connector left dangling
/// before a value ("my PIN is", "我的电话是", "email:").
fn trim_connectors(s: &str, r: Range<usize>) -> Range<usize> {
    let mut r = trim_space(s, r);
    loop {
        let text = s.get(r.clone()).unwrap_or("");
        let lower = text.to_ascii_lowercase();
        let connector = [
            " is", " was", " are", ":", "：", "=", ",", "，", "-", "是", "为", "叫",
        ]
        .iter()
        .find(|c| lower.ends_with(**c));
        match connector {
            Some(c) if c.len() < text.len() => r = trim_space(s, r.start..r.end - c.len()),
            _ => return r,
        }
    }
}

/// `r` without leading and trailing whitespace.
pub(super) fn trim_space(s: &str, r: Range<usize>) -> Range<usize> {
    let text = s.get(r.clone()).unwrap_or("");
    let start = r.start + (text.len() - text.trim_start().len());
    let end = r.end - (text.len() - text.trim_end().len());
    start..end.max(start)
}

/// Every English pattern, compiled once.
struct English {
    trigger: Regex,
    frame: Regex,
    clause_word: Regex,
    lead: Regex,
    tail: Regex,
    bare_all: Regex,
    no_topic: Regex,
    copula: Regex,
    memory: Regex,
    personal: Regex,
    mind: Regex,
    from_elsewhere: Regex,
}

fn english_patterns() -> Option<&'static English> {
    static PATTERNS: OnceLock<Option<English>> = OnceLock::new();
    PATTERNS.get_or_init(compile_english).as_ref()
}

/// Words that make a noun phrase a personal fact of the user's, for delete-like verbs.
const PERSONAL_NOUNS: &str = r"address(?:es)?|number|e-?mail|birthday|birth\s*date|date\s+of\s+birth|age|salary|income|wages?|pay(?:check)?|password|passcode|pin|passport|ssn|social\s+security|id|name|ex|ex-\w+|boyfriend|girlfriend|husband|wife|partner|health|diagnos\w*|condition|illness|disease|medications?|medical|therapy|therapist|weight|religion|location|workplace|job|employer|bank|card|debt|divorce|pregnan\w*|family|kids?|children|child|son|daughter|mother|mom|father|dad|sister|brother|allerg\w*|sexuality|orientation|politics|details|info|information|data|secrets?|personal\s+\w+|private\s+\w+|phone\s+number|whereabouts|home";

fn compile_english() -> Option<English> {
    let dont = r"(?:don['’]?t|do\s+not)";
    let trigger = format!(
        r"(?i)(?-u:\b)(?:(?P<forget>forget(?:\s+about)?|unlearn|(?:stop|quit)\s+remembering|{dont}\s+(?:ever\s+)?remember|no\s+longer\s+remember|(?:didn['’]?t|did\s+not|not)\s+remember|(?:you\s+)?(?:{dont}|no\s+longer)\s+(?:need|have)\s+to\s+(?:remember|know)|(?:i\s+)?{dont}\s+(?:want|need)\s+you\s+to\s+(?:remember|know|keep|store|save))|(?P<gforget>forgetting(?:\s+about)?|not\s+remembering)|(?P<gdelete>deleting|erasing|removing|wiping|not\s+(?:keeping|storing|saving))|(?P<delete>delete|erase|remove|wipe(?:\s+out)?|purge|scrub|clear(?:\s+out)?|drop|discard|get\s+rid\s+of|(?:stop|quit)\s+(?:storing|keeping|saving|tracking|recording)|{dont}\s+(?:keep|store|save|record|retain)|no\s+longer\s+(?:keep|store|save)))(?-u:\b)"
    );
    let interjection = r"please|pls|plz|kindly|ok|okay|k|also|and|so|now|then|hey|hi|hello|actually|oh|um|uh|well|but|alright|all\s+right|right|yes|yeah|yep|no|nope|btw|by\s+the\s+way|one\s+more\s+thing|one\s+last\s+thing|last\s+thing|assistant|hmm|look|listen|anyway|anyways|sorry|honestly|seriously|from\s+now\s+on|at\s+this\s+point|in\s+that\s+case|on\s+second\s+thought|thanks|thank\s+you|good|great|cool|fine|perfect|wait|never\s+mind|nevermind|instead|otherwise";
    let request = r"(?:can|could|would)\s+(?:you|u|ya)|(?:will|won['’]?t)\s+(?:you|u)\s+please|would\s+you\s+be\s+(?:so\s+kind|kind\s+enough)\s+(?:as\s+)?to|(?:i|we)(?:\s+really)?(?:\s+(?:want|need|would\s+like|wanna|wish)|['’]d\s+like)\s+(?:you|u)\s+to|(?:i|we)(?:\s+would|['’]d)\s+(?:prefer|rather|love)\s+(?:it\s+)?(?:if\s+)?(?:you|u)(?:\s+to|\s+would|\s+could)?|(?:i|we)(?:\s+would|['’]d)\s+appreciate\s+it\s+if\s+(?:you|u)(?:\s+would|\s+could)?|(?:i['’]m|i\s+am)\s+(?:asking|telling)\s+you\s+to|i\s+ask\s+you\s+to|(?:you|u)\s+(?:can|could|may|should|must|need\s+to|have\s+to|gotta|ought\s+to|might\s+want\s+to|might\s+as\s+well|are\s+(?:free|allowed|welcome)\s+to)|make\s+sure\s+(?:that\s+)?(?:you|u)|go\s+ahead\s+and|feel\s+free\s+to|be\s+sure\s+to|it['’]?s\s+(?:ok|okay|fine|time)\s+(?:for\s+you\s+)?to|time\s+to|is\s+it\s+possible\s+for\s+you\s+to|please\s+(?:can|could|would)\s+you";
    let own = r"(?:i|we)(?:\s+(?:really|just|also|actually|now|kinda))?\s+(?:want|need|would\s+like|wanna|wish|hope|have|got|['’]ve\s+got)\s+to|(?:i|we)(?:['’]d|\s+would)\s+(?:like|love|prefer)\s+to|let['’]?s|let\s+us|(?:i['’]m|i\s+am)\s+(?:going|trying)\s+to|i['’]ll|i\s+will|how\s+(?:do|can|could|should)\s+i|(?:can|could|may|should)\s+i|i\s+(?:can|could|should|must)|is\s+there\s+(?:a|any)\s+way\s+to|is\s+it\s+possible\s+to|help\s+me";
    let adverb = r"please|pls|plz|just|also|kindly|simply|completely|permanently|totally|definitely|really|actually|quickly|entirely|immediately|now|then|fully|forever|already|go\s+ahead\s+and";
    let frame = format!(
        r"(?i)^[\s,]*(?:(?:{interjection})[\s,.!]+)*(?:(?P<req>{request})[\s,]+|(?P<own>{own})[\s,]+)?(?:(?:{adverb})[\s,]+)*$"
    );
    let lead = r"(?i)^(?:(?P<all>(?:every|any)thing|all(?:\s+(?:of\s+)?(?:the|that|this))?(?:\s+(?:stuff|things|info|information|details|data|memories|facts|notes))?|whatever|what|the\s+(?:stuff|things?|info|information|details|part|bit|memories|facts|notes))(?:\s+(?:that|which))?(?:\s+(?:i(?:\s+have|['’]ve)?|you(?:\s+have|['’]ve)?)(?:\s+(?:ever|just|already|previously|once))?\s+(?:told|said|shared|gave|mentioned|wrote|typed|know|knew|remember|learned|learnt|stored|saved|recorded|noted|got|have|heard)(?:\s+(?:to|with))?(?:\s+(?:you|me))?)?(?:\s+(?:earlier|before|yesterday|today|previously|last\s+time))?\s+(?:about|regarding|concerning|related\s+to|to\s+do\s+with|on|of|re:?|involving|around)\s+|(?P<told>i(?:\s+have|['’]ve)?(?:\s+(?:ever|just|already|once))?\s+(?:told|said\s+to|mentioned\s+to|shared\s+with)\s+you\s+(?:about|regarding|of)\s+)|(?P<records>(?:(?:any|all|every)(?:\s+(?:the|your|of\s+the|of\s+your))?|your)\s+(?:records?|mentions?|traces?|memor(?:y|ies)|notes?|info(?:rmation)?|data|details|references?|knowledge)(?:\s+(?:you\s+have|you['’]ve\s+got))?\s+(?:of|about|on|regarding|concerning)\s+)|(?P<about>about\s+)|(?P<that>(?:the\s+fact\s+)?that\s+))";
    let tail = r"(?i)\s+(?:please|pls|plz|thanks|thank\s+you|thx|ok|okay|right\s+now|now|from\s+now\s+on|anymore|any\s+more|forever|for\s+good|permanently|completely|entirely|altogether|as\s+well|too|again|immediately|asap|at\s+once|from\s+(?:your|the|my)\s+(?:memory|memories|notes|records|database|system|brain|head|mind|storage|files)|from\s+memory|(?:out\s+)?of\s+your\s+(?:memory|memories|notes|records)|if\s+(?:you\s+can|you\s+could|possible|you\s+don['’]?t\s+mind|that['’]s\s+ok(?:ay)?|it['’]s\s+ok(?:ay)?)|(?:that\s+|which\s+)?i(?:['’]ve|\s+have)?\s+(?:told|gave|shared|mentioned|said|typed|wrote)|(?:that\s+|which\s+)?you\s+(?:know|have|saved|stored|remember|learned|got|keep|kept)|earlier|before|yesterday|last\s+(?:week|time|month|night)|the\s+other\s+day|and\s+(?:never|don['’]?t|do\s+not|stop|please|then)|so\s+(?:that|you)|because|since|as\s+i|it['’]s\s+(?:private|personal|sensitive)|for\s+privacy|for\s+me)(?-u:\b)";
    let bare_all = r"(?i)^(?:every(?:thing|\s+thing)|all(?:\s+of\s+(?:it|that|this|them))?|all\s+(?:the\s+)?(?:stuff|things|info|information|details|data|memories))$";
    let no_topic = r"(?i)^(?:it|that|this|them|those|these|him|her|things|stuff|something|anything|all\s+(?:that|this)|the\s+whole\s+thing|the\s+rest|(?:what\s+)?i\s+(?:just\s+)?(?:said|asked|typed|wrote|mentioned)(?:\s+(?:it|that|anything))?|about\s+(?:it|that|this)|it\s+all|that\s+one|this\s+one|the\s+last\s+(?:one|thing|message|part)|what|whatever|me\s+saying\s+\w+)$";
    let copula = r"(?i)\s+(?:(?:is|was|are|were)\s+(?:called\s+|named\s+)?|(?:called|named)\s+)";
    let memory = r"(?i)(?-u:\b)(?:remember(?:s|ed|ing)?|memor(?:y|ies|ise|ize|ised|ized)|(?:from|with)\s+you|(?:told|tell|gave|give|shared|mentioned)(?:\s+\w+)?\s+(?:to\s+)?you|you\s+(?:know|knew|have|had|keep|kept|saved|stored|store|learned|learnt|got|recorded|noted|remember|hold)|you['’]ve\s+(?:got|saved|stored|learned|learnt|recorded|noted|kept)|your\s+(?:notes|records|memory|memories|database|files|knowledge|brain|head|mind|system|data)|records?\s+of|traces?\s+of|mentions?\s+of|(?:every|any)thing\s+about|all\s+(?:you\s+know|about)|what\s+you\s+know|about\s+me)(?-u:\b)";
    let personal =
        format!(r"(?i)(?-u:\b)(?:my|mine|our)(?-u:\b).*(?-u:\b)(?:{PERSONAL_NOUNS})(?-u:\b)");
    let clause_word = r"(?i)(?-u:\b)(?:and|but|so|then|also|now|ok|okay|please|anyway|actually|oh|hey|well|btw)(?-u:\b)";
    Some(English {
        trigger: Regex::new(&trigger).ok()?,
        frame: Regex::new(&frame).ok()?,
        clause_word: Regex::new(clause_word).ok()?,
        lead: Regex::new(lead).ok()?,
        tail: Regex::new(tail).ok()?,
        bare_all: Regex::new(bare_all).ok()?,
        no_topic: Regex::new(no_topic).ok()?,
        copula: Regex::new(copula).ok()?,
        memory: Regex::new(memory).ok()?,
        personal: Regex::new(&personal).ok()?,
        from_elsewhere: Regex::new(
            r"(?i)(?-u:\b)(?:from|in|on|off)\s+(?:the|my|this|that|our|his|her|a)(?-u:\b)",
        )
        .ok()?,
        mind: Regex::new(r"(?i)(?-u:\b)(?:would|do|could)\s+(?:you|u)\s+mind\s+$").ok()?,
    })
}

/// The first English forget request in sentence `s`.
fn english(s: &str) -> Option<Found> {
    let p = english_patterns()?;
    for caps in p.trigger.captures_iter(s).take(MAX_VERBS) {
        let Some(verb) = caps.get(0) else {
            continue;
        };
        // "forget-me-nots", "re-delete".
        if char_before(s, verb.start()) == Some('-') || char_at(s, verb.end()) == Some('-') {
            continue;
        }
        let gerund = caps.name("gforget").is_some() || caps.name("gdelete").is_some();
        let framed = if gerund {
            mind_frame(p, s, verb.start())
        } else {
            english_frame(p, s, verb.start())
        };
        let Some((start, frame)) = framed else {
            continue;
        };
        if let Some(found) = english_request(p, s, &caps, start, frame) {
            return Some(found);
        }
    }
    None
}

/// Where the clause holding the verb at `verb` starts, and how its opening addresses the verb;
/// `None` when the words before the verb are not a request frame ("I", "did you", "don't").
fn english_frame(p: &English, s: &str, verb: usize) -> Option<(usize, Frame)> {
    let window = floor_boundary(s, verb.saturating_sub(FRAME_WINDOW));
    let before = s.get(window..verb)?;
    let mut starts = Vec::new();
    if window == 0 {
        starts.push(0);
    }
    for (i, c) in before.char_indices() {
        if matches!(c, ',' | ';' | ':' | '(' | '—' | '–' | '"' | '“') {
            starts.push(window + i + c.len_utf8());
        }
    }
    starts.extend(p.clause_word.find_iter(before).map(|m| window + m.start()));
    starts.sort_unstable();
    starts.dedup();
    for start in starts {
        let Some(prefix) = s.get(start..verb) else {
            continue;
        };
        if let Some(c) = p.frame.captures(prefix) {
            let frame = if c.name("own").is_some() {
                Frame::Own
            } else {
                Frame::Addressed
            };
            let start = trim_space(s, start..verb).start;
            return Some((start, frame));
        }
    }
    None
}

/// The nearest char boundary at or before `at`.
pub(super) fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// "Would you mind forgetting…": a gerund is a request only after "would/do you mind".
fn mind_frame(p: &English, s: &str, verb: usize) -> Option<(usize, Frame)> {
    let m = p.mind.find(s.get(..verb)?)?;
    let (start, _) = english_frame(p, s, m.start())?;
    Some((start, Frame::Addressed))
}

/// The request made by the verb in `caps`, given its clause start and frame: topic, scope and
/// values, or `None` when it has no topic or is an errand rather than a request.
fn english_request(
    p: &English,
    s: &str,
    caps: &Captures<'_>,
    start: usize,
    frame: Frame,
) -> Option<Found> {
    let verb = caps.get(0)?;
    let (topic, mut everything, copula) = english_topic(p, s, verb.end())?;
    if topic.is_empty() || topic.len() > MAX_TOPIC {
        return None;
    }
    let clause = start..s.len();
    let (topic, values) = settle(s, &clause, topic, copula);
    let text = s.get(topic.clone())?;
    if text.is_empty() || p.no_topic.is_match(text) {
        return None;
    }
    if ["me", "myself", "us"].contains(&text.to_ascii_lowercase().as_str()) {
        everything = true;
    }
    let memory = p.memory.is_match(s);
    let accepted = match frame {
        Frame::Own => memory,
        Frame::Addressed => {
            let deleting = caps.name("delete").is_some() || caps.name("gdelete").is_some();
            // "remove my name from the list" is an errand elsewhere; "from your memory" is not.
            let elsewhere = p.from_elsewhere.is_match(text);
            !deleting || memory || (p.personal.is_match(text) && !elsewhere)
        }
    };
    accepted.then_some(Found {
        clause,
        topic,
        everything,
        values,
    })
}

/// The topic after the verb ending at `from`: its range, whether it asks for everything about
/// it, and the value a "that my PIN is 4412" clause or "my wife's name is Mary" states.
fn english_topic(
    p: &English,
    s: &str,
    from: usize,
) -> Option<(Range<usize>, bool, Option<Range<usize>>)> {
    let mut pos = trim_space(s, from..s.len()).start;
    let mut everything = false;
    for _ in 0..3 {
        let Some(c) = p.lead.captures(s.get(pos..)?) else {
            break;
        };
        let end = c.get(0)?.end();
        if c.name("that").is_some() {
            let next = s.get(pos + end..)?.split_whitespace().next().unwrap_or("");
            let subject = [
                "i", "i'm", "i’m", "i've", "i’ve", "i'd", "my", "we", "our", "me",
            ]
            .contains(&next.to_ascii_lowercase().as_str());
            if !subject {
                break;
            }
        }
        everything |= ["all", "records", "told"]
            .iter()
            .any(|g| c.name(g).is_some());
        pos += end;
    }
    let mut end = topic_end(s, pos);
    if let Some(m) = s.get(pos..end).and_then(|t| p.tail.find(t)) {
        end = pos + m.start();
    }
    let topic = trim_space(s, pos..end);
    let text = s.get(topic.clone())?;
    if !everything && p.bare_all.is_match(text) {
        everything = true;
    }
    // "that my PIN is 4412", "my wife's name is Mary": the subject is the topic, the
    // predicate a stated value.
    let mut copula = None;
    let mut topic = topic;
    if let Some(m) = p
        .copula
        .find(text)
        .filter(|m| m.start() > 0 && m.end() < text.len())
    {
        copula = Some(trim_space(s, topic.start + m.end()..topic.end));
        topic = topic.start..topic.start + m.start();
    }
    Some((topic, everything, copula))
}

/// Where a topic starting at `from` ends at the latest: the next clause punctuation, or a
/// period that ends the sentence (not the one in "3.5" or "a@b.com").
fn topic_end(s: &str, from: usize) -> usize {
    let rest = s.get(from..).unwrap_or("");
    for (i, c) in rest.char_indices() {
        let at = from + i;
        let stop = match c {
            ',' | ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']' | '"' | '“' | '”' | '，' | '。'
            | '；' | '！' | '？' | '：' => true,
            '.' => char_at(s, at + 1).is_none_or(char::is_whitespace),
            _ => false,
        };
        if stop {
            return at;
        }
    }
    s.len()
}
