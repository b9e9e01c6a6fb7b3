//! loom models of the breaker's lock-free parts (run with `RUSTFLAGS="--cfg loom"`, see
//! `docs/reliability.md`): every interleaving of 2–3 threads, up to the preemption bound.

use std::sync::Arc;
use std::sync::atomic::AtomicU64 as Count;
use std::time::Duration;

use loom::thread;

use super::half_open::{Done, Probes, Take};
use super::policy::Outcome;
use super::state::CircuitBreakerState;
use super::{CircuitBreakerConfigBuilder, CircuitBreakerEvent, State};
use crate::clock::{Clock, ManualClock};
use crate::events::{Listener, Publisher};
use crate::kit::Layer;
use crate::stripes::{StripedCounter, release_at_thread_end};
use crate::sync::atomic::Ordering;

/// A count-window breaker of 2 calls judged at 2, on a manual clock, counting its transitions.
///
/// Its listener puts it off the fast path (`NOT_FAST`: every outcome is recorded out of line);
/// [`quiet`] builds the same breaker without one, whose closed calls take the fast path.
fn breaker(clock: &ManualClock, probes: u32) -> (Arc<CircuitBreakerState>, Arc<Count>) {
    let config = model_config(probes, 2, 2);
    let transitions = Arc::new(Count::new(0));
    let seen = Arc::clone(&transitions);
    let listener: Listener<CircuitBreakerEvent> = Arc::new(move |e| {
        if matches!(e, CircuitBreakerEvent::StateTransition { .. }) {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    });
    let instance: Arc<str> = Arc::from("cb");
    let publisher = Publisher::detached(&[listener], &instance);
    let timer = Arc::new(Clock::from(clock).into_timer());
    (Arc::new(CircuitBreakerState::new(instance, config, timer, publisher)), transitions)
}

fn model_config(probes: u32, window: u32, min: u32) -> super::CircuitBreakerConfig {
    CircuitBreakerConfigBuilder::new()
        .window_size(window)
        .minimum_calls(min)
        .permitted_calls_in_half_open(probes)
        .wait_in_open(Duration::from_secs(1))
        .resolve("cb")
        .expect("a valid model config")
}

/// A count-window breaker without listeners: closed calls take the fast path (one compare to
/// record a success) and failures short of `minimum_calls` set `PENDING` on the word.
fn quiet(clock: &ManualClock, probes: u32, window: u32, min: u32) -> Arc<CircuitBreakerState> {
    let instance: Arc<str> = Arc::from("cb");
    let publisher = Publisher::detached(&[], &instance);
    let timer = Arc::new(Clock::from(clock).into_timer());
    Arc::new(CircuitBreakerState::new(instance, model_config(probes, window, min), timer, publisher))
}

fn call(cb: &CircuitBreakerState, outcome: Outcome) -> bool {
    match cb.acquire() {
        Ok(ticket) => {
            cb.record(ticket, outcome);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn loom_half_open_grants_exactly_n_probes_and_exactly_one_decides() {
    loom::model(|| {
        let probes = Arc::new(Probes::new());
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let probes = Arc::clone(&probes);
                thread::spawn(move || match probes.try_take(1, 2) {
                    Take::Granted => Some(probes.complete(1, 0, 2)),
                    Take::Full => None,
                    Take::Stale => panic!("one epoch only"),
                })
            })
            .collect();
        let done: Vec<Done> = handles.into_iter().filter_map(|h| h.join().unwrap()).collect();
        assert_eq!(done.len(), 2, "exactly the permitted probes");
        let last: Vec<_> = done.iter().filter(|d| matches!(d, Done::Last(_))).collect();
        assert_eq!(last.len(), 1, "exactly one completion decides: {done:?}");
        assert!(matches!(last[0], Done::Last(t) if t.calls == 2));
    });
}

#[test]
fn loom_a_given_back_probe_is_neither_lost_nor_doubled() {
    loom::model(|| {
        let probes = Arc::new(Probes::new());
        let first = Arc::clone(&probes);
        let giver = thread::spawn(move || {
            let took = first.try_take(1, 1) == Take::Granted;
            if took {
                first.give_back(1);
            }
            took
        });
        let second = Arc::clone(&probes);
        let taker = thread::spawn(move || second.try_take(1, 1) == Take::Granted);
        let (gave_back, taken) = (giver.join().unwrap(), taker.join().unwrap());
        assert!(gave_back || taken, "one of them got the only permit");
        // The permit is free again exactly when the taker does not hold it.
        assert_eq!(probes.try_take(1, 1) == Take::Granted, !taken);
    });
}

/// Two threads each fail once, then call again: neither may be admitted after it saw the breaker
/// open.
fn two_failing_callers(cb: &Arc<CircuitBreakerState>) {
    let failing: Vec<_> = (0..2)
        .map(|_| {
            let cb = Arc::clone(cb);
            thread::spawn(move || {
                call(&cb, Outcome::Failure);
                let seen = cb.state();
                let admitted = call(&cb, Outcome::Success);
                assert!(!(seen == State::Open && admitted), "admitted after seeing the breaker open");
            })
        })
        .collect();
    failing.into_iter().for_each(|h| h.join().unwrap());
}

#[test]
fn loom_the_breaker_opens_once_and_an_open_breaker_never_admits() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (cb, transitions) = breaker(&clock, 1);
        two_failing_callers(&cb);
        assert_eq!(cb.state(), State::Open);
        assert_eq!(transitions.load(Ordering::SeqCst), 1, "one Closed → Open transition");
        assert!(!call(&cb, Outcome::Success));
    });
}

#[test]
fn loom_half_open_admits_exactly_its_probes_then_closes_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (cb, transitions) = breaker(&clock, 2);
        assert!(call(&cb, Outcome::Failure) && call(&cb, Outcome::Failure));
        assert_eq!(cb.state(), State::Open);
        clock.advance(Duration::from_secs(1));
        let probes: Vec<_> = (0..3)
            .map(|_| {
                let cb = Arc::clone(&cb);
                thread::spawn(move || call(&cb, Outcome::Success))
            })
            .collect();
        let admitted = probes.into_iter().map(|h| h.join().unwrap()).filter(|&a| a).count();
        // Two probes, or three calls when the third came after the two probes had closed it.
        assert!(admitted >= 2, "{admitted}");
        assert_eq!(cb.state(), State::Closed);
        // Closed → Open, Open → HalfOpen, HalfOpen → Closed: each exactly once.
        assert_eq!(transitions.load(Ordering::SeqCst), 3);
    });
}

/// The first model on the fast path: the first failure of each thread sets `PENDING` (short of
/// `minimum_calls`), racing the other's failure, judgement and opening.
#[test]
fn loom_a_fast_path_breaker_opens_and_an_open_breaker_never_admits() {
    loom::model(|| {
        let clock = ManualClock::new();
        let cb = quiet(&clock, 1, 2, 2);
        two_failing_callers(&cb);
        assert_eq!(cb.state(), State::Open);
        assert!(!call(&cb, Outcome::Success));
    });
}

/// The half-open model on the fast path: the probes' successes close the breaker into a fresh
/// closed word, and a call admitted there records on the fast path.
#[test]
fn loom_a_fast_path_breaker_half_opens_and_closes() {
    loom::model(|| {
        let clock = ManualClock::new();
        let cb = quiet(&clock, 2, 2, 2);
        assert!(call(&cb, Outcome::Failure) && call(&cb, Outcome::Failure));
        assert_eq!(cb.state(), State::Open);
        clock.advance(Duration::from_secs(1));
        let probes: Vec<_> = (0..3)
            .map(|_| {
                let cb = Arc::clone(&cb);
                thread::spawn(move || call(&cb, Outcome::Success))
            })
            .collect();
        let admitted = probes.into_iter().map(|h| h.join().unwrap()).filter(|&a| a).count();
        assert!(admitted >= 2, "{admitted}");
        assert_eq!(cb.state(), State::Closed);
        assert!(!cb.pending(), "a fresh closed word");
        assert!(call(&cb, Outcome::Success));
        assert_eq!(cb.snapshot().buffered_calls, 1 + (admitted as u64 - 2), "a fresh window");
    });
}

/// A failure short of `minimum_calls` sets `PENDING` on the word while another call admitted on the
/// fast path (before the flag) is still out: that call's success is still recorded (out of line),
/// the flag stays while failures wait, and the success that reaches the minimum judges and clears it.
#[test]
fn loom_pending_flag_loses_no_outcome_and_clears_at_the_minimum() {
    loom::model(|| {
        let clock = ManualClock::new();
        let cb = quiet(&clock, 1, 4, 3);
        let admitted = cb.acquire().expect("closed");
        let succeeding = {
            let cb = Arc::clone(&cb);
            thread::spawn(move || cb.record(admitted, Outcome::Success))
        };
        let failing = {
            let cb = Arc::clone(&cb);
            thread::spawn(move || assert!(call(&cb, Outcome::Failure)))
        };
        succeeding.join().unwrap();
        failing.join().unwrap();
        let s = cb.snapshot();
        assert_eq!((s.buffered_calls, s.failed_calls), (2, 1), "no outcome lost");
        assert!(cb.pending(), "a failure waits for minimum_calls");
        assert!(call(&cb, Outcome::Success), "the third call reaches the minimum: 1 of 3 failed");
        assert!(!cb.pending(), "judged, and nothing waits any more");
        assert_eq!(cb.state(), State::Closed);
    });
}

#[test]
fn loom_count_window_stripes_lose_no_increment() {
    loom::model(|| {
        let counter = Arc::new(StripedCounter::new());
        let adders: Vec<_> = (0..2)
            .map(|_| {
                let counter = Arc::clone(&counter);
                thread::spawn(move || {
                    counter.add_one();
                    counter.add_one();
                    release_at_thread_end();
                })
            })
            .collect();
        // A third thread may take over a stripe given back: it must see the increments made on it.
        let late = Arc::clone(&counter);
        let third = thread::spawn(move || {
            late.add_one();
            release_at_thread_end();
        });
        adders.into_iter().for_each(|h| h.join().unwrap());
        third.join().unwrap();
        assert_eq!(counter.sum(), 5);
    });
}
