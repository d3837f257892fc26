//! Where a store's data lives: a SQLite file, or a PostgreSQL database named by URL. The one
//! place that tells them apart, so `--db`, `MNEMOS_DB` and the config's `db` accept both.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A store location: `postgres://…` or `postgresql://…` is a PostgreSQL database; anything
/// else is the path of a SQLite file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    Postgres(String),
}

const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

impl StoreLocation {
    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match self {
            StoreLocation::Sqlite(path) => Some(path),
            StoreLocation::Postgres(_) => None,
        }
    }

    /// Whether both name one store: the same SQLite file under any path, or the same URL
    /// (migrating a store onto itself must be refused before anything is written).
    pub fn same_store(&self, other: &StoreLocation) -> bool {
        match (self.sqlite_path(), other.sqlite_path()) {
            (Some(x), Some(y)) => {
                x == y || matches!((x.canonicalize(), y.canonicalize()), (Ok(x), Ok(y)) if x == y)
            }
            _ => self == other,
        }
    }
}

impl FromStr for StoreLocation {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
        Ok(if POSTGRES_SCHEMES.iter().any(|p| lower.starts_with(p)) {
            StoreLocation::Postgres(s.to_string())
        } else {
            StoreLocation::Sqlite(PathBuf::from(s))
        })
    }
}

impl From<PathBuf> for StoreLocation {
    fn from(path: PathBuf) -> Self {
        match path.to_str() {
            Some(s) => s.parse().unwrap_or(StoreLocation::Sqlite(path)),
            None => StoreLocation::Sqlite(path),
        }
    }
}

/// Shown in messages and logs: a PostgreSQL URL without its password.
impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => f.write_str(&mnemos_store_postgres::redact(url)),
        }
    }
}

impl Serialize for StoreLocation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StoreLocation::Sqlite(path) => path.serialize(serializer),
            StoreLocation::Postgres(url) => url.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for StoreLocation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let path = PathBuf::deserialize(deserializer)?;
        Ok(StoreLocation::from(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_under_two_paths_is_one_store() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.db");
        std::fs::write(&file, b"").unwrap();
        let direct = StoreLocation::Sqlite(file.clone());
        let roundabout = StoreLocation::Sqlite(dir.path().join(".").join("m.db"));
        assert!(direct.same_store(&roundabout));
        assert!(!direct.same_store(&StoreLocation::Sqlite(dir.path().join("other.db"))));
        let pg = StoreLocation::Postgres("postgres://u@h/d".into());
        assert!(pg.same_store(&pg.clone()));
        assert!(!pg.same_store(&direct));
    }

    #[test]
    fn urls_are_postgres_and_everything_else_a_file() {
        let pg: StoreLocation = "postgres://mnemos@127.0.0.1:5432/memories".parse().unwrap();
        assert_eq!(
            pg,
            StoreLocation::Postgres("postgres://mnemos@127.0.0.1:5432/memories".into())
        );
        let pg2: StoreLocation = "PostgreSQL://h/db".parse().unwrap();
        assert!(matches!(pg2, StoreLocation::Postgres(_)));
        let file: StoreLocation = "data/postgres.db".parse().unwrap();
        assert_eq!(
            file,
            StoreLocation::Sqlite(PathBuf::from("data/postgres.db"))
        );
        assert_eq!(
            file.sqlite_path(),
            Some(std::path::Path::new("data/postgres.db"))
        );
        assert_eq!(pg.sqlite_path(), None);
    }

    #[test]
    fn passwords_never_show() {
        let loc: StoreLocation = "postgres://ann:s3cr@t@db.example:5432/m?sslmode=disable"
            .parse()
            .unwrap();
        let shown = loc.to_string();
        assert_eq!(
            shown,
            "postgres://ann:***@db.example:5432/m?sslmode=disable"
        );
        let plain: StoreLocation = "postgres://ann@db/m".parse().unwrap();
        assert_eq!(plain.to_string(), "postgres://ann@db/m");
    }

    #[test]
    fn toml_round_trip_keeps_the_location() {
        #[derive(Serialize, Deserialize)]
        struct C {
            db: StoreLocation,
        }
        let c: C = toml::from_str("db = 'postgres://u:p@h/d'").unwrap();
        assert_eq!(c.db, StoreLocation::Postgres("postgres://u:p@h/d".into()));
        let back = toml::to_string(&c).unwrap();
        assert!(back.contains("postgres://u:p@h/d"), "{back}");
    }
}
