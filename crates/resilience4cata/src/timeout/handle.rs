//! The registry's side of timeouts: builder methods, instances built by the generated code and
//! snapshot lists. A timeout has no handle: it has no state to control, and no `name`.

use std::sync::Arc;

use super::policy::{TimeoutPolicy, TimeoutState};
use super::{TimeoutConfig, TimeoutConfigBuilder, TimeoutSnapshot};
use crate::error::{RegistryError, codes};
use crate::events::Publisher;
use crate::registry::{Registry, RegistryBuilder, RegistrySnapshot, edit};

impl RegistryBuilder {
    /// Overrides built-in timeout defaults for every timeout of this registry.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().timeout_defaults(|t| t.duration(Duration::from_millis(300))).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn timeout_defaults(mut self, f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder) -> Self {
        edit(&mut self.timeout.defaults, f);
        self
    }

    /// A named timeout configuration, chosen with `#[timeout(config = "name")]`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().timeout("slow-partner", |t| t.duration(Duration::from_secs(5))).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn timeout(
        mut self,
        name: impl Into<String>,
        f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder,
    ) -> Self {
        edit(self.timeout.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one timeout instance id (always the derived `<module>::<Trait>::<method>`);
    /// they win over everything else.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .timeout_instance("shop::PricesApi::quote", |t| t.duration(Duration::from_millis(150)))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn timeout_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder,
    ) -> Self {
        edit(self.timeout.instances.entry(id.into()).or_default(), f);
        self
    }
}

impl TimeoutPolicy {
    /// Resolves the configuration of instance `id` and finds or creates its state. A timeout needs
    /// an async method (`R4C-REG-001` otherwise) and a clock that can wait in a future.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        config: Option<&str>,
        is_async: bool,
        attrs: TimeoutConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        if !is_async {
            return Err(RegistryError::new(
                codes::INVALID_COMBINATION,
                Some(id),
                "a timeout needs an async method: a blocking call cannot be cancelled",
            ));
        }
        let check = |c: &TimeoutConfig| match c.enabled {
            true => inner.require_async_clock(id, "this async method runs under a timeout"),
            false => Ok(()),
        };
        let state = inner.timeout.instance(id, config, &attrs, check, |instance, config| {
            let events = Publisher::new(&inner.listeners, &instance);
            TimeoutState::new(instance, config, Arc::clone(&inner.timer), events)
        })?;
        Ok(TimeoutPolicy::new(state))
    }
}

impl RegistrySnapshot {
    /// Every timeout instance, ordered by id.
    ///
    /// ```
    /// use resilience4cata::{Registry, resilient};
    ///
    /// #[resilient]
    /// pub trait Search {
    ///     #[timeout(duration = "200ms")]
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
    /// let timeouts = registry.snapshot();
    /// assert_eq!(&*timeouts.timeouts()[0].instance, concat!(module_path!(), "::Search::find"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn timeouts(&self) -> &[TimeoutSnapshot] {
        &self.timeouts
    }
}
