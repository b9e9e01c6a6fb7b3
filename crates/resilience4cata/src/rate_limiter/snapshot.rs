//! The observable state of a rate limiter instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::RateLimiterConfig;

/// One rate limiter instance as `registry.snapshot().rate_limiters()` and its handle list it.
///
/// ```
/// use resilience4cata::rate_limiter::RateLimiterSnapshot;
///
/// fn report(s: &RateLimiterSnapshot) -> String {
///     format!("{}: {} of {} permits free", s.instance, s.available_permits, s.config.permits)
/// }
/// # let _ = report;
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RateLimiterSnapshot {
    /// The instance id.
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: RateLimiterConfig,
    /// Calls that could pass right now without waiting (0 while callers wait for reserved permits).
    pub available_permits: u32,
    /// Keys a keyed instance (SPEC §15) holds now (0 when unkeyed).
    pub keys: u32,
    /// Keys a keyed instance forgot at rest to make room for new ones.
    pub evicted: u64,
    /// New keys a keyed instance refused with `Rejection::KeysExhausted`.
    pub keys_exhausted: u64,
}

const AVAILABLE: Series = Series::gauge("rate_limiter_available_permits", "calls that could pass right now");
const PERMITS: Series = Series::gauge("rate_limiter_permits", "permits per period (the limit)");

impl crate::readings::Readings for RateLimiterSnapshot {
    const SERIES: &'static [Series] = &[AVAILABLE, PERMITS];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        out(Reading::new(&AVAILABLE, f64::from(self.available_permits)));
        out(Reading::new(&PERMITS, f64::from(self.config.permits)));
    }
}
