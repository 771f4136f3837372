//! Time as data. core never reads a clock: every input carries the caller's `now`, and every
//! deadline goes out through `poll_timeout`. Two machines' clocks are never compared.

use serde::{Deserialize, Serialize};

/// A moment on one machine's own clock, in milliseconds since the Unix epoch.
///
/// Only moments from the same clock may be compared. A step's `at` is the writer's clock and is
/// informational: it feeds `operation.timing`, never a lease decision.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub const fn from_secs(secs: u64) -> Self {
        Timestamp(secs.saturating_mul(1000))
    }

    pub const fn millis(self) -> u64 {
        self.0
    }

    /// Whole seconds since the epoch, rounded down.
    pub const fn secs(self) -> u64 {
        self.0 / 1000
    }

    pub const fn plus_millis(self, ms: u64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    pub const fn plus_secs(self, secs: u64) -> Self {
        self.plus_millis(secs.saturating_mul(1000))
    }

    /// `ms` earlier, or the epoch.
    pub const fn minus_millis(self, ms: u64) -> Self {
        Timestamp(self.0.saturating_sub(ms))
    }

    /// Milliseconds from `earlier` to `self`, zero if `earlier` is later (a clock that jumped
    /// back never makes a negative wait).
    pub const fn millis_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Timestamp {
    /// The UTC calendar date of this instant, `YYYY-MM-DD` (the days-from-civil inverse of
    /// the proleptic Gregorian calendar, exact for every date from 1970 on).
    pub fn date(self) -> String {
        let days = self.0 / 86_400_000;
        // Shift the era to start on 0000-03-01, so that the leap day ends each year.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        format!("{year:04}-{month:02}-{day:02}")
    }
}

/// The instant an RFC 3339 UTC time to the second names, such as `2026-12-24T00:00:00Z`: a
/// real calendar date, hours below 24, minutes and seconds below 60, the `Z` and nothing else.
/// `None` for any other text, or a time before 1970.
pub fn parse_utc_second(text: &str) -> Option<Timestamp> {
    let bytes = text.as_bytes();
    if bytes.len() != 20 || !text.is_char_boundary(10) || !is_calendar_date(&text[..10]) {
        return None;
    }
    let shape = bytes[10..].iter().enumerate().all(|(i, &b)| match i {
        0 => b == b'T',
        3 | 6 => b == b':',
        9 => b == b'Z',
        _ => b.is_ascii_digit(),
    });
    if !shape {
        return None;
    }
    let number = |from: usize, to: usize| {
        bytes[from..to]
            .iter()
            .fold(0u64, |n, &b| n * 10 + u64::from(b - b'0'))
    };
    let (hour, minute, second) = (number(11, 13), number(14, 16), number(17, 19));
    if hour >= 24 || minute >= 60 || second >= 60 {
        return None;
    }
    // Days from civil, the inverse of `Timestamp::date`, with the era starting in March.
    let (year, month, day) = (number(0, 4), number(5, 7), number(8, 10));
    let year = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = year / 400;
    let yoe = year - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(Timestamp::from_secs(
        days * 86_400 + hour * 3_600 + minute * 60 + second,
    ))
}

/// Whether `text` is a calendar date written `YYYY-MM-DD`, in the proleptic Gregorian
/// calendar: `2028-02-29` is one, `2026-02-29` and `2026-4-01` are not.
pub fn is_calendar_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let shape = bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    let number = |from: usize, to: usize| {
        bytes[from..to]
            .iter()
            .fold(0u32, |n, &b| n * 10 + u32::from(b - b'0'))
    };
    let (year, month, day) = (number(0, 4), number(5, 7), number(8, 10));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_has_its_utc_date() {
        assert_eq!(Timestamp(0).date(), "1970-01-01");
        assert_eq!(Timestamp(86_399_999).date(), "1970-01-01");
        assert_eq!(Timestamp(951_782_400_000).date(), "2000-02-29");
        assert_eq!(Timestamp(1_795_969_686_396).date(), "2026-11-29");
        assert_eq!(Timestamp(4_107_542_400_000).date(), "2100-03-01");
    }

    #[test]
    fn calendar_dates_follow_the_calendar() {
        for good in [
            "2026-10-25",
            "2028-02-29",
            "2000-02-29",
            "2026-04-30",
            "0001-01-01",
        ] {
            assert!(is_calendar_date(good), "{good}");
        }
        for bad in [
            "2026-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-13-01",
            "2026-00-10",
            "2026-01-00",
            "2026-4-01",
            "2026-04-01T00:00:00Z",
            "2026/04/01",
            "",
            "２026-04-01",
        ] {
            assert!(!is_calendar_date(bad), "{bad}");
        }
    }

    #[test]
    fn a_utc_second_is_the_instant_it_names() {
        assert_eq!(parse_utc_second("1970-01-01T00:00:00Z"), Some(Timestamp(0)));
        assert_eq!(
            parse_utc_second("2000-02-29T00:00:00Z"),
            Some(Timestamp(951_782_400_000))
        );
        assert_eq!(
            parse_utc_second("2100-03-01T00:00:00Z"),
            Some(Timestamp(4_107_542_400_000))
        );
        assert_eq!(
            parse_utc_second("2026-11-29T12:34:56Z"),
            Some(Timestamp::from_secs(1_795_955_696))
        );
        // Every day of a leap span reads back through the calendar.
        for day in 10_950..11_700u64 {
            let at = Timestamp::from_secs(day * 86_400 + 3_723);
            let text = format!("{}T01:02:03Z", at.date());
            assert_eq!(parse_utc_second(&text), Some(at), "{text}");
        }
        for bad in [
            "1969-12-31T23:59:59Z",
            "2026-02-29T00:00:00Z",
            "2026-12-24T24:00:00Z",
            "2026-12-24T00:60:00Z",
            "2026-12-24T00:00:60Z",
            "2026-12-24T00:00:00+01:00",
            "2026-12-24 00:00:00Z",
            "2026-12-24",
            "",
        ] {
            assert_eq!(parse_utc_second(bad), None, "{bad}");
        }
    }
}
