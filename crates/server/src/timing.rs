//! Where a request's time goes on the server: the whole request (from the outermost layer,
//! after hyper has read its headers, to the response built and serialized) and the share spent
//! in its blocking work (the engine call and its argument checks, run off the async side by
//! `params::blocking`). What is left is the HTTP layer's own cost: routing, the guards,
//! authentication, the body's JSON, wire types, serialization, metrics and the hop to the
//! blocking work and back.
//!
//! Measuring it here, not from a client, keeps the client's own cost (and the loopback's) out
//! of the figure. The split feeds the `mnemos_http_server_overhead_seconds` histogram and a
//! `Server-Timing` header on every answer (the standard header browsers' developer tools show):
//!
//! `Server-Timing: total;dur=1.412, blocking;dur=1.307, engine;dur=1.296`
//!
//! in milliseconds: `blocking` is the wall time the request spent on its blocking work
//! (`engine` plus the hop there and back), `engine` the time that work ran.

use std::cell::Cell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The header's name (`http` has no constant for it).
pub const SERVER_TIMING: &str = "server-timing";

/// The request's clock, put in its extensions by [`measure`]: layers inside it (metrics) read
/// the same start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrived(pub Instant);

/// What the request spent in blocking work so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    /// Wall time of the blocking work (the hop there, the work, the hop back).
    pub blocking: Duration,
    /// Time the work itself ran.
    pub engine: Duration,
}

tokio::task_local! {
    /// The current request's [`Spent`]; every layer and the handler run in the request's task,
    /// so the handler's hops add to it and the layers read it, without locks.
    static SPENT: Cell<Spent>;
}

/// Add one blocking hop (its wall time, and the time its work ran) to the current request's
/// account; outside a measured request (tests of a bare router, MCP over stdio) nothing.
pub(crate) fn add(blocking: Duration, engine: Duration) {
    let _ = SPENT.try_with(|spent| {
        let mut now = spent.get();
        now.blocking += blocking;
        now.engine += engine;
        spent.set(now);
    });
}

/// Run `work` as a measured request: with an account of its own, starting at zero.
pub(crate) async fn scope<T>(work: impl std::future::Future<Output = T>) -> T {
    SPENT.scope(Cell::new(Spent::default()), work).await
}

/// The current request's account so far (zero outside a measured request).
pub(crate) fn spent() -> Spent {
    SPENT.try_with(Cell::get).unwrap_or_default()
}

/// The outermost layer: starts the request's clock and account, and tells the client the split
/// in a `Server-Timing` header.
pub(crate) async fn measure(mut request: Request, next: Next) -> Response {
    let arrived = Instant::now();
    request.extensions_mut().insert(Arrived(arrived));
    let (mut response, spent) = scope(async {
        let response = next.run(request).await;
        (response, spent())
    })
    .await;
    let value = header_value(arrived.elapsed(), spent);
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(SERVER_TIMING, value);
    }
    response
}

/// `total;dur=…, blocking;dur=…, engine;dur=…` in milliseconds with microsecond precision.
pub(crate) fn header_value(total: Duration, spent: Spent) -> String {
    let mut out = String::with_capacity(64);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let _ = write!(
        out,
        "total;dur={:.3}, blocking;dur={:.3}, engine;dur={:.3}",
        ms(total),
        ms(spent.blocking),
        ms(spent.engine)
    );
    out
}

/// The split a `Server-Timing` header carries, read back (by `bench serve`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerTiming {
    pub total_ms: f64,
    pub blocking_ms: f64,
    pub engine_ms: f64,
}

impl ServerTiming {
    /// The header's metrics this module writes; `None` when `total` is missing.
    pub fn parse(header: &str) -> Option<ServerTiming> {
        let mut timing = ServerTiming::default();
        let mut total = false;
        for metric in header.split(',') {
            let mut parts = metric.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let Some(ms) = parts
                .find_map(|p| p.strip_prefix("dur="))
                .and_then(|v| v.parse::<f64>().ok())
            else {
                continue;
            };
            match name {
                "total" => {
                    timing.total_ms = ms;
                    total = true;
                }
                "blocking" => timing.blocking_ms = ms,
                "engine" => timing.engine_ms = ms,
                _ => {}
            }
        }
        total.then_some(timing)
    }

    /// What the HTTP layer added: everything but the engine's work.
    pub fn overhead_ms(&self) -> f64 {
        (self.total_ms - self.engine_ms).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_reads_back() {
        let spent = Spent {
            blocking: Duration::from_micros(1307),
            engine: Duration::from_micros(1296),
        };
        let text = header_value(Duration::from_micros(1412), spent);
        assert_eq!(
            text,
            "total;dur=1.412, blocking;dur=1.307, engine;dur=1.296"
        );
        let timing = ServerTiming::parse(&text).unwrap_or_default();
        assert_eq!(timing.total_ms, 1.412);
        assert_eq!(timing.engine_ms, 1.296);
        assert!((timing.overhead_ms() - 0.116).abs() < 1e-9);
        assert_eq!(ServerTiming::parse("engine;dur=1"), None);
    }

    #[tokio::test]
    async fn hops_add_up_inside_a_request_and_nothing_outside() {
        add(Duration::from_millis(1), Duration::from_millis(1));
        assert_eq!(spent(), Spent::default());
        let inside = scope(async {
            add(Duration::from_millis(3), Duration::from_millis(2));
            add(Duration::from_millis(1), Duration::from_millis(1));
            spent()
        })
        .await;
        assert_eq!(inside.blocking, Duration::from_millis(4));
        assert_eq!(inside.engine, Duration::from_millis(3));
    }
}
