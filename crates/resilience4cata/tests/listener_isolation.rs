//! Listener isolation: an observer that panics at every event a policy publishes never changes what
//! the policy does next. Each scenario runs twice on the manual clock, once with a listener that
//! only records and once with one that records and then panics; results, snapshots and the events
//! seen must be the same, and every panic is counted by `resilience4cata::listener_panics()`.

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::bulkhead::BulkheadEvent;
use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::testing::ManualClock;
use resilience4cata::timeout::TimeoutEvent;
use resilience4cata::{Event, Registry, Rejection, ResilienceError, RetryEvent, resilient};
use testkit::block_on;

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum Down {
    Failed,
    Ignored,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Backend {
    #[retry(max_attempts = 3, delay = "100ms")]
    fn retried(&self, failures: &AtomicU32) -> Result<u32, Down>;

    #[circuit_breaker(
        window_size = 2,
        minimum_calls = 2,
        wait_in_open = "1s",
        permitted_calls_in_half_open = 2,
        ignore_on = Down::Ignored
    )]
    fn guarded(&self, outcome: Result<(), Down>) -> Result<(), Down>;

    #[rate_limiter(permits = 2, period = "1s")]
    fn limited(&self) -> Result<(), Down>;

    #[bulkhead(max_concurrent_calls = 1)]
    fn isolated(&self, then: &dyn Fn() -> Result<(), Down>) -> Result<(), Down>;

    #[timeout(duration = "100ms")]
    async fn timed(&self, hangs: bool) -> Result<(), Down>;
}

struct Service;

impl Backend for Service {
    fn retried(&self, failures: &AtomicU32) -> Result<u32, Down> {
        testkit::fail_first(failures, Down::Failed, 7)
    }
    fn guarded(&self, outcome: Result<(), Down>) -> Result<(), Down> {
        outcome
    }
    fn limited(&self) -> Result<(), Down> {
        Ok(())
    }
    fn isolated(&self, then: &dyn Fn() -> Result<(), Down>) -> Result<(), Down> {
        then()
    }
    async fn timed(&self, hangs: bool) -> Result<(), Down> {
        tokio::task::yield_now().await; // pending once: the timer is armed
        if hangs {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// Every event published, as seen by the listener before it (maybe) panics.
type Seen = Arc<Mutex<Vec<String>>>;

fn listener<E: Event>(seen: &Seen, panics: bool) -> impl Fn(&E) + Send + Sync + 'static {
    let seen = Arc::clone(seen);
    move |e: &E| {
        seen.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{e:?}"));
        if panics {
            panic!("a listener that panics at {e:?}");
        }
    }
}

/// A wrapper whose every listener records into `seen` and, if `panics`, then panics.
fn service(panics: bool) -> (ResilientBackend<Service>, ManualClock, Seen, Registry) {
    let clock = ManualClock::new();
    let seen = Seen::default();
    let registry = testkit::no_jitter(&clock)
        .listen(listener::<RetryEvent>(&seen, panics))
        .listen(listener::<CircuitBreakerEvent>(&seen, panics))
        .listen(listener::<RateLimiterEvent>(&seen, panics))
        .listen(listener::<BulkheadEvent>(&seen, panics))
        .listen(listener::<TimeoutEvent>(&seen, panics))
        .build()
        .unwrap();
    let wrapper = ResilientBackend::new(Service, &registry).unwrap();
    (wrapper, clock, seen, registry)
}

/// Runs `scenario` with a quiet and a panicking listener; both runs must agree on everything,
/// and the panicking run must have had one counted panic per event.
fn same_with_panicking_listener<T: PartialEq + std::fmt::Debug>(
    scenario: impl Fn(&ResilientBackend<Service>, &ManualClock, &Registry) -> T,
) -> Vec<String> {
    let (quiet, clock, quiet_seen, registry) = service(false);
    let expected = scenario(&quiet, &clock, &registry);
    let (noisy, clock, noisy_seen, registry) = service(true);
    let before = resilience4cata::listener_panics();
    let actual = scenario(&noisy, &clock, &registry);
    let panics = resilience4cata::listener_panics() - before;
    assert_eq!(actual, expected, "a panicking listener changed what the policy did");
    let (quiet_seen, noisy_seen) = (quiet_seen.lock().unwrap().clone(), noisy_seen.lock().unwrap().clone());
    assert_eq!(noisy_seen, quiet_seen, "a panicking listener changed what the policy published");
    assert!(panics >= noisy_seen.len() as u64, "{panics} counted panics for {} events", noisy_seen.len());
    noisy_seen
}

fn published(seen: &[String], prefix: &str) -> bool {
    seen.iter().any(|e| e.starts_with(prefix))
}

#[test]
fn retry_events_retrying_and_gave_up() {
    let seen = same_with_panicking_listener(|api, clock, _| {
        let recovers = api.retried(&AtomicU32::new(2));
        let gives_up = api.retried(&AtomicU32::new(5));
        (recovers, gives_up, clock.elapsed())
    });
    assert!(published(&seen, "Retrying") && published(&seen, "GaveUp"), "{seen:?}");
}

#[test]
fn circuit_breaker_every_event_and_the_last_half_open_probe() {
    let seen = same_with_panicking_listener(|api, clock, registry| {
        let handle = registry.circuit_breaker("listener_isolation::Backend::guarded").unwrap();
        let mut trace = Vec::new();
        let mut step = |r: Result<(), Down>, clock: &ManualClock| {
            trace.push((r, handle.snapshot().state, clock.elapsed()));
        };
        step(api.guarded(Ok(())), clock); // Success
        step(api.guarded(Err(Down::Ignored)), clock); // Ignored
        step(api.guarded(Err(Down::Failed)), clock); // Failure: 1 of 2 failed → Open
        step(api.guarded(Ok(())), clock); // CallNotPermitted
        clock.advance(Duration::from_secs(1));
        step(api.guarded(Ok(())), clock); // Open → HalfOpen, first probe
        step(api.guarded(Ok(())), clock); // the last probe: closes
        step(api.guarded(Ok(())), clock);
        handle.force_open(); // manual controls publish too
        step(api.guarded(Ok(())), clock);
        handle.reset();
        step(api.guarded(Ok(())), clock);
        trace
    });
    for event in ["Success", "Failure", "Ignored", "CallNotPermitted", "StateTransition", "Reset"] {
        assert!(published(&seen, event), "{event} not published: {seen:?}");
    }
}

#[test]
fn a_panic_at_the_last_probe_still_closes_the_breaker() {
    let (api, clock, _, registry) = service(true);
    let handle = registry.circuit_breaker("listener_isolation::Backend::guarded").unwrap();
    let _ = api.guarded(Err(Down::Failed));
    let _ = api.guarded(Err(Down::Failed));
    assert_eq!(handle.snapshot().state, State::Open);
    clock.advance(Duration::from_secs(1));
    assert_eq!(api.guarded(Ok(())), Ok(()));
    assert_eq!(api.guarded(Ok(())), Ok(()));
    assert_eq!(handle.snapshot().state, State::Closed, "the last probe's panicking Success event kept it half-open");
}

#[test]
fn rate_limiter_permitted_and_rejected() {
    let seen = same_with_panicking_listener(|api, clock, registry| {
        let handle = registry.rate_limiter("listener_isolation::Backend::limited").unwrap();
        let mut trace = Vec::new();
        for _ in 0..3 {
            trace.push((api.limited(), handle.snapshot().available_permits));
        }
        clock.advance(Duration::from_millis(500));
        trace.push((api.limited(), handle.snapshot().available_permits));
        trace
    });
    assert!(published(&seen, "Permitted") && published(&seen, "Rejected"), "{seen:?}");
}

#[test]
fn bulkhead_permitted_rejected_and_finished_leak_no_slot() {
    let seen = same_with_panicking_listener(|api, _, registry| {
        let handle = registry.bulkhead("listener_isolation::Backend::isolated").unwrap();
        let inner = api.isolated(&|| api.isolated(&|| Ok(())));
        let after = api.isolated(&|| Ok(()));
        let snapshot = handle.snapshot();
        (inner, after, snapshot.in_flight, snapshot.available)
    });
    for event in ["Permitted", "Rejected", "Finished"] {
        assert!(published(&seen, event), "{event} not published: {seen:?}");
    }
}

#[test]
fn a_panicking_finished_listener_during_an_unwind_does_not_abort() {
    let (api, _, _, registry) = service(true);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        api.isolated(&|| panic!("the delegate panics while holding the slot"))
    }));
    assert!(unwound.is_err(), "the delegate's own panic goes on to the caller");
    let snapshot = registry.bulkhead("listener_isolation::Backend::isolated").unwrap().snapshot();
    assert_eq!((snapshot.in_flight, snapshot.available), (0, 1), "the slot came back");
    assert_eq!(api.isolated(&|| Ok(())), Ok(()));
}

#[test]
fn timeout_timed_out() {
    let seen = same_with_panicking_listener(|api, clock, _| {
        let within = block_on(api.timed(false));
        let late = block_on(api.timed(true));
        (within, late, clock.elapsed())
    });
    assert!(published(&seen, "TimedOut"), "{seen:?}");
}
