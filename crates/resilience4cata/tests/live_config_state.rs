//! Live configuration keeps each instance's state (SPEC §16), one rule per policy, on the manual
//! clock; and a call in flight finishes the step it is in under the values it started with.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::adaptive_limit::AdaptiveLimitEvent;
use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry, RegistryError, Rejection, ResilienceError, RetryEvent};

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum CallError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

fn is_refused(r: &Result<u32, CallError>) -> bool {
    matches!(r, Err(CallError::Rejected(_)))
}

// --- circuit breaker -------------------------------------------------------------------------

fn breaker(registry: &Registry, id: &str) -> Result<Pipeline<u32, CallError>, RegistryError> {
    Pipeline::builder(registry, id).circuit_breaker().build::<u32, CallError>()
}

#[test]
fn an_open_breaker_stays_open_and_takes_its_new_wait_from_the_next_decision() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.cb.circuit_breaker]\nwindow_size = 4\nminimum_calls = 4\nwait_in_open = \"60s\"\n")
        .build()?;
    let cb = breaker(&registry, "cb")?;
    for _ in 0..4 {
        let _ = cb.execute(|| Err(CallError::Down));
    }
    let handle = registry.circuit_breaker("cb").unwrap();
    assert_eq!(handle.state(), State::Open);
    let refused = handle.snapshot().not_permitted_calls;

    registry.update_toml(
        "[instances.cb.circuit_breaker]\nwindow_size = 4\nminimum_calls = 4\nwait_in_open = \"1s\"\n\
         failure_rate_threshold = 90\n",
    )?;
    assert_eq!(handle.state(), State::Open, "the update keeps the state");
    assert_eq!(handle.snapshot().not_permitted_calls, refused, "and its counters");
    assert_eq!(handle.snapshot().config.wait_in_open, Duration::from_secs(1), "snapshots show the new values at once");
    assert!(is_refused(&cb.execute(|| Ok(1))), "still open before the new wait is over");
    clock.advance(Duration::from_secs(1));
    assert_eq!(cb.execute(|| Ok(1)), Ok(1), "the new, shorter wait applies to the Open it found");
    assert_eq!(handle.state(), State::HalfOpen);
    Ok(())
}

#[test]
fn a_new_window_size_keeps_the_most_recent_outcomes_and_a_new_type_restarts_the_window() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.cb.circuit_breaker]\nwindow_size = 10\nminimum_calls = 10\n")
        .build()?;
    let cb = breaker(&registry, "cb")?;
    for fail in [true, false, false, false, true, true] {
        let _ = cb.execute(|| if fail { Err(CallError::Down) } else { Ok(1) });
    }
    let handle = registry.circuit_breaker("cb").unwrap();
    assert_eq!((handle.snapshot().buffered_calls, handle.snapshot().failed_calls), (6, 3));

    registry.update_toml("[instances.cb.circuit_breaker]\nwindow_size = 3\nminimum_calls = 10\n")?;
    let s = handle.snapshot();
    assert_eq!((s.buffered_calls, s.failed_calls), (3, 2), "the newest three: S F F");
    assert_eq!(s.state, State::Closed);
    // Judged with the new window at the next outcome: 2 of 3 failed reaches 50 %.
    let _ = cb.execute(|| Err(CallError::Down));
    assert_eq!(handle.state(), State::Open, "F F F in a window of 3");

    handle.reset();
    let _ = cb.execute(|| Err(CallError::Down));
    registry
        .update_toml("[instances.cb.circuit_breaker]\nwindow_type = \"time\"\nwindow_size = 3\nminimum_calls = 10\n")?;
    let s = handle.snapshot();
    assert_eq!((s.state, s.buffered_calls), (State::Closed, 0), "a new type restarts the window, not the state");
    let _ = cb.execute(|| Err(CallError::Down));
    assert_eq!(handle.snapshot().buffered_calls, 1, "the time window counts");

    // Back to a count window with slow-call tracking on: the fast path follows the new values.
    registry.update_toml(
        "[instances.cb.circuit_breaker]\nwindow_size = 2\nminimum_calls = 2\nslow_call_duration = \"10ms\"\n\
         slow_call_rate_threshold = 50\n",
    )?;
    let _ = cb.execute(|| {
        clock.advance(20 * MS);
        Ok(1)
    });
    assert_eq!(handle.snapshot().slow_calls, 1, "slow-call tracking applies from the next call on");
    let _ = cb.execute(|| Ok(1));
    assert_eq!(handle.state(), State::Open, "one slow call in two reaches 50 %");
    Ok(())
}

#[test]
fn a_breaker_turned_off_and_on_again_keeps_its_state() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build()?;
    let cb = breaker(&registry, "cb")?;
    let _ = cb.execute(|| Err(CallError::Down));
    registry.update_toml("[instances.cb.circuit_breaker]\nenabled = false\n")?;
    for _ in 0..200 {
        let _ = cb.execute(|| Err(CallError::Down));
    }
    let handle = registry.circuit_breaker("cb").unwrap();
    assert_eq!((handle.state(), handle.snapshot().buffered_calls), (State::Closed, 1), "off: nothing recorded");
    registry.update_toml("")?;
    let _ = cb.execute(|| Ok(1));
    assert_eq!(handle.snapshot().buffered_calls, 2, "on again, recording into the window it kept");
    Ok(())
}

// --- rate limiter ----------------------------------------------------------------------------

fn limiter(registry: &Registry) -> Result<Pipeline<u32, CallError>, RegistryError> {
    Pipeline::builder(registry, "quotes").rate_limiter().build::<u32, CallError>()
}

fn available(registry: &Registry) -> u32 {
    registry.rate_limiter("quotes").unwrap().snapshot().available_permits
}

fn passed(p: &Pipeline<u32, CallError>, n: u32) -> u32 {
    (0..n).filter(|_| p.execute(|| Ok(1)).is_ok()).count() as u32
}

#[test]
fn a_limiter_that_used_its_burst_gets_no_free_burst() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.quotes.rate_limiter]\npermits = 10\nperiod = \"1s\"\n")
        .build()?;
    let quotes = limiter(&registry)?;
    assert_eq!(passed(&quotes, 10), 10);
    assert_eq!(available(&registry), 0);
    registry.update_toml("[instances.quotes.rate_limiter]\npermits = 20\nperiod = \"1s\"\n")?;
    assert_eq!(available(&registry), 0, "the whole burst was used: none of the new one is free");
    assert_eq!(passed(&quotes, 5), 0);
    clock.advance(100 * MS);
    assert_eq!(passed(&quotes, 5), 2, "refilled at the new rate: 20 per second, 2 in 100 ms");
    Ok(())
}

#[test]
fn a_limiter_keeps_the_share_of_its_burst_it_used_and_loses_no_more() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.quotes.rate_limiter]\npermits = 10\nperiod = \"1s\"\n")
        .build()?;
    let quotes = limiter(&registry)?;
    assert_eq!(passed(&quotes, 5), 5);
    registry.update_toml("[instances.quotes.rate_limiter]\npermits = 20\nperiod = \"1s\"\n")?;
    assert_eq!(available(&registry), 10, "half used: half of the new burst is free");
    assert_eq!(passed(&quotes, 12), 10);

    // Halved while full: the whole new burst is free, nothing more.
    clock.advance(Duration::from_secs(1));
    registry.update_toml("[instances.quotes.rate_limiter]\npermits = 10\nperiod = \"1s\"\n")?;
    assert_eq!(available(&registry), 10);
    registry.update_toml("[instances.quotes.rate_limiter]\npermits = 5\nperiod = \"1s\"\n")?;
    assert_eq!(available(&registry), 5, "an operator halves the limit: it applies at once");
    assert_eq!(passed(&quotes, 8), 5);
    Ok(())
}

// --- bulkhead --------------------------------------------------------------------------------

/// A future that stays pending until its gate opens (polled by hand with a no-op waker).
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);

impl Future for Gate {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::SeqCst) { Poll::Ready(()) } else { Poll::Pending }
    }
}

type Call = Pin<Box<dyn Future<Output = Result<u32, CallError>>>>;

/// A call through `p` that enters (counted in `entered`) and then waits for `gate`.
fn gated(p: &Arc<Pipeline<u32, CallError>>, gate: &Gate, entered: &Arc<AtomicU32>) -> Call {
    let (p, gate, entered) = (Arc::clone(p), gate.clone(), Arc::clone(entered));
    Box::pin(async move {
        p.execute_async(|| {
            let (gate, entered) = (gate.clone(), Arc::clone(&entered));
            async move {
                entered.fetch_add(1, Ordering::SeqCst);
                gate.await;
                Ok(1)
            }
        })
        .await
    })
}

fn poll(call: &mut Call) -> Poll<Result<u32, CallError>> {
    call.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_raised_bulkhead_cap_admits_a_waiter_at_once() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.slots.bulkhead]\nmax_concurrent_calls = 1\nmax_wait = \"10s\"\n")
        .build()?;
    let slots = Arc::new(Pipeline::builder(&registry, "slots").bulkhead().build::<u32, CallError>()?);
    let (gate, entered) = (Gate::default(), Arc::new(AtomicU32::new(0)));
    let mut first = gated(&slots, &gate, &entered);
    let mut second = gated(&slots, &gate, &entered);
    assert!(poll(&mut first).is_pending());
    assert!(poll(&mut second).is_pending());
    assert_eq!(entered.load(Ordering::SeqCst), 1, "the second waits for a slot");
    assert_eq!(registry.bulkhead("slots").unwrap().snapshot().waiting, 1);

    registry.update_toml("[instances.slots.bulkhead]\nmax_concurrent_calls = 2\nmax_wait = \"10s\"\n")?;
    assert!(poll(&mut second).is_pending());
    assert_eq!(entered.load(Ordering::SeqCst), 2, "admitted by the new cap, the first still inside");
    assert_eq!(clock.elapsed(), Duration::ZERO, "at once: no wait ran out");
    let s = registry.bulkhead("slots").unwrap().snapshot();
    assert_eq!((s.in_flight, s.waiting, s.available), (2, 0, 0));
    gate.0.store(true, Ordering::SeqCst);
    assert_eq!((poll(&mut first), poll(&mut second)), (Poll::Ready(Ok(1)), Poll::Ready(Ok(1))));
    Ok(())
}

#[test]
fn a_lowered_bulkhead_cap_lets_calls_in_flight_finish_and_admits_only_below_it() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry =
        testing::registry(&clock).config_toml("[instances.slots.bulkhead]\nmax_concurrent_calls = 2\n").build()?;
    let slots = Arc::new(Pipeline::builder(&registry, "slots").bulkhead().build::<u32, CallError>()?);
    let entered = Arc::new(AtomicU32::new(0));
    let (gate_a, gate_b) = (Gate::default(), Gate::default());
    let mut a = gated(&slots, &gate_a, &entered);
    let mut b = gated(&slots, &gate_b, &entered);
    assert!(poll(&mut a).is_pending() && poll(&mut b).is_pending());

    registry.update_toml("[instances.slots.bulkhead]\nmax_concurrent_calls = 1\n")?;
    assert_eq!(registry.bulkhead("slots").unwrap().snapshot().in_flight, 2, "nobody is pushed out");
    assert!(is_refused(&slots.execute(|| Ok(1))), "two inside, cap one");
    gate_a.0.store(true, Ordering::SeqCst);
    assert_eq!(poll(&mut a), Poll::Ready(Ok(1)));
    assert!(is_refused(&slots.execute(|| Ok(1))), "one inside, cap one: still full");
    gate_b.0.store(true, Ordering::SeqCst);
    assert_eq!(poll(&mut b), Poll::Ready(Ok(1)));
    assert_eq!(slots.execute(|| Ok(1)), Ok(1), "below the new cap again");
    Ok(())
}

// --- adaptive limit --------------------------------------------------------------------------

#[test]
fn an_adaptive_limit_is_clamped_into_the_new_bounds() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let (sink, slot) = (Arc::clone(&changes), Arc::new(OnceLock::<Registry>::new()));
    let reader = Arc::clone(&slot);
    let registry = testing::registry(&clock)
        .listen(move |e: &AdaptiveLimitEvent| {
            if let AdaptiveLimitEvent::LimitChanged { from, to, .. } = e {
                // A listener may read snapshots, also while an update publishes (no lock held).
                let limit = reader.get().map(|r| r.snapshot().adaptive_limits()[0].limit);
                sink.lock().unwrap().push((*from, *to, limit));
            }
        })
        .config_toml("[instances.lim.adaptive_limit]\ninitial_limit = 10\nmin_limit = 2\nmax_limit = 50\n")
        .build()?;
    let _ = slot.set(registry.clone());
    let lim = Pipeline::builder(&registry, "lim").adaptive_limit().build::<u32, CallError>()?;
    let handle = registry.adaptive_limit("lim").unwrap();
    assert_eq!(handle.snapshot().limit, 10);
    registry.update_toml("[instances.lim.adaptive_limit]\ninitial_limit = 4\nmin_limit = 2\nmax_limit = 4\n")?;
    assert_eq!(handle.snapshot().limit, 4, "clamped down");
    registry.update_toml("[instances.lim.adaptive_limit]\ninitial_limit = 10\nmin_limit = 6\nmax_limit = 50\n")?;
    assert_eq!(handle.snapshot().limit, 6, "clamped up");
    assert_eq!(*changes.lock().unwrap(), vec![(10, 4, Some(4)), (4, 6, Some(6))]);
    // A limit inside the new bounds stays where the algorithm put it.
    registry.update_toml("[instances.lim.adaptive_limit]\ninitial_limit = 10\nmin_limit = 1\nmax_limit = 60\n")?;
    assert_eq!(handle.snapshot().limit, 6);
    // Releases clamp into the new bounds too (AIMD would grow past 7 otherwise).
    registry.update_toml("[instances.lim.adaptive_limit]\ninitial_limit = 7\nmin_limit = 1\nmax_limit = 7\n")?;
    for _ in 0..20 {
        assert_eq!(lim.execute(|| Ok(1)), Ok(1));
    }
    assert!(handle.snapshot().limit <= 7);
    // The algorithm's own keys do not change live yet: R4C-CFG-006, nothing changed.
    let err = registry
        .update_toml(
            "[instances.lim.adaptive_limit]\ninitial_limit = 7\nmin_limit = 1\nmax_limit = 7\nbackoff_ratio = 0.5\n",
        )
        .unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-006");
    assert!(err.message().contains("`backoff_ratio`"), "{err}");
    Ok(())
}

// --- retry -----------------------------------------------------------------------------------

#[test]
fn a_retry_budget_keeps_its_counters() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.fetch.retry]\nbudget_percent = 20\nbudget_min_retries_per_second = 0\n")
        .build()?;
    let fetch = Pipeline::builder(&registry, "fetch").retry().build::<u32, CallError>()?;
    for _ in 0..10 {
        assert_eq!(fetch.execute(|| Ok(1)), Ok(1));
    }
    let budget = |r: &Registry| r.snapshot().retries()[0].budget.expect("a budget");
    assert_eq!((budget(&registry).calls, budget(&registry).allowed_retries), (10, 2));
    registry.update_toml("[instances.fetch.retry]\nbudget_percent = 50\nbudget_min_retries_per_second = 0\n")?;
    assert_eq!((budget(&registry).calls, budget(&registry).allowed_retries), (10, 5), "the same calls, a new share");
    // Turned off and on again: the counters were kept meanwhile.
    registry.update_toml("[instances.fetch.retry]\nbudget_percent = 0\n")?;
    assert!(registry.snapshot().retries()[0].budget.is_none());
    registry.update_toml("[instances.fetch.retry]\nbudget_percent = 50\nbudget_min_retries_per_second = 0\n")?;
    assert_eq!(budget(&registry).calls, 10);
    Ok(())
}

#[test]
fn a_retry_mid_backoff_waits_out_the_wait_it_started_and_decides_its_next_step_on_the_new_values()
-> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let slot: Arc<OnceLock<Registry>> = Arc::new(OnceLock::new());
    let (registry_slot, updated) = (Arc::clone(&slot), Arc::new(AtomicBool::new(false)));
    let flag = Arc::clone(&updated);
    // `Retrying` is published when the wait is decided, before it starts: the update lands mid-backoff.
    let registry = testing::registry(&clock)
        .config_toml("[instances.fetch.retry]\nmax_attempts = 3\ndelay = \"100ms\"\nbackoff = \"fixed\"\njitter = \"none\"\n")
        .listen(move |e: &RetryEvent| {
            if matches!(e, RetryEvent::Retrying { attempt: 1, .. }) && !flag.swap(true, Ordering::SeqCst) {
                let registry = registry_slot.get().expect("set before the first call");
                registry
                    .update_toml(
                        "[instances.fetch.retry]\nmax_attempts = 4\ndelay = \"1s\"\nbackoff = \"fixed\"\njitter = \"none\"\n",
                    )
                    .expect("a valid update");
            }
        })
        .build()?;
    let _ = slot.set(registry.clone());
    let fetch = Pipeline::builder(&registry, "fetch").retry().build::<u32, CallError>()?;
    let attempts = AtomicU32::new(0);
    let mut waits = Vec::new();
    let result = fetch.execute(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        waits.push(clock.elapsed());
        Err(CallError::Down)
    });
    assert_eq!(result, Err(CallError::Down));
    assert!(updated.load(Ordering::SeqCst));
    // The first wait, decided before the update, ran its 100 ms; each later decision read the new
    // values: 1 s waits, and a fourth attempt.
    let ms = |n: u64| Duration::from_millis(n);
    assert_eq!(waits, vec![ms(0), ms(100), ms(1100), ms(2100)]);
    Ok(())
}

// --- timeout ---------------------------------------------------------------------------------

#[test]
fn an_attempt_in_flight_keeps_the_deadline_it_started_with() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).config_toml("[instances.t.timeout]\nduration = \"100ms\"\n").build()?;
    let t = Pipeline::builder(&registry, "t").timeout().build::<u32, CallError>()?;
    let result = testkit::block_on(t.execute_async(|| {
        let (registry, clock) = (registry.clone(), clock.clone());
        async move {
            registry.update_toml("[instances.t.timeout]\nduration = \"1s\"\n").expect("a valid update");
            clock.sleep(500 * MS).await;
            Ok(1)
        }
    }));
    assert!(is_refused(&result), "timed out at the deadline it started with");
    assert_eq!(clock.elapsed(), 100 * MS);
    let result = testkit::block_on(t.execute_async(|| {
        let clock = clock.clone();
        async move {
            clock.sleep(500 * MS).await;
            Ok(1)
        }
    }));
    assert_eq!(result, Ok(1), "the next attempt runs under the new 1 s");
    registry.update_toml("[instances.t.timeout]\nenabled = false\n")?;
    let result = testkit::block_on(t.execute_async(|| {
        let clock = clock.clone();
        async move {
            clock.sleep(Duration::from_secs(5)).await;
            Ok(1)
        }
    }));
    assert_eq!(result, Ok(1), "turned off live");
    Ok(())
}

// --- hedge -----------------------------------------------------------------------------------

#[test]
fn a_hedge_takes_its_new_delay_from_the_next_call() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).config_toml("[instances.h.hedge]\ndelay = \"100ms\"\n").build()?;
    let h = Pipeline::builder(&registry, "h").hedge().build::<u32, CallError>()?;
    let started = Arc::new(Mutex::new(Vec::new()));
    let run = |h: &Pipeline<u32, CallError, _>| {
        started.lock().unwrap().clear();
        let base = clock.elapsed();
        testkit::block_on(h.execute_async(|| {
            let (clock, started) = (clock.clone(), Arc::clone(&started));
            async move {
                started.lock().unwrap().push(clock.elapsed() - base);
                clock.sleep(Duration::from_secs(1)).await;
                Ok(1)
            }
        }))
    };
    assert_eq!(run(&h), Ok(1));
    assert_eq!(*started.lock().unwrap(), vec![Duration::ZERO, 100 * MS]);
    registry.update_toml("[instances.h.hedge]\ndelay = \"300ms\"\n")?;
    assert_eq!(run(&h), Ok(1));
    assert_eq!(*started.lock().unwrap(), vec![Duration::ZERO, 300 * MS]);
    registry.update_toml("[instances.h.hedge]\nenabled = false\n")?;
    assert_eq!(run(&h), Ok(1));
    assert_eq!(*started.lock().unwrap(), vec![Duration::ZERO], "turned off: one plain attempt");
    Ok(())
}
