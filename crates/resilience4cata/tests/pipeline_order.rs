//! The pipeline's `.order([Policy::…])` (SPEC §6): the same timelines as `#[policy_order]`
//! (`policy_order_custom.rs`), on the manual clock, and its `R4C-REG-001` checks.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::pipeline::Rejecting;
use resilience4cata::{AsyncPipeline, Pipeline, PipelineBuilder, Policy, Registry, Rejection};

mod order_fixture;

use order_fixture::ApiError;

const SECOND: Duration = Duration::from_secs(1);

/// The registry on the manual clock, and, for each `Retrying` event (published as the backoff
/// starts), the `(in_flight, available)` of the bulkhead of the retried pipeline at that moment.
use order_fixture::watching_backoffs as setup;

/// An attempt that fails after 1 s of manual time: a call that never answers under a 1 s timeout.
fn one_second(registry: &Registry) -> AsyncPipeline<(), ApiError> {
    Pipeline::builder(registry, "one-second").timeout_with(|t| t.duration(SECOND)).build().unwrap()
}

async fn failing_after_one_second(slow: &AsyncPipeline<(), ApiError>, attempts: &AtomicU32) -> Result<(), ApiError> {
    attempts.fetch_add(1, Ordering::SeqCst);
    let timed_out = slow.execute_async(std::future::pending).await;
    assert!(matches!(timed_out, Err(ApiError::Rejected(Rejection::CallTimeout { .. }))));
    Err(ApiError::Down)
}

fn require_send<T: Send>(_: &T) {}

fn timed_out(registry: &Registry, id: &str) -> u64 {
    registry.snapshot().timeouts().iter().find(|t| &*t.instance == id).unwrap().timed_out
}

/// Three attempts with no wait between them under a 2.5 s timeout, nested as `order` says.
fn retry_and_timeout(registry: &Registry, id: &str, order: [Policy; 2]) -> AsyncPipeline<(), ApiError> {
    Pipeline::builder(registry, id)
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .timeout_with(|t| t.duration(Duration::from_millis(2500)))
        .order(order)
        .build()
        .unwrap()
}

#[tokio::test]
async fn timeout_outside_retry_bounds_the_whole_call_at_2_5_s_after_three_started_attempts() {
    let (clock, registry, _) = setup();
    let slow = one_second(&registry);
    let whole = retry_and_timeout(&registry, "whole", [Policy::Timeout, Policy::Retry]);
    let attempts = AtomicU32::new(0);
    let call = whole.execute_async(|| failing_after_one_second(&slow, &attempts));
    require_send(&call); // a reordered pipeline's future is `Send` when the caller's futures are
    let outcome = call.await;
    match outcome {
        Err(ApiError::Rejected(Rejection::CallTimeout { instance, timeout })) => {
            assert_eq!(&*instance, "whole");
            assert_eq!(timeout, Duration::from_millis(2500));
        }
        other => panic!("expected one CallTimeout, got {other:?}"),
    }
    assert_eq!(clock.elapsed(), Duration::from_millis(2500));
    assert_eq!(attempts.load(Ordering::SeqCst), 3, "three attempts started");
    assert_eq!(timed_out(&registry, "whole"), 1);
}

#[tokio::test]
async fn the_default_order_gives_three_full_attempts() {
    let (clock, registry, _) = setup();
    let slow = one_second(&registry);
    // Listing the default order is the default order.
    let each = retry_and_timeout(&registry, "each", [Policy::Retry, Policy::Timeout]);
    let attempts = AtomicU32::new(0);
    assert_eq!(each.execute_async(|| failing_after_one_second(&slow, &attempts)).await, Err(ApiError::Down));
    assert_eq!(clock.elapsed(), 3 * SECOND);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(timed_out(&registry, "each"), 0);
}

/// Pipeline `id`: two attempts a second apart, the policy `limit` adds, nested in `order`.
fn limited_retry<'r>(
    registry: &'r Registry,
    id: &str,
    order: &[Policy],
    limit: impl FnOnce(PipelineBuilder<'r>) -> PipelineBuilder<'r, Rejecting>,
) -> Pipeline<(), ApiError> {
    limit(Pipeline::builder(registry, id).retry_with(|r| r.max_attempts(2).delay(SECOND)))
        .order(order.iter().copied())
        .build()
        .unwrap()
}

fn bulkhead_and_retry(registry: &Registry, id: &str, order: &[Policy]) -> Pipeline<(), ApiError> {
    limited_retry(registry, id, order, |p| p.bulkhead_with(|b| b.max_concurrent_calls(1)))
}

#[test]
fn bulkhead_outside_retry_holds_the_slot_across_the_backoff() {
    let (clock, registry, during_backoff) = setup();
    let held = bulkhead_and_retry(&registry, "held", &[Policy::Bulkhead, Policy::Retry]);
    let mut calls = 0;
    assert_eq!(
        held.execute(|| {
            calls += 1;
            Err(ApiError::Down)
        }),
        Err(ApiError::Down)
    );
    assert_eq!((calls, clock.elapsed()), (2, SECOND));
    assert_eq!(*during_backoff.lock().unwrap(), [(1, 0)], "in flight, no slot free, while waiting");
    let after = registry.bulkhead("held").unwrap().snapshot();
    assert_eq!((after.in_flight, after.available), (0, 1));
}

#[tokio::test]
async fn bulkhead_outside_retry_holds_the_slot_across_an_async_backoff() {
    let (clock, registry, during_backoff) = setup();
    let held = bulkhead_and_retry(&registry, "held-async", &[Policy::Bulkhead]);
    assert_eq!(held.execute_async(|| async { Err(ApiError::Down) }).await, Err(ApiError::Down));
    assert_eq!(clock.elapsed(), SECOND);
    assert_eq!(*during_backoff.lock().unwrap(), [(1, 0)]);
}

#[test]
fn the_default_order_gives_the_slot_back_before_the_backoff() {
    let (clock, registry, during_backoff) = setup();
    let released = bulkhead_and_retry(&registry, "released", &[]);
    assert_eq!(released.execute(|| Err(ApiError::Down)), Err(ApiError::Down));
    assert_eq!(clock.elapsed(), SECOND);
    assert_eq!(*during_backoff.lock().unwrap(), [(0, 1)]);
}

fn adaptive_limit_and_retry(registry: &Registry, id: &str, order: &[Policy]) -> Pipeline<(), ApiError> {
    limited_retry(registry, id, order, |p| p.adaptive_limit_with(|a| a.initial_limit(10)))
}

fn in_flight_and_limit(registry: &Registry, id: &str) -> (u32, u32) {
    let s = registry.adaptive_limit(id).unwrap().snapshot();
    (s.in_flight, s.limit)
}

#[test]
fn adaptive_limit_outside_retry_holds_its_slot_across_the_backoff_and_samples_the_call_once() {
    let (clock, registry, during_backoff) = setup();
    let once = adaptive_limit_and_retry(&registry, "limited-once", &[Policy::AdaptiveLimit, Policy::Retry]);
    let mut calls = 0;
    let failing = || {
        calls += 1;
        Err(ApiError::Down)
    };
    assert_eq!(once.execute(failing), Err(ApiError::Down));
    assert_eq!((calls, clock.elapsed()), (2, SECOND));
    assert_eq!(*during_backoff.lock().unwrap(), [(1, 10)], "in flight, not yet sampled, while waiting");
    assert_eq!(in_flight_and_limit(&registry, "limited-once"), (0, 9), "one dropped sample: 10 × 0.9");
}

#[tokio::test]
async fn adaptive_limit_in_its_default_place_samples_every_async_attempt() {
    let (clock, registry, during_backoff) = setup();
    let each = adaptive_limit_and_retry(&registry, "limited-each", &[Policy::Retry, Policy::AdaptiveLimit]);
    assert_eq!(each.execute_async(|| async { Err(ApiError::Down) }).await, Err(ApiError::Down));
    assert_eq!(clock.elapsed(), SECOND);
    assert_eq!(*during_backoff.lock().unwrap(), [(0, 9)], "the first attempt sampled before the wait");
    assert_eq!(in_flight_and_limit(&registry, "limited-each"), (0, 8), "two dropped samples: ⌊9 × 0.9⌋");

    // Reordered, the async chain holds the slot across the backoff as the blocking one does.
    let once = adaptive_limit_and_retry(&registry, "limited-once-async", &[Policy::AdaptiveLimit]);
    assert_eq!(once.execute_async(|| async { Err(ApiError::Down) }).await, Err(ApiError::Down));
    assert_eq!(during_backoff.lock().unwrap()[1], (1, 10));
    assert_eq!(in_flight_and_limit(&registry, "limited-once-async"), (0, 9));
}

#[test]
fn a_breaker_outside_the_retry_records_the_retried_call_once() {
    let (_, registry, _) = setup();
    let outside = Pipeline::builder(&registry, "outside")
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .circuit_breaker_with(|c| c.window_size(10).minimum_calls(10))
        .rate_limiter_with(|l| l.permits(100))
        .order([Policy::CircuitBreaker, Policy::Hedge, Policy::Retry])
        .build::<(), ApiError>()
        .unwrap();
    let mut calls = 0;
    let _ = outside.execute(|| {
        calls += 1;
        Err(ApiError::Down)
    });
    assert_eq!(calls, 3);
    assert_eq!(registry.circuit_breaker("outside").unwrap().snapshot().failed_calls, 1, "one call, one record");
    // The unlisted limiter keeps its place relative to the retry: inside it, one permit per attempt.
    assert_eq!(registry.rate_limiter("outside").unwrap().snapshot().available_permits, 97);
}

#[test]
fn a_policy_twice_or_fallback_not_first_is_reg_001() {
    let (_, registry, _) = setup();
    let twice = Pipeline::builder(&registry, "twice").retry().order([Policy::Retry, Policy::Timeout, Policy::Retry]);
    let err = twice.build::<(), ApiError>().unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-001", Some("twice")));
    assert!(err.message().contains("`Policy::Retry` listed twice"), "{err}");

    let late = Pipeline::builder(&registry, "late").retry().order([Policy::Retry, Policy::Fallback]);
    let err = late.build::<(), ApiError>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-001");
    assert!(err.message().contains("outermost"), "{err}");

    let first = Pipeline::builder(&registry, "first").retry().order([Policy::Fallback, Policy::Retry]);
    assert!(first.build::<(), ApiError>().is_ok(), "Fallback first is fine (and ignored without a fallback)");
}

#[tokio::test]
async fn a_pipelines_fallback_stays_outermost_around_a_reordered_chain() {
    let (clock, registry, _) = setup();
    let slow = one_second(&registry);
    let attempts = AtomicU32::new(0);
    type Seen = Arc<Mutex<Option<(u32, Option<Rejection>)>>>;
    let seen: Seen = Arc::default();
    let seen_in = Arc::clone(&seen);
    let rescued = Pipeline::builder(&registry, "rescued")
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .timeout_with(|t| t.duration(Duration::from_millis(2500)))
        .order([Policy::Fallback, Policy::Timeout, Policy::Retry])
        .build::<(), ApiError>()
        .unwrap()
        .fallback(move |ctx| {
            *seen_in.lock().unwrap() = Some((ctx.attempts(), ctx.rejection().cloned()));
            Ok(())
        });
    assert_eq!(rescued.execute_async(|| failing_after_one_second(&slow, &attempts)).await, Ok(()));
    assert_eq!(clock.elapsed(), Duration::from_millis(2500));
    let (counted, rejection) = seen.lock().unwrap().take().unwrap();
    assert_eq!(counted, 3);
    assert!(matches!(rejection, Some(Rejection::CallTimeout { .. })), "{rejection:?}");
}

#[test]
fn a_hedge_stays_outermost_in_a_pipeline() {
    let (_, registry, _) = setup();
    let moved = Pipeline::builder(&registry, "hedged").hedge().timeout().order([Policy::Timeout, Policy::Hedge]);
    let err = moved.build::<(), ApiError>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-001");
    assert!(err.message().contains("list `Policy::Hedge` first"), "{err}");
    // Unlisted, the hedge would sit inside the listed limiter: moved too.
    let inside = Pipeline::builder(&registry, "hedged").hedge().rate_limiter().order([Policy::RateLimiter]);
    assert_eq!(inside.build::<(), ApiError>().unwrap_err().code(), "R4C-REG-001");
}

/// Inside a hedge, the policies of each attempt follow the order: a limiter listed outside the
/// breaker gives a permit to an attempt the open breaker then refuses.
#[tokio::test]
async fn a_hedged_pipeline_reorders_the_policies_inside_its_attempts() {
    let (_, registry, _) = setup();
    for (id, order, permits_left) in
        [("hedged-default", &[][..], 100), ("hedged-limiter-first", &[Policy::Hedge, Policy::RateLimiter][..], 99)]
    {
        let hedged = Pipeline::builder(&registry, id)
            .hedge()
            .circuit_breaker()
            .rate_limiter_with(|l| l.permits(100))
            .order(order.iter().copied())
            .build::<(), ApiError>()
            .unwrap();
        registry.circuit_breaker(id).unwrap().force_open();
        let refused = hedged.execute_async(|| async { Ok(()) }).await;
        assert!(matches!(refused, Err(ApiError::Rejected(Rejection::CallNotPermitted { .. }))), "{refused:?}");
        assert_eq!(registry.rate_limiter(id).unwrap().snapshot().available_permits, permits_left, "{id}");
    }
}

/// The tower layer of a reordered pipeline under backpressure: the slot reserved in `poll_ready`
/// goes to the first attempt wherever the bulkhead is ordered, and comes back when a breaker
/// ordered inside it refuses the call.
#[cfg(feature = "tower")]
#[tokio::test]
async fn a_reordered_tower_layer_uses_its_reserved_slot_and_gives_it_back_on_a_refusal() {
    use tower::{Layer, Service, ServiceExt, service_fn};

    let (_, registry, _) = setup();
    let failures = Arc::new(AtomicU32::new(1));
    let flaky = service_fn(move |n: u32| {
        let fail = failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |f| f.checked_sub(1)).is_ok();
        async move { if fail { Err(ApiError::Down) } else { Ok(n) } }
    });
    let pipeline = Pipeline::builder(&registry, "reserved")
        .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
        .circuit_breaker()
        .bulkhead_with(|b| b.max_concurrent_calls(1))
        .order([Policy::Bulkhead, Policy::CircuitBreaker])
        .build::<u32, ApiError>()
        .unwrap();
    let service = pipeline.layer().backpressure().layer(flaky);
    let slots = || {
        let s = registry.bulkhead("reserved").unwrap().snapshot();
        (s.in_flight, s.available)
    };
    // With one slot, an attempt that asked the bulkhead again beside its reservation would be
    // refused: the first attempt used the reserved slot, the retry took its own.
    assert_eq!(service.clone().oneshot(5).await, Ok(5));
    assert_eq!(slots(), (0, 1));

    registry.circuit_breaker("reserved").unwrap().force_open();
    let mut ready = service.clone();
    ready.ready().await.unwrap();
    assert_eq!(slots(), (1, 0), "reserved by poll_ready");
    let refused = ready.call(6).await.unwrap_err();
    assert!(matches!(refused, ApiError::Rejected(Rejection::CallNotPermitted { .. })), "{refused:?}");
    assert_eq!(slots(), (0, 1), "the refused call's slot came back");
}
