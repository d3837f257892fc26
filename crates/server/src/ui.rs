//! The web inspector: static pages built into the binary and served under `/ui`. They hold no
//! data and need no key; every page reads and acts through the public `/v1` API with the key
//! the operator types in, which the browser keeps for its session only. Nothing is fetched
//! from anywhere else (the content security policy says so), so the inspector works offline.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// One file of the inspector.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "/ui/",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../ui/index.html"),
    },
    Asset {
        path: "/ui/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../ui/app.js"),
    },
    Asset {
        path: "/ui/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../ui/style.css"),
    },
    Asset {
        path: "/ui/favicon.svg",
        content_type: "image/svg+xml",
        body: include_str!("../ui/favicon.svg"),
    },
];

/// Same-origin scripts, styles, images and API calls only; no framing by other sites.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The inspector's routes: `/ui` redirects to `/ui/`, which serves the single page, and so does
/// `/` (a person opening the server's address finds the inspector). That one is temporary: `/`
/// may serve something else one day, and browsers keep permanent redirects.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let router = Router::new()
        .route("/", get(|| async { Redirect::temporary("/ui/") }))
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }));
    ASSETS.iter().fold(router, |router, asset| {
        router.route(asset.path, get(move || async move { serve(asset) }))
    })
}

fn serve(asset: &Asset) -> Response {
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        ),
        // The assets change with the binary; a browser asks again instead of running old code
        // against a new API.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    (StatusCode::OK, headers, asset.body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_the_page_links_is_served() {
        let index = ASSETS[0].body;
        for link in ["app.js", "style.css", "favicon.svg"] {
            assert!(index.contains(link), "index.html does not link {link}");
            assert!(
                ASSETS.iter().any(|a| a.path == format!("/ui/{link}")),
                "{link} is linked but not served"
            );
        }
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        // The SVG namespace is a name, not an address anything is loaded from.
        const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";
        for asset in ASSETS {
            let body = asset.body.replace(SVG_NAMESPACE, "");
            for address in ["http://", "https://", "//cdn", "@import", "url("] {
                assert!(
                    !body.contains(address),
                    "{} refers to {address}",
                    asset.path
                );
            }
        }
    }
}
