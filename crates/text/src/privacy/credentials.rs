//! Finding credentials in a line of dialogue.
//!
//! Three kinds of evidence, from strongest to weakest:
//! - **a label the user wrote**: "my password is …", "PIN: …", "密码是…", "SSN …", "API key: …";
//!   the secret is the token right after the label and its connector (is, was, :, =, 是, 为…);
//! - **a format nobody writes by accident**: provider key prefixes (`sk-`, `ghp_`, `AKIA`, JWTs…);
//! - **a check digit**: card numbers (Luhn plus an issuer prefix) and Chinese resident ids
//!   (MOD 11-2 plus region and birth date), with or without a label.
//!
//! Where two findings overlap the stronger one wins, so "密码是 4111111111111111" is a password
//! (the user said so) and the card check does not report it a second time.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::checksum;
use super::types::{Credential, CredentialKind};
use crate::script::{char_at, char_before};
use crate::stopwords;

/// Every pattern, compiled once for the process.
struct Patterns {
    password_en: Regex,
    password_zh: Regex,
    key_formats: Regex,
    key_label: Regex,
    ssn: Regex,
    ssn_label: Regex,
    nino_label: Regex,
    card_veto: Regex,
}

/// Characters a labelled secret never contains: whitespace, quotes, CJK text and its
/// punctuation (Chinese glues the next clause straight onto the secret).
const NOT_IN_SECRET: &str = r#"\s"“”«»`\p{Han}，。！？；、：（）【】《》「」"#;

impl Patterns {
    fn compile() -> Option<Patterns> {
        let password_en = format!(
            r#"(?i)(?-u:\b)(?P<label>pass(?:word|wd|code|phrase)s?|pwd|pw|pin(?:[\s-]?(?:code|number|no\.?))?|(?:wi-?fi|network|wireless|router)\s+key|(?:unlock|door|alarm|gate|access|lock|security|verification)\s+code|cvv2?|cvc)(?-u:\b)(?:(?P<qual>\s+(?:for|to|of|on|at)\s+[^\s.,;:!?]+(?:\s+[^\s.,;:!?]+){{0,3}}?){EXPLICIT}|{EXPLICIT}|(?P<bare>\s+))(?:["“](?P<q>[^"“”\n]{{4,64}}?)["”]|["'“‘«`(\[<]?(?P<v>[^{NOT_IN_SECRET}]+))"#,
            EXPLICIT = r#"(?:\s*[=:：]\s*|\s*['’]s\s+|\s+(?:(?:is|was)\s+|has\s+been\s+)?(?:changed|set|updated|reset)\s+to\s+|\s+(?:is|was)(?:\s+(?:now|still|currently|just|actually|simply))?\s+|\s+will\s+be\s+)"#,
        );
        let password_zh = r#"(?P<label>密码|口令|暗码|(?i:pin)码)\s*(?:是|为|：|:|=|就是|都是|改成了?|改为|设成了?|设为|设置为|设置成|换成了?)?\s*["'“‘「]?(?P<v>[\x21\x23-\x26\x28-\x7E]+)"#;
        let key_formats = r"sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[baprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}";
        let key_label = r#"(?i)(?:(?-u:\b)(?:api[\s_-]?keys?|apikey|access[\s_-]?keys?(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?|client[\s_-]?secret|(?:access|auth|bearer|api|refresh|session|github|slack|openai|bot)?[\s_-]?tokens?|bearer|keys?)(?-u:\b)|密钥|秘钥|令牌)(?:\s+(?:for|to|of|on)\s+[^\s.,;:!?]+(?:\s+[^\s.,;:!?]+){0,3}?\s*(?:(?:is|was)\s|[=:：]|是|为)|\s*(?:(?:is|was)(?:\s+now)?\s|[=:：]|是|为)?)\s*["'“‘`]?(?P<v>[A-Za-z0-9_\-./+=]{20,})"#;
        let ssn = r"[0-9]{3}-[0-9]{2}-[0-9]{4}";
        let ssn_label = r"(?i)(?-u:\b)(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\s*(?:(?:is|was)\s|[:#=：])?\s*#?\s*(?P<v>[0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{4})";
        let nino_label = r"(?i)(?-u:\b)(?:national\s+insurance(?:\s+(?:number|no\.?|#))?|ni\s+(?:number|no\.?)|nino)\s*(?:(?:is|was)\s|[:#=：])?\s*(?P<v>[a-z]{2}\s?[0-9]{2}\s?[0-9]{2}\s?[0-9]{2}\s?[a-d])";
        let card_veto = r"(?i)order|tracking|invoice|shipment|parcel|phone|tel\b|mobile|fax|isbn|serial|imei|订单|单号|快递|运单|电话|手机|发票";
        Some(Patterns {
            password_en: Regex::new(&password_en).ok()?,
            password_zh: Regex::new(password_zh).ok()?,
            key_formats: Regex::new(key_formats).ok()?,
            key_label: Regex::new(key_label).ok()?,
            ssn: Regex::new(ssn).ok()?,
            ssn_label: Regex::new(ssn_label).ok()?,
            nino_label: Regex::new(nino_label).ok()?,
            card_veto: Regex::new(card_veto).ok()?,
        })
    }
}

fn patterns() -> Option<&'static Patterns> {
    static PATTERNS: OnceLock<Option<Patterns>> = OnceLock::new();
    PATTERNS.get_or_init(Patterns::compile).as_ref()
}

/// A finding before overlaps are resolved; lower `rank` wins an overlap.
struct Candidate {
    rank: u8,
    kind: CredentialKind,
    span: Range<usize>,
}

/// Every credential in `text`, in text order, non-overlapping (see the module documentation).
pub fn credentials(text: &str) -> Vec<Credential> {
    let Some(p) = patterns() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    labelled_passwords(p, text, &mut found);
    key_formats(p, text, &mut found);
    national_ids(p, text, &mut found);
    cards(p, text, &mut found);
    labelled_keys(p, text, &mut found);
    resolve(found)
}

/// Keep the best-ranked findings that do not overlap one already kept, in text order.
fn resolve(mut found: Vec<Candidate>) -> Vec<Credential> {
    found.sort_by_key(|c| (c.rank, c.span.start, usize::MAX - c.span.end));
    let mut kept: Vec<Credential> = Vec::new();
    for c in found {
        let overlaps = kept
            .iter()
            .any(|k| c.span.start < k.span.end && k.span.start < c.span.end);
        if !overlaps && c.span.start < c.span.end {
            kept.push(Credential {
                kind: c.kind,
                span: c.span,
            });
        }
    }
    kept.sort_by_key(|c| c.span.start);
    kept
}

/// Words that follow "password is" without being a password ("the password is wrong").
#[rustfmt::skip]
const NOT_SECRETS: &[&str] = &[
    "wrong", "right", "correct", "incorrect", "invalid", "valid", "expired", "expiring", "expires",
    "required", "needed", "necessary", "missing", "weak", "strong", "secure", "insecure", "safe",
    "unsafe", "long", "short", "simple", "easy", "hard", "difficult", "complicated", "complex",
    "same", "different", "new", "old", "changed", "reset", "forgotten", "lost", "stolen",
    "compromised", "leaked", "hacked", "saved", "stored", "written", "encrypted", "hashed",
    "hidden", "visible", "blank", "empty", "case", "sensitive", "protected", "okay", "fine",
    "good", "bad", "terrible", "great", "useless", "still", "really", "probably", "definitely",
    "somewhere", "below", "above", "attached", "inside", "printed", "taped", "stuck", "like",
    "something", "nothing", "anything", "everything", "whatever", "unknown", "known", "secret",
    "private", "confidential", "personal", "public", "shared", "mine", "optional", "mandatory",
    "never", "always", "usually", "sometimes", "getting", "going", "manager", "field", "prompt",
    "screen", "policy", "requirements", "rules", "hint", "recovery", "change", "protection",
    "strength", "length", "please", "thanks", "broken", "locked", "disabled", "enabled",
    "working", "accepted", "rejected", "characters", "digits", "letters",
    "numbers", "supposed", "meant", "actually", "literally", "basically", "also", "either",
    "none", "null", "unset", "pending", "sent", "emailed", "texted", "incorrectly", "correctly",
];

/// Whether `value`, found right after a password label, reads as a secret rather than as
/// ordinary words or numbers. `bare` means no connector was written ("PIN 4412"), which asks for
/// a digit; `numeric_label` (PIN, CVV, door code) asks for one too. Secrets are at least
/// `min_len` characters (4, or 3 for a card's CVV), so "8 characters" or "12 digits" never
/// counts.
fn plausible_password(value: &str, bare: bool, numeric_label: bool, min_len: usize) -> bool {
    let len = value.chars().count();
    if !(min_len..=128).contains(&len) {
        return false;
    }
    let lower = value.to_lowercase();
    if NOT_SECRETS.contains(&lower.as_str()) || stopwords::ENGLISH.contains(&lower.as_str()) {
        return false;
    }
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    if (bare || numeric_label) && !has_digit {
        return false;
    }
    // "https://…", "e.g.", "@home" are addresses and abbreviations, not secrets.
    !lower.starts_with("http") && !lower.starts_with("www.")
}

/// Trim punctuation that ends the sentence rather than the secret ("hunter2." "x9!kq,").
fn trim_secret(text: &str, span: Range<usize>) -> Range<usize> {
    let mut end = span.end;
    while end > span.start {
        match char_before(text, end) {
            Some(
                c @ ('.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '>' | '\'' | '"' | '’'
                | '”'),
            ) => {
                end -= c.len_utf8();
            }
            _ => break,
        }
    }
    span.start..end
}

/// "my password is hunter2", "PIN: 4412", "密码是abc123", "开机密码：qwerty".
fn labelled_passwords(p: &Patterns, text: &str, out: &mut Vec<Candidate>) {
    for caps in p.password_en.captures_iter(text) {
        // A quoted secret may hold spaces ("my secret phrase"); a bare one ends at the first.
        let (Some(label), Some(v)) = (caps.name("label"), caps.name("q").or(caps.name("v"))) else {
            continue;
        };
        let label = label.as_str().to_ascii_lowercase();
        let numeric =
            !label.starts_with("pass") && !label.starts_with("pw") && !label.contains("key");
        let span = trim_secret(text, v.range());
        let value = text.get(span.clone()).unwrap_or("");
        let min_len = if label.starts_with("cv") { 3 } else { 4 };
        if plausible_password(value, caps.name("bare").is_some(), numeric, min_len) {
            out.push(Candidate {
                rank: 0,
                kind: CredentialKind::Password,
                span,
            });
        }
    }
    for caps in p.password_zh.captures_iter(text) {
        let Some(v) = caps.name("v") else {
            continue;
        };
        let span = trim_secret(text, v.range());
        let value = text.get(span.clone()).unwrap_or("");
        let follows_word = char_at(text, span.end).is_some_and(|c| c.is_ascii_alphanumeric());
        if !follows_word && plausible_password(value, false, false, 4) {
            out.push(Candidate {
                rank: 0,
                kind: CredentialKind::Password,
                span,
            });
        }
    }
}

/// Whether the characters around `span` let it stand as a token of its own.
fn stands_alone(text: &str, span: &Range<usize>) -> bool {
    let joins =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    !joins(char_before(text, span.start)) && !joins(char_at(text, span.end))
}

/// Provider key formats anywhere in the text.
fn key_formats(p: &Patterns, text: &str, out: &mut Vec<Candidate>) {
    for m in p.key_formats.find_iter(text) {
        let span = trim_secret(text, m.range());
        let token = m.as_str();
        let mixed = token.bytes().any(|b| b.is_ascii_digit())
            && token.bytes().any(|b| b.is_ascii_alphabetic());
        if stands_alone(text, &m.range()) && mixed {
            out.push(Candidate {
                rank: 1,
                kind: CredentialKind::ApiKey,
                span,
            });
        }
    }
}

/// A long token that mixes letters and digits over many distinct characters: what generated
/// keys look like, and what words, paths and numbers do not.
fn high_entropy(token: &str) -> bool {
    let letters = token.bytes().filter(u8::is_ascii_alphabetic).count();
    let digits = token.bytes().filter(u8::is_ascii_digit).count();
    let mut seen = [false; 128];
    for b in token.bytes() {
        if let Some(s) = seen.get_mut(usize::from(b)) {
            *s = true;
        }
    }
    let distinct = seen.iter().filter(|s| **s).count();
    token.len() >= 20 && letters >= 4 && digits >= 2 && distinct >= 10
}

/// "api key: 9f8a…", "the token for staging is …", "密钥是…": a high-entropy token after a
/// key/token/secret label.
fn labelled_keys(p: &Patterns, text: &str, out: &mut Vec<Candidate>) {
    for caps in p.key_label.captures_iter(text) {
        let Some(v) = caps.name("v") else {
            continue;
        };
        let span = trim_secret(text, v.range());
        let token = text.get(span.clone()).unwrap_or("");
        if high_entropy(token) && stands_alone(text, &v.range()) {
            out.push(Candidate {
                rank: 4,
                kind: CredentialKind::ApiKey,
                span,
            });
        }
    }
}

/// SSNs (written ddd-dd-dddd, or nine digits after "SSN"), UK National Insurance numbers after
/// their label, and Chinese resident ids anywhere.
fn national_ids(p: &Patterns, text: &str, out: &mut Vec<Candidate>) {
    let mut push = |span: Range<usize>| {
        out.push(Candidate {
            rank: 2,
            kind: CredentialKind::NationalId,
            span,
        });
    };
    for m in p.ssn.find_iter(text) {
        if ssn_parts(m.as_str()) && isolated_number(text, &m.range()) {
            push(m.range());
        }
    }
    for caps in p.ssn_label.captures_iter(text) {
        if let Some(v) = caps.name("v") {
            if ssn_parts(v.as_str()) && isolated_number(text, &v.range()) {
                push(v.range());
            }
        }
    }
    for caps in p.nino_label.captures_iter(text) {
        if let Some(v) = caps.name("v") {
            let compact: String = v.as_str().chars().filter(|c| !c.is_whitespace()).collect();
            if checksum::is_uk_nino(&compact) && stands_alone(text, &v.range()) {
                push(v.range());
            }
        }
    }
    for span in cn_resident_ids(text) {
        push(span);
    }
}

/// Whether nine digits (with optional space or dash separators) form a valid SSN.
fn ssn_parts(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    let part = |r: Range<usize>| digits.get(r).and_then(|d| d.parse::<u32>().ok());
    match (part(0..3), part(3..5), part(5..9)) {
        (Some(a), Some(g), Some(s)) => digits.len() == 9 && checksum::is_ssn(a, g, s),
        _ => false,
    }
}

/// Whether no digit, letter, dash or decimal point continues the number on either side.
fn isolated_number(text: &str, span: &Range<usize>) -> bool {
    let joins =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let decimal_before = char_before(text, span.start) == Some('.')
        && char_before(text, span.start.saturating_sub(1)).is_some_and(|c| c.is_ascii_digit());
    let decimal_after = matches!(char_at(text, span.end), Some('.' | ','))
        && char_at(text, span.end + 1).is_some_and(|c| c.is_ascii_digit());
    !joins(char_before(text, span.start))
        && !joins(char_at(text, span.end))
        && !decimal_before
        && !decimal_after
}

/// 18-character Chinese resident ids with a valid check character, region and birth date.
fn cn_resident_ids(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for group in digit_runs(text).iter().flatten() {
        let end = match group.len() {
            18 => group.end,
            17 if matches!(char_at(text, group.end), Some('X' | 'x')) => group.end + 1,
            _ => continue,
        };
        let span = group.start..end;
        if stands_alone(text, &span)
            && text
                .get(span.clone())
                .is_some_and(checksum::is_cn_resident_id)
        {
            out.push(span);
        }
    }
    out
}

/// Runs of ASCII digit groups joined by single spaces or single dashes (one kind of separator per
/// run): "4111 1111 1111 1111" is one run of four groups.
fn digit_runs(text: &str) -> Vec<Vec<Range<usize>>> {
    let b = text.as_bytes();
    let is_digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_digit(i) {
            i += 1;
            continue;
        }
        let mut groups = Vec::new();
        let mut sep = None;
        let mut j = i;
        loop {
            let start = j;
            while is_digit(j) {
                j += 1;
            }
            groups.push(start..j);
            match b.get(j) {
                Some(&s @ (b' ' | b'-')) if is_digit(j + 1) && sep.is_none_or(|x| x == s) => {
                    sep = Some(s);
                    j += 1;
                }
                _ => break,
            }
        }
        runs.push(groups);
        i = j;
    }
    runs
}

/// Card numbers: a run (or a leading part of a run, in whole groups) of 13–19 digits that passes
/// [`checksum::is_card_number`], not glued to letters or a '+', and not labelled as an order,
/// tracking or phone number just before.
fn cards(p: &Patterns, text: &str, out: &mut Vec<Candidate>) {
    for run in digit_runs(text) {
        let mut first = 0;
        while first < run.len() {
            let Some(found) = card_in(text, run.get(first..).unwrap_or(&[])) else {
                first += 1;
                continue;
            };
            let (span, used) = found;
            if !card_vetoed(p, text, span.start)
                && isolated_number(text, &span)
                && char_before(text, span.start) != Some('+')
            {
                out.push(Candidate {
                    rank: 3,
                    kind: CredentialKind::CardNumber,
                    span,
                });
            }
            first += used;
        }
    }
}

/// The card number made of the first groups of `groups`, if any; returns its span and how many
/// groups it used. Grouped numbers need groups of at least three digits.
fn card_in(text: &str, groups: &[Range<usize>]) -> Option<(Range<usize>, usize)> {
    let mut digits = String::new();
    for (i, g) in groups.iter().enumerate() {
        if groups.len() > 1 && g.len() < 3 && i + 1 < groups.len() {
            return None;
        }
        digits.push_str(text.get(g.clone())?);
        if digits.len() > 19 {
            return None;
        }
        let grouped_ok = i == 0 || g.len() >= 3;
        if grouped_ok && checksum::is_card_number(&digits) {
            let start = groups.first()?.start;
            return Some((start..g.end, i + 1));
        }
    }
    None
}

/// Whether the words just before `start` say the number is something else (an order, a parcel,
/// a phone).
fn card_vetoed(p: &Patterns, text: &str, start: usize) -> bool {
    let mut from = start.saturating_sub(24);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    text.get(from..start)
        .is_some_and(|before| p.card_veto.is_match(before))
}

#[cfg(test)]
pub(super) fn compiled() -> bool {
    patterns().is_some()
}
