//! The anchors in the user's shape: each crate's documented way to protect [`op`] (or
//! [`op_async`]), configured as ours is, its result used the same way. Tower services are called
//! as a user calls them: `service.ready().await?.call(x).await`.
//!
//! Waits that should be zero are ready futures where the crate lets the user choose the sleeper
//! (backon, tower's retry policy): tokio's `sleep(Duration::ZERO)` registers a timer and rounds up to
//! the next millisecond tick, so the row would measure a millisecond rather than the crate.

use std::future::ready;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use failsafe::CircuitBreaker as _;
use layered::{Execute, Service as _, Stack};
use recloser::{AsyncRecloser, Recloser};
use seatbelt::{RecoveryInfo, ResilienceContext};
use tokio::sync::Semaphore;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

use super::{MyError, input, observe, op, op_async, op_flaky};
use crate::cases::retry::Attempts;

const LIMIT: Duration = Duration::from_secs(1);
const ROOM: usize = 1024;

/// A tower service called as its documentation shows: wait for readiness, then call.
async fn call_tower<S: Service<u32, Response = u32>>(service: &mut S, x: u32) -> Result<u32, S::Error> {
    service.ready().await?.call(x).await
}

/// A tower service's row: each call waits for readiness, calls, awaits and observes.
fn tower_row<S: Service<u32, Response = u32>>(mut service: S) -> impl AsyncFnMut() {
    async move || observe(call_tower(&mut service, input()).await)
}

/// A seatbelt (`layered`) service's row.
fn seatbelt_row<S: layered::Service<u32, Out = Result<u32, MyError>>>(service: S) -> impl AsyncFnMut() {
    async move || observe(service.execute(input()).await)
}

/// The floor: [`op`] called directly.
pub fn direct_sync() -> impl FnMut() {
    || observe(op(input()))
}

/// The floor: [`op_async`] awaited directly.
pub fn direct_async() -> impl AsyncFnMut() {
    async || observe(op_async(input()).await)
}

fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

// ---- retry ----

/// backon, blocking, exponential defaults.
pub fn backon_sync() -> impl FnMut() {
    || observe((|| op(input())).retry(ExponentialBuilder::default()).call())
}

/// backon, async, exponential defaults (tokio sleeper; a success never sleeps).
pub fn backon_async() -> impl AsyncFnMut() {
    async || observe((|| op_async(input())).retry(ExponentialBuilder::default()).await)
}

/// backon, blocking, one failure, constant zero delay (`thread::sleep(0)` makes no syscall).
pub fn backon_sync_fail_once() -> impl FnMut() {
    let fail_next = flag();
    move || {
        fail_next.store(true, Ordering::Relaxed);
        let backoff = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(2);
        observe((|| op_flaky(input(), &fail_next)).retry(backoff).call());
    }
}

/// backon, async, one failure, a ready future as the zero wait.
pub fn backon_async_fail_once() -> impl AsyncFnMut() {
    let fail_next = flag();
    async move || {
        fail_next.store(true, Ordering::Relaxed);
        let backoff = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(2);
        let retried = (|| async { op_flaky(input(), &fail_next) }).retry(backoff).sleep(|_| ready(()));
        observe(retried.await);
    }
}

/// `tower::retry::Retry` (`Attempts(2)`: three attempts) around a `service_fn`.
pub fn tower_retry_async() -> impl AsyncFnMut() {
    tower_row(tower::retry::Retry::new(Attempts(2), tower::service_fn(op_async)))
}

/// `tower::retry::Retry`, one failure then success.
pub fn tower_retry_async_fail_once() -> impl AsyncFnMut() {
    let fail_next = flag();
    let backend = Arc::clone(&fail_next);
    let operation = tower::service_fn(move |x: u32| ready(op_flaky(x, &backend)));
    let mut service = tower::retry::Retry::new(Attempts(2), operation);
    async move || {
        fail_next.store(true, Ordering::Relaxed);
        observe(call_tower(&mut service, input()).await);
    }
}

fn retry_on_err(out: &Result<u32, MyError>, _: seatbelt::retry::RecoveryArgs<'_>) -> RecoveryInfo {
    if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
}

fn context() -> ResilienceContext<u32, Result<u32, MyError>> {
    ResilienceContext::new(tick::Clock::new_tokio()).name("bench")
}

/// seatbelt's retry layer, retrying `Err`, zero base delay, no jitter.
pub fn seatbelt_retry_async() -> impl AsyncFnMut() {
    seatbelt_row(
        (
            seatbelt::retry::Retry::layer("retry", &context())
                .clone_input()
                .base_delay(Duration::ZERO)
                .use_jitter(false)
                .recovery_with(retry_on_err),
            Execute::new(op_async),
        )
            .into_service(),
    )
}

/// seatbelt's retry layer over the flaky operation.
pub fn seatbelt_retry_async_fail_once() -> impl AsyncFnMut() {
    let fail_next = flag();
    let backend = Arc::clone(&fail_next);
    let service = (
        seatbelt::retry::Retry::layer("retry", &context())
            .clone_input()
            .base_delay(Duration::ZERO)
            .use_jitter(false)
            .recovery_with(retry_on_err),
        Execute::new(move |x: u32| ready(op_flaky(x, &backend))),
    )
        .into_service();
    async move || {
        fail_next.store(true, Ordering::Relaxed);
        observe(service.execute(input()).await);
    }
}

fn tower_resilience_retry() -> tower_resilience::retry::RetryLayer<u32, u32, MyError> {
    tower_resilience::retry::RetryLayer::<u32, u32, MyError>::builder()
        .max_attempts(3)
        .fixed_backoff(Duration::ZERO)
        .build()
}

/// tower-resilience's retry layer (3 attempts, fixed zero backoff).
pub fn tower_resilience_retry_async() -> impl AsyncFnMut() {
    tower_row(tower_resilience_retry().layer(tower::service_fn(op_async)))
}

/// tower-resilience's retry layer over the flaky operation.
pub fn tower_resilience_retry_async_fail_once() -> impl AsyncFnMut() {
    let fail_next = flag();
    let backend = Arc::clone(&fail_next);
    let operation = tower::service_fn(move |x: u32| ready(op_flaky(x, &backend)));
    let mut service = tower_resilience_retry().layer(operation);
    async move || {
        fail_next.store(true, Ordering::Relaxed);
        observe(call_tower(&mut service, input()).await);
    }
}

// ---- circuit breaker ----

/// recloser, blocking, default configuration.
pub fn recloser_sync() -> impl FnMut() {
    let breaker = Recloser::default();
    move || observe(breaker.call(|| op(input())))
}

/// recloser's `AsyncRecloser`, default configuration.
pub fn recloser_async() -> impl AsyncFnMut() {
    let breaker = AsyncRecloser::from(Recloser::default());
    async move || observe(breaker.call(op_async(input())).await)
}

/// failsafe, blocking, default configuration.
pub fn failsafe_sync() -> impl FnMut() {
    let breaker = failsafe::Config::new().build();
    move || observe(breaker.call(|| op(input())))
}

/// seatbelt's breaker layer, counting `Err` as a failure.
pub fn seatbelt_breaker_async() -> impl AsyncFnMut() {
    seatbelt_row(
        (
            seatbelt::breaker::Breaker::layer("breaker", &context())
                .recovery_with(
                    |out: &Result<u32, MyError>, _| {
                        if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
                    },
                )
                .rejected_input(|_, _| Err(MyError::Unavailable)),
            Execute::new(op_async),
        )
            .into_service(),
    )
}

/// tower-resilience's circuit breaker layer, default configuration.
pub fn tower_resilience_breaker_async() -> impl AsyncFnMut() {
    let layer = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("the default breaker configuration is valid");
    tower_row(layer.layer(tower::service_fn(op_async)))
}

// ---- rate limiter ----

fn governor() -> governor::DefaultDirectRateLimiter {
    governor::RateLimiter::direct(governor::Quota::per_second(NonZeroU32::MAX))
}

/// governor's direct limiter: `check()`, then the call.
pub fn governor_sync() -> impl FnMut() {
    let limiter = governor();
    move || match limiter.check() {
        Ok(()) => observe(op(input())),
        Err(_) => observe(Err::<u32, _>(MyError::Unavailable)),
    }
}

/// governor's direct limiter in an async method: `check()`, then the awaited call.
pub fn governor_async() -> impl AsyncFnMut() {
    let limiter = governor();
    async move || match limiter.check() {
        Ok(()) => observe(op_async(input()).await),
        Err(_) => observe(Err::<u32, _>(MyError::Unavailable)),
    }
}

fn tower_resilience_rate_limiter() -> tower_resilience::ratelimiter::RateLimiterLayer {
    tower_resilience::ratelimiter::RateLimiterLayer::builder()
        .limit_for_period(usize::MAX / 2)
        .refresh_period(LIMIT)
        .build()
        .expect("a valid rate limiter configuration")
}

/// tower-resilience's rate limiter layer, a limit never reached.
pub fn tower_resilience_rate_limiter_async() -> impl AsyncFnMut() {
    tower_row(tower_resilience_rate_limiter().layer(tower::service_fn(op_async)))
}

// ---- bulkhead ----

/// tokio's `Semaphore::try_acquire`, the call, the permit's release.
pub fn tokio_semaphore_sync() -> impl FnMut() {
    let semaphore = Semaphore::new(ROOM);
    move || match semaphore.try_acquire() {
        Ok(_permit) => observe(op(input())),
        Err(_) => observe(Err::<u32, _>(MyError::Unavailable)),
    }
}

/// tokio's `Semaphore::acquire().await`, the awaited call, the permit's release.
pub fn tokio_semaphore_async() -> impl AsyncFnMut() {
    let semaphore = Semaphore::new(ROOM);
    async move || match semaphore.acquire().await {
        Ok(_permit) => observe(op_async(input()).await),
        Err(_) => observe(Err::<u32, _>(MyError::Unavailable)),
    }
}

fn tower_resilience_bulkhead() -> tower_resilience::bulkhead::BulkheadLayer {
    tower_resilience::bulkhead::BulkheadLayer::builder()
        .max_concurrent_calls(ROOM)
        .build()
        .expect("a valid bulkhead configuration")
}

/// tower-resilience's bulkhead layer, room to spare.
pub fn tower_resilience_bulkhead_async() -> impl AsyncFnMut() {
    tower_row(tower_resilience_bulkhead().layer(tower::service_fn(op_async)))
}

// ---- timeout ----

/// `tokio::time::timeout` around the awaited call; the elapsed case maps to the user's error.
pub fn tokio_timeout_async() -> impl AsyncFnMut() {
    async || observe(tokio::time::timeout(LIMIT, op_async(input())).await.unwrap_or(Err(MyError::Unavailable)))
}

/// seatbelt's timeout layer.
pub fn seatbelt_timeout_async() -> impl AsyncFnMut() {
    seatbelt_row(
        (
            seatbelt::timeout::Timeout::layer("timeout", &context())
                .timeout(LIMIT)
                .timeout_error(|_| MyError::Unavailable),
            Execute::new(op_async),
        )
            .into_service(),
    )
}

/// tower-resilience's time limiter layer.
pub fn tower_resilience_timeout_async() -> impl AsyncFnMut() {
    let layer = tower_resilience::timelimiter::TimeLimiterLayer::builder().timeout_duration(LIMIT).build();
    tower_row(layer.layer(tower::service_fn(op_async)))
}

// ---- adaptive limit ----

/// tower-resilience's adaptive limiter with AIMD, initial limit 20, never reached.
pub fn tower_resilience_adaptive_async() -> impl AsyncFnMut() {
    tower_row(
        tower_resilience::adaptive::AdaptiveLimiterLayer::new(crate::cases::adaptive::tower_resilience_aimd())
            .layer(tower::service_fn(op_async)),
    )
}

// ---- hedge ----

/// seatbelt's hedging layer, 100 ms delay, one extra attempt.
pub fn seatbelt_hedge_async() -> impl AsyncFnMut() {
    seatbelt_row(
        (
            seatbelt::hedging::Hedging::layer("hedging", &context())
                .clone_input()
                .recovery_with(
                    |out: &Result<u32, MyError>, _| {
                        if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
                    },
                )
                .hedging_delay(Duration::from_millis(100))
                .max_hedged_attempts(1),
            Execute::new(op_async),
        )
            .into_service(),
    )
}

// ---- fallback ----

/// seatbelt's fallback layer, replacing an `Err` with a cached answer; not needed.
pub fn seatbelt_fallback_async() -> impl AsyncFnMut() {
    seatbelt_row(
        (
            seatbelt::fallback::Fallback::layer("fallback", &context())
                .should_fallback(Result::is_err)
                .fallback(|_, _| Ok(1)),
            Execute::new(op_async),
        )
            .into_service(),
    )
}

// ---- the four-policy stack ----

/// tower-resilience's retry, circuit breaker, rate limiter and bulkhead stacked with
/// `ServiceBuilder`, in our order.
pub fn tower_resilience_stack_async() -> impl AsyncFnMut() {
    let breaker = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder().build().expect("valid breaker");
    tower_row(
        ServiceBuilder::new()
            .layer(
                tower_resilience::retry::RetryLayer::<u32, u32, _>::builder()
                    .max_attempts(3)
                    .fixed_backoff(Duration::ZERO)
                    .build(),
            )
            .layer(breaker)
            .layer(tower_resilience_rate_limiter())
            .layer(tower_resilience_bulkhead())
            .service(tower::service_fn(op_async)),
    )
}
