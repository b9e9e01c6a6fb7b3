//! A retry instance's shared state: its resolved configuration, its jitter stream and its budget
//! (the budget's striped counters are in `budget.rs`). The per-call state is the caller's
//! [`RetryCall`], a local variable of the generated loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::budget::RetryBudget;
use super::{Backoff, GiveUpReason, Jitter, RetryConfig, RetryEvent, RetrySnapshot};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};

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
    pub(crate) config: RetryConfig,
    pub(super) timer: Arc<Timer>,
    pub(super) events: Publisher<RetryEvent>,
    /// Jitter stream: each draw takes the next seed (lock-free, deterministic for a fixed seed).
    rng: AtomicU64,
    pub(crate) budget: Option<RetryBudget>,
}

impl RetryState {
    /// Each instance draws its jitter from its own stream, seeded by the registry's seed and its id.
    pub(super) fn new(
        instance: Arc<str>,
        config: RetryConfig,
        timer: Arc<Timer>,
        events: Publisher<RetryEvent>,
        seed: u64,
    ) -> Self {
        RetryState {
            budget: config.has_budget().then(|| RetryBudget::new(&config, timer.now())),
            rng: AtomicU64::new(seed ^ fnv1a(&instance)),
            events,
            instance,
            config,
            timer,
        }
    }

    pub(crate) fn snapshot(&self) -> RetrySnapshot {
        RetrySnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.clone(),
            budget: self.budget.as_ref().map(|b| b.snapshot(self.timer.now())),
        }
    }

    /// The base wait before retry `n` (after `n` failed attempts), then jitter.
    pub(super) fn wait_before_retry(&self, n: u32) -> Duration {
        let c = &self.config;
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
        self.jitter(base)
    }

    fn jitter(&self, base: Duration) -> Duration {
        let base_nanos = nanos(base);
        if base_nanos == 0 {
            return base;
        }
        let rng = || fastrand::Rng::with_seed(self.rng.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed));
        match self.config.jitter {
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
