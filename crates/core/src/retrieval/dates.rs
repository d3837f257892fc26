//! The calendar periods a query names ("on 25 February, 2022", "in May 2023"), so a search can
//! prefer memories from then (see [`RetrievalConfig::date`](super::RetrievalConfig)).
//!
//! The analyzer already turns every date it recognizes into normalized terms (`2022-02-25`,
//! `2022-02`, `02-25`); a period is read back from those terms. People talk about a day on that
//! day or soon after ("yesterday I…"), so each period runs on past its end: a week after a day,
//! a week after a month. A month-day without a year names no period (which year?), nor does a
//! bare month.

use chrono::{Days, Months, NaiveDate};

use crate::model::Timestamp;

/// How long after a named day or month a memory still counts as from then.
const SLACK_DAYS: u64 = 7;

/// A span of wall time, `[start, end)` in milliseconds since the epoch (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Period {
    start: i64,
    end: i64,
}

impl Period {
    pub(crate) fn contains(&self, t: Timestamp) -> bool {
        (self.start..self.end).contains(&t.millis())
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
        Some(Period {
            start: millis(first)?,
            end: millis(end)?,
        })
    }
}

/// The periods named by the date terms among `query_terms`: each full date (`YYYY-MM-DD`), and
/// each year-month (`YYYY-MM`) that is not just the month of a full date also named.
pub(crate) fn named_periods(query_terms: &[String]) -> Vec<Period> {
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
        let last = first
            .checked_add_months(Months::new(1))
            .and_then(|next| next.pred_opt());
        if let Some(period) = last.and_then(|last| Period::spanning(first, last, false)) {
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
    fn no_year_no_period() {
        assert!(periods("When did Melanie go camping in June?").is_empty());
        assert!(periods("What happened on May 8?").is_empty());
        assert!(periods("How many cats do you have?").is_empty());
    }
}
