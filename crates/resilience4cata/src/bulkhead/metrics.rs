//! Bulkhead counters and gauge through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: updates never allocate.
    BulkheadMetrics for "bulkhead" {
        permitted: counter "permitted_total",
        rejected: counter "rejected_total" => /// A `Rejected` event.
            fn rejected,
        in_flight: gauge "in_flight",
    }
}

impl BulkheadMetrics {
    /// A `Permitted` event: one more call inside.
    pub(crate) fn permitted(&self) {
        self.permitted.increment(1);
        self.in_flight.increment(1.0);
    }

    /// A `Finished` event: one call fewer inside.
    pub(crate) fn finished(&self) {
        self.in_flight.decrement(1.0);
    }
}
