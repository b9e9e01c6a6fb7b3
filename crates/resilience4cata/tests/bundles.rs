//! SPEC §3 "Bundles": `bundle!` and `#[bundle(path)]`. The precedence, one test per step (type
//! bundles < type attributes < method bundles < method attributes; the later of two bundles
//! wins), read from the resolved configuration in `registry.snapshot()`; the SPEC's `charge`
//! example on the manual clock; bundles used from another module (by `use` and by path) and from
//! another crate (`testkit::bundles`); a path written in a bundle resolving where it is used;
//! bundles on async methods.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ApiError {
    Busy,
    NotFound,
    #[rejection]
    Rejected(Rejection),
}

pub mod policies {
    resilience4cata::bundle! {
        /// Calls that must not be lost (the SPEC's example).
        pub critical = #[retry(max_attempts = 5, delay = "100ms")] #[circuit_breaker(window_size = 50)];
        /// Slow, fixed retries.
        pub(crate) patient = #[retry(max_attempts = 4, delay = "1s", backoff = Fixed)];
        /// Gives up at once on `NotFound`: `crate::ApiError` is the using crate's.
        pub(crate) stop_on_missing = #[retry(max_attempts = 3, abort_on = crate::ApiError::NotFound)];
    }
}

use policies::patient;

/// A backend failing with `error` on every call, counting the calls.
struct Failing {
    calls: AtomicU32,
    error: fn() -> ApiError,
}

fn failing(error: fn() -> ApiError) -> Failing {
    Failing { calls: AtomicU32::new(0), error }
}

impl Failing {
    fn fail<T>(&self) -> Result<T, ApiError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err((self.error)())
    }
}

/// A manual clock and a registry on it, without jitter.
fn on_manual_clock() -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().expect("a registry");
    (clock, registry)
}

/// `(max_attempts, delay)` of the retry instance whose id ends with `suffix`.
fn retry_of(registry: &Registry, suffix: &str) -> (u32, Duration) {
    let snapshot = registry.snapshot();
    let found = snapshot.retries().iter().find(|r| r.instance.ends_with(suffix));
    let config = &found.unwrap_or_else(|| panic!("no retry instance `…{suffix}`")).config;
    (config.max_attempts, config.delay)
}

fn breaker_window(registry: &Registry, suffix: &str) -> u32 {
    let snapshot = registry.snapshot();
    let found = snapshot.circuit_breakers().iter().find(|r| r.instance.ends_with(suffix));
    found.unwrap_or_else(|| panic!("no breaker `…{suffix}`")).config.window_size
}

const MS: fn(u64) -> Duration = Duration::from_millis;

// The precedence steps read the resolved configuration only: their wrappers need no delegate.

// Step 1: a bundle on the trait applies to every method.
#[resilient]
#[bundle(policies::critical)]
pub trait TypeBundle {
    fn get(&self) -> Result<u32, ApiError>;
    fn put(&self) -> Result<u32, ApiError>;
}

#[test]
fn a_bundle_on_the_trait_applies_to_every_method() {
    let (_, registry) = on_manual_clock();
    let _wrapper = ResilientTypeBundle::new((), &registry).unwrap();
    for method in ["TypeBundle::get", "TypeBundle::put"] {
        assert_eq!(retry_of(&registry, method), (5, MS(100)));
        assert_eq!(breaker_window(&registry, method), 50);
    }
}

// Step 2: the trait's attributes win over the trait's bundles, key by key.
#[resilient]
#[bundle(policies::critical)]
#[retry(max_attempts = 2)]
pub trait TypeAttribute {
    fn get(&self) -> Result<u32, ApiError>;
}

#[test]
fn the_trait_attributes_win_over_the_trait_bundles_key_by_key() {
    let (_, registry) = on_manual_clock();
    let _wrapper = ResilientTypeAttribute::new((), &registry).unwrap();
    assert_eq!(retry_of(&registry, "TypeAttribute::get"), (2, MS(100)));
    assert_eq!(breaker_window(&registry, "TypeAttribute::get"), 50);
}

// Step 3: a method's bundle wins over the trait's attributes (and bundles), key by key.
#[resilient]
#[bundle(policies::critical)]
#[retry(max_attempts = 2, delay = "10ms")]
pub trait MethodBundle {
    #[bundle(patient)]
    fn get(&self) -> Result<u32, ApiError>;
    fn put(&self) -> Result<u32, ApiError>;
}

#[test]
fn a_method_bundle_wins_over_the_trait_attributes() {
    let (_, registry) = on_manual_clock();
    let _wrapper = ResilientMethodBundle::new((), &registry).unwrap();
    assert_eq!(retry_of(&registry, "MethodBundle::get"), (4, MS(1000)));
    assert_eq!(breaker_window(&registry, "MethodBundle::get"), 50, "a key the method bundle does not write");
    assert_eq!(retry_of(&registry, "MethodBundle::put"), (2, MS(10)), "a method without the bundle");
}

// Step 4: a method's attributes win over its bundles, key by key (the SPEC's `charge`).
#[resilient]
pub trait Payments {
    #[bundle(policies::critical)]
    #[retry(max_attempts = 2)]
    fn charge(&self, cents: u64) -> Result<u64, ApiError>;

    // A bundle from another crate of the workspace.
    #[bundle(testkit::bundles::quick_retry)]
    fn other_crate(&self) -> Result<u32, ApiError>;

    // A path written in a bundle, resolved where the bundle is used.
    #[bundle(policies::stop_on_missing)]
    fn use_site_path(&self) -> Result<u32, ApiError>;
}

impl Payments for Failing {
    fn charge(&self, _cents: u64) -> Result<u64, ApiError> {
        self.fail()
    }
    fn other_crate(&self) -> Result<u32, ApiError> {
        self.fail()
    }
    fn use_site_path(&self) -> Result<u32, ApiError> {
        self.fail()
    }
}

#[test]
fn a_method_attribute_wins_over_the_method_bundles_key_by_key() {
    let (clock, registry) = on_manual_clock();
    let payments = ResilientPayments::new(failing(|| ApiError::Busy), &registry).unwrap();
    assert_eq!(payments.charge(100), Err(ApiError::Busy));
    assert_eq!(payments.delegate().calls.load(Ordering::SeqCst), 2, "2 attempts, the attribute's");
    assert_eq!(clock.elapsed(), MS(100), "one wait, the bundle's delay");
    assert_eq!(breaker_window(&registry, "Payments::charge"), 50);
}

// Two bundles on one method: the later wins, key by key.
#[resilient]
pub trait TwoBundles {
    #[bundle(policies::critical)]
    #[bundle(patient)]
    fn patient_last(&self) -> Result<u32, ApiError>;

    #[bundle(patient)]
    #[bundle(policies::critical)]
    fn critical_last(&self) -> Result<u32, ApiError>;
}

#[test]
fn of_two_bundles_on_one_method_the_later_wins() {
    let (_, registry) = on_manual_clock();
    let _wrapper = ResilientTwoBundles::new((), &registry).unwrap();
    assert_eq!(retry_of(&registry, "TwoBundles::patient_last"), (4, MS(1000)));
    assert_eq!(breaker_window(&registry, "TwoBundles::patient_last"), 50);
    assert_eq!(retry_of(&registry, "TwoBundles::critical_last"), (5, MS(100)));
}

// A bundle on the trait plus a method's own attribute.
#[resilient]
#[bundle(policies::critical)]
pub trait TraitBundleMethodAttribute {
    #[retry(delay = "1s")]
    #[bundle(narrow)]
    fn get(&self) -> Result<u32, ApiError>;
}

impl TraitBundleMethodAttribute for Failing {
    fn get(&self) -> Result<u32, ApiError> {
        self.fail()
    }
}

#[test]
fn a_bundle_on_the_trait_plus_a_method_attribute() {
    let (clock, registry) = on_manual_clock();
    let wrapper = ResilientTraitBundleMethodAttribute::new(failing(|| ApiError::Busy), &registry).unwrap();
    assert_eq!(wrapper.get(), Err(ApiError::Busy));
    assert_eq!(wrapper.delegate().calls.load(Ordering::SeqCst), 5);
    // Exponential from the method's 1 s (the bundle's multiplier default 2): 1 + 2 + 4 + 8.
    assert_eq!(clock.elapsed(), Duration::from_secs(15));
    let snapshot = registry.snapshot();
    let bulkhead = snapshot.bulkheads().iter().find(|b| b.instance.ends_with("TraitBundleMethodAttribute::get"));
    assert_eq!(bulkhead.expect("the private bundle's bulkhead").config.max_concurrent_calls, 3);
}

#[test]
fn a_bundle_from_another_crate() {
    let (clock, registry) = on_manual_clock();
    let wrapper = ResilientPayments::new(failing(|| ApiError::Busy), &registry).unwrap();
    assert_eq!(wrapper.other_crate(), Err(ApiError::Busy));
    assert_eq!(wrapper.delegate().calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), MS(20), "two fixed waits of 10 ms");
}

#[test]
fn a_pattern_written_in_a_bundle_resolves_where_the_bundle_is_used() {
    let (_, registry) = on_manual_clock();
    let missing = ResilientPayments::new(failing(|| ApiError::NotFound), &registry).unwrap();
    assert_eq!(missing.use_site_path(), Err(ApiError::NotFound));
    assert_eq!(missing.delegate().calls.load(Ordering::SeqCst), 1, "abort_on matched: no retry");
    let busy = ResilientPayments::new(failing(|| ApiError::Busy), &registry).unwrap();
    assert_eq!(busy.use_site_path(), Err(ApiError::Busy));
    assert_eq!(busy.delegate().calls.load(Ordering::SeqCst), 3);
}

// Async methods (the wrapper's bodies use `self`: the re-emitted item kept its hygiene), and a
// default method body reading `self`.
#[resilient]
pub trait AsyncApi {
    #[bundle(patient)]
    async fn fetch(&self) -> Result<u32, ApiError>;

    #[bundle(policies::critical)]
    fn send(&self, cents: u64) -> impl Future<Output = Result<u64, ApiError>> + Send;

    fn twice(&self) -> u32 {
        self.plain() * 2
    }

    fn plain(&self) -> u32;
}

impl AsyncApi for Failing {
    async fn fetch(&self) -> Result<u32, ApiError> {
        self.fail()
    }
    async fn send(&self, _cents: u64) -> Result<u64, ApiError> {
        self.fail()
    }
    fn plain(&self) -> u32 {
        21
    }
}

#[test]
fn bundles_on_async_methods() {
    let (clock, registry) = on_manual_clock();
    let api = ResilientAsyncApi::new(failing(|| ApiError::Busy), &registry).unwrap();
    assert_eq!(testkit::block_on(api.fetch()), Err(ApiError::Busy));
    assert_eq!(api.delegate().calls.load(Ordering::SeqCst), 4);
    assert_eq!(clock.elapsed(), Duration::from_secs(3), "three fixed waits of 1 s");
    assert_eq!(testkit::block_on(api.send(5)), Err(ApiError::Busy));
    assert_eq!(api.delegate().calls.load(Ordering::SeqCst), 4 + 5);
    assert_eq!(api.twice(), 42);
}

// A private bundle, used in this module only, above its definition.
resilience4cata::bundle! {
    narrow = #[bulkhead(max_concurrent_calls = 3)];
}
