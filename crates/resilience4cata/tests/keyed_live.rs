//! A live configuration update (SPEC §16) of a keyed instance (SPEC §15): it reaches every key's
//! state, keeps the keys and what each used, and a key made after it takes the new values.

use std::time::Duration;

use resilience4cata::__private::{self as p, Site};
use resilience4cata::Rejection;
use resilience4cata::rate_limiter::RateLimiterConfigBuilder;
use resilience4cata::testing::{self, ManualClock};

/// Closes issue 25's last rule: "keyed instances keep their keys".
#[test]
fn live_update_keeps_every_key_and_its_state() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .config_toml("[instances.api.rate_limiter]\npermits = 2\nperiod = \"1s\"\n")
        .build()
        .unwrap();
    let site = Site { id: "api", name: None, config: None, is_async: false };
    let keyed = p::keyed_rate_limiter(&registry, site, RateLimiterConfigBuilder::new()).unwrap();
    for _ in 0..2 {
        keyed.for_key("spent").unwrap().acquire().unwrap();
    }
    keyed.for_key("half").unwrap().acquire().unwrap();
    let handle = registry.rate_limiter("api").unwrap();
    assert_eq!(handle.snapshot().keys, 2);

    let change = registry.update_toml("[instances.api.rate_limiter]\npermits = 4\nperiod = \"1s\"\n").unwrap();
    assert_eq!(change.changed.len(), 1);

    assert_eq!(handle.snapshot().keys, 2, "the keys are kept");
    for (text, snapshot) in handle.keys(10) {
        assert_eq!(snapshot.config.permits, 4, "key {text} took the update");
    }
    // Each key keeps the share of its burst it used: no free burst for the spent key.
    let spent = keyed.for_key("spent").unwrap();
    assert!(matches!(spent.acquire(), Err(Rejection::RateLimitExceeded { .. })));
    assert_eq!(handle.key("\"half\"").unwrap().snapshot().available_permits, 2);
    // A key made after the update has the new burst.
    let fresh = keyed.for_key("fresh").unwrap();
    for _ in 0..4 {
        fresh.acquire().unwrap();
    }
    assert!(fresh.acquire().is_err());
    clock.advance(Duration::from_millis(250));
    spent.acquire().unwrap(); // the new rate: a permit per 250 ms
}
