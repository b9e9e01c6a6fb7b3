//! The state machine through the policy object, on the manual clock with explicit times.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::policy::{CircuitBreakerPolicy, Outcome};
use super::state::CircuitBreakerState;
use super::*;
use crate::clock::{Clock, ManualClock};
use crate::events::{Listener, Publisher};
use crate::kit::Layer;
use crate::rejection::Rejection;

use Outcome::{Failure, Ignored, Success};

struct Fixture {
    clock: ManualClock,
    state: Arc<CircuitBreakerState>,
    cb: CircuitBreakerPolicy,
    events: Arc<Mutex<Vec<CircuitBreakerEvent>>>,
}

fn breaker(layer: CircuitBreakerConfigBuilder) -> Fixture {
    let clock = ManualClock::new();
    let timer = Arc::new(Clock::from(&clock).into_timer());
    let config = layer.resolve("cb").expect("valid test config");
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let listener: Listener<CircuitBreakerEvent> = Arc::new(move |e| sink.lock().unwrap().push(e.clone()));
    let instance: Arc<str> = Arc::from("cb");
    let publisher = Publisher::detached(&[listener], &instance);
    let state = Arc::new(CircuitBreakerState::new(instance, config, timer, publisher));
    Fixture { clock, cb: CircuitBreakerPolicy::new(Arc::clone(&state)), state, events }
}

fn count(window: u32, min: u32) -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfigBuilder::new().window_size(window).minimum_calls(min).wait_in_open(Duration::from_secs(60))
}

const SEC: Duration = Duration::from_secs(1);

impl Fixture {
    fn call(&self, outcome: Outcome) -> Result<(), Rejection> {
        self.cb.acquire().map(|permit| permit.record(outcome))
    }

    fn calls(&self, outcomes: &[Outcome]) {
        for &o in outcomes {
            self.call(o).expect("admitted");
        }
    }

    fn state(&self) -> State {
        self.state.state()
    }

    fn snap(&self) -> CircuitBreakerSnapshot {
        self.state.snapshot()
    }

    /// (buffered, failed, slow)
    fn counts(&self) -> (u64, u64, u64) {
        let s = self.snap();
        (s.buffered_calls, s.failed_calls, s.slow_calls)
    }

    fn transitions(&self) -> Vec<(State, State)> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                CircuitBreakerEvent::StateTransition { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    /// Trips a count breaker of `n` calls with failures.
    fn trip(&self, n: usize) {
        for _ in 0..n {
            self.call(Failure).expect("closed");
        }
        assert_eq!(self.state(), State::Open);
    }
}

#[test]
fn opens_when_the_failure_rate_reaches_the_threshold_exactly() {
    let f = breaker(count(4, 4));
    f.calls(&[Success, Failure, Success]);
    assert_eq!(f.state(), State::Closed);
    f.calls(&[Failure]); // 2 of 4 = 50 %
    assert_eq!(f.state(), State::Open);
    assert_eq!(f.transitions(), [(State::Closed, State::Open)]);
}

#[test]
fn stays_closed_just_below_the_threshold() {
    let f = breaker(count(5, 5).failure_rate_threshold(50.0));
    f.calls(&[Failure, Success, Failure, Success, Success]); // 40 %
    assert_eq!(f.state(), State::Closed);
    assert_eq!(f.snap().failure_rate, Some(40.0));
}

#[test]
fn nothing_is_judged_below_minimum_calls() {
    let f = breaker(count(10, 5));
    f.calls(&[Failure; 4]);
    let s = f.snap();
    assert_eq!((s.state, s.buffered_calls, s.failed_calls, s.failure_rate), (State::Closed, 4, 4, None));
    f.calls(&[Failure]);
    assert_eq!(f.state(), State::Open);
}

#[test]
fn the_success_that_reaches_minimum_calls_opens_a_failing_window() {
    let f = breaker(count(10, 4));
    f.calls(&[Failure, Failure, Success]);
    assert_eq!(f.state(), State::Closed);
    f.calls(&[Success]); // 2 of 4
    assert_eq!(f.state(), State::Open);
}

#[test]
fn minimum_calls_is_capped_at_a_count_window() {
    let f = breaker(CircuitBreakerConfigBuilder::new().window_size(3)); // minimum_calls = 100
    f.calls(&[Failure; 3]);
    assert_eq!(f.state(), State::Open);
}

#[test]
fn count_window_slides() {
    let f = breaker(count(4, 4).failure_rate_threshold(75.0));
    f.calls(&[Failure, Failure, Success, Success]);
    assert_eq!(f.counts(), (4, 2, 0));
    f.calls(&[Success]); // replaces the first failure
    assert_eq!(f.counts(), (4, 1, 0));
    f.calls(&[Failure, Failure]); // replace the second failure, then a success
    assert_eq!((f.counts(), f.state()), ((4, 2, 0), State::Closed));
    f.calls(&[Failure]); // 3 of 4
    assert_eq!(f.state(), State::Open);
}

#[test]
fn open_refuses_and_counts_refusals() {
    let f = breaker(count(2, 2));
    f.trip(2);
    let refused = f.cb.acquire().unwrap_err();
    assert_eq!(refused, Rejection::CallNotPermitted { instance: "cb".into() });
    assert!(f.cb.acquire().is_err());
    let s = f.snap();
    assert_eq!((s.not_permitted_calls, s.buffered_calls, s.failure_rate), (2, 0, None));
    let refusals =
        f.events.lock().unwrap().iter().filter(|e| matches!(e, CircuitBreakerEvent::CallNotPermitted { .. })).count();
    assert_eq!(refusals, 2);
}

#[test]
fn half_open_begins_exactly_at_opened_at_plus_wait_in_open() {
    let f = breaker(count(2, 2).wait_in_open(Duration::from_secs(10)));
    f.clock.advance(SEC);
    f.trip(2);
    f.clock.advance(Duration::from_secs(10) - Duration::from_nanos(1));
    assert!(f.cb.acquire().is_err());
    assert_eq!(f.state(), State::Open, "no background thread moves it");
    f.clock.advance(Duration::from_nanos(1));
    assert_eq!(f.state(), State::Open, "only a call moves it");
    f.call(Success).expect("the first call after the wait is a probe");
    assert_eq!(f.state(), State::HalfOpen);
    assert_eq!(f.transitions(), [(State::Closed, State::Open), (State::Open, State::HalfOpen)]);
}

fn half_open(layer: CircuitBreakerConfigBuilder) -> Fixture {
    let f = breaker(layer.wait_in_open(SEC));
    while f.state() == State::Closed {
        f.call(Failure).unwrap();
    }
    f.clock.advance(SEC);
    f
}

#[test]
fn half_open_refuses_extra_calls_while_probes_are_in_flight_then_closes() {
    let f = half_open(count(2, 2).permitted_calls_in_half_open(3));
    let probes: Vec<_> = (0..3).map(|_| f.cb.acquire().expect("probe")).collect();
    assert_eq!(f.state(), State::HalfOpen);
    assert!(f.cb.acquire().is_err(), "every probe is out");
    let mut probes = probes.into_iter();
    probes.next().unwrap().record(Failure);
    probes.next().unwrap().record(Success);
    assert_eq!((f.state(), f.counts()), (State::HalfOpen, (2, 1, 0)));
    assert!(f.cb.acquire().is_err(), "completed probes do not free permits");
    probes.next().unwrap().record(Success); // 1 of 3 failed: below 50 %
    assert_eq!(f.state(), State::Closed);
    assert_eq!(f.counts(), (0, 0, 0), "closed starts with an empty window");
    assert_eq!(f.transitions().last(), Some(&(State::HalfOpen, State::Closed)));
}

#[test]
fn half_open_reopens_and_waits_again() {
    let f = half_open(count(2, 2).permitted_calls_in_half_open(2));
    f.calls(&[Success, Failure]); // 50 %
    assert_eq!(f.state(), State::Open);
    f.clock.advance(SEC - Duration::from_nanos(1));
    assert!(f.cb.acquire().is_err(), "the wait restarts from the reopening");
    f.clock.advance(Duration::from_nanos(1));
    assert!(f.cb.acquire().is_ok());
    assert_eq!(
        f.transitions(),
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Open),
            (State::Open, State::HalfOpen)
        ]
    );
}

#[test]
fn slow_calls_open_the_breaker() {
    let f = breaker(count(2, 2).slow_call_duration(SEC).slow_call_rate_threshold(50.0));
    let p = f.cb.acquire().unwrap();
    f.clock.advance(SEC - Duration::from_nanos(1));
    p.record(Success);
    assert_eq!(f.counts(), (1, 0, 0), "just under slow_call_duration is not slow");
    let p = f.cb.acquire().unwrap();
    f.clock.advance(SEC);
    p.record(Success);
    assert_eq!(f.state(), State::Open, "1 slow of 2 reaches 50 %");
}

#[test]
fn a_slow_failure_counts_in_both_rates() {
    let f = breaker(count(4, 4).slow_call_duration(SEC));
    let p = f.cb.acquire().unwrap();
    f.clock.advance(Duration::from_secs(2));
    p.record(Failure);
    assert_eq!(f.counts(), (1, 1, 1));
    let last = f.events.lock().unwrap().last().cloned();
    assert_eq!(last, Some(CircuitBreakerEvent::Failure { instance: "cb".into(), key: None, slow: true }));
}

#[test]
fn without_slow_call_duration_nothing_is_slow() {
    let f = breaker(count(2, 2));
    let p = f.cb.acquire().unwrap();
    f.clock.advance(Duration::from_secs(3600));
    p.record(Success);
    assert_eq!(f.counts(), (1, 0, 0));
}

#[test]
fn half_open_probes_reopen_on_the_slow_rate() {
    let f = half_open(count(2, 2).slow_call_duration(SEC).permitted_calls_in_half_open(2));
    let a = f.cb.acquire().unwrap();
    let b = f.cb.acquire().unwrap();
    f.clock.advance(SEC);
    a.record(Success);
    b.record(Success); // 2 of 2 slow = 100 %
    assert_eq!(f.state(), State::Open);
}

fn time(seconds: u32, min: u32) -> CircuitBreakerConfigBuilder {
    count(seconds, min).window_type(WindowType::Time)
}

#[test]
fn time_window_forgets_expired_seconds() {
    let f = breaker(time(10, 3));
    f.calls(&[Failure, Failure]);
    f.clock.advance(Duration::from_secs(10));
    f.calls(&[Success]);
    assert_eq!((f.state(), f.counts()), (State::Closed, (1, 0, 0)));
    f.calls(&[Failure, Failure]); // 2 of 3
    assert_eq!(f.state(), State::Open);
}

#[test]
fn time_window_is_not_capped_by_its_size_and_judges_a_success_that_reaches_minimum_calls() {
    let f = breaker(time(2, 4));
    f.calls(&[Failure, Failure, Success]);
    assert_eq!(f.state(), State::Closed);
    f.clock.advance(SEC);
    f.calls(&[Success]); // 2 of 4, across two seconds
    assert_eq!(f.state(), State::Open);
}

#[test]
fn time_window_opens_when_expiry_raises_the_rate() {
    let f = breaker(time(10, 3).failure_rate_threshold(60.0));
    f.calls(&[Success, Success]);
    f.clock.advance(Duration::from_secs(5));
    f.calls(&[Failure, Failure]); // 2 of 4
    assert_eq!(f.state(), State::Closed);
    f.clock.advance(Duration::from_secs(5)); // the two successes expire
    f.calls(&[Success]); // 2 of 3 = 66 %
    assert_eq!(f.state(), State::Open);
}

#[test]
fn outcomes_of_calls_admitted_in_an_earlier_state_are_not_recorded() {
    let f = breaker(count(2, 2).wait_in_open(SEC).permitted_calls_in_half_open(1));
    let old = f.cb.acquire().unwrap();
    f.trip(2);
    f.clock.advance(SEC);
    let probe = f.cb.acquire().unwrap();
    old.record(Failure); // admitted while closed: not a probe
    assert_eq!((f.state(), f.counts()), (State::HalfOpen, (0, 0, 0)));
    probe.record(Success);
    assert_eq!(f.state(), State::Closed);

    let before_reset = f.cb.acquire().unwrap();
    f.state.reset();
    before_reset.record(Failure);
    assert_eq!(f.counts(), (0, 0, 0));
}

#[test]
fn forced_open_refuses_everything_until_reset() {
    let f = breaker(count(2, 2).wait_in_open(Duration::ZERO));
    f.state.force_open();
    f.clock.advance(Duration::from_secs(3600));
    assert!(f.cb.acquire().is_err());
    assert_eq!(f.state(), State::ForcedOpen);
    f.state.force_open(); // already forced: no new transition
    f.state.reset();
    let s = f.snap();
    assert_eq!((s.state, s.not_permitted_calls), (State::Closed, 0));
    assert!(f.cb.acquire().is_ok());
    assert_eq!(f.transitions(), [(State::Closed, State::ForcedOpen), (State::ForcedOpen, State::Closed)]);
    assert!(matches!(f.events.lock().unwrap().last(), Some(CircuitBreakerEvent::Reset { .. })));
}

#[test]
fn disabled_lets_everything_through_and_records_nothing() {
    let f = breaker(count(2, 2));
    f.calls(&[Failure]);
    f.state.disable();
    f.calls(&[Failure; 10]);
    assert_eq!((f.state(), f.counts()), (State::Disabled, (0, 0, 0)));
    f.state.reset();
    assert_eq!(f.counts(), (0, 0, 0), "reset starts an empty window");
    f.calls(&[Failure, Failure]);
    assert_eq!(f.state(), State::Open);
}

#[test]
fn reset_closes_an_open_breaker_and_zeroes_its_counters() {
    let f = breaker(count(2, 2));
    f.trip(2);
    assert!(f.cb.acquire().is_err());
    f.state.reset();
    let s = f.snap();
    assert_eq!((s.state, s.buffered_calls, s.failed_calls, s.not_permitted_calls), (State::Closed, 0, 0, 0));
}

#[test]
fn ignored_outcomes_are_not_recorded() {
    let f = breaker(count(2, 2));
    f.calls(&[Ignored, Ignored, Failure]);
    assert_eq!((f.state(), f.counts()), (State::Closed, (1, 1, 0)));
    assert!(f.events.lock().unwrap().contains(&CircuitBreakerEvent::Ignored { instance: "cb".into(), key: None }));
}

#[test]
fn an_ignored_probe_gives_its_permit_back() {
    let f = half_open(count(2, 2).permitted_calls_in_half_open(1));
    f.cb.acquire().unwrap().record(Ignored);
    assert_eq!((f.state(), f.counts()), (State::HalfOpen, (0, 0, 0)));
    f.cb.acquire().expect("the permit came back").record(Success);
    assert_eq!(f.state(), State::Closed);
}

#[test]
fn a_dropped_probe_gives_its_permit_back_and_records_nothing() {
    let f = half_open(count(2, 2).permitted_calls_in_half_open(1));
    drop(f.cb.acquire().unwrap());
    assert_eq!(f.counts(), (0, 0, 0));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _permit = f.cb.acquire().unwrap();
        panic!("the method panicked");
    }));
    assert!(panicked.is_err());
    f.cb.acquire().expect("not stuck").record(Success);
    assert_eq!(f.state(), State::Closed);
}

#[test]
fn a_breaker_disabled_by_configuration_is_a_plain_call() {
    let f = breaker(count(2, 2).enabled(false));
    f.calls(&[Failure; 5]);
    assert_eq!((f.state(), f.counts()), (State::Closed, (0, 0, 0)));
    assert!(f.events.lock().unwrap().is_empty());
}

#[test]
fn full_run_publishes_transitions_and_per_call_events() {
    let f = breaker(count(2, 2).wait_in_open(SEC).permitted_calls_in_half_open(1));
    f.calls(&[Success, Failure]);
    assert!(f.cb.acquire().is_err());
    f.clock.advance(SEC);
    f.calls(&[Success]);
    let id = || Arc::<str>::from("cb");
    let expected = [
        CircuitBreakerEvent::Success { instance: id(), key: None, slow: false },
        CircuitBreakerEvent::Failure { instance: id(), key: None, slow: false },
        CircuitBreakerEvent::StateTransition { instance: id(), key: None, from: State::Closed, to: State::Open },
        CircuitBreakerEvent::CallNotPermitted { instance: id(), key: None },
        CircuitBreakerEvent::StateTransition { instance: id(), key: None, from: State::Open, to: State::HalfOpen },
        CircuitBreakerEvent::Success { instance: id(), key: None, slow: false },
        CircuitBreakerEvent::StateTransition { instance: id(), key: None, from: State::HalfOpen, to: State::Closed },
    ];
    assert_eq!(*f.events.lock().unwrap(), expected);
}

#[test]
fn outcome_classification() {
    let local = Rejection::BulkheadFull { instance: "b".into() };
    let timeout = Rejection::CallTimeout { instance: "t".into(), timeout: SEC };
    let nested = Rejection::CallNotPermitted { instance: "n".into() };
    let never = || -> bool { panic!("patterns are not consulted for rejections") };
    assert_eq!(Outcome::of_error(Some(&local), never, never), Ignored);
    assert_eq!(Outcome::of_error(Some(&timeout), never, never), Failure);
    assert_eq!(Outcome::of_error(Some(&nested), never, never), Failure);
    assert_eq!(Outcome::of_error(None, || true, never), Ignored);
    assert_eq!(Outcome::of_error(None, || false, || true), Failure);
    assert_eq!(Outcome::of_error(None, || false, || false), Success);
    assert_eq!(Outcome::of_rejection(None), None);
}

#[test]
fn stress_an_open_breaker_never_lets_a_call_through() {
    let f = breaker(count(20, 20));
    let cb = &f.cb;
    let (permitted, refused) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(move || {
                    let (mut permitted, mut refused) = (0u64, 0u64);
                    for _ in 0..5_000 {
                        match cb.acquire() {
                            Ok(p) => {
                                assert_eq!(
                                    refused, 0,
                                    "a call passed after a refusal: the open breaker let it through"
                                );
                                permitted += 1;
                                p.record(Failure);
                            }
                            Err(_) => refused += 1,
                        }
                    }
                    (permitted, refused)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let s = f.snap();
    assert_eq!(s.state, State::Open);
    assert_eq!(permitted + refused, 20_000);
    assert_eq!(s.not_permitted_calls, refused);
    assert!(permitted >= 20, "the window needed 20 failures to open, got {permitted}");
    assert_eq!(f.transitions(), [(State::Closed, State::Open)]);
}

#[test]
fn stress_forced_open_refuses_every_call_started_after_it() {
    let f = breaker(count(1000, 1000).failure_rate_threshold(100.0));
    let (cb, state) = (&f.cb, &f.state);
    let (forced, stop, attempts) = (AtomicBool::new(false), AtomicBool::new(false), AtomicU64::new(0));
    let (permitted, refused) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let (forced, stop, attempts) = (&forced, &stop, &attempts);
                s.spawn(move || {
                    let (mut permitted, mut refused) = (0u64, 0u64);
                    let mut n = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        let after_force = forced.load(Ordering::SeqCst);
                        match cb.acquire() {
                            Ok(p) => {
                                assert!(!after_force, "a call passed a forced-open breaker");
                                permitted += 1;
                                p.record(if (n + i).is_multiple_of(3) { Failure } else { Success });
                            }
                            Err(_) => refused += 1,
                        }
                        n += 1;
                        attempts.fetch_add(1, Ordering::SeqCst);
                    }
                    (permitted, refused)
                })
            })
            .collect();
        while attempts.load(Ordering::SeqCst) < 3_000 {
            std::thread::yield_now();
        }
        state.force_open();
        forced.store(true, Ordering::SeqCst);
        let seen = attempts.load(Ordering::SeqCst);
        while attempts.load(Ordering::SeqCst) < seen + 3_000 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::SeqCst);
        workers.into_iter().map(|w| w.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    assert_eq!(permitted + refused, attempts.load(Ordering::SeqCst));
    assert!(refused >= 3_000);
    assert_eq!(f.snap().not_permitted_calls, refused);
    assert_eq!(f.state(), State::ForcedOpen);
}

#[test]
fn stress_closed_counts_add_up() {
    let f = breaker(count(40_000, 40_000).failure_rate_threshold(100.0));
    let cb = &f.cb;
    std::thread::scope(|s| {
        for t in 0..4u32 {
            s.spawn(move || {
                for i in 0..10_000u32 {
                    cb.acquire().unwrap().record(if (i + t).is_multiple_of(4) { Failure } else { Success });
                }
            });
        }
    });
    let s = f.snap();
    assert_eq!(
        (s.state, s.buffered_calls, s.failed_calls, s.failure_rate),
        (State::Closed, 40_000, 10_000, Some(25.0))
    );
}

#[test]
fn stress_half_open_admits_exactly_its_probes() {
    let f = half_open(count(2, 2).permitted_calls_in_half_open(5));
    let cb = &f.cb;
    let granted: usize = std::thread::scope(|s| {
        let workers: Vec<_> =
            (0..4).map(|_| s.spawn(move || (0..1_000).filter_map(|_| cb.acquire().ok()).collect::<Vec<_>>())).collect();
        let permits: Vec<_> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
        permits.len() // dropped here: every slot comes back
    });
    assert_eq!(granted, 5);
    assert_eq!(f.state(), State::HalfOpen);
    f.calls(&[Success; 5]);
    assert_eq!(f.state(), State::Closed);
}
