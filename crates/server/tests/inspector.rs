//! The web inspector in a real browser (headless Chromium) against a live server with seeded
//! data: every page loads without console errors and shows what the API holds, a search's bars
//! carry the API's breakdown, an edit and a forget made in the page land in the history, a purge
//! removes the user, a wrong key is refused, and the pages fit a phone. Screenshots of every page
//! go to `<target>/inspector/` (the ones in `docs/inspector.md` come from here).

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::browser::{Browser, DESKTOP, PHONE};
use common::Server;
use mnemos_core::{
    MemoryModel, Metadata, ModelError, Role, Scope, Store, Task, TaskOutput, Timestamp, UserKey,
};
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, JobSettings, NewTurn, PresetSpec};
use mnemos_offline::OfflineModel;
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

const TENANT: &str = "acme";

/// An English session, a Chinese session (both of `ann`), and a session of the M⁴ agent.
const ENGLISH: &[(&str, &str)] = &[
    ("Ann", "I just moved to Berlin for a new job at a bakery."),
    ("Bot", "Congratulations! How do you like Berlin so far?"),
    ("Ann", "I love the coffee here, especially the flat whites."),
    ("Bot", "Do you have a favourite café yet?"),
    (
        "Ann",
        "My sister Mia is allergic to peanuts, so we avoid some places.",
    ),
    ("Bot", "Good to know, I will keep that in mind."),
    ("Ann", "I started learning the cello last week."),
    ("Bot", "That sounds fun. Do you have a teacher?"),
    ("Ann", "Yes, my teacher Jonas is very patient with me."),
    ("Bot", "Lovely, patience matters with strings."),
    ("Ann", "Actually I think I prefer tea to coffee now."),
    ("Bot", "Noted, tea it is."),
];
const CHINESE: &[(&str, &str)] = &[
    ("安", "我最近在上海找到了一份新工作。"),
    ("助手", "恭喜你！新工作怎么样？"),
    ("安", "我每天早上都喝一杯咖啡。"),
    ("助手", "你喜欢什么咖啡？"),
    ("安", "我喜欢拿铁，不加糖。"),
    ("助手", "好的，我记住了。"),
    ("安", "周末我常常去公园跑步。"),
    ("助手", "跑步对身体很好。"),
];
const CHINESE_COFFEE: &str = "我每天早上都喝一杯咖啡。";

/// A model whose endpoint is down: every derived job that needs it fails.
struct DownModel;

impl MemoryModel for DownModel {
    fn id(&self) -> &str {
        "down"
    }

    fn run(&self, _task: &Task) -> Result<TaskOutput, ModelError> {
        Err(ModelError::Unavailable(
            "the endpoint refused the connection".into(),
        ))
    }
}

fn engine(db: &std::path::Path, inline: bool) -> Engine {
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    engine_with(db, inline, embedder, model)
}

fn engine_with(
    db: &std::path::Path,
    inline: bool,
    embedder: Arc<HashEmbedder>,
    model: Arc<dyn MemoryModel>,
) -> Engine {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db, SqliteOptions::default()).unwrap());
    // Small MOOM units and a small capacity, so a short dialogue already has a plot tree, a
    // persona sketch and forgotten memories.
    let moom = PresetSpec {
        name: "moom".into(),
        params: "theta1 = 2\ntheta2 = 2\ncapacity = 3\npersona_every = 2"
            .parse()
            .unwrap(),
    };
    let config = EngineConfig {
        preset: moom,
        agents: [
            ("m4".to_string(), PresetSpec::named("m4")),
            ("plain".to_string(), PresetSpec::named("retrieval")),
            ("facts".to_string(), PresetSpec::named("default")),
        ]
        .into(),
        jobs: JobSettings {
            inline,
            ..JobSettings::default()
        },
        ..EngineConfig::default()
    };
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(config)
        .build()
        .unwrap()
}

fn turns(user: &str, agent: &str, session: &str, lines: &[(&str, &str)], day: u32) -> Vec<NewTurn> {
    let scope = Scope::new(TENANT, user, agent, session).unwrap();
    lines
        .iter()
        .enumerate()
        .map(|(i, (speaker, text))| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            // 2024-05-{day} 10:{i} UTC.
            let time = 1_714_521_600_000
                + i64::from(day - 1) * 86_400_000
                + 36_000_000
                + i as i64 * 60_000;
            let mut metadata = Metadata::new();
            metadata.insert("topic".into(), format!("{session}-topic"));
            NewTurn {
                role,
                speaker: Some((*speaker).to_string()),
                time: Some(Timestamp::from_millis(time)),
                metadata,
                key: Some(format!("{session}-{i}")),
                ..NewTurn::user(scope.clone(), *text)
            }
        })
        .collect()
}

/// A server over seeded data, and a key of its tenant. `ann`'s derived work has run; `bob`'s
/// failed until it gave up (a model that was down then), so the jobs page has stuck jobs to
/// retry; the server runs no worker, so nothing retries them behind the test's back.
fn seeded() -> (Server, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    {
        let seeding = engine(&db, true);
        seeding
            .add(turns("ann", "default", "s1", ENGLISH, 1))
            .unwrap();
        seeding
            .add(turns("ann", "default", "s2", CHINESE, 8))
            .unwrap();
        // The same dialogue told to an agent whose preset recalls without side effects.
        seeding
            .add(turns("ann", "plain", "p1", CHINESE, 9))
            .unwrap();
        for (session, lines, day) in [("m1", &ENGLISH[..6], 2), ("m2", &ENGLISH[6..], 4)] {
            let m4 = turns("ann", "m4", session, lines, day);
            let scope = m4[0].scope.clone();
            seeding.add(m4).unwrap();
            seeding.end_session(&scope).unwrap();
        }
        seeding
            .end_session(&Scope::new(TENANT, "ann", "default", "s2").unwrap())
            .unwrap();
        // A fact and its update, told to an agent whose preset keeps facts current.
        seeding.add(turns("ann", "facts", "f1", FACTS, 12)).unwrap();
    }
    {
        let failing = engine_with(
            &db,
            false,
            Arc::new(HashEmbedder::default()),
            Arc::new(DownModel),
        );
        failing
            .add(turns("bob", "default", "b1", ENGLISH, 3))
            .unwrap();
        let bob = UserKey::new(TENANT, "bob").unwrap();
        for _ in 0..JobSettings::default().max_attempts {
            failing.run_pending(&bob).unwrap();
        }
    }
    let serving = engine(&db, false);
    let key = serving.create_api_key(TENANT, "inspector").unwrap().secret;
    let server = Server::serve_engine(serving, dir, Server::default_config());
    (server, key)
}

/// The browser on the inspector, and what the test needs to talk to the API alongside it.
struct Inspector<'a> {
    browser: Browser,
    server: &'a Server,
    key: String,
}

impl Inspector<'_> {
    fn api(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.server.send_as(Some(&self.key), method, path, body);
        assert!(status.is_success(), "{method} {path}: {status} {value}");
        value
    }

    fn rendered(&self) -> u64 {
        let value = self
            .browser
            .eval("return document.getElementById('main').dataset.rendered || '0';")
            .unwrap();
        value.as_str().unwrap_or("0").parse().unwrap()
    }

    /// Wait until the page has finished a render after `before`.
    fn await_render(&self, before: u64) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.rendered() <= before {
            assert!(
                Instant::now() < deadline,
                "the page did not render: {}",
                self.browser.visible_text().unwrap()
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Open a route of the page, wait for it, check it logged no error and every control has a
    /// label, and keep a screenshot.
    fn visit(&self, route: &str, shot: &str) {
        let before = self.rendered();
        self.browser
            .goto(&format!("{}#{route}", self.server.url("/ui/")))
            .unwrap();
        self.await_render(before);
        self.check_page(shot);
    }

    fn check_page(&self, shot: &str) {
        self.browser.screenshot(shot).unwrap();
        self.browser.assert_no_console_errors().unwrap();
        let unlabelled = self
            .browser
            .eval(
                "return [...document.querySelectorAll('input, select, textarea')]
                   .filter(e => e.offsetParent !== null)
                   .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
                   .map(e => e.id || e.name || e.outerHTML);",
            )
            .unwrap();
        assert_eq!(unlabelled, json!([]), "{shot}: controls without a label");
        assert!(
            !self.browser.exists("#page-error").unwrap(),
            "{shot}: {}",
            self.browser.visible_text().unwrap()
        );
    }

    fn texts(&self, selector: &str) -> Vec<String> {
        let script = format!(
            "return [...document.querySelectorAll({})].map(e => e.textContent);",
            json!(selector)
        );
        serde_json::from_value(self.browser.eval(&script).unwrap()).unwrap()
    }

    fn count(&self, selector: &str) -> usize {
        self.texts(selector).len()
    }

    /// Confirm the open dialog, after replacing its field's value with `value` when given.
    fn confirm(&self, value: Option<&str>) {
        self.browser.wait_for("#confirm[open]").unwrap();
        if let Some(value) = value {
            self.browser.clear("#confirm-input").unwrap();
            self.browser.type_into("#confirm-input", value).unwrap();
        }
        let before = self.rendered();
        self.browser.click("#confirm-ok").unwrap();
        self.await_render(before);
    }
}

fn memory_id_of(inspector: &Inspector, text: &str) -> String {
    let page = inspector.api(
        "GET",
        &format!(
            "/v1/users/ann/memories?kind=turn&limit=200&q={}",
            urlencode(text)
        ),
        None,
    );
    let hit = page["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == text)
        .unwrap_or_else(|| panic!("no turn memory says {text}: {page}"));
    hit["id"].as_str().unwrap().to_string()
}

fn urlencode(text: &str) -> String {
    reqwest::Url::parse_with_params("http://x/", [("q", text)])
        .unwrap()
        .query()
        .unwrap()
        .trim_start_matches("q=")
        .to_string()
}

#[test]
fn the_inspector_shows_what_the_api_holds_and_acts_through_it() {
    let (server, key) = seeded();
    let browser = Browser::start().unwrap();
    browser.set_size(DESKTOP).unwrap();
    let inspector = Inspector {
        browser,
        server: &server,
        key,
    };
    refuses_a_wrong_key(&inspector);
    users_and_overview(&inspector);
    memories_with_filters(&inspector);
    search_bars_carry_the_api_breakdown(&inspector);
    recall_shows_the_agents_context(&inspector);
    mechanism_views_are_drawn(&inspector);
    edit_and_forget_land_in_the_history(&inspector);
    forgetting_and_jobs(&inspector);
    superseded_memories_are_marked(&inspector);
    pages_fit_a_phone(&inspector);
    purge_removes_the_user(&inspector);
}

/// Ann's residence, then its update.
const FACTS: &[(&str, &str)] = &[
    ("Ann", "By the way, I live in Tallinn these days."),
    ("Bot", "Noted."),
    ("Ann", "Big news: I just moved, and I live in Porto now."),
    ("Bot", "Congratulations on the move!"),
];

/// A memory a later statement replaced is marked in the listing, links to what replaced it,
/// leaves the current-only listing, and comes back marked in a search that asks for it.
fn superseded_memories_are_marked(inspector: &Inspector) {
    let b = &inspector.browser;
    inspector.visit(
        "/u/ann/memories?agent=facts&kind=turn",
        "memories-superseded",
    );
    let rows = inspector.texts("#memories-table tbody tr");
    let stale: Vec<&String> = rows.iter().filter(|r| r.contains("Tallinn")).collect();
    assert!(
        !stale.is_empty() && stale.iter().all(|r| r.contains("superseded")),
        "{rows:?}"
    );
    assert!(rows
        .iter()
        .filter(|r| r.contains("Porto"))
        .all(|r| !r.contains("superseded")));
    inspector.visit(
        "/u/ann/memories?agent=facts&kind=turn&current=true",
        "memories-current",
    );
    let current = inspector.texts("#memories-table tbody tr td.text");
    assert!(
        current.iter().all(|t| !t.contains("Tallinn"))
            && current.iter().any(|t| t.contains("Porto")),
        "{current:?}"
    );
    let id = memory_id_of(inspector, FACTS[0].1);
    inspector.visit(&format!("/u/ann/memory/{id}"), "memory-superseded");
    assert!(b.exists("#superseded-by a").unwrap());
    let api = inspector.api("GET", &format!("/v1/users/ann/memories/{id}"), None);
    assert!(api["superseded_by"].is_string(), "{api}");
    inspector.visit(
        &format!(
            "/u/ann/search?q={}&agent=facts&include_superseded=true",
            urlencode("Where do I live?")
        ),
        "search-superseded",
    );
    let hits = inspector.texts("#results article.hit");
    assert!(
        hits.iter()
            .any(|h| h.contains("Tallinn") && h.contains("superseded")),
        "{hits:?}"
    );
}

fn refuses_a_wrong_key(inspector: &Inspector) {
    let b = &inspector.browser;
    b.goto(&inspector.server.url("/ui")).unwrap();
    b.wait_for("#auth-error").unwrap();
    b.type_into("#api-key", "mn_this_is_not_a_key").unwrap();
    let before = inspector.rendered();
    b.click("#key-form button[type=submit]").unwrap();
    inspector.await_render(before);
    let refused = b.text("#auth-error").unwrap();
    assert!(refused.contains("refused"), "{refused}");
    assert!(!b.exists("#users-table").unwrap());
    assert!(!b.visible_text().unwrap().contains("ann"));
    b.screenshot("key-refused").unwrap();
    // The refused requests are the only errors the browser saw.
    for entry in b.console_errors().unwrap() {
        assert!(entry.message.contains("401"), "{entry}");
    }
    b.clear("#api-key").unwrap();
    b.type_into("#api-key", &inspector.key).unwrap();
    let before = inspector.rendered();
    b.click("#key-form button[type=submit]").unwrap();
    inspector.await_render(before);
    b.wait_for("#users-table").unwrap();
    inspector.check_page("users");
}

fn users_and_overview(inspector: &Inspector) {
    let users = inspector.api("GET", "/v1/users", None);
    assert_eq!(users["users"], json!(["ann", "bob"]));
    inspector.visit("/users", "users");
    for user in ["ann", "bob"] {
        let overview = inspector.api("GET", &format!("/v1/users/{user}/overview"), None);
        let cells = inspector.texts(&format!("tr[data-user='{user}'] td"));
        assert_eq!(cells[0], user);
        assert_eq!(cells[1], overview["turns"].to_string(), "{cells:?}");
    }
    inspector.visit("/u/ann", "overview");
    let overview = inspector.api("GET", "/v1/users/ann/overview", None);
    assert_eq!(
        inspector.browser.text("#overview-turns").unwrap(),
        overview["turns"].to_string()
    );
}

fn memories_with_filters(inspector: &Inspector) {
    let b = &inspector.browser;
    inspector.visit("/u/ann/memories", "memories");
    let api = inspector.api("GET", "/v1/users/ann/memories?limit=50", None);
    let shown: Vec<String> = inspector.texts("#memories-table tbody tr td.text");
    let listed: Vec<String> = api["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().chars().take(220).collect())
        .collect();
    assert_eq!(shown.len(), listed.len());
    for (shown, listed) in shown.iter().zip(&listed) {
        assert!(
            shown.trim_end_matches('…') == listed.as_str(),
            "{shown} != {listed}"
        );
    }
    // The text filter, typed into the form, in Chinese.
    b.type_into("#f-q", "咖啡").unwrap();
    let before = inspector.rendered();
    b.click("form.filters button[type=submit]").unwrap();
    inspector.await_render(before);
    let api = inspector.api(
        "GET",
        &format!("/v1/users/ann/memories?limit=50&q={}", urlencode("咖啡")),
        None,
    );
    let shown = inspector.texts("#memories-table tbody tr td.text");
    assert_eq!(shown.len(), api["memories"].as_array().unwrap().len());
    assert!(shown.iter().all(|t| t.contains("咖啡")), "{shown:?}");
    assert!(shown.iter().any(|t| t == CHINESE_COFFEE), "{shown:?}");
    inspector.check_page("memories-filtered");
    // Paging: two memories a page, every page of the filter once.
    let total = api["total"].as_u64().unwrap() as usize;
    inspector.visit(
        &format!(
            "/u/ann/memories?q={}&sort=newest&limit=2",
            urlencode("咖啡")
        ),
        "memories-paged",
    );
    let mut seen = inspector.texts("#memories-table tbody tr td.text");
    while b.exists("#next-page").unwrap() {
        let before = inspector.rendered();
        b.click("#next-page").unwrap();
        inspector.await_render(before);
        seen.extend(inspector.texts("#memories-table tbody tr td.text"));
    }
    assert_eq!(seen.len(), total, "{seen:?}");
    assert!(b.exists("#previous-page").unwrap() || total <= 2);
}

/// Every bar's number on each hit is the API's breakdown for the same search.
fn search_bars_carry_the_api_breakdown(inspector: &Inspector) {
    let b = &inspector.browser;
    inspector.visit("/u/ann/search", "search-empty");
    b.type_into("#s-q", "coffee").unwrap();
    let before = inspector.rendered();
    b.click("#run-search").unwrap();
    inspector.await_render(before);
    inspector.check_page("search");
    let api = inspector.api(
        "POST",
        "/v1/users/ann/search",
        Some(json!({"query": "coffee"})),
    );
    let shown = b
        .eval(
            "return [...document.querySelectorAll('article.hit')].map(a => ({
               id: a.dataset.hit,
               bars: Object.fromEntries([...a.querySelectorAll('[data-bar]')]
                 .map(e => [e.dataset.bar, Number(e.dataset.value)])) }));",
        )
        .unwrap();
    let hits = api["hits"].as_array().unwrap();
    let shown = shown.as_array().unwrap();
    assert!(!hits.is_empty());
    assert_eq!(shown.len(), hits.len());
    for (shown, hit) in shown.iter().zip(hits) {
        assert_eq!(shown["id"], hit["memory"]["id"]);
        let breakdown = &hit["breakdown"];
        let mut expected = vec![
            ("fused", breakdown["fused"].as_f64()),
            ("final", breakdown["final"].as_f64()),
            ("lexical", breakdown["lexical"]["score"].as_f64()),
            ("dense", breakdown["dense"]["score"].as_f64()),
        ];
        for (i, adjustment) in breakdown["adjustments"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            expected.push((
                ["adjustment-", &i.to_string()].concat().leak(),
                adjustment["delta"].as_f64(),
            ));
        }
        assert_eq!(breakdown["final"], hit["score"]);
        for (bar, value) in expected {
            let drawn = shown["bars"][bar].as_f64();
            match value {
                Some(value) => {
                    let drawn = drawn.unwrap_or_else(|| panic!("no {bar} bar: {shown}"));
                    assert!(
                        (drawn - value).abs() <= 1e-6 * value.abs().max(1.0),
                        "{bar}: {drawn} vs {value}"
                    );
                }
                None => assert!(drawn.is_none(), "{bar} drawn without a value: {shown}"),
            }
        }
    }
}

/// Recall through a preset without side effects shows exactly the API's context.
fn recall_shows_the_agents_context(inspector: &Inspector) {
    let b = &inspector.browser;
    inspector.visit(
        &format!(
            "/u/ann/search?q={}&mode=recall&agent=plain&budget=200",
            urlencode("她喜欢什么咖啡？")
        ),
        "recall",
    );
    let api = inspector.api(
        "POST",
        "/v1/users/ann/recall",
        Some(json!({"query": "她喜欢什么咖啡？", "agent": "plain", "budget": 200})),
    );
    let context = api["text"].as_str().unwrap();
    assert!(context.contains("咖啡"), "{api}");
    assert_eq!(b.text("#recall-text").unwrap(), context.trim());
    assert_eq!(b.text("#recall-tokens").unwrap(), api["tokens"].to_string());
    assert_eq!(
        inspector.count("#recall-items tbody tr"),
        api["items"].as_array().unwrap().len()
    );
}

fn mechanism_views_are_drawn(inspector: &Inspector) {
    inspector.visit("/u/ann/persona", "persona");
    let persona = inspector.api("GET", "/v1/users/ann/views/persona", None);
    let keys = persona["data"].as_array().unwrap();
    assert!(
        !keys.is_empty(),
        "the seeded dialogue has a persona: {persona}"
    );
    let shown = inspector.browser.text("#persona").unwrap();
    for key in keys {
        assert!(shown.contains(key["key"].as_str().unwrap()), "{key}");
        for value in key["current"].as_array().unwrap() {
            assert!(shown.contains(value["value"].as_str().unwrap()), "{value}");
        }
    }

    inspector.visit("/u/ann/timeline", "timeline");
    let timeline = inspector.api("GET", "/v1/users/ann/views/timeline", None);
    fn count(nodes: &Value) -> usize {
        nodes
            .as_array()
            .unwrap()
            .iter()
            .map(|n| 1 + count(&n["children"]))
            .sum()
    }
    let nodes = count(&timeline["data"]);
    assert!(nodes > 0, "{timeline}");
    assert_eq!(inspector.count("#timeline-chart rect[data-node]"), nodes);

    inspector.visit("/u/ann/chains", "chains");
    let chains = inspector.api("GET", "/v1/users/ann/views/chains", None);
    let drawn: usize = chains["data"]["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["nodes"].as_array().unwrap().len())
        .sum();
    assert!(
        drawn > 0,
        "the M⁴ agent's session made chain nodes: {chains}"
    );
    assert_eq!(inspector.count("#chains-chart circle[data-node]"), drawn);
}

fn edit_and_forget_land_in_the_history(inspector: &Inspector) {
    let b = &inspector.browser;
    let id = memory_id_of(inspector, CHINESE_COFFEE);
    inspector.visit(&format!("/u/ann/memory/{id}"), "memory");
    assert_eq!(b.text("#memory-text").unwrap(), CHINESE_COFFEE);
    assert_eq!(inspector.count("li.focus[data-turn]"), 1);

    // Escape leaves the dialog and changes nothing.
    b.click("#forget-memory").unwrap();
    b.wait_for("#confirm[open]").unwrap();
    b.type_into("#confirm-input", "\u{E00C}").unwrap();
    assert!(!b.exists("#confirm[open]").unwrap());
    assert_eq!(
        inspector.api("GET", &format!("/v1/users/ann/memories/{id}"), None)["state"],
        "active"
    );

    let edited = "我每天早上都喝一杯绿茶。";
    b.click("#edit-memory").unwrap();
    inspector.confirm(Some(edited));
    assert_eq!(b.text("#memory-text").unwrap(), edited);
    assert_eq!(inspector.texts("#history ins"), vec!["绿", "茶"]);

    b.click("#forget-memory").unwrap();
    inspector.confirm(Some("浏览器里忘记"));
    inspector.check_page("memory-forgotten");
    assert!(b.exists("h1 .pill.forgotten").unwrap());
    assert!(
        !b.exists("#edit-memory").unwrap(),
        "a forgotten memory offers no edit"
    );
    let memory = inspector.api("GET", &format!("/v1/users/ann/memories/{id}"), None);
    assert_eq!(memory["state"], "forgotten");
    assert_eq!(memory["forgotten"]["reason"], "浏览器里忘记");
    assert_eq!(memory["forgotten"]["by"], "request");
    let history = inspector.api("GET", &format!("/v1/users/ann/memories/{id}/history"), None);
    let changes: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["change"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["created", "updated", "forgotten"]);
    let shown = inspector.texts("#history li");
    assert_eq!(shown.len(), 3);
    assert!(shown[2].contains("浏览器里忘记"), "{shown:?}");
}

fn forgetting_and_jobs(inspector: &Inspector) {
    inspector.visit("/u/ann/forgetting", "forgetting");
    let retention = inspector.api("GET", "/v1/users/ann/retention?points=300", None);
    assert!(inspector
        .browser
        .exists("#retention-chart polyline[data-series='active']")
        .unwrap());
    let forgotten = inspector.api(
        "GET",
        "/v1/users/ann/memories?state=forgotten&sort=newest&limit=100",
        None,
    );
    assert_eq!(
        inspector.count("#forgotten-table tbody tr"),
        forgotten["memories"].as_array().unwrap().len()
    );
    for (cause, n) in retention["forgotten_by"].as_object().unwrap() {
        let shown = inspector.texts(&format!("#forgotten-by [data-cause='{cause}']"));
        assert_eq!(shown, vec![n.to_string()]);
    }
    assert!(retention["forgotten_by"]["request"].as_u64() >= Some(1));

    inspector.visit("/u/bob/jobs", "jobs");
    let jobs = inspector.api("GET", "/v1/users/bob/jobs", None);
    let jobs = jobs.as_array().unwrap();
    assert!(
        jobs.iter().any(|j| j["state"] == "stuck"),
        "bob's jobs gave up: {jobs:?}"
    );
    assert_eq!(inspector.count("#jobs-table tbody tr"), jobs.len());
    let shown = inspector.browser.text("#jobs-table").unwrap();
    assert!(
        shown.contains("the endpoint refused the connection"),
        "{shown}"
    );

    // Retry one: the model is back, so it runs and leaves the list.
    let stuck = jobs.iter().find(|j| j["state"] == "stuck").unwrap();
    let id = stuck["id"].as_str().unwrap();
    inspector
        .browser
        .click(&format!("tr[data-job='{id}'] button"))
        .unwrap();
    inspector.confirm(None);
    let flash = inspector.browser.text("#flash").unwrap();
    assert!(flash.starts_with("Done"), "{flash}");
    let after = inspector.api("GET", "/v1/users/bob/jobs", None);
    assert!(
        after.as_array().unwrap().iter().all(|j| j["id"] != id),
        "{after}"
    );
    assert_eq!(
        inspector.count("#jobs-table tbody tr"),
        after.as_array().unwrap().len()
    );
    inspector.check_page("jobs-retried");
}

fn pages_fit_a_phone(inspector: &Inspector) {
    inspector.browser.set_size(PHONE).unwrap();
    let id = memory_id_of(
        inspector,
        "I love the coffee here, especially the flat whites.",
    );
    for (route, shot) in [
        ("/users".to_string(), "phone-users"),
        ("/u/ann/memories".to_string(), "phone-memories"),
        (format!("/u/ann/memory/{id}"), "phone-memory"),
        ("/u/ann/search?q=coffee".to_string(), "phone-search"),
        ("/u/ann/timeline".to_string(), "phone-timeline"),
    ] {
        inspector.visit(&route, shot);
        let overflow = inspector
            .browser
            .eval("return document.documentElement.scrollWidth - window.innerWidth;")
            .unwrap();
        assert!(
            overflow.as_i64().unwrap() <= 0,
            "{route} is wider than a phone by {overflow} px"
        );
    }
    inspector.browser.set_size(DESKTOP).unwrap();
}

fn purge_removes_the_user(inspector: &Inspector) {
    let b = &inspector.browser;
    inspector.visit("/u/bob", "overview-bob");
    b.click("#purge").unwrap();
    b.wait_for("#confirm[open]").unwrap();
    assert!(
        b.eval("return document.getElementById('confirm-ok').disabled;")
            .unwrap()
            == json!(true)
    );
    inspector.confirm(Some("bob"));
    b.wait_for("#users-table").unwrap();
    assert!(b.text("#flash").unwrap().contains("Purged bob"));
    assert!(!b.exists("tr[data-user='bob']").unwrap());
    assert_eq!(
        inspector.api("GET", "/v1/users", None)["users"],
        json!(["ann"])
    );
    b.assert_no_console_errors().unwrap();
}
