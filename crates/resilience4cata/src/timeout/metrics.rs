//! Timeout counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    TimeoutMetrics for "timeout" {
        timed_out: counter "timed_out_total" => /// A `TimedOut` event.
            fn timed_out,
    }
}
