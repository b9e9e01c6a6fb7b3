//! resilience4cata's circuit breaker, rate limiter, bulkhead and timeout through `#[resilient]`,
//! alone and stacked under a retry, over the same delegate as the anchors. Built on `Registry::builder().build()`:
//! the system clock, whose coarse reading (one atomic load, kept fresh by the registry's ticker)
//! is all the rate limiter's pass path reads.

use std::future::Future;

use resilience4cata::{Rejection, ResilienceError, resilient};

use crate::{consume, exec, opaque, work};

/// The error of the guarded methods: the delegate's failure, or a policy's refusal.
#[derive(Debug, PartialEq, ResilienceError)]
pub enum GuardError {
    /// The delegate failed.
    Fail,
    /// A policy refused the call.
    #[rejection]
    Rejected(Rejection),
}

/// Each policy alone, then stacked.
#[resilient]
pub trait Guarded {
    /// Circuit breaker, default configuration, closed.
    #[circuit_breaker]
    fn broken(&self, x: u64) -> Result<u64, GuardError>;

    /// The async breaker.
    #[circuit_breaker]
    async fn broken_async(&self, x: u64) -> Result<u64, GuardError>;

    /// Rate limiter with permits to spare.
    #[rate_limiter(permits = 1000000000, period = "1s")]
    fn limited(&self, x: u64) -> Result<u64, GuardError>;

    /// Bulkhead with room to spare.
    #[bulkhead(max_concurrent_calls = 1024)]
    fn bulkheaded(&self, x: u64) -> Result<u64, GuardError>;

    /// The async bulkhead.
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn bulkheaded_async(&self, x: u64) -> Result<u64, GuardError>;

    /// A timeout that does not fire.
    #[timeout(duration = "1s")]
    async fn timed(&self, x: u64) -> Result<u64, GuardError>;

    /// Retry alone, first attempt succeeds (the contended rows: nothing shared is written).
    #[retry(max_attempts = 3)]
    fn retried(&self, x: u64) -> Result<u64, GuardError>;

    /// The full stack: retry + circuit breaker + rate limiter + bulkhead.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    fn full(&self, x: u64) -> Result<u64, GuardError>;

    /// The async form.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn full_async(&self, x: u64) -> Result<u64, GuardError>;

    /// Retry + rate limiter + bulkhead (the full stack without the breaker).
    #[retry(max_attempts = 3)]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    fn stacked(&self, x: u64) -> Result<u64, GuardError>;

    /// The async form.
    #[retry(max_attempts = 3)]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn stacked_async(&self, x: u64) -> Result<u64, GuardError>;
}

/// The delegate: `work`, its error mapped (it never fails).
#[derive(Debug, Default)]
pub struct Backend;

#[inline(always)]
fn call(x: u64) -> Result<u64, GuardError> {
    work(x).map_err(|_| GuardError::Fail)
}

impl Guarded for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, GuardError> { call(x) } for broken full limited bulkheaded stacked retried }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, GuardError> { call(x) }
    for broken_async full_async bulkheaded_async timed stacked_async }
}

/// The wrapper and its registry, kept together so the registry (and its coarse-clock ticker) lives
/// as long as the case.
type Guard = super::Wrapped<ResilientGuarded<Backend>>;

fn guard() -> Guard {
    Guard::new(|registry| ResilientGuarded::new(Backend, registry))
}

/// `SHARED` only makes the 1- and 2-thread cases distinct types, so that each closure has a single
/// call site (and is inlined there, as every other case is).
fn sync_case<const SHARED: bool, F>(f: F) -> impl Fn() + Sync
where
    F: Fn(&ResilientGuarded<Backend>, u64) -> Result<u64, GuardError> + Sync,
{
    let guard = guard();
    move || consume(f(&guard.api, opaque(1)))
}

fn async_case<F, Fut>(f: F) -> impl FnMut()
where
    F: Fn(&'static ResilientGuarded<Backend>, u64) -> Fut,
    Fut: Future<Output = Result<u64, GuardError>>,
{
    // One for the process: the futures borrow the wrapper for `'static`, and leaking one per
    // criterion sample would leak a coarse-clock ticker thread with each registry. Opaque, as the
    // leaked box's address was: a visible static address changes the code measured.
    static GUARD: std::sync::OnceLock<Guard> = std::sync::OnceLock::new();
    let guard: &'static Guard = std::hint::black_box(GUARD.get_or_init(guard));
    move || consume(exec::poll_now(f(&guard.api, opaque(1))))
}

/// `#[circuit_breaker]`, closed, success.
pub fn breaker_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.broken(x))
}

/// [`breaker_sync`], shared with a contender thread.
pub fn breaker_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.broken(x))
}

/// `#[circuit_breaker]` on an async method, closed, success.
pub fn breaker_async() -> impl FnMut() {
    async_case(|api, x| api.broken_async(x))
}

/// `#[retry] #[circuit_breaker] #[rate_limiter] #[bulkhead]`, passing.
pub fn full_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.full(x))
}

/// The async form of [`full_sync`].
pub fn full_async() -> impl FnMut() {
    async_case(|api, x| api.full_async(x))
}

/// `#[rate_limiter]`, passing.
pub fn rate_limiter_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.limited(x))
}

/// [`rate_limiter_sync`], shared with a contender thread.
pub fn rate_limiter_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.limited(x))
}

/// `#[bulkhead]`, passing.
pub fn bulkhead_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.bulkheaded(x))
}

/// [`bulkhead_sync`], shared with a contender thread.
pub fn bulkhead_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.bulkheaded(x))
}

/// `#[bulkhead]` on an async method, passing.
pub fn bulkhead_async() -> impl FnMut() {
    async_case(|api, x| api.bulkheaded_async(x))
}

/// `#[timeout]`, the attempt finishing at once.
pub fn timeout_async() -> impl FnMut() {
    async_case(|api, x| api.timed(x))
}

/// `#[retry] #[rate_limiter] #[bulkhead]`, passing.
pub fn stack_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.stacked(x))
}

/// The async form of [`stack_sync`].
pub fn stack_async() -> impl FnMut() {
    async_case(|api, x| api.stacked_async(x))
}

/// `#[retry]` alone, first attempt succeeds, on one thread (the contended group's `retry_alone`).
pub fn retry_sync() -> impl Fn() + Sync {
    sync_case::<false, _>(|api, x| api.retried(x))
}

/// `#[retry]` alone, first attempt succeeds, shared by the contended rows' threads.
pub fn retry_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.retried(x))
}

/// [`full_sync`], shared by the contended rows' threads.
pub fn full_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.full(x))
}

/// [`stack_sync`] (the stack without its breaker), shared by the contended rows' threads.
pub fn stack_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.stacked(x))
}

/// The rate limiter's method, then the bulkhead's, in one call (two separate wrappers' instances,
/// two calls of the delegate): the stack's two contended lines without the stack.
pub fn limiter_then_bulkhead_shared() -> impl Fn() + Sync {
    sync_case::<true, _>(|api, x| api.limited(x).and_then(|y| api.bulkheaded(y)))
}

/// [`timeout_async`] on one instance shared by the contended rows' threads, each polling its own
/// future once (inside the entered runtime).
pub fn timeout_shared() -> impl Fn() + Sync {
    let guard = guard();
    move || consume(exec::poll_now(guard.api.timed(opaque(1))))
}
