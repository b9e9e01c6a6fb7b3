//! The full stack of `ours_guarded` (retry + circuit breaker + rate limiter + bulkhead, passing)
//! with the nesting reversed by `#[policy_order]`: the bulkhead outermost, the retry innermost. Set
//! beside `full_stack/ours_*`, it shows what a non-default order costs (SPEC §6: no more).

use resilience4cata::resilient;

use super::ours_guarded::GuardError;
use crate::{consume, exec, opaque, work};

/// The full stack, every layer listed in reverse of the default order.
#[resilient]
#[policy_order(Bulkhead, RateLimiter, CircuitBreaker, Retry)]
pub trait Reordered {
    /// Sync.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    fn full(&self, x: u64) -> Result<u64, GuardError>;

    /// Async.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn full_async(&self, x: u64) -> Result<u64, GuardError>;
}

/// The delegate: `work`, its error mapped (it never fails).
#[derive(Debug, Default)]
pub struct Backend;

impl Reordered for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, GuardError> { work(x).map_err(|_| GuardError::Fail) } for full }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, GuardError> { work(x).map_err(|_| GuardError::Fail) }
    for full_async }
}

/// The wrapper with its registry (whose coarse-clock ticker must live as long as the case).
type Wrapped = super::Wrapped<ResilientReordered<Backend>>;

fn wrapped() -> Wrapped {
    Wrapped::new(|registry| ResilientReordered::new(Backend, registry))
}

/// The reversed full stack, passing.
pub fn full_sync() -> impl Fn() + Sync {
    let wrapped = wrapped();
    move || consume(wrapped.api.full(opaque(1)))
}

/// The async form of [`full_sync`].
pub fn full_async() -> impl FnMut() {
    // Leaked: the futures borrow the wrapper, and a case is built a few hundred times per run.
    let wrapped: &'static Wrapped = Box::leak(Box::new(wrapped()));
    move || consume(exec::poll_now(wrapped.api.full_async(opaque(1))))
}
