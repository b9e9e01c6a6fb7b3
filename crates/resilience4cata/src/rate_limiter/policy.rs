//! The rate limiter instance the generated code asks for a permit before each attempt.

use std::future::Future;
use std::sync::Arc;
#[cfg(feature = "tower")]
use std::time::Duration;

use super::shared::LeasePool;
#[cfg(feature = "tower")]
use super::state::Decision;
use super::state::RateLimiterState;
use super::{RateLimiterConfig, RateLimiterConfigBuilder, RateLimiterEvent, RateLimiterSnapshot};
use crate::clock::Interrupted;
use crate::error::RegistryError;
use crate::events::Publisher;
use crate::fleet;
use crate::kit::{Fixed, Inner, policy_kind};
use crate::pass_or::PassOr;
use crate::rejection::Rejection;

/// The field the generated code keeps for one rate-limited method: asked for a permit before every
/// attempt (after the circuit breaker, so calls the breaker refuses take no permit).
#[derive(Clone, Debug)]
pub struct RateLimiterPolicy {
    state: Arc<RateLimiterState>,
}

impl RateLimiterPolicy {
    pub(crate) fn new(state: Arc<RateLimiterState>) -> Self {
        RateLimiterPolicy { state }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.state.instance
    }

    /// Takes a permit, waiting up to `max_wait` for one by blocking the thread on the registry's
    /// clock; otherwise `Rejection::RateLimitExceeded` with the time until the next permit.
    #[inline]
    pub fn acquire(&self) -> Result<(), Rejection> {
        if self.state.pass() { Ok(()) } else { self.state.acquire_slow() }
    }

    /// The async form of [`acquire`](Self::acquire): waits without blocking a thread. Dropping the
    /// future while it waits gives up the call; its reserved permit stays used.
    ///
    /// The pass path runs when this is *called*, before any future exists: a permit free at the
    /// coarse time is taken (and `Permitted` published) then, and the future is ready on its first
    /// poll; deciding on the exact clock and waiting run in the future. The generated code awaits
    /// the call at once, so the two moments are the same; a future dropped unpolled keeps its
    /// permit used, as a wait cut short does.
    #[inline(always)]
    pub fn acquire_async(&self) -> PassOr<(), impl Future<Output = Result<(), Rejection>> + Send + '_> {
        match self.state.pass() {
            true => PassOr::Passed { permit: () },
            false => PassOr::Slow { future: self.state.acquire_slow_async() },
        }
    }

    /// The pass path of [`acquire_async`](Self::acquire_async) alone, for the generated code:
    /// `true`, a permit was taken now (and `Permitted` published); `false`, the call must await
    /// [`acquire_slow_async`](Self::acquire_slow_async). An async method then builds no future on
    /// the pass path.
    #[doc(hidden)]
    #[inline(always)]
    pub fn pass_now(&self) -> bool {
        self.state.pass()
    }

    /// The rest of [`acquire_async`](Self::acquire_async) after [`pass_now`](Self::pass_now)
    /// said `false`: decide on the exact clock, wait in the future.
    #[doc(hidden)]
    pub fn acquire_slow_async(&self) -> impl Future<Output = Result<(), Rejection>> + Send + '_ {
        self.state.acquire_slow_async()
    }
}

/// A permit taken ahead of its call by a tower service under backpressure (`poll_ready`): handed
/// to the call's first attempt, which [`consume`](Self::consume)s it; given back to the limiter if
/// dropped unused (the service dropped, or the breaker refused the attempt).
#[derive(Debug)]
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) struct ReservedPermit {
    /// `None` for a disabled limiter, or once used.
    state: Option<Arc<RateLimiterState>>,
}

#[cfg_attr(not(feature = "tower"), allow(dead_code))]
impl ReservedPermit {
    /// The attempt goes ahead on this permit.
    #[inline]
    pub(crate) fn consume(mut self) {
        self.state = None;
    }
}

impl Drop for ReservedPermit {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.give_back();
        }
    }
}

/// The registry clock's wait for a reserved permit, owning the timer it borrows.
type Sleep = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupted>> + Send>>;

/// A tower service's reserved permit whose time has not come yet, and the wait for it.
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) struct PermitWait {
    permit: ReservedPermit,
    wait: u64,
    /// Boxed because the registry clock's sleep borrows the timer (this owns it); a `Mutex` only
    /// so the service stays `Sync`: it is reached through `get_mut`, never locked.
    sleep: std::sync::Mutex<Sleep>,
}

impl std::fmt::Debug for PermitWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitWait").field("permit", &self.permit).field("wait", &self.wait).finish_non_exhaustive()
    }
}

#[cfg(feature = "tower")]
impl RateLimiterPolicy {
    /// Backpressure for a tower service's `poll_ready`: a permit now, or the next one reserved
    /// (whatever `max_wait` says, as tower's `RateLimit`) and `Pending` until its time on the
    /// registry's clock (`waiting` keeps the reservation and its timer). The pass path is the one
    /// of [`acquire`](Self::acquire) and a reference count; only a wait allocates (its timer).
    /// `Registry::shutdown` ends a wait with `RateLimitExceeded`, giving the permit back.
    pub(crate) fn poll_reserve(
        &self,
        waiting: &mut Option<PermitWait>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<ReservedPermit, Rejection>> {
        use std::task::Poll;
        let state = &*self.state;
        if waiting.is_none() {
            if !state.config.load().enabled {
                return Poll::Ready(Ok(ReservedPermit { state: None }));
            }
            let reserved = ReservedPermit { state: Some(Arc::clone(&self.state)) };
            if state.gcra.try_acquire(state.timer.coarse_now(), state.lag) {
                state.permitted(Duration::ZERO);
                return Poll::Ready(Ok(reserved));
            }
            if state.timer.is_shut_down() {
                reserved.consume(); // nothing was taken
                return Poll::Ready(Err(state.refuse(0)));
            }
            let now = state.timer.now();
            match state.gcra.acquire(now, u64::MAX) {
                Decision::Permit => {
                    state.permitted(Duration::ZERO);
                    return Poll::Ready(Ok(reserved));
                }
                Decision::Wait(wait) => {
                    let timer = Arc::clone(&state.timer);
                    // An absolute deadline: the clock may move before the timer is first polled.
                    let due = now.saturating_add(wait);
                    let sleep = Box::pin(async move { timer.sleep_until_async(due).await });
                    *waiting = Some(PermitWait { permit: reserved, wait, sleep: std::sync::Mutex::new(sleep) });
                }
                Decision::Refuse(retry_after) => {
                    reserved.consume(); // nothing was taken
                    return Poll::Ready(Err(state.refuse(retry_after)));
                }
            }
        }
        let wait = waiting.as_mut().expect("set above");
        let sleep = wait.sleep.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let outcome = std::task::ready!(sleep.as_mut().poll(cx));
        let PermitWait { permit, wait, .. } = waiting.take().expect("polled above");
        Poll::Ready(match outcome {
            Ok(()) => {
                state.permitted(Duration::from_nanos(wait));
                Ok(permit)
            }
            Err(Interrupted) => Err(state.refuse(wait)), // the permit is given back as it drops
        })
    }
}

policy_kind! {
    RateLimiterPolicy {
        builder: RateLimiterConfigBuilder,
        state: RateLimiterState,
        event: RateLimiterEvent,
        snapshot: RateLimiterSnapshot,
        metrics: RateLimiterMetrics,
    }

    fn check(inner: &Inner, id: &str, is_async: bool, c: &RateLimiterConfig) -> Result<(), RegistryError> {
        inner.require_waits(id, is_async, (c.enabled, c.shared), c.max_wait, "this async method may wait for a rate limiter permit")
    }

    fn new_state(
        inner: &Inner,
        instance: Arc<str>,
        config: RateLimiterConfig,
        events: Publisher<RateLimiterEvent>,
    ) -> RateLimiterState {
        let store = inner.shared.as_deref();
        let (enabled, shared) = (config.enabled, config.shared);
        let pool = fleet::link(store, (enabled, shared), (&instance, events.key()), &inner.timer, &inner.listeners, |parts| {
            LeasePool::new(parts, &config)
        });
        let mut state = RateLimiterState::new(instance, config, Arc::clone(&inner.timer), events);
        if let Some(pool) = pool {
            state.share(pool);
        }
        state
    }

    fn reconfigure(state: &RateLimiterState, config: RateLimiterConfig) {
        state.reconfigure(config);
    }

    fn fixed_key(old: &RateLimiterConfig, new: &RateLimiterConfig) -> Option<Fixed> {
        fixed_key(old, new)
    }
}

/// The key of `new` a live update cannot change from `old` (SPEC §16): `shared` and `lease`; and,
/// on a shared instance, what its fleet link took when it was built (`enabled`, the fleet-wide
/// `permits` and `period`).
#[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
fn fixed_key(old: &RateLimiterConfig, new: &RateLimiterConfig) -> Option<Fixed> {
    if old.shared != new.shared {
        return Some(Fixed::Placement("shared"));
    }
    if old.lease != new.lease {
        return Some(Fixed::Placement("lease"));
    }
    if !old.shared {
        return None;
    }
    [
        ("enabled", old.enabled != new.enabled),
        ("permits", old.permits != new.permits),
        ("period", old.period != new.period),
    ]
    .into_iter()
    .find_map(|(key, changed)| changed.then_some(Fixed::Placement(key)))
}

impl crate::kit::AtRest for RateLimiterPolicy {
    fn at_rest(&self) -> bool {
        self.state.at_rest()
    }
}

/// Keyable (SPEC §15): the instance as a whole shows its most recently used key's permits.
impl crate::kit::KeyedKind for RateLimiterPolicy {
    fn state(&self) -> &Arc<RateLimiterState> {
        &self.state
    }

    fn max_keys(config: &RateLimiterConfig) -> u32 {
        config.max_keys
    }

    fn key_metrics(config: &RateLimiterConfig) -> bool {
        config.key_metrics
    }

    fn whole(
        of: RateLimiterSnapshot,
        counts: crate::kit::KeyCounts,
        keys: &[RateLimiterSnapshot],
    ) -> RateLimiterSnapshot {
        let _ = keys;
        RateLimiterSnapshot { keys: counts.keys, evicted: counts.evicted, keys_exhausted: counts.exhausted, ..of }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::task::Poll;
    use std::time::Duration;
    use testkit::block_on;

    use super::*;
    use crate::clock::{Clock, ManualClock, Timer};
    use crate::events::{Listener, recorder};
    use crate::rate_limiter::state::{Decision, Gcra};

    const MS: Duration = Duration::from_millis(1);

    fn limiter(clock: &ManualClock, permits: u32, period: Duration, max_wait: Duration) -> RateLimiterPolicy {
        limiter_with(clock, RateLimiterConfig { permits, period, max_wait, ..Default::default() }, &[])
    }

    fn limiter_with(
        clock: &ManualClock,
        config: RateLimiterConfig,
        listeners: &[Listener<RateLimiterEvent>],
    ) -> RateLimiterPolicy {
        let timer = Arc::new(Clock::from(clock).into_timer());
        RateLimiterPolicy::new(Arc::new(RateLimiterState::new(
            "rl".into(),
            config,
            timer,
            Publisher::detached(listeners, &"rl".into()),
        )))
    }

    fn retry_after(r: Result<(), Rejection>) -> Duration {
        match r {
            Err(Rejection::RateLimitExceeded { instance, retry_after }) => {
                assert_eq!(&*instance, "rl");
                retry_after
            }
            other => panic!("expected a rate limit refusal, got {other:?}"),
        }
    }

    #[test]
    fn refusal_says_when_the_next_permit_frees_up() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 4, 100 * MS, Duration::ZERO); // one permit per 25 ms
        for _ in 0..4 {
            rl.acquire().unwrap();
        }
        assert_eq!(retry_after(rl.acquire()), 25 * MS);
        clock.advance(10 * MS);
        assert_eq!(retry_after(rl.acquire()), 15 * MS);
        clock.advance(15 * MS);
        rl.acquire().unwrap();
        assert_eq!(rl.state.snapshot().available_permits, 0);
        assert_eq!(clock.elapsed(), 25 * MS, "a refusal never waits");
    }

    #[test]
    fn sync_wait_within_max_wait_is_granted_and_moves_the_clock() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 2, 100 * MS, 60 * MS); // one permit per 50 ms
        rl.acquire().unwrap();
        rl.acquire().unwrap();
        rl.acquire().unwrap();
        assert_eq!(clock.elapsed(), 50 * MS, "waited for the next permit");
        rl.acquire().unwrap();
        assert_eq!(clock.elapsed(), 100 * MS);
    }

    #[test]
    fn wait_beyond_max_wait_is_refused_at_once() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 1, 100 * MS, 99 * MS);
        rl.acquire().unwrap();
        assert_eq!(retry_after(rl.acquire()), 100 * MS);
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }

    #[test]
    fn async_waiters_reserve_their_turn() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 2, 100 * MS, 100 * MS); // one permit per 50 ms
        block_on(async {
            rl.acquire_async().await.unwrap();
            rl.acquire_async().await.unwrap();
            let (a, b) = tokio::join!(rl.acquire_async(), rl.acquire_async());
            a.unwrap();
            b.unwrap();
        });
        assert_eq!(clock.elapsed(), 100 * MS, "the waits resolved at 50 ms and 100 ms, in turn");
        assert_eq!(rl.state.snapshot().available_permits, 0);
        block_on(rl.acquire_async()).unwrap();
        assert_eq!(clock.elapsed(), 150 * MS);
    }

    #[test]
    fn a_dropped_async_wait_leaves_the_clock_and_keeps_the_permit_used() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 1, 100 * MS, 100 * MS);
        rl.acquire().unwrap();
        block_on(async {
            let mut wait = std::pin::pin!(rl.acquire_async());
            std::future::poll_fn(|cx| {
                assert!(wait.as_mut().poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
        });
        assert_eq!(clock.elapsed(), Duration::ZERO);
        assert_eq!(retry_after(rl.acquire()), 200 * MS, "the abandoned reservation still counts");
    }

    #[test]
    fn shutdown_refuses_a_wait() {
        let clock = ManualClock::new();
        let rl = limiter(&clock, 1, 100 * MS, 100 * MS);
        rl.acquire().unwrap();
        rl.state.timer.shut_down();
        assert_eq!(retry_after(rl.acquire()), 100 * MS);
    }

    #[test]
    fn disabled_limiter_lets_everything_through_and_publishes_nothing() {
        let clock = ManualClock::new();
        let seen = Arc::new(AtomicU64::new(0));
        let sink = Arc::clone(&seen);
        let listener: Listener<RateLimiterEvent> = Arc::new(move |_| {
            sink.fetch_add(1, Ordering::Relaxed);
        });
        let config = RateLimiterConfig { enabled: false, permits: 1, ..Default::default() };
        let rl = limiter_with(&clock, config, &[listener]);
        for _ in 0..100 {
            rl.acquire().unwrap();
        }
        assert_eq!(seen.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn events_per_call_when_listened() {
        let clock = ManualClock::new();
        let (seen, listener) = recorder::<RateLimiterEvent>();
        let config = RateLimiterConfig { permits: 1, period: 100 * MS, max_wait: 60 * MS, ..Default::default() };
        let rl = limiter_with(&clock, config, &[listener]);
        rl.acquire().unwrap();
        clock.advance(50 * MS);
        rl.acquire().unwrap();
        rl.acquire().unwrap_err();
        let instance: Arc<str> = "rl".into();
        assert_eq!(
            *seen.lock().unwrap(),
            [
                RateLimiterEvent::Permitted { instance: instance.clone(), key: None, waited: Duration::ZERO },
                RateLimiterEvent::Permitted { instance: instance.clone(), key: None, waited: 50 * MS },
                RateLimiterEvent::Rejected { instance, key: None, retry_after: 100 * MS },
            ]
        );
    }

    #[test]
    fn a_period_of_centuries_takes_the_saturating_path_and_still_counts() {
        // τ beyond `PASS_TOLERANCE_BOUND`: the plain adds of the pass path could overflow (a panic
        // in a debug build), so the saturating path decides; the burst is still exactly `permits`.
        let clock = ManualClock::new();
        let centuries = Duration::from_secs(300 * 365 * 24 * 3600);
        let rl = limiter(&clock, 2, centuries, Duration::ZERO);
        assert!(!rl.state.pass_is_local());
        clock.advance(5 * MS);
        rl.acquire().unwrap();
        rl.acquire().unwrap();
        assert!(retry_after(rl.acquire()) > Duration::from_secs(100 * 365 * 24 * 3600));
    }

    /// Real time is the manual clock's; the coarse reading trails it by up to `lag`, moved by a
    /// ticker every `lag` and by exact reads, as on the system clock. Calls arrive at random steps
    /// of `lag / 4` (idle stretches included: that is when the reading is stale); returns the real
    /// time of every call and whether it got a permit.
    fn calls_with_a_lagging_clock(permits: u32, period: Duration, lag: Duration, seed: u64) -> Vec<(u64, bool)> {
        let clock = ManualClock::new();
        let timer = Arc::new(Timer::lagging(&clock, lag));
        let config = RateLimiterConfig { permits, period, max_wait: Duration::ZERO, ..Default::default() };
        let events = Publisher::detached(&[], &"rl".into());
        let rl =
            RateLimiterPolicy::new(Arc::new(RateLimiterState::new("rl".into(), config, Arc::clone(&timer), events)));
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut calls = Vec::new();
        for n in 0..4_000u32 {
            if n % 4 == 0 {
                timer.tick();
            }
            for _ in 0..[0, 0, 0, 1, 2][rng.usize(0..5)] {
                calls.push((crate::clock::nanos(clock.elapsed()), rl.acquire().is_ok()));
            }
            clock.advance(lag / 4);
        }
        calls
    }

    /// GCRA's bound over every real interval: the permits granted at times `t_i ≤ … ≤ t_j` number
    /// at most `permits + (t_j − t_i) / T`.
    fn assert_gcra_bound(granted: &[u64], permits: u32, period: Duration) {
        let interval = crate::clock::nanos(period).div_ceil(u64::from(permits));
        for (i, &first) in granted.iter().enumerate() {
            for (k, &last) in granted[i..].iter().enumerate() {
                let calls = k as u64 + 1;
                let bound = u64::from(permits) + (last - first) / interval;
                assert!(calls <= bound, "{calls} permits in [{first}, {last}] ns, GCRA allows {bound}");
            }
        }
    }

    #[test]
    fn a_lagging_coarse_clock_never_lets_more_through_than_gcra_allows() {
        // docs/reliability.md, "The rate limiter and the coarse clock": the pass path decides on the
        // coarse reading but dates each permit `lag` after it, so over any real interval the count
        // stays within the exact bound (dated on the reading itself, an idle limiter's permit was
        // up to `lag` early and brought the next ones forward). A burst deeper than the lag (the
        // pass path admits an idle call on the coarse reading) and shallower ones (it cannot: the
        // exact clock decides).
        for (permits, period) in [(3, 4 * MS), (1, 2 * MS), (2, 3 * MS), (10, 7 * MS)] {
            for seed in 0..4 {
                let calls = calls_with_a_lagging_clock(permits, period, MS, seed);
                let granted: Vec<u64> = calls.iter().filter(|c| c.1).map(|c| c.0).collect();
                assert_gcra_bound(&granted, permits, period);
                // Not stricter than it must be: exact GCRA on the same arrivals grants at most a
                // lag's worth more.
                let gcra = Gcra::new(&RateLimiterConfig { permits, period, ..Default::default() });
                let mut tat = 0;
                let exact = calls.iter().filter(|&&(t, _)| match gcra.decide(tat, t, 0) {
                    (Decision::Permit, next) => {
                        tat = next;
                        true
                    }
                    _ => false,
                });
                let exact = exact.count();
                assert!(granted.len() * 10 >= exact * 9, "{} permits where exact GCRA gives {exact}", granted.len());
            }
        }
    }

    /// Threads hammer the limiter while the clock stands still; between rounds the clock moves by
    /// uneven steps. Every call of a round happens at the round's time, so the count is exact.
    #[test]
    fn stress_never_more_than_permitted_in_any_window() {
        const PERMITS: u64 = 7;
        let period = 70 * MS; // one permit per 10 ms
        let clock = ManualClock::new();
        let rl = limiter(&clock, PERMITS as u32, period, Duration::ZERO);
        let mut grants: Vec<(u64, u64)> = Vec::new(); // (time in ns, calls permitted at that time)
        for round in 0..200u64 {
            let permitted = AtomicU64::new(0);
            std::thread::scope(|s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        for _ in 0..50 {
                            if rl.acquire().is_ok() {
                                permitted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    });
                }
            });
            grants.push((crate::clock::nanos(clock.elapsed()), permitted.load(Ordering::Relaxed)));
            clock.advance(Duration::from_micros(1_000 + (round * 7_919) % 9_000));
        }
        let interval = crate::clock::nanos(period) / PERMITS;
        let total: u64 = grants.iter().map(|g| g.1).sum();
        let end = grants.last().unwrap().0;
        assert_eq!(total, PERMITS + end / interval, "saturated: the burst plus one permit per interval");
        for (i, &(start, _)) in grants.iter().enumerate() {
            let mut in_window = 0;
            for &(t, n) in &grants[i..] {
                in_window += n;
                let bound = PERMITS + (t - start) / interval;
                assert!(in_window <= bound, "{in_window} calls in [{start}, {t}] ns, bound {bound}");
            }
        }
    }
}
