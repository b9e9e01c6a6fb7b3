//! The programmatic pipeline beside the generated code and the crates a tower user would pick
//! instead, in one run. Every case calls the same `#[inline(never)]` operation once per iteration,
//! and every async case completes on its first poll (`bench::exec::poll_now`, inside the entered
//! current-thread runtime), so the rows differ only by the policy code around the call. Timed with
//! criterion's own `iter` (wall clock), not the case table's CPU-time loop.
//!
//! Groups:
//! - `pipeline_retry_success`: a retry (3 attempts) whose first attempt succeeds: a direct call, the
//!   `#[resilient]` wrapper, `Pipeline::execute`, and their async forms;
//! - `pipeline_retry_breaker_success`: retry + a closed circuit breaker, wrapper vs pipeline;
//! - `pipeline_tower_retry_success`: a retry layer around a `tower::service_fn`: ours
//!   (`pipeline.layer()`), tower-resilience's `RetryLayer`, and seatbelt's retry layer (over
//!   `layered::Execute`, seatbelt's own service form);
//! - `pipeline_tower_limits_success`: a rate limiter (never empty) and a bulkhead (never full)
//!   around a `tower::service_fn`, `poll_ready` then `call`: ours refusing
//!   (`pipeline.layer()`) and with backpressure (`.backpressure()`), and tower's own
//!   `RateLimit` + `ConcurrencyLimit`.

use std::future::{Ready, ready};
use std::time::Duration;

use bench::exec::{call_tower, enter, poll_now};
use bench::{consume, opaque};
use criterion::{Criterion, criterion_group, criterion_main};
use layered::{Execute, Service as _, Stack};
use resilience4cata::{Pipeline, Registry, Rejection, ResilienceError, resilient};
use seatbelt::retry::Retry as SeatbeltRetry;
use seatbelt::{RecoveryInfo, ResilienceContext};
use tower::Layer;

/// The error of the protected operation; it can carry a rejection (the tower layer needs that).
#[derive(Debug, Clone, PartialEq, ResilienceError)]
pub enum Fail {
    Failed,
    #[rejection]
    Rejected(Rejection),
}

/// The protected operation: one real call that succeeds (as `bench::work`, with an error type
/// that can carry a rejection).
#[inline(never)]
fn work(x: u64) -> Result<u64, Fail> {
    Ok(x.wrapping_add(1))
}

#[resilient]
pub trait Api {
    #[retry(max_attempts = 3)]
    fn get(&self, x: u64) -> Result<u64, Fail>;

    #[retry(max_attempts = 3)]
    async fn get_async(&self, x: u64) -> Result<u64, Fail>;

    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    fn guarded(&self, x: u64) -> Result<u64, Fail>;
}

struct Backend;

impl Api for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for get guarded }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for get_async }
}

fn registry() -> Registry {
    Registry::builder().build().expect("a registry")
}

fn retry_pipeline(registry: &Registry, id: &str) -> Pipeline<u64, Fail> {
    Pipeline::builder(registry, id).retry_with(|r| r.max_attempts(3)).build().expect("a pipeline")
}

fn retry_success(c: &mut Criterion) {
    let _entered = enter();
    let registry = registry();
    let wrapper = ResilientApi::new(Backend, &registry).expect("a wrapper");
    let pipeline = retry_pipeline(&registry, "bench::pipeline");
    let mut group = c.benchmark_group("pipeline_retry_success");
    group.bench_function("direct_call", |b| b.iter(|| consume(work(opaque(1)))));
    group.bench_function("generated_sync", |b| b.iter(|| consume(wrapper.get(opaque(1)))));
    group.bench_function("pipeline_execute", |b| b.iter(|| consume(pipeline.execute(|| work(opaque(1))))));
    group.bench_function("generated_async", |b| b.iter(|| consume(poll_now(wrapper.get_async(opaque(1))))));
    group.bench_function("pipeline_execute_async", |b| {
        b.iter(|| consume(poll_now(pipeline.execute_async(|| ready(work(opaque(1)))))))
    });
    group.finish();
}

fn retry_breaker_success(c: &mut Criterion) {
    let registry = registry();
    let wrapper = ResilientApi::new(Backend, &registry).expect("a wrapper");
    let pipeline: Pipeline<u64, Fail> = Pipeline::builder(&registry, "bench::guarded")
        .retry_with(|r| r.max_attempts(3))
        .circuit_breaker()
        .build()
        .expect("a pipeline");
    let mut group = c.benchmark_group("pipeline_retry_breaker_success");
    group.bench_function("generated_sync", |b| b.iter(|| consume(wrapper.guarded(opaque(1)))));
    group.bench_function("pipeline_execute", |b| b.iter(|| consume(pipeline.execute(|| work(opaque(1))))));
    group.finish();
}

type Inner = tower::util::ServiceFn<fn(u64) -> Ready<Result<u64, Fail>>>;

fn inner() -> Inner {
    tower::service_fn(|x: u64| ready(work(x)))
}

fn tower_retry_success(c: &mut Criterion) {
    let _entered = enter();
    let registry = registry();
    let mut ours = retry_pipeline(&registry, "bench::tower").layer().layer(inner());
    let mut tower_resilience = tower_resilience::retry::RetryLayer::<u64, u64, Fail>::builder()
        .max_attempts(3)
        .fixed_backoff(Duration::ZERO)
        .build()
        .layer(inner());
    let clock = tick::Clock::new_tokio();
    let context: ResilienceContext<u64, Result<u64, Fail>> = ResilienceContext::new(&clock).name("bench");
    let seatbelt = (
        SeatbeltRetry::layer("retry", &context).clone_input().max_retry_attempts(2).recovery_with(
            |out: &Result<u64, Fail>, _| {
                if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
            },
        ),
        Execute::new(|x: u64| async move { work(x) }),
    )
        .into_service();
    let mut group = c.benchmark_group("pipeline_tower_retry_success");
    group.bench_function("direct_service", |b| {
        let mut service = inner();
        b.iter(|| consume(call_tower(&mut service, opaque(1))))
    });
    group.bench_function("resilience4cata_layer", |b| b.iter(|| consume(call_tower(&mut ours, opaque(1)))));
    group
        .bench_function("tower_resilience_layer", |b| b.iter(|| consume(call_tower(&mut tower_resilience, opaque(1)))));
    group.bench_function("seatbelt_layer", |b| b.iter(|| consume(poll_now(seatbelt.execute(opaque(1))))));
    group.finish();
}

fn tower_limits_success(c: &mut Criterion) {
    let _entered = enter();
    let registry = registry();
    let limits = |id: &str| {
        Pipeline::builder(&registry, id)
            .rate_limiter_with(|l| l.permits(u32::MAX).period(Duration::from_secs(1)))
            .bulkhead_with(|b| b.max_concurrent_calls(25))
            .build::<u64, Fail>()
            .expect("a pipeline")
    };
    let mut refusing = limits("bench::tower-limits").layer().layer(inner());
    let mut backpressure = limits("bench::tower-backpressure").layer().backpressure().layer(inner());
    let mut tower_limits = tower::ServiceBuilder::new()
        .rate_limit(u64::MAX, Duration::from_secs(1))
        .concurrency_limit(25)
        .service(inner());
    let mut group = c.benchmark_group("pipeline_tower_limits_success");
    group.bench_function("resilience4cata_refusing", |b| b.iter(|| consume(call_tower(&mut refusing, opaque(1)))));
    group.bench_function("resilience4cata_backpressure", |b| {
        b.iter(|| consume(call_tower(&mut backpressure, opaque(1))))
    });
    group.bench_function("tower_rate_concurrency_limit", |b| {
        b.iter(|| consume(call_tower(&mut tower_limits, opaque(1))))
    });
    group.finish();
}

criterion_group!(benches, retry_success, retry_breaker_success, tower_retry_success, tower_limits_success);
criterion_main!(benches);
