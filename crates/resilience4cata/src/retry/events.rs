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
    /// The failure is not retryable: outside `retry_on`, in `abort_on`, or an open breaker's refusal.
    NotRetryable,
    /// `Registry::shutdown` interrupted the wait.
    Interrupted,
    /// The classifier answered `Verdict::Fail`.
    ClassifierFailed,
    /// The retry budget is used up.
    BudgetExhausted,
}
