//! The pipeline's tower layer (feature `tower`), driven with `tower::ServiceExt::oneshot` on the
//! manual clock: the same timelines and events as `execute`, request clones counted, readiness
//! passed through, nested refusals never retried, cancellation by drop.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{GiveUpReason, Pipeline, Registry, Rejection, ResilienceError, RetryEvent};
use testkit::{Recorder, block_on, ms};
use tower::{Layer, Service, ServiceExt, service_fn};

type Error = std::io::Error;

/// A registry on a manual clock without jitter, recording every retry event.
fn registry(clock: &ManualClock) -> (Registry, Recorder<RetryEvent>) {
    let events = Recorder::default();
    (events.on(testkit::no_jitter(clock)).build().unwrap(), events)
}

fn pipeline(registry: &Registry, max_attempts: u32) -> Pipeline<u32, Error> {
    Pipeline::builder(registry, "inventory")
        .retry_with(|r| r.max_attempts(max_attempts).delay(ms(100)))
        .build()
        .unwrap()
}

/// A request that counts its clones.
#[derive(Debug)]
struct Sku {
    clones: Arc<AtomicU32>,
}

impl Clone for Sku {
    fn clone(&self) -> Self {
        self.clones.fetch_add(1, Ordering::SeqCst);
        Sku { clones: Arc::clone(&self.clones) }
    }
}

fn sku() -> (Sku, Arc<AtomicU32>) {
    let clones = Arc::new(AtomicU32::new(0));
    (Sku { clones: Arc::clone(&clones) }, clones)
}

/// A backend that fails its first `failures` calls, then answers 7.
fn backend(
    failures: u32,
) -> (impl Service<Sku, Response = u32, Error = Error, Future: Send> + Clone + Send + 'static, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let service = service_fn(move |_: Sku| {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        async move { if n <= failures { Err(Error::other("inventory down")) } else { Ok(7) } }
    });
    (service, calls)
}

#[test]
fn oneshot_retries_with_the_seed_timeline_and_clones_once_per_extra_attempt() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let (service, calls) = backend(2);
    let service = pipeline(&registry, 3).layer().layer(service);
    let (request, clones) = sku();
    assert_eq!(block_on(service.oneshot(request)).unwrap(), 7);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), ms(300));
    assert_eq!(clones.load(Ordering::SeqCst), 2, "attempts 1 and 2 get clones, the last takes the original");
    assert_eq!(events.all(), testkit::seed_retrying("inventory"));
}

#[test]
fn gives_up_after_max_attempts_with_the_last_error() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let (service, calls) = backend(u32::MAX);
    let service = pipeline(&registry, 3).layer().layer(service);
    let (request, clones) = sku();
    let err = block_on(service.oneshot(request)).unwrap_err();
    assert_eq!(err.to_string(), "inventory down");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(clones.load(Ordering::SeqCst), 2);
    assert_eq!(events.last(), Some(testkit::gave_up("inventory", 3, GiveUpReason::MaxAttempts)));
}

#[test]
fn no_clone_when_only_one_attempt_is_possible() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let single = pipeline(&registry, 1);
    let disabled = Pipeline::builder(&registry, "off").retry_with(|r| r.enabled(false)).build().unwrap();
    let bare = Pipeline::builder(&registry, "bare").build().unwrap();
    for pipeline in [single, disabled, bare] {
        let (service, calls) = backend(1);
        let (request, clones) = sku();
        assert!(block_on(pipeline.layer().layer(service).oneshot(request)).is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(clones.load(Ordering::SeqCst), 0, "{pipeline:?}");
    }
}

#[test]
fn a_first_attempt_success_clones_the_request_once_at_most() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let (service, _) = backend(0);
    let (request, clones) = sku();
    assert_eq!(block_on(pipeline(&registry, 3).layer().layer(service).oneshot(request)).unwrap(), 7);
    assert_eq!(clones.load(Ordering::SeqCst), 1);
    assert!(events.is_empty());
}

/// A nested open breaker's refusal is found (the layer requires `E: ResilienceError`) and never
/// retried.
#[test]
fn a_nested_open_breaker_is_not_retried() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let inner = service_fn(move |_: u32| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Err::<u32, _>(Error::from_rejection(Rejection::CallNotPermitted { instance: "db".into() })) }
    });
    let err = block_on(pipeline(&registry, 5).layer().layer(inner).oneshot(1)).unwrap_err();
    assert!(err.rejection().is_some_and(Rejection::is_call_not_permitted));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(events.all(), [testkit::gave_up("inventory", 1, GiveUpReason::Refused)]);
}

/// A service that is ready only once `open` is set, counting readiness checks.
#[derive(Clone)]
struct Gate {
    open: Arc<AtomicBool>,
    polls: Arc<AtomicU32>,
    calls: Arc<AtomicU32>,
}

impl Service<u32> for Gate {
    type Response = u32;
    type Error = Error;
    type Future = std::future::Ready<Result<u32, Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        if self.open.load(Ordering::SeqCst) { Poll::Ready(Ok(())) } else { Poll::Pending }
    }

    fn call(&mut self, n: u32) -> Self::Future {
        let attempt = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if attempt == 1 { Err(Error::other("first fails")) } else { Ok(n) })
    }
}

#[test]
fn poll_ready_is_the_inner_services_and_each_retry_waits_for_readiness() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let gate = Gate { open: Arc::new(AtomicBool::new(false)), polls: Arc::default(), calls: Arc::default() };
    let mut service = pipeline(&registry, 3).layer().layer(gate.clone());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_pending());
    gate.open.store(true, Ordering::SeqCst);
    assert!(matches!(service.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    let polls_before = gate.polls.load(Ordering::SeqCst);
    assert_eq!(block_on(service.call(5)).unwrap(), 5);
    assert_eq!(gate.calls.load(Ordering::SeqCst), 2);
    assert_eq!(gate.polls.load(Ordering::SeqCst), polls_before + 1, "the retry polled its service ready once");
}

/// A readiness error before a retry is that attempt's outcome, judged like any other.
#[test]
fn a_readiness_error_is_an_attempt_outcome() {
    #[derive(Clone)]
    struct Flaky {
        polls: Arc<AtomicU32>,
    }
    impl Service<u32> for Flaky {
        type Response = u32;
        type Error = Error;
        type Future = std::future::Ready<Result<u32, Error>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
            let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            Poll::Ready(if n == 2 { Err(Error::other("not ready")) } else { Ok(()) })
        }
        fn call(&mut self, n: u32) -> Self::Future {
            std::future::ready(if self.polls.load(Ordering::SeqCst) == 1 { Err(Error::other("boom")) } else { Ok(n) })
        }
    }
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let service = pipeline(&registry, 3).layer().layer(Flaky { polls: Arc::default() });
    assert_eq!(block_on(service.oneshot(9)).unwrap(), 9);
    let retried =
        events.filter_map(|e| if let RetryEvent::Retrying { attempt, .. } = e { Some(*attempt) } else { None });
    assert_eq!(retried, [1, 2], "the failed call, then the failed readiness check");
}

#[test]
fn dropping_the_response_future_during_the_wait_cancels_the_call() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let (service, calls) = backend(u32::MAX);
    let mut service = pipeline(&registry, 3).layer().layer(service);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_ready());
    {
        let mut future = pin!(service.call(sku().0));
        assert!(future.as_mut().poll(&mut cx).is_pending());
    }
    clock.advance(Duration::from_secs(1));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(events.len(), 1, "Retrying, and nothing after the drop");
}

/// The layer's instance is the pipeline's: one snapshot entry, one budget.
#[test]
fn the_layer_shares_the_pipelines_instance() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let pipeline: Pipeline<u32, Error> =
        Pipeline::builder(&registry, "catalog").retry_with(|r| r.budget_percent(20.0)).build().unwrap();
    let (service, _) = backend(0);
    block_on(pipeline.layer().layer(service).oneshot(sku().0)).unwrap();
    pipeline.execute(|| Ok(1)).unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries().len(), 1);
    assert_eq!(snapshot.retries()[0].budget.unwrap().calls, 2);
}

fn assert_send<F: Future + Send + 'static>(f: F) -> F {
    f
}

/// The response future is `Send` when the service and request are, so it can be spawned.
#[test]
fn the_response_future_is_send() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let registry = Registry::builder().retry_defaults(|r| r.delay(ms(1))).build().unwrap();
    let (service, calls) = backend(1);
    let service = pipeline(&registry, 3).layer().layer(service);
    let task = runtime.spawn(assert_send(service.oneshot(sku().0)));
    assert_eq!(runtime.block_on(task).unwrap().unwrap(), 7);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// Through a rate limiter and a timeout: a refused attempt never reaches the service, a hanging
/// one is cut at its deadline and retried with a ready clone of the service; a refusal whose
/// `retry_after` would outlast `max_duration` gives up at once (SPEC §7.1, "Delay from the failure").
#[test]
fn inner_policies_run_around_each_attempt_of_the_service() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "quotes")
        .retry_with(|r| r.max_attempts(3).delay(ms(100)).max_duration(ms(1_000)))
        .timeout_with(|t| t.duration(ms(250)))
        .rate_limiter_with(|l| l.permits(2).period(Duration::from_secs(10)))
        .build::<u32, Error>()
        .unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&calls);
    let service = service_fn(move |n: u32| {
        let call = seen.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if call == 1 {
                std::future::pending::<()>().await;
            }
            Ok::<_, Error>(n)
        }
    });
    let service = pipeline.layer().layer(service);
    assert_eq!(block_on(service.clone().oneshot(5)).unwrap(), 5, "the hanging first attempt was timed out");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(clock.elapsed(), ms(350));
    let err = block_on(service.oneshot(6)).unwrap_err();
    assert!(matches!(err.rejection(), Some(Rejection::RateLimitExceeded { .. })), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "refused attempts never reached the service");
    assert_eq!(clock.elapsed(), ms(350), "the next permit is 4.65 s away, past max_duration: no wait");
    assert_eq!(events.last(), Some(testkit::gave_up("quotes", 1, GiveUpReason::MaxDuration)));
}

/// A bulkhead through the layer holds its slot only while the service's future runs.
#[test]
fn a_bulkhead_slot_is_held_while_the_service_runs() {
    let clock = ManualClock::new();
    let (registry, _) = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "jobs")
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .build::<u32, Error>()
        .unwrap();
    let registry_in = registry.clone();
    let service = service_fn(move |n: u32| {
        let in_flight = registry_in.bulkhead("jobs").unwrap().snapshot().in_flight;
        async move { Ok::<_, Error>(n + in_flight) }
    });
    assert_eq!(block_on(pipeline.layer().layer(service).oneshot(1)).unwrap(), 2, "one slot in use inside");
    assert_eq!(registry.bulkhead("jobs").unwrap().snapshot().in_flight, 0);
}

/// A request that is not `Clone`: a body that may be a one-shot stream.
enum Body {
    Buffered(u32),
    Stream(std::sync::mpsc::Receiver<u32>),
}

fn copy_buffered(body: &Body) -> Option<Body> {
    match body {
        Body::Buffered(n) => Some(Body::Buffered(*n)),
        Body::Stream(_) => None,
    }
}

/// Fails the first `failures` calls, then answers the body's value.
fn flaky_body_service(
    failures: u32,
    calls: Arc<AtomicU32>,
) -> impl Service<Body, Response = u32, Error = Error, Future: Send> + Clone + Send + 'static {
    service_fn(move |body: Body| {
        let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if call <= failures {
                return Err(Error::other("unavailable"));
            }
            Ok(match body {
                Body::Buffered(n) => n,
                Body::Stream(rx) => rx.recv().unwrap_or(0),
            })
        }
    })
}

/// `clone_request`: a copyable request is retried like any; one the hook cannot copy gets one
/// attempt and the retry is not asked (no event); a request that becomes uncopyable mid-call ends
/// it with the attempt that takes the original.
#[test]
fn requests_that_cannot_be_copied_get_one_attempt() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let layer = pipeline(&registry, 3).layer().clone_request(copy_buffered);

    let calls = Arc::new(AtomicU32::new(0));
    let service = layer.layer(flaky_body_service(2, Arc::clone(&calls)));
    assert_eq!(block_on(service.oneshot(Body::Buffered(7))).unwrap(), 7);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "copied for attempts 1 and 2, the original for 3");
    assert_eq!(clock.elapsed(), ms(300));

    events.clear();
    let calls = Arc::new(AtomicU32::new(0));
    let service = layer.layer(flaky_body_service(1, Arc::clone(&calls)));
    let (tx, rx) = std::sync::mpsc::channel();
    tx.send(9).unwrap();
    let err = block_on(service.oneshot(Body::Stream(rx))).unwrap_err();
    assert_eq!(err.to_string(), "unavailable");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a stream is sent once");
    assert!(events.is_empty(), "the retry was not asked: {:?}", events.all());
    assert_eq!(clock.elapsed(), ms(300), "no wait");
}

#[test]
fn a_hook_that_stops_copying_ends_the_call_with_the_original() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let copies = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&copies);
    let layer = pipeline(&registry, 5).layer().clone_request(move |body: &Body| {
        // The first copy only: then the request is treated as uncopyable.
        (counted.fetch_add(1, Ordering::SeqCst) == 0).then(|| copy_buffered(body)).flatten()
    });
    let calls = Arc::new(AtomicU32::new(0));
    let service = layer.layer(flaky_body_service(10, Arc::clone(&calls)));
    assert!(block_on(service.oneshot(Body::Buffered(1))).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 2, "a copy, then the original; no third attempt");
    let retrying = events.all().iter().filter(|e| matches!(e, RetryEvent::Retrying { .. })).count();
    assert_eq!(retrying, 1);
    assert_eq!(clock.elapsed(), ms(100));
}
