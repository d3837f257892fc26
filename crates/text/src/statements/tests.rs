//! Tables of lines and the statements they must (or must not) yield.
//!
//! Subjects are written short: "me" is the speaker, "rel:sister" a relation, "name:Alex" a
//! named person or organization, "thing:project" a thing.

use proptest::prelude::*;

use super::*;

mod broad_cases;
mod chinese_cases;
mod english_cases;
mod tuning;
mod tuning_cases;

/// (line, subject, slot, qualifier, value, negated)
pub(super) type Case = (
    &'static str,
    &'static str,
    Slot,
    &'static str,
    &'static str,
    bool,
);

fn subject(short: &str) -> Subject {
    match short.split_once(':') {
        Some(("rel", r)) => Subject::Related(r.to_string()),
        Some(("name", n)) => Subject::Named(n.to_string()),
        Some(("thing", t)) => Subject::Thing(t.to_string()),
        _ => Subject::Speaker,
    }
}

/// Every case's statement is among the line's statements; returns the failures.
fn failures(cases: &[Case]) -> Vec<String> {
    let mut failed = Vec::new();
    for &(line, who, slot, qualifier, value, negated) in cases {
        let analysis = analyze(line);
        let want_subject = subject(who);
        let hit = analysis.statements.iter().any(|s| {
            s.subject == want_subject
                && s.slot == slot
                && s.qualifier == qualifier
                && s.value == value
                && s.negated == negated
        });
        if !hit {
            failed.push(format!(
                "{line:?}\n    want {want_subject:?} {slot:?} q={qualifier:?} v={value:?} neg={negated}\n    got  {:?}",
                analysis
                    .statements
                    .iter()
                    .map(|s| format!("{:?} {:?} q={:?} v={:?} neg={}", s.subject, s.slot, s.qualifier, s.value, s.negated))
                    .collect::<Vec<_>>()
            ));
        }
    }
    failed
}

fn assert_cases(cases: &[Case]) {
    let failed = failures(cases);
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

/// Lines that must give no statement about the speaker.
fn assert_no_speaker(lines: &[&str]) {
    let mut failed = Vec::new();
    for line in lines {
        let analysis = analyze(line);
        let speaker: Vec<&Statement> = analysis
            .statements
            .iter()
            .filter(|s| s.subject == Subject::Speaker)
            .collect();
        if !speaker.is_empty() {
            failed.push(format!("{line:?} gave {speaker:?}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Lines that must give no statement at all.
fn assert_nothing(lines: &[&str]) {
    let mut failed = Vec::new();
    for line in lines {
        let analysis = analyze(line);
        if !analysis.statements.is_empty() {
            failed.push(format!("{line:?} gave {:?}", analysis.statements));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn english_statements() {
    assert_cases(english_cases::STATEMENTS);
}

#[test]
fn chinese_statements() {
    assert_cases(chinese_cases::STATEMENTS);
}

#[test]
fn english_distractors_say_nothing_about_the_speaker() {
    assert_no_speaker(english_cases::NOT_THE_SPEAKER);
    assert_nothing(english_cases::NOTHING);
}

#[test]
fn chinese_distractors_say_nothing_about_the_speaker() {
    assert_no_speaker(chinese_cases::NOT_THE_SPEAKER);
    assert_nothing(chinese_cases::NOTHING);
}

#[test]
fn enough_cases_in_each_table() {
    assert!(english_cases::STATEMENTS.len() >= 120);
    assert!(chinese_cases::STATEMENTS.len() >= 120);
    let distractors = english_cases::NOT_THE_SPEAKER.len()
        + english_cases::NOTHING.len()
        + chinese_cases::NOT_THE_SPEAKER.len()
        + chinese_cases::NOTHING.len();
    assert!(distractors >= 60);
    assert!(english_cases::ASKED.len() + chinese_cases::ASKED.len() >= 40);
}

#[test]
fn update_pairs_share_slot_subject_and_qualifier() {
    for pair in english_cases::UPDATES.iter().chain(chinese_cases::UPDATES) {
        let (old, new) = *pair;
        let a = analyze(old).statements;
        let b = analyze(new).statements;
        let shared = a.iter().any(|x| {
            b.iter().any(|y| {
                x.subject == y.subject
                    && x.slot == y.slot
                    && x.qualifier == y.qualifier
                    && x.value_key != y.value_key
            })
        });
        assert!(shared, "{old:?} → {a:?}\n{new:?} → {b:?}");
    }
}

#[test]
fn corrections() {
    for &(line, wrong, right) in english_cases::CORRECTIONS
        .iter()
        .chain(chinese_cases::CORRECTIONS)
    {
        let c = analyze(line).correction;
        let got = c.as_ref().map(|c| (c.wrong.as_deref(), c.right.as_str()));
        assert_eq!(got, Some((wrong, right)), "{line:?}");
    }
    for line in english_cases::NOT_CORRECTIONS
        .iter()
        .chain(chinese_cases::NOT_CORRECTIONS)
    {
        assert_eq!(analyze(line).correction, None, "{line:?}");
    }
}

#[test]
fn correction_keys_are_normalized() {
    let c = analyze("不是周三，是周四").correction.unwrap();
    assert_eq!(c.right_key, "weekday-4");
    assert_eq!(c.wrong_key.as_deref(), Some("weekday-3"));
    let c = analyze("Make it Thursday instead.").correction.unwrap();
    assert_eq!(c.right_key, "weekday-4");
    assert_eq!(c.wrong, None);
}

#[test]
fn a_statement_with_its_correction() {
    let a = analyze("Actually I live in Seoul, not Busan.");
    assert!(a
        .statements
        .iter()
        .any(|s| s.slot == Slot::Residence && s.value == "Seoul"));
    let c = a.correction.unwrap();
    assert_eq!(
        (c.wrong.as_deref(), c.right.as_str()),
        (Some("Busan"), "Seoul")
    );
}

#[test]
fn corrections_after_a_bare_marker() {
    let c = analyze("我说错了。是周四。").correction.unwrap();
    assert_eq!(c.right, "周四");
    let c = analyze("Sorry, my mistake. It's Thursday.")
        .correction
        .unwrap();
    assert_eq!(c.right, "Thursday");
}

#[test]
fn asked_slots() {
    let mut failed = Vec::new();
    for &(question, who, slot, qualifier) in english_cases::ASKED.iter().chain(chinese_cases::ASKED)
    {
        let want = Asked {
            subject: subject(who),
            slot,
            qualifier: qualifier.to_string(),
        };
        let got = asked(question);
        if !got.contains(&want) {
            failed.push(format!("{question:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn asked_about_nothing_known() {
    for q in english_cases::ASKED_NOTHING
        .iter()
        .chain(chinese_cases::ASKED_NOTHING)
    {
        assert_eq!(asked(q), Vec::new(), "{q:?}");
    }
}

#[test]
fn asked_qualifiers_match_statements() {
    for &(question, statement) in english_cases::ASKED_MATCHES
        .iter()
        .chain(chinese_cases::ASKED_MATCHES)
    {
        let asks = asked(question);
        let said = analyze(statement).statements;
        let matched = asks.iter().any(|a| {
            said.iter()
                .any(|s| s.slot == a.slot && s.subject == a.subject && s.qualifier == a.qualifier)
        });
        assert!(matched, "{question:?} → {asks:?}\n{statement:?} → {said:?}");
    }
}

#[test]
fn spans_point_at_the_stating_sentence() {
    let line = "Hi there! Long week. By the way, I live in Tallinn these days. 我现在住在洛阳。";
    let a = analyze(line);
    let tallinn = a.statements.iter().find(|s| s.value == "Tallinn").unwrap();
    assert_eq!(
        &line[tallinn.span.clone()],
        "By the way, I live in Tallinn these days."
    );
    let luoyang = a.statements.iter().find(|s| s.value == "洛阳").unwrap();
    assert_eq!(&line[luoyang.span.clone()], "我现在住在洛阳。");
    assert!(a
        .statements
        .windows(2)
        .all(|w| w[0].span.start <= w[1].span.start));
}

#[test]
fn value_keys() {
    let a = analyze("I now run forty-two kilometres a week.");
    let q = a
        .statements
        .iter()
        .find(|s| s.slot == Slot::Quantity)
        .unwrap();
    assert_eq!(q.value_key, "42");
    let a = analyze("我今年二十八岁");
    assert_eq!(a.statements[0].value_key, "28");
    let a = analyze("The dentist appointment is on Wed.");
    assert_eq!(a.statements[0].value_key, "weekday-3");
    let a = analyze("我的牙医预约在礼拜三");
    assert_eq!(a.statements[0].value_key, "weekday-3");
}

#[test]
fn every_rule_compiles() {
    for p in english::debug_patterns()
        .iter()
        .chain(chinese::debug_patterns().iter())
    {
        assert!(scan::compile(p).is_some(), "does not compile: {p}");
    }
}

#[test]
fn quoted_names_stay_quoted_speech_goes() {
    let a = analyze("My cat is called \"Biscotti\".");
    assert_eq!(a.statements[0].value, "Biscotti");
    let a = analyze("我家的猫叫“芝麻”。");
    assert_eq!(a.statements[0].value, "芝麻");
    assert!(analyze("My friend said \"I live in Paris now\".")
        .statements
        .is_empty());
    assert!(analyze("她跟我说“我现在住在上海”").statements.is_empty());
}

#[test]
#[ignore = "timing: run with --release --ignored"]
fn timing_per_line() {
    let english = [
        "By the way, I live in Tallinn these days.",
        "I changed careers last month; I'm a locksmith now.",
        "I run 17 kilometres every week.",
        "My favourite drink is hibiscus tea.",
        "Acme named Raj Patel as its new CEO.",
    ];
    let chinese = [
        "对了，我现在住在洛阳。",
        "我上个月换工作了，现在是一名锁匠。",
        "为了保持身材，我每周跑17公里。",
        "我家的猫叫芝麻糊",
        "会议改到周四了",
    ];
    for line in english.iter().chain(&chinese) {
        analyze(line);
    }
    for (label, lines) in [("English", &english), ("Chinese", &chinese)] {
        let rounds = 2000;
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            for line in lines.iter() {
                std::hint::black_box(analyze(line));
            }
        }
        let micros = start.elapsed().as_secs_f64() * 1e6 / (rounds * lines.len()) as f64;
        eprintln!("{label}: {micros:.1} µs per line");
    }
}

fn mixed_text() -> impl Strategy<Value = String> {
    let pieces = prop::collection::vec(
        prop_oneof![
            Just("I live in ".to_string()),
            Just("我住在".to_string()),
            Just("'s ".to_string()),
            Just("“".to_string()),
            Just("\"".to_string()),
            Just("。".to_string()),
            Just("？".to_string()),
            Just("🙂".to_string()),
            Just("e\u{301}".to_string()),
            Just("Porto".to_string()),
            Just("叫".to_string()),
            Just("42".to_string()),
            Just("四十二".to_string()),
            Just(", not ".to_string()),
            Just("不是".to_string()),
            "\\PC{0,12}",
        ],
        0..24,
    );
    pieces.prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn never_panics_and_spans_are_char_ranges(text in mixed_text()) {
        let a = analyze(&text);
        for s in &a.statements {
            prop_assert!(s.span.end <= text.len());
            prop_assert!(text.is_char_boundary(s.span.start) && text.is_char_boundary(s.span.end));
        }
        if let Some(c) = &a.correction {
            prop_assert!(text.is_char_boundary(c.span.start) && text.is_char_boundary(c.span.end));
        }
        let _ = asked(&text);
    }

    #[test]
    fn never_panics_on_any_string(text in "\\PC*") {
        let _ = analyze(&text);
        let _ = asked(&text);
    }
}

#[test]
fn long_lines_are_handled() {
    let mut line = "I live in Porto now. 我住在成都。🙂 ".repeat(3000);
    line.push('é');
    assert!(line.len() > 64 * 1024);
    let start = std::time::Instant::now();
    let a = analyze(&line);
    assert!(!a.statements.is_empty());
    for s in &a.statements {
        assert!(s.span.end <= line.len());
    }
    let _ = asked(&line);
    assert!(start.elapsed().as_secs() < 30);
}

#[test]
fn statements_in_constructions_the_first_cases_did_not_use() {
    assert_cases(broad_cases::ENGLISH);
    assert_cases(broad_cases::CHINESE);
    assert_cases(broad_cases::CHANGES);
    assert_cases(broad_cases::SLOTS);
}
