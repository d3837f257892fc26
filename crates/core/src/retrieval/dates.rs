//! The calendar periods a query names ("on 25 February, 2022", "in May 2023"), so a search can
//! prefer memories from then (see [`RetrievalConfig::date`](super::RetrievalConfig)).
//!
//! The analyzer already turns every date it recognizes into normalized terms (`2022-02-25`,
//! `2022-02`, `02-25`); a period is read back from those terms. People talk about a day on that
//! day or soon after ("yesterday I…"), so each period runs on past its end: a week after a day,
//! a week after a month. A month-day without a year (`05-08`) or a month named alone ("in
//! June") names that day or month in every year: a user's memories rarely span the same month
//! of two years, and a question that leaves the year out means the one they talked about.
//! ("May" is left out: as a word it is mostly a verb.)

use chrono::{Days, Months, NaiveDate};

use crate::model::Timestamp;

/// How long after a named day or month a memory still counts as from then.
const SLACK_DAYS: u64 = 7;

/// English month names that name a month when they stand alone ("may" is mostly a verb).
const MONTH_NAMES: [(&str, u32); 11] = [
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
];

/// A period a query names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Period {
    /// A span of wall time, `[start, end)` in milliseconds since the epoch (UTC).
    Span { start: i64, end: i64 },
    /// A month (and day) of whichever year: the span it would be in the memory's year or the
    /// year before (for a slack that runs into January).
    Yearly { month: u32, day: Option<u32> },
}

impl Period {
    pub(crate) fn contains(&self, t: Timestamp) -> bool {
        match *self {
            Period::Span { start, end } => (start..end).contains(&t.millis()),
            Period::Yearly { month, day } => {
                let Some(at) = chrono::DateTime::from_timestamp_millis(t.millis()) else {
                    return false;
                };
                let year = chrono::Datelike::year(&at);
                [year - 1, year]
                    .into_iter()
                    .any(|y| Period::in_year(y, month, day).is_some_and(|span| span.contains(t)))
            }
        }
    }

    /// The span of `month` (and `day`) in `year`.
    fn in_year(year: i32, month: u32, day: Option<u32>) -> Option<Self> {
        match day {
            Some(d) => {
                let date = NaiveDate::from_ymd_opt(year, month, d)?;
                Period::spanning(date, date, true)
            }
            None => Period::month(NaiveDate::from_ymd_opt(year, month, 1)?),
        }
    }

    /// The month starting on `first`, with its slack.
    fn month(first: NaiveDate) -> Option<Self> {
        let last = first.checked_add_months(Months::new(1))?.pred_opt()?;
        Period::spanning(first, last, false)
    }

    /// From the start of `first` (a day before it, for a day: time zones) to `SLACK_DAYS` after
    /// `last_day`.
    fn spanning(first: NaiveDate, last_day: NaiveDate, day_before: bool) -> Option<Self> {
        let first = if day_before {
            first.checked_sub_days(Days::new(1))?
        } else {
            first
        };
        let end = last_day.checked_add_days(Days::new(SLACK_DAYS + 1))?;
        let millis = |d: NaiveDate| Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis());
        Some(Period::Span {
            start: millis(first)?,
            end: millis(end)?,
        })
    }
}

/// The periods named by the date terms among `query_terms`: each full date (`YYYY-MM-DD`),
/// each year-month (`YYYY-MM`) that is not just the month of a full date also named, and when
/// no year is named at all, each month-day (`MM-DD`) and month name, in every year.
pub(crate) fn named_periods(query_terms: &[String]) -> Vec<Period> {
    let mut periods = dated_periods(query_terms);
    if periods.is_empty() {
        periods = yearly_periods(query_terms);
    }
    periods
}

/// Month-days (`MM-DD`) and month names of `query_terms`, as periods of any year.
fn yearly_periods(query_terms: &[String]) -> Vec<Period> {
    let mut periods = Vec::new();
    for term in query_terms {
        let period = if let Some((month, day)) = month_day(term) {
            Period::Yearly {
                month,
                day: Some(day),
            }
        } else if let Some(&(_, month)) = MONTH_NAMES.iter().find(|(name, _)| name == term) {
            Period::Yearly { month, day: None }
        } else {
            continue;
        };
        if !periods.contains(&period) {
            periods.push(period);
        }
    }
    periods
}

/// A `MM-DD` term as (month, day), when it is a real day of some year.
fn month_day(term: &str) -> Option<(u32, u32)> {
    let (m, d) = term.split_once('-')?;
    if m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (month, day) = (m.parse().ok()?, d.parse().ok()?);
    // 2024 is a leap year: 02-29 counts.
    NaiveDate::from_ymd_opt(2024, month, day)?;
    Some((month, day))
}

/// The periods of the full dates and year-months among `query_terms`.
fn dated_periods(query_terms: &[String]) -> Vec<Period> {
    let days: Vec<NaiveDate> = query_terms
        .iter()
        .filter(|t| t.len() == 10)
        .filter_map(|t| NaiveDate::parse_from_str(t, "%Y-%m-%d").ok())
        .collect();
    let mut periods: Vec<Period> = days
        .iter()
        .filter_map(|&d| Period::spanning(d, d, true))
        .collect();
    for term in query_terms.iter().filter(|t| t.len() == 7) {
        let Ok(first) = NaiveDate::parse_from_str(&format!("{term}-01"), "%Y-%m-%d") else {
            continue;
        };
        if days.iter().any(|d| d.format("%Y-%m").to_string() == *term) {
            continue;
        }
        if let Some(period) = Period::month(first) {
            periods.push(period);
        }
    }
    periods
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(date: &str) -> Timestamp {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
        Timestamp(
            day.and_hms_opt(13, 56, 0)
                .unwrap()
                .and_utc()
                .timestamp_millis(),
        )
    }

    fn periods(query: &str) -> Vec<Period> {
        named_periods(&mnemos_text::Analyzer::shared().search_terms(query))
    }

    #[test]
    fn a_named_day_runs_a_week_on_and_a_month_a_week_past_its_end() {
        let day = periods("What did Nate do on 25 May, 2022?");
        assert_eq!(day.len(), 1, "the day's month is not a second period");
        assert!(day[0].contains(at("2022-05-25")));
        assert!(day[0].contains(at("2022-05-24")));
        assert!(day[0].contains(at("2022-06-01")));
        assert!(!day[0].contains(at("2022-06-02")));
        assert!(!day[0].contains(at("2022-05-20")));

        let month = periods("Where did Joanna travel in July 2022?");
        assert_eq!(month.len(), 1);
        assert!(month[0].contains(at("2022-07-01")));
        assert!(month[0].contains(at("2022-08-07")));
        assert!(!month[0].contains(at("2022-08-09")));
        assert!(!month[0].contains(at("2022-06-30")));
        assert!(!month[0].contains(at("2023-07-10")));

        let zh = periods("我2023年5月8日去了哪里？");
        assert!(zh.iter().any(|p| p.contains(at("2023-05-08"))));
    }

    #[test]
    fn a_month_or_day_without_a_year_names_it_in_every_year() {
        let june = periods("When did Melanie go camping in June?");
        assert_eq!(
            june,
            [Period::Yearly {
                month: 6,
                day: None
            }]
        );
        assert!(june[0].contains(at("2023-06-27")));
        assert!(june[0].contains(at("2021-07-05")));
        assert!(!june[0].contains(at("2023-07-09")));
        assert!(!june[0].contains(at("2023-05-30")));

        let day = periods("What happened on May 8?");
        assert_eq!(day.len(), 1);
        assert!(day[0].contains(at("2022-05-08")));
        assert!(day[0].contains(at("2030-05-15")));
        assert!(!day[0].contains(at("2030-05-16")));
        // A slack that runs into the next year.
        let new_year = periods("What did you do on December 30?");
        assert!(new_year[0].contains(at("2024-01-05")));
        let zh = periods("我5月8日去了哪里？");
        assert!(zh.iter().any(|p| p.contains(at("2023-05-08"))));
    }

    #[test]
    fn a_named_year_wins_and_may_is_a_verb() {
        // The year-dated period alone, not also June of every year.
        assert_eq!(periods("Where did Joanna go in June 2022?").len(), 1);
        assert!(periods("May I ask how many cats you have?").is_empty());
        assert!(periods("How many cats do you have?").is_empty());
    }
}
