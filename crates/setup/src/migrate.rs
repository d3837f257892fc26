//! `migrate`: copy every user and API key from one store to another (a SQLite file to
//! PostgreSQL, or back), exactly, verified and resumable.
//!
//! Each user moves as one [`UserExport`] in one import transaction, so a user is either wholly
//! in the target or not at all. Before copying, the target's export of the user is compared
//! with the source's by checksum: equal means already copied (skipped, which is what lets an
//! interrupted migration simply run again), empty means copy, anything else is refused — the
//! target is never overwritten. After the import the target is exported again and must hash
//! like the source. The source is only read.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use mnemos_core::{
    ApiKey, ApiKeyId, ErrorClass, ExportCounts, Store, StoreError, StoreRead, UserExport, UserKey,
};

/// What happened to one user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationOutcome {
    /// Imported into the target and verified there.
    Copied,
    /// The target already held exactly this data (an earlier run copied it).
    Skipped,
}

/// One user's migration: what was there, its checksum, and what was done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMigration {
    pub user: UserKey,
    pub outcome: MigrationOutcome,
    pub counts: ExportCounts,
    /// SHA-256 of the user's export, equal in source and target.
    pub checksum: String,
}

/// What happened to the API keys (which belong to no user).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyMigration {
    /// Keys the target did not have (revoked ones included, with their revocation).
    pub copied: usize,
    /// Keys the target had, active, that are revoked in the source: revoked there too.
    pub revoked: usize,
    /// Keys the target already had as they are.
    pub present: usize,
}

/// Everything a migration did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationReport {
    pub users: Vec<UserMigration>,
    pub copied: usize,
    pub skipped: usize,
    /// The sums of every user's counts.
    pub totals: ExportCounts,
    pub keys: KeyMigration,
}

impl MigrationReport {
    fn add(&mut self, user: UserMigration) {
        match user.outcome {
            MigrationOutcome::Copied => self.copied += 1,
            MigrationOutcome::Skipped => self.skipped += 1,
        }
        self.totals = self.totals + user.counts;
        self.users.push(user);
    }
}

/// Why a migration stopped. Users copied before it stay copied; running it again resumes.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// The target holds other data of this user; it is left alone.
    #[error(
        "user {user}: the target already holds different data of this user ({in_target}; the \
         source has {in_source}); migrate never overwrites: purge the user in the target or \
         migrate into another database"
    )]
    TargetDiffers {
        user: UserKey,
        // Boxed: counts of every table, which would make every migration result large.
        in_source: Box<ExportCounts>,
        in_target: Box<ExportCounts>,
    },
    /// The import committed, but what the target holds does not hash like the source.
    #[error(
        "user {user}: the copy in the target does not match the source (checksum {copied} \
         there, {expected} in the source)"
    )]
    CopyDiffers {
        user: UserKey,
        expected: String,
        copied: String,
    },
    /// The target has a key under this id that is not the source's.
    #[error("API key {id}: the target holds a different key under this id")]
    KeyDiffers { id: ApiKeyId },
    /// The target has the source key's secret under another id.
    #[error("API key {id}: the target holds the same secret as key {other}")]
    KeyHashTaken { id: ApiKeyId, other: ApiKeyId },
    /// Reading the source or writing the target failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MigrationError {
    pub fn class(&self) -> ErrorClass {
        match self {
            MigrationError::TargetDiffers { .. }
            | MigrationError::KeyDiffers { .. }
            | MigrationError::KeyHashTaken { .. } => ErrorClass::Conflict,
            MigrationError::CopyDiffers { .. } => ErrorClass::Internal,
            MigrationError::Store(e) => e.class(),
        }
    }
}

/// Copy every user of `from` (with their turns, memories, history, vectors and jobs) and every
/// API key into `to`, calling `progress` after each user. Users already in `to` with the same
/// data are skipped; a user `to` holds other data of stops the migration with
/// [`MigrationError::TargetDiffers`]. `from` is only read.
pub fn migrate(
    from: &dyn StoreRead,
    to: &dyn Store,
    progress: &mut dyn FnMut(&UserMigration),
) -> Result<MigrationReport, MigrationError> {
    let mut report = MigrationReport::default();
    for user in from.users()? {
        let done = migrate_user(from, to, &user)?;
        progress(&done);
        report.add(done);
    }
    report.keys = migrate_keys(from, to)?;
    Ok(report)
}

fn migrate_user(
    from: &dyn StoreRead,
    to: &dyn Store,
    user: &UserKey,
) -> Result<UserMigration, MigrationError> {
    let source = from.export_user(user)?;
    let checksum = source.checksum();
    let existing = to.export_user(user)?;
    let outcome = if existing.checksum() == checksum {
        MigrationOutcome::Skipped
    } else if existing.is_empty() {
        to.import_user(&source)?;
        verify(to, &source, &checksum)?;
        MigrationOutcome::Copied
    } else {
        return Err(MigrationError::TargetDiffers {
            user: user.clone(),
            in_source: Box::new(source.counts()),
            in_target: Box::new(existing.counts()),
        });
    };
    Ok(UserMigration {
        user: user.clone(),
        outcome,
        counts: source.counts(),
        checksum,
    })
}

/// Read the user back from the target: it must hash exactly like the source's export.
fn verify(to: &dyn Store, source: &UserExport, expected: &str) -> Result<(), MigrationError> {
    let copied = to.export_user(&source.user)?.checksum();
    if copied != expected {
        return Err(MigrationError::CopyDiffers {
            user: source.user.clone(),
            expected: expected.to_string(),
            copied,
        });
    }
    Ok(())
}

/// The same key, apart from its revocation (which only ever moves from none to a time).
fn same_key(a: &ApiKey, b: &ApiKey) -> bool {
    a.tenant == b.tenant
        && a.name == b.name
        && a.hash == b.hash
        && a.prefix == b.prefix
        && a.created_at == b.created_at
}

/// Copy the keys the target lacks, and revocations it lacks. A key the target revoked is never
/// made active again.
fn migrate_keys(from: &dyn StoreRead, to: &dyn Store) -> Result<KeyMigration, MigrationError> {
    let there: HashMap<ApiKeyId, ApiKey> = to.api_keys()?.into_iter().map(|k| (k.id, k)).collect();
    let mut counts = KeyMigration::default();
    for key in from.api_keys()? {
        match there.get(&key.id) {
            None => {
                if let Some(other) = to.api_key_by_hash(&key.hash)? {
                    let (id, other) = (key.id, other.id);
                    return Err(MigrationError::KeyHashTaken { id, other });
                }
                to.put_api_key(&key)?;
                counts.copied += 1;
            }
            Some(found) if !same_key(found, &key) => {
                return Err(MigrationError::KeyDiffers { id: key.id });
            }
            Some(found) => match (key.revoked_at, found.revoked_at) {
                (Some(at), None) => {
                    to.revoke_api_key(key.id, at)?;
                    counts.revoked += 1;
                }
                _ => counts.present += 1,
            },
        }
    }
    Ok(counts)
}

/// Hex digits of a checksum shown to people (enough to compare two by eye).
const SHOWN_CHECKSUM: usize = 12;

/// One migrated user: `copied   t/alice  5 turns, … jobs  sha256 0123456789ab`.
pub fn migrated_user(user: &UserMigration) -> String {
    let outcome = match user.outcome {
        MigrationOutcome::Copied => "copied",
        MigrationOutcome::Skipped => "skipped",
    };
    let shown: String = user.checksum.chars().take(SHOWN_CHECKSUM).collect();
    format!(
        "{outcome:<8} {}  {}  sha256 {shown}\n",
        user.user, user.counts
    )
}

/// The totals of a migration, users and API keys.
pub fn migration_totals(report: &MigrationReport) -> String {
    let keys = &report.keys;
    format!(
        "{} users ({} copied, {} skipped): {}; API keys: {} copied, {} revocations copied, {} \
         already there\n",
        report.users.len(),
        report.copied,
        report.skipped,
        report.totals,
        keys.copied,
        keys.revoked,
        keys.present
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::{
        Job, Memory, MemoryStore, Metadata, Moment, Role, Scope, Timestamp, Turn, TurnId,
        VectorRow, WriteBatch,
    };
    use mnemos_core::{KeyRead, KeyWrite, MemoryRead};
    use mnemos_testkit::FaultyStore;

    fn user(name: &str) -> UserKey {
        UserKey::new("t", name).unwrap()
    }

    /// Two turns with their memories and vectors, a finished and a pending job.
    fn fill(store: &dyn Store, user: &UserKey, text: &str) {
        let scope = Scope::new(&user.tenant, &user.user, "a", "s1").unwrap();
        let turns: Vec<Turn> = (1..=2)
            .map(|round| Turn {
                id: TurnId::new(),
                scope: scope.clone(),
                role: Role::User,
                speaker: None,
                text: format!("{text} {round} 你好"),
                at: Moment {
                    round,
                    time: Timestamp(1_750_000_000_000 + round as i64),
                },
                metadata: Metadata::new(),
                key: Some(format!("k{round}")),
            })
            .collect();
        let memories: Vec<Memory> = turns.iter().map(Memory::from_turn).collect();
        let vectors = memories
            .iter()
            .map(|m| VectorRow {
                memory_id: m.id,
                model: "hash".into(),
                vector: vec![0.5, -0.0],
            })
            .collect();
        let done = Job::new(scope.clone(), "memorybank", "summary", "{}", turns[0].at);
        let pending = Job::new(scope, "memorybank", "summary", "{}", turns[1].at);
        let at = turns[1].at;
        store
            .write(WriteBatch {
                turns,
                memories,
                vectors,
                jobs: vec![done.clone(), pending],
                ..Default::default()
            })
            .unwrap();
        store
            .write(WriteBatch {
                user: Some(user.clone()),
                finished_jobs: vec![(done.id, at)],
                ..Default::default()
            })
            .unwrap();
    }

    fn key(tenant: &str, seed: char, revoked: Option<i64>) -> ApiKey {
        ApiKey {
            id: ApiKeyId::new(),
            tenant: tenant.into(),
            name: "bot".into(),
            hash: seed.to_string().repeat(64),
            prefix: "mnk_1234".into(),
            created_at: Timestamp(1),
            revoked_at: revoked.map(Timestamp),
        }
    }

    fn source() -> MemoryStore {
        let store = MemoryStore::new();
        fill(&store, &user("alice"), "alice");
        fill(&store, &user("bob"), "bob");
        store.put_api_key(&key("t", 'a', None)).unwrap();
        store.put_api_key(&key("t", 'b', Some(5))).unwrap();
        store
    }

    fn run(from: &dyn StoreRead, to: &dyn Store) -> Result<MigrationReport, MigrationError> {
        migrate(from, to, &mut |_| {})
    }

    fn outcomes(report: &MigrationReport) -> Vec<MigrationOutcome> {
        report.users.iter().map(|u| u.outcome).collect()
    }

    #[test]
    fn every_user_and_key_is_copied_and_a_second_run_skips_them() {
        let (from, to) = (source(), MemoryStore::new());
        let mut seen = Vec::new();
        let report = migrate(&from, &to, &mut |u| seen.push(u.user.clone())).unwrap();
        assert_eq!(seen, vec![user("alice"), user("bob")]);
        assert_eq!(outcomes(&report), vec![MigrationOutcome::Copied; 2]);
        assert_eq!((report.copied, report.skipped), (2, 0));
        assert_eq!(report.totals.turns, 4);
        assert_eq!(report.totals.jobs, 4);
        for u in [user("alice"), user("bob")] {
            let export = from.export_user(&u).unwrap();
            assert_eq!(to.export_user(&u).unwrap(), export);
        }
        assert_eq!(to.api_keys().unwrap(), from.api_keys().unwrap());
        assert_eq!(report.keys.copied, 2);
        let line = migrated_user(&report.users[0]);
        assert!(
            line.starts_with("copied") && line.contains("t/alice  2 turns, 2 memories"),
            "{line}"
        );
        assert!(
            line.trim_end().ends_with(&report.users[0].checksum[..12]),
            "{line}"
        );
        let totals = migration_totals(&report);
        assert!(
            totals.starts_with("2 users (2 copied, 0 skipped)"),
            "{totals}"
        );

        let again = run(&from, &to).unwrap();
        assert_eq!(outcomes(&again), vec![MigrationOutcome::Skipped; 2]);
        assert_eq!(again.users[0].checksum, report.users[0].checksum);
        assert_eq!(
            again.keys,
            KeyMigration {
                copied: 0,
                revoked: 0,
                present: 2
            }
        );
    }

    #[test]
    fn a_run_interrupted_after_a_commit_resumes_where_it_stopped() {
        let from = source();
        let to = FaultyStore::new(MemoryStore::new());
        // Alice's import commits, but its acknowledgement is lost.
        to.lose_ack_of_nth_write(1);
        assert!(run(&from, &to).is_err());
        let report = run(&from, &to).unwrap();
        assert_eq!(
            outcomes(&report),
            vec![MigrationOutcome::Skipped, MigrationOutcome::Copied]
        );
        let bob = user("bob");
        assert_eq!(
            to.export_user(&bob).unwrap(),
            from.export_user(&bob).unwrap()
        );
    }

    #[test]
    fn a_target_with_other_data_of_a_user_is_refused_and_left_alone() {
        let (from, to) = (source(), MemoryStore::new());
        fill(&to, &user("bob"), "someone else's bob");
        let before = to.export_user(&user("bob")).unwrap();
        let err = run(&from, &to).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Conflict);
        let message = err.to_string();
        assert!(
            message.contains("t/bob") && message.contains("different data"),
            "{message}"
        );
        assert!(matches!(&err, MigrationError::TargetDiffers { .. }));
        assert_eq!(to.export_user(&user("bob")).unwrap(), before);
        assert_eq!(
            to.export_user(&user("alice")).unwrap(),
            from.export_user(&user("alice")).unwrap(),
            "users before the refused one are copied"
        );
    }

    #[test]
    fn revocations_are_copied_and_a_different_key_under_an_id_is_refused() {
        let from = source();
        let to = MemoryStore::new();
        let active = from.api_keys().unwrap()[0].clone();
        to.put_api_key(&active).unwrap();
        from.revoke_api_key(active.id, Timestamp(9)).unwrap();
        let report = run(&from, &to).unwrap();
        assert_eq!(
            report.keys,
            KeyMigration {
                copied: 1,
                revoked: 1,
                present: 0
            }
        );
        assert_eq!(to.api_keys().unwrap(), from.api_keys().unwrap());

        let other = MemoryStore::new();
        to_key_with_other_hash(&other, &active);
        let err = run(&from, &other).unwrap_err();
        assert!(
            matches!(&err, MigrationError::KeyDiffers { id } if *id == active.id),
            "{err}"
        );
    }

    fn to_key_with_other_hash(store: &MemoryStore, like: &ApiKey) {
        let mut key = like.clone();
        key.hash = "f".repeat(64);
        key.revoked_at = None;
        store.put_api_key(&key).unwrap();
    }
}
