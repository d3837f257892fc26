//! Which `Host` and `Origin` a request may carry: the defence against DNS rebinding and
//! cross-site requests from a browser on the user's machine.
//!
//! A web page the user visits can make their browser send requests to `127.0.0.1:8080`. With
//! DNS rebinding it can even read the answers: its own host name is made to resolve to
//! 127.0.0.1, so the browser treats the server as the page's origin, but the request still
//! carries the page's host name in `Host`. A keyless server on loopback would read and purge
//! memories for such a page. So:
//!
//! - on a loopback address, `Host` must name this machine (`localhost`, `*.localhost`, a
//!   loopback IP) or a name the operator allowed (`--allow-host`, for a reverse proxy);
//!   beyond loopback, only when names are configured;
//! - on every address, a request with an `Origin` (browsers send one on cross-site and on
//!   state-changing requests) must come from the server's own origin — the one in its `Host`,
//!   as for the inspector under `/ui` — or from an allowed origin (`--allow-origin`).
//!   `Origin: null` (sandboxed frames, local files) is refused.
//!
//! Clients that are not browsers send no `Origin` and the `Host` they connected to, so they
//! are unaffected. A refused request gets 403 before any other work.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::uri::{Authority, Scheme};
use axum::http::{header, HeaderMap, Uri};

use crate::error::{ApiError, ErrorCode};

/// What the guard lets in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostGuard {
    /// Check `Host` against loopback names (the server listens on loopback).
    loopback: bool,
    /// Host names allowed besides (lowercase, without port).
    hosts: Vec<String>,
    /// Origins allowed besides the server's own, as `(scheme, host, port)`.
    origins: Vec<Origin>,
}

/// A browser origin with its port made explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl HostGuard {
    /// The guard of a server on a loopback address or not, with the names and origins its
    /// operator allowed; an origin that is not `scheme://host[:port]` is an error.
    pub fn new(loopback: bool, hosts: &[String], origins: &[String]) -> Result<Self, String> {
        let hosts = hosts
            .iter()
            .map(|h| host_name(h).ok_or_else(|| format!("'{h}' is not a host name")))
            .collect::<Result<_, _>>()?;
        let origins = origins
            .iter()
            .map(|o| {
                parse_origin(o).ok_or_else(|| {
                    format!("'{o}' is not an origin (scheme://host[:port], e.g. https://app.example.com)")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(HostGuard {
            loopback,
            hosts,
            origins,
        })
    }

    /// Whether a request with these headers may go on, or why not.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers.get(header::HOST).map(|h| h.to_str().unwrap_or(""));
        if let Some(host) = host {
            self.check_host(host)?;
        }
        match headers.get(header::ORIGIN) {
            None => Ok(()),
            Some(origin) => self.check_origin(origin.to_str().unwrap_or(""), host),
        }
    }

    fn check_host(&self, host: &str) -> Result<(), ApiError> {
        if !self.loopback && self.hosts.is_empty() {
            return Ok(());
        }
        let name = host_name(host);
        let allowed = name.as_deref().is_some_and(|name| {
            (self.loopback && is_loopback_name(name)) || self.hosts.iter().any(|h| h == name)
        });
        if allowed {
            return Ok(());
        }
        Err(forbidden(format!(
            "the Host header '{host}' is not a name this server answers to ({}; allow more with --allow-host)",
            if self.loopback {
                "on loopback: localhost, 127.0.0.1 or [::1]"
            } else {
                "only the names given with --allow-host"
            }
        )))
    }

    fn check_origin(&self, origin: &str, host: Option<&str>) -> Result<(), ApiError> {
        if let Some(parsed) = parse_origin(origin) {
            let own = host.is_some_and(|host| same_authority(&parsed, host));
            if own || self.origins.contains(&parsed) {
                return Ok(());
            }
        }
        Err(forbidden(format!(
            "requests from the web page at origin '{origin}' are refused (only this server's own origin, or one allowed with --allow-origin)"
        )))
    }
}

fn forbidden(message: String) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

/// The host of a `Host` header value or a bare name: lowercase, without port or brackets.
fn host_name(value: &str) -> Option<String> {
    let authority: Authority = value.trim().parse().ok()?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_loopback_name(name: &str) -> bool {
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://host[:port]` with the scheme's default port made explicit; `null` and anything
/// with a path are not origins.
fn parse_origin(value: &str) -> Option<Origin> {
    let uri: Uri = value.trim().parse().ok()?;
    let scheme = uri.scheme()?;
    let authority = uri.authority()?;
    if uri.path() != "/" && !uri.path().is_empty() {
        return None;
    }
    let default_port = if *scheme == Scheme::HTTPS { 443 } else { 80 };
    Some(Origin {
        scheme: scheme.as_str().to_ascii_lowercase(),
        host: host_name(authority.as_str())?,
        port: authority.port_u16().unwrap_or(default_port),
    })
}

/// Is `origin` the origin of a page served by this server under the `Host` it was asked by?
/// `Host` carries no scheme, so either scheme passes: an `https` origin naming this host and
/// port is this server behind a TLS terminator.
fn same_authority(origin: &Origin, host: &str) -> bool {
    let Ok(authority) = host.trim().parse::<Authority>() else {
        return false;
    };
    let default_port = if origin.scheme == "https" { 443 } else { 80 };
    host_name(authority.as_str()).as_deref() == Some(origin.host.as_str())
        && authority.port_u16().unwrap_or(default_port) == origin.port
}

/// Middleware: refuse a request whose `Host` or `Origin` the guard does not allow (403).
pub(crate) async fn guard(
    State(guard): State<Arc<HostGuard>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match guard.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        headers
    }

    fn loopback() -> HostGuard {
        HostGuard::new(true, &[], &[]).unwrap()
    }

    #[test]
    fn a_loopback_server_answers_only_to_loopback_names() {
        let guard = loopback();
        for host in [
            "127.0.0.1:18400",
            "localhost",
            "LOCALHOST:80",
            "[::1]:8080",
            "app.localhost:3000",
            "127.0.0.2",
        ] {
            assert!(guard.check(&headers(Some(host), None)).is_ok(), "{host}");
        }
        for host in [
            "evil.example.com:18400",
            "127.0.0.1.evil.example.com",
            "localhost.evil.example.com",
            "10.0.0.1",
            "",
        ] {
            let refused = guard.check(&headers(Some(host), None));
            assert_eq!(
                refused.err().map(|e| e.code),
                Some(ErrorCode::Forbidden),
                "{host}"
            );
        }
        // A client that sends no Host is not a browser.
        assert!(guard.check(&headers(None, None)).is_ok());
    }

    #[test]
    fn allowed_names_extend_the_loopback_ones_and_restrict_a_public_server() {
        let proxied = HostGuard::new(true, &["Memory.Example.com".into()], &[]).unwrap();
        assert!(proxied
            .check(&headers(Some("memory.example.com"), None))
            .is_ok());
        assert!(proxied
            .check(&headers(Some("other.example.com"), None))
            .is_err());
        let public = HostGuard::new(false, &[], &[]).unwrap();
        assert!(public
            .check(&headers(Some("anything.example.com"), None))
            .is_ok());
        let named = HostGuard::new(false, &["memory.example.com".into()], &[]).unwrap();
        assert!(named
            .check(&headers(Some("other.example.com"), None))
            .is_err());
    }

    #[test]
    fn only_the_servers_own_origin_or_an_allowed_one_passes() {
        let guard = loopback();
        let host = Some("127.0.0.1:18400");
        assert!(guard
            .check(&headers(host, Some("http://127.0.0.1:18400")))
            .is_ok());
        for origin in [
            "http://evil.example.com",
            "http://127.0.0.1:3000",
            "http://localhost:18400",
            "null",
            "garbage",
        ] {
            assert!(
                guard.check(&headers(host, Some(origin))).is_err(),
                "{origin}"
            );
        }
        let allowed = HostGuard::new(true, &[], &["http://localhost:3000".into()]).unwrap();
        assert!(allowed
            .check(&headers(host, Some("http://localhost:3000")))
            .is_ok());
        assert!(allowed
            .check(&headers(host, Some("http://localhost:3001")))
            .is_err());
        let default_port = HostGuard::new(false, &[], &[]).unwrap();
        assert!(default_port
            .check(&headers(
                Some("memory.example.com"),
                Some("http://memory.example.com:80")
            ))
            .is_ok());
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(HostGuard::new(true, &["".into()], &[]).is_err());
        assert!(HostGuard::new(true, &[], &["example.com".into()]).is_err());
        assert!(HostGuard::new(true, &[], &["https://example.com/path".into()]).is_err());
    }
}
