//! The race between an attempt and its deadline, with the timer created only when needed.
//!
//! Most attempts finish on their first poll or soon after, so the timer is the expensive part of a
//! timeout: the attempt is polled first, and only when it returns `Pending` for the first time is a
//! timer created (the deadline itself is fixed before, from the coarse clock). An attempt that is
//! ready at once therefore costs one atomic load and one poll. The future is a plain `async fn` with
//! stack-pinned locals: no boxing, no `unsafe`.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use crate::clock::Timer;

/// How the race ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Race<T> {
    /// The attempt finished first, with this output.
    Finished(T),
    /// The deadline came first; the attempt has been dropped.
    TimedOut,
}

/// Runs `attempt` until it finishes or `deadline` (nanoseconds on `timer`) passes. The attempt's
/// future is dropped before this returns `TimedOut`.
pub(crate) async fn race<F: Future>(timer: &Timer, deadline: u64, attempt: F) -> Race<F::Output> {
    let mut attempt = pin!(attempt);
    let mut alarm = pin!(None);
    poll_fn(|cx| {
        if let Poll::Ready(output) = attempt.as_mut().poll(cx) {
            return Poll::Ready(Race::Finished(output));
        }
        if alarm.is_none() {
            alarm.set(Some(timer.deadline_async(deadline)));
        }
        match alarm.as_mut().as_pin_mut().map(|alarm| alarm.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Race::TimedOut),
            _ => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    /// Sets its flag when dropped.
    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
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
