//! Timeout configuration: the resolved [`TimeoutConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

/// A timeout's resolved configuration: every key has a value.
///
/// Built-in default: one second per attempt.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::timeout::TimeoutConfig;
///
/// let c = TimeoutConfig::default();
/// assert_eq!((c.enabled, c.duration), (true, Duration::from_secs(1)));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TimeoutConfig {
    /// `false`: attempts run without a deadline.
    pub enabled: bool,
    /// How long one attempt may take (> 0).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub duration: Duration,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        TimeoutConfig { enabled: true, duration: Duration::from_secs(1) }
    }
}

layered_builder! {
    /// Timeout settings to layer over the defaults: each setter is named after its attribute key and
    /// overrides only that key. Used in every `timeout_…` builder closure: `|t| t.duration(d)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .timeout_defaults(|t| t.duration(Duration::from_millis(300)))
    ///     .timeout("slow-partner", |t| t.duration(Duration::from_secs(5)))
    ///     .timeout_instance("shop::PricesApi::quote", |t| t.enabled(true))
    ///     .build()?;
    /// Pipeline::builder(&registry, "shop::PricesApi::quote").timeout_config("slow-partner").build::<u32, std::io::Error>()?;
    /// let snapshot = registry.snapshot();
    /// let c = &snapshot.timeouts()[0].config;
    /// // built-in < registry defaults < named config < instance override
    /// assert_eq!((c.enabled, c.duration), (true, Duration::from_secs(5)));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    TimeoutConfigBuilder => TimeoutConfig {
        /// `enabled`: `false` runs attempts without a deadline.
        enabled: bool,
        /// `duration`: how long one attempt may take.
        duration: Duration,
    }
    layer "timeout" { values: check_values }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &TimeoutConfig) -> Result<(), KeyProblem> {
    if c.duration.is_zero() {
        return Err((
            "duration",
            "timeout duration must be longer than zero (use `enabled = false` for no timeout)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Layer;

    #[test]
    fn zero_duration_is_invalid_and_layers_override() {
        let e = TimeoutConfigBuilder::new().duration(Duration::ZERO).resolve("t").unwrap_err();
        assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("t")));
        let mut b = TimeoutConfigBuilder::new().duration(Duration::from_secs(3));
        b.merge(&TimeoutConfigBuilder::new().enabled(false));
        assert_eq!(b.resolve("t").unwrap(), TimeoutConfig { enabled: false, duration: Duration::from_secs(3) });
    }
}
