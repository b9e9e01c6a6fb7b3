//! Allocation counts of the pass paths of retry + rate limiter + bulkhead (sync and async) and of a
//! timeout whose attempt finishes in time, with a counting global allocator that counts only the
//! calling thread.

use resilience4cata::resilient;
use resilience4cata::testing::{self, ManualClock};

use testkit::Down;
use testkit::alloc::allocations_during;
use testkit::now;

#[global_allocator]
static GLOBAL: testkit::alloc::Counting = testkit::alloc::Counting;

#[resilient]
pub trait Api {
    #[retry(max_attempts = 3, delay = "0")]
    #[rate_limiter(permits = 1000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 4)]
    fn guarded(&self, x: u32) -> Result<u32, Down>;

    /// The whole sync stack of docs/benchmarks.md ("full_stack"): retry + breaker + rate limiter + bulkhead.
    #[retry(max_attempts = 3, delay = "0")]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 4)]
    fn full_stack(&self, x: u32) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "0")]
    #[rate_limiter(permits = 1000000, period = "1s", max_wait = "10ms")]
    #[bulkhead(max_concurrent_calls = 4, max_wait = "10ms")]
    async fn guarded_async(&self, x: u32) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "0")]
    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 4)]
    async fn timed(&self, x: u32) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    fn guarded(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
    fn full_stack(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
    async fn guarded_async(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
    async fn timed(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
}

fn api() -> ResilientApi<Backend> {
    let registry = testing::registry(&ManualClock::new()).build().unwrap();
    ResilientApi::new(Backend, &registry).unwrap()
}

#[test]
fn sync_pass_path_allocates_nothing() {
    let api = api();
    api.guarded(0).unwrap(); // warm up
    let n = allocations_during(|| {
        for i in 0..1000 {
            assert_eq!(api.guarded(i), Ok(i + 1));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn full_stack_pass_path_allocates_nothing() {
    let api = api();
    api.full_stack(0).unwrap(); // warm up (the breaker claims this thread's stripe)
    let n = allocations_during(|| {
        for i in 0..1000 {
            assert_eq!(api.full_stack(i), Ok(i + 1));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn async_pass_path_allocates_nothing() {
    let api = api();
    now(api.guarded_async(0)).unwrap();
    let n = allocations_during(|| {
        for i in 0..1000 {
            assert_eq!(now(api.guarded_async(i)), Ok(i + 1));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn a_timeout_that_never_needs_its_timer_allocates_nothing() {
    let api = api();
    now(api.timed(0)).unwrap();
    let n = allocations_during(|| {
        for i in 0..1000 {
            assert_eq!(now(api.timed(i)), Ok(i + 1));
        }
    });
    assert_eq!(n, 0);
}
