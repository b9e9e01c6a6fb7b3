//! Allocation counts of the pass paths of retry + rate limiter + bulkhead (sync and async) and of a
//! timeout whose attempt finishes in time, with a counting global allocator that counts only the
//! calling thread.

use resilience4cata::resilient;

use testkit::Down;
use testkit::alloc::allocations_during;
use testkit::now;

testkit::count_allocations!();

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
    ResilientApi::new(Backend, &testkit::manual().1).unwrap()
}

/// One warm-up call (the breaker claims this thread's stripe), then 1000 calls that pass, none of
/// which may allocate.
fn assert_passes_without_allocating(call: impl Fn(u32) -> Result<u32, Down>) {
    call(0).unwrap();
    let n = allocations_during(|| {
        for i in 1..=1000 {
            assert_eq!(call(i), Ok(i + 1));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn sync_pass_path_allocates_nothing() {
    let api = api();
    assert_passes_without_allocating(|i| api.guarded(i));
}

#[test]
fn full_stack_pass_path_allocates_nothing() {
    let api = api();
    assert_passes_without_allocating(|i| api.full_stack(i));
}

#[test]
fn async_pass_path_allocates_nothing() {
    let api = api();
    assert_passes_without_allocating(|i| now(api.guarded_async(i)));
}

#[test]
fn a_timeout_that_never_needs_its_timer_allocates_nothing() {
    let api = api();
    assert_passes_without_allocating(|i| now(api.timed(i)));
}
