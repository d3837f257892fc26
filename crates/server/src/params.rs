//! Request pieces the HTTP routes and the MCP tools read the same way: optional names, kind
//! lists, memory ids, cursors, known users, and the hop to the blocking pool.

use mnemos_core::{KindTag, MemoryId, Page, UserKey};
use mnemos_engine::Engine;

use crate::error::{ApiError, ErrorCode};

/// Memories listed per page when a request names no limit.
pub(crate) const DEFAULT_PAGE: usize = 50;

/// Run an engine call on the blocking pool (the engine embeds and does SQLite IO; the async
/// workers stay free).
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("request task failed: {e}")))?
}

/// An optional agent or session name from a request, checked like stored names are (an empty
/// name would silently match nothing).
pub(crate) fn named(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    if let Some(name) = &value {
        mnemos_core::validate_name(field, name)?;
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
        .map(|k| k.parse::<KindTag>().map_err(ApiError::from))
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

    #[test]
    fn cursors_round_trip_and_bad_ones_are_input_errors() {
        let next = page(Some(&cursor(150)), Some(50)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((next.offset, next.limit), (150, 50));
        assert!(page(Some("150"), None).is_err());
        assert!(page(None, Some(0)).is_err());
        assert!(page(None, Some(Page::MAX_LIMIT + 1)).is_err());
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
