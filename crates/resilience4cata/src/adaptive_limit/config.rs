//! Adaptive limit configuration: the resolved [`AdaptiveLimitConfig`] and its layered builder.

use std::time::Duration;

use crate::error::{RegistryError, codes};
use crate::kit::{KeyProblem, layered_builder};

/// Which algorithm moves the limit (`algorithm = Aimd`).
///
/// ```
/// use resilience4cata::adaptive_limit::Algorithm;
///
/// assert_eq!(Algorithm::default(), Algorithm::Aimd);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Algorithm {
    /// Additive increase, multiplicative decrease on drops (Netflix `AIMDLimit`).
    #[default]
    Aimd,
    /// The gradient between a long-term and the current latency (Netflix `Gradient2Limit`).
    Gradient2,
    /// The estimated queue behind the no-load latency, as TCP Vegas (Netflix `VegasLimit`).
    Vegas,
}

/// An adaptive limit's resolved configuration: every key has a value (`smoothing`, `alpha` and
/// `beta` stay `None` when unset, because their defaults depend on the algorithm or the limit).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::adaptive_limit::{AdaptiveLimitConfig, Algorithm};
///
/// let c = AdaptiveLimitConfig::default();
/// assert_eq!((c.algorithm, c.initial_limit, c.min_limit, c.max_limit), (Algorithm::Aimd, 20, 1, 200));
/// assert_eq!((c.backoff_ratio, c.latency_timeout), (0.9, Duration::from_secs(5)));
/// assert_eq!(c.smoothing(), 1.0); // unset: 1.0, except Gradient2's 0.2
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct AdaptiveLimitConfig {
    /// `false`: every call passes, nothing is counted or published.
    pub enabled: bool,
    /// The algorithm that moves the limit.
    pub algorithm: Algorithm,
    /// The limit before any call has finished.
    pub initial_limit: u32,
    /// The limit never goes below this (≥ 1).
    pub min_limit: u32,
    /// The limit never goes above this.
    pub max_limit: u32,
    /// How long a call may wait for a slot before it is refused (`0`: refuse at once).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub max_wait: Duration,
    /// Aimd: the factor the limit is multiplied by on a drop (`0 < r < 1`).
    pub backoff_ratio: f64,
    /// Aimd: a call slower than this (strictly) is a drop.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub latency_timeout: Duration,
    /// Gradient2 and Vegas: how far one sample moves the limit towards its target (`0 < s ≤ 1`);
    /// `None` takes the algorithm's default (Gradient2 0.2, Vegas 1.0).
    pub smoothing: Option<f64>,
    /// Gradient2: samples in the long-term latency average (an exponential moving average).
    pub long_window: u32,
    /// Gradient2: how much the current latency may exceed the long-term one before the limit
    /// falls (≥ 1).
    pub rtt_tolerance: f64,
    /// Gradient2: calls of headroom added to the limit on every sample.
    pub queue_size: u32,
    /// Vegas: below this estimated queue the limit grows by `log10(limit)`; `None`:
    /// `3·log10(limit)`.
    pub alpha: Option<u32>,
    /// Vegas: above this estimated queue the limit falls by `log10(limit)`; `None`:
    /// `6·log10(limit)`.
    pub beta: Option<u32>,
    /// Gradient2 and Vegas: the shortest sample window. A window lasts twice the fastest call it
    /// saw, within `[min_window_time, max_window_time]`; its samples reach the algorithm as one.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub min_window_time: Duration,
    /// Gradient2 and Vegas: the longest sample window (`≥ min_window_time`, above zero).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub max_window_time: Duration,
    /// Gradient2 and Vegas: a window with fewer samples is discarded, not fed to the algorithm
    /// (≥ 1).
    pub window_size: u32,
    /// Gradient2 and Vegas: calls faster than this are not samples (a cache hit says nothing
    /// about the dependency's queue).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub min_rtt_threshold: Duration,
    /// The most keys a keyed instance (`key = …`, SPEC §15) keeps at once (≥ 1; default 10,000): at
    /// the cap a new key replaces the least recently used key at rest, or is refused with
    /// `Rejection::KeysExhausted`. Unused by an unkeyed instance.
    pub max_keys: u32,
    /// `true`: a keyed instance's metrics carry a `key` label (for small key sets only: each key is
    /// a series). Default `false`.
    pub key_metrics: bool,
}

impl Default for AdaptiveLimitConfig {
    fn default() -> Self {
        AdaptiveLimitConfig {
            enabled: true,
            algorithm: Algorithm::Aimd,
            initial_limit: 20,
            min_limit: 1,
            max_limit: 200,
            max_wait: Duration::ZERO,
            backoff_ratio: 0.9,
            latency_timeout: Duration::from_secs(5),
            smoothing: None,
            long_window: 600,
            rtt_tolerance: 1.5,
            queue_size: 4,
            alpha: None,
            beta: None,
            min_window_time: Duration::from_millis(100),
            max_window_time: Duration::from_secs(1),
            window_size: 10,
            min_rtt_threshold: Duration::from_micros(100),
            max_keys: 10_000,
            key_metrics: false,
        }
    }
}

impl AdaptiveLimitConfig {
    /// The smoothing in effect: the key's value, else 0.2 for Gradient2 and 1.0 otherwise.
    ///
    /// ```
    /// use resilience4cata::adaptive_limit::{AdaptiveLimitConfig, Algorithm};
    ///
    /// let mut c = AdaptiveLimitConfig::default();
    /// c.algorithm = Algorithm::Gradient2;
    /// assert_eq!(c.smoothing(), 0.2);
    /// ```
    pub fn smoothing(&self) -> f64 {
        self.smoothing.unwrap_or(if self.algorithm == Algorithm::Gradient2 { 0.2 } else { 1.0 })
    }

    /// Checks every range: `1 ≤ min_limit ≤ initial_limit ≤ max_limit`, `0 < backoff_ratio < 1`,
    /// `0 < smoothing ≤ 1`, `rtt_tolerance ≥ 1`, `long_window ≥ 1`, `latency_timeout > 0`,
    /// `alpha ≤ beta`, `window_size ≥ 1`, `0 < max_window_time`, `min_window_time ≤
    /// max_window_time` (`R4C-REG-003`).
    pub(crate) fn validate(&self, instance: Option<&str>) -> Result<(), RegistryError> {
        let bad = |message: String| Err(RegistryError::new(codes::INVALID_VALUE, instance, message));
        let (min, initial, max) = (self.min_limit, self.initial_limit, self.max_limit);
        if !(1 <= min && min <= initial && initial <= max) {
            return bad(format!(
                "adaptive limit needs 1 ≤ min_limit ≤ initial_limit ≤ max_limit, got {min}, {initial}, {max}"
            ));
        }
        let ratio = self.backoff_ratio;
        if !(ratio > 0.0 && ratio < 1.0) {
            return bad(format!("adaptive limit backoff_ratio must be above 0 and below 1, got {ratio}"));
        }
        if let Some(s) = self.smoothing
            && !(s > 0.0 && s <= 1.0)
        {
            return bad(format!("adaptive limit smoothing must be above 0 and at most 1, got {s}"));
        }
        if self.rtt_tolerance.is_nan() || self.rtt_tolerance < 1.0 {
            return bad(format!("adaptive limit rtt_tolerance must be at least 1, got {}", self.rtt_tolerance));
        }
        if self.long_window < 1 || self.latency_timeout.is_zero() {
            return bad("adaptive limit long_window and latency_timeout must be above 0".to_owned());
        }
        if let (Some(alpha), Some(beta)) = (self.alpha, self.beta)
            && alpha > beta
        {
            return bad(format!("adaptive limit alpha ({alpha}) must not exceed beta ({beta})"));
        }
        if self.min_window_time > self.max_window_time {
            return bad(format!(
                "adaptive limit min_window_time ({:?}) must not exceed max_window_time ({:?})",
                self.min_window_time, self.max_window_time
            ));
        }
        if let Err((_, message)) = check_values(self) {
            return bad(message);
        }
        Ok(())
    }
}

layered_builder! {
    /// Adaptive limit settings to layer over the defaults: each setter is named after its
    /// attribute key and overrides only that key. Used in every `adaptive_limit_…` builder
    /// closure (`|a| a.algorithm(Algorithm::Vegas).max_limit(50)`) and by the algorithms'
    /// constructors.
    ///
    /// ```
    /// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, Aimd, LimitAlgorithm};
    ///
    /// let aimd = Aimd::new(AdaptiveLimitConfigBuilder::new().initial_limit(10).backoff_ratio(0.5))?;
    /// assert_eq!(aimd.limit(), 10);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    AdaptiveLimitConfigBuilder => AdaptiveLimitConfig {
        /// `enabled`: `false` lets every call through untouched.
        enabled: bool,
        /// `algorithm`: `Aimd` (default), `Gradient2` or `Vegas`.
        algorithm: Algorithm,
        /// `initial_limit`: the limit before any sample (default 20).
        initial_limit: u32,
        /// `min_limit`: the lowest limit (default 1).
        min_limit: u32,
        /// `max_limit`: the highest limit (default 200).
        max_limit: u32,
        /// `max_wait`: how long a call may wait for a slot (default 0).
        max_wait: Duration,
        /// `backoff_ratio` (Aimd): the factor applied on a drop (default 0.9).
        backoff_ratio: f64,
        /// `latency_timeout` (Aimd): slower calls are drops (default 5 s).
        latency_timeout: Duration,
        /// `smoothing` (Gradient2 0.2, Vegas 1.0): weight of a new target.
        smoothing: f64,
        /// `long_window` (Gradient2): samples in the long latency average (default 600).
        long_window: u32,
        /// `rtt_tolerance` (Gradient2): tolerated latency growth (default 1.5).
        rtt_tolerance: f64,
        /// `queue_size` (Gradient2): headroom added per sample (default 4).
        queue_size: u32,
        /// `alpha` (Vegas): a constant instead of `3·log10(limit)`.
        alpha: u32,
        /// `beta` (Vegas): a constant instead of `6·log10(limit)`.
        beta: u32,
        /// `min_window_time` (Gradient2, Vegas): the shortest sample window (default 100 ms).
        min_window_time: Duration,
        /// `max_window_time` (Gradient2, Vegas): the longest sample window (default 1 s).
        max_window_time: Duration,
        /// `window_size` (Gradient2, Vegas): fewer samples and the window is discarded (default 10).
        window_size: u32,
        /// `min_rtt_threshold` (Gradient2, Vegas): faster calls are not samples (default 100 µs).
        min_rtt_threshold: Duration,
        /// `max_keys`: the most keys a keyed instance keeps at once.
        max_keys: u32,
        /// `key_metrics`: a `key` label on a keyed instance's metrics.
        key_metrics: bool,
    }
    layer "adaptive_limit" { values: check_values, resolve: |b: &Self, instance| b.build(Some(instance)) }
}

impl AdaptiveLimitConfigBuilder {
    /// Resolves over the built-in defaults and validates (`R4C-REG-003`), for the algorithms'
    /// constructors.
    pub(crate) fn build(&self, instance: Option<&str>) -> Result<AdaptiveLimitConfig, RegistryError> {
        let config = self.fill();
        config.validate(instance)?;
        Ok(config)
    }
}

/// The rules each value follows on its own, so a config file names the key and its line
/// (`R4C-CFG-004`); the rules between keys (`min ≤ initial ≤ max`, `alpha ≤ beta`, `min_window_time
/// ≤ max_window_time`) are checked when
/// an instance resolves (`R4C-REG-003`).
fn check_values(c: &AdaptiveLimitConfig) -> Result<(), KeyProblem> {
    if c.max_keys < 1 {
        return Err(("max_keys", "adaptive limit max_keys must be at least 1".into()));
    }
    let limits = [("min_limit", c.min_limit), ("initial_limit", c.initial_limit), ("max_limit", c.max_limit)];
    if let Some((key, _)) = limits.iter().find(|(_, v)| *v < 1) {
        return Err((key, format!("adaptive limit {key} must be at least 1")));
    }
    if !(c.backoff_ratio > 0.0 && c.backoff_ratio < 1.0) {
        return Err((
            "backoff_ratio",
            format!("adaptive limit backoff_ratio must be above 0 and below 1, got {}", c.backoff_ratio),
        ));
    }
    if let Some(s) = c.smoothing
        && !(s > 0.0 && s <= 1.0)
    {
        return Err(("smoothing", format!("adaptive limit smoothing must be above 0 and at most 1, got {s}")));
    }
    if c.rtt_tolerance.is_nan() || c.rtt_tolerance < 1.0 {
        return Err((
            "rtt_tolerance",
            format!("adaptive limit rtt_tolerance must be at least 1, got {}", c.rtt_tolerance),
        ));
    }
    if c.long_window < 1 {
        return Err(("long_window", "adaptive limit long_window must be above 0".to_owned()));
    }
    if c.latency_timeout.is_zero() {
        return Err(("latency_timeout", "adaptive limit latency_timeout must be above 0".to_owned()));
    }
    if c.window_size < 1 {
        return Err(("window_size", "adaptive limit window_size must be at least 1".to_owned()));
    }
    if c.max_window_time.is_zero() {
        return Err(("max_window_time", "adaptive limit max_window_time must be above 0".to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Layer;

    fn code(b: AdaptiveLimitConfigBuilder) -> &'static str {
        b.resolve("a").map(|_| "ok").unwrap_or_else(|e| if e.code() == "R4C-REG-003" { "R4C-REG-003" } else { "?" })
    }

    #[test]
    fn ranges_are_checked() {
        let b = AdaptiveLimitConfigBuilder::new;
        assert_eq!(code(b()), "ok");
        assert_eq!(code(b().min_limit(0)), "R4C-REG-003");
        assert_eq!(code(b().min_limit(30)), "R4C-REG-003", "min above initial");
        assert_eq!(code(b().initial_limit(300)), "R4C-REG-003", "initial above max");
        assert_eq!(code(b().min_limit(5).initial_limit(5).max_limit(5)), "ok");
        assert_eq!(code(b().backoff_ratio(1.0)), "R4C-REG-003");
        assert_eq!(code(b().backoff_ratio(0.0)), "R4C-REG-003");
        assert_eq!(code(b().smoothing(0.0)), "R4C-REG-003");
        assert_eq!(code(b().smoothing(1.0)), "ok");
        assert_eq!(code(b().rtt_tolerance(0.9)), "R4C-REG-003");
        assert_eq!(code(b().long_window(0)), "R4C-REG-003");
        assert_eq!(code(b().latency_timeout(Duration::ZERO)), "R4C-REG-003");
        assert_eq!(code(b().alpha(7).beta(6)), "R4C-REG-003");
        assert_eq!(code(b().window_size(0)), "R4C-REG-003");
        assert_eq!(code(b().max_window_time(Duration::ZERO).min_window_time(Duration::ZERO)), "R4C-REG-003");
        assert_eq!(code(b().min_window_time(Duration::from_secs(2))), "R4C-REG-003", "min above the default max 1 s");
        assert_eq!(code(b().min_window_time(Duration::ZERO).min_rtt_threshold(Duration::ZERO)), "ok");
        let e = b().initial_limit(0).resolve("shop::Api::get").unwrap_err();
        assert_eq!(e.instance(), Some("shop::Api::get"));
    }

    #[test]
    fn smoothing_default_depends_on_the_algorithm() {
        let c = AdaptiveLimitConfigBuilder::new().algorithm(Algorithm::Gradient2).resolve("a").unwrap();
        assert_eq!(c.smoothing(), 0.2);
        let c = AdaptiveLimitConfigBuilder::new().algorithm(Algorithm::Vegas).resolve("a").unwrap();
        assert_eq!(c.smoothing(), 1.0);
        let c = AdaptiveLimitConfigBuilder::new().algorithm(Algorithm::Vegas).smoothing(0.5).resolve("a").unwrap();
        assert_eq!(c.smoothing(), 0.5);
    }
}
