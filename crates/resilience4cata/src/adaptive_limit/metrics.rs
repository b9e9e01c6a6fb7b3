//! Adaptive limit metrics through the `metrics` facade (feature `metrics`): a gauge for the limit,
//! one for the calls in flight, a counter of refusals.

use std::sync::Arc;

use metrics::{Counter, Gauge};

/// One instance's handles: updates never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct AdaptiveLimitMetrics {
    rejected: Counter,
    limit: Gauge,
    in_flight: Gauge,
}

impl AdaptiveLimitMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        AdaptiveLimitMetrics {
            rejected: metrics::counter!("resilience4cata_adaptive_limit_rejected_total", "instance" => id.clone()),
            limit: metrics::gauge!("resilience4cata_adaptive_limit_limit", "instance" => id.clone()),
            in_flight: metrics::gauge!("resilience4cata_adaptive_limit_in_flight", "instance" => id),
        }
    }

    /// A call took a slot.
    pub(crate) fn entered(&self) {
        self.in_flight.increment(1.0);
    }

    /// A call gave its slot back.
    pub(crate) fn left(&self) {
        self.in_flight.decrement(1.0);
    }

    /// The limit is now `limit` (also set once when the instance is built).
    pub(crate) fn limit(&self, limit: u32) {
        self.limit.set(f64::from(limit));
    }

    /// A `Rejected` event.
    pub(crate) fn rejected(&self) {
        self.rejected.increment(1);
    }
}
