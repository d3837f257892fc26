use super::*;

fn host(id: &str, n: usize, timed: bool) -> Conversation {
    let items = (0..n)
        .map(|i| Item {
            label: i.to_string(),
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            speaker: Some(if i % 2 == 0 { "Ann" } else { "Bo" }.to_string()),
            text: "a message about the weather".to_string(),
            time: timed.then(|| Timestamp(1_000_000 + i as i64 * 60_000)),
            session: (i / 40).to_string(),
            metadata: Metadata::new(),
        })
        .collect();
    Conversation {
        id: id.into(),
        items,
        questions: Vec::new(),
    }
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn probes(
    half: Half,
    language: ProbeLanguage,
    hosts: &[Conversation],
    seed: u64,
) -> Vec<UpdateProbe> {
    let settings = ProbeSettings {
        half,
        language,
        hosts,
        seed,
        window: 120,
    };
    update_probes(&settings, &words)
}

#[test]
fn every_slot_and_kind_has_probes_in_both_languages_and_halves() {
    let hosts = [host("a", 300, true), host("b", 200, false)];
    for half in [Half::Tuning, Half::Test] {
        for language in [ProbeLanguage::En, ProbeLanguage::Zh] {
            let made = probes(half, language, &hosts, 7);
            assert!(made.len() >= 150, "{half:?} {language:?}: {}", made.len());
            for slot in [UpdateSlot::Residence, UpdateSlot::Ceo, UpdateSlot::Date] {
                assert!(made.iter().any(|p| p.slot == slot));
            }
            for kind in [
                ProbeKind::Update,
                ProbeKind::Correction,
                ProbeKind::Negation,
                ProbeKind::Repeat,
                ProbeKind::AsOf,
                ProbeKind::OtherPerson,
                ProbeKind::Hypothetical,
                ProbeKind::Quoted,
            ] {
                assert!(made.iter().any(|p| p.kind == kind), "{kind:?}");
            }
            for updates in 1..=3 {
                assert!(made
                    .iter()
                    .any(|p| p.kind == ProbeKind::Update && p.updates == updates));
            }
            assert!(made
                .iter()
                .all(|p| p.half == half && p.language == language));
        }
    }
}

#[test]
fn the_halves_share_no_phrasing_and_no_value() {
    let all = tuning::TEMPLATES.iter().chain(test::TEMPLATES);
    let mut seen: std::collections::HashMap<String, Half> = std::collections::HashMap::new();
    for t in all {
        let texts = t
            .statements
            .iter()
            .chain(t.updates)
            .chain([
                &t.correction,
                &t.repeat,
                &t.other_person,
                &t.hypothetical,
                &t.question,
            ])
            .chain(t.negation.iter())
            .chain(t.quoted.iter())
            .map(|s| s.to_string())
            .chain(
                t.values
                    .iter()
                    .map(|v| format!("value:{v}:{}", t.slot.as_str())),
            );
        for text in texts {
            if let Some(other) = seen.insert(text.clone(), t.half) {
                assert_eq!(other, t.half, "shared by both halves: {text}");
            }
        }
    }
}

#[test]
fn lines_come_in_order_before_the_question_and_no_value_is_in_the_window() {
    let hosts = [host("a", 300, true)];
    for probe in probes(Half::Test, ProbeLanguage::En, &hosts, 3) {
        let items = &probe.stream.conversation.items;
        let at = |n: usize| {
            items
                .iter()
                .position(|i| i.label == format!("{LINE_LABEL}-{n}"))
                .unwrap()
        };
        for n in 1..probe.lines.len() {
            assert!(at(n - 1) < at(n), "{}", probe.id);
        }
        let first = at(0);
        assert_eq!(items[first].role, Role::User);
        assert_eq!(items[first].speaker.as_deref(), Some("Ann"));
        assert_eq!(items[first + 1].role, Role::Assistant);
        assert_eq!(probe.stream.asks[0].after_item, items.len());
        let question = &probe.stream.conversation.questions[0];
        assert_eq!(question.answer.as_deref(), Some(probe.expected.as_str()));
        let host_text: Vec<&str> = items
            .iter()
            .filter(|i| !i.label.starts_with(LINE_LABEL))
            .map(|i| i.text.as_str())
            .collect();
        for value in probe
            .stale
            .iter()
            .chain([&probe.expected])
            .chain(&probe.distractor)
        {
            assert!(
                !answer_in_context(value, &host_text.join("\n")),
                "{}: {value}",
                probe.id
            );
        }
        if probe.kind == ProbeKind::Update {
            assert!(
                !probe.lines.last().unwrap().contains(&probe.stale[0]),
                "an update never names the stale value"
            );
        }
    }
}

#[test]
fn a_question_about_the_past_falls_between_the_statement_and_the_update() {
    for (timed, language) in [(true, ProbeLanguage::En), (false, ProbeLanguage::Zh)] {
        let hosts = [host("a", 300, timed)];
        let made = probes(Half::Tuning, language, &hosts, 5);
        let past: Vec<&UpdateProbe> = made.iter().filter(|p| p.kind == ProbeKind::AsOf).collect();
        assert!(!past.is_empty());
        for probe in past {
            let items = &probe.stream.conversation.items;
            let time = |n: usize| {
                items
                    .iter()
                    .find(|i| i.label == format!("{LINE_LABEL}-{n}"))
                    .and_then(|i| i.time)
                    .unwrap()
            };
            let at = probe.as_of.expect("as_of");
            assert!(time(0) < at && at < time(1), "{}", probe.id);
            assert_eq!(probe.stream.conversation.questions[0].as_of, Some(at));
            assert!(!probe.question.contains("{when}"));
            assert_eq!(
                probe.expected,
                probe.lines[0]
                    .split_whitespace()
                    .find(|_| true)
                    .map(|_| probe.expected.clone())
                    .unwrap()
            );
        }
    }
}

#[test]
fn positions_are_seeded() {
    let hosts = [host("a", 300, true)];
    let a = probes(Half::Test, ProbeLanguage::Zh, &hosts, 11);
    let b = probes(Half::Test, ProbeLanguage::Zh, &hosts, 11);
    let c = probes(Half::Test, ProbeLanguage::Zh, &hosts, 12);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_window_that_names_a_value_is_not_used_for_it() {
    let mut named = host("named", 130, true);
    for item in &mut named.items {
        item.text = "I grew up in Reykjavik.".into();
    }
    let made = probes(
        Half::Test,
        ProbeLanguage::En,
        &[named.clone(), host("plain", 130, true)],
        1,
    );
    assert!(made
        .iter()
        .filter(|p| p.expected == "Reykjavik" || p.stale.iter().any(|s| s == "Reykjavik"))
        .all(|p| p.host == "plain"));
    let only = probes(Half::Test, ProbeLanguage::En, &[named], 1);
    assert!(only
        .iter()
        .all(|p| p.expected != "Reykjavik" && !p.stale.iter().any(|s| s == "Reykjavik")));
}

#[test]
fn short_hosts_are_not_used() {
    assert!(probes(Half::Test, ProbeLanguage::En, &[host("tiny", 30, true)], 1).is_empty());
}
