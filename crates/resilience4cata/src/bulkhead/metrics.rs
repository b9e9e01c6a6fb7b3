//! Bulkhead counters and gauge through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::{Counter, Gauge};

/// One instance's handles: updates never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct BulkheadMetrics {
    permitted: Counter,
    rejected: Counter,
    in_flight: Gauge,
}

impl BulkheadMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        BulkheadMetrics {
            permitted: metrics::counter!("resilience4cata_bulkhead_permitted_total", "instance" => id.clone()),
            rejected: metrics::counter!("resilience4cata_bulkhead_rejected_total", "instance" => id.clone()),
            in_flight: metrics::gauge!("resilience4cata_bulkhead_in_flight", "instance" => id),
        }
    }

    /// A `Permitted` event: one more call inside.
    pub(crate) fn permitted(&self) {
        self.permitted.increment(1);
        self.in_flight.increment(1.0);
    }

    /// A `Rejected` event.
    pub(crate) fn rejected(&self) {
        self.rejected.increment(1);
    }

    /// A `Finished` event: one call fewer inside.
    pub(crate) fn finished(&self) {
        self.in_flight.decrement(1.0);
    }
}
