//! A clock that moves only when told to, or when something waits on it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::{Interrupted, nanos};

/// A clock for tests: time stands still until [`advance`](ManualClock::advance) moves it, or until a
/// policy waits on it, which moves it to the end of the wait and returns at once (sync and async).
///
/// Clones share one time. Several pending async waits (a timeout racing a call that sleeps, hedged
/// attempts) resolve in deadline order: a wait moves the clock to the earliest pending deadline
/// first, and a dropped wait deregisters, so a timer that never has to fire leaves the clock where
/// it was.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::testing::ManualClock;
///
/// let clock = ManualClock::new();
/// let same = clock.clone();
/// clock.advance(Duration::from_millis(300));
/// assert_eq!(same.elapsed(), Duration::from_millis(300));
/// assert_eq!(same.now() - clock.origin(), Duration::from_millis(300));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    shared: Arc<Shared>,
}

struct Shared {
    origin: Instant,
    now: Arc<CachePadded<AtomicU64>>,
    waits: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    next_id: u64,
    /// (deadline, id) -> the waker of the task that waits.
    wakers: BTreeMap<(u64, u64), Option<Waker>>,
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock").field("elapsed", &self.elapsed()).finish()
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl ManualClock {
    /// A clock at its origin (elapsed zero).
    pub fn new() -> Self {
        ManualClock {
            shared: Arc::new(Shared {
                origin: Instant::now(),
                now: Arc::new(CachePadded::new(AtomicU64::new(0))),
                waits: Mutex::new(Pending::default()),
            }),
        }
    }

    /// The instant this clock started at; [`now`](ManualClock::now) is `origin() + elapsed()`.
    pub fn origin(&self) -> Instant {
        self.shared.origin
    }

    /// The current time, as an `Instant` that moves only with this clock.
    pub fn now(&self) -> Instant {
        self.shared.origin + self.elapsed()
    }

    /// Time elapsed since the clock was created.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.nanos())
    }

    /// Moves the clock forward, completing the waits whose deadline it reaches.
    pub fn advance(&self, by: Duration) {
        self.advance_to(self.nanos().saturating_add(nanos(by)));
    }

    pub(crate) fn nanos(&self) -> u64 {
        self.shared.now.load(Ordering::Acquire)
    }

    pub(crate) fn cell(&self) -> Arc<CachePadded<AtomicU64>> {
        Arc::clone(&self.shared.now)
    }

    /// Moves the clock to `to` unless it is already later, and wakes the waits that are due.
    pub(crate) fn advance_to(&self, to: u64) {
        self.shared.now.fetch_max(to, Ordering::AcqRel);
        self.wake_due();
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.shared.waits.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake_due(&self) {
        let now = self.nanos();
        let pending = self.pending();
        for waker in pending.wakers.range(..(now + 1, 0)).filter_map(|(_, w)| w.as_ref()) {
            waker.wake_by_ref();
        }
        // The earliest wait decides the next move of the clock: let it run.
        if let Some(Some(waker)) = pending.wakers.values().next() {
            waker.wake_by_ref();
        }
    }

    /// A wait of `wait` on this clock (see the type docs for the order of several waits).
    pub(crate) fn sleep<'a>(&'a self, wait: Duration, shutdown: &'a AtomicBool) -> ManualSleep<'a> {
        ManualSleep { clock: self, shutdown, wait, key: None }
    }
}

/// The future of one wait on a [`ManualClock`].
pub(crate) struct ManualSleep<'a> {
    clock: &'a ManualClock,
    shutdown: &'a AtomicBool,
    wait: Duration,
    key: Option<(u64, u64)>,
}

impl Future for ManualSleep<'_> {
    type Output = Result<(), Interrupted>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.shutdown.load(Ordering::Acquire) {
            self.deregister();
            return Poll::Ready(Err(Interrupted));
        }
        let clock = self.clock;
        let Some(key) = self.key else {
            // First poll: register, and yield once so sibling waits polled in the same round
            // register too before the earliest one moves the clock.
            let mut pending = clock.pending();
            let key = (clock.nanos().saturating_add(nanos(self.wait)), pending.next_id);
            pending.next_id += 1;
            pending.wakers.insert(key, Some(cx.waker().clone()));
            drop(pending);
            self.key = Some(key);
            cx.waker().wake_by_ref();
            return Poll::Pending;
        };
        let mut pending = clock.pending();
        let earliest = pending.wakers.keys().next() == Some(&key);
        if key.0 <= clock.nanos() || earliest {
            pending.wakers.remove(&key);
            drop(pending);
            self.key = None;
            clock.advance_to(key.0);
            return Poll::Ready(Ok(()));
        }
        pending.wakers.insert(key, Some(cx.waker().clone()));
        Poll::Pending
    }
}

impl ManualSleep<'_> {
    fn deregister(&mut self) {
        if let Some(key) = self.key.take() {
            let mut pending = self.clock.pending();
            pending.wakers.remove(&key);
            // The next earliest wait may now be the one to move the clock.
            if let Some(Some(waker)) = pending.wakers.values().next() {
                waker.wake_by_ref();
            }
        }
    }
}

impl Drop for ManualSleep<'_> {
    fn drop(&mut self) {
        self.deregister();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use testkit::block_on;

    #[test]
    fn async_wait_advances_clock() {
        let clock = ManualClock::new();
        let stop = AtomicBool::new(false);
        block_on(clock.sleep(Duration::from_millis(250), &stop)).unwrap();
        assert_eq!(clock.elapsed(), Duration::from_millis(250));
    }

    #[test]
    fn racing_waits_resolve_in_deadline_order_and_loser_leaves_no_trace() {
        let clock = ManualClock::new();
        let stop = AtomicBool::new(false);
        let first = block_on(async {
            let long = clock.sleep(Duration::from_secs(2), &stop);
            let short = clock.sleep(Duration::from_secs(1), &stop);
            let mut long = std::pin::pin!(long);
            let mut short = std::pin::pin!(short);
            std::future::poll_fn(|cx| {
                if long.as_mut().poll(cx).is_ready() {
                    return Poll::Ready("long");
                }
                if short.as_mut().poll(cx).is_ready() {
                    return Poll::Ready("short");
                }
                Poll::Pending
            })
            .await
        });
        assert_eq!(first, "short");
        assert_eq!(clock.elapsed(), Duration::from_secs(1));
        assert!(clock.pending().wakers.is_empty(), "the dropped wait deregistered");
    }

    #[test]
    fn advance_completes_due_waits() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.elapsed(), Duration::from_secs(5));
        assert_eq!(clock.now() - clock.origin(), Duration::from_secs(5));
    }
}
