//! Bulkhead configuration: the resolved [`BulkheadConfig`] and its layered builder.

use std::time::Duration;

use crate::error::{RegistryError, codes};
use crate::registry::Layer;
use crate::registry::layered_builder;

/// A bulkhead's resolved configuration: every key has a value.
///
/// Built-in defaults: 25 concurrent calls, no waiting (`max_wait = "0"`).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::bulkhead::BulkheadConfig;
///
/// let c = BulkheadConfig::default();
/// assert_eq!((c.max_concurrent_calls, c.max_wait), (25, Duration::ZERO));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BulkheadConfig {
    /// `false`: every call passes, no slot is taken, nothing is published.
    pub enabled: bool,
    /// Calls allowed inside at once (≥ 1).
    pub max_concurrent_calls: u32,
    /// How long a call may wait for a slot before it is refused (`0`: refuse at once).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub max_wait: Duration,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig { enabled: true, max_concurrent_calls: 25, max_wait: Duration::ZERO }
    }
}

layered_builder! {
    /// Bulkhead settings to layer over the defaults: each setter is named after its attribute key
    /// and overrides only that key. Used in every `bulkhead_…` builder closure:
    /// `|b| b.max_concurrent_calls(10)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .bulkhead_defaults(|b| b.max_wait(Duration::from_millis(5)))
    ///     .bulkhead("database", |b| b.max_concurrent_calls(16))
    ///     .bulkhead_instance("shop::Db::query", |b| b.max_concurrent_calls(4))
    ///     .build()?;
    /// Pipeline::builder(&registry, "shop::Db::query").bulkhead_config("database").build::<u32, std::io::Error>()?;
    /// let snapshot = registry.snapshot();
    /// let c = &snapshot.bulkheads()[0].config;
    /// // built-in < registry defaults < named config < instance override
    /// assert_eq!((c.max_concurrent_calls, c.max_wait), (4, Duration::from_millis(5)));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    BulkheadConfigBuilder => BulkheadConfig {
        /// `enabled`: `false` lets every call through untouched.
        enabled: bool,
        /// `max_concurrent_calls`: calls allowed inside at once.
        max_concurrent_calls: u32,
        /// `max_wait`: how long a call may wait for a slot.
        max_wait: Duration,
    }
}

impl Layer for BulkheadConfigBuilder {
    type Config = BulkheadConfig;
    const POLICY: &'static str = "bulkhead";

    fn merge(&mut self, over: &Self) {
        self.overlay(over);
    }

    fn resolve(&self, instance: &str) -> Result<BulkheadConfig, RegistryError> {
        let c = self.fill();
        if c.max_concurrent_calls < 1 {
            return Err(RegistryError::new(
                codes::INVALID_VALUE,
                Some(instance),
                "bulkhead max_concurrent_calls must be at least 1",
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_slots_are_invalid_and_layers_override() {
        let e = BulkheadConfigBuilder::new().max_concurrent_calls(0).resolve("b").unwrap_err();
        assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("b")));
        let mut layered = BulkheadConfigBuilder::new().max_concurrent_calls(4);
        layered.merge(&BulkheadConfigBuilder::new().max_wait(Duration::from_millis(3)));
        let c = layered.resolve("b").unwrap();
        assert_eq!((c.max_concurrent_calls, c.max_wait), (4, Duration::from_millis(3)));
    }
}
