//! Rate limiter counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    RateLimiterMetrics for "rate_limiter" {
        permitted: counter "permitted_total",
        rejected: counter "rejected_total",
    }
}

impl RateLimiterMetrics {
    /// A `Permitted` event.
    pub(crate) fn permitted(&self) {
        self.permitted.increment(1);
    }

    /// A `Rejected` event.
    pub(crate) fn rejected(&self) {
        self.rejected.increment(1);
    }
}
