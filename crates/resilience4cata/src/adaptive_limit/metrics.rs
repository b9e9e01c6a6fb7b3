//! Adaptive limit metrics through the `metrics` facade (feature `metrics`): a gauge for the limit,
//! one for the calls in flight, a counter of refusals.

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: updates never allocate.
    AdaptiveLimitMetrics for "adaptive_limit" {
        rejected: counter "rejected_total" => /// A `Rejected` event.
            fn rejected,
        limit: gauge "limit",
        in_flight: gauge "in_flight",
    }
}

impl AdaptiveLimitMetrics {
    /// A call took a slot.
    pub(crate) fn entered(&self) {
        self.in_flight.increment(1.0);
    }

    /// A call gave its slot back.
    pub(crate) fn left(&self) {
        self.in_flight.decrement(1.0);
    }

    /// The limit is now `limit` (also set once when the instance is built).
    pub(crate) fn limit(&self, limit: u32) {
        self.limit.set(f64::from(limit));
    }
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use crate::__private::{AdaptiveLimitConfigBuilder, LimitOutcome, Site, adaptive_limit};
    use crate::clock::ManualClock;
    use crate::registry::Registry;

    #[test]
    fn the_gauges_follow_the_limit_and_the_calls_in_flight() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let clock = ManualClock::new();
        let policy = metrics::with_local_recorder(&recorder, || {
            let registry = Registry::builder().clock(&clock).build().unwrap();
            let site = Site { id: "m::Api::get", name: None, config: None, is_async: false };
            adaptive_limit(&registry, site, AdaptiveLimitConfigBuilder::new().initial_limit(2).max_limit(2)).unwrap()
        });
        // The debugging recorder drains on every snapshot: gauges read back as the change since the
        // last one (or the value set since), counters as the count since.
        let read = || {
            let all = snapshotter.snapshot().into_vec();
            let get = |name: &str| {
                all.iter().find_map(|(key, _, _, value)| {
                    let ours = key.key().labels().any(|l| l.key() == "instance" && l.value() == "m::Api::get");
                    match value {
                        DebugValue::Gauge(v) if ours && key.key().name() == name => Some(v.into_inner()),
                        DebugValue::Counter(n) if ours && key.key().name() == name => Some(*n as f64),
                        _ => None,
                    }
                })
            };
            [
                get("resilience4cata_adaptive_limit_limit"),
                get("resilience4cata_adaptive_limit_in_flight"),
                get("resilience4cata_adaptive_limit_rejected_total"),
            ]
        };
        assert_eq!(read()[0], Some(2.0), "the limit is set when the instance is built");
        let first = policy.acquire().unwrap();
        let second = policy.acquire().unwrap();
        assert!(policy.acquire().is_err());
        assert_eq!(read()[1..], [Some(2.0), Some(1.0)], "two inside, one refused");
        first.finish(LimitOutcome::Dropped); // the limit: 2 → 1
        drop(second); // no sample, but the slot is given back
        assert_eq!(read()[..2], [Some(1.0), Some(-2.0)], "both left");
    }
}
