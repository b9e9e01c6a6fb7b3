//! Bulkhead counters and gauge through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::{Counter, Gauge};

use super::BulkheadEvent;

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

    pub(crate) fn record(event: &BulkheadEvent, metrics: &Self) {
        match event {
            BulkheadEvent::Permitted { .. } => {
                metrics.permitted.increment(1);
                metrics.in_flight.increment(1.0);
            }
            BulkheadEvent::Rejected { .. } => metrics.rejected.increment(1),
            BulkheadEvent::Finished { .. } => metrics.in_flight.decrement(1.0),
        }
    }
}
