//! Tolerant reading of model answers: find the JSON object in whatever the model wrote, read
//! the task's fields leniently (numbers as strings, "yes"/"是" for true), check ranges, and turn
//! the result into a typed [`TaskOutput`] — or say precisely what was wrong, for the repair
//! request.

use std::collections::HashSet;

use serde_json::{Map, Value};

use mnemos_core::memory_model::{CategorySummary, Line, PersonaValue, QueryClass};
use mnemos_core::{Task, TaskOutput};
use mnemos_text::{sentences, Analyzer};

/// Perplexity-like score of the most surprising utterance (LUFY caps perplexity at 160).
pub const SURPRISE_PERPLEXITY_CAP: f32 = 160.0;

/// How far outside a range a number may be and still be clamped into it (rounding noise such
/// as 1.02 or -0.01); anything further is another scale and is rejected.
const RANGE_SLACK: f64 = 0.05;

/// Most `{` positions tried as the start of an object: bounds the scan on brace-heavy garbage.
const MAX_OBJECT_STARTS: usize = 64;

/// Map a 1–10 surprise rating to a perplexity-like score: `160^((r − 1) / 9)`, so 1 → 1
/// (fully expected), 5.5 → ≈12.6, 10 → 160 (LUFY's perplexity cap). Ratings are clamped to
/// 1..=10 first. Geometric, because perplexity grows multiplicatively with surprise.
pub fn surprise_to_perplexity(rating: f32) -> f32 {
    let r = if rating.is_finite() {
        rating.clamp(1.0, 10.0)
    } else {
        1.0
    };
    SURPRISE_PERPLEXITY_CAP.powf((r - 1.0) / 9.0)
}

/// The first JSON object in `text`: the whole text when it is one; otherwise, after dropping
/// code fences, the first balanced `{…}` span that parses.
pub fn extract_json_object(text: &str) -> Option<Map<String, Value>> {
    let trimmed = text.trim().trim_start_matches('\u{feff}');
    if let Ok(Value::Object(map)) = serde_json::from_str(trimmed) {
        return Some(map);
    }
    let unfenced = strip_code_fences(trimmed);
    if let Ok(Value::Object(map)) = serde_json::from_str(unfenced.trim()) {
        return Some(map);
    }
    let mut from = 0;
    let mut tried = 0;
    while let Some(offset) = unfenced.get(from..).and_then(|rest| rest.find('{')) {
        tried += 1;
        if tried > MAX_OBJECT_STARTS {
            break;
        }
        let start = from + offset;
        if let Some(end) = balanced_end(&unfenced, start) {
            if let Some(Ok(Value::Object(map))) =
                unfenced.get(start..end).map(serde_json::from_str::<Value>)
            {
                return Some(map);
            }
        }
        from = start + 1;
    }
    None
}

/// The text between the first pair of ``` fences (language tag dropped), or the text itself.
fn strip_code_fences(text: &str) -> String {
    let Some(open) = text.find("```") else {
        return text.to_string();
    };
    let after = text.get(open + 3..).unwrap_or("");
    // Skip a language tag such as `json` up to the end of the line.
    let body = match after.find('\n') {
        Some(nl) if after.get(..nl).is_some_and(|tag| !tag.contains('{')) => {
            after.get(nl + 1..).unwrap_or("")
        }
        _ => after,
    };
    match body.find("```") {
        Some(close) => body.get(..close).unwrap_or(body).to_string(),
        None => body.to_string(),
    }
}

/// Byte index just past the `}` closing the object that opens at `start`, respecting strings.
fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.get(start..)?.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(start + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A number, also when written as a string ("7", " 0.8 ", "7/10", "80%").
fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            let (s, scale) = match s.strip_suffix('%') {
                Some(p) => (p.trim(), 0.01),
                None => (s.split('/').next().unwrap_or(s).trim(), 1.0),
            };
            s.parse::<f64>().ok().map(|n| n * scale)
        }
        _ => None,
    }
    .filter(|n| n.is_finite())
}

/// A boolean, also as "true"/"yes"/"是"/1 and their opposites.
fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        Value::String(s) => match s.trim().to_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "是" | "对" | "有" | "能" | "会" | "可以" => {
                Some(true)
            }
            "false" | "no" | "n" | "0" | "否" | "不" | "不是" | "没有" | "不能" | "不会" => {
                Some(false)
            }
            _ => None,
        },
        _ => None,
    }
}

/// A non-negative integer index, also as a string.
fn as_index(v: &Value) -> Option<usize> {
    let n = as_number(v)?;
    (n >= 0.0 && n.fract() == 0.0 && n <= usize::MAX as f64).then_some(n as usize)
}

/// The first of `names` present in `obj`.
fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| obj.get(*n))
}

/// A number in `lo..=hi`, clamped when only slightly outside; a problem description otherwise.
fn in_range(obj: &Map<String, Value>, names: &[&str], lo: f64, hi: f64) -> Result<f64, String> {
    let name = names.first().copied().unwrap_or("value");
    let raw = field(obj, names).ok_or_else(|| format!("the field \"{name}\" is missing"))?;
    let n = as_number(raw).ok_or_else(|| format!("\"{name}\" is not a number: {raw}"))?;
    let slack = (hi - lo) * RANGE_SLACK;
    if n < lo - slack || n > hi + slack {
        return Err(format!("\"{name}\" is {n}, outside {lo}..{hi}"));
    }
    Ok(n.clamp(lo, hi))
}

fn flag(obj: &Map<String, Value>, names: &[&str]) -> Result<bool, String> {
    let name = names.first().copied().unwrap_or("value");
    let raw = field(obj, names).ok_or_else(|| format!("the field \"{name}\" is missing"))?;
    as_bool(raw).ok_or_else(|| format!("\"{name}\" is not true or false: {raw}"))
}

fn text(obj: &Map<String, Value>, names: &[&str]) -> Result<String, String> {
    let name = names.first().copied().unwrap_or("text");
    let raw = field(obj, names).ok_or_else(|| format!("the field \"{name}\" is missing"))?;
    let s = raw
        .as_str()
        .ok_or_else(|| format!("\"{name}\" is not a string: {raw}"))?
        .trim();
    if s.is_empty() {
        return Err(format!("\"{name}\" is empty"));
    }
    Ok(s.to_string())
}

/// Read `content` as the answer to `task`. The error describes the problem in a sentence the
/// repair request can quote.
pub fn parse_output(task: &Task, content: &str) -> Result<TaskOutput, String> {
    if content.trim().is_empty() {
        return Err("the answer was empty".into());
    }
    let obj = extract_json_object(content).ok_or("no JSON object was found in the answer")?;
    match task {
        Task::Summarize { token_budget, .. } => {
            let summary = text(&obj, &["summary", "text"])?;
            Ok(TaskOutput::Text(fit_budget(&summary, *token_budget)))
        }
        Task::PersonaSnapshot { window, schema } => {
            persona(&obj, window, schema).map(TaskOutput::Persona)
        }
        Task::Categorize { session } => categories(&obj, session).map(TaskOutput::Categories),
        Task::Conflicts { .. } => {
            flag(&obj, &["conflict", "conflicts", "contradiction"]).map(TaskOutput::Flag)
        }
        Task::Merge { .. } => text(&obj, &["text", "merged"]).map(TaskOutput::Text),
        Task::Compress { text: original } => {
            let short = text(&obj, &["text", "compressed"])?;
            // Compression never lengthens: an answer longer than the input keeps the input.
            Ok(TaskOutput::Text(if short.len() < original.trim().len() {
                short
            } else {
                original.trim().to_string()
            }))
        }
        Task::Recoverable { .. } => flag(&obj, &["recoverable"]).map(TaskOutput::Flag),
        Task::RateImportance { .. } => {
            // 0 on a 1–10 scale still means "least important".
            let n = in_range(&obj, &["importance", "score", "rating"], 0.0, 10.0)?;
            Ok(TaskOutput::Importance(n.round().clamp(1.0, 10.0) as u8))
        }
        Task::Arousal { .. } => {
            let n = in_range(&obj, &["arousal", "score"], 0.0, 1.0)?;
            Ok(TaskOutput::Score(n as f32))
        }
        Task::Surprise { .. } => {
            let n = in_range(&obj, &["surprise", "score", "rating"], 1.0, 10.0)?;
            Ok(TaskOutput::Score(surprise_to_perplexity(n as f32)))
        }
        Task::Sufficient { .. } => flag(&obj, &["sufficient", "enough"]).map(TaskOutput::Flag),
        Task::Helps { .. } => flag(&obj, &["helps", "helpful"]).map(TaskOutput::Flag),
        Task::ClassifyQuery { .. } | Task::ClassifyMemory { .. } => {
            let p = in_range(&obj, &["p_semantic", "semantic"], 0.0, 1.0)?;
            Ok(TaskOutput::QueryClass(QueryClass::from_semantic(p as f32)))
        }
        Task::Answer { .. } => text(&obj, &["answer", "text"]).map(TaskOutput::Text),
        Task::Choose { options, .. } => choice(&obj, options).map(TaskOutput::Choice),
    }
}

fn choice(obj: &Map<String, Value>, options: &[String]) -> Result<usize, String> {
    let raw =
        field(obj, &["choice", "option", "index"]).ok_or("the field \"choice\" is missing")?;
    if let Some(i) = as_index(raw) {
        return if i < options.len() {
            Ok(i)
        } else {
            Err(format!(
                "\"choice\" is {i}, but the options are numbered 0 to {}",
                options.len().saturating_sub(1)
            ))
        };
    }
    // The option's text instead of its number.
    let said = raw.as_str().map(str::trim).unwrap_or("");
    options
        .iter()
        .position(|o| !said.is_empty() && o.trim() == said)
        .ok_or_else(|| format!("\"choice\" is not an option number: {raw}"))
}

fn persona(
    obj: &Map<String, Value>,
    window: &[Line],
    schema: &mnemos_core::memory_model::PersonaSchema,
) -> Result<Vec<PersonaValue>, String> {
    let raw = field(obj, &["values", "facts"]).ok_or("the field \"values\" is missing")?;
    let items = raw
        .as_array()
        .ok_or_else(|| format!("\"values\" is not a list: {raw}"))?;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut unknown = Vec::new();
    for item in items {
        let Some(entry) = item.as_object() else {
            continue;
        };
        let key = entry
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        let value = match entry.get("value") {
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        if value.is_empty() {
            continue;
        }
        if schema.key(key).is_none() {
            unknown.push(key.to_string());
            continue;
        }
        let line = entry
            .get("line")
            .and_then(as_index)
            .filter(|i| *i < window.len());
        if seen.insert((key.to_string(), value.clone())) {
            out.push(PersonaValue {
                key: key.to_string(),
                value,
                line,
            });
        }
    }
    if out.is_empty() && !unknown.is_empty() {
        return Err(format!(
            "no entry used a schema key (got {}); use only the listed keys",
            unknown.join(", ")
        ));
    }
    Ok(out)
}

fn categories(obj: &Map<String, Value>, session: &[Line]) -> Result<Vec<CategorySummary>, String> {
    let raw = field(obj, &["categories", "topics"]).ok_or("the field \"categories\" is missing")?;
    let items = raw
        .as_array()
        .ok_or_else(|| format!("\"categories\" is not a list: {raw}"))?;
    let out: Vec<CategorySummary> = items
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|entry| {
            let category = entry.get("category").and_then(Value::as_str)?.trim();
            let summary = entry.get("summary").and_then(Value::as_str)?.trim();
            if category.is_empty() || summary.is_empty() {
                return None;
            }
            let mut lines: Vec<usize> = entry
                .get("lines")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(as_index)
                        .filter(|i| *i < session.len())
                        .collect()
                })
                .unwrap_or_default();
            lines.sort_unstable();
            lines.dedup();
            Some(CategorySummary {
                category: category.to_string(),
                summary: summary.to_string(),
                lines,
            })
        })
        .collect();
    if out.is_empty() {
        return Err("no topic had both a category and a summary".into());
    }
    Ok(out)
}

/// Keep whole sentences while they fit `budget` tokens; a first sentence longer than the budget
/// is cut at the longest prefix that fits.
pub fn fit_budget(text: &str, budget: usize) -> String {
    let analyzer = Analyzer::shared();
    if analyzer.count_tokens(text) <= budget {
        return text.to_string();
    }
    let mut kept = String::new();
    for sentence in sentences(text) {
        // Sentences come trimmed: English ones need a space between them, Chinese ones not.
        let candidate = if kept.is_empty() {
            sentence.to_string()
        } else if mnemos_text::has_cjk(sentence) {
            format!("{kept}{sentence}")
        } else {
            format!("{kept} {sentence}")
        };
        if analyzer.count_tokens(&candidate) > budget {
            break;
        }
        kept = candidate;
    }
    if !kept.is_empty() {
        return kept;
    }
    // Binary search over char boundaries for the longest prefix within the budget.
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let (mut lo, mut hi) = (0usize, bounds.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let end = bounds.get(mid - 1).copied().unwrap_or(text.len());
        if analyzer.count_tokens(text.get(..end).unwrap_or("")) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let end = if lo == 0 {
        // Not even one character fits by the estimate: keep the first one rather than nothing.
        bounds.first().copied().unwrap_or(text.len())
    } else {
        bounds.get(lo - 1).copied().unwrap_or(text.len())
    };
    text.get(..end).unwrap_or(text).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::memory_model::PersonaSchema;
    use mnemos_core::Role;

    #[test]
    fn finds_objects_in_fences_prose_and_strings_with_braces() {
        let cases = [
            r#"{"a": 1}"#,
            "```json\n{\"a\": 1}\n```",
            "Sure! Here it is:\n```\n{\"a\": 1}\n```\nHope that helps.",
            "The answer is {\"a\": 1} as requested {\"b\": 2}",
            "{not json} then {\"a\": 1}",
        ];
        for c in cases {
            assert_eq!(extract_json_object(c).unwrap()["a"], 1, "{c}");
        }
        let tricky = r#"note: {"summary": "she said \"}{\" and left {", "x": 1}"#;
        assert_eq!(extract_json_object(tricky).unwrap()["x"], 1);
        assert!(extract_json_object("no object here").is_none());
        assert!(extract_json_object("{\"cut\": \"mid").is_none());
        assert!(extract_json_object("[1, 2]").is_none());
        assert!(extract_json_object("}}}{{{").is_none());
        // Brace-heavy garbage ends quickly instead of scanning quadratically.
        let garbage = "{".repeat(200_000);
        let started = std::time::Instant::now();
        assert!(extract_json_object(&garbage).is_none());
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn numbers_and_flags_are_read_leniently_and_ranges_are_checked() {
        let importance = Task::RateImportance {
            past_summary: String::new(),
            exchange: vec![Line::new(Role::User, None, "I got the job!")],
        };
        for (answer, want) in [
            (r#"{"importance": 7}"#, 7u8),
            (r#"{"importance": "8"}"#, 8),
            (r#"{"importance": "6/10"}"#, 6),
            (r#"{"importance": 0}"#, 1),
            (r#"{"importance": 10.3}"#, 10),
        ] {
            assert_eq!(
                parse_output(&importance, answer),
                Ok(TaskOutput::Importance(want)),
                "{answer}"
            );
        }
        assert!(parse_output(&importance, r#"{"importance": 75}"#).is_err());
        assert!(parse_output(&importance, r#"{"importance": "high"}"#).is_err());

        let conflicts = Task::Conflicts {
            previous: "我住在北京".into(),
            new: "我搬到上海了".into(),
        };
        for (answer, want) in [
            (r#"{"conflict": true}"#, true),
            (r#"{"conflict": "是"}"#, true),
            (r#"{"conflict": "no"}"#, false),
            (r#"{"conflict": 0}"#, false),
        ] {
            assert_eq!(parse_output(&conflicts, answer), Ok(TaskOutput::Flag(want)));
        }
        assert!(parse_output(&conflicts, r#"{"conflict": "maybe"}"#).is_err());

        let classify = Task::ClassifyQuery {
            query: "她的职业是什么？".into(),
        };
        let Ok(TaskOutput::QueryClass(c)) = parse_output(&classify, r#"{"p_semantic": "80%"}"#)
        else {
            panic!("p_semantic as a percentage")
        };
        assert!((c.semantic - 0.8).abs() < 1e-6);
        assert_eq!(
            parse_output(&classify, r#"{"p_semantic": 1.03}"#),
            Ok(TaskOutput::QueryClass(QueryClass::from_semantic(1.0)))
        );
        assert!(parse_output(&classify, r#"{"p_semantic": 3}"#).is_err());
    }

    #[test]
    fn surprise_maps_ratings_onto_a_perplexity_scale() {
        assert!((surprise_to_perplexity(1.0) - 1.0).abs() < 1e-4);
        assert!((surprise_to_perplexity(10.0) - 160.0).abs() < 1e-2);
        assert!((surprise_to_perplexity(5.5) - 160f32.sqrt()).abs() < 1e-3);
        assert!(surprise_to_perplexity(3.0) < surprise_to_perplexity(4.0));
        assert_eq!(surprise_to_perplexity(f32::NAN), 1.0);
        assert_eq!(surprise_to_perplexity(99.0), surprise_to_perplexity(10.0));
    }

    #[test]
    fn choices_must_exist_and_may_be_given_as_text() {
        let task = Task::Choose {
            question: "她住在哪里？".into(),
            options: vec!["北京".into(), "上海".into(), "广州".into()],
            memories: vec![],
        };
        assert_eq!(
            parse_output(&task, r#"{"choice": 2}"#),
            Ok(TaskOutput::Choice(2))
        );
        assert_eq!(
            parse_output(&task, r#"{"choice": "1"}"#),
            Ok(TaskOutput::Choice(1))
        );
        assert_eq!(
            parse_output(&task, r#"{"choice": "上海"}"#),
            Ok(TaskOutput::Choice(1))
        );
        let err = parse_output(&task, r#"{"choice": 3}"#).unwrap_err();
        assert!(err.contains("0 to 2"), "{err}");
        assert!(parse_output(&task, r#"{"choice": -1}"#).is_err());
        assert!(parse_output(&task, r#"{"choice": 1.5}"#).is_err());
    }

    #[test]
    fn persona_keeps_schema_keys_and_rejects_all_unknown() {
        let window = vec![
            Line::new(Role::User, Some("小红"), "我是护士，在协和医院上班。"),
            Line::new(Role::User, Some("小红"), "我养了两只猫。"),
        ];
        let task = Task::PersonaSnapshot {
            window,
            schema: PersonaSchema::default_keys(),
        };
        let answer = r#"{"values": [
            {"key": "job", "value": "护士", "line": 0},
            {"key": "workplace", "value": "协和医院", "line": "0"},
            {"key": "pets", "value": "两只猫", "line": 9},
            {"key": "blood_type", "value": "A", "line": 1},
            {"key": "job", "value": "护士", "line": 0},
            {"key": "likes", "value": "  "}
        ]}"#;
        let Ok(TaskOutput::Persona(values)) = parse_output(&task, answer) else {
            panic!("persona")
        };
        assert_eq!(values.len(), 3);
        assert_eq!(values[1].line, Some(0));
        assert_eq!(values[2].line, None, "line 9 is outside the window");
        assert!(values.iter().all(|v| v.key != "blood_type"));
        assert_eq!(
            parse_output(&task, r#"{"values": []}"#),
            Ok(TaskOutput::Persona(vec![]))
        );
        let err =
            parse_output(&task, r#"{"values": [{"key": "mood", "value": "开心"}]}"#).unwrap_err();
        assert!(err.contains("mood"));
    }

    #[test]
    fn text_tasks_reject_empty_and_respect_budgets() {
        let task = Task::Summarize {
            texts: vec!["A long day.".into()],
            level: 1,
            token_budget: 8,
        };
        assert!(parse_output(&task, r#"{"summary": "  "}"#)
            .unwrap_err()
            .contains("empty"));
        assert!(parse_output(&task, r#"{"summary": 5}"#)
            .unwrap_err()
            .contains("not a string"));
        assert!(parse_output(&task, "").is_err());
        let long = "Alice moved to Paris in May. She started a new job at a bank there. \
                    Her sister visited in June and they went hiking.";
        let fitted = fit_budget(long, 8);
        assert!(Analyzer::shared().count_tokens(&fitted) <= 8, "{fitted}");
        assert!(fitted.starts_with("Alice moved to Paris"));
        let zh = "小明今天去了北京的故宫博物院参观了很多文物。然后他和朋友一起吃了烤鸭。晚上回到酒店休息。";
        let fitted = fit_budget(zh, 10);
        assert!(!fitted.is_empty() && zh.starts_with(&fitted));
        assert!(Analyzer::shared().count_tokens(&fitted) <= 10);
        assert_eq!(fit_budget("short", 100), "short");

        let compress = Task::Compress {
            text: "我明天上午十点要去医院复查。".into(),
        };
        assert_eq!(
            parse_output(&compress, r#"{"text": "明天十点医院复查"}"#),
            Ok(TaskOutput::Text("明天十点医院复查".into()))
        );
        // An "compression" longer than the input keeps the input.
        assert_eq!(
            parse_output(
                &compress,
                r#"{"text": "我明天上午十点要去医院复查，医生说要空腹。"}"#
            ),
            Ok(TaskOutput::Text("我明天上午十点要去医院复查。".into()))
        );
    }

    #[test]
    fn categories_need_labels_and_summaries() {
        let session = vec![
            Line::new(Role::User, None, "We booked flights to Tokyo."),
            Line::new(Role::Assistant, None, "Great, when?"),
        ];
        let task = Task::Categorize { session };
        let Ok(TaskOutput::Categories(c)) = parse_output(
            &task,
            r#"{"categories": [{"category": "travel", "summary": "Flights to Tokyo booked.", "lines": [1, 0, 0, 7]},
                               {"category": "", "summary": "x"}]}"#,
        ) else {
            panic!("categories")
        };
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].lines, vec![0, 1]);
        assert!(parse_output(&task, r#"{"categories": []}"#).is_err());
        assert!(parse_output(&task, r#"{"categories": "travel"}"#).is_err());
    }
}
