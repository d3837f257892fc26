//! Small text helpers shared by the loaders: HTML entities and the datasets' date formats.
//!
//! Dataset wall times carry no time zone; they are interpreted as UTC so that the same dataset
//! always yields the same timestamps.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use mnemos_core::Timestamp;

/// Decode HTML character references (`&#39;`, `&#x27;`, `&quot;`, `&amp;`, …).
///
/// PerLTQA strings were scraped with some entities left encoded; unknown or malformed references
/// are kept verbatim rather than guessed.
pub fn decode_html_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        // `&` is one byte, so `tail[1..]` is on a char boundary.
        let decoded = tail[1..]
            .char_indices()
            .take(12)
            .find(|&(_, c)| c == ';' || c == '&')
            .filter(|&(_, c)| c == ';')
            .and_then(|(end, _)| decode_reference(&tail[1..1 + end]).map(|c| (c, end + 2)));
        match decoded {
            Some((c, consumed)) => {
                out.push(c);
                rest = &tail[consumed..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_reference(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse::<u32>().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "ndash" => '–',
        "mdash" => '—',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "hellip" => '…',
        _ => return None,
    })
}

fn to_timestamp(datetime: NaiveDateTime) -> Timestamp {
    Timestamp(datetime.and_utc().timestamp_millis())
}

/// LoCoMo session time: "1:56 pm on 8 May, 2023".
pub fn parse_locomo_time(text: &str) -> Option<Timestamp> {
    let normalized = text.trim().to_ascii_uppercase();
    NaiveDateTime::parse_from_str(&normalized, "%I:%M %p ON %d %B, %Y")
        .ok()
        .map(to_timestamp)
}

/// MemDaily message time: "2024年04月01日 周一 08:39" (the weekday is redundant and ignored).
pub fn parse_memdaily_time(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    let date_end = text.find('日')? + '日'.len_utf8();
    let date = NaiveDate::parse_from_str(&text[..date_end], "%Y年%m月%d日").ok()?;
    let clock = text[date_end..].split_whitespace().last()?;
    let time = NaiveTime::parse_from_str(clock, "%H:%M").ok()?;
    Some(to_timestamp(date.and_time(time)))
}

/// PerLTQA dialogue time: "2022-05-12 10:00".
pub fn parse_perltqa_dialogue_time(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S"))
        .ok()
        .map(to_timestamp)
}

/// MemoryBank history date: "2023-04-27" (midnight).
pub fn parse_iso_date(text: &str) -> Option<Timestamp> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .ok()
        .map(|date| to_timestamp(date.and_time(NaiveTime::MIN)))
}

/// PerLTQA event "Creation Time": "May 12, 2022", "October 2021" or "2012" (start of the
/// period); free text such as "during an election" yields `None`.
pub fn parse_perltqa_event_time(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    let midnight = NaiveTime::MIN;
    if let Ok(date) = NaiveDate::parse_from_str(text, "%B %d, %Y") {
        return Some(to_timestamp(date.and_time(midnight)));
    }
    if let Ok(date) = NaiveDate::parse_from_str(&format!("1 {text}"), "%d %B %Y") {
        return Some(to_timestamp(date.and_time(midnight)));
    }
    if text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit()) {
        let year = text.parse::<i32>().ok()?;
        let date = NaiveDate::from_ymd_opt(year, 1, 1)?;
        return Some(to_timestamp(date.and_time(midnight)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Timestamp {
        let dt = NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|date| date.and_hms_opt(h, mi, 0))
            .expect("valid date");
        Timestamp(dt.and_utc().timestamp_millis())
    }

    #[test]
    fn entities() {
        assert_eq!(
            decode_html_entities("It&#39;s &quot;fine&quot; &amp; &#x41;&lt;"),
            "It's \"fine\" & A<"
        );
        assert_eq!(
            decode_html_entities("a & b; &bogus; &#xZZ; &"),
            "a & b; &bogus; &#xZZ; &"
        );
        assert_eq!(decode_html_entities("中文&#39;"), "中文'");
        assert_eq!(decode_html_entities("&#39"), "&#39");
        assert_eq!(decode_html_entities("&#39;中文中文中文"), "'中文中文中文");
        assert_eq!(decode_html_entities("&&amp;"), "&&");
    }

    #[test]
    fn locomo_times() {
        assert_eq!(
            parse_locomo_time("1:56 pm on 8 May, 2023"),
            Some(ms(2023, 5, 8, 13, 56))
        );
        assert_eq!(
            parse_locomo_time("12:48 am on 1 February, 2023"),
            Some(ms(2023, 2, 1, 0, 48))
        );
        assert_eq!(
            parse_locomo_time("10:37 am on 27 June, 2023"),
            Some(ms(2023, 6, 27, 10, 37))
        );
        assert_eq!(parse_locomo_time("sometime in May"), None);
    }

    #[test]
    fn memdaily_times() {
        assert_eq!(
            parse_memdaily_time("2024年04月01日 周一 08:39"),
            Some(ms(2024, 4, 1, 8, 39))
        );
        assert_eq!(parse_memdaily_time("2024年13月01日 周一 08:39"), None);
        assert_eq!(parse_memdaily_time("08:39"), None);
    }

    #[test]
    fn iso_dates() {
        assert_eq!(parse_iso_date(" 2023-04-27 "), Some(ms(2023, 4, 27, 0, 0)));
        assert_eq!(parse_iso_date("2023-02-30"), None);
        assert_eq!(parse_iso_date("April 27"), None);
    }

    #[test]
    fn perltqa_times() {
        assert_eq!(
            parse_perltqa_dialogue_time("2022-05-12 10:00"),
            Some(ms(2022, 5, 12, 10, 0))
        );
        assert_eq!(
            parse_perltqa_event_time("May 12, 2022"),
            Some(ms(2022, 5, 12, 0, 0))
        );
        assert_eq!(
            parse_perltqa_event_time("October 2021"),
            Some(ms(2021, 10, 1, 0, 0))
        );
        assert_eq!(parse_perltqa_event_time("2012"), Some(ms(2012, 1, 1, 0, 0)));
        assert_eq!(parse_perltqa_event_time("during an election"), None);
    }
}
