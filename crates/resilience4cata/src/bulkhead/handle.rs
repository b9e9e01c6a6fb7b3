//! The registry's side of bulkheads: builder methods, instances built by the generated code,
//! handles and snapshot lists.

use std::sync::Arc;

use super::policy::{BulkheadPolicy, BulkheadState};
use super::{BulkheadConfig, BulkheadConfigBuilder, BulkheadSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::registry::{Registry, RegistryBuilder, RegistrySnapshot, edit};

impl RegistryBuilder {
    /// Overrides built-in bulkhead defaults for every bulkhead of this registry.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().bulkhead_defaults(|b| b.max_concurrent_calls(8)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn bulkhead_defaults(mut self, f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder) -> Self {
        edit(&mut self.bulkhead.defaults, f);
        self
    }

    /// A named bulkhead configuration, chosen with `#[bulkhead(config = "name")]`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .bulkhead("database", |b| b.max_concurrent_calls(16).max_wait(Duration::from_millis(5)))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn bulkhead(
        mut self,
        name: impl Into<String>,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        edit(self.bulkhead.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one bulkhead instance id; they win over everything else.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder().bulkhead_instance("shop::Db::query", |b| b.max_concurrent_calls(4)).build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn bulkhead_instance(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        edit(self.bulkhead.instances.entry(id.into()).or_default(), f);
        self
    }
}

impl BulkheadPolicy {
    /// Resolves the configuration of instance `name` (else `id`) and finds or creates its state.
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        is_async: bool,
        attrs: BulkheadConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let check = |c: &BulkheadConfig| match is_async && c.enabled && !c.max_wait.is_zero() {
            true => inner.require_async_clock(id, "this async method may wait for a bulkhead slot"),
            false => Ok(()),
        };
        let state = inner.bulkhead.instance(id, config, &attrs, check, |instance, config| {
            let events = Publisher::new(&inner.listeners, &instance);
            BulkheadState::new(instance, config, Arc::clone(&inner.timer), events)
        })?;
        Ok(BulkheadPolicy::new(state))
    }
}

/// A live bulkhead instance, found with [`Registry::bulkhead`].
///
/// ```
/// use resilience4cata::{Registry, resilient};
///
/// #[resilient]
/// pub trait Reports {
///     #[bulkhead(max_concurrent_calls = 4)]
///     fn render(&self, id: u64) -> Result<String, std::io::Error>;
/// }
///
/// struct Backend;
/// impl Reports for Backend {
///     fn render(&self, id: u64) -> Result<String, std::io::Error> {
///         Ok(format!("report {id}"))
///     }
/// }
///
/// let registry = Registry::builder().build()?;
/// let reports = ResilientReports::new(Backend, &registry)?;
/// reports.render(1)?;
/// let bulkhead = registry.bulkhead(concat!(module_path!(), "::Reports::render")).expect("built by `new`");
/// let s = bulkhead.snapshot();
/// assert_eq!((s.in_flight, s.available, s.waiting), (0, 4, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct BulkheadHandle {
    state: Arc<BulkheadState>,
}

impl BulkheadHandle {
    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// The configuration, the slots in flight and free, and the callers waiting.
    pub fn snapshot(&self) -> BulkheadSnapshot {
        self.state.snapshot()
    }
}

impl Registry {
    /// The bulkhead instance `id` (its `name`, or the derived `<module>::<Trait>::<method>`), once a
    /// wrapper or pipeline has built it.
    pub fn bulkhead(&self, id: &str) -> Option<BulkheadHandle> {
        self.inner().bulkhead.instances.get(id).map(|state| BulkheadHandle { state })
    }
}

impl RegistrySnapshot {
    /// Every bulkhead instance, ordered by id.
    pub fn bulkheads(&self) -> &[BulkheadSnapshot] {
        &self.bulkheads
    }
}
