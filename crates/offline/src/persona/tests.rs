use std::sync::Arc;

use mnemos_core::memory_model::{KeyKind, Line, PersonaKey, PersonaSchema};
use mnemos_core::{MemoryModelExt, ModelError, Role};
use mnemos_embed::HashEmbedder;
use mnemos_text::Analyzer;
use proptest::prelude::*;

use super::{persona_snapshot, Concept};
use crate::{Ctx, OfflineModel};

fn snapshot_of(window: &[Line], schema: &PersonaSchema) -> Vec<(String, String, Option<usize>)> {
    let embedder = HashEmbedder::default();
    let ctx = Ctx {
        analyzer: Analyzer::shared(),
        embedder: &embedder,
    };
    persona_snapshot(&ctx, window, schema)
        .unwrap()
        .into_iter()
        .map(|v| (v.key, v.value, v.line))
        .collect()
}

fn user_says(text: &str) -> Vec<(String, String)> {
    snapshot_of(
        &[Line::new(Role::User, None, text)],
        &PersonaSchema::default_keys(),
    )
    .into_iter()
    .map(|(k, v, _)| (k, v))
    .collect()
}

/// Runs a table of (sentence, expected (key, value) pairs in output order) and reports every
/// mismatch at once.
fn check_table(table: &[(&str, &[(&str, &str)])]) {
    let mut failures = Vec::new();
    for (text, expected) in table {
        let got = user_says(text);
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if got != want {
            failures.push(format!("{text:?}\n   want {want:?}\n    got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const ENGLISH: &[(&str, &[(&str, &str)])] = &[
    ("Hi, I'm Caroline.", &[("name", "Caroline")]),
    (
        "My name is Tom Baker and I'm 28 years old.",
        &[("name", "Tom Baker"), ("age", "28")],
    ),
    ("You can call me Max.", &[("name", "Max")]),
    ("I just turned 30!", &[("age", "30")]),
    (
        "I'm a 45-year-old accountant.",
        &[("age", "45"), ("job", "accountant")],
    ),
    (
        "I'm a transgender woman.",
        &[("gender", "transgender woman")],
    ),
    (
        "As a transgender woman, I know how hard it is.",
        &[("gender", "transgender woman")],
    ),
    (
        "I'm a nurse at St. Mary's hospital.",
        &[("job", "nurse"), ("workplace", "St. Mary's hospital")],
    ),
    (
        "I work as a software engineer at Google.",
        &[("job", "software engineer"), ("workplace", "Google")],
    ),
    ("I work in marketing.", &[("job", "marketing")]),
    (
        "I'm studying computer science at MIT.",
        &[("job", "computer science"), ("workplace", "MIT")],
    ),
    (
        "I was a teacher for 20 years.",
        &[("job", "formerly teacher")],
    ),
    ("I live in Boston now.", &[("location", "Boston")]),
    (
        "I used to live in Paris.",
        &[("location", "formerly Paris")],
    ),
    (
        "I grew up in a small town near Denver.",
        &[("location", "a small town near Denver")],
    ),
    ("I have a dog named Max.", &[("pets", "a dog named Max")]),
    (
        "My sister lives in Chicago.",
        &[("family", "sister lives in Chicago")],
    ),
    (
        "I took my kids to the museum yesterday.",
        &[("family", "kids")],
    ),
    ("I have two kids.", &[("family", "two kids")]),
    (
        "My boyfriend Jake is a chef.",
        &[("relationships", "boyfriend Jake is a chef")],
    ),
    (
        "I'm married to Sam.",
        &[("relationships", "married to Sam")],
    ),
    (
        "I love hiking in the mountains.",
        &[("likes", "hiking in the mountains")],
    ),
    (
        "I really love hiking, swimming and reading.",
        &[("likes", "hiking, swimming and reading")],
    ),
    (
        "My favorite food is sushi.",
        &[("likes", "favorite food is sushi")],
    ),
    ("Jazz is my favorite.", &[("likes", "Jazz")]),
    (
        "I'm a big fan of Taylor Swift.",
        &[("likes", "Taylor Swift")],
    ),
    ("I don't like coffee.", &[("dislikes", "coffee")]),
    ("I can't stand loud music.", &[("dislikes", "loud music")]),
    (
        "I usually go jogging before work.",
        &[("habits", "usually go jogging before work")],
    ),
    (
        "Every Sunday I call my mom.",
        &[("family", "mom"), ("habits", "call my mom every Sunday")],
    ),
    ("I'm a vegetarian.", &[("habits", "vegetarian")]),
    ("I don't drink.", &[("habits", "don't drink")]),
    (
        "I'm planning to visit Japan next spring.",
        &[("plans", "visit Japan next spring")],
    ),
    (
        "I'd love to support those with similar issues.",
        &[("plans", "support those with similar issues")],
    ),
    (
        "Gonna continue my edu and check out career options, which is pretty exciting!",
        &[("plans", "continue my edu and check out career options")],
    ),
    (
        "I'm thinking about getting a cat.",
        &[("plans", "getting a cat")],
    ),
    ("I'm a bit shy.", &[("personality", "a bit shy")]),
    (
        "I'm not very patient.",
        &[("personality", "not very patient")],
    ),
    ("I'm an introvert.", &[("personality", "introvert")]),
    // Questions, hypotheticals, compliments and talk about the talk give nothing.
    ("Do you like jazz?", &[]),
    ("Are you a nurse", &[]),
    ("If I were a doctor I would help.", &[]),
    ("I think I'm a good cook.", &[]),
    ("I love you.", &[]),
    ("I want to say thank you.", &[]),
    ("I'm 5 minutes away.", &[]),
    ("I'm Chinese.", &[]),
    ("I'm not a nurse.", &[]),
    ("I used to love opera.", &[]),
    // Shapes seen in LoCoMo that must not fire (or fire narrowly).
    (
        "And yup, I do- Oscar, my guinea pig.",
        &[("pets", "guinea pig")],
    ),
    ("Here's a photo of my horse painting I did recently.", &[]),
    ("I've known these friends for 4 years.", &[]),
    ("I'd love to see another painting of yours!", &[]),
    (
        "We celebrated my daughter's birthday.",
        &[("family", "daughter")],
    ),
    ("Gonna be a great night featuring LGBTQ artists.", &[]),
    ("Thanks, my friend!", &[]),
];

const CHINESE: &[(&str, &[(&str, &str)])] = &[
    ("我叫小明，今年28岁。", &[("name", "小明"), ("age", "28岁")]),
    ("我的名字叫李华", &[("name", "李华")]),
    ("大家都叫我小白", &[("name", "小白")]),
    ("我今年三十岁了", &[("age", "三十岁")]),
    ("我是90后", &[("age", "90后")]),
    ("我是个男生", &[("gender", "男生")]),
    ("我是一名护士", &[("job", "护士")]),
    ("我在医院当护士", &[("job", "护士"), ("workplace", "医院")]),
    (
        "我是北京大学的学生",
        &[("job", "学生"), ("workplace", "北京大学")],
    ),
    ("我在腾讯工作", &[("workplace", "腾讯")]),
    ("我是干销售的", &[("job", "销售")]),
    ("我学的是计算机", &[("job", "计算机")]),
    ("我以前是老师", &[("job", "以前是老师")]),
    ("我住在上海", &[("location", "上海")]),
    ("我以前住在北京", &[("location", "以前在北京")]),
    ("我是北京人", &[("location", "北京")]),
    ("可能我是那个天选之人吧", &[]),
    (
        "不然整个厨房烧了我住楼下的也救不了你",
        &[("location", "楼下")],
    ),
    (
        "你可以叫我寅星，或者直接叫我的名字也可以",
        &[("name", "寅星")],
    ),
    ("嗯，我还挺喜欢园艺的，尤其是养花", &[("likes", "园艺")]),
    ("我妈妈是医生", &[("family", "妈妈是医生")]),
    ("我有两个孩子", &[("family", "两个孩子")]),
    ("我养了一只狗，叫旺财", &[("pets", "一只狗，叫旺财")]),
    ("我的猫叫咪咪", &[("pets", "猫叫咪咪")]),
    ("我喜欢爬山", &[("likes", "爬山")]),
    ("我喜欢唱歌、跳舞和画画", &[("likes", "唱歌、跳舞和画画")]),
    ("我最喜欢的颜色是蓝色", &[("likes", "最喜欢的颜色是蓝色")]),
    ("我对摄影很感兴趣", &[("likes", "摄影")]),
    ("我不喜欢咖啡", &[("dislikes", "咖啡")]),
    ("我讨厌下雨天", &[("dislikes", "下雨天")]),
    ("我对数学不感兴趣", &[("dislikes", "数学")]),
    ("我每天早上跑步", &[("habits", "每天早上跑步")]),
    ("每天晚上我都会看书", &[("habits", "每天晚上看书")]),
    ("我从不喝酒", &[("habits", "从不喝酒")]),
    ("我打算明年去日本旅游", &[("plans", "明年去日本旅游")]),
    ("我想当医生", &[("plans", "当医生")]),
    ("我正在考虑换工作", &[("plans", "换工作")]),
    ("我男朋友很帅", &[("relationships", "男朋友很帅")]),
    ("我结婚了", &[("relationships", "结婚")]),
    ("我是你的老师", &[("relationships", "你的老师")]),
    ("我比较内向", &[("personality", "内向")]),
    ("我不太外向", &[("personality", "不太外向")]),
    ("我是一个很内向的人", &[("personality", "内向")]),
    // Questions, conditions, negated facts and words that only look like patterns.
    ("你喜欢爵士乐吗？", &[]),
    ("你是不是喜欢我", &[]),
    ("如果我是老师就好了", &[]),
    ("我喜欢你", &[]),
    ("我不是老师", &[]),
    ("我没有养宠物", &[]),
    ("我叫了外卖", &[]),
    ("我当然知道", &[]),
    ("我在想你", &[]),
    // Shapes seen in ZH-4O that must not fire.
    ("你不知道 一直说我是男生", &[]),
    ("我是男生还是女生", &[]),
    ("晚安，我的朋友。", &[]),
    ("我喜欢这样的你", &[]),
    ("我以后会注意的", &[]),
];

#[test]
fn english_sentences_give_their_persona_values() {
    assert!(ENGLISH.len() >= 25);
    check_table(ENGLISH);
}

#[test]
fn chinese_sentences_give_their_persona_values() {
    assert!(CHINESE.len() >= 20);
    check_table(CHINESE);
}

#[test]
fn every_default_key_is_produced_by_some_sentence() {
    let mut produced = std::collections::HashSet::new();
    for (text, _) in ENGLISH.iter().chain(CHINESE) {
        for (key, _) in user_says(text) {
            produced.insert(key);
        }
    }
    for key in PersonaSchema::default_keys().keys {
        assert!(
            produced.contains(&key.name),
            "no sentence fills '{}'",
            key.name
        );
    }
}

#[test]
fn mixed_odd_and_empty_input_never_fails() {
    check_table(&[
        ("我是一名software engineer", &[("job", "software engineer")]),
        ("I live in 北京", &[("location", "北京")]),
        ("我喜欢hiking", &[("likes", "hiking")]),
        ("I love 火锅 so much 😋", &[("likes", "火锅")]),
        ("😀😀😀", &[]),
        ("", &[]),
        ("   \n\t ", &[]),
        ("(smiles) I'm a nurse.", &[("job", "nurse")]),
        ("（开心地跳起来）我喜欢唱歌", &[("likes", "唱歌")]),
        ("I'm (unclosed a nurse", &[]),
        ("I I I I my my my 我我我 的的的", &[]),
    ]);
    // A very long line: still answers, facts at both ends are found, values stay short.
    let filler = "blah ".repeat(40_000);
    let long = format!("I'm a pilot. {filler} 我住在广州。{}", "x".repeat(50_000));
    let got = user_says(&long);
    assert!(got.contains(&("job".into(), "pilot".into())), "{got:?}");
    assert!(got.contains(&("location".into(), "广州".into())), "{got:?}");
    let unbroken = format!("I love {}", "a".repeat(100_000));
    for (_, value) in user_says(&unbroken) {
        assert!(value.len() <= 100_010);
    }
    let empty: Vec<Line> = Vec::new();
    assert!(snapshot_of(&empty, &PersonaSchema::default_keys()).is_empty());
}

#[test]
fn only_user_lines_and_named_speakers_count() {
    let window = vec![
        Line::new(
            Role::Assistant,
            None,
            "I'm an AI assistant and I love helping.",
        ),
        Line::new(Role::User, Some("Ann"), "I'm a nurse."),
        Line::new(
            Role::Assistant,
            Some("白羽岚"),
            "(微笑)我是你的老师，我喜欢看书。",
        ),
        Line::new(Role::Other, None, "I'm a pilot."),
        Line::new(Role::Other, Some("Bob"), "I live in Oslo."),
    ];
    let got = snapshot_of(&window, &PersonaSchema::default_keys());
    assert_eq!(
        got,
        vec![
            ("job".into(), "nurse".into(), Some(1)),
            ("likes".into(), "看书".into(), Some(2)),
            // 白羽岚 speaks to Ann, the nearest other named speaker.
            ("relationships".into(), "Ann的老师".into(), Some(2)),
            ("location".into(), "Oslo".into(), Some(4)),
        ]
    );
}

#[test]
fn output_is_ordered_by_line_then_schema_keys_and_deduplicated() {
    let window = vec![
        Line::new(Role::User, None, "I love jazz. I'm a nurse."),
        Line::new(
            Role::User,
            None,
            "I'm a nurse, and I love jazz. I have a cat.",
        ),
        Line::new(Role::User, None, "我喜欢爬山。我是老师。"),
    ];
    let got = snapshot_of(&window, &PersonaSchema::default_keys());
    assert_eq!(
        got,
        vec![
            ("job".into(), "nurse".into(), Some(0)),
            ("likes".into(), "jazz".into(), Some(0)),
            ("pets".into(), "a cat".into(), Some(1)),
            ("job".into(), "老师".into(), Some(2)),
            ("likes".into(), "爬山".into(), Some(2)),
        ]
    );
    // The schema's key order decides the order within a line.
    let mut reversed = PersonaSchema::default_keys();
    reversed.keys.reverse();
    let got = snapshot_of(&window[..1], &reversed);
    let keys: Vec<&str> = got.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(keys, ["likes", "job"]);
    // Deterministic.
    assert_eq!(
        snapshot_of(&window, &PersonaSchema::default_keys()),
        snapshot_of(&window, &PersonaSchema::default_keys())
    );
}

#[test]
fn custom_schemas_get_only_their_keys_mapped_by_name_or_description() {
    let schema = PersonaSchema {
        keys: vec![
            PersonaKey::new("occupation", KeyKind::Replace, "what they do for a living"),
            PersonaKey::new("hobbies", KeyKind::Append, "pastimes"),
            PersonaKey::new("residence", KeyKind::Trajectory, "where the person lives"),
            PersonaKey::new("职业", KeyKind::Replace, ""),
            PersonaKey::new("shoe_size", KeyKind::Replace, "EU shoe size"),
        ],
    };
    let window = vec![Line::new(
        Role::User,
        None,
        "I'm a nurse and I love hiking. I live in Oslo. I have a dog.",
    )];
    let got = snapshot_of(&window, &schema);
    assert_eq!(
        got,
        vec![
            ("occupation".into(), "nurse".into(), Some(0)),
            ("hobbies".into(), "hiking".into(), Some(0)),
            ("residence".into(), "Oslo".into(), Some(0)),
            ("职业".into(), "nurse".into(), Some(0)),
        ]
    );
    let unknown = PersonaSchema {
        keys: vec![PersonaKey::new(
            "shoe_size",
            KeyKind::Replace,
            "EU shoe size",
        )],
    };
    assert!(snapshot_of(&window, &unknown).is_empty());
}

#[test]
fn concepts_come_from_key_names_then_descriptions() {
    let of = |name: &str, description: &str| {
        Concept::of_key(&PersonaKey::new(name, KeyKind::Append, description))
    };
    assert_eq!(of("likes", ""), Some(Concept::Likes));
    assert_eq!(of("occupation", ""), Some(Concept::Job));
    assert_eq!(of("favorite_things", ""), Some(Concept::Likes));
    assert_eq!(of("hometown", ""), Some(Concept::Location));
    assert_eq!(of("爱好", ""), Some(Concept::Likes));
    assert_eq!(of("x1", "the person's occupation"), Some(Concept::Job));
    assert_eq!(
        of("x2", "things the person dislikes"),
        Some(Concept::Dislikes)
    );
    assert_eq!(
        of("manager_notes", ""),
        None,
        "'age' inside 'manager' is not a word"
    );
    assert_eq!(of("shoe_size", "EU shoe size"), None);
    // Every default key maps to itself.
    for key in PersonaSchema::default_keys().keys {
        assert!(Concept::of_key(&key).is_some(), "{}", key.name);
    }
}

#[test]
fn the_offline_model_runs_the_task_and_validates_it() {
    let model = OfflineModel::new(Arc::new(HashEmbedder::default()));
    let window = vec![Line::new(Role::User, None, "我叫小明，我住在杭州。")];
    let values = model
        .persona_snapshot(&window, &PersonaSchema::default_keys())
        .unwrap();
    let pairs: Vec<(&str, &str)> = values
        .iter()
        .map(|v| (v.key.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(pairs, [("name", "小明"), ("location", "杭州")]);
    let blank = vec![Line::new(Role::User, None, "  ")];
    assert!(matches!(
        model.persona_snapshot(&blank, &PersonaSchema::default_keys()),
        Err(ModelError::InvalidInput(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn arbitrary_text_never_panics_and_values_are_clean(text in "\\PC{0,200}", prefix in prop::sample::select(vec!["I'm ", "I love ", "my ", "我是", "我喜欢", "我叫", ""])) {
        let line = format!("{prefix}{text}");
        let window = vec![Line::new(Role::User, None, line)];
        for (key, value, at) in snapshot_of(&window, &PersonaSchema::default_keys()) {
            prop_assert!(PersonaSchema::default_keys().key(&key).is_some());
            prop_assert!(!value.trim().is_empty());
            prop_assert_eq!(value.trim(), value.as_str());
            prop_assert_eq!(at, Some(0));
        }
    }
}

#[test]
fn the_chinese_default_keys_mean_what_their_english_twins_mean() {
    let en = PersonaSchema::default_keys();
    let zh = PersonaSchema::default_keys_zh();
    zh.validate().unwrap();
    assert_eq!(en.keys.len(), zh.keys.len());
    for (e, z) in en.keys.iter().zip(&zh.keys) {
        assert_eq!(e.kind, z.kind, "{} / {}", e.name, z.name);
        assert_eq!(
            Concept::of_key(e),
            Concept::of_key(z),
            "{} / {}",
            e.name,
            z.name
        );
    }
}

#[test]
fn a_chinese_schema_gets_chinese_keys() {
    let window = vec![Line::new(
        Role::User,
        None,
        "我叫小明，我喜欢爬山，我讨厌香菜",
    )];
    let got = snapshot_of(&window, &PersonaSchema::default_keys_zh());
    let pairs: Vec<(String, String)> = got.into_iter().map(|(k, v, _)| (k, v)).collect();
    assert!(pairs.contains(&("名字".into(), "小明".into())), "{pairs:?}");
    assert!(pairs.contains(&("喜欢".into(), "爬山".into())), "{pairs:?}");
    assert!(pairs.contains(&("讨厌".into(), "香菜".into())), "{pairs:?}");
}
