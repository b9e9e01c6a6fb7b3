//! What the admin counts from events since it started: retries and give-ups per retry instance,
//! which the registry's snapshot does not carry (a retry keeps no counters of its own).

use std::collections::BTreeMap;
use std::sync::Mutex;

use resilience4cata::RetryEvent;
use resilience4cata::events::AnyEvent;
use serde::Serialize;

/// One retry instance's counts since the admin started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct RetryCounts {
    /// `Retrying` events: waits before another attempt.
    pub(crate) retries: u64,
    /// `GaveUp` events by reason (`"MaxAttempts"`, `"BudgetExhausted"`, …).
    pub(crate) gave_up: BTreeMap<String, u64>,
}

/// Every count, by instance id; `events_lost` says how many events the counting subscription
/// missed (the counts are then lower bounds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) retries: BTreeMap<String, RetryCounts>,
    pub(crate) events_lost: u64,
}

impl Counts {
    /// Counts `event` if it is one the admin keeps counts of.
    pub(crate) fn record(&mut self, event: &AnyEvent) {
        if let AnyEvent::Retry(e) = event {
            self.record_retry(e);
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

    use resilience4cata::GiveUpReason;

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
}
