//! The registry the policy-order tests share (`policy_order_custom.rs`, `pipeline_order.rs`): the
//! seeds' no-jitter registry on a manual clock, watching where a bulkhead (or an adaptive limit)
//! stands during each backoff.

use std::sync::{Arc, Mutex, OnceLock};

use resilience4cata::testing::ManualClock;
use resilience4cata::{Registry, Rejection, ResilienceError, RetryEvent};

/// The error of every call under test: a failure, or a policy's refusal.
#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum ApiError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

/// `(in_flight, available)` of the retried instance's bulkhead, or, without one, `(in_flight,
/// limit)` of its adaptive limit, once per backoff.
pub type DuringBackoff = Arc<Mutex<Vec<(u32, u32)>>>;

/// The clock, the registry, and, for each `Retrying` event (published as the backoff starts), the
/// bulkhead (else the adaptive limit) of the same instance id as it is at that moment.
pub fn watching_backoffs() -> (ManualClock, Registry, DuringBackoff) {
    let clock = ManualClock::new();
    let seen: Arc<OnceLock<Registry>> = Arc::default();
    let during_backoff: DuringBackoff = Arc::default();
    let (seen_in, during) = (Arc::clone(&seen), Arc::clone(&during_backoff));
    let registry = testkit::no_jitter(&clock)
        .listen(move |e: &RetryEvent| {
            let (Some(registry), RetryEvent::Retrying { instance, .. }) = (seen_in.get(), e) else { return };
            if let Some(bulkhead) = registry.bulkhead(instance) {
                let s = bulkhead.snapshot();
                during.lock().unwrap().push((s.in_flight, s.available));
            } else if let Some(limit) = registry.adaptive_limit(instance) {
                let s = limit.snapshot();
                during.lock().unwrap().push((s.in_flight, s.limit));
            }
        })
        .build()
        .unwrap();
    seen.set(registry.clone()).unwrap_or_else(|_| unreachable!("set once"));
    (clock, registry, during_backoff)
}
