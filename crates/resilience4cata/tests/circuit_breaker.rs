//! The circuit breaker through `#[resilient]`, on the manual clock: the seeds' `report` and
//! `StockClient` examples, a whole state-machine run with its events, the handle's manual controls,
//! outcome classification, configuration layers and sharing by name.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{GiveUpReason, Registry, Rejection, ResilienceError};
use testkit::RetryAndBreaker as Events;

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ReportError {
    /// Stands for the seed's `IllegalArgumentException`: in `abort_on`.
    BadId,
    Unavailable,
    Busy,
    #[rejection]
    Rejected(Rejection),
}

pub mod reports {
    use resilience4cata::resilient;

    use super::ReportError;

    #[resilient]
    pub trait Reports {
        /// The seed's example, written as it is there: exponential backoff from 1 s.
        #[retry(max_attempts = 5, delay = "1s", abort_on = ReportError::BadId)]
        #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "1m")]
        fn report(&self, id: &str) -> Result<String, ReportError>;

        /// The same with fixed waits.
        #[retry(max_attempts = 5, delay = "1s", backoff = Fixed, abort_on = ReportError::BadId)]
        #[circuit_breaker(window_size = 2, minimum_calls = 2, wait_in_open = "1m")]
        fn report_fixed(&self, id: &str) -> Result<String, ReportError>;
    }
}
use reports::{Reports, ResilientReports};

/// Always fails with `Unavailable`; counts calls.
#[derive(Default)]
struct Down {
    calls: AtomicU32,
}

impl Reports for Down {
    fn report(&self, _id: &str) -> Result<String, ReportError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(ReportError::Unavailable)
    }
    fn report_fixed(&self, id: &str) -> Result<String, ReportError> {
        self.report(id)
    }
}

fn no_jitter(clock: &ManualClock, events: &Events) -> Registry {
    events.on(testkit::no_jitter(clock)).build().unwrap()
}

const REPORT: &str = "circuit_breaker::reports::Reports::report";

#[test]
fn seed_report_an_open_breaker_stops_the_retries_at_once() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let registry = no_jitter(&clock, &events);
    let reports = ResilientReports::new(Down::default(), &registry).unwrap();

    let err = reports.report("r-1").unwrap_err();
    assert!(
        matches!(err, ReportError::Rejected(Rejection::CallNotPermitted { ref instance }) if &**instance == REPORT)
    );
    assert_eq!(reports.delegate().calls.load(Ordering::SeqCst), 2, "the method ran twice");
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)], "the third attempt was refused");
    // Waits of 1 s and then 2 s (exponential backoff, the seed's default), not the two more after.
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
    assert_eq!(events.transitions(), [(State::Closed, State::Open)]);

    // While open, each call makes one attempt and waits nothing.
    for _ in 0..3 {
        assert!(matches!(reports.report("r-2"), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    }
    assert_eq!(reports.delegate().calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
    assert_eq!(events.gave_up()[1..], [(1, GiveUpReason::Refused); 3]);
    let snapshot = registry.circuit_breaker(REPORT).unwrap().snapshot();
    assert_eq!((snapshot.state, snapshot.not_permitted_calls), (State::Open, 4));
    // Every call the breaker refused is a refusal in the retry's count too, none a failure.
    let refused = events.gave_up().iter().filter(|(_, r)| *r == GiveUpReason::Refused).count();
    assert_eq!(refused as u64, snapshot.not_permitted_calls);
}

#[test]
fn seed_report_with_fixed_waits_takes_two_seconds() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let reports = ResilientReports::new(Down::default(), &no_jitter(&clock, &events)).unwrap();
    assert!(reports.report_fixed("r-1").is_err());
    assert_eq!(reports.delegate().calls.load(Ordering::SeqCst), 2);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)]);
    assert_eq!(clock.elapsed(), Duration::from_secs(2));
}

#[test]
fn after_wait_in_open_every_attempt_is_a_half_open_probe() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let registry = no_jitter(&clock, &events);
    let reports = ResilientReports::new(Down::default(), &registry).unwrap();
    assert!(reports.report("r-1").is_err());
    clock.advance(Duration::from_secs(60));
    // Half-open lets 10 probes through (the default): the five attempts of the next call all run.
    assert_eq!(reports.report("r-2"), Err(ReportError::Unavailable));
    assert_eq!(reports.delegate().calls.load(Ordering::SeqCst), 2 + 5);
    assert_eq!(events.gave_up()[1], (5, GiveUpReason::MaxAttempts));
    let s = registry.circuit_breaker(REPORT).unwrap().snapshot();
    assert_eq!((s.state, s.buffered_calls, s.failed_calls), (State::HalfOpen, 5, 5));
    // The next call's fifth attempt completes the tenth probe: every probe failed, so it reopens.
    assert_eq!(reports.report("r-3"), Err(ReportError::Unavailable));
    assert_eq!(
        events.transitions(),
        [(State::Closed, State::Open), (State::Open, State::HalfOpen), (State::HalfOpen, State::Open)]
    );
}

pub mod warehouse {
    use resilience4cata::resilient;

    #[resilient]
    pub trait StockClient {
        #[retry(max_attempts = 3)]
        #[circuit_breaker]
        fn stock(&self, sku: &str, warehouse: u32) -> Result<u32, std::io::Error>;
    }
}
use warehouse::{ResilientStockClient, StockClient};

struct BusyOnce(AtomicU32);

impl StockClient for BusyOnce {
    fn stock(&self, _sku: &str, _warehouse: u32) -> Result<u32, std::io::Error> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 { Err(std::io::Error::other("warehouse busy")) } else { Ok(7) }
    }
}

#[test]
fn seed_stock_client_the_breaker_records_every_attempt() {
    let (_, registry) = testkit::manual();
    let stock = ResilientStockClient::new(BusyOnce(AtomicU32::new(0)), &registry).unwrap();
    assert_eq!(stock.stock("sku-1", 3).unwrap(), 7);

    let id = concat!(module_path!(), "::warehouse::StockClient::stock");
    let breaker = registry.circuit_breaker(id).expect("found by its derived id").snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (2, 1), "the breaker saw both attempts");
    assert_eq!(breaker.failure_rate, None, "2 calls are below minimum_calls = 100");
    assert_eq!(&*breaker.instance, id);
    assert_eq!(registry.snapshot().circuit_breakers(), [breaker]);
}

pub mod catalog {
    use resilience4cata::resilient;

    use super::ReportError;

    pub fn is_busy(e: &ReportError) -> bool {
        matches!(e, ReportError::Busy)
    }

    #[resilient]
    #[circuit_breaker(window_size = 4, minimum_calls = 4, wait_in_open = "10s", permitted_calls_in_half_open = 2)]
    pub trait Catalog {
        fn product(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError>;

        #[circuit_breaker(ignore_on = ReportError::BadId, record_on_if = super::catalog::is_busy)]
        fn patterned(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError>;

        #[circuit_breaker(name = "shared")]
        fn shared_a(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError>;

        #[circuit_breaker(name = "shared")]
        fn shared_b(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError>;

        #[circuit_breaker(enabled = false)]
        fn unguarded(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError>;
    }
}
use catalog::{Catalog, ResilientCatalog};

/// Returns whatever it is handed; counts calls.
#[derive(Debug, Default)]
struct Echo(AtomicU32);

impl Catalog for Echo {
    fn product(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        outcome
    }
    fn patterned(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError> {
        self.product(outcome)
    }
    fn shared_a(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError> {
        self.product(outcome)
    }
    fn shared_b(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError> {
        self.product(outcome)
    }
    fn unguarded(&self, outcome: Result<u32, ReportError>) -> Result<u32, ReportError> {
        self.product(outcome)
    }
}

const PRODUCT: &str = "circuit_breaker::catalog::Catalog::product";

fn catalog(clock: &ManualClock, events: &Events) -> (Registry, ResilientCatalog<Echo>) {
    let registry = events.on(testing::registry(clock)).build().unwrap();
    let catalog = ResilientCatalog::new(Echo::default(), &registry).unwrap();
    (registry, catalog)
}

use ReportError::{BadId, Busy, Unavailable};

#[test]
fn full_state_machine_run_with_events() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let (registry, catalog) = catalog(&clock, &events);
    for outcome in [Ok(1), Err(Unavailable), Ok(2), Err(Unavailable)] {
        let _ = catalog.product(outcome); // 2 of 4 failed: opens
    }
    let refused = catalog.product(Ok(3));
    assert!(matches!(refused, Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(catalog.delegate().0.load(Ordering::SeqCst), 4, "a refused call does not run");

    clock.advance(Duration::from_secs(10));
    assert_eq!(catalog.product(Ok(4)), Ok(4)); // probe 1 of 2
    assert_eq!(registry.circuit_breaker(PRODUCT).unwrap().state(), State::HalfOpen);
    assert_eq!(catalog.product(Ok(5)), Ok(5)); // probe 2 of 2: closes
    let snapshot = registry.circuit_breaker(PRODUCT).unwrap().snapshot();
    assert_eq!((snapshot.state, snapshot.buffered_calls, snapshot.not_permitted_calls), (State::Closed, 0, 1));

    let id = || Arc::<str>::from(PRODUCT);
    use CircuitBreakerEvent::{CallNotPermitted, Failure, StateTransition, Success};
    assert_eq!(
        events.breaker.all(),
        [
            Success { instance: id(), key: None, slow: false },
            Failure { instance: id(), key: None, slow: false },
            Success { instance: id(), key: None, slow: false },
            Failure { instance: id(), key: None, slow: false },
            StateTransition { instance: id(), key: None, from: State::Closed, to: State::Open },
            CallNotPermitted { instance: id(), key: None },
            StateTransition { instance: id(), key: None, from: State::Open, to: State::HalfOpen },
            Success { instance: id(), key: None, slow: false },
            Success { instance: id(), key: None, slow: false },
            StateTransition { instance: id(), key: None, from: State::HalfOpen, to: State::Closed },
        ]
    );
}

#[test]
fn handle_controls_force_open_disable_and_reset() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let (registry, catalog) = catalog(&clock, &events);
    let handle = registry.circuit_breaker(PRODUCT).unwrap();
    handle.force_open();
    assert!(catalog.product(Ok(1)).is_err());
    handle.disable();
    for _ in 0..10 {
        assert_eq!(catalog.product(Err(Unavailable)), Err(Unavailable));
    }
    assert_eq!((handle.state(), handle.snapshot().buffered_calls), (State::Disabled, 0));
    handle.reset();
    let snapshot = handle.snapshot();
    assert_eq!((snapshot.state, snapshot.not_permitted_calls), (State::Closed, 0));
    assert_eq!(
        events.transitions(),
        [(State::Closed, State::ForcedOpen), (State::ForcedOpen, State::Disabled), (State::Disabled, State::Closed)]
    );
    assert!(registry.circuit_breaker("no::such::Breaker").is_none());
}

#[test]
fn record_on_and_ignore_on_classify_errors() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let (registry, catalog) = catalog(&clock, &events);
    let _ = catalog.patterned(Err(BadId)); // ignore_on: not recorded
    let _ = catalog.patterned(Err(Unavailable)); // outside record_on_if: a success
    let _ = catalog.patterned(Err(Busy)); // record_on_if: a failure
    let local = Rejection::BulkheadFull { instance: "inner".into() };
    let _ = catalog.patterned(Err(ReportError::Rejected(local))); // a local refusal: not recorded
    let nested = Rejection::CallNotPermitted { instance: "downstream".into() };
    let _ = catalog.patterned(Err(ReportError::Rejected(nested))); // a nested breaker: a failure
    let s = registry.circuit_breaker("circuit_breaker::catalog::Catalog::patterned").unwrap().snapshot();
    assert_eq!((s.buffered_calls, s.failed_calls), (3, 2));
    let ignored = events.breaker.all().iter().filter(|e| matches!(e, CircuitBreakerEvent::Ignored { .. })).count();
    assert_eq!(ignored, 2);
}

#[test]
fn methods_sharing_a_name_share_one_breaker() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let (registry, catalog) = catalog(&clock, &events);
    let _ = catalog.shared_a(Err(Unavailable));
    let _ = catalog.shared_b(Ok(1));
    let shared = registry.circuit_breaker("shared").unwrap().snapshot();
    assert_eq!((shared.buffered_calls, shared.failed_calls), (2, 1));
    assert!(registry.circuit_breaker("circuit_breaker::catalog::Catalog::shared_a").is_none());
}

#[test]
fn enabled_false_is_a_plain_call_until_an_instance_override_turns_it_on() {
    let (clock, events) = (ManualClock::new(), Events::default());
    let (registry, catalog) = catalog(&clock, &events);
    for _ in 0..10 {
        let _ = catalog.unguarded(Err(Unavailable));
    }
    let id = "circuit_breaker::catalog::Catalog::unguarded";
    assert_eq!(registry.circuit_breaker(id).unwrap().snapshot().buffered_calls, 0);

    let registry = testing::registry(&clock).circuit_breaker_instance(id, |c| c.enabled(true)).build().unwrap();
    let catalog = ResilientCatalog::new(Echo::default(), &registry).unwrap();
    for _ in 0..4 {
        let _ = catalog.unguarded(Err(Unavailable));
    }
    assert_eq!(registry.circuit_breaker(id).unwrap().state(), State::Open);
}

#[test]
fn configuration_layers_and_errors() {
    let clock = ManualClock::new();
    // The instance override beats the attribute (window_size = 4), which beats the registry
    // defaults (window_size = 50): one failure of one call opens.
    let registry = testing::registry(&clock)
        .circuit_breaker_defaults(|c| c.failure_rate_threshold(25.0).window_size(50))
        .circuit_breaker_instance(PRODUCT, |c| c.window_size(1))
        .build()
        .unwrap();
    let catalog = ResilientCatalog::new(Echo::default(), &registry).unwrap();
    let _ = catalog.product(Err(Unavailable));
    let handle = registry.circuit_breaker(PRODUCT).unwrap();
    assert_eq!(handle.state(), State::Open);
    let config = handle.snapshot().config;
    assert_eq!(config.failure_rate_threshold, 25.0, "registry defaults apply where nothing else is set");
    assert_eq!(config.wait_in_open, Duration::from_secs(10), "the trait's attribute beats registry defaults");

    let bad = testing::registry(&clock).circuit_breaker_instance(PRODUCT, |c| c.failure_rate_threshold(0.0));
    let err = ResilientCatalog::new(Echo::default(), &bad.build().unwrap()).unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-003", Some(PRODUCT)));
}

pub mod priced {
    use resilience4cata::resilient;

    #[resilient]
    pub trait Prices {
        #[circuit_breaker(name = "prices", window_size = 10)]
        fn price(&self) -> Result<u32, std::io::Error>;
    }

    #[resilient]
    pub trait Quotes {
        #[circuit_breaker(name = "prices", window_size = 20)]
        fn quote(&self) -> Result<u32, std::io::Error>;
    }
}

/// A backend with fixed answers: a price of 1, a quote of 2.
#[derive(Debug)]
struct Fixed;

impl priced::Prices for Fixed {
    fn price(&self) -> Result<u32, std::io::Error> {
        Ok(1)
    }
}

impl priced::Quotes for Fixed {
    fn quote(&self) -> Result<u32, std::io::Error> {
        Ok(2)
    }
}

#[test]
fn a_name_shared_with_another_configuration_is_reg_008() {
    let registry = Registry::builder().build().unwrap();
    priced::ResilientPrices::new(Fixed, &registry).unwrap();
    let err = priced::ResilientQuotes::new(Fixed, &registry).unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-008", Some("prices")));
}

#[test]
fn unknown_named_config_is_reg_004() {
    pub mod named {
        #[resilience4cata::resilient]
        pub trait Named {
            #[circuit_breaker(config = "external")]
            fn get(&self) -> Result<u32, std::io::Error>;
        }
    }
    impl named::Named for Fixed {
        fn get(&self) -> Result<u32, std::io::Error> {
            Ok(1)
        }
    }
    let err = named::ResilientNamed::new(Fixed, &Registry::builder().build().unwrap()).unwrap_err();
    assert_eq!(err.code(), "R4C-REG-004");
    let registry = Registry::builder().circuit_breaker("external", |c| c.window_size(3)).build().unwrap();
    let wrapped = named::ResilientNamed::new(Fixed, &registry).unwrap();
    assert_eq!(named::Named::get(&wrapped).unwrap(), 1);
}

pub mod remote {
    use resilience4cata::resilient;

    #[resilient]
    pub trait Remote {
        #[retry(max_attempts = 2, delay = "1s")]
        #[circuit_breaker(
            window_size = 2,
            minimum_calls = 2,
            slow_call_duration = "500ms",
            slow_call_rate_threshold = 50
        )]
        async fn fetch(&self, clock: &resilience4cata::testing::ManualClock) -> Result<u32, std::io::Error>;
    }
}

struct Slow;

impl remote::Remote for Slow {
    async fn fetch(&self, clock: &ManualClock) -> Result<u32, std::io::Error> {
        clock.advance(Duration::from_millis(500));
        Ok(9)
    }
}

#[tokio::test]
async fn async_methods_record_each_attempt_and_slow_calls_open_the_breaker() {
    use remote::Remote;
    let (clock, registry) = testkit::manual();
    let remote = remote::ResilientRemote::new(Slow, &registry).unwrap();
    assert_eq!(remote.fetch(&clock).await.unwrap(), 9);
    assert_eq!(remote.fetch(&clock).await.unwrap(), 9); // 2 slow of 2: opens
    let s = registry.circuit_breaker("circuit_breaker::remote::Remote::fetch").unwrap().snapshot();
    assert_eq!(s.state, State::Open);
    assert!(matches!(remote.fetch(&clock).await.unwrap_err().rejection(), Some(Rejection::CallNotPermitted { .. })));
}

pub mod sendable {
    use std::future::Future;

    use resilience4cata::resilient;

    #[resilient]
    pub trait Feed {
        #[retry(max_attempts = 2, delay = "0")]
        #[circuit_breaker(window_size = 4)]
        fn next(&self, cursor: u64) -> impl Future<Output = Result<u64, std::io::Error>> + Send;
    }
}

struct Counter;

impl sendable::Feed for Counter {
    async fn next(&self, cursor: u64) -> Result<u64, std::io::Error> {
        Ok(cursor + 1)
    }
}

#[tokio::test]
async fn a_send_future_holds_its_permit_across_the_await() {
    use sendable::Feed;
    fn assert_send<T: Send>(t: T) -> T {
        t
    }
    let registry = Registry::builder().build().unwrap();
    let feed = sendable::ResilientFeed::new(Counter, &registry).unwrap();
    let spawned = tokio::spawn(async move { assert_send(feed.next(41)).await });
    assert_eq!(spawned.await.unwrap().unwrap(), 42);
    let s = registry.circuit_breaker("circuit_breaker::sendable::Feed::next").unwrap().snapshot();
    assert_eq!(s.buffered_calls, 1);
}
