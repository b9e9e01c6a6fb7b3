//! [`PipelineBuilder`]: which policies a pipeline has, and how each one's configuration is layered.
//!
//! The builder is untyped (it does not know `T` or `E`), so it only collects, for each policy, the
//! named configuration and the overrides the caller asked for. [`build`](PipelineBuilder::build)
//! resolves them all at once through the same registry calls the generated code makes, so the
//! pipeline's instances are the generated code's instances: same ids, same layering, same errors.

use std::fmt;
use std::sync::Arc;

use super::Pipeline;
use crate::error::RegistryError;
use crate::registry::{Layer, Registry};
use crate::retry::RetryConfigBuilder;
use crate::retry::policy::RetryPolicy;

/// What the caller asked of one policy: a named configuration and overrides on top of it.
#[derive(Clone, Debug, Default)]
struct Wanted<B> {
    config: Option<String>,
    overrides: B,
}

impl<B: Layer> Wanted<B> {
    /// The policy with its defaults, keeping whatever was asked before.
    fn add(slot: &mut Option<Self>) -> &mut Self {
        slot.get_or_insert_with(Wanted::default)
    }

    fn config(slot: &mut Option<Self>, name: String) {
        Self::add(slot).config = Some(name);
    }

    /// Chains `f` onto the overrides already set: a key set twice keeps the later value.
    fn with(slot: &mut Option<Self>, f: impl FnOnce(B) -> B) {
        let wanted = Self::add(slot);
        wanted.overrides = f(std::mem::take(&mut wanted.overrides));
    }
}

/// Chooses a pipeline's policies; [`build`](PipelineBuilder::build) resolves them.
///
/// Start it with [`Pipeline::builder`]. For each policy there are three methods, which compose:
/// `.retry()` (registry defaults), `.retry_config("name")` (a named configuration of the registry)
/// and `.retry_with(|r| …)` (overrides on top of both). They rank as a method's attributes do:
/// built-in defaults < registry defaults < the named configuration < the `_with` overrides <
/// `retry_instance(id, …)` on the registry. The order of the builder calls does not matter: the
/// policies always nest in the order of SPEC §6 (retry outermost).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::{Pipeline, Registry};
///
/// let registry = Registry::builder().retry("patient", |r| r.max_attempts(5)).build()?;
/// let prices = Pipeline::builder(&registry, "prices")
///     .retry_config("patient")                                 // 5 attempts…
///     .retry_with(|r| r.delay(Duration::from_millis(10)))       // …10 ms apart at first
///     .build::<u32, std::io::Error>()?;
/// assert_eq!(prices.execute(|| Ok(7))?, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct PipelineBuilder<'r> {
    registry: &'r Registry,
    id: String,
    retry: Option<Wanted<RetryConfigBuilder>>,
}

impl fmt::Debug for PipelineBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineBuilder").field("id", &self.id).field("retry", &self.retry).finish_non_exhaustive()
    }
}

impl<'r> PipelineBuilder<'r> {
    pub(super) fn new(registry: &'r Registry, id: String) -> Self {
        PipelineBuilder { registry, id, retry: None }
    }

    /// Adds a retry with the registry's defaults (and the instance's overrides, if any).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let pipeline = Pipeline::builder(&registry, "inventory").retry().build::<u32, String>()?;
    /// assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 3);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn retry(mut self) -> Self {
        Wanted::add(&mut self.retry);
        self
    }

    /// Adds a retry configured by the registry's named configuration `name` (see
    /// `RegistryBuilder::retry`). An unknown name fails [`build`](Self::build) with `R4C-REG-004`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().retry("external", |r| r.max_attempts(5)).build()?;
    /// Pipeline::builder(&registry, "inventory").retry_config("external").build::<u32, String>()?;
    /// assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 5);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn retry_config(mut self, name: impl Into<String>) -> Self {
        Wanted::config(&mut self.retry, name.into());
        self
    }

    /// Adds a retry with overrides on top of the defaults (and of the named configuration, if
    /// [`retry_config`](Self::retry_config) chose one). Calling it twice chains the closures.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// Pipeline::builder(&registry, "inventory")
    ///     .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(100)))
    ///     .build::<u32, String>()?;
    /// assert_eq!(registry.snapshot().retries()[0].config.delay, Duration::from_millis(100));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn retry_with(mut self, f: impl FnOnce(RetryConfigBuilder) -> RetryConfigBuilder) -> Self {
        Wanted::with(&mut self.retry, f);
        self
    }

    /// Resolves every policy once, into the registry's shared instances under the pipeline's id.
    ///
    /// Fails as wrapping a trait does: `R4C-REG-004` for an unknown named configuration,
    /// `R4C-REG-003` for an invalid resolved value, `R4C-REG-008` when the id is already used with
    /// another configuration. A retry-only pipeline accepts any error type `E`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let err = Pipeline::builder(&registry, "inventory").retry_config("nope").build::<u32, String>().unwrap_err();
    /// assert_eq!(err.code(), "R4C-REG-004");
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn build<T, E>(self) -> Result<Pipeline<T, E>, RegistryError> {
        let id: Arc<str> = Arc::from(self.id.as_str());
        let retry = match self.retry {
            Some(wanted) => {
                Some(RetryPolicy::build(self.registry, &id, None, wanted.config.as_deref(), false, wanted.overrides)?)
            }
            None => None,
        };
        Ok(Pipeline::from_policies(id, retry))
    }
}
