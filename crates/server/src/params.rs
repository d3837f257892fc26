//! Request pieces the HTTP routes and the MCP tools read the same way: optional names, kind
//! lists, memory ids, cursors, known users, and the hop off the async side.

use mnemos_core::defaults::DEFAULT_PAGE;
use mnemos_core::{KindTag, MemoryId, Metadata, Page, TurnId, UserKey};
use mnemos_engine::Engine;
use mnemos_inspect::MemorySort;

use crate::dto::ListQuery;

use crate::error::{ApiError, ErrorCode};

/// Run an engine call off the async side (the engine embeds and does SQLite IO). The work's
/// own time and the wall time of the whole hop go to the request's account
/// ([`crate::timing`]).
///
/// On a multi-threaded runtime (every server's) the work runs where the request is, after
/// handing this worker's other tasks to another thread (`block_in_place`): the request neither
/// waits for a blocking-pool thread to wake nor for a worker to take it back afterwards, which
/// cost a tenth of a millisecond a request even on an idle machine. Elsewhere (a router under
/// a single-threaded runtime, as in some tests) it hops to the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let hopped = std::time::Instant::now();
    let timed = move || {
        let started = std::time::Instant::now();
        let result = work();
        (result, started.elapsed())
    };
    let (result, ran) = if on_worker_threads() {
        tokio::task::block_in_place(timed)
    } else {
        tokio::task::spawn_blocking(timed)
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("request task failed: {e}")))?
    };
    crate::timing::add(hopped.elapsed(), ran);
    result
}

/// Whether this task runs on a multi-threaded runtime, where `block_in_place` may be called.
fn on_worker_threads() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// A value against a rule (`invalid_input`), in the rule's own words: the code already says
/// the input was invalid, so the core's `invalid input:` prefix would say it twice.
pub(crate) fn broken_rule(err: mnemos_core::Error) -> ApiError {
    match err {
        mnemos_core::Error::InvalidInput(message) => ApiError::invalid(message),
        other => other.into(),
    }
}

/// What was read from the query string: a value there that breaks a rule is answered like one
/// that does not parse, 400 `invalid_request`. The query string is part of the request's shape
/// (the same helpers answer 422 for a body's value, which the caller's data may break).
pub(crate) fn from_query<T>(read: Result<T, ApiError>) -> Result<T, ApiError> {
    read.map_err(|e| match e.code {
        ErrorCode::InvalidInput => bad_param(e.message),
        _ => e,
    })
}

/// An optional agent or session name from a request, checked like stored names are (an empty
/// name would silently match nothing).
pub(crate) fn named(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    if let Some(name) = &value {
        mnemos_core::validate_name(field, name).map_err(broken_rule)?;
    }
    Ok(value)
}

/// Memory kinds by name (`turn`, `summary`, …); blank names are skipped.
pub(crate) fn kinds<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<KindTag>, ApiError> {
    names
        .into_iter()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| k.parse::<KindTag>().map_err(broken_rule))
        .collect()
}

/// Kinds from a comma-separated list (`turn,summary`).
pub(crate) fn kind_list(list: Option<&str>) -> Result<Vec<KindTag>, ApiError> {
    kinds(list.map(|l| l.split(',')).into_iter().flatten())
}

/// A memory id; one that does not parse is answered like an unknown one.
pub(crate) fn memory_id(text: &str) -> Result<MemoryId, ApiError> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::not_found(format!("no memory '{text}'")))
}

/// The memory ids a request body lists (the `ids` a dry run of a forget by description
/// returned): one that does not parse is the caller's mistake, named.
pub(crate) fn memory_ids(ids: &[String]) -> Result<Vec<MemoryId>, ApiError> {
    ids.iter()
        .map(|text| {
            text.trim()
                .parse()
                .map_err(|_| ApiError::invalid(format!("ids: '{text}' is not a memory id")))
        })
        .collect()
}

/// A turn id from a path; one that does not parse is unknown (404), like a memory id.
pub(crate) fn turn_id(text: &str) -> Result<TurnId, ApiError> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::not_found(format!("no turn '{text}'")))
}

/// A page from a cursor (opaque to callers; today it holds the next offset) and a limit.
pub(crate) fn page(cursor: Option<&str>, limit: Option<usize>) -> Result<Page, ApiError> {
    let offset = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix('o')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "cursor: '{cursor}' is not a cursor (pass a page's next_cursor)"
                ))
            })?,
    };
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > Page::MAX_LIMIT {
        return Err(ApiError::invalid(format!(
            "limit: must be 1 to {}",
            Page::MAX_LIMIT
        )));
    }
    Ok(Page { offset, limit })
}

/// The cursor of the page starting at `offset`.
pub(crate) fn cursor(offset: usize) -> String {
    format!("o{offset}")
}

/// A query parameter's value against the rules (answered 400 `invalid_request`, like a query
/// that does not parse).
pub(crate) fn bad_param(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

/// The memory listing's query: `meta` may repeat, which axum's `Query` cannot take, so the
/// pairs are read here and the rest deserialized as usual (unknown names refused).
pub(crate) fn list_query(raw: Option<&str>) -> Result<ListQuery, ApiError> {
    let failed = |e: serde_urlencoded::de::Error| {
        bad_param(format!("Failed to deserialize query string: {e}"))
    };
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.unwrap_or("")).map_err(failed)?;
    let (meta, rest): (Vec<_>, Vec<_>) = pairs.into_iter().partition(|(k, _)| k == "meta");
    let rest = serde_urlencoded::to_string(&rest)
        .map_err(|e| bad_param(format!("Failed to read the query string: {e}")))?;
    let mut query: ListQuery = serde_urlencoded::from_str(&rest).map_err(failed)?;
    query.meta = meta.into_iter().map(|(_, v)| v).collect();
    Ok(query)
}

/// `key=value` pairs (`meta`), each of which a memory's metadata must hold exactly.
pub(crate) fn metadata_pairs(pairs: &[String]) -> Result<Metadata, ApiError> {
    let mut out = Metadata::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| bad_param(format!("meta: '{pair}' is not key=value")))?;
        if out.get(key).is_some_and(|v| v != value) {
            return Err(bad_param(format!("meta: '{key}' is given two values")));
        }
        out.insert(key.to_string(), value.to_string());
    }
    Ok(out)
}

/// The listing's text filter (`q`); a blank one is a mistake, not "everything".
pub(crate) fn text_filter(q: Option<&str>) -> Result<Option<String>, ApiError> {
    match q {
        Some(q) if q.trim().is_empty() => Err(bad_param("q must not be empty")),
        other => Ok(other.map(str::to_string)),
    }
}

/// A request's `as_of` (a date or an RFC 3339 time), parsed; absent: none. A moment that does
/// not parse is a malformed request (400) wherever it is sent, like a mistyped field.
pub(crate) fn as_of(text: Option<&str>) -> Result<Option<mnemos_core::Timestamp>, ApiError> {
    text.map(mnemos_engine::truth::parse_as_of)
        .transpose()
        .map_err(|e| bad_param(broken_rule(e).message))
}

/// A request's `min_relevance`: a number from 0 to 1; absent: the configured floor. One out of
/// range is answered 400 wherever it is sent, like a number that does not parse.
pub(crate) fn min_relevance(floor: Option<f32>) -> Result<Option<f32>, ApiError> {
    if let Some(floor) = floor {
        mnemos_core::retrieval::validate_min_relevance("min_relevance", floor)
            .map_err(|e| bad_param(broken_rule(e).message))?;
    }
    Ok(floor)
}

/// The listing's order (`sort`).
pub(crate) fn sort(name: Option<&str>) -> Result<MemorySort, ApiError> {
    match name {
        None => Ok(MemorySort::Oldest),
        Some(name) => MemorySort::parse(name).ok_or_else(|| {
            bad_param(format!(
                "sort: '{name}' is not one of {}",
                MemorySort::NAMES.join(", ")
            ))
        }),
    }
}

/// A number from a query parameter within `range`.
pub(crate) fn within(
    field: &str,
    value: Option<usize>,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, ApiError> {
    let value = value.unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(bad_param(format!(
            "{field}: must be {} to {}, got {value}",
            range.start(),
            range.end()
        )))
    }
}

/// The user, or 404 when nothing of theirs is stored (reads never create users).
pub(crate) fn known_user(engine: &Engine, user: UserKey) -> Result<UserKey, ApiError> {
    if engine.has_user(&user)? {
        Ok(user)
    } else {
        Err(ApiError::not_found(format!("no user '{}'", user.user)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In place on worker threads, on the blocking pool elsewhere: the answer is the same, and
    /// its time is on the request's account either way.
    async fn blocking_work_is_answered_and_timed() {
        let timing = crate::timing::scope(async {
            let answer = blocking(|| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                Ok(7)
            })
            .await;
            assert_eq!(answer.ok(), Some(7));
            crate::timing::spent()
        })
        .await;
        assert!(timing.engine >= std::time::Duration::from_millis(2));
        assert!(timing.blocking >= timing.engine);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_work_on_worker_threads() {
        assert!(on_worker_threads());
        blocking_work_is_answered_and_timed().await;
    }

    #[tokio::test]
    async fn blocking_work_on_a_single_threaded_runtime() {
        assert!(!on_worker_threads());
        blocking_work_is_answered_and_timed().await;
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_input_errors() {
        let next = page(Some(&cursor(150)), Some(50)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((next.offset, next.limit), (150, 50));
        assert!(page(Some("150"), None).is_err());
        assert!(page(None, Some(0)).is_err());
        assert!(page(None, Some(Page::MAX_LIMIT + 1)).is_err());
    }

    #[test]
    fn list_queries_take_repeated_meta_and_refuse_bad_values() {
        let query = list_query(Some("meta=a%3D1&meta=b=2&q=%E5%92%96%E5%95%A1&limit=5"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(query.meta, ["a=1", "b=2"]);
        assert_eq!(query.q.as_deref(), Some("咖啡"));
        assert_eq!(query.limit, Some(5));
        let pairs = metadata_pairs(&query.meta).unwrap_or_default();
        assert_eq!(pairs.get("a").map(String::as_str), Some("1"));
        assert!(metadata_pairs(&["novalue".into()]).is_err());
        assert!(metadata_pairs(&["=x".into()]).is_err());
        assert!(list_query(Some("colour=red")).is_err());
        assert!(list_query(None).is_ok());
        assert!(text_filter(Some("  ")).is_err());
        assert!(sort(Some("random")).is_err());
        assert_eq!(sort(Some("importance")).ok(), Some(MemorySort::Importance));
        assert!(within("points", Some(1), 200, 2..=2000).is_err());
        assert_eq!(within("points", None, 200, 2..=2000).ok(), Some(200));
    }

    #[test]
    fn kind_lists_skip_blanks_and_reject_unknown_kinds() {
        assert_eq!(
            kind_list(Some("turn, summary,")).unwrap_or_default(),
            vec![KindTag::Turn, KindTag::Summary]
        );
        assert!(kind_list(Some("gossip")).is_err());
        assert!(kind_list(None).unwrap_or_default().is_empty());
    }
}
