//! Allocation counts of the circuit breaker's paths, with a counting global allocator that counts
//! only the calling thread (in its own test binary, since a global allocator is process-wide).

use std::cell::Cell;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection, resilient};

use testkit::Down;
use testkit::alloc::allocations_during;

testkit::count_allocations!();

#[resilient]
pub trait Stock {
    #[circuit_breaker]
    fn count(&self, fail: bool) -> Result<u32, Down>;

    #[circuit_breaker(window_type = Time, window_size = 10, slow_call_duration = "1s")]
    fn timed(&self, fail: bool) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "0")]
    #[circuit_breaker(window_size = 1000, minimum_calls = 1000)]
    fn retried(&self, fail: &Cell<bool>) -> Result<u32, Down>;
}

#[derive(Debug)]
struct Backend;

impl Stock for Backend {
    testkit::same_body! { fn(&self, fail: bool) -> Result<u32, Down> { Down::when(fail) } for count timed }
    fn retried(&self, fail: &Cell<bool>) -> Result<u32, Down> {
        Down::when(fail.replace(false))
    }
}

fn wrapped(clock: &ManualClock) -> ResilientStock<Backend> {
    ResilientStock::new(Backend, &testing::registry(clock).build().unwrap()).unwrap()
}

#[test]
fn closed_success_path_allocates_nothing() {
    let stock = wrapped(&ManualClock::new());
    stock.count(false).unwrap(); // warm up thread-locals (the stripe claim)
    stock.timed(false).unwrap();
    let n = allocations_during(|| {
        for _ in 0..1_000 {
            stock.count(false).unwrap();
            stock.timed(false).unwrap();
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn recording_failures_opening_and_refusing_allocate_nothing() {
    let stock = wrapped(&ManualClock::new());
    stock.count(false).unwrap();
    let n = allocations_during(|| {
        for i in 0..100 {
            let _ = stock.count(i % 2 == 0); // 50 % failures over 100 calls: opens at the 100th
        }
        for _ in 0..100 {
            assert!(matches!(stock.count(false), Err(Down::Rejected(Rejection::CallNotPermitted { .. }))));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn a_retried_attempt_through_the_breaker_allocates_nothing() {
    let stock = wrapped(&ManualClock::new());
    let fail = Cell::new(false);
    stock.retried(&fail).unwrap();
    let n = allocations_during(|| {
        for _ in 0..100 {
            fail.set(true);
            assert_eq!(stock.retried(&fail).unwrap(), 1); // fails once, succeeds on the retry
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn the_system_clock_path_allocates_nothing_after_start() {
    let registry = Registry::builder().build().unwrap();
    let stock = ResilientStock::new(Backend, &registry).unwrap();
    stock.count(false).unwrap();
    assert_eq!(allocations_during(|| stock.count(false).map(drop).unwrap()), 0);
}
