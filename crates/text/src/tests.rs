use super::*;
use proptest::prelude::*;

fn a() -> &'static Analyzer {
    Analyzer::shared()
}

fn terms(text: &str) -> Vec<String> {
    a().terms(text)
}

fn kinds(text: &str, kind: TokenKind) -> Vec<String> {
    a().tokens(text)
        .into_iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.term)
        .collect()
}

fn dates(text: &str) -> Vec<String> {
    kinds(text, TokenKind::Date)
}

/// Every token's span is a valid char range of `text`, tokens are in start order.
fn check_offsets(text: &str) {
    let toks = a().tokens(text);
    let mut last = 0;
    for t in &toks {
        assert!(t.start < t.end, "{t:?} in {text:?}");
        assert!(t.end <= text.len(), "{t:?} in {text:?}");
        assert!(
            text.is_char_boundary(t.start) && text.is_char_boundary(t.end),
            "{t:?} in {text:?}"
        );
        assert!(t.start >= last, "out of order {t:?} in {text:?}");
        assert!(!t.term.is_empty(), "{t:?} in {text:?}");
        last = t.start;
    }
}

// ---------- English ----------

#[test]
fn english_stemming() {
    assert_eq!(terms("running"), ["run"]);
    assert_eq!(terms("adoption"), ["adopt"]);
    assert_eq!(terms("She adopted two dogs"), ["adopt", "two", "dog"]);
    assert_eq!(terms("Running RUNS runner"), ["run", "run", "runner"]);
}

#[test]
fn english_stopwords_removed_by_terms_kept_by_tokens() {
    let text = "What did the cat do at the park?";
    assert_eq!(terms(text), ["cat", "park"]);
    let all: Vec<String> = a().tokens(text).into_iter().map(|t| t.term).collect();
    assert_eq!(
        all,
        ["what", "did", "the", "cat", "do", "at", "the", "park"]
    );
    assert!(a().is_stopword("the"));
    assert!(a().is_stopword("don't"));
    assert!(!a().is_stopword("cat"));
    // Names that are also modal verbs stay searchable.
    assert!(!a().is_stopword("will"));
    assert!(!a().is_stopword("may"));
}

#[test]
fn english_apostrophes() {
    assert_eq!(terms("Caroline's dog"), terms("Caroline dog"));
    assert_eq!(terms("Caroline’s"), terms("Caroline"));
    assert_eq!(terms("James' car"), terms("James car"));
    // Contractions are stopwords, with either apostrophe or none.
    assert!(terms("I don't know").iter().all(|t| t == "know"));
    assert!(terms("I don’t know").iter().all(|t| t == "know"));
    assert!(terms("I dont know").iter().all(|t| t == "know"));
    let toks = a().tokens("don’t");
    assert_eq!(toks.len(), 1);
    assert_eq!(toks[0].term, "don't");
    assert_eq!((toks[0].start, toks[0].end), (0, "don’t".len()));
    // Leading/trailing quotes are not part of words.
    assert_eq!(terms("'hello'"), ["hello"]);
    assert_eq!(terms("o'clock"), ["oclock"]);
}

#[test]
fn english_unicode_and_fullwidth() {
    assert_eq!(terms("Ｌｅｔｔｅｒｓ"), ["letter"]);
    assert_eq!(terms("LETTERS"), ["letter"]);
    assert_eq!(kinds("ｖｅｒｓｉｏｎ ３", TokenKind::Number), ["3"]);
    // Non-English Latin: lowercased, not stemmed; decomposed accents recomposed.
    assert_eq!(terms("Café"), ["café"]);
    assert_eq!(terms("Cafe\u{301}"), ["café"]);
    assert_eq!(terms("ÜBER Straße"), ["über", "straße"]);
    assert_eq!(terms("Привет МИР"), ["привет", "мир"]);
    // Hyphens and underscores split words.
    assert_eq!(
        terms("well-known snake_case"),
        ["well", "known", "snake", "case"]
    );
}

#[test]
fn letters_and_digits_split() {
    let toks = a().tokens("gpt4 3pm");
    let got: Vec<(&str, TokenKind)> = toks.iter().map(|t| (t.term.as_str(), t.kind)).collect();
    assert_eq!(
        got,
        [
            ("gpt", TokenKind::Word),
            ("4", TokenKind::Number),
            ("3", TokenKind::Number),
            ("pm", TokenKind::Word)
        ]
    );
}

// ---------- Chinese ----------

#[test]
fn chinese_segmentation() {
    let t = terms("我喜欢在周末去爬山");
    for w in ["喜欢", "周末", "爬山"] {
        assert!(t.iter().any(|x| x == w), "{w} missing from {t:?}");
    }
    // Stopwords (pronoun, preposition) are dropped by terms but kept by tokens.
    assert!(!t.iter().any(|x| x == "我" || x == "在"), "{t:?}");
    let all = kinds("我喜欢在周末去爬山", TokenKind::Cjk);
    assert!(
        all.iter().any(|x| x == "我") && all.iter().any(|x| x == "在"),
        "{all:?}"
    );
}

#[test]
fn chinese_punctuation_dropped() {
    let t = a().tokens("你好，世界！天气很好。");
    assert!(t.iter().all(|t| t.term.chars().all(is_cjk)), "{t:?}");
    assert!(t.iter().any(|t| t.term == "世界"));
    assert!(t.iter().any(|t| t.term == "天气"));
    assert!(a().terms("，。！？、").is_empty());
}

#[test]
fn chinese_stopwords() {
    for w in [
        "的", "了", "是", "在", "我", "你", "他", "她", "它", "们", "这", "那", "和", "与", "就",
        "都", "也", "还", "吗", "呢", "吧", "啊", "呀", "哦", "嗯", "个", "一个", "有", "没有",
        "不", "很", "我们",
    ] {
        assert!(a().is_stopword(w), "{w}");
    }
    assert!(!a().is_stopword("爬山"));
    assert_eq!(terms("我们的"), Vec::<String>::new());
}

#[test]
fn search_terms_add_subwords() {
    let precise = terms("我在北京大学读书");
    let search = a().search_terms("我在北京大学读书");
    assert!(precise.iter().any(|t| t == "北京大学"), "{precise:?}");
    assert!(!precise.iter().any(|t| t == "北京"), "{precise:?}");
    for w in ["北京", "大学", "北京大学", "读书"] {
        assert!(search.iter().any(|t| t == w), "{w} missing from {search:?}");
    }
    assert!(!search.iter().any(|t| t == "我"));
}

#[test]
fn japanese_kana_takes_the_cjk_path() {
    let t = a().tokens("カタカナとひらがな");
    assert!(!t.is_empty());
    assert!(t.iter().all(|t| t.kind == TokenKind::Cjk), "{t:?}");
    check_offsets("カタカナとひらがな");
    check_offsets("ｶﾀｶﾅ 㐀㐁 𠀀𠀁 豈");
}

// ---------- mixed ----------

#[test]
fn mixed_script() {
    let text = "我明天去Starbucks买coffee";
    let toks = a().tokens(text);
    let t = terms(text);
    assert!(t.iter().any(|x| x == "starbuck"), "{t:?}");
    assert!(t.iter().any(|x| x == "coffe"), "{t:?}");
    assert!(t.iter().any(|x| x == "明天"), "{t:?}");
    let star = toks
        .iter()
        .find(|t| t.term == "starbuck")
        .map(|t| &text[t.start..t.end]);
    assert_eq!(star, Some("Starbucks"));
    let cjk = toks.iter().filter(|t| t.kind == TokenKind::Cjk).count();
    assert!(cjk >= 3, "{toks:?}");
    check_offsets(text);
}

// ---------- numbers ----------

#[test]
fn numbers() {
    assert_eq!(kinds("3.5 stars", TokenKind::Number), ["3.5"]);
    assert_eq!(kinds("in 2023", TokenKind::Number), ["2023"]);
    assert_eq!(kinds("1,000 people", TokenKind::Number), ["1000"]);
    assert_eq!(kinds("1,000,000.50", TokenKind::Number), ["1000000.50"]);
    assert_eq!(kinds("20% off", TokenKind::Number), ["20"]);
    assert_eq!(kinds("1,2,3", TokenKind::Number), ["1", "2", "3"]);
    assert_eq!(kinds("the 5th time.", TokenKind::Number), ["5"]);
    assert_eq!(kinds("end 42.", TokenKind::Number), ["42"]);
    assert_eq!(kinds("１２３", TokenKind::Number), ["123"]);
    assert_eq!(kinds("我有3个苹果", TokenKind::Number), ["3"]);
    let t = a().tokens("$1,000!");
    assert_eq!((t[0].start, t[0].end), (1, 6));
}

// ---------- dates ----------

#[test]
fn date_iso_forms() {
    assert_eq!(dates("on 2023-05-08."), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("2023/5/8"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("2023.05.08"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(
        dates("2023-05-08T10:00"),
        ["2023-05-08", "2023-05", "05-08"]
    );
    assert_eq!(dates("since 2023-05"), ["2023-05"]);
    // The year is also a number for partial matches.
    assert_eq!(kinds("2023-05-08", TokenKind::Number), ["2023"]);
}

#[test]
fn date_english_forms() {
    assert_eq!(dates("8 May 2023"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("8th May, 2023"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("May 8, 2023"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("May 8th 2023"), ["2023-05-08", "2023-05", "05-08"]);
    assert_eq!(dates("Sept. 5, 2021"), ["2021-09-05", "2021-09", "09-05"]);
    assert_eq!(dates("in May 2023"), ["2023-05"]);
    assert_eq!(dates("on January 15"), ["01-15"]);
    assert_eq!(dates("on 15 jan"), ["01-15"]);
    // Components keep partial matches working, in text order.
    let toks = a().tokens("May 8, 2023");
    let got: Vec<(&str, TokenKind)> = toks.iter().map(|t| (t.term.as_str(), t.kind)).collect();
    assert_eq!(
        got,
        [
            ("2023-05-08", TokenKind::Date),
            ("2023-05", TokenKind::Date),
            ("05-08", TokenKind::Date),
            ("may", TokenKind::Word),
            ("2023", TokenKind::Number),
        ]
    );
    assert_eq!((toks[0].start, toks[0].end), (0, 11));
    assert_eq!((toks[4].start, toks[4].end), (7, 11));
    let toks = a().tokens("8 January 2023");
    assert_eq!(toks[3].term, "januari");
    assert_eq!(&"8 January 2023"[toks[3].start..toks[3].end], "January");
}

#[test]
fn date_chinese_forms() {
    let full = ["2024-04-01", "2024-04", "04-01"];
    assert_eq!(dates("2024年04月01日"), full);
    assert_eq!(dates("我2024年4月1日去了北京"), full);
    assert_eq!(dates("2024年4月1号"), full);
    assert_eq!(dates("２０２４年４月１日"), full);
    assert_eq!(dates("2024年4月"), ["2024-04"]);
    assert_eq!(dates("4月1日"), ["04-01"]);
    assert_eq!(kinds("２０２４年４月１日", TokenKind::Number), ["2024"]);
    let t = terms("我2024年4月1日去了北京");
    assert!(t.iter().any(|x| x == "北京"), "{t:?}");
    assert!(
        !t.iter().any(|x| x == "年" || x == "月" || x == "日"),
        "{t:?}"
    );
}

#[test]
fn not_dates() {
    assert!(dates("2019-2023").is_empty());
    assert!(dates("2023.5 million").is_empty());
    assert!(dates("2023-13-01").is_empty());
    assert!(dates("2023-02-30").is_empty());
    assert!(dates("May I help you").is_empty());
    assert!(dates("you may 2 go").is_empty());
    assert!(dates("Mayor 8").is_empty());
    assert!(dates("May 10am").is_empty());
    assert!(dates("12345-05-08").is_empty());
    assert!(dates("13月1日").is_empty());
    assert!(dates("2023年").is_empty());
    assert!(dates("x2023-05-08").is_empty());
    // Lowercase "may" counts when a year makes it unambiguous.
    assert_eq!(dates("may 2023"), ["2023-05"]);
}

// ---------- offsets ----------

#[test]
fn offsets_point_at_source_text() {
    let text = "Hello, 世界! Ｌｅｔｔｅｒｓ 3.5% “quoted” café";
    let toks = a().tokens(text);
    let spans: Vec<&str> = toks.iter().map(|t| &text[t.start..t.end]).collect();
    assert_eq!(
        spans,
        ["Hello", "世界", "Ｌｅｔｔｅｒｓ", "3.5", "quoted", "café"]
    );
    check_offsets(text);
}

#[test]
fn odd_inputs_do_not_panic() {
    for text in [
        "",
        " ",
        "...!!!???",
        "😀👍🏽👨‍👩‍👧",
        "\u{301}\u{301}a\u{301}",
        "1️⃣ 2⃣",
        "\0\u{7f}\u{200d}\u{feff}",
        "’s '' 's",
        "5,",
        "5.",
        ".5",
        "1,00",
        "2023-",
        "2023-05-",
        "2023年",
        "2023年5",
        "2023年5月3",
        "May",
        "May ",
        "8 May,",
        "Ⅻ ² ½ ①",
        "İstanbul ΣΊΣΥΦΟΣ",
        "\r\n\r\n",
    ] {
        check_offsets(text);
        let _ = a().terms(text);
        let _ = a().search_terms(text);
        let _ = a().count_tokens(text);
        let _ = sentences(text);
    }
    assert!(a().tokens("").is_empty());
    assert!(a().terms("?!. ,").is_empty());
}

#[test]
fn large_input() {
    let para =
        "Caroline went to the LGBTQ support group on 8 May 2023. 我喜欢在周末去爬山，然后喝咖啡！ ";
    let text = para.repeat(100_000 / para.len() + 1);
    let toks = a().tokens(&text);
    assert!(toks.len() > 1000);
    assert!(toks
        .iter()
        .all(|t| text.is_char_boundary(t.start) && text.is_char_boundary(t.end)));
    assert!(a().count_tokens(&text) > 1000);
}

#[test]
fn terms_into_appends() {
    let mut buf = vec!["x".to_string()];
    a().terms_into("running dogs", &mut buf);
    assert_eq!(buf, ["x", "run", "dog"]);
}

// ---------- count_tokens ----------

#[test]
fn count_tokens_english() {
    let an = a();
    assert_eq!(an.count_tokens(""), 0);
    assert_eq!(an.count_tokens("   "), 0);
    assert_eq!(an.count_tokens("hello"), 2);
    // 3 words → 4 tokens.
    assert_eq!(an.count_tokens("the quick fox"), 4);
    // 20 ordinary words land near 27.
    let n = an.count_tokens("one two three four five six seven eight nine ten one two three four five six seven eight nine ten");
    assert!((25..=30).contains(&n), "{n}");
    // Punctuation runs count once each.
    assert_eq!(an.count_tokens("hi!!!"), 3);
}

#[test]
fn count_tokens_chinese() {
    let an = a();
    assert_eq!(an.count_tokens("我喜欢爬山"), 5);
    assert_eq!(an.count_tokens("我喜欢爬山。"), 6);
    let mixed = an.count_tokens("我明天去Starbucks买coffee");
    assert!((7..=10).contains(&mixed), "{mixed}");
    assert_eq!(an.count_tokens("2023"), 2);
}

// ---------- sentences ----------

#[test]
fn sentences_english() {
    assert_eq!(
        sentences("Hi there. How are you? I'm fine!  Bye"),
        ["Hi there.", "How are you?", "I'm fine!", "Bye"]
    );
    assert_eq!(
        sentences("It costs 3.5 dollars. OK"),
        ["It costs 3.5 dollars.", "OK"]
    );
    assert_eq!(
        sentences("Dr. Smith met J. K. Rowling. Then left."),
        ["Dr. Smith met J. K. Rowling.", "Then left."]
    );
    assert_eq!(
        sentences("Wait... what?! \"Yes.\" ok"),
        ["Wait...", "what?!", "\"Yes.\"", "ok"]
    );
    assert_eq!(sentences("e.g. this one. Next"), ["e.g. this one.", "Next"]);
}

#[test]
fn sentences_chinese_and_lines() {
    assert_eq!(
        sentences("我今天去爬山了。你呢？太好了！第一；第二"),
        ["我今天去爬山了。", "你呢？", "太好了！", "第一；", "第二"]
    );
    assert_eq!(
        sentences("他说：“好的。”然后走了"),
        ["他说：“好的。”", "然后走了"]
    );
    assert_eq!(
        sentences("line one\nline two\r\n\r\nline three"),
        ["line one", "line two", "line three"]
    );
    assert!(sentences("").is_empty());
    assert!(sentences(" \n \n").is_empty());
}

// ---------- language ----------

#[test]
fn language_detection() {
    assert_eq!(
        detect_language("I went hiking last weekend"),
        Language::English
    );
    assert_eq!(detect_language("我喜欢在周末去爬山"), Language::Chinese);
    assert_eq!(
        detect_language("我明天去Starbucks买coffee"),
        Language::Chinese
    );
    assert_eq!(detect_language("Привет, как дела?"), Language::Other);
    assert_eq!(detect_language("123 !!"), Language::Other);
    assert!(has_cjk("hello 世界"));
    assert!(!has_cjk("hello world"));
}

// ---------- properties ----------

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_offsets_are_char_boundaries(text in any::<String>()) {
        let toks = a().tokens(&text);
        let mut last = 0;
        for t in &toks {
            prop_assert!(t.start < t.end && t.end <= text.len());
            prop_assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
            prop_assert!(t.start >= last);
            prop_assert!(!t.term.is_empty());
            last = t.start;
        }
        let _ = a().terms(&text);
        let _ = a().search_terms(&text);
        let _ = a().count_tokens(&text);
        for s in sentences(&text) {
            prop_assert!(!s.is_empty());
        }
    }

    #[test]
    fn never_panics_on_date_and_number_like_text(
        text in "[0-9０-９年月日号 ,./\\-:TaMyJnSpt'’a-z\u{4e00}-\u{4e10}]{0,40}"
    ) {
        check_offsets(&text);
        let _ = a().terms(&text);
    }

    #[test]
    fn terms_are_tokens_minus_stopwords(text in "\\PC{0,60}") {
        let from_tokens: Vec<String> = a()
            .tokens(&text)
            .into_iter()
            .map(|t| t.term)
            .filter(|t| !a().is_stopword(t))
            .collect();
        prop_assert_eq!(from_tokens, a().terms(&text));
    }
}
