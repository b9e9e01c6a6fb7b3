//! The executor on the manual clock, with exact times: Polly's hedging scenarios, rewritten for
//! attempts that run side by side inside one future.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use super::policy::HedgePolicy;
use super::state::HedgeState;
use super::{HedgeConfig, HedgeEvent};
use crate::clock::{Clock, ManualClock};
use crate::events::{Listener, Publisher};
use testkit::block_on;

const MS: Duration = Duration::from_millis(1);

struct Fixture {
    clock: ManualClock,
    hedge: HedgePolicy,
    events: Arc<Mutex<Vec<HedgeEvent>>>,
    /// When each attempt started, in start order.
    starts: RefCell<Vec<Duration>>,
    /// Attempts dropped before they finished.
    cancelled: Arc<Mutex<Vec<u32>>>,
}

/// One scripted attempt: how long it takes, and whether it answers `Ok(n)` or `Err(n)`
/// (`Err(100 + n)` stands for a `CallNotPermitted`).
#[derive(Clone, Copy)]
enum Step {
    Ok(u64),
    Err(u64),
    Refused,
}

/// Records its attempt as cancelled unless it was disarmed by finishing.
struct DropGuard {
    attempt: u32,
    armed: bool,
    cancelled: Arc<Mutex<Vec<u32>>>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if self.armed {
            self.cancelled.lock().unwrap().push(self.attempt);
        }
    }
}

fn fixture(delay: Duration, max_hedged_attempts: u32) -> Fixture {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let listener: Listener<HedgeEvent> = Arc::new(move |e| sink.lock().unwrap().push(e.clone()));
    let timer = Arc::new(Clock::from(&clock).into_timer());
    let config = HedgeConfig { delay, max_hedged_attempts, ..Default::default() };
    let state =
        HedgeState::new("m::Api::get".into(), config, timer, Publisher::detached(&[listener], &"m::Api::get".into()));
    let hedge = HedgePolicy::new(Arc::new(state));
    Fixture { clock, hedge, events, starts: RefCell::new(Vec::new()), cancelled: Arc::default() }
}

impl Fixture {
    /// Runs one call whose attempt n follows `script[n - 1]`.
    async fn call(&self, script: &[Step]) -> Result<u32, u32> {
        let make = || {
            let mut starts = self.starts.borrow_mut();
            starts.push(self.clock.elapsed());
            let attempt = starts.len() as u32;
            let step = script[attempt as usize - 1];
            let clock = self.clock.clone();
            let cancelled = Arc::clone(&self.cancelled);
            async move {
                let mut guard = DropGuard { attempt, armed: true, cancelled };
                let (ms, outcome) = match step {
                    Step::Ok(ms) => (ms, Ok(attempt)),
                    Step::Err(ms) => (ms, Err(attempt)),
                    Step::Refused => (0, Err(100 + attempt)),
                };
                clock.sleep(Duration::from_millis(ms)).await;
                guard.armed = false;
                outcome
            }
        };
        self.hedge.run(make, |e: &u32| *e > 100).await
    }

    fn starts(&self) -> Vec<Duration> {
        self.starts.borrow().clone()
    }

    fn events(&self) -> Vec<HedgeEvent> {
        self.events.lock().unwrap().clone()
    }

    fn cancelled(&self) -> Vec<u32> {
        self.cancelled.lock().unwrap().clone()
    }

    /// The snapshot's `(hedged_calls, hedge_wins)`.
    fn hedged_and_won(&self) -> (u64, u64) {
        let s = self.hedge.state().snapshot();
        (s.hedged_calls, s.hedge_wins)
    }
}

fn hedged(attempt: u32) -> HedgeEvent {
    HedgeEvent::Hedged { instance: "m::Api::get".into(), attempt }
}

fn finished(attempts: u32, winner: Option<u32>) -> HedgeEvent {
    HedgeEvent::Finished { instance: "m::Api::get".into(), attempts, winner }
}

#[test]
fn a_first_attempt_within_the_delay_is_the_only_one_and_publishes_nothing() {
    let f = fixture(100 * MS, 1);
    assert_eq!(block_on(f.call(&[Step::Ok(50)])), Ok(1));
    assert_eq!(f.starts(), [Duration::ZERO]);
    assert_eq!(f.clock.elapsed(), 50 * MS, "the timer that never fired left the clock at the answer");
    assert!(f.events().is_empty());
    assert_eq!(f.hedged_and_won(), (0, 0));
}

#[test]
fn a_slow_first_attempt_is_hedged_at_the_delay_and_dropped_when_the_hedge_wins() {
    let f = fixture(100 * MS, 1);
    assert_eq!(block_on(f.call(&[Step::Ok(500), Step::Ok(200)])), Ok(2));
    assert_eq!(f.starts(), [Duration::ZERO, 100 * MS]);
    assert_eq!(f.clock.elapsed(), 300 * MS, "the hedge answered at its own finish time");
    assert_eq!(f.cancelled(), [1], "the first attempt was dropped, not run to its end");
    assert_eq!(f.events(), [hedged(2), finished(2, Some(2))]);
    assert_eq!(f.hedged_and_won(), (1, 1));
}

#[test]
fn a_failed_first_attempt_starts_the_next_at_once() {
    let f = fixture(100 * MS, 1);
    assert_eq!(block_on(f.call(&[Step::Err(20), Step::Ok(30)])), Ok(2));
    assert_eq!(f.starts(), [Duration::ZERO, 20 * MS]);
    assert_eq!(f.clock.elapsed(), 50 * MS);
    assert!(f.cancelled().is_empty());
}

#[test]
fn when_every_attempt_fails_the_one_that_finished_last_is_returned() {
    let f = fixture(100 * MS, 1);
    // Attempt 2 fails at 200 ms, attempt 1 at 300 ms: attempt 1's failure is the call's.
    assert_eq!(block_on(f.call(&[Step::Err(300), Step::Err(100)])), Err(1));
    assert_eq!(f.clock.elapsed(), 300 * MS);
    assert_eq!(f.events(), [hedged(2), finished(2, None)]);
    assert_eq!(f.hedged_and_won(), (1, 0));
}

#[test]
fn two_hedged_attempts_start_at_one_and_two_delays() {
    let f = fixture(100 * MS, 2);
    assert_eq!(block_on(f.call(&[Step::Ok(1000), Step::Ok(1000), Step::Ok(50)])), Ok(3));
    assert_eq!(f.starts(), [Duration::ZERO, 100 * MS, 200 * MS]);
    assert_eq!(f.clock.elapsed(), 250 * MS);
    let mut cancelled = f.cancelled();
    cancelled.sort();
    assert_eq!(cancelled, [1, 2]);
    assert_eq!(f.events(), [hedged(2), hedged(3), finished(3, Some(3))]);
}

#[test]
fn a_refused_attempt_starts_no_further_attempt_and_running_ones_go_on() {
    let f = fixture(100 * MS, 2);
    assert_eq!(block_on(f.call(&[Step::Refused])), Err(101), "refused at once: no hedge");
    assert_eq!(f.starts(), [Duration::ZERO]);
    assert!(f.events().is_empty());

    let f = fixture(100 * MS, 2);
    assert_eq!(block_on(f.call(&[Step::Ok(500), Step::Refused, Step::Ok(1)])), Ok(1));
    assert_eq!(f.starts(), [Duration::ZERO, 100 * MS], "no third attempt after the refusal");
    assert_eq!(f.clock.elapsed(), 500 * MS, "the first attempt went on to its answer");
    assert_eq!(f.events(), [hedged(2), finished(2, Some(1))]);
}

#[test]
fn a_hedge_finishing_exactly_when_the_next_timer_fires_wins() {
    let f = fixture(100 * MS, 2);
    // Attempt 2 starts at 100 ms and answers at 200 ms, when attempt 3 would start.
    assert_eq!(block_on(f.call(&[Step::Ok(1000), Step::Ok(100), Step::Ok(1)])), Ok(2));
    assert_eq!(f.starts(), [Duration::ZERO, 100 * MS]);
    assert_eq!(f.clock.elapsed(), 200 * MS);

    let f = fixture(100 * MS, 1);
    assert_eq!(block_on(f.call(&[Step::Ok(100), Step::Ok(1)])), Ok(1), "a first attempt at the delay wins too");
    assert_eq!(f.starts(), [Duration::ZERO]);
}

#[test]
fn a_zero_delay_starts_every_attempt_at_once() {
    let f = fixture(Duration::ZERO, 2);
    assert_eq!(block_on(f.call(&[Step::Ok(30), Step::Ok(20), Step::Ok(10)])), Ok(3));
    assert_eq!(f.starts(), [Duration::ZERO; 3]);
    assert_eq!(f.clock.elapsed(), 10 * MS);
}

#[test]
fn dropping_the_call_drops_every_attempt_and_publishes_nothing_more() {
    let f = fixture(100 * MS, 2);
    {
        let script = [Step::Ok(1000), Step::Ok(1000), Step::Ok(1000)];
        let mut call = pin!(f.call(&script));
        let mut cx = Context::from_waker(Waker::noop());
        while f.starts().len() < 2 {
            assert!(call.as_mut().poll(&mut cx).is_pending());
        }
    }
    let mut cancelled = f.cancelled();
    cancelled.sort();
    assert_eq!(cancelled, [1, 2]);
    assert_eq!(f.events(), [hedged(2)], "no Finished for a dropped call");
    assert_eq!(f.clock.elapsed(), 100 * MS, "the dropped waits left the clock where it was");
}

#[test]
fn a_disabled_hedge_is_one_plain_attempt() {
    let mut f = fixture(100 * MS, 1);
    let timer = Arc::new(Clock::from(&f.clock).into_timer());
    let config = HedgeConfig { enabled: false, ..Default::default() };
    f.hedge = HedgePolicy::new(Arc::new(HedgeState::new(
        "m::Api::get".into(),
        config,
        timer,
        Publisher::detached(&[], &"m::Api::get".into()),
    )));
    assert_eq!(block_on(f.call(&[Step::Ok(500)])), Ok(1));
    assert_eq!(f.starts(), [Duration::ZERO]);
}

#[test]
fn after_shutdown_no_attempt_is_added() {
    let f = fixture(100 * MS, 1);
    f.hedge.state().timer.shut_down();
    assert_eq!(block_on(f.call(&[Step::Ok(500), Step::Ok(1)])), Ok(1));
    assert_eq!(f.starts(), [Duration::ZERO]);
}

#[test]
fn the_call_is_send_when_its_attempts_are() {
    fn send<T: Send>(_: &T) {}
    let f = fixture(100 * MS, 1);
    let clock = f.clock.clone();
    let call = f.hedge.run(
        move || {
            let clock = clock.clone();
            async move {
                clock.sleep(MS).await;
                Ok::<u32, u32>(1)
            }
        },
        |_: &u32| false,
    );
    send(&call);
    assert_eq!(block_on(call), Ok(1));
}

#[test]
fn run_counting_counts_every_attempt_started_a_refused_one_included() {
    let f = fixture(100 * MS, 2);
    let mut attempts = 0;
    let outcome = block_on(f.hedge.run_counting(
        &mut attempts,
        || {
            let clock = f.clock.clone();
            async move {
                clock.sleep(1000 * MS).await;
                Err::<u32, u32>(7)
            }
        },
        |_| false,
    ));
    assert_eq!((outcome, attempts), (Err(7), 3));

    let mut attempts = 0;
    let refused = block_on(f.hedge.run_counting(&mut attempts, || async { Err::<u32, u32>(101) }, |e| *e > 100));
    assert_eq!((refused, attempts), (Err(101), 1));
}
