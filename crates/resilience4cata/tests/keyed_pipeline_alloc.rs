//! A keyed pipeline's call for a key it already has allocates nothing (SPEC §15), sync and async,
//! with every keyable policy keyed and a retry around them, under the counting allocator.

use std::time::Duration;

use resilience4cata::Pipeline;
use resilience4cata::testing::{self, ManualClock};
use testkit::alloc::allocations_over;

testkit::count_allocations!();

type Io = std::io::Error;

#[test]
fn an_existing_key_allocates_nothing_sync() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let api = Pipeline::builder(&registry, "alloc-sync")
        .keyed::<String>()
        .retry()
        .circuit_breaker()
        .rate_limiter_with(|r| r.permits(1_000_000).period(Duration::from_secs(1)))
        .adaptive_limit()
        .bulkhead()
        .build::<u32, Io>()
        .unwrap();
    let request = String::from("client-42");
    api.execute_for(&request, || Ok(1)).unwrap(); // the new key may allocate
    api.execute_for("client-7", || Ok(1)).unwrap();
    let allocations = allocations_over(10_000, || api.execute_for(request.as_str(), || Ok(1)).unwrap());
    assert_eq!(allocations, 0, "an existing key's call allocates nothing");
}

#[test]
fn an_existing_key_allocates_nothing_async() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let api = Pipeline::builder(&registry, "alloc-async")
        .keyed::<u64>()
        .retry()
        .timeout_with(|t| t.duration(Duration::from_secs(1)))
        .circuit_breaker()
        .rate_limiter_with(|r| r.permits(1_000_000).period(Duration::from_secs(1)))
        .bulkhead()
        .build::<u32, Io>()
        .unwrap();
    testkit::now(api.execute_async_for(&42, || async { Ok(1) })).unwrap();
    let allocations =
        allocations_over(10_000, || testkit::now(api.execute_async_for(&42, || async { Ok(1) })).unwrap());
    assert_eq!(allocations, 0, "an existing key's async call allocates nothing");
}
