//! How breakers live in the registry: the builder's configuration methods, the instances shared by
//! id, and the handle that exposes one instance's snapshot and manual controls.

use std::fmt;
use std::sync::Arc;

use super::policy::CircuitBreakerPolicy;
use super::state::CircuitBreakerState;
use super::{CircuitBreakerConfigBuilder, CircuitBreakerSnapshot, State};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::registry::{Registry, RegistryBuilder, edit};

impl CircuitBreakerPolicy {
    /// The breaker of one method or pipeline: its config resolved in layers, its state shared with
    /// every user of the same id (`R4C-REG-008` when they resolve differently).
    pub(crate) fn build(
        registry: &Registry,
        id: &str,
        name: Option<&str>,
        config: Option<&str>,
        attrs: &CircuitBreakerConfigBuilder,
    ) -> Result<Self, RegistryError> {
        let inner = registry.inner();
        let id = name.unwrap_or(id);
        let state = inner.circuit_breaker.instance(
            id,
            config,
            attrs,
            |_| Ok(()),
            |instance, config| {
                let events = Publisher::new(&inner.listeners, &instance);
                CircuitBreakerState::new(instance, config, Arc::clone(&inner.timer), events)
            },
        )?;
        Ok(CircuitBreakerPolicy::new(state))
    }
}

/// One live breaker, found with [`Registry::circuit_breaker`]: its snapshot and manual controls.
/// Cheap to clone; every clone controls the same instance.
///
/// ```
/// use resilience4cata::circuit_breaker::State;
/// use resilience4cata::Registry;
///
/// let registry = Registry::builder().build()?;
/// # resilience4cata::__private::circuit_breaker(&registry, resilience4cata::__private::Site { id: "prices", name: None, config: None, is_async: false }, Default::default())?;
/// let breaker = registry.circuit_breaker("prices").expect("built by a wrapper or pipeline");
/// breaker.force_open();
/// assert_eq!(breaker.snapshot().state, State::ForcedOpen);
/// breaker.reset();
/// assert_eq!(breaker.state(), State::Closed);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct CircuitBreakerHandle {
    state: Arc<CircuitBreakerState>,
}

impl fmt::Debug for CircuitBreakerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerHandle").field("instance", &self.state.instance).finish_non_exhaustive()
    }
}

impl CircuitBreakerHandle {
    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state.state()
    }

    /// The state, the current window's counts and rates, and the refusals since the last reset.
    pub fn snapshot(&self) -> CircuitBreakerSnapshot {
        self.state.snapshot()
    }

    /// Refuses every call (state `ForcedOpen`) until [`reset`](Self::reset).
    pub fn force_open(&self) {
        self.state.force_open();
    }

    /// Lets every call through and records nothing (state `Disabled`) until [`reset`](Self::reset).
    pub fn disable(&self) {
        self.state.disable();
    }

    /// Closes the breaker with an empty window and zeroed counters, whatever its state.
    pub fn reset(&self) {
        self.state.reset();
    }
}

impl Registry {
    /// The circuit breaker with this instance id (its `name`, or the derived
    /// `<module_path>::<Trait>::<method>`), once a wrapper or pipeline has built it.
    pub fn circuit_breaker(&self, id: &str) -> Option<CircuitBreakerHandle> {
        self.inner().circuit_breaker.instances.get(id).map(|state| CircuitBreakerHandle { state })
    }

    pub(crate) fn circuit_breaker_snapshots(&self) -> Vec<CircuitBreakerSnapshot> {
        self.inner().circuit_breaker.instances.all().iter().map(|s| s.snapshot()).collect()
    }
}

type Edit = CircuitBreakerConfigBuilder;

impl RegistryBuilder {
    /// Overrides built-in circuit breaker defaults for every breaker of this registry.
    ///
    /// ```
    /// use resilience4cata::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .circuit_breaker_defaults(|c| c.window_size(20).minimum_calls(10))
    ///     .circuit_breaker("external", |c| c.failure_rate_threshold(25.0))
    ///     .circuit_breaker_instance("shop::InventoryApi::reserve", |c| c.minimum_calls(20))
    ///     .build()?;
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn circuit_breaker_defaults(mut self, f: impl FnOnce(Edit) -> Edit) -> Self {
        edit(&mut self.circuit_breaker.defaults, f);
        self
    }

    /// A named circuit breaker configuration, chosen with `#[circuit_breaker(config = "name")]` or
    /// `.circuit_breaker_config("name")`.
    pub fn circuit_breaker(mut self, name: impl Into<String>, f: impl FnOnce(Edit) -> Edit) -> Self {
        edit(self.circuit_breaker.named.entry(name.into()).or_default(), f);
        self
    }

    /// Overrides for one circuit breaker instance id; they win over everything else.
    pub fn circuit_breaker_instance(mut self, id: impl Into<String>, f: impl FnOnce(Edit) -> Edit) -> Self {
        edit(self.circuit_breaker.instances.entry(id.into()).or_default(), f);
        self
    }
}
