//! A counter split into per-thread stripes, each on its own cache line, that a thread increments
//! with a plain load and store: no read-modify-write, no shared line written.
//!
//! A thread claims a stripe index on its first increment, from a process-wide bitmap, and gives it
//! back when it exits; so no two live threads ever own the same index, and the plain increments are
//! exact. Threads beyond [`STRIPES`] (and threads already tearing down) add to a shared overflow
//! counter with `fetch_add`, which is exact too, only slower. The index is the same in every
//! counter, so one claim serves every breaker.

use crate::sync::atomic::{AtomicU64, Ordering};
use std::cell::Cell;

use crossbeam_utils::CachePadded;

/// Stripes per counter; the owners of the first `STRIPES` claims write without contention.
pub(crate) const STRIPES: usize = 32;
const UNCLAIMED: usize = usize::MAX;

/// Which stripe indices live threads own.
#[cfg(not(all(test, loom)))]
static CLAIMED: AtomicU64 = AtomicU64::new(0);

// Under loom the bitmap is a model atomic too (its release/acquire hands a stripe's increments to
// the stripe's next owner), fresh in every execution.
#[cfg(all(test, loom))]
loom::lazy_static! {
    static ref CLAIMED: AtomicU64 = AtomicU64::new(0);
}

/// Gives this thread's stripe back when the thread exits.
#[cfg(not(all(test, loom)))]
struct Claim {
    index: Cell<usize>,
}

#[cfg(not(all(test, loom)))]
impl Drop for Claim {
    fn drop(&mut self) {
        release(self.index.get());
    }
}

/// Gives `index` back as this thread ends.
fn release(index: usize) {
    // Increments made after this point (by later destructors) go to the shared overflow.
    let _ = INDEX.try_with(|i| i.set(STRIPES));
    if index < STRIPES {
        // Release: the next owner sees every increment this thread made.
        CLAIMED.fetch_and(!(1 << index), Ordering::Release);
    }
}

/// loom runs no thread-local destructors a model could rely on: a model's thread gives its stripe
/// back by calling this as it ends, which is what `Claim`'s destructor does.
#[cfg(all(test, loom))]
pub(crate) fn release_at_thread_end() {
    release(stripe());
}

#[cfg(not(all(test, loom)))]
thread_local! {
    /// This thread's stripe index (no destructor, so reading it is one thread-local load).
    static INDEX: Cell<usize> = const { Cell::new(UNCLAIMED) };
    /// Registered on the first claim; its destructor releases the index.
    static CLAIM: Claim = const { Claim { index: Cell::new(UNCLAIMED) } };
}

// loom runs its threads on one OS thread: their thread-locals must be loom's.
#[cfg(all(test, loom))]
loom::thread_local! {
    static INDEX: Cell<usize> = Cell::new(UNCLAIMED);
}

/// This thread's stripe index: below `STRIPES` once claimed, `STRIPES` when none was free,
/// `UNCLAIMED` before the first claim.
#[inline(always)]
fn stripe() -> usize {
    INDEX.with(Cell::get)
}

/// This thread's stripe index, claimed on its first use: below [`STRIPES`], or `STRIPES` for a
/// thread that shares the overflow. The adaptive limit's sample stripes use the same claims.
#[inline(always)]
pub(crate) fn this_thread() -> usize {
    match stripe() {
        UNCLAIMED => claim(),
        index => index,
    }
}

#[cold]
fn claim() -> usize {
    #[cfg(not(all(test, loom)))]
    let index = CLAIM
        .try_with(|claim| {
            let index = claim_free();
            claim.index.set(index);
            index
        })
        .unwrap_or(STRIPES);
    #[cfg(all(test, loom))]
    let index = claim_free(); // given back by `release_at_thread_end`
    INDEX.with(|i| i.set(index));
    index
}

#[cold]
fn claim_free() -> usize {
    let mut claimed = CLAIMED.load(Ordering::Acquire);
    loop {
        let free = (!claimed).trailing_zeros() as usize;
        if free >= STRIPES {
            return STRIPES;
        }
        match CLAIMED.compare_exchange_weak(claimed, claimed | (1 << free), Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return free,
            Err(seen) => claimed = seen,
        }
    }
}

/// A monotonic count, incremented by many threads, summed rarely.
#[derive(Debug)]
pub(crate) struct StripedCounter {
    /// Owned stripes, inline so reaching one needs no pointer and no bounds check.
    stripes: [CachePadded<AtomicU64>; STRIPES],
    /// Threads without a stripe of their own.
    overflow: CachePadded<AtomicU64>,
}

impl StripedCounter {
    pub(crate) fn new() -> Self {
        StripedCounter {
            stripes: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            overflow: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Adds one: a plain load and store on this thread's own stripe.
    #[inline(always)]
    pub(crate) fn add_one(&self) {
        match self.stripes.get(stripe()) {
            Some(cell) => cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Release),
            None => self.add_one_slowly(),
        }
    }

    /// The first increment of a thread (which claims a stripe), or one without a stripe.
    #[cold]
    #[inline(never)]
    fn add_one_slowly(&self) {
        let index = match stripe() {
            UNCLAIMED => claim(),
            index => index,
        };
        match self.stripes.get(index) {
            Some(cell) => cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Release),
            None => {
                self.overflow.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// The total so far (every stripe is monotonic, so a later sum is never smaller).
    pub(crate) fn sum(&self) -> u64 {
        self.stripes.iter().chain([&self.overflow]).map(|c| c.load(Ordering::Acquire)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_increments_are_exact_and_stripes_are_reused() {
        let counter = StripedCounter::new();
        for _round in 0..3 {
            std::thread::scope(|s| {
                for _ in 0..(STRIPES + 4) {
                    s.spawn(|| {
                        for _ in 0..1_000 {
                            counter.add_one();
                        }
                    });
                }
            });
        }
        assert_eq!(counter.sum(), 3 * (STRIPES as u64 + 4) * 1_000);
    }

    #[test]
    fn a_thread_claims_a_stripe_once_and_keeps_it() {
        let counter = StripedCounter::new();
        std::thread::spawn(move || {
            assert_eq!(stripe(), UNCLAIMED);
            counter.add_one();
            let claimed = stripe();
            assert!(claimed <= STRIPES);
            counter.add_one();
            assert_eq!(stripe(), claimed);
            assert_eq!(counter.sum(), 2);
        })
        .join()
        .unwrap();
    }
}
