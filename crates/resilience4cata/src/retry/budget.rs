//! The retry budget (Finagle's `RetryBudget`): retries granted in the last `budget_window` may not
//! exceed `budget_min_retries_per_second × window seconds + budget_percent % × calls in the window`.
//!
//! Why: without a budget, every caller retries every failure, so with `max_attempts = 3` an outage
//! triples the load on a dependency that is already failing. With `budget_percent = 20` it adds at
//! most 20 %, plus a small reserve so rarely called methods can still retry.
//!
//! Cost model, as promised in the docs:
//! - a call that starts adds one plain load + store on a per-thread stripe of a counter, each
//!   stripe on its own cache line (no read-modify-write, no clock read, no allocation). Two threads
//!   that share a stripe may lose an increment: the count is approximate on purpose, and a lost call
//!   only makes the budget stricter;
//! - a retryable failure reads the clock and sums the stripes;
//! - a granted retry adds one compare-and-set on the window's retry counter.
//!
//! The window moves in tenths and only failures move it: a call that started while nothing failed is
//! dated at the last failure, so after a quiet period longer than the window those calls have expired
//! and the budget restarts from its reserve (it errs towards fewer retries).

use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::cell::Cell;

use crossbeam_utils::CachePadded;

use super::{Budget, RetryConfig};
use crate::clock::nanos;
use crate::sync::Live;

const SLOTS: u64 = 10;
const STRIPES: usize = 16;
/// A slot packs `(tenth << COUNT_BITS) | count`. 24 bits of count (16.7 million calls or retries per
/// tenth; calls saturate there, which only makes the budget stricter, and a full retry count refuses)
/// leave 40 bits of tenth: with tenths of at least [`MIN_WINDOW`](super::config::MIN_WINDOW)` / 10` that is more than the 584
/// years a `u64` nanosecond clock reaches, so a tag never wraps.
const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
#[cfg(test)]
const TAG_MAX: u64 = u64::MAX >> COUNT_BITS;

#[derive(Debug)]
pub(crate) struct RetryBudget {
    /// Calls started, per thread stripe; monotonic.
    stripes: Box<[CachePadded<AtomicU64>; STRIPES]>,
    /// The stripe total already dated into a slot.
    flushed: AtomicU64,
    /// The tenth of the last failure: where undated calls belong.
    last_tenth: AtomicU64,
    /// Per tenth `t % 10`: `(t << 32) | calls` and `(t << 32) | retries`.
    calls: [AtomicU64; SLOTS as usize],
    retries: [AtomicU64; SLOTS as usize],
    /// The length of a tenth of `budget_window`, in nanoseconds (a live update may change it:
    /// `reconfigure`).
    tenth_nanos: AtomicU64,
    /// `(reserve, percent)`: one version for each grant (a live update swaps it whole).
    limits: Live<(f64, f64)>,
}

/// The grant's limits of `config`: the reserve over the window, and the percentage.
fn limits_of(config: &RetryConfig) -> (f64, f64) {
    (f64::from(config.budget_min_retries_per_second) * config.budget_window.as_secs_f64(), config.budget_percent)
}

fn tenth_of(config: &RetryConfig) -> u64 {
    (nanos(config.budget_window) / SLOTS).max(1)
}

#[cfg(not(all(test, loom)))]
thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

// loom runs its threads on one OS thread: their thread-locals must be loom's.
#[cfg(all(test, loom))]
loom::thread_local! {
    static STRIPE: Cell<usize> = Cell::new(usize::MAX);
}

/// This thread's stripe index, or `usize::MAX` before its first call.
#[inline]
fn stripe() -> usize {
    STRIPE.with(Cell::get)
}

/// Hands this thread its stripe (round-robin) on its first call.
#[cold]
#[inline(never)]
fn assign_stripe() -> usize {
    #[cfg(not(all(test, loom)))]
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Fresh in every loom execution, so each explores the same stripes.
    #[cfg(all(test, loom))]
    loom::lazy_static! {
        static ref NEXT: AtomicUsize = AtomicUsize::new(0);
    }
    let i = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    STRIPE.with(|s| s.set(i));
    i
}

fn pack(tenth: u64, count: u64) -> u64 {
    (tenth << COUNT_BITS) | count.min(COUNT_MASK)
}

fn tag(v: u64) -> u64 {
    v >> COUNT_BITS
}

impl RetryBudget {
    pub(crate) fn new(config: &RetryConfig, now: u64) -> Self {
        let tenth_nanos = tenth_of(config);
        let first = now / tenth_nanos;
        RetryBudget {
            stripes: Box::new(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0)))),
            flushed: AtomicU64::new(0),
            last_tenth: AtomicU64::new(first),
            calls: std::array::from_fn(|_| AtomicU64::new(pack(first, 0))),
            retries: std::array::from_fn(|_| AtomicU64::new(pack(first, 0))),
            tenth_nanos: AtomicU64::new(tenth_nanos),
            limits: Live::new(limits_of(config)),
        }
    }

    /// A live update (SPEC §16): a new percentage or reserve keeps the counters; a new
    /// `budget_window` restarts the window at `now` (the counts were dated in tenths of the old
    /// length), as a breaker's new `window_type` restarts its window.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn reconfigure(&self, config: &RetryConfig, now: u64) {
        self.limits.store(limits_of(config));
        let tenth_nanos = tenth_of(config);
        if self.tenth_nanos.swap(tenth_nanos, Ordering::AcqRel) != tenth_nanos {
            let first = now / tenth_nanos;
            self.flushed.store(self.stripe_total(), Ordering::Release);
            self.last_tenth.store(first, Ordering::Release);
            for slot in self.calls.iter().chain(&self.retries) {
                slot.store(pack(first, 0), Ordering::Release);
            }
        }
    }

    /// A call starts: one plain load and store on this thread's stripe.
    #[inline]
    pub(crate) fn count_call(&self) {
        match stripe() {
            usize::MAX => self.count_first_call(),
            // `% STRIPES` on a fixed-size array: no bounds check (the index is below STRIPES anyway).
            i => self.count_on(i % STRIPES),
        }
    }

    #[cold]
    #[inline(never)]
    fn count_first_call(&self) {
        self.count_on(assign_stripe());
    }

    #[inline]
    fn count_on(&self, stripe: usize) {
        let cell = &self.stripes[stripe % STRIPES];
        cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// A retryable failure at `now` asks for a retry: dates pending calls, moves the window, and
    /// grants with one compare-and-set if the window allows another retry.
    pub(crate) fn try_grant(&self, now: u64) -> bool {
        let tenth = now / self.tenth_nanos.load(Ordering::Acquire);
        self.flush(tenth);
        let allowed = self.allowed(self.sum(&self.calls, tenth));
        let slot = &self.retries[(tenth % SLOTS) as usize];
        let mut current = slot.load(Ordering::Acquire);
        loop {
            if tag(current) > tenth {
                return false; // another thread is already in a later tenth: treat as exhausted
            }
            let mine = if tag(current) == tenth { current & COUNT_MASK } else { 0 };
            let others = self.sum_except(&self.retries, tenth);
            if others + mine >= allowed || mine == COUNT_MASK {
                return false;
            }
            match slot.compare_exchange_weak(current, pack(tenth, mine + 1), Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(seen) => current = seen,
            }
        }
    }

    /// The current window as of `now`, counting calls not yet dated at the last failure.
    pub(crate) fn snapshot(&self, now: u64) -> Budget {
        let tenth = (now / self.tenth_nanos.load(Ordering::Acquire)).max(self.last_tenth.load(Ordering::Acquire));
        let pending = self.stripe_total().saturating_sub(self.flushed.load(Ordering::Acquire));
        let last = self.last_tenth.load(Ordering::Acquire);
        let pending = if tenth - last < SLOTS { pending } else { 0 };
        let calls = self.sum(&self.calls, tenth) + pending;
        Budget { calls, retries: self.sum(&self.retries, tenth), allowed_retries: self.allowed(calls) }
    }

    fn allowed(&self, calls: u64) -> u64 {
        let (reserve, percent) = *self.limits.load();
        (reserve + percent * calls as f64 / 100.0).floor() as u64
    }

    fn stripe_total(&self) -> u64 {
        self.stripes.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }

    /// Dates the calls counted since the last flush at the last failure's tenth, then makes `tenth`
    /// the last failure.
    fn flush(&self, tenth: u64) {
        let total = self.stripe_total();
        let before = self.flushed.fetch_max(total, Ordering::AcqRel);
        let last = self.last_tenth.fetch_max(tenth, Ordering::AcqRel);
        let pending = total.saturating_sub(before);
        if pending > 0 && tenth.saturating_sub(last) < SLOTS {
            add(&self.calls[(last % SLOTS) as usize], last, pending);
        }
    }

    /// The counts of slots that lie within the window ending at `tenth`.
    fn sum(&self, slots: &[AtomicU64; SLOTS as usize], tenth: u64) -> u64 {
        slots.iter().map(|s| live(s.load(Ordering::Acquire), tenth)).sum()
    }

    fn sum_except(&self, slots: &[AtomicU64; SLOTS as usize], tenth: u64) -> u64 {
        let skip = (tenth % SLOTS) as usize;
        slots.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, s)| live(s.load(Ordering::Acquire), tenth)).sum()
    }
}

/// A slot's count if its tenth is within the ten tenths ending at `tenth`.
fn live(v: u64, tenth: u64) -> u64 {
    let t = tag(v);
    if t <= tenth && tenth - t < SLOTS { v & COUNT_MASK } else { 0 }
}

/// Adds `n` to the slot of `tenth`, restarting it if it still holds an older tenth.
fn add(slot: &AtomicU64, tenth: u64, n: u64) {
    let mut current = slot.load(Ordering::Acquire);
    loop {
        let next = match tag(current) {
            t if t == tenth => pack(tenth, (current & COUNT_MASK) + n),
            t if t < tenth => pack(tenth, n),
            _ => return, // the slot already serves a later tenth: these calls have expired
        };
        match slot.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(seen) => current = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::config::MIN_WINDOW;
    use std::time::Duration;

    fn budget(percent: f64, reserve: u32) -> RetryBudget {
        let config = RetryConfig {
            budget_percent: percent,
            budget_min_retries_per_second: reserve,
            budget_window: Duration::from_secs(10),
            ..RetryConfig::default()
        };
        RetryBudget::new(&config, 0)
    }

    #[test]
    fn reserve_zero_and_four_calls_grants_nothing() {
        let b = budget(20.0, 0);
        for _ in 0..4 {
            b.count_call();
            assert!(!b.try_grant(1));
        }
        assert_eq!(b.snapshot(1), Budget { calls: 4, retries: 0, allowed_retries: 0 });
    }

    #[test]
    fn five_calls_earn_one_retry_at_twenty_percent() {
        let b = budget(20.0, 0);
        for _ in 0..5 {
            b.count_call();
        }
        assert!(b.try_grant(1));
        assert!(!b.try_grant(2));
        assert_eq!(b.snapshot(2), Budget { calls: 5, retries: 1, allowed_retries: 1 });
    }

    #[test]
    fn window_expires_in_tenths() {
        let b = budget(0.0, 1); // reserve 10 per window
        for i in 0..10 {
            assert!(b.try_grant(i));
        }
        assert!(!b.try_grant(10));
        // 10 s after the tenth of the first grants, they have left the window.
        assert!(b.try_grant(10_000_000_000));
        assert_eq!(b.snapshot(10_000_000_000).retries, 1);
    }

    #[test]
    fn grants_stay_capped_after_two_to_the_32_tenths() {
        // A 1 s window has 100 ms tenths; 2^32 of them is 13.6 years of registry uptime, well inside
        // the clock's range. The tenth must not lose its high bits there.
        let config = RetryConfig {
            budget_percent: 1.0,
            budget_min_retries_per_second: 1,
            budget_window: MIN_WINDOW,
            ..RetryConfig::default()
        };
        let far = (1u64 << 32) * 100_000_000 + 5;
        let b = RetryBudget::new(&config, far);
        assert!(b.try_grant(far));
        assert!(!b.try_grant(far + 1), "the reserve of one retry per 1 s window is spent");
        assert_eq!(b.snapshot(far + 1).retries, 1);
    }

    #[test]
    fn the_slowest_clock_still_fits_the_tag() {
        let tenths_of_the_smallest_window = u64::MAX / (nanos(MIN_WINDOW) / SLOTS);
        assert!(tenths_of_the_smallest_window <= TAG_MAX, "a tag must hold every tenth a u64 clock reaches");
    }

    #[test]
    fn a_full_retry_counter_refuses_instead_of_losing_a_grant() {
        let b = budget(1000.0, 0);
        b.retries[0].store(pack(0, COUNT_MASK), Ordering::Relaxed);
        b.calls[1].store(pack(0, COUNT_MASK), Ordering::Relaxed);
        assert!(!b.try_grant(0));
    }

    #[test]
    fn stress_never_exceeds_allowed() {
        let b = std::sync::Arc::new(budget(10.0, 1));
        let granted: u64 = (0..4)
            .map(|_| {
                let b = std::sync::Arc::clone(&b);
                std::thread::spawn(move || {
                    let mut granted = 0u64;
                    for _ in 0..20_000 {
                        b.count_call();
                        granted += u64::from(b.try_grant(5));
                    }
                    granted
                })
            })
            .map(|h| h.join().unwrap())
            .sum();
        let snap = b.snapshot(5);
        assert_eq!(granted, snap.retries);
        assert!(snap.retries <= snap.allowed_retries, "{snap:?}");
        assert!(snap.calls <= 80_000);
    }
}
