//! The breaker's handle: one live instance, found with `Registry::circuit_breaker`, with its
//! snapshot and manual controls.

use super::CircuitBreakerSnapshot;
use super::State;
use super::policy::CircuitBreakerPolicy;
use crate::kit::policy_handle;

policy_handle! {
    /// One live breaker, found with [`Registry::circuit_breaker`](crate::Registry::circuit_breaker): its snapshot and manual controls.
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
    CircuitBreakerHandle for CircuitBreakerPolicy => CircuitBreakerSnapshot
}

impl CircuitBreakerHandle {
    /// The current state.
    pub fn state(&self) -> State {
        self.state.state()
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
