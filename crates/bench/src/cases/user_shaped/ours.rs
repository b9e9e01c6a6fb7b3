//! resilience4cata in the user's shape: one `#[resilient]` trait, one method per policy and form,
//! over a backend that calls [`op`] (or [`op_flaky`]), on `Registry::builder().build()` (the system
//! clock, as in an application).

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use resilience4cata::{FallbackContext, Registry, resilient};

use super::{AppError, MyError, input, observe, op, op_flaky};

/// The service a user protects: every policy the harness measures, sync and async.
#[resilient]
pub trait Inventory {
    /// Retry, first attempt succeeds.
    #[retry(max_attempts = 3)]
    fn retried(&self, x: u32) -> Result<u32, MyError>;

    /// The async form.
    #[retry(max_attempts = 3)]
    async fn retried_async(&self, x: u32) -> Result<u32, MyError>;

    /// Retry over the flaky operation, zero wait between attempts.
    #[retry(max_attempts = 3, delay = "0")]
    fn flaky(&self, x: u32) -> Result<u32, MyError>;

    /// The async form.
    #[retry(max_attempts = 3, delay = "0")]
    async fn flaky_async(&self, x: u32) -> Result<u32, MyError>;

    /// Circuit breaker, default configuration, closed.
    #[circuit_breaker]
    fn guarded(&self, x: u32) -> Result<u32, AppError>;

    /// The async form.
    #[circuit_breaker]
    async fn guarded_async(&self, x: u32) -> Result<u32, AppError>;

    /// Rate limiter with permits to spare.
    #[rate_limiter(permits = 1000000000, period = "1s")]
    fn limited(&self, x: u32) -> Result<u32, AppError>;

    /// The async form.
    #[rate_limiter(permits = 1000000000, period = "1s")]
    async fn limited_async(&self, x: u32) -> Result<u32, AppError>;

    /// Bulkhead with room to spare.
    #[bulkhead(max_concurrent_calls = 1024)]
    fn bulkheaded(&self, x: u32) -> Result<u32, AppError>;

    /// The async form.
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn bulkheaded_async(&self, x: u32) -> Result<u32, AppError>;

    /// A timeout that does not fire.
    #[timeout(duration = "1s")]
    async fn timed_async(&self, x: u32) -> Result<u32, AppError>;

    /// Adaptive concurrency limit (Aimd, defaults), never reached.
    #[adaptive_limit]
    fn adaptive(&self, x: u32) -> Result<u32, AppError>;

    /// The async form.
    #[adaptive_limit]
    async fn adaptive_async(&self, x: u32) -> Result<u32, AppError>;

    /// Hedge after 100 ms; the first attempt answers at once.
    #[hedge(delay = "100ms")]
    async fn hedged_async(&self, x: u32) -> Result<u32, MyError>;

    /// Fallback that a successful call never consults.
    #[fallback(method = cached)]
    fn with_fallback(&self, x: u32) -> Result<u32, MyError>;

    /// The async form.
    #[fallback(method = cached_async)]
    async fn with_fallback_async(&self, x: u32) -> Result<u32, MyError>;

    /// The four-policy stack: retry, circuit breaker, rate limiter, bulkhead.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    fn stacked(&self, x: u32) -> Result<u32, AppError>;

    /// The async form.
    #[retry(max_attempts = 3)]
    #[circuit_breaker]
    #[rate_limiter(permits = 1000000000, period = "1s")]
    #[bulkhead(max_concurrent_calls = 1024)]
    async fn stacked_async(&self, x: u32) -> Result<u32, AppError>;

    /// The fallback: a cached answer.
    fn cached(&self, x: u32, ctx: FallbackContext<MyError>) -> Result<u32, MyError>;

    /// The async fallback.
    async fn cached_async(&self, x: u32, ctx: FallbackContext<MyError>) -> Result<u32, MyError>;
}

/// The user's backend: calls [`op`], or [`op_flaky`] over its flag.
#[derive(Debug)]
pub struct Backend {
    fail_next: &'static AtomicBool,
}

impl Inventory for Backend {
    testkit::same_body! { fn(&self, x: u32) -> Result<u32, MyError> { op(x) } for retried with_fallback }
    testkit::same_body! { async fn(&self, x: u32) -> Result<u32, MyError> { op(x) }
    for retried_async hedged_async with_fallback_async }
    testkit::same_body! { fn(&self, x: u32) -> Result<u32, MyError> { op_flaky(x, self.fail_next) } for flaky }
    testkit::same_body! { async fn(&self, x: u32) -> Result<u32, MyError> { op_flaky(x, self.fail_next) } for flaky_async }
    testkit::same_body! { fn(&self, x: u32) -> Result<u32, AppError> { Ok(op(x)?) } for guarded limited bulkheaded adaptive stacked }
    testkit::same_body! { async fn(&self, x: u32) -> Result<u32, AppError> { Ok(op(x)?) }
    for guarded_async limited_async bulkheaded_async timed_async adaptive_async stacked_async }
    fn cached(&self, x: u32, _ctx: FallbackContext<MyError>) -> Result<u32, MyError> {
        Ok(x)
    }
    async fn cached_async(&self, x: u32, _ctx: FallbackContext<MyError>) -> Result<u32, MyError> {
        Ok(x)
    }
}

/// The wrapper a user holds, with its registry (whose coarse-clock ticker the limiter reads) and
/// the backend's failure flag.
#[derive(Debug)]
pub struct Service {
    /// The `#[resilient]` wrapper.
    pub api: ResilientInventory<Backend>,
    /// Set before a call to make the flaky operation fail once.
    pub fail_next: &'static AtomicBool,
    _registry: Registry,
}

/// The process's one [`Service`], built on first use, as an application builds its wrapper once.
///
/// One for every row and every criterion sample rather than one per sample: a registry whose
/// limiter started its coarse-clock ticker keeps that thread while it lives, and the futures of
/// the async rows borrow the wrapper for `'static`, so per-sample wrappers would have to be leaked
/// with a ticker thread each (thousands over a criterion run). Every row passes, so the shared
/// state stays where it was: the breaker closed, the limiter's permits and the bulkhead's slots
/// never near their limits.
///
/// The reference goes through `black_box`: a wrapper's address is not a link-time constant in an
/// application (it lives in an `Arc` or a handler's state), and a visible static address would let
/// the optimiser fold what a user's build computes.
pub fn service() -> &'static Service {
    static FAIL_NEXT: AtomicBool = AtomicBool::new(false);
    static SERVICE: OnceLock<Service> = OnceLock::new();
    std::hint::black_box(SERVICE.get_or_init(|| {
        let registry = Registry::builder().build().expect("the default registry builds");
        let api =
            ResilientInventory::new(Backend { fail_next: &FAIL_NEXT }, &registry).expect("every instance resolves");
        Service { api, fail_next: &FAIL_NEXT, _registry: registry }
    }))
}

/// A sync row: one call of `method` per iteration.
pub fn sync<E>(method: impl Fn(&ResilientInventory<Backend>, u32) -> Result<u32, E>) -> impl FnMut() {
    let service = service();
    move || observe(method(&service.api, input()))
}

/// An async row: one awaited call of `method` per iteration.
pub fn awaited<E, Fut>(method: impl Fn(&'static ResilientInventory<Backend>, u32) -> Fut) -> impl AsyncFnMut()
where
    Fut: Future<Output = Result<u32, E>>,
{
    let service = service();
    async move || observe(method(&service.api, input()).await)
}

/// The sync retry row whose first attempt fails.
pub fn sync_fail_once() -> impl FnMut() {
    let service = service();
    move || {
        service.fail_next.store(true, Ordering::Relaxed);
        observe(service.api.flaky(input()));
    }
}

/// The async retry row whose first attempt fails.
pub fn awaited_fail_once() -> impl AsyncFnMut() {
    let service = service();
    async move || {
        service.fail_next.store(true, Ordering::Relaxed);
        observe(service.api.flaky_async(input()).await);
    }
}

macro_rules! rows {
    ($($(#[$doc:meta])* $name:ident: $form:ident $method:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name() -> rows!(@ty $form) {
            $form(|api, x| api.$method(x))
        }
    )*};
    (@ty sync) => { impl FnMut() };
    (@ty awaited) => { impl AsyncFnMut() };
}

rows! {
    /// `#[retry]`, first attempt succeeds.
    retry_sync: sync retried;
    /// `#[retry]` on an async method, first attempt succeeds.
    retry_async: awaited retried_async;
    /// `#[circuit_breaker]`, closed.
    breaker_sync: sync guarded;
    /// `#[circuit_breaker]` on an async method, closed.
    breaker_async: awaited guarded_async;
    /// `#[rate_limiter]`, permits to spare.
    rate_limiter_sync: sync limited;
    /// `#[rate_limiter]` on an async method.
    rate_limiter_async: awaited limited_async;
    /// `#[bulkhead]`, room to spare.
    bulkhead_sync: sync bulkheaded;
    /// `#[bulkhead]` on an async method.
    bulkhead_async: awaited bulkheaded_async;
    /// `#[timeout]`, not firing.
    timeout_async: awaited timed_async;
    /// `#[adaptive_limit]` (Aimd), never reached.
    adaptive_sync: sync adaptive;
    /// `#[adaptive_limit]` on an async method.
    adaptive_async: awaited adaptive_async;
    /// `#[hedge]`, the first attempt answers.
    hedge_async: awaited hedged_async;
    /// `#[fallback]`, not needed.
    fallback_sync: sync with_fallback;
    /// `#[fallback]` on an async method, not needed.
    fallback_async: awaited with_fallback_async;
    /// `#[retry] #[circuit_breaker] #[rate_limiter] #[bulkhead]`, passing.
    stack_sync: sync stacked;
    /// The async four-policy stack.
    stack_async: awaited stacked_async;
}
