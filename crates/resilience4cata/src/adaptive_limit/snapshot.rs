//! The observable state of an adaptive limit instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::AdaptiveLimitConfig;

/// One adaptive limit instance as `registry.snapshot().adaptive_limits()` and its handle list it.
///
/// ```
/// use resilience4cata::adaptive_limit::AdaptiveLimitSnapshot;
///
/// fn report(s: &AdaptiveLimitSnapshot) -> String {
///     format!("{}: {} of {} in flight", s.instance, s.in_flight, s.limit)
/// }
/// # let _ = report;
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct AdaptiveLimitSnapshot {
    /// The instance id.
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: AdaptiveLimitConfig,
    /// The current limit.
    pub limit: u32,
    /// Calls holding a slot now.
    pub in_flight: u32,
    /// Calls waiting for a slot (only with `max_wait > 0`).
    pub waiting: u32,
    /// Keys a keyed instance (SPEC §15) holds now (0 when unkeyed).
    pub keys: u32,
    /// Keys a keyed instance forgot at rest to make room for new ones.
    pub evicted: u64,
    /// New keys a keyed instance refused with `Rejection::KeysExhausted`.
    pub keys_exhausted: u64,
}

const LIMIT: Series = Series::gauge("adaptive_limit_limit", "the adaptive limit's current concurrency limit");
const IN_FLIGHT: Series = Series::gauge("adaptive_limit_in_flight", "calls holding a slot of the adaptive limit");
const WAITING: Series = Series::gauge("adaptive_limit_waiting", "calls waiting for a slot of the adaptive limit");

impl crate::readings::Readings for AdaptiveLimitSnapshot {
    const SERIES: &'static [Series] = &[LIMIT, IN_FLIGHT, WAITING];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        out(Reading::new(&LIMIT, f64::from(self.limit)));
        out(Reading::new(&IN_FLIGHT, f64::from(self.in_flight)));
        out(Reading::new(&WAITING, f64::from(self.waiting)));
    }
}
