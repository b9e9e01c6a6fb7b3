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
    wakers: BTreeMap<(u64, u64), Waker>,
    /// The sync waits (parked threads), kept apart in a vector whose capacity is reused, so a
    /// sync wait allocates nothing once the clock has seen as many at once (SPEC §12: retry
    /// backoffs allocate nothing).
    threads: Vec<((u64, u64), Waker)>,
}

impl Pending {
    /// The earliest pending deadline, async or sync.
    fn earliest(&self) -> Option<u64> {
        let sync = self.threads.iter().map(|(key, _)| key.0).min();
        match (self.wakers.keys().next().map(|k| k.0), sync) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
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
        // At most u64::MAX nanoseconds (584 years) after a real `Instant`: within the range of
        // every platform's `Instant` (64-bit seconds or more), so this addition cannot overflow.
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

    /// Wakes every task with a pending wait: the clock moved, or a wait finished or was dropped, so
    /// each must look again at whether it is now the earliest.
    fn wake_all(pending: &Pending) {
        for waker in pending.wakers.values().chain(pending.threads.iter().map(|(_, w)| w)) {
            waker.wake_by_ref();
        }
    }

    fn wake_due(&self) {
        Self::wake_all(&self.pending());
    }

    /// A wait of `wait` on this clock, in the deadline order of every pending wait: a test's
    /// delegate uses it to take time ("an attempt that takes 500 ms").
    ///
    /// The returned future owns a handle to the clock (`Send + 'static`, so it may be spawned). A
    /// wait of zero is ready on its first poll and takes no time. Otherwise its first poll registers
    /// the deadline and returns `Pending`; each later poll on which no pending deadline is earlier
    /// counts one (any other poll resets the count), and the poll that reaches two moves the clock
    /// to the deadline and returns `Ready`. So waits started in the same round of polling, and an
    /// attempt a hedge starts when its timer fires, are registered before the clock moves past
    /// them. Dropping the future deregisters it and leaves the clock where it was.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::testing::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let (slow, fast) = runtime.block_on(async {
    ///     let at = |d| {
    ///         let clock = clock.clone();
    ///         async move {
    ///             clock.sleep(Duration::from_millis(d)).await;
    ///             clock.elapsed()
    ///         }
    ///     };
    ///     tokio::join!(at(500), at(100))
    /// });
    /// assert_eq!((fast, slow), (Duration::from_millis(100), Duration::from_millis(500)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn sleep(&self, wait: Duration) -> impl Future<Output = ()> + Send + 'static {
        let clock = self.clone();
        async move {
            let never = AtomicBool::new(false);
            let _ = clock.wait(wait, &never).await;
        }
    }

    /// A wait of `wait` on this clock that `shutdown` interrupts (see [`ManualClock::sleep`] for the
    /// order of several waits).
    /// A sync wait on this clock until `deadline` (SPEC §10): the thread registers its deadline
    /// among the pending waits, asks `ready` first and after every wake-up (an unpark from
    /// whoever frees what it waits for, a move of the clock, or a recheck every quarter of a millisecond of
    /// real time), and once its deadline has been the earliest pending one on two consecutive
    /// checks it moves the clock there. So a thread that waits for something only it could free
    /// (a nested call waiting for its own caller's bulkhead slot) is refused at its deadline
    /// instead of hanging, while a holder with an earlier deadline (a sync backoff or latency of
    /// another thread) moves the clock first and frees the slot before the waiter gives up.
    /// `Ok(value)` from `ready`, `Err(Reached)` at the deadline, `Err(Stopped)` on shutdown.
    pub(crate) fn park_until<T>(
        &self,
        deadline: u64,
        shutdown: &AtomicBool,
        mut ready: impl FnMut() -> Option<T>,
    ) -> Result<T, SyncWaitEnd> {
        const RECHECK: Duration = Duration::from_micros(250);
        thread_local! {
            /// This thread's waker, made once (a wait allocates nothing).
            static WAKER: Waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        }
        if let Some(value) = ready() {
            return Ok(value);
        }
        if deadline <= self.nanos() {
            return Err(SyncWaitEnd::Reached);
        }
        let waker = WAKER.with(Waker::clone);
        let key = {
            let mut pending = self.pending();
            let key = (deadline, pending.next_id);
            pending.next_id += 1;
            pending.threads.push((key, waker));
            key
        };
        let leave = |clock: &ManualClock| {
            let mut pending = clock.pending();
            if let Some(at) = pending.threads.iter().position(|(k, _)| *k == key) {
                pending.threads.swap_remove(at);
            }
            ManualClock::wake_all(&pending);
        };
        let mut count = 0u8;
        loop {
            if let Some(value) = ready() {
                leave(self);
                return Ok(value);
            }
            if shutdown.load(Ordering::Acquire) {
                leave(self);
                return Err(SyncWaitEnd::Stopped);
            }
            if deadline <= self.nanos() {
                leave(self);
                return Err(SyncWaitEnd::Reached);
            }
            let earliest = self.pending().earliest().is_none_or(|first| first >= deadline);
            count = if earliest { count + 1 } else { 0 };
            if count >= 2 {
                leave(self);
                self.advance_to(deadline);
                return match ready() {
                    Some(value) => Ok(value),
                    None => Err(SyncWaitEnd::Reached),
                };
            }
            std::thread::park_timeout(RECHECK);
        }
    }

    pub(crate) fn wait<'a>(&'a self, wait: Duration, shutdown: &'a AtomicBool) -> ManualSleep<'a> {
        ManualSleep { clock: self, shutdown, wait, key: None, count: 0 }
    }
}

/// The future of one wait on a [`ManualClock`].
/// How a sync wait on the manual clock ended without `ready` having something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncWaitEnd {
    /// The deadline came.
    Reached,
    /// The registry shut down.
    Stopped,
}

/// Wakes a parked thread: the waker a sync wait registers among the pending waits, so a move of
/// the clock or the end of another wait rechecks it at once.
struct ThreadWaker(std::thread::Thread);

impl std::task::Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

pub(crate) struct ManualSleep<'a> {
    clock: &'a ManualClock,
    shutdown: &'a AtomicBool,
    wait: Duration,
    /// (deadline, id) once registered.
    key: Option<(u64, u64)>,
    /// Consecutive polls on which no pending deadline was earlier.
    count: u8,
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
            return self.register(cx);
        };
        let mut pending = clock.pending();
        if key.0 <= clock.nanos() {
            // The clock got there (an `advance`, or an earlier wait with the same deadline).
            drop(pending);
            self.deregister();
            return Poll::Ready(Ok(()));
        }
        let earliest = pending.earliest().is_none_or(|first| first >= key.0);
        self.count = if earliest { self.count + 1 } else { 0 };
        if self.count >= 2 {
            pending.wakers.remove(&key);
            drop(pending);
            self.key = None;
            clock.advance_to(key.0);
            return Poll::Ready(Ok(()));
        }
        pending.wakers.insert(key, cx.waker().clone());
        if earliest {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

impl ManualSleep<'_> {
    /// First poll: a wait that is already due is ready without registering; any other registers
    /// and yields once, so sibling waits polled in the same round register too.
    fn register(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Interrupted>> {
        let clock = self.clock;
        let now = clock.nanos();
        let deadline = now.saturating_add(nanos(self.wait));
        if deadline <= now {
            return Poll::Ready(Ok(()));
        }
        let mut pending = clock.pending();
        let key = (deadline, pending.next_id);
        pending.next_id += 1;
        pending.wakers.insert(key, cx.waker().clone());
        drop(pending);
        self.key = Some(key);
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn deregister(&mut self) {
        if let Some(key) = self.key.take() {
            let mut pending = self.clock.pending();
            pending.wakers.remove(&key);
            // Another wait may now be the earliest: every pending wait looks again.
            ManualClock::wake_all(&pending);
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
        block_on(clock.wait(Duration::from_millis(250), &stop)).unwrap();
        assert_eq!(clock.elapsed(), Duration::from_millis(250));
    }

    #[test]
    fn racing_waits_resolve_in_deadline_order_and_loser_leaves_no_trace() {
        let clock = ManualClock::new();
        let stop = AtomicBool::new(false);
        let first = block_on(async {
            let long = clock.wait(Duration::from_secs(2), &stop);
            let short = clock.wait(Duration::from_secs(1), &stop);
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
    fn a_zero_wait_is_ready_at_once_and_registers_nothing() {
        let clock = ManualClock::new();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut wait = std::pin::pin!(clock.sleep(Duration::ZERO));
        assert!(wait.as_mut().poll(&mut cx).is_ready());
        assert!(clock.pending().wakers.is_empty());
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    #[test]
    fn the_public_sleep_is_send_and_static_and_a_dropped_one_leaves_the_clock() {
        fn spawnable<F: Future + Send + 'static>(f: F) -> F {
            f
        }
        let clock = ManualClock::new();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut wait = Box::pin(spawnable(clock.sleep(Duration::from_secs(3))));
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        assert_eq!(clock.pending().wakers.len(), 1);
        drop(wait);
        assert!(clock.pending().wakers.is_empty());
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    /// SPEC §10's registration rule: a wait only moves the clock on its second consecutive poll as
    /// the earliest, so a wait that starts one round after a sibling fired (an attempt a hedge
    /// starts behind a yield) is registered before a later deadline moves the clock past it.
    #[test]
    fn a_wait_started_a_round_after_a_sibling_fired_still_comes_first() {
        let clock = ManualClock::new();
        let order = block_on(async {
            let mut order = Vec::new();
            let mut a = std::pin::pin!(clock.sleep(Duration::from_millis(100)));
            let mut b = std::pin::pin!(clock.sleep(Duration::from_millis(500)));
            let mut c = std::pin::pin!(None);
            let (mut a_done, mut b_done) = (false, false);
            std::future::poll_fn(|cx| {
                if !a_done && a.as_mut().poll(cx).is_ready() {
                    a_done = true;
                    order.push(("a", clock.elapsed()));
                    // The late starter yields once before its own wait registers.
                    let late = clock.clone();
                    c.set(Some(async move {
                        tokio::task::yield_now().await;
                        late.sleep(Duration::from_millis(50)).await;
                    }));
                }
                if let Some(late) = c.as_mut().as_pin_mut()
                    && late.poll(cx).is_ready()
                {
                    c.set(None);
                    order.push(("c", clock.elapsed()));
                }
                if !b_done && b.as_mut().poll(cx).is_ready() {
                    b_done = true;
                    order.push(("b", clock.elapsed()));
                }
                if b_done { Poll::Ready(()) } else { Poll::Pending }
            })
            .await;
            order
        });
        let ms = Duration::from_millis;
        assert_eq!(order, [("a", ms(100)), ("c", ms(150)), ("b", ms(500))]);
    }

    #[test]
    fn advance_completes_due_waits() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.elapsed(), Duration::from_secs(5));
        assert_eq!(clock.now() - clock.origin(), Duration::from_secs(5));
    }
}
