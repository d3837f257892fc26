//! `mnemos bench serve`: the server under load on loopback. Preloads synthetic users, starts
//! the real HTTP server on a free port, runs concurrent clients (a mix of searches and adds)
//! for a fixed time, then reports throughput, latency percentiles, errors, and checks that
//! every acknowledged add is stored. It also measures what HTTP adds to a search: the same
//! queries one at a time through the server and through `Engine::search` in process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use mnemos_core::{MemoryFilter, Page, Scope, UserKey};
use mnemos_engine::{Engine, NewTurn, SearchRequest};

use crate::{ServerConfig, ServerError};

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchSettings {
    pub users: usize,
    /// Memories each user holds before the load starts.
    pub memories: usize,
    pub clients: usize,
    pub duration: Duration,
    /// Share of requests that search (the rest add one turn).
    pub search_share: f64,
    /// Sequential searches for the HTTP-overhead comparison.
    pub overhead_queries: usize,
    pub tenant: String,
}

/// Latency percentiles of one request kind, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    fn of(mut micros: Vec<u64>) -> Latency {
        micros.sort_unstable();
        let at = |q: f64| -> f64 {
            if micros.is_empty() {
                return 0.0;
            }
            let index = ((micros.len() - 1) as f64 * q).round() as usize;
            micros[index.min(micros.len() - 1)] as f64 / 1000.0
        };
        Latency {
            count: micros.len(),
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            max_ms: at(1.0),
        }
    }
}

/// The results.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Servers the clients spread over (one engine each, one shared store).
    pub servers: usize,
    pub users: usize,
    pub memories_per_user: usize,
    pub clients: usize,
    pub seconds: f64,
    pub preload_seconds: f64,
    pub requests: usize,
    pub requests_per_second: f64,
    pub all: Latency,
    pub search: Latency,
    pub add: Latency,
    /// Requests answered with an error status or not answered.
    pub errors: usize,
    pub first_error: Option<String>,
    /// Adds the server acknowledged, and how many of them the store holds afterwards.
    pub adds_acknowledged: usize,
    pub adds_stored: usize,
    /// One search at a time: through HTTP, and `Engine::search` in process (p50, ms).
    pub http_search_p50_ms: f64,
    pub engine_search_p50_ms: f64,
    pub http_overhead_ms: f64,
}

const WORDS: &[&str] = &[
    "garden", "violin", "sister", "Berlin", "peanuts", "rowing", "bakery", "cello", "tea",
    "hiking", "novel", "coffee", "piano", "beach", "museum", "soup", "train", "dog", "cat",
    "painting", "杭州", "咖啡", "妹妹", "工作", "猫", "火锅", "跑步", "电影", "音乐", "北京",
];

/// A small deterministic generator: the same settings load the same text.
#[derive(Clone)]
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }

    fn sentence(&mut self, serial: usize) -> String {
        let words: Vec<&str> = (0..6).map(|_| WORDS[self.below(WORDS.len())]).collect();
        format!("note {serial}: {}", words.join(" "))
    }
}

fn user_name(i: usize) -> String {
    format!("bench-{i:04}")
}

/// Give every user `settings.memories` turns (users that already hold them are skipped, so a
/// kept database is reused). Returns the seconds it took.
pub fn preload(engine: &Engine, settings: &BenchSettings) -> Result<f64, ServerError> {
    let started = Instant::now();
    let mut rng = Lcg(11);
    for i in 0..settings.users {
        let user = UserKey::new(settings.tenant.clone(), user_name(i)).map_err(bench_err)?;
        let have = stored(engine, &user)?;
        let scope =
            Scope::new(&settings.tenant, &user.user, "default", "bench").map_err(bench_err)?;
        let mut serial = have;
        while serial < settings.memories {
            let batch = (settings.memories - serial).min(1000);
            let turns = (serial..serial + batch)
                .map(|n| NewTurn::user(scope.clone(), rng.sentence(n)))
                .collect();
            engine.add(turns).map_err(bench_err)?;
            serial += batch;
        }
        engine.reader().warm(&user).map_err(bench_err)?;
    }
    // Start from a caught-up vector index, as after `mnemos ingest`; the servers' workers
    // index what the load adds.
    engine.index_backlog(&mut |_| {}).map_err(bench_err)?;
    Ok(started.elapsed().as_secs_f64())
}

fn bench_err(error: impl std::fmt::Display) -> ServerError {
    ServerError::Invalid(format!("bench: {error}"))
}

fn stored(engine: &Engine, user: &UserKey) -> Result<usize, ServerError> {
    if !engine.has_user(user).map_err(bench_err)? {
        return Ok(0);
    }
    let page = engine
        .list(user, &MemoryFilter::active(), Page::first(1))
        .map_err(bench_err)?;
    Ok(page.total)
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    search: Vec<u64>,
    add: Vec<u64>,
    errors: usize,
    first_error: Option<String>,
    acknowledged: Vec<usize>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.search.extend(other.search);
        self.add.extend(other.add);
        self.errors += other.errors;
        self.first_error = self.first_error.take().or(other.first_error);
        for (i, n) in other.acknowledged.into_iter().enumerate() {
            self.acknowledged[i] += n;
        }
    }
}

/// One client: requests back to back until `stop`.
async fn client_loop(
    http: reqwest::Client,
    base: String,
    settings: Arc<BenchSettings>,
    seed: u64,
    run: u128,
    stop: Arc<AtomicBool>,
) -> Tally {
    let mut rng = Lcg(seed);
    let mut tally = Tally {
        acknowledged: vec![0; settings.users],
        ..Tally::default()
    };
    let mut serial = 0;
    while !stop.load(Ordering::Relaxed) {
        let user = rng.below(settings.users);
        let searching = (rng.below(10_000) as f64) < settings.search_share * 10_000.0;
        let url = format!("{base}/v1/users/{}/", user_name(user));
        let request = if searching {
            let query = format!(
                "{} {}",
                WORDS[rng.below(WORDS.len())],
                WORDS[rng.below(WORDS.len())]
            );
            http.post(format!("{url}search"))
                .json(&serde_json::json!({"query": query, "top_k": 10}))
        } else {
            serial += 1;
            let text = rng.sentence(serial);
            http.post(format!("{url}turns"))
                .header("Idempotency-Key", format!("bench-{run}-c{seed}-{serial}"))
                .json(&serde_json::json!({"turns": [{"role": "user", "text": text}], "session": "load"}))
        };
        let started = Instant::now();
        let answer = request.send().await;
        let micros = started.elapsed().as_micros() as u64;
        match answer {
            Ok(response) if response.status().is_success() => {
                if searching {
                    tally.search.push(micros);
                } else {
                    tally.add.push(micros);
                    tally.acknowledged[user] += 1;
                }
            }
            Ok(response) => {
                tally.errors += 1;
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                tally.first_error.get_or_insert(format!("{status}: {body}"));
            }
            Err(error) => {
                tally.errors += 1;
                tally.first_error.get_or_insert(error.to_string());
            }
        }
    }
    tally
}

/// Run the load against the servers at `bases` (already serving the data); client `c` talks
/// to server `c mod n`.
async fn load(bases: &[String], settings: &Arc<BenchSettings>) -> Result<Tally, ServerError> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(settings.clients)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(bench_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    // Keys unique to this run: a rerun on a kept database must add new turns, not find the last
    // run's (which would count duplicates as stored adds).
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let clients: Vec<_> = (0..settings.clients)
        .map(|c| {
            tokio::spawn(client_loop(
                http.clone(),
                bases[c % bases.len()].clone(),
                Arc::clone(settings),
                c as u64 + 1,
                run,
                Arc::clone(&stop),
            ))
        })
        .collect();
    tokio::time::sleep(settings.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut tally = Tally {
        acknowledged: vec![0; settings.users],
        ..Tally::default()
    };
    for client in clients {
        tally.merge(client.await.map_err(bench_err)?);
    }
    Ok(tally)
}

/// p50 of sequential searches through HTTP and in process, on the same queries (ms).
async fn overhead(
    engine: &Arc<Engine>,
    base: &str,
    settings: &BenchSettings,
) -> Result<(f64, f64), ServerError> {
    let http = reqwest::Client::new();
    let mut rng = Lcg(99);
    let (mut through_http, mut in_process) = (Vec::new(), Vec::new());
    for _ in 0..settings.overhead_queries {
        let user = user_name(rng.below(settings.users));
        let query = format!(
            "{} {}",
            WORDS[rng.below(WORDS.len())],
            WORDS[rng.below(WORDS.len())]
        );
        let started = Instant::now();
        let response = http
            .post(format!("{base}/v1/users/{user}/search"))
            .json(&serde_json::json!({"query": query, "top_k": 10}))
            .send()
            .await
            .map_err(bench_err)?;
        response.bytes().await.map_err(bench_err)?;
        through_http.push(started.elapsed().as_micros() as u64);
        let key = UserKey::new(settings.tenant.clone(), user).map_err(bench_err)?;
        let mut request = SearchRequest::new(key, query);
        request.top_k = Some(10);
        let started = Instant::now();
        engine.search(&request).map_err(bench_err)?;
        in_process.push(started.elapsed().as_micros() as u64);
    }
    Ok((
        Latency::of(through_http).p50_ms,
        Latency::of(in_process).p50_ms,
    ))
}

/// Preload, serve each engine on a free loopback port, load them, measure the overhead on the
/// first, and count what was stored. Several engines are several servers over one shared
/// store (each with its own caches and connections), each with the background worker of
/// `mnemos serve`. Engines should not run derived jobs inline.
pub fn run(engines: Vec<Arc<Engine>>, settings: BenchSettings) -> Result<BenchReport, ServerError> {
    let Some(engine) = engines.first().cloned() else {
        return Err(bench_err("no server to load"));
    };
    let preload_seconds = preload(&engine, &settings)?;
    let before: Vec<usize> = (0..settings.users)
        .map(|i| {
            stored(
                &engine,
                &UserKey::new(settings.tenant.clone(), user_name(i)).map_err(bench_err)?,
            )
        })
        .collect::<Result<_, _>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let settings = Arc::new(settings);
    runtime.block_on(async {
        let mut servers = Vec::new();
        for server_engine in &engines {
            servers.push(start_server(Arc::clone(server_engine), &settings.tenant).await?);
        }
        let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
        let started = Instant::now();
        let tally = load(&bases, &settings).await?;
        let seconds = started.elapsed().as_secs_f64();
        let (http_p50, engine_p50) = overhead(&engine, &bases[0], &settings).await?;
        for server in servers {
            let _ = server.stop.send(());
            server.task.await.map_err(bench_err)??;
        }
        let mut adds_stored = 0;
        for (i, had) in before.iter().enumerate() {
            let user = UserKey::new(settings.tenant.clone(), user_name(i)).map_err(bench_err)?;
            adds_stored += stored(&engine, &user)?.saturating_sub(*had);
        }
        Ok(report(
            engines.len(),
            &settings,
            preload_seconds,
            seconds,
            tally,
            adds_stored,
            (http_p50, engine_p50),
        ))
    })
}

/// A server of the bench: its base URL, its stop signal and its task.
struct BenchServer {
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), ServerError>>,
}

/// Serve `engine` on a free loopback port.
async fn start_server(engine: Arc<Engine>, tenant: &str) -> Result<BenchServer, ServerError> {
    let config = ServerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        // The background work `mnemos serve` runs (jobs, the vector index's catch-up).
        jobs: Some(crate::JobWorker::default()),
        ..ServerConfig::default()
    };
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let tenant = tenant.to_string();
    let task = tokio::spawn(async move {
        crate::serve(
            engine,
            tenant,
            &config,
            |addr| {
                let _ = bound_tx.send(addr);
            },
            async {
                let _ = stop_rx.await;
            },
        )
        .await
    });
    let addr = bound_rx.await.map_err(bench_err)?;
    Ok(BenchServer {
        base: format!("http://{addr}"),
        stop,
        task,
    })
}

fn report(
    servers: usize,
    settings: &BenchSettings,
    preload_seconds: f64,
    seconds: f64,
    tally: Tally,
    adds_stored: usize,
    (http_p50, engine_p50): (f64, f64),
) -> BenchReport {
    let requests = tally.search.len() + tally.add.len() + tally.errors;
    let mut all = tally.search.clone();
    all.extend(&tally.add);
    BenchReport {
        servers,
        users: settings.users,
        memories_per_user: settings.memories,
        clients: settings.clients,
        seconds,
        preload_seconds,
        requests,
        requests_per_second: requests as f64 / seconds.max(1e-9),
        all: Latency::of(all),
        search: Latency::of(tally.search),
        add: Latency::of(tally.add),
        errors: tally.errors,
        first_error: tally.first_error,
        adds_acknowledged: tally.acknowledged.iter().sum(),
        adds_stored,
        http_search_p50_ms: http_p50,
        engine_search_p50_ms: engine_p50,
        http_overhead_ms: http_p50 - engine_p50,
    }
}

/// The report as a few lines of text.
pub fn render(report: &BenchReport) -> String {
    let row = |name: &str, l: &Latency| {
        format!(
            "{name:<7} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
            l.count, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
        )
    };
    let mut out = format!(
        "{} server(s), {} users × {} memories, {} clients, {:.1} s (preload {:.1} s)\n\
         {:.0} requests/s, {} errors{}\n\
         adds acknowledged {}, stored {}\n\n\
         kind       count   p50 ms    p95 ms    p99 ms    max ms\n",
        report.servers,
        report.users,
        report.memories_per_user,
        report.clients,
        report.seconds,
        report.preload_seconds,
        report.requests_per_second,
        report.errors,
        report
            .first_error
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
        report.adds_acknowledged,
        report.adds_stored,
    );
    out.push_str(&row("all", &report.all));
    out.push_str(&row("search", &report.search));
    out.push_str(&row("add", &report.add));
    out.push_str(&format!(
        "\none search at a time, p50: HTTP {:.3} ms, in process {:.3} ms, overhead {:.3} ms\n",
        report.http_search_p50_ms, report.engine_search_p50_ms, report.http_overhead_ms
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let latency = Latency::of((1..=100).map(|ms| ms * 1000).collect());
        assert_eq!(latency.count, 100);
        assert_eq!(latency.p50_ms, 51.0);
        assert_eq!(latency.p99_ms, 99.0);
        assert_eq!(latency.max_ms, 100.0);
        assert_eq!(Latency::of(Vec::new()).p99_ms, 0.0);
    }
}
