//! `GET /metrics`: what the server did since it started, in Prometheus' text format —
//! requests and their latencies by route and status, turns added, derived jobs and the
//! memories they changed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use parking_lot::Mutex;

use mnemos_engine::JobReport;

use crate::timing::Arrived;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];
/// Upper bounds (seconds) of the server-overhead histogram's buckets: the HTTP layer's own
/// cost is tens to hundreds of microseconds, unless requests queue.
const OVERHEAD_BUCKETS: [f64; BUCKETS.len()] = [
    0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0, 5.0,
];

/// A histogram over [`BUCKETS`] or [`OVERHEAD_BUCKETS`] (as many bounds each).
#[derive(Default)]
struct Latency {
    /// Requests at or under each bucket's bound (not cumulative; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_seconds: f64,
}

impl Latency {
    fn record(&mut self, bounds: &[f64], seconds: f64) {
        self.count += 1;
        self.sum_seconds += seconds;
        if let Some(i) = bounds.iter().position(|bound| seconds <= *bound) {
            self.buckets[i] += 1;
        }
    }
}

#[derive(Default)]
struct Counters {
    /// By (method, route, status).
    requests: BTreeMap<(String, String, u16), u64>,
    /// By (method, route).
    latency: BTreeMap<(String, String), Latency>,
    /// The HTTP layer's own time (the request's minus the engine's; see `timing`), by
    /// (method, route).
    overhead: BTreeMap<(String, String), Latency>,
    turns_added: u64,
    turns_duplicate: u64,
    jobs_ran: u64,
    jobs_failed: u64,
    memories_created: u64,
    memories_updated: u64,
    memories_forgotten: u64,
}

/// The server's counters, shared by the middleware, the handlers and the job worker.
#[derive(Default)]
pub struct Metrics(Mutex<Counters>);

impl Metrics {
    fn record_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut c = self.0.lock();
        *c.requests
            .entry((method.to_string(), route.to_string(), status))
            .or_default() += 1;
        c.latency
            .entry((method.to_string(), route.to_string()))
            .or_default()
            .record(&BUCKETS, seconds);
    }

    fn record_overhead(&self, method: &str, route: &str, seconds: f64) {
        self.0
            .lock()
            .overhead
            .entry((method.to_string(), route.to_string()))
            .or_default()
            .record(&OVERHEAD_BUCKETS, seconds);
    }

    pub(crate) fn record_turns(&self, added: u64, duplicate: u64) {
        let mut c = self.0.lock();
        c.turns_added += added;
        c.turns_duplicate += duplicate;
    }

    pub(crate) fn record_jobs(&self, report: &JobReport) {
        let mut c = self.0.lock();
        c.jobs_ran += report.ran as u64;
        c.jobs_failed += report.failed as u64;
        c.memories_created += report.memories_created as u64;
        c.memories_updated += report.memories_updated as u64;
        c.memories_forgotten += report.memories_forgotten as u64;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let c = self.0.lock();
        let mut out = String::new();
        header(
            &mut out,
            "mnemos_http_requests_total",
            "counter",
            "Requests answered.",
        );
        for ((method, route, status), n) in &c.requests {
            let _ = writeln!(
                out,
                "mnemos_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        render_latency(
            &mut out,
            "mnemos_http_request_duration_seconds",
            "Time from request to response.",
            (&BUCKETS, &c.latency),
        );
        render_latency(
            &mut out,
            "mnemos_http_server_overhead_seconds",
            "Time from request to response outside the engine's work: routing, authentication, JSON, wire types, the hop to the engine's work.",
            (&OVERHEAD_BUCKETS, &c.overhead),
        );
        let totals = [
            ("mnemos_turns_added_total", "Turns stored.", c.turns_added),
            (
                "mnemos_turns_duplicate_total",
                "Turns not stored again because their key was stored.",
                c.turns_duplicate,
            ),
            (
                "mnemos_jobs_ran_total",
                "Derived jobs that ran.",
                c.jobs_ran,
            ),
            (
                "mnemos_jobs_failed_total",
                "Derived job attempts that failed.",
                c.jobs_failed,
            ),
            (
                "mnemos_memories_created_total",
                "Memories created by derived jobs.",
                c.memories_created,
            ),
            (
                "mnemos_memories_updated_total",
                "Memories updated by derived jobs.",
                c.memories_updated,
            ),
            (
                "mnemos_memories_forgotten_total",
                "Memories forgotten by derived jobs.",
                c.memories_forgotten,
            ),
        ];
        for (name, help, value) in totals {
            header(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render_latency(
    out: &mut String,
    name: &str,
    help: &str,
    (bounds, latency): (&[f64], &BTreeMap<(String, String), Latency>),
) {
    header(out, name, "histogram", help);
    for ((method, route), l) in latency {
        let labels = format!("method=\"{method}\",route=\"{route}\"");
        let mut cumulative = 0;
        for (bound, n) in bounds.iter().zip(l.buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", l.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", l.sum_seconds);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", l.count);
    }
}

/// Counts every request by its route pattern (not its path, so user names and ids never become
/// label values), method and status.
pub(crate) async fn track(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let arrived = request
        .extensions()
        .get::<Arrived>()
        .map_or(started, |a| a.0);
    let response = next.run(request).await;
    let seconds = started.elapsed().as_secs_f64();
    metrics.record_request(&method, &route, response.status().as_u16(), seconds);
    let overhead = arrived
        .elapsed()
        .saturating_sub(crate::timing::spent().engine);
    metrics.record_overhead(&method, &route, overhead.as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let metrics = Metrics::default();
        // Any route pattern (a served one is named only in its handler; see `routes::table`).
        metrics.record_request("GET", "/v1/some/route", 200, 0.0007);
        metrics.record_request("GET", "/v1/some/route", 200, 0.003);
        metrics.record_turns(2, 1);
        let text = metrics.render();
        assert!(text.contains(
            "mnemos_http_requests_total{method=\"GET\",route=\"/v1/some/route\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "mnemos_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/some/route\",le=\"0.001\"} 1"
        ));
        assert!(text.contains(
            "mnemos_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/some/route\",le=\"0.005\"} 2"
        ));
        assert!(text.contains("mnemos_turns_added_total 2"));
        assert!(text.contains("mnemos_turns_duplicate_total 1"));
    }
}
