//! Keyed layers (`key = …`, SPEC §15) through `#[resilient]`, both styles, on the manual clock:
//! each key value behaves as its own instance, to the permit; a key that cannot get a state is
//! refused without calling the method.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{FallbackContext, Registry, Rejection, resilient};
use testkit::Down;

#[resilient]
pub trait Tenants {
    #[rate_limiter(permits = 2, period = "1s", key = tenant)]
    fn usage(&self, tenant: &str) -> Result<u32, Down>;

    #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "10s", key = host)]
    fn fetch(&self, host: &str, fail: bool) -> Result<u32, Down>;

    #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "10s", key = host)]
    async fn fetch_async(&self, host: &str, fail: bool) -> Result<u32, Down>;

    #[rate_limiter(permits = 1, period = "1s", key = tenant, max_keys = 1)]
    fn capped(&self, tenant: &str) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "100ms")]
    #[rate_limiter(permits = 1, period = "1s", key = tenant, max_keys = 1)]
    async fn capped_retried(&self, tenant: &str) -> Result<u32, Down>;

    #[fallback(method = capped_fallback)]
    #[rate_limiter(permits = 1, period = "1s", key = tenant, max_keys = 1)]
    fn capped_or_cached(&self, tenant: &str) -> Result<u32, Down>;

    fn capped_fallback(&self, tenant: &str, ctx: FallbackContext<Down>) -> Result<u32, Down>;

    #[rate_limiter(permits = 1, period = "1s", key = (region, shard))]
    fn send(&self, region: u8, shard: u16) -> Result<u32, Down>;

    #[retry(max_attempts = 3, delay = "100ms")]
    #[rate_limiter(permits = 2, period = "1s", key = tenant.as_str())]
    fn owned(&self, tenant: String) -> Result<u32, Down>;

    #[bulkhead(max_concurrent_calls = 1, key = *id)]
    fn write(&self, id: &mut u32, buf: &mut Vec<u8>) -> Result<u32, Down>;
}

#[derive(Default)]
struct Backend {
    calls: AtomicU32,
    failures: AtomicU32,
}

impl Backend {
    fn call(&self, fail: bool) -> Result<u32, Down> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Down::when(fail)
    }
}

impl Tenants for Backend {
    fn usage(&self, _tenant: &str) -> Result<u32, Down> {
        self.call(false)
    }
    fn fetch(&self, _host: &str, fail: bool) -> Result<u32, Down> {
        self.call(fail)
    }
    async fn fetch_async(&self, _host: &str, fail: bool) -> Result<u32, Down> {
        self.call(fail)
    }
    fn capped(&self, _tenant: &str) -> Result<u32, Down> {
        self.call(false)
    }
    async fn capped_retried(&self, _tenant: &str) -> Result<u32, Down> {
        self.call(false)
    }
    fn capped_or_cached(&self, _tenant: &str) -> Result<u32, Down> {
        self.call(false)
    }
    fn capped_fallback(&self, _tenant: &str, ctx: FallbackContext<Down>) -> Result<u32, Down> {
        assert!(matches!(ctx.error(), Down::Rejected(Rejection::KeysExhausted { .. })), "{:?}", ctx.error());
        Ok(99)
    }
    fn send(&self, region: u8, shard: u16) -> Result<u32, Down> {
        self.call(false).map(|_| u32::from(region) * 1000 + u32::from(shard))
    }
    fn owned(&self, tenant: String) -> Result<u32, Down> {
        // Fails twice per tenant "flaky", so the retry makes three attempts on one key.
        let fail = tenant == "flaky" && self.failures.fetch_add(1, Ordering::SeqCst) < 2;
        self.call(fail)
    }
    fn write(&self, id: &mut u32, buf: &mut Vec<u8>) -> Result<u32, Down> {
        *id += 1;
        buf.push(1);
        self.call(false)
    }
}

fn tenants(clock: &ManualClock) -> (ResilientTenants<Backend>, Registry) {
    let registry = testing::registry(clock).build().unwrap();
    (ResilientTenants::new(Backend::default(), &registry).unwrap(), registry)
}

fn refused(result: Result<u32, Down>) -> Rejection {
    match result {
        Err(Down::Rejected(rejection)) => rejection,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn calls(api: &ResilientTenants<Backend>) -> u32 {
    api.delegate().calls.load(Ordering::SeqCst)
}

#[test]
fn two_tenants_limiters_are_independent_to_the_permit() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    assert_eq!(api.usage("a"), Ok(1));
    assert_eq!(api.usage("a"), Ok(1));
    assert!(matches!(refused(api.usage("a")), Rejection::RateLimitExceeded { .. }));
    // Tenant a spent its two permits; b has its own two, and a third is refused for b too.
    assert_eq!(api.usage("b"), Ok(1));
    assert_eq!(api.usage("b"), Ok(1));
    assert!(matches!(refused(api.usage("b")), Rejection::RateLimitExceeded { .. }));
    assert_eq!(calls(&api), 4);
    clock.advance(Duration::from_secs(1));
    assert_eq!(api.usage("a"), Ok(1));
    assert_eq!(api.usage("b"), Ok(1));
}

#[test]
fn a_breaker_open_for_host_a_still_serves_host_b() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    assert_eq!(api.fetch("a.example", true), Err(Down::Failed));
    assert_eq!(api.fetch("a.example", true), Err(Down::Failed));
    let before = calls(&api);
    assert!(refused(api.fetch("a.example", false)).is_call_not_permitted());
    assert_eq!(calls(&api), before, "an open breaker does not call the method");
    assert_eq!(api.fetch("b.example", false), Ok(1));
    assert_eq!(api.fetch("b.example", false), Ok(1));
    assert_eq!(calls(&api), before + 2, "b's breaker is closed: both calls reach the method");
    // Open for a.example after its wait, half-open: a's own breaker moved, b's did not.
    clock.advance(Duration::from_secs(10));
    assert_eq!(api.fetch("a.example", false), Ok(1));
}

#[test]
fn a_breaker_open_for_host_a_still_serves_host_b_async() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    testkit::block_on(async {
        assert_eq!(api.fetch_async("a.example", true).await, Err(Down::Failed));
        assert_eq!(api.fetch_async("a.example", true).await, Err(Down::Failed));
        assert!(refused(api.fetch_async("a.example", false).await).is_call_not_permitted());
        assert_eq!(api.fetch_async("b.example", false).await, Ok(1));
    });
    assert_eq!(calls(&api), 3);
}

#[test]
fn a_new_key_with_no_key_at_rest_is_refused_without_calling_the_method() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    assert_eq!(api.capped("a"), Ok(1)); // a's limiter spent its permit: a is not at rest
    assert!(matches!(refused(api.capped("b")), Rejection::KeysExhausted { .. }));
    assert_eq!(calls(&api), 1);
    // Once a's permit is back, a is at rest and gives its place to b.
    clock.advance(Duration::from_secs(1));
    assert_eq!(api.capped("b"), Ok(1));
    assert_eq!(calls(&api), 2);
}

#[test]
fn a_keys_exhausted_refusal_is_not_retried() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    testkit::block_on(async {
        assert_eq!(api.capped_retried("a").await, Ok(1));
        assert!(matches!(refused(api.capped_retried("b").await), Rejection::KeysExhausted { .. }));
    });
    assert_eq!(calls(&api), 1);
    assert_eq!(clock.elapsed(), Duration::ZERO, "no retry waited: the key is looked up once, before the retry");
}

#[test]
fn a_keys_exhausted_refusal_goes_through_the_fallback() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    assert_eq!(api.capped_or_cached("a"), Ok(1));
    assert_eq!(api.capped_or_cached("b"), Ok(99));
    assert_eq!(calls(&api), 1);
}

#[test]
fn a_tuple_of_owned_copy_values_is_a_key() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    assert_eq!(api.send(1, 7), Ok(1007));
    assert!(matches!(refused(api.send(1, 7)), Rejection::RateLimitExceeded { .. }));
    assert_eq!(api.send(1, 8), Ok(1008));
    assert_eq!(api.send(2, 7), Ok(2007));
}

#[test]
fn an_owned_argument_is_keyed_once_and_cloned_into_each_attempt() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    // Three attempts on tenant "flaky": the key is looked up once per call, each attempt passes
    // its limiter (two permits), so the third is refused and the retry stops there.
    assert!(matches!(refused(api.owned("flaky".to_owned())), Rejection::RateLimitExceeded { .. }));
    assert_eq!(calls(&api), 2);
    assert_eq!(api.owned("steady".to_owned()), Ok(1));
}

#[test]
fn a_key_read_through_a_mut_reference_ends_its_borrow_before_the_call() {
    let clock = ManualClock::new();
    let (api, _registry) = tenants(&clock);
    let (mut id, mut buf) = (4, Vec::new());
    assert_eq!(api.write(&mut id, &mut buf), Ok(1));
    assert_eq!((id, buf.len()), (5, 1));
}

// --- The class style: the same keyed limiter on an inherent impl. ---

pub mod class {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resilience4cata::{Registry, RegistryError, resilient};
    use testkit::Down;

    pub struct Client {
        pub calls: AtomicU32,
        policies: ClientPolicies,
    }

    #[resilient(policies = policies)]
    #[rate_limiter(period = "1s")]
    impl Client {
        pub fn new(registry: &Registry) -> Result<Self, RegistryError> {
            Ok(Client { calls: AtomicU32::new(0), policies: ClientPolicies::new(registry)? })
        }

        #[rate_limiter(permits = 2, key = tenant)]
        pub fn usage(&self, tenant: &str) -> Result<u32, Down> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(tenant.len() as u32)
        }

        #[circuit_breaker(window_size = 2, minimum_calls = 2, key = host)]
        pub async fn fetch(&self, host: &str, fail: bool) -> Result<u32, Down> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Down::when(fail).map(|_| host.len() as u32)
        }
    }
}

#[test]
fn two_tenants_limiters_are_independent_to_the_permit_in_the_class_style() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let client = class::Client::new(&registry).unwrap();
    assert_eq!(client.usage("a"), Ok(1));
    assert_eq!(client.usage("a"), Ok(1));
    assert!(matches!(refused(client.usage("a")), Rejection::RateLimitExceeded { .. }));
    assert_eq!(client.usage("bb"), Ok(2));
    assert_eq!(client.usage("bb"), Ok(2));
    assert!(matches!(refused(client.usage("bb")), Rejection::RateLimitExceeded { .. }));
    assert_eq!(client.calls.load(Ordering::SeqCst), 4);
    clock.advance(std::time::Duration::from_secs(1));
    assert_eq!(client.usage("a"), Ok(1));
}

#[test]
fn a_breaker_open_for_host_a_still_serves_host_b_in_the_class_style() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let client = class::Client::new(&registry).unwrap();
    testkit::block_on(async {
        assert_eq!(client.fetch("a", true).await, Err(Down::Failed));
        assert_eq!(client.fetch("a", true).await, Err(Down::Failed));
        assert!(refused(client.fetch("a", false).await).is_call_not_permitted());
        assert_eq!(client.fetch("bb", false).await, Ok(2));
    });
    assert_eq!(client.calls.load(Ordering::SeqCst), 3);
}
