//! A request's time limit, checked by the work itself. A server that answers "timeout" must
//! also stop what it was computing for that answer, and only the work knows where it can stop
//! safely: between embedding chunks, between the parts of a query, before a commit. A
//! [`Deadline`] is handed down with the request and checked at those points.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// When a request's work must stop; [`Deadline::NONE`] never passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deadline {
    at: Option<Instant>,
    /// The limit it was made from, for the error message.
    limit: Duration,
}

impl Deadline {
    /// No time limit (the CLI, mechanisms' own work, tests).
    pub const NONE: Deadline = Deadline {
        at: None,
        limit: Duration::ZERO,
    };

    /// `limit` from `start`.
    pub fn starting(start: Instant, limit: Duration) -> Self {
        Deadline {
            at: start.checked_add(limit),
            limit,
        }
    }

    /// `limit` from now.
    pub fn after(limit: Duration) -> Self {
        Self::starting(Instant::now(), limit)
    }

    /// Has the time run out?
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// `Err(Error::TimedOut)` once the time has run out: the caller stops and returns it.
    pub fn check(&self) -> Result<()> {
        if self.passed() {
            Err(Error::TimedOut { limit: self.limit })
        } else {
            Ok(())
        }
    }

    /// The earlier of two deadlines.
    pub fn min(self, other: Deadline) -> Deadline {
        match (self.at, other.at) {
            (Some(a), Some(b)) if b < a => other,
            (None, Some(_)) => other,
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_deadline_never_passes_and_a_past_one_is_a_timeout() {
        assert!(Deadline::NONE.check().is_ok());
        let past = Deadline::starting(Instant::now(), Duration::ZERO);
        let error = past.check().err();
        assert!(matches!(error, Some(Error::TimedOut { .. })), "{error:?}");
        assert_eq!(error.map(|e| e.class()), Some(crate::ErrorClass::TimedOut));
        assert!(Deadline::after(Duration::from_secs(60)).check().is_ok());
    }

    #[test]
    fn the_earlier_deadline_wins() {
        let soon = Deadline::after(Duration::from_millis(1));
        let late = Deadline::after(Duration::from_secs(60));
        assert_eq!(soon.min(late), soon);
        assert_eq!(late.min(soon), soon);
        assert_eq!(Deadline::NONE.min(late), late);
        assert_eq!(late.min(Deadline::NONE), late);
    }
}
