//! Timeout counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    TimeoutMetrics for "timeout" {
        timed_out: counter "timed_out_total",
    }
}

impl TimeoutMetrics {
    /// A `TimedOut` event.
    pub(crate) fn timed_out(&self) {
        self.timed_out.increment(1);
    }
}
