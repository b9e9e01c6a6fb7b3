//! The registry: configuration layers, event listeners, the clock, and every live policy instance.
//!
//! Build it once at start-up, share it (it is a cheap `Arc` clone), wrap every dependency with it.
//! It is immutable after [`RegistryBuilder::build`]: changing a value means building a new registry.

#[cfg(feature = "serde")]
pub(crate) mod config_file;
mod layer;

use std::fmt;
use std::sync::Arc;

pub(crate) use layer::{Configs, Instances, Layer};

use crate::adaptive_limit::policy::AdaptiveLimitState;
use crate::adaptive_limit::{AdaptiveLimitConfigBuilder, AdaptiveLimitSnapshot};
use crate::bulkhead::policy::BulkheadState;
use crate::bulkhead::{BulkheadConfigBuilder, BulkheadSnapshot};
use crate::circuit_breaker::{CircuitBreakerConfigBuilder, CircuitBreakerSnapshot, CircuitBreakerState};
use crate::clock::{Clock, Timer};
use crate::error::{RegistryError, codes};
use crate::events::{Event, Listeners};
use crate::rate_limiter::policy::RateLimiterState;
use crate::rate_limiter::{RateLimiterConfigBuilder, RateLimiterSnapshot};
use crate::retry::policy::RetryState;
use crate::retry::{RetryConfigBuilder, RetrySnapshot};
use crate::timeout::policy::TimeoutState;
use crate::timeout::{TimeoutConfigBuilder, TimeoutSnapshot};

/// Holds configuration, listeners, the clock and the state of every policy instance.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::Registry;
///
/// let registry = Registry::builder()
///     .retry_defaults(|r| r.delay(Duration::from_millis(50)))           // every retry
///     .retry("external", |r| r.max_attempts(5))                         // config = "external"
///     .retry_instance("shop::InventoryApi::stock", |r| r.max_attempts(2)) // one instance
///     .build()?;
/// assert!(registry.snapshot().retries().is_empty()); // nothing wrapped yet
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

/// One policy kind's configuration layers and live instances.
pub(crate) struct Kind<B: Layer, S> {
    pub(crate) configs: Configs<B>,
    pub(crate) instances: Instances<B::Config, S>,
}

impl<B: Layer, S> Kind<B, S> {
    fn new(configs: Configs<B>) -> Self {
        Kind { configs, instances: Instances::default() }
    }

    /// The one way a policy instance comes to be: resolve `id`'s layers over `attrs`
    /// (`R4C-REG-004`, `R4C-REG-003`), let the policy `check` the resolved config, then find the
    /// shared state or `make` it (`R4C-REG-008` if the id resolves differently elsewhere).
    pub(crate) fn instance(
        &self,
        id: &str,
        config: Option<&str>,
        attrs: &B,
        check: impl FnOnce(&B::Config) -> Result<(), RegistryError>,
        make: impl FnOnce(Arc<str>, B::Config) -> S,
    ) -> Result<Arc<S>, RegistryError> {
        let resolved = self.configs.resolve(id, config, attrs)?;
        check(&resolved)?;
        self.instances.get_or_create(B::POLICY, id, resolved, make)
    }
}

pub(crate) struct Inner {
    pub(crate) timer: Arc<Timer>,
    pub(crate) seed: u64,
    pub(crate) listeners: Listeners,
    pub(crate) retry: Kind<RetryConfigBuilder, RetryState>,
    pub(crate) circuit_breaker: Kind<CircuitBreakerConfigBuilder, CircuitBreakerState>,
    pub(crate) rate_limiter: Kind<RateLimiterConfigBuilder, RateLimiterState>,
    pub(crate) bulkhead: Kind<BulkheadConfigBuilder, BulkheadState>,
    pub(crate) timeout: Kind<TimeoutConfigBuilder, TimeoutState>,
    pub(crate) adaptive_limit: Kind<AdaptiveLimitConfigBuilder, AdaptiveLimitState>,
}

impl Inner {
    /// `R4C-REG-010` unless the clock can wait inside a future (needed by `why`).
    pub(crate) fn require_async_clock(&self, id: &str, why: &str) -> Result<(), RegistryError> {
        if self.timer.can_sleep_async() {
            return Ok(());
        }
        Err(RegistryError::new(
            codes::NO_ASYNC_CLOCK,
            Some(id),
            format!(
                "{why}, but the registry's clock cannot sleep in a future: enable the `tokio` feature or build \
                 the registry on a clock that can"
            ),
        ))
    }
}

impl Registry {
    /// Starts a registry on the system clock with built-in defaults.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Every policy instance built so far, with its resolved configuration and current state.
    pub fn snapshot(&self) -> RegistrySnapshot {
        let inner = &*self.inner;
        RegistrySnapshot {
            retries: inner.retry.instances.all().iter().map(|s| s.snapshot()).collect(),
            circuit_breakers: self.circuit_breaker_snapshots(),
            rate_limiters: inner.rate_limiter.instances.all().iter().map(|s| s.snapshot()).collect(),
            bulkheads: inner.bulkhead.instances.all().iter().map(|s| s.snapshot()).collect(),
            timeouts: inner.timeout.instances.all().iter().map(|s| s.snapshot()).collect(),
            adaptive_limits: inner.adaptive_limit.instances.all().iter().map(|s| s.snapshot()).collect(),
        }
    }

    /// Interrupts every pending wait between retry attempts, and every later one (sticky): those
    /// calls give up with `GiveUpReason::Interrupted` and return their last failure. Waits for a
    /// rate limiter permit or a bulkhead slot end the same way, with the policy's refusal; a
    /// running attempt's timeout is left alone.
    pub fn shutdown(&self) {
        self.inner.timer.shut_down();
    }

    /// Whether [`shutdown`](Registry::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.timer.is_shut_down()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("snapshot", &self.snapshot()).finish_non_exhaustive()
    }
}

/// Every policy instance of a registry at one moment (`Registry::snapshot`).
#[derive(Clone, Debug, PartialEq, Default)]
#[non_exhaustive]
pub struct RegistrySnapshot {
    retries: Vec<RetrySnapshot>,
    circuit_breakers: Vec<CircuitBreakerSnapshot>,
    pub(crate) rate_limiters: Vec<RateLimiterSnapshot>,
    pub(crate) bulkheads: Vec<BulkheadSnapshot>,
    pub(crate) timeouts: Vec<TimeoutSnapshot>,
    pub(crate) adaptive_limits: Vec<AdaptiveLimitSnapshot>,
}

impl RegistrySnapshot {
    /// Every retry instance, ordered by id.
    pub fn retries(&self) -> &[RetrySnapshot] {
        &self.retries
    }

    /// Every circuit breaker instance, ordered by id.
    pub fn circuit_breakers(&self) -> &[CircuitBreakerSnapshot] {
        &self.circuit_breakers
    }
}

/// Configures a [`Registry`]: defaults, named configurations and per-instance overrides for each
/// policy, the clock, and event listeners.
#[must_use]
#[derive(Default)]
pub struct RegistryBuilder {
    /// The first configuration-file problem, reported by `build`.
    error: Option<RegistryError>,
    clock: Clock,
    seed: Option<u64>,
    listeners: Listeners,
    retry: Configs<RetryConfigBuilder>,
    /// Configured through the methods in `circuit_breaker::registry`.
    pub(crate) circuit_breaker: Configs<CircuitBreakerConfigBuilder>,
    pub(crate) rate_limiter: Configs<RateLimiterConfigBuilder>,
    pub(crate) bulkhead: Configs<BulkheadConfigBuilder>,
    pub(crate) timeout: Configs<TimeoutConfigBuilder>,
    pub(crate) adaptive_limit: Configs<AdaptiveLimitConfigBuilder>,
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder").field("clock", &self.clock).finish_non_exhaustive()
    }
}

/// Applies a chaining closure to the layer stored under `key`, creating it unset first.
pub(crate) fn edit<B: Layer>(slot: &mut B, f: impl FnOnce(B) -> B) {
    *slot = f(std::mem::take(slot));
}

impl RegistryBuilder {
    /// The clock every policy reads and waits on (default: [`Clock::system`]).
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Fixes the seed of the jitter generators, so jittered waits repeat run after run.
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Registers a listener for one event type, called synchronously on the thread that publishes.
    /// The type is taken from the closure: `listen(|e: &RetryEvent| …)`.
    pub fn listen<E: Event>(mut self, listener: impl Fn(&E) + Send + Sync + 'static) -> Self {
        <E as crate::events::sealed::Sealed>::listeners_of(&mut self.listeners).push(Arc::new(listener));
        self
    }

    /// Overrides built-in retry defaults for every retry of this registry.
    pub fn retry_defaults(mut self, f: impl FnOnce(RetryConfigBuilder) -> RetryConfigBuilder) -> Self {
        edit(&mut self.retry.defaults, f);
        self
    }

    /// A named retry configuration, chosen with `#[retry(config = "name")]` or `.retry_config("name")`.
    pub fn retry(mut self, name: impl Into<String>, f: impl FnOnce(RetryConfigBuilder) -> RetryConfigBuilder) -> Self {
        edit(self.retry.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one retry instance id; they win over everything else.
    pub fn retry_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(RetryConfigBuilder) -> RetryConfigBuilder,
    ) -> Self {
        edit(self.retry.instances.entry(id.into()).or_default(), f);
        self
    }

    /// Merges an external configuration (feature `serde`) into the layers, key by key, in call
    /// order with the builder methods.
    #[cfg(feature = "serde")]
    pub fn config(mut self, config: config_file::RegistryConfig) -> Self {
        config.apply(config_file::Targets {
            retry: &mut self.retry,
            circuit_breaker: &mut self.circuit_breaker,
            rate_limiter: &mut self.rate_limiter,
            bulkhead: &mut self.bulkhead,
            timeout: &mut self.timeout,
            adaptive_limit: &mut self.adaptive_limit,
        });
        self
    }

    /// Parses TOML configuration (feature `serde`) and merges it like [`config`](Self::config). A
    /// problem (`R4C-CFG-…`, naming the key path and line) is returned by [`build`](Self::build).
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let err = Registry::builder().config_toml("[defaults.retry]\nmax_attempts = \"3\"\n").build().unwrap_err();
    /// assert_eq!(err.code(), "R4C-CFG-003");
    /// assert!(err.to_string().contains("config:2: `defaults.retry.max_attempts`"), "{err}");
    /// ```
    #[cfg(feature = "serde")]
    pub fn config_toml(self, text: &str) -> Self {
        self.config_from(text, "config")
    }

    /// Reads and merges a TOML file (feature `serde`); see [`config_toml`](Self::config_toml).
    #[cfg(feature = "serde")]
    pub fn config_file(self, path: impl AsRef<std::path::Path>) -> Self {
        let path = path.as_ref();
        match std::fs::read_to_string(path) {
            Ok(text) => self.config_from(&text, &path.display().to_string()),
            Err(e) => self.fail(RegistryError::new(
                crate::error::codes::CONFIG_SYNTAX,
                None,
                format!("{}: cannot read: {e}", path.display()),
            )),
        }
    }

    #[cfg(feature = "serde")]
    fn config_from(self, text: &str, origin: &str) -> Self {
        match config_file::RegistryConfig::from_toml(text, origin) {
            Ok(config) => self.config(config),
            Err(e) => self.fail(e),
        }
    }

    #[cfg(feature = "serde")]
    fn fail(mut self, error: RegistryError) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// Builds the registry, or returns the first configuration-file error. Policy values are
    /// checked when a wrapper or pipeline resolves them.
    pub fn build(self) -> Result<Registry, RegistryError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let timer = Arc::new(self.clock.into_timer());
        let inner = Inner {
            timer,
            seed: self.seed.unwrap_or_else(|| fastrand::u64(..)),
            listeners: self.listeners,
            retry: Kind::new(self.retry),
            circuit_breaker: Kind::new(self.circuit_breaker),
            rate_limiter: Kind::new(self.rate_limiter),
            bulkhead: Kind::new(self.bulkhead),
            timeout: Kind::new(self.timeout),
            adaptive_limit: Kind::new(self.adaptive_limit),
        };
        Ok(Registry { inner: Arc::new(inner) })
    }
}
