//! Retry: call again after a failure, waiting a little longer before each new attempt.
//!
//! Use it when failures are transient and repeating the operation is safe (a dropped connection, a
//! 503, an idempotent read or write). Do not use it for non-idempotent operations, permanent failures
//! (validation errors, 404s), or callers that cannot afford the extra latency. Retrying against an
//! overloaded dependency makes it worse: put a circuit breaker inside the retry so an open breaker
//! stops the retries, and consider a retry budget.
//!
//! # Defaults
//! | key | default | meaning |
//! |---|---|---|
//! | `max_attempts` | 3 | attempts per call, the first included |
//! | `delay` | `"200ms"` | base wait before the first retry |
//! | `backoff` | `Exponential` | or `Fixed` |
//! | `multiplier` | 2.0 | growth per retry (exponential) |
//! | `max_delay` | `"10s"` | cap of the base wait; never below `delay` |
//! | `jitter` | `Full` | `[0, base]`; `Equal` = `[base/2, base]`; `None` = base |
//! | `max_duration` | unset | give up instead of waiting past this, measured from the first attempt |
//! | `retry_on` / `abort_on` | every `Err` / none | Rust patterns over `E`; `abort_on` wins |
//! | `budget_percent` | 0 (off) | retry budget, see below |
//! | `budget_min_retries_per_second` | 10 | retry budget reserve |
//! | `budget_window` | `"10s"` | retry budget window |
//!
//! # Telemetry
//! | event | when |
//! |---|---|
//! | [`RetryEvent::Retrying`] | an attempt failed and another starts after `delay` |
//! | [`RetryEvent::GaveUp`] | the retry stopped; [`GiveUpReason`] says why |
//!
//! Successful calls publish nothing. With feature `metrics`: counters `resilience4cata_retry_retries_total`
//! and `resilience4cata_retry_gave_up_total` (labels `instance`, and `reason` on the latter), registered
//! when the instance is built (install the recorder before building wrappers).
//!
//! Successful calls publish nothing. An open breaker's refusal (`Rejection::CallNotPermitted`) is
//! never retried, whatever `retry_on`, `abort_on` or a classifier say.

mod budget;
pub(crate) mod config;
mod events;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod snapshot;

pub use config::{Backoff, Jitter, RetryConfig, RetryConfigBuilder};
pub use events::{GiveUpReason, RetryEvent};
pub use snapshot::{Budget, RetrySnapshot};

/// A classifier's decision on one attempt's `Result` (`classifier = path`, a `fn(&Result<T, E>) -> Verdict`).
///
/// `#[non_exhaustive]`, like the other enums that may grow: a `match` on one needs a `_` arm.
///
/// ```compile_fail,E0004
/// use resilience4cata::Verdict;
///
/// fn name(v: Verdict) -> &'static str {
///     match v {
///         Verdict::Success => "success",
///         Verdict::Retry => "retry",
///         Verdict::Fail => "fail",
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Accept the result and return it.
    Success,
    /// Treat it as a retryable failure (an `Ok` too).
    Retry,
    /// Give up now with `GiveUpReason::ClassifierFailed`, returning this result.
    Fail,
}
