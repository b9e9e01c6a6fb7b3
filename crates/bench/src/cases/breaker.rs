//! Circuit breaker, closed, successful call.

use std::future::ready;
use std::sync::Arc;

use failsafe::CircuitBreaker as _;
use layered::{Execute, Service as _, Stack};
use recloser::{AsyncRecloser, Recloser};
use seatbelt::breaker::Breaker;
use seatbelt::{RecoveryInfo, ResilienceContext};
use tower::Layer;

use crate::{Fail, consume, exec, opaque, work};

/// recloser, blocking, default configuration.
pub fn recloser_sync() -> impl FnMut() {
    let breaker = Recloser::default();
    move || {
        consume(breaker.call(|| work(opaque(1))));
    }
}

/// [`recloser_sync`], shared with a contender thread.
pub fn recloser_shared() -> impl Fn() + Sync {
    let breaker = Arc::new(Recloser::default());
    move || {
        consume(breaker.call(|| work(opaque(1))));
    }
}

/// recloser's `AsyncRecloser` around a ready future.
pub fn recloser_async() -> impl FnMut() {
    let breaker = AsyncRecloser::from(Recloser::default());
    move || {
        consume(exec::poll_now(breaker.call(async { work(opaque(1)) })));
    }
}

/// failsafe, blocking, default configuration (consecutive failures, exponential backoff).
pub fn failsafe_sync() -> impl FnMut() {
    let breaker = failsafe::Config::new().build();
    move || {
        consume(breaker.call(|| work(opaque(1))));
    }
}

/// [`failsafe_sync`], shared with a contender thread (the state machine is `Clone` + `Sync`).
pub fn failsafe_shared() -> impl Fn() + Sync {
    let breaker = failsafe::Config::new().build();
    move || {
        consume(breaker.call(|| work(opaque(1))));
    }
}

/// seatbelt's breaker layer over `Execute`, on tick's tokio clock.
pub fn seatbelt_async() -> impl FnMut() {
    let clock = tick::Clock::new_tokio();
    let context: ResilienceContext<u64, Result<u64, Fail>> = ResilienceContext::new(&clock).name("bench");
    let service = (
        Breaker::layer("breaker", &context)
            .recovery_with(
                |out: &Result<u64, Fail>, _| {
                    if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
                },
            )
            .rejected_input(|_, _| Err(Fail)),
        Execute::new(|x: u64| async move { work(x) }),
    )
        .into_service();
    move || {
        consume(exec::poll_now(service.execute(opaque(1))));
    }
}

/// tower-resilience's circuit breaker layer, default configuration, around a `service_fn`.
pub fn tower_resilience_async() -> impl FnMut() {
    let layer = tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("the default breaker configuration is valid");
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}
