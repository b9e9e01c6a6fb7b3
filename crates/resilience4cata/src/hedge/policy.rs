//! The hedge instance the generated code runs an async method's attempts through.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use super::race::race;
use super::state::HedgeState;
use super::{HedgeConfig, HedgeConfigBuilder, HedgeEvent, HedgeSnapshot};
use crate::error::{RegistryError, async_only};
use crate::events::Publisher;
use crate::registry::{Inner, policy_kind};

/// The field the generated code keeps for one hedged method (and a pipeline for its hedge).
#[derive(Clone, Debug)]
pub struct HedgePolicy {
    state: Arc<HedgeState>,
}

impl HedgePolicy {
    pub(crate) fn new(state: Arc<HedgeState>) -> Self {
        HedgePolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Runs one call: `attempt()` makes each attempt's future (each passes the inner policies on
    /// its own), `stops(&error)` says whether a failure is a `CallNotPermitted`, which starts no
    /// further attempt.
    ///
    /// The first attempt is polled in place before anything else exists: one that is ready on its
    /// first poll costs that poll and nothing more. Only when it returns `Pending` is the delay's
    /// timer created; extra attempts are boxed as they start. The first `Ok` is returned and every
    /// other attempt dropped with the call's future; when every attempt failed, the failure of the
    /// one that finished last.
    #[inline]
    pub async fn run<T, E, F, Fut>(&self, mut attempt: F, stops: impl Fn(&E) -> bool) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let state = &*self.state;
        if !state.config.enabled {
            return attempt().await;
        }
        let mut first = pin!(Some(attempt()));
        let polled = poll_fn(|cx| Poll::Ready(first.as_mut().as_pin_mut().map_or(Poll::Pending, |f| f.poll(cx)))).await;
        match polled {
            Poll::Ready(Ok(value)) => Ok(value),
            Poll::Ready(Err(error)) => {
                first.set(None);
                race(state, first, Some(error), &mut attempt, &stops).await
            }
            Poll::Pending => race(state, first, None, &mut attempt, &stops).await,
        }
    }

    /// [`run`](HedgePolicy::run), also counting into `attempts` every attempt started (a refused
    /// one included): what a fallback outside the hedge reports as `FallbackContext::attempts`.
    #[inline]
    pub async fn run_counting<T, E, F, Fut>(
        &self,
        attempts: &mut u32,
        mut attempt: F,
        stops: impl Fn(&E) -> bool,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let counted = || {
            *attempts += 1;
            attempt()
        };
        self.run(counted, stops).await
    }

    /// `max_hedged_attempts` when the hedge is enabled.
    #[cfg(feature = "tower")]
    pub(crate) fn extra_attempts(&self) -> Option<u32> {
        let config = &self.state.config;
        config.enabled.then_some(config.max_hedged_attempts)
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> &HedgeState {
        &self.state
    }
}

policy_kind! {
    HedgePolicy {
        builder: HedgeConfigBuilder,
        state: HedgeState,
        event: HedgeEvent,
        snapshot: HedgeSnapshot,
        metrics: HedgeMetrics,
    }

    /// Attempts side by side need a future: `R4C-REG-001` on a blocking method, before anything is
    /// resolved.
    fn admit(id: &str, is_async: bool) -> Result<(), RegistryError> {
        async_only(id, is_async, "a hedge needs an async method: its attempts run side by side inside one future")
    }

    fn check(inner: &Inner, id: &str, _: bool, c: &HedgeConfig) -> Result<(), RegistryError> {
        inner.require_async_clock_if(c.enabled, id, "this async method hedges its attempts")
    }

    fn new_state(inner: &Inner, instance: Arc<str>, config: HedgeConfig, events: Publisher<HedgeEvent>) -> HedgeState {
        HedgeState::new(instance, config, Arc::clone(&inner.timer), events)
    }
}
