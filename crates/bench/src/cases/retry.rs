//! Retry: the first attempt succeeds, or fails once and the retry (after a zero wait) succeeds.

use std::cell::Cell;
use std::future::{Ready, ready};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use layered::{Execute, Service as _, Stack};
use seatbelt::retry::Retry as SeatbeltRetry;
use seatbelt::{RecoveryInfo, ResilienceContext};
use tower::Layer;
use tower::retry::budget::{Budget, TpsBudget};

use crate::{Fail, consume, exec, flaky, opaque, work};

/// backon, blocking: `(|| work(x)).retry(ExponentialBuilder::default()).call()`.
pub fn backon_sync() -> impl FnMut() {
    || {
        consume((|| work(opaque(1))).retry(ExponentialBuilder::default()).call());
    }
}

/// backon, async, tokio sleeper.
pub fn backon_async() -> impl FnMut() {
    || {
        consume(exec::poll_now((|| async { work(opaque(1)) }).retry(ExponentialBuilder::default())));
    }
}

/// backon, blocking, one failure then success, constant zero delay (`thread::sleep(0)` makes no
/// syscall).
pub fn backon_sync_fail_once() -> impl FnMut() {
    let fail_next = Cell::new(false);
    move || {
        fail_next.set(true);
        let backoff = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(2);
        consume((|| flaky(opaque(1), &fail_next)).retry(backoff).call());
    }
}

/// backon, async, one failure then success. The sleeper is a ready future: tokio's own sleep would
/// round a zero wait up to the next 1 ms tick and the case would measure a millisecond.
pub fn backon_async_fail_once() -> impl FnMut() {
    let fail_next = Cell::new(false);
    move || {
        fail_next.set(true);
        let backoff = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(2);
        let retry = (|| async { flaky(opaque(1), &fail_next) }).retry(backoff).sleep(|_| ready(()));
        consume(exec::poll_now(retry));
    }
}

/// tower's retry policy as its documentation writes it: a number of attempts, no wait.
#[derive(Clone, Debug)]
pub struct Attempts(pub usize);

impl<Req: Clone, Res, E> tower::retry::Policy<Req, Res, E> for Attempts {
    type Future = Ready<()>;

    fn retry(&mut self, _req: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        match result {
            Ok(_) => None,
            Err(_) if self.0 > 0 => {
                self.0 -= 1;
                Some(ready(()))
            }
            Err(_) => None,
        }
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}

/// `tower::retry::Retry` (`Attempts(2)`) around a `service_fn` calling `work`.
pub fn tower_retry_async() -> impl FnMut() {
    let mut service = tower::retry::Retry::new(Attempts(2), tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// `tower::retry::Retry`, one failure then success; the policy's wait is a ready future.
pub fn tower_retry_async_fail_once() -> impl FnMut() {
    let fail_next = Rc::new(Cell::new(false));
    let flag = Rc::clone(&fail_next);
    let mut service = tower::retry::Retry::new(Attempts(2), tower::service_fn(move |x: u64| ready(flaky(x, &flag))));
    move || {
        fail_next.set(true);
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// seatbelt's retry layer over `Execute`, retrying `Err`, on tick's tokio clock.
pub fn seatbelt_async() -> impl FnMut() {
    let clock = tick::Clock::new_tokio();
    let context: ResilienceContext<u64, Result<u64, Fail>> = ResilienceContext::new(&clock).name("bench");
    let service = (
        SeatbeltRetry::layer("retry", &context).clone_input().recovery_with(|out: &Result<u64, Fail>, _| {
            if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
        }),
        Execute::new(|x: u64| async move { work(x) }),
    )
        .into_service();
    move || {
        consume(exec::poll_now(service.execute(opaque(1))));
    }
}

/// tower-resilience's retry layer (3 attempts, fixed zero backoff) around a `service_fn`.
pub fn tower_resilience_async() -> impl FnMut() {
    let layer = tower_resilience::retry::RetryLayer::<u64, u64, Fail>::builder()
        .max_attempts(3)
        .fixed_backoff(Duration::ZERO)
        .build();
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

fn tps_budget() -> TpsBudget {
    TpsBudget::new(Duration::from_secs(10), 10, 0.2)
}

/// tower's `TpsBudget` as its retry middleware uses it on a successful request: one `deposit`.
pub fn tower_tps_budget() -> impl FnMut() {
    let budget = tps_budget();
    move || {
        budget.deposit();
        consume(work(opaque(1)));
    }
}

/// [`tower_tps_budget`], shared with a contender thread.
pub fn tower_tps_budget_shared() -> impl Fn() + Sync {
    let budget = Arc::new(tps_budget());
    move || {
        budget.deposit();
        consume(work(opaque(1)));
    }
}

/// seatbelt's retry layer, one failure then success, zero base delay, no jitter.
pub fn seatbelt_async_fail_once() -> impl FnMut() {
    let clock = tick::Clock::new_tokio();
    let context: ResilienceContext<u64, Result<u64, Fail>> = ResilienceContext::new(&clock).name("bench");
    let fail_next = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&fail_next);
    let service = (
        SeatbeltRetry::layer("retry", &context)
            .clone_input()
            .base_delay(Duration::ZERO)
            .use_jitter(false)
            .recovery_with(
                |out: &Result<u64, Fail>, _| {
                    if out.is_err() { RecoveryInfo::retry() } else { RecoveryInfo::never() }
                },
            ),
        Execute::new(move |x: u64| {
            let fail = flag.swap(false, std::sync::atomic::Ordering::Relaxed);
            async move { if fail { Err(Fail) } else { work(x) } }
        }),
    )
        .into_service();
    move || {
        fail_next.store(true, std::sync::atomic::Ordering::Relaxed);
        consume(exec::poll_now(service.execute(opaque(1))));
    }
}
