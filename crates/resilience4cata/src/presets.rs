//! Presets: the stacks of policies users assemble by hand for an HTTP client, shipped with their
//! values and their order, for a method and for a pipeline alike.
//!
//! | preset | attribute | pipeline | modelled on |
//! |---|---|---|---|
//! | standard HTTP client | `#[bundle(resilience4cata::presets::standard_http)]` | `.preset(presets::StandardHttp)` | `AddStandardResilienceHandler` |
//! | latency-critical, hedged | `#[bundle(resilience4cata::presets::hedged_http)]` | `.preset(presets::HedgedHttp)` | `AddStandardHedgingHandler` |
//!
//! Both are modelled on the standard handlers of Microsoft.Extensions.Http.Resilience, whose
//! defaults they follow where our policies can express them; `docs/presets.md` lists every value,
//! its source, and where and why ours differ (the handlers' two timeouts, mainly: a method has
//! one timeout, so the standard preset bounds the whole call through the retry's
//! `max_duration`).
//!
//! A preset is a bundle that also carries the order its policies nest in. On a method it merges
//! like any bundle: a direct attribute wins key by key, and a `#[policy_order(…)]` written on the
//! method (or, for a preset on the trait, on the trait) replaces the preset's order. In a
//! pipeline, the `_with` overrides win key by key and `.order(…)` replaces the order, whatever the
//! order of the builder calls. A test (`tests/presets.rs`) checks that both forms resolve the same
//! configuration and behave alike.
//!
//! ```
//! use resilience4cata::{Rejection, ResilienceError, Pipeline, presets, resilient};
//! use resilience4cata::testing::{self, ManualClock};
//!
//! #[derive(Debug, ResilienceError)]
//! pub enum ApiError {
//!     Status(u16),
//!     #[rejection]
//!     Rejected(Rejection),
//! }
//!
//! #[resilient]
//! pub trait Orders {
//!     #[bundle(resilience4cata::presets::standard_http)]
//!     #[retry(retry_on = ApiError::Status(500..) | ApiError::Status(408 | 429) | ApiError::Rejected(_))]
//!     async fn place(&self, sku: u32) -> Result<u64, ApiError>;
//! }
//!
//! struct Flaky(std::sync::atomic::AtomicU32);
//! impl Orders for Flaky {
//!     async fn place(&self, _sku: u32) -> Result<u64, ApiError> {
//!         match self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
//!             0 => Err(ApiError::Status(503)), // retried after the first backoff
//!             _ => Ok(42),
//!         }
//!     }
//! }
//!
//! let clock = ManualClock::new();
//! let registry = testing::registry(&clock).build()?;
//! let orders = ResilientOrders::new(Flaky(Default::default()), &registry)?;
//! // The same stack for a closure:
//! let quotes = Pipeline::builder(&registry, "quotes").preset(presets::StandardHttp).build::<u64, ApiError>()?;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! assert_eq!(orders.place(7).await.unwrap(), 42);
//! assert!(clock.elapsed() <= std::time::Duration::from_secs(2)); // one wait, at most the 2 s base
//! assert_eq!(quotes.execute_async(|| async { Ok(1) }).await.unwrap(), 1);
//! # });
//! # Ok::<(), resilience4cata::RegistryError>(())
//! ```

use std::time::Duration;

use crate::bulkhead::BulkheadConfigBuilder;
use crate::circuit_breaker::{CircuitBreakerConfigBuilder, WindowType};
use crate::hedge::HedgeConfigBuilder;
use crate::pipeline::{Policy, Preset, PresetLayers, PresetParts};
use crate::retry::{Backoff, Jitter, RetryConfigBuilder};
use crate::timeout::TimeoutConfigBuilder;

crate::bundle! {
    /// The standard HTTP client: a concurrency limit, a retry with a retry budget, a circuit
    /// breaker and a per-attempt timeout, nested as `AddStandardResilienceHandler` nests them
    /// (its total timeout becomes the retry's `max_duration`; see `docs/presets.md`).
    ///
    /// | layer (outermost first) | values |
    /// |---|---|
    /// | bulkhead, one slot per call | 1000 concurrent calls, no queue (`max_wait = "0"`) |
    /// | retry, bounding the whole call | 4 attempts, exponential from 2 s (×2, capped at 10 s), full jitter; no attempt starts after 20 s, so a call ends within 30 s; a retry budget of 20 % of calls + 10 retries a second over 10 s |
    /// | circuit breaker, recording each attempt | 10 % failures over a 30 s time window with at least 100 calls; open 5 s, then 1 probe |
    /// | timeout, per attempt | 10 s |
    ///
    /// Every `Err` is retried and recorded unless the method says otherwise: write the HTTP
    /// statuses that are worth a retry as `#[retry(retry_on = …)]` beside the preset (it wins key
    /// by key). A `#[rate_limiter]` or `#[adaptive_limit]` added to the method sits outside the
    /// retry with the bulkhead (one permit per call). The method must be `async`: the timeout
    /// cancels the attempt's future.
    #[__r4c_preset]
    pub standard_http =
        #[policy_order(RateLimiter, AdaptiveLimit, Bulkhead, Retry, CircuitBreaker, Timeout)]
        #[bulkhead(max_concurrent_calls = 1000, max_wait = "0")]
        #[retry(
            max_attempts = 4, delay = "2s", backoff = Exponential, multiplier = 2.0, max_delay = "10s",
            jitter = Full, max_duration = "20s",
            budget_percent = 20.0, budget_min_retries_per_second = 10, budget_window = "10s"
        )]
        #[circuit_breaker(
            window_type = Time, window_size = 30, minimum_calls = 100, failure_rate_threshold = 10.0,
            wait_in_open = "5s", permitted_calls_in_half_open = 1
        )]
        #[timeout(duration = "10s")];

    /// The latency-critical HTTP client: a hedge, and inside each hedged attempt a concurrency
    /// limit, a circuit breaker and a timeout, nested as `AddStandardHedgingHandler` nests them
    /// (per attempt where it nests them per endpoint; see `docs/presets.md`).
    ///
    /// | layer (outermost first) | values |
    /// |---|---|
    /// | hedge | 1 extra attempt, 2 s after the first (at once if the first fails); a call ends within 12 s |
    /// | bulkhead, per attempt | 1000 concurrent attempts, no queue |
    /// | circuit breaker, per attempt | 10 % failures over a 30 s time window with at least 100 calls; open 5 s, then 1 probe |
    /// | timeout, per attempt | 10 s |
    ///
    /// Set the hedge's `delay` to about the dependency's 95th percentile latency
    /// (`#[hedge(delay = "150ms")]` beside the preset): 2 s is the handler's default, kept so
    /// the values match their source. The method must be `async` and safe to run twice at once.
    #[__r4c_preset]
    pub hedged_http =
        #[policy_order(Hedge, RateLimiter, AdaptiveLimit, Bulkhead, CircuitBreaker, Timeout)]
        #[hedge(delay = "2s", max_hedged_attempts = 1)]
        #[bulkhead(max_concurrent_calls = 1000, max_wait = "0")]
        #[circuit_breaker(
            window_type = Time, window_size = 30, minimum_calls = 100, failure_rate_threshold = 10.0,
            wait_in_open = "5s", permitted_calls_in_half_open = 1
        )]
        #[timeout(duration = "10s")];
}

/// [`standard_http`] for a pipeline: `Pipeline::builder(&registry, id).preset(presets::StandardHttp)`,
/// the same policies, values and order.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry, presets};
///
/// let registry = Registry::builder().build()?;
/// let orders = Pipeline::builder(&registry, "orders").preset(presets::StandardHttp).build::<u64, std::io::Error>()?;
/// let snapshot = registry.snapshot();
/// let retry = &snapshot.retries()[0].config;
/// assert_eq!((retry.max_attempts, retry.delay, retry.max_duration), (4, Duration::from_secs(2), Some(Duration::from_secs(20))));
/// assert_eq!(snapshot.circuit_breakers()[0].config.wait_in_open, Duration::from_secs(5));
/// assert_eq!(snapshot.bulkheads()[0].config.max_concurrent_calls, 1000);
/// assert_eq!(snapshot.timeouts()[0].config.duration, Duration::from_secs(10));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StandardHttp;

/// [`hedged_http`] for a pipeline: `Pipeline::builder(&registry, id).preset(presets::HedgedHttp)`,
/// the same policies, values and order.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry, presets};
///
/// let registry = Registry::builder().build()?;
/// let search = Pipeline::builder(&registry, "search")
///     .preset(presets::HedgedHttp)
///     .hedge_with(|h| h.delay(Duration::from_millis(150))) // about the dependency's p95
///     .build::<u64, std::io::Error>()?;
/// let snapshot = registry.snapshot();
/// let hedge = &snapshot.hedges()[0].config;
/// assert_eq!((hedge.delay, hedge.max_hedged_attempts), (Duration::from_millis(150), 1));
/// assert_eq!(snapshot.timeouts()[0].config.duration, Duration::from_secs(10));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HedgedHttp;

impl Preset for StandardHttp {}
impl Preset for HedgedHttp {}

/// The breaker both presets share: the handlers' 10 % over 30 s, at least 100 calls, 5 s open.
fn circuit_breaker() -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfigBuilder::new()
        .window_type(WindowType::Time)
        .window_size(30)
        .minimum_calls(100)
        .failure_rate_threshold(10.0)
        .wait_in_open(Duration::from_secs(5))
        .permitted_calls_in_half_open(1)
}

/// The handlers' concurrency limiter: 1000 permits, no queue.
fn bulkhead() -> BulkheadConfigBuilder {
    BulkheadConfigBuilder::new().max_concurrent_calls(1000).max_wait(Duration::ZERO)
}

/// The handlers' attempt timeout.
fn timeout() -> TimeoutConfigBuilder {
    TimeoutConfigBuilder::new().duration(Duration::from_secs(10))
}

impl PresetParts for StandardHttp {
    fn layers(&self) -> PresetLayers {
        let retry = RetryConfigBuilder::new()
            .max_attempts(4)
            .delay(Duration::from_secs(2))
            .backoff(Backoff::Exponential)
            .multiplier(2.0)
            .max_delay(Duration::from_secs(10))
            .jitter(Jitter::Full)
            .max_duration(Duration::from_secs(20))
            .budget_percent(20.0)
            .budget_min_retries_per_second(10)
            .budget_window(Duration::from_secs(10));
        PresetLayers {
            retry: Some(retry),
            circuit_breaker: Some(circuit_breaker()),
            bulkhead: Some(bulkhead()),
            timeout: Some(timeout()),
            order: vec![
                Policy::RateLimiter,
                Policy::AdaptiveLimit,
                Policy::Bulkhead,
                Policy::Retry,
                Policy::CircuitBreaker,
                Policy::Timeout,
            ],
            ..PresetLayers::default()
        }
    }
}

impl PresetParts for HedgedHttp {
    fn layers(&self) -> PresetLayers {
        PresetLayers {
            hedge: Some(HedgeConfigBuilder::new().delay(Duration::from_secs(2)).max_hedged_attempts(1)),
            circuit_breaker: Some(circuit_breaker()),
            bulkhead: Some(bulkhead()),
            timeout: Some(timeout()),
            order: vec![
                Policy::Hedge,
                Policy::RateLimiter,
                Policy::AdaptiveLimit,
                Policy::Bulkhead,
                Policy::CircuitBreaker,
                Policy::Timeout,
            ],
            ..PresetLayers::default()
        }
    }
}
