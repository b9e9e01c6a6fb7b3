//! How durations are written when snapshots, configs and events are serialized (feature `serde`):
//! a number of milliseconds, fractional when the duration is not a whole number of them
//! (`1.5` for 1500 µs), and `null` for an unset optional duration. One number is what a
//! dashboard, `jq` or a spreadsheet reads without knowing the duration grammar.

use std::time::Duration;

use serde::Serializer;

/// Writes `d` as milliseconds: an integer when exact, a float otherwise.
pub(crate) fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    let nanos = d.as_nanos();
    if nanos % 1_000_000 == 0 && u64::try_from(nanos / 1_000_000).is_ok() {
        s.serialize_u64((nanos / 1_000_000) as u64)
    } else {
        s.serialize_f64(d.as_secs_f64() * 1_000.0)
    }
}

/// Writes `Some(d)` as [`duration`] does, `None` as `null`.
pub(crate) fn option<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => duration(d, s),
        None => s.serialize_none(),
    }
}
