//! The inspector (`ui/app.js`) against the OpenAPI document: every `/v1` request the page makes
//! is a route the server documents (and so serves), with that method. The page builds its paths
//! from templates (`${userPath(user)}/memories/${enc(id)}`), which this test reads back into
//! path patterns; a route renamed or removed on the server, or mistyped in the page, fails here.

// Test code: a failed unwrap or assertion is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

/// `userPath(user)` in app.js.
const USER_PATH: &str = "/v1/users/{}";

fn app_js() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui/app.js");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A JS template literal's body (from after the opening backtick) as a path pattern: each
/// `${…}` becomes `{}`, but `${userPath(…)}` becomes [`USER_PATH`] and `${name}` the pattern of
/// a `const name = `…`` in `before`; the query is cut off. Returns the pattern and where the
/// literal ends.
fn template(text: &str, before: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut in_query = false;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => return (out, i + 1),
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                let start = i + 2;
                let mut depth = 1;
                i = start;
                while depth > 0 {
                    match bytes[i] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                if !in_query {
                    let expr = &text[start..i - 1];
                    if expr.starts_with("userPath(") {
                        out.push_str(USER_PATH);
                    } else if let Some(pattern) = constant(expr, before) {
                        out.push_str(&pattern);
                    } else {
                        out.push_str("{}");
                    }
                }
                continue;
            }
            b'?' => in_query = true,
            c if !in_query => out.push(c as char),
            _ => {}
        }
        i += 1;
    }
    panic!("unterminated template literal: {text:.80}");
}

/// The path pattern of an `api(...)` call's second argument, which starts `text`: a string, a
/// template, `userPath(…)`, or a `const` holding a template defined in `before`.
fn argument(text: &str, before: &str) -> String {
    if let Some(rest) = text.strip_prefix('\'') {
        return rest[..rest.find('\'').unwrap()].to_string();
    }
    if let Some(rest) = text.strip_prefix('`') {
        return template(rest, before).0;
    }
    if text.starts_with("userPath(") {
        return USER_PATH.to_string();
    }
    let name: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    constant(&name, before)
        .unwrap_or_else(|| panic!("api(…, {text:.40}): no `const {name} = `…`` before it"))
}

/// The pattern of the last `const name = `…`` in `before`, if `name` is one.
fn constant(name: &str, before: &str) -> Option<String> {
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let definition = format!("const {name} = `");
    let at = before.rfind(&definition)?;
    Some(template(&before[at + definition.len()..], &before[..at]).0)
}

/// Every `api('METHOD', path…)` call of app.js as (METHOD, path pattern).
fn calls(js: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = js[from..].find("api('") {
        let at = from + offset;
        from = at + 5;
        let rest = &js[at + 5..];
        let method = &rest[..rest.find('\'').unwrap()];
        let arg = rest[method.len() + 1..]
            .trim_start_matches(',')
            .trim_start();
        found.push((method.to_string(), argument(arg, &js[..at])));
    }
    found
}

/// Whether the page's `pattern` (`{}` for a value it fills in) names the document's `path`.
fn matches(pattern: &str, path: &str) -> bool {
    let ours: Vec<&str> = pattern.split('/').collect();
    let theirs: Vec<&str> = path.split('/').collect();
    ours.len() == theirs.len()
        && ours.iter().zip(&theirs).all(|(o, t)| {
            let param = t.starts_with('{');
            if *o == "{}" {
                param
            } else {
                param || o == t
            }
        })
}

#[test]
fn every_request_of_the_inspector_is_a_documented_route() {
    let js = app_js();
    let calls = calls(&js);
    assert!(
        calls.len() >= 15,
        "found only {} api(...) calls in app.js: {calls:?}",
        calls.len()
    );
    let routes = mnemos_server::openapi::routes();
    for (method, pattern) in &calls {
        assert!(
            pattern.starts_with("/v1/"),
            "app.js calls {method} {pattern}, outside /v1"
        );
        assert!(
            routes
                .iter()
                .any(|(m, path)| m == method && matches(pattern, path)),
            "app.js calls {method} {pattern}, which the OpenAPI document does not describe"
        );
    }
}

#[test]
fn the_reader_of_app_js_finds_drift() {
    let routes = mnemos_server::openapi::routes();
    let found = |method: &str, pattern: &str| {
        routes
            .iter()
            .any(|(m, path)| m == method && matches(pattern, path))
    };
    let js = "const base = `${userPath(user)}/memories/${enc(id)}`;\n\
              api('GET', `${base}/history`); api('PATCH', base, { text });\n\
              api('GET', `${userPath(user)}/retention?points=3${a ? `&agent=${enc(a)}` : ''}`);\n\
              api('GET', `${userPath(user)}/memorys`); api('POST', '/v1/users');";
    let calls = calls(js);
    let expected: Vec<(String, String)> = [
        ("GET", "/v1/users/{}/memories/{}/history"),
        ("PATCH", "/v1/users/{}/memories/{}"),
        ("GET", "/v1/users/{}/retention"),
        ("GET", "/v1/users/{}/memorys"),
        ("POST", "/v1/users"),
    ]
    .map(|(m, p)| (m.to_string(), p.to_string()))
    .to_vec();
    assert_eq!(calls, expected);
    assert!(found("PATCH", "/v1/users/{}/memories/{}"));
    assert!(found("GET", "/v1/users/{}/retention"));
    assert!(!found("GET", "/v1/users/{}/memorys"), "a mistyped path");
    assert!(!found("POST", "/v1/users"), "a wrong method");
}
