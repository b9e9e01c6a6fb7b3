//! The hedge instance the generated code runs an async method's attempts through.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use super::race::{first_poll, race};
use super::state::HedgeState;
use super::{HedgeConfig, HedgeConfigBuilder, HedgeEvent, HedgeSnapshot};
use crate::error::{RegistryError, async_only_policy};
use crate::events::Publisher;
use crate::kit::{Inner, policy_kind};

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
    ///
    /// Split as `TimeoutPolicy::run_pinned` is: the future's poll is always inlined (an `async`
    /// block marked `#[inline(always)]`, which an `async fn` cannot be) and holds only the common
    /// path, the first attempt's first poll (`first_poll`, whose poll is always inlined too). The
    /// race against the delay, for a first attempt that failed or is still pending after that
    /// poll, is a future of its own that is never inlined (`race`), so the caller's poll does not
    /// grow by the timer's code and the race's state. The figures are in `docs/benchmarks.md`
    /// (`user_hedge/ours_async`).
    #[inline(always)]
    pub fn run<T, E, F, Fut>(&self, mut attempt: F, stops: impl Fn(&E) -> bool) -> impl Future<Output = Result<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let state = &*self.state;
        #[inline(always)]
        async move {
            if !state.enabled.load(Ordering::Relaxed) {
                return attempt().await;
            }
            let mut first = pin!(Some(attempt()));
            match first_poll(first.as_mut()).await {
                Poll::Ready(Ok(value)) => Ok(value),
                Poll::Ready(Err(error)) => {
                    first.set(None);
                    race(state, first, Some(error), &mut attempt, &stops).await
                }
                Poll::Pending => race(state, first, None, &mut attempt, &stops).await,
            }
        }
    }

    /// [`run`](HedgePolicy::run), also counting into `attempts` every attempt started (a refused
    /// one included): what a fallback outside the hedge reports as `FallbackContext::attempts`.
    #[inline(always)]
    pub fn run_counting<T, E, F, Fut>(
        &self,
        attempts: &mut u32,
        mut attempt: F,
        stops: impl Fn(&E) -> bool,
    ) -> impl Future<Output = Result<T, E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let counted = move || {
            *attempts += 1;
            attempt()
        };
        self.run(counted, stops)
    }

    /// `max_hedged_attempts` when the hedge is enabled.
    #[cfg(feature = "tower")]
    pub(crate) fn extra_attempts(&self) -> Option<u32> {
        let config = self.state.config.load();
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

    // Attempts side by side need a future.
    async_only_policy!(
        HedgeConfig,
        blocking: "a hedge needs an async method: its attempts run side by side inside one future",
        waits: "this async method hedges its attempts",
    );

    fn new_state(inner: &Inner, instance: Arc<str>, config: HedgeConfig, events: Publisher<HedgeEvent>) -> HedgeState {
        HedgeState::new(instance, config, Arc::clone(&inner.timer), events)
    }

    fn reconfigure(state: &HedgeState, config: HedgeConfig) {
        state.reconfigure(config);
    }
}
