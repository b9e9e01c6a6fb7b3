//! Retry counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

use super::GiveUpReason;

const REASONS: [(GiveUpReason, &str); 6] = [
    (GiveUpReason::MaxAttempts, "max_attempts"),
    (GiveUpReason::MaxDuration, "max_duration"),
    (GiveUpReason::NotRetryable, "not_retryable"),
    (GiveUpReason::Interrupted, "interrupted"),
    (GiveUpReason::ClassifierFailed, "classifier_failed"),
    (GiveUpReason::BudgetExhausted, "budget_exhausted"),
];

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct RetryMetrics {
    retries: Counter,
    gave_up: [Counter; 6],
}

impl RetryMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        RetryMetrics {
            retries: metrics::counter!("resilience4cata_retry_retries_total", "instance" => id.clone()),
            gave_up: REASONS.map(|(_, reason)| {
                metrics::counter!("resilience4cata_retry_gave_up_total", "instance" => id.clone(), "reason" => reason)
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

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use crate::__private::{Failure, RetryConfigBuilder, RetryPolicy};
    use crate::clock::ManualClock;
    use crate::registry::{Registered, Registry};

    #[test]
    fn retries_and_give_ups_are_counted_per_instance_and_reason() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let clock = ManualClock::new();
        let policy = metrics::with_local_recorder(&recorder, || {
            let registry = Registry::builder().clock(&clock).build().unwrap();
            let attrs = RetryConfigBuilder::new().max_attempts(3).delay(Duration::from_millis(10));
            RetryPolicy::build(&registry, "m::Api::get", None, None, false, attrs).unwrap()
        });
        let mut call = policy.start();
        while policy.retry_after(&mut call, Failure::Retryable) {}
        let mut call = policy.start();
        assert!(!policy.retry_after(&mut call, Failure::NotRetryable));

        let counters: Vec<(String, Vec<String>, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Counter(n) if n > 0 => {
                    let labels = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
                    Some((key.key().name().to_owned(), labels, n))
                }
                _ => None,
            })
            .collect();
        let find = |name: &str, reason: Option<&str>| {
            counters
                .iter()
                .find(|(n, labels, _)| {
                    n == name
                        && labels.contains(&"instance=m::Api::get".to_owned())
                        && reason.is_none_or(|r| labels.contains(&format!("reason={r}")))
                })
                .map(|c| c.2)
        };
        assert_eq!(find("resilience4cata_retry_retries_total", None), Some(2));
        assert_eq!(find("resilience4cata_retry_gave_up_total", Some("max_attempts")), Some(1));
        assert_eq!(find("resilience4cata_retry_gave_up_total", Some("not_retryable")), Some(1));
    }
}
