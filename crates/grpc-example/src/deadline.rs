//! The `grpc-timeout` request header: how a gRPC client tells the server its deadline.
//!
//! The value is at most eight ASCII digits and one unit: `H` hours, `M` minutes, `S` seconds,
//! `m` milliseconds, `u` microseconds, `n` nanoseconds. [`encode`] writes the coarsest unit that
//! states the duration exactly in eight digits (`200ms` is `200m`), else the finest unit that
//! fits, rounded up (a server may then allow a hair more, never less, than the client waits).

use std::time::Duration;

use http::HeaderValue;

/// The header's name.
pub const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The largest value the header can carry: eight digits.
const MAX_VALUE: u128 = 99_999_999;

/// Units, coarsest first, with their length in nanoseconds.
const UNITS: [(char, u128); 6] =
    [('H', 3_600_000_000_000), ('M', 60_000_000_000), ('S', 1_000_000_000), ('m', 1_000_000), ('u', 1_000), ('n', 1)];

/// The header value for `timeout`.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata_grpc_example::deadline::encode;
///
/// assert_eq!(encode(Duration::from_millis(200)), "200m");
/// assert_eq!(encode(Duration::from_secs(120)), "2M");
/// assert_eq!(encode(Duration::from_nanos(1_500)), "1500n");
/// ```
pub fn encode(timeout: Duration) -> HeaderValue {
    let nanos = timeout.as_nanos();
    let exact = UNITS.iter().find(|(_, len)| nanos.is_multiple_of(*len) && nanos / len <= MAX_VALUE);
    let (unit, value) = match exact {
        Some(&(unit, len)) => (unit, nanos / len),
        None => {
            let &(unit, len) =
                UNITS.iter().rev().find(|(_, len)| nanos.div_ceil(*len) <= MAX_VALUE).unwrap_or(&UNITS[0]);
            (unit, nanos.div_ceil(len).min(MAX_VALUE))
        }
    };
    HeaderValue::from_str(&format!("{value}{unit}")).expect("digits and a unit letter are a valid header value")
}

/// The duration a header value states, or `None` when it is malformed.
///
/// ```
/// use std::time::Duration;
/// use http::HeaderValue;
/// use resilience4cata_grpc_example::deadline::parse;
///
/// assert_eq!(parse(&HeaderValue::from_static("200m")), Some(Duration::from_millis(200)));
/// assert_eq!(parse(&HeaderValue::from_static("1H")), Some(Duration::from_secs(3600)));
/// assert_eq!(parse(&HeaderValue::from_static("123456789S")), None); // nine digits
/// ```
pub fn parse(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?;
    let unit = text.chars().last()?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (_, len) = UNITS.iter().find(|(u, _)| *u == unit)?;
    let nanos = digits.parse::<u128>().ok()? * len;
    Some(Duration::from_nanos(u64::try_from(nanos).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_durations_take_the_coarsest_unit() {
        assert_eq!(encode(Duration::from_secs(7200)), "2H");
        assert_eq!(encode(Duration::from_secs(90)), "90S");
        assert_eq!(encode(Duration::from_millis(1500)), "1500m");
        assert_eq!(encode(Duration::from_micros(1)), "1u");
        assert_eq!(encode(Duration::ZERO), "0H");
    }

    #[test]
    fn inexact_durations_round_up_in_the_finest_unit_that_fits() {
        // 1.000000001 s: nine digits of nanoseconds, so microseconds, rounded up.
        assert_eq!(encode(Duration::new(1, 1)), "1000001u");
        // Too long for eight digits of hours: capped.
        assert_eq!(encode(Duration::from_secs(u64::MAX)), "99999999H");
    }

    #[test]
    fn encode_and_parse_round_trip() {
        for d in [Duration::from_millis(200), Duration::from_secs(3), Duration::from_nanos(77), Duration::new(5, 123)] {
            let parsed = parse(&encode(d)).unwrap();
            assert!(parsed >= d && parsed - d < Duration::from_micros(1), "{d:?} -> {parsed:?}");
        }
    }

    #[test]
    fn malformed_values_are_none() {
        for bad in ["", "m", "12", "12x", "-1m", "1.5S", "123456789n"] {
            assert_eq!(parse(&HeaderValue::from_str(bad).unwrap()), None, "{bad:?}");
        }
    }
}
