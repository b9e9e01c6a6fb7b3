//! Rate limiter counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

use super::RateLimiterEvent;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct RateLimiterMetrics {
    permitted: Counter,
    rejected: Counter,
}

impl RateLimiterMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        RateLimiterMetrics {
            permitted: metrics::counter!("resilience4cata_rate_limiter_permitted_total", "instance" => id.clone()),
            rejected: metrics::counter!("resilience4cata_rate_limiter_rejected_total", "instance" => id),
        }
    }

    pub(crate) fn record(event: &RateLimiterEvent, metrics: &Self) {
        match event {
            RateLimiterEvent::Permitted { .. } => metrics.permitted.increment(1),
            RateLimiterEvent::Rejected { .. } => metrics.rejected.increment(1),
        }
    }
}
