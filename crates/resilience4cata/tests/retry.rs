//! Every worked example of the seeds' Retry page, through `#[resilient]`, on the manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::retry::RetryConfig;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{
    GiveUpReason, Jitter, Registry, RegistryBuilder, Rejection, ResilienceError, RetryEvent, resilient,
};

#[derive(Debug, Clone, PartialEq)]
pub struct Down;

/// Collects every retry event a registry publishes.
type Events = testkit::Recorder<RetryEvent>;

pub mod shop {
    pub mod inventory {
        use resilience4cata::resilient;

        #[resilient]
        pub trait InventoryApi {
            #[retry(max_attempts = 3, delay = "100ms")]
            fn stock(&self, sku: &str) -> Result<u32, super::super::Down>;
        }
    }
}
use shop::inventory::{InventoryApi, ResilientInventoryApi};
use testkit::Flaky;

/// Fails its first attempts, then answers 7.
impl InventoryApi for Flaky {
    fn stock(&self, _sku: &str) -> Result<u32, Down> {
        self.attempt(Down).map(|()| 7)
    }
}

#[test]
fn two_failures_then_success_waits_100_then_200_ms() {
    let clock = ManualClock::new();
    let registry = testkit::no_jitter(&clock).build().unwrap();
    let inventory = ResilientInventoryApi::new(Flaky::new(2), &registry).unwrap();

    assert_eq!(inventory.stock("sku-1"), Ok(7));
    assert_eq!(inventory.delegate().attempts(), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(300));
}

#[test]
fn instance_id_is_module_path_trait_method() {
    let registry = Registry::builder().build().unwrap();
    let _inventory = ResilientInventoryApi::new(Flaky::new(0), &registry).unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(&*snapshot.retries()[0].instance, "retry::shop::inventory::InventoryApi::stock");
    assert_eq!(snapshot.retries()[0].config.max_attempts, 3);
    assert_eq!(snapshot.retries()[0].budget, None);
}

#[test]
fn success_publishes_nothing_and_gives_up_after_max_attempts() {
    let clock = ManualClock::new();
    let events = Events::default();
    let registry = events.on(testing::registry(&clock)).build().unwrap();
    let inventory = ResilientInventoryApi::new(Flaky::new(0), &registry).unwrap();
    assert_eq!(inventory.stock("a"), Ok(7));
    assert!(events.all().is_empty());

    let inventory = ResilientInventoryApi::new(Flaky::new(u32::MAX), &registry).unwrap();
    assert_eq!(inventory.stock("a"), Err(Down));
    assert_eq!(inventory.delegate().attempts(), 3);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::MaxAttempts)]);
    assert_eq!(events.delays().len(), 2);
}

// --- The download example: patterns, max_duration, the 0 / 0.5 / 1.5 / 3.5 s timeline. ---

#[derive(Debug, Clone, PartialEq)]
pub enum FsError {
    Io(&'static str),
    NotFound,
    IllegalState,
}

#[resilient]
pub trait Files {
    #[retry(max_attempts = 5, delay = "500ms", max_delay = "2s", max_duration = "4s",
            retry_on = FsError::Io(_) | FsError::NotFound, abort_on = FsError::NotFound)]
    fn download(&self, path: &str) -> Result<Vec<u8>, FsError>;
}

struct Disk {
    error: FsError,
    calls: testkit::Stamps,
}

impl Files for Disk {
    fn download(&self, _path: &str) -> Result<Vec<u8>, FsError> {
        self.calls.stamp();
        Err(self.error.clone())
    }
}

fn download_with(error: FsError) -> (Vec<Duration>, Vec<(u32, GiveUpReason)>, FsError) {
    let (clock, events, registry) = testkit::recorded::<RetryEvent>();
    let disk = Disk { error, calls: testkit::Stamps::new(&clock) };
    let files = ResilientFiles::new(disk, &registry).unwrap();
    let err = files.download("/data").unwrap_err();
    (files.delegate().calls.all(), events.gave_up(), err)
}

#[test]
fn download_is_called_at_0_05_15_35_s_then_gives_up_on_max_duration() {
    let (calls, gave_up, err) = download_with(FsError::Io("reset"));
    assert_eq!(calls, [0, 500, 1500, 3500].map(Duration::from_millis));
    assert_eq!(gave_up, [(4, GiveUpReason::MaxDuration)]);
    assert_eq!(err, FsError::Io("reset"), "the last failure comes back unchanged");
}

#[test]
fn abort_on_wins_over_retry_on_after_one_call() {
    let (calls, gave_up, _) = download_with(FsError::NotFound);
    assert_eq!(calls.len(), 1);
    assert_eq!(gave_up, [(1, GiveUpReason::NotRetryable)]);
}

#[test]
fn an_error_outside_retry_on_fails_after_one_call() {
    let (calls, gave_up, err) = download_with(FsError::IllegalState);
    assert_eq!(calls.len(), 1);
    assert_eq!(gave_up, [(1, GiveUpReason::NotRetryable)]);
    assert_eq!(err, FsError::IllegalState);
}

// --- Default waits, jitter. ---

#[resilient]
pub trait Ten {
    #[retry(max_attempts = 10)]
    fn call(&self) -> Result<(), Down>;
}

struct AlwaysDown;

impl Ten for AlwaysDown {
    fn call(&self) -> Result<(), Down> {
        Err(Down)
    }
}

fn ten_delays(jitter: Jitter, seed: Option<u64>) -> Vec<Duration> {
    let clock = ManualClock::new();
    let events = Events::default();
    let mut builder = events.on(testing::registry(&clock).retry_defaults(move |r| r.jitter(jitter)));
    if let Some(seed) = seed {
        builder = builder.jitter_seed(seed);
    }
    let registry = builder.build().unwrap();
    let ten = ResilientTen::new(AlwaysDown, &registry).unwrap();
    assert_eq!(ten.call(), Err(Down));
    assert_eq!(clock.elapsed(), events.delays().iter().sum::<Duration>(), "waits advance the manual clock");
    events.delays()
}

fn base_waits() -> Vec<Duration> {
    [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000].map(Duration::from_millis).to_vec()
}

#[test]
fn default_waits_double_from_200ms_and_cap_at_10s() {
    assert_eq!(RetryConfig::default().max_delay, Duration::from_secs(10));
    assert_eq!(ten_delays(Jitter::None, None), base_waits());
}

#[test]
fn full_jitter_stays_within_zero_and_base() {
    let delays = ten_delays(Jitter::Full, None);
    assert_eq!(delays.len(), 9);
    for (d, base) in delays.iter().zip(base_waits()) {
        assert!(*d <= base, "{d:?} > {base:?}");
    }
    assert_ne!(delays, base_waits(), "full jitter randomises");
}

#[test]
fn equal_jitter_stays_within_half_and_base() {
    for (d, base) in ten_delays(Jitter::Equal, None).iter().zip(base_waits()) {
        assert!(*d >= base / 2 && *d <= base, "{d:?} outside [{:?}, {base:?}]", base / 2);
    }
}

#[test]
fn jitter_is_deterministic_for_a_seed() {
    assert_eq!(ten_delays(Jitter::Full, None), ten_delays(Jitter::Full, None));
    assert_ne!(ten_delays(Jitter::Full, Some(1)), ten_delays(Jitter::Full, Some(2)));
}

// --- Precedence: built-in < registry defaults < named config < attribute < instance override. ---

#[resilient]
pub trait Layers {
    #[retry(config = "external")]
    fn named(&self) -> Result<(), Down>;

    #[retry(config = "external", max_attempts = 6)]
    fn attributed(&self) -> Result<(), Down>;

    #[retry]
    fn plain(&self) -> Result<(), Down>;
}

struct Count(AtomicU32);

impl Layers for Count {
    fn named(&self) -> Result<(), Down> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Down)
    }
    fn attributed(&self) -> Result<(), Down> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Down)
    }
    fn plain(&self) -> Result<(), Down> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Down)
    }
}

fn attempts(builder: RegistryBuilder, call: impl Fn(&ResilientLayers<Count>) -> Result<(), Down>) -> u32 {
    let registry = builder.build().unwrap();
    let layers = ResilientLayers::new(Count(AtomicU32::new(0)), &registry).unwrap();
    assert_eq!(call(&layers), Err(Down));
    layers.delegate().0.load(Ordering::SeqCst)
}

fn base(clock: &ManualClock) -> RegistryBuilder {
    testing::registry(clock).retry("external", |r| r)
}

#[test]
fn precedence_built_in_default() {
    let clock = ManualClock::new();
    assert_eq!(attempts(base(&clock), |l| l.plain()), 3);
}

#[test]
fn precedence_registry_defaults_beat_built_in() {
    let clock = ManualClock::new();
    assert_eq!(attempts(base(&clock).retry_defaults(|r| r.max_attempts(4)), |l| l.plain()), 4);
}

#[test]
fn precedence_named_config_beats_registry_defaults() {
    let clock = ManualClock::new();
    let b = base(&clock).retry_defaults(|r| r.max_attempts(4)).retry("external", |r| r.max_attempts(5));
    assert_eq!(attempts(b, |l| l.named()), 5);
}

#[test]
fn precedence_attribute_beats_named_config() {
    let clock = ManualClock::new();
    let b = base(&clock).retry_defaults(|r| r.max_attempts(4)).retry("external", |r| r.max_attempts(5));
    assert_eq!(attempts(b, |l| l.attributed()), 6);
}

#[test]
fn precedence_instance_override_beats_attribute() {
    let clock = ManualClock::new();
    let b = base(&clock)
        .retry("external", |r| r.max_attempts(5))
        .retry_instance("retry::Layers::attributed", |r| r.max_attempts(7));
    assert_eq!(attempts(b, |l| l.attributed()), 7);
}

#[test]
fn an_attribute_overrides_only_the_keys_it_writes() {
    let clock = ManualClock::new();
    let registry =
        base(&clock).retry("external", |r| r.max_attempts(5).delay(Duration::from_millis(40))).build().unwrap();
    let _layers = ResilientLayers::new(Count(AtomicU32::new(0)), &registry).unwrap();
    let snapshot = registry.snapshot();
    let attributed = snapshot.retries().iter().find(|s| s.instance.ends_with("attributed")).unwrap();
    assert_eq!((attributed.config.max_attempts, attributed.config.delay), (6, Duration::from_millis(40)));
}

#[test]
fn unknown_named_config_fails_when_wrapping() {
    let registry = Registry::builder().build().unwrap();
    let err = ResilientLayers::new(Count(AtomicU32::new(0)), &registry).err().unwrap();
    assert_eq!(err.code(), "R4C-REG-004");
    assert!(err.to_string().starts_with("[R4C-REG-004] retry::Layers::named"), "{err}");
}

// --- Invalid resolved values, sharing by name. ---

#[resilient]
pub trait Slow {
    #[retry(delay = "20s", backoff = Fixed)]
    fn slow(&self) -> Result<(), Down>;
}

/// A backend whose every method answers `Ok(())`: these tests are about wrapping, not calling.
struct Shelf;

#[test]
fn max_delay_below_delay_is_reg_003_even_with_fixed_backoff() {
    let registry = Registry::builder().build().unwrap();
    let err = ResilientSlow::new(Shelf, &registry).err().unwrap();
    assert_eq!(err.code(), "R4C-REG-003");
    let ok = Registry::builder().retry_defaults(|r| r.max_delay(Duration::from_secs(20))).build().unwrap();
    assert!(ResilientSlow::new(Shelf, &ok).is_ok());
}

#[resilient]
pub trait Catalog {
    #[retry(name = "catalog", max_attempts = 2)]
    fn product(&self) -> Result<(), Down>;
    #[retry(name = "catalog", max_attempts = 2)]
    fn price(&self) -> Result<(), Down>;
}

#[resilient]
pub trait OtherCatalog {
    #[retry(name = "catalog", max_attempts = 4)]
    fn product(&self) -> Result<(), Down>;
}

/// `Shelf` implements each `trait: methods;` with methods that answer `Ok(())`.
macro_rules! shelf {
    ($($api:ident: $($method:ident)+;)+) => {
        $(impl $api for Shelf {
            testkit::same_body! { fn(&self) -> Result<(), Down> { Ok(()) } for $($method)+ }
        })+
    };
}
shelf! { Slow: slow; Catalog: product price; OtherCatalog: product; }

#[test]
fn a_shared_name_is_one_instance_and_wrapping_twice_shares_it() {
    let registry = Registry::builder().build().unwrap();
    let _a = ResilientCatalog::new(Shelf, &registry).unwrap();
    let _b = ResilientCatalog::new(Shelf, &registry).unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries().len(), 1);
    assert_eq!(&*snapshot.retries()[0].instance, "catalog");
}

#[test]
fn a_shared_name_with_another_config_is_reg_008() {
    let registry = Registry::builder().build().unwrap();
    let _a = ResilientCatalog::new(Shelf, &registry).unwrap();
    let err = ResilientOtherCatalog::new(Shelf, &registry).err().unwrap();
    assert_eq!(err.code(), "R4C-REG-008");
    assert_eq!(err.instance(), Some("catalog"));
}

// --- enabled = false, nested rejections. ---

#[resilient]
pub trait Switch {
    #[retry(enabled = false, max_attempts = 5)]
    fn off(&self) -> Result<(), Down>;
}

impl Switch for AlwaysDown {
    fn off(&self) -> Result<(), Down> {
        Err(Down)
    }
}

#[test]
fn disabled_is_one_plain_attempt_without_events() {
    let clock = ManualClock::new();
    let events = Events::default();
    let registry = events.on(testing::registry(&clock)).build().unwrap();
    let switch = ResilientSwitch::new(AlwaysDown, &registry).unwrap();
    assert_eq!(switch.off(), Err(Down));
    assert!(events.all().is_empty());
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

#[test]
fn an_instance_override_can_turn_a_disabled_retry_on() {
    let clock = ManualClock::new();
    let events = Events::default();
    let registry =
        events.on(testing::registry(&clock)).retry_instance("retry::Switch::off", |r| r.enabled(true)).build();
    let switch = ResilientSwitch::new(AlwaysDown, &registry.unwrap()).unwrap();
    assert_eq!(switch.off(), Err(Down));
    assert_eq!(events.gave_up(), [(5, GiveUpReason::MaxAttempts)]);
}

#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum ReportError {
    Failed,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Reports {
    #[retry(max_attempts = 5, delay = "1s")]
    fn report(&self, id: &str) -> Result<String, ReportError>;
}

/// A dependency that is itself a wrapper whose breaker is open.
struct OpenBreakerInside(AtomicU32);

impl Reports for OpenBreakerInside {
    fn report(&self, _id: &str) -> Result<String, ReportError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(ReportError::from_rejection(Rejection::CallNotPermitted { instance: "inner".into() }))
    }
}

#[test]
fn a_nested_call_not_permitted_is_never_retried() {
    let clock = ManualClock::new();
    let events = Events::default();
    let registry = events.on(testing::registry(&clock)).build().unwrap();
    let reports = ResilientReports::new(OpenBreakerInside(AtomicU32::new(0)), &registry).unwrap();
    assert!(matches!(reports.report("r"), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(reports.delegate().0.load(Ordering::SeqCst), 1);
    assert_eq!(events.gave_up(), [(1, GiveUpReason::Refused)]);
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

// --- shutdown() during a wait, on the system clock. ---

#[test]
fn shutdown_interrupts_a_pending_wait_and_every_later_one() {
    let events = Events::default();
    let registry = events
        .on(Registry::builder().retry_defaults(|r| r.jitter(Jitter::None).delay(Duration::from_secs(10))))
        .build()
        .unwrap();
    let inventory = Arc::new(ResilientInventoryApi::new(Flaky::new(u32::MAX), &registry).unwrap());
    let caller = {
        let inventory = Arc::clone(&inventory);
        std::thread::spawn(move || inventory.stock("x"))
    };
    while events.delays().is_empty() {
        std::thread::yield_now();
    }
    registry.shutdown();
    assert_eq!(caller.join().unwrap(), Err(Down));
    assert_eq!(events.gave_up(), [(1, GiveUpReason::Interrupted)]);
    // Sticky: a later call gives up at its first wait too.
    assert_eq!(inventory.stock("x"), Err(Down));
    assert_eq!(events.gave_up(), [(1, GiveUpReason::Interrupted), (1, GiveUpReason::Interrupted)]);
}
