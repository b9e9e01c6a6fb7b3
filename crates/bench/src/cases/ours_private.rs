//! Prototype: the retry loop as docs/architecture.md says the macro expands it, over `__private`.

use std::cell::Cell;
use std::time::Duration;

use resilience4cata::__private::{self, Failure, RetryConfigBuilder, RetryPolicy, Site};
use resilience4cata::testing::{self, ManualClock};

use crate::{consume, flaky, opaque, work};

fn policy(delay: Duration) -> RetryPolicy {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().expect("registry");
    __private::retry(
        &registry,
        Site { id: "bench::Api::call", name: None, config: None, is_async: false },
        RetryConfigBuilder::new().max_attempts(3).delay(delay),
    )
    .expect("retry")
}

#[inline(always)]
fn retried<T, E>(retry: &RetryPolicy, mut attempt: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let mut call = retry.start();
    loop {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => {
                if !retry.retry_after(&mut call, Failure::Retryable) {
                    return Err(e);
                }
            }
        }
    }
}

/// Success.
pub fn success_sync() -> impl FnMut() {
    let retry = policy(Duration::from_millis(200));
    move || consume(retried(&retry, || work(opaque(1))))
}

/// Fail once, zero delay.
pub fn fail_once_sync() -> impl FnMut() {
    let retry = policy(Duration::ZERO);
    let fail_next = Cell::new(false);
    move || {
        fail_next.set(true);
        consume(retried(&retry, || flaky(opaque(1), &fail_next)))
    }
}

fn budget_policy() -> RetryPolicy {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().expect("registry");
    __private::retry(
        &registry,
        Site { id: "bench::Api::budgeted", name: None, config: None, is_async: false },
        RetryConfigBuilder::new().max_attempts(3).budget_percent(20.0),
    )
    .expect("retry")
}

/// Success with the budget on.
pub fn budget_sync() -> impl FnMut() {
    let retry = budget_policy();
    move || consume(retried(&retry, || work(opaque(1))))
}

/// Success with the budget on, shared with a contender thread.
pub fn budget_shared() -> impl Fn() + Sync {
    let retry = budget_policy();
    move || consume(retried(&retry, || work(opaque(1))))
}
