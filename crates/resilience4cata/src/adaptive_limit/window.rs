//! Gradient2 and Vegas without a lock on the pass path: samples go into per-thread stripes and
//! reach the algorithm once per sample window, folded by whichever call first finishes after the
//! window's end and wins a `try_lock` (Netflix's `WindowedLimit`; a call that loses the try-lock
//! has already recorded its sample and goes on).
//!
//! Cost model of one finished call (a sample):
//! - on its thread's own stripe, plain loads and stores around a sequence number (a seqlock with a
//!   single writer: no read-modify-write, no write to a line another thread writes);
//! - one load of the window's end; past it, the fold (cold: a `try_lock`, one read of every stripe,
//!   the algorithm's update and the new limit stored with the slot's release).
//!
//! Each stripe keeps running totals (calls, summed latency, drops) that only its owner writes; the
//! fold remembers the totals it took last time and takes the difference, so a sample recorded
//! while a fold runs is never lost nor counted twice: it is in this window's difference or the
//! next one's. A stripe caught mid-write (its sequence number odd or moved) is skipped and taken
//! whole by the next fold. The window's extremes (fastest call, most calls in flight) are kept per
//! stripe and per window (the window's number tags them): a sample that races the fold may lend its
//! extremes to the window next to its own; the counts, sums and drops stay exact.
//!
//! A thread owns a stripe while it lives: the index the breaker's striped counters claim
//! (`stripes.rs`, up to [`STRIPES`] threads at once, given back when the thread
//! exits). Threads beyond those share an overflow stripe updated with atomic adds (four to five
//! read-modify-writes: the price of more than 32 threads finishing calls at once).

use std::sync::TryLockError;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::AdaptiveLimitConfig;
use super::algorithm::LimitAlgorithm;
use crate::clock::nanos;
pub(crate) use crate::stripes::STRIPES;
use crate::stripes::this_thread;
use crate::sync::Mutex;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

/// One finished call, as the window sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// The call's duration in nanoseconds.
    pub(crate) rtt: u64,
    /// Calls in flight when it took its slot, itself included.
    pub(crate) in_flight: u32,
    /// Whether it was a drop.
    pub(crate) dropped: bool,
}

/// A window's samples added up (Netflix's `ImmutableAverageSampleWindow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) count: u64,
    pub(crate) rtt_sum: u64,
    pub(crate) drops: u64,
    /// The fastest call, `u64::MAX` for none.
    pub(crate) min_rtt: u64,
    pub(crate) max_in_flight: u64,
}

impl Summary {
    const EMPTY: Summary = Summary { count: 0, rtt_sum: 0, drops: 0, min_rtt: u64::MAX, max_in_flight: 0 };

    /// The mean latency, what the algorithm is fed.
    pub(crate) fn mean_rtt(&self) -> u64 {
        self.rtt_sum.checked_div(self.count).unwrap_or(0)
    }
}

/// Running totals of one stripe, as the fold last took them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    count: u64,
    rtt_sum: u64,
    drops: u64,
}

impl Totals {
    /// What was added since `before` (the totals wrap, the difference does not care).
    fn since(self, before: Totals) -> Totals {
        Totals {
            count: self.count.wrapping_sub(before.count),
            rtt_sum: self.rtt_sum.wrapping_sub(before.rtt_sum),
            drops: self.drops.wrapping_sub(before.drops),
        }
    }
}

/// One thread's stripe: written by its owner only.
#[derive(Debug)]
struct Stripe {
    /// Odd while the owner writes a sample.
    seq: AtomicU64,
    count: AtomicU64,
    rtt_sum: AtomicU64,
    drops: AtomicU64,
    /// The window number the extremes below belong to.
    window: AtomicU64,
    min_rtt: AtomicU64,
    max_in_flight: AtomicU64,
}

impl Stripe {
    fn new() -> Self {
        let zero = || AtomicU64::new(0);
        Stripe {
            seq: zero(),
            count: zero(),
            rtt_sum: zero(),
            drops: zero(),
            window: zero(),
            min_rtt: AtomicU64::new(u64::MAX),
            max_in_flight: zero(),
        }
    }
}

/// A plain load and store: only the stripe's owner writes the cell.
#[inline(always)]
fn add(cell: &AtomicU64, n: u64) {
    cell.store(cell.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// What one stripe holds, read consistently.
#[derive(Clone, Copy, Debug)]
struct Read {
    totals: Totals,
    min_rtt: u64,
    max_in_flight: u64,
}

/// The stripes of one adaptive limit instance, plus the overflow stripe and the window number.
#[derive(Debug)]
pub(crate) struct Stripes {
    stripes: Box<[CachePadded<Stripe>]>,
    overflow: CachePadded<Stripe>,
    /// The number of the window being filled; only the fold writes it.
    window: AtomicU64,
}

impl Stripes {
    pub(crate) fn new(n: usize) -> Self {
        Stripes {
            stripes: (0..n).map(|_| CachePadded::new(Stripe::new())).collect(),
            overflow: CachePadded::new(Stripe::new()),
            window: AtomicU64::new(0),
        }
    }

    /// Records a sample on this thread's stripe (or the overflow stripe).
    #[inline]
    pub(crate) fn record(&self, sample: Sample) {
        match this_thread() {
            i if i < self.stripes.len() => self.record_on(i, sample),
            _ => self.record_shared(sample),
        }
    }

    /// Records on stripe `i`, which the calling thread owns: plain loads and stores inside a
    /// sequence-number bracket.
    #[inline]
    fn record_on(&self, i: usize, s: Sample) {
        let stripe = &self.stripes[i];
        let window = self.window.load(Ordering::Relaxed);
        let seq = stripe.seq.load(Ordering::Relaxed);
        stripe.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        add(&stripe.count, 1);
        add(&stripe.rtt_sum, s.rtt);
        if s.dropped {
            add(&stripe.drops, 1);
        }
        let in_flight = u64::from(s.in_flight);
        if stripe.window.load(Ordering::Relaxed) == window {
            if s.rtt < stripe.min_rtt.load(Ordering::Relaxed) {
                stripe.min_rtt.store(s.rtt, Ordering::Relaxed);
            }
            if in_flight > stripe.max_in_flight.load(Ordering::Relaxed) {
                stripe.max_in_flight.store(in_flight, Ordering::Relaxed);
            }
        } else {
            stripe.window.store(window, Ordering::Relaxed);
            stripe.min_rtt.store(s.rtt, Ordering::Relaxed);
            stripe.max_in_flight.store(in_flight, Ordering::Relaxed);
        }
        stripe.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// A thread without a stripe of its own: atomic adds on the shared overflow stripe.
    #[cold]
    #[inline(never)]
    fn record_shared(&self, s: Sample) {
        let o = &self.overflow;
        o.rtt_sum.fetch_add(s.rtt, Ordering::Relaxed);
        if s.dropped {
            o.drops.fetch_add(1, Ordering::Relaxed);
        }
        o.min_rtt.fetch_min(s.rtt, Ordering::Relaxed);
        o.max_in_flight.fetch_max(u64::from(s.in_flight), Ordering::Relaxed);
        o.count.fetch_add(1, Ordering::Release);
    }

    /// Stripe `i` read consistently, or `None` when its owner is writing (the fold skips it and
    /// takes it whole next time).
    fn read(&self, i: usize) -> Option<Read> {
        let stripe = &self.stripes[i];
        let before = stripe.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        let read = Read {
            totals: Totals {
                count: stripe.count.load(Ordering::Relaxed),
                rtt_sum: stripe.rtt_sum.load(Ordering::Relaxed),
                drops: stripe.drops.load(Ordering::Relaxed),
            },
            min_rtt: stripe.min_rtt.load(Ordering::Relaxed),
            max_in_flight: stripe.max_in_flight.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (stripe.seq.load(Ordering::Relaxed) == before).then_some(read)
    }

    /// Closes the window being filled and sums what was recorded since the last fold. `taken`
    /// (the fold's own memory, one entry per stripe plus the overflow) holds the totals already
    /// folded. Only one fold runs at a time (the caller holds the fold's lock).
    pub(crate) fn fold(&self, taken: &mut [Totals]) -> Summary {
        let window = self.window.load(Ordering::Relaxed);
        self.window.store(window.wrapping_add(1), Ordering::Relaxed);
        let mut sum = Summary::EMPTY;
        for (i, before) in taken.iter_mut().enumerate().take(self.stripes.len()) {
            let Some(read) = self.read(i) else { continue };
            let new = read.totals.since(*before);
            if new.count == 0 {
                continue;
            }
            *before = read.totals;
            sum.count += new.count;
            sum.rtt_sum = sum.rtt_sum.wrapping_add(new.rtt_sum);
            sum.drops += new.drops;
            // The extremes of the stripe's latest window: they cover its new samples (and, after
            // a race with the last fold, perhaps one already folded).
            sum.min_rtt = sum.min_rtt.min(read.min_rtt);
            sum.max_in_flight = sum.max_in_flight.max(read.max_in_flight);
        }
        if let Some(before) = taken.get_mut(self.stripes.len()) {
            let o = &self.overflow;
            // Each total on its own: a sample being added may be in one total and not yet in
            // another, so this window may get its latency and the next one its count; each
            // total's differences still add up to it exactly.
            let count = o.count.load(Ordering::Acquire);
            let now =
                Totals { count, rtt_sum: o.rtt_sum.load(Ordering::Relaxed), drops: o.drops.load(Ordering::Relaxed) };
            let new = now.since(*before);
            *before = now;
            sum.count += new.count;
            sum.rtt_sum = sum.rtt_sum.wrapping_add(new.rtt_sum);
            sum.drops += new.drops;
            if new.count > 0 {
                sum.min_rtt = sum.min_rtt.min(o.min_rtt.swap(u64::MAX, Ordering::Relaxed));
                sum.max_in_flight = sum.max_in_flight.max(o.max_in_flight.swap(0, Ordering::Relaxed));
            }
        }
        sum
    }

    /// The fold's memory for these stripes: one entry per stripe plus the overflow stripe.
    pub(crate) fn taken(&self) -> Box<[Totals]> {
        vec![Totals::default(); self.stripes.len() + 1].into_boxed_slice()
    }
}

/// The window settings, in nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Limits {
    min_window: u64,
    max_window: u64,
    window_size: u64,
    min_rtt_threshold: u64,
}

/// From this fastest call per window on, calls are timed on the coarse clock: its lag (about a
/// millisecond, the ticker's period) is then under 1 % of any call.
const COARSE_FROM: Duration = Duration::from_millis(100);

/// When the next fold is due, and which clock times calls; written by the fold only.
#[derive(Debug)]
struct Schedule {
    /// The clock reading after which the next finished call folds the window.
    next_fold: AtomicU64,
    /// The last folded window's fastest call took at least [`COARSE_FROM`].
    coarse: AtomicBool,
}

/// What the fold owns: the algorithm and the totals it already took.
struct Folder {
    algorithm: Box<dyn LimitAlgorithm + Send>,
    taken: Box<[Totals]>,
}

/// Gradient2 or Vegas behind sample windows: the engine of the adaptive limit's policy.
pub(crate) struct Windowed {
    stripes: Stripes,
    schedule: CachePadded<Schedule>,
    folder: Mutex<Folder>,
    limits: Limits,
}

impl std::fmt::Debug for Windowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Windowed").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Windowed {
    pub(crate) fn new(config: &AdaptiveLimitConfig, algorithm: Box<dyn LimitAlgorithm + Send>) -> Self {
        let stripes = Stripes::new(STRIPES);
        let taken = stripes.taken();
        Windowed {
            stripes,
            schedule: CachePadded::new(Schedule { next_fold: AtomicU64::new(0), coarse: AtomicBool::new(false) }),
            folder: Mutex::new(Folder { algorithm, taken }),
            limits: Limits {
                min_window: nanos(config.min_window_time),
                max_window: nanos(config.max_window_time),
                window_size: u64::from(config.window_size),
                min_rtt_threshold: nanos(config.min_rtt_threshold),
            },
        }
    }

    /// Records a call that ended at `end` after `rtt`; `true` when its window is over, so the
    /// caller should try to fold it ([`Windowed::fold`]).
    #[inline]
    pub(crate) fn record(&self, end: u64, sample: Sample) -> bool {
        if sample.rtt < self.limits.min_rtt_threshold {
            return false; // as Netflix: too fast to say anything, and no fold either
        }
        self.stripes.record(sample);
        end > self.schedule.next_fold.load(Ordering::Relaxed)
    }

    /// Whether calls are timed on the coarse clock (one load): the last folded window's fastest
    /// call took at least [`COARSE_FROM`]. A call that straddles a switch may be off by the coarse
    /// clock's lag.
    #[inline]
    pub(crate) fn coarse(&self) -> bool {
        self.schedule.coarse.load(Ordering::Relaxed)
    }

    /// Folds the window if this call wins the lock and the window is still over: then `apply`
    /// runs under the lock with the algorithm's new limit (`None` when the window had too few
    /// samples to count, as Netflix's `isWindowReady`), and its result is returned.
    #[cold]
    #[inline(never)]
    pub(crate) fn fold<R>(&self, end: u64, apply: impl FnOnce(Option<u32>) -> R) -> Option<R> {
        let mut folder = match self.folder.try_lock() {
            Ok(folder) => folder,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None, // another call is folding
        };
        if end <= self.schedule.next_fold.load(Ordering::Relaxed) {
            return None; // another call folded this window meanwhile
        }
        let Folder { algorithm, taken } = &mut *folder;
        let window = self.stripes.fold(taken);
        let span = window.min_rtt.saturating_mul(2).clamp(self.limits.min_window, self.limits.max_window);
        self.schedule.next_fold.store(end.saturating_add(span), Ordering::Relaxed);
        if window.min_rtt < u64::MAX {
            self.schedule.coarse.store(window.min_rtt >= nanos(COARSE_FROM), Ordering::Relaxed);
        }
        let ready = window.count >= self.limits.window_size && window.min_rtt < u64::MAX;
        let limit = ready.then(|| {
            let in_flight = u32::try_from(window.max_in_flight).unwrap_or(u32::MAX);
            algorithm.on_sample(Duration::from_nanos(window.mean_rtt()), in_flight, window.drops > 0)
        });
        Some(apply(limit))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn sample(rtt: u64, in_flight: u32, dropped: bool) -> Sample {
        Sample { rtt, in_flight, dropped }
    }

    #[test]
    fn a_fold_sums_what_was_recorded_since_the_last_one() {
        let s = Stripes::new(2);
        let mut taken = s.taken();
        s.record_on(0, sample(10, 3, false));
        s.record_on(1, sample(30, 5, true));
        s.record_on(1, sample(20, 1, false));
        let w = s.fold(&mut taken);
        assert_eq!((w.count, w.rtt_sum, w.drops, w.min_rtt, w.max_in_flight), (3, 60, 1, 10, 5));
        assert_eq!(w.mean_rtt(), 20);
        let w = s.fold(&mut taken);
        assert_eq!((w.count, w.min_rtt), (0, u64::MAX), "nothing new");
        s.record_on(0, sample(50, 2, false));
        let w = s.fold(&mut taken);
        assert_eq!((w.count, w.rtt_sum, w.min_rtt, w.max_in_flight), (1, 50, 50, 2), "the old extremes are gone");
    }

    #[test]
    fn a_stripe_caught_mid_write_is_taken_next_time() {
        let s = Stripes::new(1);
        let mut taken = s.taken();
        s.record_on(0, sample(10, 1, false));
        s.stripes[0].seq.store(3, Ordering::Relaxed); // as if its owner were writing
        assert_eq!(s.fold(&mut taken).count, 0);
        s.stripes[0].seq.store(4, Ordering::Relaxed);
        assert_eq!(s.fold(&mut taken).count, 1);
    }

    #[test]
    fn the_overflow_stripe_counts_exactly() {
        let s = Stripes::new(0);
        let mut taken = s.taken();
        s.record_shared(sample(10, 4, false));
        s.record_shared(sample(30, 2, true));
        let w = s.fold(&mut taken);
        assert_eq!((w.count, w.rtt_sum, w.drops, w.min_rtt, w.max_in_flight), (2, 40, 1, 10, 4));
        assert_eq!(s.fold(&mut taken), Summary::EMPTY);
    }

    /// Calls are timed on the coarse clock while windows' fastest calls take 100 ms or more.
    #[test]
    fn slow_windows_switch_to_the_coarse_clock_and_fast_ones_back() {
        let config = AdaptiveLimitConfig { window_size: 1, ..AdaptiveLimitConfig::default() };
        let windowed = Windowed::new(&config, Box::new(super::super::Vegas::from_config(&config)));
        let ms = 1_000_000;
        let mut end = 0;
        let mut finish = |rtt: u64| {
            end += rtt + 2_000 * ms; // past any window
            assert!(windowed.record(end, sample(rtt, 1, false)));
            assert!(windowed.fold(end, |_| ()).is_some());
            windowed.coarse()
        };
        assert!(!finish(99 * ms));
        assert!(finish(100 * ms));
        assert!(finish(400 * ms));
        assert!(!finish(5 * ms));
    }

    /// Four threads record while a fifth folds over and over: every sample is folded exactly once.
    #[test]
    fn stress_no_sample_lost_or_counted_twice() {
        const PER_THREAD: u64 = 20_000;
        let s = Stripes::new(STRIPES);
        let mut taken = s.taken();
        let (mut count, mut rtt_sum, mut drops) = (0, 0, 0);
        let done = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                let (s, done) = (&s, &done);
                scope.spawn(move || {
                    for i in 0..PER_THREAD {
                        s.record(sample(t + 1, 1, i % 5 == 0));
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::Release);
                });
            }
            while done.load(std::sync::atomic::Ordering::Acquire) < 4 {
                let w = s.fold(&mut taken);
                (count, rtt_sum, drops) = (count + w.count, rtt_sum + w.rtt_sum, drops + w.drops);
            }
        });
        let w = s.fold(&mut taken);
        (count, rtt_sum, drops) = (count + w.count, rtt_sum + w.rtt_sum, drops + w.drops);
        assert_eq!(count, 4 * PER_THREAD);
        assert_eq!(rtt_sum, (1 + 2 + 3 + 4) * PER_THREAD);
        assert_eq!(drops, 4 * PER_THREAD / 5);
    }
}
