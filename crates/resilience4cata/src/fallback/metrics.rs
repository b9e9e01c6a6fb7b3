//! Fallback counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

use super::FallbackEvent;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct FallbackMetrics {
    applied: Counter,
}

impl FallbackMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        FallbackMetrics { applied: metrics::counter!("resilience4cata_fallback_applied_total", "instance" => id) }
    }

    pub(crate) fn record(event: &FallbackEvent, metrics: &Self) {
        match event {
            FallbackEvent::Applied { .. } => metrics.applied.increment(1),
        }
    }
}
