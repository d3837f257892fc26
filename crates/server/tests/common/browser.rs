//! A headless Chromium for the server's browser tests, driven over WebDriver (fantoccini) through
//! its own `/usr/bin/chromedriver`, from plain `#[test]` functions: every method blocks.
//!
//! Each [`Browser`] has its own chromedriver (on a free loopback port) and its own fresh profile
//! directory, so tests running in parallel do not share anything. Dropping it ends the session
//! and kills chromedriver with whatever it started.
//!
//! The tests need Debian's `chromium` and `chromium-driver` packages (`scripts/test.sh` installs
//! them); without them [`Browser::start`] fails with a message saying so, it does not skip.
//!
//! Console errors come from chromedriver's browser log (`goog:loggingPrefs`), read with the
//! `POST /session/{id}/se/log` command: `console.error` calls, uncaught exceptions and failed
//! loads (a 404 script or stylesheet) — including those logged while the page was still loading,
//! which a collector injected after navigation would miss.
//!
//! ```ignore
//! let browser = Browser::start()?;
//! browser.goto(&server.url("/ui"))?;
//! browser.set_size(PHONE)?;
//! browser.click("#search")?;
//! assert_eq!(browser.text("#results .count")?, "3");
//! browser.screenshot("search-phone")?;
//! assert_eq!(browser.console_errors()?, vec![]);
//! ```

use std::fmt;
use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use reqwest::Url;
use serde_json::{json, Value};

pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The desktop viewport the inspector is checked at.
pub const DESKTOP: (u32, u32) = (1280, 900);
/// A phone's viewport (an iPhone 12–14 in CSS pixels).
pub const PHONE: (u32, u32) = (390, 844);

/// How long [`Browser::wait_for`] and the methods built on it wait by default.
pub const WAIT: Duration = Duration::from_secs(5);

/// One headless Chromium session. See the module documentation.
pub struct Browser {
    // Declared (so dropped) in this order: the session is closed explicitly in `Drop`, then
    // chromedriver is killed, then the profile directory removed.
    client: Option<Client>,
    runtime: tokio::runtime::Runtime,
    driver: Driver,
    profile: tempfile::TempDir,
}

/// One entry of the browser's console log, as chromedriver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleEntry {
    /// `SEVERE`, `WARNING`, `INFO` or `DEBUG`.
    pub level: String,
    /// `console-api` (console.error…), `javascript` (uncaught exceptions), `network` (failed
    /// loads), …
    pub source: String,
    /// Starts with the URL of the page or resource, e.g.
    /// `http://127.0.0.1:4711/ui/app.js 12:8 "boom"` or
    /// `http://127.0.0.1:4711/ui/x.js - Failed to load resource: … status of 404 (Not Found)`.
    pub message: String,
}

impl fmt::Display for ConsoleEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} {}] {}", self.level, self.source, self.message)
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile, its viewport at the
    /// [`DESKTOP`] size.
    pub fn start() -> Result<Browser> {
        for path in [CHROMEDRIVER, CHROMIUM] {
            if !Path::new(path).exists() {
                bail!(
                    "the browser tests need headless Chromium: {path} is missing. Install Debian's \
                     `chromium` and `chromium-driver` packages (scripts/test.sh does, as root)"
                );
            }
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            bail!(
                "Browser blocks on a runtime of its own: use it from a plain #[test], not from \
                 async code"
            );
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let profile = tempfile::Builder::new()
            .prefix("mnemos-chromium-")
            .tempdir()?;
        let driver = Driver::start(profile.path())?;
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            format!(
                "--user-data-dir={}",
                profile.path().join("profile").display()
            ),
            format!("--window-size={},{}", DESKTOP.0, DESKTOP.1),
        ];
        let capabilities = json!({
            "goog:chromeOptions": { "args": args },
            "goog:loggingPrefs": { "browser": "ALL" },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        let url = driver.url.clone();
        let client = runtime
            .block_on(async {
                ClientBuilder::new(HttpConnector::new())
                    .capabilities(capabilities)
                    .connect(&url)
                    .await
                    .map_err(anyhow::Error::from)
            })
            .with_context(|| {
                format!(
                    "no Chromium session from chromedriver; its log:\n{}",
                    driver.log_tail()
                )
            })?;
        let browser = Browser {
            client: Some(client),
            runtime,
            driver,
            profile,
        };
        browser.set_size(DESKTOP)?;
        Ok(browser)
    }

    /// The fantoccini client, for what this harness does not wrap; run its futures with
    /// [`Browser::block_on`].
    pub fn client(&self) -> &Client {
        self.client
            .as_ref()
            .unwrap_or_else(|| unreachable!("the client lives until drop"))
    }

    /// Runs a future on this browser's runtime (for calls on [`Browser::client`]).
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Opens `url` and waits until it has loaded (the document's `load` event).
    pub fn goto(&self, url: &str) -> Result<()> {
        self.block_on(self.client().goto(url))
            .with_context(|| format!("opening {url}"))
    }

    /// The URL of the page shown now.
    pub fn current_url(&self) -> Result<String> {
        Ok(self.block_on(self.client().current_url())?.to_string())
    }

    /// Sizes the viewport (`innerWidth` × `innerHeight`, what the page's CSS sees) to exactly
    /// `width` × `height`: use [`DESKTOP`] or [`PHONE`]. Headless Chromium still counts browser
    /// chrome in the window's size (a 1280×900 window has a 1280×757 viewport), so the window
    /// is made larger by the difference.
    pub fn set_size(&self, (width, height): (u32, u32)) -> Result<()> {
        let (mut outer_w, mut outer_h) = (width, height);
        for _ in 0..3 {
            self.block_on(self.client().set_window_size(outer_w, outer_h))
                .with_context(|| format!("resizing the window to {outer_w}×{outer_h}"))?;
            let (inner_w, inner_h) = self.viewport()?;
            if (inner_w, inner_h) == (width, height) {
                return Ok(());
            }
            outer_w = (outer_w + width).saturating_sub(inner_w);
            outer_h = (outer_h + height).saturating_sub(inner_h);
        }
        bail!(
            "could not size the viewport to {width}×{height}: it is {:?} in a {outer_w}×{outer_h} \
             window",
            self.viewport()?
        )
    }

    /// The viewport's size now (`innerWidth` × `innerHeight`).
    pub fn viewport(&self) -> Result<(u32, u32)> {
        let size = self.eval("return [window.innerWidth, window.innerHeight];")?;
        let dimension = |i: usize| {
            size[i]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .with_context(|| format!("the viewport's size is not two numbers: {size}"))
        };
        Ok((dimension(0)?, dimension(1)?))
    }

    /// Waits up to [`WAIT`] for an element matching the CSS `selector` to be present and
    /// displayed, and returns the first one.
    pub fn wait_for(&self, selector: &str) -> Result<Element> {
        self.wait_for_within(selector, WAIT)
    }

    /// [`Browser::wait_for`] with another timeout. On timeout the error names the selector, the
    /// page's URL and the page's visible text, and lists the console's errors (taking them: a
    /// later [`Browser::console_errors`] does not report them again).
    pub fn wait_for_within(&self, selector: &str, timeout: Duration) -> Result<Element> {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self.block_on(async {
                match self.client().find(Locator::Css(selector)).await {
                    Ok(element) => match element.is_displayed().await {
                        Ok(true) => Ok(Some(element)),
                        Ok(false) => Ok(None),
                        // Replaced between the two calls: look again.
                        Err(e) if e.is_stale_element_reference() => Ok(None),
                        Err(e) => Err(e),
                    },
                    Err(e) if e.is_no_such_element() => Ok(None),
                    Err(e) => Err(e),
                }
            });
            match found.with_context(|| format!("looking for `{selector}`"))? {
                Some(element) => return Ok(element),
                None if Instant::now() >= deadline => {
                    bail!(
                    "`{selector}` did not appear within {timeout:?} on {}; the page reads:\n{}{}",
                    self.current_url()
                        .unwrap_or_else(|e| format!("(unknown URL: {e})")),
                    self.visible_text()
                        .unwrap_or_else(|e| format!("(unreadable: {e})")),
                    match self.console_errors() {
                        Ok(errors) if !errors.is_empty() => format!(
                            "\nand the console has errors:\n{}",
                            errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
                        ),
                        _ => String::new(),
                    },
                )
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Whether an element matching `selector` is present now (displayed or not), without waiting.
    pub fn exists(&self, selector: &str) -> Result<bool> {
        match self.block_on(self.client().find(Locator::Css(selector))) {
            Ok(_) => Ok(true),
            Err(e) if e.is_no_such_element() => Ok(false),
            Err(e) => Err(e).with_context(|| format!("looking for `{selector}`")),
        }
    }

    /// The rendered text of the first element matching `selector` (as a user sees it: CSS
    /// applied, hidden parts left out), once it appears.
    pub fn text(&self, selector: &str) -> Result<String> {
        let element = self.wait_for(selector)?;
        self.block_on(element.text())
            .with_context(|| format!("reading the text of `{selector}`"))
    }

    /// The whole page's visible text (`document.body.innerText`), at most 4000 characters.
    pub fn visible_text(&self) -> Result<String> {
        let text = self.eval("return document.body ? document.body.innerText : '';")?;
        let text = text.as_str().unwrap_or_default();
        Ok(match text.char_indices().nth(4000) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_string(),
        })
    }

    /// Clicks the first element matching `selector`, once it appears.
    pub fn click(&self, selector: &str) -> Result<()> {
        let element = self.wait_for(selector)?;
        self.block_on(element.click())
            .with_context(|| format!("clicking `{selector}`"))
    }

    /// Types `text` into the input matching `selector` (after what it already holds), once it
    /// appears. Special keys are in [`fantoccini::key::Key`] (`Key::Enter.into()`).
    pub fn type_into(&self, selector: &str, text: &str) -> Result<()> {
        let element = self.wait_for(selector)?;
        self.block_on(element.send_keys(text))
            .with_context(|| format!("typing into `{selector}`"))
    }

    /// Empties the input matching `selector`, once it appears.
    pub fn clear(&self, selector: &str) -> Result<()> {
        let element = self.wait_for(selector)?;
        self.block_on(element.clear())
            .with_context(|| format!("clearing `{selector}`"))
    }

    /// The current value of the input matching `selector`, once it appears.
    pub fn value(&self, selector: &str) -> Result<String> {
        let element = self.wait_for(selector)?;
        let value = self.block_on(element.prop("value"))?;
        Ok(value.unwrap_or_default())
    }

    /// Runs `script` as a function body in the page (`return` gives the result).
    pub fn eval(&self, script: &str) -> Result<Value> {
        self.block_on(self.client().execute(script, vec![]))
            .context("running a script in the page")
    }

    /// Saves a PNG of the viewport as `<target dir>/inspector/<name>.png` and returns its path.
    /// The target dir is the parent of `CARGO_TARGET_TMPDIR` (`target/tmp`, which Cargo sets
    /// for integration tests), so `CARGO_TARGET_DIR` is honoured; normally `target/inspector/`.
    pub fn screenshot(&self, name: &str) -> Result<PathBuf> {
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            bail!("screenshot name {name:?}: use a plain file name without extension");
        }
        let png = self
            .block_on(self.client().screenshot())
            .with_context(|| format!("taking screenshot {name}"))?;
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// The `SEVERE` browser console entries (console.error, uncaught exceptions, failed loads)
    /// logged since the previous call — chromedriver hands each entry out once. Chromium's own
    /// request for `/favicon.ico` is left out when it fails: no page asked for it.
    pub fn console_errors(&self) -> Result<Vec<ConsoleEntry>> {
        Ok(self
            .console_log()?
            .into_iter()
            .filter(|e| e.level == "SEVERE" && !is_favicon_miss(e))
            .collect())
    }

    /// Every browser console entry (all levels) logged since the previous call to this or
    /// [`Browser::console_errors`].
    pub fn console_log(&self) -> Result<Vec<ConsoleEntry>> {
        let log = self
            .block_on(self.client().issue_cmd(BrowserLog))
            .context("reading the browser's console log from chromedriver")?;
        let entries = log
            .as_array()
            .with_context(|| format!("the browser log is not a list: {log}"))?;
        Ok(entries
            .iter()
            .map(|e| {
                let field = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                ConsoleEntry {
                    level: field("level"),
                    source: field("source"),
                    message: field("message"),
                }
            })
            .collect())
    }

    /// Fails, listing them, when the console has errors since the previous check.
    pub fn assert_no_console_errors(&self) -> Result<()> {
        let errors = self.console_errors()?;
        if !errors.is_empty() {
            let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
            bail!("the browser console has errors:\n{}", list.join("\n"));
        }
        Ok(())
    }

    /// The profile directory Chromium runs with (removed on drop).
    pub fn profile_dir(&self) -> &Path {
        self.profile.path()
    }

    /// The port this browser's chromedriver listens on.
    pub fn driver_port(&self) -> u16 {
        self.driver.port
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Quitting the session closes Chromium with its helpers (crash handler included); kill
        // chromedriver's process group afterwards only as the fallback.
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(5), client.close()).await
            });
        }
    }
}

/// `<target dir>/inspector`, where screenshots go.
pub fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("inspector")
}

fn is_favicon_miss(entry: &ConsoleEntry) -> bool {
    entry.source == "network"
        && entry
            .message
            .split_whitespace()
            .next()
            .and_then(|url| Url::parse(url).ok())
            .is_some_and(|url| url.path() == "/favicon.ico")
}

/// chromedriver's `POST /session/{id}/se/log {"type": "browser"}`: the browser console entries
/// buffered since the last read (`goog:loggingPrefs` must enable them). Not a W3C command, so
/// fantoccini has no method for it.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &Url,
        session: Option<&str>,
    ) -> Result<Url, <Url as std::str::FromStr>::Err> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &Url) -> (axum::http::Method, Option<String>) {
        (
            axum::http::Method::POST,
            Some(json!({ "type": "browser" }).to_string()),
        )
    }
}

/// A chromedriver child process on a free loopback port, killed (with what it started) on drop.
struct Driver {
    child: Child,
    port: u16,
    url: String,
    log: PathBuf,
}

impl Driver {
    fn start(dir: &Path) -> Result<Driver> {
        // The port is free when probed, but another process may take it before chromedriver
        // binds it: then chromedriver exits, and a new port is tried.
        let mut last_error = None;
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let log = dir.join(format!("chromedriver-{port}.log"));
            let mut command = Command::new(CHROMEDRIVER);
            command
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // Its own process group, so that drop can kill Chromium with it.
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
            let child = command
                .spawn()
                .with_context(|| format!("starting {CHROMEDRIVER}"))?;
            let mut driver = Driver {
                child,
                port,
                url: format!("http://127.0.0.1:{port}"),
                log,
            };
            match driver.wait_ready(Duration::from_secs(10)) {
                Ok(()) => return Ok(driver),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("chromedriver did not start")))
    }

    /// Polls `/status` until chromedriver says it is ready.
    fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "chromedriver exited ({status}); its log:\n{}",
                    self.log_tail()
                );
            }
            let ready = client
                .get(format!("{}/status", self.url))
                .send()
                .and_then(|r| r.json::<Value>())
                .is_ok_and(|v| v["value"]["ready"] == json!(true));
            if ready {
                // Not another chromedriver that took the port first while ours gave up on it.
                std::thread::sleep(Duration::from_millis(25));
                if let Some(status) = self.child.try_wait()? {
                    bail!(
                        "chromedriver exited ({status}); its log:\n{}",
                        self.log_tail()
                    );
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "chromedriver did not answer on port {} within {timeout:?}; its log:\n{}",
                    self.port,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and any Chromium still running (a closed session has
        // already ended Chromium). While chromedriver is unreaped its pid cannot name another
        // group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
