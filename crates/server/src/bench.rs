//! `mnemos bench serve`: the server under load on loopback. Preloads synthetic users, starts
//! the real HTTP server on a free port, runs concurrent clients (a mix of searches and adds)
//! for a fixed time, then reports throughput, latency percentiles, errors, and checks that
//! every acknowledged add is stored. It also measures what HTTP adds to a search: the same
//! queries one at a time through the server and through `Engine::search` in process, and the
//! server's own split of every request's time (its `Server-Timing` header), which leaves the
//! client out. The clients are bare keep-alive connections ([`raw`]) on a thread of their own.

mod raw;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use mnemos_core::{MemoryFilter, Page, Scope, TurnId, UserKey};
use mnemos_engine::{Engine, NewTurn, SearchRequest};

use crate::timing::ServerTiming;
use crate::{ServerConfig, ServerError};
use raw::{Answer, RawClient};

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
    /// Adds the server acknowledged; how many of them the store holds as sent (the turn each
    /// answer named, with the text and idempotency key the client sent); how many it lacks.
    pub adds_acknowledged: usize,
    pub adds_stored: usize,
    pub adds_missing: usize,
    /// The server's own split of the searches and adds under load (`Server-Timing`).
    pub server_search: ServerSplit,
    pub server_add: ServerSplit,
    /// One search at a time: through HTTP (a bare keep-alive client), and `Engine::search` in
    /// process (p50, ms); their difference includes the loopback and the client.
    pub http_search_p50_ms: f64,
    pub engine_search_p50_ms: f64,
    pub http_overhead_ms: f64,
    /// One search at a time, the server's own split: its overhead excludes the client.
    pub sequential_server: ServerSplit,
}

/// The server's own account of requests (its `Server-Timing` header; see [`crate::timing`]),
/// in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerSplit {
    pub count: usize,
    /// From the request's arrival to its answer built.
    pub total_p50_ms: f64,
    /// In the engine's work (off the async side).
    pub engine_p50_ms: f64,
    /// The hop to that work and back, beyond the work itself.
    pub hop_p50_ms: f64,
    /// Everything but the engine's work: the HTTP layer's own cost.
    pub overhead_p50_ms: f64,
    pub overhead_p99_ms: f64,
}

impl ServerSplit {
    fn of(timings: &[ServerTiming]) -> ServerSplit {
        let micros = |f: &dyn Fn(&ServerTiming) -> f64| -> Latency {
            Latency::of(
                timings
                    .iter()
                    .map(|t| (f(t) * 1000.0).round().max(0.0) as u64)
                    .collect(),
            )
        };
        let overhead = micros(&ServerTiming::overhead_ms);
        ServerSplit {
            count: timings.len(),
            total_p50_ms: micros(&|t| t.total_ms).p50_ms,
            engine_p50_ms: micros(&|t| t.engine_ms).p50_ms,
            hop_p50_ms: micros(&|t| t.blocking_ms - t.engine_ms).p50_ms,
            overhead_p50_ms: overhead.p50_ms,
            overhead_p99_ms: overhead.p99_ms,
        }
    }
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

/// An add the server acknowledged: whose, the turn it reported, and what was sent.
struct Acknowledged {
    user: usize,
    turn_id: String,
    key: String,
    text: String,
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    search: Vec<u64>,
    add: Vec<u64>,
    /// The server's own split of each answered search and add (see `timing`).
    search_server: Vec<ServerTiming>,
    add_server: Vec<ServerTiming>,
    errors: usize,
    first_error: Option<String>,
    acknowledged: Vec<Acknowledged>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.search.extend(other.search);
        self.add.extend(other.add);
        self.search_server.extend(other.search_server);
        self.add_server.extend(other.add_server);
        self.errors += other.errors;
        self.first_error = self.first_error.take().or(other.first_error);
        self.acknowledged.extend(other.acknowledged);
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        self.first_error.get_or_insert(what);
    }
}

/// What an add answers, as far as the bench reads it.
#[derive(serde::Deserialize)]
struct AddAnswer {
    turns: Vec<AddedTurn>,
}

#[derive(serde::Deserialize)]
struct AddedTurn {
    turn_id: String,
}

/// The longest a request may take before the client counts it as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One request of the mix: the path, its headers and its body, and the add's key and text.
struct Planned {
    user: usize,
    path: String,
    key: Option<String>,
    text: String,
    body: Vec<u8>,
}

fn plan(
    rng: &mut Lcg,
    settings: &BenchSettings,
    client: u64,
    run: u128,
    serial: &mut usize,
) -> Planned {
    let user = rng.below(settings.users);
    let searching = (rng.below(10_000) as f64) < settings.search_share * 10_000.0;
    let base = format!("/v1/users/{}/", user_name(user));
    if searching {
        let query = format!(
            "{} {}",
            WORDS[rng.below(WORDS.len())],
            WORDS[rng.below(WORDS.len())]
        );
        let body = serde_json::json!({"query": query, "top_k": 10});
        return Planned {
            user,
            path: format!("{base}search"),
            key: None,
            text: query,
            body: body.to_string().into_bytes(),
        };
    }
    *serial += 1;
    let text = rng.sentence(*serial);
    let body = serde_json::json!({"turns": [{"role": "user", "text": text}], "session": "load"});
    Planned {
        user,
        path: format!("{base}turns"),
        key: Some(format!("bench-{run}-c{client}-{serial}")),
        text,
        body: body.to_string().into_bytes(),
    }
}

/// One client: requests back to back on one keep-alive connection until `stop`.
async fn client_loop(
    addr: SocketAddr,
    settings: Arc<BenchSettings>,
    seed: u64,
    run: u128,
    stop: Arc<AtomicBool>,
) -> Tally {
    let mut rng = Lcg(seed);
    let mut client = RawClient::new(addr);
    let mut tally = Tally::default();
    let mut serial = 0;
    while !stop.load(Ordering::Relaxed) {
        let planned = plan(&mut rng, &settings, seed, run, &mut serial);
        let headers: Vec<(&str, &str)> = planned
            .key
            .as_deref()
            .map(|key| ("Idempotency-Key", key))
            .into_iter()
            .collect();
        let started = Instant::now();
        let answer = tokio::time::timeout(
            REQUEST_TIMEOUT,
            client.post(&planned.path, &headers, &planned.body),
        )
        .await;
        let micros = started.elapsed().as_micros() as u64;
        match answer {
            Ok(Ok(answer)) if (200..300).contains(&answer.status) => {
                tally.answered(planned, answer, micros);
            }
            Ok(Ok(answer)) => tally.error(format!(
                "{}: {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            )),
            Ok(Err(error)) => tally.error(format!("{}: {error}", planned.path)),
            Err(_) => {
                // The connection may still carry the late answer: start a new one.
                client = RawClient::new(addr);
                tally.error(format!(
                    "{}: no answer within {REQUEST_TIMEOUT:?}",
                    planned.path
                ));
            }
        }
    }
    tally
}

impl Tally {
    fn answered(&mut self, planned: Planned, answer: Answer, micros: u64) {
        let Some(key) = planned.key else {
            self.search.push(micros);
            self.search_server.extend(answer.timing);
            return;
        };
        let turn = serde_json::from_slice::<AddAnswer>(&answer.body)
            .ok()
            .and_then(|a| a.turns.into_iter().next());
        let Some(turn) = turn else {
            self.error(format!(
                "an add answered {}",
                String::from_utf8_lossy(&answer.body)
            ));
            return;
        };
        self.add.push(micros);
        self.add_server.extend(answer.timing);
        self.acknowledged.push(Acknowledged {
            user: planned.user,
            turn_id: turn.turn_id,
            key,
            text: planned.text,
        });
    }
}

/// Run the load against the servers at `addrs` (already serving the data); client `c` talks
/// to server `c mod n`.
async fn load(addrs: &[SocketAddr], settings: &Arc<BenchSettings>) -> Result<Tally, ServerError> {
    let stop = Arc::new(AtomicBool::new(false));
    // Keys unique to this run: a rerun on a kept database must add new turns, not find the last
    // run's.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let clients: Vec<_> = (0..settings.clients)
        .map(|c| {
            tokio::spawn(client_loop(
                addrs[c % addrs.len()],
                Arc::clone(settings),
                c as u64 + 1,
                run,
                Arc::clone(&stop),
            ))
        })
        .collect();
    tokio::time::sleep(settings.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut tally = Tally::default();
    for client in clients {
        tally.merge(client.await.map_err(bench_err)?);
    }
    Ok(tally)
}

/// Sequential searches through HTTP (the bare client) and in process, on the same queries: the
/// client's latencies, the server's own split, and the engine's in process (µs).
struct Sequential {
    through_http: Vec<u64>,
    server: Vec<ServerTiming>,
    in_process: Vec<u64>,
}

fn overhead(
    client_runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    addr: SocketAddr,
    settings: &BenchSettings,
) -> Result<Sequential, ServerError> {
    let mut client = RawClient::new(addr);
    let mut rng = Lcg(99);
    let mut seen = Sequential {
        through_http: Vec::new(),
        server: Vec::new(),
        in_process: Vec::new(),
    };
    for _ in 0..settings.overhead_queries {
        let user = user_name(rng.below(settings.users));
        let query = format!(
            "{} {}",
            WORDS[rng.below(WORDS.len())],
            WORDS[rng.below(WORDS.len())]
        );
        let body = serde_json::json!({"query": query, "top_k": 10}).to_string();
        let path = ["/v1/users/", user.as_str(), "/search"].concat();
        let started = Instant::now();
        let answer = client_runtime
            .block_on(client.post(&path, &[], body.as_bytes()))
            .map_err(bench_err)?;
        seen.through_http.push(started.elapsed().as_micros() as u64);
        if answer.status != 200 {
            return Err(bench_err(format!("a search answered {}", answer.status)));
        }
        seen.server.extend(answer.timing);
        let key = UserKey::new(settings.tenant.clone(), user).map_err(bench_err)?;
        let mut request = SearchRequest::new(key, query);
        request.top_k = Some(10);
        let started = Instant::now();
        engine.search(&request).map_err(bench_err)?;
        seen.in_process.push(started.elapsed().as_micros() as u64);
    }
    Ok(seen)
}

/// How many acknowledged adds the store holds as sent: the turn the server reported, with the
/// text and the idempotency key the client sent. (Counting a user's memories instead would
/// also count what the background jobs derived meanwhile.)
fn stored_adds(
    engine: &Engine,
    settings: &BenchSettings,
    acknowledged: &[Acknowledged],
) -> Result<usize, ServerError> {
    let mut stored = 0;
    for ack in acknowledged {
        let user = UserKey::new(settings.tenant.clone(), user_name(ack.user)).map_err(bench_err)?;
        let Ok(id) = ack.turn_id.parse::<TurnId>() else {
            continue;
        };
        let key = format!("idem:{}#0", ack.key);
        match engine.turn(&user, id) {
            Ok(turn) if turn.text == ack.text && turn.key.as_deref() == Some(key.as_str()) => {
                stored += 1;
            }
            Ok(_) => {}
            Err(error) if error.class() == mnemos_core::ErrorClass::NotFound => {}
            Err(error) => return Err(bench_err(error)),
        }
    }
    Ok(stored)
}

/// Preload, serve each engine on a free loopback port, load them, measure the overhead on the
/// first, and check what was stored. Several engines are several servers over one shared
/// store (each with its own caches and connections), each with the background worker of
/// `mnemos serve`. Engines should not run derived jobs inline.
///
/// The servers run on a multi-threaded runtime of their own, as under `mnemos serve`; the
/// clients on one thread of their own, so their work never runs on the servers' workers.
pub fn run(engines: Vec<Arc<Engine>>, settings: BenchSettings) -> Result<BenchReport, ServerError> {
    let Some(engine) = engines.first().cloned() else {
        return Err(bench_err("no server to load"));
    };
    let preload_seconds = preload(&engine, &settings)?;
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let settings = Arc::new(settings);
    let servers = engines
        .iter()
        .map(|e| server_runtime.block_on(start_server(Arc::clone(e), &settings.tenant)))
        .collect::<Result<Vec<_>, _>>()?;
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
    let started = Instant::now();
    let tally = client_runtime.block_on(load(&addrs, &settings))?;
    let seconds = started.elapsed().as_secs_f64();
    let sequential = overhead(&client_runtime, &engine, addrs[0], &settings)?;
    for server in servers {
        let _ = server.stop.send(());
        server_runtime.block_on(server.task).map_err(bench_err)??;
    }
    let adds_stored = stored_adds(&engine, &settings, &tally.acknowledged)?;
    Ok(report(
        engines.len(),
        &settings,
        (preload_seconds, seconds),
        tally,
        adds_stored,
        sequential,
    ))
}

/// A server of the bench: its address, its stop signal and its task.
struct BenchServer {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), ServerError>>,
}

/// Serve `engine` on a free loopback port.
async fn start_server(engine: Arc<Engine>, tenant: &str) -> Result<BenchServer, ServerError> {
    let config = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
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
    Ok(BenchServer { addr, stop, task })
}

fn report(
    servers: usize,
    settings: &BenchSettings,
    (preload_seconds, seconds): (f64, f64),
    tally: Tally,
    adds_stored: usize,
    sequential: Sequential,
) -> BenchReport {
    let requests = tally.search.len() + tally.add.len() + tally.errors;
    let mut all = tally.search.clone();
    all.extend(&tally.add);
    let http_p50 = Latency::of(sequential.through_http).p50_ms;
    let engine_p50 = Latency::of(sequential.in_process).p50_ms;
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
        adds_acknowledged: tally.acknowledged.len(),
        adds_stored,
        adds_missing: tally.acknowledged.len().saturating_sub(adds_stored),
        server_search: ServerSplit::of(&tally.search_server),
        server_add: ServerSplit::of(&tally.add_server),
        http_search_p50_ms: http_p50,
        engine_search_p50_ms: engine_p50,
        http_overhead_ms: http_p50 - engine_p50,
        sequential_server: ServerSplit::of(&sequential.server),
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
         adds acknowledged {}, stored {}{}\n\n\
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
        if report.adds_missing > 0 {
            format!(" — MISSING {}", report.adds_missing)
        } else {
            String::new()
        },
    );
    out.push_str(&row("all", &report.all));
    out.push_str(&row("search", &report.search));
    out.push_str(&row("add", &report.add));
    out.push_str(&format!(
        "\none search at a time, p50: HTTP {:.3} ms, in process {:.3} ms, overhead {:.3} ms \
         (client and loopback included)\n",
        report.http_search_p50_ms, report.engine_search_p50_ms, report.http_overhead_ms
    ));
    out.push_str(
        "\nserver's own split (Server-Timing), ms\n\
         requests             count  total p50 engine p50  hop p50  overhead p50  p99\n",
    );
    let split = |name: &str, s: &ServerSplit| {
        format!(
            "{name:<18} {:>7} {:>10.3} {:>10.3} {:>8.3} {:>13.3} {:>8.3}\n",
            s.count,
            s.total_p50_ms,
            s.engine_p50_ms,
            s.hop_p50_ms,
            s.overhead_p50_ms,
            s.overhead_p99_ms
        )
    };
    out.push_str(&split("one search", &report.sequential_server));
    out.push_str(&split("search under load", &report.server_search));
    out.push_str(&split("add under load", &report.server_add));
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
