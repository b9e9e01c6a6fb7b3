//! A timeout instance's shared state: its resolved configuration and the count of attempts that
//! ran out of time (the race of one attempt against its deadline is in `race.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{TimeoutConfig, TimeoutEvent, TimeoutSnapshot};
use crate::clock::{Timer, nanos};
use crate::events::{Publisher, publish};
use crate::rejection::Rejection;

/// A timeout instance's shared state: one per (derived) instance id.
#[derive(Debug)]
pub(crate) struct TimeoutState {
    pub(crate) instance: Arc<str>,
    pub(crate) config: TimeoutConfig,
    pub(super) duration: u64,
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
        TimeoutState { duration: nanos(config.duration), instance, config, timer, events, timed_out: AtomicU64::new(0) }
    }

    pub(crate) fn snapshot(&self) -> TimeoutSnapshot {
        TimeoutSnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.clone(),
            timed_out: self.timed_out.load(Ordering::Relaxed),
        }
    }

    #[cold]
    pub(super) fn fired(&self) -> Rejection {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
        let timeout = self.config.duration;
        publish!(self.events, |m| m.timed_out(), || TimeoutEvent::TimedOut {
            instance: Arc::clone(&self.instance),
            timeout
        });
        Rejection::CallTimeout { instance: Arc::clone(&self.instance), timeout }
    }
}
