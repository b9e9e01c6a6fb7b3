//! Keyed instances (SPEC §15) through the `__private` API the generated code calls and the
//! handles, on the manual clock.

use std::time::Duration;

use resilience4cata::__private::{self as p, Site, key_arg};
use resilience4cata::circuit_breaker::{CircuitBreakerConfigBuilder, State};
use resilience4cata::rate_limiter::RateLimiterConfigBuilder;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection};

fn site(id: &str) -> Site<'_> {
    Site { id, name: None, config: None, is_async: false }
}

fn limiter(registry: &Registry, id: &str, permits: u32, max_keys: u32) -> p::KeyedRateLimiterPolicy {
    let b = RateLimiterConfigBuilder::new().permits(permits).period(Duration::from_secs(1)).max_keys(max_keys);
    p::keyed_rate_limiter(registry, site(id), b).unwrap()
}

#[test]
fn two_keys_limiters_are_independent_to_the_permit() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let keyed = limiter(&registry, "api", 2, 100);
    let tenant = String::from("acme");
    for _ in 0..2 {
        keyed.for_key(key_arg!(tenant.as_str())).unwrap().acquire().unwrap();
    }
    let refused = keyed.for_key(key_arg!(tenant.as_str())).unwrap().acquire();
    assert!(matches!(refused, Err(Rejection::RateLimitExceeded { .. })), "{refused:?}");
    for _ in 0..2 {
        keyed.for_key(key_arg!("globex")).unwrap().acquire().unwrap();
    }
    assert!(keyed.for_key("globex").unwrap().acquire().is_err());
    clock.advance(Duration::from_millis(500));
    keyed.for_key("acme").unwrap().acquire().unwrap(); // one permit back for each
    assert!(keyed.for_key("acme").unwrap().acquire().is_err());
    let snapshot = registry.rate_limiter("api").unwrap().snapshot();
    assert_eq!(snapshot.keys, 2);
}

#[test]
fn a_key_by_value_is_looked_up_as_itself() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let keyed = limiter(&registry, "ids", 1, 100);
    let user: u64 = 7;
    keyed.for_key(key_arg!(user)).unwrap().acquire().unwrap();
    assert!(keyed.for_key(key_arg!(user)).unwrap().acquire().is_err());
    keyed.for_key(key_arg!((user, "eu"))).unwrap().acquire().unwrap();
    let handle = registry.rate_limiter("ids").unwrap();
    let texts: Vec<String> = handle.keys(10).into_iter().map(|(text, _)| text.to_string()).collect();
    assert_eq!(texts, ["(7, \"eu\")", "7"], "most recently used first");
    assert_eq!(handle.key("7").unwrap().snapshot().available_permits, 0);
}

#[test]
fn a_breaker_open_for_one_key_serves_another() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = CircuitBreakerConfigBuilder::new().window_size(2).minimum_calls(2);
    let keyed = p::keyed_circuit_breaker(&registry, site("hosts"), b).unwrap();
    for _ in 0..2 {
        let key = keyed.for_key("a.example").unwrap();
        let permit = key.acquire().unwrap();
        permit.record(p::Outcome::Failure);
    }
    let a_key = keyed.for_key("a.example").unwrap();
    assert!(matches!(a_key.acquire(), Err(Rejection::CallNotPermitted { .. })));
    let b_key = keyed.for_key("b.example").unwrap();
    let permit = b_key.acquire().unwrap();
    permit.record(p::Outcome::Success);
    let handle = registry.circuit_breaker("hosts").unwrap();
    assert_eq!(handle.key("\"a.example\"").unwrap().snapshot().state, State::Open);
    assert_eq!(handle.key("\"b.example\"").unwrap().snapshot().state, State::Closed);
}

#[test]
fn max_keys_zero_is_a_coded_error() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = RateLimiterConfigBuilder::new().max_keys(0);
    let e = p::keyed_rate_limiter(&registry, site("zero"), b).unwrap_err();
    assert_eq!(e.code(), "R4C-REG-003");
    assert!(e.message().contains("max_keys"), "{e}");
}

#[test]
fn an_id_keyed_at_one_site_and_unkeyed_at_another_is_refused() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    limiter(&registry, "both", 5, 10);
    let e =
        p::rate_limiter(&registry, site("both"), RateLimiterConfigBuilder::new().permits(5).max_keys(10)).unwrap_err();
    assert_eq!(e.code(), "R4C-REG-008");
    assert!(e.message().contains("unkeyed here"), "{e}");
    p::rate_limiter(&registry, site("first"), RateLimiterConfigBuilder::new()).unwrap();
    let e = p::keyed_rate_limiter(&registry, site("first"), RateLimiterConfigBuilder::new()).unwrap_err();
    assert_eq!(e.code(), "R4C-REG-008");
    // A second keyed site of the same id shares its keys.
    let again = limiter(&registry, "both", 5, 10);
    drop(again.for_key("k").unwrap());
    assert_eq!(registry.rate_limiter("both").unwrap().snapshot().keys, 1);
}
