//! The rate limiter's fleet link: the [`LeasePool`] a shared limiter spends permits from (see
//! [`crate::shared`] for how the pass path stays local and for the degraded mode).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::RateLimiterConfig;
use crate::clock::nanos;
use crate::fleet::{Answer, FleetPool, LinkParts};

/// Low bits of the pool word: the permits in hand; high bits: when they lapse, in units of
/// 2^`SHIFT` ns (about a millisecond) of the registry's clock.
const SHIFT: u32 = 20;
const COUNT: u64 = (1 << SHIFT) - 1;

/// What a shared limiter found in its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// A leased permit: the call may go.
    Taken,
    /// Nothing in hand.
    Empty,
}

/// The permits one process has leased from a shared rate limiter's fleet-wide quota, spent by the
/// pass path with local atomics and refilled by the store's background task.
///
/// The store's side of the contract: wait for [`wanted`](Self::wanted) (async) or
/// [`wait_wanted_blocking`](Self::wait_wanted_blocking), ask the fleet for
/// [`wanted_permits`](Self::wanted_permits), and answer with [`grant`](Self::grant) (zero permits
/// with the time until the fleet has one, when it has none); on trouble call
/// [`degrade`](Self::degrade), and [`recover`](Self::recover) when the store answers again.
pub struct LeasePool {
    /// The link, the wake-ups and the wait, as in every pool a store refills.
    fleet: FleetPool,
    permits: u32,
    period: Duration,
    lease: u32,
    /// Permits in hand (low bits) and when they lapse (high bits).
    word: AtomicU64,
    /// Registry-clock time until which the fleet said it has no permit (0: no such answer).
    exhausted_until: AtomicU64,
    /// The local limiter's emission interval (`period / permits`, rounded up), in nanoseconds.
    interval: u64,
    /// This process's use of the fleet's quota as a timeline without burst: every lease granted
    /// moves it to `max(it, now) + permits × interval`. Where the local limiter starts when the pool
    /// degrades: it continues from what the process was granted, with no saved-up burst.
    timeline: AtomicU64,
}

impl fmt::Debug for LeasePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasePool")
            .field("instance", &self.instance())
            .field("permits", &self.permits)
            .field("period", &self.period)
            .field("lease", &self.lease)
            .field("in_hand", &(self.word.load(Ordering::Relaxed) & COUNT))
            .field("degraded", &self.is_degraded())
            .finish_non_exhaustive()
    }
}

impl LeasePool {
    /// A pool that wants its first lease at once, before the first call. One key's pool of a keyed
    /// instance leases one permit at a time unless `lease` is set (SPEC §15: small per-key quotas
    /// stay exact).
    pub(crate) fn new(parts: LinkParts, config: &RateLimiterConfig) -> Self {
        let lease = match parts.key {
            Some(_) => config.lease.unwrap_or(1),
            None => config.lease(),
        };
        LeasePool {
            fleet: FleetPool::new(parts, crate::events::SharedPolicy::RateLimiter),
            permits: config.permits,
            period: config.period,
            lease,
            word: AtomicU64::new(0),
            exhausted_until: AtomicU64::new(0),
            interval: nanos(config.period).div_ceil(u64::from(config.permits.max(1))).max(1),
            timeline: AtomicU64::new(0),
        }
    }

    /// The instance id (the store's key is made from it).
    pub fn instance(&self) -> &str {
        self.fleet.link.instance()
    }

    /// The key's text when this pool is one key's of a keyed instance (SPEC §15; `None` unkeyed):
    /// the store keeps each key's fleet state under its own key.
    pub fn key(&self) -> Option<&str> {
        self.fleet.link.key()
    }

    /// The fleet-wide quota: `permits` per [`period`](Self::period).
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// The period of the quota; leased permits lapse one period after they are granted.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Permits per lease (`lease`, default `max(1, permits / 10)`).
    pub fn lease(&self) -> u32 {
        self.lease
    }

    /// Whether the pool decides on local state because the store could not be reached.
    pub fn is_degraded(&self) -> bool {
        self.fleet.is_degraded()
    }

    /// Permits in hand now (lapsed ones do not count).
    pub fn in_hand(&self) -> u32 {
        let word = self.word.load(Ordering::Relaxed);
        if (word >> SHIFT) <= self.fleet.timer.now() >> SHIFT { 0 } else { (word & COUNT) as u32 }
    }

    /// How many permits to ask the fleet for: enough to hold one lease again (at least one).
    pub fn wanted_permits(&self) -> u32 {
        self.lease.saturating_sub(self.in_hand()).max(1)
    }

    /// Waits until a refill is wanted, and takes the request (for the store's async task).
    pub fn wanted(&self) -> impl Future<Output = ()> + Send + '_ {
        self.fleet.wanted()
    }

    /// The blocking form of [`wanted`](Self::wanted), for a store that refills from a thread.
    pub fn wait_wanted_blocking(&self) {
        self.fleet.wait_wanted_blocking();
    }

    /// The store's answer to a request: `permits` granted (they lapse one period from now), or
    /// none, the fleet having its next permit after `retry_after`.
    pub fn grant(&self, permits: u32, retry_after: Duration) {
        let now = self.fleet.timer.now();
        if permits == 0 {
            self.exhausted_until.store(now.saturating_add(nanos(retry_after)).max(1), Ordering::Relaxed);
        } else {
            self.exhausted_until.store(0, Ordering::Relaxed);
            let charge = self.interval.saturating_mul(u64::from(permits));
            let _ = self
                .timeline
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(t.max(now).saturating_add(charge)));
            let lapse = now.saturating_add(nanos(self.period)) >> SHIFT;
            let mut word = self.word.load(Ordering::Relaxed);
            loop {
                let live = if (word >> SHIFT) > now >> SHIFT { word & COUNT } else { 0 };
                let count = (live + u64::from(permits)).min(COUNT);
                let new = (lapse << SHIFT) | count;
                match self.word.compare_exchange_weak(word, new, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(current) => word = current,
                }
            }
        }
        self.fleet.signal.answer();
    }

    /// The store could not answer: the pool decides locally until [`recover`](Self::recover).
    /// Publishes [`SharedStateEvent::Degraded`](crate::shared::SharedStateEvent::Degraded) once per
    /// outage. The local limiter continues from what this process was granted: its next permit
    /// comes when the process's leases, spread one permit per `period / permits`, are used up,
    /// then one per `period / permits`, never from a burst (neither one saved up while the fleet
    /// decided nor one saved up while degraded and idle: see `local_floor`).
    ///
    /// The permits in hand are dropped: the local limiter decides from now on, and permits the
    /// fleet granted before the outage are not spent after it on top of the local ones.
    pub fn degrade(&self) {
        if !self.is_degraded() {
            self.word.store(0, Ordering::Release);
        }
        self.fleet.degrade();
    }

    /// The TAT the local limiter must hold at least before it decides at `now`, while degraded or
    /// for a call the store did not answer in time: a permit when the process's granted leases
    /// are used up at one per interval (or at `now`, if that is past), then one per interval
    /// (GCRA: a permit at `resume` when TAT ≤ resume + τ − T). Held at every local decision, so
    /// the local limiter never bursts while it stands in for the fleet: each process admits at
    /// most `permits + 1` in any sliding period, and the fleet `processes × (permits + 1)` plus
    /// what was granted around the switch.
    #[inline]
    pub(crate) fn local_floor(&self, now: u64) -> u64 {
        let resume = self.timeline.load(Ordering::Acquire).max(now);
        let tolerance = self.interval.saturating_mul(u64::from(self.permits.max(1)));
        resume.saturating_add(tolerance - self.interval)
    }

    /// The store answers again: the pool is shared again. Publishes
    /// [`SharedStateEvent::Recovered`](crate::shared::SharedStateEvent::Recovered) if it was degraded.
    pub fn recover(&self) {
        self.fleet.recover();
    }

    /// The pass path: one leased permit at `now` (coarse), one compare-and-set. The call that
    /// leaves half a lease in hand asks for the next one.
    #[inline]
    pub(crate) fn try_take(&self, now: u64) -> Take {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let count = word & COUNT;
            if count == 0 || (word >> SHIFT) <= now >> SHIFT {
                return Take::Empty;
            }
            match self.word.compare_exchange_weak(word, word - 1, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => {
                    if count - 1 == u64::from(self.lease / 2) {
                        self.fleet.signal.want();
                    }
                    return Take::Taken;
                }
                Err(current) => word = current,
            }
        }
    }

    /// What a call that found the pool empty can decide now, without waiting.
    fn answer_now(&self, now: u64) -> Option<Answer> {
        if self.is_degraded() {
            return Some(Answer::Local);
        }
        if self.try_take(now) == Take::Taken {
            return Some(Answer::Permit);
        }
        let until = self.exhausted_until.load(Ordering::Relaxed);
        (until > now).then(|| Answer::Exhausted(until - now))
    }

    /// Past the pass path, sync: asks for a refill and parks up to the store timeout for it.
    pub(crate) fn wait_sync(&self) -> Answer {
        self.fleet.wait_sync(|| self.answer_now(self.fleet.timer.now()))
    }

    /// Past the pass path, async: asks for a refill and waits in the future up to the store
    /// timeout (on the system's monotonic time, as the network is).
    pub(crate) async fn wait_async(&self) -> Answer {
        self.fleet.wait_async(|| self.answer_now(self.fleet.timer.now())).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::events::Listeners;
    use crate::events::{SharedPolicy, SharedStateEvent};
    use crate::fleet::SharedPublisher;

    fn parts(clock: &ManualClock, listeners: &Listeners) -> LinkParts {
        LinkParts {
            instance: Arc::from("p"),
            key: None,
            outage: None,
            store_timeout: Duration::from_millis(25),
            timer: Arc::new(Clock::from(clock).into_timer()),
            events: SharedPublisher::new(listeners),
        }
    }

    fn pool(clock: &ManualClock, permits: u32, lease: u32) -> LeasePool {
        let config = RateLimiterConfig { permits, shared: true, lease: Some(lease), ..Default::default() };
        LeasePool::new(parts(clock, &Listeners::default()), &config)
    }

    #[test]
    fn leased_permits_are_spent_then_the_pool_is_empty() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        assert_eq!(pool.try_take(0), Take::Empty, "nothing leased yet");
        pool.grant(10, Duration::ZERO);
        assert_eq!(pool.in_hand(), 10);
        let taken = (0..20).filter(|_| pool.try_take(0) == Take::Taken).count();
        assert_eq!(taken, 10);
    }

    #[test]
    fn half_a_lease_left_asks_for_the_next_one_once() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        assert!(pool.fleet.signal.wanted.swap(false, Ordering::AcqRel), "the first lease is wanted at once");
        pool.grant(10, Duration::ZERO);
        for _ in 0..4 {
            pool.try_take(0);
        }
        assert!(!pool.fleet.signal.wanted.load(Ordering::Acquire), "6 in hand: not yet");
        pool.try_take(0);
        assert!(pool.fleet.signal.wanted.load(Ordering::Acquire), "5 in hand: half a lease");
        assert_eq!(pool.wanted_permits(), 5, "enough to hold one lease again");
    }

    #[test]
    fn unspent_permits_lapse_with_the_period() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        pool.grant(10, Duration::ZERO);
        clock.advance(Duration::from_millis(1_100));
        let now = nanos(clock.elapsed());
        assert_eq!(pool.try_take(now), Take::Empty);
        assert_eq!(pool.in_hand(), 0);
        pool.grant(3, Duration::ZERO);
        assert_eq!(pool.in_hand(), 3, "lapsed permits are not carried into a new lease");
    }

    #[test]
    fn an_empty_pool_waits_for_the_store_and_learns_the_fleet_is_out() {
        let clock = ManualClock::new();
        let pool = Arc::new(pool(&clock, 100, 10));
        let store = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                pool.wait_wanted_blocking();
                pool.grant(0, Duration::from_millis(40));
            })
        };
        assert_eq!(pool.wait_sync(), Answer::Exhausted(40_000_000));
        store.join().unwrap();
    }

    #[test]
    fn no_answer_within_the_store_timeout_decides_locally() {
        let clock = ManualClock::new();
        let pool = pool(&clock, 100, 10);
        let started = Instant::now();
        assert_eq!(pool.wait_sync(), Answer::Local);
        assert!(started.elapsed() >= Duration::from_millis(25));
    }

    #[test]
    fn degraded_and_recovered_are_published_once_per_outage() {
        let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
        let mut listeners = Listeners::default();
        let sink = Arc::clone(&seen);
        listeners.shared_state.push(Arc::new(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone())));
        let clock = ManualClock::new();
        let config = RateLimiterConfig { shared: true, ..Default::default() };
        let pool = LeasePool::new(parts(&clock, &listeners), &config);
        pool.degrade();
        pool.degrade();
        assert_eq!(pool.wait_sync(), Answer::Local, "degraded: decided locally at once");
        pool.recover();
        pool.recover();
        let instance: Arc<str> = Arc::from("p");
        assert_eq!(
            *seen.lock().unwrap(),
            [
                SharedStateEvent::Degraded { instance: Arc::clone(&instance), policy: SharedPolicy::RateLimiter },
                SharedStateEvent::Recovered { instance, policy: SharedPolicy::RateLimiter }
            ]
        );
    }
}
