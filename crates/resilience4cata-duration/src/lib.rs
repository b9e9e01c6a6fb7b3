//! The duration grammar shared by `resilience4cata` (configuration files, builders) and
//! `resilience4cata-macros` (attribute values checked at compile time), so both accept exactly the
//! same strings.
//!
//! Accepted forms:
//! - `"0"`: zero;
//! - one or more `<integer><unit>` groups, units `ns`, `us`, `ms`, `s`, `m`, `h`, largest first or not
//!   (`"250ms"`, `"2s"`, `"1m30s"`, `"1h"`, `"500us"`);
//! - ISO-8601 time durations `PT[nH][nM][n[.n]S]` (`"PT2S"`, `"PT1M30S"`, `"PT0.5S"`), case-insensitive.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata_duration::parse;
//!
//! assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
//! assert_eq!(parse("PT0.25S"), Ok(Duration::from_millis(250)));
//! assert!(parse("10 parsecs").is_err());
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::fmt;
use std::time::Duration;

/// Why a string is not a duration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError {
    input: String,
    reason: &'static str,
}

impl DurationError {
    fn new(input: &str, reason: &'static str) -> Self {
        DurationError { input: input.to_owned(), reason }
    }

    /// What is wrong with the input, in a few words.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a duration ({}); write \"0\", integer+unit groups with units ns, us, ms, s, m, h \
             (\"250ms\", \"1m30s\"), or ISO-8601 \"PT2S\"",
            self.input, self.reason
        )
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration string of the grammar above.
pub fn parse(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(DurationError::new(input, "empty"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    // Every form of the grammar is ASCII; refusing anything else first is what makes the byte
    // indexing below land on character boundaries (`"1µs"`, `"€5s"` are errors, never a panic).
    if !s.is_ascii() {
        return Err(DurationError::new(input, "not ASCII"));
    }
    match s.get(..2) {
        Some(prefix) if s.len() > 2 && prefix.eq_ignore_ascii_case("PT") => parse_iso(input, &s[2..]),
        _ => parse_groups(input, s),
    }
}

/// Formats a duration in the grammar's integer+unit form, largest unit first, so that
/// `parse(&format(d)) == Ok(d)` for every `Duration`.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata_duration::{format, parse};
///
/// assert_eq!(format(Duration::from_millis(90_250)), "1m30s250ms");
/// assert_eq!(format(Duration::ZERO), "0");
/// assert_eq!(parse(&format(Duration::MAX)), Ok(Duration::MAX));
/// ```
pub fn format(duration: Duration) -> String {
    const UNITS: [(&str, u128); 6] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let mut rest = duration.as_nanos();
    if rest == 0 {
        return "0".to_owned();
    }
    let mut out = String::new();
    for (unit, nanos) in UNITS {
        let count = rest / nanos;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(unit);
            rest %= nanos;
        }
    }
    out
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// `s` is ASCII (checked by [`parse`]): every byte index below is a character boundary.
fn parse_groups(input: &str, s: &str) -> Result<Duration, DurationError> {
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(DurationError::new(input, "expected a number"));
        }
        let value: u128 = rest[..digits].parse().map_err(|_| DurationError::new(input, "number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        if unit_len == 0 {
            return Err(DurationError::new(input, "missing unit"));
        }
        let unit = unit_nanos(&rest[..unit_len]).ok_or_else(|| DurationError::new(input, "unknown unit"))?;
        rest = &rest[unit_len..];
        total = value
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| DurationError::new(input, "too large"))?;
    }
    nanos_to_duration(input, total)
}

fn nanos_to_duration(input: &str, nanos: u128) -> Result<Duration, DurationError> {
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| DurationError::new(input, "too large"))?;
    Ok(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// `body` is ASCII (checked by [`parse`]): every byte index below is a character boundary, and
/// `len + 1` steps over the one-byte designator just matched.
fn parse_iso(input: &str, body: &str) -> Result<Duration, DurationError> {
    let mut total: u128 = 0;
    let mut rest = body;
    let mut last_rank = 0;
    while !rest.is_empty() {
        let len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        if len == 0 {
            return Err(DurationError::new(input, "expected a number"));
        }
        let number = &rest[..len];
        let designator = rest[len..].chars().next().map(|c| c.to_ascii_uppercase());
        let (rank, unit) = match designator {
            Some('H') => (1, 3_600_000_000_000u128),
            Some('M') => (2, 60_000_000_000),
            Some('S') => (3, 1_000_000_000),
            _ => return Err(DurationError::new(input, "expected H, M or S")),
        };
        if rank <= last_rank {
            return Err(DurationError::new(input, "components out of order"));
        }
        last_rank = rank;
        total = total
            .checked_add(iso_component(input, number, unit, rank == 3)?)
            .ok_or_else(|| DurationError::new(input, "too large"))?;
        rest = &rest[len + 1..];
    }
    nanos_to_duration(input, total)
}

fn iso_component(input: &str, number: &str, unit: u128, fraction_allowed: bool) -> Result<u128, DurationError> {
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) if fraction_allowed && !f.is_empty() && f.len() <= 9 => (w, f),
        Some(_) => return Err(DurationError::new(input, "bad fraction")),
        None => (number, ""),
    };
    if whole.is_empty() {
        return Err(DurationError::new(input, "expected a number"));
    }
    let whole: u128 = whole.parse().map_err(|_| DurationError::new(input, "number too large"))?;
    let frac_nanos: u128 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().map_err(|_| DurationError::new(input, "bad fraction"))?
    };
    whole
        .checked_mul(unit)
        .and_then(|v| v.checked_add(frac_nanos))
        .ok_or_else(|| DurationError::new(input, "too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Duration {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn simple_units() {
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("1m"), Duration::from_secs(60));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("500us"), Duration::from_micros(500));
        assert_eq!(ok("7ns"), Duration::from_nanos(7));
    }

    #[test]
    fn compounds() {
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h2m3s4ms"), Duration::from_millis(3_723_004));
    }

    #[test]
    fn iso() {
        assert_eq!(ok("PT2S"), Duration::from_secs(2));
        assert_eq!(ok("pt1m30s"), Duration::from_secs(90));
        assert_eq!(ok("PT1H"), Duration::from_secs(3600));
        assert_eq!(ok("PT0.5S"), Duration::from_millis(500));
        assert_eq!(ok("PT1.000000001S"), Duration::new(1, 1));
    }

    #[test]
    fn rejects() {
        for bad in ["", "5", "ms", "5 s", "5sec", "-5s", "1.5s", "PT", "PT1S2M", "PT1.5M", "P1D", "PT.5S", "1x"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn overflow_is_an_error() {
        assert!(parse("99999999999999999999999999999999999999h").is_err());
    }

    #[test]
    fn multi_byte_characters_are_an_error_not_a_panic() {
        for bad in ["1µs", "€5s", "µ", "5€", "PT1€", "PT€S", "p€1s", "1s€", "PT1.€S", "é"] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn a_fraction_that_overflows_is_an_error_not_a_panic() {
        let err = parse("PT340282366920938463463374607431.9S").unwrap_err();
        assert_eq!(err.reason(), "too large");
    }
}
