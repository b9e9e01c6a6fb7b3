//! The class style with the other two ways of declaring policies (issue 17): `#[bundle]` and
//! `#[policy_order]` on an impl block and on its methods, with the trait style's precedence and
//! nesting rules, on the manual clock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{Registry, RegistryError, resilient};

mod order_fixture;

use order_fixture::ApiError;

/// A client whose every call fails, counting attempts.
pub struct Client {
    attempts: AtomicU32,
    policies: ClientPolicies,
}

// The block's bundle (three attempts 10 ms apart, defined in another crate) and the block's order
// (the bulkhead outside the retry) serve every method; a method's own attribute wins key by key
// and a method's own list replaces the block's.
#[resilient(policies = policies)]
#[bundle(testkit::bundles::quick_retry)]
#[policy_order(Bulkhead, Retry)]
impl Client {
    pub fn new(registry: &Registry) -> Result<Self, RegistryError> {
        Ok(Client { attempts: AtomicU32::new(0), policies: ClientPolicies::new(registry)? })
    }

    /// The bundle alone: 3 attempts, 10 ms apart.
    #[bulkhead(max_concurrent_calls = 1)]
    pub fn bundled(&self) -> Result<(), ApiError> {
        self.fail()
    }

    /// The bundle's delay, this method's attempt count.
    #[retry(max_attempts = 2)]
    #[bulkhead(max_concurrent_calls = 1)]
    pub fn overridden(&self) -> Result<(), ApiError> {
        self.fail()
    }

    /// Its own (default) order: the slot is given back before each backoff.
    #[policy_order(Retry, Bulkhead)]
    #[bulkhead(max_concurrent_calls = 1)]
    pub fn released(&self) -> Result<(), ApiError> {
        self.fail()
    }
}

// Block-level attributes protect every method of their block that takes `self`: helpers go in
// another block.
impl Client {
    fn fail(&self) -> Result<(), ApiError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Err(ApiError::Down)
    }
}

fn setup() -> (ManualClock, Registry, order_fixture::DuringBackoff, Client) {
    let (clock, registry, during_backoff) = order_fixture::watching_backoffs();
    let client = Client::new(&registry).unwrap();
    (clock, registry, during_backoff, client)
}

#[test]
fn a_bundle_on_the_block_serves_every_method_and_the_block_order_holds_the_slot_across_backoffs() {
    let (clock, registry, during_backoff, client) = setup();
    assert_eq!(client.bundled(), Err(ApiError::Down));
    assert_eq!(client.attempts.load(Ordering::SeqCst), 3, "the bundle's max_attempts");
    assert_eq!(clock.elapsed(), Duration::from_millis(20), "two waits of the bundle's 10 ms");
    assert_eq!(*during_backoff.lock().unwrap(), [(1, 0), (1, 0)], "the slot held while waiting");
    let id = "class_style_bundles_order::Client::bundled";
    let after = registry.bulkhead(id).unwrap().snapshot();
    assert_eq!((after.in_flight, after.available), (0, 1), "given back when the call ends");
}

#[test]
fn a_method_attribute_wins_over_the_block_bundle_key_by_key() {
    let (clock, _registry, _during_backoff, client) = setup();
    assert_eq!(client.overridden(), Err(ApiError::Down));
    assert_eq!(client.attempts.load(Ordering::SeqCst), 2, "the method's max_attempts");
    assert_eq!(clock.elapsed(), Duration::from_millis(10), "the bundle's delay");
}

#[test]
fn a_method_order_replaces_the_block_order() {
    let (_clock, _registry, during_backoff, client) = setup();
    assert_eq!(client.released(), Err(ApiError::Down));
    assert_eq!(client.attempts.load(Ordering::SeqCst), 3);
    assert_eq!(*during_backoff.lock().unwrap(), [(0, 1), (0, 1)], "nothing in flight while waiting");
}
