//! The race between an attempt and its deadline, with the timer created only when needed.
//!
//! Most attempts finish on their first poll or soon after, so the timer is the expensive part of a
//! timeout: the attempt is polled first, and only when it returns `Pending` for the first time is a
//! timer created (the deadline itself is fixed before, from the coarse clock). An attempt that is
//! ready at once therefore costs one atomic load and one poll, and the timer's state is never even
//! initialised. The futures are plain `async fn`s with stack-pinned locals: no boxing, no `unsafe`.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use crate::clock::Timer;
use crate::slot_watch::SlotWatch;

/// How the race ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Race<T> {
    /// The attempt finished first, with this output.
    Finished(T),
    /// The deadline came first; the attempt has been dropped.
    TimedOut,
}

/// Polls the attempt once, in place: most attempts finish here, before any timer exists.
#[inline(always)]
pub(crate) fn first_poll<F: Future>(attempt: Pin<&mut F>) -> FirstPoll<'_, F> {
    FirstPoll(attempt)
}

/// The future of [`first_poll`]: ready at once with the attempt's first `Poll`. A hand-written
/// future rather than a `poll_fn`, for its always-inlined `poll`: LLVM kept `PollFn::poll` out of
/// line, so the common path paid a call, a prologue and the result's trip through memory.
#[derive(Debug)]
pub(crate) struct FirstPoll<'a, F>(Pin<&'a mut F>);

impl<F: Future> Future for FirstPoll<'_, F> {
    type Output = Poll<F::Output>;

    /// Polled once by its one caller (`TimeoutPolicy::run_pinned`), which never polls it again
    /// after it is ready.
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Poll<F::Output>> {
        Poll::Ready(self.0.as_mut().poll(cx))
    }
}

/// The slow path, once the attempt has returned `Pending`: only now is the timer created. It is
/// polled first, in the same round as that `Pending` (so on the manual clock it takes its place
/// among the pending waits before the attempt is polled again); from then on the attempt is
/// polled first, so an attempt that finishes at the deadline wins.
///
/// Its poll is never inlined (the `async` block's `#[inline(never)]`): the caller's poll, inlined
/// into the method's, keeps only a call to it.
#[allow(clippy::manual_async_fn)] // an `async fn` would carry `#[inline(never)]` to its constructor, not its poll
pub(crate) fn against_the_clock<'a, F: Future>(
    timer: &'a Timer,
    deadline: u64,
    mut attempt: Pin<&'a mut F>,
) -> impl Future<Output = Race<F::Output>> + 'a {
    #[inline(never)]
    async move {
        let mut alarm = pin!(timer.deadline_async(deadline));
        let mut armed = false;
        poll_fn(|cx| {
            if armed && let Poll::Ready(output) = attempt.as_mut().poll(cx) {
                return Poll::Ready(Race::Finished(output));
            }
            armed = true;
            alarm.as_mut().poll(cx).map(|()| Race::TimedOut)
        })
        .await
    }
}

/// [`against_the_clock`] for an attempt that takes a bulkhead slot inside the timeout (SPEC §6),
/// `watch` telling whether it still waits for it. While it waits, each round asks the alarm
/// first: a deadline that has come ends the race before the attempt is polled again, so a slot
/// handed over at the deadline itself (freed, say, by another attempt cut off at the same
/// instant) starts no call that would be cut off at once; the attempt is `TimedOut` still
/// waiting, and its caller refuses it as the bulkhead. Once the attempt has its slot, rounds go
/// as in `against_the_clock` (the attempt first). The alarm is polled once per round either way,
/// so on a `ManualClock` it keeps its place in the deadline order.
#[allow(clippy::manual_async_fn)] // as `against_the_clock`: `#[inline(never)]` belongs on the poll
pub(crate) fn against_the_clock_watched<'a, F: Future>(
    timer: &'a Timer,
    deadline: u64,
    mut attempt: Pin<&'a mut F>,
    watch: &'a SlotWatch,
) -> impl Future<Output = Race<F::Output>> + 'a {
    #[inline(never)]
    async move {
        let mut alarm = pin!(timer.deadline_async(deadline));
        let mut armed = false;
        poll_fn(|cx| {
            if !armed {
                armed = true;
                return alarm.as_mut().poll(cx).map(|()| Race::TimedOut);
            }
            if watch.is_waiting() {
                if alarm.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Race::TimedOut);
                }
                return attempt.as_mut().poll(cx).map(Race::Finished);
            }
            if let Poll::Ready(output) = attempt.as_mut().poll(cx) {
                return Poll::Ready(Race::Finished(output));
            }
            alarm.as_mut().poll(cx).map(|()| Race::TimedOut)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    use testkit::block_on;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    /// Sets its flag when dropped.
    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// What `TimeoutPolicy::run` does: a first poll, then the race against the clock.
    async fn race<F: Future>(timer: &Timer, deadline: u64, attempt: F) -> Race<F::Output> {
        let mut attempt = pin!(attempt);
        match first_poll(attempt.as_mut()).await {
            Poll::Ready(output) => Race::Finished(output),
            Poll::Pending => against_the_clock(timer, deadline, attempt).await,
        }
    }

    #[test]
    fn ready_attempt_needs_no_timer() {
        let clock = ManualClock::new();
        let timer = Clock::from(&clock).into_timer();
        assert_eq!(block_on(race(&timer, 1_000, async { 7 })), Race::Finished(7));
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    #[test]
    fn attempt_still_running_at_the_deadline_is_dropped() {
        let clock = ManualClock::new();
        let timer = Clock::from(&clock).into_timer();
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = DropFlag(Arc::clone(&dropped));
        let outcome = block_on(race(&timer, 5_000_000, async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        }));
        assert_eq!(outcome, Race::TimedOut);
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(clock.elapsed(), Duration::from_millis(5));
    }
}
