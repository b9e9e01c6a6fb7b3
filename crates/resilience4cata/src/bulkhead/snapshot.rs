//! The observable state of a bulkhead instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::BulkheadConfig;

/// One bulkhead instance as `registry.snapshot().bulkheads()` and its handle list it.
///
/// ```
/// use resilience4cata::bulkhead::BulkheadSnapshot;
///
/// fn report(s: &BulkheadSnapshot) -> String {
///     format!("{}: {} inside, {} free, {} waiting", s.instance, s.in_flight, s.available, s.waiting)
/// }
/// # let _ = report;
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BulkheadSnapshot {
    /// The instance id.
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: BulkheadConfig,
    /// Slots taken (including one just handed to a waiter that has not resumed yet).
    pub in_flight: u32,
    /// Slots free: `max_concurrent_calls − in_flight`.
    pub available: u32,
    /// Calls waiting for a slot.
    pub waiting: u32,
    /// Keys a keyed instance (SPEC §15) holds now (0 when unkeyed).
    pub keys: u32,
    /// Keys a keyed instance forgot at rest to make room for new ones.
    pub evicted: u64,
    /// New keys a keyed instance refused with `Rejection::KeysExhausted`.
    pub keys_exhausted: u64,
}

const IN_FLIGHT: Series = Series::gauge("bulkhead_in_flight", "slots taken");
const AVAILABLE: Series = Series::gauge("bulkhead_available", "slots free");
const WAITING: Series = Series::gauge("bulkhead_waiting", "calls waiting for a slot");
const MAX: Series = Series::gauge("bulkhead_max_concurrent_calls", "slots in all (the limit)");

impl crate::readings::Readings for BulkheadSnapshot {
    const SERIES: &'static [Series] = &[IN_FLIGHT, AVAILABLE, WAITING, MAX];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        out(Reading::new(&IN_FLIGHT, f64::from(self.in_flight)));
        out(Reading::new(&AVAILABLE, f64::from(self.available)));
        out(Reading::new(&WAITING, f64::from(self.waiting)));
        out(Reading::new(&MAX, f64::from(self.config.max_concurrent_calls)));
    }
}
