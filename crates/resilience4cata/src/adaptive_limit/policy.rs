//! The adaptive limit facade the generated code holds and takes a slot from; the instance's state
//! and the permit that reports the call's outcome back to the algorithm live in `state.rs`.

use std::future::Future;
use std::sync::Arc;

use super::state::AdaptiveLimitState;
pub use super::state::{AdaptiveLimitPermit, Outcome};
use super::{AdaptiveLimitConfig, AdaptiveLimitConfigBuilder, AdaptiveLimitEvent, AdaptiveLimitSnapshot};
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::kit::{Fixed, Inner, policy_kind};
use crate::pass_or::PassOr;
use crate::rejection::Rejection;

/// The field the generated code keeps for one method with an adaptive limit.
#[derive(Clone, Debug)]
pub struct AdaptiveLimitPolicy {
    state: Arc<AdaptiveLimitState>,
}

impl AdaptiveLimitPolicy {
    pub(crate) fn new(state: Arc<AdaptiveLimitState>) -> Self {
        AdaptiveLimitPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Takes a slot, parking the thread up to `max_wait` for one; otherwise
    /// `Rejection::LimitExceeded`. Finish the permit with the call's outcome.
    #[inline]
    pub fn acquire(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        match self.state.pass() {
            Some(permit) => Ok(permit),
            None => self.acquire_slow(),
        }
    }

    /// Past the pass path, sync: a disabled limit's empty permit, a refusal, or the wait.
    #[cold]
    #[inline(never)]
    fn acquire_slow(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        self.state.decide_slow().unwrap_or_else(|| self.state.wait())
    }

    /// The async form of [`acquire`](Self::acquire): waits in the future, blocks no thread.
    ///
    /// The pass path runs when this is *called*, before any future exists: a free slot is taken
    /// then, and the future is ready on its first poll; a refusal and the wait for a slot run in
    /// the future. The generated code awaits the call at once, so the two moments are the same; a
    /// future dropped unpolled gives its slot back as an unfinished permit does.
    #[inline(always)]
    pub fn acquire_async(
        &self,
    ) -> PassOr<AdaptiveLimitPermit<'_>, impl Future<Output = Result<AdaptiveLimitPermit<'_>, Rejection>> + Send + '_>
    {
        match self.state.pass() {
            Some(permit) => PassOr::Passed { permit },
            None => PassOr::Slow { future: self.acquire_slow_async() },
        }
    }

    /// Past the pass path, async: a disabled limit's empty permit, a refusal, or the wait.
    async fn acquire_slow_async(&self) -> Result<AdaptiveLimitPermit<'_>, Rejection> {
        match self.state.decide_slow() {
            Some(decided) => decided,
            None => self.state.wait_async().await,
        }
    }
}

policy_kind! {
    AdaptiveLimitPolicy {
        builder: AdaptiveLimitConfigBuilder,
        state: AdaptiveLimitState,
        event: AdaptiveLimitEvent,
        snapshot: AdaptiveLimitSnapshot,
        metrics: AdaptiveLimitMetrics,
    }

    fn check(inner: &Inner, id: &str, is_async: bool, c: &AdaptiveLimitConfig) -> Result<(), RegistryError> {
        inner.require_async_clock_if(is_async && c.enabled && !c.max_wait.is_zero(), id, "this async method may wait for an adaptive limit slot")
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: AdaptiveLimitConfig,
        events: Publisher<AdaptiveLimitEvent>,
    ) -> AdaptiveLimitState {
        AdaptiveLimitState::new(instance, config, Arc::clone(&inner.timer), events)
    }

    fn reconfigure(state: &AdaptiveLimitState, config: AdaptiveLimitConfig) {
        state.reconfigure(config);
    }

    fn fixed_key(old: &AdaptiveLimitConfig, new: &AdaptiveLimitConfig) -> Option<Fixed> {
        super::state::fixed_key(old, new)
    }
}

impl crate::kit::AtRest for AdaptiveLimitPolicy {
    fn at_rest(&self) -> bool {
        self.state.at_rest()
    }
}

/// Keyable (SPEC §15): the instance as a whole sums its keys' calls in flight and waiting; its limit is its most recently used key's.
impl crate::kit::KeyedKind for AdaptiveLimitPolicy {
    fn state(&self) -> &Arc<AdaptiveLimitState> {
        &self.state
    }

    fn max_keys(config: &AdaptiveLimitConfig) -> u32 {
        config.max_keys
    }

    fn key_metrics(config: &AdaptiveLimitConfig) -> bool {
        config.key_metrics
    }

    fn whole(
        of: AdaptiveLimitSnapshot,
        counts: crate::kit::KeyCounts,
        keys: &[AdaptiveLimitSnapshot],
    ) -> AdaptiveLimitSnapshot {
        AdaptiveLimitSnapshot {
            keys: counts.keys,
            evicted: counts.evicted,
            keys_exhausted: counts.exhausted,
            in_flight: keys.iter().map(|k| k.in_flight).sum(),
            waiting: keys.iter().map(|k| k.waiting).sum(),
            ..of
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn limit(clock: &ManualClock, config: AdaptiveLimitConfig) -> AdaptiveLimitPolicy {
        let timer = Arc::new(Clock::from(clock).into_timer());
        let instance: Arc<str> = "al".into();
        let events = Publisher::detached(&[], &instance);
        AdaptiveLimitPolicy::new(Arc::new(AdaptiveLimitState::new(instance, config, timer, events)))
    }

    /// Async tasks on two runtime threads, a fixed limit of 2 and short waits on the manual clock:
    /// refusals at a deadline race slots freed and waiters woken all the time. Never more than 2
    /// inside, every call accounted for, nothing left taken or waiting.
    #[test]
    fn stress_async_waiters_never_exceed_the_limit() {
        const MAX: u32 = 2;
        let clock = ManualClock::new();
        let config = AdaptiveLimitConfig {
            min_limit: MAX,
            initial_limit: MAX,
            max_limit: MAX,
            max_wait: Duration::from_millis(3),
            ..AdaptiveLimitConfig::default()
        };
        let policy = Arc::new(limit(&clock, config));
        let inside = Arc::new(AtomicU32::new(0));
        let (passed, refused) = {
            let policy = Arc::clone(&policy);
            crate::stress::stress_async(move |t, i| {
                let (policy, inside) = (Arc::clone(&policy), Arc::clone(&inside));
                async move {
                    let Ok(permit) = policy.acquire_async().await else {
                        return false;
                    };
                    assert!(inside.fetch_add(1, Ordering::SeqCst) < MAX, "more than {MAX} inside");
                    let work = Duration::from_micros(u64::from((i * 7 + t) % 5) * 900);
                    policy.state.timer.sleep_async(work).await.unwrap();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    permit.finish(if i % 4 == 0 { Outcome::Dropped } else { Outcome::Success });
                    true
                }
            })
        };
        assert_eq!(passed + refused, 1_800);
        assert!(passed > 0 && refused > 0, "both outcomes happen: {passed} passed, {refused} refused");
        let s = policy.state.snapshot();
        assert_eq!((s.limit, s.in_flight, s.waiting), (MAX, 0, 0));
    }

    #[test]
    fn shutdown_ends_waits_with_a_refusal() {
        let clock = ManualClock::new();
        let config = AdaptiveLimitConfig {
            initial_limit: 1,
            max_limit: 1,
            max_wait: Duration::from_secs(1),
            ..AdaptiveLimitConfig::default()
        };
        let policy = limit(&clock, config);
        let _held = policy.acquire().unwrap();
        policy.state.timer.shut_down();
        assert!(matches!(policy.acquire(), Err(Rejection::LimitExceeded { .. })));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(matches!(rt.block_on(policy.acquire_async()), Err(Rejection::LimitExceeded { .. })));
        assert_eq!(policy.state.snapshot().waiting, 0);
    }
}
