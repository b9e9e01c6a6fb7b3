//! The class style (`#[resilient(policies = field)]` on an impl block), sync methods: the seeds'
//! worked examples of the trait style, rewritten on an inherent impl, give the same timelines and
//! counts on the manual clock; self-calls go through the policies; trait impls, ids and scopes.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{FallbackContext, GiveUpReason, Registry, Rejection, ResilienceError, RetryEvent, resilient};
use testkit::RetryAndBreaker;

type Events = testkit::Recorder<RetryEvent>;

#[derive(Debug, Clone, PartialEq)]
pub struct Down;

// --- 100 + 200 = 300 ms: two failures, then success. ---

pub mod shop {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resilience4cata::{Registry, RegistryError, resilient};

    /// A client as most users write one: a struct with its policies in a field.
    pub struct Inventory {
        pub calls: AtomicU32,
        failures: u32,
        policies: InventoryPolicies,
    }

    #[resilient(policies = policies)]
    impl Inventory {
        pub fn new(failures: u32, registry: &Registry) -> Result<Self, RegistryError> {
            Ok(Inventory { calls: AtomicU32::new(0), failures, policies: InventoryPolicies::new(registry)? })
        }

        #[retry(max_attempts = 3, delay = "100ms")]
        pub fn stock(&self, _sku: &str) -> Result<u32, super::Down> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < self.failures { Err(super::Down) } else { Ok(7) }
        }

        /// Unannotated: untouched, never retried.
        pub fn peek(&self) -> Result<u32, super::Down> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Err(super::Down)
        }
    }
}
use shop::Inventory;

#[test]
fn two_failures_then_success_waits_100_then_200_ms() {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let inventory = Inventory::new(2, &registry).unwrap();
    assert_eq!(inventory.stock("sku-1"), Ok(7));
    assert_eq!(inventory.calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(300));
}

#[test]
fn ids_are_module_path_type_method_and_unannotated_methods_are_untouched() {
    let (_, events, registry) = testkit::recorded::<RetryEvent>();
    let inventory = Inventory::new(u32::MAX, &registry).unwrap();
    assert_eq!(&*registry.snapshot().retries()[0].instance, "class_style::shop::Inventory::stock");
    assert_eq!(inventory.peek(), Err(Down));
    assert_eq!(inventory.calls.load(Ordering::SeqCst), 1, "one call, no retry");
    assert!(events.all().is_empty());
    assert_eq!(inventory.stock("a"), Err(Down));
    assert_eq!(inventory.calls.load(Ordering::SeqCst), 4);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::MaxAttempts)]);
}

// --- The download example: patterns, max_duration, the 0 / 0.5 / 1.5 / 3.5 s timeline. ---

#[derive(Debug, Clone, PartialEq)]
pub enum FsError {
    Io(&'static str),
    NotFound,
}

struct Disk {
    error: FsError,
    calls: testkit::Stamps,
    policies: DiskPolicies,
}

#[resilient(policies = policies)]
impl Disk {
    #[retry(max_attempts = 5, delay = "500ms", max_delay = "2s", max_duration = "4s",
            retry_on = FsError::Io(_) | FsError::NotFound, abort_on = FsError::NotFound)]
    fn download(&self, _path: &str) -> Result<Vec<u8>, FsError> {
        self.calls.stamp();
        Err(self.error.clone())
    }
}

fn download_with(error: FsError) -> (Vec<Duration>, Vec<(u32, GiveUpReason)>, FsError) {
    let (clock, events, registry) = testkit::recorded::<RetryEvent>();
    let policies = DiskPolicies::new(&registry).unwrap();
    let disk = Disk { error, calls: testkit::Stamps::new(&clock), policies };
    let err = disk.download("/data").unwrap_err();
    (disk.calls.all(), events.gave_up(), err)
}

#[test]
fn download_is_called_at_0_05_15_35_s_then_gives_up_on_max_duration() {
    let (calls, gave_up, err) = download_with(FsError::Io("reset"));
    assert_eq!(calls, [0, 500, 1500, 3500].map(Duration::from_millis));
    assert_eq!(gave_up, [(4, GiveUpReason::MaxDuration)]);
    assert_eq!(err, FsError::Io("reset"));
}

#[test]
fn abort_on_wins_over_retry_on_after_one_call() {
    let (calls, gave_up, _) = download_with(FsError::NotFound);
    assert_eq!(calls.len(), 1);
    assert_eq!(gave_up, [(1, GiveUpReason::NotRetryable)]);
}

// --- The retry budget: 100 calls against a down catalog make 130 attempts, 95 refusals. ---

struct Catalog {
    attempts: AtomicU64,
    policies: CatalogPolicies,
}

#[resilient(policies = policies)]
impl Catalog {
    #[bundle(testkit::bundles::seed_budget)]
    #[retry(name = "catalog")]
    fn product(&self, _id: &str) -> Result<String, Down> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Err(Down)
    }
}

#[test]
fn a_hundred_calls_against_a_down_catalog_make_130_attempts_not_300() {
    let clock = ManualClock::new();
    let events = Events::default();
    let registry = events.on(testing::registry(&clock)).build().unwrap(); // Full jitter, the testing seed
    let catalog = Catalog { attempts: AtomicU64::new(0), policies: CatalogPolicies::new(&registry).unwrap() };
    for _ in 0..100 {
        assert_eq!(catalog.product("p-1"), Err(Down));
    }
    assert_eq!(catalog.attempts.load(Ordering::SeqCst), 130); // 100 + 10 reserve + 20 % of 100
    let refused = events.gave_up().iter().filter(|(_, r)| *r == GiveUpReason::BudgetExhausted).count();
    assert_eq!(refused, 95);
}

// --- The breaker stops the retry at the third attempt. ---

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ReportError {
    BadId,
    Unavailable,
    #[rejection]
    Rejected(Rejection),
}

pub mod reports {
    use std::sync::atomic::{AtomicU32, Ordering};

    use resilience4cata::resilient;

    use super::ReportError;

    #[derive(Debug)]
    pub struct Reports {
        pub calls: AtomicU32,
        pub policies: ReportsPolicies,
    }

    #[resilient(policies = policies)]
    impl Reports {
        #[retry(max_attempts = 5, delay = "1s", abort_on = ReportError::BadId)]
        #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "1m")]
        pub fn report(&self, _id: &str) -> Result<String, ReportError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Err(ReportError::Unavailable)
        }
    }
}

#[test]
fn an_open_breaker_stops_the_retries_at_the_third_attempt() {
    const REPORT: &str = "class_style::reports::Reports::report";
    let (clock, events) = (ManualClock::new(), RetryAndBreaker::default());
    let registry = events.on(testkit::no_jitter(&clock)).build().unwrap();
    let reports =
        reports::Reports { calls: AtomicU32::new(0), policies: reports::ReportsPolicies::new(&registry).unwrap() };
    let err = reports.report("r-1").unwrap_err();
    assert!(
        matches!(err, ReportError::Rejected(Rejection::CallNotPermitted { ref instance }) if &**instance == REPORT)
    );
    assert_eq!(reports.calls.load(Ordering::SeqCst), 2, "the method ran twice");
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)], "the third attempt was refused");
    assert_eq!(clock.elapsed(), Duration::from_secs(3)); // 1 s, then 2 s
    assert_eq!(events.transitions(), [(State::Closed, State::Open)]);
    assert_eq!(registry.circuit_breaker(REPORT).unwrap().snapshot().state, State::Open);
    assert!(format!("{reports:?}").contains("ReportsPolicies"), "the generated struct is Debug");
}

// --- A method calling another annotated method goes through both sets of policies. ---

struct Orders {
    lookups: AtomicU32,
    policies: OrdersPolicies,
}

#[resilient(policies = policies)]
impl Orders {
    /// Fails twice per call of `place`: its own retry has three attempts.
    #[retry(max_attempts = 3, delay = "10ms")]
    fn lookup(&self, id: u32) -> Result<u32, Down> {
        match self.lookups.fetch_add(1, Ordering::SeqCst) % 3 {
            2 => Ok(id),
            _ => Err(Down),
        }
    }

    #[retry(max_attempts = 2, delay = "1s")]
    #[circuit_breaker(minimum_calls = 100)]
    fn place(&self, id: u32) -> Result<u32, ReportError> {
        let found = self.lookup(id).map_err(|Down| ReportError::Unavailable)?;
        if found == 0 { Err(ReportError::BadId) } else { Ok(found) }
    }
}

fn orders(registry: &Registry) -> Orders {
    Orders { lookups: AtomicU32::new(0), policies: OrdersPolicies::new(registry).unwrap() }
}

#[test]
fn a_self_call_goes_through_the_callees_policies_and_the_callers() {
    let (clock, _, registry) = testkit::recorded::<RetryEvent>();
    let orders = orders(&registry);
    assert_eq!(orders.place(0), Err(ReportError::BadId));
    // `place` made two attempts (its retry), each of which retried `lookup` three times.
    assert_eq!(orders.lookups.load(Ordering::SeqCst), 6);
    assert_eq!(clock.elapsed(), Duration::from_millis(10 + 20 + 1000 + 10 + 20));
    let breaker = registry.circuit_breaker("class_style::Orders::place").unwrap().snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (2, 2), "the caller's breaker saw both attempts");
    let ids: Vec<String> = registry.snapshot().retries().iter().map(|r| r.instance.to_string()).collect();
    assert!(ids.contains(&"class_style::Orders::lookup".to_owned()), "{ids:?}");
    assert!(ids.contains(&"class_style::Orders::place".to_owned()), "{ids:?}");
}

// --- Attributes on the impl block; a fallback naming another method of the block. ---

#[derive(Debug, Clone, PartialEq)]
pub enum PriceError {
    Unavailable,
    UnknownSku,
}

struct Prices {
    calls: AtomicU32,
    policies: PricesPolicies,
}

#[resilient(policies = policies)]
#[retry(max_attempts = 3, delay = "0")]
impl Prices {
    fn new(registry: &Registry) -> Self {
        Prices { calls: AtomicU32::new(0), policies: PricesPolicies::new(registry).unwrap() }
    }

    #[fallback(method = cached, skip_on = PriceError::UnknownSku)]
    fn price(&self, sku: &str) -> Result<u32, PriceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if sku.is_empty() { Err(PriceError::UnknownSku) } else { Err(PriceError::Unavailable) }
    }

    #[retry(enabled = false)]
    fn cached(&self, _sku: &str, ctx: FallbackContext<PriceError>) -> Result<u32, PriceError> {
        Ok(100 + ctx.attempts())
    }
}

#[test]
fn block_attributes_apply_to_every_method_and_a_fallback_sees_the_attempts() {
    let registry = Registry::builder().build().unwrap();
    let prices = Prices::new(&registry);
    assert_eq!(prices.price("sku"), Ok(103), "three attempts (the block's retry), then the fallback");
    assert_eq!(prices.calls.load(Ordering::SeqCst), 3);
    assert_eq!(prices.price(""), Err(PriceError::UnknownSku), "skip_on: no fallback");
    let ids = prices.policies.ids();
    assert_eq!(ids.price.retry(), Some("class_style::Prices::price"));
    assert_eq!(ids.cached.retry(), Some("class_style::Prices::cached"));
}

// --- A trait impl block, and an inherent block beside it on one type. ---

pub trait Api {
    fn get(&self, path: &str) -> Result<String, std::io::Error>;
}

pub struct Host {
    name: &'static str,
    calls: AtomicU32,
    own: HostPolicies,
    api: HostApiPolicies,
}

#[resilient(policies = api)]
impl Api for Host {
    #[retry(max_attempts = 2, delay = "0")]
    #[circuit_breaker]
    fn get(&self, path: &str) -> Result<String, std::io::Error> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.get(path.len()).map(|n| format!("{}{path}{n}", self.name))
    }
}

#[resilient(policies = own, vis = pub(crate))]
impl Host {
    #[retry(max_attempts = 3, delay = "0")]
    pub fn get(&self, len: usize) -> Result<usize, std::io::Error> {
        Ok(len)
    }
}

fn host(name: &'static str, registry: &Registry, scope: Option<&str>) -> Host {
    let (own, api) = match scope {
        Some(scope) => (
            HostPolicies::builder(registry).scope(scope).build().unwrap(),
            HostApiPolicies::builder(registry).scope(scope).build().unwrap(),
        ),
        None => (HostPolicies::new(registry).unwrap(), HostApiPolicies::new(registry).unwrap()),
    };
    Host { name, calls: AtomicU32::new(0), own, api }
}

#[test]
fn a_trait_impl_and_an_inherent_impl_on_one_type_have_their_own_ids() {
    let registry = Registry::builder().build().unwrap();
    let host = host("a", &registry, None);
    assert_eq!(Api::get(&host, "/x").unwrap(), "a/x2");
    assert_eq!(host.calls.load(Ordering::SeqCst), 1);
    assert_eq!(host.api.ids().get.retry(), Some("class_style::Host::Api::get"));
    assert_eq!(host.api.ids().get.circuit_breaker(), Some("class_style::Host::Api::get"));
    assert_eq!(host.own.ids().get.retry(), Some("class_style::Host::get"));
    let mut retries: Vec<String> = registry.snapshot().retries().iter().map(|r| r.instance.to_string()).collect();
    retries.sort();
    assert_eq!(retries, ["class_style::Host::Api::get", "class_style::Host::get"]);
    assert!(registry.circuit_breaker("class_style::Host::Api::get").is_some());
}

#[test]
fn scopes_give_each_host_its_own_instances_and_names_stay_shared() {
    let registry = Registry::builder().build().unwrap();
    let a = host("a", &registry, Some("host-a"));
    let b = host("b", &registry, Some("host-b"));
    assert_eq!(a.api.ids().get.circuit_breaker(), Some("host-a/class_style::Host::Api::get"));
    assert_eq!(b.own.ids().get.retry(), Some("host-b/class_style::Host::get"));
    let breaker_a = registry.circuit_breaker("host-a/class_style::Host::Api::get").unwrap();
    breaker_a.force_open();
    assert!(Api::get(&a, "/x").is_err_and(|e| e.rejection().is_some_and(Rejection::is_call_not_permitted)));
    assert_eq!(Api::get(&b, "/x").unwrap(), "b/x2", "host b's breaker is its own");
    assert_eq!(a.calls.load(Ordering::SeqCst), 0);
    // `name = "catalog"` is shared on purpose, whatever the scope.
    let scoped = CatalogPolicies::builder(&registry).scope("eu").build().unwrap();
    assert_eq!(scoped.ids().product.retry(), Some("catalog"));
    assert!(HostPolicies::builder(&registry).scope("").build().is_err(), "an empty scope is R4C-REG-003");
}

#[test]
fn the_policies_ids_are_named_without_building_and_configure_scoped_instances() {
    assert_eq!(HostApiPoliciesIds::scoped("host-a").get.circuit_breaker(), Some("host-a/class_style::Host::Api::get"));
    assert_eq!(HostPoliciesIds::unscoped().get.retry(), Some("class_style::Host::get"));
    assert_eq!(CatalogPoliciesIds::scoped("eu").product.retry(), Some("catalog")); // named: never scoped
    let ids = HostApiPoliciesIds::scoped("host-a");
    let registry = Registry::builder()
        .circuit_breaker_instance(ids.get.circuit_breaker().unwrap(), |c| c.minimum_calls(1).window_size(1))
        .build()
        .unwrap();
    let a = host("a", &registry, Some("host-a"));
    let b = host("b", &registry, Some("host-b"));
    assert_eq!(a.api.ids(), ids);
    assert_eq!(a.own.ids(), HostPoliciesIds::scoped("host-a"));
    let breaker = registry.circuit_breaker(ids.get.circuit_breaker().unwrap()).unwrap();
    assert_eq!(breaker.snapshot().config.minimum_calls, 1);
    let other = registry.circuit_breaker(b.api.ids().get.circuit_breaker().unwrap()).unwrap();
    assert_ne!(other.snapshot().config.minimum_calls, 1);
    assert_eq!(registry.check_unused_config(), Ok(()));
}

#[test]
fn clones_of_the_policies_share_their_instances() {
    let registry = Registry::builder().build().unwrap();
    let a = host("a", &registry, None);
    let b = Host { name: "b", calls: AtomicU32::new(0), own: a.own.clone(), api: a.api.clone() };
    registry.circuit_breaker("class_style::Host::Api::get").unwrap().force_open();
    assert!(Api::get(&b, "/x").is_err());
    assert_eq!(b.calls.load(Ordering::SeqCst), 0);
}
