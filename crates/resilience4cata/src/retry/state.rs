//! A retry instance's shared state: its resolved configuration, its jitter stream and its budget
//! (the budget's striped counters are in `budget.rs`). The per-call state is the caller's
//! [`RetryCall`], a local variable of the generated loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::budget::RetryBudget;
use super::{Backoff, GiveUpReason, Jitter, RetryConfig, RetryEvent, RetrySnapshot};
use crate::clock::{OnShutdown, Timer, nanos};
use crate::events::{Publisher, publish};
use crate::sync::Live;

/// The per-call state of the generated loop: a local variable, never shared.
#[derive(Clone, Copy, Debug)]
pub struct RetryCall {
    pub(super) attempts: u32,
    /// Nanoseconds on the registry clock at the first attempt; read only with `max_duration`.
    pub(super) started: u64,
}

impl RetryCall {
    /// Attempts made so far, the first included (after giving up: all of them).
    #[inline]
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// A retry instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct RetryState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update: each decision after a failure loads
    /// it once, so it decides on one whole version (SPEC §16).
    pub(crate) config: Live<RetryConfig>,
    pub(super) timer: Arc<Timer>,
    pub(super) events: Publisher<RetryEvent>,
    /// Jitter stream: each draw takes the next seed (lock-free, deterministic for a fixed seed).
    rng: AtomicU64,
    /// The budget's counters, kept whether the budget is on or off (`config.has_budget()`), so a
    /// live update can turn it on and keeps its counts when it changes its limits.
    pub(crate) budget: RetryBudget,
    /// What `start` must do, one relaxed load: [`START_BUDGET`] | [`START_CLOCKED`], or 0.
    pub(super) start_mode: AtomicU8,
    /// `max_attempts` when a retry can be granted without consulting anything but the attempt
    /// count: enabled, zero delay (so zero wait, whatever the backoff and jitter), no
    /// `max_duration`, no budget, no listener on the builder, and the registry not shut down
    /// (cleared by [`Timer::shut_down`] through [`OnShutdown`], so the quick path reads no flag
    /// of the timer's). Else 0, which no attempt count is below. Whether a subscriber or a
    /// tracing subscriber wants events is checked on each retry (`Publisher::is_watched`); metric
    /// handles are updated on the quick path itself.
    pub(super) quick_below: AtomicU32,
    /// Whether [`hear_shutdown`](Self::hear_shutdown) registered this state with the timer.
    hooked: AtomicBool,
}

impl OnShutdown for RetryState {
    fn shut_down(&self) {
        self.quick_below.store(0, Ordering::Relaxed);
    }
}

/// `start` counts the call in the budget.
pub(super) const START_BUDGET: u8 = 1;
/// `start` reads the clock (`max_duration`).
pub(super) const START_CLOCKED: u8 = 2;

impl RetryState {
    /// Each instance draws its jitter from its own stream, seeded by the registry's seed and its id.
    pub(super) fn new(
        instance: Arc<str>,
        config: RetryConfig,
        timer: Arc<Timer>,
        events: Publisher<RetryEvent>,
        seed: u64,
    ) -> Self {
        let (start_mode, quick_below) = hot(&config, events.has_listeners());
        RetryState {
            budget: RetryBudget::new(&config, timer.now()),
            rng: AtomicU64::new(seed ^ fnv1a(&instance)),
            events,
            instance,
            config: Live::new(config),
            timer,
            start_mode: AtomicU8::new(start_mode),
            quick_below: AtomicU32::new(quick_below),
            hooked: AtomicBool::new(false),
        }
    }

    /// A live update (SPEC §16): the budget keeps its counters; a call in flight keeps the wait it
    /// is in and decides its next step on the new values.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: RetryConfig) {
        self.budget.reconfigure(&config, self.timer.now());
        let (start_mode, quick_below) = hot(&config, self.events.has_listeners());
        self.config.store(config);
        self.start_mode.store(start_mode, Ordering::Relaxed);
        // Not after shutdown: the quick path relies on 0 then.
        self.timer.unless_shut_down(|| self.quick_below.store(quick_below, Ordering::Relaxed));
    }

    /// Has the timer clear `quick_below` when the registry shuts down (once per state).
    pub(super) fn hear_shutdown(self: &Arc<Self>) {
        if !self.hooked.swap(true, Ordering::Relaxed) {
            let hook: Arc<dyn OnShutdown> = Arc::clone(self) as Arc<dyn OnShutdown>;
            self.timer.on_shutdown(Arc::downgrade(&hook));
        }
    }

    pub(crate) fn snapshot(&self) -> RetrySnapshot {
        let config = RetryConfig::clone(&self.config.load());
        let budget = config.has_budget().then(|| self.budget.snapshot(self.timer.now()));
        RetrySnapshot { instance: Arc::clone(&self.instance), config, budget }
    }

    /// The base wait before retry `n` (after `n` failed attempts), then jitter.
    pub(super) fn wait_before_retry(&self, c: &RetryConfig, n: u32) -> Duration {
        let base = match c.backoff {
            Backoff::Fixed => c.delay,
            // The first retry waits `delay` whatever the multiplier, and a zero delay stays zero:
            // exact, and no float arithmetic (`powi`, `try_from_secs_f64`: the "Backoff arithmetic"
            // item of docs/benchmarks.md, "What was fixed on the way") on the most common paths
            // (`max_delay >= delay` is validated).
            Backoff::Exponential if n <= 1 || c.delay.is_zero() => c.delay,
            Backoff::Exponential => {
                let grown = c.delay.as_secs_f64() * c.multiplier.powi(n.saturating_sub(1).min(i32::MAX as u32) as i32);
                Duration::try_from_secs_f64(grown).map_or(c.max_delay, |d| d.min(c.max_delay))
            }
        };
        self.jitter(c, base)
    }

    fn jitter(&self, c: &RetryConfig, base: Duration) -> Duration {
        let base_nanos = nanos(base);
        if base_nanos == 0 {
            return base;
        }
        let rng = || fastrand::Rng::with_seed(self.rng.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed));
        match c.jitter {
            Jitter::None => base,
            Jitter::Full => Duration::from_nanos(rng().u64(0..=base_nanos)),
            Jitter::Equal => Duration::from_nanos(base_nanos / 2 + rng().u64(0..=base_nanos - base_nanos / 2)),
        }
    }

    pub(super) fn gave_up(&self, call: &RetryCall, reason: GiveUpReason) {
        publish!(self.events, |m| m.gave_up(reason), || RetryEvent::GaveUp {
            instance: Arc::clone(&self.instance),
            attempts: call.attempts,
            reason,
        });
    }
}

/// A stable hash of the instance id, so each instance's jitter stream differs but is reproducible.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The values `start` and the quick path read, for `config`: `(start_mode, quick_below)`.
fn hot(c: &RetryConfig, has_listeners: bool) -> (u8, u32) {
    let budget = c.has_budget();
    let mut start_mode = 0;
    if c.enabled && budget {
        start_mode |= START_BUDGET;
    }
    if c.enabled && c.max_duration.is_some() {
        start_mode |= START_CLOCKED;
    }
    let quick = c.enabled && c.delay.is_zero() && c.max_duration.is_none() && !budget && !has_listeners;
    (start_mode, if quick { c.max_attempts } else { 0 })
}
