//! Hedge counters through the `metrics` facade (feature `metrics`).

use std::sync::Arc;

use metrics::Counter;

use super::HedgeEvent;

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

    pub(crate) fn record(event: &HedgeEvent, metrics: &Self) {
        match event {
            HedgeEvent::Hedged { .. } => metrics.hedged.increment(1),
            HedgeEvent::Finished { winner: Some(n), .. } if *n > 1 => metrics.won.increment(1),
            HedgeEvent::Finished { winner: None, .. } => metrics.all_failed.increment(1),
            HedgeEvent::Finished { .. } => {}
        }
    }
}
