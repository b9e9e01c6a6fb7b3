//! Timeout counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct TimeoutMetrics {
    timed_out: Counter,
}

impl TimeoutMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        TimeoutMetrics { timed_out: metrics::counter!("resilience4cata_timeout_timed_out_total", "instance" => id) }
    }

    /// A `TimedOut` event.
    pub(crate) fn timed_out(&self) {
        self.timed_out.increment(1);
    }
}
