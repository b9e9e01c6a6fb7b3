//! Hedge configuration: the resolved [`HedgeConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

/// The most extra attempts one hedged call may start (`max_hedged_attempts`).
pub const MAX_HEDGED_ATTEMPTS: u32 = 8;

/// A hedge's resolved configuration: every key has a value.
///
/// Built-in defaults: one extra attempt, started 100 ms after the first if it has not answered.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::hedge::HedgeConfig;
///
/// let c = HedgeConfig::default();
/// assert_eq!((c.enabled, c.delay, c.max_hedged_attempts), (true, Duration::from_millis(100), 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct HedgeConfig {
    /// `false`: one plain attempt, no events.
    pub enabled: bool,
    /// How long an attempt may go unanswered before the next one starts (zero: all at once).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub delay: Duration,
    /// Attempts beyond the first (1..=8).
    pub max_hedged_attempts: u32,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig { enabled: true, delay: Duration::from_millis(100), max_hedged_attempts: 1 }
    }
}

layered_builder! {
    /// Hedge settings to layer over the defaults: each setter is named after its attribute key and
    /// overrides only that key. Used in every `hedge_…` builder closure: `|h| h.delay(d)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .hedge_defaults(|h| h.delay(Duration::from_millis(50)).max_hedged_attempts(2))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    HedgeConfigBuilder => HedgeConfig {
        /// `enabled`: `false` makes the method one plain attempt.
        enabled: bool,
        /// `delay`: how long an attempt may go unanswered before the next one starts.
        delay: Duration,
        /// `max_hedged_attempts`: attempts beyond the first (1..=8).
        max_hedged_attempts: u32,
    }
    layer "hedge" { values: check_values }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &HedgeConfig) -> Result<(), KeyProblem> {
    if !(1..=MAX_HEDGED_ATTEMPTS).contains(&c.max_hedged_attempts) {
        return Err((
            "max_hedged_attempts",
            format!(
                "hedge max_hedged_attempts must be within 1..={MAX_HEDGED_ATTEMPTS}, got {} (use `enabled = false` \
                 for no hedging)",
                c.max_hedged_attempts
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Layer;

    #[test]
    fn attempts_outside_one_to_eight_are_invalid_and_layers_override() {
        for bad in [0, 9] {
            let e = HedgeConfigBuilder::new().max_hedged_attempts(bad).resolve("h").unwrap_err();
            assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("h")));
        }
        let mut b = HedgeConfigBuilder::new().max_hedged_attempts(8);
        b.merge(&HedgeConfigBuilder::new().delay(Duration::ZERO));
        let expected = HedgeConfig { enabled: true, delay: Duration::ZERO, max_hedged_attempts: 8 };
        assert_eq!(b.resolve("h").unwrap(), expected);
    }
}
