//! Fault injection (feature `chaos`, SPEC §17) on the manual clock: every other policy sees an
//! injected fault or delay as a real one (the retry retries, the breaker counts, the timeout cuts
//! exactly), the same seed repeats the same sequence in another registry, a disabled instance
//! injects nothing, in both styles, sync and async, and in pipelines; bad configuration is a coded
//! error when it is applied.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::chaos::{ChaosConfigBuilder, ChaosEvent};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry, RegistryBuilder, Rejection, ResilienceError, RetryEvent, resilient};
use testkit::{Recorder, block_on};

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum StockError {
    Unavailable,
    Invalid,
    Io(u16),
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Inventory {
    #[retry(max_attempts = 3, delay = "100ms", backoff = Fixed)]
    #[circuit_breaker(window_size = 10, minimum_calls = 4, failure_rate_threshold = 50)]
    fn stock(&self, sku: &str) -> Result<u32, StockError>;

    #[timeout(duration = "250ms")]
    async fn slow(&self) -> Result<u32, StockError>;

    #[retry(max_attempts = 2, delay = "0")]
    async fn quick(&self) -> Result<u32, StockError>;

    #[retry(max_attempts = 2, delay = "0")]
    fn io(&self) -> std::io::Result<u32>;

    fn plain(&self) -> u32;
}

/// Counts the delegate's calls.
#[derive(Default)]
struct Backend {
    calls: AtomicU32,
}

impl Backend {
    fn called(&self) -> u32 {
        self.calls.fetch_add(1, Ordering::SeqCst);
        7
    }
}

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, StockError> {
        Ok(self.called())
    }
    async fn slow(&self) -> Result<u32, StockError> {
        Ok(self.called())
    }
    async fn quick(&self) -> Result<u32, StockError> {
        Ok(self.called())
    }
    fn io(&self) -> std::io::Result<u32> {
        Ok(self.called())
    }
    fn plain(&self) -> u32 {
        self.called()
    }
}

fn id(method: &str) -> String {
    format!("{}::Inventory::{method}", module_path!())
}

fn world(
    clock: &ManualClock,
    f: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
) -> (Registry, ResilientInventory<Backend>) {
    let registry = f(testkit::no_jitter(clock)).build().unwrap();
    let inventory = ResilientInventory::new(Backend::default(), &registry).unwrap();
    (registry, inventory)
}

fn calls(inventory: &ResilientInventory<Backend>) -> u32 {
    inventory.delegate().calls.load(Ordering::SeqCst)
}

fn chaos_of(registry: &Registry, id: &str) -> resilience4cata::chaos::ChaosSnapshot {
    registry.snapshot().chaos().iter().find(|c| &*c.instance == id).cloned().unwrap_or_else(|| panic!("no chaos {id}"))
}

#[test]
fn chaos_fault_rate_one_makes_the_retry_retry_and_the_breaker_count() {
    let clock = ManualClock::new();
    let retries = Recorder::<RetryEvent>::default();
    let faults = Recorder::<ChaosEvent>::default();
    let (registry, inventory) = world(&clock, |b| {
        faults.on(retries.on(b)).chaos_instance(id("stock"), |c| c.enabled(true).fault_rate(1.0).fault("Unavailable"))
    });
    assert_eq!(inventory.stock("apple"), Err(StockError::Unavailable));
    assert_eq!(calls(&inventory), 0, "an injected fault does not call the delegate");
    assert_eq!(retries.delays(), [Duration::from_millis(100); 2], "the retry retried the fault twice");
    assert_eq!(clock.elapsed(), Duration::from_millis(200));
    let breaker = registry.snapshot().circuit_breakers()[0].clone();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (3, 3), "the breaker counted every attempt");
    assert_eq!(chaos_of(&registry, &id("stock")).faults, 3);
    assert_eq!(faults.len(), 3);
    assert!(
        faults.all().iter().all(|e| matches!(e, ChaosEvent::FaultInjected { instance } if **instance == id("stock")))
    );
    // The fourth injected fault opens the breaker: the retry does not retry its refusal, and no
    // further call reaches the injection point.
    assert!(matches!(inventory.stock("apple"), Err(StockError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(registry.circuit_breaker(&id("stock")).unwrap().state(), resilience4cata::circuit_breaker::State::Open);
    assert_eq!(chaos_of(&registry, &id("stock")).faults, 4);
}

#[test]
fn chaos_latency_trips_a_timeout_exactly_and_a_shorter_one_passes_exactly() {
    let clock = ManualClock::new();
    let events = Recorder::<ChaosEvent>::default();
    let (registry, inventory) = world(&clock, |b| {
        events
            .on(b)
            .chaos_instance(id("slow"), |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(300)))
    });
    let err = block_on(inventory.slow()).unwrap_err();
    assert!(matches!(err, StockError::Rejected(Rejection::CallTimeout { .. })), "{err:?}");
    assert_eq!(clock.elapsed(), Duration::from_millis(250), "cut at the timeout, not at the latency");
    assert_eq!(calls(&inventory), 0, "the delegate's start was delayed past the deadline");
    assert_eq!(chaos_of(&registry, &id("slow")).latencies, 1, "counted when the delay started");
    assert_eq!(
        events.all(),
        [ChaosEvent::LatencyInjected { instance: id("slow").into(), latency: Duration::from_millis(300) }]
    );

    let clock = ManualClock::new();
    let (_registry, inventory) = world(&clock, |b| {
        b.chaos_instance(id("slow"), |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(200)))
    });
    assert_eq!(block_on(inventory.slow()), Ok(7));
    assert_eq!(clock.elapsed(), Duration::from_millis(200));
}

#[test]
fn chaos_blocking_latency_waits_on_the_registry_clock() {
    let clock = ManualClock::new();
    let (_registry, inventory) = world(&clock, |b| {
        b.chaos_instance(id("stock"), |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(40)))
    });
    assert_eq!(inventory.stock("apple"), Ok(7));
    assert_eq!((clock.elapsed(), calls(&inventory)), (Duration::from_millis(40), 1));
}

/// `Ok`/`Err` of `n` calls of `quick` (async, retry of 2) under `fault_rate` 0.5 and `seed`.
fn sequence(seed: Option<u64>, n: usize) -> Vec<bool> {
    let clock = ManualClock::new();
    let (_registry, inventory) = world(&clock, |b| {
        b.chaos_instance(id("quick"), |c| {
            let c = c.enabled(true).fault_rate(0.5).fault("Unavailable");
            match seed {
                Some(seed) => c.seed(seed),
                None => c,
            }
        })
    });
    (0..n).map(|_| block_on(inventory.quick()).is_ok()).collect()
}

#[test]
fn chaos_the_same_seed_gives_the_same_sequence_in_two_registries() {
    let (a, b) = (sequence(Some(42), 200), sequence(Some(42), 200));
    assert_eq!(a, b);
    let oks = a.iter().filter(|ok| **ok).count();
    // Two attempts each at 0.5: about three calls in four succeed.
    assert!((120..180).contains(&oks), "{oks} of 200");
    assert_ne!(a, sequence(Some(43), 200), "another seed, another sequence");
    // Unset, the seed comes from the testing registry's fixed seed: repeatable too.
    assert_eq!(sequence(None, 100), sequence(None, 100));
}

#[test]
fn chaos_disabled_injects_nothing() {
    let clock = ManualClock::new();
    let (registry, inventory) = world(&clock, |b| {
        b.chaos_defaults(|c| c.latency_rate(1.0).latency(Duration::from_secs(1)))
            .chaos_instance(id("stock"), |c| c.fault_rate(1.0).fault("Unavailable"))
            .chaos_instance(id("slow"), |c| c.fault_rate(1.0).fault("Invalid"))
    });
    for _ in 0..10 {
        assert_eq!(inventory.stock("apple"), Ok(7));
        assert_eq!(block_on(inventory.slow()), Ok(7));
    }
    assert_eq!((calls(&inventory), clock.elapsed()), (20, Duration::ZERO));
    assert!(registry.snapshot().chaos().iter().all(|c| (c.faults, c.latencies, c.config.enabled) == (0, 0, false)));
}

#[test]
fn chaos_points_exist_for_every_method_with_a_policy_and_only_for_them() {
    let clock = ManualClock::new();
    let (registry, _inventory) = world(&clock, |b| b);
    let ids: Vec<String> = registry.snapshot().chaos().iter().map(|c| c.instance.to_string()).collect();
    let mut expected = vec![id("io"), id("quick"), id("slow"), id("stock")];
    expected.sort();
    assert_eq!(ids, expected, "`plain` has no policy and no injection point");
}

#[test]
fn chaos_scoped_wrappers_inject_under_their_scoped_ids() {
    let clock = ManualClock::new();
    let scoped = format!("host-a/{}", id("stock"));
    let registry = testing::registry(&clock)
        .chaos_instance(scoped.clone(), |c| c.enabled(true).fault_rate(1.0).fault("Invalid"))
        .build()
        .unwrap();
    let a = ResilientInventory::builder(Backend::default(), &registry).scope("host-a").build().unwrap();
    let plain = ResilientInventory::new(Backend::default(), &registry).unwrap();
    assert_eq!(a.stock("x"), Err(StockError::Invalid));
    assert_eq!(plain.stock("x"), Ok(7));
    assert_eq!(chaos_of(&registry, &scoped).faults, 3);
}

// ---- bad input: coded errors when the configuration is applied, never a panic at call time ----

#[test]
fn chaos_an_unknown_variant_is_refused_by_new_naming_the_instance_and_quoting_the_name() {
    for (fault, enabled) in [("Gone", true), ("Gone", false), ("Io", true), ("Rejected", false)] {
        let registry = testing::registry(&ManualClock::new())
            .chaos_instance(id("stock"), |c| c.enabled(enabled).fault(fault))
            .build()
            .unwrap();
        let e = ResilientInventory::new(Backend::default(), &registry).map(drop).expect_err("refused");
        assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some(id("stock").as_str())), "{fault}");
        assert!(e.to_string().contains(&format!("\"{fault}\"")), "{e}");
        assert!(e.to_string().contains("StockError"), "{e}");
    }
}

#[test]
fn chaos_a_default_fault_reaching_an_error_type_without_it_is_refused() {
    // `std::io::Error` has no variants by name: a fault in `[defaults.chaos]` reaches `io`.
    let registry = testing::registry(&ManualClock::new()).chaos_defaults(|c| c.fault("Unavailable")).build().unwrap();
    let e = ResilientInventory::new(Backend::default(), &registry).map(drop).expect_err("refused");
    assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some(id("io").as_str())));
    assert!(e.to_string().contains("std::io::error::Error"), "{e}");
}

#[test]
fn chaos_rates_outside_zero_to_one_are_refused() {
    for b in
        [ChaosConfigBuilder::new().fault_rate(1.01).fault("Unavailable"), ChaosConfigBuilder::new().latency_rate(-0.5)]
    {
        let registry =
            testing::registry(&ManualClock::new()).chaos_instance(id("stock"), move |_| b.clone()).build().unwrap();
        let e = ResilientInventory::new(Backend::default(), &registry).map(drop).expect_err("refused");
        assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some(id("stock").as_str())));
    }
}

#[cfg(feature = "serde")]
#[test]
fn chaos_bad_toml_values_are_coded_errors() {
    for (toml, code) in [
        ("[defaults.chaos]\nfault_rate = 1.5\n", "R4C-CFG-004"),
        ("[defaults.chaos]\nlatency_rate = -0.1\n", "R4C-CFG-004"),
        ("[defaults.chaos]\nlatency = \"-5ms\"\n", "R4C-CFG-003"),
        ("[defaults.chaos]\nfaults = \"Unavailable\"\n", "R4C-CFG-002"),
    ] {
        let e = Registry::builder().config_toml(toml).build().map(drop).expect_err(toml);
        assert_eq!(e.code(), code, "{toml}: {e}");
    }
    let registry = Registry::builder()
        .config_toml(&format!(
            "[instances.\"{}\".chaos]\nenabled = true\nfault_rate = 1\nfault = \"Unavailable\"\nlatency = \"10ms\"\nseed = 9\n",
            id("stock")
        ))
        .build()
        .unwrap();
    let inventory = ResilientInventory::new(Backend::default(), &registry).unwrap();
    let c = chaos_of(&registry, &id("stock")).config;
    assert_eq!(
        (c.enabled, c.fault_rate, c.fault.as_deref(), c.latency, c.seed),
        (true, 1.0, Some("Unavailable"), Duration::from_millis(10), Some(9))
    );
    drop(inventory);
}

// ---- the class style ----

pub struct Client {
    policies: ClientPolicies,
    calls: AtomicU32,
}

#[resilient(policies = policies)]
impl Client {
    #[retry(max_attempts = 2, delay = "0")]
    fn get(&self) -> Result<u32, StockError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(1)
    }

    #[timeout(duration = "50ms")]
    async fn load(&self) -> Result<u32, StockError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(2)
    }
}

#[test]
fn chaos_class_style_sync_and_async() {
    let clock = ManualClock::new();
    let get = format!("{}::Client::get", module_path!());
    let load = format!("{}::Client::load", module_path!());
    let registry = testing::registry(&clock)
        .chaos_instance(get.clone(), |c| c.enabled(true).fault_rate(1.0).fault("Unavailable"))
        .chaos_instance(load.clone(), |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(80)))
        .build()
        .unwrap();
    let client = Client { policies: ClientPolicies::new(&registry).unwrap(), calls: AtomicU32::new(0) };
    assert_eq!(client.get(), Err(StockError::Unavailable));
    assert!(matches!(block_on(client.load()), Err(StockError::Rejected(Rejection::CallTimeout { .. }))));
    assert_eq!((client.calls.load(Ordering::SeqCst), clock.elapsed()), (0, Duration::from_millis(50)));
    assert_eq!((chaos_of(&registry, &get).faults, chaos_of(&registry, &load).latencies), (2, 1));
}

// ---- pipelines ----

#[test]
fn chaos_pipelines_inject_around_the_closure_sync_and_async() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .chaos_instance("prices", |c| c.enabled(true).fault_rate(1.0).fault("Unavailable"))
        .chaos_instance("search", |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(300)))
        .build()
        .unwrap();
    let called = AtomicU32::new(0);
    let prices = Pipeline::builder(&registry, "prices")
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .circuit_breaker()
        .build::<u32, StockError>()
        .unwrap();
    let outcome = prices.execute(|| {
        called.fetch_add(1, Ordering::SeqCst);
        Ok(1)
    });
    assert_eq!((outcome, called.load(Ordering::SeqCst)), (Err(StockError::Unavailable), 0));
    let outcome = block_on(prices.execute_async(|| {
        called.fetch_add(1, Ordering::SeqCst);
        async { Ok(1) }
    }));
    assert_eq!((outcome, called.load(Ordering::SeqCst)), (Err(StockError::Unavailable), 0));
    assert_eq!(chaos_of(&registry, "prices").faults, 6);
    assert_eq!(registry.snapshot().circuit_breakers()[0].failed_calls, 6);

    let search = Pipeline::builder(&registry, "search")
        .timeout_with(|t| t.duration(Duration::from_millis(250)))
        .build::<u32, StockError>()
        .unwrap();
    let outcome = block_on(search.execute_async(|| async { Ok(1) }));
    assert!(matches!(outcome, Err(StockError::Rejected(Rejection::CallTimeout { .. }))));
    assert_eq!((clock.elapsed(), chaos_of(&registry, "search").latencies), (Duration::from_millis(250), 1));
}

#[test]
fn chaos_a_retry_only_pipeline_cannot_make_a_fault_and_says_so() {
    let registry =
        testing::registry(&ManualClock::new()).chaos_instance("plain", |c| c.fault("Unavailable")).build().unwrap();
    let e = Pipeline::builder(&registry, "plain").retry().build::<u32, String>().map(drop).expect_err("refused");
    assert_eq!((e.code(), e.instance()), ("R4C-REG-003", Some("plain")));
    // Latency alone works for any error type.
    let registry = testing::registry(&ManualClock::new())
        .chaos_instance("plain", |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(5)))
        .build()
        .unwrap();
    let plain = Pipeline::builder(&registry, "plain").retry().build::<u32, String>().unwrap();
    assert_eq!(plain.execute(|| Ok(3)), Ok(3));
    assert_eq!(chaos_of(&registry, "plain").latencies, 1);
}

// ---- the tower layer ----

#[cfg(feature = "tower")]
#[test]
fn chaos_the_tower_layer_injects_around_the_service_call() {
    use std::sync::Arc;
    use tower::{Layer, ServiceExt, service_fn};

    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock)
        .chaos_instance("stock", |c| c.enabled(true).fault_rate(1.0).fault("Unavailable"))
        .chaos_instance("slow", |c| c.enabled(true).latency_rate(1.0).latency(Duration::from_millis(30)))
        .build()
        .unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let backend = service_fn(move |_: u32| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Ok::<u32, StockError>(7) }
    });
    let stock = Pipeline::builder(&registry, "stock")
        .retry_with(|r| r.max_attempts(3).delay(Duration::from_millis(10)))
        .circuit_breaker()
        .build::<u32, StockError>()
        .unwrap();
    let service = stock.layer().layer(backend.clone());
    assert_eq!(block_on(service.oneshot(1)), Err(StockError::Unavailable));
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the service is never called for a fault");
    assert_eq!(chaos_of(&registry, "stock").faults, 3);
    assert_eq!(registry.snapshot().circuit_breakers()[0].failed_calls, 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(30), "the retry's two waits, 10 ms then 20 ms");

    // Latency: the call starts late on the registry's clock, then reaches the service.
    let slow = Pipeline::builder(&registry, "slow").retry().build::<u32, StockError>().unwrap();
    let service = slow.layer().layer(backend);
    assert_eq!(block_on(service.oneshot(1)), Ok(7));
    assert_eq!((calls.load(Ordering::SeqCst), clock.elapsed()), (1, Duration::from_millis(60)));
    assert_eq!(chaos_of(&registry, "slow").latencies, 1);
}

// ---- live configuration (SPEC §16) ----

#[cfg(feature = "serde")]
#[test]
fn chaos_switched_on_and_off_live_with_update_toml() {
    use resilience4cata::Policy;
    use std::sync::Arc;

    let clock = ManualClock::new();
    let (registry, inventory) = world(&clock, |b| b);
    assert_eq!(block_on(inventory.quick()), Ok(7));
    let on =
        format!("[instances.\"{}\".chaos]\nenabled = true\nfault_rate = 1.0\nfault = \"Unavailable\"\n", id("quick"));
    let change = registry.update_toml(&on).unwrap();
    assert_eq!(change.changed, vec![(Arc::from(id("quick")), Policy::Chaos)]);
    // The wrapper built before the update injects from its next call on: both attempts faulted.
    assert_eq!(block_on(inventory.quick()), Err(StockError::Unavailable));
    assert_eq!((calls(&inventory), chaos_of(&registry, &id("quick")).faults), (1, 2));
    let off = on.replace("enabled = true", "enabled = false");
    let change = registry.update_toml(&off).unwrap();
    assert_eq!(change.changed, vec![(Arc::from(id("quick")), Policy::Chaos)]);
    assert_eq!(block_on(inventory.quick()), Ok(7));
    assert_eq!((calls(&inventory), chaos_of(&registry, &id("quick")).faults), (2, 2));
    assert!(!chaos_of(&registry, &id("quick")).config.enabled);
}

#[cfg(feature = "serde")]
#[test]
fn chaos_a_bad_value_in_an_update_is_refused_with_nothing_changed() {
    let clock = ManualClock::new();
    let (registry, inventory) = world(&clock, |b| b);
    let stock = id("stock");
    let before = registry.snapshot().chaos().to_vec();
    for (toml, code) in [
        // Not a unit variant of `StockError`.
        (format!("[instances.\"{stock}\".chaos]\nenabled = true\nfault_rate = 1\nfault = \"Gone\"\n"), "R4C-REG-003"),
        // A default fault reaches `io`, whose `std::io::Error` has no variant by name.
        ("[defaults.chaos]\nfault = \"Unavailable\"\n".to_string(), "R4C-REG-003"),
        (
            format!("[instances.\"{stock}\".chaos]\nenabled = true\nfault_rate = 2\nfault = \"Unavailable\"\n"),
            "R4C-CFG-004",
        ),
        (format!("[instances.\"{stock}\".chaos]\nlatency = \"-1s\"\n"), "R4C-CFG-003"),
        (format!("[instances.\"{stock}\".chaos]\nenabled = true\nfault_rate = 0.5\n"), "R4C-REG-003"),
    ] {
        let e = registry.update_toml(&toml).err().unwrap_or_else(|| panic!("accepted: {toml}"));
        assert_eq!(e.code(), code, "{toml}: {e}");
        assert_eq!(registry.snapshot().chaos(), before.as_slice(), "nothing changed after {toml}");
        assert_eq!(inventory.stock("apple"), Ok(7));
    }
    let e = registry
        .update_toml(&format!("[instances.\"{stock}\".chaos]\nenabled = true\nfault_rate = 1\nfault = \"Gone\"\n"))
        .unwrap_err();
    assert_eq!(e.instance(), Some(stock.as_str()));
    assert!(e.to_string().contains("\"Gone\""), "{e}");
}
