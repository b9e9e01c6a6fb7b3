//! What the admin counts from events since it started: retries and give-ups per retry instance,
//! hedged calls by outcome, fallback applications and adaptive-limit moves and refusals. The
//! registry's snapshot carries none of these since-the-admin-started figures (a retry or a
//! fallback keeps no counters of its own; a hedge's snapshot counts since it was built).

use std::collections::BTreeMap;
use std::sync::Mutex;

use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
use resilience4cata::events::AnyEvent;
use resilience4cata::fallback::FallbackEvent;
use resilience4cata::hedge::HedgeEvent;
use resilience4cata::{GiveUpReason, RegistrySnapshot, RetryEvent};
use serde::Serialize;

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

/// Every count, by instance id; `events_lost` says how many events the counting subscription
/// missed (the counts are then lower bounds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) retries: BTreeMap<String, RetryCounts>,
    pub(crate) hedges: BTreeMap<String, HedgeCounts>,
    pub(crate) fallbacks: BTreeMap<String, FallbackCounts>,
    pub(crate) adaptive_limits: BTreeMap<String, AdaptiveLimitCounts>,
    pub(crate) events_lost: u64,
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
        self
    }

    /// Counts `event` if it is one the admin keeps counts of.
    pub(crate) fn record(&mut self, event: &AnyEvent) {
        match event {
            AnyEvent::Retry(e) => self.record_retry(e),
            AnyEvent::Hedge(e) => self.record_hedge(e),
            AnyEvent::Fallback(e) => self.record_fallback(e),
            AnyEvent::AdaptiveLimit(e) => self.record_adaptive_limit(e),
            _ => {}
        }
    }

    pub(crate) fn record_retry(&mut self, event: &RetryEvent) {
        let counts = self.retries.entry(event.instance().to_owned()).or_default();
        match event {
            RetryEvent::Retrying { .. } => counts.retries += 1,
            RetryEvent::GaveUp { reason, .. } => *counts.gave_up.entry(format!("{reason:?}")).or_default() += 1,
            _ => {}
        }
    }

    pub(crate) fn record_hedge(&mut self, event: &HedgeEvent) {
        let counts = self.hedges.entry(event.instance().to_owned()).or_default();
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
        let counts = self.fallbacks.entry(event.instance().to_owned()).or_default();
        if let FallbackEvent::Applied { .. } = event {
            counts.applied += 1;
        }
    }

    pub(crate) fn record_adaptive_limit(&mut self, event: &AdaptiveLimitEvent) {
        let counts = self.adaptive_limits.entry(event.instance().to_owned()).or_default();
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
            from,
            to,
        });
        for event in moves.into_iter().chain([AdaptiveLimitEvent::Rejected { instance: id.clone() }]) {
            counts.record(&AnyEvent::AdaptiveLimit(event));
        }
        assert_eq!(counts.fallbacks["m::Api::get"].applied, 1);
        let expected = AdaptiveLimitCounts { increases: 1, decreases: 2, rejected: 1 };
        assert_eq!(counts.adaptive_limits["m::Api::get"], expected);
    }
}
