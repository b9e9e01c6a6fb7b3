//! The registry's side of adaptive limits: builder methods, instances built by the generated code,
//! handles and snapshot lists.

use std::sync::Arc;

use super::policy::{AdaptiveLimitPolicy, AdaptiveLimitState};
use super::{AdaptiveLimitConfig, AdaptiveLimitConfigBuilder, AdaptiveLimitSnapshot};
use crate::error::RegistryError;
use crate::registry::{Registry, RegistryBuilder, RegistrySnapshot, edit};

impl RegistryBuilder {
    /// Overrides built-in adaptive limit defaults for every adaptive limit of this registry.
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata::adaptive_limit::Algorithm;
    ///
    /// let registry = Registry::builder().adaptive_limit_defaults(|a| a.algorithm(Algorithm::Vegas)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn adaptive_limit_defaults(
        mut self,
        f: impl FnOnce(AdaptiveLimitConfigBuilder) -> AdaptiveLimitConfigBuilder,
    ) -> Self {
        edit(&mut self.adaptive_limit.defaults, f);
        self
    }

    /// A named adaptive limit configuration, chosen with `#[adaptive_limit(config = "name")]`.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().adaptive_limit("database", |a| a.max_limit(64)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn adaptive_limit(
        mut self,
        name: impl Into<String>,
        f: impl FnOnce(AdaptiveLimitConfigBuilder) -> AdaptiveLimitConfigBuilder,
    ) -> Self {
        edit(self.adaptive_limit.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one adaptive limit instance id; they win over everything else.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().adaptive_limit_instance("shop::Db::query", |a| a.initial_limit(8)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn adaptive_limit_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(AdaptiveLimitConfigBuilder) -> AdaptiveLimitConfigBuilder,
    ) -> Self {
        edit(self.adaptive_limit.instances.entry(id.into()).or_default(), f);
        self
    }
}

impl AdaptiveLimitPolicy {
    /// Resolves the configuration of instance `name` (else `id`) and finds or creates its state.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: AdaptiveLimitConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let check = |c: &AdaptiveLimitConfig| match is_async && c.enabled && !c.max_wait.is_zero() {
            true => inner.require_async_clock(id, "this async method may wait for an adaptive limit slot"),
            false => Ok(()),
        };
        let state = inner.adaptive_limit.instance(id, config, &attrs, check, |instance, config| {
            AdaptiveLimitState::new(instance, config, Arc::clone(&inner.timer), &inner.listeners.adaptive_limit)
        })?;
        Ok(AdaptiveLimitPolicy::new(state))
    }
}

/// A live adaptive limit instance, found with [`Registry::adaptive_limit`].
///
/// ```
/// use resilience4cata::{Registry, resilient};
///
/// #[resilient]
/// pub trait Search {
///     #[adaptive_limit(initial_limit = 4)]
///     fn query(&self, q: &str) -> Result<usize, std::io::Error>;
/// }
///
/// struct Backend;
/// impl Search for Backend {
///     fn query(&self, q: &str) -> Result<usize, std::io::Error> {
///         Ok(q.len())
///     }
/// }
///
/// let registry = Registry::builder().build()?;
/// let search = ResilientSearch::new(Backend, &registry)?;
/// search.query("rust")?;
/// let limit = registry.adaptive_limit(concat!(module_path!(), "::Search::query")).expect("built by `new`");
/// let s = limit.snapshot();
/// assert_eq!((s.limit, s.in_flight), (4, 0)); // 1 in flight × 2 < 4: not in use, no growth
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct AdaptiveLimitHandle {
    state: Arc<AdaptiveLimitState>,
}

impl AdaptiveLimitHandle {
    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// The configuration, the current limit and the calls in flight.
    pub fn snapshot(&self) -> AdaptiveLimitSnapshot {
        self.state.snapshot()
    }
}

impl Registry {
    /// The adaptive limit instance `id` (its `name`, or the derived `<module>::<Trait>::<method>`),
    /// once a wrapper or pipeline has built it.
    pub fn adaptive_limit(&self, id: &str) -> Option<AdaptiveLimitHandle> {
        self.inner().adaptive_limit.instances.get(id).map(|state| AdaptiveLimitHandle { state })
    }
}

impl RegistrySnapshot {
    /// Every adaptive limit instance, ordered by id.
    pub fn adaptive_limits(&self) -> &[AdaptiveLimitSnapshot] {
        &self.adaptive_limits
    }
}
