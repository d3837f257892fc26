//! The English rule table: a verb (or noun) pattern per phrasing, who holds the fact and what
//! kind of value follows.

use std::sync::OnceLock;

use regex::{Captures, Regex, RegexSet, RegexSetBuilder};

use super::super::lexicon::{canonical_species, NOT_NAMES, SPECIES};
use super::super::normalize;
use super::super::scan;
use super::super::types::{Found, Slot, Subject};
use super::context::Context;
use super::left::{blocked_before, holder, Holder};
use super::values::{self, Read};

/// Who holds the fact a rule matches.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    /// The subject of the verb ("I live in…", "my sister works at…").
    Actor,
    /// As `Actor`, or the speaker when the clause opens the sentence without a subject ("Moved
    /// to Porto last month!").
    ActorOrDropped,
    /// The possessor of the noun the match starts with ("my cat is called…", "Alex's wife…").
    Possessor,
    /// As `Possessor`, the speaker when nobody is named ("home is Porto now").
    PossessorOrSpeaker,
}

/// What value follows a rule's match.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    Place,
    Org,
    /// An occupation, whatever the noun ("I became a locksmith").
    JobOpen,
    /// An occupation only if it looks like one ("I'm a nurse", not "I'm a big fan").
    JobWeak,
    Name,
    /// A short noun phrase (favourites).
    Phrase,
    /// Something liked: a phrase that is not a pronoun or a clause.
    Liked,
    /// The rule's `v` group.
    Group,
    /// The whole match ("eating meat").
    Matched,
    /// No value (a negation that names none: "I quit my job").
    Empty,
}

struct Rule {
    slot: Slot,
    who: Who,
    val: Val,
    /// The phrase itself ends the value ("moved out of", "quit").
    negates: bool,
    pattern: &'static str,
}

const fn rule(slot: Slot, who: Who, val: Val, negates: bool, pattern: &'static str) -> Rule {
    Rule {
        slot,
        who,
        val,
        negates,
        pattern,
    }
}

/// Links between a noun and the name it is given ("is called", "'s", ",", "named", "will be
/// called", "has a new name:", "name: …").
macro_rules! named_link {
    () => {
        r"(?:['’]s\s+(?:(?:now|still|officially|definitely|probably)\s+)*(?:going\s+to|gonna)\s+be\s+(?:called|named)\s+|(?:['’]s)?(?:\s+(?:full\s+|new\s+|real\s+|official\s+|final\s+)?name)?\s*(?:(?:is|['’]s|will|['’]ll|has\s+been|got|gets)\s+(?:(?:now|still|officially|finally|definitely|actually|also|just|probably)\s+)*(?:(?:going\s+to|gonna)\s+be\s+|be\s+)?(?:called|named|renamed(?:\s+to)?)\s+|(?:has\s+)?(?:been\s+)?changed\s+to\s+|(?:is|['’]s|will\s+be|['’]ll\s+be|is\s+going\s+to\s+be|has\s+been)\s+(?:(?:now|still|officially|finally|definitely|actually|also)\s+)*|(?:has|got|gets|now\s+has)\s+(?:a\s+)?(?:new\s+)?name\s*(?:[:—–,]|\s-)\s*(?:(?:it['’]s|which\s+is)\s+)?|\s?[:—–]\s*|,\s*|(?:now\s+|still\s+)?(?:called|named|goes\s+by|answers\s+to|responds\s+to)\s+(?:the\s+name\s+(?:of\s+)?)?)?)"
    };
}

use Slot::*;
use Val::*;
use Who::*;

#[rustfmt::skip]
const RULES: &[Rule] = &[
    // Residence.
    rule(Residence, Actor, Place, false, r"\b(?:live|lives|living|reside|resides|residing|(?P<past>lived|resided))\s+(?:(?:now|currently|still|permanently|full-time|over|out|down|up)\s+)*(?:in|near|outside(?:\s+of)?|on)\s+"),
    rule(Residence, ActorOrDropped, Place, false, r"\b(?:moved|relocated|emigrated|immigrated|settled|made\s+the\s+move)\s+(?:(?:back|over|down|up|out|abroad|home|permanently|here|there)\s+)*(?:to|into|in)\s+(?:the\s+city\s+of\s+)?"),
    rule(Residence, Actor, Place, true, r"\bmoved\s+(?:out\s+of|away\s+from)\s+"),
    rule(Residence, Actor, Place, false, r"\b(?:ended\s+up|finished|just\s+finished)\s+(?:moving|relocating)\s+(?:back\s+)?to\s+"),
    rule(Residence, Actor, Place, false, r"\b(?:bought|purchased|rented)\s+(?:a|an|our|my)\s+(?:new\s+|little\s+|small\s+)?(?:house|home|flat|apartment|condo|place|cottage)\s+(?:in|near)\s+"),
    rule(Residence, Actor, Place, false, r"\b(?:am|['’]m|are|['’]re)\s+(?:(?:now|finally|officially|permanently|happily|already)\s+)*back\s+(?:home\s+)?in\s+"),
    rule(Residence, Actor, Group, false, r"\bbeen\s+(?:living\s+|based\s+|settled\s+)?in\s+(?P<v>{NAME})\s+(?:for\s+(?:(?:about|almost|over|nearly|more\s+than|a\s+few|several|a|an|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+)*(?:years?|months?|decades?|while|ages)|since\s+(?:\d{4}|last\s+\w+|(?-i:\p{Lu})\w+))"),
    rule(Residence, PossessorOrSpeaker, Place, false, r"\bhome\s+(?:(?:base|now|these\s+days|nowadays|for\s+(?:me|us))\s+)*(?:is|['’]s)\s+(?:(?:now|officially|finally)\s+)*(?:in\s+)?"),
    rule(Residence, Actor, Group, false, r"\bcall\s+(?P<v>{NAME})\s+home\b"),
    rule(Residence, Actor, Group, false, r"\bmade\s+(?P<v>{NAME})\s+(?:my|our)\s+(?:new\s+|permanent\s+)?home\b"),
    rule(Residence, Actor, Place, false, r"\bbased\s+(?:in|out\s+of)\s+"),
    rule(Residence, PossessorOrSpeaker, Place, false, r"\bnew\s+(?:place|flat|apartment|house|home|address)\s+(?:is\s+)?in\s+"),
    rule(Residence, Actor, Place, false, r"\b(?:an?\s+)?(?:permanent\s+|legal\s+|new\s+|proud\s+)?(?:resident|citizen)\s+of\s+"),
    // Employer.
    rule(Employer, Actor, Org, false, r"\b(?:work|works|working|(?P<past>worked))\s+(?:(?:now|currently|still|full-time|part-time|remotely|freelance)\s+)*(?:at|for)\s+"),
    rule(Employer, ActorOrDropped, Org, false, r"\b(?:joined|(?:started|began|start|starting)\s+(?:working\s+|(?:a|an|my)\s+(?:new\s+)?(?:full-time\s+|part-time\s+|permanent\s+|temporary\s+)?(?:job|position|role|post|gig|internship|contract|placement)\s+)?(?:at|for|with)|got\s+(?:a\s+|an\s+)?(?:new\s+)?(?:position|role|post|internship|offer)\s+(?:at|with|from)|got\s+(?:a\s+)?(?:new\s+)?job\s+(?:at|with)|got\s+hired\s+(?:at|by)|hired\s+by|took\s+(?:a\s+)?(?:new\s+)?(?:job|position|role)\s+(?:at|with)|accepted\s+(?:a\s+|an\s+)?(?:new\s+)?(?:job|offer|position|role)\s+(?:at|with|from)|signed\s+(?:on\s+)?with|switched\s+jobs?\s+to|jumped\s+ship\s+to|landed\s+(?:a\s+)?(?:new\s+)?job\s+(?:at|with)|employed\s+(?:at|by)|went\s+to\s+work\s+(?:at|for))\s+"),
    rule(Employer, ActorOrDropped, Org, true, r"\b(?:(?:left|quit)\s+my\s+(?:job|position|role)\s+(?:at|with)|resigned\s+from|retired\s+from|(?:laid\s+off|fired|let\s+go|sacked|made\s+redundant)\s+(?:from|by|at)|left|quit)\s+"),
    rule(Employer, ActorOrDropped, Empty, true, r"\b(?:(?:quit|left|lost)\s+my\s+(?:job|position)|laid\s+off|fired|sacked|let\s+go|made\s+redundant|resigned)\b"),
    rule(Employer, Actor, Org, false, r"\b(?:am|['’]m|are|['’]re)\s+(?:(?:now|currently|still)\s+)+(?:at|with)\s+"),
    rule(Employer, Actor, Group, false, r"\b(?:am|['’]m|are|['’]re)\s+at\s+(?P<v>{ORG})\s+(?:now|these\s+days|nowadays)\b"),
    rule(Employer, Actor, Group, false, r"\bbeen\s+(?:working\s+)?(?:at|with)\s+(?P<v>{ORG})\s+(?:for\s+(?:(?:about|almost|over|nearly|more\s+than|a\s+few|several|a|an|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+)*(?:years?|months?|decades?)|since\s+(?:\d{4}|last\s+\w+|(?-i:\p{Lu})\w+))"),
    rule(Employer, Possessor, Org, false, r"\b(?:new\s+|current\s+)?(?:employer|workplace|company)\s+(?:is|['’]s)\s+(?:now\s+)?"),
    rule(Employer, Possessor, Org, false, r"\b(?:new\s+)?(?:job|gig|position|role|post)\s+(?:is|['’]s)\s+(?:now\s+)?(?:at|with)\s+"),
    // Job.
    rule(Job, Actor, JobOpen, false, r"\b(?:(?P<past>worked)|work|works|working|started\s+working|employed|hired|got\s+(?:a\s+)?(?:new\s+)?job|took\s+(?:a\s+)?(?:new\s+)?job|got\s+hired|trained|retrained|qualified|signed\s+on|freelancing|moonlighting|(?:make|makes|making|earn|earns|earning)\s+(?:a|my|our|their)\s+living|(?:started|began|start|starting)|(?:taken|take|taking|accepted|landed|found|secured)\s+(?:a|an|the|my)\s+(?:new\s+)?(?:job|position|role|post|gig))\b[^,.;:!?]{0,40}?\s+as\s+(?:an?\s+|the\s+)?"),
    rule(Job, ActorOrDropped, JobOpen, false, r"\b(?:became|become|promoted\s+to|switched\s+careers?\s+to|changed\s+careers?\s+to|switched\s+to\s+being|went\s+back\s+to\s+being|landed\s+(?:a\s+)?(?:new\s+)?job\s+as|took\s+a\s+job\s+as|started\s+a\s+new\s+job\s+as|hired\s+(?:on\s+)?as)\s+(?:an?\s+|the\s+)?"),
    rule(Job, Actor, JobWeak, false, r"\b(?:am|['’]m|is|are|['’]re)\s+(?:(?:now|currently|still|officially|actually|also|finally|just|no\s+longer|not|never|really|basically|technically)\s+)*(?:an?\s+)(?:(?:qualified|certified|licensed|trained|registered|full-time|part-time|practicing|practising|professional|freelance)\s+)?"),
    rule(Job, Actor, Group, false, r"\b(?:am|['’]m|is|are|['’]re|got)\s+(?:(?:now|currently|officially|finally|just|no\s+longer|not|happily|recently)\s+)*(?P<v>retired|unemployed|self-employed|jobless|between\s+jobs|semi-retired|out\s+of\s+work)\b"),
    rule(Job, ActorOrDropped, Group, false, r"\b(?P<v>retired)\s*(?:[.!,;]|$|\s+(?:last|this|from|in|early|recently|a\s+few|two|three|after))"),
    rule(Job, Actor, Group, false, r"\b(?:work|works|working|(?P<past>worked)|am|['’]m|is|['’]s)\s+(?:(?:now|currently|still|mainly|mostly|full-time|part-time|professionally)\s+)*in\s+(?P<v>{FIELD})(?:\s*(?:[.!,;:)]|$)|\s+(?:now|these|nowadays|at|for|and|but|since|as|full-time|part-time|professionally|too|anymore|again|though)\b)"),
    rule(Job, Actor, JobWeak, false, r"\b(?:['’]ve|have|has)\s+been\s+(?:an?\s+)"),
    rule(Job, Possessor, JobWeak, false, r"\b(?:new\s+|current\s+)?(?:job|job\s+title|title|position|occupation|profession|career|day\s+job|role)\s+(?:(?:now|these\s+days)\s+)?(?:is|['’]s)\s+(?:(?:now|officially)\s+)*(?:as\s+)?(?:an?\s+)?"),
    // Relationship status.
    rule(RelationshipStatus, Actor, Group, false, r"\b(?:(?:now|officially|finally|happily|newly|recently|just|still|not|no\s+longer|never|already|legally|secretly|currently)\s+)*(?P<v>single|married|engaged|divorced|separated|widowed|hitched|dating|in\s+a\s+(?:(?:committed|serious|new|happy|long-term|long-distance|steady|stable|loving|monogamous|open)\s+)?relationship|seeing\s+someone(?:\s+new)?|a\s+widow(?:er)?|spoken\s+for|off\s+the\s+market|unattached|living\s+together|cohabiting)\b"),
    rule(RelationshipStatus, Actor, Group, false, r"\b(?:was|were|became|got)\s+(?:(?:recently|tragically|sadly|suddenly)\s+)?(?P<v>widowed)\b"),
    rule(RelationshipStatus, ActorOrDropped, Group, false, r"\b(?P<v>tied\s+the\s+knot|got\s+hitched|said\s+(?:I|we)\s+do)\b"),
    // Partner.
    rule(Partner, Possessor, Name, false, concat!(r"\b(?:girlfriend|boyfriend|gf|bf|wife|husband|hubby|partner|fianc[ée]e?|spouse|other\s+half|significant\s+other|better\s+half)\b", named_link!())),
    rule(Partner, Actor, Name, false, r"\b(?:dating|seeing|going\s+out\s+with|married(?:\s+to)?|engaged\s+to|in\s+a\s+(?:committed\s+|serious\s+|new\s+|happy\s+)?relationship\s+with|together\s+with)\s+(?:(?:someone|somebody|a\s+(?:new\s+)?(?:guy|girl|man|woman|person|lady|fellow|boy|bloke|chap))\s+(?:new\s+)?(?:(?:called|named)\s+|(?:who\s+)?goes\s+by\s+(?:the\s+name\s+(?:of\s+)?)?|by\s+the\s+name\s+(?:of\s+)?))?"),
    rule(Partner, Actor, Name, false, r"\b(?:am|['’]m|are|['’]re)\s+(?:(?:now|still|happily|officially|currently)\s+)+with\s+"),
    rule(Partner, Actor, Group, false, r"\b(?:am|['’]m|are|['’]re)\s+with\s+(?P<v>{NAME})\s+(?:now|these\s+days|nowadays)\b"),
    rule(Partner, Actor, Name, true, r"\b(?:broke\s+up\s+with|split\s+up\s+with|divorced|dumped|separated\s+from|stopped\s+(?:dating|seeing)|no\s+longer\s+with|not\s+with)\s+"),
    // Child.
    rule(Child, Possessor, Name, false, concat!(r"\b(?:(?:baby|little|eldest|oldest|youngest|older|younger|middle|newborn|first|second|third|new)\s+)*(?P<q>son|daughter|kid|child|baby\s+boy|baby\s+girl|baby|boy|girl|stepson|stepdaughter|little\s+one|firstborn|newborn)\b", named_link!())),
    rule(Child, PossessorOrSpeaker, Name, false, concat!(r"\b(?P<q>baby)\b", named_link!())),
    rule(Child, ActorOrDropped, Name, false, r"\b(?:picked|chose|chosen|settled\s+on|decided\s+on|found|came\s+up\s+with|went\s+with|agreed\s+on|have|got)\s+(?:a|the|our)\s+(?:(?:new|final)\s+)?name\s+for\s+(?:the|our|my)\s+(?:(?:new|little)\s+)*(?P<q>baby\s+boy|baby\s+girl|baby|son|daughter|kid|child)\b\s*(?:[:—–,]|\s-|\s+(?:is|it['’]s))\s*"),
    rule(Child, ActorOrDropped, Name, false, r"\b(?:had|welcomed|adopted|gave\s+birth\s+to)\s+(?:a\s+|our\s+|my\s+)?(?:(?:baby|little|new|healthy|beautiful)\s+)*(?P<q>boy|girl|son|daughter|baby)\b\s*,?\s*(?:(?:named|called)\s+)?"),
    rule(Child, Actor, Name, false, r"\bnamed\s+(?:our|my|the)\s+(?:(?:baby|little|new|newborn)\s+)*(?P<q>son|daughter|baby\s+boy|baby\s+girl|baby|boy|girl|kid|child)\s+"),
    // Pet.
    rule(Pet, PossessorOrSpeaker, Name, false, concat!(r"\b(?:(?:new|little|old|rescue|adopted|sweet|baby|lazy|fat|orange|black|white|grey|gray|tabby|ginger|senior|beloved)\s+)*(?P<q>{SPECIES})\b", named_link!())),
    rule(Pet, Actor, Name, false, r"\brenamed\s+(?:(?:my|our|the)\s+)?(?:(?:new|little|old)\s+)*(?P<q>{SPECIES})\s+(?:to\s+)?"),
    rule(Pet, Possessor, Group, true, r"\b(?:(?:old|sweet|beloved|dear|poor|little)\s+)*(?P<q>{SPECIES})\s+(?:(?P<v>{NAME})\s+)?(?:died|passed\s+away|passed|ran\s+away|is\s+gone|was\s+put\s+down|got\s+put\s+down)\b"),
    rule(Pet, Actor, Empty, true, r"\b(?:gave\s+away|rehomed|re-homed|lost|gave\s+up|got\s+rid\s+of)\s+(?:my|our|the)\s+(?:(?:old|sweet|little)\s+)*(?P<q>{SPECIES})\b"),
    rule(Pet, Actor, Empty, false, r"\b(?:have|own|keep|has|owns)\s+(?:a|an|any)\s+(?P<q>{SPECIES})\b"),
    rule(Pet, Actor, Group, false, r"\b(?:have|has|own|owns|keep|keeps|(?P<neg>lost|gave\s+away|rehomed|re-homed|said\s+goodbye\s+to))\s+(?P<v>{NAME})\s+the\s+(?P<q>{SPECIES})\b"),
    // Preference.
    rule(Preference, Possessor, Phrase, false, r"\b(?:(?:new|current|all-time|absolute|top|very|ultimate)\s+)*(?:favou?rite|fave|fav|go-to)\s+(?P<q>[a-z]+(?:[\s-][a-z]+){0,2}?)\s+(?:(?:of\s+all\s+time|these\s+days|right\s+now|at\s+the\s+moment|lately|nowadays|now|ever|so\s+far|this\s+year|in\s+the\s+world)\s+)?(?:is|['’]s|are|has\s+become|has\s+been|have\s+been|isn['’]t|is\s+not|is\s+no\s+longer)\s+(?:(?:now|currently|still|probably|definitely|easily|actually|officially|hands\s+down|no\s+longer|not)\s+)*"),
    rule(Preference, PossessorOrSpeaker, Phrase, false, r"\b(?:(?:new|current|all-time|absolute|top|ultimate)\s+)*(?:favou?rite|fave|fav|go-to)\s+(?P<q>[a-z]+(?:[\s-][a-z]+){0,2}?)(?:\s+(?:at\s+the\s+moment|right\s+now|these\s+days|lately|now|of\s+all\s+time|this\s+year|so\s+far))?\s*(?:[:—–=]|\s-)\s*(?:(?:now|currently|still)\s+)?"),
    rule(Preference, Possessor, Phrase, false, r"\b(?P<q>[a-z]+)\s+of\s+choice\s+(?:(?:these\s+days|right\s+now|lately|nowadays|now)\s+)?(?:is|['’]s|has\s+become|has\s+been|have\s+been|isn['’]t|is\s+no\s+longer|:)\s+(?:(?:now|currently|still|no\s+longer|not)\s+)*"),
    // Likes.
    rule(Likes, Actor, Liked, false, r"\b(?:like|likes|love|loves|enjoy|enjoys|adore|adores|dig|digs|(?:am|['’]m|is|are|['’]re)\s+(?:(?:really|totally|so|very|quite|not|no\s+longer|now|still)\s+)*(?:into|obsessed\s+with|crazy\s+about|passionate\s+about|a\s+(?:big\s+|huge\s+)?fan\s+of|keen\s+on|fond\s+of|hooked\s+on)|got\s+into|gotten\s+into|getting\s+into|fell\s+in\s+love\s+with|(?P<neg>hate|hates|dislike|dislikes|can['’]t\s+stand|cannot\s+stand|detest|detests|despise|despises|gone\s+off|went\s+off|got\s+tired\s+of|(?:am|['’]m)\s+(?:sick|tired)\s+of|grew\s+out\s+of|lost\s+interest\s+in))\s+"),
    // Diet.
    rule(Diet, Actor, Group, false, r"\b(?:(?:went|gone|go|going|turned|stayed|staying|eat|eats|eating|living|am|['’]m|is|are|['’]re)\s+)?(?:(?:now|fully|completely|officially|totally|strictly|mostly|still|not|no\s+longer|never|back|full|a)\s+)*(?P<v>{DIETADJ})\b"),
    rule(Diet, Actor, Matched, false, r"\b(?:eat|eats|eating|(?P<past>ate))\s+(?:(?:any|no)\s+)?(?:meat|fish|pork|beef|dairy|eggs|chicken|seafood|red\s+meat|animal\s+products|gluten|halal|kosher)(?:[^\w-]|$)"),
    rule(Diet, Actor, Group, true, r"\b(?:gave\s+up|cut\s+out|ditched|dropped|went\s+off|quit|kicked|stopped)\s+(?P<v>meat|dairy|gluten|sugar|carbs|pork|beef|fish|eggs|red\s+meat|animal\s+products|{DRINKS})\b"),
    rule(Diet, Actor, Matched, false, r"\b(?:drink|drinks|drinking|(?P<past>drank))\s+(?:(?:any|no)\s+)?(?:{DRINKS})\b"),
    rule(Diet, Actor, Group, false, r"\b(?:on|follow|follows|following|(?P<past>followed)|doing|do|started|start|starting|began|tried|trying|adopted|switched\s+to|went\s+on|gone\s+on|going\s+on|keep|keeping|stick\s+to|sticking\s+to|stuck\s+to|stick\s+with|sticking\s+with|eat|eating|live|living)\s+(?:an?|the|my)\s+(?:(?:strict|strictly|mostly|fully|mainly|new|whole-food|whole\s+food)\s+)*(?P<v>{DIET})\s+(?:diet|lifestyle|regime|regimen|plan|way\s+of\s+eating|eating\s+plan)\b"),
    rule(Diet, Possessor, Group, false, r"\bdiet\s+(?:(?:now|these\s+days|nowadays)\s+)?(?:is|['’]s)\s+(?:(?:now|mostly|strictly|fully|still|no\s+longer|not)\s+)*(?:an?\s+)?(?P<v>{DIET})\b"),
];

struct Compiled {
    set: Option<RegexSet>,
    regexes: Vec<Option<Regex>>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let regexes: Vec<Option<Regex>> = RULES.iter().map(|r| scan::compile(r.pattern)).collect();
        let set = RegexSetBuilder::new(
            regexes
                .iter()
                .map(|r| r.as_ref().map_or("[^\\s\\S]", |r| r.as_str())),
        )
        .case_insensitive(true)
        .size_limit(1 << 26)
        .dfa_size_limit(1 << 24)
        .build()
        .ok();
        Compiled { set, regexes }
    })
}

/// Run every rule on the sentence.
pub(super) fn apply(ctx: &Context, out: &mut Vec<Found>) {
    let compiled = compiled();
    let Some(set) = &compiled.set else {
        return;
    };
    for index in set.matches(ctx.text).iter() {
        let (Some(rule), Some(Some(re))) = (RULES.get(index), compiled.regexes.get(index)) else {
            continue;
        };
        for caps in re.captures_iter(ctx.text) {
            if let Some(found) = apply_one(ctx, rule, &caps) {
                out.push(found);
            }
        }
    }
}

fn apply_one(ctx: &Context, rule: &Rule, caps: &Captures) -> Option<Found> {
    let whole = caps.get(0)?;
    // "Acme hired me as a designer": the job is the speaker's, whoever hired them.
    let hired = rule.slot == Job && hires_the_speaker(whole.as_str());
    let holder = match rule.who {
        _ if hired => Some(Holder {
            subject: Subject::Speaker,
            negated: false,
            perfect: false,
            start: whole.start(),
        }),
        Actor => holder(ctx, whole.start(), false),
        ActorOrDropped => holder(ctx, whole.start(), true),
        Possessor => possessor(ctx, whole.start(), false),
        PossessorOrSpeaker => possessor(ctx, whole.start(), true),
    }?;
    if blocked_before(ctx, holder.start) && !dated_move(ctx, rule, holder.start, whole.end()) {
        return None;
    }
    if caps.name("past").is_some() && !holder.perfect {
        return None;
    }
    let read = read_value(ctx, rule.val, caps, whole.end())?;
    let (slot, value) = retarget(rule.slot, &holder.subject, whole.as_str(), read.text)?;
    if slot == Residence && values::temporary_after(ctx, read.end) {
        return None;
    }
    let negated = rule.negates
        || holder.negated
        || caps.name("neg").is_some()
        || says_not(whole.as_str())
        || values::anymore_after(ctx, read.end);
    if value.is_empty() && !negated {
        return None;
    }
    if slot == Diet && !negated && value.to_lowercase().starts_with("drink") {
        // "I drink coffee" tells a habit worth keeping only when it ends ("I no longer drink
        // coffee"); a cup now and then is no diet.
        return None;
    }
    let qualifier = qualifier_for(ctx, slot, caps);
    if slot == Pet && qualifier.is_empty() {
        return None;
    }
    Some(Found {
        subject: holder.subject,
        slot,
        qualifier,
        value,
        negated,
        at: whole.start(),
    })
}

/// Whether a match starts with a verb of hiring whose object is the speaker ("hired me as").
fn hires_the_speaker(matched: &str) -> bool {
    let lower = matched.to_lowercase();
    let mut words = lower.split_whitespace();
    let verb = words.next().unwrap_or("");
    let object = words.next().unwrap_or("");
    matches!(
        verb,
        "hired" | "employed" | "took" | "brought" | "recruited" | "signed"
    ) && matches!(object, "me" | "us")
}

/// Verbs of moving house whose year does not make the move history ("In 2023 I moved to
/// Porto").
const MOVES: &[&str] = &["moved", "relocated", "emigrated", "immigrated", "settled"];

/// Words after a dated move that tell of a later one ("…, then in 2018 to Berlin").
const LATER: &[&str] = &[
    "then",
    "later",
    "after",
    "afterwards",
    "before",
    "until",
    "till",
    "but",
    "left",
    "since",
];

/// A move blocked only by the year it names, with nothing after it telling of another move:
/// the latest known residence.
fn dated_move(ctx: &Context, rule: &Rule, start: usize, end: usize) -> bool {
    let moved = rule.slot == Residence
        && !rule.negates
        && ctx
            .toks
            .iter()
            .any(|t| t.start >= start && t.end <= end && MOVES.contains(&t.lower.as_str()));
    let later = ctx
        .toks
        .iter()
        .any(|t| t.start >= end && LATER.contains(&t.lower.as_str()));
    moved && !later && !super::left::blocked_before_but_a_year(ctx, start)
}

/// The value a rule reads, and where it ends.
fn read_value(ctx: &Context, val: Val, caps: &Captures, end: usize) -> Option<Read> {
    let read = match val {
        Place => values::place(ctx, end)?,
        Org => values::org(ctx, end)?,
        Name => values::name(ctx, end)?,
        JobOpen | JobWeak => {
            let read = values::job_phrase(ctx, end)?;
            let ok = if val == JobWeak {
                values::is_occupation(&read.text)
            } else {
                !is_pronoun_start(&read.text) || values::is_occupation(&read.text)
            };
            if !ok {
                return None;
            }
            read
        }
        Phrase => values::plain_words(ctx, end, 5)?,
        Liked => liked(ctx, end)?,
        Group => {
            let m = caps.name("v")?;
            Read {
                text: m.as_str().trim().to_string(),
                start: m.start(),
                end: m.end(),
            }
        }
        Matched => {
            let m = caps.get(0)?;
            Read {
                text: m.as_str().trim().to_string(),
                start: m.start(),
                end: m.end(),
            }
        }
        Empty => Read {
            text: String::new(),
            start: end,
            end,
        },
    };
    Some(Read {
        text: scan::trim_value(&read.text).to_string(),
        ..read
    })
}

/// Something liked: a short phrase that is not a pronoun, a clause or a verb of saying.
fn liked(ctx: &Context, end: usize) -> Option<Read> {
    let read = values::plain_words(ctx, end, 4)?;
    let lower = read.text.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    let refused = is_pronoun_start(&lower)
        || matches!(
            first,
            "think"
                | "say"
                | "believe"
                | "imagine"
                | "know"
                | "see"
                | "admit"
                | "point"
                | "remind"
                | "mention"
                | "keep"
                | "be"
                | "have"
                | "go"
                | "get"
                | "make"
                | "do"
                | "hear"
                | "call"
                | "help"
                | "thank"
                | "tell"
        );
    (!refused).then_some(read)
}

fn is_pronoun_start(text: &str) -> bool {
    let lower = text.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        "you"
            | "it"
            | "that"
            | "this"
            | "them"
            | "him"
            | "her"
            | "when"
            | "how"
            | "what"
            | "being"
            | "me"
            | "us"
            | "everything"
            | "anything"
            | "nothing"
            | "something"
            | "those"
            | "these"
            | "myself"
            | "yourself"
            | "whatever"
            | "one"
            | "someone"
            | "anyone"
            | "everyone"
            | "doing"
            | "team"
            | "family"
            | "whole"
            | "group"
            | "unit"
            | "mother"
            | "father"
            | "mom"
            | "dad"
            | "mum"
            | "parent"
            | "wife"
            | "husband"
    ) || super::super::lexicon::NOT_OCCUPATIONS.contains(&lower.trim())
}

/// Move a match to the slot it really states: "X is based in" names headquarters when X is an
/// organization; "became a vegetarian" is a diet; "became a mother" is no job.
fn retarget(slot: Slot, subject: &Subject, matched: &str, value: String) -> Option<(Slot, String)> {
    if slot == Employer && value.starts_with(|c: char| c.is_ascii_digit()) {
        // "I'm at 5 now", "I started at 9": a number or a time, not an employer.
        return None;
    }
    let lower = matched.trim_end().to_lowercase().replace('’', "'");
    let being_with = lower.ends_with("with")
        && ["am ", "'m ", "are ", "'re "]
            .iter()
            .any(|b| lower.starts_with(b));
    if slot == Employer && being_with && !looks_like_org(&value) {
        // "I'm still with Priya" is a partner; only an organization's name makes it a job.
        return None;
    }
    if slot == Partner && looks_like_org(&value) {
        // "I'm still with Deloitte": an employer, not a partner.
        return None;
    }
    let lower_match = matched.to_lowercase();
    let project_or_org =
        matches!(subject, Subject::Named(n) if n.starts_with("Project") || looks_like_org(n));
    if slot == Job && project_or_org {
        // "Project Heron's in QA now": a phase, not a line of work.
        return None;
    }
    if slot == Residence && lower_match.contains("based") && matches!(subject, Subject::Named(_)) {
        return Some((Headquarters, value));
    }
    if slot == Job {
        let lower = value.to_lowercase();
        let diet = [
            "vegetarian",
            "vegan",
            "pescatarian",
            "pescetarian",
            "veggie",
            "flexitarian",
        ];
        if diet.contains(&lower.as_str()) {
            return Some((Diet, value));
        }
        let status = ["widow", "widower", "single", "newlywed"];
        if status.contains(&lower.as_str()) {
            return Some((RelationshipStatus, value));
        }
    }
    Some((slot, value))
}

/// Last words that make a name an organization's ("Kestrel Foods", "Acme Corp").
#[rustfmt::skip]
const ORG_ENDINGS: &[&str] = &[
    "inc", "ltd", "llc", "corp", "corporation", "co", "company", "group", "bank", "labs", "lab",
    "technologies", "technology", "tech", "analytics", "logistics", "foods", "marine", "telecom",
    "pharma", "dynamics", "consulting", "partners", "holdings", "systems", "solutions", "media",
    "studios", "capital", "ventures", "industries", "airlines", "insurance", "health", "energy",
    "motors", "software", "networks", "associates", "agency", "university", "college", "hospital",
];

/// Whether a name reads as an organization's: an organization ending or an acronym ("IBM").
pub(super) fn looks_like_org(name: &str) -> bool {
    let last = name.split_whitespace().last().unwrap_or("");
    let acronym = last.chars().count() >= 2 && last.chars().all(|c| c.is_ascii_uppercase());
    acronym || ORG_ENDINGS.contains(&last.to_lowercase().trim_end_matches('.'))
}

/// Whether the matched words themselves negate ("I'm not", "is no longer").
pub(super) fn says_not(matched: &str) -> bool {
    let lower = matched.to_lowercase().replace('’', "'");
    lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| {
            matches!(w, "not" | "never" | "isn't" | "aren't") || w.ends_with("n't") && w != "can't"
        })
        || lower.contains("no longer")
}

/// The qualifier of a match: the species, child kind or favourite kind its `q` group names.
fn qualifier_for(ctx: &Context, slot: Slot, caps: &Captures) -> String {
    let q = caps.name("q").map(|m| m.as_str().to_lowercase());
    match slot {
        Pet => q
            .or_else(|| species_in(ctx))
            .map(|s| canonical_species(&s))
            .unwrap_or_default(),
        Child => q.map(|q| child_kind(&q).to_string()).unwrap_or_default(),
        Preference => q
            .map(|q| {
                let words: Vec<String> = q
                    .split([' ', '-'])
                    .map(super::super::lexicon::canonical_preference)
                    .collect();
                normalize::qualifier(words.iter().map(String::as_str))
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// "baby girl" → "daughter", "kid" → "child".
fn child_kind(q: &str) -> &'static str {
    let last = q.split_whitespace().last().unwrap_or(q);
    match last {
        "son" | "boy" | "stepson" => "son",
        "daughter" | "girl" | "stepdaughter" => "daughter",
        _ => "child",
    }
}

/// The first pet species the sentence names.
pub(super) fn species_in(ctx: &Context) -> Option<String> {
    ctx.toks
        .iter()
        .find(|t| SPECIES.contains(&t.lower.as_str()))
        .map(|t| t.lower.clone())
}

/// Adjectives between a possessor and its noun ("my new cat").
const POSSESSED_ADJECTIVES: &[&str] = &[
    "new", "current", "little", "old", "all-time", "absolute", "first", "beloved", "sweet",
    "lovely", "dear", "baby", "eldest", "oldest", "youngest", "older", "younger", "top", "very",
    "rescue", "adopted", "lazy", "fat", "orange", "black", "white", "grey", "gray", "tabby",
    "ginger", "senior", "middle", "newborn", "second", "third", "ultimate", "real", "full",
    "monthly", "weekly", "annual", "yearly", "poor",
];

/// Verbs of having before "a cat named …".
const HAVING: &[&str] = &[
    "have", "has", "got", "adopted", "rescued", "bought", "own", "owns", "welcomed", "found",
    "getting", "brought", "took",
];

/// The possessor of the noun at byte `at`: "my"/"our" → the speaker, "my sister's" → the
/// sister, "Alex's" → Alex, "a … named" after a verb of having → that verb's subject.
pub(super) fn possessor(ctx: &Context, at: usize, default_speaker: bool) -> Option<Holder> {
    let mut i = ctx.toks.iter().take_while(|t| t.end <= at).count();
    while i > 0 {
        i -= 1;
        let tok = ctx.toks.get(i)?;
        let w = tok.lower.as_str();
        if POSSESSED_ADJECTIVES.contains(&w) {
            continue;
        }
        return possessor_word(ctx, i, default_speaker);
    }
    default_speaker.then_some(Holder {
        subject: Subject::Speaker,
        negated: false,
        perfect: false,
        start: at,
    })
}

fn possessor_word(ctx: &Context, i: usize, default_speaker: bool) -> Option<Holder> {
    let tok = ctx.toks.get(i)?;
    let w = tok.lower.as_str();
    let speaker = |start| Holder {
        subject: Subject::Speaker,
        negated: false,
        perfect: false,
        start,
    };
    match w {
        "my" | "our" => return Some(speaker(tok.start)),
        "his" | "her" | "their" | "your" | "its" => return None,
        "a" | "an" | "one" | "two" | "another" => {
            let verb = ctx.toks.get(i.checked_sub(1)?)?;
            if HAVING.contains(&verb.lower.as_str()) {
                return holder(ctx, verb.start, false);
            }
            return None;
        }
        "the" => return (default_speaker || ctx.first_person()).then(|| speaker(tok.start)),
        _ => {}
    }
    if let Some(owner) = w.strip_suffix("'s") {
        if super::super::lexicon::RELATIONS.contains(&owner) {
            let before = ctx.toks.get(i.checked_sub(1)?)?;
            let mine = matches!(before.lower.as_str(), "my" | "our");
            return mine.then(|| Holder {
                subject: Subject::Related(owner.to_string()),
                negated: false,
                perfect: false,
                start: before.start,
            });
        }
        if tok.capital && !NOT_NAMES.contains(&owner) {
            let token_text = ctx.text.get(tok.start..tok.end)?;
            let written = token_text.get(..token_text.rfind(['\'', '’'])?)?;
            return Some(Holder {
                subject: Subject::Named(written.to_string()),
                negated: false,
                perfect: false,
                start: tok.start,
            });
        }
        return None;
    }
    if matches!(w, "'" | "’") {
        return plural_possessor(ctx, i);
    }
    let opens_clause = !tok.word || matches!(w, "and" | "but" | "so" | "now");
    (default_speaker && opens_clause).then(|| speaker(tok.end))
}

/// The owner before a bare apostrophe ("my neighbours' cat", "the Smiths' dog"): someone other
/// than the speaker, a relation when it follows "my"/"our".
fn plural_possessor(ctx: &Context, apostrophe: usize) -> Option<Holder> {
    let owner = ctx.toks.get(apostrophe.checked_sub(1)?)?;
    if !owner.word || !owner.lower.ends_with('s') {
        return None;
    }
    let singular = owner.lower.trim_end_matches('s');
    let relation = super::super::lexicon::RELATIONS
        .iter()
        .find(|r| **r == owner.lower || **r == singular)?;
    let before = ctx.toks.get(apostrophe.checked_sub(2)?)?;
    matches!(before.lower.as_str(), "my" | "our").then(|| Holder {
        subject: Subject::Related((*relation).to_string()),
        negated: false,
        perfect: false,
        start: before.start,
    })
}

#[cfg(test)]
pub(super) fn patterns() -> Vec<&'static str> {
    RULES.iter().map(|r| r.pattern).collect()
}
