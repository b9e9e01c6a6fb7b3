//! resilience4cata, as a user writes it: `#[resilient]` traits over a delegate that calls the same
//! `#[inline(never)]` functions as every anchor.
//!
//! The success and budget cases use `Registry::builder().build()` (the system clock, as in an
//! application: a passing call never reads it). The fail-once cases use `delay = "0"` on the same
//! system-clock registry, whose zero wait returns at once without a syscall; `testing::registry` on
//! a `ManualClock` gives the same path (a zero advance), see `fail_once_manual_sync`.

use std::cell::Cell;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, resilient};

use crate::{Fail, consume, exec, flaky, opaque, work};

/// The retried methods of the single-threaded cases. `?Send`: the delegate's `Cell` flag is not
/// `Sync`, and the futures are polled on this thread only (the generated code is the same).
#[resilient(?Send)]
pub trait Api {
    /// Retry with defaults but a zero-wait-free success path.
    #[retry(max_attempts = 3)]
    fn call(&self, x: u64) -> Result<u64, Fail>;

    /// The async form.
    #[retry(max_attempts = 3)]
    async fn call_async(&self, x: u64) -> Result<u64, Fail>;

    /// Fails when the delegate's flag is set; zero wait between attempts.
    #[retry(max_attempts = 3, delay = "0")]
    fn flaky(&self, x: u64) -> Result<u64, Fail>;

    /// The async form.
    #[retry(max_attempts = 3, delay = "0")]
    async fn flaky_async(&self, x: u64) -> Result<u64, Fail>;
}

/// The delegate of [`Api`]: `work`, or `flaky` over its flag.
#[derive(Debug, Default)]
pub struct Backend {
    fail_next: Cell<bool>,
}

impl Api for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for call }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for call_async }
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, Fail> { flaky(x, &self.fail_next) } for flaky }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, Fail> { flaky(x, &self.fail_next) } for flaky_async }
}

/// A retry with the budget on, shared between threads.
#[resilient]
pub trait Budgeted {
    /// Retry with a 20 % budget.
    #[retry(max_attempts = 3, budget_percent = 20)]
    fn call(&self, x: u64) -> Result<u64, Fail>;
}

/// The delegate of [`Budgeted`].
#[derive(Debug, Default)]
pub struct SharedBackend;

impl Budgeted for SharedBackend {
    fn call(&self, x: u64) -> Result<u64, Fail> {
        work(x)
    }
}

fn registry() -> Registry {
    Registry::builder().build().expect("the default registry builds")
}

fn api(registry: &Registry) -> ResilientApi<Backend> {
    ResilientApi::new(Backend::default(), registry).expect("the retry instances resolve")
}

/// `#[retry]`, first attempt succeeds, sync.
pub fn success_sync() -> impl FnMut() {
    let registry = registry();
    let api = api(&registry);
    move || consume(api.call(opaque(1)))
}

/// `#[retry]`, first attempt succeeds, async.
pub fn success_async() -> impl FnMut() {
    let registry = registry();
    let api = api(&registry);
    move || consume(exec::poll_now(api.call_async(opaque(1))))
}

/// `#[retry(delay = "0")]`, first attempt fails, second succeeds, sync.
pub fn fail_once_sync() -> impl FnMut() {
    let registry = registry();
    let api = api(&registry);
    move || {
        api.delegate().fail_next.set(true);
        consume(api.flaky(opaque(1)))
    }
}

/// [`fail_once_sync`] on `testing::registry(&ManualClock)`.
pub fn fail_once_manual_sync() -> impl FnMut() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().expect("the test registry builds");
    let api = api(&registry);
    move || {
        api.delegate().fail_next.set(true);
        consume(api.flaky(opaque(1)))
    }
}

/// `#[retry(delay = "0")]`, first attempt fails, second succeeds, async.
pub fn fail_once_async() -> impl FnMut() {
    let registry = registry();
    let api = api(&registry);
    move || {
        api.delegate().fail_next.set(true);
        consume(exec::poll_now(api.flaky_async(opaque(1))))
    }
}

fn budgeted() -> ResilientBudgeted<SharedBackend> {
    ResilientBudgeted::new(SharedBackend, &registry()).expect("the retry instance resolves")
}

/// `#[retry(budget_percent = 20)]`, success.
pub fn budget_sync() -> impl FnMut() {
    let api = budgeted();
    move || consume(api.call(opaque(1)))
}

/// [`budget_sync`], shared with a contender thread.
pub fn budget_shared() -> impl Fn() + Sync {
    let api = budgeted();
    move || consume(api.call(opaque(1)))
}
