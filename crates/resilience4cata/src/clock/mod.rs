//! Time for every policy: one clock per registry, injected, never read behind its back.
//!
//! Policy code never calls `Instant::now()`, `thread::sleep` or `tokio::time::sleep`; it asks the
//! registry's `Timer` (crate-private), which offers
//! - an exact reading (`Timer::now`), a `clock_gettime` on the system clock, used only off success paths;
//! - a *coarse* reading (`Timer::coarse_now`), one atomic load: the last exact reading, kept fresh by a
//!   ticker thread on the system clock (started by the first policy that needs it) and exact under the
//!   manual clock. A coarse reading is never ahead of real time, so a policy that decides on it errs
//!   towards refusing; it re-reads the exact clock before it refuses;
//! - waits: blocking for sync methods, a future for async ones, both interrupted by
//!   `Registry::shutdown`.
//!
//! Times are `u64` nanoseconds since the clock's origin (the registry's build, or the manual clock's
//! creation).

#[cfg(any(test, feature = "testing"))]
pub(crate) mod manual;
mod system;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crossbeam_utils::CachePadded;

#[cfg(any(test, feature = "testing"))]
pub(crate) use manual::ManualClock;

/// The time source a registry is built on: the system clock (the default) or, in tests, a
/// `testing::ManualClock` (feature `testing`).
///
/// ```
/// use resilience4cata::{Clock, Registry};
///
/// let registry = Registry::builder().clock(Clock::system()).build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Clock {
    kind: ClockKind,
}

#[derive(Clone, Debug)]
enum ClockKind {
    System,
    #[cfg(any(test, feature = "testing"))]
    Manual(ManualClock),
}

impl Clock {
    /// The machine's monotonic clock; async waits need the `tokio` feature.
    pub fn system() -> Self {
        Clock { kind: ClockKind::System }
    }

    /// Whether this clock can wait inside a future (the manual clock always can; the system clock
    /// needs the `tokio` feature).
    pub fn can_sleep_async(&self) -> bool {
        match self.kind {
            ClockKind::System => cfg!(feature = "tokio"),
            #[cfg(any(test, feature = "testing"))]
            ClockKind::Manual(_) => true,
        }
    }

    pub(crate) fn into_timer(self) -> Timer {
        Timer::new(self)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

#[cfg(any(test, feature = "testing"))]
impl From<ManualClock> for Clock {
    fn from(clock: ManualClock) -> Self {
        Clock { kind: ClockKind::Manual(clock) }
    }
}

#[cfg(any(test, feature = "testing"))]
impl From<&ManualClock> for Clock {
    fn from(clock: &ManualClock) -> Self {
        Clock::from(clock.clone())
    }
}

/// A wait was cut short by `Registry::shutdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interrupted;

/// What a policy state keeps that `Registry::shutdown` must change (a retry's quick path: no
/// zero-wait retry after shutdown), so its pass path need not read the timer's flag.
pub(crate) trait OnShutdown: Send + Sync {
    /// The registry shut down.
    fn shut_down(&self);
}

/// The registry's clock plus its shutdown signal; shared by every policy of one registry.
#[derive(Debug)]
pub(crate) struct Timer {
    kind: TimerKind,
    /// Last exact reading (system) or the manual time itself (manual): one load for a coarse read.
    coarse: Arc<CachePadded<AtomicU64>>,
    shutdown: AtomicBool,
    waits: system::Waits,
    /// What `shut_down` also tells (see [`OnShutdown`]); the lock orders it with
    /// [`unless_shut_down`](Self::unless_shut_down).
    hooks: Mutex<Vec<Weak<dyn OnShutdown>>>,
    /// A test's manual clock whose coarse reading trails it (see [`Timer::lagging`]): the most it
    /// trails by, in nanoseconds; 0 for every other clock.
    #[cfg(test)]
    manual_lag: u64,
}

#[derive(Debug)]
enum TimerKind {
    System(system::SystemTime),
    #[cfg(any(test, feature = "testing"))]
    Manual(ManualClock),
}

impl Timer {
    fn new(clock: Clock) -> Timer {
        let (kind, coarse) = match clock.kind {
            ClockKind::System => {
                (TimerKind::System(system::SystemTime::new()), Arc::new(CachePadded::new(AtomicU64::new(0))))
            }
            #[cfg(any(test, feature = "testing"))]
            ClockKind::Manual(m) => {
                let cell = m.cell();
                (TimerKind::Manual(m), cell)
            }
        };
        Timer {
            kind,
            coarse,
            shutdown: AtomicBool::new(false),
            waits: system::Waits::default(),
            hooks: Mutex::default(),
            #[cfg(test)]
            manual_lag: 0,
        }
    }

    /// A manual clock whose coarse reading trails it as the system clock's does: it keeps its own
    /// value, moved by exact reads and by [`tick`](Self::tick) (the test plays the ticker, at most
    /// `lag` apart), and [`coarse_lag`](Self::coarse_lag) says `lag`.
    #[cfg(test)]
    pub(crate) fn lagging(clock: &ManualClock, lag: Duration) -> Timer {
        let coarse = Arc::new(CachePadded::new(AtomicU64::new(clock.nanos())));
        Timer { coarse, manual_lag: nanos(lag), ..Clock::from(clock).into_timer() }
    }

    /// The ticker's refresh of a [`lagging`](Self::lagging) clock's coarse reading.
    #[cfg(test)]
    pub(crate) fn tick(&self) {
        self.now();
    }

    /// Exact time in nanoseconds since the origin. On the system clock this also refreshes the
    /// coarse reading.
    pub(crate) fn now(&self) -> u64 {
        match &self.kind {
            TimerKind::System(s) => {
                let now = s.now();
                self.coarse.fetch_max(now, Ordering::Relaxed);
                now
            }
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(m) => {
                let now = m.nanos();
                #[cfg(test)]
                if self.manual_lag > 0 {
                    self.coarse.fetch_max(now, Ordering::Relaxed);
                }
                now
            }
        }
    }

    /// An exact reading that leaves the coarse reading alone (no write to the shared cell): for
    /// timing a call on a path that must not write a shared line, as the adaptive limit's
    /// Gradient2 and Vegas do at the start and end of every call.
    #[inline]
    pub(crate) fn measure(&self) -> u64 {
        match &self.kind {
            TimerKind::System(s) => s.now(),
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(m) => m.nanos(),
        }
    }

    /// One atomic load: never ahead of [`Timer::now`], exact under the manual clock.
    #[inline]
    pub(crate) fn coarse_now(&self) -> u64 {
        self.coarse.load(Ordering::Relaxed)
    }

    /// The cell [`coarse_now`](Self::coarse_now) loads, fixed for the timer's life: a policy that
    /// keeps it beside its own state reads the coarse clock with one pointer hop fewer than
    /// through the timer (the rate limiter's pass path).
    pub(crate) fn coarse_cell(&self) -> Arc<CachePadded<AtomicU64>> {
        Arc::clone(&self.coarse)
    }

    /// The most [`coarse_now`](Self::coarse_now) may trail real time, in nanoseconds: 0 on the
    /// manual clock; on the system clock the ticker's period plus as much again for a late wake-up
    /// ([`system::COARSE_LAG`]), or `u64::MAX` when no ticker runs (then the coarse reading moves
    /// only on exact reads, and nothing bounds how stale it is). Read it after
    /// [`keep_coarse_fresh`](Self::keep_coarse_fresh).
    pub(crate) fn coarse_lag(&self) -> u64 {
        match &self.kind {
            TimerKind::System(s) => match s.is_ticking() {
                true => nanos(system::COARSE_LAG),
                false => u64::MAX,
            },
            #[cfg(test)]
            TimerKind::Manual(_) => self.manual_lag,
            #[cfg(all(not(test), feature = "testing"))]
            TimerKind::Manual(_) => 0,
        }
    }

    /// Starts the ticker that keeps [`Timer::coarse_now`] within about a millisecond of the system
    /// clock; a no-op on the manual clock and when already running.
    pub(crate) fn keep_coarse_fresh(self: &Arc<Self>) {
        match &self.kind {
            TimerKind::System(s) => s.start_ticker(Arc::downgrade(self)),
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(_) => {}
        }
    }

    /// Whether this timer can wait inside a future.
    pub(crate) fn can_sleep_async(&self) -> bool {
        match self.kind {
            TimerKind::System(_) => cfg!(feature = "tokio"),
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(_) => true,
        }
    }

    /// Whether `Registry::shutdown` has been called (sticky).
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Interrupts every pending wait and every later one, and tells every live [`OnShutdown`].
    pub(crate) fn shut_down(&self) {
        {
            let mut hooks = self.hooks.lock().unwrap_or_else(PoisonError::into_inner);
            self.shutdown.store(true, Ordering::Release);
            for hook in hooks.drain(..).filter_map(|h| h.upgrade()) {
                hook.shut_down();
            }
        }
        self.waits.wake_all();
    }

    /// Registers `hook` to hear [`shut_down`](Self::shut_down) (at once if it already happened).
    /// Hooks whose owner is gone are dropped on the way.
    pub(crate) fn on_shutdown(&self, hook: Weak<dyn OnShutdown>) {
        let mut hooks = self.hooks.lock().unwrap_or_else(PoisonError::into_inner);
        if self.shutdown.load(Ordering::Acquire) {
            drop(hooks);
            if let Some(hook) = hook.upgrade() {
                hook.shut_down();
            }
            return;
        }
        hooks.retain(|h| h.strong_count() > 0);
        hooks.push(hook);
    }

    /// Runs `store` unless the registry is shut down, ordered with [`shut_down`](Self::shut_down):
    /// a value a hook clears is either stored before the hooks run (and cleared by them) or not
    /// stored at all. `false` when shut down.
    pub(crate) fn unless_shut_down(&self, store: impl FnOnce()) -> bool {
        let _hooks = self.hooks.lock().unwrap_or_else(PoisonError::into_inner);
        if self.shutdown.load(Ordering::Acquire) {
            return false;
        }
        store();
        true
    }

    /// Blocks the calling thread for `wait` (a manual clock advances instead). A zero wait returns at
    /// once without a syscall.
    pub(crate) fn sleep(&self, wait: Duration) -> Result<(), Interrupted> {
        if self.is_shut_down() {
            return Err(Interrupted);
        }
        if wait.is_zero() {
            return Ok(());
        }
        match &self.kind {
            TimerKind::System(_) => self.waits.park(wait, &self.shutdown),
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(m) => {
                // In deadline order with every other pending wait (SPEC §10).
                let deadline = m.nanos().saturating_add(nanos(wait));
                match m.park_until(deadline, &self.shutdown, || None::<()>) {
                    Ok(()) | Err(manual::SyncWaitEnd::Reached) => Ok(()),
                    Err(manual::SyncWaitEnd::Stopped) => Err(Interrupted),
                }
            }
        }
    }

    /// Parks the calling thread until `ready` has something (it is asked first, then after every
    /// wake-up: an unpark from whoever frees what it waits for, or a recheck every few milliseconds),
    /// the `deadline` (nanoseconds since the origin) passes, or the registry shuts down (`Err`). The
    /// sync wait of the bulkhead and the adaptive limit.
    pub(crate) fn park_until<T>(&self, deadline: u64, mut ready: impl FnMut() -> Option<T>) -> Result<T, Interrupted> {
        /// How often a parked thread looks at the clock and the shutdown flag on its own.
        const RECHECK: Duration = Duration::from_millis(5);
        #[cfg(any(test, feature = "testing"))]
        if let TimerKind::Manual(m) = &self.kind {
            // In deadline order with every other pending wait (SPEC §10).
            return m.park_until(deadline, &self.shutdown, ready).map_err(|_| Interrupted);
        }
        loop {
            if let Some(value) = ready() {
                return Ok(value);
            }
            let now = self.now();
            if now >= deadline || self.is_shut_down() {
                return Err(Interrupted);
            }
            std::thread::park_timeout(Duration::from_nanos(deadline - now).min(RECHECK));
        }
    }

    /// Waits for `wait` without blocking a thread. Panics only if called on a system clock without
    /// the `tokio` feature, which registry construction rules out (`R4C-REG-010`).
    pub(crate) async fn sleep_async(&self, wait: Duration) -> Result<(), Interrupted> {
        if self.is_shut_down() {
            return Err(Interrupted);
        }
        if wait.is_zero() {
            return Ok(());
        }
        match &self.kind {
            TimerKind::System(_) => self.waits.sleep_async(wait, &self.shutdown).await,
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(m) => m.wait(wait, &self.shutdown).await,
        }
    }

    /// A timeout's timer: completes at `deadline` (nanoseconds since the origin), and
    /// `Registry::shutdown` does not cut it short (shutdown interrupts the waits *between* attempts,
    /// never a running attempt's deadline). On the manual clock it takes part in the deadline order of
    /// pending waits, and dropping it before it fires leaves the clock where it was.
    pub(crate) async fn deadline_async(&self, deadline: u64) {
        match &self.kind {
            TimerKind::System(s) => system::sleep_until(s.instant_at(deadline)).await,
            #[cfg(any(test, feature = "testing"))]
            TimerKind::Manual(m) => {
                let wait = Duration::from_nanos(deadline.saturating_sub(m.nanos()));
                if !wait.is_zero() {
                    let never = AtomicBool::new(false);
                    let _ = m.wait(wait, &never).await;
                }
            }
        }
    }

    /// A wait until `deadline` (nanoseconds since the origin) that `Registry::shutdown` interrupts;
    /// the bulkhead's bounded wait for a slot.
    pub(crate) async fn sleep_until_async(&self, deadline: u64) -> Result<(), Interrupted> {
        let now = self.now();
        self.sleep_async(Duration::from_nanos(deadline.saturating_sub(now))).await
    }
}

/// Nanoseconds of a duration, saturating at `u64::MAX` (584 years).
#[inline]
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_sync_sleep_advances_and_zero_does_not() {
        let clock = ManualClock::new();
        let timer = Clock::from(&clock).into_timer();
        timer.sleep(Duration::ZERO).unwrap();
        assert_eq!(clock.elapsed(), Duration::ZERO);
        timer.sleep(Duration::from_millis(100)).unwrap();
        assert_eq!(clock.elapsed(), Duration::from_millis(100));
        assert_eq!(timer.now(), 100_000_000);
        assert_eq!(timer.coarse_now(), 100_000_000);
    }

    #[test]
    fn shutdown_is_sticky() {
        let timer = Clock::from(ManualClock::new()).into_timer();
        timer.shut_down();
        assert_eq!(timer.sleep(Duration::from_secs(1)), Err(Interrupted));
        assert_eq!(timer.sleep(Duration::ZERO), Err(Interrupted));
    }

    #[test]
    fn system_zero_sleep_returns_at_once_and_now_moves() {
        let timer = Clock::system().into_timer();
        let a = timer.now();
        timer.sleep(Duration::ZERO).unwrap();
        timer.sleep(Duration::from_millis(2)).unwrap();
        assert!(timer.now() >= a + 2_000_000);
        assert!(timer.coarse_now() >= a);
    }

    #[test]
    fn system_sync_sleep_is_interrupted_by_shutdown() {
        let timer = Arc::new(Clock::system().into_timer());
        let t2 = Arc::clone(&timer);
        let handle = std::thread::spawn(move || t2.sleep(Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(20));
        timer.shut_down();
        assert_eq!(handle.join().unwrap(), Err(Interrupted));
    }

    #[test]
    fn system_sleep_of_duration_max_waits_until_shutdown_without_overflow() {
        let timer = Arc::new(Clock::system().into_timer());
        let t2 = Arc::clone(&timer);
        let handle = std::thread::spawn(move || t2.sleep(Duration::MAX));
        std::thread::sleep(Duration::from_millis(20));
        timer.shut_down();
        assert_eq!(handle.join().expect("no `Instant + Duration::MAX` overflow"), Err(Interrupted));
        // Decided before the deadline is computed too: a wait asked for after shutdown.
        assert_eq!(timer.waits.park(Duration::MAX, &AtomicBool::new(true)), Err(Interrupted));
    }

    #[test]
    fn ticker_keeps_running_after_shutdown() {
        // Shutdown interrupts waits between attempts; in-flight timeouts still need fresh time.
        let timer = Arc::new(Clock::system().into_timer());
        timer.keep_coarse_fresh();
        timer.shut_down();
        let frozen = timer.coarse_now();
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        while timer.coarse_now() <= frozen.saturating_add(2_000_000) && std::time::Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(timer.coarse_now() > frozen.saturating_add(2_000_000), "the coarse clock froze at shutdown");
    }

    #[test]
    fn ticker_keeps_coarse_fresh() {
        // Only the ticker writes the coarse reading here (no exact read is made), so any movement is
        // the ticker's; waiting for it has no timing bound beyond a generous give-up.
        let timer = Arc::new(Clock::system().into_timer());
        assert_eq!(timer.coarse_now(), 0);
        timer.keep_coarse_fresh();
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        while timer.coarse_now() == 0 && std::time::Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(timer.coarse_now() > 0, "the ticker never refreshed the coarse reading");
    }
}
