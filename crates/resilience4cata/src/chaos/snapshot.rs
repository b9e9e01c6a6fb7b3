//! The observable state of a chaos instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::ChaosConfig;

/// One chaos instance as `registry.snapshot().chaos()` lists it.
///
/// ```
/// use resilience4cata::chaos::ChaosSnapshot;
///
/// fn report(s: &ChaosSnapshot) -> String {
///     format!("{}: {} faults, {} delays injected (on: {})", s.instance, s.faults, s.latencies, s.config.enabled)
/// }
/// # let _ = report;
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ChaosSnapshot {
    /// The injection point's id (the method's derived id, or the pipeline's).
    pub instance: Arc<str>,
    /// The configuration in force.
    pub config: ChaosConfig,
    /// Faults injected since the instance was built.
    pub faults: u64,
    /// Delays injected since the instance was built (counted when each starts).
    pub latencies: u64,
}

const FAULTS: Series = Series::counter("chaos_faults_total", "faults injected (the delegate not called)");
const LATENCIES: Series = Series::counter("chaos_latencies_total", "delays injected before the delegate");
const ENABLED: Series = Series::gauge("chaos_enabled", "1 while injection is switched on, else 0");

impl crate::readings::Readings for ChaosSnapshot {
    const SERIES: &'static [Series] = &[FAULTS, LATENCIES, ENABLED];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        out(Reading::new(&FAULTS, self.faults as f64));
        out(Reading::new(&LATENCIES, self.latencies as f64));
        out(Reading::new(&ENABLED, if self.config.enabled { 1.0 } else { 0.0 }));
    }
}
