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
    /// For a duration written with spaces inside: the two pieces around the first space, and the
    /// input without its spaces, which parses.
    space: Option<Space>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Space {
    before: String,
    after: String,
    fix: String,
}

impl DurationError {
    fn new(input: &str, reason: &'static str) -> Self {
        DurationError { input: input.to_owned(), reason, space: None }
    }

    /// What is wrong with the input, in a few words.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The input as it must be written, when the grammar can tell: a duration written with spaces
    /// inside (`"100 ms"`, `"1m 30s"`), which the grammar does not allow, is the same without them.
    ///
    /// ```
    /// use resilience4cata_duration::parse;
    ///
    /// let err = parse("100 ms").unwrap_err();
    /// assert_eq!(err.suggestion(), Some("100ms"));
    /// assert_eq!(err.to_string(), r#"`100 ms` is not a duration (a space between 100 and ms); write "100ms""#);
    /// assert_eq!(parse("10 parsecs").unwrap_err().suggestion(), None); // not a unit either way
    /// ```
    pub fn suggestion(&self) -> Option<&str> {
        self.space.as_ref().map(|space| space.fix.as_str())
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(Space { before, after, fix }) = &self.space {
            return write!(
                f,
                "`{}` is not a duration (a space between {before} and {after}); write \"{fix}\"",
                self.input
            );
        }
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
    if s.contains(|c: char| c.is_ascii_whitespace()) {
        return Err(spaced(input, s));
    }
    match s.get(..2) {
        Some(prefix) if s.len() > 2 && prefix.eq_ignore_ascii_case("PT") => parse_iso(input, &s[2..]),
        _ => parse_groups(input, s),
    }
}

/// The error for `s` (trimmed, ASCII) with spaces inside, which the grammar never allows: when
/// `s` without its spaces is a duration (`"100 ms"`, `"1m 30s"`, `"PT 2S"`), the message names the
/// pieces around the first space and the fix; otherwise it says what is wrong with that
/// (`"10 parsecs"`: an unknown unit), which is the mistake left once the spaces are gone.
fn spaced(input: &str, s: &str) -> DurationError {
    let compact: String = s.split_ascii_whitespace().collect();
    if let Err(mut error) = parse(&compact) {
        error.input = input.to_owned();
        return error;
    }
    let mut pieces = s.split_ascii_whitespace();
    let (before, after) = (pieces.next().unwrap_or_default(), pieces.next().unwrap_or_default());
    let between_number_and_unit =
        before.ends_with(|c: char| c.is_ascii_digit()) && after.starts_with(|c: char| c.is_ascii_alphabetic());
    let reason = match between_number_and_unit {
        true => "space between number and unit",
        false => "space inside",
    };
    let space = Space { before: before.to_owned(), after: after.to_owned(), fix: compact };
    DurationError { input: input.to_owned(), reason, space: Some(space) }
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
    fn a_space_inside_says_where_and_how_to_write_it() {
        let err = parse("100 ms").unwrap_err();
        assert_eq!(err.reason(), "space between number and unit");
        assert_eq!(err.suggestion(), Some("100ms"));
        assert_eq!(err.to_string(), r#"`100 ms` is not a duration (a space between 100 and ms); write "100ms""#);
        // Between groups, several spaces, a tab, ISO-8601: the first space is named, all go.
        let err = parse("1m  30s").unwrap_err();
        assert_eq!((err.reason(), err.suggestion()), ("space inside", Some("1m30s")));
        assert_eq!(err.to_string(), r#"`1m  30s` is not a duration (a space between 1m and 30s); write "1m30s""#);
        assert_eq!(parse("1 m 30 s").unwrap_err().suggestion(), Some("1m30s"));
        assert_eq!(parse("250\tms").unwrap_err().suggestion(), Some("250ms"));
        assert_eq!(parse("PT 2S").unwrap_err().suggestion(), Some("PT2S"));
        // Spaces around the whole duration are not inside it.
        assert_eq!(ok(" 100ms "), Duration::from_millis(100));
    }

    #[test]
    fn with_spaces_and_another_mistake_the_other_mistake_is_named() {
        // Without its space `10 parsecs` is still no duration: it says why, as `10parsecs` would
        // (not "missing unit", which it said before: the space ended the number's unit).
        let err = parse("10 parsecs").unwrap_err();
        assert_eq!((err.reason(), err.suggestion()), ("unknown unit", None));
        assert!(err.to_string().starts_with("`10 parsecs` is not a duration (unknown unit); write \"0\""), "{err}");
        assert_eq!(parse("5 sec").unwrap_err().reason(), "unknown unit");
        assert_eq!(parse("1 .5s").unwrap_err().reason(), "missing unit", "as `1.5s` says");
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

/// The crate's README, whose example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
