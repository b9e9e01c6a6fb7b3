//! Keyed instances (SPEC §15) under the counting allocator: an existing key's pass path allocates
//! nothing, and a flood of distinct keys keeps the table, and its memory, bounded without loosening
//! any key's limit.

use std::time::Duration;

use resilience4cata::__private::{self as p, Site, key_arg};
use resilience4cata::Rejection;
use resilience4cata::rate_limiter::RateLimiterConfigBuilder;
use resilience4cata::testing::{self, ManualClock};
use testkit::alloc::{allocations_over, net_bytes};

testkit::count_allocations!();

fn site(id: &str) -> Site<'_> {
    Site { id, name: None, config: None, is_async: false }
}

#[test]
fn a_borrowed_str_key_is_found_without_allocating() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = RateLimiterConfigBuilder::new().permits(1_000_000).period(Duration::from_secs(1));
    let keyed = p::keyed_rate_limiter(&registry, site("tenants"), b).unwrap();
    let request = String::from("tenant-42");
    let tenant: &str = &request;
    keyed.for_key(key_arg!(tenant)).unwrap().acquire().unwrap(); // the new key may allocate
    keyed.for_key(key_arg!("tenant-7")).unwrap().acquire().unwrap();
    let allocations = allocations_over(10_000, || keyed.for_key(key_arg!(tenant)).unwrap().acquire());
    assert_eq!(allocations, 0, "an existing key's lookup and pass path allocate nothing");
    let id = 7u64;
    keyed.for_key(key_arg!(id)).unwrap().acquire().unwrap();
    assert_eq!(allocations_over(10_000, || keyed.for_key(key_arg!(id)).unwrap().acquire()), 0);
}

/// 1,000,000 distinct keys through a limiter of 1 permit per second and `max_keys` 10,000, the
/// clock moving a second every 5,000 keys: never more than 10,000 keys, memory flat once the table
/// is full, no key refused for want of room (half the table is always at rest), and a key that
/// used its burst this second is still refused when it comes back (it was never forgotten and
/// given a fresh burst).
#[test]
fn a_million_distinct_keys_stay_bounded_and_no_limit_is_loosened() {
    const MAX_KEYS: u32 = 10_000;
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = RateLimiterConfigBuilder::new().permits(1).period(Duration::from_secs(1)).max_keys(MAX_KEYS);
    let keyed = p::keyed_rate_limiter(&registry, site("flood"), b).unwrap();
    let handle = registry.rate_limiter("flood").unwrap();
    let start = net_bytes();
    let mut full = 0;
    for key in 0..1_000_000u64 {
        if key % 5_000 == 0 {
            clock.advance(Duration::from_secs(1));
        }
        keyed.for_key(&key).unwrap().acquire().unwrap();
        if key % 1_000 == 999 {
            // Back within the same second: its limit still binds.
            let again = keyed.for_key(&(key - 500)).unwrap().acquire();
            assert!(matches!(again, Err(Rejection::RateLimitExceeded { .. })), "key {} got a fresh burst", key - 500);
        }
        if key == u64::from(MAX_KEYS) - 1 {
            full = net_bytes() - start;
        }
    }
    let s = handle.snapshot();
    assert!(s.keys <= MAX_KEYS, "{} keys", s.keys);
    assert_eq!(s.keys_exhausted, 0);
    assert_eq!(s.evicted, 1_000_000 - u64::from(s.keys));
    let end = net_bytes() - start;
    eprintln!("bytes per key at the cap: {}; after the flood: {} bytes in all", full / i64::from(MAX_KEYS), end);
    assert!(end <= full + full / 4, "memory grew from {full} to {end} bytes");
}
