//! A pipeline's circuit breaker on the manual clock: the seeds' `report` and `StockClient` examples
//! mirrored with the annotated form's timelines and counts, one breaker shared by name between a
//! pipeline and an annotated method, the order breaker → rate limiter whatever the builder order,
//! outcome classification, async and tower.

#[cfg(feature = "tower")]
use std::future::Future;
#[cfg(feature = "tower")]
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::ManualClock;
use resilience4cata::{GiveUpReason, Pipeline, Registry, RegistryBuilder, Rejection, ResilienceError, resilient};
use testkit::{RetryAndBreaker as Events, block_on};

#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum ReportError {
    /// Stands for the seed's `IllegalArgumentException`: in `abort_on`.
    BadId,
    Unavailable,
    #[rejection]
    Rejected(Rejection),
}

/// The seeds' registry (manual clock, no jitter) with `events` listening, tuned by `tune`.
fn registry(clock: &ManualClock, events: &Events, tune: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Registry {
    tune(events.on(testkit::no_jitter(clock))).build().unwrap()
}

/// The seed's `report`: retry(5 attempts, 1 s, abort_on BadId) around
/// circuit_breaker(window 2, minimum 2, wait_in_open 1 m), built in the opposite order.
/// A manual clock, the retry's and the breaker's events, and a registry on that clock recording them.
fn world() -> (ManualClock, Events, Registry) {
    let (clock, events) = (ManualClock::new(), Events::default());
    let registry = registry(&clock, &events, |b| b);
    (clock, events, registry)
}

fn report_pipeline(registry: &Registry) -> Pipeline<String, ReportError> {
    Pipeline::builder(registry, "reports::report")
        .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2).wait_in_open(Duration::from_secs(60)))
        .retry_with(|r| r.max_attempts(5).delay(Duration::from_secs(1)))
        .build()
        .unwrap()
        .abort_on(|e| matches!(e, ReportError::BadId))
}

/// Two calls reach the method and open the breaker, the third attempt is refused, and the retry
/// gives up there (`Refused` after 3 attempts) instead of waiting two more waits; while open,
/// each call makes one attempt and waits nothing.
#[test]
fn seed_report_an_open_breaker_stops_the_retries_at_once() {
    let (clock, events, registry) = world();
    let report = report_pipeline(&registry);
    let calls = AtomicU32::new(0);
    let down = || {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(ReportError::Unavailable)
    };

    let err = report.execute(down).unwrap_err();
    assert!(
        matches!(err, ReportError::Rejected(Rejection::CallNotPermitted { ref instance }) if &**instance == "reports::report")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the method ran twice");
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)], "the third attempt was refused");
    assert_eq!(clock.elapsed(), Duration::from_secs(3), "waits of 1 s and 2 s, not the two more after");
    assert_eq!(events.transitions(), [(State::Closed, State::Open)]);

    for _ in 0..3 {
        assert!(matches!(report.execute(down), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
    assert_eq!(events.gave_up()[1..], [(1, GiveUpReason::Refused); 3]);
    let snapshot = registry.circuit_breaker("reports::report").unwrap().snapshot();
    assert_eq!((snapshot.state, snapshot.not_permitted_calls), (State::Open, 4));
}

#[test]
fn seed_report_async_has_the_same_timeline() {
    let (clock, events, registry) = world();
    let report = report_pipeline(&registry);
    let calls = AtomicU32::new(0);
    let err = block_on(report.execute_async(|| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(ReportError::Unavailable)
    }));
    assert!(matches!(err, Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)]);
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
}

/// The seed's `StockClient`: retry(3 attempts) around a default breaker; the first attempt fails,
/// the retry succeeds, and the breaker saw both attempts.
#[test]
fn seed_stock_client_the_breaker_records_every_attempt() {
    let (_, registry) = testkit::manual();
    let stock = Pipeline::builder(&registry, "warehouse::StockClient::stock")
        .retry_with(|r| r.max_attempts(3))
        .circuit_breaker()
        .build::<u32, std::io::Error>()
        .unwrap();
    let mut calls = 0;
    let count = stock.execute(|| {
        calls += 1;
        if calls == 1 { Err(std::io::Error::other("warehouse busy")) } else { Ok(7) }
    });
    assert_eq!(count.unwrap(), 7);
    let breaker = registry.circuit_breaker("warehouse::StockClient::stock").unwrap().snapshot();
    assert_eq!((breaker.buffered_calls, breaker.failed_calls), (2, 1), "the breaker saw both attempts");
    assert_eq!(breaker.failure_rate, None, "2 calls are below minimum_calls = 100");
    assert_eq!(registry.snapshot().circuit_breakers(), [breaker]);
}

#[resilient]
pub trait Prices {
    #[circuit_breaker(name = "prices", window_size = 4, minimum_calls = 4, wait_in_open = "10s")]
    fn price(&self, fail: bool) -> Result<u32, ReportError>;
}

struct PriceBackend(AtomicU32);

impl Prices for PriceBackend {
    fn price(&self, fail: bool) -> Result<u32, ReportError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        if fail { Err(ReportError::Unavailable) } else { Ok(5) }
    }
}

/// A pipeline and an annotated method sharing a breaker by name see one state: failures through
/// either fill one window, the breaker opens for both, and a reset through the handle closes it
/// for both.
#[test]
fn a_pipeline_and_an_annotated_method_share_one_breaker_by_name() {
    let (_, events, registry) = world();
    let prices = ResilientPrices::new(PriceBackend(AtomicU32::new(0)), &registry).unwrap();
    let pipeline = Pipeline::builder(&registry, "prices")
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4).wait_in_open(Duration::from_secs(10)))
        .build::<u32, ReportError>()
        .unwrap();
    assert_eq!(prices.price(true), Err(ReportError::Unavailable));
    assert_eq!(pipeline.execute(|| Err(ReportError::Unavailable)), Err(ReportError::Unavailable));
    assert_eq!(prices.price(true), Err(ReportError::Unavailable));
    assert_eq!(registry.circuit_breaker("prices").unwrap().snapshot().buffered_calls, 3, "one window");
    assert_eq!(pipeline.execute(|| Err(ReportError::Unavailable)), Err(ReportError::Unavailable));
    assert_eq!(events.transitions(), [(State::Closed, State::Open)], "the fourth failure opened it");

    let mut reached = false;
    let refused = pipeline.execute(|| {
        reached = true;
        Ok(1)
    });
    assert!(matches!(refused, Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert!(!reached);
    assert!(matches!(prices.price(false), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(prices.delegate().0.load(Ordering::SeqCst), 2);

    registry.circuit_breaker("prices").unwrap().reset();
    assert_eq!(prices.price(false), Ok(5));
    assert_eq!(pipeline.execute(|| Ok(6)), Ok(6));
    assert_eq!(registry.snapshot().circuit_breakers().len(), 1);

    let err = Pipeline::builder(&registry, "prices").circuit_breaker().build::<u32, ReportError>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-008", "a name shared with another configuration");
}

/// Calls the breaker refuses take no rate limiter permit, whatever the builder order; a rate
/// limiter's refusal is a local decision the breaker does not record.
#[test]
fn breaker_refusals_take_no_permit_and_local_refusals_are_not_recorded() {
    for breaker_first in [true, false] {
        let (clock, _, registry) = world();
        let builder = Pipeline::builder(&registry, "quotes");
        let builder = if breaker_first {
            builder
                .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
                .rate_limiter_with(|l| l.permits(3).period(Duration::from_secs(100)))
        } else {
            builder
                .rate_limiter_with(|l| l.permits(3).period(Duration::from_secs(100)))
                .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
        };
        let quotes = builder.build::<u32, ReportError>().unwrap();
        let breaker = registry.circuit_breaker("quotes").unwrap();
        let limiter = registry.rate_limiter("quotes").unwrap();
        assert!(quotes.execute(|| Err(ReportError::Unavailable)).is_err());
        assert!(quotes.execute(|| Err(ReportError::Unavailable)).is_err());
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(limiter.snapshot().available_permits, 1);
        for _ in 0..5 {
            assert!(matches!(quotes.execute(|| Ok(1)), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
        }
        assert_eq!(limiter.snapshot().available_permits, 1, "refused calls took no permit");

        breaker.reset();
        assert_eq!(quotes.execute(|| Ok(1)), Ok(1));
        let refused = quotes.execute(|| Ok(2));
        assert!(matches!(refused, Err(ReportError::Rejected(Rejection::RateLimitExceeded { .. }))));
        let snapshot = breaker.snapshot();
        assert_eq!((snapshot.buffered_calls, snapshot.failed_calls), (1, 0), "the local refusal was not recorded");
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }
}

/// Pipeline `id` with a breaker alone, judging a window of `calls` calls once it is full.
fn breaker_only(registry: &Registry, id: &str, calls: u32) -> Pipeline<u32, ReportError> {
    Pipeline::builder(registry, id).circuit_breaker_with(|c| c.window_size(calls).minimum_calls(calls)).build().unwrap()
}

/// `record_on` and `ignore_on` classify errors as the breaker's patterns do.
#[test]
fn record_on_and_ignore_on_classify_errors() {
    let (_, registry) = testkit::manual();
    let pipeline = breaker_only(&registry, "classified", 10)
        .record_on(|e| matches!(e, ReportError::Unavailable))
        .ignore_on(|e| matches!(e, ReportError::BadId));
    let _ = pipeline.execute(|| Err(ReportError::Unavailable)); // a failure
    let _ = pipeline.execute(|| Err(ReportError::BadId)); // not recorded
    let _ = pipeline.execute(|| Err(ReportError::Rejected(Rejection::BulkheadFull { instance: "x".into() }))); // local: not recorded
    let _ = pipeline.execute(|| Err(ReportError::Rejected(Rejection::CallNotPermitted { instance: "y".into() }))); // nested open breaker: a failure
    let _ = pipeline.execute(|| Ok(1)); // a success
    let snapshot = registry.circuit_breaker("classified").unwrap().snapshot();
    assert_eq!((snapshot.buffered_calls, snapshot.failed_calls), (3, 2));
}

/// A timed-out attempt is a breaker failure; each attempt is acquired and recorded separately.
#[test]
fn timeouts_are_breaker_failures_per_attempt() {
    let (clock, _, registry) = world();
    let fetch = Pipeline::builder(&registry, "fetch")
        .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
        .circuit_breaker_with(|c| c.window_size(4).minimum_calls(4))
        .timeout_with(|t| t.duration(Duration::from_millis(100)))
        .build::<u32, ReportError>()
        .unwrap();
    let outcome = block_on(fetch.execute_async(std::future::pending));
    assert!(matches!(outcome, Err(ReportError::Rejected(Rejection::CallTimeout { .. }))));
    let snapshot = registry.circuit_breaker("fetch").unwrap().snapshot();
    assert_eq!((snapshot.buffered_calls, snapshot.failed_calls), (2, 2));
    assert_eq!(clock.elapsed(), Duration::from_millis(200));
}

#[cfg(feature = "tower")]
#[test]
fn through_the_tower_layer_the_report_example_holds() {
    use tower::{Layer, ServiceExt};

    let (clock, events, registry) = world();
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let service = tower::service_fn(move |_id: String| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Err::<String, _>(ReportError::Unavailable) }
    });
    let service = report_pipeline(&registry).layer().layer(service);
    let err = block_on(service.oneshot("r-1".to_owned())).unwrap_err();
    assert!(matches!(err, ReportError::Rejected(Rejection::CallNotPermitted { .. })));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(events.gave_up(), [(3, GiveUpReason::Refused)]);
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
}

/// Through the layer, a breaker-only pipeline's attempt that is dropped records nothing (as a
/// dropped generated call), and a refused call never reaches the service.
#[cfg(feature = "tower")]
#[test]
fn through_the_tower_layer_a_dropped_attempt_records_nothing() {
    use std::pin::pin;
    use std::task::{Context, Waker};
    use tower::{Layer, Service};

    let (_, registry) = testkit::manual();
    let pipeline = breaker_only(&registry, "hanging", 2);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let mut service = pipeline.layer().layer(tower::service_fn(move |n: u32| {
        seen.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                std::future::pending::<()>().await;
            }
            Err::<u32, _>(ReportError::Unavailable)
        }
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_ready());
    {
        let mut hanging = pin!(service.call(0));
        assert!(hanging.as_mut().poll(&mut cx).is_pending());
    }
    let breaker = registry.circuit_breaker("hanging").unwrap();
    assert_eq!(breaker.snapshot().buffered_calls, 0, "the dropped attempt recorded nothing");
    for _ in 0..2 {
        assert!(service.poll_ready(&mut cx).is_ready());
        assert_eq!(block_on(service.call(1)), Err(ReportError::Unavailable));
    }
    assert_eq!(breaker.state(), State::Open);
    assert!(service.poll_ready(&mut cx).is_ready());
    assert!(matches!(block_on(service.call(1)), Err(ReportError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(calls.load(Ordering::SeqCst), 3, "the refused call never reached the service");
}
