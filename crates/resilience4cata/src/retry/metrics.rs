//! Retry counters through the `metrics` facade (feature `metrics`).

use metrics::Counter;

use super::GiveUpReason;
use crate::metric_handles::MetricLabels;

const REASONS: [(GiveUpReason, &str); 7] = [
    (GiveUpReason::MaxAttempts, "max_attempts"),
    (GiveUpReason::MaxDuration, "max_duration"),
    (GiveUpReason::NotRetryable, "not_retryable"),
    (GiveUpReason::Interrupted, "interrupted"),
    (GiveUpReason::ClassifierFailed, "classifier_failed"),
    (GiveUpReason::BudgetExhausted, "budget_exhausted"),
    (GiveUpReason::Refused, "refused"),
];

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct RetryMetrics {
    retries: Counter,
    gave_up: [Counter; 7],
}

impl RetryMetrics {
    pub(crate) fn register(labels: &MetricLabels) -> Self {
        RetryMetrics {
            retries: metrics::counter!("resilience4cata_retry_retries_total", labels.get()),
            gave_up: REASONS.map(|(_, reason)| {
                metrics::counter!("resilience4cata_retry_gave_up_total", labels.and("reason", reason))
            }),
        }
    }

    /// A `Retrying` event: one more retry.
    pub(crate) fn retrying(&self) {
        self.retries.increment(1);
    }

    /// A `GaveUp` event, counted by reason.
    pub(crate) fn gave_up(&self, reason: GiveUpReason) {
        if let Some(i) = REASONS.iter().position(|(r, _)| *r == reason) {
            self.gave_up[i].increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::__private::{Failure, RetryConfigBuilder, RetryPolicy};
    use crate::clock::ManualClock;
    use crate::metrics_counters::{Counters, recording_on};
    use crate::registry::Registered;

    #[test]
    fn every_reason_has_its_label() {
        assert!(super::REASONS.iter().map(|(r, _)| r).eq(crate::GiveUpReason::ALL));
    }

    #[test]
    fn retries_and_give_ups_are_counted_per_instance_and_reason() {
        let clock = ManualClock::new();
        let (policy, snapshotter) = recording_on(&clock, |registry| {
            let attrs = RetryConfigBuilder::new().max_attempts(3).delay(Duration::from_millis(10));
            RetryPolicy::build(registry, "m::Api::get", None, None, false, attrs).unwrap()
        });
        let mut call = policy.start();
        while policy.retry_after(&mut call, Failure::Retryable) {}
        let mut call = policy.start();
        assert!(!policy.retry_after(&mut call, Failure::NotRetryable));
        for _ in 0..2 {
            let mut call = policy.start();
            assert!(!policy.retry_after(&mut call, Failure::Refused));
        }

        let counters = Counters::of(&snapshotter);
        let instance = "instance=m::Api::get";
        assert_eq!(counters.get("resilience4cata_retry_retries_total", &[instance]), Some(2));
        assert_eq!(counters.get("resilience4cata_retry_gave_up_total", &[instance, "reason=max_attempts"]), Some(1));
        assert_eq!(counters.get("resilience4cata_retry_gave_up_total", &[instance, "reason=not_retryable"]), Some(1));
        assert_eq!(counters.get("resilience4cata_retry_gave_up_total", &[instance, "reason=refused"]), Some(2));
    }
}
