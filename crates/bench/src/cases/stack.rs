//! The full stack: retry → circuit breaker → rate limiter → bulkhead → the call, all passing.

use std::future::ready;
use std::time::Duration;

use tower::ServiceBuilder;

use crate::{consume, exec, opaque, work};

/// tower-resilience's retry (three attempts, no wait), rate limiter (permits to spare) and bulkhead
/// (room to spare): the layers both stacks share, so that the one without the breaker differs by it
/// alone.
fn passing_layers<E>() -> (
    tower_resilience::retry::RetryLayer<u64, u64, E>,
    tower_resilience::ratelimiter::RateLimiterLayer,
    tower_resilience::bulkhead::BulkheadLayer,
) {
    use tower_resilience::{bulkhead, ratelimiter, retry};
    let limiter = ratelimiter::RateLimiterLayer::builder()
        .limit_for_period(usize::MAX / 2)
        .refresh_period(Duration::from_secs(1))
        .build()
        .expect("valid rate limiter");
    let bulkhead = bulkhead::BulkheadLayer::builder().max_concurrent_calls(1024).build().expect("valid bulkhead");
    let retry = retry::RetryLayer::<u64, u64, _>::builder().max_attempts(3).fixed_backoff(Duration::ZERO).build();
    (retry, limiter, bulkhead)
}

/// tower-resilience's four layers stacked with `ServiceBuilder`, in the same order as ours.
pub fn tower_resilience_async() -> impl FnMut() {
    let breaker = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder().build().expect("valid breaker");
    let (retry, limiter, bulkhead) = passing_layers();
    let mut service = ServiceBuilder::new()
        .layer(retry)
        .layer(breaker)
        .layer(limiter)
        .layer(bulkhead)
        .service(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// The same without the breaker: retry → rate limiter → bulkhead, to set beside ours until our
/// breaker lands.
pub fn tower_resilience_no_breaker_async() -> impl FnMut() {
    let (retry, limiter, bulkhead) = passing_layers();
    let mut service = ServiceBuilder::new()
        .layer(retry)
        .layer(limiter)
        .layer(bulkhead)
        .service(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}
