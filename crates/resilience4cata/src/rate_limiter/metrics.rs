//! Rate limiter counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    RateLimiterMetrics for "rate_limiter" {
        permitted: counter "permitted_total" => /// A `Permitted` event.
            fn permitted,
        rejected: counter "rejected_total" => /// A `Rejected` event.
            fn rejected,
    }
}
