//! Circuit breaker configuration: the resolved [`CircuitBreakerConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

/// How the breaker's window of recent outcomes is measured.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WindowType {
    /// The last `window_size` recorded calls.
    Count,
    /// The calls recorded in the last `window_size` seconds, one bucket per second.
    Time,
}

/// The largest count window: one byte per slot, so a typo cannot allocate gigabytes.
pub const MAX_COUNT_WINDOW: u32 = 1_000_000;
/// The largest time window, in seconds (one day).
pub const MAX_TIME_WINDOW: u32 = 86_400;
/// The largest `permitted_calls_in_half_open` (the half-open probes live in one atomic word).
pub const MAX_HALF_OPEN_CALLS: u32 = 4_095;

/// A circuit breaker's resolved configuration: every key has a value.
///
/// Built-in defaults: a count window of the last 100 calls, judged once 100 calls are in it, opening
/// at a failure rate of 50 %, no slow-call tracking, 60 s open, 10 probes when half-open.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::circuit_breaker::{CircuitBreakerConfig, WindowType};
///
/// let c = CircuitBreakerConfig::default();
/// assert_eq!((c.window_type, c.window_size, c.minimum_calls), (WindowType::Count, 100, 100));
/// assert_eq!((c.failure_rate_threshold, c.slow_call_duration), (50.0, None));
/// assert_eq!((c.wait_in_open, c.permitted_calls_in_half_open), (Duration::from_secs(60), 10));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerConfig {
    /// `false`: every call goes straight through and nothing is recorded, as if the attribute were absent.
    pub enabled: bool,
    /// Count or time window.
    pub window_type: WindowType,
    /// Calls (count window) or seconds (time window) in the window.
    pub window_size: u32,
    /// Calls the window must hold before a rate is judged (capped at `window_size` for a count window).
    pub minimum_calls: u32,
    /// Failure rate, in percent, at which the breaker opens (`0 < t ≤ 100`).
    pub failure_rate_threshold: f64,
    /// A call taking at least this long is slow; `None` turns slow-call tracking off (no clock reads).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::option"))]
    pub slow_call_duration: Option<Duration>,
    /// Slow-call rate, in percent, at which the breaker opens (`0 < t ≤ 100`).
    pub slow_call_rate_threshold: f64,
    /// How long the breaker stays open before letting probes through.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub wait_in_open: Duration,
    /// Probes let through when half-open; their outcomes close or reopen the breaker.
    pub permitted_calls_in_half_open: u32,
    /// `true`: Open is published to every process on the registry's shared store, and half-open
    /// probes are capped fleet-wide; see [`crate::shared`]. A configuration key only.
    pub shared: bool,
    /// The most keys a keyed instance (`key = …`, SPEC §15) keeps at once (≥ 1; default 10,000): at
    /// the cap a new key replaces the least recently used key at rest, or is refused with
    /// `Rejection::KeysExhausted`. Unused by an unkeyed instance.
    pub max_keys: u32,
    /// `true`: a keyed instance's metrics carry a `key` label (for small key sets only: each key is
    /// a series). Default `false`.
    pub key_metrics: bool,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            enabled: true,
            window_type: WindowType::Count,
            window_size: 100,
            minimum_calls: 100,
            failure_rate_threshold: 50.0,
            slow_call_duration: None,
            slow_call_rate_threshold: 100.0,
            wait_in_open: Duration::from_secs(60),
            permitted_calls_in_half_open: 10,
            shared: false,
            max_keys: 10_000,
            key_metrics: false,
        }
    }
}

impl CircuitBreakerConfig {
    /// The calls the window must hold before it is judged: `minimum_calls`, capped at
    /// `window_size` for a count window.
    ///
    /// ```
    /// use resilience4cata::circuit_breaker::CircuitBreakerConfig;
    ///
    /// let mut c = CircuitBreakerConfig::default();
    /// c.window_size = 20;
    /// assert_eq!(c.effective_minimum_calls(), 20); // minimum_calls = 100 is capped
    /// ```
    pub fn effective_minimum_calls(&self) -> u32 {
        match self.window_type {
            WindowType::Count => self.minimum_calls.min(self.window_size),
            WindowType::Time => self.minimum_calls,
        }
    }
}

layered_builder! {
    /// Circuit breaker settings to layer over the defaults: each setter is named after its attribute
    /// key and overrides only that key. Used in every `circuit_breaker_…` builder closure:
    /// `|c| c.window_size(20).minimum_calls(10)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::circuit_breaker::WindowType;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .circuit_breaker_defaults(|c| c.window_type(WindowType::Time).slow_call_duration(Duration::from_secs(2)))
    ///     .circuit_breaker("external", |c| c.window_size(30).minimum_calls(10))
    ///     .circuit_breaker_instance("shop::InventoryApi::reserve", |c| c.minimum_calls(20))
    ///     .build()?;
    /// Pipeline::builder(&registry, "shop::InventoryApi::reserve")
    ///     .circuit_breaker_config("external")
    ///     .build::<u32, std::io::Error>()?;
    /// let snapshot = registry.snapshot();
    /// let c = &snapshot.circuit_breakers()[0].config;
    /// // built-in < registry defaults < named config < instance override
    /// assert_eq!((c.window_type, c.window_size, c.minimum_calls), (WindowType::Time, 30, 20));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    CircuitBreakerConfigBuilder => CircuitBreakerConfig {
        /// `enabled`: `false` lets every call through unrecorded.
        enabled: bool,
        /// `window_type`: `Count` or `Time`.
        window_type: WindowType,
        /// `window_size`: calls (count window) or seconds (time window).
        window_size: u32,
        /// `minimum_calls`: calls needed before a rate is judged.
        minimum_calls: u32,
        /// `failure_rate_threshold`: percent of failures that opens the breaker.
        failure_rate_threshold: f64,
        /// `slow_call_duration`: a call this long or longer is slow (turns slow-call tracking on).
        slow_call_duration: Duration,
        /// `slow_call_rate_threshold`: percent of slow calls that opens the breaker.
        slow_call_rate_threshold: f64,
        /// `wait_in_open`: how long the breaker stays open.
        wait_in_open: Duration,
        /// `permitted_calls_in_half_open`: probes let through when half-open.
        permitted_calls_in_half_open: u32,
        /// `shared`: Open published to the fleet, probes capped fleet-wide (config only).
        shared: bool,
        /// `max_keys`: the most keys a keyed instance keeps at once.
        max_keys: u32,
        /// `key_metrics`: a `key` label on a keyed instance's metrics.
        key_metrics: bool,
    }
    layer "circuit_breaker" { values: check_values, between: check_between }
}

impl CircuitBreakerConfigBuilder {
    /// Whether this layer sets `shared = true` (checked against the registry's store at build).
    pub(crate) fn sets_shared(&self) -> bool {
        self.shared == Some(true)
    }
}

/// The rule between keys: a `Time` window is at most `MAX_TIME_WINDOW` seconds long.
fn check_between(c: &CircuitBreakerConfig) -> Result<(), String> {
    match c.window_type == WindowType::Time && c.window_size > MAX_TIME_WINDOW {
        true => Err(format!(
            "circuit_breaker window_size must be within 1..={MAX_TIME_WINDOW} for a Time window, got {}",
            c.window_size
        )),
        false => Ok(()),
    }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &CircuitBreakerConfig) -> Result<(), KeyProblem> {
    if c.max_keys < 1 {
        return Err(("max_keys", "circuit_breaker max_keys must be at least 1".into()));
    }
    if !(1..=MAX_COUNT_WINDOW).contains(&c.window_size) {
        return Err((
            "window_size",
            format!(
                "circuit_breaker window_size must be within 1..={MAX_COUNT_WINDOW} for a {:?} window, got {}",
                c.window_type, c.window_size
            ),
        ));
    }
    if c.minimum_calls < 1 {
        return Err(("minimum_calls", "circuit_breaker minimum_calls must be at least 1".into()));
    }
    check_percent("failure_rate_threshold", c.failure_rate_threshold)?;
    check_percent("slow_call_rate_threshold", c.slow_call_rate_threshold)?;
    if c.slow_call_duration == Some(Duration::ZERO) {
        return Err((
            "slow_call_duration",
            "circuit_breaker slow_call_duration must be longer than zero; leave it unset to turn slow-call tracking \
             off"
            .into(),
        ));
    }
    if !(1..=MAX_HALF_OPEN_CALLS).contains(&c.permitted_calls_in_half_open) {
        return Err((
            "permitted_calls_in_half_open",
            format!(
                "circuit_breaker permitted_calls_in_half_open must be within 1..={MAX_HALF_OPEN_CALLS}, got {}",
                c.permitted_calls_in_half_open
            ),
        ));
    }
    Ok(())
}

fn check_percent(key: &'static str, value: f64) -> Result<(), KeyProblem> {
    if value > 0.0 && value <= 100.0 {
        Ok(())
    } else {
        Err((key, format!("circuit_breaker {key} must be a percentage above 0 and at most 100, got {value}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RegistryError;
    use crate::kit::Layer;

    fn resolve(b: CircuitBreakerConfigBuilder) -> Result<CircuitBreakerConfig, RegistryError> {
        b.resolve("cb")
    }

    #[test]
    fn defaults_resolve_and_layers_override_only_what_they_set() {
        assert_eq!(resolve(CircuitBreakerConfigBuilder::new()).unwrap(), CircuitBreakerConfig::default());
        let mut base = CircuitBreakerConfigBuilder::new().window_size(20).minimum_calls(5);
        base.merge(&CircuitBreakerConfigBuilder::new().minimum_calls(7));
        let c = resolve(base).unwrap();
        assert_eq!((c.window_size, c.minimum_calls, c.failure_rate_threshold), (20, 7, 50.0));
    }

    #[test]
    fn slow_call_duration_setter_turns_tracking_on() {
        let c = resolve(CircuitBreakerConfigBuilder::new().slow_call_duration(Duration::from_secs(1))).unwrap();
        assert_eq!(c.slow_call_duration, Some(Duration::from_secs(1)));
    }

    #[test]
    fn minimum_calls_is_capped_for_count_windows_only() {
        let count = resolve(CircuitBreakerConfigBuilder::new().window_size(10)).unwrap();
        assert_eq!(count.effective_minimum_calls(), 10);
        let time = resolve(CircuitBreakerConfigBuilder::new().window_type(WindowType::Time).window_size(10)).unwrap();
        assert_eq!(time.effective_minimum_calls(), 100);
    }

    #[test]
    fn invalid_values_are_reg_003() {
        let bad = [
            CircuitBreakerConfigBuilder::new().window_size(0),
            CircuitBreakerConfigBuilder::new().window_size(MAX_COUNT_WINDOW + 1),
            CircuitBreakerConfigBuilder::new().window_type(WindowType::Time).window_size(MAX_TIME_WINDOW + 1),
            CircuitBreakerConfigBuilder::new().minimum_calls(0),
            CircuitBreakerConfigBuilder::new().failure_rate_threshold(0.0),
            CircuitBreakerConfigBuilder::new().failure_rate_threshold(100.5),
            CircuitBreakerConfigBuilder::new().slow_call_rate_threshold(f64::NAN),
            CircuitBreakerConfigBuilder::new().slow_call_duration(Duration::ZERO),
            CircuitBreakerConfigBuilder::new().permitted_calls_in_half_open(0),
            CircuitBreakerConfigBuilder::new().permitted_calls_in_half_open(MAX_HALF_OPEN_CALLS + 1),
        ];
        for b in bad {
            let err = resolve(b.clone()).unwrap_err();
            assert_eq!(err.code(), "R4C-REG-003", "{b:?}");
            assert_eq!(err.instance(), Some("cb"));
        }
    }

    #[test]
    fn boundary_values_are_valid() {
        let ok = CircuitBreakerConfigBuilder::new()
            .window_size(1)
            .minimum_calls(1)
            .failure_rate_threshold(100.0)
            .slow_call_rate_threshold(0.5)
            .wait_in_open(Duration::ZERO)
            .permitted_calls_in_half_open(MAX_HALF_OPEN_CALLS);
        assert!(resolve(ok).is_ok());
    }
}
