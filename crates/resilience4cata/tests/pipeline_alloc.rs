//! Allocation counts of a pipeline's call paths, on the calling thread only: a successful call
//! allocates nothing, and neither does a retry with a zero wait or a budget refusal when nobody
//! listens (sync, async and, with feature `tower`, through the layer).
//!
//! The counting allocator is the workspace's one (`testkit::alloc::Counting`), installed here.

#[cfg(feature = "tower")]
use std::task::{Context, Waker};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Policy, Registry};
use testkit::alloc::allocations_during as allocations;
use testkit::now;

testkit::count_allocations!();

fn registry(clock: &ManualClock) -> Registry {
    testing::registry(clock).retry_defaults(|r| r.delay(Duration::ZERO)).build().unwrap()
}

fn pipeline(registry: &Registry, id: &str) -> Pipeline<u64, std::io::Error> {
    Pipeline::builder(registry, id).retry().build().unwrap()
}

#[test]
fn the_counter_sees_this_threads_allocations() {
    assert_eq!(allocations(|| drop(std::hint::black_box(Box::new(1u8)))), 1);
}

#[test]
fn a_successful_call_allocates_nothing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = pipeline(&registry, "ok");
    pipeline.execute(|| Ok(1)).unwrap();
    assert_eq!(
        allocations(|| {
            for i in 0..1000 {
                assert_eq!(pipeline.execute(|| Ok(i)).unwrap(), i);
            }
        }),
        0
    );
    assert_eq!(
        allocations(|| {
            for i in 0..1000 {
                assert_eq!(now(pipeline.execute_async(|| async move { Ok(i) })).unwrap(), i);
            }
        }),
        0
    );
}

/// A sync fallback with `fallback_skip_on`: answering an error and passing one through allocate
/// nothing when nobody listens (the errors here are `io::Error`s of a kind, which hold no box).
#[test]
fn a_fallback_and_its_rules_allocate_nothing() {
    use std::io::{Error, ErrorKind};
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "fallback")
        .build::<u64, Error>()
        .unwrap()
        .fallback(|_| Ok(7))
        .fallback_skip_on(|e| e.kind() == ErrorKind::NotFound);
    let rounds = || {
        for _ in 0..1000 {
            assert_eq!(pipeline.execute(|| Err(ErrorKind::TimedOut.into())).unwrap(), 7);
            assert_eq!(pipeline.execute(|| Err(ErrorKind::NotFound.into())).unwrap_err().kind(), ErrorKind::NotFound);
            assert_eq!(now(pipeline.execute_async(|| async { Err(Error::from(ErrorKind::TimedOut)) })).unwrap(), 7);
        }
    };
    rounds();
    assert_eq!(allocations(rounds), 0);
}

#[test]
fn a_zero_wait_retry_without_listeners_allocates_nothing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = pipeline(&registry, "once");
    let fail_once = || {
        let mut first = true;
        move || if std::mem::take(&mut first) { Err(std::io::ErrorKind::Other.into()) } else { Ok(2) }
    };
    pipeline.execute(fail_once()).unwrap();
    assert_eq!(allocations(|| assert_eq!(pipeline.execute(fail_once()).unwrap(), 2)), 0);
    let mut first = true;
    let async_once = allocations(|| {
        let result = now(pipeline.execute_async(|| {
            let fail = std::mem::take(&mut first);
            async move { if fail { Err(std::io::ErrorKind::Other.into()) } else { Ok(3) } }
        }));
        assert_eq!(result.unwrap(), 3);
    });
    assert_eq!(async_once, 0);
}

#[test]
fn a_budget_refusal_allocates_nothing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline: Pipeline<u64, std::io::Error> = Pipeline::builder(&registry, "budget")
        .retry_with(|r| r.budget_percent(1.0).budget_min_retries_per_second(0))
        .build()
        .unwrap();
    let _ = pipeline.execute(|| Err(std::io::ErrorKind::Other.into()));
    let error = std::io::Error::from(std::io::ErrorKind::Other);
    let mut calls = 0;
    let refused = allocations(|| {
        let _ = pipeline.execute(|| {
            calls += 1;
            Err(std::io::Error::from(error.kind()))
        });
    });
    assert_eq!(calls, 1, "the budget refused the retry");
    assert_eq!(refused, 0);
}

/// Retry, circuit breaker, rate limiter and bulkhead: a successful call through all four
/// allocates nothing.
#[test]
fn a_successful_call_through_the_inner_policies_allocates_nothing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = guarded(&registry, "guarded", &[]);
    assert_eq!(blocking_and_async_allocations(&pipeline), (0, 0));
}

/// Retry, breaker, rate limiter and bulkhead, nested as `order` says (`&[]`: the default order).
fn guarded(registry: &Registry, id: &str, order: &[Policy]) -> Pipeline<u64, std::io::Error> {
    Pipeline::builder(registry, id)
        .retry()
        .circuit_breaker()
        .rate_limiter_with(|l| l.permits(1_000_000))
        .bulkhead()
        .order(order.iter().copied())
        .build()
        .unwrap()
}

/// The allocations of 1000 successful blocking calls and of 1000 async ones, after a warm-up.
fn blocking_and_async_allocations(pipeline: &Pipeline<u64, std::io::Error>) -> (u64, u64) {
    pipeline.execute(|| Ok(1)).unwrap();
    now(pipeline.execute_async(|| async { Ok(1) })).unwrap();
    let sync = allocations(|| {
        for i in 0..1000 {
            assert_eq!(pipeline.execute(|| Ok(i)).unwrap(), i);
        }
    });
    let asynchronous = allocations(|| {
        for i in 0..1000 {
            assert_eq!(now(pipeline.execute_async(|| async move { Ok(i) })).unwrap(), i);
        }
    });
    (sync, asynchronous)
}

/// A reordered pipeline (`.order`, docs/policy-order.md): blocking calls allocate nothing; an
/// async call boxes each depth of its chain but the innermost call, 3 boxes for 4 policies.
#[test]
fn a_reordered_pipeline_allocates_nothing_blocking_and_one_box_per_inner_depth_async() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = guarded(&registry, "reordered", &[Policy::Bulkhead, Policy::RateLimiter]);
    assert_eq!(blocking_and_async_allocations(&pipeline), (0, 3 * 1000));
}

#[cfg(feature = "tower")]
#[test]
fn the_tower_layer_allocates_nothing_on_success_or_a_zero_wait_retry() {
    use tower::{Layer, Service};

    let clock = ManualClock::new();
    let registry = registry(&clock);
    let mut calls = 0u32;
    let inner = tower::service_fn(move |n: u64| {
        calls += 1;
        let fail = calls % 2 == 1 && n == 0;
        async move { if fail { Err(std::io::Error::from(std::io::ErrorKind::Other)) } else { Ok(n) } }
    });
    let mut service = pipeline(&registry, "tower").layer().layer(inner);
    let mut cx = Context::from_waker(Waker::noop());
    let mut call = |n: u64| {
        assert!(service.poll_ready(&mut cx).is_ready());
        now(service.call(n)).unwrap()
    };
    call(1);
    assert_eq!(allocations(|| assert_eq!(call(5), 5)), 0, "success");
    assert_eq!(allocations(|| assert_eq!(call(0), 0)), 0, "fails once, zero wait, succeeds");
}

#[cfg(feature = "tower")]
#[test]
fn the_tower_layer_with_a_breaker_allocates_nothing_on_success() {
    use tower::{Layer, Service};

    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline: Pipeline<u64, std::io::Error> =
        Pipeline::builder(&registry, "tower-breaker").retry().circuit_breaker().build().unwrap();
    let inner = tower::service_fn(|n: u64| async move { Ok::<_, std::io::Error>(n) });
    let mut service = pipeline.layer().layer(inner);
    let mut cx = Context::from_waker(Waker::noop());
    let mut call = |n: u64| {
        assert!(service.poll_ready(&mut cx).is_ready());
        now(service.call(n)).unwrap()
    };
    call(1);
    assert_eq!(allocations(|| assert_eq!(call(5), 5)), 0);
    let snapshot = registry.circuit_breaker("tower-breaker").unwrap().snapshot();
    assert_eq!(snapshot.buffered_calls, 2, "both calls were recorded");
}

/// Backpressure adds no allocation: the reservation in `poll_ready` is a compare-and-set and a
/// reference count per policy, and a call through a rate limiter and a bulkhead costs the one
/// boxed attempt it costs without the opt-in.
#[cfg(feature = "tower")]
#[test]
fn tower_backpressure_adds_no_allocation_on_the_pass_path() {
    use tower::{Layer, Service};

    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline: Pipeline<u64, std::io::Error> = Pipeline::builder(&registry, "tower-limits")
        .retry()
        .rate_limiter_with(|l| l.permits(1_000_000))
        .bulkhead_with(|b| b.max_concurrent_calls(4))
        .build()
        .unwrap();
    let inner = tower::service_fn(|n: u64| async move { Ok::<_, std::io::Error>(n) });
    let mut cx = Context::from_waker(Waker::noop());
    let mut per_call = |mut service: tower::util::BoxCloneSyncService<u64, u64, std::io::Error>| {
        let mut call = |n: u64| {
            assert!(service.poll_ready(&mut cx).is_ready());
            now(service.call(n)).unwrap()
        };
        call(1);
        allocations(|| assert_eq!(call(5), 5))
    };
    let default = per_call(tower::util::BoxCloneSyncService::new(pipeline.layer().layer(inner)));
    let backpressure = per_call(tower::util::BoxCloneSyncService::new(pipeline.layer().backpressure().layer(inner)));
    assert_eq!(backpressure, default);
    assert_eq!(default, 2, "the boxed attempt and the boxed service future");
    assert_eq!(registry.bulkhead("tower-limits").unwrap().snapshot().in_flight, 0);
}
