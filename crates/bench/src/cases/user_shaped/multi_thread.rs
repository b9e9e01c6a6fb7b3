//! The rows on a multi-thread runtime: two worker threads, two callers (each a spawned task
//! awaiting `N` calls in a loop) sharing one wrapper, beside the bare call on the same runtime. What
//! a service on `#[tokio::main]` sees when two requests run at once: the shared state of each
//! policy (a breaker's counters, a limiter's permits, a bulkhead's slots) bounces between two cores.
//!
//! Driven by [`crate::Run::drive_multi_thread`]; time only (valgrind serialises threads, and the
//! calls run on the workers, where the calling thread's allocation counter cannot see them).

use std::future::Future;

use super::ours::{Backend, Inventory as _, ResilientInventory, service};
use super::{input, observe, op_async};

/// One caller's call, made afresh on each iteration by each spawned task.
pub trait Caller: Copy + Send + Sync + 'static {
    /// One awaited call, its result observed.
    fn call(self) -> impl Future<Output = ()> + Send;
}

/// The bare call: [`op_async`] awaited.
#[derive(Debug, Clone, Copy)]
pub struct Direct;

impl Caller for Direct {
    async fn call(self) {
        observe(op_async(input()).await);
    }
}

/// An awaited call of one method of a wrapper shared by both callers.
#[derive(Debug, Clone, Copy)]
pub struct Through<M> {
    api: &'static ResilientInventory<Backend>,
    method: M,
}

impl<M, Fut, E> Caller for Through<M>
where
    M: Fn(&'static ResilientInventory<Backend>, u32) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Result<u32, E>> + Send,
{
    async fn call(self) {
        observe((self.method)(self.api, input()).await);
    }
}

/// The bare call on the multi-thread runtime.
pub fn direct() -> Direct {
    Direct
}

fn through<M>(method: M) -> Through<M> {
    Through { api: &service().api, method }
}

macro_rules! rows {
    ($($(#[$doc:meta])* $name:ident: $method:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name() -> impl Caller {
            through(|api: &'static ResilientInventory<Backend>, x| api.$method(x))
        }
    )*};
}

rows! {
    /// `#[retry]`, first attempt succeeds.
    retry: retried_async;
    /// `#[circuit_breaker]`, closed.
    breaker: guarded_async;
    /// `#[rate_limiter]`, permits to spare.
    rate_limiter: limited_async;
    /// `#[bulkhead]`, room to spare.
    bulkhead: bulkheaded_async;
    /// `#[timeout]`, not firing.
    timeout: timed_async;
    /// `#[adaptive_limit]` (Aimd), never reached.
    adaptive: adaptive_async;
    /// `#[hedge]`, the first attempt answers.
    hedge: hedged_async;
    /// `#[fallback]`, not needed.
    fallback: with_fallback_async;
    /// The four-policy stack.
    stack: stacked_async;
}
