//! Retry configuration: the resolved [`RetryConfig`] and its layered builder.

use std::time::Duration;

use crate::kit::{KeyProblem, layered_builder};

/// The shortest `budget_window` (`R4C-REG-003` below it): the tenths of shorter windows would
/// overflow the budget's slot tag (`budget.rs`) within the clock's range.
pub(crate) const MIN_WINDOW: Duration = Duration::from_secs(1);

/// How the base wait grows between attempts.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backoff {
    /// Every wait is `delay`.
    Fixed,
    /// The wait before retry `n` is `delay × multiplier^(n−1)`, capped at `max_delay`.
    Exponential,
}

/// How the base wait is randomised.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Jitter {
    /// Uniform in `[0, base]`.
    Full,
    /// Uniform in `[base / 2, base]`.
    Equal,
    /// Exactly `base`.
    None,
}

/// A retry's resolved configuration: every key has a value.
///
/// Built-in defaults: 3 attempts, exponential backoff from 200 ms with multiplier 2 capped at 10 s,
/// full jitter, no `max_duration`, no retry budget.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::retry::{Backoff, Jitter, RetryConfig};
///
/// let c = RetryConfig::default();
/// assert_eq!((c.max_attempts, c.delay, c.backoff, c.jitter), (3, Duration::from_millis(200), Backoff::Exponential, Jitter::Full));
/// assert_eq!(c.max_delay, Duration::from_secs(10));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RetryConfig {
    /// `false`: one plain attempt, no events, no budget accounting.
    pub enabled: bool,
    /// Attempts per call, the first included (≥ 1).
    pub max_attempts: u32,
    /// The base wait before the first retry.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub delay: Duration,
    /// How the wait grows.
    pub backoff: Backoff,
    /// Growth factor of exponential backoff (≥ 1; ignored by `Fixed`).
    pub multiplier: f64,
    /// Cap of the base wait (never below `delay`, also with `Fixed`).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub max_delay: Duration,
    /// Randomisation of the wait.
    pub jitter: Jitter,
    /// Give up instead of waiting when elapsed + next wait would exceed this.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::option"))]
    pub max_duration: Option<Duration>,
    /// Retry budget: percentage of calls that may be retried (0 = no budget).
    pub budget_percent: f64,
    /// Retry budget: retries per second always allowed.
    pub budget_min_retries_per_second: u32,
    /// Retry budget: the window the budget counts over.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
    pub budget_window: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            enabled: true,
            max_attempts: 3,
            delay: Duration::from_millis(200),
            backoff: Backoff::Exponential,
            multiplier: 2.0,
            max_delay: Duration::from_secs(10),
            jitter: Jitter::Full,
            max_duration: None,
            budget_percent: 0.0,
            budget_min_retries_per_second: 10,
            budget_window: Duration::from_secs(10),
        }
    }
}

impl RetryConfig {
    /// Whether a retry budget is on (`budget_percent > 0`).
    pub fn has_budget(&self) -> bool {
        self.budget_percent > 0.0
    }
}

layered_builder! {
    /// Retry settings to layer over the defaults: each setter is named after its attribute key and
    /// overrides only that key. Used in every `retry_…` builder closure: `|r| r.max_attempts(3)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    /// use resilience4cata::retry::Jitter;
    ///
    /// let registry = Registry::builder()
    ///     .retry_defaults(|r| r.delay(Duration::from_millis(50)).jitter(Jitter::None))
    ///     .retry("external", |r| r.max_attempts(5))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    RetryConfigBuilder => RetryConfig {
        /// `enabled`: `false` makes the method one plain attempt.
        enabled: bool,
        /// `max_attempts`: attempts per call, the first included.
        max_attempts: u32,
        /// `delay`: the base wait.
        delay: Duration,
        /// `backoff`: `Fixed` or `Exponential`.
        backoff: Backoff,
        /// `multiplier`: growth of exponential backoff.
        multiplier: f64,
        /// `max_delay`: cap of the base wait.
        max_delay: Duration,
        /// `jitter`: `Full`, `Equal` or `None`.
        jitter: Jitter,
        /// `max_duration`: time budget of the whole call.
        max_duration: Duration,
        /// `budget_percent`: retry budget percentage (0 = off).
        budget_percent: f64,
        /// `budget_min_retries_per_second`: retry budget reserve.
        budget_min_retries_per_second: u32,
        /// `budget_window`: retry budget window.
        budget_window: Duration,
    }
    layer "retry" { values: check_values, between: check_between }
}

/// The rule between keys: `max_delay ≥ delay` (another layer may set either).
fn check_between(c: &RetryConfig) -> Result<(), String> {
    match c.max_delay < c.delay {
        true => Err(format!(
            "retry max_delay ({:?}) is below delay ({:?}); raise max_delay (also needed with Fixed backoff)",
            c.max_delay, c.delay
        )),
        false => Ok(()),
    }
}

/// The rules each value follows on its own (the built-in defaults follow them all).
fn check_values(c: &RetryConfig) -> Result<(), KeyProblem> {
    if c.max_attempts < 1 {
        return Err(("max_attempts", "retry max_attempts must be at least 1".into()));
    }
    if !(c.multiplier >= 1.0 && c.multiplier.is_finite()) {
        return Err(("multiplier", format!("retry multiplier must be a finite number ≥ 1, got {}", c.multiplier)));
    }
    if !(0.0..=1000.0).contains(&c.budget_percent) {
        return Err((
            "budget_percent",
            format!("retry budget_percent must be within 0..=1000, got {}", c.budget_percent),
        ));
    }
    if c.budget_window < MIN_WINDOW {
        let min = MIN_WINDOW;
        return Err((
            "budget_window",
            format!(
                "retry budget_window must be at least {min:?} (the budget counts in tenths of it), got {:?}",
                c.budget_window
            ),
        ));
    }
    Ok(())
}
