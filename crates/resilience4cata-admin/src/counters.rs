//! What the admin counts from events since it started: retries and give-ups per retry instance,
//! hedged calls by outcome, fallback applications and adaptive-limit moves and refusals (shown by
//! `/counters` and the page), and for `/metrics` alone the breaker's calls by outcome and its
//! transitions, and the permits and refusals of rate limiters and bulkheads: the counters the
//! runtime's `metrics` feature keeps under the same names (docs/metrics.md). The registry's
//! snapshot carries none of these since-the-admin-started figures (a retry or a fallback keeps no
//! counters of its own; a hedge's snapshot counts since it was built).

use std::collections::BTreeMap;
use std::sync::Mutex;

use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
use resilience4cata::bulkhead::BulkheadEvent;
use resilience4cata::circuit_breaker::CircuitBreakerEvent;
use resilience4cata::events::AnyEvent;
use resilience4cata::fallback::FallbackEvent;
use resilience4cata::hedge::HedgeEvent;
use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::{GiveUpReason, RegistrySnapshot, RetryEvent};
use serde::Serialize;

use crate::changes::{ConfigChanges, now_millis};

/// One retry instance's counts since the admin started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct RetryCounts {
    /// `Retrying` events: waits before another attempt.
    pub(crate) retries: u64,
    /// `GaveUp` events by reason (`"MaxAttempts"`, `"Refused"`, …).
    pub(crate) gave_up: BTreeMap<String, u64>,
}

/// One hedge instance's counts since the admin started. Calls answered by their first attempt
/// alone publish nothing, so they are not counted here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct HedgeCounts {
    /// `Finished` events: calls that started at least one extra attempt and ended with a result.
    pub(crate) hedged_calls: u64,
    /// `Hedged` events: extra attempts started.
    pub(crate) extra_attempts: u64,
    /// Hedged calls whose `Ok` came from an extra attempt (`winner` 2 or later).
    pub(crate) won_by_extra: u64,
    /// Hedged calls whose first attempt's `Ok` was returned after all.
    pub(crate) won_by_first: u64,
    /// Hedged calls in which every attempt failed (`winner` is `None`).
    pub(crate) all_failed: u64,
}

/// One fallback instance's counts since the admin started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct FallbackCounts {
    /// `Applied` events: calls answered by the fallback.
    pub(crate) applied: u64,
}

/// One adaptive limit's counts since the admin started (its current limit, in-flight and waiting
/// calls are in the snapshot).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct AdaptiveLimitCounts {
    /// `LimitChanged` events with a higher limit.
    pub(crate) increases: u64,
    /// `LimitChanged` events with a lower limit.
    pub(crate) decreases: u64,
    /// `Rejected` events: calls refused at the limit.
    pub(crate) rejected: u64,
}

/// The `outcome` label of `resilience4cata_circuit_breaker_calls_total`, in the order of
/// [`CircuitBreakerCounts::calls`].
pub(crate) const CALL_OUTCOMES: [&str; 4] = ["success", "failure", "ignored", "not_permitted"];

/// The `to` label of `resilience4cata_circuit_breaker_transitions_total`, in the order of
/// [`CircuitBreakerCounts::transitions`]: the `State` names in snake case.
pub(crate) const STATES: [&str; 5] = ["closed", "open", "half_open", "forced_open", "disabled"];

/// One breaker's counts since the admin started (for `/metrics` only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CircuitBreakerCounts {
    /// Calls by outcome, in the order of [`CALL_OUTCOMES`].
    pub(crate) calls: [u64; 4],
    /// Calls recorded as slow (successes and failures).
    pub(crate) slow: u64,
    /// Transitions by the state entered, in the order of [`STATES`].
    pub(crate) transitions: [u64; 5],
}

/// One rate limiter's or bulkhead's permits and refusals since the admin started (for `/metrics`
/// only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PermitCounts {
    /// `Permitted` events.
    pub(crate) permitted: u64,
    /// `Rejected` events.
    pub(crate) rejected: u64,
}

/// Every count, by instance id; `events_lost` says how many events the counting subscription
/// missed (the counts are then lower bounds). The breakers', rate limiters' and bulkheads' counts
/// are not part of `/counters` (its JSON is unchanged); `/metrics` exports them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) retries: BTreeMap<String, RetryCounts>,
    pub(crate) hedges: BTreeMap<String, HedgeCounts>,
    pub(crate) fallbacks: BTreeMap<String, FallbackCounts>,
    pub(crate) adaptive_limits: BTreeMap<String, AdaptiveLimitCounts>,
    #[serde(skip)]
    pub(crate) circuit_breakers: BTreeMap<String, CircuitBreakerCounts>,
    #[serde(skip)]
    pub(crate) rate_limiters: BTreeMap<String, PermitCounts>,
    #[serde(skip)]
    pub(crate) bulkheads: BTreeMap<String, PermitCounts>,
    pub(crate) events_lost: u64,
    /// When each instance's configuration last changed, and the last refused update.
    pub(crate) config: ConfigChanges,
}

/// `counts`' entry for `instance`, allocating its key only the first time (most events are of
/// instances already counted).
fn entry<'a, T: Default>(counts: &'a mut BTreeMap<String, T>, instance: &str) -> &'a mut T {
    if !counts.contains_key(instance) {
        counts.insert(instance.to_owned(), T::default());
    }
    counts.get_mut(instance).expect("inserted above")
}

/// A `Debug` name in snake case, as the metrics' labels have it (`HalfOpen` → `half_open`,
/// `MaxAttempts` → `max_attempts`).
pub(crate) fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

impl Counts {
    /// These counts with every instance `snapshot` lists at 0 where nothing was counted yet: each
    /// retry (with every give-up reason), hedge and adaptive limit is there from the start, so
    /// `/counters`, `/metrics` and the page show its series before its first event. Fallbacks are
    /// not registered instances (no snapshot): they appear with their first application.
    pub(crate) fn with_registered(mut self, snapshot: &RegistrySnapshot) -> Counts {
        for r in snapshot.retries() {
            let counts = self.retries.entry(r.instance.to_string()).or_default();
            for reason in GiveUpReason::ALL {
                counts.gave_up.entry(format!("{reason:?}")).or_default();
            }
        }
        for h in snapshot.hedges() {
            self.hedges.entry(h.instance.to_string()).or_default();
        }
        for a in snapshot.adaptive_limits() {
            self.adaptive_limits.entry(a.instance.to_string()).or_default();
        }
        for c in snapshot.circuit_breakers() {
            self.circuit_breakers.entry(c.instance.to_string()).or_default();
        }
        for r in snapshot.rate_limiters() {
            self.rate_limiters.entry(r.instance.to_string()).or_default();
        }
        for b in snapshot.bulkheads() {
            self.bulkheads.entry(b.instance.to_string()).or_default();
        }
        self
    }

    /// Counts `event` if it is one the admin keeps counts of.
    pub(crate) fn record(&mut self, event: &AnyEvent) {
        match event {
            AnyEvent::Retry(e) => self.record_retry(e),
            AnyEvent::Hedge(e) => self.record_hedge(e),
            AnyEvent::Fallback(e) => self.record_fallback(e),
            AnyEvent::AdaptiveLimit(e) => self.record_adaptive_limit(e),
            AnyEvent::CircuitBreaker(e) => self.record_circuit_breaker(e),
            AnyEvent::RateLimiter(e) => {
                let counts = entry(&mut self.rate_limiters, e.instance());
                match e {
                    RateLimiterEvent::Permitted { .. } => counts.permitted += 1,
                    RateLimiterEvent::Rejected { .. } => counts.rejected += 1,
                    _ => {}
                }
            }
            AnyEvent::Bulkhead(e) => {
                let counts = entry(&mut self.bulkheads, e.instance());
                match e {
                    BulkheadEvent::Permitted { .. } => counts.permitted += 1,
                    BulkheadEvent::Rejected { .. } => counts.rejected += 1,
                    _ => {}
                }
            }
            AnyEvent::Config(e) => self.config.record(e, now_millis()),
            _ => {}
        }
    }

    pub(crate) fn record_circuit_breaker(&mut self, event: &CircuitBreakerEvent) {
        let counts = entry(&mut self.circuit_breakers, event.instance());
        let (outcome, slow) = match event {
            CircuitBreakerEvent::Success { slow, .. } => (0, *slow),
            CircuitBreakerEvent::Failure { slow, .. } => (1, *slow),
            CircuitBreakerEvent::Ignored { .. } => (2, false),
            CircuitBreakerEvent::CallNotPermitted { .. } => (3, false),
            CircuitBreakerEvent::StateTransition { to, .. } => {
                let to = snake_case(&format!("{to:?}"));
                if let Some(i) = STATES.iter().position(|s| *s == to) {
                    counts.transitions[i] += 1;
                }
                return;
            }
            _ => return,
        };
        counts.calls[outcome] += 1;
        counts.slow += u64::from(slow);
    }

    pub(crate) fn record_retry(&mut self, event: &RetryEvent) {
        let counts = entry(&mut self.retries, event.instance());
        match event {
            RetryEvent::Retrying { .. } => counts.retries += 1,
            RetryEvent::GaveUp { reason, .. } => *counts.gave_up.entry(format!("{reason:?}")).or_default() += 1,
            _ => {}
        }
    }

    pub(crate) fn record_hedge(&mut self, event: &HedgeEvent) {
        let counts = entry(&mut self.hedges, event.instance());
        match event {
            HedgeEvent::Hedged { .. } => counts.extra_attempts += 1,
            HedgeEvent::Finished { winner, .. } => {
                counts.hedged_calls += 1;
                match winner {
                    None => counts.all_failed += 1,
                    Some(1) => counts.won_by_first += 1,
                    Some(_) => counts.won_by_extra += 1,
                }
            }
            _ => {}
        }
    }

    pub(crate) fn record_fallback(&mut self, event: &FallbackEvent) {
        let counts = entry(&mut self.fallbacks, event.instance());
        if let FallbackEvent::Applied { .. } = event {
            counts.applied += 1;
        }
    }

    pub(crate) fn record_adaptive_limit(&mut self, event: &AdaptiveLimitEvent) {
        let counts = entry(&mut self.adaptive_limits, event.instance());
        match event {
            AdaptiveLimitEvent::LimitChanged { from, to, .. } if to > from => counts.increases += 1,
            AdaptiveLimitEvent::LimitChanged { from, to, .. } if to < from => counts.decreases += 1,
            AdaptiveLimitEvent::Rejected { .. } => counts.rejected += 1,
            _ => {}
        }
    }
}

/// The counts, shared between the counting task and the routes that read them.
#[derive(Debug, Default)]
pub(crate) struct SharedCounts(Mutex<Counts>);

impl SharedCounts {
    pub(crate) fn update(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    }

    pub(crate) fn get(&self) -> Counts {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn retries_and_give_ups_are_counted_per_instance() {
        let mut counts = Counts::default();
        let id: Arc<str> = Arc::from("m::Api::get");
        for attempt in 1..=2 {
            counts.record_retry(&RetryEvent::Retrying { instance: id.clone(), attempt, delay: Duration::ZERO });
        }
        counts.record_retry(&RetryEvent::GaveUp {
            instance: id.clone(),
            attempts: 3,
            reason: GiveUpReason::MaxAttempts,
        });
        let get = &counts.retries["m::Api::get"];
        assert_eq!((get.retries, get.gave_up["MaxAttempts"]), (2, 1));
    }

    #[test]
    fn hedged_calls_are_counted_by_their_winner() {
        let mut counts = Counts::default();
        let id: Arc<str> = Arc::from("m::Api::search");
        let finished = |attempts, winner| HedgeEvent::Finished { instance: id.clone(), attempts, winner };
        counts.record(&AnyEvent::Hedge(HedgeEvent::Hedged { instance: id.clone(), attempt: 2 }));
        counts.record(&AnyEvent::Hedge(HedgeEvent::Hedged { instance: id.clone(), attempt: 3 }));
        for event in [finished(2, Some(2)), finished(3, Some(3)), finished(2, Some(1)), finished(3, None)] {
            counts.record(&AnyEvent::Hedge(event));
        }
        let expected =
            HedgeCounts { hedged_calls: 4, extra_attempts: 2, won_by_extra: 2, won_by_first: 1, all_failed: 1 };
        assert_eq!(counts.hedges["m::Api::search"], expected);
    }

    #[test]
    fn fallbacks_and_limit_moves_are_counted_per_instance() {
        let mut counts = Counts::default();
        let id: Arc<str> = Arc::from("m::Api::get");
        counts.record(&AnyEvent::Fallback(FallbackEvent::Applied { instance: id.clone(), attempts: 1 }));
        let moves = [(20, 18), (18, 16), (16, 17)].map(|(from, to)| AdaptiveLimitEvent::LimitChanged {
            instance: id.clone(),
            key: None,
            from,
            to,
        });
        for event in moves.into_iter().chain([AdaptiveLimitEvent::Rejected { instance: id.clone(), key: None }]) {
            counts.record(&AnyEvent::AdaptiveLimit(event));
        }
        assert_eq!(counts.fallbacks["m::Api::get"].applied, 1);
        let expected = AdaptiveLimitCounts { increases: 1, decreases: 2, rejected: 1 };
        assert_eq!(counts.adaptive_limits["m::Api::get"], expected);
    }

    #[test]
    fn breaker_calls_transitions_and_permits_are_counted_per_instance() {
        use resilience4cata::circuit_breaker::State;

        let mut counts = Counts::default();
        let id: Arc<str> = Arc::from("m::Api::get");
        let breaker = |e| AnyEvent::CircuitBreaker(e);
        for event in [
            CircuitBreakerEvent::Success { instance: id.clone(), key: None, slow: false },
            CircuitBreakerEvent::Failure { instance: id.clone(), key: None, slow: true },
            CircuitBreakerEvent::Failure { instance: id.clone(), key: None, slow: false },
            CircuitBreakerEvent::StateTransition {
                instance: id.clone(),
                key: None,
                from: State::Closed,
                to: State::Open,
            },
            CircuitBreakerEvent::CallNotPermitted { instance: id.clone(), key: None },
            CircuitBreakerEvent::StateTransition {
                instance: id.clone(),
                key: None,
                from: State::Open,
                to: State::HalfOpen,
            },
        ] {
            counts.record(&breaker(event));
        }
        counts.record(&AnyEvent::RateLimiter(RateLimiterEvent::Permitted {
            instance: id.clone(),
            key: None,
            waited: Duration::ZERO,
        }));
        counts.record(&AnyEvent::Bulkhead(BulkheadEvent::Rejected { instance: id.clone(), key: None }));
        let expected = CircuitBreakerCounts { calls: [1, 2, 0, 1], slow: 1, transitions: [0, 1, 1, 0, 0] };
        assert_eq!(counts.circuit_breakers["m::Api::get"], expected);
        assert_eq!(counts.rate_limiters["m::Api::get"], PermitCounts { permitted: 1, rejected: 0 });
        assert_eq!(counts.bulkheads["m::Api::get"], PermitCounts { permitted: 0, rejected: 1 });
    }

    #[test]
    fn debug_names_become_the_labels_of_the_runtime() {
        assert_eq!(snake_case("HalfOpen"), "half_open");
        assert_eq!(snake_case("MaxAttempts"), "max_attempts");
        assert_eq!(snake_case("Closed"), "closed");
    }
}
