//! Backpressure through `poll_ready` (`PipelineLayer::backpressure`, feature `tower`): a full
//! bulkhead or an empty rate limiter holds readiness instead of refusing the call, the reserved
//! slot or permit goes to the call's first attempt, and every reservation comes back when it is
//! not used. Time moves only on the manual clock.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;
use std::time::Duration;

use resilience4cata::bulkhead::BulkheadEvent;
use resilience4cata::rate_limiter::RateLimiterEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError};
use testkit::Recorder;
use tokio::sync::Semaphore;
use tower::{Layer, Service, ServiceExt, service_fn};

type Error = std::io::Error;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A backend whose calls each wait for one permit of `gate`, counting calls and the most inside.
fn gated(
    gate: &Arc<Semaphore>,
) -> (impl Service<u32, Response = u32, Error = Error, Future: Send> + Clone + Send + Sync + 'static, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let (seen, gate) = (Arc::clone(&calls), Arc::clone(gate));
    let service = service_fn(move |n: u32| {
        seen.fetch_add(1, Ordering::SeqCst);
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.expect("never closed").forget();
            Ok::<_, Error>(n)
        }
    });
    (service, calls)
}

fn echo() -> impl Service<u32, Response = u32, Error = Error, Future: Send> + Clone + Send + Sync + 'static {
    service_fn(|n: u32| async move { Ok::<_, Error>(n) })
}

/// Whether one poll of `service`'s readiness is pending (the waker is the test task's).
async fn pending<S: Service<u32>>(service: &mut S) -> bool {
    poll_fn(|cx| Poll::Ready(service.poll_ready(cx).is_pending())).await
}

fn bulkhead(registry: &Registry, id: &str, max: u32) -> Pipeline<u32, Error> {
    Pipeline::builder(registry, id).bulkhead_with(|b| b.max_concurrent_calls(max)).build().unwrap()
}

/// A rate limiter of `permits` per `period` as a layer with backpressure around [`echo`].
fn limited(
    registry: &Registry,
    id: &str,
    permits: u32,
    period: Duration,
) -> impl Service<u32, Response = u32, Error = Error, Future: Send> + Clone + Send + Sync + 'static {
    Pipeline::builder(registry, id)
        .rate_limiter_with(|l| l.permits(permits).period(period))
        .build::<u32, Error>()
        .unwrap()
        .layer()
        .backpressure()
        .layer(echo())
}

/// Runs `task(0..8)` as eight tasks on a two-thread runtime and sums what they return.
fn on_two_threads<F>(task: impl Fn(u32) -> F) -> u32
where
    F: std::future::Future<Output = u32> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..8u32).map(|t| tokio::spawn(task(t))).collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.unwrap();
        }
        total
    })
}

/// `(in_flight, waiting)` of the bulkhead `id`.
fn slots(registry: &Registry, id: &str) -> (u32, u32) {
    let s = registry.bulkhead(id).unwrap().snapshot();
    (s.in_flight, s.waiting)
}

fn bulkhead_events(clock: &ManualClock) -> (Registry, Recorder<BulkheadEvent>) {
    let events = Recorder::default();
    (events.on(testing::registry(clock)).build().unwrap(), events)
}

/// How many recorded events `f` accepts.
fn count<E>(events: &Recorder<E>, f: fn(&E) -> bool) -> usize {
    events.filter_map(|e| f(e).then_some(())).len()
}

fn rejected(events: &Recorder<BulkheadEvent>) -> usize {
    count(events, |e| matches!(e, BulkheadEvent::Rejected { .. }))
}

#[tokio::test]
async fn a_full_bulkhead_holds_readiness_and_the_third_call_proceeds_when_one_finishes() {
    let clock = ManualClock::new();
    let (registry, events) = bulkhead_events(&clock);
    let gate = Arc::new(Semaphore::new(0));
    let (backend, calls) = gated(&gate);
    let service = bulkhead(&registry, "pool", 2).layer().backpressure().layer(backend);

    let first = tokio::spawn(service.clone().oneshot(1));
    let second = tokio::spawn(service.clone().oneshot(2));
    while calls.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    assert_eq!(slots(&registry, "pool"), (2, 0));

    let mut third = service.clone();
    assert!(pending(&mut third).await, "no slot: not ready");
    assert_eq!(slots(&registry, "pool"), (2, 1), "in line for the next slot");
    assert!(pending(&mut third).await, "still not ready while both calls run");

    gate.add_permits(1); // one of the two calls finishes and hands its slot over
    third.ready().await.unwrap();
    assert_eq!(slots(&registry, "pool"), (2, 0), "the third service holds the freed slot");
    let third = tokio::spawn(third.call(3));
    gate.add_permits(2);
    let mut answers = [first.await.unwrap().unwrap(), second.await.unwrap().unwrap(), third.await.unwrap().unwrap()];
    answers.sort_unstable();
    assert_eq!(answers, [1, 2, 3]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(rejected(&events), 0, "nothing was refused");
    assert_eq!(slots(&registry, "pool"), (0, 0));
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn without_the_opt_in_readiness_is_the_inner_services_and_a_full_bulkhead_refuses() {
    let clock = ManualClock::new();
    let (registry, events) = bulkhead_events(&clock);
    let gate = Arc::new(Semaphore::new(0));
    let (backend, calls) = gated(&gate);
    let service = bulkhead(&registry, "pool", 1).layer().layer(backend);

    let mut ready = service.clone();
    ready.ready().await.unwrap();
    assert_eq!(slots(&registry, "pool"), (0, 0), "readiness reserves nothing");
    let first = tokio::spawn(service.clone().oneshot(1));
    while calls.load(Ordering::SeqCst) < 1 {
        tokio::task::yield_now().await;
    }
    let mut second = service.clone();
    assert!(!pending(&mut second).await, "ready although the bulkhead is full");
    let refused = second.call(2).await.unwrap_err();
    assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { instance }) if &**instance == "pool"));
    assert_eq!(rejected(&events), 1);
    gate.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap(), 1);
    assert_eq!(slots(&registry, "pool"), (0, 0));
}

/// `rate_limiter(permits = 2, period = "100ms")`: two calls pass at once; under backpressure the
/// third service is ready when the next permit's time comes (50 ms), without it the third call is
/// refused with that `retry_after`.
#[tokio::test]
async fn an_empty_rate_limiter_holds_readiness_until_the_next_permit_then_the_call_proceeds() {
    let (clock, registry) = testkit::manual();
    let patient = limited(&registry, "patient", 2, ms(100));
    assert_eq!(patient.clone().oneshot(1).await.unwrap(), 1);
    assert_eq!(patient.clone().oneshot(2).await.unwrap(), 2);
    let mut third = patient.clone();
    assert!(pending(&mut third).await, "no permit before 50 ms");
    assert_eq!(clock.elapsed(), Duration::ZERO);
    third.ready().await.unwrap();
    assert_eq!(clock.elapsed(), ms(50), "ready exactly when the next permit is due");
    assert_eq!(third.call(3).await.unwrap(), 3, "the call uses the reserved permit");
    assert_eq!(registry.rate_limiter("patient").unwrap().snapshot().available_permits, 0);
    // The permit after that is due at 100 ms.
    assert_eq!(patient.clone().oneshot(4).await.unwrap(), 4);
    assert_eq!(clock.elapsed(), ms(100));

    let eager = Pipeline::builder(&registry, "eager")
        .rate_limiter_with(|l| l.permits(2).period(ms(100)))
        .build::<u32, Error>()
        .unwrap()
        .layer()
        .layer(echo());
    assert_eq!(eager.clone().oneshot(1).await.unwrap(), 1);
    assert_eq!(eager.clone().oneshot(2).await.unwrap(), 2);
    let refused = eager.clone().oneshot(3).await.unwrap_err();
    assert!(matches!(
        refused.rejection(),
        Some(Rejection::RateLimitExceeded { retry_after, .. }) if *retry_after == ms(50)
    ));
    assert_eq!(clock.elapsed(), ms(100), "refused without waiting");
}

#[tokio::test]
async fn a_dropped_service_gives_back_its_slot_its_place_in_line_and_its_permit() {
    let (clock, registry) = testkit::manual();
    let service = bulkhead(&registry, "pool", 1).layer().backpressure().layer(echo());
    let mut holder = service.clone();
    holder.ready().await.unwrap();
    assert_eq!(slots(&registry, "pool"), (1, 0));
    let mut queued = service.clone();
    assert!(pending(&mut queued).await);
    assert_eq!(slots(&registry, "pool"), (1, 1));
    drop(queued);
    assert_eq!(slots(&registry, "pool"), (1, 0), "left the line");
    drop(holder);
    assert_eq!(slots(&registry, "pool"), (0, 0), "the unused slot came back");

    // A slot handed to a waiting service that is dropped before it looks passes on.
    let mut holder = service.clone();
    holder.ready().await.unwrap();
    let mut queued = service.clone();
    assert!(pending(&mut queued).await);
    assert_eq!(holder.call(1).await.unwrap(), 1); // the slot is handed to `queued`
    assert_eq!(slots(&registry, "pool"), (1, 0));
    drop(queued);
    assert_eq!(slots(&registry, "pool"), (0, 0));

    let limited = limited(&registry, "api", 1, ms(100));
    let available = || registry.rate_limiter("api").unwrap().snapshot().available_permits;
    let mut ready = limited.clone();
    ready.ready().await.unwrap();
    assert_eq!(available(), 0);
    let mut waiting = limited.clone();
    assert!(pending(&mut waiting).await, "reserved the permit due at 100 ms");
    drop(waiting);
    drop(ready);
    assert_eq!(available(), 1, "both permits given back");
    let mut next = limited.clone();
    next.ready().await.unwrap();
    assert_eq!(clock.elapsed(), Duration::ZERO, "the permit given back is taken at once");
    let mut after = limited.clone();
    after.ready().await.unwrap();
    assert_eq!(clock.elapsed(), ms(100), "the one given back by the waiting service is not counted twice");
}

#[tokio::test]
async fn a_clone_of_a_ready_service_starts_unreserved() {
    let (_, registry) = testkit::manual();
    let service = bulkhead(&registry, "pool", 1).layer().backpressure().layer(echo());
    let mut ready = service.clone();
    ready.ready().await.unwrap();
    let mut clone = ready.clone();
    assert!(pending(&mut clone).await, "the clone has no slot of its own");
    assert_eq!(ready.call(1).await.unwrap(), 1);
    clone.ready().await.unwrap();
    assert_eq!(clone.call(2).await.unwrap(), 2);
    assert_eq!(slots(&registry, "pool"), (0, 0));
}

/// The reservation goes to the first attempt only; a retry takes its own slot as it always does,
/// and an attempt the breaker refuses gives its reservation back.
#[tokio::test]
async fn retries_take_their_own_slots_and_a_refused_attempt_gives_the_reservation_back() {
    let clock = ManualClock::new();
    let (registry, events) = bulkhead_events(&clock);
    let failures = Arc::new(AtomicU32::new(1));
    let fails = Arc::clone(&failures);
    let flaky = service_fn(move |n: u32| {
        let fail = fails.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |f| f.checked_sub(1)).is_ok();
        async move { if fail { Err(Error::other("flaky")) } else { Ok(n) } }
    });
    let pipeline = Pipeline::builder(&registry, "jobs")
        .retry_with(|r| r.max_attempts(2).delay(ms(10)))
        .circuit_breaker()
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .build::<u32, Error>()
        .unwrap();
    let service = pipeline.layer().backpressure().layer(flaky);
    assert_eq!(service.clone().oneshot(5).await.unwrap(), 5);
    let permitted = count(&events, |e| matches!(e, BulkheadEvent::Permitted { .. }));
    assert_eq!(permitted, 2, "the reserved slot for attempt 1, a fresh one for attempt 2");
    assert_eq!(slots(&registry, "jobs"), (0, 0));

    registry.circuit_breaker("jobs").unwrap().force_open();
    let mut ready = service.clone();
    ready.ready().await.unwrap();
    assert_eq!(slots(&registry, "jobs"), (1, 0));
    let refused = ready.call(6).await.unwrap_err();
    assert!(matches!(refused.rejection(), Some(Rejection::CallNotPermitted { .. })));
    assert_eq!(slots(&registry, "jobs"), (0, 0), "the refused attempt's slot came back");
}

/// Eight tasks on two threads, bulkhead of 3, every call through `ready().await` then `call`,
/// every fifth ready service dropped unused: no call is refused, never more than 3 inside, and
/// every slot comes back.
#[test]
fn counts_add_up_under_concurrency() {
    const MAX: u32 = 3;
    let clock = ManualClock::new();
    let (registry, events) = bulkhead_events(&clock);
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let (now, top) = (Arc::clone(&inside), Arc::clone(&most));
    let backend = service_fn(move |n: u32| {
        let (now, top) = (Arc::clone(&now), Arc::clone(&top));
        async move {
            top.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            for _ in 0..n % 4 {
                tokio::task::yield_now().await;
            }
            now.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, Error>(n)
        }
    });
    let service = bulkhead(&registry, "pool", MAX).layer().backpressure().layer(backend);
    let answered = on_two_threads(|t| {
        let service = service.clone();
        async move {
            let mut answered = 0;
            for i in 0..100u32 {
                let mut mine = service.clone();
                mine.ready().await.unwrap();
                if (t + i) % 5 == 0 {
                    continue; // dropped ready: its slot must come back
                }
                assert_eq!(mine.call(i).await.unwrap(), i);
                answered += 1;
            }
            answered
        }
    });
    assert_eq!(answered, 640);
    assert!(most.load(Ordering::SeqCst) <= MAX);
    assert_eq!(rejected(&events), 0);
    assert_eq!(slots(&registry, "pool"), (0, 0), "no slot leaked");
    assert_eq!(count(&events, |e| matches!(e, BulkheadEvent::Permitted { .. })), 800, "one slot per ready service");
    assert_eq!(count(&events, |e| matches!(e, BulkheadEvent::Finished { .. })), 800, "and each came back");
}

#[test]
fn a_service_under_backpressure_stays_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let (_, registry) = testkit::manual();
    let pipeline = Pipeline::builder(&registry, "both")
        .rate_limiter_with(|l| l.permits(1))
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .build::<u32, Error>()
        .unwrap();
    send_sync(&pipeline.layer().backpressure().layer(echo()));
}

/// `Registry::shutdown` ends the waits: a service waiting for a permit gets `RateLimitExceeded` as
/// its readiness error and gives the permit back; one waiting for a slot is refused on its next
/// poll; nothing is left reserved.
#[tokio::test]
async fn shutdown_ends_the_waits_with_refusals_and_leaves_nothing_reserved() {
    let (clock, registry) = testkit::manual();
    let limited = limited(&registry, "api", 1, ms(100));
    let pooled = bulkhead(&registry, "pool", 1).layer().backpressure().layer(echo());
    let (mut holder, mut slot_waiter) = (pooled.clone(), pooled.clone());
    holder.ready().await.unwrap();
    assert!(pending(&mut slot_waiter).await);
    let mut first = limited.clone();
    first.ready().await.unwrap();
    let mut permit_waiter = limited.clone();
    assert!(pending(&mut permit_waiter).await);

    registry.shutdown();
    let Err(refused) = permit_waiter.ready().await.map(drop) else { panic!("ready after shutdown") };
    assert!(matches!(refused.rejection(), Some(Rejection::RateLimitExceeded { .. })));
    let Err(refused) = slot_waiter.ready().await.map(drop) else { panic!("ready after shutdown") };
    assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { .. })));
    assert_eq!(slots(&registry, "pool"), (1, 0), "only the holder's slot");
    drop((holder, first, permit_waiter));
    assert_eq!(slots(&registry, "pool"), (0, 0));
    assert_eq!(registry.rate_limiter("api").unwrap().snapshot().available_permits, 1, "both permits back");
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

/// tower's contract is `poll_ready` then `call`; a `call` without it is not a panic here: its first
/// attempt asks the bulkhead itself, as without the opt-in (and is refused when it is full).
#[tokio::test]
async fn a_call_without_readiness_asks_the_policies_itself() {
    let (_, registry) = testkit::manual();
    let service = bulkhead(&registry, "pool", 1).layer().backpressure().layer(echo());
    let mut unready = service.clone();
    assert_eq!(unready.call(1).await.unwrap(), 1);
    let mut holder = service.clone();
    holder.ready().await.unwrap();
    let Err(refused) = unready.call(2).await else { panic!("the only slot is reserved by `holder`") };
    assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { .. })));
    assert_eq!(holder.call(3).await.unwrap(), 3);
    assert_eq!(slots(&registry, "pool"), (0, 0));
}

/// `rate_limiter(permits = 10, period = "100ms")` under backpressure, 100 calls from 8 tasks on
/// two threads: none is refused, and the last permit is due at exactly 900 ms (10 at once, then
/// one every 10 ms), so no permit was skipped or taken twice.
#[test]
fn rate_limited_calls_add_up_under_concurrency() {
    let clock = ManualClock::new();
    let events = Recorder::<RateLimiterEvent>::default();
    let registry = events.on(testing::registry(&clock)).build().unwrap();
    let service = limited(&registry, "api", 10, ms(100));
    let answered = on_two_threads(|t| {
        let service = service.clone();
        async move {
            let mut answered = 0;
            for i in 0..(if t < 4 { 13 } else { 12 }) {
                assert_eq!(service.clone().oneshot(i).await.unwrap(), i);
                answered += 1;
            }
            answered
        }
    });
    assert_eq!(answered, 100);
    assert_eq!(clock.elapsed(), ms(900));
    let permitted = count(&events, |e| matches!(e, RateLimiterEvent::Permitted { .. }));
    assert_eq!((permitted, events.len()), (100, 100), "a permit per call and no refusal");
}

/// A hedged pipeline gives the reservation back as the call starts and its attempts take their own
/// slots: the call answers and nothing stays reserved.
#[tokio::test]
async fn a_hedged_call_gives_its_reservation_back_and_leaks_nothing() {
    let (_, registry) = testkit::manual();
    let service = Pipeline::builder(&registry, "search")
        .hedge_with(|h| h.delay(ms(100)))
        .bulkhead_with(|b| b.max_concurrent_calls(2))
        .build::<u32, Error>()
        .unwrap()
        .layer()
        .backpressure()
        .layer(echo());
    let mut ready = service.clone();
    ready.ready().await.unwrap();
    assert_eq!(slots(&registry, "search"), (1, 0), "reserved");
    assert_eq!(ready.call(7).await.unwrap(), 7);
    assert_eq!(slots(&registry, "search"), (0, 0));
}
