//! Rate limiter counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

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

    /// A `Permitted` event.
    pub(crate) fn permitted(&self) {
        self.permitted.increment(1);
    }

    /// A `Rejected` event.
    pub(crate) fn rejected(&self) {
        self.rejected.increment(1);
    }
}
