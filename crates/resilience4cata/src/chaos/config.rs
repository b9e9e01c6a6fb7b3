//! Chaos configuration: the resolved [`ChaosConfig`] and its layered builder.

use std::time::Duration;

use crate::error::{RegistryError, codes};
use crate::kit::{KeyProblem, Layer};

/// A chaos instance's resolved configuration: every key has a value.
///
/// Built-in default: off, nothing injected.
///
/// ```
/// use resilience4cata::chaos::ChaosConfig;
///
/// let c = ChaosConfig::default();
/// assert!(!c.enabled);
/// assert_eq!((c.fault_rate, c.latency_rate, c.fault.as_deref()), (0.0, 0.0, None));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ChaosConfig {
    /// `true`: calls are injected with faults and delays at the rates below.
    pub enabled: bool,
    /// The share of calls (0–1) that fail with [`fault`](Self::fault) without calling the delegate.
    pub fault_rate: f64,
    /// The name of a unit variant of the method's error type (`"Unavailable"`), made with
    /// [`ResilienceError::from_variant_name`](crate::ResilienceError::from_variant_name).
    pub fault: Option<String>,
    /// The share of calls (0–1) whose delegate starts [`latency`](Self::latency) late.
    pub latency_rate: f64,
    /// How late a delayed call's delegate starts, on the registry's clock.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub latency: Duration,
    /// The seed of the instance's sequence of draws; unset, the registry's seed mixed with the id
    /// (fixed under `testing::registry`).
    pub seed: Option<u64>,
}

impl Default for ChaosConfig {
    fn default() -> Self {
        ChaosConfig {
            enabled: false,
            fault_rate: 0.0,
            fault: None,
            latency_rate: 0.0,
            latency: Duration::ZERO,
            seed: None,
        }
    }
}

/// Chaos settings to layer over the defaults, key by key: used in `chaos_defaults(|c| …)` and
/// `chaos_instance(id, |c| …)`, and read from `[defaults.chaos]` / `[instances."<id>".chaos]`.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::Registry;
///
/// let registry = Registry::builder()
///     .chaos_defaults(|c| c.latency_rate(0.1).latency(Duration::from_millis(200)))
///     .chaos_instance("shop::InventoryApi::stock", |c| c.enabled(true).fault_rate(0.5).fault("Unavailable"))
///     .build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
pub struct ChaosConfigBuilder {
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    enabled: Option<bool>,
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    fault_rate: Option<f64>,
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    fault: Option<String>,
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    latency_rate: Option<f64>,
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    latency: Option<Duration>,
    #[cfg_attr(feature = "serde", serde(default, deserialize_with = "crate::registry::config_file::optional"))]
    seed: Option<u64>,
}

impl ChaosConfigBuilder {
    /// A builder with every key unset.
    pub fn new() -> Self {
        Self::default()
    }

    /// `enabled`: `true` injects at the configured rates.
    #[must_use]
    pub fn enabled(mut self, value: bool) -> Self {
        self.enabled = Some(value);
        self
    }

    /// `fault_rate`: the share of calls (0–1) that fail with `fault`.
    #[must_use]
    pub fn fault_rate(mut self, value: f64) -> Self {
        self.fault_rate = Some(value);
        self
    }

    /// `fault`: the name of a unit variant of the method's error type.
    #[must_use]
    pub fn fault(mut self, name: impl Into<String>) -> Self {
        self.fault = Some(name.into());
        self
    }

    /// `latency_rate`: the share of calls (0–1) whose delegate starts `latency` late.
    #[must_use]
    pub fn latency_rate(mut self, value: f64) -> Self {
        self.latency_rate = Some(value);
        self
    }

    /// `latency`: the delay, on the registry's clock.
    #[must_use]
    pub fn latency(mut self, value: Duration) -> Self {
        self.latency = Some(value);
        self
    }

    /// `seed`: the sequence's seed (the same seed, the same sequence).
    #[must_use]
    pub fn seed(mut self, value: u64) -> Self {
        self.seed = Some(value);
        self
    }

    fn fill(&self) -> ChaosConfig {
        let mut c = ChaosConfig::default();
        if let Some(v) = self.enabled {
            c.enabled = v;
        }
        if let Some(v) = self.fault_rate {
            c.fault_rate = v;
        }
        if let Some(v) = &self.fault {
            c.fault = Some(v.clone());
        }
        if let Some(v) = self.latency_rate {
            c.latency_rate = v;
        }
        if let Some(v) = self.latency {
            c.latency = v;
        }
        if self.seed.is_some() {
            c.seed = self.seed;
        }
        c
    }
}

impl Layer for ChaosConfigBuilder {
    type Config = ChaosConfig;
    const POLICY: &'static str = "chaos";

    fn merge(&mut self, over: &Self) {
        macro_rules! over {
            ($($key:ident),*) => {$(if over.$key.is_some() { self.$key = over.$key.clone(); })*};
        }
        over!(enabled, fault_rate, fault, latency_rate, latency, seed);
    }

    fn resolve(&self, instance: &str) -> Result<ChaosConfig, RegistryError> {
        let config = self.fill();
        check_values(&config)
            .map_err(|(_, message)| message)
            .and_then(|()| check_between(&config))
            .map_err(|message| RegistryError::new(codes::INVALID_VALUE, Some(instance), message))?;
        Ok(config)
    }

    fn check_keys(&self) -> Result<(), KeyProblem> {
        check_values(&self.fill())
    }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &ChaosConfig) -> Result<(), KeyProblem> {
    for (key, rate) in [("fault_rate", c.fault_rate), ("latency_rate", c.latency_rate)] {
        if !(0.0..=1.0).contains(&rate) {
            return Err((key, format!("chaos {key} must be between 0 and 1, not {rate}")));
        }
    }
    if c.fault.as_deref().is_some_and(str::is_empty) {
        return Err(("fault", "chaos fault must name a unit variant of the method's error type, not \"\"".into()));
    }
    Ok(())
}

/// A fault rate needs a fault to inject.
fn check_between(c: &ChaosConfig) -> Result<(), String> {
    if c.fault_rate > 0.0 && c.fault.is_none() {
        return Err(format!(
            "chaos fault_rate is {} but no fault is named: set `fault` to a unit variant of the method's error type",
            c.fault_rate
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaos_rates_outside_zero_to_one_and_a_rate_without_a_fault_are_invalid() {
        for b in [
            ChaosConfigBuilder::new().fault_rate(1.5).fault("A"),
            ChaosConfigBuilder::new().latency_rate(-0.1),
            ChaosConfigBuilder::new().fault_rate(f64::NAN).fault("A"),
            ChaosConfigBuilder::new().fault_rate(0.5),
            ChaosConfigBuilder::new().fault(""),
        ] {
            let e = b.resolve("c").unwrap_err();
            assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("c")), "{b:?}");
        }
        let mut b = ChaosConfigBuilder::new().fault_rate(0.25).fault("A").seed(7);
        b.merge(&ChaosConfigBuilder::new().enabled(true).fault("B"));
        let c = b.resolve("c").unwrap();
        assert_eq!((c.enabled, c.fault_rate, c.fault.as_deref(), c.seed), (true, 0.25, Some("B"), Some(7)));
    }
}
