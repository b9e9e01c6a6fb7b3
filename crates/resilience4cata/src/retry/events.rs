//! What a retry publishes: `Retrying` before each wait, `GaveUp` when it stops. Successful calls
//! publish nothing.

use std::sync::Arc;
use std::time::Duration;

/// An event of a retry instance.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resilience4cata::{Registry, RetryEvent};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let registry = Registry::builder().listen(move |e: &RetryEvent| sink.lock().unwrap().push(e.clone())).build()?;
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(tag = "kind"))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RetryEvent {
    /// Attempt `attempt` failed and the next one starts after `delay`.
    Retrying {
        /// The retry's instance id.
        instance: Arc<str>,
        /// The number of the attempt that just failed (1 = the first call).
        attempt: u32,
        /// The wait before the next attempt, jitter included.
        #[cfg_attr(feature = "serde", serde(serialize_with = "crate::serde_millis::duration"))]
        delay: Duration,
    },
    /// The retry stopped: the caller gets the last failure (or the fallback runs).
    GaveUp {
        /// The retry's instance id.
        instance: Arc<str>,
        /// Attempts made, the first included.
        attempts: u32,
        /// Why it stopped.
        reason: GiveUpReason,
    },
}

impl RetryEvent {
    /// The instance id of the retry that published the event.
    pub fn instance(&self) -> &str {
        match self {
            RetryEvent::Retrying { instance, .. } | RetryEvent::GaveUp { instance, .. } => instance,
        }
    }
}

/// Why a retry gave up.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// `max_attempts` attempts were made.
    MaxAttempts,
    /// Waiting would end after `max_duration`.
    MaxDuration,
    /// The failure is not retryable: outside `retry_on`, in `abort_on`, or `delay_from` answered
    /// `None`. The last attempt reached the dependency (or failed on its own): a failure.
    NotRetryable,
    /// `Registry::shutdown` interrupted the wait.
    Interrupted,
    /// The classifier answered `Verdict::Fail`.
    ClassifierFailed,
    /// The retry budget is used up.
    BudgetExhausted,
    /// A policy refused the last attempt without running it, and the retry does not retry that
    /// refusal: an open breaker's [`Rejection::CallNotPermitted`](crate::Rejection::CallNotPermitted)
    /// (never retried, whatever the patterns say), or a local refusal
    /// ([`Rejection::is_local`](crate::Rejection::is_local): rate limiter, bulkhead, adaptive
    /// limit) that `abort_on` or `retry_on` leave out. Not a failure of the dependency: the
    /// dashboard shows it as "refused", in the colour of the breaker's refusals.
    ///
    /// ```
    /// use resilience4cata::testing::{self, ManualClock};
    /// use resilience4cata::{GiveUpReason, Rejection, ResilienceError, RetryEvent, resilient};
    /// use std::sync::{Arc, Mutex};
    ///
    /// #[derive(Debug, ResilienceError)]
    /// pub enum Error {
    ///     Down,
    ///     #[rejection]
    ///     Rejected(Rejection),
    /// }
    ///
    /// #[resilient]
    /// pub trait Stock {
    ///     #[retry(max_attempts = 3, delay = "10ms")]
    ///     #[circuit_breaker(minimum_calls = 2, window_size = 2)]
    ///     fn level(&self) -> Result<u32, Error>;
    /// }
    ///
    /// struct Down;
    /// impl Stock for Down {
    ///     fn level(&self) -> Result<u32, Error> {
    ///         Err(Error::Down)
    ///     }
    /// }
    ///
    /// let reasons = Arc::new(Mutex::new(Vec::new()));
    /// let seen = Arc::clone(&reasons);
    /// let clock = ManualClock::new();
    /// let registry = testing::registry(&clock)
    ///     .listen(move |e: &RetryEvent| {
    ///         if let RetryEvent::GaveUp { reason, .. } = e {
    ///             seen.lock().unwrap().push(*reason);
    ///         }
    ///     })
    ///     .build()?;
    /// let stock = ResilientStock::new(Down, &registry)?;
    /// // Two failures open the breaker; the third attempt is refused, and the retry stops there.
    /// assert!(matches!(stock.level(), Err(Error::Rejected(Rejection::CallNotPermitted { .. }))));
    /// assert_eq!(*reasons.lock().unwrap(), [GiveUpReason::Refused]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    Refused,
}

impl GiveUpReason {
    /// Every reason, in declaration order: for an exporter that creates each `reason` series at 0
    /// before the first give-up. The enum is `#[non_exhaustive]`, so the list may grow.
    ///
    /// ```
    /// use resilience4cata::GiveUpReason;
    ///
    /// assert!(GiveUpReason::ALL.contains(&GiveUpReason::Refused));
    /// assert_eq!(GiveUpReason::ALL.len(), 7);
    /// ```
    pub const ALL: &'static [GiveUpReason] = &[
        GiveUpReason::MaxAttempts,
        GiveUpReason::MaxDuration,
        GiveUpReason::NotRetryable,
        GiveUpReason::Interrupted,
        GiveUpReason::ClassifierFailed,
        GiveUpReason::BudgetExhausted,
        GiveUpReason::Refused,
    ];
}
