//! The injection point the generated code and pipelines hold: one relaxed load while injection is
//! off; a draw, a delay on the registry's clock and a fault made by name while it is on.

use std::sync::Arc;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use super::state::{ChaosState, Draw, ErrorType, enabled_anywhere};
use super::{ChaosConfig, ChaosConfigBuilder, ChaosEvent, ChaosSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::kit::{Inner, policy_kind};

/// The field the generated code keeps for one method's injection point (feature `chaos`).
#[derive(Clone, Debug)]
pub struct ChaosPolicy {
    state: Arc<ChaosState>,
}

impl ChaosPolicy {
    pub(crate) fn new(state: Arc<ChaosState>) -> Self {
        ChaosPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Registers a user of this id whose error type is `name` (with `has`: whether it has a unit
    /// variant of a name): `R4C-REG-003` if the configured fault is not one of them.
    #[doc(hidden)]
    pub fn for_error_type(self, name: &'static str, has: fn(&str) -> bool) -> Result<Self, RegistryError> {
        self.state.admit(ErrorType { name, has })?;
        Ok(self)
    }

    /// Whether injection is switched on: one relaxed load (the tower adapter's question).
    #[cfg(feature = "tower")]
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.state.is_enabled()
    }

    /// This call's injection, if any: while no instance of the process injects, one relaxed load
    /// of a static and one branch.
    #[inline(always)]
    pub fn roll(&self) -> Option<Injection<'_>> {
        if !enabled_anywhere() {
            return None;
        }
        self.roll_instance()
    }

    /// Past the process-wide switch: the instance's own, then its draw.
    #[cold]
    #[inline(never)]
    fn roll_instance(&self) -> Option<Injection<'_>> {
        if !self.state.is_enabled() {
            return None;
        }
        let draw = self.state.draw()?;
        Some(Injection { state: &self.state, draw })
    }

    /// Whether any instance of the process injects: the generated code's pass-path test (one
    /// relaxed load of a static, one branch), before [`inject`](Self::inject) or
    /// [`inject_async`](Self::inject_async).
    #[inline(always)]
    pub fn anywhere() -> bool {
        enabled_anywhere()
    }

    /// A blocking call's injection, out of line: the draw's delay on the registry's clock, then
    /// its fault (made by `make`) to return instead of calling the delegate.
    #[cold]
    #[inline(never)]
    pub fn inject<E>(&self, make: fn(&str) -> Option<E>) -> Option<E> {
        let injection = self.roll_instance()?;
        injection.delay();
        injection.fault(make)
    }

    /// An async call's injection: a small future (the delay boxed, only when there is one) that
    /// gives the fault to return instead of calling the delegate.
    #[cold]
    #[inline(never)]
    pub fn inject_async<E>(&self, make: fn(&str) -> Option<E>) -> InjectAsync<'_, E> {
        let injection = self.roll_instance();
        let delay = injection.and_then(|i| i.delay_boxed());
        InjectAsync { injection, delay, make }
    }
}

/// The future of [`ChaosPolicy::inject_async`]: the delay, then the fault.
#[must_use = "futures do nothing unless polled"]
pub struct InjectAsync<'a, E> {
    injection: Option<Injection<'a>>,
    delay: Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>,
    make: fn(&str) -> Option<E>,
}

impl<E> std::fmt::Debug for InjectAsync<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InjectAsync").field("injection", &self.injection).finish_non_exhaustive()
    }
}

impl<E> Future for InjectAsync<'_, E> {
    type Output = Option<E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        if let Some(delay) = &mut self.delay {
            ready!(delay.as_mut().poll(cx));
            self.delay = None;
        }
        let make = self.make;
        Poll::Ready(self.injection.take().and_then(|i| i.fault(make)))
    }
}

/// What one call is injected with (the generated code's, or a pipeline's): first the delay, then
/// the fault instead of the delegate.
#[derive(Clone, Copy, Debug)]
pub struct Injection<'a> {
    state: &'a ChaosState,
    draw: Draw,
}

impl<'a> Injection<'a> {
    /// Delays a blocking call on the registry's clock (a shut-down registry ends it early).
    #[cold]
    pub fn delay(&self) {
        if self.draw.latency > 0 {
            let latency = self.state.latency_started(self.draw.latency);
            let _ = self.state.timer.sleep(latency);
        }
    }

    /// Delays an async call on the registry's clock. On a clock that cannot wait in a future (no
    /// `tokio`), the delay is skipped: building an async site with a latency is `R4C-REG-010`
    /// there, and a live change cannot make a call panic.
    pub async fn delay_async(&self) {
        if let Some(delay) = self.delay_boxed() {
            delay.await;
        }
    }

    /// The delay as a boxed future, counted and published when it is first polled; `None` when
    /// this call gets no delay (or the clock cannot wait in a future).
    pub(crate) fn delay_boxed(self) -> Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>> {
        if self.draw.latency == 0 || !self.state.timer.can_sleep_async() {
            return None;
        }
        Some(Box::pin(async move {
            let latency = self.state.latency_started(self.draw.latency);
            let _ = self.state.timer.sleep_async(latency).await;
        }))
    }

    /// The fault to return instead of calling the delegate, made by `make` from its name, counted
    /// and published; `None` when this call gets no fault.
    #[cold]
    pub fn fault<E>(&self, make: fn(&str) -> Option<E>) -> Option<E> {
        let fault = self.make_fault(make)?;
        self.fault_injected();
        Some(fault)
    }

    /// The fault made, not yet counted (a pipeline's async attempt decides before its delay
    /// whether to call the closure, and counts the fault after it).
    pub(crate) fn make_fault<E>(&self, make: fn(&str) -> Option<E>) -> Option<E> {
        match self.draw.fault {
            true => self.state.make_fault(make),
            false => None,
        }
    }

    /// Counts and publishes the fault [`make_fault`](Self::make_fault) made.
    pub(crate) fn fault_injected(&self) {
        self.state.fault_injected();
    }
}

policy_kind! {
    ChaosPolicy {
        builder: ChaosConfigBuilder,
        state: ChaosState,
        event: ChaosEvent,
        snapshot: ChaosSnapshot,
        metrics: ChaosMetrics,
    }

    /// An async site that may be delayed needs a clock that can wait in a future.
    fn check(inner: &Inner, id: &str, is_async: bool, c: &ChaosConfig) -> Result<(), RegistryError> {
        inner.require_async_clock_if(is_async && c.latency_rate > 0.0 && !c.latency.is_zero(), id, "this async method may be delayed by chaos")
    }

    fn new_state(inner: &Inner, instance: Arc<str>, config: ChaosConfig, events: Publisher<ChaosEvent>) -> ChaosState {
        ChaosState::new(instance, config, Arc::clone(&inner.timer), inner.seed, events)
    }

    /// A live update's `fault` must be a unit variant of every error type injecting here.
    fn check_live(state: &ChaosState, config: &ChaosConfig) -> Result<(), RegistryError> {
        state.check_fault(config)
    }

    /// Every key changes live: the switch, the rates, the fault, the latency, and the seed (which
    /// restarts the sequence).
    fn reconfigure(state: &ChaosState, config: ChaosConfig) {
        state.apply(config);
    }
}
