//! Keyed instances with `shared = true` (SPEC §15 with §13), against a store that records what it
//! is handed: each key of a keyed limiter, breaker and bulkhead gets its own fleet link, named by
//! the key's text, and the instance that stands for the keys gets none; a keyed limiter leases one
//! permit at a time unless `lease` is set. (The Redis side: `resilience4cata-redis/tests/keyed.rs`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::__private::{self as p, Site};
use resilience4cata::bulkhead::BulkheadConfigBuilder;
use resilience4cata::circuit_breaker::CircuitBreakerConfigBuilder;
use resilience4cata::codes;
use resilience4cata::rate_limiter::RateLimiterConfigBuilder;
use resilience4cata::shared::{BreakerLink, LeasePool, SharedStateEvent, SharedStore, SlotPool};
use resilience4cata::{Registry, Rejection};

/// What the store was handed: `(policy, instance, key, lease)` per link.
type Handed = Arc<Mutex<Vec<(&'static str, String, Option<String>, u32)>>>;

/// A fleet of one that grants every lease in full and records each link (and keeps the limiters'
/// pools, to degrade them by hand).
#[derive(Debug, Default)]
struct Recording(Handed, Arc<Mutex<Vec<Arc<LeasePool>>>>);

impl SharedStore for Recording {
    fn store_timeout(&self) -> Duration {
        Duration::from_millis(25)
    }

    fn share_rate_limiter(&self, pool: Arc<LeasePool>) {
        self.note("rate_limiter", pool.instance(), pool.key(), pool.lease());
        self.1.lock().unwrap().push(Arc::clone(&pool));
        std::thread::spawn(move || {
            loop {
                pool.wait_wanted_blocking();
                pool.grant(pool.wanted_permits(), Duration::ZERO);
            }
        });
    }

    fn share_circuit_breaker(&self, link: Arc<BreakerLink>) {
        self.note("circuit_breaker", link.instance(), link.key(), link.permitted_calls_in_half_open());
    }

    fn share_bulkhead(&self, pool: Arc<SlotPool>) {
        self.note("bulkhead", pool.instance(), pool.key(), pool.lease());
        pool.grant(pool.max_concurrent_calls());
    }
}

impl Recording {
    fn note(&self, policy: &'static str, instance: &str, key: Option<&str>, lease: u32) {
        self.0.lock().unwrap().push((policy, instance.to_owned(), key.map(str::to_owned), lease));
    }
}

fn site(id: &str) -> Site<'_> {
    Site { id, name: None, config: None, is_async: false }
}

#[test]
fn each_key_of_a_shared_keyed_instance_has_its_own_fleet_link_named_by_its_text() {
    let handed = Handed::default();
    let registry = Registry::builder()
        .shared_state(Recording(Arc::clone(&handed), Arc::default()))
        .rate_limiter_instance("api", |r| r.shared(true).permits(100))
        .rate_limiter_instance("leased", |r| r.shared(true).permits(100).lease(7))
        .circuit_breaker_instance("hosts", |c| c.shared(true).permitted_calls_in_half_open(2))
        .bulkhead_instance("tenants", |b| b.shared(true).max_concurrent_calls(40))
        .build()
        .unwrap();
    let limiter = p::keyed_rate_limiter(&registry, site("api"), RateLimiterConfigBuilder::new()).unwrap();
    let leased = p::keyed_rate_limiter(&registry, site("leased"), RateLimiterConfigBuilder::new()).unwrap();
    let breaker = p::keyed_circuit_breaker(&registry, site("hosts"), CircuitBreakerConfigBuilder::new()).unwrap();
    let bulkhead = p::keyed_bulkhead(&registry, site("tenants"), BulkheadConfigBuilder::new()).unwrap();
    assert!(handed.lock().unwrap().is_empty(), "the instances standing for their keys hold no fleet state");

    limiter.for_key("acme").unwrap().acquire().unwrap();
    limiter.for_key("globex").unwrap().acquire().unwrap();
    limiter.for_key("acme").unwrap().acquire().unwrap(); // an existing key: no new link
    leased.for_key(&7u32).unwrap().acquire().unwrap();
    drop(breaker.for_key("a.example").unwrap());
    drop(bulkhead.for_key(&(1u8, "eu")).unwrap().acquire().unwrap());

    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        *handed.lock().unwrap(),
        [
            ("rate_limiter", "api".to_owned(), some("\"acme\""), 1), // a keyed limiter leases one
            ("rate_limiter", "api".to_owned(), some("\"globex\""), 1),
            ("rate_limiter", "leased".to_owned(), some("7"), 7), // unless `lease` says otherwise
            ("circuit_breaker", "hosts".to_owned(), some("\"a.example\""), 2),
            ("bulkhead", "tenants".to_owned(), some("(1, \"eu\")"), 4), // the bulkhead's rule as before
        ]
    );
}

#[test]
fn an_unkeyed_shared_instance_still_leases_a_tenth_and_has_no_key() {
    let handed = Handed::default();
    let registry = Registry::builder()
        .shared_state(Recording(Arc::clone(&handed), Arc::default()))
        .rate_limiter_instance("prices", |r| r.shared(true).permits(100))
        .build()
        .unwrap();
    let limiter = resilience4cata::Pipeline::builder(&registry, "prices")
        .rate_limiter_with(|r| r)
        .build::<(), std::io::Error>()
        .unwrap();
    limiter.execute(|| Ok(())).unwrap();
    assert_eq!(*handed.lock().unwrap(), [("rate_limiter", "prices".to_owned(), None, 10)]);
}

#[test]
fn a_shared_keyed_instance_without_a_store_is_r4c_reg_011() {
    let refused = Registry::builder().rate_limiter_instance("api", |r| r.shared(true)).build().unwrap_err();
    assert_eq!((refused.code(), refused.instance()), (codes::NO_SHARED_STORE, Some("api")), "{refused}");
    // The same from a site's own builder, when the keyed instance is made.
    let registry = Registry::builder().build().unwrap();
    let attrs = RateLimiterConfigBuilder::new().shared(true);
    let error = p::keyed_rate_limiter(&registry, site("api"), attrs).unwrap_err();
    assert_eq!((error.code(), error.instance()), (codes::NO_SHARED_STORE, Some("api")), "{error}");
}

#[test]
fn a_key_at_the_cap_is_refused_before_any_fleet_link_is_made() {
    let handed = Handed::default();
    let registry = Registry::builder()
        .shared_state(Recording(Arc::clone(&handed), Arc::default()))
        .bulkhead_instance("tenants", |b| b.shared(true).max_keys(1))
        .build()
        .unwrap();
    let bulkhead = p::keyed_bulkhead(&registry, site("tenants"), BulkheadConfigBuilder::new()).unwrap();
    let held = bulkhead.for_key("a").unwrap();
    let _in_flight = held.acquire().unwrap();
    assert!(matches!(bulkhead.for_key("b"), Err(Rejection::KeysExhausted { .. })));
    assert_eq!(handed.lock().unwrap().len(), 1, "only a's link");
}

#[test]
fn a_keyed_instance_publishes_degraded_when_its_first_key_degrades_and_recovered_when_its_last_recovers() {
    let pools: Arc<Mutex<Vec<Arc<LeasePool>>>> = Arc::default();
    let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let registry = Registry::builder()
        .shared_state(Recording(Handed::default(), Arc::clone(&pools)))
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance("api", |r| r.shared(true).permits(100))
        .build()
        .unwrap();
    let limiter = p::keyed_rate_limiter(&registry, site("api"), RateLimiterConfigBuilder::new()).unwrap();
    for key in ["a", "b", "c"] {
        limiter.for_key(key).unwrap().acquire().unwrap();
    }
    let pools = pools.lock().unwrap().clone();
    let degraded = |seen: &Mutex<Vec<SharedStateEvent>>| -> Vec<bool> {
        seen.lock().unwrap().iter().map(SharedStateEvent::is_degraded).collect()
    };
    pools.iter().for_each(|pool| pool.degrade());
    assert_eq!(degraded(&seen), [true], "one Degraded for the instance, not one per key");
    assert_eq!(seen.lock().unwrap()[0].instance(), "api");
    pools[0].recover();
    pools[1].recover();
    assert_eq!(degraded(&seen), [true], "a key is still degraded");
    pools[2].recover();
    assert_eq!(degraded(&seen), [true, false], "the last key recovered: Recovered");
    pools[1].degrade();
    assert_eq!(degraded(&seen), [true, false, true], "the next outage publishes again");
}
