//! The workspace's one counting allocator: [`Counting`] forwards to the system allocator and bumps a
//! thread-local counter.
//!
//! It counts only once installed: `crates/bench` installs it for every bench binary, and each
//! zero-allocation test binary of the runtime installs it with [`count_allocations!`](crate::count_allocations)
//! (`#[global_allocator] static GLOBAL: testkit::alloc::Counting = testkit::alloc::Counting;`).
//! Counting only the calling thread keeps the number honest when a case spawns a contender thread,
//! a runtime has background threads or the test harness runs other tests in parallel: a policy that
//! moved work to another thread would still be caught by the time measurement, and the count says
//! what the caller's own path costs.
//!
//! The cost is one thread-local increment per allocation, paid by every case that allocates and by
//! none that do not.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated minus bytes freed by this thread (a block freed by another thread stays
    /// counted here): what a single-threaded case keeps alive.
    static NET_BYTES: Cell<i64> = const { Cell::new(0) };
}

/// The counting allocator: [`System`] plus a per-thread count of `alloc`, `alloc_zeroed` and
/// `realloc` calls (a `realloc` may move the block, so it counts as an allocation).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

#[inline]
fn bump() {
    // `try_with`: an allocation during thread teardown, after the slot is gone, is not counted.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

#[inline]
fn bytes(delta: i64) {
    let _ = NET_BYTES.try_with(|n| n.set(n.get() + delta));
}

// The one `unsafe` of the workspace's tests and benches: a global allocator can only be written as
// an unsafe impl. Every method forwards to `System` with the caller's own arguments, so the
// caller's obligations pass through unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        bytes(layout.size() as i64);
        // SAFETY: forwarded verbatim; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        bytes(layout.size() as i64);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        bytes(-(layout.size() as i64));
        // SAFETY: `ptr` came from this allocator, which is `System` underneath.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        bytes(new_size as i64 - layout.size() as i64);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations made so far by the calling thread (since it started); always 0 where [`Counting`]
/// is not the global allocator.
///
/// ```
/// #[global_allocator]
/// static GLOBAL: testkit::alloc::Counting = testkit::alloc::Counting;
///
/// let before = testkit::alloc::allocations();
/// let v = std::hint::black_box(vec![1u8; 16]);
/// assert_eq!(testkit::alloc::allocations() - before, 1);
/// drop(v);
/// ```
#[inline]
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes the calling thread allocated and did not free since it started (frees by other threads
/// are not seen): the difference of two readings is what a single-threaded stretch kept alive.
///
/// ```
/// testkit::count_allocations!();
///
/// let before = testkit::alloc::net_bytes();
/// let kept = std::hint::black_box(vec![0u8; 1000]);
/// assert_eq!(testkit::alloc::net_bytes() - before, 1000);
/// drop(kept);
/// assert_eq!(testkit::alloc::net_bytes() - before, 0);
/// ```
pub fn net_bytes() -> i64 {
    NET_BYTES.try_with(Cell::get).unwrap_or(0)
}

/// The calling thread's allocations while `f` runs.
///
/// ```
/// #[global_allocator]
/// static GLOBAL: testkit::alloc::Counting = testkit::alloc::Counting;
///
/// assert_eq!(testkit::alloc::allocations_during(|| drop(std::hint::black_box(Box::new(1u8)))), 1);
/// assert_eq!(testkit::alloc::allocations_during(|| {}), 0);
/// ```
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = allocations();
    f();
    allocations() - before
}

/// The calling thread's allocations while `f` runs `runs` times (its results dropped as they come):
/// the zero-allocation tests' hot loops.
///
/// ```
/// testkit::count_allocations!();
///
/// assert_eq!(testkit::alloc::allocations_over(1000, || 2 + 2), 0);
/// assert_eq!(testkit::alloc::allocations_over(3, || std::hint::black_box(Box::new(1u8))), 3);
/// ```
pub fn allocations_over<T>(runs: u32, mut f: impl FnMut() -> T) -> u64 {
    allocations_during(|| {
        for _ in 0..runs {
            drop(f());
        }
    })
}

/// Installs [`Counting`] as the global allocator of the test binary that invokes it, at the top
/// level of the test file: a binary that does not invoke it keeps the system allocator (linking
/// `testkit` installs nothing).
///
/// ```
/// testkit::count_allocations!();
///
/// assert_eq!(testkit::alloc::allocations_during(|| drop(std::hint::black_box(vec![1u8; 8]))), 1);
/// ```
#[macro_export]
macro_rules! count_allocations {
    () => {
        #[global_allocator]
        static GLOBAL: $crate::alloc::Counting = $crate::alloc::Counting;
    };
}
