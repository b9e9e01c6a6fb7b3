//! The registry's side of hedges: builder methods, instances built by the generated code and
//! snapshot lists. A hedge has no handle: it has nothing to control.

use std::sync::Arc;

use super::policy::{HedgePolicy, HedgeState};
use super::{HedgeConfig, HedgeConfigBuilder, HedgeSnapshot};
use crate::error::{RegistryError, codes};
use crate::registry::{Registry, RegistryBuilder, RegistrySnapshot, edit};

impl RegistryBuilder {
    /// Overrides built-in hedge defaults for every hedge of this registry.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().hedge_defaults(|h| h.delay(Duration::from_millis(40))).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn hedge_defaults(mut self, f: impl FnOnce(HedgeConfigBuilder) -> HedgeConfigBuilder) -> Self {
        edit(&mut self.hedge.defaults, f);
        self
    }

    /// A named hedge configuration, chosen with `#[hedge(config = "name")]` or `.hedge_config("name")`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .hedge("search", |h| h.delay(Duration::from_millis(20)).max_hedged_attempts(3))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn hedge(mut self, name: impl Into<String>, f: impl FnOnce(HedgeConfigBuilder) -> HedgeConfigBuilder) -> Self {
        edit(self.hedge.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one hedge instance id; they win over everything else.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().hedge_instance("shop::Search::find", |h| h.enabled(false)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn hedge_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(HedgeConfigBuilder) -> HedgeConfigBuilder,
    ) -> Self {
        edit(self.hedge.instances.entry(id.into()).or_default(), f);
        self
    }
}

impl HedgePolicy {
    /// Resolves the configuration of instance `name` (else `id`) and finds or creates its state. A
    /// hedge needs an async method (`R4C-REG-001` otherwise) and a clock that can wait in a future.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: HedgeConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        if !is_async {
            return Err(RegistryError::new(
                codes::INVALID_COMBINATION,
                Some(id),
                "a hedge needs an async method: attempts run side by side inside one future",
            ));
        }
        let check = |c: &HedgeConfig| match c.enabled {
            true => inner.require_async_clock(id, "this async method hedges its attempts"),
            false => Ok(()),
        };
        let state = inner.hedge.instance(id, config, &attrs, check, |instance, config| {
            HedgeState::new(instance, config, Arc::clone(&inner.timer), &inner.listeners.hedge)
        })?;
        Ok(HedgePolicy::new(state))
    }
}

impl RegistrySnapshot {
    /// Every hedge instance, ordered by id.
    ///
    /// ```
    /// use resilience4cata::{Registry, resilient};
    ///
    /// #[resilient]
    /// pub trait Search {
    ///     #[hedge(delay = "50ms")]
    ///     async fn find(&self, q: &str) -> Result<Vec<u64>, std::io::Error>;
    /// }
    ///
    /// struct Backend;
    /// impl Search for Backend {
    ///     async fn find(&self, _q: &str) -> Result<Vec<u64>, std::io::Error> {
    ///         Ok(vec![1, 2])
    ///     }
    /// }
    ///
    /// let registry = Registry::builder().build()?;
    /// let _search = ResilientSearch::new(Backend, &registry)?;
    /// let hedges = registry.snapshot();
    /// assert_eq!(&*hedges.hedges()[0].instance, concat!(module_path!(), "::Search::find"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hedges(&self) -> &[HedgeSnapshot] {
        &self.hedges
    }
}
