//! Per-user data versions: what [`mnemos_core::MemoryRead::data_version`] reads.
//!
//! **In the database.** Every write transaction of a user draws a number from the global
//! sequence `mnemos_versions` and stores it as the user's row of `user_versions`; a purge
//! deletes that row (it leaves nothing of the user behind) and stores its number as the one
//! row of `mnemos_purges` instead. A user's *database version* is its row's number, or, with
//! no row, the latest purge's number (0 before any purge). Each number is stored by exactly one
//! commit, so a database version that was written after some moment never equals one that was
//! visible before it: not after a purge (the purge's own number shows), and not after a purge
//! and the same number of rewrites (new numbers). A purge of any user changes the version of
//! every user without a row; those hold no data, so that only makes the version coarser.
//!
//! **Per handle.** A handle must not see its own commits as changes. For each user it keeps
//! [`Seen`]: `own_last`, the database version its latest commit of the user left, and
//! `shown`, the number to report while the database still holds `own_last`. Each commit
//! records `(old, new)`, the user's database version before and after it, while it still
//! holds the user's advisory lock and before it commits, so records of one user are made in
//! commit order. If `old != own_last`, another handle committed since this handle's previous
//! commit of the user, and `shown` becomes `old`. Reading: the database version `v`, then
//! `shown` if `v == own_last`, else `v`.
//!
//! **No foreign commit is missed.** Let `F` be another handle's commit of the user that
//! commits after a read `c1` returned, and `c2` a later read. Every number `c1` could return
//! was written by a commit that had committed before `c1` returned (or is 0): the database
//! version it read, or an `old` that one of our commits read before recording it. At `c2`, if
//! the database version is not `own_last`, it is returned, and it was written by `F` or a
//! later commit. If it is `own_last`, a commit of ours came after `F` (`own_last` is unique to
//! the commit that wrote it, and our records follow commit order); the first such commit read
//! an `old` written by `F` or later, unequal to its `own_last` (written before `F`), so `shown`
//! became that number, and later commits only move `shown` to numbers written later still.
//! Either way `c2` returns a number written after `c1` returned: a different one. A cache
//! that reads the version before the data it is built from therefore never misses a commit.
//!
//! **Own commits are never seen as changes.** The store's `commit_window` is held shared by
//! each commit from before its record until after its commit, and exclusively by a read, so a
//! read never sees a commit of ours without its record or a record without its commit. A
//! commit that fails after its record only makes the next read report a change (safe).

use std::collections::HashMap;

use mnemos_core::{StoreError, StoreResult, UserKey};
use parking_lot::Mutex;
use postgres::{GenericClient, Transaction};

use crate::codec::{get, pg_err};

/// A user's database version, as one snapshot (`$1` tenant, `$2` user).
const DB_VERSION: &str = "SELECT COALESCE(\
     (SELECT v FROM user_versions WHERE tenant = $1 AND user_id = $2), \
     (SELECT v FROM mnemos_purges))";

/// A write: the version before, and a new number stored as the user's row.
const BUMP: &str = "WITH old AS (SELECT COALESCE(\
     (SELECT v FROM user_versions WHERE tenant = $1 AND user_id = $2), \
     (SELECT v FROM mnemos_purges)) AS v), \
     new AS (INSERT INTO user_versions (tenant, user_id, v) \
     VALUES ($1, $2, nextval('mnemos_versions')) \
     ON CONFLICT (tenant, user_id) DO UPDATE SET v = excluded.v RETURNING v) \
     SELECT old.v, new.v FROM old, new";

/// A purge: the version before; the user's row goes, and a new number is the latest purge's.
const PURGE: &str = "WITH old AS (SELECT COALESCE(\
     (SELECT v FROM user_versions WHERE tenant = $1 AND user_id = $2), \
     (SELECT v FROM mnemos_purges)) AS v), \
     gone AS (DELETE FROM user_versions WHERE tenant = $1 AND user_id = $2), \
     new AS (UPDATE mnemos_purges SET v = nextval('mnemos_versions') RETURNING v) \
     SELECT old.v, new.v FROM old, new";

/// A user's database version before and after a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) old: u64,
    pub(crate) new: u64,
}

fn number(value: i64, op: &'static str) -> StoreResult<u64> {
    u64::try_from(value)
        .map_err(|_| StoreError::Corrupt(format!("{op}: negative data version {value}")))
}

/// The user's database version now.
pub(crate) fn read(client: &mut impl GenericClient, user: &UserKey) -> StoreResult<u64> {
    const OP: &str = "read data_version";
    let row = client
        .query_one(DB_VERSION, &[&user.tenant, &user.user])
        .map_err(pg_err(OP))?;
    number(get(&row, 0, OP)?, OP)
}

/// Give the user a new database version inside `tx` (a purge: remove the user's row).
pub(crate) fn bump(tx: &mut Transaction<'_>, user: &UserKey, purge: bool) -> StoreResult<Change> {
    const OP: &str = "bump data_version";
    let sql = if purge { PURGE } else { BUMP };
    let row = tx
        .query_one(sql, &[&user.tenant, &user.user])
        .map_err(pg_err(OP))?;
    Ok(Change {
        old: number(get(&row, 0, OP)?, OP)?,
        new: number(get(&row, 1, OP)?, OP)?,
    })
}

/// What one handle knows of its own commits of one user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    /// The database version this handle's latest commit of the user left.
    own_last: u64,
    /// What a read reports while the database version is `own_last`.
    shown: u64,
}

/// Every user this handle has committed, with what it knows of its commits.
#[derive(Default)]
pub(crate) struct OwnCommits {
    users: Mutex<HashMap<UserKey, Seen>>,
}

impl OwnCommits {
    /// Note a commit of `user` made through this handle; called in the user's commit order.
    pub(crate) fn record(&self, user: &UserKey, change: Change) {
        let mut users = self.users.lock();
        let seen = users.entry(user.clone()).or_default();
        if change.old != seen.own_last {
            // Another handle committed the user since our previous commit of it.
            seen.shown = change.old;
        }
        seen.own_last = change.new;
    }

    /// The data version to report for `user` when the database holds `in_db`.
    pub(crate) fn shown(&self, user: &UserKey, in_db: u64) -> u64 {
        let seen = self.users.lock().get(user).copied().unwrap_or_default();
        if in_db == seen.own_last {
            seen.shown
        } else {
            in_db
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> UserKey {
        UserKey {
            tenant: "t".into(),
            user: "u".into(),
        }
    }

    fn commit(own: &OwnCommits, old: u64, new: u64) {
        own.record(&user(), Change { old, new });
    }

    #[test]
    fn own_commits_keep_the_number_and_foreign_ones_change_it() {
        let own = OwnCommits::default();
        assert_eq!(own.shown(&user(), 0), 0, "never written");
        assert_eq!(own.shown(&user(), 5), 5, "a foreign write");
        commit(&own, 5, 7);
        commit(&own, 7, 8);
        assert_eq!(own.shown(&user(), 8), 5, "our two commits change nothing");
        assert_eq!(own.shown(&user(), 9), 9, "a foreign commit after ours");
    }

    #[test]
    fn a_foreign_commit_between_two_of_ours_is_seen() {
        let own = OwnCommits::default();
        commit(&own, 0, 3);
        assert_eq!(own.shown(&user(), 3), 0);
        // Another handle wrote 4, then we wrote 6 on top of it.
        commit(&own, 4, 6);
        assert_eq!(own.shown(&user(), 6), 4);
    }

    #[test]
    fn a_foreign_purge_after_our_commit_is_seen() {
        let own = OwnCommits::default();
        commit(&own, 0, 3);
        assert_eq!(own.shown(&user(), 3), 0);
        // Another handle purged the user: the purge's number, 4, shows.
        assert_eq!(own.shown(&user(), 4), 4);
        // And a commit of ours on top of it keeps showing it.
        commit(&own, 4, 6);
        assert_eq!(own.shown(&user(), 6), 4);
    }
}
