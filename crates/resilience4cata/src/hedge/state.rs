//! A hedge instance's shared state: its resolved configuration and the counts its snapshot
//! reports (the race of one call's attempts is in `race.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{HedgeConfig, HedgeEvent, HedgeSnapshot};
use crate::clock::Timer;
use crate::events::{Publisher, publish};
use crate::sync::Live;

/// A hedge instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct HedgeState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update: a race reads it once, when it starts.
    pub(crate) config: Live<HedgeConfig>,
    /// `config.enabled`, what every call reads (one relaxed load).
    pub(crate) enabled: AtomicBool,
    pub(crate) timer: Arc<Timer>,
    events: Publisher<HedgeEvent>,
    hedged_calls: AtomicU64,
    hedge_wins: AtomicU64,
}

impl HedgeState {
    pub(crate) fn new(
        instance: Arc<str>,
        config: HedgeConfig,
        timer: Arc<Timer>,
        events: Publisher<HedgeEvent>,
    ) -> Self {
        HedgeState {
            instance,
            enabled: AtomicBool::new(config.enabled),
            config: Live::new(config),
            timer,
            events,
            hedged_calls: AtomicU64::new(0),
            hedge_wins: AtomicU64::new(0),
        }
    }

    /// A live update (SPEC §16): a race already running keeps the values it started with.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: HedgeConfig) {
        self.enabled.store(config.enabled, Ordering::Relaxed);
        self.config.store(config);
    }

    pub(crate) fn snapshot(&self) -> HedgeSnapshot {
        HedgeSnapshot {
            instance: Arc::clone(&self.instance),
            config: HedgeConfig::clone(&self.config.load()),
            hedged_calls: self.hedged_calls.load(Ordering::Relaxed),
            hedge_wins: self.hedge_wins.load(Ordering::Relaxed),
        }
    }

    /// Attempt `attempt` (2, 3, …) started.
    #[cold]
    pub(crate) fn hedged(&self, attempt: u32) {
        if attempt == 2 {
            self.hedged_calls.fetch_add(1, Ordering::Relaxed);
        }
        publish!(self.events, |m| m.hedged(), || HedgeEvent::Hedged { instance: Arc::clone(&self.instance), attempt });
    }

    /// Attempt `winner` answered `Ok` after `attempts` had started.
    pub(crate) fn won<T>(&self, attempts: u32, winner: u32, value: T) -> T {
        if attempts > 1 {
            self.finished(attempts, Some(winner));
        }
        value
    }

    /// Every one of `attempts` attempts failed.
    pub(crate) fn all_failed(&self, attempts: u32) {
        if attempts > 1 {
            self.finished(attempts, None);
        }
    }

    #[cold]
    fn finished(&self, attempts: u32, winner: Option<u32>) {
        if winner.is_some_and(|n| n > 1) {
            self.hedge_wins.fetch_add(1, Ordering::Relaxed);
        }
        publish!(self.events, |m| m.finished(winner), || HedgeEvent::Finished {
            instance: Arc::clone(&self.instance),
            attempts,
            winner
        });
    }
}
