//! The timeout instance the generated code runs each attempt of an async method under.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use super::race::{Race, against_the_clock, against_the_clock_watched, first_poll};
use super::state::TimeoutState;
use super::{TimeoutConfig, TimeoutConfigBuilder, TimeoutEvent, TimeoutSnapshot};
use crate::error::{RegistryError, async_only_policy};
use crate::events::Publisher;
use crate::kit::{Inner, policy_kind};
use crate::rejection::Rejection;
use crate::slot_watch::{SlotWatch, WaitRefusal};

/// The field the generated code keeps for one method with a timeout: each attempt runs under its
/// own deadline.
#[derive(Clone, Debug)]
pub struct TimeoutPolicy {
    state: Arc<TimeoutState>,
}

impl TimeoutPolicy {
    pub(crate) fn new(state: Arc<TimeoutState>) -> Self {
        TimeoutPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Runs one attempt under the deadline `duration` from now: its output, or, when the deadline
    /// comes first, `Rejection::CallTimeout` after the attempt's future has been dropped.
    ///
    /// The deadline is taken from the coarse clock (one atomic load, never ahead of real time: on
    /// the system clock a deadline may come up to one coarse tick early, never late), and a timer is
    /// created only if the attempt is not ready on its first poll.
    #[inline]
    pub async fn run<F: Future>(&self, attempt: F) -> Result<F::Output, Rejection> {
        self.run_pinned(pin!(attempt)).await
    }

    /// [`run`](Self::run) for an attempt pinned where the caller keeps it: what the generated code
    /// calls, so the attempt's future is built once in the method's own future instead of being
    /// moved into this one (issue 16: timeout not firing, async, in the user-shaped harness).
    ///
    /// The future's poll is always inlined (an `async` block marked `#[inline(always)]`, which an
    /// `async fn` cannot be: its attribute goes to the function that builds the future): it holds
    /// only the common path, the deadline's reading and the attempt's first poll (`first_poll`,
    /// whose poll is always inlined too). The race against the timer, for an attempt still pending
    /// after its first poll, is a future of its own that is never inlined (`against_the_clock`),
    /// so the caller's poll does not grow by the timer's code and state. The figures are
    /// in `docs/benchmarks.md` (`user_timeout/ours_async`).
    #[inline(always)]
    pub fn run_pinned<F: Future>(
        &self,
        mut attempt: Pin<&mut F>,
    ) -> impl Future<Output = Result<F::Output, Rejection>> {
        let state = &*self.state;
        #[inline(always)]
        async move {
            let duration = state.duration.load(Ordering::Relaxed);
            if duration == 0 {
                return Ok(attempt.await);
            }
            let deadline = state.timer.coarse_now().saturating_add(duration);
            if let Poll::Ready(output) = first_poll(attempt.as_mut()).await {
                return Ok(output);
            }
            match against_the_clock(&state.timer, deadline, attempt).await {
                Race::Finished(output) => Ok(output),
                Race::TimedOut => Err(state.fired(duration)),
            }
        }
    }
}

impl TimeoutPolicy {
    /// [`run`](Self::run) for an attempt that takes a slot of `bulkhead` inside this timeout
    /// (SPEC §6), `watch` handed to its acquisition
    /// ([`BulkheadPolicy::acquire_async_watched`](crate::__private::BulkheadPolicy::acquire_async_watched)): when the deadline comes while the attempt
    /// still waits for its slot, the attempt ends as the bulkhead's refusal,
    /// `Rejection::BulkheadFull`, not as `CallTimeout`, and this timeout counts and publishes
    /// nothing (see the module docs).
    #[inline]
    pub async fn run_watched<F: Future, B: WaitRefusal + ?Sized>(
        &self,
        attempt: F,
        watch: &SlotWatch,
        bulkhead: &B,
    ) -> Result<F::Output, Rejection> {
        self.run_pinned_watched(pin!(attempt), watch, bulkhead).await
    }

    /// [`run_pinned`](Self::run_pinned) for an attempt that takes a slot of `bulkhead` inside
    /// this timeout: as [`run_watched`](Self::run_watched). What the generated code calls when a
    /// bulkhead sits inside the timeout. The path of an attempt that finishes in time is
    /// `run_pinned`'s; `watch` is read only once the deadline has come.
    #[inline(always)]
    pub fn run_pinned_watched<'a, F: Future, B: WaitRefusal + ?Sized>(
        &'a self,
        mut attempt: Pin<&'a mut F>,
        watch: &'a SlotWatch,
        bulkhead: &'a B,
    ) -> impl Future<Output = Result<F::Output, Rejection>> + 'a {
        let state = &*self.state;
        #[inline(always)]
        async move {
            let duration = state.duration.load(Ordering::Relaxed);
            if duration == 0 {
                return Ok(attempt.await);
            }
            let deadline = state.timer.coarse_now().saturating_add(duration);
            if let Poll::Ready(output) = first_poll(attempt.as_mut()).await {
                return Ok(output);
            }
            match against_the_clock_watched(&state.timer, deadline, attempt, watch).await {
                Race::Finished(output) => Ok(output),
                Race::TimedOut => Err(expired(state, duration, watch, bulkhead)),
            }
        }
    }
}

/// The deadline came: the bulkhead's refusal for an attempt still waiting for its slot, the
/// timeout's for one that had it.
#[cold]
#[inline(never)]
fn expired<B: WaitRefusal + ?Sized>(state: &TimeoutState, nanos: u64, watch: &SlotWatch, bulkhead: &B) -> Rejection {
    match watch.is_waiting() {
        true => bulkhead.refuse_waiting(),
        false => state.fired(nanos),
    }
}

policy_kind! {
    TimeoutPolicy {
        builder: TimeoutConfigBuilder,
        state: TimeoutState,
        event: TimeoutEvent,
        snapshot: TimeoutSnapshot,
        metrics: TimeoutMetrics,
    }

    // A blocking call cannot be cancelled.
    async_only_policy!(
        TimeoutConfig,
        blocking: "a timeout needs an async method: a blocking call cannot be cancelled",
        waits: "this async method runs under a timeout",
    );

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: TimeoutConfig,
        events: Publisher<TimeoutEvent>,
    ) -> TimeoutState {
        TimeoutState::new(instance, config, Arc::clone(&inner.timer), events)
    }

    fn reconfigure(state: &TimeoutState, config: TimeoutConfig) {
        state.reconfigure(config);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    use testkit::block_on;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::events::{Listener, recorder};

    const MS: Duration = Duration::from_millis(1);

    fn timeout(clock: &ManualClock, duration: Duration, listeners: &[Listener<TimeoutEvent>]) -> TimeoutPolicy {
        let timer = Arc::new(Clock::from(clock).into_timer());
        let config = TimeoutConfig { duration, ..Default::default() };
        TimeoutPolicy::new(Arc::new(TimeoutState::new(
            "m::Api::get".into(),
            config,
            timer,
            Publisher::detached(listeners, &"m::Api::get".into()),
        )))
    }

    /// An attempt that sleeps `d` on the policy's (manual) clock, then returns `d`.
    async fn sleeper(t: &TimeoutPolicy, d: Duration) -> Duration {
        t.state.timer.sleep_async(d).await.unwrap();
        d
    }

    #[test]
    fn attempt_within_the_deadline_returns_and_leaves_the_clock_at_its_own_end() {
        let clock = ManualClock::new();
        let t = timeout(&clock, 1000 * MS, &[]);
        assert_eq!(block_on(t.run(sleeper(&t, 100 * MS))), Ok(100 * MS));
        assert_eq!(clock.elapsed(), 100 * MS, "the timer that did not fire did not move the clock");
        assert_eq!(block_on(t.run(async { 5 })), Ok(5));
        assert_eq!(clock.elapsed(), 100 * MS);
        assert_eq!(t.state.snapshot().timed_out, 0);
    }

    #[test]
    fn attempt_past_the_deadline_is_cut_off_at_the_deadline() {
        let clock = ManualClock::new();
        let (seen, listener) = recorder::<TimeoutEvent>();
        let t = timeout(&clock, 1000 * MS, &[listener]);
        let outcome = block_on(t.run(sleeper(&t, 2000 * MS)));
        let expected = Rejection::CallTimeout { instance: "m::Api::get".into(), timeout: 1000 * MS };
        assert_eq!(outcome, Err(expected));
        assert_eq!(clock.elapsed(), 1000 * MS);
        assert_eq!(t.state.snapshot().timed_out, 1);
        let event = TimeoutEvent::TimedOut { instance: "m::Api::get".into(), timeout: 1000 * MS };
        assert_eq!(*seen.lock().unwrap(), [event]);
    }

    #[test]
    fn the_attempt_is_dropped_before_the_call_fails() {
        struct Flag<'a>(&'a AtomicBool);
        impl Drop for Flag<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let clock = ManualClock::new();
        let dropped = AtomicBool::new(false);
        let t = timeout(&clock, 10 * MS, &[]);
        let outcome = block_on(async {
            let flag = Flag(&dropped);
            let result = t
                .run(async move {
                    let _flag = flag;
                    std::future::pending::<()>().await
                })
                .await;
            assert!(dropped.load(Ordering::SeqCst), "dropped by the time the rejection is seen");
            result
        });
        assert!(matches!(outcome, Err(Rejection::CallTimeout { .. })));
    }

    #[test]
    fn the_deadline_counts_from_the_start_of_the_attempt() {
        let clock = ManualClock::new();
        let t = timeout(&clock, 1000 * MS, &[]);
        let outcome = block_on(t.run(async {
            clock.advance(600 * MS); // synchronous work before the first await
            sleeper(&t, 600 * MS).await
        }));
        assert!(outcome.is_err());
        assert_eq!(clock.elapsed(), 1000 * MS);
    }

    #[test]
    fn shutdown_does_not_cut_attempts_short() {
        let clock = ManualClock::new();
        let t = timeout(&clock, 300 * MS, &[]);
        t.state.timer.shut_down();
        let outcome = block_on(t.run(std::future::pending::<()>()));
        assert!(outcome.is_err());
        assert_eq!(clock.elapsed(), 300 * MS, "the deadline held; shutdown did not fire it early");
    }

    #[test]
    fn disabled_timeout_never_fires() {
        let clock = ManualClock::new();
        let timer = Arc::new(Clock::from(&clock).into_timer());
        let config = TimeoutConfig { enabled: false, duration: MS };
        let t = TimeoutPolicy::new(Arc::new(TimeoutState::new(
            "x".into(),
            config,
            timer,
            Publisher::detached(&[], &"x".into()),
        )));
        assert_eq!(block_on(t.run(sleeper(&t, 5 * MS))), Ok(5 * MS));
    }

    #[test]
    fn run_is_send_when_the_attempt_is() {
        fn send<T: Send>(_: T) {}
        let t = timeout(&ManualClock::new(), MS, &[]);
        send(t.run(async { 1 }));
        send(t.run(sleeper(&t, MS)));
    }

    #[test]
    fn system_clock_timer_fires_and_a_ready_attempt_skips_it() {
        let timer = Arc::new(Clock::system().into_timer());
        let config = TimeoutConfig { duration: 5 * MS, ..Default::default() };
        let t = TimeoutPolicy::new(Arc::new(TimeoutState::new(
            "sys".into(),
            config,
            timer,
            Publisher::detached(&[], &"sys".into()),
        )));
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        assert_eq!(rt.block_on(t.run(async { 1 })), Ok(1));
        assert!(rt.block_on(t.run(std::future::pending::<()>())).is_err());
        t.state.timer.shut_down();
    }
}
