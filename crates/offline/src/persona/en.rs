//! English first-person patterns over one clause.
//!
//! The clause is tokenized into words with their byte spans; contractions are expanded in the
//! normalized form only ("I'm" → "i" "am", "don't" → "do" "not"), so values are always cut
//! from the original text. Patterns are word sequences tried at every "I" / "my".

use super::lexicon::EnglishWords;
use super::{Concept, Fact};

/// The most words a value may have (longer statements are cut there).
const MAX_VALUE_WORDS: usize = 10;

#[derive(Clone, Debug)]
struct Tok {
    /// Lower case, straight apostrophes, contractions expanded.
    norm: String,
    start: usize,
    end: usize,
    /// Starts with an upper-case letter in the text.
    cap: bool,
    /// A word (letters/digits), not punctuation or a symbol.
    word: bool,
}

struct Clause<'a> {
    text: &'a str,
    toks: Vec<Tok>,
    lexicon: &'a EnglishWords,
}

/// A value's token range `[from, to)` and whether it ran to the end of the clause.
#[derive(Clone, Copy)]
struct Span {
    from: usize,
    to: usize,
    to_end: bool,
}

impl<'a> Clause<'a> {
    fn new(lexicon: &'a EnglishWords, text: &'a str) -> Self {
        let mut toks = Vec::new();
        let mut chars = text.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            if c.is_whitespace() {
                continue;
            }
            if !c.is_alphanumeric() {
                toks.push(Tok {
                    norm: c.to_string(),
                    start,
                    end: start + c.len_utf8(),
                    cap: false,
                    word: false,
                });
                continue;
            }
            let mut end = start + c.len_utf8();
            // A word continues through letters, digits and inner apostrophes or hyphens.
            while let Some(&(i, d)) = chars.peek() {
                let joiner = matches!(d, '\'' | '’' | '-');
                let continues = d.is_alphanumeric()
                    || (joiner
                        && text
                            .get(i + d.len_utf8()..)
                            .and_then(|t| t.chars().next())
                            .is_some_and(char::is_alphanumeric));
                if !continues {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            let surface = text.get(start..end).unwrap_or("");
            let lower = surface.to_lowercase().replace('’', "'");
            let parts = expand(&lower);
            // A contraction "X'm" / "X's" / "Xn't" splits at its apostrophe, so that a value
            // can start or end between the halves ("daughter's" → "daughter").
            let split = (parts.len() == 2)
                .then(|| surface.rfind(['\'', '’']))
                .flatten()
                .map(|i| {
                    if parts.get(1).is_some_and(|p| p == "not") && i > 0 {
                        i - 1
                    } else {
                        i
                    }
                })
                .filter(|&i| i > 0);
            for (n, norm) in parts.into_iter().enumerate() {
                let (s, e) = match (split, n) {
                    (Some(i), 0) => (start, start + i),
                    (Some(i), _) => (start + i, end),
                    (None, _) => (start, end),
                };
                toks.push(Tok {
                    norm,
                    start: s,
                    end: e,
                    cap: n == 0 && c.is_uppercase(),
                    word: true,
                });
            }
        }
        Clause {
            text,
            toks,
            lexicon,
        }
    }

    fn len(&self) -> usize {
        self.toks.len()
    }

    fn norm(&self, i: usize) -> &str {
        self.toks.get(i).map_or("", |t| t.norm.as_str())
    }

    fn is_word(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.word)
    }

    fn is_cap(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.cap)
    }

    fn is_any(&self, i: usize, words: &[&str]) -> bool {
        words.contains(&self.norm(i))
    }

    /// Original text of tokens `[from, to)`.
    fn text_of(&self, from: usize, to: usize) -> &'a str {
        if to <= from {
            return "";
        }
        let (Some(a), Some(b)) = (
            self.toks.get(from),
            to.checked_sub(1).and_then(|t| self.toks.get(t)),
        ) else {
            return "";
        };
        if b.end < a.start {
            return "";
        }
        self.text.get(a.start..b.end).unwrap_or("")
    }

    fn span_text(&self, span: Span) -> &'a str {
        self.text_of(span.from, span.to)
    }

    /// Match `pattern` at token `at`: words, "a|b" alternatives, a leading '?' for an optional
    /// word. Filler words ("really", "just"…) may sit between the parts. Returns the index
    /// after the match.
    fn seq(&self, at: usize, pattern: &[&str]) -> Option<usize> {
        let mut i = at;
        for (n, part) in pattern.iter().enumerate() {
            let (optional, alts) = match part.strip_prefix('?') {
                Some(rest) => (true, rest),
                None => (false, *part),
            };
            let matches = |j: usize| alts.split('|').any(|a| a == self.norm(j));
            let mut j = i;
            if n > 0 {
                while j < self.len() && self.lexicon.fillers.contains(&self.norm(j)) && !matches(j)
                {
                    j += 1;
                }
            }
            if j < self.len() && matches(j) {
                i = j + 1;
            } else if !optional {
                return None;
            }
        }
        Some(i)
    }

    /// The value starting at `from`: up to a cut word, a new clause with a subject ("and I"),
    /// punctuation, one of `stops`, or [`MAX_VALUE_WORDS`]; trailing fillers dropped.
    fn value(&self, from: usize, stops: &[&str]) -> Option<Span> {
        let mut to = from;
        let mut to_end = true;
        while to < self.len() {
            let w = self.norm(to);
            let next = self.norm(to + 1);
            // "St. Mary's", "9/11": a dot or slash inside a name does not end the value.
            let inner_mark = matches!(w, "." | "/")
                && to > from
                && self.is_word(to + 1)
                && self
                    .toks
                    .get(to + 1)
                    .is_some_and(|t| t.cap || t.norm.bytes().all(|b| b.is_ascii_digit()));
            let cut = (!self.is_word(to) && !inner_mark)
                || self.lexicon.cut_words.contains(&w)
                || stops.contains(&w)
                || (to > from && self.lexicon.cut_pairs.contains(&(w, next)))
                || (matches!(w, "and" | "or" | "but" | "then")
                    && self.lexicon.subjects.contains(&next)
                    && to > from);
            if cut || to - from >= MAX_VALUE_WORDS {
                to_end = false;
                break;
            }
            to += 1;
        }
        while to > from
            && (self.lexicon.trailing.contains(&self.norm(to - 1)) || !self.is_word(to - 1))
        {
            to -= 1;
            to_end = false;
        }
        (to > from).then_some(Span { from, to, to_end })
    }
}

/// Expand contractions and chat spellings into the words they stand for.
fn expand(word: &str) -> Vec<String> {
    let fixed: &[&str] = match word {
        "i'm" | "im" => &["i", "am"],
        "i've" | "ive" => &["i", "have"],
        "i'd" => &["i", "would"],
        "i'll" => &["i", "will"],
        "can't" | "cant" | "cannot" => &["can", "not"],
        "won't" => &["will", "not"],
        "ain't" => &["am", "not"],
        "dont" => &["do", "not"],
        "didnt" => &["did", "not"],
        "doesnt" => &["does", "not"],
        "isnt" => &["is", "not"],
        "wasnt" => &["was", "not"],
        "gonna" => &["going", "to"],
        "wanna" => &["want", "to"],
        "gotta" => &["got", "to"],
        "favourite" => &["favorite"],
        _ => &[],
    };
    if !fixed.is_empty() {
        return fixed.iter().map(|s| s.to_string()).collect();
    }
    for (suffix, full) in [
        ("n't", "not"),
        ("'re", "are"),
        ("'ve", "have"),
        ("'ll", "will"),
        ("'d", "would"),
        ("'m", "am"),
        ("'s", "'s"),
    ] {
        if let Some(stem) = word.strip_suffix(suffix) {
            if !stem.is_empty() {
                return vec![stem.to_string(), full.to_string()];
            }
        }
    }
    vec![word.to_string()]
}

/// Whether an English clause opens like a question ("do you …", "what do you …").
pub(super) fn opens_question(lexicon: &EnglishWords, clause: &str) -> bool {
    const AUX: &[&str] = &[
        "do", "does", "did", "are", "is", "am", "can", "could", "would", "will", "should", "have",
        "has", "shall", "may", "were", "was",
    ];
    const WH: &[&str] = &[
        "what", "where", "who", "why", "how", "when", "which", "whose",
    ];
    const PRONOUNS: &[&str] = &[
        "you", "i", "we", "he", "she", "they", "it", "u", "ya", "there", "this", "that", "your",
        "my",
    ];
    let c = Clause::new(lexicon, clause);
    let first = if c.is_any(0, &["so", "and", "but", "well", "oh", "hey", "also"]) {
        1
    } else {
        0
    };
    (c.is_any(first, AUX) && c.is_any(first + 1, PRONOUNS))
        || (c.is_any(first, WH) && (c.is_any(first + 1, AUX) || c.norm(first + 1) == "'s"))
}

/// Whether an English clause states a condition ("if I …", "unless …").
pub(super) fn opens_conditional(lexicon: &EnglishWords, clause: &str) -> bool {
    let c = Clause::new(lexicon, clause);
    c.is_any(
        0,
        &["if", "unless", "whether", "suppose", "supposing", "imagine"],
    )
}

/// Every fact of one clause. `following` are the sentence's later clauses (for lists).
pub(super) fn extract(
    lexicon: &EnglishWords,
    clause: &str,
    following: &[&str],
    out: &mut Vec<Fact>,
) {
    if !clause.is_ascii() && !clause.chars().any(|c| c.is_ascii_alphabetic()) {
        return;
    }
    let c = Clause::new(lexicon, clause);
    let mut x = Extractor {
        c: &c,
        following,
        out,
        habit_found: false,
    };
    x.subjectless_plans();
    x.as_a();
    for p in 0..c.len() {
        if p > 0 && c.is_any(p - 1, &c.lexicon.hypothetical) {
            continue;
        }
        match c.norm(p) {
            "i" => x.at_i(p),
            "my" => x.at_my(p),
            "call" | "calls" => x.call_me(p),
            _ => {}
        }
    }
    x.favorite_at_end();
    if !x.habit_found {
        x.periodic_habit();
    }
}

struct Extractor<'a, 'b> {
    c: &'a Clause<'a>,
    following: &'a [&'a str],
    out: &'b mut Vec<Fact>,
    habit_found: bool,
}

impl Extractor<'_, '_> {
    fn push(&mut self, concept: Concept, value: impl Into<String>) {
        let value = value.into();
        if !value.trim().is_empty() {
            if concept == Concept::Habits {
                self.habit_found = true;
            }
            self.out.push(Fact::new(concept, value));
        }
    }

    fn push_span(&mut self, concept: Concept, span: Span) {
        let text = self.c.span_text(span);
        self.push(concept, text);
    }

    /// `formerly X` for past statements of current-state keys.
    fn push_dated(&mut self, concept: Concept, span: Span, past: bool) {
        let text = self.c.span_text(span);
        if past {
            self.push(concept, format!("formerly {text}"));
        } else {
            self.push(concept, text);
        }
    }

    /// Whether a value speaks of the listener ("another painting of yours").
    fn mentions_listener(&self, span: Span) -> bool {
        (span.from..span.to).any(|i| {
            self.c
                .is_any(i, &["you", "your", "yours", "ya", "u", "ur", "yourself"])
        })
    }

    fn starts_deictic(&self, span: Span) -> bool {
        let c = self.c;
        c.is_any(span.from, &c.lexicon.deictic)
            || (c.norm(span.from) == "the" && c.norm(span.from + 1) == "way")
            || (span.to - span.from <= 2 && c.is_any(span.to - 1, &c.lexicon.deictic))
    }

    /// Whether token `p` opens the clause (only interjections before it).
    fn clause_initial(&self, p: usize) -> bool {
        const INTERJECTIONS: &[&str] = &[
            "oh", "well", "yeah", "yes", "so", "and", "but", "also", "actually", "honestly", "hey",
            "hi", "hello", "anyway", "btw", "plus", "wow", "haha", "lol", "ah", "um", "uh",
        ];
        (0..p).all(|i| self.c.is_any(i, INTERJECTIONS) || !self.c.is_word(i))
    }

    // ---- dispatch at "I" -------------------------------------------------------------

    fn at_i(&mut self, p: usize) {
        self.location(p);
        self.work(p);
        self.study(p);
        self.be(p);
        self.have(p);
        self.likes(p);
        self.dislikes(p);
        self.habits(p);
        self.plans(p);
        self.personality_phrases(p);
        self.name_phrases(p);
    }

    fn location(&mut self, p: usize) {
        const STOPS: &[&str] = &[
            "for", "with", "since", "now", "until", "where", "and", "but", "from", "to", "as",
            "because", "when", "after", "before", "last", "this", "next",
        ];
        let c = self.c;
        let present: &[&[&str]] = &[
            &["i", "live|reside", "in|at|near|on|outside"],
            &[
                "i",
                "am",
                "living|based|staying|settled",
                "in|at|near|on|outside",
            ],
            &["i", "have", "been", "living|based", "in|at|near|on"],
            &["i", "have", "lived", "in|at|near|on"],
            &["i", "am|come", "from"],
            &["i", "grew", "up", "in|on|near"],
            &["i", "was", "born", "and", "raised", "in"],
            &["i", "was", "born|raised", "in|on|near"],
            &["i", "moved|relocated", "to|into"],
            &["i", "have", "moved|relocated", "to|into"],
        ];
        let past: &[&[&str]] = &[
            &["i", "used", "to", "live", "in|at|near|on"],
            &["i", "lived", "in|at|near|on"],
            &["i", "was", "living", "in|at|near|on"],
        ];
        for (patterns, is_past) in [(present, false), (past, true)] {
            for pattern in patterns {
                if let Some(e) = c.seq(p, pattern) {
                    if let Some(span) = c.value(e, STOPS) {
                        if !self.starts_deictic(span) {
                            self.push_dated(Concept::Location, span, is_past);
                        }
                    }
                    return;
                }
            }
        }
    }

    fn work(&mut self, p: usize) {
        let c = self.c;
        const PLACE_STOPS: &[&str] = &[
            "as", "for", "since", "now", "and", "but", "because", "where", "with", "on", "during",
        ];
        // "I work as a nurse (at …)" / "I worked as …"
        let as_patterns: &[(&[&str], bool)] = &[
            (&["i", "work", "as", "?a|an"], false),
            (&["i", "am", "working", "as", "?a|an"], false),
            (&["i", "am", "employed", "as", "?a|an"], false),
            (&["i", "got", "a", "job", "as", "?a|an"], false),
            (&["i", "worked", "as", "?a|an"], true),
            (&["i", "used", "to", "work", "as", "?a|an"], true),
        ];
        for (pattern, past) in as_patterns {
            if let Some(e) = c.seq(p, pattern) {
                let Some(span) = c.value(e, &["at", "in", "for", "with", "from", "since", "and"])
                else {
                    return;
                };
                self.push_dated(Concept::Job, span, *past);
                self.workplace_after(span.to, *past);
                return;
            }
        }
        let at_patterns: &[(&[&str], bool)] = &[
            (&["i", "work", "at|for"], false),
            (&["i", "am", "working", "at|for"], false),
            (&["i", "have", "been", "working", "at|for"], false),
            (&["i", "got", "a", "job", "at|with"], false),
            (&["i", "teach|intern", "at"], false),
            (&["i", "worked", "at|for"], true),
            (&["i", "used", "to", "work", "at|for"], true),
        ];
        for (pattern, past) in at_patterns {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, PLACE_STOPS) {
                    if !self.starts_deictic(span) {
                        self.push_dated(Concept::Workplace, span, *past);
                    }
                }
                return;
            }
        }
        // "I work in marketing" (a field) vs "I work in a hospital" (a place).
        let in_patterns: &[(&[&str], bool)] = &[
            (&["i", "work", "in"], false),
            (&["i", "am", "working", "in"], false),
            (&["i", "worked", "in"], true),
            (&["i", "used", "to", "work", "in"], true),
        ];
        for (pattern, past) in in_patterns {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, PLACE_STOPS) {
                    if self.starts_deictic(span) {
                        return;
                    }
                    let place =
                        c.is_any(span.from, &["a", "an", "the", "this"]) || c.is_cap(span.from);
                    let concept = if place {
                        Concept::Workplace
                    } else {
                        Concept::Job
                    };
                    self.push_dated(concept, span, *past);
                }
                return;
            }
        }
        if c.seq(p, &["i", "work", "from", "home"]).is_some() {
            let home = c.seq(p, &["i", "work", "from"]).unwrap_or(p);
            self.push_span(
                Concept::Workplace,
                Span {
                    from: home,
                    to: home + 1,
                    to_end: false,
                },
            );
        }
        if let Some(e) = c.seq(
            p,
            &[
                "i",
                "am",
                "retired|unemployed|self-employed|jobless|freelancing",
            ],
        ) {
            self.push(Concept::Job, c.text_of(e - 1, e));
        }
    }

    /// "at/in/for <place>" right after a job phrase.
    fn workplace_after(&mut self, at: usize, past: bool) {
        let c = self.c;
        const DURATION: &[&str] = &[
            "years", "year", "months", "month", "weeks", "week", "days", "while", "decade",
            "decades", "ages", "long", "now", "life", "living", "fun", "free", "money", "example",
            "instance",
        ];
        if c.is_any(at, &["at", "in", "for", "with"]) {
            if let Some(span) = c.value(
                at + 1,
                &["as", "for", "since", "now", "and", "but", "where"],
            ) {
                let duration = (span.from..span.to)
                    .any(|i| c.is_any(i, DURATION) || number(c.norm(i)).is_some());
                if !self.starts_deictic(span) && !duration {
                    self.push_dated(Concept::Workplace, span, past);
                }
            }
        }
    }

    fn study(&mut self, p: usize) {
        let c = self.c;
        let field_patterns: &[&[&str]] = &[
            &["i", "am", "majoring", "in"],
            &["i", "major|majored", "in"],
            &["i", "am", "studying"],
            &["i", "study|studied"],
        ];
        for pattern in field_patterns {
            if let Some(e) = c.seq(p, pattern) {
                if c.is_any(e, &["at", "in"]) && pattern.last() != Some(&"in") {
                    self.workplace_after(e, false);
                    return;
                }
                if c.is_any(
                    e,
                    &[
                        "for", "to", "with", "hard", "right", "now", "a", "the", "all", "so", "it",
                    ],
                ) {
                    return;
                }
                if let Some(span) = c.value(e, &["at", "in", "for", "since", "and", "with"]) {
                    if !self.starts_deictic(span) {
                        self.push_span(Concept::Job, span);
                        self.workplace_after(span.to, false);
                    }
                }
                return;
            }
        }
        for pattern in [&["i", "go", "to"][..], &["i", "attend"][..]] {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, &["for", "and", "but", "since", "every"]) {
                    let schoolish = (span.from..span.to).any(|i| {
                        c.is_any(
                            i,
                            &[
                                "school",
                                "university",
                                "college",
                                "academy",
                                "uni",
                                "high",
                                "institute",
                            ],
                        )
                    });
                    if schoolish {
                        self.push_span(Concept::Workplace, span);
                    }
                }
                return;
            }
        }
    }

    /// "I am …" / "I was a …": age, gender, job, family role, trait, diet, marital state.
    fn be(&mut self, p: usize) {
        self.age(p);
        self.states(p);
        let c = self.c;
        // Noun phrases: "I'm a nurse", "I was a teacher", "I used to be a chef".
        let np_patterns: &[(&[&str], bool)] = &[
            (&["i", "am", "a|an"], false),
            (&["i", "became", "a|an"], false),
            (&["i", "have", "become", "a|an"], false),
            (&["i", "consider", "myself", "a|an"], false),
            (&["i", "was", "a|an"], true),
            (&["i", "used", "to", "be", "a|an"], true),
        ];
        for (pattern, past) in np_patterns {
            if let Some(e) = c.seq(p, pattern) {
                self.noun_phrase(e, *past);
                break;
            }
        }
        // Traits without an article: "I'm shy", "I'm a bit shy", "I'm not very patient".
        for pattern in [
            &["i", "am"][..],
            &["i", "consider", "myself"][..],
            &["i", "tend", "to", "be"][..],
        ] {
            if let Some(e) = c.seq(p, pattern) {
                self.trait_at(e);
                break;
            }
        }
    }

    /// "I'm 28", "I'm 28 years old", "I just turned 30", "I'm in my thirties".
    fn age(&mut self, p: usize) {
        let c = self.c;
        for pattern in [
            &["i", "am"][..],
            &["i", "turned"][..],
            &["i", "have", "turned"][..],
        ] {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(age) = number(c.norm(e)) {
                    let after = c.norm(e + 1);
                    let bare_ok = matches!(
                        after,
                        "" | "years"
                            | "year"
                            | "yrs"
                            | "yo"
                            | "y"
                            | "now"
                            | "this"
                            | "and"
                            | "but"
                            | "already"
                            | "today"
                            | "soon"
                            | "next"
                            | "lol"
                    ) || !c.is_word(e + 1);
                    if (1..=120).contains(&age) && bare_ok {
                        self.push(Concept::Age, c.text_of(e, e + 1));
                    }
                } else if c.is_any(e + 1, &["years", "year"])
                    && c.norm(e + 2) == "old"
                    && is_number_word(c.norm(e))
                {
                    self.push(Concept::Age, c.text_of(e, e + 1));
                }
            }
        }
        if let Some(e) = c.seq(p, &["i", "am", "in", "my"]) {
            if c.is_any(
                e,
                &[
                    "teens",
                    "twenties",
                    "thirties",
                    "forties",
                    "fifties",
                    "sixties",
                    "seventies",
                    "eighties",
                    "nineties",
                    "20s",
                    "30s",
                    "40s",
                    "50s",
                    "60s",
                    "70s",
                    "80s",
                ],
            ) {
                self.push(Concept::Age, c.text_of(e - 2, e + 1));
            }
        }
    }

    /// What follows a bare "I'm": a marital state ("I'm married (to Sam)", "I'm single",
    /// "I'm dating Alex"), a diet ("I'm vegetarian"), a gender word ("I'm female").
    fn states(&mut self, p: usize) {
        let c = self.c;
        if let Some(e) = c.seq(p, &["i", "am"]) {
            if c.is_any(e, &c.lexicon.relation_states) {
                let span = c
                    .value(e, &["for", "since", "and", "but", "now"])
                    .unwrap_or(Span {
                        from: e,
                        to: e + 1,
                        to_end: false,
                    });
                let keep = if c.is_any(e + 1, &["to", "with"]) || c.norm(e) == "dating" {
                    span
                } else {
                    Span {
                        from: e,
                        to: e + 1,
                        to_end: false,
                    }
                };
                self.push_span(Concept::Relationships, keep);
            } else if let Some(e2) = c.seq(
                e,
                &["in", "a", "?long-distance|serious|happy", "relationship"],
            ) {
                let span = c
                    .value(e2, &["for", "since", "and", "but"])
                    .map_or(e2, |s| if c.is_any(e2, &["with"]) { s.to } else { e2 });
                self.push(Concept::Relationships, c.text_of(e, span));
            }
            // Bare diets: "I'm vegetarian".
            if c.is_any(
                e,
                &["vegetarian", "vegan", "pescatarian", "teetotal", "sober"],
            ) && !c.is_word(e + 1)
            {
                self.push(Concept::Habits, c.text_of(e, e + 1));
            }
            // Bare gender words: "I'm female", "I'm nonbinary".
            if c.is_any(
                e,
                &[
                    "male",
                    "female",
                    "nonbinary",
                    "non-binary",
                    "transgender",
                    "trans",
                    "genderfluid",
                    "agender",
                ],
            ) && !c.is_word(e + 1)
            {
                self.push(Concept::Gender, c.text_of(e, e + 1));
            }
        }
    }

    /// A trait phrase at `e`: optional "not", hedges and intensifiers, then a trait word.
    fn trait_at(&mut self, e: usize) {
        let c = self.c;
        const HEDGES: &[&str] = &[
            "bit", "little", "kind", "kinda", "sort", "sorta", "somewhat", "slightly", "of", "a",
            "fairly", "rather",
        ];
        const INTENSIFIERS: &[&str] = &[
            "very",
            "really",
            "so",
            "pretty",
            "quite",
            "super",
            "extremely",
            "too",
            "incredibly",
            "such",
            "totally",
            "naturally",
        ];
        let mut i = e;
        let mut keep_from: Option<usize> = None;
        while i < c.len() && i < e + 5 {
            if c.norm(i) == "not" || c.is_any(i, HEDGES) {
                keep_from.get_or_insert(i);
            } else if !c.is_any(i, INTENSIFIERS) {
                break;
            }
            i += 1;
        }
        if c.is_any(i, &c.lexicon.traits) {
            let from = keep_from.unwrap_or(i);
            // "a bit" alone is not a phrase start when the hedge is just the article.
            let from = if c.norm(from) == "a" && !c.is_any(from + 1, &["bit", "little"]) {
                i
            } else {
                from
            };
            self.push(Concept::Personality, c.text_of(from, i + 1));
        }
    }

    /// The noun phrase after "a/an" in "I'm a …": decides the key by its head word.
    fn noun_phrase(&mut self, e: usize, past: bool) {
        let c = self.c;
        let mut i = if past { e } else { self.age_before_noun(e) };
        let np_start = i;
        let limit = (np_start + 5).min(c.len());
        while i < limit {
            if !c.is_word(i)
                || c.is_any(
                    i,
                    &[
                        "at", "in", "for", "with", "from", "who", "that", "and", "but", "because",
                        "since", "when", "so",
                    ],
                )
            {
                return;
            }
            let w = c.norm(i);
            if !past && self.present_noun_head(np_start, i) {
                return;
            }
            if is_job(c.lexicon, w) && c.norm(i + 1) != "of" {
                let first = (np_start..=i)
                    .find(|&j| !c.is_any(j, &c.lexicon.job_noise))
                    .unwrap_or(i);
                let span = Span {
                    from: first,
                    to: i + 1,
                    to_end: false,
                };
                self.push_dated(Concept::Job, span, past);
                self.workplace_after(i + 1, past);
                return;
            }
            i += 1;
        }
    }

    /// An age in front of a noun ("I'm a 28-year-old nurse", "a 28 year old …"): pushed, and
    /// the index after it returned.
    fn age_before_noun(&mut self, e: usize) -> usize {
        let c = self.c;
        let mut i = e;
        if let Some(age) = c.norm(i).split('-').next().and_then(number) {
            if c.norm(i).contains("year") && (1..=120).contains(&age) {
                let digits = c.norm(i).split('-').next().unwrap_or("").to_string();
                self.push(Concept::Age, digits);
                i += 1;
            } else if c.is_any(i + 1, &["year"])
                && c.norm(i + 2) == "old"
                && (1..=120).contains(&age)
            {
                self.push(Concept::Age, c.text_of(i, i + 1));
                i += 3;
            }
        }
        i
    }

    /// The head at `i` of a present-tense noun phrase starting at `np_start`, when it is not an
    /// occupation: a gender, a habit, a trait, a family role or a liking ("a dog person",
    /// "a huge fan of …"). Whether it was one.
    fn present_noun_head(&mut self, np_start: usize, i: usize) -> bool {
        let c = self.c;
        let w = c.norm(i);
        let two = format!("{w} {}", c.norm(i + 1));
        if c.lexicon.gender.contains(&w)
            && !c.lexicon.jobs.contains(&c.norm(i + 1))
            && !c.is_any(i + 1, &c.lexicon.gender)
        {
            let from = (np_start..=i)
                .find(|&j| c.is_any(j, &c.lexicon.gender))
                .unwrap_or(i);
            self.push(Concept::Gender, c.text_of(from, i + 1));
            return true;
        }
        if c.lexicon.habit_nouns.contains(&two.as_str()) {
            self.push(Concept::Habits, c.text_of(i, i + 2));
            return true;
        }
        if c.lexicon.habit_nouns.contains(&w) {
            self.push(Concept::Habits, c.text_of(i, i + 1));
            return true;
        }
        if c.lexicon.trait_nouns.contains(&two.as_str()) {
            self.push(Concept::Personality, c.text_of(i, i + 2));
            return true;
        }
        if c.lexicon.trait_nouns.contains(&w) || is_mbti(c.norm(i)) {
            self.push(Concept::Personality, c.text_of(i, i + 1));
            return true;
        }
        self.role_or_liking(np_start, i)
    }

    /// A family role ("a mother of two") or a liking ("a dog person", "a huge fan of …") as
    /// the head at `i` of a noun phrase starting at `np_start`. Whether it was one.
    fn role_or_liking(&mut self, np_start: usize, i: usize) -> bool {
        let c = self.c;
        if c.is_any(
            i,
            &[
                "mom",
                "mother",
                "mum",
                "dad",
                "father",
                "parent",
                "grandmother",
                "grandfather",
                "grandma",
                "grandpa",
                "stepmom",
                "stepdad",
                "wife",
                "husband",
                "aunt",
                "uncle",
            ],
        ) {
            let end = if c.norm(i + 1) == "of" && c.is_word(i + 2) {
                i + 3
            } else {
                i + 1
            };
            self.push(Concept::Family, c.text_of(np_start, end));
            return true;
        }
        let pet_person = c.norm(i) == "person" && i > np_start && c.is_any(i - 1, &c.lexicon.pets);
        if (pet_person
            || c.is_any(
                i,
                &[
                    "lover",
                    "fan",
                    "enthusiast",
                    "buff",
                    "addict",
                    "junkie",
                    "fanatic",
                    "nerd",
                    "geek",
                ],
            ))
            && i > np_start
        {
            let first = (np_start..i)
                .find(|&j| !c.is_any(j, &c.lexicon.fan_sizes))
                .unwrap_or(i);
            if first < i {
                self.push(Concept::Likes, c.text_of(first, i));
            }
            return true;
        }
        if c.norm(i) == "fan" && c.norm(i + 1) == "of" {
            if let Some(span) = c.value(i + 2, &[]) {
                self.push_likes(span);
            }
            return true;
        }
        false
    }

    /// "I have a dog named Max", "I have two kids", "I've got a boyfriend".
    fn have(&mut self, p: usize) {
        let c = self.c;
        let patterns: &[&[&str]] = &[
            &["i", "have", "got|adopted|rescued"],
            &["i", "got|adopted|rescued"],
            &["i", "have|own"],
        ];
        let Some(e) = patterns.iter().find_map(|pat| c.seq(p, pat)) else {
            return;
        };
        if c.norm(e) == "to" || c.norm(e) == "been" {
            return;
        }
        let mut i = e;
        let limit = (e + 5).min(c.len());
        while i < limit && c.is_word(i) {
            let w = c.norm(i);
            let head = c.lexicon.pets.contains(&w)
                || c.lexicon.family.contains(&w)
                || c.lexicon.relations.contains(&w);
            if !head && !c.lexicon.possession_modifiers.contains(&w) {
                return;
            }
            if head && c.is_any(i + 1, &["'s", "'"]) {
                return;
            }
            if c.lexicon.pets.contains(&w) && pet_follows_ok(c, i) {
                let mut end = i + 1;
                if c.norm(end) == "pig" {
                    end += 1;
                }
                if c.is_any(end, &["named", "called"]) && c.is_word(end + 1) {
                    end += 2;
                    while c.is_cap(end) && end < c.len() {
                        end += 1;
                    }
                }
                self.push(Concept::Pets, c.text_of(e, end));
                return;
            }
            let kin = c.lexicon.family.contains(&w);
            let rel = c.lexicon.relations.contains(&w);
            if kin || rel {
                let mut end = i + 1;
                while c.is_cap(end) && end < i + 3 {
                    end += 1;
                }
                let concept = if kin {
                    Concept::Family
                } else {
                    Concept::Relationships
                };
                self.push(concept, c.text_of(e, end));
                return;
            }
            i += 1;
        }
    }

    fn push_likes(&mut self, span: Span) {
        self.push_list(Concept::Likes, span);
    }

    /// Push a like/dislike, extended over a list that continues in the next clauses
    /// ("I love hiking, swimming and reading").
    fn push_list(&mut self, concept: Concept, span: Span) {
        if self.starts_deictic(span) || self.mentions_listener(span) {
            return;
        }
        let mut value = self.c.span_text(span).to_string();
        if span.to_end {
            if let Some(tail) = list_tail(self.c.lexicon, self.following) {
                value.push_str(", ");
                value.push_str(&tail);
            }
        }
        self.push(concept, value);
    }

    fn likes(&mut self, p: usize) {
        let c = self.c;
        let patterns: &[&[&str]] = &[
            &["i", "love|like|enjoy|adore|dig|prefer|fancy|luv"],
            &["i", "am", "into"],
            &["i", "am", "passionate", "about"],
            &["i", "am", "obsessed", "with"],
            &["i", "am", "fond|keen", "of|on"],
            &["i", "am", "crazy|mad|nuts", "about"],
            &["i", "am", "interested", "in"],
            &["i", "am", "addicted", "to"],
            &["i", "am", "a", "?big|huge|massive|great", "fan", "of"],
            &["i", "have", "a", "passion", "for"],
        ];
        for pattern in patterns {
            if let Some(mut e) = c.seq(p, pattern) {
                if c.norm(e) == "to" {
                    e += 1;
                }
                if let Some(span) = c.value(e, &[]) {
                    self.push_likes(span);
                }
                return;
            }
        }
    }

    fn dislikes(&mut self, p: usize) {
        let c = self.c;
        let patterns: &[&[&str]] = &[
            &["i", "do", "not", "like|love|enjoy|dig"],
            &["i", "do", "not", "care", "for"],
            &["i", "hate|dislike|detest|loathe|despise|abhor"],
            &["i", "can", "not", "stand|bear|tolerate"],
            &["i", "am", "not", "a", "?big|huge", "fan", "of"],
            &["i", "am", "not", "into|keen"],
            &["i", "am", "sick|tired", "of"],
            &["i", "am", "afraid|scared|terrified", "of"],
        ];
        for pattern in patterns {
            if let Some(mut e) = c.seq(p, pattern) {
                if c.is_any(e, &["to", "on"]) {
                    e += 1;
                }
                if let Some(span) = c.value(e, &[]) {
                    self.push_list(Concept::Dislikes, span);
                }
                return;
            }
        }
    }

    fn habits(&mut self, p: usize) {
        let c = self.c;
        // "I usually …", "I never …" (skipping a soft filler).
        let mut j = p + 1;
        while c.is_any(j, &["also", "still", "just", "really", "pretty", "almost"]) {
            j += 1;
        }
        if c.is_any(j, &c.lexicon.frequency) {
            let next = j + 1;
            let feeling = c.is_any(next, &c.lexicon.not_routine)
                || c.is_any(
                    next,
                    &[
                        "loved", "liked", "enjoyed", "hated", "been", "will", "would", "can",
                        "could", "say", "tell", "said", "the",
                    ],
                );
            if !feeling {
                if let Some(span) = c.value(j, &[]) {
                    if span.to - span.from >= 2 {
                        self.push_span(Concept::Habits, span);
                    }
                }
            }
            return;
        }
        if let Some(e) = c.seq(p, &["i", "tend", "to"]) {
            if c.norm(e) != "be" {
                if let Some(span) = c.value(e, &[]) {
                    self.push_span(Concept::Habits, span);
                }
            }
            return;
        }
        // "I don't drink/smoke/eat meat".
        if let Some(e) = c.seq(p, &["i", "do", "not", "drink|smoke|eat|drive|gamble"]) {
            let from = p + 1;
            let end = c.value(e - 1, &[]).map_or(e, |s| s.to);
            self.push(Concept::Habits, c.text_of(from, end));
            return;
        }
        // "I've been painting for years".
        if let Some(e) = c.seq(p, &["i", "have", "been"]) {
            let w = c.norm(e);
            const NOT_HOBBY: &[&str] = &[
                "living",
                "working",
                "thinking",
                "feeling",
                "going",
                "trying",
                "wondering",
                "meaning",
                "looking",
                "getting",
                "dealing",
                "having",
                "waiting",
                "studying",
                "dating",
                "struggling",
                "planning",
                "hoping",
            ];
            if w.ends_with("ing") && !NOT_HOBBY.contains(&w) {
                let has_duration = (e..(e + 8).min(c.len()))
                    .any(|i| c.is_any(i, &["for", "since"]))
                    && (e..(e + 10).min(c.len())).any(|i| {
                        c.is_any(
                            i,
                            &[
                                "years", "months", "since", "decade", "decades", "ages", "long",
                                "while",
                            ],
                        )
                    });
                if has_duration {
                    self.push(Concept::Habits, c.text_of(e, e + 1));
                }
            }
        }
    }

    /// "I go running every morning", "Every Sunday I call my mom", "I swim twice a week".
    fn periodic_habit(&mut self) {
        let c = self.c;
        let mut period: Option<(usize, usize)> = None;
        for i in 0..c.len() {
            let every = c.is_any(i, &["every", "each"]) && c.is_any(i + 1, &c.lexicon.periods);
            let on_days = c.is_any(i, &["on"])
                && c.is_any(
                    i + 1,
                    &[
                        "weekends",
                        "weekdays",
                        "mondays",
                        "tuesdays",
                        "wednesdays",
                        "thursdays",
                        "fridays",
                        "saturdays",
                        "sundays",
                    ],
                );
            if every || on_days {
                period = Some((i, i + 2));
            } else if c.is_any(i, &["once", "twice", "three", "four", "two", "several"])
                && c.is_any(i + 1, &["a", "per", "times"])
            {
                let mut end = i + 2;
                if c.norm(i + 1) == "times" && c.is_any(end, &["a", "per"]) {
                    end += 1;
                }
                if c.is_any(end, &["day", "week", "month", "year"]) {
                    period = Some((i, end + 1));
                }
            } else if c.is_any(i, &["daily", "nightly", "weekly"]) && i > 0 {
                period = Some((i, i + 1));
            }
            if period.is_some() {
                break;
            }
        }
        let Some((f0, f1)) = period else { return };
        let Some(p) = (0..c.len()).find(|&i| c.norm(i) == "i") else {
            return;
        };
        let mut v = p + 1;
        while c.is_any(v, &c.lexicon.fillers)
            || c.is_any(v, &["will", "would", "try", "to", "like"])
        {
            v += 1;
        }
        if c.is_any(v, &c.lexicon.not_routine)
            || c.is_any(
                v,
                &[
                    "went", "did", "saw", "met", "got", "made", "had", "was", "'s", "need",
                    "needed", "should",
                ],
            )
        {
            return;
        }
        if f0 > v {
            self.push(Concept::Habits, c.text_of(v, f1));
        } else if f1 <= p {
            if let Some(span) = c.value(v, &[]) {
                let vp = c.span_text(span);
                // The period moves behind the verb phrase; only its sentence-initial capital
                // is lowered ("Every Sunday I call my mom" → "call my mom every Sunday").
                let freq = c.text_of(f0, f1);
                let mut chars = freq.chars();
                let freq = match chars.next() {
                    Some(first) if f0 == 0 => format!("{}{}", first.to_lowercase(), chars.as_str()),
                    _ => freq.to_string(),
                };
                self.push(Concept::Habits, format!("{vp} {freq}"));
            }
        }
    }

    fn plans(&mut self, p: usize) {
        let c = self.c;
        let patterns: &[&[&str]] = &[
            &[
                "i",
                "am",
                "planning|hoping|aiming|intending|preparing|trying|going|about|determined",
                "to",
            ],
            &["i", "plan|hope|intend|aim|want|decided", "to"],
            &["i", "have", "decided|planned", "to"],
            &["i", "would", "like|love", "to"],
            &["i", "am", "planning", "on"],
            &["i", "am", "looking", "forward", "to"],
            &["i", "am", "saving", "?up", "for"],
            &["i", "am", "thinking", "of|about"],
            &["i", "am", "considering"],
        ];
        for pattern in patterns {
            if let Some(e) = c.seq(p, pattern) {
                let last = pattern.last().copied().unwrap_or("");
                if last == "to" && c.norm(e - 2) == "going" && c.is_cap(e) {
                    // "I'm going to Paris next month": a trip, kept with its verb.
                    if let Some(span) = c.value(e, &[]) {
                        self.push(Concept::Plans, c.text_of(e - 2, span.to));
                    }
                } else if last == "to" {
                    self.plan_value(e, true);
                } else if last == "for" || c.norm(e).ends_with("ing") {
                    self.plan_value(e, false);
                }
                return;
            }
        }
        for pattern in [
            &["i", "am", "moving|applying|relocating", "to|for"][..],
            &["i", "will", "be", "moving", "to"][..],
        ] {
            if let Some(e) = c.seq(p, pattern) {
                let verb = e - 2;
                if let Some(span) = c.value(e, &["for", "with", "because", "and"]) {
                    if !self.starts_deictic(span) {
                        self.push(Concept::Plans, c.text_of(verb, span.to));
                    }
                }
                return;
            }
        }
    }

    /// The plan itself: a verb phrase after "to" (not "to say", "to the store").
    fn plan_value(&mut self, e: usize, infinitive: bool) {
        let c = self.c;
        if infinitive && (c.is_any(e, &c.lexicon.speech_verbs) || c.is_cap(e)) {
            return;
        }
        if let Some(span) = c.value(e, &[]) {
            if !self.starts_deictic(span) && !self.mentions_listener(span) {
                self.push_span(Concept::Plans, span);
            }
        }
    }

    /// Clause-initial plans without a subject ("Gonna continue my edu …").
    fn subjectless_plans(&mut self) {
        let c = self.c;
        let first = (0..c.len()).find(|&i| {
            c.is_word(i) && !c.is_any(i, &["so", "and", "but", "oh", "well", "yeah", "also"])
        });
        let Some(f) = first else { return };
        for pattern in [
            &["going", "to"][..],
            &["planning", "to|on"][..],
            &["hoping", "to"][..],
        ] {
            if let Some(e) = c.seq(f, pattern) {
                // "Gonna be a great night": a forecast, not the speaker's plan.
                if c.norm(e) != "be" {
                    self.plan_value(e, true);
                }
                return;
            }
        }
    }

    fn personality_phrases(&mut self, p: usize) {
        let c = self.c;
        if let Some(e) = c.seq(
            p,
            &[
                "i",
                "am",
                "the|a",
                "kind|type|sort",
                "of",
                "person|guy|girl",
            ],
        ) {
            if c.is_any(e, &["who", "that"]) {
                if let Some(span) = c.value(e + 1, &[]) {
                    self.push(Concept::Personality, c.text_of(e - 3, span.to));
                }
            }
        }
    }

    fn name_phrases(&mut self, p: usize) {
        let c = self.c;
        for pattern in [&["i", "am", "called|named"][..], &["i", "go", "by"][..]] {
            if let Some(e) = c.seq(p, pattern) {
                self.name_at(e, true);
                return;
            }
        }
        // "Hi, I'm Caroline" (a capitalized word that is not something else).
        if let Some(e) = c.seq(p, &["i", "am"]) {
            let w = c.norm(e);
            let next = c.norm(e + 1);
            let ends = !c.is_word(e + 1)
                || matches!(next, "and" | "from" | "by" | "btw" | "here" | "nice" | "i");
            let next_cap_ok = c.is_cap(e + 1) && c.is_word(e + 1);
            if c.is_cap(e)
                && w != "i"
                && (ends || next_cap_ok)
                && self.clause_initial(p)
                && c.toks.get(e).is_some_and(|t| t.end - t.start > 1)
                && !c.lexicon.not_names.contains(&w)
                && !is_job(c.lexicon, w)
                && !c.lexicon.traits.contains(&w)
                && !c.lexicon.relation_states.contains(&w)
                && number(w).is_none()
                && !is_mbti(w)
            {
                self.name_at(e, false);
            }
        }
    }

    /// One or two name words at `e` (capitalized, or anything when `any_case`).
    fn name_at(&mut self, e: usize, any_case: bool) {
        let c = self.c;
        if !c.is_word(e)
            || (!any_case && !c.is_cap(e))
            || c.is_any(e, &c.lexicon.deictic)
            || c.is_any(e, &["a", "an", "the", "not"])
        {
            return;
        }
        let mut end = e + 1;
        if c.is_cap(end) && c.is_word(end) && !c.is_any(end, &["i"]) {
            end += 1;
        }
        self.push(Concept::Name, c.text_of(e, end));
    }

    fn call_me(&mut self, p: usize) {
        let c = self.c;
        if c.norm(p + 1) != "me" {
            return;
        }
        let callers_ok = p == 0
            || self.clause_initial(p)
            || c.is_any(
                p - 1,
                &[
                    "can",
                    "just",
                    "please",
                    "everyone",
                    "people",
                    "friends",
                    "they",
                    "everybody",
                    "all",
                ],
            );
        if callers_ok {
            self.name_at(
                p + 2,
                c.is_any(p.saturating_sub(1), &["can", "just", "please"]),
            );
        }
    }

    // ---- dispatch at "my" -------------------------------------------------------------

    fn at_my(&mut self, p: usize) {
        let c = self.c;
        if let Some(e) = c.seq(p, &["my", "name", "is|'s"]) {
            self.name_at(e, true);
            return;
        }
        if let Some(e) = c.seq(p, &["my", "age", "is|'s"]) {
            if number(c.norm(e)).is_some_and(|a| (1..=120).contains(&a)) {
                self.push(Concept::Age, c.text_of(e, e + 1));
            }
            return;
        }
        for pattern in [
            &["my", "job|profession|occupation", "is|'s", "?a|an"][..],
            &["my", "job", "as", "?a|an"][..],
            &["my", "major", "is|'s"][..],
        ] {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, &["at", "in", "for", "since", "and"]) {
                    if !self.starts_deictic(span) {
                        self.push_span(Concept::Job, span);
                        self.workplace_after(span.to, false);
                    }
                }
                return;
            }
        }
        for pattern in [
            &["my", "hometown|home", "is|'s"][..],
            &["my", "home", "town", "is|'s"][..],
        ] {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, &["and", "but", "where"]) {
                    if !self.starts_deictic(span) {
                        self.push_span(Concept::Location, span);
                    }
                }
                return;
            }
        }
        for pattern in [&[
            "my",
            "hobbies|hobby|passion|passions|interests",
            "are|is|'s|include|includes",
        ][..]]
        {
            if let Some(e) = c.seq(p, pattern) {
                if let Some(span) = c.value(e, &[]) {
                    self.push_likes(span);
                }
                return;
            }
        }
        for pattern in [&["my", "goal|plan|dream|aim|resolution", "is|'s", "to"][..]] {
            if let Some(e) = c.seq(p, pattern) {
                self.plan_value(e, true);
                return;
            }
        }
        if let Some(e) = c.seq(p, &["my", "favorite"]) {
            // "my favorite food is sushi" → "favorite food is sushi"; "X is my favorite" is
            // handled by [`Self::favorite_at_end`].
            if c.is_word(e) && !c.is_any(e, &["is", "'s", "part", "thing", "one"]) {
                if let Some(span) = c.value(e, &[]) {
                    if (span.from..span.to).any(|i| c.is_any(i, &["is", "'s", "are", "was"])) {
                        self.push(Concept::Likes, c.text_of(p + 1, span.to));
                    }
                }
            }
            return;
        }
        self.my_people_and_pets(p);
    }

    /// "my sister lives in Boston", "my dog Max", "my best friend Sarah".
    fn my_people_and_pets(&mut self, p: usize) {
        let c = self.c;
        let mut i = p + 1;
        while c.is_any(i, &c.lexicon.kin_modifiers) && i < p + 4 {
            i += 1;
        }
        let w = c.norm(i);
        let concept = if c.lexicon.family.contains(&w) {
            Concept::Family
        } else if c.lexicon.relations.contains(&w) {
            Concept::Relationships
        } else if c.lexicon.pets.contains(&w) && pet_follows_ok(c, i) {
            Concept::Pets
        } else {
            return;
        };
        let head_from = if c.is_any(
            p + 1,
            &[
                "best", "ex", "late", "step", "older", "younger", "little", "big", "oldest",
                "youngest", "eldest", "twin",
            ],
        ) {
            p + 1
        } else {
            i
        };
        let i = if w == "guinea" && c.norm(i + 1) == "pig" {
            i + 1
        } else {
            i
        };
        let mut end = i + 1;
        if c.norm(end) == "best" {
            end += 1;
        }
        if c.is_any(end, &["named", "called"]) {
            end += 1;
        }
        while c.is_cap(end) && c.is_word(end) && !c.is_any(end, &["i"]) && end < i + 4 {
            end += 1;
        }
        if concept != Concept::Pets
            && self.clause_initial(p)
            && c.is_any(
                end,
                &[
                    "is", "'s", "are", "was", "lives", "works", "has", "loves", "likes", "just",
                    "got", "moved", "studies", "recently", "always", "will", "turned",
                ],
            )
        {
            // A statement about the person: keep it whole ("sister lives in Boston").
            if let Some(span) = c.value(end, &[]) {
                if span.to >= end + 2 {
                    let text = c.text_of(head_from, span.to);
                    self.push(concept, text);
                    return;
                }
            }
        }
        let words_in_clause = c.toks.iter().filter(|t| t.word).count();
        // "my family" alone says nothing; "Thanks, my friend!" is an address, not a fact.
        let vocative = concept != Concept::Pets
            && self.clause_initial(p)
            && end >= words_in_clause
            && end == i + 1;
        if vocative || (end == i + 1 && matches!(w, "family" | "folks")) {
            return;
        }
        let text = c.text_of(head_from, end);
        self.push(concept, text);
    }

    /// "As a transgender woman, …", "As an introvert, …".
    fn as_a(&mut self) {
        let c = self.c;
        if c.seq(0, &["as", "a|an"]).is_some() {
            let e = 2;
            let limit = (e + 3).min(c.len());
            for i in e..limit {
                if c.is_any(i, &c.lexicon.gender) && (i + 1 >= c.len() || !c.is_word(i + 1)) {
                    let from = (e..=i)
                        .find(|&j| c.is_any(j, &c.lexicon.gender))
                        .unwrap_or(i);
                    self.push(Concept::Gender, c.text_of(from, i + 1));
                    return;
                }
                if c.is_any(i, &c.lexicon.trait_nouns) {
                    self.push(Concept::Personality, c.text_of(i, i + 1));
                    return;
                }
                if is_job(c.lexicon, c.norm(i)) && i + 1 == c.len() {
                    self.push(Concept::Job, c.text_of(e, i + 1));
                    return;
                }
            }
        }
    }

    /// "Sushi is my favorite", "Jazz is my favourite".
    fn favorite_at_end(&mut self) {
        let c = self.c;
        let n = c.len();
        let mut end = n;
        while end > 0 && !c.is_word(end - 1) {
            end -= 1;
        }
        if end >= 4
            && c.is_any(end - 1, &["favorite", "favorites"])
            && c.norm(end - 2) == "my"
            && c.is_any(end - 3, &["is", "'s", "are"])
        {
            let subject_end = end - 3;
            let from = (0..subject_end)
                .find(|&i| {
                    c.is_word(i) && !c.is_any(i, &["oh", "well", "yeah", "and", "but", "so"])
                })
                .unwrap_or(subject_end);
            if from < subject_end && subject_end - from <= 6 {
                let span = Span {
                    from,
                    to: subject_end,
                    to_end: false,
                };
                if !self.starts_deictic(span)
                    && !c.is_any(from, &["she", "he", "they", "we", "which"])
                {
                    self.push_span(Concept::Likes, span);
                }
            }
        }
    }
}

/// Whether the animal word at `i` is a pet being talked about, not a modifier of another noun
/// ("my horse painting", "dog food"): it must end the phrase or be followed by a name or a verb.
fn pet_follows_ok(c: &Clause, i: usize) -> bool {
    let i = if c.norm(i) == "guinea" && c.norm(i + 1) == "pig" {
        i + 1
    } else {
        i
    };
    let next = i + 1;
    !c.is_word(next)
        || (c.is_cap(next) && c.norm(next) != "i")
        || c.is_any(
            next,
            &[
                "is", "'s", "was", "has", "loves", "likes", "named", "called", "and", "just",
                "got", "who", "that", "gets", "needs", "died", "passed", "ran", "sleeps",
                "follows", "always", "never", "too", "are", "were", "have", "had", "love", "like",
                "of", "at", "in", "from", "for", "with", "to", "when", "because", "but", "so",
                "or", "sleep", "ate", "eats", "keeps", "will", "can", "does", "did",
            ],
        )
}

/// A list that continues a like over the next clauses: "…, swimming and reading".
fn list_tail(lexicon: &EnglishWords, following: &[&str]) -> Option<String> {
    let mut parts = Vec::new();
    for clause in following.iter().take(6) {
        let c = Clause::new(lexicon, clause);
        let words = c.toks.iter().filter(|t| t.word).count();
        let has_subject = c
            .toks
            .iter()
            .any(|t| lexicon.subjects.contains(&t.norm.as_str()) || t.norm == "my");
        if words == 0 || words > 5 || has_subject || clause.ends_with('?') {
            return None;
        }
        let text = c.text_of(0, c.len());
        let text = text.trim_end_matches(|ch: char| ch.is_ascii_punctuation());
        parts.push(text.to_string());
        if c.is_any(0, &["and", "or"]) || c.toks.iter().any(|t| t.norm == "and" || t.norm == "or") {
            return Some(parts.join(", "));
        }
    }
    None
}

/// A whole number written in digits ("28").
fn number(word: &str) -> Option<u32> {
    if word.is_empty() || word.len() > 3 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

fn is_number_word(word: &str) -> bool {
    const TENS: &[&str] = &[
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    const ONES: &[&str] = &[
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    let mut parts = word.split('-');
    let first = parts.next().unwrap_or("");
    let second = parts.next();
    match second {
        None => TENS.contains(&first) || ONES.contains(&first),
        Some(s) => TENS.contains(&first) && ONES.contains(&s) && parts.next().is_none(),
    }
}

/// A Myers-Briggs type ("INFJ").
fn is_mbti(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() == 4
        && matches!(b.first(), Some(b'i' | b'e'))
        && matches!(b.get(1), Some(b'n' | b's'))
        && matches!(b.get(2), Some(b't' | b'f'))
        && matches!(b.get(3), Some(b'j' | b'p'))
}

/// Whether an English word names an occupation.
pub(super) fn is_job(lexicon: &EnglishWords, word: &str) -> bool {
    if lexicon.jobs.contains(&word) {
        return true;
    }
    if lexicon.not_jobs.contains(&word) || word.len() < 6 {
        return false;
    }
    ["ist", "ician", "ologist", "grapher", "eer"]
        .iter()
        .any(|s| word.ends_with(s))
        || (word.ends_with("ian") && word.len() > 7)
}
