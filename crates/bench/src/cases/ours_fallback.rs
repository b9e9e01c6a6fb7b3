//! `#[fallback]` as a user writes it, beside the same method with its retry alone: what the
//! outermost layer costs a call that succeeds (nothing should be consulted) and a call that falls
//! back after its retry gives up (zero waits, no listener).

use resilience4cata::{FallbackContext, Registry, resilient};

use crate::{Fail, consume, exec, opaque, work};

/// The same retry with and without a fallback.
#[resilient]
pub trait Priced {
    /// Retry alone.
    #[retry(max_attempts = 3, delay = "0")]
    fn retried(&self, x: u64) -> Result<u64, Fail>;

    /// Retry alone, async.
    #[retry(max_attempts = 3, delay = "0")]
    async fn retried_async(&self, x: u64) -> Result<u64, Fail>;

    /// Retry inside a fallback.
    #[retry(max_attempts = 3, delay = "0")]
    #[fallback(method = cached)]
    fn with_fallback(&self, x: u64) -> Result<u64, Fail>;

    /// The async form.
    #[retry(max_attempts = 3, delay = "0")]
    #[fallback(method = cached_async)]
    async fn with_fallback_async(&self, x: u64) -> Result<u64, Fail>;

    /// Always fails: every call falls back after three attempts.
    #[retry(max_attempts = 3, delay = "0")]
    #[fallback(method = cached)]
    fn down(&self, x: u64) -> Result<u64, Fail>;

    /// The fallback: the input, unchanged.
    fn cached(&self, x: u64, ctx: FallbackContext<Fail>) -> Result<u64, Fail>;

    /// The async fallback.
    async fn cached_async(&self, x: u64, ctx: FallbackContext<Fail>) -> Result<u64, Fail>;
}

/// The delegate of [`Priced`].
#[derive(Debug, Default)]
pub struct Backend;

impl Priced for Backend {
    testkit::same_body! { fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for retried with_fallback }
    testkit::same_body! { async fn(&self, x: u64) -> Result<u64, Fail> { work(x) } for retried_async with_fallback_async }
    fn down(&self, _x: u64) -> Result<u64, Fail> {
        Err(Fail)
    }
    fn cached(&self, x: u64, ctx: FallbackContext<Fail>) -> Result<u64, Fail> {
        Ok(x + u64::from(ctx.attempts()))
    }
    async fn cached_async(&self, x: u64, ctx: FallbackContext<Fail>) -> Result<u64, Fail> {
        Ok(x + u64::from(ctx.attempts()))
    }
}

fn priced() -> ResilientPriced<Backend> {
    let registry = Registry::builder().build().expect("the default registry builds");
    ResilientPriced::new(Backend, &registry).expect("the instances resolve")
}

cases! { priced;
    /// `#[retry]` alone, first attempt succeeds (the reference row of the group).
    fn retry_only_sync() -> impl FnMut() = |api| api.retried(opaque(1));
    /// `#[retry]` alone, first attempt succeeds, async.
    fn retry_only_async() -> impl FnMut() = |api| exec::poll_now(api.retried_async(opaque(1)));
    /// `#[retry] #[fallback]`, first attempt succeeds.
    fn success_sync() -> impl FnMut() = |api| api.with_fallback(opaque(1));
    /// `#[retry] #[fallback]`, first attempt succeeds, async.
    fn success_async() -> impl FnMut() = |api| exec::poll_now(api.with_fallback_async(opaque(1)));
    /// `#[retry(delay = "0")] #[fallback]`, three failed attempts, then the fallback.
    fn fallen_back_sync() -> impl FnMut() = |api| api.down(opaque(1));
}
