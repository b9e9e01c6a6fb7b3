//! Bulkhead configuration: the resolved [`BulkheadConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

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
    /// `true`: `max_concurrent_calls` is a cap for every process on the registry's shared store
    /// together; see [`crate::shared`]. A configuration key only.
    pub shared: bool,
    /// Slots a shared bulkhead takes from the fleet at a time (`None`: `max(1, max / 10)`).
    pub lease: Option<u32>,
    /// How long a shared bulkhead's slot lives in the store without renewal: a crashed process
    /// frees its slots within it (default 10 s).
    pub lease_ttl: Duration,
    /// The most keys a keyed instance (`key = …`, SPEC §15) keeps at once (≥ 1; default 10,000): at
    /// the cap a new key replaces the least recently used key at rest, or is refused with
    /// `Rejection::KeysExhausted`. Unused by an unkeyed instance.
    pub max_keys: u32,
    /// `true`: a keyed instance's metrics carry a `key` label (for small key sets only: each key is
    /// a series). Default `false`.
    pub key_metrics: bool,
}

impl BulkheadConfig {
    /// Slots per lease of a shared bulkhead: `lease`, else `max(1, max_concurrent_calls / 10)`.
    ///
    /// ```
    /// use resilience4cata::bulkhead::BulkheadConfig;
    ///
    /// assert_eq!(BulkheadConfig::default().lease(), 2); // 25 / 10
    /// ```
    pub fn lease(&self) -> u32 {
        crate::fleet::lease_or_tenth(self.lease, self.max_concurrent_calls)
    }
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            enabled: true,
            max_concurrent_calls: 25,
            max_wait: Duration::ZERO,
            shared: false,
            lease: None,
            lease_ttl: Duration::from_secs(10),
            max_keys: 10_000,
            key_metrics: false,
        }
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
        /// `shared`: one cap for the whole fleet, on the registry's shared store (config only).
        shared: bool,
        /// `lease`: slots a shared bulkhead takes from the fleet at a time.
        lease: u32,
        /// `lease_ttl`: how long a shared slot lives without renewal.
        lease_ttl: Duration,
        /// `max_keys`: the most keys a keyed instance keeps at once.
        max_keys: u32,
        /// `key_metrics`: a `key` label on a keyed instance's metrics.
        key_metrics: bool,
    }
    layer "bulkhead" { values: check_values }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &BulkheadConfig) -> Result<(), KeyProblem> {
    if c.max_keys < 1 {
        return Err(("max_keys", "bulkhead max_keys must be at least 1".into()));
    }
    if c.max_concurrent_calls < 1 {
        return Err(("max_concurrent_calls", "bulkhead max_concurrent_calls must be at least 1".into()));
    }
    if c.lease == Some(0) {
        return Err(("lease", "bulkhead lease must be at least 1".into()));
    }
    if c.lease_ttl < Duration::from_millis(30) {
        return Err(("lease_ttl", "bulkhead lease_ttl must be at least 30ms".into()));
    }
    Ok(())
}

impl BulkheadConfigBuilder {
    /// Whether this layer sets `shared = true` (checked against the registry's store at build).
    pub(crate) fn sets_shared(&self) -> bool {
        self.shared == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Layer;

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
