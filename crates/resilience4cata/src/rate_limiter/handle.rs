//! The registry's side of rate limiters: builder methods, instances built by the generated code,
//! handles and snapshot lists.

use std::sync::Arc;

use super::policy::{RateLimiterPolicy, RateLimiterState};
use super::{RateLimiterConfig, RateLimiterConfigBuilder, RateLimiterSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::registry::{Registry, RegistryBuilder, RegistrySnapshot, edit};

impl RegistryBuilder {
    /// Overrides built-in rate limiter defaults for every rate limiter of this registry.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().rate_limiter_defaults(|r| r.max_wait(Duration::from_millis(10))).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn rate_limiter_defaults(
        mut self,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        edit(&mut self.rate_limiter.defaults, f);
        self
    }

    /// A named rate limiter configuration, chosen with `#[rate_limiter(config = "name")]`.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().rate_limiter("partner-quota", |r| r.permits(10)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn rate_limiter(
        mut self,
        name: impl Into<String>,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        edit(self.rate_limiter.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one rate limiter instance id; they win over everything else.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .rate_limiter_instance("shop::PricesApi::quote", |r| r.permits(5).period(Duration::from_secs(1)))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn rate_limiter_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        edit(self.rate_limiter.instances.entry(id.into()).or_default(), f);
        self
    }
}

impl RateLimiterPolicy {
    /// Resolves the configuration of instance `name` (else `id`) and finds or creates its state.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: RateLimiterConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let check = |c: &RateLimiterConfig| match is_async && c.enabled && !c.max_wait.is_zero() {
            true => inner.require_async_clock(id, "this async method may wait for a rate limiter permit"),
            false => Ok(()),
        };
        let state = inner.rate_limiter.instance(id, config, &attrs, check, |instance, config| {
            let events = Publisher::new(&inner.listeners, &instance);
            RateLimiterState::new(instance, config, Arc::clone(&inner.timer), events)
        })?;
        Ok(RateLimiterPolicy::new(state))
    }
}

/// A live rate limiter instance, found with [`Registry::rate_limiter`].
///
/// ```
/// use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
///
/// #[resilient]
/// pub trait Quotes {
///     #[rate_limiter(permits = 2, period = "1s")]
///     fn quote(&self, sku: &str) -> Result<u32, std::io::Error>;
/// }
///
/// struct Backend;
/// impl Quotes for Backend {
///     fn quote(&self, _sku: &str) -> Result<u32, std::io::Error> {
///         Ok(7)
///     }
/// }
///
/// let registry = Registry::builder().build()?;
/// let quotes = ResilientQuotes::new(Backend, &registry)?;
/// quotes.quote("a")?;
/// let limiter = registry.rate_limiter(concat!(module_path!(), "::Quotes::quote")).expect("built by `new`");
/// assert_eq!(limiter.snapshot().available_permits, 1);
/// quotes.quote("b")?;
/// let refused = quotes.quote("c").unwrap_err();
/// assert!(matches!(refused.rejection(), Some(Rejection::RateLimitExceeded { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RateLimiterHandle {
    state: Arc<RateLimiterState>,
}

impl RateLimiterHandle {
    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// The configuration and the permits available right now.
    pub fn snapshot(&self) -> RateLimiterSnapshot {
        self.state.snapshot()
    }
}

impl Registry {
    /// The rate limiter instance `id` (its `name`, or the derived `<module>::<Trait>::<method>`), once
    /// a wrapper or pipeline has built it.
    pub fn rate_limiter(&self, id: &str) -> Option<RateLimiterHandle> {
        self.inner().rate_limiter.instances.get(id).map(|state| RateLimiterHandle { state })
    }
}

impl RegistrySnapshot {
    /// Every rate limiter instance, ordered by id.
    pub fn rate_limiters(&self) -> &[RateLimiterSnapshot] {
        &self.rate_limiters
    }
}
