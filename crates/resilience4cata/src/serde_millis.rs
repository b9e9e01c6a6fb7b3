//! How durations are written when snapshots, configs and events are serialized (feature `serde`):
//! a number of milliseconds, fractional when the duration is not a whole number of them
//! (`1.5` for 1500 µs), and `null` for an unset optional duration. One number is what a
//! dashboard, `jq` or a spreadsheet reads without knowing the duration grammar.

use std::time::Duration;

use serde::Serializer;

/// Writes `d` as milliseconds: an integer when exact, a float otherwise.
pub(crate) fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    let whole_ms = d.subsec_nanos().is_multiple_of(1_000_000);
    match u64::try_from(d.as_millis()) {
        Ok(ms) if whole_ms => s.serialize_u64(ms),
        _ => s.serialize_f64(d.as_secs_f64() * 1_000.0),
    }
}

/// Writes `Some(d)` as [`duration`] does, `None` as `null`.
pub(crate) fn option<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => duration(d, s),
        None => s.serialize_none(),
    }
}
