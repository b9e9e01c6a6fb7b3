//! A counter split into per-thread stripes, each on its own cache line, that a thread increments
//! with a plain load and store: no read-modify-write, no shared line written.
//!
//! A thread claims a stripe index on its first increment, from a process-wide bitmap, and gives it
//! back when it exits; so no two live threads ever own the same index, and the plain increments are
//! exact. Threads beyond [`STRIPES`] (and threads already tearing down) add to a shared overflow
//! counter with `fetch_add`, which is exact too, only slower. The index is the same in every
//! counter, so one claim serves every breaker. A thread keeps it twice: as the index, and as the
//! offset of its cell in a counter's flat array of cells (stripes 128 bytes apart), so that an
//! increment is one thread-local load, one bounds test and one increment at a scaled address.

use crate::sync::atomic::{AtomicU64, Ordering};
use std::cell::Cell;

use crossbeam_utils::CachePadded;

/// Stripes per counter; the owners of the first `STRIPES` claims write without contention.
pub(crate) const STRIPES: usize = 32;
const UNCLAIMED: usize = usize::MAX;
/// Cells between two stripes of a counter: one stripe per 128 bytes, so no two stripes share a
/// cache line (nor an adjacent-line prefetch pair). One cell apart under loom, whose atomics are
/// heavy and have no cache lines.
#[cfg(not(all(test, loom)))]
const SPACING: usize = 16;
#[cfg(all(test, loom))]
const SPACING: usize = 1;
/// Cells of a counter: stripe `i` is cell `i * SPACING`.
const CELLS: usize = STRIPES * SPACING;

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
    let _ = CELL.try_with(|c| c.set(CELLS));
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
    /// The same as a cell of a counter: `INDEX * SPACING`, or `CELLS` and above without a stripe,
    /// so the striped counter's bounds test is the only test and the cell is one scaled address.
    static CELL: Cell<usize> = const { Cell::new(UNCLAIMED) };
    /// Registered on the first claim; its destructor releases the index.
    static CLAIM: Claim = const { Claim { index: Cell::new(UNCLAIMED) } };
}

// loom runs its threads on one OS thread: their thread-locals must be loom's.
#[cfg(all(test, loom))]
loom::thread_local! {
    static INDEX: Cell<usize> = Cell::new(UNCLAIMED);
    static CELL: Cell<usize> = Cell::new(UNCLAIMED);
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
    CELL.with(|c| c.set(index * SPACING));
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
    /// Owned stripes, inline: stripe `i` is `cells[i * SPACING]`, the cells between are unused.
    /// Reaching a stripe is one bounds test of this thread's `CELL` and one scaled address.
    cells: CachePadded<[AtomicU64; CELLS]>,
    /// Threads without a stripe of their own.
    overflow: CachePadded<AtomicU64>,
}

impl StripedCounter {
    pub(crate) fn new() -> Self {
        StripedCounter {
            cells: CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))),
            overflow: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Adds one: a plain load and store on this thread's own stripe.
    #[inline(always)]
    pub(crate) fn add_one(&self) {
        match self.cells.get(CELL.with(Cell::get)) {
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
        match self.cells.get(index.saturating_mul(SPACING)) {
            Some(cell) => cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Release),
            None => {
                self.overflow.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// The total so far (every stripe is monotonic, so a later sum is never smaller).
    pub(crate) fn sum(&self) -> u64 {
        let stripes = self.cells.iter().step_by(SPACING);
        stripes.chain([&*self.overflow]).map(|c| c.load(Ordering::Acquire)).sum()
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
