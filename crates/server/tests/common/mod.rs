//! The test server: an engine on a scratch SQLite file (hash embedder, offline model) served
//! on a loopback port, and a blocking HTTP client; and (`browser`) a headless Chromium.

// Each test file uses part of the harness.
#![allow(dead_code)]

/// Headless Chromium for the inspector's tests.
pub mod browser;

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::Value;

use mnemos_core::Store;
use mnemos_embed::HashEmbedder;
use mnemos_engine::{Engine, EngineConfig, JobSettings, PresetSpec};
use mnemos_offline::OfflineModel;
use mnemos_server::{ServerConfig, ServerError};
use mnemos_store_sqlite::{SqliteOptions, SqliteStore};

pub struct Server {
    base: String,
    pub client: Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
    pub dir: tempfile::TempDir,
}

/// An engine on `db` with the test's embedder and model, as another process would open it.
pub fn engine_on(db: &std::path::Path, preset: &str, inline: bool) -> Engine {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db, SqliteOptions::default()).unwrap());
    let embedder = Arc::new(HashEmbedder::default());
    let model = Arc::new(OfflineModel::new(embedder.clone()));
    let engine_config = EngineConfig {
        preset: PresetSpec::named(preset),
        jobs: JobSettings {
            inline,
            ..JobSettings::default()
        },
        ..EngineConfig::default()
    };
    Engine::builder(store, embedder, model)
        .presets(std::sync::Arc::new(mnemos_presets::Presets))
        .config(engine_config)
        .build()
        .unwrap()
}

impl Server {
    pub fn start(config: ServerConfig) -> Server {
        Self::start_with(config, "retrieval", true)
    }

    pub fn start_with(config: ServerConfig, preset: &str, inline: bool) -> Server {
        Self::start_keyed(config, preset, inline, &[]).0
    }

    /// A server whose database holds one API key per tenant in `tenants` (their secrets, in
    /// order): every request must then carry one.
    pub fn start_keyed(
        config: ServerConfig,
        preset: &str,
        inline: bool,
        tenants: &[&str],
    ) -> (Server, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine_on(&dir.path().join("m.db"), preset, inline);
        let secrets = tenants
            .iter()
            .map(|t| engine.create_api_key(t, "test").unwrap().secret)
            .collect();
        (Self::serve_engine(engine, dir, config), secrets)
    }

    /// Serve `engine` (whose database lives in `dir`) on a loopback port.
    pub fn serve_engine(engine: Engine, dir: tempfile::TempDir, config: ServerConfig) -> Server {
        let (bound_tx, bound_rx) = mpsc::channel::<SocketAddr>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(mnemos_server::serve(
                Arc::new(engine),
                "acme".into(),
                &config,
                move |addr| bound_tx.send(addr).unwrap(),
                async move {
                    let _ = stop_rx.await;
                },
            ))
        });
        let addr = match bound_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(addr) => addr,
            Err(_) => panic!("the server did not start: {:?}", thread.join().unwrap()),
        };
        Server {
            base: format!("http://{addr}"),
            // No pooled connections: a server may close a connection after answering a
            // request whose body it did not read (a rejected one), and a client that reuses it
            // in that instant fails its next request with IncompleteMessage, a race of the
            // test's client, not a fault of the server. Loopback connections cost nothing.
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
            stop: Some(stop_tx),
            thread: Some(thread),
            dir,
        }
    }

    pub fn default_config() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            body_limit: 64 * 1024,
            ..ServerConfig::default()
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn send(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.send_as(None, method, path, body)
    }

    /// A request carrying `key` as its bearer token (none: no Authorization header).
    pub fn send_as(
        &self,
        key: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, self.url(path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().unwrap();
        let status = response.status();
        let text = response.text().unwrap();
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"));
        (status, value)
    }

    pub fn raw(&self, path: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let response = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .unwrap();
        let status = response.status();
        (status, response.json().unwrap())
    }

    pub fn stop(mut self) -> Result<(), ServerError> {
        self.stop.take().unwrap().send(()).unwrap();
        self.thread.take().unwrap().join().unwrap()
    }
}
