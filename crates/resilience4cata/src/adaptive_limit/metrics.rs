//! Adaptive limit metrics through the `metrics` facade (feature `metrics`): a gauge for the limit,
//! one for the calls in flight, a counter of refusals.

use std::sync::Arc;

use metrics::{Counter, Gauge};

use super::AdaptiveLimitEvent;

/// The per-event handles of one instance: updates never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct AdaptiveLimitMetrics {
    rejected: Counter,
}

impl AdaptiveLimitMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        AdaptiveLimitMetrics {
            rejected: metrics::counter!("resilience4cata_adaptive_limit_rejected_total", "instance" => id),
        }
    }

    pub(crate) fn record(event: &AdaptiveLimitEvent, metrics: &Self) {
        if let AdaptiveLimitEvent::Rejected { .. } = event {
            metrics.rejected.increment(1);
        }
    }
}

/// The gauges the instance moves itself: the limit on every change, in-flight on every call.
pub(crate) struct Gauges {
    pub(crate) limit: Gauge,
    pub(crate) in_flight: Gauge,
}

impl Gauges {
    pub(crate) fn register(instance: &Arc<str>, initial_limit: u32) -> Self {
        let id = instance.to_string();
        let limit = metrics::gauge!("resilience4cata_adaptive_limit_limit", "instance" => id.clone());
        limit.set(f64::from(initial_limit));
        Gauges { limit, in_flight: metrics::gauge!("resilience4cata_adaptive_limit_in_flight", "instance" => id) }
    }
}
