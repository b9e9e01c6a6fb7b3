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
//! | `delay_from` | unset | `fn(&E, u32, Duration) -> Option<Duration>`: the wait from the failure, see below |
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
//! and `resilience4cata_retry_gave_up_total` (labels `instance`, and `reason` on the latter: one of
//! `max_attempts`, `max_duration`, `not_retryable`, `interrupted`, `classifier_failed`,
//! `budget_exhausted`, `refused`), registered when the instance is built, so every series exists at
//! 0 before the first call (install the recorder before building wrappers). Every metric, with
//! the admin's: `docs/metrics.md`.
//!
//! An open breaker's refusal (`Rejection::CallNotPermitted`) is never retried, whatever
//! `retry_on`, `abort_on` or a classifier say. A retry that stops at a policy's refusal gives up
//! with [`GiveUpReason::Refused`], not [`GiveUpReason::NotRetryable`]: an open breaker's refusal,
//! or a local one (rate limiter, bulkhead, adaptive limit) that `abort_on` or `retry_on` leave out.
//! The dependency did not fail that attempt, so dashboards count those calls as refused, not
//! failed.
//!
//! # Delay from the failure
//! Some failures say how long to wait: an HTTP 429 or 503 with `Retry-After`, or a rate limiter's
//! own [`Rejection::RateLimitExceeded`](crate::Rejection::RateLimitExceeded) with its
//! `retry_after`. Retrying those after the backoff alone wastes the attempts.
//!
//! - `#[retry(delay_from = path)]`, with `fn(&E, attempt: u32, computed: Duration) ->
//!   Option<Duration>` (the pipeline: [`Pipeline::delay_from`](crate::Pipeline::delay_from)),
//!   returns the wait before the next attempt: `attempt` is the number of the attempt that just
//!   failed (from 1, as in [`RetryEvent::Retrying`]), `computed` the wait the backoff chose (after
//!   jitter). `None` gives up with [`GiveUpReason::NotRetryable`]. It is asked only for a
//!   retryable `Err` and only when another attempt is allowed (after the `max_attempts` check).
//!   The wait it returns is not capped by `max_delay` (the server knows better), and then meets
//!   the rules of every wait, in this order: `max_duration` (give up rather than wait past it),
//!   the budget, shutdown.
//! - Without a hook, a `RateLimitExceeded` found in the error (this method's own limiter or a
//!   nested wrapper's, wherever `E: ResilienceError` is known) waits `max(computed, retry_after)`.
//!   With a hook, the hook alone decides. Other failures keep the zero-allocation path and, with a
//!   zero `delay`, the quick path that builds no future.
//!
//! Elsewhere: backon's `Retry::adjust(|e: &E, next: Option<Duration>| -> Option<Duration>)` has the
//! same shape (the error and the backoff's wait in, the wait to use or "stop" out) but is also
//! asked when the backoff is exhausted (`next = None`), so it can extend the attempts; here the
//! hook never overrides `max_attempts` or `max_duration`. Resilience4j's
//! `RetryConfig.intervalBiFunction((attempt, Either<Throwable, T>) -> Long)` replaces the interval
//! function for errors and results alike and cannot give up; the Rust hook takes the computed wait
//! so it can fall back to it, and can give up with `None`.
//!
//! ```
//! use std::time::Duration;
//! use resilience4cata::testing::{self, ManualClock};
//! use resilience4cata::{Jitter, resilient};
//!
//! #[derive(Debug, PartialEq)]
//! pub enum HttpError {
//!     TooManyRequests { retry_after: Option<Duration> },
//!     Unavailable,
//! }
//!
//! fn server_said(e: &HttpError, _attempt: u32, computed: Duration) -> Option<Duration> {
//!     match e {
//!         HttpError::TooManyRequests { retry_after: Some(wait) } => Some(*wait),
//!         _ => Some(computed),
//!     }
//! }
//!
//! #[resilient]
//! pub trait Quotes {
//!     #[retry(max_attempts = 3, delay = "100ms", max_delay = "1s", delay_from = server_said)]
//!     fn quote(&self, sku: &str) -> Result<u32, HttpError>;
//! }
//!
//! struct Busy(std::sync::atomic::AtomicU32);
//! impl Quotes for Busy {
//!     fn quote(&self, _sku: &str) -> Result<u32, HttpError> {
//!         match self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
//!             0 => Err(HttpError::TooManyRequests { retry_after: Some(Duration::from_secs(3)) }),
//!             1 => Err(HttpError::Unavailable),
//!             _ => Ok(7),
//!         }
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock).retry_defaults(|r| r.jitter(Jitter::None)).build()?;
//! let quotes = ResilientQuotes::new(Busy(Default::default()), &registry)?;
//! assert_eq!(quotes.quote("sku-1"), Ok(7));
//! assert_eq!(clock.elapsed(), Duration::from_millis(3_000 + 200)); // Retry-After (above max_delay), then the backoff
//! # Ok::<(), resilience4cata::RegistryError>(())
//! ```

mod budget;
pub(crate) mod config;
mod events;
#[cfg(all(test, loom))]
mod loom;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod policy;
mod snapshot;
mod state;

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
