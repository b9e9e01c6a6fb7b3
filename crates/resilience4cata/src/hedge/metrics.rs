//! Hedge counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    HedgeMetrics for "hedge" {
        hedged: counter "attempts_total" => /// A `Hedged` event.
            fn hedged,
        won: counter "wins_total",
        all_failed: counter "all_failed_total",
    }
}

impl HedgeMetrics {
    /// A `Finished` event: won by an extra attempt, by the first, or by none.
    pub(crate) fn finished(&self, winner: Option<u32>) {
        match winner {
            Some(n) if n > 1 => self.won.increment(1),
            Some(_) => {}
            None => self.all_failed.increment(1),
        }
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
    fn extra_attempts_wins_and_calls_that_all_failed_are_counted_per_instance() {
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
        let instance = ["instance=m::Api::get"];
        assert_eq!(counters.get("resilience4cata_hedge_attempts_total", &instance), Some(4));
        assert_eq!(counters.get("resilience4cata_hedge_wins_total", &instance), Some(1));
        assert_eq!(counters.get("resilience4cata_hedge_all_failed_total", &instance), Some(1));
    }
}
