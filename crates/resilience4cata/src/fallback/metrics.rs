//! Fallback counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    FallbackMetrics for "fallback" {
        applied: counter "applied_total" => /// An `Applied` event.
            fn applied,
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
            recording(|| FallbackPolicy::build(Registry::builder().build().unwrap().inner(), "m::Prices::price"));
        for attempts in 1..=3 {
            let ctx = policy.apply("down", attempts);
            assert_eq!((ctx.attempts(), ctx.instance()), (attempts, "m::Prices::price"));
        }
        let counters = Counters::of(&snapshotter);
        assert_eq!(counters.get("resilience4cata_fallback_applied_total", &["instance=m::Prices::price"]), Some(3));
    }
}
