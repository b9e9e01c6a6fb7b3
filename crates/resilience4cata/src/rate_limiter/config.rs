//! Rate limiter configuration: the resolved [`RateLimiterConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

/// A rate limiter's resolved configuration: every key has a value.
///
/// Built-in defaults: 50 permits per second, no waiting (`max_wait = "0"`).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::rate_limiter::RateLimiterConfig;
///
/// let c = RateLimiterConfig::default();
/// assert_eq!((c.permits, c.period, c.max_wait), (50, Duration::from_secs(1), Duration::ZERO));
/// assert!(c.enabled);
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RateLimiterConfig {
    /// `false`: every call passes, no permit is taken, nothing is published.
    pub enabled: bool,
    /// Calls allowed per `period`, and the largest burst (≥ 1).
    pub permits: u32,
    /// The period the permits refill over (> 0).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub period: Duration,
    /// How long a call may wait for a permit before it is refused (`0`: refuse at once).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub max_wait: Duration,
    /// `true`: one quota for every process on the registry's shared store (same store, key
    /// prefix and instance id); see [`crate::shared`]. A configuration key only, not an attribute.
    pub shared: bool,
    /// Permits a shared limiter leases at a time (`None`: `max(1, permits / 10)`).
    pub lease: Option<u32>,
    /// The most keys a keyed instance (`key = …`, SPEC §15) keeps at once (≥ 1; default 10,000): at
    /// the cap a new key replaces the least recently used key at rest, or is refused with
    /// `Rejection::KeysExhausted`. Unused by an unkeyed instance.
    pub max_keys: u32,
    /// `true`: a keyed instance's metrics carry a `key` label (for small key sets only: each key is
    /// a series). Default `false`.
    pub key_metrics: bool,
}

impl RateLimiterConfig {
    /// Permits per lease of a shared limiter: `lease`, else `max(1, permits / 10)`.
    ///
    /// ```
    /// use resilience4cata::rate_limiter::RateLimiterConfig;
    ///
    /// let mut c = RateLimiterConfig::default();
    /// c.permits = 100;
    /// assert_eq!(c.lease(), 10);
    /// c.permits = 5;
    /// assert_eq!(c.lease(), 1);
    /// c.lease = Some(3);
    /// assert_eq!(c.lease(), 3);
    /// ```
    pub fn lease(&self) -> u32 {
        crate::fleet::lease_or_tenth(self.lease, self.permits)
    }
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        RateLimiterConfig {
            enabled: true,
            permits: 50,
            period: Duration::from_secs(1),
            max_wait: Duration::ZERO,
            shared: false,
            lease: None,
            max_keys: 10_000,
            key_metrics: false,
        }
    }
}

layered_builder! {
    /// Rate limiter settings to layer over the defaults: each setter is named after its attribute key
    /// and overrides only that key. Used in every `rate_limiter_…` builder closure:
    /// `|r| r.permits(10).period(Duration::from_secs(1))`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .rate_limiter_defaults(|r| r.max_wait(Duration::from_millis(10)))
    ///     .rate_limiter("partner-quota", |r| r.permits(10))
    ///     .rate_limiter_instance("shop::PricesApi::quote", |r| r.permits(5))
    ///     .build()?;
    /// Pipeline::builder(&registry, "shop::PricesApi::quote")
    ///     .rate_limiter_config("partner-quota")
    ///     .build::<u32, std::io::Error>()?;
    /// let snapshot = registry.snapshot();
    /// let c = &snapshot.rate_limiters()[0].config;
    /// // built-in < registry defaults < named config < instance override
    /// assert_eq!((c.permits, c.max_wait), (5, Duration::from_millis(10)));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    RateLimiterConfigBuilder => RateLimiterConfig {
        /// `enabled`: `false` lets every call through untouched.
        enabled: bool,
        /// `permits`: calls per period, and the largest burst.
        permits: u32,
        /// `period`: the time the permits refill over.
        period: Duration,
        /// `max_wait`: how long a call may wait for a permit.
        max_wait: Duration,
        /// `shared`: one quota for the whole fleet, on the registry's shared store (config only).
        shared: bool,
        /// `lease`: permits a shared limiter takes from the fleet at a time.
        lease: u32,
        /// `max_keys`: the most keys a keyed instance keeps at once.
        max_keys: u32,
        /// `key_metrics`: a `key` label on a keyed instance's metrics.
        key_metrics: bool,
    }
    layer "rate_limiter" { values: check_values }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &RateLimiterConfig) -> Result<(), KeyProblem> {
    if c.max_keys < 1 {
        return Err(("max_keys", "rate_limiter max_keys must be at least 1".into()));
    }
    if c.permits < 1 {
        return Err(("permits", "rate_limiter permits must be at least 1".into()));
    }
    if c.period.is_zero() {
        return Err(("period", "rate_limiter period must be longer than zero".into()));
    }
    if c.lease.is_some_and(|lease| !(1..=MAX_LEASE).contains(&lease)) {
        return Err(("lease", "rate_limiter lease must be between 1 and 1048575 permits".into()));
    }
    Ok(())
}

/// The largest lease a pool can hold (its count has 20 bits).
const MAX_LEASE: u32 = (1 << 20) - 1;

impl RateLimiterConfigBuilder {
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
    fn layers_override_only_what_they_set() {
        let mut base = RateLimiterConfigBuilder::new().permits(10).max_wait(Duration::from_millis(5));
        base.merge(&RateLimiterConfigBuilder::new().permits(3));
        let c = base.resolve("x").unwrap();
        assert_eq!((c.permits, c.period, c.max_wait), (3, Duration::from_secs(1), Duration::from_millis(5)));
    }

    #[test]
    fn zero_permits_and_zero_period_are_invalid() {
        let e = RateLimiterConfigBuilder::new().permits(0).resolve("x").unwrap_err();
        assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("x")));
        let e = RateLimiterConfigBuilder::new().period(Duration::ZERO).resolve("x").unwrap_err();
        assert!(e.message().contains("period"), "{e}");
        let e = RateLimiterConfigBuilder::new().lease(0).resolve("x").unwrap_err();
        assert!(e.message().contains("lease"), "{e}");
    }
}
