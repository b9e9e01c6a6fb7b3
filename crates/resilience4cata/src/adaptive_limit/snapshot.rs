//! The observable state of an adaptive limit instance.

use std::sync::Arc;

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
}
