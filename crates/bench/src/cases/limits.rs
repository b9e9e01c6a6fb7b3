//! Rate limiter and bulkhead, passing: permits and room to spare.

use std::future::ready;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;
use tower::Layer;

use crate::{consume, exec, opaque, work};

fn governor() -> DefaultDirectRateLimiter {
    RateLimiter::direct(Quota::per_second(NonZeroU32::MAX))
}

/// governor's direct limiter (quanta clock), `check()` then the call; the quota never runs out.
pub fn governor_sync() -> impl FnMut() {
    let limiter = governor();
    move || {
        if limiter.check().is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// [`governor_sync`], shared with a contender thread.
pub fn governor_shared() -> impl Fn() + Sync {
    let limiter = governor();
    move || {
        if limiter.check().is_ok() {
            consume(work(opaque(1)));
        }
    }
}

/// tower-resilience's rate limiter layer with a limit that is never reached.
pub fn tower_resilience_rate_limiter() -> impl FnMut() {
    let layer = tower_resilience::ratelimiter::RateLimiterLayer::builder()
        .limit_for_period(usize::MAX / 2)
        .refresh_period(Duration::from_secs(1))
        .build()
        .expect("a valid rate limiter configuration");
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

const ROOM: usize = 1024;

/// tokio's `Semaphore::try_acquire`, the call, then the permit's release.
pub fn tokio_semaphore_sync() -> impl FnMut() {
    let semaphore = Semaphore::new(ROOM);
    move || {
        if let Ok(_permit) = semaphore.try_acquire() {
            consume(work(opaque(1)));
        }
    }
}

/// [`tokio_semaphore_sync`], shared with a contender thread.
pub fn tokio_semaphore_shared() -> impl Fn() + Sync {
    let semaphore = Arc::new(Semaphore::new(ROOM));
    move || {
        if let Ok(_permit) = semaphore.try_acquire() {
            consume(work(opaque(1)));
        }
    }
}

/// tower's `RateLimit` (a fixed window re-armed with a tokio sleep), with a rate that never runs out.
pub fn tower_rate_limit() -> impl FnMut() {
    let rate = tower::limit::rate::Rate::new(u64::MAX, Duration::from_secs(1));
    let mut service = tower::limit::RateLimit::new(tower::service_fn(|x: u64| ready(work(x))), rate);
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// tower's `ConcurrencyLimit` around a `service_fn`: `poll_ready` takes the permit, the response
/// future releases it.
pub fn tower_concurrency_limit() -> impl FnMut() {
    let mut service = tower::limit::ConcurrencyLimit::new(tower::service_fn(|x: u64| ready(work(x))), ROOM);
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// tower-resilience's bulkhead layer with room to spare.
pub fn tower_resilience_bulkhead() -> impl FnMut() {
    let layer = tower_resilience::bulkhead::BulkheadLayer::builder()
        .max_concurrent_calls(ROOM)
        .build()
        .expect("a valid bulkhead configuration");
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}
