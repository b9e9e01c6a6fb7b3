//! A borrowed key (`tenant: &str`) of an existing key is found without allocating (SPEC §15), in
//! its own test binary since the counting allocator is process-wide.

use resilience4cata::resilient;
use resilience4cata::testing::{self, ManualClock};
use testkit::Down;
use testkit::alloc::allocations_during;

testkit::count_allocations!();

#[resilient]
pub trait Tenants {
    #[rate_limiter(permits = 1000000, period = "1s", key = tenant)]
    fn usage(&self, tenant: &str) -> Result<u32, Down>;

    #[circuit_breaker(key = host)]
    #[bulkhead(max_concurrent_calls = 4, key = host)]
    fn fetch(&self, host: &str) -> Result<u32, Down>;
}

struct Backend;

impl Tenants for Backend {
    fn usage(&self, _tenant: &str) -> Result<u32, Down> {
        Ok(1)
    }
    fn fetch(&self, _host: &str) -> Result<u32, Down> {
        Ok(1)
    }
}

#[test]
fn an_existing_str_key_is_found_without_allocating() {
    let clock = ManualClock::new();
    let api = ResilientTenants::new(Backend, &testing::registry(&clock).build().unwrap()).unwrap();
    let tenant = String::from("tenant-a");
    // The first call creates the key's state (and may allocate); the rest find it.
    assert_eq!(api.usage(&tenant), Ok(1));
    assert_eq!(api.fetch("a.example"), Ok(1));
    let n = allocations_during(|| {
        for _ in 0..1_000 {
            assert_eq!(api.usage(&tenant), Ok(1));
            assert_eq!(api.fetch("a.example"), Ok(1));
        }
    });
    assert_eq!(n, 0);
}
