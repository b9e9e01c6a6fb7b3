//! The consequences of the fixed policy order (Retry → CircuitBreaker → RateLimiter → Timeout →
//! Bulkhead → method), whatever order the attributes are written in, on the manual clock.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Waker};
use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::ManualClock;
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum ApiError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

fn rejection(r: &Result<(), ApiError>) -> Option<&Rejection> {
    match r {
        Err(e) => e.rejection(),
        Ok(()) => None,
    }
}

#[resilient]
pub trait Api {
    // Written inner-first on purpose: the order comes from the policies, not the attributes.
    #[rate_limiter(permits = 5, period = "1h")]
    #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "1m")]
    fn limited(&self) -> Result<(), ApiError>;

    #[circuit_breaker(window_size = 10, minimum_calls = 10)]
    #[rate_limiter(permits = 1, period = "1h")]
    fn scarce(&self) -> Result<(), ApiError>;

    #[bulkhead(max_concurrent_calls = 1)]
    #[circuit_breaker(window_size = 10, minimum_calls = 10)]
    async fn narrow(&self, gate: &tokio::sync::Notify) -> Result<(), ApiError>;

    #[timeout(duration = "1s")]
    #[circuit_breaker(window_size = 10, minimum_calls = 10)]
    #[retry(max_attempts = 2, delay = "100ms")]
    async fn hangs(&self) -> Result<(), ApiError>;

    #[retry(max_attempts = 3, delay = "0")]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000)]
    #[bulkhead]
    fn stacked(&self, fail_first: &AtomicU32) -> Result<u32, ApiError>;
}

#[derive(Default)]
struct Backend {
    calls: AtomicU32,
    failing: std::sync::atomic::AtomicBool,
}

impl Api for Backend {
    fn limited(&self) -> Result<(), ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) { Err(ApiError::Down) } else { Ok(()) }
    }

    fn scarce(&self) -> Result<(), ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn narrow(&self, gate: &tokio::sync::Notify) -> Result<(), ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        gate.notified().await;
        Ok(())
    }

    async fn hangs(&self) -> Result<(), ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }

    fn stacked(&self, fail_first: &AtomicU32) -> Result<u32, ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if fail_first.swap(0, Ordering::SeqCst) > 0 { Err(ApiError::Down) } else { Ok(7) }
    }
}

fn setup() -> (ManualClock, Registry, ResilientApi<Backend>) {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let api = ResilientApi::new(Backend::default(), &registry).unwrap();
    (clock, registry, api)
}

fn breaker(registry: &Registry, method: &str) -> resilience4cata::circuit_breaker::CircuitBreakerSnapshot {
    registry.circuit_breaker(&format!("policy_order::Api::{method}")).unwrap().snapshot()
}

fn permits(registry: &Registry, method: &str) -> u32 {
    registry.rate_limiter(&format!("policy_order::Api::{method}")).unwrap().snapshot().available_permits
}

#[test]
fn calls_the_breaker_refuses_take_no_rate_limiter_permit() {
    let (_clock, registry, api) = setup();
    api.delegate().failing.store(true, Ordering::SeqCst);
    assert_eq!(api.limited(), Err(ApiError::Down));
    assert_eq!(api.limited(), Err(ApiError::Down));
    assert_eq!(breaker(&registry, "limited").state, State::Open);
    assert_eq!(permits(&registry, "limited"), 3);
    for _ in 0..10 {
        assert!(rejection(&api.limited()).is_some_and(Rejection::is_call_not_permitted));
    }
    assert_eq!(permits(&registry, "limited"), 3, "refused calls took no permit");
    assert_eq!(api.delegate().calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_rate_limiter_refusal_is_not_recorded_by_the_breaker() {
    let (_clock, registry, api) = setup();
    assert_eq!(api.scarce(), Ok(()));
    assert!(matches!(rejection(&api.scarce()), Some(Rejection::RateLimitExceeded { .. })));
    let b = breaker(&registry, "scarce");
    assert_eq!((b.buffered_calls, b.failed_calls), (1, 0));
}

#[tokio::test]
async fn a_bulkhead_refusal_is_not_recorded_by_the_breaker() {
    let (_clock, registry, api) = setup();
    let gate = tokio::sync::Notify::new();
    let mut first = pin!(api.narrow(&gate));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(first.as_mut().poll(&mut cx).is_pending(), "the first call holds the only slot");
    let second = api.narrow(&gate).await;
    assert!(matches!(rejection(&second), Some(Rejection::BulkheadFull { .. })));
    gate.notify_one();
    assert_eq!(first.await, Ok(()));
    let b = breaker(&registry, "narrow");
    assert_eq!((b.buffered_calls, b.failed_calls), (1, 0), "only the call that ran is recorded");
}

#[tokio::test]
async fn a_timeout_is_recorded_as_a_failure_and_each_attempt_gets_its_own() {
    let (clock, registry, api) = setup();
    let result = api.hangs().await;
    assert!(matches!(rejection(&result), Some(Rejection::CallTimeout { .. })));
    assert_eq!(api.delegate().calls.load(Ordering::SeqCst), 2, "the timeout was retried");
    // Two attempts of 1 s each, and the 100 ms wait between them.
    assert_eq!(clock.elapsed(), Duration::from_millis(2100));
    let b = breaker(&registry, "hangs");
    assert_eq!((b.buffered_calls, b.failed_calls), (2, 2));
}

#[test]
fn every_retry_attempt_passes_the_breaker_and_takes_its_own_permit() {
    let (_clock, registry, api) = setup();
    let fail_first = AtomicU32::new(1);
    assert_eq!(api.stacked(&fail_first), Ok(7));
    let b = breaker(&registry, "stacked");
    assert_eq!((b.buffered_calls, b.failed_calls), (2, 1));
    assert_eq!(permits(&registry, "stacked"), 998);
    let bulkhead = registry.bulkhead("policy_order::Api::stacked").unwrap().snapshot();
    assert_eq!(bulkhead.in_flight, 0, "the slot is released after every attempt");
}

#[test]
fn the_wrapper_is_send_and_sync_and_shared_across_threads() {
    let (_clock, registry, api) = setup();
    let api = Arc::new(api);
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let api = Arc::clone(&api);
            std::thread::spawn(move || {
                for _ in 0..100 {
                    assert_eq!(api.stacked(&AtomicU32::new(0)), Ok(7));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(breaker(&registry, "stacked").buffered_calls, 100, "a count window of 100 keeps the last 100");
    assert_eq!(permits(&registry, "stacked"), 800);
}
