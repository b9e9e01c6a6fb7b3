//! An adaptive limit instance's shared state ([`AdaptiveLimitState`]: slots, engine, clock and
//! publisher), the permit that reports a call's outcome back to the algorithm, and the slots.
//!
//! The slots: one atomic word holding `limit << 32 | in_flight`.
//!
//! Taking a slot is one compare-and-set (while `in_flight < limit`); giving it back is one
//! read-modify-write that may also store a new limit, so the limit and the count never disagree.
//! Waiters (only with `max_wait > 0`) are counted in a separate word that the release path only
//! loads; their wake-ups sit behind a mutex that only the wait path and a release that sees a
//! waiter touch. Unlike the bulkhead's queue this is not first-come-first-served: a woken waiter
//! competes with newcomers for the freed slot (the limit moves anyway, so a FIFO hand-off would
//! have to be re-done on every change).

use std::fmt;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::thread::Thread;

use crossbeam_utils::CachePadded;

use super::algorithm::{Aimd, Gradient2, Vegas};
use super::window::{Sample, Windowed};
use super::{AdaptiveLimitConfig, AdaptiveLimitEvent, AdaptiveLimitSnapshot, Algorithm};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};
use crate::kit::Fixed;
use crate::rejection::Rejection;
use crate::sync::Live;

const IN_FLIGHT: u64 = (1 << 32) - 1;

fn in_flight(word: u64) -> u32 {
    (word & IN_FLIGHT) as u32
}

fn limit(word: u64) -> u32 {
    (word >> 32) as u32
}

fn word(limit: u32, in_flight: u32) -> u64 {
    u64::from(limit) << 32 | u64::from(in_flight)
}

/// How to wake a waiter: a parked thread (sync) or a task (async).
#[derive(Debug)]
pub(crate) enum Wake {
    Thread(Thread),
    Task(Waker),
}

/// The slots of one adaptive limit instance.
#[derive(Debug)]
pub(crate) struct Slots {
    word: CachePadded<AtomicU64>,
    waiting: AtomicU32,
    wakes: Mutex<Vec<Wake>>,
}

impl Slots {
    pub(crate) fn new(initial_limit: u32) -> Self {
        Slots {
            word: CachePadded::new(AtomicU64::new(word(initial_limit, 0))),
            waiting: AtomicU32::new(0),
            wakes: Mutex::default(),
        }
    }

    /// A slot if fewer than `limit` calls are in flight: the number in flight with this call
    /// (one compare-and-set).
    #[inline]
    pub(crate) fn try_acquire(&self) -> Option<u32> {
        let mut current = self.word.load(Ordering::SeqCst);
        while in_flight(current) < limit(current) {
            match self.word.compare_exchange_weak(current, current + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(in_flight(current) + 1),
                Err(actual) => current = actual,
            }
        }
        None
    }

    /// Gives a slot back and sets the limit to `next(limit)`; returns `(old, new)` limits. Wakes
    /// waiters if there are any.
    ///
    /// The slot goes back with one `fetch_sub`, and `next` is asked about the limit that
    /// `fetch_sub` saw: on the pass path the limit mostly stays (Aimd moves it only near the
    /// limit or on a drop), and then that one read-modify-write is all (issue 28: a load and a
    /// compare-and-set cost two transfers of the contended line, the `fetch_sub` one). When the
    /// limit moves, a compare-and-set stores `next` of the limit as it then is: the release is
    /// ordered at its `fetch_sub`, the limit's change at that compare-and-set, each step one
    /// version of the word. The count of slots is exact throughout: only the limit field is
    /// rewritten, and a call admitted in between was admitted under a limit the word held.
    #[inline]
    pub(crate) fn release_with(&self, next: impl Fn(u32) -> u32) -> (u32, u32) {
        let before = self.word.fetch_sub(1, Ordering::SeqCst);
        let old = limit(before);
        if next(old) == old {
            self.wake_waiters();
            return (old, old);
        }
        self.move_limit(next)
    }

    /// The second step of [`release_with`](Self::release_with) when the limit moves: `next` of
    /// the current limit, set in one compare-and-set that keeps the count in flight.
    #[cold]
    #[inline(never)]
    fn move_limit(&self, next: impl Fn(u32) -> u32) -> (u32, u32) {
        let mut current = self.word.load(Ordering::SeqCst);
        let (old, new) = loop {
            let (old, new) = (limit(current), next(limit(current)));
            if old == new {
                break (old, new);
            }
            let updated = word(new, in_flight(current));
            match self.word.compare_exchange_weak(current, updated, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break (old, new),
                Err(actual) => current = actual,
            }
        };
        self.wake_waiters();
        (old, new)
    }

    /// Clamps the limit into `[min, max]` (a live update), keeping the calls in flight; wakes the
    /// waiters when it rose. `Some((from, to))` when it changed.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn clamp(&self, min: u32, max: u32) -> Option<(u32, u32)> {
        let mut current = self.word.load(Ordering::SeqCst);
        loop {
            let (from, to) = (limit(current), limit(current).clamp(min, max));
            if from == to {
                return None;
            }
            match self.word.compare_exchange_weak(
                current,
                word(to, in_flight(current)),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    if to > from {
                        self.wake_waiters();
                    }
                    return Some((from, to));
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives a slot back, leaving the limit (one read-modify-write).
    #[inline]
    pub(crate) fn release(&self) {
        self.word.fetch_sub(1, Ordering::SeqCst);
        self.wake_waiters();
    }

    #[inline]
    fn wake_waiters(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.wake_all();
        }
    }

    #[cold]
    fn wake_all(&self) {
        let woken = std::mem::take(&mut *self.lock());
        for wake in woken {
            match wake {
                Wake::Thread(thread) => thread.unpark(),
                Wake::Task(waker) => waker.wake(),
            }
        }
    }

    /// Counts a waiter in (`true`) or out (`false`).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        match waiting {
            true => self.waiting.fetch_add(1, Ordering::SeqCst),
            false => self.waiting.fetch_sub(1, Ordering::SeqCst),
        };
    }

    /// Asks to be woken by the next release (registered before the waiter looks again, so no
    /// release between the look and the sleep is missed).
    pub(crate) fn wake_me(&self, wake: Wake) {
        let mut wakes = self.lock();
        let known = match &wake {
            Wake::Task(waker) => wakes.iter().any(|w| matches!(w, Wake::Task(old) if old.will_wake(waker))),
            Wake::Thread(thread) => wakes.iter().any(|w| matches!(w, Wake::Thread(t) if t.id() == thread.id())),
        };
        if !known {
            wakes.push(wake);
        }
    }

    /// `(limit, in_flight, waiting)` right now.
    pub(crate) fn load(&self) -> (u32, u32, u32) {
        let current = self.word.load(Ordering::Relaxed);
        (limit(current), in_flight(current), self.waiting.load(Ordering::Relaxed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Wake>> {
        self.wakes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a finished call tells the limit: the adaptive limit's outcome, named in its module as the
/// breaker's `Outcome` is in its own (the generated code reaches it as `__private::LimitOutcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A success (still a drop for Aimd when slower than `latency_timeout`).
    Success,
    /// A drop: a matching error or a timeout.
    Dropped,
    /// Not a sample: `ignore_on`, or a local refusal further in; the limit stays.
    Ignored,
}

impl Outcome {
    /// Classifies an `Err`: an inner `CallTimeout` is a drop, a local refusal (bulkhead, rate
    /// limiter, adaptive limit) is ignored, then `ignore_on` (ignored) and `drop_on` (a drop; every
    /// `Err` when none is given); any other `Err` counts as a success.
    #[inline]
    pub fn of_error(
        rejection: Option<&Rejection>,
        ignored: impl FnOnce() -> bool,
        dropped: impl FnOnce() -> bool,
    ) -> Outcome {
        <Outcome as crate::guard::ErrorOutcome>::judge(rejection, ignored, dropped)
    }
}

/// The algorithm behind the slots: Aimd's step is a pure function of the limit, applied inside
/// the releasing compare-and-set; Gradient2 and Vegas keep floating-point state, fed one sample
/// per window by the call that folds it (`window.rs`), so other calls only record. One engine per
/// instance, inside its `Arc`: kept inline so the stripes are no further pointer away.
#[allow(clippy::large_enum_variant)]
enum Engine {
    Aimd(Aimd),
    Windowed(Windowed),
}

impl Engine {
    fn new(config: &AdaptiveLimitConfig) -> Self {
        match config.algorithm {
            Algorithm::Aimd => Engine::Aimd(Aimd::from_config(config)),
            Algorithm::Gradient2 => Engine::Windowed(Windowed::new(config, Box::new(Gradient2::from_config(config)))),
            Algorithm::Vegas => Engine::Windowed(Windowed::new(config, Box::new(Vegas::from_config(config)))),
        }
    }
}

/// An adaptive limit instance's shared state: one per instance id.
pub(crate) struct AdaptiveLimitState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update (the slow paths load it once each).
    pub(crate) config: Live<AdaptiveLimitConfig>,
    /// `enabled`, what the pass path tests (a live update may change it).
    enabled: AtomicBool,
    /// `min_limit << 32 | max_limit`, one word so a release clamps into one version's bounds.
    bounds: AtomicU64,
    slots: Slots,
    engine: Engine,
    pub(crate) timer: Arc<Timer>,
    /// The timer's coarse reading (`Timer::coarse_cell`, std's atomic also under loom), kept here
    /// so a call dated on the coarse clock reads it through one pointer instead of two.
    coarse: Arc<CachePadded<std::sync::atomic::AtomicU64>>,
    events: Publisher<AdaptiveLimitEvent>,
}

impl fmt::Debug for AdaptiveLimitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveLimitState").field("instance", &self.instance).field("slots", &self.slots).finish()
    }
}

impl AdaptiveLimitState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: AdaptiveLimitConfig,
        timer: Arc<Timer>,
        events: Publisher<AdaptiveLimitEvent>,
    ) -> Self {
        if config.algorithm == Algorithm::Aimd {
            timer.keep_coarse_fresh(); // Aimd dates calls on the coarse clock
        }
        #[cfg(feature = "metrics")]
        events.metrics().limit(config.initial_limit);
        AdaptiveLimitState {
            events,
            slots: Slots::new(config.initial_limit),
            engine: Engine::new(&config),
            instance,
            enabled: AtomicBool::new(config.enabled),
            bounds: AtomicU64::new(bounds(&config)),
            config: Live::new(config),
            coarse: timer.coarse_cell(),
            timer,
        }
    }

    /// A live update (SPEC §16): the current limit is clamped into the new bounds (a raised
    /// floor wakes the waiters), calls in flight keep their slots, and the algorithm keeps its
    /// state (only the keys `LIVE_KEYS` allows reach here; the others are `R4C-CFG-006`).
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: AdaptiveLimitConfig) {
        let (min, max) = (config.min_limit, config.max_limit);
        self.bounds.store(bounds(&config), Ordering::SeqCst);
        self.enabled.store(config.enabled, Ordering::Relaxed);
        self.config.store(config);
        if let Some((from, to)) = self.slots.clamp(min, max) {
            self.changed(from, to);
        }
    }

    /// The bounds a release clamps into: `(min_limit, max_limit)` as of now.
    #[inline(always)]
    fn bounds(&self) -> (u32, u32) {
        let word = self.bounds.load(Ordering::Relaxed);
        ((word >> 32) as u32, word as u32)
    }

    /// Nothing in flight or waiting and the limit back at `initial_limit` (a keyed instance's key,
    /// SPEC §15).
    pub(crate) fn at_rest(&self) -> bool {
        let (limit, in_flight, waiting) = self.slots.load();
        in_flight == 0 && waiting == 0 && limit == self.config.load().initial_limit
    }

    pub(crate) fn snapshot(&self) -> AdaptiveLimitSnapshot {
        let (limit, in_flight, waiting) = self.slots.load();
        AdaptiveLimitSnapshot {
            instance: Arc::clone(&self.instance),
            config: AdaptiveLimitConfig::clone(&self.config.load()),
            limit,
            in_flight,
            waiting,
            keys: 0,
            evicted: 0,
            keys_exhausted: 0,
        }
    }

    /// Aimd's precision (a 5 s `latency_timeout`) allows the coarse clock; the others time calls
    /// on the exact one (without refreshing the shared coarse reading: no write to a shared line),
    /// or on the coarse one while the dependency's fastest calls take 100 ms or more.
    #[inline]
    fn now(&self) -> u64 {
        let coarse = || self.coarse.load(std::sync::atomic::Ordering::Relaxed); // `Timer::coarse_now`
        match &self.engine {
            Engine::Aimd(_) => coarse(),
            Engine::Windowed(windowed) if windowed.coarse() => coarse(),
            Engine::Windowed(_) => self.timer.measure(),
        }
    }

    #[inline]
    fn permit(&self, in_flight: u32) -> AdaptiveLimitPermit<'_> {
        #[cfg(feature = "metrics")]
        self.events.metrics().entered();
        AdaptiveLimitPermit { state: Some(self), start: self.now(), in_flight }
    }

    /// The pass path: a free slot of an enabled limit; `None` for everything else
    /// ([`acquire_slow`](Self::acquire_slow) or the async wait).
    #[inline]
    pub(crate) fn pass(&self) -> Option<AdaptiveLimitPermit<'_>> {
        if self.enabled.load(Ordering::Relaxed)
            && let Some(n) = self.slots.try_acquire()
        {
            return Some(self.permit(n));
        }
        None
    }

    /// Past the pass path, without waiting: a disabled limit's empty permit (`Some(Ok)`), a
    /// refusal when `max_wait` is zero (`Some(Err)`), or `None` when the call must wait for a slot.
    #[cold]
    #[inline(never)]
    pub(crate) fn decide_slow(&self) -> Option<Result<AdaptiveLimitPermit<'_>, Rejection>> {
        let config = self.config.load();
        if !config.enabled {
            return Some(Ok(AdaptiveLimitPermit { state: None, start: 0, in_flight: 0 }));
        }
        if config.max_wait.is_zero() {
            return Some(Err(self.refuse()));
        }
        None
    }

    #[cold]
    fn refuse(&self) -> Rejection {
        self.events.refused();
        publish!(self.events, |m| m.rejected(), || AdaptiveLimitEvent::Rejected {
            instance: Arc::clone(&self.instance),
            key: self.events.key()
        });
        Rejection::LimitExceeded { instance: Arc::clone(&self.instance) }
    }

    /// Frees the slot, feeding the sample to the algorithm unless it is ignored.
    #[inline(always)]
    fn finish(&self, start: u64, in_flight: u32, outcome: Outcome) {
        #[cfg(feature = "metrics")]
        self.events.metrics().left();
        if outcome == Outcome::Ignored {
            return self.slots.release();
        }
        let end = self.now();
        let rtt = end.saturating_sub(start);
        let dropped = outcome == Outcome::Dropped;
        let (from, to) = match &self.engine {
            Engine::Aimd(aimd) => {
                self.slots.release_with(|limit| aimd.next_within(limit, rtt, in_flight, dropped, || self.bounds()))
            }
            Engine::Windowed(windowed) => {
                if !windowed.record(end, Sample { rtt, in_flight, dropped }) {
                    return self.slots.release();
                }
                match self.fold(windowed, end) {
                    Some(changed) => changed,
                    None => return self.slots.release(),
                }
            }
        };
        if from != to {
            self.changed(from, to);
        }
    }

    /// Gradient2 and Vegas, once per window: the window's samples fed to the algorithm, and its
    /// limit stored by this call's release, under the fold's lock (so limits land in order).
    /// `None` when another call folds, or the window had too few samples: release as usual.
    #[cold]
    #[inline(never)]
    fn fold(&self, windowed: &Windowed, end: u64) -> Option<(u32, u32)> {
        let (min, max) = self.bounds();
        let folded = windowed.fold(end, |limit| limit.map(|to| self.slots.release_with(|_| to.clamp(min, max))));
        if folded.is_some() && windowed.coarse() {
            self.timer.keep_coarse_fresh(); // slow calls: time them on the coarse clock from now on
        }
        folded.flatten()
    }

    #[cold]
    fn changed(&self, from: u32, to: u32) {
        publish!(self.events, |m| m.limit(to), || AdaptiveLimitEvent::LimitChanged {
            instance: Arc::clone(&self.instance),
            key: self.events.key(),
            from,
            to
        });
    }

    fn deadline(&self) -> u64 {
        self.timer.now().saturating_add(nanos(self.config.load().max_wait))
    }

    /// Parks the calling thread until a slot frees up (or the limit rises), the deadline passes on
    /// the registry's clock, or the registry shuts down.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        let deadline = self.deadline();
        let _waiting = Waiting::new(&self.slots);
        let slot = self.timer.park_until(deadline, || {
            self.slots.wake_me(Wake::Thread(std::thread::current()));
            self.slots.try_acquire()
        });
        match slot {
            Ok(n) => Ok(self.permit(n)),
            Err(_) => Err(self.refuse()),
        }
    }

    /// Waits in a future for a slot, up to the deadline; dropping the future stops waiting.
    #[cold]
    #[inline(never)]
    pub(crate) async fn wait_async(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        let deadline = self.deadline();
        let _waiting = Waiting::new(&self.slots);
        let mut alarm = pin!(self.timer.sleep_until_async(deadline));
        let slot = poll_fn(|cx| {
            self.slots.wake_me(Wake::Task(cx.waker().clone()));
            if let Some(n) = self.slots.try_acquire() {
                return Poll::Ready(Some(n));
            }
            alarm.as_mut().poll(cx).map(|_| self.slots.try_acquire())
        })
        .await;
        match slot {
            Some(n) => Ok(self.permit(n)),
            None => Err(self.refuse()),
        }
    }
}

/// Counts a waiter while it waits, however the wait ends.
struct Waiting<'a>(&'a Slots);

impl<'a> Waiting<'a> {
    fn new(slots: &'a Slots) -> Self {
        slots.set_waiting(true);
        Waiting(slots)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.set_waiting(false);
    }
}

/// A slot under an adaptive limit. [`finish`](Self::finish) reports the call's outcome; dropped
/// without it (a panic, the future dropped) the slot is given back and the limit left alone.
#[must_use = "the slot is given back as soon as the permit is dropped"]
pub struct AdaptiveLimitPermit<'a> {
    /// `None` for a disabled limit, and once finished.
    state: Option<&'a AdaptiveLimitState>,
    start: u64,
    in_flight: u32,
}

impl fmt::Debug for AdaptiveLimitPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveLimitPermit").field("in_flight", &self.in_flight).finish_non_exhaustive()
    }
}

impl AdaptiveLimitPermit<'_> {
    /// Gives the slot back and feeds the outcome (with the call's duration) to the algorithm.
    #[inline(always)]
    pub fn finish(mut self, outcome: Outcome) {
        if let Some(state) = self.state.take() {
            state.finish(self.start, self.in_flight, outcome);
        }
    }
}

impl Drop for AdaptiveLimitPermit<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.finish(self.start, self.in_flight, Outcome::Ignored);
        }
    }
}

/// `min_limit << 32 | max_limit`.
fn bounds(config: &AdaptiveLimitConfig) -> u64 {
    u64::from(config.min_limit) << 32 | u64::from(config.max_limit)
}

/// The keys of an adaptive limit a live update may change (SPEC §16): the others shape the
/// algorithm's own state, which a live update does not rebuild yet (`R4C-CFG-006`).
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
pub(crate) fn fixed_key(old: &AdaptiveLimitConfig, new: &AdaptiveLimitConfig) -> Option<Fixed> {
    let live = AdaptiveLimitConfig {
        enabled: new.enabled,
        initial_limit: new.initial_limit,
        min_limit: new.min_limit,
        max_limit: new.max_limit,
        max_wait: new.max_wait,
        ..old.clone()
    };
    if live == *new {
        return None;
    }
    let differs: [(&'static str, bool); 15] = [
        ("algorithm", old.algorithm != new.algorithm),
        ("backoff_ratio", old.backoff_ratio != new.backoff_ratio),
        ("latency_timeout", old.latency_timeout != new.latency_timeout),
        ("smoothing", old.smoothing != new.smoothing),
        ("long_window", old.long_window != new.long_window),
        ("rtt_tolerance", old.rtt_tolerance != new.rtt_tolerance),
        ("queue_size", old.queue_size != new.queue_size),
        ("alpha", old.alpha != new.alpha),
        ("beta", old.beta != new.beta),
        ("min_window_time", old.min_window_time != new.min_window_time),
        ("max_window_time", old.max_window_time != new.max_window_time),
        ("window_size", old.window_size != new.window_size),
        ("min_rtt_threshold", old.min_rtt_threshold != new.min_rtt_threshold),
        ("enabled", false),
        ("max_wait", false),
    ];
    Some(Fixed::NotLive(differs.into_iter().find_map(|(key, changed)| changed.then_some(key)).unwrap_or("algorithm")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_counts_up_to_the_limit() {
        let s = Slots::new(2);
        assert_eq!(s.try_acquire(), Some(1));
        assert_eq!(s.try_acquire(), Some(2));
        assert_eq!(s.try_acquire(), None);
        assert_eq!(s.load(), (2, 2, 0));
        s.release();
        assert_eq!(s.load(), (2, 1, 0));
    }

    #[test]
    fn a_release_that_keeps_the_limit_only_gives_the_slot_back() {
        let s = Slots::new(4);
        s.try_acquire();
        s.try_acquire();
        assert_eq!(s.release_with(|l| l), (4, 4));
        assert_eq!(s.load(), (4, 1, 0));
        assert_eq!(s.release_with(|l| l.min(4)), (4, 4));
        assert_eq!(s.load(), (4, 0, 0));
    }

    #[test]
    fn release_gives_the_slot_back_and_sets_the_new_limit() {
        let s = Slots::new(2);
        s.try_acquire();
        s.try_acquire();
        assert_eq!(s.release_with(|l| l + 1), (2, 3));
        assert_eq!(s.load(), (3, 1, 0));
        assert_eq!(s.release_with(|_| 1), (3, 1));
        assert_eq!(s.load(), (1, 0, 0));
    }

    #[test]
    fn a_lowered_limit_refuses_until_enough_calls_left() {
        let s = Slots::new(3);
        for _ in 0..3 {
            s.try_acquire();
        }
        s.release_with(|_| 1);
        assert_eq!(s.try_acquire(), None, "2 in flight, limit 1");
        s.release();
        s.release();
        assert_eq!(s.try_acquire(), Some(1));
    }

    #[test]
    fn a_release_wakes_registered_waiters_once() {
        let s = Slots::new(1);
        s.try_acquire();
        s.set_waiting(true);
        s.wake_me(Wake::Thread(std::thread::current()));
        s.wake_me(Wake::Thread(std::thread::current()));
        assert_eq!(s.lock().len(), 1, "registered once");
        s.release();
        assert!(s.lock().is_empty(), "woken and forgotten");
        s.set_waiting(false);
        assert_eq!(s.load(), (1, 0, 0));
    }

    /// Four threads racing acquire/release with limit changes: the count never passes the limit
    /// it was taken under, and nothing leaks.
    #[test]
    fn stress_the_word() {
        let s = Slots::new(3);
        std::thread::scope(|scope| {
            for t in 0..4u32 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..5_000u32 {
                        if let Some(n) = s.try_acquire() {
                            assert!(n <= 8, "never above the highest limit");
                            if (i + t) % 3 == 0 {
                                s.release_with(|l| if l >= 8 { 2 } else { l + 1 });
                            } else {
                                s.release();
                            }
                        }
                    }
                });
            }
        });
        let (limit, in_flight, waiting) = s.load();
        assert_eq!((in_flight, waiting), (0, 0));
        assert!((2..=8).contains(&limit));
    }
}
