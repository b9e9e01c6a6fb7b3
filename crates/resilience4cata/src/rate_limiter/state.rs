//! The rate limiter's state machine: GCRA (the generic cell rate algorithm) on one atomic word.
//!
//! GCRA keeps a single number, the *theoretical arrival time* (TAT): the moment the limiter would be
//! empty again if calls kept arriving at exactly the sustained rate. With emission interval
//! `T = period / permits` (rounded up to a whole nanosecond, so the rate is never exceeded) and burst
//! tolerance `τ = permits × T`, a call at time `t` is conformant when `max(TAT, t) + T − t ≤ τ`, and
//! then moves TAT to `max(TAT, t) + T`. Starting from `TAT = 0` the limiter is full: `permits` calls
//! pass at once, then one per `T`. Over any interval of length `L`, at most `permits + L / T` calls
//! pass, so in one `period` up to `2 × permits − 1` (the saved-up burst plus the period's refill), as
//! with any token bucket of that size.
//!
//! A call that is not conformant yet may *reserve* its permit when the wait is within `max_wait`:
//! TAT moves as for a conformant call and the caller waits until its turn.

use std::sync::Arc;
use std::time::Duration;

use crate::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::{RateLimiterConfig, RateLimiterEvent, RateLimiterSnapshot};
use crate::clock::{Interrupted, Timer, nanos};
use crate::events::{Publisher, publish};
use crate::rejection::Rejection;
use crate::shared::{Answer, LeasePool, SharedPublisher, SharedStore, Take};

/// What GCRA decided for one call at one time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The call may go now.
    Permit,
    /// The call has a permit after waiting this many nanoseconds (within `max_wait`).
    Wait(u64),
    /// No permit within `max_wait`; one would be available after this many nanoseconds.
    Refuse(u64),
}

/// The constants of one limiter: emission interval and burst tolerance, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gcra {
    interval: u64,
    tolerance: u64,
}

impl Gcra {
    pub(crate) fn new(config: &RateLimiterConfig) -> Self {
        let permits = u64::from(config.permits.max(1));
        let interval = nanos(config.period).div_ceil(permits).max(1);
        Gcra { interval, tolerance: interval.saturating_mul(permits) }
    }

    /// The decision for a call at `now` given the current TAT, and the TAT it leaves behind.
    #[inline]
    pub(crate) fn decide(&self, tat: u64, now: u64, max_wait: u64) -> (Decision, u64) {
        let next = tat.max(now).saturating_add(self.interval);
        let conformant_at = next.saturating_sub(self.tolerance);
        if conformant_at <= now {
            return (Decision::Permit, next);
        }
        let wait = conformant_at - now;
        if wait <= max_wait { (Decision::Wait(wait), next) } else { (Decision::Refuse(wait), tat) }
    }

    /// The pass path's question, on a reading `now` that trails real time by at most `lag`: may a
    /// call go without waiting, and to which TAT? The call is judged at `now`, the earliest it can
    /// be, and its permit dated at `now + lag`, the latest: a stale reading can only make the answer
    /// stricter and the TAT it leaves later, never looser. With `lag = 0`, the answer of
    /// [`decide`](Self::decide) with no `max_wait`, in fewer instructions (`next ≥ now`).
    #[inline(always)]
    fn permit_now(&self, tat: u64, now: u64, lag: u64) -> Option<u64> {
        self.permit_dated(tat, now, now.saturating_add(lag))
    }

    /// [`permit_now`](Self::permit_now) with the date `now + lag` already added (`dated ≥ now`).
    #[inline(always)]
    fn permit_dated(&self, tat: u64, now: u64, dated: u64) -> Option<u64> {
        let next = tat.max(dated).saturating_add(self.interval);
        (next - now <= self.tolerance).then_some(next)
    }

    /// Calls that could pass at `now` without waiting.
    pub(crate) fn available(&self, tat: u64, now: u64) -> u64 {
        let used = tat.saturating_sub(now).min(self.tolerance);
        (self.tolerance - used) / self.interval
    }
}

/// GCRA on one atomic TAT: lock-free, one compare-and-set per permitted call.
#[derive(Debug)]
pub(crate) struct AtomicGcra {
    gcra: Gcra,
    tat: CachePadded<AtomicU64>,
}

impl AtomicGcra {
    pub(crate) fn new(config: &RateLimiterConfig) -> Self {
        AtomicGcra { gcra: Gcra::new(config), tat: CachePadded::new(AtomicU64::new(0)) }
    }

    /// The pass path: takes a permit if one is free at `now`, a reading at most `lag` behind real
    /// time (one compare-and-set; see [`Gcra::permit_now`]).
    #[inline(always)]
    pub(crate) fn try_acquire(&self, now: u64, lag: u64) -> bool {
        let mut tat = self.tat.load(Ordering::Relaxed);
        while let Some(next) = self.gcra.permit_now(tat, now, lag) {
            match self.tat.compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(current) => tat = current,
            }
        }
        false
    }

    /// [`try_acquire`](Self::try_acquire) with the date `now + lag` already added
    /// (`dated ≥ now`), for a caller that knows the add cannot overflow.
    #[inline(always)]
    pub(crate) fn try_acquire_dated(&self, now: u64, dated: u64) -> bool {
        let mut tat = self.tat.load(Ordering::Relaxed);
        while let Some(next) = self.gcra.permit_dated(tat, now, dated) {
            match self.tat.compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(current) => tat = current,
            }
        }
        false
    }

    /// Decides for a call at `now` and, unless it is refused, takes (or reserves) its permit.
    pub(crate) fn acquire(&self, now: u64, max_wait: u64) -> Decision {
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let (decision, next) = self.gcra.decide(tat, now, max_wait);
            if let Decision::Refuse(_) = decision {
                return decision;
            }
            match self.tat.compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return decision,
                Err(current) => tat = current,
            }
        }
    }

    /// Calls that could pass at `now` without waiting.
    pub(crate) fn available(&self, now: u64) -> u64 {
        self.gcra.available(self.tat.load(Ordering::Relaxed), now)
    }

    /// Gives back a permit taken (or reserved) earlier and never used: TAT moves back by one
    /// interval, but not below `now`, so a permit whose time has already passed gives back only
    /// what is left of it and the limiter never gains more than it lost.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn give_back(&self, now: u64) {
        let interval = self.gcra.interval;
        let _ = self.tat.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tat| {
            (tat > now).then(|| tat.saturating_sub(interval).max(now))
        });
    }
}

/// The largest coarse-clock lag the pass path dates permits with a plain add (one hour; the
/// system clock's is 2 ms, the manual clock's 0): a larger one, or none bounded (`u64::MAX`, no
/// ticker), takes `pass_other`, whose add saturates.
const PASS_LAG_BOUND: u64 = 3_600_000_000_000;

/// A rate limiter instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct RateLimiterState {
    pub(crate) instance: Arc<str>,
    pub(crate) config: RateLimiterConfig,
    pub(super) gcra: AtomicGcra,
    /// How far the coarse reading may trail real time (`Timer::coarse_lag`): the pass path dates
    /// its permits that much after the reading.
    pub(super) lag: u64,
    /// The timer's coarse reading (`Timer::coarse_cell`), kept here so the pass path reads it
    /// through one pointer instead of two.
    /// (std's atomic, as the clock's, also under loom.)
    coarse: Arc<CachePadded<std::sync::atomic::AtomicU64>>,
    /// Enabled, not shared, and a bounded `lag`, fixed once built: the one test before the pass
    /// path's GCRA. Every other case takes [`pass_other`](Self::pass_other).
    local: bool,
    max_wait: u64,
    pub(super) timer: Arc<Timer>,
    events: Publisher<RateLimiterEvent>,
    /// `shared = true`: the permits leased from the fleet (the local GCRA decides while degraded).
    shared: Option<Arc<LeasePool>>,
}

impl RateLimiterState {
    /// Starts the coarse-clock ticker (the pass path reads only the coarse clock).
    pub(crate) fn new(
        instance: Arc<str>,
        config: RateLimiterConfig,
        timer: Arc<Timer>,
        events: Publisher<RateLimiterEvent>,
    ) -> Self {
        timer.keep_coarse_fresh();
        let lag = timer.coarse_lag();
        RateLimiterState {
            gcra: AtomicGcra::new(&config),
            lag,
            coarse: timer.coarse_cell(),
            // No ticker (`lag = u64::MAX`): the pass path could never admit, so every call goes
            // straight to the exact clock, as it would after the pass path's refusal. A lag of at
            // most `PASS_LAG_BOUND` lets the pass path date permits with a plain add.
            local: config.enabled && lag <= PASS_LAG_BOUND,
            max_wait: nanos(config.max_wait),
            instance,
            config,
            timer,
            events,
            shared: None,
        }
    }

    /// Shares the instance through `store` (`shared = true`).
    pub(super) fn share(mut self, store: &dyn SharedStore, events: SharedPublisher) -> Self {
        let pool = LeasePool::new(
            Arc::clone(&self.instance),
            &self.config,
            store.store_timeout(),
            Arc::clone(&self.timer),
            events,
        );
        let pool = Arc::new(pool);
        store.share_rate_limiter(Arc::clone(&pool));
        self.shared = Some(pool);
        self.local = false;
        self
    }

    pub(crate) fn snapshot(&self) -> RateLimiterSnapshot {
        let available = match &self.shared {
            Some(pool) if !pool.is_degraded() => u64::from(pool.in_hand()),
            _ => self.gcra.available(self.timer.now()),
        };
        RateLimiterSnapshot {
            instance: Arc::clone(&self.instance),
            config: self.config.clone(),
            available_permits: u32::try_from(available).unwrap_or(u32::MAX),
        }
    }

    /// The pass path: a permit at the coarse time (one flag test, one atomic load, one CAS), or
    /// [`pass_other`](Self::pass_other) for a disabled, shared or unticked limiter.
    #[inline(always)]
    pub(super) fn pass(&self) -> bool {
        if !self.local {
            return self.pass_other();
        }
        let now = self.coarse.load(std::sync::atomic::Ordering::Relaxed);
        // No overflow: `lag ≤ PASS_LAG_BOUND`, and a reading counts nanoseconds from the clock's
        // origin (the registry's start, or a manual clock's zero), far below `u64::MAX − 1 h`.
        if self.gcra.try_acquire_dated(now, now.wrapping_add(self.lag)) {
            self.permitted(Duration::ZERO);
            return true;
        }
        false
    }

    /// The pass path of the rest: disabled (passes), shared (a leased permit at the coarse time
    /// unless degraded), or the local GCRA at the coarse time (degraded, or no ticker).
    #[cold]
    #[inline(never)]
    fn pass_other(&self) -> bool {
        if !self.config.enabled {
            return true;
        }
        let now = self.timer.coarse_now();
        if let Some(pool) = &self.shared
            && !pool.is_degraded()
        {
            return pool.try_take(now) == Take::Taken && self.permitted_now();
        }
        if self.gcra.try_acquire(now, self.lag) {
            self.permitted(Duration::ZERO);
            return true;
        }
        false
    }

    /// Past the pass path, sync: decide on the exact clock, wait on the caller's thread.
    #[cold]
    #[inline(never)]
    pub(super) fn acquire_slow(&self) -> Result<(), Rejection> {
        if let Some(pool) = &self.shared
            && let Some(shared) = self.fleet_answer(pool.wait_sync())
        {
            return shared;
        }
        match self.decide_exactly() {
            Decision::Permit => Ok(()),
            Decision::Wait(wait) => self.waited(wait, self.timer.sleep(Duration::from_nanos(wait))),
            Decision::Refuse(retry_after) => Err(self.refuse(retry_after)),
        }
    }

    /// Past the pass path, async: decide on the exact clock, wait in the future.
    pub(super) async fn acquire_slow_async(&self) -> Result<(), Rejection> {
        if let Some(pool) = &self.shared
            && let Some(shared) = self.fleet_answer(pool.wait_async().await)
        {
            return shared;
        }
        match self.decide_exactly() {
            Decision::Permit => Ok(()),
            Decision::Wait(wait) => self.waited(wait, self.timer.sleep_async(Duration::from_nanos(wait)).await),
            Decision::Refuse(retry_after) => Err(self.refuse(retry_after)),
        }
    }

    /// The coarse reading may lag, which only ever refuses: decide again on the exact clock, this
    /// time reserving a permit within `max_wait`.
    fn decide_exactly(&self) -> Decision {
        let decision = self.gcra.acquire(self.timer.now(), self.max_wait);
        if decision == Decision::Permit {
            self.permitted(Duration::ZERO);
        }
        decision
    }

    /// What the fleet decided for a call that found its lease empty; `None`: decide locally.
    fn fleet_answer(&self, answer: Answer) -> Option<Result<(), Rejection>> {
        match answer {
            Answer::Permit => {
                self.permitted(Duration::ZERO);
                Some(Ok(()))
            }
            Answer::Exhausted(retry_after) => Some(Err(self.refuse(retry_after))),
            Answer::Local => None,
        }
    }

    /// Publishes an unwaited permit; `true`, for the pass path's `&&`.
    #[inline]
    fn permitted_now(&self) -> bool {
        self.permitted(Duration::ZERO);
        true
    }

    #[inline]
    pub(super) fn permitted(&self, waited: Duration) {
        publish!(self.events, |m| m.permitted(), || RateLimiterEvent::Permitted {
            instance: Arc::clone(&self.instance),
            waited
        });
    }

    /// After the wait for a reserved permit: `Ok` unless shutdown cut it short (the reserved permit
    /// stays used: the limiter errs towards fewer calls).
    fn waited(&self, wait: u64, outcome: Result<(), Interrupted>) -> Result<(), Rejection> {
        match outcome {
            Ok(()) => {
                self.permitted(Duration::from_nanos(wait));
                Ok(())
            }
            Err(Interrupted) => Err(self.refuse(wait)),
        }
    }

    #[cold]
    pub(super) fn refuse(&self, retry_after: u64) -> Rejection {
        let retry_after = Duration::from_nanos(retry_after);
        publish!(self.events, |m| m.rejected(), || RateLimiterEvent::Rejected {
            instance: Arc::clone(&self.instance),
            retry_after
        });
        Rejection::RateLimitExceeded { instance: Arc::clone(&self.instance), retry_after }
    }

    /// Gives back a permit reserved ahead of its call and never used (see `AtomicGcra::give_back`).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(super) fn give_back(&self) {
        self.gcra.give_back(self.timer.now());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: u64 = 1_000_000;

    fn limiter(permits: u32, period_ms: u64) -> AtomicGcra {
        let config = RateLimiterConfig { permits, period: Duration::from_millis(period_ms), ..Default::default() };
        AtomicGcra::new(&config)
    }

    #[test]
    fn a_permit_given_back_can_be_taken_again_and_an_expired_one_adds_nothing() {
        let l = limiter(2, 100); // T = 50 ms
        assert_eq!((l.acquire(0, 0), l.acquire(0, 0)), (Decision::Permit, Decision::Permit));
        assert_eq!(l.acquire(0, 0), Decision::Refuse(50 * MS));
        l.give_back(0);
        assert_eq!(l.available(0), 1);
        assert_eq!(l.acquire(0, 0), Decision::Permit);
        // A reservation 50 ms ahead, given back: the next caller's wait is 50 ms again, not 100.
        assert_eq!(l.acquire(0, u64::MAX), Decision::Wait(50 * MS));
        l.give_back(0);
        assert_eq!(l.acquire(0, u64::MAX), Decision::Wait(50 * MS));
        // Long after every permit's time, giving one back creates no extra capacity.
        l.give_back(1_000 * MS);
        assert_eq!(l.available(1_000 * MS), 2);
    }

    #[test]
    fn burst_of_exactly_permits_then_one_per_interval() {
        let l = limiter(5, 100); // T = 20 ms
        assert_eq!(l.available(0), 5);
        for _ in 0..5 {
            assert_eq!(l.acquire(0, 0), Decision::Permit);
        }
        assert_eq!(l.acquire(0, 0), Decision::Refuse(20 * MS));
        assert_eq!(l.acquire(20 * MS - 1, 0), Decision::Refuse(1));
        assert_eq!(l.acquire(20 * MS, 0), Decision::Permit);
        assert_eq!(l.acquire(20 * MS, 0), Decision::Refuse(20 * MS));
        assert_eq!(l.available(40 * MS), 1);
    }

    /// Permits taken by calls made every millisecond from 0 to `ms` inclusive, as many at each
    /// millisecond as pass.
    fn permits_calling_every_ms(l: &AtomicGcra, ms: u64) -> u64 {
        let mut passed = 0;
        for step in 0..=ms {
            while l.acquire(step * MS, 0) == Decision::Permit {
                passed += 1;
            }
        }
        passed
    }

    #[test]
    fn sustained_rate_over_many_periods() {
        let l = limiter(10, 1000); // T = 100 ms
        assert_eq!(permits_calling_every_ms(&l, 10_000), 10 + 100, "the burst, then one per 100 ms for 10 s");
    }

    #[test]
    fn idle_limiter_refills_to_the_burst_and_no_further() {
        let l = limiter(3, 300);
        for _ in 0..3 {
            l.acquire(0, 0);
        }
        assert_eq!(l.available(150 * MS), 1);
        assert_eq!(l.available(300 * MS), 3);
        assert_eq!(l.available(10_000 * MS), 3);
    }

    #[test]
    fn reservations_wait_in_turn_within_max_wait() {
        let l = limiter(2, 100); // T = 50 ms
        assert_eq!(l.acquire(0, 60 * MS), Decision::Permit);
        assert_eq!(l.acquire(0, 60 * MS), Decision::Permit);
        assert_eq!(l.acquire(0, 60 * MS), Decision::Wait(50 * MS));
        assert_eq!(l.acquire(0, 60 * MS), Decision::Refuse(100 * MS), "the next slot is taken by the waiter");
        assert_eq!(l.acquire(0, 100 * MS), Decision::Wait(100 * MS));
        assert_eq!(l.available(0), 0);
    }

    #[test]
    fn uneven_interval_rounds_up_so_the_rate_is_never_exceeded() {
        let l = limiter(3, 1000); // T = 333_333_334 ns
        let passed = permits_calling_every_ms(&l, 3_000);
        assert_eq!(passed, 3 + 8, "3 s at 3/s after the burst, minus the rounding at the very end");
    }

    #[test]
    fn the_pass_path_answers_like_the_full_decision() {
        let gcra =
            Gcra::new(&RateLimiterConfig { permits: 3, period: Duration::from_millis(10), ..Default::default() });
        for tat in (0..40 * MS).step_by(MS as usize / 3) {
            for now in (0..40 * MS).step_by(MS as usize / 2) {
                let expected = match gcra.decide(tat, now, 0) {
                    (Decision::Permit, next) => Some(next),
                    _ => None,
                };
                assert_eq!(gcra.permit_now(tat, now, 0), expected, "tat {tat}, now {now}");
            }
        }
    }

    #[test]
    fn a_stale_reading_is_never_looser_than_the_exact_one() {
        // For one decision on the same state, a reading up to `lag` behind the exact time: whatever
        // it admits, the exact clock admits too, and the TAT it leaves is never earlier than the
        // exact decision's, so later calls are never brought forward (docs/reliability.md, "The
        // rate limiter and the coarse clock").
        let gcra =
            Gcra::new(&RateLimiterConfig { permits: 3, period: Duration::from_millis(10), ..Default::default() });
        let lag = MS;
        for tat in (0..40 * MS).step_by(MS as usize / 3) {
            for exact in (0..40 * MS).step_by(MS as usize / 2) {
                for stale in (exact.saturating_sub(lag)..=exact).step_by(MS as usize / 4) {
                    if let Some(dated) = gcra.permit_now(tat, stale, lag) {
                        let at = format!("tat {tat}, stale {stale}, exact {exact}");
                        let exactly = gcra.permit_now(tat, exact, 0).unwrap_or_else(|| panic!("looser: {at}"));
                        assert!(dated >= exactly, "dated early: {dated} < {exactly}, {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn stress_cas_loop_hands_out_exactly_the_permits() {
        let l = limiter(1000, 1000);
        let taken = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        if l.acquire(0, 0) == Decision::Permit {
                            taken.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(taken.load(Ordering::Relaxed), 1000);
    }
}
