//! Allocation counts of the retry paths, with a counting global allocator that counts only the
//! calling thread (so the test harness's own threads do not interfere).

use std::time::Duration;

use resilience4cata::{Registry, RetryEvent, resilient};

use testkit::alloc::{allocations_during, allocations_over};

testkit::count_allocations!();

#[derive(Debug, PartialEq)]
pub struct Down;

#[resilient]
pub trait Api {
    #[retry(max_attempts = 3, delay = "0")]
    fn zero_wait(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "10ms")]
    fn waits(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "0", budget_percent = 20)]
    fn budgeted(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    fn zero_wait(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down> {
        if flaky.replace(false) { Err(Down) } else { Ok(1) }
    }
    fn waits(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down> {
        self.zero_wait(flaky)
    }
    fn budgeted(&self, flaky: &std::cell::Cell<bool>) -> Result<u32, Down> {
        self.zero_wait(flaky)
    }
}

#[test]
fn success_path_allocates_nothing() {
    let registry = Registry::builder().build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let ok = std::cell::Cell::new(false);
    api.zero_wait(&ok).unwrap(); // warm up thread-locals
    assert_eq!(allocations_over(1000, || api.zero_wait(&ok).unwrap()), 0);
    assert_eq!(allocations_over(1000, || api.budgeted(&ok).unwrap()), 0);
}

#[test]
fn fail_once_then_succeed_allocates_nothing_without_listeners() {
    let registry = Registry::builder().build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let flaky = std::cell::Cell::new(true);
    api.zero_wait(&flaky).unwrap();
    let n = allocations_during(|| {
        for _ in 0..1000 {
            flaky.set(true);
            assert_eq!(api.zero_wait(&flaky), Ok(1));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn retries_with_waits_and_budget_refusals_allocate_nothing_on_the_manual_clock() {
    let (clock, registry) = testkit::manual();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let flaky = std::cell::Cell::new(true);
    api.waits(&flaky).unwrap();
    api.budgeted(&flaky).unwrap();
    let n = allocations_during(|| {
        for _ in 0..1000 {
            flaky.set(true);
            assert_eq!(api.waits(&flaky), Ok(1));
            flaky.set(true);
            let _ = api.budgeted(&flaky); // granted, then refused once the budget is spent
        }
    });
    assert_eq!(n, 0);
    assert!(clock.elapsed() > Duration::ZERO);
}

#[test]
fn the_counter_sees_allocations() {
    assert!(allocations_during(|| drop(std::hint::black_box(vec![1u8; 64]))) >= 1);
    // A listener builds and clones events: allocations are allowed there, and counted.
    let registry = Registry::builder().listen(|e: &RetryEvent| drop(format!("{e:?}"))).build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let flaky = std::cell::Cell::new(true);
    assert!(allocations_during(|| drop(api.zero_wait(&flaky))) > 0);
}
