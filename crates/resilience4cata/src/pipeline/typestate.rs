//! Type-states: what a pipeline's policies ask of its error type and of its callers, known at
//! compile time so that a mistake is a type error, not a surprise at run time.
//!
//! A [`PipelineBuilder`](super::PipelineBuilder) starts [`Plain`] (retry only: any `E`); adding a
//! policy that can refuse calls (circuit breaker, rate limiter, bulkhead) makes it [`Rejecting`]
//! (`build` then needs `E: ResilienceError`); adding a timeout makes it [`AsyncOnly`] (rejecting,
//! and the pipeline it builds offers only `execute_async`, because a blocking call cannot be
//! cancelled). A [`Pipeline`](super::Pipeline)'s third parameter is [`SyncOrAsync`] (the default)
//! or [`AsyncOnly`].

use std::fmt;
use std::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// The type-state of a [`PipelineBuilder`](super::PipelineBuilder): [`Plain`], [`Rejecting`], [`Hedged`] or
/// [`AsyncOnly`]. Sealed.
pub trait BuilderTypestate: sealed::Sealed {
    /// The state after adding a policy that can refuse calls.
    type Rejecting: BuilderTypestate;
    /// The state after adding a policy that only async calls can have (a timeout).
    type AsyncOnly: BuilderTypestate;
    /// The state after adding an async-only policy that refuses nothing (a hedge).
    type Hedged: BuilderTypestate;
}

/// A builder whose policies never refuse a call (retry only): any error type, sync and async.
#[derive(Debug)]
pub enum Plain {}

/// A builder with a policy that can refuse calls: `build` needs `E: ResilienceError`.
#[derive(Debug)]
pub enum Rejecting {}

/// A builder with a hedge and no policy that can refuse calls: any error type, and the pipeline
/// it builds offers only `execute_async` (its mode is [`AsyncOnly`]).
#[derive(Debug)]
pub enum Hedged {}

/// A builder with a timeout (which also refuses calls), and the mode of the pipeline it builds:
/// `execute_async` only.
#[derive(Debug)]
pub enum AsyncOnly {}

/// The mode of a pipeline without a timeout: both `execute` and `execute_async`.
#[derive(Debug)]
pub enum SyncOrAsync {}

/// A builder of a pipeline without keys: every policy has one instance (the default).
#[derive(Debug)]
pub enum Unkeyed {}

/// A builder of a keyed pipeline ([`PipelineBuilder::keyed`](super::PipelineBuilder::keyed),
/// SPEC §15): its breaker, rate limiter, adaptive limit and bulkhead keep one state per key `K`,
/// chosen per call; `build` makes a [`KeyedPipeline`](super::KeyedPipeline).
///
/// ```
/// use resilience4cata::pipeline::{Keyed, PipelineBuilder};
/// use resilience4cata::{Pipeline, Registry};
///
/// let registry = Registry::builder().build()?;
/// let builder: PipelineBuilder<'_, _, Keyed<String>> = Pipeline::builder(&registry, "per-tenant").keyed();
/// let tenants = builder.rate_limiter().build::<u32, std::io::Error>()?;
/// assert_eq!(tenants.execute_for("tenant-a", || Ok(1))?, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Keyed<K>(PhantomData<fn(&K)>, Unkeyed);

impl<K> fmt::Debug for Keyed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keyed")
    }
}

/// The modes whose pipelines run blocking calls (`execute`): [`SyncOrAsync`] only. Sealed.
#[diagnostic::on_unimplemented(
    message = "[R4C-SIG-020] this pipeline has a timeout, a hedge or an async fallback, so it offers only `execute_async`: a blocking call can be neither cancelled nor raced, nor await a fallback",
    label = "`execute` needs a pipeline without a timeout, a hedge or an async fallback",
    note = "call `execute_async(|| async {{ … }})` instead, or remove the pipeline's timeout (and bound the blocking call itself) or its hedge, or use a sync `.fallback(…)`"
)]
pub trait Blocking: sealed::Sealed {}

impl Blocking for SyncOrAsync {}

impl sealed::Sealed for SyncOrAsync {}
impl sealed::Sealed for Plain {}
impl sealed::Sealed for Rejecting {}
impl sealed::Sealed for AsyncOnly {}
impl sealed::Sealed for Hedged {}

/// The transition table: each state and where adding a rejecting, an async-only and a hedge policy
/// takes it.
macro_rules! transitions {
    ($($state:ident => ($rejecting:ident, $async_only:ident, $hedged:ident)),* $(,)?) => {$(
        impl BuilderTypestate for $state {
            type Rejecting = $rejecting;
            type AsyncOnly = $async_only;
            type Hedged = $hedged;
        }
    )*};
}

transitions! {
    Plain => (Rejecting, AsyncOnly, Hedged),
    Rejecting => (Rejecting, AsyncOnly, AsyncOnly),
    AsyncOnly => (AsyncOnly, AsyncOnly, AsyncOnly),
    Hedged => (AsyncOnly, AsyncOnly, Hedged),
}
