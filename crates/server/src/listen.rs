//! Accepting connections and serving HTTP/1.1 on them, with a time limit on reading each
//! request's headers: a connection that opens and sends nothing (or too little) is closed
//! after [`ServerConfig::header_timeout`](crate::ServerConfig), so half-open connections
//! cannot pile up. (axum's `serve` sets no such limit and offers no way to.) On shutdown the
//! listener closes first, then requests in flight finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// How long to wait before accepting again after an error that is not one connection's
/// (e.g. out of file descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);

/// Serve `app` on `listener` until `shutdown` completes, then wait for the connections in
/// flight (each finishes its current request and closes).
pub(crate) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    if !is_connection_error(&error) {
                        eprintln!("accepting a connection failed: {error}");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small JSON answers go out at once instead of waiting for Nagle's timer.
        let _ = stream.set_nodelay(true);
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or times out is not the server's error.
            let _ = connection.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Errors of one connection (reset before it was accepted…), after which accepting goes on.
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}
