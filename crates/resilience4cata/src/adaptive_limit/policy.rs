//! The adaptive limit instance the generated code takes a slot from, and the permit that reports
//! the call's outcome back to the algorithm.

use std::fmt;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::algorithm::{Aimd, Gradient2, Vegas};
use super::state::{Slots, Wake};
use super::window::{Sample, Windowed};
use super::{AdaptiveLimitConfig, AdaptiveLimitConfigBuilder, AdaptiveLimitEvent, AdaptiveLimitSnapshot, Algorithm};
use crate::clock::{Timer, nanos};
use crate::error::RegistryError;
use crate::events::{Publisher, publish};
use crate::registry::{Inner, policy_kind};
use crate::rejection::Rejection;

/// What a finished call tells the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitOutcome {
    /// A success (still a drop for Aimd when slower than `latency_timeout`).
    Success,
    /// A drop: a matching error or a timeout.
    Dropped,
    /// Not a sample: `ignore_on`, or a local refusal further in; the limit stays.
    Ignored,
}

impl LimitOutcome {
    /// Classifies an `Err`: an inner `CallTimeout` is a drop, a local refusal (bulkhead, rate
    /// limiter, adaptive limit) is ignored, then `ignore_on` (ignored) and `drop_on` (a drop; every
    /// `Err` when none is given); any other `Err` counts as a success.
    #[inline]
    pub fn of_error(
        rejection: Option<&Rejection>,
        ignored: impl FnOnce() -> bool,
        dropped: impl FnOnce() -> bool,
    ) -> LimitOutcome {
        match rejection {
            Some(Rejection::CallTimeout { .. }) => LimitOutcome::Dropped,
            Some(r) if r.is_local() => LimitOutcome::Ignored,
            _ if ignored() => LimitOutcome::Ignored,
            _ if dropped() => LimitOutcome::Dropped,
            _ => LimitOutcome::Success,
        }
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
    pub(crate) config: AdaptiveLimitConfig,
    slots: Slots,
    engine: Engine,
    timer: Arc<Timer>,
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
            config,
            timer,
        }
    }

    pub(crate) fn snapshot(&self) -> AdaptiveLimitSnapshot {
        let (limit, in_flight, waiting) = self.slots.load();
        AdaptiveLimitSnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.clone(),
            limit,
            in_flight,
            waiting,
        }
    }

    /// Aimd's precision (a 5 s `latency_timeout`) allows the coarse clock; the others time calls
    /// on the exact one (without refreshing the shared coarse reading: no write to a shared line),
    /// or on the coarse one while the dependency's fastest calls take 100 ms or more.
    #[inline]
    fn now(&self) -> u64 {
        match &self.engine {
            Engine::Aimd(_) => self.timer.coarse_now(),
            Engine::Windowed(windowed) if windowed.coarse() => self.timer.coarse_now(),
            Engine::Windowed(_) => self.timer.measure(),
        }
    }

    #[inline]
    fn permit(&self, in_flight: u32) -> AdaptiveLimitPermit<'_> {
        #[cfg(feature = "metrics")]
        self.events.metrics().entered();
        AdaptiveLimitPermit { state: Some(self), start: self.now(), in_flight }
    }

    /// The pass path: a slot, or a refusal when `max_wait` is zero; `None` when the call must wait.
    #[inline]
    fn pass(&self) -> Option<Result<AdaptiveLimitPermit<'_>, Rejection>> {
        if !self.config.enabled {
            return Some(Ok(AdaptiveLimitPermit { state: None, start: 0, in_flight: 0 }));
        }
        if let Some(n) = self.slots.try_acquire() {
            return Some(Ok(self.permit(n)));
        }
        if self.config.max_wait.is_zero() {
            return Some(Err(self.refuse()));
        }
        None
    }

    #[cold]
    fn refuse(&self) -> Rejection {
        publish!(self.events, |m| m.rejected(), || AdaptiveLimitEvent::Rejected {
            instance: Arc::clone(&self.instance)
        });
        Rejection::LimitExceeded { instance: Arc::clone(&self.instance) }
    }

    /// Frees the slot, feeding the sample to the algorithm unless it is ignored.
    #[inline(always)]
    fn finish(&self, start: u64, in_flight: u32, outcome: LimitOutcome) {
        #[cfg(feature = "metrics")]
        self.events.metrics().left();
        if outcome == LimitOutcome::Ignored {
            return self.slots.release();
        }
        let end = self.now();
        let rtt = end.saturating_sub(start);
        let dropped = outcome == LimitOutcome::Dropped;
        let (from, to) = match &self.engine {
            Engine::Aimd(aimd) => self.slots.release_with(|limit| aimd.next(limit, rtt, in_flight, dropped)),
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
        let folded = windowed.fold(end, |limit| limit.map(|to| self.slots.release_with(|_| to)));
        if folded.is_some() && windowed.coarse() {
            self.timer.keep_coarse_fresh(); // slow calls: time them on the coarse clock from now on
        }
        folded.flatten()
    }

    #[cold]
    fn changed(&self, from: u32, to: u32) {
        publish!(self.events, |m| m.limit(to), || AdaptiveLimitEvent::LimitChanged {
            instance: Arc::clone(&self.instance),
            from,
            to
        });
    }

    fn deadline(&self) -> u64 {
        self.timer.now().saturating_add(nanos(self.config.max_wait))
    }

    /// Parks the calling thread until a slot frees up (or the limit rises), the deadline passes on
    /// the registry's clock, or the registry shuts down.
    #[cold]
    #[inline(never)]
    fn wait(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
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
    async fn wait_async(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
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
    pub fn finish(mut self, outcome: LimitOutcome) {
        if let Some(state) = self.state.take() {
            state.finish(self.start, self.in_flight, outcome);
        }
    }
}

impl Drop for AdaptiveLimitPermit<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.finish(self.start, self.in_flight, LimitOutcome::Ignored);
        }
    }
}

/// The field the generated code keeps for one method with an adaptive limit.
#[derive(Clone, Debug)]
pub struct AdaptiveLimitPolicy {
    state: Arc<AdaptiveLimitState>,
}

impl AdaptiveLimitPolicy {
    pub(crate) fn new(state: Arc<AdaptiveLimitState>) -> Self {
        AdaptiveLimitPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Takes a slot, parking the thread up to `max_wait` for one; otherwise
    /// `Rejection::LimitExceeded`. Finish the permit with the call's outcome.
    #[inline]
    pub fn acquire(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        self.state.pass().unwrap_or_else(|| self.state.wait())
    }

    /// The async form of [`acquire`](Self::acquire): waits in the future, blocks no thread.
    #[inline]
    pub async fn acquire_async(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        match self.state.pass() {
            Some(decided) => decided,
            None => self.state.wait_async().await,
        }
    }
}

policy_kind! {
    AdaptiveLimitPolicy {
        builder: AdaptiveLimitConfigBuilder,
        state: AdaptiveLimitState,
        event: AdaptiveLimitEvent,
        snapshot: AdaptiveLimitSnapshot,
        metrics: AdaptiveLimitMetrics,
    }

    fn check(inner: &Inner, id: &str, is_async: bool, c: &AdaptiveLimitConfig) -> Result<(), RegistryError> {
        match is_async && c.enabled && !c.max_wait.is_zero() {
            true => inner.require_async_clock(id, "this async method may wait for an adaptive limit slot"),
            false => Ok(()),
        }
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: AdaptiveLimitConfig,
        events: Publisher<AdaptiveLimitEvent>,
    ) -> AdaptiveLimitState {
        AdaptiveLimitState::new(instance, config, Arc::clone(&inner.timer), events)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn limit(clock: &ManualClock, config: AdaptiveLimitConfig) -> AdaptiveLimitPolicy {
        let timer = Arc::new(Clock::from(clock).into_timer());
        let instance: Arc<str> = "al".into();
        let events = Publisher::detached(&[], &instance);
        AdaptiveLimitPolicy::new(Arc::new(AdaptiveLimitState::new(instance, config, timer, events)))
    }

    /// Async tasks on two runtime threads, a fixed limit of 2 and short waits on the manual clock:
    /// refusals at a deadline race slots freed and waiters woken all the time. Never more than 2
    /// inside, every call accounted for, nothing left taken or waiting.
    #[test]
    fn stress_async_waiters_never_exceed_the_limit() {
        const MAX: u32 = 2;
        let clock = ManualClock::new();
        let config = AdaptiveLimitConfig {
            min_limit: MAX,
            initial_limit: MAX,
            max_limit: MAX,
            max_wait: Duration::from_millis(3),
            ..AdaptiveLimitConfig::default()
        };
        let policy = Arc::new(limit(&clock, config));
        let inside = Arc::new(AtomicU32::new(0));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let (passed, refused) = rt.block_on(async {
            let tasks: Vec<_> = (0..6u32)
                .map(|t| {
                    let (policy, inside) = (Arc::clone(&policy), Arc::clone(&inside));
                    tokio::spawn(async move {
                        let (mut passed, mut refused) = (0u32, 0u32);
                        for i in 0..300u32 {
                            let Ok(permit) = policy.acquire_async().await else {
                                refused += 1;
                                continue;
                            };
                            assert!(inside.fetch_add(1, Ordering::SeqCst) < MAX, "more than {MAX} inside");
                            let work = Duration::from_micros(u64::from((i * 7 + t) % 5) * 900);
                            policy.state.timer.sleep_async(work).await.unwrap();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            permit.finish(if i % 4 == 0 { LimitOutcome::Dropped } else { LimitOutcome::Success });
                            passed += 1;
                        }
                        (passed, refused)
                    })
                })
                .collect();
            let mut totals = (0, 0);
            for task in tasks {
                let (p, r) = task.await.unwrap();
                totals = (totals.0 + p, totals.1 + r);
            }
            totals
        });
        assert_eq!(passed + refused, 1_800);
        assert!(passed > 0 && refused > 0, "both outcomes happen: {passed} passed, {refused} refused");
        let s = policy.state.snapshot();
        assert_eq!((s.limit, s.in_flight, s.waiting), (MAX, 0, 0));
    }

    #[test]
    fn shutdown_ends_waits_with_a_refusal() {
        let clock = ManualClock::new();
        let config = AdaptiveLimitConfig {
            initial_limit: 1,
            max_limit: 1,
            max_wait: Duration::from_secs(1),
            ..AdaptiveLimitConfig::default()
        };
        let policy = limit(&clock, config);
        let _held = policy.acquire().unwrap();
        policy.state.timer.shut_down();
        assert!(matches!(policy.acquire(), Err(Rejection::LimitExceeded { .. })));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(matches!(rt.block_on(policy.acquire_async()), Err(Rejection::LimitExceeded { .. })));
        assert_eq!(policy.state.snapshot().waiting, 0);
    }
}
