//! The observable state of a timeout instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::TimeoutConfig;

/// One timeout instance as `registry.snapshot().timeouts()` lists it.
///
/// ```
/// use resilience4cata::timeout::TimeoutSnapshot;
///
/// fn report(s: &TimeoutSnapshot) -> String {
///     format!("{}: {} attempts cut off after {:?}", s.instance, s.timed_out, s.config.duration)
/// }
/// # let _ = report;
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TimeoutSnapshot {
    /// The instance id (always the derived id).
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: TimeoutConfig,
    /// Attempts cut off at their deadline since the instance was built.
    pub timed_out: u64,
}

const TIMED_OUT: Series = Series::counter("timeout_timed_out_total", "attempts cut off at their deadline");

impl crate::readings::Readings for TimeoutSnapshot {
    const SERIES: &'static [Series] = &[TIMED_OUT];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, out: &mut dyn FnMut(Reading)) {
        out(Reading::new(&TIMED_OUT, self.timed_out as f64));
    }
}
