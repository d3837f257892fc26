//! The browser harness the inspector's tests use (tests/common/browser.rs), on tiny pages served
//! here: rendered Chinese text read back exactly, a click, typing, console errors and failed
//! loads reported (and none on a clean page), screenshots at desktop and phone widths, a clear
//! timeout, and two browsers at once.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;

use std::time::Duration;

use axum::response::Html;
use axum::routing::get;
use axum::Router;

use common::browser::{Browser, DESKTOP, PHONE};

const CLEAN: &str = r#"<!doctype html>
<html lang="zh"><head><meta charset="utf-8"><title>clean</title>
</head>
<body>
<p id="word">咖啡</p>
<p id="status">idle</p>
<button id="go" onclick="document.getElementById('status').textContent = 'clicked 咖啡'">go</button>
<input id="q" oninput="document.getElementById('echo').textContent = this.value">
<p id="echo"></p>
<p id="hidden" style="display: none">hidden</p>
</body></html>"#;

const ERRORS: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>errors</title></head>
<body>
<p id="ready">loaded</p>
<script src="/missing.js"></script>
<script>
console.error("boom");
console.warn("only a warning");
console.log("only information");
setTimeout(() => { throw new Error("kaboom"); }, 0);
</script>
</body></html>"#;

/// Serves the pages on a loopback port from a thread of its own; returns the base URL.
fn serve_pages() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = Router::new()
                .route("/clean", get(|| async { Html(CLEAN) }))
                .route("/errors", get(|| async { Html(ERRORS) }));
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

/// Waits (briefly) until the console has reported entries matching every needle, and returns
/// all it reported: entries can arrive a little after the page has loaded.
fn console_errors_matching(browser: &Browser, needles: &[&str]) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..40 {
        seen.extend(
            browser
                .console_errors()
                .unwrap()
                .into_iter()
                .map(|e| e.to_string()),
        );
        if needles
            .iter()
            .all(|needle| seen.iter().any(|e| e.contains(needle)))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    seen
}

#[test]
fn reads_clicks_types_and_screenshots() {
    let base = serve_pages();
    let browser = Browser::start().unwrap();
    assert_eq!(browser.viewport().unwrap(), DESKTOP);
    browser.goto(&format!("{base}/clean")).unwrap();

    assert_eq!(browser.text("#word").unwrap(), "咖啡");
    assert_eq!(browser.text("#status").unwrap(), "idle");
    browser.click("#go").unwrap();
    assert_eq!(browser.text("#status").unwrap(), "clicked 咖啡");

    browser.type_into("#q", "latte ").unwrap();
    browser.type_into("#q", "咖啡").unwrap();
    assert_eq!(browser.value("#q").unwrap(), "latte 咖啡");
    assert_eq!(browser.text("#echo").unwrap(), "latte 咖啡");
    browser.clear("#q").unwrap();
    assert_eq!(browser.value("#q").unwrap(), "");

    // Present but not displayed: not "appeared".
    assert!(browser.exists("#hidden").unwrap());
    assert!(browser
        .wait_for_within("#hidden", Duration::from_millis(200))
        .is_err());

    for (size, name) in [(DESKTOP, "harness-desktop"), (PHONE, "harness-phone")] {
        browser.set_size(size).unwrap();
        let css = browser
            .eval("return [window.innerWidth, window.innerHeight, document.documentElement.clientWidth];")
            .unwrap();
        assert_eq!(css, serde_json::json!([size.0, size.1, size.0]));
        let path = browser.screenshot(name).unwrap();
        assert!(path.ends_with(format!("inspector/{name}.png")), "{path:?}");
        let png = std::fs::read(&path).unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{path:?} is not a PNG"
        );
        // The PNG header's width and height: the viewport, in device pixels (scale 1).
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), size, "{path:?}");
    }

    let errors = browser.console_errors().unwrap();
    assert!(errors.is_empty(), "a clean page logged errors: {errors:#?}");
    browser.assert_no_console_errors().unwrap();
}

#[test]
fn reports_console_errors_and_failed_loads() {
    let base = serve_pages();
    let browser = Browser::start().unwrap();
    browser.goto(&format!("{base}/errors")).unwrap();
    assert_eq!(browser.text("#ready").unwrap(), "loaded");

    let errors = console_errors_matching(&browser, &["\"boom\"", "missing.js", "kaboom"]);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("[SEVERE console-api]") && e.contains("\"boom\"")),
        "{errors:#?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("[SEVERE network]")
            && e.contains("/missing.js")
            && e.contains("404")),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("[SEVERE javascript]") && e.contains("kaboom")),
        "{errors:#?}"
    );
    // Warnings and information are not errors; Chromium's own favicon request is not either.
    assert!(
        !errors
            .iter()
            .any(|e| e.contains("only a") || e.contains("favicon")),
        "{errors:#?}"
    );
    let message = browser
        .assert_no_console_errors()
        .err()
        .map(|e| e.to_string());
    assert_eq!(message, None, "each entry is reported once");

    // A clean page afterwards has none.
    browser.goto(&format!("{base}/clean")).unwrap();
    assert_eq!(browser.text("#word").unwrap(), "咖啡");
    let errors = browser.console_errors().unwrap();
    assert!(errors.is_empty(), "a clean page logged errors: {errors:#?}");

    // A selector that never appears: the error says which, where, and what the page showed.
    let error = browser
        .wait_for_within("#nowhere", Duration::from_millis(300))
        .unwrap_err()
        .to_string();
    assert!(error.contains("`#nowhere`"), "{error}");
    assert!(error.contains(&format!("{base}/clean")), "{error}");
    assert!(error.contains("咖啡") && error.contains("idle"), "{error}");
    assert!(!error.contains("console has errors"), "{error}");

    // And on a page with errors, the timeout lists them.
    browser.goto(&format!("{base}/errors")).unwrap();
    let _ = console_errors_matching(&browser, &[]);
    browser
        .eval("console.error('late boom'); return null;")
        .unwrap();
    let error = browser
        .wait_for_within("#nowhere", Duration::from_millis(300))
        .unwrap_err()
        .to_string();
    assert!(error.contains("loaded"), "{error}");
    assert!(error.contains("late boom"), "{error}");
}

#[test]
fn two_browsers_at_once() {
    let base = serve_pages();
    let browsers: Vec<Browser> = std::thread::scope(|scope| {
        let starts: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| Browser::start().unwrap()))
            .collect();
        starts.into_iter().map(|s| s.join().unwrap()).collect()
    });
    assert_ne!(browsers[0].driver_port(), browsers[1].driver_port());
    assert_ne!(browsers[0].profile_dir(), browsers[1].profile_dir());
    std::thread::scope(|scope| {
        for (i, browser) in browsers.iter().enumerate() {
            let base = &base;
            scope.spawn(move || {
                browser.goto(&format!("{base}/clean")).unwrap();
                browser.type_into("#q", &format!("browser {i}")).unwrap();
                assert_eq!(browser.text("#echo").unwrap(), format!("browser {i}"));
                assert_eq!(browser.text("#word").unwrap(), "咖啡");
            });
        }
    });
    let profiles: Vec<_> = browsers
        .iter()
        .map(|b| b.profile_dir().to_path_buf())
        .collect();
    drop(browsers);
    for profile in profiles {
        assert!(!profile.exists(), "{profile:?} was not removed");
    }
}
