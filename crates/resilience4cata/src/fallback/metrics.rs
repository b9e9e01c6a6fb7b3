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
    use crate::fallback::policy::FallbackPolicy;
    use crate::metrics_counters::{Counters, recording};
    use crate::registry::Registry;

    #[test]
    fn each_applied_fallback_is_counted_per_instance() {
        let (policy, snapshotter) =
            recording(|| FallbackPolicy::build(&Registry::builder().build().unwrap(), "m::Prices::price"));
        for attempts in 1..=3 {
            let ctx = policy.apply("down", attempts);
            assert_eq!((ctx.attempts(), ctx.instance()), (attempts, "m::Prices::price"));
        }
        let counters = Counters::of(&snapshotter);
        assert_eq!(counters.get("resilience4cata_fallback_applied_total", &["instance=m::Prices::price"]), Some(3));
    }
}
