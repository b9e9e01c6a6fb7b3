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

/// What the generated method does with a keyed limiter: the key first, then the policy, then the
/// method (counted in `calls`).
fn call(keyed: &p::KeyedRateLimiterPolicy, key: &str, calls: &mut u32) -> Result<(), Rejection> {
    let held = keyed.for_key(key_arg!(key))?;
    held.acquire()?;
    *calls += 1;
    Ok(())
}

#[test]
fn a_key_is_evicted_only_at_rest_and_a_busy_table_fails_closed() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let keyed = limiter(&registry, "evict", 1, 2);
    let mut calls = 0;
    call(&keyed, "spent", &mut calls).unwrap(); // its burst used: not at rest for a second
    let in_flight = keyed.for_key("held").unwrap(); // a call in flight
    let refused = call(&keyed, "new", &mut calls);
    assert!(matches!(refused, Err(Rejection::KeysExhausted { ref instance }) if &**instance == "evict"), "{refused:?}");
    assert_eq!(calls, 1, "the method is not called");
    drop(in_flight);
    call(&keyed, "new", &mut calls).unwrap(); // "held" is at rest now: it goes
    let handle = registry.rate_limiter("evict").unwrap();
    assert!(handle.key("\"held\"").is_none());
    assert_eq!(handle.key("\"spent\"").unwrap().snapshot().available_permits, 0, "never evicted mid-period");
    let s = handle.snapshot();
    assert_eq!((s.keys, s.evicted, s.keys_exhausted), (2, 1, 1));
    // Both keys used their burst: nothing at rest until a period passes.
    assert!(matches!(call(&keyed, "third", &mut calls), Err(Rejection::KeysExhausted { .. })));
    clock.advance(Duration::from_secs(1));
    call(&keyed, "third", &mut calls).unwrap();
    assert_eq!(handle.snapshot().evicted, 2);
}

#[test]
fn a_breaker_key_with_a_failure_in_its_window_is_never_evicted() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = CircuitBreakerConfigBuilder::new().window_size(10).minimum_calls(10).max_keys(1);
    let keyed = p::keyed_circuit_breaker(&registry, site("window"), b).unwrap();
    let a = keyed.for_key("a").unwrap();
    a.acquire().unwrap().record(p::Outcome::Failure);
    drop(a);
    assert!(matches!(keyed.for_key("b"), Err(Rejection::KeysExhausted { .. })));
    registry.circuit_breaker("window").unwrap().key("\"a\"").unwrap().reset();
    assert!(keyed.for_key("b").is_ok(), "a clean Closed breaker is at rest");
}

#[test]
fn an_event_carries_the_key_text() {
    let clock = ManualClock::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let registry = testing::registry(&clock)
        .listen(move |e: &resilience4cata::rate_limiter::RateLimiterEvent| {
            if let resilience4cata::rate_limiter::RateLimiterEvent::Permitted { key, .. } = e {
                sink.lock().unwrap().push(key.clone());
            }
        })
        .build()
        .unwrap();
    let keyed = limiter(&registry, "events", 5, 10);
    keyed.for_key("acme").unwrap().acquire().unwrap();
    keyed.for_key(&42u16).unwrap().acquire().unwrap();
    let unkeyed = p::rate_limiter(&registry, site("plain"), RateLimiterConfigBuilder::new()).unwrap();
    unkeyed.acquire().unwrap();
    let keys: Vec<Option<String>> = seen.lock().unwrap().iter().map(|k| k.as_deref().map(str::to_owned)).collect();
    assert_eq!(keys, [Some("\"acme\"".to_owned()), Some("42".to_owned()), None]);
}

#[test]
fn a_huge_debug_key_is_cut_at_256_bytes() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let keyed = limiter(&registry, "huge", 5, 10);
    let huge = "k".repeat(1 << 20);
    assert_eq!(keyed.for_key(huge.as_str()).unwrap().key_text().len(), 256 + '…'.len_utf8());
    let (text, _) = registry.rate_limiter("huge").unwrap().keys(1).remove(0);
    assert!(text.starts_with("\"kkk") && text.ends_with('…'), "{text}");
    assert!(keyed.for_key(huge.as_str()).is_ok(), "found again by the key, not its text");
    assert_eq!(registry.rate_limiter("huge").unwrap().snapshot().keys, 1);
}

#[test]
fn keyed_bulkheads_and_adaptive_limits_count_per_key() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = resilience4cata::bulkhead::BulkheadConfigBuilder::new().max_concurrent_calls(1);
    let bulkhead = p::keyed_bulkhead(&registry, site("slots"), b).unwrap();
    let (a, b) = (bulkhead.for_key("a").unwrap(), bulkhead.for_key("b").unwrap());
    let (_slot_a, _slot_b) = (a.acquire().unwrap(), b.acquire().unwrap());
    assert!(matches!(a.acquire(), Err(Rejection::BulkheadFull { .. })));
    let s = registry.bulkhead("slots").unwrap().snapshot();
    assert_eq!((s.keys, s.in_flight), (2, 2), "in flight: the sum over keys");
    let l = resilience4cata::adaptive_limit::AdaptiveLimitConfigBuilder::new().initial_limit(1).min_limit(1);
    let limit = p::keyed_adaptive_limit(&registry, site("limit"), l).unwrap();
    let x = limit.for_key(&1u8).unwrap();
    let _permit = x.acquire().unwrap();
    assert!(matches!(x.acquire(), Err(Rejection::LimitExceeded { .. })));
    assert!(limit.for_key(&2u8).unwrap().acquire().is_ok());
}

/// SPEC §15: a keyed instance's snapshot shows its most recently used key, where a refused call is
/// not a use. Key a spends its burst, key b is served once, then a is refused: the instance shows
/// b's permits. Sixteen instances, so a choice that ignored refusals (a and b tie on the lookup
/// stamp, ordered by their hashes) would show a's in about half of them.
#[test]
fn a_refused_call_is_not_a_use_for_the_instance_snapshot() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    for n in 0..16 {
        let id = format!("mru-{n}");
        let keyed = limiter(&registry, &id, 3, 10);
        for _ in 0..3 {
            keyed.for_key("a").unwrap().acquire().unwrap();
        }
        keyed.for_key("b").unwrap().acquire().unwrap();
        let refused = keyed.for_key("a").unwrap().acquire();
        assert!(matches!(refused, Err(Rejection::RateLimitExceeded { .. })), "{refused:?}");
        let handle = registry.rate_limiter(&id).unwrap();
        assert_eq!(handle.snapshot().available_permits, 2, "{id}: b's permits, not the refused a's");
        assert_eq!(handle.key("\"a\"").unwrap().snapshot().available_permits, 0);
    }
    let keyed = limiter(&registry, "mru-later", 1, 10);
    keyed.for_key("a").unwrap().acquire().unwrap();
    keyed.for_key("b").unwrap().acquire().unwrap();
    clock.advance(Duration::from_secs(1));
    assert!(keyed.for_key("b").unwrap().acquire().is_ok());
    assert!(keyed.for_key("b").unwrap().acquire().is_err());
    keyed.for_key("a").unwrap().acquire().unwrap(); // served: a use again
    assert_eq!(registry.rate_limiter("mru-later").unwrap().snapshot().available_permits, 0);
}

/// The same rule for a breaker: a's breaker is open and refuses, b's served a call: the instance
/// shows Closed (b's state), and a's served call after its wait shows a's Half-open.
#[test]
fn a_keyed_breaker_shows_its_last_served_key_not_the_one_it_refused() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let b = CircuitBreakerConfigBuilder::new()
        .window_size(2)
        .minimum_calls(2)
        .wait_in_open(Duration::from_secs(10))
        .permitted_calls_in_half_open(2);
    let keyed = p::keyed_circuit_breaker(&registry, site("mru-hosts"), b).unwrap();
    for _ in 0..2 {
        keyed.for_key("a").unwrap().acquire().unwrap().record(p::Outcome::Failure);
    }
    keyed.for_key("b").unwrap().acquire().unwrap().record(p::Outcome::Success);
    for _ in 0..3 {
        assert!(matches!(keyed.for_key("a").unwrap().acquire(), Err(Rejection::CallNotPermitted { .. })));
    }
    let handle = registry.circuit_breaker("mru-hosts").unwrap();
    assert_eq!(handle.snapshot().state, State::Closed, "b's state: a's refusals are not uses");
    clock.advance(Duration::from_secs(10));
    keyed.for_key("a").unwrap().acquire().unwrap().record(p::Outcome::Success);
    assert_eq!(handle.snapshot().state, State::HalfOpen);
}
