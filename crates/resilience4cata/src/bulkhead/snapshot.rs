//! The observable state of a bulkhead instance.

use std::sync::Arc;

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
}
