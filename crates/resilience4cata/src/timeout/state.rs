//! A timeout instance's shared state: its resolved configuration and the count of attempts that
//! ran out of time (the race of one attempt against its deadline is in `race.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{TimeoutConfig, TimeoutEvent, TimeoutSnapshot};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};
use crate::rejection::Rejection;
use crate::sync::Live;

/// A timeout instance's shared state: one per (derived) instance id.
#[derive(Debug)]
pub(crate) struct TimeoutState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update (snapshots; SPEC §16).
    pub(crate) config: Live<TimeoutConfig>,
    /// What a call reads: the deadline's length in nanoseconds, or 0 when disabled (a zero
    /// `duration` is out of range, so 0 is free), one relaxed load that is one whole version.
    pub(super) duration: AtomicU64,
    pub(super) timer: Arc<Timer>,
    events: Publisher<TimeoutEvent>,
    timed_out: AtomicU64,
}

impl TimeoutState {
    /// Starts the coarse-clock ticker (deadlines are fixed from the coarse clock).
    pub(crate) fn new(
        instance: Arc<str>,
        config: TimeoutConfig,
        timer: Arc<Timer>,
        events: Publisher<TimeoutEvent>,
    ) -> Self {
        timer.keep_coarse_fresh();
        TimeoutState {
            duration: AtomicU64::new(armed(&config)),
            instance,
            config: Live::new(config),
            timer,
            events,
            timed_out: AtomicU64::new(0),
        }
    }

    /// A live update (SPEC §16): calls that already read their deadline keep it.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: TimeoutConfig) {
        self.duration.store(armed(&config), Ordering::Relaxed);
        self.config.store(config);
    }

    pub(crate) fn snapshot(&self) -> TimeoutSnapshot {
        TimeoutSnapshot {
            instance: Arc::clone(&self.instance),
            config: TimeoutConfig::clone(&self.config.load()),
            timed_out: self.timed_out.load(Ordering::Relaxed),
        }
    }

    /// The attempt's deadline (`nanos` long, as read when it started) came.
    #[cold]
    pub(super) fn fired(&self, nanos: u64) -> Rejection {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
        let timeout = Duration::from_nanos(nanos);
        publish!(self.events, |m| m.timed_out(), || TimeoutEvent::TimedOut {
            instance: Arc::clone(&self.instance),
            timeout
        });
        Rejection::CallTimeout { instance: Arc::clone(&self.instance), timeout }
    }
}

/// What `TimeoutState::duration` holds for `config`: its length in nanoseconds (at least 1), or 0
/// when disabled.
fn armed(config: &TimeoutConfig) -> u64 {
    match config.enabled {
        true => nanos(config.duration).max(1),
        false => 0,
    }
}
