//! Fallback counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct FallbackMetrics {
    applied: Counter,
}

impl FallbackMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        FallbackMetrics { applied: metrics::counter!("resilience4cata_fallback_applied_total", "instance" => id) }
    }

    /// An `Applied` event.
    pub(crate) fn applied(&self) {
        self.applied.increment(1);
    }
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use crate::fallback::policy::FallbackPolicy;
    use crate::registry::Registry;

    #[test]
    fn each_applied_fallback_is_counted_per_instance() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let policy = metrics::with_local_recorder(&recorder, || {
            FallbackPolicy::build(&Registry::builder().build().unwrap(), "m::Prices::price")
        });
        for attempts in 1..=3 {
            let ctx = policy.apply("down", attempts);
            assert_eq!((ctx.attempts(), ctx.instance()), (attempts, "m::Prices::price"));
        }
        let counted: Vec<(String, Vec<String>, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Counter(n) => {
                    let labels = key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
                    Some((key.key().name().to_owned(), labels, n))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            counted,
            [("resilience4cata_fallback_applied_total".to_owned(), vec!["instance=m::Prices::price".to_owned()], 3)]
        );
    }
}
