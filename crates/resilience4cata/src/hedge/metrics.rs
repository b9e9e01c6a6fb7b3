//! Hedge counters through the `metrics` facade (feature `metrics`): the names the admin's
//! `/metrics` uses too (docs/metrics.md).

use metrics::Counter;

use crate::metric_handles::MetricLabels;

/// The `outcome` label of `resilience4cata_hedge_hedged_calls_total`, by how a hedged call ended.
const OUTCOMES: [&str; 3] = ["won_by_extra", "won_by_first", "all_failed"];

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct HedgeMetrics {
    extra_attempts: Counter,
    hedged_calls: [Counter; 3],
}

impl HedgeMetrics {
    pub(crate) fn register(labels: &MetricLabels) -> Self {
        HedgeMetrics {
            extra_attempts: metrics::counter!("resilience4cata_hedge_extra_attempts_total", labels.get()),
            hedged_calls: OUTCOMES.map(|outcome| {
                metrics::counter!("resilience4cata_hedge_hedged_calls_total", labels.and("outcome", outcome))
            }),
        }
    }

    /// A `Hedged` event: one more attempt started.
    pub(crate) fn hedged(&self) {
        self.extra_attempts.increment(1);
    }

    /// A `Finished` event: won by an extra attempt, by the first, or by none.
    pub(crate) fn finished(&self, winner: Option<u32>) {
        let outcome = match winner {
            Some(n) if n > 1 => 0,
            Some(_) => 1,
            None => 2,
        };
        self.hedged_calls[outcome].increment(1);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::__private::{HedgeConfigBuilder, HedgePolicy};
    use crate::clock::ManualClock;
    use crate::metrics_counters::{Counters, recording_on};
    use crate::registry::Registered;

    #[test]
    fn extra_attempts_and_hedged_calls_by_outcome_are_counted_per_instance() {
        let clock = ManualClock::new();
        let (policy, snapshotter) = recording_on(&clock, |registry| {
            let attrs = HedgeConfigBuilder::new().delay(Duration::ZERO).max_hedged_attempts(2);
            HedgePolicy::build(registry, "m::Api::get", None, None, true, attrs).unwrap()
        });
        // Zero delay: three attempts at once; the third answers first. Then a call where all fail.
        let mut n = 0;
        let won = testkit::block_on(policy.run(
            || {
                n += 1;
                let (clock, wait) = (clock.clone(), Duration::from_millis(40 - 10 * n));
                async move {
                    clock.sleep(wait).await;
                    Ok::<u64, ()>(n)
                }
            },
            |_| false,
        ));
        assert_eq!(won, Ok(3));
        let failed = testkit::block_on(policy.run(|| async { Err::<u64, ()>(()) }, |_| false));
        assert_eq!(failed, Err(()));

        let counters = Counters::of(&snapshotter);
        let instance = "instance=m::Api::get";
        let calls = |outcome| counters.get("resilience4cata_hedge_hedged_calls_total", &[instance, outcome]);
        assert_eq!(counters.get("resilience4cata_hedge_extra_attempts_total", &[instance]), Some(4));
        assert_eq!(calls("outcome=won_by_extra"), Some(1));
        assert_eq!(calls("outcome=all_failed"), Some(1));
        assert_eq!(calls("outcome=won_by_first"), None, "no call won by its first attempt");
    }
}
