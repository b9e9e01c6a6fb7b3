//! A typed pipeline's fallback: [`Pipeline::fallback`] and [`Pipeline::fallback_async`], applied
//! once to the final `Err` of `execute`, `execute_async` and the tower layer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::FallbackContext;
use crate::fallback::policy::FallbackPolicy;

/// A boxed async fallback result: the closure's future, type-erased so the pipeline keeps its type.
pub(super) type Falling<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

pub(super) type SyncFn<T, E> = Arc<dyn Fn(FallbackContext<E>) -> Result<T, E> + Send + Sync>;
pub(super) type AsyncFn<T, E> = Arc<dyn Fn(FallbackContext<E>) -> Falling<T, E> + Send + Sync>;
pub(super) type Predicate<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;

/// What `.fallback` / `.fallback_async` / `.fallback_apply_on` / `.fallback_skip_on` stored: the
/// event publisher under the pipeline's id, the closure (`None` while only a rule was set), and
/// which errors it answers.
pub(super) struct Fallback<T, E> {
    pub(super) policy: FallbackPolicy,
    pub(super) call: Option<Call<T, E>>,
    /// `apply_on`: the errors the fallback answers; `None` answers every `Err`.
    pub(super) apply_on: Option<Predicate<E>>,
    /// `skip_on`: the errors passed through; wins over `apply_on`.
    pub(super) skip_on: Option<Predicate<E>>,
}

/// The closure, blocking or async.
pub(super) enum Call<T, E> {
    Sync(SyncFn<T, E>),
    Async(AsyncFn<T, E>),
}

/// What to do with a failure: the answer at once, or a future to await.
pub(super) enum Applied<T, E> {
    Now(Result<T, E>),
    Later(Falling<T, E>),
}

impl<T, E> Clone for Fallback<T, E> {
    fn clone(&self) -> Self {
        let call = self.call.as_ref().map(|call| match call {
            Call::Sync(f) => Call::Sync(Arc::clone(f)),
            Call::Async(f) => Call::Async(Arc::clone(f)),
        });
        Fallback { policy: self.policy.clone(), call, apply_on: self.apply_on.clone(), skip_on: self.skip_on.clone() }
    }
}

impl<T, E> fmt::Debug for Fallback<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = match self.call {
            Some(Call::Sync(_)) => "sync",
            Some(Call::Async(_)) => "async",
            None => "none",
        };
        f.debug_struct("Fallback")
            .field("instance", &self.policy.instance())
            .field("form", &form)
            .field("apply_on", &self.apply_on.is_some())
            .field("skip_on", &self.skip_on.is_some())
            .finish()
    }
}

impl<T, E> Fallback<T, E> {
    /// Publishes `Applied` and calls the closure, if the error is one it answers (`apply_on` and
    /// not `skip_on`, as `#[fallback]` decides); an async closure's future is handed back. An error
    /// it does not answer is the call's result, and nothing is published.
    #[cold]
    pub(super) fn apply(&self, error: E, attempts: u32) -> Applied<T, E> {
        let Some(call) = self.call.as_ref().filter(|_| self.answers(&error)) else {
            return Applied::Now(Err(error));
        };
        let context = self.policy.apply(error, attempts);
        match call {
            Call::Sync(f) => Applied::Now(f(context)),
            Call::Async(f) => Applied::Later(f(context)),
        }
    }

    /// `apply_on` (default: every error) and not `skip_on` (skip wins).
    fn answers(&self, error: &E) -> bool {
        self.apply_on.as_ref().is_none_or(|applies| applies(error))
            && !self.skip_on.as_ref().is_some_and(|skips| skips(error))
    }

    /// The sync form only: [`Pipeline::fallback_async`] makes a pipeline `AsyncOnly`, so a blocking
    /// `execute` never meets an async fallback.
    pub(super) fn apply_blocking(&self, error: E, attempts: u32) -> Result<T, E> {
        match self.apply(error, attempts) {
            Applied::Now(result) => result,
            Applied::Later(_) => unreachable!("an async fallback makes the pipeline AsyncOnly: no `execute`"),
        }
    }
}
