//! Circuit breaker counters through the `metrics` facade (feature `metrics`).

use metrics::Counter;

use super::State;
use super::snapshot::STATES;
use crate::metric_handles::MetricLabels;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct CircuitBreakerMetrics {
    successes: Counter,
    failures: Counter,
    ignored: Counter,
    not_permitted: Counter,
    slow: Counter,
    transitions: [Counter; 5],
}

impl CircuitBreakerMetrics {
    pub(crate) fn register(labels: &MetricLabels) -> Self {
        let calls =
            |outcome| metrics::counter!("resilience4cata_circuit_breaker_calls_total", labels.and("outcome", outcome));
        CircuitBreakerMetrics {
            successes: calls("success"),
            failures: calls("failure"),
            ignored: calls("ignored"),
            not_permitted: calls("not_permitted"),
            slow: metrics::counter!("resilience4cata_circuit_breaker_slow_calls_total", labels.get()),
            transitions: STATES.map(|(_, to)| {
                metrics::counter!("resilience4cata_circuit_breaker_transitions_total", labels.and("to", to))
            }),
        }
    }

    /// A `Success` or `Failure` event.
    pub(crate) fn recorded(&self, failed: bool, slow: bool) {
        self.count(if failed { &self.failures } else { &self.successes }, slow);
    }

    /// An `Ignored` event.
    pub(crate) fn ignored(&self) {
        self.ignored.increment(1);
    }

    /// A `CallNotPermitted` event.
    pub(crate) fn not_permitted(&self) {
        self.not_permitted.increment(1);
    }

    /// A `StateTransition` event, counted by the state entered.
    pub(crate) fn transition(&self, to: State) {
        if let Some(i) = STATES.iter().position(|(s, _)| *s == to) {
            self.transitions[i].increment(1);
        }
    }

    fn count(&self, calls: &Counter, slow: bool) {
        calls.increment(1);
        if slow {
            self.slow.increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::__private::{CircuitBreakerConfigBuilder, Outcome, Site, circuit_breaker};
    use crate::clock::ManualClock;
    use crate::metrics_counters::{Counters, recording_on};

    #[test]
    fn outcomes_refusals_and_transitions_are_counted_per_instance() {
        let clock = ManualClock::new();
        let (policy, snapshotter) = recording_on(&clock, |registry| {
            let site = Site { id: "m::Api::get", name: None, config: None, is_async: false };
            circuit_breaker(registry, site, CircuitBreakerConfigBuilder::new().window_size(2)).unwrap()
        });
        policy.acquire().unwrap().record(Outcome::Success);
        policy.acquire().unwrap().record(Outcome::Failure); // 1 of 2: opens
        assert!(policy.acquire().is_err());

        let counters = Counters::of(&snapshotter);
        let find = |name: &str, label: &str| counters.get(name, &["instance=m::Api::get", label]);
        let calls = "resilience4cata_circuit_breaker_calls_total";
        assert_eq!(find(calls, "outcome=success"), Some(1));
        assert_eq!(find(calls, "outcome=failure"), Some(1));
        assert_eq!(find(calls, "outcome=not_permitted"), Some(1));
        assert_eq!(find("resilience4cata_circuit_breaker_transitions_total", "to=open"), Some(1));
    }
}
