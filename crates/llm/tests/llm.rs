//! The LLM memory model against the scripted loopback server: every task, every fault,
//! timeouts, the concurrency limit, accounting, the API key, dead endpoints, JSON mode.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod fixtures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemos_core::memory_model::Line;
use mnemos_core::{MemoryModel, MemoryModelExt, ModelError, Role, Task, TaskOutput};
use mnemos_llm::{JsonMode, LlmConfig, LlmModel};
use mnemos_testkit::{dead_endpoint, ScriptedLlm, Step};
use serde_json::json;

fn config(base_url: String) -> LlmConfig {
    let mut c = LlmConfig::new(base_url, "scripted-model");
    c.timeout_ms = 5_000;
    c.max_retries = 2;
    c.backoff_ms = 10;
    c
}

fn model_with(server: &ScriptedLlm, tweak: impl FnOnce(&mut LlmConfig)) -> LlmModel {
    let mut c = config(server.base_url());
    tweak(&mut c);
    LlmModel::new(c).expect("valid test config")
}

fn model(server: &ScriptedLlm) -> LlmModel {
    model_with(server, |_| {})
}

fn summarize_task() -> Task {
    Task::Summarize {
        texts: vec!["小红：我上周末领养了一只比格犬，叫饼干。".into()],
        level: 1,
        token_budget: 60,
    }
}

const GOOD_SUMMARY: &str = r#"{"summary": "小红领养了比格犬饼干。"}"#;

fn good_summary() -> TaskOutput {
    TaskOutput::Text("小红领养了比格犬饼干。".into())
}

#[test]
fn every_task_succeeds_with_a_good_answer_in_both_languages() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    for cases in [fixtures::english(), fixtures::chinese()] {
        fixtures::check_coverage(&cases);
        for case in &cases {
            let name = case.task.name();
            server.push_for(name, Step::reply_json(&case.answer));
            let out = model
                .run(&case.task)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out, case.expected, "{name}");
            assert_eq!(out.kind(), case.task.output_kind(), "{name}");
        }
    }
    let requests = server.requests();
    let tasks = mnemos_core::memory_model::TASK_NAMES.len();
    assert_eq!(requests.len(), 2 * tasks, "one request per run, no retries");
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        let body = r.json.as_ref().unwrap();
        assert_eq!(body["model"], "scripted-model");
        assert_eq!(body["response_format"]["type"], "json_object");
        assert!(r.header("authorization").is_none(), "no key configured");
    }
    let usage = model.usage();
    assert_eq!(usage.tasks.len(), tasks);
    assert!(usage
        .tasks
        .values()
        .all(|u| u.calls == 2 && u.failures == 0 && u.retries == 0));
    assert_eq!(server.pending_steps(), 0);
}

#[test]
fn typed_calls_work_through_the_extension_trait() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    server.push(Step::reply(r#"{"importance": 6}"#));
    server.push(Step::reply(r#"{"choice": 2}"#));
    server.push(Step::reply(r#"{"answer": "在成都。"}"#));
    let exchange = [Line::new(Role::User, Some("小红"), "我下个月换工作。")];
    assert_eq!(model.rate_importance("", &exchange).unwrap(), 6);
    let options: Vec<String> = ["猫", "狗", "鹦鹉"].iter().map(|s| s.to_string()).collect();
    assert_eq!(model.choose("她养了什么？", &options, &[]).unwrap(), 2);
    assert_eq!(
        model
            .answer("小红住在哪里？", &["小红搬到了成都。".into()])
            .unwrap(),
        "在成都。"
    );
}

/// Transport and envelope faults: each is retried, and a good answer afterwards wins.
fn transport_faults() -> Vec<(&'static str, Step)> {
    vec![
        (
            "slow within timeout",
            Step::slow(150, Step::reply(GOOD_SUMMARY)),
        ),
        ("429 without Retry-After", Step::rate_limited()),
        ("429 with Retry-After", Step::rate_limited_retry_after(1)),
        ("500", Step::server_error(500)),
        ("503", Step::server_error(503)),
        ("connection reset", Step::reset()),
        ("malformed JSON body", Step::malformed_json()),
        ("truncated body", Step::truncated_body()),
        ("wrong schema", Step::wrong_schema()),
        ("empty choices", Step::empty_choices()),
    ]
}

#[test]
fn each_transport_fault_is_retried_until_a_good_answer() {
    for (what, fault) in transport_faults() {
        let server = ScriptedLlm::start().unwrap();
        let model = model(&server);
        let slow_only = matches!(fault, Step::Slow { .. });
        server.push(fault);
        server.push(Step::reply(GOOD_SUMMARY));
        let started = Instant::now();
        let out = model.run(&summarize_task());
        assert_eq!(out, Ok(good_summary()), "{what}");
        let expected_requests = if slow_only { 1 } else { 2 };
        assert_eq!(server.request_count(), expected_requests, "{what}");
        let u = model.usage().tasks["summarize"];
        assert_eq!((u.calls, u.failures), (1, 0), "{what}");
        assert_eq!(u.retries, expected_requests as u64 - 1, "{what}");
        if what == "429 with Retry-After" {
            assert!(
                started.elapsed() >= Duration::from_millis(950),
                "Retry-After: 1 honoured, waited {:?}",
                started.elapsed()
            );
        }
    }
}

#[test]
fn a_request_slower_than_the_timeout_is_retried() {
    let server = ScriptedLlm::start().unwrap();
    let model = model_with(&server, |c| {
        c.timeout_ms = 300;
        c.max_retries = 1;
    });
    server.push(Step::slow(2_000, Step::reply(GOOD_SUMMARY)));
    server.push(Step::reply(GOOD_SUMMARY));
    assert_eq!(model.run(&summarize_task()), Ok(good_summary()));
    assert_eq!(server.request_count(), 2);
}

#[test]
fn persistent_transport_faults_end_in_typed_errors_after_the_retries() {
    for (what, fault) in transport_faults() {
        if matches!(fault, Step::Slow { .. }) {
            continue; // a slow but good answer is not a fault
        }
        let retry_after = matches!(
            fault,
            Step::RateLimited {
                retry_after_secs: Some(_)
            }
        );
        let server = ScriptedLlm::start().unwrap();
        let model = model_with(&server, |c| {
            c.max_retries = if retry_after { 1 } else { 2 };
        });
        server.set_fallback(fault);
        let err = model.run(&summarize_task()).unwrap_err();
        assert!(matches!(err, ModelError::Unavailable(_)), "{what}: {err:?}");
        let expected = if retry_after { 2 } else { 3 };
        assert_eq!(
            server.request_count(),
            expected,
            "{what}: 1 + max_retries requests"
        );
        let u = model.usage().tasks["summarize"];
        assert_eq!(
            (u.calls, u.failures, u.retries),
            (1, 1, expected as u64 - 1),
            "{what}"
        );
    }
}

#[test]
fn retry_after_beyond_the_call_budget_fails_at_once() {
    let server = ScriptedLlm::start().unwrap();
    let model = model_with(&server, |c| {
        c.timeout_ms = 1_000;
        c.max_retries = 1;
    });
    server.set_fallback(Step::rate_limited_retry_after(30));
    let started = Instant::now();
    let err = model.run(&summarize_task()).unwrap_err();
    assert!(
        matches!(err, ModelError::Unavailable(ref m) if m.contains("429")),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(server.request_count(), 1);
}

#[test]
fn other_client_errors_are_not_retried() {
    for (code, needle) in [(400, "HTTP 400"), (401, "api_key_env"), (404, "base_url")] {
        let server = ScriptedLlm::start().unwrap();
        let model = model(&server);
        server.set_fallback(Step::status(code, "scripted refusal"));
        let err = model.run(&summarize_task()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ModelError::Unavailable(_)), "{code}: {err:?}");
        assert!(
            text.contains(needle) && text.contains("scripted refusal"),
            "{code}: {text}"
        );
        assert_eq!(server.request_count(), 1, "{code} is not retried");
    }
}

/// Answers that arrive fine but cannot be used: one repair request fixes them.
fn content_faults() -> Vec<(&'static str, Step)> {
    vec![
        ("non-JSON content", Step::non_json("小红领养了一只狗。")),
        ("cut at the token limit", Step::length_cut(GOOD_SUMMARY)),
        ("wrong type", Step::reply(r#"{"summary": 42}"#)),
        (
            "missing field",
            Step::reply(r#"{"result": "小红领养了狗"}"#),
        ),
        ("empty summary", Step::reply(r#"{"summary": "   "}"#)),
        ("empty content", Step::reply("")),
    ]
}

#[test]
fn unusable_answers_get_one_repair_request() {
    for (what, fault) in content_faults() {
        let server = ScriptedLlm::start().unwrap();
        let model = model(&server);
        let bad_content = match &fault {
            Step::Reply { content, .. } => content.clone(),
            _ => unreachable!(),
        };
        server.push(fault);
        server.push(Step::reply(GOOD_SUMMARY));
        assert_eq!(model.run(&summarize_task()), Ok(good_summary()), "{what}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{what}");
        let repair = requests[1].messages();
        assert_eq!(
            repair.len(),
            4,
            "{what}: original two, the bad answer, the repair request"
        );
        assert_eq!(repair[2]["role"], "assistant");
        assert_eq!(repair[2]["content"], bad_content.as_str());
        let ask = repair[3]["content"].as_str().unwrap();
        assert!(
            ask.contains("could not be used") && ask.contains(r#"{"summary""#),
            "{ask}"
        );
        assert_eq!(requests[1].task.as_deref(), Some("summarize"));
        assert_eq!(model.usage().tasks["summarize"].retries, 1, "{what}");
    }
}

#[test]
fn answers_that_stay_unusable_are_bad_output() {
    for (what, fault) in content_faults() {
        let server = ScriptedLlm::start().unwrap();
        let model = model(&server);
        server.set_fallback(fault);
        let err = model.run(&summarize_task()).unwrap_err();
        assert!(
            matches!(&err, ModelError::BadOutput { task, .. } if task == "summarize"),
            "{what}: {err:?}"
        );
        assert_eq!(
            server.request_count(),
            2,
            "{what}: the answer and one repair"
        );
    }
}

#[test]
fn out_of_range_and_unknown_answers_are_repaired_or_rejected() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    let en = fixtures::english();
    let task_named = |name: &str| {
        en.iter()
            .find(|c| c.task.name() == name)
            .map(|c| c.task.clone())
            .unwrap()
    };
    let cases = [
        (
            "rate_importance",
            r#"{"importance": 42}"#,
            r#"{"importance": 4}"#,
            TaskOutput::Importance(4),
        ),
        (
            "choose",
            r#"{"choice": 7}"#,
            r#"{"choice": 0}"#,
            TaskOutput::Choice(0),
        ),
        (
            "arousal",
            r#"{"arousal": 9}"#,
            r#"{"arousal": 0.2}"#,
            TaskOutput::Score(0.2),
        ),
        (
            "classify_query",
            r#"{"p_semantic": -2}"#,
            r#"{"p_semantic": 1}"#,
            TaskOutput::QueryClass(mnemos_core::memory_model::QueryClass::from_semantic(1.0)),
        ),
        (
            "persona_snapshot",
            r#"{"values": [{"key": "blood_type", "value": "A"}]}"#,
            r#"{"values": []}"#,
            TaskOutput::Persona(vec![]),
        ),
        (
            "conflicts",
            r#"{"conflict": "perhaps"}"#,
            r#"{"conflict": false}"#,
            TaskOutput::Flag(false),
        ),
    ];
    for (name, bad, good, expected) in cases {
        let task = task_named(name);
        server.push_for(name, Step::reply(bad));
        server.push_for(name, Step::reply(good));
        assert_eq!(model.run(&task), Ok(expected), "{name}");
        server.set_default(name, Step::reply(bad));
        let err = model.run(&task).unwrap_err();
        assert!(
            matches!(err, ModelError::BadOutput { .. }),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn no_call_outlives_its_time_budget() {
    let server = ScriptedLlm::start().unwrap();
    server.set_fallback(Step::slow(5_000, Step::reply(GOOD_SUMMARY)));
    // One request, no retries: the call ends at the 300 ms request timeout.
    let single = model_with(&server, |c| {
        c.timeout_ms = 300;
        c.max_retries = 0;
    });
    let started = Instant::now();
    let err = single.run(&summarize_task()).unwrap_err();
    let one = started.elapsed();
    assert!(matches!(err, ModelError::Timeout(_)), "{err:?}");
    assert!(
        one >= Duration::from_millis(290) && one < Duration::from_millis(600),
        "{one:?}"
    );
    // With retries, the whole call stays within timeout_ms × (1 + max_retries).
    let retrying = model_with(&server, |c| {
        c.timeout_ms = 300;
        c.max_retries = 2;
    });
    let started = Instant::now();
    let err = retrying.run(&summarize_task()).unwrap_err();
    let all = started.elapsed();
    assert!(matches!(err, ModelError::Timeout(_)), "{err:?}");
    assert!(
        all >= Duration::from_millis(880) && all < Duration::from_millis(900 + 600),
        "{all:?}"
    );
    eprintln!("timeout 300 ms: single attempt {one:?}, with 2 retries {all:?}");
}

#[test]
fn the_concurrency_limit_holds_across_threads() {
    for limit in [2usize, 6] {
        let server = ScriptedLlm::start().unwrap();
        server.set_fallback(Step::slow(120, Step::reply(GOOD_SUMMARY)));
        let model = Arc::new(model_with(&server, |c| c.max_concurrency = limit));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let model = Arc::clone(&model);
                std::thread::spawn(move || model.run(&summarize_task()))
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), Ok(good_summary()));
        }
        assert_eq!(server.request_count(), 8);
        let most = server.max_in_flight();
        assert!(most <= limit, "limit {limit}, server saw {most} at once");
        assert!(most >= 2, "limit {limit}: requests did overlap ({most})");
        if limit == 6 {
            assert!(most > 2, "a wider limit lets more through ({most})");
        }
    }
}

#[test]
fn accounting_counts_calls_retries_failures_and_tokens() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    // summarize: a 503, then a good answer reporting tokens.
    server.push(Step::server_error(503));
    server.push(Step::reply(GOOD_SUMMARY).with_usage(120, 15));
    model.run(&summarize_task()).unwrap();
    // summarize again: a bad answer and its repair, both with tokens.
    server.push(Step::non_json("饼干是比格犬").with_usage(100, 8));
    server.push(Step::reply(GOOD_SUMMARY).with_usage(130, 12));
    model.run(&summarize_task()).unwrap();
    // arousal: no usage field at all counts zero tokens.
    server.push(Step::reply(r#"{"arousal": 0.4}"#));
    model
        .run(&Task::Arousal {
            text: "还行吧。".into(),
        })
        .unwrap();
    // arousal: a persistent 500 fails after two retries.
    server.set_fallback(Step::server_error(500));
    assert!(model
        .run(&Task::Arousal {
            text: "还行吧。".into()
        })
        .is_err());

    let usage = model.usage();
    let s = usage.tasks["summarize"];
    assert_eq!((s.calls, s.failures, s.retries), (2, 0, 2));
    assert_eq!((s.prompt_tokens, s.completion_tokens), (350, 35));
    let a = usage.tasks["arousal"];
    assert_eq!((a.calls, a.failures, a.retries), (2, 1, 2));
    assert_eq!((a.prompt_tokens, a.completion_tokens), (0, 0));
    assert!(s.micros > 0 && a.micros > 0);
    let total = usage.total();
    assert_eq!((total.calls, total.retries, total.failures), (4, 4, 1));
    assert_eq!(server.request_count() as u64, total.calls + total.retries);
}

#[test]
fn the_api_key_is_sent_as_bearer_and_never_shown() {
    const VAR: &str = "MNEMOS_LLM_TEST_API_KEY";
    const KEY: &str = "sk-mnemos-test-7f3a9c21d4e8";
    std::env::set_var(VAR, KEY);
    let server = ScriptedLlm::start().unwrap();
    let model = model_with(&server, |c| c.api_key_env = Some(VAR.into()));
    server.push(Step::reply(GOOD_SUMMARY));
    model.run(&summarize_task()).unwrap();
    let sent = server.requests()[0]
        .header("authorization")
        .map(str::to_string);
    assert_eq!(sent.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert!(
        !server.requests()[0].body.contains(KEY),
        "the key is a header, not body"
    );

    let debug = format!("{model:?}");
    assert!(!debug.contains(KEY) && debug.contains(VAR), "{debug}");
    assert!(!format!("{:?}", model.config()).contains(KEY));

    // A server echoing the key in its error must not leak it into our error.
    server.set_fallback(Step::status(
        401,
        format!("Incorrect API key provided: {KEY}"),
    ));
    let err = model.run(&summarize_task()).unwrap_err();
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(
            shown.contains(VAR) && shown.contains("[redacted]"),
            "{shown}"
        );
    }
}

#[test]
fn a_dead_endpoint_is_unavailable_quickly() {
    let url = dead_endpoint().unwrap();
    let model = LlmModel::new(config(url)).unwrap();
    let started = Instant::now();
    let err = model.run(&summarize_task()).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&err, ModelError::Unavailable(m) if m.contains("connect")),
        "{err:?}"
    );
    assert!(took < Duration::from_millis(1_500), "{took:?}");
    assert_eq!(model.usage().tasks["summarize"].retries, 2);
}

#[test]
fn json_mode_auto_falls_back_once_and_remembers() {
    let server = ScriptedLlm::start().unwrap();
    server.reject_response_format(true);
    server.set_fallback(Step::reply(GOOD_SUMMARY));
    let model = model(&server);
    assert!(model.json_mode_active());
    assert_eq!(model.run(&summarize_task()), Ok(good_summary()));
    assert!(!model.json_mode_active());
    assert_eq!(model.run(&summarize_task()), Ok(good_summary()));
    let formats: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.has_response_format())
        .collect();
    assert_eq!(formats, vec![true, false, false]);
    let u = model.usage().tasks["summarize"];
    assert_eq!((u.calls, u.retries), (2, 1));

    // `on` insists and reports the rejection; `off` never asks.
    let strict = model_with(&server, |c| c.json_mode = JsonMode::On);
    let err = strict.run(&summarize_task()).unwrap_err();
    assert!(err.to_string().contains("response_format"), "{err}");
    let off = model_with(&server, |c| c.json_mode = JsonMode::Off);
    server.clear_requests();
    assert_eq!(off.run(&summarize_task()), Ok(good_summary()));
    assert!(!server.requests()[0].has_response_format());
}

#[test]
fn base_urls_without_v1_reach_the_same_endpoint() {
    let server = ScriptedLlm::start().unwrap();
    server.set_fallback(Step::reply(GOOD_SUMMARY));
    for url in [server.root_url(), format!("{}/", server.base_url())] {
        let model = LlmModel::new(config(url.clone())).unwrap();
        assert_eq!(model.run(&summarize_task()), Ok(good_summary()), "{url}");
    }
    assert!(server
        .requests()
        .iter()
        .all(|r| r.path == "/v1/chat/completions"));
}

#[test]
fn code_fenced_and_chatty_answers_are_accepted() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    server.push(Step::reply(format!("```json\n{GOOD_SUMMARY}\n```")));
    server.push(Step::reply(format!(
        "好的，结果如下：{GOOD_SUMMARY} 希望有帮助。"
    )));
    server.push(Step::reply_json(&json!({"importance": "7"})));
    assert_eq!(model.run(&summarize_task()), Ok(good_summary()));
    assert_eq!(model.run(&summarize_task()), Ok(good_summary()));
    let exchange = vec![Line::new(Role::User, None, "I start my new job on Monday.")];
    assert_eq!(
        model.run(&Task::RateImportance {
            past_summary: String::new(),
            exchange
        }),
        Ok(TaskOutput::Importance(7))
    );
    assert_eq!(model.usage().total().retries, 0);
}

#[test]
fn the_judge_grades_through_the_endpoint_and_never_guesses() {
    let server = ScriptedLlm::start().unwrap();
    let model = model(&server);
    server.push(Step::reply("CORRECT"));
    server.push(Step::reply("Wrong."));
    server.push(Step::reply("I cannot tell."));
    let (first, _) = model
        .judge("Where does Ann work?", "a bakery", "At a bakery.")
        .unwrap();
    assert_eq!(first, Some(true));
    let (second, _) = model
        .judge("Where does Ann work?", "a bakery", "At a bank.")
        .unwrap();
    assert_eq!(second, Some(false));
    let (third, reply) = model.judge("Where?", "x", "y").unwrap();
    assert_eq!(third, None);
    assert_eq!(reply, "I cannot tell.");
    let sent = server.requests();
    let prompt = sent[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("Reference answer: a bakery") && prompt.contains("At a bakery."));
    assert_eq!(model.usage().tasks["judge"].calls, 3);
    // A dead endpoint is an error, not a verdict.
    let mut dead_config = config(dead_endpoint().unwrap());
    dead_config.max_retries = 0;
    let dead = LlmModel::new(dead_config).unwrap();
    assert!(dead.judge("q", "a", "b").is_err());
}
