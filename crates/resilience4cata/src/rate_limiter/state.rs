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
//!
//! # The coarse clock and the burst
//!
//! The pass path reads the coarse clock, a reading `c` that trails real time `t` by at most `lag`
//! (`c ≤ t ≤ c + lag`). It judges the call at `c`, the earliest `t` can be, and dates the permit at
//! `c + lag`, the latest: `TAT' = max(TAT, c + lag) + T`, admitted when `TAT' − c ≤ τ`. Both err
//! towards fewer calls, so the stored TAT is never earlier than the TAT exact GCRA would have
//! reached with the same permits at their real times (*the stored TAT is an upper bound*), and
//! whatever the pass path admits, exact GCRA admits too.
//!
//! Alone, the two errs add up: a burst that starts on a full bucket is dated `lag` late *and*
//! judged up to `lag` early, so its last permit looks `lag` over the tolerance (`c + lag + permits × T
//! − c > τ`) and a limiter of 5 per second would pass 4 calls in a row, then refuse the 5th until
//! real time caught up with the date. The exact re-decision alone does not help: it sees the TAT
//! dated `lag` late, as the pass path left it.
//!
//! So the limiter remembers where the last burst on a full bucket started. When the pass path takes
//! a permit from a TAT at or below its reading (`TAT ≤ c`: the bucket was full at `c`, so full at
//! the real time too), it stores the date it used, `origin = c + lag`, beside the TAT (`Release`,
//! after its compare-and-set). A call the pass path refused is decided again on the exact clock `e`
//! (`Acquire` on `origin`, then the TAT), which judges it at `max(e, origin)` instead of `e`:
//! permitted when `max(TAT, e) + T − max(e, origin) ≤ τ`, that is when `e` alone allows it (exact
//! GCRA) or when the burst since `origin`, this call included, is at most `permits` deep. Why that
//! never loosens the bound:
//!
//! - Every permit since the burst's start moved the TAT on by at least `T` (`max(TAT, x) + T`), and a
//!   permit given back moves it back by at most `T`; so with `k` permits net since the start,
//!   `TAT ≥ origin + k × T`, and the call's own permit makes `k + 1 ≤ (TAT' − origin) / T`.
//! - The burst started on a bucket full at its reading `c`: the TAT before it was at most `c`, and
//!   exact GCRA's at most that, while every call of the burst, this one included, runs at a real
//!   time `≥ c`. Let `t ≥ e` be this call's real time (its compare-and-set), the latest of the
//!   burst's. From a TAT at most `c ≤ t`, exact GCRA's TAT after `k + 1` permits at real times up to
//!   `t` is at most `t + (k + 1) × T` (by induction: `max(TAT, tᵢ) + T`), and the check makes
//!   `(k + 1) × T ≤ τ`: exact GCRA permits this call too.
//!
//! Every permit is thus one exact GCRA grants on the same calls at their real times, so its bound
//! holds over any real interval: at most `permits + L / T` calls in an interval of length `L`. The
//! rule does not need the lag to be kept (a ticker late beyond it loosens only the pass path's
//! dating, not this), and reads nothing the pass path does not write anyway: an origin from an
//! older burst, or the initial 0, gives a sound but stricter answer (its burst counts more permits),
//! so a stale `origin` can only refuse. The pass path pays one comparison, and a store only on the
//! permit that starts a burst (it judges `max(TAT, dated) ≤ now + (τ − T)` before it adds `T`,
//! which saves as much); the exact re-decision one load. What stays: after the burst, the next
//! permits come up to `lag` later than exact GCRA would give them (the dating), and a burst that
//! starts on a bucket refilled less than `lag` before the reading (`c < TAT ≤ c + lag`) is not
//! recorded, so its last permit may still wait up to `lag`.

use std::sync::Arc;
use std::time::Duration;

use crate::sync::Live;
use crate::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::shared::{LeasePool, Take};
use super::{RateLimiterConfig, RateLimiterEvent, RateLimiterSnapshot};
use crate::clock::{Interrupted, Timer, nanos};
use crate::events::{Publisher, publish};
use crate::fleet::Answer;
use crate::rejection::Rejection;

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
    /// `tolerance − interval`: how far after a reading a permit may start and still pass.
    slack: u64,
}

impl Gcra {
    pub(crate) fn new(config: &RateLimiterConfig) -> Self {
        let permits = u64::from(config.permits.max(1));
        let interval = nanos(config.period).div_ceil(permits).max(1);
        let tolerance = interval.saturating_mul(permits);
        Gcra { interval, tolerance, slack: tolerance - interval }
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

    /// [`decide`](Self::decide) for a call at `now`, an exact reading, on a TAT that the pass path
    /// may have dated late since a burst it started on a full bucket at `origin`: the call is
    /// permitted when `e` alone allows it or when it is judged at `max(now, origin)`, i.e. the
    /// burst since `origin`, this call included, is at most `permits` deep (module docs, "The
    /// coarse clock and the burst", for why that is never looser than exact GCRA). A wait or a
    /// refusal is decided at `now` alone.
    #[inline]
    pub(crate) fn decide_in_burst(&self, tat: u64, now: u64, origin: u64, max_wait: u64) -> (Decision, u64) {
        let next = tat.max(now).saturating_add(self.interval);
        if next.saturating_sub(now.max(origin)) <= self.tolerance {
            return (Decision::Permit, next);
        }
        self.decide(tat, now, max_wait)
    }

    /// The pass path's question, on a reading `now` that trails real time by at most `lag`, with
    /// `dated = now + lag` (`dated ≥ now`): may a call go without waiting, and to which TAT? The
    /// call is judged at `now`, the earliest it can be, and its permit dated at `now + lag`, the
    /// latest: a stale reading can only make the answer stricter and the TAT it leaves later, never
    /// looser. With `lag = 0`, the answer of [`decide`](Self::decide) with no `max_wait`, in fewer
    /// instructions: the permit starts at `max(TAT, dated)` and passes when that is at most `slack`
    /// after `now` (`next − now ≤ τ`, one subtraction fewer). Plain adds: the caller keeps
    /// `now + slack` below `u64::MAX` ([`PASS_TOLERANCE_BOUND`]), and then `next ≤ now + τ` too.
    #[inline(always)]
    fn permit_dated(&self, tat: u64, now: u64, dated: u64) -> Option<u64> {
        let start = tat.max(dated);
        (start <= now + self.slack).then(|| start + self.interval)
    }

    /// [`permit_dated`](Self::permit_dated) for any constants and any `dated` (`u64::MAX`: no
    /// ticker), saturating: `None` where a plain add could overflow.
    #[inline]
    fn permit_saturating(&self, tat: u64, now: u64, dated: u64) -> Option<u64> {
        let next = tat.max(dated).saturating_add(self.interval);
        (next - now <= self.tolerance).then_some(next)
    }

    /// [`permit_dated`](Self::permit_dated) with the date `now + lag` still to add, for the tests.
    #[cfg(test)]
    fn permit_now(&self, tat: u64, now: u64, lag: u64) -> Option<u64> {
        self.permit_dated(tat, now, now.saturating_add(lag))
    }

    /// Calls that could pass at `now` without waiting.
    pub(crate) fn available(&self, tat: u64, now: u64) -> u64 {
        let used = tat.saturating_sub(now).min(self.tolerance);
        (self.tolerance - used) / self.interval
    }
}

/// GCRA on one atomic TAT: lock-free, one compare-and-set per permitted call.
///
/// The constants are atomics too, so a live update (SPEC §16, [`reconfigure`](Self::reconfigure))
/// can change them. No decision mixes two versions: the update first swaps the TAT for
/// [`UPDATING`] (a decision that reads it refuses on the pass path and waits on the exact one),
/// then stores the constants, then stores the rescaled TAT, always a value other than the one it
/// replaced, with `Release`; a decision loads the TAT with `Acquire` before it reads the
/// constants and sets its new TAT with a compare-and-set that `Release`s. So a decision that read
/// a TAT from before the update reads old constants only, or fails its compare-and-set (the TAT
/// moved on) and decides again; one that read the update's TAT reads the new constants.
#[derive(Debug)]
pub(crate) struct AtomicGcra {
    interval: AtomicU64,
    tolerance: AtomicU64,
    /// `tolerance − interval`, at most [`PASS_TOLERANCE_BOUND`]: only the pass path reads it, which
    /// a larger `τ` never takes, so the bound changes no answer; it keeps `now + slack` (and the
    /// folded flag's refusal, [`PASS_OFF`]) free of overflow whatever the configuration.
    slack: AtomicU64,
    words: CachePadded<Words>,
}

/// The TAT while a live update changes the constants: no permit starts at it.
const UPDATING: u64 = u64::MAX;

/// The TAT and the origin of the last burst on a full bucket, on one cache line.
#[derive(Debug)]
struct Words {
    tat: AtomicU64,
    /// The date the pass path gave the first permit of the last burst it started on a full bucket
    /// (module docs, "The coarse clock and the burst"); 0, a burst at the clock's origin, at first.
    origin: AtomicU64,
}

impl AtomicGcra {
    pub(crate) fn new(config: &RateLimiterConfig) -> Self {
        let words = Words { tat: AtomicU64::new(0), origin: AtomicU64::new(0) };
        let Gcra { interval, tolerance, slack } = Gcra::new(config);
        AtomicGcra {
            interval: AtomicU64::new(interval),
            tolerance: AtomicU64::new(tolerance),
            slack: AtomicU64::new(slack.min(PASS_TOLERANCE_BOUND)),
            words: CachePadded::new(words),
        }
    }

    /// The constants, as a decision reads them (after its TAT).
    #[inline(always)]
    fn gcra(&self) -> Gcra {
        Gcra {
            interval: self.interval.load(Ordering::Relaxed),
            tolerance: self.tolerance.load(Ordering::Relaxed),
            slack: self.slack.load(Ordering::Relaxed),
        }
    }

    /// A live update to `config`'s constants at `now` (SPEC §16): the share of the burst in use is
    /// kept (`TAT − now` scaled from the old tolerance to the new one, so a limiter that spent its
    /// burst gets no fresh one and one that spent half keeps half), reservations beyond the burst
    /// keep their place, and the burst's origin is forgotten (a stricter judgement, never looser).
    /// Updates are serialised by the registry.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: &RateLimiterConfig, now: u64) {
        let next = Gcra::new(config);
        let tat = loop {
            let tat = self.words.tat.load(Ordering::Acquire);
            if tat == UPDATING {
                std::hint::spin_loop();
                continue;
            }
            if self.words.tat.compare_exchange_weak(tat, UPDATING, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                break tat;
            }
        };
        let old = self.gcra();
        let used = tat.saturating_sub(now);
        let in_burst = used.min(old.tolerance);
        let scaled = (u128::from(in_burst) * u128::from(next.tolerance) / u128::from(old.tolerance.max(1))) as u64;
        let mut rescaled = now.saturating_add(scaled).saturating_add(used - in_burst).min(UPDATING - 2);
        if rescaled == tat {
            // Another value than before, so no decision that read the old TAT completes its
            // compare-and-set on it: one nanosecond earlier (a permit at most 1 ns sooner; at the
            // clock's origin, 1 ns later).
            rescaled = if tat > 0 { tat - 1 } else { 1 };
        }
        self.interval.store(next.interval, Ordering::Relaxed);
        self.tolerance.store(next.tolerance, Ordering::Relaxed);
        self.slack.store(next.slack.min(PASS_TOLERANCE_BOUND), Ordering::Relaxed);
        self.words.origin.store(0, Ordering::Relaxed);
        self.words.tat.store(rescaled, Ordering::Release);
    }

    /// The pass path: takes a permit if one is free at `now`, a reading at most `lag` behind real
    /// time (one compare-and-set; see [`Gcra::permit_dated`]). The add saturates: `lag = u64::MAX`
    /// (no ticker) admits nothing.
    #[inline]
    pub(crate) fn try_acquire(&self, now: u64, lag: u64) -> bool {
        let dated = now.saturating_add(lag);
        self.take(now, dated, |tat| {
            let gcra = Gcra {
                interval: self.interval.load(Ordering::Relaxed),
                tolerance: self.tolerance.load(Ordering::Relaxed),
                slack: 0,
            };
            gcra.permit_saturating(tat, now, dated)
        })
    }

    /// [`try_acquire`](Self::try_acquire) with the date `now + lag` already added (`dated ≥ now`),
    /// for a caller that knows the adds cannot overflow: `now + lag` and `now + τ` below
    /// `u64::MAX` ([`PASS_LAG_BOUND`], [`PASS_TOLERANCE_BOUND`]). A TAT of [`UPDATING`] starts
    /// no permit here (`start ≤ now + slack` fails): the exact decision waits for the update.
    #[inline(always)]
    pub(crate) fn try_acquire_dated(&self, now: u64, dated: u64) -> bool {
        self.take(now, dated, |tat| {
            let gcra = Gcra {
                interval: self.interval.load(Ordering::Relaxed),
                tolerance: 0,
                slack: self.slack.load(Ordering::Relaxed),
            };
            gcra.permit_dated(tat, now, dated)
        })
    }

    /// The compare-and-set loop of the pass path, `permit` answering for each TAT seen. A permit
    /// taken from a bucket full at `now` (`TAT ≤ now`) starts a burst: its date is stored as the
    /// burst's origin, for the exact re-decision ([`acquire`](Self::acquire); module docs).
    #[inline(always)]
    fn take(&self, now: u64, dated: u64, permit: impl Fn(u64) -> Option<u64>) -> bool {
        match self.update_tat(|tat| permit(tat).map(|next| (next, ())).ok_or(())) {
            // `before` is the TAT replaced; compared from the instruction's own result, it needs
            // no copy.
            Ok((before, ())) => {
                if before <= now {
                    // After the compare-and-set: a reader that sees this origin sees its TAT.
                    self.words.origin.store(dated, Ordering::Release);
                }
                true
            }
            Err(()) => false,
        }
    }

    /// The compare-and-set loop on the TAT, written once for the pass path ([`take`](Self::take))
    /// and the exact decision ([`acquire`](Self::acquire)): `step` answers for each TAT seen with
    /// the TAT to leave and the answer (`Ok`: set it, then return the TAT it replaced beside the
    /// answer), or with the answer alone (`Err`: returned at once, the TAT unchanged). `step`
    /// reads the constants after the TAT (`Acquire`; see the type's docs).
    #[inline(always)]
    fn update_tat<T>(&self, mut step: impl FnMut(u64) -> Result<(u64, T), T>) -> Result<(u64, T), T> {
        let mut tat = self.words.tat.load(Ordering::Acquire);
        loop {
            let (next, answer) = step(tat)?;
            match self.words.tat.compare_exchange_weak(tat, next, Ordering::Release, Ordering::Acquire) {
                Ok(before) => return Ok((before, answer)),
                Err(current) => {
                    #[cfg(r4c_cas_count)]
                    crate::sync::cas_count::failed(crate::sync::cas_count::Word::RateLimiterTat);
                    tat = current;
                }
            }
        }
    }

    /// The TAT once no update is under way (the exact decisions wait out an update's few stores).
    #[inline]
    fn settled_tat(&self) -> u64 {
        loop {
            let tat = self.words.tat.load(Ordering::Acquire);
            if tat != UPDATING {
                return tat;
            }
            std::hint::spin_loop();
            #[cfg(all(test, loom))]
            loom::thread::yield_now();
        }
    }

    /// Decides for a call at `now`, an exact reading, and, unless it is refused, takes (or
    /// reserves) its permit. A call in a burst the pass path started on a full bucket is judged
    /// at the burst's origin when that is later than `now` ([`Gcra::decide_in_burst`]).
    pub(crate) fn acquire(&self, now: u64, max_wait: u64) -> Decision {
        self.settled_tat();
        // The origin first: its `Acquire` pairs with the pass path's `Release`, so the TAT read
        // next is at or after the compare-and-set that started the burst.
        let origin = self.words.origin.load(Ordering::Acquire);
        let decided = self.update_tat(|tat| {
            if tat == UPDATING {
                // An update began after the wait above: ask again once it is done.
                return Err(None);
            }
            match self.gcra().decide_in_burst(tat, now, origin, max_wait) {
                (refused @ Decision::Refuse(_), _) => Err(Some(refused)),
                (decision, next) => Ok((next, Some(decision))),
            }
        });
        match decided {
            Ok((_, Some(decision))) | Err(Some(decision)) => decision,
            Ok((_, None)) | Err(None) => self.acquire(now, max_wait),
        }
    }

    /// Raises the TAT to at least `tat` (a shared limiter that degrades continues from what its
    /// process used: `LeasePool::degrade`).
    pub(crate) fn hold_at_least(&self, tat: u64) {
        self.words.tat.fetch_max(tat, Ordering::Relaxed);
    }

    /// Calls that could pass at `now`, an exact reading, without waiting (judged as
    /// [`acquire`](Self::acquire) judges them).
    pub(crate) fn available(&self, now: u64) -> u64 {
        let tat = self.settled_tat();
        let origin = self.words.origin.load(Ordering::Acquire);
        self.gcra().available(tat, now.max(origin))
    }

    /// `permits × T`, the burst tolerance.
    fn tolerance(&self) -> u64 {
        self.tolerance.load(Ordering::Relaxed)
    }

    /// The TAT as it stands (the models).
    #[cfg(all(test, loom))]
    pub(crate) fn tat(&self) -> u64 {
        self.words.tat.load(Ordering::Acquire)
    }

    /// Gives back a permit taken (or reserved) earlier and never used: TAT moves back by one
    /// interval, but not below `now`, so a permit whose time has already passed gives back only
    /// what is left of it and the limiter never gains more than it lost.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn give_back(&self, now: u64) {
        let _ = self.words.tat.fetch_update(Ordering::Release, Ordering::Acquire, |tat| {
            let interval = self.interval.load(Ordering::Relaxed);
            (tat > now && tat != UPDATING).then(|| tat.saturating_sub(interval).max(now))
        });
    }
}

/// The largest coarse-clock lag the pass path dates permits with a plain add (one hour; the
/// system clock's is 2 ms, the manual clock's 0): a larger one, or none bounded (`u64::MAX`, no
/// ticker), takes `pass_other`, whose add saturates.
const PASS_LAG_BOUND: u64 = 3_600_000_000_000;

/// The largest burst tolerance (`permits × period / permits`, about the period) the pass path
/// judges with plain adds (2⁶² ns, 146 years): a larger one takes `pass_other`, whose arithmetic
/// saturates.
const PASS_TOLERANCE_BOUND: u64 = 1 << 62;

/// The pass path's lag while the pass path is off (disabled, shared, no bounded lag or `τ`): a
/// date `2⁶³` after the reading, which no permit can start by (`start ≤ now + slack` fails, the
/// slack being at most [`PASS_TOLERANCE_BOUND`]), so the pass path refuses before its
/// compare-and-set and the refusal takes [`pass_other`](RateLimiterState::pass_other). Folding
/// the "local" flag into the lag the pass path loads anyway saves its load, test and branch: an
/// atomic load is never folded into a compare (SPEC §16's budget, issue 25).
const PASS_OFF: u64 = 1 << 63;

/// The pass path's lag: the coarse clock's `lag` when the pass path is on, else [`PASS_OFF`].
fn pass_lag(local: bool, lag: u64) -> u64 {
    if local { lag } else { PASS_OFF }
}

/// A rate limiter instance's shared state: one per instance id.
#[derive(Debug)]
pub(crate) struct RateLimiterState {
    pub(crate) instance: Arc<str>,
    /// The resolved configuration as of the last update: the slow paths load it once each.
    pub(crate) config: Live<RateLimiterConfig>,
    pub(super) gcra: AtomicGcra,
    /// How far the coarse reading may trail real time (`Timer::coarse_lag`): the pass path dates
    /// its permits that much after the reading.
    pub(super) lag: u64,
    /// The timer's coarse reading (`Timer::coarse_cell`), kept here so the pass path reads it
    /// through one pointer instead of two.
    /// (std's atomic, as the clock's, also under loom.)
    coarse: Arc<CachePadded<std::sync::atomic::AtomicU64>>,
    /// `lag` while the pass path is on (enabled, not shared, a bounded `lag` and `τ`; a live
    /// update may change it), else [`PASS_OFF`]: the pass path dates its permits with it, and
    /// a refusal with `PASS_OFF` takes [`pass_other`](Self::pass_other).
    pass_lag: AtomicU64,
    max_wait: AtomicU64,
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
        let gcra = AtomicGcra::new(&config);
        RateLimiterState {
            // No ticker (`lag = u64::MAX`): the pass path could never admit, so every call goes
            // straight to the exact clock, as it would after the pass path's refusal. A lag of at
            // most `PASS_LAG_BOUND` and a tolerance of at most `PASS_TOLERANCE_BOUND` let the pass
            // path date and judge permits with plain adds.
            pass_lag: AtomicU64::new(pass_lag(
                config.enabled && lag <= PASS_LAG_BOUND && gcra.tolerance() <= PASS_TOLERANCE_BOUND,
                lag,
            )),
            gcra,
            lag,
            coarse: timer.coarse_cell(),
            max_wait: AtomicU64::new(nanos(config.max_wait)),
            instance,
            config: Live::new(config),
            timer,
            events,
            shared: None,
        }
    }

    /// Spends the fleet's permits through `pool` (`shared = true`), the local GCRA deciding
    /// while it is degraded.
    pub(super) fn share(&mut self, pool: Arc<LeasePool>) {
        self.shared = Some(pool);
        self.pass_lag = AtomicU64::new(PASS_OFF);
    }

    /// A live update (SPEC §16): the burst's used share is kept ([`AtomicGcra::reconfigure`]);
    /// a call already waiting for its reserved permit keeps its turn.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: RateLimiterConfig) {
        self.gcra.reconfigure(&config, self.timer.now());
        let local = config.enabled
            && self.shared.is_none()
            && self.lag <= PASS_LAG_BOUND
            && self.gcra.tolerance() <= PASS_TOLERANCE_BOUND;
        self.max_wait.store(nanos(config.max_wait), Ordering::Relaxed);
        self.config.store(config);
        self.pass_lag.store(pass_lag(local, self.lag), Ordering::Relaxed);
    }

    /// Fully replenished: forgetting this limiter (a keyed instance's key, SPEC §15) gives nobody
    /// a permit it would not have now. Reads the exact clock (the eviction path only).
    pub(crate) fn at_rest(&self) -> bool {
        self.gcra.available(self.timer.now()) >= u64::from(self.config.load().permits)
    }

    pub(crate) fn snapshot(&self) -> RateLimiterSnapshot {
        let available = match &self.shared {
            Some(pool) if !pool.is_degraded() => u64::from(pool.in_hand()),
            _ => self.gcra.available(self.timer.now()),
        };
        RateLimiterSnapshot {
            instance: Arc::clone(&self.instance),
            config: RateLimiterConfig::clone(&self.config.load()),
            available_permits: u32::try_from(available).unwrap_or(u32::MAX),
            keys: 0,
            evicted: 0,
            keys_exhausted: 0,
        }
    }

    /// The pass path: a permit at the coarse time (one atomic load, one CAS), or, when it is off
    /// ([`PASS_OFF`]: a disabled, shared or unticked limiter), [`pass_other`](Self::pass_other)
    /// after the refusal the off lag guarantees.
    #[inline(always)]
    pub(super) fn pass(&self) -> bool {
        let now = self.coarse.load(std::sync::atomic::Ordering::Relaxed);
        // No overflow: the lag is at most `PASS_LAG_BOUND` or `PASS_OFF` (2⁶³), the slack at most
        // `PASS_TOLERANCE_BOUND`, and a reading counts nanoseconds from the clock's origin (the
        // registry's start, or a manual clock's zero), far below `2⁶²`.
        if self.gcra.try_acquire_dated(now, now.wrapping_add(self.pass_lag.load(Ordering::Relaxed))) {
            self.permitted(Duration::ZERO);
            return true;
        }
        // Loaded again on the refusal alone: keeping the first load live across the
        // compare-and-set would cost the pass path a register.
        if self.pass_lag.load(Ordering::Relaxed) == PASS_OFF {
            return self.pass_other();
        }
        false
    }

    /// Whether the pass path is on (tests).
    #[cfg(test)]
    pub(super) fn pass_is_local(&self) -> bool {
        self.pass_lag.load(Ordering::Relaxed) != PASS_OFF
    }

    /// The pass path of the rest: disabled (passes), shared (a leased permit at the coarse time
    /// unless degraded), or the local GCRA at the coarse time (degraded, or no ticker).
    #[cold]
    #[inline(never)]
    fn pass_other(&self) -> bool {
        if !self.config.load().enabled {
            return true;
        }
        let now = self.timer.coarse_now();
        if let Some(pool) = &self.shared
            && !pool.is_degraded()
        {
            return pool.try_take(now) == Take::Taken && self.permitted_now();
        }
        self.degraded_floor(now);
        if self.gcra.try_acquire(now, self.lag) {
            self.permitted(Duration::ZERO);
            return true;
        }
        false
    }

    /// A shared limiter deciding locally continues from what its process used, without a burst
    /// (`LeasePool::local_floor`).
    #[inline]
    fn degraded_floor(&self, now: u64) {
        if let Some(pool) = &self.shared {
            self.gcra.hold_at_least(pool.local_floor(now));
        }
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
        let now = self.timer.now();
        self.degraded_floor(now);
        let decision = self.gcra.acquire(now, self.max_wait.load(Ordering::Relaxed));
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
            key: self.events.key(),
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
        self.events.refused();
        publish!(self.events, |m| m.rejected(), || RateLimiterEvent::Rejected {
            instance: Arc::clone(&self.instance),
            key: self.events.key(),
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
    fn a_burst_on_a_full_bucket_passes_whole_however_stale_the_reading() {
        // 5 per second, the coarse reading `stale` behind the exact one (at most `lag`): four
        // permits on the pass path, the fifth refused there (dated `lag` late, judged at the
        // reading) and permitted on the exact clock, judged at the burst's origin; the sixth refused
        // on both, and the bucket is full again a period after.
        let lag = 2 * MS;
        for stale in [0, 1, MS / 2, lag - 1, lag] {
            let l = limiter(5, 1000); // T = 200 ms
            for round in 0..3u64 {
                let exact = 10 * MS + round * 1_300 * MS;
                let coarse = exact - stale;
                let at = format!("stale {stale}, round {round}");
                for call in 0..4 {
                    assert!(l.try_acquire(coarse, lag), "call {call} on the pass path, {at}");
                }
                assert!(!l.try_acquire(coarse, lag), "{at}");
                assert_eq!(l.available(exact), 1, "{at}");
                assert_eq!(l.acquire(exact, 0), Decision::Permit, "the 5th on the exact clock, {at}");
                assert!(!l.try_acquire(coarse, lag), "{at}");
                // Refused until the origin's first permit is a period old: never looser than
                // exact GCRA, up to `lag` stricter.
                assert_eq!(l.acquire(exact, 0), Decision::Refuse(200 * MS + lag - stale), "{at}");
                assert_eq!(l.available(exact), 0, "{at}");
            }
        }
    }

    #[test]
    fn a_burst_the_pass_path_did_not_start_on_a_full_bucket_is_judged_exactly() {
        // The exact clock starts the burst (the pass path refused: a burst shallower than the lag)
        // and dates it exactly: no origin is needed, and none is stored.
        let l = limiter(2, 2); // T = 1 ms, τ = 2 ms
        assert!(!l.try_acquire(0, 2 * MS), "dated 2 ms late, a 2 ms burst cannot pass");
        assert_eq!(l.acquire(0, 0), Decision::Permit);
        assert_eq!(l.acquire(0, 0), Decision::Permit);
        assert_eq!(l.acquire(0, 0), Decision::Refuse(MS));
        assert_eq!(l.words.origin.load(Ordering::Relaxed), 0);
    }

    /// Real time moves by random steps; the coarse reading trails it by a random staleness up to
    /// `lag` (never moving back); calls come in random groups at one real time, each through the
    /// pass path and, refused there, the exact clock. Every permit must be one exact GCRA grants on
    /// the same permitted calls at their real times (so GCRA's bound over any real interval holds),
    /// and a group of at most `permits` calls on a bucket idle long enough that the reading finds
    /// it full passes whole.
    #[test]
    fn every_permit_is_one_exact_gcra_grants_and_an_idle_burst_passes_whole() {
        let lag = 2 * MS;
        for (permits, period_ms) in [(5, 1000), (3, 10), (10, 7), (2, 3), (1, 5), (50, 1000)] {
            for seed in 0..20 {
                let config =
                    RateLimiterConfig { permits, period: Duration::from_millis(period_ms), ..Default::default() };
                let (l, gcra) = (AtomicGcra::new(&config), Gcra::new(&config));
                let mut rng = fastrand::Rng::with_seed(seed);
                let (mut real, mut coarse, mut exact_tat) = (MS, 0, 0);
                let mut last_call = 0;
                for _ in 0..2_000 {
                    real += [0, MS / 7, MS, 3 * MS, period_ms * MS, (period_ms + 3) * MS][rng.usize(0..6)];
                    coarse = coarse.max(real.saturating_sub(rng.u64(0..=lag)));
                    // Idle for the tolerance and twice the lag: the reading finds the bucket full too.
                    let idle = real >= last_call + gcra.tolerance + 2 * lag;
                    let group = rng.u32(1..=permits + 1);
                    let mut passed = 0;
                    for _ in 0..group {
                        let permitted = l.try_acquire(coarse, lag) || l.acquire(real, 0) == Decision::Permit;
                        let (exact, next) = gcra.decide(exact_tat, real, 0);
                        if permitted {
                            assert_eq!(exact, Decision::Permit, "looser than exact GCRA at {real} (seed {seed})");
                            exact_tat = next;
                            passed += 1;
                        }
                    }
                    if idle {
                        assert_eq!(passed, group.min(permits), "an idle burst at {real}, {permits}/{period_ms} ms");
                    }
                    last_call = real;
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
