//! The observable state of a hedge instance.

use std::sync::Arc;

use crate::readings::{Reading, Series};

use super::HedgeConfig;

/// One hedge instance as `registry.snapshot().hedges()` lists it.
///
/// ```
/// use resilience4cata::hedge::HedgeSnapshot;
///
/// fn report(s: &HedgeSnapshot) -> String {
///     format!("{}: {} of {} hedged calls won by an extra attempt", s.instance, s.hedge_wins, s.hedged_calls)
/// }
/// # let _ = report;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct HedgeSnapshot {
    /// The instance id (its `name`, or the derived id).
    pub instance: Arc<str>,
    /// The resolved configuration.
    pub config: HedgeConfig,
    /// Calls that started at least one extra attempt.
    pub hedged_calls: u64,
    /// Calls whose returned `Ok` came from an extra attempt.
    pub hedge_wins: u64,
}

/// No series: the admin counts hedged calls from events since it started.
impl crate::readings::Readings for HedgeSnapshot {
    const SERIES: &'static [Series] = &[];

    fn instance(&self) -> &str {
        &self.instance
    }

    fn read(&self, _: &mut dyn FnMut(Reading)) {}
}
