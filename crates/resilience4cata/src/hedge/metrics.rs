//! Hedge counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

/// One instance's handles: increments never allocate.
#[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
pub struct HedgeMetrics {
    hedged: Counter,
    won: Counter,
    all_failed: Counter,
}

impl HedgeMetrics {
    pub(crate) fn register(instance: &Arc<str>) -> Self {
        let id = instance.to_string();
        HedgeMetrics {
            hedged: metrics::counter!("resilience4cata_hedge_attempts_total", "instance" => id.clone()),
            won: metrics::counter!("resilience4cata_hedge_wins_total", "instance" => id.clone()),
            all_failed: metrics::counter!("resilience4cata_hedge_all_failed_total", "instance" => id),
        }
    }

    /// A `Hedged` event.
    pub(crate) fn hedged(&self) {
        self.hedged.increment(1);
    }

    /// A `Finished` event: won by an extra attempt, by the first, or by none.
    pub(crate) fn finished(&self, winner: Option<u32>) {
        match winner {
            Some(n) if n > 1 => self.won.increment(1),
            Some(_) => {}
            None => self.all_failed.increment(1),
        }
    }
}
