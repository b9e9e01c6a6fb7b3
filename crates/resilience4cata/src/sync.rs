//! The synchronisation primitives of the lock-free state machines: std's, or loom's when the crate
//! is built for model checking (`RUSTFLAGS="--cfg loom"`), so the same code runs under every
//! interleaving loom explores (see `docs/reliability.md`). loom is a dev-dependency: only the
//! crate's own unit tests are built on it.

#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard, atomic};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard, atomic};

/// A value a live configuration update replaces whole (SPEC §16): readers at decision points
/// `load` it without a lock (an `arc_swap::ArcSwap`, one load and a debt slot, no allocation),
/// and every reading is one whole version, never half of one update and half of the next.
pub(crate) struct Live<C> {
    #[cfg(not(all(test, loom)))]
    cell: arc_swap::ArcSwap<C>,
    /// loom does not model arc-swap's internals: the same contract behind a modelled mutex.
    #[cfg(all(test, loom))]
    cell: Mutex<std::sync::Arc<C>>,
}

impl<C: std::fmt::Debug> std::fmt::Debug for Live<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.load().fmt(f)
    }
}

impl<C> Live<C> {
    /// A cell holding `value`. Loads it once: arc-swap registers each thread the first time it
    /// loads any cell in the process (one node, allocated only when no thread that ended left
    /// one to reuse, kept for the process's life), so the thread that builds an instance never
    /// allocates at its first decision; another thread may, once, at its first decision.
    pub(crate) fn new(value: C) -> Self {
        #[cfg(not(all(test, loom)))]
        {
            let live = Live { cell: arc_swap::ArcSwap::from_pointee(value) };
            drop(live.cell.load());
            #[allow(clippy::needless_return)]
            return live;
        }
        #[cfg(all(test, loom))]
        return Live { cell: Mutex::new(std::sync::Arc::new(value)) };
    }

    /// The current version, whole.
    #[inline]
    pub(crate) fn load(&self) -> LiveRef<C> {
        #[cfg(not(all(test, loom)))]
        return LiveRef(self.cell.load());
        #[cfg(all(test, loom))]
        return LiveRef(std::sync::Arc::clone(&self.cell.lock().unwrap()));
    }

    /// The current version, as an `Arc` of its own (kept past the reader's scope).
    pub(crate) fn load_full(&self) -> std::sync::Arc<C> {
        #[cfg(not(all(test, loom)))]
        return self.cell.load_full();
        #[cfg(all(test, loom))]
        return std::sync::Arc::clone(&self.cell.lock().unwrap());
    }

    /// Replaces the value: later `load`s see `value`, earlier ones keep the version they hold.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))] // reached through a live update (feature `serde`)
    pub(crate) fn store(&self, value: C) {
        #[cfg(not(all(test, loom)))]
        self.cell.store(std::sync::Arc::new(value));
        #[cfg(all(test, loom))]
        {
            *self.cell.lock().unwrap() = std::sync::Arc::new(value);
        }
    }
}

/// One version of a [`Live`] value, held by a reader (derefs to the value).
pub(crate) struct LiveRef<C>(
    #[cfg(not(all(test, loom)))] arc_swap::Guard<std::sync::Arc<C>>,
    #[cfg(all(test, loom))] std::sync::Arc<C>,
);

impl<C> std::ops::Deref for LiveRef<C> {
    type Target = C;

    #[inline]
    fn deref(&self) -> &C {
        &self.0
    }
}

/// A diagnostic for the contended benchmarks (issue 28), compiled only with
/// `RUSTFLAGS="--cfg r4c_cas_count"`: how many compare-and-sets of the rate limiter's TAT and of the
/// bulkhead's slot word failed and were retried, counted per thread (a thread-local add on the
/// failure path only, so the count does not touch a shared line). `cases time` prints them per call
/// of the measuring thread. Never part of a normal build.
///
/// Here, on the ground floor, so the policies' state machines can count into it; `__private`
/// re-exports it for the bench crate.
#[cfg(r4c_cas_count)]
pub mod cas_count {
    use std::cell::Cell;

    thread_local! {
        static FAILED: Cell<[u64; 2]> = const { Cell::new([0; 2]) };
    }

    /// Whose compare-and-set failed.
    #[derive(Clone, Copy, Debug)]
    pub enum Word {
        /// The rate limiter's TAT (`AtomicGcra::update_tat`).
        RateLimiterTat = 0,
        /// The bulkhead's slot word (`Slots::try_acquire_below`).
        BulkheadSlots = 1,
    }

    /// One failed compare-and-set on `word`, on this thread.
    #[inline(always)]
    pub fn failed(word: Word) {
        let _ = FAILED.try_with(|f| {
            let mut counts = f.get();
            counts[word as usize] += 1;
            f.set(counts);
        });
    }

    /// This thread's failed compare-and-sets so far: `[rate limiter TAT, bulkhead slots]`.
    pub fn counts() -> [u64; 2] {
        FAILED.try_with(Cell::get).unwrap_or_default()
    }
}
