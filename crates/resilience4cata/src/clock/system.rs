//! The system clock: `Instant` readings, interruptible waits, and the coarse-reading ticker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Interrupted, Timer};

/// How often the ticker refreshes the coarse reading.
const TICK: Duration = Duration::from_millis(1);

/// The most the coarse reading trails real time while the ticker runs: one period, and as much
/// again for a wake-up that comes late (a thread's sleep overshoots by tens of microseconds on an
/// idle machine). A ticker descheduled for longer than that is the one case this does not cover.
pub(super) const COARSE_LAG: Duration = TICK.saturating_mul(2);

#[derive(Debug)]
pub(super) struct SystemTime {
    origin: Instant,
    ticking: AtomicBool,
}

impl SystemTime {
    pub(super) fn new() -> Self {
        SystemTime { origin: Instant::now(), ticking: AtomicBool::new(false) }
    }

    pub(super) fn now(&self) -> u64 {
        super::nanos(self.origin.elapsed())
    }

    /// The instant `nanos` after the origin, or `None` beyond what an `Instant` represents.
    pub(super) fn instant_at(&self, nanos: u64) -> Option<Instant> {
        self.origin.checked_add(Duration::from_nanos(nanos))
    }

    /// Whether the ticker thread runs (it was started and could be spawned).
    pub(super) fn is_ticking(&self) -> bool {
        self.ticking.load(Ordering::Acquire)
    }

    /// One thread per registry at most; it stops when the registry (its timer) is dropped, not at
    /// `Registry::shutdown`: calls drained during a graceful shutdown still need fresh time for their
    /// timeouts and rate limits.
    pub(super) fn start_ticker(&self, timer: Weak<Timer>) {
        if self.ticking.swap(true, Ordering::AcqRel) {
            return;
        }
        let spawned = std::thread::Builder::new().name("resilience4cata-ticker".into()).spawn(move || {
            while let Some(timer) = timer.upgrade() {
                timer.now();
                drop(timer);
                std::thread::sleep(TICK);
            }
        });
        if spawned.is_err() {
            // Without a ticker the coarse reading only moves on exact reads; `Timer::coarse_lag`
            // then says so, and the rate limiter decides every call on the exact clock.
            self.ticking.store(false, Ordering::Release);
        }
    }
}

/// Where waiting threads and tasks are parked, so shutdown can reach them.
#[derive(Debug, Default)]
pub(super) struct Waits {
    lock: Mutex<()>,
    condvar: Condvar,
    #[cfg(feature = "tokio")]
    notify: tokio::sync::Notify,
}

impl Waits {
    pub(super) fn wake_all(&self) {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.condvar.notify_all();
        #[cfg(feature = "tokio")]
        self.notify.notify_waiters();
    }

    /// Parks the calling thread for `wait`, or until shutdown. A wait beyond what an `Instant` can
    /// represent (`Duration::MAX` from a builder or a file) saturates: it lasts until shutdown.
    pub(super) fn park(&self, wait: Duration, shutdown: &AtomicBool) -> Result<(), Interrupted> {
        let deadline = Instant::now().checked_add(wait);
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if shutdown.load(Ordering::Acquire) {
                return Err(Interrupted);
            }
            let Some(deadline) = deadline else {
                guard = self.condvar.wait(guard).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            guard = self.condvar.wait_timeout(guard, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    #[cfg(feature = "tokio")]
    pub(super) async fn sleep_async(&self, wait: Duration, shutdown: &AtomicBool) -> Result<(), Interrupted> {
        use std::future::Future;
        use std::task::Poll;

        let mut notified = std::pin::pin!(self.notify.notified());
        notified.as_mut().enable();
        if shutdown.load(Ordering::Acquire) {
            return Err(Interrupted);
        }
        let mut sleep = std::pin::pin!(tokio::time::sleep(wait));
        std::future::poll_fn(|cx| {
            if notified.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(Interrupted));
            }
            sleep.as_mut().poll(cx).map(Ok)
        })
        .await
    }

    #[cfg(not(feature = "tokio"))]
    pub(super) async fn sleep_async(&self, _wait: Duration, _shutdown: &AtomicBool) -> Result<(), Interrupted> {
        unreachable!("[R4C-REG-010] async waits on the system clock need the `tokio` feature; checked when wrapping")
    }
}

/// A plain wait until `deadline` that shutdown does not interrupt (a timeout's timer); reads no
/// clock of its own.
#[cfg(feature = "tokio")]
pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(not(feature = "tokio"))]
pub(super) async fn sleep_until(_deadline: Option<Instant>) {
    unreachable!("[R4C-REG-010] async waits on the system clock need the `tokio` feature; checked when wrapping")
}
